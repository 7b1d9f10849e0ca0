// EXPECT: BUG shared-race
// KERNEL: scan_step_after_syncwarp
// LAUNCH: grid=2,1,1 block=128,1,1
// PARAMS: x=f32[256] y=f32[256]
// One Hillis-Steele step of a row scan with __syncwarp where __syncthreads belongs: lane 0 of
// warp 1 reads buf[31], which warp 0 writes; __syncwarp orders the lanes of one warp only.
// (Found by dirigo's mutation analysis: syncthreads2syncwarp on a cumsum substrate was VERIFIED.)
extern "C" __global__ void scan_step_after_syncwarp(const float* x, float* y) {
  __shared__ float buf[128];
  int t = threadIdx.x;
  buf[t] = x[blockIdx.x * 128 + t];  // @bug
  __syncwarp();
  float v = buf[t];
  if (t >= 1) v += buf[t - 1];  // @bug
  y[blockIdx.x * 128 + t] = v;
}
