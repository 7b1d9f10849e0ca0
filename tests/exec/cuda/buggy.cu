// Kernels with one CUDA programming-model violation each (written for dirigo's tests).

// no bounds check: threads past n read and write outside the tensors
extern "C" __global__ void vadd_oob(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  c[i] = a[i] + b[i];
}

// missing __syncthreads() inside the reduction loop
extern "C" __global__ void tree_reduce_race(const float* x, float* out) {
  __shared__ float sdata[256];
  unsigned tid = threadIdx.x;
  sdata[tid] = x[blockIdx.x * blockDim.x + tid];
  __syncthreads();
  for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
    if (tid < k) sdata[tid] += sdata[tid + k];
  }
  if (tid == 0) out[blockIdx.x] = sdata[0];
}

// reads a shared slot that no thread wrote (the second half of the array)
extern "C" __global__ void uninit_shared(const float* x, float* out) {
  __shared__ float sdata[512];
  unsigned tid = threadIdx.x;
  sdata[tid] = x[tid];
  __syncthreads();
  out[tid] = sdata[tid] + sdata[tid + blockDim.x];
}

// threads of one block wait at different barriers
extern "C" __global__ void divergent_barrier(const float* x, float* out) {
  __shared__ float s[128];
  unsigned tid = threadIdx.x;
  s[tid] = x[tid];
  if (tid < 32) {
    __syncthreads();
    out[tid] = s[tid + 32];
  } else {
    __syncthreads();
    out[tid] = s[tid - 32];
  }
}

// full-mask shuffle executed by half a warp
extern "C" __global__ void shuffle_partial(const float* x, float* out) {
  float v = x[threadIdx.x];
  if ((threadIdx.x & 31) < 16) v += __shfl_down_sync(0xffffffff, v, 8);
  out[threadIdx.x] = v;
}

// block of 48 threads: the second warp is partial, the full mask names lanes outside the block
extern "C" __global__ void shuffle_outside(const float* x, float* out) {
  float v = x[threadIdx.x];
  v += __shfl_xor_sync(0xffffffff, v, 1);
  out[threadIdx.x] = v;
}

// lanes 16..31 exit; lanes 8..15 read exited lanes: an undefined value reaches the store
extern "C" __global__ void shuffle_exited(const float* x, float* out) {
  if (threadIdx.x >= 16) return;
  float v = x[threadIdx.x];
  v += __shfl_down_sync(0x0000ffff, v, 8);
  out[threadIdx.x] = v;
}

// warp-synchronous reduction without __syncwarp: races since Volta
extern "C" __global__ void warp_sync_missing(const float* x, float* out) {
  volatile __shared__ float s[64];
  unsigned tid = threadIdx.x;
  s[tid] = x[tid] + x[tid + 32];
  if (tid < 16) {
    s[tid] += s[tid + 16];
    s[tid] += s[tid + 8];
  }
  if (tid == 0) out[0] = s[0];
}

// the same with __syncwarp between the steps: correct
extern "C" __global__ void warp_sync_ok(const float* x, float* out) {
  __shared__ float s[64];
  unsigned tid = threadIdx.x;
  s[tid] = x[tid] + x[tid + 32];
  __syncwarp();
  float v = s[tid];
  if (tid < 16) v += s[tid + 16];
  __syncwarp();
  s[tid] = v;
  __syncwarp();
  if (tid == 0) out[0] = s[0] + s[8];
}

// data-dependent control flow: the loop trip count depends on the input
extern "C" __global__ void data_loop(const float* x, float* out) {
  float v = x[threadIdx.x];
  int k = 0;
  while (v > 1.0f && k < 100) { v *= 0.5f; ++k; }
  out[threadIdx.x] = v;
}

// shared-memory index past the array end for the last warp
extern "C" __global__ void shared_oob(const float* x, float* out) {
  __shared__ float s[64];
  s[threadIdx.x] = x[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = s[threadIdx.x];
}
