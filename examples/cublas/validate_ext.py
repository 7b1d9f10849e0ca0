"""Runs every cuBLAS function dirigo models on randomized shapes, transposes, leading dimensions, strides
and alpha/beta on a real GPU, and saves inputs and outputs as fixtures (one .npz per function) so the CPU
suite keeps checking dirigo's equations against real cuBLAS (tests/python/test_cublas_fixtures.py).

    python3 examples/cublas/validate_ext.py OUT_DIR [--cases N] [--seed S]

Each case is described by the bundle library op it performs ("op": args with {"tensor": BUFFER,
"byte_offset": B} references into named flat float32 buffers), with the buffers' contents before ("in")
and after ("out") the call. When the cuBLAS shim is preloaded (LD_PRELOAD=libdirigo-cublas-shim.so), the
shim's own record of each call is bound to the same buffers and saved as "recorded" too, so the capture
path is validated end to end on real cuBLAS. A case cuBLAS refuses (status != 0) is saved with its status.
"""
import argparse
import ctypes
import json
import math
import os
import sys
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))

CPP = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <cublasLt.h>
#include <vector>

static cublasHandle_t H() { static cublasHandle_t h = nullptr; if (!h) TORCH_CHECK(cublasCreate(&h) == 0); return h; }
static cublasLtHandle_t LT() { static cublasLtHandle_t h = nullptr; if (!h) TORCH_CHECK(cublasLtCreate(&h) == 0); return h; }
static cublasOperation_t OP(int64_t t) { return t ? CUBLAS_OP_T : CUBLAS_OP_N; }
static float* P(torch::Tensor t, int64_t off) { return t.data_ptr<float>() + off; }

// alpha/beta on the host, or (dev) in scal[0], scal[1] on the device
struct Scalars {
  float a, b; const float *pa, *pb;
  Scalars(double alpha, double beta, bool dev, torch::Tensor scal) : a(float(alpha)), b(float(beta)) {
    cublasSetPointerMode(H(), dev ? CUBLAS_POINTER_MODE_DEVICE : CUBLAS_POINTER_MODE_HOST);
    if (dev) { pa = scal.data_ptr<float>(); pb = pa + 1; } else { pa = &a; pb = &b; }
  }
  ~Scalars() { cublasSetPointerMode(H(), CUBLAS_POINTER_MODE_HOST); }
};
static int64_t done(int s) { cudaDeviceSynchronize(); return s; }

int64_t sgemm(int64_t ta, int64_t tb, int64_t m, int64_t n, int64_t k, double alpha, double beta, bool dev,
              torch::Tensor scal, torch::Tensor A, int64_t ao, int64_t lda, torch::Tensor B, int64_t bo, int64_t ldb,
              torch::Tensor C, int64_t co, int64_t ldc) {
  Scalars s(alpha, beta, dev, scal);
  return done(cublasSgemm(H(), OP(ta), OP(tb), m, n, k, s.pa, P(A, ao), lda, P(B, bo), ldb, s.pb, P(C, co), ldc));
}
int64_t sgemm_sb(int64_t ta, int64_t tb, int64_t m, int64_t n, int64_t k, double alpha, double beta, bool dev,
                 torch::Tensor scal, torch::Tensor A, int64_t ao, int64_t lda, int64_t sa, torch::Tensor B, int64_t bo,
                 int64_t ldb, int64_t sb, torch::Tensor C, int64_t co, int64_t ldc, int64_t sc, int64_t batch) {
  Scalars s(alpha, beta, dev, scal);
  return done(cublasSgemmStridedBatched(H(), OP(ta), OP(tb), m, n, k, s.pa, P(A, ao), lda, sa, P(B, bo), ldb, sb,
                                        s.pb, P(C, co), ldc, sc, batch));
}
int64_t sgemm_batched(int64_t ta, int64_t tb, int64_t m, int64_t n, int64_t k, double alpha, double beta, bool dev,
                      torch::Tensor scal, torch::Tensor A, std::vector<int64_t> ao, int64_t lda, torch::Tensor B,
                      std::vector<int64_t> bo, int64_t ldb, torch::Tensor C, std::vector<int64_t> co, int64_t ldc) {
  Scalars s(alpha, beta, dev, scal);
  int64_t batch = int64_t(ao.size());
  std::vector<float*> host;
  for (auto o : ao) host.push_back(P(A, o));
  for (auto o : bo) host.push_back(P(B, o));
  for (auto o : co) host.push_back(P(C, o));
  float** d = nullptr;
  TORCH_CHECK(cudaMalloc(&d, host.size() * sizeof(float*)) == 0);
  cudaMemcpy(d, host.data(), host.size() * sizeof(float*), cudaMemcpyHostToDevice);
  int st = cublasSgemmBatched(H(), OP(ta), OP(tb), m, n, k, s.pa, (const float**)d, lda, (const float**)d + batch,
                              ldb, s.pb, d + 2 * batch, ldc, batch);
  done(0);
  cudaFree(d);
  return st;
}
int64_t gemm_ex(int64_t ta, int64_t tb, int64_t m, int64_t n, int64_t k, double alpha, double beta, bool dev,
                torch::Tensor scal, torch::Tensor A, int64_t ao, int64_t lda, torch::Tensor B, int64_t bo, int64_t ldb,
                torch::Tensor C, int64_t co, int64_t ldc) {
  Scalars s(alpha, beta, dev, scal);
  return done(cublasGemmEx(H(), OP(ta), OP(tb), m, n, k, s.pa, P(A, ao), CUDA_R_32F, lda, P(B, bo), CUDA_R_32F, ldb,
                           s.pb, P(C, co), CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}
int64_t gemm_sb_ex(int64_t ta, int64_t tb, int64_t m, int64_t n, int64_t k, double alpha, double beta, bool dev,
                   torch::Tensor scal, torch::Tensor A, int64_t ao, int64_t lda, int64_t sa, torch::Tensor B, int64_t bo,
                   int64_t ldb, int64_t sb, torch::Tensor C, int64_t co, int64_t ldc, int64_t sc, int64_t batch) {
  Scalars s(alpha, beta, dev, scal);
  return done(cublasGemmStridedBatchedEx(H(), OP(ta), OP(tb), m, n, k, s.pa, P(A, ao), CUDA_R_32F, lda, sa, P(B, bo),
                                         CUDA_R_32F, ldb, sb, s.pb, P(C, co), CUDA_R_32F, ldc, sc, batch,
                                         CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}
int64_t sgeam(int64_t ta, int64_t tb, int64_t m, int64_t n, double alpha, double beta, bool dev, torch::Tensor scal,
              torch::Tensor A, int64_t ao, int64_t lda, torch::Tensor B, int64_t bo, int64_t ldb, torch::Tensor C,
              int64_t co, int64_t ldc) {
  Scalars s(alpha, beta, dev, scal);
  return done(cublasSgeam(H(), OP(ta), OP(tb), m, n, s.pa, P(A, ao), lda, s.pb, P(B, bo), ldb, P(C, co), ldc));
}
int64_t sgemv(int64_t t, int64_t m, int64_t n, double alpha, double beta, bool dev, torch::Tensor scal,
              torch::Tensor A, int64_t ao, int64_t lda, torch::Tensor x, int64_t xo, int64_t incx, torch::Tensor y,
              int64_t yo, int64_t incy) {
  Scalars s(alpha, beta, dev, scal);
  return done(cublasSgemv(H(), OP(t), m, n, s.pa, P(A, ao), lda, P(x, xo), incx, s.pb, P(y, yo), incy));
}
int64_t sger(int64_t m, int64_t n, double alpha, bool dev, torch::Tensor scal, torch::Tensor x, int64_t xo,
             int64_t incx, torch::Tensor y, int64_t yo, int64_t incy, torch::Tensor A, int64_t ao, int64_t lda) {
  Scalars s(alpha, 0.0, dev, scal);
  return done(cublasSger(H(), m, n, s.pa, P(x, xo), incx, P(y, yo), incy, P(A, ao), lda));
}
int64_t saxpy(int64_t n, double alpha, bool dev, torch::Tensor scal, torch::Tensor x, int64_t xo, int64_t incx,
              torch::Tensor y, int64_t yo, int64_t incy) {
  Scalars s(alpha, 0.0, dev, scal);
  return done(cublasSaxpy(H(), n, s.pa, P(x, xo), incx, P(y, yo), incy));
}
int64_t sscal(int64_t n, double alpha, bool dev, torch::Tensor scal, torch::Tensor x, int64_t xo, int64_t incx) {
  Scalars s(alpha, 0.0, dev, scal);
  return done(cublasSscal(H(), n, s.pa, P(x, xo), incx));
}
// host mode: the result goes to res[ro] through the host; device mode: cuBLAS writes res[ro] itself
int64_t sdot(int64_t n, bool dev, torch::Tensor x, int64_t xo, int64_t incx, torch::Tensor y, int64_t yo,
             int64_t incy, torch::Tensor res, int64_t ro) {
  cublasSetPointerMode(H(), dev ? CUBLAS_POINTER_MODE_DEVICE : CUBLAS_POINTER_MODE_HOST);
  float host = 0;
  int st = cublasSdot(H(), n, P(x, xo), incx, P(y, yo), incy, dev ? P(res, ro) : &host);
  done(0);
  cublasSetPointerMode(H(), CUBLAS_POINTER_MODE_HOST);
  if (!dev) cudaMemcpy(P(res, ro), &host, sizeof(float), cudaMemcpyHostToDevice);
  return st;
}
static cublasLtMatrixLayout_t layout(int64_t rows, int64_t cols, int64_t ld, int32_t order, int32_t batch, int64_t stride) {
  cublasLtMatrixLayout_t l;
  TORCH_CHECK(cublasLtMatrixLayoutCreate(&l, CUDA_R_32F, rows, cols, ld) == 0);
  cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, sizeof order);
  cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch);
  cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride);
  return l;
}
int64_t lt_matmul(int64_t ta, int64_t tb, int64_t m, int64_t n, int64_t k, double alpha, double beta, int64_t order,
                  int64_t epilogue, int64_t batch, torch::Tensor A, int64_t ao, int64_t lda, int64_t sa,
                  torch::Tensor B, int64_t bo, int64_t ldb, int64_t sb, torch::Tensor C, int64_t co, int64_t ldc,
                  int64_t sc, torch::Tensor D, int64_t dof, int64_t ldd, int64_t sd, torch::Tensor bias, int64_t bof,
                  bool use_bias) {
  cublasLtMatmulDesc_t desc;
  TORCH_CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) == 0);
  int32_t opa = OP(ta), opb = OP(tb);
  uint32_t epi = uint32_t(epilogue);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
  if (use_bias) {
    const void* bp = P(bias, bof);
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp, sizeof bp);
  }
  int32_t ord = int32_t(order), bt = int32_t(batch);
  auto Ad = layout(ta ? k : m, ta ? m : k, lda, ord, bt, sa);
  auto Bd = layout(tb ? n : k, tb ? k : n, ldb, ord, bt, sb);
  auto Cd = layout(m, n, ldc, ord, bt, sc);
  auto Dd = layout(m, n, ldd, ord, bt, sd);
  float a = float(alpha), b = float(beta);
  auto ws = torch::empty({1 << 22}, A.options().dtype(torch::kUInt8));
  cublasLtMatmulPreference_t pref;
  cublasLtMatmulPreferenceCreate(&pref);
  size_t wsize = size_t(ws.numel());
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsize, sizeof wsize);
  cublasLtMatmulHeuristicResult_t res;
  int found = 0;
  int st = cublasLtMatmulAlgoGetHeuristic(LT(), desc, Ad, Bd, Cd, Dd, pref, 1, &res, &found);
  if (st == 0 && found > 0)
    st = cublasLtMatmul(LT(), desc, &a, P(A, ao), Ad, P(B, bo), Bd, &b, P(C, co), Cd, P(D, dof), Dd, &res.algo,
                        ws.data_ptr(), wsize, 0);
  else if (st == 0)
    st = 1000;  // no algorithm for this configuration
  done(0);
  cublasLtMatmulPreferenceDestroy(pref);
  for (auto l : {Ad, Bd, Cd, Dd}) cublasLtMatrixLayoutDestroy(l);
  cublasLtMatmulDescDestroy(desc);
  return st;
}
"""

FUNCS = ["sgemm", "sgemm_sb", "sgemm_batched", "gemm_ex", "gemm_sb_ex", "sgeam", "sgemv", "sger", "saxpy", "sscal",
         "sdot", "lt_matmul"]
CUBLAS_NAME = {"sgemm": "cublasSgemm_v2", "sgemm_sb": "cublasSgemmStridedBatched", "sgemm_batched": "cublasSgemmBatched",
               "gemm_ex": "cublasGemmEx", "gemm_sb_ex": "cublasGemmStridedBatchedEx", "sgeam": "cublasSgeam",
               "sgemv": "cublasSgemv_v2", "sger": "cublasSger_v2", "saxpy": "cublasSaxpy_v2", "sscal": "cublasSscal_v2", "sdot": "cublasSdot_v2",
               "lt_matmul": "cublasLtMatmul"}
EPILOGUES = [1, 2, 4, 6, 32, 36]  # DEFAULT RELU BIAS RELU_BIAS GELU GELU_BIAS


def _ref(buf: str, elem: int) -> dict:
    return {"tensor": buf, "byte_offset": 4 * int(elem)}


class Case:
    """Buffers (flat float32, named) and the library op over them."""

    def __init__(self, rng):
        self.rng, self.buffers, self.need = rng, {}, {}

    def extent(self, name, elems):  # the buffer must hold this many elements (plus random slack)
        self.need[name] = max(self.need.get(name, 0), int(elems))

    def materialize(self, nan_fill=()):
        for name, n in self.need.items():
            size = n + int(self.rng.integers(0, 4))
            data = self.rng.standard_normal(size).astype(np.float32)
            if name in nan_fill:
                data[:] = np.nan  # beta == 0: cuBLAS must not read these
            self.buffers[name] = data


def _matrix_extent(off, rows, cols, ld):
    return off + ld * (cols - 1) + rows if rows and cols else off


def _scalar(rng, zero_ok=True):
    c = [1.0, 0.5, -1.25, float(np.float32(rng.standard_normal()))] + ([0.0] if zero_ok else [])
    return float(c[int(rng.integers(0, len(c)))])


def gen_gemm(rng, fn):
    c = Case(rng)
    ta, tb = int(rng.integers(0, 2)), int(rng.integers(0, 2))
    m, n, k = (int(x) for x in rng.integers(1, 20, size=3))
    batched = fn in ("sgemm_sb", "gemm_sb_ex", "sgemm_batched")
    batch = int(rng.integers(1, 4)) if batched else 1
    alpha, beta = _scalar(rng), _scalar(rng)
    dev = fn != "sgemm_batched" and bool(rng.integers(0, 4) == 0)
    ar, ac = (k, m) if ta else (m, k)
    br, bc = (n, k) if tb else (k, n)
    lda, ldb, ldc = ar + int(rng.integers(0, 3)), br + int(rng.integers(0, 3)), m + int(rng.integers(0, 3))
    sizeA, sizeB, sizeC = _matrix_extent(0, ar, ac, lda), _matrix_extent(0, br, bc, ldb), _matrix_extent(0, m, n, ldc)
    ao, bo, co = (int(x) for x in rng.integers(0, 5, size=3))
    args = {"pointer_mode": "device" if dev else "host", "transa": "NT"[ta], "transb": "NT"[tb], "m": m, "n": n, "k": k,
            "alpha": None if dev else alpha, "beta": None if dev else beta}
    call = dict(ta=ta, tb=tb, m=m, n=n, k=k, alpha=alpha, beta=beta, dev=dev)
    if fn == "sgemm_batched":
        offs = {}
        for name, size, o in (("A", sizeA, ao), ("B", sizeB, bo), ("C", sizeC, co)):
            # entries in random order, non-overlapping (C must not overlap)
            perm = rng.permutation(batch)
            offs[name] = [int(o + p * (size + 1)) for p in perm]
            c.extent(name, max(offs[name]) + size)
        for name in "ABC":
            for i, o in enumerate(offs[name]):
                args[f"{name}[{i}]"] = _ref(name, o)
        args.update(lda=lda, ldb=ldb, ldc=ldc, batchCount=batch)
        call.update(A=offs["A"], lda=lda, B=offs["B"], ldb=ldb, C=offs["C"], ldc=ldc)
    elif batched:
        sa = 0 if rng.integers(0, 4) == 0 else sizeA + int(rng.integers(0, 3))  # stride 0: A shared by all
        sb = sizeB + int(rng.integers(0, 3))
        sc = sizeC + int(rng.integers(0, 3))
        c.extent("A", ao + sa * (batch - 1) + sizeA)
        c.extent("B", bo + sb * (batch - 1) + sizeB)
        c.extent("C", co + sc * (batch - 1) + sizeC)
        args.update(A=_ref("A", ao), lda=lda, strideA=sa, B=_ref("B", bo), ldb=ldb, strideB=sb, C=_ref("C", co), ldc=ldc,
                    strideC=sc, batchCount=batch)
        call.update(A=ao, lda=lda, sa=sa, B=bo, ldb=ldb, sb=sb, C=co, ldc=ldc, sc=sc, batch=batch)
    else:
        c.extent("A", ao + sizeA)
        c.extent("B", bo + sizeB)
        c.extent("C", co + sizeC)
        args.update(A=_ref("A", ao), lda=lda, B=_ref("B", bo), ldb=ldb, C=_ref("C", co), ldc=ldc)
        call.update(A=ao, lda=lda, B=bo, ldb=ldb, C=co, ldc=ldc)
    if fn in ("gemm_ex", "gemm_sb_ex"):
        args.update(Atype=0, Btype=0, Ctype=0, computeType=68)
    if dev:
        c.extent("scal", 2)
        args.update(alpha_ptr=_ref("scal", 0), beta_ptr=_ref("scal", 1))
    c.materialize(nan_fill=("C",) if beta == 0 and rng.integers(0, 2) else ())
    if dev:
        c.buffers["scal"][:2] = [alpha, beta]
    return c, args, call, ["C"]


def gen_geam(rng):
    c = Case(rng)
    ta, tb = int(rng.integers(0, 2)), int(rng.integers(0, 2))
    m, n = (int(x) for x in rng.integers(1, 20, size=2))
    alpha, beta = _scalar(rng), _scalar(rng)
    dev = bool(rng.integers(0, 4) == 0)
    ar, ac = (n, m) if ta else (m, n)
    br, bc = (n, m) if tb else (m, n)
    lda, ldb, ldc = ar + int(rng.integers(0, 3)), br + int(rng.integers(0, 3)), m + int(rng.integers(0, 3))
    c.extent("A", _matrix_extent(1, ar, ac, lda))
    c.extent("B", _matrix_extent(2, br, bc, ldb))
    c.extent("C", _matrix_extent(0, m, n, ldc))
    args = {"pointer_mode": "device" if dev else "host", "transa": "NT"[ta], "transb": "NT"[tb], "m": m, "n": n,
            "alpha": None if dev else alpha, "A": _ref("A", 1), "lda": lda, "beta": None if dev else beta,
            "B": _ref("B", 2), "ldb": ldb, "C": _ref("C", 0), "ldc": ldc}
    if dev:
        c.extent("scal", 2)
        args.update(alpha_ptr=_ref("scal", 0), beta_ptr=_ref("scal", 1))
    c.materialize(nan_fill=("C",))  # geam never reads C
    if dev:
        c.buffers["scal"][:2] = [alpha, beta]
    call = dict(ta=ta, tb=tb, m=m, n=n, alpha=alpha, beta=beta, dev=dev, A=1, lda=lda, B=2, ldb=ldb, C=0, ldc=ldc)
    return c, args, call, ["C"]


def _vec_extent(off, n, inc):
    return off + (n - 1) * abs(inc) + 1 if n > 0 else off


def _inc(rng):
    return int([1, 1, 2, 3, -1, -2][int(rng.integers(0, 6))])


def gen_vector(rng, fn):
    c = Case(rng)
    dev = bool(rng.integers(0, 4) == 0)
    alpha, beta = _scalar(rng), _scalar(rng)
    args = {"pointer_mode": "device" if dev else "host"}
    if fn == "sgemv":
        t = int(rng.integers(0, 2))
        m, n = (int(x) for x in rng.integers(1, 20, size=2))
        lda = m + int(rng.integers(0, 3))
        incx, incy = _inc(rng), _inc(rng)
        lx, ly = (m, n) if t else (n, m)
        c.extent("A", _matrix_extent(0, m, n, lda))
        c.extent("x", _vec_extent(1, lx, incx))
        c.extent("y", _vec_extent(0, ly, incy))
        args.update(trans="NT"[t], m=m, n=n, alpha=None if dev else alpha, A=_ref("A", 0), lda=lda, x=_ref("x", 1),
                    incx=incx, beta=None if dev else beta, y=_ref("y", 0), incy=incy)
        call = dict(t=t, m=m, n=n, alpha=alpha, beta=beta, dev=dev, A=0, lda=lda, x=1, incx=incx, y=0, incy=incy)
        out, nan = ["y"], ("y",) if beta == 0 and rng.integers(0, 2) else ()
    elif fn == "sger":
        m, n = (int(x) for x in rng.integers(1, 20, size=2))
        lda = m + int(rng.integers(0, 3))
        incx, incy = _inc(rng), _inc(rng)
        c.extent("x", _vec_extent(1, m, incx))
        c.extent("y", _vec_extent(0, n, incy))
        c.extent("A", _matrix_extent(2, m, n, lda))
        args.update(m=m, n=n, alpha=None if dev else alpha, x=_ref("x", 1), incx=incx, y=_ref("y", 0), incy=incy,
                    A=_ref("A", 2), lda=lda)
        call = dict(m=m, n=n, alpha=alpha, dev=dev, x=1, incx=incx, y=0, incy=incy, A=2, lda=lda)
        out, nan, beta = ["A"], (), 0.0
    elif fn == "saxpy":
        n = int(rng.integers(1, 40))
        incx, incy = _inc(rng), _inc(rng)
        c.extent("x", _vec_extent(2, n, incx))
        c.extent("y", _vec_extent(1, n, incy))
        args.update(n=n, alpha=None if dev else alpha, x=_ref("x", 2), incx=incx, y=_ref("y", 1), incy=incy)
        call = dict(n=n, alpha=alpha, dev=dev, x=2, incx=incx, y=1, incy=incy)
        out, nan, beta = ["y"], (), 0.0
    elif fn == "sscal":
        n = int(rng.integers(1, 40))
        incx = abs(_inc(rng))
        c.extent("x", _vec_extent(1, n, incx))
        args.update(n=n, alpha=None if dev else alpha, x=_ref("x", 1), incx=incx)
        call = dict(n=n, alpha=alpha, dev=dev, x=1, incx=incx)
        out, nan, beta = ["x"], (), 0.0
    else:  # sdot
        n = int(rng.integers(1, 40))
        incx, incy = _inc(rng), _inc(rng)
        c.extent("x", _vec_extent(0, n, incx))
        c.extent("y", _vec_extent(3, n, incy))
        c.extent("res", 2)
        args.update(n=n, x=_ref("x", 0), incx=incx, y=_ref("y", 3), incy=incy)
        if dev:
            args["result"] = _ref("res", 1)
        call = dict(n=n, dev=dev, x=0, incx=incx, y=3, incy=incy, res=1)
        out, nan = ["res"] if dev else [], ()  # host mode: the value comes back through the host (res[1])
    if dev and fn != "sdot":
        c.extent("scal", 2)
        args.update(alpha_ptr=_ref("scal", 0))
        if fn == "sgemv":
            args.update(beta_ptr=_ref("scal", 1))
    c.materialize(nan_fill=nan)
    if dev and fn != "sdot":
        c.buffers["scal"][:2] = [alpha, beta]
    return c, args, call, out


def gen_lt(rng):
    c = Case(rng)
    ta, tb = int(rng.integers(0, 2)), int(rng.integers(0, 2))
    m, n, k = (int(x) for x in rng.integers(1, 20, size=3))
    order = int(rng.integers(0, 2))
    epi = int(EPILOGUES[int(rng.integers(0, len(EPILOGUES)))])
    batch = int(rng.integers(1, 3))
    alpha, beta = _scalar(rng, zero_ok=False), _scalar(rng)
    ar, ac = (k, m) if ta else (m, k)
    br, bc = (n, k) if tb else (k, n)

    def lay(rows, cols):  # ld counts along the stored-contiguous direction
        inner, outer = (rows, cols) if order == 0 else (cols, rows)
        ld = inner + int(rng.integers(0, 3))
        return ld, _matrix_extent(0, inner, outer, ld), {"type": 0, "order": order, "rows": rows, "cols": cols, "ld": ld,
                                                         "batch": batch}
    (lda, sizeA, Ad), (ldb, sizeB, Bd) = lay(ar, ac), lay(br, bc)
    (ldc, sizeC, Cd) = lay(m, n)
    ldd, sizeD, Dd = ldc, sizeC, dict(Cd)
    strides = {}
    for name, size, d in (("A", sizeA, Ad), ("B", sizeB, Bd), ("C", sizeC, Cd), ("D", sizeD, Dd)):
        s = size + int(rng.integers(0, 3)) if batch > 1 else 0
        d["stride"] = s
        strides[name] = s
        c.extent(name, s * (batch - 1) + size)
    use_bias = bool(epi & 4)
    if use_bias:
        c.extent("bias", m + 1)
    args = {"pointer_mode": "host", "transa": "NT"[ta], "transb": "NT"[tb], "computeType": 68, "scaleType": 0,
            "epilogue": epi, "alpha": alpha, "beta": beta, "A": _ref("A", 0), "Adesc": Ad, "B": _ref("B", 0),
            "Bdesc": Bd, "C": _ref("C", 0), "Cdesc": Cd, "D": _ref("D", 0), "Ddesc": Dd}
    if use_bias:
        args["bias"] = _ref("bias", 1)
    c.materialize(nan_fill=("D",) + (("C",) if beta == 0 else ()))
    call = dict(ta=ta, tb=tb, m=m, n=n, k=k, alpha=alpha, beta=beta, order=order, epilogue=epi, batch=batch,
                A=0, lda=lda, sa=strides["A"], B=0, ldb=ldb, sb=strides["B"], C=0, ldc=ldc, sc=strides["C"],
                D=0, ldd=ldd, sd=strides["D"], bias=1, use_bias=use_bias)
    return c, args, call, ["D"]


def generate(fn, rng):
    if fn in ("sgemm", "sgemm_sb", "sgemm_batched", "gemm_ex", "gemm_sb_ex"):
        return gen_gemm(rng, fn)
    if fn == "sgeam":
        return gen_geam(rng)
    if fn == "lt_matmul":
        return gen_lt(rng)
    return gen_vector(rng, fn)


def invoke(ext, fn, call, bufs):
    import torch
    g = {k: torch.from_numpy(v).cuda() for k, v in bufs.items()}
    scal = g.get("scal", torch.zeros(2, device="cuda"))
    d = call
    if fn in ("sgemm", "gemm_ex"):
        st = getattr(ext, fn)(d["ta"], d["tb"], d["m"], d["n"], d["k"], d["alpha"], d["beta"], d["dev"], scal,
                              g["A"], d["A"], d["lda"], g["B"], d["B"], d["ldb"], g["C"], d["C"], d["ldc"])
    elif fn in ("sgemm_sb", "gemm_sb_ex"):
        st = getattr(ext, fn)(d["ta"], d["tb"], d["m"], d["n"], d["k"], d["alpha"], d["beta"], d["dev"], scal,
                              g["A"], d["A"], d["lda"], d["sa"], g["B"], d["B"], d["ldb"], d["sb"], g["C"], d["C"],
                              d["ldc"], d["sc"], d["batch"])
    elif fn == "sgemm_batched":
        st = ext.sgemm_batched(d["ta"], d["tb"], d["m"], d["n"], d["k"], d["alpha"], d["beta"], d["dev"], scal,
                               g["A"], d["A"], d["lda"], g["B"], d["B"], d["ldb"], g["C"], d["C"], d["ldc"])
    elif fn == "sgeam":
        st = ext.sgeam(d["ta"], d["tb"], d["m"], d["n"], d["alpha"], d["beta"], d["dev"], scal, g["A"], d["A"],
                       d["lda"], g["B"], d["B"], d["ldb"], g["C"], d["C"], d["ldc"])
    elif fn == "sgemv":
        st = ext.sgemv(d["t"], d["m"], d["n"], d["alpha"], d["beta"], d["dev"], scal, g["A"], d["A"], d["lda"],
                       g["x"], d["x"], d["incx"], g["y"], d["y"], d["incy"])
    elif fn == "sger":
        st = ext.sger(d["m"], d["n"], d["alpha"], d["dev"], scal, g["x"], d["x"], d["incx"], g["y"], d["y"], d["incy"],
                      g["A"], d["A"], d["lda"])
    elif fn == "saxpy":
        st = ext.saxpy(d["n"], d["alpha"], d["dev"], scal, g["x"], d["x"], d["incx"], g["y"], d["y"], d["incy"])
    elif fn == "sscal":
        st = ext.sscal(d["n"], d["alpha"], d["dev"], scal, g["x"], d["x"], d["incx"])
    elif fn == "sdot":
        st = ext.sdot(d["n"], d["dev"], g["x"], d["x"], d["incx"], g["y"], d["y"], d["incy"], g["res"], d["res"])
    else:
        bias = g.get("bias", torch.zeros(1, device="cuda"))
        st = ext.lt_matmul(d["ta"], d["tb"], d["m"], d["n"], d["k"], d["alpha"], d["beta"], d["order"], d["epilogue"],
                           d["batch"], g["A"], d["A"], d["lda"], d["sa"], g["B"], d["B"], d["ldb"], d["sb"], g["C"],
                           d["C"], d["ldc"], d["sc"], g["D"], d["D"], d["ldd"], d["sd"], bias, d["bias"], d["use_bias"])
    torch.cuda.synchronize()
    return int(st), {k: v.cpu().numpy() for k, v in g.items()}, {k: v.data_ptr() for k, v in g.items()}, g


def _shim():
    try:
        lib = ctypes.CDLL(None)
        lib.dirigo_cublas_drain.restype = ctypes.c_size_t
        lib.dirigo_cublas_drain.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        lib.dirigo_cublas_set_enabled.argtypes = [ctypes.c_int]
        return lib
    except (OSError, AttributeError):
        return None


def _drain(lib):
    from dirigo import launch
    return [r for r in launch.drain(lib, lib.dirigo_cublas_drain) if "library" in r]


def build(verbose=False):
    from torch.utils.cpp_extension import load_inline
    import cublas_paths
    kw = cublas_paths.build_kwargs()
    return load_inline("dirigo_cublas_validate", CPP, functions=FUNCS, with_cuda=True, verbose=verbose,
                       extra_cflags=["-O1"], **kw)


def dry_run(a):
    """Every case generated and evaluated by the numpy reference (which indexes exactly, so an extent the
    generator got wrong raises here rather than on the GPU)."""
    import numpy_ref
    for fi, fn in enumerate(a.funcs):
        rng = np.random.default_rng(a.seed * 1000 + fi)
        for _ in range(a.cases):
            case, args, call, outs = generate(fn, rng)
            op = {"kind": "library", "library": "cublas", "name": CUBLAS_NAME[fn], "args": args, "writes": outs}
            numpy_ref.evaluate(op, case.buffers)
        print(fn, "ok", flush=True)
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--cases", type=int, default=10)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--funcs", nargs="*", default=FUNCS)
    ap.add_argument("--dry-run", action="store_true", help="no GPU: generate the cases and run the numpy reference")
    a = ap.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    if a.dry_run:
        return dry_run(a)
    t0 = time.time()
    ext = build()
    print(f"built in {time.time() - t0:.1f} s", flush=True)
    shim = _shim()
    from dirigo import cublas as dcublas
    summary = {}
    for fi, fn in enumerate(a.funcs):
        rng = np.random.default_rng(a.seed * 1000 + fi)
        arrays, meta = {}, []
        for i in range(a.cases):
            case, args, call, outs = generate(fn, rng)
            entry = {"fn": fn, "name": CUBLAS_NAME[fn], "op": {"kind": "library", "library": "cublas",
                                                               "name": CUBLAS_NAME[fn], "args": args, "writes": outs},
                     "call": call, "buffers": sorted(case.buffers)}
            try:
                if shim:
                    _drain(shim)
                    shim.dirigo_cublas_set_enabled(1)
                try:
                    st, after, ptrs, _keep = invoke(ext, fn, call, case.buffers)
                finally:
                    if shim:
                        shim.dirigo_cublas_set_enabled(0)
                entry["status"] = st
                if shim:
                    recs = _drain(shim)
                    def bind(p, ptrs=ptrs, sizes={k: 4 * len(v) for k, v in case.buffers.items()}):
                        for name, base in ptrs.items():
                            if base <= p < base + sizes[name]:
                                return {"tensor": name, "byte_offset": p - base}
                        return None
                    entry["recorded"] = [dcublas.library_op(r, bind) for r in recs]
                for name, v in case.buffers.items():
                    arrays[f"c{i}.{name}.in"] = v
                    arrays[f"c{i}.{name}.out"] = after[name]
            except Exception as e:  # noqa: BLE001 - keep going; the log says what failed
                entry["status"] = -1
                entry["error"] = f"{type(e).__name__}: {e}"
                traceback.print_exc()
            meta.append(entry)
        arrays["meta"] = np.array(json.dumps(meta, allow_nan=False))
        np.savez_compressed(os.path.join(a.out, f"{fn}.npz"), **arrays)
        ok = sum(1 for e in meta if e["status"] == 0)
        summary[fn] = {"cases": len(meta), "ok": ok, "recorded": sum(1 for e in meta if e.get("recorded"))}
        print(fn, summary[fn], flush=True)
    with open(os.path.join(a.out, "summary.json"), "w") as fh:
        json.dump({"summary": summary, "seconds": round(time.time() - t0, 1), "shim": shim is not None}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
