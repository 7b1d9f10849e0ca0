// EXPECT: BUG uninitialized-shared-read
// KERNEL: tile_no_pad
// LAUNCH: grid=2,1,1 block=16,1,1
// PARAMS: x=f32[20] y=f32[20] n=i32:20
// The tile is loaded only where i < n (no zero padding), but every thread sums the whole tile.
extern "C" __global__ void tile_no_pad(const float* x, float* y, int n) {
  __shared__ float t[16];
  int i = blockIdx.x * 16 + threadIdx.x;
  if (i < n) t[threadIdx.x] = x[i];
  __syncthreads();
  float s = 0.0f;
  for (int k = 0; k < 16; ++k) s += t[k];  // @bug
  if (i < n) y[i] = s;
}
