// EXPECT: OK
// KERNEL: channel_normalize
// LAUNCH: grid=2,2,1 block=32,1,1
// PARAMS: x=f32[384]
// One thread per (batch, pixel) reads all its channels, then rewrites them in place: the reads
// and stores differ by whole channels (k*HW) but never reach another thread's pixel, which the
// read-after-write check decides from the index digits, without evaluating every pair.
extern "C" __global__ void channel_normalize(float* x) {
  const int HW = 64, C = 3;
  int p = blockIdx.x * 32 + threadIdx.x, b = blockIdx.y;
  float s = 0.0f;
  for (int c = 0; c < C; ++c) s += x[(b * C + c) * HW + p];
  for (int c = 0; c < C; ++c) x[(b * C + c) * HW + p] = x[(b * C + c) * HW + p] / (s + 1.0f);
}
