// EXPECT: BUG global-out-of-bounds
// KERNEL: relu_no_guard
// LAUNCH: grid=4,1,1 block=128,1,1
// PARAMS: x=f32[500] y=f32[500] n=i32:500
// Boundary: no i < n check, the last block runs past the end.
extern "C" __global__ void relu_no_guard(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  y[i] = fmaxf(x[i], 0.0f);  // @bug
}
