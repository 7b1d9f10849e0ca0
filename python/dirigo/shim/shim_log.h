/* The in-memory log both shims keep: each record is built in an sbuf, appended under log_lock and
 * drained by Python. Included once by each shim (each .so has its own log); plain C, no CUDA headers. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
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

/* ---- a record under construction: grows as needed, so no name or parameter list can overrun it */
typedef struct {
  char *s;
  size_t n, cap;
  int failed; /* an allocation or format failed: the record is incomplete and must not be logged */
} sbuf;

static void put(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(sbuf *b, const char *fmt, ...) {
  if (b->failed) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    size_t room = b->cap - b->n;
    int m = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? room : 0, fmt, ap);
    va_end(ap);
    if (m < 0) {
      b->failed = 1;
      return;
    }
    if (b->s && (size_t)m < room) {
      b->n += (size_t)m;
      return;
    }
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->n + (size_t)m + 1) cap *= 2;
    char *nb = realloc(b->s, cap);
    if (!nb) {
      b->failed = 1;
      return;
    }
    b->s = nb;
    b->cap = cap;
  }
}

/* Logs a finished record unless it is incomplete, and frees it. */
static void log_record(sbuf *b) {
  if (!b->failed && b->s) {
    pthread_mutex_lock(&log_lock);
    log_append_locked(b->s, b->n);
    pthread_mutex_unlock(&log_lock);
  }
  free(b->s);
}
