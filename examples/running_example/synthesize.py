"""Builds the running example's bundles without a GPU (for CI and the README demo).

A GPU trace (`python -m dirigo.trace ref.py buggy.py --device cuda`) records the candidate's kernel
launch through the LD_PRELOAD shim. Without a GPU we assemble the same bundle from parts that are
each real: the reference is traced on the CPU by dirigo's tracer; the candidate's ATen operations
are the same calls (transposed convolution, then GELU and the bias add after the kernel); the
kernel's PTX is compiled here by nvcc from the CUDA source in _fused.py; and the launch parameters
are the ones the host function `min_sum` in that source computes (grid (N, W), 256 threads,
256 floats of dynamic shared memory, C/H/W as int). Re-tracing on a GPU replaces this script.

    python examples/running_example/synthesize.py   # writes bundle-buggy/ and bundle-fixed/
"""
from __future__ import annotations

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
NVCC = os.environ.get("NVCC", "/usr/local/cuda/bin/nvcc")


def kernel_source(loop_stop: str) -> str:
    text = open(os.path.join(HERE, "_fused.py")).read()
    cuda = re.search(r'CUDA_TEMPLATE = r"""(.*?)"""', text, re.S).group(1).replace("LOOP_STOP", loop_stop)
    cuda = cuda.replace("#include <torch/extension.h>", "")
    return cuda[: cuda.index("torch::Tensor min_sum")]  # device code only


def compile_ptx(src: str, flags: list[str]) -> str:
    with tempfile.TemporaryDirectory() as d:
        cu, ptx = os.path.join(d, "k.cu"), os.path.join(d, "k.ptx")
        open(cu, "w").write(src)
        subprocess.run([NVCC, "-ptx", *flags, cu, "-o", ptx], check=True)
        return open(ptx).read()


def synthesize(ref_bundle: dict, ptx: str, flags: list[str]) -> dict:
    ref = next(p for p in ref_bundle["programs"] if p["name"] == "ref")
    ops = ref["ops"]
    conv, gelu, add = ops[0], ops[3], ops[4]
    assert conv["name"] == "aten::convolution" and gelu["name"] == "aten::gelu" and add["name"] == "aten::add"
    tensors = {t["id"]: t for t in ref["tensors"]}
    conv_out = tensors[conv["outputs"][0]]
    n, c, h, w = conv_out["shape"]
    new = {"name": "new", "role": "candidate", "source": "buggy.py / fixed.py (synthesized, see synthesize.py)",
           "storages": [], "tensors": [], "inputs": copy.deepcopy(ref["inputs"]), "outputs": [], "ops": []}
    keep = {i["tensor"] for i in ref["inputs"]} | {conv_out["id"]}
    for t in ref["tensors"]:
        if t["id"] in keep:
            new["tensors"].append(copy.deepcopy(t))
    used = {t["storage"] for t in new["tensors"]}
    new["storages"] = [copy.deepcopy(s) for s in ref["storages"] if s["id"] in used]
    for i in new["inputs"]:
        i.pop("data", None)

    def tensor(tid, shape):
        strides, acc = [], 1
        for d in reversed(shape):
            strides.insert(0, acc)
            acc *= d
        sid = "s_" + tid
        new["storages"].append({"id": sid, "nbytes": 4 * acc, "device": "cuda"})
        new["tensors"].append({"id": tid, "storage": sid, "offset": 0, "shape": shape, "strides": strides,
                               "dtype": "float32"})

    tensor("k_out", [n, 1, 1, w])
    tensor("g_out", [n, 1, 1, w])
    tensor("a_out", [n, 1, 1, w])
    entry = re.search(r"\.entry\s+(\w+)", ptx).group(1)
    new["ops"] = [
        copy.deepcopy(conv),
        {"kind": "aten", "name": "aten::empty", "overload": "memory_format",
         "schema": "empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, "
                   "Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor",
         "args": [{"list": [{"scalar": d, "type": "int"} for d in (n, 1, 1, w)]}],
         "kwargs": {"dtype": {"dtype": "float32"}}, "outputs": ["k_out"], "mutates": [], "from": "extension"},
        {"kind": "launch", "module": "m0", "kernel": entry, "grid": [n, w, 1], "block": [256, 1, 1],
         "shared_bytes": 256 * 4,
         "args": [{"tensor": conv_out["id"], "byte_offset": 0}, {"tensor": "k_out", "byte_offset": 0},
                  {"scalar": c, "type": "s32"}, {"scalar": h, "type": "s32"}, {"scalar": w, "type": "s32"}],
         "stream": 0, "source_lines": True},
        dict(copy.deepcopy(gelu), args=[{"tensor": "k_out"}], outputs=["g_out"]),
        dict(copy.deepcopy(add), args=[{"tensor": "g_out"}, copy.deepcopy(add["args"][1])], outputs=["a_out"]),
    ]
    new["outputs"] = [{"name": "out0", "tensor": "a_out"}]
    b = copy.deepcopy(ref_bundle)
    b["created_by"] = {"tool": "examples/running_example/synthesize.py",
                       "note": "reference traced on the CPU; candidate assembled from its ATen calls, nvcc PTX "
                               "and the launch parameters of its host code (no GPU)"}
    b["modules"] = [{"id": "m0", "path": "ptx/m0.ptx", "sha256": hashlib.sha256(ptx.encode()).hexdigest(),
                     "source": "_fused.py", "compile": {"arch": "sm_90", "flags": flags}}]
    b["programs"] = [ref, new]
    b["match"] = {"inputs": [[f"ref.{i['name']}", f"new.{i['name']}"] for i in ref["inputs"]],
                  "outputs": [["ref.out0", "new.out0"]]}
    b.pop("trace_notes", None)
    return b


def main() -> int:
    from dirigo import trace
    flags = ["-arch=sm_90", "-O3", "-lineinfo"]
    with tempfile.TemporaryDirectory() as d:
        res = trace.trace(os.path.join(HERE, "ref.py"), None, os.path.join(d, "ref"), device="cpu")
        if res.status != "ok":
            print(res.message, file=sys.stderr)
            return 1
        ref_dir = os.path.join(d, "ref")
        ref_bundle = json.load(open(os.path.join(ref_dir, "manifest.json")))
        for name, stop in (("buggy", "s > 32"), ("fixed", "s >= 32")):
            ptx = compile_ptx(kernel_source(stop), flags)
            out = os.path.join(HERE, f"bundle-{name}")
            shutil.rmtree(out, ignore_errors=True)
            os.makedirs(os.path.join(out, "ptx"))
            shutil.copytree(os.path.join(ref_dir, "data"), os.path.join(out, "data"))
            open(os.path.join(out, "ptx", "m0.ptx"), "w").write(ptx)
            json.dump(synthesize(ref_bundle, ptx, flags), open(os.path.join(out, "manifest.json"), "w"), indent=1)
            print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
