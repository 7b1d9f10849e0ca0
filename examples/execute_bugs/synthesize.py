"""Builds CPU-synthesized bundles of the execute_bugs examples (no GPU needed).

The real fixtures are traced on a GPU (scripts/gpu/fixtures.sh -> <example>/bundle/). This script
assembles the same kind of bundle from parts that are each real, as
examples/running_example/synthesize.py does: the reference is traced on the CPU by dirigo's tracer;
the candidate repeats the reference's ATen ops that run before the kernel (the nn.Linear of
gelu_constant), then `aten::empty` for the result and one launch of the kernel whose PTX nvcc
compiles here from new.py's `cuda_source`, with the grid/block/arguments the host function in that
source computes (SPECS below repeats them). Used to check each example on the CPU before a GPU trace.

    python examples/execute_bugs/synthesize.py [NAME ...]   # writes <name>/bundle-synth/ (committed)
    python examples/execute_bugs/synthesize.py [NAME ...] --out DIR   # writes DIR/<name>/ instead
"""
from __future__ import annotations

import argparse
import copy
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
FLAGS = ["-arch=sm_90", "-O3", "-lineinfo"]

NVCC = os.environ.get("NVCC", "/usr/local/cuda/bin/nvcc")


def compile_ptx(name: str, src: str) -> str:
    """nvcc -ptx in a scratch directory, with a relative file name so .loc lines read `<name>.cu:LINE`."""
    with tempfile.TemporaryDirectory() as d:
        open(os.path.join(d, f"{name}.cu"), "w").write(src)
        subprocess.run([NVCC, "-ptx", *FLAGS, f"{name}.cu", "-o", "k.ptx"], check=True, cwd=d)
        return open(os.path.join(d, "k.ptx")).read().replace(f'"{d}/', '"')


# grid, block, dynamic shared bytes, the kernel's arguments ("in": what the kernel reads, "out": its
# result, "input:NAME": a program input or parameter, (value, PTX type): a scalar; default in, out,
# then `scalars`), and the ref op from which the kernel takes over (default: the kernel reads the input).
SPECS = {
    "shared_race": dict(grid=[16, 1, 1], block=[128, 1, 1], scalars=[(128, "s32")]),
    "warp_sync_missing": dict(grid=[16, 1, 1], block=[128, 1, 1], scalars=[(256, "s32")]),
    "divergent_barrier": dict(grid=[8, 1, 1], block=[128, 1, 1], scalars=[(96, "s32")]),
    "full_mask_predicated": dict(grid=[32, 1, 1], block=[32, 1, 1], scalars=[(24, "s32")]),
    "shuffle_out_of_block": dict(grid=[16, 1, 1], block=[48, 1, 1], scalars=[(48, "s32")]),
    "global_oob": dict(grid=[4, 1, 1], block=[256, 1, 1], scalars=[(1000, "s32")]),
    "layout_mismatch": dict(grid=[3, 1, 1], block=[32, 1, 1], scalars=[(96, "s32"), (16, "s32"), (24, "s32")]),
    "uninit_shared": dict(grid=[16, 1, 1], block=[64, 1, 1], scalars=[(40, "s32")]),
    "softmax_correct": dict(grid=[16, 1, 1], block=[32, 1, 1], scalars=[(64, "s32"), (0.5, "f32")]),
    "gelu_constant": dict(grid=[4, 1, 1], block=[128, 1, 1], scalars=[(512, "s32")], kernel_from="aten::gelu"),
    "center_rows_correct": dict(grid=[8, 1, 1], block=[128, 1, 1], scalars=[(96, "s32")]),
    "layernorm_correct": dict(grid=[16, 1, 1], block=[32, 1, 1],
                              args=["in", "input:norm.weight", "input:norm.bias", "out", (64, "s32"), (1e-5, "f32")]),
}


def kernel_source(name: str) -> str:
    text = open(os.path.join(HERE, name, "new.py")).read()
    cuda = re.search(r'cuda_source = r"""(.*?)"""', text, re.S).group(1)
    cuda = cuda.replace("#include <torch/extension.h>", "")
    return cuda[: cuda.index("torch::Tensor")]  # device code only


def contiguous_tensor(prog: dict, tid: str, shape: list[int]) -> None:
    strides, acc = [], 1
    for d in reversed(shape):
        strides.insert(0, acc)
        acc *= d
    sid = "s_" + tid
    prog["storages"].append({"id": sid, "nbytes": 4 * acc, "device": "cuda"})
    prog["tensors"].append({"id": tid, "storage": sid, "offset": 0, "shape": shape, "strides": strides,
                            "dtype": "float32"})


def synthesize(name: str, ref_bundle: dict, ptx: str) -> dict:
    spec = SPECS[name]
    ref = next(p for p in ref_bundle["programs"] if p["name"] == "ref")
    tensors = {t["id"]: t for t in ref["tensors"]}
    cut = 0
    if spec.get("kernel_from"):
        cut = next(i for i, op in enumerate(ref["ops"]) if op.get("name") == spec["kernel_from"])
    prefix = copy.deepcopy(ref["ops"][:cut])
    kernel_in = prefix[-1]["outputs"][0] if prefix else ref["inputs"][0]["tensor"]
    out_shape = tensors[ref["outputs"][0]["tensor"]]["shape"]

    new = {"name": "new", "role": "candidate", "source": f"examples/execute_bugs/{name}/new.py (synthesized)",
           "storages": [], "tensors": [], "inputs": copy.deepcopy(ref["inputs"]), "outputs": [], "ops": prefix}
    keep = {i["tensor"] for i in ref["inputs"]} | {o for op in prefix for o in op.get("outputs", [])}
    new["tensors"] = [copy.deepcopy(t) for t in ref["tensors"] if t["id"] in keep]
    used = {t["storage"] for t in new["tensors"]}
    new["storages"] = [copy.deepcopy(s) for s in ref["storages"] if s["id"] in used]
    for i in new["inputs"]:
        i.pop("data", None)
    contiguous_tensor(new, "k_out", out_shape)
    by_name = {i["name"]: i["tensor"] for i in ref["inputs"]}

    def launch_arg(a):
        if isinstance(a, tuple):
            return {"scalar": a[0], "type": a[1]}
        tid = {"in": kernel_in, "out": "k_out"}.get(a) or by_name[a.split(":", 1)[1]]
        return {"tensor": tid, "byte_offset": 0}
    entry = re.search(r"\.entry\s+(\w+)", ptx).group(1)
    new["ops"] += [
        {"kind": "aten", "name": "aten::empty", "overload": "memory_format",
         "schema": "empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, "
                   "Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor",
         "args": [{"list": [{"scalar": d, "type": "int"} for d in out_shape]}],
         "kwargs": {"dtype": {"dtype": "float32"}}, "outputs": ["k_out"], "mutates": [], "from": "extension"},
        {"kind": "launch", "module": "m0", "kernel": entry, "grid": spec["grid"], "block": spec["block"],
         "shared_bytes": spec.get("shared", 0),
         "args": [launch_arg(a) for a in spec.get("args", ["in", "out", *spec.get("scalars", [])])],
         "stream": 0, "source_lines": True},
    ]
    new["outputs"] = [{"name": "out0", "tensor": "k_out"}]
    b = copy.deepcopy(ref_bundle)
    b["created_by"] = {"tool": "examples/execute_bugs/synthesize.py",
                       "note": "reference traced on the CPU; candidate assembled from its ATen calls, nvcc PTX "
                               "and the launch parameters of its host code (no GPU)"}
    b["modules"] = [{"id": "m0", "path": "ptx/m0.ptx", "sha256": hashlib.sha256(ptx.encode()).hexdigest(),
                     "source": f"{name}/new.py", "compile": {"arch": "sm_90", "flags": FLAGS}}]
    b["programs"] = [ref, new]
    b["match"] = {"inputs": [[f"ref.{i['name']}", f"new.{i['name']}"] for i in ref["inputs"]],
                  "outputs": [["ref.out0", "new.out0"]]}
    b.pop("trace_notes", None)
    return b


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", default=sorted(SPECS))
    ap.add_argument("--out", help="write OUT/<name>/ instead of <name>/bundle-synth/")
    a = ap.parse_args()
    from dirigo import trace
    for name in a.names:
        with tempfile.TemporaryDirectory() as d:
            res = trace.trace(os.path.join(HERE, name, "ref.py"), None, os.path.join(d, "ref"), device="cpu")
            if res.status != "ok":
                print(f"{name}: {res.message}", file=sys.stderr)
                return 1
            ref_dir = os.path.join(d, "ref")
            ref_bundle = json.load(open(os.path.join(ref_dir, "manifest.json")))
            ptx = compile_ptx(name, kernel_source(name))
            out = os.path.join(a.out, name) if a.out else os.path.join(HERE, name, "bundle-synth")
            shutil.rmtree(out, ignore_errors=True)
            os.makedirs(os.path.join(out, "ptx"))
            shutil.copytree(os.path.join(ref_dir, "data"), os.path.join(out, "data"))
            open(os.path.join(out, "ptx", "m0.ptx"), "w").write(ptx)
            json.dump(synthesize(name, ref_bundle, ptx), open(os.path.join(out, "manifest.json"), "w"), indent=1)
            print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
