// EXPECT: OK
// KERNEL: softmax_block
// LAUNCH: grid=2,1,1 block=64,1,1
// PARAMS: x=f32[200] y=f32[200] cols=i32:100
// Row softmax, one row per block: max and sum tree reductions in shared memory.
#include <cfloat>
extern "C" __global__ void softmax_block(const float* x, float* y, int cols) {
  __shared__ float buf[64];
  const float* xr = x + blockIdx.x * cols;
  float m = -FLT_MAX;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, xr[c]);
  buf[threadIdx.x] = m;
  __syncthreads();
  for (int s = 32; s > 0; s >>= 1) {
    if (threadIdx.x < s) buf[threadIdx.x] = fmaxf(buf[threadIdx.x], buf[threadIdx.x + s]);
    __syncthreads();
  }
  m = buf[0];
  __syncthreads();
  float sum = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += __expf(xr[c] - m);
  buf[threadIdx.x] = sum;
  __syncthreads();
  for (int s = 32; s > 0; s >>= 1) {
    if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
    __syncthreads();
  }
  sum = buf[0];
  for (int c = threadIdx.x; c < cols; c += blockDim.x) y[blockIdx.x * cols + c] = __expf(xr[c] - m) / sum;
}
