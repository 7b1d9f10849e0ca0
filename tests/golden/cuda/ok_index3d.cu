// EXPECT: OK
// KERNEL: scale_3d
// LAUNCH: grid=2,2,3 block=4,4,2
// PARAMS: x=f32[384] s=f32[6] y=f32[384] D=i32:6 H=i32:8 W=i32:8
// 3D grid and block over a D x H x W volume with a per-depth scale.
extern "C" __global__ void scale_3d(const float* x, const float* s, float* y, int D, int H, int W) {
  int w = blockIdx.x * blockDim.x + threadIdx.x, h = blockIdx.y * blockDim.y + threadIdx.y;
  int d = blockIdx.z * blockDim.z + threadIdx.z;
  if (d < D && h < H && w < W) {
    int i = (d * H + h) * W + w;
    y[i] = x[i] * s[d];
  }
}
