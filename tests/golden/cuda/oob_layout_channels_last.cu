// EXPECT: BUG global-out-of-bounds
// KERNEL: nhwc_as_nchw
// LAUNCH: grid=1,1,1 block=8,8,1
// PARAMS: x=f32[192] y=f32[64] C=i32:3 H=i32:8 W=i32:8
// Layout mismatch: the input is 1 x C x H x W (192 floats) but indexed with a padded channel
// stride of 4 (channels-last with C rounded up), reading past the end.
extern "C" __global__ void nhwc_as_nchw(const float* x, float* y, int C, int H, int W) {
  int h = threadIdx.y, w = threadIdx.x;
  float s = 0.0f;
  for (int c = 0; c < C; ++c) s += x[(h * W + w) * 4 + c];  // @bug
  y[h * W + w] = s;
}
