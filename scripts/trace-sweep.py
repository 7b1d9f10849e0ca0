#!/usr/bin/env python3
"""Trace sweep over LLM-written KernelBench candidates (GPU): how many trace into a valid bundle, and why
the others do not. Two steps, because the corpus is not on the GPU machine:

    python3 scripts/trace-sweep.py pick --n 40 --seed 1 [--levels 1 2] [--labels correct output_mismatch]
        copies the chosen candidate + reference pairs to .cache/sweep/ (git-ignored: corpus data)
    python3 scripts/trace-sweep.py run [--jobs 8] [--timeout 300]      (on the GPU machine)
        traces every pair with `python -m dirigo.trace REF NEW --device cuda`, writes .cache/sweep/results.json
    python3 scripts/trace-sweep.py run --pairs 16 27 --bundles DIR --results R.json   (re-trace some pairs)
    python3 scripts/trace-sweep.py constants DIR...     the pairs whose bundles (under DIR/<k>/) captured a
        constant tensor (`"constant": true` inputs), one k per line: what scripts/gpu/retrace.sh re-traces
    python3 scripts/trace-sweep.py summary
"""
from __future__ import annotations

import argparse
import collections
import concurrent.futures as cf
import json
import os
import random
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = "/work/shared/corpus"
SWEEP = os.path.join(ROOT, ".cache", "sweep")


def _toplevel_assignments(text: str) -> set[str]:
    return {ln.replace(" ", "") for ln in text.splitlines() if re.match(r"^[A-Za-z_]\w*\s*=\s*[\w.()\-+*/ ,]+$", ln)}


def pick_reference(level: int, pid: int, cand_text: str) -> str | None:
    """The reference (today's KernelBench or v0) whose module-level constants the candidate repeats."""
    best, best_score = None, float("-inf")
    for corpus in ("kernelbench", "kernelbench-v0"):
        d = os.path.join(CORPUS, corpus, f"level{level}")
        hits = [f for f in os.listdir(d) if f.startswith(f"{pid}_")]
        if not hits:
            continue
        path = os.path.join(d, hits[0])
        consts = _toplevel_assignments(open(path).read())
        score = len(consts & _toplevel_assignments(cand_text)) - len(consts)
        if score > best_score:
            best, best_score = path, score
    return best


def cmd_pick(a) -> int:
    entries = []
    for run in ("technoabsurdist_runs", "yenhao_runs"):
        for e in json.load(open(os.path.join(CORPUS, "dev", run, "index.json"))):
            if e["level"] in a.levels and e["label"] in a.labels:
                entries.append(dict(e, root=run))
    random.Random(a.seed).shuffle(entries)
    os.makedirs(SWEEP, exist_ok=True)
    chosen = []
    for e in entries[:a.n]:
        cand = os.path.join(CORPUS, "dev", e["root"], e["file"])
        ref = pick_reference(e["level"], e["problem_id"], open(cand).read())
        if ref is None:
            continue
        k = len(chosen)
        shutil.copy(cand, os.path.join(SWEEP, f"{k:03d}_new.py"))
        shutil.copy(ref, os.path.join(SWEEP, f"{k:03d}_ref.py"))
        chosen.append({"k": k, "label": e["label"], "level": e["level"], "problem": e["problem_id"],
                       "candidate": os.path.relpath(cand, CORPUS), "reference": os.path.relpath(ref, CORPUS)})
    json.dump(chosen, open(os.path.join(SWEEP, "pairs.json"), "w"), indent=1)
    print(f"picked {len(chosen)} pairs into {SWEEP}")
    return 0


def _trace_pair(p: dict, timeout: float, bundles: str | None = None, device: str = "cuda") -> dict:
    k = p["k"]
    out = os.path.join(bundles or os.path.join(SWEEP, "bundles"), f"{k:03d}")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"),
               TORCH_EXTENSIONS_DIR=os.path.join(SWEEP, "ext", f"{k:03d}"))
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "dirigo.trace", os.path.join(SWEEP, f"{k:03d}_ref.py"),
                           os.path.join(SWEEP, f"{k:03d}_new.py"), "--out", out, "--device", device,
                           "--timeout", str(timeout), "--no-data", "--json"],
                          capture_output=True, text=True, env=env, timeout=timeout + 60)
    res = dict(p, seconds=round(time.monotonic() - t0, 1), exit=proc.returncode)
    try:
        res.update(json.loads(proc.stdout.strip().splitlines()[-1]))
    except (IndexError, json.JSONDecodeError):
        res.update(status="error", message=(proc.stderr or proc.stdout)[-300:])
    if res.get("status") == "ok":
        m = json.load(open(os.path.join(out, "manifest.json")))
        new = m["programs"][1]
        res["new_ops"] = collections.Counter(op["kind"] for op in new["ops"])
        res["unbound"] = sum(1 for op in new["ops"] if op["kind"] == "launch"
                             for x in op["args"] if x.get("unbound"))
        res["match_notes"] = m.get("match", {}).get("notes", [])
    return res


def cmd_run(a) -> int:
    pairs = json.load(open(os.path.join(SWEEP, "pairs.json")))
    done = set()
    for path in a.skip or []:  # results.json files of earlier runs: pairs traced there are not traced again
        done |= {r["k"] for r in json.load(open(path))}
    pairs = [p for p in pairs if p["k"] not in done and (not a.pairs or p["k"] in a.pairs)]
    if a.pairs and len(pairs) != len(set(a.pairs)):
        print(f"warning: --pairs names {sorted(set(a.pairs) - {p['k'] for p in pairs})} not in pairs.json (or skipped)")
    results = []
    with cf.ThreadPoolExecutor(a.jobs) as pool:
        futures = [pool.submit(_trace_pair, p, a.timeout, a.bundles, a.device) for p in pairs]
        for f in cf.as_completed(futures):
            r = f.result()
            results.append(r)
            print(f"{r['k']:03d} {r['status']:12s} {r['seconds']:6.1f}s {r.get('message', '')[:160]}", flush=True)
            json.dump(results, open(a.results or os.path.join(SWEEP, "results.json"), "w"), indent=1)  # partial results survive
    return cmd_summary(a)


def cmd_constants(a) -> int:
    """Pairs whose bundle has an input marked constant (a tensor captured from outside forward)."""
    ks = set()
    for root in a.dirs:
        for name in sorted(os.listdir(root)):
            path = os.path.join(root, name, "manifest.json")
            if name.isdigit() and os.path.exists(path):
                m = json.load(open(path))
                if any(i.get("constant") for prog in m["programs"] for i in prog["inputs"]):
                    ks.add(int(name))
    print("\n".join(str(k) for k in sorted(ks)))
    return 0


def cmd_summary(a) -> int:
    path = a.results or os.path.join(SWEEP, "results.json")
    results = json.load(open(path))
    by = collections.Counter(r["status"] for r in results)
    print(f"{len(results)} pairs: " + ", ".join(f"{k} {v}" for k, v in by.most_common()))
    for r in results:
        if r["status"] != "ok":
            msg = re.sub(r"/\S+/", "", r.get("message", ""))[:220]
            print(f"  [{r['label']}] {r['candidate']}: {msg}")
    ok = [r for r in results if r["status"] == "ok"]
    if ok:
        launches = sum(r["new_ops"].get("launch", 0) for r in ok)
        print(f"traced: {len(ok)}; launches recorded {launches}; unbound pointer args {sum(r['unbound'] for r in ok)}; "
              f"median seconds {sorted(r['seconds'] for r in ok)[len(ok) // 2]}")
        notes = [n for r in ok for n in r["match_notes"]]
        if notes:
            print("match notes:", collections.Counter(notes).most_common(5))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pick")
    p.add_argument("--n", type=int, default=40)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--levels", type=int, nargs="+", default=[1, 2])
    p.add_argument("--labels", nargs="+", default=["correct", "output_mismatch"])
    r = sub.add_parser("run")
    r.add_argument("--jobs", type=int, default=8)
    r.add_argument("--timeout", type=float, default=300)
    r.add_argument("--results")
    r.add_argument("--skip", nargs="*", help="results.json of earlier runs whose pairs are skipped")
    r.add_argument("--pairs", type=int, nargs="*", help="trace only these pair numbers k")
    r.add_argument("--bundles", help="write bundles to DIR/<k> (default .cache/sweep/bundles)")
    r.add_argument("--device", default="cuda", choices=["cuda", "cpu"], help="cpu: a dry run of the plumbing")
    c = sub.add_parser("constants")
    c.add_argument("dirs", nargs="+")
    s = sub.add_parser("summary")
    s.add_argument("--results")
    a = ap.parse_args()
    return {"pick": cmd_pick, "run": cmd_run, "summary": cmd_summary, "constants": cmd_constants}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
