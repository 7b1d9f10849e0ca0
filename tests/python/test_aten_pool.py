"""Pooling: max (with indices), average (ceil_mode, count_include_pad, divisor_override), adaptive."""
import numpy as np
import pytest
import torch

from test_aten_harness import rand, run_op, seeded


def random_window(rng, nsp):
    k = [int(rng.integers(1, 4)) for _ in range(nsp)]
    s = [int(rng.integers(1, 4)) for _ in range(nsp)]
    p = [int(rng.integers(0, k[d] // 2 + 1)) for d in range(nsp)]
    return k, s, p


@pytest.mark.parametrize("nsp", [1, 2, 3])
def test_max_pool(nsp):
    rng = seeded("maxpool", nsp)
    for _ in range(12):
        k, s, p = random_window(rng, nsp)
        d = [int(rng.integers(1, 3)) for _ in range(nsp)]
        size = [int(rng.integers(4, 8 if nsp < 3 else 6)) for _ in range(nsp)]
        lead = [2, 3] if rng.random() < 0.7 else [3]
        x = torch.round(rand(rng, *lead, *size) * 3)  # ties: first position wins in indices
        ceil = bool(rng.random() < 0.5)
        try:
            ref = torch.ops.aten.max_pool2d_with_indices if nsp == 2 else None
            if nsp == 1:
                torch.ops.aten.max_pool1d(x, k, s, p, d, ceil)
            elif nsp == 2:
                ref(x, k, s, p, d, ceil)
            else:
                torch.ops.aten.max_pool3d_with_indices(x, k, s, p, d, ceil)
        except RuntimeError:
            continue
        if nsp == 1:
            run_op("aten.max_pool1d.default", [x, k, s, p, d, ceil], rng=rng, n=8)
            run_op("aten.max_pool1d_with_indices.default", [x, k, s, p, d, ceil], rng=rng, n=8)
        else:
            run_op(f"aten.max_pool{nsp}d_with_indices.default", [x, k, s, p, d, ceil], rng=rng, n=8)


@pytest.mark.parametrize("nsp", [1, 2, 3])
def test_avg_pool(nsp):
    rng = seeded("avgpool", nsp)
    for _ in range(14):
        k, s, p = random_window(rng, nsp)
        size = [int(rng.integers(3, 8 if nsp < 3 else 6)) for _ in range(nsp)]
        x = rand(rng, 2, 3, *size)
        ceil, inc = bool(rng.random() < 0.5), bool(rng.random() < 0.5)
        args = [x, k, s, p, ceil, inc]
        if nsp > 1 and rng.random() < 0.3:
            args.append(int(rng.integers(1, 7)))
        run_op(f"aten.avg_pool{nsp}d.default", args, rng=rng, n=8)


@pytest.mark.parametrize("nsp", [1, 2, 3])
def test_adaptive(nsp):
    rng = seeded("adaptive", nsp)
    for _ in range(6):
        size = [int(rng.integers(1, 9)) for _ in range(nsp)]
        out = [int(rng.integers(1, 6)) for _ in range(nsp)]
        x = torch.round(rand(rng, 2, 2, *size) * 3)
        if nsp == 1:
            run_op("aten.adaptive_avg_pool1d.default", [x, out], rng=rng, n=8)
            run_op("aten.adaptive_max_pool1d.default", [x, out], rng=rng, n=8)
        else:
            run_op(f"aten._adaptive_avg_pool{nsp}d.default", [x, out], rng=rng, n=8)
            run_op(f"aten.adaptive_max_pool{nsp}d.default", [x, out], rng=rng, n=8)
