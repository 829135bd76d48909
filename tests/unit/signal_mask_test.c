// SPDX-License-Identifier: Apache-2.0
// tests/unit/signal_mask_test.c: cml's threads block the host's asynchronous signals. A host
// that blocks SIGUSR1 in its own thread to take it with sigwait must find it pending, not run by
// a handler on one of cml's threads (the c backend's pool and device threads, the dataset's
// prefetch thread); the fault signals stay open in them.
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cml/cml.h"
#include "test.h"

static atomic_int handled;

static void on_usr1(int sig) {
  (void)sig;
  atomic_fetch_add(&handled, 1);
}

// Runs x + 1 on |be| (so that every pool and device thread has started and run).
static cml_status_t run_once(cml_backend_t* be) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(be, "signal_mask", &b));
  cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){1 << 16});
  cml_function_t* f = cml_builder_main(b);
  cml_value_t x = cml_parameter(f, "x", &s);
  cml_value_t y = cml_op_add(f, x, cml_constant_scalar_f64(f, CML_DTYPE_F32, 1));
  cml_status_t st = cml_function_return(f, &y, 1);
  cml_executable_t* exe = NULL;
  if (st == CML_OK) st = cml_builder_compile(b, &exe);
  cml_builder_destroy(b);
  static float host[1 << 16];
  memset(host, 0, sizeof host);
  cml_buffer_t* in = NULL;
  cml_buffer_t* out = NULL;
  if (st == CML_OK) st = cml_buffer_from_host(be, 0, &s, host, sizeof host, &in);
  if (st == CML_OK) st = cml_executable_execute(exe, &in, 1, NULL, 0, &out);
  if (st == CML_OK) st = cml_buffer_copy_to_host(out, host, sizeof host);
  if (st == CML_OK && host[0] != 1.0f) st = cml_status_make(CML_STATUS_INTERNAL, "got %g", host[0]);
  cml_buffer_release(in);
  cml_buffer_release(out);
  cml_executable_release(exe);
  return st;
}

// Sends SIGUSR1 to the process with it blocked in this thread: it must stay pending for
// sigtimedwait here.
static int usr1_reaches_this_thread(void) {
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &usr1, NULL);
  atomic_store(&handled, 0);
  kill(getpid(), SIGUSR1);
  struct timespec wait = {2, 0};
  const int got = sigtimedwait(&usr1, NULL, &wait);
  pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
  return got == SIGUSR1 && atomic_load(&handled) == 0;
}

TEST(backend_threads_leave_signals_to_the_host) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sigemptyset(&sa.sa_mask);
  ASSERT_TRUE(sigaction(SIGUSR1, &sa, NULL) == 0);
  static const char* const kConfigs[] = {"c:threads=4", "c:threads=2,devices=2"};
  for (size_t i = 0; i < sizeof kConfigs / sizeof kConfigs[0]; ++i) {
    cml_backend_t* be = NULL;
    ASSERT_STATUS_OK(cml_backend_new_with_config(kConfigs[i], &be));
    cml_status_t st = run_once(be);
    // Several times: which thread the kernel picks for a process-directed signal varies.
    int ok = st == CML_OK;
    for (int k = 0; ok && k < 8; ++k) ok = usr1_reaches_this_thread();
    cml_backend_release(be);
    ASSERT_STATUS_OK(st);
    if (!ok) TEST_FAIL_("%s: SIGUSR1 ran a handler on another thread", kConfigs[i]);
  }
  // The host's own signal mask is as it was.
  sigset_t now;
  pthread_sigmask(SIG_BLOCK, NULL, &now);
  ASSERT_TRUE(!sigismember(&now, SIGUSR1) && !sigismember(&now, SIGTERM));
}

TEST_MAIN(TEST_ENTRY(backend_threads_leave_signals_to_the_host))
