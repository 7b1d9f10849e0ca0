# Expected verdict: BUG shared-race — the tree reduction has no __syncthreads() between steps, so in
# step s=32 thread 0 (warp 0) reads sdata[32], which thread 32 (warp 1) wrote in step s=64 (cross-warp race).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>

__global__ void row_sum_kernel(const float* __restrict__ x, float* __restrict__ out, int cols) {
    __shared__ float sdata[128];
    const int row = blockIdx.x, t = threadIdx.x;
    sdata[t] = x[row * cols + t];
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s) sdata[t] += sdata[t + s];
        // BUG: missing __syncthreads() here
    }
    if (t == 0) out[row] = sdata[0];
}

torch::Tensor row_sum(torch::Tensor x) {
    const int rows = x.size(0), cols = x.size(1);
    TORCH_CHECK(cols == 128, "one thread per column, 128 columns");
    auto out = torch::empty({rows}, x.options());
    row_sum_kernel<<<rows, 128>>>(x.data_ptr<float>(), out.data_ptr<float>(), cols);
    return out;
}
"""
cpp_source = "torch::Tensor row_sum(torch::Tensor x);"
ext = load_inline(name="dirigo_ex_shared_race", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["row_sum"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.row_sum(x)
