// EXPECT: BUG barrier-divergence
// KERNEL: two_barriers
// LAUNCH: grid=1,1,1 block=64,1,1
// PARAMS: x=f32[64] y=f32[64]
// The first warp and the second warp wait at two different __syncthreads.
extern "C" __global__ void two_barriers(const float* x, float* y) {
  __shared__ float s[64];
  s[threadIdx.x] = x[threadIdx.x];
  if (threadIdx.x < 32) {
    __syncthreads();  // @bug
    y[threadIdx.x] = s[threadIdx.x + 32];
  } else {
    __syncthreads();  // @bug
    y[threadIdx.x] = s[threadIdx.x - 32];
  }
}
