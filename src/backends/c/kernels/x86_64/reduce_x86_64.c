// SPDX-License-Identifier: Apache-2.0
// kernels/x86_64/reduce_x86_64.c: AVX2 and AVX-512 column steps of f32 reductions whose
// innermost axis is kept (acc[j] = comb(acc[j], x[j]), see reduce_internal.h). Compiled for
// the target with function attributes, so the file needs no global -m flags; the functions are
// only reached when options->isa allows them.
//
// Max/min follow the scalar kernels exactly: the hardware max/min gives the larger/smaller of
// two ordered, unequal values; equal values take a AND b (max: +0 over -0) or a OR b (min: -0
// over +0), which is a itself when a == b is not a pair of zeros; an unordered pair takes a + b,
// a NaN (a's when a is the NaN, as the scalar kernel returns a).
#include "backends/c/kernels/generic/reduce_internal.h"

#if defined(CMLC_HAVE_X86_64)
#include <immintrin.h>

#define CMLC_RD512_TARGET __attribute__((target("avx512f")))
#define CMLC_RD256_TARGET __attribute__((target("avx2,fma")))

//===--- scalar tails (the scalar kernels' semantics) ---===//

static inline float cmlc_rdx_max1(float a, float b) {
  if (a != a) return a;
  if (b != b) return b;
  if (a > b) return a;
  if (b > a) return b;
  return __builtin_signbit(a) ? b : a;
}

static inline float cmlc_rdx_min1(float a, float b) {
  if (a != a) return a;
  if (b != b) return b;
  if (a < b) return a;
  if (b < a) return b;
  return __builtin_signbit(a) ? a : b;
}

//===--- AVX-512 ---===//

CMLC_RD512_TARGET static inline __m512 cmlc_rdx512_sum(__m512 a, __m512 b) {
  return _mm512_add_ps(a, b);
}

CMLC_RD512_TARGET static inline __m512 cmlc_rdx512_max(__m512 a, __m512 b) {
  __m512 r = _mm512_max_ps(a, b);
  __mmask16 eq = _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ);
  r = _mm512_mask_mov_ps(
      r, eq, _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(a), _mm512_castps_si512(b))));
  __mmask16 un = _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q);
  return _mm512_mask_add_ps(r, un, a, b);
}

CMLC_RD512_TARGET static inline __m512 cmlc_rdx512_min(__m512 a, __m512 b) {
  __m512 r = _mm512_min_ps(a, b);
  __mmask16 eq = _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ);
  r = _mm512_mask_mov_ps(
      r, eq, _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(a), _mm512_castps_si512(b))));
  __mmask16 un = _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q);
  return _mm512_mask_add_ps(r, un, a, b);
}

// Four vectors per step (independent lanes: the unrolling changes no result), then masked
// single vectors for the rest.
#define CMLC_RDX512_COLS(name)                                                             \
  CMLC_RD512_TARGET void cmlc__rd_cols_##name##_f32_avx512(float* acc, const float* x,     \
                                                           int64_t n) {                    \
    int64_t j = 0;                                                                         \
    for (; j + 64 <= n; j += 64) {                                                         \
      __m512 a0 = _mm512_loadu_ps(acc + j), a1 = _mm512_loadu_ps(acc + j + 16);            \
      __m512 a2 = _mm512_loadu_ps(acc + j + 32), a3 = _mm512_loadu_ps(acc + j + 48);       \
      a0 = cmlc_rdx512_##name(a0, _mm512_loadu_ps(x + j));                                 \
      a1 = cmlc_rdx512_##name(a1, _mm512_loadu_ps(x + j + 16));                            \
      a2 = cmlc_rdx512_##name(a2, _mm512_loadu_ps(x + j + 32));                            \
      a3 = cmlc_rdx512_##name(a3, _mm512_loadu_ps(x + j + 48));                            \
      _mm512_storeu_ps(acc + j, a0);                                                       \
      _mm512_storeu_ps(acc + j + 16, a1);                                                  \
      _mm512_storeu_ps(acc + j + 32, a2);                                                  \
      _mm512_storeu_ps(acc + j + 48, a3);                                                  \
    }                                                                                      \
    for (; j < n; j += 16) {                                                               \
      const int64_t left = n - j;                                                          \
      const __mmask16 m = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1u); \
      __m512 a = _mm512_maskz_loadu_ps(m, acc + j);                                        \
      a = cmlc_rdx512_##name(a, _mm512_maskz_loadu_ps(m, x + j));                          \
      _mm512_mask_storeu_ps(acc + j, m, a);                                                \
    }                                                                                      \
  }
CMLC_RDX512_COLS(sum)
CMLC_RDX512_COLS(max)
CMLC_RDX512_COLS(min)

// Short runs (reduce_internal.h): 16 runs of |len| <= 16 at a time. Their 16 * len floats are
// loaded as |len| vectors; element j of each run is brought to the run's lane by one masked
// permute per source vector (lane l of element j is float l * len + j: vector (l len + j) / 16,
// lane (l len + j) % 16). Each lane then combines its run in index order from the identity,
// the scalar kernel's order, with the column step's combine, so the same bits.
#define CMLC_RDX512_RUNS(name, IDENT)                                                           \
  CMLC_RD512_TARGET void cmlc__rd_runs_##name##_f32_avx512(const float* x, int64_t len,         \
                                                           int64_t rows, float* out) {          \
    __m512i idx[16];                                                                            \
    __mmask16 from[16][16];                                                                     \
    for (int j = 0; j < len; ++j) {                                                             \
      int32_t lanes[16];                                                                        \
      for (int v = 0; v < len; ++v) from[j][v] = 0;                                             \
      for (int l = 0; l < 16; ++l) {                                                            \
        const int e = l * (int)len + j;                                                         \
        lanes[l] = e % 16;                                                                      \
        from[j][e / 16] |= (__mmask16)(1u << l);                                                \
      }                                                                                         \
      idx[j] = _mm512_loadu_si512(lanes);                                                       \
    }                                                                                           \
    for (int64_t q = 0; q < rows; q += 16) {                                                    \
      const int64_t n = rows - q < 16 ? rows - q : 16;                                          \
      const float* r = x + q * len;                                                             \
      __m512 src[16];                                                                           \
      const int64_t floats = n * len;                                                           \
      for (int v = 0; v < len; ++v) {                                                           \
        const int64_t left = floats - 16 * (int64_t)v;                                          \
        const __mmask16 m = left >= 16  ? (__mmask16)0xFFFF                                     \
                            : left <= 0 ? (__mmask16)0                                          \
                                        : (__mmask16)((1u << left) - 1u);                       \
        src[v] = _mm512_maskz_loadu_ps(m, r + 16 * v);                                          \
      }                                                                                         \
      __m512 acc = _mm512_set1_ps(IDENT);                                                       \
      for (int j = 0; j < len; ++j) {                                                           \
        __m512 e = _mm512_setzero_ps();                                                         \
        for (int v = 0; v < len; ++v) {                                                         \
          if (from[j][v]) e = _mm512_mask_permutexvar_ps(e, from[j][v], idx[j], src[v]);        \
        }                                                                                       \
        acc = cmlc_rdx512_##name(acc, e);                                                       \
      }                                                                                         \
      _mm512_mask_storeu_ps(out + q, n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1u), \
                            acc);                                                               \
    }                                                                                           \
  }
CMLC_RDX512_RUNS(sum, 0.0f)
CMLC_RDX512_RUNS(max, -__builtin_inff())
CMLC_RDX512_RUNS(min, __builtin_inff())

//===--- AVX2 ---===//

CMLC_RD256_TARGET static inline __m256 cmlc_rdx256_sum(__m256 a, __m256 b) {
  return _mm256_add_ps(a, b);
}

CMLC_RD256_TARGET static inline __m256 cmlc_rdx256_max(__m256 a, __m256 b) {
  __m256 r = _mm256_max_ps(a, b);
  r = _mm256_blendv_ps(r, _mm256_and_ps(a, b), _mm256_cmp_ps(a, b, _CMP_EQ_OQ));
  return _mm256_blendv_ps(r, _mm256_add_ps(a, b), _mm256_cmp_ps(a, b, _CMP_UNORD_Q));
}

CMLC_RD256_TARGET static inline __m256 cmlc_rdx256_min(__m256 a, __m256 b) {
  __m256 r = _mm256_min_ps(a, b);
  r = _mm256_blendv_ps(r, _mm256_or_ps(a, b), _mm256_cmp_ps(a, b, _CMP_EQ_OQ));
  return _mm256_blendv_ps(r, _mm256_add_ps(a, b), _mm256_cmp_ps(a, b, _CMP_UNORD_Q));
}

#define CMLC_RDX_SUM1(a, b) ((a) + (b))
#define CMLC_RDX_MAX1(a, b) cmlc_rdx_max1(a, b)
#define CMLC_RDX_MIN1(a, b) cmlc_rdx_min1(a, b)

#define CMLC_RDX256_COLS(name, SCALAR)                                                            \
  CMLC_RD256_TARGET void cmlc__rd_cols_##name##_f32_avx2(float* acc, const float* x, int64_t n) { \
    int64_t j = 0;                                                                                \
    for (; j + 32 <= n; j += 32) {                                                                \
      __m256 a0 = _mm256_loadu_ps(acc + j), a1 = _mm256_loadu_ps(acc + j + 8);                    \
      __m256 a2 = _mm256_loadu_ps(acc + j + 16), a3 = _mm256_loadu_ps(acc + j + 24);              \
      a0 = cmlc_rdx256_##name(a0, _mm256_loadu_ps(x + j));                                        \
      a1 = cmlc_rdx256_##name(a1, _mm256_loadu_ps(x + j + 8));                                    \
      a2 = cmlc_rdx256_##name(a2, _mm256_loadu_ps(x + j + 16));                                   \
      a3 = cmlc_rdx256_##name(a3, _mm256_loadu_ps(x + j + 24));                                   \
      _mm256_storeu_ps(acc + j, a0);                                                              \
      _mm256_storeu_ps(acc + j + 8, a1);                                                          \
      _mm256_storeu_ps(acc + j + 16, a2);                                                         \
      _mm256_storeu_ps(acc + j + 24, a3);                                                         \
    }                                                                                             \
    for (; j + 8 <= n; j += 8) {                                                                  \
      _mm256_storeu_ps(acc + j,                                                                   \
                       cmlc_rdx256_##name(_mm256_loadu_ps(acc + j), _mm256_loadu_ps(x + j)));     \
    }                                                                                             \
    for (; j < n; ++j) acc[j] = SCALAR(acc[j], x[j]);                                             \
  }
CMLC_RDX256_COLS(sum, CMLC_RDX_SUM1)
CMLC_RDX256_COLS(max, CMLC_RDX_MAX1)
CMLC_RDX256_COLS(min, CMLC_RDX_MIN1)

#endif  // CMLC_HAVE_X86_64
