// EXPECT: OK
// KERNEL: count_positive
// LAUNCH: grid=1,1,1 block=128,1,1
// PARAMS: x=f32[128] out=i32[4]
// Per-warp count of positive entries through __ballot_sync and __popc.
extern "C" __global__ void count_positive(const float* x, int* out) {
  unsigned b = __ballot_sync(0xffffffff, x[threadIdx.x] > 0.0f);
  if ((threadIdx.x & 31) == 0) out[threadIdx.x >> 5] = __popc(b);
}
