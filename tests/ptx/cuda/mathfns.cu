// Math functions whose nvcc lowering the rollup (src/ptx/rollup.cpp) recognizes, one kernel
// each, o[i] = f(a[i] {, b[i]}). tests/ptx/test_rollup_math.cpp checks which idiom each
// variant yields; tests/ptx/exec/test_rollup_exec.cpp executes them and evaluates the result.
extern "C" __global__ void m_powf(float* o, const float* a, const float* b) { int i = threadIdx.x; o[i] = powf(a[i], b[i]); }
extern "C" __global__ void m_powf_const(float* o, const float* a, const float* b) { int i = threadIdx.x; o[i] = powf(a[i], 1.5f); }
extern "C" __global__ void m_powf_intrinsic(float* o, const float* a, const float* b) { int i = threadIdx.x; o[i] = __powf(a[i], b[i]); }
extern "C" __global__ void m_exp2f(float* o, const float* a, const float* b) { int i = threadIdx.x; o[i] = exp2f(a[i]); }
extern "C" __global__ void m_log2f(float* o, const float* a, const float* b) { int i = threadIdx.x; o[i] = log2f(a[i]); }
extern "C" __global__ void m_sqrtf(float* o, const float* a, const float* b) { int i = threadIdx.x; o[i] = sqrtf(a[i]); }
extern "C" __global__ void m_rsqrtf(float* o, const float* a, const float* b) { int i = threadIdx.x; o[i] = rsqrtf(a[i]); }
extern "C" __global__ void m_fdividef(float* o, const float* a, const float* b) { int i = threadIdx.x; o[i] = __fdividef(a[i], b[i]); }
extern "C" __global__ void m_div(float* o, const float* a, const float* b) { int i = threadIdx.x; o[i] = a[i] / b[i]; }
extern "C" __global__ void m_rcp(float* o, const float* a, const float* b) { int i = threadIdx.x; o[i] = 1.0f / a[i]; }
extern "C" __global__ void m_expf(float* o, const float* a, const float* b) { int i = threadIdx.x; o[i] = expf(a[i]); }
extern "C" __global__ void m_logf(float* o, const float* a, const float* b) { int i = threadIdx.x; o[i] = logf(a[i]); }
extern "C" __global__ void m_tanhf(float* o, const float* a, const float* b) { int i = threadIdx.x; o[i] = tanhf(a[i]); }
extern "C" __global__ void m_sigmoid(float* o, const float* a, const float* b) { int i = threadIdx.x; o[i] = 1.0f / (1.0f + expf(-a[i])); }
extern "C" __global__ void m_sigmoid_intrinsic(float* o, const float* a, const float* b) { int i = threadIdx.x; o[i] = 1.0f / (1.0f + __expf(-a[i])); }
extern "C" __global__ void m_silu(float* o, const float* a, const float* b) { int i = threadIdx.x; float x = a[i]; o[i] = x / (1.0f + expf(-x)); }
// a * sigmoid(b): the numerator is not the exp's argument, so no silu
extern "C" __global__ void m_not_silu(float* o, const float* a, const float* b) { int i = threadIdx.x; o[i] = a[i] / (1.0f + expf(-b[i])); }
extern "C" __global__ void m_softplus(float* o, const float* a, const float* b) {
  int i = threadIdx.x; float x = a[i]; o[i] = x > 20.0f ? x : log1pf(expf(x));
}
extern "C" __global__ void m_softplus_logf(float* o, const float* a, const float* b) {
  int i = threadIdx.x; float x = a[i]; o[i] = x > 20.0f ? x : logf(1.0f + expf(x));
}
// the fast inverse square root: integer arithmetic on float bits that no template matches
extern "C" __global__ void m_bits(float* o, const float* a, const float* b) {
  int i = threadIdx.x; float x = a[i] + b[i]; float y = __int_as_float(0x5f3759df - (__float_as_int(x) >> 1));
  o[i] = y * (1.5f - 0.5f * x * y * y);
}
// several expf sharing nvcc's constant registers, accumulated through the idiom's last fma
extern "C" __global__ void m_sum_exp(float* o, const float* a, const float* b) {
  int i = threadIdx.x; float s = 0.0f;
#pragma unroll
  for (int k = 0; k < 4; ++k) s += expf(a[4 * i + k] - b[i]);
  o[i] = s;
}
// one expf feeding two fmas (tanh written as (e - 1) / (e + 1))
extern "C" __global__ void m_tanh_via_exp(float* o, const float* a, const float* b) {
  int i = threadIdx.x; float e = expf(2.0f * a[i]); o[i] = (e - 1.0f) / (e + 1.0f);
}
