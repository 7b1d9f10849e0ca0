// EXPECT: OK
// KERNEL: online_lse
// LAUNCH: grid=2,1,1 block=32,1,1
// PARAMS: x=f32[512] y=f32[64] cols=i32:8
// Row-wise logsumexp with an online max: `if (v > m)` rescales the running sum, a branch on
// loaded data whose two sides reconverge (if-converted, both sides under the data predicate).
extern "C" __global__ void online_lse(const float* x, float* y, int cols) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  const float* xr = x + row * cols;
  float m = xr[0], s = 1.0f;
  for (int c = 1; c < cols; ++c) {
    float v = xr[c];
    if (v > m) {
      s = s * expf(m - v) + 1.0f;
      m = v;
    } else {
      s += expf(v - m);
    }
  }
  y[row] = m + logf(s);
}
