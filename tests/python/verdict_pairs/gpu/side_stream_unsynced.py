# expect: BUG
# reference: ref_scale.py
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
__global__ void slow_scale_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    for (int k = 0; k < 20000; ++k) v = v * 1.0000001f;  // slow enough to be unfinished when y is read
    y[i] = 2.0f * x[i] + 1.0f + 0.0f * v;
}
torch::Tensor run(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    auto side = c10::cuda::getStreamFromPool();
    slow_scale_kernel<<<(n + 255) / 256, 256, 0, side>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);  // no sync
    return y;
}
"""

ext = load_inline(name="dirigo_verdict_side_stream_unsynced", cpp_sources="torch::Tensor run(torch::Tensor x);",
                  cuda_sources=cuda_source, functions=["run"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.run(x.contiguous())
