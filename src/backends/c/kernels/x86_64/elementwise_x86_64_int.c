// SPDX-License-Identifier: Apache-2.0
// kernels/x86_64/elementwise_x86_64_int.c: the 32- and 64-bit integer binary, comparison and
// Clamp kernels, and the f64 arithmetic, Max / Min and comparison kernels, on SIMD ISAs: the
// scalar kernels' loops (kernels/generic/elementwise_binary.c) compiled for AVX2, which the
// compiler vectorizes 8 or 4 lanes wide (vpmulld, vpsllvd, vpminsd, vmulpd, ...) where the
// baseline build has SSE2 only (the library builds at -O3, where gcc vectorizes such loops).
// f64 operations are IEEE's, one rounding each as in the scalar kernels; Max / Min propagate
// NaN and order -0 < +0 (CMLC_EW_FMAX / CMLC_EW_FMIN). The semantics are the scalar kernels'
// (XLA CPU's): arithmetic wraps (done in the unsigned type), shift counts are read as unsigned
// and counts >= the width give 0 (the sign fill for arithmetic right shifts), Max / Min / Clamp
// compare in the type itself. Pow is written with intrinsics (square and multiply, below);
// 64-bit Div and Rem shift for a broadcast power-of-two divisor (below); 32-bit division and
// remainder keep their own kernels. The unit test compares every kernel with the
// scalar one bit for bit.
#include <string.h>

#include "backends/c/kernels/generic/elementwise_internal.h"

#if defined(CMLC_HAVE_X86_64)
#include <immintrin.h>

#define CMLC_EI_TARGET __attribute__((target("avx2")))

// Two inputs, each read with stride 0 or 1: the straight cases in loops of their own.
#define CMLC_EI_BK(name, T, TOUT, OPF)                                                 \
  CMLC_EI_TARGET static void name(void* out, const void* const* in, const int64_t* st, \
                                  int64_t n) {                                         \
    const T* pa = (const T*)in[0];                                                     \
    const T* pb = (const T*)in[1];                                                     \
    TOUT* po = (TOUT*)out;                                                             \
    if (st[0] && st[1]) {                                                              \
      for (int64_t i = 0; i < n; ++i) po[i] = (TOUT)OPF(pa[i], pb[i]);                 \
    } else if (st[0]) {                                                                \
      const T b = pb[0];                                                               \
      for (int64_t i = 0; i < n; ++i) po[i] = (TOUT)OPF(pa[i], b);                     \
    } else if (st[1]) {                                                                \
      const T a = pa[0];                                                               \
      for (int64_t i = 0; i < n; ++i) po[i] = (TOUT)OPF(a, pb[i]);                     \
    } else {                                                                           \
      const TOUT r = (TOUT)OPF(pa[0], pb[0]);                                          \
      for (int64_t i = 0; i < n; ++i) po[i] = r;                                       \
    }                                                                                  \
  }

#define CMLC_EI_MAX(a, b) ((a) > (b) ? (a) : (b))
#define CMLC_EI_MIN(a, b) ((a) < (b) ? (a) : (b))
#define CMLC_EI_AND(a, b) ((a) & (b))
#define CMLC_EI_OR(a, b) ((a) | (b))
#define CMLC_EI_XOR(a, b) ((a) ^ (b))
#define CMLC_EI_EQ(a, b) ((uint8_t)((a) == (b)))
#define CMLC_EI_NE(a, b) ((uint8_t)((a) != (b)))
#define CMLC_EI_LT(a, b) ((uint8_t)((a) < (b)))
#define CMLC_EI_LE(a, b) ((uint8_t)((a) <= (b)))
#define CMLC_EI_GT(a, b) ((uint8_t)((a) > (b)))
#define CMLC_EI_GE(a, b) ((uint8_t)((a) >= (b)))

// One integer type T (unsigned twin U, signed twin S, BITS wide).
#define CMLC_EI_TYPE(sfx, T, U, S, BITS)                                                       \
  CMLC_EI_TARGET static inline T cmlc_ei_add_##sfx##_op(T a, T b) { return (T)((U)a + (U)b); } \
  CMLC_EI_TARGET static inline T cmlc_ei_sub_##sfx##_op(T a, T b) { return (T)((U)a - (U)b); } \
  CMLC_EI_TARGET static inline T cmlc_ei_mul_##sfx##_op(T a, T b) { return (T)((U)a * (U)b); } \
  CMLC_EI_TARGET static inline T cmlc_ei_shl_##sfx##_op(T a, T b) {                            \
    return (U)b >= BITS ? (T)0 : (T)((U)a << (U)b);                                            \
  }                                                                                            \
  CMLC_EI_TARGET static inline T cmlc_ei_srl_##sfx##_op(T a, T b) {                            \
    return (U)b >= BITS ? (T)0 : (T)((U)a >> (U)b);                                            \
  }                                                                                            \
  CMLC_EI_TARGET static inline T cmlc_ei_sra_##sfx##_op(T a, T b) {                            \
    if ((U)b >= BITS) return (S)a < 0 ? (T)(U) ~(U)0 : (T)0;                                   \
    return (T)(U)((S)a >> (U)b);                                                               \
  }                                                                                            \
  CMLC_EI_BK(cmlc_ei_add_##sfx, T, T, cmlc_ei_add_##sfx##_op)                                  \
  CMLC_EI_BK(cmlc_ei_sub_##sfx, T, T, cmlc_ei_sub_##sfx##_op)                                  \
  CMLC_EI_BK(cmlc_ei_mul_##sfx, T, T, cmlc_ei_mul_##sfx##_op)                                  \
  CMLC_EI_BK(cmlc_ei_shl_##sfx, T, T, cmlc_ei_shl_##sfx##_op)                                  \
  CMLC_EI_BK(cmlc_ei_srl_##sfx, T, T, cmlc_ei_srl_##sfx##_op)                                  \
  CMLC_EI_BK(cmlc_ei_sra_##sfx, T, T, cmlc_ei_sra_##sfx##_op)                                  \
  CMLC_EI_BK(cmlc_ei_max_##sfx, T, T, CMLC_EI_MAX)                                             \
  CMLC_EI_BK(cmlc_ei_min_##sfx, T, T, CMLC_EI_MIN)                                             \
  CMLC_EI_BK(cmlc_ei_and_##sfx, T, T, CMLC_EI_AND)                                             \
  CMLC_EI_BK(cmlc_ei_or_##sfx, T, T, CMLC_EI_OR)                                               \
  CMLC_EI_BK(cmlc_ei_xor_##sfx, T, T, CMLC_EI_XOR)                                             \
  CMLC_EI_BK(cmlc_ei_eq_##sfx, T, uint8_t, CMLC_EI_EQ)                                         \
  CMLC_EI_BK(cmlc_ei_ne_##sfx, T, uint8_t, CMLC_EI_NE)                                         \
  CMLC_EI_BK(cmlc_ei_lt_##sfx, T, uint8_t, CMLC_EI_LT)                                         \
  CMLC_EI_BK(cmlc_ei_le_##sfx, T, uint8_t, CMLC_EI_LE)                                         \
  CMLC_EI_BK(cmlc_ei_gt_##sfx, T, uint8_t, CMLC_EI_GT)                                         \
  CMLC_EI_BK(cmlc_ei_ge_##sfx, T, uint8_t, CMLC_EI_GE)                                         \
  /* Clamp(lo, x, hi) = min(max(x, lo), hi); other stride patterns element by element. */      \
  CMLC_EI_TARGET static void cmlc_ei_clamp_##sfx(void* out, const void* const* in,             \
                                                 const int64_t* st, int64_t n) {               \
    const T* lo = (const T*)in[0];                                                             \
    const T* x = (const T*)in[1];                                                              \
    const T* hi = (const T*)in[2];                                                             \
    T* o = (T*)out;                                                                            \
    if (st[0] == 0 && st[1] == 1 && st[2] == 0) {                                              \
      const T l = lo[0], h = hi[0];                                                            \
      for (int64_t i = 0; i < n; ++i) {                                                        \
        const T m = CMLC_EI_MAX(x[i], l);                                                      \
        o[i] = CMLC_EI_MIN(m, h);                                                              \
      }                                                                                        \
      return;                                                                                  \
    }                                                                                          \
    for (int64_t i = 0; i < n; ++i) {                                                          \
      const T l = lo[i * st[0]], v = x[i * st[1]], h = hi[i * st[2]];                          \
      const T m = CMLC_EI_MAX(v, l);                                                           \
      o[i] = CMLC_EI_MIN(m, h);                                                                \
    }                                                                                          \
  }
CMLC_EI_TYPE(i32, int32_t, uint32_t, int32_t, 32)
CMLC_EI_TYPE(u32, uint32_t, uint32_t, int32_t, 32)
CMLC_EI_TYPE(i64, int64_t, uint64_t, int64_t, 64)
CMLC_EI_TYPE(u64, uint64_t, uint64_t, int64_t, 64)

//===--- integer Pow ---===//

// The scalar kernel's square and multiply runs a data-dependent loop per element (about 10 ns
// an element on random small exponents, 3x xla:cpu's time). Here a vector of lanes runs the
// rounds together, as many as the vector's widest exponent has bits (4 for exponents below
// 16), each lane's product taken only where its exponent bit is set: the same wrap-around
// products in the same order as the scalar kernel, so the same bits. A negative signed
// exponent gives 0 except for the bases 1 (1) and -1 (-1 for odd exponents, 1 for even).

// 64-bit lane products modulo 2^64 from 32-bit multiplies (AVX2 has no vpmullq).
CMLC_EI_TARGET static inline __m256i cmlc_ei_mullo_epi64(__m256i a, __m256i b) {
  const __m256i lo = _mm256_mul_epu32(a, b);
  const __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(a, 32), b),
                                         _mm256_mul_epu32(a, _mm256_srli_epi64(b, 32)));
  return _mm256_add_epi64(lo, _mm256_slli_epi64(cross, 32));
}

// |B| lane bits: set1, compare-equal, signed compare-greater, product and shift for the width.
#define CMLC_EI_POW(sfx, T, LANES, SIGNED, SET1, CMPEQ, CMPGT, MULLO, SRLI)                    \
  CMLC_EI_TARGET static inline __m256i cmlc_ei_pow_vec_##sfx(__m256i a, __m256i b) {           \
    const __m256i one = SET1(1), zero = _mm256_setzero_si256();                                \
    const __m256i neg = SIGNED ? CMPGT(zero, b) : zero;                                        \
    __m256i e = _mm256_andnot_si256(neg, b), r = one, base = a;                                \
    while (!_mm256_testz_si256(e, e)) {                                                        \
      const __m256i bit = CMPEQ(_mm256_and_si256(e, one), one);                                \
      r = _mm256_blendv_epi8(r, MULLO(r, base), bit);                                          \
      base = MULLO(base, base);                                                                \
      e = SRLI(e, 1);                                                                          \
    }                                                                                          \
    if (SIGNED) {                                                                              \
      const __m256i m1 = SET1(-1);                                                             \
      const __m256i of_m1 = _mm256_blendv_epi8(one, m1, CMPEQ(_mm256_and_si256(b, one), one)); \
      __m256i nr = _mm256_and_si256(CMPEQ(a, one), one);                                       \
      nr = _mm256_blendv_epi8(nr, of_m1, CMPEQ(a, m1));                                        \
      r = _mm256_blendv_epi8(r, nr, neg);                                                      \
    }                                                                                          \
    return r;                                                                                  \
  }                                                                                            \
  CMLC_EI_TARGET static void cmlc_ei_pow_##sfx(void* out, const void* const* in,               \
                                               const int64_t* st, int64_t n) {                 \
    const T* pa = (const T*)in[0];                                                             \
    const T* pb = (const T*)in[1];                                                             \
    T* po = (T*)out;                                                                           \
    const __m256i a0 = SET1(pa[0]), b0 = SET1(pb[0]);                                          \
    int64_t i = 0;                                                                             \
    for (; i + LANES <= n; i += LANES) {                                                       \
      const __m256i a = st[0] ? _mm256_loadu_si256((const __m256i*)(pa + i)) : a0;             \
      const __m256i b = st[1] ? _mm256_loadu_si256((const __m256i*)(pb + i)) : b0;             \
      _mm256_storeu_si256((__m256i*)(po + i), cmlc_ei_pow_vec_##sfx(a, b));                    \
    }                                                                                          \
    if (i < n) {                                                                               \
      T ta[LANES] = {0}, tb[LANES] = {0}, tr[LANES];                                           \
      for (int64_t j = i; j < n; ++j)                                                          \
        ta[j - i] = pa[st[0] ? j : 0], tb[j - i] = pb[st[1] ? j : 0];                          \
      _mm256_storeu_si256((__m256i*)tr,                                                        \
                          cmlc_ei_pow_vec_##sfx(_mm256_loadu_si256((const __m256i*)ta),        \
                                                _mm256_loadu_si256((const __m256i*)tb)));      \
      memcpy(po + i, tr, (size_t)(n - i) * sizeof(T));                                         \
    }                                                                                          \
  }
CMLC_EI_POW(i32, int32_t, 8, 1, _mm256_set1_epi32, _mm256_cmpeq_epi32, _mm256_cmpgt_epi32,
            _mm256_mullo_epi32, _mm256_srli_epi32)
CMLC_EI_POW(u32, uint32_t, 8, 0, _mm256_set1_epi32, _mm256_cmpeq_epi32, _mm256_cmpgt_epi32,
            _mm256_mullo_epi32, _mm256_srli_epi32)
CMLC_EI_POW(i64, int64_t, 4, 1, _mm256_set1_epi64x, _mm256_cmpeq_epi64, _mm256_cmpgt_epi64,
            cmlc_ei_mullo_epi64, _mm256_srli_epi64)
CMLC_EI_POW(u64, uint64_t, 4, 0, _mm256_set1_epi64x, _mm256_cmpeq_epi64, _mm256_cmpgt_epi64,
            cmlc_ei_mullo_epi64, _mm256_srli_epi64)

//===--- 64-bit Div and Rem ---===//

// A divisor broadcast from one value that is a power of two 2^k (k >= 0) divides by shifts the
// compiler vectorizes: unsigned x >> k and x & (2^k - 1); signed rounds toward zero by adding
// 2^k - 1 to negative dividends first (x + that cannot overflow: it is added to negatives
// only), and the remainder is x - (q << k), the dividend's sign as C's %. Every other divisor
// takes the scalar kernels' rules element by element (x / 0 = -1 or all ones, x % 0 = x,
// INT_MIN / -1 = INT_MIN, INT_MIN % -1 = 0). The scalar kernel divided each element with idiv
// (a Rem of 1M i64 by 4096: 1.6-2.2x xla:cpu's time, which shifts for a constant).
#define CMLC_EI_DIVREM(sfx, T, U, SIGNED, BITS, TMIN)                                            \
  CMLC_EI_TARGET static inline T cmlc_ei_sdiv_##sfx(T a, T b) {                                  \
    if (b == 0) return (T)(U) ~(U)0;                                                             \
    if (SIGNED && a == (T)TMIN && b == (T)-1) return a;                                          \
    return (T)(a / b);                                                                           \
  }                                                                                              \
  CMLC_EI_TARGET static inline T cmlc_ei_srem_##sfx(T a, T b) {                                  \
    if (b == 0) return a;                                                                        \
    if (SIGNED && b == (T)-1) return 0;                                                          \
    return (T)(a % b);                                                                           \
  }                                                                                              \
  CMLC_EI_TARGET static void cmlc_ei_divrem_##sfx(void* out, const void* const* in,              \
                                                  const int64_t* st, int64_t n, bool rem) {      \
    const T* pa = (const T*)in[0];                                                               \
    const T* pb = (const T*)in[1];                                                               \
    T* po = (T*)out;                                                                             \
    const T d = pb[0];                                                                           \
    if (st[1] == 0 && st[0] && d > 0 && ((U)d & ((U)d - 1)) == 0) {                              \
      const int k = __builtin_ctzll((unsigned long long)(U)d);                                   \
      const U mask = (U)d - 1;                                                                   \
      if (SIGNED) {                                                                              \
        for (int64_t i = 0; i < n; ++i) {                                                        \
          const T x = pa[i];                                                                     \
          const T q = (T)((T)((U)x + ((U)(x >> (BITS - 1)) & mask)) >> k);                       \
          po[i] = rem ? (T)((U)x - ((U)q << k)) : q;                                             \
        }                                                                                        \
      } else {                                                                                   \
        for (int64_t i = 0; i < n; ++i) po[i] = rem ? (T)((U)pa[i] & mask) : (T)((U)pa[i] >> k); \
      }                                                                                          \
      return;                                                                                    \
    }                                                                                            \
    const int64_t sa = st[0] ? 1 : 0, sb = st[1] ? 1 : 0;                                        \
    for (int64_t i = 0; i < n; ++i) {                                                            \
      po[i] = rem ? cmlc_ei_srem_##sfx(pa[i * sa], pb[i * sb])                                   \
                  : cmlc_ei_sdiv_##sfx(pa[i * sa], pb[i * sb]);                                  \
    }                                                                                            \
  }                                                                                              \
  CMLC_EI_TARGET static void cmlc_ei_div_##sfx(void* out, const void* const* in,                 \
                                               const int64_t* st, int64_t n) {                   \
    cmlc_ei_divrem_##sfx(out, in, st, n, false);                                                 \
  }                                                                                              \
  CMLC_EI_TARGET static void cmlc_ei_rem_##sfx(void* out, const void* const* in,                 \
                                               const int64_t* st, int64_t n) {                   \
    cmlc_ei_divrem_##sfx(out, in, st, n, true);                                                  \
  }
CMLC_EI_DIVREM(i64, int64_t, uint64_t, 1, 64, INT64_MIN)
CMLC_EI_DIVREM(u64, uint64_t, uint64_t, 0, 64, 0)

#define CMLC_EI_PICK_TYPE(sfx)          \
  switch (op) {                         \
    case CML_OP_POW:                    \
      return cmlc_ei_pow_##sfx;         \
    case CML_OP_ADD:                    \
      return cmlc_ei_add_##sfx;         \
    case CML_OP_SUB:                    \
      return cmlc_ei_sub_##sfx;         \
    case CML_OP_MUL:                    \
      return cmlc_ei_mul_##sfx;         \
    case CML_OP_SHIFT_LEFT:             \
      return cmlc_ei_shl_##sfx;         \
    case CML_OP_SHIFT_RIGHT_LOGICAL:    \
      return cmlc_ei_srl_##sfx;         \
    case CML_OP_SHIFT_RIGHT_ARITHMETIC: \
      return cmlc_ei_sra_##sfx;         \
    case CML_OP_MAX:                    \
      return cmlc_ei_max_##sfx;         \
    case CML_OP_MIN:                    \
      return cmlc_ei_min_##sfx;         \
    case CML_OP_BITWISE_AND:            \
      return cmlc_ei_and_##sfx;         \
    case CML_OP_BITWISE_OR:             \
      return cmlc_ei_or_##sfx;          \
    case CML_OP_BITWISE_XOR:            \
      return cmlc_ei_xor_##sfx;         \
    case CML_OP_EQUAL:                  \
      return cmlc_ei_eq_##sfx;          \
    case CML_OP_NOT_EQUAL:              \
      return cmlc_ei_ne_##sfx;          \
    case CML_OP_LESS_THAN:              \
      return cmlc_ei_lt_##sfx;          \
    case CML_OP_LESS_OR_EQUAL:          \
      return cmlc_ei_le_##sfx;          \
    case CML_OP_GREATER_THAN:           \
      return cmlc_ei_gt_##sfx;          \
    case CML_OP_GREATER_OR_EQUAL:       \
      return cmlc_ei_ge_##sfx;          \
    case CML_OP_CLAMP:                  \
      return cmlc_ei_clamp_##sfx;       \
    default:                            \
      return NULL;                      \
  }

cmlc_ew_fn cmlc_ew_int_simd_fn(cml_op_t op, cml_dtype_t dtype) {
  switch (dtype) {
    case CML_DTYPE_I32:
      CMLC_EI_PICK_TYPE(i32)
    case CML_DTYPE_U32:
      CMLC_EI_PICK_TYPE(u32)
    case CML_DTYPE_I64:
      if (op == CML_OP_DIV) return cmlc_ei_div_i64;
      if (op == CML_OP_REM) return cmlc_ei_rem_i64;
      CMLC_EI_PICK_TYPE(i64)
    case CML_DTYPE_U64:
      if (op == CML_OP_DIV) return cmlc_ei_div_u64;
      if (op == CML_OP_REM) return cmlc_ei_rem_u64;
      CMLC_EI_PICK_TYPE(u64)
    default:
      return NULL;
  }
}

#define CMLC_EI_FADD(a, b) ((a) + (b))
#define CMLC_EI_FSUB(a, b) ((a) - (b))
#define CMLC_EI_FMUL(a, b) ((a) * (b))
#define CMLC_EI_FDIV(a, b) ((a) / (b))
// The f64 kernels: op, name, result type, operation.
#define CMLC_EI_F64_OPS(X)                  \
  X(ADD, add, double, CMLC_EI_FADD)         \
  X(SUB, sub, double, CMLC_EI_FSUB)         \
  X(MUL, mul, double, CMLC_EI_FMUL)         \
  X(DIV, div, double, CMLC_EI_FDIV)         \
  X(MAX, max, double, CMLC_EW_FMAX)         \
  X(MIN, min, double, CMLC_EW_FMIN)         \
  X(EQUAL, eq, uint8_t, CMLC_EI_EQ)         \
  X(NOT_EQUAL, ne, uint8_t, CMLC_EI_NE)     \
  X(LESS_THAN, lt, uint8_t, CMLC_EI_LT)     \
  X(LESS_OR_EQUAL, le, uint8_t, CMLC_EI_LE) \
  X(GREATER_THAN, gt, uint8_t, CMLC_EI_GT)  \
  X(GREATER_OR_EQUAL, ge, uint8_t, CMLC_EI_GE)
#define CMLC_EI_F64_DEFINE(OP, name, TOUT, OPF) CMLC_EI_BK(cmlc_ei_##name##_f64, double, TOUT, OPF)
CMLC_EI_F64_OPS(CMLC_EI_F64_DEFINE)
#undef CMLC_EI_F64_DEFINE

cmlc_ew_fn cmlc_ew_f64_simd_fn(cml_op_t op) {
#define CMLC_EI_F64_CASE(OP, name, TOUT, OPF) \
  case CML_OP_##OP:                           \
    return cmlc_ei_##name##_f64;
  switch (op) {
    CMLC_EI_F64_OPS(CMLC_EI_F64_CASE)
    default:
      return NULL;
  }
#undef CMLC_EI_F64_CASE
}

#endif  // CMLC_HAVE_X86_64
