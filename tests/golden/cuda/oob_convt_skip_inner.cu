// EXPECT: BUG global-out-of-bounds
// KERNEL: convt_skip_inner_oob
// LAUNCH: grid=1,1,1 block=16,16,1
// PARAMS: x=f32[128] w=f32[32] y=f32[256] hin=i32:8 hout=i32:16 k=i32:4
// EXEC: ifconvert_thread_after=0 merges
// ok_convt_skip_inner with the row bound off by one (`> hin`): output row 15 reads input row 8,
// past the last channel's end. The read sits inside a merged thread split over an inner loop.
extern "C" __global__ void convt_skip_inner_oob(const float* x, const float* w, float* y, int hin, int hout, int k) {
  int oh = threadIdx.y, ow = threadIdx.x;
  if (oh >= hout || ow >= hout) return;
  float acc = 0.0f;
  for (int c = 0; c < 2; ++c)
    for (int kh = 0; kh < k; ++kh) {
      int th = oh + 1 - kh;
      if (th < 0 || th % 2 != 0 || th / 2 > hin) continue;
      int ih = th / 2;
      for (int kw = 0; kw < k; ++kw) {
        int tw = ow + 1 - kw;
        if (tw < 0 || tw % 2 != 0 || tw / 2 >= hin) continue;
        acc += x[(c * hin + ih) * hin + tw / 2] * w[(c * k + kh) * k + kw];  // @bug
      }
    }
  y[oh * hout + ow] = acc;
}
