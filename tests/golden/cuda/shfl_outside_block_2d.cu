// EXPECT: BUG shuffle-outside-block undef-store
// KERNEL: row_max_2d
// LAUNCH: grid=1,1,1 block=10,4,1
// PARAMS: x=f32[40] y=f32[40]
// A 10x4 block (40 threads) with a full-mask butterfly over the flattened warp.
extern "C" __global__ void row_max_2d(const float* x, float* y) {
  int i = threadIdx.y * 10 + threadIdx.x;
  float v = x[i];
  for (int o = 1; o < 32; o <<= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, o));  // @bug
  y[i] = v;
}
