// EXPECT: BUG global-out-of-bounds
// KERNEL: copy_le
// LAUNCH: grid=2,1,1 block=128,1,1
// PARAMS: x=f32[200] y=f32[200] n=i32:200
// Boundary off-by-one: i <= n.
extern "C" __global__ void copy_le(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= n) y[i] = 2.0f * x[i];  // @bug
}
