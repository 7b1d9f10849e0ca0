// EXPECT: OK
// KERNEL: block_fmax_cas
// LAUNCH: grid=2,1,1 block=64,1,1
// PARAMS: x=f32[128] out=f32[2]
// Float max via an atomicCAS loop on a shared cell.
__device__ void shared_fmax(float* addr, float v) {
  int* a = (int*)addr;
  int old = *a, assumed;
  do {
    assumed = old;
    old = atomicCAS(a, assumed, __float_as_int(fmaxf(v, __int_as_float(assumed))));
  } while (assumed != old);
}
extern "C" __global__ void block_fmax_cas(const float* x, float* out) {
  __shared__ float m;
  if (threadIdx.x == 0) m = -1e30f;
  __syncthreads();
  shared_fmax(&m, x[blockIdx.x * 64 + threadIdx.x]);
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = m;
}
