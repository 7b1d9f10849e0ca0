"""`dirigo sweep`: pairs from a directory or JSONL, results appended to JSONL or SQLite, a local Ray run
that is killed halfway and resumed."""
import io
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from dirigo import sweep

ROOT = pathlib.Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "torch"
# Small pure-PyTorch pairs of our own, with what each must give.
PAIRS = {"sum_wrong_dim": "BUG", "relu_as_clamp": "EQUAL", "min_sum_swapped": "BUG", "tanh_via_sigmoid": "EQUAL"}
EQUAL = ("CHECKED", "VERIFIED")


def write_jsonl(path, names):
    with open(path, "w") as fh:
        for n in names:
            fh.write(json.dumps({"id": n, "ref": str(GOLDEN / n / "ref.py"), "new": str(GOLDEN / n / "new.py")}) + "\n")


def test_pairs_from_folders_side_by_side_files_and_jsonl(tmp_path):
    folders = sweep.read_pairs(str(GOLDEN))
    assert {"sum_wrong_dim", "relu_as_clamp"} <= {p.id for p in folders}
    flat = tmp_path / "flat"
    flat.mkdir()
    for n in ("a", "b"):
        (flat / f"{n}_ref.py").write_text("x = 1\n")
        (flat / f"{n}_new.py").write_text("x = 2\n")
    assert [p.id for p in sweep.read_pairs(str(flat))] == ["a", "b"]
    j = tmp_path / "pairs.jsonl"
    j.write_text('{"id": "p1", "ref": "flat/a_ref.py", "new": "flat/a_new.py", "atol": 0.001}\n\n'
                 '{"ref": "flat/b_ref.py", "new": "flat/b_new.py", "tolerance": {"rtol": 0.5}}\n')
    ps = sweep.read_pairs(str(j))
    assert [(p.id, p.atol, p.rtol) for p in ps] == [("p1", 0.001, None), ("3", None, 0.5)]
    assert ps[0].ref == str(tmp_path / "flat" / "a_ref.py")


def test_bad_pairs_are_clear_errors(tmp_path):
    with pytest.raises(sweep.PairsError, match="no such file"):
        sweep.read_pairs(str(tmp_path / "missing.jsonl"))
    j = tmp_path / "p.jsonl"
    j.write_text('{"ref": "x.py"}\n')
    with pytest.raises(sweep.PairsError, match=r"p.jsonl:1: not a pair"):
        sweep.read_pairs(str(j))
    (tmp_path / "a.py").write_text("")
    j.write_text('{"id": 1, "ref": "a.py", "new": "a.py"}\n{"id": 1, "ref": "a.py", "new": "a.py"}\n')
    with pytest.raises(sweep.PairsError, match="appears twice"):
        sweep.read_pairs(str(j))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(sweep.PairsError, match="no pairs"):
        sweep.read_pairs(str(empty))


def rec(i, outcome="BUG"):
    return {"id": i, "outcome": outcome, "seconds": {"total": 1.0}, "finished_at": "now"}


@pytest.mark.parametrize("name", ["r.jsonl", "r.sqlite"])
def test_results_append_and_read_back(tmp_path, name):
    r = sweep.Results(str(tmp_path / name))
    r.add(rec("a"))
    r.add(rec("b", "CHECKED"))
    r.close()
    again = sweep.Results(str(tmp_path / name))
    assert {k: v["outcome"] for k, v in again.done().items()} == {"a": "BUG", "b": "CHECKED"}


def test_a_partial_last_line_from_a_kill_is_dropped(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text(json.dumps(rec("a")) + "\n" + '{"id": "b", "outc')
    r = sweep.Results(str(p))
    assert list(r.done()) == ["a"]
    r.add(rec("c"))
    assert [json.loads(x)["id"] for x in p.read_text().splitlines()] == ["a", "c"]


def test_summary_table_counts_and_lists_bugs():
    recs = [dict(rec("x"), location={"output": "out0", "index": [0, 1]}, evidence="replay-cpu"),
            rec("y", "CHECKED"), rec("z", "CHECKED")]
    s = sweep.summary(recs, 65.0, 1)
    assert "3 pair(s), 1 from an earlier run, 1m05s this run" in s
    assert "BUG               1   33.3%" in s and "CHECKED           2   66.7%" in s
    assert "x" in s and "out0[0, 1]" in s and "replay-cpu" in s


def _ray_leftovers(marker):
    """Pids of processes of the killed sweep (its Ray head and workers) by the marker in their environment."""
    pids = []
    for d in pathlib.Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if f"DIRIGO_SWEEP_TEST={marker}".encode() in (d / "environ").read_bytes().split(b"\0"):
                pids.append(int(d.name))
        except OSError:
            continue
    return pids


def test_sweep_on_local_ray_resumes_after_a_kill(tmp_path):
    pairs = tmp_path / "pairs.jsonl"
    write_jsonl(pairs, PAIRS)
    out = tmp_path / "results.jsonl"
    marker = f"{os.getpid()}-{time.monotonic_ns()}"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"), DIRIGO_SWEEP_TEST=marker, RAY_DEDUP_LOGS="0")
    cmd = [sys.executable, "-m", "dirigo.sweep", str(pairs), "--out", str(out), "--num-cpus", "2", "--budget", "10",
           "--window", "1"]
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 400
    while time.monotonic() < deadline and p.poll() is None:
        if out.exists() and len(out.read_text().splitlines()) >= 1:
            break
        time.sleep(0.05)  # warm Ray workers check a golden pair in well under 0.5 s
    assert p.poll() is None, "the sweep ended before it could be killed: " + p.stderr.read().decode()[-2000:]
    done_before = len(out.read_text().splitlines())
    assert 1 <= done_before < len(PAIRS)
    os.killpg(p.pid, signal.SIGKILL)  # halfway, without any chance to clean up
    p.wait()
    for pid in _ray_leftovers(marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    q = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert q.returncode == 0, q.stderr[-3000:]
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    ids = [r["id"] for r in rows]
    assert sorted(ids) == sorted(PAIRS), ids  # every pair once: the finished ones were not run again
    for r in rows:
        assert r["outcome"] in (EQUAL if PAIRS[r["id"]] == "EQUAL" else (PAIRS[r["id"]],)), r
    assert f"{len(PAIRS)} pair(s), {done_before} from an earlier run" in q.stdout, q.stdout
    assert "ETA" in q.stderr
    bug = next(r for r in rows if r["id"] == "sum_wrong_dim")
    assert bug["location"]["output"] and bug["evidence"] == "replay-cpu" and bug["seconds"]["trace"] > 0
    for pid in _ray_leftovers(marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_a_local_ray_that_cannot_start_falls_back_to_thread_pools(tmp_path, monkeypatch):
    """Ray's raylet is late on a loaded machine: a local sweep runs in thread pools and says so; a cluster
    address that fails stays an error."""
    def late(*a, **k):
        raise Exception("The current node timed out during startup. This could happen because ...")
    monkeypatch.setattr(sweep, "_RayExecutor", late)
    results = sweep.Results(str(tmp_path / "r.jsonl"))
    results.add(rec("a"))
    pair = sweep.Pair(id="a", ref="ref.py", new="new.py")
    log = io.StringIO()
    out = sweep.run([pair], results, sweep.Options(), num_cpus=1, progress_stream=log)
    assert [r["id"] for r in out] == ["a"]
    assert "local Ray did not start" in log.getvalue() and "--executor local" in log.getvalue()
    with pytest.raises(Exception, match="timed out during startup"):
        sweep.run([pair], results, sweep.Options(), address="10.0.0.1:6379", num_cpus=1, progress_stream=log)
