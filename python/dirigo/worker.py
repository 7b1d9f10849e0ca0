"""A warm worker for repeated ``dirigo.check()`` calls: one Python process that has imported torch and
dirigo once, and forks a fresh child for every job (tracing a program, replaying a witness, the state
stage).

User code still never runs in the caller's process, and no job sees another's modules or globals: each
child is a copy of the clean worker taken after the imports, not a reused interpreter. What a warm call
saves is the import of torch (seconds on a small machine) in each of the three or four children a call
starts. The worker never runs a torch operation itself, so no thread pool or CUDA context exists at the
fork.

    python -m dirigo.worker --serve     (started by WarmWorker; requests on stdin, answers on stdout)

Protocol, one JSON object a line. Request: {"id", "module", "argv", "stdout", "stderr", "env", "cwd"}.
Answers: {"id", "pid"} once the child runs (or {"id", "error"}), then {"id", "exit": status} when it
ends (a negative status: killed by that signal).
"""
from __future__ import annotations

import contextlib
import contextvars
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time

# Modules a job may run; each has main(argv) -> int.
JOB_MODULES = ("dirigo.trace", "dirigo.replay", "dirigo.state")
READY = "dirigo-worker ready"


# ------------------------------------------------------------------------------------ the worker process

def _preload() -> None:
    """What every job imports anyway, imported once. No torch operation runs here (see the module doc)."""
    import importlib
    for m in ("numpy", "torch", "torch.nn", "torch.nn.functional", "torch.utils._python_dispatch", "torch._dynamo",
              "torch._subclasses.fake_tensor", "torch.utils.cpp_extension") + JOB_MODULES + (
              "dirigo.load", "dirigo.bundle", "dirigo.match"):
        with contextlib.suppress(Exception):
            importlib.import_module(m)


def _run_job(req: dict, in_session) -> None:
    """In the forked child: become the job, as `python -m MODULE ARGV...` would be."""
    os.setsid()  # its own process group: a kill takes what it started (extension builds) too
    os.close(in_session)  # the worker reports the pid only now: a killpg(pid) from then on reaches the job
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.set_wakeup_fd(-1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    out = os.open(req.get("stdout") or os.devnull, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    err = os.open(req["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600) if req.get("stderr") else out
    os.dup2(out, 1)
    os.dup2(err, 2)
    for fd in {devnull, out, err}:
        if fd > 2:
            os.close(fd)
    sys.stdin = open(0, closefd=False)
    sys.stdout = open(1, "w", closefd=False, buffering=1)
    sys.stderr = open(2, "w", closefd=False, buffering=1)
    if req.get("env") is not None:
        os.environ.clear()
        os.environ.update(req["env"])
    if req.get("cwd"):
        os.chdir(req["cwd"])
    rc = 1
    try:
        import importlib
        mod = importlib.import_module(req["module"])
        sys.argv = [req["module"]] + list(req["argv"])
        rc = mod.main(list(req["argv"]))
        rc = 0 if rc is None else int(rc)
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:  # noqa: BLE001 - reported like an uncaught exception in `python -m`
        import traceback
        traceback.print_exc()
        rc = 1
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(rc & 0xFF)


def serve() -> int:
    """The worker's loop: fork a child per request, report its pid and, when it ends, its status."""
    _preload()
    rd, wr = os.pipe()
    os.set_blocking(wr, False)
    signal.set_wakeup_fd(wr)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # wakes select() through the wakeup fd
    reply = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # stray prints never corrupt the answer stream
    reply.write(READY + "\n")
    jobs: dict[int, object] = {}  # pid -> request id
    buf = b""
    stdin_open = True
    while stdin_open or jobs:
        try:
            ready, _, _ = select.select([0, rd] if stdin_open else [rd], [], [], 1.0)
        except InterruptedError:
            ready = []
        if rd in ready:
            with contextlib.suppress(BlockingIOError, InterruptedError):
                os.read(rd, 4096)
        while jobs:  # reap whatever ended
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            rid = jobs.pop(pid, None)
            code = os.waitstatus_to_exitcode(status)
            if rid is not None:
                reply.write(json.dumps({"id": rid, "exit": code}) + "\n")
        if 0 in ready:
            chunk = os.read(0, 65536)
            if not chunk:
                stdin_open = False  # the caller went away: finish nothing new, kill what runs
                for pid in list(jobs):
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(pid, signal.SIGKILL)
                continue
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                if not line.strip():
                    continue
                req = json.loads(line)
                if req.get("module") not in JOB_MODULES:
                    reply.write(json.dumps({"id": req.get("id"), "error": f"not a job module: {req.get('module')}"}) + "\n")
                    continue
                reply.flush()
                gate_r, gate_w = os.pipe()
                pid = os.fork()
                if pid == 0:
                    reply.close()
                    os.close(rd)
                    os.close(wr)
                    os.close(gate_r)
                    _run_job(req, gate_w)
                os.close(gate_w)
                with contextlib.suppress(OSError):
                    while os.read(gate_r, 1):  # EOF once the child has its own session (or died)
                        pass
                os.close(gate_r)
                jobs[pid] = req["id"]
                reply.write(json.dumps({"id": req["id"], "pid": pid}) + "\n")
    return 0


# ------------------------------------------------------------------------------------ the caller's side

class WorkerGone(RuntimeError):
    pass


class Job:
    """A child of the warm worker, with the part of subprocess.Popen the callers use: pid, returncode,
    wait(timeout) (raises subprocess.TimeoutExpired) and kill()."""

    def __init__(self, worker: "WarmWorker", rid: int, args: list):
        self._worker, self._id, self.args = worker, rid, args
        self._started, self._ended = threading.Event(), threading.Event()
        self.pid: int = -1
        self.returncode: int | None = None
        self.error: str | None = None

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended.wait(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout)
        return self.returncode

    def kill(self) -> None:
        if self.pid > 0 and self.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)


class WarmWorker:
    """The caller's handle on one worker process (started on creation; it waits until torch is imported)."""

    def __init__(self, env: dict | None = None, start_timeout: float = 300.0):
        pkg_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        full_env = dict(os.environ if env is None else env)
        full_env["PYTHONPATH"] = pkg_root + (os.pathsep + full_env["PYTHONPATH"] if full_env.get("PYTHONPATH") else "")
        self._proc = subprocess.Popen([sys.executable, "-m", "dirigo.worker", "--serve"], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=full_env,
                                      start_new_session=True)
        self._lock = threading.Lock()
        self._jobs: dict[int, Job] = {}
        self._next = 0
        self.started_s = time.monotonic()
        line = _readline(self._proc.stdout, start_timeout)
        if line.strip() != READY:
            self.close()
            raise WorkerGone(f"the warm worker did not start ({line.strip()[:200] or 'no answer'})")
        self.ready_s = time.monotonic() - self.started_s
        self._reader = threading.Thread(target=self._read, name="dirigo-worker-reader", daemon=True)
        self._reader.start()

    @property
    def alive(self) -> bool:
        return self._proc.poll() is None

    def _read(self) -> None:
        for raw in self._proc.stdout:
            try:
                msg = json.loads(raw)
            except json.JSONDecodeError:
                continue
            job = self._jobs.get(msg.get("id"))
            if job is None:
                continue
            if "pid" in msg:
                job.pid = msg["pid"]
                job._started.set()
            elif "exit" in msg:
                job.returncode = msg["exit"]
                self._jobs.pop(job._id, None)
                job._started.set()
                job._ended.set()
            elif "error" in msg:
                job.error, job.returncode = msg["error"], 70
                self._jobs.pop(job._id, None)
                job._started.set()
                job._ended.set()
        for job in list(self._jobs.values()):  # the worker died: nothing it ran will answer
            job.error = job.error or "the warm worker exited"
            if job.returncode is None:
                job.returncode = -signal.SIGKILL
            job._started.set()
            job._ended.set()
        self._jobs.clear()

    def spawn(self, module: str, argv: list[str], *, stdout: str | None = None, stderr: str | None = None,
              env: dict | None = None, cwd: str | None = None) -> Job:
        """Run `python -m MODULE ARGV` as a fork of the worker; stdout/stderr: file paths (stderr None: with
        stdout). Raises WorkerGone when the worker cannot take it."""
        with self._lock:
            if not self.alive:
                raise WorkerGone("the warm worker exited")
            self._next += 1
            job = Job(self, self._next, [module] + list(argv))
            self._jobs[job._id] = job
            # The caller's environment as it is now (it may have changed since the worker started), plus `env`.
            req = {"id": job._id, "module": module, "argv": list(argv), "stdout": stdout, "stderr": stderr,
                   "env": {**os.environ, **(env or {})}, "cwd": cwd or os.getcwd()}
            try:
                self._proc.stdin.write((json.dumps(req) + "\n").encode())
                self._proc.stdin.flush()
            except (BrokenPipeError, OSError) as e:
                self._jobs.pop(job._id, None)
                raise WorkerGone(f"the warm worker exited ({e})") from e
        job._started.wait()
        if job.error and job.pid < 0:
            raise WorkerGone(job.error)
        return job

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._proc.stdin.close()  # EOF: the worker kills what still runs and exits
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait()


def _readline(stream, timeout: float) -> str:
    ready, _, _ = select.select([stream], [], [], timeout)
    return stream.readline().decode("utf-8", "replace") if ready else ""


# ------------------------------------------------------------------------------------ which calls use it

_enabled: contextvars.ContextVar[bool] = contextvars.ContextVar("dirigo_warm", default=False)
_shared: WarmWorker | None = None
_shared_pid = -1
_shared_lock = threading.Lock()


def _wanted() -> bool:
    return os.environ.get("DIRIGO_WARM", "1") != "0"


@contextlib.contextmanager
def warm(enabled: bool = True):
    """Within this block, dirigo's children (tracer, replay, state stage) are forks of the process-wide warm
    worker (started on first use) instead of new interpreters. DIRIGO_WARM=0 turns it off everywhere."""
    token = _enabled.set(bool(enabled) and _wanted())
    try:
        yield
    finally:
        _enabled.reset(token)


def shared() -> WarmWorker | None:
    """The process-wide warm worker when the current call wants one (see warm()); None otherwise, or when it
    cannot start (the callers then start plain interpreters)."""
    global _shared, _shared_pid
    if not _enabled.get():
        return None
    with _shared_lock:
        if _shared is not None and (_shared_pid != os.getpid() or not _shared.alive):
            _shared = None  # a fork of the caller, or a worker that died: start another
        if _shared is None:
            try:
                _shared, _shared_pid = WarmWorker(), os.getpid()
            except (OSError, WorkerGone):
                return None
        return _shared


def shutdown() -> None:
    """Stop the process-wide warm worker (the next warm call starts a new one)."""
    global _shared
    with _shared_lock:
        if _shared is not None and _shared_pid == os.getpid():
            _shared.close()
        _shared = None


def popen(module: str, argv: list[str], *, stdout_path: str | None, env: dict | None = None,
          plain_env: dict | None = None, merge_stderr: bool = True, stderr_path: str | None = None):
    """`python -m MODULE ARGV` with stdout (and stderr unless stderr_path) into stdout_path: a fork of the
    warm worker when the call wants one, else a new interpreter (with `plain_env`). The result has pid,
    returncode, wait(timeout) and kill()."""
    w = shared()
    if w is not None:
        with contextlib.suppress(WorkerGone):
            return w.spawn(module, argv, stdout=stdout_path, stderr=stderr_path if not merge_stderr else None,
                           env=env)
    if plain_env is None:  # this package first on the child's path, as in the worker
        plain_env = dict(os.environ)
        pkg_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        plain_env["PYTHONPATH"] = pkg_root + (os.pathsep + plain_env["PYTHONPATH"] if plain_env.get("PYTHONPATH") else "")
    plain_env = {**plain_env, **(env or {})}
    out = open(stdout_path, "wb") if stdout_path else subprocess.DEVNULL
    err = subprocess.STDOUT if merge_stderr else (open(stderr_path, "wb") if stderr_path else subprocess.DEVNULL)
    try:
        return subprocess.Popen([sys.executable, "-m", module] + list(argv), stdout=out, stderr=err,
                                stdin=subprocess.DEVNULL, env=plain_env, start_new_session=True)
    finally:
        for f in (out, err):
            if hasattr(f, "close"):
                f.close()


import atexit  # noqa: E402

atexit.register(shutdown)


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        sys.exit(serve())
    print(__doc__.strip().splitlines()[0])
    sys.exit(64)
