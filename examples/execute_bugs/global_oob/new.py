# Expected verdict: BUG global-out-of-bounds — the guard is `i <= n` instead of `i < n`: with 1000 elements
# and 4 blocks of 256 threads, thread 1000 reads x[1000] and writes out[1000], one past the end.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>

__global__ void swish_kernel(const float* __restrict__ x, float* __restrict__ out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) {   // BUG: off by one
        const float v = x[i];
        out[i] = v / (1.0f + expf(-v));
    }
}

torch::Tensor swish(torch::Tensor x) {
    const int n = x.numel();
    auto out = torch::empty_like(x);
    const int threads = 256;
    swish_kernel<<<(n + threads - 1) / threads, threads>>>(x.data_ptr<float>(), out.data_ptr<float>(), n);
    return out;
}
"""
cpp_source = "torch::Tensor swish(torch::Tensor x);"
ext = load_inline(name="dirigo_ex_global_oob", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["swish"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.swish(x)
