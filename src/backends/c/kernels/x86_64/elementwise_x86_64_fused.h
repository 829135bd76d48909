// SPDX-License-Identifier: Apache-2.0
// kernels/x86_64/elementwise_x86_64_fused.h: the SIMD inner loops of the fused ops
// (kernels/generic/fused.c picks them at plan time): GELU, the FusedDense epilogue (bias and
// activation), a contiguous LayerNorm row, a contiguous softmax row, softmax lanes along a
// non-last axis and blocks of short or narrow softmax lanes, for f32, bf16 and f16
// storage computed in f32. Included by elementwise_x86_64_body.h after the conversions, so
// both ISAs get the same code; row sums use 32 virtual lanes and a fixed combining tree, so
// AVX2 and AVX-512 results are bit-identical.
#ifndef CML_BACKENDS_C_KERNELS_X86_64_ELEMENTWISE_X86_64_FUSED_H_
#define CML_BACKENDS_C_KERNELS_X86_64_ELEMENTWISE_X86_64_FUSED_H_

#include "cml/fused.h"

//===--- loads and stores by storage type ---===//

// f32 / bf16 / f16 storage: W lanes at element |i|, and a tail of |count| < W lanes padded
// with |fill|.
#define CMLC_EW_FUSED_STORAGE(sfx, T, LOADV, STOREV)                                               \
  CMLC_EW_TARGET static inline vf v_ld_##sfx(const void* p, int64_t i) {                           \
    return LOADV((const T*)p + i);                                                                 \
  }                                                                                                \
  CMLC_EW_TARGET static inline void v_st_##sfx(void* p, int64_t i, vf v) { STOREV((T*)p + i, v); } \
  CMLC_EW_TARGET static inline vf v_ld_tail_##sfx(const void* p, int64_t i, int64_t count,         \
                                                  T fill) {                                        \
    T t[CMLC_V_W];                                                                                 \
    for (int k = 0; k < CMLC_V_W; ++k) t[k] = fill;                                                \
    memcpy(t, (const T*)p + i, (size_t)count * sizeof(T));                                         \
    return LOADV(t);                                                                               \
  }                                                                                                \
  CMLC_EW_TARGET static inline void v_st_tail_##sfx(void* p, int64_t i, int64_t count, vf v) {     \
    T t[CMLC_V_W];                                                                                 \
    STOREV(t, v);                                                                                  \
    memcpy((T*)p + i, t, (size_t)count * sizeof(T));                                               \
  }

#define CMLC_EW_FUSED_LOAD_F32(p) v_load(p)
#define CMLC_EW_FUSED_STORE_F32(p, v) v_store((p), (v))
#define CMLC_EW_FUSED_STORE_BF16(p, v) v_store_u16((p), v_f32_to_bf16_bits(v))
#define CMLC_EW_FUSED_STORE_F16(p, v) v_store_f16((p), v_canonical_nan(v))
CMLC_EW_FUSED_STORAGE(f32, float, CMLC_EW_FUSED_LOAD_F32, CMLC_EW_FUSED_STORE_F32)
CMLC_EW_FUSED_STORAGE(bf16, uint16_t, v_bf16_to_f32, CMLC_EW_FUSED_STORE_BF16)
CMLC_EW_FUSED_STORAGE(f16, uint16_t, v_load_f16, CMLC_EW_FUSED_STORE_F16)

// Fill values of the tails, as stored: -Inf and 0.
#define CMLC_EW_NEG_INF_f32 (-INFINITY)
#define CMLC_EW_NEG_INF_bf16 ((uint16_t)0xff80u)
#define CMLC_EW_NEG_INF_f16 ((uint16_t)0xfc00u)
#define CMLC_EW_ZERO_f32 0.0f
#define CMLC_EW_ZERO_bf16 ((uint16_t)0)
#define CMLC_EW_ZERO_f16 ((uint16_t)0)

// Lanes below |count| (0 < count < W) set.
CMLC_EW_TARGET static inline vm v_tail_mask(int64_t count) {
  static const float kLane[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  return v_lt(v_load(kLane), v_set1((float)count));
}

// The 32 virtual lanes of a row reduction folded in a fixed tree (sum or NaN-propagating max).
CMLC_EW_TARGET static inline float v_fold32(const vf* acc, bool max) {
  float lane[32];
  for (int k = 0; k < 32 / CMLC_V_W; ++k) v_store(lane + k * CMLC_V_W, acc[k]);
  for (int w = 16; w >= 1; w /= 2) {
    for (int j = 0; j < w; ++j) {
      lane[j] = max ? CMLC_EW_FMAX(lane[j], lane[j + w]) : lane[j] + lane[j + w];
    }
  }
  return lane[0];
}

//===--- GELU and the dense epilogue ---===//

#define CMLC_EW_FUSED_MAP(name, sfx, EXPR)                                                 \
  CMLC_EW_TARGET static void CMLC_EW_FN(name##_##sfx)(void* y, const void* x, int64_t n) { \
    int64_t i = 0;                                                                         \
    for (; i + 2 * CMLC_V_W <= n; i += 2 * CMLC_V_W) {                                     \
      vf v0 = v_ld_##sfx(x, i), v1 = v_ld_##sfx(x, i + CMLC_V_W);                          \
      {                                                                                    \
        const vf v = v0;                                                                   \
        v0 = EXPR;                                                                         \
      }                                                                                    \
      {                                                                                    \
        const vf v = v1;                                                                   \
        v1 = EXPR;                                                                         \
      }                                                                                    \
      v_st_##sfx(y, i, v0);                                                                \
      v_st_##sfx(y, i + CMLC_V_W, v1);                                                     \
    }                                                                                      \
    for (; i + CMLC_V_W <= n; i += CMLC_V_W) {                                             \
      const vf v = v_ld_##sfx(x, i);                                                       \
      v_st_##sfx(y, i, EXPR);                                                              \
    }                                                                                      \
    if (i < n) {                                                                           \
      const vf v = v_ld_tail_##sfx(x, i, n - i, CMLC_EW_ZERO_##sfx);                       \
      v_st_tail_##sfx(y, i, n - i, EXPR);                                                  \
    }                                                                                      \
  }

CMLC_EW_FUSED_MAP(gelu_erf, f32, v_gelu_erf(v))
CMLC_EW_FUSED_MAP(gelu_erf, bf16, v_gelu_erf(v))
CMLC_EW_FUSED_MAP(gelu_erf, f16, v_gelu_erf(v))
CMLC_EW_FUSED_MAP(gelu_tanh, f32, v_gelu_tanh(v))
CMLC_EW_FUSED_MAP(gelu_tanh, bf16, v_gelu_tanh(v))
CMLC_EW_FUSED_MAP(gelu_tanh, f16, v_gelu_tanh(v))

// The activations of FusedDense with the scalar epilogue's formulas (NaN propagates through
// relu and hard swish: the raw max/min return their second operand on NaN).
CMLC_EW_TARGET static inline __attribute__((always_inline)) vf v_act(vf v, int act) {
  switch (act) {
    case CML_ACTIVATION_GELU:
      return v_gelu_erf(v);
    case CML_ACTIVATION_RELU:
      return v_maxx(v_zero(), v);
    case CML_ACTIVATION_SILU:
      return v_div(v, v_add(v_set1(1.0f), v_exp(v_neg(v))));
    case CML_ACTIVATION_HARD_SWISH: {
      vf t = v_add(v_div(v, v_set1(6.0f)), v_set1(0.5f));
      t = v_minx(v_set1(1.0f), v_maxx(v_zero(), t));
      return v_mul(v, t);
    }
    case CML_ACTIVATION_TANH:
      return v_tanh(v);
    default:
      return v;
  }
}

// y[j] = act(c[j] + bias[j]) over one row of |n|: c f32, bias (NULL: none) and y of the storage
// type. The switch on |act| sits outside the loops.
#define CMLC_EW_FUSED_DENSE_ROW(sfx)                                                             \
  CMLC_EW_TARGET static inline __attribute__((always_inline)) void CMLC_EW_FN(                   \
      dense_row_act_##sfx)(void* y, const float* c, const void* bias, int64_t n, int act) {      \
    int64_t i = 0;                                                                               \
    for (; i + CMLC_V_W <= n; i += CMLC_V_W) {                                                   \
      vf v = v_load(c + i);                                                                      \
      if (bias) v = v_add(v, v_ld_##sfx(bias, i));                                               \
      v_st_##sfx(y, i, v_act(v, act));                                                           \
    }                                                                                            \
    if (i < n) {                                                                                 \
      vf v = v_ld_tail_f32(c, i, n - i, 0.0f);                                                   \
      if (bias) v = v_add(v, v_ld_tail_##sfx(bias, i, n - i, CMLC_EW_ZERO_##sfx));               \
      v_st_tail_##sfx(y, i, n - i, v_act(v, act));                                               \
    }                                                                                            \
  }                                                                                              \
  CMLC_EW_TARGET static void CMLC_EW_FN(dense_row_##sfx)(void* y, const float* c,                \
                                                         const void* bias, int64_t n, int act) { \
    switch (act) {                                                                               \
      case CML_ACTIVATION_GELU:                                                                  \
        CMLC_EW_FN(dense_row_act_##sfx)(y, c, bias, n, CML_ACTIVATION_GELU);                     \
        return;                                                                                  \
      case CML_ACTIVATION_RELU:                                                                  \
        CMLC_EW_FN(dense_row_act_##sfx)(y, c, bias, n, CML_ACTIVATION_RELU);                     \
        return;                                                                                  \
      case CML_ACTIVATION_SILU:                                                                  \
        CMLC_EW_FN(dense_row_act_##sfx)(y, c, bias, n, CML_ACTIVATION_SILU);                     \
        return;                                                                                  \
      case CML_ACTIVATION_HARD_SWISH:                                                            \
        CMLC_EW_FN(dense_row_act_##sfx)(y, c, bias, n, CML_ACTIVATION_HARD_SWISH);               \
        return;                                                                                  \
      case CML_ACTIVATION_TANH:                                                                  \
        CMLC_EW_FN(dense_row_act_##sfx)(y, c, bias, n, CML_ACTIVATION_TANH);                     \
        return;                                                                                  \
      default:                                                                                   \
        CMLC_EW_FN(dense_row_act_##sfx)(y, c, bias, n, CML_ACTIVATION_NONE);                     \
        return;                                                                                  \
    }                                                                                            \
  }

CMLC_EW_FUSED_DENSE_ROW(f32)
CMLC_EW_FUSED_DENSE_ROW(bf16)
CMLC_EW_FUSED_DENSE_ROW(f16)

//===--- layer norm and softmax rows ---===//

// One contiguous row of |n| > 0: m = the mean with x[0] as shift (a large common offset costs
// no precision), then the corrected two-pass variance (sum((x - m)^2) - r^2 / n) / n with
// r = sum(x - m); y = ((x - m) - r / n) rstd gamma + beta (m + r / n is never rounded).
// A LayerNorm row in double (mean, variance and output), for rows whose f32 sums overflow.
#define CMLC_EW_FUSED_LN_ROW_WIDE(sfx)                                                       \
  CMLC_EW_TARGET static void CMLC_EW_FN(ln_row_wide_##sfx)(                                  \
      void* y, const void* x, const void* gamma, const void* beta, int64_t n, float eps) {   \
    float xb[CMLC_V_W], gb[CMLC_V_W], bb[CMLC_V_W];                                          \
    double sum = 0, s2 = 0;                                                                  \
    for (int64_t i = 0; i < n; i += CMLC_V_W) {                                              \
      const int64_t c = n - i >= CMLC_V_W ? CMLC_V_W : n - i;                                \
      v_store(xb, v_ld_tail_##sfx(x, i, c, CMLC_EW_ZERO_##sfx));                             \
      for (int64_t j = 0; j < c; ++j) sum += (double)xb[j];                                  \
    }                                                                                        \
    const double mean = sum / (double)n;                                                     \
    for (int64_t i = 0; i < n; i += CMLC_V_W) {                                              \
      const int64_t c = n - i >= CMLC_V_W ? CMLC_V_W : n - i;                                \
      v_store(xb, v_ld_tail_##sfx(x, i, c, CMLC_EW_ZERO_##sfx));                             \
      for (int64_t j = 0; j < c; ++j) s2 += ((double)xb[j] - mean) * ((double)xb[j] - mean); \
    }                                                                                        \
    const double rs = 1.0 / sqrt(s2 / (double)n + (double)eps);                              \
    for (int64_t i = 0; i < n; i += CMLC_V_W) {                                              \
      const int64_t c = n - i >= CMLC_V_W ? CMLC_V_W : n - i;                                \
      v_store(xb, v_ld_tail_##sfx(x, i, c, CMLC_EW_ZERO_##sfx));                             \
      if (gamma) v_store(gb, v_ld_tail_##sfx(gamma, i, c, CMLC_EW_ZERO_##sfx));              \
      if (beta) v_store(bb, v_ld_tail_##sfx(beta, i, c, CMLC_EW_ZERO_##sfx));                \
      for (int64_t j = 0; j < c; ++j) {                                                      \
        double v = ((double)xb[j] - mean) * rs;                                              \
        if (gamma) v *= (double)gb[j];                                                       \
        if (beta) v += (double)bb[j];                                                        \
        xb[j] = (float)v;                                                                    \
      }                                                                                      \
      v_st_tail_##sfx(y, i, c, v_ld_tail_f32(xb, 0, c, 0.0f));                               \
    }                                                                                        \
  }
CMLC_EW_FUSED_LN_ROW_WIDE(f32)
CMLC_EW_FUSED_LN_ROW_WIDE(bf16)
CMLC_EW_FUSED_LN_ROW_WIDE(f16)
#undef CMLC_EW_FUSED_LN_ROW_WIDE

#define CMLC_EW_FUSED_LN_ROW(sfx, T)                                                             \
  CMLC_EW_TARGET static void CMLC_EW_FN(ln_row_##sfx)(void* y, const void* x, const void* gamma, \
                                                      const void* beta, int64_t n, float eps) {  \
    enum { K = 32 / CMLC_V_W };                                                                  \
    const T first = ((const T*)x)[0];                                                            \
    const vf shift = v_ld_tail_##sfx(x, 0, 0, first);                                            \
    vf acc[K], acc2[K];                                                                          \
    for (int k = 0; k < K; ++k) acc[k] = acc2[k] = v_zero();                                     \
    for (int64_t i = 0; i < n; i += CMLC_V_W) {                                                  \
      const int k = (int)((i / CMLC_V_W) % K);                                                   \
      const vf v = n - i >= CMLC_V_W ? v_ld_##sfx(x, i) : v_ld_tail_##sfx(x, i, n - i, first);   \
      acc[k] = v_add(acc[k], v_sub(v, shift)); /* the padding adds exact zeros */                \
    }                                                                                            \
    const float inv_n = 1.0f / (float)n;                                                         \
    const vf m = v_fmadd(v_set1(v_fold32(acc, false)), v_set1(inv_n), shift);                    \
    for (int k = 0; k < K; ++k) acc[k] = v_zero();                                               \
    for (int64_t i = 0; i < n; i += CMLC_V_W) {                                                  \
      const int k = (int)((i / CMLC_V_W) % K);                                                   \
      vf d;                                                                                      \
      if (n - i >= CMLC_V_W) {                                                                   \
        d = v_sub(v_ld_##sfx(x, i), m);                                                          \
      } else {                                                                                   \
        d = v_sub(v_ld_tail_##sfx(x, i, n - i, first), m);                                       \
        d = v_sel(v_tail_mask(n - i), d, v_zero());                                              \
      }                                                                                          \
      acc[k] = v_add(acc[k], d);                                                                 \
      acc2[k] = v_fmadd(d, d, acc2[k]);                                                          \
    }                                                                                            \
    const float r = v_fold32(acc, false);                                                        \
    const float var = (v_fold32(acc2, false) - r * r * inv_n) * inv_n;                           \
    const vf corr = v_set1(r * inv_n); /* mean = m + corr, kept apart */                         \
    float rs = 1.0f / sqrtf((var > 0 ? var : 0.0f) + eps);                                       \
    float mean_probe[CMLC_V_W];                                                                  \
    v_store(mean_probe, v_add(m, corr));                                                         \
    if (!(var <= 3.4028234663852886e38f) || !isfinite(mean_probe[0])) {                          \
      /* The sums or the squares overflowed f32 (values near 1e19 and up square past it; near    \
         3e38, x - x[0] and the lane sums overflow too, and the mean came out NaN): the row      \
         again in double, from its mean. A NaN or infinite input gives NaN, as the scalar kernel \
         does. */                                                                                \
      CMLC_EW_FN(ln_row_wide_##sfx)(y, x, gamma, beta, n, eps);                                  \
      return;                                                                                    \
    }                                                                                            \
    const vf rstd = v_set1(rs);                                                                  \
    for (int64_t i = 0; i < n; i += CMLC_V_W) {                                                  \
      const int64_t left = n - i;                                                                \
      const bool full = left >= CMLC_V_W;                                                        \
      const T zero = CMLC_EW_ZERO_##sfx;                                                         \
      vf v = full ? v_ld_##sfx(x, i) : v_ld_tail_##sfx(x, i, left, zero);                        \
      v = v_mul(v_sub(v_sub(v, m), corr), rstd);                                                 \
      if (gamma)                                                                                 \
        v = v_mul(v, full ? v_ld_##sfx(gamma, i) : v_ld_tail_##sfx(gamma, i, left, zero));       \
      if (beta) v = v_add(v, full ? v_ld_##sfx(beta, i) : v_ld_tail_##sfx(beta, i, left, zero)); \
      if (full) {                                                                                \
        v_st_##sfx(y, i, v);                                                                     \
      } else {                                                                                   \
        v_st_tail_##sfx(y, i, left, v);                                                          \
      }                                                                                          \
    }                                                                                            \
  }

CMLC_EW_FUSED_LN_ROW(f32, float)
CMLC_EW_FUSED_LN_ROW(bf16, uint16_t)
CMLC_EW_FUSED_LN_ROW(f16, uint16_t)

// One contiguous row of |n| > 0: max, then e = exp(x - max) and its sum (the exponentials
// recomputed in the last pass, as the output may alias the input), then e * (1 / sum). The sum
// runs in f32 lanes over blocks of CMLC_EW_SOFTMAX_BLOCK elements, added up in double, so its
// rounding does not grow with the row (a row of 1e5 summed in the lanes alone was 97 ulps off).
enum { CMLC_EW_SOFTMAX_BLOCK = 2048 };
#define CMLC_EW_FUSED_SOFTMAX_ROW(sfx)                                                          \
  CMLC_EW_TARGET static void CMLC_EW_FN(softmax_row_##sfx)(void* y, const void* x, int64_t n) { \
    enum { K = 32 / CMLC_V_W };                                                                 \
    vf acc[K];                                                                                  \
    for (int k = 0; k < K; ++k) acc[k] = v_set1(-INFINITY);                                     \
    for (int64_t i = 0; i < n; i += CMLC_V_W) {                                                 \
      const int k = (int)((i / CMLC_V_W) % K);                                                  \
      const vf v = n - i >= CMLC_V_W ? v_ld_##sfx(x, i)                                         \
                                     : v_ld_tail_##sfx(x, i, n - i, CMLC_EW_NEG_INF_##sfx);     \
      acc[k] = v_max_nan(acc[k], v);                                                            \
    }                                                                                           \
    const vf m = v_set1(v_fold32(acc, true));                                                   \
    for (int k = 0; k < K; ++k) acc[k] = v_zero();                                              \
    double total = 0;                                                                           \
    for (int64_t i = 0; i < n; i += CMLC_V_W) {                                                 \
      const int k = (int)((i / CMLC_V_W) % K);                                                  \
      const vf v = n - i >= CMLC_V_W ? v_ld_##sfx(x, i)                                         \
                                     : v_ld_tail_##sfx(x, i, n - i, CMLC_EW_NEG_INF_##sfx);     \
      acc[k] = v_add(acc[k], v_exp(v_sub(v, m)));                                               \
      if ((i + CMLC_V_W) % CMLC_EW_SOFTMAX_BLOCK == 0) {                                        \
        total += (double)v_fold32(acc, false);                                                  \
        for (int kk = 0; kk < K; ++kk) acc[kk] = v_zero();                                      \
      }                                                                                         \
    }                                                                                           \
    total += (double)v_fold32(acc, false);                                                      \
    const vf inv = v_set1((float)(1.0 / total));                                                \
    for (int64_t i = 0; i < n; i += CMLC_V_W) {                                                 \
      if (n - i >= CMLC_V_W) {                                                                  \
        v_st_##sfx(y, i, v_mul(v_exp(v_sub(v_ld_##sfx(x, i), m)), inv));                        \
      } else {                                                                                  \
        const vf v = v_ld_tail_##sfx(x, i, n - i, CMLC_EW_NEG_INF_##sfx);                       \
        v_st_tail_##sfx(y, i, n - i, v_mul(v_exp(v_sub(v, m)), inv));                           \
      }                                                                                         \
    }                                                                                           \
  }

CMLC_EW_FUSED_SOFTMAX_ROW(f32)
CMLC_EW_FUSED_SOFTMAX_ROW(bf16)
CMLC_EW_FUSED_SOFTMAX_ROW(f16)

// |count| > 0 adjacent lanes of |n| > 0 elements each, |stride| elements apart: element k of
// lane j at x[k * stride + j] (a softmax along a non-last axis; y may be x). The lanes run in
// the vector lanes, W at a time, with the row kernel's steps: max, the sum of
// e = exp(x - max) in f32 over blocks of CMLC_EW_SOFTMAX_LANE_BLOCK elements added up in
// double, then e * (1 / sum). Every lane is computed by lanewise operations alone, so its bits
// do not depend on which vector lane or call it falls in (so neither on the thread count).
enum { CMLC_EW_SOFTMAX_LANE_BLOCK = 64 };
#define CMLC_EW_FUSED_SOFTMAX_LANES(sfx)                                                          \
  CMLC_EW_TARGET static void CMLC_EW_FN(softmax_lanes_##sfx)(void* y, const void* x, int64_t n,   \
                                                             int64_t stride, int64_t count) {     \
    for (int64_t j = 0; j < count; j += CMLC_V_W) {                                               \
      const int64_t c = count - j;                                                                \
      const bool full = c >= CMLC_V_W;                                                            \
      vf m = v_set1(-INFINITY);                                                                   \
      for (int64_t k = 0; k < n; ++k) {                                                           \
        const int64_t i = k * stride + j;                                                         \
        m = v_max_nan(m,                                                                          \
                      full ? v_ld_##sfx(x, i) : v_ld_tail_##sfx(x, i, c, CMLC_EW_NEG_INF_##sfx)); \
      }                                                                                           \
      _Alignas(64) float part[CMLC_V_W];                                                          \
      double total[CMLC_V_W] = {0};                                                               \
      vf acc = v_zero();                                                                          \
      for (int64_t k = 0; k < n; ++k) {                                                           \
        const int64_t i = k * stride + j;                                                         \
        const vf v = full ? v_ld_##sfx(x, i) : v_ld_tail_##sfx(x, i, c, CMLC_EW_NEG_INF_##sfx);   \
        acc = v_add(acc, v_exp(v_sub(v, m)));                                                     \
        if ((k + 1) % CMLC_EW_SOFTMAX_LANE_BLOCK == 0) {                                          \
          v_store(part, acc);                                                                     \
          for (int l = 0; l < CMLC_V_W; ++l) total[l] += (double)part[l];                         \
          acc = v_zero();                                                                         \
        }                                                                                         \
      }                                                                                           \
      v_store(part, acc);                                                                         \
      for (int l = 0; l < CMLC_V_W; ++l) part[l] = (float)(1.0 / (total[l] + (double)part[l]));   \
      const vf inv = v_load(part);                                                                \
      for (int64_t k = 0; k < n; ++k) {                                                           \
        const int64_t i = k * stride + j;                                                         \
        if (full) {                                                                               \
          v_st_##sfx(y, i, v_mul(v_exp(v_sub(v_ld_##sfx(x, i), m)), inv));                        \
        } else {                                                                                  \
          const vf v = v_ld_tail_##sfx(x, i, c, CMLC_EW_NEG_INF_##sfx);                           \
          v_st_tail_##sfx(y, i, c, v_mul(v_exp(v_sub(v, m)), inv));                               \
        }                                                                                         \
      }                                                                                           \
    }                                                                                             \
  }

CMLC_EW_FUSED_SOFTMAX_LANES(f32)
CMLC_EW_FUSED_SOFTMAX_LANES(bf16)
CMLC_EW_FUSED_SOFTMAX_LANES(f16)

// Lanes [lane0, lane0 + count) of [outer, n, inner] (lane l: element k at
// x[(l / inner) n inner + k inner + l % inner]; y may be x), 1 <= n <=
// CMLC_FK_SOFTMAX_PACKED_MAX_N: W lanes at a time copied into a buffer (their elements as stored,
// so nothing is rounded), where they are W adjacent lanes for softmax_lanes, then copied back.
// For short rows (inner 1) and narrow inner axes, where the row kernel spends most of a row in
// its tail loads and 32-lane folds, and softmax_lanes most of its vector lanes in padding.
#define CMLC_EW_FUSED_SOFTMAX_PACKED(sfx, T)                                                       \
  CMLC_EW_TARGET static void CMLC_EW_FN(softmax_packed_##sfx)(                                     \
      void* y, const void* x, int64_t n, int64_t inner, int64_t lane0, int64_t count) {            \
    _Alignas(64) T t[CMLC_FK_SOFTMAX_PACKED_MAX_N * CMLC_V_W];                                     \
    int64_t base[CMLC_V_W];                                                                        \
    for (int64_t l0 = lane0; l0 < lane0 + count; l0 += CMLC_V_W) {                                 \
      const int64_t c = lane0 + count - l0 < CMLC_V_W ? lane0 + count - l0 : CMLC_V_W;             \
      for (int64_t r = 0; r < c; ++r) base[r] = ((l0 + r) / inner) * n * inner + (l0 + r) % inner; \
      for (int64_t r = 0; r < c; ++r) {                                                            \
        const T* xs = (const T*)x + base[r];                                                       \
        for (int64_t k = 0; k < n; ++k) t[k * CMLC_V_W + r] = xs[k * inner];                       \
      }                                                                                            \
      CMLC_EW_FN(softmax_lanes_##sfx)(t, t, n, CMLC_V_W, c);                                       \
      for (int64_t r = 0; r < c; ++r) {                                                            \
        T* ys = (T*)y + base[r];                                                                   \
        for (int64_t k = 0; k < n; ++k) ys[k * inner] = t[k * CMLC_V_W + r];                       \
      }                                                                                            \
    }                                                                                              \
  }

CMLC_EW_FUSED_SOFTMAX_PACKED(f32, float)
CMLC_EW_FUSED_SOFTMAX_PACKED(bf16, uint16_t)
CMLC_EW_FUSED_SOFTMAX_PACKED(f16, uint16_t)

//===--- bf16 / f16 elementwise: computed in f32, rounded once (the scalar kernels' rule) ---===//

// Binary: operand strides 0 (one broadcast value) or 1.
#define CMLC_EW_HALF_BINARY(name, sfx, T, VOP)                                                 \
  CMLC_EW_TARGET static void CMLC_EW_FN(name##_##sfx)(void* out, const void* const* in,        \
                                                      const int64_t* st, int64_t n) {          \
    const vf a0 = v_ld_tail_##sfx(in[0], 0, 0, ((const T*)in[0])[0]);                          \
    const vf b0 = v_ld_tail_##sfx(in[1], 0, 0, ((const T*)in[1])[0]);                          \
    int64_t i = 0;                                                                             \
    for (; i + CMLC_V_W <= n; i += CMLC_V_W) {                                                 \
      const vf va = st[0] ? v_ld_##sfx(in[0], i) : a0, vb = st[1] ? v_ld_##sfx(in[1], i) : b0; \
      v_st_##sfx(out, i, VOP(va, vb));                                                         \
    }                                                                                          \
    if (i < n) {                                                                               \
      const T z = CMLC_EW_ZERO_##sfx;                                                          \
      const vf va = st[0] ? v_ld_tail_##sfx(in[0], i, n - i, z) : a0;                          \
      const vf vb = st[1] ? v_ld_tail_##sfx(in[1], i, n - i, z) : b0;                          \
      v_st_tail_##sfx(out, i, n - i, VOP(va, vb));                                             \
    }                                                                                          \
  }

// Clamp(lo, x, hi) = min(max(x, lo), hi) with the scalar kernel's NaN rule (v_max_nan /
// v_min_nan are CMLC_EW_FMAX / CMLC_EW_FMIN); each operand of stride 0 (one broadcast value,
// the usual scalar bounds) or 1. For f32, bf16 and f16 storage (halves computed in f32 and
// rounded once, as the binary kernels above).
#define CMLC_EW_SIMD_CLAMP(sfx, T)                                                         \
  CMLC_EW_TARGET static void CMLC_EW_FN(clamp_##sfx)(void* out, const void* const* in,     \
                                                     const int64_t* st, int64_t n) {       \
    vf c[3];                                                                               \
    for (int k = 0; k < 3; ++k) c[k] = v_ld_tail_##sfx(in[k], 0, 0, ((const T*)in[k])[0]); \
    int64_t i = 0;                                                                         \
    for (; i + CMLC_V_W <= n; i += CMLC_V_W) {                                             \
      const vf lo = st[0] ? v_ld_##sfx(in[0], i) : c[0];                                   \
      const vf x = st[1] ? v_ld_##sfx(in[1], i) : c[1];                                    \
      const vf hi = st[2] ? v_ld_##sfx(in[2], i) : c[2];                                   \
      v_st_##sfx(out, i, v_min_nan(v_max_nan(x, lo), hi));                                 \
    }                                                                                      \
    if (i < n) {                                                                           \
      const T z = CMLC_EW_ZERO_##sfx;                                                      \
      const vf lo = st[0] ? v_ld_tail_##sfx(in[0], i, n - i, z) : c[0];                    \
      const vf x = st[1] ? v_ld_tail_##sfx(in[1], i, n - i, z) : c[1];                     \
      const vf hi = st[2] ? v_ld_tail_##sfx(in[2], i, n - i, z) : c[2];                    \
      v_st_tail_##sfx(out, i, n - i, v_min_nan(v_max_nan(x, lo), hi));                     \
    }                                                                                      \
  }
CMLC_EW_SIMD_CLAMP(f32, float)
CMLC_EW_SIMD_CLAMP(bf16, uint16_t)
CMLC_EW_SIMD_CLAMP(f16, uint16_t)

// Compare: operands as the binary ops above (widened exactly), a Bool (0/1 byte) per element.
#define CMLC_EW_HALF_COMPARE(name, sfx, T, VOP)                                                \
  CMLC_EW_TARGET static void CMLC_EW_FN(name##_##sfx)(void* out, const void* const* in,        \
                                                      const int64_t* st, int64_t n) {          \
    const vf a0 = v_ld_tail_##sfx(in[0], 0, 0, ((const T*)in[0])[0]);                          \
    const vf b0 = v_ld_tail_##sfx(in[1], 0, 0, ((const T*)in[1])[0]);                          \
    uint8_t* o = (uint8_t*)out;                                                                \
    int64_t i = 0;                                                                             \
    for (; i + CMLC_V_W <= n; i += CMLC_V_W) {                                                 \
      const vf va = st[0] ? v_ld_##sfx(in[0], i) : a0, vb = st[1] ? v_ld_##sfx(in[1], i) : b0; \
      v_store_bool(o + i, VOP(va, vb));                                                        \
    }                                                                                          \
    if (i < n) {                                                                               \
      const T z = CMLC_EW_ZERO_##sfx;                                                          \
      const vf va = st[0] ? v_ld_tail_##sfx(in[0], i, n - i, z) : a0;                          \
      const vf vb = st[1] ? v_ld_tail_##sfx(in[1], i, n - i, z) : b0;                          \
      uint8_t t[CMLC_V_W];                                                                     \
      v_store_bool(t, VOP(va, vb));                                                            \
      memcpy(o + i, t, (size_t)(n - i));                                                       \
    }                                                                                          \
  }

#define CMLC_EW_HALF_UNARY(name, sfx, T, VFN)                                           \
  CMLC_EW_TARGET static void CMLC_EW_FN(name##_##sfx)(void* out, const void* const* in, \
                                                      const int64_t* st, int64_t n) {   \
    (void)st;                                                                           \
    CMLC_EW_FN(map_##name##_##sfx)(out, in[0], n);                                      \
  }

// IsFinite (bool out): the widened value's magnitude below +Inf (false for NaN).
#define CMLC_EW_IS_FINITE(sfx)                                                             \
  CMLC_EW_TARGET static void CMLC_EW_FN(is_finite_##sfx)(void* out, const void* const* in, \
                                                         const int64_t* st, int64_t n) {   \
    (void)st;                                                                              \
    uint8_t* y = (uint8_t*)out;                                                            \
    int64_t i = 0;                                                                         \
    for (; i + CMLC_V_W <= n; i += CMLC_V_W) {                                             \
      const vf v = v_ld_##sfx(in[0], i);                                                   \
      v_store_bool(y + i, v_lt(v_abs(v), v_set1(INFINITY)));                               \
    }                                                                                      \
    if (i < n) {                                                                           \
      uint8_t t[CMLC_V_W];                                                                 \
      const vf v = v_ld_tail_##sfx(in[0], i, n - i, CMLC_EW_ZERO_##sfx);                   \
      v_store_bool(t, v_lt(v_abs(v), v_set1(INFINITY)));                                   \
      memcpy(y + i, t, (size_t)(n - i));                                                   \
    }                                                                                      \
  }

#define CMLC_EW_HALF_OPS(sfx, T)                      \
  CMLC_EW_HALF_COMPARE(eq, sfx, T, v_eq)              \
  CMLC_EW_HALF_COMPARE(ne, sfx, T, v_neq)             \
  CMLC_EW_HALF_COMPARE(lt, sfx, T, v_lt)              \
  CMLC_EW_HALF_COMPARE(le, sfx, T, v_le)              \
  CMLC_EW_HALF_COMPARE(gt, sfx, T, v_gt)              \
  CMLC_EW_HALF_COMPARE(ge, sfx, T, v_ge)              \
  CMLC_EW_HALF_BINARY(add, sfx, T, v_add)             \
  CMLC_EW_HALF_BINARY(sub, sfx, T, v_sub)             \
  CMLC_EW_HALF_BINARY(mul, sfx, T, v_mul)             \
  CMLC_EW_HALF_BINARY(div, sfx, T, v_div)             \
  CMLC_EW_HALF_BINARY(max, sfx, T, v_max_nan)         \
  CMLC_EW_HALF_BINARY(min, sfx, T, v_min_nan)         \
  CMLC_EW_FUSED_MAP(map_exp, sfx, v_exp(v))           \
  CMLC_EW_FUSED_MAP(map_log, sfx, v_log(v))           \
  CMLC_EW_FUSED_MAP(map_tanh, sfx, v_tanh(v))         \
  CMLC_EW_FUSED_MAP(map_logistic, sfx, v_logistic(v)) \
  CMLC_EW_FUSED_MAP(map_erf, sfx, v_erf(v))           \
  CMLC_EW_FUSED_MAP(map_sqrt, sfx, v_sqrt(v))         \
  CMLC_EW_FUSED_MAP(map_rsqrt, sfx, v_rsqrt(v))       \
  CMLC_EW_FUSED_MAP(map_neg, sfx, v_neg(v))           \
  CMLC_EW_FUSED_MAP(map_abs, sfx, v_abs(v))           \
  CMLC_EW_FUSED_MAP(map_sign, sfx, v_sign(v))         \
  CMLC_EW_FUSED_MAP(map_floor, sfx, v_floor(v))       \
  CMLC_EW_FUSED_MAP(map_ceil, sfx, v_ceil(v))         \
  CMLC_EW_FUSED_MAP(map_round, sfx, v_round(v))       \
  CMLC_EW_FUSED_MAP(map_expm1, sfx, v_expm1(v))       \
  CMLC_EW_FUSED_MAP(map_log1p, sfx, v_log1p(v))       \
  CMLC_EW_FUSED_MAP(map_sin, sfx, v_sin(v))           \
  CMLC_EW_FUSED_MAP(map_cos, sfx, v_cos(v))           \
  CMLC_EW_HALF_UNARY(exp, sfx, T, v_exp)              \
  CMLC_EW_HALF_UNARY(log, sfx, T, v_log)              \
  CMLC_EW_HALF_UNARY(tanh, sfx, T, v_tanh)            \
  CMLC_EW_HALF_UNARY(logistic, sfx, T, v_logistic)    \
  CMLC_EW_HALF_UNARY(erf, sfx, T, v_erf)              \
  CMLC_EW_HALF_UNARY(sqrt, sfx, T, v_sqrt)            \
  CMLC_EW_HALF_UNARY(rsqrt, sfx, T, v_rsqrt)          \
  CMLC_EW_HALF_UNARY(neg, sfx, T, v_neg)              \
  CMLC_EW_HALF_UNARY(abs, sfx, T, v_abs)              \
  CMLC_EW_HALF_UNARY(sign, sfx, T, v_sign)            \
  CMLC_EW_HALF_UNARY(floor, sfx, T, v_floor)          \
  CMLC_EW_HALF_UNARY(ceil, sfx, T, v_ceil)            \
  CMLC_EW_HALF_UNARY(round, sfx, T, v_round)          \
  CMLC_EW_HALF_UNARY(expm1, sfx, T, v_expm1)          \
  CMLC_EW_HALF_UNARY(log1p, sfx, T, v_log1p)          \
  CMLC_EW_HALF_UNARY(sin, sfx, T, v_sin)              \
  CMLC_EW_HALF_UNARY(cos, sfx, T, v_cos)              \
  CMLC_EW_IS_FINITE(sfx)

CMLC_EW_HALF_OPS(bf16, uint16_t)
CMLC_EW_HALF_OPS(f16, uint16_t)
CMLC_EW_IS_FINITE(f32)

// The bf16 / f16 kernel of |op|, or NULL.
#define CMLC_EW_HALF_PICK(name) \
  return dtype == CML_DTYPE_BF16 ? CMLC_EW_FN(name##_bf16) : CMLC_EW_FN(name##_f16);
static cmlc_ew_fn CMLC_EW_FN(half_binary_fn)(cml_op_t op, cml_dtype_t dtype) {
  if (dtype != CML_DTYPE_BF16 && dtype != CML_DTYPE_F16) return NULL;
  switch (op) {
    case CML_OP_ADD:
      CMLC_EW_HALF_PICK(add)
    case CML_OP_SUB:
      CMLC_EW_HALF_PICK(sub)
    case CML_OP_MUL:
      CMLC_EW_HALF_PICK(mul)
    case CML_OP_DIV:
      CMLC_EW_HALF_PICK(div)
    case CML_OP_MAX:
      CMLC_EW_HALF_PICK(max)
    case CML_OP_MIN:
      CMLC_EW_HALF_PICK(min)
    case CML_OP_CLAMP:
      CMLC_EW_HALF_PICK(clamp)
    case CML_OP_EQUAL:
      CMLC_EW_HALF_PICK(eq)
    case CML_OP_NOT_EQUAL:
      CMLC_EW_HALF_PICK(ne)
    case CML_OP_LESS_THAN:
      CMLC_EW_HALF_PICK(lt)
    case CML_OP_LESS_OR_EQUAL:
      CMLC_EW_HALF_PICK(le)
    case CML_OP_GREATER_THAN:
      CMLC_EW_HALF_PICK(gt)
    case CML_OP_GREATER_OR_EQUAL:
      CMLC_EW_HALF_PICK(ge)
    default:
      return NULL;
  }
}
static cmlc_ew_fn CMLC_EW_FN(half_unary_fn)(cml_op_t op, cml_dtype_t dtype) {
  if (dtype != CML_DTYPE_BF16 && dtype != CML_DTYPE_F16) return NULL;
  switch (op) {
    case CML_OP_EXP:
      CMLC_EW_HALF_PICK(exp)
    case CML_OP_LOG:
      CMLC_EW_HALF_PICK(log)
    case CML_OP_TANH:
      CMLC_EW_HALF_PICK(tanh)
    case CML_OP_LOGISTIC:
      CMLC_EW_HALF_PICK(logistic)
    case CML_OP_ERF:
      CMLC_EW_HALF_PICK(erf)
    case CML_OP_SQRT:
      CMLC_EW_HALF_PICK(sqrt)
    case CML_OP_RSQRT:
      CMLC_EW_HALF_PICK(rsqrt)
    case CML_OP_NEG:
      CMLC_EW_HALF_PICK(neg)
    case CML_OP_ABS:
      CMLC_EW_HALF_PICK(abs)
    case CML_OP_SIGN:
      CMLC_EW_HALF_PICK(sign)
    case CML_OP_FLOOR:
      CMLC_EW_HALF_PICK(floor)
    case CML_OP_CEIL:
      CMLC_EW_HALF_PICK(ceil)
    case CML_OP_ROUND:
      CMLC_EW_HALF_PICK(round)
    case CML_OP_EXPM1:
      CMLC_EW_HALF_PICK(expm1)
    case CML_OP_LOG1P:
      CMLC_EW_HALF_PICK(log1p)
    case CML_OP_IS_FINITE:
      CMLC_EW_HALF_PICK(is_finite)
    case CML_OP_SIN:
      CMLC_EW_HALF_PICK(sin)
    case CML_OP_COS:
      CMLC_EW_HALF_PICK(cos)
    default:
      return NULL;
  }
}

//===--- table ---===//

#define CMLC_EW_FUSED_PICK(name)                    \
  switch (dtype) {                                  \
    case CML_DTYPE_F32:                             \
      return (cmlc_impl_fn)CMLC_EW_FN(name##_f32);  \
    case CML_DTYPE_BF16:                            \
      return (cmlc_impl_fn)CMLC_EW_FN(name##_bf16); \
    case CML_DTYPE_F16:                             \
      return (cmlc_impl_fn)CMLC_EW_FN(name##_f16);  \
    default:                                        \
      return NULL;                                  \
  }

cmlc_impl_fn CMLC_EW_FN(fused_fn)(cmlc_fk_loop_t loop, cml_dtype_t dtype) {
  switch (loop) {
    case CMLC_FK_GELU_ERF:
      CMLC_EW_FUSED_PICK(gelu_erf)
    case CMLC_FK_GELU_TANH:
      CMLC_EW_FUSED_PICK(gelu_tanh)
    case CMLC_FK_DENSE_ROW:
      CMLC_EW_FUSED_PICK(dense_row)
    case CMLC_FK_LN_ROW:
      CMLC_EW_FUSED_PICK(ln_row)
    case CMLC_FK_SOFTMAX_ROW:
      CMLC_EW_FUSED_PICK(softmax_row)
    case CMLC_FK_SOFTMAX_LANES:
      CMLC_EW_FUSED_PICK(softmax_lanes)
    case CMLC_FK_SOFTMAX_PACKED:
      CMLC_EW_FUSED_PICK(softmax_packed)
  }
  return NULL;
}

#endif  // CML_BACKENDS_C_KERNELS_X86_64_ELEMENTWISE_X86_64_FUSED_H_
