// EXPECT: BUG shuffle-inactive-lane undef-store
// KERNEL: exit_then_reduce
// LAUNCH: grid=1,1,1 block=64,1,1
// PARAMS: x=f32[50] y=f32[2] n=i32:50
// Threads past n return, then the rest do a full-mask warp reduction.
extern "C" __global__ void exit_then_reduce(const float* x, float* y, int n) {
  int i = threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);  // @bug
  if ((i & 31) == 0) y[i / 32] = v;
}
