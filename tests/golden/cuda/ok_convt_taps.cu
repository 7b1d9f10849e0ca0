// EXPECT: OK
// KERNEL: convt_taps
// LAUNCH: grid=1,1,1 block=17,17,1
// PARAMS: x=f32[128] w=f32[18] y=f32[289] hin=i32:8 hout=i32:17
// Transposed 2D convolution (2 input channels, 3x3 taps, stride 2), one output per thread: every
// tap tests `(o - k) % 2 == 0` and the input bounds on the thread index, in both dimensions.
// Splitting on each test multiplies bundles (one per combination of valid taps); past 32
// bundles these short load-only regions are if-converted on the thread predicate instead.
extern "C" __global__ void convt_taps(const float* x, const float* w, float* y, int hin, int hout) {
  int oh = threadIdx.y, ow = threadIdx.x;
  if (oh >= hout || ow >= hout) return;
  float acc = 0.0f;
  for (int c = 0; c < 2; ++c)
    for (int kh = 0; kh < 3; ++kh)
      for (int kw = 0; kw < 3; ++kw) {
        int th = oh - kh, tw = ow - kw;
        if (th < 0 || tw < 0 || th % 2 != 0 || tw % 2 != 0) continue;
        int ih = th / 2, iw = tw / 2;
        if (ih >= hin || iw >= hin) continue;
        acc += x[(c * hin + ih) * hin + iw] * w[(c * 3 + kh) * 3 + kw];
      }
  y[oh * hout + ow] = acc;
}
