"""Substrate: fused Linear + bias + ReLU (y = relu(x @ W^T + b)) with a shared-memory tiled kernel."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))


cuda_source = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

#define TILE 16

// y[r, c] = max(0, sum_k x[r, k] * w[c, k] + b[c]); one 16x16 output tile per block.
__global__ void linear_relu_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                   const float* __restrict__ b, float* __restrict__ y,
                                   int rows, int in_f, int out_f) {
    __shared__ float xs[TILE][TILE + 1];
    __shared__ float ws[TILE][TILE + 1];
    int r = blockIdx.y * TILE + threadIdx.y;
    int c = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < in_f; k0 += TILE) {
        int kx = k0 + threadIdx.x;
        int kw = k0 + threadIdx.y;
        xs[threadIdx.y][threadIdx.x] = (r < rows && kx < in_f) ? x[r * in_f + kx] : 0.0f;
        int wc = blockIdx.x * TILE + threadIdx.x;
        ws[threadIdx.y][threadIdx.x] = (wc < out_f && kw < in_f) ? w[wc * in_f + kw] : 0.0f;
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < TILE; ++k) {
            acc += xs[threadIdx.y][k] * ws[k][threadIdx.x];
        }
        __syncthreads();
    }
    if (r < rows && c < out_f) {
        float v = acc + b[c];
        y[r * out_f + c] = fmaxf(v, 0.0f);
    }
}

torch::Tensor linear_relu(torch::Tensor x, torch::Tensor w, torch::Tensor b) {
    TORCH_CHECK(x.is_cuda() && w.is_cuda() && b.is_cuda(), "inputs must be CUDA tensors");
    auto xc = x.contiguous();
    auto wc = w.contiguous();
    int rows = xc.size(0), in_f = xc.size(1), out_f = wc.size(0);
    auto y = torch::empty({rows, out_f}, xc.options());
    dim3 block(TILE, TILE);
    dim3 grid((out_f + TILE - 1) / TILE, (rows + TILE - 1) / TILE);
    linear_relu_kernel<<<grid, block>>>(xc.data_ptr<float>(), wc.data_ptr<float>(), b.data_ptr<float>(),
                                        y.data_ptr<float>(), rows, in_f, out_f);
    return y;
}
"""

cpp_source = "torch::Tensor linear_relu(torch::Tensor x, torch::Tensor w, torch::Tensor b);"

fused = load_inline(name="fused_linear_relu", cpp_sources=cpp_source, cuda_sources=cuda_source,
                    functions=["linear_relu"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return fused.linear_relu(x, self.linear.weight, self.linear.bias)


batch_size, in_features, out_features = 8, 40, 24


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
    grid = ((out_f + 15) // 16, (rows + 15) // 16)
    return [("linear_relu_kernel", grid, (16, 16), 0, [x, w, b, y, ("s32", rows), ("s32", in_f), ("s32", out_f)])], y
