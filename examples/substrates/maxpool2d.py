"""Substrate: nn.MaxPool2d(2): one thread per output, a 2x2 window, -FLT_MAX seed; odd sizes floor."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool2d(2)

    def forward(self, x):
        return self.pool(x)

cuda_source = r"""
#include <torch/extension.h>
#include <float.h>

__global__ void maxpool2d_kernel(const float* __restrict__ x, float* __restrict__ y, int planes, int H, int W) {
    int Ho = H / 2, Wo = W / 2;
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= planes * Ho * Wo) return;
    int ow = idx % Wo;
    int oh = (idx / Wo) % Ho;
    int p = idx / (Wo * Ho);
    const float* plane = x + (long)p * H * W;
    float m = -FLT_MAX;
    for (int dh = 0; dh < 2; ++dh)
        for (int dw = 0; dw < 2; ++dw) m = fmaxf(m, plane[(oh * 2 + dh) * W + ow * 2 + dw]);
    y[idx] = m;
}
torch::Tensor maxpool2d(torch::Tensor x) {
    auto xc = x.contiguous();
    int B = xc.size(0), C = xc.size(1), H = xc.size(2), W = xc.size(3);
    auto y = torch::empty({B, C, H / 2, W / 2}, xc.options());
    int total = y.numel();
    maxpool2d_kernel<<<(total + 127) / 128, 128>>>(xc.data_ptr<float>(), y.data_ptr<float>(), B * C, H, W);
    return y;
}
"""

cpp_source = "torch::Tensor maxpool2d(torch::Tensor x);"

ext = load_inline(name="maxpool2d", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["maxpool2d"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.maxpool2d(x)


batch_size, channels, height, width = 2, 3, 9, 10


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return []


# Host mirror of the launch above, for the kill matrix (dirigo.killmatrix); KernelBench ignores it.
def dirigo_launches(model, x):
    B, C, H, W = x.shape
    y = torch.zeros(B, C, H // 2, W // 2)
    return [("maxpool2d_kernel", ((y.numel() + 127) // 128,), (128,), 0, [x, y, ("s32", B * C), ("s32", H), ("s32", W)])], y
