"""cuBLAS calls recorded by the cuBLAS shim (shim/cublas_shim.c) -> bundle "library" ops.

The shim writes one JSON record per call made by the program's own code (never inside an ATen op:
PyTorch's matmul keeps its ATen semantics). Here the device addresses in a record are bound to tensors by
the same address-range logic as kernel launch arguments (`common.pointer_binder`): a pointer becomes
`{"tensor", "byte_offset"}`, one inside no traced tensor `{"pointer": "0x…", "unbound": true}`, and a
batched call's device pointer arrays become one argument per batch entry (`A[0]`, `A[1]`, …). The
written operand names (`C`, `y`, `x`, `result`, `D`) become the tensor ids in `writes`.

Semantics live in C++ (src/blas); an entry point the shim records but dirigo does not model carries
`"modeled": false` and checking reports it UNSUPPORTED by name.
"""
from __future__ import annotations

from .common import pointer_binder

MODELED = ("cublasSgemm_v2", "cublasSgemmStridedBatched", "cublasSgemmBatched", "cublasGemmEx",
           "cublasGemmStridedBatchedEx", "cublasSgeam", "cublasSgemv_v2", "cublasSger_v2", "cublasSaxpy_v2", "cublasSscal_v2",
           "cublasSdot_v2", "cublasLtMatmul")


def library_op(raw: dict, bind) -> dict:
    """One shim record -> a bundle library op (tensor refs bound with `bind(address)`)."""
    args: dict = {}
    batch_keys: dict[str, list[str]] = {}

    def ref(addr: str):
        p = int(addr, 16)
        b = bind(p) if p else None
        return b if b is not None else {"pointer": hex(p), "unbound": True}

    for k, v in (raw.get("args") or {}).items():
        if isinstance(v, dict) and "ptr" in v:
            args[k] = ref(v["ptr"])
        elif isinstance(v, dict) and "ptrs" in v:
            keys = []
            for i, p in enumerate(v["ptrs"]):
                args[f"{k}[{i}]"] = ref(p)
                keys.append(f"{k}[{i}]")
            batch_keys[k] = keys  # (the array's own address differs between runs: not kept)
        else:
            args[k] = v
    for k in ("alpha", "beta"):  # a device scalar inside a tensor is read symbolically, not as this run's value
        if isinstance(args.get(k + "_ptr"), dict) and "tensor" in args[k + "_ptr"]:
            args[k] = None
    writes = []
    for w in raw.get("writes") or []:
        for key in batch_keys.get(w, [w]):
            t = args.get(key)
            if isinstance(t, dict) and "tensor" in t and t["tensor"] not in writes:
                writes.append(t["tensor"])
    return {"kind": "library", "library": raw.get("library", "cublas"), "name": raw["name"], "args": args,
            "writes": writes}


def finalize_library(rec) -> None:
    """Turn the raw cuBLAS records in rec.ops into library ops (call after launch.finalize_launches)."""
    if not any(op.get("kind") == "library" and "_raw" in op for op in rec.ops):
        return
    bind = pointer_binder(rec)
    rec.ops[:] = [library_op(op["_raw"], bind) if op.get("kind") == "library" and "_raw" in op else op
                  for op in rec.ops]
