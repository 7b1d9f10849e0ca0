// EXPECT: OK
// KERNEL: scale_rows_inplace
// LAUNCH: grid=2,3,1 block=16,4,1
// PARAMS: x=f32[384] s=f32[12] rows=i32:12 cols=i32:32
// In-place per-row scaling with a 2D grid: x[r][c] *= s[r], then += 1 in a second pass.
extern "C" __global__ void scale_rows_inplace(float* x, const float* s, int rows, int cols) {
  int c = blockIdx.x * 16 + threadIdx.x, r = blockIdx.y * 4 + threadIdx.y;
  if (r < rows && c < cols) {
    x[r * cols + c] *= s[r];
    x[r * cols + c] += 1.0f;
  }
}
