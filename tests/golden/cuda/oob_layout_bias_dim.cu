// EXPECT: BUG global-out-of-bounds
// KERNEL: bias_wrong_dim
// LAUNCH: grid=2,1,1 block=128,1,1
// PARAMS: x=f32[240] bias=f32[4] y=f32[240] C=i32:4 HW=i32:30
// Layout mismatch: the bias has C=4 entries but is indexed by the spatial position (NCHW,
// N=2, C=4, H*W=30).
extern "C" __global__ void bias_wrong_dim(const float* x, const float* bias, float* y, int C, int HW) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 2 * C * HW) y[i] = x[i] + bias[i % HW];  // @bug
}
