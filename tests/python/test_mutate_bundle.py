"""mutate_bundle.reconcile: a VERIFIED mutant that a valid input kills loses `equivalent`; one that
is killed only on an input the substrate itself fails (the validity gate) keeps it."""
import json
import os
import sqlite3
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))

from dirigo import mutate_bundle  # noqa: E402


def test_reconcile_clears_equivalent_only_on_a_valid_kill(tmp_path):
    db = tmp_path / "s.sqlite"
    con = sqlite3.connect(db)
    con.executescript("""
      CREATE TABLE inputs(id INTEGER PRIMARY KEY, substrate_id INTEGER, name TEXT);
      CREATE TABLE runs(id INTEGER PRIMARY KEY, substrate_id INTEGER, mutant_id INTEGER, input_id INTEGER, source TEXT,
        status TEXT, t_eq REAL, nonfinite_mismatch INTEGER);
      CREATE TABLE mutant_class(mutant_id INTEGER PRIMARY KEY, verdict TEXT, verdict_reason TEXT, equivalent INTEGER);
      INSERT INTO inputs VALUES (1, 1, 'kernelbench_randn/0'), (2, 1, 'large/0');
      -- the substrate passes input 1, fails input 2 (not a valid input)
      INSERT INTO runs(substrate_id, mutant_id, input_id, source, status, t_eq, nonfinite_mismatch) VALUES
        (1, NULL, 1, 'gpu', 'ok', 0.0, 0), (1, NULL, 2, 'gpu', 'ok', 0.5, 0),
        (1, 10, 1, 'gpu', 'ok', 0.3, 0),      -- mutant 10: killed on a valid input
        (1, 11, 1, 'gpu', 'ok', 0.0, 0), (1, 11, 2, 'gpu', 'ok', 0.9, 0);  -- 11: only on the invalid one
      INSERT INTO mutant_class VALUES (10, 'VERIFIED', '', 1), (11, 'VERIFIED', '', 1);""")
    con.commit()
    assert mutate_bundle.reconcile(str(db)) == 1
    got = dict(con.execute("SELECT mutant_id, equivalent FROM mutant_class").fetchall())
    assert got == {10: 0, 11: 1}
    reason = con.execute("SELECT verdict_reason FROM mutant_class WHERE mutant_id = 10").fetchone()[0]
    assert "kernelbench_randn/0 (gpu)" in reason and "unsound" in reason
    assert mutate_bundle.reconcile(str(db)) == 0  # idempotent


def test_check_takes_the_traced_bundle_and_swaps_the_mutants_ptx_into_a_copy(tmp_path):
    """A substrate with a traced bundle (no host mirror) is checked on a copy of that bundle with each
    mutant's PTX in the traced module. The running example's traced pair stands in for a substrate: its
    buggy kernel as the "original" (BUG, the substrate gate), the fixed kernel as a mutant (a verdict,
    and not BUG)."""
    import hashlib
    import pathlib
    import shutil
    root = pathlib.Path(__file__).resolve().parents[2]
    dirigo = os.environ.get("DIRIGO_BIN", str(root / "build" / "dirigo"))
    ex = root / "examples" / "running_example"
    traced = tmp_path / "substrates" / "rx" / "bundle"
    shutil.copytree(ex / "bundle-gpu-buggy", traced)
    work = tmp_path / "work"
    (work / "mutants" / "rx").mkdir(parents=True)
    (work / "src").mkdir()
    shutil.copy(traced / "ptx" / "new_m0.ptx", work / "mutants" / "rx" / "original.ptx")
    shutil.copy(ex / "bundle-gpu-fixed" / "ptx" / "new_m0.ptx", work / "mutants" / "rx" / "m0001.ptx")
    (work / "src" / "rx.py").write_text("# a corpus solution: no dirigo_launches\n")
    db = tmp_path / "km.sqlite"
    con = sqlite3.connect(db)
    con.executescript(f"""
      CREATE TABLE substrates(id INTEGER PRIMARY KEY, path TEXT, status TEXT, message TEXT);
      CREATE TABLE mutants(id INTEGER PRIMARY KEY, substrate_id INTEGER, ordinal INTEGER, rule TEXT, family TEXT,
        ptx_path TEXT, source_path TEXT);
      CREATE TABLE mutant_class(mutant_id INTEGER PRIMARY KEY, runnable INTEGER, verdict TEXT, verdict_reason TEXT,
        check_s REAL, equivalent INTEGER);
      CREATE TABLE substrate_bundle(substrate_id INTEGER PRIMARY KEY, reference TEXT NOT NULL, bundle TEXT NOT NULL,
        candidate TEXT, module TEXT, origin TEXT, gate_json TEXT);
      INSERT INTO substrates VALUES (1, '{work / "src" / "rx.py"}', 'ok', NULL);
      INSERT INTO substrate_bundle VALUES (1, 'ref.py', '{traced}', 'new.py', 'new_m0', 'test', NULL);
      INSERT INTO mutants VALUES (7, 1, 1, 'fix', 'boundary', '{work / "mutants" / "rx" / "m0001.ptx"}', '');
      INSERT INTO mutant_class VALUES (7, 1, NULL, NULL, NULL, 0);""")
    con.commit()
    before = hashlib.sha256((traced / "ptx" / "new_m0.ptx").read_bytes()).hexdigest()
    mutate_bundle.check_store(str(db), str(work), dirigo, budget=20, limit=0)
    assert con.execute("SELECT verdict FROM substrate_check WHERE substrate_id = 1").fetchone()[0] == "BUG"
    verdict, reason = con.execute("SELECT verdict, verdict_reason FROM mutant_class WHERE mutant_id = 7").fetchone()
    assert verdict not in (None, "BUG", "UNSUPPORTED"), (verdict, reason)
    assert hashlib.sha256((traced / "ptx" / "new_m0.ptx").read_bytes()).hexdigest() == before
    copy = json.loads((work / "bundles" / "rx" / "manifest.json").read_text())
    assert copy["modules"][0]["sha256"] == hashlib.sha256(
        (work / "mutants" / "rx" / "original.ptx").read_bytes()).hexdigest()  # the original is back in place
