// SPDX-License-Identifier: Apache-2.0
// kernels/x86_64/quant_x86_64_avx2.c: AVX2 + FMA products of GGML rows with f32 activations.
// Batch 1 (GEMV): dot products of GGML rows with an f32
// activation row (Q4_0, Q8_0, Q4_K, Q6_K): each block's integers are unpacked in registers,
// widened to f32 and multiplied into the activations with FMA; the block scale is applied to
// the block's partial sum, so no dequantized weight is ever stored. Compiled with function
// target attributes; only called when the CPU has AVX2 and FMA (options->isa). Batch N: see
// cmlc_quant_gemm_avx2 (four decoded rows at a time against a 3 x 4 register tile).
#include <string.h>

#include "backends/c/kernels/generic/quant_internal.h"
#include "core/quant_blocks.h"

#if defined(CMLC_HAVE_X86_64)
#include <immintrin.h>

#define CMLC_QAVX2 __attribute__((target("avx2,fma,f16c")))

// The fp16 at |p| as a float, with F16C (inline: one per block on the hot path).
static inline CMLC_QAVX2 float cmlc_qavx2_half(const uint8_t* p) {
  return _cvtsh_ss((unsigned short)(p[0] | (p[1] << 8)));
}

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

static CMLC_QAVX2 float cmlc_qavx2_row(cml_ggml_type_t type, const uint8_t* w, const float* xsum,
                                       const float* x, int64_t nb) {
  __m256 acc = _mm256_setzero_ps();
  float tail = 0;
  switch (type) {
    case CML_GGML_Q8_0:
      for (int64_t b = 0; b < nb; ++b, w += 34, x += 32) {
        __m256i q = _mm256_loadu_si256((const __m256i*)(w + 2));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(cmlc_qavx2_half(w)), cmlc_qavx2_dot32(q, x), acc);
      }
      break;
    case CML_GGML_Q4_0:
      for (int64_t b = 0; b < nb; ++b, w += 18, x += 32) {
        __m256i q = _mm256_sub_epi8(cmlc_qavx2_nibbles(w + 2), _mm256_set1_epi8(8));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(cmlc_qavx2_half(w)), cmlc_qavx2_dot32(q, x), acc);
      }
      break;
    case CML_GGML_Q4_K:
      for (int64_t b = 0; b < nb; ++b, w += 144, x += 256) {
        const float d = cmlc_qavx2_half(w), dmin = cmlc_qavx2_half(w + 2);
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
            acc = _mm256_fmadd_ps(_mm256_set1_ps(d * (float)sc),
                                  cmlc_qavx2_dot32(h ? qhi : qlo, xj), acc);
            tail -= dmin * (float)mn * xsum[8 * b + j];
          }
        }
      }
      break;
    case CML_GGML_Q6_K:
      for (int64_t b = 0; b < nb; ++b, w += 210, x += 256) {
        const float d = cmlc_qavx2_half(w + 208);
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
  for (int64_t r = 0; r < rows; ++r) y[r] = cmlc_qavx2_row(type, w + r * row_bytes, xsum, x, nb);
  return true;
}

// Batch-N: y[i, r] = sum_k x[i, k] * w[r, k] for rows [0, rows) of |w| and |m| activation rows.
// Four weight rows at a time are decoded into |panel| (4 x k floats, L2-resident: never more
// than four rows of float weights exist), then a 3 x 4 register tile (12 ymm accumulators: three
// activation rows times four weight rows) runs down k with FMA; the tile's sums are reduced at
// the end. Every format goes through here (the decode is amortized over the m rows).
CMLC_QAVX2 void cmlc_quant_gemm_avx2(cml_ggml_type_t type, const uint8_t* w, int64_t row_bytes,
                                     int64_t rows, const float* x, int64_t m, int64_t k, float* y,
                                     int64_t ldy, float* panel) {
  const int64_t vpb = cml__qb_values[type], bpb = cml__qb_bytes[type], nb = k / vpb;
  for (int64_t r0 = 0; r0 < rows; r0 += 4) {
    const int64_t rc = rows - r0 < 4 ? rows - r0 : 4;
    for (int64_t j = 0; j < 4; ++j) {
      float* p = panel + j * k;
      if (j < rc) {
        const uint8_t* row = w + (r0 + j) * row_bytes;
        for (int64_t b = 0; b < nb; ++b) cml__qb_decode(type, row + b * bpb, p + b * vpb);
      } else {
        memset(p, 0, sizeof(float) * (size_t)k);
      }
    }
    const float* p0 = panel;
    const float* p1 = panel + k;
    const float* p2 = panel + 2 * k;
    const float* p3 = panel + 3 * k;
    for (int64_t i0 = 0; i0 < m; i0 += 3) {
      const int64_t ic = m - i0 < 3 ? m - i0 : 3;
      const float* x0 = x + i0 * k;
      const float* x1 = ic > 1 ? x0 + k : x0;
      const float* x2 = ic > 2 ? x0 + 2 * k : x0;
      __m256 c00 = _mm256_setzero_ps(), c01 = c00, c02 = c00, c03 = c00;
      __m256 c10 = c00, c11 = c00, c12 = c00, c13 = c00;
      __m256 c20 = c00, c21 = c00, c22 = c00, c23 = c00;
      for (int64_t kk = 0; kk < k; kk += 8) {  // k is a multiple of 32
        __m256 w0 = _mm256_loadu_ps(p0 + kk), w1 = _mm256_loadu_ps(p1 + kk);
        __m256 w2 = _mm256_loadu_ps(p2 + kk), w3 = _mm256_loadu_ps(p3 + kk);
        __m256 a = _mm256_loadu_ps(x0 + kk);
        c00 = _mm256_fmadd_ps(a, w0, c00);
        c01 = _mm256_fmadd_ps(a, w1, c01);
        c02 = _mm256_fmadd_ps(a, w2, c02);
        c03 = _mm256_fmadd_ps(a, w3, c03);
        a = _mm256_loadu_ps(x1 + kk);
        c10 = _mm256_fmadd_ps(a, w0, c10);
        c11 = _mm256_fmadd_ps(a, w1, c11);
        c12 = _mm256_fmadd_ps(a, w2, c12);
        c13 = _mm256_fmadd_ps(a, w3, c13);
        a = _mm256_loadu_ps(x2 + kk);
        c20 = _mm256_fmadd_ps(a, w0, c20);
        c21 = _mm256_fmadd_ps(a, w1, c21);
        c22 = _mm256_fmadd_ps(a, w2, c22);
        c23 = _mm256_fmadd_ps(a, w3, c23);
      }
      const __m256 c[3][4] = {{c00, c01, c02, c03}, {c10, c11, c12, c13}, {c20, c21, c22, c23}};
      for (int64_t i = 0; i < ic; ++i) {
        for (int64_t j = 0; j < rc; ++j) y[(i0 + i) * ldy + r0 + j] = cmlc_qavx2_hsum(c[i][j]);
      }
    }
  }
}

#endif  // CMLC_HAVE_X86_64
