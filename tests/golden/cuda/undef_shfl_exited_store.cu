// EXPECT: BUG undef-store
// KERNEL: exited_partner
// LAUNCH: grid=1,1,1 block=32,1,1
// PARAMS: x=f32[32] y=f32[32]
// Lanes 16..31 exit; lanes 8..15 read exited partners (the mask 0xffff is honest about who
// participates, but the partner lanes' values do not exist): an undefined value is stored.
extern "C" __global__ void exited_partner(const float* x, float* y) {
  if (threadIdx.x >= 16) return;
  float v = x[threadIdx.x];
  v += __shfl_down_sync(0x0000ffff, v, 8);
  y[threadIdx.x] = v;  // @bug
}
