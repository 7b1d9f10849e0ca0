"""Trace bundles for mutation substrates without a GPU, and `dirigo check` over their mutants.

A substrate's bundle is assembled as examples/running_example/synthesize.py does: the reference
`Model` is traced on the CPU by dirigo's tracer; the candidate is the kernel launch plan of the
substrate's `dirigo_launches` host mirror (inputs and parameters of the reference, fresh output
buffers from aten::empty, one launch op per kernel) with the substrate's PTX. A mutant's bundle is
the same bundle with ptx/m0.ptx swapped (one trace serves all mutants). A substrate whose bundle was
traced from the real programs (the store's substrate_bundle, scripts/gpu/mutation.sh) needs no mirror:
a copy of that bundle is checked, with each mutant's PTX in the traced module.

    python -m dirigo.mutate_bundle build SUBSTRATE.py PTX OUT_DIR
    python -m dirigo.mutate_bundle check DB WORK [--budget S] [--dirigo PATH] [--limit N] [--only A,B]
                                             [--jobs 1] [--log verdicts.jsonl] [--deadline S] [--hard S]
        # for each substrate in the kill-matrix store: bundle, `dirigo check` of the original and of
        # every runnable unique mutant; verdicts into mutant_class (equivalent = VERIFIED, not precision)
    python -m dirigo.mutate_bundle reconcile DB
        # VERIFIED mutants that a valid input kills (after the kill matrix): not equivalent after all
"""
from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

from . import killmatrix as km

_PY_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_EMPTY_SCHEMA = ("empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, "
                 "Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor")
_TORCH_DTYPE = {"f32": "float32", "f64": "float64", "i32": "int32", "i64": "int64"}


def trace_reference(substrate: str, out_dir: str) -> dict:
    """Traces the substrate's Model on the CPU (load_inline stubbed) and returns the manifest."""
    from . import trace
    with tempfile.TemporaryDirectory() as d:
        ref = os.path.join(d, "ref.py")
        with open(ref, "w") as f:
            f.write(f"import sys\nsys.path.insert(0, {_PY_DIR!r})\n"
                    "from dirigo.killmatrix import load_substrate as _load\n"
                    f"_ns = _load({os.path.abspath(substrate)!r})\n"
                    "get_inputs, get_init_inputs = _ns['get_inputs'], _ns['get_init_inputs']\n\n\n"
                    "class Model(_ns['Model']):\n    pass\n")
        res = trace.trace(ref, None, out_dir, device="cpu")
        if res.status != "ok":
            raise RuntimeError(f"tracing the reference of {substrate} failed: {res.message}")
    return json.load(open(os.path.join(out_dir, "manifest.json")))


def tensor_roles(model, inputs, tensors) -> list[tuple[str, object]]:
    """Per plan tensor: ("input", i), ("parameter", name) or ("fresh", None), matched by storage."""
    ptr = {}
    for i, t in enumerate(inputs):
        if hasattr(t, "data_ptr"):
            ptr.setdefault(t.data_ptr(), ("input", i))
    for name, p in model.named_parameters():
        ptr.setdefault(p.data_ptr(), ("parameter", name))
    return [ptr.get(t.data_ptr(), ("fresh", None)) for t in tensors]


def synthesize(substrate: str, ref_bundle: dict, ptx: str) -> dict:
    ns = km.load_substrate(substrate)
    model, inputs = km.draw(ns, "kernelbench_randn", 0)
    tensors, plan, out_index = km.launch_plan(ns, model, inputs)
    roles = tensor_roles(model, inputs, tensors)
    ref = next(p for p in ref_bundle["programs"] if p["name"] == "ref")
    ref_inputs = [i for i in ref["inputs"] if i["kind"] == "input"]
    by_name = {i["name"]: i for i in ref["inputs"]}
    ref_tensors = {t["id"]: t for t in ref["tensors"]}
    new = {"name": "new", "role": "candidate", "source": f"{os.path.basename(substrate)} (synthesized: mutate_bundle.py)",
           "storages": [], "tensors": [], "inputs": [], "outputs": [], "ops": []}
    for i in ref["inputs"]:
        j = copy.deepcopy(i)
        j.pop("data", None)
        new["inputs"].append(j)
        new["tensors"].append(copy.deepcopy(ref_tensors[i["tensor"]]))
    used = {t["storage"] for t in new["tensors"]}
    new["storages"] = [copy.deepcopy(s) for s in ref["storages"] if s["id"] in used]
    ids = []
    for k, ((role, key), t) in enumerate(zip(roles, tensors)):
        if role == "input":
            ids.append(ref_inputs[key]["tensor"])
        elif role == "parameter":
            if key not in by_name:
                raise ValueError(f"parameter {key} is not an input of the traced reference")
            ids.append(by_name[key]["tensor"])
        else:
            tid, sid = f"k{k}", f"s_k{k}"
            shape = list(t.shape)
            strides, acc = [], 1
            for dim in reversed(shape):
                strides.insert(0, acc)
                acc *= dim
            dt = {"torch.float32": "float32", "torch.int64": "int64", "torch.int32": "int32"}[str(t.dtype)]
            new["storages"].append({"id": sid, "nbytes": t.element_size() * max(acc, 1), "device": "cuda"})
            new["tensors"].append({"id": tid, "storage": sid, "offset": 0, "shape": shape, "strides": strides, "dtype": dt})
            new["ops"].append({"kind": "aten", "name": "aten::empty", "overload": "memory_format", "schema": _EMPTY_SCHEMA,
                               "args": [{"list": [{"scalar": d, "type": "int"} for d in shape]}],
                               "kwargs": {"dtype": {"dtype": dt}}, "outputs": [tid], "mutates": [], "from": "extension"})
            ids.append(tid)
    entries = re.findall(r"\.entry\s+([A-Za-z_$][\w$]*)", ptx)
    for L in plan:
        entry = L["kernel"] if L["kernel"] in entries else next(
            (e for e in entries if e.startswith(f"_Z{len(L['kernel'])}{L['kernel']}")), None)
        if entry is None:
            raise ValueError(f"no PTX entry for kernel {L['kernel']}")
        args = [{"tensor": ids[a["tensor"]], "byte_offset": 0} if "tensor" in a else {"scalar": a["scalar"], "type": a["type"]}
                for a in L["args"]]
        new["ops"].append({"kind": "launch", "module": "m0", "kernel": entry, "grid": L["grid"], "block": L["block"],
                           "shared_bytes": L["shared_bytes"], "args": args, "stream": 0, "source_lines": False})
    out_t = next(t for t in new["tensors"] if t["id"] == ids[out_index])
    ref_out = ref_tensors[ref["outputs"][0]["tensor"]]
    if out_t["shape"] != ref_out["shape"]:
        raise ValueError(f"kernel output shape {out_t['shape']} differs from the reference's {ref_out['shape']}")
    new["outputs"] = [{"name": "out0", "tensor": ids[out_index]}]
    b = copy.deepcopy(ref_bundle)
    b["created_by"] = {"tool": "python/dirigo/mutate_bundle.py",
                       "note": "reference traced on the CPU; candidate = the substrate's launch plan (dirigo_launches) "
                               "with NVRTC PTX (no GPU)"}
    b["modules"] = [{"id": "m0", "path": "ptx/m0.ptx", "sha256": hashlib.sha256(ptx.encode()).hexdigest(),
                     "source": os.path.basename(substrate), "compile": {"arch": "sm_90", "flags": ["nvrtc"]}}]
    b["programs"] = [ref, new]
    b["match"] = {"inputs": [[f"ref.{i['name']}", f"new.{i['name']}"] for i in ref["inputs"]],
                  "outputs": [["ref.out0", "new.out0"]]}
    b.pop("trace_notes", None)
    return b


def build(substrate: str, ptx_path: str, out_dir: str) -> str:
    ptx = open(ptx_path).read()
    with tempfile.TemporaryDirectory() as d:
        ref_bundle = trace_reference(substrate, os.path.join(d, "ref"))
        b = synthesize(substrate, ref_bundle, ptx)
        shutil.rmtree(out_dir, ignore_errors=True)
        os.makedirs(os.path.join(out_dir, "ptx"))
        shutil.copytree(os.path.join(d, "ref", "data"), os.path.join(out_dir, "data"))
    with open(os.path.join(out_dir, "ptx", "m0.ptx"), "w") as f:
        f.write(ptx)
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(b, f, indent=1)
    return out_dir


def swap_ptx(bundle_dir: str, ptx: str, module: str | None = None) -> None:
    """The PTX of `module` (default: the bundle's first) replaced by `ptx`."""
    path = os.path.join(bundle_dir, "manifest.json")
    b = json.load(open(path))
    m = next(x for x in b["modules"] if module is None or x["id"] == module)
    with open(os.path.join(bundle_dir, m.get("path", "ptx/m0.ptx")), "w") as f:
        f.write(ptx)
    m["sha256"] = hashlib.sha256(ptx.encode()).hexdigest()
    with open(path, "w") as f:
        json.dump(b, f, indent=1)


def run_check(dirigo: str, bundle_dir: str, budget: float, jobs: int = 1, hard_s: float = 0) -> tuple[str, str, float]:
    """`dirigo check BUNDLE --full --jobs N`: (outcome, reason, wall seconds)."""
    t0 = time.monotonic()
    try:
        p = subprocess.run([dirigo, "check", bundle_dir, "--json", "--budget", str(budget), "--full", "--jobs", str(jobs)],
                           capture_output=True, text=True, timeout=hard_s or budget * 4 + 60)
    except subprocess.TimeoutExpired:
        return "TIMEOUT", f"dirigo check did not finish in {hard_s or budget * 4 + 60:.0f} s (killed)", time.monotonic() - t0
    try:
        r = json.loads(p.stdout)
        return r.get("outcome", "UNSUPPORTED"), str(r.get("reason", ""))[:500], time.monotonic() - t0
    except json.JSONDecodeError:
        return "UNSUPPORTED", (p.stdout + p.stderr).strip()[-500:], time.monotonic() - t0


def traced_bundle(traced: str, bdir: str) -> str:
    """A copy of the substrate's traced bundle (scripts/gpu/mutation.sh), renewed when the trace changed:
    the mutants' PTX is swapped into the copy, never into the trace."""
    key = hashlib.sha256(open(os.path.join(traced, "manifest.json"), "rb").read()).hexdigest()
    stamp = os.path.join(bdir, ".source_sha256")
    if not (os.path.exists(stamp) and open(stamp).read() == key):
        shutil.rmtree(bdir, ignore_errors=True)
        shutil.copytree(traced, bdir)
        with open(stamp, "w") as f:
            f.write(key)
    return bdir


def cached_bundle(path: str, ptx_path: str, bdir: str) -> str:
    """The substrate's bundle, rebuilt only when the substrate or its PTX changed (tracing takes ~30 s)."""
    key = hashlib.sha256(open(path, "rb").read() + open(ptx_path, "rb").read()).hexdigest()
    stamp = os.path.join(bdir, ".source_sha256")
    if not (os.path.exists(stamp) and open(stamp).read() == key):
        build(path, ptx_path, bdir)
        with open(stamp, "w") as f:
            f.write(key)
    return bdir


def set_launch(bundle_dir: str, launches: list[dict] | None) -> None:
    """Replaces grid/block/shared_bytes of the candidate's launch ops (a host-side mutant's plan), or
    restores them from the pristine copy when `launches` is None."""
    path = os.path.join(bundle_dir, "manifest.json")
    pristine = os.path.join(bundle_dir, "manifest.orig.json")
    if not os.path.exists(pristine):
        shutil.copy(path, pristine)
    b = json.load(open(pristine))
    if launches is not None:
        ops = [o for o in next(p for p in b["programs"] if p["name"] == "new")["ops"] if o["kind"] == "launch"]
        if len(ops) != len(launches):
            raise ValueError(f"{len(launches)} launches in the mutant plan, {len(ops)} in the bundle")
        for op, L in zip(ops, launches):
            op["grid"], op["block"], op["shared_bytes"] = list(L["grid"]), list(L["block"]), L["shared_bytes"]
    with open(path, "w") as f:
        json.dump(b, f, indent=1)


SUBSTRATE_CHECK = ("CREATE TABLE IF NOT EXISTS substrate_check(substrate_id INTEGER PRIMARY KEY REFERENCES "
                   "substrates(id) ON DELETE CASCADE, verdict TEXT, reason TEXT, check_s REAL, budget REAL)")


def record_substrate(con, sid: int, outcome: str, reason: str, secs: float, budget: float) -> None:
    """`dirigo check` on the correct substrate: the verdict protocols' gate in `dirigo score`."""
    with con:
        con.execute(SUBSTRATE_CHECK)
        con.execute("INSERT OR REPLACE INTO substrate_check VALUES(?,?,?,?,?)", (sid, outcome, reason[:500], secs, budget))
        con.execute("UPDATE substrates SET message = ? WHERE id = ?",
                    (f"dirigo check of the original: {outcome} ({secs:.1f} s, budget {budget} s)", sid))


def check_store(db: str, work: str, dirigo: str, budget: float, limit: int, only: list[str] | None = None,
                jobs: int = 1, log_path: str | None = None, deadline_s: float = 0, hard_s: float = 0,
                recheck: bool = False) -> None:
    """Verdicts of `dirigo check` on every unique mutant without one (device mutants: PTX swapped;
    host mutants with a derived plan (`.launch.json` beside the mutant): launch parameters swapped).
    First every substrate's bundle and the check of its original; then the mutants round-robin over
    the substrates (so a deadline leaves every substrate partly covered, not some fully and others not
    at all). Each verdict is committed at once (and appended to `log_path`), so a run resumes."""
    started = time.monotonic()
    con = sqlite3.connect(db, timeout=120)
    con.execute("PRAGMA foreign_keys = ON")
    log = open(log_path, "a") if log_path else None
    queues, bundles = [], {}
    has_traced = con.execute("SELECT name FROM sqlite_master WHERE name = 'substrate_bundle'").fetchone()
    traced = dict(con.execute("SELECT substrate_id, bundle || char(0) || module FROM substrate_bundle "
                              "WHERE module IS NOT NULL").fetchall()) if has_traced else {}
    for sid, path in con.execute("SELECT id, path FROM substrates WHERE status = 'ok' ORDER BY path").fetchall():
        stem = os.path.splitext(os.path.basename(path))[0]
        if only and stem not in only:
            continue
        mut_dir = os.path.join(work, "mutants", stem)
        bdir = os.path.join(work, "bundles", stem)
        orig_ptx = os.path.join(mut_dir, "original.ptx")
        module = None
        try:
            if sid in traced:  # a bundle traced from the real programs: no host mirror
                tdir, module = traced[sid].split("\0")
                traced_bundle(tdir, bdir)
            elif "def dirigo_launches" not in open(path).read():
                print(f"{stem}: not checked: no traced bundle yet and no host mirror", flush=True)
                continue
            else:
                cached_bundle(path, orig_ptx, bdir)
            swap_ptx(bdir, open(orig_ptx).read(), module)
            set_launch(bdir, None)
        except Exception as e:  # noqa: BLE001 - one line per substrate
            print(f"{stem}: UNSUPPORTED bundle: {type(e).__name__}: {e}", flush=True)
            continue
        con.execute(SUBSTRATE_CHECK)
        known = con.execute("SELECT verdict FROM substrate_check WHERE substrate_id = ?", (sid,)).fetchone()
        if known and not recheck:
            print(f"{stem}: original {known[0]} (recorded)", flush=True)
        else:
            outcome, reason, secs = run_check(dirigo, bdir, budget, jobs, hard_s)
            print(f"{stem}: original {outcome} ({secs:.1f} s) {reason[:200]}", flush=True)
            record_substrate(con, sid, outcome, reason, secs, budget)
        rows = con.execute("SELECT m.id, m.ordinal, m.rule, m.family, m.ptx_path, m.source_path, c.runnable "
                           "FROM mutants m JOIN mutant_class c ON c.mutant_id = m.id "
                           "WHERE m.substrate_id = ? AND c.verdict IS NULL ORDER BY m.ordinal", (sid,)).fetchall()
        rows = [r for r in rows if r[6] or os.path.exists(os.path.splitext(r[5] or "")[0] + ".launch.json")]
        # a fixed pseudo-random order (rules are registered family by family): a deadline leaves a sample
        # of every family checked, not the first families only
        rows.sort(key=lambda r: hashlib.sha256(f"{stem}/{r[1]}".encode()).hexdigest())
        queues.append((stem, rows[:limit] if limit else rows))
        bundles[stem] = (bdir, orig_ptx, module)
    counts: dict[str, int] = {}
    done = 0
    while any(q for _, q in queues):
        for stem, q in queues:
            if not q:
                continue
            if deadline_s and time.monotonic() - started > deadline_s:
                print(f"deadline: {done} mutants checked, {sum(len(q) for _, q in queues)} left unchecked", flush=True)
                return
            mid, ordinal, rule, family, ptx_path, src_path, runnable = q.pop(0)
            bdir, orig_ptx, module = bundles[stem]
            try:
                if not runnable:
                    swap_ptx(bdir, open(orig_ptx).read(), module)
                    set_launch(bdir, json.load(open(os.path.splitext(src_path)[0] + ".launch.json"))["launches"])
                else:
                    set_launch(bdir, None)
                    swap_ptx(bdir, open(ptx_path).read(), module)
                v, why, secs = run_check(dirigo, bdir, budget, jobs, hard_s)
            except Exception as e:  # noqa: BLE001 - recorded as the verdict's reason
                v, why, secs = "UNSUPPORTED", f"mutant bundle: {type(e).__name__}: {e}", 0.0
            counts[v] = counts.get(v, 0) + 1
            done += 1
            with con:
                con.execute("UPDATE mutant_class SET verdict = ?, verdict_reason = ?, check_s = ?, equivalent = ? "
                            "WHERE mutant_id = ?", (v, why, secs, int(v == "VERIFIED" and family != "precision"), mid))
            if log:
                log.write(json.dumps({"substrate": stem, "ordinal": ordinal, "rule": rule, "family": family,
                                      "verdict": v, "seconds": round(secs, 3), "reason": why[:200]}) + "\n")
                log.flush()
            if done % 50 == 0:
                print(f"[{time.monotonic() - started:.0f} s] {done} mutants: {counts}", flush=True)
    for bdir, orig_ptx, module in bundles.values():
        set_launch(bdir, None)
        swap_ptx(bdir, open(orig_ptx).read(), module)
    print(f"all {done} mutants checked: {counts}", flush=True)


def reconcile(db: str, tol: float = 1e-2) -> int:
    """A VERIFIED mutant that some valid input kills (any source) is not equivalent: dirigo's proof
    was wrong there (an unsound verdict, reported). Clears `equivalent` and notes the witness."""
    con = sqlite3.connect(db, timeout=120)
    rows = con.execute("""
        SELECT r.mutant_id, MIN(i.name || ' (' || r.source || ')') FROM runs r
          JOIN runs s ON s.input_id = r.input_id AND s.mutant_id IS NULL AND s.source = r.source
            AND s.status = 'ok' AND s.t_eq <= ?
          JOIN mutant_class c ON c.mutant_id = r.mutant_id JOIN inputs i ON i.id = r.input_id
        WHERE c.verdict = 'VERIFIED' AND c.equivalent = 1 AND r.status = 'ok' AND (r.t_eq > ? OR r.nonfinite_mismatch > 0)
        GROUP BY r.mutant_id""", (tol, tol)).fetchall()
    with con:
        for mid, witness in rows:
            con.execute("UPDATE mutant_class SET equivalent = 0, verdict_reason = verdict_reason || ? WHERE mutant_id = ?",
                        (f" [VERIFIED but killed by {witness}: not equivalent; an unsound verdict]", mid))
    return len(rows)


def main(argv: list[str]) -> int:
    if argv[:1] == ["reconcile"] and len(argv) == 2:
        print(f"{reconcile(argv[1])} VERIFIED mutants witnessed by a valid input: equivalent cleared")
        return 0
    if argv[:1] == ["build"] and len(argv) == 4:
        print(build(argv[1], argv[2], argv[3]))
        return 0
    if argv[:1] == ["check"] and len(argv) >= 3:
        opts = {"--budget": "10", "--dirigo": "build-mutate/dirigo", "--limit": "0", "--only": "", "--jobs": "1",
                "--log": "", "--deadline": "0", "--hard": "0"}
        rest = argv[3:]
        for k, v in zip(rest[::2], rest[1::2]):
            if k not in opts:
                print(f"unknown option {k}", file=sys.stderr)
                return 64
            opts[k] = v
        check_store(argv[1], argv[2], opts["--dirigo"], float(opts["--budget"]), int(opts["--limit"]),
                    [s for s in opts["--only"].split(",") if s] or None, int(opts["--jobs"]), opts["--log"] or None,
                    float(opts["--deadline"]), float(opts["--hard"]))
        return 0
    print(__doc__, file=sys.stderr)
    return 64


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
