// EXPECT: OK
// KERNEL: window_sum
// LAUNCH: grid=1,1,1 block=64,1,1
// PARAMS: x=f32[64] y=f32[64] n=i32:64
// A per-thread array filled with zero padding, then a weighted sum.
extern "C" __global__ void window_sum(const float* x, float* y, int n) {
  float w[5];
  int i = threadIdx.x;
  for (int k = 0; k < 5; ++k) w[k] = (i + k < n) ? x[i + k] : 0.0f;
  float s = 0.0f;
  for (int k = 0; k < 5; ++k) s += w[k] * (k + 1);
  y[i] = s;
}
