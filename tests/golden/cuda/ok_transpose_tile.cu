// EXPECT: OK
// KERNEL: transpose
// LAUNCH: grid=2,2,1 block=32,8,1
// PARAMS: in=f32[1500] out=f32[1500] rows=i32:30 cols=i32:50
// Tiled transpose through a padded shared tile.
extern "C" __global__ void transpose(const float* in, float* out, int rows, int cols) {
  __shared__ float tile[32][33];
  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8)
    if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
  __syncthreads();
  x = blockIdx.y * 32 + threadIdx.x;
  y = blockIdx.x * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8)
    if (x < rows && y + j < cols) out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}
