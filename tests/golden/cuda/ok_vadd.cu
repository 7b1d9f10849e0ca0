// EXPECT: OK
// KERNEL: vadd
// LAUNCH: grid=4,1,1 block=256,1,1
// PARAMS: a=f32[1000] b=f32[1000] c=f32[1000] n=i32:1000
// Elementwise add with a bounds check; the last block is partial.
extern "C" __global__ void vadd(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
