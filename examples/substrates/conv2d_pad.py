"""Substrate: nn.Conv2d 3x3 with padding 1, direct: one thread per output, zero padding by bounds checks."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline


class Model(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1)

    def forward(self, x):
        return self.conv(x)

cuda_source = r"""
#include <torch/extension.h>
#include <float.h>

__global__ void conv2d_pad_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                  const float* __restrict__ bias, float* __restrict__ y,
                                  int B, int Cin, int H, int W, int Cout) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    int total = B * Cout * H * W;
    if (idx >= total) return;
    int ow = idx % W;
    int oh = (idx / W) % H;
    int o = (idx / (W * H)) % Cout;
    int b = idx / (W * H * Cout);
    float acc = bias[o];
    for (int c = 0; c < Cin; ++c)
        for (int kh = 0; kh < 3; ++kh)
            for (int kw = 0; kw < 3; ++kw) {
                int ih = oh + kh - 1, iw = ow + kw - 1;
                if (ih >= 0 && ih < H && iw >= 0 && iw < W)
                    acc += w[((o * Cin + c) * 3 + kh) * 3 + kw] * x[((b * Cin + c) * H + ih) * W + iw];
            }
    y[idx] = acc;
}
torch::Tensor conv2d_pad(torch::Tensor x, torch::Tensor w, torch::Tensor bias) {
    auto xc = x.contiguous(), wc = w.contiguous();
    int B = xc.size(0), Cin = xc.size(1), H = xc.size(2), W = xc.size(3), Cout = wc.size(0);
    auto y = torch::empty({B, Cout, H, W}, xc.options());
    int total = y.numel();
    conv2d_pad_kernel<<<(total + 255) / 256, 256>>>(xc.data_ptr<float>(), wc.data_ptr<float>(), bias.data_ptr<float>(),
                                                    y.data_ptr<float>(), B, Cin, H, W, Cout);
    return y;
}
"""

cpp_source = "torch::Tensor conv2d_pad(torch::Tensor x, torch::Tensor w, torch::Tensor bias);"

ext = load_inline(name="conv2d_pad", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["conv2d_pad"], verbose=False)


class ModelNew(Model):
    def forward(self, x):
        return ext.conv2d_pad(x, self.conv.weight, self.conv.bias)


batch_size, cin, cout, height, width = 2, 2, 3, 10, 9


def get_inputs():
    return [torch.randn(batch_size, cin, height, width)]


def get_init_inputs():
    return [cin, cout]


# Host mirror of the launch above, for the kill matrix (dirigo.killmatrix); KernelBench ignores it.
def dirigo_launches(model, x):
    B, Cin, H, W = x.shape
    w, bias = model.conv.weight, model.conv.bias
    Cout = w.shape[0]
    y = torch.zeros(B, Cout, H, W)
    return [("conv2d_pad_kernel", ((y.numel() + 255) // 256,), (256,), 0,
             [x, w, bias, y, ("s32", B), ("s32", Cin), ("s32", H), ("s32", W), ("s32", Cout)])], y
