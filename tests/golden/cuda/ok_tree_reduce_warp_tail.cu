// EXPECT: OK
// KERNEL: reduce_tail
// LAUNCH: grid=2,1,1 block=256,1,1
// PARAMS: x=f32[512] out=f32[2]
// Tree reduction down to 32 values, then a shuffle reduction in the first warp.
extern "C" __global__ void reduce_tail(const float* x, float* out) {
  __shared__ float s[256];
  unsigned tid = threadIdx.x;
  s[tid] = x[blockIdx.x * 256 + tid];
  __syncthreads();
  for (unsigned k = 128; k >= 32; k >>= 1) {
    if (tid < k) s[tid] += s[tid + k];
    __syncthreads();
  }
  if (tid < 32) {
    float v = s[tid];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    if (tid == 0) out[blockIdx.x] = v;
  }
}
