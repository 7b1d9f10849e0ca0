// The elementwise kernel with a wrong constant: 0.6 where the reference multiplies by 0.5.
extern "C" __global__ void affine(const float* __restrict__ x, float* __restrict__ y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 0.6f * x[i] + 1.0f;
}
