"""Reference/candidate pairs of our own (tests/python/verdict_pairs), each candidate with its expected verdict
in its first line: `# expect: OUTCOME [field=value ...] [reason~text ...]`, then `# reference: FILE`, and
optionally `# options: ...` (more `dirigo check` arguments) and `# env: NAME=VALUE`. Checked on the CPU with
`dirigo check REF NEW --json`: the report must be valid JSON, with the outcome, its exit status, the fields
and the phrases of the reason that the first line names."""
import json
import os
import pathlib
import shlex
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DIRIGO = pathlib.Path(os.environ.get("DIRIGO_BIN", ROOT / "build" / "dirigo"))
PAIRS = pathlib.Path(__file__).resolve().parent / "verdict_pairs"
EXIT = {"BUG": 1, "SUSPECT": 2, "CHECKED": 0, "VERIFIED": 0, "TIMEOUT": 3, "UNSUPPORTED": 4, "ERROR": 70}


def header(path: pathlib.Path) -> dict:
    h = {"options": [], "env": {}}
    for line in path.read_text().splitlines():
        if not line.startswith("# "):
            break
        key, _, rest = line[2:].partition(":")
        if key == "expect":
            toks = shlex.split(rest)
            h["outcome"], h["fields"], h["reason"] = toks[0], {}, []
            for t in toks[1:]:
                if "~" in t and t.split("~", 1)[0] == "reason":
                    h["reason"].append(t.split("~", 1)[1])
                else:
                    k, v = t.split("=", 1)
                    h["fields"][k] = v
        elif key == "reference":
            h["reference"] = rest.strip()
        elif key == "options":
            h["options"] = shlex.split(rest)
        elif key == "env":
            k, v = rest.strip().split("=", 1)
            h["env"][k] = v
    return h


CASES = sorted(p for p in PAIRS.glob("*.py") if p.read_text().startswith("# expect:"))


def test_every_pair_names_its_verdict_and_reference():
    assert len(CASES) >= 8
    for c in CASES:
        h = header(c)
        assert h["outcome"] in EXIT and (PAIRS / h["reference"]).exists(), c


@pytest.mark.skipif(not DIRIGO.exists(), reason="build/dirigo not built (scripts/build.sh)")
@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_pair_gets_its_expected_verdict(case, tmp_path):
    h = header(case)
    env = dict(os.environ, **h["env"])
    env.pop("LD_PRELOAD", None)
    p = subprocess.run([str(DIRIGO), "check", str(PAIRS / h["reference"]), str(case), "--device", "cpu", "--json",
                        *h["options"]], capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    rep = json.loads(p.stdout)  # valid JSON on every path
    assert rep["outcome"] == h["outcome"], p.stdout + p.stderr
    assert p.returncode == EXIT[h["outcome"]] == rep["exit_code"], p.stdout + p.stderr
    for k, v in h["fields"].items():
        assert rep.get(k) == v, (k, rep.get(k), p.stdout)
    for phrase in h["reason"]:
        assert phrase in rep["reason"], (phrase, rep["reason"])
