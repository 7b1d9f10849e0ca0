// EXPECT: OK
// KERNEL: tree_reduce
// LAUNCH: grid=4,1,1 block=128,1,1
// PARAMS: x=f32[1000] out=f32[4] n=i32:1000
// Classic shared-memory tree reduction, two loads per thread.
extern "C" __global__ void tree_reduce(const float* x, float* out, int n) {
  __shared__ float s[128];
  unsigned tid = threadIdx.x, i = blockIdx.x * blockDim.x * 2 + tid;
  float v = 0.0f;
  if (i < n) v = x[i];
  if (i + blockDim.x < n) v += x[i + blockDim.x];
  s[tid] = v;
  __syncthreads();
  for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
    if (tid < k) s[tid] += s[tid + k];
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = s[0];
}
