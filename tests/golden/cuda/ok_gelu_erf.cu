// EXPECT: OK
// KERNEL: gelu_erf
// LAUNCH: grid=1,1,1 block=128,1,1
// PARAMS: x=f32[128] y=f32[128]
// Exact GELU with erff (default lowering, region rollup).
extern "C" __global__ void gelu_erf(const float* x, float* y) {
  float v = x[threadIdx.x];
  y[threadIdx.x] = 0.5f * v * (1.0f + erff(v * 0.70710678f));
}
