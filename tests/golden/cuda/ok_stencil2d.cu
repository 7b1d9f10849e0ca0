// EXPECT: OK
// KERNEL: laplace
// LAUNCH: grid=2,2,1 block=8,8,1
// PARAMS: u=f32[256] v=f32[256] n=i32:16
// 5-point stencil on the interior of an n x n grid, boundary copied.
extern "C" __global__ void laplace(const float* u, float* v, int n) {
  int x = blockIdx.x * 8 + threadIdx.x, y = blockIdx.y * 8 + threadIdx.y;
  if (x >= n || y >= n) return;
  int i = y * n + x;
  if (x == 0 || y == 0 || x == n - 1 || y == n - 1) { v[i] = u[i]; return; }
  v[i] = 0.25f * (u[i - 1] + u[i + 1] + u[i - n] + u[i + n]) - u[i];
}
