"""Run a traced bundle's candidate program again, with a mutated kernel in place of the traced one.

A substrate's bundle (`dirigo bundle`, traced on a GPU) records what its ModelNew did: ATen ops and
kernel launches (grid, block, dynamic shared bytes, arguments). Replaying that op list on new inputs
is the substrate with no hand-written host mirror: ATen ops run through torch, launches run the PTX
given for their module (the substrate's or a mutant's, compiled by NVRTC) either through the CUDA
driver API (`device="cuda"`) or through dirigo's concrete interpreter (`device="cpu"`, one
`dirigo launch-job --serve` child). A host-side mutant changes the recorded launch instead
(`launch_overrides`: grid/block/shared bytes per launch op, see host_plan()).

    python -m dirigo.bundle_run BUNDLE [--ptx MODULE=PATH] [--device cpu|cuda]   # replays the traced inputs

A replayed launch that faults raises LaunchFailed(status, detail): status `crash` (out of bounds, a
CUDA error, an interpreter UNSUPPORTED), `timeout` or `nonfinite` (the interpreter met NaN/inf).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

from .common import torch_dtype


class LaunchFailed(RuntimeError):
    def __init__(self, status: str, detail: str):
        super().__init__(f"{status}: {detail}")
        self.status, self.detail = status, detail


class ReplayUnsupported(RuntimeError):
    """The bundle holds something this replay does not run (a library call, an unbound pointer)."""


def source_name(entry: str) -> str:
    """The kernel's source name from an Itanium-mangled entry (`_Z14min_sum_kernelPKf...`), else as is."""
    m = re.match(r"_Z(\d+)", entry)
    if m:
        return entry[m.end():m.end() + int(m.group(1))]
    return entry


def find_entry(ptx: str, kernel: str) -> str | None:
    """The PTX entry for a recorded entry name: the same name, else the same source name."""
    entries = re.findall(r"\.entry\s+([A-Za-z_$][\w$]*)", ptx)
    if kernel in entries:
        return kernel
    want = source_name(kernel)
    hits = [e for e in entries if source_name(e) == want]
    return hits[0] if len(hits) == 1 else None


def _dirigo_binary() -> str:
    for c in (os.environ.get("DIRIGO"), os.environ.get("DIRIGO_BIN"), os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "dirigo")):
        if c and os.path.exists(c):
            return c
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for c in (os.path.join(root, "build", "dirigo"), os.path.join(root, "build-mutate", "dirigo")):
        if os.path.exists(c):
            return c
    raise FileNotFoundError("no dirigo binary for the CPU launcher (set $DIRIGO)")


class CpuLauncher:
    """Launches through the concrete interpreter: whole storages as float64 files, one child process."""

    def __init__(self, dirigo: str | None = None, max_ms: float = 3000):
        self.max_ms = max_ms
        self.dir = tempfile.mkdtemp(prefix="dirigo-launch-")
        self.proc = subprocess.Popen([dirigo or _dirigo_binary(), "launch-job", "--serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)

    def close(self):
        if self.proc and self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        self.proc = None

    def launch(self, ptx_path: str, kernel: str, grid, block, shared: int, args: list) -> list[str]:
        import torch
        buffers, index, job_args = [], {}, []
        for a in args:
            if isinstance(a, torch.Tensor):
                st = a.untyped_storage()
                key = st.data_ptr()
                if key not in index:
                    flat = torch.empty(0, dtype=a.dtype).set_(st, 0, (st.nbytes() // a.element_size(),), (1,))
                    path = os.path.join(self.dir, f"b{len(buffers)}.f64")
                    flat.double().numpy().astype("<f8").tofile(path)
                    index[key] = len(buffers)
                    buffers.append((flat, path))
                job_args.append({"buffer": index[key], "byte_offset": a.storage_offset() * a.element_size()})
            else:
                (value, ty), off = a
                if off:
                    job_args[-1]["byte_offset"] += off
                    continue
                job_args.append({"scalar": value, "type": ty})
        dt = {torch.float32: "f32", torch.float64: "f64", torch.float16: "f16", torch.bfloat16: "bf16",
              torch.int32: "i32", torch.int64: "i64", torch.int16: "i16", torch.int8: "i8", torch.uint8: "u8",
              torch.bool: "bool"}
        job = {"ptx": os.path.abspath(ptx_path), "kernel": kernel, "grid": list(grid), "block": list(block),
               "shared_bytes": int(shared), "max_ms": self.max_ms, "args": job_args,
               "buffers": [{"path": p, "dtype": dt[f.dtype], "numel": f.numel()} for f, p in buffers]}
        self.proc.stdin.write(json.dumps(job) + "\n")
        line = self.proc.stdout.readline()
        if not line:
            raise LaunchFailed("crash", "the concrete interpreter (dirigo launch-job) exited")
        res = json.loads(line)
        if res["status"] != "ok":
            raise LaunchFailed(res["status"], res["detail"])
        for flat, path in buffers:
            vals = torch.from_numpy(np.fromfile(path, dtype="<f8"))
            flat.copy_(vals.to(flat.dtype))
        return res.get("findings", [])


class CudaLauncher:
    """Launches through the CUDA driver API on torch's current stream (PTX JIT-compiled by the driver)."""

    def __init__(self):
        import torch
        from cuda.bindings import driver as cu
        self.cu = cu
        torch.zeros(1, device="cuda")  # torch makes the primary context current
        self.modules: dict = {}

    def _ck(self, result):
        cu = self.cu
        err = result[0]
        if err != cu.CUresult.CUDA_SUCCESS:
            _, name = cu.cuGetErrorName(err)
            raise LaunchFailed("crash", "CUDA error " + (name.decode() if isinstance(name, bytes) else str(name)))
        return result[1] if len(result) == 2 else result[1:]

    def function(self, ptx_path: str, kernel: str):
        if ptx_path not in self.modules:
            data = open(ptx_path, "rb").read()
            image = np.frombuffer(data + b"\0", dtype=np.uint8)
            self.modules[ptx_path] = (self._ck(self.cu.cuModuleLoadData(image.ctypes.data)), data.decode(errors="replace"), {})
        module, text, funcs = self.modules[ptx_path]
        if kernel not in funcs:
            entry = find_entry(text, kernel)
            if entry is None:
                raise LaunchFailed("crash", f"no PTX entry for kernel {kernel}")
            funcs[kernel] = self._ck(self.cu.cuModuleGetFunction(module, entry.encode()))
        return funcs[kernel]

    _SCALAR = {"u8": np.uint8, "s8": np.int8, "u16": np.uint16, "s16": np.int16, "u32": np.uint32, "s32": np.int32,
               "u64": np.uint64, "s64": np.int64, "f32": np.float32, "f64": np.float64, "b32": np.uint32,
               "b64": np.uint64, "pred": np.uint8}

    def launch(self, ptx_path: str, kernel: str, grid, block, shared: int, args: list) -> list[str]:
        import torch
        if min(list(grid) + list(block)) <= 0:
            raise LaunchFailed("crash", f"launch of {kernel} with a zero dimension (invalid configuration)")
        fn = self.function(ptx_path, kernel)
        vals = []
        for a in args:
            if isinstance(a, torch.Tensor):
                vals.append(np.array([a.data_ptr()], dtype=np.uint64))
            else:
                (value, ty), off = a
                if off:
                    vals[-1] = vals[-1] + np.uint64(off)
                    continue
                if ty not in self._SCALAR:
                    raise ReplayUnsupported(f"scalar argument of PTX type {ty}")
                v = value
                if ty.startswith("u") and int(v) < 0:
                    v = int(v) % (1 << (8 * np.dtype(self._SCALAR[ty]).itemsize))
                vals.append(np.array([v], dtype=self._SCALAR[ty]))
        argv = np.array([v.ctypes.data for v in vals], dtype=np.uint64)
        stream = self.cu.CUstream(torch.cuda.current_stream().cuda_stream)
        self._ck(self.cu.cuLaunchKernel(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], int(shared),
                                        stream, argv.ctypes.data, 0))
        self._ck(self.cu.cuStreamSynchronize(stream))  # a fault surfaces here, before the next ATen op
        return []

    def close(self):
        pass


def _decode(arg: dict, env: dict, device: str, where: str):
    from .replay import ReplayError, _decode as decode
    if "device" in arg:
        import torch
        return torch.device(device)
    if "list" in arg:
        return [_decode(a, env, device, where) for a in arg["list"]]
    try:
        return decode(arg, env, where)
    except ReplayError as e:
        raise ReplayUnsupported(str(e)) from None


class BundleProgram:
    """One program of a bundle (default: the candidate), ready to run on new inputs."""

    def __init__(self, bundle: str, program: str | None = None):
        self.dir = bundle
        self.manifest = json.load(open(os.path.join(bundle, "manifest.json")))
        progs = self.manifest["programs"]
        if program is None:
            cands = [p for p in progs if p.get("role") == "candidate"] or [p for p in progs if p["name"] == "new"]
            if not cands:
                raise ReplayUnsupported(f"{bundle}: no candidate program")
            self.prog = cands[0]
        else:
            self.prog = next((p for p in progs if p["name"] == program), None)
            if self.prog is None:
                raise ReplayUnsupported(f"{bundle}: no program {program!r}")
        self.modules = {m["id"]: os.path.join(bundle, m["path"]) for m in self.manifest.get("modules", [])}
        self.tensors = {t["id"]: t for t in self.prog["tensors"]}
        for op in self.prog["ops"]:
            if op["kind"] not in ("aten", "launch", "copy"):
                raise ReplayUnsupported(f"{bundle}: a {op['kind']} op ({op.get('name', '')}) is not replayed")
        self.launches = [op for op in self.prog["ops"] if op["kind"] == "launch"]

    def input_names(self, kind: str | None = None) -> list[str]:
        return [i["name"] for i in self.prog["inputs"] if kind is None or i.get("kind", "input") == kind]

    def constant(self, inp: dict, device: str):
        import torch
        t = self.tensors[inp["tensor"]]
        if "data" not in inp:
            raise ReplayUnsupported(f"constant input {inp['name']} has no data file")
        dt = torch_dtype(t["dtype"])
        raw = np.fromfile(os.path.join(self.dir, inp["data"]), dtype=np.uint8)
        return torch.from_numpy(raw.copy()).view(dt).reshape(t["shape"]).to(device)

    def run(self, bindings: dict, launcher, device: str = "cpu", ptx: dict | None = None,
            launch_overrides: dict | None = None) -> list:
        """Outputs of the program for `bindings` (input name -> tensor). `ptx`: module id -> PTX path
        (default the bundle's own); `launch_overrides`: launch index -> {grid, block, shared_bytes}."""
        import torch
        from torch.utils._pytree import tree_leaves
        env = {}
        for inp in self.prog["inputs"]:
            if inp.get("constant"):
                env[inp["tensor"]] = self.constant(inp, device)
            elif inp["name"] in bindings:
                env[inp["tensor"]] = bindings[inp["name"]]
            else:
                raise ReplayUnsupported(f"no value for input {inp['name']} of the bundle")
        modules = dict(self.modules, **(ptx or {}))
        k_launch = 0
        with torch.no_grad():
            for k, op in enumerate(self.prog["ops"]):
                where = f"op {k} ({op.get('name', op['kind'])})"
                if op["kind"] == "aten":
                    ns, _, name = op["name"].partition("::")
                    func = getattr(getattr(getattr(torch.ops, ns), name), op["overload"])
                    args = [_decode(a, env, device, where) for a in op["args"]]
                    kwargs = {n: _decode(a, env, device, where) for n, a in op["kwargs"].items()}
                    if "pin_memory" in kwargs and device == "cpu":
                        kwargs["pin_memory"] = None
                    result = func(*args, **kwargs)
                    outs = [x for x in tree_leaves(result) if isinstance(x, torch.Tensor)]
                    for tid, t in zip(op["outputs"], outs):
                        env[tid] = t
                elif op["kind"] == "copy":
                    dst, src = env[op["dst"]["tensor"]], env[op["src"]["tensor"]]
                    n = op["nbytes"]
                    d = dst.reshape(-1).view(torch.uint8)[op["dst"].get("byte_offset", 0):][:n]
                    d.copy_(src.reshape(-1).view(torch.uint8)[op["src"].get("byte_offset", 0):][:n])
                else:
                    args = []
                    for a in op["args"]:
                        if "tensor" in a:
                            if a["tensor"] not in env:
                                raise ReplayUnsupported(f"{where}: tensor {a['tensor']} is not produced by the replay")
                            args.append(env[a["tensor"]])
                            if a.get("byte_offset"):
                                args.append(((0, "u64"), int(a["byte_offset"])))
                        elif "scalar" in a:
                            args.append(((a["scalar"], a["type"]), 0))
                        else:
                            raise ReplayUnsupported(f"{where}: a launch argument of kind {sorted(a)}")
                    ov = (launch_overrides or {}).get(k_launch, {})
                    grid = ov.get("grid", op["grid"])
                    block = ov.get("block", op["block"])
                    shared = ov.get("shared_bytes", op.get("shared_bytes", 0))
                    pad = lambda d: (list(d) + [1, 1, 1])[:3]
                    launcher.launch(modules[op["module"]], op["kernel"], pad(grid), pad(block), shared, args)
                    k_launch += 1
        return [env[o["tensor"]] for o in self.prog["outputs"]]

    def traced_bindings(self, device: str = "cpu") -> dict:
        """The traced values of every input that has a data file."""
        import torch
        out = {}
        for inp in self.prog["inputs"]:
            if "data" in inp and os.path.exists(os.path.join(self.dir, inp["data"])):
                out[inp["name"]] = self.constant(inp, device)
        return out


def make_launcher(device: str, dirigo: str | None = None, max_ms: float = 3000):
    return CudaLauncher() if device == "cuda" else CpuLauncher(dirigo, max_ms)


def main(argv: list[str] | None = None) -> int:
    import argparse
    import torch
    ap = argparse.ArgumentParser(prog="python -m dirigo.bundle_run")
    ap.add_argument("bundle")
    ap.add_argument("--ptx", action="append", default=[], help="MODULE=PATH")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    a = ap.parse_args(argv)
    prog = BundleProgram(a.bundle)
    launcher = make_launcher(a.device)
    try:
        outs = prog.run(prog.traced_bindings(a.device), launcher, a.device, dict(p.split("=", 1) for p in a.ptx))
    except LaunchFailed as e:
        print(f"{e.status}: {e.detail}")
        return 1
    finally:
        launcher.close()
    for o, rec in zip(outs, prog.prog["outputs"]):
        line = f"{rec['name']}: shape {list(o.shape)}"
        if "data" in rec and os.path.exists(os.path.join(a.bundle, rec["data"])):
            t = prog.tensors[rec["tensor"]]
            raw = np.fromfile(os.path.join(a.bundle, rec["data"]), dtype=np.uint8)
            traced = torch.from_numpy(raw.copy()).view(torch_dtype(t["dtype"])).reshape(t["shape"])
            line += f", max |replayed - traced| = {(o.cpu().double() - traced.double()).abs().max().item():.3g}"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
