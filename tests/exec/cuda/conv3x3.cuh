// 3x3 convolution of one [h, w] channel, zero padding 1, one thread per output pixel (2D grid), as
// the kernel CONV3X3_NAME. CONV3X3_ROW_IN(rr, h) is the lower-row halo test: `rr < h`, or `rr <= h`
// for the variant off by one whose last row reads one row past x. Included once per kernel (by
// ranges.cu and bench/grid_scaling/conv3x3*.cu): one body, the halo test its only difference.
extern "C" __global__ void CONV3X3_NAME(const float* __restrict__ x, const float* __restrict__ wt,
                                        float* __restrict__ y, int h, int w) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r >= h || c >= w) return;
  float acc = 0.0f;
  for (int dr = -1; dr <= 1; ++dr)
    for (int dc = -1; dc <= 1; ++dc) {
      int rr = r + dr, cc = c + dc;
      if (rr >= 0 && CONV3X3_ROW_IN(rr, h) && cc >= 0 && cc < w) acc += wt[(dr + 1) * 3 + (dc + 1)] * x[rr * w + cc];
    }
  y[r * w + c] = acc;
}
#undef CONV3X3_NAME
#undef CONV3X3_ROW_IN
