"""The share of Triton launches Execute supports (docs/coverage.md, "Triton launches").

    python3 scripts/triton-coverage.py examples [--bundles GLOB] [--dirigo build/dirigo]
    python3 scripts/triton-coverage.py sweep [--dirigo build/dirigo] [--out .cache/triton-sweep]
    python3 scripts/triton-coverage.py all --update-doc docs/coverage.md

`examples`: every Triton launch of the bundles under examples/triton (CPU- and GPU-traced), executed
with its recorded grid, block, shared memory and scalars (`dirigo execute --kernel`; tensors unbounded).
`sweep`: the kernels of examples/triton/*/good.py, plus a GEMM whose tl.dot precision is a parameter,
compiled by the installed Triton for sm_90 over the configurations agents use (num_warps 1-8,
num_stages 1-3, block sizes, ieee/tf32), each executed the same way. A launch is supported when
Execute finishes it (findings allowed); otherwise the first refusal is named.
"""
from __future__ import annotations

import argparse
import collections
import glob
import importlib.util
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))


def entry_params(ptx: str, kernel: str) -> list[tuple[str, str]]:
    m = re.search(r"\.entry\s+" + re.escape(kernel) + r"\s*\(([^)]*)\)", ptx)
    out = []
    for decl in (m.group(1).split(",") if m else []):
        toks = decl.split()
        if toks:
            t = next((x[1:] for x in toks if x.startswith(".") and x[1:] not in ("param", "ptr", "global", "align")), "")
            out.append((toks[-1], t))
    return out


def execute(dirigo: str, ptx_path: str, kernel: str, grid, block, shared: int, scalars: dict[int, object],
            timeout: float = 120) -> dict:
    """dirigo execute on one launch; scalars by parameter position (None: a null pointer)."""
    params = entry_params(open(ptx_path).read(), kernel)
    cmd = [dirigo, "execute", ptx_path, "--kernel", kernel, "--json", "--grid", ",".join(map(str, grid)),
           "--block", ",".join(map(str, block)), "--shared", str(shared), "--max-ms", str(int(timeout * 1000))]
    for i, v in scalars.items():
        cmd += ["--arg", f"{params[i][0]}={0 if v is None else v}"]
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 30)
    secs = round(time.monotonic() - t0, 2)
    try:
        j = json.loads(p.stdout)
    except json.JSONDecodeError:
        return {"supported": False, "reason": (p.stderr or p.stdout).strip()[-300:], "seconds": secs}
    run = j.get("execution", j)
    reason = run.get("unsupported")
    return {"supported": reason is None, "reason": reason, "findings": len(run.get("findings", [])), "seconds": secs}


def short_reason(reason: str | None) -> str:
    if not reason:
        return ""
    m = re.search(r"'([a-z][\w.:]*)'", reason)
    if ("not modeled" in reason or "tensor-core" in reason or "asynchronous" in reason) and m:
        word = m.group(1)
        family = "cp.async" if word.startswith("cp.async") else word.split(".")[0]
        return f"{family} (`{word}`)"
    return reason[:120]


# ---------------------------------------------------------------------------------------------- examples

def examples(dirigo: str, pattern: str) -> list[dict]:
    rows = []
    for mpath in sorted(glob.glob(pattern)):
        bundle = os.path.dirname(mpath)
        m = json.load(open(mpath))
        mods = {x["id"]: x for x in m["modules"]}
        for prog in m["programs"]:
            for op in prog["ops"]:
                if op["kind"] != "launch" or "triton" not in op:
                    continue
                scalars = {i: (a["scalar"] if "scalar" in a else None) for i, a in enumerate(op["args"])
                           if "scalar" in a or "pointer" in a}
                r = execute(dirigo, os.path.join(bundle, mods[op["module"]]["path"]), op["kernel"], op["grid"],
                            op["block"], op["shared_bytes"], scalars)
                r.update(bundle=os.path.relpath(bundle, ROOT), kernel=op["kernel"],
                         gpu=m.get("created_by", {}).get("device", "").startswith("NVIDIA"))
                rows.append(r)
    return rows


# ---------------------------------------------------------------------------------------------- sweep

def _load(path: str):
    spec = importlib.util.spec_from_file_location(os.path.basename(os.path.dirname(path)) + "_mod", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _jit(k):
    while hasattr(k, "configs") or not hasattr(k, "arg_names"):
        k = k.fn
    return k


def sweep_jobs():
    """(name, fn, signature, constexprs, options, grid, block from num_warps, scalars by position)"""
    import triton
    import triton.language as tl

    @triton.jit
    def gemm(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
             PREC: tl.constexpr):
        rm = tl.program_id(0) * BM + tl.arange(0, BM)
        rn = tl.program_id(1) * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            kk = k + rk
            a = tl.load(a_ptr + rm[:, None] * K + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
            b = tl.load(b_ptr + kk[:, None] * N + rn[None, :], mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
            acc += tl.dot(a, b, input_precision=PREC)
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))

    ex = {n: _load(os.path.join(ROOT, "examples", "triton", n, "good.py"))
          for n in ("elementwise", "softmax", "layernorm", "rowsum", "gemm_epilogue")}
    P = "*fp32"
    cdiv = lambda a, b: (a + b - 1) // b  # noqa: E731
    jobs = []
    for block, n in ((128, 350), (1024, 5000)):
        for nw in (1, 2, 4, 8):
            jobs.append((f"elementwise B{block} w{nw}", ex["elementwise"].swish_scale_clamp,
                         dict(x_ptr=P, out_ptr=P, n="i32", scale="fp32", BLOCK="constexpr"), {"BLOCK": block},
                         dict(num_warps=nw), [cdiv(n, block)], {2: n, 3: 2.0}))
    for block, cols in ((64, 48), (256, 200), (1024, 1000)):
        for nw in (1, 2, 4, 8):
            jobs.append((f"softmax B{block} w{nw}", ex["softmax"].softmax_kernel,
                         dict(out_ptr=P, in_ptr=P, in_stride="i32", out_stride="i32", n_cols="i32", BLOCK="constexpr"),
                         {"BLOCK": block}, dict(num_warps=nw), [4], {2: cols, 3: cols, 4: cols}))
            jobs.append((f"layernorm B{block} w{nw}", ex["layernorm"].layernorm_kernel,
                         dict(x_ptr=P, w_ptr=P, b_ptr=P, y_ptr=P, n_cols="i32", eps="fp32", BLOCK="constexpr"),
                         {"BLOCK": block}, dict(num_warps=nw), [4], {4: cols, 5: 1e-5}))
    for block, r in ((16, 12), (128, 100)):
        for nw in (1, 2, 4):
            jobs.append((f"rowsum B{block} w{nw}", _jit(ex["rowsum"].sum_dim1),
                         dict(x_ptr=P, out_ptr=P, R="i32", C="i32", BLOCK="constexpr"), {"BLOCK": block},
                         dict(num_warps=nw), [4, 10], {2: r, 3: 10}))
    gsig = dict(a_ptr=P, w_ptr=P, bias_ptr=P, c_ptr=P, M="i32", N="i32", K="i32", sam="i32", sak="i32", swn="i32",
                swk="i32", scm="i32", scn="i32", BM="constexpr", BN="constexpr", BK="constexpr")
    for bm, bk in ((16, 16), (32, 32), (64, 32)):
        for ns in (1, 2, 3):
            jobs.append((f"gemm_epilogue {bm}x{bm}x{bk} s{ns}", ex["gemm_epilogue"].gemm_bias_relu, gsig,
                         {"BM": bm, "BN": bm, "BK": bk}, dict(num_warps=4, num_stages=ns), [cdiv(40, bm), cdiv(20, bm)],
                         dict(zip(range(4, 13), (40, 20, 24, 24, 1, 24, 1, 20, 1)))))
    for prec in ("ieee", "tf32"):
        for bm in (16, 64):
            for ns in (1, 3):
                jobs.append((f"gemm {prec} {bm}x{bm}x32 s{ns}", gemm,
                             dict(a_ptr=P, b_ptr=P, c_ptr=P, M="i32", N="i32", K="i32", BM="constexpr",
                                  BN="constexpr", BK="constexpr", PREC="constexpr"),
                             {"BM": bm, "BN": bm, "BK": 32, "PREC": prec}, dict(num_warps=4, num_stages=ns),
                             [cdiv(64, bm), cdiv(64, bm)], {3: 64, 4: 64, 5: 64}))
    return jobs


def sweep(dirigo: str, out: str) -> list[dict]:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    os.makedirs(out, exist_ok=True)
    rows = []
    for i, (name, fn, sig, consts, opts, grid, scalars) in enumerate(sweep_jobs()):
        k = triton.compile(ASTSource(fn, sig, consts), target=GPUTarget("cuda", 90, 32), options=opts)
        path = os.path.join(out, f"k{i}.ptx")
        open(path, "w").write(k.asm["ptx"])
        nparams = len(entry_params(k.asm["ptx"], k.name))
        scal = dict(scalars)
        scal.update({nparams - 2: None, nparams - 1: None})  # the scratch pointers
        r = execute(dirigo, path, k.name, grid + [1] * (3 - len(grid)), [32 * k.metadata.num_warps, 1, 1],
                    k.metadata.shared, scal)
        r.update(config=name, kernel=k.name)
        rows.append(r)
        print(f"{name}: {'ok' if r['supported'] else short_reason(r['reason'])} ({r['seconds']} s)", flush=True)
    return rows


# ---------------------------------------------------------------------------------------------- report

def table(rows: list[dict], label) -> str:
    n = len(rows)
    ok = sum(r["supported"] for r in rows)
    why = collections.Counter(short_reason(r["reason"]) for r in rows if not r["supported"])
    lines = [f"**{ok} of {n} launches supported** ({100 * ok / max(n, 1):.0f} %)." if n else "no launches.", ""]
    if why:
        lines += ["| refused at | launches |", "|---|---|"] + [f"| {k} | {v} |" for k, v in why.most_common()] + [""]
    lines += ["| launch | Execute | seconds |", "|---|---|---|"]
    lines += [f"| {label(r)} | {'supported' if r['supported'] else 'UNSUPPORTED: ' + short_reason(r['reason'])} | "
              f"{r['seconds']} |" for r in rows]
    return "\n".join(lines)


def family_table(rows: list[dict]) -> str:
    """per kernel (and GEMM precision, pipeline stages): configurations supported, and the refusals"""
    def family(r):
        w = r["config"].split()
        stages = w[-1] if w[-1].startswith("s") else ""
        return " ".join([w[0]] + ([w[1]] if w[0] == "gemm" else []) + ([f"num_stages={stages[1:]}"] if stages else []))
    groups = collections.OrderedDict()
    for r in rows:
        groups.setdefault(family(r), []).append(r)
    n, ok = len(rows), sum(r["supported"] for r in rows)
    lines = [f"**{ok} of {n} configurations supported** ({100 * ok / max(n, 1):.0f} %); every one per row in "
             "`.cache/triton-coverage.json` (`--json`).", "",
             "| kernel | configurations | supported | refused at |", "|---|---|---|---|"]
    for fam, rs in groups.items():
        why = collections.Counter(short_reason(r["reason"]) for r in rs if not r["supported"])
        lines.append(f"| {fam} | {', '.join(r['config'].split(' ', 1)[1] for r in rs)} | "
                     f"{sum(r['supported'] for r in rs)} of {len(rs)} | {'; '.join(why) or '—'} |")
    return "\n".join(lines)


def update_doc(doc: str, section: str) -> None:
    text = open(doc).read()
    head = "## Triton launches Execute supports"
    start = text.find(head)
    if start < 0:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    else:
        nxt = text.find("\n## ", start + len(head))
        text = text[:start] + section + ("\n" + text[nxt + 1:] if nxt >= 0 else "\n")
    open(doc, "w").write(text)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["examples", "sweep", "all"])
    ap.add_argument("--dirigo", default=os.path.join(ROOT, "build", "dirigo"))
    ap.add_argument("--bundles", default=os.path.join(ROOT, "examples", "triton", "*", "bundle*", "manifest.json"))
    ap.add_argument("--out", default=os.path.join(ROOT, ".cache", "triton-sweep"))
    ap.add_argument("--json", help="write every row to this file")
    ap.add_argument("--update-doc", help="rewrite the section 'Triton launches Execute supports' of this file")
    a = ap.parse_args()
    ex_rows = examples(a.dirigo, a.bundles) if a.what in ("examples", "all") else []
    sw_rows = sweep(a.dirigo, a.out) if a.what in ("sweep", "all") else []
    for r in ex_rows:
        print(f"{r['bundle']}: {'ok' if r['supported'] else short_reason(r['reason'])} ({r['seconds']} s)")
    if a.json:
        json.dump({"examples": ex_rows, "sweep": sw_rows}, open(a.json, "w"), indent=1)
    if a.update_doc:
        import triton
        sec = ["## Triton launches Execute supports", "",
               "Measured with `python3 scripts/triton-coverage.py all --update-doc docs/coverage.md` "
               f"(triton {triton.__version__}; PTX for sm_90, and sm_90a in the GPU traces; `dirigo execute` on each launch "
               "with its grid, block, shared memory and scalars). The dev corpus holds no Triton program (`grep -rlE "
               "'triton\\.jit|import triton' ../shared/corpus` finds only KernelBench's own eval.py, which names "
               "the backend), so the measure is on our own kernels.", ""]
        if ex_rows:
            sec += ["### The examples' bundles (examples/triton)", "",
                    table(ex_rows, lambda r: f"`{r['bundle']}` ({'GPU' if r['gpu'] else 'CPU'} trace)"), ""]
        if sw_rows:
            sec += ["### Compile configurations (the examples' kernels and a GEMM, compiled for sm_90)", "",
                    family_table(sw_rows), ""]
        update_doc(a.update_doc, "\n".join(sec).rstrip("\n") + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
