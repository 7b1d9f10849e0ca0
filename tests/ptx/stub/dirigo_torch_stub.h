// Stand-in for the torch/ATen/c10 headers when compiling only the DEVICE code of a
// load_inline source to PTX (scripts/ptx-coverage.py). Host code that uses torch is cut
// out before compiling; what device code may still name is aliased to CUDA types here.
#pragma once
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
// Standard headers torch/extension.h brings in transitively (FLT_MAX, INT_MAX, std::min, ...).
#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <type_traits>
#include <utility>

namespace c10 {
using Half = __half;
using BFloat16 = __nv_bfloat16;
}  // namespace c10
namespace at {
using c10::BFloat16;
using c10::Half;
}  // namespace at

#define C10_CUDA_KERNEL_LAUNCH_CHECK() ((void)0)
#define C10_HOST_DEVICE __host__ __device__
#define C10_DEVICE __device__
#define C10_HOST __host__
#define C10_RESTRICT __restrict__
#define C10_LAUNCH_BOUNDS_1(x) __launch_bounds__(x)
#define C10_LAUNCH_BOUNDS_2(x, y) __launch_bounds__(x, y)
#define C10_WARP_SIZE 32
#define TORCH_CHECK(...) ((void)0)
#define AT_ASSERT(...) ((void)0)
