// EXPECT: BUG global-out-of-bounds
// KERNEL: scale_vec4
// LAUNCH: grid=1,1,1 block=64,1,1
// PARAMS: x=f32[250] y=f32[250] n=i32:250
// Vectorized tail: (n + 3) / 4 float4 groups for n = 250 reads 2 floats past the end.
extern "C" __global__ void scale_vec4(const float* x, float* y, int n) {
  int i = threadIdx.x;
  if (i < (n + 3) / 4) {
    float4 v = reinterpret_cast<const float4*>(x)[i];  // @bug
    reinterpret_cast<float4*>(y)[i] = make_float4(v.x * 2, v.y * 2, v.z * 2, v.w * 2);  // @bug
  }
}
