// EXPECT: BUG warp-sync-race
// KERNEL: warp_reduce_volatile
// LAUNCH: grid=1,1,1 block=128,1,1
// PARAMS: x=f32[128] out=f32[1]
// The classic unrolled last-warp reduction on volatile shared memory, without __syncwarp.
__device__ void warp_reduce(volatile float* s, unsigned t) {
  s[t] += s[t + 32];  // @bug
  s[t] += s[t + 16];  // @bug
  s[t] += s[t + 8];  // @bug
  s[t] += s[t + 4];  // @bug
  s[t] += s[t + 2];  // @bug
  s[t] += s[t + 1];  // @bug
}
extern "C" __global__ void warp_reduce_volatile(const float* x, float* out) {
  __shared__ float s[128];
  unsigned t = threadIdx.x;
  s[t] = x[t];
  __syncthreads();
  if (t < 64) s[t] += s[t + 64];
  __syncthreads();
  if (t < 32) warp_reduce(s, t);
  if (t == 0) out[0] = s[0];
}
