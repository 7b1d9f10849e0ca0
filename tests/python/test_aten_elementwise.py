"""Pointwise ATen ops: equations evaluated by dirigo == PyTorch (float64, CPU), random broadcast shapes and layouts."""
import numpy as np
import pytest
import torch

from test_aten_harness import broadcastable, rand, rand_shape, run_op, seeded

N_SHAPES = 6


def operands(rng, lo=-2.0, hi=2.0):
    shape = rand_shape(rng)
    a = rand(rng, *broadcastable(rng, shape), lo=lo, hi=hi)
    b = rand(rng, *shape, lo=lo, hi=hi)
    if rng.random() < 0.5:
        a, b = b, a
    return a, b


@pytest.mark.parametrize("op,kwargs", [
    ("aten.add.Tensor", {}), ("aten.add.Tensor", {"alpha": 2.5}), ("aten.sub.Tensor", {}),
    ("aten.sub.Tensor", {"alpha": -0.5}), ("aten.rsub.Tensor", {"alpha": 3}), ("aten.mul.Tensor", {}),
    ("aten.div.Tensor", {}), ("aten.div.Tensor_mode", {"rounding_mode": "trunc"}),
    ("aten.div.Tensor_mode", {"rounding_mode": "floor"}), ("aten.maximum.default", {}),
    ("aten.minimum.default", {}), ("aten.remainder.Tensor", {}), ("aten.fmod.Tensor", {}),
    ("aten.xlogy.Tensor", {}), ("aten.max.other", {}), ("aten.min.other", {}),
])
def test_binary_broadcast(op, kwargs):
    rng = seeded(op, kwargs)
    for _ in range(N_SHAPES):
        a, b = operands(rng)
        if "div" in op or op in ("aten.remainder.Tensor", "aten.fmod.Tensor", "aten.xlogy.Tensor"):
            b = b.sign() * (b.abs() + 0.5)  # keep divisors away from 0
        run_op(op, [a, b], kwargs, rng=rng)


def test_pow_tensor_tensor():
    rng = np.random.default_rng(3)
    for _ in range(N_SHAPES):
        a, b = operands(rng)
        run_op("aten.pow.Tensor_Tensor", [a.abs() + 0.1, b], rng=rng)


@pytest.mark.parametrize("exponent", [2, 3, 0.5, -1, -2, 1.7, 0, -0.5, 4.0])
def test_pow_scalar(exponent):
    rng = np.random.default_rng(4)
    for _ in range(3):
        x = rand(rng, *rand_shape(rng), lo=0.2, hi=3.0)
        run_op("aten.pow.Tensor_Scalar", [x, exponent], rng=rng)
    run_op("aten.pow.Scalar", [2.5, rand(rng, 3, 4)], rng=rng)


@pytest.mark.parametrize("op,scalar", [
    ("aten.add.Scalar", 1.5), ("aten.sub.Scalar", -3), ("aten.mul.Scalar", 0.25), ("aten.div.Scalar", 7.0),
    ("aten.rsub.Scalar", 2.0), ("aten.remainder.Scalar", 0.7), ("aten.fmod.Scalar", -0.7),
    ("aten.mul.Tensor", 3.0), ("aten.add.Tensor", 2),
])
def test_scalar_operand(op, scalar):
    rng = np.random.default_rng(5)
    for _ in range(3):
        run_op(op, [rand(rng, *rand_shape(rng)), scalar], rng=rng)


UNARY = ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "reciprocal", "abs", "neg",
         "sign", "sigmoid", "tanh", "erf", "erfc", "floor", "ceil", "round", "trunc", "square", "sin", "cos", "tan",
         "atan", "sinh", "cosh", "asinh"]
POSITIVE = {"log", "log2", "log10", "sqrt", "rsqrt", "reciprocal"}


@pytest.mark.parametrize("name", UNARY)
def test_unary(name):
    rng = np.random.default_rng(6)
    for _ in range(3):
        lo = 0.1 if name in POSITIVE else -3.0
        x = rand(rng, *rand_shape(rng), lo=lo, hi=3.0)
        if name == "round":  # include exact halves: round half to even
            x = torch.round(x * 2) / 2
        run_op(f"aten.{name}.default", [x], rng=rng)


def test_round_decimals():
    rng = np.random.default_rng(7)
    run_op("aten.round.decimals", [rand(rng, 4, 5)], {"decimals": 2}, rng=rng)


@pytest.mark.parametrize("op,args", [
    ("aten.clamp.default", (-0.5, 0.7)), ("aten.clamp.default", (None, 0.3)), ("aten.clamp.default", (0.2, None)),
    ("aten.clamp.default", (0.5, -0.5)),  # min > max: everything becomes max
    ("aten.clamp_min.default", (0.1,)), ("aten.clamp_max.default", (-0.1,)),
])
def test_clamp(op, args):
    rng = np.random.default_rng(8)
    for _ in range(3):
        run_op(op, [rand(rng, *rand_shape(rng)), *args], rng=rng)


def test_clamp_tensor():
    rng = np.random.default_rng(9)
    for _ in range(N_SHAPES):
        shape = rand_shape(rng)
        x, lo, hi = rand(rng, *shape), rand(rng, *broadcastable(rng, shape)), rand(rng, *broadcastable(rng, shape))
        run_op("aten.clamp.Tensor", [x, lo, hi], rng=rng)


def test_where_and_masked_fill():
    rng = np.random.default_rng(10)
    for _ in range(N_SHAPES):
        a, b = operands(rng)
        out_shape = torch.broadcast_shapes(a.shape, b.shape)
        cond = torch.from_numpy(np.asarray(rng.random(broadcastable(rng, out_shape)) < 0.5))
        run_op("aten.where.self", [cond, a, b], rng=rng)
        run_op("aten.where.ScalarOther", [cond, a, -1.5], rng=rng)
        mask = torch.from_numpy(np.asarray(rng.random(broadcastable(rng, b.shape)) < 0.5))
        run_op("aten.masked_fill.Scalar", [b, mask, 0.25], rng=rng)


@pytest.mark.parametrize("name", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_comparisons_are_bool(name):
    rng = np.random.default_rng(11)
    for _ in range(3):
        a, b = operands(rng)
        a = torch.round(a)  # ties happen
        b = torch.round(b)
        res = run_op(f"aten.{name}.Tensor", [a, b], rng=rng)
        assert res[0].dtype == torch.bool
        run_op(f"aten.{name}.Scalar", [a, 0.0], rng=rng)


def test_logical():
    rng = np.random.default_rng(12)
    a = torch.from_numpy(rng.random((4, 5)) < 0.5)
    b = torch.from_numpy(rng.integers(-1, 2, size=(5,)).astype(np.float64))
    for op in ["logical_and", "logical_or", "logical_xor"]:
        run_op(f"aten.{op}.default", [a, b], rng=rng, n=20)
    run_op("aten.logical_not.default", [a], rng=rng, n=20)


def test_integer_arithmetic_wraps_like_int64():
    rng = np.random.default_rng(13)
    big = torch.tensor([2**62, -(2**62), 5, -7], dtype=torch.int64)
    run_op("aten.add.Tensor", [big, big], n=4)  # 2**63 wraps to -2**63
    a = torch.from_numpy(rng.integers(-100, 100, size=(3, 4)))
    b = torch.from_numpy(rng.integers(-100, 100, size=(4,)))
    for op, kw in [("aten.add.Tensor", {"alpha": 3}), ("aten.sub.Tensor", {}), ("aten.mul.Tensor", {}),
                   ("aten.rsub.Tensor", {"alpha": 2})]:
        res = run_op(op, [a, b], kw, rng=rng, n=12)
        assert res[0].dtype == torch.int64
    run_op("aten.neg.default", [a], rng=rng)
    run_op("aten.add.Tensor", [a.to(torch.int32), 7], rng=rng)
    # mixed int/float promotes to float
    run_op("aten.mul.Tensor", [a, rand(rng, 3, 4)], rng=rng)


def test_promotion_uint8_and_bool_to_float():
    rng = np.random.default_rng(14)
    u = torch.from_numpy(rng.integers(0, 256, size=(4, 4)).astype(np.uint8))
    run_op("aten.mul.Tensor", [u, rand(rng, 4, 4)], rng=rng, n=16)  # 200 must read as 200, not -56
    m = torch.from_numpy(rng.random((4, 4)) < 0.5)
    run_op("aten.add.Tensor", [m, rand(rng, 4, 4)], rng=rng, n=16)


def test_addcmul_addcdiv_lerp():
    rng = np.random.default_rng(15)
    for _ in range(3):
        shape = rand_shape(rng)
        x, t1, t2 = rand(rng, *shape), rand(rng, *broadcastable(rng, shape)), rand(rng, *shape, lo=0.5, hi=2)
        run_op("aten.addcmul.default", [x, t1, t2], {"value": 0.3}, rng=rng)
        run_op("aten.addcdiv.default", [x, t1, t2], {"value": -2}, rng=rng)
        run_op("aten.lerp.Scalar", [x, t2, 0.3], rng=rng)
        run_op("aten.lerp.Tensor", [x, t2, t1], rng=rng)


def test_inplace_overload():
    rng = np.random.default_rng(16)
    x, y = rand(rng, 3, 4, noncontig=False), rand(rng, 4)
    run_op("aten.add_.Tensor", [x, y], {"alpha": 2}, rng=rng)
    x = rand(rng, 3, 4, noncontig=False)
    run_op("aten.relu_.default", [x], rng=rng)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("dtype", [torch.bool, torch.int32, torch.int64, torch.uint8])
def test_bitwise_ops(seed, dtype):
    """~mask (Mamba2's segsum: masked_fill(~tril(ones(T, T, dtype=bool)), -inf)) and &, |, ^ on bool and ints."""
    rng = seeded("bitwise", seed, str(dtype))
    shape = rand_shape(rng)
    if dtype == torch.bool:
        x = torch.from_numpy(rng.random(shape) < 0.5)
        y = torch.from_numpy(rng.random(broadcastable(rng, shape)) < 0.5)
        scalar = bool(rng.integers(0, 2))
    else:
        lo, hi = (0, 255) if dtype == torch.uint8 else (-1000, 1000)
        x = torch.from_numpy(rng.integers(lo, hi, size=shape)).to(dtype)
        y = torch.from_numpy(rng.integers(lo, hi, size=broadcastable(rng, shape))).to(dtype)
        scalar = int(rng.integers(0, 100))
    run_op("aten.bitwise_not.default", [x], rng=rng, n=10)
    for op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        run_op(f"aten.{op}.Tensor", [x, y], rng=rng, n=10)
        run_op(f"aten.{op}.Scalar", [x, scalar], rng=rng, n=10)


def test_masked_fill_with_minus_inf_is_unsupported_not_wrong():
    x = torch.randn(3, 3, dtype=torch.float64)
    mask = ~torch.tril(torch.ones(3, 3, dtype=torch.bool))
    with pytest.raises(NotImplementedError, match="non-finite constant -inf"):
        run_op("aten.masked_fill.Scalar", [x, mask, float("-inf")])


@pytest.mark.parametrize("op", ["eq", "ne", "lt", "le", "gt", "ge"])
@pytest.mark.parametrize("c", [float("inf"), float("-inf"), float("nan")])
def test_compare_with_non_finite_scalar(op, c):
    """Core ATen's logsumexp masks an infinite max with `abs(amax) == inf`: against a non-finite scalar a
    finite element's comparison is a constant (the elements are reals), the same as PyTorch's."""
    rng = np.random.default_rng(7)
    x = rand(rng, 3, 4)
    run_op(f"aten.{op}.Scalar", [x, c], rng=rng, n=8)


def test_compare_with_finite_scalar_still_reads_the_element():
    rng = np.random.default_rng(8)
    x = rand(rng, 3, 4)
    run_op("aten.lt.Scalar", [x, 0.25], rng=rng, n=8)
