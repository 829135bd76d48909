// SPDX-License-Identifier: Apache-2.0
// kernels/x86_64/gemm_x86_64_avx512.c: the AVX-512F f32 GEMM micro-kernel (12 x 32 tile:
// twenty-four zmm accumulators, two B vectors and one broadcast A value per k step). Compiled
// for the target with a function attribute; only called when options->isa is AVX512.
#include "backends/c/kernels/generic/linalg_internal.h"

#if defined(CMLC__GEMM_HAVE_X86)
#include <immintrin.h>

#define CMLC_AVX512_ROW(r)                                     \
  do {                                                         \
    __m512 av_ = _mm512_set1_ps(ak[r]);                        \
    acc##r##0 = _mm512_fmadd_ps(av_, b0, acc##r##0);           \
    acc##r##1 = _mm512_fmadd_ps(av_, b1, acc##r##1);           \
  } while (0)

#define CMLC_AVX512_STORE(r)                                                          \
  do {                                                                                \
    float* cr_ = c + (r) * ldc;                                                       \
    if (accumulate) {                                                                 \
      _mm512_storeu_ps(cr_, _mm512_add_ps(_mm512_loadu_ps(cr_), acc##r##0));          \
      _mm512_storeu_ps(cr_ + 16, _mm512_add_ps(_mm512_loadu_ps(cr_ + 16), acc##r##1)); \
    } else {                                                                          \
      _mm512_storeu_ps(cr_, acc##r##0);                                               \
      _mm512_storeu_ps(cr_ + 16, acc##r##1);                                          \
    }                                                                                 \
  } while (0)

__attribute__((target("avx512f"))) void cmlc__gemm_ukernel_f32_avx512_12x32(
    int64_t kc, const float* a, const float* b, float* c, int64_t ldc, int accumulate) {
  __m512 acc00 = _mm512_setzero_ps(), acc01 = _mm512_setzero_ps();
  __m512 acc10 = _mm512_setzero_ps(), acc11 = _mm512_setzero_ps();
  __m512 acc20 = _mm512_setzero_ps(), acc21 = _mm512_setzero_ps();
  __m512 acc30 = _mm512_setzero_ps(), acc31 = _mm512_setzero_ps();
  __m512 acc40 = _mm512_setzero_ps(), acc41 = _mm512_setzero_ps();
  __m512 acc50 = _mm512_setzero_ps(), acc51 = _mm512_setzero_ps();
  __m512 acc60 = _mm512_setzero_ps(), acc61 = _mm512_setzero_ps();
  __m512 acc70 = _mm512_setzero_ps(), acc71 = _mm512_setzero_ps();
  __m512 acc80 = _mm512_setzero_ps(), acc81 = _mm512_setzero_ps();
  __m512 acc90 = _mm512_setzero_ps(), acc91 = _mm512_setzero_ps();
  // Rows 10 and 11 (accA*, accB*) are spelled out: the row macro pastes one digit.
  __m512 accA0 = _mm512_setzero_ps(), accA1 = _mm512_setzero_ps();
  __m512 accB0 = _mm512_setzero_ps(), accB1 = _mm512_setzero_ps();
  for (int64_t k = 0; k < kc; ++k) {
    __m512 b0 = _mm512_loadu_ps(b + k * 32);
    __m512 b1 = _mm512_loadu_ps(b + k * 32 + 16);
    const float* ak = a + k * 12;
    CMLC_AVX512_ROW(0);
    CMLC_AVX512_ROW(1);
    CMLC_AVX512_ROW(2);
    CMLC_AVX512_ROW(3);
    CMLC_AVX512_ROW(4);
    CMLC_AVX512_ROW(5);
    CMLC_AVX512_ROW(6);
    CMLC_AVX512_ROW(7);
    CMLC_AVX512_ROW(8);
    CMLC_AVX512_ROW(9);
    {
      __m512 av = _mm512_set1_ps(ak[10]);
      accA0 = _mm512_fmadd_ps(av, b0, accA0);
      accA1 = _mm512_fmadd_ps(av, b1, accA1);
      av = _mm512_set1_ps(ak[11]);
      accB0 = _mm512_fmadd_ps(av, b0, accB0);
      accB1 = _mm512_fmadd_ps(av, b1, accB1);
    }
  }
  CMLC_AVX512_STORE(0);
  CMLC_AVX512_STORE(1);
  CMLC_AVX512_STORE(2);
  CMLC_AVX512_STORE(3);
  CMLC_AVX512_STORE(4);
  CMLC_AVX512_STORE(5);
  CMLC_AVX512_STORE(6);
  CMLC_AVX512_STORE(7);
  CMLC_AVX512_STORE(8);
  CMLC_AVX512_STORE(9);
  {
    float* c10 = c + 10 * ldc;
    float* c11 = c + 11 * ldc;
    if (accumulate) {
      _mm512_storeu_ps(c10, _mm512_add_ps(_mm512_loadu_ps(c10), accA0));
      _mm512_storeu_ps(c10 + 16, _mm512_add_ps(_mm512_loadu_ps(c10 + 16), accA1));
      _mm512_storeu_ps(c11, _mm512_add_ps(_mm512_loadu_ps(c11), accB0));
      _mm512_storeu_ps(c11 + 16, _mm512_add_ps(_mm512_loadu_ps(c11 + 16), accB1));
    } else {
      _mm512_storeu_ps(c10, accA0);
      _mm512_storeu_ps(c10 + 16, accA1);
      _mm512_storeu_ps(c11, accB0);
      _mm512_storeu_ps(c11 + 16, accB1);
    }
  }
}
#else
// Keeps the translation unit non-empty on other architectures.
typedef int cmlc_gemm_avx512_unused_t;
#endif
