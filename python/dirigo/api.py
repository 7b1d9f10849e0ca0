"""The Python entry point: ``dirigo.check(ref, new)`` traces both programs and checks them.

Made for callers that run it thousands of times (an RL reward, a CI job): it never raises for
anything the user programs do, always returns a :class:`Verdict`, and is deterministic for a seed.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

from . import _core

#: verdict name -> exit status of ``dirigo check`` (docs/cli.md): the compiled core's table (check::exit_code);
#: empty in a source tree whose core was never built
EXIT_CODES = dict(_core.EXIT_CODES) if _core is not None else {}


@dataclass
class Verdict:
    outcome: str                 # BUG | SUSPECT | CHECKED | VERIFIED | TIMEOUT | UNSUPPORTED | ERROR (dirigo failed)
    reason: str = ""
    checked: int = 0             # locations decided
    equal: int = 0               # ... proven equal for every input
    total_locations: int = 0
    seconds: float = 0.0
    evidence: str = ""           # what backs a BUG: execute-safety | replay-gpu | replay-cpu | fp32-evaluation |
                                 # state-replay-gpu/cpu | state-proven-location | observed-gpu/cpu | crash-gpu |
                                 # exception | timeout | crash (stage "trace": the candidate failed, the reference ran)
    location: dict | None = None  # the first differing location (index, symbolic values, witness)
    findings: list = field(default_factory=list)  # Execute safety violations
    report: dict = field(default_factory=dict)    # the full JSON report
    replay: dict | None = None   # the witness replayed on the real programs (docs/check.md, dirigo-replay)
    state: dict | None = None    # the state stage's answer (dirigo-state: parameters as constructed)
    stage: str = ""              # "state" / "observe" / "trace": the outcome comes from that stage (docs/check.md)
    function_outcome: str = ""   # the function check's own outcome when the state stage changed it

    @property
    def state_differs(self) -> bool:
        """Matched parameters/buffers hold different values as the two programs are constructed."""
        return bool(self.state and self.state.get("differing"))

    @property
    def witness(self) -> dict | None:
        """The dirigo-witness document of the differing location (docs/check.md), if any."""
        return self.report.get("witness")

    @property
    def is_bug(self) -> bool:
        return self.outcome == "BUG"

    @property
    def passed(self) -> bool:
        return self.outcome in ("CHECKED", "VERIFIED")

    def reward(self) -> float:
        """A scalar for RL loops: 1 proven equal at every location, fraction of locations proven
        equal for CHECKED, 0 for undecided outcomes, -1 for a BUG."""
        if self.outcome == "VERIFIED":
            return 1.0
        if self.outcome == "CHECKED":
            return 0.5 + 0.5 * (self.equal / self.total_locations if self.total_locations else 0.0)
        if self.outcome == "BUG":
            return -1.0
        return 0.0

    @classmethod
    def from_report(cls, rep: dict) -> "Verdict":
        loc = None
        if "first_differ" in rep:
            loc = rep["locations"][rep["first_differ"]]
        return cls(outcome=rep["outcome"], reason=rep.get("reason", ""), checked=rep.get("checked", 0),
                   equal=rep.get("equal", 0), total_locations=rep.get("total_locations", 0),
                   seconds=rep.get("seconds", 0.0), evidence=rep.get("evidence", ""), location=loc,
                   findings=rep.get("findings", []), report=rep, replay=rep.get("replay"), state=rep.get("state"),
                   stage=rep.get("stage", ""),
                   function_outcome=rep.get("function_outcome", ""))


def check_bundle(bundle_dir: str, *, budget_s: float = 30.0, seed: int = 0, full: bool = False,
                 min_locations: int = 5, max_locations: int = 0, atol: float | None = None,
                 rtol: float | None = None, trim_prefix: bool = True, jobs: int = 1) -> Verdict:
    """Check an existing trace bundle (no GPU needed)."""
    if _core is None:  # pragma: no cover
        return Verdict("UNSUPPORTED", "dirigo's compiled core is not built (run scripts/build.sh)")
    text = _core.check_bundle(os.fspath(bundle_dir), budget_s, seed, full, min_locations, max_locations,
                              -1.0 if atol is None else atol, -1.0 if rtol is None else rtol, trim_prefix,
                              max(1, int(jobs)))
    return Verdict.from_report(json.loads(text))


def check(ref: str, new: str, *, budget_s: float = 30.0, jobs: int = 1, seed: int = 0, full: bool = False,
          device: str | None = None, timeout: float = 300.0, keep_bundle: str | None = None,
          atol: float | None = None, rtol: float | None = None, replay: bool = True, state: bool = True,
          observe: bool | None = None, warm: bool = True) -> Verdict:
    """Trace REF and NEW (on the GPU when one is present, else the CPU) and check them. A differing
    location's witness is replayed on the real programs (``replay=False``: keep the fp32 evidence).
    The state stage (``state=False``: skip it) compares the parameters both programs are constructed
    with and whether a difference reaches the outputs (docs/check.md "State"); with ``observe`` (default:
    on a GPU) it also runs both real programs on KernelBench's trial inputs when their state is equal, so
    that what KernelBench's own check sees is reported too, with evidence ``observed-gpu`` (docs/check.md
    "Observe").

    ``jobs`` location workers (threads) search in parallel; the verdict does not depend on it.

    ``warm`` (default): the children that trace, replay and compare state are forks of one process-wide
    worker that imported torch once (dirigo.worker), so repeated calls do not pay that import each time;
    the first call starts it. ``warm=False`` or DIRIGO_WARM=0: a new interpreter per child.
    """
    from . import worker
    with worker.warm(warm):
        return _check(ref, new, budget_s=budget_s, jobs=jobs, seed=seed, full=full, device=device, timeout=timeout,
                      keep_bundle=keep_bundle, atol=atol, rtol=rtol, replay=replay, state=state, observe=observe)


def _check(ref, new, *, budget_s, jobs, seed, full, device, timeout, keep_bundle, atol, rtol, replay, state,
           observe) -> Verdict:
    from . import trace as _trace
    if device is None:
        try:
            import torch
            device = "cuda" if torch.cuda.is_available() else "cpu"
        except Exception:  # pragma: no cover
            device = "cpu"
    tmp = None
    out = keep_bundle
    if out is None:
        tmp = tempfile.TemporaryDirectory(prefix="dirigo-")
        out = os.path.join(tmp.name, "bundle")
    try:
        kw = {}
        if atol is not None:
            kw["atol"] = atol
        if rtol is not None:
            kw["rtol"] = rtol
        res = _trace.trace(ref, new, out, device=device, timeout=timeout, **kw)
        if res.status in ("crash", "failed"):  # the candidate failed (faulted, raised, hung) where the reference ran
            v = Verdict.from_report(json.loads(_core.candidate_failure(res.message, res.evidence)))
            v.report["trace"] = {"status": res.status, "message": res.message, "failure": res.failure}
            return v
        if res.status == "internal":  # the tracer itself failed: dirigo's error, not a verdict on the programs
            rep = json.loads(_core.internal_error(res.message))
            return Verdict.from_report(dict(rep, trace={"status": res.status, "message": res.message}))
        if res.status != "ok":  # "error" (the reference failed), "unsupported" (environment, or not modelled)
            rep = json.loads(_core.trace_unsupported(res.message))
            return Verdict.from_report(dict(rep, trace={"status": res.status, "message": res.message}))
        v = check_bundle(out, budget_s=budget_s, seed=seed, full=full, atol=atol, rtol=rtol, jobs=jobs)
        if replay and v.outcome in ("BUG", "SUSPECT") and not v.findings and v.witness:
            w = dict(v.witness, ref=os.path.abspath(ref), new=os.path.abspath(new))
            v.report["witness"] = w
            apply_replay(v, replay_witness(w, device=device, timeout=timeout))
        if state and v.outcome != "ERROR":
            apply_state(v, state_answer(ref, new, bundle=out, report=v.report, device=device, timeout=timeout,
                                        observe=device == "cuda" if observe is None else observe))
        return v
    finally:
        if tmp is not None:
            tmp.cleanup()


def replay_witness(witness: dict, *, device: str | None = None, timeout: float = 300.0) -> dict:
    """Replay a dirigo-witness document in a child process (it runs user code); the dirigo-replay answer."""
    with tempfile.TemporaryDirectory(prefix="dirigo-replay-") as d:
        path = os.path.join(d, "witness.json")
        with open(path, "w") as fh:
            json.dump(witness, fh)
        cmd = [sys.executable, "-m", "dirigo.replay", path, "--json"] + (["--device", device] if device else [])
        return _child_answer(cmd, timeout, "the replayer", lambda message: {
            "format": "dirigo-replay", "version": 1, "status": "error", "message": message})


def _child_answer(cmd: list, timeout: float, who: str, failed) -> dict:
    """The JSON answer a dirigo child process (it runs user code) prints on stdout, with this package
    importable; failed(message) when it runs past `timeout` or prints no JSON."""
    from . import worker
    env = dict(os.environ)
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = pkg + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    assert cmd[1] == "-m", cmd
    with tempfile.TemporaryDirectory(prefix="dirigo-child-") as d:
        out_path, err_path = os.path.join(d, "stdout"), os.path.join(d, "stderr")
        p = worker.popen(cmd[2], cmd[3:], stdout_path=out_path, stderr_path=err_path, merge_stderr=False,
                         plain_env=env)
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pid, signal.SIGKILL)  # its own session: what it started goes too
            p.wait()
            return failed(f"{who} did not finish within {timeout:.0f} s")
        with open(out_path, errors="replace") as fh:
            stdout = fh.read()
        with open(err_path, errors="replace") as fh:
            stderr = fh.read()
    try:
        return json.loads(stdout)
    except json.JSONDecodeError:
        return failed(f"{who} did not answer (exit status {p.returncode}): {stderr[-500:]}")


def state_answer(ref: str, new: str, *, bundle: str | None = None, report: dict | None = None,
                 device: str | None = None, timeout: float = 300.0, observe: bool = False) -> dict:
    """The dirigo-state answer for two program files, from a child process (it runs user code);
    `observe`: also run both real programs when their state is equal (docs/check.md "Observe")."""
    with tempfile.TemporaryDirectory(prefix="dirigo-state-") as d:
        cmd = [sys.executable, "-m", "dirigo.state", os.path.abspath(ref), os.path.abspath(new), "--json"]
        if bundle:
            cmd += ["--bundle", os.path.abspath(bundle)]
        if report is not None:
            path = os.path.join(d, "report.json")
            with open(path, "w") as fh:
                json.dump(report, fh)
            cmd += ["--report", path]
        if device:
            cmd += ["--device", device]
        if observe:
            cmd.append("--observe")
        return _child_answer(cmd, timeout, "the state stage", lambda reason: {
            "format": "dirigo-state", "version": 1, "verdict": "UNKNOWN", "reason": reason})


def apply_state(v: Verdict, st: dict) -> None:
    """The state stage's answer folded into ``v`` by the CLI's verdict rules (docs/check.md "State" and
    "Observe"; src/check/state.cpp): an output difference observed under each program's own state, or
    on the real programs, is a BUG unless the function check found one already; values that differ and
    move the reference's output make CHECKED/VERIFIED/TIMEOUT a SUSPECT; the rest are notes."""
    _fold(v, state=st)


def apply_replay(v: Verdict, rp: dict) -> None:
    """The witness replay's answer folded into ``v`` by the CLI's verdict rules (docs/check.md;
    src/check/witness.cpp): a replay that reproduces makes a BUG backed by it, one that ran and does
    not makes a SUSPECT, one that could not run leaves a note."""
    _fold(v, replay=rp)


def _fold(v: Verdict, replay: dict | None = None, state: dict | None = None) -> None:
    rep = dict(v.report, outcome=v.outcome, reason=v.reason, evidence=v.evidence)
    if v.stage:
        rep["stage"] = v.stage
    if v.function_outcome:
        rep["function_outcome"] = v.function_outcome
    text = _core.fold_answers(json.dumps(rep), json.dumps(replay) if replay else "",
                              json.dumps(state) if state else "")
    v.__dict__.update(Verdict.from_report(json.loads(text)).__dict__)
