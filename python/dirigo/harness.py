"""Bring your own harness: a maintainer's correctness check run on every mutant of the kill matrix.

A harness is
  * `module:function`, a Python callable with KernelBench's eval_kernel_against_ref shape:
    `f(original_model_src, custom_model_src, ...)` returning KernelBench's KernelExecResult (or
    anything with `correctness` / `compiled`, a dict with those keys, or a bool);
  * `cmd:COMMAND`, a command run as `COMMAND REF.py NEW.py`: exit 0 = correct, 1 = incorrect,
    anything else (or a crash) = an error;
optionally named `NAME=SPEC` (default: the function's name, or the command's first word).

Each mutant is handed to the harness as a KernelBench program source whose ModelNew replays the
substrate's traced bundle with the mutant's kernel (bundle_run.py): on the CPU through dirigo's
concrete interpreter, on a GPU through the CUDA driver API. Verdicts (accept | reject | error) go
into the store's `harness_runs` table; `dirigo score --protocol SPEC` runs this and scores the
harness next to the built-in protocols (a kill iff it rejects the mutant; its gate: it accepts the
correct substrate).

    python -m dirigo.harness run DB WORK SPEC [--device cpu|cuda] [--only NAME,...] [--limit N]

`kernelbench_check` below is KernelBench's own check (src/eval.py run_and_check_correctness:
trial seeds drawn from seed_num, models built under seed_num, allclose atol = rtol = 1e-2),
re-implemented so that it runs without KernelBench installed and on the CPU.
"""
from __future__ import annotations

import importlib
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
import types

_PY_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---------------------------------------------------------------------------------------------------------
# KernelBench's check, runnable here

def _module_from_source(src: str, name: str):
    mod = types.ModuleType(name)
    mod.__file__ = f"<{name}>"
    exec(compile(src, mod.__file__, "exec"), mod.__dict__)
    return mod


def kernelbench_check(original_model_src: str, custom_model_src: str, seed_num: int = 42, num_correct_trials: int = 5,
                      num_perf_trials: int = 10, measure_performance: bool = False, verbose: bool = False,
                      build_dir=None, device=None, atol: float = 1e-2, rtol: float = 1e-2, **_ignored):
    """KernelBench's correctness check (5 trials, allclose 1e-2) on `device` (default: cuda if there, else cpu)."""
    import torch
    from .kernelbench import KernelExecResult
    dev = torch.device(device if device is not None else ("cuda" if torch.cuda.is_available() else "cpu"))
    res = KernelExecResult()
    ref = _module_from_source(original_model_src, "kb_ref")
    try:
        new = _module_from_source(custom_model_src, "kb_new")
        init = ref.get_init_inputs()
        torch.manual_seed(seed_num)
        model = ref.Model(*init).to(dev)
        torch.manual_seed(seed_num)
        model_new = new.ModelNew(*init).to(dev)
    except Exception as e:  # noqa: BLE001 - KernelBench: a build/load failure is "not compiled"
        res.metadata["compilation_error"] = f"{type(e).__name__}: {e}"
        return res
    res.compiled = True
    torch.manual_seed(seed_num)
    trial_seeds = [torch.randint(0, 2 ** 32 - 1, (1,)).item() for _ in range(num_correct_trials)]
    passed = 0
    with torch.no_grad():
        for s in trial_seeds:
            torch.manual_seed(s)
            inputs = [x.to(dev) if isinstance(x, torch.Tensor) else x for x in ref.get_inputs()]
            try:
                out = model(*inputs)
                out_new = model_new(*inputs)
            except Exception as e:  # noqa: BLE001
                res.metadata["runtime_error"] = f"{type(e).__name__}: {e}"
                break
            if out.shape != out_new.shape:
                res.metadata["correctness_issue"] = f"Output shape mismatch: {list(out.shape)} vs {list(out_new.shape)}"
                break
            if not torch.allclose(out, out_new, atol=atol, rtol=rtol):
                diff = (out - out_new).abs()
                res.metadata.setdefault("max_difference", []).append(f"{diff.max().item():.6f}")
                res.metadata["correctness_issue"] = "Output mismatch"
                break
            passed += 1
    res.correctness = passed == num_correct_trials
    res.metadata["correctness_trials"] = f"({passed} / {num_correct_trials})"
    return res


# ---------------------------------------------------------------------------------------------------------
# Mutants as KernelBench programs

_LAUNCHERS: dict = {}
_MAX_MS = [3000.0]  # the concrete interpreter's limit per launch (run() sets it)


def _launcher(device: str):
    from . import bundle_run as br
    if device not in _LAUNCHERS:
        _LAUNCHERS[device] = br.make_launcher(device, max_ms=_MAX_MS[0])
    return _LAUNCHERS[device]


def replayed_model(substrate: str, bundle: str, module: str, ptx: str, overrides: dict | None = None):
    """The substrate's ModelNew class (extensions stubbed: same parameters) whose forward replays the
    bundle's candidate program with `ptx` for `module` (and the launch overrides of a host mutant)."""
    import torch
    from . import bundle_km as bk
    from . import bundle_run as br
    ns = bk.exec_file(substrate)
    base = ns["ModelNew"]
    program = br.BundleProgram(bundle)
    names = program.input_names("input")
    state_names = program.input_names("parameter") + program.input_names("buffer")
    over = {int(k): v for k, v in (overrides or {}).items()}

    class ModelNew(base):
        def forward(self, *args):
            dev = next((a.device.type for a in args if isinstance(a, torch.Tensor)), "cpu")
            state = dict(self.named_parameters())
            state.update(dict(self.named_buffers()))
            b = dict(zip(names, args))
            for n in state_names:
                b[n] = state[n].detach()
            try:
                outs = program.run(b, _launcher(dev), dev, {module: ptx}, over)
            except br.LaunchFailed as e:
                raise RuntimeError(f"kernel launch failed ({e.status}): {e.detail}") from None
            return outs[0] if len(outs) == 1 else tuple(outs)

    ModelNew.__name__ = ModelNew.__qualname__ = "ModelNew"
    return ModelNew


def mutant_source(sub, prog: dict) -> str:
    """custom_model_src for one program of the kill matrix (bundle_km.programs_of)."""
    return (f"# dirigo: {prog['label']} of {os.path.basename(sub.path)}, launched by replaying its traced bundle\n"
            f"import sys\nsys.path.insert(0, {_PY_DIR!r})\n"
            "from dirigo.harness import replayed_model\n"
            f"ModelNew = replayed_model({os.path.abspath(sub.path)!r}, {os.path.abspath(sub.bundle)!r}, {sub.module!r}, "
            f"{os.path.abspath(prog['ptx'])!r}, "
            f"{json.loads(json.dumps(prog['overrides'])) if prog['overrides'] else None!r})\n")


# ---------------------------------------------------------------------------------------------------------
# Harness specs

def parse_spec(spec: str) -> tuple[str, str]:
    """(name, spec) from `[NAME=]module:function` or `[NAME=]cmd:COMMAND`."""
    name = ""
    head, eq, rest = spec.partition("=")
    if eq and head.replace("_", "").replace("-", "").isalnum() and not head.startswith("cmd"):
        name, spec = head, rest
    if spec.startswith("cmd:"):
        words = shlex.split(spec[4:])
        if not words:
            raise ValueError("cmd: harness without a command")
        return name or os.path.basename(words[0]).split(".")[0], spec
    mod, colon, fn = spec.partition(":")
    if not colon or not mod or not fn:
        raise ValueError(f"harness {spec!r}: expected module:function or cmd:COMMAND")
    return name or fn, spec


def load_harness(spec: str):
    """A callable (ref_src, new_src) -> (verdict, compiled, detail)."""
    if spec.startswith("cmd:"):
        words = shlex.split(spec[4:])

        def run_cmd(ref_src, new_src):
            with tempfile.TemporaryDirectory(prefix="dirigo-harness-") as d:
                ref, new = os.path.join(d, "ref.py"), os.path.join(d, "new.py")
                open(ref, "w").write(ref_src)
                open(new, "w").write(new_src)
                env = dict(os.environ, PYTHONPATH=_PY_DIR + os.pathsep + os.environ.get("PYTHONPATH", ""))
                p = subprocess.run(words + [ref, new], capture_output=True, text=True, env=env, timeout=600)
            tail = (p.stdout + p.stderr).strip()[-300:]
            if p.returncode == 0:
                return "accept", True, tail
            if p.returncode == 1:
                return "reject", True, tail
            return "error", None, f"exit {p.returncode}: {tail}"
        return run_cmd
    mod, _, fn = spec.partition(":")
    if _PY_DIR not in sys.path:
        sys.path.insert(0, _PY_DIR)
    f = getattr(importlib.import_module(mod), fn)

    def run_fn(ref_src, new_src):
        r = f(ref_src, new_src)
        if isinstance(r, bool):
            return ("accept" if r else "reject"), True, ""
        get = (lambda k, d=None: r.get(k, d)) if isinstance(r, dict) else (lambda k, d=None: getattr(r, k, d))
        meta = get("metadata", {}) or {}
        detail = "; ".join(f"{k}: {str(meta[k])[:120]}" for k in ("compilation_error", "runtime_error",
                                                                   "correctness_issue", "correctness_trials")
                           if k in meta)
        return ("accept" if get("correctness") else "reject"), bool(get("compiled", True)), detail
    return run_fn


def run(db: str, work: str, spec: str, device: str = "cpu", only: str = "", limit: int = 0,
        resume: bool = True, max_ms: float = 3000) -> dict:
    from . import bundle_km as bk
    _MAX_MS[0] = max_ms
    name, spec = parse_spec(spec)
    harness = load_harness(spec)
    con = bk.connect(db)
    counts: dict = {}
    for sid in bk.substrates_of(con, only):
        here: dict = {}
        sub = bk.Substrate(con, sid)
        ref_src = open(sub.reference).read()
        done = {m for (m,) in con.execute("SELECT mutant_id FROM harness_runs WHERE protocol = ? AND substrate_id = ? "
                                          "AND verdict != 'error'", (name, sid))} if resume else set()
        progs = bk.programs_of(con, sub, work)
        if limit:
            progs = progs[:limit + 1]
        for p in progs:
            if p["mutant_id"] in done:
                continue
            t0 = time.perf_counter()
            try:
                verdict, compiled, detail = harness(ref_src, mutant_source(sub, p))
            except Exception as e:  # noqa: BLE001 - the harness itself failed: neither accept nor reject
                verdict, compiled, detail = "error", None, f"{type(e).__name__}: {str(e)[:300]}"
            ms = (time.perf_counter() - t0) * 1e3
            with con:
                con.execute("DELETE FROM harness_runs WHERE protocol = ? AND substrate_id = ? AND mutant_id IS ?",
                            (name, sid, p["mutant_id"]))
                con.execute("INSERT INTO harness_runs(protocol, substrate_id, mutant_id, verdict, compiled, ms, detail) "
                            "VALUES(?,?,?,?,?,?,?)", (name, sid, p["mutant_id"], verdict,
                                                      None if compiled is None else int(compiled), ms, detail[:500]))
            key = ("substrate " if p["mutant_id"] is None else "mutant ") + verdict
            counts[key] = counts.get(key, 0) + 1
            here[key] = here.get(key, 0) + 1
        print(f"{name} on {sub.name}: {here}", file=sys.stderr, flush=True)
    for launcher in _LAUNCHERS.values():
        launcher.close()
    _LAUNCHERS.clear()
    return {"protocol": name, **counts}


def main(argv: list[str] | None = None) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="python -m dirigo.harness")
    sp = ap.add_subparsers(dest="cmd", required=True)
    from .bundle_km import store_run_parser
    r = store_run_parser(sp, "run", "spec")
    r.add_argument("--limit", type=int, default=0)
    r.add_argument("--max-ms", type=float, default=3000, help="CPU interpreter limit per launch")
    a = ap.parse_args(argv)
    try:
        print(json.dumps(run(a.db, a.work, a.spec, a.device, a.only, a.limit, max_ms=a.max_ms)))
    except (ValueError, ImportError, AttributeError) as e:
        print(f"dirigo harness: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
