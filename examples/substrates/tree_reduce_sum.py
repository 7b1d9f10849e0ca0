"""Substrate: sum over the last dimension with a shared-memory tree reduction and a
warp-synchronous (volatile) final stage; long rows are split over blocks and combined with atomicAdd."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline


class Model(nn.Module):
    def forward(self, x):
        return torch.sum(x, dim=-1)


cuda_source = """
#include <torch/extension.h>

#define BLOCK 256

__device__ void warp_reduce(volatile float* s, int tid) {
    s[tid] += s[tid + 32];
    s[tid] += s[tid + 16];
    s[tid] += s[tid + 8];
    s[tid] += s[tid + 4];
    s[tid] += s[tid + 2];
    s[tid] += s[tid + 1];
}

// grid = (chunks, rows): block (c, r) sums its chunk of row r and adds it to out[r].
__global__ void row_sum_kernel(const float* __restrict__ x, float* __restrict__ out, int cols, int chunk) {
    __shared__ float s[BLOCK];
    int tid = threadIdx.x;
    int row = blockIdx.y;
    int begin = blockIdx.x * chunk;
    int end = min(begin + chunk, cols);
    float acc = 0.0f;
    for (int i = begin + tid; i < end; i += blockDim.x) acc += x[(long)row * cols + i];
    s[tid] = acc;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 32; stride >>= 1) {
        if (tid < stride) s[tid] += s[tid + stride];
        __syncthreads();
    }
    if (tid < 32) warp_reduce(s, tid);
    if (tid == 0) atomicAdd(&out[row], s[0]);
}

torch::Tensor row_sum(torch::Tensor x) {
    auto xc = x.contiguous();
    int cols = xc.size(-1);
    int rows = xc.numel() / cols;
    auto out = torch::zeros({rows}, xc.options());
    int chunk = 4096;
    dim3 grid((cols + chunk - 1) / chunk, rows);
    row_sum_kernel<<<grid, BLOCK>>>(xc.data_ptr<float>(), out.data_ptr<float>(), cols, chunk);
    return out;
}
"""

cpp_source = "torch::Tensor row_sum(torch::Tensor x);"

ext = load_inline(name="tree_reduce_sum", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["row_sum"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.row_sum(x)


batch_size, dim = 3, 5000


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []


# Host mirror of the launch above, for the kill matrix (dirigo.killmatrix); KernelBench ignores it.
def dirigo_launches(model, x):
    cols = x.shape[-1]
    rows = x.numel() // cols
    out = torch.zeros(rows)
    chunk = 4096
    return [("row_sum_kernel", ((cols + chunk - 1) // chunk, rows), (256,), 0, [x, out, ("s32", cols), ("s32", chunk)])], out
