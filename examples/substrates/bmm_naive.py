"""Substrate: Batched matmul C[b] = A[b] @ B[b], one thread per output, batch on blockIdx.z."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline


class Model(nn.Module):
    def forward(self, a, b):
        return torch.bmm(a, b)

cuda_source = r"""
#include <torch/extension.h>
#include <float.h>

__global__ void bmm_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                           int M, int K, int N) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int batch = blockIdx.z;
    if (row < M && col < N) {
        const float* ab = a + (long)batch * M * K;
        const float* bb = b + (long)batch * K * N;
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += ab[row * K + k] * bb[k * N + col];
        c[(long)batch * M * N + row * N + col] = acc;
    }
}
torch::Tensor bmm_naive(torch::Tensor a, torch::Tensor b) {
    auto ac = a.contiguous(), bc = b.contiguous();
    int B = ac.size(0), M = ac.size(1), K = ac.size(2), N = bc.size(2);
    auto c = torch::empty({B, M, N}, ac.options());
    dim3 block(8, 8);
    dim3 grid((N + 7) / 8, (M + 7) / 8, B);
    bmm_kernel<<<grid, block>>>(ac.data_ptr<float>(), bc.data_ptr<float>(), c.data_ptr<float>(), M, K, N);
    return c;
}
"""

cpp_source = "torch::Tensor bmm_naive(torch::Tensor a, torch::Tensor b);"

ext = load_inline(name="bmm_naive", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["bmm_naive"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, a, b):
        return ext.bmm_naive(a, b)


batch, M, K, N = 3, 9, 12, 7


def get_inputs():
    return [torch.randn(batch, M, K), torch.randn(batch, K, N)]


def get_init_inputs():
    return []


# Host mirror of the launch above, for the kill matrix (dirigo.killmatrix); KernelBench ignores it.
def dirigo_launches(model, a, b):
    B, M, K = a.shape
    N = b.shape[2]
    c = torch.zeros(B, M, N)
    return [("bmm_kernel", ((N + 7) // 8, (M + 7) // 8, B), (8, 8), 0, [a, b, c, ("s32", M), ("s32", K), ("s32", N)])], c
