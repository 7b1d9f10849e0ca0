# Expected verdict: BUG barrier-divergence — the first __syncthreads() sits inside `if (t < cols)`;
# with 128 threads and 96 columns, threads 96..127 skip it and wait at the loop's barrier instead.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>

__global__ void center_rows_kernel(const float* __restrict__ x, float* __restrict__ out, int cols) {
    __shared__ float s[128];
    const int row = blockIdx.x, t = threadIdx.x;
    s[t] = 0.0f;
    if (t < cols) {
        s[t] = x[row * cols + t];
        __syncthreads();   // BUG: not reached by threads t >= cols
    }
    for (int k = 64; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t < cols) out[row * cols + t] = x[row * cols + t] - s[0] / cols;
}

torch::Tensor center_rows(torch::Tensor x) {
    const int rows = x.size(0), cols = x.size(1);
    TORCH_CHECK(cols <= 128, "one thread per column");
    auto out = torch::empty_like(x);
    center_rows_kernel<<<rows, 128>>>(x.data_ptr<float>(), out.data_ptr<float>(), cols);
    return out;
}
"""
cpp_source = "torch::Tensor center_rows(torch::Tensor x);"
ext = load_inline(name="dirigo_ex_divergent_barrier", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["center_rows"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.center_rows(x)
