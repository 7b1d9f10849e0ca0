# Expected verdict: CHECKED (VERIFIED modulo Fp32Constants with --full: the kernel adds eps as a float) — a correct fused LayerNorm: one warp per row, each lane
# holds two columns, mean and biased variance by __shfl_xor_sync butterflies, then (x - mean) * rsqrt(var + eps).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>

__global__ void layernorm_kernel(const float* __restrict__ x, const float* __restrict__ gamma,
                                 const float* __restrict__ beta, float* __restrict__ out, int cols, float eps) {
    const int row = blockIdx.x, lane = threadIdx.x;
    const float a = x[row * cols + lane], b = x[row * cols + lane + 32];
    float s = a + b;
    for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffff, s, off);
    const float mean = s / cols;
    const float da = a - mean, db = b - mean;
    float q = da * da + db * db;
    for (int off = 16; off > 0; off >>= 1) q += __shfl_xor_sync(0xffffffff, q, off);
    const float inv = rsqrtf(q / cols + eps);
    out[row * cols + lane] = da * inv * gamma[lane] + beta[lane];
    out[row * cols + lane + 32] = db * inv * gamma[lane + 32] + beta[lane + 32];
}

torch::Tensor layernorm(torch::Tensor x, torch::Tensor gamma, torch::Tensor beta, double eps) {
    const int rows = x.size(0), cols = x.size(1);
    TORCH_CHECK(cols == 64, "two columns per lane, 64 columns");
    auto out = torch::empty_like(x);
    layernorm_kernel<<<rows, 32>>>(x.data_ptr<float>(), gamma.data_ptr<float>(), beta.data_ptr<float>(),
                                   out.data_ptr<float>(), cols, (float)eps);
    return out;
}
"""
cpp_source = "torch::Tensor layernorm(torch::Tensor x, torch::Tensor gamma, torch::Tensor beta, double eps);"
ext = load_inline(name="dirigo_ex_layernorm_correct", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["layernorm"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.norm = nn.LayerNorm(features)

    def forward(self, x):
        return ext.layernorm(x, self.norm.weight, self.norm.bias, self.norm.eps)
