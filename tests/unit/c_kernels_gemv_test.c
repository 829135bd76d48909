// SPDX-License-Identifier: Apache-2.0
// tests/unit/c_kernels_gemv_test.c: the streaming f32 GEMV kernels
// (kernels/x86_64/gemm_x86_64_gemv.c) called directly, for every ISA the CPU has, on odd sizes:
// the axpy form bit for bit against the scalar FMA chain of its contract (one FMA per k row, in
// k order), the dot form against an f64 loop within K * 2^-23 * sum |x y|, and the dot form's
// four-row groups bit for bit against the same rows computed one at a time (the grouping and
// the prefetches must not change any output). A strided activation (a_stride, c_stride) and
// rows past the last group (n % 4) are covered.
#include <math.h>
#include <stdlib.h>

#include "backends/c/kernels/generic/linalg_internal.h"
#include "test.h"

#if defined(CMLC_HAVE_X86_64)

typedef struct gv_kernels_t {
  const char* name;
  bool usable;
  cmlc__gemv_axpy_fn axpy;
  cmlc__gemv_dot_fn dot;
} gv_kernels_t;

static int gv_kernel_count(gv_kernels_t out[2]) {
  __builtin_cpu_init();
  out[0] = (gv_kernels_t){"avx2", __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"),
                          cmlc__gemv_axpy_f32_avx2, cmlc__gemv_dot_f32_avx2};
  out[1] = (gv_kernels_t){"avx512", __builtin_cpu_supports("avx512f"), cmlc__gemv_axpy_f32_avx512,
                          cmlc__gemv_dot_f32_avx512};
  return 2;
}

// Values that round in f32 products and sums (not exact eighths), from a fixed xorshift.
static void gv_fill(float* v, int64_t n, uint32_t seed) {
  uint32_t s = seed * 2654435761u + 1u;
  for (int64_t i = 0; i < n; ++i) {
    s ^= s << 13, s ^= s >> 17, s ^= s << 5;
    v[i] = (float)((double)(s >> 8) / 16777216.0 - 0.5) * 1.7f;
  }
}

static const int64_t kGvK[] = {1, 3, 4, 7, 17, 64, 67, 130};
static const int64_t kGvN[] = {1, 5, 15, 16, 17, 33, 63, 70};

TEST(gemv_axpy_bitwise_fma_chain) {
  gv_kernels_t ks[2];
  int failed = 0, ran = 0;
  for (int ki = 0; ki < gv_kernel_count(ks); ++ki) {
    if (!ks[ki].usable) continue;
    ++ran;
    for (size_t a = 0; a < sizeof kGvK / sizeof kGvK[0]; ++a) {
      for (size_t b = 0; b < sizeof kGvN / sizeof kGvN[0]; ++b) {
        const int64_t k = kGvK[a], n = kGvN[b], ldb = n + 3, a_stride = 2;
        float* x = malloc(sizeof(float) * (size_t)(k * a_stride));
        float* w = malloc(sizeof(float) * (size_t)(k * ldb));
        float* c = malloc(sizeof(float) * (size_t)n);
        gv_fill(x, k * a_stride, (uint32_t)(k * 131 + n));
        gv_fill(w, k * ldb, (uint32_t)(k + n * 17));
        ks[ki].axpy(k, x, a_stride, w, ldb, c, n);
        for (int64_t j = 0; j < n && !failed; ++j) {
          float want = 0.0f;
          for (int64_t kk = 0; kk < k; ++kk) want = fmaf(x[kk * a_stride], w[kk * ldb + j], want);
          if (c[j] != want) {
            fprintf(stderr, "%s axpy K%lld N%lld j%lld: %.9g want %.9g\n", ks[ki].name,
                    (long long)k, (long long)n, (long long)j, c[j], want);
            failed = 1;
          }
        }
        free(x), free(w), free(c);
      }
    }
  }
  ASSERT_EQ_INT(failed, 0);
  ASSERT_TRUE(ran > 0 || !__builtin_cpu_supports("avx2"));
}

TEST(gemv_dot_bound_and_row_grouping) {
  gv_kernels_t ks[2];
  int failed = 0;
  for (int ki = 0; ki < gv_kernel_count(ks); ++ki) {
    if (!ks[ki].usable) continue;
    for (size_t a = 0; a < sizeof kGvK / sizeof kGvK[0]; ++a) {
      for (size_t b = 0; b < sizeof kGvN / sizeof kGvN[0]; ++b) {
        const int64_t k = kGvK[a], n = kGvN[b], ldy = k + 5, c_stride = 3;
        float* x = malloc(sizeof(float) * (size_t)k);
        float* w = malloc(sizeof(float) * (size_t)(n * ldy));
        float* c = malloc(sizeof(float) * (size_t)(n * c_stride));
        float* one = malloc(sizeof(float) * (size_t)n);
        gv_fill(x, k, (uint32_t)(k * 7 + n));
        gv_fill(w, n * ldy, (uint32_t)(k * 3 + n * 11));
        for (int64_t j = 0; j < n * c_stride; ++j) c[j] = -1.0f;
        ks[ki].dot(k, x, w, ldy, c, c_stride, n);
        for (int64_t j = 0; j < n; ++j) ks[ki].dot(k, x, w + j * ldy, ldy, one + j, 1, 1);
        for (int64_t j = 0; j < n && !failed; ++j) {
          double want = 0, mag = 0;
          for (int64_t kk = 0; kk < k; ++kk) {
            want += (double)x[kk] * w[j * ldy + kk];
            mag += fabs((double)x[kk] * w[j * ldy + kk]);
          }
          const double got = c[j * c_stride];
          if (fabs(got - want) > (double)k * ldexp(1.0, -23) * mag || got != one[j] ||
              (c_stride > 1 && j + 1 < n && c[j * c_stride + 1] != -1.0f)) {
            fprintf(stderr, "%s dot K%lld N%lld j%lld: %.9g (alone %.9g) want %.9g\n", ks[ki].name,
                    (long long)k, (long long)n, (long long)j, got, one[j], want);
            failed = 1;
          }
        }
        free(x), free(w), free(c), free(one);
      }
    }
  }
  ASSERT_EQ_INT(failed, 0);
}

TEST_MAIN(TEST_ENTRY(gemv_axpy_bitwise_fma_chain), TEST_ENTRY(gemv_dot_bound_and_row_grouping))

#else

TEST(gemv_no_x86_kernels) { ASSERT_TRUE(true); }
TEST_MAIN(TEST_ENTRY(gemv_no_x86_kernels))

#endif
