#!/usr/bin/env python3
"""Execute time and memory as the reduction grows, with loop summaries (docs/exec.md "Loop summaries")
and with every iteration stepped (`--step-loops`): a thread-per-output linear layer as K grows, and a
block-per-row softmax (block-stride loops and shared trees, threads one iteration apart) as the row
grows.

    python3 bench/loop_summary.py [--dirigo build/dirigo] [--max-log2k 20] [--max-log2-stepped 16]

Prints markdown tables (seconds and peak RSS of `dirigo execute`, /usr/bin/time)."""
import argparse, os, re, subprocess, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the golden suite's kernel (its launch there is small; here K grows)
KERNEL = os.path.join(ROOT, "tests", "golden", "cuda", "ok_linear_long_k.cu")
SOFTMAX = os.path.join(ROOT, "tests", "golden", "cuda", "ok_block_softmax_stride.cu")


def run(dirigo, ptx, k, step, softmax=False):
    if softmax:  # 4 rows of k columns, 256 threads per row
        launch = ["--kernel", "block_softmax_stride", "--grid", "4,1,1", "--block", "256,1,1",
                  "--arg", f"block_softmax_stride_param_2={k}"]
    else:
        launch = ["--kernel", "linear_long_k", "--grid", "4,128,1", "--block", "256,1,1",
                  "--arg", "linear_long_k_param_4=128", "--arg", "linear_long_k_param_5=1024",
                  "--arg", f"linear_long_k_param_6={k}"]
    cmd = ["/usr/bin/time", "-f", "%e %M", dirigo, "execute", ptx, *launch, "--max-ms", "120000",
           "--summarize-min-trips", "16"]
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
    ap.add_argument("--max-log2-stepped", type=int, default=16, help="softmax rows stepped up to 2^N columns")
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
        sm = os.path.join(d, "softmax.ptx")
        subprocess.run([a.nvcc, "-ptx", "-arch=sm_90a", "-lineinfo", SOFTMAX, "-o", sm], check=True)
        print()
        print("| columns | summarized: s | MB | loops summarized | stepped: s | MB |")
        print("|---|---|---|---|---|---|")
        for e in range(10, a.max_log2k + 1, 2):
            k = (1 << e) + 100  # not a multiple of the block: threads 0-99 run one iteration more
            s1, m1, n = run(a.dirigo, sm, k, False, softmax=True)
            stepped = "| – | – |"
            if e <= a.max_log2_stepped:
                s2, m2, _ = run(a.dirigo, sm, k, True, softmax=True)
                stepped = f"| {s2:.2f} | {m2:.0f} |"
            print(f"| 2^{e} + 100 | {s1:.2f} | {m1:.0f} | {n} {stepped}", flush=True)


if __name__ == "__main__":
    main()
