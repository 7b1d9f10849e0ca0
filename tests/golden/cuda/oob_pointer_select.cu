// EXPECT: BUG global-out-of-bounds
// KERNEL: pointer_select_oob
// LAUNCH: grid=1,1,1 block=128,1,1
// PARAMS: a=f32[100] b=f32[100] s=f32[100] y=f32[100] n=i32:100
// ok_pointer_select with the mirrored index off by one: thread 0 (even, so tensor b) reads b[100].
extern "C" __global__ void pointer_select_oob(const float* a, const float* b, const float* s, float* y, int n) {
  int i = threadIdx.x;
  if (i >= n) return;
  const float* src = s[i] > 0.0f ? a : b;
  const float* src2 = (i & 1) ? a : b;
  y[i] = src[i] + 2.0f * src2[n - i];  // @bug
}
