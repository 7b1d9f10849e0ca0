"""Dataset sweeps: `dirigo sweep PAIRS --out RESULTS`, every pair checked as Ray tasks.

    dirigo sweep PAIRS --out RESULTS [--address ADDR] [--num-cpus N] [--device cpu|cuda] [--budget S]
    python -m dirigo.sweep ...      (the same)

PAIRS is a JSONL file, one pair a line: {"id": ..., "ref": PATH, "new": PATH, "atol": A, "rtol": R}
(paths relative to the file; id, atol and rtol optional), or a directory holding either one folder per
pair with ref.py and new.py, or files NAME_ref.py and NAME_new.py side by side.

Each pair is three Ray tasks: tracing (on the tracing device: `num_gpus=1` with --device cuda), the
check (CPU only: the C++ core in the task's process), then the replay of a witness and the state stage
(the tracing device again: they run the programs). Ray is local by default (`--num-cpus` of this
machine); `--address` joins a cluster (`auto`, or ray://HOST:PORT); the programs' sources travel with
the tasks, so the cluster's machines need dirigo and torch, not the files. Programs are single files
(KernelBench's form): a helper file a program imports is not shipped.

RESULTS is appended to as each pair finishes: SQLite when its name ends in .sqlite or .db, else JSONL.
A sweep started again with the same RESULTS skips the pairs already there, so an interrupted sweep
resumes. A progress line with the rate and an ETA goes to stderr; a summary table to stdout at the end.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import io
import json
import os
import signal
import sqlite3
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass

OUTCOMES = ("BUG", "SUSPECT", "CHECKED", "VERIFIED", "TIMEOUT", "UNSUPPORTED", "ERROR")


# ------------------------------------------------------------------------------------------ the pairs

@dataclass
class Pair:
    id: str
    ref: str
    new: str
    atol: float | None = None
    rtol: float | None = None

    def sources(self) -> tuple[str, str]:
        with open(self.ref) as a, open(self.new) as b:
            return a.read(), b.read()


class PairsError(ValueError):
    pass


def read_pairs(path: str) -> list[Pair]:
    """The pairs of a JSONL file or a directory (see the module doc), ids unique, in a stable order."""
    pairs: list[Pair] = []
    if os.path.isdir(path):
        names = sorted(os.listdir(path))
        for n in names:
            d = os.path.join(path, n)
            if os.path.isdir(d) and os.path.isfile(os.path.join(d, "ref.py")) and os.path.isfile(os.path.join(d, "new.py")):
                pairs.append(Pair(n, os.path.join(d, "ref.py"), os.path.join(d, "new.py")))
        for n in names:
            if n.endswith("_ref.py"):
                stem = n[: -len("_ref.py")]
                new = os.path.join(path, stem + "_new.py")
                if os.path.isfile(new):
                    pairs.append(Pair(stem, os.path.join(path, n), new))
        if not pairs:
            raise PairsError(f"{path}: no pairs (folders with ref.py and new.py, or NAME_ref.py with NAME_new.py)")
    elif os.path.isfile(path):
        base = os.path.dirname(os.path.abspath(path))
        with open(path) as fh:
            for k, line in enumerate(fh, 1):
                if not line.strip() or line.lstrip().startswith("#"):
                    continue
                try:
                    e = json.loads(line)
                    ref, new = e["ref"], e["new"]
                except (json.JSONDecodeError, KeyError, TypeError) as err:
                    raise PairsError(f"{path}:{k}: not a pair ({{\"ref\": ..., \"new\": ...}}): {err}") from None
                tol = e.get("tolerance") or {}
                pairs.append(Pair(str(e.get("id", k)), os.path.join(base, ref), os.path.join(base, new),
                                  e.get("atol", tol.get("atol")), e.get("rtol", tol.get("rtol"))))
    else:
        raise PairsError(f"{path}: no such file or directory")
    seen = set()
    for p in pairs:
        if p.id in seen:
            raise PairsError(f"{path}: pair id {p.id!r} appears twice")
        seen.add(p.id)
        for f in (p.ref, p.new):
            if not os.path.isfile(f):
                raise PairsError(f"pair {p.id}: {f}: no such file")
    return pairs


# ------------------------------------------------------------------------------------------ the results

class Results:
    """Append-only results, one record per pair id: SQLite (.sqlite/.db) or JSONL."""

    def __init__(self, path: str):
        self.path = path
        self.sqlite = path.endswith((".sqlite", ".db"))
        d = os.path.dirname(os.path.abspath(path))
        os.makedirs(d, exist_ok=True)
        if self.sqlite:
            self.db = sqlite3.connect(path)
            self.db.execute("CREATE TABLE IF NOT EXISTS results (id TEXT PRIMARY KEY, outcome TEXT, seconds REAL, "
                            "record TEXT, finished_at TEXT)")
            self.db.commit()
        else:
            self._repair_tail()

    def _repair_tail(self) -> None:
        """A sweep killed mid-write leaves a partial last line: drop it (its pair runs again)."""
        if not os.path.exists(self.path):
            return
        with open(self.path, "rb+") as fh:
            data = fh.read()
            if data and not data.endswith(b"\n"):
                fh.truncate(data.rfind(b"\n") + 1)

    def done(self) -> dict[str, dict]:
        if self.sqlite:
            return {i: json.loads(r) for i, r in self.db.execute("SELECT id, record FROM results")}
        out = {}
        if os.path.exists(self.path):
            with open(self.path) as fh:
                for line in fh:
                    with contextlib.suppress(json.JSONDecodeError):
                        r = json.loads(line)
                        out[str(r["id"])] = r
        return out

    def add(self, rec: dict) -> None:
        if self.sqlite:
            self.db.execute("INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?, ?)",
                            (rec["id"], rec["outcome"], rec["seconds"]["total"], json.dumps(rec), rec["finished_at"]))
            self.db.commit()
            return
        with open(self.path, "a") as fh:
            fh.write(json.dumps(rec) + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def close(self) -> None:
        if self.sqlite:
            self.db.close()


# ------------------------------------------------------------------------------------------ the tasks
# Plain functions, made Ray tasks in run(): a pair's programs travel as source text, its bundle as a tar.

def _programs(prog: dict, d: str) -> tuple[str, str]:
    """The two program files of a task: the originals (a local sweep: a program may import files beside
    it) or, for a cluster, their sources written into `d`."""
    if "ref" in prog:
        return prog["ref"], prog["new"]
    ref, new = os.path.join(d, "ref.py"), os.path.join(d, "new.py")
    with open(ref, "w") as fh:
        fh.write(prog["ref_src"])
    with open(new, "w") as fh:
        fh.write(prog["new_src"])
    return ref, new


def trace_pair(prog: dict, opts: dict) -> dict:
    """Trace both programs; the bundle as tar bytes, or the tracer's failure."""
    from . import trace, worker
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="dirigo-sweep-") as d, worker.warm(opts.get("warm", True)):
        ref, new = _programs(prog, d)
        kw = {k: opts[k] for k in ("atol", "rtol") if opts.get(k) is not None}
        r = trace.trace(ref, new, os.path.join(d, "bundle"), device=opts["device"], timeout=opts["trace_timeout"],
                        write_data=opts["device"] == "cpu", **kw)
        out = {"status": r.status, "message": r.message, "evidence": r.evidence, "seconds": time.monotonic() - t0}
        if r.status == "ok":
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode="w") as tar:
                tar.add(os.path.join(d, "bundle"), arcname="bundle")
            out["bundle"] = buf.getvalue()
        return out


def check_pair(traced: dict, opts: dict) -> dict:
    """The check of a traced pair (CPU): the report JSON, or the verdict of a failed trace."""
    from . import _core, api
    t0 = time.monotonic()
    if traced["status"] != "ok":
        if traced["status"] in ("crash", "failed"):
            rep = json.loads(_core.candidate_failure(traced["message"], traced.get("evidence") or "crash-gpu"))
        else:
            rep = {"outcome": "UNSUPPORTED", "reason": traced["message"], "stage": "trace",
                   "trace": {"status": traced["status"], "message": traced["message"]}}
        return {"report": rep, "seconds": 0.0, "bundle": None}
    with tempfile.TemporaryDirectory(prefix="dirigo-sweep-") as d:
        with tarfile.open(fileobj=io.BytesIO(traced["bundle"])) as tar:
            tar.extractall(d, filter="data") if hasattr(tarfile, "data_filter") else tar.extractall(d)
        v = api.check_bundle(os.path.join(d, "bundle"), budget_s=opts["budget"], full=opts["full"],
                             atol=opts.get("atol"), rtol=opts.get("rtol"), jobs=opts.get("jobs", 1))
    return {"report": v.report or {"outcome": v.outcome, "reason": v.reason}, "seconds": time.monotonic() - t0,
            "bundle": traced["bundle"]}


def finish_pair(checked: dict, prog: dict, opts: dict) -> dict:
    """The replay of a witness and the state stage (they run the programs: on the tracing device)."""
    from . import api, worker
    t0 = time.monotonic()
    rep = checked["report"]
    v = api.Verdict.from_report(rep) if "locations" in rep or "checked" in rep else api.Verdict(
        rep.get("outcome", "UNSUPPORTED"), rep.get("reason", ""), report=rep, stage=rep.get("stage", ""),
        evidence=rep.get("evidence", ""))
    if checked.get("bundle") is None:
        return {"verdict": v, "seconds": 0.0}
    with tempfile.TemporaryDirectory(prefix="dirigo-sweep-") as d, worker.warm(opts.get("warm", True)):
        ref, new = _programs(prog, d)
        with tarfile.open(fileobj=io.BytesIO(checked["bundle"])) as tar:
            tar.extractall(d, filter="data") if hasattr(tarfile, "data_filter") else tar.extractall(d)
        bundle = os.path.join(d, "bundle")
        dev = opts["device"]
        if opts["replay"] and v.outcome in ("BUG", "SUSPECT") and not v.findings and v.witness:
            w = dict(v.witness, ref=ref, new=new)
            v.report["witness"] = w
            api.apply_replay(v, api.replay_witness(w, device=dev, timeout=opts["child_timeout"]))
        if opts["state"]:
            api.apply_state(v, api.state_answer(ref, new, bundle=bundle, report=v.report, device=dev,
                                                timeout=opts["child_timeout"], observe=dev == "cuda"))
    return {"verdict": v, "seconds": time.monotonic() - t0}


def record(pair: Pair, v, seconds: dict) -> dict:
    """One results row: the verdict, where and why, both values, the times."""
    rec = {"id": pair.id, "ref": pair.ref, "new": pair.new, "outcome": v.outcome, "reason": v.reason,
           "evidence": v.evidence, "stage": v.stage, "checked": v.checked, "equal": v.equal,
           "total_locations": v.total_locations, "reward": v.reward(), "seconds": seconds,
           "finished_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    if v.function_outcome:
        rec["function_outcome"] = v.function_outcome
    approx = (v.report or {}).get("approximations")
    if approx:  # an equality that holds only modulo these (e.g. Fp32Constants): never a plain VERIFIED
        rec["approximations"] = approx
    loc = v.location
    if loc:
        outs = v.report.get("outputs") or [{}]
        out = outs[loc.get("output", 0)] if loc.get("output", 0) < len(outs) else {}
        s = loc.get("summary") or {}
        rec["location"] = {"output": out.get("reference"), "index": loc.get("index")}
        rec["values"] = {"shared": s.get("shared", ""), "reference": s.get("reference") or loc.get("reference"),
                         "candidate": s.get("candidate") or loc.get("candidate"), "note": s.get("note", "")}
    return rec


# ------------------------------------------------------------------------------------------ progress

def _fmt_s(s: float) -> str:
    s = int(round(s))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else (f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s")


class Progress:
    def __init__(self, total: int, already: int, stream=sys.stderr):
        self.total, self.already, self.stream = total, already, stream
        self.done = 0
        self.counts = {o: 0 for o in OUTCOMES}
        self.t0 = time.monotonic()
        self.tty = stream.isatty()

    def update(self, rec: dict) -> None:
        self.done += 1
        self.counts[rec["outcome"]] = self.counts.get(rec["outcome"], 0) + 1
        el = time.monotonic() - self.t0
        rate = self.done / el if el > 0 else 0.0
        left = self.total - self.done
        eta = _fmt_s(left / rate) if rate > 0 and left else "0s"
        width = 24
        fill = int(width * self.done / max(self.total, 1))
        counts = " ".join(f"{o} {n}" for o, n in self.counts.items() if n)
        line = (f"[{'#' * fill}{'.' * (width - fill)}] {self.done}/{self.total} "
                f"({self.already} done before) {rate * 60:.1f} pairs/min, ETA {eta} | {counts}")
        if self.tty:
            self.stream.write("\r" + line[:200].ljust(120))
        else:
            self.stream.write(f"{line}  <- {rec['id']}: {rec['outcome']}\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")


def summary(records: list[dict], seconds: float, resumed: int) -> str:
    counts = {o: 0 for o in OUTCOMES}
    for r in records:
        counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
    lines = [f"dirigo sweep: {len(records)} pair(s), {resumed} from an earlier run, {_fmt_s(seconds)} this run", "",
             f"  {'outcome':<12} {'pairs':>6} {'share':>7}"]
    for o, n in counts.items():
        if n:
            lines.append(f"  {o:<12} {n:>6} {100.0 * n / max(len(records), 1):>6.1f}%")
    modulo = sum(1 for r in records if r.get("approximations") and r["outcome"] in ("VERIFIED", "CHECKED"))
    if modulo:
        lines.append(f"  {modulo} of the VERIFIED/CHECKED hold modulo an approximation (their `approximations`)")
    work = sorted(sum(r["seconds"].get(k, 0.0) for k in ("trace", "check", "finish")) for r in records
                  if r.get("seconds"))
    if work:
        lines.append(f"  seconds per pair (trace + check + replay/state): median {work[len(work) // 2]:.2f}, "
                     f"max {work[-1]:.2f}")
    bugs = [r for r in records if r["outcome"] in ("BUG", "SUSPECT")]
    if bugs:
        lines += ["", f"  {'pair':<28} {'outcome':<8} {'location':<22} evidence"]
        for r in sorted(bugs, key=lambda r: (r["outcome"], r["id"]))[:50]:
            loc = r.get("location") or {}
            where = f"{loc.get('output') or '-'}[{', '.join(map(str, loc.get('index') or []))}]" if loc else r.get("stage") or "-"
            lines.append(f"  {r['id'][:28]:<28} {r['outcome']:<8} {where[:22]:<22} {r.get('evidence') or '-'}")
        if len(bugs) > 50:
            lines.append(f"  … {len(bugs) - 50} more in the results")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------ the driver

@dataclass
class Options:
    device: str = "cpu"
    budget: float = 30.0
    full: bool = False
    trace_timeout: float = 300.0
    child_timeout: float = 300.0
    replay: bool = True
    state: bool = True
    warm: bool = True
    jobs: int = 1
    executor: str = "ray"          # "ray" | "local" (thread pools in this process, where Ray is missing)
    gpu_share: float = 0.25        # GPUs a tracing or replay task holds (most of tracing is CPU: builds)
    local_device_slots: int = 4    # local executor: tracing/replay tasks at once


class _RayExecutor:
    """Each pair as three Ray tasks chained by their object refs (Ray runs each when its input is ready)."""

    def __init__(self, opts: Options, address, num_cpus, num_gpus):
        import ray
        self.ray = ray
        if not ray.is_initialized():
            kw = dict(include_dashboard=False, log_to_driver=False, configure_logging=False)
            if address:
                ray.init(address=address, **kw)
            else:  # the local workers are children of this process: they find this dirigo through PYTHONPATH
                pkg_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
                old = os.environ.get("PYTHONPATH", "")
                if pkg_root not in old.split(os.pathsep):
                    os.environ["PYTHONPATH"] = pkg_root + (os.pathsep + old if old else "")
                for attempt in range(3):  # Ray waits 30 s for its raylet: a loaded machine can take longer
                    try:
                        ray.init(num_cpus=num_cpus, num_gpus=num_gpus, **kw)
                        break
                    except Exception as e:  # noqa: BLE001 - Ray raises a bare Exception for this
                        if "timed out during startup" not in str(e) or attempt == 2:
                            raise
                        with contextlib.suppress(Exception):
                            ray.shutdown()
                        time.sleep(2)
        gpu = opts.gpu_share if opts.device == "cuda" else 0
        self.trace = ray.remote(num_cpus=1, num_gpus=gpu, max_retries=0)(trace_pair)
        self.check = ray.remote(num_cpus=1, num_gpus=0, max_retries=0)(check_pair)
        self.finish = ray.remote(num_cpus=1, num_gpus=gpu, max_retries=0)(finish_pair)
        self.cpus = int(ray.cluster_resources().get("CPU", 1))

    def submit(self, prog: dict, o: dict):
        t = self.trace.remote(prog, o)
        c = self.check.remote(t, o)
        return (self.finish.remote(c, prog, o), t, c)

    def wait_one(self, handles: list):
        ready, _ = self.ray.wait([h[0] for h in handles], num_returns=1)
        return next(h for h in handles if h[0] == ready[0])

    def results(self, h) -> tuple[dict, dict, dict]:
        return self.ray.get(h[1]), self.ray.get(h[2]), self.ray.get(h[0])

    def close(self) -> None:
        self.ray.shutdown()


class _LocalExecutor:
    """The same three steps in thread pools of this process (where Ray is not installed): tracing and the
    replay/state stage in one pool of `gpu_slots` (the tracing device), checks in one of `num_cpus`."""

    def __init__(self, opts: Options, num_cpus):
        from concurrent.futures import ThreadPoolExecutor
        self.cpus = num_cpus or os.cpu_count() or 1
        self.dev = ThreadPoolExecutor(max(1, opts.local_device_slots), thread_name_prefix="dirigo-sweep-dev")
        self.cpu = ThreadPoolExecutor(self.cpus, thread_name_prefix="dirigo-sweep-cpu")

    def submit(self, prog: dict, o: dict):
        import concurrent.futures as cf
        t = self.dev.submit(trace_pair, prog, o)
        c = cf.Future()
        f = cf.Future()

        def chain(src, pool, fn, dst, *args):
            def go(done):
                try:
                    val = done.result()
                except BaseException as e:  # noqa: BLE001
                    dst.set_exception(e)
                    return
                nxt = pool.submit(fn, val, *args)
                nxt.add_done_callback(lambda r: dst.set_exception(r.exception()) if r.exception() else dst.set_result(r.result()))
            src.add_done_callback(go)

        chain(t, self.cpu, check_pair, c, o)
        chain(c, self.dev, finish_pair, f, prog, o)
        return (f, t, c)

    def wait_one(self, handles: list):
        import concurrent.futures as cf
        done, _ = cf.wait([h[0] for h in handles], return_when=cf.FIRST_COMPLETED)
        first = next(iter(done))
        return next(h for h in handles if h[0] is first)

    def results(self, h):
        return h[1].result(), h[2].result(), h[0].result()

    def close(self) -> None:
        self.dev.shutdown(wait=False, cancel_futures=True)
        self.cpu.shutdown(wait=False, cancel_futures=True)


def run(pairs: list[Pair], results: Results, opts: Options, *, address: str | None = None,
        num_cpus: int | None = None, num_gpus: int | None = None, window: int | None = None,
        progress_stream=sys.stderr) -> list[dict]:
    """Check every pair not yet in `results`; returns all records (earlier ones too)."""
    from . import api
    done = results.done()
    todo = [p for p in pairs if p.id not in done]
    if opts.executor == "local":
        ex = _LocalExecutor(opts, num_cpus)
    else:
        try:
            ex = _RayExecutor(opts, address, num_cpus, num_gpus)
        except Exception as e:  # noqa: BLE001 - Ray raises a bare Exception when its raylet is late
            # A local Ray that cannot start on a loaded machine: the same three steps in thread pools.
            # A cluster that cannot be reached stays an error (its resources are what was asked for).
            if address or "timed out during startup" not in str(e):
                raise
            print(f"sweep: a local Ray did not start ({str(e)[:120]}); running the pairs in local thread pools "
                  "(--executor local)", file=progress_stream, flush=True)
            ex = _LocalExecutor(opts, num_cpus)
    o = {"device": opts.device, "budget": opts.budget, "full": opts.full, "trace_timeout": opts.trace_timeout,
         "child_timeout": opts.child_timeout, "replay": opts.replay, "state": opts.state, "warm": opts.warm,
         "jobs": opts.jobs}
    window = window or max(2, 2 * ex.cpus)  # pairs in flight: enough to keep every CPU busy, bounded memory
    prog = Progress(len(todo), len(done), progress_stream)
    pending: list = []  # (handle, pair, t0)
    queue = list(todo)
    records = [done[p.id] for p in pairs if p.id in done]
    ship = bool(address) and opts.executor != "local"  # a cluster's machines do not see our files
    try:
        while queue or pending:
            while queue and len(pending) < window:
                p = queue.pop(0)
                if ship:
                    ref_src, new_src = p.sources()
                    progs = {"ref_src": ref_src, "new_src": new_src}
                else:
                    progs = {"ref": os.path.abspath(p.ref), "new": os.path.abspath(p.new)}
                h = ex.submit(progs, dict(o, atol=p.atol, rtol=p.rtol))
                pending.append((h, p, time.monotonic()))
            h = ex.wait_one([x[0] for x in pending])
            k = next(i for i, x in enumerate(pending) if x[0] is h)
            _, p, t0 = pending.pop(k)
            try:
                traced, checked, fin = ex.results(h)
                v = fin["verdict"]
                secs = {"trace": round(traced["seconds"], 3), "check": round(checked["seconds"], 3),
                        "finish": round(fin["seconds"], 3)}
            except Exception as e:  # noqa: BLE001 - a task that died (worker crash, out of memory)
                v = api.Verdict("UNSUPPORTED", f"sweep: a task of this pair failed: {type(e).__name__}: {str(e)[:300]}")
                secs = {}
            secs["total"] = round(time.monotonic() - t0, 3)
            rec = record(p, v, secs)
            results.add(rec)
            records.append(rec)
            prog.update(rec)
    finally:
        prog.close()
        ex.close()
    return records


def _interrupt(*_):
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="dirigo sweep", description=__doc__.split("\n")[0])
    ap.add_argument("pairs", help="a JSONL file of pairs or a directory of pairs (see python -m dirigo.sweep --help)")
    ap.add_argument("--out", required=True, help="results: NAME.sqlite / NAME.db (SQLite) or anything else (JSONL); "
                                                 "pairs already there are skipped")
    ap.add_argument("--address", help="a Ray cluster to join (auto, or ray://HOST:PORT); default: a local Ray")
    ap.add_argument("--num-cpus", type=int, help="local Ray: CPUs to use (default: all)")
    ap.add_argument("--num-gpus", type=int, help="local Ray: GPUs to use (default: all)")
    ap.add_argument("--device", choices=["cpu", "cuda"], default=None,
                    help="tracing device (default: cuda when this machine has a GPU)")
    ap.add_argument("--budget", type=float, default=30.0, help="seconds for each pair's location search")
    ap.add_argument("--full", action="store_true", help="check every output location")
    ap.add_argument("--trace-timeout", type=float, default=300.0)
    ap.add_argument("--child-timeout", type=float, default=300.0, help="seconds for the replay and the state stage, each")
    ap.add_argument("--no-replay", action="store_true")
    ap.add_argument("--no-state", action="store_true")
    ap.add_argument("--window", type=int, help="pairs in flight at once (default: twice the cluster's CPUs)")
    ap.add_argument("--gpu-share", type=float, default=0.25,
                    help="--device cuda: GPUs each tracing or replay task holds (default 0.25: four at once per GPU)")
    ap.add_argument("--executor", choices=["ray", "local"], default="ray",
                    help="local: thread pools in this process instead of Ray (where Ray is not installed)")
    a = ap.parse_args(argv)
    try:
        pairs = read_pairs(a.pairs)
    except PairsError as e:
        print(f"dirigo sweep: {e}", file=sys.stderr)
        return 64
    device = a.device or ("cuda" if os.path.exists("/dev/nvidia0") else "cpu")
    opts = Options(device=device, budget=a.budget, full=a.full, trace_timeout=a.trace_timeout,
                   child_timeout=a.child_timeout, replay=not a.no_replay, state=not a.no_state,
                   executor=a.executor, gpu_share=a.gpu_share)
    results = Results(a.out)
    resumed = sum(1 for p in pairs if p.id in results.done())
    t0 = time.monotonic()
    # SIGTERM ends the sweep like Ctrl-C: what finished is in RESULTS already.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        records = run(pairs, results, opts, address=a.address, num_cpus=a.num_cpus, num_gpus=a.num_gpus,
                      window=a.window)
    except KeyboardInterrupt:
        print(f"\ndirigo sweep: interrupted; {len(results.done())} of {len(pairs)} pair(s) are in {a.out} "
              "(run the same command again to resume)", file=sys.stderr)
        return 130
    finally:
        results.close()
    sys.stdout.write(summary(records, time.monotonic() - t0, resumed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
