"""Substrate: fused min over channels, sum over length, tanh-approximated GELU
(out[b] = gelu(sum_l min_c x[b, c, l])). One block per batch row; partial sums reduced in shared memory."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline


class Model(nn.Module):
    def forward(self, x):
        m = torch.min(x, dim=1)[0]
        return F.gelu(torch.sum(m, dim=-1, keepdim=True), approximate="tanh")


cuda_source = """
#include <torch/extension.h>
#include <float.h>

__device__ __forceinline__ float gelu_tanh(float v) {
    const float k = 0.7978845608f;  // sqrt(2 / pi)
    float inner = k * (v + 0.044715f * v * v * v);
    return 0.5f * v * (1.0f + tanhf(inner));
}

__global__ void min_sum_gelu_kernel(const float* __restrict__ x, float* __restrict__ out, int C, int L) {
    extern __shared__ float partial[];
    int b = blockIdx.x;
    const float* xb = x + (long)b * C * L;
    float sum = 0.0f;
    for (int l = threadIdx.x; l < L; l += blockDim.x) {
        float m = FLT_MAX;
        for (int c = 0; c < C; ++c) {
            float v = xb[c * L + l];
            m = v < m ? v : m;
        }
        sum += m;
    }
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[b] = gelu_tanh(partial[0]);
}

torch::Tensor min_sum_gelu(torch::Tensor x) {
    auto xc = x.contiguous();
    int B = xc.size(0), C = xc.size(1), L = xc.size(2);
    auto out = torch::empty({B, 1}, xc.options());
    int threads = 256;
    min_sum_gelu_kernel<<<B, threads, threads * sizeof(float)>>>(xc.data_ptr<float>(), out.data_ptr<float>(), C, L);
    return out;
}
"""

cpp_source = "torch::Tensor min_sum_gelu(torch::Tensor x);"

ext = load_inline(name="min_sum_gelu", cpp_sources=cpp_source, cuda_sources=cuda_source,
                  functions=["min_sum_gelu"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.min_sum_gelu(x)


batch_size, channels, length = 4, 3, 40


def get_inputs():
    return [torch.randn(batch_size, channels, length)]


def get_init_inputs():
    return []


# Host mirror of the launch above, for the kill matrix (dirigo.killmatrix); KernelBench ignores it.
def dirigo_launches(model, x):
    B, C, L = x.shape
    out = torch.zeros(B, 1)
    return [("min_sum_gelu_kernel", (B,), (256,), 256 * 4, [x, out, ("s32", C), ("s32", L)])], out
