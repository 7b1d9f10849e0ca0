"""Lowering the census: every ATen op of every traced KernelBench reference gets its per-element equation.

`python3 tests/python/test_aten_census.py [BUNDLE_ROOT] [--jobs 2] [--timeout 120]` walks the reference
bundles that `scripts/op-census.py --bundles .cache/census-bundles` wrote (fake tensors: today's shapes,
no data) and, for each ATen op of each program, builds the equation of every output at its first, middle
and last location (`dirigo._core.aten_expr`). A program is *lowered* when every op does; otherwise the
first failure is reported with its reason. One child process per program, with a time limit and an
address-space cap (an equation over a whole 6 GiB input does not fit). Results feed docs/coverage.md.

As a pytest module it checks the converter on a small program traced here (the sweep itself needs the
corpus and takes minutes)."""
from __future__ import annotations

import json
import os
import subprocess

import pytest
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


def lower_program(prog: dict, progress=None) -> dict:
    """`progress` (a file): one line '# op <i> <name>' before each op, so a timeout or crash names its op."""
    from dirigo import _core
    tensors = {t["id"]: t for t in prog["tensors"]}
    storage_key: dict = {}
    n = 0
    for i, op in enumerate(prog["ops"]):
        if op.get("kind", "aten") != "aten" or op["name"] in METADATA_OPS:
            continue
        name = f"{op['name']}.{op['overload']}"
        if progress is not None:
            print(f"# op {i} {name}", file=progress, flush=True)
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
    cap = int(os.environ.get("DIRIGO_LOWER_AS_GIB", "6")) << 30
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    cpu = int(os.environ.get("DIRIGO_LOWER_CPU_S", "0"))
    if cpu:  # CPU time, not wall time: on a shared machine the wall clock measures the other users
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
    prog = json.load(open(os.path.join(path, "manifest.json")))["programs"][0]
    res = lower_program(prog, progress=sys.stderr)
    ru = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps(dict(res, seconds=round(ru.ru_utime + ru.ru_stime, 1))))  # CPU seconds
    return 0


def _last_op(stderr) -> dict:
    """The op a child was lowering when it stopped, from its progress lines."""
    if isinstance(stderr, bytes):
        stderr = stderr.decode(errors="replace")
    ops = [ln.split() for ln in (stderr or "").splitlines() if ln.startswith("# op ")]
    return {"op": int(ops[-1][2]), "name": ops[-1][3]} if ops else {}


def lower_bundle(b: str, timeout: float, cpu_s: int = 0) -> dict:
    """Lower one bundle's first program in a child process (wall-time limit `timeout`, CPU-time limit
    `cpu_s` when given, 6 GiB address space). `seconds` is the child's CPU time."""
    env = dict(os.environ, PYTHONPATH=os.environ.get("DIRIGO_PYTHONPATH", os.path.join(ROOT, "python")),
               DIRIGO_LOWER_CPU_S=str(int(cpu_s)))
    try:
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", b], capture_output=True, text=True,
                           timeout=timeout, env=env)
    except subprocess.TimeoutExpired as e:
        return dict(_last_op(e.stderr), status="timeout", reason=f"over {timeout:g} s of wall time",
                    seconds=round(timeout, 1))
    if cpu_s and p.returncode in (-24, -9):  # SIGXCPU, or SIGKILL at the hard limit
        return dict(_last_op(p.stderr), status="timeout", reason=f"over {cpu_s:g} s of CPU time", seconds=cpu_s)
    if p.returncode != 0 or not p.stdout.strip():
        tail = [ln for ln in p.stderr.strip().splitlines() if not ln.startswith("# op ")] or ["?"]
        return dict(_last_op(p.stderr), status="crashed", reason=f"exit {p.returncode}: {tail[-1]}"[:300])
    return json.loads(p.stdout.strip().splitlines()[-1])


def sweep(root: str, jobs: int, timeout: float) -> list[dict]:
    from concurrent.futures import ThreadPoolExecutor
    bundles = sorted(os.path.dirname(os.path.join(d, f)) for d, _, fs in os.walk(root) for f in fs
                     if f == "manifest.json")

    def one(b):
        return dict(lower_bundle(b, timeout), program=os.path.relpath(b, root))

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


from conftest import CORPUS  # noqa: E402
# A fixed sample of the census (the full sweep is `scripts/op-census.py --lower`, minutes to hours): one
# program per family that matters, at today's shapes, plus the dropout program that must stay unsupported.
SAMPLE = ["kernelbench/level1/1_Square_matrix_multiplication_", "kernelbench/level1/23_Softmax",
          "kernelbench/level1/42_Max_Pooling_2D", "kernelbench/level1/95_CrossEntropyLoss",
          "kernelbench/level2/12_Gemm_Multiply_LeakyReLU", "kernelbench/level2/31_Conv2d_Min_Add_Multiply",
          "kernelbench/level2/36_ConvTranspose2d_Min_Sum_GELU_Add",
          "kernelbench-v0/level2/66_Matmul_Dropout_Mean_Softmax"]
RANDOM_BY_DESIGN = {"kernelbench-v0/level2/66_Matmul_Dropout_Mean_Softmax"}


@pytest.mark.skipif(not os.path.isdir(CORPUS), reason="needs the KernelBench corpus (DIRIGO_CORPUS)")
@pytest.mark.parametrize("name", SAMPLE)
def test_census_sample_lowers(name):
    from dirigo import trace
    from dirigo.load import INIT_SEED, kernelbench_trial_seeds
    path = os.path.join(CORPUS, name + ".py")
    spec = {"name": "ref", "role": "reference", "file": path, "ref_file": path, "device": "cpu", "mode": "fake",
            "seeds": kernelbench_trial_seeds(INIT_SEED, 2), "init_seed": INIT_SEED, "real_limit_bytes": 0,
            "data_dir": None}
    r = trace.run_worker(spec)
    assert r["status"] == "ok", r.get("message")
    res = lower_program(r["program"])
    if name in RANDOM_BY_DESIGN:
        assert res["status"] == "failed" and "nondeterministic" in res["reason"], res
    else:
        assert res["status"] == "lowered", res


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
