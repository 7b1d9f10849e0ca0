// EXPECT: OK
// KERNEL: half_warp_sum
// LAUNCH: grid=1,1,1 block=64,1,1
// PARAMS: x=f32[64] y=f32[64]
// Only lanes 0..15 take part, and the membermask says so (0x0000ffff).
extern "C" __global__ void half_warp_sum(const float* x, float* y) {
  float v = x[threadIdx.x];
  if ((threadIdx.x & 31) < 16) {
    for (int o = 8; o > 0; o >>= 1) v += __shfl_xor_sync(0x0000ffff, v, o);
  }
  y[threadIdx.x] = v;
}
