// Huge-grid kernels whose safety checks are decided over thread ranges (test_ranges.cpp).

// conv3x3 and conv3x3_oob (the lower-row halo test off by one: the last row reads one row past x).
#define CONV3X3_NAME conv3x3
#define CONV3X3_ROW_IN(rr, h) ((rr) < (h))
#include "conv3x3.cuh"
#define CONV3X3_NAME conv3x3_oob
#define CONV3X3_ROW_IN(rr, h) ((rr) <= (h))
#include "conv3x3.cuh"

// A tree row sum whose blocks in [bad_lo, bad_hi) skip the barrier after filling shared memory:
// a race in those blocks only (a block-uniform condition, so no barrier divergence).
extern "C" __global__ void rowsum_race_in_some_blocks(const float* x, float* out, int bad_lo, int bad_hi) {
  __shared__ float s[128];
  int t = threadIdx.x;
  s[t] = x[blockIdx.x * 128 + t];
  if (blockIdx.x < bad_lo || blockIdx.x >= bad_hi) __syncthreads();
  for (int k = 64; k > 0; k >>= 1) {
    if (t < k) s[t] += s[t + k];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

// Rows of 7 stored into rows of 8 (a padded layout): the store index 8*(i/7) + i%7 is not affine.
extern "C" __global__ void pad_rows(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[(i / 7) * 8 + i % 7] = x[i];
}

// A group statistic accumulated by atomics, as a fused conv + group-norm kernel does: every thread
// of a group's slice of the launch adds to sums[n * groups + c * groups / channels].
extern "C" __global__ void group_sums(const float* x, float* sums, int total, int channels, int spatial, int groups) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= total) return;
  int c = (i / spatial) % channels;
  int n = i / spatial / channels;
  atomicAdd(&sums[n * groups + c * groups / channels], x[i]);
}

// Half of each block in [bad_lo, bad_hi) returns before the barrier the other half waits at.
extern "C" __global__ void early_exit_in_some_blocks(const float* x, float* out, int bad_lo, int bad_hi) {
  __shared__ float s[128];
  int t = threadIdx.x;
  if (blockIdx.x >= bad_lo && blockIdx.x < bad_hi && t < 64) return;
  s[t] = x[blockIdx.x * 128 + t];
  __syncthreads();
  out[blockIdx.x * 128 + t] = s[127 - t];
}

// Lanes 16..31 of blocks in [bad_lo, bad_hi) return before a full-mask shuffle.
extern "C" __global__ void shuffle_exit_in_some_blocks(const float* x, float* out, int bad_lo, int bad_hi) {
  int t = threadIdx.x;
  if (blockIdx.x >= bad_lo && blockIdx.x < bad_hi && t >= 16) return;
  float v = x[blockIdx.x * 32 + t];
  v += __shfl_down_sync(0xffffffffu, v, 1);
  out[blockIdx.x * 32 + t] = v;
}

// Upper-triangular row sums: the loop's trip count depends on the thread (k from row to col), so
// every iteration's exit splits the bundle and adds `c + row < col` to the continuing one.
extern "C" __global__ void triangular_rowsum(const float* a, float* out, int n) {
  int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < n && col < n && row <= col) {
    float s = 0.0f;
    for (int k = row; k <= col; ++k) s += a[row * n + k];
    out[row * n + col] = s;
  }
}

// A pooled linear layer as a fused kernel writes it: block b takes output pair b % pairs of row
// b / pairs, a block-stride dot product per thread, a shared-memory tree, and one atomicAdd per
// block into the row's sum.
extern "C" __global__ void pooled_dot_atomic(const float* x, const float* w, float* out, int k, int pairs) {
  __shared__ float s[128];
  int t = threadIdx.x, row = blockIdx.x / pairs, o = 2 * (blockIdx.x % pairs);
  float a = 0.0f, b = 0.0f;
  for (int i = t; i < k; i += blockDim.x) {
    a += x[row * k + i] * w[o * k + i];
    b += x[row * k + i] * w[(o + 1) * k + i];
  }
  s[t] = a + b;
  __syncthreads();
  for (int m = 64; m > 0; m >>= 1) {
    if (t < m) s[t] += s[t + m];
    __syncthreads();
  }
  if (t == 0) atomicAdd(&out[row], s[0]);
}
