"""Substrate: row mean with one warp per row and __shfl_down_sync reductions (lane 0 writes)."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline


class Model(nn.Module):
    def forward(self, x):
        return torch.mean(x, dim=1)


cuda_source = """
#include <torch/extension.h>

#define WARPS_PER_BLOCK 8

__global__ void row_mean_kernel(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    int lane = threadIdx.x & 31;
    int row = blockIdx.x * WARPS_PER_BLOCK + threadIdx.x / 32;
    if (row >= rows) return;
    const float4* v = reinterpret_cast<const float4*>(x + (long)row * cols);
    int n4 = cols / 4;
    float acc = 0.0f;
    for (int i = lane; i < n4; i += 32) {
        float4 q = v[i];
        acc += (q.x + q.y) + (q.z + q.w);
    }
    for (int i = n4 * 4 + lane; i < cols; i += 32) acc += x[(long)row * cols + i];
    for (int offset = 16; offset > 0; offset /= 2)
        acc += __shfl_down_sync(0xffffffff, acc, offset);
    if (lane == 0) y[row] = acc / (float)cols;
}

torch::Tensor row_mean(torch::Tensor x) {
    auto xc = x.contiguous();
    int rows = xc.size(0), cols = xc.size(1);
    auto y = torch::empty({rows}, xc.options());
    int blocks = (rows + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK;
    row_mean_kernel<<<blocks, WARPS_PER_BLOCK * 32>>>(xc.data_ptr<float>(), y.data_ptr<float>(), rows, cols);
    return y;
}
"""

cpp_source = "torch::Tensor row_mean(torch::Tensor x);"

ext = load_inline(name="warp_row_mean", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["row_mean"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.row_mean(x)


batch_size, dim = 20, 103


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []


# Host mirror of the launch above, for the kill matrix (dirigo.killmatrix); KernelBench ignores it.
def dirigo_launches(model, x):
    rows, cols = x.shape
    y = torch.zeros(rows)
    return [("row_mean_kernel", ((rows + 7) // 8,), (256,), 0, [x, y, ("s32", rows), ("s32", cols)])], y
