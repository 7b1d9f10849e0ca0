"""Substrate: y = relu(x + bias) * scale, a fused elementwise epilogue with a grid-stride loop
(the per-column bias is indexed by i % features)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline


class Model(nn.Module):
    def __init__(self, features, scale):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features))
        self.scale = scale

    def forward(self, x):
        return torch.relu(x + self.bias) * self.scale

cuda_source = r"""
#include <torch/extension.h>
#include <float.h>

__global__ void bias_relu_scale_kernel(const float* __restrict__ x, const float* __restrict__ bias,
                                       float* __restrict__ y, int n, int features, float scale) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        float v = x[i] + bias[i % features];
        y[i] = fmaxf(v, 0.0f) * scale;
    }
}
torch::Tensor bias_relu_scale(torch::Tensor x, torch::Tensor bias, double scale) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    int n = xc.numel(), features = bias.numel();
    int threads = 128;
    int blocks = std::min((n + threads - 1) / threads, 4);
    bias_relu_scale_kernel<<<blocks, threads>>>(xc.data_ptr<float>(), bias.data_ptr<float>(), y.data_ptr<float>(),
                                                n, features, (float)scale);
    return y;
}
"""

cpp_source = "torch::Tensor bias_relu_scale(torch::Tensor x, torch::Tensor bias, double scale);"

ext = load_inline(name="bias_relu_scale", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["bias_relu_scale"], verbose=False)


class ModelNew(Model):
    def forward(self, x):
        return ext.bias_relu_scale(x, self.bias, self.scale)


batch_size, features, scale = 6, 130, 0.5


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features, scale]


# Host mirror of the launch above, for the kill matrix (dirigo.killmatrix); KernelBench ignores it.
def dirigo_launches(model, x):
    n, features = x.numel(), model.bias.numel()
    y = torch.zeros_like(x)
    return [("bias_relu_scale_kernel", (min((n + 127) // 128, 4),), (128,), 0,
             [x, model.bias, y, ("s32", n), ("s32", features), ("f32", model.scale)])], y
