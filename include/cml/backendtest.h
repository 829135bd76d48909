// SPDX-License-Identifier: Apache-2.0
// cml/backendtest.h: the compliance suite, runnable against any backend (ours or a third
// party's).
//
// Every case builds a computation with the public API, runs it on the backend under test and
// compares the results with values known independently (hand-computed, or derived by a
// straightforward reference written in the case itself). A case reports OK, FAILED or
// UNSUPPORTED (the backend's capabilities lack an op or dtype it needs, or the backend answered
// UNIMPLEMENTED). A run in which nothing passed, or any case failed, is a failed run.
//
// Example (a third-party backend's test program):
//
//   #include <cml/backendtest.h>
//   int main(void) {
//     cml_backend_t* b = NULL;
//     if (cml_backend_new_with_config("mine", &b) != CML_OK) return 1;
//     cml_backendtest_options_t opts;
//     cml_backendtest_options_init(&opts);
//     opts.op_regex = "Dot|Conv";           // optional filter
//     cml_backendtest_summary_t sum;
//     cml_status_t st = cml_backendtest_run_all(b, &opts, &sum);
//     cml_backend_release(b);
//     return (st == CML_OK && sum.failed == 0 && sum.passed > 0) ? 0 : 1;
//   }
//
// Thread-safety: one run at a time per backend object is recommended (cases may run on several
// threads internally when they test concurrent execution).
#ifndef CML_BACKENDTEST_H_
#define CML_BACKENDTEST_H_

#include <stdio.h>

#include "cml/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cml_backendtest_options_t {
  size_t struct_size;
  // POSIX extended regex matched against "<file>/<case name>", the name of the op the case
  // covers and that op's group (cml_op_group_name: "elementwise", "movement", ...); NULL runs
  // everything.
  const char* op_regex;
  // When not NULL, results are also written there as JSON: to "<path>.partial.<pid>" first,
  // renamed over |json_path| at the end, so a run that stops early leaves the old file whole.
  const char* json_path;
  // Where progress and failures go (NULL: stdout).
  FILE* log;
  // 0: failures and the summary; 1: one line per case; 2: details.
  int verbosity;
} cml_backendtest_options_t;

// Sets |options| to the defaults (every field zero / NULL) and its struct_size. NULL is ignored.
CML_API void cml_backendtest_options_init(cml_backendtest_options_t* options);

typedef struct cml_backendtest_summary_t {
  size_t passed;
  size_t failed;
  size_t skipped;  // unsupported by the backend
  // Standard ops the backend advertises that no passing case covered.
  size_t uncovered_ops;
} cml_backendtest_summary_t;

// Runs every case (matching the filter) on |backend|, prints a line per failure and ends with
// "N passed, N failed, N skipped". Returns CML_OK when the run itself worked (even with failed
// cases: look at |out_summary|). Returns INCOMPATIBLE when |options| was not set up by
// `cml_backendtest_options_init` (struct_size), INVALID_ARGUMENT for a NULL |backend| or
// |out_summary|, a bad regex or a JSON path that cannot be created, UNAVAILABLE when writing the
// JSON failed (a full disk), RESOURCE_EXHAUSTED when out of memory.
CML_API CML_MUST_USE cml_status_t cml_backendtest_run_all(cml_backend_t* backend,
                                                          const cml_backendtest_options_t* options,
                                                          cml_backendtest_summary_t* out_summary);

// Number of cases and their names ("<group>/<name>"), for listing. A name is lent (static
// storage, valid for the life of the process); NULL when |i| is out of range. Thread-safe.
CML_API size_t cml_backendtest_case_count(void);
CML_API const char* cml_backendtest_case_name(size_t i);
// The standard op case |i| covers (what `--op` also matches, with its group), CML_OP_INVALID
// for a case without one or an |i| out of range. Thread-safe.
CML_API cml_op_t cml_backendtest_case_op(size_t i);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_BACKENDTEST_H_
