// EXPECT: OK
// KERNEL: max_all
// LAUNCH: grid=2,1,1 block=64,1,1
// PARAMS: x=f32[128] out=f32[1]
// Float max through an atomicCAS loop.
__device__ float atomic_maxf(float* addr, float v) {
  int* a = (int*)addr;
  int old = *a, assumed;
  do {
    assumed = old;
    old = atomicCAS(a, assumed, __float_as_int(fmaxf(v, __int_as_float(assumed))));
  } while (assumed != old);
  return __int_as_float(old);
}
extern "C" __global__ void max_all(const float* x, float* out) {
  atomic_maxf(out, x[blockIdx.x * blockDim.x + threadIdx.x]);
}
