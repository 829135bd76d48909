// SPDX-License-Identifier: Apache-2.0
// src/base/base_internal.h: internal helpers shared across the library (logging, abort hook).
#ifndef CML_BASE_BASE_INTERNAL_H_
#define CML_BASE_BASE_INTERNAL_H_

#include "cml/base.h"

// Logs a printf-formatted message through the handler set with cml_set_log_handler.
void cml__log(cml_log_level_t level, const char* fmt, ...) CML_PRINTF(2, 3);

// Reports a broken internal invariant (never bad user input) and does not return.
_Noreturn void cml__abort(const char* fmt, ...) CML_PRINTF(1, 2);

// The calling process's id (getpid(), refreshed in a child of fork(); 0 on wasm32-wasi), for the
// checks that refuse objects inherited through fork(). Cheap: no system call per query.
long cml__process_id(void);

#define CML_ASSERT_INTERNAL(cond)                                                      \
  do {                                                                                 \
    if (!(cond)) cml__abort("%s:%d: assertion failed: %s", __FILE__, __LINE__, #cond); \
  } while (0)

#endif  // CML_BASE_BASE_INTERNAL_H_
