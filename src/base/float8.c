// SPDX-License-Identifier: Apache-2.0
// src/base/float8.c: float8 and float4 conversions (the F8* dtypes and F4E2M1FN), with
// ml_dtypes' rules (the reference implementation JAX uses; see docs/dtypes.md).
//
// Every conversion to a small float rounds once to nearest, ties to even (F8E8M0FNU, which has
// no mantissa bits, rounds ties up: 1.5 * 2^k -> 2^(k+1)). Values that round past the largest
// finite value become Inf where the type has one, else NaN, except F4E2M1FN (no NaN) which
// saturates. NaN and Inf:
//   IEEE-like (F8E5M2, F8E4M3, F8E3M4): NaN -> quiet NaN (sign kept), Inf -> Inf.
//   FN (F8E4M3FN): NaN and +-Inf -> NaN (S.1111.111, sign kept).
//   FNUZ (F8E4M3FNUZ, F8E5M2FNUZ, F8E4M3B11FNUZ): NaN and Inf -> 0x80, the only NaN; -0 -> +0.
//   F8E8M0FNU (powers of two only, unsigned): NaN, Inf, zero and negatives -> 0xFF (NaN);
//     positives below 2^-127 -> 2^-127.
//   F4E2M1FN: +-Inf -> +-6; NaN -> a zero (ml_dtypes 0.7 gives -0 for +NaN, +0 for -NaN).
//
// Thread-safety: every function here is pure and thread-safe.
#include <math.h>

#include "cml/shape.h"

typedef enum cml_mf_style_t {
  CML_MF_NONE,  // not a small float
  CML_MF_IEEE,  // Inf and NaN at the all-ones exponent
  CML_MF_FN,    // no Inf; NaN is S.all-ones
  CML_MF_FNUZ,  // no Inf, no -0; NaN is 0x80
  CML_MF_E8M0,  // unsigned powers of two; NaN is 0xFF
  CML_MF_F4,    // no Inf, no NaN
} cml_mf_style_t;

typedef struct cml_mf_t {
  cml_mf_style_t style;
  int ebits, mbits, bias;
} cml_mf_t;

static cml_mf_t cml_mf_of(cml_dtype_t d) {
  switch (d) {
    case CML_DTYPE_F8E5M2:
      return (cml_mf_t){CML_MF_IEEE, 5, 2, 15};
    case CML_DTYPE_F8E4M3:
      return (cml_mf_t){CML_MF_IEEE, 4, 3, 7};
    case CML_DTYPE_F8E3M4:
      return (cml_mf_t){CML_MF_IEEE, 3, 4, 3};
    case CML_DTYPE_F8E4M3FN:
      return (cml_mf_t){CML_MF_FN, 4, 3, 7};
    case CML_DTYPE_F8E4M3FNUZ:
      return (cml_mf_t){CML_MF_FNUZ, 4, 3, 8};
    case CML_DTYPE_F8E5M2FNUZ:
      return (cml_mf_t){CML_MF_FNUZ, 5, 2, 16};
    case CML_DTYPE_F8E4M3B11FNUZ:
      return (cml_mf_t){CML_MF_FNUZ, 4, 3, 11};
    case CML_DTYPE_F8E8M0FNU:
      return (cml_mf_t){CML_MF_E8M0, 8, 0, 127};
    case CML_DTYPE_F4E2M1FN:
      return (cml_mf_t){CML_MF_F4, 2, 1, 1};
    default:
      return (cml_mf_t){CML_MF_NONE, 0, 0, 0};
  }
}

bool cml_dtype_is_minifloat(cml_dtype_t dtype) { return cml_mf_of(dtype).style != CML_MF_NONE; }

double cml_f8_to_f64(cml_dtype_t dtype, uint8_t bits) {
  const cml_mf_t f = cml_mf_of(dtype);
  if (f.style == CML_MF_NONE) return NAN;
  if (f.style == CML_MF_E8M0) return bits == 0xFF ? NAN : ldexp(1.0, (int)bits - 127);
  const int width = 1 + f.ebits + f.mbits;
  bits &= (uint8_t)((1u << width) - 1u);
  const bool negative = (bits >> (width - 1)) & 1u;
  const int emax = (1 << f.ebits) - 1, mmax = (1 << f.mbits) - 1;
  const int e = (bits >> f.mbits) & emax, m = bits & mmax;
  double v;
  if ((f.style == CML_MF_IEEE && e == emax && m != 0) ||
      (f.style == CML_MF_FN && e == emax && m == mmax) ||
      (f.style == CML_MF_FNUZ && negative && e == 0 && m == 0)) {
    v = NAN;
  } else if (f.style == CML_MF_IEEE && e == emax) {
    v = INFINITY;
  } else if (e == 0) {
    v = ldexp((double)m, 1 - f.bias - f.mbits);
  } else {
    v = ldexp((double)(m + (1 << f.mbits)), e - f.bias - f.mbits);
  }
  return negative ? -v : v;
}

float cml_f8_to_f32(cml_dtype_t dtype, uint8_t bits) { return (float)cml_f8_to_f64(dtype, bits); }

static uint8_t cml_e8m0_from_f64(double x) {
  if (!(x > 0) || isinf(x)) return 0xFF;  // NaN, zeros, negatives, Inf
  int k;
  const double m = 2.0 * frexp(x, &k);  // x = m * 2^(k-1), m in [1, 2)
  int e = k - 1 + (m >= 1.5 ? 1 : 0) + 127;
  if (e < 0) e = 0;
  return e > 254 ? 0xFF : (uint8_t)e;
}

uint8_t cml_f64_to_f8(cml_dtype_t dtype, double x) {
  const cml_mf_t f = cml_mf_of(dtype);
  if (f.style == CML_MF_NONE) return 0;
  if (f.style == CML_MF_E8M0) return cml_e8m0_from_f64(x);
  const int width = 1 + f.ebits + f.mbits;
  const uint8_t sign = (uint8_t)(signbit(x) ? 1u << (width - 1) : 0u);
  const int emax = (1 << f.ebits) - 1, mmax = (1 << f.mbits) - 1;
  // The largest finite (exponent field, mantissa field) and the NaN / overflow results.
  int max_e = emax, max_m = mmax;
  if (f.style == CML_MF_IEEE) max_e = emax - 1;
  if (f.style == CML_MF_FN) max_m = mmax - 1;
  const uint8_t qnan = (uint8_t)(sign | (emax << f.mbits) | (1 << (f.mbits - 1)));
  const uint8_t inf = (uint8_t)(sign | (emax << f.mbits));
  const uint8_t fn_nan = (uint8_t)(sign | (emax << f.mbits) | mmax);
  const uint8_t max_finite = (uint8_t)(sign | (max_e << f.mbits) | max_m);
  uint8_t overflow;
  switch (f.style) {
    case CML_MF_IEEE:
      overflow = inf;
      break;
    case CML_MF_FN:
      overflow = fn_nan;
      break;
    case CML_MF_FNUZ:
      overflow = 0x80;
      break;
    default:
      overflow = max_finite;  // F4E2M1FN saturates
      break;
  }
  if (isnan(x)) {
    switch (f.style) {
      case CML_MF_IEEE:
        return qnan;
      case CML_MF_FN:
        return fn_nan;
      case CML_MF_FNUZ:
        return 0x80;
      default:
        return (uint8_t)(sign ^ (1u << (width - 1)));  // F4E2M1FN: ml_dtypes' zero
    }
  }
  if (isinf(x)) return overflow;
  const double a = fabs(x);
  const int emin = 1 - f.bias;  // the exponent of the smallest normal
  int exp2 = emin;
  if (a != 0) {
    int k;
    (void)frexp(a, &k);
    if (k - 1 > emin) exp2 = k - 1;
  }
  double r = nearbyint(ldexp(a, f.mbits - exp2));  // ties to even in the default mode
  if (r >= (double)(2 << f.mbits)) {
    r /= 2;
    ++exp2;
  }
  int e_field, m_field;
  if (r < (double)(1 << f.mbits)) {  // subnormal or zero
    e_field = 0;
    m_field = (int)r;
  } else {
    if (exp2 + f.bias > max_e) return overflow;
    e_field = exp2 + f.bias;
    m_field = (int)r - (1 << f.mbits);
  }
  if (e_field > max_e || (e_field == max_e && m_field > max_m)) return overflow;
  uint8_t code = (uint8_t)(sign | (e_field << f.mbits) | m_field);
  if (f.style == CML_MF_FNUZ && code == 0x80) code = 0;  // no negative zero
  return code;
}

uint8_t cml_f32_to_f8(cml_dtype_t dtype, float value) { return cml_f64_to_f8(dtype, value); }
