"""Losses with their reductions, class-index targets (data-dependent loads) and probability targets."""
import numpy as np
import pytest
import torch

from test_aten_harness import rand, rand_shape, run_op, seeded

TOL = dict(rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_pointwise_losses(reduction):
    rng = seeded("pointwise", reduction)
    for _ in range(3):
        shape = rand_shape(rng)
        x, y = rand(rng, *shape), rand(rng, *shape)
        run_op("aten.mse_loss.default", [x, y, reduction], rng=rng, **TOL)
        run_op("aten.l1_loss.default", [x, y, reduction], rng=rng, **TOL)
        run_op("aten.smooth_l1_loss.default", [x, y, reduction, float(rng.choice([1.0, 0.5, 0.0]))], rng=rng, **TOL)
        run_op("aten.huber_loss.default", [x, y, reduction, float(rng.choice([1.0, 0.3]))], rng=rng, **TOL)
        run_op("aten.soft_margin_loss.default", [x, y.sign(), reduction], rng=rng, **TOL)
        p = torch.sigmoid(x)
        t = torch.sigmoid(y)
        run_op("aten.kl_div.default", [torch.log(p), t, reduction], {"log_target": False}, rng=rng, **TOL)
        run_op("aten.kl_div.default", [torch.log(p), torch.log(t), reduction], {"log_target": True}, rng=rng, **TOL)
        w = rand(rng, *shape, lo=0.1, hi=2)
        run_op("aten.binary_cross_entropy.default", [p, t, w if rng.random() < 0.5 else None, reduction], rng=rng, **TOL)
        pw = rand(rng, shape[-1], lo=0.1, hi=3)
        run_op("aten.binary_cross_entropy_with_logits.default", [x, t, None, pw, reduction], rng=rng, **TOL)
        run_op("aten.binary_cross_entropy_with_logits.default", [x, t, w, None, reduction], rng=rng, **TOL)
        sign = torch.from_numpy(rng.choice([-1.0, 1.0], size=shape))
        run_op("aten.hinge_embedding_loss.default", [x, sign, 0.7, reduction], rng=rng, **TOL)
        run_op("aten.margin_ranking_loss.default", [x, y, sign, 0.2, reduction], rng=rng, **TOL)


def test_bce_log_clamp():
    # log(0) is clamped to -100
    x = torch.tensor([0.0, 1.0, 0.5], dtype=torch.float64)
    t = torch.tensor([1.0, 0.0, 0.5], dtype=torch.float64)
    run_op("aten.binary_cross_entropy.default", [x, t, None, 0], n=3)


@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_nll_loss(reduction):
    rng = seeded("nll", reduction)
    for _ in range(4):
        n, c = int(rng.integers(1, 6)), int(rng.integers(2, 6))
        x = rand(rng, n, c)
        t = torch.from_numpy(rng.integers(0, c, size=n))
        t[0] = -100 if rng.random() < 0.5 else t[0]  # ignored sample
        w = rand(rng, c, lo=0.1, hi=2) if rng.random() < 0.5 else None
        outs = [0] if reduction == 0 else None
        run_op("aten.nll_loss_forward.default", [x, t, w, reduction, -100], rng=rng, outputs=outs, **TOL)
        x2 = rand(rng, n, c, 3, 2)
        t2 = torch.from_numpy(rng.integers(0, c, size=(n, 3, 2)))
        run_op("aten.nll_loss2d_forward.default", [x2, t2, w, reduction, 1], rng=rng, outputs=outs, **TOL)


@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy(smoothing):
    rng = seeded("ce", smoothing)
    for reduction in [0, 1, 2]:
        n, c = int(rng.integers(1, 5)), int(rng.integers(2, 6))
        x = rand(rng, n, c)
        t = torch.from_numpy(rng.integers(0, c, size=n))
        w = rand(rng, c, lo=0.1, hi=2) if rng.random() < 0.5 else None
        run_op("aten.cross_entropy_loss.default", [x, t, w, reduction, -100, smoothing], rng=rng, **TOL)
        probs = torch.softmax(rand(rng, n, c), 1)
        run_op("aten.cross_entropy_loss.default", [x, probs, w, reduction, -100, smoothing], rng=rng, **TOL)
        run_op("aten.cross_entropy_loss.default", [rand(rng, n, c, 3), torch.from_numpy(rng.integers(0, c, size=(n, 3))),
                                                   None, reduction, -100, smoothing], rng=rng, **TOL)


def test_distance_losses():
    rng = seeded("distance")
    for _ in range(3):
        n, d = int(rng.integers(1, 5)), int(rng.integers(1, 8))
        a, p, q = rand(rng, n, d), rand(rng, n, d), rand(rng, n, d)
        for reduction in [0, 1, 2]:
            run_op("aten.triplet_margin_loss.default", [a, p, q, 0.5, 2.0, 1e-6, bool(rng.random() < 0.5), reduction],
                   rng=rng, **TOL)
        run_op("aten.triplet_margin_loss.default", [a, p, q, 1.0, 1.0, 1e-6, False, 1], rng=rng, **TOL)
        run_op("aten.pairwise_distance.default", [a, p, 2.0, 1e-6, False], rng=rng, **TOL)
        run_op("aten.pairwise_distance.default", [a, p, 3.0, 1e-6, True], rng=rng, **TOL)
        run_op("aten.cosine_similarity.default", [a, p, 1, 1e-8], rng=rng, **TOL)
        run_op("aten.cosine_similarity.default", [rand(rng, 2, 3, 4), rand(rng, 3, 4), 1, 1e-8], rng=rng, **TOL)
        y = torch.from_numpy(rng.choice([-1.0, 1.0], size=n))
        run_op("aten.cosine_embedding_loss.default", [a, p, y, 0.1, int(rng.integers(0, 3))], rng=rng, **TOL)
