"""Kernel-launch capture: the LD_PRELOAD shim against a stand-in CUDA runtime (runs on the CPU), PTX
extraction from an nvcc-built library, and the real thing on a GPU."""
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from dirigo import launch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CC = shutil.which("cc") or shutil.which("gcc")
NVCC = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else None)

# A stand-in for libcudart + libcuda: enough for the shim to name the kernel and size its parameters.
FAKE_RUNTIME = r"""
#include <stddef.h>
typedef struct { unsigned x, y, z; } dim3;
int fake_launches;
int cudaLaunchKernel(const void *f, dim3 g, dim3 b, void **args, size_t shm, void *stream) { ++fake_launches; return 0; }
int cudaGetFuncBySymbol(void **out, const void *sym) { *out = (void *)sym; return 0; }
int cuFuncGetName(const char **name, void *f) { *name = "_Z4testPfi"; return 0; }
int cuFuncGetParamInfo(void *f, size_t i, size_t *off, size_t *size) {
  if (i == 0) { *off = 0; *size = 8; return 0; }
  if (i == 1) { *off = 8; *size = 4; return 0; }
  return 1;
}
"""
# Code "compiled by nvcc": launches through the runtime's exported symbol, like a <<<>>> host stub.
CALLER = r"""
#include <stddef.h>
typedef struct { unsigned x, y, z; } dim3;
int cudaLaunchKernel(const void *f, dim3 g, dim3 b, void **args, size_t shm, void *stream);
int launch_test(void *ptr, int n) {
  void *args[2] = {&ptr, &n};
  dim3 g = {4, 2, 1}, b = {128, 1, 1};
  return cudaLaunchKernel((const void *)launch_test, g, b, args, 256, NULL);
}
"""
FAKE_PTX = """.version 8.0
.target sm_90
.address_size 64
.visible .entry _Z4testPfi(
\t.param .u64 .ptr .align 1 _Z4testPfi_param_0,
\t.param .u32 _Z4testPfi_param_1
)
{
\tret;
}
"""


@pytest.mark.skipif(CC is None, reason="needs a C compiler")
@pytest.mark.skipif(__import__("torch").version.cuda is not None,
                    reason="a CUDA build of torch loads the real runtime, which the stand-in cannot displace")
def test_shim_records_launches_and_binds_pointers_to_tensors(tmp_path):
    shim = launch.build_shim(str(tmp_path))
    subprocess.run([CC, "-shared", "-fPIC", "-o", str(tmp_path / "libfakecudart.so"), "-x", "c", "-"],
                   input=FAKE_RUNTIME, text=True, check=True)
    subprocess.run([CC, "-shared", "-fPIC", "-o", str(tmp_path / "libcaller.so"), "-x", "c", "-",
                    f"-L{tmp_path}", "-lfakecudart", f"-Wl,-rpath,{tmp_path}"], input=CALLER, text=True, check=True)
    script = textwrap.dedent(f"""
        import ctypes, json, torch
        from dirigo import launch, trace
        ctypes.CDLL({str(tmp_path / 'libfakecudart.so')!r}, mode=ctypes.RTLD_GLOBAL)
        caller = ctypes.CDLL({str(tmp_path / 'libcaller.so')!r})
        caller.launch_test.argtypes = [ctypes.c_void_p, ctypes.c_int]
        rec = trace.Recorder()
        x = torch.zeros(16)
        rec.register_input("x", x, "input")
        caller.launch_test(x.data_ptr(), 1)          # before attach: not recorded
        hook = launch.LaunchHook.attach(rec)
        with torch.no_grad(), rec.mode():
            y = x + 1                                  # an ATen op: its own kernels are not ours
            caller.launch_test(y.data_ptr() + 8, 5)    # the program's launch, into y at byte 8
            caller.launch_test(12345, 7)               # a pointer into nothing
        hook.detach()
        launch.finalize_launches(rec, [{{"id": "m0", "ptx": {FAKE_PTX!r}}}])
        print(json.dumps({{"ops": rec.ops, "y": rec.tensor_id(y)}}))
    """)
    env = dict(os.environ, LD_PRELOAD=shim, PYTHONPATH=os.path.join(ROOT, "python"), CUDA_VISIBLE_DEVICES="")
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout.strip().splitlines()[-1])
    ops = res["ops"]
    assert [op["kind"] for op in ops] == ["aten", "launch", "launch"]
    l1, l2 = ops[1], ops[2]
    assert (l1["module"], l1["kernel"], l1["grid"], l1["block"], l1["shared_bytes"]) == \
        ("m0", "_Z4testPfi", [4, 2, 1], [128, 1, 1], 256)
    assert l1["args"] == [{"tensor": res["y"], "byte_offset": 8}, {"scalar": 5, "type": "u32"}]
    assert l2["args"] == [{"pointer": hex(12345), "unbound": True}, {"scalar": 7, "type": "u32"}]


def test_ptx_entry_parameters_are_parsed():
    entries = launch.ptx_entries(FAKE_PTX + """
.visible .entry _Z3big4Pack(
\t.param .align 8 .b8 _Z3big4Pack_param_0[24],
\t.param .f32 _Z3big4Pack_param_1
)
{ ret; }
""")
    assert entries["_Z4testPfi"] == [{"type": "u64", "ptr": True}, {"type": "u32", "ptr": False}]
    assert entries["_Z3big4Pack"] == [{"bytes": 24, "align": 8}, {"type": "f32", "ptr": False}]


@pytest.mark.skipif(NVCC is None, reason="needs nvcc")
def test_ptx_is_extracted_from_a_library_built_with_embedded_ptx(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text("__global__ void scale(float* x, float a, int n) {\n"
                   "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= a; }\n")
    lib = tmp_path / "libk.so"
    cuobjdump = shutil.which("cuobjdump") or os.path.join(os.path.dirname(os.path.realpath(NVCC)), "cuobjdump")
    if not os.path.exists(cuobjdump):
        pytest.skip("no cuobjdump in this toolkit")
    subprocess.run([NVCC, "-shared", "-Xcompiler", "-fPIC", "-lineinfo", "-gencode", "arch=compute_90,code=compute_90",
                    "-o", str(lib), str(src)], check=True, capture_output=True, timeout=300)
    (sec,) = launch.extract_ptx(str(lib), cuobjdump=cuobjdump)
    assert sec["arch"] == "sm_90"
    assert ".version" in sec["ptx"] and ".loc" in sec["ptx"] and not sec["ptx"].startswith("arch")
    params = launch.ptx_entries(sec["ptx"])["_Z5scalePffi"]
    assert [p["type"] for p in params] == ["u64", "f32", "u32"]


@pytest.mark.skipif(NVCC is None, reason="needs nvcc")
def test_ptx_by_recompiling_the_source_with_the_extension_flags(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text("#ifndef TORCH_EXTENSION_NAME\n#error no name\n#endif\n"
                   "__global__ void scale(float* x, float a, int n) {\n"
                   "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= a; }\n")
    flags = ["-O3", "-gencode", "arch=compute_90,code=sm_90", "-gencode", "arch=compute_90,code=compute_90",
             "-lineinfo", "-DTORCH_EXTENSION_NAME=k"]
    (sec,) = launch.compile_ptx(str(src), flags, nvcc=NVCC)
    assert sec["arch"] == "sm_90" and ".target sm_90" in sec["ptx"] and ".loc" in sec["ptx"]
    params = launch.ptx_entries(sec["ptx"])["_Z5scalePffi"]
    assert [p["type"] for p in params] == ["u64", "f32", "u32"]


@pytest.mark.gpu
def test_load_inline_candidate_on_gpu_records_launch_and_ptx(tmp_path):
    from dirigo import bundle, trace
    from tracing import write_program
    ref = write_program(tmp_path, "ref.py", """
class Model(nn.Module):
    def forward(self, x):
        return x * 2.0
""", inputs="[torch.rand(1000)]")
    new = write_program(tmp_path, "new.py", '''
from torch.utils.cpp_extension import load_inline
cuda_src = """
#include <torch/extension.h>
__global__ void twice(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0f * x[i]; }
torch::Tensor twice_cuda(torch::Tensor x) {
  auto y = torch::empty_like(x); int n = x.numel();
  twice<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n); return y; }
"""
ext = load_inline(name="dirigo_gpu_test_twice", cpp_sources="torch::Tensor twice_cuda(torch::Tensor x);",
                  cuda_sources=cuda_src, functions=["twice_cuda"])
class ModelNew(nn.Module):
    def forward(self, x):
        return ext.twice_cuda(x)
''', inputs="[torch.rand(1000)]")
    r = trace.trace(ref, new, str(tmp_path / "b"), device="cuda", timeout=500)
    assert r.status == "ok", r.message
    m, files = bundle.read_bundle(str(tmp_path / "b"))
    new_p = m["programs"][1]
    kinds = [(op["kind"], op.get("name") or op.get("kernel")) for op in new_p["ops"]]
    assert ("aten", "aten::empty_like") in kinds and ("launch", "_Z5twicePKfPfi") in kinds
    launch_op = next(op for op in new_p["ops"] if op["kind"] == "launch")
    x_id = next(i["tensor"] for i in new_p["inputs"] if i["name"] == "x")
    assert launch_op["grid"] == [4, 1, 1] and launch_op["block"] == [256, 1, 1]
    assert launch_op["args"][0] == {"tensor": x_id, "byte_offset": 0}
    assert launch_op["args"][2] == {"scalar": 1000, "type": "u32"} or launch_op["args"][2]["scalar"] == 1000
    assert ".entry _Z5twicePKfPfi" in files[m["modules"][0]["path"]].decode()
