"""Matrix products: mm, bmm, addmm, baddbmm, matmul broadcasting, linear, mv, dot, outer, einsum."""
import numpy as np
import pytest
import torch

from test_aten_harness import rand, run_op, seeded


def dims(rng, n):
    return [int(x) for x in rng.integers(1, 7, size=n)]


def test_mm_bmm():
    rng = seeded("mm")
    for _ in range(6):
        m, k, n, b = dims(rng, 4)
        run_op("aten.mm.default", [rand(rng, m, k), rand(rng, k, n)], rng=rng)
        run_op("aten.bmm.default", [rand(rng, b, m, k), rand(rng, b, k, n)], rng=rng)


@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2.0), (0, 1), (2, -1)])
def test_addmm_baddbmm(beta, alpha):
    rng = seeded("addmm", beta, alpha)
    for _ in range(4):
        m, k, n, b = dims(rng, 4)
        bias = rand(rng, *([n] if rng.random() < 0.5 else [m, n]))
        if beta == 0:
            bias = bias * float("nan")  # ignored entirely when beta == 0
        run_op("aten.addmm.default", [bias, rand(rng, m, k), rand(rng, k, n)], {"beta": beta, "alpha": alpha}, rng=rng)
        run_op("aten.baddbmm.default", [rand(rng, b, m, n), rand(rng, b, m, k), rand(rng, b, k, n)],
               {"beta": beta, "alpha": alpha}, rng=rng)


@pytest.mark.parametrize("ra,rb", [(1, 1), (2, 2), (1, 2), (2, 1), (3, 1), (1, 3), (3, 2), (2, 3), (4, 3), (3, 4), (4, 4)])
def test_matmul_ranks(ra, rb):
    rng = seeded("matmul", ra, rb)
    for _ in range(3):
        k = int(rng.integers(1, 6))
        batch = dims(rng, 2)
        sa = ([int(rng.integers(1, 5))] if ra >= 2 else []) + [k]
        sb = [k] + ([int(rng.integers(1, 5))] if rb >= 2 else [])
        ba = [b if rng.random() < 0.7 else 1 for b in batch][-(ra - 2):] if ra > 2 else []
        bb = [b if rng.random() < 0.7 else 1 for b in batch][-(rb - 2):] if rb > 2 else []
        run_op("aten.matmul.default", [rand(rng, *ba, *sa), rand(rng, *bb, *sb)], rng=rng)


def test_linear_mv_dot_outer():
    rng = seeded("linear")
    for _ in range(4):
        m, k, n = dims(rng, 3)
        run_op("aten.linear.default", [rand(rng, 2, m, k), rand(rng, n, k), rand(rng, n)], rng=rng)
        run_op("aten.linear.default", [rand(rng, m, k), rand(rng, n, k)], rng=rng)
        run_op("aten.mv.default", [rand(rng, m, k), rand(rng, k)], rng=rng)
        run_op("aten.addmv.default", [rand(rng, m), rand(rng, m, k), rand(rng, k)], {"beta": 0.5, "alpha": 2}, rng=rng)
        run_op("aten.dot.default", [rand(rng, k), rand(rng, k)], rng=rng)
        run_op("aten.outer.default", [rand(rng, m), rand(rng, n)], rng=rng)


@pytest.mark.parametrize("eq,shapes", [
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ij,jk", [(3, 4), (4, 2)]),
    ("ij->ji", [(3, 4)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("i,i->", [(5,), (5,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
    ("abc,cd->abd", [(2, 3, 4), (4, 5)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (1, 4, 2)]),
    ("b...,b->...", [(3, 2, 2), (3,)]),
    ("ijk,ikl,ilm->ijm", [(2, 3, 2), (2, 2, 4), (2, 4, 3)]),
    ("nchw,oc->nohw", [(1, 3, 2, 2), (4, 3)]),
])
def test_einsum(eq, shapes):
    rng = seeded("einsum", eq)
    run_op("aten.einsum.default", [eq, [rand(rng, *s) for s in shapes]], rng=rng, n=10)
