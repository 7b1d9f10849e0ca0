// EXPECT: OK
// KERNEL: block_sum
// LAUNCH: grid=3,1,1 block=128,1,1
// PARAMS: x=f32[1000] out=f32[3] n=i32:1000
// Block reduction: shuffles within warps, warp sums through shared memory, final warp.
__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
  return v;
}
extern "C" __global__ void block_sum(const float* x, float* out, int n) {
  __shared__ float ws[32];
  float v = 0.0f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) v += x[i];
  v = warp_sum(v);
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) ws[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (int)(blockDim.x / 32) ? ws[lane] : 0.0f;
    v = warp_sum(v);
    if (lane == 0) out[blockIdx.x] = v;
  }
}
