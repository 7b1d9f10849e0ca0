"""Substrate: RMSNorm: y = x * rsqrt(mean(x^2) + eps) * weight; one block per row, shared-memory tree sum."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline


class Model(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(dim))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight

cuda_source = r"""
#include <torch/extension.h>
#include <float.h>

__global__ void rms_norm_kernel(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                                int dim, float eps) {
    extern __shared__ float partial[];
    const float* row = x + (long)blockIdx.x * dim;
    float* out = y + (long)blockIdx.x * dim;
    float sq = 0.0f;
    for (int i = threadIdx.x; i < dim; i += blockDim.x) sq += row[i] * row[i];
    partial[threadIdx.x] = sq;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    float scale = rsqrtf(partial[0] / dim + eps);
    for (int i = threadIdx.x; i < dim; i += blockDim.x) out[i] = row[i] * scale * w[i];
}
torch::Tensor rms_norm(torch::Tensor x, torch::Tensor w, double eps) {
    auto xc = x.contiguous();
    int dim = xc.size(-1), rows = xc.numel() / dim;
    auto y = torch::empty_like(xc);
    int threads = 64;
    rms_norm_kernel<<<rows, threads, threads * sizeof(float)>>>(xc.data_ptr<float>(), w.data_ptr<float>(),
                                                                y.data_ptr<float>(), dim, (float)eps);
    return y;
}
"""

cpp_source = "torch::Tensor rms_norm(torch::Tensor x, torch::Tensor w, double eps);"

ext = load_inline(name="rms_norm", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["rms_norm"], verbose=False)


class ModelNew(Model):
    def forward(self, x):
        return ext.rms_norm(x, self.weight, self.eps)


batch_size, dim, eps = 4, 96, 1e-6


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim, eps]


# Host mirror of the launch above, for the kill matrix (dirigo.killmatrix); KernelBench ignores it.
def dirigo_launches(model, x):
    dim = x.shape[-1]
    y = torch.zeros_like(x)
    return [("rms_norm_kernel", (x.numel() // dim,), (64,), 64 * 4,
             [x, model.weight, y, ("s32", dim), ("f32", model.eps)])], y
