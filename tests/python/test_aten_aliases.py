"""Aliases, overload variants and the CUDA-only overloads (compared with their CPU equivalents)."""
import numpy as np
import pytest
import torch

from test_aten_harness import rand, run_op, seeded

TOL = dict(rtol=1e-8, atol=1e-9)


def x34(rng, lo=-2.0, hi=2.0):
    return rand(rng, 3, 4, lo=lo, hi=hi)


UNARY_ALIASES = ["absolute", "negative", "positive", "sgn", "fix", "arctan", "asin", "acos", "atanh", "alias",
                 "detach", "lift_fresh", "lift_fresh_copy", "resolve_conj", "resolve_neg", "numpy_T", "zero",
                 "detach_copy", "alias_copy"]


@pytest.mark.parametrize("name", UNARY_ALIASES)
def test_unary_aliases(name):
    rng = seeded(name)
    lo, hi = (-0.9, 0.9) if name in ("asin", "acos", "atanh") else (-2.0, 2.0)
    run_op(f"aten.{name}.default", [x34(rng, lo, hi)], rng=rng)
    if name == "acos":
        run_op("aten.acosh.default", [x34(rng, 1.1, 3.0)], rng=rng)


@pytest.mark.parametrize("op,extra", [
    ("aten.multiply.Tensor", "t"), ("aten.multiply.Scalar", 2.5), ("aten.divide.Tensor", "t"),
    ("aten.divide.Scalar", -1.5), ("aten.true_divide.Tensor", "t"), ("aten.true_divide.Scalar", 3.0),
    ("aten.fmax.default", "t"), ("aten.fmin.default", "t"), ("aten.floor_divide.default", "t"),
    ("aten.floor_divide.Scalar", 0.7), ("aten.xlogy.Scalar_Other", 1.5), ("aten.clamp_min.Tensor", "t"),
    ("aten.clamp_max.Tensor", "t"), ("aten.clip.default", None), ("aten.float_power.Tensor_Scalar", 2),
])
def test_binary_aliases(op, extra):
    rng = seeded(op)
    x = x34(rng)
    other = x34(rng).sign() * (x34(rng, 0.5, 2)) if extra == "t" else extra
    if op == "aten.clip.default":
        run_op(op, [x, -0.5, 0.5], rng=rng)
    elif op == "aten.float_power.Tensor_Scalar":
        run_op(op, [x, 2], rng=rng)
    else:
        run_op(op, [x, other], rng=rng)
    if op == "aten.xlogy.Scalar_Other":
        run_op("aten.xlogy.Scalar_Self", [0.0, x34(rng, 0.1, 2)], rng=rng)
        run_op("aten.xlogy.Scalar_Self", [2.0, x34(rng, 0.1, 2)], rng=rng)


def test_mode_and_where_variants():
    rng = seeded("modes")
    x, y = x34(rng), x34(rng, 0.5, 2)
    for mode in ["trunc", "floor"]:
        run_op("aten.div.Scalar_mode", [x, 0.3], {"rounding_mode": mode}, rng=rng)
        run_op("aten.divide.Tensor_mode", [x, y], {"rounding_mode": mode}, rng=rng)
        run_op("aten.divide.Scalar_mode", [x, -0.7], {"rounding_mode": mode}, rng=rng)
    c = torch.from_numpy(rng.random((3, 4)) < 0.5)
    run_op("aten.where.ScalarSelf", [c, 1.5, x], rng=rng)
    run_op("aten.where.Scalar", [c, 1.5, -2.0], rng=rng)
    run_op("aten.masked_fill.Tensor", [x, c, torch.tensor(0.25, dtype=torch.float64)], rng=rng)
    run_op("aten.clip.Tensor", [x, y - 2, y], rng=rng)


def test_view_aliases():
    rng = seeded("views")
    x = rand(rng, 2, 3, 4)
    other = torch.zeros(6, 4, dtype=torch.float64)
    run_op("aten.view_as.default", [x.contiguous(), other], rng=rng)
    run_op("aten.reshape_as.default", [x, other], rng=rng)
    run_op("aten._reshape_alias.default", [x.contiguous(), [4, 6], [6, 1]], rng=rng)
    run_op("aten.view_copy.default", [x, [24]], rng=rng)
    run_op("aten._reshape_copy.default", [x, [4, 6]], rng=rng)
    run_op("aten.unflatten.int", [x, 2, [2, 2]], rng=rng)
    run_op("aten.squeeze.dims", [x.reshape(2, 1, 3, 1, 4), [1, 3]], rng=rng)
    run_op("aten.squeeze_copy.dim", [x.reshape(2, 1, 12), 1], rng=rng)
    run_op("aten.unsqueeze_copy.default", [x, 1], rng=rng)
    run_op("aten.swapaxes.default", [x, 0, 2], rng=rng)
    run_op("aten.swapdims.default", [x, 1, 2], rng=rng)
    s = rand(rng, 1, 3, 1)
    run_op("aten.expand_as.default", [s, x], rng=rng)
    run_op("aten.expand_copy.default", [s, [2, 3, 4]], rng=rng)
    run_op("aten.broadcast_to.default", [s, [2, 3, 4]], rng=rng)
    run_op("aten.unsafe_split_with_sizes.default", [x, [1, 3], 2], rng=rng)
    run_op("aten.pad.default", [x, [1, 2, 0, 1], "constant", 0.5], rng=rng)
    # _copy_from(self, dst) has no CPU kernel: compare with copy(dst, self)
    run_op("aten.copy.default", [torch.zeros(2, 3, 4, dtype=torch.float64), x], rng=rng, as_op="aten._copy_from.default",
           as_args=[x, torch.zeros(2, 3, 4, dtype=torch.float64)])
    run_op("aten.type_as.default", [x, torch.zeros(1, dtype=torch.float32)], rng=rng, rtol=1e-6)


def test_to_and_dropout_variants():
    rng = seeded("to")
    x = x34(rng, -5, 5)
    run_op("aten.to.dtype", [x, torch.int64], rng=rng)
    run_op("aten.to.dtype_layout", [x], {"dtype": torch.int32}, rng=rng)
    run_op("aten.to.device", [x, torch.device("cpu"), torch.float64], rng=rng)
    run_op("aten.to.other", [x, torch.zeros(1, dtype=torch.int16)], rng=rng)
    for op in ["feature_dropout", "alpha_dropout", "feature_alpha_dropout"]:
        run_op(f"aten.{op}.default", [rand(rng, 2, 3, 4), 0.5, False], rng=rng)


def test_factory_variants():
    rng = seeded("factory")
    x = x34(rng)
    run_op("aten.new_zeros.default", [x, [2, 5]], rng=rng)
    run_op("aten.new_ones.default", [x, [3]], rng=rng)
    run_op("aten.new_full.default", [x, [2, 2], 1.25], rng=rng)
    run_op("aten.eye.m", [3, 5], {"dtype": torch.float64}, rng=rng, n=15)
    run_op("aten.zero_.default", [x34(rng)], rng=rng)


def test_linalg_aliases():
    rng = seeded("linalg")
    a, b = rand(rng, 5), rand(rng, 5)
    run_op("aten.vdot.default", [a, b], rng=rng)
    run_op("aten.inner.default", [a, b], rng=rng)
    run_op("aten.ger.default", [a, rand(rng, 3)], rng=rng)


def test_norm_variants():
    rng = seeded("norms")
    x = rand(rng, 3, 4)
    run_op("aten.norm.ScalarOpt_dtype", [x, 2.0], {"dtype": torch.float64}, rng=rng, **TOL)
    run_op("aten.norm.ScalarOpt_dim_dtype", [x, 1.0, [1], True], {"dtype": torch.float64}, rng=rng, **TOL)
    b = torch.from_numpy(rng.random((3, 4, 2)) < 0.5)
    run_op("aten.all.dims", [b, [0, 2]], rng=rng)


def test_pool_variants():
    rng = seeded("pools")
    x = rand(rng, 2, 3, 6, 6)
    run_op("aten.max_pool2d.default", [x, [3, 3], [2, 2], [1, 1]], rng=rng)
    run_op("aten.max_pool3d.default", [rand(rng, 1, 2, 5, 5, 5), [2, 2, 2]], rng=rng)
    run_op("aten.adaptive_avg_pool2d.default", [x, [4, 3]], rng=rng)
    run_op("aten.adaptive_avg_pool3d.default", [rand(rng, 1, 2, 5, 4, 3), [2, 3, 2]], rng=rng)


def test_conv_variants():
    rng = seeded("conv_variants")
    x, w, b = rand(rng, 1, 2, 4, 5, 4), rand(rng, 2, 3, 2, 2, 2), rand(rng, 3)
    run_op("aten.conv_transpose3d.input", [x, w, b, [2, 1, 2], [1, 0, 0], [1, 0, 1]], rng=rng)
    args = [rand(rng, 2, 4, 6, 6), rand(rng, 6, 2, 3, 3), None, [1, 2], [1, 0], [2, 1], False, [0, 0], 2]
    run_op("aten.convolution.default", args, rng=rng, as_op="aten._convolution.default",
           as_args=args + [False, False, True, True])
    run_op("aten.convolution.default", args, rng=rng, as_op="aten._convolution.deprecated",
           as_args=args + [False, False, True])
    run_op("aten.convolution.default", args, rng=rng, as_op="aten.convolution_overrideable.default")


def test_loss_variants():
    rng = seeded("loss_variants")
    x = rand(rng, 4, 5)
    t = torch.from_numpy(rng.integers(0, 5, size=4))
    w = rand(rng, 5, lo=0.1, hi=2)
    for red in [0, 1, 2]:
        run_op("aten.nll_loss_forward.default", [x, t, w, red, 2], rng=rng, outputs=[0], **TOL,
               as_op="aten.nll_loss.default")
        run_op("aten.nll_loss_forward.default", [x, t, w, red, -100], rng=rng, outputs=[0], **TOL,
               as_op="aten.nll_loss_nd.default")
    x2, t2 = rand(rng, 2, 5, 3, 3), torch.from_numpy(rng.integers(0, 5, size=(2, 3, 3)))
    run_op("aten.nll_loss2d_forward.default", [x2, t2, None, 1, -100], rng=rng, outputs=[0], **TOL,
           as_op="aten.nll_loss2d.default")


def test_rms_norm_fused_and_cuda_batch_norms():
    rng = seeded("cuda_bn")
    x, w, b, rm, rv = rand(rng, 3, 4, 5), rand(rng, 4), rand(rng, 4), rand(rng, 4), rand(rng, 4, lo=0.5, hi=2)
    for training in [True, False]:
        for name in ["cudnn_batch_norm", "miopen_batch_norm"]:
            run_op("aten.native_batch_norm.default", [x, w, b, rm.clone(), rv.clone(), training, 0.1, 1e-5], rng=rng,
                   **TOL, as_op=f"aten.{name}.default")
    run_op("aten.rms_norm.default", [x, [5], rand(rng, 5), 1e-6], rng=rng, **TOL, as_op="aten._fused_rms_norm.default")


@pytest.mark.parametrize("causal", [False, True])
def test_cuda_attention_overloads(causal):
    rng = seeded("cuda_sdpa", causal)
    q, k, v = (rand(rng, 2, 3, 4, 8, noncontig=False) for _ in range(3))
    ref = "aten._scaled_dot_product_flash_attention_for_cpu.default"
    base = [q, k, v, 0.0, causal]
    run_op(ref, base, rng=rng, outputs=[0, 1], **TOL,
           as_op="aten._scaled_dot_product_flash_attention.default", as_args=base + [False], as_kwargs={})
    for name in ["_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention"]:
        extra = [False] if "cudnn" in name else []
        run_op(ref, base, rng=rng, outputs=[0], **TOL, as_op=f"aten.{name}.default",
               as_args=[q, k, v, None, True, 0.0, causal] + extra, as_kwargs={})
