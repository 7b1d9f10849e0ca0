"""Substrate: sigmoid(x @ W^T + b) (nn.Linear then sigmoid), one thread per output, the weight row
read with stride in_features."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.sigmoid(self.linear(x))

cuda_source = r"""
#include <torch/extension.h>
#include <float.h>

__global__ void linear_sigmoid_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                      const float* __restrict__ b, float* __restrict__ y,
                                      int rows, int in_f, int out_f) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= rows * out_f) return;
    int r = idx / out_f, o = idx % out_f;
    float acc = b[o];
    for (int k = 0; k < in_f; ++k) acc += x[r * in_f + k] * w[o * in_f + k];
    y[idx] = 1.0f / (1.0f + expf(-acc));
}
torch::Tensor linear_sigmoid(torch::Tensor x, torch::Tensor w, torch::Tensor b) {
    auto xc = x.contiguous(), wc = w.contiguous();
    int rows = xc.size(0), in_f = xc.size(1), out_f = wc.size(0);
    auto y = torch::empty({rows, out_f}, xc.options());
    int total = rows * out_f;
    linear_sigmoid_kernel<<<(total + 63) / 64, 64>>>(xc.data_ptr<float>(), wc.data_ptr<float>(), b.data_ptr<float>(),
                                                     y.data_ptr<float>(), rows, in_f, out_f);
    return y;
}
"""

cpp_source = "torch::Tensor linear_sigmoid(torch::Tensor x, torch::Tensor w, torch::Tensor b);"

ext = load_inline(name="linear_sigmoid", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["linear_sigmoid"], verbose=False)


class ModelNew(Model):
    def forward(self, x):
        return ext.linear_sigmoid(x, self.linear.weight, self.linear.bias)


batch_size, in_features, out_features = 6, 20, 12


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]


# Host mirror of the launch above, for the kill matrix (dirigo.killmatrix); KernelBench ignores it.
def dirigo_launches(model, x):
    rows, in_f = x.shape
    w, b = model.linear.weight, model.linear.bias
    out_f = w.shape[0]
    y = torch.zeros(rows, out_f)
    return [("linear_sigmoid_kernel", ((rows * out_f + 63) // 64,), (64,), 0,
             [x, w, b, y, ("s32", rows), ("s32", in_f), ("s32", out_f)])], y
