# Expected verdict: BUG shuffle-inactive-lane — one warp per row, but only lanes < cols (24) enter the
# branch that calls __shfl_down_sync with the full mask 0xffffffff, which names lanes 24..31 too.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>

__global__ void row_mean_kernel(const float* __restrict__ x, float* __restrict__ out, int cols) {
    const int row = blockIdx.x, lane = threadIdx.x;
    if (lane < cols) {   // BUG: the shuffles below name all 32 lanes
        float v = x[row * cols + lane];
        for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffff, v, off);
        if (lane == 0) out[row] = v / cols;
    }
}

torch::Tensor row_mean(torch::Tensor x) {
    const int rows = x.size(0), cols = x.size(1);
    TORCH_CHECK(cols <= 32, "one lane per column");
    auto out = torch::empty({rows}, x.options());
    row_mean_kernel<<<rows, 32>>>(x.data_ptr<float>(), out.data_ptr<float>(), cols);
    return out;
}
"""
cpp_source = "torch::Tensor row_mean(torch::Tensor x);"
ext = load_inline(name="dirigo_ex_full_mask_predicated", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["row_mean"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.row_mean(x)
