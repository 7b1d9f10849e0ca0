"""The state stage (python/dirigo/state.py, docs/check.md "State"): matched parameters that hold different
values as KernelBench constructs the two programs, and the evidence that this reaches the outputs."""
import json
import math
import os
import pathlib
import subprocess
import sys

import pytest
import torch

from dirigo import bundle as bundle_mod
from dirigo import state
from dirigo.api import Verdict, apply_state

GOLDEN = pathlib.Path(__file__).resolve().parents[1] / "golden" / "torch"
ROOT = pathlib.Path(__file__).resolve().parents[2]

REF = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, n, m):
        super().__init__()
        self.linear = nn.Linear(n, m)

    def forward(self, x):
        return self.linear(x) * 2

def get_inputs():
    return [torch.randn(4, 64)]

def get_init_inputs():
    return [64, 32]
"""

# A CUDA candidate: load_inline with cuda_sources at import time (never compiled by the state stage), and
# a bias drawn with randn. Its forward calls the extension, so it cannot run on the CPU.
CUDA_NEW = """
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

ext = load_inline(name="fused_linear", cpp_sources="torch::Tensor f(torch::Tensor x);",
                  cuda_sources="__global__ void k(float* y) {}", functions=["f"])

class ModelNew(nn.Module):
    def __init__(self, n, m):
        super().__init__()
        self.linear = nn.Linear(n, m)
        self.linear.bias.data = torch.randn(m)
        self.ext = ext

    def forward(self, x):
        return self.ext.f(x)
"""


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


# -- describing values ------------------------------------------------------------------------------------

def test_randn_against_default_init_is_named():
    torch.manual_seed(0)
    ref = torch.nn.Linear(1024, 256).weight
    cand = torch.randn(256, 1024)
    cause = state.likely_cause(state.stats(ref), state.stats(cand))
    assert "torch.randn" in cause and "1/sqrt(1024)" in cause


def test_zero_bias_is_named():
    torch.manual_seed(0)
    ref = torch.nn.Linear(64, 512).bias
    cause = state.likely_cause(state.stats(ref), state.stats(torch.zeros(512)))
    assert "all zeros" in cause


def test_bound_from_another_fan_in_is_named():
    torch.manual_seed(0)
    ref = torch.empty(4096).uniform_(-1 / 16, 1 / 16)   # fan-in 256
    cand = torch.empty(4096).uniform_(-1 / 8, 1 / 8)    # fan-in 64
    cause = state.likely_cause(state.stats(ref), state.stats(cand))
    assert "another fan-in" in cause and "256" in cause and "64" in cause


def test_kaiming_gain_one_is_named():
    torch.manual_seed(0)
    ref = torch.nn.Linear(2048, 1024).weight                      # a = sqrt(5): bound 1/sqrt(2048)
    cand = torch.empty(1024, 2048)
    torch.nn.init.kaiming_uniform_(cand, a=1)                      # bound sqrt(3/2048)
    assert "a = 1" in state.likely_cause(state.stats(ref), state.stats(cand))


def test_same_distribution_other_draw_is_named():
    torch.manual_seed(0)
    a, b = torch.empty(4096).uniform_(-0.1, 0.1), torch.empty(4096).uniform_(-0.1, 0.1)
    assert "different draw" in state.likely_cause(state.stats(a), state.stats(b))


def test_compare_pair_reports_max_difference_and_samples():
    a, b = torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 2.5, 3.0])
    rec = state.compare_pair(a, b)
    assert rec["equal"] is False and rec["max_abs_diff"] == 0.5 and rec["elements_differing"] == 1
    assert rec["reference_stats"]["samples"] == [1.0, 2.0, 3.0]
    assert state.compare_pair(a, a.clone())["equal"] is True


# -- construction -----------------------------------------------------------------------------------------

def test_cuda_candidate_is_constructed_on_the_cpu_with_its_extension_stubbed(tmp_path):
    ref, new = _write(tmp_path, "ref.py", REF), _write(tmp_path, "new.py", CUDA_NEW)
    r, c, stubbed = state.construct_pair(ref, new, 42)
    assert stubbed == ["fused_linear"]
    assert torch.equal(r.linear.weight, c.linear.weight)      # same layer, same seed, same order
    assert not torch.equal(r.linear.bias, c.linear.bias)      # the randn bias
    with pytest.raises(state.StateError, match="not compiled"):
        c.ext.f(torch.zeros(1))


# -- verdicts ---------------------------------------------------------------------------------------------

def test_cuda_candidate_without_proven_locations_is_suspect(tmp_path):
    ref, new = _write(tmp_path, "ref.py", REF), _write(tmp_path, "new.py", CUDA_NEW)
    ans = state.analyze(ref, new)
    assert ans["verdict"] == "SUSPECT" and ans["differing"] == [["linear.bias", "linear.bias"]]
    assert ans["outputs"]["evidence"] == "reference-under-both-states"


def test_cuda_candidate_with_a_proven_location_that_moves_is_bug(tmp_path):
    ref, new = _write(tmp_path, "ref.py", REF), _write(tmp_path, "new.py", CUDA_NEW)
    report = {"locations": [{"output": 0, "index": [1, 3], "verdict": "equal"}]}
    ans = state.analyze(ref, new, report=report)
    assert ans["verdict"] == "BUG" and ans["evidence"] == "state-proven-location"
    assert ans["outputs"]["index"] == [1, 3]
    # the location's two values differ by 2*(bias difference) at column 3, beyond atol + rtol|ref| + atol
    r, c, _ = state.construct_pair(ref, new, 42)
    want = 2 * abs(float(r.linear.bias[3].detach() - c.linear.bias[3].detach()))
    assert math.isclose(ans["outputs"]["max_difference"], want, rel_tol=1e-4)


def test_a_proven_location_the_difference_does_not_reach_is_no_evidence(tmp_path):
    # The candidate differs only in a buffer forward never reads: the reference under both states agrees.
    new = CUDA_NEW.replace("self.linear.bias.data = torch.randn(m)", "self.register_buffer('unused', torch.randn(m))")
    ref_text = REF.replace("self.linear = nn.Linear(n, m)",
                           "self.linear = nn.Linear(n, m)\n        self.register_buffer('unused', torch.zeros(m))")
    ref, new = _write(tmp_path, "ref.py", ref_text), _write(tmp_path, "new.py", new)
    ans = state.analyze(ref, new, report={"locations": [{"output": 0, "index": [0, 0], "verdict": "equal"}]})
    assert ans["differing"] == [["unused", "unused"]]
    assert ans["verdict"] == "NONE" and "does not reach the output" in ans["reason"]


@pytest.mark.parametrize("case,verdict,differing", [("state_randn_weight", "BUG", 2), ("state_same_init", "NONE", 0),
                                                    ("state_unused_buffer", "NONE", 1)])
def test_golden_state_pairs(case, verdict, differing):
    ans = state.analyze(str(GOLDEN / case / "ref.py"), str(GOLDEN / case / "new.py"))
    assert ans["verdict"] == verdict, ans["reason"]
    assert len(ans["differing"]) == differing
    if verdict == "BUG":
        assert ans["evidence"] == "state-replay-cpu" and ans["outputs"]["exceeds"]


def test_construction_failure_is_unknown_not_a_crash(tmp_path):
    new = CUDA_NEW.replace("self.ext = ext", "self.ext = ext\n        self.ext.f(torch.zeros(1))")
    ans = state.analyze(_write(tmp_path, "ref.py", REF), _write(tmp_path, "new.py", new))
    assert ans["verdict"] == "UNKNOWN" and "not compiled" in ans["reason"]


def test_cli_exit_status_and_json(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    case = GOLDEN / "state_randn_weight"
    p = subprocess.run([sys.executable, "-m", "dirigo.state", str(case / "ref.py"), str(case / "new.py"), "--json"],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 1, p.stderr
    ans = json.loads(p.stdout)
    assert ans["format"] == "dirigo-state" and ans["verdict"] == "BUG"


# -- the verdict rules (api.apply_state folds through src/check/state.cpp's, the CLI's) -------------------------

def _v(outcome, evidence=""):
    return Verdict(outcome, reason="r", evidence=evidence, report={"outcome": outcome, "notes": []})


def test_state_bug_overrides_checked_and_keeps_the_function_verdict():
    v = _v("CHECKED")
    apply_state(v, {"format": "dirigo-state", "verdict": "BUG", "evidence": "state-replay-cpu", "reason": "x", "differing": [["a", "b"]]})
    assert (v.outcome, v.stage, v.function_outcome, v.evidence) == ("BUG", "state", "CHECKED", "state-replay-cpu")
    assert v.report["stage"] == "state" and v.state_differs


def test_function_bug_stays_and_state_is_a_note():
    v = _v("BUG", "replay-cpu")
    apply_state(v, {"format": "dirigo-state", "verdict": "BUG", "evidence": "state-replay-cpu", "reason": "x"})
    assert (v.outcome, v.evidence, v.stage) == ("BUG", "replay-cpu", "")


def test_state_suspect_does_not_override_unsupported_and_none_is_a_note():
    v = _v("UNSUPPORTED")
    apply_state(v, {"format": "dirigo-state", "verdict": "SUSPECT", "reason": "x"})
    assert v.outcome == "UNSUPPORTED"
    v = _v("TIMEOUT")
    apply_state(v, {"format": "dirigo-state", "verdict": "SUSPECT", "reason": "x"})
    assert (v.outcome, v.function_outcome) == ("SUSPECT", "TIMEOUT")
    v = _v("CHECKED")
    apply_state(v, {"format": "dirigo-state", "verdict": "NONE", "reason": "values differ, outputs agree"})
    assert v.outcome == "CHECKED" and any("outputs agree" in n for n in v.report["notes"])


# -- bundles ----------------------------------------------------------------------------------------------

def test_bundle_state_annotates_the_manifest(tmp_path):
    from dirigo import trace
    case = GOLDEN / "state_randn_weight"
    out = str(tmp_path / "b")
    r = trace.trace(str(case / "ref.py"), str(case / "new.py"), out, device="cpu", timeout=300)
    assert r.status == "ok", r.message
    manifest, _ = bundle_mod.read_bundle(out)
    params = {e["name"]: e for p in manifest["programs"] for e in p["inputs"] if e["kind"] == "parameter"}
    assert params["weight"]["stats"]["std"] > 0.9 and params["linear.weight"]["stats"]["absmax"] < 0.18  # trace time
    ans = bundle_mod.state_bundle(out, str(case / "ref.py"), str(case / "new.py"), out=str(tmp_path / "c"))
    assert ans["verdict"] == "BUG"
    manifest, _ = bundle_mod.read_bundle(str(tmp_path / "c"))
    assert manifest["match"]["state"]["verdict"] == "BUG"
    assert ["ref.linear.weight", "new.weight"] in manifest["match"]["differing_values"]
    # checked without its program files, `dirigo check` applies the recorded answer (src/cli/cmd_check.cpp)
    dirigo_bin = pathlib.Path(os.environ.get("DIRIGO_BIN", ROOT / "build" / "dirigo"))
    if not dirigo_bin.exists():
        pytest.skip("build/dirigo not built")
    p = subprocess.run([str(dirigo_bin), "check", str(tmp_path / "c"), "--json", "--budget", "20"], capture_output=True,
                       text=True)
    rep = json.loads(p.stdout)
    assert p.returncode == 1 and rep["outcome"] == "BUG" and rep["stage"] == "state", rep["reason"]
    assert rep["function_outcome"] in ("CHECKED", "VERIFIED") and rep["evidence"] == "state-replay-cpu"
    p = subprocess.run([str(dirigo_bin), "check", str(tmp_path / "c"), "--json", "--budget", "20", "--no-state"],
                       capture_output=True, text=True)
    assert json.loads(p.stdout)["outcome"] in ("CHECKED", "VERIFIED")


def test_chunked_digest_stats_and_comparison_agree_with_whole_tensor_arithmetic(monkeypatch):
    import hashlib
    from dirigo.trace import _tensor_bytes
    from dirigo import common
    monkeypatch.setattr(common, "CHUNK", 7)  # several chunks, the last one short
    torch.manual_seed(1)
    a = torch.randn(5, 9)
    b = a.clone()
    b[4, 8] += 3.0  # the largest difference sits in the last chunk
    b[0, 1] -= 1.0
    assert state.digest(a) == hashlib.sha256(_tensor_bytes(a)).hexdigest()
    assert state.digest(a.t()) == hashlib.sha256(_tensor_bytes(a.t())).hexdigest()  # row-major of a view
    s = state.stats(a)
    assert math.isclose(s["mean"], float(a.double().mean()), rel_tol=1e-12, abs_tol=1e-12)
    assert math.isclose(s["std"], float(a.double().std(unbiased=False)), rel_tol=1e-12)
    assert s["absmax"] == float(a.abs().max())
    rec = state.compare_pair(a, b)
    assert rec["elements_differing"] == 2 and rec["first_max_at"] == 44
    assert math.isclose(rec["max_abs_diff"], 3.0, rel_tol=1e-6)


def test_bundle_with_equal_recorded_values_needs_no_construction(tmp_path):
    from dirigo import trace
    case = GOLDEN / "state_same_init"
    out = str(tmp_path / "b")
    assert trace.trace(str(case / "ref.py"), str(case / "new.py"), out, device="cpu", timeout=300).status == "ok"
    assert state.recorded_equal(out) == 2
    ans = state.analyze(str(case / "ref.py"), "/nonexistent/new.py", bundle=out)  # never loaded
    assert ans["verdict"] == "NONE" and "recorded values" in ans["reason"]
    differing = GOLDEN / "state_randn_weight"
    out2 = str(tmp_path / "b2")
    assert trace.trace(str(differing / "ref.py"), str(differing / "new.py"), out2, device="cpu", timeout=300).status == "ok"
    assert state.recorded_equal(out2) is None


def test_nan_output_difference_is_reported_not_a_crash(tmp_path):
    # The candidate's bias is NaN: the outputs differ by NaN against a number, which counts as beyond tolerance.
    new = REF.replace("class Model(", "class ModelNew(").replace(
        "self.linear = nn.Linear(n, m)", "self.linear = nn.Linear(n, m)\n        self.linear.bias.data[0] = float('nan')")
    ans = state.analyze(_write(tmp_path, "ref.py", REF), _write(tmp_path, "new.py", new))
    assert ans["verdict"] == "BUG" and ans["evidence"] == "state-replay-cpu", ans["reason"]
    assert ans["outputs"]["max_difference"] == "inf" and "inf" in ans["reason"]
    json.dumps(ans, allow_nan=False)  # the CLI answer stays valid JSON


# -- observation of the real programs (--observe, docs/check.md "Observe") -----------------------------------

def test_observe_reports_what_kernelbench_sees_with_equal_state():
    # mean_vs_sum: equal (empty) state, a different function: both real programs run on the CPU differ
    case = GOLDEN / "mean_vs_sum"
    plain = state.analyze(str(case / "ref.py"), str(case / "new.py"))
    assert plain["verdict"] == "NONE" and "outputs" not in plain
    ans = state.analyze(str(case / "ref.py"), str(case / "new.py"), observe=True)
    assert ans["verdict"] == "BUG" and ans["evidence"] == "observed-cpu", ans["reason"]
    assert ans["outputs"]["exceeds"] and ans["outputs"]["exceeding"] >= 1 and not ans["rounding"]
    same = GOLDEN / "conv_bias_split"  # the same function: observed, within tolerance, no finding
    ans = state.analyze(str(same / "ref.py"), str(same / "new.py"), observe=True)
    assert ans["verdict"] == "NONE" and ans["outputs"]["trials"] == 5 and "agree within tolerance" in ans["reason"]


def test_observed_difference_at_a_proven_location_is_named_rounding(tmp_path):
    # the candidate adds 0.5 (beyond atol 1e-2): observed at its worst location; a report that (wrongly, for
    # the test) proved that location equal makes the answer say the difference is rounding or approximation
    new = REF.replace("class Model(", "class ModelNew(").replace("* 2", "* 2 + 0.5")
    ref, new = _write(tmp_path, "ref.py", REF), _write(tmp_path, "new.py", new)
    ans = state.analyze(ref, new, observe=True)
    assert ans["verdict"] == "BUG" and not ans["rounding"]
    where = ans["outputs"]["index"]
    ans = state.analyze(ref, new, observe=True, report={"locations": [{"output": 0, "index": where,
                                                                      "verdict": "equal"}]})
    assert ans["verdict"] == "BUG" and ans["rounding"] and "rounding" in ans["reason"]


def test_observe_stage_verdict_rules():
    v = _v("TIMEOUT")
    apply_state(v, {"format": "dirigo-state", "verdict": "BUG", "evidence": "observed-gpu", "reason": "x", "differing": []})
    assert (v.outcome, v.stage, v.function_outcome) == ("BUG", "observe", "TIMEOUT")
    assert v.reason.startswith("observe: ")


def test_observe_on_the_cpu_skips_a_cuda_candidate(tmp_path):
    # a CUDA candidate cannot run here: --observe changes nothing (no forward of the stubbed extension)
    same = CUDA_NEW.replace("        self.linear.bias.data = torch.randn(m)\n", "")
    ans = state.analyze(_write(tmp_path, "ref.py", REF), _write(tmp_path, "new.py", same), observe=True)
    assert ans["verdict"] == "NONE" and "outputs" not in ans
