"""A launch no GPU runs (issue 17 item 3) is the candidate's BUG (evidence launch-config), the reference's
UNSUPPORTED: the running example's fixed bundle (VERIFIED as traced) with its one launch made impossible."""
import json
import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DIRIGO = pathlib.Path(os.environ.get("DIRIGO_BIN", ROOT / "build" / "dirigo"))
FIXED = ROOT / "examples" / "running_example" / "bundle-gpu-fixed"

pytestmark = pytest.mark.skipif(not DIRIGO.exists(), reason="build/dirigo not built (scripts/build.sh)")


def check_with(tmp_path, role: str, **launch):
    b = tmp_path / "b"
    shutil.copytree(FIXED, b)
    m = json.loads((b / "manifest.json").read_text())
    (op,) = [o for o in next(p for p in m["programs"] if p["name"] == "new")["ops"] if o["kind"] == "launch"]
    op.update(launch)
    if role == "reference":  # the same impossible launch, now made by the reference
        for p in m["programs"]:
            p["role"] = {"reference": "candidate", "candidate": "reference"}[p["role"]]
    (b / "manifest.json").write_text(json.dumps(m))
    p = subprocess.run([str(DIRIGO), "check", str(b), "--json"], capture_output=True, text=True, timeout=300)
    return p.returncode, json.loads(p.stdout)


@pytest.mark.parametrize("launch,phrase", [
    ({"block": [2048, 1, 1]}, "2048 threads per block, at most 1024"),
    ({"block": [32, 1, 128]}, "4096 threads per block"),
    ({"shared_bytes": 300000}, "300000 bytes of dynamic shared memory"),
    ({"grid": [0, 64, 1]}, "a zero-sized grid"),
])
def test_an_impossible_candidate_launch_is_a_bug(tmp_path, launch, phrase):
    rc, rep = check_with(tmp_path, "candidate", **launch)
    assert (rc, rep["outcome"], rep["evidence"]) == (1, "BUG", "launch-config"), rep
    assert phrase in rep["reason"] and "_Z14min_sum_kernelPKfPfiii" in rep["reason"], rep["reason"]


def test_the_same_launch_by_the_reference_is_unsupported(tmp_path):
    rc, rep = check_with(tmp_path, "reference", block=[2048, 1, 1])
    assert (rc, rep["outcome"]) == (4, "UNSUPPORTED"), rep
    assert "the reference makes a launch no GPU runs" in rep["reason"]


def test_the_limit_itself_still_runs(tmp_path):
    rc, rep = check_with(tmp_path, "candidate", shared_bytes=232448)  # sm_90's opt-in maximum
    assert (rc, rep["outcome"]) == (0, "VERIFIED") or rep["outcome"] == "CHECKED", rep
