// EXPECT: OK
// KERNEL: mean_rows
// LAUNCH: grid=4,1,1 block=32,1,1
// PARAMS: x=f32[256] y=f32[4] cols=i32:64
// Mean over the last dimension with a warp shuffle, a float division by cols.
extern "C" __global__ void mean_rows(const float* x, float* y, int cols) {
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += 32) s += x[blockIdx.x * cols + c];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffff, s, o);
  if (threadIdx.x == 0) y[blockIdx.x] = s / (float)cols;
}
