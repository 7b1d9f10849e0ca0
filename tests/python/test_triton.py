"""Triton launches traced into bundles (dirigo.triton_trace), on the CPU: kernels compiled for sm_90,
recorded through Triton's launch path, not run (docs/triton.md)."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

triton = pytest.importorskip("triton")
tl = pytest.importorskip("triton.language")

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "triton"
DIRIGO = pathlib.Path(os.environ.get("DIRIGO_BIN", ROOT / "build" / "dirigo"))

from dirigo import trace, triton_trace  # noqa: E402


def _launches(prog):
    return [op for op in prog["ops"] if op["kind"] == "launch"]


@pytest.fixture(scope="module")
def elementwise_bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("tr") / "b"
    # Triton's kernel cache keys on the source, not its path: a kernel compiled from another checkout
    # would bring that checkout's path in its PTX .file lines
    os.environ["TRITON_CACHE_DIR"] = str(tmp_path_factory.mktemp("triton-cache"))
    r = trace.trace(str(EXAMPLES / "elementwise" / "ref.py"), str(EXAMPLES / "elementwise" / "good.py"), str(out),
                    device="cpu", timeout=240)
    assert r.status == "ok", r.message
    return out


def test_cpu_trace_records_the_launch_like_a_cuda_launch(elementwise_bundle):
    m = json.loads((elementwise_bundle / "manifest.json").read_text())
    ref, new = m["programs"]
    (launch,) = _launches(new)
    assert launch["kernel"] == "swish_scale_clamp" and launch["grid"] == [3, 1, 1] and launch["block"] == [128, 1, 1]
    assert launch["shared_bytes"] == 0 and launch["source_lines"]
    x = next(i["tensor"] for i in new["inputs"] if i["name"] == "x")
    before = new["ops"][new["ops"].index(launch) - 1]  # empty_like's result, as the program holds it (a detach)
    args = launch["args"]
    # x, out, n (350), scale (2.0), then Triton's global and profile scratch pointers, null
    assert args[0] == {"tensor": x, "byte_offset": 0}
    assert args[1] == {"tensor": before["outputs"][0], "byte_offset": 0}
    assert args[2] == {"scalar": 350, "type": "u32"} and args[3] == {"scalar": 2.0, "type": "f32"}
    assert args[4:] == [{"pointer": "0x0", "unbound": True}] * 2
    assert launch["triton"]["constexprs"] == {"BLOCK": 128} and launch["triton"]["compiled_only"]
    assert launch["triton"]["arg_names"] == ["x_ptr", "out_ptr", "n", "scale"]
    mod = next(mm for mm in m["modules"] if mm["id"] == launch["module"])
    ptx = (elementwise_bundle / mod["path"]).read_text()
    assert ".visible .entry swish_scale_clamp(" in ptx and mod["source"] == "triton:swish_scale_clamp"
    # the candidate's kernels did not run: its outputs carry no values, and the notes say why
    assert all("data" not in o for o in new["outputs"]) and all("data" in o for o in ref["outputs"])
    assert any("not run" in n for n in m["trace_notes"])


@pytest.mark.skipif(not DIRIGO.exists(), reason=f"{DIRIGO} not built")
def test_cpu_traced_triton_bundle_validates_and_checks(elementwise_bundle):
    p = subprocess.run([str(DIRIGO), "bundle", "validate", str(elementwise_bundle)], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    p = subprocess.run([str(DIRIGO), "check", str(elementwise_bundle), "--budget", "20", "--json"],
                       capture_output=True, text=True, timeout=200)
    rep = json.loads(p.stdout)
    assert rep["outcome"] == "VERIFIED", rep["reason"]


def _code(ptx: str) -> str:
    """The PTX without its DWARF sections, whose lengths depend on the checkout's path."""
    return ptx.split("\t.section\t.debug", 1)[0]


def test_committed_bundle_ptx_is_what_this_triton_compiles(elementwise_bundle):
    """The committed CPU bundles are reproducible: same Triton, same PTX (paths made relative)."""
    if triton.__version__ != "3.6.0":
        pytest.skip(f"committed bundles were traced with triton 3.6.0, this is {triton.__version__}")
    here = json.loads((elementwise_bundle / "manifest.json").read_text())
    committed = json.loads((EXAMPLES / "elementwise" / "bundle-good" / "manifest.json").read_text())
    text = (elementwise_bundle / here["modules"][0]["path"]).read_text().replace(f'"{ROOT}/', '"')
    want = (EXAMPLES / "elementwise" / "bundle-good" / committed["modules"][0]["path"]).read_text()
    assert _code(text) == _code(want)
    (a,), (b,) = _launches(here["programs"][1]), _launches(committed["programs"][1])
    assert {k: v for k, v in a.items() if k != "module"} == {k: v for k, v in b.items() if k != "module"}


# ------------------------------------------------------------------ in-process recording

def _record(fn):
    """Ops recorded while fn() runs under a Recorder with Triton's launch path wrapped."""
    import torch
    triton_trace.install()
    rec = trace.Recorder()
    with torch.no_grad(), rec.mode(), triton_trace.recording(rec):
        fn()
    modules = []
    triton_trace.finalize(rec, "new", modules)
    return rec, modules


@triton.jit
def _scale_kernel(x_ptr, out_ptr, n, k, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * k, mask=offs < n)


def test_launch_sits_between_the_aten_ops_around_it():
    import torch
    x = torch.randn(100)

    def prog():
        y = torch.empty_like(x)
        _scale_kernel[(1,)](x, y, 100, 3, BLOCK=128)
        return y + 1

    rec, modules = _record(prog)
    kinds = [op.get("name", op["kind"]) for op in rec.ops if op.get("name") != "aten::detach"]  # torch's own
    assert kinds == ["aten::empty_like", "launch", "aten::add"], kinds
    (launch,) = [op for op in rec.ops if op["kind"] == "launch"]
    assert "unresolved" not in launch
    assert [a.get("scalar") for a in launch["args"][2:4]] == [100, 3]
    assert len(modules) == 1 and modules[0]["id"] == "new_t0"


def test_integer_argument_one_is_a_constexpr_of_the_ptx():
    """Triton specializes an int argument equal to 1 into the kernel: it is no PTX parameter, and the
    binding must skip it (the count is checked against the entry's parameters)."""
    import torch
    x = torch.randn(100)
    rec, _ = _record(lambda: _scale_kernel[(1,)](x, torch.empty_like(x), 100, 1, BLOCK=128))
    (launch,) = [op for op in rec.ops if op["kind"] == "launch"]
    assert "unresolved" not in launch, launch.get("unresolved")
    assert launch["triton"]["constexprs"].get("k") == 1 and launch["triton"]["arg_names"] == ["x_ptr", "out_ptr", "n"]
    assert len(launch["args"]) == 3 + 2


def test_two_launches_of_one_kernel_share_its_module():
    import torch
    x = torch.randn(100)

    def prog():
        y = torch.empty_like(x)
        _scale_kernel[(1,)](x, y, 100, 3, BLOCK=128)
        _scale_kernel[(1,)](y, y, 100, 3, BLOCK=128)

    rec, modules = _record(prog)
    launches = [op for op in rec.ops if op["kind"] == "launch"]
    assert len(launches) == 2 and launches[0]["module"] == launches[1]["module"] and len(modules) == 1
    assert launches[1]["args"][0] == launches[1]["args"][1]  # in place: the same tensor twice


def test_a_pointer_argument_that_is_no_tensor_is_refused_by_name():
    import torch

    class Ptr:  # an object with data_ptr(), as Triton accepts
        dtype = torch.float32

        def data_ptr(self):
            return 4096

    x = torch.randn(100)
    rec, _ = _record(lambda: _scale_kernel[(1,)](Ptr(), x, 100, 3, BLOCK=128))
    (launch,) = [op for op in rec.ops if op["kind"] == "launch"]
    assert "argument x_ptr: a Ptr as pointer" in launch["unresolved"]


def test_autotuned_kernel_records_the_config_launched_and_nothing_of_the_tuning(tmp_path):
    out = tmp_path / "b"
    r = trace.trace(str(EXAMPLES / "rowsum" / "ref.py"), str(EXAMPLES / "rowsum" / "good.py"), str(out),
                    device="cpu", timeout=240)
    assert r.status == "ok", r.message
    new = json.loads((out / "manifest.json").read_text())["programs"][1]
    (launch,) = _launches(new)
    # without a GPU nothing can be timed: the first config, as if all timed equal
    assert launch["triton"]["num_warps"] == 1 and launch["block"] == [32, 1, 1]
    assert "num_warps: 1" in launch["triton"]["autotuned"]
    assert launch["grid"] == [4, 10, 1] and launch["triton"]["constexprs"] == {"BLOCK": 16}


def test_programs_without_triton_keep_the_fake_tensor_path(tmp_path):
    """Only a program whose loading imports triton gets the Triton path (and loses the fake-tensor attempt),
    even where triton is already loaded (a warm worker's torch._dynamo import brings it in)."""
    from dirigo import load
    from tracing import write_program
    assert "triton" in __import__("sys").modules  # this process is like a warm child
    plain = load.load_file(write_program(tmp_path, "plain.py", "class Model(nn.Module):\n    pass\n"), False)
    direct = load.load_file(write_program(tmp_path, "direct.py", "import triton.language as tl\n"
                                          "class Model(nn.Module):\n    pass\n"), False)
    (tmp_path / "helper_kernels.py").write_text("import triton\n")
    sys.path.insert(0, str(tmp_path))
    try:
        indirect = load.load_file(write_program(tmp_path, "indirect.py", "import helper_kernels\n"
                                                "class Model(nn.Module):\n    pass\n"), False)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("helper_kernels", None)
    assert not triton_trace.uses_triton(plain)
    assert triton_trace.uses_triton(direct) and triton_trace.uses_triton(indirect)
    assert triton_trace.uses_triton(plain, direct)


def test_first_import_of_triton_while_loading_counts():
    """Where triton is not loaded yet, its first import by anything the program runs counts (the hook
    sees import statements; importlib.import_module is seen by the change in sys.modules)."""
    code = ("import sys, importlib; sys.path.insert(0, sys.argv[1]); import torch; from dirigo import load; "
            "seen = []\nwith load.watch_imports('triton', seen): importlib.import_module('triton')\n"
            "other = []\nwith load.watch_imports('triton', other): import numpy\nprint(bool(seen), bool(other))")
    p = subprocess.run([sys.executable, "-c", code, str(ROOT / "python")], capture_output=True, text=True)
    assert p.stdout.split() == ["True", "False"], p.stdout + p.stderr


def test_launch_on_a_gpu_keeps_the_shim_off_around_the_launcher(monkeypatch):
    """With a real launcher (GPU), the shim's pending records are flushed before the Triton launch is
    recorded, and the shim stays off while Triton's launcher runs (a driver-API interposition must not
    record it a second time). Simulated here with the compile-only driver's no-op launcher."""
    import torch
    triton_trace.install()

    class Hook:
        def __init__(self):
            self.calls, self.depth = [], 0

        def before_op(self):
            self.calls.append("off")
            self.depth += 1

        def after_op(self):
            self.calls.append("on")
            self.depth -= 1

        def run_op(self, func, args, kwargs):
            return func(*args, **kwargs)

    x = torch.randn(100)
    y = torch.empty_like(x)
    rec = trace.Recorder()
    rec.launch_hook = hook = Hook()
    monkeypatch.setattr(triton_trace, "_COMPILE_ONLY", False)
    with torch.no_grad(), rec.mode(), triton_trace.recording(rec):
        _scale_kernel[(1,)](x, y, 100, 3, BLOCK=128)
    assert hook.calls == ["off", "on", "off", "on"] and hook.depth == 0  # recording, then the launcher
    assert sum(op["kind"] == "launch" for op in rec.ops) == 1


@pytest.mark.skipif(not DIRIGO.exists(), reason=f"{DIRIGO} not built")
@pytest.mark.parametrize("edit, instruction", [
    (("num_stages=1", "num_stages=3"), "cp.async.ca.shared.global"),      # Triton's default pipelining
    ((', input_precision="ieee"', ""), "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"),  # default tf32
], ids=["pipelined", "tf32"])
def test_gemm_in_triton_defaults_is_unsupported_naming_the_instruction(tmp_path, edit, instruction):
    """The GEMM example with Triton's default num_stages or tf32 precision: `dirigo check` answers
    UNSUPPORTED (exit 4) and names the instruction and its PTX line, never a verdict."""
    src = (EXAMPLES / "gemm_epilogue" / "good.py").read_text()
    assert edit[0] in src
    cand = tmp_path / "new.py"
    cand.write_text(src.replace(edit[0], edit[1]))
    os.environ["TRITON_CACHE_DIR"] = str(tmp_path / "triton-cache")
    r = trace.trace(str(EXAMPLES / "gemm_epilogue" / "ref.py"), str(cand), str(tmp_path / "b"), device="cpu",
                    timeout=240)
    assert r.status == "ok", r.message
    p = subprocess.run([str(DIRIGO), "check", str(tmp_path / "b"), "--budget", "20", "--json"],
                       capture_output=True, text=True, timeout=200)
    rep = json.loads(p.stdout)
    assert p.returncode == 4 and rep["outcome"] == "UNSUPPORTED", rep["reason"]
    assert f"'{instruction}'" in rep["reason"] and "PTX line" in rep["reason"] and "gemm_bias_relu" in rep["reason"]
