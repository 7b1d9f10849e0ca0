"""Correct cuBLAS candidate: out (row-major MxN) = x W^T computed as the column-major product
out^T = W x^T, i.e. cublasSgemm(T, N, m=N, n=M, k=K, A=W lda=K, B=x ldb=K, C=out ldc=N). Expected: CHECKED/VERIFIED."""
import os
import sys

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import cublas_paths  # noqa: E402

CUDA = r'''
#include <torch/extension.h>
#include <cublas_v2.h>

__global__ void bias_relu(float* out, const float* bias, int rows, int cols) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows * cols) {
    float v = out[i] + bias[i % cols];
    out[i] = v > 0.f ? v : 0.f;
  }
}

torch::Tensor linear_relu(torch::Tensor x, torch::Tensor w, torch::Tensor b) {
  static cublasHandle_t h = nullptr;
  if (!h) TORCH_CHECK(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS, "cublasCreate failed");
  const int M = x.size(0), K = x.size(1), N = w.size(0);
  auto out = torch::empty({M, N}, x.options());
  const float alpha = 1.f, beta = 0.f;
  const float *X = x.data_ptr<float>(), *W = w.data_ptr<float>();
  float* O = out.data_ptr<float>();
  // row-major out = x W^T  <=>  column-major out^T (N x M) = op(W) x^T with W read as K x N, transposed
  cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &alpha, W, K, X, K, &beta, O, N);
  bias_relu<<<(M * N + 127) / 128, 128>>>(O, b.data_ptr<float>(), M, N);
  return out;
}
'''
CPP = "torch::Tensor linear_relu(torch::Tensor x, torch::Tensor w, torch::Tensor b);"

ext = load_inline("gemm_ok_ext", CPP, cuda_sources=CUDA, functions=["linear_relu"], **cublas_paths.build_kwargs())


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return ext.linear_relu(x.contiguous(), self.linear.weight, self.linear.bias)
