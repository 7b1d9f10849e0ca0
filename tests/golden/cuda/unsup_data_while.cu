// EXPECT: UNSUPPORTED data-dependent control flow
// KERNEL: data_while
// LAUNCH: grid=1,1,1 block=32,1,1
// PARAMS: x=f32[32] y=f32[32]
// A loop whose exit depends on the data (`while (v > 1)`): the trip count is a function of the
// input, which bundles over thread identity cannot express. Stays UNSUPPORTED (never unrolled).
extern "C" __global__ void data_while(const float* x, float* y) {
  int i = threadIdx.x;
  float v = x[i];
  int k = 0;
  while (v > 1.0f) {
    v = v * 0.5f;
    ++k;
  }
  y[i] = v + float(k);
}
