"""Kill-matrix inputs, fp64 references and launch plans for mutation substrates (docs/mutation.md).

A substrate (examples/substrates/*.py) is a KernelBench-style file: `Model` (the PyTorch reference),
`ModelNew` (load_inline CUDA), `get_inputs()`, `get_init_inputs()`, plus `dirigo_launches(model,
*inputs)`: a Python mirror of the host function's launches, returning `(launches, output)` where
each launch is `(kernel, grid, block, shared_bytes, args)` and an arg is a tensor or a
`("s32"|"s64"|"f32", value)` scalar. A mutant differs from its substrate only in PTX, so one plan
serves the substrate and all of its mutants, on the CPU (concrete interpreter, `dirigo
killmatrix`) and on a GPU (killmatrix_gpu.py, CUDA driver API).

    python -m dirigo.killmatrix prep SUBSTRATE.py OUT_DIR    # spec.json + per-input binaries
    python -m dirigo.killmatrix inputs SUBSTRATE.py          # the input plan (names only)
"""
from __future__ import annotations

import json
import os
import sys
import types

import numpy as np

KERNELBENCH_SEEDS = range(5)
HARDENED = ("uniform01", "large", "tiny", "positive", "ties", "outliers")
FUZZ_CYCLE = ("randn",) + HARDENED
FUZZ_DRAWS = 20


def input_plan() -> list[dict]:
    """Every input of a substrate: name, distribution, seed, family (the same for every problem)."""
    plan = [{"name": f"kernelbench_randn/{s}", "distribution": "kernelbench_randn", "seed": s, "family": "kernelbench"}
            for s in KERNELBENCH_SEEDS]
    plan += [{"name": f"{d}/0", "distribution": d, "seed": 0, "family": "hardened"} for d in HARDENED]
    plan += [{"name": f"fuzz/{k}", "distribution": FUZZ_CYCLE[k % len(FUZZ_CYCLE)], "seed": 100 + k, "family": "fuzz"}
             for k in range(FUZZ_DRAWS)]
    return plan


class _NoExtension(types.SimpleNamespace):
    """Stands in for a load_inline module on machines without CUDA: any call fails loudly."""

    def __getattr__(self, name):
        def fail(*_a, **_k):
            raise RuntimeError(f"substrate extension function {name} is not available (no CUDA build here)")
        return fail


def load_substrate(path: str) -> dict:
    """Executes a substrate file with load_inline stubbed (no compilation) and returns its globals."""
    # killmatrix_gpu.py loads this file standalone (no package): so no dirigo.common.extension_builders here
    import torch.utils.cpp_extension as ce
    text = open(path).read()
    saved = ce.load_inline
    ce.load_inline = lambda *a, **k: _NoExtension()
    try:
        ns: dict = {"__name__": "dirigo_substrate", "__file__": os.path.abspath(path)}
        exec(compile(text, path, "exec"), ns)
    finally:
        ce.load_inline = saved
    for need in ("Model", "get_inputs", "get_init_inputs", "dirigo_launches"):
        if need not in ns:
            raise ValueError(f"{path}: substrate defines no {need} (needed for the kill matrix)")
    return ns


def _distribute(t, distribution: str, gen):
    import torch
    if distribution == "kernelbench_randn":
        return t
    shape = t.shape
    if distribution == "randn":
        v = torch.randn(shape, generator=gen)
    elif distribution == "uniform01":
        v = torch.rand(shape, generator=gen)
    elif distribution == "large":
        v = torch.randn(shape, generator=gen) * 100
    elif distribution == "tiny":
        v = torch.randn(shape, generator=gen) * 1e-3
    elif distribution == "positive":
        v = torch.randn(shape, generator=gen).abs()
    elif distribution == "ties":
        v = torch.randint(-4, 5, shape, generator=gen).to(torch.float32)
    elif distribution == "outliers":
        v = torch.randn(shape, generator=gen)
        mask = torch.rand(shape, generator=gen) < 0.01
        v = torch.where(mask, v * 1000, v)
    else:
        raise ValueError(f"unknown input distribution {distribution!r}")
    return v.to(t.dtype)


def draw(ns: dict, distribution: str, seed: int):
    """(model, inputs): KernelBench's draw for `kernelbench_randn`, else its floating tensors replaced."""
    import torch
    torch.manual_seed(seed)
    inputs = list(ns["get_inputs"]())
    torch.manual_seed(seed)
    model = ns["Model"](*ns["get_init_inputs"]()).eval()
    gen = torch.Generator().manual_seed(seed)
    inputs = [_distribute(t, distribution, gen) if isinstance(t, torch.Tensor) and t.is_floating_point() else t
              for t in inputs]
    return model, inputs


def references(model, inputs):
    """fp64 and fp32 reference outputs (flattened float64 arrays) of the PyTorch model on the CPU."""
    import copy
    import torch
    with torch.no_grad():
        r32 = model(*inputs)
        m64 = copy.deepcopy(model).double()
        r64 = m64(*[t.double() if isinstance(t, torch.Tensor) and t.is_floating_point() else t for t in inputs])
    if isinstance(r64, (tuple, list)):
        raise ValueError("substrates with several outputs are not supported by the kill matrix")
    return r64.detach().reshape(-1).numpy().astype(np.float64), r32.detach().reshape(-1).double().numpy()


def launch_plan(ns: dict, model, inputs):
    """(tensors, launches, output_index): tensors as float arrays in first-use order, launches with
    tensor args replaced by indices; scalars kept as (type, value)."""
    import torch
    with torch.no_grad():
        launches, out = ns["dirigo_launches"](model, *inputs)
    tensors, ids = [], {}

    def tensor_index(t):
        t = t.detach()
        if not t.is_contiguous():
            raise ValueError("dirigo_launches passes a non-contiguous tensor")
        key = t.data_ptr()
        if key not in ids:
            ids[key] = len(tensors)
            tensors.append(t)
        return ids[key]

    plan = []
    for kernel, grid, block, shared, args in launches:
        enc = []
        for a in args:
            if isinstance(a, torch.Tensor):
                enc.append({"tensor": tensor_index(a)})
            else:
                ty, v = a
                if ty not in ("s32", "s64", "u32", "u64", "f32", "f64"):
                    raise ValueError(f"unknown scalar type {ty!r} in dirigo_launches")
                enc.append({"scalar": float(v) if ty.startswith("f") else int(v), "type": ty})
        dims = lambda d: [int(x) for x in (list(d) + [1, 1, 1])[:3]]
        plan.append({"kernel": kernel, "grid": dims(grid), "block": dims(block), "shared_bytes": int(shared), "args": enc})
    if out.data_ptr() not in ids:
        raise ValueError("the output of dirigo_launches is not a kernel argument")
    return tensors, plan, ids[out.data_ptr()]


_DTYPES = {"torch.float32": "f32", "torch.float64": "f64", "torch.int32": "i32", "torch.int64": "i64"}


def metrics(out: np.ndarray, ref64: np.ndarray, ref32: np.ndarray) -> dict:
    """t_eq (vs fp64), t_eq32 (vs fp32 reference), max_abs, nonfinite_mismatch (the store's run columns)."""
    out = np.asarray(out, dtype=np.float64).reshape(-1)
    finite = np.isfinite(ref64)
    bad = int(np.count_nonzero(finite & ~np.isfinite(out)))
    both = finite & np.isfinite(out)
    with np.errstate(over="ignore", invalid="ignore"):
        err = np.abs(out[both] - ref64[both])
        t_eq = float(np.max(err / (1 + np.abs(ref64[both])), initial=0.0))
        f32 = both & np.isfinite(ref32)
        t_eq32 = float(np.max(np.abs(out[f32] - ref32[f32]) / (1 + np.abs(ref32[f32])), initial=0.0))
        max_abs = float(np.max(err, initial=0.0))
    if bad:
        t_eq = t_eq32 = float("inf")
    return {"t_eq": t_eq, "t_eq32": t_eq32, "max_abs": max_abs, "nonfinite_mismatch": bad}


def prepare(substrate: str, out_dir: str, plan: list[dict] | None = None) -> dict:
    """Writes OUT_DIR/spec.json and per input `<k>.in` (tensor contents, float64, concatenated in
    tensor order), `<k>.ref64`, `<k>.ref32` (float64). Returns the spec."""
    ns = load_substrate(substrate)
    os.makedirs(out_dir, exist_ok=True)
    spec = {"substrate": os.path.abspath(substrate), "problem": os.path.splitext(os.path.basename(substrate))[0],
            "inputs": []}
    for k, item in enumerate(plan or input_plan()):
        model, inputs = draw(ns, item["distribution"], item["seed"])
        ref64, ref32 = references(model, inputs)
        tensors, launches, out_index = launch_plan(ns, model, inputs)
        layout = [{"numel": int(t.numel()), "dtype": _DTYPES.get(str(t.dtype), "?"), "shape": list(t.shape)}
                  for t in tensors]
        if "?" in (d["dtype"] for d in layout):
            raise ValueError("dirigo_launches passes a tensor of an unsupported dtype")
        if "launches" not in spec:
            spec.update({"tensors": layout, "launches": launches, "output": out_index,
                         "output_numel": int(ref64.size)})
        elif spec["launches"] != launches or spec["tensors"] != layout:
            raise ValueError(f"{substrate}: the launch plan depends on input values ({item['name']})")
        if tensors[out_index].numel() != ref64.size:
            raise ValueError(f"{substrate}: kernel output has {tensors[out_index].numel()} elements, "
                             f"the reference {ref64.size}")
        np.concatenate([t.reshape(-1).double().numpy() for t in tensors]).astype("<f8").tofile(
            os.path.join(out_dir, f"{k}.in"))
        ref64.astype("<f8").tofile(os.path.join(out_dir, f"{k}.ref64"))
        ref32.astype("<f8").tofile(os.path.join(out_dir, f"{k}.ref32"))
        spec["inputs"].append(dict(item, index=k))
    with open(os.path.join(out_dir, "spec.json"), "w") as f:
        json.dump(spec, f, indent=1)
    return spec


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "inputs":
        for item in input_plan():
            print(item["name"], item["distribution"], item["seed"], item["family"])
        return 0
    if len(argv) == 3 and argv[0] == "prep":
        try:
            spec = prepare(argv[1], argv[2])
        except Exception as e:  # noqa: BLE001 - reported to the caller as one line
            print(f"UNSUPPORTED: {argv[1]}: {type(e).__name__}: {e}", file=sys.stderr)
            return 4
        print(f"{spec['problem']}: {len(spec['inputs'])} inputs, {len(spec['launches'])} launch(es)")
        return 0
    print(__doc__, file=sys.stderr)
    return 64


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
