// EXPECT: OK
// KERNEL: add2
// LAUNCH: grid=1,1,1 block=96,1,1
// PARAMS: a=f32[200] b=f32[200] c=f32[200] n2=i32:100
// float2 vector loads with a grid-stride loop.
extern "C" __global__ void add2(const float2* a, const float2* b, float2* c, int n2) {
  for (int i = threadIdx.x; i < n2; i += blockDim.x) {
    float2 x = a[i], y = b[i];
    c[i] = make_float2(x.x + y.x, x.y * y.y);
  }
}
