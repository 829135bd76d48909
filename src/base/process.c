// SPDX-License-Identifier: Apache-2.0
// src/base/process.c: the calling process's id, kept current across fork() without a system
// call per query; starting cml's threads with the host's signals blocked.
#include "base/base_internal.h"

#if defined(__wasi__)

long cml__process_id(void) { return 0; }  // no processes, no fork

#include <errno.h>

int cml__thread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*fn)(void*),
                       void* arg) {
  (void)thread;
  (void)attr;
  (void)fn;
  (void)arg;
  return ENOTSUP;  // no threads
}

#else

#include <pthread.h>
#include <signal.h>
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

// Every thread cml starts (the c backend's pool and device threads, the dataset's prefetch
// thread, the thread XLA's compiler runs on, from which XLA's own threads inherit) blocks the
// asynchronous signals, so that a signal the host blocks in its threads to take it with
// sigwait (SIGTERM, SIGINT, SIGUSR1) stays pending for the host instead of running a handler,
// or the default action, on one of cml's threads. Left open: the signals a fault raises in the
// thread that faulted (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS: blocked, the kernel
// would kill the process without the host's or a sanitizer's handler), SIGABRT, and SIGPROF
// (profilers sample the thread that runs).
int cml__thread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*fn)(void*),
                       void* arg) {
  sigset_t block, old;
  sigfillset(&block);
  static const int kOpen[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT, SIGPROF};
  for (size_t i = 0; i < sizeof kOpen / sizeof kOpen[0]; ++i) sigdelset(&block, kOpen[i]);
  const bool masked = pthread_sigmask(SIG_BLOCK, &block, &old) == 0;
  const int rc = pthread_create(thread, attr, fn, arg);
  if (masked) (void)pthread_sigmask(SIG_SETMASK, &old, NULL);
  return rc;
}

#endif
