"""Mutation-analysis report: the tables of `dirigo score` / `dirigo suite` as Markdown, and PNG plots.

    python3 -m dirigo.report --store .cache/mutate/killmatrix.sqlite [--dirigo build/dirigo]
        [--out-dir docs] [--prefix mutation] [--markdown report.md]

writes <out-dir>/<prefix>-problems.png (miss rate per problem and protocol, sorted by the
KernelBench check) and <out-dir>/<prefix>-suite.png (detection versus input budget, full pool and
held-out, with the baseline), and prints (or writes) the Markdown tables. The numbers come from the
dirigo binary (`score --json`, `suite --json`); the tables are its own text output, so there is one
formatter.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path


def find_dirigo(explicit: str | None) -> str:
    """The dirigo binary: --dirigo, $DIRIGO, a build folder of this tree, or PATH."""
    if explicit:
        return explicit
    if os.environ.get("DIRIGO"):
        return os.environ["DIRIGO"]
    root = Path(__file__).resolve().parents[2]
    for build in ("build", "build-score"):
        cand = root / build / "dirigo"
        if cand.is_file() and os.access(cand, os.X_OK):
            return str(cand)
    found = shutil.which("dirigo")
    if not found:
        raise SystemExit("dirigo.report: no dirigo binary (give --dirigo PATH or set DIRIGO)")
    return found


def run(binary: str, args: list[str]) -> str:
    proc = subprocess.run([binary, *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"dirigo.report: `dirigo {' '.join(args)}` failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout


def score(store: str, dirigo: str | None = None, source: str = "auto", protocols: str | None = None,
          only: str | None = None) -> dict:
    """`dirigo score --json` as a dict: population, protocols with miss rates by family and problem."""
    args = ["score", "--store", store, "--source", source, "-q", "--json"]
    if protocols:
        args += ["--protocols", protocols]
    if only:
        args += ["--only", only]
    return json.loads(run(find_dirigo(dirigo), args))


def suite(store: str, dirigo: str | None = None, budget: str = "1..5", tol: float = 1e-2, seed: int = 0,
          source: str = "auto", only: str | None = None) -> dict:
    """`dirigo suite --json` as a dict: greedy suites per problem, detection per budget (full pool, held out)."""
    args = ["suite", "--store", store, "--source", source, "-q", "--json", "--budget", budget, "--tol", repr(tol),
            "--seed", str(seed)]
    if only:
        args += ["--only", only]
    return json.loads(run(find_dirigo(dirigo), args))


def plot_problems(score: dict, path: Path, highlight=("kernelbench_v0", "kernelbench_fp32", "hardened", "fuzz", "dirigo")) -> None:
    """Dot plot: one row per problem (sorted by the first protocol), one marker per protocol (miss rate)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    protocols = [p for p in score["protocols"] if p["name"] in highlight] or score["protocols"]
    witnessed = {k: v["witnessed"] for k, v in score.get("population_by_problem", {}).items()}
    problems = [p for p in score["problems"] if witnessed.get(p, 0) > 0]
    first = protocols[0]
    problems.sort(key=lambda p: first["by_problem"].get(p, {}).get("miss_rate", 0.0))
    fig, ax = plt.subplots(figsize=(8.5, max(2.5, 0.3 * len(problems) + 1.2)))
    markers = "os^Dvx*P"
    for k, proto in enumerate(protocols):
        xs = [100.0 * proto["by_problem"].get(p, {}).get("miss_rate", 0.0) for p in problems]
        ax.plot(xs, range(len(problems)), markers[k % len(markers)], alpha=0.8, ms=6,
                label=f'{proto["name"]} ({100.0 * proto["total"]["miss_rate"]:.1f}% overall)')
    ax.set_yticks(range(len(problems)))
    ax.set_yticklabels([f"{p} (n={witnessed.get(p, 0)})" for p in problems], fontsize=7)
    ax.grid(axis="y", lw=0.3)
    ax.set_xlim(-2, 102)
    ax.set_title("Miss rate per problem and protocol (% of witnessed mutants missed)")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.45 / max(2.5, 0.3 * len(problems) + 1.2)), ncol=3)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def plot_suite(suite: dict, path: Path) -> None:
    """Detection versus input budget: greedy suites on the full pool and on held-out mutants."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    b = suite["budgets"]
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    ax.plot(b, [100 * d for d in suite["detection_full"]], "o-", label=f'greedy, full pool (n={suite["witnessed"]})')
    ax.plot(b, [100 * d for d in suite["detection_held_out"]], "s--", label=f'greedy, held-out (n={suite["held_out"]})')
    ax.axhline(100 * suite["baseline_full"], color="grey", ls=":", label=f'{suite["baseline"]}, full pool')
    ax.set_xticks(b)
    ax.set_xlabel("inputs per problem (budget b)")
    ax.set_ylabel("witnessed mutants detected (%)")
    ax.set_ylim(0, 101)
    ax.set_title(f'Suite synthesis (tol {suite["tol"]:g})')
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m dirigo.report", description=__doc__.split("\n")[0])
    ap.add_argument("--store", required=True, help="SQLite results store with the kill matrix")
    ap.add_argument("--dirigo", help="path of the dirigo binary")
    ap.add_argument("--out-dir", default="docs", help="where the PNGs go")
    ap.add_argument("--prefix", default="mutation", help="PNG file name prefix")
    ap.add_argument("--markdown", help="write the Markdown tables here (default: stdout)")
    ap.add_argument("--budget", default="1..5")
    ap.add_argument("--tol", default="1e-2", help="the suites' tolerance")
    ap.add_argument("--seed", default="0", help="seed of the held-out split")
    ap.add_argument("--source", default="auto")
    ap.add_argument("--only", help="only these protocols (comma-separated; they set the witness tolerances)")
    args = ap.parse_args(argv)

    binary = find_dirigo(args.dirigo)
    common = ["--store", args.store, "--source", args.source, "-q"] + (["--only", args.only] if args.only else [])
    suite_args = ["suite", *common, "--budget", args.budget, "--tol", args.tol, "--seed", args.seed]
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    problems_png, suite_png = out / f"{args.prefix}-problems.png", out / f"{args.prefix}-suite.png"
    plot_problems(score(args.store, binary, args.source, only=args.only), problems_png)
    plot_suite(suite(args.store, binary, args.budget, float(args.tol), int(args.seed), args.source, args.only), suite_png)
    text = (
        "### Protocol scores\n\n" + run(binary, ["score", *common]) + "\n### Suite synthesis\n\n" + run(binary, suite_args)
        + f"\n![miss rate per problem]({problems_png.name})\n\n![suite synthesis]({suite_png.name})\n"
    )
    if args.markdown:
        Path(args.markdown).write_text(text)
    else:
        sys.stdout.write(text)
    print(f"wrote {problems_png} and {suite_png}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
