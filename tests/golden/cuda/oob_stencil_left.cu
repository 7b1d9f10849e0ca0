// EXPECT: BUG global-out-of-bounds
// KERNEL: diff_left
// LAUNCH: grid=1,1,1 block=64,1,1
// PARAMS: x=f32[64] y=f32[64]
// Boundary: thread 0 reads x[-1].
extern "C" __global__ void diff_left(const float* x, float* y) {
  int i = threadIdx.x;
  y[i] = x[i] - x[i - 1];  // @bug
}
