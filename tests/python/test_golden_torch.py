"""Golden verdict pairs, Alive2 style: each tests/golden/torch/<case>/ holds a reference (ref.py)
and a candidate (new.py) whose first line says the expected verdict (`# EXPECT: BUG`, or
`# EXPECT: EQUAL` for CHECKED/VERIFIED: every location the search reaches is proven equal). Both are
pure PyTorch, so they are traced on the CPU and checked end to end (trace -> bundle -> check)."""
import pathlib
import re

import pytest

import dirigo

GOLDEN = pathlib.Path(__file__).resolve().parents[1] / "golden" / "torch"
CASES = sorted(p.name for p in GOLDEN.iterdir() if (p / "new.py").exists())


def expected(case: str) -> str:
    m = re.search(r"^# EXPECT: (\w+)", (GOLDEN / case / "new.py").read_text(), re.M)
    assert m, f"{case}/new.py has no '# EXPECT:' line"
    return m.group(1)


@pytest.mark.parametrize("case", CASES)
def test_golden_verdict(case, tmp_path):
    want = expected(case)
    # an EQUAL pair that is not proven everywhere ends at its budget: 6 s still proves far more than 5 locations
    v = dirigo.check(str(GOLDEN / case / "ref.py"), str(GOLDEN / case / "new.py"), budget_s=6 if want == "EQUAL" else 20,
                     device="cpu", keep_bundle=str(tmp_path / "bundle"))
    accepted = ("CHECKED", "VERIFIED") if want == "EQUAL" else (want,)
    assert v.outcome in accepted, f"{case}: expected {want}, got {v.outcome}: {v.reason}"
    if want == "BUG" and v.stage == "state":
        # A state BUG (docs/check.md "State"): the programs as constructed give different outputs.
        assert v.evidence in ("state-replay-cpu", "state-replay-gpu", "state-proven-location")
        assert v.state["differing"] and v.state["outputs"]["exceeds"]
    elif want == "BUG":
        # A BUG always carries evidence: a location whose witness shows the difference beyond tolerance.
        assert v.evidence in ("replay-cpu", "replay-gpu", "fp32-evaluation", "execute-safety")
        if v.evidence == "fp32-evaluation":
            a, b = v.location["values_f32"]
            assert abs(a - b) > 1e-2 + 1e-2 * abs(a)
    else:
        assert v.equal >= 5 or v.equal == v.total_locations
