// EXPECT: BUG shuffle-inactive-lane undef-store
// KERNEL: bcast_in_branch
// LAUNCH: grid=2,1,1 block=64,1,1
// PARAMS: x=f32[128] y=f32[128]
// Broadcast from lane 0 inside a branch lane 0 does not take.
extern "C" __global__ void bcast_in_branch(const float* x, float* y) {
  int i = blockIdx.x * 64 + threadIdx.x;
  float v = x[i];
  if ((threadIdx.x & 31) != 0) v -= __shfl_sync(0xffffffff, v, 0);  // @bug
  y[i] = v;
}
