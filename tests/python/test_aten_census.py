"""Lowering the census: every ATen op of every traced KernelBench reference gets its per-element equation.

`python3 tests/python/test_aten_census.py [BUNDLE_ROOT] [--jobs 2] [--timeout 120]` walks the reference
bundles that `scripts/op-census.py --bundles .cache/census-bundles` wrote (fake tensors: today's shapes,
no data) and, for each ATen op of each program, builds the equation of every output at its first, middle
and last location (`dirigo._core.aten_expr`). A program is *lowered* when every op does; otherwise the
first failure is reported with its reason. One child process per program, with a timeout and a 6 GiB
address-space cap (an equation over a whole 6 GiB input does not fit). Results feed docs/coverage.md.

As a pytest module it checks the converter on a small program traced here (the sweep itself needs the
corpus and takes minutes)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
METADATA_OPS = {"aten::empty", "aten::empty_like", "aten::empty_strided"}  # values are Undef by design


def _scalar(a: dict):
    v = a["scalar"]
    if isinstance(v, str):  # non-finite floats are strings in bundles
        return float(v)
    if a.get("type") == "bool":
        return bool(v)
    return v


def convert_arg(a, tensors: dict, storage_key: dict):
    """bundle argument -> the plain structures dirigo._core.aten_* read (see python/src/bind_aten.cpp)."""
    if not isinstance(a, dict):
        raise ValueError(f"unexpected argument {a!r}")
    if "tensor" in a:
        t = tensors[a["tensor"]]
        return {"tensor": storage_key.setdefault(t["storage"], len(storage_key)), "shape": t["shape"],
                "strides": t["strides"], "offset": t["offset"], "dtype": t["dtype"]}
    if "scalar" in a:
        return _scalar(a)
    if "list" in a:
        return [convert_arg(x, tensors, storage_key) for x in a["list"]]
    if a.get("none"):
        return None
    if "string" in a:
        return a["string"]
    if "dtype" in a:
        return {"dtype": a["dtype"]}
    for k in ("layout", "device", "memory_format"):
        if k in a:
            return str(a[k])
    raise ValueError(f"unexpected argument {a!r}")


def corner_locations(shape: list[int]) -> list[list[int]]:
    if any(s == 0 for s in shape):
        return []
    locs = [[0] * len(shape), [s // 2 for s in shape], [s - 1 for s in shape]]
    return [list(x) for x in dict.fromkeys(tuple(x) for x in locs)]


def lower_program(prog: dict) -> dict:
    from dirigo import _core
    tensors = {t["id"]: t for t in prog["tensors"]}
    storage_key: dict = {}
    n = 0
    for i, op in enumerate(prog["ops"]):
        if op.get("kind", "aten") != "aten" or op["name"] in METADATA_OPS:
            continue
        name = f"{op['name']}.{op['overload']}"
        args = [convert_arg(a, tensors, storage_key) for a in op["args"]]
        kwargs = {k: convert_arg(v, tensors, storage_key) for k, v in op.get("kwargs", {}).items()}
        outs = [convert_arg({"tensor": o}, tensors, storage_key) for o in op["outputs"]]
        for k, o in enumerate(outs):
            for loc in corner_locations(o["shape"]):
                try:
                    _core.aten_expr(name, args, kwargs, outs, k, loc)
                except Exception as e:  # noqa: BLE001  (Unsupported -> NotImplementedError, malformed -> ValueError)
                    return {"status": "failed", "op": i, "name": name, "reason": f"{type(e).__name__}: {e}"[:400]}
        n += 1
    return {"status": "lowered", "ops": n}


def _child(path: str) -> int:
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))
    prog = json.load(open(os.path.join(path, "manifest.json")))["programs"][0]
    print(json.dumps(lower_program(prog)))
    return 0


def sweep(root: str, jobs: int, timeout: float) -> list[dict]:
    from concurrent.futures import ThreadPoolExecutor
    bundles = sorted(os.path.dirname(os.path.join(d, f)) for d, _, fs in os.walk(root) for f in fs
                     if f == "manifest.json")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))

    def one(b):
        rel = os.path.relpath(b, root)
        try:
            p = subprocess.run([sys.executable, __file__, "--child", b], capture_output=True, text=True,
                               timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            return {"program": rel, "status": "timeout", "reason": f"over {timeout:g} s"}
        if p.returncode != 0 or not p.stdout.strip():
            tail = (p.stderr.strip().splitlines() or ["?"])[-1]
            return {"program": rel, "status": "crashed", "reason": f"exit {p.returncode}: {tail}"[:300]}
        return dict(json.loads(p.stdout.strip().splitlines()[-1]), program=rel)

    with ThreadPoolExecutor(jobs) as ex:
        results = []
        for r in ex.map(one, bundles):
            print(json.dumps(r), file=sys.stderr, flush=True)  # progress, one line per program
            results.append(r)
        return results


def test_converter_lowers_a_traced_program(tmp_path):
    from dirigo import trace
    ref = tmp_path / "ref.py"
    ref.write_text("import torch\nimport torch.nn as nn\n"
                   "class Model(nn.Module):\n"
                   "    def __init__(self):\n        super().__init__()\n"
                   "        self.conv = nn.Conv2d(3, 4, 3)\n        self.bn = nn.BatchNorm2d(4)\n"
                   "    def forward(self, x):\n"
                   "        y = torch.relu(self.bn(self.conv(x)))\n"
                   "        return torch.softmax(y.flatten(1), dim=1).masked_fill(y.flatten(1) < -5, 0.0)\n"
                   "def get_inputs():\n    return [torch.randn(2, 3, 8, 8)]\n"
                   "def get_init_inputs():\n    return []\n")
    r = trace.trace(str(ref), None, str(tmp_path / "b"), device="cpu")
    assert r.status == "ok", r.message
    prog = json.load(open(tmp_path / "b" / "manifest.json"))["programs"][0]
    res = lower_program(prog)
    assert res["status"] == "lowered", res
    assert res["ops"] >= 5
    # and a failure names the op: an op without semantics
    prog["ops"][0] = dict(prog["ops"][0], name="aten::frobnicate")
    bad = lower_program(prog)
    assert bad["status"] == "failed" and bad["op"] == 0 and "frobnicate" in bad["reason"]


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "--child":
        return _child(argv[1])
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("roots", nargs="*", default=[os.path.join(ROOT, ".cache", "census-bundles")])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--json", help="write the per-program results here")
    a = ap.parse_args(argv)
    res = [dict(r, program=os.path.join(os.path.relpath(root, os.path.join(ROOT, ".cache", "census-bundles"))
                                         if "census-bundles" in root else "", r["program"]))
           for root in a.roots for r in sweep(root, a.jobs, a.timeout)]
    if a.json:
        json.dump(res, open(a.json, "w"), indent=1)
    by_level: dict = {}
    for r in res:
        corpus, level = r["program"].split(os.sep)[:2]
        by_level.setdefault((corpus, level), []).append(r)
    print("| corpus | level | programs | lowered | failed | timeout/crashed |\n|---|---|---|---|---|---|")
    for (c, lv), rs in sorted(by_level.items()):
        cnt = lambda s: sum(r["status"] in s for r in rs)  # noqa: E731
        print(f"| {c} | {lv} | {len(rs)} | {cnt(('lowered',))} | {cnt(('failed',))} | {cnt(('timeout', 'crashed'))} |")
    for r in res:
        if r["status"] != "lowered":
            print(f"- `{r['program']}`: {r['status']}: {r.get('name', '')} {r.get('reason', '')}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
