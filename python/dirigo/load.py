"""Loading the programs dirigo compares: KernelBench references and candidates, the functional form,
and AI CUDA Engineer `.cu` files. Loading executes user code: call it only inside the tracing subprocess.

Parameters are made equal the way KernelBench does it: `torch.manual_seed(seed)` before `get_init_inputs()`
and again before constructing each model, so a candidate that builds the same layers in the same order
gets the same parameter values. Inputs always come from the *reference's* `get_inputs()` under a seed.
"""
from __future__ import annotations

import contextlib
import inspect
import os
import re
import sys
import threading
import time
import types
from dataclasses import dataclass, field
from typing import Any, Callable

from .common import extension_builders

INIT_SEED = 42


class NeedsGPU(RuntimeError):
    """The program compiles or launches CUDA code and this machine cannot run it."""


class LoadError(RuntimeError):
    """The file is not a program of a form dirigo knows."""


def kernelbench_trial_seeds(seed: int = INIT_SEED, n: int = 2) -> list[int]:
    """The per-trial input seeds KernelBench's run_and_check_correctness derives from `seed`."""
    import torch
    g = torch.Generator().manual_seed(seed)
    return [int(torch.randint(0, 2**32 - 1, (1,), generator=g).item()) for _ in range(n)]


# ---------------------------------------------------------------------------------------------------------
# C++/CUDA extension interception

@dataclass
class ExtensionRecord:
    """One call to load_inline / load made while loading a program."""
    name: str
    cpp_sources: list[str] = field(default_factory=list)
    cuda_sources: list[str] = field(default_factory=list)
    functions: Any = None
    extra_cuda_cflags: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)  # files, for load()
    build_directory: str | None = None
    library_path: str | None = None  # the built shared object, for PTX extraction
    compile_seconds: float | None = None  # wall time of the build call (reported apart from trace time)

    def to_json(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v not in (None, [], {})}


class ExtensionContext(threading.local):
    """Which extension function (if any) is running on this thread; read by the tracer to mark ops."""

    def __init__(self):
        self.stack: list[str] = []
        self.calls = 0
        self.on_enter: Callable[[str], None] | None = None
        self.on_exit: Callable[[str], None] | None = None


EXTENSION_CONTEXT = ExtensionContext()


def ptx_cuda_flags() -> list[str]:
    """nvcc flags that keep PTX in the fatbinary (plus SASS for the present GPU) and line info."""
    import torch
    major, minor = torch.cuda.get_device_capability()
    cc = f"{major}{minor}"
    return ["-gencode", f"arch=compute_{cc},code=sm_{cc}", "-gencode", f"arch=compute_{cc},code=compute_{cc}",
            "-lineinfo"]


class _ExtensionProxy(types.ModuleType):
    """Stands in for a compiled extension module: every call to one of its functions is marked, so the
    ATen ops it dispatches are recorded with "from": "extension"."""

    def __init__(self, real, name):
        super().__init__(getattr(real, "__name__", name))
        object.__setattr__(self, "_dirigo_real", real)
        object.__setattr__(self, "_dirigo_name", name)

    def __getattr__(self, attr):
        value = getattr(object.__getattribute__(self, "_dirigo_real"), attr)
        if not callable(value) or attr.startswith("__"):
            return value
        label = f"{object.__getattribute__(self, '_dirigo_name')}.{attr}"

        def call(*args, **kwargs):
            ctx = EXTENSION_CONTEXT
            ctx.stack.append(label)
            ctx.calls += 1
            if ctx.on_enter:
                ctx.on_enter(label)
            try:
                return value(*args, **kwargs)
            finally:
                ctx.stack.pop()
                if ctx.on_exit:
                    ctx.on_exit(label)
        call.__name__ = attr
        return call


def _as_list(v) -> list[str]:
    if v is None:
        return []
    return [v] if isinstance(v, str) else list(v)


@contextlib.contextmanager
def intercept_extensions(records: list[ExtensionRecord], allow_cuda: bool):
    """Patch torch.utils.cpp_extension.load_inline / load while user code is loaded: record the sources,
    add PTX-embedding flags to CUDA builds, wrap the returned module. Without a usable GPU a CUDA build
    raises NeedsGPU (no compile is attempted)."""
    import torch.utils.cpp_extension as ce
    orig_inline, orig_load = ce.load_inline, ce.load

    def load_inline(name, cpp_sources, cuda_sources=None, *args, **kwargs):
        rec = ExtensionRecord(name=name, cpp_sources=_as_list(cpp_sources), cuda_sources=_as_list(cuda_sources),
                              functions=kwargs.get("functions"))
        records.append(rec)
        if rec.cuda_sources:
            if not allow_cuda:
                raise NeedsGPU(f"the program compiles CUDA code with torch.utils.cpp_extension.load_inline "
                               f"(extension {name!r}); that needs a GPU and this machine has none "
                               f"(torch.cuda.is_available() is False)")
            flags = list(kwargs.get("extra_cuda_cflags") or [])
            flags = [f for f in flags if not re.match(r"-(arch|gencode|code)\b", f)] + ptx_cuda_flags()
            kwargs["extra_cuda_cflags"] = flags
            rec.extra_cuda_cflags = flags
        if rec.cuda_sources and os.environ.get("DIRIGO_EXTENSION_PCH") == "1":
            _use_precompiled_header(orig_inline, kwargs)
        t0 = time.monotonic()
        module = orig_inline(name, cpp_sources, cuda_sources, *args, **kwargs)
        rec.compile_seconds = round(time.monotonic() - t0, 3)
        _note_library(rec, module, kwargs)
        return _ExtensionProxy(module, name)

    def load(name, sources, *args, **kwargs):
        srcs = _as_list(sources)
        rec = ExtensionRecord(name=name, sources=srcs)
        records.append(rec)
        if any(s.endswith((".cu", ".cuh")) for s in srcs):
            if not allow_cuda:
                raise NeedsGPU(f"the program compiles CUDA files {srcs} with torch.utils.cpp_extension.load; "
                               f"that needs a GPU and this machine has none")
            flags = [f for f in (kwargs.get("extra_cuda_cflags") or []) if not re.match(r"-(arch|gencode|code)\b", f)]
            kwargs["extra_cuda_cflags"] = flags + ptx_cuda_flags()
            rec.extra_cuda_cflags = kwargs["extra_cuda_cflags"]
            rec.cuda_sources = [open(s).read() for s in srcs if s.endswith(".cu")]
        t0 = time.monotonic()
        module = orig_load(name, sources, *args, **kwargs)
        rec.compile_seconds = round(time.monotonic() - t0, 3)
        _note_library(rec, module, kwargs)
        return _ExtensionProxy(module, name)

    with extension_builders(load_inline, load):
        yield


def _use_precompiled_header(orig_inline, kwargs: dict) -> None:
    """DIRIGO_EXTENSION_PCH=1 (batch tracing, scripts/gpu/mutation.sh): build the C++ part against torch's
    precompiled torch/extension.h where this torch offers it. The header is one file for all builds and is
    rebuilt when the flags differ, so a batch gives the flag to programs with the same (here: no) extra C++
    flags only; an empty flag string is no flag."""
    if "use_pch" not in inspect.signature(orig_inline).parameters or "use_pch" in kwargs:
        return
    cflags = [f for f in _as_list(kwargs.get("extra_cflags")) if f.strip()]
    if cflags or _as_list(kwargs.get("extra_include_paths")):
        return
    kwargs["extra_cflags"] = None
    kwargs["use_pch"] = True


def _note_library(rec: ExtensionRecord, module, kwargs) -> None:
    path = getattr(module, "__file__", None)
    if path:
        rec.library_path = os.path.abspath(path)
        rec.build_directory = os.path.dirname(rec.library_path)


def source_needs_cuda(text: str) -> bool:
    """True when a Python source compiles CUDA (load_inline with cuda_sources, or .cu files)."""
    return bool(re.search(r"cuda_sources\s*=|load_inline\s*\(\s*[^)]*cuda|\.cu['\"]", text)) or (
        "load_inline" in text and "__global__" in text)


# ---------------------------------------------------------------------------------------------------------
# Loading files

@dataclass
class LoadedFile:
    path: str
    kind: str  # "reference" | "candidate" | "functional" | "cuda-engineer"
    namespace: dict
    extensions: list[ExtensionRecord]
    functional_file: str | None = None  # the functional program a .cu file is paired with
    imports_triton: bool = False  # loading it imported triton (itself, or through a module it imports)


def detect_kind(path: str, text: str) -> str:
    if path.endswith(".cu"):
        return "cuda-engineer"
    if re.search(r"^def\s+functional_model\s*\(", text, re.M):
        return "functional"
    if re.search(r"^class\s+ModelNew\b", text, re.M):
        return "candidate"
    if re.search(r"^class\s+Model\b", text, re.M):
        return "reference"
    raise LoadError(f"{path}: defines neither class Model (a KernelBench reference), class ModelNew "
                    f"(a candidate), nor functional_model (the functional form)")


# What a functional-template candidate defines itself (its program); everything else it leaves undefined
# (module-level sizes, get_inputs, get_init_inputs, INIT_PARAM_NAMES, ...) the harness supplies from the task.
_PROGRAM_NAMES = frozenset({"Model", "ModelNew", "functional_model", "extract_state_kwargs", "build_reference_model",
                            "get_functional_inputs"})


def harness_names(text: str, reference_ns: dict | None) -> dict:
    """The reference's names a candidate in the functional template runs with when it leaves them undefined
    (the harness executes it in the task's namespace): empty unless the candidate is in that layout."""
    if not reference_ns or not re.search(r"^def\s+functional_model\s*\(", text, re.M):
        return {}
    return {k: v for k, v in reference_ns.items() if not k.startswith("__") and k not in _PROGRAM_NAMES}


@contextlib.contextmanager
def watch_imports(package: str, seen: list[str]):
    """Append to `seen` what code run inside imports of `package` (or its submodules). An import statement
    counts even when the module is already loaded: a warm worker (dirigo.worker) has imported
    torch._dynamo, which imports triton, so "triton in sys.modules" says nothing about the program there.
    A first import by anything the code calls counts too (importlib.import_module bypasses the hook)."""
    import builtins
    loaded_before = package in sys.modules
    orig = builtins.__import__

    def hook(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0 and (name == package or name.startswith(package + ".")):
            seen.append(name)
        return orig(name, globals, locals, fromlist, level)

    builtins.__import__ = hook
    try:
        yield
    finally:
        builtins.__import__ = orig
        if not loaded_before and package in sys.modules:
            seen.append(package)


def _exec_file(path: str, records: list[ExtensionRecord], allow_cuda: bool,
               reference_ns: dict | None = None) -> dict:
    with open(path) as fh:
        text = fh.read()
    name = "dirigo_user_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
    module = types.ModuleType(name)
    module.__file__ = os.path.abspath(path)
    sys.modules[name] = module  # dataclasses and pickling look modules up by name
    inherited = harness_names(text, reference_ns)
    module.__dict__.update(inherited)  # the candidate's own definitions, executed next, take precedence
    code = compile(text, os.path.abspath(path), "exec")
    with intercept_extensions(records, allow_cuda):
        exec(code, module.__dict__)
    module.__dict__["__dirigo_inherited__"] = sorted(k for k, v in inherited.items() if module.__dict__.get(k) is v)
    return module.__dict__


def load_file(path: str, allow_cuda: bool, functional_file: str | None = None,
              reference: "LoadedFile | None" = None) -> LoadedFile:
    """Execute a program file and return what it defines. A `.cu` file needs `functional_file`, the
    functional form of its task, for its parameters and inputs. A candidate in the functional template runs
    with the `reference`'s names it leaves undefined (harness_names), as the harness runs it."""
    if not os.path.isfile(path):
        raise LoadError(f"{path}: no such file")
    with open(path, errors="replace") as fh:
        text = fh.read()
    kind = detect_kind(path, text)
    records: list[ExtensionRecord] = []
    triton: list[str] = []
    with watch_imports("triton", triton):
        loaded = _load_kind(path, kind, text, records, allow_cuda, functional_file, reference)
    loaded.imports_triton = bool(triton)
    return loaded


def _load_kind(path, kind, text, records, allow_cuda, functional_file, reference) -> LoadedFile:
    if kind == "cuda-engineer":
        if not functional_file:
            raise LoadError(f"{path}: an AI CUDA Engineer .cu file must be paired with the functional "
                            f"form of its task (--functional FILE)")
        if "PYBIND11_MODULE" not in text:
            raise LoadError(f"{path}: no PYBIND11_MODULE(...) defining forward")
        if not allow_cuda:
            raise NeedsGPU(f"{path} is CUDA code; compiling and running it needs a GPU and this machine has none")
        ns = _exec_file(functional_file, records, allow_cuda)
        import torch.utils.cpp_extension as ce
        name = "dirigo_ace_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
        with intercept_extensions(records, allow_cuda):
            ns["__dirigo_cu_module__"] = ce.load(name, [os.path.abspath(path)])
        return LoadedFile(path, kind, ns, records, functional_file)
    return LoadedFile(path, kind, _exec_file(path, records, allow_cuda,
                                             reference.namespace if reference is not None else None), records)


def forward_arg_names(module, n: int) -> list[str]:
    """Names of the forward arguments: FORWARD_ARG_NAMES (functional form), else the signature, else `in<i>`."""
    try:
        params = [p for p in inspect.signature(module.forward).parameters.values()]
    except (TypeError, ValueError):
        params = []
    declared = getattr(getattr(module, "forward", None), "__globals__", {}).get("FORWARD_ARG_NAMES")
    if isinstance(declared, (list, tuple)) and len(declared) == n and all(isinstance(x, str) for x in declared):
        return list(declared)  # the functional form names its *args this way
    names = []
    for i in range(n):
        if i < len(params) and params[i].kind in (inspect.Parameter.POSITIONAL_ONLY,
                                                 inspect.Parameter.POSITIONAL_OR_KEYWORD):
            names.append(params[i].name)
        else:
            names.append(f"in{i}")
    return names


class _CudaEngineerModel:
    """An AI CUDA Engineer program: the functional task's ModelNew supplies parameters; forward calls the
    compiled `forward(*inputs, *state)` with the state in the order of functional_model's keyword-only
    parameters (how the Sakana dataset's module_fn passes them positionally)."""

    def __init__(self, functional_module, ext, functional_model):
        self.module = functional_module
        self.ext = ext
        self.state_order = [p.name for p in inspect.signature(functional_model).parameters.values()
                            if p.kind == inspect.Parameter.KEYWORD_ONLY]

    def __call__(self, *inputs):
        ns_extract = self.module.forward.__globals__["extract_state_kwargs"]
        state = ns_extract(self.module)
        return self.ext.forward(*inputs, *[state[k] for k in self.state_order])


def build_model(loaded: LoadedFile, init_inputs: list, seed: int = INIT_SEED):
    """Construct the program's model under `seed` (KernelBench's set_seed before construction)."""
    import torch
    ns = loaded.namespace
    cls_name = "Model" if loaded.kind == "reference" else "ModelNew"
    cls = ns.get(cls_name)
    if cls is None:
        raise LoadError(f"{loaded.path}: no class {cls_name}")
    torch.manual_seed(seed)
    module = cls(*init_inputs)
    if loaded.kind == "cuda-engineer":
        return module, _CudaEngineerModel(module, ns["__dirigo_cu_module__"], ns["functional_model"])
    return module, module


def reference_io(loaded: LoadedFile) -> tuple[Callable, Callable]:
    ns = loaded.namespace
    gi, gii = ns.get("get_inputs"), ns.get("get_init_inputs")
    if not callable(gi) or not callable(gii):
        raise LoadError(f"{loaded.path}: needs get_inputs() and get_init_inputs()")
    return gi, gii
