"""Substrate: torch.cumsum over rows: Hillis-Steele scan in double-buffered shared memory, one block
per row (a row fits one block)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline


class Model(nn.Module):
    def forward(self, x):
        return torch.cumsum(x, dim=1)

cuda_source = r"""
#include <torch/extension.h>
#include <float.h>

__global__ void cumsum_kernel(const float* __restrict__ x, float* __restrict__ y, int cols) {
    extern __shared__ float buf[];
    int t = threadIdx.x, n = blockDim.x;
    int in = 0, out = 1;
    buf[t] = t < cols ? x[(long)blockIdx.x * cols + t] : 0.0f;
    __syncthreads();
    for (int off = 1; off < n; off <<= 1) {
        float v = buf[in * n + t];
        if (t >= off) v += buf[in * n + t - off];
        buf[out * n + t] = v;
        __syncthreads();
        in = 1 - in;
        out = 1 - out;
    }
    if (t < cols) y[(long)blockIdx.x * cols + t] = buf[in * n + t];
}
torch::Tensor cumsum_rows(torch::Tensor x) {
    auto xc = x.contiguous();
    int rows = xc.size(0), cols = xc.size(1);
    auto y = torch::empty_like(xc);
    int threads = 128;
    TORCH_CHECK(cols <= threads, "a row must fit one block");
    cumsum_kernel<<<rows, threads, 2 * threads * sizeof(float)>>>(xc.data_ptr<float>(), y.data_ptr<float>(), cols);
    return y;
}
"""

cpp_source = "torch::Tensor cumsum_rows(torch::Tensor x);"

ext = load_inline(name="cumsum_rows", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["cumsum_rows"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.cumsum_rows(x)


batch_size, dim = 4, 100


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []


# Host mirror of the launch above, for the kill matrix (dirigo.killmatrix); KernelBench ignores it.
def dirigo_launches(model, x):
    rows, cols = x.shape
    y = torch.zeros_like(x)
    return [("cumsum_kernel", (rows,), (128,), 2 * 128 * 4, [x, y, ("s32", cols)])], y
