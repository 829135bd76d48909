// SPDX-License-Identifier: Apache-2.0
// kernels/x86_64/quant_x86_64_avx2.c: AVX2 + FMA products of GGML rows with f32 activations.
// Batch 1 (GEMV): the row kernels of quant_x86_64_body.h on 8-lane vectors (every format; the
// int8 path with vpmaddubsw + vpmaddwd). Batch N: cmlc_quant_gemm_avx2 (four decoded rows at a
// time against a 3 x 4 register tile). Compiled with function target attributes; only called
// when the CPU has AVX2, FMA and F16C (options->isa).
#include <string.h>

#include "backends/c/kernels/generic/quant_internal.h"
#include "core/quant_blocks.h"

#if defined(CMLC_HAVE_X86_64)
#include <immintrin.h>

#define CMLC_QAVX2 __attribute__((target("avx2,fma,f16c")))
#define CMLC_QB_TARGET CMLC_QAVX2
#define CMLC_QB_ZMM 0
#define CMLC_QB_VNNI 0
#include "backends/c/kernels/x86_64/quant_x86_64_body.h"

void cmlc_quant_gemv_avx2(cml_ggml_type_t type, const uint8_t* w, int64_t row_bytes, int64_t rows,
                          const cmlc_quant_act_t* act, float* y) {
  cmlc_qb_gemv(type, w, row_bytes, rows, act, y);
}

// Batch-N: y[i, r] = sum_k x[i, k] * w[r, k] for rows [0, rows) of |w| and |m| activation rows.
// Four weight rows at a time are decoded into |panel| (4 x k floats, L2-resident: never more
// than four rows of float weights exist), then a 3 x 4 register tile (12 ymm accumulators: three
// activation rows times four weight rows) runs down k with FMA; the tile's sums are reduced at
// the end. Every format goes through here (the decode is amortized over the m rows).
CMLC_QAVX2 void cmlc_quant_gemm_avx2(cml_ggml_type_t type, const uint8_t* w, int64_t row_bytes,
                                     int64_t rows, const float* x, int64_t m, int64_t k, float* y,
                                     int64_t ldy, float* panel) {
  for (int64_t r0 = 0; r0 < rows; r0 += 4) {
    const int64_t rc = rows - r0 < 4 ? rows - r0 : 4;
    for (int64_t j = 0; j < 4; ++j) {
      float* p = panel + j * k;
      if (j < rc) {
        cmlc_qb_decode_row(type, w + (r0 + j) * row_bytes, k, p);
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
        for (int64_t j = 0; j < rc; ++j) y[(i0 + i) * ldy + r0 + j] = cmlc_qb_hsum8(c[i][j]);
      }
    }
  }
}

#define CMLC_QL_TARGET CMLC_QAVX2
#define CMLC_QL_ZMM 0
#define CMLC_QL_NAME cmlc_quant_lin_avx2
#include "backends/c/kernels/x86_64/quant_lin_x86_64_body.h"
#endif  // CMLC_HAVE_X86_64
