// SPDX-License-Identifier: Apache-2.0
// src/base/status.c: statuses (code in the low 4 bits, optional heap message), version, logging
// and the abort hook.
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base_internal.h"
#include "cml/base.h"

#define CML_STATUS_CODE_MASK ((uintptr_t)0xF)

// A detailed status: 16-byte aligned, so its address leaves the low 4 bits free for the code.
typedef struct cml_status_payload_t {
  size_t length;
  char message[];
} cml_status_payload_t;

static const char* const cml_status_code_names[CML_STATUS_CODE_COUNT] = {"OK",
                                                                         "INVALID_ARGUMENT",
                                                                         "OUT_OF_RANGE",
                                                                         "NOT_FOUND",
                                                                         "FAILED_PRECONDITION",
                                                                         "RESOURCE_EXHAUSTED",
                                                                         "UNIMPLEMENTED",
                                                                         "UNAVAILABLE",
                                                                         "INCOMPATIBLE",
                                                                         "CANCELLED",
                                                                         "INTERNAL",
                                                                         "DEADLINE_EXCEEDED"};

const char* cml_version_string(void) { return "0.1.0"; }

const char* cml_status_code_name(cml_status_code_t code) {
  if ((int)code < 0 || code >= CML_STATUS_CODE_COUNT) return "UNKNOWN";
  return cml_status_code_names[code];
}

cml_status_t cml_status_from_code(cml_status_code_t code) {
  if ((int)code < 0 || code >= CML_STATUS_CODE_COUNT) code = CML_STATUS_INTERNAL;
  return (cml_status_t)code;
}

static cml_status_payload_t* cml_status_payload(cml_status_t status) {
  return (cml_status_payload_t*)(status & ~CML_STATUS_CODE_MASK);
}

static cml_status_t cml_status_vmake(cml_status_code_t code, const char* fmt, va_list args) {
  if (code == CML_STATUS_OK) return CML_OK;
  cml_status_t bare = cml_status_from_code(code);
  if (!fmt) return bare;  // a NULL format: the code alone (vsnprintf would crash)
  va_list copy;
  va_copy(copy, args);
  // Messages are written in the C locale (1.5, not 1,5), as every number cml writes.
  int n = cml__vsnprintf_c(NULL, 0, fmt, copy);
  va_end(copy);
  if (n < 0) return bare;
  size_t bytes = sizeof(cml_status_payload_t) + (size_t)n + 1;
  bytes = (bytes + 15) & ~(size_t)15;
  cml_status_payload_t* p = aligned_alloc(16, bytes);
  if (!p) return bare;
  p->length = (size_t)n;
  cml__vsnprintf_c(p->message, (size_t)n + 1, fmt, args);
  return (cml_status_t)p | (cml_status_t)bare;
}

cml_status_t cml_status_make(cml_status_code_t code, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  cml_status_t s = cml_status_vmake(code, fmt, args);
  va_end(args);
  return s;
}

cml_status_t cml_status_make_message(cml_status_code_t code, const char* message) {
  return message ? cml_status_make(code, "%s", message) : cml_status_from_code(code);
}

cml_status_code_t cml_status_code(cml_status_t status) {
  return (cml_status_code_t)(status & CML_STATUS_CODE_MASK);
}

const char* cml_status_message(cml_status_t status) {
  cml_status_payload_t* p = cml_status_payload(status);
  if (p) return p->message;
  return cml_status_code_name(cml_status_code(status));
}

void cml_status_free(cml_status_t status) { free(cml_status_payload(status)); }

cml_status_t cml_status_annotate(cml_status_t status, const char* fmt, ...) {
  if (status == CML_OK) return CML_OK;
  if (!fmt) return status;  // nothing to add
  char prefix[512];
  va_list args;
  va_start(args, fmt);
  cml__vsnprintf_c(prefix, sizeof prefix, fmt, args);
  va_end(args);
  cml_status_t out =
      cml_status_make(cml_status_code(status), "%s: %s", prefix, cml_status_message(status));
  cml_status_free(status);
  return out;
}

cml_status_t cml_status_clone(cml_status_t status) {
  if (status == CML_OK) return CML_OK;
  if (!cml_status_payload(status)) return status;
  return cml_status_make(cml_status_code(status), "%s", cml_status_message(status));
}

//===--- logging and abort ---===//

// The handler and its user pointer change together, so they are read and written as one pair
// under a mutex (logging is rare; it is never on a hot path).
static pthread_mutex_t cml_log_mutex = PTHREAD_MUTEX_INITIALIZER;
static cml_log_fn cml_log_handler;
static void* cml_log_user;
static _Atomic(cml_abort_fn) cml_abort_handler;

void cml_set_log_handler(cml_log_fn fn, void* user) {
  pthread_mutex_lock(&cml_log_mutex);
  cml_log_handler = fn;
  cml_log_user = user;
  pthread_mutex_unlock(&cml_log_mutex);
}

void cml_set_abort_handler(cml_abort_fn fn) { atomic_store(&cml_abort_handler, fn); }

void cml__log(cml_log_level_t level, const char* fmt, ...) {
  char text[1024];
  va_list args;
  va_start(args, fmt);
  cml__vsnprintf_c(text, sizeof text, fmt, args);
  va_end(args);
  pthread_mutex_lock(&cml_log_mutex);
  cml_log_fn fn = cml_log_handler;
  void* user = cml_log_user;
  pthread_mutex_unlock(&cml_log_mutex);
  if (fn) {
    fn(user, level, text);
  } else if (level <= CML_LOG_WARNING) {
    fprintf(stderr, "cml: %s: %s\n", level == CML_LOG_ERROR ? "error" : "warning", text);
  }
}

_Noreturn void cml__abort(const char* fmt, ...) {
  char text[1024];
  va_list args;
  va_start(args, fmt);
  vsnprintf(text, sizeof text, fmt, args);
  va_end(args);
  cml_abort_fn fn = atomic_load(&cml_abort_handler);
  if (fn) fn(text);
  fprintf(stderr, "cml: internal error: %s\n", text);
  abort();
}
