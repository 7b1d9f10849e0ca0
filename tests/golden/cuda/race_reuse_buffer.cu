// EXPECT: BUG shared-race
// KERNEL: max_then_sum
// LAUNCH: grid=1,1,1 block=64,1,1
// PARAMS: x=f32[64] y=f32[64]
// Thread 0 overwrites red[0] with the sum while other warps may still be reading the max from it.
extern "C" __global__ void max_then_sum(const float* x, float* y) {
  __shared__ float red[1];
  __shared__ float buf[64];
  float v = x[threadIdx.x];
  buf[threadIdx.x] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float m = buf[0];
    for (int i = 1; i < 64; ++i) m = fmaxf(m, buf[i]);
    red[0] = m;
  }
  __syncthreads();
  float m = red[0];  // @bug
  if (threadIdx.x == 0) {
    float s = 0.0f;
    for (int i = 0; i < 64; ++i) s += buf[i] - m;
    red[0] = s;  // @bug
  }
  __syncthreads();
  y[threadIdx.x] = (v - m) / red[0];
}
