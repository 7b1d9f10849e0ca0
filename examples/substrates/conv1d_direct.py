"""Substrate: nn.Conv1d (no padding, stride 1) computed directly: one thread per output element."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline


class Model(nn.Module):
    def __init__(self, cin, cout, k):
        super().__init__()
        self.conv = nn.Conv1d(cin, cout, k)

    def forward(self, x):
        return self.conv(x)

cuda_source = r"""
#include <torch/extension.h>
#include <float.h>

__global__ void conv1d_kernel(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias,
                              float* __restrict__ y, int B, int Cin, int L, int Cout, int K) {
    int Lout = L - K + 1;
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= B * Cout * Lout) return;
    int l = idx % Lout;
    int o = (idx / Lout) % Cout;
    int b = idx / (Lout * Cout);
    float acc = bias[o];
    for (int c = 0; c < Cin; ++c)
        for (int k = 0; k < K; ++k)
            acc += w[(o * Cin + c) * K + k] * x[(b * Cin + c) * L + l + k];
    y[idx] = acc;
}
torch::Tensor conv1d_direct(torch::Tensor x, torch::Tensor w, torch::Tensor bias) {
    auto xc = x.contiguous(), wc = w.contiguous();
    int B = xc.size(0), Cin = xc.size(1), L = xc.size(2), Cout = wc.size(0), K = wc.size(2);
    auto y = torch::empty({B, Cout, L - K + 1}, xc.options());
    int total = y.numel();
    conv1d_kernel<<<(total + 127) / 128, 128>>>(xc.data_ptr<float>(), wc.data_ptr<float>(), bias.data_ptr<float>(),
                                                y.data_ptr<float>(), B, Cin, L, Cout, K);
    return y;
}
"""

cpp_source = "torch::Tensor conv1d_direct(torch::Tensor x, torch::Tensor w, torch::Tensor bias);"

ext = load_inline(name="conv1d_direct", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["conv1d_direct"], verbose=False)


class ModelNew(Model):
    def forward(self, x):
        return ext.conv1d_direct(x, self.conv.weight, self.conv.bias)


batch_size, cin, cout, length, k = 2, 3, 4, 30, 5


def get_inputs():
    return [torch.randn(batch_size, cin, length)]


def get_init_inputs():
    return [cin, cout, k]


# Host mirror of the launch above, for the kill matrix (dirigo.killmatrix); KernelBench ignores it.
def dirigo_launches(model, x):
    B, Cin, L = x.shape
    w, bias = model.conv.weight, model.conv.bias
    Cout, K = w.shape[0], w.shape[2]
    y = torch.zeros(B, Cout, L - K + 1)
    return [("conv1d_kernel", ((y.numel() + 127) // 128,), (128,), 0,
             [x, w, bias, y, ("s32", B), ("s32", Cin), ("s32", L), ("s32", Cout), ("s32", K)])], y
