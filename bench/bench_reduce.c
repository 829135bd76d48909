// SPDX-License-Identifier: Apache-2.0
// bench/bench_reduce.c: reductions (whole array, rows, columns) and softmax built from
// primitives (ReduceMax, Sub, Exp, ReduceSum, Div), c vs c:reference vs xla:cpu.
#include <string.h>

#include "bench/bench_common.h"

enum { RD_ROWS = 0, RD_COLS = 1, RD_KIND = 2 };
enum { RD_SUM_ALL = 0, RD_SUM_ROWS = 1, RD_MAX_COLS = 2, RD_SOFTMAX = 3 };

static cml_value_t build_reduce(cml_function_t* f, const bench_case_t* c) {
  int64_t dims[2] = {c->dims[RD_ROWS], c->dims[RD_COLS]};
  cml_value_t x = bench_param(f, "x", c->dtype, 2, dims);
  switch (c->dims[RD_KIND]) {
    case RD_SUM_ALL:
      return cml_op_reduce_sum(f, x, NULL, 0);
    case RD_SUM_ROWS:
      return cml_op_reduce_sum(f, x, (int64_t[]){1}, 1);
    case RD_MAX_COLS:
      return cml_op_reduce_max(f, x, (int64_t[]){0}, 1);
    default: {
      // softmax over the last axis: exp(x - max) / sum(exp(x - max)).
      cml_value_t m = cml_op_reduce_max(f, x, (int64_t[]){1}, 1);
      cml_value_t e = cml_op_exp(f, cml_op_sub(f, x, bench_broadcast_back(f, m, dims, 2, 1)));
      cml_value_t s = cml_op_reduce_sum(f, e, (int64_t[]){1}, 1);
      return cml_op_div(f, e, bench_broadcast_back(f, s, dims, 2, 1));
    }
  }
}

static void add_case(bench_case_t* cases, size_t* count, int kind, int64_t rows, int64_t cols,
                     const char* label) {
  bench_case_t* c = &cases[(*count)++];
  memset(c, 0, sizeof *c);
  c->group = kind == RD_SOFTMAX ? "softmax" : "reduce";
  c->build = build_reduce;
  c->dtype = CML_DTYPE_F32;
  c->dims[RD_ROWS] = rows;
  c->dims[RD_COLS] = cols;
  c->dims[RD_KIND] = kind;
  double n = (double)rows * (double)cols;
  // Bytes: the input once plus the output (softmax writes as much as it reads).
  c->bytes = kind == RD_SOFTMAX    ? 8.0 * n
             : kind == RD_SUM_ROWS ? 4.0 * (n + rows)
             : kind == RD_MAX_COLS ? 4.0 * (n + cols)
                                   : 4.0 * n;
  bench_case_name(c, "f32 %s [%lld, %lld]", label, (long long)rows, (long long)cols);
}

int main(int argc, char** argv) {
  bench_options_t opts;
  if (!bench_parse_args(&opts, argc, argv, "reductions and softmax from primitives")) return 2;
  bench_case_t cases[12];
  size_t count = 0;
  add_case(cases, &count, RD_SUM_ALL, 4096, 4096, "sum all");
  add_case(cases, &count, RD_SUM_ROWS, 4096, 4096, "sum axis 1");
  add_case(cases, &count, RD_MAX_COLS, 4096, 4096, "max axis 0");
  add_case(cases, &count, RD_SUM_ROWS, 256, 1024, "sum axis 1");
  add_case(cases, &count, RD_SOFTMAX, 1024, 4096, "axis 1");
  add_case(cases, &count, RD_SOFTMAX, 64, 512, "axis 1");
  add_case(cases, &count, RD_SOFTMAX, 8, 64, "axis 1");
  bench_run(&opts, cases, count);
  return bench_finish(&opts);
}
