// EXPECT: BUG shuffle-inactive-lane undef-store
// KERNEL: half_warp_full_mask
// LAUNCH: grid=1,1,1 block=64,1,1
// PARAMS: x=f32[64] y=f32[64]
// Lanes 0..15 shuffle with the full mask 0xffffffff; lanes 16..31 never get there.
extern "C" __global__ void half_warp_full_mask(const float* x, float* y) {
  float v = x[threadIdx.x];
  if ((threadIdx.x & 31) < 16) v += __shfl_down_sync(0xffffffff, v, 8);  // @bug
  y[threadIdx.x] = v;
}
