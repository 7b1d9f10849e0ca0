// EXPECT: OK
// KERNEL: hist
// LAUNCH: grid=2,1,1 block=64,1,1
// PARAMS: idx=i32[128]{0,7} h=i32[8]
// Integer atomicAdd histogram; the bin comes from the data.
extern "C" __global__ void hist(const int* idx, int* h) {
  atomicAdd(&h[idx[blockIdx.x * 64 + threadIdx.x]], 1);
}
