// EXPECT: OK
// KERNEL: sum_sq
// LAUNCH: grid=4,1,1 block=64,1,1
// PARAMS: x=f32[256] y=f32[256] out=f32[1]
// Squared-error loss: block reduction in shared memory, one atomicAdd per block.
extern "C" __global__ void sum_sq(const float* x, const float* y, float* out) {
  __shared__ float s[64];
  int i = blockIdx.x * 64 + threadIdx.x;
  float d = x[i] - y[i];
  s[threadIdx.x] = d * d;
  __syncthreads();
  for (int k = 32; k > 0; k >>= 1) {
    if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, s[0] / 256.0f);
}
