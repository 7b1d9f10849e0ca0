// EXPECT: BUG uninitialized-shared-read
// KERNEL: warp_sums_all_lanes
// LAUNCH: grid=1,1,1 block=128,1,1
// PARAMS: x=f32[128] y=f32[1]
// Four warps store their sums in ws[0..3]; the final warp reads ws[lane] for all 32 lanes
// without the lane < nwarps guard.
extern "C" __global__ void warp_sums_all_lanes(const float* x, float* y) {
  __shared__ float ws[32];
  float v = x[threadIdx.x];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
  if ((threadIdx.x & 31) == 0) ws[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = ws[threadIdx.x];  // @bug
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    if (threadIdx.x == 0) y[0] = v;
  }
}
