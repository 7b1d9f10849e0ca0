// EXPECT: OK
// KERNEL: block_softmax_stride
// LAUNCH: grid=2,1,1 block=32,1,1
// PARAMS: x=f32[2000] out=f32[2000] cols=i32:1000
// EXEC: summaries
// A row softmax with one block per row: block-stride loops (1000 = 31·32 + 8, so threads 0-7 run one
// iteration more than the rest) and shared-memory trees for the max and the sum.
extern "C" __global__ void block_softmax_stride(const float* x, float* out, int cols) {
  __shared__ float red[32];
  const float* xr = x + blockIdx.x * cols;
  float m = -3.0e38f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, xr[c]);
  red[threadIdx.x] = m;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
    __syncthreads();
  }
  m = red[0];
  __syncthreads();
  float sum = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += expf(xr[c] - m);
  red[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
    __syncthreads();
  }
  float inv = 1.f / red[0];
  for (int c = threadIdx.x; c < cols; c += blockDim.x) out[blockIdx.x * cols + c] = expf(xr[c] - m) * inv;
}
