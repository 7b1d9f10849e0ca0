# Expected verdict: BUG global-out-of-bounds — the host passes x.size(1) (24) as the row stride where the
# contiguous [4, 24, 16] layout has stride 16, so rows >= 64 of the 96 read past the end of x.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>

__global__ void last_dim_mean_kernel(const float* __restrict__ x, float* __restrict__ out,
                                     int rows, int cols, int row_stride) {
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float acc = 0.0f;
        for (int j = 0; j < cols; ++j) acc += x[r * row_stride + j];
        out[r] = acc / cols;
    }
}

torch::Tensor last_dim_mean(torch::Tensor x) {
    const int B = x.size(0), M = x.size(1), N = x.size(2);
    auto out = torch::empty({B, M}, x.options());
    const int rows = B * M, threads = 32;
    // BUG: row stride is N (x.stride(1)), not M
    last_dim_mean_kernel<<<(rows + threads - 1) / threads, threads>>>(x.data_ptr<float>(), out.data_ptr<float>(),
                                                                     rows, N, M);
    return out;
}
"""
cpp_source = "torch::Tensor last_dim_mean(torch::Tensor x);"
ext = load_inline(name="dirigo_ex_layout_mismatch", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["last_dim_mean"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.last_dim_mean(x)
