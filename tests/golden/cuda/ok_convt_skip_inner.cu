// EXPECT: OK
// KERNEL: convt_skip_inner
// LAUNCH: grid=1,1,1 block=16,16,1
// PARAMS: x=f32[128] w=f32[32] y=f32[256] hin=i32:8 hout=i32:16 k=i32:4
// EXEC: ifconvert_thread_after=0 merges
// Transposed 2D convolution (2 channels, k x k taps, stride 2, padding 1), one output per thread.
// The row test `(oh + 1 - kh) % 2 == 0 && ih < hin` skips the whole inner loop over kw, so it
// cannot be if-converted; splitting on it per tap multiplies bundles. The two halves of each
// split merge again at the branch's reconvergence point (registers as ite over the test).
extern "C" __global__ void convt_skip_inner(const float* x, const float* w, float* y, int hin, int hout, int k) {
  int oh = threadIdx.y, ow = threadIdx.x;
  if (oh >= hout || ow >= hout) return;
  float acc = 0.0f;
  for (int c = 0; c < 2; ++c)
    for (int kh = 0; kh < k; ++kh) {
      int th = oh + 1 - kh;
      if (th < 0 || th % 2 != 0 || th / 2 >= hin) continue;
      int ih = th / 2;
      for (int kw = 0; kw < k; ++kw) {
        int tw = ow + 1 - kw;
        if (tw < 0 || tw % 2 != 0 || tw / 2 >= hin) continue;
        acc += x[(c * hin + ih) * hin + tw / 2] * w[(c * k + kh) * k + kw];
      }
    }
  y[oh * hout + ow] = acc;
}
