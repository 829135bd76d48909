// SPDX-License-Identifier: Apache-2.0
// bench/bench_common.h: a side-by-side benchmark runner over cml's public API.
//
// Each benchmark program declares cases (a graph builder plus its work in FLOPs or bytes) and
// hands them to `bench_run`. For every case the runner compiles the graph once per contender
// (the `c` backend, `c:reference=true`, `xla:cpu`, and an optional native function such as
// OpenBLAS sgemm), feeds all of them the same inputs, warms them up, and then times
// `cml_executable_execute` rep by rep with the contenders interleaved (the order rotates each
// rep), so that drift on a shared, noisy machine hits every contender alike. It prints the
// median time, GFLOP/s or GB/s, the ratio against xla:cpu and a numeric check of each output
// against the oracle (the reference backend when it ran, otherwise the first contender).
//
// Contenders that are absent (no PJRT plugin) or that cannot compile a case (UNIMPLEMENTED
// ops) are skipped with their reason; nothing here fails because of a missing contender.
// Benchmarks never gate CI: the exit status is 0 unless the command line is wrong.
//
// Example:
//
//   static cml_value_t build_add(cml_function_t* f, const bench_case_t* c) {
//     cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){c->dims[0]});
//     return cml_op_add(f, cml_parameter(f, "a", &s), cml_parameter(f, "b", &s));
//   }
//   int main(int argc, char** argv) {
//     bench_options_t opts;
//     if (!bench_parse_args(&opts, argc, argv, "add")) return 2;
//     bench_case_t c = {.group = "add", .name = "f32 1M", .build = build_add,
//                       .dims = {1 << 20}, .bytes = 12.0 * (1 << 20)};
//     bench_run(&opts, &c, 1);
//     return bench_finish(&opts);
//   }
#ifndef CML_BENCH_BENCH_COMMON_H_
#define CML_BENCH_BENCH_COMMON_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cml/cml.h"

#define BENCH_MAX_CONTENDERS 8
#define BENCH_MAX_INPUTS 16

typedef struct bench_case_t bench_case_t;

// Builds the case's graph into |f| (parameters first) and returns its single output.
typedef cml_value_t (*bench_build_fn)(cml_function_t* f, const bench_case_t* c);

// A native contender (e.g. OpenBLAS): computes the case's output from host inputs laid out as
// the graph's parameters (same shapes and dtypes) into |output| (the graph's output shape).
typedef void (*bench_native_fn)(const bench_case_t* c, const void* const* inputs, void* output);

struct bench_case_t {
  const char* group;  // "matmul", "elementwise", ...
  char name[96];      // "f32 512x512x512"
  bench_build_fn build;
  int64_t dims[8];          // case parameters, read by |build| and |native|
  cml_dtype_t dtype;        // the main dtype of the case (for |build|)
  double flops;             // floating point operations per execute (0: report bytes)
  double bytes;             // bytes read + written per execute (used when |flops| is 0)
  bool heavy;               // c:reference=true only runs it with --long (scalar code is slow)
  const char* native_name;  // label of the native contender ("openblas"), or NULL
  bench_native_fn native;
};

typedef struct bench_options_t {
  const char* program;
  bool long_run;       // --long: more reps, more warm-up, heavy reference cases
  int reps;            // timed samples per contender (median taken)
  int warmup;          // untimed executes per contender before timing
  double budget_s;     // per contender and case: fewer samples when one exceeds this
  double sample_s;     // fast executes are repeated within a sample to last about this long
  const char* filter;  // run only cases whose "group name" contains this text
  const char* configs[BENCH_MAX_CONTENDERS];  // backend configs, in column order
  int config_count;
  bool native;          // run native contenders when the case has one
  int threads;          // --threads N: c backend and native threads (0: their default)
  bool list;            // --list: print case names and exit
  const char* results;  // --results PATH: append one tab-separated line per case
  // Results, for the summary.
  int cases_run;
} bench_options_t;

// Parses the common flags (see `--help`). Returns false (after printing usage) on bad input or
// when --help was given. |what| describes the program in the usage text.
bool bench_parse_args(bench_options_t* opts, int argc, char** argv, const char* what);

// Runs |count| cases (those matching the filter) and prints one table block per case.
void bench_run(bench_options_t* opts, const bench_case_t* cases, size_t count);

// Prints the summary (c vs xla:cpu per case, biggest gaps first), releases the backends and
// returns the program's exit status (0).
int bench_finish(bench_options_t* opts);

// Convenience for building cases: sets |c->name| with printf formatting.
void bench_case_name(bench_case_t* c, const char* fmt, ...) CML_PRINTF(2, 3);

// Builder helpers used by several programs.
cml_value_t bench_param(cml_function_t* f, const char* name, cml_dtype_t dtype, int32_t rank,
                        const int64_t* dims);
// Broadcasts |x| (rank r) back to |out_dims| (rank r + 1) by inserting |axis|.
cml_value_t bench_broadcast_back(cml_function_t* f, cml_value_t x, const int64_t* out_dims,
                                 int32_t out_rank, int64_t axis);

#endif  // CML_BENCH_BENCH_COMMON_H_
