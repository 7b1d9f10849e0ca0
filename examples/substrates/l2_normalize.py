"""Substrate: F.normalize(x, dim=1): x / max(||x||_2, eps), one block per row, shared-memory tree sum."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline


class Model(nn.Module):
    def forward(self, x):
        return F.normalize(x, p=2.0, dim=1)

cuda_source = r"""
#include <torch/extension.h>
#include <float.h>

__global__ void l2_normalize_kernel(const float* __restrict__ x, float* __restrict__ y, int cols, float eps) {
    __shared__ float partial[64];
    const float* row = x + (long)blockIdx.x * cols;
    float* out = y + (long)blockIdx.x * cols;
    float sq = 0.0f;
    for (int i = threadIdx.x; i < cols; i += blockDim.x) sq += row[i] * row[i];
    partial[threadIdx.x] = sq;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    float norm = fmaxf(sqrtf(partial[0]), eps);
    for (int i = threadIdx.x; i < cols; i += blockDim.x) out[i] = row[i] / norm;
}
torch::Tensor l2_normalize(torch::Tensor x) {
    auto xc = x.contiguous();
    int rows = xc.size(0), cols = xc.size(1);
    auto y = torch::empty_like(xc);
    l2_normalize_kernel<<<rows, 64>>>(xc.data_ptr<float>(), y.data_ptr<float>(), cols, 1e-12f);
    return y;
}
"""

cpp_source = "torch::Tensor l2_normalize(torch::Tensor x);"

ext = load_inline(name="l2_normalize", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["l2_normalize"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.l2_normalize(x)


batch_size, dim = 5, 80


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []


# Host mirror of the launch above, for the kill matrix (dirigo.killmatrix); KernelBench ignores it.
def dirigo_launches(model, x):
    rows, cols = x.shape
    y = torch.zeros_like(x)
    return [("l2_normalize_kernel", (rows,), (64,), 0, [x, y, ("s32", cols), ("f32", 1e-12)])], y
