// EXPECT: OK
// KERNEL: block_atomic_sum
// LAUNCH: grid=3,1,1 block=64,1,1
// PARAMS: x=f32[192] out=f32[3]
// Block sum through a float atomicAdd on one shared cell, zeroed before the first barrier.
extern "C" __global__ void block_atomic_sum(const float* x, float* out) {
  __shared__ float acc;
  if (threadIdx.x == 0) acc = 0.0f;
  __syncthreads();
  atomicAdd(&acc, x[blockIdx.x * 64 + threadIdx.x]);
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = acc;
}
