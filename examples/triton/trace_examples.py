"""Traces the Triton examples into bundles: every `<example>/<variant>.py` against `<example>/ref.py`.

    python examples/triton/trace_examples.py [NAME ...]                 # CPU: <example>/bundle-<variant>/
    python examples/triton/trace_examples.py --device cuda --out DIR    # GPU: DIR/<example>/bundle-gpu-<variant>/

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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="examples to trace (default: all)")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--out", help="write OUT/<example>/bundle[-gpu]-<variant>/ instead of into examples/triton")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--results", help="write the per-pair results (status, message, seconds) to this JSON file")
    a = ap.parse_args()
    from dirigo import trace
    tag = "bundle-gpu-" if a.device == "cuda" else "bundle-"
    results, failed = [], 0
    for ex, variant in pairs(a.names):
        out = os.path.join(a.out or HERE, ex, tag + variant)
        shutil.rmtree(out, ignore_errors=True)
        t0 = time.monotonic()
        r = trace.trace(os.path.join(HERE, ex, "ref.py"), os.path.join(HERE, ex, variant + ".py"), out,
                        device=a.device, timeout=a.timeout)
        secs = round(time.monotonic() - t0, 2)
        if r.status == "ok":
            relative_ptx_paths(out)
        else:
            failed += 1
        results.append({"example": ex, "variant": variant, "status": r.status, "message": r.message, "seconds": secs})
        print(f"{ex}/{variant}: {r.status} ({secs} s) {r.message}", flush=True)
    if a.results:
        json.dump(results, open(a.results, "w"), indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
