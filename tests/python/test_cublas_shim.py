"""cuBLAS capture on the CPU: the cuBLAS shim, preloaded with the launch shim, against a stand-in cuBLAS
and CUDA runtime. Checks what the shim records (arguments, handle state, device scalars read back,
pointer arrays, unmodeled functions), that kernels launched inside cuBLAS are not recorded as user
kernels, that library ops sit in program order among launches and ATen ops, and that ATen ops' own
cuBLAS calls are not recorded."""
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from dirigo import cublas, launch

from test_launch import CALLER, FAKE_PTX, FAKE_RUNTIME

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CC = shutil.which("cc") or shutil.which("gcc")

# A stand-in cuBLAS: every call launches an internal kernel (which must not be recorded), device memory
# is host memory (cudaMemcpy = memcpy), the handle is a struct holding pointer/math mode.
FAKE_CUBLAS = r"""
#include <string.h>
#include <stddef.h>
typedef struct { unsigned x, y, z; } dim3;
int cudaLaunchKernel(const void *f, dim3 g, dim3 b, void **args, size_t shm, void *stream);
int cudaMemcpy(void *d, const void *s, size_t n, int kind) { memcpy(d, s, n); return 0; }
typedef struct { int pointer_mode, math_mode; } handle_t;
static handle_t the_handle = {0, 3};
void *fake_handle(int pointer_mode) { the_handle.pointer_mode = pointer_mode; return &the_handle; }
int cublasGetPointerMode_v2(handle_t *h, int *m) { *m = h->pointer_mode; return 0; }
int cublasGetMathMode(handle_t *h, int *m) { *m = h->math_mode; return 0; }
int cublasGetStream_v2(handle_t *h, void **s) { *s = NULL; return 0; }
static void internal_kernel(void) {
  void *p = 0; int n = 0; void *args[2] = {&p, &n}; dim3 g = {1, 1, 1}, b = {32, 1, 1};
  cudaLaunchKernel((const void *)internal_kernel, g, b, args, 0, NULL);
}
int cublasCreate_v2(handle_t **h) { internal_kernel(); *h = &the_handle; return 0; }  /* set-up: not recorded */
int sgemm_calls;
int cublasSgemm_v2(handle_t *h, int ta, int tb, int m, int n, int k, const float *alpha, const float *A, int lda,
                   const float *B, int ldb, const float *beta, float *C, int ldc) {
  internal_kernel(); ++sgemm_calls; C[0] = 42.0f; return 0;
}
int cublasSgemmBatched(handle_t *h, int ta, int tb, int m, int n, int k, const float *alpha, const float *const A[],
                       int lda, const float *const B[], int ldb, const float *beta, float *const C[], int ldc,
                       int batch) { internal_kernel(); return 0; }
int cublasDgemm_v2(handle_t *h, int ta, int tb, int m, int n, int k, const double *alpha, const double *A, int lda,
                   const double *B, int ldb, const double *beta, double *C, int ldc) {
  /* the generic forwarder must pass all 14 words through unchanged */
  return (m == 2 && n == 3 && k == 4 && lda == 5 && ldb == 6 && ldc == 7) ? 0 : 99;
}
"""
# The program's own code: calls through the exported cuBLAS symbols, as an extension does.
CALLER_BLAS = r"""
#include <stdint.h>
void *fake_handle(int);
int cublasSgemm_v2(void *h, int ta, int tb, int m, int n, int k, const float *alpha, const float *A, int lda,
                   const float *B, int ldb, const float *beta, float *C, int ldc);
int cublasSgemmBatched(void *h, int ta, int tb, int m, int n, int k, const float *alpha, const float *const A[],
                       int lda, const float *const B[], int ldb, const float *beta, float *const C[], int ldc,
                       int batch);
int cublasDgemm_v2(void *h, int ta, int tb, int m, int n, int k, const double *alpha, const double *A, int lda,
                   const double *B, int ldb, const double *beta, double *C, int ldc);
int cublasCreate_v2(void **h);
int call_sgemm(float *A, float *B, float *C, float *dev_alpha) {
  float alpha = 1.5f, beta = 0.0f;
  void *h;
  cublasCreate_v2(&h);
  if (dev_alpha) return cublasSgemm_v2(fake_handle(1), 1, 0, 2, 3, 4, dev_alpha, A, 4, B, 4, dev_alpha + 1, C, 2);
  return cublasSgemm_v2(fake_handle(0), 1, 0, 2, 3, 4, &alpha, A, 4, B, 4, &beta, C, 2);
}
int call_batched(float *A, float *B, float *C) {
  static const float *As[2], *Bs[2]; static float *Cs[2];
  float alpha = 2.0f, beta = 1.0f;
  As[0] = A; As[1] = A + 8; Bs[0] = B; Bs[1] = B + 12; Cs[0] = C; Cs[1] = C + 6;
  return cublasSgemmBatched(fake_handle(0), 0, 0, 2, 3, 4, &alpha, As, 2, Bs, 4, &beta, Cs, 2, 2);
}
int call_dgemm(void) { double a = 1, b = 0; return cublasDgemm_v2(fake_handle(0), 0, 0, 2, 3, 4, &a, 0, 5, 0, 6, &b, 0, 7); }
"""


@pytest.mark.skipif(CC is None, reason="needs a C compiler")
@pytest.mark.skipif(__import__("torch").version.cuda is not None,
                    reason="a CUDA build of torch loads the real runtime, which the stand-in cannot displace")
def test_cublas_shim_records_calls_in_program_order(tmp_path):
    shims = launch.build_shim(str(tmp_path)) + ":" + launch.build_shim(str(tmp_path), source=launch.CUBLAS_SHIM_SOURCE)
    cc = lambda name, src, *extra: subprocess.run(  # noqa: E731
        [CC, "-shared", "-fPIC", "-o", str(tmp_path / name), "-x", "c", "-", *extra], input=src, text=True, check=True)
    cc("libfakecudart.so", FAKE_RUNTIME)
    link = [f"-L{tmp_path}", f"-Wl,-rpath,{tmp_path}"]
    cc("libcublas.so", FAKE_CUBLAS, *link, "-lfakecudart")
    cc("libcaller.so", CALLER, *link, "-lfakecudart")
    cc("libblascaller.so", CALLER_BLAS, *link, "-lcublas")
    script = textwrap.dedent(f"""
        import ctypes, json, torch
        from dirigo import launch, trace, cublas
        G = ctypes.RTLD_GLOBAL
        ctypes.CDLL({str(tmp_path / 'libfakecudart.so')!r}, mode=G)
        fake = ctypes.CDLL({str(tmp_path / 'libcublas.so')!r}, mode=G)
        caller = ctypes.CDLL({str(tmp_path / 'libcaller.so')!r})
        blas = ctypes.CDLL({str(tmp_path / 'libblascaller.so')!r})
        caller.launch_test.argtypes = [ctypes.c_void_p, ctypes.c_int]
        blas.call_sgemm.argtypes = [ctypes.c_void_p] * 4
        blas.call_batched.argtypes = [ctypes.c_void_p] * 3
        rec = trace.Recorder()
        A, B, C = torch.randn(16), torch.randn(24), torch.zeros(12)
        scal = torch.tensor([0.25, 0.0])
        for n, t in (("A", A), ("B", B), ("C", C), ("scal", scal)):
            rec.register_input(n, t, "input")
        blas.call_sgemm(A.data_ptr(), B.data_ptr(), C.data_ptr(), None)   # before attach: not recorded
        hook = launch.LaunchHook.attach(rec)
        with torch.no_grad(), rec.mode():
            y = A + 1
            caller.launch_test(y.data_ptr(), 5)
            blas.call_sgemm(A.data_ptr(), B.data_ptr(), C.data_ptr(), None)
            caller.launch_test(y.data_ptr() + 4, 6)
            blas.call_sgemm(A.data_ptr(), B.data_ptr() + 8, C.data_ptr() + 4, scal.data_ptr())
            blas.call_batched(A.data_ptr(), B.data_ptr(), C.data_ptr())
            dres = blas.call_dgemm()
        hook.detach()
        launch.finalize_launches(rec, [{{"id": "m0", "ptx": {FAKE_PTX!r}}}])
        cublas.finalize_library(rec)
        rec.register_outputs(C)
        prog = rec.program("new", "candidate", "caller")
        print(json.dumps({{"ops": rec.ops, "ids": [rec.tensor_id(t) for t in (A, B, C, scal, y)], "dres": dres,
                          "calls": ctypes.c_int.in_dll(fake, "sgemm_calls").value, "C0": C[0].item(),
                          "program": prog}}))
    """)
    env = dict(os.environ, LD_PRELOAD=shims, PYTHONPATH=os.path.join(ROOT, "python"), CUDA_VISIBLE_DEVICES="")
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout.strip().splitlines()[-1])
    ops, (tA, tB, tC, tS, tY) = res["ops"], res["ids"]
    kinds = [op["kind"] if op["kind"] != "library" else op["name"] for op in ops]
    # the internal kernels of the fake cuBLAS are absent; order is program order
    assert kinds == ["aten", "launch", "cublasSgemm_v2", "launch", "cublasSgemm_v2", "cublasSgemmBatched",
                     "cublasDgemm_v2"]
    assert res["calls"] == 3 and res["C0"] == 42.0 and res["dres"] == 0  # forwarded to the real functions
    g = ops[2]["args"]
    assert (g["transa"], g["transb"], g["m"], g["n"], g["k"], g["lda"], g["ldb"], g["ldc"]) == ("T", "N", 2, 3, 4, 4, 4, 2)
    assert (g["alpha"], g["beta"], g["pointer_mode"], g["math_mode"]) == (1.5, 0, "host", 3)
    assert g["A"] == {"tensor": tA, "byte_offset": 0} and g["C"] == {"tensor": tC, "byte_offset": 0}
    assert ops[2]["writes"] == [tC]
    d = ops[4]["args"]  # device pointer mode: scalars bound to the tensor, read symbolically
    assert d["pointer_mode"] == "device" and d["alpha"] is None and d["beta"] is None
    assert d["alpha_ptr"] == {"tensor": tS, "byte_offset": 0} and d["beta_ptr"] == {"tensor": tS, "byte_offset": 4}
    assert d["B"] == {"tensor": tB, "byte_offset": 8} and d["C"] == {"tensor": tC, "byte_offset": 4}
    b = ops[5]["args"]  # pointer arrays read back from "device" memory, one argument per batch entry
    assert b["A[1]"] == {"tensor": tA, "byte_offset": 32} and b["B[1]"] == {"tensor": tB, "byte_offset": 48}
    assert b["C[0]"] == {"tensor": tC, "byte_offset": 0} and b["C[1]"] == {"tensor": tC, "byte_offset": 24}
    assert (b["alpha"], b["beta"], b["batchCount"]) == (2.0, 1.0, 2) and ops[5]["writes"] == [tC]
    assert ops[6]["args"]["modeled"] is False and ops[6]["writes"] == []
    # the library ops make a valid bundle for the Python writer and the C++ reader
    from dirigo import bundle
    manifest = {"format": "dirigo-bundle", "version": 1, "programs": [res["program"]],
                "modules": [{"id": "m0", "path": "ptx/m0.ptx"}]}
    out = tmp_path / "bundle"
    bundle.write_bundle(str(out), manifest, ptx={"m0": FAKE_PTX})
    core = pytest.importorskip("dirigo._core")
    if hasattr(core, "validate_bundle"):
        core.validate_bundle(str(out))


def test_library_op_binds_pointers_and_names_unbound_ones():
    bind = lambda p: {"tensor": "t1", "byte_offset": p - 0x1000} if 0x1000 <= p < 0x2000 else None  # noqa: E731
    raw = {"library": "cublas", "name": "cublasSaxpy_v2", "writes": ["y"],
           "args": {"n": 4, "alpha": 2.0, "x": {"ptr": "0x1010"}, "incx": 1, "y": {"ptr": "0x9000"}, "incy": 1}}
    op = cublas.library_op(raw, bind)
    assert op["args"]["x"] == {"tensor": "t1", "byte_offset": 16}
    assert op["args"]["y"] == {"pointer": "0x9000", "unbound": True}
    assert op["writes"] == []  # an unbound output is no tensor: checking reports it
