// EXPECT: OK
// KERNEL: tiled_gemm
// LAUNCH: grid=2,2,1 block=16,16,1
// PARAMS: A=f32[600] B=f32[750] C=f32[500] M=i32:20 N=i32:25 K=i32:30
// 16x16 shared-memory tiled GEMM with zero padding at the edges.
#define T 16
extern "C" __global__ void tiled_gemm(const float* A, const float* B, float* C, int M, int N, int K) {
  __shared__ float As[T][T], Bs[T][T];
  int row = blockIdx.y * T + threadIdx.y, col = blockIdx.x * T + threadIdx.x;
  float acc = 0.0f;
  for (int t = 0; t < K; t += T) {
    As[threadIdx.y][threadIdx.x] = (row < M && t + threadIdx.x < K) ? A[row * K + t + threadIdx.x] : 0.0f;
    Bs[threadIdx.y][threadIdx.x] = (col < N && t + threadIdx.y < K) ? B[(t + threadIdx.y) * N + col] : 0.0f;
    __syncthreads();
    for (int k = 0; k < T; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = acc;
}
