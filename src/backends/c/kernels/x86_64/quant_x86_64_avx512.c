// SPDX-License-Identifier: Apache-2.0
// kernels/x86_64/quant_x86_64_avx512.c: AVX-512 batch-1 products of GGML rows with an activation
// row: the row kernels of quant_x86_64_body.h with the f32 path on 16-lane vectors (each 16
// weights widened with vpmovsxbd, converted and multiplied into x with FMA) and the int8 path on
// vpdpbusd (AVX512-VNNI on ymm). Compiled with function target attributes; only called when the
// CPU has AVX-512F/BW/VL (options->isa == CMLC_ISA_AVX512), and for the int8 path only when it
// also has AVX512-VNNI (options->avx512_vnni; else quant.c takes the AVX2 kernels).
#include <string.h>

#include "backends/c/kernels/generic/quant_internal.h"
#include "core/quant_blocks.h"

#if defined(CMLC_HAVE_X86_64)
#define CMLC_QB_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#define CMLC_QB_ZMM 1
#define CMLC_QB_VNNI 1
#include "backends/c/kernels/x86_64/quant_x86_64_body.h"

void cmlc_quant_gemv_avx512(cml_ggml_type_t type, const uint8_t* w, int64_t row_bytes, int64_t rows,
                            const cmlc_quant_act_t* act, float* y) {
  cmlc_qb_gemv(type, w, row_bytes, rows, act, y);
}

// Batch N: y[i * ldy + r] = x[i, :] . w[r, :] for rows [0, rows) and |m| activation rows. Four
// weight rows at a time are decoded into |panel| (4 x k floats, L2-resident; decoded once and
// used by every activation row), then a 4 x 4 tile of zmm accumulators (four activation rows
// times four weight rows) runs down k with FMA, 16 values a step; horizontal sums at the end.
CMLC_QB_TARGET void cmlc_quant_gemm_avx512(cml_ggml_type_t type, const uint8_t* w,
                                           int64_t row_bytes, int64_t rows, const float* x,
                                           int64_t m, int64_t k, float* y, int64_t ldy,
                                           float* panel) {
  for (int64_t r0 = 0; r0 < rows; r0 += 4) {
    const int64_t rc = rows - r0 < 4 ? rows - r0 : 4;
    for (int64_t j = 0; j < 4; ++j) {
      if (j < rc) {
        cmlc_qb_decode_row(type, w + (r0 + j) * row_bytes, k, panel + j * k);
      } else {
        memset(panel + j * k, 0, sizeof(float) * (size_t)k);
      }
    }
    const float* p0 = panel;
    const float* p1 = panel + k;
    const float* p2 = panel + 2 * k;
    const float* p3 = panel + 3 * k;
    for (int64_t i0 = 0; i0 < m; i0 += 4) {
      const int64_t ic = m - i0 < 4 ? m - i0 : 4;
      const float* x0 = x + i0 * k;
      const float* x1 = ic > 1 ? x0 + k : x0;
      const float* x2 = ic > 2 ? x0 + 2 * k : x0;
      const float* x3 = ic > 3 ? x0 + 3 * k : x0;
      __m512 c00 = _mm512_setzero_ps(), c01 = c00, c02 = c00, c03 = c00;
      __m512 c10 = c00, c11 = c00, c12 = c00, c13 = c00;
      __m512 c20 = c00, c21 = c00, c22 = c00, c23 = c00;
      __m512 c30 = c00, c31 = c00, c32 = c00, c33 = c00;
      for (int64_t kk = 0; kk < k; kk += 16) {  // k is a multiple of 32
        const __m512 w0 = _mm512_loadu_ps(p0 + kk), w1 = _mm512_loadu_ps(p1 + kk);
        const __m512 w2 = _mm512_loadu_ps(p2 + kk), w3 = _mm512_loadu_ps(p3 + kk);
        __m512 a = _mm512_loadu_ps(x0 + kk);
        c00 = _mm512_fmadd_ps(a, w0, c00);
        c01 = _mm512_fmadd_ps(a, w1, c01);
        c02 = _mm512_fmadd_ps(a, w2, c02);
        c03 = _mm512_fmadd_ps(a, w3, c03);
        a = _mm512_loadu_ps(x1 + kk);
        c10 = _mm512_fmadd_ps(a, w0, c10);
        c11 = _mm512_fmadd_ps(a, w1, c11);
        c12 = _mm512_fmadd_ps(a, w2, c12);
        c13 = _mm512_fmadd_ps(a, w3, c13);
        a = _mm512_loadu_ps(x2 + kk);
        c20 = _mm512_fmadd_ps(a, w0, c20);
        c21 = _mm512_fmadd_ps(a, w1, c21);
        c22 = _mm512_fmadd_ps(a, w2, c22);
        c23 = _mm512_fmadd_ps(a, w3, c23);
        a = _mm512_loadu_ps(x3 + kk);
        c30 = _mm512_fmadd_ps(a, w0, c30);
        c31 = _mm512_fmadd_ps(a, w1, c31);
        c32 = _mm512_fmadd_ps(a, w2, c32);
        c33 = _mm512_fmadd_ps(a, w3, c33);
      }
      const __m512 c[4][4] = {
          {c00, c01, c02, c03}, {c10, c11, c12, c13}, {c20, c21, c22, c23}, {c30, c31, c32, c33}};
      for (int64_t i = 0; i < ic; ++i) {
        for (int64_t j = 0; j < rc; ++j) y[(i0 + i) * ldy + r0 + j] = _mm512_reduce_add_ps(c[i][j]);
      }
    }
  }
}

#define CMLC_QL_TARGET CMLC_QB_TARGET
#define CMLC_QL_ZMM 1
#define CMLC_QL_NAME cmlc_quant_lin_avx512
#include "backends/c/kernels/x86_64/quant_lin_x86_64_body.h"
#endif  // CMLC_HAVE_X86_64
