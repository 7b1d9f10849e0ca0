// EXPECT: OK
// KERNEL: half_axpy
// LAUNCH: grid=1,1,1 block=128,1,1
// PARAMS: x=f16[100] y=f16[100] out=f32[100] n=i32:100
// Half-precision inputs converted to float, scaled and summed.
#include <cuda_fp16.h>
extern "C" __global__ void half_axpy(const __half* x, const __half* y, float* out, int n) {
  int i = threadIdx.x;
  if (i < n) out[i] = 2.0f * __half2float(x[i]) + __half2float(y[i]);
}
