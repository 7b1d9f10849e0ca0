"""Triton kernel launches: recorded through Triton's own launch path, turned into bundle launch ops.

Triton launches through the CUDA driver API from a launcher it compiles itself, so the runtime-API shim
(shim/launch_shim.c) never sees these launches. Every Triton launch, whether from `kernel[grid](...)`,
an autotuned or heuristics-wrapped kernel, or a compiled kernel called directly, goes through
`CompiledKernel.run(gridX, gridY, gridZ, stream, function, packed_metadata, launch_metadata,
enter_hook, exit_hook, *args)` with every bound argument of the kernel, constexprs included. `install()`
wraps that property, so a launch is recorded with exactly the grid and arguments the launcher gets, and
the compiled kernel object gives the rest: its PTX (`asm["ptx"]`), entry name, `num_warps` (block =
32·num_warps threads), dynamic shared memory (`metadata.shared`) and the signature that says which
arguments are constexprs (baked into the PTX, not parameters). Triton's entries take two trailing
`.ptr` parameters (global and profile scratch), passed as null when the kernel needs none.

Without a GPU (`compile_only`), a stand-in driver targets sm_90 (the H200's PTX: the same Triton
version gives the same text) and launches nothing: the launch is recorded and the kernel's outputs keep
whatever the program put there, so the candidate's output values are not recorded (`values_missing`).

Autotuning runs the candidate configurations (GPU) before the chosen one; those benchmark launches and
the ATen ops of benchmarking (cache flushes, resets) are not part of the program and are not recorded.
Without a GPU no configuration can be timed: the first one is chosen (as if all timed equal).
"""
from __future__ import annotations

import contextlib
import hashlib
import struct

_REC = None          # the Recorder of the forward being traced
_QUIET = 0           # > 0 while autotuning benchmarks run
_COMPILE_ONLY = False
_INSTALLED = False
_AUTOTUNING: list = []  # configs chosen by the autotuners whose run is in progress (innermost last)
TARGET_ARCH = 90


def available() -> bool:
    try:
        import triton  # noqa: F401
        return True
    except Exception:  # noqa: BLE001 - any import failure means no Triton
        return False


def uses_triton(*loaded) -> bool:
    """Whether a loaded program may launch Triton kernels: loading it imported triton (its kernels may be
    defined in a module it imports, so its own namespace is not enough; dirigo.load.watch_imports). Not
    "triton in sys.modules": the warm worker's torch._dynamo import brings triton into every child."""
    return any(getattr(f, "imports_triton", False) for f in loaded)


class _CompileOnlyUtils:
    def get_device_properties(self, device):
        return {"max_shared_mem": 232448, "multiprocessor_count": 132, "max_num_regs": 65536,
                "warpSize": 32, "sm_clock_rate": 1980000, "mem_clock_rate": 2619000, "mem_bus_width": 5120}

    def load_binary(self, name, kernel, shared, device):
        return 0, 0, 0, 0, 1024  # module, function, n_regs, n_spills, n_max_threads


class _CompileOnlyLauncher:
    def __init__(self, src, metadata):
        pass

    def __call__(self, *args):
        return None


def _compile_only_driver():
    """A Triton driver for a machine without a GPU: compiles for sm_90, launches nothing."""
    from triton.backends.compiler import GPUTarget
    from triton.backends.driver import DriverBase

    class CompileOnlyDriver(DriverBase):
        def __init__(self):
            self.utils = _CompileOnlyUtils()
            self.launcher_cls = _CompileOnlyLauncher

        @staticmethod
        def is_active():
            return False

        def get_current_target(self):
            return GPUTarget("cuda", TARGET_ARCH, 32)

        def get_current_device(self):
            return 0

        def set_current_device(self, device):
            pass

        def get_current_stream(self, device=None):
            return 0

        def get_active_torch_device(self):
            import torch
            return torch.device("cpu")

        def get_device_interface(self):
            import torch
            return torch.cuda

        def get_device_capability(self, device=None):
            return (TARGET_ARCH // 10, TARGET_ARCH % 10)

        def map_python_to_cpp_type(self, ty):
            return ty

        def get_benchmarker(self):
            return lambda kernel_call, quantiles=None, **kw: [1.0, 1.0, 1.0]  # nothing can be timed

        def get_empty_cache_for_benchmark(self):
            return None

        def clear_cache(self, cache):
            pass

    return CompileOnlyDriver()


def install(compile_only: bool | None = None) -> None:
    """Wrap Triton's launch path (once per process). compile_only: no GPU (default: when CUDA is absent)."""
    global _INSTALLED, _COMPILE_ONLY
    if _INSTALLED:
        return
    import torch
    from triton.compiler.compiler import CompiledKernel
    from triton.runtime import autotuner
    from triton.runtime.driver import driver
    if compile_only is None:
        compile_only = not torch.cuda.is_available()
    _COMPILE_ONLY = compile_only
    if compile_only:
        driver.set_active(_compile_only_driver())

    real_run = CompiledKernel.run  # the property

    def run(self):
        launcher = None if _COMPILE_ONLY else real_run.fget(self)
        if _COMPILE_ONLY:
            self._init_handles()

        def launch(gx, gy, gz, stream, function, packed_metadata, launch_metadata, enter_hook, exit_hook, *args):
            if _REC is not None and not _QUIET:
                _record(self, (gx, gy, gz), stream, args)
            if launcher is None:
                return None
            hook = _REC.launch_hook if _REC is not None else None
            if hook is not None:  # recorded above: a driver-API interposition must not record it again
                hook.before_op()
            try:
                return launcher(gx, gy, gz, stream, function, packed_metadata, launch_metadata, enter_hook,
                                exit_hook, *args)
            finally:
                if hook is not None:
                    hook.after_op()
        return launch

    CompiledKernel.run = property(run)

    real_bench = autotuner.Autotuner._bench

    def _bench(self, *args, **kwargs):
        with _quiet():
            return real_bench(self, *args, **kwargs)

    real_tune_run = autotuner.Autotuner.run

    def tune_run(self, *args, **kwargs):
        hook = self.pre_hook

        def pre_hook(nargs, reset_only=False):  # the reset after benchmarking belongs to the tuning
            if reset_only:
                with _quiet():
                    return hook(nargs, reset_only=True)
            return hook(nargs, reset_only=reset_only)
        self.pre_hook = pre_hook
        _AUTOTUNING.append(self)
        try:
            return real_tune_run(self, *args, **kwargs)
        finally:
            _AUTOTUNING.pop()
            self.pre_hook = hook

    autotuner.Autotuner._bench = _bench
    autotuner.Autotuner.run = tune_run
    _INSTALLED = True


@contextlib.contextmanager
def _quiet():
    """Nothing recorded: no Triton launch, no ATen op (the dispatch mode is lifted), no shim launch."""
    global _QUIET
    from torch.utils._python_dispatch import _disable_current_modes
    hook = _REC.launch_hook if _REC is not None else None
    _QUIET += 1
    try:
        with _disable_current_modes():
            if hook is not None:
                hook.before_op()
            try:
                yield
            finally:
                if hook is not None:
                    hook.after_op()
    finally:
        _QUIET -= 1


@contextlib.contextmanager
def recording(rec):
    """Record the Triton launches made while the block runs into rec.ops (as `_triton` placeholders)."""
    global _REC
    prev, _REC = _REC, rec
    try:
        yield
    finally:
        _REC = prev


def _f32(v: float) -> float:
    return struct.unpack("<f", struct.pack("<f", float(v)))[0]


class Unsupported(Exception):
    pass


def _record(kernel, grid, stream, args) -> None:
    rec = _REC
    import torch
    src = kernel.src
    sig = getattr(src, "signature", None)
    names = list(getattr(getattr(src, "fn", None), "arg_names", []) or [])
    md = kernel.metadata
    raw = {"kernel": kernel.name, "ptx": kernel.asm["ptx"], "grid": [int(g) for g in grid],
           "block": [int(md.num_warps) * 32, 1, 1], "shared": int(md.shared), "stream": int(stream or 0),
           "args": [], "constexprs": {}, "num_warps": int(md.num_warps), "num_stages": int(md.num_stages),
           "scratch": [int(getattr(md, "global_scratch_size", 0)), int(getattr(md, "profile_scratch_size", 0))]}
    if _AUTOTUNING and _AUTOTUNING[-1].best_config is not None:
        raw["autotuned"] = str(_AUTOTUNING[-1].best_config)
    if getattr(md, "num_ctas", 1) != 1:
        raw["unsupported"] = f"num_ctas={md.num_ctas} (thread-block clusters)"
    if sig is None:
        raw["unsupported"] = "a compiled kernel that is not from a @triton.jit source"
        rec.ops.append({"kind": "launch", "_triton": raw})
        return
    hook = rec.launch_hook
    from torch.utils._python_dispatch import _disable_current_modes
    with _disable_current_modes():  # recording a first-seen tensor copies it: not a program op
        if hook is not None:
            hook.before_op()  # flushes the shim's earlier launches, so the order is the program's
        try:
            for i, (name, ty) in enumerate(sig.items()):
                v = args[i] if i < len(args) else None
                if ty == "constexpr":
                    raw["constexprs"][name] = v if isinstance(v, (int, float, bool, str)) or v is None else repr(v)
                    continue
                if isinstance(ty, tuple) or isinstance(v, (tuple, list)):
                    raw["unsupported"] = f"argument {name}: a tuple argument ({ty})"
                    raw["args"].append({"bytes": ""})
                    continue
                if ty.startswith("*"):
                    if isinstance(v, torch.Tensor):
                        raw["args"].append({"tensor": rec.tensor_id(v), "byte_offset": 0})
                    else:
                        raw["unsupported"] = f"argument {name}: a {type(v).__name__} as pointer ({ty})"
                        raw["args"].append({"pointer": hex(int(v.data_ptr())) if hasattr(v, "data_ptr") else "0x0",
                                            "unbound": True})
                    continue
                if ty in ("fp32", "f32"):
                    raw["args"].append({"scalar": _f32(v), "ptype": ty})
                elif ty.startswith("fp") or ty in ("bf16",):
                    raw["args"].append({"scalar": float(v), "ptype": ty})
                elif ty in ("i1", "u1"):
                    raw["args"].append({"scalar": int(bool(v)), "ptype": ty})
                elif ty[0] in "iu" and ty[1:].isdigit():
                    raw["args"].append({"scalar": int(v), "ptype": ty})
                else:
                    raw["unsupported"] = f"argument {name}: Triton type {ty}"
                    raw["args"].append({"bytes": ""})
        finally:
            if hook is not None:
                hook.after_op()
    raw["arg_names"] = [n for n in sig if sig[n] != "constexpr"]
    rec.ops.append({"kind": "launch", "_triton": raw})


def _scalar_arg(a: dict, ptype: str) -> dict:
    import math
    v = a["scalar"]
    if ptype in ("f32", "f64", "f16", "bf16"):
        v = float(v)
        if not math.isfinite(v):
            v = "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
        return {"scalar": v, "type": ptype}
    if ptype == "pred":
        return {"scalar": bool(v), "type": "pred"}
    if ptype.startswith("b"):  # untyped bits: an integer of that width
        ptype = "u" + ptype[1:]
    return {"scalar": int(v), "type": ptype}


def finalize(rec, prog_name: str, modules: list[dict]) -> bool:
    """Turn the `_triton` placeholders in rec.ops into launch ops, adding one module per distinct PTX to
    `modules` (ids `<prog>_t<k>`). Returns whether any Triton launch was recorded."""
    from .launch import ptx_entries
    by_sha = {hashlib.sha256(m["ptx"].encode()).hexdigest(): m for m in modules if "ptx" in m}
    any_launch = False
    for i, op in enumerate(rec.ops):
        raw = op.get("_triton") if op["kind"] == "launch" else None
        if raw is None:
            continue
        any_launch = True
        sha = hashlib.sha256(raw["ptx"].encode()).hexdigest()
        mod = by_sha.get(sha)
        if mod is None:
            mid = f"{prog_name}_t{sum(1 for m in modules if m['id'].startswith(prog_name + '_t'))}"
            mod = {"id": mid, "path": f"ptx/{mid}.ptx", "source": f"triton:{raw['kernel']}", "ptx": raw["ptx"],
                   "compile": {"arch": f"sm_{TARGET_ARCH}a" if _COMPILE_ONLY else "",
                                                   "flags": [f"num_warps={raw['num_warps']}",
                                                             f"num_stages={raw['num_stages']}"]}}
            if not _COMPILE_ONLY:
                import re
                t = re.search(r"^\.target\s+(\w+)", raw["ptx"], re.M)
                mod["compile"]["arch"] = t.group(1) if t else ""
            modules.append(mod)
            by_sha[sha] = mod
        params = ptx_entries(raw["ptx"]).get(raw["kernel"], [])
        args = []
        for k, a in enumerate(raw["args"]):
            p = params[k] if k < len(params) else {"type": "b64"}
            if "scalar" in a:
                args.append(_scalar_arg(a, p.get("type") or "b64"))
            else:
                args.append(a)
        for k in range(len(raw["args"]), len(params)):  # the trailing scratch pointers: null unless used
            args.append({"pointer": "0x0", "unbound": True})
        launch = {"kind": "launch", "module": mod["id"], "kernel": raw["kernel"], "grid": raw["grid"],
                  "block": raw["block"], "shared_bytes": raw["shared"], "args": args, "stream": raw["stream"],
                  "source_lines": ".loc" in raw["ptx"],
                  "triton": {"arg_names": raw.get("arg_names", []), "constexprs": raw["constexprs"],
                             "num_warps": raw["num_warps"], "num_stages": raw["num_stages"],
                             "compiled_only": _COMPILE_ONLY}}
        if raw.get("autotuned"):
            launch["triton"]["autotuned"] = raw["autotuned"]
        if len(params) != len(raw["args"]) + 2:
            launch["unresolved"] = (f"Triton kernel {raw['kernel']}: {len(raw['args'])} arguments and 2 scratch "
                                    f"pointers, but its PTX entry declares {len(params)} parameters")
        if any(raw["scratch"]):
            launch["triton"]["scratch_bytes"] = raw["scratch"]
        if raw.get("unsupported"):
            launch["unresolved"] = f"Triton kernel {raw['kernel']}: {raw['unsupported']}"
        rec.ops[i] = launch
    return any_launch


def compile_only() -> bool:
    return _COMPILE_ONLY
