/* dirigo launch shim: LD_PRELOAD it into a process to record CUDA kernel launches.
 *
 * Interposes cudaLaunchKernel (and its _ptsz / ExC variants) and __cudaLaunchKernel (what CUDA 13's
 * <<<...>>> host stubs call, with a cudaKernel_t handle). While recording is enabled
 * (dirigo_shim_set_enabled(1), done by dirigo.launch around code that is not inside an ATen op), each
 * launch appends one JSON line to an in-memory log: the kernel's mangled name, grid, block, dynamic
 * shared memory, stream, and the raw bytes of every parameter (offsets and sizes from
 * cuFuncGetParamInfo, CUDA 12.4+). Python drains the log with dirigo_shim_drain() and binds pointer
 * parameters to tensors by address range. Launches always go through to the real runtime.
 *
 * Plain C, no CUDA headers: the few types needed are declared here, the real functions found with
 * dlsym at first use, so the shim builds on machines without a toolkit.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim_log.h"

typedef int cudaError_t;
typedef int CUresult;
typedef void *cudaStream_t;
typedef void *CUfunction;
typedef struct { unsigned int x, y, z; } dim3;
typedef struct {
  dim3 gridDim;
  dim3 blockDim;
  size_t dynamicSmemBytes;
  cudaStream_t stream;
  void *attrs;
  unsigned int numAttrs;
} cudaLaunchConfig_t;

typedef cudaError_t (*launch_fn)(const void *, dim3, dim3, void **, size_t, cudaStream_t);
typedef cudaError_t (*launch_exc_fn)(const cudaLaunchConfig_t *, const void *, void **);
typedef cudaError_t (*get_func_fn)(CUfunction *, const void *);
typedef CUresult (*func_name_fn)(const char **, CUfunction);
typedef CUresult (*param_info_fn)(CUfunction, size_t, size_t *, size_t *);

/* A kernel's parameters fit in 32764 bytes, so no real kernel has more entries than this. */
#define MAX_PARAMS 32768

static volatile int recording;
static unsigned long launches_seen;

int dirigo_shim_version(void) { return 1; }
void dirigo_shim_set_enabled(int on) { recording = on; }
unsigned long dirigo_shim_launches_seen(void) { return launches_seen; }

/* Copies the log into buf and clears it when it fits; otherwise returns the size needed (shim_log.h). */
size_t dirigo_shim_drain(char *buf, size_t cap) { return log_drain(buf, cap); }

static void *find(const char *name, const char *lib) {
  void *p = dlsym(RTLD_NEXT, name);
  if (!p) p = dlsym(RTLD_DEFAULT, name);
  if (!p && lib) {
    void *h = dlopen(lib, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
    if (!h) h = dlopen(lib, RTLD_NOW | RTLD_GLOBAL);
    if (h) p = dlsym(h, name);
  }
  return p;
}

/* A C string as the inside of a JSON string: quotes, backslashes and control bytes escaped; bytes >= 0x80
 * pass through (Python decodes the log with errors="replace"). */
static void put_json_string(sbuf *b, const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; ++p) {
    if (*p == '"' || *p == '\\') put(b, "\\%c", *p);
    else if (*p < 0x20) put(b, "\\u%04x", *p);
    else put(b, "%c", *p);
  }
}

/* The stream's creation flags (cudaStreamNonBlocking = 1), -1 where they cannot be asked: dirigo.streams
 * takes an unknown stream as blocking (it then synchronizes with the legacy default stream). */
typedef cudaError_t (*stream_flags_fn)(cudaStream_t, unsigned int *);
static int stream_flags(cudaStream_t stream) {
  static stream_flags_fn get;
  if ((uintptr_t)stream <= 2) return 0; /* the legacy and per-thread default streams */
  if (!get) get = (stream_flags_fn)find("cudaStreamGetFlags", NULL);
  unsigned int flags = 0;
  return get && get(stream, &flags) == 0 ? (int)flags : -1;
}

/* `func` is a host stub (cudaLaunchKernel) or, when is_kernel, a CUkernel handle (__cudaLaunchKernel, what
 * CUDA 13 host stubs call for <<<...>>>). Name and parameter layout come from the driver. */
static void record(const void *func, int is_kernel, dim3 grid, dim3 block, size_t shared, cudaStream_t stream,
                   void **args) {
  static get_func_fn get_func;
  static func_name_fn func_name, kernel_name;
  static param_info_fn func_param_info, kernel_param_info;
  if (!get_func) get_func = (get_func_fn)find("cudaGetFuncBySymbol", NULL);
  if (!func_name) func_name = (func_name_fn)find("cuFuncGetName", "libcuda.so.1");
  if (!func_param_info) func_param_info = (param_info_fn)find("cuFuncGetParamInfo", "libcuda.so.1");
  if (!kernel_name) kernel_name = (func_name_fn)find("cuKernelGetName", "libcuda.so.1");
  if (!kernel_param_info) kernel_param_info = (param_info_fn)find("cuKernelGetParamInfo", "libcuda.so.1");
  CUfunction f = NULL;
  const char *name = NULL;
  param_info_fn param_info;
  if (is_kernel) {
    f = (CUfunction)func;
    if (kernel_name) kernel_name(&name, f);
    param_info = kernel_param_info;
  } else {
    if (get_func && get_func(&f, func) == 0 && func_name) func_name(&name, f);
    param_info = func_param_info;
  }
  /* The whole record is built in a growing buffer first (kernel names of templates run to kilobytes),
   * then appended under the lock in one piece: an allocation failure drops the record, never half of it. */
  sbuf b = {0};
  put(&b, "{\"kernel\":\"");
  put_json_string(&b, name ? name : "");
  put(&b, "\",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],\"shared\":%zu,\"stream\":\"0x%llx\",\"stream_flags\":%d,"
      "\"host_func\":\"0x%llx\",\"params\":", grid.x, grid.y, grid.z, block.x, block.y, block.z, shared,
      (unsigned long long)(uintptr_t)stream, stream_flags(stream), (unsigned long long)(uintptr_t)func);
  if (!f || !param_info || !args) {
    put(&b, "null}\n");
  } else {
    put(&b, "[");
    for (size_t i = 0; i < MAX_PARAMS; ++i) {
      size_t off = 0, size = 0;
      if (param_info(f, i, &off, &size) != 0) break;
      put(&b, "%s[%zu,%zu,\"", i ? "," : "", off, size);
      const unsigned char *bytes = (const unsigned char *)args[i];
      for (size_t k = 0; bytes && k < size; ++k) put(&b, "%02x", bytes[k]);
      put(&b, "\"]");
    }
    put(&b, "]}\n");
  }
  log_record(&b);
}

#define INTERPOSE_LAUNCH(SYM)                                                                         \
  cudaError_t SYM(const void *func, dim3 grid, dim3 block, void **args, size_t shared,                \
                  cudaStream_t stream) {                                                              \
    static launch_fn real;                                                                            \
    if (!real) real = (launch_fn)dlsym(RTLD_NEXT, #SYM);                                              \
    __sync_fetch_and_add(&launches_seen, 1);                                                          \
    if (recording) record(func, IS_KERNEL, grid, block, shared, stream, args);                        \
    return real ? real(func, grid, block, args, shared, stream) : 1 /* cudaErrorInvalidValue */;      \
  }

#define IS_KERNEL 0
INTERPOSE_LAUNCH(cudaLaunchKernel)
INTERPOSE_LAUNCH(cudaLaunchKernel_ptsz)
#undef IS_KERNEL
#define IS_KERNEL 1 /* CUDA 13 host stubs: __cudaLaunchKernel(cudaKernel_t, ...) */
INTERPOSE_LAUNCH(__cudaLaunchKernel)
INTERPOSE_LAUNCH(__cudaLaunchKernel_ptsz)
#undef IS_KERNEL

#define INTERPOSE_LAUNCH_EXC(SYM)                                                                     \
  cudaError_t SYM(const cudaLaunchConfig_t *config, const void *func, void **args) {                  \
    static launch_exc_fn real;                                                                        \
    if (!real) real = (launch_exc_fn)dlsym(RTLD_NEXT, #SYM);                                          \
    __sync_fetch_and_add(&launches_seen, 1);                                                          \
    if (recording && config)                                                                          \
      record(func, 0, config->gridDim, config->blockDim, config->dynamicSmemBytes, config->stream, args); \
    return real ? real(config, func, args) : 1;                                                       \
  }

INTERPOSE_LAUNCH_EXC(cudaLaunchKernelExC)
INTERPOSE_LAUNCH_EXC(cudaLaunchKernelExC_ptsz)

/* ---- the calls that order streams: one "sync" record each (dirigo.streams), passed through to the runtime */
typedef void *cudaEvent_t;
static void record_sync(const char *what, cudaStream_t stream, int has_stream, cudaEvent_t event, int has_event) {
  sbuf b = {0};
  put(&b, "{\"sync\":\"%s\"", what);
  if (has_stream) put(&b, ",\"stream\":\"0x%llx\"", (unsigned long long)(uintptr_t)stream);
  if (has_event) put(&b, ",\"event\":\"0x%llx\"", (unsigned long long)(uintptr_t)event);
  put(&b, "}\n");
  log_record(&b);
}

#define PASS(SYM, TYPE, ...)                                 \
  static TYPE real;                                         \
  if (!real) real = (TYPE)dlsym(RTLD_NEXT, SYM);            \
  return real ? real(__VA_ARGS__) : 1 /* cudaErrorInvalidValue */

typedef cudaError_t (*event_record_fn)(cudaEvent_t, cudaStream_t);
typedef cudaError_t (*event_record_flags_fn)(cudaEvent_t, cudaStream_t, unsigned int);
typedef cudaError_t (*wait_event_fn)(cudaStream_t, cudaEvent_t, unsigned int);
typedef cudaError_t (*stream_fn)(cudaStream_t);
typedef cudaError_t (*event_fn)(cudaEvent_t);
typedef cudaError_t (*void_fn)(void);

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  if (recording) record_sync("event-record", s, 1, e, 1);
  PASS("cudaEventRecord", event_record_fn, e, s);
}
cudaError_t cudaEventRecord_ptsz(cudaEvent_t e, cudaStream_t s) {
  if (recording) record_sync("event-record", s, 1, e, 1);
  PASS("cudaEventRecord_ptsz", event_record_fn, e, s);
}
cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s, unsigned int flags) {
  if (recording) record_sync("event-record", s, 1, e, 1);
  PASS("cudaEventRecordWithFlags", event_record_flags_fn, e, s, flags);
}
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int flags) {
  if (recording) record_sync("stream-wait-event", s, 1, e, 1);
  PASS("cudaStreamWaitEvent", wait_event_fn, s, e, flags);
}
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t s, cudaEvent_t e, unsigned int flags) {
  if (recording) record_sync("stream-wait-event", s, 1, e, 1);
  PASS("cudaStreamWaitEvent_ptsz", wait_event_fn, s, e, flags);
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  if (recording) record_sync("stream-synchronize", s, 1, NULL, 0);
  PASS("cudaStreamSynchronize", stream_fn, s);
}
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t s) {
  if (recording) record_sync("stream-synchronize", s, 1, NULL, 0);
  PASS("cudaStreamSynchronize_ptsz", stream_fn, s);
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  if (recording) record_sync("event-synchronize", NULL, 0, e, 1);
  PASS("cudaEventSynchronize", event_fn, e);
}
cudaError_t cudaDeviceSynchronize(void) {
  if (recording) record_sync("device-synchronize", NULL, 0, NULL, 0);
  static void_fn real;
  if (!real) real = (void_fn)dlsym(RTLD_NEXT, "cudaDeviceSynchronize");
  return real ? real() : 1;
}
