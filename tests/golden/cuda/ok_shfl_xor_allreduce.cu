// EXPECT: OK
// KERNEL: allreduce_norm
// LAUNCH: grid=1,1,1 block=64,1,1
// PARAMS: x=f32[64] y=f32[64]
// Butterfly all-reduce: every lane gets the warp's sum and divides its own value by it.
extern "C" __global__ void allreduce_norm(const float* x, float* y) {
  float v = x[threadIdx.x], s = v * v;
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
  y[threadIdx.x] = v / (s + 1.0f);
}
