// EXPECT: OK
// KERNEL: logsumexp
// LAUNCH: grid=2,1,1 block=32,1,1
// PARAMS: x=f32[128] y=f32[2] cols=i32:64
// log-sum-exp per row with a max shift, logf and expf.
extern "C" __global__ void logsumexp(const float* x, float* y, int cols) {
  const float* xr = x + blockIdx.x * cols;
  float m = -1e30f;
  for (int c = threadIdx.x; c < cols; c += 32) m = fmaxf(m, xr[c]);
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, o));
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += 32) s += expf(xr[c] - m);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
  if (threadIdx.x == 0) y[blockIdx.x] = m + logf(s);
}
