// SPDX-License-Identifier: Apache-2.0
// kernels/x86_64/quant_x86_64_avx2.c: AVX2 + FMA batch-1 dot products of GGML rows with an f32
// activation row (Q4_0, Q8_0, Q4_K, Q6_K): each block's integers are unpacked in registers,
// widened to f32 and multiplied into the activations with FMA; the block scale is applied to
// the block's partial sum, so no dequantized weight is ever stored. Compiled with function
// target attributes; only called when the CPU has AVX2 and FMA (options->isa).
#include "backends/c/kernels/generic/quant_internal.h"
#include "core/quant_blocks.h"

#if defined(CMLC_HAVE_X86_64)
#include <immintrin.h>

#define CMLC_QAVX2 __attribute__((target("avx2,fma")))

static inline CMLC_QAVX2 float cmlc_qavx2_hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Sum over 32 values: int8 |q| (32 bytes in a ymm) times x[0..31], as one ymm of partial sums.
static inline CMLC_QAVX2 __m256 cmlc_qavx2_dot32(__m256i q, const float* x) {
  __m128i lo = _mm256_castsi256_si128(q), hi = _mm256_extracti128_si256(q, 1);
  __m256 a = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo)), _mm256_loadu_ps(x));
  a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8))),
                      _mm256_loadu_ps(x + 8), a);
  __m256 b = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi)), _mm256_loadu_ps(x + 16));
  b = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8))),
                      _mm256_loadu_ps(x + 24), b);
  return _mm256_add_ps(a, b);
}

// The 32 nibbles of 16 bytes at |p| in ggml's order (low nibbles, then high), as int8.
static inline CMLC_QAVX2 __m256i cmlc_qavx2_nibbles(const uint8_t* p) {
  __m128i b = _mm_loadu_si128((const __m128i*)p);
  __m128i m = _mm_set1_epi8(15);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(b, 4), m), _mm_and_si128(b, m));
}

static CMLC_QAVX2 float cmlc_qavx2_row(cml_ggml_type_t type, const uint8_t* w, const float* x,
                                       int64_t nb) {
  __m256 acc = _mm256_setzero_ps();
  float tail = 0;
  switch (type) {
    case CML_GGML_Q8_0:
      for (int64_t b = 0; b < nb; ++b, w += 34, x += 32) {
        __m256i q = _mm256_loadu_si256((const __m256i*)(w + 2));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(cml__qb_half(w)), cmlc_qavx2_dot32(q, x), acc);
      }
      break;
    case CML_GGML_Q4_0:
      for (int64_t b = 0; b < nb; ++b, w += 18, x += 32) {
        __m256i q = _mm256_sub_epi8(cmlc_qavx2_nibbles(w + 2), _mm256_set1_epi8(8));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(cml__qb_half(w)), cmlc_qavx2_dot32(q, x), acc);
      }
      break;
    case CML_GGML_Q4_K:
      for (int64_t b = 0; b < nb; ++b, w += 144, x += 256) {
        const float d = cml__qb_half(w), dmin = cml__qb_half(w + 2);
        for (int c = 0; c < 4; ++c) {
          __m256i q = _mm256_loadu_si256((const __m256i*)(w + 16 + 32 * c));
          __m256i m = _mm256_set1_epi8(15);
          __m256i qlo = _mm256_and_si256(q, m);
          __m256i qhi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m);
          for (int h = 0; h < 2; ++h) {
            const int j = 2 * c + h;
            uint8_t sc, mn;
            cml__qb_scale_min_k4(j, w + 4, &sc, &mn);
            const float* xj = x + 32 * j;
            __m256 xs =
                _mm256_add_ps(_mm256_add_ps(_mm256_loadu_ps(xj), _mm256_loadu_ps(xj + 8)),
                              _mm256_add_ps(_mm256_loadu_ps(xj + 16), _mm256_loadu_ps(xj + 24)));
            acc = _mm256_fmadd_ps(_mm256_set1_ps(d * (float)sc),
                                  cmlc_qavx2_dot32(h ? qhi : qlo, xj), acc);
            acc = _mm256_fnmadd_ps(_mm256_set1_ps(dmin * (float)mn), xs, acc);
          }
        }
      }
      break;
    case CML_GGML_Q6_K:
      for (int64_t b = 0; b < nb; ++b, w += 210, x += 256) {
        const float d = cml__qb_half(w + 208);
        const int8_t* sc = (const int8_t*)(w + 192);
        for (int n = 0; n < 2; ++n) {
          __m256i qh = _mm256_loadu_si256((const __m256i*)(w + 128 + 32 * n));
          for (int u = 0; u < 4; ++u) {
            __m256i ql = _mm256_loadu_si256((const __m256i*)(w + 64 * n + 32 * (u & 1)));
            __m256i lo =
                _mm256_and_si256(_mm256_srli_epi16(ql, 4 * (u >> 1)), _mm256_set1_epi8(15));
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * u), _mm256_set1_epi8(3));
            __m256i q = _mm256_sub_epi8(_mm256_or_si256(lo, _mm256_slli_epi16(hi, 4)),
                                        _mm256_set1_epi8(32));
            const int e = 128 * n + 32 * u;
            const float* xe = x + e;
            __m128i q0 = _mm256_castsi256_si128(q), q1 = _mm256_extracti128_si256(q, 1);
            __m256 s0 = _mm256_fmadd_ps(
                _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(q0, 8))),
                _mm256_loadu_ps(xe + 8),
                _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q0)), _mm256_loadu_ps(xe)));
            __m256 s1 =
                _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(q1, 8))),
                                _mm256_loadu_ps(xe + 24),
                                _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q1)),
                                              _mm256_loadu_ps(xe + 16)));
            acc = _mm256_fmadd_ps(_mm256_set1_ps(d * (float)sc[e / 16]), s0, acc);
            acc = _mm256_fmadd_ps(_mm256_set1_ps(d * (float)sc[e / 16 + 1]), s1, acc);
          }
        }
      }
      break;
    default:
      break;
  }
  return cmlc_qavx2_hsum(acc) + tail;
}

bool cmlc_quant_gemv_avx2(cml_ggml_type_t type, const uint8_t* w, int64_t row_bytes, int64_t rows,
                          const float* x, int64_t k, float* y) {
  if (type != CML_GGML_Q8_0 && type != CML_GGML_Q4_0 && type != CML_GGML_Q4_K &&
      type != CML_GGML_Q6_K)
    return false;
  const int64_t nb = k / cml__qb_values[type];
  for (int64_t r = 0; r < rows; ++r) y[r] = cmlc_qavx2_row(type, w + r * row_bytes, x, nb);
  return true;
}

#endif  // CMLC_HAVE_X86_64
