// EXPECT: BUG warp-sync-race
// KERNEL: half_warp_pass
// LAUNCH: grid=1,1,1 block=32,1,1
// PARAMS: x=f32[32] y=f32[32]
// The lower half-warp writes, the upper half-warp reads the same slots, no __syncwarp.
extern "C" __global__ void half_warp_pass(const float* x, float* y) {
  __shared__ float s[16];
  int l = threadIdx.x;
  if (l < 16) s[l] = x[l] + 1.0f;  // @bug
  else y[l] = s[l - 16];  // @bug
  if (l < 16) y[l] = x[l];
}
