// SPDX-License-Identifier: Apache-2.0
// tests/unit/backendtest_threads_test.c: the compliance suite run on several threads at once,
// each thread with its own backend, as a project testing several backends (or plug-ins) in
// parallel does. The autodiff cases once kept their inputs and gradients in static arrays, so
// two runs overwrote each other's and reported false failures under OK. Links the shared cml
// and cml_backendtest (the installed libraries' layout), public API only.
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cml/backendtest.h"
#include "cml/cml.h"
#include "test.h"

typedef struct suite_run_t {
  const char* config;
  cml_status_t status;
  cml_backendtest_summary_t summary;
} suite_run_t;

static void* run_suite(void* arg) {
  suite_run_t* r = (suite_run_t*)arg;
  cml_backend_t* be = NULL;
  r->status = cml_backend_new_with_config(r->config, &be);
  if (r->status != CML_OK) return NULL;
  cml_backendtest_options_t options;
  cml_backendtest_options_init(&options);
  options.op_regex = "autodiff|elementwise_unary";
  FILE* log = fopen("/dev/null", "w");
  options.log = log;
  for (int round = 0; round < 3 && r->status == CML_OK; ++round) {
    cml_backendtest_summary_t s;
    memset(&s, 0, sizeof s);
    r->status = cml_backendtest_run_all(be, &options, &s);
    r->summary.passed += s.passed;
    r->summary.failed += s.failed;
  }
  if (log) fclose(log);
  cml_backend_release(be);
  return NULL;
}

TEST(suites_on_three_threads_agree) {
  suite_run_t runs[3] = {{"c:threads=1", CML_OK, {0, 0, 0, 0}},
                         {"c:threads=1,fusion=false", CML_OK, {0, 0, 0, 0}},
                         {"c:threads=1,avx512=false", CML_OK, {0, 0, 0, 0}}};
  pthread_t threads[3];
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ_INT(pthread_create(&threads[i], NULL, run_suite, &runs[i]), 0);
  for (int i = 0; i < 3; ++i) pthread_join(threads[i], NULL);
  for (int i = 0; i < 3; ++i) {
    if (runs[i].status != CML_OK) {
      fprintf(stderr, "%s: %s\n", runs[i].config, cml_status_message(runs[i].status));
    }
    ASSERT_STATUS_OK(runs[i].status);
    if (runs[i].summary.failed) {
      fprintf(stderr, "%s: %zu passed, %zu failed\n", runs[i].config, runs[i].summary.passed,
              runs[i].summary.failed);
    }
    ASSERT_TRUE(runs[i].summary.passed > 30);
    ASSERT_EQ_INT(runs[i].summary.failed, 0);
  }
}

TEST_MAIN(TEST_ENTRY(suites_on_three_threads_agree))
