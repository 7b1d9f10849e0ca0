// EXPECT: OK
// KERNEL: if_else_store
// LAUNCH: grid=2,1,1 block=64,1,1
// PARAMS: x=f32[128] y=f32[128] z=f32[128] n=i32:120
// An if/else on loaded data with a store in one side only: the store becomes a guarded write
// (ite(x > 0, new, old element)), the other side's value flows on through a register merge.
extern "C" __global__ void if_else_store(const float* x, float* y, float* z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  float w;
  if (v > 0.0f) {
    y[i] = v * 3.0f + 1.0f;
    w = v * v;
  } else {
    w = -2.0f * v + y[i];
  }
  z[i] = w;
}
