"""scripts/mutation-substrates.py gate: a substrate passes only when it is KernelBench-correct, traced,
passes every kernelbench_randn and hardened input against fp64 at tol, and dirigo does not say BUG;
an unrun or untraced one is unknown, not failed."""
import importlib.util
import json
import pathlib
import sqlite3
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
spec = importlib.util.spec_from_file_location("mutation_substrates", ROOT / "scripts" / "mutation-substrates.py")
ms = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ms)

from dirigo import bundle_km as bk  # noqa: E402


def _store(tmp_path):
    db = str(tmp_path / "s.sqlite")
    con = bk.connect(db)
    con.executescript(ms.SCHEMA + """
      CREATE TABLE substrates(id INTEGER PRIMARY KEY, path TEXT UNIQUE, status TEXT);
      CREATE TABLE inputs(id INTEGER PRIMARY KEY, substrate_id INTEGER, name TEXT, family TEXT);
      CREATE TABLE runs(id INTEGER PRIMARY KEY, substrate_id INTEGER, mutant_id INTEGER, input_id INTEGER, source TEXT,
        status TEXT, t_eq REAL);
      CREATE TABLE substrate_check(substrate_id INTEGER PRIMARY KEY, verdict TEXT);""")
    return db, con


def test_gate_columns(tmp_path):
    db, con = _store(tmp_path)
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / "manifest.json").write_text("{}")
    for sid, name in enumerate(["good", "wrong", "racy", "untraced"], start=1):
        con.execute("INSERT INTO substrate_selection(name, source, kernelbench) VALUES(?, 'x', 'correct')", (name,))
        con.execute("INSERT INTO substrates VALUES(?, ?, 'ok')", (sid, f".cache/mutation/src/{name}.py"))
        con.execute("INSERT INTO substrate_bundle(substrate_id, reference, bundle) VALUES(?, 'r', ?)",
                    (sid, str(bundle) if name != "untraced" else str(tmp_path / "none")))
        for k, fam in enumerate(["kernelbench", "hardened", "fuzz"]):
            iid = sid * 10 + k
            con.execute("INSERT INTO inputs VALUES(?, ?, ?, ?)", (iid, sid, f"{fam}/0", fam))
            t = 0.5 if (name == "wrong" and fam == "hardened") or fam == "fuzz" else 1e-6
            con.execute("INSERT INTO runs(substrate_id, mutant_id, input_id, source, status, t_eq) "
                        "VALUES(?, NULL, ?, 'gpu', 'ok', ?)", (sid, iid, t))
    con.execute("INSERT INTO substrate_check VALUES(3, 'BUG')")
    con.commit()
    assert ms.gate(db, 1e-2, "gpu") == {"gate_ok": 1, "failed": 2, "unknown": 1}
    rows = {r[0]: r[1:] for r in con.execute("SELECT name, traced, fp64, dirigo, gate_ok FROM substrate_selection")}
    assert rows["good"] == (1, "pass", "not checked", 1)  # a fuzz input outside tol is not part of the gate
    assert rows["wrong"][1].startswith("fail: hardened/0")
    assert rows["racy"][2:] == ("BUG", 0)
    assert rows["untraced"][0] == 0 and rows["untraced"][3] == 0
    assert ms.gate(db, 1e-2, "cpu")["unknown"] == 4  # no CPU rows: nothing known
