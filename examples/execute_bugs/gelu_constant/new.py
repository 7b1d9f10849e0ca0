# Expected verdict: BUG witness — no Execute-stage finding; the GELU kernel writes 0.44715 where the tanh
# approximation has 0.044715, so at inputs near 1 the output differs by ~0.07 (a numerics bug found by a witness).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>

__global__ void gelu_tanh_kernel(const float* __restrict__ x, float* __restrict__ out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        const float v = x[i];
        const float inner = 0.7978845608f * (v + 0.44715f * v * v * v);   // BUG: 0.044715
        out[i] = 0.5f * v * (1.0f + tanhf(inner));
    }
}

torch::Tensor gelu_tanh(torch::Tensor x) {
    const int n = x.numel();
    auto out = torch::empty_like(x);
    const int threads = 128;
    gelu_tanh_kernel<<<(n + threads - 1) / threads, threads>>>(x.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
"""
cpp_source = "torch::Tensor gelu_tanh(torch::Tensor x);"
ext = load_inline(name="dirigo_ex_gelu_constant", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["gelu_tanh"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return ext.gelu_tanh(self.linear(x))
