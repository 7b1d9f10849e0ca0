"""scripts/cpu_candidates.py (the CPU evaluation's candidates): each fault applies where it should and nowhere
else, and each source rewrite computes what the library call does (small shapes, our own programs)."""
import importlib.util
import pathlib
import random

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

ROOT = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("cpu_candidates", ROOT / "scripts" / "cpu_candidates.py")
cc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cc)
aten = torch.ops.aten


def graph(fn, *xs):
    from torch.fx.experimental.proxy_tensor import make_fx
    return make_fx(fn, decomposition_table=cc.core_aten_decompositions())(*xs)


X = torch.randn(4, 6)


def f(x):
    return (x * 2.5 + torch.sum(x, dim=[1], keepdim=True)) - x.amax(dim=[0], keepdim=True)


def node(gm, target):
    return next(n for n in gm.graph.nodes if n.target == target)


@pytest.mark.parametrize("kind,target,applies", [
    ("const", aten.mul.Tensor, True), ("const", aten.sum.dim_IntList, False),
    ("short", aten.sum.dim_IntList, True), ("short", aten.mul.Tensor, False),
    ("drop", aten.add.Tensor, True), ("drop", aten.mul.Tensor, False),
    ("swap", aten.sub.Tensor, True), ("swap", aten.add.Tensor, False),
    ("dim", aten.sum.dim_IntList, False),  # 4 x 6: no other dim of the same size to reduce over
])
def test_fault_applies_only_where_it_should(kind, target, applies):
    gm = graph(f, X)
    n = node(gm, target)
    g2, desc = cc.apply_fault(gm, kind, n.name, 0)
    assert (desc is not None) == applies
    if applies:
        g2.recompile()
        assert not torch.allclose(g2(X), gm(X))  # the fault changes the function


def test_dim_fault_moves_a_reduction_to_a_same_sized_dim():
    x = torch.randn(5, 5)
    gm = graph(lambda t: torch.sum(t, dim=[1], keepdim=True) * 1.0, x)
    g2, desc = cc.apply_fault(gm, "dim", node(gm, aten.sum.dim_IntList).name, 0)
    assert desc and "[1] -> [0]" in desc
    g2.recompile()
    assert g2(x).shape != gm(x).shape or not torch.allclose(g2(x), gm(x))


def test_the_decomposed_graph_as_source_computes_the_reference():
    gm = graph(f, X)
    ns = {"torch": torch}
    exec(compile("from math import inf, nan\nfrom torch import device\n" + cc.graph_source(gm), "g", "exec"), ns)
    assert torch.allclose(ns["_graph"](X), f(X))


FUNCTIONAL = '''
import torch
import torch.nn.functional as F

def functional_model(
    x,
    *,
    w,
    b,
):
    x = F.linear(x, w, b)
    x = torch.sigmoid(x) * torch.tanh(x) + torch.relu(x)
    y = torch.logsumexp(x, dim=1, keepdim=True) + torch.mean(x, dim=(0, 1), keepdim=True)
    z = torch.softmax(x, dim=1) + F.gelu(x) + F.hardswish(x) + F.leaky_relu(x, negative_slope=0.2)
    return z + y + F.group_norm(x.reshape(4, 6, 1), 3, None, None).reshape(4, 6)

def get_inputs():
    return [torch.randn(4, 5)]
'''


def test_every_rewrite_applies_and_computes_the_same():
    out, done = cc.rewrite_functional(FUNCTIONAL)
    assert len(done) == len(cc.REWRITES)  # each rule applied once at least
    assert "F.linear(" not in out.split("def functional_model", 1)[1]
    assert "def get_inputs" in out  # what follows the function is kept
    a, b = {}, {}
    exec(FUNCTIONAL, a)
    exec(out, b)
    x, w, bias = torch.randn(4, 5), torch.randn(6, 5), torch.randn(6)
    assert torch.allclose(a["functional_model"](x, w=w, b=bias), b["functional_model"](x, w=w, b=bias), atol=1e-5)


def test_a_rewrite_does_not_apply_outside_functional_model_or_without_calls():
    src = "import torch\ndef helper(x):\n    return torch.sigmoid(x)\n\ndef functional_model(x):\n    return x * 2\n"
    assert cc.rewrite_functional(src) is None
    assert cc.rewrite_functional("x = 1\n") is None
