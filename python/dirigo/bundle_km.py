"""The kill matrix without a host mirror: substrates launched by replaying their traced bundle.

A substrate directory holds `ref.py` (the PyTorch reference: Model, get_inputs, get_init_inputs),
`new.py` (the KernelBench-style solution: ModelNew with load_inline CUDA) and `bundle/` (the trace
of new.py against ref.py, `dirigo bundle` on a GPU). Mutants come from `dirigo mutate` on a copy of
new.py named after the directory; every program (substrate, device mutant, host-side mutant with a
derived launch) runs by replaying the bundle's candidate op list (python/dirigo/bundle_run.py) on
every input of the pool, compared with the fp64 and fp32 PyTorch references (store columns as in
docs/mutation.md "Kill-matrix store").

    python -m dirigo.bundle_km prep DB WORK SUBSTRATE_DIR...   # mutate, inputs; attach the bundle if traced
    python -m dirigo.bundle_km attach DB                       # bundles traced since: module, host plans
    python -m dirigo.bundle_km run DB WORK [--device cpu|cuda] [--only NAME,...] [--limit N] [--deadline S]
                                            [--inputs N] [--jsonl ROWS.jsonl]
    python -m dirigo.bundle_km import DB ROWS.jsonl          # rows of a --jsonl run (the GPU's) into the store
    python -m dirigo.bundle_km list DB                       # name and directory of every substrate
    python -m dirigo.bundle_km pack DB WORK OUT.tar.gz       # what scripts/gpu/mutation.sh needs (carry/)
    python -m dirigo.bundle_km unpack-gpu DB RESULT_DIR      # its bundles into place, its rows into DB
    python -m dirigo.witness_inputs search DB WORK ...       # the kill-witness search (witness_inputs.py)
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time

import numpy as np

from . import bundle_run as br
from . import killmatrix as km
from . import killmatrix_host as kh

SCHEMA = """
CREATE TABLE IF NOT EXISTS substrate_bundle(
  substrate_id INTEGER PRIMARY KEY REFERENCES substrates(id) ON DELETE CASCADE,
  reference TEXT NOT NULL, bundle TEXT NOT NULL, candidate TEXT, module TEXT, origin TEXT, gate_json TEXT);
CREATE TABLE IF NOT EXISTS harness_runs(
  protocol TEXT NOT NULL, substrate_id INTEGER NOT NULL REFERENCES substrates(id) ON DELETE CASCADE,
  mutant_id INTEGER REFERENCES mutants(id) ON DELETE CASCADE, verdict TEXT NOT NULL, compiled INTEGER,
  ms REAL, detail TEXT, UNIQUE(protocol, substrate_id, mutant_id));
"""


def connect(db: str) -> sqlite3.Connection:
    con = sqlite3.connect(db, timeout=120)
    con.executescript(SCHEMA)
    return con


# ---------------------------------------------------------------------------------------------------------
# Programs: the reference module, the candidate's parameters, the bundle

def exec_file(path: str, stub_extensions: bool = True) -> dict:
    """A program file's globals, with load_inline (and friends) stubbed: nothing is compiled."""
    from .state import _stub_extensions
    ns: dict = {"__name__": "dirigo_bkm_" + os.path.splitext(os.path.basename(path))[0], "__file__": os.path.abspath(path)}
    built: list = []
    text = open(path).read()
    if stub_extensions:
        with _stub_extensions(built):
            exec(compile(text, os.path.abspath(path), "exec"), ns)
    else:
        exec(compile(text, os.path.abspath(path), "exec"), ns)
    return ns


class Substrate:
    """A substrate of the store with its reference, candidate source and bundle."""

    def __init__(self, con: sqlite3.Connection, sid: int):
        row = con.execute("SELECT s.path, b.reference, b.bundle, b.candidate, b.module FROM substrates s "
                          "JOIN substrate_bundle b ON b.substrate_id = s.id WHERE s.id = ?", (sid,)).fetchone()
        if row is None:
            raise ValueError(f"substrate {sid} has no bundle (run bundle_km prep)")
        self.id = sid
        self.path, self.reference, self.bundle, self.candidate, self.module = row
        self.name = os.path.splitext(os.path.basename(self.path))[0]
        self.program = br.BundleProgram(self.bundle)
        self.ref_ns = exec_file(self.reference, stub_extensions=False)
        self.new_ns = exec_file(self.path)
        for need in ("Model", "get_inputs", "get_init_inputs"):
            if need not in self.ref_ns:
                raise ValueError(f"{self.reference} defines no {need}")
        if "ModelNew" not in self.new_ns:
            raise ValueError(f"{self.path} defines no ModelNew")

    def draw(self, distribution: str, seed: int, shape_scale: dict | None = None):
        """(reference model, candidate model, inputs) as KernelBench builds them under `seed`, with the
        floating-point inputs replaced for a distribution other than kernelbench_randn."""
        import torch
        from .distributions import distribute
        torch.manual_seed(seed)
        inputs = list(self.ref_ns["get_inputs"]())
        init = list(self.ref_ns["get_init_inputs"]())
        torch.manual_seed(seed)
        ref = self.ref_ns["Model"](*init).eval()
        torch.manual_seed(seed)
        new = self.new_ns["ModelNew"](*init).eval()
        gen = torch.Generator().manual_seed(seed)
        inputs = [distribute(t, distribution, gen) if isinstance(t, torch.Tensor) and t.is_floating_point() else t
                  for t in inputs]
        return ref, new, inputs

    def bindings(self, new_model, inputs, device: str) -> dict:
        import torch
        names = self.program.input_names("input")
        tensors = [t for t in inputs]
        if len(names) > len(tensors):
            raise ValueError(f"the bundle has {len(names)} inputs, get_inputs() gives {len(tensors)}")
        b = {n: (t.to(device) if isinstance(t, torch.Tensor) else t) for n, t in zip(names, tensors)}
        state = dict(new_model.named_parameters())
        state.update(dict(new_model.named_buffers()))
        for n in self.program.input_names("parameter") + self.program.input_names("buffer"):
            if n not in state:
                raise ValueError(f"the bundle's {n} is not a parameter or buffer of ModelNew")
            b[n] = state[n].detach().to(device)
        return b


def references(ref_model, inputs, device: str = "cpu"):
    """fp64 and fp32 reference outputs, flat float64: numpy arrays on the CPU; on a GPU both run there and
    stay there as tensors (KernelBench's fp32 reference is the GPU's; fp64 on the CPU would take minutes at
    KernelBench's shapes, and copying every run's output back would cost more than the run)."""
    if device == "cpu":
        return km.references(ref_model, inputs)
    import copy
    import torch
    with torch.no_grad():
        m = copy.deepcopy(ref_model).to(device)
        dev_in = [t.to(device) if isinstance(t, torch.Tensor) else t for t in inputs]
        r32 = m(*dev_in)
        r64 = m.double()(*[t.double() if isinstance(t, torch.Tensor) and t.is_floating_point() else t for t in dev_in])
    if isinstance(r64, (tuple, list)):
        raise ValueError("references with several outputs are not supported by the kill matrix")
    return r64.detach().reshape(-1).double(), r32.detach().reshape(-1).double()


def metrics_on_device(out, ref64, ref32) -> dict:
    """killmatrix.metrics computed where the tensors are (the same four numbers, in float64)."""
    import torch
    out = out.detach().reshape(-1).double()
    finite, out_finite = torch.isfinite(ref64), torch.isfinite(out)
    bad = int(torch.count_nonzero(finite & ~out_finite))
    both = finite & out_finite
    zero = torch.zeros((), dtype=torch.float64, device=out.device)
    err = torch.where(both, (out - ref64).abs(), zero)
    t_eq = float(torch.where(both, err / (1 + ref64.abs()), zero).max()) if out.numel() else 0.0
    f32 = both & torch.isfinite(ref32)
    t_eq32 = float(torch.where(f32, (out - ref32).abs() / (1 + ref32.abs()), zero).max()) if out.numel() else 0.0
    max_abs = float(err.max()) if out.numel() else 0.0
    if bad:
        t_eq = t_eq32 = float("inf")
    return {"t_eq": t_eq, "t_eq32": t_eq32, "max_abs": max_abs, "nonfinite_mismatch": bad}


# ---------------------------------------------------------------------------------------------------------
# Host-side mutants: the recorded launch re-evaluated through the mutated host code

class _Shape:
    """A tensor of the host code, known by its traced shape (`x.size(0)`, `x.numel()`, `x.dim()`)."""

    def __init__(self, shape):
        self.shape = list(shape)

    def size(self, k=None):
        return self.shape if k is None else self.shape[k]

    def numel(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    def dim(self):
        return len(self.shape)

    def contiguous(self):
        return self


def host_env(source: str, program: br.BundleProgram) -> dict:
    """Names of the host code bound from the trace: a launch's pointer argument written `NAME.data_ptr...`
    binds NAME to the traced tensor's shape."""
    import re
    env = {}
    launches = program.launches
    for L in launches:
        name = br.source_name(L["kernel"])
        m = re.search(rf"\b{re.escape(name)}\s*(?:<[^<>;]*>)?\s*<<<[^;]*?>>>\s*\(", source)
        if not m:
            continue
        end = source.find(";", m.end())
        args = kh._split_top(source[m.end():source.rfind(")", m.end(), end)])
        if len(args) != len(L["args"]):
            continue
        for text, a in zip(args, L["args"]):
            dm = re.match(r"\s*(?:\([^()]*\)\s*)?([A-Za-z_]\w*)\s*\.\s*(?:data_ptr|data)\b", text)
            if dm and "tensor" in a:
                env.setdefault(dm.group(1), _Shape(program.tensors[a["tensor"]]["shape"]))
    return env


def host_plan(substrate_src: str, mutant_src: str, program: br.BundleProgram) -> dict:
    """{"launches": {index: {grid, block, shared_bytes}}, "same_as_original"} for a host mutant; raises
    killmatrix_host.HostPlanError when the original's host code does not evaluate to the recorded launch."""
    plan = []
    for L in program.launches:
        plan.append({"kernel": br.source_name(L["kernel"]), "grid": (list(L["grid"]) + [1, 1, 1])[:3],
                     "block": (list(L["block"]) + [1, 1, 1])[:3], "shared_bytes": int(L.get("shared_bytes", 0)),
                     "args": [{"scalar": a["scalar"], "type": a["type"]} if "scalar" in a else {"tensor": 0}
                              for a in L["args"]]})
    text = open(substrate_src).read()
    env = host_env(text, program)
    original = kh.launches_in_source(text, plan, env)
    for o, L in zip(original, plan):
        if (o["grid"], o["block"], o["shared_bytes"]) != (L["grid"], L["block"], L["shared_bytes"]):
            raise kh.HostPlanError(f"the host code evaluates to {o} for {L['kernel']}, the trace recorded "
                                   f"grid {L['grid']} block {L['block']} shared {L['shared_bytes']}")
    mutated = kh.launches_in_source(open(mutant_src).read(), plan, env)
    out = {str(k): m for k, m in enumerate(mutated)}
    same = all((m["grid"], m["block"], m["shared_bytes"]) == (L["grid"], L["block"], L["shared_bytes"])
               for L, m in zip(plan, mutated))
    return {"launches": out, "same_as_original": same}


# ---------------------------------------------------------------------------------------------------------
# prep

def _dirigo() -> str:
    return br._dirigo_binary()


def attach(con: sqlite3.Connection, sid: int) -> str:
    """Links a substrate to its bundle once it exists: the kernel module to replace and the launch plans
    of its host-side mutants (the recorded launch re-evaluated through the mutated host code). Returns a
    one-line summary; raises ReplayUnsupported when the bundle cannot be replayed."""
    path, bundle = con.execute("SELECT s.path, b.bundle FROM substrates s JOIN substrate_bundle b ON "
                               "b.substrate_id = s.id WHERE s.id = ?", (sid,)).fetchone()
    if not os.path.exists(os.path.join(bundle, "manifest.json")):
        raise br.ReplayUnsupported(f"no bundle at {bundle} yet (trace it on a GPU: scripts/gpu/mutation.sh)")
    program = br.BundleProgram(bundle)
    if len(program.modules) != 1:
        raise br.ReplayUnsupported(f"the bundle has {len(program.modules)} kernel modules (one is replayed)")
    module = next(iter(program.modules))
    n_host = n_plan = 0
    for mid, rule, spath in con.execute("SELECT id, rule, source_path FROM mutants WHERE substrate_id = ? AND "
                                        "status = 'unique' ORDER BY ordinal", (sid,)).fetchall():
        if rule not in kh.HOST_RULES:
            continue
        n_host += 1
        plan_path = os.path.splitext(spath)[0] + ".launch.json"
        try:
            res = host_plan(path, spath, program)
            with open(plan_path, "w") as f:
                json.dump(res, f, indent=1)
            reason = "host-side launch mutant: recorded launch re-evaluated " + json.dumps(
                [[v["grid"], v["block"], v["shared_bytes"]] for v in res["launches"].values()])
            if res["same_as_original"]:
                reason += " (same as the original's at these shapes)"
            runnable = 1
            n_plan += 1
        except (kh.HostPlanError, OSError) as e:
            reason, runnable = f"host-side launch mutant without a plan: {e}", 0
            if os.path.exists(plan_path):
                os.remove(plan_path)
        with con:
            con.execute("UPDATE mutant_class SET runnable = ?, reason = ? WHERE mutant_id = ?", (runnable, reason[:500], mid))
    with con:
        con.execute("UPDATE substrate_bundle SET module = ? WHERE substrate_id = ?", (module, sid))
    return f"module {module}, {n_host} host-side mutants, {n_plan} with a launch plan"


def prep(db: str, work: str, dirs: list[str], dirigo: str | None = None, origin: str = "", jobs: int = 1,
         compile_mutants: bool = True) -> int:
    """Registers each substrate directory: mutate its new.py (a copy named after the directory), link
    its reference and bundle (attached now if it exists, else once traced), record the input pool."""
    status = 0
    os.makedirs(os.path.join(work, "src"), exist_ok=True)
    for d in dirs:
        d = os.path.relpath(d.rstrip("/"))  # paths in the store stay relative: the GPU machine's root differs
        name = os.path.basename(d)
        ref, new, bundle = (os.path.join(d, f) for f in ("ref.py", "new.py", "bundle"))
        missing = [p for p in (ref, new) if not os.path.exists(p)]
        if missing:
            print(f"UNSUPPORTED: {d}: missing {', '.join(missing)}")
            status = 4
            continue
        src = os.path.relpath(os.path.join(work, "src", name + ".py"))
        shutil.copyfile(new, src)
        rc = subprocess.run([dirigo or _dirigo(), "mutate", "-q", f"-j{jobs}", "--db", db, "--out",
                             os.path.join(work, "mutants"), src] + ([] if compile_mutants else ["--no-compile"]),
                            stdout=subprocess.DEVNULL).returncode
        con = connect(db)
        row = con.execute("SELECT id, status, message FROM substrates WHERE path = ?", (src,)).fetchone()
        if rc != 0 or row is None or row[1] != "ok":
            print(f"UNSUPPORTED: {d}: dirigo mutate: {row[2] if row else f'exit {rc}'}")
            status = 4
            con.close()
            continue
        sid = row[0]
        with con:
            con.execute("INSERT OR REPLACE INTO substrate_bundle(substrate_id, reference, bundle, candidate, origin) "
                        "VALUES(?,?,?,?,?)", (sid, ref, bundle, new, origin))
            for (mid, rule) in con.execute("SELECT id, rule FROM mutants WHERE substrate_id = ? AND status = 'unique'",
                                           (sid,)).fetchall():
                host = rule in kh.HOST_RULES
                con.execute("INSERT OR REPLACE INTO mutant_class(mutant_id, substrate_id, runnable, reason) VALUES(?,?,?,?)",
                            (mid, sid, 0 if host else 1, "host-side launch mutant: no bundle attached yet" if host else None))
            con.execute("DELETE FROM inputs WHERE substrate_id = ?", (sid,))
            for item in km.input_plan():
                con.execute("INSERT INTO inputs(substrate_id, name, problem, distribution, seed, family, spec_json) "
                            "VALUES(?,?,?,?,?,?,?)", (sid, item["name"], name, item["distribution"], item["seed"],
                                                      item["family"], json.dumps({"replay": True})))
        n = con.execute("SELECT COUNT(*) FROM mutants WHERE substrate_id = ? AND status = 'unique'", (sid,)).fetchone()[0]
        try:
            linked = attach(con, sid)
        except (br.ReplayUnsupported, KeyError, ValueError) as e:
            linked = f"not attached: {e}"
        print(f"{name}: {n} unique mutants, {len(km.input_plan())} inputs; {linked}")
        con.close()
    return status


# ---------------------------------------------------------------------------------------------------------
# run

def programs_of(con, sub: Substrate, work: str, only_missing_source: str | None = None) -> list[dict]:
    """The substrate (mutant_id None) and its runnable unique mutants: PTX path and launch overrides."""
    orig = os.path.join(work, "mutants", sub.name, "original.ptx")
    progs = [{"mutant_id": None, "ptx": orig, "overrides": None, "label": "original"}]
    for mid, ordinal, rule, ptx, spath in con.execute(
            "SELECT m.id, m.ordinal, m.rule, m.ptx_path, m.source_path FROM mutants m JOIN mutant_class c ON "
            "c.mutant_id = m.id WHERE m.substrate_id = ? AND m.status = 'unique' AND c.runnable = 1 ORDER BY m.ordinal",
            (sub.id,)).fetchall():
        over = None
        if rule in kh.HOST_RULES:
            plan = json.load(open(os.path.splitext(spath)[0] + ".launch.json"))
            over = {int(k): v for k, v in plan["launches"].items()}
            ptx = orig
        progs.append({"mutant_id": mid, "ptx": ptx, "overrides": over, "label": f"m{ordinal:04d}_{rule}"})
    return progs


def run_one(sub: Substrate, prog: dict, case: dict, launcher, device: str) -> dict:
    """One (program, input) run: the store's run columns."""
    t0 = time.perf_counter()
    row = {"status": "crash", "t_eq": None, "t_eq32": None, "max_abs": None, "nonfinite_mismatch": None, "detail": ""}
    try:
        outs = sub.program.run(case["bindings"](), launcher, device, {sub.module: prog["ptx"]}, prog["overrides"])
        ref64 = case["ref64"]
        n_ref = ref64.size if isinstance(ref64, np.ndarray) else ref64.numel()
        if outs[0].numel() != n_ref:
            row["detail"] = f"output has {outs[0].numel()} elements, the reference {n_ref}"
        elif isinstance(ref64, np.ndarray):
            out = outs[0].detach().double().cpu().reshape(-1).numpy()
            row.update(km.metrics(out, ref64, case["ref32"]), status="ok")
        else:
            row.update(metrics_on_device(outs[0], ref64, case["ref32"]), status="ok")
    except br.LaunchFailed as e:
        row.update(status=e.status, detail=e.detail[:500])
    except Exception as e:  # noqa: BLE001 - an ATen op of the replay failed on these inputs: a crash row
        row["detail"] = f"replay: {type(e).__name__}: {str(e)[:300]}"
    row["ms"] = (time.perf_counter() - t0) * 1e3
    return row


def apply_witness(sub: Substrate, ref_model, new_model, inputs: list, leaves: list[dict]) -> None:
    """Writes a dirigo witness's leaves (docs/check.md "Witness") into a draw: forward arguments by the
    reference's input names (in order), parameters and buffers by name in both models. Raises
    ValueError for a leaf replay would have to carry back (trimmed, external)."""
    import torch
    ref_prog = next((p for p in sub.program.manifest["programs"] if p.get("role") == "reference"),
                    sub.program.manifest["programs"][0])
    arg_names = [i["name"] for i in ref_prog["inputs"] if i.get("kind", "input") == "input"]
    with torch.no_grad():
        for leaf in leaves:
            kind, idx, value = leaf["kind"], tuple(int(i) for i in leaf["index"]), float(leaf["value"])
            if kind == "input":
                if leaf["input"] not in arg_names:
                    raise ValueError(f"witness input {leaf['input']} is not a forward argument")
                inputs[arg_names.index(leaf["input"])][idx] = value
            elif kind in ("parameter", "buffer"):
                for model, name in ((ref_model, leaf["input"]), (new_model, leaf.get("candidate_input", leaf["input"]))):
                    if leaf.get("program") in ("reference", "candidate") and \
                            (model is ref_model) != (leaf["program"] == "reference"):
                        continue
                    state = dict(model.named_parameters())
                    state.update(dict(model.named_buffers()))
                    if name in state:
                        state[name][idx] = value
            else:
                raise ValueError(f"a {kind} witness leaf (replay would carry it back)")


def make_case(sub: Substrate, distribution: str, seed: int, device: str, witness: list | None = None) -> dict:
    ref_model, new_model, inputs = sub.draw(distribution, seed)
    if witness:
        apply_witness(sub, ref_model, new_model, inputs, witness)
    ref64, ref32 = references(ref_model, inputs, device)
    import torch

    placed = sub.bindings(new_model, inputs, device)  # moved to the device once per input, cloned per run

    def bindings():
        return {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in placed.items()}
    return {"bindings": bindings, "ref64": ref64, "ref32": ref32, "inputs": inputs}


def _insert_run(con, sid, mutant_id, input_id, source, r):
    con.execute("DELETE FROM runs WHERE substrate_id = ? AND input_id = ? AND source = ? AND mutant_id IS ?",
                (sid, input_id, source, mutant_id))
    con.execute("INSERT INTO runs(substrate_id, mutant_id, input_id, source, status, t_eq, t_eq32, max_abs, "
                "nonfinite_mismatch, ms, detail) VALUES(?,?,?,?,?,?,?,?,?,?,?)",
                (sid, mutant_id, input_id, source, r["status"], r["t_eq"], r["t_eq32"], r["max_abs"],
                 r["nonfinite_mismatch"], r["ms"], r["detail"]))


def substrates_of(con, only: str = "") -> list[int]:
    names = {n for n in only.split(",") if n}
    out = []
    for sid, path in con.execute("SELECT s.id, s.path FROM substrates s JOIN substrate_bundle b ON b.substrate_id = s.id "
                                 "ORDER BY s.id").fetchall():
        if not names or os.path.splitext(os.path.basename(path))[0] in names:
            out.append(sid)
    return out


class DbSink:
    """Run rows straight into the store."""

    def __init__(self, con, source):
        self.con, self.source = con, source

    def done(self, sid):
        return {(m, i) for m, i in self.con.execute("SELECT mutant_id, input_id FROM runs WHERE substrate_id = ? AND "
                                                    "source = ?", (sid, self.source)).fetchall()}

    def failed(self, sid):
        return {m for (m,) in self.con.execute("SELECT DISTINCT mutant_id FROM runs WHERE substrate_id = ? AND source = ? "
                                               "AND status IN ('crash', 'timeout')", (sid, self.source))}

    def start(self, sid, prog, input_id):
        pass

    def put(self, sid, prog, input_id, r):
        with self.con:
            _insert_run(self.con, sid, prog["mutant_id"], input_id, self.source, r)


class JsonlSink:
    """Run rows as JSON lines keyed by (substrate path, mutant ordinal, input name), for a machine that
    only reads the store (the GPU call; `import` puts them in). A `start` line precedes each run: a
    process killed in a hang leaves it dangling, and the next process records that run as a timeout."""

    def __init__(self, con, source, path):
        self.con, self.source, self.path = con, source, path
        self.rows, self.dangling, self.bad = set(), [], set()
        open_start = {}
        if os.path.exists(path):
            for line in open(path):
                try:
                    j = json.loads(line)
                except ValueError:
                    continue  # a line cut by a kill
                key = (j["substrate"], j["ordinal"], j["input"])
                if j.get("start"):
                    open_start[key] = j
                else:
                    open_start.pop(key, None)
                    self.rows.add(key)
                    if j.get("status") in ("crash", "timeout"):
                        self.bad.add((j["substrate"], j["ordinal"]))
        self.dangling = list(open_start.values())
        self.f = open(path, "a")
        self.names: dict = {}

    def _names(self, sid):
        if sid not in self.names:
            path = self.con.execute("SELECT path FROM substrates WHERE id = ?", (sid,)).fetchone()[0]
            ords = dict(self.con.execute("SELECT id, ordinal FROM mutants WHERE substrate_id = ?", (sid,)).fetchall())
            ins = dict(self.con.execute("SELECT id, name FROM inputs WHERE substrate_id = ?", (sid,)).fetchall())
            self.names[sid] = (path, ords, ins)
        return self.names[sid]

    def _key(self, sid, mutant_id, input_id):
        path, ords, ins = self._names(sid)
        return path, (None if mutant_id is None else ords[mutant_id]), ins[input_id]

    def done(self, sid):
        path, ords, ins = self._names(sid)
        by_ord = {v: k for k, v in ords.items()}
        by_in = {v: k for k, v in ins.items()}
        known = lambda o, i: i in by_in and (o is None or o in by_ord)  # noqa: E731
        ids = lambda o, i: (None if o is None else by_ord[o], by_in[i])  # noqa: E731
        out = {ids(o, i) for (p, o, i) in self.rows if p == path and known(o, i)}
        for j in [j for j in self.dangling if j["substrate"] == path and known(j["ordinal"], j["input"])]:
            self._write(dict(j, start=False, status="timeout", t_eq=None, t_eq32=None, max_abs=None,
                             nonfinite_mismatch=None, ms=None, detail="hung: the process was killed"))
            out.add(ids(j["ordinal"], j["input"]))
            self.bad.add((path, j["ordinal"]))
            self.dangling.remove(j)
        return out

    def failed(self, sid):
        path, ords, _ = self._names(sid)
        by_ord = {v: k for k, v in ords.items()}
        return {None if o is None else by_ord.get(o) for (p, o) in self.bad if p == path}

    def _write(self, j):
        self.f.write(json.dumps(j) + "\n")
        self.f.flush()

    def start(self, sid, prog, input_id):
        path, o, i = self._key(sid, prog["mutant_id"], input_id)
        self._write({"substrate": path, "ordinal": o, "input": i, "start": True, "source": self.source})

    def put(self, sid, prog, input_id, r):
        path, o, i = self._key(sid, prog["mutant_id"], input_id)
        self._write(dict(r, substrate=path, ordinal=o, input=i, source=self.source))


def import_rows(db: str, jsonl: str) -> dict:
    """Rows of a JsonlSink into the store (the last row of a key wins; start lines are skipped)."""
    con = connect(db)
    rows = {}
    for line in open(jsonl):
        try:
            j = json.loads(line)
        except ValueError:
            continue
        if not j.get("start"):
            rows[(j["substrate"], j["ordinal"], j["input"], j["source"])] = j
    counts = {"imported": 0, "unknown": 0}
    with con:
        for (path, ordinal, input_name, source), j in rows.items():
            sub = con.execute("SELECT id FROM substrates WHERE path = ?", (path,)).fetchone()
            inp = sub and con.execute("SELECT id FROM inputs WHERE substrate_id = ? AND name = ?", (sub[0], input_name)).fetchone()
            mid = None
            if sub and ordinal is not None:
                m = con.execute("SELECT id FROM mutants WHERE substrate_id = ? AND ordinal = ?", (sub[0], ordinal)).fetchone()
                mid = m[0] if m else -1
            if not sub or not inp or mid == -1:
                counts["unknown"] += 1
                continue
            _insert_run(con, sub[0], mid, inp[0], source, j)
            counts["imported"] += 1
    return counts


def run(db: str, work: str, device: str = "cpu", only: str = "", limit: int = 0, deadline: float = 0,
        max_ms: float = 3000, dirigo: str | None = None, resume: bool = True, max_inputs: int = 0,
        jsonl: str | None = None) -> dict:
    source = "gpu" if device == "cuda" else "cpu"
    con = connect(db)
    sink = JsonlSink(con, source, jsonl) if jsonl else DbSink(con, source)
    launcher = br.make_launcher(device, dirigo, max_ms)
    t_end = time.monotonic() + deadline if deadline else None
    counts: dict = {}
    try:
        for sid in substrates_of(con, only):
            if con.execute("SELECT module FROM substrate_bundle WHERE substrate_id = ?", (sid,)).fetchone()[0] is None:
                try:
                    attach(con, sid)
                except (br.ReplayUnsupported, KeyError, ValueError) as e:
                    print(f"skipped substrate {sid}: {e}", flush=True)
                    continue
            sub = Substrate(con, sid)
            inputs = con.execute("SELECT id, name, distribution, seed FROM inputs WHERE substrate_id = ? AND "
                                 "family != 'search' ORDER BY id", (sid,)).fetchall()
            if max_inputs:
                inputs = inputs[:max_inputs]
            done = sink.done(sid) if resume else set()
            failed = sink.failed(sid) if resume else set()
            progs = programs_of(con, sub, work)
            for p in progs:  # a crash or timeout quarantines a program: its later inputs are not run
                p["failed"] = "crash" if p["mutant_id"] in failed else None
            if limit:
                progs = progs[:limit + 1]
            for input_id, name, dist, seed in inputs:
                if t_end and time.monotonic() > t_end:
                    break
                todo = [p for p in progs if (p["mutant_id"], input_id) not in done]
                if not todo:
                    continue
                case = make_case(sub, dist, seed, device)
                for p in todo:
                    if t_end and time.monotonic() > t_end:
                        break
                    if p.get("failed"):  # a loop that no longer ends does so again; a fault quarantines
                        r = {"status": p["failed"], "t_eq": None, "t_eq32": None, "max_abs": None,
                             "nonfinite_mismatch": None, "ms": 0,
                             "detail": "not run: crashed or timed out on an earlier input"}
                        sink.put(sid, p, input_id, r)
                        continue
                    sink.start(sid, p, input_id)
                    r = run_one(sub, p, case, launcher, device)
                    p["failed"] = r["status"] if r["status"] in ("timeout", "crash") else None
                    sink.put(sid, p, input_id, r)
                    key = ("substrate " if p["mutant_id"] is None else "mutant ") + r["status"]
                    counts[key] = counts.get(key, 0) + 1
                    if r["status"] == "crash" and device == "cuda" and r["detail"].startswith("CUDA error"):
                        print(f"{sub.name}: {r['detail']} on {p['label']}: the context is lost, exiting", flush=True)
                        raise SystemExit(3)  # the runner starts a fresh process, which resumes
            print(f"{sub.name}: {counts}", flush=True)
    finally:
        launcher.close()
    return counts


def listing(db: str) -> list[tuple[str, str]]:
    """(name, substrate directory) of every registered substrate."""
    con = connect(db)
    out = []
    for sid in substrates_of(con):
        path, ref = con.execute("SELECT s.path, b.reference FROM substrates s JOIN substrate_bundle b ON "
                                "b.substrate_id = s.id WHERE s.id = ?", (sid,)).fetchone()
        out.append((os.path.splitext(os.path.basename(path))[0], os.path.dirname(ref)))
    return out


def _kit_libs(binary: str) -> list[str]:
    """The shared libraries the dirigo binary needs beyond glibc and libstdc++ (the GPU host has no Z3)."""
    out = []
    for line in subprocess.run(["ldd", binary], capture_output=True, text=True).stdout.splitlines():
        parts = line.split("=>")
        if len(parts) == 2 and parts[1].strip().startswith("/"):
            path = parts[1].split("(")[0].strip()
            if any(k in os.path.basename(path) for k in ("libz3", "libgmp", "libfmt", "libsqlite3")):
                out.append(path)
    return out


def pack(db: str, work: str, out: str, kit: str | None = None) -> dict:
    """carry/: a copy of the store and every file its substrates need (relative paths kept), as .tar.gz;
    with `kit` (a dirigo binary) also carry/kit/bin/dirigo.real and the libraries it needs."""
    import tarfile
    con = connect(db)
    files = set()
    for sid in substrates_of(con):
        path, ref, new, bundle = con.execute("SELECT s.path, b.reference, b.candidate, b.bundle FROM substrates s JOIN "
                                             "substrate_bundle b ON b.substrate_id = s.id WHERE s.id = ?", (sid,)).fetchone()
        files.update([path, ref, new])
        if os.path.isdir(bundle):
            for root, _, names in os.walk(bundle):
                files.update(os.path.join(root, n) for n in names)
        name = os.path.splitext(os.path.basename(path))[0]
        files.add(os.path.join(work, "mutants", name, "original.ptx"))
        for ptx, src in con.execute("SELECT ptx_path, source_path FROM mutants WHERE substrate_id = ? AND status = 'unique'",
                                    (sid,)).fetchall():
            files.update(f for f in (ptx, src, os.path.splitext(src or "")[0] + ".launch.json") if f)
    with tempfile_dir() as d:
        snap = os.path.join(d, "km.sqlite")
        dst = sqlite3.connect(snap)
        con.backup(dst)
        dst.close()
        with tarfile.open(out, "w:gz") as tar:
            tar.add(snap, arcname="carry/" + os.path.relpath(db))
            for f in sorted(files):
                if os.path.exists(f):
                    tar.add(f, arcname="carry/" + os.path.relpath(f))
            if kit:
                tar.add(kit, arcname="carry/kit/bin/dirigo.real")
                for lib in _kit_libs(kit):
                    tar.add(os.path.realpath(lib), arcname="carry/kit/lib/" + os.path.basename(lib))
    return {"files": len(files), "bytes": os.path.getsize(out)}


class tempfile_dir:
    def __enter__(self):
        import tempfile
        self.d = tempfile.mkdtemp(prefix="dirigo-pack-")
        return self.d

    def __exit__(self, *a):
        shutil.rmtree(self.d, ignore_errors=True)


def unpack_gpu(db: str, res_dir: str) -> dict:
    """What scripts/gpu/mutation.sh brought back: the GPU host's store when it compiled mutants there (it
    replaces DB, which is kept as DB.before-gpu), bundles into place (then attached), rows into the store."""
    counts = {"bundles": 0, "store": "kept"}
    gpu_db = os.path.join(res_dir, "km.sqlite")
    if os.path.exists(gpu_db):
        if os.path.exists(db):
            shutil.copyfile(db, db + ".before-gpu")
        for ext in ("-wal", "-shm"):
            if os.path.exists(db + ext):
                os.remove(db + ext)
        shutil.copyfile(gpu_db, db)
        counts["store"] = "from the GPU host"
    con = connect(db)
    names = dict(listing(db))
    bdir = os.path.join(res_dir, "bundles")
    for name in sorted(os.listdir(bdir)) if os.path.isdir(bdir) else []:
        if name not in names:
            continue
        dst = os.path.join(names[name], "bundle")
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(os.path.join(bdir, name), dst)
        counts["bundles"] += 1
    for sid in substrates_of(con):
        if con.execute("SELECT module FROM substrate_bundle WHERE substrate_id = ?", (sid,)).fetchone()[0] is None:
            try:
                attach(con, sid)
            except (br.ReplayUnsupported, KeyError, ValueError):
                pass
    rows = os.path.join(res_dir, "rows.jsonl")
    if os.path.exists(rows):
        counts.update(import_rows(db, rows))
    return counts


def store_run_parser(sp, name: str, *positionals: str) -> argparse.ArgumentParser:
    """The subcommand `name` of a command that runs this store's mutants: DB WORK, then `positionals`,
    then --device and --only (bundle_km run, witness_inputs search, harness run)."""
    p = sp.add_parser(name)
    for arg in ("db", "work", *positionals):
        p.add_argument(arg)
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--only", default="")
    return p


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dirigo.bundle_km")
    sp = ap.add_subparsers(dest="cmd", required=True)
    p = sp.add_parser("prep")
    p.add_argument("db")
    p.add_argument("work")
    p.add_argument("dirs", nargs="+")
    p.add_argument("--origin", default="")
    p.add_argument("--dirigo")
    p.add_argument("-j", "--jobs", type=int, default=1)
    p.add_argument("--no-compile", action="store_true", help="register only (mutants generated, not compiled)")
    ls = sp.add_parser("list")
    ls.add_argument("db")
    pk = sp.add_parser("pack")
    pk.add_argument("db")
    pk.add_argument("work")
    pk.add_argument("out")
    pk.add_argument("--kit", help="also carry this dirigo binary and its libraries (mutants compiled on the GPU host)")
    ug = sp.add_parser("unpack-gpu")
    ug.add_argument("db")
    ug.add_argument("res")
    at = sp.add_parser("attach")
    at.add_argument("db")
    r = store_run_parser(sp, "run")
    r.add_argument("--limit", type=int, default=0, help="at most N mutants per substrate (0: all)")
    r.add_argument("--deadline", type=float, default=0)
    r.add_argument("--max-ms", type=float, default=3000)
    r.add_argument("--inputs", type=int, default=0, help="only the first N inputs of the pool (0: all)")
    r.add_argument("--jsonl", help="write rows here (keyed by substrate path, ordinal, input name), not into DB")
    im = sp.add_parser("import")
    im.add_argument("db")
    im.add_argument("jsonl")
    r.add_argument("--dirigo")
    a = ap.parse_args(argv)
    if a.cmd == "prep":
        return prep(a.db, a.work, a.dirs, a.dirigo, a.origin, a.jobs, not a.no_compile)
    if a.cmd == "list":
        for name, d in listing(a.db):
            print(name, d)
        return 0
    if a.cmd == "pack":
        print(pack(a.db, a.work, a.out, a.kit))
        return 0
    if a.cmd == "unpack-gpu":
        print(unpack_gpu(a.db, a.res))
        return 0
    if a.cmd == "attach":
        con = connect(a.db)
        for sid in substrates_of(con):
            try:
                print(sid, attach(con, sid))
            except (br.ReplayUnsupported, KeyError, ValueError) as e:
                print(sid, f"not attached: {e}")
        return 0
    if a.cmd == "run":
        print(run(a.db, a.work, a.device, a.only, a.limit, a.deadline, a.max_ms, a.dirigo, max_inputs=a.inputs,
                  jsonl=a.jsonl))
        return 0
    if a.cmd == "import":
        print(import_rows(a.db, a.jsonl))
        return 0
    return 64


if __name__ == "__main__":
    sys.exit(main())
