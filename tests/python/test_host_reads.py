"""A candidate that reads a parameter on the host (`.item()`) and uses the number as a constant: the
trace records the constant, so a witness that changes the parameter is not backed by the trace. dirigo
must say SUSPECT with the reason, never BUG (docs/check.md "Host reads"); equal functions stay equal."""
import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DIRIGO = pathlib.Path(os.environ.get("DIRIGO_BIN", ROOT / "build" / "dirigo"))

pytestmark = pytest.mark.skipif(not DIRIGO.exists(), reason="build/dirigo not built (scripts/build.sh)")

REF = """import torch
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.constant = torch.nn.Parameter(torch.tensor(2.0))
    def forward(self, x):
        return torch.min(x, self.constant) - self.constant
def get_inputs():
    return [torch.randn(8, 16)]
def get_init_inputs():
    return []
"""
# the value is read on the host and enters the computation as a Python number
HOST_READ = REF.replace("class Model(", "class ModelNew(").replace(
    "return torch.min(x, self.constant) - self.constant",
    "c = self.constant.item()\n        return torch.clamp(x, max=c) - c")
# the same function with the parameter kept as a tensor: decided equal as before
TENSOR = REF.replace("class Model(", "class ModelNew(").replace(
    "return torch.min(x, self.constant) - self.constant",
    "return torch.clamp(x - self.constant, max=0.0)")


def check(tmp_path, new_src, *extra):
    (tmp_path / "ref.py").write_text(REF)
    (tmp_path / "new.py").write_text(new_src)
    p = subprocess.run([str(DIRIGO), "check", tmp_path / "ref.py", tmp_path / "new.py", "--device", "cpu",
                        "--budget", "30", "--json", *extra], capture_output=True, text=True, timeout=600)
    return p, json.loads(p.stdout)


def test_a_witness_that_changes_a_host_read_parameter_is_suspect_not_bug(tmp_path):
    # without the replay (a GPU bundle checked where no GPU is): the trace alone cannot back it
    p, r = check(tmp_path, HOST_READ, "--no-replay")
    assert r["outcome"] == "SUSPECT", p.stdout[:2000] + p.stderr[-2000:]
    assert "constant" in r["reason"] and ".item()" in r["reason"], r["reason"]


def test_the_replay_runs_the_host_read_again_and_shows_no_difference(tmp_path):
    p, r = check(tmp_path, HOST_READ)
    assert r["outcome"] == "SUSPECT", p.stdout[:2000] + p.stderr[-2000:]
    assert "real programs give" in r["reason"], r["reason"]


def test_without_a_host_read_the_same_function_is_verified(tmp_path):
    p, r = check(tmp_path, TENSOR)
    assert r["outcome"] in ("VERIFIED", "CHECKED"), p.stdout[:2000] + p.stderr[-2000:]
