// EXPECT: OK
// KERNEL: residual
// LAUNCH: grid=2,1,1 block=128,1,1
// PARAMS: x=f32[250] r=f32[250] y=f32[250] scale=f32:0.5 n=i32:250
// NVCC: -O3
// Fused residual add, scale and clamp; compiled without -lineinfo.
extern "C" __global__ void residual(const float* x, const float* r, float* y, float scale, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = fminf(fmaxf((x[i] + r[i]) * scale, -1.0f), 1.0f);
}
