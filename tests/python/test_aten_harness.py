"""Shared harness for the ATen per-element equation tests (test_aten_*.py).

run_op(op, args, kwargs) calls the ATen overload with PyTorch (float64 on the
CPU), describes every tensor argument as a strided view of its storage, asks
dirigo for the per-element equation at random output locations, evaluates it
with the ir Evaluator (dirigo._core.aten_eval) and compares.
"""
from __future__ import annotations

import os
import zlib

import numpy as np
import torch

from dirigo import _core

CASES = {"calls": 0, "locations": 0}
RTOL = 1e-9
ATOL = 1e-9


def _overload(op: str):
    name = op.split("::")[-1]
    if name.startswith("aten."):
        name = name[5:]
    base, _, ov = name.partition(".")
    packet = getattr(torch.ops.aten, base)
    return getattr(packet, ov or "default")


class _Describer:
    """Turns Python/torch arguments into the plain structures aten_eval reads."""

    def __init__(self):
        self.keys: dict[int, int] = {}
        self.storages: dict[int, np.ndarray] = {}

    def tensor(self, t: torch.Tensor) -> dict:
        st = t.untyped_storage()
        ptr = st.data_ptr()
        key = self.keys.setdefault(ptr, len(self.keys)) if st.nbytes() else len(self.keys) + 1000
        if key not in self.storages:
            n = st.nbytes() // t.element_size()
            flat = torch.empty(0, dtype=t.dtype).set_(st, 0, (n,), (1,))
            self.storages[key] = np.ascontiguousarray(flat.detach().to(torch.float64).numpy()).copy()
        return {"tensor": key, "shape": list(t.shape), "strides": list(t.stride()),
                "offset": t.storage_offset(), "dtype": str(t.dtype)}

    def __call__(self, a):
        if isinstance(a, torch.Tensor):
            return self.tensor(a)
        if isinstance(a, (list, tuple)):
            return [self(x) for x in a]
        if isinstance(a, torch.dtype):
            return {"dtype": str(a)}
        if isinstance(a, (torch.device, torch.layout, torch.memory_format)):
            return str(a)
        return a


def _as_tuple(res):
    if isinstance(res, torch.Tensor):
        return (res,)
    return tuple(res)


def pick_locations(shape, n, rng) -> np.ndarray:
    """n distinct logical locations (always the first and the last), as rows of multi-indices."""
    total = int(np.prod(shape)) if len(shape) else 1
    if total <= n:
        flat = np.arange(total)
    else:
        flat = np.unique(np.concatenate([[0, total - 1], rng.choice(total, size=n - 2, replace=False)]))
    return np.ascontiguousarray(np.array(np.unravel_index(flat, shape) if len(shape) else np.zeros((0, len(flat))),
                                         dtype=np.int64).T.reshape(len(flat), len(shape))), flat


def run_op(op: str, args, kwargs=None, *, outputs=None, n: int = 6, rng=None, rtol=RTOL, atol=ATOL,
           as_op: str | None = None, as_args=None, as_kwargs=None):
    """Check dirigo's equation for `op` against PyTorch at n random locations of each output.

    as_op/as_args/as_kwargs: ask dirigo about a different overload (one this machine cannot run, e.g. a
    CUDA-only op) with its own arguments, and compare it with what `op` computes here."""
    kwargs = kwargs or {}
    rng = rng or np.random.default_rng(0)
    d = _Describer()
    dargs, dkwargs = d(list(args)), {k: d(v) for k, v in kwargs.items()}  # snapshot before in-place ops run
    name = op
    if as_op is not None:
        name = as_op
        dargs = d(list(as_args if as_args is not None else args))
        dkwargs = {k: d(v) for k, v in (as_kwargs if as_kwargs is not None else kwargs).items()}
    res = _as_tuple(_overload(op)(*args, **kwargs))
    outs = [{"shape": list(r.shape), "dtype": str(r.dtype)} for r in res]
    which = range(len(res)) if outputs is None else outputs
    checked = 0
    for o in which:
        r = res[o]
        if r.numel() == 0:
            continue
        locs, flat = pick_locations(tuple(r.shape), n, rng)
        got = np.array(_core.aten_eval(name, dargs, dkwargs, outs, d.storages, o, locs))
        want = r.detach().reshape(-1).to(torch.float64).numpy()[flat]
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True,
                                   err_msg=f"{op} output {o} at {locs.tolist()} args={dargs} kwargs={dkwargs}")
        CASES["calls"] += 1
        CASES["locations"] += len(flat)
        checked += len(flat)
    if os.environ.get("DIRIGO_ATEN_STATS"):  # "op locations" per call, for docs/aten.md's numbers
        with open(os.environ["DIRIGO_ATEN_STATS"], "a") as f:
            f.write(f"{name} {checked}\n")
    return res


def expr_of(op: str, args, kwargs=None, output: int = 0, location=None):
    """(printed expression, dag size) of op's equation at one location."""
    kwargs = kwargs or {}
    d = _Describer()
    dargs, dkwargs = d(list(args)), {k: d(v) for k, v in kwargs.items()}
    res = _as_tuple(_overload(op)(*args, **kwargs))
    outs = [{"shape": list(r.shape), "dtype": str(r.dtype)} for r in res]
    loc = list(location) if location is not None else [0] * res[output].dim()
    return _core.aten_expr(op, dargs, dkwargs, outs, output, loc)


# ---- random inputs

def seeded(*parts) -> np.random.Generator:
    """A generator seeded by the test's parameters (stable across runs, unlike hash())."""
    return np.random.default_rng(zlib.crc32(repr(parts).encode()))


def layout(base: torch.Tensor, rng, kind: int | None = None) -> torch.Tensor:
    """The same values as `base`, stored as a non-contiguous view (transposed, strided, offset) or contiguous."""
    kind = int(rng.integers(0, 4)) if kind is None else kind
    shape = tuple(base.shape)
    if kind == 0 or base.dim() == 0:
        return base.clone()
    if kind == 1 and base.dim() >= 2:  # stored transposed
        perm = list(rng.permutation(base.dim()))
        inv = list(np.argsort(perm))
        return base.permute(*perm).contiguous().permute(*inv)
    if kind == 2:  # every other element of a larger buffer, at an offset
        big = torch.zeros(tuple(2 * s + 1 for s in shape), dtype=base.dtype)
        view = big[tuple(slice(1, 1 + 2 * s, 2) for s in shape)]
        view.copy_(base)
        return view
    # kind 3: contiguous but at a storage offset
    big = torch.zeros((shape[0] + 1,) + shape[1:], dtype=base.dtype)
    big[1:] = base
    return big[1:]


def rand(rng, *shape, lo=-2.0, hi=2.0, noncontig=True, dtype=torch.float64) -> torch.Tensor:
    t = torch.from_numpy(rng.uniform(lo, hi, size=shape)).to(dtype)
    return layout(t, rng) if noncontig else t


def rand_shape(rng, min_rank=1, max_rank=4, max_dim=5):
    return tuple(int(x) for x in rng.integers(1, max_dim + 1, size=int(rng.integers(min_rank, max_rank + 1))))


def broadcastable(rng, shape):
    """A shape that broadcasts to `shape`: some dims set to 1, some leading dims dropped."""
    s = [1 if rng.random() < 0.3 else d for d in shape]
    drop = int(rng.integers(0, len(s) + 1)) if rng.random() < 0.3 else 0
    return tuple(s[drop:])


def test_harness_detects_a_wrong_value():
    """The harness must fail when dirigo's value differs from PyTorch's: compare relu with exp's values."""
    rng = np.random.default_rng(1)
    x = rand(rng, 3, 4)
    d = _Describer()
    dargs = d([x])
    outs = [{"shape": [3, 4], "dtype": "torch.float64"}]
    locs, flat = pick_locations((3, 4), 12, rng)
    got = np.array(_core.aten_eval("aten.relu.default", dargs, {}, outs, d.storages, 0, locs))
    np.testing.assert_allclose(got, torch.relu(x).reshape(-1).numpy()[flat], rtol=RTOL, atol=ATOL)
    assert not np.allclose(got, torch.exp(x).reshape(-1).numpy()[flat])


def test_noncontiguous_layouts_keep_values():
    rng = np.random.default_rng(2)
    base = torch.randn(3, 4, 5, dtype=torch.float64)
    for kind in range(4):
        v = layout(base, rng, kind)
        assert torch.equal(v, base)
    assert not layout(base, rng, 2).is_contiguous()
