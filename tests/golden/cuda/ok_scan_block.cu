// EXPECT: OK
// KERNEL: inclusive_scan
// LAUNCH: grid=2,1,1 block=64,1,1
// PARAMS: x=f32[128] y=f32[128]
// Hillis-Steele inclusive scan with double buffering (a barrier per step).
extern "C" __global__ void inclusive_scan(const float* x, float* y) {
  __shared__ float buf[2][64];
  int t = threadIdx.x, in = 0;
  buf[0][t] = x[blockIdx.x * 64 + t];
  __syncthreads();
  for (int o = 1; o < 64; o <<= 1) {
    float v = buf[in][t];
    if (t >= o) v += buf[in][t - o];
    buf[1 - in][t] = v;
    in = 1 - in;
    __syncthreads();
  }
  y[blockIdx.x * 64 + t] = buf[in][t];
}
