// EXPECT: BUG uninitialized-shared-read
// KERNEL: unzeroed_sum
// LAUNCH: grid=1,1,1 block=64,1,1
// PARAMS: x=f32[64] out=f32[1]
// atomicAdd onto a shared accumulator that was never zeroed.
extern "C" __global__ void unzeroed_sum(const float* x, float* out) {
  __shared__ float acc;
  atomicAdd(&acc, x[threadIdx.x]);  // @bug
  __syncthreads();
  if (threadIdx.x == 0) out[0] = acc;
}
