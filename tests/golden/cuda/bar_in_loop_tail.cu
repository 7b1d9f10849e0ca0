// EXPECT: BUG barrier-divergence
// KERNEL: loop_tail
// LAUNCH: grid=1,1,1 block=64,1,1
// PARAMS: x=f32[100] y=f32[64] n=i32:100
// A barrier inside a loop whose trip count depends on the thread: threads 0..35 run two
// iterations, the others one, and then wait at the final barrier.
extern "C" __global__ void loop_tail(const float* x, float* y, int n) {
  __shared__ float s[64];
  float acc = 0.0f;
  for (int i = threadIdx.x; i < n; i += 64) {
    s[threadIdx.x] = x[i];
    __syncthreads();  // @bug
    acc += s[threadIdx.x];
  }
  __syncthreads();  // @bug
  y[threadIdx.x] = acc;
}
