// EXPECT: OK
// KERNEL: linear_long_k
// LAUNCH: grid=1,6,1 block=8,1,1
// PARAMS: x=f32[1206] w=f32[1608] b=f32[8] out=f32[48] M=i32:6 N=i32:8 K=i32:201
// EXEC: summaries
// NVCC: -O3 -lineinfo
// Linear layer with one thread per output and the whole K loop in the thread: nvcc unrolls it by 4
// with a remainder loop (K = 201: 50 unrolled iterations and one left over); Execute summarizes the
// unrolled loop into a reduction (docs/exec.md "Loop summaries").
extern "C" __global__ void linear_long_k(const float* x, const float* w, const float* b, float* out, int M, int N, int K) {
  int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y;
  if (col >= N || row >= M) return;
  float acc = 0.f;
  for (int k = 0; k < K; ++k) acc += x[row * K + k] * w[col * K + k];
  out[row * N + col] = fmaxf(acc + b[col], 0.f);
}
