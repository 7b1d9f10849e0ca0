// EXPECT: OK
// KERNEL: relu_inplace
// LAUNCH: grid=3,1,1 block=128,1,1
// PARAMS: x=f32[300] n=i32:300
// In-place ReLU: every thread reads and writes only its own element.
extern "C" __global__ void relu_inplace(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = fmaxf(x[i], 0.0f);
}
