"""Small helpers shared by the tracer, the state stage and the replayer: the bundle format's dtypes, JSON
numbers that may be non-finite, tensor digests and statistics, binding device pointers to recorded
tensors, and replacing torch's extension builders while user code is executed.

This module imports no other dirigo module (tests/python/test_import_cycles.py keeps the dependency
graph acyclic); torch is imported inside the functions that need it.
"""
from __future__ import annotations

import contextlib
import hashlib
import math

__version__ = "0.1.0"


class Unsupported(Exception):
    """The program is outside what dirigo can trace; the message says why."""


# ---------------------------------------------------------------------------------------------------------
# Dtypes of the bundle format

DTYPE_SIZES = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4,
               "int16": 2, "int8": 1, "uint8": 1, "bool": 1}

_DTYPE_NAMES = None


def _dtype_names() -> dict:
    global _DTYPE_NAMES
    import torch
    if _DTYPE_NAMES is None:
        _DTYPE_NAMES = {torch.float64: "float64", torch.float32: "float32", torch.float16: "float16",
                        torch.bfloat16: "bfloat16", torch.int64: "int64", torch.int32: "int32",
                        torch.int16: "int16", torch.int8: "int8", torch.uint8: "uint8", torch.bool: "bool"}
    return _DTYPE_NAMES


def dtype_name(dtype) -> str:
    """The bundle format's name of a torch dtype; Unsupported for a dtype the format has no name for."""
    name = _dtype_names().get(dtype)
    if name is None:
        raise Unsupported(f"dtype {str(dtype).replace('torch.', '')} is not in the bundle format")
    return name


def torch_dtype(name: str):
    """The torch dtype of a bundle format dtype name (KeyError for a name the format does not have)."""
    return {v: k for k, v in _dtype_names().items()}[name]


# ---------------------------------------------------------------------------------------------------------
# Numbers in JSON answers

def json_float(v: float):
    """A float for JSON: finite values as they are, non-finite ones as "nan", "inf" or "-inf"."""
    v = float(v)
    return v if math.isfinite(v) else ("nan" if math.isnan(v) else ("inf" if v > 0 else "-inf"))


# ---------------------------------------------------------------------------------------------------------
# Describing tensor values

CHUNK = 1 << 24  # elements per step: a 32768 x 32768 weight (4 GiB) is never copied whole
SAMPLES = 4  # values shown per parameter


def chunks(x):
    """(start, slice) of a flat tensor, CHUNK elements at a time."""
    for i in range(0, x.numel(), CHUNK):
        yield i, x[i:i + CHUNK]


def flat_values(t):
    """The tensor's elements as one row-major vector (bool as uint8), detached."""
    import torch
    x = t.detach().reshape(-1)
    return x.to(torch.uint8) if x.dtype == torch.bool else x


def digest(t) -> str:
    """sha256 of the tensor's elements in row-major order (the bytes of a bundle data file), chunk by chunk."""
    import torch
    h = hashlib.sha256()
    for _, c in chunks(flat_values(t).contiguous()):
        h.update(c.cpu().contiguous().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def stats(t) -> dict:
    """numel, mean, std, min, max, max |v| and the first few values (float64 arithmetic, chunk by chunk, on
    the tensor's own device: a GPU parameter is not copied out)."""
    import torch
    x = flat_values(t)
    n = x.numel()
    if n == 0:
        return {"numel": 0}
    total, sq, lo, hi, amax = 0.0, 0.0, math.inf, -math.inf, 0.0
    for _, c in chunks(x):  # one pass: sum and sum of squares (a description, not a reduction to trust)
        c = c.to(torch.float64)
        total, sq = total + float(c.sum()), sq + float((c * c).sum())
        lo, hi = min(lo, float(c.min())), max(hi, float(c.max()))
        amax = max(amax, float(c.abs().max()))
    mean = total / n
    var = max(sq / n - mean * mean, 0.0) if math.isfinite(sq) else sq
    return {"numel": n, "mean": json_float(mean), "std": json_float(math.sqrt(var) if math.isfinite(var) else var),
            "min": json_float(lo), "max": json_float(hi), "absmax": json_float(amax),
            "samples": [json_float(v) for v in x[:SAMPLES].to(torch.float64).tolist()]}


# ---------------------------------------------------------------------------------------------------------
# Device pointers

def pointer_binder(rec):
    """address -> {"tensor", "byte_offset"} relative to the view starting closest below it, or None.
    `rec` is a trace Recorder (its storages and tensors)."""
    # live storage ranges, and tensors by storage id
    ranges = []
    for st in rec.storages.values():
        if "data_ptr" in st:
            ranges.append((int(st["data_ptr"], 16), st["nbytes"], st["id"]))
    ranges.sort()
    by_storage: dict[str, list[tuple[int, str]]] = {}
    st_ptr = {sid: ptr for ptr, _, sid in ranges}
    for t in rec.tensors:
        if t["storage"] in st_ptr:
            start = st_ptr[t["storage"]] + t["offset"] * DTYPE_SIZES[t["dtype"]]
            by_storage.setdefault(t["storage"], []).append((start, t["id"]))

    def bind(ptr: int):
        for base, nbytes, sid in ranges:
            if base <= ptr < base + max(nbytes, 1):
                cands = [(s, tid) for s, tid in by_storage.get(sid, []) if s <= ptr]
                if cands:
                    start, tid = max(cands, key=lambda c: (c[0], -int(c[1][1:])))
                    return {"tensor": tid, "byte_offset": ptr - start}
        return None

    return bind


# ---------------------------------------------------------------------------------------------------------
# Extension builds

@contextlib.contextmanager
def extension_builders(load_inline, load=None):
    """torch.utils.cpp_extension.load_inline (and load, where given) replaced by these functions while the
    block runs; the originals are put back afterwards, also on an exception."""
    import torch.utils.cpp_extension as ce
    saved = ce.load_inline, ce.load
    ce.load_inline = load_inline
    if load is not None:
        ce.load = load
    try:
        yield
    finally:
        ce.load_inline, ce.load = saved
