// EXPECT: OK
// KERNEL: shared_bins
// LAUNCH: grid=2,1,1 block=64,1,1
// PARAMS: x=f32[128] out=f32[16]
// Eight shared bins per block filled by atomicAdd (bin = tid % 8), then written out.
extern "C" __global__ void shared_bins(const float* x, float* out) {
  __shared__ float bins[8];
  if (threadIdx.x < 8) bins[threadIdx.x] = 0.0f;
  __syncthreads();
  atomicAdd(&bins[threadIdx.x % 8], x[blockIdx.x * 64 + threadIdx.x] * 0.5f);
  __syncthreads();
  if (threadIdx.x < 8) out[blockIdx.x * 8 + threadIdx.x] = bins[threadIdx.x];
}
