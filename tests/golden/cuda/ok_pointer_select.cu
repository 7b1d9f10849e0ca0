// EXPECT: OK
// KERNEL: pointer_select
// LAUNCH: grid=1,1,1 block=128,1,1
// PARAMS: a=f32[100] b=f32[100] s=f32[100] y=f32[100] n=i32:100
// An address that selects between two tensors, once on loaded data and once on the thread index:
// each access runs once per tensor under its condition (a load is ite(c, a[i], b[i])).
extern "C" __global__ void pointer_select(const float* a, const float* b, const float* s, float* y, int n) {
  int i = threadIdx.x;
  if (i >= n) return;
  const float* src = s[i] > 0.0f ? a : b;
  const float* src2 = (i & 1) ? a : b;
  y[i] = src[i] + 2.0f * src2[n - 1 - i];
}
