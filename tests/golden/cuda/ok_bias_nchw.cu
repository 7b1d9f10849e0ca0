// EXPECT: OK
// KERNEL: bias_nchw
// LAUNCH: grid=4,1,1 block=128,1,1
// PARAMS: x=f32[480] bias=f32[3] y=f32[480] C=i32:3 HW=i32:40 total=i32:480
// Per-channel bias on an N x C x H x W tensor (N=4), then ReLU6.
extern "C" __global__ void bias_nchw(const float* x, const float* bias, float* y, int C, int HW, int total) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < total) {
    int c = (i / HW) % C;
    y[i] = fminf(fmaxf(x[i] + bias[c], 0.0f), 6.0f);
  }
}
