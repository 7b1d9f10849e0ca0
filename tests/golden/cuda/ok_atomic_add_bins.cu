// EXPECT: OK
// KERNEL: bin_sum
// LAUNCH: grid=4,1,1 block=128,1,1
// PARAMS: x=f32[500] out=f32[8] n=i32:500
// Float atomicAdd into 8 bins.
extern "C" __global__ void bin_sum(const float* x, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&out[i % 8], x[i] * 2.0f);
}
