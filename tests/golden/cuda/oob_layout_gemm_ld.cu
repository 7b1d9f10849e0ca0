// EXPECT: BUG global-out-of-bounds
// KERNEL: gemm_wrong_ld
// LAUNCH: grid=1,1,1 block=16,8,1
// PARAMS: A=f32[96] B=f32[192] C=f32[128] M=i32:8 N=i32:16 K=i32:12
// Layout mismatch: B is K x N but read with leading dimension K (as if it were N x K
// transposed), so rows past K*N/... run off the end for col >= 12.
extern "C" __global__ void gemm_wrong_ld(const float* A, const float* B, float* C, int M, int N, int K) {
  int row = threadIdx.y, col = threadIdx.x;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += A[row * K + k] * B[col * K + k + k * N / 4];  // @bug
  C[row * N + col] = acc;
}
