// EXPECT: BUG shared-race
// KERNEL: gemm_one_sync
// LAUNCH: grid=1,1,1 block=16,16,1
// PARAMS: A=f32[512] B=f32[512] C=f32[256] K=i32:32
// Tiled GEMM missing the second __syncthreads: the next tile overwrites As/Bs while other warps
// still read the current one.
#define T 16
extern "C" __global__ void gemm_one_sync(const float* A, const float* B, float* C, int K) {
  __shared__ float As[T][T], Bs[T][T];
  int row = threadIdx.y, col = threadIdx.x;
  float acc = 0.0f;
  for (int t = 0; t < K; t += T) {
    As[threadIdx.y][threadIdx.x] = A[row * K + t + threadIdx.x];  // @bug
    Bs[threadIdx.y][threadIdx.x] = B[(t + threadIdx.y) * T + col];  // @bug
    __syncthreads();
    for (int k = 0; k < T; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];  // @bug
  }
  C[row * T + col] = acc;
}
