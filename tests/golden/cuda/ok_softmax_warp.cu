// EXPECT: OK
// KERNEL: softmax_warp
// LAUNCH: grid=1,1,1 block=128,1,1
// PARAMS: x=f32[256] y=f32[256] cols=i32:64
// NVCC: -lineinfo --use_fast_math
// Warp-per-row softmax with butterfly max/sum, compiled with --use_fast_math.
extern "C" __global__ void softmax_warp(const float* x, float* y, int cols) {
  int row = threadIdx.x / 32, lane = threadIdx.x & 31;
  const float* xr = x + row * cols;
  float m = -1e30f;
  for (int c = lane; c < cols; c += 32) m = fmaxf(m, xr[c]);
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, o));
  float s = 0.0f;
  for (int c = lane; c < cols; c += 32) s += expf(xr[c] - m);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
  for (int c = lane; c < cols; c += 32) y[row * cols + c] = expf(xr[c] - m) / s;
}
