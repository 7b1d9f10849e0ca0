// EXPECT: OK
// KERNEL: layernorm
// LAUNCH: grid=3,1,1 block=64,1,1
// PARAMS: x=f32[300] g=f32[100] b=f32[100] y=f32[300] cols=i32:100 eps=f32:0.00001
// LayerNorm over the last dimension: mean and variance by block reduction, rsqrtf.
extern "C" __global__ void layernorm(const float* x, const float* g, const float* b, float* y, int cols, float eps) {
  __shared__ float s1[64], s2[64];
  const float* xr = x + blockIdx.x * cols;
  float a = 0.0f, q = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) { float v = xr[c]; a += v; q += v * v; }
  s1[threadIdx.x] = a;
  s2[threadIdx.x] = q;
  __syncthreads();
  for (int k = 32; k > 0; k >>= 1) {
    if (threadIdx.x < k) { s1[threadIdx.x] += s1[threadIdx.x + k]; s2[threadIdx.x] += s2[threadIdx.x + k]; }
    __syncthreads();
  }
  float mean = s1[0] / cols, var = s2[0] / cols - mean * mean;
  float inv = rsqrtf(var + eps);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) y[blockIdx.x * cols + c] = (xr[c] - mean) * inv * g[c] + b[c];
}
