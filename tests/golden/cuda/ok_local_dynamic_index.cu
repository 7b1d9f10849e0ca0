// EXPECT: OK
// KERNEL: local_dynamic_index
// LAUNCH: grid=2,1,1 block=64,1,1
// PARAMS: x=f32[1024] y=f32[128]
// A private array indexed by thread identity (written and read at t % 8, (t + 3) % 8): nvcc puts
// it in local memory and the index is symbolic; loads are an ite over the 8 cells, stores update
// the cell the index names.
extern "C" __global__ void local_dynamic_index(const float* x, float* y) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  float vals[8];
  for (int i = 0; i < 8; ++i) vals[i] = x[t * 8 + i];
  vals[t % 8] *= 2.0f;
  y[t] = vals[t % 8] + vals[(t + 3) % 8];
}
