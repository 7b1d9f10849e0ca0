// EXPECT: OK
// KERNEL: conv1d
// LAUNCH: grid=4,1,1 block=64,1,1
// PARAMS: x=f32[250] w=f32[5] y=f32[250] n=i32:250
// 1D convolution (width 5, zero padding) with a shared tile and a halo.
extern "C" __global__ void conv1d(const float* x, const float* w, float* y, int n) {
  __shared__ float t[64 + 4];
  int i = blockIdx.x * 64 + threadIdx.x;
  t[threadIdx.x + 2] = i < n ? x[i] : 0.0f;
  if (threadIdx.x < 2) {
    int l = i - 2, r = i + 64;
    t[threadIdx.x] = l >= 0 ? x[l] : 0.0f;
    t[threadIdx.x + 66] = r < n ? x[r] : 0.0f;
  }
  __syncthreads();
  if (i < n) {
    float s = 0.0f;
    for (int k = 0; k < 5; ++k) s += t[threadIdx.x + k] * w[k];
    y[i] = s;
  }
}
