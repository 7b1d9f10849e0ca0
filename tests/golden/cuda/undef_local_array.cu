// EXPECT: BUG undef-store
// KERNEL: partial_fill_sum
// LAUNCH: grid=1,1,1 block=32,1,1
// PARAMS: x=f32[64] y=f32[32] k=i32:5
// A per-thread array of 8 is filled only up to k = 5 and summed in full.
extern "C" __global__ void partial_fill_sum(const float* x, float* y, int k) {
  float w[8];
  for (int j = 0; j < k; ++j) w[j] = x[threadIdx.x + j];
  float s = 0.0f;
  for (int j = 0; j < 8; ++j) s += w[j];
  y[threadIdx.x] = s;  // @bug
}
