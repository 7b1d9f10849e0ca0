// EXPECT: OK
// KERNEL: dyn_reduce
// LAUNCH: grid=2,1,1 block=128,1,1 shared=512
// PARAMS: x=f32[256] out=f32[2]
// Reduction over extern (dynamic) shared memory.
extern "C" __global__ void dyn_reduce(const float* x, float* out) {
  extern __shared__ float s[];
  s[threadIdx.x] = x[blockIdx.x * blockDim.x + threadIdx.x];
  __syncthreads();
  for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
    if (threadIdx.x < k) s[threadIdx.x] = fmaxf(s[threadIdx.x], s[threadIdx.x + k]);
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}
