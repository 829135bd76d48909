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

#define CML_ASSERT_INTERNAL(cond)                                                      \
  do {                                                                                 \
    if (!(cond)) cml__abort("%s:%d: assertion failed: %s", __FILE__, __LINE__, #cond); \
  } while (0)

#endif  // CML_BASE_BASE_INTERNAL_H_
