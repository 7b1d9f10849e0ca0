"""A candidate that faults on the GPU (an illegal address, a misaligned access) where the reference ran is
a BUG observed on the real program (docs/check.md "Evidence labels", crash-gpu), not an UNSUPPORTED trace.
No GPU here: the tracer's workers and the tracer itself are stood in for; the classification, the exit
status and the CLI's verdict are what is tested."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

from dirigo import trace

ROOT = pathlib.Path(__file__).resolve().parents[2]
DIRIGO = pathlib.Path(os.environ.get("DIRIGO_BIN", ROOT / "build" / "dirigo"))
FAULT = "CUDA error: an illegal memory access was encountered"


def test_device_faults_are_told_from_other_errors():
    assert trace.device_fault(RuntimeError(FAULT + "\nCUDA kernel errors might be asynchronously reported"))
    assert trace.device_fault(RuntimeError("CUDA error: misaligned address"))
    assert not trace.device_fault(RuntimeError("CUDA error: out of memory"))  # the machine's limit, not a bug
    assert not trace.device_fault(ValueError("mat1 and mat2 shapes cannot be multiplied"))


@pytest.mark.parametrize("who,status,code", [("new", "crash", trace.EXIT_CANDIDATE_CRASH),
                                             ("ref", "error", trace.EXIT_PROGRAM_ERROR)])
def test_only_the_candidates_fault_is_a_crash(monkeypatch, tmp_path, who, status, code):
    results = {"ref": {"status": "ok"}, "new": {"status": "ok"}}
    results[who] = {"status": "crash", "message": f"the program raised AcceleratorError: {FAULT} in forward"}
    monkeypatch.setattr(trace, "_spawn", lambda spec, workdir: (None, spec["name"]))
    monkeypatch.setattr(trace, "_wait", lambda proc, name, *a, **k: results[name])
    r = trace.trace("ref.py", "new.py", str(tmp_path / "b"), device="cuda", shim="none")
    assert (r.status, r.exit_code) == (status, code), r.message
    assert FAULT in r.message and ("candidate" if who == "new" else "reference") in r.message


@pytest.mark.skipif(not DIRIGO.exists(), reason="build/dirigo not built")
def test_cli_reports_the_candidates_crash_as_a_bug(tmp_path):
    # DIRIGO_PYTHON stands in for the interpreter: its `-m dirigo.trace ... --json` answers as the tracer does
    # when the candidate faulted
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho '" + json.dumps({"status": "crash", "message": "candidate new.py: the program "
                    "raised AcceleratorError: " + FAULT + " in forward on the GPU, where the reference ran"}) +
                    "'\nexit 5\n")
    fake.chmod(0o755)
    env = dict(os.environ, DIRIGO_PYTHON=str(fake))
    p = subprocess.run([str(DIRIGO), "check", "ref.py", "new.py", "--device", "cuda", "--json"], capture_output=True,
                       text=True, env=env, cwd=tmp_path)
    rep = json.loads(p.stdout)
    assert p.returncode == 1 and rep["outcome"] == "BUG" and rep["evidence"] == "crash-gpu", p.stdout + p.stderr
    assert rep["stage"] == "trace" and FAULT in rep["reason"]
    p = subprocess.run([str(DIRIGO), "check", "ref.py", "new.py", "--device", "cuda"], capture_output=True, text=True,
                       env=env, cwd=tmp_path)
    assert p.stdout.startswith("BUG") and "evidence: crash-gpu" in p.stdout, p.stdout


def test_environment_problems_are_told_from_the_programs_own_exceptions():
    import subprocess as sp
    assert "not installed" in trace.environment_problem(ModuleNotFoundError("No module named 'x'", name="x"))
    assert trace.environment_problem(MemoryError()) == "out of memory"
    assert trace.environment_problem(RuntimeError("CUDA out of memory. Tried to allocate 2 GiB")) == "out of memory"
    assert "did not build" in trace.environment_problem(RuntimeError("Error building extension 'k'"))
    assert "did not build" in trace.environment_problem(sp.CalledProcessError(1, ["ninja", "-v"]))
    assert trace.environment_problem(TypeError("can only concatenate tuple (not \"int\") to tuple")) is None
    assert trace.environment_problem(ValueError("boom")) is None
