// SPDX-License-Identifier: Apache-2.0
// backendtest/cases_reduce.c: compliance cases of the "reduce" group: Reduce{Sum,Product,Max,
// Min}, ReduceBitwise{And,Or,Xor}, ReduceLogical{And,Or,Xor} and ArgMinMax.
//
// Every op is swept over every dtype it accepts and over every subset of the axes of a 5x7x11
// input (plus "no axes" = all axes, rank 8 and empty extents). Inputs are chosen so that float
// sums and products are exact in every float dtype's accumulator (small integers, powers of
// two), so the plain reference loops here (int64 wrap-around, double) give exact expected values.
#include "backendtest/bt.h"

#include <complex.h>
// glibc's <complex.h> defines CMPLX only for GCC; clang has the same builtin.
#ifndef CMPLX
#define CMPLX(x, y) __builtin_complex((double)(x), (double)(y))
#endif
#include <math.h>
#include <string.h>

#define CR_COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const cml_dtype_t cr_all[] = {CML_DTYPE_BOOL, CML_DTYPE_I8,  CML_DTYPE_I16,  CML_DTYPE_I32,
                                     CML_DTYPE_I64,  CML_DTYPE_U8,  CML_DTYPE_U16,  CML_DTYPE_U32,
                                     CML_DTYPE_U64,  CML_DTYPE_F16, CML_DTYPE_BF16, CML_DTYPE_F32,
                                     CML_DTYPE_F64,  CML_DTYPE_C64, CML_DTYPE_C128};

static bool cr_has(bt_t* t, cml_dtype_t dtype) {
  return cml_capabilities_has_dtype(cml_backend_capabilities(bt_backend(t)), dtype);
}

static bool cr_accepts(cml_op_t op, cml_dtype_t dt) {
  return (cml_op_dtypes(op) & CML_DTYPE_BIT(dt)) != 0;
}

// Input value |i| for |op| (see the file comment).
static double cr_value(cml_op_t op, cml_dtype_t dt, int64_t i) {
  if (dt == CML_DTYPE_BOOL) {
    return op == CML_OP_REDUCE_LOGICAL_AND ? (double)(i % 13 != 0) : (double)(i % 5 == 0);
  }
  if (op == CML_OP_REDUCE_PRODUCT) {
    if (cml_dtype_is_int(dt)) return (double)((i * 7) % 5 - 2 == 0 ? 1 : (i * 7) % 5 - 2);
    static const double p[4] = {2, 0.5, -1, 1};
    return p[(i * 3) % 4];
  }
  if (cml_dtype_is_unsigned_int(dt)) return (double)((i * 37) % 200);
  return (double)((i * 37) % 11) - 5 + (cml_dtype_is_int(dt) ? (double)((i * 53) % 120) : 0);
}

typedef struct cr_acc_t {
  uint64_t u;
  int64_t s;
  double d;
  double complex c;
} cr_acc_t;

static void cr_init(cml_op_t op, cml_dtype_t dt, cr_acc_t* a) {
  memset(a, 0, sizeof *a);
  const bool unsigned_t = cml_dtype_is_unsigned_int(dt);
  const int bits = cml_dtype_bits(dt);
  switch (op) {
    case CML_OP_REDUCE_PRODUCT:
      a->u = 1;
      a->d = 1;
      a->c = 1;
      break;
    case CML_OP_REDUCE_MAX:
      a->d = -INFINITY;
      a->u = 0;
      a->s = bits == 64 ? INT64_MIN : -((int64_t)1 << (bits - 1));
      break;
    case CML_OP_REDUCE_MIN:
      a->d = INFINITY;
      a->u = bits == 64 ? ~(uint64_t)0 : ((uint64_t)1 << bits) - 1;
      a->s = bits == 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1;
      break;
    case CML_OP_REDUCE_BITWISE_AND:
      a->u = ~(uint64_t)0;
      break;
    case CML_OP_REDUCE_LOGICAL_AND:
      a->u = 1;
      break;
    default:
      break;
  }
  (void)unsigned_t;
}

static void cr_step(cml_op_t op, cml_dtype_t dt, cr_acc_t* a, const bt_tensor_t* x, int64_t i) {
  const bool is_float = cml_dtype_is_float(dt), is_complex = cml_dtype_is_complex(dt);
  const bool unsigned_t = cml_dtype_is_unsigned_int(dt);
  const double d = is_float || is_complex ? bt_get_f64(x, i) : 0;
  double complex c = 0;
  if (is_complex) {
    c = dt == CML_DTYPE_C64
            ? CMPLX(((const float*)x->data)[2 * i], ((const float*)x->data)[2 * i + 1])
            : CMPLX(((const double*)x->data)[2 * i], ((const double*)x->data)[2 * i + 1]);
  }
  const int64_t s = is_float || is_complex ? 0 : bt_get_i64(x, i);
  const uint64_t u = (uint64_t)s;
  switch (op) {
    case CML_OP_REDUCE_SUM:
      a->u += u;
      a->d += d;
      a->c += c;
      break;
    case CML_OP_REDUCE_PRODUCT:
      a->u *= u;
      a->d *= d;
      a->c *= c;
      break;
    case CML_OP_REDUCE_MAX:
      if (is_float) a->d = (isnan(a->d) || isnan(d)) ? NAN : (d > a->d ? d : a->d);
      if (unsigned_t && u > a->u) a->u = u;
      if (!unsigned_t && s > a->s) a->s = s;
      break;
    case CML_OP_REDUCE_MIN:
      if (is_float) a->d = (isnan(a->d) || isnan(d)) ? NAN : (d < a->d ? d : a->d);
      if (unsigned_t && u < a->u) a->u = u;
      if (!unsigned_t && s < a->s) a->s = s;
      break;
    case CML_OP_REDUCE_BITWISE_AND:
      a->u &= u;
      break;
    case CML_OP_REDUCE_BITWISE_OR:
      a->u |= u;
      break;
    case CML_OP_REDUCE_BITWISE_XOR:
      a->u ^= u;
      break;
    case CML_OP_REDUCE_LOGICAL_AND:
      a->u = a->u && s;
      break;
    case CML_OP_REDUCE_LOGICAL_OR:
      a->u = a->u || s;
      break;
    case CML_OP_REDUCE_LOGICAL_XOR:
      a->u = (a->u != 0) != (s != 0);
      break;
    default:
      break;
  }
}

// Runs |op| on |x| over |axes| (|axis_count| 0 = all) and checks against a reference loop.
static void cr_check(bt_t* t, cml_op_t op, const bt_tensor_t* x, const int64_t* axes,
                     int axis_count, const char* label) {
  const cml_dtype_t dt = x->shape.dtype;
  const int32_t rank = x->shape.rank;
  bool reduced[CML_MAX_RANK] = {false};
  for (int k = 0; k < axis_count; ++k) reduced[axes[k]] = true;
  if (axis_count == 0) {
    for (int32_t d = 0; d < rank; ++d) reduced[d] = true;
  }
  int64_t out_dims[CML_MAX_RANK];
  int32_t out_rank = 0;
  int64_t out_n = 1;
  for (int32_t d = 0; d < rank; ++d) {
    if (!reduced[d]) {
      out_dims[out_rank++] = x->shape.dims[d];
      out_n *= x->shape.dims[d];
    }
  }
  bt_new_builder(t);
  cml_function_t* f = bt_main(t);
  cml_value_t y = cml_op_reduce(f, op, bt_param(t, f, x), axes, (size_t)axis_count);
  bt_tensor_t out[1];
  if (!bt_exec(t, &y, 1, out)) return;
  cr_acc_t* acc = bt_alloc(t, (size_t)(out_n + 1) * sizeof(cr_acc_t));
  for (int64_t o = 0; o < out_n; ++o) cr_init(op, dt, &acc[o]);
  const int64_t n = cml_shape_element_count(&x->shape);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i, o = 0, scale = 1;
    for (int32_t d = rank - 1; d >= 0; --d) {
      const int64_t c = rest % x->shape.dims[d];
      rest /= x->shape.dims[d];
      if (!reduced[d]) {
        o += c * scale;
        scale *= x->shape.dims[d];
      }
    }
    cr_step(op, dt, &acc[o], x, i);
  }
  bt_tensor_t want;
  if (cml_dtype_is_complex(dt)) {
    double* v = bt_alloc(t, (size_t)(2 * out_n + 2) * sizeof(double));
    for (int64_t o = 0; o < out_n; ++o) {
      v[2 * o] = creal(acc[o].c);
      v[2 * o + 1] = cimag(acc[o].c);
    }
    want = bt_tensor_c(t, dt, out_rank, out_dims, v);
  } else if (cml_dtype_is_float(dt)) {
    double* v = bt_alloc(t, (size_t)(out_n + 1) * sizeof(double));
    for (int64_t o = 0; o < out_n; ++o) v[o] = acc[o].d;
    want = bt_tensor_f64(t, dt, out_rank, out_dims, v);
  } else {
    int64_t* v = bt_alloc(t, (size_t)(out_n + 1) * sizeof(int64_t));
    const bool use_s =
        !cml_dtype_is_unsigned_int(dt) && (op == CML_OP_REDUCE_MAX || op == CML_OP_REDUCE_MIN);
    for (int64_t o = 0; o < out_n; ++o) v[o] = use_s ? acc[o].s : (int64_t)acc[o].u;
    want = bt_tensor_i64(t, dt, out_rank, out_dims, v);
  }
  if (cml_dtype_is_complex(dt)) {
    bt_expect_close(t, label, &out[0], &want, 1e-6, 0);  // the sign of a zero part may differ
  } else {
    bt_expect_equal(t, label, &out[0], &want);
  }
}

static void cr_sweep(bt_t* t, cml_op_t op) {
  if (!bt_require_op(t, op)) return;
  static const struct {
    int count;
    int64_t axes[3];
  } sets[] = {{0, {0}},    {1, {0}},    {1, {1}},    {1, {2}},
              {2, {0, 1}}, {2, {0, 2}}, {2, {1, 2}}, {3, {0, 1, 2}}};
  const int64_t dims[3] = {5, 7, 11};
  for (size_t k = 0; k < CR_COUNT(cr_all); ++k) {
    const cml_dtype_t dt = cr_all[k];
    if (!cr_has(t, dt) || !cr_accepts(op, dt)) continue;
    double v[2 * 385];
    for (int64_t i = 0; i < 385; ++i) {
      if (cml_dtype_is_complex(dt)) {
        v[2 * i] = cr_value(op, CML_DTYPE_F32, i);
        v[2 * i + 1] = op == CML_OP_REDUCE_PRODUCT ? 0 : (double)(i % 3) - 1;
      } else {
        v[i] = cr_value(op, dt, i);
      }
    }
    bt_tensor_t x = cml_dtype_is_complex(dt) ? bt_tensor_c(t, dt, 3, dims, v)
                                             : bt_tensor_f64(t, dt, 3, dims, v);
    for (size_t s = 0; s < CR_COUNT(sets); ++s) {
      char label[64];
      snprintf(label, sizeof label, "%s axes set %zu", cml_dtype_name(dt), s);
      cr_check(t, op, &x, sets[s].axes, sets[s].count, label);
      if (bt_failed(t)) return;
    }
    // Rank 8 with size-1 axes, reducing axes 1, 4 and 7.
    const int64_t d8[8] = {2, 3, 1, 2, 2, 1, 3, 2};
    bt_tensor_t x8 =
        cml_dtype_is_complex(dt) ? bt_tensor_c(t, dt, 8, d8, v) : bt_tensor_f64(t, dt, 8, d8, v);
    cr_check(t, op, &x8, (int64_t[]){1, 4, 7}, 3, "rank 8");
    // Empty reduced extent: the identity.
    const int64_t d0[2] = {3, 0};
    bt_tensor_t x0 = bt_tensor_f64(t, dt, 2, d0, NULL);
    cr_check(t, op, &x0, (int64_t[]){1}, 1, "empty extent");
    const int64_t dz[2] = {0, 4};
    bt_tensor_t xz = bt_tensor_f64(t, dt, 2, dz, NULL);
    cr_check(t, op, &xz, (int64_t[]){1}, 1, "empty output");
    cr_check(t, op, &xz, (int64_t[]){0}, 1, "empty extent over axis 0");
  }
}

#define CR_CASE(fname, OP) \
  static void case_##fname(bt_t* t) { cr_sweep(t, OP); }
CR_CASE(reduce_sum, CML_OP_REDUCE_SUM)
CR_CASE(reduce_product, CML_OP_REDUCE_PRODUCT)
CR_CASE(reduce_max, CML_OP_REDUCE_MAX)
CR_CASE(reduce_min, CML_OP_REDUCE_MIN)
CR_CASE(reduce_bitwise_and, CML_OP_REDUCE_BITWISE_AND)
CR_CASE(reduce_bitwise_or, CML_OP_REDUCE_BITWISE_OR)
CR_CASE(reduce_bitwise_xor, CML_OP_REDUCE_BITWISE_XOR)
CR_CASE(reduce_logical_and, CML_OP_REDUCE_LOGICAL_AND)
CR_CASE(reduce_logical_or, CML_OP_REDUCE_LOGICAL_OR)
CR_CASE(reduce_logical_xor, CML_OP_REDUCE_LOGICAL_XOR)

// Float16/BFloat16 sums and products accumulate in (at least) Float32 and round once: summed in
// the half type, 2048 + 1 + 1 stays 2048 (Float16 spacing 2 there) and 256 + 1 + 1 stays 256
// in BFloat16; a product of 2, 0.5, -1, 1 repeated must not overflow on the way.
static void case_reduce_half_accumulation(bt_t* t) {
  if (!bt_require_op(t, CML_OP_REDUCE_SUM)) return;
  const cml_dtype_t dts[2] = {CML_DTYPE_F16, CML_DTYPE_BF16};
  const double big[2] = {2048, 256};
  for (int k = 0; k < 2; ++k) {
    if (!cr_has(t, dts[k])) continue;
    const int64_t dims[1] = {3};
    const double v[3] = {big[k], 1, 1};
    bt_tensor_t x = bt_tensor_f64(t, dts[k], 1, dims, v);
    bt_new_builder(t);
    cml_function_t* f = bt_main(t);
    const int64_t axis[1] = {0};
    cml_value_t y = cml_op_reduce_sum(f, bt_param(t, f, &x), axis, 1);
    bt_tensor_t out[1];
    if (!bt_exec(t, &y, 1, out)) return;
    const double sum = big[k] + 2;
    char label[64];
    snprintf(label, sizeof label, "%s sum of %g, 1, 1", cml_dtype_name(dts[k]), big[k]);
    bt_tensor_t want = bt_tensor_f64(t, dts[k], 0, NULL, &sum);
    bt_expect_equal(t, label, &out[0], &want);
    if (!cml_capabilities_has_op(cml_backend_capabilities(bt_backend(t)), CML_OP_REDUCE_PRODUCT)) {
      continue;
    }
    // 64 values in the suite's product pattern: 16 twos, 16 halves; product 1.
    double p[64];
    static const double pattern[4] = {2, 0.5, -1, 1};
    for (int i = 0; i < 64; ++i) p[i] = pattern[(i * 3) % 4];
    const int64_t pdims[2] = {16, 4};
    bt_tensor_t px = bt_tensor_f64(t, dts[k], 2, pdims, p);
    bt_new_builder(t);
    f = bt_main(t);
    const int64_t both[2] = {0, 1};
    y = cml_op_reduce_product(f, bt_param(t, f, &px), both, 2);
    if (!bt_exec(t, &y, 1, out)) return;
    const double one = 1;
    snprintf(label, sizeof label, "%s product of 16 x (2, 1, -1, 0.5)", cml_dtype_name(dts[k]));
    want = bt_tensor_f64(t, dts[k], 0, NULL, &one);
    bt_expect_equal(t, label, &out[0], &want);
  }
}

// Max/Min propagate NaN; max(-0, +0) is +0 and min is -0; integer sums wrap.
static void case_reduce_edge_values(bt_t* t) {
  if (!bt_require_op(t, CML_OP_REDUCE_MAX) || !bt_require_op(t, CML_OP_REDUCE_MIN) ||
      !bt_require_op(t, CML_OP_REDUCE_SUM) || !bt_require_dtype(t, CML_DTYPE_F32) ||
      !bt_require_dtype(t, CML_DTYPE_I8)) {
    return;
  }
  cml_function_t* f = bt_main(t);
  const int64_t dims[2] = {3, 4};
  cml_value_t x =
      bt_param_f64(t, f, CML_DTYPE_F32, 2, dims,
                   (double[]){1, NAN, 3, 2, -0.0, 0.0, -0.0, -0.0, -INFINITY, 5, 7, INFINITY});
  cml_value_t xi = bt_param_i64(t, f, CML_DTYPE_I8, 1, (int64_t[]){3}, (int64_t[]){100, 100, 100});
  const int64_t ax[1] = {1};
  cml_value_t y[3] = {cml_op_reduce_max(f, x, ax, 1), cml_op_reduce_min(f, x, ax, 1),
                      cml_op_reduce_sum(f, xi, ax, 0)};
  bt_tensor_t out[3];
  if (!bt_exec(t, y, 3, out)) return;
  bt_expect_f64(t, "max", &out[0], CML_DTYPE_F32, 1, (int64_t[]){3}, (double[]){NAN, 0.0, INFINITY},
                0);
  bt_expect_f64(t, "min", &out[1], CML_DTYPE_F32, 1, (int64_t[]){3},
                (double[]){NAN, -0.0, -INFINITY}, 0);
  bt_expect_i64(t, "i8 sum wraps", &out[2], CML_DTYPE_I8, 0, NULL, (int64_t[]){44});
}

// Full reductions big enough for the c backend's blocked parallel path (and its SIMD f32
// kernels): f32 and f64 Sum/Max/Min of 300001 values against plain double loops. A NaN in a
// second f32 input must reach Max/Min and Sum.
static void case_reduce_large_full(bt_t* t) {
  if (!bt_require_op(t, CML_OP_REDUCE_SUM) || !bt_require_op(t, CML_OP_REDUCE_MAX) ||
      !bt_require_op(t, CML_OP_REDUCE_MIN) || !bt_require_dtype(t, CML_DTYPE_F32)) {
    return;
  }
  enum { N = 300001 };
  double* v = bt_alloc(t, N * sizeof(double));
  double sum = 0, bound = 0, mx = -INFINITY, mn = INFINITY;
  for (int i = 0; i < N; ++i) {
    v[i] = (double)(float)bt_rand_uniform(t, -1.0, 3.0);
    sum += v[i];
    bound += fabs(v[i]);
    mx = v[i] > mx ? v[i] : mx;
    mn = v[i] < mn ? v[i] : mn;
  }
  const cml_dtype_t dts[2] = {CML_DTYPE_F32, CML_DTYPE_F64};
  for (int k = 0; k < 2; ++k) {
    const cml_dtype_t dt = dts[k];
    if (!cml_capabilities_has_dtype(cml_backend_capabilities(bt_backend(t)), dt)) continue;
    bt_new_builder(t);
    cml_function_t* f = bt_main(t);
    const int64_t dims[2] = {1, N};
    bt_tensor_t xt = bt_tensor_f64(t, dt, 2, dims, v);
    cml_value_t x = bt_param(t, f, &xt);
    const double saved = v[N / 3];
    v[N / 3] = NAN;
    bt_tensor_t nt = bt_tensor_f64(t, dt, 2, dims, v);
    v[N / 3] = saved;
    cml_value_t xn = bt_param(t, f, &nt);
    cml_value_t y[5] = {cml_op_reduce_sum(f, x, NULL, 0), cml_op_reduce_max(f, x, NULL, 0),
                        cml_op_reduce_min(f, x, NULL, 0), cml_op_reduce_max(f, xn, NULL, 0),
                        cml_op_reduce_sum(f, xn, NULL, 0)};
    bt_tensor_t out[5];
    if (!bt_exec(t, y, 5, out)) return;
    const double got = bt_get_f64(&out[0], 0);
    const double tol = (dt == CML_DTYPE_F32 ? 1e-6 : 1e-14) * bound;
    if (!(fabs(got - sum) <= tol)) {
      bt_fail(t, "%s sum of %d values: %.9g, want %.9g (tolerance %.3g)", cml_dtype_name(dt), N,
              got, sum, tol);
    }
    bt_expect_f64(t, "max", &out[1], dt, 0, NULL, &mx, 0);
    bt_expect_f64(t, "min", &out[2], dt, 0, NULL, &mn, 0);
    bt_expect_f64(t, "max with NaN", &out[3], dt, 0, NULL, (double[]){NAN}, 0);
    bt_expect_f64(t, "sum with NaN", &out[4], dt, 0, NULL, (double[]){NAN}, 0);
  }
}

// Reductions over leading and middle axes big enough for the c backend's column path (wide
// column tiles, block partials of 128 rows, super-blocks of 16384 rows): f32 and f64
// Sum/Max/Min of [2, 17000, 23] over axis 1 and axes {0, 1}, and of [150, 4100] over axis 0,
// against plain double loops. Column 5 of the second input holds a NaN (Max/Min/Sum give NaN)
// and column 7 only zeros of both signs (Max +0, Min -0).
static void cr_columns_check(bt_t* t, cml_dtype_t dt, const double* v, int64_t a_dim, int64_t r_dim,
                             int64_t w_dim, int both, const char* label) {
  const int64_t outs = both ? w_dim : a_dim * w_dim;
  double* sum = bt_alloc(t, (size_t)outs * sizeof(double));
  double* mag = bt_alloc(t, (size_t)outs * sizeof(double));
  double* mx = bt_alloc(t, (size_t)outs * sizeof(double));
  double* mn = bt_alloc(t, (size_t)outs * sizeof(double));
  for (int64_t o = 0; o < outs; ++o) {
    sum[o] = mag[o] = 0;
    mx[o] = -INFINITY;
    mn[o] = INFINITY;
  }
  for (int64_t a = 0; a < a_dim; ++a) {
    for (int64_t r = 0; r < r_dim; ++r) {
      for (int64_t w = 0; w < w_dim; ++w) {
        const double x = v[(a * r_dim + r) * w_dim + w];
        const int64_t o = both ? w : a * w_dim + w;
        sum[o] += x;
        mag[o] += fabs(x);
        if (isnan(x) || isnan(mx[o])) {
          mx[o] = mn[o] = NAN;
        } else {
          mx[o] = x > mx[o] || (x == 0 && mx[o] == 0 && !signbit(x)) ? x : mx[o];
          mn[o] = x < mn[o] || (x == 0 && mn[o] == 0 && signbit(x)) ? x : mn[o];
        }
      }
    }
  }
  bt_new_builder(t);
  cml_function_t* f = bt_main(t);
  const int64_t dims3[3] = {a_dim, r_dim, w_dim};
  bt_tensor_t xt = bt_tensor_f64(t, dt, 3, dims3, v);
  cml_value_t x = bt_param(t, f, &xt);
  const int64_t axes[2] = {0, 1};
  const int64_t* ax = both ? axes : axes + 1;
  const size_t count = both ? 2 : 1;
  cml_value_t y[3] = {cml_op_reduce_sum(f, x, ax, count), cml_op_reduce_max(f, x, ax, count),
                      cml_op_reduce_min(f, x, ax, count)};
  bt_tensor_t out[3];
  if (!bt_exec(t, y, 3, out)) return;
  const int64_t out_dims[2] = {both ? w_dim : a_dim, w_dim};
  const int32_t out_rank = both ? 1 : 2;
  char name[96];
  snprintf(name, sizeof name, "%s %s max", label, cml_dtype_name(dt));
  bt_expect_f64(t, name, &out[1], dt, out_rank, both ? out_dims + 1 : out_dims, mx, 0);
  snprintf(name, sizeof name, "%s %s min", label, cml_dtype_name(dt));
  bt_expect_f64(t, name, &out[2], dt, out_rank, both ? out_dims + 1 : out_dims, mn, 0);
  for (int64_t o = 0; o < outs; ++o) {
    const double got = bt_get_f64(&out[0], o);
    const double tol = (dt == CML_DTYPE_F32 ? 1e-6 : 1e-14) * mag[o];
    if (isnan(sum[o]) ? !isnan(got) : !(fabs(got - sum[o]) <= tol)) {
      bt_fail(t, "%s %s sum [%lld]: %.9g, want %.9g (tolerance %.3g)", label, cml_dtype_name(dt),
              (long long)o, got, sum[o], tol);
      return;
    }
  }
}

static void case_reduce_large_columns(bt_t* t) {
  if (!bt_require_op(t, CML_OP_REDUCE_SUM) || !bt_require_op(t, CML_OP_REDUCE_MAX) ||
      !bt_require_op(t, CML_OP_REDUCE_MIN) || !bt_require_dtype(t, CML_DTYPE_F32)) {
    return;
  }
  static const int64_t shapes[2][3] = {{2, 17000, 23}, {1, 150, 4100}};
  const cml_dtype_t dts[2] = {CML_DTYPE_F32, CML_DTYPE_F64};
  for (int si = 0; si < 2; ++si) {
    const int64_t a_dim = shapes[si][0], r_dim = shapes[si][1], w_dim = shapes[si][2];
    const int64_t n = a_dim * r_dim * w_dim;
    double* v = bt_alloc(t, (size_t)n * sizeof(double));
    for (int64_t i = 0; i < n; ++i) v[i] = (double)(float)bt_rand_uniform(t, -1.0, 3.0);
    for (int64_t r = 0; r < r_dim; ++r) {
      v[r * w_dim + 7] = r % 3 ? 0.0 : -0.0;
      if (r == r_dim / 2) v[r * w_dim + 5] = NAN;
    }
    for (int k = 0; k < 2; ++k) {
      if (!cr_has(t, dts[k])) continue;
      cr_columns_check(t, dts[k], v, a_dim, r_dim, w_dim, 0,
                       si ? "[150, 4100] axis 0" : "[2, 17000, 23] axis 1");
      if (bt_failed(t)) return;
      if (a_dim > 1) {
        cr_columns_check(t, dts[k], v, a_dim, r_dim, w_dim, 1, "[2, 17000, 23] axes 0, 1");
        if (bt_failed(t)) return;
      }
    }
  }
}

//===--- ArgMinMax ---===//

static void case_arg_min_max(bt_t* t) {
  if (!bt_require_op(t, CML_OP_ARG_MIN_MAX)) return;
  static const cml_dtype_t outs[] = {CML_DTYPE_I32, CML_DTYPE_I64, CML_DTYPE_U8, CML_DTYPE_U16};
  const int64_t dims[3] = {5, 7, 11};
  for (size_t k = 0; k < CR_COUNT(cr_all); ++k) {
    const cml_dtype_t dt = cr_all[k];
    if (!cr_has(t, dt) || !cr_accepts(CML_OP_ARG_MIN_MAX, dt)) continue;
    const bool fl = cml_dtype_is_float(dt);
    double v[385];
    for (int i = 0; i < 385; ++i) {
      // Ties along every axis (its stride, 77, 11 or 1, moves i % 3 to each value again
      // within the axis's 5, 7 or 11 positions): the first index must win. Zeros alternate
      // sign in float dtypes (-0 == +0: a tie too).
      v[i] = (double)(i % 3);
      if (fl && i % 6 == 3) v[i] = -0.0;
      if (fl && i % 50 == 7) v[i] = NAN;
    }
    bt_tensor_t x = bt_tensor_f64(t, dt, 3, dims, v);
    for (int axis = 0; axis < 3; ++axis) {
      for (int is_min = 0; is_min < 2; ++is_min) {
        const cml_dtype_t od = outs[(size_t)(axis + is_min) % CR_COUNT(outs)];
        if (!cr_has(t, od)) continue;
        bt_new_builder(t);
        cml_function_t* f = bt_main(t);
        cml_value_t y = cml_op_arg_min_max(f, bt_param(t, f, &x), axis, od, is_min != 0);
        bt_tensor_t out[1];
        if (!bt_exec(t, &y, 1, out)) return;
        int64_t out_dims[2], want[77];
        int32_t r = 0;
        for (int d = 0; d < 3; ++d) {
          if (d != axis) out_dims[r++] = dims[d];
        }
        int64_t stride = 1;
        for (int d = axis + 1; d < 3; ++d) stride *= dims[d];
        const int64_t outer_n = out_dims[0] * out_dims[1];
        for (int64_t o = 0; o < outer_n; ++o) {
          const int64_t outer = o / stride, inner = o % stride;
          const int64_t base = outer * dims[axis] * stride + inner;
          int64_t best = 0;
          double bv = bt_get_f64(&x, base);
          for (int64_t j = 1; j < dims[axis]; ++j) {
            const double cv = bt_get_f64(&x, base + j * stride);
            if (isnan(bv)) break;
            if (isnan(cv) || (is_min ? cv < bv : cv > bv)) {
              best = j;
              bv = cv;
            }
          }
          want[o] = best;
        }
        char label[64];
        snprintf(label, sizeof label, "%s axis %d %s", cml_dtype_name(dt), axis,
                 is_min ? "min" : "max");
        bt_expect_i64(t, label, &out[0], od, 2, out_dims, want);
      }
    }
  }
}

const bt_case_t bt_cases_reduce[] = {
    {"reduce_sum", CML_OP_REDUCE_SUM, case_reduce_sum},
    {"reduce_product", CML_OP_REDUCE_PRODUCT, case_reduce_product},
    {"reduce_max", CML_OP_REDUCE_MAX, case_reduce_max},
    {"reduce_min", CML_OP_REDUCE_MIN, case_reduce_min},
    {"reduce_bitwise_and", CML_OP_REDUCE_BITWISE_AND, case_reduce_bitwise_and},
    {"reduce_bitwise_or", CML_OP_REDUCE_BITWISE_OR, case_reduce_bitwise_or},
    {"reduce_bitwise_xor", CML_OP_REDUCE_BITWISE_XOR, case_reduce_bitwise_xor},
    {"reduce_logical_and", CML_OP_REDUCE_LOGICAL_AND, case_reduce_logical_and},
    {"reduce_logical_or", CML_OP_REDUCE_LOGICAL_OR, case_reduce_logical_or},
    {"reduce_logical_xor", CML_OP_REDUCE_LOGICAL_XOR, case_reduce_logical_xor},
    {"reduce_edge_values", CML_OP_REDUCE_MAX, case_reduce_edge_values},
    {"reduce_half_accumulation", CML_OP_REDUCE_SUM, case_reduce_half_accumulation},
    {"reduce_large_full", CML_OP_REDUCE_SUM, case_reduce_large_full},
    {"reduce_large_columns", CML_OP_REDUCE_SUM, case_reduce_large_columns},
    {"arg_min_max", CML_OP_ARG_MIN_MAX, case_arg_min_max},
};
const size_t bt_cases_reduce_count = sizeof bt_cases_reduce / sizeof bt_cases_reduce[0];
