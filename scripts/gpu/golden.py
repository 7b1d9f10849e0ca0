"""Records the real GPU's outputs of the golden OK kernels (tests/golden/cuda/ok_*.cu), so the
concrete interpreter can be checked against hardware instead of only against the symbolic mode
(both share exec's instruction semantics). For each kernel: compile it to PTX with the flags the
build uses (-arch=sm_90a plus its "// NVCC:" line), fill every tensor of its "// PARAMS:" line with
seeded contents, launch it through the CUDA driver API and write the inputs and the outputs of
every tensor to OUT/<stem>.json. tests/exec/test_golden_cuda.cpp (GoldenCuda.Hardware) binds the
same inputs, runs the concrete interpreter and compares.

    python3 scripts/gpu/golden.py OUT_DIR [--only STEM ...] [--dry-run]

Needs only python3, nvcc and the driver (libcuda.so.1, through ctypes): no torch, numpy or Z3.
Each kernel runs in its own child process, so a CUDA error or a hang loses only that kernel.
--dry-run compiles and writes the inputs without a GPU (outputs absent), to test the script.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import ctypes
import glob
import hashlib
import json
import math
import os
import random
import re
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOLDEN = os.path.join(ROOT, "tests", "golden", "cuda")

# dtype -> (struct code, bytes); f16 and bf16 are stored as raw 16-bit patterns
DTYPES = {"f32": ("f", 4), "f64": ("d", 8), "f16": ("e", 2), "bf16": (None, 2), "i8": ("b", 1),
          "i16": ("h", 2), "i32": ("i", 4), "i64": ("q", 8), "u8": ("B", 1)}
FLOATS = {"f32", "f64", "f16", "bf16"}


def parse_header(path: str) -> dict:
    """The fields test_golden_cuda.cpp reads: EXPECT, KERNEL, LAUNCH, PARAMS, NVCC."""
    g = {"stem": os.path.splitext(os.path.basename(path))[0], "nvcc": ["-lineinfo"], "shared": 0,
         "grid": [1, 1, 1], "block": [1, 1, 1], "params": []}
    for line in open(path):
        m = re.match(r"^// (EXPECT|KERNEL|LAUNCH|PARAMS|NVCC):\s*(.*?)\s*$", line)
        if not m:
            continue
        key, val = m.groups()
        if key == "EXPECT":
            g["expect"] = val.split()[0]
        elif key == "KERNEL":
            g["kernel"] = val
        elif key == "NVCC":
            g["nvcc"] = val.split()
        elif key == "LAUNCH":
            for tok in val.split():
                k, v = tok.split("=", 1)
                if k == "shared":
                    g["shared"] = int(v)
                else:
                    d = [int(x) for x in v.split(",")] + [1, 1]
                    g[k] = d[:3]
        elif key == "PARAMS":
            for tok in val.split():
                t = re.fullmatch(r"(\w+)=(\w+)\[(\d+)\](?:\{([-0-9.eE]+),([-0-9.eE]+)\})?", tok)
                s = re.fullmatch(r"(\w+)=(\w+):([-0-9.eE]+)", tok)
                if t:
                    p = {"name": t[1], "dtype": t[2], "elems": int(t[3])}
                    if t[4] is not None:
                        p["range"] = [float(t[4]), float(t[5])]
                    g["params"].append(p)
                elif s:
                    g["params"].append({"name": s[1], "dtype": s[2], "scalar": float(s[3])})
                else:
                    raise ValueError(f"{path}: bad PARAMS token {tok}")
    return g


def to_bf16_bits(x: float) -> int:
    b = struct.unpack("<I", struct.pack("<f", x))[0]
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF  # round to nearest even


def from_bf16_bits(h: int) -> float:
    return struct.unpack("<f", struct.pack("<I", h << 16))[0]


def representable(dtype: str, x: float) -> float:
    if dtype == "f32":
        return struct.unpack("<f", struct.pack("<f", x))[0]
    if dtype == "f16":
        return struct.unpack("<e", struct.pack("<e", x))[0]
    if dtype == "bf16":
        return from_bf16_bits(to_bf16_bits(x))
    return x


def inputs(g: dict, seed: int) -> list:
    """Seeded contents per tensor: floats uniform in the range (default [-2, 2]) rounded to the
    dtype, integers uniform in the range (default 0..9), as the C++ suite's bind() draws them."""
    out = []
    for i, p in enumerate(g["params"]):
        if "scalar" in p:
            out.append(None)
            continue
        r = random.Random(seed * 131 + i)
        if p["dtype"] in FLOATS:
            lo, hi = p.get("range", [-2.0, 2.0])
            out.append([representable(p["dtype"], r.uniform(lo, hi)) for _ in range(p["elems"])])
        else:
            lo, hi = (int(v) for v in p.get("range", [0, 9]))
            out.append([r.randint(lo, hi) for _ in range(p["elems"])])
    return out


def pack(dtype: str, values: list) -> bytes:
    if dtype == "bf16":
        return struct.pack(f"<{len(values)}H", *(to_bf16_bits(v) for v in values))
    return struct.pack(f"<{len(values)}{DTYPES[dtype][0]}", *values)


def unpack(dtype: str, raw: bytes) -> list:
    n = len(raw) // DTYPES[dtype][1]
    if dtype == "bf16":
        return [from_bf16_bits(h) for h in struct.unpack(f"<{n}H", raw)]
    return list(struct.unpack(f"<{n}{DTYPES[dtype][0]}", raw))


def encode(dtype: str, values: list) -> list:
    """JSON numbers that parse back to the same value of the dtype ('%.17g' for f64, '%.9g'
    round-trips f32 and narrower); non-finite floats as the strings "nan", "inf", "-inf"."""
    if dtype not in FLOATS:
        return [int(v) for v in values]
    fmt = "%.17g" if dtype == "f64" else "%.9g"
    return [float(fmt % v) if math.isfinite(v) else ("nan" if math.isnan(v) else ("inf" if v > 0 else "-inf"))
            for v in values]


def nvcc() -> str:
    for c in (os.environ.get("NVCC"), "/usr/local/cuda/bin/nvcc", "nvcc"):
        if c and (os.path.isabs(c) and os.path.exists(c) or not os.path.isabs(c)):
            return c
    return "nvcc"


def compile_ptx(g: dict, cu: str, work: str) -> str:
    out = os.path.join(work, g["stem"] + ".ptx")
    subprocess.run([nvcc(), "-ptx", "-arch=sm_90a", *g["nvcc"], cu, "-o", out], check=True,
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    return open(out, "rb").read().decode()


def find_entry(ptx: str, kernel: str) -> str:
    entries = re.findall(r"\.entry\s+([A-Za-z_$][\w$]*)", ptx)
    if kernel in entries:
        return kernel
    hits = [e for e in entries if e.startswith(f"_Z{len(kernel)}{kernel}")]
    if len(hits) != 1:
        raise KeyError(f"no unique PTX entry for {kernel}: {entries}")
    return hits[0]


class Driver:
    """The few CUDA driver calls a launch needs, through ctypes (no Python CUDA package)."""

    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")
        self.ck("cuInit", ctypes.c_uint(0))
        dev = ctypes.c_int()
        self.ck("cuDeviceGet", ctypes.byref(dev), ctypes.c_int(0))
        self.ctx = ctypes.c_void_p()
        self.ck("cuDevicePrimaryCtxRetain", ctypes.byref(self.ctx), dev)
        self.ck("cuCtxSetCurrent", self.ctx)

    def ck(self, name: str, *args):
        err = getattr(self.lib, name)(*args)
        if err != 0:
            s = ctypes.c_char_p()
            self.lib.cuGetErrorName(err, ctypes.byref(s))
            raise RuntimeError(f"{name}: {s.value.decode() if s.value else err}")

    def run(self, ptx: str, entry: str, g: dict, host: list) -> list:
        module, fn = ctypes.c_void_p(), ctypes.c_void_p()
        image = ctypes.create_string_buffer(ptx.encode() + b"\0")
        self.ck("cuModuleLoadData", ctypes.byref(module), image)
        self.ck("cuModuleGetFunction", ctypes.byref(fn), module, entry.encode())
        ptrs, args = [], []
        for p, data in zip(g["params"], host):
            if data is None:
                ctype = {"i32": ctypes.c_int32, "i64": ctypes.c_int64, "f32": ctypes.c_float,
                         "f64": ctypes.c_double}[p["dtype"]]
                args.append(ctype(int(p["scalar"]) if p["dtype"][0] == "i" else p["scalar"]))
                ptrs.append(None)
                continue
            raw = pack(p["dtype"], data)
            d = ctypes.c_uint64()
            self.ck("cuMemAlloc_v2", ctypes.byref(d), ctypes.c_size_t(max(len(raw), 4)))
            self.ck("cuMemcpyHtoD_v2", d, ctypes.c_char_p(raw), ctypes.c_size_t(len(raw)))
            ptrs.append((d, len(raw)))
            args.append(ctypes.c_uint64(d.value))
        argv = (ctypes.c_void_p * len(args))(*[ctypes.addressof(a) for a in args])
        gr, bl = g["grid"], g["block"]
        self.ck("cuLaunchKernel", fn, *(ctypes.c_uint(v) for v in gr), *(ctypes.c_uint(v) for v in bl),
                ctypes.c_uint(g["shared"]), ctypes.c_void_p(0), argv, ctypes.c_void_p(0))
        self.ck("cuCtxSynchronize")
        outs = []
        for p, pr in zip(g["params"], ptrs):
            if pr is None:
                outs.append(None)
                continue
            buf = ctypes.create_string_buffer(pr[1])
            self.ck("cuMemcpyDtoH_v2", buf, pr[0], ctypes.c_size_t(pr[1]))
            self.ck("cuMemFree_v2", pr[0])
            outs.append(unpack(p["dtype"], buf.raw))
        self.ck("cuModuleUnload", module)
        return outs


def one(stem: str, out_dir: str, seed: int, dry_run: bool) -> dict:
    cu = os.path.join(GOLDEN, stem + ".cu")
    g = parse_header(cu)
    with tempfile.TemporaryDirectory() as work:
        ptx = compile_ptx(g, cu, work)
    host = inputs(g, seed)
    outs = [None] * len(host) if dry_run else Driver().run(ptx, find_entry(ptx, g["kernel"]), g, host)
    rec = {"stem": stem, "kernel": g["kernel"], "seed": seed, "grid": g["grid"], "block": g["block"],
           "shared": g["shared"], "nvcc_flags": ["-arch=sm_90a", *g["nvcc"]],
           "ptx_sha256": hashlib.sha256(ptx.encode()).hexdigest(), "gpu": not dry_run, "params": []}
    for p, data, o in zip(g["params"], host, outs):
        q = {"name": p["name"], "dtype": p["dtype"]}
        if data is None:
            q["scalar"] = p["scalar"]
        else:
            q["input"] = encode(p["dtype"], data)
            if o is not None:
                q["output"] = encode(p["dtype"], o)
        rec["params"].append(q)
    with open(os.path.join(out_dir, stem + ".json"), "w") as f:
        json.dump(rec, f, separators=(",", ":"))
    return rec


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 1))
    a = ap.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    if a.child:
        one(a.child, a.out, a.seed, a.dry_run)
        return 0
    stems = a.only or sorted(os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(GOLDEN, "ok_*.cu")))
    stems = [s for s in stems if parse_header(os.path.join(GOLDEN, s + ".cu")).get("expect") == "OK"]
    def child(s):
        t0 = time.time()
        cmd = [sys.executable, os.path.abspath(__file__), a.out, "--child", s, "--seed", str(a.seed)]
        if a.dry_run:
            cmd.append("--dry-run")
        try:
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=a.timeout)
            status = "ok" if r.returncode == 0 else "failed: " + r.stdout.decode(errors="replace").strip()[-400:]
        except subprocess.TimeoutExpired:
            status = f"timeout after {a.timeout:.0f} s"
        print(f"{s}: {status} ({time.time() - t0:.1f} s)", flush=True)
        return status == "ok"

    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:  # nvcc dominates: one per core
        failed = sum(not ok for ok in pool.map(child, stems))
    print(f"{len(stems) - failed} of {len(stems)} recorded", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
