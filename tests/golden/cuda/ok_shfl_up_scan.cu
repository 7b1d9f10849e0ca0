// EXPECT: OK
// KERNEL: warp_scan
// LAUNCH: grid=1,1,1 block=64,1,1
// PARAMS: x=f32[64] y=f32[64]
// Warp inclusive scan with __shfl_up_sync.
extern "C" __global__ void warp_scan(const float* x, float* y) {
  float v = x[threadIdx.x];
  int lane = threadIdx.x & 31;
  for (int o = 1; o < 32; o <<= 1) {
    float u = __shfl_up_sync(0xffffffff, v, o);
    if (lane >= o) v += u;
  }
  y[threadIdx.x] = v;
}
