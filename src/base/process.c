// SPDX-License-Identifier: Apache-2.0
// src/base/process.c: the calling process's id, kept current across fork() without a system
// call per query.
#include "base/base_internal.h"

#if defined(__wasi__)

long cml__process_id(void) { return 0; }  // no processes, no fork

#else

#include <pthread.h>
#include <unistd.h>

// glibc's getpid() is a system call (no cache since 2.25), and the backends ask on every
// execute. The id is read once and refreshed in the child of every fork() by an atfork handler,
// which runs before fork() returns there. (A raw clone or SYS_fork bypasses the handler; such a
// child keeps seeing the parent's id.)
static long cml_process_id_cache;
static pthread_once_t cml_process_id_once = PTHREAD_ONCE_INIT;

static void cml_process_id_refresh(void) {
  __atomic_store_n(&cml_process_id_cache, (long)getpid(), __ATOMIC_RELAXED);
}

static void cml_process_id_init(void) {
  cml_process_id_refresh();
  (void)pthread_atfork(NULL, NULL, cml_process_id_refresh);
}

long cml__process_id(void) {
  (void)pthread_once(&cml_process_id_once, cml_process_id_init);
  return __atomic_load_n(&cml_process_id_cache, __ATOMIC_RELAXED);
}

#endif
