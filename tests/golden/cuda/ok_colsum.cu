// EXPECT: OK
// KERNEL: colsum
// LAUNCH: grid=2,1,1 block=32,1,1
// PARAMS: x=f32[600] y=f32[60] rows=i32:10 cols=i32:60
// Column sums: each thread walks down one column.
extern "C" __global__ void colsum(const float* x, float* y, int rows, int cols) {
  int c = blockIdx.x * 32 + threadIdx.x;
  if (c >= cols) return;
  float s = 0.0f;
  for (int r = 0; r < rows; ++r) s += x[r * cols + c];
  y[c] = s;
}
