"""Substrate: row softmax with max subtraction; one block per row, warp shuffles + shared memory."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


cuda_source = """
#include <torch/extension.h>
#include <float.h>

__device__ __forceinline__ float warp_max(float v) {
    for (int offset = 16; offset > 0; offset >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, offset));
    return v;
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_xor_sync(0xffffffff, v, offset);
    return v;
}

// Block-wide reduction through one shared slot per warp; every thread gets the result.
__device__ float block_reduce(float v, float* smem, bool is_max) {
    int lane = threadIdx.x % 32;
    int warp = threadIdx.x / 32;
    v = is_max ? warp_max(v) : warp_sum(v);
    if (lane == 0) smem[warp] = v;
    __syncthreads();
    int nwarps = (blockDim.x + 31) / 32;
    float r = (threadIdx.x < nwarps) ? smem[threadIdx.x] : (is_max ? -FLT_MAX : 0.0f);
    if (warp == 0) r = is_max ? warp_max(r) : warp_sum(r);
    if (threadIdx.x == 0) smem[0] = r;
    __syncthreads();
    r = smem[0];
    __syncthreads();
    return r;
}

__global__ void softmax_kernel(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float smem[32];
    const float* row = x + (long)blockIdx.x * cols;
    float* out = y + (long)blockIdx.x * cols;
    float m = -FLT_MAX;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
    m = block_reduce(m, smem, true);
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += expf(row[c] - m);
    s = block_reduce(s, smem, false);
    float inv = 1.0f / s;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = expf(row[c] - m) * inv;
}

torch::Tensor softmax_rows(torch::Tensor x) {
    auto xc = x.contiguous();
    int cols = xc.size(-1);
    int rows = xc.numel() / cols;
    auto y = torch::empty_like(xc);
    int threads = 256;
    softmax_kernel<<<rows, threads>>>(xc.data_ptr<float>(), y.data_ptr<float>(), cols);
    return y;
}
"""

cpp_source = "torch::Tensor softmax_rows(torch::Tensor x);"

ext = load_inline(name="softmax_rows", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["softmax_rows"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.softmax_rows(x)


batch_size, dim = 4, 300


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []


# Host mirror of the launch above, for the kill matrix (dirigo.killmatrix); KernelBench ignores it.
def dirigo_launches(model, x):
    cols = x.shape[-1]
    y = torch.zeros_like(x)
    return [("softmax_kernel", (x.numel() // cols,), (256,), 0, [x, y, ("s32", cols)])], y
