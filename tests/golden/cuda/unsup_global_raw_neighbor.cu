// EXPECT: UNSUPPORTED may observe the store at PTX line
// KERNEL: stage_then_read
// LAUNCH: grid=2,1,1 block=64,1,1
// PARAMS: x=f32[128] tmp=f32[129] y=f32[128]
// Each thread stages x in global memory, then (after a block barrier, legal CUDA) reads its
// neighbour's staged value: a read that must see another thread's store of the same launch.
extern "C" __global__ void stage_then_read(const float* x, float* tmp, float* y) {
  int i = blockIdx.x * 64 + threadIdx.x;
  tmp[i] = x[i] * 2.0f;
  __syncthreads();
  y[i] = tmp[i] + (threadIdx.x < 63 ? tmp[i + 1] : 0.0f);
}
