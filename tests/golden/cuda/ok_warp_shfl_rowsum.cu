// EXPECT: OK
// KERNEL: warp_rowsum
// LAUNCH: grid=2,1,1 block=128,1,1
// PARAMS: x=f32[800] out=f32[8] cols=i32:100
// One warp per row, shuffle-down reduction.
extern "C" __global__ void warp_rowsum(const float* x, float* out, int cols) {
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x & 31;
  float v = 0.0f;
  for (int c = lane; c < cols; c += 32) v += x[row * cols + c];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
  if (lane == 0) out[row] = v;
}
