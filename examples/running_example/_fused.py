# Shared by buggy.py and fixed.py: a KernelBench-style candidate whose min-over-channels and
# sum-over-height are fused into one CUDA kernel (shared-memory tree reduction, then a warp
# shuffle reduction). LOOP_STOP is the loop condition of the shared-memory phase.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA_TEMPLATE = r"""
#include <torch/extension.h>

// One block per (n, w) column; thread t owns output row h = t of the transposed convolution.
__global__ void min_sum_kernel(const float* __restrict__ x, float* __restrict__ out,
                               int C, int H, int W) {
    extern __shared__ float sdata[];
    const int n = blockIdx.x, w = blockIdx.y, t = threadIdx.x;
    const unsigned nT = blockDim.x;
    float m = 0.0f;
    if (t < H) {
        m = x[((n * C) * H + t) * W + w];
        for (int c = 1; c < C; ++c) m = fminf(m, x[((n * C + c) * H + t) * W + w]);
    }
    sdata[t] = m;
    __syncthreads();
    for (unsigned s = nT / 2; LOOP_STOP; s >>= 1) {
        if (t < s) sdata[t] += sdata[t + s];
        __syncthreads();
    }
    if (t < 32) {
        float v = sdata[t];
        for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffff, v, off);
        if (t == 0) out[n * W + w] = v;
    }
}

torch::Tensor min_sum(torch::Tensor x) {
    const int N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
    TORCH_CHECK(H <= 256, "one block reduces at most 256 rows");
    auto out = torch::empty({N, 1, 1, W}, x.options());
    const int threads = 256;
    min_sum_kernel<<<dim3(N, W), threads, threads * sizeof(float)>>>(
        x.data_ptr<float>(), out.data_ptr<float>(), C, H, W);
    return out;
}
"""
CPP_DECL = "torch::Tensor min_sum(torch::Tensor x);"


def build(name, loop_stop):
    return load_inline(name=name, cpp_sources=CPP_DECL, cuda_sources=CUDA_TEMPLATE.replace("LOOP_STOP", loop_stop),
                       functions=["min_sum"], verbose=False)


class FusedModel(nn.Module):
    ext = None

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding, bias_shape):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride, padding, output_padding)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        x = self.conv_transpose(x)
        x = self.ext.min_sum(x.contiguous())
        x = torch.nn.functional.gelu(x)
        return x + self.bias
