// EXPECT: OK
// KERNEL: gelu_tanh
// LAUNCH: grid=2,1,1 block=128,1,1
// PARAMS: x=f32[200] y=f32[200] n=i32:200
// NVCC: -lineinfo --use_fast_math
// GELU (tanh form) under --use_fast_math (tanh.approx).
extern "C" __global__ void gelu_tanh(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
  }
}
