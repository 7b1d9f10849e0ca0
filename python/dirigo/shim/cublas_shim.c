/* dirigo cuBLAS shim: LD_PRELOAD it (after the launch shim) to record cuBLAS / cuBLASLt calls.
 *
 * Interposes the cuBLAS entry points dirigo models (sgemm, strided/pointer-array batched sgemm, GemmEx,
 * GemmStridedBatchedEx, sgeam, sgemv, sger, saxpy, sscal, sdot, cublasLtMatmul) and a list of others it does
 * not model (recorded by name only, so dirigo can say UNSUPPORTED naming the function). While recording
 * is enabled (dirigo_cublas_set_enabled(1), done by dirigo.launch with the launch shim, off inside ATen
 * ops), each call appends one JSON line with every argument: handle state (pointer mode, math mode,
 * stream), transposes, sizes, leading dimensions, strides, alpha/beta by value (read from the device in
 * device pointer mode), device pointers as addresses (Python binds them to tensors), batched pointer
 * arrays read back from the device, and for cublasLtMatmul the matmul descriptor (transposes, epilogue,
 * bias, compute/scale type) and the four matrix layouts.
 *
 * Kernels cuBLAS launches are not user kernels: the launch shim's recording is switched off for the
 * duration of each call. The launch shim's pending records are moved into this log before each library
 * record, so Python reads one log in program order (this log, then the launch shim's rest).
 *
 * Plain C, no CUDA headers (the few enums are declared here), so it builds wherever `cc` exists.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim_log.h"

typedef int cublasStatus_t;
typedef void *cublasHandle_t;
typedef void *cublasLtHandle_t;
typedef void *cublasLtMatmulDesc_t;
typedef void *cublasLtMatrixLayout_t;
typedef int cublasOperation_t;
typedef int cudaDataType;
typedef int cublasComputeType_t;
typedef int cublasGemmAlgo_t;
typedef void *cudaStream_t;

enum { CUBLAS_STATUS_NOT_INITIALIZED = 1, CUBLAS_STATUS_NOT_SUPPORTED = 15 };
enum { MEMCPY_DEFAULT = 4 };
enum { CUDA_R_32F = 0, CUDA_R_64F = 1, CUDA_R_16F = 2, CUDA_R_16BF = 14 };
/* cublasLt attributes (cublasLt.h, CUDA 12/13) */
enum { LT_COMPUTE_TYPE = 0, LT_SCALE_TYPE = 1, LT_POINTER_MODE = 2, LT_TRANSA = 3, LT_TRANSB = 4, LT_EPILOGUE = 7,
       LT_BIAS_POINTER = 8, LT_BIAS_BATCH_STRIDE = 10, LT_BIAS_DATA_TYPE = 26 };
enum { LAYOUT_TYPE = 0, LAYOUT_ORDER = 1, LAYOUT_ROWS = 2, LAYOUT_COLS = 3, LAYOUT_LD = 4, LAYOUT_BATCH_COUNT = 5,
       LAYOUT_STRIDED_BATCH_OFFSET = 6 };

/* ---- the log */
static volatile int recording;
static __thread int depth; /* > 0 inside a cuBLAS call (cuBLAS calls cuBLASLt internally) */
static unsigned long calls_seen;

int dirigo_cublas_shim_version(void) { return 1; }
void dirigo_cublas_set_enabled(int on) { recording = on; }
unsigned long dirigo_cublas_calls_seen(void) { return calls_seen; }

/* Same contract as dirigo_shim_drain. */
size_t dirigo_cublas_drain(char *buf, size_t cap) { return log_drain(buf, cap); }

static void *find(const char *name, const char *const *libs) {
  void *p = dlsym(RTLD_NEXT, name);
  for (; !p && libs && *libs; ++libs) {
    void *h = dlopen(*libs, RTLD_NOW | RTLD_NOLOAD);
    if (h) p = dlsym(h, name);
  }
  return p;
}
static const char *const CUBLAS_LIBS[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so", NULL};
static const char *const LT_LIBS[] = {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so", NULL};
static const char *const RT_LIBS[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so", NULL};

/* ---- the launch shim: its log is moved into ours before each record; its recording is paused inside */
typedef size_t (*drain_fn)(char *, size_t);
typedef void (*set_enabled_fn)(int);

static void move_launch_records_locked(void) {
  static drain_fn launch_drain;
  if (!launch_drain) launch_drain = (drain_fn)dlsym(RTLD_DEFAULT, "dirigo_shim_drain");
  if (!launch_drain) return;
  size_t need = launch_drain(NULL, 0);
  if (need <= 1) return;
  char *tmp = malloc(need + 4096);
  if (!tmp) return;
  size_t n = launch_drain(tmp, need + 4096);
  if (n < need + 4096) log_append_locked(tmp, n);
  free(tmp);
}

static void pause_launches(int paused) {
  static set_enabled_fn set;
  if (!set) set = (set_enabled_fn)dlsym(RTLD_DEFAULT, "dirigo_shim_set_enabled");
  if (set) set(!paused);
}

typedef int (*memcpy_fn)(void *, const void *, size_t, int);
static int device_read(void *dst, const void *src, size_t n) {
  static memcpy_fn cpy;
  if (!cpy) cpy = (memcpy_fn)find("cudaMemcpy", RT_LIBS);
  if (!cpy) cpy = (memcpy_fn)dlsym(RTLD_DEFAULT, "cudaMemcpy");
  return cpy ? cpy(dst, src, n, MEMCPY_DEFAULT) : -1;
}

static const char *op_name(int op) { return op == 0 ? "N" : op == 1 ? "T" : op == 2 ? "C" : "?"; }

static void put_float(sbuf *b, double v) {
  if (v != v) put(b, "\"nan\"");
  else if (v > 1.7976931348623157e308) put(b, "\"inf\"");
  else if (v < -1.7976931348623157e308) put(b, "\"-inf\"");
  else put(b, "%.9g", v);
}
static void put_ptr(sbuf *b, const char *key, const void *p) {
  put(b, ",\"%s\":{\"ptr\":\"0x%llx\"}", key, (unsigned long long)(uintptr_t)p);
}

/* A matrix or vector: its pointer under `key`, then its leading dimension or increment under `ld_key`. */
static void put_operand(sbuf *b, const char *key, const void *p, const char *ld_key, int ld) {
  put_ptr(b, key, p);
  put(b, ",\"%s\":%d", ld_key, ld);
}

/* alpha/beta: by value in host pointer mode; in device mode the value is read back and the address kept
 * so Python can bind it to a tensor. `dtype` is the scalar's cudaDataType. */
static void put_scalar(sbuf *b, const char *key, const void *p, int device_mode, int dtype) {
  put(b, ",\"%s\":", key);
  if (!p) {
    put(b, "null");
    return;
  }
  double v = 0;
  int ok = 1;
  if (dtype == CUDA_R_32F || dtype == CUDA_R_64F) {
    if (dtype == CUDA_R_32F) {
      float f = 0;
      if (device_mode) ok = device_read(&f, p, sizeof f) == 0;
      else f = *(const float *)p;
      v = f;
    } else {
      double d = 0;
      if (device_mode) ok = device_read(&d, p, sizeof d) == 0;
      else d = *(const double *)p;
      v = d;
    }
  } else {
    ok = 0;
  }
  if (ok) put_float(b, v);
  else put(b, "null");
  if (device_mode) put_ptr(b, key[0] == 'a' ? "alpha_ptr" : "beta_ptr", p);
}

/* A device array of `count` device pointers, read back. */
static void put_ptr_array(sbuf *b, const char *key, const void *const *arr, int count) {
  put(b, ",\"%s\":{\"ptrs\":[", key);
  if (arr && count > 0 && count <= (1 << 20)) {
    void **host = malloc(sizeof(void *) * (size_t)count);
    if (host && device_read(host, arr, sizeof(void *) * (size_t)count) == 0)
      for (int i = 0; i < count; ++i) put(b, "%s\"0x%llx\"", i ? "," : "", (unsigned long long)(uintptr_t)host[i]);
    free(host);
  }
  put(b, "],\"array\":\"0x%llx\"}", (unsigned long long)(uintptr_t)arr);
}

typedef cublasStatus_t (*get_int_fn)(cublasHandle_t, int *);
typedef cublasStatus_t (*get_stream_fn)(cublasHandle_t, cudaStream_t *);

/* Starts a record; returns the handle's pointer mode (1 = device). */
static int begin(sbuf *b, const char *name, cublasHandle_t handle) {
  static get_int_fn get_pointer_mode, get_math_mode;
  static get_stream_fn get_stream;
  if (!get_pointer_mode) get_pointer_mode = (get_int_fn)find("cublasGetPointerMode_v2", CUBLAS_LIBS);
  if (!get_math_mode) get_math_mode = (get_int_fn)find("cublasGetMathMode", CUBLAS_LIBS);
  if (!get_stream) get_stream = (get_stream_fn)find("cublasGetStream_v2", CUBLAS_LIBS);
  int pm = 0, mm = 0;
  cudaStream_t st = 0;
  if (handle && get_pointer_mode) get_pointer_mode(handle, &pm);
  if (handle && get_math_mode) get_math_mode(handle, &mm);
  if (handle && get_stream) get_stream(handle, &st);
  put(b, "{\"library\":\"cublas\",\"name\":\"%s\",\"handle\":\"0x%llx\",\"args\":{\"pointer_mode\":\"%s\",\"math_mode\":%d,"
         "\"stream\":\"0x%llx\"",
      name, (unsigned long long)(uintptr_t)handle, pm ? "device" : "host", mm, (unsigned long long)(uintptr_t)st);
  return pm;
}

static void finish(sbuf *b, const char *writes) {
  put(b, "},\"writes\":[%s]}\n", writes);
  pthread_mutex_lock(&log_lock);
  move_launch_records_locked();
  if (!b->failed && b->s) log_append_locked(b->s, b->n);
  pthread_mutex_unlock(&log_lock);
  free(b->s);
}

/* Starts the record of a gemm: begin's, then the transposes, the sizes m, n, k and alpha (of type
 * scale_type); returns the handle's pointer mode. */
static int begin_gemm(sbuf *b, const char *name, cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                      int n, int k, const void *alpha, int scale_type) {
  int dev = begin(b, name, h);
  put(b, ",\"transa\":\"%s\",\"transb\":\"%s\",\"m\":%d,\"n\":%d,\"k\":%d", op_name(ta), op_name(tb), m, n, k);
  put_scalar(b, "alpha", alpha, dev, scale_type);
  return dev;
}

/* Starts the record of a level-1 call that scales by alpha (axpy, scal): begin's, then n and alpha;
 * returns the handle's pointer mode. */
static int begin_scaled_vector(sbuf *b, const char *name, cublasHandle_t h, int n, const void *alpha) {
  int dev = begin(b, name, h);
  put(b, ",\"n\":%d", n);
  put_scalar(b, "alpha", alpha, dev, CUDA_R_32F);
  return dev;
}

/* Every interposed function: record (outermost call, recording on), pause launch capture, forward. */
#define ENTER()                                     \
  int record_this = recording && depth == 0;        \
  __sync_fetch_and_add(&calls_seen, 1);             \
  ++depth;                                          \
  if (record_this) pause_launches(1);
#define LEAVE()                                     \
  --depth;                                          \
  if (record_this) pause_launches(0);

#define REAL(TYPE, NAME, LIBS)                      \
  static TYPE real;                                 \
  if (!real) real = (TYPE)find(NAME, LIBS);         \
  if (!real) return CUBLAS_STATUS_NOT_INITIALIZED;
/* The start of every recorded function: its real implementation, then ENTER. */
#define INTERPOSE(TYPE, NAME, LIBS)                 \
  REAL(TYPE, NAME, LIBS);                           \
  ENTER();

/* ---- level 3 */
typedef cublasStatus_t (*sgemm_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const float *,
                                   const float *, int, const float *, int, const float *, float *, int);
cublasStatus_t cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                              const float *alpha, const float *A, int lda, const float *B, int ldb, const float *beta,
                              float *C, int ldc) {
  INTERPOSE(sgemm_fn, "cublasSgemm_v2", CUBLAS_LIBS);
  if (record_this) {
    sbuf b = {0};
    int dev = begin_gemm(&b, "cublasSgemm_v2", h, ta, tb, m, n, k, alpha, CUDA_R_32F);
    put_operand(&b, "A", A, "lda", lda);
    put_operand(&b, "B", B, "ldb", ldb);
    put_scalar(&b, "beta", beta, dev, CUDA_R_32F);
    put_operand(&b, "C", C, "ldc", ldc);
    finish(&b, "\"C\"");
  }
  cublasStatus_t s = real(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
  LEAVE();
  return s;
}

typedef cublasStatus_t (*sgemm_sb_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                      const float *, const float *, int, long long, const float *, int, long long,
                                      const float *, float *, int, long long, int);
cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const float *alpha, const float *A, int lda, long long sa,
                                         const float *B, int ldb, long long sb, const float *beta, float *C, int ldc,
                                         long long sc, int batch) {
  INTERPOSE(sgemm_sb_fn, "cublasSgemmStridedBatched", CUBLAS_LIBS);
  if (record_this) {
    sbuf b = {0};
    int dev = begin_gemm(&b, "cublasSgemmStridedBatched", h, ta, tb, m, n, k, alpha, CUDA_R_32F);
    put_ptr(&b, "A", A);
    put(&b, ",\"lda\":%d,\"strideA\":%lld", lda, sa);
    put_ptr(&b, "B", B);
    put(&b, ",\"ldb\":%d,\"strideB\":%lld", ldb, sb);
    put_scalar(&b, "beta", beta, dev, CUDA_R_32F);
    put_ptr(&b, "C", C);
    put(&b, ",\"ldc\":%d,\"strideC\":%lld,\"batchCount\":%d", ldc, sc, batch);
    finish(&b, "\"C\"");
  }
  cublasStatus_t s = real(h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch);
  LEAVE();
  return s;
}

typedef cublasStatus_t (*sgemm_b_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                     const float *, const float *const[], int, const float *const[], int,
                                     const float *, float *const[], int, int);
cublasStatus_t cublasSgemmBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                  const float *alpha, const float *const A[], int lda, const float *const B[], int ldb,
                                  const float *beta, float *const C[], int ldc, int batch) {
  INTERPOSE(sgemm_b_fn, "cublasSgemmBatched", CUBLAS_LIBS);
  if (record_this) {
    sbuf b = {0};
    int dev = begin_gemm(&b, "cublasSgemmBatched", h, ta, tb, m, n, k, alpha, CUDA_R_32F);
    put_ptr_array(&b, "A", (const void *const *)A, batch);
    put(&b, ",\"lda\":%d", lda);
    put_ptr_array(&b, "B", (const void *const *)B, batch);
    put(&b, ",\"ldb\":%d", ldb);
    put_scalar(&b, "beta", beta, dev, CUDA_R_32F);
    put_ptr_array(&b, "C", (const void *const *)C, batch);
    put(&b, ",\"ldc\":%d,\"batchCount\":%d", ldc, batch);
    finish(&b, "\"C\"");
  }
  cublasStatus_t s = real(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, batch);
  LEAVE();
  return s;
}

/* GemmEx alpha/beta have the compute type's scale type: float for the 32F compute types. */
static int scale_type_of(cublasComputeType_t ct) {
  switch (ct) {
    case 68: case 69: case 74: case 75: case 77: case 78: return CUDA_R_32F;
    case 70: case 71: case 79: return CUDA_R_64F;
    default: return -1;
  }
}

typedef cublasStatus_t (*gemmex_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void *,
                                    const void *, cudaDataType, int, const void *, cudaDataType, int, const void *,
                                    void *, cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const void *alpha, const void *A, cudaDataType at, int lda, const void *B, cudaDataType bt,
                            int ldb, const void *beta, void *C, cudaDataType ct, int ldc, cublasComputeType_t comp,
                            cublasGemmAlgo_t algo) {
  INTERPOSE(gemmex_fn, "cublasGemmEx", CUBLAS_LIBS);
  if (record_this) {
    sbuf b = {0};
    int dev = begin_gemm(&b, "cublasGemmEx", h, ta, tb, m, n, k, alpha, scale_type_of(comp));
    put_ptr(&b, "A", A);
    put(&b, ",\"Atype\":%d,\"lda\":%d", at, lda);
    put_ptr(&b, "B", B);
    put(&b, ",\"Btype\":%d,\"ldb\":%d", bt, ldb);
    put_scalar(&b, "beta", beta, dev, scale_type_of(comp));
    put_ptr(&b, "C", C);
    put(&b, ",\"Ctype\":%d,\"ldc\":%d,\"computeType\":%d,\"algo\":%d", ct, ldc, comp, algo);
    finish(&b, "\"C\"");
  }
  cublasStatus_t s = real(h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc, comp, algo);
  LEAVE();
  return s;
}

typedef cublasStatus_t (*gemmsbex_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                      const void *, const void *, cudaDataType, int, long long, const void *,
                                      cudaDataType, int, long long, const void *, void *, cudaDataType, int, long long,
                                      int, cublasComputeType_t, cublasGemmAlgo_t);
cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                          int k, const void *alpha, const void *A, cudaDataType at, int lda,
                                          long long sa, const void *B, cudaDataType bt, int ldb, long long sb,
                                          const void *beta, void *C, cudaDataType ct, int ldc, long long sc, int batch,
                                          cublasComputeType_t comp, cublasGemmAlgo_t algo) {
  INTERPOSE(gemmsbex_fn, "cublasGemmStridedBatchedEx", CUBLAS_LIBS);
  if (record_this) {
    sbuf b = {0};
    int dev = begin_gemm(&b, "cublasGemmStridedBatchedEx", h, ta, tb, m, n, k, alpha, scale_type_of(comp));
    put_ptr(&b, "A", A);
    put(&b, ",\"Atype\":%d,\"lda\":%d,\"strideA\":%lld", at, lda, sa);
    put_ptr(&b, "B", B);
    put(&b, ",\"Btype\":%d,\"ldb\":%d,\"strideB\":%lld", bt, ldb, sb);
    put_scalar(&b, "beta", beta, dev, scale_type_of(comp));
    put_ptr(&b, "C", C);
    put(&b, ",\"Ctype\":%d,\"ldc\":%d,\"strideC\":%lld,\"batchCount\":%d,\"computeType\":%d,\"algo\":%d", ct, ldc, sc,
        batch, comp, algo);
    finish(&b, "\"C\"");
  }
  cublasStatus_t s = real(h, ta, tb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb, sb, beta, C, ct, ldc, sc, batch, comp, algo);
  LEAVE();
  return s;
}

typedef cublasStatus_t (*sgeam_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, const float *,
                                   const float *, int, const float *, const float *, int, float *, int);
cublasStatus_t cublasSgeam(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                           const float *alpha, const float *A, int lda, const float *beta, const float *B, int ldb,
                           float *C, int ldc) {
  INTERPOSE(sgeam_fn, "cublasSgeam", CUBLAS_LIBS);
  if (record_this) {
    sbuf b = {0};
    int dev = begin(&b, "cublasSgeam", h);
    put(&b, ",\"transa\":\"%s\",\"transb\":\"%s\",\"m\":%d,\"n\":%d", op_name(ta), op_name(tb), m, n);
    put_scalar(&b, "alpha", alpha, dev, CUDA_R_32F);
    put_operand(&b, "A", A, "lda", lda);
    put_scalar(&b, "beta", beta, dev, CUDA_R_32F);
    put_operand(&b, "B", B, "ldb", ldb);
    put_operand(&b, "C", C, "ldc", ldc);
    finish(&b, "\"C\"");
  }
  cublasStatus_t s = real(h, ta, tb, m, n, alpha, A, lda, beta, B, ldb, C, ldc);
  LEAVE();
  return s;
}

/* ---- level 2 / 1 */
typedef cublasStatus_t (*sgemv_fn)(cublasHandle_t, cublasOperation_t, int, int, const float *, const float *, int,
                                   const float *, int, const float *, float *, int);
cublasStatus_t cublasSgemv_v2(cublasHandle_t h, cublasOperation_t t, int m, int n, const float *alpha, const float *A,
                              int lda, const float *x, int incx, const float *beta, float *y, int incy) {
  INTERPOSE(sgemv_fn, "cublasSgemv_v2", CUBLAS_LIBS);
  if (record_this) {
    sbuf b = {0};
    int dev = begin(&b, "cublasSgemv_v2", h);
    put(&b, ",\"trans\":\"%s\",\"m\":%d,\"n\":%d", op_name(t), m, n);
    put_scalar(&b, "alpha", alpha, dev, CUDA_R_32F);
    put_operand(&b, "A", A, "lda", lda);
    put_operand(&b, "x", x, "incx", incx);
    put_scalar(&b, "beta", beta, dev, CUDA_R_32F);
    put_operand(&b, "y", y, "incy", incy);
    finish(&b, "\"y\"");
  }
  cublasStatus_t s = real(h, t, m, n, alpha, A, lda, x, incx, beta, y, incy);
  LEAVE();
  return s;
}

typedef cublasStatus_t (*sger_fn)(cublasHandle_t, int, int, const float *, const float *, int, const float *, int,
                                  float *, int);
cublasStatus_t cublasSger_v2(cublasHandle_t h, int m, int n, const float *alpha, const float *x, int incx,
                             const float *y, int incy, float *A, int lda) {
  INTERPOSE(sger_fn, "cublasSger_v2", CUBLAS_LIBS);
  if (record_this) {
    sbuf b = {0};
    int dev = begin(&b, "cublasSger_v2", h);
    put(&b, ",\"m\":%d,\"n\":%d", m, n);
    put_scalar(&b, "alpha", alpha, dev, CUDA_R_32F);
    put_operand(&b, "x", x, "incx", incx);
    put_operand(&b, "y", y, "incy", incy);
    put_operand(&b, "A", A, "lda", lda);
    finish(&b, "\"A\"");
  }
  cublasStatus_t s = real(h, m, n, alpha, x, incx, y, incy, A, lda);
  LEAVE();
  return s;
}

typedef cublasStatus_t (*saxpy_fn)(cublasHandle_t, int, const float *, const float *, int, float *, int);
cublasStatus_t cublasSaxpy_v2(cublasHandle_t h, int n, const float *alpha, const float *x, int incx, float *y,
                              int incy) {
  INTERPOSE(saxpy_fn, "cublasSaxpy_v2", CUBLAS_LIBS);
  if (record_this) {
    sbuf b = {0};
    begin_scaled_vector(&b, "cublasSaxpy_v2", h, n, alpha);
    put_operand(&b, "x", x, "incx", incx);
    put_operand(&b, "y", y, "incy", incy);
    finish(&b, "\"y\"");
  }
  cublasStatus_t s = real(h, n, alpha, x, incx, y, incy);
  LEAVE();
  return s;
}

typedef cublasStatus_t (*sscal_fn)(cublasHandle_t, int, const float *, float *, int);
cublasStatus_t cublasSscal_v2(cublasHandle_t h, int n, const float *alpha, float *x, int incx) {
  INTERPOSE(sscal_fn, "cublasSscal_v2", CUBLAS_LIBS);
  if (record_this) {
    sbuf b = {0};
    begin_scaled_vector(&b, "cublasSscal_v2", h, n, alpha);
    put_operand(&b, "x", x, "incx", incx);
    finish(&b, "\"x\"");
  }
  cublasStatus_t s = real(h, n, alpha, x, incx);
  LEAVE();
  return s;
}

typedef cublasStatus_t (*sdot_fn)(cublasHandle_t, int, const float *, int, const float *, int, float *);
cublasStatus_t cublasSdot_v2(cublasHandle_t h, int n, const float *x, int incx, const float *y, int incy,
                             float *result) {
  INTERPOSE(sdot_fn, "cublasSdot_v2", CUBLAS_LIBS);
  sbuf b = {0};
  int dev = 0;
  if (record_this) {
    dev = begin(&b, "cublasSdot_v2", h);
    put(&b, ",\"n\":%d", n);
    put_operand(&b, "x", x, "incx", incx);
    put_operand(&b, "y", y, "incy", incy);
  }
  cublasStatus_t s = real(h, n, x, incx, y, incy, result);
  if (record_this) {
    /* host mode: the result lands in host memory (no tensor); device mode: in a tensor Python binds */
    if (dev) put_ptr(&b, "result", result);
    else if (result) {
      put(&b, ",\"result_host\":");
      put_float(&b, *result);
    }
    finish(&b, dev ? "\"result\"" : "");
  }
  LEAVE();
  return s;
}

/* ---- cuBLASLt */
typedef cublasStatus_t (*desc_get_fn)(void *, int, void *, size_t, size_t *);

/* One attribute of a cuBLASLt descriptor and where it goes. */
typedef struct {
  int id;
  void *dst;
  size_t size;
} attr;
#define ATTR(ID, VAR) {ID, &(VAR), sizeof(VAR)}

/* Reads the attributes `want` of the descriptor `obj` with the getter named `getter` (found once, into
 * *get); leaves them as they are when there is no getter or no descriptor. */
static void get_attrs(desc_get_fn *get, const char *getter, void *obj, const attr *want, size_t n) {
  if (!*get) *get = (desc_get_fn)find(getter, LT_LIBS);
  size_t w;
  if (*get && obj)
    for (size_t i = 0; i < n; ++i) (*get)(obj, want[i].id, want[i].dst, want[i].size, &w);
}

static void put_layout(sbuf *b, const char *key, cublasLtMatrixLayout_t l) {
  static desc_get_fn get;
  uint32_t type = 0;
  int32_t order = 0, batch = 1;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0, stride = 0;
  const attr want[] = {ATTR(LAYOUT_TYPE, type), ATTR(LAYOUT_ORDER, order), ATTR(LAYOUT_ROWS, rows),
                       ATTR(LAYOUT_COLS, cols), ATTR(LAYOUT_LD, ld), ATTR(LAYOUT_BATCH_COUNT, batch),
                       ATTR(LAYOUT_STRIDED_BATCH_OFFSET, stride)};
  get_attrs(&get, "cublasLtMatrixLayoutGetAttribute", l, want, sizeof want / sizeof *want);
  put(b, ",\"%s\":{\"type\":%u,\"order\":%d,\"rows\":%llu,\"cols\":%llu,\"ld\":%lld,\"batch\":%d,\"stride\":%lld}", key,
      type, order, (unsigned long long)rows, (unsigned long long)cols, (long long)ld, batch, (long long)stride);
}

typedef cublasStatus_t (*ltmatmul_fn)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void *, const void *,
                                      cublasLtMatrixLayout_t, const void *, cublasLtMatrixLayout_t, const void *,
                                      const void *, cublasLtMatrixLayout_t, void *, cublasLtMatrixLayout_t,
                                      const void *, void *, size_t, cudaStream_t);
cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t desc, const void *alpha, const void *A,
                              cublasLtMatrixLayout_t Ad, const void *B, cublasLtMatrixLayout_t Bd, const void *beta,
                              const void *C, cublasLtMatrixLayout_t Cd, void *D, cublasLtMatrixLayout_t Dd,
                              const void *algo, void *ws, size_t wss, cudaStream_t stream) {
  INTERPOSE(ltmatmul_fn, "cublasLtMatmul", LT_LIBS);
  if (record_this) {
    static desc_get_fn get;
    int32_t compute = 0, scale = 0, pm = 0, ta = 0, tb = 0, bias_type = -1;
    uint32_t epi = 1;
    const void *bias = NULL;
    int64_t bias_stride = 0;
    const attr want[] = {ATTR(LT_COMPUTE_TYPE, compute), ATTR(LT_SCALE_TYPE, scale), ATTR(LT_POINTER_MODE, pm),
                         ATTR(LT_TRANSA, ta), ATTR(LT_TRANSB, tb), ATTR(LT_EPILOGUE, epi),
                         ATTR(LT_BIAS_POINTER, bias), ATTR(LT_BIAS_BATCH_STRIDE, bias_stride),
                         ATTR(LT_BIAS_DATA_TYPE, bias_type)};
    get_attrs(&get, "cublasLtMatmulDescGetAttribute", desc, want, sizeof want / sizeof *want);
    sbuf b = {0};
    put(&b, "{\"library\":\"cublas\",\"name\":\"cublasLtMatmul\",\"handle\":\"0x%llx\",\"args\":{\"pointer_mode\":\"%s\","
            "\"lt_pointer_mode\":%d,\"stream\":\"0x%llx\"",
        (unsigned long long)(uintptr_t)h, pm == 1 ? "device" : "host", pm, (unsigned long long)(uintptr_t)stream);
    put(&b, ",\"transa\":\"%s\",\"transb\":\"%s\",\"computeType\":%d,\"scaleType\":%d,\"epilogue\":%u,"
            "\"bias_dtype\":%d,\"bias_batch_stride\":%lld",
        op_name(ta), op_name(tb), compute, scale, epi, bias_type, (long long)bias_stride);
    put_scalar(&b, "alpha", alpha, pm == 1, pm == 0 || pm == 1 ? scale : -1);
    put_scalar(&b, "beta", beta, pm == 1, pm == 0 || pm == 1 ? scale : -1);
    put_ptr(&b, "A", A);
    put_layout(&b, "Adesc", Ad);
    put_ptr(&b, "B", B);
    put_layout(&b, "Bdesc", Bd);
    put_ptr(&b, "C", C);
    put_layout(&b, "Cdesc", Cd);
    put_ptr(&b, "D", D);
    put_layout(&b, "Ddesc", Dd);
    if (bias) put_ptr(&b, "bias", bias);
    finish(&b, "\"D\"");
  }
  cublasStatus_t s = real(h, desc, alpha, A, Ad, B, Bd, beta, C, Cd, D, Dd, algo, ws, wss, stream);
  LEAVE();
  return s;
}

/* ---- entry points dirigo does not model: recorded by name, forwarded unchanged. cuBLAS passes every
 * argument as an integer or pointer (scalars by pointer), so forwarding 16 integer-class words is
 * exact for all of them under the x86-64 and AArch64 calling conventions (extra words are ignored). */
typedef long word;
typedef cublasStatus_t (*generic_fn)(word, word, word, word, word, word, word, word, word, word, word, word, word,
                                     word, word, word);
static void record_unmodeled(const char *name, word handle) {
  sbuf b = {0};
  put(&b, "{\"library\":\"cublas\",\"name\":\"%s\",\"handle\":\"0x%llx\",\"args\":{\"modeled\":false", name,
      (unsigned long long)handle);
  finish(&b, "");
}
#define UNMODELED(NAME, LIBS)                                                                                 \
  cublasStatus_t NAME(word a0, word a1, word a2, word a3, word a4, word a5, word a6, word a7, word a8, word a9, \
                      word a10, word a11, word a12, word a13, word a14, word a15) {                           \
    INTERPOSE(generic_fn, #NAME, LIBS);                                                                       \
    if (record_this) record_unmodeled(#NAME, a0);                                                             \
    cublasStatus_t s = real(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15);            \
    LEAVE();                                                                                                  \
    return s;                                                                                                 \
  }

UNMODELED(cublasDgemm_v2, CUBLAS_LIBS)
UNMODELED(cublasHgemm, CUBLAS_LIBS)
UNMODELED(cublasSgemmEx, CUBLAS_LIBS)
UNMODELED(cublasGemmBatchedEx, CUBLAS_LIBS)
UNMODELED(cublasHgemmStridedBatched, CUBLAS_LIBS)
UNMODELED(cublasDgemmStridedBatched, CUBLAS_LIBS)
UNMODELED(cublasHgemmBatched, CUBLAS_LIBS)
UNMODELED(cublasDgemmBatched, CUBLAS_LIBS)
UNMODELED(cublasSgemm_v2_64, CUBLAS_LIBS)
UNMODELED(cublasSgemmStridedBatched_64, CUBLAS_LIBS)
UNMODELED(cublasGemmEx_64, CUBLAS_LIBS)
UNMODELED(cublasSgemv_v2_64, CUBLAS_LIBS)
UNMODELED(cublasSgemvBatched, CUBLAS_LIBS)
UNMODELED(cublasSgemvStridedBatched, CUBLAS_LIBS)
UNMODELED(cublasDgemv_v2, CUBLAS_LIBS)
UNMODELED(cublasSsymm_v2, CUBLAS_LIBS)
UNMODELED(cublasSsyrk_v2, CUBLAS_LIBS)
UNMODELED(cublasStrsm_v2, CUBLAS_LIBS)
UNMODELED(cublasStrmm_v2, CUBLAS_LIBS)
UNMODELED(cublasSdgmm, CUBLAS_LIBS)
UNMODELED(cublasScopy_v2, CUBLAS_LIBS)
UNMODELED(cublasSswap_v2, CUBLAS_LIBS)
UNMODELED(cublasSnrm2_v2, CUBLAS_LIBS)
UNMODELED(cublasSasum_v2, CUBLAS_LIBS)
UNMODELED(cublasIsamax_v2, CUBLAS_LIBS)
UNMODELED(cublasDaxpy_v2, CUBLAS_LIBS)
UNMODELED(cublasDscal_v2, CUBLAS_LIBS)
UNMODELED(cublasDdot_v2, CUBLAS_LIBS)
UNMODELED(cublasDgeam, CUBLAS_LIBS)
UNMODELED(cublasLtMatrixTransform, LT_LIBS)

/* ---- set-up entry points: not computation, not recorded; launch capture is paused inside them too, in
 * case they launch internal kernels (programs often create and destroy a handle inside forward). */
#define SETUP(NAME, LIBS)                                                                                     \
  cublasStatus_t NAME(word a0, word a1, word a2, word a3, word a4, word a5, word a6, word a7, word a8, word a9, \
                      word a10, word a11, word a12, word a13, word a14, word a15) {                           \
    REAL(generic_fn, #NAME, LIBS);                                                                            \
    int paused = recording && depth == 0;                                                                     \
    ++depth;                                                                                                  \
    if (paused) pause_launches(1);                                                                            \
    cublasStatus_t s = real(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15);            \
    --depth;                                                                                                  \
    if (paused) pause_launches(0);                                                                            \
    return s;                                                                                                 \
  }

SETUP(cublasCreate_v2, CUBLAS_LIBS)
SETUP(cublasDestroy_v2, CUBLAS_LIBS)
SETUP(cublasSetStream_v2, CUBLAS_LIBS)
SETUP(cublasSetWorkspace_v2, CUBLAS_LIBS)
SETUP(cublasSetMathMode, CUBLAS_LIBS)
SETUP(cublasSetPointerMode_v2, CUBLAS_LIBS)
SETUP(cublasLtCreate, LT_LIBS)
SETUP(cublasLtDestroy, LT_LIBS)
