// EXPECT: OK
// KERNEL: argmax_track
// LAUNCH: grid=1,1,1 block=64,1,1
// PARAMS: x=f32[512] best=f32[64] where=i32[64] cols=i32:8
// Max-tracking loop whose data-dependent side also stores: `if (v > m) { m = v; where[row] = c; }`
// (a guarded write each iteration, forwarded to the next one's "old element").
extern "C" __global__ void argmax_track(const float* x, float* best, int* where, int cols) {
  int row = threadIdx.x;
  const float* xr = x + row * cols;
  float m = xr[0];
  where[row] = 0;
  for (int c = 1; c < cols; ++c) {
    float v = xr[c];
    if (v > m) {
      m = v;
      where[row] = c;
    }
  }
  best[row] = m;
}
