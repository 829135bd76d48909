// SPDX-License-Identifier: Apache-2.0
// tests/differential/diff_elementwise_convert.c: ConvertDType between every pair of dtypes (special
// values, integer extremes, out-of-range floats) and Bitcast between every pair whose bit widths
// divide.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "diff_common.h"

typedef struct dt_convert_ctx_t {
  cml_dtype_t to;
} dt_convert_ctx_t;

static size_t dt_build_convert(cml_function_t* f, const cml_value_t* p, const void* ctx,
                               cml_value_t* outs) {
  outs[0] = cml_op_convert_dtype(f, p[0], ((const dt_convert_ctx_t*)ctx)->to);
  return 1;
}

static size_t dt_build_bitcast(cml_function_t* f, const cml_value_t* p, const void* ctx,
                               cml_value_t* outs) {
  outs[0] = cml_op_bitcast(f, p[0], ((const dt_convert_ctx_t*)ctx)->to);
  return 1;
}

static const char dt_reason_double_rounding[] =
    "ConvertDType of 64-bit values to Float16/BFloat16: XLA rounds twice (via Float32), c once";

// A 1-ulp difference converting a value that is not exact in Float32 to a half type.
static const char* dt_known_convert(const dt_case_t* c, size_t output, int64_t i, const void* c_out,
                                    const void* xla_out) {
  cml_dtype_t from = c->inputs[0].shape.dtype;
  cml_dtype_t to = ((const dt_convert_ctx_t*)c->ctx)->to;
  if (to != CML_DTYPE_F16 && to != CML_DTYPE_BF16) return NULL;
  if (cml_dtype_bits(from) < 32 || cml_dtype_is_complex(from)) return NULL;
  if (from == CML_DTYPE_F32) return NULL;
  int a = ((const int16_t*)c_out)[i], b = ((const int16_t*)xla_out)[i];
  return (a - b == 1 || b - a == 1) ? dt_reason_double_rounding : NULL;
}

static void dt_convert(cml_dtype_t from, cml_dtype_t to) {
  if (!dt_selected("ConvertDType", from)) return;
  dt_case_t c;
  dt_case_init(&c, "ConvertDType", from, (dt_tol_t){DT_EXACT, 0, 0});
  snprintf(c.variant, sizeof c.variant, "-> %s", cml_dtype_name(to));
  int64_t n = dt_special_count(from) + 300;
  void* x = dt_case_input(&c, from, 1, &n);
  dt_fill(from, x, 0, n, DT_FILL_EDGE);
  // Values near the target's integer range (where saturation and rounding meet).
  if (cml_dtype_is_float(from) && cml_dtype_is_int(to)) {
    int bits = cml_dtype_bits(to);
    double lim = cml_dtype_is_signed_int(to) ? ldexp(1.0, bits - 1) : ldexp(1.0, bits);
    const double near[] = {lim,   -lim, lim - 1, -lim - 1, lim * 2, lim + 0.5, -0.5,
                           -0.99, 0.99, -1.5,    255.5,    127.5,   65535.5};
    for (size_t k = 0; k < sizeof near / sizeof near[0]; ++k) {
      dt_set_f64(from, x, dt_special_count(from) + (int64_t)k, near[k]);
    }
  }
  dt_convert_ctx_t ctx = {to};
  c.build = dt_build_convert;
  c.ctx = &ctx;
  c.known = dt_known_convert;
  dt_check(&c);
  dt_case_free(&c);
}

static void dt_bitcast(cml_dtype_t from, cml_dtype_t to) {
  int fb = cml_dtype_bits(from), tb = cml_dtype_bits(to);
  if (fb % tb != 0 && tb % fb != 0) return;
  if (!dt_selected("Bitcast", from)) return;
  dt_case_t c;
  dt_case_init(&c, "Bitcast", from, (dt_tol_t){DT_EXACT, 0, 0});
  snprintf(c.variant, sizeof c.variant, "-> %s", cml_dtype_name(to));
  int64_t dims[2] = {37, tb > fb ? tb / fb : 1};
  int32_t rank = tb > fb ? 2 : 1;
  uint8_t* x = dt_case_input(&c, from, rank, dims);
  size_t bytes = c.inputs[0].size;
  for (size_t i = 0; i < bytes; ++i) x[i] = (uint8_t)dt_rand();
  // Keep a few recognizable values (NaN, Inf, -0, 1) at the front for floats.
  if (cml_dtype_is_float(from)) {
    for (int64_t k = 0; k < 8; ++k) dt_set_special(from, x, k, k);
  }
  dt_convert_ctx_t ctx = {to};
  c.build = dt_build_bitcast;
  c.ctx = &ctx;
  dt_check(&c);
  dt_case_free(&c);
}

void dt_group_convert(void) {
  for (const cml_dtype_t* a = dt_all_dtypes; *a != CML_DTYPE_INVALID; ++a) {
    for (const cml_dtype_t* b = dt_all_dtypes; *b != CML_DTYPE_INVALID; ++b) dt_convert(*a, *b);
  }
  for (const cml_dtype_t* a = dt_all_dtypes; *a != CML_DTYPE_INVALID; ++a) {
    if (*a == CML_DTYPE_BOOL) continue;
    for (const cml_dtype_t* b = dt_all_dtypes; *b != CML_DTYPE_INVALID; ++b) {
      if (*b == CML_DTYPE_BOOL || *a == *b) continue;
      dt_bitcast(*a, *b);
    }
  }
}
