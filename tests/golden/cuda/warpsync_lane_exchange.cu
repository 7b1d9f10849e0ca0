// EXPECT: BUG warp-sync-race
// KERNEL: lane_rotate
// LAUNCH: grid=1,1,1 block=64,1,1
// PARAMS: x=f32[64] y=f32[64]
// Each warp exchanges values through its own shared slice, relying on lockstep execution.
extern "C" __global__ void lane_rotate(const float* x, float* y) {
  __shared__ float s[64];
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  s[threadIdx.x] = x[threadIdx.x] * 2.0f;  // @bug
  y[threadIdx.x] = s[warp * 32 + (lane + 1) % 32];  // @bug
}
