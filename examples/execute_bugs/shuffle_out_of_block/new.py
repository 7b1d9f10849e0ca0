# Expected verdict: BUG shuffle-outside-block — a block of 48 threads (one per column) reduces each warp
# with __shfl_xor_sync(0xffffffff, ...); the second warp has only lanes 0..15, the mask names 16..31.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>

__global__ void row_norm_kernel(const float* __restrict__ x, float* __restrict__ out, int cols) {
    __shared__ float partial[2];
    const int row = blockIdx.x, t = threadIdx.x;
    float v = x[row * cols + t];
    v = v * v;
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffff, v, off);   // BUG: 48-thread block
    if ((t & 31) == 0) partial[t >> 5] = v;
    __syncthreads();
    if (t == 0) out[row] = sqrtf(partial[0] + partial[1]);
}

torch::Tensor row_norm(torch::Tensor x) {
    const int rows = x.size(0), cols = x.size(1);
    TORCH_CHECK(cols == 48, "one thread per column, 48 columns");
    auto out = torch::empty({rows}, x.options());
    row_norm_kernel<<<rows, cols>>>(x.data_ptr<float>(), out.data_ptr<float>(), cols);
    return out;
}
"""
cpp_source = "torch::Tensor row_norm(torch::Tensor x);"
ext = load_inline(name="dirigo_ex_shuffle_out_of_block", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["row_norm"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.row_norm(x)
