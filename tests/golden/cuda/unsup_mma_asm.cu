// EXPECT: UNSUPPORTED tensor-core instruction 'mma.sync
// KERNEL: mma_m16n8k8
// LAUNCH: grid=1,1,1 block=32,1,1
// PARAMS: a=i32[64] b=i32[32] c=f32[128]
// An mma.sync issued through inline PTX: a clear UNSUPPORTED naming the opcode and line.
extern "C" __global__ void mma_m16n8k8(const unsigned* a, const unsigned* b, float* c) {
  unsigned a0 = a[threadIdx.x * 2], a1 = a[threadIdx.x * 2 + 1], b0 = b[threadIdx.x];
  float d0 = 0, d1 = 0, d2 = 0, d3 = 0;
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
               : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3) : "r"(a0), "r"(a1), "r"(b0));
  c[threadIdx.x * 4] = d0;
  c[threadIdx.x * 4 + 1] = d1;
  c[threadIdx.x * 4 + 2] = d2;
  c[threadIdx.x * 4 + 3] = d3;
}
