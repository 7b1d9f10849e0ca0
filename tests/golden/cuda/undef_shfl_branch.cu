// EXPECT: BUG undef-branch
// KERNEL: exited_trip_count
// LAUNCH: grid=1,1,1 block=32,1,1
// PARAMS: x=f32[32] y=f32[32]
// A loop trip count shuffled from lanes that exited decides a branch.
extern "C" __global__ void exited_trip_count(const float* x, float* y) {
  if (threadIdx.x >= 16) return;
  int n = __shfl_down_sync(0x0000ffff, (int)threadIdx.x % 4, 8);
  float s = 0.0f;
  for (int k = 0; k < n; ++k) s += x[k];  // @bug
  y[threadIdx.x] = s;
}
