"""A random kill matrix in the store schema (docs/mutation.md "Kill-matrix store"), for timing and
smoke-testing `dirigo score` / `dirigo suite` only: its outcomes are random, never results.

    python3 tests/score/tool/synthetic_store.py OUT.sqlite PROBLEMS MUTANTS_PER_PROBLEM [SEED]
"""
import os
import random
import sqlite3
import sys

SCHEMA = """
CREATE TABLE substrates(id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, status TEXT);
CREATE TABLE mutants(id INTEGER PRIMARY KEY, substrate_id INTEGER NOT NULL, ordinal INTEGER NOT NULL,
  rule TEXT NOT NULL, family TEXT NOT NULL, status TEXT NOT NULL);
CREATE TABLE inputs(id INTEGER PRIMARY KEY, substrate_id INTEGER NOT NULL, name TEXT NOT NULL, problem TEXT,
  distribution TEXT, seed INTEGER, family TEXT, spec_json TEXT);
CREATE TABLE runs(id INTEGER PRIMARY KEY, substrate_id INTEGER, mutant_id INTEGER, input_id INTEGER NOT NULL,
  source TEXT, status TEXT NOT NULL, t_eq REAL, t_eq32 REAL, max_abs REAL, nonfinite_mismatch INTEGER, ms REAL,
  detail TEXT);
CREATE TABLE mutant_class(mutant_id INTEGER PRIMARY KEY, substrate_id INTEGER, runnable INTEGER, reason TEXT,
  verdict TEXT, verdict_reason TEXT, check_s REAL, equivalent INTEGER);
"""
FAMILIES = ["arithmetic", "indexing", "semantic", "boundary", "synchronization", "precision"]
HARDENED = ["uniform01", "large", "tiny", "positive", "ties", "outliers"]


def main() -> None:
    path, problems, per = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rnd = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 1)
    if os.path.exists(path):
        os.remove(path)
    db = sqlite3.connect(path)
    db.execute("PRAGMA synchronous=OFF")
    db.executescript(SCHEMA)
    draws = [("kernelbench_randn", s, "kernelbench", f"kernelbench_randn/{s}") for s in range(5)]
    draws += [(d, 0, "hardened", f"{d}/0") for d in HARDENED]
    draws += [(HARDENED[k % len(HARDENED)], 100 + k, "fuzz", f"fuzz/{k}") for k in range(6)]
    run_sql = ("INSERT INTO runs(substrate_id, mutant_id, input_id, source, status, t_eq, t_eq32, max_abs, "
               "nonfinite_mismatch) VALUES(?,?,?,'cpu',?,?,?,0,0)")
    for p in range(problems):
        sid = db.execute("INSERT INTO substrates(path, status) VALUES(?, 'ok')", (f"prob{p}.py",)).lastrowid
        ins = [db.execute("INSERT INTO inputs(substrate_id, name, problem, distribution, seed, family) "
                          "VALUES(?,?,?,?,?,?)", (sid, name, f"prob{p}", d, s, f)).lastrowid
               for d, s, f, name in draws]
        for i in ins:
            db.execute(run_sql, (sid, None, i, "ok", rnd.choice([1e-7, 1e-6, 5e-4]), 1e-7))
        for k in range(per):
            mid = db.execute("INSERT INTO mutants(substrate_id, ordinal, rule, family, status) VALUES(?,?,?,?,'unique')",
                             (sid, k, "r", rnd.choice(FAMILIES))).lastrowid
            db.execute("INSERT INTO mutant_class(mutant_id, substrate_id, runnable, verdict, equivalent) "
                       "VALUES(?,?,1,?,0)", (mid, sid, rnd.choice(["BUG", "CHECKED", "SUSPECT", None])))
            for i in ins:
                t = rnd.choice([1e-7, 1e-5, 1e-3, 0.5]) if rnd.random() < 0.3 else 1e-7
                db.execute(run_sql, (sid, mid, i, "crash" if rnd.random() < 0.005 else "ok", t, t))
    db.commit()


if __name__ == "__main__":
    main()
