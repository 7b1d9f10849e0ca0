// conv3x3.cu with the lower-row halo test off by one (`rr <= h`): the last row reads one row past x.
extern "C" __global__ void conv3x3(const float* __restrict__ x, const float* __restrict__ wt,
                                   float* __restrict__ y, int h, int w) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r >= h || c >= w) return;
  float acc = 0.0f;
  for (int dr = -1; dr <= 1; ++dr)
    for (int dc = -1; dc <= 1; ++dc) {
      int rr = r + dr, cc = c + dc;
      if (rr >= 0 && rr <= h && cc >= 0 && cc < w) acc += wt[(dr + 1) * 3 + (dc + 1)] * x[rr * w + cc];
    }
  y[r * w + c] = acc;
}
