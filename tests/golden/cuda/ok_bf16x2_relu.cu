// EXPECT: OK
// KERNEL: bf162_pack
// LAUNCH: grid=1,1,1 block=64,1,1
// PARAMS: x=f32[128] y=bf16[128]
// Two floats packed into a bf16x2 (__floats2bfloat162_rn) and stored with one 32-bit store.
#include <cuda_bf16.h>
extern "C" __global__ void bf162_pack(const float* x, __nv_bfloat162* y) {
  int i = threadIdx.x;
  float a = fmaxf(x[2 * i], 0.0f), b = x[2 * i + 1] * 2.0f;
  y[i] = __floats2bfloat162_rn(a, b);
}
