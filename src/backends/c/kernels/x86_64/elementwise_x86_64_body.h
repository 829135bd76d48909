// SPDX-License-Identifier: Apache-2.0
// kernels/x86_64/elementwise_x86_64_body.h: the f32 SIMD elementwise and reduction kernels,
// written once over a small vector layer and included by elementwise_x86_64_avx512.c and
// elementwise_x86_64_avx2.c (each defines the layer, CMLC_EW_TARGET and CMLC_EW_FN first).
//
// Every kernel computes each element with the same sequence of IEEE operations on both ISAs
// (explicit FMAs, no reassociation), so AVX2 and AVX-512 results are bit-identical; the
// reductions use 32 virtual lanes and a fixed combining tree for the same reason.
//
// The vector math (exp, log, tanh, logistic, erf, gelu) is kernels/x86_64/vecmath.h.
#ifndef CML_BACKENDS_C_KERNELS_X86_64_ELEMENTWISE_X86_64_BODY_H_
#define CML_BACKENDS_C_KERNELS_X86_64_ELEMENTWISE_X86_64_BODY_H_

#include "backends/c/kernels/generic/reduce_internal.h"
#include "backends/c/kernels/x86_64/vecmath.h"

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
CMLC_EW_SIMD_UNARY(expm1_f32, v_expm1)
CMLC_EW_SIMD_UNARY(log1p_f32, v_log1p)
CMLC_EW_SIMD_UNARY(sign_f32, v_sign)
CMLC_EW_SIMD_UNARY(floor_f32, v_floor)
CMLC_EW_SIMD_UNARY(ceil_f32, v_ceil)
CMLC_EW_SIMD_UNARY(round_f32, v_round)
CMLC_EW_SIMD_UNARY(sin_f32, v_sin)
CMLC_EW_SIMD_UNARY(cos_f32, v_cos)

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

// 2-byte elements (bf16, f16, i16, u16): widened to 32-bit lanes (bits only), selected,
// narrowed back.
CMLC_EW_TARGET static void CMLC_EW_FN(where_2)(void* out, const void* const* in, const int64_t* st,
                                               int64_t n) {
  const uint8_t* c = (const uint8_t*)in[0];
  const uint16_t* t = (const uint16_t*)in[1];
  const uint16_t* f = (const uint16_t*)in[2];
  uint16_t* o = (uint16_t*)out;
  const vf t0 = v_cast_f(v_i_set1(t[0])), f0 = v_cast_f(v_i_set1(f[0]));
  const vm c0 = v_load_bool_scalar(c[0]);
  int64_t i = 0;
  for (; i + CMLC_V_W <= n; i += CMLC_V_W) {
    const vm m = st[0] ? v_load_bool(c + i) : c0;
    const vf vt = st[1] ? v_cast_f(v_load_u16(t + i)) : t0;
    const vf vf_ = st[2] ? v_cast_f(v_load_u16(f + i)) : f0;
    v_store_u16(o + i, v_cast_i(v_sel(m, vt, vf_)));
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
// bf16 -> f32: exact; NaNs get the quiet bit (the scalar path quiets them through double).
CMLC_EW_TARGET static inline vf v_bf16_to_f32(const uint16_t* p) {
  const vf x = v_cast_f(v_i_shl16(v_load_u16(p)));
  return v_sel(v_unord(x, x), v_or(x, v_cast_f(v_i_set1(0x00400000))), x);
}
#define CMLC_EW_BF16_TO_F32(dst, src) v_store((dst), v_bf16_to_f32(src))
#define CMLC_EW_F32_TO_F16(dst, src) v_store_f16((dst), v_canonical_nan(v_load(src)))
#define CMLC_EW_F16_TO_F32(dst, src) v_store((dst), v_load_f16(src))
// f32 -> i32: truncation, saturating, NaN -> 0.
CMLC_EW_TARGET static inline vi v_f32_to_i32(vf x) {
  vi r = v_cvtt_i32(x);  // INT32_MIN for NaN and out-of-range values
  r = v_i_sel(v_ge(x, v_set1(2147483648.0f)), v_i_set1(INT32_MAX), r);
  return v_i_sel(v_unord(x, x), v_i_set1(0), r);
}
#define CMLC_EW_F32_TO_I32(dst, src) v_store_i32((dst), v_f32_to_i32(v_load(src)))
// Between the 16-bit floats, and from them to i32: widened exactly, then as from f32 (one
// rounding; NaN as the scalar path's, sign kept; ints truncated, saturated, NaN -> 0).
#define CMLC_EW_BF16_TO_F16(dst, src) v_store_f16((dst), v_canonical_nan(v_bf16_to_f32(src)))
#define CMLC_EW_F16_TO_BF16(dst, src) v_store_u16((dst), v_f32_to_bf16_bits(v_load_f16(src)))
#define CMLC_EW_BF16_TO_I32(dst, src) v_store_i32((dst), v_f32_to_i32(v_bf16_to_f32(src)))
#define CMLC_EW_F16_TO_I32(dst, src) v_store_i32((dst), v_f32_to_i32(v_load_f16(src)))
#define CMLC_EW_I32_TO_F32(dst, src) v_store((dst), v_cvt_f32(v_load_i32(src)))
// Int32 -> bf16 / f16 through f32 (exact below 2^24 in magnitude, then rounded once, as the
// scalar path's double); lanes from 2^24 up take the scalar conversion (f32 would round twice).
CMLC_EW_TARGET
static inline void CMLC_EW_FN(i32_to_half)(uint16_t* dst, const int32_t* src, bool bf) {
  const vf f = v_cvt_f32(v_load_i32(src));
  if (bf) {
    v_store_u16(dst, v_f32_to_bf16_bits(f));
  } else {
    v_store_f16(dst, f);
  }
  for (uint32_t big = v_mask_bits(v_ge(v_abs(f), v_set1(16777216.0f))); big; big &= big - 1) {
    const int i = __builtin_ctz(big);
    dst[i] = bf ? cml_f64_to_bf16((double)src[i]) : cml_f64_to_f16((double)src[i]);
  }
}
#define CMLC_EW_I32_TO_BF16(dst, src) CMLC_EW_FN(i32_to_half)((dst), (src), true)
#define CMLC_EW_I32_TO_F16(dst, src) CMLC_EW_FN(i32_to_half)((dst), (src), false)
// Bool (any nonzero byte is true) -> 1 or 0, and floats -> bool (nonzero, NaN included, is
// true), as the scalar conversions.
#define CMLC_EW_BOOL_01(src) v_sel(v_load_bool(src), v_set1(1.0f), v_zero())
#define CMLC_EW_BOOL_TO_F32(dst, src) v_store((dst), CMLC_EW_BOOL_01(src))
#define CMLC_EW_BOOL_TO_BF16(dst, src) v_store_u16((dst), v_f32_to_bf16_bits(CMLC_EW_BOOL_01(src)))
#define CMLC_EW_BOOL_TO_F16(dst, src) v_store_f16((dst), CMLC_EW_BOOL_01(src))
#define CMLC_EW_F32_TO_BOOL(dst, src) v_store_bool((dst), v_neq(v_load(src), v_zero()))
#define CMLC_EW_BF16_TO_BOOL(dst, src) v_store_bool((dst), v_neq(v_bf16_to_f32(src), v_zero()))
#define CMLC_EW_F16_TO_BOOL(dst, src) v_store_bool((dst), v_neq(v_load_f16(src), v_zero()))
// Every SIMD conversion: from, to, storage types and the W-lane body above. Defines
// cvt_FROM_TO and feeds convert_fn's lookup.
#define CMLC_EW_CONVERSIONS(X)                           \
  X(F32, BF16, float, uint16_t, CMLC_EW_F32_TO_BF16)     \
  X(BF16, F32, uint16_t, float, CMLC_EW_BF16_TO_F32)     \
  X(F32, F16, float, uint16_t, CMLC_EW_F32_TO_F16)       \
  X(F16, F32, uint16_t, float, CMLC_EW_F16_TO_F32)       \
  X(F32, I32, float, int32_t, CMLC_EW_F32_TO_I32)        \
  X(I32, F32, int32_t, float, CMLC_EW_I32_TO_F32)        \
  X(BF16, F16, uint16_t, uint16_t, CMLC_EW_BF16_TO_F16)  \
  X(F16, BF16, uint16_t, uint16_t, CMLC_EW_F16_TO_BF16)  \
  X(BF16, I32, uint16_t, int32_t, CMLC_EW_BF16_TO_I32)   \
  X(F16, I32, uint16_t, int32_t, CMLC_EW_F16_TO_I32)     \
  X(I32, BF16, int32_t, uint16_t, CMLC_EW_I32_TO_BF16)   \
  X(I32, F16, int32_t, uint16_t, CMLC_EW_I32_TO_F16)     \
  X(BOOL, F32, uint8_t, float, CMLC_EW_BOOL_TO_F32)      \
  X(BOOL, BF16, uint8_t, uint16_t, CMLC_EW_BOOL_TO_BF16) \
  X(BOOL, F16, uint8_t, uint16_t, CMLC_EW_BOOL_TO_F16)   \
  X(F32, BOOL, float, uint8_t, CMLC_EW_F32_TO_BOOL)      \
  X(BF16, BOOL, uint16_t, uint8_t, CMLC_EW_BF16_TO_BOOL) \
  X(F16, BOOL, uint16_t, uint8_t, CMLC_EW_F16_TO_BOOL)

#define CMLC_EW_CVT_DEFINE(FROM, TO, TIN, TOUT, BODY)                                              \
  CMLC_EW_TARGET static void CMLC_EW_FN(cvt_##FROM##_##TO)(void* out, const void* in, int64_t n) { \
    CMLC_EW_CONVERT_LOOP(TIN, TOUT, BODY)                                                          \
  }
CMLC_EW_CONVERSIONS(CMLC_EW_CVT_DEFINE)
#undef CMLC_EW_CVT_DEFINE

#include "backends/c/kernels/x86_64/elementwise_x86_64_fused.h"

//===--- reductions: 32 virtual lanes, pairwise halves above 2048 elements ---===//

// (The split rule is the produced reductions' too: kernels/generic/reduce_internal.h.)
enum { CMLC_EW_RD_LANES = CMLC__RD_SIMD_LANES, CMLC_EW_RD_SPLIT = CMLC__RD_SIMD_SPLIT };

// T storage loaded W lanes at a time by LOADV (WIDEN1 one element, for the tail) and reduced
// in f32: for bf16 / f16 the f32 reduction of the widened values, lane for lane. name##_step is
// a leaf (n <= CMLC_EW_RD_SPLIT) taken in steps: from the identity (CMLC_RD_STEP_FIRST) or the
// lanes stored in |lanes| by the step before, whose n was a multiple of CMLC_EW_RD_LANES (no
// tail); CMLC_RD_STEP_LAST ends it (the tail and the lanes combined) and returns its value.
// A leaf in steps computes every lane in the order of one call, so the same bits. (The leaf
// itself inlines the body with constant flags: a call into the step form cost LayerNorm rows
// of 768 about 4%. Only the f32 step forms are used: the half ones are marked unused.)
#define CMLC_EW_SIMD_REDUCE_GEN(name, T, LOADV, WIDEN1, VOP, IDENT, SOP)                     \
  CMLC_EW_TARGET static inline __attribute__((always_inline)) float CMLC_EW_FN(name##_body)( \
      float* lanes, const T* x, int64_t n, int flags) {                                      \
    enum { K = CMLC_EW_RD_LANES / CMLC_V_W };                                                \
    vf acc[K];                                                                               \
    for (int k = 0; k < K; ++k) {                                                            \
      acc[k] = (flags & CMLC_RD_STEP_FIRST) ? v_set1(IDENT) : v_load(lanes + k * CMLC_V_W);  \
    }                                                                                        \
    int64_t i = 0;                                                                           \
    for (; i + CMLC_EW_RD_LANES <= n; i += CMLC_EW_RD_LANES) {                               \
      for (int k = 0; k < K; ++k) acc[k] = VOP(acc[k], LOADV(x + i + k * CMLC_V_W));         \
    }                                                                                        \
    if (!(flags & CMLC_RD_STEP_LAST)) {                                                      \
      for (int k = 0; k < K; ++k) v_store(lanes + k * CMLC_V_W, acc[k]);                     \
      return 0.0f;                                                                           \
    }                                                                                        \
    if (i < n) {                                                                             \
      float t[CMLC_EW_RD_LANES];                                                             \
      for (int j = 0; j < CMLC_EW_RD_LANES; ++j) {                                           \
        t[j] = i + j < n ? WIDEN1(x[i + j]) : (IDENT);                                       \
      }                                                                                      \
      for (int k = 0; k < K; ++k) acc[k] = VOP(acc[k], v_load(t + k * CMLC_V_W));            \
    }                                                                                        \
    float lane[CMLC_EW_RD_LANES];                                                            \
    for (int k = 0; k < K; ++k) v_store(lane + k * CMLC_V_W, acc[k]);                        \
    for (int w = CMLC_EW_RD_LANES / 2; w >= 1; w /= 2) {                                     \
      for (int j = 0; j < w; ++j) lane[j] = SOP(lane[j], lane[j + w]);                       \
    }                                                                                        \
    return lane[0];                                                                          \
  }                                                                                          \
  CMLC_EW_TARGET __attribute__((unused)) static float CMLC_EW_FN(name##_step)(               \
      float* lanes, const T* x, int64_t n, int flags) {                                      \
    return CMLC_EW_FN(name##_body)(lanes, x, n, flags);                                      \
  }                                                                                          \
  CMLC_EW_TARGET static float CMLC_EW_FN(name)(const T* x, int64_t n) {                      \
    if (n > CMLC_EW_RD_SPLIT) {                                                              \
      const int64_t h = (n / 2) & ~(int64_t)(CMLC_EW_RD_LANES - 1);                          \
      const float a = CMLC_EW_FN(name)(x, h), b = CMLC_EW_FN(name)(x + h, n - h);            \
      return SOP(a, b);                                                                      \
    }                                                                                        \
    return CMLC_EW_FN(name##_body)(NULL, x, n, CMLC_RD_STEP_FIRST | CMLC_RD_STEP_LAST);      \
  }
// Int32 Div and Rem with the scalar kernels' results: a / 0 = -1, a % 0 = a, INT32_MIN / -1 =
// INT32_MIN and INT32_MIN % -1 = 0 (the remainder a - q b wraps), either operand broadcast.
CMLC_EW_TARGET static inline vi CMLC_EW_FN(i32_divrem)(vi a, vi b, bool rem) {
  vi q = v_i_div_trunc(a, b);
  q = v_i_sel(v_i_eq(b, v_i_set1(0)), v_i_set1(-1), q);
  return rem ? v_i_sub(a, v_i_mullo(q, b)) : q;
}
#define CMLC_EW_SIMD_I32_DIVREM(name, REM)                                                         \
  CMLC_EW_TARGET static void CMLC_EW_FN(name)(void* out, const void* const* in, const int64_t* st, \
                                              int64_t n) {                                         \
    const int32_t* a = (const int32_t*)in[0];                                                      \
    const int32_t* b = (const int32_t*)in[1];                                                      \
    int32_t* o = (int32_t*)out;                                                                    \
    const vi a0 = v_i_set1(a[0]), b0 = v_i_set1(b[0]);                                             \
    int64_t i = 0;                                                                                 \
    for (; i + CMLC_V_W <= n; i += CMLC_V_W) {                                                     \
      const vi va = st[0] ? v_load_i32(a + i) : a0, vb = st[1] ? v_load_i32(b + i) : b0;           \
      v_store_i32(o + i, CMLC_EW_FN(i32_divrem)(va, vb, REM));                                     \
    }                                                                                              \
    if (i < n) {                                                                                   \
      int32_t ta[CMLC_V_W] = {0}, tb[CMLC_V_W], tr[CMLC_V_W];                                      \
      for (int k = 0; k < CMLC_V_W; ++k) tb[k] = 1;                                                \
      const size_t bytes = (size_t)(n - i) * sizeof(int32_t);                                      \
      if (st[0]) memcpy(ta, a + i, bytes);                                                         \
      if (st[1]) memcpy(tb, b + i, bytes);                                                         \
      const vi va = st[0] ? v_load_i32(ta) : a0, vb = st[1] ? v_load_i32(tb) : b0;                 \
      v_store_i32(tr, CMLC_EW_FN(i32_divrem)(va, vb, REM));                                        \
      memcpy(o + i, tr, bytes);                                                                    \
    }                                                                                              \
  }
CMLC_EW_SIMD_I32_DIVREM(div_i32, false)
CMLC_EW_SIMD_I32_DIVREM(rem_i32, true)

#define CMLC_EW_SIMD_REDUCE(name, VOP, IDENT, SOP) \
  CMLC_EW_SIMD_REDUCE_GEN(name, float, v_load, CMLC_EW_ID, VOP, IDENT, SOP)
#define CMLC_EW_SIMD_REDUCE_HALF(name, LOADV, WIDEN1, VOP, IDENT, SOP) \
  CMLC_EW_SIMD_REDUCE_GEN(name, uint16_t, LOADV, WIDEN1, VOP, IDENT, SOP)

#define CMLC_EW_SADD(a, b) ((a) + (b))
CMLC_EW_SIMD_REDUCE(sum_f32, v_add, 0.0f, CMLC_EW_SADD)
CMLC_EW_SIMD_REDUCE(max_f32_rd, v_max_nan, -INFINITY, CMLC_EW_FMAX)
CMLC_EW_SIMD_REDUCE(min_f32_rd, v_min_nan, INFINITY, CMLC_EW_FMIN)

CMLC_EW_SIMD_REDUCE_HALF(sum_bf16_rd, v_bf16_to_f32, cml_bf16_to_f32, v_add, 0.0f, CMLC_EW_SADD)
CMLC_EW_SIMD_REDUCE_HALF(max_bf16_rd, v_bf16_to_f32, cml_bf16_to_f32, v_max_nan, -INFINITY,
                         CMLC_EW_FMAX)
CMLC_EW_SIMD_REDUCE_HALF(min_bf16_rd, v_bf16_to_f32, cml_bf16_to_f32, v_min_nan, INFINITY,
                         CMLC_EW_FMIN)
CMLC_EW_SIMD_REDUCE_HALF(sum_f16_rd, v_load_f16, cml_f16_to_f32, v_add, 0.0f, CMLC_EW_SADD)
CMLC_EW_SIMD_REDUCE_HALF(max_f16_rd, v_load_f16, cml_f16_to_f32, v_max_nan, -INFINITY, CMLC_EW_FMAX)
CMLC_EW_SIMD_REDUCE_HALF(min_f16_rd, v_load_f16, cml_f16_to_f32, v_min_nan, INFINITY, CMLC_EW_FMIN)

//===--- complex64 Exp and Abs ---===//
//
// W elements at a time: real and imaginary parts split into two lanes of vectors (a scalar
// copy), computed, merged back. Exp: e^a (cos b + i sin b) with the vector exp and sincos
// (within a few ulp of libm's cexpf, as the f32 kernels are of libm). Abs: hypot in double,
// sqrt(a^2 + b^2) rounded once to f32: glibc's hypotf computes exactly that, so the same bits.
// Elements outside the formulas' ground (a non-finite part; for Exp a real part above 88,
// where cexpf scales) take the scalar kernel instead. The input is contiguous (unary kernels
// take no strides).

CMLC_EW_TARGET static void CMLC_EW_FN(exp_c64)(void* out, const void* const* in,
                                               const int64_t* stride, int64_t n) {
  const float* x = (const float*)in[0];
  float* y = (float*)out;
  (void)stride;
  const int64_t sx = 2;
  for (int64_t i = 0; i < n; i += CMLC_V_W) {
    const int64_t w = n - i < CMLC_V_W ? n - i : CMLC_V_W;
    float re[CMLC_V_W] = {0}, im[CMLC_V_W] = {0}, yr[CMLC_V_W], yi[CMLC_V_W];
    uint32_t odd = 0;
    for (int64_t k = 0; k < w; ++k) {
      re[k] = x[(i + k) * sx], im[k] = x[(i + k) * sx + 1];
      if (!(re[k] <= 88.0f) || !isfinite(re[k]) || !isfinite(im[k])) odd |= 1u << k;
    }
    const vf e = v_exp(v_load(re)), b = v_load(im);
    v_store(yr, v_mul(e, v_cos(b)));
    v_store(yi, v_mul(e, v_sin(b)));
    for (int64_t k = 0; k < w; ++k) y[2 * (i + k)] = yr[k], y[2 * (i + k) + 1] = yi[k];
    for (; odd; odd &= odd - 1) {
      const int64_t k = __builtin_ctz(odd);
      const void* one[1] = {x + (i + k) * sx};
      const int64_t st[1] = {1};
      cmlc_ew_unary_fn(CML_OP_EXP, CML_DTYPE_C64)(y + 2 * (i + k), one, st, 1);
    }
  }
}

CMLC_EW_TARGET static void CMLC_EW_FN(abs_c64)(void* out, const void* const* in,
                                               const int64_t* stride, int64_t n) {
  const float* x = (const float*)in[0];
  float* y = (float*)out;
  (void)stride;
  const int64_t sx = 2;
  for (int64_t i = 0; i < n; ++i) {
    const float a = x[i * sx], b = x[i * sx + 1];
    if (!isfinite(a) || !isfinite(b)) {
      const void* one[1] = {x + i * sx};
      const int64_t st[1] = {1};
      cmlc_ew_unary_fn(CML_OP_ABS, CML_DTYPE_C64)(y + i, one, st, 1);
      continue;
    }
    const double da = a, db = b;
    y[i] = (float)__builtin_sqrt(da * da + db * db);
  }
}

static cmlc_ew_fn CMLC_EW_FN(complex_unary_fn)(cml_op_t op) {
  switch (op) {
    case CML_OP_EXP:
      return CMLC_EW_FN(exp_c64);
    case CML_OP_ABS:
      return CMLC_EW_FN(abs_c64);
    default:
      return NULL;
  }
}

//===--- tables ---===//

cmlc_ew_fn CMLC_EW_FN(unary_fn)(cml_op_t op, cml_dtype_t dtype) {
  if (dtype == CML_DTYPE_C64) return CMLC_EW_FN(complex_unary_fn)(op);
  if (dtype != CML_DTYPE_F32) return CMLC_EW_FN(half_unary_fn)(op, dtype);
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
    case CML_OP_EXPM1:
      return CMLC_EW_FN(expm1_f32);
    case CML_OP_LOG1P:
      return CMLC_EW_FN(log1p_f32);
    case CML_OP_SIGN:
      return CMLC_EW_FN(sign_f32);
    case CML_OP_FLOOR:
      return CMLC_EW_FN(floor_f32);
    case CML_OP_CEIL:
      return CMLC_EW_FN(ceil_f32);
    case CML_OP_ROUND:
      return CMLC_EW_FN(round_f32);
    case CML_OP_IS_FINITE:
      return CMLC_EW_FN(is_finite_f32);
    case CML_OP_SIN:
      return CMLC_EW_FN(sin_f32);
    case CML_OP_COS:
      return CMLC_EW_FN(cos_f32);
    default:
      return NULL;
  }
}

cmlc_ew_fn CMLC_EW_FN(binary_fn)(cml_op_t op, cml_dtype_t dtype) {
  if (dtype == CML_DTYPE_I32) {
    return op == CML_OP_DIV ? CMLC_EW_FN(div_i32) : op == CML_OP_REM ? CMLC_EW_FN(rem_i32) : NULL;
  }
  if (dtype != CML_DTYPE_F32) return CMLC_EW_FN(half_binary_fn)(op, dtype);
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
    case CML_OP_CLAMP:
      return CMLC_EW_FN(clamp_f32);
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
  return element_size == 4 ? CMLC_EW_FN(where_4) : element_size == 2 ? CMLC_EW_FN(where_2) : NULL;
}

cmlc_ew_convert_fn CMLC_EW_FN(convert_fn)(cml_dtype_t from, cml_dtype_t to) {
#define CMLC_EW_CVT_PICK(FROM, TO, TIN, TOUT, BODY) \
  if (from == CML_DTYPE_##FROM && to == CML_DTYPE_##TO) return CMLC_EW_FN(cvt_##FROM##_##TO);
  CMLC_EW_CONVERSIONS(CMLC_EW_CVT_PICK)
#undef CMLC_EW_CVT_PICK
  return NULL;
}

cmlc_rd_half_fn CMLC_EW_FN(reduce_half_fn)(cml_op_t op, cml_dtype_t dtype) {
  const bool bf = dtype == CML_DTYPE_BF16;
  if (!bf && dtype != CML_DTYPE_F16) return NULL;
  switch (op) {
    case CML_OP_REDUCE_SUM:
      return bf ? CMLC_EW_FN(sum_bf16_rd) : CMLC_EW_FN(sum_f16_rd);
    case CML_OP_REDUCE_MAX:
      return bf ? CMLC_EW_FN(max_bf16_rd) : CMLC_EW_FN(max_f16_rd);
    case CML_OP_REDUCE_MIN:
      return bf ? CMLC_EW_FN(min_bf16_rd) : CMLC_EW_FN(min_f16_rd);
    default:
      return NULL;
  }
}

cmlc_rd_f32_step_fn CMLC_EW_FN(reduce_step_fn)(cml_op_t op) {
  switch (op) {
    case CML_OP_REDUCE_SUM:
      return CMLC_EW_FN(sum_f32_step);
    case CML_OP_REDUCE_MAX:
      return CMLC_EW_FN(max_f32_rd_step);
    case CML_OP_REDUCE_MIN:
      return CMLC_EW_FN(min_f32_rd_step);
    default:
      return NULL;
  }
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

#include "backends/c/kernels/x86_64/elementwise_x86_64_tile.h"

#endif  // CML_BACKENDS_C_KERNELS_X86_64_ELEMENTWISE_X86_64_BODY_H_
