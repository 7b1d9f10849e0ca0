"""`dirigo check REF.py NEW.py`: the C++ CLI traces through the Python tracer, then checks."""
import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DIRIGO = pathlib.Path(os.environ.get("DIRIGO_BIN", ROOT / "build" / "dirigo"))
GOLDEN = ROOT / "tests" / "golden" / "torch"

pytestmark = pytest.mark.skipif(not DIRIGO.exists(), reason="build/dirigo not built (scripts/build.sh)")


def run(*args):
    return subprocess.run([str(DIRIGO), "check", *map(str, args)], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def sum_wrong_dim(tmp_path_factory):
    """`dirigo check REF.py NEW.py` of one BUG pair, traced once for the tests that read its bundle."""
    bundle = tmp_path_factory.mktemp("sum_wrong_dim") / "b"
    case = GOLDEN / "sum_wrong_dim"
    return run(case / "ref.py", case / "new.py", "--device", "cpu", "--keep-bundle", bundle), bundle


def test_two_programs_are_traced_then_checked(sum_wrong_dim):
    p, bundle = sum_wrong_dim
    assert p.returncode == 1, p.stdout + p.stderr
    assert p.stdout.startswith("BUG")
    assert (bundle / "manifest.json").exists()


def test_equal_programs_exit_zero(tmp_path):
    p = run(GOLDEN / "relu_as_clamp" / "ref.py", GOLDEN / "relu_as_clamp" / "new.py", "--device", "cpu",
            "--keep-bundle", tmp_path / "b")
    assert p.returncode == 0, p.stdout + p.stderr
    assert (tmp_path / "b" / "manifest.json").exists()


def test_a_candidate_that_raises_where_the_reference_runs_is_a_bug_not_a_crash(tmp_path):
    bad = tmp_path / "new.py"
    bad.write_text("import torch\nclass ModelNew(torch.nn.Module):\n"
                   "    def __init__(self, a, b):\n        super().__init__()\n"
                   "    def forward(self, x):\n        raise ValueError('boom')\n")
    p = run(GOLDEN / "relu_as_clamp" / "ref.py", bad, "--device", "cpu")
    assert p.returncode == 1, p.stdout + p.stderr
    assert p.stdout.startswith("BUG") and "evidence: exception" in p.stdout
    assert "ValueError: boom in forward (new.py:6)" in p.stdout


def test_witness_out_and_replay_evidence(tmp_path):
    # The solver's first witness is over a trimmed prefix result; the check finds the difference again
    # over program inputs, and that witness is the one written and replayed (no carry-back needed).
    case = GOLDEN / "gelu_wrong_scale"
    w = tmp_path / "w.json"
    p = run(case / "ref.py", case / "new.py", "--device", "cpu", "--json", "--witness-out", w)
    assert p.returncode == 1, p.stdout + p.stderr
    rep = json.loads(p.stdout)
    assert rep["outcome"] == "BUG" and rep["evidence"] == "replay-cpu"
    assert rep["replay"]["exceeds"] and rep["replay"]["carried_back"] is None
    doc = json.loads(w.read_text())
    assert doc["format"] == "dirigo-witness" and doc["ref"].endswith("ref.py")
    assert doc["leaves"] and all(leaf["kind"] != "trimmed" for leaf in doc["leaves"])


def test_no_replay_keeps_fp32_evidence_labelled(sum_wrong_dim):
    p = run(sum_wrong_dim[1], "--no-replay")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "evidence: fp32-evaluation" in p.stdout


def test_jobs_give_the_same_verdict(tmp_path):
    case = GOLDEN / "min_sum_swapped"
    b = tmp_path / "b"
    outs = []
    for jobs in ("1", "2"):
        extra = ["--keep-bundle", b] if jobs == "1" else []
        target = [case / "ref.py", case / "new.py", "--device", "cpu"] if jobs == "1" else [b]
        p = run(*target, "--json", "--jobs", jobs, "--no-replay", *extra)
        outs.append(json.loads(p.stdout))
    assert outs[0]["outcome"] == outs[1]["outcome"]
    assert outs[0]["checked"] == outs[1]["checked"]
    assert outs[1]["jobs"] == 2


def test_state_stage_that_hangs_is_killed_at_the_child_timeout(tmp_path):
    # A candidate whose constructor never returns: the state stage (it constructs both programs) is
    # killed after --child-timeout, and the verdict is the function check's, with the reason noted.
    import shutil
    import time
    bundle = tmp_path / "b"
    shutil.copytree(ROOT / "examples" / "running_example" / "bundle-gpu-buggy", bundle)
    m = json.loads((bundle / "manifest.json").read_text())
    for prog in m["programs"]:  # no recorded hashes: the stage has to construct the programs
        for inp in prog["inputs"]:
            inp.pop("sha256", None)
            inp.pop("stats", None)
    (bundle / "manifest.json").write_text(json.dumps(m))
    hang = tmp_path / "new.py"
    hang.write_text("import time\nimport torch\nclass ModelNew(torch.nn.Module):\n"
                    "    def __init__(self, *a):\n        super().__init__()\n        time.sleep(600)\n"
                    "    def forward(self, x):\n        return x\n")
    t0 = time.monotonic()
    p = run(bundle, "--ref-file", ROOT / "examples" / "running_example" / "ref.py", "--new-file", hang,
            "--child-timeout", "3", "--no-replay", "--json")
    assert time.monotonic() - t0 < 120
    rep = json.loads(p.stdout)
    assert rep["outcome"] == "BUG"  # the function check's finding stands
    assert "did not finish within 3 s" in rep["state"]["reason"], rep["state"]


def test_verdict_and_witness_are_the_same_under_a_cpu_hog():
    # The same seed gives the same verdict, location and witness whether or not the machine is busy:
    # the limits inside a location are counted in work (Z3 rlimit, node and step counts, refinement
    # points), wall clock is only the outer budget (60 s here, far from binding). A stage of a location
    # cut by a clock instead would give another witness, or none, under the hog.
    import sys
    import time
    bundle = ROOT / "examples" / "running_example" / "bundle-buggy"
    args = (bundle, "--json", "--seed", "3", "--budget", "60", "--no-state")

    def answer():
        rep = json.loads(run(*args).stdout)
        first = rep["locations"][rep["first_differ"]] if rep.get("first_differ") is not None else {}
        return rep["outcome"], first.get("index"), sorted(first.get("witness", {}).items())

    quiet = answer()
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2 * (os.cpu_count() or 2))]
    try:
        time.sleep(0.5)
        busy = answer()
    finally:
        for h in hogs:
            h.kill()
        for h in hogs:
            h.wait()
    assert quiet[0] == "BUG" and quiet[2], quiet
    assert busy == quiet


def test_no_reroll_leaves_the_kernels_sums_expanded():
    # the Triton layer norm's kernel sums re-roll into the reference's reductions; with --no-reroll they
    # stay expanded and the same locations go to Z3 instead
    bundle = ROOT / "examples" / "triton" / "layernorm" / "bundle-good"
    reasons = {}
    for flag in ([], ["--no-reroll"]):
        p = run(bundle, "--budget", "3" if flag else "15", "--max-locations", "8", "--json", *flag)
        rep = json.loads(p.stdout)
        reasons[bool(flag)] = [loc.get("reason", "") for loc in rep["locations"]]
        if not flag:
            assert rep["outcome"] == "CHECKED", rep["reason"]
    assert reasons[False] and all(r.startswith("re-rolled:") for r in reasons[False]), reasons[False]
    assert not any("re-rolled" in r for r in reasons[True]), reasons[True]
