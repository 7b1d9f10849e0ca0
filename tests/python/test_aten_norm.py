"""Normalizations in training (batch statistics) and eval (running statistics), all outputs."""
import numpy as np
import pytest
import torch

from test_aten_harness import rand, run_op, seeded

TOL = dict(rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
def test_native_batch_norm(training, affine):
    rng = seeded("bn", training, affine)
    for spatial in [(), (5,), (3, 4), (2, 3, 2)]:
        c = int(rng.integers(1, 5))
        x = rand(rng, 3, c, *spatial)
        w, b = (rand(rng, c), rand(rng, c)) if affine else (None, None)
        rm, rv = rand(rng, c), rand(rng, c, lo=0.5, hi=2.0)
        eps = float(rng.choice([1e-5, 1e-3, 0.1]))
        run_op("aten.native_batch_norm.default", [x, w, b, rm, rv, training, 0.1, eps], rng=rng, **TOL)
        run_op("aten._native_batch_norm_legit.default", [x, w, b, rm.clone(), rv.clone(), training, 0.1, eps],
               rng=rng, **TOL)
        if not training:
            run_op("aten._native_batch_norm_legit_no_training.default", [x, w, b, rm, rv, 0.1, eps], rng=rng, **TOL)
            run_op("aten.batch_norm.default", [x, w, b, rm, rv, False, 0.1, eps, False], rng=rng, **TOL)


def test_batch_norm_no_stats_and_instance_norm():
    rng = seeded("bn_nostats")
    x = rand(rng, 2, 3, 4, 4)
    run_op("aten._native_batch_norm_legit.no_stats", [x, rand(rng, 3), rand(rng, 3), True, 0.1, 1e-5], rng=rng, **TOL)
    run_op("aten.instance_norm.default", [x, rand(rng, 3), None, None, None, True, 0.1, 1e-5, False], rng=rng, **TOL)
    # InstanceNorm as PyTorch dispatches it: a view with N*C channels through batch norm
    xv = x.reshape(1, 6, 4, 4)
    run_op("aten.native_batch_norm.default", [xv, None, None, None, None, True, 0.1, 1e-5], rng=rng, **TOL)


def test_native_group_norm():
    rng = seeded("gn")
    for _ in range(6):
        g = int(rng.integers(1, 4))
        c = g * int(rng.integers(1, 3))
        n = int(rng.integers(1, 3))
        spatial = tuple(int(s) for s in rng.integers(1, 4, size=int(rng.integers(0, 3))))
        x = rand(rng, n, c, *spatial)
        hw = int(np.prod(spatial)) if spatial else 1
        w, b = (rand(rng, c), rand(rng, c)) if rng.random() < 0.7 else (None, None)
        # the native kernel reads weight/bias as contiguous buffers (group_norm makes them so)
        wc, bc = (w.contiguous(), b.contiguous()) if w is not None else (None, None)
        run_op("aten.native_group_norm.default", [x.contiguous(), wc, bc, n, c, hw, g, 1e-5], rng=rng, **TOL)
        run_op("aten.group_norm.default", [x, g, w, b, 1e-3], rng=rng, **TOL)


def test_native_layer_norm():
    rng = seeded("ln")
    for _ in range(6):
        shape = tuple(int(s) for s in rng.integers(1, 5, size=int(rng.integers(1, 5))))
        k = int(rng.integers(1, len(shape) + 1))
        norm = list(shape[-k:])
        x = rand(rng, *shape)
        w, b = (rand(rng, *norm), rand(rng, *norm)) if rng.random() < 0.7 else (None, None)
        run_op("aten.native_layer_norm.default", [x, norm, w, b, 1e-5], rng=rng, **TOL)
        run_op("aten.layer_norm.default", [x, norm, w, b, 1e-4], rng=rng, **TOL)


def test_rms_norm():
    rng = seeded("rms")
    x = rand(rng, 3, 4, 5)
    run_op("aten.rms_norm.default", [x, [5], rand(rng, 5), 1e-6], rng=rng, **TOL)
    run_op("aten.rms_norm.default", [x, [4, 5], None, None], rng=rng, **TOL)
