"""Substrate: mean((a - b)^2) to a scalar: grid-stride partial sums, shared-memory tree per block, one
atomicAdd per block of its share of the mean."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline


class Model(nn.Module):
    def forward(self, a, b):
        return torch.mean((a - b) ** 2)

cuda_source = r"""
#include <torch/extension.h>
#include <float.h>

__global__ void mse_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out, int n) {
    __shared__ float partial[128];
    float s = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        float d = a[i] - b[i];
        s += d * d;
    }
    partial[threadIdx.x] = s;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k) partial[threadIdx.x] += partial[threadIdx.x + k];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(out, partial[0] / n);
}
torch::Tensor mse_loss(torch::Tensor a, torch::Tensor b) {
    auto ac = a.contiguous(), bc = b.contiguous();
    int n = ac.numel();
    auto out = torch::zeros({}, ac.options());
    mse_kernel<<<2, 128>>>(ac.data_ptr<float>(), bc.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
"""

cpp_source = "torch::Tensor mse_loss(torch::Tensor a, torch::Tensor b);"

ext = load_inline(name="mse_loss", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["mse_loss"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, a, b):
        return ext.mse_loss(a, b)


batch_size, dim = 7, 50


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return []


# Host mirror of the launch above, for the kill matrix (dirigo.killmatrix); KernelBench ignores it.
def dirigo_launches(model, a, b):
    out = torch.zeros(())
    return [("mse_kernel", (2,), (128,), 0, [a, b, out, ("s32", a.numel())])], out
