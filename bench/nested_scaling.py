"""Reductions over reductions as the extent grows: per-location check time (docs/perf.md "Reductions over
reductions").

    python bench/nested_scaling.py [--dirigo build/dirigo] [--budget 20] [--out .cache/nested-scaling]

For each n in 10, 10^1.5, ..., 10^4 a pure-PyTorch pair is written and traced on the CPU (fake tensors:
nothing of the n x n weight is allocated), then checked by `dirigo check BUNDLE --json`:
  rowsum:  sum_j sigmoid(linear(x))[i, j] vs matmul(x, W^T) + b, the row sum through a transposed view
  softmax: softmax(linear(x)) vs exp(h - max) / sum(exp(h - max)) over addmm(b, x, W^T)
Each output location is a reduction over n linear outputs, each a reduction over n inputs: n^2 terms,
10^2 to 10^8. Prints one JSON line per (pair, n): the verdict, how many locations were decided equal,
and the median milliseconds of an equal location (the first location, which carries the bundle's read
and the falsification tier, apart).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))

HEAD = """
import torch
import torch.nn as nn


class {cls}(nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.linear = nn.Linear(k, n)

    def forward(self, x):
{body}


def get_inputs():
    return [torch.rand(4, {n})]


def get_init_inputs():
    return [{n}, {n}]
"""

PAIRS = {
    "rowsum": ("        return torch.sigmoid(self.linear(x)).sum(dim=1, keepdim=True)",
               "        y = torch.matmul(x, self.linear.weight.t()) + self.linear.bias\n"
               "        return torch.sigmoid(y).t().sum(dim=0).unsqueeze(1)"),
    "softmax": ("        return torch.softmax(self.linear(x), dim=1)",
                "        h = torch.addmm(self.linear.bias, x, self.linear.weight.t())\n"
                "        e = torch.exp(h - h.max(dim=1, keepdim=True).values)\n"
                "        return e / e.sum(dim=1, keepdim=True)"),
}


def program(cls: str, body: str, n: int) -> str:
    return textwrap.dedent(HEAD).format(cls=cls, body=body, n=n)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dirigo", default=os.path.join(ROOT, "build", "dirigo"))
    ap.add_argument("--budget", type=float, default=20)
    ap.add_argument("--out", default=os.path.join(ROOT, ".cache", "nested-scaling"))
    ap.add_argument("--sizes", type=int, nargs="*", default=[10, 32, 100, 316, 1000, 3162, 10000])
    a = ap.parse_args()
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for name, (ref_body, new_body) in PAIRS.items():
        for n in a.sizes:
            d = os.path.join(a.out, f"{name}-{n}")
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "ref.py"), "w") as f:
                f.write(program("Model", ref_body, n))
            with open(os.path.join(d, "new.py"), "w") as f:
                f.write(program("ModelNew", new_body, n))
            bundle = os.path.join(d, "bundle")
            subprocess.run([sys.executable, "-m", "dirigo.trace", os.path.join(d, "ref.py"), os.path.join(d, "new.py"),
                            "--out", bundle, "--device", "cpu"], check=True, env=env, capture_output=True)
            p = subprocess.run([a.dirigo, "check", bundle, "--json", "--budget", str(a.budget)],
                               capture_output=True, text=True)
            r = json.loads(p.stdout)
            ms = [l["ms"] for l in r.get("locations", [])[1:] if l.get("verdict") == "equal"]
            print(json.dumps({"pair": name, "n": n, "terms": n * n, "outcome": r["outcome"], "equal": r["equal"],
                              "locations": r["total_locations"],
                              "first_location_ms": round(r["locations"][0]["ms"], 1) if r.get("locations") else None,
                              "median_equal_ms": round(statistics.median(ms), 3) if ms else None,
                              "search_s": round(r["search_seconds"], 2)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
