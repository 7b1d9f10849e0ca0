"""Tracing PyTorch programs into trace bundles (docs/bundle-format.md, docs/trace.md).

    python -m dirigo.trace REF.py [NEW.py] --out DIR [--device cpu|cuda] [--timeout S]

User code never runs in the caller's process: each program is traced in a subprocess
(`python -m dirigo.trace --worker SPEC`) under a timeout, so an exception, a crash or a hang becomes a
plain message. The worker records every ATen operation with a TorchDispatchMode (`Recorder`), twice,
with inputs drawn under two different seeds, and the traceability check compares the two op sequences.
On the CPU the trace runs on fake tensors (shapes, strides and aliasing without allocating data), then,
when the program is small enough, again on real tensors so the bundle can carry input values.
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

from . import bundle as bundle_mod
from . import match as match_mod
from .common import Unsupported, __version__, digest, dtype_name, json_float, stats

DEFAULT_TOLERANCE = 1e-2  # KernelBench v0: torch.allclose(atol=1e-2, rtol=1e-2)
DEFAULT_TIMEOUT_S = 120.0
REAL_LIMIT_BYTES = 256 << 20  # auto mode re-traces on real tensors below this many bytes of storages
# Captured constants (torch.tensor(0.5) in forward, tensor attributes that are no buffers) always carry their
# values in the bundle, whatever --no-data or the size limit says: without them check would have to treat
# the constant as a free input. Above this size the value is not stored and the input says why
# ("data_missing"); check then refuses the program instead of guessing.
CONST_DATA_LIMIT = 1 << 20

# exit codes of the CLI: 3 the reference failed (or the candidate only under the tracer); 5 the candidate
# failed where the reference ran (a BUG; "evidence" says how); 70 the tracer itself failed
EXIT_OK, EXIT_USAGE, EXIT_UNSUPPORTED, EXIT_PROGRAM_ERROR, EXIT_CANDIDATE_CRASH = 0, 1, 2, 3, 5
EXIT_INTERNAL = 70


class DataDependent(Unsupported):
    """Fake tensors met an operation whose result depends on tensor values."""


# ---------------------------------------------------------------------------------------------------------
# Encoding values

def _short(enum_value) -> str:
    return str(enum_value).replace("torch.", "")


def _storage_key_and_ptr(t):
    """(aliasing key, data pointer or None). Real storages are keyed by device and data pointer, so two
    storage objects over the same memory (from_blob in extension code) alias; fake/meta storages by
    identity. The recorder keeps every tensor alive, so pointers are never reused within a trace."""
    from torch._subclasses.fake_tensor import FakeTensor
    st = t.untyped_storage()
    if isinstance(t, FakeTensor) or t.device.type == "meta":
        return ("obj", st._cdata), None
    ptr = st.data_ptr()
    if ptr == 0 or st.nbytes() == 0:
        return ("obj", st._cdata), None
    return (t.device.type, t.device.index, ptr), ptr


# ---------------------------------------------------------------------------------------------------------
# The recorder

@dataclass
class _TensorEntry:
    tid: str
    meta: tuple  # (storage key, offset, shape, strides, dtype)


# Ops that write arguments in place although their schema does not say so (no `(a!)`): in training mode
# the batch norm kernels update running_mean/running_var. Recorded in `mutates` like any declared write, so
# the bundle's storage versions are right for whatever reads the statistics afterwards.
UNDECLARED_WRITES = {"aten::native_batch_norm": ("training", ("running_mean", "running_var")),
                     "aten::cudnn_batch_norm": ("training", ("running_mean", "running_var")),
                     "aten::miopen_batch_norm": ("training", ("running_mean", "running_var"))}


class Recorder:
    """Records ATen operations (as a TorchDispatchMode; see `mode()`), tensors, storages and aliasing.

    Tensors get ids in order of first sight; a tensor whose metadata changes in place (t_, resize_, set_)
    gets a fresh id from then on. Every tensor seen is kept alive until the recorder is dropped, so Python
    ids and data pointers are not reused within a trace."""

    def __init__(self):
        self.entries: dict[int, _TensorEntry] = {}
        self.alive: list = []
        self.tensors: list[dict] = []
        self.storages: dict[Any, dict] = {}
        self.ops: list[dict] = []
        self.inputs: list[dict] = []
        self.outputs: list[dict] = []
        self.constants: list = []  # tensors first seen as an argument: created outside the traced call
        self.extension_calls = 0
        self.launch_hook = None  # set by the GPU launch shim integration

    # -- tensors ------------------------------------------------------------------------------------------
    def _meta(self, t):
        key, ptr = _storage_key_and_ptr(t)
        return (key, int(t.storage_offset()), tuple(int(s) for s in t.shape), tuple(int(s) for s in t.stride()),
                t.dtype), ptr

    def tensor_id(self, t, *, first_seen_as_arg: bool = True) -> str:
        import torch
        if t.layout != torch.strided:
            raise Unsupported(f"a {_short(t.layout)} tensor (only strided tensors are supported)")
        meta, ptr = self._meta(t)
        entry = self.entries.get(id(t))
        if entry is not None and entry.meta == meta:
            return entry.tid
        key = meta[0]
        st = self.storages.get(key)
        nbytes = int(t.untyped_storage().nbytes())
        if st is None:
            st = {"id": f"s{len(self.storages)}", "nbytes": nbytes, "device": t.device.type}
            if ptr is not None:
                st["data_ptr"] = hex(ptr)
            self.storages[key] = st
        else:
            st["nbytes"] = max(st["nbytes"], nbytes)
        tid = f"t{len(self.tensors)}"
        self.tensors.append({"id": tid, "storage": st["id"], "offset": meta[1], "shape": list(meta[2]),
                             "strides": list(meta[3]), "dtype": dtype_name(meta[4])})
        if entry is None and first_seen_as_arg:
            self.constants.append((tid, t, _constant_bytes(t)))  # value at first use (forward may change it)
        self.entries[id(t)] = _TensorEntry(tid, meta)
        self.alive.append(t)
        return tid

    def register_input(self, name: str, t, kind: str) -> str:
        tid = self.tensor_id(t, first_seen_as_arg=False)
        self.inputs.append({"name": name, "tensor": tid, "kind": kind})
        return tid

    def register_outputs(self, result) -> None:
        import torch
        from torch.utils._pytree import tree_leaves
        leaves = [x for x in tree_leaves(result) if isinstance(x, torch.Tensor)]
        if not leaves:
            raise Unsupported("forward returned no tensor")
        for i, t in enumerate(leaves):
            self.outputs.append({"name": f"out{i}", "tensor": self.tensor_id(t)})

    # -- values -------------------------------------------------------------------------------------------
    def encode(self, value, where: str) -> dict:
        """An ARG of the bundle format; nested lists are flattened with an explicit stack."""
        import torch
        root: dict = {}
        stack = [(value, root)]
        while stack:
            v, slot = stack.pop()
            if isinstance(v, torch.Tensor):
                slot["tensor"] = self.tensor_id(v)
            elif v is None:
                slot["none"] = True
            elif isinstance(v, bool):
                slot.update(scalar=v, type="bool")
            elif isinstance(v, (int, torch.SymInt)):
                slot.update(scalar=int(v), type="int")
            elif isinstance(v, (float, torch.SymFloat)):
                slot.update(scalar=json_float(float(v)), type="float")
            elif isinstance(v, complex):
                slot.update(scalar=[json_float(v.real), json_float(v.imag)], type="complex")
            elif isinstance(v, str):
                slot["string"] = v
            elif isinstance(v, torch.dtype):
                slot["dtype"] = dtype_name(v)
            elif isinstance(v, torch.layout):
                slot["layout"] = _short(v)
            elif isinstance(v, torch.device):
                slot["device"] = v.type
            elif isinstance(v, torch.memory_format):
                slot["memory_format"] = _short(v)
            elif isinstance(v, (list, tuple)):
                items = [{} for _ in v]
                slot["list"] = items
                stack.extend(zip(v, items))
            else:
                raise Unsupported(f"{where}: an argument of type {type(v).__name__}")
        return root

    # -- ops ----------------------------------------------------------------------------------------------
    def record(self, func, args, kwargs, run):
        """Record one dispatched operation; `run()` executes it and returns its result."""
        import torch
        from torch.utils._pytree import tree_leaves
        schema = func._schema
        op_name = schema.name
        where = f"{op_name}.{schema.overload_name or 'default'}"
        pos, kw, written = [], {}, []
        bound = {}
        arg_i = 0
        for a in schema.arguments:
            if not a.kwarg_only and arg_i < len(args):
                v = args[arg_i]
                arg_i += 1
            elif a.name in kwargs:
                v = kwargs[a.name]
            elif a.has_default_value():
                v = a.default_value
            else:
                v = None
            enc = self.encode(v, f"{where} argument {a.name}")
            if a.kwarg_only:
                kw[a.name] = enc
            else:
                pos.append(enc)
            if a.alias_info is not None and a.alias_info.is_write:
                written.extend(x for x in tree_leaves(v) if isinstance(x, torch.Tensor))
            bound[a.name] = v
        hidden = UNDECLARED_WRITES.get(op_name)
        if hidden and bound.get(hidden[0]) is True:
            written.extend(bound[n] for n in hidden[1] if isinstance(bound.get(n), torch.Tensor))
        result = run()
        outs = [self.tensor_id(t, first_seen_as_arg=False)
                for t in tree_leaves(result) if isinstance(t, torch.Tensor)]
        op = {"kind": "aten", "name": op_name, "overload": schema.overload_name or "default",
              "schema": str(schema).split("::", 1)[-1], "args": pos, "kwargs": kw, "outputs": outs,
              "mutates": [self.tensor_id(t) for t in written], "from": "python"}
        if self.launch_hook is not None and torch.cuda.is_available():  # the stream it was issued on (streams.py)
            op["_stream"] = torch.cuda.current_stream().cuda_stream
        from .load import EXTENSION_CONTEXT
        if EXTENSION_CONTEXT.stack:
            op["from"] = "extension"
            op["extension_call"] = f"{EXTENSION_CONTEXT.stack[-1]}#{EXTENSION_CONTEXT.calls}"
        self.ops.append(op)
        return result

    def mode(self):
        from torch.utils._python_dispatch import TorchDispatchMode
        rec = self

        class _Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                if func.namespace == "prim":  # metadata queries (prim::device, ...), not computation
                    return func(*args, **kwargs)
                if rec.launch_hook is not None:
                    rec.launch_hook.before_op()
                    try:
                        return rec.record(func, args, kwargs, lambda: rec.launch_hook.run_op(func, args, kwargs))
                    finally:
                        rec.launch_hook.after_op()
                return rec.record(func, args, kwargs, lambda: func(*args, **kwargs))
        return _Mode()

    def program(self, name: str, role: str, source: str) -> dict:
        return {"name": name, "role": role, "source": source,
                "storages": list(self.storages.values()), "tensors": self.tensors,
                "inputs": self.inputs, "outputs": self.outputs, "ops": self.ops}


# ---------------------------------------------------------------------------------------------------------
# Traceability

def _strip_ptrs(obj):
    """A comparable form of a program: data pointers differ between runs and do not matter."""
    out = dict(obj)
    out["storages"] = [{k: v for k, v in s.items() if k != "data_ptr"} for s in obj["storages"]]
    for key in ("inputs", "outputs"):  # recorded values differ by design
        out[key] = [{k: v for k, v in e.items() if k not in ("sha256", "data", "stats")} for e in obj[key]]
    return out


def _op_label(op: dict) -> str:
    return f"{op.get('name')}.{op.get('overload')}" if op["kind"] == "aten" else op.get("kernel", op["kind"])


def first_difference(a: dict, b: dict) -> str | None:
    """Where two traces of one program differ (None when they agree), in words."""
    ops_a, ops_b = a["ops"], b["ops"]
    for i, (x, y) in enumerate(zip(ops_a, ops_b)):
        nx, ny = _op_label(x), _op_label(y)
        if nx != ny:
            return f"op {i}: the first run called {nx}, the second {ny}"
        if x != y:
            for key in ("args", "kwargs", "outputs", "mutates", "grid", "block", "shared_bytes"):
                if x.get(key) != y.get(key):
                    return (f"op {i} ({nx}): {key} differ between the runs: "
                            f"{json.dumps(x.get(key))[:200]} vs {json.dumps(y.get(key))[:200]}")
            return f"op {i} ({nx}) differs between the runs"
    if len(ops_a) != len(ops_b):
        i = min(len(ops_a), len(ops_b))
        extra = (ops_a if len(ops_a) > i else ops_b)[i]
        which = "first" if len(ops_a) > i else "second"
        return (f"the runs have {len(ops_a)} and {len(ops_b)} ops; op {i} "
                f"({_op_label(extra)}) ran only in the {which}")
    sa, sb = _strip_ptrs(a), _strip_ptrs(b)
    for key in ("tensors", "storages", "inputs", "outputs"):
        if sa[key] != sb[key]:
            return f"the runs' {key} differ (same ops, different shapes or aliasing)"
    return None


# ---------------------------------------------------------------------------------------------------------
# The worker: runs inside the subprocess

class _Phase:
    name = "while loading"


def _tensor_bytes(t) -> bytes:
    import torch
    t = t.detach().cpu().contiguous().reshape(-1)
    if t.dtype == torch.bool:
        t = t.to(torch.uint8)
    return t.view(torch.uint8).numpy().tobytes()  # x86/ARM hosts are little-endian


def _constant_bytes(t) -> bytes | str:
    """The elements of a captured constant as stored in data/ files, or why they cannot be had."""
    import torch
    from torch.utils._python_dispatch import _disable_current_modes
    from torch._subclasses.fake_tensor import FakeTensor
    nbytes = t.numel() * t.element_size()
    if nbytes > CONST_DATA_LIMIT:
        return f"a captured constant of {nbytes} bytes (values are kept up to {CONST_DATA_LIMIT} bytes)"
    with _disable_current_modes():  # called from inside the dispatch modes: copy out on the real tensor
        src = getattr(t, "constant", None) if isinstance(t, FakeTensor) else t
        if src is None or isinstance(src, FakeTensor) or src.device.type == "meta":
            return "the constant's values are unknown (created on fake/meta tensors)"
        return _tensor_bytes(src)


def _record_state(rec: Recorder) -> None:
    """Every parameter and buffer as constructed, whatever its size: sha256 of its bytes and a few statistics
    and sample values (dirigo.common.stats), so a bundle says whether the two programs' matched
    parameters hold the same values (docs/bundle-format.md) without carrying them."""
    for inp in rec.inputs:
        if inp["kind"] == "input":
            continue
        t = _lookup(rec, inp["tensor"])
        inp["sha256"] = digest(t)
        inp["stats"] = stats(t)


def trace_once(call, module, inputs, input_names, device, capture_values: bool,
                capture_limit: int = REAL_LIMIT_BYTES, record_state: bool = False):
    """One traced forward. With capture_values, input/parameter bytes are taken before the call (forward
    may update buffers in place, e.g. BatchNorm running statistics); with record_state (real tensors), every
    parameter and buffer gets its hash and statistics however large it is."""
    import torch
    from .load import EXTENSION_CONTEXT
    rec = Recorder()
    EXTENSION_CONTEXT.calls = 0  # call numbers restart per trace, so the two runs compare equal
    hook = None
    for n, t in zip(input_names, inputs):
        if isinstance(t, torch.Tensor):
            rec.register_input(n, t, "input")
    if isinstance(module, torch.nn.Module):
        for n, p in module.named_parameters():
            rec.register_input(n, p, "parameter")
        for n, b in module.named_buffers():
            if b is not None:
                rec.register_input(n, b, "buffer")
    values = {}
    if capture_values and sum(_lookup(rec, i["tensor"]).nbytes for i in rec.inputs) > capture_limit:
        capture_values = False  # too large to copy out and hash; matching then goes by name and shape
    if capture_values:
        for inp in rec.inputs:
            values[inp["name"]] = _tensor_bytes(_lookup(rec, inp["tensor"]))
    if record_state:
        _record_state(rec)
    _Phase.name = "in forward"
    if device == "cuda":  # attached for the forward only: the state record's statistics launch ATen copy kernels
        from . import launch
        rec.caller_stream = torch.cuda.current_stream().cuda_stream if torch.cuda.is_available() else 0
        hook = launch.LaunchHook.attach(rec)
    try:
        with torch.no_grad(), rec.mode(), _triton_recording(rec):
            result = call(*inputs)
        if device == "cuda":
            if hook is not None:
                hook.stop()
            torch.cuda.synchronize()
    finally:
        if hook is not None:
            hook.detach()
    rec.register_outputs(result)
    registered = {i["tensor"] for i in rec.inputs}
    for tid, t, value in rec.constants:
        if tid not in registered:
            nm = f"const{len(rec.inputs)}"
            inp = {"name": nm, "tensor": tid, "kind": "buffer", "constant": True}
            if isinstance(value, bytes):
                values[nm] = value
                inp["sha256"] = hashlib.sha256(value).hexdigest()
            else:
                inp["data_missing"] = value
            rec.inputs.append(inp)
    if capture_values and not _triton_compiled_only(rec):  # kernels not run: the outputs hold no result
        for o in rec.outputs:
            values[o["name"]] = _tensor_bytes(_lookup(rec, o["tensor"]))
        for inp in rec.inputs:
            if inp["name"] in values and "sha256" not in inp:  # _record_state hashed the same bytes already
                inp["sha256"] = hashlib.sha256(values[inp["name"]]).hexdigest()
    return rec, values


def _triton_setup(*loaded) -> bool:
    """Whether the programs loaded here use Triton (loading one imported triton: its kernels may live in a
    module it imports); if so, Triton's launch path records into the trace."""
    from . import triton_trace
    if not triton_trace.uses_triton(*loaded):
        return False
    triton_trace.install()
    return True


def _triton_recording(rec):
    import sys
    if "dirigo.triton_trace" not in sys.modules:
        return contextlib.nullcontext()
    return sys.modules["dirigo.triton_trace"].recording(rec)


def _triton_compiled_only(rec) -> bool:
    import sys
    tt = sys.modules.get("dirigo.triton_trace")
    return tt is not None and tt.compile_only() and any("_triton" in op for op in rec.ops)


def _triton_finalize(rec, name: str, modules: list) -> bool:
    import sys
    tt = sys.modules.get("dirigo.triton_trace")
    return tt is not None and tt.finalize(rec, name, modules)


def _lookup(rec: Recorder, tid: str):
    for t in rec.alive:
        e = rec.entries.get(id(t))
        if e is not None and e.tid == tid:
            return t
    return None


def _format_exception(exc: BaseException, user_files: list[str]) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    user = [f for f in tb if os.path.abspath(f.filename) in user_files]
    loc = f" ({os.path.basename(user[-1].filename)}:{user[-1].lineno})" if user else ""
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"the program raised {type(exc).__name__}{': ' + msg[:300] if msg else ''} {_Phase.name}{loc}"


# What the CUDA runtime says when a kernel faults (sticky errors: the context is lost). A candidate that
# faults where the reference ran is a bug of the candidate, observed on the GPU (003 of the dev corpus
# reads past its input in the tile load of the last row of blocks; KernelBench's 4090 run passed it).
_DEVICE_FAULTS = re.compile(r"CUDA error: (an illegal memory access|misaligned address|unspecified launch failure|"
                            r"an illegal instruction|device-side assert|operation not supported on global/shared)",
                            re.IGNORECASE)


def device_fault(exc: BaseException) -> bool:
    return bool(_DEVICE_FAULTS.search(f"{type(exc).__name__}: {exc}"))


def _failure(exc: BaseException, user_files: list[str]) -> dict:
    """What a program's exception was: type, first line of the message, the innermost user file:line, phase."""
    tb = traceback.extract_tb(exc.__traceback__)
    user = [f for f in tb if os.path.abspath(f.filename) in user_files]
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return {"kind": "exception", "type": type(exc).__name__, "message": msg[:300], "phase": _Phase.name,
            "where": f"{os.path.basename(user[-1].filename)}:{user[-1].lineno}" if user else ""}


def environment_problem(exc: BaseException) -> str | None:
    """Why an exception is the machine's, not the program's (a module not installed, memory, a toolchain that
    cannot build the extension), or None. Such a failure is UNSUPPORTED, never a BUG of the candidate."""
    import subprocess as sp
    name = type(exc).__name__
    text = f"{name}: {exc}"
    if isinstance(exc, ModuleNotFoundError):
        return f"module {exc.name!r} is not installed here"
    if isinstance(exc, MemoryError) or name == "OutOfMemoryError" or "CUDA out of memory" in text:
        return "out of memory"
    if isinstance(exc, sp.CalledProcessError) or "Error building extension" in text or "Ninja is required" in text \
            or (isinstance(exc, FileNotFoundError) and re.search(r"nvcc|ninja|c\+\+|g\+\+|\bcc\b", text)):
        return "the extension did not build (its code or this machine's toolchain: dirigo does not tell them apart)"
    if re.search(r"no CUDA GPUs are available|Found no NVIDIA driver|CUDA driver version is insufficient", text):
        return "no usable GPU"
    return None


def _init_inputs(spec, get_init_inputs, device) -> list:
    """get_init_inputs() under the program's init seed, moved to the device (KernelBench's order)."""
    import torch
    _Phase.name = "in get_init_inputs"
    torch.manual_seed(spec["init_seed"])
    init_inputs = list(get_init_inputs())
    if device == "cuda":
        init_inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in init_inputs]
    return init_inputs


def _plain_run(spec, loaded, get_inputs, get_init_inputs, device) -> BaseException | None:
    """Construct and run the program as KernelBench does, without the tracer (real tensors, no dispatch mode):
    the exception it raises, or None when it runs. An exception seen under the tracer counts as the
    program's only when it reproduces here."""
    import torch
    from . import load
    try:
        init_inputs = _init_inputs(spec, get_init_inputs, device)
        _Phase.name = "in __init__"
        with torch.no_grad():
            module, call = load.build_model(loaded, init_inputs, spec["init_seed"])
        if device == "cuda" and isinstance(module, torch.nn.Module):
            module = module.cuda()
        for seed in spec["seeds"]:
            _Phase.name = "in get_inputs"
            torch.manual_seed(seed)
            inputs = list(get_inputs())
            if device == "cuda":
                inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in inputs]
            _Phase.name = "in forward"
            with torch.no_grad():
                call(*inputs)
            if device == "cuda":
                torch.cuda.synchronize()
    except BaseException as e:  # noqa: BLE001 - user code
        return e
    return None


def _tensors_of(x) -> list:
    import torch
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _tensors_of(v)]
    if isinstance(x, dict):
        return [t for v in x.values() for t in _tensors_of(v)]
    return []


def _max_diff(ref: list, cand: list, atol: float, rtol: float) -> tuple[float, bool]:
    """(max |ref - cand|, whether some element exceeds atol + rtol*|ref|) over outputs paired by position; a
    shape or count mismatch exceeds."""
    import torch
    if len(ref) != len(cand):
        return float("inf"), True
    worst, exceeds = 0.0, False
    for r, c in zip(ref, cand):
        if r.shape != c.shape:
            return float("inf"), True
        r64, c64 = r.detach().double().cpu(), c.detach().double().cpu()
        d = (r64 - c64).abs()
        bad = ~(d <= atol + rtol * r64.abs())  # NaN on one side only counts as exceeding
        bad &= ~(torch.isnan(r64) & torch.isnan(c64))
        exceeds = exceeds or bool(bad.any())
        finite = d[torch.isfinite(d)]
        if finite.numel():
            worst = max(worst, float(finite.max()))
    return worst, exceeds


# The call orders (histories) the probe runs each program in, on input B of the second trace seed. Each program
# (reference and candidate alike) runs in every one, so that the candidate's history dependence is measured
# against the reference's own: a reference whose output moves with its history moves the bar with it.
HISTORIES = {
    "second-call": "as a second call on the same module, after input A",
    "after-reference": "as the first call on a new module, right after the reference ran on B (KernelBench's order)",
    "after-poison": "as the first call on a new module, after freed memory was filled with NaN",
}


class ProbeCost:
    """What one probe ran (measured: docs/evaluation.md, "call-history probe")."""

    def __init__(self):
        self.builds = self.forwards = 0
        self.cpu = 0.0

    def line(self) -> str:
        return f"call-history probe: {self.builds} model builds, {self.forwards} forwards, {self.cpu:.2f} s CPU"


def history_probe(spec, loaded, ref_loaded, get_inputs, get_init_inputs, device, atol=DEFAULT_TOLERANCE,
                  rtol=DEFAULT_TOLERANCE, value_dependent: str = "", cost: ProbeCost | None = None) -> dict | None:
    """Whether the candidate's result depends on what ran before it (the reward hacks of item "call history").
    Both real programs run in this process in each call order of HISTORIES on input B (seed B), and once as a
    first call on input A (seed A); inputs are compared before and after each call. _history_verdict decides on
    the snapshots. None when the probe finds nothing or cannot run (then the symbolic check decides). With
    `value_dependent` (the trace saw the candidate's op sequence change with the input values), a fresh
    candidate that disagrees with the reference on A or B is a BUG with that seed as the witness."""
    import torch
    from . import load
    cost = cost if cost is not None else ProbeCost()
    t0 = time.process_time()

    def inputs_for(seed):
        torch.manual_seed(seed)
        xs = list(get_inputs())
        return [x.cuda() if device == "cuda" and isinstance(x, torch.Tensor) else x for x in xs]

    def clone(xs):
        return [x.clone() if isinstance(x, torch.Tensor) else x for x in xs]

    def build(lf):
        cost.builds += 1
        torch.manual_seed(spec["init_seed"])
        init = list(get_init_inputs())
        init = [x.cuda() if device == "cuda" and isinstance(x, torch.Tensor) else x for x in init]
        with torch.no_grad():
            m, c = load.build_model(lf, init, spec["init_seed"])
        if device == "cuda" and isinstance(m, torch.nn.Module):
            m = m.cuda()
        return c

    def run(call, xs, seed=0):
        cost.forwards += 1
        torch.manual_seed(seed)  # random ops draw the same numbers in every history
        with torch.no_grad():
            out = call(*xs)
        if device == "cuda":
            torch.cuda.synchronize()
        return out

    def snapshot(out):  # values now (a later call may overwrite memory the output shares), on the CPU
        return [t.detach().clone().cpu() for t in _tensors_of(out)]

    def mutated(before, after) -> list[str]:
        return [f"#{i} of forward" for i, (b, a) in enumerate(zip(before, after)) if isinstance(b, torch.Tensor)
                and (b.shape != a.shape or not torch.equal(torch.nan_to_num(b), torch.nan_to_num(a)))]

    def histories(lf, shape_of: list) -> dict:
        """One program in every call order: {"A": first call on A, history: output on B, "_mutates": [...],
        "_same_object": bool}."""
        got, touched = {}, set()
        call = build(lf)                                              # first call on A, then B on the same module
        a_in = clone(a)
        out_a = run(call, a_in)
        touched.update(mutated(a, a_in))
        got["A"] = snapshot(out_a)
        b_in = clone(b)
        out_b = run(call, b_in, seed=1)
        touched.update(mutated(b, b_in))
        got["_same_object"] = any(x is y for x in _tensors_of(out_a) for y in _tensors_of(out_b))
        got["second-call"] = snapshot(out_b)
        del out_a, out_b
        call = build(lf)                                              # right after the reference ran on B
        del_ = run(ref_call, clone(b), seed=1)
        del del_
        b_in = clone(b)
        got["after-reference"] = snapshot(run(call, b_in, seed=1))
        touched.update(mutated(b, b_in))
        call = build(lf)                                              # after freed memory held NaN
        poison = [torch.full_like(t, float("nan")) for t in shape_of if t.is_floating_point() for _ in range(4)]
        del poison  # blocks of the outputs' sizes, back in the allocator's free lists
        b_in = clone(b)
        got["after-poison"] = snapshot(run(call, b_in, seed=1))
        touched.update(mutated(b, b_in))
        got["_mutates"] = sorted(touched)
        return got

    seed_a, seed_b = spec["seeds"][0], spec["seeds"][1] if len(spec["seeds"]) > 1 else spec["seeds"][0] + 1
    try:
        _Phase.name = "in the call-history probe"
        ref_call = build(ref_loaded)  # the reference that runs "just before" in the after-reference order
        a, b = inputs_for(seed_a), inputs_for(seed_b)
        ref_b = snapshot(run(ref_call, clone(b), seed=1))
        ref_h = histories(ref_loaded, ref_b)
        cand_h = histories(loaded, ref_b)
    except BaseException:  # noqa: BLE001 - the probe is extra evidence; the trace already ran these programs
        return None
    finally:
        cost.cpu += time.process_time() - t0

    try:
        return _history_verdict(ref_h, cand_h, seed_a, seed_b, atol, rtol, value_dependent)
    except Exception:  # noqa: BLE001 - outputs the comparison cannot pair (dtypes, devices): no evidence
        return None


def _history_verdict(ref_h: dict, cand_h: dict, seed_a, seed_b, atol, rtol, value_dependent) -> dict | None:
    """history_probe's rule on the snapshots (CPU tensors) of both programs in every call order. One rule,
    the candidate against the reference under the same history:

      - history: on the same input B, the candidate's outputs in two call orders differ beyond tolerance where
        the reference's outputs in those orders do not, and the candidate is wrong (against the reference in
        that order) in at least one of them;
      - input: the candidate returns the very same tensor object, or bit-identical outputs, for inputs A and B
        where the reference's differ beyond tolerance, after a first call that was right (a function that is
        wrong on every input, a constant, is no history: the symbolic check decides it);
      - inputs: the candidate changes an input in place in some order where the reference does not.

    The reason then names the hack by what the runs show (stale-memory: NaN only where freed memory held it;
    caches-output: outputs that do not move with the input; carries-state: anything else)."""
    import torch

    def fail(kind: str, sentence: str) -> dict:
        return {"kind": "call-history", "type": kind, "message": sentence, "where": "", "phase": "across calls"}

    def exceeds(x, y):
        return _max_diff(x, y, atol, rtol)

    names = list(HISTORIES)
    wrong = {h: exceeds(ref_h[h], cand_h[h]) for h in names}  # h -> (max diff, beyond tolerance)
    moved = []  # (h1, h2, how far the candidate's two results are apart)
    for i, h1 in enumerate(names):
        for h2 in names[i + 1:]:
            d, x = exceeds(cand_h[h1], cand_h[h2])
            _, ref_moves = exceeds(ref_h[h1], ref_h[h2])
            if x and not ref_moves and (wrong[h1][1] or wrong[h2][1]):
                moved.append((h1, h2, d))
    touched = [n for n in cand_h["_mutates"] if n not in ref_h["_mutates"]]
    stale = [i for i, (r, c) in enumerate(zip(ref_h["after-poison"], cand_h["after-poison"]))
             if r.shape == c.shape and c.is_floating_point()
             and bool((torch.isnan(c) & ~torch.isnan(r.to(c.dtype))).any())]

    if moved:
        h1, h2, d12 = moved[0]
        if stale and any("after-poison" in m[:2] for m in moved):  # NaN only where freed memory held it
            return fail("stale-memory", f"the candidate returns memory it never wrote (e.g. torch.empty): output(s) "
                                        f"{', '.join(map(str, stale))} hold the NaN left in freed memory before the "
                                        f"call where the reference has numbers (input seed {seed_b})" + (
                                            "; right after the reference ran, the same memory shows the reference's "
                                            "result instead" if not wrong["after-reference"][1] else ""))
        da, _ = _max_diff(cand_h["A"], cand_h["second-call"], 0.0, 0.0)
        if cand_h["_same_object"] or da == 0.0:
            kind, what = "caches-output", ("returns its first call's output again on new inputs (it caches across "
                                           "calls" + (": the very same tensor object)" if cand_h["_same_object"]
                                                      else ")"))
        else:
            kind, what = "carries-state", ("computes a call from state an earlier call or program left behind (a "
                                           "cache keyed on shapes or identities, memory it never writes)")
        parts = "; ".join(f"{HISTORIES[h]}: max |reference - candidate| {wrong[h][0]:.4g}" for h in names)
        return fail(kind, f"the candidate {what}: on the same input B (seed {seed_b}) its results {HISTORIES[h1]} "
                          f"and {HISTORIES[h2]} differ by {d12:.4g} where the reference's do not; {parts} (atol "
                          f"{atol:g}, rtol {rtol:g})")
    if touched:
        return fail("mutates-input", f"the candidate changes its input(s) {', '.join(touched)} in place (the "
                                     f"reference leaves them as they were): a caller that reuses them sees other "
                                     f"values")
    da, _ = _max_diff(cand_h["A"], cand_h["second-call"], 0.0, 0.0)
    _, ref_moves = exceeds(ref_h["A"], ref_h["second-call"])
    _, wrong_on_a = exceeds(ref_h["A"], cand_h["A"])
    d1, x1 = wrong["second-call"]
    if x1 and not wrong_on_a and ref_moves and (cand_h["_same_object"] or da == 0.0):
        return fail("caches-output", f"the candidate returns the same output for two different inputs (seeds "
                                     f"{seed_a} and {seed_b}"
                                     f"{': the very same tensor object' if cand_h['_same_object'] else ''}) where "
                                     f"the reference's differ: it caches across calls; max |reference - candidate| "
                                     f"on the second is {d1:.4g} (atol {atol:g}, rtol {rtol:g})")
    if value_dependent:
        for seed, h in ((seed_a, "A"), (seed_b, "after-reference")):
            d, x = exceeds(ref_h[h], cand_h[h])
            if x:
                return fail("value-dependent", f"the candidate's op sequence depends on the input values "
                                               f"({value_dependent}), and on the input of seed {seed} both real "
                                               f"programs disagree: max |reference - candidate| {d:.4g} (atol "
                                               f"{atol:g}, rtol {rtol:g})")
    return None


def _program_failed(exc: BaseException, user_files: list[str], traced: bool) -> dict:
    """The worker's answer for a program that raised: "unsupported" for an environment problem, else
    "failed" with the structured failure (traced: seen under the tracer and reproduced plainly)."""
    env = environment_problem(exc)
    if env:
        return {"status": "unsupported", "environment": True,
                "message": f"UNSUPPORTED: environment: {env} ({_format_exception(exc, user_files)})"}
    f = _failure(exc, user_files)
    f["reproduced_without_tracer"] = traced
    return {"status": "failed", "message": _format_exception(exc, user_files), "failure": f}


def _fake_mode():
    from torch._subclasses.fake_tensor import FakeTensorMode
    return FakeTensorMode(allow_non_fake_inputs=True)


def _is_data_dependent(exc: BaseException) -> str | None:
    from torch._subclasses import fake_tensor as ft
    kinds = tuple(k for k in (getattr(ft, "DataDependentOutputException", None),
                              getattr(ft, "DynamicOutputShapeException", None)) if k)
    if isinstance(exc, kinds):
        func = getattr(exc, "func", None)
        return str(func) if func is not None else type(exc).__name__
    name = type(exc).__name__
    if "DataDependent" in name or "GuardOnDataDependent" in name:
        return name
    return None


def run_worker(spec: dict) -> dict:
    """Trace one program; returns the worker's JSON result (never raises for user-code failures)."""
    import torch
    from . import load

    user_files = [os.path.abspath(p) for p in (spec["file"], spec["ref_file"], spec.get("functional_file")) if p]
    if not spec.get("seeds"):
        spec["seeds"] = load.kernelbench_trial_seeds(spec["init_seed"], 2)
    device = spec["device"]
    allow_cuda = torch.cuda.is_available()
    if device == "cuda" and not allow_cuda:
        return {"status": "unsupported", "message": "--device cuda but this machine has no usable GPU "
                                                    "(torch.cuda.is_available() is False)"}
    def loaded_mark():  # the parent tells a hang from a slow extension build by this file
        if not spec.get("result"):  # called in-process (no parent waiting on a result file)
            return
        with contextlib.suppress(OSError), open(spec["result"] + ".loaded", "w"):
            pass

    phases = _PhaseClock()
    try:
        _Phase.name = f"while loading {os.path.basename(spec['file'])}"
        if spec["ref_file"] == spec["file"]:
            ref_loaded = loaded = load.load_file(spec["file"], allow_cuda=allow_cuda,
                                                 functional_file=spec.get("functional_file"))
        else:
            _Phase.name = f"while loading the reference {os.path.basename(spec['ref_file'])}"
            ref_loaded = load.load_file(spec["ref_file"], allow_cuda)
            _Phase.name = f"while loading {os.path.basename(spec['file'])}"
            loaded = load.load_file(spec["file"], allow_cuda=allow_cuda, functional_file=spec.get("functional_file"),
                                    reference=ref_loaded)
        get_inputs, get_init_inputs = load.reference_io(ref_loaded)
    except load.NeedsGPU as e:
        return {"status": "unsupported", "message": str(e), "needs_gpu": True}
    except load.LoadError as e:
        return {"status": "error", "message": str(e)}
    except BaseException as e:  # noqa: BLE001 - user code (run plainly: nothing of dirigo's is in the way)
        return _program_failed(e, user_files, traced=False)
    loaded_mark()
    phases.lap("load")
    result = _run_loaded(spec, loaded, ref_loaded, get_inputs, get_init_inputs, user_files, device, phases)
    result["phases"] = phases.seconds
    print(f"dirigo.trace: {spec['name']} phases (s): {phases.line()}", file=sys.stderr, flush=True)
    return result


class _PhaseClock:
    """Wall seconds per phase of one worker (load = importing the program and building its extensions,
    trace:<attempt> = running it under the recorder on every seed, probe = the call-history probe), in the
    result's "phases" and on stderr: what a batch of traces spends its time on."""

    def __init__(self):
        self.seconds: dict[str, float] = {}
        self._t = time.monotonic()

    def lap(self, name: str) -> None:
        now = time.monotonic()
        self.seconds[name] = round(self.seconds.get(name, 0.0) + now - self._t, 3)
        self._t = now

    def line(self) -> str:
        return ", ".join(f"{k} {v:.1f}" for k, v in self.seconds.items())


def _run_loaded(spec, loaded, ref_loaded, get_inputs, get_init_inputs, user_files, device, phases) -> dict:
    from . import load

    mode = spec["mode"]
    attempts = ["fake", "real"] if mode == "auto" and device == "cpu" else (
        ["real"] if mode == "auto" else [mode])
    uses_triton = _triton_setup(loaded, ref_loaded)
    if mode == "auto" and (loaded.extensions or uses_triton):
        attempts = ["real"]  # extension code and Triton's launcher read data_ptr(): fake tensors have none
    elif attempts == ["fake", "real"]:
        size = _meta_size(spec, loaded, get_inputs, get_init_inputs)
        if size is not None and size <= spec["real_limit_bytes"] // 4:
            attempts = ["real"]  # small inputs and parameters: skip the fake pass (and its import cost)
    fake_note = None
    fake_bytes = None
    for attempt in attempts:
        try:
            out = _trace_program(spec, loaded, get_inputs, get_init_inputs, attempt, device)
        except DataDependent as e:
            if attempt == "fake" and "real" in attempts:
                fake_note = str(e)
                continue
            return {"status": "unsupported", "message": str(e)}
        except Unsupported as e:
            return {"status": "unsupported", "message": f"UNSUPPORTED: {e}" if not str(e).startswith("UNSUPPORTED")
                    else str(e)}
        except load.NeedsGPU as e:
            return {"status": "unsupported", "message": str(e), "needs_gpu": True}
        except BaseException as e:  # noqa: BLE001 - user code
            if device == "cuda" and device_fault(e):
                return {"status": "crash", "message": _format_exception(e, user_files)}
            dd = _is_data_dependent(e) if attempt == "fake" else None
            if dd:
                msg = (f"UNSUPPORTED: data-dependent operation {dd} {_Phase.name} (a Python value or branch "
                       f"taken from tensor contents)")
                if "real" in attempts:
                    fake_note = msg
                    continue
                return {"status": "unsupported", "message": msg}
            seen = _format_exception(e, user_files)
            plain = _plain_run(spec, loaded, get_inputs, get_init_inputs, device)
            if plain is None:  # only under the tracer: dirigo's doing (or fake tensors'), not the program's
                return {"status": "error", "message": f"{seen}, but not when run without the tracer (dirigo could "
                                                      f"not trace it)", "tracer_only": True}
            if device == "cuda" and device_fault(plain):
                return {"status": "crash", "message": _format_exception(plain, user_files)}
            return _program_failed(plain, user_files, traced=True)
        phases.lap(f"trace:{attempt}")
        # Triton compiled without a GPU never runs its kernels: their outputs hold no result to probe
        kernels_run = not (uses_triton and sys.modules["dirigo.triton_trace"].compile_only())
        probe = spec["role"] == "candidate" and spec["file"] != spec["ref_file"] and kernels_run and (
            (out["status"] == "ok" and attempt == "real") or
            (out["status"] == "unsupported" and "op sequence depends" in out.get("message", "")))
        if probe:  # a result that depends on call history is a BUG, whatever the trace saw
            cost = ProbeCost()
            f = history_probe(spec, loaded, ref_loaded, get_inputs, get_init_inputs, device,
                              value_dependent=out.get("message", "").split(": ", 1)[-1]
                              if out["status"] != "ok" else "", cost=cost)
            print(f"dirigo.trace: {cost.line()}", file=sys.stderr, flush=True)
            out["probe"] = cost.line()
            phases.lap("probe")
            if f is not None:
                return {"status": "failed", "message": f["message"], "failure": f}
        if out["status"] != "ok":
            return out
        if attempt == "fake" and "real" in attempts:
            fake_bytes = sum(s["nbytes"] for s in out["program"]["storages"])
            if fake_bytes > spec["real_limit_bytes"]:
                out["mode"] = "fake"
                return out
            fake_result = out
            continue
        out["mode"] = attempt
        if fake_note:
            out["note"] = fake_note
        inherited = loaded.namespace.get("__dirigo_inherited__")
        if inherited and spec["file"] != spec["ref_file"]:
            out["note"] = "; ".join(filter(None, [out.get("note"), "names the candidate leaves undefined, taken from "
                                                  "the reference as the harness runs it: " + ", ".join(inherited)]))
        return out
    return fake_result  # pragma: no cover - loop always returns


def _meta_size(spec, loaded, get_inputs, get_init_inputs) -> int | None:
    """Bytes of inputs plus parameters, measured on the meta device (nothing allocated); None if the
    program cannot be built there (e.g. its __init__ reads tensor values)."""
    import torch
    from . import load
    try:
        with torch.device("meta"), contextlib.redirect_stdout(sys.stderr):
            torch.manual_seed(spec["init_seed"])
            init_inputs = list(get_init_inputs())
            with torch.no_grad():
                module, _ = load.build_model(loaded, init_inputs, spec["init_seed"])
            inputs = list(get_inputs())
        tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
        if isinstance(module, torch.nn.Module):
            tensors += list(module.parameters()) + list(module.buffers())
        return sum(t.numel() * t.element_size() for t in tensors)
    except Exception:  # noqa: BLE001 - any failure: take the safe path (fake first)
        return None


def _trace_program(spec, loaded, get_inputs, get_init_inputs, attempt, device) -> dict:
    import torch
    from . import load
    ctx = _fake_mode() if attempt == "fake" else contextlib.nullcontext()
    with ctx:
        init_inputs = _init_inputs(spec, get_init_inputs, device)
        _Phase.name = "in __init__"
        init_note = None
        try:
            with torch.no_grad():
                module, call = load.build_model(loaded, init_inputs, spec["init_seed"])
        except Exception as e:  # noqa: BLE001 - user code
            if attempt != "fake" or not _is_data_dependent(e):
                raise
            # __init__ reads tensor values (e.g. .item() on a linspace): build it on real tensors; forward
            # still runs on fake ones (real parameters enter the fake mode as constants of known shape)
            from torch._subclasses.fake_tensor import unset_fake_temporarily
            with unset_fake_temporarily(), torch.no_grad():
                module, call = load.build_model(loaded, init_inputs, spec["init_seed"])
            init_note = "the model was constructed on real tensors: its __init__ reads tensor values"
        if device == "cuda" and isinstance(module, torch.nn.Module):
            module = module.cuda()
        modules = []
        if device == "cuda":
            from . import launch
            modules = launch.collect_modules(loaded.extensions, spec["name"])
        traces = []
        for k, seed in enumerate(spec["seeds"]):
            _Phase.name = "in get_inputs"
            torch.manual_seed(seed)
            inputs = list(get_inputs())
            if device == "cuda":
                inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in inputs]
            names = load.forward_arg_names(module, len(inputs))
            rec, values = trace_once(call, module, inputs, names, device, capture_values=attempt == "real",
                                     capture_limit=spec.get("max_data_bytes", REAL_LIMIT_BYTES),
                                     record_state=attempt == "real" and k == 0)
            if device == "cuda":
                launch.finalize_launches(rec, modules)
                from . import cublas
                cublas.finalize_library(rec)  # cuBLAS calls of the program's own code -> library ops
                from . import streams
                caller = streams.canonicalize(rec.ops, first=getattr(rec, "caller_stream", 0))
                race = streams.find_race(rec.program(spec["name"], spec["role"], ""), caller_stream=caller)
                rec.ops[:] = streams.strip(rec.ops)
                if race and spec["role"] == "candidate":  # unsynchronized side stream: item "call history"
                    return {"status": "failed", "message": race["message"], "failure": race}
                bad = next((op for op in rec.ops if op.get("unresolved")), None)
                if bad:
                    raise Unsupported(f"kernel {bad['kernel']} was launched {_Phase.name}: {bad['unresolved']}")
            if _triton_finalize(rec, spec["name"], modules):
                bad = next((op for op in rec.ops if op.get("unresolved")), None)
                if bad:
                    raise Unsupported(f"kernel {bad['kernel']} was launched {_Phase.name}: {bad['unresolved']}")
            prog = rec.program(spec["name"], spec["role"], os.path.basename(spec["file"]))
            data = {}
            if k == 0 and values and spec.get("data_dir"):
                data = _write_data(spec, prog, values, capture_values=attempt == "real")
            traces.append((prog, None, data))
            del rec, inputs  # free this run's tensors before the next (GPU memory)
            if device == "cuda":
                torch.cuda.empty_cache()
        first, second = traces[0][0], traces[1][0] if len(traces) > 1 else None
    if second is not None:
        diff = first_difference(first, second)
        if diff:
            return {"status": "unsupported",
                    "message": f"UNSUPPORTED: the op sequence depends on the input values "
                               f"(seeds {spec['seeds'][0]} and {spec['seeds'][1]}): {diff}"}
    params = []
    for inp in first["inputs"]:
        meta = next(x for x in first["tensors"] if x["id"] == inp["tensor"])
        params.append({"name": inp["name"], "kind": inp["kind"], "shape": meta["shape"], "dtype": meta["dtype"],
                       "sha256": inp.get("sha256")})
    launches = sum(1 for op in first["ops"] if op["kind"] == "launch")
    if any(op.get("triton", {}).get("compiled_only") for op in first["ops"] if op["kind"] == "launch"):
        init_note = "; ".join(filter(None, [init_note, "Triton kernels compiled for sm_90 and not run (no GPU): "
                                                       "the outputs' values are not recorded"]))
    return {"status": "ok", "program": first, "inputs_info": params, "data": traces[0][2], "note": init_note,
            "extensions": [e.to_json() for e in loaded.extensions], "modules": modules, "launches": launches,
            "kind": loaded.kind}


def _write_data(spec, prog, values: dict, capture_values: bool = True) -> dict:
    """Write the traced input values and the outputs to data/<program>.<name>.bin (up to a size limit, and
    only unless --no-data); captured constants are always written (their size is capped when recorded)."""
    constants = {e["name"] for e in prog["inputs"] if e.get("constant")}
    keep_all = (capture_values and spec.get("write_values", True) and
                sum(len(v) for k, v in values.items() if k not in constants)
                <= spec.get("max_data_bytes", REAL_LIMIT_BYTES))
    written = {}
    for e in prog["inputs"] + prog["outputs"]:
        body = values.get(e["name"])
        if body is None or not (keep_all or e["name"] in constants):
            continue
        rel = f"data/{prog['name']}.{e['name']}.bin"
        path = os.path.join(spec["data_dir"], os.path.basename(rel))
        with open(path, "wb") as fh:
            fh.write(body)
        e["data"] = rel
        written[rel] = path
    return written


def worker_main(spec_path: str) -> int:
    with open(spec_path) as fh:
        spec = json.load(fh)
    try:
        result = run_worker(spec)
        if result.get("status") == "ok":
            import torch
            result["runtime"] = {"torch": torch.__version__, "device": torch.cuda.get_device_name()
                                 if spec["device"] == "cuda" else "cpu"}
    except BaseException as e:  # noqa: BLE001 - last resort: report, do not crash
        result = {"status": "internal", "message": f"internal tracer error: {type(e).__name__}: {e}",
                  "traceback": traceback.format_exc()}
    tmp = spec["result"] + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(result, fh, allow_nan=False)
    os.replace(tmp, spec["result"])  # the parent never reads a half-written result
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # do not wait for threads or atexit handlers the program left behind


# ---------------------------------------------------------------------------------------------------------
# The parent: spawns workers, checks, writes the bundle

@dataclass
class TraceResult:
    # "ok" | "unsupported" | "error" (the reference failed, or the candidate only under the tracer) | "failed"
    # (the candidate raised, timed out or died where the reference ran) | "crash" (the candidate faulted on the
    # GPU; the reference ran) | "internal" (the tracer itself failed)
    status: str
    message: str
    out: str | None = None
    programs: dict = field(default_factory=dict)  # name -> worker result (without data)
    seconds: float | None = None  # wall time of the whole trace (both workers run at once)
    failure: dict | None = None  # "failed"/"crash": kind, exception type, message, candidate file:line, phase

    @property
    def evidence(self) -> str:
        """What backs the candidate's BUG: exception | timeout | crash | crash-gpu ("" when none)."""
        if self.status == "crash":
            return "crash-gpu"
        return (self.failure or {}).get("kind", "") if self.status == "failed" else ""

    @property
    def compile_seconds(self) -> float:
        """Wall time spent inside load_inline / load builds (the rest of `seconds` is tracing)."""
        return round(sum(e.get("compile_seconds") or 0.0 for r in self.programs.values()
                         for e in (r.get("extensions") or [])), 3)

    @property
    def exit_code(self) -> int:
        return {"ok": EXIT_OK, "unsupported": EXIT_UNSUPPORTED, "crash": EXIT_CANDIDATE_CRASH,
                "failed": EXIT_CANDIDATE_CRASH, "internal": EXIT_INTERNAL}.get(self.status, EXIT_PROGRAM_ERROR)


def _spawn(spec: dict, workdir: str) -> tuple[subprocess.Popen, str]:
    spec_path = os.path.join(workdir, f"{spec['name']}.spec.json")
    spec["result"] = os.path.join(workdir, f"{spec['name']}.result.json")
    with open(spec_path, "w") as fh:
        json.dump(spec, fh)
    env = dict(os.environ)
    pkg_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = pkg_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    if spec["device"] == "cpu":
        env.setdefault("CUDA_VISIBLE_DEVICES", "")
    elif spec.get("shim"):
        env["LD_PRELOAD"] = spec["shim"] + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    log_path = os.path.join(workdir, f"{spec['name']}.log")
    if spec["device"] == "cpu":  # a fork of the warm worker when the caller holds one (dirigo.worker)
        from . import worker
        extra = {} if "CUDA_VISIBLE_DEVICES" in os.environ else {"CUDA_VISIBLE_DEVICES": ""}
        return worker.popen("dirigo.trace", ["--worker", spec_path], stdout_path=log_path, env=extra,
                            plain_env=env), spec["result"]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "dirigo.trace", "--worker", spec_path], stdout=log,
                                stderr=subprocess.STDOUT, env=env, start_new_session=True)
    return proc, spec["result"]


def _wait(proc: subprocess.Popen, result_path: str, deadline: float, timeout: float, workdir: str,
          name: str) -> dict:
    try:
        proc.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # the worker's own process group (start_new_session)
        proc.wait()
        if not os.path.exists(result_path) and not os.path.exists(result_path + ".loaded"):
            # still loading: building its extensions (nvcc) may be what took the time, not the program
            return {"status": "unsupported", "message": f"UNSUPPORTED: environment: the program did not finish "
                                                        f"loading (building its extensions) within {timeout:g} s "
                                                        f"(killed); a longer --timeout may let it"}
        if not os.path.exists(result_path):
            return {"status": "failed", "message": f"the program did not finish within {timeout:g} s (killed)",
                    "failure": {"kind": "timeout", "type": "", "message": f"killed after {timeout:g} s",
                                "where": "", "phase": ""}}
        with open(result_path) as fh:  # finished, then lingered: the result stands
            return json.load(fh)
    if proc.returncode != 0 or not os.path.exists(result_path):
        rc = proc.returncode
        how = (f"crashed with signal {signal.Signals(-rc).name}" if rc < 0
               else f"exited with status {rc}")
        tail = ""
        with contextlib.suppress(OSError):
            with open(os.path.join(workdir, f"{name}.log"), "rb") as fh:
                lines = [ln for ln in fh.read().decode("utf-8", "replace").splitlines() if ln.strip()]
                tail = f" (last output: {lines[-1][:200]})" if lines else ""
        return {"status": "failed", "message": f"the program {how} while being traced{tail}",
                "failure": {"kind": "crash", "type": "", "message": how, "where": "", "phase": ""}}
    with open(result_path) as fh:
        return json.load(fh)


def _match(ref: dict, new: dict) -> tuple[dict, list[str]]:
    """Pair the two traced programs' inputs and outputs (dirigo.match: forward inputs and outputs by
    position; parameters and buffers by normalized name, then by position among the same-shaped ones,
    recorded values breaking ties and, where they differ, noted)."""
    return match_mod.match_programs(ref["program"], new["program"])


def trace(ref: str, new: str | None = None, out: str | None = None, *, device: str = "cpu",
          timeout: float = DEFAULT_TIMEOUT_S, mode: str = "auto", atol: float = DEFAULT_TOLERANCE,
          rtol: float = DEFAULT_TOLERANCE, seeds: list[int] | None = None, init_seed: int | None = None,
          functional: str | None = None, write_data: bool = True,
          real_limit_bytes: int = REAL_LIMIT_BYTES, shim: str | None = None) -> TraceResult:
    """Trace REF (and NEW) in subprocesses and write a bundle to `out`. Never raises for user-code errors."""
    t0 = time.monotonic()
    r = _trace(ref, new, out, device=device, timeout=timeout, mode=mode, atol=atol, rtol=rtol, seeds=seeds,
               init_seed=init_seed, functional=functional, write_data=write_data,
               real_limit_bytes=real_limit_bytes, shim=shim)
    r.seconds = round(time.monotonic() - t0, 3)
    return r


def _trace(ref, new, out, *, device, timeout, mode, atol, rtol, seeds, init_seed, functional, write_data,
           real_limit_bytes, shim) -> TraceResult:
    from . import load
    init_seed = load.INIT_SEED if init_seed is None else init_seed
    seeds = list(seeds) if seeds else None  # None: the workers derive KernelBench's (no torch import here)
    ref, new = os.path.abspath(ref), (os.path.abspath(new) if new else None)
    if new and new.endswith(".cu") and not functional:
        functional = ref
    if device == "cuda" and shim is None:
        from . import launch
        shim = launch.shim_path()
    workdir = tempfile.mkdtemp(prefix="dirigo-trace-")
    data_dir = os.path.join(workdir, "data")
    os.makedirs(data_dir)
    specs = [{"name": "ref", "role": "reference", "file": ref, "ref_file": ref}]
    if new:
        specs.append({"name": "new", "role": "candidate", "file": new, "ref_file": ref,
                      "functional_file": functional})
    procs = []
    if device == "cpu":  # a warm worker the caller wants starts (imports torch) before the trace's clock does
        from . import worker
        worker.shared()
    deadline = time.monotonic() + timeout
    for s in specs:
        s.update(device=device, mode=mode, seeds=seeds, init_seed=init_seed, real_limit_bytes=real_limit_bytes,
                 data_dir=data_dir, write_values=write_data, shim=shim)  # constants' values are always written
        procs.append((s,) + _spawn(s, workdir))
    results = {}
    for s, proc, rpath in procs:
        results[s["name"]] = _wait(proc, rpath, deadline, timeout, workdir, s["name"])
    for s in specs:  # report the reference's failure first
        r = results[s["name"]]
        if r["status"] != "ok":
            who = f"{'reference' if s['name'] == 'ref' else 'candidate'} {os.path.basename(s['file'])}"
            msg = r["message"]
            if r["status"] == "internal":
                return TraceResult("internal", f"{who}: {msg}", programs=results)
            if r["status"] in ("crash", "failed"):
                if s["name"] == "new":  # the reference ran: the failure is the candidate's (a BUG, exit 5)
                    f = r.get("failure") or {}
                    where = f" at {f['where']}" if f.get("where") and f["where"] not in msg else ""
                    gpu = " on the GPU, where the reference ran" if r["status"] == "crash" else ""
                    return TraceResult(r["status"], f"{who}: {msg}{gpu}{where}", programs=results,
                                       failure=r.get("failure"))
                r = dict(r, status="error")
            if r["status"] == "unsupported":
                msg = "UNSUPPORTED: " + who + ": " + msg[len("UNSUPPORTED: "):] if msg.startswith(
                    "UNSUPPORTED: ") else f"UNSUPPORTED: {who}: {msg}"
            elif s["name"] == "ref":
                msg = f"UNSUPPORTED: the reference failed, so there is nothing to compare against: {who}: {msg}"
            else:
                msg = f"UNSUPPORTED: {who}: {msg}"
            return TraceResult(r["status"], msg, programs=results)
    manifest = {"format": bundle_mod.FORMAT, "version": bundle_mod.VERSION,
                "created_by": _created_by(results), "modules": [], "programs": [],
                "tolerance": {"atol": atol, "rtol": rtol}}
    ptx, data = {}, {}
    for s in specs:
        r = results[s["name"]]
        if r.get("extensions"):  # the C++/CUDA sources the program compiled (for mutation and re-compiling)
            r["program"]["extensions"] = r["extensions"]
        manifest["programs"].append(r["program"])
        for m in r.get("modules", []):
            ptx[m["id"]] = m.pop("ptx")
            manifest["modules"].append(m)
        for rel, path in (r.get("data") or {}).items():
            with open(path, "rb") as fh:
                data[rel] = fh.read()
    if new:
        match, notes = _match(results["ref"], results["new"])
        if notes:
            match["notes"] = notes
        manifest["match"] = match
    notes = [f"{s['name']}: traced on {results[s['name']].get('mode')} tensors"
             + (f" ({results[s['name']]['note']})" if results[s['name']].get("note") else "")
             + (f"; {results[s['name']]['probe']}" if results[s['name']].get("probe") else "") for s in specs]
    manifest["trace_notes"] = notes
    if out is None:
        return TraceResult("ok", "traced (no --out given, nothing written)", programs=results)
    try:
        os.makedirs(out, exist_ok=True)
        bundle_mod.write_bundle(out, manifest, ptx, data)
    except bundle_mod.BundleError as e:
        return TraceResult("error", f"internal tracer error: the bundle does not validate: {e}", programs=results)
    counts = ", ".join(f"{p['name']}: {len(p['ops'])} ops" for p in manifest["programs"])
    return TraceResult("ok", f"wrote {out} ({counts})", out=out, programs=results)


def _created_by(results: dict) -> dict:
    info = {"tool": f"dirigo {__version__}", "python": sys.version.split()[0]}
    info.update(results["ref"].get("runtime", {}))  # torch version and device, as the worker saw them
    return info


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 2 and argv[0] == "--worker":
        return worker_main(argv[1])
    ap = argparse.ArgumentParser(prog="python -m dirigo.trace",
                                 description="Trace a PyTorch reference (and a candidate) into a trace bundle.")
    ap.add_argument("ref", help="reference program (KernelBench Model file, or functional form)")
    ap.add_argument("new", nargs="?", help="candidate program (ModelNew file, functional form, or .cu file)")
    ap.add_argument("--out", required=True, help="bundle directory to write")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds for the whole trace")
    ap.add_argument("--mode", choices=["auto", "fake", "real"], default="auto",
                    help="fake: shapes only; real: run on real tensors; auto: fake, then real when small")
    ap.add_argument("--atol", type=float, default=DEFAULT_TOLERANCE)
    ap.add_argument("--rtol", type=float, default=DEFAULT_TOLERANCE)
    ap.add_argument("--seed", type=int, default=None, help="init seed (KernelBench: 42)")
    ap.add_argument("--input-seeds", type=int, nargs=2, default=None, metavar=("S1", "S2"))
    ap.add_argument("--functional", help="functional form paired with a .cu candidate (default: REF)")
    ap.add_argument("--no-data", action="store_true",
                    help="do not write data/ with traced values (captured constants are still written)")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    a = ap.parse_args(argv)
    r = trace(a.ref, a.new, a.out, device=a.device, timeout=a.timeout, mode=a.mode, atol=a.atol, rtol=a.rtol,
              seeds=a.input_seeds, init_seed=a.seed, functional=a.functional, write_data=not a.no_data)
    if a.json:
        print(json.dumps({"status": r.status, "message": r.message, "out": r.out, "seconds": r.seconds,
                          "compile_seconds": r.compile_seconds, "evidence": r.evidence, "failure": r.failure,
                          "phases": {k: p.get("phases") for k, p in (r.programs or {}).items()}}))
    else:
        print(("ERROR: " if r.status == "error" else "") + r.message)
    return r.exit_code


if __name__ == "__main__":
    sys.exit(main())
