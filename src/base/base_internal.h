// SPDX-License-Identifier: Apache-2.0
// src/base/base_internal.h: internal helpers shared across the library (logging, abort hook).
#ifndef CML_BASE_BASE_INTERNAL_H_
#define CML_BASE_BASE_INTERNAL_H_

#include <stdarg.h>
#include <stddef.h>

#include "cml/base.h"

// Logs a printf-formatted message through the handler set with cml_set_log_handler.
void cml__log(cml_log_level_t level, const char* fmt, ...) CML_PRINTF(2, 3);

// Reports a broken internal invariant (never bad user input) and does not return.
_Noreturn void cml__abort(const char* fmt, ...) CML_PRINTF(1, 2);

// The calling process's id (getpid(), refreshed in a child of fork(); 0 on wasm32-wasi), for the
// checks that refuse objects inherited through fork(). Cheap: no system call per query.
long cml__process_id(void);

// pthread_create with the asynchronous signals blocked in the new thread (process.c): every
// thread cml starts goes through it. wasm32-wasi has no threads: ENOTSUP.
#include <pthread.h>
int cml__thread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*fn)(void*),
                       void* arg);

// snprintf, vsnprintf and strtod in the "C" locale (a '.' decimal point), whatever locale the
// process has set: for every number cml writes for a machine (StableHLO, config strings) or reads
// from one. errno is strtod's.
int cml__snprintf_c(char* buffer, size_t size, const char* fmt, ...) CML_PRINTF(3, 4);
int cml__vsnprintf_c(char* buffer, size_t size, const char* fmt, va_list args);
double cml__strtod_c(const char* text, char** end);

// The floating-point environment backends and kernels run in (docs/engine.md "Floating-point
// environment"): round to nearest even, every exception masked, IEEE denormals, whatever the
// calling thread set (fesetround, feenableexcept, the FTZ/DAZ a -ffast-math program sets at
// start-up). The core sets it around every backend call (backend creation, compile, execute,
// transfers): threads a backend or a plugin starts inherit it, and kernels neither trap nor
// round otherwise. cml__fpenv_enter sets |control| (CML__FPENV_*) on the calling thread and
// returns what cml__fpenv_leave restores: the caller's control bits (the exception flags raised
// meanwhile stay raised). x86-64 only (the SSE control register, MXCSR); elsewhere nothing.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CML__HAVE_FPENV 1
#include <stdint.h>
#include <xmmintrin.h>
#define CML__FPENV_IEEE 0x1F80u     // the six exception masks (bits 7-12), round to nearest
#define CML__FPENV_FTZ 0x8000u      // results that would be denormal are zero
#define CML__FPENV_CONTROL 0xFFC0u  // everything but the exception flags (bits 0-5)
static inline uint32_t cml__fpenv_control(void) { return _mm_getcsr() & CML__FPENV_CONTROL; }
// Sets |control|, keeping the exception flags raised so far.
static inline void cml__fpenv_set(uint32_t control) {
  const uint32_t now = _mm_getcsr();
  if ((now & CML__FPENV_CONTROL) != control) _mm_setcsr(control | (now & ~CML__FPENV_CONTROL));
}
#else
#include <stdint.h>
#define CML__FPENV_IEEE 0u
#define CML__FPENV_FTZ 0u
static inline uint32_t cml__fpenv_control(void) { return 0; }
static inline void cml__fpenv_set(uint32_t control) { (void)control; }
#endif
static inline uint32_t cml__fpenv_enter(uint32_t control) {
  const uint32_t saved = cml__fpenv_control();
  cml__fpenv_set(control);
  return saved;
}
static inline void cml__fpenv_leave(uint32_t saved) { cml__fpenv_set(saved); }

#define CML_ASSERT_INTERNAL(cond)                                                      \
  do {                                                                                 \
    if (!(cond)) cml__abort("%s:%d: assertion failed: %s", __FILE__, __LINE__, #cond); \
  } while (0)

#endif  // CML_BASE_BASE_INTERNAL_H_
