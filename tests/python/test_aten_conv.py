"""Convolutions over the parameter space: 1/2/3-D, stride, padding, dilation, groups, bias, transposed."""
import numpy as np
import pytest
import torch

from test_aten_harness import rand, run_op, seeded


def random_conv(rng, nsp, transposed):
    groups = int(rng.choice([1, 1, 2, 3]))
    cin = groups * int(rng.integers(1, 3))
    cout = groups * int(rng.integers(1, 3))
    k = [int(rng.integers(1, 4)) for _ in range(nsp)]
    stride = [int(rng.integers(1, 4)) for _ in range(nsp)]
    dilation = [int(rng.integers(1, 3)) for _ in range(nsp)]
    padding = [int(rng.integers(0, 3)) for _ in range(nsp)]
    size = [int(rng.integers(3, 8 if nsp < 3 else 5)) for _ in range(nsp)]
    out_pad = [int(rng.integers(0, max(stride[d], dilation[d]))) for d in range(nsp)] if transposed else [0] * nsp
    out_pad = [min(p, max(stride[d], dilation[d]) - 1) for d, p in enumerate(out_pad)]
    if not transposed:  # the kernel must fit the padded input
        size = [max(size[d], dilation[d] * (k[d] - 1) + 1 - 2 * padding[d]) for d in range(nsp)]
    n = int(rng.integers(1, 3))
    x = rand(rng, n, cin, *size)
    w = rand(rng, *((cin, cout // groups) if transposed else (cout, cin // groups)), *k)
    b = rand(rng, cout) if rng.random() < 0.7 else None
    return x, w, b, stride, padding, dilation, out_pad, groups


@pytest.mark.parametrize("nsp", [1, 2, 3])
@pytest.mark.parametrize("transposed", [False, True])
def test_convolution(nsp, transposed):
    rng = seeded("conv", nsp, transposed)
    for _ in range(14 if nsp < 3 else 8):
        x, w, b, stride, padding, dilation, out_pad, groups = random_conv(rng, nsp, transposed)
        try:
            torch.ops.aten.convolution(x, w, b, stride, padding, dilation, transposed, out_pad, groups)
        except RuntimeError:
            continue  # an invalid combination (output would be empty)
        run_op("aten.convolution.default", [x, w, b, stride, padding, dilation, transposed, out_pad, groups],
               rng=rng, n=8)


@pytest.mark.parametrize("nsp", [1, 2, 3])
def test_conv_nd_and_string_padding(nsp):
    rng = seeded("conv_nd", nsp)
    for padding in ["same", "valid", [1] * nsp]:
        k = [int(rng.integers(1, 5)) for _ in range(nsp)]
        x = rand(rng, 2, 4, *([9] * nsp))
        w = rand(rng, 6, 2, *k)
        stride = [1] * nsp if padding == "same" else [2] * nsp
        run_op(f"aten.conv{nsp}d.padding" if isinstance(padding, str) else f"aten.conv{nsp}d.default",
               [x, w, rand(rng, 6), stride, padding, [2] * nsp, 2], rng=rng, n=8)


def test_conv_transpose_nd():
    rng = seeded("conv_transpose_nd")
    x, w = rand(rng, 1, 4, 5, 5), rand(rng, 4, 3, 3, 2)
    run_op("aten.conv_transpose2d.input", [x, w, rand(rng, 6), [2, 3], [1, 0], [1, 2], 2, [1, 1]], rng=rng, n=10)
    x, w = rand(rng, 2, 2, 7), rand(rng, 2, 3, 4)
    run_op("aten.conv_transpose1d.default", [x, w, None, [3], [1], [2]], rng=rng, n=10)


def test_unbatched_conv2d():
    rng = seeded("unbatched")
    run_op("aten.conv2d.default", [rand(rng, 3, 6, 5), rand(rng, 4, 3, 2, 2), None, [1, 1], [1, 1]], rng=rng)
