// EXPECT: BUG global-out-of-bounds
// KERNEL: dot_le
// LAUNCH: grid=1,1,1 block=8,1,1
// PARAMS: x=f32[800] out=f32[8] K=i32:100
// EXEC: summaries
// A summarized loop that reads one element too far at its last iteration (k <= K): the last
// thread's last read is x[800].
extern "C" __global__ void dot_le(const float* x, float* out, int K) {
  float acc = 0.f;
  for (int k = 0; k <= K; ++k) acc += x[threadIdx.x * K + k];  // @bug
  out[threadIdx.x] = acc;
}
