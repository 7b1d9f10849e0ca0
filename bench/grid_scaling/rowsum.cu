// Sum over dim 1 of a [rows, 256] matrix: one block of 256 threads per row, a shared-memory tree.
extern "C" __global__ void rowsum(const float* __restrict__ x, float* __restrict__ out, int cols) {
  __shared__ float s[256];
  int t = threadIdx.x;
  const float* row = x + (long long)blockIdx.x * cols;
  float acc = 0.0f;
  for (int c = t; c < cols; c += blockDim.x) acc += row[c];
  s[t] = acc;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (t < k) s[t] += s[t + k];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}
