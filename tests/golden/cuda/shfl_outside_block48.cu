// EXPECT: BUG shuffle-outside-block
// KERNEL: xor_pairs
// LAUNCH: grid=1,1,1 block=48,1,1
// PARAMS: x=f32[48] y=f32[48]
// A block of 48 threads: the second warp is partial, yet the mask names all 32 lanes.
extern "C" __global__ void xor_pairs(const float* x, float* y) {
  float v = x[threadIdx.x];
  v += __shfl_xor_sync(0xffffffff, v, 1);  // @bug
  y[threadIdx.x] = v;
}
