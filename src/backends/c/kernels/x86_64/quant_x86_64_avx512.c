// SPDX-License-Identifier: Apache-2.0
// kernels/x86_64/quant_x86_64_avx512.c: AVX-512 batch-1 dot products of GGML rows with an f32
// activation row (Q4_0, Q8_0, Q4_K, Q6_K), as the AVX2 file does them with 16-lane vectors:
// each 16 weights are unpacked from their block in registers, widened to f32 (vpmovsxbd,
// vcvtdq2ps) and multiplied into the activations with FMA; the block scale multiplies the
// block's partial sums, so no dequantized weight is ever stored. Compiled with function target
// attributes; only called when the CPU has AVX-512F/BW (options->isa == CMLC_ISA_AVX512).
#include "backends/c/kernels/generic/quant_internal.h"
#include "core/quant_blocks.h"

#if defined(CMLC_HAVE_X86_64)
#include <immintrin.h>

#define CMLC_QAVX512 __attribute__((target("avx512f,avx512bw,avx512vl,fma,f16c")))

// The fp16 at |p| as a float, with F16C (inline: one per block on the hot path).
static inline CMLC_QAVX512 float cmlc_qavx512_half(const uint8_t* p) {
  return _cvtsh_ss((unsigned short)(p[0] | (p[1] << 8)));
}

// Sum of 16 int8 |q| times x[0..15], as 16 lanes.
static inline CMLC_QAVX512 __m512 cmlc_qavx512_dot16(__m128i q, const float* x) {
  return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), _mm512_loadu_ps(x));
}

// |acc| += scale * (q[0..31] . x[0..31]) for 32 int8 in a ymm.
static inline CMLC_QAVX512 __m512 cmlc_qavx512_block32(__m512 acc, float scale, __m256i q,
                                                       const float* x) {
  __m512 s = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_castsi256_si128(q))),
                             _mm512_loadu_ps(x),
                             cmlc_qavx512_dot16(_mm256_extracti128_si256(q, 1), x + 16));
  return _mm512_fmadd_ps(_mm512_set1_ps(scale), s, acc);
}

static CMLC_QAVX512 float cmlc_qavx512_row(cml_ggml_type_t type, const uint8_t* w,
                                           const float* xsum, const float* x, int64_t nb) {
  __m512 acc = _mm512_setzero_ps();
  float tail = 0;  // Q4_K: the mins times the sub-block sums of x
  const __m256i m4 = _mm256_set1_epi8(15);
  switch (type) {
    case CML_GGML_Q8_0:
      for (int64_t b = 0; b < nb; ++b, w += 34, x += 32) {
        __m256i q = _mm256_loadu_si256((const __m256i*)(w + 2));
        acc = cmlc_qavx512_block32(acc, cmlc_qavx512_half(w), q, x);
      }
      break;
    case CML_GGML_Q4_0:
      for (int64_t b = 0; b < nb; ++b, w += 18, x += 32) {
        __m128i bytes = _mm_loadu_si128((const __m128i*)(w + 2));
        __m256i q = _mm256_set_m128i(_mm_srli_epi16(bytes, 4), bytes);
        q = _mm256_sub_epi8(_mm256_and_si256(q, m4), _mm256_set1_epi8(8));
        acc = cmlc_qavx512_block32(acc, cmlc_qavx512_half(w), q, x);
      }
      break;
    case CML_GGML_Q4_K:
      for (int64_t b = 0; b < nb; ++b, w += 144, x += 256) {
        const float d = cmlc_qavx512_half(w), dmin = cmlc_qavx512_half(w + 2);
        for (int c = 0; c < 4; ++c) {
          __m256i q = _mm256_loadu_si256((const __m256i*)(w + 16 + 32 * c));
          for (int h = 0; h < 2; ++h) {
            const int j = 2 * c + h;
            uint8_t sc, mn;
            cml__qb_scale_min_k4(j, w + 4, &sc, &mn);
            const float* xj = x + 32 * j;
            __m256i qj = _mm256_and_si256(h ? _mm256_srli_epi16(q, 4) : q, m4);
            acc = cmlc_qavx512_block32(acc, d * (float)sc, qj, xj);
            tail -= dmin * (float)mn * xsum[8 * b + j];
          }
        }
      }
      break;
    case CML_GGML_Q6_K:
      for (int64_t b = 0; b < nb; ++b, w += 210, x += 256) {
        const float d = cmlc_qavx512_half(w + 208);
        const int8_t* sc = (const int8_t*)(w + 192);
        for (int n = 0; n < 2; ++n) {
          __m256i qh = _mm256_loadu_si256((const __m256i*)(w + 128 + 32 * n));
          for (int u = 0; u < 4; ++u) {
            __m256i ql = _mm256_loadu_si256((const __m256i*)(w + 64 * n + 32 * (u & 1)));
            __m256i lo = _mm256_and_si256(_mm256_srli_epi16(ql, 4 * (u >> 1)), m4);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * u), _mm256_set1_epi8(3));
            __m256i q = _mm256_sub_epi8(_mm256_or_si256(lo, _mm256_slli_epi16(hi, 4)),
                                        _mm256_set1_epi8(32));
            const int e = 128 * n + 32 * u;
            acc = _mm512_fmadd_ps(_mm512_set1_ps(d * (float)sc[e / 16]),
                                  cmlc_qavx512_dot16(_mm256_castsi256_si128(q), x + e), acc);
            acc = _mm512_fmadd_ps(_mm512_set1_ps(d * (float)sc[e / 16 + 1]),
                                  cmlc_qavx512_dot16(_mm256_extracti128_si256(q, 1), x + e + 16),
                                  acc);
          }
        }
      }
      break;
    default:
      break;
  }
  return _mm512_reduce_add_ps(acc) + tail;
}

bool cmlc_quant_gemv_avx512(cml_ggml_type_t type, const uint8_t* w, int64_t row_bytes, int64_t rows,
                            const float* x, int64_t k, float* y) {
  if (type != CML_GGML_Q8_0 && type != CML_GGML_Q4_0 && type != CML_GGML_Q4_K &&
      type != CML_GGML_Q6_K)
    return false;
  const int64_t nb = k / cml__qb_values[type];
  // Q4_K's mins multiply the sums of x over each 32-value sub-block: computed once per call.
  float xsum[2048];
  if (type == CML_GGML_Q4_K) {
    if (k / 32 > 2048) return false;  // the scalar kernel takes K > 65536
    for (int64_t j = 0; j < k / 32; ++j) {
      float t = 0;
      for (int l = 0; l < 32; ++l) t += x[32 * j + l];
      xsum[j] = t;
    }
  }
  for (int64_t r = 0; r < rows; ++r) y[r] = cmlc_qavx512_row(type, w + r * row_bytes, xsum, x, nb);
  return true;
}

#endif  // CMLC_HAVE_X86_64
