"""Witness replay (python/dirigo/replay.py, docs/check.md): both real programs run at a witness.

Hand-written witnesses test the replayer alone; the end-to-end tests go through dirigo.check (trace ->
check -> witness -> replay) and need the compiled core."""
import json
import math
import pathlib
import re
import subprocess
import sys

import pytest

import dirigo
from dirigo import replay as rp

ROOT = pathlib.Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "torch"
# state_* pairs compute the right function with other parameter values: their BUG comes from the state stage
# (tests/python/test_state.py), not from a witness
BUG_CASES = sorted(p.name for p in GOLDEN.iterdir()
                   if (p / "new.py").exists() and re.search(r"^# EXPECT: BUG", (p / "new.py").read_text(), re.M)
                   and not p.name.startswith("state_"))

needs_core = pytest.mark.skipif(getattr(dirigo, "_core", None) is None, reason="dirigo._core not built")

# A prefix both programs share (exp), then a difference: the solver's witness is over exp's results.
PREFIX_REF = """import torch
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        return torch.exp(x).sum(dim=1)
def get_inputs():
    return [torch.randn(4, 4)]
def get_init_inputs():
    return []
"""
PREFIX_NEW = """import torch
class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        return torch.exp(x).sum(dim=0)
"""


def witness(ref, new, loc, leaves, shape, **kw):
    w = {"format": "dirigo-witness", "version": 1, "ref": str(ref), "new": str(new), "init_seed": 42,
         "input_seed": None, "tolerance": {"atol": 1e-2, "rtol": 1e-2, "bound": 10},
         "output": {"index": 0, "reference": "out0", "candidate": "out0", "shape": shape},
         "location": loc, "leaves": leaves}
    w.update(kw)
    return w


def traced_input(shape):
    """The input the tracer (and so replay) starts from: the reference's get_inputs() under
    KernelBench's first trial seed."""
    import torch
    from dirigo import load
    torch.manual_seed(load.kernelbench_trial_seeds(42, 1)[0])
    return torch.randn(*shape)


def test_witness_values_are_written_and_both_programs_run():
    case = GOLDEN / "sum_wrong_dim"
    leaves = [{"input": "x", "kind": "input", "index": [1, 0], "value": 5.0},
              {"input": "x", "kind": "input", "index": [0, 1], "value": -5.0}]
    res = rp.replay(witness(case / "ref.py", case / "new.py", [1], leaves, [6]), device="cpu")
    assert res["status"] == "replayed", res
    x = traced_input((6, 6))
    x[1, 0], x[0, 1] = 5.0, -5.0
    assert res["reference"] == pytest.approx(float(x.sum(1)[1]), abs=1e-5)
    assert res["candidate"] == pytest.approx(float(x.sum(0)[1]), abs=1e-5)
    assert res["exceeds"] and res["evidence"] == "replay-cpu"
    assert res["difference"] > res["allowed"] == pytest.approx(1e-2 + 1e-2 * abs(res["reference"]))
    assert rp.exit_status(res) == rp.EXIT_REPRODUCED


def test_witness_on_equal_programs_does_not_reproduce():
    case = GOLDEN / "relu_as_clamp"
    src = (case / "ref.py").read_text()
    shape = [int(s) for s in re.search(r"torch\.randn\(([\d, ]+)\)", src).group(1).split(",")]
    loc = [0] * len(shape)
    leaves = [{"input": "x", "kind": "input", "index": loc, "value": 3.5}]
    res = rp.replay(witness(case / "ref.py", case / "new.py", loc, leaves, shape), device="cpu")
    assert res["status"] == "replayed", res
    assert not res["exceeds"]
    assert res["reference"] == pytest.approx(4.5)  # relu(3.5) + 1
    assert rp.exit_status(res) == rp.EXIT_NOT_REPRODUCED


def test_prefix_witness_is_carried_back_to_the_inputs(tmp_path):
    (tmp_path / "ref.py").write_text(PREFIX_REF)
    (tmp_path / "new.py").write_text(PREFIX_NEW)
    # op 0 of the reference is aten::exp; x is t0, its result t1
    leaves = [{"input": "prefix[0].t1", "kind": "trimmed", "op": 0, "tensor": "t1", "output": 0, "aten": "aten::exp",
               "shape": [4, 4], "index": [1, 0], "value": 7.0},
              {"input": "prefix[0].t1", "kind": "trimmed", "op": 0, "tensor": "t1", "output": 0, "aten": "aten::exp",
               "shape": [4, 4], "index": [0, 1], "value": 0.5}]
    res = rp.replay(witness(tmp_path / "ref.py", tmp_path / "new.py", [1], leaves, [4]), device="cpu")
    assert res["status"] == "replayed", res
    cb = res["carried_back"]
    assert cb["leaves"] == 2 and cb["changed"] == ["x"]
    assert cb["max_residual"] < 1e-2, cb
    # the replayed programs saw exp(x[1,0]) ~ 7 and exp(x[0,1]) ~ 0.5, everything else as traced
    x = traced_input((4, 4))
    x[1, 0], x[0, 1] = math.log(7.0), math.log(0.5)
    import torch
    assert res["reference"] == pytest.approx(float(torch.exp(x).sum(1)[1]), abs=0.05)
    assert res["candidate"] == pytest.approx(float(torch.exp(x).sum(0)[1]), abs=0.05)
    assert res["exceeds"]


def test_carry_back_respects_the_bound(tmp_path):
    (tmp_path / "ref.py").write_text(PREFIX_REF)
    (tmp_path / "new.py").write_text(PREFIX_NEW)
    leaf = {"input": "prefix[0].t1", "kind": "trimmed", "op": 0, "tensor": "t1", "output": 0,
            "shape": [4, 4], "index": [2, 2], "value": 1e9}  # exp(x) = 1e9 needs x ~ 20.7 > bound 2
    w = witness(tmp_path / "ref.py", tmp_path / "new.py", [2], [leaf], [4])
    w["tolerance"]["bound"] = 2.0
    res = rp.replay(w, device="cpu", steps=60)
    assert res["status"] == "replayed", res
    assert res["carried_back"]["max_residual"] > 1e8  # exp(2) is as far as it may go


@pytest.mark.parametrize("bad, says", [({"format": "nope"}, "not a dirigo witness"),
                                       ({"format": "dirigo-witness", "version": 9}, "version"),
                                       ({"format": "dirigo-witness", "version": 1, "output": {}, "location": [0],
                                         "leaves": [{"input": "x", "kind": "weird", "index": [0], "value": 1}]},
                                        "unknown kind")])
def test_malformed_witness_is_unsupported_naming_the_problem(bad, says):
    res = rp.replay(bad, ref="a.py", new="b.py", device="cpu")
    assert res["status"] == "unsupported" and says in res["message"]
    assert rp.exit_status(res) == rp.EXIT_IMPOSSIBLE


def test_cli_answers_json_with_exit_status(tmp_path):
    case = GOLDEN / "sum_wrong_dim"
    leaves = [{"input": "x", "kind": "input", "index": [2, 0], "value": 9.0}]
    f = tmp_path / "w.json"
    f.write_text(json.dumps(witness(case / "ref.py", case / "new.py", [2], leaves, [6])))
    p = subprocess.run([sys.executable, "-m", "dirigo.replay", str(f), "--json", "--device", "cpu"],
                       capture_output=True, text=True, timeout=300, cwd=ROOT,
                       env={"PYTHONPATH": str(ROOT / "python"), "PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["format"] == "dirigo-replay"
    f.write_text("{broken")
    p = subprocess.run([sys.executable, "-m", "dirigo.replay", str(f), "--json"], capture_output=True, text=True,
                       timeout=300, cwd=ROOT, env={"PYTHONPATH": str(ROOT / "python"), "PATH": "/usr/bin:/bin"})
    assert p.returncode == 4 and "cannot read the witness" in json.loads(p.stdout)["message"]


def test_cli_stdout_is_the_answer_when_programs_write_to_fd_1(tmp_path):
    # An extension build's ninja writes "ninja: no work to do." to file descriptor 1 (not sys.stdout):
    # on an H200 that turned a reproduced replay into "malformed replay answer" in dirigo check.
    case = GOLDEN / "sum_wrong_dim"
    noisy = {}
    for name in ("ref.py", "new.py"):
        noisy[name] = tmp_path / name
        noisy[name].write_text("import os\nos.write(1, b'ninja: no work to do.\\n')\nprint('user print')\n"
                               + (case / name).read_text())
    leaves = [{"input": "x", "kind": "input", "index": [2, 0], "value": 9.0}]
    f = tmp_path / "w.json"
    f.write_text(json.dumps(witness(noisy["ref.py"], noisy["new.py"], [2], leaves, [6])))
    p = subprocess.run([sys.executable, "-m", "dirigo.replay", str(f), "--json", "--device", "cpu"],
                       capture_output=True, text=True, timeout=300, cwd=ROOT,
                       env={"PYTHONPATH": str(ROOT / "python"), "PATH": "/usr/bin:/bin"})
    ans = json.loads(p.stdout)  # the whole of stdout is the answer
    assert ans["status"] == "replayed" and ans["exceeds"], ans
    assert "ninja: no work to do." in p.stderr


# ---------------------------------------------------------------------------------------------------------
# End to end: dirigo.check traces, checks, writes the witness and replays it

@needs_core
@pytest.mark.parametrize("case", BUG_CASES)
def test_golden_bugs_replay_on_the_cpu(case):
    v = dirigo.check(str(GOLDEN / case / "ref.py"), str(GOLDEN / case / "new.py"), budget_s=20, device="cpu")
    assert v.outcome == "BUG", f"{case}: {v.outcome}: {v.reason}"
    assert v.evidence == "replay-cpu", (v.evidence, v.replay)
    assert v.replay["exceeds"] and v.replay["difference"] > v.replay["allowed"]


@needs_core
def test_end_to_end_prefix_witness_is_found_again_over_program_inputs(tmp_path):
    # The solver's first witness sets exp's results (trimmed); the check decides the location again over
    # x, so the BUG's witness needs no carry-back (test_prefix_witness_is_carried_back_to_the_inputs
    # covers the carry-back of a witness that does).
    (tmp_path / "ref.py").write_text(PREFIX_REF)
    (tmp_path / "new.py").write_text(PREFIX_NEW)
    v = dirigo.check(str(tmp_path / "ref.py"), str(tmp_path / "new.py"), budget_s=20, device="cpu")
    assert v.witness["leaves"] and all(l["kind"] == "input" for l in v.witness["leaves"]), v.witness["leaves"]
    assert v.replay["carried_back"] is None
    assert v.outcome == "BUG" and v.evidence == "replay-cpu", (v.outcome, v.reason, v.replay)


@needs_core
def test_difference_within_tolerance_everywhere_is_suspect(tmp_path):
    (tmp_path / "ref.py").write_text(PREFIX_REF.replace("torch.exp(x).sum(dim=1)", "x * 2.0"))
    (tmp_path / "new.py").write_text(PREFIX_NEW.replace("torch.exp(x).sum(dim=0)", "x * 2.002"))
    v = dirigo.check(str(tmp_path / "ref.py"), str(tmp_path / "new.py"), budget_s=20, device="cpu")
    assert v.outcome == "SUSPECT", (v.outcome, v.reason)
    assert v.replay["status"] == "replayed" and not v.replay["exceeds"]
    assert "the real programs give" in v.reason and "at the witness" in v.reason


@needs_core
def test_parameter_only_the_reference_has_is_set_in_the_reference(tmp_path):
    # The candidate drops the Linear's bias: that bias is a reference-only parameter (an input no
    # candidate input matches). Its traced values are small; the witness makes it large.
    (tmp_path / "ref.py").write_text(PREFIX_REF.replace("torch.exp(x).sum(dim=1)", "self.lin(x)").replace(
        "super().__init__()", "super().__init__()\n        self.lin = torch.nn.Linear(4, 4)"))
    (tmp_path / "new.py").write_text(PREFIX_NEW.replace("torch.exp(x).sum(dim=0)", "self.lin(x)").replace(
        "super().__init__()", "super().__init__()\n        self.lin = torch.nn.Linear(4, 4, bias=False)"))
    v = dirigo.check(str(tmp_path / "ref.py"), str(tmp_path / "new.py"), budget_s=20, device="cpu")
    ref_only = [l for l in v.witness["leaves"] if l.get("program") == "reference"]
    assert ref_only and ref_only[0]["input"] == "lin.bias" and ref_only[0]["kind"] == "parameter", v.witness["leaves"]
    assert v.outcome == "BUG" and v.evidence == "replay-cpu", (v.outcome, v.reason, v.replay)
