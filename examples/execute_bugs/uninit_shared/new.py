# Expected verdict: BUG uninitialized-shared-read — 64 threads per row, but only threads < cols (40) fill
# shared memory; the tree reduction then reads sdata[40..63], which nobody wrote (the else branch is missing).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>

__global__ void relu_row_sum_kernel(const float* __restrict__ x, float* __restrict__ out, int cols) {
    __shared__ float sdata[64];
    const int row = blockIdx.x, t = threadIdx.x;
    if (t < cols) sdata[t] = fmaxf(x[row * cols + t], 0.0f);   // BUG: sdata[t] = 0 for t >= cols is missing
    __syncthreads();
    for (int s = 32; s > 0; s >>= 1) {
        if (t < s) sdata[t] += sdata[t + s];
        __syncthreads();
    }
    if (t == 0) out[row] = sdata[0];
}

torch::Tensor relu_row_sum(torch::Tensor x) {
    const int rows = x.size(0), cols = x.size(1);
    TORCH_CHECK(cols <= 64, "one thread per column");
    auto out = torch::empty({rows}, x.options());
    relu_row_sum_kernel<<<rows, 64>>>(x.data_ptr<float>(), out.data_ptr<float>(), cols);
    return out;
}
"""
cpp_source = "torch::Tensor relu_row_sum(torch::Tensor x);"
ext = load_inline(name="dirigo_ex_uninit_shared", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["relu_row_sum"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.relu_row_sum(x)
