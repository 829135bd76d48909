// SPDX-License-Identifier: Apache-2.0
// tests/install/suite_consumer.c: runs part of the compliance suite on the "c" backend through
// the INSTALLED cml_backendtest library (found with pkg-config), as a third-party backend's
// author would on theirs.
#include <cml/backendtest.h>
#include <cml/cml.h>
#include <stdio.h>

int main(void) {
  cml_backend_t* be = NULL;
  cml_status_t st = cml_backend_new_with_config("c", &be);
  cml_backendtest_options_t options;
  cml_backendtest_options_init(&options);
  options.op_regex = "Add|ReduceSum";
  cml_backendtest_summary_t summary = {0, 0, 0, 0};
  if (st == CML_OK) st = cml_backendtest_run_all(be, &options, &summary);
  if (st != CML_OK) {
    fprintf(stderr, "suite_consumer: %s\n", cml_status_message(st));
    cml_status_free(st);
    cml_backend_release(be);
    return 1;
  }
  cml_backend_release(be);
  if (summary.passed == 0 || summary.failed != 0) {
    fprintf(stderr, "suite_consumer: %zu passed, %zu failed\n", summary.passed, summary.failed);
    return 1;
  }
  printf("suite_consumer: %zu cases passed\n", summary.passed);
  return 0;
}
