"""Witness replay (docs/check.md): run both real programs at a witness and observe the difference.

    python -m dirigo.replay WITNESS.json [--ref REF.py --new NEW.py] [--device cpu|cuda] [--json]
    python -m dirigo.replay W1.json W2.json ... [--out-dir DIR] [--json]     (several witnesses)
    python -m dirigo.replay --list-groups W1.json W2.json ...                 (one line per program pair)

A witness (format `dirigo-witness`, written by `dirigo check --witness-out`) gives values for the
input elements one output location depends on. Replay rebuilds the inputs KernelBench's first trial
uses, writes the witness values into them, carries values stated over results of the trimmed common
prefix back to program inputs by gradient descent through the reference's recorded ATen ops, runs
both programs and compares them at the location against atol + rtol*|ref|.

Several witnesses of the same pair of programs (same files, seeds and device) share one load of the
programs — one extension build, one model construction: every input, parameter and buffer is saved after
loading and put back before each further witness.

Loading executes user code: like the tracer, the CLI runs this module in a child process.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import time
import traceback

from . import load, trace
from .childio import answer_channel
from .common import json_float, torch_dtype

FORMAT, VERSION = "dirigo-witness", 1
RESULT_FORMAT = "dirigo-replay"
EXIT_REPRODUCED, EXIT_NOT_REPRODUCED, EXIT_IMPOSSIBLE, EXIT_USAGE = 0, 2, 4, 64


class ReplayError(RuntimeError):
    """The witness cannot be replayed (bad witness, program that cannot run here); the message says why."""


def _float(v):
    if isinstance(v, str):
        return {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}[v]
    return float(v)


def resolve_program(path: str) -> str:
    """A program path from a witness: as given, else (a witness written on another machine) the part from
    `.cache/` or `tests/` on, relative to the working directory (the repository root)."""
    if os.path.exists(path):
        return path
    for anchor in ("/.cache/", "/tests/", "/examples/"):
        k = path.find(anchor)
        if k >= 0 and os.path.exists(path[k + 1:]):
            return path[k + 1:]
    return path


def validate(w: dict) -> None:
    if not isinstance(w, dict) or w.get("format") != FORMAT:
        raise ReplayError(f"not a dirigo witness (format must be {FORMAT!r})")
    if w.get("version") != VERSION:
        raise ReplayError(f"witness version {w.get('version')!r} is not supported (only {VERSION})")
    for key in ("output", "location", "leaves"):
        if key not in w:
            raise ReplayError(f"witness has no {key!r}")
    if not isinstance(w["leaves"], list):
        raise ReplayError("witness 'leaves' must be a list")
    for i, leaf in enumerate(w["leaves"]):
        for key in ("input", "kind", "index", "value"):
            if key not in leaf:
                raise ReplayError(f"witness leaves[{i}] has no {key!r}")
        if leaf["kind"] not in ("input", "parameter", "buffer", "trimmed", "external"):
            raise ReplayError(f"witness leaves[{i}]: unknown kind {leaf['kind']!r}")
        if leaf["kind"] == "trimmed" and ("op" not in leaf or "tensor" not in leaf):
            raise ReplayError(f"witness leaves[{i}]: a trimmed leaf needs 'op' and 'tensor'")
    if w.get("others", "zero") != "zero":
        raise ReplayError(f"witness 'others' must be \"zero\", not {w['others']!r}")
    for i, f in enumerate(w.get("fill", [])):
        if not isinstance(f, dict) or any(k not in f for k in ("kind", "input", "value")):
            raise ReplayError(f"witness fill[{i}] needs 'kind', 'input' and 'value'")
        if f["kind"] not in ("input", "parameter", "buffer"):
            raise ReplayError(f"witness fill[{i}]: kind {f['kind']!r} cannot be filled")


# ---------------------------------------------------------------------------------------------------------
# Programs

class Programs:
    """Both programs built the way the tracer builds them (load.py): parameters under init_seed, inputs
    from the reference's get_inputs() under the input seed, on `device`."""

    def __init__(self, ref: str, new: str, device: str, init_seed: int, input_seed: int | None):
        import torch
        allow_cuda = device == "cuda"
        try:
            self.ref_loaded = load.load_file(ref, allow_cuda=allow_cuda)
            self.new_loaded = load.load_file(new, allow_cuda=allow_cuda,
                                             functional_file=ref if new.endswith(".cu") else None,
                                             reference=self.ref_loaded)
        except load.NeedsGPU as e:
            raise ReplayError(f"cannot replay here: {e}") from None
        get_inputs, get_init_inputs = load.reference_io(self.ref_loaded)
        if input_seed is None:
            input_seed = load.kernelbench_trial_seeds(init_seed, 1)[0]
        self.input_seed = input_seed
        built = []
        for loaded in (self.ref_loaded, self.new_loaded):
            torch.manual_seed(init_seed)
            init_inputs = list(get_init_inputs())
            if device == "cuda":
                init_inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in init_inputs]
            with torch.no_grad():
                module, call = load.build_model(loaded, init_inputs, init_seed)
            if device == "cuda" and isinstance(module, torch.nn.Module):
                module = module.cuda()
            built.append((module, call))
        (self.ref_module, self.ref_call), (self.new_module, self.new_call) = built
        torch.manual_seed(input_seed)
        inputs = list(get_inputs())
        self.inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]
        self.input_names = load.forward_arg_names(self.ref_module, len(self.inputs))
        self.device = device

    def _tensors(self) -> list:
        import torch
        seen, out = set(), []
        for t in [*self.inputs, *self.state("ref").values(), *self.state("new").values()]:
            if isinstance(t, torch.Tensor) and id(t) not in seen:
                seen.add(id(t))
                out.append(t)
        return out

    def snapshot(self) -> None:
        """Remember the value of every input, parameter and buffer (a witness changes them in place, and a
        forward in training mode updates running statistics), so that restore() can undo a replay."""
        self._saved = [(t, t.detach().clone()) for t in self._tensors()]

    def restore(self) -> None:
        import torch
        with torch.no_grad():
            for t, saved in self._saved:
                t.copy_(saved)

    def state(self, which: str) -> dict:
        import torch
        module = self.ref_module if which == "ref" else self.new_module
        if not isinstance(module, torch.nn.Module):
            return {}
        out = dict(module.named_parameters())
        out.update({n: b for n, b in module.named_buffers() if b is not None})
        return out

    def input_tensor(self, name: str):
        if name not in self.input_names:
            raise ReplayError(f"the witness names input {name!r}, but the reference's forward takes "
                              f"{self.input_names}")
        t = self.inputs[self.input_names.index(name)]
        import torch
        if not isinstance(t, torch.Tensor):
            raise ReplayError(f"input {name!r} is not a tensor")
        return t

    def run(self):
        """Both programs on copies of the inputs (a program may write its inputs in place)."""
        import torch
        from torch.utils._pytree import tree_leaves
        outs = []
        for call in (self.ref_call, self.new_call):
            args = [x.clone() if isinstance(x, torch.Tensor) else x for x in self.inputs]
            with torch.no_grad():
                result = call(*args)
            if self.device == "cuda":
                torch.cuda.synchronize()
            outs.append([x for x in tree_leaves(result) if isinstance(x, torch.Tensor)])
        return outs


def _flat_indices(t, idx):
    """Row-major flat positions of the multi-indices idx (an n x dim long tensor) in t, checked."""
    import torch
    if idx.dim() != 2 or idx.shape[1] != t.dim():
        raise ReplayError(f"index of {idx.shape[-1] if idx.dim() == 2 else '?'} dimensions does not fit a tensor of "
                          f"shape {list(t.shape)}")
    shape = torch.tensor(list(t.shape), dtype=torch.long, device=idx.device)
    bad = ((idx < 0) | (idx >= shape)).any(dim=1)
    if bool(bad.any()):
        raise ReplayError(f"index {idx[bad.nonzero()[0, 0]].tolist()} is outside shape {list(t.shape)}")
    strides = [1] * t.dim()
    for d in range(t.dim() - 2, -1, -1):
        strides[d] = strides[d + 1] * t.shape[d + 1]
    return (idx * torch.tensor(strides, dtype=torch.long, device=idx.device)).sum(dim=1)


def _gather(t, idx):
    """The elements of t at the multi-indices idx (differentiable)."""
    return t.reshape(-1)[_flat_indices(t, idx.to(t.device))]


def _set_elements(t, indices: list, values: list) -> None:
    """t[index] = value for every pair, in one write (a giant witness sets 10^6 elements)."""
    import torch
    idx = torch.tensor(indices, dtype=torch.long).reshape(len(indices), -1).to(t.device)
    flat = _flat_indices(t, idx)
    vals = torch.tensor(values, dtype=torch.float64)
    if not t.dtype.is_floating_point:
        vals = vals.round()
    vals = vals.to(device=t.device, dtype=t.dtype)
    with torch.no_grad():
        if t.is_contiguous():
            t.view(-1)[flat] = vals
        else:  # a strided parameter: write through a contiguous copy
            c = t.contiguous()
            c.view(-1)[flat] = vals
            t.copy_(c)


# ---------------------------------------------------------------------------------------------------------
# Carrying a witness back through the trimmed prefix

def _decode(arg: dict, env: dict, where: str):
    """A bundle ARG (docs/bundle-format.md) -> a Python value; tensors from env. Iterative over lists."""
    import torch

    def leaf(a):
        if "tensor" in a:
            if a["tensor"] not in env:
                raise ReplayError(f"{where}: reads tensor {a['tensor']}, which is neither an input nor a result "
                                  f"of an earlier op")
            return env[a["tensor"]]
        if "none" in a:
            return None
        if "scalar" in a:
            s, ty = a["scalar"], a.get("type")
            if ty == "float":
                return _float(s)
            if ty == "int":
                return int(s)
            if ty == "bool":
                return bool(s)
            if ty == "complex":
                return complex(_float(s[0]), _float(s[1]))
            raise ReplayError(f"{where}: scalar of type {ty!r}")
        if "string" in a:
            return a["string"]
        if "dtype" in a:
            return torch_dtype(a["dtype"])
        if "layout" in a:
            return getattr(torch, a["layout"])
        if "device" in a:
            return torch.device(a["device"])
        if "memory_format" in a:
            return getattr(torch, a["memory_format"])
        raise ReplayError(f"{where}: an argument of a kind replay does not know: {sorted(a)}")

    if "list" not in arg:
        return leaf(arg)
    root: list = []
    stack = [(arg["list"], root)]
    while stack:
        items, out = stack.pop()
        for a in items:
            if "list" in a:
                sub: list = []
                out.append(sub)
                stack.append((a["list"], sub))
            else:
                out.append(leaf(a))
    return root


def _record_reference(progs: Programs):
    """The reference's op list as the tracer records it (same Recorder, same input registration order),
    so op indices and tensor ids are the ones in the witness."""
    args = [x.clone() if hasattr(x, "clone") else x for x in progs.inputs]
    # device "cpu": no launch hook (a reference is pure PyTorch; its ops are recorded the same way)
    with contextlib.redirect_stdout(sys.stderr):
        rec, _ = trace.trace_once(progs.ref_call, progs.ref_module, args, progs.input_names, "cpu",
                                  capture_values=False)
    return rec


def carry_back(progs: Programs, trimmed: list[dict], bound: float, steps: int = 300, seed: int = 0,
               fixed: list[tuple] | None = None) -> dict:
    """Change the floating-point inputs/parameters/buffers the prefix reads so that the prefix results
    at the trimmed leaves approach their witness values; writes the result into progs (reference
    names; the caller mirrors parameters into the candidate). Returns a summary."""
    import torch
    from torch.utils._pytree import tree_leaves
    rec = _record_reference(progs)
    last = max(int(l["op"]) for l in trimmed)
    if last >= len(rec.ops):
        raise ReplayError(f"the witness names prefix op {last}, but the reference records only {len(rec.ops)} ops")
    for l in trimmed:
        op = rec.ops[int(l["op"])]
        if op["kind"] != "aten":
            raise ReplayError(f"prefix op {l['op']} is a {op['kind']}, not an ATen op")
        if l.get("aten") and l["aten"] != op["name"]:
            raise ReplayError(f"prefix op {l['op']} is {op['name']} when re-recorded, the witness says {l['aten']}: "
                              f"the program does not record the same way here")
    state = progs.state("ref")
    # the tensors replay may change: every registered floating-point input, parameter and buffer
    sources = {}
    for inp in rec.inputs:
        if inp.get("constant"):
            continue
        t = progs.input_tensor(inp["name"]) if inp["kind"] == "input" else state.get(inp["name"])
        if isinstance(t, torch.Tensor):
            sources[inp["tensor"]] = (inp["name"], inp["kind"], t)
    variables = {}
    for tid, (name, kind, t) in sources.items():
        if t.dtype.is_floating_point:
            variables[tid] = t.detach().clone().requires_grad_(True)
    limits = {tid: torch.clamp(v.detach().abs(), min=bound) for tid, v in variables.items()}
    # elements the witness sets directly stay at its values while the rest moves (masks built with one
    # write per tensor: a giant witness fixes 10^6 elements)
    fixed_by_name: dict = {}
    for name, index, value in fixed or []:
        fixed_by_name.setdefault(name, ([], []))[0].append(index)
        fixed_by_name[name][1].append(value)
    fixed_masks = {}
    for tid, (n, _, _) in sources.items():
        if n in fixed_by_name and tid in variables:
            v = variables[tid]
            indices, values = fixed_by_name[n]
            flat = _flat_indices(v, torch.tensor(indices, dtype=torch.long, device=v.device).reshape(len(indices), -1))
            mask = torch.zeros(v.numel(), dtype=torch.bool, device=v.device)
            vals = torch.zeros(v.numel(), dtype=v.dtype, device=v.device)
            mask[flat] = True
            vals[flat] = torch.tensor(values, dtype=v.dtype, device=v.device)
            fixed_masks[tid] = (mask.view_as(v), vals.view_as(v))
    constants = {tid: t for tid, t, _ in rec.constants}  # (id, tensor, value at first use)
    ops = rec.ops
    rec.alive.clear()  # the recorder keeps every tensor of the forward alive: not needed any more
    rec.entries.clear()
    # per op, per tensor: the witness positions and multi-indices of its trimmed leaves, read with one
    # gather per tensor (10^4 leaves read one by one made each Adam step ~10^4 kernel launches)
    need: dict = {}
    for k, l in enumerate(trimmed):
        pos, idx = need.setdefault(int(l["op"]), {}).setdefault(l["tensor"], ([], []))
        pos.append(k)
        idx.append([int(i) for i in l["index"]])
    need = {k: {tensor: (torch.tensor(pos, device=progs.device), torch.tensor(idx, dtype=torch.long, device=progs.device))
                for tensor, (pos, idx) in by_tensor.items()}
            for k, by_tensor in need.items()}
    target = torch.tensor([_float(l["value"]) for l in trimmed], dtype=torch.float64, device=progs.device)

    def forward():
        env = dict(constants)
        for tid, (name, kind, t) in sources.items():
            env[tid] = variables[tid] * 1 if tid in variables else t.detach().clone()  # non-leaf: in-place ok
        got_pos, got_val = [], []
        for k in range(last + 1):
            op = ops[k]
            if op["kind"] != "aten":
                raise ReplayError(f"op {k} before the last trimmed op is a {op['kind']}")
            ns, _, name = op["name"].partition("::")
            try:
                func = getattr(getattr(getattr(torch.ops, ns), name), op["overload"])
            except AttributeError:
                raise ReplayError(f"op {k}: no torch.ops.{ns}.{name}.{op['overload']}") from None
            where = f"op {k} ({op['name']})"
            args = [_decode(a, env, where) for a in op["args"]]
            kwargs = {n: _decode(a, env, where) for n, a in op["kwargs"].items()}
            result = func(*args, **kwargs)
            outs = [x for x in tree_leaves(result) if isinstance(x, torch.Tensor)]
            for tid, t in zip(op["outputs"], outs):
                env[tid] = t
            for tensor, (pos, idx) in need.get(k, {}).items():
                if tensor not in env:
                    raise ReplayError(f"prefix op {k}: tensor {tensor} is not among its results or operands")
                got_pos.append(pos)
                got_val.append(_gather(env[tensor], idx).to(torch.float64))
        order = torch.argsort(torch.cat(got_pos))
        return torch.cat(got_val)[order]

    t0 = time.monotonic()
    torch.manual_seed(seed)
    params = list(variables.values())
    if not params:
        raise ReplayError("the trimmed prefix reads no floating-point input that could be changed")
    opt = torch.optim.Adam(params, lr=0.1)
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, [steps // 2, (3 * steps) // 4], gamma=0.2)

    def project():
        with torch.no_grad():
            for tid, v in variables.items():
                v.copy_(torch.maximum(torch.minimum(v, limits[tid]), -limits[tid]))
                if tid in fixed_masks:
                    mask, vals = fixed_masks[tid]
                    v[mask] = vals[mask]

    project()
    scale = torch.clamp(target.abs(), min=1.0)
    done = 0
    for done in range(1, steps + 1):
        opt.zero_grad()
        pred = forward()
        loss = (((pred - target) / scale) ** 2).mean()
        if not torch.isfinite(loss):
            raise ReplayError("carrying the witness back diverged (non-finite prefix values)")
        loss.backward()
        opt.step()
        sched.step()
        project()
        if float(loss.detach()) < 1e-12:
            break
    with torch.no_grad():
        pred = forward()
    residual = (pred - target).abs()
    for tid, v in variables.items():
        name, kind, t = sources[tid]
        with torch.no_grad():
            t.copy_(v.detach())
    return {"leaves": len(trimmed), "steps": done, "max_residual": float(residual.max()),
            "seconds": round(time.monotonic() - t0, 3),
            "changed": sorted({sources[tid][0] for tid in variables})}


# ---------------------------------------------------------------------------------------------------------
# Replay

_M64 = (1 << 64) - 1


def _mix(x):
    """splitmix64's finalizer on numpy uint64 arrays (wrapping arithmetic), as smt::PointSampler::mix."""
    import numpy as np
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def _name_key(name: str) -> int:
    """smt::name_key: FNV-1a 64 of the tensor name, low 24 bits."""
    h = 0xCBF29CE484222325
    for c in name.encode():
        h = ((h ^ c) * 0x100000001B3) & _M64
    return h & 0xFFFFFF


def sampled_values(sampled: dict, name: str, n: int):
    """The n row-major values check's numeric evaluation drew for shared input `name` at the witness's
    point (docs/check.md, "Giant locations"): the same as smt::draw keyed by smt::name_key("in:" + name)."""
    import numpy as np
    seed, point = int(sampled["seed"]), int(sampled["point"])
    bound, nonnegative = float(sampled["bound"]), bool(sampled["nonnegative"])
    base = _mix(np.array([(seed * 1000003 + point) & _M64], dtype=np.uint64))[0]
    idx = np.arange(n, dtype=np.uint64)
    leaf = _mix((np.uint64(_name_key("in:" + name)) << np.uint64(40)) ^ idx)
    h = _mix(base ^ leaf)
    unit = (h >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
    if sampled.get("distribution", "uniform") == "normal":  # Box-Muller, as smt::PointSampler::real_from
        u2 = (_mix(h ^ np.uint64(0x5851F42D4C957F2D)) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
        z = np.sqrt(-2.0 * np.log1p(-unit)) * np.cos(6.283185307179586 * u2)
        return (np.abs(z) if nonnegative else z) * bound
    return (unit if nonnegative else unit * 2 - 1) * bound


def _set_sampled(progs: "Programs", witness: dict, ref_state: dict, fixed: list) -> None:
    """Every shared input regenerated from a sampled witness's (seed, point); those it names "zeroed" set to 0."""
    import torch
    sampled = witness["sampled"]
    for inp in witness.get("inputs", []):
        kind, name = inp["kind"], inp["input"]
        t = progs.input_tensor(name) if kind == "input" else ref_state.get(name)
        if t is None:
            raise ReplayError(f"the reference has no {kind} {name!r}")
        with torch.no_grad():
            if name in sampled.get("zeroed", ()):  # 0 in every element at this point, not drawn
                t.zero_()
                continue
            vals = sampled_values(sampled, name, t.numel())
            t.copy_(torch.from_numpy(vals).reshape(t.shape).to(t.dtype))


def _zero_others(progs: "Programs", witness: dict, ref_state: dict, new_state: dict) -> None:
    """A witness whose reductions read elements it does not list ("others": "zero"): those are 0 at the
    point dirigo evaluated (or, for the inputs it names under "fill", that value), so every
    floating-point shared input and every parameter and buffer of both programs is set so before the
    listed leaves are written."""
    import torch
    tensors = [progs.input_tensor(inp["input"]) for inp in witness.get("inputs", []) if inp["kind"] == "input"]
    tensors += list(ref_state.values()) + list(new_state.values())
    with torch.no_grad():
        for t in tensors:
            if isinstance(t, torch.Tensor) and t.dtype.is_floating_point:
                t.zero_()
        for f in witness.get("fill", []):  # every element of these at a value instead of 0
            kind, name = f["kind"], f["input"]
            if kind == "input":
                t = progs.input_tensor(name)
            else:
                t = (new_state if f.get("program") == "candidate" else ref_state).get(name)
            if t is None:
                raise ReplayError(f"the witness fills {kind} {name!r}, which the programs do not have")
            t.fill_(_float(f["value"]))


def _allowed(ref: float, atol: float, rtol: float) -> float:
    return atol + rtol * abs(ref)


def _exceeds(a: float, b: float, atol: float, rtol: float) -> bool:
    if math.isnan(a) != math.isnan(b):
        return True
    if math.isnan(a):
        return False
    if math.isinf(a) or math.isinf(b):
        return a != b
    return abs(a - b) > _allowed(a, atol, rtol)


def _programs_of(witness: dict, ref: str | None, new: str | None, device: str | None) -> tuple:
    """(ref, new, device, init_seed, input_seed) a witness is replayed with: the key under which
    witnesses share one load of the programs. Raises ReplayError for a witness that cannot be replayed."""
    validate(witness)
    ref = ref or witness.get("ref")
    new = new or witness.get("new")
    if not ref or not new:
        raise ReplayError("no program files: the witness names none (a bundle-only check) and none were given")
    ref, new = resolve_program(str(ref)), resolve_program(str(new))
    import torch
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ReplayError("--device cuda but this machine has no usable GPU")
    return ref, new, device, int(witness.get("init_seed", 42)), witness.get("input_seed")


def _failure(e: BaseException, programs: tuple = ()) -> dict:
    """A result for an exception: ReplayError -> unsupported, anything else (user code) -> error, naming
    the program line it came from."""
    if isinstance(e, ReplayError):
        return {"status": "unsupported", "message": str(e)}
    tb = traceback.extract_tb(e.__traceback__)
    where = next((f" ({os.path.basename(f.filename)}:{f.lineno})" for f in reversed(tb)
                  if f.filename in programs), "")
    return {"status": "error", "message": f"{type(e).__name__}: {e}{where}"}


def _run_at_location(progs: Programs, witness: dict, atol: float, rtol: float) -> dict:
    """Both programs run on their current inputs and state, compared at the witness's location."""
    with contextlib.redirect_stdout(sys.stderr):
        ref_outs, new_outs = progs.run()
    k = int(witness["output"].get("index", 0))
    if k >= len(ref_outs) or k >= len(new_outs):
        raise ReplayError(f"output {k}: the reference returns {len(ref_outs)} tensors, the candidate "
                          f"{len(new_outs)}")
    ro, no = ref_outs[k], new_outs[k]
    if ro.shape != no.shape:
        raise ReplayError(f"output {k} has shape {list(ro.shape)} in the reference, {list(no.shape)} in the "
                          f"candidate")
    loc = tuple(int(i) for i in witness["location"])
    a, b = float(ro[loc]), float(no[loc])
    diff = abs(a - b) if math.isfinite(a) and math.isfinite(b) else math.inf
    whole = (ro.double() - no.double()).abs()
    return dict(status="replayed", evidence=f"replay-{'gpu' if progs.device == 'cuda' else 'cpu'}",
                reference=json_float(a), candidate=json_float(b), difference=json_float(diff),
                allowed=_allowed(a, atol, rtol), exceeds=_exceeds(a, b, atol, rtol),
                output_max_difference=json_float(float(whole.nan_to_num(math.inf).max()) if whole.numel() else 0.0))


# How the programs' own inputs are varied when a witness cannot be carried back to them.
INPUT_VARIANTS = (("as drawn", 1.0), ("scaled by 10", 10.0), ("scaled by 0.01", 0.01), ("negated", -1.0))


def _replay_at_program_inputs(progs: Programs, witness: dict, atol: float, rtol: float,
                              seconds: float = 30.0) -> dict:
    """A sampled witness over a trimmed prefix drew values for the prefix's results, which no input is
    known to produce. The difference it shows is looked for at the programs' own inputs instead:
    get_inputs() under the input seed, then scaled and negated (INPUT_VARIANTS), until one shows the
    witness's location beyond the tolerance or the next would end past `seconds`. The answer names the inputs
    ("inputs_from"); where none differs it is the last one tried (not exceeding: SUSPECT stays)."""
    import torch
    base = list(progs.inputs)
    t0, res = time.monotonic(), None
    try:
        for n, (label, scale) in enumerate(INPUT_VARIANTS):
            progs.inputs = [x * scale if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in base]
            res = _run_at_location(progs, witness, atol, rtol)
            res["inputs_from"] = f"the reference's get_inputs() under torch.manual_seed({progs.input_seed}), {label}"
            spent = time.monotonic() - t0  # the next variant costs about what each one did
            if res["exceeds"] or spent * (n + 2) / (n + 1) > seconds:
                break
    finally:
        progs.inputs = base
    res["notes"] = [f"the witness set results of the trimmed prefix {witness['sampled']['trimmed']}, which no input "
                    f"is known to produce: the programs were run at their own inputs instead"]
    return res


def _replay_on(progs: Programs, witness: dict, steps: int) -> dict:
    """Replay one witness on loaded programs (left changed: the caller restores them)."""
    import torch
    res = {}
    tol = witness.get("tolerance") or {}
    atol, rtol = float(tol.get("atol", 1e-2)), float(tol.get("rtol", 1e-2))
    bound = float(tol.get("bound", 10))
    pairs = {p["input"]: p.get("candidate_input", p["input"]) for p in witness.get("inputs", [])}
    ref_state, new_state = progs.state("ref"), progs.state("new")
    trimmed, fixed, notes = [], [], []
    writes: dict = {}  # id(tensor) -> (tensor, indices, values): one write per tensor

    def write(t, index, value):
        writes.setdefault(id(t), (t, [], []))[1].append(index)
        writes[id(t)][2].append(value)

    if witness.get("sampled", {}).get("trimmed"):
        return _replay_at_program_inputs(progs, witness, atol, rtol)
    if witness.get("sampled"):
        _set_sampled(progs, witness, ref_state, fixed)
    elif witness.get("others") == "zero":
        _zero_others(progs, witness, ref_state, new_state)
    for leaf in witness["leaves"]:
        kind, name, value = leaf["kind"], leaf["input"], _float(leaf["value"])
        if kind == "trimmed":
            trimmed.append(leaf)
        elif kind == "input":
            write(progs.input_tensor(name), leaf["index"], value)
            fixed.append((name, leaf["index"], value))
        elif kind in ("parameter", "buffer") and leaf.get("program") == "candidate":
            if name not in new_state:  # the candidate's own state, no reference counterpart
                raise ReplayError(f"the candidate has no {kind} {name!r}")
            write(new_state[name], leaf["index"], value)
        elif kind in ("parameter", "buffer"):
            if name not in ref_state:
                raise ReplayError(f"the reference has no {kind} {name!r}")
            write(ref_state[name], leaf["index"], value)
            fixed.append((name, leaf["index"], value))
        else:
            notes.append(f"{name}{leaf['index']} is read by one program only: left at its traced value")
    for t, indices, values in writes.values():
        _set_elements(t, indices, values)
    res["carried_back"] = None
    if trimmed:
        with contextlib.redirect_stdout(sys.stderr):
            res["carried_back"] = carry_back(progs, trimmed, bound, steps, fixed=fixed)
    # mirror the reference's (possibly changed) parameters and buffers into the candidate
    mirrored = set()
    for name, t in ref_state.items():
        if witness.get("inputs") and name not in pairs:
            continue  # a reference-only parameter: the candidate has no counterpart
        cname = pairs.get(name, name)
        c = new_state.get(cname)
        if c is None or c.shape != t.shape:
            continue
        if not torch.equal(c.detach(), t.detach()):
            with torch.no_grad():
                c.copy_(t.detach())
            mirrored.add(cname)
    if mirrored:
        notes.append(f"candidate state set from the reference's: {sorted(mirrored)}")
    res.update(_run_at_location(progs, witness, atol, rtol))
    sym = witness.get("symbolic") or {}
    if "reference" in sym and witness.get("leaves_complete") and not trimmed:
        res["symbolic_reference"] = sym["reference"]
    if notes:
        res["notes"] = notes
    return res


def replay_many(witnesses: list, ref: str | None = None, new: str | None = None, device: str | None = None,
                steps: int = 300, on_result=None) -> list[dict]:
    """Replay several witnesses; those of the same programs (files, seeds, device) share one load of the
    programs, restored to their loaded values before each further witness. Results in input order;
    on_result(i, result) is called as each one is ready. Never raises for program failures.

    Per result: "seconds" = the witness's own replay; "load_seconds" = loading (building) its programs,
    shared by "shared_by" witnesses."""
    results: list = [None] * len(witnesses)
    groups: dict[tuple, list[int]] = {}

    def done(i: int, res: dict) -> None:
        results[i] = {"format": RESULT_FORMAT, "version": 1, **res}
        if on_result:
            on_result(i, results[i])

    for i, w in enumerate(witnesses):
        try:
            groups.setdefault(_programs_of(w, ref, new, device), []).append(i)
        except BaseException as e:  # noqa: BLE001 - a bad witness is an answer, the others go on
            done(i, {**_failure(e), "seconds": 0.0})
    for key, members in groups.items():
        t0 = time.monotonic()
        progs, failure = None, None
        try:
            with contextlib.redirect_stdout(sys.stderr):  # programs print; stdout carries the result
                progs = Programs(*key[:3], key[3], key[4])
            if len(members) > 1:
                progs.snapshot()
        except BaseException as e:  # noqa: BLE001 - user code
            failure = _failure(e, key[:2])
        load_s = round(time.monotonic() - t0, 3)
        for n, i in enumerate(members):
            t1 = time.monotonic()
            shared = {"device": key[2], "load_seconds": load_s, "shared_by": len(members)}
            if failure:
                done(i, {**failure, **shared, "seconds": 0.0})
                continue
            try:
                if n:
                    progs.restore()
                res = _replay_on(progs, witnesses[i], steps)
            except BaseException as e:  # noqa: BLE001 - user code
                res = _failure(e, key[:2])
            done(i, {**res, **shared, "seconds": round(time.monotonic() - t1, 3)})
        del progs
        if key[2] == "cuda":
            import torch
            torch.cuda.empty_cache()
    return results


def replay(witness: dict, ref: str | None = None, new: str | None = None, device: str | None = None,
           steps: int = 300) -> dict:
    """Replay one witness; never raises for program failures (status "error"/"unsupported" instead).
    "seconds" counts loading the programs too."""
    res = replay_many([witness], ref, new, device, steps)[0]
    res["seconds"] = round(res["seconds"] + res.get("load_seconds", 0.0), 3)
    return res


def group_files(paths: list[str]) -> list[list[str]]:
    """Witness files grouped by the programs they replay (files and seeds), in first-seen order; a file
    that cannot be read or names no programs is a group of its own (its replay will say why)."""
    groups: dict = {}
    for path in paths:
        try:
            with open(path) as fh:
                w = json.load(fh)
            key = (resolve_program(str(w["ref"])), resolve_program(str(w["new"])), w.get("init_seed", 42),
                   w.get("input_seed"))
        except (OSError, ValueError, KeyError, TypeError):
            key = ("unreadable", path)
        groups.setdefault(key, []).append(path)
    return list(groups.values())


def exit_status(res: dict) -> int:
    if res["status"] != "replayed":
        return EXIT_IMPOSSIBLE
    return EXIT_REPRODUCED if res["exceeds"] else EXIT_NOT_REPRODUCED


def to_text(res: dict) -> str:
    if res["status"] != "replayed":
        return f"replay impossible ({res['status']}): {res.get('message', '')}\n"
    s = (f"{'REPRODUCED' if res['exceeds'] else 'NOT REPRODUCED'} on {res['device']}: reference {res['reference']} "
         f"vs candidate {res['candidate']}, difference {res['difference']:.6g} "
         f"(allowed {res['allowed']:.6g}); whole output max difference {res['output_max_difference']:.6g}\n")
    cb = res.get("carried_back")
    if cb:
        s += (f"  carried back through the trimmed prefix: {cb['leaves']} leaves, {cb['steps']} Adam steps, "
              f"max residual {cb['max_residual']:.3g}\n")
    for n in res.get("notes", []):
        s += f"  note: {n}\n"
    return s


def _read_witness(path: str):
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, json.JSONDecodeError) as e:
        return e


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dirigo.replay", description=__doc__.split("\n")[0])
    ap.add_argument("witness", nargs="+", help="dirigo-witness JSON files (dirigo check --witness-out)")
    ap.add_argument("--ref", help="reference program (default: the witness's)")
    ap.add_argument("--new", help="candidate program (default: the witness's)")
    ap.add_argument("--device", choices=["cpu", "cuda"], help="default: cuda when available")
    ap.add_argument("--steps", type=int, default=300, help="Adam steps for the prefix carry-back")
    ap.add_argument("--json", action="store_true", help="one dirigo-replay JSON line per witness")
    ap.add_argument("--out-dir", help="also write each answer to DIR/<witness file name> as soon as it is ready")
    ap.add_argument("--list-groups", action="store_true",
                    help="print the witness files grouped by the programs they replay, one group a line; replay nothing")
    a = ap.parse_args(argv)
    if a.list_groups:
        for g in group_files(a.witness):
            print(" ".join(g))
        return 0
    loaded = [_read_witness(p) for p in a.witness]
    readable = [i for i, w in enumerate(loaded) if not isinstance(w, Exception)]
    if a.out_dir:
        os.makedirs(a.out_dir, exist_ok=True)
    several = len(a.witness) > 1

    def emit(i: int, res: dict) -> None:
        if several:
            res = {"witness": a.witness[i], **res}
        if a.out_dir:
            tmp = os.path.join(a.out_dir, os.path.basename(a.witness[i]) + ".tmp")
            with open(tmp, "w") as fh:
                json.dump(res, fh, allow_nan=False)
            os.replace(tmp, os.path.join(a.out_dir, os.path.basename(a.witness[i])))
        text = json.dumps(res, allow_nan=False) + "\n" if a.json else (
            f"{a.witness[i]}: " if several else "") + to_text(res)
        out.write(text)
        out.flush()

    answers: dict[int, dict] = {}

    def ready(j: int, res: dict) -> None:
        if not several:  # as replay(): one witness counts its load too
            res["seconds"] = round(res["seconds"] + res.get("load_seconds", 0.0), 3)
        answers[readable[j]] = res
        emit(readable[j], res)

    with answer_channel() as out:
        for i, w in enumerate(loaded):
            if isinstance(w, Exception):
                answers[i] = {"format": RESULT_FORMAT, "version": 1, "status": "unsupported",
                              "message": f"{a.witness[i]}: cannot read the witness: {w}"}
                emit(i, answers[i])
        replay_many([loaded[i] for i in readable], a.ref, a.new, a.device, a.steps, on_result=ready)
    # several witnesses: the worst answer (impossible > not reproduced > reproduced)
    return max(exit_status(answers[i]) for i in range(len(a.witness)))


if __name__ == "__main__":
    sys.exit(main())
