// SPDX-License-Identifier: Apache-2.0
// backendtest/cases_elementwise_binary.c: compliance cases of the "elementwise_binary" group:
// elementwise binary ops, comparisons (plain and total order), logical ops, Complex, Clamp, Where
// and Iota.
//
// Every op is swept over every dtype it accepts. Operand pairs are the full cross product of an
// edge-value list, fed as [n, 1] x [1, n] so broadcasting is exercised too; floats also run on
// 5x7x11 random tensors and scalar sides. Expected values come from plain reference code in
// this file: double arithmetic rounded once to the dtype for floats (exact ops compared
// exactly, libm ops within a few ulps), and explicit wrap-around / XLA edge rules for integers
// (x / 0 = -1, x % 0 = x, INT_MIN / -1 = INT_MIN, shifts >= width give 0 or the sign fill).
// bt.h (cml/graph.h) comes before <complex.h>: its `complex` macro would rename the
// generated cml_op_complex declaration.
#include "backendtest/bt.h"

#include <complex.h>
// glibc's <complex.h> defines CMPLX only for GCC; clang has the same builtin.
#ifndef CMPLX
#define CMPLX(x, y) __builtin_complex((double)(x), (double)(y))
#endif
#include <math.h>
#include <string.h>

#define CB_COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const cml_dtype_t cb_floats[] = {CML_DTYPE_F32, CML_DTYPE_F64, CML_DTYPE_F16,
                                        CML_DTYPE_BF16};
static const cml_dtype_t cb_ints[] = {CML_DTYPE_I8, CML_DTYPE_I16, CML_DTYPE_I32, CML_DTYPE_I64,
                                      CML_DTYPE_U8, CML_DTYPE_U16, CML_DTYPE_U32, CML_DTYPE_U64};
static const cml_dtype_t cb_all[] = {CML_DTYPE_BOOL, CML_DTYPE_I8,  CML_DTYPE_I16,  CML_DTYPE_I32,
                                     CML_DTYPE_I64,  CML_DTYPE_U8,  CML_DTYPE_U16,  CML_DTYPE_U32,
                                     CML_DTYPE_U64,  CML_DTYPE_F16, CML_DTYPE_BF16, CML_DTYPE_F32,
                                     CML_DTYPE_F64,  CML_DTYPE_C64, CML_DTYPE_C128};

static bool cb_has(bt_t* t, cml_dtype_t dtype) {
  return cml_capabilities_has_dtype(cml_backend_capabilities(bt_backend(t)), dtype);
}
static bool cb_has_op(bt_t* t, cml_op_t op) {
  return cml_capabilities_has_op(cml_backend_capabilities(bt_backend(t)), op);
}

static bool cb_is_half(cml_dtype_t dt) { return dt == CML_DTYPE_F16 || dt == CML_DTYPE_BF16; }

//===--- float binary ops ---===//

static const double cb_fedges[] = {0.0, -0.0,     1.0,       -1.0, 2.5, -3.0,
                                   0.5, INFINITY, -INFINITY, NAN,  7.25};
#define CB_FEDGE_COUNT ((int64_t)CB_COUNT(cb_fedges))

static double cb_fmax(double a, double b) {
  if (isnan(a) || isnan(b)) return NAN;
  if (a == b) return signbit(a) ? b : a;
  return a > b ? a : b;
}
static double cb_fmin(double a, double b) {
  if (isnan(a) || isnan(b)) return NAN;
  if (a == b) return signbit(a) ? a : b;
  return a < b ? a : b;
}
static double cb_add(double a, double b) { return a + b; }
static double cb_sub(double a, double b) { return a - b; }
static double cb_mul(double a, double b) { return a * b; }
static double cb_div(double a, double b) { return a / b; }

typedef struct cb_float_op_t {
  const char* name;
  cml_op_t op;
  double (*ref)(double, double);
  int64_t ulps, half_ulps;
  double lo, hi;
} cb_float_op_t;

static const cb_float_op_t cb_float_ops[] = {
    {"add", CML_OP_ADD, cb_add, 0, 1, -100, 100},  {"sub", CML_OP_SUB, cb_sub, 0, 1, -100, 100},
    {"mul", CML_OP_MUL, cb_mul, 0, 0, -100, 100},  {"div", CML_OP_DIV, cb_div, 0, 0, -100, 100},
    {"max", CML_OP_MAX, cb_fmax, 0, 0, -100, 100}, {"min", CML_OP_MIN, cb_fmin, 0, 0, -100, 100},
    {"pow", CML_OP_POW, pow, 4, 1, 0.1, 4},        {"rem", CML_OP_REM, fmod, 0, 0, -50, 50},
    {"atan2", CML_OP_ATAN2, atan2, 4, 1, -10, 10},
};

// want[i] = ref(a[ia(i)], b[ib(i)]) for an output of |dims| where a, b broadcast with strides.
static bt_tensor_t cb_expect_float(bt_t* t, cml_dtype_t dt, const bt_tensor_t* a,
                                   const bt_tensor_t* b, int32_t rank, const int64_t* dims,
                                   double (*ref)(double, double), int mode) {
  int64_t n = 1;
  for (int32_t i = 0; i < rank; ++i) n *= dims[i];
  double* v = bt_alloc(t, (size_t)(n + 1) * sizeof(double));
  for (int64_t i = 0; i < n; ++i) {
    int64_t ia = i, ib = i;
    if (mode == 1) {  // [n,1] x [1,n]
      ia = i / dims[1];
      ib = i % dims[1];
    } else if (mode == 2) {  // tensor x scalar
      ib = 0;
    }
    v[i] = ref(bt_get_f64(a, ia), bt_get_f64(b, ib));
  }
  return bt_tensor_f64(t, dt, rank, dims, v);
}

static void cb_run_float_op(bt_t* t, const cb_float_op_t* op) {
  if (!bt_require_op(t, op->op)) return;
  for (size_t k = 0; k < CB_COUNT(cb_floats); ++k) {
    const cml_dtype_t dt = cb_floats[k];
    if (!cb_has(t, dt)) continue;
    bt_new_builder(t);
    cml_function_t* f = bt_main(t);
    const int64_t col[2] = {CB_FEDGE_COUNT, 1}, row[2] = {1, CB_FEDGE_COUNT};
    const int64_t grid[2] = {CB_FEDGE_COUNT, CB_FEDGE_COUNT};
    const int64_t odd[3] = {5, 7, 11};
    bt_tensor_t a1 = bt_tensor_f64(t, dt, 2, col, cb_fedges);
    bt_tensor_t b1 = bt_tensor_f64(t, dt, 2, row, cb_fedges);
    double* ra = bt_alloc(t, 385 * sizeof(double));
    double* rb = bt_alloc(t, 385 * sizeof(double));
    for (int i = 0; i < 385; ++i) {
      ra[i] = bt_rand_uniform(t, op->lo, op->hi);
      rb[i] = bt_rand_uniform(t, op->lo, op->hi);
      if (rb[i] == 0) rb[i] = 1;
    }
    bt_tensor_t a2 = bt_tensor_f64(t, dt, 3, odd, ra);
    bt_tensor_t b2 = bt_tensor_f64(t, dt, 3, odd, rb);
    bt_tensor_t s = bt_tensor_f64(t, dt, 0, NULL, (double[]){1.75});
    cml_value_t pa2 = bt_param(t, f, &a2);
    cml_value_t y[3] = {cml_op_binary(f, op->op, bt_param(t, f, &a1), bt_param(t, f, &b1)),
                        cml_op_binary(f, op->op, pa2, bt_param(t, f, &b2)),
                        cml_op_binary(f, op->op, pa2, bt_param(t, f, &s))};
    bt_tensor_t out[3];
    if (!bt_exec(t, y, 3, out)) return;
    bt_tensor_t want[3] = {cb_expect_float(t, dt, &a1, &b1, 2, grid, op->ref, 1),
                           cb_expect_float(t, dt, &a2, &b2, 3, odd, op->ref, 0),
                           cb_expect_float(t, dt, &a2, &s, 3, odd, op->ref, 2)};
    const int64_t ulps = cb_is_half(dt) ? op->half_ulps : op->ulps;
    static const char* const what[3] = {"edge grid", "5x7x11", "scalar rhs"};
    for (int j = 0; j < 3; ++j) {
      char label[96];
      snprintf(label, sizeof label, "%s %s %s", op->name, cml_dtype_name(dt), what[j]);
      if (ulps == 0) {
        bt_expect_equal(t, label, &out[j], &want[j]);
      } else {
        bt_expect_ulps(t, label, &out[j], &want[j], ulps);
      }
    }
  }
}

// The row of cb_float_ops named |name| (a case finds its row by name, so rows may be added
// anywhere), or NULL.
static const cb_float_op_t* cb_float_op_named(const char* name) {
  for (size_t i = 0; i < sizeof cb_float_ops / sizeof *cb_float_ops; ++i) {
    if (strcmp(cb_float_ops[i].name, name) == 0) return &cb_float_ops[i];
  }
  return NULL;
}

#define CB_FLOAT_CASE(fname)                                     \
  static void case_float_##fname(bt_t* t) {                      \
    const cb_float_op_t* op_ = cb_float_op_named(#fname);        \
    if (!op_) {                                                  \
      bt_fail(t, "no row named \"%s\" in cb_float_ops", #fname); \
      return;                                                    \
    }                                                            \
    cb_run_float_op(t, op_);                                     \
  }
CB_FLOAT_CASE(add)
CB_FLOAT_CASE(sub)
CB_FLOAT_CASE(mul)
CB_FLOAT_CASE(div)
CB_FLOAT_CASE(max)
CB_FLOAT_CASE(min)
CB_FLOAT_CASE(pow)
CB_FLOAT_CASE(rem)
CB_FLOAT_CASE(atan2)

// Pow by constant exponents (backends may rewrite these, as XLA's simplifier and c's kernels
// do: 1 / x, x * x * x, sqrt): within 2 ulps of libm's pow (1 for f16 / bf16), and the IEEE
// special cases by hand: pow(-0, 0.5) = +0, pow(-inf, 0.5) = +inf, pow(-inf, -0.5) = +0,
// pow(NaN, 0) = 1, pow(-0, -1) = -inf, pow(-0, 3) = -0.
static void case_float_pow_constant_exponents(bt_t* t) {
  if (!bt_require_op(t, CML_OP_POW)) return;
  static const double exps[] = {0.0, 1.0, 2.0, 3.0, -1.0, 0.5, -0.5, -2.0, 4.0};
  enum { E = sizeof exps / sizeof exps[0], N = 64 };
  for (size_t k = 0; k < CB_COUNT(cb_floats); ++k) {
    const cml_dtype_t dt = cb_floats[k];
    if (!cb_has(t, dt)) continue;
    bt_new_builder(t);
    cml_function_t* f = bt_main(t);
    double* xs = bt_alloc(t, N * sizeof(double));
    for (int i = 0; i < N; ++i) {
      xs[i] = i < CB_FEDGE_COUNT ? cb_fedges[i]
              : i % 2            ? bt_rand_uniform(t, 0.01, 10.0)
                                 : -bt_rand_uniform(t, 0.01, 10.0);
    }
    const int64_t dims[1] = {N};
    bt_tensor_t x = bt_tensor_f64(t, dt, 1, dims, xs);
    cml_value_t px = bt_param(t, f, &x);
    cml_value_t y[E];
    for (int e = 0; e < E; ++e) y[e] = cml_op_pow(f, px, cml_constant_scalar_f64(f, dt, exps[e]));
    bt_tensor_t out[E];
    if (!bt_exec(t, y, E, out)) return;
    for (int e = 0; e < E; ++e) {
      double* want = bt_alloc(t, N * sizeof(double));
      for (int i = 0; i < N; ++i) want[i] = pow(bt_get_f64(&x, i), exps[e]);
      char label[96];
      snprintf(label, sizeof label, "pow(x, %g) %s", exps[e], cml_dtype_name(dt));
      bt_expect_f64(t, label, &out[e], dt, 1, dims, want, cb_is_half(dt) ? 1 : 2);
      // The signs of zeros and infinities, by hand (x = cb_fedges: +0, -0, .., +inf, -inf, NaN).
      for (int i = 0; i < CB_FEDGE_COUNT; ++i) {
        const double g = bt_get_f64(&out[e], i), w = want[i];
        const bool ok = isnan(w) ? isnan(g) : (g == w && signbit(g) == signbit(w));
        if ((w == 0.0 || isinf(w) || isnan(w) || exps[e] == 0.0) && !ok) {
          bt_fail(t, "%s: pow(%g, %g) = %g, want %g", label, cb_fedges[i], exps[e], g, w);
        }
      }
    }
  }
}

//===--- integer binary ops ---===//
//===--- integer binary ops ---===//

static const int64_t cb_ivals[] = {0,   1,    -1,  2,         -2,        3,  7,     -7,
                                   100, -128, 127, 255,       INT32_MIN, 33, 65535, INT64_MIN,
                                   64,  8,    16,  INT64_MAX, 31,        32, 63};
#define CB_IVAL_COUNT ((int64_t)CB_COUNT(cb_ivals))

typedef struct cb_int_ctx_t {
  int bits;
  bool is_signed;
  uint64_t mask;
} cb_int_ctx_t;

// Sign-extends the low |bits| of |u|.
static int64_t cb_sext(uint64_t u, int bits) {
  if (bits == 64) return (int64_t)u;
  const uint64_t sign = (uint64_t)1 << (bits - 1);
  u &= ((uint64_t)1 << bits) - 1;
  return (int64_t)(u ^ sign) - (int64_t)sign;
}

static int64_t cb_int_ref(cml_op_t op, const cb_int_ctx_t* c, int64_t a, int64_t b) {
  const uint64_t ua = (uint64_t)a & c->mask, ub = (uint64_t)b & c->mask;
  const int64_t type_min = c->is_signed ? cb_sext((uint64_t)1 << (c->bits - 1), c->bits) : 0;
  switch (op) {
    case CML_OP_ADD:
      return (int64_t)(ua + ub);
    case CML_OP_SUB:
      return (int64_t)(ua - ub);
    case CML_OP_MUL:
      return (int64_t)(ua * ub);
    case CML_OP_DIV:
      if (ub == 0) return -1;
      if (c->is_signed) {
        if (a == type_min && b == -1) return type_min;
        return a / b;
      }
      return (int64_t)(ua / ub);
    case CML_OP_REM:
      if (ub == 0) return a;
      if (c->is_signed) return b == -1 ? 0 : a % b;
      return (int64_t)(ua % ub);
    case CML_OP_MAX:
      return c->is_signed ? (a > b ? a : b) : (int64_t)(ua > ub ? ua : ub);
    case CML_OP_MIN:
      return c->is_signed ? (a < b ? a : b) : (int64_t)(ua < ub ? ua : ub);
    case CML_OP_BITWISE_AND:
      return (int64_t)(ua & ub);
    case CML_OP_BITWISE_OR:
      return (int64_t)(ua | ub);
    case CML_OP_BITWISE_XOR:
      return (int64_t)(ua ^ ub);
    case CML_OP_SHIFT_LEFT:
      return ub >= (uint64_t)c->bits ? 0 : (int64_t)(ua << ub);
    case CML_OP_SHIFT_RIGHT_LOGICAL:
      return ub >= (uint64_t)c->bits ? 0 : (int64_t)(ua >> ub);
    case CML_OP_SHIFT_RIGHT_ARITHMETIC: {
      const int64_t s = cb_sext(ua, c->bits);  // the bits read as signed, for every int type
      if (ub >= (uint64_t)c->bits) return s < 0 ? -1 : 0;
      return s >= 0 ? (int64_t)((uint64_t)s >> ub) : ~(int64_t)(~(uint64_t)s >> ub);
    }
    case CML_OP_POW: {
      if (c->is_signed && b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
      // Square and multiply (unsigned exponents such as (uint8)-1 = 255 are large).
      uint64_t r = 1, base = ua;
      for (uint64_t e = ub; e; e >>= 1) {
        if (e & 1) r *= base;
        base *= base;
      }
      return (int64_t)r;
    }
    default:
      return 0;
  }
}

static void cb_run_int_op(bt_t* t, cml_op_t op, const int64_t* lhs, int64_t nl, const int64_t* rhs,
                          int64_t nr) {
  if (!bt_require_op(t, op)) return;
  for (size_t k = 0; k < CB_COUNT(cb_ints); ++k) {
    const cml_dtype_t dt = cb_ints[k];
    if (!cb_has(t, dt)) continue;
    cb_int_ctx_t c = {cml_dtype_bits(dt), cml_dtype_is_signed_int(dt), 0};
    c.mask = c.bits == 64 ? ~(uint64_t)0 : (((uint64_t)1 << c.bits) - 1);
    bt_new_builder(t);
    cml_function_t* f = bt_main(t);
    const int64_t col[2] = {nl, 1}, row[2] = {1, nr}, grid[2] = {nl, nr};
    bt_tensor_t a = bt_tensor_i64(t, dt, 2, col, lhs);
    bt_tensor_t b = bt_tensor_i64(t, dt, 2, row, rhs);
    cml_value_t y = cml_op_binary(f, op, bt_param(t, f, &a), bt_param(t, f, &b));
    bt_tensor_t out[1];
    if (!bt_exec(t, &y, 1, out)) return;
    int64_t* want = bt_alloc(t, (size_t)(nl * nr) * sizeof(int64_t));
    for (int64_t i = 0; i < nl; ++i) {
      for (int64_t j = 0; j < nr; ++j) {
        want[i * nr + j] = cb_int_ref(op, &c, bt_get_i64(&a, i), bt_get_i64(&b, j));
      }
    }
    char label[64];
    snprintf(label, sizeof label, "%s %s", cml_op_name(op), cml_dtype_name(dt));
    bt_expect_i64(t, label, &out[0], dt, 2, grid, want);
  }
}

#define CB_INT_CASE(fname, OP)                                              \
  static void case_int_##fname(bt_t* t) {                                   \
    cb_run_int_op(t, OP, cb_ivals, CB_IVAL_COUNT, cb_ivals, CB_IVAL_COUNT); \
  }
CB_INT_CASE(add, CML_OP_ADD)
CB_INT_CASE(sub, CML_OP_SUB)
CB_INT_CASE(mul, CML_OP_MUL)
CB_INT_CASE(div, CML_OP_DIV)
CB_INT_CASE(rem, CML_OP_REM)
CB_INT_CASE(max, CML_OP_MAX)
CB_INT_CASE(min, CML_OP_MIN)
CB_INT_CASE(and, CML_OP_BITWISE_AND)
CB_INT_CASE(or, CML_OP_BITWISE_OR)
CB_INT_CASE(xor, CML_OP_BITWISE_XOR)
CB_INT_CASE(shift_left, CML_OP_SHIFT_LEFT)
CB_INT_CASE(shift_right_arithmetic, CML_OP_SHIFT_RIGHT_ARITHMETIC)
CB_INT_CASE(shift_right_logical, CML_OP_SHIFT_RIGHT_LOGICAL)

// Div of a value by itself: x / 0 is -1 (all bits set) even when the divisor is the dividend
// (a compiler that rewrites x / x to 1 gives 1 for 0 / 0), for a parameter and for an Iota.
static void case_int_div_by_itself(bt_t* t) {
  static const cml_dtype_t kTypes[] = {CML_DTYPE_I32, CML_DTYPE_I64, CML_DTYPE_U8};
  for (size_t k = 0; k < CB_COUNT(kTypes) && !bt_failed(t); ++k) {
    const cml_dtype_t dt = kTypes[k];
    if (!bt_require_dtype(t, dt) || !bt_require_op(t, CML_OP_DIV)) return;
    const bool is_unsigned = cml_dtype_is_unsigned_int(dt);
    bt_new_builder(t);
    cml_function_t* f = bt_main(t);
    const int64_t dims[1] = {3};
    const int64_t xv[3] = {0, 5, is_unsigned ? 249 : -7};
    bt_tensor_t x = bt_tensor_i64(t, dt, 1, dims, xv);
    cml_value_t px = bt_param(t, f, &x);
    cml_shape_t is = cml_shape_make(dt, 1, dims);
    cml_value_t iota = cml_op_iota(f, &is, 0);
    cml_value_t y[2] = {cml_op_div(f, px, px), cml_op_div(f, iota, iota)};
    bt_tensor_t out[2];
    if (!bt_exec(t, y, 2, out)) return;
    const int64_t all = is_unsigned ? 255 : -1;
    char label[64];
    snprintf(label, sizeof label, "Div(x, x) %s", cml_dtype_name(dt));
    bt_expect_i64(t, label, &out[0], dt, 1, dims, (const int64_t[]){all, 1, 1});
    snprintf(label, sizeof label, "Div(iota, iota) %s", cml_dtype_name(dt));
    bt_expect_i64(t, label, &out[1], dt, 1, dims, (const int64_t[]){all, 1, 1});
  }
}

static void case_int_pow(bt_t* t) {
  static const int64_t bases[] = {0, 1, -1, 2, -2, 3, 7, -128, 100, 255};
  static const int64_t exps[] = {0, 1, 2, 3, 5, 7, 8, 13, 31, 64, 65, -1, -2, -3};
  cb_run_int_op(t, CML_OP_POW, bases, CB_COUNT(bases), exps, CB_COUNT(exps));
}

//===--- comparisons ---===//

static const cml_op_t cb_cmp_ops[] = {CML_OP_EQUAL,        CML_OP_NOT_EQUAL,
                                      CML_OP_LESS_THAN,    CML_OP_LESS_OR_EQUAL,
                                      CML_OP_GREATER_THAN, CML_OP_GREATER_OR_EQUAL};
static const cml_op_t cb_total_ops[] = {
    CML_OP_EQUAL_TOTAL_ORDER,        CML_OP_NOT_EQUAL_TOTAL_ORDER,
    CML_OP_LESS_THAN_TOTAL_ORDER,    CML_OP_LESS_OR_EQUAL_TOTAL_ORDER,
    CML_OP_GREATER_THAN_TOTAL_ORDER, CML_OP_GREATER_OR_EQUAL_TOTAL_ORDER};

// Compares by kind: 0 eq, 1 ne, 2 lt, 3 le, 4 gt, 5 ge, given an ordering (-1, 0, 1) or 2 for
// unordered.
static int64_t cb_cmp_result(int kind, int ord) {
  if (ord == 2) return kind == 1;
  switch (kind) {
    case 0:
      return ord == 0;
    case 1:
      return ord != 0;
    case 2:
      return ord < 0;
    case 3:
      return ord <= 0;
    case 4:
      return ord > 0;
    default:
      return ord >= 0;
  }
}

// Total order key of a double: -NaN < -Inf < ... < -0 < +0 < ... < +Inf < +NaN.
static int64_t cb_total_key(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  if (isnan(d)) u = (u & 0x8000000000000000ULL) | 0x7ff8000000000000ULL;  // one NaN per sign
  return (u >> 63) ? (int64_t)(u ^ 0x7fffffffffffffffULL) : (int64_t)u;
}

static const double cb_cmp_fvals[] = {0.0,      -0.0,      1.0, -1.0, 2.5,
                                      INFINITY, -INFINITY, NAN, -NAN, 1e-3};

static void cb_run_compare(bt_t* t, int kind, bool total) {
  const cml_op_t op = total ? cb_total_ops[kind] : cb_cmp_ops[kind];
  if (!bt_require_op(t, op)) return;
  const int n = (int)CB_COUNT(cb_cmp_fvals);
  for (size_t k = 0; k < CB_COUNT(cb_all); ++k) {
    const cml_dtype_t dt = cb_all[k];
    if (!cb_has(t, dt) || !(cml_op_dtypes(op) & CML_DTYPE_BIT(dt))) continue;
    // Parameters, then constants: a compiler folds a comparison of constants on its own
    // (XLA's folder once ignored TOTALORDER there: EqualTotalOrder(0, -0) was true).
    for (int constants = 0; constants < 2; ++constants) {
      bt_new_builder(t);
      cml_function_t* f = bt_main(t);
      bt_tensor_t a, b;
      int64_t na;
      const bool is_float = cml_dtype_is_float(dt) || cml_dtype_is_complex(dt);
      if (is_float) {
        na = n;
        a = bt_tensor_f64(t, dt, 2, (int64_t[]){na, 1}, cb_cmp_fvals);
        b = bt_tensor_f64(t, dt, 2, (int64_t[]){1, na}, cb_cmp_fvals);
      } else {
        na = dt == CML_DTYPE_BOOL ? 2 : CB_IVAL_COUNT;
        a = bt_tensor_i64(t, dt, 2, (int64_t[]){na, 1}, cb_ivals);
        b = bt_tensor_i64(t, dt, 2, (int64_t[]){1, na}, cb_ivals);
        if (dt == CML_DTYPE_BOOL) {
          a = bt_tensor_i64(t, dt, 2, (int64_t[]){2, 1}, (int64_t[]){0, 1});
          b = bt_tensor_i64(t, dt, 2, (int64_t[]){1, 2}, (int64_t[]){0, 1});
        }
      }
      cml_value_t y;
      if (constants) {  // the grid written out: same-shape constants, no broadcast between
        const int64_t dims[2] = {na, na};
        const size_t es = (size_t)cml_dtype_bits(dt) / 8;  // no packed dtype compares
        unsigned char* va = bt_alloc(t, (size_t)(na * na) * es);
        unsigned char* vb = bt_alloc(t, (size_t)(na * na) * es);
        for (int64_t i = 0; i < na * na; ++i) {
          memcpy(va + (size_t)i * es, (const unsigned char*)a.data + (size_t)(i / na) * es, es);
          memcpy(vb + (size_t)i * es, (const unsigned char*)b.data + (size_t)(i % na) * es, es);
        }
        bt_tensor_t ga = bt_tensor(t, dt, 2, dims, va), gb = bt_tensor(t, dt, 2, dims, vb);
        y = cml_op_binary(f, op, bt_const(t, f, &ga), bt_const(t, f, &gb));
      } else {
        y = cml_op_binary(f, op, bt_param(t, f, &a), bt_param(t, f, &b));
      }
      bt_tensor_t out[1];
      if (!bt_exec(t, &y, 1, out)) return;
      int64_t* want = bt_alloc(t, (size_t)(na * na) * sizeof(int64_t));
      for (int64_t i = 0; i < na; ++i) {
        for (int64_t j = 0; j < na; ++j) {
          int ord;
          if (is_float) {
            const double x = bt_get_f64(&a, i), z = bt_get_f64(&b, j);
            if (total) {
              const int64_t kx = cb_total_key(x), kz = cb_total_key(z);
              ord = kx < kz ? -1 : kx > kz ? 1 : 0;
            } else {
              ord = (isnan(x) || isnan(z)) ? 2 : x < z ? -1 : x > z ? 1 : 0;
            }
          } else if (cml_dtype_is_unsigned_int(dt)) {
            const uint64_t x = (uint64_t)bt_get_i64(&a, i), z = (uint64_t)bt_get_i64(&b, j);
            ord = x < z ? -1 : x > z ? 1 : 0;
          } else {
            const int64_t x = bt_get_i64(&a, i), z = bt_get_i64(&b, j);
            ord = x < z ? -1 : x > z ? 1 : 0;
          }
          want[i * na + j] = cb_cmp_result(kind, ord);
        }
      }
      char label[64];
      snprintf(label, sizeof label, "%s %s%s", cml_op_name(op), cml_dtype_name(dt),
               constants ? " (constants)" : "");
      bt_expect_i64(t, label, &out[0], CML_DTYPE_BOOL, 2, (int64_t[]){na, na}, want);
    }
  }
}

#define CB_CMP_CASE(fname, kind, total) \
  static void case_##fname(bt_t* t) { cb_run_compare(t, kind, total); }
CB_CMP_CASE(equal, 0, false)
CB_CMP_CASE(not_equal, 1, false)
CB_CMP_CASE(less_than, 2, false)
CB_CMP_CASE(less_or_equal, 3, false)
CB_CMP_CASE(greater_than, 4, false)
CB_CMP_CASE(greater_or_equal, 5, false)
CB_CMP_CASE(equal_total_order, 0, true)
CB_CMP_CASE(not_equal_total_order, 1, true)
CB_CMP_CASE(less_than_total_order, 2, true)
CB_CMP_CASE(less_or_equal_total_order, 3, true)
CB_CMP_CASE(greater_than_total_order, 4, true)
CB_CMP_CASE(greater_or_equal_total_order, 5, true)

//===--- logical ---===//

// Truth tables over a broadcast [2,1] x [1,2] grid; |k| selects And, Or, Xor.
static void case_logical_op(bt_t* t, int k) {
  static const cml_op_t ops[3] = {CML_OP_LOGICAL_AND, CML_OP_LOGICAL_OR, CML_OP_LOGICAL_XOR};
  static const int64_t want[3][4] = {{0, 0, 0, 1}, {0, 1, 1, 1}, {0, 1, 1, 0}};
  if (!bt_require_dtype(t, CML_DTYPE_BOOL)) return;
  {
    if (!bt_require_op(t, ops[k])) return;
    bt_new_builder(t);
    cml_function_t* f = bt_main(t);
    cml_value_t a = bt_param_i64(t, f, CML_DTYPE_BOOL, 2, (int64_t[]){2, 1}, (int64_t[]){0, 1});
    cml_value_t b = bt_param_i64(t, f, CML_DTYPE_BOOL, 2, (int64_t[]){1, 2}, (int64_t[]){0, 1});
    cml_value_t y = cml_op_binary(f, ops[k], a, b);
    bt_tensor_t out[1];
    if (!bt_exec(t, &y, 1, out)) return;
    bt_expect_i64(t, cml_op_name(ops[k]), &out[0], CML_DTYPE_BOOL, 2, (int64_t[]){2, 2}, want[k]);
  }
}
static void case_logical_and(bt_t* t) { case_logical_op(t, 0); }
static void case_logical_or(bt_t* t) { case_logical_op(t, 1); }
static void case_logical_xor(bt_t* t) { case_logical_op(t, 2); }

//===--- broadcasting shapes ---===//

// Add on f32 for restricted-broadcast shape pairs up to rank 8, against an index loop.
static void case_broadcast_shapes(bt_t* t) {
  if (!bt_require_op(t, CML_OP_ADD) || !bt_require_dtype(t, CML_DTYPE_F32)) return;
  static const struct {
    int32_t rank;
    int64_t a[8], b[8];
    bool a_scalar, b_scalar;
  } pairs[] = {
      {3, {5, 7, 11}, {5, 7, 11}, false, false},
      {3, {5, 7, 11}, {5, 1, 11}, false, false},
      {3, {1, 7, 1}, {5, 7, 11}, false, false},
      {3, {5, 1, 11}, {1, 7, 1}, false, false},
      {3, {5, 7, 11}, {0}, false, true},
      {3, {0}, {5, 7, 11}, true, false},
      {8, {2, 1, 3, 1, 2, 1, 2, 1}, {1, 2, 3, 2, 1, 2, 1, 2}, false, false},
      {2, {0, 3}, {0, 3}, false, false},
      {2, {0, 3}, {0}, false, true},
      {2, {4, 1}, {4, 0}, false, false},
  };
  for (size_t p = 0; p < CB_COUNT(pairs); ++p) {
    const int32_t rank = pairs[p].rank;
    int64_t out_dims[8], na = 1, nb = 1, n = 1;
    for (int32_t d = 0; d < rank; ++d) {
      const int64_t da = pairs[p].a_scalar ? 1 : pairs[p].a[d];
      const int64_t db = pairs[p].b_scalar ? 1 : pairs[p].b[d];
      out_dims[d] = da == 1 ? db : da;
      na *= da;
      nb *= db;
      n *= out_dims[d];
    }
    bt_new_builder(t);
    cml_function_t* f = bt_main(t);
    double* va = bt_alloc(t, (size_t)(na + 1) * sizeof(double));
    double* vb = bt_alloc(t, (size_t)(nb + 1) * sizeof(double));
    for (int64_t i = 0; i < na; ++i) va[i] = (double)(i % 97) * 0.5;
    for (int64_t i = 0; i < nb; ++i) vb[i] = (double)(i % 89) * 1000.0;
    bt_tensor_t a = pairs[p].a_scalar ? bt_tensor_f64(t, CML_DTYPE_F32, 0, NULL, va)
                                      : bt_tensor_f64(t, CML_DTYPE_F32, rank, pairs[p].a, va);
    bt_tensor_t b = pairs[p].b_scalar ? bt_tensor_f64(t, CML_DTYPE_F32, 0, NULL, vb)
                                      : bt_tensor_f64(t, CML_DTYPE_F32, rank, pairs[p].b, vb);
    cml_value_t y = cml_op_add(f, bt_param(t, f, &a), bt_param(t, f, &b));
    bt_tensor_t out[1];
    if (!bt_exec(t, &y, 1, out)) return;
    double* want = bt_alloc(t, (size_t)(n + 1) * sizeof(double));
    for (int64_t i = 0; i < n; ++i) {
      int64_t rest = i, ia = 0, ib = 0, sa = 1, sb = 1;
      for (int32_t d = rank - 1; d >= 0; --d) {
        const int64_t c = rest % out_dims[d];
        rest /= out_dims[d];
        if (!pairs[p].a_scalar) {
          if (pairs[p].a[d] != 1) ia += c * sa;
          sa *= pairs[p].a[d];
        }
        if (!pairs[p].b_scalar) {
          if (pairs[p].b[d] != 1) ib += c * sb;
          sb *= pairs[p].b[d];
        }
      }
      want[i] = va[ia] + vb[ib];
    }
    char label[32];
    snprintf(label, sizeof label, "pair %zu", p);
    bt_expect_f64(t, label, &out[0], CML_DTYPE_F32, rank, out_dims, want, 0);
  }
}

//===--- complex ---===//

static void case_complex_binary(bt_t* t) {
  size_t ran = 0;  // a backend without any of the dtypes/ops must not pass this case
  static const cml_op_t ops[] = {CML_OP_ADD, CML_OP_SUB, CML_OP_MUL, CML_OP_DIV, CML_OP_POW};
  static const double av[] = {1, 2, -3, 0.5, 0.25, -4, 2, 0};
  static const double bv[] = {3, 4, 1, -1, -2, 0.5, 0.5, 0.5};
  static const cml_dtype_t cdts[] = {CML_DTYPE_C64, CML_DTYPE_C128};
  for (size_t k = 0; k < 2; ++k) {
    if (!cb_has(t, cdts[k])) continue;
    for (size_t o = 0; o < CB_COUNT(ops); ++o) {
      if (!cb_has_op(t, ops[o])) continue;
      bt_new_builder(t);
      cml_function_t* f = bt_main(t);
      const int64_t dims[1] = {4};
      bt_tensor_t a = bt_tensor_c(t, cdts[k], 1, dims, av);
      bt_tensor_t b = bt_tensor_c(t, cdts[k], 1, dims, bv);
      cml_value_t y = cml_op_binary(f, ops[o], bt_param(t, f, &a), bt_param(t, f, &b));
      bt_tensor_t out[1];
      if (!bt_exec(t, &y, 1, out)) return;
      ++ran;
      double w[8];
      for (int i = 0; i < 4; ++i) {
        const double complex x = CMPLX(av[2 * i], av[2 * i + 1]),
                             z = CMPLX(bv[2 * i], bv[2 * i + 1]);
        double complex r;
        switch (ops[o]) {
          case CML_OP_ADD:
            r = x + z;
            break;
          case CML_OP_SUB:
            r = x - z;
            break;
          case CML_OP_MUL:
            r = x * z;
            break;
          case CML_OP_DIV:
            r = x / z;
            break;
          default:
            r = cexp(z * clog(x));
            break;
        }
        w[2 * i] = creal(r);
        w[2 * i + 1] = cimag(r);
      }
      bt_tensor_t want = bt_tensor_c(t, cdts[k], 1, dims, w);
      char label[64];
      snprintf(label, sizeof label, "%s %s", cml_op_name(ops[o]), cml_dtype_name(cdts[k]));
      if (cdts[k] == CML_DTYPE_C64) {
        bt_expect_close(t, label, &out[0], &want, 2e-6, 1e-6);
      } else {
        bt_expect_close(t, label, &out[0], &want, 1e-13, 1e-14);
      }
    }
  }
  if (ran == 0) bt_unsupported(t, "no complex dtype with Add, Sub, Mul, Div or Pow");
}

static void case_complex_op(bt_t* t) {
  if (!bt_require_op(t, CML_OP_COMPLEX)) return;
  static const struct {
    cml_dtype_t in, out;
  } pairs[] = {{CML_DTYPE_F32, CML_DTYPE_C64}, {CML_DTYPE_F64, CML_DTYPE_C128}};
  size_t ran = 0;  // a backend without the dtypes must not pass this case
  for (size_t k = 0; k < 2; ++k) {
    if (!cb_has(t, pairs[k].in) || !cb_has(t, pairs[k].out)) continue;
    bt_new_builder(t);
    cml_function_t* f = bt_main(t);
    const int64_t dims[2] = {2, 3};
    cml_value_t re = bt_param_f64(t, f, pairs[k].in, 2, dims, (double[]){1, 2, 3, 4, 5, 6});
    cml_value_t im = bt_param_f64(t, f, pairs[k].in, 2, dims, (double[]){-1, -0.5, 0, 0.5, 1, NAN});
    cml_value_t s = bt_param_f64(t, f, pairs[k].in, 0, NULL, (double[]){9});
    cml_value_t y[2] = {cml_op_binary(f, CML_OP_COMPLEX, re, im),
                        cml_op_binary(f, CML_OP_COMPLEX, s, im)};
    bt_tensor_t out[2];
    if (!bt_exec(t, y, 2, out)) return;
    ++ran;
    bt_tensor_t w0 = bt_tensor_c(t, pairs[k].out, 2, dims,
                                 (double[]){1, -1, 2, -0.5, 3, 0, 4, 0.5, 5, 1, 6, NAN});
    bt_tensor_t w1 = bt_tensor_c(t, pairs[k].out, 2, dims,
                                 (double[]){9, -1, 9, -0.5, 9, 0, 9, 0.5, 9, 1, 9, NAN});
    bt_expect_equal(t, "complex", &out[0], &w0);
    bt_expect_equal(t, "complex scalar re", &out[1], &w1);
  }
  if (ran == 0) bt_unsupported(t, "Complex needs Float32 + Complex64 or Float64 + Complex128");
}

//===--- Clamp ---===//

static void case_clamp(bt_t* t) {
  if (!bt_require_op(t, CML_OP_CLAMP)) return;
  for (size_t k = 0; k < CB_COUNT(cb_all); ++k) {
    const cml_dtype_t dt = cb_all[k];
    if (!cb_has(t, dt) || !(cml_op_dtypes(CML_OP_CLAMP) & CML_DTYPE_BIT(dt))) continue;
    const bool fl = cml_dtype_is_float(dt);
    bt_new_builder(t);
    cml_function_t* f = bt_main(t);
    const int64_t dims[1] = {6};
    double x[6] = {-5, 0, 3, 10, 100, 2}, lo[6] = {0, 1, 1, 1, 1, 1}, hi[6] = {4, 4, 4, 4, 50, 4};
    if (fl) {
      x[5] = NAN;
      hi[0] = NAN;
    }
    if (cml_dtype_is_unsigned_int(dt)) x[0] = 0;
    cml_value_t vx = bt_param_f64(t, f, dt, 1, dims, x);
    cml_value_t y[2] = {cml_op_clamp(f, bt_param_f64(t, f, dt, 1, dims, lo), vx,
                                     bt_param_f64(t, f, dt, 1, dims, hi)),
                        cml_op_clamp(f, bt_param_f64(t, f, dt, 0, NULL, (double[]){1}), vx,
                                     bt_param_f64(t, f, dt, 0, NULL, (double[]){7}))};
    bt_tensor_t out[2];
    if (!bt_exec(t, y, 2, out)) return;
    double w0[6], w1[6];
    for (int i = 0; i < 6; ++i) {
      w0[i] = cb_fmin(cb_fmax(x[i], lo[i]), hi[i]);
      w1[i] = cb_fmin(cb_fmax(x[i], 1), 7);
    }
    bt_expect_f64(t, cml_dtype_name(dt), &out[0], dt, 1, dims, w0, 0);
    bt_expect_f64(t, cml_dtype_name(dt), &out[1], dt, 1, dims, w1, 0);
  }
}

//===--- Where ---===//

static void case_where_all_dtypes(bt_t* t) {
  if (!bt_require_op(t, CML_OP_WHERE) || !bt_require_dtype(t, CML_DTYPE_BOOL)) return;
  for (size_t k = 0; k < CB_COUNT(cb_all); ++k) {
    const cml_dtype_t dt = cb_all[k];
    if (!cb_has(t, dt)) continue;
    bt_new_builder(t);
    cml_function_t* f = bt_main(t);
    const int64_t dims[2] = {3, 5};
    int64_t c[15], a[15], b[15];
    for (int i = 0; i < 15; ++i) {
      c[i] = (i * 7) % 3 == 0;
      a[i] = dt == CML_DTYPE_BOOL ? 1 : i + 1;
      b[i] = dt == CML_DTYPE_BOOL ? 0 : 100 - i;
    }
    cml_value_t vc = bt_param_i64(t, f, CML_DTYPE_BOOL, 2, dims, c);
    cml_value_t va = bt_param_i64(t, f, dt, 2, dims, a);
    cml_value_t vb = bt_param_i64(t, f, dt, 2, dims, b);
    cml_value_t vs = bt_param_i64(t, f, dt, 0, NULL, (int64_t[]){dt == CML_DTYPE_BOOL ? 0 : 42});
    cml_value_t sc = bt_param_i64(t, f, CML_DTYPE_BOOL, 0, NULL, (int64_t[]){0});
    cml_value_t y[3] = {cml_op_where(f, vc, va, vb), cml_op_where(f, vc, vs, vb),
                        cml_op_where(f, sc, va, vs)};
    bt_tensor_t out[3];
    if (!bt_exec(t, y, 3, out)) return;
    int64_t w0[15], w1[15], w2[15];
    for (int i = 0; i < 15; ++i) {
      w0[i] = c[i] ? a[i] : b[i];
      w1[i] = c[i] ? (dt == CML_DTYPE_BOOL ? 0 : 42) : b[i];
      w2[i] = dt == CML_DTYPE_BOOL ? 0 : 42;
    }
    bt_expect_i64(t, cml_dtype_name(dt), &out[0], dt, 2, dims, w0);
    bt_expect_i64(t, cml_dtype_name(dt), &out[1], dt, 2, dims, w1);
    bt_expect_i64(t, cml_dtype_name(dt), &out[2], dt, 2, dims, w2);
  }
}

//===--- Iota ---===//

static void case_iota_all_dtypes(bt_t* t) {
  if (!bt_require_op(t, CML_OP_IOTA)) return;
  const int64_t dims[3] = {3, 4, 5};
  for (size_t k = 0; k < CB_COUNT(cb_all); ++k) {
    const cml_dtype_t dt = cb_all[k];
    if (!cb_has(t, dt) || !(cml_op_dtypes(CML_OP_IOTA) & CML_DTYPE_BIT(dt))) continue;
    for (int axis = 0; axis < 3; ++axis) {
      bt_new_builder(t);
      cml_function_t* f = bt_main(t);
      cml_shape_t s = cml_shape_make(dt, 3, dims);
      cml_value_t y = cml_op_iota(f, &s, axis);
      bt_tensor_t out[1];
      if (!bt_exec(t, &y, 1, out)) return;
      int64_t want[60];
      for (int i = 0; i < 60; ++i) {
        const int64_t c[3] = {i / 20, (i / 5) % 4, i % 5};
        want[i] = c[axis];
      }
      char label[48];
      snprintf(label, sizeof label, "%s axis %d", cml_dtype_name(dt), axis);
      bt_expect_i64(t, label, &out[0], dt, 3, dims, want);
    }
  }
  // A long f16 axis: integers above 2048 round to even.
  if (cb_has(t, CML_DTYPE_F16)) {
    bt_new_builder(t);
    cml_function_t* f = bt_main(t);
    const int64_t n[1] = {2051};
    cml_shape_t s = cml_shape_make(CML_DTYPE_F16, 1, n);
    cml_value_t y = cml_op_iota(f, &s, 0);
    bt_tensor_t out[1];
    if (!bt_exec(t, &y, 1, out)) return;
    double* want = bt_alloc(t, 2051 * sizeof(double));
    for (int i = 0; i < 2051; ++i) want[i] = i;
    bt_expect_f64(t, "f16 iota", &out[0], CML_DTYPE_F16, 1, n, want, 0);
  }
}

//===--- division inside expressions ---===//

// Div stays one correctly rounded division whatever surrounds it: an explicitly broadcast
// divisor, a constant divisor, chained divisions and a square-root divisor. (A compiler that
// turns x / broadcast(y) into x * broadcast(1 / y), (a / b) / c into a / (b * c), a / (b / c)
// into (a * c) / b or a / sqrt(b) into a * rsqrt(b) rounds differently.) Every op here is exact
// (Div, Sqrt), so the expected values are each op rounded once, in order: Float32 ops are
// computed in double and rounded, which rounds them correctly (53 >= 2 * 24 + 2 bits).
static double cb_round_to(cml_dtype_t dt, double v) { return dt == CML_DTYPE_F32 ? (float)v : v; }

static void case_div_in_expressions(bt_t* t) {
  if (!bt_require_op(t, CML_OP_DIV) || !bt_require_op(t, CML_OP_BROADCAST_IN_DIM) ||
      !bt_require_op(t, CML_OP_SQRT) || !bt_require_op(t, CML_OP_ABS)) {
    return;
  }
  static const cml_dtype_t dts[] = {CML_DTYPE_F32, CML_DTYPE_F64};
  int ran = 0;
  for (size_t k = 0; k < CB_COUNT(dts); ++k) {
    const cml_dtype_t dt = dts[k];
    if (!cb_has(t, dt)) continue;
    ++ran;
    bt_new_builder(t);
    cml_function_t* f = bt_main(t);
    enum { N = 385 };
    const int64_t odd[3] = {5, 7, 11}, row[1] = {7};
    double *va = bt_alloc(t, N * sizeof(double)), *vb = bt_alloc(t, N * sizeof(double));
    double *vc = bt_alloc(t, N * sizeof(double)), *vr = bt_alloc(t, 7 * sizeof(double));
    for (int i = 0; i < N; ++i) {
      va[i] = bt_rand_uniform(t, -100, 100);
      vb[i] = bt_rand_uniform(t, 0.01, 50) * (i % 2 ? -1 : 1);
      vc[i] = bt_rand_uniform(t, 0.01, 50) * (i % 3 ? 1 : -1);
    }
    for (int i = 0; i < 7; ++i) vr[i] = bt_rand_uniform(t, 0.5, 9) * (i % 2 ? -1 : 1);
    bt_tensor_t a = bt_tensor_f64(t, dt, 3, odd, va), b = bt_tensor_f64(t, dt, 3, odd, vb);
    bt_tensor_t c = bt_tensor_f64(t, dt, 3, odd, vc), r = bt_tensor_f64(t, dt, 1, row, vr);
    cml_value_t pa = bt_param(t, f, &a), pb = bt_param(t, f, &b), pc = bt_param(t, f, &c);
    const int64_t axis1[1] = {1};
    cml_value_t wide = cml_op_broadcast_in_dim(f, bt_param(t, f, &r), odd, 3, axis1, 1);
    cml_value_t y[5] = {
        cml_op_div(f, pa, wide),
        cml_op_div(f, pa, cml_constant_scalar_f64(f, dt, 3.0)),
        cml_op_div(f, cml_op_div(f, pa, pb), pc),
        cml_op_div(f, pa, cml_op_div(f, pb, pc)),
        cml_op_div(f, pa, cml_op_sqrt(f, cml_op_abs(f, pb))),
    };
    bt_tensor_t out[5];
    if (!bt_exec(t, y, 5, out)) return;
    double* w[5];
    for (int j = 0; j < 5; ++j) w[j] = bt_alloc(t, N * sizeof(double));
    for (int i = 0; i < N; ++i) {
      const double x = bt_get_f64(&a, i), p = bt_get_f64(&b, i), q = bt_get_f64(&c, i);
      const double rr = bt_get_f64(&r, (i / 11) % 7);
      w[0][i] = cb_round_to(dt, x / rr);
      w[1][i] = cb_round_to(dt, x / 3.0);
      w[2][i] = cb_round_to(dt, cb_round_to(dt, x / p) / q);
      w[3][i] = cb_round_to(dt, x / cb_round_to(dt, p / q));
      w[4][i] = cb_round_to(dt, x / cb_round_to(dt, sqrt(fabs(p))));
    }
    static const char* const what[5] = {"x / broadcast_in_dim(r)", "x / 3", "(x / p) / q",
                                        "x / (p / q)", "x / sqrt(|p|)"};
    for (int j = 0; j < 5; ++j) {
      char label[96];
      snprintf(label, sizeof label, "%s %s", cml_dtype_name(dt), what[j]);
      bt_expect_f64(t, label, &out[j], dt, 3, odd, w[j], 0);
    }
  }
  if (!ran) bt_unsupported(t, "the backend has neither Float32 nor Float64");
}

const bt_case_t bt_cases_elementwise_binary[] = {
    {"add_float", CML_OP_ADD, case_float_add},
    {"sub_float", CML_OP_SUB, case_float_sub},
    {"mul_float", CML_OP_MUL, case_float_mul},
    {"div_float", CML_OP_DIV, case_float_div},
    {"div_in_expressions", CML_OP_DIV, case_div_in_expressions},
    {"max_float", CML_OP_MAX, case_float_max},
    {"min_float", CML_OP_MIN, case_float_min},
    {"pow_float", CML_OP_POW, case_float_pow},
    {"pow_constant_exponents", CML_OP_POW, case_float_pow_constant_exponents},
    {"rem_float", CML_OP_REM, case_float_rem},
    {"atan2", CML_OP_ATAN2, case_float_atan2},
    {"add_int", CML_OP_ADD, case_int_add},
    {"sub_int", CML_OP_SUB, case_int_sub},
    {"mul_int", CML_OP_MUL, case_int_mul},
    {"div_int", CML_OP_DIV, case_int_div},
    {"div_int_by_itself", CML_OP_DIV, case_int_div_by_itself},
    {"rem_int", CML_OP_REM, case_int_rem},
    {"max_int", CML_OP_MAX, case_int_max},
    {"min_int", CML_OP_MIN, case_int_min},
    {"pow_int", CML_OP_POW, case_int_pow},
    {"bitwise_and", CML_OP_BITWISE_AND, case_int_and},
    {"bitwise_or", CML_OP_BITWISE_OR, case_int_or},
    {"bitwise_xor", CML_OP_BITWISE_XOR, case_int_xor},
    {"shift_left", CML_OP_SHIFT_LEFT, case_int_shift_left},
    {"shift_right_arithmetic", CML_OP_SHIFT_RIGHT_ARITHMETIC, case_int_shift_right_arithmetic},
    {"shift_right_logical", CML_OP_SHIFT_RIGHT_LOGICAL, case_int_shift_right_logical},
    {"equal", CML_OP_EQUAL, case_equal},
    {"not_equal", CML_OP_NOT_EQUAL, case_not_equal},
    {"less_than", CML_OP_LESS_THAN, case_less_than},
    {"less_or_equal", CML_OP_LESS_OR_EQUAL, case_less_or_equal},
    {"greater_than", CML_OP_GREATER_THAN, case_greater_than},
    {"greater_or_equal", CML_OP_GREATER_OR_EQUAL, case_greater_or_equal},
    {"equal_total_order", CML_OP_EQUAL_TOTAL_ORDER, case_equal_total_order},
    {"not_equal_total_order", CML_OP_NOT_EQUAL_TOTAL_ORDER, case_not_equal_total_order},
    {"less_than_total_order", CML_OP_LESS_THAN_TOTAL_ORDER, case_less_than_total_order},
    {"less_or_equal_total_order", CML_OP_LESS_OR_EQUAL_TOTAL_ORDER, case_less_or_equal_total_order},
    {"greater_than_total_order", CML_OP_GREATER_THAN_TOTAL_ORDER, case_greater_than_total_order},
    {"greater_or_equal_total_order", CML_OP_GREATER_OR_EQUAL_TOTAL_ORDER,
     case_greater_or_equal_total_order},
    {"logical_and", CML_OP_LOGICAL_AND, case_logical_and},
    {"logical_or", CML_OP_LOGICAL_OR, case_logical_or},
    {"logical_xor", CML_OP_LOGICAL_XOR, case_logical_xor},
    {"broadcast_shapes", CML_OP_ADD, case_broadcast_shapes},
    {"complex_arith", CML_OP_MUL, case_complex_binary},
    {"complex", CML_OP_COMPLEX, case_complex_op},
    {"clamp", CML_OP_CLAMP, case_clamp},
    {"where_all_dtypes", CML_OP_WHERE, case_where_all_dtypes},
    {"iota_all_dtypes", CML_OP_IOTA, case_iota_all_dtypes},
};
const size_t bt_cases_elementwise_binary_count =
    sizeof bt_cases_elementwise_binary / sizeof bt_cases_elementwise_binary[0];
