// EXPECT: BUG undef-address
// KERNEL: uninit_offset
// LAUNCH: grid=1,1,1 block=32,1,1
// PARAMS: x=f32[64] y=f32[32] k=i32:2
// Offsets kept in a per-thread array that is filled only for j < k, then all 4 are used.
extern "C" __global__ void uninit_offset(const float* x, float* y, int k) {
  int off[4];
  for (int j = 0; j < k; ++j) off[j] = j * 8;
  float s = 0.0f;
  for (int j = 0; j < 4; ++j) s += x[threadIdx.x + off[j]];  // @bug
  y[threadIdx.x] = s;
}
