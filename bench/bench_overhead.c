// SPDX-License-Identifier: Apache-2.0
// bench/bench_overhead.c: the fixed cost of one execute on tiny graphs (a single op, and a
// chain of 16 ops) through the public API, c vs c:reference vs xla:cpu.
#include <string.h>

#include "bench/bench_common.h"

enum { OV_N = 0, OV_OPS = 1, OV_INPUTS = 2 };

static cml_value_t build_tiny(cml_function_t* f, const bench_case_t* c) {
  int64_t n = c->dims[OV_N];
  cml_value_t x = bench_param(f, "x", c->dtype, 1, &n);
  cml_value_t y = x;
  for (int64_t i = 1; i < c->dims[OV_INPUTS]; ++i) {
    y = cml_op_add(f, y, bench_param(f, NULL, c->dtype, 1, &n));
  }
  cml_value_t one = cml_constant_scalar_f64(f, c->dtype, 1.0);
  for (int64_t i = 0; i < c->dims[OV_OPS]; ++i) {
    // Alternate ops so that no simplification folds the chain away.
    y = (i % 2) ? cml_op_mul(f, y, x) : cml_op_add(f, y, one);
  }
  return y;
}

int main(int argc, char** argv) {
  bench_options_t opts;
  if (!bench_parse_args(&opts, argc, argv, "per-execute overhead of tiny graphs")) return 2;
  static const struct {
    int64_t n, ops, inputs;
    const char* label;
  } kinds[] = {
      {4, 1, 1, "x[4] + 1 (1 op, 1 input)"},
      {4, 16, 1, "16-op chain on x[4]"},
      {4, 1, 4, "4 inputs x[4] summed + 1"},
  };
  bench_case_t cases[4];
  size_t count = 0;
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; ++i) {
    bench_case_t* c = &cases[count++];
    memset(c, 0, sizeof *c);
    c->group = "overhead";
    c->build = build_tiny;
    c->dtype = CML_DTYPE_F32;
    c->dims[OV_N] = kinds[i].n;
    c->dims[OV_OPS] = kinds[i].ops;
    c->dims[OV_INPUTS] = kinds[i].inputs;
    bench_case_name(c, "%s", kinds[i].label);
  }
  bench_run(&opts, cases, count);
  return bench_finish(&opts);
}
