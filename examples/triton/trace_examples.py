"""Traces the Triton examples into bundles: every `<example>/<variant>.py` against `<example>/ref.py`.

    python examples/triton/trace_examples.py [NAME|NAME/VARIANT ...]   # CPU: <example>/bundle-<variant>/
    python examples/triton/trace_examples.py --device cuda --out DIR --jobs 11 --results R.json
                                                                       # GPU: DIR/<example>/bundle-gpu-<variant>/

On the CPU this is dirigo's tracer with Triton's launch path in compile-only mode (docs/triton.md):
the reference runs on the CPU, the candidate's kernels are compiled for sm_90 and recorded, not run,
so the candidate's outputs carry no values. On the GPU (scripts/gpu/triton.sh) the same tracer runs
the kernels. The PTX's `.file` paths are made relative to the repository, so committed bundles do
not name the machine they were traced on (the sha256 in the manifest is updated with them).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))


def pairs(names: list[str]) -> list[tuple[str, str]]:
    out = []
    for ex in sorted(os.listdir(HERE)):
        d = os.path.join(HERE, ex)
        if not os.path.isfile(os.path.join(d, "ref.py")) or (names and ex not in names):
            continue
        for f in sorted(os.listdir(d)):
            if f.endswith(".py") and f != "ref.py":
                out.append((ex, f[:-3]))
    return out


def relative_ptx_paths(bundle: str) -> None:
    mpath = os.path.join(bundle, "manifest.json")
    m = json.load(open(mpath))
    prefix = ROOT.rstrip("/") + "/"
    for mod in m.get("modules", []):
        p = os.path.join(bundle, mod["path"])
        text = open(p).read()
        new = text.replace(f'"{prefix}', '"')
        if new != text:
            open(p, "w").write(new)
            mod["sha256"] = hashlib.sha256(new.encode()).hexdigest()
    json.dump(m, open(mpath, "w"), indent=1)


def output_difference(bundle: str) -> dict | None:
    """max |ref - new| over the recorded outputs (GPU traces record both; KernelBench's own test), or None."""
    import numpy as np
    m = json.load(open(os.path.join(bundle, "manifest.json")))
    ref, new = m["programs"]
    out = {}
    for (a, b) in m.get("match", {}).get("outputs", []):
        ea = next(o for o in ref["outputs"] if f"ref.{o['name']}" == a)
        eb = next(o for o in new["outputs"] if f"new.{o['name']}" == b)
        if "data" not in ea or "data" not in eb:
            return None
        x = np.fromfile(os.path.join(bundle, ea["data"]), dtype=np.float32)
        y = np.fromfile(os.path.join(bundle, eb["data"]), dtype=np.float32)
        d = np.abs(x.astype(np.float64) - y.astype(np.float64))
        out[b] = {"max_abs_diff": float(np.nanmax(d)) if d.size else 0.0, "nan": bool(np.isnan(y).any()),
                  "allclose_1e-2": bool(np.allclose(x, y, atol=1e-2, rtol=1e-2))}
    return out


def trace_pair(ex: str, variant: str, device: str, out_root: str, timeout: float) -> dict:
    from dirigo import trace
    tag = "bundle-gpu-" if device == "cuda" else "bundle-"
    out = os.path.join(out_root, ex, tag + variant)
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.monotonic()
    r = trace.trace(os.path.join(HERE, ex, "ref.py"), os.path.join(HERE, ex, variant + ".py"), out,
                    device=device, timeout=timeout)
    res = {"example": ex, "variant": variant, "status": r.status, "message": r.message,
           "seconds": round(time.monotonic() - t0, 2)}
    if r.status == "ok":
        relative_ptx_paths(out)
        res["outputs"] = output_difference(out)
        m = json.load(open(os.path.join(out, "manifest.json")))
        res["launches"] = [{k: op.get(k) for k in ("kernel", "grid", "block", "shared_bytes", "triton")}
                           for op in m["programs"][1]["ops"] if op["kind"] == "launch"]
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="examples (softmax) or pairs (softmax/bad) to trace (default: all)")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--out", help="write OUT/<example>/bundle[-gpu]-<variant>/ instead of into examples/triton")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--jobs", type=int, default=1, help="pairs traced at once")
    ap.add_argument("--results", help="write the per-pair results (status, message, seconds, output "
                                      "difference, launches) to this JSON file")
    a = ap.parse_args()
    todo = [(ex, v) for ex, v in pairs([n.split("/")[0] for n in a.names])
            if not a.names or ex in a.names or f"{ex}/{v}" in a.names]
    from concurrent.futures import ThreadPoolExecutor  # each trace runs in its own worker processes
    with ThreadPoolExecutor(max(1, a.jobs)) as pool:
        futures = [pool.submit(trace_pair, ex, v, a.device, a.out or HERE, a.timeout) for ex, v in todo]
        results = []
        for f in futures:
            r = f.result()
            results.append(r)
            print(f"{r['example']}/{r['variant']}: {r['status']} ({r['seconds']} s) {r['message']}", flush=True)
    if a.results:
        json.dump(results, open(a.results, "w"), indent=1)
    return 1 if any(r["status"] != "ok" for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
