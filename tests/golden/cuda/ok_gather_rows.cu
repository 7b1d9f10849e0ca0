// EXPECT: OK
// KERNEL: embed
// LAUNCH: grid=4,1,1 block=32,1,1
// PARAMS: ids=i32[4]{0,9} table=f32[320] out=f32[128] dim=i32:32
// Embedding lookup: the row index comes from the data.
extern "C" __global__ void embed(const int* ids, const float* table, float* out, int dim) {
  int row = ids[blockIdx.x];
  out[blockIdx.x * dim + threadIdx.x] = table[row * dim + threadIdx.x];
}
