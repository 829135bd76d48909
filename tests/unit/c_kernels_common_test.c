// SPDX-License-Identifier: Apache-2.0
// tests/unit/c_kernels_common_test.c: the kernels' common layer (kernels/common.h): the dtype
// traits table against the public dtype facts, and row-major strides; and the ISA choice from the
// one CPU-feature struct (cpu.c), F16C included.
#include <string.h>

#include "backends/c/engine_internal.h"
#include "backends/c/kernels/common.h"
#include "test.h"

TEST(dtype_size_matches_dtype_bits) {
  for (int d = 0; d < CML_DTYPE_COUNT; ++d) {
    const cml_dtype_t dt = (cml_dtype_t)d;
    const size_t want =
        cml_dtype_is_valid(dt) && !cml_dtype_is_packed(dt) ? (size_t)cml_dtype_bits(dt) / 8 : 0;
    ASSERT_EQ_U64(cmlc_dtype_size(dt), want);
  }
  ASSERT_EQ_U64(cmlc_dtype_size(CML_DTYPE_BOOL), 1);
  ASSERT_EQ_U64(cmlc_dtype_size(CML_DTYPE_BF16), 2);
  ASSERT_EQ_U64(cmlc_dtype_size(CML_DTYPE_C128), 16);
  ASSERT_EQ_U64(cmlc_dtype_size(CML_DTYPE_I4), 0);
  ASSERT_EQ_U64(cmlc_dtype_size(CML_DTYPE_TOKEN), 0);
  ASSERT_EQ_U64(cmlc_dtype_size(CML_DTYPE_INVALID), 0);
}

TEST(dtype_size_out_of_range_is_zero) {
  ASSERT_EQ_U64(cmlc_dtype_size(CML_DTYPE_COUNT), 0);
  ASSERT_EQ_U64(cmlc_dtype_size((cml_dtype_t)-1), 0);
  ASSERT_EQ_U64(cmlc_dtype_size((cml_dtype_t)1000), 0);
}

TEST(row_major_strides) {
  const int64_t dims[] = {2, 3, 4, 5};
  int64_t strides[4] = {0};
  cmlc_row_major_strides(4, dims, strides);
  ASSERT_EQ_INT(strides[0], 60);
  ASSERT_EQ_INT(strides[1], 20);
  ASSERT_EQ_INT(strides[2], 5);
  ASSERT_EQ_INT(strides[3], 1);
  cml_shape_t s;
  ASSERT_STATUS_OK(cml_shape_init(&s, CML_DTYPE_F32, 3, (const int64_t[]){7, 0, 3}));
  int64_t ss[3] = {0};
  cmlc_shape_strides(&s, ss);
  ASSERT_EQ_INT(ss[0], 0);
  ASSERT_EQ_INT(ss[1], 3);
  ASSERT_EQ_INT(ss[2], 1);
  cmlc_row_major_strides(0, dims, strides);  // rank 0 writes nothing
  ASSERT_EQ_INT(strides[0], 60);
}

static cmlc_isa_t pick(cmlc_cpu_features_t f, bool allow_avx512, bool allow_avx2, bool reference) {
  cmlc_options_t o;
  memset(&o, 0xff, sizeof o);
  cmlc_options_select_isa(&f, allow_avx512, allow_avx2, reference, &o);
  return o.isa;
}

TEST(isa_needs_f16c) {
  cmlc_cpu_features_t all = {.avx2_fma = true, .f16c = true, .avx512 = true};
  ASSERT_EQ_INT(pick(all, true, true, false), CMLC_ISA_AVX512);
  ASSERT_EQ_INT(pick(all, false, true, false), CMLC_ISA_AVX2);
  ASSERT_EQ_INT(pick(all, false, false, false), CMLC_ISA_SCALAR);
  ASSERT_EQ_INT(pick(all, true, true, true), CMLC_ISA_SCALAR);
  cmlc_cpu_features_t no_f16c = all;
  no_f16c.f16c = false;  // the elementwise SIMD kernels convert f16 with F16C
  ASSERT_EQ_INT(pick(no_f16c, true, true, false), CMLC_ISA_SCALAR);
  ASSERT_EQ_INT(pick(no_f16c, false, true, false), CMLC_ISA_SCALAR);
  cmlc_cpu_features_t avx2_only = {.avx2_fma = true, .f16c = true};
  ASSERT_EQ_INT(pick(avx2_only, true, true, false), CMLC_ISA_AVX2);
}

TEST(cpu_detect_is_consistent) {
  cmlc_cpu_features_t a, b;
  cmlc_cpu_detect(&a);
  cmlc_cpu_detect(&b);
  ASSERT_TRUE(a.f16c == b.f16c && a.avx2_fma == b.avx2_fma && a.avx512 == b.avx512);
  // avx512_bf16 and avx512_vnni are only reported together with AVX-512.
  ASSERT_TRUE(!a.avx512_bf16 || a.avx512);
  ASSERT_TRUE(!a.avx512_vnni || a.avx512);
#if defined(CMLC_HAVE_X86_64)
  // Every AVX2 + FMA CPU has F16C.
  if (a.avx2_fma) ASSERT_TRUE(a.f16c);
#endif
}

TEST_MAIN(TEST_ENTRY(dtype_size_matches_dtype_bits), TEST_ENTRY(dtype_size_out_of_range_is_zero),
          TEST_ENTRY(row_major_strides), TEST_ENTRY(isa_needs_f16c),
          TEST_ENTRY(cpu_detect_is_consistent))
