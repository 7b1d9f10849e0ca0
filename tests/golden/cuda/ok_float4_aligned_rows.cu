// EXPECT: OK
// KERNEL: row_sum_float4_aligned
// LAUNCH: grid=4,1,1 block=32,1,1
// PARAMS: x=f32[416] out=f32[4]
// Rows of 104 floats (a multiple of 4) read as float4: every row starts 16-byte aligned.
extern "C" __global__ void row_sum_float4_aligned(const float* x, float* out) {
  const float4* row = reinterpret_cast<const float4*>(x + blockIdx.x * 104);
  float s = 0.0f;
  if (threadIdx.x < 26) {
    float4 v = row[threadIdx.x];
    s = v.x + v.y + v.z + v.w;
  }
  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
  if (threadIdx.x == 0) out[blockIdx.x] = s;
}
