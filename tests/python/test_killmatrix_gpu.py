"""GPU kill-matrix runner plumbing without a GPU (tests/python/fake_cuda stands in for
cuda.bindings): host-side mutants launch with their own plan, a rejected launch is a crash row,
and import replaces a program's earlier GPU rows without touching the others'."""
import json
import os
import sqlite3
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
GPU = os.path.join(HERE, "..", "..", "python", "dirigo", "killmatrix_gpu.py")
PTX = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry double_it(.param .u64 a) { ret; }\n"


def make_jobs(root):
    d = root / "jobs" / "p"
    (d / "inputs").mkdir(parents=True)
    (d / "ptx").mkdir()
    (d / "ptx" / "original.ptx").write_text(PTX)
    L = {"kernel": "double_it", "grid": [3, 1, 1], "block": [4, 1, 1], "shared_bytes": 0,
         "args": [{"tensor": 0}, {"tensor": 1}, {"scalar": 10, "type": "s32"}]}
    spec = {"tensors": [{"numel": 10, "dtype": "f32"}, {"numel": 10, "dtype": "f32"}], "launches": [L], "output": 1,
            "inputs": [{"index": k, "name": f"kernelbench_randn/{k}"} for k in range(2)]}
    (d / "inputs" / "spec.json").write_text(json.dumps(spec))
    for k in range(2):
        np.zeros(20, dtype="<f4").tofile(d / "inputs" / f"{k}.in32")
        np.zeros(10, dtype="<f8").tofile(d / "inputs" / f"{k}.ref64")
        np.zeros(10, dtype="<f8").tofile(d / "inputs" / f"{k}.ref32")
    programs = [{"ordinal": 0, "ptx": "p/ptx/original.ptx"},
                {"ordinal": 5, "ptx": "p/ptx/original.ptx", "launches": [dict(L, grid=[2, 1, 1], block=[2, 1, 1])]},
                {"ordinal": 6, "ptx": "p/ptx/original.ptx", "launches": [dict(L, grid=[0, 1, 1])]}]
    (root / "jobs" / "jobs.json").write_text(json.dumps(
        {"substrates": [{"substrate": "s/p.py", "problem": "p", "inputs": "p/inputs", "programs": programs}]}))
    return root / "jobs"


def test_host_plans_launch_as_planned_and_zero_grid_is_a_crash(tmp_path):
    jobs = make_jobs(tmp_path)
    log = tmp_path / "launches.log"
    env = dict(os.environ, PYTHONPATH=os.path.join(HERE, "fake_cuda"), FAKE_CUDA_LOG=str(log))
    out = tmp_path / "out.jsonl"
    subprocess.run([sys.executable, GPU, "run", str(jobs), str(out), "--deadline", "60", "--parallel", "1"],
                   env=env, check=True, capture_output=True, timeout=120)
    rows = [json.loads(line) for line in open(out)]
    by = {(r["ordinal"], r["input"]): r for r in rows}
    assert len(by) == 6
    assert by[(0, "kernelbench_randn/0")]["status"] == "ok"
    assert by[(5, "kernelbench_randn/1")]["status"] == "ok"
    assert by[(6, "kernelbench_randn/0")]["status"] == "crash"
    assert "CUDA error" in by[(6, "kernelbench_randn/0")]["detail"]
    launches = [json.loads(line) for line in open(log)]
    assert launches.count(["double_it", [3, 1, 1], [4, 1, 1], 0]) == 2      # the original on 2 inputs
    assert launches.count(["double_it", [2, 1, 1], [2, 1, 1], 0]) == 2      # the host mutant's plan
    assert ["double_it", [0, 1, 1], [4, 1, 1], 0] in launches


def test_import_replaces_rows_per_program(tmp_path):
    db = tmp_path / "s.sqlite"
    con = sqlite3.connect(db)
    con.executescript("""
      CREATE TABLE substrates(id INTEGER PRIMARY KEY, path TEXT);
      CREATE TABLE mutants(id INTEGER PRIMARY KEY, substrate_id INTEGER, ordinal INTEGER);
      CREATE TABLE inputs(id INTEGER PRIMARY KEY, substrate_id INTEGER, name TEXT);
      CREATE TABLE runs(id INTEGER PRIMARY KEY, substrate_id INTEGER, mutant_id INTEGER, input_id INTEGER, source TEXT,
        status TEXT, t_eq REAL, t_eq32 REAL, max_abs REAL, nonfinite_mismatch INTEGER, ms REAL, detail TEXT);
      INSERT INTO substrates VALUES(1, 's/p.py');
      INSERT INTO mutants VALUES(10, 1, 5), (11, 1, 6);
      INSERT INTO inputs VALUES(100, 1, 'kernelbench_randn/0');
      INSERT INTO runs(substrate_id, mutant_id, input_id, source, status, t_eq) VALUES
        (1, NULL, 100, 'gpu', 'ok', 0.0), (1, 10, 100, 'gpu', 'ok', 0.5), (1, 10, 100, 'cpu', 'ok', 0.7),
        (1, 11, 100, 'gpu', 'ok', 0.25);""")
    con.commit()
    jsonl = tmp_path / "new.jsonl"
    jsonl.write_text(json.dumps({"substrate": "s/p.py", "ordinal": 5, "input": "kernelbench_randn/0", "status": "ok",
                                 "t_eq": 0.125, "t_eq32": 0.125, "max_abs": 1.0, "nonfinite_mismatch": 0, "ms": 1}) + "\n")
    subprocess.run([sys.executable, GPU, "import", str(db), str(jsonl)], check=True, capture_output=True, timeout=120)
    rows = sorted(con.execute("SELECT mutant_id, source, t_eq FROM runs").fetchall(), key=str)
    assert rows == sorted([(None, "gpu", 0.0), (10, "gpu", 0.125), (10, "cpu", 0.7), (11, "gpu", 0.25)], key=str)
