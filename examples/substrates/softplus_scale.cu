// Substrate (plain CUDA container): y = scale * softplus(x) with a numerically stable softplus
// (log1pf(expf(-|x|)) + max(x, 0)), a grid-stride loop and a vectorized float4 main body with a
// scalar tail. The host launcher is plain CUDA, not a torch extension.
#include <cuda_runtime.h>

__device__ __forceinline__ float softplus(float v) {
    return log1pf(expf(-fabsf(v))) + fmaxf(v, 0.0f);
}

__global__ void softplus_scale_kernel(const float* __restrict__ x, float* __restrict__ y, int n, float scale) {
    int tid = blockIdx.x * blockDim.x + threadIdx.x;
    int stride = blockDim.x * gridDim.x;
    int n4 = n / 4;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    for (int i = tid; i < n4; i += stride) {
        float4 v = x4[i];
        float4 r;
        r.x = scale * softplus(v.x);
        r.y = scale * softplus(v.y);
        r.z = scale * softplus(v.z);
        r.w = scale * softplus(v.w);
        y4[i] = r;
    }
    for (int i = n4 * 4 + tid; i < n; i += stride) y[i] = scale * softplus(x[i]);
}

void softplus_scale(const float* x, float* y, int n, float scale, cudaStream_t stream) {
    int threads = 256;
    int blocks = (n / 4 + threads - 1) / threads;
    if (blocks > 1024) blocks = 1024;
    if (blocks < 1) blocks = 1;
    softplus_scale_kernel<<<blocks, threads, 0, stream>>>(x, y, n, scale);
}
