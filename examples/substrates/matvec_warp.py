"""Substrate: y = A @ v with one warp per row: lanes stride over the row, __shfl_down_sync reduction."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline


class Model(nn.Module):
    def forward(self, a, v):
        return torch.matmul(a, v)

cuda_source = r"""
#include <torch/extension.h>
#include <float.h>

#define WARPS 4
__global__ void matvec_kernel(const float* __restrict__ a, const float* __restrict__ v, float* __restrict__ y,
                              int rows, int cols) {
    int lane = threadIdx.x % 32;
    int row = blockIdx.x * WARPS + threadIdx.x / 32;
    if (row >= rows) return;
    float acc = 0.0f;
    for (int c = lane; c < cols; c += 32) acc += a[(long)row * cols + c] * v[c];
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffff, acc, o);
    if (lane == 0) y[row] = acc;
}
torch::Tensor matvec(torch::Tensor a, torch::Tensor v) {
    auto ac = a.contiguous(), vc = v.contiguous();
    int rows = ac.size(0), cols = ac.size(1);
    auto y = torch::empty({rows}, ac.options());
    matvec_kernel<<<(rows + WARPS - 1) / WARPS, WARPS * 32>>>(ac.data_ptr<float>(), vc.data_ptr<float>(),
                                                             y.data_ptr<float>(), rows, cols);
    return y;
}
"""

cpp_source = "torch::Tensor matvec(torch::Tensor a, torch::Tensor v);"

ext = load_inline(name="matvec_warp", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["matvec"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, a, v):
        return ext.matvec(a, v)


rows, cols = 37, 70


def get_inputs():
    return [torch.randn(rows, cols), torch.randn(cols)]


def get_init_inputs():
    return []


# Host mirror of the launch above, for the kill matrix (dirigo.killmatrix); KernelBench ignores it.
def dirigo_launches(model, a, v):
    rows, cols = a.shape
    y = torch.zeros(rows)
    return [("matvec_kernel", ((rows + 3) // 4,), (128,), 0, [a, v, y, ("s32", rows), ("s32", cols)])], y
