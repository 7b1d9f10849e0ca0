"""Substrate: torch.argmax over rows: per-thread scan, then a shared-memory tree of (value, index)
pairs; ties go to the smaller index as in PyTorch."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline


class Model(nn.Module):
    def forward(self, x):
        return torch.argmax(x, dim=1)

cuda_source = r"""
#include <torch/extension.h>
#include <float.h>

#define THREADS 128
__global__ void row_argmax_kernel(const float* __restrict__ x, long* __restrict__ out, int cols) {
    __shared__ float best_v[THREADS];
    __shared__ int best_i[THREADS];
    const float* row = x + (long)blockIdx.x * cols;
    int t = threadIdx.x;
    float bv = -FLT_MAX;
    int bi = cols;
    for (int c = t; c < cols; c += blockDim.x) {
        float v = row[c];
        if (v > bv) { bv = v; bi = c; }
    }
    best_v[t] = bv;
    best_i[t] = bi;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s) {
            float ov = best_v[t + s];
            int oi = best_i[t + s];
            if (ov > best_v[t] || (ov == best_v[t] && oi < best_i[t])) {
                best_v[t] = ov;
                best_i[t] = oi;
            }
        }
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = best_i[0];
}
torch::Tensor row_argmax(torch::Tensor x) {
    auto xc = x.contiguous();
    int rows = xc.size(0), cols = xc.size(1);
    auto out = torch::empty({rows}, xc.options().dtype(torch::kLong));
    row_argmax_kernel<<<rows, THREADS>>>(xc.data_ptr<float>(), out.data_ptr<long>(), cols);
    return out;
}
"""

cpp_source = "torch::Tensor row_argmax(torch::Tensor x);"

ext = load_inline(name="row_argmax", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["row_argmax"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.row_argmax(x)


batch_size, dim = 6, 200


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []


# Host mirror of the launch above, for the kill matrix (dirigo.killmatrix); KernelBench ignores it.
def dirigo_launches(model, x):
    rows, cols = x.shape
    out = torch.zeros(rows, dtype=torch.int64)
    return [("row_argmax_kernel", (rows,), (128,), 0, [x, out, ("s32", cols)])], out
