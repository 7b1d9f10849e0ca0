// EXPECT: BUG shared-race
// KERNEL: scan_in_place
// LAUNCH: grid=1,1,1 block=128,1,1
// PARAMS: x=f32[128] y=f32[128]
// Hillis-Steele scan in place with one barrier per step: the read of s[t-o] and the write of s[t]
// by another warp are not separated.
extern "C" __global__ void scan_in_place(const float* x, float* y) {
  __shared__ float s[128];
  int t = threadIdx.x;
  s[t] = x[t];
  __syncthreads();
  for (int o = 1; o < 128; o <<= 1) {
    float v = s[t];
    if (t >= o) v += s[t - o];  // @bug
    s[t] = v;  // @bug
    __syncthreads();
  }
  y[t] = s[t];
}
