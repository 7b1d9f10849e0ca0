"""The warm worker (dirigo.worker): children are forks of one process that imported torch, isolated
from each other, with the caller's current environment, killable on a timeout."""
import os
import pathlib
import time

import pytest

from dirigo import api, trace, worker

ROOT = pathlib.Path(__file__).resolve().parents[2]
GELU = ROOT / "examples" / "gelu_linear"

# A program whose get_inputs fails unless the caller's environment reached it, and that fails when a
# previous job's module state leaked into this one (each job must start from the clean worker).
PROBE = """
import os, torch, torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        job = os.environ["DIRIGO_PROBE_JOB"]
        if getattr(torch, "_dirigo_probe_job", job) != job:
            raise RuntimeError("state of an earlier job leaked into this one")
        torch._dirigo_probe_job = job
    def forward(self, x):
        return x * 2
def get_inputs():
    if os.environ.get("DIRIGO_PROBE") != "yes":
        raise RuntimeError("the caller's environment did not reach the job")
    return [torch.randn(4)]
def get_init_inputs():
    return []
"""

SLOW = """
import time, torch, torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        time.sleep(120)
        return x
def get_inputs():
    return [torch.randn(4)]
def get_init_inputs():
    return []
"""


@pytest.fixture(scope="module")
def warm():
    with worker.warm():
        w = worker.shared()
        assert w is not None and w.alive
        yield w


def test_jobs_are_forks_that_see_the_callers_environment_and_not_each_other(warm, tmp_path, monkeypatch):
    prog = tmp_path / "probe.py"
    prog.write_text(PROBE)
    monkeypatch.setenv("DIRIGO_PROBE", "yes")  # set after the worker started
    with worker.warm():
        for k in range(2):
            monkeypatch.setenv("DIRIGO_PROBE_JOB", str(k))
            r = trace.trace(str(prog), out=str(tmp_path / f"b{k}"), device="cpu", timeout=120)
            assert r.status == "ok", r.message
    monkeypatch.setenv("DIRIGO_PROBE", "no")
    monkeypatch.setenv("DIRIGO_PROBE_JOB", "2")
    with worker.warm():
        r = trace.trace(str(prog), out=str(tmp_path / "b3"), device="cpu", timeout=120)
    assert r.status == "error" and "environment did not reach" in r.message, r.message


def test_warm_calls_fork_the_worker_and_plain_calls_start_interpreters(warm, tmp_path):
    with worker.warm():
        p = worker.popen("dirigo.state", ["--help"], stdout_path=str(tmp_path / "o"))
        assert isinstance(p, worker.Job) and p.wait(60) == 0
    assert "python -m dirigo.state" in (tmp_path / "o").read_text()
    with worker.warm(False):
        p = worker.popen("dirigo.state", ["--help"], stdout_path=str(tmp_path / "o2"))
        assert not isinstance(p, worker.Job) and p.wait(120) == 0


def test_a_job_past_its_timeout_is_killed_and_the_worker_serves_the_next(warm, tmp_path):
    slow = tmp_path / "slow.py"
    slow.write_text(SLOW)
    t = time.monotonic()
    with worker.warm():
        r = trace.trace(str(slow), out=str(tmp_path / "b"), device="cpu", timeout=3)
    assert r.status == "error" and "did not finish within 3 s" in r.message, r.message
    assert time.monotonic() - t < 60
    assert warm.alive
    with worker.warm():
        r = trace.trace(str(GELU / "ref.py"), out=str(tmp_path / "b2"), device="cpu", timeout=120)
    assert r.status == "ok", r.message


def test_a_job_killed_right_after_it_starts_is_killed(warm, tmp_path):
    """A timeout that is already spent when the job starts kills it at once: the worker reports a job's pid
    only once the child leads its own process group, so the caller's killpg(pid) cannot miss it."""
    slow = tmp_path / "slow.py"
    slow.write_text(SLOW)
    t = time.monotonic()
    with worker.warm():
        r = trace.trace(str(slow), out=str(tmp_path / "b"), device="cpu", timeout=0)
    # killed either still loading (UNSUPPORTED: environment) or just after: the tiny program may load
    # before the kill lands on a busy machine; in both cases it was killed, not waited for
    assert r.status in ("unsupported", "error") and "within 0 s (killed)" in r.message, r.message
    assert time.monotonic() - t < 60
    assert warm.alive


def test_only_dirigos_job_modules_run(warm, tmp_path):
    with pytest.raises(worker.WorkerGone, match="not a job module"):
        warm.spawn("os", [], stdout=str(tmp_path / "o"))


def test_a_warm_child_traces_large_programs_on_fake_tensors(warm, tmp_path):
    """The worker has imported torch._dynamo, which imports triton; a program that never imports triton
    still takes the fake-tensor path there (it once ran on real tensors, 6 GiB in test_trace's case)."""
    from tracing import manifest, write_program
    ref = write_program(tmp_path, "ref.py", "class Model(nn.Module):\n    def forward(self, x):\n"
                        "        return torch.softmax(x, dim=1)\n", inputs="[torch.rand(64, 256)]")
    with worker.warm():
        r = trace.trace(ref, None, str(tmp_path / "b"), timeout=90, real_limit_bytes=4096)
    assert r.status == "ok", r.message
    m, files = manifest(str(tmp_path / "b"))
    assert "fake" in m["trace_notes"][0] and not any(k.startswith("data/") for k in files)


def test_check_gives_the_same_verdict_warm_and_cold():
    warm_v = api.check(str(GELU / "ref.py"), str(GELU / "bad.py"), device="cpu")
    cold_v = api.check(str(GELU / "ref.py"), str(GELU / "bad.py"), device="cpu", warm=False)
    assert (warm_v.outcome, warm_v.evidence) == (cold_v.outcome, cold_v.evidence) == ("BUG", "replay-cpu")
    assert warm_v.location["index"] == cold_v.location["index"]


def test_dirigo_warm_0_turns_it_off(monkeypatch):
    monkeypatch.setenv("DIRIGO_WARM", "0")
    with worker.warm():
        assert worker.shared() is None
