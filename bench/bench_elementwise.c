// SPDX-License-Identifier: Apache-2.0
// bench/bench_elementwise.c: streaming elementwise graphs (add, mul, tanh and a fused chain) on
// 1M and 16M floats, c vs c:reference vs xla:cpu. Throughput is GB/s of inputs + output.
#include <string.h>

#include "bench/bench_common.h"

enum { EW_N = 0, EW_KIND = 1 };
enum { EW_ADD = 0, EW_TANH = 1, EW_CHAIN = 2 };

static cml_value_t build_elementwise(cml_function_t* f, const bench_case_t* c) {
  int64_t n = c->dims[EW_N];
  cml_value_t a = bench_param(f, "a", c->dtype, 1, &n);
  switch (c->dims[EW_KIND]) {
    case EW_ADD:
      return cml_op_add(f, a, bench_param(f, "b", c->dtype, 1, &n));
    case EW_TANH:
      return cml_op_tanh(f, a);
    default: {
      // tanh(a * b + a) * 0.5 + b: add, mul and tanh in one chain the c backend can fuse.
      cml_value_t b = bench_param(f, "b", c->dtype, 1, &n);
      cml_value_t half = cml_constant_scalar_f64(f, c->dtype, 0.5);
      cml_value_t t = cml_op_tanh(f, cml_op_add(f, cml_op_mul(f, a, b), a));
      return cml_op_add(f, cml_op_mul(f, t, half), b);
    }
  }
}

int main(int argc, char** argv) {
  bench_options_t opts;
  if (!bench_parse_args(&opts, argc, argv, "elementwise add / tanh / add-mul-tanh chain")) {
    return 2;
  }
  static const struct {
    int kind;
    const char* label;
    int streams;  // arrays read + written, 4 bytes per element each
  } kinds[] = {
      {EW_ADD, "add a+b", 3},
      {EW_TANH, "tanh(a)", 2},
      {EW_CHAIN, "chain tanh(a*b+a)*0.5+b", 3},
  };
  static const int64_t sizes[] = {1 << 20, 16 << 20};
  bench_case_t cases[8];
  size_t count = 0;
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; ++s) {
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; ++k) {
      bench_case_t* c = &cases[count++];
      memset(c, 0, sizeof *c);
      c->group = "elementwise";
      c->build = build_elementwise;
      c->dtype = CML_DTYPE_F32;
      c->dims[EW_N] = sizes[s];
      c->dims[EW_KIND] = kinds[k].kind;
      c->bytes = 4.0 * kinds[k].streams * (double)sizes[s];
      c->heavy = sizes[s] > (1 << 20);  // the scalar reference takes ~1 s per 16M execute
      bench_case_name(c, "f32 %s, %lldM", kinds[k].label, (long long)(sizes[s] >> 20));
    }
  }
  bench_run(&opts, cases, count);
  return bench_finish(&opts);
}
