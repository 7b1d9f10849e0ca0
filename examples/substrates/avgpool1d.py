"""Substrate: nn.AvgPool1d(4, stride=2): one thread per output window, sum then divide."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.AvgPool1d(4, stride=2)

    def forward(self, x):
        return self.pool(x)

cuda_source = r"""
#include <torch/extension.h>
#include <float.h>

__global__ void avgpool1d_kernel(const float* __restrict__ x, float* __restrict__ y, int planes, int L, int K, int S) {
    int Lout = (L - K) / S + 1;
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= planes * Lout) return;
    int l = idx % Lout;
    int p = idx / Lout;
    const float* row = x + (long)p * L + l * S;
    float s = 0.0f;
    for (int k = 0; k < K; ++k) s += row[k];
    y[idx] = s / K;
}
torch::Tensor avgpool1d(torch::Tensor x) {
    auto xc = x.contiguous();
    int B = xc.size(0), C = xc.size(1), L = xc.size(2), K = 4, S = 2;
    auto y = torch::empty({B, C, (L - K) / S + 1}, xc.options());
    int total = y.numel();
    avgpool1d_kernel<<<(total + 63) / 64, 64>>>(xc.data_ptr<float>(), y.data_ptr<float>(), B * C, L, K, S);
    return y;
}
"""

cpp_source = "torch::Tensor avgpool1d(torch::Tensor x);"

ext = load_inline(name="avgpool1d", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["avgpool1d"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.avgpool1d(x)


batch_size, channels, length = 3, 4, 33


def get_inputs():
    return [torch.randn(batch_size, channels, length)]


def get_init_inputs():
    return []


# Host mirror of the launch above, for the kill matrix (dirigo.killmatrix); KernelBench ignores it.
def dirigo_launches(model, x):
    B, C, L = x.shape
    y = torch.zeros(B, C, (L - 4) // 2 + 1)
    return [("avgpool1d_kernel", ((y.numel() + 63) // 64,), (64,), 0,
             [x, y, ("s32", B * C), ("s32", L), ("s32", 4), ("s32", 2)])], y
