// Tiled GEMM with static shared memory, a non-inlined device function call, local arrays.
#define TILE 16

__global__ void tiled_gemm(const float* A, const float* B, float* C, int M, int N, int K) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE + 1];
  int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.0f;
  for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
    int ka = t * TILE + threadIdx.x, kb = t * TILE + threadIdx.y;
    As[threadIdx.y][threadIdx.x] = (row < M && ka < K) ? A[row * K + ka] : 0.0f;
    Bs[threadIdx.y][threadIdx.x] = (kb < K && col < N) ? B[kb * N + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = acc;
}

__device__ __noinline__ float scaled_relu(float v, float scale, int mode) {
  float r = v > 0.0f ? v * scale : 0.01f * v;
  return mode ? r * r : r;
}

__device__ __noinline__ void store_pair(float* p, float a, float b) { p[0] = a; p[1] = b; }

__global__ void call_func(const float* x, float* y, int n, float scale) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float r = scaled_relu(x[i], scale, i & 1);
    store_pair(y + 2 * i, r, -r);
  }
}

__global__ void local_array(const float* x, float* y, const int* idx, int n) {
  float tmp[8];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    for (int k = 0; k < 8; ++k) tmp[k] = x[(i + k) % n] * k;
    y[i] = tmp[idx[i] & 7];
  }
}

__constant__ float kWeights[4] = {0.25f, 0.5f, 0.125f, 1.5f};
__device__ int gCounter = 7;

__global__ void use_constant(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { y[i] = x[i] * kWeights[i & 3]; if (i == 0) gCounter += 1; }
}

__global__ void matmul_2d_double(const double* __restrict__ A, const double* __restrict__ B, double* C, int N) {
  int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < N && c < N) {
    double s = 0;
    for (int k = 0; k < N; ++k) s = fma(A[r * N + k], B[k * N + c], s);
    C[r * N + c] = s;
  }
}
