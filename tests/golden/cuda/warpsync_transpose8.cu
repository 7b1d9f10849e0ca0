// EXPECT: BUG warp-sync-race
// KERNEL: warp_transpose
// LAUNCH: grid=2,1,1 block=32,1,1
// PARAMS: x=f32[64] y=f32[64]
// A warp transposes an 8x4 tile through shared memory without __syncwarp.
extern "C" __global__ void warp_transpose(const float* x, float* y) {
  __shared__ float t[32];
  int l = threadIdx.x;
  t[l] = x[blockIdx.x * 32 + l];  // @bug
  y[blockIdx.x * 32 + l] = t[(l % 8) * 4 + l / 8];  // @bug
}
