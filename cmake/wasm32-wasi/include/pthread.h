// SPDX-License-Identifier: Apache-2.0
// cmake/wasm32-wasi/include/pthread.h: the pthread subset cml uses, for single-threaded
// wasm32-wasi (wasi-libc without threads has no <pthread.h>). Only the wasm toolchain file
// (cmake/wasm32-wasi.cmake) puts this folder on the include path; native builds never see it.
//
// There is exactly one thread, so mutexes have nothing to exclude and always succeed; a
// condition wait returns at once (a spurious wake-up, which every caller must already handle);
// pthread_once runs its routine on the first call. pthread_create fails with ENOSYS, so code that
// wants threads reports that instead of hanging: the c backend's pool clamps itself to one
// thread on __wasi__ and never calls it.
#ifndef CML_WASI_PTHREAD_SHIM_H_
#define CML_WASI_PTHREAD_SHIM_H_

#include <errno.h>
#include <sched.h>
#include <time.h>

typedef unsigned long pthread_t;
typedef struct {
  int unused;
} pthread_attr_t;
typedef struct {
  int unused;
} pthread_mutex_t;
typedef struct {
  int unused;
} pthread_mutexattr_t;
typedef struct {
  int unused;
} pthread_cond_t;
typedef struct {
  int unused;
} pthread_condattr_t;
typedef struct {
  int done;
} pthread_once_t;

#define PTHREAD_MUTEX_INITIALIZER \
  { 0 }
#define PTHREAD_COND_INITIALIZER \
  { 0 }
#define PTHREAD_ONCE_INIT \
  { 0 }

static inline int pthread_mutex_init(pthread_mutex_t* m, const pthread_mutexattr_t* a) {
  (void)m;
  (void)a;
  return 0;
}
static inline int pthread_mutex_destroy(pthread_mutex_t* m) {
  (void)m;
  return 0;
}
static inline int pthread_mutex_lock(pthread_mutex_t* m) {
  (void)m;
  return 0;
}
static inline int pthread_mutex_trylock(pthread_mutex_t* m) {
  (void)m;
  return 0;
}
static inline int pthread_mutex_unlock(pthread_mutex_t* m) {
  (void)m;
  return 0;
}

static inline int pthread_cond_init(pthread_cond_t* c, const pthread_condattr_t* a) {
  (void)c;
  (void)a;
  return 0;
}
static inline int pthread_cond_destroy(pthread_cond_t* c) {
  (void)c;
  return 0;
}
static inline int pthread_cond_signal(pthread_cond_t* c) {
  (void)c;
  return 0;
}
static inline int pthread_cond_broadcast(pthread_cond_t* c) {
  (void)c;
  return 0;
}
static inline int pthread_cond_wait(pthread_cond_t* c, pthread_mutex_t* m) {
  (void)c;
  (void)m;
  return 0;
}
static inline int pthread_cond_timedwait(pthread_cond_t* c, pthread_mutex_t* m,
                                         const struct timespec* t) {
  (void)c;
  (void)m;
  (void)t;
  return ETIMEDOUT;
}

static inline int pthread_once(pthread_once_t* once, void (*routine)(void)) {
  if (!once->done) {
    once->done = 1;
    routine();
  }
  return 0;
}

static inline pthread_t pthread_self(void) { return 1; }
static inline int pthread_equal(pthread_t a, pthread_t b) { return a == b; }

static inline int pthread_create(pthread_t* thread, const pthread_attr_t* attr,
                                 void* (*start)(void*), void* arg) {
  (void)thread;
  (void)attr;
  (void)start;
  (void)arg;
  return ENOSYS;
}
static inline int pthread_join(pthread_t thread, void** result) {
  (void)thread;
  (void)result;
  return ESRCH;
}

#endif  // CML_WASI_PTHREAD_SHIM_H_
