// EXPECT: OK
// KERNEL: whole_block_exit
// LAUNCH: grid=4,1,1 block=64,1,1
// PARAMS: x=f32[192] y=f32[3] nblocks=i32:3
// Whole blocks past nblocks return before the barrier: no thread of a block that waits has
// exited, so this is not a divergent barrier.
extern "C" __global__ void whole_block_exit(const float* x, float* y, int nblocks) {
  __shared__ float s[64];
  if (blockIdx.x >= nblocks) return;
  s[threadIdx.x] = x[blockIdx.x * 64 + threadIdx.x];
  __syncthreads();
  if (threadIdx.x == 0) {
    float t = 0.0f;
    for (int i = 0; i < 64; ++i) t += s[i];
    y[blockIdx.x] = t;
  }
}
