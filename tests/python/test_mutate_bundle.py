"""mutate_bundle.reconcile: a VERIFIED mutant that a valid input kills loses `equivalent`; one that
is killed only on an input the substrate itself fails (the validity gate) keeps it."""
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
