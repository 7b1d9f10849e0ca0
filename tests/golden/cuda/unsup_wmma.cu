// EXPECT: UNSUPPORTED tensor-core instruction 'wmma.load
// KERNEL: wmma_tile
// LAUNCH: grid=1,1,1 block=32,1,1
// PARAMS: a=f16[256] b=f16[256] c=f32[256]
// A 16x16x16 half-precision WMMA tile: tensor-core instructions are not modeled.
#include <mma.h>
using namespace nvcuda;
extern "C" __global__ void wmma_tile(const __half* a, const __half* b, float* c) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fill_fragment(fc, 0.0f);
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}
