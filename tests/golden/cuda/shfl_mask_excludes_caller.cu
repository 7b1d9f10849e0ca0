// EXPECT: BUG mask-excludes-caller
// KERNEL: half_mask_rowsum
// LAUNCH: grid=2,1,1 block=32,1,1
// PARAMS: x=f32[64] out=f32[2]
// All 32 lanes run the reduction, but the mask names lanes 0-15 only: lanes 16-31 execute a
// shfl.sync whose membermask excludes them, which PTX leaves undefined (it happens to work today).
extern "C" __global__ void half_mask_rowsum(const float* x, float* out) {
  float s = x[blockIdx.x * 32 + threadIdx.x];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0x0000ffffu, s, o);  // @bug
  if (threadIdx.x == 0) out[blockIdx.x] = s;
}
