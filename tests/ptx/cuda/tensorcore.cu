// sm_80+ features: WMMA tensor cores, cp.async pipelines, inline PTX, cooperative groups.
#include <cuda_fp16.h>
#include <mma.h>
#include <cuda_pipeline.h>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

namespace cg = cooperative_groups;

__global__ void wmma_gemm_16x16(const half* a, const half* b, float* c, int k_tiles) {
  using namespace nvcuda;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int t = 0; t < k_tiles; ++t) {
    wmma::load_matrix_sync(fa, a + t * 16, 16 * k_tiles);
    wmma::load_matrix_sync(fb, b + t * 16, 16 * k_tiles);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  wmma::store_matrix_sync(c, acc, 16, wmma::mem_row_major);
}

__global__ void async_copy_scale(const float4* in, float4* out, float s, int n4) {
  __shared__ float4 buf[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n4) __pipeline_memcpy_async(&buf[threadIdx.x], &in[i], sizeof(float4));
  __pipeline_commit();
  __pipeline_wait_prior(0);
  __syncthreads();
  if (i < n4) {
    float4 v = buf[threadIdx.x];
    out[i] = make_float4(v.x * s, v.y * s, v.z * s, v.w * s);
  }
}

__global__ void inline_asm_and_cg(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? x[i] : 0.0f;
  unsigned lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  float r;
  asm("{ .reg .f32 t; mul.f32 t, %1, %1; add.f32 %0, t, 1.0; }" : "=f"(r) : "f"(v));
  auto warp = cg::tiled_partition<32>(cg::this_thread_block());
  float s = cg::reduce(warp, r, cg::plus<float>());
  if (lane == 0 && i < n) y[i / 32] = s;
}
