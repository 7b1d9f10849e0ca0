#!/usr/bin/env python3
"""Execute-time distribution over traced bundles (docs/perf.md, "Execute over traced corpus bundles").

Runs `exec_corpus run` on every kernel launch of every candidate program in the bundles, one
process per launch with a timeout, at most -j processes at a time (niced), and summarizes
median / p90 / max Execute time and the outcomes (ok / finding / UNSUPPORTED reason).

Usage: bench/exec_corpus.py BUNDLES_DIR_OR_TAR... [--bin build-ptx2/bench/exec_corpus] [-j 2]
                            [--timeout 60] [--out .cache/exec-corpus]
A .tar.gz is unpacked under --out first. A bundle is any directory holding manifest.json.
"""
import argparse
import collections
import concurrent.futures as cf
import json
import os
import re
import statistics
import subprocess
import sys
import tarfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def find_bundles(src, out):
    if os.path.isfile(src) and (src.endswith(".tar.gz") or src.endswith(".tgz") or src.endswith(".tar")):
        dest = os.path.join(out, "unpacked")
        os.makedirs(dest, exist_ok=True)
        with tarfile.open(src) as t:
            t.extractall(dest, filter="data")
        src = dest
    found = []
    for d, _, files in os.walk(src):
        if "manifest.json" in files:
            found.append(d)
    return sorted(found)


def percentile(xs, q):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def normalize(reason):
    """A failure reason without the kernel-specific parts (line numbers, names, counts)."""
    r = re.sub(r" at PTX line \d+.*", "", reason)
    r = re.sub(r"\d+", "N", r)
    return r[:120]


def run_one(args, launch):
    cmd = ["nice", "-n", str(args.nice), args.bin, "run", launch["bundle"], launch["program"], str(launch["op"]),
           "--max-ms", str(args.timeout * 1000 * 0.9)]
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
        wall = time.time() - t0
        lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
        if p.returncode != 0 or not lines:
            return dict(launch, outcome="crash", reason=f"exit {p.returncode}: {p.stderr.strip()[-300:]}", proc_s=wall)
        r = json.loads(lines[-1])
        r["proc_s"] = wall
        return r
    except subprocess.TimeoutExpired:
        return dict(launch, outcome="timeout", reason=f"process timeout {args.timeout}s", proc_s=time.time() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src", nargs="+", help="bundle directories or .tar.gz files (all are searched)")
    ap.add_argument("--bin", default=os.path.join(ROOT, "build-ptx2", "bench", "exec_corpus"))
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--out", default=os.path.join(ROOT, ".cache", "exec-corpus"))
    ap.add_argument("--nice", type=int, default=10, help="niceness of the launch processes")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    bundles = sorted({b for src in args.src for b in find_bundles(src, args.out)})
    listing = subprocess.run([args.bin, "list", *bundles], capture_output=True, text=True, check=True).stdout
    launches, bad = [], []
    for line in listing.splitlines():
        j = json.loads(line)
        (bad if "error" in j else launches).append(j)
    print(f"{len(bundles)} bundles, {len(launches)} candidate launches, {len(bad)} unreadable bundles", file=sys.stderr)
    results = []
    # written as launches finish, so an interrupted run still leaves its measurements
    with open(os.path.join(args.out, "results.jsonl"), "w") as f, cf.ThreadPoolExecutor(args.j) as ex:
        for i, r in enumerate(ex.map(lambda l: run_one(args, l), launches)):
            results.append(r)
            f.write(json.dumps(r) + "\n")
            f.flush()
            if (i + 1) % 10 == 0:
                print(f"  {i + 1}/{len(launches)}", file=sys.stderr)
    # summary
    outcomes = collections.Counter(r["outcome"] for r in results)
    timed = [r["exec_s"] for r in results if "exec_s" in r]
    # a launch that timed out counts at the timeout (a lower bound)
    timed_all = timed + [args.timeout for r in results if r["outcome"] == "timeout"]
    cpu = [r["exec_cpu_s"] for r in results if "exec_cpu_s" in r]
    reasons = collections.Counter(normalize(r.get("reason", "")) for r in results
                                  if r["outcome"] in ("unsupported", "time-limit", "timeout", "crash", "error"))
    findings = collections.Counter(k for r in results for k in r.get("findings", []))
    idioms = collections.Counter(i for r in results for i in r.get("idioms", []))
    bundles_n = [r["bundles"] for r in results if "bundles" in r]
    summary = {
        "bundles": len(bundles), "launches": len(launches), "unreadable": [b["bundle"] for b in bad],
        "outcomes": dict(outcomes),
        "exec_s": {"n": len(timed_all), "median": statistics.median(timed_all) if timed_all else None,
                   "p90": percentile(timed_all, 0.9), "max": max(timed_all) if timed_all else None},
        "exec_s_completed_only": {"n": len(timed), "median": statistics.median(timed) if timed else None,
                                  "p90": percentile(timed, 0.9), "max": max(timed) if timed else None},
        "exec_cpu_s_completed_only": {"n": len(cpu), "median": statistics.median(cpu) if cpu else None,
                                      "p90": percentile(cpu, 0.9), "max": max(cpu) if cpu else None},
        "proc_s": {"median": statistics.median([r["proc_s"] for r in results]) if results else None,
                   "p90": percentile([r["proc_s"] for r in results], 0.9)},
        "symbolic_bundles": {"median": statistics.median(bundles_n) if bundles_n else None,
                             "max": max(bundles_n) if bundles_n else None},
        "reasons": reasons.most_common(), "findings": findings.most_common(), "idioms": idioms.most_common(),
        "slowest": sorted(({"kernel": r.get("kernel", "")[:60], "exec_s": r.get("exec_s", args.timeout),
                            "outcome": r["outcome"], "bundle": r["bundle"], "steps": r.get("steps"),
                            "reason": r.get("reason", "")[:200]} for r in results),
                          key=lambda x: -x["exec_s"])[:8],
    }
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
