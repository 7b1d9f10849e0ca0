// EXPECT: BUG uninitialized-shared-read
// KERNEL: blur_no_halo
// LAUNCH: grid=2,1,1 block=32,1,1
// PARAMS: x=f32[64] y=f32[64]
// A 3-point blur whose shared tile leaves the halo cells t[0] and t[33] unloaded.
extern "C" __global__ void blur_no_halo(const float* x, float* y) {
  __shared__ float t[34];
  int i = blockIdx.x * 32 + threadIdx.x;
  t[threadIdx.x + 1] = x[i];
  __syncthreads();
  y[i] = (t[threadIdx.x] + t[threadIdx.x + 1] + t[threadIdx.x + 2]) / 3.0f;  // @bug
}
