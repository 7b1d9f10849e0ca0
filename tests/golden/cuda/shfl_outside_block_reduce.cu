// EXPECT: BUG shuffle-outside-block undef-store
// KERNEL: reduce80
// LAUNCH: grid=2,1,1 block=80,1,1
// PARAMS: x=f32[160] y=f32[6]
// Full-warp reduction in a block of 80 threads: lanes 80..95 of the third warp do not exist.
extern "C" __global__ void reduce80(const float* x, float* y) {
  float v = x[blockIdx.x * 80 + threadIdx.x];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);  // @bug
  if ((threadIdx.x & 31) == 0) y[blockIdx.x * 3 + threadIdx.x / 32] = v;
}
