"""Substrate: torch.sum over the middle axis of a 3-D tensor: one thread per (batch, column), strided
walk down the reduced axis."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline


class Model(nn.Module):
    def forward(self, x):
        return torch.sum(x, dim=1)

cuda_source = r"""
#include <torch/extension.h>
#include <float.h>

__global__ void sum_middle_kernel(const float* __restrict__ x, float* __restrict__ y, int B, int R, int C) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= B * C) return;
    int c = idx % C, b = idx / C;
    const float* base = x + (long)b * R * C + c;
    float s = 0.0f;
    for (int r = 0; r < R; ++r) s += base[r * C];
    y[idx] = s;
}
torch::Tensor sum_middle_dim(torch::Tensor x) {
    auto xc = x.contiguous();
    int B = xc.size(0), R = xc.size(1), C = xc.size(2);
    auto y = torch::empty({B, C}, xc.options());
    sum_middle_kernel<<<(B * C + 31) / 32, 32>>>(xc.data_ptr<float>(), y.data_ptr<float>(), B, R, C);
    return y;
}
"""

cpp_source = "torch::Tensor sum_middle_dim(torch::Tensor x);"

ext = load_inline(name="sum_middle_dim", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["sum_middle_dim"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.sum_middle_dim(x)


batch_size, reduced, cols = 3, 17, 11


def get_inputs():
    return [torch.randn(batch_size, reduced, cols)]


def get_init_inputs():
    return []


# Host mirror of the launch above, for the kill matrix (dirigo.killmatrix); KernelBench ignores it.
def dirigo_launches(model, x):
    B, R, C = x.shape
    y = torch.zeros(B, C)
    return [("sum_middle_kernel", ((B * C + 31) // 32,), (32,), 0, [x, y, ("s32", B), ("s32", R), ("s32", C)])], y
