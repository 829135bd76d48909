// SPDX-License-Identifier: Apache-2.0
// tests/differential/diff_elementwise.c: unary, binary and comparison ops, Clamp and Where, for
// every dtype each op accepts. Binary ops get the cartesian product of the special values (so
// x/0, INT_MIN/-1, shifts by >= the bit width, NaN/Inf pairs are all covered) plus random pairs.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "diff_common.h"

static size_t dt_build_unary(cml_function_t* f, const cml_value_t* p, const void* ctx,
                             cml_value_t* outs) {
  outs[0] = cml_op_unary(f, *(const cml_op_t*)ctx, p[0]);
  return 1;
}

static size_t dt_build_binary(cml_function_t* f, const cml_value_t* p, const void* ctx,
                              cml_value_t* outs) {
  outs[0] = cml_op_binary(f, *(const cml_op_t*)ctx, p[0], p[1]);
  return 1;
}

static size_t dt_build_clamp(cml_function_t* f, const cml_value_t* p, const void* ctx,
                             cml_value_t* outs) {
  outs[0] = cml_op_clamp(f, p[0], p[1], p[2]);
  return 1;
}

static size_t dt_build_where(cml_function_t* f, const cml_value_t* p, const void* ctx,
                             cml_value_t* outs) {
  outs[0] = cml_op_where(f, p[0], p[1], p[2]);
  return 1;
}

static dt_tol_t dt_exact(void) { return (dt_tol_t){DT_EXACT, 0, 0}; }
static dt_tol_t dt_ulps(double b) { return (dt_tol_t){DT_ULPS, b, 0}; }

// The documented bound of each op (docs/differential.md, "Bounds").
static dt_tol_t dt_elementwise_tol(cml_op_t op, cml_dtype_t d) {
  bool half = d == CML_DTYPE_F16 || d == CML_DTYPE_BF16;
  if (cml_dtype_is_complex(d)) {
    switch (op) {
      case CML_OP_ADD:
      case CML_OP_SUB:
      case CML_OP_NEG:
      case CML_OP_CONJ:
      case CML_OP_REAL:
      case CML_OP_IMAG:
      case CML_OP_IDENTITY:
      case CML_OP_EQUAL:
      case CML_OP_NOT_EQUAL:
        return dt_exact();
      case CML_OP_ABS:
        return dt_ulps(2);
      case CML_OP_MUL:
      case CML_OP_SIGN:
        return dt_ulps(2);
      case CML_OP_DIV:
      case CML_OP_SQRT:
      case CML_OP_RSQRT:
        return dt_ulps(4);
      // Both compute exp(y*log(x)) in the dtype: the error grows with |y*log(x)|.
      case CML_OP_POW:
        return dt_ulps(64);
      default:
        return dt_ulps(8);  // complex transcendentals, normwise
    }
  }
  // Each bound is the sum of the two backends' errors against the exact result
  // (docs/differential.md): c's Float64 functions come from libmvec (up to 3 ulp, 4 documented),
  // XLA's Float64 Tanh reaches 6.9 ulp and its Float32 Expm1, Tanh and Erf 5.2, 4.3 and 6.7.
  switch (op) {
    case CML_OP_EXPM1:
    case CML_OP_TANH:
    case CML_OP_ERF:
      return dt_ulps(half ? 1 : 8);
    case CML_OP_EXP:
    case CML_OP_LOG:
    case CML_OP_LOG1P:
    case CML_OP_SIN:
    case CML_OP_COS:
    case CML_OP_LOGISTIC:
    case CML_OP_POW:
      return dt_ulps(half ? 1 : 4);
    case CML_OP_RSQRT:
    case CML_OP_ATAN2:
      return dt_ulps(half ? 1 : 2);
    default:
      return dt_exact();
  }
}

static bool dt_op_accepts(cml_op_t op, cml_dtype_t d) {
  return (cml_op_dtypes(op) & CML_DTYPE_BIT(d)) != 0;
}

//===--- accepted differences (docs/differential.md) ---===//

static const char dt_reason_branch_cut[] =
    "complex branch cut: XLA ignores the sign of a zero imaginary part (c follows C99 Annex G)";
static const char dt_reason_cpow_zero[] =
    "complex Pow with base 0: XLA computes exp(y*log(0)) = NaN (c: 0, or 1 for y = 0)";

static const char dt_reason_cpow_nonfinite[] =
    "complex Pow with an infinite or NaN component in an input or a result (overflow): XLA's "
    "exp(y*log(x)) gives NaN where c's cpow gives a limit";

static const char dt_reason_div_reciprocal[] =
    "Div by a broadcast divisor: XLA multiplies by the reciprocal 1/y (1-ulp differences; 0 or "
    "NaN when 1/y is below the normal range and flushed)";

// Div of floats whose divisor is broadcast (a scalar, or the [1, s] row of variant 1).
static const char* dt_known_div(const dt_case_t* c, int64_t i, const void* c_out,
                                const void* xla_out) {
  cml_dtype_t d = c->inputs[0].shape.dtype;
  const dt_tensor_t* rhs = &c->inputs[1];
  int64_t m = cml_shape_element_count(&rhs->shape);
  bool broadcast = rhs->shape.rank == 0 || (rhs->shape.rank == 2 && rhs->shape.dims[0] == 1);
  if (!cml_dtype_is_float(d) || !broadcast) return NULL;
  double y = dt_get_f64(d, rhs->data, m == 1 ? 0 : i % m);
  double a = dt_get_f64(d, c_out, i), b = dt_get_f64(d, xla_out, i);
  double ulp = ldexp(dt_eps(d), ilogb(fmax(fabs(a), fabs(b))));
  if (isfinite(a) && isfinite(b) && fabs(a - b) <= ulp) return dt_reason_div_reciprocal;
  double tiny = d == CML_DTYPE_F64 ? 0x1p-1022 : 0x1p-126;  // 1/y below the normal range
  if (fabs(y) * tiny >= 1 || isinf(y)) return dt_reason_div_reciprocal;
  return NULL;
}

// The element of input |k| that output element |i| reads: same shape, [s, 1] x [1, s]
// broadcasting, or a scalar.
static int64_t dt_input_index(const dt_case_t* c, size_t k, int64_t i) {
  const cml_shape_t* s = &c->inputs[k].shape;
  if (s->rank == 0) return 0;
  if (s->rank == 2) return s->dims[0] == 1 ? i % s->dims[1] : i / s->dims[0];
  return i;
}

static const char dt_reason_cpow_condition[] =
    "complex Pow beyond 64 eps but within 4 * (1 + |y| * (|log|x|| + pi)) eps (the condition of "
    "exp(y*log(x)))";
static const char dt_reason_cpow_underflow[] =
    "complex Pow: XLA returns 0 for a small but normal result (c is right)";

static const char* dt_known_elementwise(const dt_case_t* c, size_t output, int64_t i_out,
                                        const void* c_out, const void* xla_out) {
  cml_op_t op = *(const cml_op_t*)c->ctx;
  cml_dtype_t d = c->inputs[0].shape.dtype;
  const void* x = c->inputs[0].data;
  if (op == CML_OP_DIV) return dt_known_div(c, i_out, c_out, xla_out);
  int64_t i = dt_input_index(c, 0, i_out);
  if (cml_dtype_is_complex(d)) {
    cml_dtype_t r = cml_dtype_real_part(d);
    double re = dt_get_f64(r, x, 2 * i), im = dt_get_f64(r, x, 2 * i + 1);
    bool cut = im == 0 && signbit(im) && re < 0;
    if (cut && (op == CML_OP_SQRT || op == CML_OP_RSQRT || op == CML_OP_LOG || op == CML_OP_LOG1P ||
                op == CML_OP_POW)) {
      return dt_reason_branch_cut;
    }
    if (op == CML_OP_POW && re == 0 && im == 0) return dt_reason_cpow_zero;
    if (op == CML_OP_POW) {
      const void* y = c->inputs[1].data;
      int64_t j = dt_input_index(c, 1, i_out);
      double yr = dt_get_f64(r, y, 2 * j), yi = dt_get_f64(r, y, 2 * j + 1);
      double cr = dt_get_f64(r, c_out, 2 * i_out), ci = dt_get_f64(r, c_out, 2 * i_out + 1);
      double xr = dt_get_f64(r, xla_out, 2 * i_out), xi = dt_get_f64(r, xla_out, 2 * i_out + 1);
      bool finite_in = isfinite(re) && isfinite(im) && isfinite(yr) && isfinite(yi);
      bool finite_out = isfinite(cr) && isfinite(ci) && isfinite(xr) && isfinite(xi);
      if (!finite_in || !finite_out) {
        return dt_reason_cpow_nonfinite;
      }
      // exp(y*log(x)) amplifies the rounding of log(x) by |y*log(x)|.
      double cond = 1 + hypot(yr, yi) * (fabs(log(hypot(re, im))) + 3.15);
      double err = hypot(cr - xr, ci - xi) / fmax(hypot(cr, ci), hypot(xr, xi)) / dt_eps(r);
      if (err <= 4 * cond) return dt_reason_cpow_condition;
      if (xr == 0 && xi == 0) return dt_reason_cpow_underflow;
    }
  }
  return NULL;
}

static void dt_unary(cml_op_t op, cml_dtype_t d) {
  if (!dt_selected(cml_op_name(op), d)) return;
  dt_case_t c;
  dt_case_init(&c, cml_op_name(op), d, dt_elementwise_tol(op, d));
  int64_t n = dt_special_count(d) + 200;
  void* x = dt_case_input(&c, d, 1, &n);
  dt_fill(d, x, 0, n, DT_FILL_EDGE);
  c.build = dt_build_unary;
  c.ctx = &op;
  c.known = dt_known_elementwise;
  dt_check(&c);
  dt_case_free(&c);
}

// Variant 0: same shapes, every pair of special values then random pairs. Variant 1: the same
// pairs through broadcasting ([s, 1] against [1, s]). Variant 2: a random array against a
// scalar (broadcast) right-hand side.
static void dt_binary(cml_op_t op, cml_dtype_t d, int variant) {
  if (!dt_selected(cml_op_name(op), d)) return;
  static const char* const names[3] = {"", "broadcast [s,1] x [1,s]", "broadcast scalar rhs"};
  dt_case_t c;
  dt_case_init(&c, cml_op_name(op), d, dt_elementwise_tol(op, d));
  snprintf(c.variant, sizeof c.variant, "%s", names[variant]);
  int64_t s = dt_special_count(d);
  if (variant == 1) {
    void* a = dt_case_input(&c, d, 2, (const int64_t[]){s, 1});
    void* b = dt_case_input(&c, d, 2, (const int64_t[]){1, s});
    for (int64_t i = 0; i < s; ++i) {
      dt_set_special(d, a, i, i);
      dt_set_special(d, b, i, i);
    }
  } else if (variant == 2) {
    int64_t n = 300;
    void* a = dt_case_input(&c, d, 1, &n);
    void* b = dt_case_input(&c, d, 0, NULL);
    dt_fill(d, a, 0, n, DT_FILL_EDGE);
    dt_fill(d, b, 0, 1, DT_FILL_SMALL);
    if (dt_get_f64(d, b, 0) == 0) dt_set_f64(d, b, 0, 3);
  } else {
    int64_t n = s * s + 256;
    void* a = dt_case_input(&c, d, 1, &n);
    void* b = dt_case_input(&c, d, 1, &n);
    int64_t k = 0;
    for (int64_t i = 0; i < s; ++i) {
      for (int64_t j = 0; j < s; ++j, ++k) {
        dt_set_special(d, a, k, i);
        dt_set_special(d, b, k, j);
      }
    }
    dt_fill(d, a, k, n - k, DT_FILL_WIDE);
    dt_fill(d, b, k, n - k, DT_FILL_WIDE);
    // Pow with wide exponents overflows everywhere; a quarter of the random pairs get small ones.
    if (op == CML_OP_POW) dt_fill(d, b, k, (n - k) / 4, DT_FILL_SMALL);
  }
  c.build = dt_build_binary;
  c.ctx = &op;
  c.known = dt_known_elementwise;
  dt_check(&c);
  dt_case_free(&c);
}

// Clamp(min, x, max) with array bounds (some crossed: min > max) and Where with a Bool array.
static void dt_clamp_where(cml_dtype_t d) {
  int64_t n = 300;
  if (dt_op_accepts(CML_OP_CLAMP, d) && dt_selected("Clamp", d)) {
    dt_case_t c;
    dt_case_init(&c, "Clamp", d, dt_exact());
    void* lo = dt_case_input(&c, d, 1, &n);
    void* x = dt_case_input(&c, d, 1, &n);
    void* hi = dt_case_input(&c, d, 1, &n);
    dt_fill(d, lo, 0, n, DT_FILL_SMALL);
    dt_fill(d, x, 0, n, DT_FILL_EDGE);
    dt_fill(d, hi, 0, n, DT_FILL_SMALL);
    for (int64_t i = 0; i < n; ++i) {  // mostly lo <= hi
      if (i % 5 == 0) continue;
      double l = dt_get_f64(d, lo, i), h = dt_get_f64(d, hi, i);
      if (l > h) {
        if (cml_dtype_is_float(d)) {
          dt_set_f64(d, lo, i, h);
          dt_set_f64(d, hi, i, l);
        } else {
          int64_t li = dt_get_i64(d, lo, i), hh = dt_get_i64(d, hi, i);
          dt_set_i64(d, lo, i, hh);
          dt_set_i64(d, hi, i, li);
        }
      }
    }
    c.build = dt_build_clamp;
    dt_check(&c);
    dt_case_free(&c);
  }
  if (dt_op_accepts(CML_OP_WHERE, d) && dt_selected("Where", d)) {
    dt_case_t c;
    dt_case_init(&c, "Where", d, dt_exact());
    void* cond = dt_case_input(&c, CML_DTYPE_BOOL, 1, &n);
    void* a = dt_case_input(&c, d, 1, &n);
    void* b = dt_case_input(&c, d, 1, &n);
    dt_fill(CML_DTYPE_BOOL, cond, 0, n, DT_FILL_WIDE);
    dt_fill(d, a, 0, n, DT_FILL_EDGE);
    dt_fill(d, b, 0, n, DT_FILL_WIDE);
    c.build = dt_build_where;
    dt_check(&c);
    dt_case_free(&c);
  }
}

void dt_group_elementwise(void) {
  for (int o = 0; o < CML_OP_COUNT; ++o) {
    cml_op_t op = (cml_op_t)o;
    cml_op_kind_t kind = cml_op_kind(op);
    if (kind != CML_OPK_UNARY && kind != CML_OPK_BINARY && kind != CML_OPK_COMPARE) continue;
    for (const cml_dtype_t* d = dt_all_dtypes; *d != CML_DTYPE_INVALID; ++d) {
      if (!dt_op_accepts(op, *d)) continue;
      if (kind == CML_OPK_UNARY) {
        dt_unary(op, *d);
      } else {
        dt_binary(op, *d, 0);
        dt_binary(op, *d, 1);
        if (cml_dtype_is_float(*d) || *d == CML_DTYPE_I32) dt_binary(op, *d, 2);
      }
    }
  }
  for (const cml_dtype_t* d = dt_all_dtypes; *d != CML_DTYPE_INVALID; ++d) dt_clamp_where(*d);
}
