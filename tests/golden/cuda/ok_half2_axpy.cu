// EXPECT: OK
// KERNEL: half2_axpy
// LAUNCH: grid=1,1,1 block=64,1,1
// PARAMS: x=f16[128] y=f16[128] out=f16[128]
// Packed half2 arithmetic: __hfma2 / __hmul2 / __hadd2 / __hsub2 on half2 loads and stores.
#include <cuda_fp16.h>
extern "C" __global__ void half2_axpy(const __half2* x, const __half2* y, __half2* out) {
  int i = threadIdx.x;
  __half2 a = x[i], b = y[i];
  __half2 two = __floats2half2_rn(2.0f, 0.5f);
  __half2 r = __hfma2(a, two, b);
  r = __hadd2(r, __hmul2(a, b));
  out[i] = __hsub2(r, a);
}
