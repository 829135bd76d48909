// SPDX-License-Identifier: Apache-2.0
// kernels/x86_64/vecmath.h: f32 vector math (exp, log, expm1, log1p, tanh, logistic, erf, the
// two GELU forms, sign, NaN-propagating max/min) over the small vector layer of the SIMD
// kernels. Included by elementwise_x86_64_body.h after elementwise_x86_64_{avx512,avx2}.c
// define the layer (vf, vi, vm, v_* primitives, CMLC_EW_TARGET), so both ISAs get the same
// code.
//
// Every function computes each lane with the same sequence of IEEE operations on both ISAs
// (explicit FMAs, no reassociation), so AVX2 and AVX-512 results are bit-identical.
//
// Accuracy against libm in double over 16M inputs (random bit patterns, a sweep of all bit
// patterns, edge values): exp 0.89, log 0.82, tanh 1.41, logistic 2.26, erf 1.26 ulp max
// (docs/elementwise.md). Methods:
//   exp:      degree-7 Taylor on [-ln2/2, ln2/2], 2^n applied in two exact steps so subnormal
//             results round once; overflow above 88.72 gives +Inf, underflow gives 0.
//   log:      fdlibm-style log1p(f) = f - (f^2/2 - s (f^2/2 + R(s^2))), s = f / (2 + f), with
//             the Taylor series of 2 atanh; subnormal inputs are scaled by 2^23 first.
//   tanh:     odd Taylor polynomial (10 terms) below |x| = 0.55, 1 - 2t / (1 + t) with
//             t = exp(-2|x|) above.
//   logistic: 1 / (1 + exp(-x)) for x >= 0, e / (1 + e) with e = exp(x) below (the scalar
//             path's formulas).
//   erf:      Taylor polynomial (12 terms) below |x| = 1, 1 - exp(-x^2) g(x) above, with g a
//             degree-12 Chebyshev interpolant of erfc(x) exp(x^2) on [1, 3.92]; 1 beyond.
// Special values follow the scalar (libm) path: NaN -> NaN, exp(-Inf) = 0, log(0) = -Inf,
// log(x < 0) = NaN, tanh/erf(+-Inf) = +-1, -0 stays -0 where libm keeps it.

// Dense sweeps (tests/unit/c_kernels_vecmath_test.c asserts these bounds): every 1024th f32 bit
// pattern in each function's active range, in ulps of the f32 result against libm in double:
// exp 0.84 (bound 1), log 0.75 (1), tanh 1.31 (1.5), erf 1.26 (1.5), logistic 2.13 (2.5),
// expm1 2.35 (3), log1p 2.22 (3), sin 1.51 (2), cos 1.50 (2; every f32 in [-65536, 65536]:
// sin 1.58, cos 1.57).
// The GELU forms against the formula in double at the same f32 input, every 256th pattern in
// [-16, 16]:
//   gelu_erf:  6.8 ulp max on [-13, 16] (bound 7; the largest errors are near x = -1.4, where
//              1 + erf(z) cancels to 0.16, as in the scalar 1 + erff() path).
//   gelu_tanh: 4.6 ulp max for x >= -1.5 (bound 5); below, the rounding of u is amplified by
//              the function's condition number |x f'(x) / f(x)| (about 170 at x = -9): 150 ulp,
//              1e-5 relative, at x = -9 (bound 160), where |f(x)| < 1e-28.
#ifndef CML_BACKENDS_C_KERNELS_X86_64_VECMATH_H_
#define CML_BACKENDS_C_KERNELS_X86_64_VECMATH_H_

//===--- composite vector helpers ---===//

// -x, |x|, copysign(magnitude, sign source).
CMLC_EW_TARGET static inline vf v_neg(vf x) { return v_xor(x, v_set1(-0.0f)); }
CMLC_EW_TARGET static inline vf v_abs(vf x) { return v_andnot(v_set1(-0.0f), x); }
CMLC_EW_TARGET static inline vf v_copysign(vf mag, vf sign) {
  return v_or(v_andnot(v_set1(-0.0f), mag), v_and(v_set1(-0.0f), sign));
}

// XLA's Max/Min: NaN propagates (the first operand's NaN when both are NaN), -0 < +0.
CMLC_EW_TARGET static inline vf v_max_nan(vf a, vf b) {
  vf r = v_sel(v_eq(a, b), v_and(a, b), v_maxx(a, b));
  return v_sel(v_unord(a, b), v_add(a, b), r);
}
CMLC_EW_TARGET static inline vf v_min_nan(vf a, vf b) {
  vf r = v_sel(v_eq(a, b), v_or(a, b), v_minx(a, b));
  return v_sel(v_unord(a, b), v_add(a, b), r);
}

// e^x.
CMLC_EW_TARGET static inline vf v_exp(vf x) {
  // Clamp (NaN passes: the raw min/max return their second operand on NaN).
  x = v_minx(v_set1(88.8f), x);
  x = v_maxx(v_set1(-104.0f), x);
  const vf n = v_round(v_mul(x, v_set1(1.44269504088896341f)));
  vf r = v_fmadd(n, v_set1(-0.693145751953125f), x);  // 16-bit ln2 head: n * head is exact
  r = v_fmadd(n, v_set1(-1.42860682030941723e-6f), r);
  vf p = v_set1(1.0f / 5040.0f);
  p = v_fmadd(p, r, v_set1(1.0f / 720.0f));
  p = v_fmadd(p, r, v_set1(1.0f / 120.0f));
  p = v_fmadd(p, r, v_set1(1.0f / 24.0f));
  p = v_fmadd(p, r, v_set1(1.0f / 6.0f));
  p = v_fmadd(p, r, v_set1(0.5f));
  p = v_fmadd(p, r, v_set1(1.0f));
  p = v_fmadd(p, r, v_set1(1.0f));
  // 2^n = 2^n1 * 2^n2 with n1, n2 in [-75, 64]: both factors are normal floats, p * 2^n1 is
  // exact and the last product rounds once (also into the subnormal range).
  const vi ni = v_cvt_i32(n);
  const vi n1 = v_i_sra1(ni);
  const vi n2 = v_i_sub(ni, n1);
  const vf s1 = v_cast_f(v_i_shl23(v_i_add(n1, v_i_set1(127))));
  const vf s2 = v_cast_f(v_i_shl23(v_i_add(n2, v_i_set1(127))));
  return v_mul(v_mul(p, s1), s2);
}

// log(x).
CMLC_EW_TARGET static inline vf v_log(vf x) {
  const vm sub = v_lt(x, v_set1(1.17549435e-38f));  // subnormal, zero, negative
  const vf xs = v_sel(sub, v_mul(x, v_set1(8388608.0f)), x);
  const vi bits = v_cast_i(xs);
  vi ei = v_i_sub(v_i_srl23(bits), v_i_set1(127));
  vf m = v_cast_f(v_i_or(v_i_and(bits, v_i_set1(0x007fffff)), v_i_set1(0x3f800000)));
  const vm big = v_gt(m, v_set1(1.41421356f));
  m = v_sel(big, v_mul(m, v_set1(0.5f)), m);
  const vf e = v_sub(v_add(v_cvt_f32(ei), v_sel(big, v_set1(1.0f), v_zero())),
                     v_sel(sub, v_set1(23.0f), v_zero()));
  const vf f = v_sub(m, v_set1(1.0f));
  const vf s = v_div(f, v_add(v_set1(2.0f), f));
  const vf z = v_mul(s, s);
  vf rr = v_set1(2.0f / 11.0f);
  rr = v_fmadd(rr, z, v_set1(2.0f / 9.0f));
  rr = v_fmadd(rr, z, v_set1(2.0f / 7.0f));
  rr = v_fmadd(rr, z, v_set1(2.0f / 5.0f));
  rr = v_fmadd(rr, z, v_set1(2.0f / 3.0f));
  rr = v_mul(rr, z);
  const vf hfsq = v_mul(v_set1(0.5f), v_mul(f, f));
  const vf lo = v_fmadd(e, v_set1(1.42860682030941723e-6f), v_mul(s, v_add(hfsq, rr)));
  vf y = v_fmadd(e, v_set1(0.693145751953125f), v_sub(f, v_sub(hfsq, lo)));
  // Specials: x < 0 -> NaN, x == +-0 -> -Inf, +Inf -> +Inf, NaN -> x.
  y = v_sel(v_lt(x, v_zero()), v_set1(NAN), y);
  y = v_sel(v_eq(x, v_zero()), v_set1(-INFINITY), y);
  y = v_sel(v_eq(x, v_set1(INFINITY)), x, y);
  return v_sel(v_unord(x, x), x, y);
}

// e^x - 1 without the cancellation near 0 (Kahan): with u = e^x as computed, (u - 1) * (x / log u)
// (u - 1 is exact near 1, and the errors of u cancel in the ratio); x where u rounds to 1 (so
// +-0 and tiny x are exact), -1 where u - 1 is -1, +Inf where u overflows.
CMLC_EW_TARGET static inline vf v_expm1(vf x) {
  const vf u = v_exp(x);
  const vf um1 = v_sub(u, v_set1(1.0f));
  vf y = v_mul(um1, v_div(x, v_log(u)));  // x / log u first: (u - 1) * x overflows
  y = v_sel(v_eq(um1, v_set1(-1.0f)), um1, y);
  y = v_sel(v_eq(u, v_set1(INFINITY)), u, y);
  return v_sel(v_eq(u, v_set1(1.0f)), x, y);
}

// log(1 + x) without the cancellation near 0 (Goldberg): with u = 1 + x as computed,
// log(u) * x / (u - 1); x where u rounds to 1 (so +-0 and tiny x are exact), +Inf for +Inf.
// x = -1 gives -Inf and x < -1 NaN through log.
CMLC_EW_TARGET static inline vf v_log1p(vf x) {
  const vf u = v_add(v_set1(1.0f), x);
  vf y = v_mul(v_log(u), v_div(x, v_sub(u, v_set1(1.0f))));
  y = v_sel(v_eq(u, v_set1(INFINITY)), u, y);
  return v_sel(v_eq(u, v_set1(1.0f)), x, y);
}

// sign(x): +-1 for nonzero x, x itself for +-0 and NaN.
CMLC_EW_TARGET static inline vf v_sign(vf x) {
  return v_sel(v_gt(v_abs(x), v_zero()), v_copysign(v_set1(1.0f), x), x);
}

// sin and cos: x - k pi/2 with k = nearest(x 2/pi), pi/2 in three f32 parts applied with FMAs
// (the first step is exact, so r keeps its relative accuracy even next to a multiple of pi/2),
// then the sine or cosine Taylor polynomial on [-pi/4, pi/4] picked and signed by k mod 4 (computed
// in floats: k is an integer below 2^17 here). Lanes with |x| > CMLC_V_TRIG_MAX (where k pi/2 needs
// more than three parts) and +-Inf take the libm function, as the scalar kernel does; NaN
// propagates.
#define CMLC_V_TRIG_MAX 65536.0f

CMLC_EW_TARGET static inline vf v_sin_cos(vf x, bool cosine) {
  const vf k = v_round(v_mul(x, v_set1(0.636619746685028076f)));
  vf r = v_fmadd(k, v_set1(-1.57079637050628662f), x);
  r = v_fmadd(k, v_set1(4.37113882867379e-08f), r);
  r = v_fmadd(k, v_set1(1.71512451000588e-15f), r);
  const vf z = v_mul(r, r);
  // Taylor series: sin to r^9, cos to r^10 (truncation below 2e-9 and 3e-9 on [-pi/4, pi/4]).
  vf ps = v_fmadd(v_set1(1.0f / 362880.0f), z, v_set1(-1.0f / 5040.0f));
  ps = v_fmadd(ps, z, v_set1(1.0f / 120.0f));
  ps = v_fmadd(ps, z, v_set1(-1.0f / 6.0f));
  const vf s = v_fmadd(v_mul(ps, z), r, r);
  vf pc = v_fmadd(v_set1(-1.0f / 3628800.0f), z, v_set1(1.0f / 40320.0f));
  pc = v_fmadd(pc, z, v_set1(-1.0f / 720.0f));
  pc = v_fmadd(pc, z, v_set1(1.0f / 24.0f));
  const vf c = v_fmadd(v_mul(pc, z), z, v_fmadd(v_set1(-0.5f), z, v_set1(1.0f)));
  // cos x = sin(x + pi/2): one quadrant further.
  const vf q = cosine ? v_add(k, v_set1(1.0f)) : k;
  const vf half = v_mul(q, v_set1(0.5f)), quarter = v_mul(q, v_set1(0.25f));
  const vm odd = v_neq(v_sub(half, v_floor(half)), v_zero());
  const vm neg = v_ge(v_sub(quarter, v_floor(quarter)), v_set1(0.5f));
  vf y = v_sel(odd, c, s);
  y = v_sel(neg, v_neg(y), y);
  if (!cosine) y = v_sel(v_eq(x, v_zero()), x, y);  // sin(-0) = -0
  const vm big = v_gt(v_abs(x), v_set1(CMLC_V_TRIG_MAX));
  uint32_t bits = v_mask_bits(big);
  if (bits) {
    float xs[CMLC_V_W], ys[CMLC_V_W];
    v_store(xs, x);
    v_store(ys, y);
    for (; bits; bits &= bits - 1) {
      const int i = __builtin_ctz(bits);
      ys[i] = cosine ? cosf(xs[i]) : sinf(xs[i]);
    }
    y = v_load(ys);
  }
  return y;
}
CMLC_EW_TARGET static inline vf v_sin(vf x) { return v_sin_cos(x, false); }
CMLC_EW_TARGET static inline vf v_cos(vf x) { return v_sin_cos(x, true); }

// tanh(x).
CMLC_EW_TARGET static inline vf v_tanh(vf x) {
  const vf ax = v_abs(x);
  const vf t = v_exp(v_mul(ax, v_set1(-2.0f)));
  const vf big = v_sub(v_set1(1.0f), v_div(v_add(t, t), v_add(v_set1(1.0f), t)));
  const vf z = v_mul(x, x);
  vf p = v_set1(9.691537957e-05f);
  p = v_fmadd(p, z, v_set1(-2.391291142e-04f));
  p = v_fmadd(p, z, v_set1(5.900274409e-04f));
  p = v_fmadd(p, z, v_set1(-1.455834387e-03f));
  p = v_fmadd(p, z, v_set1(3.592128037e-03f));
  p = v_fmadd(p, z, v_set1(-8.863235530e-03f));
  p = v_fmadd(p, z, v_set1(2.186948854e-02f));
  p = v_fmadd(p, z, v_set1(-5.396825397e-02f));
  p = v_fmadd(p, z, v_set1(1.333333333e-01f));
  p = v_fmadd(p, z, v_set1(-3.333333333e-01f));
  // Below 2^-12, tanh(x) rounds to x (this also keeps -0).
  const vf small = v_sel(v_lt(ax, v_set1(0x1p-12f)), x, v_fmadd(v_mul(x, z), p, x));
  return v_sel(v_lt(ax, v_set1(0.55f)), small, v_copysign(big, x));
}

// 1 / (1 + e^-x).
CMLC_EW_TARGET static inline vf v_logistic(vf x) {
  const vf e = v_exp(v_neg(v_abs(x)));
  const vf num = v_sel(v_lt(x, v_zero()), e, v_set1(1.0f));
  return v_div(num, v_add(v_set1(1.0f), e));
}

// The Taylor polynomial of erf below |z| = 1 without its leading term: erf(z) = z (C0 + P(z^2))
// with C0 = 2 / sqrt(pi) (v_erf_small).
CMLC_EW_TARGET static inline vf v_erf_poly(vf zz) {
  vf p = v_set1(-1.22905553e-09f);  // 2/sqrt(pi) * (-1)^n / (n! (2n + 1)), n = 11 .. 1
  p = v_fmadd(p, zz, v_set1(1.48071928e-08f));
  p = v_fmadd(p, zz, v_set1(-1.63658447e-07f));
  p = v_fmadd(p, zz, v_set1(1.64621144e-06f));
  p = v_fmadd(p, zz, v_set1(-1.49256504e-05f));
  p = v_fmadd(p, zz, v_set1(1.20553330e-04f));
  p = v_fmadd(p, zz, v_set1(-8.54832702e-04f));
  p = v_fmadd(p, zz, v_set1(5.22397763e-03f));
  p = v_fmadd(p, zz, v_set1(-2.68661706e-02f));
  p = v_fmadd(p, zz, v_set1(1.12837917e-01f));
  p = v_fmadd(p, zz, v_set1(-3.76126389e-01f));
  // The leading coefficient 2/sqrt(pi) as head + tail: the float head alone is 0.5 ulp off.
  return v_fmadd(p, zz, v_set1(-5.86353834e-08f));
}
// erf(z) for |z| < 1.
CMLC_EW_TARGET static inline vf v_erf_small(vf z, vf zz) {
  return v_fmadd(z, v_set1(1.12837922573f), v_mul(z, v_erf_poly(zz)));
}

// g(a) = erfc(a) e^(a^2) for a >= 1: a degree-12 Chebyshev interpolant on [1, 3.92] in
// u = (min(a, 3.92) - 2.46) / 1.46 (erf rounds to 1 beyond; GELU takes v_erfc_scaled_far there).
CMLC_EW_TARGET static inline vf v_erfc_scaled(vf a) {
  const vf c = v_minx(v_set1(3.92f), a);
  const vf u = v_mul(v_sub(c, v_set1(2.46f)), v_set1(1.0f / 1.46f));
  vf g = v_set1(1.1117406756966375e-05f);
  g = v_fmadd(g, u, v_set1(-3.0326675187097862e-05f));
  g = v_fmadd(g, u, v_set1(4.744781108456664e-05f));
  g = v_fmadd(g, u, v_set1(-0.00012655978207476437f));
  g = v_fmadd(g, u, v_set1(0.00036673559225164354f));
  g = v_fmadd(g, u, v_set1(-0.0009171527926810086f));
  g = v_fmadd(g, u, v_set1(0.0022091020364314318f));
  g = v_fmadd(g, u, v_set1(-0.005213330965489149f));
  g = v_fmadd(g, u, v_set1(0.011900045908987522f));
  g = v_fmadd(g, u, v_set1(-0.026168137788772583f));
  g = v_fmadd(g, u, v_set1(0.055256057530641556f));
  g = v_fmadd(g, u, v_set1(-0.11151688545942307f));
  return v_fmadd(g, u, v_set1(0.213820680975914f));
}

// erf(x).
CMLC_EW_TARGET static inline vf v_erf(vf x) {
  const vf ax = v_abs(x);
  // |x| < 1: x * P(x^2), the Taylor series of erf times sqrt(pi) / 2.
  const vf small = v_sel(v_eq(x, v_zero()), x, v_erf_small(x, v_mul(x, x)));  // keeps -0
  // |x| >= 1: 1 - e^(-x^2) g(|x|).
  const vf erfc = v_mul(v_exp(v_neg(v_mul(ax, ax))), v_erfc_scaled(ax));
  const vf large = v_copysign(v_sub(v_set1(1.0f), erfc), x);
  return v_sel(v_lt(ax, v_set1(1.0f)), small, large);
}

// g(a) = erfc(a) e^(a^2) on [3.92, 10.6]: a degree-11 Chebyshev interpolant in
// u = (min(a, 10.6) - 7.26) / 3.34 (within 1.8e-7 relative; beyond 10.6, e^(-a^2) underflows).
CMLC_EW_TARGET static inline vf v_erfc_scaled_far(vf a) {
  const vf u = v_mul(v_sub(v_minx(v_set1(10.6f), a), v_set1(7.26f)), v_set1(1.0f / 3.34f));
  vf g = v_set1(3.110400939476676e-05f);
  g = v_fmadd(g, u, v_set1(-7.457134779542685e-05f));
  g = v_fmadd(g, u, v_set1(9.199196938425303e-05f));
  g = v_fmadd(g, u, v_set1(-0.00021453418594319373f));
  g = v_fmadd(g, u, v_set1(0.0005818710778839886f));
  g = v_fmadd(g, u, v_set1(-0.0013440011534839869f));
  g = v_fmadd(g, u, v_set1(0.0030423852149397135f));
  g = v_fmadd(g, u, v_set1(-0.006910623051226139f));
  g = v_fmadd(g, u, v_set1(0.015572965145111084f));
  g = v_fmadd(g, u, v_set1(-0.03477981314063072f));
  return v_fmadd(g, u, v_set1(0.07699491083621979f));
}

// GELU, exact form: x/2 (1 + erf(z)), z = x / sqrt(2), computed without the cancellation of
// 1 + erf(z) for z < -1: 1 + erf(z) for |z| < 1,
// erfc(|z|) = e^(-z^2) g(|z|) below -1 and 2 - erfc(z) above 1. z^2 is carried as head + tail
// (x / sqrt(2) split with FMAs), so the exponential sees the exact square. x = +Inf gives +Inf,
// -Inf gives NaN (as the formula: -Inf * 0).
CMLC_EW_TARGET static inline vf v_gelu_erf(vf x) {
  const vf ax = v_minx(v_set1(15.0f), v_abs(x));  // beyond, e^(-z^2) is 0 (NaN passes)
  const vf c_hi = v_set1(0.70710677f), c_lo = v_set1(1.21016175e-08f);
  const vf z_hi = v_mul(ax, c_hi);
  const vf z_lo = v_fmadd(ax, c_lo, v_fmadd(ax, c_hi, v_neg(z_hi)));
  const vf s_hi = v_mul(z_hi, z_hi);
  const vf s_lo = v_fmadd(v_add(z_hi, z_hi), z_lo, v_fmadd(z_hi, z_hi, v_neg(s_hi)));
  const vf e = v_exp(v_neg(s_hi));
  const vf g = v_sel(v_gt(z_hi, v_set1(3.92f)), v_erfc_scaled_far(z_hi), v_erfc_scaled(z_hi));
  const vf erfc = v_mul(v_fmadd(e, v_neg(s_lo), e), g);
  const vf large = v_sel(v_lt(x, v_zero()), erfc, v_sub(v_set1(2.0f), erfc));
  const vf z = v_mul(x, c_hi);
  const vf small = v_add(v_set1(1.0f), v_erf_small(z, v_mul(z, z)));
  const vf t = v_sel(v_lt(z_hi, v_set1(1.0f)), small, large);
  return v_mul(v_mul(x, v_set1(0.5f)), t);
}

// GELU, tanh form: x/2 (1 + tanh(u)) = x / (1 + e^(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3):
// one exponential and one division, no cancellation for negative x. e^(-2u) overflows to +Inf
// below x = -9.5 or so, giving -0 (the exact value is below 2^-120 there).
CMLC_EW_TARGET static inline vf v_gelu_tanh(vf x) {
  const vf x2 = v_mul(x, x);
  const vf u2 = v_mul(v_set1(1.5957691216057308f), v_fmadd(v_mul(x2, v_set1(0.044715f)), x, x));
  const vf e = v_exp(v_neg(u2));
  return v_div(x, v_add(v_set1(1.0f), e));
}

CMLC_EW_TARGET static inline vf v_rsqrt(vf x) { return v_div(v_set1(1.0f), v_sqrt(x)); }

#endif  // CML_BACKENDS_C_KERNELS_X86_64_VECMATH_H_
