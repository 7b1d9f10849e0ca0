// EXPECT: OK
// KERNEL: row_max_loop
// LAUNCH: grid=1,1,1 block=16,1,1
// PARAMS: x=f32[1600] out=f32[16] cols=i32:100
// EXEC: summaries
// A running maximum over a row per thread (fmaxf accumulator, summarized into one max reduction)
// followed by a second loop that sums exp(x - max) with the first loop's result.
extern "C" __global__ void row_max_loop(const float* x, float* out, int cols) {
  const float* xr = x + threadIdx.x * cols;
  float m = -3.0e38f;
  for (int c = 0; c < cols; ++c) m = fmaxf(m, xr[c]);
  float s = 0.f;
  for (int c = 0; c < cols; ++c) s += expf(xr[c] - m);
  out[threadIdx.x] = m + logf(s);
}
