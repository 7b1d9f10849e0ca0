// Reductions: shared-memory tree, warp shuffle, atomics, dynamic shared memory, softmax.
#include <cfloat>

__global__ void tree_reduce(const float* x, float* out, int n) {
  __shared__ float sdata[256];
  unsigned tid = threadIdx.x;
  unsigned i = blockIdx.x * blockDim.x * 2 + threadIdx.x;
  float s = 0.0f;
  if (i < n) s += x[i];
  if (i + blockDim.x < n) s += x[i + blockDim.x];
  sdata[tid] = s;
  __syncthreads();
  for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
    if (tid < k) sdata[tid] += sdata[tid + k];
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = sdata[0];
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffff, v, off);
  return v;
}

__global__ void shuffle_reduce(const float* x, float* out, int n) {
  float s = 0.0f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) s += x[i];
  s = warp_sum(s);
  __shared__ float warp_sums[32];
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) warp_sums[warp] = s;
  __syncthreads();
  if (warp == 0) {
    s = lane < (blockDim.x + 31) / 32 ? warp_sums[lane] : 0.0f;
    s = warp_sum(s);
    if (lane == 0) atomicAdd(out, s);
  }
}

__global__ void atomics(int* counters, float* acc, unsigned* flags, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    atomicAdd(&counters[0], 1);
    atomicMax(&counters[1], i);
    atomicMin(&counters[2], -i);
    atomicExch(&counters[3], i);
    atomicCAS(&counters[4], 0, i);
    atomicOr(&flags[0], 1u << (i & 31));
    atomicAnd(&flags[1], ~(1u << (i & 31)));
    atomicXor(&flags[2], i);
    atomicInc(&flags[3], 100u);
    float old = atomicAdd(&acc[i % 8], x[i]);
    if (old > 1e6f) acc[8] = old;
    unsigned b = __ballot_sync(0xffffffff, x[i] > 0.0f);
    if (__all_sync(0xffffffff, x[i] > -1.0f) && __any_sync(0xffffffff, b != 0)) flags[4] = b;
    __threadfence();
  }
}

__global__ void softmax_rows(const float* x, float* y, int cols) {
  extern __shared__ float buf[];
  int row = blockIdx.x;
  const float* xr = x + (size_t)row * cols;
  float m = -FLT_MAX;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, xr[c]);
  buf[threadIdx.x] = m;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) buf[threadIdx.x] = fmaxf(buf[threadIdx.x], buf[threadIdx.x + s]);
    __syncthreads();
  }
  m = buf[0];
  __syncthreads();
  float sum = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += expf(xr[c] - m);
  buf[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
    __syncthreads();
  }
  sum = buf[0];
  for (int c = threadIdx.x; c < cols; c += blockDim.x) y[(size_t)row * cols + c] = __expf(xr[c] - m) / sum;
}

__global__ void warp_ops(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? x[i] : 0.0f;
  v += __shfl_xor_sync(0xffffffff, v, 1);
  v += __shfl_up_sync(0xffffffff, v, 2);
  v += __shfl_sync(0xffffffff, v, 0);
  __syncwarp();
  if (i < n) y[i] = v;
}
