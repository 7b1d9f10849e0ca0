// EXPECT: OK
// KERNEL: maxpool2x2
// LAUNCH: grid=1,1,2 block=8,8,1
// PARAMS: x=f32[512] y=f32[128] H=i32:16 W=i32:16
// 2x2 max pooling with stride 2, grid.z over channels.
extern "C" __global__ void maxpool2x2(const float* x, float* y, int H, int W) {
  int ox = threadIdx.x, oy = threadIdx.y, c = blockIdx.z;
  const float* p = x + (c * H + 2 * oy) * W + 2 * ox;
  float m = fmaxf(fmaxf(p[0], p[1]), fmaxf(p[W], p[W + 1]));
  y[(c * (H / 2) + oy) * (W / 2) + ox] = m;
}
