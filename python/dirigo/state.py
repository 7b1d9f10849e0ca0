"""Module state: do the two programs, as KernelBench constructs them, hold the same parameter values?

    python -m dirigo.state REF.py NEW.py [--bundle B] [--report CHECK.json] [--device cpu|cuda] [--json]

`dirigo check` compares the *functions* of (inputs, parameters): a matched parameter pair is one free
value. KernelBench runs each program with its *own* parameters, built by `Model(*init_inputs)` and
`ModelNew(*init_inputs)` each after `torch.manual_seed(seed)`. A candidate that initializes a
parameter its own way (randn instead of kaiming_uniform, a zero bias, a bound from the wrong fan-in)
computes the right function and still gives different outputs. This module finds that, with evidence:

1. **Values.** Both modules are constructed under the protocol (load.py: seed before
   get_init_inputs() and before each construction). On the CPU a candidate's `load_inline` is not
   compiled: `__init__` rarely calls its kernels, so a stub stands in for the extension (calling it
   raises). Each matched parameter/buffer pair (the bundle's `match`, else dirigo.match on the
   constructed modules) is compared: max |diff|, sample values, statistics, a likely cause.
2. **Outputs** (only when some pair differs). Evidence that the difference reaches the outputs:
   - `state-replay-gpu` / `state-replay-cpu`: both real programs, each with its own state, run on
     KernelBench's 5 trial inputs (built once, run trial after trial, as KernelBench does; stops at the
     first trial beyond tolerance): KernelBench's own observation; a CUDA candidate needs a GPU.
   - `state-proven-location` (a CUDA candidate on the CPU): on the first trial input, the *reference*
     program is run on the CPU in fp32 twice, with its own state and with the candidate's values put into the paired
     parameters. At a location `dirigo check` proved equal for every input and parameter value,
     the second run is the candidate's own output there; a difference beyond
     `atol + rtol*|ref|` plus atol (the proof's own slack) is evidence.
   Where the reference's output moves with the state but no proven location shows it, the answer
   is SUSPECT (`reference-under-both-states`); where the outputs agree within tolerance the
   differing values do not reach the output (an unused buffer, a tiny bias bound) and there is no
   finding, only a note.

Answer (format `dirigo-state` version 1, `--json`): `verdict` BUG | SUSPECT | NONE | UNKNOWN,
`evidence`, `reason`, `pairs` (every matched pair with its values), `differing`, `outputs`.
Exit status: 1 BUG, 2 SUSPECT, 0 NONE, 4 UNKNOWN (the state could not be constructed), 64 usage.
Loading executes user code: dirigo runs this module in a child process.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import sys
import time
import traceback
import types

from . import load, match as match_mod, replay
from .bundle import state_text as to_text
from .childio import answer_channel
from .common import chunks, digest, dtype_name, extension_builders, flat_values, json_float, stats

FORMAT, VERSION = "dirigo-state", 1
EXIT = {"BUG": 1, "SUSPECT": 2, "NONE": 0, "UNKNOWN": 4}


class StateError(RuntimeError):
    """The state cannot be constructed here; the message says why."""


def _g(v, spec: str = ".6g") -> str:
    """A number of an answer (possibly "nan"/"inf" strings, see json_float) for a sentence."""
    return format(v, spec) if isinstance(v, (int, float)) else str(v)


# ---------------------------------------------------------------------------------------------------------
# Constructing the modules on the CPU

class _UnbuiltExtension(types.ModuleType):
    """Stands in for a C++/CUDA extension that was not compiled: construction may hold a reference to
    it, calling one of its functions raises."""

    def __init__(self, name: str):
        super().__init__(name)

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        name = self.__name__

        def call(*args, **kwargs):
            raise StateError(f"extension {name!r} was not compiled (dirigo.state constructs modules on the CPU); "
                             f"{attr}() was called during construction")
        return call


@contextlib.contextmanager
def _stub_extensions(built: list):
    """torch.utils.cpp_extension.load_inline / load return an _UnbuiltExtension (no compiler runs)."""
    def stub(name, *args, **kwargs):
        built.append(name)
        return _UnbuiltExtension(name)
    with extension_builders(stub, stub):
        yield


def _exec_stubbed(path: str, reference_ns: dict | None = None) -> tuple[dict, list]:
    """Execute a program file with extension builds stubbed; (namespace, extension names). A functional-template
    candidate runs with the reference's names it leaves undefined (load.harness_names)."""
    with open(path) as fh:
        text = fh.read()
    name = "dirigo_state_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
    module = types.ModuleType(name)
    module.__file__ = os.path.abspath(path)
    sys.modules[name] = module
    module.__dict__.update(load.harness_names(text, reference_ns))
    built: list = []
    with _stub_extensions(built):
        exec(compile(text, os.path.abspath(path), "exec"), module.__dict__)
    kind = load.detect_kind(path, text)
    return load.LoadedFile(path, kind, module.__dict__, []), built


def construct_pair(ref: str, new: str, init_seed: int):
    """Both modules as KernelBench builds them (seed before get_init_inputs and before each construction),
    on the CPU with extensions stubbed. Returns (ref module, candidate module, stubbed extension names)."""
    import torch
    if new.endswith(".cu"):
        raise StateError("an AI CUDA Engineer .cu candidate takes its parameters from the functional form: "
                         "its state is the reference's by construction")
    ref_loaded, _ = _exec_stubbed(ref)
    new_loaded, stubbed = _exec_stubbed(new, ref_loaded.namespace)
    get_inputs, get_init_inputs = load.reference_io(ref_loaded)
    mods = []
    for loaded in (ref_loaded, new_loaded):
        torch.manual_seed(init_seed)
        init_inputs = list(get_init_inputs())
        try:
            with torch.no_grad():
                module, _ = load.build_model(loaded, init_inputs, init_seed)
        except StateError:
            raise
        except Exception as e:  # noqa: BLE001 - user code
            raise StateError(f"constructing {os.path.basename(loaded.path)} on the CPU failed: "
                             f"{type(e).__name__}: {str(e).strip().splitlines()[0][:200] if str(e).strip() else ''}")
        mods.append(module)
    return mods[0], mods[1], stubbed


def named_state(module) -> dict:
    """Parameters then buffers, by their names (the tracer's order and names)."""
    import torch
    if not isinstance(module, torch.nn.Module):
        return {}
    out = dict(module.named_parameters())
    out.update({n: b for n, b in module.named_buffers() if b is not None})
    return out


# ---------------------------------------------------------------------------------------------------------
# Describing values

def _shape_of(s: dict) -> tuple[str, float]:
    """(kind, scale) of a value distribution: zeros, ones, constant, uniform (scale = bound),
    normal (scale = std) or other."""
    n = s.get("numel", 0)
    if n == 0:
        return "empty", 0.0
    lo, hi, mean, std, amax = s["min"], s["max"], s["mean"], s["std"], s["absmax"]
    if any(isinstance(v, str) for v in (lo, hi, mean, std)):
        return "non-finite", 0.0
    if lo == hi:
        return ("zeros" if lo == 0 else "ones" if lo == 1 else "constant"), lo
    if n < 16:
        return "other", std
    ratio = amax / std if std > 0 else math.inf
    lowest = 1.55 if n >= 256 else 1.3  # the largest of few uniform draws stays further below the bound
    if abs(mean) < 0.25 * std and lowest < ratio < 1.85:
        return "uniform", amax * (n + 1) / n  # E[max |v|] of n draws from U(-b, b) is b n / (n + 1)
    if abs(mean) < 0.25 * std and ratio > 2.4:
        return "normal", std
    return "other", std


def describe(s: dict) -> str:
    kind, scale = _shape_of(s)
    if kind == "uniform":
        fan = 1.0 / (scale * scale) if scale > 0 else math.inf
        return f"uniform in ±{scale:.4g} (= 1/sqrt({fan:.0f}), PyTorch's default bound for fan-in {fan:.0f})"
    if kind == "normal":
        return "normal with std 1 (torch.randn)" if 0.9 < scale < 1.1 else f"normal with std {scale:.4g}"
    if kind in ("zeros", "ones"):
        return f"all {kind}"
    if kind == "constant":
        return f"all {scale:.6g}"
    if kind == "empty":
        return "empty"
    return f"mean {s['mean']:.4g}, std {s['std']:.4g}, range [{s['min']:.4g}, {s['max']:.4g}]" if kind == "other" \
        else "non-finite values"


def likely_cause(rs: dict, cs: dict) -> str:
    """Why the values differ, as far as their distributions tell."""
    (rk, rsc), (ck, csc) = _shape_of(rs), _shape_of(cs)
    ref_d, cand_d = describe(rs), describe(cs)
    if ck == "normal" and rk != "normal":
        what = "torch.randn" if 0.9 < csc < 1.1 else f"a normal distribution (std {csc:.3g})"
        return f"the candidate draws its values from {what}; the reference's are {ref_d}"
    if ck in ("zeros", "ones", "constant") and rk not in ("zeros", "ones", "constant"):
        return f"the candidate sets it to {cand_d}; the reference's are {ref_d}"
    if rk == ck == "uniform":
        if abs(rsc - csc) <= 0.03 * max(rsc, csc):
            return (f"the same distribution ({ref_d}), a different draw: the candidate consumes the random "
                    f"generator in another order (layers created in another order, or extra draws before)")
        ratio = csc / rsc
        gains = {math.sqrt(3): "kaiming_uniform_ with a = 1 (bound sqrt(3/fan_in))",
                 math.sqrt(6): "kaiming_uniform_ with a = 0 (bound sqrt(6/fan_in), the ReLU gain)"}
        for r, what in gains.items():
            if abs(ratio - r) <= 0.04 * r:  # the reference's bound is PyTorch's default, 1/sqrt(fan_in)
                return (f"both uniform, with bounds ±{rsc:.4g} (reference) and ±{csc:.4g} (candidate), "
                        f"{ratio:.3f} times larger: the candidate uses {what} where the reference has PyTorch's "
                        f"default a = sqrt(5) (bound 1/sqrt(fan_in), fan-in {1 / rsc ** 2:.0f})")
        return (f"both uniform, with bounds ±{rsc:.4g} (reference) and ±{csc:.4g} (candidate): the candidate "
                f"computes the bound from another fan-in ({1 / rsc ** 2:.0f} vs {1 / csc ** 2:.0f})")
    if rk == ck and rk in ("normal",) and abs(rsc - csc) <= 0.03 * max(rsc, csc):
        return f"the same distribution ({ref_d}), a different draw (another order of random draws)"
    return f"reference: {ref_d}; candidate: {cand_d}"


# ---------------------------------------------------------------------------------------------------------
# Pairing and comparing

def _bundle_pairs(bundle: str) -> list[tuple[str, str]] | None:
    """(reference name, candidate name) of every matched parameter/buffer pair of the bundle's `match`."""
    with open(os.path.join(bundle, "manifest.json")) as fh:
        manifest = json.load(fh)
    if not manifest.get("match"):
        return None
    ref, cand = match_mod.reference_and_candidate(manifest)
    kinds = {(p["name"], e["name"]): e for p in (ref, cand) for e in p["inputs"]}
    pairs = []
    for a, b in manifest["match"].get("inputs", []):
        (pa, na), (pb, nb) = a.split(".", 1), b.split(".", 1)
        ea, eb = kinds.get((pa, na)), kinds.get((pb, nb))
        if ea and eb and ea["kind"] != "input" and not ea.get("constant") and not eb.get("constant"):
            pairs.append((na, nb))
    return pairs


def _module_prog(name: str, role: str, state: dict) -> dict:
    """A manifest-like program of a module's state alone, for dirigo.match."""
    tensors, inputs = [], []
    for i, (n, t) in enumerate(state.items()):
        tensors.append({"id": f"t{i}", "shape": list(t.shape), "dtype": dtype_name(t.dtype)})
        kind = "parameter" if getattr(t, "requires_grad", False) or type(t).__name__ == "Parameter" else "buffer"
        inputs.append({"name": n, "tensor": f"t{i}", "kind": kind,
                       "sha256": digest(t)})
    return {"name": name, "role": role, "tensors": tensors, "inputs": inputs, "outputs": []}


def recorded_equal(bundle: str) -> int | None:
    """The number of matched parameter/buffer pairs when the bundle recorded equal values (sha256 at trace
    time, on the modules as constructed) for every one of them, else None: then nothing needs constructing."""
    try:
        with open(os.path.join(bundle, "manifest.json")) as fh:
            manifest = json.load(fh)
        ref, cand = match_mod.reference_and_candidate(manifest)
    except (OSError, ValueError):
        return None
    entries = {(p["name"], e["name"]): e for p in (ref, cand) for e in p["inputs"]}
    n = 0
    for a, b in (manifest.get("match") or {}).get("inputs", []):
        ea, eb = entries.get(tuple(a.split(".", 1))), entries.get(tuple(b.split(".", 1)))
        if not ea or not eb or ea["kind"] == "input" or ea.get("constant") or eb.get("constant"):
            continue
        if not ea.get("sha256") or ea.get("sha256") != eb.get("sha256"):
            return None
        n += 1
    return n


def pair_names(ref_state: dict, cand_state: dict, bundle: str | None) -> tuple[list, str]:
    """Matched (reference, candidate) state names: the bundle's pairing when it has one, else dirigo.match's
    rule applied to the constructed modules."""
    if bundle:
        pairs = _bundle_pairs(bundle)
        if pairs is not None:
            return [(a, b) for a, b in pairs if a in ref_state and b in cand_state], "bundle"
    m, _ = match_mod.match_programs(_module_prog("ref", "reference", ref_state),
                                    _module_prog("new", "candidate", cand_state))
    return [(a.split(".", 1)[1], b.split(".", 1)[1]) for a, b in m["inputs"]], "match"


def compare_pair(a, b) -> dict:
    """Values of one matched pair: equal or how they differ (chunk by chunk: no float64 copy of the whole)."""
    import torch
    ra, cb = flat_values(a), flat_values(b)
    rec = {"shape": list(a.shape), "candidate_shape": list(b.shape), "dtype": str(a.dtype).replace("torch.", ""),
           "reference_stats": stats(a), "candidate_stats": stats(b),
           "reference_sha256": digest(a), "candidate_sha256": digest(b)}
    if ra.numel() != cb.numel():
        rec.update(equal=False, note="different numbers of elements")
        return rec
    worst, at, differing = -1.0, 0, 0
    for i, c in chunks(ra):
        other = cb[i:i + len(c)]
        if c.dtype == other.dtype and torch.equal(c, other):  # the usual case, without float64 copies
            continue
        d = (c.to(torch.float64) - other.to(torch.float64)).abs()
        d = torch.where(torch.isnan(d), torch.full_like(d, math.inf), d)  # NaN against anything: differs
        differing += int((d != 0).sum())
        k = int(d.argmax())
        if float(d[k]) > worst:
            worst, at = float(d[k]), i + k
    rec["equal"] = differing == 0
    if differing:
        rec.update(max_abs_diff=json_float(worst), elements_differing=differing, first_max_at=at,
                   values_at_max=[json_float(ra[at]), json_float(cb[at])],
                   likely_cause=likely_cause(rec["reference_stats"], rec["candidate_stats"]))
    return rec


# ---------------------------------------------------------------------------------------------------------
# Outputs under each program's own state

def _tolerance(bundle: str | None, atol: float | None, rtol: float | None) -> tuple[float, float]:
    tol = {}
    if bundle and os.path.exists(os.path.join(bundle, "manifest.json")):
        with open(os.path.join(bundle, "manifest.json")) as fh:
            tol = json.load(fh).get("tolerance") or {}
    return (atol if atol is not None else tol.get("atol", 1e-2)), (rtol if rtol is not None else tol.get("rtol", 1e-2))


def compare_outputs(ref_outs: list, cand_outs: list, atol: float, rtol: float, slack: float = 0.0,
                    locations: list | None = None) -> dict:
    """Element-wise |ref - cand| against atol + rtol*|ref| + slack, over whole outputs or at `locations`
    ([(output index, multi-index)]); the worst element and how many exceed."""
    import torch
    if len(ref_outs) != len(cand_outs):
        return {"exceeds": False, "note": f"{len(ref_outs)} vs {len(cand_outs)} outputs"}
    best = {"exceeds": False, "exceeding": 0, "compared": 0, "max_difference": 0.0}
    for i, (r, c) in enumerate(zip(ref_outs, cand_outs)):
        r, c = r.detach().double().cpu(), c.detach().double().cpu()
        if r.shape != c.shape:
            if r.numel() != c.numel():
                best["note"] = f"output {i}: shapes {list(r.shape)} and {list(c.shape)}"
                continue
            c = c.reshape(r.shape)
        if locations is not None:
            idx = [tuple(ix) for o, ix in locations if o == i]
            if not idx:
                continue
            sel = tuple(torch.tensor(d) for d in zip(*idx))
            r_sel, c_sel = r[sel], c[sel]
        else:
            r_sel, c_sel, idx = r.reshape(-1), c.reshape(-1), None
        d = (r_sel - c_sel).abs()
        nan_mismatch = torch.isnan(r_sel) != torch.isnan(c_sel)
        d = torch.where(torch.isnan(d), torch.where(nan_mismatch, torch.full_like(d, math.inf), torch.zeros_like(d)), d)
        allowed = atol + rtol * r_sel.abs() + slack
        over = d > allowed
        best["compared"] += int(d.numel())
        best["exceeding"] += int(over.sum())
        if d.numel() and float(d.max()) >= best["max_difference"]:
            k = int(d.argmax())
            where = list(idx[k]) if idx is not None else [int(v) for v in torch.unravel_index(torch.tensor(k), r.shape)]
            best.update(max_difference=json_float(d[k]), output=i, index=where, reference=json_float(r_sel[k]),
                        candidate=json_float(c_sel[k]), allowed=json_float(allowed[k]))
        best["exceeds"] = best["exceeds"] or bool(over.any())
    return best


def _run(call, inputs):
    import torch
    from torch.utils._pytree import tree_leaves
    args = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
    with torch.no_grad():
        result = call(*args)
    return [x for x in tree_leaves(result) if isinstance(x, torch.Tensor)]


def observe_real(ref: str, new: str, device: str, init_seed: int, atol: float, rtol: float, trials: int = 5) -> dict:
    """Both real programs, each with its own state, on KernelBench's trial inputs (replay.py's loader; the
    models are built once and run trial after trial, as KernelBench does); stops at the first trial with an
    element beyond tolerance."""
    import torch
    try:
        progs = replay.Programs(ref, new, device, init_seed, None)
    except replay.ReplayError as e:
        raise StateError(str(e)) from None
    get_inputs, _ = load.reference_io(progs.ref_loaded)
    for trial, seed in enumerate(load.kernelbench_trial_seeds(init_seed, max(1, trials))):
        if trial:
            torch.manual_seed(seed)
            progs.inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in get_inputs()]
        ref_outs, cand_outs = progs.run()
        out = compare_outputs(ref_outs, cand_outs, atol, rtol)
        out.update(evidence=f"state-replay-{'gpu' if device == 'cuda' else 'cpu'}", device=device, input_seed=seed,
                   trial=trial, trials=trial + 1)
        if out["exceeds"]:
            break
    return out


def _proven_locations(report: dict | None) -> list:
    """(output index, multi-index) of every location the check proved equal for every input."""
    if not report:
        return []
    locs = report.get("locations")
    if locs is None:  # scripts/corpus-eval.py keeps a sample of them, by position
        locs = list((report.get("locations_kept") or {}).values())
    return [(loc["output"], loc["index"]) for loc in locs if loc.get("verdict") == "equal"]


def observe_transport(ref: str, cand_state: dict, pairs: list, init_seed: int, atol: float,
                      rtol: float, report: dict | None) -> dict:
    """The reference on the CPU with its own state and with the candidate's values in the paired parameters."""
    import torch
    ref_loaded, _ = _exec_stubbed(ref)
    get_inputs, get_init_inputs = load.reference_io(ref_loaded)
    input_seed = load.kernelbench_trial_seeds(init_seed, 1)[0]
    torch.manual_seed(input_seed)
    inputs = list(get_inputs())
    torch.manual_seed(init_seed)
    init_inputs = list(get_init_inputs())
    with torch.no_grad():
        swapped, call = load.build_model(ref_loaded, init_inputs, init_seed)
        own_state = named_state(swapped)
        for rn, cn in pairs:
            dst, src = own_state[rn], cand_state[cn]
            dst.copy_(src.detach().reshape(dst.shape).to(dst.dtype))
        torch.manual_seed(init_seed)
        own, own_call = load.build_model(ref_loaded, init_inputs, init_seed)
    ref_outs, swapped_outs = _run(own_call, inputs), _run(call, inputs)
    whole = compare_outputs(ref_outs, swapped_outs, atol, rtol)
    proven = _proven_locations(report)
    at = compare_outputs(ref_outs, swapped_outs, atol, rtol, slack=atol, locations=proven) if proven else None
    res = {"device": "cpu", "input_seed": input_seed, "whole_output": whole, "proven_locations": len(proven)}
    if at is not None:
        res["at_proven_locations"] = at
    if at is not None and at["exceeds"]:
        res.update(at, evidence="state-proven-location", exceeds=True)
    else:
        res.update(whole, evidence="reference-under-both-states", exceeds=whole["exceeds"])
    return res


# ---------------------------------------------------------------------------------------------------------
# The analysis

def _has_cuda_code(path: str) -> bool:
    with open(path, errors="replace") as fh:
        return path.endswith(".cu") or load.source_needs_cuda(fh.read())


def _observed(ans: dict, obs: dict, report: dict | None, same_state: str) -> None:
    """The verdict of an observation of the real programs whose matched state is equal: an output beyond
    tolerance on KernelBench's trial input is a BUG observed on the real programs (KernelBench's own check,
    run by dirigo); where the function check proved that location equal for every input, the difference is
    floating-point rounding or an approximation, and the reason says so."""
    obs["evidence"] = obs["evidence"].replace("state-replay-", "observed-")
    ans["outputs"] = obs
    if not obs.get("exceeds"):
        ans.update(verdict="NONE", reason=f"{same_state}; the real programs agree within tolerance on "
                                          f"{obs.get('trials', 0)} of KernelBench's trial inputs ({obs['evidence']}: "
                                          f"max difference {_g(obs.get('max_difference', 0))})")
        return
    where = (obs.get("output", 0), list(obs.get("index", [])))
    proven = [(o, list(ix)) for o, ix in _proven_locations(report)]
    kind = ("; the check proved this location equal as real functions of the inputs: the difference is "
            "floating-point rounding or an approximation (fast math, tanh-GELU, summation order) beyond "
            "tolerance" if where in proven else "")
    ans.update(verdict="BUG", evidence=obs["evidence"], rounding=bool(kind),
               reason=f"{same_state}; the real programs give {_g(obs['reference'], '.7g')} vs "
                      f"{_g(obs['candidate'], '.7g')} at output {where[0]}[{', '.join(map(str, where[1]))}] on "
                      f"KernelBench's trial input {obs.get('trial', 0) + 1} (seed {obs.get('input_seed')}, "
                      f"{'GPU' if obs.get('device') == 'cuda' else 'CPU'}; difference {_g(obs['max_difference'])} > "
                      f"allowed {_g(obs['allowed'])}; {obs['exceeding']} of {obs['compared']} elements beyond){kind}")


def _user_error(e: BaseException, ref: str, new: str) -> str:
    """`Type: first line (file:line)` of an exception raised by user code, naming the user file's frame."""
    tb = traceback.extract_tb(e.__traceback__)
    user = [f for f in tb if os.path.abspath(f.filename) in (os.path.abspath(ref), os.path.abspath(new))]
    loc = f" ({os.path.basename(user[-1].filename)}:{user[-1].lineno})" if user else ""
    msg = str(e).strip().splitlines()[0][:200] if str(e).strip() else ""
    return f"{type(e).__name__}: {msg}{loc}"


def analyze(ref: str, new: str, *, bundle: str | None = None, report: dict | None = None, device: str = "cpu",
            init_seed: int | None = None, atol: float | None = None, rtol: float | None = None,
            outputs: bool = True, observe: bool = False) -> dict:
    """The dirigo-state answer for two program files (never raises for user-code failures). `observe`: also
    run both real programs when their state is equal (where the candidate can run: a GPU, or a candidate
    without CUDA code) and report what KernelBench's own check would see, with evidence `observed-gpu/cpu`."""
    t0 = time.monotonic()
    init_seed = load.INIT_SEED if init_seed is None else init_seed
    atol, rtol = _tolerance(bundle, atol, rtol)
    ans = {"format": FORMAT, "version": VERSION, "init_seed": init_seed, "tolerance": {"atol": atol, "rtol": rtol},
           "verdict": "UNKNOWN", "evidence": "", "reason": "", "pairs": [], "differing": []}
    observe = observe and outputs and (device == "cuda" or not _has_cuda_code(new))
    same = recorded_equal(bundle) if bundle else None
    if same is not None:  # no torch import, no construction: the trace hashed every matched pair
        same_state = (f"all {same} matched parameters and buffers have equal recorded values (sha256 of the "
                      f"modules as constructed, at trace time)" if same else
                      "the programs have no matched parameters or buffers")
        ans.update(verdict="NONE", paired_by="bundle", reason=same_state)
        if observe:
            try:
                _observed(ans, observe_real(ref, new, device, init_seed, atol, rtol), report, same_state)
            except Exception as e:  # noqa: BLE001 - user code
                ans.update(verdict="NONE", reason=f"{same_state}; the real programs could not be observed: "
                                                  f"{_user_error(e, ref, new)}")
        ans["seconds"] = round(time.monotonic() - t0, 3)
        return ans
    import torch
    try:
        torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
        with contextlib.redirect_stdout(sys.stderr):  # user code prints; our stdout is the answer
            ref_mod, cand_mod, stubbed = construct_pair(ref, new, init_seed)
            ref_state, cand_state = named_state(ref_mod), named_state(cand_mod)
            pairs, how = pair_names(ref_state, cand_state, bundle)
            ans["paired_by"] = how
            if stubbed:
                ans["stubbed_extensions"] = stubbed
            for rn, cn in pairs:
                rec = {"reference": rn, "candidate": cn}
                rec.update(compare_pair(ref_state[rn], cand_state[cn]))
                ans["pairs"].append(rec)
            differing = [(p["reference"], p["candidate"]) for p in ans["pairs"] if not p["equal"]]
            ans["differing"] = [list(x) for x in differing]
            if not differing:
                same_state = (f"all {len(pairs)} matched parameters and buffers hold equal values under the "
                              f"construction protocol (seed {init_seed})" if pairs else
                              "the programs have no matched parameters or buffers")
                ans.update(verdict="NONE", reason=same_state)
                if observe:
                    del ref_mod, cand_mod, ref_state, cand_state
                    _observed(ans, observe_real(ref, new, device, init_seed, atol, rtol), report, same_state)
                return ans
            names = ", ".join(f"{a} ~ {b}" for a, b in differing)
            if not outputs:
                ans.update(verdict="SUSPECT", reason=f"matched state differs ({names}); outputs not evaluated")
                return ans
            del ref_mod, ref_state  # the runs below build their own (a 32768^2 weight is 4 GiB)
            cuda_cand = _has_cuda_code(new)
            if device == "cuda" or not cuda_cand:
                obs = observe_real(ref, new, device, init_seed, atol, rtol)
            else:
                obs = observe_transport(ref, cand_state, pairs, init_seed, atol, rtol, report)
            ans["outputs"] = obs
    except StateError as e:
        if ans["verdict"] == "NONE":  # equal state; only the observation failed
            ans["reason"] += f"; the real programs could not be observed: {e}"
            return ans
        ans["reason"] = f"the state could not be compared: {e}"
        return ans
    except Exception as e:  # noqa: BLE001 - user code
        err = _user_error(e, ref, new)
        if ans["verdict"] == "NONE":  # equal state; only the observation failed
            ans["reason"] += f"; the real programs could not be observed: {err}"
            return ans
        ans["reason"] = f"the state could not be compared: {err}"
        if ans["differing"]:
            ans["verdict"] = "SUSPECT"
            ans["reason"] = f"matched state differs ({names}), but the outputs could not be evaluated: {err}"
        return ans
    finally:
        ans["seconds"] = round(time.monotonic() - t0, 3)
    where = (f"{'reference ' if obs['evidence'] == 'state-proven-location' else ''}output {obs.get('output', 0)}"
             f"[{', '.join(map(str, obs.get('index', [])))}]")
    first = next(p for p in ans["pairs"] if not p["equal"])
    cause = (f"{names}; {first['reference']} ~ {first['candidate']}: max |diff| "
             f"{_g(first.get('max_abs_diff', 'n/a'), '.4g')}, {first.get('likely_cause', first.get('note', ''))}")
    trial = f" (trial {obs['trial'] + 1} of KernelBench's inputs)" if obs.get("trial") else ""
    if obs["exceeds"] and obs["evidence"] in ("state-replay-gpu", "state-replay-cpu", "state-proven-location"):
        how = {"state-replay-gpu": "the real programs, each with its own state, on a GPU",
               "state-replay-cpu": "the real programs, each with its own state, on the CPU",
               "state-proven-location": "at a location proven equal as functions: the reference in fp32 on the "
                                        "CPU with its state vs with the candidate's"}[obs["evidence"]]
        ans.update(verdict="BUG", evidence=obs["evidence"],
                   reason=f"the programs are constructed with different state ({cause}); {how} give "
                          f"{_g(obs['reference'], '.7g')} vs {_g(obs['candidate'], '.7g')} at {where}{trial} "
                          f"(difference {_g(obs['max_difference'])} > allowed {_g(obs['allowed'])}; "
                          f"{obs['exceeding']} of {obs['compared']} elements beyond)")
    elif obs["exceeds"]:
        ans.update(verdict="SUSPECT", evidence="",
                   reason=f"the programs are constructed with different state ({cause}); the reference's output "
                          f"moves with it ({_g(obs['reference'], '.7g')} vs {_g(obs['candidate'], '.7g')} at {where}, "
                          f"difference {_g(obs['max_difference'])} > allowed {_g(obs['allowed'])}), but no location "
                          f"proven equal shows it and the candidate could not run here")
    else:
        ans.update(verdict="NONE",
                   reason=f"matched state differs ({names}) but the outputs agree within tolerance under each "
                          f"program's own state ({obs['evidence']}: max difference "
                          f"{_g(obs.get('max_difference', 0))}): the difference does not reach the output")
    return ans


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dirigo.state", description=__doc__.split("\n")[0])
    ap.add_argument("ref")
    ap.add_argument("new")
    ap.add_argument("--bundle", help="the bundle of the two programs (its `match` pairs the parameters)")
    ap.add_argument("--report", help="dirigo check --json report (its proven-equal locations)")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--seed", type=int, default=None, help="init seed (KernelBench: 42)")
    ap.add_argument("--atol", type=float, default=None)
    ap.add_argument("--rtol", type=float, default=None)
    ap.add_argument("--no-outputs", action="store_true", help="compare the values only")
    ap.add_argument("--observe", action="store_true",
                    help="also run both real programs when their state is equal (a GPU, or a candidate without "
                         "CUDA code) and compare their outputs on KernelBench's trial inputs")
    ap.add_argument("--json", action="store_true")
    try:
        a = ap.parse_args(argv)
    except SystemExit as e:
        return 64 if e.code else 0
    report = None
    if a.report:
        try:
            with open(a.report) as fh:
                report = json.load(fh)
        except (OSError, json.JSONDecodeError) as e:
            print(f"dirigo.state: cannot read the report {a.report}: {e}", file=sys.stderr)
            return 64
    with answer_channel() as out:
        ans = analyze(a.ref, a.new, bundle=a.bundle, report=report, device=a.device, init_seed=a.seed, atol=a.atol,
                      rtol=a.rtol, outputs=not a.no_outputs, observe=a.observe)
        out.write(json.dumps(ans, allow_nan=False) + "\n" if a.json else to_text(ans))
    return EXIT[ans["verdict"]]


if __name__ == "__main__":
    sys.exit(main())
