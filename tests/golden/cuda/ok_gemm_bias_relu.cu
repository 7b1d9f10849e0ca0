// EXPECT: OK
// KERNEL: gemm_bias_relu
// LAUNCH: grid=2,2,1 block=8,8,1
// PARAMS: A=f32[192] W=f32[240] bias=f32[20] C=f32[320] M=i32:16 N=i32:20 K=i32:12
// Naive GEMM (x @ W^T) with a fused bias + ReLU epilogue.
extern "C" __global__ void gemm_bias_relu(const float* A, const float* W, const float* bias, float* C, int M, int N, int K) {
  int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < M && col < N) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += A[row * K + k] * W[col * K + k];
    C[row * N + col] = fmaxf(acc + bias[col], 0.0f);
  }
}
