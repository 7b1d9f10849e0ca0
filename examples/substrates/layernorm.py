"""Substrate: LayerNorm over the last dimension (two-pass mean/variance in a block, rsqrtf(var + eps),
affine weight and bias)."""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline


class Model(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.ln = nn.LayerNorm(hidden)

    def forward(self, x):
        return self.ln(x)


cuda_source = """
#include <torch/extension.h>

__device__ float block_sum(float v, float* shared) {
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    v = (threadIdx.x < blockDim.x / 32) ? shared[lane] : 0.0f;
    if (warp == 0)
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    if (threadIdx.x == 0) shared[0] = v;
    __syncthreads();
    float total = shared[0];
    __syncthreads();
    return total;
}

__global__ void layernorm_kernel(const float* __restrict__ x, const float* __restrict__ gamma,
                                 const float* __restrict__ beta, float* __restrict__ y, int hidden, float eps) {
    __shared__ float shared[32];
    const float* xr = x + (long)blockIdx.x * hidden;
    float* yr = y + (long)blockIdx.x * hidden;
    float s = 0.0f;
    for (int i = threadIdx.x; i < hidden; i += blockDim.x) s += xr[i];
    float mean = block_sum(s, shared) / hidden;
    float sq = 0.0f;
    for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
        float d = xr[i] - mean;
        sq += d * d;
    }
    float var = block_sum(sq, shared) / hidden;
    float inv_std = rsqrtf(var + eps);
    for (int i = threadIdx.x; i < hidden; i += blockDim.x)
        yr[i] = (xr[i] - mean) * inv_std * gamma[i] + beta[i];
}

torch::Tensor layernorm(torch::Tensor x, torch::Tensor gamma, torch::Tensor beta, double eps) {
    auto xc = x.contiguous();
    int hidden = xc.size(-1);
    int rows = xc.numel() / hidden;
    auto y = torch::empty_like(xc);
    layernorm_kernel<<<rows, 256>>>(xc.data_ptr<float>(), gamma.data_ptr<float>(), beta.data_ptr<float>(),
                                    y.data_ptr<float>(), hidden, (float)eps);
    return y;
}
"""

cpp_source = "torch::Tensor layernorm(torch::Tensor x, torch::Tensor gamma, torch::Tensor beta, double eps);"

ext = load_inline(name="layernorm_sub", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["layernorm"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.ln = nn.LayerNorm(hidden)

    def forward(self, x):
        return ext.layernorm(x, self.ln.weight, self.ln.bias, self.ln.eps)


batch_size, hidden = 4, 300


def get_inputs():
    return [torch.randn(batch_size, hidden)]


def get_init_inputs():
    return [hidden]


# Host mirror of the launch above, for the kill matrix (dirigo.killmatrix); KernelBench ignores it.
def dirigo_launches(model, x):
    hidden = x.shape[-1]
    rows = x.numel() // hidden
    y = torch.zeros_like(x)
    return [("layernorm_kernel", (rows,), (256,), 0,
             [x, model.ln.weight, model.ln.bias, y, ("s32", hidden), ("f32", model.ln.eps)])], y
