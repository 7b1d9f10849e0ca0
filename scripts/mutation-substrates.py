#!/usr/bin/env python3
"""Substrates from the dev corpus: one KernelBench-correct solution per level-1/2 problem (docs/mutation.md).

    python3 scripts/mutation-substrates.py select [--corpus ../shared/corpus] [--out .cache/mutation/substrates]
        [--db .cache/mutation/km.sqlite] [--levels 1,2] [--dirigo build/dirigo]
    python3 scripts/mutation-substrates.py gate --db DB [--tol 1e-2] [--source gpu|cpu]

select: streams the corpus indexes (one index entry at a time, one solution file read at a time);
per (level, problem) the candidates are the solutions labelled `correct` (KernelBench's own check
passed: the first gate) in a fixed order (run name, then file); the first whose CUDA text `dirigo
mutate --no-compile` parses into mutants, that has a single CUDA unit and no Triton, is taken. It
is copied with the problem's reference into OUT/L<level>_<id>_<name>/{new.py, ref.py} (git-ignored;
corpus code is never committed) and recorded in the store's `substrate_selection` table with the
reason for every skipped candidate. Nothing else is read: RSS stays ~100 MB.

gate: fills `substrate_selection`'s gate columns from what the store knows:
  kernelbench  the corpus label (correct) -- KernelBench's check on the solution's own hardware
  traced       a bundle exists (scripts/gpu/mutation.sh traces on the GPU)
  fp64         the substrate's own runs: every kernelbench_randn and hardened input ran and passes
               allclose(atol = rtol = tol) against the fp64 reference (the differential test)
  dirigo       `dirigo check` on the bundle is not BUG (substrate_check, when checked)
and `gate_ok` = all four hold (dirigo unchecked counts as holding, with the note).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile

SCHEMA = """
CREATE TABLE IF NOT EXISTS substrate_selection(
  name TEXT PRIMARY KEY, level INTEGER, problem_id INTEGER, problem TEXT, source TEXT, run TEXT,
  candidates INTEGER, skipped_json TEXT, kernelbench TEXT, traced INTEGER, fp64 TEXT, dirigo TEXT, gate_ok INTEGER,
  note TEXT);
"""


def entries(corpus: str):
    """(collection, entry) of every dev index, one at a time."""
    dev = os.path.join(corpus, "dev")
    for coll in sorted(os.listdir(dev)):
        idx = os.path.join(dev, coll, "index.json")
        if os.path.exists(idx):
            with open(idx) as f:
                data = json.load(f)  # ~0.4 MB each: metadata only, no sources
            for e in data:
                yield coll, e


def references(corpus: str, level: int) -> dict[int, str]:
    d = os.path.join(corpus, "kernelbench", f"level{level}")
    out = {}
    for f in os.listdir(d):
        m = re.match(r"(\d+)_(.+)\.py$", f)
        if m:
            out[int(m.group(1))] = os.path.join(d, f)
    return out


def usable(path: str, dirigo: str) -> str | None:
    """None when the file is a substrate candidate, else why not."""
    text = open(path, errors="replace").read()
    if "__global__" not in text:
        return "no CUDA kernel string"
    if re.search(r"^\s*(import triton|from triton)", text, re.M):
        return "uses Triton"
    if "load_inline" not in text:
        return "no load_inline extension"
    with tempfile.TemporaryDirectory() as d:
        db = os.path.join(d, "s.sqlite")
        p = subprocess.run([dirigo, "mutate", "-q", "--no-compile", "--db", db, path], capture_output=True, text=True,
                           timeout=120)
        if p.returncode != 0:
            return f"dirigo mutate: {(p.stdout + p.stderr).strip().splitlines()[-1][:160] if (p.stdout + p.stderr).strip() else p.returncode}"
        con = sqlite3.connect(db)
        units, status, msg = con.execute("SELECT units, status, message FROM substrates").fetchone()
        n = con.execute("SELECT COUNT(*) FROM mutants").fetchone()[0]
        con.close()
    if status != "ok":
        return f"dirigo mutate: {msg[:160]}"
    if units != 1:
        return f"{units} CUDA units (one is replayed)"
    if n == 0:
        return "no mutation site"
    return None


def select(corpus: str, out: str, db: str, levels: list[int], dirigo: str) -> dict:
    con = sqlite3.connect(db, timeout=120)
    con.executescript(SCHEMA)
    refs = {lv: references(corpus, lv) for lv in levels}
    cands: dict[tuple[int, int], list[tuple[str, str, str]]] = {}
    for coll, e in entries(corpus):
        if e.get("label") == "correct" and e.get("level") in levels:
            cands.setdefault((e["level"], e["problem_id"]), []).append((e["run"], coll, e["file"]))
    counts = {"problems": 0, "selected": 0, "no_candidate": 0, "no_reference": 0}
    os.makedirs(out, exist_ok=True)
    for (lv, pid) in sorted(cands):
        counts["problems"] += 1
        ref = refs[lv].get(pid)
        if ref is None:
            counts["no_reference"] += 1
            continue
        problem = os.path.splitext(os.path.basename(ref))[0]
        name = f"L{lv}_{problem}"
        skipped, chosen = [], None
        for run, coll, rel in sorted(cands[(lv, pid)]):
            path = os.path.join(corpus, "dev", coll, rel)
            why = usable(path, dirigo)
            if why is None:
                chosen = (run, coll, rel, path)
                break
            skipped.append({"file": f"{coll}/{rel}", "why": why})
        if chosen is None:
            counts["no_candidate"] += 1
            with con:
                con.execute("INSERT OR REPLACE INTO substrate_selection(name, level, problem_id, problem, candidates, "
                            "skipped_json, gate_ok, note) VALUES(?,?,?,?,?,?,0,?)",
                            (name, lv, pid, problem, len(cands[(lv, pid)]), json.dumps(skipped), "no usable solution"))
            continue
        run, coll, rel, path = chosen
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        shutil.copyfile(path, os.path.join(d, "new.py"))
        shutil.copyfile(ref, os.path.join(d, "ref.py"))
        with con:
            con.execute("INSERT OR REPLACE INTO substrate_selection(name, level, problem_id, problem, source, run, "
                        "candidates, skipped_json, kernelbench) VALUES(?,?,?,?,?,?,?,?,?)",
                        (name, lv, pid, problem, f"{coll}/{rel}", run, len(cands[(lv, pid)]), json.dumps(skipped),
                         "correct"))
        counts["selected"] += 1
        print(f"{name}: {coll}/{rel} ({len(skipped)} skipped)", flush=True)
    con.close()
    return counts


def gate(db: str, tol: float, source: str) -> dict:
    con = sqlite3.connect(db, timeout=120)
    con.executescript(SCHEMA)
    counts = {"gate_ok": 0, "failed": 0, "unknown": 0}
    has_check = con.execute("SELECT 1 FROM sqlite_master WHERE name = 'substrate_check'").fetchone() is not None
    for name, kb in con.execute("SELECT name, kernelbench FROM substrate_selection WHERE source IS NOT NULL").fetchall():
        row = con.execute("SELECT s.id, b.bundle FROM substrates s LEFT JOIN substrate_bundle b ON b.substrate_id = s.id "
                          "WHERE s.path LIKE ?", (f"%/{name}.py",)).fetchone()
        sid, bundle = row if row else (None, None)
        traced = int(bool(bundle and os.path.exists(os.path.join(bundle, "manifest.json"))))
        fp64, dv = "not run", "not checked"
        if sid is not None:
            rows = con.execute("SELECT i.name, r.status, r.t_eq FROM inputs i LEFT JOIN runs r ON r.input_id = i.id AND "
                               "r.mutant_id IS NULL AND r.source = ? WHERE i.substrate_id = ? AND i.family IN "
                               "('kernelbench', 'hardened')", (source, sid)).fetchall()
            if rows and all(s is not None for _, s, _ in rows):
                bad = [f"{n} ({s}{'' if t is None else f', t_eq {t:.3g}'})" for n, s, t in rows
                       if s != "ok" or t is None or t > tol]
                fp64 = "pass" if not bad else "fail: " + ", ".join(bad[:4])
            if has_check:
                v = con.execute("SELECT verdict FROM substrate_check WHERE substrate_id = ?", (sid,)).fetchone()
                if v and v[0]:
                    dv = v[0]
        ok = kb == "correct" and traced and fp64 == "pass" and dv != "BUG"
        unknown = not traced or fp64 == "not run"
        counts["gate_ok" if ok else "unknown" if unknown else "failed"] += 1
        with con:
            con.execute("UPDATE substrate_selection SET traced = ?, fp64 = ?, dirigo = ?, gate_ok = ? WHERE name = ?",
                        (traced, fp64, dv, int(ok), name))
    con.close()
    return counts


def main() -> int:
    ap = argparse.ArgumentParser()
    sp = ap.add_subparsers(dest="cmd", required=True)
    s = sp.add_parser("select")
    s.add_argument("--corpus", default=os.path.join("..", "shared", "corpus"))
    s.add_argument("--out", default=".cache/mutation/substrates")
    s.add_argument("--db", default=".cache/mutation/km.sqlite")
    s.add_argument("--levels", default="1,2")
    s.add_argument("--dirigo", default="build/dirigo")
    g = sp.add_parser("gate")
    g.add_argument("--db", default=".cache/mutation/km.sqlite")
    g.add_argument("--tol", type=float, default=1e-2)
    g.add_argument("--source", default="gpu", choices=["cpu", "gpu"])
    a = ap.parse_args()
    if a.cmd == "select":
        os.makedirs(os.path.dirname(a.db) or ".", exist_ok=True)
        print(select(a.corpus, a.out, a.db, [int(x) for x in a.levels.split(",")], a.dirigo))
    else:
        print(gate(a.db, a.tol, a.source))
    return 0


if __name__ == "__main__":
    sys.exit(main())
