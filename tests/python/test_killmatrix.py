"""Kill-matrix inputs, metrics, launch plans and the GPU job plan."""
import glob
import json
import os

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from dirigo import killmatrix as km  # noqa: E402
from dirigo import killmatrix_gpu as kg  # noqa: E402

SUBSTRATES = sorted(glob.glob(os.path.join(ROOT, "examples", "substrates", "*.py")))


def test_input_plan_has_kernelbench_hardened_and_fuzz():
    plan = km.input_plan()
    assert len(plan) == 31
    assert [p["seed"] for p in plan if p["family"] == "kernelbench"] == [0, 1, 2, 3, 4]
    assert {p["distribution"] for p in plan if p["family"] == "hardened"} == set(km.HARDENED)
    assert len({p["name"] for p in plan}) == 31


def test_metrics_columns():
    m = km.metrics(np.array([1.0, 1.5, np.nan]), np.array([1.0, 1.0, 2.0]), np.array([1.0, 1.0, 2.0]))
    assert m["nonfinite_mismatch"] == 1 and m["t_eq"] == float("inf")
    m = km.metrics(np.array([1.0, 1.5]), np.array([1.0, 1.0]), np.array([1.0, 1.25]))
    assert m["t_eq"] == pytest.approx(0.25) and m["max_abs"] == pytest.approx(0.5)
    assert m["t_eq32"] == pytest.approx(0.25 / 2.25)


def test_kernelbench_draw_is_seeded():
    ns = km.load_substrate(os.path.join(ROOT, "examples", "substrates", "softmax_rows.py"))
    (_, a), (_, b), (_, c) = km.draw(ns, "kernelbench_randn", 1), km.draw(ns, "kernelbench_randn", 1), km.draw(ns, "large", 1)
    assert np.array_equal(a[0].numpy(), b[0].numpy())
    assert c[0].abs().max() > 10 * a[0].abs().max()


@pytest.mark.parametrize("path", SUBSTRATES, ids=[os.path.basename(p) for p in SUBSTRATES])
def test_every_substrate_has_a_plan_matching_its_reference(path):
    ns = km.load_substrate(path)
    model, inputs = km.draw(ns, "kernelbench_randn", 0)
    ref64, _ = km.references(model, inputs)
    tensors, plan, out = km.launch_plan(ns, model, inputs)
    assert tensors[out].numel() == ref64.size
    for launch in plan:
        threads = np.prod(launch["grid"]) * np.prod(launch["block"])
        assert 0 < threads <= 65536  # within the concrete interpreter's limit


def test_find_entry_matches_manglings():
    ptx = ".visible .entry _Z11gemm_kernelIfEvPKT_S2_PS0_iii(\n.visible .entry plain(\n"
    assert kg.find_entry(ptx, "gemm_kernel").startswith("_Z11gemm_kernel")
    assert kg.find_entry(ptx, "plain") == "plain"
    assert kg.find_entry(ptx, "gemm") is None


def test_missing_substrate_pieces_are_named(tmp_path):
    p = tmp_path / "bad.py"
    p.write_text("import torch\nclass Model(torch.nn.Module):\n    pass\n")
    with pytest.raises(ValueError, match="get_inputs"):
        km.load_substrate(str(p))
