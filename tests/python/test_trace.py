"""The tracer on small programs of our own: ops, shapes, aliasing, mutation, matching, failures."""
import json
import os

import numpy as np
import pytest

from dirigo import bundle, trace, worker
from tracing import by_name, manifest, ops, run, tensor, write_program

CONV_RELU = """
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
    def forward(self, x):
        return torch.relu(self.conv(x))
"""


def test_conv_relu_ops_shapes_parameters_and_data(tmp_path):
    ref = write_program(tmp_path, "ref.py", CONV_RELU)
    r, out = run(tmp_path, ref)
    assert r.status == "ok", r.message
    m, files = manifest(out)
    (prog,) = m["programs"]
    assert prog["role"] == "reference" and prog["name"] == "ref"
    assert ops(prog) == ["aten::convolution.default", "aten::relu.default"]
    conv, relu = prog["ops"]
    assert conv["schema"].startswith("convolution(Tensor input, Tensor weight, Tensor? bias")
    x, w, b = (by_name(prog, n) for n in ("x", "conv.weight", "conv.bias"))
    assert [x["kind"], w["kind"], b["kind"]] == ["input", "parameter", "parameter"]
    assert conv["args"][:3] == [{"tensor": x["tensor"]}, {"tensor": w["tensor"]}, {"tensor": b["tensor"]}]
    # defaults are filled in: stride [1, 1], transposed False, groups 1
    assert conv["args"][3] == {"list": [{"scalar": 1, "type": "int"}, {"scalar": 1, "type": "int"}]}
    assert conv["args"][6] == {"scalar": False, "type": "bool"}
    assert conv["args"][8] == {"scalar": 1, "type": "int"}
    assert tensor(prog, conv["outputs"][0])["shape"] == [2, 4, 6, 6]
    assert relu["args"] == [{"tensor": conv["outputs"][0]}] and relu["mutates"] == []
    assert prog["outputs"] == [{"name": "out0", "tensor": relu["outputs"][0], "data": "data/ref.out0.bin"}]
    assert tensor(prog, w["tensor"])["shape"] == [4, 3, 3, 3]
    # the recorded values are the real ones: the output file holds relu(conv(x)) of the input file
    import torch
    d = lambda e, shape: np.fromfile(os.path.join(out, e["data"]), dtype=np.float32).reshape(shape)
    expect = torch.relu(torch.nn.functional.conv2d(torch.from_numpy(d(x, [2, 3, 8, 8])),
                                                   torch.from_numpy(d(w, [4, 3, 3, 3])),
                                                   torch.from_numpy(d(b, [4]))))
    np.testing.assert_allclose(d(by_name(prog, "out0", "outputs"), [2, 4, 6, 6]), expect.numpy(), rtol=1e-5)
    assert m["tolerance"] == {"atol": 1e-2, "rtol": 1e-2}


def test_in_place_op_lists_what_it_mutates(tmp_path):
    ref = write_program(tmp_path, "ref.py", """
class Model(nn.Module):
    def forward(self, x):
        y = x * 2
        y.add_(1.5)
        torch.mul(y, y, out=y)
        return y
""", inputs="[torch.rand(4, 5)]")
    r, out = run(tmp_path, ref, atol=1e-3, rtol=0.5)
    assert r.status == "ok", r.message
    m, _ = manifest(out)
    prog = m["programs"][0]
    assert ops(prog) == ["aten::mul.Tensor", "aten::add_.Tensor", "aten::mul.out"]
    mul, add_, mul_out = prog["ops"]
    y = mul["outputs"][0]
    assert add_["mutates"] == [y] and add_["outputs"] == [y]
    assert add_["args"][1] == {"scalar": 1.5, "type": "float"}
    assert add_["kwargs"] == {"alpha": {"scalar": 1, "type": "int"}}
    assert mul_out["mutates"] == [y] and mul_out["kwargs"]["out"] == {"tensor": y}
    assert mul["mutates"] == []
    assert prog["outputs"][0]["tensor"] == y
    assert m["tolerance"] == {"atol": 1e-3, "rtol": 0.5}


def test_view_chain_shares_one_storage(tmp_path):
    ref = write_program(tmp_path, "ref.py", """
class Model(nn.Module):
    def forward(self, x):
        v = x.view(6, 4).t()[1:3]
        return v.unsqueeze(0)
""", inputs="[torch.rand(2, 3, 4)]")
    r, out = run(tmp_path, ref)
    assert r.status == "ok", r.message
    prog = manifest(out)[0]["programs"][0]
    assert ops(prog) == ["aten::view.default", "aten::t.default", "aten::slice.Tensor", "aten::unsqueeze.default"]
    x = tensor(prog, by_name(prog, "x")["tensor"])
    outs = [tensor(prog, op["outputs"][0]) for op in prog["ops"]]
    assert {t["storage"] for t in outs} == {x["storage"]} and len(prog["storages"]) == 1
    assert (outs[1]["shape"], outs[1]["strides"]) == ([4, 6], [1, 4])
    assert (outs[2]["shape"], outs[2]["strides"], outs[2]["offset"]) == ([2, 6], [1, 4], 1)
    assert (outs[3]["shape"], outs[3]["strides"], outs[3]["offset"]) == ([1, 2, 6], [2, 1, 4], 1)


PARAM_REF = """
class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, 3)
        self.scale = nn.Parameter(torch.randn(3))
    def forward(self, x):
        return self.lin(x) * self.scale
"""


def test_parameters_match_by_name_and_by_order(tmp_path):
    ref = write_program(tmp_path, "ref.py", PARAM_REF, inputs="[torch.rand(2, 5)]", init="[5]")
    same = write_program(tmp_path, "same.py", PARAM_REF.replace("class Model(", "class ModelNew("),
                         inputs="[torch.rand(2, 5)]", init="[5]")
    r, out = run(tmp_path, ref, same)
    assert r.status == "ok", r.message
    m, _ = manifest(out)
    assert sorted(map(tuple, m["match"]["inputs"])) == sorted([
        ("ref.x", "new.x"), ("ref.lin.weight", "new.lin.weight"), ("ref.lin.bias", "new.lin.bias"),
        ("ref.scale", "new.scale")])
    assert m["match"]["outputs"] == [["ref.out0", "new.out0"]]
    ref_p, new_p = m["programs"]
    assert new_p["role"] == "candidate"
    # same seed before construction: identical parameter values; inputs from the reference's get_inputs
    for n in ("lin.weight", "scale", "x"):
        assert by_name(ref_p, n)["sha256"] == by_name(new_p, n)["sha256"]
    # the linear layer decomposes into t + addmm under the dispatcher
    assert ops(ref_p) == ["aten::t.default", "aten::addmm.default", "aten::mul.Tensor"]

    renamed = write_program(tmp_path, "renamed.py", """
class ModelNew(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.fc = nn.Linear(n, 3)
        self.gain = nn.Parameter(torch.randn(3))
    def forward(self, x):
        return torch.addmm(self.fc.bias, x, self.fc.weight.t()) * self.gain
""", inputs="[torch.rand(2, 5)]", init="[5]")
    r, out2 = run(tmp_path, ref, renamed, write_data=True)
    assert r.status == "ok", r.message
    m2, _ = manifest(out2)
    pairs = dict(map(tuple, m2["match"]["inputs"]))
    assert pairs["ref.lin.weight"] == "new.fc.weight" and pairs["ref.scale"] == "new.gain"
    assert pairs["ref.lin.bias"] == "new.fc.bias"  # same-shaped: told apart by their equal recorded values
    assert any("without a common name (equal recorded values" in n for n in m2["match"]["notes"])


def test_program_that_raises_is_reported_plainly(tmp_path):
    ref = write_program(tmp_path, "boom.py", """
class Model(nn.Module):
    def forward(self, x):
        raise ValueError("shapes do not line up")
""")
    r, _ = run(tmp_path, ref)
    assert r.status == "error" and r.exit_code == trace.EXIT_PROGRAM_ERROR
    assert "the program raised ValueError: shapes do not line up in forward (boom.py:7)" in r.message


def test_program_that_crashes_is_reported_plainly(tmp_path):
    ref = write_program(tmp_path, "crash.py", """
import os, signal
class Model(nn.Module):
    def forward(self, x):
        os.kill(os.getpid(), signal.SIGSEGV)
""")
    r, _ = run(tmp_path, ref)
    assert r.status == "error"
    assert "crashed with signal SIGSEGV" in r.message


def test_program_that_hangs_times_out(tmp_path):
    ref = write_program(tmp_path, "hang.py", """
import time
class Model(nn.Module):
    def forward(self, x):
        while True:
            time.sleep(0.1)
""")
    r, _ = run(tmp_path, ref, timeout=6)
    assert r.status == "error"  # the reference's failure: UNSUPPORTED, never the candidate's BUG
    assert r.message == ("UNSUPPORTED: the reference failed, so there is nothing to compare against: reference "
                         "hang.py: the program did not finish within 6 s (killed)")


def test_a_candidate_still_loading_at_the_timeout_is_no_bug(tmp_path):
    # killed while loading (an nvcc build of its extension, here a sleep): the machine's time, not a hang
    ref = write_program(tmp_path, "ref.py", """
class Model(nn.Module):
    def forward(self, x):
        return x + 1
""")
    new = write_program(tmp_path, "new.py", """
import time
time.sleep(600)
class ModelNew(nn.Module):
    def forward(self, x):
        return x + 1
""")
    r, _ = run(tmp_path, ref, new, timeout=8)
    assert r.status == "unsupported" and r.exit_code == trace.EXIT_UNSUPPORTED, r.message
    assert "environment: the program did not finish loading" in r.message


def test_data_dependent_op_sequence_is_unsupported(tmp_path):
    # how many times the loop runs depends on the values of x: the two seeded runs disagree
    ref = write_program(tmp_path, "dd.py", """
class Model(nn.Module):
    def forward(self, x):
        for _ in range(int(x.argmax())):
            x = x.sin()
        return x
""", inputs="[torch.rand(64)]")
    r, _ = run(tmp_path, ref)
    assert r.status == "unsupported" and r.exit_code == trace.EXIT_UNSUPPORTED
    assert r.message.startswith("UNSUPPORTED: reference dd.py: the op sequence depends on the input values")
    assert "aten::sin.default" in r.message


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
def test_large_shapes_trace_on_fake_tensors(tmp_path, warm):
    # 4096 x 393216 float32 = 6 GiB: traced for shapes only, nothing allocated, no data written; in a fork of
    # the session's warm worker and in a new interpreter alike
    ref = write_program(tmp_path, "big.py", """
class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1)
""", inputs="[torch.rand(4096, 393216)]")
    with worker.warm(warm):
        r, out = run(tmp_path, ref)
    assert r.status == "ok", r.message
    m, files = manifest(out)
    prog = m["programs"][0]
    assert ops(prog) == ["aten::_softmax.default"]
    assert tensor(prog, prog["outputs"][0]["tensor"])["shape"] == [4096, 393216]
    assert not any(k.startswith("data/") for k in files)
    assert "fake" in m["trace_notes"][0]


def test_cuda_candidate_on_cpu_is_unsupported_plainly(tmp_path):
    ref = write_program(tmp_path, "ref.py", CONV_RELU)
    new = write_program(tmp_path, "new.py", '''
from torch.utils.cpp_extension import load_inline
src = """__global__ void k(float* x) { x[threadIdx.x] = 0; }"""
mod = load_inline(name="dirigo_never_built", cpp_sources="", cuda_sources=src, functions=[])
class ModelNew(nn.Module):
    def forward(self, x):
        return x
''')
    import torch
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    r, _ = run(tmp_path, ref, new)
    assert r.status == "unsupported", r.message
    assert "candidate new.py" in r.message and "load_inline" in r.message and "needs a GPU" in r.message


def test_cli_writes_bundle_and_exit_codes(tmp_path):
    import subprocess
    import sys
    ref = write_program(tmp_path, "ref.py", CONV_RELU)
    out = tmp_path / "cli-bundle"
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(trace.__file__), ".."))
    p = subprocess.run([sys.executable, "-m", "dirigo.trace", ref, ref, "--out", str(out), "--json",
                        "--atol", "0.5"], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    printed = json.loads(p.stdout.strip().splitlines()[-1])
    assert printed["status"] == "ok"
    # where each worker's time went: loading (and building), then the traced runs
    for name in ("ref", "new"):
        assert {"load", "trace:real"} <= set(printed["phases"][name]), printed["phases"]
        assert all(v >= 0 for v in printed["phases"][name].values())
    m, _ = bundle.read_bundle(str(out))
    assert [pr["name"] for pr in m["programs"]] == ["ref", "new"] and m["tolerance"]["atol"] == 0.5


def test_first_difference_names_the_op():
    a = {"ops": [{"kind": "aten", "name": "aten::relu", "overload": "default", "args": []}]}
    b = {"ops": [{"kind": "aten", "name": "aten::sigmoid", "overload": "default", "args": []}]}
    assert trace.first_difference(a, b) == \
        "op 0: the first run called aten::relu.default, the second aten::sigmoid.default"
    c = {"ops": a["ops"] + b["ops"]}
    assert "ran only in the second" in trace.first_difference(a, c)


def test_recorder_marks_ops_from_extension_calls():
    # the proxy the load_inline interception returns marks every op dispatched inside its functions
    import types
    import torch
    from dirigo.load import _ExtensionProxy
    fake_ext = types.ModuleType("ext")
    fake_ext.fused = lambda x: torch.relu(x) + 1
    proxy = _ExtensionProxy(fake_ext, "ext")
    rec = trace.Recorder()
    x = torch.rand(3)
    rec.register_input("x", x, "input")
    with torch.no_grad(), rec.mode():
        y = torch.neg(proxy.fused(x))
    assert [(o["name"], o["from"], o.get("extension_call")) for o in rec.ops] == [
        ("aten::relu", "extension", "ext.fused#1"), ("aten::add", "extension", "ext.fused#1"),
        ("aten::neg", "python", None)]
    assert rec.ops[-1]["outputs"] == [rec.tensor_id(y)]


def test_nonfinite_scalars_are_encoded_as_strings():
    import torch
    rec = trace.Recorder()
    x = torch.rand(3)
    rec.register_input("x", x, "input")
    with torch.no_grad(), rec.mode():
        torch.clamp(x, min=float("-inf"), max=float("nan"))
    assert rec.ops[0]["args"][1:] == [{"scalar": "-inf", "type": "float"}, {"scalar": "nan", "type": "float"}]


@pytest.mark.slow
def test_cpp_extension_ops_are_captured_from_extension(tmp_path):
    """A real C++ extension (load_inline, CPU only) whose ATen calls reach the dispatch mode."""
    cache = os.path.join(os.path.dirname(__file__), "..", "..", ".cache", "torch_extensions")
    built = os.path.isdir(os.path.join(cache, "dirigo_test_twice_relu"))
    if not (built or os.environ.get("DIRIGO_SLOW_TESTS") == "1"):
        pytest.skip("compiles a C++ extension (~1.5 min); set DIRIGO_SLOW_TESTS=1")
    os.makedirs(cache, exist_ok=True)
    os.environ["TORCH_EXTENSIONS_DIR"] = os.path.abspath(cache)
    ref = write_program(tmp_path, "ref.py", """
class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x + 1) * 2
""", inputs="[torch.randn(5, 7)]")
    new = write_program(tmp_path, "new.py", '''
from torch.utils.cpp_extension import load_inline
ext = load_inline(name="dirigo_test_twice_relu", cpp_sources="""
torch::Tensor twice_relu(torch::Tensor x) { return torch::relu(x) * 2; }
""", functions=["twice_relu"])
class ModelNew(nn.Module):
    def forward(self, x):
        return ext.twice_relu(x + 1)
''', inputs="[torch.randn(5, 7)]")
    r, out = run(tmp_path, ref, new, timeout=400)
    assert r.status == "ok", r.message
    m, _ = manifest(out)
    new_p = m["programs"][1]
    assert [(o["name"], o["from"]) for o in new_p["ops"]] == [
        ("aten::add", "python"), ("aten::relu", "extension"), ("aten::mul", "extension")]
    assert new_p["extensions"][0]["name"] == "dirigo_test_twice_relu"
    assert "twice_relu" in new_p["extensions"][0]["cpp_sources"][0]


CONSTANTS = """
BIG = torch.arange(300000, dtype=torch.float32)   # 1.2 MB: over the limit for stored constants

class Model(nn.Module):
    def forward(self, x):
        y = torch.min(x, torch.tensor(0.5))
        return y + BIG[:8]
"""


@pytest.mark.parametrize("inputs,no_data", [("[torch.rand(2, 3, 8, 8)]", True),       # real tensors, --no-data
                                            ("[torch.rand(4096, 3, 4096, 8)]", False)])  # fake tensors (1.5 GiB)
def test_captured_constants_keep_their_values(tmp_path, inputs, no_data):
    # a captured constant's value is part of the program: stored even with --no-data or on fake tensors;
    # one over the size limit says why it has no data (check then refuses it)
    ref = write_program(tmp_path, "consts.py", CONSTANTS, inputs=inputs)
    r, out = run(tmp_path, ref, write_data=not no_data)
    assert r.status == "ok", r.message
    m, files = manifest(out)
    prog = m["programs"][0]
    consts = [i for i in prog["inputs"] if i.get("constant")]
    small = next(i for i in consts if tensor(prog, i["tensor"])["shape"] == [])
    assert np.fromfile(os.path.join(out, small["data"]), dtype=np.float32).tolist() == [0.5]
    assert "data_missing" not in small
    big = next(i for i in consts if tensor(prog, i["tensor"])["shape"] == [300000])
    assert "data" not in big and "1200000 bytes" in big["data_missing"]
    # no input, parameter or output values: --no-data / fake tensors
    assert os.listdir(os.path.join(out, "data")) == [os.path.basename(small["data"])]


def test_check_refuses_a_constant_without_values(tmp_path):
    # a captured constant over the size limit has no data: check must refuse it by name, never treat it
    # as a free input (which would make any difference from the candidate look like a bug)
    from dirigo import _core
    if _core is None or not hasattr(_core, "check_bundle"):
        pytest.skip("needs the C++ core")
    import dirigo
    ref = write_program(tmp_path, "ref.py", """
BIG = torch.arange(300000, dtype=torch.float32)

class Model(nn.Module):
    def forward(self, x):
        return x + BIG[:8]
""", inputs="[torch.rand(4, 8)]")
    new = write_program(tmp_path, "new.py", """
class ModelNew(nn.Module):
    def forward(self, x):
        return x + torch.arange(8, dtype=torch.float32)
""", inputs="[torch.rand(4, 8)]")
    v = dirigo.check(ref, new, budget_s=20, device="cpu")
    assert v.outcome == "UNSUPPORTED", (v.outcome, v.reason)
    assert "captured constant" in v.reason and "no recorded values" in v.reason


@pytest.mark.parametrize("train", [True, False])
def test_batch_norm_running_statistics_are_recorded_as_written(tmp_path, train):
    # native_batch_norm's schema has no (a!) on running_mean/var, but in training mode it updates them
    ref = write_program(tmp_path, "bn.py", f"""
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm2d(3)
        self.bn.train({train})

    def forward(self, x):
        return self.bn(x)
""")
    r, out = run(tmp_path, ref)
    assert r.status == "ok", r.message
    m, _ = manifest(out)
    prog = m["programs"][0]
    bn = next(op for op in prog["ops"] if op["name"] == "aten::native_batch_norm")
    stats = {by_name(prog, "bn.running_mean")["tensor"], by_name(prog, "bn.running_var")["tensor"]}
    assert set(bn["mutates"]) == (stats if train else set())


def test_launch_hook_is_attached_for_the_forward_only(monkeypatch):
    # On a GPU the state record's statistics launch ATen copy kernels; with the hook attached before them,
    # every `dirigo check REF.py NEW.py` on a GPU was UNSUPPORTED ("direct_copy_kernel_cuda was launched in
    # forward"). A stand-in hook notes what had happened when it was attached and detached.
    import torch
    from dirigo import launch

    events = []

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 2)

        def forward(self, x):
            events.append("forward")
            return self.lin(x)

    class FakeHook:
        @classmethod
        def attach(cls, rec):
            stats = [i for i in rec.inputs if i["kind"] == "parameter" and "stats" in i]
            events.append(f"attach after {len(stats)} parameter statistics")
            return cls()

        def stop(self):
            events.append("stop")

        def detach(self):
            events.append("detach")

    monkeypatch.setattr(launch, "LaunchHook", FakeHook)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    m = Model()
    rec, _ = trace.trace_once(m, m, [torch.randn(4, 3)], ["x"], "cuda", capture_values=False, record_state=True)
    assert events == ["attach after 2 parameter statistics", "forward", "stop", "detach"]
    assert len(rec.outputs) == 1
