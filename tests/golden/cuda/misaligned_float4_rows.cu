// EXPECT: BUG misaligned-address
// KERNEL: row_sum_float4
// LAUNCH: grid=4,1,1 block=32,1,1
// PARAMS: x=f32[412] out=f32[4]
// Rows of 103 floats read as float4: row 0 starts 16-byte aligned, row 1 at byte 412 does not,
// and the GPU faults (misaligned address). Element-wise the arithmetic would be right.
extern "C" __global__ void row_sum_float4(const float* x, float* out) {
  const float4* row = reinterpret_cast<const float4*>(x + blockIdx.x * 103);
  float s = 0.0f;
  if (threadIdx.x < 25) {
    float4 v = row[threadIdx.x];  // @bug
    s = v.x + v.y + v.z + v.w;
  }
  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
  if (threadIdx.x == 0) out[blockIdx.x] = s;
}
