// SPDX-License-Identifier: Apache-2.0
// kernels/x86_64/elementwise_x86_64_body.h: the f32 SIMD elementwise and reduction kernels,
// written once over a small vector layer and included by elementwise_x86_64_avx512.c and
// elementwise_x86_64_avx2.c (each defines the layer, CMLC_EW_TARGET and CMLC_EW_FN first).
//
// Every kernel computes each element with the same sequence of IEEE operations on both ISAs
// (explicit FMAs, no reassociation), so AVX2 and AVX-512 results are bit-identical; the
// reductions use 32 virtual lanes and a fixed combining tree for the same reason.
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
#ifndef CML_BACKENDS_C_KERNELS_X86_64_ELEMENTWISE_X86_64_BODY_H_
#define CML_BACKENDS_C_KERNELS_X86_64_ELEMENTWISE_X86_64_BODY_H_

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

// erf(x).
CMLC_EW_TARGET static inline vf v_erf(vf x) {
  const vf ax = v_abs(x);
  // |x| < 1: x * P(x^2), the Taylor series of erf times sqrt(pi) / 2.
  const vf z = v_mul(x, x);
  vf p = v_set1(-1.22905553e-09f);  // 2/sqrt(pi) * (-1)^n / (n! (2n + 1)), n = 11 .. 1
  p = v_fmadd(p, z, v_set1(1.48071928e-08f));
  p = v_fmadd(p, z, v_set1(-1.63658447e-07f));
  p = v_fmadd(p, z, v_set1(1.64621144e-06f));
  p = v_fmadd(p, z, v_set1(-1.49256504e-05f));
  p = v_fmadd(p, z, v_set1(1.20553330e-04f));
  p = v_fmadd(p, z, v_set1(-8.54832702e-04f));
  p = v_fmadd(p, z, v_set1(5.22397763e-03f));
  p = v_fmadd(p, z, v_set1(-2.68661706e-02f));
  p = v_fmadd(p, z, v_set1(1.12837917e-01f));
  p = v_fmadd(p, z, v_set1(-3.76126389e-01f));
  // The leading coefficient 2/sqrt(pi) as head + tail: the float head alone is 0.5 ulp off.
  p = v_fmadd(p, z, v_set1(-5.86353834e-08f));
  const vf small = v_sel(v_eq(x, v_zero()), x,  // keeps -0
                         v_fmadd(x, v_set1(1.12837922573f), v_mul(x, p)));
  // |x| >= 1: 1 - e^(-x^2) g(u), u = (min(|x|, 3.92) - 2.46) / 1.46 in [-1, 1].
  const vf c = v_minx(v_set1(3.92f), ax);
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
  g = v_fmadd(g, u, v_set1(0.213820680975914f));
  const vf erfc = v_mul(v_exp(v_neg(v_mul(ax, ax))), g);
  const vf large = v_copysign(v_sub(v_set1(1.0f), erfc), x);
  return v_sel(v_lt(ax, v_set1(1.0f)), small, large);
}

CMLC_EW_TARGET static inline vf v_rsqrt(vf x) { return v_div(v_set1(1.0f), v_sqrt(x)); }

//===--- unary kernels ---===//

// Full vectors straight from memory; the tail goes through a zero-padded stack copy.
#define CMLC_EW_SIMD_UNARY(name, VFN)                                             \
  CMLC_EW_TARGET static void CMLC_EW_FN(name)(void* out, const void* const* in,   \
                                              const int64_t* stride, int64_t n) { \
    (void)stride;                                                                 \
    const float* x = (const float*)in[0];                                         \
    float* y = (float*)out;                                                       \
    int64_t i = 0;                                                                \
    for (; i + CMLC_V_W <= n; i += CMLC_V_W) v_store(y + i, VFN(v_load(x + i)));  \
    if (i < n) {                                                                  \
      float t[CMLC_V_W] = {0};                                                    \
      memcpy(t, x + i, (size_t)(n - i) * sizeof(float));                          \
      v_store(t, VFN(v_load(t)));                                                 \
      memcpy(y + i, t, (size_t)(n - i) * sizeof(float));                          \
    }                                                                             \
  }

CMLC_EW_SIMD_UNARY(neg_f32, v_neg)
CMLC_EW_SIMD_UNARY(abs_f32, v_abs)
CMLC_EW_SIMD_UNARY(sqrt_f32, v_sqrt)
CMLC_EW_SIMD_UNARY(rsqrt_f32, v_rsqrt)
CMLC_EW_SIMD_UNARY(exp_f32, v_exp)
CMLC_EW_SIMD_UNARY(log_f32, v_log)
CMLC_EW_SIMD_UNARY(tanh_f32, v_tanh)
CMLC_EW_SIMD_UNARY(logistic_f32, v_logistic)
CMLC_EW_SIMD_UNARY(erf_f32, v_erf)

//===--- binary and compare kernels ---===//

// Operand strides are 0 (one broadcast value) or 1. STOREV(out, i, v) stores W results;
// STORET(out, i, tmp, count) stores the first |count| results of a tail computed into tmp.
#define CMLC_EW_SIMD_BINARY_GEN(name, TOUT, VR, VOP, STOREV, TAILT, STORET)                        \
  CMLC_EW_TARGET static void CMLC_EW_FN(name)(void* out, const void* const* in, const int64_t* st, \
                                              int64_t n) {                                         \
    const float* a = (const float*)in[0];                                                          \
    const float* b = (const float*)in[1];                                                          \
    TOUT* o = (TOUT*)out;                                                                          \
    const vf a0 = v_set1(a[0]), b0 = v_set1(b[0]);                                                 \
    int64_t i = 0;                                                                                 \
    if (st[0] && st[1]) {                                                                          \
      for (; i + CMLC_V_W <= n; i += CMLC_V_W) STOREV(o, i, VOP(v_load(a + i), v_load(b + i)));    \
    } else if (st[0]) {                                                                            \
      for (; i + CMLC_V_W <= n; i += CMLC_V_W) STOREV(o, i, VOP(v_load(a + i), b0));               \
    } else if (st[1]) {                                                                            \
      for (; i + CMLC_V_W <= n; i += CMLC_V_W) STOREV(o, i, VOP(a0, v_load(b + i)));               \
    } else {                                                                                       \
      const VR r = VOP(a0, b0);                                                                    \
      for (; i + CMLC_V_W <= n; i += CMLC_V_W) STOREV(o, i, r);                                    \
    }                                                                                              \
    if (i < n) {                                                                                   \
      float ta[CMLC_V_W] = {0}, tb[CMLC_V_W] = {0};                                                \
      TAILT tr[CMLC_V_W];                                                                          \
      const size_t bytes = (size_t)(n - i) * sizeof(float);                                        \
      if (st[0]) memcpy(ta, a + i, bytes);                                                         \
      if (st[1]) memcpy(tb, b + i, bytes);                                                         \
      const vf va = st[0] ? v_load(ta) : a0, vb = st[1] ? v_load(tb) : b0;                         \
      STOREV(tr, 0, VOP(va, vb));                                                                  \
      STORET(o, i, tr, n - i);                                                                     \
    }                                                                                              \
  }

#define CMLC_EW_STORE_F32(o, i, v) v_store((o) + (i), (v))
#define CMLC_EW_STORE_BOOL(o, i, m) v_store_bool((o) + (i), (m))
#define CMLC_EW_TAIL_COPY(o, i, t, count) memcpy((o) + (i), (t), (size_t)(count) * sizeof *(o))

#define CMLC_EW_SIMD_BINARY(name, VOP) \
  CMLC_EW_SIMD_BINARY_GEN(name, float, vf, VOP, CMLC_EW_STORE_F32, float, CMLC_EW_TAIL_COPY)
#define CMLC_EW_SIMD_COMPARE(name, VOP) \
  CMLC_EW_SIMD_BINARY_GEN(name, uint8_t, vm, VOP, CMLC_EW_STORE_BOOL, uint8_t, CMLC_EW_TAIL_COPY)

CMLC_EW_SIMD_BINARY(add_f32, v_add)
CMLC_EW_SIMD_BINARY(sub_f32, v_sub)
CMLC_EW_SIMD_BINARY(mul_f32, v_mul)
CMLC_EW_SIMD_BINARY(div_f32, v_div)
CMLC_EW_SIMD_BINARY(max_f32, v_max_nan)
CMLC_EW_SIMD_BINARY(min_f32, v_min_nan)
CMLC_EW_SIMD_COMPARE(eq_f32, v_eq)
CMLC_EW_SIMD_COMPARE(ne_f32, v_neq)
CMLC_EW_SIMD_COMPARE(lt_f32, v_lt)
CMLC_EW_SIMD_COMPARE(le_f32, v_le)
CMLC_EW_SIMD_COMPARE(gt_f32, v_gt)
CMLC_EW_SIMD_COMPARE(ge_f32, v_ge)

//===--- Where for 4-byte elements ---===//

CMLC_EW_TARGET static void CMLC_EW_FN(where_4)(void* out, const void* const* in, const int64_t* st,
                                               int64_t n) {
  const uint8_t* c = (const uint8_t*)in[0];
  const float* t = (const float*)in[1];
  const float* f = (const float*)in[2];
  float* o = (float*)out;
  const vf t0 = v_set1(t[0]), f0 = v_set1(f[0]);
  const vm c0 = v_load_bool_scalar(c[0]);
  int64_t i = 0;
  for (; i + CMLC_V_W <= n; i += CMLC_V_W) {
    const vm m = st[0] ? v_load_bool(c + i) : c0;
    const vf vt = st[1] ? v_load(t + i) : t0;
    const vf vf_ = st[2] ? v_load(f + i) : f0;
    v_store(o + i, v_sel(m, vt, vf_));
  }
  for (; i < n; ++i) o[i] = c[i * st[0]] ? t[i * st[1]] : f[i * st[2]];
}

//===--- conversions ---===//

// f32 -> bf16 / f16 canonicalize NaN first (sign | quiet bit, as the scalar path does through
// double), then round to nearest even.
CMLC_EW_TARGET static inline vf v_canonical_nan(vf x) {
  return v_sel(v_unord(x, x), v_or(v_and(x, v_set1(-0.0f)), v_cast_f(v_i_set1(0x7fc00000))), x);
}

CMLC_EW_TARGET static inline vi v_f32_to_bf16_bits(vf x) {
  const vi u = v_cast_i(v_canonical_nan(x));
  const vi lsb = v_i_and(v_i_srl16(u), v_i_set1(1));
  return v_i_srl16(v_i_add(u, v_i_add(lsb, v_i_set1(0x7fff))));
}

#define CMLC_EW_CONVERT_LOOP(TIN, TOUT, BODY)                  \
  const TIN* x = (const TIN*)in;                               \
  TOUT* y = (TOUT*)out;                                        \
  int64_t i = 0;                                               \
  for (; i + CMLC_V_W <= n; i += CMLC_V_W) BODY(y + i, x + i); \
  if (i < n) {                                                 \
    TIN tx[CMLC_V_W];                                          \
    TOUT ty[CMLC_V_W];                                         \
    memset(tx, 0, sizeof tx);                                  \
    memcpy(tx, x + i, (size_t)(n - i) * sizeof(TIN));          \
    BODY(ty, tx);                                              \
    memcpy(y + i, ty, (size_t)(n - i) * sizeof(TOUT));         \
  }

#define CMLC_EW_F32_TO_BF16(dst, src) v_store_u16((dst), v_f32_to_bf16_bits(v_load(src)))
CMLC_EW_TARGET static void CMLC_EW_FN(cvt_f32_bf16)(void* out, const void* in, int64_t n){
    CMLC_EW_CONVERT_LOOP(float, uint16_t, CMLC_EW_F32_TO_BF16)}

// bf16 -> f32: exact; NaNs get the quiet bit (the scalar path quiets them through double).
CMLC_EW_TARGET static inline vf v_bf16_to_f32(const uint16_t* p) {
  const vf x = v_cast_f(v_i_shl16(v_load_u16(p)));
  return v_sel(v_unord(x, x), v_or(x, v_cast_f(v_i_set1(0x00400000))), x);
}
#define CMLC_EW_BF16_TO_F32(dst, src) v_store((dst), v_bf16_to_f32(src))
CMLC_EW_TARGET static void CMLC_EW_FN(cvt_bf16_f32)(void* out, const void* in, int64_t n){
    CMLC_EW_CONVERT_LOOP(uint16_t, float, CMLC_EW_BF16_TO_F32)}
#define CMLC_EW_F32_TO_F16(dst, src) v_store_f16((dst), v_canonical_nan(v_load(src)))
CMLC_EW_TARGET static void CMLC_EW_FN(cvt_f32_f16)(void* out, const void* in, int64_t n){
    CMLC_EW_CONVERT_LOOP(float, uint16_t, CMLC_EW_F32_TO_F16)}

#define CMLC_EW_F16_TO_F32(dst, src) v_store((dst), v_load_f16(src))
CMLC_EW_TARGET static void CMLC_EW_FN(cvt_f16_f32)(void* out, const void* in, int64_t n){
    CMLC_EW_CONVERT_LOOP(uint16_t, float, CMLC_EW_F16_TO_F32)}

// f32 -> i32: truncation, saturating, NaN -> 0.
CMLC_EW_TARGET static inline vi v_f32_to_i32(vf x) {
  vi r = v_cvtt_i32(x);  // INT32_MIN for NaN and out-of-range values
  r = v_i_sel(v_ge(x, v_set1(2147483648.0f)), v_i_set1(INT32_MAX), r);
  return v_i_sel(v_unord(x, x), v_i_set1(0), r);
}
#define CMLC_EW_F32_TO_I32(dst, src) v_store_i32((dst), v_f32_to_i32(v_load(src)))
CMLC_EW_TARGET static void CMLC_EW_FN(cvt_f32_i32)(void* out, const void* in, int64_t n){
    CMLC_EW_CONVERT_LOOP(float, int32_t, CMLC_EW_F32_TO_I32)}
#define CMLC_EW_I32_TO_F32(dst, src) v_store((dst), v_cvt_f32(v_load_i32(src)))
CMLC_EW_TARGET static void CMLC_EW_FN(cvt_i32_f32)(void* out, const void* in, int64_t n) {
  CMLC_EW_CONVERT_LOOP(int32_t, float, CMLC_EW_I32_TO_F32)
}

//===--- reductions: 32 virtual lanes, pairwise halves above 8192 elements ---===//

enum { CMLC_EW_RD_LANES = 32, CMLC_EW_RD_SPLIT = 8192 };

#define CMLC_EW_SIMD_REDUCE(name, VOP, IDENT, SOP)                                    \
  CMLC_EW_TARGET static float CMLC_EW_FN(name)(const float* x, int64_t n) {           \
    if (n > CMLC_EW_RD_SPLIT) {                                                       \
      const int64_t h = (n / 2) & ~(int64_t)(CMLC_EW_RD_LANES - 1);                   \
      const float a = CMLC_EW_FN(name)(x, h), b = CMLC_EW_FN(name)(x + h, n - h);     \
      return SOP(a, b);                                                               \
    }                                                                                 \
    enum { K = CMLC_EW_RD_LANES / CMLC_V_W };                                         \
    vf acc[K];                                                                        \
    for (int k = 0; k < K; ++k) acc[k] = v_set1(IDENT);                               \
    int64_t i = 0;                                                                    \
    for (; i + CMLC_EW_RD_LANES <= n; i += CMLC_EW_RD_LANES) {                        \
      for (int k = 0; k < K; ++k) acc[k] = VOP(acc[k], v_load(x + i + k * CMLC_V_W)); \
    }                                                                                 \
    if (i < n) {                                                                      \
      float t[CMLC_EW_RD_LANES];                                                      \
      for (int j = 0; j < CMLC_EW_RD_LANES; ++j) t[j] = (IDENT);                      \
      memcpy(t, x + i, (size_t)(n - i) * sizeof(float));                              \
      for (int k = 0; k < K; ++k) acc[k] = VOP(acc[k], v_load(t + k * CMLC_V_W));     \
    }                                                                                 \
    float lane[CMLC_EW_RD_LANES];                                                     \
    for (int k = 0; k < K; ++k) v_store(lane + k * CMLC_V_W, acc[k]);                 \
    for (int w = CMLC_EW_RD_LANES / 2; w >= 1; w /= 2) {                              \
      for (int j = 0; j < w; ++j) lane[j] = SOP(lane[j], lane[j + w]);                \
    }                                                                                 \
    return lane[0];                                                                   \
  }

#define CMLC_EW_SADD(a, b) ((a) + (b))
CMLC_EW_SIMD_REDUCE(sum_f32, v_add, 0.0f, CMLC_EW_SADD)
CMLC_EW_SIMD_REDUCE(max_f32_rd, v_max_nan, -INFINITY, CMLC_EW_FMAX)
CMLC_EW_SIMD_REDUCE(min_f32_rd, v_min_nan, INFINITY, CMLC_EW_FMIN)

//===--- tables ---===//

cmlc_ew_fn CMLC_EW_FN(unary_fn)(cml_op_t op, cml_dtype_t dtype) {
  if (dtype != CML_DTYPE_F32) return NULL;
  switch (op) {
    case CML_OP_NEG:
      return CMLC_EW_FN(neg_f32);
    case CML_OP_ABS:
      return CMLC_EW_FN(abs_f32);
    case CML_OP_SQRT:
      return CMLC_EW_FN(sqrt_f32);
    case CML_OP_RSQRT:
      return CMLC_EW_FN(rsqrt_f32);
    case CML_OP_EXP:
      return CMLC_EW_FN(exp_f32);
    case CML_OP_LOG:
      return CMLC_EW_FN(log_f32);
    case CML_OP_TANH:
      return CMLC_EW_FN(tanh_f32);
    case CML_OP_LOGISTIC:
      return CMLC_EW_FN(logistic_f32);
    case CML_OP_ERF:
      return CMLC_EW_FN(erf_f32);
    default:
      return NULL;
  }
}

cmlc_ew_fn CMLC_EW_FN(binary_fn)(cml_op_t op, cml_dtype_t dtype) {
  if (dtype != CML_DTYPE_F32) return NULL;
  switch (op) {
    case CML_OP_ADD:
      return CMLC_EW_FN(add_f32);
    case CML_OP_SUB:
      return CMLC_EW_FN(sub_f32);
    case CML_OP_MUL:
      return CMLC_EW_FN(mul_f32);
    case CML_OP_DIV:
      return CMLC_EW_FN(div_f32);
    case CML_OP_MAX:
      return CMLC_EW_FN(max_f32);
    case CML_OP_MIN:
      return CMLC_EW_FN(min_f32);
    case CML_OP_EQUAL:
      return CMLC_EW_FN(eq_f32);
    case CML_OP_NOT_EQUAL:
      return CMLC_EW_FN(ne_f32);
    case CML_OP_LESS_THAN:
      return CMLC_EW_FN(lt_f32);
    case CML_OP_LESS_OR_EQUAL:
      return CMLC_EW_FN(le_f32);
    case CML_OP_GREATER_THAN:
      return CMLC_EW_FN(gt_f32);
    case CML_OP_GREATER_OR_EQUAL:
      return CMLC_EW_FN(ge_f32);
    default:
      return NULL;
  }
}

cmlc_ew_fn CMLC_EW_FN(where_fn)(size_t element_size) {
  return element_size == 4 ? CMLC_EW_FN(where_4) : NULL;
}

cmlc_ew_convert_fn CMLC_EW_FN(convert_fn)(cml_dtype_t from, cml_dtype_t to) {
  if (from == CML_DTYPE_F32 && to == CML_DTYPE_BF16) return CMLC_EW_FN(cvt_f32_bf16);
  if (from == CML_DTYPE_BF16 && to == CML_DTYPE_F32) return CMLC_EW_FN(cvt_bf16_f32);
  if (from == CML_DTYPE_F32 && to == CML_DTYPE_F16) return CMLC_EW_FN(cvt_f32_f16);
  if (from == CML_DTYPE_F16 && to == CML_DTYPE_F32) return CMLC_EW_FN(cvt_f16_f32);
  if (from == CML_DTYPE_F32 && to == CML_DTYPE_I32) return CMLC_EW_FN(cvt_f32_i32);
  if (from == CML_DTYPE_I32 && to == CML_DTYPE_F32) return CMLC_EW_FN(cvt_i32_f32);
  return NULL;
}

cmlc_rd_f32_fn CMLC_EW_FN(reduce_fn)(cml_op_t op) {
  switch (op) {
    case CML_OP_REDUCE_SUM:
      return CMLC_EW_FN(sum_f32);
    case CML_OP_REDUCE_MAX:
      return CMLC_EW_FN(max_f32_rd);
    case CML_OP_REDUCE_MIN:
      return CMLC_EW_FN(min_f32_rd);
    default:
      return NULL;
  }
}

#endif  // CML_BACKENDS_C_KERNELS_X86_64_ELEMENTWISE_X86_64_BODY_H_
