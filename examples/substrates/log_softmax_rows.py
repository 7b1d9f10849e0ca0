"""Substrate: log_softmax over the last dimension: warp-shuffle max and sum, one slot per warp in
shared memory, out = x - max - log(sum exp(x - max))."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline


class Model(nn.Module):
    def forward(self, x):
        return torch.log_softmax(x, dim=-1)

cuda_source = r"""
#include <torch/extension.h>
#include <float.h>

__device__ float warp_reduce(float v, bool is_max) {
    for (int o = 16; o > 0; o >>= 1) {
        float other = __shfl_xor_sync(0xffffffff, v, o);
        v = is_max ? fmaxf(v, other) : v + other;
    }
    return v;
}

__device__ float block_reduce(float v, float* slots, bool is_max) {
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = blockDim.x / 32;
    v = warp_reduce(v, is_max);
    if (lane == 0) slots[warp] = v;
    __syncthreads();
    float r = lane < nwarps ? slots[lane] : (is_max ? -FLT_MAX : 0.0f);
    r = warp_reduce(r, is_max);
    __syncthreads();
    return r;
}

__global__ void log_softmax_kernel(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float slots[32];
    const float* row = x + (long)blockIdx.x * cols;
    float* out = y + (long)blockIdx.x * cols;
    float m = -FLT_MAX;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
    m = block_reduce(m, slots, true);
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += expf(row[c] - m);
    s = block_reduce(s, slots, false);
    float lse = logf(s);
    for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = row[c] - m - lse;
}
torch::Tensor log_softmax_rows(torch::Tensor x) {
    auto xc = x.contiguous();
    int cols = xc.size(-1), rows = xc.numel() / cols;
    auto y = torch::empty_like(xc);
    log_softmax_kernel<<<rows, 128>>>(xc.data_ptr<float>(), y.data_ptr<float>(), cols);
    return y;
}
"""

cpp_source = "torch::Tensor log_softmax_rows(torch::Tensor x);"

ext = load_inline(name="log_softmax_rows", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["log_softmax_rows"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.log_softmax_rows(x)


batch_size, dim = 5, 150


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []


# Host mirror of the launch above, for the kill matrix (dirigo.killmatrix); KernelBench ignores it.
def dirigo_launches(model, x):
    cols = x.shape[-1]
    y = torch.zeros_like(x)
    return [("log_softmax_kernel", (x.numel() // cols,), (128,), 0, [x, y, ("s32", cols)])], y
