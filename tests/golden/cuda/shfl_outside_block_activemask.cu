// EXPECT: BUG shuffle-outside-block undef-store
// KERNEL: active_down
// LAUNCH: grid=1,1,1 block=40,1,1
// PARAMS: x=f32[40] y=f32[40]
// The mask comes from __activemask(), so it is honest, but lanes 8..15 of the second warp read
// partners 16..23 that lie past the end of the block.
extern "C" __global__ void active_down(const float* x, float* y) {
  float v = x[threadIdx.x];
  unsigned m = __activemask();
  v += __shfl_down_sync(m, v, 8);  // @bug
  y[threadIdx.x] = v;
}
