"""Bundles of our own GPU verdict pairs (tests/python/verdict_pairs/gpu/*.py), traced on an H200 by
scripts/gpu/verdicts.sh, checked on the CPU: the zero-grid launch is the candidate's BUG (launch-config), and a
kernel with a 2840-character templated name (it overran the shim's old 512-byte record) is traced and VERIFIED."""
import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DIRIGO = pathlib.Path(os.environ.get("DIRIGO_BIN", ROOT / "build" / "dirigo"))
BUNDLES = ROOT / "tests" / "python" / "verdict_pairs" / "gpu" / "bundles"

pytestmark = pytest.mark.skipif(not DIRIGO.exists(), reason="build/dirigo not built (scripts/build.sh)")


def check(name):
    p = subprocess.run([str(DIRIGO), "check", str(BUNDLES / name), "--full", "--json"], capture_output=True,
                       text=True, timeout=300)
    return p.returncode, json.loads(p.stdout)


def test_zero_grid_traced_on_a_gpu_is_a_launch_config_bug():
    rc, rep = check("zero_grid")
    assert (rc, rep["outcome"], rep["evidence"]) == (1, "BUG", "launch-config"), rep
    assert "grid [0, 1, 1]" in rep["reason"] and "the kernel never runs" in rep["reason"]


def test_a_long_templated_kernel_name_is_traced_and_verified():
    m = json.loads((BUNDLES / "long_template_name" / "manifest.json").read_text())
    (name,) = [o["kernel"] for p in m["programs"] for o in p["ops"] if o["kind"] == "launch"]
    assert len(name) > 2000 and name.startswith("_Z12scale_kernelI4PackIJLi1000ELi1001E")
    rc, rep = check("long_template_name")
    assert (rc, rep["outcome"], rep["proof"]) == (0, "VERIFIED", "exact"), rep
