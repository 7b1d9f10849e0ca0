#!/usr/bin/env python3
"""Wall time of `dirigo check BUNDLE --budget B` per bundle, against the budget (docs/perf.md,
"check: wall time against the budget").

Usage: scripts/budget-walls.py BUNDLE_DIR... [--bin build/dirigo] [--budget 20] [-j 1]
                               [--out .cache/budget-walls.jsonl] [--labels PAIRS.json]
A directory without manifest.json is searched one level down (a folder of bundles). Each check
runs niced, with `--json --seed 1 --jobs 1 --no-state`, killed at 3 x budget + 30 s. Prints one
line per bundle and a summary: how many ended within budget + 10 %, the largest overruns.
"""
import argparse
import concurrent.futures as cf
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def bundles(paths):
    out = []
    for p in paths:
        if os.path.isfile(os.path.join(p, "manifest.json")):
            out.append(p)
        elif os.path.isdir(p):
            out += sorted(os.path.join(p, d) for d in os.listdir(p)
                          if os.path.isfile(os.path.join(p, d, "manifest.json")))
    return out


def run_one(b, a):
    cmd = ["nice", "-n", "10", a.bin, "check", b, "--json", "--budget", str(a.budget), "--seed", "1",
           "--jobs", "1", "--no-state"]
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=3 * a.budget + 30)
        wall = time.monotonic() - t0
        try:
            j = json.loads(p.stdout)
            outcome, reason = j.get("outcome", "?"), j.get("reason", "")
        except json.JSONDecodeError:
            outcome, reason = f"exit {p.returncode}", (p.stderr or p.stdout)[-200:]
    except subprocess.TimeoutExpired:
        wall, outcome, reason = time.monotonic() - t0, "KILLED", f"past {3 * a.budget + 30} s"
    return {"bundle": os.path.basename(b.rstrip("/")), "wall_s": round(wall, 2), "outcome": outcome,
            "reason": reason[:300], "command": " ".join(cmd)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "dirigo"))
    ap.add_argument("--budget", type=float, default=20)
    ap.add_argument("-j", type=int, default=1)
    ap.add_argument("--out", default=os.path.join(ROOT, ".cache", "budget-walls.jsonl"))
    ap.add_argument("--labels", help="pairs.json with k and label per pair (bundle name = k, 3 digits)")
    a = ap.parse_args()
    labels = {}
    if a.labels:
        labels = {f"{p['k']:03d}": p.get("label", "") for p in json.load(open(a.labels))}
    bs = bundles(a.paths)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    rows = []
    with cf.ThreadPoolExecutor(a.j) as ex, open(a.out, "w") as out:
        for r in ex.map(lambda b: run_one(b, a), bs):
            r["label"] = labels.get(r["bundle"], "")
            rows.append(r)
            out.write(json.dumps(r) + "\n")
            out.flush()
            print(f"{r['bundle']} {r['label']:16} {r['outcome']:12} {r['wall_s']:7.1f} s  {r['reason'][:90]}", flush=True)
    cap = a.budget * 1.1
    within = [r for r in rows if r["wall_s"] <= cap]
    over = sorted((r for r in rows if r["wall_s"] > cap), key=lambda r: -r["wall_s"])
    walls = sorted(r["wall_s"] for r in rows)
    print(f"\n{len(within)} of {len(rows)} within budget + 10 % ({cap:g} s); "
          f"median {walls[len(walls) // 2] if walls else 0:.1f} s, max {walls[-1] if walls else 0:.1f} s")
    for r in over:
        print(f"  over: {r['bundle']} {r['outcome']} {r['wall_s']:.1f} s: {r['reason'][:120]}")


if __name__ == "__main__":
    sys.exit(main())
