// EXPECT: OK
// KERNEL: block_int_max
// LAUNCH: grid=2,1,1 block=32,1,1
// PARAMS: x=i32[64]{-50,50} out=i32[2] m=i32[2]
// Signed integer atomicMax and atomicMin on shared cells.
extern "C" __global__ void block_int_max(const int* x, int* out, int* m) {
  __shared__ int hi, lo;
  if (threadIdx.x == 0) { hi = -1000; lo = 1000; }
  __syncthreads();
  int v = x[blockIdx.x * 32 + threadIdx.x];
  atomicMax(&hi, v);
  atomicMin(&lo, v);
  __syncthreads();
  if (threadIdx.x == 0) { out[blockIdx.x] = hi; m[blockIdx.x] = lo; }
}
