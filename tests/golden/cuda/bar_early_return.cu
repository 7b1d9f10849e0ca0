// EXPECT: BUG barrier-divergence
// KERNEL: early_return
// LAUNCH: grid=2,1,1 block=64,1,1
// PARAMS: x=f32[100] y=f32[100] n=i32:100
// Threads past n return before the __syncthreads the others wait at (the last block is partial).
extern "C" __global__ void early_return(const float* x, float* y, int n) {
  __shared__ float s[64];
  int i = blockIdx.x * 64 + threadIdx.x;
  if (i >= n) return;  // @bug
  s[threadIdx.x] = x[i];
  __syncthreads();  // @bug
  y[i] = s[threadIdx.x] + s[threadIdx.x ^ 1];
}  // @bug: where the exited threads leave
