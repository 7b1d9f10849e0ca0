// EXPECT: OK
// KERNEL: saxpy
// LAUNCH: grid=3,1,1 block=128,1,1
// PARAMS: x=f32[2000] y=f32[2000] alpha=f32:1.5 n=i32:2000
// Grid-stride loop: y = alpha*x + y.
extern "C" __global__ void saxpy(const float* x, float* y, float alpha, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) y[i] = alpha * x[i] + y[i];
}
