"""Counts tables of the kill-matrix store (docs/mutation.md): per family and per substrate,
generated / non-compiling / duplicate / unique / not run / quarantined / equivalent / witnessed /
dirigo checked / dirigo BUG, for the substrates that have runs from SOURCE (auto: a substrate's GPU
rows when its original has some, else its CPU rows).

    python -m dirigo.killmatrix_report DB [--source auto|cpu|gpu] [--tol 1e-2]
    python -m dirigo.killmatrix_report DB --v0-vs-dirigo [--tol 1e-2]   # what dirigo adds to KernelBench's check

witnessed = some input on which the substrate itself is accepted (status ok, t_eq <= tol: the
validity gate) and the mutant is rejected (status ok and t_eq > tol, or a non-finite mismatch).
quarantined = a crash or timeout on some input (never counted as witnessed).
"""
from __future__ import annotations

import sqlite3
import sys

FAMILIES = ("arithmetic", "indexing", "semantic", "boundary", "synchronization", "precision")
COLS = ("generated", "non-compiling", "duplicate", "unique", "not run", "quarantined", "equivalent", "witnessed",
        "dirigo checked", "dirigo BUG")


def sources(con, source: str) -> dict:
    """substrate id -> the source its rows come from (auto: gpu where the original has GPU rows)."""
    have: dict = {}
    for sid, src in con.execute("SELECT DISTINCT substrate_id, source FROM runs WHERE mutant_id IS NULL"):
        have.setdefault(sid, set()).add(src)
    if source == "auto":
        return {sid: ("gpu" if "gpu" in s else "cpu") for sid, s in have.items()}
    return {sid: source for sid, s in have.items() if source in s}


def counts(db: str, source: str = "auto", tol: float = 1e-2):
    """Per family and per substrate. not run = no run of the mutant in the substrate's source (a host
    mutant without a plan, a program the GPU runner's deadline cut); dirigo checked = a verdict of
    `dirigo check` other than NULL; dirigo BUG = of the witnessed, those dirigo calls BUG."""
    con = sqlite3.connect(db)
    src_of = sources(con, source)
    if not src_of:
        return {}, {}
    witnessed, quarantined, ran = set(), set(), set()
    for sid, src in src_of.items():
        witnessed |= {r[0] for r in con.execute("""
            SELECT DISTINCT r.mutant_id FROM runs r JOIN runs s ON s.input_id = r.input_id AND s.mutant_id IS NULL
              AND s.source = r.source AND s.status = 'ok' AND s.t_eq <= ?
            WHERE r.source = ? AND r.mutant_id IS NOT NULL AND r.status = 'ok'
              AND (r.t_eq > ? OR r.nonfinite_mismatch > 0) AND r.substrate_id = ?""", (tol, src, tol, sid))}
        quarantined |= {r[0] for r in con.execute(
            "SELECT DISTINCT mutant_id FROM runs WHERE source = ? AND status IN ('crash', 'timeout') "
            "AND mutant_id IS NOT NULL AND substrate_id = ?", (src, sid))}
        ran |= {r[0] for r in con.execute("SELECT DISTINCT mutant_id FROM runs WHERE source = ? AND substrate_id = ? "
                                          "AND mutant_id IS NOT NULL", (src, sid))}
    q = ",".join(str(s) for s in src_of)
    by_fam: dict = {}
    by_sub: dict = {}
    rows = con.execute(f"""
        SELECT m.id, m.family, m.status, s.path, c.equivalent, c.verdict
        FROM mutants m JOIN substrates s ON s.id = m.substrate_id LEFT JOIN mutant_class c ON c.mutant_id = m.id
        WHERE m.substrate_id IN ({q})""")
    for mid, fam, status, path, equivalent, verdict in rows:
        name = path.rsplit("/", 1)[-1]
        for table, key in ((by_fam, fam), (by_sub, name)):
            c = table.setdefault(key, dict.fromkeys(COLS, 0))
            c["generated"] += 1
            if status == "non-compiling":
                c["non-compiling"] += 1
            elif status == "duplicate":
                c["duplicate"] += 1
            elif status == "unique":
                c["unique"] += 1
                c["dirigo checked"] += verdict is not None
                if equivalent:
                    c["equivalent"] += 1
                elif mid not in ran:
                    c["not run"] += 1
                elif mid in quarantined:
                    c["quarantined"] += 1
                elif mid in witnessed:
                    c["witnessed"] += 1
                    c["dirigo BUG"] += verdict == "BUG"
    return by_fam, by_sub


def v0_vs_dirigo(db: str, tol: float = 1e-2) -> dict:
    """Per family, over mutants witnessed at `tol` (the source `auto` picks, not equivalent): how many
    KernelBench's v0 check (the 5 kernelbench_randn seeds, allclose at tol, gated by the substrate)
    misses, how many of those `dirigo check` calls BUG (on substrates whose original it does not
    call BUG), and dirigo's own BUG count."""
    con = sqlite3.connect(db)
    src_of = sources(con, "auto")
    gate = {}
    if con.execute("SELECT name FROM sqlite_master WHERE name = 'substrate_check'").fetchone():
        gate = {sid: v for sid, v in con.execute("SELECT substrate_id, verdict FROM substrate_check")}
    out: dict = {}
    for sid, src in src_of.items():
        valid = {r[0]: r[1] for r in con.execute(
            "SELECT r.input_id, i.distribution FROM runs r JOIN inputs i ON i.id = r.input_id WHERE r.substrate_id = ? "
            "AND r.source = ? AND r.mutant_id IS NULL AND r.status = 'ok' AND r.t_eq <= ?", (sid, src, tol))}
        kills: dict = {}
        for mid, inp in con.execute(
                "SELECT mutant_id, input_id FROM runs WHERE substrate_id = ? AND source = ? AND mutant_id IS NOT NULL "
                "AND status = 'ok' AND (t_eq > ? OR nonfinite_mismatch > 0)", (sid, src, tol)):
            if inp in valid:
                kills.setdefault(mid, set()).add(inp)
        bad = {r[0] for r in con.execute("SELECT DISTINCT mutant_id FROM runs WHERE substrate_id = ? AND source = ? "
                                         "AND status IN ('crash', 'timeout') AND mutant_id IS NOT NULL", (sid, src))}
        seeds = {r[0] for r in con.execute("SELECT id FROM inputs WHERE substrate_id = ? AND distribution = "
                                           "'kernelbench_randn' AND seed < 5", (sid,))}
        for mid, fam, verdict, eq in con.execute(
                "SELECT m.id, m.family, c.verdict, c.equivalent FROM mutants m JOIN mutant_class c ON c.mutant_id = m.id "
                "WHERE m.substrate_id = ? AND m.status = 'unique'", (sid,)):
            if eq or mid in bad or mid not in kills:
                continue
            c = out.setdefault(fam, dict.fromkeys(("witnessed", "v0 missed", "dirigo BUG", "v0 missed, dirigo BUG"), 0))
            dirigo = verdict == "BUG" and gate.get(sid) != "BUG"
            v0 = bool(kills[mid] & seeds)
            c["witnessed"] += 1
            c["v0 missed"] += not v0
            c["dirigo BUG"] += dirigo
            c["v0 missed, dirigo BUG"] += (not v0) and dirigo
    return out


def table(rows: dict, order=None) -> str:
    keys = [k for k in (order or sorted(rows)) if k in rows]
    out = ["| | " + " | ".join(COLS) + " |", "|---|" + "---:|" * len(COLS)]
    total = dict.fromkeys(COLS, 0)
    for k in keys:
        out.append(f"| {k} | " + " | ".join(str(rows[k][c]) for c in COLS) + " |")
        for c in COLS:
            total[c] += rows[k][c]
    out.append("| **total** | " + " | ".join(f"**{total[c]}**" for c in COLS) + " |")
    return "\n".join(out)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 64
    source, tol = "auto", 1e-2
    rest = [a for a in argv[1:] if a != "--v0-vs-dirigo"]
    for k, v in zip(rest[::2], rest[1::2]):
        if k == "--source":
            source = v
        elif k == "--tol":
            tol = float(v)
        else:
            print(f"unknown option {k}", file=sys.stderr)
            return 64
    if "--v0-vs-dirigo" in argv:
        rows = v0_vs_dirigo(argv[0], tol)
        cols = ("witnessed", "v0 missed", "dirigo BUG", "v0 missed, dirigo BUG")
        print("| | " + " | ".join(cols) + " |\n|---|" + "---:|" * len(cols))
        tot = dict.fromkeys(cols, 0)
        for f in [f for f in FAMILIES if f in rows]:
            print(f"| {f} | " + " | ".join(str(rows[f][c]) for c in cols) + " |")
            for c in cols:
                tot[c] += rows[f][c]
        print("| **total** | " + " | ".join(f"**{tot[c]}**" for c in cols) + " |")
        return 0
    fam, sub = counts(argv[0], source, tol)
    print(table(fam, FAMILIES))
    print()
    print(table(sub))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
