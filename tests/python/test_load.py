"""Loaders: kinds of program files, KernelBench seeding, the functional form, .cu files without a GPU."""
import pytest
import torch

from dirigo import load
from tracing import by_name, manifest, ops, run, write_program


def test_trial_seeds_follow_kernelbench():
    # KernelBench run_and_check_correctness: torch.manual_seed(seed), then one randint per trial
    torch.manual_seed(42)
    expect = [torch.randint(0, 2**32 - 1, (1,)).item() for _ in range(3)]
    assert load.kernelbench_trial_seeds(42, 3) == expect


@pytest.mark.parametrize("text, kind", [
    ("class Model(nn.Module):\n    pass\n", "reference"),
    ("class ModelNew(nn.Module):\n    pass\nclass Model:\n    pass\n", "candidate"),
    ("class ModelNew(nn.Module):\n    pass\n\ndef functional_model(\n    x,\n):\n    return x\n", "functional"),
])
def test_detect_kind(text, kind):
    assert load.detect_kind("p.py", text) == kind


def test_unknown_file_is_a_load_error(tmp_path):
    p = tmp_path / "x.py"
    p.write_text("print('hello')\n")
    with pytest.raises(load.LoadError, match="defines neither class Model"):
        load.load_file(str(p), allow_cuda=False)
    assert load.detect_kind("k.cu", "") == "cuda-engineer"


REF = """
class Model(nn.Module):
    def __init__(self, c_in, c_out, k):
        super().__init__()
        self.conv = nn.Conv1d(c_in, c_out, k)
        self.scale = nn.Parameter(torch.randn(c_out, 1))
    def forward(self, x):
        return torch.tanh(self.conv(x)) * self.scale
"""

# The functional form (as in kernelbench-functional): parameters passed as keyword arguments
FUNCTIONAL = """
class ModelNew(nn.Module):
    def __init__(self, c_in, c_out, k):
        super().__init__()
        self.conv = nn.Conv1d(c_in, c_out, k)
        self.scale = nn.Parameter(torch.randn(c_out, 1))
    def forward(self, *args):
        return functional_model(*args, **extract_state_kwargs(self))

def extract_state_kwargs(model):
    return {"conv_weight": model.conv.weight, "conv_bias": model.conv.bias, "scale": model.scale}

def functional_model(
    x,
    *,
    conv_weight,
    conv_bias,
    scale,
):
    return torch.tanh(F.conv1d(x, conv_weight, conv_bias)) * scale
"""


def test_functional_form_traces_like_its_reference(tmp_path):
    ref = write_program(tmp_path, "ref.py", REF, inputs="[torch.rand(2, 3, 16)]", init="[3, 5, 3]")
    fun = write_program(tmp_path, "fun.py", FUNCTIONAL, inputs="[torch.rand(2, 3, 16)]", init="[3, 5, 3]")
    r, out = run(tmp_path, ref, fun)
    assert r.status == "ok", r.message
    m, _ = manifest(out)
    ref_p, fun_p = m["programs"]
    assert ops(ref_p) == ops(fun_p) == ["aten::convolution.default", "aten::tanh.default", "aten::mul.Tensor"]
    pairs = dict(map(tuple, m["match"]["inputs"]))
    assert pairs == {"ref.x": "new.in0", "ref.conv.weight": "new.conv.weight", "ref.conv.bias": "new.conv.bias",
                     "ref.scale": "new.scale"}
    assert by_name(ref_p, "scale")["sha256"] == by_name(fun_p, "scale")["sha256"]


def test_cuda_engineer_file_without_gpu_is_unsupported(tmp_path):
    fun = write_program(tmp_path, "fun.py", FUNCTIONAL, inputs="[torch.rand(2, 3, 16)]", init="[3, 5, 3]")
    cu = tmp_path / "kernel.cu"
    cu.write_text("#include <torch/extension.h>\n"
                  "torch::Tensor forward(torch::Tensor x, torch::Tensor w, torch::Tensor b, torch::Tensor s) {\n"
                  "  return x; }\n"
                  "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def(\"forward\", &forward); }\n")
    r, _ = run(tmp_path, fun, str(cu))
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert r.status == "unsupported"
    assert "kernel.cu is CUDA code" in r.message and "needs a GPU" in r.message


def test_inputs_come_from_the_reference_get_inputs(tmp_path):
    # the candidate's own get_inputs (here: different shapes) is ignored, as in KernelBench
    ref = write_program(tmp_path, "ref.py", REF, inputs="[torch.rand(2, 3, 16)]", init="[3, 5, 3]")
    new = write_program(tmp_path, "new.py", REF.replace("class Model(", "class ModelNew("),
                        inputs="[torch.rand(7, 3, 99)]", init="[3, 5, 3]")
    r, out = run(tmp_path, ref, new)
    assert r.status == "ok", r.message
    new_p = manifest(out)[0]["programs"][1]
    x = next(t for t in new_p["tensors"] if t["id"] == by_name(new_p, "x")["tensor"])
    assert x["shape"] == [2, 3, 16]


@pytest.mark.gpu
def test_cuda_engineer_file_on_gpu(tmp_path):
    # forward(*inputs, *state) with the state in functional_model's keyword-only order
    fun = write_program(tmp_path, "fun.py", FUNCTIONAL, inputs="[torch.rand(2, 3, 16)]", init="[3, 5, 3]")
    cu = tmp_path / "kernel.cu"
    cu.write_text("#include <torch/extension.h>\n"
                  "__global__ void scale_k(float* y, const float* s, int per, int n) {\n"
                  "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] *= s[(i / per) % 5]; }\n"
                  "torch::Tensor forward(torch::Tensor x, torch::Tensor w, torch::Tensor b, torch::Tensor s) {\n"
                  "  auto y = torch::tanh(torch::conv1d(x, w, b)).contiguous(); int n = y.numel();\n"
                  "  scale_k<<<(n + 127) / 128, 128>>>(y.data_ptr<float>(), s.data_ptr<float>(), y.size(2), n);\n"
                  "  return y; }\n"
                  "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def(\"forward\", &forward); }\n")
    r, out = run(tmp_path, fun, str(cu), device="cuda", timeout=500)
    assert r.status == "ok", r.message
    m, files = manifest(out)
    new_p = m["programs"][1]
    aten = [(op["name"], op["from"]) for op in new_p["ops"] if op["kind"] == "aten"]
    assert ("aten::convolution", "extension") in aten and ("aten::tanh", "extension") in aten
    (launch_op,) = [op for op in new_p["ops"] if op["kind"] == "launch"]
    assert launch_op["kernel"] == "_Z7scale_kPfPKfii" and launch_op["block"] == [128, 1, 1]
    scale_id = by_name(new_p, "scale")["tensor"]
    assert launch_op["args"][1] == {"tensor": scale_id, "byte_offset": 0}
    assert launch_op["args"][2] == {"scalar": 14, "type": "u32"}


def test_batch_tracing_asks_for_the_precompiled_header_only_without_own_cxx_flags():
    from dirigo.load import _use_precompiled_header

    def with_pch(name, cpp_sources, cuda_sources=None, extra_cflags=None, extra_include_paths=None, use_pch=False):
        pass

    def without_pch(name, cpp_sources, cuda_sources=None, extra_cflags=None):
        pass

    for given, wanted in (({}, True), ({"extra_cflags": [""]}, True), ({"extra_cflags": ["-O3"]}, False),
                          ({"extra_include_paths": ["inc"]}, False), ({"use_pch": False}, False)):
        kwargs = dict(given)
        _use_precompiled_header(with_pch, kwargs)
        assert kwargs.get("use_pch", False) is wanted, given
        if wanted:
            assert kwargs["extra_cflags"] is None  # the precompiled header's own signature
    kwargs = {}
    _use_precompiled_header(without_pch, kwargs)  # an older torch: nothing changes
    assert kwargs == {}
