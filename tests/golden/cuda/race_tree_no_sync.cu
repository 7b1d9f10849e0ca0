// EXPECT: BUG shared-race
// KERNEL: tree_no_sync
// LAUNCH: grid=2,1,1 block=128,1,1
// PARAMS: x=f32[256] out=f32[2]
// Tree reduction without the barrier inside the loop: step k reads what step 2k still writes.
extern "C" __global__ void tree_no_sync(const float* x, float* out) {
  __shared__ float s[128];
  unsigned t = threadIdx.x;
  s[t] = x[blockIdx.x * 128 + t];
  __syncthreads();
  for (unsigned k = 64; k > 0; k >>= 1) {
    if (t < k) s[t] += s[t + k];  // @bug
  }
  if (t == 0) out[blockIdx.x] = s[0];  // @bug
}
