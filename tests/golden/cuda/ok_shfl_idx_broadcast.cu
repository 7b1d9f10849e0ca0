// EXPECT: OK
// KERNEL: bcast_lane0
// LAUNCH: grid=2,1,1 block=64,1,1
// PARAMS: x=f32[128] y=f32[128]
// Broadcast lane 0's value to the warp with __shfl_sync and subtract it.
extern "C" __global__ void bcast_lane0(const float* x, float* y) {
  int i = blockIdx.x * 64 + threadIdx.x;
  float v = x[i];
  float first = __shfl_sync(0xffffffff, v, 0);
  y[i] = v - first;
}
