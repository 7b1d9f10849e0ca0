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


def test_a_binary_outside_its_tree_names_the_missing_python_package(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DIRIGO_PYTHON")}
    if subprocess.run(["python3", "-c", "import dirigo"], cwd=tmp_path, env=env, capture_output=True).returncode == 0:
        pytest.skip("the dirigo package is installed: a copied binary finds its tracer")
    copy = tmp_path / "dirigo"
    copy.write_bytes(DIRIGO.read_bytes())
    copy.chmod(0o755)
    case = GOLDEN / "relu_as_clamp"
    p = subprocess.run([str(copy), "check", str(case / "ref.py"), str(case / "new.py"), "--device", "cpu", "--json"],
                       capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    rep = json.loads(p.stdout)
    assert rep["outcome"] == "ERROR", rep
    assert "must import the dirigo package" in rep["reason"] and "internal error" not in rep["reason"], rep["reason"]


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


# The hard stop (docs/cli.md "The hard stop"): a stage made to ignore its deadline by the test hook
# DIRIGO_INJECT_FAULT=stall:STAGE still ends the command at --budget + max(10 %, 1 s), as TIMEOUT.
def run_stalled(stage, *args):
    import time
    env = dict(os.environ, DIRIGO_INJECT_FAULT=f"stall:{stage}")
    t0 = time.monotonic()
    p = subprocess.run([str(DIRIGO), "check", *map(str, args)], capture_output=True, text=True, timeout=600, env=env)
    return p, time.monotonic() - t0


@pytest.mark.parametrize("stage", ["read", "execute", "search", "report"])
def test_a_stage_that_ignores_its_deadline_is_ended_by_the_hard_stop(stage):
    bundle = ROOT / "examples" / "running_example" / "bundle-buggy"
    p, wall = run_stalled(stage, bundle, "--budget", "2", "--json", "--no-state")
    assert p.returncode == 3, p.stdout + p.stderr
    rep = json.loads(p.stdout)
    assert rep["outcome"] == "TIMEOUT" and rep["exit_code"] == 3 and rep["hard_stop"] == stage, rep
    assert rep["reason"].startswith("hard stop:") and f"in stage '{stage}'" in rep["reason"], rep["reason"]
    assert 3.0 <= wall < 3.0 + 2.0, wall  # 2 s + 1 s grace, and not before
    assert f"hard stop after 3.0 s in stage '{stage}'" in p.stderr, p.stderr


def test_the_hard_stop_writes_text_without_json():
    bundle = ROOT / "examples" / "running_example" / "bundle-buggy"
    p, wall = run_stalled("merge", bundle, "--budget", "1", "--no-state")
    assert p.returncode == 3, p.stdout + p.stderr
    assert p.stdout.startswith("TIMEOUT\n  hard stop: dirigo check was ended 2.0 s after it started, in stage 'merge'")
    assert wall < 2.0 + 2.0, wall


def test_a_check_that_keeps_its_deadline_is_untouched_by_the_hard_stop():
    # the same bundle and budget as above without the stall: the check's own verdict, well before the hard stop
    bundle = ROOT / "examples" / "running_example" / "bundle-buggy"
    p, wall = run_stalled("nothing", bundle, "--budget", "2", "--json", "--no-state")
    assert p.returncode == 1, p.stdout + p.stderr
    rep = json.loads(p.stdout)
    assert rep["outcome"] == "BUG" and "hard_stop" not in rep, rep
    assert "hard stop" not in p.stderr
    assert wall < 3.0, wall


def test_a_nested_re_check_names_its_stage_to_the_hard_stop(tmp_path):
    # gelu_wrong_scale's first witness sets a trimmed prefix's result, so the location is decided again
    # over program inputs by a nested check (Search::confirm_over_program_inputs): that check's stages
    # are the ones the hard stop names when one of them stalls
    case = GOLDEN / "gelu_wrong_scale"
    bundle = tmp_path / "b"
    p = run(case / "ref.py", case / "new.py", "--device", "cpu", "--keep-bundle", bundle, "--no-replay", "--no-state")
    assert p.returncode == 1, p.stdout + p.stderr
    stage = "search: re-check over program inputs: execute"
    p, wall = run_stalled(stage, bundle, "--budget", "3", "--json", "--no-state")
    assert p.returncode == 3, p.stdout + p.stderr
    assert json.loads(p.stdout)["hard_stop"] == stage
    assert wall < 4.0 + 2.0, wall


def test_what_the_trace_left_of_its_limit_does_not_delay_the_hard_stop(tmp_path):
    # A trace of a few seconds under --trace-timeout 300: the stalled search is ended at the trace's
    # own time + budget + grace, not at the trace stage's whole limit (+30 s) later.
    import time
    ref = ROOT / "tests" / "python" / "verdict_pairs" / "ref_conv.py"
    t0 = time.monotonic()
    p = subprocess.run([str(DIRIGO), "check", str(ref), str(ref), "--device", "cpu", "--budget", "2", "--json",
                        "--no-replay", "--no-state"], capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, DIRIGO_INJECT_FAULT="stall:search"))
    wall = time.monotonic() - t0
    assert p.returncode == 3, p.stdout + p.stderr
    rep = json.loads(p.stdout)
    assert rep["hard_stop"] == "search", rep
    assert wall < 60, wall


def test_the_hard_stop_kills_the_child_processes(tmp_path):
    # The tracer is made to ignore its timeout (stall:trace) while the candidate hangs in forward: the hard
    # stop ends the command at the trace stage's own limit (--trace-timeout + 30 s) plus the 5 s a killed
    # child is given to be reaped (past budget + grace, 2 s), and the candidate's worker, which the tracer
    # runs in a session of its own, is gone with it.
    import time
    pidfile = tmp_path / "worker.pid"
    hang = tmp_path / "new.py"
    hang.write_text("import os\nimport time\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
                    "    def __init__(self, cin, cout, k):\n        super().__init__()\n"
                    "        self.conv = nn.Conv2d(cin, cout, k)\n\n    def forward(self, x):\n"
                    f"        open({str(pidfile)!r}, 'w').write(str(os.getpid()))\n"
                    "        while True:\n            time.sleep(0.05)\n")
    ref = ROOT / "tests" / "python" / "verdict_pairs" / "ref_conv.py"
    p, wall = run_stalled("trace", ref, hang, "--device", "cpu", "--trace-timeout", "2", "--budget", "1", "--json")
    assert p.returncode == 3, p.stdout + p.stderr
    rep = json.loads(p.stdout)
    assert rep["outcome"] == "TIMEOUT" and rep["hard_stop"] == "trace", rep
    limit = max(1 + 1 + 2 + 30, 2 + 30 + 5)
    assert limit <= wall < limit + 3, wall
    pid = int(pidfile.read_text())

    def running():  # a zombie is dead: it waits only for a parent to read its status
        try:
            stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        return stat[stat.rindex(")") + 2] not in "ZX"
    for _ in range(40):
        if not running():
            break
        time.sleep(0.05)
    assert not running(), f"the candidate's worker {pid} outlived the hard stop"
