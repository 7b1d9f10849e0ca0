// EXPECT: OK
// KERNEL: matvec
// LAUNCH: grid=3,1,1 block=64,1,1
// PARAMS: A=f32[480] x=f32[80] y=f32[6] rows=i32:6 cols=i32:80
// Matrix-vector product, one warp per row.
extern "C" __global__ void matvec(const float* A, const float* x, float* y, int rows, int cols) {
  int row = blockIdx.x * 2 + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= rows) return;
  float s = 0.0f;
  for (int c = lane; c < cols; c += 32) s += A[row * cols + c] * x[c];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffff, s, o);
  if (lane == 0) y[row] = s;
}
