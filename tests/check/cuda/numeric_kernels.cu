// Kernels whose elements check/kernel_numeric.cpp evaluates under their writers' threads
// (tests/check/test_kernel_numeric.cpp): a block reduction through shared memory with a per-thread
// strided loop (and the same through warp shuffles), and a guarded per-thread loop.

// One block per row: each thread sums a strided slice of the row, then a tree reduction down to
// level `last` (1: the whole tree).
template <int last>
__device__ void row_sum_tree(const float* x, float* out, int cols) {
  __shared__ float part[256];
  int r = blockIdx.x, t = threadIdx.x;
  float s = 0.f;
  for (int c = t; c < cols; c += blockDim.x) s += x[r * cols + c];
  part[t] = s;
  __syncthreads();
  for (int h = blockDim.x / 2; h >= last; h >>= 1) {
    if (t < h) part[t] += part[t + h];
    __syncthreads();
  }
  if (t == 0) out[r] = part[0];
}

extern "C" __global__ void row_sum(const float* x, float* out, int rows, int cols) { row_sum_tree<1>(x, out, cols); }

// A same-size 1-d convolution with zero padding and a ReLU: the taps outside the input are guarded
// (the template path folds the guard per thread; the tape evaluates only the chosen arm).
extern "C" __global__ void conv1d_relu(const float* x, const float* w, float* out, int n, int k) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float s = 0.f;
  for (int j = 0; j < k; ++j) {
    int p = i + j - k / 2;
    if (p >= 0 && p < n) s += x[p] * w[j];
  }
  out[i] = fmaxf(s, 0.f);
}

// One block per row, as row_sum, but the partials combined by warp shuffles, then one value per warp
// through shared memory and a last shuffle in warp 0.
extern "C" __global__ void row_sum_shfl(const float* x, float* out, int rows, int cols) {
  __shared__ float warp_sums[32];
  int r = blockIdx.x, t = threadIdx.x;
  float s = 0.f;
  for (int c = t; c < cols; c += blockDim.x) s += x[r * cols + c];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
  if ((t & 31) == 0) warp_sums[t >> 5] = s;
  __syncthreads();
  if (t < 32) {
    s = t < (int)(blockDim.x >> 5) ? warp_sums[t] : 0.f;
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    if (t == 0) out[r] = s;
  }
}

// row_sum with the tree's last level dropped: only the even threads' partials reach out[r].
extern "C" __global__ void row_sum_short_tree(const float* x, float* out, int rows, int cols) {
  row_sum_tree<2>(x, out, cols);
}

// One thread per output of a valid 3x3 convolution with a sigmoid, over the flat output index (the
// coordinates by division and remainder): what a torch reduction over its output reads symbolically.
extern "C" __global__ void conv3x3_sigmoid(const float* x, const float* w, const float* b, float* y, int N, int C,
                                           int K, int H, int W) {
  int idx = blockIdx.x * blockDim.x + threadIdx.x;
  int OH = H - 2, OW = W - 2;
  if (idx >= N * K * OH * OW) return;
  int ow = idx % OW, oh = (idx / OW) % OH, co = (idx / (OW * OH)) % K, n = idx / (OW * OH * K);
  float acc = b[co];
  for (int ci = 0; ci < C; ++ci)
    for (int kh = 0; kh < 3; ++kh)
      for (int kw = 0; kw < 3; ++kw) acc += x[((n * C + ci) * H + oh + kh) * W + ow + kw] * w[((co * C + ci) * 3 + kh) * 3 + kw];
  y[idx] = 1.f / (1.f + expf(-acc));
}

// A 3x3 convolution over a 2-D grid of 16x16 blocks (tests/exec/cuda/conv3x3.cuh): the last column
// block reaches past the width, so the column's digits overlap the row's but for the guard c < w.
#define CONV3X3_NAME conv3x3_2d
#define CONV3X3_ROW_IN(rr, h) ((rr) < (h))
#include "../../exec/cuda/conv3x3.cuh"
