"""Grid scaling of `dirigo check`: one kernel's launch from 10^4 to 10^8 threads, time and verdict per size.

A location's cost should be its cone's, not the grid's (docs/design, "Scale: reductions and cones"):
the target is a check time flat within ~2x across the sizes and the right verdict at every size
(CHECKED with every Execute safety check decided for the correct kernels, BUG for the wrong ones).

Bundles are synthesized on the CPU from parts that are each real, as examples/execute_bugs/synthesize.py
does: the reference (bench/grid_scaling/ref_*.py) is traced on the CPU by dirigo's tracer at a small
size, its tensors are then given the target shape (the ops carry no shapes), and the candidate is one
launch of our kernel (bench/grid_scaling/*.cu, nvcc -ptx here) with the grid/block/arguments its host
code would compute. No tensor data is stored (a 10^8-element input is 400 MB): inputs stay symbolic.

    python3 bench/grid_scaling.py [--dirigo build/dirigo] [--sizes 1e4,1e6,1e8] [--cases a,b] [--budget 20]

Bundles go to .cache/grid_scaling/ (git-ignored); one line per (case, size) is printed, and a
Markdown table at the end (docs/perf.md "Grid scaling" holds the measured one).
"""
from __future__ import annotations

import argparse
import copy
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SRC = os.path.join(HERE, "grid_scaling")
sys.path.insert(0, os.path.join(ROOT, "python"))
NVCC = os.environ.get("NVCC", "/usr/local/cuda/bin/nvcc")
FLAGS = ["-arch=sm_90", "-O3", "-lineinfo"]


def shapes_affine(n: int):
    return {"x": [n], "out": [n]}, dict(grid=[(n + 255) // 256, 1, 1], block=[256, 1, 1],
                                        args=["x", "out", (n, "s32")])


def shapes_rowsum(n: int):
    rows = max(1, n // 256)
    return {"x": [rows, 256], "out": [rows]}, dict(grid=[rows, 1, 1], block=[256, 1, 1],
                                                   args=["x", "out", (256, "s32")])


def shapes_conv(n: int):
    h = w = int(round(math.sqrt(n)))
    return ({"x": [1, 1, h, w], "conv.weight": [1, 1, 3, 3], "out": [1, 1, h, w]},
            dict(grid=[(w + 15) // 16, (h + 15) // 16, 1], block=[16, 16, 1],
                 args=["x", "conv.weight", "out", (h, "s32"), (w, "s32")]))


# case: (kernel source, reference, shapes, expected verdict)
CASES = {
    "elementwise": ("elementwise.cu", "ref_affine.py", shapes_affine, "CHECKED"),
    "wrong_constant": ("wrong_constant.cu", "ref_affine.py", shapes_affine, "BUG"),
    "rowsum_tree": ("rowsum.cu", "ref_rowsum.py", shapes_rowsum, "CHECKED"),
    "conv3x3": ("conv3x3.cu", "ref_conv3x3.py", shapes_conv, "CHECKED"),
    "conv3x3_oob": ("conv3x3_oob.cu", "ref_conv3x3.py", shapes_conv, "BUG"),
}


# Included by the conv3x3 kernels by their path from bench/grid_scaling/ (one body with tests/exec).
SHARED_HEADERS = [os.path.join("tests", "exec", "cuda", "conv3x3.cuh")]


def compile_ptx(cu: str) -> str:
    """nvcc -ptx of a copy in a temporary tree laid out as the repository (the PTX names no local path)."""
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "bench", "grid_scaling")
        os.makedirs(src)
        shutil.copy(os.path.join(SRC, cu), os.path.join(src, cu))
        for h in SHARED_HEADERS:
            os.makedirs(os.path.join(d, os.path.dirname(h)), exist_ok=True)
            shutil.copy(os.path.join(ROOT, h), os.path.join(d, h))
        subprocess.run([NVCC, "-ptx", *FLAGS, cu, "-o", "k.ptx"], check=True, cwd=src)
        return open(os.path.join(src, "k.ptx")).read().replace(f'"{d}/', '"')


def template(ref: str, cache: str) -> dict:
    """The reference traced on the CPU at a small size (its op list does not depend on the size)."""
    out = os.path.join(cache, "template_" + ref[:-3])
    if not os.path.exists(os.path.join(out, "manifest.json")):
        from dirigo import trace
        os.environ["GRID_SCALING_N"] = "1024"
        res = trace.trace(os.path.join(SRC, ref), None, out, device="cpu")
        if res.status != "ok":
            raise SystemExit(f"tracing {ref}: {res.message}")
    return json.load(open(os.path.join(out, "manifest.json")))


def contiguous(shape):
    strides, acc = [], 1
    for d in reversed(shape):
        strides.insert(0, acc)
        acc *= d
    return strides, acc


def synthesize(tmpl: dict, ptx: str, cu: str, shapes: dict, launch: dict) -> dict:
    b = copy.deepcopy(tmpl)
    ref = b["programs"][0]
    by_name = {i["name"]: i["tensor"] for i in ref["inputs"]}
    want = {by_name[k]: v for k, v in shapes.items() if k in by_name}
    want[ref["outputs"][0]["tensor"]] = shapes["out"]
    # tensors without a stated shape are intermediates of the elementwise chain: the output's shape
    sizes = {}
    for t in ref["tensors"]:
        t["shape"] = want.get(t["id"], shapes["out"])
        t["strides"], sizes[t["storage"]] = contiguous(t["shape"])
    for s in ref["storages"]:
        s["nbytes"] = 4 * sizes[s["id"]]
        s.pop("data_ptr", None)
    for io in ref["inputs"] + ref["outputs"]:
        for k in ("data", "sha256", "stats"):
            io.pop(k, None)
    new = {"name": "new", "role": "candidate", "source": f"bench/grid_scaling/{cu} (synthesized)",
           "storages": copy.deepcopy([s for s in ref["storages"] if s["id"] in
                                      {t["storage"] for t in ref["tensors"] if t["id"] in by_name.values()}]),
           "tensors": copy.deepcopy([t for t in ref["tensors"] if t["id"] in by_name.values()]),
           "inputs": copy.deepcopy(ref["inputs"]), "outputs": [{"name": "out0", "tensor": "k_out"}], "ops": []}
    strides, numel = contiguous(shapes["out"])
    new["storages"].append({"id": "s_k_out", "nbytes": 4 * numel, "device": "cuda"})
    new["tensors"].append({"id": "k_out", "storage": "s_k_out", "offset": 0, "shape": shapes["out"],
                           "strides": strides, "dtype": "float32"})

    def arg(a):
        if isinstance(a, tuple):
            return {"scalar": a[0], "type": a[1]}
        return {"tensor": "k_out" if a == "out" else by_name[a], "byte_offset": 0}
    entry = ptx.split(".entry", 1)[1].split("(", 1)[0].strip()
    new["ops"] = [
        {"kind": "aten", "name": "aten::empty", "overload": "memory_format",
         "schema": "empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, "
                   "Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor",
         "args": [{"list": [{"scalar": d, "type": "int"} for d in shapes["out"]]}],
         "kwargs": {"dtype": {"dtype": "float32"}}, "outputs": ["k_out"], "mutates": [], "from": "extension"},
        {"kind": "launch", "module": "m0", "kernel": entry, "grid": launch["grid"], "block": launch["block"],
         "shared_bytes": 0, "args": [arg(a) for a in launch["args"]], "stream": 0, "source_lines": True},
    ]
    b["created_by"] = {"tool": "bench/grid_scaling.py",
                       "note": "reference traced on the CPU at a small size and given the target shape; candidate "
                               "one launch of nvcc PTX (no GPU, no tensor data)"}
    b["modules"] = [{"id": "m0", "path": "ptx/m0.ptx", "sha256": hashlib.sha256(ptx.encode()).hexdigest(),
                     "source": cu, "compile": {"arch": "sm_90", "flags": FLAGS}}]
    b["programs"] = [ref, new]
    b["match"] = {"inputs": [[f"ref.{i['name']}", f"new.{i['name']}"] for i in ref["inputs"]],
                  "outputs": [["ref.out0", "new.out0"]]}
    b.pop("trace_notes", None)
    return b


def write_bundle(path: str, manifest: dict, ptx: str) -> None:
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(os.path.join(path, "ptx"))
    open(os.path.join(path, "ptx", "m0.ptx"), "w").write(ptx)
    json.dump(manifest, open(os.path.join(path, "manifest.json"), "w"), indent=1)


def threads(launch: dict) -> int:
    return math.prod(launch["grid"]) * math.prod(launch["block"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dirigo", default=os.path.join(ROOT, "build", "dirigo"))
    ap.add_argument("--sizes", default="1e4,1e5,1e6,1e7,1e8")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--budget", type=float, default=20)
    ap.add_argument("--locations", type=int, default=64, help="--max-locations of each check (the same work per size)")
    ap.add_argument("--cache", default=os.path.join(ROOT, ".cache", "grid_scaling"))
    a = ap.parse_args()
    os.makedirs(a.cache, exist_ok=True)
    rows = []
    for case in a.cases.split(","):
        cu, ref, shaper, expect = CASES[case]
        ptx = compile_ptx(cu)
        tmpl = template(ref, a.cache)
        for s in a.sizes.split(","):
            n = int(float(s))
            shapes, launch = shaper(n)
            path = os.path.join(a.cache, f"{case}_{s}")
            write_bundle(path, synthesize(tmpl, ptx, cu, shapes, launch), ptx)
            t0 = time.monotonic()
            p = subprocess.run([a.dirigo, "check", path, "--budget", str(a.budget), "--seed", "1", "--json",
                                "--max-locations", str(a.locations)],
                               capture_output=True, text=True)
            wall = time.monotonic() - t0
            try:
                rep = json.loads(p.stdout)
            except json.JSONDecodeError:
                rep = {"outcome": "ERROR", "reason": (p.stderr or p.stdout)[-300:]}
            outcome = rep.get("outcome", "?").upper()
            undecided = len(rep.get("undecided_safety", []))
            stages = {s["stage"]: s["seconds"] for s in rep.get("stage_seconds", [])}
            ok = (outcome == expect or (expect == "CHECKED" and outcome == "VERIFIED")) and not undecided
            rows.append((case, threads(launch), outcome, undecided, wall, stages.get("execute", float("nan")), ok,
                         rep.get("reason", "")[:140], rep.get("checked", 0)))
            print(f"{case:15s} {threads(launch):>11,d} threads  {outcome:10s} undecided-safety={undecided} "
                  f"{wall:7.2f} s (execute {rows[-1][5]:.2f} s) {'ok' if ok else 'WRONG (expected ' + expect + ')'}  "
                  f"{rows[-1][7]}", flush=True)
    print("\n| case | threads | verdict | locations checked | undecided safety checks | wall s | execute s |")
    print("|---|---|---|---|---|---|---|")
    for case, th, outcome, und, wall, ex, ok, _, checked in rows:
        print(f"| {case} | {th:,d} | {outcome}{'' if ok else ' (wrong)'} | {checked} | {und} | {wall:.2f} | {ex:.2f} |")
    return 0 if all(r[6] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
