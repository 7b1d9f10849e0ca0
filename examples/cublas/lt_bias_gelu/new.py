"""Correct cuBLASLt candidate: one cublasLtMatmul with the GELU_BIAS epilogue computes the whole layer.
Row-major out (M x N) = gelu(x W^T + b) is column-major D (N x M) = gelu(op(A) B + bias) with A = W read
as K x N (ld K) transposed, B = x read as K x M (ld K), bias one value per row of D. Expected: CHECKED."""
import os
import sys

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import cublas_paths  # noqa: E402

CUDA = r'''
#include <torch/extension.h>
#include <cublasLt.h>

#define LT_CHECK(x) TORCH_CHECK((x) == CUBLAS_STATUS_SUCCESS, #x " failed")

// Never launched: gives the library device code, so PTX extraction (cuobjdump -ptx) has a section to read
// (the tracer's PTX step does not expect an extension whose CUDA source defines no kernel).
__global__ void unused_marker(float* p) { if (p) p[0] = 0.f; }

torch::Tensor linear_gelu(torch::Tensor x, torch::Tensor w, torch::Tensor b) {
  static cublasLtHandle_t lt = nullptr;
  if (!lt) LT_CHECK(cublasLtCreate(&lt));
  const int64_t M = x.size(0), K = x.size(1), N = w.size(0);
  auto out = torch::empty({M, N}, x.options());
  cublasLtMatmulDesc_t desc;
  LT_CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  int32_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  uint32_t epi = CUBLASLT_EPILOGUE_GELU_BIAS;
  const void* bias = b.data_ptr<float>();
  LT_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  LT_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  LT_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
  LT_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
  cublasLtMatrixLayout_t A, B, D;
  LT_CHECK(cublasLtMatrixLayoutCreate(&A, CUDA_R_32F, K, N, K));
  LT_CHECK(cublasLtMatrixLayoutCreate(&B, CUDA_R_32F, K, M, K));
  LT_CHECK(cublasLtMatrixLayoutCreate(&D, CUDA_R_32F, N, M, N));
  const float alpha = 1.f, beta = 0.f;
  LT_CHECK(cublasLtMatmul(lt, desc, &alpha, w.data_ptr<float>(), A, x.data_ptr<float>(), B, &beta,
                          out.data_ptr<float>(), D, out.data_ptr<float>(), D, nullptr, nullptr, 0, 0));
  cublasLtMatrixLayoutDestroy(A);
  cublasLtMatrixLayoutDestroy(B);
  cublasLtMatrixLayoutDestroy(D);
  cublasLtMatmulDescDestroy(desc);
  return out;
}
'''
CPP = "torch::Tensor linear_gelu(torch::Tensor x, torch::Tensor w, torch::Tensor b);"

ext = load_inline("lt_bias_gelu_ext", CPP, cuda_sources=CUDA, functions=["linear_gelu"], **cublas_paths.build_kwargs())


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return ext.linear_gelu(x.contiguous(), self.linear.weight, self.linear.bias)
