// SPDX-License-Identifier: Apache-2.0
// kernels/x86_64/gemm_x86_64_avx2.c: the AVX2 + FMA f32 GEMM micro-kernel (6 x 16 tile: twelve
// ymm accumulators, two B vectors and one broadcast A value per k step). Compiled for the
// target with a function attribute, so the file needs no global -m flags; it is only called
// when the CPU has AVX2 and FMA (options->isa).
#include "backends/c/kernels/generic/linalg_internal.h"

#if defined(CMLC__GEMM_HAVE_X86)
#include <immintrin.h>

__attribute__((target("avx2,fma"))) void cmlc__gemm_ukernel_f32_avx2_6x16(
    int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int accumulate) {
  __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps();
  __m256 c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
  __m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps();
  __m256 c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
  __m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps();
  __m256 c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
  for (int64_t k = 0; k < kc; ++k) {
    __m256 b0 = _mm256_loadu_ps(b + k * 16);
    __m256 b1 = _mm256_loadu_ps(b + k * 16 + 8);
    const float* ak = a + k * 6;
    __m256 av;
    av = _mm256_broadcast_ss(ak + 0);
    c00 = _mm256_fmadd_ps(av, b0, c00);
    c01 = _mm256_fmadd_ps(av, b1, c01);
    av = _mm256_broadcast_ss(ak + 1);
    c10 = _mm256_fmadd_ps(av, b0, c10);
    c11 = _mm256_fmadd_ps(av, b1, c11);
    av = _mm256_broadcast_ss(ak + 2);
    c20 = _mm256_fmadd_ps(av, b0, c20);
    c21 = _mm256_fmadd_ps(av, b1, c21);
    av = _mm256_broadcast_ss(ak + 3);
    c30 = _mm256_fmadd_ps(av, b0, c30);
    c31 = _mm256_fmadd_ps(av, b1, c31);
    av = _mm256_broadcast_ss(ak + 4);
    c40 = _mm256_fmadd_ps(av, b0, c40);
    c41 = _mm256_fmadd_ps(av, b1, c41);
    av = _mm256_broadcast_ss(ak + 5);
    c50 = _mm256_fmadd_ps(av, b0, c50);
    c51 = _mm256_fmadd_ps(av, b1, c51);
  }
  __m256 acc[6][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
  for (int r = 0; r < 6; ++r) {
    float* cr = c + r * ldc;
    if (accumulate) {
      _mm256_storeu_ps(cr, _mm256_add_ps(_mm256_loadu_ps(cr), acc[r][0]));
      _mm256_storeu_ps(cr + 8, _mm256_add_ps(_mm256_loadu_ps(cr + 8), acc[r][1]));
    } else {
      _mm256_storeu_ps(cr, acc[r][0]);
      _mm256_storeu_ps(cr + 8, acc[r][1]);
    }
  }
}
#else
// Keeps the translation unit non-empty on other architectures.
typedef int cmlc_gemm_avx2_unused_t;
#endif
