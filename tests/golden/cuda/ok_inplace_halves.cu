// EXPECT: OK
// KERNEL: add_halves
// LAUNCH: grid=1,1,1 block=64,1,1
// PARAMS: x=f32[128]
// Reads the second half of x and writes the first half: disjoint, decided by evaluation.
extern "C" __global__ void add_halves(float* x) {
  int i = threadIdx.x;
  x[i] = x[i] + x[(i * 7) % 64 + 64];
}
