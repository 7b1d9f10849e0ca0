"""KernelBench's evaluation entry point, answered by dirigo: swap one import.

    # from src.eval import eval_kernel_against_ref        (KernelBench)
    from dirigo.kernelbench import eval_kernel_against_ref

    result = eval_kernel_against_ref(original_model_src, custom_model_src, seed_num=42, ...)
    result.compiled, result.correctness, result.metadata

The arguments are KernelBench's (`original_model_src` and `custom_model_src` are program sources: a
`Model` with `get_inputs`/`get_init_inputs`, and a `ModelNew`); the result has KernelBench's fields.
What differs is what `correctness` means: KernelBench runs both programs on a few random inputs and
compares with allclose; here it is dirigo's verdict over all inputs: True for CHECKED and VERIFIED, False
for BUG, and also False for SUSPECT, TIMEOUT and UNSUPPORTED (nothing proven; metadata["dirigo_outcome"]
says which, and metadata["reward"] is dirigo's scalar for RL loops). The metadata carries the location,
the witness, the evidence and both symbolic values, besides KernelBench's own keys (compilation_error,
runtime_error, correctness_issue, max_difference, ...). dirigo does not time kernels: with
measure_performance the runtime fields stay -1 and metadata says so.

Repeated calls in one process share dirigo's warm worker (dirigo.worker): a call on a small pure-PyTorch
pair costs well under a second after the first.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import asdict, dataclass, field
from typing import Any

from . import api

# KernelBench's key for a failed comparison on its trials
_MISMATCH = "Output mismatch"


@dataclass
class KernelExecResult:
    """KernelBench's result record (src/eval.py KernelExecResult), same field names and defaults."""
    compiled: bool = False
    correctness: bool = False
    metadata: dict = field(default_factory=dict)
    runtime: float = -1.0
    runtime_stats: dict = field(default_factory=dict)
    ref_runtime: float = -1.0
    ref_runtime_stats: dict = field(default_factory=dict)

    # pydantic's names for the dict form, which KernelBench's callers use (model_dump / dict)
    def model_dump(self) -> dict:
        return asdict(self)

    def dict(self) -> dict:  # noqa: A003 - pydantic v1 name
        return asdict(self)


def _device_name(device) -> str | None:
    """KernelBench's `device` (an int, a torch.device, None) as dirigo's tracing device."""
    if device is None:
        return None
    if isinstance(device, int):
        return "cuda"
    kind = getattr(device, "type", None) or str(device).split(":")[0]
    return "cuda" if kind == "cuda" else "cpu"


def _trace_failure(v: api.Verdict) -> tuple[bool, dict]:
    """A verdict that came from tracing: whether the candidate compiled, and KernelBench's error keys."""
    msg = v.reason or ""
    meta: dict[str, Any] = {}
    who_candidate = "candidate " in msg.split(":", 1)[0] or msg.startswith("UNSUPPORTED: candidate ")
    if v.evidence == "crash-gpu":  # it built and ran, then faulted
        meta["runtime_error"] = msg
        meta["runtime_error_name"] = "dirigo.CandidateCrash"
        return True, meta
    if who_candidate and ("while loading" in msg or "while building" in msg or "SyntaxError" in msg
                          or "compil" in msg.lower()):
        meta["compilation_error_name"] = "dirigo.TraceError"
        meta["compilation_error"] = msg
        return False, meta
    if who_candidate and not msg.startswith("UNSUPPORTED"):
        meta["runtime_error"] = msg
        meta["runtime_error_name"] = "dirigo.TraceError"
    return True, meta


def to_kernelbench(v: api.Verdict, *, device: str | None = None) -> KernelExecResult:
    """A dirigo Verdict as KernelBench's result record."""
    meta: dict[str, Any] = {"hardware": "dirigo (symbolic check)", "device": device or "auto",
                            "dirigo_outcome": v.outcome, "dirigo_reason": v.reason, "evidence": v.evidence,
                            "reward": v.reward(), "checked_locations": v.checked, "equal_locations": v.equal,
                            "total_locations": v.total_locations, "seconds": v.seconds}
    if v.stage:
        meta["stage"] = v.stage
    if v.function_outcome:
        meta["function_outcome"] = v.function_outcome
    compiled = True
    if v.outcome == "UNSUPPORTED" or v.stage == "trace":
        compiled, extra = _trace_failure(v)
        meta.update(extra)
    loc = v.location
    if loc:
        out = (v.report.get("outputs") or [{}])[loc.get("output", 0)]
        meta["location"] = {"output": out.get("reference", f"out{loc.get('output', 0)}"), "index": loc.get("index"),
                            "tier": loc.get("tier")}
        summary = loc.get("summary") or {}
        meta["reference_value"] = summary.get("reference") or loc.get("reference")
        meta["candidate_value"] = summary.get("candidate") or loc.get("candidate")
        if summary.get("shared"):
            meta["shared_context"] = summary["shared"]
        if summary.get("note"):
            meta["values_differ_in"] = summary["note"]
        f32 = loc.get("values_f32")
        if f32 and len(f32) == 2:
            meta["values_at_witness"] = {"reference": f32[0], "candidate": f32[1]}
    if v.witness:
        meta["witness"] = v.witness
    if v.replay:
        meta["replay"] = v.replay
    if v.state and v.state_differs:
        meta["state"] = v.state
    if v.findings:
        meta["findings"] = v.findings
    if v.outcome == "BUG":
        meta["correctness_issue"] = _MISMATCH
        meta["correctness_issue_name"] = "correctness_issue"
        rp = v.replay or {}
        if rp.get("status") == "replayed":
            diff = abs(float(rp.get("reference", 0)) - float(rp.get("candidate", 0)))
        elif meta.get("values_at_witness"):
            diff = abs(meta["values_at_witness"]["reference"] - meta["values_at_witness"]["candidate"])
        else:
            diff = None
        if diff is not None:  # KernelBench keeps these as lists of strings, one per failed trial
            meta["max_difference"] = [f"{diff:.6f}"]
            meta["avg_difference"] = [f"{diff:.6f}"]
    correct = v.outcome in ("CHECKED", "VERIFIED")
    meta["correctness_trials"] = "(1 / 1)" if correct else "(0 / 1)"
    return KernelExecResult(compiled=compiled, correctness=correct, metadata=meta)


def eval_kernel_against_ref(original_model_src: str, custom_model_src: str, seed_num: int = 42,
                            num_correct_trials: int = 1, num_perf_trials: int = 10, measure_performance: bool = False,
                            timing_method: str = "cuda_event", verbose: bool = False, build_dir: os.PathLike | None = None,
                            device=None, backend: str = "cuda", precision=None,
                            check_for_excessive_speedup: bool = True, excessive_speedup_threshold: float = 10,
                            *, budget_s: float = 30.0, full: bool = False, timeout: float = 300.0,
                            warm: bool = True) -> KernelExecResult:
    """KernelBench's eval_kernel_against_ref, answered by dirigo.check (see the module doc). KernelBench's
    own arguments are accepted; those about trials and timing do not apply to a check over all inputs and
    are recorded in the metadata. dirigo's own: budget_s (the location search), full (every location),
    timeout (tracing, replay and state stage, each), warm (the shared warm worker)."""
    notes = []
    if seed_num != 42:
        notes.append(f"seed_num={seed_num}: dirigo constructs both programs under KernelBench's seed 42")
    if measure_performance:
        notes.append("measure_performance: dirigo does not time kernels (runtime fields stay -1)")
    if precision is not None and "float32" not in str(precision) and str(precision) not in ("fp32",):
        notes.append(f"precision={precision}: dirigo checks the programs as written (fp32 semantics)")
    if backend not in ("cuda", "triton"):
        notes.append(f"backend={backend}: dirigo traces CUDA extensions and Triton kernels")
    dev = _device_name(device)
    with tempfile.TemporaryDirectory(prefix="dirigo-kb-") as d:
        ref_path, new_path = os.path.join(d, "ref.py"), os.path.join(d, "new.py")
        with open(ref_path, "w") as fh:
            fh.write(original_model_src)
        with open(new_path, "w") as fh:
            fh.write(custom_model_src)
        saved = os.environ.get("TORCH_EXTENSIONS_DIR")
        if build_dir:
            os.environ["TORCH_EXTENSIONS_DIR"] = os.fspath(build_dir)
        try:
            v = api.check(ref_path, new_path, budget_s=budget_s, full=full, device=dev, timeout=timeout, warm=warm)
        finally:
            if build_dir:
                if saved is None:
                    os.environ.pop("TORCH_EXTENSIONS_DIR", None)
                else:
                    os.environ["TORCH_EXTENSIONS_DIR"] = saved
    res = to_kernelbench(v, device=dev)
    res.metadata["num_correct_trials"] = num_correct_trials
    if notes:
        res.metadata["dirigo_notes"] = notes
    if verbose:
        print(f"[dirigo] {v.outcome}: {v.reason}" if v.reason else f"[dirigo] {v.outcome}")
    return res
