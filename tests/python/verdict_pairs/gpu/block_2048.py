# expect: BUG
# reference: ref_scale.py
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
__global__ void scale_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i] + 1.0f;
}
torch::Tensor run(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    scale_kernel<<<(n + 2047) / 2048, 2048>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);  // > 1024 threads
    return y;
}
"""

ext = load_inline(name="dirigo_verdict_block_2048", cpp_sources="torch::Tensor run(torch::Tensor x);",
                  cuda_sources=cuda_source, functions=["run"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.run(x.contiguous())
