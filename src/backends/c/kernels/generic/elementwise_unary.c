// SPDX-License-Identifier: Apache-2.0
// kernels/generic/elementwise_unary.c: scalar reference kernels of the unary elementwise ops.
//
// Floats: f16/bf16 are computed in f32 and rounded once. Transcendentals come from libm (via
// <tgmath.h>, so float inputs use the float functions): glibc documents expf, logf, sinf,
// cosf, tanhf, erff, expm1f, log1pf within 1-2 ulp of the exact result, sqrt is exact, and
// the f16/bf16 results are then within 1 ulp of their own format. Logistic is
// 1 / (1 + exp(-x)) (a few ulp). Complex functions come from <complex.h> (cexp, clog, csqrt);
// Expm1 and Log1p of complex values use cancellation-free formulas near zero.
// Integers wrap (Abs/Neg of the minimum value give the minimum value).
#include <tgmath.h>

#include "backends/c/kernels/generic/elementwise_internal.h"

//===--- kernel generators ---===//

#define CMLC_EW_UK(name, TIN, TOUT, LOAD, STORE, CT, EXPR)                               \
  static void name(void* out, const void* const* in, const int64_t* stride, int64_t n) { \
    (void)stride;                                                                        \
    const TIN* x_ = (const TIN*)in[0];                                                   \
    TOUT* y_ = (TOUT*)out;                                                               \
    for (int64_t i = 0; i < n; ++i) {                                                    \
      CT a = LOAD(x_[i]);                                                                \
      (void)a;                                                                           \
      y_[i] = STORE(EXPR);                                                               \
    }                                                                                    \
  }

#define CMLC_EW_BOOL(x) ((uint8_t)((x) ? 1 : 0))

static inline float cmlc_ew_sign_f(float a) {
  return isnan(a) ? a : a > 0 ? 1.0f : a < 0 ? -1.0f : a;
}
static inline double cmlc_ew_sign_d(double a) {
  return isnan(a) ? a : a > 0 ? 1.0 : a < 0 ? -1.0 : a;
}
#define CMLC_EW_SIGN(a) _Generic((a), float : cmlc_ew_sign_f, double : cmlc_ew_sign_d)(a)

// |fn|(a) with a NaN quieted (a + a), as the SIMD rounding instructions and XLA return it: libm's
// floor, ceil and rint may return a signaling NaN unchanged.
#define CMLC_EW_QUIET(a, fn) (isnan(a) ? (a) + (a) : fn(a))

// Logistic without overflow: for x < 0, e^x / (1 + e^x) keeps tiny results (e^-100) exact.
static inline float cmlc_ew_logistic_f(float a) {
  if (a >= 0) return 1.0f / (1.0f + expf(-a));
  const float e = expf(a);
  return e / (1.0f + e);
}
// Float64: n / (1 + e) (n = 1 or e) with the sum and the quotient carried exactly, so only
// exp's error and one rounding are left (the plain formula rounds three times: 2.2 ulp).
static inline double cmlc_ew_logistic_d(double a) {
  const double e = exp(a >= 0 ? -a : a), n = a >= 0 ? 1.0 : e;
  const double s = 1.0 + e;
  const double t = (1.0 - s) + e;  // s + t == 1 + e exactly (0 <= e <= 1)
  const double q = n / s;
  const double r = fma(-q, s, n);  // n - q * s exactly
  return q + (r - q * t) / s;
}
#define CMLC_EW_LOGISTIC(a) \
  _Generic((a), float : cmlc_ew_logistic_f, double : cmlc_ew_logistic_d)(a)

// Float kernels for one storage type |T| computed in |CT|.
#define CMLC_EW_FLOAT_UNARY(sfx, T, CT, LOAD, STORE)                                   \
  CMLC_EW_UK(cmlc_ew_abs_##sfx, T, T, LOAD, STORE, CT, fabs(a))                        \
  CMLC_EW_UK(cmlc_ew_neg_##sfx, T, T, LOAD, STORE, CT, -a)                             \
  CMLC_EW_UK(cmlc_ew_sign_##sfx, T, T, LOAD, STORE, CT, CMLC_EW_SIGN(a))               \
  CMLC_EW_UK(cmlc_ew_ceil_##sfx, T, T, LOAD, STORE, CT, CMLC_EW_QUIET(a, ceil))        \
  CMLC_EW_UK(cmlc_ew_floor_##sfx, T, T, LOAD, STORE, CT, CMLC_EW_QUIET(a, floor))      \
  CMLC_EW_UK(cmlc_ew_round_##sfx, T, T, LOAD, STORE, CT, CMLC_EW_QUIET(a, rint))       \
  CMLC_EW_UK(cmlc_ew_sqrt_##sfx, T, T, LOAD, STORE, CT, sqrt(a))                       \
  CMLC_EW_UK(cmlc_ew_rsqrt_##sfx, T, T, LOAD, STORE, CT, 1 / sqrt(a))                  \
  CMLC_EW_UK(cmlc_ew_exp_##sfx, T, T, LOAD, STORE, CT, exp(a))                         \
  CMLC_EW_UK(cmlc_ew_expm1_##sfx, T, T, LOAD, STORE, CT, expm1(a))                     \
  CMLC_EW_UK(cmlc_ew_log_##sfx, T, T, LOAD, STORE, CT, log(a))                         \
  CMLC_EW_UK(cmlc_ew_log1p_##sfx, T, T, LOAD, STORE, CT, log1p(a))                     \
  CMLC_EW_UK(cmlc_ew_logistic_##sfx, T, T, LOAD, STORE, CT, CMLC_EW_LOGISTIC(a))       \
  CMLC_EW_UK(cmlc_ew_tanh_##sfx, T, T, LOAD, STORE, CT, tanh(a))                       \
  CMLC_EW_UK(cmlc_ew_sin_##sfx, T, T, LOAD, STORE, CT, sin(a))                         \
  CMLC_EW_UK(cmlc_ew_cos_##sfx, T, T, LOAD, STORE, CT, cos(a))                         \
  CMLC_EW_UK(cmlc_ew_erf_##sfx, T, T, LOAD, STORE, CT, erf(a))                         \
  CMLC_EW_UK(cmlc_ew_real_##sfx, T, T, LOAD, STORE, CT, a)                             \
  CMLC_EW_UK(cmlc_ew_imag_##sfx, T, T, LOAD, STORE, CT, (CT)0)                         \
  CMLC_EW_UK(cmlc_ew_is_finite_##sfx, T, uint8_t, LOAD, CMLC_EW_BOOL, CT, isfinite(a)) \
  CMLC_EW_UK(cmlc_ew_is_nan_##sfx, T, uint8_t, LOAD, CMLC_EW_BOOL, CT, isnan(a))

CMLC_EW_FLOAT_UNARY(f16, uint16_t, float, cml__f16_to_f32, cml__f32_to_f16)
CMLC_EW_FLOAT_UNARY(bf16, uint16_t, float, cml__bf16_to_f32, cml__f32_to_bf16)
CMLC_EW_FLOAT_UNARY(f32, float, float, CMLC_EW_ID, CMLC_EW_ID)
CMLC_EW_FLOAT_UNARY(f64, double, double, CMLC_EW_ID, CMLC_EW_ID)

// Integer kernels: |T| signed or unsigned storage, |U| its unsigned twin, |BITS| its width.
#define CMLC_EW_INT_BITS_UNARY(sfx, T, U, BITS)                                          \
  CMLC_EW_UK(cmlc_ew_bit_count_##sfx, T, T, CMLC_EW_ID, (T), T,                          \
             __builtin_popcountll((unsigned long long)(U)a))                             \
  CMLC_EW_UK(cmlc_ew_clz_##sfx, T, T, CMLC_EW_ID, (T), T,                                \
             (U)a == 0 ? BITS : __builtin_clzll((unsigned long long)(U)a) - (64 - BITS)) \
  CMLC_EW_UK(cmlc_ew_bitwise_not_##sfx, T, T, CMLC_EW_ID, (T), T, (U) ~(U)a)

#define CMLC_EW_SINT_UNARY(sfx, T, U, BITS)                                                \
  CMLC_EW_INT_BITS_UNARY(sfx, T, U, BITS)                                                  \
  CMLC_EW_UK(cmlc_ew_abs_##sfx, T, T, CMLC_EW_ID, (T), T, a < 0 ? (U)((U)0 - (U)a) : (U)a) \
  CMLC_EW_UK(cmlc_ew_neg_##sfx, T, T, CMLC_EW_ID, (T), T, (U)((U)0 - (U)a))                \
  CMLC_EW_UK(cmlc_ew_sign_##sfx, T, T, CMLC_EW_ID, (T), T, (a > 0) - (a < 0))

CMLC_EW_SINT_UNARY(i8, int8_t, uint8_t, 8)
CMLC_EW_SINT_UNARY(i16, int16_t, uint16_t, 16)
CMLC_EW_SINT_UNARY(i32, int32_t, uint32_t, 32)
CMLC_EW_SINT_UNARY(i64, int64_t, uint64_t, 64)
CMLC_EW_INT_BITS_UNARY(u8, uint8_t, uint8_t, 8)
CMLC_EW_INT_BITS_UNARY(u16, uint16_t, uint16_t, 16)
CMLC_EW_INT_BITS_UNARY(u32, uint32_t, uint32_t, 32)
CMLC_EW_INT_BITS_UNARY(u64, uint64_t, uint64_t, 64)

CMLC_EW_UK(cmlc_ew_logical_not_bool, uint8_t, uint8_t, CMLC_EW_ID, CMLC_EW_BOOL, uint8_t, !a)

//===--- complex ---===//

// exp(z) - 1 = expm1(x) cos(y) - 2 sin^2(y/2) + i exp(x) sin(y): no cancellation near 0.
// A zero imaginary part stays exactly zero (XLA: expm1(inf + 0i) = inf + 0i, not inf * 0 = NaN).
// An infinite real part takes exp(z) - 1 from cexp (Annex G's values: exp(-inf + inf i) is a
// zero, so -1, where the sum form gave NaN from cos(inf)).
static inline float _Complex cmlc_ew_cexpm1_f(float _Complex z) {
  if (isinf(crealf(z))) {
    const float _Complex e = cexpf(z);
    return CMPLXF(crealf(e) - 1.0f, cimagf(e));
  }
  const float x = crealf(z), y = cimagf(z), s = sinf(0.5f * y);
  return CMPLXF(expm1f(x) * cosf(y) - 2.0f * s * s, y == 0.0f ? y : expf(x) * sinf(y));
}
static inline double _Complex cmlc_ew_cexpm1_d(double _Complex z) {
  if (isinf(creal(z))) {
    const double _Complex e = cexp(z);
    return CMPLX(creal(e) - 1.0, cimag(e));
  }
  const double x = creal(z), y = cimag(z), s = sin(0.5 * y);
  return CMPLX(expm1(x) * cos(y) - 2.0 * s * s, y == 0.0 ? y : exp(x) * sin(y));
}
// log(1 + z). The real part log|1+z| is log1p(t) / 2 with t = 2x + x^2 + y^2 summed with the
// products' and sums' rounding errors added back, so that t keeps its digits where |1 + z| is
// near 1 (the circle through 0 and -2); where |1 + z| is small (z near -1, t near -1, which the
// sum form cancelled: a c64 log1p(-0.99994 - 2.2e-5 i) gave -inf) it is log(hypot(1 + x, y)),
// whose 1 + x is exact there. f32 values are computed in double. Past 1e4 (1e100) clog(1 + z),
// whose infinities and NaNs are Annex G's.
static inline double cmlc_ew_two_sum(double a, double b, double* err) {
  const double s = a + b, bb = s - a;
  *err = (a - (s - bb)) + (b - bb);
  return s;
}
static inline double cmlc_ew_log1p_abs(double x, double y) {
  const double u = 1.0 + x;
  if (u * u + y * y < 0.5) return log(hypot(u, y));
  const double xx = x * x, yy = y * y, exx = fma(x, x, -xx), eyy = fma(y, y, -yy);
  double e1, e2;
  const double sq = cmlc_ew_two_sum(xx, yy, &e1);
  const double t = cmlc_ew_two_sum(2.0 * x, sq, &e2);
  return 0.5 * log1p(t + (e2 + (e1 + (exx + eyy))));
}
static inline float _Complex cmlc_ew_clog1p_f(float _Complex z) {
  const float x = crealf(z), y = cimagf(z);
  if (fabsf(x) < 1e4f && fabsf(y) < 1e4f) {
    return CMPLXF((float)cmlc_ew_log1p_abs(x, y), atan2f(y, 1.0f + x));
  }
  return clogf(1.0f + z);
}
static inline double _Complex cmlc_ew_clog1p_d(double _Complex z) {
  const double x = creal(z), y = cimag(z);
  if (fabs(x) < 1e100 && fabs(y) < 1e100) {
    return CMPLX(cmlc_ew_log1p_abs(x, y), atan2(y, 1.0 + x));
  }
  return clog(1.0 + z);
}

// Complex Sign, z / |z|; when |z| overflows with both parts finite (DBL_MAX + DBL_MAX i), z is
// halved first (exactly), where z / inf gave 0.
static inline float _Complex cmlc_ew_csign_f(float _Complex z) {
  if (z == 0) return z;
  const float r = cabsf(z), x = crealf(z), y = cimagf(z);
  if (isinf(r) && isfinite(x) && isfinite(y)) {
    const float h = hypotf(0.5f * x, 0.5f * y);
    return CMPLXF(0.5f * x / h, 0.5f * y / h);
  }
  return CMPLXF(x / r, y / r);
}
static inline double _Complex cmlc_ew_csign_d(double _Complex z) {
  if (z == 0) return z;
  const double r = cabs(z), x = creal(z), y = cimag(z);
  if (isinf(r) && isfinite(x) && isfinite(y)) {
    const double h = hypot(0.5 * x, 0.5 * y);
    return CMPLX(0.5 * x / h, 0.5 * y / h);
  }
  return CMPLX(x / r, y / r);
}
#define CMLC_EW_CSIGN(a) \
  _Generic((a), float _Complex : cmlc_ew_csign_f, double _Complex : cmlc_ew_csign_d)(a)

#define CMLC_EW_COMPLEX_UNARY(sfx, T, R, CT, LOAD, STORE, SUFFIX)                    \
  CMLC_EW_UK(cmlc_ew_abs_##sfx, T, R, LOAD, CMLC_EW_ID, CT, fabs(a))                 \
  CMLC_EW_UK(cmlc_ew_neg_##sfx, T, T, LOAD, STORE, CT, -a)                           \
  CMLC_EW_UK(cmlc_ew_sign_##sfx, T, T, LOAD, STORE, CT, CMLC_EW_CSIGN(a))            \
  CMLC_EW_UK(cmlc_ew_sqrt_##sfx, T, T, LOAD, STORE, CT, sqrt(a))                     \
  CMLC_EW_UK(cmlc_ew_rsqrt_##sfx, T, T, LOAD, STORE, CT, 1 / sqrt(a))                \
  CMLC_EW_UK(cmlc_ew_exp_##sfx, T, T, LOAD, STORE, CT, exp(a))                       \
  CMLC_EW_UK(cmlc_ew_expm1_##sfx, T, T, LOAD, STORE, CT, cmlc_ew_cexpm1_##SUFFIX(a)) \
  CMLC_EW_UK(cmlc_ew_log_##sfx, T, T, LOAD, STORE, CT, log(a))                       \
  CMLC_EW_UK(cmlc_ew_log1p_##sfx, T, T, LOAD, STORE, CT, cmlc_ew_clog1p_##SUFFIX(a)) \
  CMLC_EW_UK(cmlc_ew_real_##sfx, T, R, LOAD, CMLC_EW_ID, CT, creal(a))               \
  CMLC_EW_UK(cmlc_ew_imag_##sfx, T, R, LOAD, CMLC_EW_ID, CT, cimag(a))               \
  CMLC_EW_UK(cmlc_ew_conj_##sfx, T, T, LOAD, STORE, CT, conj(a))

CMLC_EW_COMPLEX_UNARY(c64, cml_c64_t, float, float _Complex, cmlc_ew_load_c64, cmlc_ew_store_c64, f)
CMLC_EW_COMPLEX_UNARY(c128, cml_c128_t, double, double _Complex, cmlc_ew_load_c128,
                      cmlc_ew_store_c128, d)

//===--- table ---===//

#define CMLC_EW_PICK(name, DT, sfx) \
  if (dtype == CML_DTYPE_##DT) return cmlc_ew_##name##_##sfx;
#define CMLC_EW_PICK_FLOAT(name) \
  CMLC_EW_PICK(name, F16, f16)   \
  CMLC_EW_PICK(name, BF16, bf16) CMLC_EW_PICK(name, F32, f32) CMLC_EW_PICK(name, F64, f64)
#define CMLC_EW_PICK_SINT(name) \
  CMLC_EW_PICK(name, I8, i8)    \
  CMLC_EW_PICK(name, I16, i16) CMLC_EW_PICK(name, I32, i32) CMLC_EW_PICK(name, I64, i64)
#define CMLC_EW_PICK_UINT(name) \
  CMLC_EW_PICK(name, U8, u8)    \
  CMLC_EW_PICK(name, U16, u16) CMLC_EW_PICK(name, U32, u32) CMLC_EW_PICK(name, U64, u64)
#define CMLC_EW_PICK_COMPLEX(name) CMLC_EW_PICK(name, C64, c64) CMLC_EW_PICK(name, C128, c128)

cmlc_ew_fn cmlc_ew_unary_fn(cml_op_t op, cml_dtype_t dtype) {
  switch (op) {
    case CML_OP_ABS:
      CMLC_EW_PICK_FLOAT(abs) CMLC_EW_PICK_SINT(abs) CMLC_EW_PICK_COMPLEX(abs) break;
    case CML_OP_NEG:
      CMLC_EW_PICK_FLOAT(neg) CMLC_EW_PICK_SINT(neg) CMLC_EW_PICK_COMPLEX(neg) break;
    case CML_OP_SIGN:
      CMLC_EW_PICK_FLOAT(sign) CMLC_EW_PICK_SINT(sign) CMLC_EW_PICK_COMPLEX(sign) break;
    case CML_OP_CEIL:
      CMLC_EW_PICK_FLOAT(ceil) break;
    case CML_OP_FLOOR:
      CMLC_EW_PICK_FLOAT(floor) break;
    case CML_OP_ROUND:
      CMLC_EW_PICK_FLOAT(round) break;
    case CML_OP_SQRT:
      CMLC_EW_PICK_FLOAT(sqrt) CMLC_EW_PICK_COMPLEX(sqrt) break;
    case CML_OP_RSQRT:
      CMLC_EW_PICK_FLOAT(rsqrt) CMLC_EW_PICK_COMPLEX(rsqrt) break;
    case CML_OP_EXP:
      CMLC_EW_PICK_FLOAT(exp) CMLC_EW_PICK_COMPLEX(exp) break;
    case CML_OP_EXPM1:
      CMLC_EW_PICK_FLOAT(expm1) CMLC_EW_PICK_COMPLEX(expm1) break;
    case CML_OP_LOG:
      CMLC_EW_PICK_FLOAT(log) CMLC_EW_PICK_COMPLEX(log) break;
    case CML_OP_LOG1P:
      CMLC_EW_PICK_FLOAT(log1p) CMLC_EW_PICK_COMPLEX(log1p) break;
    case CML_OP_LOGISTIC:
      CMLC_EW_PICK_FLOAT(logistic) break;
    case CML_OP_TANH:
      CMLC_EW_PICK_FLOAT(tanh) break;
    case CML_OP_SIN:
      CMLC_EW_PICK_FLOAT(sin) break;
    case CML_OP_COS:
      CMLC_EW_PICK_FLOAT(cos) break;
    case CML_OP_ERF:
      CMLC_EW_PICK_FLOAT(erf) break;
    case CML_OP_REAL:
      CMLC_EW_PICK_FLOAT(real) CMLC_EW_PICK_COMPLEX(real) break;
    case CML_OP_IMAG:
      CMLC_EW_PICK_FLOAT(imag) CMLC_EW_PICK_COMPLEX(imag) break;
    case CML_OP_CONJ:
      CMLC_EW_PICK_COMPLEX(conj) break;
    case CML_OP_IS_FINITE:
      CMLC_EW_PICK_FLOAT(is_finite) break;
    case CML_OP_IS_NAN:
      CMLC_EW_PICK_FLOAT(is_nan) break;
    case CML_OP_BIT_COUNT:
      CMLC_EW_PICK_SINT(bit_count) CMLC_EW_PICK_UINT(bit_count) break;
    case CML_OP_CLZ:
      CMLC_EW_PICK_SINT(clz) CMLC_EW_PICK_UINT(clz) break;
    case CML_OP_BITWISE_NOT:
      CMLC_EW_PICK_SINT(bitwise_not) CMLC_EW_PICK_UINT(bitwise_not) break;
    case CML_OP_LOGICAL_NOT:
      CMLC_EW_PICK(logical_not, BOOL, bool) break;
    default:
      break;
  }
  return NULL;
}
