"""out= overloads, in-place variants and arguments written in place (batch norm's running statistics).

out= overloads resolve to the functional overload whose parameters (names and types) equal theirs minus the
kwarg-only written `out` tensors (src/aten/out_overloads.inc); the table is checked against the installed
PyTorch's schemas both ways, and a sample of overloads is compared with PyTorch on random shapes."""
import numpy as np
import pytest
import torch

from dirigo import _core
from test_aten_harness import _Describer, pick_locations, rand, rand_shape, broadcastable, run_op, seeded


def _is_out(a) -> bool:
    return a.alias_info is not None and a.alias_info.is_write and a.kwarg_only


def _torch_out_table() -> dict[str, str]:
    """out overload -> functional overload, for every registered functional overload that has one."""
    table = {}
    for key in _core.aten_supported_ops():
        base, _, ov = key.partition(".")
        packet = getattr(torch.ops.aten, base, None)
        if packet is None or (ov or "default") not in packet.overloads():
            continue
        f = [(a.name, str(a.type)) for a in getattr(packet, ov or "default")._schema.arguments]
        for o in packet.overloads():
            s = getattr(packet, o)._schema
            if any(_is_out(a) for a in s.arguments) and [(a.name, str(a.type)) for a in s.arguments
                                                         if not _is_out(a)] == f:
                table[f"{base}.{o}"] = key
    return table


def test_out_table_matches_torch_schemas():
    want = _torch_out_table()
    assert len(want) > 200
    wrong = {k: (_core.aten_resolved_name(k), v) for k, v in want.items() if _core.aten_resolved_name(k) != v}
    assert not wrong, f"out= overloads resolving to the wrong functional overload: {wrong}"
    # and nothing else resolves through the table: an out overload of an op without semantics stays unknown
    assert _core.aten_resolved_name("aten.frobnicate.out") == ""


def run_out(op: str, args, kwargs, rng):
    """Run the out= overload `op` with out tensors already of the result's shape (so PyTorch does not
    resize them) and check dirigo's equation for the functional overload it resolves to."""
    functional = _core.aten_resolved_name(op)
    assert functional, f"{op} does not resolve"
    base = op[len("aten."):].split(".")[0]
    expect = getattr(getattr(torch.ops.aten, base), functional.partition(".")[2] or "default")(*args, **kwargs)
    expect = (expect,) if isinstance(expect, torch.Tensor) else tuple(expect)
    schema = getattr(getattr(torch.ops.aten, base), op.split(".")[-1])._schema
    outs = [a.name for a in schema.arguments if _is_out(a)]
    assert len(outs) == len(expect), (op, outs)
    run_op(op, args, dict(kwargs, **{n: torch.empty_like(e) for n, e in zip(outs, expect)}), rng=rng)


@pytest.mark.parametrize("seed", range(4))
def test_elementwise_out_overloads(seed):
    rng = seeded("out-elementwise", seed)
    shape = rand_shape(rng)
    x, y = rand(rng, *shape), rand(rng, *broadcastable(rng, shape))
    run_out("aten.add.out", [x, y], {"alpha": float(rng.uniform(-2, 2))}, rng)
    run_out("aten.sub.out", [x, y], {"alpha": 1}, rng)
    run_out("aten.mul.out", [x, y], {}, rng)
    run_out("aten.div.out", [x, rand(rng, *shape, lo=0.5, hi=2.0)], {}, rng)
    run_out("aten.maximum.out", [x, y], {}, rng)
    run_out("aten.tanh.out", [x], {}, rng)
    run_out("aten.sigmoid.out", [x], {}, rng)
    run_out("aten.exp.out", [x], {}, rng)
    run_out("aten.gelu.out", [x], {"approximate": "tanh" if seed % 2 else "none"}, rng)
    run_out("aten.clamp.out", [x, -0.5, 0.75], {}, rng)
    run_out("aten.pow.Tensor_Scalar_out", [x, 2], {}, rng)
    run_out("aten.where.self_out", [x > 0, x, y], {}, rng)


@pytest.mark.parametrize("seed", range(4))
def test_reduction_and_linalg_out_overloads(seed):
    rng = seeded("out-reduce", seed)
    shape = rand_shape(rng, min_rank=2, max_rank=4)
    x = rand(rng, *shape)
    dim = int(rng.integers(0, len(shape)))
    keep = bool(rng.integers(0, 2))
    m, k, n = (int(v) for v in rng.integers(1, 6, size=3))
    a, b, c = rand(rng, m, k), rand(rng, k, n), rand(rng, m, n)
    run_out("aten.sum.IntList_out", [x, [dim], keep], {}, rng)
    run_out("aten.mean.out", [x, [dim], keep], {}, rng)
    run_out("aten.amax.out", [x, [dim], keep], {}, rng)
    run_out("aten.max.dim_max", [x, dim, keep], {}, rng)
    run_out("aten._softmax.out", [x, dim, False], {}, rng)
    run_out("aten.mm.out", [a, b], {}, rng)
    run_out("aten.addmm.out", [c, a, b], {"beta": 0.5, "alpha": 2.0}, rng)
    run_out("aten.cat.out", [[x, x * 2], dim], {}, rng)
    run_out("aten.native_layer_norm.out", [x, list(shape[-1:]), None, None, 1e-5], {}, rng)


@pytest.mark.parametrize("seed", range(3))
def test_in_place_variants_the_census_reaches(seed):
    """Level-3 census: relu_, hardtanh_, mul_.Tensor, sigmoid_, tanh_, clamp_min_.Tensor, div_.Scalar, as_strided_."""
    rng = seeded("inplace", seed)
    shape = rand_shape(rng)
    fresh = lambda: rand(rng, *shape)  # noqa: E731  (each in-place op mutates its own tensor)
    run_op("aten.hardtanh_.default", [fresh(), -0.5, 0.5], rng=rng)
    run_op("aten.mul_.Tensor", [fresh(), rand(rng, *broadcastable(rng, shape))], rng=rng)
    run_op("aten.sigmoid_.default", [fresh()], rng=rng)
    run_op("aten.tanh_.default", [fresh()], rng=rng)
    run_op("aten.clamp_min_.Tensor", [fresh(), rand(rng, *broadcastable(rng, shape))], rng=rng)
    run_op("aten.div_.Scalar", [fresh(), float(rng.uniform(0.5, 3))], rng=rng)
    base = rand(rng, 4 * 5 + 3, noncontig=False)
    run_op("aten.as_strided_.default", [base, [4, 3], [5, 2], 1], rng=rng)


def _batch_norm_case(rng, training: bool, overload="aten.native_batch_norm.default"):
    n, c = int(rng.integers(1, 4)), int(rng.integers(1, 5))
    spatial = tuple(int(v) for v in rng.integers(1, 4, size=int(rng.integers(0, 3))))
    if n * int(np.prod(spatial)) < 2:
        n = 2
    x = rand(rng, n, c, *spatial)
    w, b = rand(rng, c, noncontig=False), rand(rng, c, noncontig=False)
    rm, rv = rand(rng, c, noncontig=False), rand(rng, c, lo=0.5, hi=2.0, noncontig=False)
    momentum = float(rng.uniform(0.05, 0.9))
    return x, w, b, rm, rv, momentum


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_running_statistics_are_outputs(seed, training):
    """Outputs returns+0 / returns+1 are the running_mean / running_var the op writes in place."""
    rng = seeded("bn-running", seed, training)
    x, w, b, rm, rv, momentum = _batch_norm_case(rng, training)
    returns, names = _core.aten_written_arguments("aten.native_batch_norm.default")
    assert (returns, names) == (3, ["running_mean", "running_var"])
    d = _Describer()
    args = [x, w, b, rm, rv, training, momentum, 1e-5]
    dargs = d(list(args))  # snapshot: the running statistics before the update
    res = torch.ops.aten.native_batch_norm.default(*args)
    outs = [{"shape": list(r.shape), "dtype": str(r.dtype)} for r in res] + \
           [{"shape": list(t.shape), "dtype": str(t.dtype)} for t in (rm, rv)]
    for k, updated in enumerate((rm, rv)):
        locs, flat = pick_locations(tuple(updated.shape), 4, rng)
        got = np.array(_core.aten_eval("aten.native_batch_norm.default", dargs, {}, outs, d.storages, returns + k, locs))
        np.testing.assert_allclose(got, updated.numpy()[flat], rtol=1e-9, atol=1e-9, err_msg=names[k])


def test_batch_norm_composite_and_cudnn_name_their_written_arguments():
    assert _core.aten_written_arguments("aten.batch_norm.default") == (1, ["running_mean", "running_var"])
    assert _core.aten_written_arguments("aten.cudnn_batch_norm.default") == (4, ["running_mean", "running_var"])
    assert _core.aten_written_arguments("aten.relu.default") == (0, [])
    # the functional batch_norm (one return) exposes the update as outputs 1 and 2
    rng = seeded("bn-composite")
    x, w, b, rm, rv, momentum = _batch_norm_case(rng, True)
    d = _Describer()
    args = [x, w, b, rm, rv, True, momentum, 1e-5, False]
    dargs = d(list(args))
    out = torch.ops.aten.batch_norm.default(*args)
    outs = [{"shape": list(out.shape), "dtype": str(out.dtype)}] + [{"shape": [rm.numel()], "dtype": str(rm.dtype)}] * 2
    locs = np.arange(rm.numel(), dtype=np.int64).reshape(-1, 1)
    got = np.array(_core.aten_eval("aten.batch_norm.default", dargs, {}, outs, d.storages, 2, locs))
    np.testing.assert_allclose(got, rv.numpy(), rtol=1e-9, atol=1e-9)


def test_running_variance_of_one_value_per_channel_is_unsupported():
    x = torch.randn(1, 3, dtype=torch.float64)
    d = _Describer()
    rm, rv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    dargs = d([x, None, None, rm, rv, True, 0.1, 1e-5])
    outs = [{"shape": [1, 3], "dtype": "torch.float64"}] + [{"shape": [3], "dtype": "torch.float64"}] * 4
    with pytest.raises(NotImplementedError, match="one value per channel"):
        _core.aten_eval("aten.native_batch_norm.default", dargs, {}, outs, d.storages, 4, np.zeros((1, 1), np.int64))


def write_table(path) -> int:
    """Regenerates src/aten/out_overloads.inc from the installed PyTorch (run after adding overloads):
    python3 tests/python/test_aten_out.py --regenerate"""
    table = _torch_out_table()
    head = open(path).read().split("\n{", 1)[0]  # keep the comment block
    with open(path, "w") as fh:
        fh.write(head + "\n" + "\n".join(f'{{"{k}", "{table[k]}"}},' for k in sorted(table)) + "\n")
    return len(table)


if __name__ == "__main__":
    import os
    import sys
    if sys.argv[1:] == ["--regenerate"]:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        print(write_table(os.path.join(root, "src", "aten", "out_overloads.inc")), "out= overloads")


REF_SRC = """
import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x, y):
        return torch.sigmoid(x + y).sum(dim=1)
def get_inputs():
    return [torch.randn(8, 6), torch.randn(8, 6)]
def get_init_inputs():
    return []
"""
NEW_SRC = """
import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x, y):
        buf = torch.empty_like(x)
        torch.add(x, y, out=buf)
        torch.{act}(buf, out=buf)
        out = torch.empty(x.shape[0])
        torch.sum(buf, dim=1, out=out)
        return out
"""


@pytest.mark.parametrize("act,want", [("sigmoid", ("CHECKED", "VERIFIED")), ("tanh", ("BUG",))])
def test_out_overloads_end_to_end(tmp_path, act, want):
    """Traced on the CPU (the tracer records add.out / sigmoid.out / sum.IntList_out with `mutates`),
    then checked: out= programs lower through the functional semantics."""
    import dirigo
    (tmp_path / "ref.py").write_text(REF_SRC)
    (tmp_path / "new.py").write_text(NEW_SRC.format(act=act))
    v = dirigo.check(str(tmp_path / "ref.py"), str(tmp_path / "new.py"), budget_s=20, device="cpu")
    assert v.outcome in want, (v.outcome, v.reason)
