// Elementwise kernels: vector add, grid-stride loop, float4 vector loads, math functions.
#include <cuda_fp16.h>
#include <cuda_bf16.h>

extern "C" __global__ void vector_add(const float* __restrict__ a, const float* __restrict__ b,
                                      float* __restrict__ c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

__global__ void grid_stride_scale(const double* x, double* y, double alpha, long n) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)blockDim.x * gridDim.x)
    y[i] = alpha * x[i] + 1.0;
}

__global__ void add_float4(const float4* __restrict__ a, const float4* __restrict__ b, float4* out, int n4) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n4) {
    float4 x = __ldg(&a[i]);
    float4 y = b[i];
    out[i] = make_float4(x.x + y.x, x.y * y.y, x.z - y.z, fmaxf(x.w, y.w));
  }
}

__global__ void gelu_erf(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678f));
}

__global__ void gelu_tanh(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
  }
}

__global__ void misc_math(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    float r = log1pf(fabsf(v)) + powf(fabsf(v) + 1e-3f, 1.7f) + sqrtf(fabsf(v)) + 1.0f / (v + 3.0f);
    r += expf(-v) + logf(fabsf(v) + 1.0f) + rsqrtf(fabsf(v) + 1.0f) + sinf(v) + cosf(v);
    r += fminf(v, 0.0f) + copysignf(1.0f, v) + floorf(v) + ceilf(v) + truncf(v) + roundf(v);
    y[i] = r / (v * v + 1.0f);
  }
}

__global__ void sigmoid_double(const double* x, double* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 1.0 / (1.0 + exp(-x[i])) + tanh(x[i]) + log(fabs(x[i]) + 1.0);
}

__global__ void half_convert(const __half* x, __half* y, const __nv_bfloat16* bx, __nv_bfloat16* by, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = __half2float(x[i]);
    y[i] = __float2half(v * 2.0f + 1.0f);
    float w = __bfloat162float(bx[i]);
    by[i] = __float2bfloat16(w * 3.0f);
    __half2 h2 = __halves2half2(x[i], y[i]);
    h2 = __hmul2(h2, h2);
    y[i] = __hadd(__low2half(h2), __high2half(h2));
  }
}

__global__ void int_ops(const int* a, unsigned* b, long long* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    int v = a[i];
    unsigned u = b[i];
    b[i] = (u >> 3) ^ (u << 5) ^ __popc(u) ^ __clz(v) ^ (unsigned)(v % 7) ^ (u / 13u) ^ __brev(u) ^ __ffs(v);
    c[i] = (long long)v * (long long)u + __mulhi(v, 3) + min(v, 5) + max(v, -5) + abs(v) + __byte_perm(u, v, 0x5410);
  }
}
