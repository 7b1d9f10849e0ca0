// EXPECT: BUG barrier-divergence
// KERNEL: cond_sync
// LAUNCH: grid=1,1,1 block=128,1,1
// PARAMS: x=f32[128] y=f32[128]
// Only the first half of the block takes the branch with the barrier; the rest run to the end.
extern "C" __global__ void cond_sync(const float* x, float* y) {
  __shared__ float s[128];
  float v = x[threadIdx.x];
  if (threadIdx.x < 64) {
    s[threadIdx.x] = v;
    __syncthreads();  // @bug
    v += s[63 - threadIdx.x];
  }
  y[threadIdx.x] = v;  // @bug
}  // @bug: where the exited threads leave
