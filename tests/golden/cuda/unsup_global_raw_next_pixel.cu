// EXPECT: UNSUPPORTED may observe the store at PTX line
// KERNEL: next_pixel
// LAUNCH: grid=2,2,1 block=32,1,1
// PARAMS: x=f32[385]
// Like ok_inplace_channel_normalize, but each thread also reads the next pixel of its channel,
// which the neighbouring thread overwrites: the store's and the read's index differ by 1, a
// difference another thread's digits can make.
extern "C" __global__ void next_pixel(float* x) {
  const int HW = 64, C = 3;
  int p = blockIdx.x * 32 + threadIdx.x, b = blockIdx.y;
  for (int c = 0; c < C; ++c) x[(b * C + c) * HW + p] = x[(b * C + c) * HW + p] + x[(b * C + c) * HW + p + 1];
}
