// sm_80/sm_90 features: clusters with distributed shared memory, fp8, mbarrier (cuda::barrier),
// redux.sync, match, half2/bf16 atomics. Hopper-only code is guarded so the file also builds for sm_80.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda/barrier>
#include <cooperative_groups.h>

namespace cg = cooperative_groups;
#pragma nv_diag_suppress static_var_with_dynamic_init

__global__ void cluster_exchange(const float* x, float* y) {
#if __CUDA_ARCH__ >= 900
  __shared__ float s[128];
  cg::cluster_group cluster = cg::this_cluster();
  unsigned rank = cluster.block_rank();
  s[threadIdx.x] = x[blockIdx.x * blockDim.x + threadIdx.x];
  cluster.sync();
  float* other = cluster.map_shared_rank(s, rank ^ 1);
  y[blockIdx.x * blockDim.x + threadIdx.x] = other[threadIdx.x] + s[threadIdx.x];
  cluster.sync();
#endif
}

__global__ void fp8_roundtrip(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    __nv_fp8_e4m3 a(x[i]);
    __nv_fp8_e5m2 b(x[i] * 0.5f);
    y[i] = float(a) + float(b);
  }
}

__global__ void block_barrier(float* data) {
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  if (threadIdx.x == 0) init(&bar, blockDim.x);
  __syncthreads();
  data[threadIdx.x] *= 2.0f;
  bar.arrive_and_wait();
  data[threadIdx.x] += data[(threadIdx.x + 1) % blockDim.x];
}

__global__ void warp_intrinsics(const int* x, int* y, __half2* h, __nv_bfloat16* b) {
  int v = x[threadIdx.x];
  unsigned active = __activemask();
  int total = __reduce_add_sync(active, v);
  unsigned peers = __match_any_sync(active, v);
  y[threadIdx.x] = total + __popc(peers) + __reduce_max_sync(active, v);
  atomicAdd(h, __floats2half2_rn(1.0f, 2.0f));
  atomicAdd(b, __float2bfloat16(1.0f));
  __nanosleep(100);
}
