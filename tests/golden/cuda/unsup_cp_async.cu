// EXPECT: UNSUPPORTED asynchronous copy 'cp.async
// KERNEL: async_copy
// LAUNCH: grid=1,1,1 block=64,1,1
// PARAMS: x=f32[64] y=f32[64]
// cp.async (Ampere asynchronous global->shared copy) is not modeled: a clear UNSUPPORTED.
#include <cuda_pipeline.h>
extern "C" __global__ void async_copy(const float* x, float* y) {
  __shared__ float s[64];
  __pipeline_memcpy_async(&s[threadIdx.x], &x[threadIdx.x], sizeof(float));
  __pipeline_commit();
  __pipeline_wait_prior(0);
  __syncthreads();
  y[threadIdx.x] = s[63 - threadIdx.x];
}
