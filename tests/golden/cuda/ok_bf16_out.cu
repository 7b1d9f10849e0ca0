// EXPECT: OK
// KERNEL: to_bf16
// LAUNCH: grid=2,1,1 block=64,1,1
// PARAMS: x=f32[100] y=bf16[100] n=i32:100
// Float in, bfloat16 out.
#include <cuda_bf16.h>
extern "C" __global__ void to_bf16(const float* x, __nv_bfloat16* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __float2bfloat16(x[i] * 3.0f);
}
