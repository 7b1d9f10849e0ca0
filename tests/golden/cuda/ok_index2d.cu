// EXPECT: OK
// KERNEL: add_bias_2d
// LAUNCH: grid=3,2,1 block=16,8,1
// PARAMS: x=f32[450] bias=f32[45] y=f32[450] rows=i32:10 cols=i32:45
// 2D grid and block: y[r][c] = x[r][c] + bias[c].
extern "C" __global__ void add_bias_2d(const float* x, const float* bias, float* y, int rows, int cols) {
  int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < rows && c < cols) y[r * cols + c] = x[r * cols + c] + bias[c];
}
