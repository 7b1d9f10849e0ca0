"""Substrate: F.hardswish with a float4 main body and a scalar tail (n not a multiple of 4)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline


class Model(nn.Module):
    def forward(self, x):
        return F.hardswish(x)

cuda_source = r"""
#include <torch/extension.h>
#include <float.h>

__device__ __forceinline__ float hardswish(float v) {
    return v * fminf(fmaxf(v + 3.0f, 0.0f), 6.0f) / 6.0f;
}

__global__ void hardswish_kernel(const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int n4 = n / 4;
    if (i < n4) {
        float4 v = reinterpret_cast<const float4*>(x)[i];
        float4 r;
        r.x = hardswish(v.x);
        r.y = hardswish(v.y);
        r.z = hardswish(v.z);
        r.w = hardswish(v.w);
        reinterpret_cast<float4*>(y)[i] = r;
    }
    int t = n4 * 4 + i;
    if (i < 4 && t < n) y[t] = hardswish(x[t]);
}
torch::Tensor hardswish_vec4(torch::Tensor x) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    int n = xc.numel();
    int blocks = std::max((n / 4 + 63) / 64, 1);
    hardswish_kernel<<<blocks, 64>>>(xc.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""

cpp_source = "torch::Tensor hardswish_vec4(torch::Tensor x);"

ext = load_inline(name="hardswish_vec4", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["hardswish_vec4"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.hardswish_vec4(x)


batch_size, dim = 3, 86


def get_inputs():
    return [torch.randn(batch_size, dim) * 4]


def get_init_inputs():
    return []


# Host mirror of the launch above, for the kill matrix (dirigo.killmatrix); KernelBench ignores it.
def dirigo_launches(model, x):
    n = x.numel()
    y = torch.zeros_like(x)
    return [("hardswish_kernel", (max((n // 4 + 63) // 64, 1),), (64,), 0, [x, y, ("s32", n)])], y
