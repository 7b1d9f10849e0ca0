// EXPECT: OK
// KERNEL: silu_mul
// LAUNCH: grid=1,1,1 block=256,1,1
// PARAMS: a=f32[256] b=f32[256] y=f32[256]
// SiLU-gated product (SwiGLU-style epilogue) with expf.
extern "C" __global__ void silu_mul(const float* a, const float* b, float* y) {
  int i = threadIdx.x;
  float v = a[i];
  y[i] = v / (1.0f + expf(-v)) * b[i];
}
