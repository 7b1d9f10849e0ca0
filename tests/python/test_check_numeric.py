"""Giant locations decided by numeric evaluation (docs/check.md): `dirigo check --build-nodes N` forces the
numeric path on a small Linear + BatchNorm program; the witness is (seed, point) only, and replaying it
on PyTorch CPU regenerates every input and reproduces the C++ numeric values."""
import json
import os
import pathlib
import subprocess

import numpy as np
import pytest
import torch

from dirigo import replay as rp

ROOT = pathlib.Path(__file__).resolve().parents[2]
DIRIGO = pathlib.Path(os.environ.get("DIRIGO_BIN", ROOT / "build" / "dirigo"))

pytestmark = pytest.mark.skipif(not DIRIGO.exists(), reason="build/dirigo not built (scripts/build.sh)")

REF = """import torch
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 8)
        self.bn = torch.nn.BatchNorm1d(8)
    def forward(self, x):
        return torch.relu(self.bn(self.fc(x)))
def get_inputs():
    return [torch.randn(12, 16)]
def get_init_inputs():
    return []
"""
# The candidate's Linear as (W @ x^T)^T + b: no op in common with the reference's first, so no prefix
# is trimmed and every value the numeric path draws is an input's (a trimmed prefix result is not).
LINEAR = "((self.fc.weight @ x.t()).t() + self.fc.bias)"
# eval-mode batch norm (running statistics) where the reference normalizes by the batch's
BUGGY = REF.replace("class Model(", "class ModelNew(").replace(
    "torch.relu(self.bn(self.fc(x)))",
    f"torch.relu(torch.nn.functional.batch_norm({LINEAR}, self.bn.running_mean, self.bn.running_var, "
    "self.bn.weight, self.bn.bias, False))")
SAME = REF.replace("class Model(", "class ModelNew(").replace("self.fc(x)", LINEAR)
# the same bug behind a trimmed prefix (the shared Linear): a point drawn for the Linear's results is no
# evidence, so the location is decided again over the inputs, and that point is the one replayed
BUGGY_TRIMMED = REF.replace("class Model(", "class ModelNew(").replace(
    "torch.relu(self.bn(self.fc(x)))",
    "torch.relu(torch.nn.functional.batch_norm(self.fc(x), self.bn.running_mean, self.bn.running_var, "
    "self.bn.weight, self.bn.bias, False))")


def check(tmp_path, new_src, *extra, build_nodes="20"):
    (tmp_path / "ref.py").write_text(REF)
    (tmp_path / "new.py").write_text(new_src)
    w = tmp_path / "witness.json"
    p = subprocess.run([str(DIRIGO), "check", tmp_path / "ref.py", tmp_path / "new.py", "--device", "cpu",
                        "--budget", "30", "--build-nodes", build_nodes, "--json", "--witness-out", w, *extra],
                       capture_output=True, text=True, timeout=600)
    return p, json.loads(p.stdout), (json.loads(w.read_text()) if w.exists() else None)


def test_sampled_witness_replays_on_pytorch_cpu(tmp_path):
    p, r, w = check(tmp_path, BUGGY)
    assert r["outcome"] == "BUG", p.stdout[:2000] + p.stderr[-2000:]
    loc = r["locations"][r["first_differ"]]
    assert loc["stage"] == "sampling" and "evaluated numerically" in loc["reason"], loc
    assert w["sampled"]["seed"] == loc["sampled"]["seed"] and not w["leaves"] and not w["leaves_complete"]
    # the replay regenerated the inputs from (seed, point) and PyTorch reproduces the difference ...
    assert r["evidence"] == "replay-cpu" and r["replay"]["exceeds"], r["replay"]
    # ... with the values the C++ numeric evaluation computed for both programs (fp32 vs fp64 noise)
    sym = w["symbolic"]
    assert abs(r["replay"]["reference"] - sym["reference_f64"]) <= 1e-3 * (1 + abs(sym["reference_f64"]))
    assert abs(r["replay"]["candidate"] - sym["candidate_f64"]) <= 1e-3 * (1 + abs(sym["candidate_f64"]))


def test_sampled_witness_over_a_trimmed_prefix_is_found_again_over_the_inputs(tmp_path):
    p, r, w = check(tmp_path, BUGGY_TRIMMED)
    assert r["prefix_trimmed"] > 0 and w["sampled"]["trimmed"] == [], w["sampled"]
    assert r["outcome"] == "BUG" and r["evidence"] == "replay-cpu" and r["replay"]["exceeds"], (
        r["outcome"], r["evidence"], r["reason"], r["replay"])


CLAMPED_REF = """
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.tanh(x) * 3
def get_inputs():
    return [torch.full((4, 8), 0.5)]  # 5 when scaled by 10: past the candidate's clamp below
def get_init_inputs():
    return []
"""


def _trimmed_witness():
    return {"output": {"index": 0}, "location": [1, 2], "tolerance": {"atol": 1e-2, "rtol": 1e-2, "bound": 10},
            "leaves": [], "inputs": [],
            "sampled": {"seed": 1, "point": 0, "bound": 10.0, "nonnegative": False, "trimmed": ["prefix[0].t3"]}}


@pytest.mark.parametrize("new_forward, found_at, exceeds", [
    ("torch.tanh(x) * 3.5", "as drawn", True),                 # every input shows it
    ("torch.tanh(torch.clamp(x, max=2.0)) * 3", "scaled by 10", True),  # only at inputs past 2
    ("3 * torch.tanh(x)", "negated", False),                   # the same function: every variant tried
])
def test_a_witness_over_a_trimmed_prefix_is_looked_for_at_the_program_inputs(tmp_path, new_forward, found_at, exceeds):
    # its values were drawn for the prefix's results, which no input is known to produce: the programs
    # are run at their own inputs, scaled and negated, and the answer names the inputs it was found at
    (tmp_path / "ref.py").write_text(CLAMPED_REF)
    (tmp_path / "new.py").write_text(CLAMPED_REF.replace("class Model(", "class ModelNew(")
                                     .replace("torch.tanh(x) * 3", new_forward))
    progs = rp.Programs(str(tmp_path / "ref.py"), str(tmp_path / "new.py"), "cpu", 42, None)
    drawn = progs.inputs[0].clone()
    res = rp._replay_on(progs, _trimmed_witness(), 300)
    assert res["status"] == "replayed" and res["exceeds"] is exceeds, res
    assert res["inputs_from"].endswith(found_at) and f"manual_seed({progs.input_seed})" in res["inputs_from"], res
    assert "trimmed prefix" in res["notes"][0]
    assert torch.equal(progs.inputs[0], drawn)  # the inputs as they were


def test_a_zeroed_input_of_a_sampled_witness_is_zero_and_the_others_drawn(tmp_path):
    src = CLAMPED_REF.replace("def forward(self, x):", "def forward(self, x, y):").replace(
        "return [torch.full((4, 8), 0.5)]", "return [torch.rand(4, 8), torch.rand(4, 8)]")
    (tmp_path / "ref.py").write_text(src)
    (tmp_path / "new.py").write_text(src.replace("class Model(", "class ModelNew("))
    progs = rp.Programs(str(tmp_path / "ref.py"), str(tmp_path / "new.py"), "cpu", 42, None)
    sampled = {"seed": 1, "point": 0, "bound": 10.0, "nonnegative": False, "trimmed": [], "zeroed": ["x"]}
    w = {"sampled": sampled, "inputs": [{"kind": "input", "input": "x"}, {"kind": "input", "input": "y"}]}
    rp._set_sampled(progs, w, {}, [])
    x, y = progs.inputs
    assert torch.count_nonzero(x) == 0
    assert np.allclose(y.double().numpy().ravel(), rp.sampled_values(sampled, "y", 32), atol=1e-6)


def test_equal_programs_are_never_bug_on_the_numeric_path(tmp_path, monkeypatch):
    monkeypatch.setenv("DIRIGO_REDUCE_ABOVE", "-1")  # term by term: with Reduce nodes the location is small
    # the per-location path: not the whole output at its symbolic location (that proves it equal)
    p, r, _ = check(tmp_path, SAME, "--no-replay", "--no-symbolic-location")
    assert r["outcome"] != "BUG", p.stdout[:2000]
    assert r["equal"] == 0  # numeric evaluation never decides "equal"
    assert any("none differs beyond the tolerance" in l.get("reason", "") for l in r["locations"]), r["locations"][:2]


def test_sampled_values_follow_the_ladder():
    s = {"seed": 3, "point": 1, "bound": 10.0, "nonnegative": True}
    v = rp.sampled_values(s, "x", 1000)
    assert v.shape == (1000,) and v.min() >= 0 and v.max() <= 10 and v.std() > 1
    sym = rp.sampled_values({**s, "nonnegative": False, "bound": 0.1}, "x", 1000)
    assert sym.min() < 0 < sym.max() and abs(sym).max() <= 0.1
    assert not np.array_equal(v, rp.sampled_values(s, "y", 1000))  # keyed by the input's name
    assert np.array_equal(v, rp.sampled_values(s, "x", 1000))


def test_sampled_values_of_a_normal_point():
    # the falsification tier's N(0, 1) points (docs/check.md "Falsification tier"): Box-Muller from the leaf's hash
    s = {"seed": 3, "point": 1024, "bound": 1.0, "nonnegative": False, "distribution": "normal"}
    v = rp.sampled_values(s, "x", 20000)
    assert abs(v.mean()) < 0.03 and abs(v.std() - 1) < 0.02 and v.max() > 3 and v.min() < -3
    a = rp.sampled_values({**s, "point": 1025, "nonnegative": True}, "x", 20000)
    assert a.min() >= 0 and abs(a.mean() - 0.7979) < 0.02
    # a witness without "distribution" (written before the tier) stays uniform
    old = {k: x for k, x in s.items() if k != "distribution"}
    assert abs(rp.sampled_values(old, "x", 1000)).max() <= 1


def test_giant_built_location_witness_is_a_regenerable_point(tmp_path):
    # Built (not numeric), but past --giant-nodes: decided at falsify's random points, keyed by the shared
    # inputs' names, so the witness is (seed, point) instead of every leaf, and the replay regenerates it.
    p, r, w = check(tmp_path, BUGGY, "--giant-nodes", "10", build_nodes="100000000")
    assert r["outcome"] == "BUG", p.stdout[:2000] + p.stderr[-2000:]
    loc = r["locations"][r["first_differ"]]
    assert loc["stage"] == "sampling" and "evaluated numerically" not in loc.get("reason", ""), loc
    assert w["sampled"]["seed"] == loc["sampled"]["seed"] and not w["leaves"] and not w["leaves_complete"]
    assert r["evidence"] == "replay-cpu" and r["replay"]["exceeds"], r["replay"]
    sym = w["symbolic"]
    assert abs(r["replay"]["reference"] - sym["reference_f64"]) <= 1e-3 * (1 + abs(sym["reference_f64"]))
    assert abs(r["replay"]["candidate"] - sym["candidate_f64"]) <= 1e-3 * (1 + abs(sym["candidate_f64"]))


SHORT_REF = """import torch
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(2048, 2048)
    def forward(self, x):
        return torch.sigmoid(self.fc(x)).sum(1) * 0.5
def get_inputs():
    return [torch.randn(2, 2048)]
def get_init_inputs():
    return []
"""


def test_a_shortened_sum_within_tolerance_is_bug_at_its_lone_term_and_replays_there(tmp_path):
    # The candidate sums 2047 of the 2048 sigmoids: a 2048th of the row sum, inside the tolerance at random
    # inputs. The domain witness sets the dropped term's bias, every other element 0 and the other biases
    # at -v (a sigmoid is flat there); the replay sets the programs so, and gives dirigo's own values.
    (tmp_path / "ref.py").write_text(SHORT_REF)
    (tmp_path / "new.py").write_text(SHORT_REF.replace("class Model(", "class ModelNew(").replace(
        "torch.sigmoid(self.fc(x)).sum(1)", "torch.sigmoid(self.fc(x))[:, :2047].sum(1)"))
    w = tmp_path / "witness.json"
    p = subprocess.run([str(DIRIGO), "check", tmp_path / "ref.py", tmp_path / "new.py", "--device", "cpu",
                        "--budget", "30", "--json", "--witness-out", w, "--no-state"],
                       capture_output=True, text=True, timeout=600)
    r = json.loads(p.stdout)
    assert r["outcome"] == "BUG", p.stdout[:2000] + p.stderr[-2000:]
    loc = r["locations"][r["first_differ"]]
    assert loc["stage"] == "domain", loc
    wj = json.loads(w.read_text())
    assert wj["others"] == "zero" and [f["input"] for f in wj["fill"]] == ["fc.bias"], wj.get("fill")
    assert r["evidence"] == "replay-cpu" and r["replay"]["exceeds"], r["replay"]
    sym = wj["symbolic"]
    for side in ("reference", "candidate"):
        assert abs(r["replay"][side] - sym[side + "_f64"]) <= 1e-4 * (1 + abs(sym[side + "_f64"])), (side, r["replay"], sym)


def test_others_zero_sets_every_other_element_and_the_fills(tmp_path):
    (tmp_path / "ref.py").write_text(SHORT_REF.replace("2048", "16"))
    (tmp_path / "new.py").write_text(SHORT_REF.replace("2048", "16").replace("class Model(", "class ModelNew("))
    progs = rp.Programs(str(tmp_path / "ref.py"), str(tmp_path / "new.py"), "cpu", 42, None)
    ref_state, new_state = progs.state("ref"), progs.state("new")
    w = {"others": "zero", "inputs": [{"kind": "input", "input": "x"}],
         "fill": [{"kind": "parameter", "input": "fc.bias", "program": "", "value": -3.0}]}
    rp._zero_others(progs, w, ref_state, new_state)
    assert torch.count_nonzero(progs.inputs[0]) == 0
    assert torch.count_nonzero(ref_state["fc.weight"]) == 0 and torch.count_nonzero(new_state["fc.weight"]) == 0
    assert torch.all(ref_state["fc.bias"] == -3.0)
    with pytest.raises(rp.ReplayError, match="fill"):
        rp.validate({"format": rp.FORMAT, "version": rp.VERSION, "output": 0, "location": [0], "leaves": [],
                     "fill": [{"kind": "trimmed", "input": "prefix[0].t1", "value": 1}]})
