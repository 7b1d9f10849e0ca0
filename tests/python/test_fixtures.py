"""Every committed example bundle gives the verdict its candidate program announces.

Bundles live next to the programs they record: examples/<...>/bundle*/manifest.json. The candidate
is `<stem>.py` when the bundle directory ends in `-<stem>` and that file exists (running_example/
bundle-buggy -> buggy.py), else `new.py`. Its first line reads
`# Expected verdict: BUG <category> — ...` (category: an Execute finding kind such as shared-race,
or `witness` for an inequivalence backed by a witness), `# Expected verdict: BUG — ...` (any
evidence), or `CHECKED` / `VERIFIED` / `EQUAL` (every location reached proven equal).
Which bundles are GPU-traced and which were synthesized on the CPU: manifest `created_by`
(examples/README.md lists them)."""
import json
import os
import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
DIRIGO = pathlib.Path(os.environ.get("DIRIGO_BIN", ROOT / "build" / "dirigo"))
BUDGET_S = 20
# A bundle expected CHECKED or EQUAL ends at its budget unless every location is proven first; 6 s still
# proves 30-40 locations of each (5 needed), so these checks do not wait 20 s each.
EQUAL_BUDGET_S = 6

# Correct programs the checker cannot yet prove: the expected verdict stays what is true; the test
# fails loudly (strict xfail) once the gap closes so the entry gets removed.
KNOWN_GAPS: dict[str, str] = {}  # by example folder, or by bundle path under examples/

# our example programs (examples/substrates belongs to the mutation module, examples/cublas to the cuBLAS capture)
FOLDERS = ("running_example", "gelu_linear", "execute_bugs", "triton")
BUNDLES = sorted(p.parent for f in FOLDERS for p in (EXAMPLES / f).glob("**/bundle*/manifest.json"))


def candidate_of(bundle: pathlib.Path) -> pathlib.Path:
    m = re.match(r"bundle.*-(\w+)$", bundle.name)
    if m and (bundle.parent / f"{m.group(1)}.py").exists():
        return bundle.parent / f"{m.group(1)}.py"
    return bundle.parent / "new.py"


def expected(candidate: pathlib.Path) -> tuple[str, str | None]:
    first = candidate.read_text().splitlines()[0]
    m = re.match(r"# Expected verdict: (BUG|CHECKED|VERIFIED|EQUAL)(?: ([a-z][a-z-]*))?\b", first)
    assert m, f"{candidate}: first line does not state '# Expected verdict: ...': {first!r}"
    return m.group(1), m.group(2)


def check(bundle: pathlib.Path, budget: float = BUDGET_S) -> tuple[int, dict]:
    p = subprocess.run([str(DIRIGO), "check", str(bundle), "--budget", str(budget), "--json"],
                       capture_output=True, text=True, timeout=BUDGET_S * 10)
    assert p.stdout.strip(), f"dirigo check {bundle} printed nothing (exit {p.returncode}): {p.stderr[-2000:]}"
    return p.returncode, json.loads(p.stdout)


def test_fixtures_exist():
    names = {b.relative_to(EXAMPLES).as_posix() for b in BUNDLES}
    assert "running_example/bundle-buggy" in names and "running_example/bundle-fixed" in names
    classes = {b.parent.name for b in BUNDLES if b.parent.parent.name == "execute_bugs"}
    for c in ("shared_race", "warp_sync_missing", "divergent_barrier", "full_mask_predicated",
              "shuffle_out_of_block", "global_oob", "layout_mismatch", "uninit_shared"):
        assert c in classes, f"no bundle for Execute bug class {c}"


def test_every_bundle_names_an_existing_candidate():
    for b in BUNDLES:
        assert candidate_of(b).exists(), b
        expected(candidate_of(b))


@pytest.mark.skipif(not DIRIGO.exists(), reason=f"{DIRIGO} not built (scripts/build.sh, or set DIRIGO_BIN)")
@pytest.mark.parametrize("bundle", BUNDLES, ids=[b.relative_to(EXAMPLES).as_posix() for b in BUNDLES])
def test_fixture_verdict(bundle, request):
    gap = KNOWN_GAPS.get(bundle.parent.name) or KNOWN_GAPS.get(bundle.relative_to(EXAMPLES).as_posix())
    if gap:
        request.applymarker(pytest.mark.xfail(reason=gap, strict=True))
    want, category = expected(candidate_of(bundle))
    rc, rep = check(bundle, EQUAL_BUDGET_S if want in ("CHECKED", "EQUAL") else BUDGET_S)
    outcome = rep["outcome"]
    if want == "BUG":
        assert outcome == "BUG" and rc == 1, f"expected BUG, got {outcome}: {rep['reason']}"
        kinds = [f["kind"] for f in rep["findings"]]
        if category is None:
            assert rep["evidence"] in ("execute-safety", "fp32-evaluation", "numeric-falsification", "replay")
        elif category == "witness":
            # A numerics bug: no safety finding, a location whose witness shows the difference.
            assert not kinds, kinds
            assert rep["evidence"] in ("fp32-evaluation", "replay")
        else:
            assert rep["evidence"] == "execute-safety"
            assert kinds and kinds[0] == category, f"expected {category}, findings {kinds}"
            assert category in rep["reason"]
        if rep["evidence"] != "execute-safety":
            loc = rep["locations"][rep["first_differ"]]
            a, b = loc["values_f32"]
            tol = rep.get("atol", 1e-2) + rep.get("rtol", 1e-2) * abs(a)
            assert abs(a - b) > tol, loc
            # a falsified location's witness is its regenerable (seed, point), not a leaf list
            assert loc["witness"] or (rep["evidence"] == "numeric-falsification" and loc.get("sampled")), loc
    else:
        accepted = {"CHECKED": ("CHECKED", "VERIFIED"), "EQUAL": ("CHECKED", "VERIFIED"), "VERIFIED": ("VERIFIED",)}
        assert outcome in accepted[want] and rc == 0, f"expected {want}, got {outcome}: {rep['reason']}"
        assert rep["equal"] >= 5 or rep["equal"] == rep["total_locations"]
        assert not rep["findings"]
