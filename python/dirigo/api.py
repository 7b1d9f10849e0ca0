"""The Python entry point: ``dirigo.check(ref, new)`` traces both programs and checks them.

Made for callers that run it thousands of times (an RL reward, a CI job): it never raises for
anything the user programs do, always returns a :class:`Verdict`, and is deterministic for a seed.
"""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field

#: verdict name -> exit status of ``dirigo check`` (docs/cli.md)
EXIT_CODES = {"BUG": 1, "SUSPECT": 2, "CHECKED": 0, "VERIFIED": 0, "TIMEOUT": 3, "UNSUPPORTED": 4}


@dataclass
class Verdict:
    outcome: str                 # BUG | SUSPECT | CHECKED | VERIFIED | TIMEOUT | UNSUPPORTED
    reason: str = ""
    checked: int = 0             # locations decided
    equal: int = 0               # ... proven equal for every input
    total_locations: int = 0
    seconds: float = 0.0
    evidence: str = ""           # what backs a BUG
    location: dict | None = None  # the first differing location (index, symbolic values, witness)
    findings: list = field(default_factory=list)  # Execute safety violations
    report: dict = field(default_factory=dict)    # the full JSON report

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
                   findings=rep.get("findings", []), report=rep)


def check_bundle(bundle_dir: str, *, budget_s: float = 30.0, seed: int = 0, full: bool = False,
                 min_locations: int = 5, max_locations: int = 0, atol: float | None = None,
                 rtol: float | None = None, trim_prefix: bool = True) -> Verdict:
    """Check an existing trace bundle (no GPU needed)."""
    from . import _core
    if _core is None:  # pragma: no cover
        return Verdict("UNSUPPORTED", "dirigo's compiled core is not built (run scripts/build.sh)")
    text = _core.check_bundle(os.fspath(bundle_dir), budget_s, seed, full, min_locations, max_locations,
                              -1.0 if atol is None else atol, -1.0 if rtol is None else rtol, trim_prefix)
    return Verdict.from_report(json.loads(text))


def check(ref: str, new: str, *, budget_s: float = 30.0, jobs: int = 1, seed: int = 0, full: bool = False,
          device: str | None = None, timeout: float = 300.0, keep_bundle: str | None = None,
          atol: float | None = None, rtol: float | None = None) -> Verdict:
    """Trace REF and NEW (on the GPU when one is present, else the CPU) and check them.

    ``jobs`` is accepted for interface stability; the location search runs on one thread today.
    """
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
        if res.status != "ok":
            return Verdict("UNSUPPORTED", res.message)
        return check_bundle(out, budget_s=budget_s, seed=seed, full=full, atol=atol, rtol=rtol)
    finally:
        if tmp is not None:
            tmp.cleanup()
