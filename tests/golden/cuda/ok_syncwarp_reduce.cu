// EXPECT: OK
// KERNEL: warp_reduce_sync
// LAUNCH: grid=1,1,1 block=32,1,1
// PARAMS: x=f32[64] out=f32[1]
// Warp-synchronous shared-memory reduction done right: a __syncwarp between steps.
extern "C" __global__ void warp_reduce_sync(const float* x, float* out) {
  __shared__ float s[32];
  unsigned t = threadIdx.x;
  s[t] = x[t] + x[t + 32];
  __syncwarp();
  for (unsigned k = 16; k > 0; k >>= 1) {
    float v = s[t];
    if (t < k) v += s[t + k];
    __syncwarp();
    s[t] = v;
    __syncwarp();
  }
  if (t == 0) out[0] = s[0];
}
