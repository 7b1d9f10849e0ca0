// EXPECT: BUG undef-address
// KERNEL: exited_index
// LAUNCH: grid=1,1,1 block=32,1,1
// PARAMS: x=f32[32] y=f32[32]
// A gather index shuffled from lanes that exited becomes an address.
extern "C" __global__ void exited_index(const float* x, float* y) {
  if (threadIdx.x >= 16) return;
  int j = __shfl_down_sync(0x0000ffff, (int)threadIdx.x * 2, 8);
  y[threadIdx.x] = x[j];  // @bug
}
