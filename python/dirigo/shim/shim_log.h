/* The in-memory log both shims keep: records are appended under log_lock and drained by Python.
 * Included once by each shim (each .so has its own log); plain C, no CUDA headers. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char *log_buf;
static size_t log_len, log_cap;

/* Appends n bytes; the caller holds log_lock. Out of memory drops the record rather than crash
 * the program. */
static void log_append_locked(const char *s, size_t n) {
  if (log_len + n + 1 > log_cap) {
    size_t cap = log_cap ? log_cap : 1 << 16;
    while (cap < log_len + n + 1) cap *= 2;
    char *nb = realloc(log_buf, cap);
    if (!nb) return;
    log_buf = nb;
    log_cap = cap;
  }
  memcpy(log_buf + log_len, s, n);
  log_len += n;
}

/* Copies the log into buf and clears it when it fits (returns its length); otherwise returns the
 * number of bytes needed (length + 1) and keeps it. */
static size_t log_drain(char *buf, size_t cap) {
  pthread_mutex_lock(&log_lock);
  size_t n = log_len;
  if (buf == NULL || cap < n + 1) {
    pthread_mutex_unlock(&log_lock);
    return n + 1;
  }
  if (n) memcpy(buf, log_buf, n);
  buf[n] = 0;
  log_len = 0;
  pthread_mutex_unlock(&log_lock);
  return n;
}
