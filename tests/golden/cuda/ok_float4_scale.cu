// EXPECT: OK
// KERNEL: scale4
// LAUNCH: grid=2,1,1 block=64,1,1
// PARAMS: x=f32[512] y=f32[512] s=f32:0.25 n4=i32:128
// float4 vector loads and stores.
extern "C" __global__ void scale4(const float4* x, float4* y, float s, int n4) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n4) {
    float4 v = x[i];
    y[i] = make_float4(v.x * s, v.y * s + 1.0f, v.z - s, v.w);
  }
}
