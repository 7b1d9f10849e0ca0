// EXPECT: UNSUPPORTED tensor-core instruction 'wgmma
// KERNEL: wgmma_fence
// LAUNCH: grid=1,1,1 block=128,1,1
// PARAMS: x=f32[128] y=f32[128]
// Hopper warpgroup MMA synchronization (sm_90a): not modeled.
extern "C" __global__ void wgmma_fence(const float* x, float* y) {
  float v = x[threadIdx.x];
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  y[threadIdx.x] = v;
}
