// EXPECT: UNSUPPORTED may observe the store at PTX line
// KERNEL: block_total_then_normalize
// LAUNCH: grid=1,1,1 block=64,1,1
// PARAMS: x=f32[64] total=f32[1] y=f32[64]
// Thread 0 writes a total to global memory; after the barrier every thread reads it back.
extern "C" __global__ void block_total_then_normalize(const float* x, float* total, float* y) {
  if (threadIdx.x == 0) {
    float t = 0.0f;
    for (int k = 0; k < 64; ++k) t += x[k];
    total[0] = t;
  }
  __syncthreads();
  y[threadIdx.x] = x[threadIdx.x] / (1.0f + total[0] * total[0]);
}
