// EXPECT: BUG uninitialized-shared-read
// KERNEL: read_past_fill
// LAUNCH: grid=1,1,1 block=64,1,1
// PARAMS: x=f32[64] y=f32[64]
// Fills s[0..63] and reads s[t + 64], which nobody wrote.
extern "C" __global__ void read_past_fill(const float* x, float* y) {
  __shared__ float s[128];
  s[threadIdx.x] = x[threadIdx.x];
  __syncthreads();
  y[threadIdx.x] = s[threadIdx.x] + s[threadIdx.x + 64];  // @bug
}
