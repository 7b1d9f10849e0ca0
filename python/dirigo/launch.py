"""Kernel launches: the LD_PRELOAD shim (shim/launch_shim.c) and turning its records into bundle ops, and
PTX extraction from the extension libraries a program built.

The shim records cudaLaunchKernel calls made while recording is enabled. The tracer enables it for the
whole traced forward *except* inside ATen ops (PyTorch's own kernels belong to the op that launched them),
so what is recorded is exactly the launches made by the program's own code (extensions, or anything else
calling the CUDA runtime). Pointer parameters are bound to tensors by address range over the storages
the recorder has seen (it keeps them all alive, so ranges are not reused during a trace).
"""
from __future__ import annotations

import ctypes
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile

from .common import pointer_binder

SHIM_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "shim", "launch_shim.c")
CUBLAS_SHIM_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "shim", "cublas_shim.c")
SHIM_LOG_HEADER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "shim", "shim_log.h")

_PTX_PARAM_TYPES = {"u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "f16", "bf16", "f32", "f64", "pred",
                    "b8", "b16", "b32", "b64"}


def _cache_dir() -> str:
    d = os.environ.get("DIRIGO_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "dirigo")
    os.makedirs(d, exist_ok=True)
    return d


def build_shim(out_dir: str | None = None, cc: str | None = None, source: str | None = None) -> str:
    """Compile a shim (plain C, no CUDA headers needed; default: the launch shim); cached by source hash.
    Returns the .so path."""
    source = source or SHIM_SOURCE
    h = hashlib.sha256()
    for part in (source, SHIM_LOG_HEADER):  # the shims include shim_log.h: a change there rebuilds them
        with open(part, "rb") as fh:
            h.update(fh.read())
    digest = h.hexdigest()[:16]
    stem = os.path.splitext(os.path.basename(source))[0].replace("_", "-")
    out = os.path.join(out_dir or _cache_dir(), f"libdirigo-{stem}-{digest}.so")
    if not os.path.exists(out):
        cc = cc or os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
        if not cc:
            raise RuntimeError("no C compiler (cc/gcc) to build the launch shim")
        tmp = out + f".tmp{os.getpid()}"
        subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", tmp, source, "-ldl", "-lpthread"], check=True,
                       capture_output=True)
        os.replace(tmp, out)
    return out


def shim_path() -> str | None:
    """The shims to LD_PRELOAD for GPU tracing (launch, then cuBLAS; built when CUDA is present), or None."""
    try:
        import torch
        if not torch.cuda.is_available():
            return None
        return build_shim() + ":" + build_shim(source=CUBLAS_SHIM_SOURCE)
    except Exception:  # noqa: BLE001 - tracing still records ATen ops without it
        return None


def _shim_lib():
    """The preloaded shim, or None when this process was not started with it."""
    try:
        lib = ctypes.CDLL(None)
        lib.dirigo_shim_drain  # noqa: B018 - raises AttributeError when absent
    except (OSError, AttributeError):
        return None
    lib.dirigo_shim_drain.restype = ctypes.c_size_t
    lib.dirigo_shim_drain.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    lib.dirigo_shim_set_enabled.argtypes = [ctypes.c_int]
    try:  # the cuBLAS shim (dirigo.cublas), when preloaded too
        lib.dirigo_cublas_drain.restype = ctypes.c_size_t
        lib.dirigo_cublas_drain.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        lib.dirigo_cublas_set_enabled.argtypes = [ctypes.c_int]
        lib.has_cublas = True
    except AttributeError:
        lib.has_cublas = False
    return lib


def drain(lib, fn=None) -> list[dict]:
    """Launch records, in program order. With the cuBLAS shim, its log (launches moved there before each
    library call, then the call) comes first, then the launch shim's rest."""
    if fn is None:
        return (drain(lib, lib.dirigo_cublas_drain) if getattr(lib, "has_cublas", False) else []) + \
            drain(lib, lib.dirigo_shim_drain)
    need = fn(None, 0)
    if need <= 1:
        return []
    buf = ctypes.create_string_buffer(need + 4096)  # room for records appended meanwhile
    n = fn(buf, len(buf))
    if n >= len(buf):  # grew past our buffer: try once more, larger
        buf = ctypes.create_string_buffer(n + (1 << 20))
        n = fn(buf, len(buf))
    return [json.loads(ln) for ln in buf.raw[:n].decode("utf-8", "replace").splitlines() if ln.strip()]


class LaunchHook:
    """Connects a Recorder to the shim: records launches made outside ATen ops, in program order."""

    def __init__(self, rec, lib):
        self.rec, self.lib = rec, lib
        self.depth = 0

    @classmethod
    def attach(cls, rec):
        lib = _shim_lib()
        if lib is None:
            return None
        hook = cls(rec, lib)
        rec.launch_hook = hook
        drain(lib)  # discard launches from set-up (model construction, input generation)
        hook._set(1)
        return hook

    def _set(self, on: int):
        self.lib.dirigo_shim_set_enabled(on)
        if self.lib.has_cublas:
            self.lib.dirigo_cublas_set_enabled(on)

    def _flush(self):
        for r in drain(self.lib):
            if "sync" in r:  # an event record / wait / synchronize: dirigo.streams orders the streams with it
                self.rec.ops.append({"kind": "stream-sync", "sync": r["sync"],
                                     "stream": int(r["stream"], 16) if "stream" in r else None,
                                     "event": int(r["event"], 16) if "event" in r else None})
                continue
            self.rec.ops.append({"kind": "library" if "library" in r else "launch", "_raw": r})

    def before_op(self):
        self._flush()
        self.depth += 1
        self._set(0)

    def run_op(self, func, args, kwargs):
        return func(*args, **kwargs)

    def after_op(self):
        self.depth -= 1
        if self.depth == 0:
            self._set(1)

    def stop(self):
        """Recording off before the tracer's own synchronize (it is not the program's)."""
        self._set(0)
        self.depth = 1 << 20  # no op re-enables it

    def detach(self):
        import torch
        self.stop()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        self._flush()
        self.rec.launch_hook = None


# ---------------------------------------------------------------------------------------------------------
# PTX

def extract_ptx(library: str, cuobjdump: str | None = None) -> list[dict]:
    """PTX sections embedded in a shared object (cuobjdump -ptx); [{"arch": "sm_90", "ptx": text}]."""
    tool = cuobjdump or shutil.which("cuobjdump") or "/usr/local/cuda/bin/cuobjdump"
    if not os.path.exists(tool) and not shutil.which(tool):
        raise RuntimeError("cuobjdump not found: cannot extract PTX (install the CUDA toolkit)")
    p = subprocess.run([tool, "-ptx", library], capture_output=True, text=True)
    if p.returncode != 0:
        msg = (p.stderr or p.stdout).strip().splitlines()
        raise RuntimeError(f"cuobjdump -ptx {library} failed: {msg[-1] if msg else p.returncode}")
    sections = []
    # cuobjdump prints every embedded image behind a banner ("Fatbin ptx code:" or "Fatbin elf
    # code:"); keep only the PTX ones, each up to the next banner of either kind.
    parts = re.split(r"^Fatbin (ptx|elf) code:\s*$", p.stdout, flags=re.M)
    for kind, chunk in zip(parts[1::2], parts[2::2]):
        if kind != "ptx":
            continue
        lines = chunk.splitlines()
        arch = next((ln.split("=", 1)[1].strip() for ln in lines if ln.startswith("arch =")), "")
        start = next((i for i, ln in enumerate(lines) if ln.startswith("//") or ln.startswith(".version")), None)
        if start is None:
            continue
        sections.append({"arch": arch, "ptx": "\n".join(lines[start:]).strip() + "\n"})
    return sections


def compile_ptx(cu_path: str, flags: list[str] | None = None, include_dirs: list[str] | None = None,
                nvcc: str | None = None) -> list[dict]:
    """PTX of a CUDA source by `nvcc -ptx` with the extension's flags (the -gencode pairs become one
    -arch=compute_XX), for machines without cuobjdump. Same source and macros give the same entries."""
    tool = nvcc or shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    flags = list(flags or [])
    arch = "compute_90"
    kept, i = [], 0
    while i < len(flags):
        f = flags[i]
        if f == "-gencode" and i + 1 < len(flags):
            m = re.search(r"arch=(compute_\w+)", flags[i + 1])
            arch = m.group(1) if m else arch
            i += 2
            continue
        if not re.match(r"-(arch|code)\b", f):
            kept.append(f)
        i += 1
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.ptx")
        cmd = [tool, "-ptx", f"-arch={arch}", "-o", out, cu_path] + kept + [f"-I{p}" for p in include_dirs or []]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            msg = (p.stderr or p.stdout).strip().splitlines()
            raise RuntimeError(f"nvcc -ptx {cu_path} failed: {msg[-1] if msg else p.returncode}")
        with open(out) as fh:
            return [{"arch": arch.replace("compute_", "sm_"), "ptx": fh.read()}]


def _extension_ptx(ext) -> list[dict]:
    """The PTX of an extension: from its library (cuobjdump) or by recompiling its CUDA source."""
    if shutil.which("cuobjdump") or os.path.exists("/usr/local/cuda/bin/cuobjdump"):
        return extract_ptx(ext.library_path)
    cu_files = [s for s in ext.sources if s.endswith(".cu")]
    if not cu_files and ext.build_directory and os.path.exists(os.path.join(ext.build_directory, "cuda.cu")):
        cu_files = [os.path.join(ext.build_directory, "cuda.cu")]  # what load_inline compiled
    import sysconfig
    from torch.utils import cpp_extension as ce
    incs = list(ce.include_paths(device_type="cuda")) + [sysconfig.get_paths()["include"]]
    flags = list(ext.extra_cuda_cflags) + [f"-DTORCH_EXTENSION_NAME={ext.name}", "-DTORCH_API_INCLUDE_EXTENSION_H"]
    return [sec for cu in cu_files for sec in compile_ptx(cu, flags, incs)]


def ptx_entries(ptx: str) -> dict[str, list[dict]]:
    """Entry name -> its parameters [{"type": "u64"} | {"bytes": n, "align": a}] in order."""
    entries = {}
    for m in re.finditer(r"\.entry\s+([\w$.]+)\s*\(([^)]*)\)", ptx):
        params = []
        for decl in m.group(2).split(","):
            decl = decl.strip()
            if not decl:
                continue
            arr = re.search(r"\.b8\s+[\w$]+\[(\d+)\]", decl)
            if arr:
                al = re.search(r"\.align\s+(\d+)", decl)
                params.append({"bytes": int(arr.group(1)), "align": int(al.group(1)) if al else 1})
                continue
            t = next((tok[1:] for tok in decl.split() if tok.startswith(".") and tok[1:] in _PTX_PARAM_TYPES), None)
            params.append({"type": t or "b64", "ptr": ".ptr" in decl.split()})
        entries[m.group(1)] = params
    return entries


def collect_modules(extensions, prog_name: str) -> list[dict]:
    """Bundle modules for every PTX section of the extensions a program built (with "ptx" text attached)."""
    modules = []
    for ext in extensions:
        if not ext.library_path or not (ext.cuda_sources or ext.sources):
            continue
        for sec in _extension_ptx(ext):
            mid = f"{prog_name}_m{len(modules)}"
            modules.append({"id": mid, "path": f"ptx/{mid}.ptx", "source": ext.name, "ptx": sec["ptx"],
                            "compile": {"arch": sec["arch"], "flags": ext.extra_cuda_cflags}})
    return modules


def _decode_scalar(hexbytes: str, ptx_type: str):
    import struct
    raw = bytes.fromhex(hexbytes)
    fmt = {"u8": "<B", "u16": "<H", "u32": "<I", "u64": "<Q", "s8": "<b", "s16": "<h", "s32": "<i", "s64": "<q",
           "b8": "<B", "b16": "<H", "b32": "<I", "b64": "<Q", "f32": "<f", "f64": "<d", "pred": "<B"}.get(ptx_type)
    if fmt is None or struct.calcsize(fmt) != len(raw):
        return None
    v = struct.unpack(fmt, raw)[0]
    return bool(v) if ptx_type == "pred" else v


def finalize_launches(rec, modules: list[dict]) -> None:
    """Turn raw shim records in rec.ops into launch ops: module, kernel, args bound to tensors."""
    import math
    entry_module = {}
    for m in modules:
        for name, params in ptx_entries(m["ptx"]).items():
            entry_module.setdefault(name, (m["id"], params))
    bind = pointer_binder(rec)

    out = []
    for op in rec.ops:
        raw = op.get("_raw") if op["kind"] == "launch" else None
        if raw is None:
            out.append(op)
            continue
        name = raw["kernel"]
        mod = entry_module.get(name)
        launch = {"kind": "launch", "module": mod[0] if mod else None, "kernel": name, "grid": raw["grid"],
                  "block": raw["block"], "shared_bytes": raw["shared"], "args": [],
                  "stream": int(raw["stream"], 16), "stream_flags": raw.get("stream_flags"), "source_lines": False}
        if mod:
            launch["source_lines"] = ".loc" in next(m["ptx"] for m in modules if m["id"] == mod[0])
        params = mod[1] if mod else []
        for i, p in enumerate(raw["params"] or []):
            _, size, hexbytes = p
            ptype = params[i].get("type") if i < len(params) else None
            is_ptr = i < len(params) and params[i].get("ptr")
            if ptype in ("u64", "b64", "s64") and size == 8:
                ptr = int.from_bytes(bytes.fromhex(hexbytes), "little")
                b = bind(ptr) if ptr else None
                if b is not None:  # an address inside a live tensor's storage
                    launch["args"].append(b)
                    continue
                if is_ptr:
                    launch["args"].append({"pointer": hex(ptr), "unbound": True})
                    continue
            if ptype is not None:
                v = _decode_scalar(hexbytes, ptype)
                if v is not None:
                    if isinstance(v, float) and not math.isfinite(v):
                        v = "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
                    launch["args"].append({"scalar": v, "type": ptype})
                    continue
            launch["args"].append({"bytes": hexbytes})
        if mod is None:
            launch["unresolved"] = f"no module defines .entry {name!r} (kernel not from a traced extension)"
        out.append(launch)
    rec.ops[:] = out
