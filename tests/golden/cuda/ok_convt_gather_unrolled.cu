// EXPECT: OK
// KERNEL: convt_gather_unrolled
// LAUNCH: grid=11,1,1 block=256,1,1
// PARAMS: x=f32[1024] w=f32[128] y=f32[2592] cin=i32:4 h=i32:8 wd=i32:8 cout=i32:2 k=i32:4 stride=i32:2 oh=i32:18 ow=i32:18 total=i32:2592
// Transposed 2D convolution as a gather over a flat thread index (4 input channels, 4x4 taps,
// stride 2). nvcc unrolls the tap loop by 4 with a pointer induction variable; past 32 bundles
// the tap tests are if-converted, and in a bundle whose parity already rules a tap out, every
// instruction of that tap's side must be skipped — before, the division feeding the address
// was skipped but the load was not (a later guard's domain was not refuted), so the address
// read the division's register as Undef: "undefined address" (pair 032 of the dev corpus).
extern "C" __global__ void convt_gather_unrolled(const float* x, const float* w, float* y, int cin, int h, int wd,
                                        int cout, int k, int stride, int oh, int ow, int total) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= total) return;
  int c = i % ow, r = (i / ow) % oh, oc = (i / (ow * oh)) % cout, n = i / (ow * oh * cout);
  float acc = 0.f;
  for (int ic = 0; ic < cin; ++ic)
    for (int kh = 0; kh < k; ++kh) {
      int a = r - kh;
      if (a < 0 || a % stride) continue;
      a /= stride;
      if (a >= h) continue;
      for (int kw = 0; kw < k; ++kw) {
        int b = c - kw;
        if (b < 0 || b % stride) continue;
        b /= stride;
        if (b >= wd) continue;
        acc += x[((n * cin + ic) * h + a) * wd + b] * w[((ic * cout + oc) * k + kh) * k + kw];
      }
    }
  y[i] = acc;
}
