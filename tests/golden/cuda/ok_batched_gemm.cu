// EXPECT: OK
// KERNEL: bmm
// LAUNCH: grid=1,1,3 block=8,8,1
// PARAMS: A=f32[192] B=f32[192] C=f32[192] M=i32:8 N=i32:8 K=i32:8
// Batched matrix multiply, the batch in grid.z.
extern "C" __global__ void bmm(const float* A, const float* B, float* C, int M, int N, int K) {
  int b = blockIdx.z, i = threadIdx.y, j = threadIdx.x;
  const float* a = A + b * M * K;
  const float* bb = B + b * K * N;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += a[i * K + k] * bb[k * N + j];
  C[b * M * N + i * N + j] = acc;
}
