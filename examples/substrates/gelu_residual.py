"""Substrate: y = gelu(x) + r (exact erf GELU) with a residual input, one element per thread."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline


class Model(nn.Module):
    def forward(self, x, r):
        return F.gelu(x) + r

cuda_source = r"""
#include <torch/extension.h>
#include <float.h>

__global__ void gelu_residual_kernel(const float* __restrict__ x, const float* __restrict__ r,
                                     float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)) + r[i];
    }
}
torch::Tensor gelu_residual(torch::Tensor x, torch::Tensor r) {
    auto xc = x.contiguous(), rc = r.contiguous();
    auto y = torch::empty_like(xc);
    int n = xc.numel();
    gelu_residual_kernel<<<(n + 255) / 256, 256>>>(xc.data_ptr<float>(), rc.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""

cpp_source = "torch::Tensor gelu_residual(torch::Tensor x, torch::Tensor r);"

ext = load_inline(name="gelu_residual", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["gelu_residual"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x, r):
        return ext.gelu_residual(x, r)


batch_size, dim = 5, 97


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return []


# Host mirror of the launch above, for the kill matrix (dirigo.killmatrix); KernelBench ignores it.
def dirigo_launches(model, x, r):
    n = x.numel()
    y = torch.zeros_like(x)
    return [("gelu_residual_kernel", ((n + 255) // 256,), (256,), 0, [x, r, y, ("s32", n)])], y
