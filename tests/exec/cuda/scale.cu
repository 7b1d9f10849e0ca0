// Kernels for test_scale.cpp: launch-sized patterns of KernelBench candidates (strided in-place
// loops over 10^5-element rows, ...) whose checks must not grow with reads x stores or threads.
// extern "C": unmangled names for the tests.

// A per-(batch, channel) softmax over a row of n elements, in place, the row strided over the
// block (i = tid; i < n; i += blockDim.x): three passes read the row, the last one stores it. Each
// iteration records one read / one store per bundle: thousands of both. Reads and stores of the
// same thread only (every element has one owner lane), so no other thread's store is observed.
extern "C" __global__ void row_softmax_inplace(float* x, int channels, int n) {
  extern __shared__ float part[];
  float* row = x + ((long)blockIdx.x * channels + blockIdx.y) * n;
  float m = -1e30f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, row[i]);
  part[threadIdx.x] = m;
  __syncthreads();
  for (unsigned h = blockDim.x / 2; h > 0; h >>= 1) {  // tree maximum: the bundle splits on tid < h
    if (threadIdx.x < h) part[threadIdx.x] = fmaxf(part[threadIdx.x], part[threadIdx.x + h]);
    __syncthreads();
  }
  m = part[0];
  __syncthreads();
  float s = 0.f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += __expf(row[i] - m);
  part[threadIdx.x] = s;
  __syncthreads();
  for (unsigned h = blockDim.x / 2; h > 0; h >>= 1) {
    if (threadIdx.x < h) part[threadIdx.x] += part[threadIdx.x + h];
    __syncthreads();
  }
  s = part[0];
  for (int i = threadIdx.x; i < n; i += blockDim.x) row[i] = __expf(row[i] - m) / s;
}

// The same strided loop, but the store lands one element further (row[i + 1]): lane t stores the
// element lane t + 1 reads. Must still be refused.
extern "C" __global__ void row_shift_inplace(float* x, int channels, int n) {
  float* row = x + ((long)blockIdx.x * channels + blockIdx.y) * n;
  for (int i = threadIdx.x; i < n - 1; i += blockDim.x) row[i + 1] = row[i] * 2.f;
}

// Only the blocks of row `row` (a launch scalar: the bundle's box pins blockIdx.y to one value
// that is not 0) run; thread i reads element i and stores element i + 2 * blockIdx.y, which
// thread i + 2 * row reads. The store's and the read's coefficients of blockIdx.y differ, and
// blockIdx.y is fixed in the bundle: its term must enter the constant difference, not vanish.
extern "C" __global__ void pinned_row_shift(float* x, int row) {
  if (blockIdx.y != row) return;
  unsigned y;  // read again behind the compiler's back: it would fold blockIdx.y into `row`
  asm volatile("mov.u32 %0, %%ctaid.y;" : "=r"(y));
  int i = threadIdx.x + 256 * blockIdx.x;
  float v = x[i];
  x[i + 2 * y] = v * 2.f;
}

// A data-dependent branch in a loop (if-converted): q and j exist only inside it, recomputed every
// iteration. Merged with their previous values they would grow into ite chains over all
// iterations, and every load index y[j] would carry the chain.
extern "C" __global__ void guarded_temp_loop(const float* x, const float* y, float* out, int s) {
  float acc = 0.f;
  for (int k = 0; k < 32; ++k) {
    float v = x[threadIdx.x * 32 + k];
    if (v > 0.f) {
      int q = (threadIdx.x * 7 + k * 3) / s;
      int j = q - (q / 13) * 13;
      acc += y[j] * v;
    }
  }
  out[threadIdx.x] = acc;
}
