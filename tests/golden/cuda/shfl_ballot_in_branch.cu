// EXPECT: BUG shuffle-inactive-lane
// KERNEL: odd_ballot
// LAUNCH: grid=1,1,1 block=32,1,1
// PARAMS: x=f32[32] y=i32[32]
// __ballot_sync(0xffffffff, ...) inside a branch only odd lanes take.
extern "C" __global__ void odd_ballot(const float* x, int* y) {
  int r = 0;
  if (threadIdx.x & 1) r = __popc(__ballot_sync(0xffffffff, x[threadIdx.x] > 0.0f));  // @bug
  y[threadIdx.x] = r;
}
