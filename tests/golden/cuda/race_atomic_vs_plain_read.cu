// EXPECT: BUG shared-race
// KERNEL: peek_while_adding
// LAUNCH: grid=1,1,1 block=64,1,1
// PARAMS: x=f32[64] out=f32[64]
// Warps 1-3 atomically add to a shared total while warp 0 reads it with a plain load: the read
// races with the other warps' atomics (no barrier between).
extern "C" __global__ void peek_while_adding(const float* x, float* out) {
  __shared__ float total;
  if (threadIdx.x == 0) total = 0.0f;
  __syncthreads();
  if (threadIdx.x >= 32) atomicAdd(&total, x[threadIdx.x]);  // @bug
  else out[threadIdx.x] = total;  // @bug
}
