#!/usr/bin/env python3
"""Execute time and memory of one thread-per-output linear layer as K grows, with loop summaries
(docs/exec.md "Loop summaries") and with every iteration stepped (`--step-loops`).

    python3 bench/loop_summary.py [--dirigo build/dirigo] [--max-log2k 20]

Prints a markdown table (seconds and peak RSS of `dirigo execute`, /usr/bin/time)."""
import argparse, os, re, subprocess, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the golden suite's kernel (its launch there is small; here K grows)
KERNEL = os.path.join(ROOT, "tests", "golden", "cuda", "ok_linear_long_k.cu")


def run(dirigo, ptx, k, step):
    cmd = ["/usr/bin/time", "-f", "%e %M", dirigo, "execute", ptx, "--kernel", "linear_long_k", "--grid", "4,128,1",
           "--block", "256,1,1", "--arg", "linear_long_k_param_4=128", "--arg", "linear_long_k_param_5=1024",
           "--arg", f"linear_long_k_param_6={k}", "--max-ms", "120000", "--summarize-min-trips", "16"]
    if step:
        cmd.append("--step-loops")
    p = subprocess.run(cmd, capture_output=True, text=True)
    sec, kb = p.stderr.strip().splitlines()[-1].split()
    summarized = re.search(r"loops summarized: (\d+)", p.stdout)
    return float(sec), int(kb) / 1024, int(summarized.group(1)) if summarized else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dirigo", default="build/dirigo")
    ap.add_argument("--max-log2k", type=int, default=20)
    ap.add_argument("--nvcc", default="/usr/local/cuda/bin/nvcc")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        ptx = os.path.join(d, "lin.ptx")
        subprocess.run([a.nvcc, "-ptx", "-arch=sm_90a", "-O3", KERNEL, "-o", ptx], check=True)
        print("| K | summarized: s | MB | loops summarized | stepped: s | MB |")
        print("|---|---|---|---|---|---|")
        for e in range(10, a.max_log2k + 1, 2):
            k = 1 << e
            s1, m1, n = run(a.dirigo, ptx, k, False)
            s2, m2, _ = run(a.dirigo, ptx, k, True)
            print(f"| 2^{e} | {s1:.2f} | {m1:.0f} | {n} | {s2:.2f} | {m2:.0f} |", flush=True)


if __name__ == "__main__":
    main()
