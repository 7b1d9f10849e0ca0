// EXPECT: BUG undef-store
// KERNEL: undef_local_dynamic_index
// LAUNCH: grid=2,1,1 block=64,1,1
// PARAMS: x=f32[1024] y=f32[128]
// ok_local_dynamic_index with the fill loop one short: cell 7 of the private array is never
// written, and the threads with t % 8 == 7 read it through the symbolic index.
extern "C" __global__ void undef_local_dynamic_index(const float* x, float* y) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  float vals[8];
  for (int i = 0; i < 7; ++i) vals[i] = x[t * 8 + i];
  y[t] = vals[t % 8] + 1.0f;  // @bug
}
