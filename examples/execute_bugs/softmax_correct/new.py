# Expected verdict: CHECKED (VERIFIED with --full) — a correct fused scale + row softmax: one warp per row,
# each lane holds two columns, max and sum by __shfl_xor_sync butterflies over the full (all active) warp.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>

__global__ void scaled_softmax_kernel(const float* __restrict__ x, float* __restrict__ out, int cols, float scale) {
    const int row = blockIdx.x, lane = threadIdx.x;
    const float a = x[row * cols + lane] * scale;
    const float b = x[row * cols + lane + 32] * scale;
    float m = fmaxf(a, b);
    for (int off = 16; off > 0; off >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, off));
    const float ea = expf(a - m), eb = expf(b - m);
    float s = ea + eb;
    for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffff, s, off);
    out[row * cols + lane] = ea / s;
    out[row * cols + lane + 32] = eb / s;
}

torch::Tensor scaled_softmax(torch::Tensor x, double scale) {
    const int rows = x.size(0), cols = x.size(1);
    TORCH_CHECK(cols == 64, "two columns per lane, 64 columns");
    auto out = torch::empty_like(x);
    scaled_softmax_kernel<<<rows, 32>>>(x.data_ptr<float>(), out.data_ptr<float>(), cols, (float)scale);
    return out;
}
"""
cpp_source = "torch::Tensor scaled_softmax(torch::Tensor x, double scale);"
ext = load_inline(name="dirigo_ex_softmax_correct", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["scaled_softmax"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return ext.scaled_softmax(x, self.scale)
