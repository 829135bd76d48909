// SPDX-License-Identifier: Apache-2.0
// backendtest/cases_elementwise_unary.c: compliance cases of the "elementwise_unary" group:
// elementwise unary ops, Identity, ConvertDType and Bitcast.
//
// Float ops sweep F32, F64, F16 and BF16 over edge values (±0, ±Inf, NaN, halves for rounding)
// and over a 5x7x11 tensor of values in the op's domain. Expected values come from libm in
// double precision applied to the inputs as stored (after rounding into the dtype), rounded
// once to the dtype; tolerances are in ulps of the output dtype (exact ops: 0). Integer ops
// use plain reference loops with explicit wrap-around. ConvertDType covers every pair of the
// supported dtypes (packed ints included) against a reference conversion written here.
//
// Latitudes granted to every backend (docs/compliance.md has the reasons):
// - Transcendental ops (the ones with a non-zero ulp bound) may flush a subnormal result to a
//   zero of the same sign, as runtimes that compute with flush-to-zero do (XLA's CPU runtime).
//   Exact ops (Abs, Neg, Sign, Ceil, Floor, Round, Sqrt, Real, Imag) get no such latitude.
// - Erf in Float32 is held to 8 ulps instead of 4: XLA's Erf expansion (the same on every XLA
//   platform) is off by up to 7 ulps for |x| in [3.1, 3.9], where erf(x) is within 1e-5 of ±1
//   (measured over every normal Float32 input).
// bt.h (cml/graph.h) comes before <complex.h>: its `complex` macro would rename the
// generated cml_op_complex declaration.
#include "backendtest/bt.h"

#include <complex.h>
// glibc's <complex.h> defines CMPLX only for GCC; clang has the same builtin.
#ifndef CMPLX
#define CMPLX(x, y) __builtin_complex((double)(x), (double)(y))
#endif
#include <float.h>
#include <math.h>
#include <string.h>

//===--- helpers ---===//

static const cml_dtype_t cu_floats[] = {CML_DTYPE_F32, CML_DTYPE_F64, CML_DTYPE_F16,
                                        CML_DTYPE_BF16};
static const cml_dtype_t cu_sints[] = {CML_DTYPE_I8, CML_DTYPE_I16, CML_DTYPE_I32, CML_DTYPE_I64};
static const cml_dtype_t cu_ints[] = {CML_DTYPE_I8, CML_DTYPE_I16, CML_DTYPE_I32, CML_DTYPE_I64,
                                      CML_DTYPE_U8, CML_DTYPE_U16, CML_DTYPE_U32, CML_DTYPE_U64};
static const cml_dtype_t cu_all[] = {CML_DTYPE_BOOL, CML_DTYPE_I8,  CML_DTYPE_I16,  CML_DTYPE_I32,
                                     CML_DTYPE_I64,  CML_DTYPE_U8,  CML_DTYPE_U16,  CML_DTYPE_U32,
                                     CML_DTYPE_U64,  CML_DTYPE_F16, CML_DTYPE_BF16, CML_DTYPE_F32,
                                     CML_DTYPE_F64,  CML_DTYPE_C64, CML_DTYPE_C128, CML_DTYPE_I4,
                                     CML_DTYPE_U4,   CML_DTYPE_I2,  CML_DTYPE_U2};
#define CU_COUNT(a) (sizeof(a) / sizeof((a)[0]))

static bool cu_has(bt_t* t, cml_dtype_t dtype) {
  return cml_capabilities_has_dtype(cml_backend_capabilities(bt_backend(t)), dtype);
}

// The complex dtypes the backend has, one per call:
//   cml_dtype_t dt;
//   for (size_t k = 0; cu_next_complex(t, &k, &dt);) { ... }
static bool cu_next_complex(bt_t* t, size_t* k, cml_dtype_t* dt) {
  static const cml_dtype_t all[] = {CML_DTYPE_C64, CML_DTYPE_C128};
  while (*k < CU_COUNT(all)) {
    const cml_dtype_t d = all[(*k)++];
    if (cu_has(t, d)) {
      *dt = d;
      return true;
    }
  }
  return false;
}

static const double cu_edges[] = {0.0,       -0.0, 1.0,  -1.0,  0.5,  -0.5,      1.5,
                                  2.5,       -2.5, 3.7,  1e-3,  10.0, -10.0,     INFINITY,
                                  -INFINITY, NAN,  100., -100., 0.25, 7.0 / 3.0, -1.0 / 3.0};
#define CU_EDGE_COUNT ((int64_t)CU_COUNT(cu_edges))

static const int64_t cu_odd_dims[3] = {5, 7, 11};
#define CU_ODD_COUNT (5 * 7 * 11)

//===--- float unary ops ---===//

static double cu_sign(double x) { return isnan(x) ? x : x > 0 ? 1.0 : x < 0 ? -1.0 : x; }
static double cu_neg(double x) { return -x; }
static double cu_rsqrt(double x) { return 1.0 / sqrt(x); }
static double cu_logistic(double x) { return 1.0 / (1.0 + exp(-x)); }
static double cu_real(double x) { return x; }
static double cu_imag(double x) {
  (void)x;
  return 0.0;
}

typedef struct cu_float_op_t {
  const char* name;
  cml_op_t op;
  double (*ref)(double);
  int64_t ulps;       // f32 / f64 tolerance
  int64_t half_ulps;  // f16 / bf16 tolerance (computed in f32, rounded once)
  double lo, hi;      // domain of the random inputs
} cu_float_op_t;

static const cu_float_op_t cu_float_ops[] = {
    {"abs", CML_OP_ABS, fabs, 0, 0, -100, 100},
    {"neg", CML_OP_NEG, cu_neg, 0, 0, -100, 100},
    {"sign", CML_OP_SIGN, cu_sign, 0, 0, -2, 2},
    {"ceil", CML_OP_CEIL, ceil, 0, 0, -20, 20},
    {"floor", CML_OP_FLOOR, floor, 0, 0, -20, 20},
    {"round", CML_OP_ROUND, rint, 0, 0, -20, 20},
    {"sqrt", CML_OP_SQRT, sqrt, 0, 1, 0, 1000},
    {"rsqrt", CML_OP_RSQRT, cu_rsqrt, 2, 1, 1e-3, 1000},
    {"exp", CML_OP_EXP, exp, 4, 1, -20, 20},
    {"expm1", CML_OP_EXPM1, expm1, 4, 1, -5, 5},
    {"log", CML_OP_LOG, log, 4, 1, 1e-3, 1e3},
    {"log1p", CML_OP_LOG1P, log1p, 4, 1, -0.9, 100},
    {"logistic", CML_OP_LOGISTIC, cu_logistic, 4, 1, -20, 20},
    {"tanh", CML_OP_TANH, tanh, 4, 1, -5, 5},
    {"sin", CML_OP_SIN, sin, 4, 1, -10, 10},
    {"cos", CML_OP_COS, cos, 4, 1, -10, 10},
    {"erf", CML_OP_ERF, erf, 4, 1, -3, 3},
    {"real", CML_OP_REAL, cu_real, 0, 0, -10, 10},
    {"imag", CML_OP_IMAG, cu_imag, 0, 0, -10, 10},
};

// Applies |ref| to every element of |x| (as stored) and rounds into |x|'s dtype.
static bt_tensor_t cu_expect_unary(bt_t* t, const bt_tensor_t* x, double (*ref)(double)) {
  const int64_t n = cml_shape_element_count(&x->shape);
  double* v = bt_alloc(t, (size_t)(n + 1) * sizeof(double));
  for (int64_t i = 0; i < n; ++i) v[i] = ref(bt_get_f64(x, i));
  return bt_tensor_f64(t, x->shape.dtype, x->shape.rank, x->shape.dims, v);
}

// The smallest positive normal value of the float dtype |dt|.
static double cu_min_normal(cml_dtype_t dt) {
  switch (dt) {
    case CML_DTYPE_F16:
      return 0x1p-14;
    case CML_DTYPE_BF16:
    case CML_DTYPE_F32:
      return 0x1p-126;
    default:
      return 0x1p-1022;
  }
}

// The flush-to-zero latitude of transcendental ops: a copy of |want| in which every subnormal
// expected value that |got| returned as a zero of the same sign is replaced by that zero. Any
// other difference (a wrong non-zero value, a zero of the wrong sign, a flushed normal result)
// still fails the comparison that follows.
static bt_tensor_t cu_allow_flushed(bt_t* t, const bt_tensor_t* want, const bt_tensor_t* got) {
  const cml_dtype_t dt = want->shape.dtype;
  const int64_t n = cml_shape_element_count(&want->shape);
  const double min_normal = cu_min_normal(dt);
  double* v = bt_alloc(t, (size_t)(n + 1) * sizeof(double));
  for (int64_t i = 0; i < n; ++i) {
    const double w = bt_get_f64(want, i), g = bt_get_f64(got, i);
    const bool subnormal = w != 0 && fabs(w) < min_normal;
    v[i] = (subnormal && g == 0 && signbit(g) == signbit(w)) ? g : w;
  }
  return bt_tensor_f64(t, dt, want->shape.rank, want->shape.dims, v);
}

// The ulp bound of a transcendental op for |dt| (see the latitudes above).
static int64_t cu_transcendental_ulps(cml_op_t op, cml_dtype_t dt, int64_t ulps) {
  return (op == CML_OP_ERF && dt == CML_DTYPE_F32 && ulps < 8) ? 8 : ulps;
}

static void cu_run_float_op(bt_t* t, const cu_float_op_t* op) {
  if (!bt_require_op(t, op->op)) return;
  for (size_t k = 0; k < CU_COUNT(cu_floats); ++k) {
    const cml_dtype_t dt = cu_floats[k];
    if (!cu_has(t, dt)) continue;
    bt_new_builder(t);
    cml_function_t* f = bt_main(t);
    const int64_t edge_dims[1] = {CU_EDGE_COUNT};
    bt_tensor_t x1 = bt_tensor_f64(t, dt, 1, edge_dims, cu_edges);
    double* r = bt_alloc(t, CU_ODD_COUNT * sizeof(double));
    for (int i = 0; i < CU_ODD_COUNT; ++i) r[i] = bt_rand_uniform(t, op->lo, op->hi);
    bt_tensor_t x2 = bt_tensor_f64(t, dt, 3, cu_odd_dims, r);
    bt_tensor_t x3 = bt_tensor_f64(t, dt, 0, NULL, (double[]){0.75});
    cml_value_t y[3] = {cml_op_unary(f, op->op, bt_param(t, f, &x1)),
                        cml_op_unary(f, op->op, bt_param(t, f, &x2)),
                        cml_op_unary(f, op->op, bt_param(t, f, &x3))};
    bt_tensor_t out[3];
    if (!bt_exec(t, y, 3, out)) return;
    const int64_t ulps = (dt == CML_DTYPE_F16 || dt == CML_DTYPE_BF16)
                             ? op->half_ulps
                             : cu_transcendental_ulps(op->op, dt, op->ulps);
    const bt_tensor_t* xs[3] = {&x1, &x2, &x3};
    static const char* const what[3] = {"edges", "5x7x11", "scalar"};
    for (int j = 0; j < 3; ++j) {
      bt_tensor_t want = cu_expect_unary(t, xs[j], op->ref);
      char label[96];
      snprintf(label, sizeof label, "%s %s %s", op->name, cml_dtype_name(dt), what[j]);
      if (ulps == 0) {
        bt_expect_equal(t, label, &out[j], &want);
      } else if (op->ulps == 0) {
        bt_expect_ulps(t, label, &out[j], &want, ulps);  // an exact op computed in f32 (halves)
      } else {
        // A transcendental op (ulps > 0 for f32/f64): subnormal results may be flushed.
        bt_tensor_t accepted = cu_allow_flushed(t, &want, &out[j]);
        bt_expect_ulps(t, label, &out[j], &accepted, ulps);
      }
    }
  }
}

// The row of cu_float_ops named |name| (a case finds its row by name, so rows may be added
// anywhere), or NULL.
static const cu_float_op_t* cu_float_op_named(const char* name) {
  for (size_t i = 0; i < sizeof cu_float_ops / sizeof *cu_float_ops; ++i) {
    if (strcmp(cu_float_ops[i].name, name) == 0) return &cu_float_ops[i];
  }
  return NULL;
}

#define CU_FLOAT_CASE(fname)                                     \
  static void case_float_##fname(bt_t* t) {                      \
    const cu_float_op_t* op_ = cu_float_op_named(#fname);        \
    if (!op_) {                                                  \
      bt_fail(t, "no row named \"%s\" in cu_float_ops", #fname); \
      return;                                                    \
    }                                                            \
    cu_run_float_op(t, op_);                                     \
  }
CU_FLOAT_CASE(abs)
CU_FLOAT_CASE(neg)
CU_FLOAT_CASE(sign)
CU_FLOAT_CASE(ceil)
CU_FLOAT_CASE(floor)
CU_FLOAT_CASE(round)
CU_FLOAT_CASE(sqrt)
CU_FLOAT_CASE(rsqrt)
CU_FLOAT_CASE(exp)
CU_FLOAT_CASE(expm1)
CU_FLOAT_CASE(log)
CU_FLOAT_CASE(log1p)
CU_FLOAT_CASE(logistic)
CU_FLOAT_CASE(tanh)
CU_FLOAT_CASE(sin)
CU_FLOAT_CASE(cos)
CU_FLOAT_CASE(erf)
CU_FLOAT_CASE(real)
CU_FLOAT_CASE(imag)

// IsFinite / IsNaN: Bool outputs, exact.
static void cu_run_float_predicate(bt_t* t, cml_op_t op) {
  if (!bt_require_op(t, op)) return;
  for (size_t k = 0; k < CU_COUNT(cu_floats); ++k) {
    const cml_dtype_t dt = cu_floats[k];
    if (!cu_has(t, dt)) continue;
    bt_new_builder(t);
    cml_function_t* f = bt_main(t);
    const int64_t dims[1] = {CU_EDGE_COUNT};
    bt_tensor_t x = bt_tensor_f64(t, dt, 1, dims, cu_edges);
    cml_value_t y = cml_op_unary(f, op, bt_param(t, f, &x));
    bt_tensor_t out[1];
    if (!bt_exec(t, &y, 1, out)) return;
    int64_t want[CU_COUNT(cu_edges)];
    for (int64_t i = 0; i < CU_EDGE_COUNT; ++i) {
      const double v = bt_get_f64(&x, i);
      want[i] = op == CML_OP_IS_NAN ? isnan(v) != 0 : isfinite(v) != 0;
    }
    bt_expect_i64(t, cml_dtype_name(dt), &out[0], CML_DTYPE_BOOL, 1, dims, want);
  }
}
static void case_is_finite(bt_t* t) { cu_run_float_predicate(t, CML_OP_IS_FINITE); }
static void case_is_nan(bt_t* t) { cu_run_float_predicate(t, CML_OP_IS_NAN); }

//===--- complex unary ops ---===//

static const double cu_complex_values[] = {1, 2, -3, 0.5, 0.5,  -4,   2, 0,
                                           0, 1, -1, -1,  1e-3, 2e-3, 3, 4};
#define CU_COMPLEX_COUNT ((int64_t)(CU_COUNT(cu_complex_values) / 2))

typedef enum cu_cop_t {
  CU_C_ABS,
  CU_C_NEG,
  CU_C_SIGN,
  CU_C_SQRT,
  CU_C_RSQRT,
  CU_C_EXP,
  CU_C_EXPM1,
  CU_C_LOG,
  CU_C_LOG1P,
  CU_C_REAL,
  CU_C_IMAG,
  CU_C_CONJ,
  CU_C_COUNT
} cu_cop_t;
static const cml_op_t cu_complex_op_ids[CU_C_COUNT] = {
    CML_OP_ABS,   CML_OP_NEG, CML_OP_SIGN,  CML_OP_SQRT, CML_OP_RSQRT, CML_OP_EXP,
    CML_OP_EXPM1, CML_OP_LOG, CML_OP_LOG1P, CML_OP_REAL, CML_OP_IMAG,  CML_OP_CONJ};

static double complex cu_cref(cu_cop_t op, double complex z) {
  switch (op) {
    case CU_C_ABS:
      return cabs(z);
    case CU_C_NEG:
      return -z;
    case CU_C_SIGN:
      return z == 0 ? 0 : z / cabs(z);
    case CU_C_SQRT:
      return csqrt(z);
    case CU_C_RSQRT:
      return 1.0 / csqrt(z);
    case CU_C_EXP:
      return cexp(z);
    case CU_C_EXPM1:
      return cexp(z) - 1.0;
    case CU_C_LOG:
      return clog(z);
    case CU_C_LOG1P:
      return clog(1.0 + z);
    case CU_C_REAL:
      return creal(z);
    case CU_C_IMAG:
      return cimag(z);
    default:
      return conj(z);
  }
}

static void case_complex_unary(bt_t* t) {
  size_t ran = 0;  // a backend without any of the dtypes/ops must not pass this case
  cml_dtype_t dt;
  for (size_t k = 0; cu_next_complex(t, &k, &dt);) {
    for (int op = 0; op < CU_C_COUNT; ++op) {
      if (!cml_capabilities_has_op(cml_backend_capabilities(bt_backend(t)),
                                   cu_complex_op_ids[op])) {
        continue;
      }
      bt_new_builder(t);
      cml_function_t* f = bt_main(t);
      const int64_t dims[1] = {CU_COMPLEX_COUNT};
      bt_tensor_t x = bt_tensor_c(t, dt, 1, dims, cu_complex_values);
      cml_value_t y = cml_op_unary(f, cu_complex_op_ids[op], bt_param(t, f, &x));
      bt_tensor_t out[1];
      if (!bt_exec(t, &y, 1, out)) return;
      ++ran;
      const bool real_out = op == CU_C_ABS || op == CU_C_REAL || op == CU_C_IMAG;
      double v[2 * CU_COUNT(cu_complex_values)];
      for (int64_t i = 0; i < CU_COMPLEX_COUNT; ++i) {
        const double complex z = CMPLX(cu_complex_values[2 * i], cu_complex_values[2 * i + 1]);
        const double complex r = cu_cref((cu_cop_t)op, z);
        if (real_out) {
          v[i] = creal(r);
        } else {
          v[2 * i] = creal(r);
          v[2 * i + 1] = cimag(r);
        }
      }
      bt_tensor_t want = real_out ? bt_tensor_f64(t, cml_dtype_real_part(dt), 1, dims, v)
                                  : bt_tensor_c(t, dt, 1, dims, v);
      char label[64];
      snprintf(label, sizeof label, "%s %s", cml_op_name(cu_complex_op_ids[op]),
               cml_dtype_name(dt));
      if (dt == CML_DTYPE_C64) {
        bt_expect_close(t, label, &out[0], &want, 2e-6, 1e-6);
      } else {
        bt_expect_close(t, label, &out[0], &want, 1e-13, 1e-15);
      }
    }
  }
  if (ran == 0) bt_unsupported(t, "no complex dtype with a complex unary op");
}

// Complex Abs at non-finite and extreme values (C99 Annex G, as hypot): +inf when either part
// is infinite (even with a NaN in the other), NaN when a part is NaN, and no overflow for parts
// whose squares overflow.
static void case_complex_abs_edges(bt_t* t) {
  if (!bt_require_op(t, CML_OP_ABS)) return;
  static const double v[] = {0, NAN,  NAN,  0,    INFINITY, NAN, NAN, -INFINITY, 3,
                             4, -0.0, -0.0, 1e30, -1e30,    -5,  12,  1e-30,     1e-30};
  enum { COUNT = sizeof v / sizeof v[0] / 2 };
  int ran = 0;
  cml_dtype_t dt;
  for (size_t k = 0; cu_next_complex(t, &k, &dt);) {
    ++ran;
    bt_new_builder(t);
    cml_function_t* f = bt_main(t);
    const int64_t dims[1] = {COUNT};
    bt_tensor_t x = bt_tensor_c(t, dt, 1, dims, v);
    cml_value_t y = cml_op_abs(f, bt_param(t, f, &x));
    bt_tensor_t out[1];
    if (!bt_exec(t, &y, 1, out)) return;
    double want[COUNT];
    for (int i = 0; i < COUNT; ++i) want[i] = hypot(v[2 * i], v[2 * i + 1]);
    bt_tensor_t w = bt_tensor_f64(t, cml_dtype_real_part(dt), 1, dims, want);
    bt_expect_ulps(t, cml_dtype_name(dt), &out[0], &w, 2);
  }
  if (!ran) bt_unsupported(t, "the backend has no complex dtype");
}

// Log, Log1p, Sqrt and Sign of a complex value with a NaN part and no infinite part are
// NaN + NaN i (C99 Annex G); xla:cpu's expansions once returned a finite part (Log(1 + NaN i) =
// 0.3466 + NaN i).
static void case_complex_nan_parts(bt_t* t) {
  static const double v[] = {1, NAN, 0, NAN, NAN, 1, 0.5, NAN, NAN, NAN};
  static const double want[] = {NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN};
  enum { COUNT = sizeof v / sizeof v[0] / 2 };
  static const cml_op_t ops[] = {CML_OP_LOG, CML_OP_LOG1P, CML_OP_SQRT, CML_OP_SIGN};
  int ran = 0;
  cml_dtype_t dt;
  for (size_t k = 0; cu_next_complex(t, &k, &dt);) {
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; ++o) {
      if (!cml_capabilities_has_op(cml_backend_capabilities(bt_backend(t)), ops[o])) continue;
      ++ran;
      bt_new_builder(t);
      cml_function_t* f = bt_main(t);
      const int64_t dims[1] = {COUNT};
      bt_tensor_t x = bt_tensor_c(t, dt, 1, dims, v);
      cml_value_t y = cml_op_unary(f, ops[o], bt_param(t, f, &x));
      bt_tensor_t out[1];
      if (!bt_exec(t, &y, 1, out)) return;
      bt_tensor_t w = bt_tensor_c(t, dt, 1, dims, want);
      char label[64];
      snprintf(label, sizeof label, "%s %s", cml_op_name(ops[o]), cml_dtype_name(dt));
      bt_expect_ulps(t, label, &out[0], &w, 0);
    }
  }
  if (!ran) bt_unsupported(t, "no complex dtype with Log, Log1p, Sqrt or Sign");
}

// Complex Sign of a value whose |z| overflows while both parts are finite is z / |z| all the
// same (1/sqrt(2) in each part; 0 on both backends once), and the real part of Expm1 with a real
// part of -inf is -1 (exp(z) is 0 there; NaN once).
static void case_complex_sign_expm1_edges(bt_t* t) {
  if (!bt_require_op(t, CML_OP_SIGN) || !bt_require_op(t, CML_OP_EXPM1) ||
      !bt_require_op(t, CML_OP_REAL))
    return;
  int ran = 0;
  cml_dtype_t dt;
  for (size_t k = 0; cu_next_complex(t, &k, &dt);) {
    ++ran;
    bt_new_builder(t);
    cml_function_t* f = bt_main(t);
    const double big = dt == CML_DTYPE_C64 ? (double)FLT_MAX : DBL_MAX;
    const int64_t n1 = 1, n2 = 2;
    bt_tensor_t x = bt_tensor_c(t, dt, 1, &n1, (double[]){big, big});
    bt_tensor_t z = bt_tensor_c(t, dt, 1, &n2, (double[]){-INFINITY, INFINITY, -INFINITY, NAN});
    cml_value_t outs[2] = {
        cml_op_unary(f, CML_OP_SIGN, bt_param(t, f, &x)),
        cml_op_unary(f, CML_OP_REAL, cml_op_unary(f, CML_OP_EXPM1, bt_param(t, f, &z)))};
    bt_tensor_t out[2];
    if (!bt_exec(t, outs, 2, out)) return;
    bt_tensor_t w =
        bt_tensor_c(t, dt, 1, &n1, (double[]){0.70710678118654752440, 0.70710678118654752440});
    bt_expect_ulps(t, "Sign", &out[0], &w, 2);
    bt_expect_f64(t, "Real(Expm1)", &out[1], cml_dtype_real_part(dt), 1, &n2, (double[]){-1, -1},
                  0);
  }
  if (!ran) bt_unsupported(t, "the backend has no complex dtype");
}

//===--- integer unary ops ---===//

static const int64_t cu_int_values[] = {0,         1,          -1,        2,         -2,
                                        5,         100,        -100,      127,       -128,
                                        255,       32767,      -32768,    65535,     INT32_MAX,
                                        INT32_MIN, 0xdeadbeef, INT64_MAX, INT64_MIN, 12345678901LL};
#define CU_INT_COUNT ((int64_t)CU_COUNT(cu_int_values))

static int64_t cu_int_ref(cml_op_t op, int64_t v, int bits) {
  const uint64_t mask = bits == 64 ? ~(uint64_t)0 : (((uint64_t)1 << bits) - 1);
  const uint64_t u = (uint64_t)v & mask;
  switch (op) {
    case CML_OP_ABS:
      return v < 0 ? (int64_t)((uint64_t)0 - (uint64_t)v) : v;
    case CML_OP_NEG:
      return (int64_t)((uint64_t)0 - (uint64_t)v);
    case CML_OP_SIGN:
      return (v > 0) - (v < 0);
    case CML_OP_BIT_COUNT: {
      int64_t c = 0;
      for (int b = 0; b < bits; ++b) c += (u >> b) & 1u;
      return c;
    }
    case CML_OP_CLZ: {
      int64_t c = 0;
      for (int b = bits - 1; b >= 0 && !((u >> b) & 1u); --b) ++c;
      return c;
    }
    default:
      return (int64_t)(~u);  // BitwiseNot
  }
}

static void cu_run_int_op(bt_t* t, cml_op_t op, bool signed_only) {
  if (!bt_require_op(t, op)) return;
  const cml_dtype_t* dts = signed_only ? cu_sints : cu_ints;
  const size_t count = signed_only ? CU_COUNT(cu_sints) : CU_COUNT(cu_ints);
  for (size_t k = 0; k < count; ++k) {
    const cml_dtype_t dt = dts[k];
    if (!cu_has(t, dt)) continue;
    bt_new_builder(t);
    cml_function_t* f = bt_main(t);
    const int64_t dims[1] = {CU_INT_COUNT};
    bt_tensor_t x = bt_tensor_i64(t, dt, 1, dims, cu_int_values);
    cml_value_t y = cml_op_unary(f, op, bt_param(t, f, &x));
    bt_tensor_t out[1];
    if (!bt_exec(t, &y, 1, out)) return;
    int64_t want[CU_COUNT(cu_int_values)];
    for (int64_t i = 0; i < CU_INT_COUNT; ++i) {
      want[i] = cu_int_ref(op, bt_get_i64(&x, i), cml_dtype_bits(dt));
    }
    bt_expect_i64(t, cml_dtype_name(dt), &out[0], dt, 1, dims, want);
  }
}
static void case_int_abs(bt_t* t) { cu_run_int_op(t, CML_OP_ABS, true); }
static void case_int_neg(bt_t* t) { cu_run_int_op(t, CML_OP_NEG, true); }
static void case_int_sign(bt_t* t) { cu_run_int_op(t, CML_OP_SIGN, true); }
static void case_bit_count(bt_t* t) { cu_run_int_op(t, CML_OP_BIT_COUNT, false); }
static void case_clz(bt_t* t) { cu_run_int_op(t, CML_OP_CLZ, false); }
static void case_bitwise_not(bt_t* t) { cu_run_int_op(t, CML_OP_BITWISE_NOT, false); }

static void case_logical_not(bt_t* t) {
  if (!bt_require_op(t, CML_OP_LOGICAL_NOT) || !bt_require_dtype(t, CML_DTYPE_BOOL)) return;
  cml_function_t* f = bt_main(t);
  const int64_t dims[2] = {2, 3};
  cml_value_t y = cml_op_logical_not(
      f, bt_param_i64(t, f, CML_DTYPE_BOOL, 2, dims, (int64_t[]){1, 0, 0, 1, 1, 0}));
  bt_tensor_t out[1];
  if (!bt_exec(t, &y, 1, out)) return;
  bt_expect_i64(t, "not", &out[0], CML_DTYPE_BOOL, 2, dims, (int64_t[]){0, 1, 1, 0, 0, 1});
}

//===--- Identity ---===//

static void case_identity_all_dtypes(bt_t* t) {
  if (!bt_require_op(t, CML_OP_IDENTITY)) return;
  const int64_t dims[3] = {3, 1, 5};
  for (size_t k = 0; k < CU_COUNT(cu_all); ++k) {
    const cml_dtype_t dt = cu_all[k];
    if (!cu_has(t, dt)) continue;
    bt_new_builder(t);
    cml_function_t* f = bt_main(t);
    int64_t v[15];
    for (int i = 0; i < 15; ++i) v[i] = dt == CML_DTYPE_BOOL ? i % 2 : (i * 7) % 4 - 1;
    bt_tensor_t x = bt_tensor_i64(t, dt, 3, dims, v);
    cml_value_t y = cml_op_identity(f, bt_param(t, f, &x));
    bt_tensor_t out[1];
    if (!bt_exec(t, &y, 1, out)) return;
    bt_expect_equal(t, cml_dtype_name(dt), &out[0], &x);
  }
}

//===--- ConvertDType: every pair ---===//

static const double cu_convert_values[] = {
    0,      1,     -1,    2.5,  -2.5,  3.75, -7.5,     100,       -100, 127, 128, 255, 256, -129,
    1000.5, 65535, 70000, 1e10, -1e10, NAN,  INFINITY, -INFINITY, -0.0, 0.3, 1.5, -8,  7};
#define CU_CONVERT_COUNT ((int64_t)CU_COUNT(cu_convert_values))

// The source tensor for |dt| built from the value list (unsigned types get |v|, so that every
// integer source value is exact in a double).
static bt_tensor_t cu_convert_source(bt_t* t, cml_dtype_t dt) {
  const int64_t dims[1] = {CU_CONVERT_COUNT};
  double v[2 * CU_COUNT(cu_convert_values)];
  if (cml_dtype_is_complex(dt)) {
    for (int64_t i = 0; i < CU_CONVERT_COUNT; ++i) {
      v[2 * i] = cu_convert_values[i];
      v[2 * i + 1] = (double)(i % 3) - 1.0;
    }
    return bt_tensor_c(t, dt, 1, dims, v);
  }
  for (int64_t i = 0; i < CU_CONVERT_COUNT; ++i) {
    double x = cu_convert_values[i];
    if (cml_dtype_is_unsigned_int(dt)) x = fabs(x);
    if (cml_dtype_is_int(dt) && !isfinite(x)) x = 3;  // keep the source well defined
    v[i] = x;
  }
  return bt_tensor_f64(t, dt, 1, dims, v);
}

// Imaginary part of element |i| of a complex tensor, 0 otherwise.
static double cu_imag_at(const bt_tensor_t* x, int64_t i) {
  if (x->shape.dtype == CML_DTYPE_C64) return ((const float*)x->data)[2 * i + 1];
  if (x->shape.dtype == CML_DTYPE_C128) return ((const double*)x->data)[2 * i + 1];
  return 0.0;
}

// Float -> int: truncation toward zero, saturation, NaN -> 0; returned as the target's bits.
static int64_t cu_float_to_int_bits(double d, cml_dtype_t to) {
  const int bits = cml_dtype_bits(to);
  if (isnan(d)) return 0;
  if (cml_dtype_is_unsigned_int(to)) {
    const double hi = ldexp(1.0, bits);  // 2^bits
    if (d <= 0) return 0;
    if (d >= hi) return (int64_t)(bits == 64 ? ~(uint64_t)0 : ((uint64_t)1 << bits) - 1);
    return (int64_t)(uint64_t)trunc(d);
  }
  const double lim = ldexp(1.0, bits - 1);  // 2^(bits-1)
  if (d >= lim) return bits == 64 ? INT64_MAX : (int64_t)(((uint64_t)1 << (bits - 1)) - 1);
  if (d <= -lim) return bits == 64 ? INT64_MIN : -(int64_t)((uint64_t)1 << (bits - 1));
  return (int64_t)trunc(d);
}

static bt_tensor_t cu_convert_expect(bt_t* t, const bt_tensor_t* x, cml_dtype_t to) {
  const cml_dtype_t from = x->shape.dtype;
  const int64_t n = CU_CONVERT_COUNT;
  const int64_t dims[1] = {n};
  const bool from_int = cml_dtype_is_int(from) || from == CML_DTYPE_BOOL;
  double* d = bt_alloc(t, (size_t)(2 * n) * sizeof(double));
  int64_t* iv = bt_alloc(t, (size_t)n * sizeof(int64_t));
  for (int64_t i = 0; i < n; ++i) {
    const double re = from_int ? (double)bt_get_i64(x, i) : bt_get_f64(x, i);
    const double im = cu_imag_at(x, i);
    if (to == CML_DTYPE_BOOL) {
      iv[i] = (re != 0 || im != 0) ? 1 : 0;
    } else if (cml_dtype_is_int(to)) {
      iv[i] = from_int ? bt_get_i64(x, i) : cu_float_to_int_bits(re, to);
    } else if (cml_dtype_is_complex(to)) {
      d[2 * i] = re;
      d[2 * i + 1] = im;
    } else {
      d[i] = re;
    }
  }
  if (to == CML_DTYPE_BOOL || cml_dtype_is_int(to)) return bt_tensor_i64(t, to, 1, dims, iv);
  if (cml_dtype_is_complex(to)) return bt_tensor_c(t, to, 1, dims, d);
  return bt_tensor_f64(t, to, 1, dims, d);
}

static void case_convert_all_pairs(bt_t* t) {
  if (!bt_require_op(t, CML_OP_CONVERT_DTYPE)) return;
  for (size_t a = 0; a < CU_COUNT(cu_all); ++a) {
    const cml_dtype_t from = cu_all[a];
    if (!cu_has(t, from)) continue;
    cml_dtype_t tos[CU_COUNT(cu_all)];
    cml_value_t ys[CU_COUNT(cu_all)];
    size_t count = 0;
    bt_new_builder(t);
    cml_function_t* f = bt_main(t);
    bt_tensor_t x = cu_convert_source(t, from);
    cml_value_t xv = bt_param(t, f, &x);
    for (size_t b = 0; b < CU_COUNT(cu_all); ++b) {
      if (!cu_has(t, cu_all[b])) continue;
      tos[count] = cu_all[b];
      ys[count] = cml_op_convert_dtype(f, xv, cu_all[b]);
      ++count;
    }
    bt_tensor_t out[CU_COUNT(cu_all)];
    if (!bt_exec(t, ys, count, out)) return;
    for (size_t b = 0; b < count; ++b) {
      bt_tensor_t want = cu_convert_expect(t, &x, tos[b]);
      char label[64];
      snprintf(label, sizeof label, "%s -> %s", cml_dtype_name(from), cml_dtype_name(tos[b]));
      bt_expect_equal(t, label, &out[b], &want);
    }
  }
}

// Rounding edge cases: int -> half types round once; f64 -> f32 ties to even.
static void case_convert_rounding(bt_t* t) {
  if (!bt_require_op(t, CML_OP_CONVERT_DTYPE) || !bt_require_dtype(t, CML_DTYPE_I64) ||
      !bt_require_dtype(t, CML_DTYPE_BF16) || !bt_require_dtype(t, CML_DTYPE_F32) ||
      !bt_require_dtype(t, CML_DTYPE_F64)) {
    return;
  }
  cml_function_t* f = bt_main(t);
  const int64_t dims[1] = {2};
  // 2^30 + 2^22 + 1 rounds up to 2^30 + 2^23 in bf16; 2^24 + 1 ties to 2^24 in f32.
  cml_value_t xi = bt_param_i64(t, f, CML_DTYPE_I64, 1, dims,
                                (int64_t[]){(1LL << 30) + (1LL << 22) + 1, (1LL << 24) + 1});
  // 1 + 2^-24 is a tie in f32 (to 1); 1 + 3 * 2^-24 rounds up to 1 + 2^-22.
  cml_value_t xd =
      bt_param_f64(t, f, CML_DTYPE_F64, 1, dims, (double[]){1.0 + 0x1p-24, 1.0 + 3 * 0x1p-24});
  cml_value_t y[3] = {cml_op_convert_dtype(f, xi, CML_DTYPE_BF16),
                      cml_op_convert_dtype(f, xi, CML_DTYPE_F32),
                      cml_op_convert_dtype(f, xd, CML_DTYPE_F32)};
  bt_tensor_t out[3];
  if (!bt_exec(t, y, 3, out)) return;
  bt_expect_f64(t, "i64->bf16", &out[0], CML_DTYPE_BF16, 1, dims,
                (double[]){1073741824.0 + 8388608.0, 16777216.0}, 0);
  bt_expect_f64(t, "i64->f32", &out[1], CML_DTYPE_F32, 1, dims,
                (double[]){1077936128.0, 16777216.0}, 0);
  bt_expect_f64(t, "f64->f32", &out[2], CML_DTYPE_F32, 1, dims, (double[]){1.0, 1.0 + 0x1p-22}, 0);
}

//===--- Bitcast ---===//

typedef struct cu_bitcast_t {
  cml_dtype_t from, to;
  int32_t in_rank, out_rank;
  int64_t in_dims[2], out_dims[2];
} cu_bitcast_t;

static void case_bitcast(bt_t* t) {
  if (!bt_require_op(t, CML_OP_BITCAST)) return;
  static const cu_bitcast_t cases[] = {
      {CML_DTYPE_U32, CML_DTYPE_F32, 1, 1, {4}, {4}},
      {CML_DTYPE_F32, CML_DTYPE_I32, 1, 1, {4}, {4}},
      {CML_DTYPE_U32, CML_DTYPE_U16, 1, 2, {4}, {4, 2}},
      {CML_DTYPE_U16, CML_DTYPE_U32, 2, 1, {3, 2}, {3}},
      {CML_DTYPE_I8, CML_DTYPE_F32, 2, 1, {2, 4}, {2}},
      {CML_DTYPE_F64, CML_DTYPE_C128, 2, 1, {3, 2}, {3}},
      {CML_DTYPE_C64, CML_DTYPE_U64, 1, 1, {3}, {3}},
      {CML_DTYPE_U8, CML_DTYPE_I4, 1, 2, {3}, {3, 2}},
      {CML_DTYPE_U4, CML_DTYPE_U8, 2, 1, {4, 2}, {4}},
      {CML_DTYPE_U8, CML_DTYPE_U2, 1, 2, {2}, {2, 4}},
      {CML_DTYPE_BF16, CML_DTYPE_F16, 1, 1, {5}, {5}},
      {CML_DTYPE_U64, CML_DTYPE_I8, 0, 1, {0}, {8}},
  };
  for (size_t c = 0; c < CU_COUNT(cases); ++c) {
    const cu_bitcast_t* k = &cases[c];
    if (!cu_has(t, k->from) || !cu_has(t, k->to)) continue;
    bt_new_builder(t);
    cml_function_t* f = bt_main(t);
    bt_tensor_t x = bt_tensor(t, k->from, k->in_rank, k->in_dims, NULL);
    uint8_t* bytes = (uint8_t*)x.data;
    for (size_t i = 0; i < x.size; ++i) bytes[i] = (uint8_t)(0x3c + 37 * i);
    cml_value_t y = cml_op_bitcast(f, bt_param(t, f, &x), k->to);
    bt_tensor_t out[1];
    if (!bt_exec(t, &y, 1, out)) return;
    bt_tensor_t want = bt_tensor(t, k->to, k->out_rank, k->out_dims, x.data);
    char label[64];
    snprintf(label, sizeof label, "%s -> %s", cml_dtype_name(k->from), cml_dtype_name(k->to));
    bt_expect_equal(t, label, &out[0], &want);
  }
}

// Known bit patterns: 1.0f is 0x3f800000; -2.0 (f64) is 0xc000000000000000.
static void case_bitcast_known_values(bt_t* t) {
  if (!bt_require_op(t, CML_OP_BITCAST) || !bt_require_dtype(t, CML_DTYPE_F32) ||
      !bt_require_dtype(t, CML_DTYPE_U32) || !bt_require_dtype(t, CML_DTYPE_F64) ||
      !bt_require_dtype(t, CML_DTYPE_I64)) {
    return;
  }
  cml_function_t* f = bt_main(t);
  const int64_t dims[1] = {2};
  cml_value_t y[2] = {
      cml_op_bitcast(f, bt_param_f64(t, f, CML_DTYPE_F32, 1, dims, (double[]){1.0, -0.0}),
                     CML_DTYPE_U32),
      cml_op_bitcast(f, bt_param_f64(t, f, CML_DTYPE_F64, 1, dims, (double[]){-2.0, 0.5}),
                     CML_DTYPE_I64)};
  bt_tensor_t out[2];
  if (!bt_exec(t, y, 2, out)) return;
  bt_expect_i64(t, "f32 bits", &out[0], CML_DTYPE_U32, 1, dims,
                (int64_t[]){0x3f800000, 0x80000000LL});
  bt_expect_i64(t, "f64 bits", &out[1], CML_DTYPE_I64, 1, dims,
                (int64_t[]){(int64_t)0xc000000000000000ULL, 0x3fe0000000000000LL});
}

// Bitcast to Bool gives byte != 0 (a Bool holds 0 or 1): Uint8 [0, 1, 2, 0xb0] -> [0, 1, 1, 1]
// (c once returned the bytes 2 and 0xb0 as Bool), and Complex64 1 + 0i (bytes 00 00 80 3f, then
// four 00) -> [0, 0, 1, 1, 0, 0, 0, 0] (xla:cpu once failed to compile it).
static void case_bitcast_to_bool(bt_t* t) {
  if (!bt_require_op(t, CML_OP_BITCAST) || !bt_require_dtype(t, CML_DTYPE_U8) ||
      !bt_require_dtype(t, CML_DTYPE_BOOL)) {
    return;
  }
  cml_function_t* f = bt_main(t);
  const int64_t d4[1] = {4}, d18[2] = {1, 8};
  cml_value_t y[2];
  y[0] = cml_op_bitcast(f, bt_param_i64(t, f, CML_DTYPE_U8, 1, d4, (int64_t[]){0, 1, 2, 0xb0}),
                        CML_DTYPE_BOOL);
  const bool has_c64 =
      cml_capabilities_has_dtype(cml_backend_capabilities(bt_backend(t)), CML_DTYPE_C64);
  if (has_c64) {
    y[1] = cml_op_bitcast(f, bt_param_f64(t, f, CML_DTYPE_C64, 1, (int64_t[]){1}, (double[]){1.0}),
                          CML_DTYPE_BOOL);
  }
  bt_tensor_t out[2];
  if (!bt_exec(t, y, has_c64 ? 2 : 1, out)) return;
  bt_expect_i64(t, "u8 -> bool", &out[0], CML_DTYPE_BOOL, 1, d4, (int64_t[]){0, 1, 1, 1});
  if (has_c64) {
    bt_expect_i64(t, "c64 -> bool", &out[1], CML_DTYPE_BOOL, 2, d18,
                  (int64_t[]){0, 0, 1, 1, 0, 0, 0, 0});
  }
}

// f32 transcendentals over 70001 values (several parallel chunks, SIMD kernels where the
// backend has them, vector tails) against libm in double, within 4 ulps (Erf: 8); the inputs
// include overflow / underflow ranges and the branch points of the c backend's polynomials.
// Subnormal results may be flushed to zero (the latitude above).
static void case_transcendental_large_f32(bt_t* t) {
  size_t ran = 0;  // a backend without any of the dtypes/ops must not pass this case
  if (!bt_require_dtype(t, CML_DTYPE_F32)) return;
  enum { N = 70001 };
  static const struct {
    cml_op_t op;
    double (*ref)(double);
    double lo, hi;
  } ops[] = {{CML_OP_EXP, exp, -110, 95},  {CML_OP_LOG, log, 0, 1e5},
             {CML_OP_TANH, tanh, -12, 12}, {CML_OP_LOGISTIC, cu_logistic, -110, 110},
             {CML_OP_ERF, erf, -5, 5},     {CML_OP_RSQRT, cu_rsqrt, 1e-6, 1e6}};
  for (size_t k = 0; k < CU_COUNT(ops); ++k) {
    if (!cml_capabilities_has_op(cml_backend_capabilities(bt_backend(t)), ops[k].op)) continue;
    bt_new_builder(t);
    cml_function_t* f = bt_main(t);
    double* v = bt_alloc(t, N * sizeof(double));
    for (int i = 0; i < N; ++i) {
      v[i] = i < CU_EDGE_COUNT ? cu_edges[i] : bt_rand_uniform(t, ops[k].lo, ops[k].hi);
    }
    v[N - 1] = 0.55;
    v[N - 2] = -1.0;
    const int64_t dims[1] = {N};
    bt_tensor_t x = bt_tensor_f64(t, CML_DTYPE_F32, 1, dims, v);
    cml_value_t y = cml_op_unary(f, ops[k].op, bt_param(t, f, &x));
    bt_tensor_t out[1];
    if (!bt_exec(t, &y, 1, out)) return;
    ++ran;
    bt_tensor_t want = cu_expect_unary(t, &x, ops[k].ref);
    bt_tensor_t accepted = cu_allow_flushed(t, &want, &out[0]);
    char label[64];
    snprintf(label, sizeof label, "%s f32 x%d", cml_op_name(ops[k].op), N);
    bt_expect_ulps(t, label, &out[0], &accepted,
                   cu_transcendental_ulps(ops[k].op, CML_DTYPE_F32, 4));
  }
  if (ran == 0) bt_unsupported(t, "none of Exp, Log, Tanh, Logistic, Erf, Rsqrt");
}

const bt_case_t bt_cases_elementwise_unary[] = {
    {"transcendental_large_f32", CML_OP_EXP, case_transcendental_large_f32},
    {"abs_float", CML_OP_ABS, case_float_abs},
    {"neg_float", CML_OP_NEG, case_float_neg},
    {"sign_float", CML_OP_SIGN, case_float_sign},
    {"ceil", CML_OP_CEIL, case_float_ceil},
    {"floor", CML_OP_FLOOR, case_float_floor},
    {"round_half_even", CML_OP_ROUND, case_float_round},
    {"sqrt", CML_OP_SQRT, case_float_sqrt},
    {"rsqrt", CML_OP_RSQRT, case_float_rsqrt},
    {"exp", CML_OP_EXP, case_float_exp},
    {"expm1", CML_OP_EXPM1, case_float_expm1},
    {"log", CML_OP_LOG, case_float_log},
    {"log1p", CML_OP_LOG1P, case_float_log1p},
    {"logistic", CML_OP_LOGISTIC, case_float_logistic},
    {"tanh", CML_OP_TANH, case_float_tanh},
    {"sin", CML_OP_SIN, case_float_sin},
    {"cos", CML_OP_COS, case_float_cos},
    {"erf", CML_OP_ERF, case_float_erf},
    {"real_float", CML_OP_REAL, case_float_real},
    {"imag_float", CML_OP_IMAG, case_float_imag},
    {"is_finite", CML_OP_IS_FINITE, case_is_finite},
    {"is_nan", CML_OP_IS_NAN, case_is_nan},
    {"complex_unary", CML_OP_CONJ, case_complex_unary},
    {"complex_abs_edges", CML_OP_ABS, case_complex_abs_edges},
    {"complex_nan_parts", CML_OP_LOG, case_complex_nan_parts},
    {"complex_sign_expm1_edges", CML_OP_SIGN, case_complex_sign_expm1_edges},
    {"abs_int", CML_OP_ABS, case_int_abs},
    {"neg_int", CML_OP_NEG, case_int_neg},
    {"sign_int", CML_OP_SIGN, case_int_sign},
    {"bit_count", CML_OP_BIT_COUNT, case_bit_count},
    {"clz", CML_OP_CLZ, case_clz},
    {"bitwise_not", CML_OP_BITWISE_NOT, case_bitwise_not},
    {"logical_not", CML_OP_LOGICAL_NOT, case_logical_not},
    {"identity_all_dtypes", CML_OP_IDENTITY, case_identity_all_dtypes},
    {"convert_all_pairs", CML_OP_CONVERT_DTYPE, case_convert_all_pairs},
    {"convert_rounding", CML_OP_CONVERT_DTYPE, case_convert_rounding},
    {"bitcast_shapes", CML_OP_BITCAST, case_bitcast},
    {"bitcast_known_values", CML_OP_BITCAST, case_bitcast_known_values},
    {"bitcast_to_bool", CML_OP_BITCAST, case_bitcast_to_bool},
};
const size_t bt_cases_elementwise_unary_count =
    sizeof bt_cases_elementwise_unary / sizeof bt_cases_elementwise_unary[0];
