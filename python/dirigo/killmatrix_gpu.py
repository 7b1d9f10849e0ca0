"""GPU kill matrix: substrate and mutant PTX run through the CUDA driver API on the inputs that
`dirigo killmatrix` prepared on the CPU (same launch plans, same binaries), compared with the same
fp64/fp32 PyTorch references. Rows have the store's `runs` columns (docs/mutation.md), source = gpu.

    python killmatrix_gpu.py export DB WORK JOBS_DIR [--full]   # CPU: jobs.json + PTX + input binaries
    python killmatrix_gpu.py run JOBS_DIR OUT.jsonl [--deadline S] [--parallel N] [--dry-run]
    python killmatrix_gpu.py import DB OUT.jsonl         # CPU: rows into the store (source = gpu)

`run` keeps the CUDA context out of the parent: each substrate is worked through by child
processes (`worker`) that append one JSON line per (program, input); a child that hits a CUDA
error writes a crash row and exits (the context is lost), one that stays silent past --hang
seconds is killed and its run recorded as a timeout; the parent restarts after that run.
Only numpy and cuda.bindings are needed on the GPU machine (no torch, no dirigo core).
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import threading
import time

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))


def _killmatrix():
    spec = importlib.util.spec_from_file_location("dirigo_killmatrix_standalone", os.path.join(_HERE, "killmatrix.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


KM = _killmatrix()
NP_DTYPE = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64}
SCALAR = {"s32": np.int32, "s64": np.int64, "u32": np.uint32, "u64": np.uint64, "f32": np.float32, "f64": np.float64}


def find_entry(ptx: str, kernel: str) -> str | None:
    """The PTX entry of a source kernel name: exact, or the C++ mangling `_Z<len><name>...`."""
    entries = re.findall(r"\.entry\s+([A-Za-z_$][\w$]*)", ptx)
    if kernel in entries:
        return kernel
    prefix = f"_Z{len(kernel)}{kernel}"
    hits = [e for e in entries if e.startswith(prefix) and len(e) > len(prefix)]
    return hits[0] if len(hits) == 1 else None


# ---------------------------------------------------------------- export / import (CPU side)

def export(db: str, work: str, jobs_dir: str, full: bool = False) -> dict:
    """jobs.json lists, per substrate, the original and every unique mutant (by ordinal) with a plan:
    device mutants (their PTX) and host-side ones (the original's PTX + `launches`). Substrates whose
    device mutants all have GPU rows in the store get only the original and host mutants (unless
    `full`), and go last."""
    con = sqlite3.connect(db)
    os.makedirs(jobs_dir, exist_ok=True)
    jobs = []
    for sid, path in con.execute("SELECT id, path FROM substrates WHERE status = 'ok' ORDER BY path"):
        stem = os.path.splitext(os.path.basename(path))[0]
        in_dir = os.path.join(work, "inputs", stem)
        mut_dir = os.path.join(work, "mutants", stem)
        if not os.path.exists(os.path.join(in_dir, "spec.json")) or not os.path.exists(os.path.join(mut_dir, "original.ptx")):
            continue
        dst = os.path.join(jobs_dir, stem)
        shutil.rmtree(dst, ignore_errors=True)
        # inputs travel as float32 (every substrate tensor holds fp32 values or small integers): half the bytes
        os.makedirs(os.path.join(dst, "inputs"))
        for name in os.listdir(in_dir):
            src = os.path.join(in_dir, name)
            if name.endswith(".in"):
                np.fromfile(src, dtype="<f8").astype("<f4").tofile(os.path.join(dst, "inputs", name + "32"))
            else:
                shutil.copy(src, os.path.join(dst, "inputs", name))
        os.makedirs(os.path.join(dst, "ptx"))
        shutil.copy(os.path.join(mut_dir, "original.ptx"), os.path.join(dst, "ptx", "original.ptx"))
        programs = [{"ordinal": 0, "ptx": f"{stem}/ptx/original.ptx"}]
        rows = con.execute("SELECT m.ordinal, m.ptx_path, m.source_path, c.runnable FROM mutants m "
                           "JOIN mutant_class c ON c.mutant_id = m.id "
                           "WHERE m.substrate_id = ? AND m.status = 'unique' ORDER BY m.ordinal", (sid,)).fetchall()
        for ordinal, ptx_path, src_path, runnable in rows:
            if not runnable:
                # a host-side mutant: the original's PTX with the launch plan derived by killmatrix_host.py
                plan_path = os.path.splitext(src_path or "")[0] + ".launch.json"
                if os.path.exists(plan_path):
                    programs.append({"ordinal": ordinal, "ptx": f"{stem}/ptx/original.ptx",
                                     "launches": json.load(open(plan_path))["launches"]})
                continue
            if not ptx_path or not os.path.exists(ptx_path):
                continue
            name = os.path.basename(ptx_path)
            shutil.copy(ptx_path, os.path.join(dst, "ptx", name))
            programs.append({"ordinal": ordinal, "ptx": f"{stem}/ptx/{name}"})
        # substrates with fewer GPU rows than planned go first: a deadline then cuts the ones already measured
        n_inputs = len(json.load(open(os.path.join(in_dir, "spec.json")))["inputs"])
        device_planned = sum("launches" not in p for p in programs) * n_inputs
        have = con.execute("SELECT COUNT(*) FROM runs WHERE substrate_id = ? AND source = 'gpu'", (sid,)).fetchone()[0]
        original_ok = con.execute("SELECT COUNT(*) FROM runs WHERE substrate_id = ? AND source = 'gpu' AND mutant_id IS NULL "
                                  "AND status = 'ok'", (sid,)).fetchone()[0]
        complete = have >= device_planned and original_ok > 0
        if complete and not full:
            # device mutants measured already (import keeps rows per program): the original and host mutants only
            programs = [p for p in programs if p["ordinal"] == 0 or "launches" in p]
        jobs.append({"substrate": path, "problem": stem, "inputs": f"{stem}/inputs", "programs": programs,
                     "gpu_rows_before": have, "_order": (complete, have, stem)})
    jobs.sort(key=lambda j: j.pop("_order"))
    with open(os.path.join(jobs_dir, "jobs.json"), "w") as f:
        json.dump({"substrates": jobs}, f, indent=1)
    return {"substrates": len(jobs), "programs": sum(len(j["programs"]) for j in jobs)}


def import_rows(db: str, jsonl: str) -> dict:
    con = sqlite3.connect(db)
    con.execute("PRAGMA foreign_keys = ON")
    sub = {p: i for i, p in con.execute("SELECT id, path FROM substrates")}
    counts = {"rows": 0, "skipped": 0}
    seen_sub = set()
    with con:
        for line in open(jsonl):
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                counts["skipped"] += 1
                continue
            sid = sub.get(r["substrate"])
            if sid is None:
                counts["skipped"] += 1
                continue
            inp = con.execute("SELECT id FROM inputs WHERE substrate_id = ? AND name = ?", (sid, r["input"])).fetchone()
            mid = None
            if r["ordinal"]:
                row = con.execute("SELECT id FROM mutants WHERE substrate_id = ? AND ordinal = ?", (sid, r["ordinal"])).fetchone()
                mid = row[0] if row else -1
            if inp is None or mid == -1:
                counts["skipped"] += 1
                continue
            # a program's rows from this file replace its earlier GPU rows (a partial run keeps the rest)
            if (sid, mid) not in seen_sub:
                con.execute("DELETE FROM runs WHERE substrate_id = ? AND source = 'gpu' AND mutant_id IS ?", (sid, mid))
                seen_sub.add((sid, mid))
            ok = r["status"] == "ok"
            con.execute("INSERT INTO runs(substrate_id, mutant_id, input_id, source, status, t_eq, t_eq32, max_abs, "
                        "nonfinite_mismatch, ms, detail) VALUES(?,?,?,?,?,?,?,?,?,?,?)",
                        (sid, mid, inp[0], "gpu", r["status"], r.get("t_eq") if ok else None,
                         r.get("t_eq32") if ok else None, r.get("max_abs") if ok else None,
                         r.get("nonfinite_mismatch") if ok else None, r.get("ms"), r.get("detail", "")))
            counts["rows"] += 1
    return counts


# ---------------------------------------------------------------- worker (GPU side)

class CudaError(RuntimeError):
    pass


def _ck(result):
    from cuda.bindings import driver as cu
    err = result[0]
    if err != cu.CUresult.CUDA_SUCCESS:
        _, name = cu.cuGetErrorName(err)
        raise CudaError(name.decode() if isinstance(name, bytes) else str(name))
    return result[1] if len(result) == 2 else result[1:]


def _load_job(jobs_dir: str, index: int):
    job = json.load(open(os.path.join(jobs_dir, "jobs.json")))["substrates"][index]
    spec = json.load(open(os.path.join(jobs_dir, job["inputs"], "spec.json")))
    return job, spec


def _input_data(jobs_dir, job, spec, k):
    d = os.path.join(jobs_dir, job["inputs"])
    f32 = os.path.join(d, f"{k}.in32")
    all_vals = np.fromfile(f32, dtype="<f4") if os.path.exists(f32) else np.fromfile(os.path.join(d, f"{k}.in"), dtype="<f8")
    tensors, at = [], 0
    for t in spec["tensors"]:
        tensors.append(all_vals[at:at + t["numel"]].astype(NP_DTYPE[t["dtype"]]))
        at += t["numel"]
    ref64 = np.fromfile(os.path.join(d, f"{k}.ref64"), dtype="<f8")
    ref32 = np.fromfile(os.path.join(d, f"{k}.ref32"), dtype="<f8")
    return tensors, ref64, ref32


def worker(jobs_dir: str, index: int, start_program: int, start_input: int, out_path: str) -> int:
    from cuda.bindings import driver as cu
    job, spec = _load_job(jobs_dir, index)
    out = open(out_path, "a")

    def emit(prog, item, **kw):
        row = {"substrate": job["substrate"], "problem": job["problem"], "ordinal": prog["ordinal"],
               "input": item["name"], "input_index": item["index"]}
        row.update(kw)
        out.write(json.dumps(row) + "\n")
        out.flush()

    _ck(cu.cuInit(0))
    dev = _ck(cu.cuDeviceGet(0))
    ctx = _ck(cu.cuDevicePrimaryCtxRetain(dev))
    _ck(cu.cuCtxSetCurrent(ctx))
    stream = _ck(cu.cuStreamCreate(0))
    open(out_path + ".ready", "w").close()  # the parent's hang clock starts here, not at process start
    data = {}
    for p in range(start_program, len(job["programs"])):
        prog = job["programs"][p]
        ptx = open(os.path.join(jobs_dir, prog["ptx"]), "rb").read()
        first = start_input if p == start_program else 0
        try:
            image = np.frombuffer(ptx + b"\0", dtype=np.uint8)
            module = _ck(cu.cuModuleLoadData(image.ctypes.data))
            launches = prog.get("launches") or spec["launches"]
            funcs = []
            for L in launches:
                entry = find_entry(ptx.decode(errors="replace"), L["kernel"])
                if entry is None:
                    raise KeyError(f"no PTX entry for kernel {L['kernel']}")
                funcs.append(_ck(cu.cuModuleGetFunction(module, entry.encode())))
        except (CudaError, KeyError) as e:
            for item in spec["inputs"][first:]:
                emit(prog, item, status="crash", detail=f"load: {e}", ms=0)
            if isinstance(e, CudaError):
                return 3
            continue
        for item in spec["inputs"][first:]:
            k = item["index"]
            if k not in data:
                data[k] = _input_data(jobs_dir, job, spec, k)
            host, ref64, ref32 = data[k]
            t0 = time.perf_counter()
            ptrs = []
            try:
                for h in host:
                    dptr = _ck(cu.cuMemAlloc(max(h.nbytes, 4)))
                    ptrs.append(dptr)
                    _ck(cu.cuMemcpyHtoD(dptr, h.ctypes.data, h.nbytes))
                for L, fn in zip(launches, funcs):
                    vals = [np.array([int(ptrs[a["tensor"]])], dtype=np.uint64) if "tensor" in a
                            else np.array([a["scalar"]], dtype=SCALAR[a["type"]]) for a in L["args"]]
                    argv = np.array([v.ctypes.data for v in vals], dtype=np.uint64)
                    g, b = L["grid"], L["block"]
                    _ck(cu.cuLaunchKernel(fn, g[0], g[1], g[2], b[0], b[1], b[2], L["shared_bytes"], stream,
                                          argv.ctypes.data, 0))
                _ck(cu.cuStreamSynchronize(stream))
                res = np.empty_like(host[spec["output"]])
                _ck(cu.cuMemcpyDtoH(res.ctypes.data, ptrs[spec["output"]], res.nbytes))
                for dptr in ptrs:
                    _ck(cu.cuMemFree(dptr))
            except CudaError as e:
                emit(prog, item, status="crash", detail=f"CUDA error {e}", ms=(time.perf_counter() - t0) * 1e3)
                # the context is lost: the program's other inputs are not run (a crash quarantines it anyway)
                for rest in spec["inputs"][spec["inputs"].index(item) + 1:]:
                    emit(prog, rest, status="crash", detail=f"not run: context lost after CUDA error {e} on {item['name']}",
                         ms=0)
                return 3
            m = KM.metrics(res.astype(np.float64), ref64, ref32)
            emit(prog, item, status="ok", ms=(time.perf_counter() - t0) * 1e3, detail="", **m)
        _ck(cu.cuModuleUnload(module))
    return 0


# ---------------------------------------------------------------- driver

def plan(jobs_dir: str) -> list[tuple[int, int, int]]:
    """(substrate index, programs, inputs) per substrate: the work `run` would do."""
    jobs = json.load(open(os.path.join(jobs_dir, "jobs.json")))["substrates"]
    out = []
    for i, job in enumerate(jobs):
        spec = json.load(open(os.path.join(jobs_dir, job["inputs"], "spec.json")))
        for p in job["programs"]:
            if not os.path.exists(os.path.join(jobs_dir, p["ptx"])):
                raise FileNotFoundError(p["ptx"])
        out.append((i, len(job["programs"]), len(spec["inputs"])))
    return out


_STARTED: dict = {}


def last_size_time(proc) -> float:
    """When the worker process was started (for its start-up allowance)."""
    return _STARTED.setdefault(proc.pid, time.time())


def _drive_substrate(jobs_dir, index, n_inputs, out_path, deadline, hang_s, log):
    """Restarts workers until every (program, input) of the substrate has a row or time is up."""
    part = f"{out_path}.{index}"
    open(part, "w").close()
    done_lines = 0
    program, inp = 0, 0
    job = json.load(open(os.path.join(jobs_dir, "jobs.json")))["substrates"][index]
    n_programs = len(job["programs"])
    restarts = 0
    while program < n_programs and time.time() < deadline:
        cmd = [sys.executable, os.path.abspath(__file__), "worker", jobs_dir, str(index), str(program), str(inp), part]
        ready = part + ".ready"
        if os.path.exists(ready):
            os.remove(ready)
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        last_size, last_change = os.path.getsize(part), time.time()
        killed = None
        while proc.poll() is None:
            time.sleep(0.05)
            size = os.path.getsize(part)
            if size != last_size:
                last_size, last_change = size, time.time()
            if not os.path.exists(ready):
                # start-up (imports, cuInit) on a busy host is not a hang; 60 s is
                last_change = time.time() if time.time() - last_size_time(proc) < 60 else last_change
            if time.time() - last_change > hang_s:
                killed = "timeout"
            elif time.time() > deadline:
                killed = "deadline"
            if killed:
                proc.kill()
                proc.wait()
                break
        err = proc.stderr.read() if proc.stderr else ""
        lines = open(part).read().splitlines()
        new = lines[done_lines:]
        done_lines = len(lines)
        # position after the last row written
        for line in new:
            r = json.loads(line)
            program = next(i for i, p in enumerate(job["programs"]) if p["ordinal"] == r["ordinal"] and i >= program)
            inp = r["input_index"] + 1
            if inp >= n_inputs:
                program, inp = program + 1, 0
        if killed == "timeout" and program < n_programs:
            # a hung program hangs again on the next input: its remaining inputs are not run
            spec = json.load(open(os.path.join(jobs_dir, job["inputs"], "spec.json")))
            with open(part, "a") as f:
                for item in spec["inputs"][inp:]:
                    f.write(json.dumps({"substrate": job["substrate"], "problem": job["problem"],
                                        "ordinal": job["programs"][program]["ordinal"], "input": item["name"],
                                        "input_index": item["index"], "status": "timeout",
                                        "detail": f"no progress for {hang_s} s" if item["index"] == inp else
                                        "not run: the program hung on an earlier input",
                                        "ms": hang_s * 1e3 if item["index"] == inp else 0}) + "\n")
                    done_lines += 1
            program, inp = program + 1, 0
        if killed == "deadline":
            log(f"{job['problem']}: deadline at program {program}/{n_programs}")
            break
        if proc.returncode not in (0, None) or killed:
            restarts += 1
            if proc.returncode not in (0, 3, -9) and not killed:
                log(f"{job['problem']}: worker exit {proc.returncode}: {err.strip()[-400:]}")
                if not new:  # no progress: give up on this substrate rather than loop
                    break
        elif proc.returncode == 0:
            break
    log(f"{job['problem']}: {done_lines} rows, {restarts} restarts, stopped at program {program}/{n_programs}")


def run(jobs_dir: str, out_path: str, deadline_s: float, parallel: int, hang_s: float, dry_run: bool) -> int:
    started = time.time()
    work = plan(jobs_dir)
    log_lines = []
    lock = threading.Lock()

    def log(msg):
        with lock:
            line = f"[{time.time() - started:7.1f}s] {msg}"
            log_lines.append(line)
            print(line, flush=True)

    log(f"{len(work)} substrates, {sum(p * i for _, p, i in work)} runs planned")
    if dry_run:
        for i, p, n in work:
            log(f"  substrate {i}: {p} programs x {n} inputs")
        return 0
    deadline = started + deadline_s
    queue = list(work)
    threads = []

    def loop():
        while True:
            with lock:
                if not queue:
                    return
                i, _, n = queue.pop(0)
            if time.time() < deadline:
                _drive_substrate(jobs_dir, i, n, out_path, deadline, hang_s, log)

    for _ in range(max(1, parallel)):
        t = threading.Thread(target=loop)
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    with open(out_path, "w") as out:
        for i, _, _ in work:
            part = f"{out_path}.{i}"
            if os.path.exists(part):
                out.write(open(part).read())
                os.remove(part)
    log(f"done in {time.time() - started:.1f} s")
    with open(out_path + ".log", "w") as f:
        f.write("\n".join(log_lines) + "\n")
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["worker"] and len(argv) == 6:
        return worker(argv[1], int(argv[2]), int(argv[3]), int(argv[4]), argv[5])
    if argv[:1] == ["export"] and len(argv) in (4, 5):
        print(export(argv[1], argv[2], argv[3], full=argv[4:] == ["--full"]))
        return 0
    if argv[:1] == ["import"] and len(argv) == 3:
        print(import_rows(argv[1], argv[2]))
        return 0
    if argv[:1] == ["run"] and len(argv) >= 3:
        opts = {"--deadline": 200.0, "--parallel": 4.0, "--hang": 5.0}
        rest = argv[3:]
        dry = "--dry-run" in rest
        rest = [a for a in rest if a != "--dry-run"]
        for k, v in zip(rest[::2], rest[1::2]):
            if k not in opts:
                print(f"unknown option {k}", file=sys.stderr)
                return 64
            opts[k] = float(v)
        return run(argv[1], argv[2], opts["--deadline"], int(opts["--parallel"]), opts["--hang"], dry)
    print(__doc__, file=sys.stderr)
    return 64


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
