// SPDX-License-Identifier: Apache-2.0
// tests/differential/diff_control.c: Sort (one operand with NaN/±0/duplicates under a total
// order; key/value pairs, stable, both directions), While, If (both branches) and Call of a
// named function. Exact, except float While/If results (XLA contracts multiply-adds).
#include <stdio.h>
#include <string.h>

#include "diff_common.h"

typedef struct dt_control_ctx_t {
  cml_dtype_t dtype;
  cml_op_t compare;  // Sort comparator
  int variant;
} dt_control_ctx_t;

// A closure of |parent| comparing parameter |key| of |count| interleaved (lhs, rhs) pairs.
static cml_function_t* dt_comparator(cml_function_t* parent, const cml_dtype_t* dtypes,
                                     size_t count, cml_op_t compare) {
  cml_function_t* c = NULL;
  cml_status_t st = cml_function_new_closure(parent, &c);
  if (st != CML_OK) {
    cml_status_free(st);
    return NULL;
  }
  cml_value_t lhs = CML_VALUE_INVALID, rhs = CML_VALUE_INVALID;
  for (size_t i = 0; i < count; ++i) {
    cml_shape_t s = cml_shape_scalar(dtypes[i]);
    cml_value_t l = cml_parameter(c, NULL, &s);
    cml_value_t r = cml_parameter(c, NULL, &s);
    if (i == 0) {
      lhs = l;
      rhs = r;
    }
  }
  cml_value_t less = cml_op_binary(c, compare, lhs, rhs);
  st = cml_function_return(c, &less, 1);
  if (st != CML_OK) {
    cml_status_free(st);
    return NULL;
  }
  return c;
}

static size_t dt_build_sort(cml_function_t* f, const cml_value_t* p, const void* ctx,
                            cml_value_t* outs) {
  const dt_control_ctx_t* s = ctx;
  size_t count = s->variant == 0 ? 1 : 2;
  const cml_dtype_t dtypes[2] = {s->dtype, CML_DTYPE_I32};
  cml_function_t* cmp = dt_comparator(f, dtypes, count, s->compare);
  if (!cmp) return 0;
  if (!cml_op_sort(f, cmp, 1, s->variant != 0, p, count, outs)) return 0;
  return count;
}

static void dt_sort(cml_dtype_t d, int variant, cml_op_t compare) {
  if (!dt_selected("Sort", d)) return;
  dt_case_t c;
  dt_case_init(&c, "Sort", d, (dt_tol_t){DT_EXACT, 0, 0});
  snprintf(c.variant, sizeof c.variant, "%s %s", variant == 0 ? "keys" : "stable key/value",
           cml_op_name(compare));
  int64_t dims[2] = {5, 33};
  void* k = dt_case_input(&c, d, 2, dims);
  dt_fill(d, k, 0, 5 * 33, variant == 0 ? DT_FILL_EDGE : DT_FILL_SMALL);
  if (variant != 0) {
    int32_t* v = dt_case_input(&c, CML_DTYPE_I32, 2, dims);
    for (int i = 0; i < 5 * 33; ++i) v[i] = i;
  }
  dt_control_ctx_t ctx = {d, compare, variant};
  c.build = dt_build_sort;
  c.ctx = &ctx;
  dt_check(&c);
  dt_case_free(&c);
}

// while i < n: (i + 1, x * 0.5 + 1, acc + i * x); returns the final (i, x, acc).
static size_t dt_build_while(cml_function_t* f, const cml_value_t* p, const void* ctx,
                             cml_value_t* outs) {
  const dt_control_ctx_t* w = ctx;
  cml_function_t *cond = NULL, *body = NULL;
  cml_status_t st = cml_function_new_closure(f, &cond);
  if (st == CML_OK) st = cml_function_new_closure(f, &body);
  if (st != CML_OK) {
    cml_status_free(st);
    return 0;
  }
  cml_shape_t si = cml_shape_scalar(CML_DTYPE_I32);
  cml_shape_t sx = cml_shape_make(w->dtype, 1, (const int64_t[]){8});
  cml_value_t ci = cml_parameter(cond, "i", &si);
  (void)cml_parameter(cond, "x", &sx);
  (void)cml_parameter(cond, "acc", &sx);
  cml_value_t go = cml_op_less_than(cond, ci, p[0]);  // captures n
  st = cml_function_return(cond, &go, 1);
  cml_value_t bi = cml_parameter(body, "i", &si);
  cml_value_t bx = cml_parameter(body, "x", &sx);
  cml_value_t bacc = cml_parameter(body, "acc", &sx);
  cml_value_t one_i = cml_constant_scalar_i64(body, CML_DTYPE_I32, 1);
  cml_value_t half = cml_constant_scalar_f64(body, w->dtype, 0.5);
  cml_value_t one = cml_constant_scalar_f64(body, w->dtype, 1.0);
  cml_value_t fi = cml_op_convert_dtype(body, bi, w->dtype);
  cml_value_t next[3] = {cml_op_add(body, bi, one_i),
                         cml_op_add(body, cml_op_mul(body, bx, half), one),
                         cml_op_add(body, bacc, cml_op_mul(body, fi, bx))};
  if (st == CML_OK) st = cml_function_return(body, next, 3);
  if (st != CML_OK) {
    cml_status_free(st);
    return 0;
  }
  cml_value_t zero = cml_constant_scalar_i64(f, CML_DTYPE_I32, 0);
  if (!cml_op_while(f, cond, body, (const cml_value_t[]){zero, p[1], p[2]}, 3, outs)) return 0;
  return 3;
}

// If(pred, () -> x + y, () -> x * y - y) and Call of g(a, b) = a * b + a twice.
static size_t dt_build_if_call(cml_function_t* f, const cml_value_t* p, const void* ctx,
                               cml_value_t* outs) {
  cml_function_t *t = NULL, *e = NULL, *g = NULL;
  cml_status_t st = cml_function_new_closure(f, &t);
  if (st == CML_OK) st = cml_function_new_closure(f, &e);
  if (st == CML_OK) st = cml_builder_new_function(cml_function_builder(f), "g", &g);
  if (st != CML_OK) {
    cml_status_free(st);
    return 0;
  }
  cml_value_t tv = cml_op_add(t, p[1], p[2]);
  cml_value_t ev = cml_op_sub(e, cml_op_mul(e, p[1], p[2]), p[2]);
  st = cml_function_return(t, &tv, 1);
  if (st == CML_OK) st = cml_function_return(e, &ev, 1);
  cml_shape_t s;
  (void)cml_builder_value_shape(cml_function_builder(f), p[1], &s);
  cml_value_t a = cml_parameter(g, "a", &s);
  cml_value_t b = cml_parameter(g, "b", &s);
  cml_value_t gv = cml_op_add(g, cml_op_mul(g, a, b), a);
  if (st == CML_OK) st = cml_function_return(g, &gv, 1);
  if (st != CML_OK) {
    cml_status_free(st);
    return 0;
  }
  if (!cml_op_if(f, p[0], t, e, &outs[0])) return 0;
  cml_value_t g1 = CML_VALUE_INVALID;
  if (!cml_op_call(f, g, (const cml_value_t[]){p[1], p[2]}, 2, &g1)) return 0;
  if (!cml_op_call(f, g, (const cml_value_t[]){g1, outs[0]}, 2, &outs[1])) return 0;
  return 2;
}

static void dt_while(cml_dtype_t d) {
  if (!dt_selected("While", d)) return;
  dt_case_t c;
  // XLA contracts a * b + c into one FMA (docs/differential.md): float results are compared
  // within a bound relative to the magnitudes involved (|acc| stays below ~1000).
  dt_case_init(&c, "While", d, (dt_tol_t){DT_REL, 8, 1024});
  int32_t* n = dt_case_input(&c, CML_DTYPE_I32, 0, NULL);
  *n = 13;
  void* x = dt_case_input(&c, d, 1, (const int64_t[]){8});
  void* acc = dt_case_input(&c, d, 1, (const int64_t[]){8});
  dt_fill(d, x, 0, 8, DT_FILL_SMALL);
  dt_fill(d, acc, 0, 8, DT_FILL_SMALL);
  dt_control_ctx_t ctx = {d, CML_OP_INVALID, 0};
  c.build = dt_build_while;
  c.ctx = &ctx;
  dt_check(&c);
  dt_case_free(&c);
}

static void dt_if_call(cml_dtype_t d, bool pred) {
  if (!dt_selected("If", d)) return;
  dt_case_t c;
  // Small inputs (|x| <= 4): results stay below ~256; FMA contraction as for While.
  dt_case_init(&c, "If", d, (dt_tol_t){DT_REL, 8, 256});
  snprintf(c.variant, sizeof c.variant, "pred=%s, Call", pred ? "true" : "false");
  uint8_t* pr = dt_case_input(&c, CML_DTYPE_BOOL, 0, NULL);
  *pr = pred;
  void* x = dt_case_input(&c, d, 1, (const int64_t[]){16});
  void* y = dt_case_input(&c, d, 1, (const int64_t[]){16});
  dt_fill(d, x, 0, 16, cml_dtype_is_int(d) ? DT_FILL_WIDE : DT_FILL_SMALL);
  dt_fill(d, y, 0, 16, cml_dtype_is_int(d) ? DT_FILL_WIDE : DT_FILL_SMALL);
  c.build = dt_build_if_call;
  dt_check(&c);
  dt_case_free(&c);
}

void dt_group_control(void) {
  static const cml_dtype_t sort_dtypes[] = {CML_DTYPE_I8,   CML_DTYPE_I32, CML_DTYPE_U16,
                                            CML_DTYPE_I64,  CML_DTYPE_U64, CML_DTYPE_F16,
                                            CML_DTYPE_BF16, CML_DTYPE_F32, CML_DTYPE_F64};
  for (size_t i = 0; i < sizeof sort_dtypes / sizeof sort_dtypes[0]; ++i) {
    cml_dtype_t d = sort_dtypes[i];
    bool is_float = cml_dtype_is_float(d);
    dt_sort(d, 0, is_float ? CML_OP_LESS_THAN_TOTAL_ORDER : CML_OP_LESS_THAN);
    dt_sort(d, 1, CML_OP_LESS_THAN);
    dt_sort(d, 1, CML_OP_GREATER_THAN);
  }
  dt_while(CML_DTYPE_F32);
  dt_while(CML_DTYPE_F64);
  dt_while(CML_DTYPE_I32);
  static const cml_dtype_t if_dtypes[] = {CML_DTYPE_I32, CML_DTYPE_U8, CML_DTYPE_F32, CML_DTYPE_F64,
                                          CML_DTYPE_C64};
  for (size_t i = 0; i < sizeof if_dtypes / sizeof if_dtypes[0]; ++i) {
    dt_if_call(if_dtypes[i], true);
    dt_if_call(if_dtypes[i], false);
  }
}
