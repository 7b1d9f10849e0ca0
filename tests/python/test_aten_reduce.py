"""Reductions, scans and softmax over random dims and keepdim, on non-contiguous inputs."""
import numpy as np
import pytest
import torch

from test_aten_harness import rand, rand_shape, run_op, seeded

TOL = dict(rtol=1e-8, atol=1e-9)


def random_dims(rng, rank):
    k = int(rng.integers(1, rank + 1))
    dims = [int(d) for d in rng.choice(rank, size=k, replace=False)]
    return [d - rank if rng.random() < 0.3 else d for d in dims]


@pytest.mark.parametrize("op", ["sum.dim_IntList", "mean.dim", "amax.default", "amin.default", "logsumexp.default"])
def test_dim_list_reductions(op):
    rng = seeded(op)
    for _ in range(8):
        shape = rand_shape(rng)
        run_op(f"aten.{op}", [rand(rng, *shape), random_dims(rng, len(shape)), bool(rng.random() < 0.5)], rng=rng, **TOL)


@pytest.mark.parametrize("op", ["sum.default", "mean.default", "prod.default", "max.default", "min.default"])
def test_full_reductions(op):
    rng = seeded(op)
    for _ in range(4):
        run_op(f"aten.{op}", [rand(rng, *rand_shape(rng, max_dim=4), lo=0.5, hi=1.5)], rng=rng, **TOL)


@pytest.mark.parametrize("op", ["max.dim", "min.dim", "prod.dim_int", "argmax.default", "argmin.default",
                                "cumsum.default", "cumprod.default", "_softmax.default", "_log_softmax.default",
                                "softmax.int", "log_softmax.int"])
def test_single_dim(op):
    rng = seeded(op)
    for _ in range(6):
        shape = rand_shape(rng)
        x = rand(rng, *shape, lo=0.5, hi=1.5) if "prod" in op else rand(rng, *shape)
        if op.startswith(("max", "min", "arg")):
            x = torch.round(x * 2)  # ties: the first position wins
        d = int(rng.integers(-len(shape), len(shape)))
        args = [x, d]
        if op.startswith("_"):
            args.append(False)
        elif "dim" in op or op.startswith("arg"):
            args.append(bool(rng.random() < 0.5))
        run_op(f"aten.{op}", args, rng=rng, n=8, **TOL)


def test_argmax_without_dim_is_flat():
    rng = seeded("argmax_flat")
    for _ in range(4):
        x = torch.round(rand(rng, *rand_shape(rng)) * 2)
        run_op("aten.argmax.default", [x], rng=rng)
        run_op("aten.argmin.default", [x], rng=rng)


@pytest.mark.parametrize("fn", ["var", "std"])
def test_var_std(fn):
    rng = seeded(fn)
    for _ in range(6):
        shape = rand_shape(rng, max_dim=4)
        x = rand(rng, *shape)
        dims = random_dims(rng, len(shape))
        corr = int(rng.integers(0, 3))
        if np.prod([shape[d] for d in dims]) <= corr:
            corr = 0
        run_op(f"aten.{fn}.correction", [x, dims], {"correction": corr, "keepdim": bool(rng.random() < 0.5)},
               rng=rng, **TOL)
        run_op(f"aten.{fn}.dim", [x, dims, bool(corr != 0) if corr <= 1 else True, False], rng=rng, **TOL)
    run_op(f"aten.{fn}.default", [rand(rng, 3, 4)], rng=rng, **TOL)
    run_op(f"aten.{fn}_mean.correction", [rand(rng, 3, 4), [1]], {"correction": 0}, rng=rng, **TOL)


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, 0.5, float("inf"), float("-inf"), 0.0])
def test_norms(p):
    rng = seeded("norm", p)
    for _ in range(4):
        shape = rand_shape(rng)
        x = torch.round(rand(rng, *shape) * 2) / 2  # zeros occur (p=0 counts them)
        dims = random_dims(rng, len(shape))
        run_op("aten.linalg_vector_norm.default", [x, p, dims, bool(rng.random() < 0.5)], rng=rng, **TOL)
        run_op("aten.norm.ScalarOpt_dim", [x, p, dims, bool(rng.random() < 0.5)], rng=rng, **TOL)
    run_op("aten.norm.Scalar", [rand(rng, 3, 4), p], rng=rng, **TOL)


def test_any_all():
    rng = seeded("anyall")
    x = torch.from_numpy((rng.random((3, 4, 2)) < 0.3).astype(np.float64))
    for op, args in [("any.dim", [1, True]), ("all.dim", [2, False]), ("any.default", []), ("all.default", []),
                     ("any.dims", [[0, 2], False])]:
        run_op(f"aten.{op}", [x, *args], rng=rng, n=10)
