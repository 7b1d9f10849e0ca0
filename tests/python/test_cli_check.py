"""`dirigo check REF.py NEW.py`: the C++ CLI traces through the Python tracer, then checks."""
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DIRIGO = ROOT / "build" / "dirigo"
GOLDEN = ROOT / "tests" / "golden" / "torch"

pytestmark = pytest.mark.skipif(not DIRIGO.exists(), reason="build/dirigo not built (scripts/build.sh)")


def run(*args):
    return subprocess.run([str(DIRIGO), "check", *map(str, args)], capture_output=True, text=True, timeout=600)


def test_two_programs_are_traced_then_checked():
    p = run(GOLDEN / "sum_wrong_dim" / "ref.py", GOLDEN / "sum_wrong_dim" / "new.py", "--device", "cpu")
    assert p.returncode == 1, p.stdout + p.stderr
    assert p.stdout.startswith("BUG")


def test_equal_programs_exit_zero(tmp_path):
    p = run(GOLDEN / "relu_as_clamp" / "ref.py", GOLDEN / "relu_as_clamp" / "new.py", "--device", "cpu",
            "--keep-bundle", tmp_path / "b")
    assert p.returncode == 0, p.stdout + p.stderr
    assert (tmp_path / "b" / "manifest.json").exists()


def test_a_program_that_raises_is_unsupported_not_a_crash(tmp_path):
    bad = tmp_path / "new.py"
    bad.write_text("import torch\nclass ModelNew(torch.nn.Module):\n"
                   "    def __init__(self, a, b):\n        super().__init__()\n"
                   "    def forward(self, x):\n        raise ValueError('boom')\n")
    p = run(GOLDEN / "relu_as_clamp" / "ref.py", bad, "--device", "cpu")
    assert p.returncode == 4, p.stdout + p.stderr
    assert "UNSUPPORTED" in p.stdout
    assert "boom" in p.stdout + p.stderr
