// EXPECT: OK
// KERNEL: half2_unpack_sum
// LAUNCH: grid=2,1,1 block=32,1,1
// PARAMS: x=f16[128] y=f32[64]
// half2 loads unpacked to floats (__low2float/__high2float), summed in fp32.
#include <cuda_fp16.h>
extern "C" __global__ void half2_unpack_sum(const __half2* x, float* y) {
  int i = blockIdx.x * 32 + threadIdx.x;
  __half2 v = x[i];
  y[i] = __low2float(v) * 3.0f + __high2float(v);
}
