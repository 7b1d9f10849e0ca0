"""Kill-witness search over the surviving mutants of the kill matrix (docs/mutation.md).

    python -m dirigo.witness_inputs search DB WORK [--device cpu|cuda] [--only NAME,...] [--tol 1e-2]
                                       [--per-mutant N] [--witness-budget S] [--deadline S]

For each substrate, mutants not killed by any valid
input of the store at --tol are survivors; candidates are drawn from SEARCH_PLAN in order (seeds 1000+);
a candidate counts only if the correct substrate passes it at --tol (the validity gate), then every
survivor runs on it; killed survivors leave the list. Each candidate becomes an input row of family
`search` (name `search/<distribution>/<seed>`), its runs rows as for the pool. With a witness budget,
each remaining survivor's bundle (the substrate's with the mutant's PTX) goes to `dirigo check`; a BUG
witness whose leaves are program inputs is written into the kernelbench_randn/0 draw (input
`search/dirigo/m<ordinal>`, leaves in spec_json) and gated and run like the others.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from .distributions import SEARCH_DISTRIBUTIONS, SEARCH_SEEDS, distribute, search_plan  # noqa: F401

def survivors(con, sid: int, tol: float, source: str) -> list[int]:
    """Runnable unique mutants that ran on the pool, none of whose inputs valid at tol kills them (no
    crash/timeout anywhere: those are quarantined)."""
    valid = {i for (i,) in con.execute("SELECT input_id FROM runs WHERE substrate_id = ? AND mutant_id IS NULL AND "
                                       "source = ? AND status = 'ok' AND t_eq <= ?", (sid, source, tol))}
    out = []
    for (mid,) in con.execute("SELECT m.id FROM mutants m JOIN mutant_class c ON c.mutant_id = m.id WHERE "
                              "m.substrate_id = ? AND m.status = 'unique' AND c.runnable = 1 AND "
                              "COALESCE(c.equivalent, 0) = 0 ORDER BY m.ordinal", (sid,)).fetchall():
        rows = con.execute("SELECT input_id, status, t_eq, nonfinite_mismatch FROM runs WHERE mutant_id = ? AND "
                           "source = ?", (mid, source)).fetchall()
        if not rows or any(s in ("crash", "timeout") for _, s, _, _ in rows):
            continue  # not run on the pool yet, or quarantined
        if any(i in valid and s == "ok" and (t > tol or (nf or 0) > 0) for i, s, t, nf in rows):
            continue
        out.append(mid)
    return out


def mutant_bundle(sub, prog: dict, out_dir: str) -> str:
    """The substrate's bundle with the mutant's PTX for its module (and a host mutant's launches)."""
    import hashlib
    import shutil
    shutil.copytree(sub.bundle, out_dir)
    man = json.load(open(os.path.join(out_dir, "manifest.json")))
    ptx = open(prog["ptx"]).read()
    for m in man.get("modules", []):
        if m["id"] == sub.module:
            with open(os.path.join(out_dir, m["path"]), "w") as f:
                f.write(ptx)
            m["sha256"] = hashlib.sha256(ptx.encode()).hexdigest()
    for p in man["programs"]:
        if p["name"] == sub.program.prog["name"]:
            k = 0
            for op in p["ops"]:
                if op["kind"] == "launch":
                    for key, v in ((prog["overrides"] or {}).get(k) or {}).items():
                        op[key] = v
                    k += 1
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(man, f)
    return out_dir


def dirigo_witness(sub, prog: dict, dirigo: str, budget: float = 5, timeout: float = 120) -> tuple[list | None, str]:
    """(leaves, why): `dirigo check` on the mutant's bundle; its witness's leaves when it says BUG with a
    witness replay needs nothing carried back for, else None and the reason."""
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory(prefix="dirigo-wit-") as d:
        b = mutant_bundle(sub, prog, os.path.join(d, "bundle"))
        w = os.path.join(d, "w.json")
        try:
            p = subprocess.run([dirigo, "check", b, "--json", "--budget", str(budget), "--witness-out", w],
                               capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, "dirigo check timed out"
        try:
            verdict = json.loads(p.stdout).get("verdict") or json.loads(p.stdout).get("outcome")
        except ValueError:
            verdict = None
        if not os.path.exists(w):
            return None, f"no witness (dirigo check: {verdict or p.returncode})"
        wit = json.load(open(w))
    leaves = wit.get("leaves") or []
    if not wit.get("leaves_complete", True):
        return None, "witness leaves incomplete"
    if any(l["kind"] not in ("input", "parameter", "buffer") for l in leaves):
        return None, "witness needs carrying back (trimmed or external leaves)"
    return leaves, f"dirigo check: {verdict}"


def search(db: str, work: str, device: str = "cpu", only: str = "", tol: float = 1e-2, per_mutant: int = 0,
           deadline: float = 0, max_ms: float = 3000, dirigo: str | None = None, witness_budget: float = 0) -> dict:
    from . import bundle_km as bk
    from . import bundle_run as br
    source = "gpu" if device == "cuda" else "cpu"
    con = bk.connect(db)
    launcher = br.make_launcher(device, dirigo, max_ms)
    t_end = time.monotonic() + deadline if deadline else None
    totals = {"survivors": 0, "killed": 0, "candidates": 0, "invalid": 0}
    try:
        for sid in bk.substrates_of(con, only):
            sub = bk.Substrate(con, sid)
            alive = survivors(con, sid, tol, source)
            totals["survivors"] += len(alive)
            progs = {p["mutant_id"]: p for p in bk.programs_of(con, sub, work)}
            plan = search_plan()[:per_mutant] if per_mutant else search_plan()
            killed_here = 0
            for item in plan:
                if not alive or (t_end and time.monotonic() > t_end):
                    break
                with con:
                    con.execute("INSERT OR IGNORE INTO inputs(substrate_id, name, problem, distribution, seed, family, "
                                "spec_json) VALUES(?,?,?,?,?,?,?)", (sid, item["name"], sub.name, item["distribution"],
                                                                    item["seed"], item["family"],
                                                                    json.dumps({"replay": True, "search": True})))
                input_id = con.execute("SELECT id FROM inputs WHERE substrate_id = ? AND name = ?",
                                       (sid, item["name"])).fetchone()[0]
                case = bk.make_case(sub, item["distribution"], item["seed"], device)
                totals["candidates"] += 1
                r = bk.run_one(sub, progs[None], case, launcher, device)
                with con:
                    bk._insert_run(con, sid, None, input_id, source, r)
                if r["status"] != "ok" or r["t_eq"] > tol:
                    totals["invalid"] += 1  # the gate: the correct program fails it
                    continue
                still = []
                for mid in alive:
                    m = bk.run_one(sub, progs[mid], case, launcher, device)
                    with con:
                        bk._insert_run(con, sid, mid, input_id, source, m)
                    if m["status"] == "ok" and (m["t_eq"] > tol or (m["nonfinite_mismatch"] or 0) > 0):
                        killed_here += 1
                    elif m["status"] in ("crash", "timeout"):
                        pass  # quarantined now: no longer a survivor
                    else:
                        still.append(mid)
                alive = still
            if witness_budget > 0:  # dirigo's own witness for each remaining survivor it calls BUG
                for mid in list(alive):
                    if t_end and time.monotonic() > t_end:
                        break
                    leaves, why = dirigo_witness(sub, progs[mid], dirigo or br._dirigo_binary(), witness_budget)
                    totals["dirigo_checked"] = totals.get("dirigo_checked", 0) + 1
                    if leaves is None:
                        continue
                    ordinal = con.execute("SELECT ordinal FROM mutants WHERE id = ?", (mid,)).fetchone()[0]
                    name = f"search/dirigo/m{ordinal:04d}"
                    with con:
                        con.execute("INSERT OR REPLACE INTO inputs(substrate_id, name, problem, distribution, seed, "
                                    "family, spec_json) VALUES(?,?,?,?,?,?,?)",
                                    (sid, name, sub.name, "dirigo_witness", 0, "search",
                                     json.dumps({"replay": True, "base": "kernelbench_randn/0", "witness": leaves})))
                    input_id = con.execute("SELECT id FROM inputs WHERE substrate_id = ? AND name = ?", (sid, name)).fetchone()[0]
                    totals["dirigo_witnesses"] = totals.get("dirigo_witnesses", 0) + 1
                    try:
                        case = bk.make_case(sub, "kernelbench_randn", 0, device, witness=leaves)
                    except (ValueError, IndexError, RuntimeError) as e:
                        print(f"{sub.name} m{ordinal:04d}: witness not applicable: {e}", flush=True)
                        continue
                    r = bk.run_one(sub, progs[None], case, launcher, device)
                    with con:
                        bk._insert_run(con, sid, None, input_id, source, r)
                    if r["status"] != "ok" or r["t_eq"] > tol:
                        totals["invalid"] += 1
                        continue
                    m = bk.run_one(sub, progs[mid], case, launcher, device)
                    with con:
                        bk._insert_run(con, sid, mid, input_id, source, m)
                    if m["status"] == "ok" and (m["t_eq"] > tol or (m["nonfinite_mismatch"] or 0) > 0):
                        killed_here += 1
                        alive.remove(mid)
            totals["killed"] += killed_here
            print(f"{sub.name}: search killed {killed_here}, {len(alive)} survive", flush=True)
    finally:
        launcher.close()
    return totals


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dirigo.witness_inputs")
    sp = ap.add_subparsers(dest="cmd", required=True)
    from .bundle_km import store_run_parser
    s = store_run_parser(sp, "search")
    s.add_argument("--tol", type=float, default=1e-2)
    s.add_argument("--per-mutant", type=int, default=0, help="candidates per substrate (0: the whole plan)")
    s.add_argument("--deadline", type=float, default=0)
    s.add_argument("--max-ms", type=float, default=3000)
    s.add_argument("--dirigo")
    s.add_argument("--witness-budget", type=float, default=0,
                   help="seconds of dirigo check per remaining survivor for its own witness (0: off)")
    a = ap.parse_args(argv)
    print(search(a.db, a.work, a.device, a.only, a.tol, a.per_mutant, a.deadline, a.max_ms, a.dirigo, a.witness_budget))
    return 0


if __name__ == "__main__":
    sys.exit(main())
