#!/usr/bin/env python3
"""Op census: trace every KernelBench reference on the CPU (fake tensors) and count the ATen overloads
each reaches. Raw per-program results go to .cache/op-census/<corpus>/<level>/<file>.json (git-ignored:
they are derived from the corpus); the summary is printed as the Markdown of docs/coverage.md's section.

    python3 scripts/op-census.py [--levels 1 2 3] [--jobs 2] [--timeout 180] [--markdown OUT.md]
    python3 scripts/op-census.py --lower [--levels 1 2] [--jobs 2] [--timeout 120] [--update-doc docs/coverage.md]
        lowers every traced reference with dirigo's ATen semantics (each op's equation at the first, middle
        and last location of each output, tests/python/test_aten_census.py), one child per program; results
        cached per program in .cache/op-census-lower/ (delete a file to redo it); bundles come from
        .cache/census-bundles/ (traced here first when missing). Writes the section "Lowering KernelBench
        references" (lowered / not lowered, each exception with its reason).

Programs run in worker processes (several programs each, for speed); a program that crashes or hangs
is recorded as such and its worker replaced.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = "/work/shared/corpus"
CORPORA = ["kernelbench", "kernelbench-v0"]
OUT = os.path.join(ROOT, ".cache", "op-census")


def out_path(f: str) -> str:
    rel = os.path.relpath(f, CORPUS)
    return os.path.join(OUT, rel[:-3] + ".json")


def census_one(path: str) -> dict:
    from dirigo import trace
    from dirigo.load import INIT_SEED, kernelbench_trial_seeds
    spec = {"name": "ref", "role": "reference", "file": path, "ref_file": path, "device": "cpu", "mode": "fake",
            "seeds": kernelbench_trial_seeds(INIT_SEED, 2), "init_seed": INIT_SEED,
            "real_limit_bytes": 0, "data_dir": None}
    t0 = time.monotonic()
    r = trace.run_worker(spec)
    res = {"file": os.path.relpath(path, CORPUS), "status": r["status"], "seconds": round(time.monotonic() - t0, 2)}
    if r["status"] != "ok":
        res["message"] = r["message"]
        return res
    prog = r["program"]
    counts = collections.Counter(f"{op['name'].replace('::', '.')}.{op['overload']}" for op in prog["ops"])
    res.update(n_ops=len(prog["ops"]), ops=dict(sorted(counts.items())),
               storage_bytes=sum(s["nbytes"] for s in prog["storages"]),
               inputs=[{"name": i["name"], "kind": i["kind"]} for i in prog["inputs"]])
    try:
        from dirigo import bundle
        manifest = {"format": bundle.FORMAT, "version": bundle.VERSION, "programs": [prog]}
        bundle.validate_manifest(manifest)
        res["bundle_valid"] = True
        if os.environ.get("DIRIGO_CENSUS_BUNDLES"):  # keep a bundle per program (for the C++ reader)
            bundle.write_bundle(os.path.join(os.environ["DIRIGO_CENSUS_BUNDLES"], res["file"][:-3]), manifest)
    except Exception as e:  # noqa: BLE001
        res["bundle_valid"] = False
        res["bundle_error"] = str(e)
    return res


def worker(list_path: str, current_path: str) -> int:
    sys.path.insert(0, os.path.join(ROOT, "python"))
    with open(list_path) as fh:
        files = [ln.strip() for ln in fh if ln.strip()]
    for f in files:
        with open(current_path, "w") as fh:
            fh.write(f)
        res = census_one(f)
        os.makedirs(os.path.dirname(out_path(f)), exist_ok=True)
        with open(out_path(f), "w") as fh:
            json.dump(res, fh, indent=1)
    return 0


def run_all(files: list[str], jobs: int, timeout: float) -> None:
    todo = [f for f in files if not os.path.exists(out_path(f))]
    chunks = [todo[i::jobs] for i in range(jobs)]
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTHONPATH=os.path.join(ROOT, "python"))
    os.makedirs(OUT, exist_ok=True)
    slots = []  # [proc, remaining files, current file path, start time of current file, current name]
    for k, chunk in enumerate(chunks):
        slots.append({"k": k, "files": chunk, "proc": None})

    def start(slot):
        slot["files"] = [f for f in slot["files"] if not os.path.exists(out_path(f))]
        if not slot["files"]:
            slot["proc"] = None
            return
        lst = os.path.join(OUT, f".worker{slot['k']}.list")
        cur = os.path.join(OUT, f".worker{slot['k']}.current")
        with open(lst, "w") as fh:
            fh.write("\n".join(slot["files"]))
        if os.path.exists(cur):
            os.remove(cur)
        slot.update(cur=cur, seen=None, since=time.monotonic(),
                    proc=subprocess.Popen([sys.executable, __file__, "--worker", lst, cur], env=env,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

    for s in slots:
        start(s)
    while any(s["proc"] for s in slots):
        time.sleep(0.5)
        for s in slots:
            p = s["proc"]
            if p is None:
                continue
            cur = open(s["cur"]).read().strip() if os.path.exists(s["cur"]) else None
            if cur != s["seen"]:
                s["seen"], s["since"] = cur, time.monotonic()
            rc = p.poll()
            hung = rc is None and cur and time.monotonic() - s["since"] > timeout
            if hung:
                p.kill()
                p.wait()
            if rc is not None or hung:
                if cur and not os.path.exists(out_path(cur)):
                    msg = (f"timed out after {timeout:g} s" if hung else
                           f"crashed (exit status {p.returncode})")
                    os.makedirs(os.path.dirname(out_path(cur)), exist_ok=True)
                    with open(out_path(cur), "w") as fh:
                        json.dump({"file": os.path.relpath(cur, CORPUS), "status": "error", "message": msg}, fh)
                start(s)


def summarize(files: list[str]) -> str:
    results = []
    for f in files:
        if os.path.exists(out_path(f)):
            with open(out_path(f)) as fh:
                results.append(json.load(fh))
    lines = ["## ATen operators reached by KernelBench references", "",
             "Produced by `python3 scripts/op-census.py` (raw per-program results in `.cache/op-census/`, "
             "git-ignored). Each reference is traced on the CPU with fake tensors (today's shapes, no data "
             "allocated), twice with KernelBench's trial seeds, exactly as `python -m dirigo.trace REF.py` does; "
             "ops are the overloads a TorchDispatchMode sees (after CompositeImplicit decomposition, under "
             "`torch.no_grad()`), counted once per program that reaches them.", ""]
    by_group = collections.defaultdict(list)
    for r in results:
        corpus, level = r["file"].split("/")[:2]
        by_group[(corpus, level)].append(r)
    lines += ["| corpus | level | programs | traced | unsupported | errors | ops per program (median) |",
              "|---|---|---|---|---|---|---|"]
    for (corpus, level), rs in sorted(by_group.items()):
        ok = [r for r in rs if r["status"] == "ok"]
        n_ops = sorted(r["n_ops"] for r in ok)
        med = n_ops[len(n_ops) // 2] if n_ops else 0
        lines.append(f"| {corpus} | {level} | {len(rs)} | {len(ok)} | "
                     f"{sum(r['status'] == 'unsupported' for r in rs)} | {sum(r['status'] == 'error' for r in rs)} | {med} |")
    lines += ["", "Reading the list (what the per-element semantics must cover, and what to expect):", "",
              "- Overloads are exact (`aten.add.Tensor` and `aten.add.Scalar`, `aten.sum.dim_IntList` and "
              "`aten.sum.default` are different entries). `nn.Linear` reaches `aten.t.default` + "
              "`aten.addmm.default` (or `aten.mm`/`aten.view` for batched inputs); every `nn.ConvNd`/"
              "`ConvTransposeNd` reaches `aten.convolution.default` (its `transposed` argument tells which).",
              "- Traced on the CPU, so a few ops are the CPU backend's choices: "
              "`aten._scaled_dot_product_flash_attention_for_cpu.default` (CUDA picks "
              "`_scaled_dot_product_flash_attention`/`_efficient_attention`), and `nn.GRU`/`nn.LSTM` decompose into "
              "per-time-step `addmm`/`sigmoid`/`tanh`... (CUDA runs one `_cudnn_rnn`). A GPU trace of the same "
              "reference can therefore list different overloads for those programs.",
              "- KernelBench never calls `.eval()`: BatchNorm runs in training mode (`native_batch_norm` with "
              "`training=True`, plus `add_` on `num_batches_tracked` and in-place running-statistics updates), and "
              "Dropout with p>0 reaches `aten.bernoulli_.float` (random: such programs are not deterministic "
              "functions of their inputs). `aten.empty.memory_format` next to `native_batch_norm` is the "
              "reserve buffer it returns.",
              "- `aten.lift_fresh.default` is `torch.tensor(...)` of a Python constant inside forward; "
              "`aten.detach.default` comes from `.detach()`/`torch.tensor(tensor)`; `aten.scalar_tensor.default` "
              "from a Python scalar turned tensor (e.g. `torch.where(c, x, 0.0)`)."]
    bad = [r for r in results if r["status"] != "ok"]
    lines += ["", f"### Programs not traced ({len(bad)})", ""]
    lines += [f"- `{r['file']}`: {r['status']}: {r['message']}" for r in sorted(bad, key=lambda r: r["file"])] or ["- none"]
    invalid = [r for r in results if r["status"] == "ok" and not r.get("bundle_valid", True)]
    if invalid:
        lines += ["", "Traced but the program does not validate as a bundle:", ""]
        lines += [f"- `{r['file']}`: {r['bundle_error']}" for r in invalid]
    for title, levels in (("levels 1 and 2", {"level1", "level2"}), ("level 3", {"level3"})):
        rs = [r for r in results if r["status"] == "ok" and r["file"].split("/")[1] in levels]
        if not rs:
            continue
        progs = collections.Counter()
        calls = collections.Counter()
        for r in rs:
            for op, c in r["ops"].items():
                progs[op] += 1
                calls[op] += c
        lines += ["", f"### Distinct ATen overloads, {title} ({len(progs)} overloads over {len(rs)} traced programs "
                      f"of both corpora)", "",
                  "| overload | programs | calls |", "|---|---|---|"]
        lines += [f"| `{op}` | {progs[op]} | {calls[op]} |" for op in sorted(progs, key=lambda o: (-progs[o], o))]
    return "\n".join(lines) + "\n"


def functional_check() -> int:
    """Trace each kernelbench-functional program against its KernelBench reference (fake tensors) and
    compare the op sequences: the functional form must reach the same ATen ops as the module form."""
    sys.path.insert(0, os.path.join(ROOT, "python"))
    from dirigo import trace
    from dirigo.load import INIT_SEED, kernelbench_trial_seeds
    seeds = kernelbench_trial_seeds(INIT_SEED, 2)
    same = differ = failed = 0
    for lv in ("level1", "level2"):
        d = os.path.join(CORPUS, "kernelbench-functional", lv)
        for f in sorted(os.listdir(d)):
            ref = os.path.join(CORPUS, "kernelbench", lv, f)
            if not os.path.exists(ref):
                continue
            progs = []
            for name, path in (("ref", ref), ("new", os.path.join(d, f))):
                spec = {"name": name, "role": "other", "file": path, "ref_file": ref, "device": "cpu", "mode": "fake",
                        "seeds": seeds, "init_seed": INIT_SEED, "real_limit_bytes": 0, "data_dir": None}
                progs.append(trace.run_worker(spec))
            if any(p["status"] != "ok" for p in progs):
                failed += 1
                print(f"{lv}/{f}: " + "; ".join(p.get("message", "") for p in progs if p["status"] != "ok"))
                continue
            a, b = ([f"{op['name']}.{op['overload']}" for op in p["program"]["ops"]] for p in progs)
            if a == b:
                same += 1
            else:
                differ += 1
                print(f"{lv}/{f}: reference {a} vs functional {b}")
    print(f"functional form vs reference: {same} same op sequence, {differ} different, {failed} not traced")
    return 0


LOWER_OUT = os.path.join(ROOT, ".cache", "op-census-lower")
BUNDLES = os.path.join(ROOT, ".cache", "census-bundles")


def bundle_path(f: str) -> str:
    return os.path.join(BUNDLES, os.path.relpath(f, CORPUS)[:-3])


def lower_path(f: str) -> str:
    return os.path.join(LOWER_OUT, os.path.relpath(f, CORPUS)[:-3] + ".json")


def _numel(shape) -> int:
    n = 1
    for x in shape:
        n *= x
    return n


def _fan_in(op: dict, tensors: dict, big: int, out: int) -> int:
    """Input elements one output location of a reduction or normalization depends on."""
    name = op["name"]
    shape = tensors[op["args"][0]["tensor"]]["shape"] if op["args"] and "tensor" in op["args"][0] else []
    if name == "aten::native_batch_norm" and len(shape) > 1:
        return big // shape[1]  # a channel's statistics: N times the spatial size
    if name == "aten::native_group_norm":
        return big // (op["args"][3]["scalar"] * op["args"][6]["scalar"])  # per (sample, group): C/G * HxW
    if name == "aten::native_layer_norm":
        return _numel([x["scalar"] for x in op["args"][1]["list"]])
    return big // max(out, 1)


def classify(r: dict, f: str) -> tuple[str, str]:
    """(reason class, explanation) of a program that did not lower."""
    reason = r.get("reason", "")
    if "nondeterministic" in reason or "random" in reason:
        return "random by design", f"`{r.get('name')}`: {reason.split(': ', 1)[-1][:160]}"
    size_like = r["status"] in ("timeout", "crashed") or "bad_alloc" in reason or "MemoryError" in reason
    if size_like and "name" in r:
        prog = json.load(open(os.path.join(bundle_path(f), "manifest.json")))["programs"][0]
        op = prog["ops"][r["op"]]
        tensors = {t["id"]: t for t in prog["tensors"]}
        ins = [tensors[a["tensor"]] for a in op["args"] if isinstance(a, dict) and "tensor" in a]
        big = max((_numel(t["shape"]) for t in ins), default=0)
        out = _numel(tensors[op["outputs"][0]]["shape"]) if op["outputs"] else 0
        what = {"timeout": reason, "crashed": reason}.get(r["status"], "out of memory under the address-space cap")
        return "size", (f"`{r['name']}` over {big:.2g} input elements; one location's equation reads "
                        f"{_fan_in(op, tensors, big, out):.2g} of them: {what}")
    if size_like:
        return "size", reason
    return "gap", f"`{r.get('name')}`: {reason[:200]}"


def lower_all(files: list[str], jobs: int, timeout: float) -> list[dict]:
    import concurrent.futures as cf
    sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
    import test_aten_census
    todo = [f for f in files if not os.path.exists(lower_path(f))]
    os.environ.setdefault("DIRIGO_LOWER_AS_GIB", "4")  # per child; --jobs of them run at once

    def one(f):
        b = bundle_path(f)
        if os.path.exists(lower_path(f)):  # done meanwhile by another run
            return None
        if not os.path.exists(os.path.join(b, "manifest.json")):
            r = {"status": "not traced", "reason": "no bundle (the census could not trace it)"}
        else:
            r = test_aten_census.lower_bundle(b, timeout=max(10 * timeout, 600), cpu_s=int(timeout))
        r["file"] = os.path.relpath(f, CORPUS)
        os.makedirs(os.path.dirname(lower_path(f)), exist_ok=True)
        with open(lower_path(f), "w") as fh:
            json.dump(r, fh, indent=1)
        print(json.dumps(r)[:300], file=sys.stderr, flush=True)
        return r

    with cf.ThreadPoolExecutor(jobs) as ex:
        list(ex.map(one, todo))
    return [json.load(open(lower_path(f))) for f in files]


def summarize_lowering(results: list[dict], files: list[str], timeout: float) -> str:
    lines = ["## Lowering KernelBench references with dirigo's ATen semantics", "",
             "Produced by `python3 scripts/op-census.py --lower --levels 1 2 [3] --jobs 2 --timeout "
             f"{timeout:g} --update-doc docs/coverage.md` (per-program results in `.cache/op-census-lower/`, "
             "git-ignored). Each reference traced above (fake tensors, the corpus's own shapes) is lowered op by "
             "op: every ATen op's per-element equation is built at the first, middle and last location of each "
             "of its outputs (`dirigo._core.aten_expr`, the equations `dirigo check` uses), one child process "
             f"per program with a {timeout:g} s CPU-time limit (CPU, not wall time: the build box is shared and "
             "its load swings from 2 to 20) and a 4 GiB address-space cap (`DIRIGO_LOWER_AS_GIB`). A program is *lowered* "
             "when every op's equations build; otherwise the first op that did not is named.", "",
             "| corpus | level | programs | lowered | random by design | size (one location reads too much) "
             "| semantic gap |", "|---|---|---|---|---|---|---|"]
    by_group = collections.defaultdict(list)
    for f, r in zip(files, results):
        corpus, level = r["file"].split("/")[:2]
        by_group[(corpus, level)].append((f, r))
    exceptions = collections.defaultdict(list)
    for (corpus, level), rs in sorted(by_group.items()):
        cnt = collections.Counter()
        for f, r in rs:
            if r["status"] == "lowered":
                cnt["lowered"] += 1
                continue
            cls, why = classify(r, f)
            cnt[cls] += 1
            exceptions[cls].append(f"- `{r['file'][:-3]}`: {why}")
        lines.append(f"| {corpus} | {level} | {len(rs)} | {cnt['lowered']} | {cnt['random by design']} | "
                     f"{cnt['size']} | {cnt['gap']} |")
    total = len(results)
    low = sum(r["status"] == "lowered" for r in results)
    lines += ["", f"**{low} of {total} lowered.** Exceptions by reason:", ""]
    titles = {"random by design": "Random by design (UNSUPPORTED: nondeterministic; dropout with p > 0 in training "
                                  "mode draws a mask, so the program is no function of its inputs)",
              "size": "Size: the equations exist (the same ops lower in the other programs and in the "
                      "validation suite), but one output location of the named op depends on so many input "
                      "elements (a full reduction, batch statistics over N·H·W) that its explicit equation "
                      "exceeds the sweep's memory cap or did not finish in time on the loaded machine. An "
                      "equation of 10^7-10^9 terms per location is no practical per-location check either; "
                      "this needs summation over index ranges in the IR, not more memory",
              "gap": "Semantic gaps (an op or parameter the ATen module does not model)"}
    for cls in ("random by design", "size", "gap"):
        if exceptions[cls]:
            lines += [f"### {titles[cls]} ({len(exceptions[cls])})", ""] + sorted(exceptions[cls]) + [""]
    secs = sorted(r.get("seconds", 0) for r in results if r["status"] == "lowered")
    if secs:
        lines += [f"Lowering time per lowered program: median {secs[len(secs) // 2]:.1f} s, max {secs[-1]:.1f} s "
                  "(CPU time of the child, including Python start-up).", ""]
    return "\n".join(lines)


def update_section(doc: str, md: str) -> None:
    """Replace the '## ATen operators reached ...' section of `doc` (up to the next '## ' heading)."""
    title = md.splitlines()[0]
    text = open(doc).read() if os.path.exists(doc) else ""
    lines = text.splitlines(keepends=True)
    start = next((i for i, ln in enumerate(lines) if ln.rstrip() == title), None)
    if start is None:
        text = (text.rstrip() + "\n\n" if text.strip() else "") + md
    else:
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
        text = "".join(lines[:start]) + md + ("\n" if end < len(lines) else "") + "".join(lines[end:])
    with open(doc, "w") as fh:
        fh.write(text)


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        return worker(sys.argv[2], sys.argv[3])
    if sys.argv[1:] == ["--functional-check"]:
        return functional_check()
    ap = argparse.ArgumentParser()
    ap.add_argument("--levels", nargs="+", default=["1", "2", "3"])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=180.0,
                    help="seconds per program (with --lower: CPU seconds, default 120 there)")
    ap.add_argument("--markdown", help="write the summary here (default: print)")
    ap.add_argument("--update-doc", metavar="MD", help="replace this tool's section in MD (e.g. docs/coverage.md), "
                                                       "leaving the file's other sections as they are")
    ap.add_argument("--redo", action="store_true", help="discard cached per-program results")
    ap.add_argument("--bundles", metavar="DIR", help="also write one bundle per traced program under DIR")
    ap.add_argument("--lower", action="store_true", help="lower the traced references (see the module docstring)")
    ap.add_argument("--corpora", nargs="+", default=CORPORA, help="corpora under /work/shared/corpus")
    a = ap.parse_args()
    files = []
    for corpus in a.corpora:
        for lv in a.levels:
            d = os.path.join(CORPUS, corpus, f"level{lv}")
            files += sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".py"))
    if a.redo:
        for f in files:
            if os.path.exists(out_path(f)):
                os.remove(out_path(f))
    if a.lower:
        missing = [f for f in files if not os.path.exists(os.path.join(bundle_path(f), "manifest.json"))]
        for f in missing:  # trace again, keeping the bundle this time
            if os.path.exists(out_path(f)):
                os.remove(out_path(f))
        if missing:
            os.environ["DIRIGO_CENSUS_BUNDLES"] = BUNDLES
            run_all(missing, a.jobs, a.timeout)
        if a.redo:
            for f in files:
                if os.path.exists(lower_path(f)):
                    os.remove(lower_path(f))
        if a.timeout == 180.0:
            a.timeout = 120.0
        t0 = time.monotonic()
        md = summarize_lowering(lower_all(files, a.jobs, a.timeout), files, a.timeout)
        if a.update_doc:
            update_section(a.update_doc, md)
        else:
            sys.stdout.write(md)
        print(f"lowering {len(files)} programs took {time.monotonic() - t0:.0f} s", file=sys.stderr)
        return 0
    if a.bundles:
        os.environ["DIRIGO_CENSUS_BUNDLES"] = os.path.abspath(a.bundles)
    t0 = time.monotonic()
    run_all(files, a.jobs, a.timeout)
    md = summarize(files)
    if a.markdown:
        with open(a.markdown, "w") as fh:
            fh.write(md)
    if a.update_doc:
        update_section(a.update_doc, md)
    if not (a.markdown or a.update_doc):
        sys.stdout.write(md)
    print(f"census of {len(files)} programs took {time.monotonic() - t0:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
