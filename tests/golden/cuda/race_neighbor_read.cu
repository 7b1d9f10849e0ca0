// EXPECT: BUG shared-race
// KERNEL: neighbor_diff
// LAUNCH: grid=1,1,1 block=128,1,1
// PARAMS: x=f32[128] y=f32[128]
// Each thread reads its right neighbour's slot with no barrier after the stores.
extern "C" __global__ void neighbor_diff(const float* x, float* y) {
  __shared__ float s[129];
  s[threadIdx.x] = x[threadIdx.x];  // @bug
  if (threadIdx.x == 0) s[128] = 0.0f;  // @bug
  y[threadIdx.x] = s[threadIdx.x + 1] - s[threadIdx.x];  // @bug
}
