// EXPECT: OK
// KERNEL: rmsnorm
// LAUNCH: grid=2,1,1 block=32,1,1
// PARAMS: x=f32[128] w=f32[64] y=f32[128] cols=i32:64
// RMSNorm, one warp per row, sqrtf and a division.
extern "C" __global__ void rmsnorm(const float* x, const float* w, float* y, int cols) {
  const float* xr = x + blockIdx.x * cols;
  float q = 0.0f;
  for (int c = threadIdx.x; c < cols; c += 32) q += xr[c] * xr[c];
  for (int o = 16; o > 0; o >>= 1) q += __shfl_xor_sync(0xffffffff, q, o);
  float r = sqrtf(q / cols + 1e-6f);
  for (int c = threadIdx.x; c < cols; c += 32) y[blockIdx.x * cols + c] = xr[c] / r * w[c];
}
