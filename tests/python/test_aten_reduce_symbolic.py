"""Reductions over more than OpCall::reduce_above (1024) elements are one ir Reduce node: each equation
checked against PyTorch at random locations (the Reduce evaluated point by point), and its size
checked to stay small (not one node per term)."""
import numpy as np
import pytest

from test_aten_harness import expr_of, rand, run_op, seeded

K = 3000  # above the threshold: symbolic


def small_reduce(op, args, kwargs=None, location=None):
    text, size = expr_of(op, args, kwargs or {}, 0, location)
    assert "k0<" in text and "_{k" in text, text
    assert size < 200, (size, text)
    return text


@pytest.mark.parametrize("op,build", [
    ("aten.mm.default", lambda r: [rand(r, 3, K), rand(r, K, 4)]),
    ("aten.addmm.default", lambda r: [rand(r, 4), rand(r, 3, K), rand(r, K, 4)]),
    ("aten.bmm.default", lambda r: [rand(r, 2, 3, K), rand(r, 2, K, 4)]),
    ("aten.linear.default", lambda r: [rand(r, 3, K), rand(r, 5, K), rand(r, 5)]),
    ("aten.matmul.default", lambda r: [rand(r, 2, 3, K), rand(r, K, 4)]),
])
def test_matrix_products(op, build):
    rng = seeded(op, "sym")
    args = build(rng)
    run_op(op, args, rng=rng, n=6, rtol=1e-9, atol=1e-9)
    text = small_reduce(op, args)
    assert "Σ" in text


def test_matrix_product_of_a_transposed_view():
    rng = seeded("mm-t")
    w = rand(rng, 4, K)
    args = [rand(rng, 3, K), w.t()]
    run_op("aten.mm.default", args, rng=rng)
    small_reduce("aten.mm.default", args)


@pytest.mark.parametrize("op,extra,kwargs,sym", [
    ("aten.sum.dim_IntList", [[1]], {}, "Σ"),
    ("aten.sum.dim_IntList", [[1], True], {}, "Σ"),
    ("aten.sum.default", [], {}, "Σ"),
    ("aten.mean.dim", [[1]], {}, "Σ"),
    ("aten.amax.default", [[1]], {}, "max"),
    ("aten.amin.default", [[1], True], {}, "min"),
    ("aten.max.default", [], {}, "max"),
    ("aten.logsumexp.default", [[1]], {}, "Σ"),
    ("aten.var.correction", [[1]], {"correction": 1}, "Σ"),
    ("aten.var.correction", [[1]], {"correction": 0}, "Σ"),
    ("aten._softmax.default", [1, False], {}, "Σ"),
    ("aten._log_softmax.default", [1, False], {}, "Σ"),
])
def test_reductions(op, extra, kwargs, sym):
    rng = seeded(op, extra, kwargs)
    x = rand(rng, 2, 1500, lo=-2.0, hi=2.0) if op != "aten.sum.default" and op != "aten.max.default" \
        else rand(rng, 3, 700)
    run_op(op, [x, *extra], kwargs, rng=rng, n=4, rtol=1e-8, atol=1e-8)
    assert sym in small_reduce(op, [x, *extra], kwargs)


def test_two_dim_reduction_is_one_box():
    rng = seeded("2d")
    x = rand(rng, 2, 40, 50)
    run_op("aten.sum.dim_IntList", [x, [1, 2]], rng=rng, n=2)
    text = small_reduce("aten.sum.dim_IntList", [x, [1, 2]])
    assert "k1<40, k0<50" in text, text


def test_below_the_threshold_stays_expanded():
    rng = seeded("small")
    x = rand(rng, 2, 100)
    text, size = expr_of("aten.sum.dim_IntList", [x, [1]], {}, 0, None)
    assert "_{k" not in text and size > 100


def test_layer_norm_statistics():
    rng = seeded("ln")
    x, w, b = rand(rng, 3, 2000), rand(rng, 2000), rand(rng, 2000)
    args = [x, [2000], w, b, 1e-5]
    run_op("aten.native_layer_norm.default", args, rng=rng, n=4, rtol=1e-8, atol=1e-8)
    small_reduce("aten.native_layer_norm.default", args)


def test_group_norm_statistics():
    rng = seeded("gn")
    # contiguous weight and bias: PyTorch's CPU kernel reads them as if they were
    x, w, b = rand(rng, 2, 8, 20, 30), rand(rng, 8).contiguous(), rand(rng, 8).contiguous()
    args = [x, w, b, 2, 8, 600, 2, 1e-5]  # groups of 4 channels x 600 = 2400 elements
    run_op("aten.native_group_norm.default", args, rng=rng, n=4, rtol=1e-8, atol=1e-8)
    assert "k2<" in small_reduce("aten.native_group_norm.default", args)


def test_batch_norm_statistics():
    rng = seeded("bn")
    x = rand(rng, 4, 3, 20, 20)
    args = [x, rand(rng, 3), rand(rng, 3), None, None, True, 0.1, 1e-5]
    run_op("aten.native_batch_norm.default", args, rng=rng, n=4, outputs=[0, 1, 2], rtol=1e-8, atol=1e-8)
    small_reduce("aten.native_batch_norm.default", args)
