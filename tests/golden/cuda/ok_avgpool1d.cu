// EXPECT: OK
// KERNEL: avgpool1d
// LAUNCH: grid=2,1,1 block=32,1,1
// PARAMS: x=f32[256] y=f32[64] k=i32:4
// 1D average pooling, window k, stride k.
extern "C" __global__ void avgpool1d(const float* x, float* y, int k) {
  int o = blockIdx.x * 32 + threadIdx.x;
  float s = 0.0f;
  for (int j = 0; j < k; ++j) s += x[o * k + j];
  y[o] = s / k;
}
