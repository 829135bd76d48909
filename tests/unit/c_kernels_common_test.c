// SPDX-License-Identifier: Apache-2.0
// tests/unit/c_kernels_common_test.c: the kernels' common layer (kernels/common.h): the dtype
// traits table against the public dtype facts, and row-major strides; and the ISA choice from the
// one CPU-feature struct (cpu.c), F16C included.
#include <stdio.h>
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

// The inline 16-bit conversions give base/half.c's values: f16 -> f32 and bf16 -> f32 for
// every bit pattern; f32 -> f16 and f32 -> bf16 for every f32 whose low 13 bits are one of a
// set covering the rounding cases (0, ties, just below and above) and for 2^20 pseudo-random
// patterns (NaN payloads, subnormals, overflow to infinity included).
TEST(inline_half_conversions_match_base) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float a = cmlc_f16_to_f32_inline((uint16_t)h), b = cml_f16_to_f32((uint16_t)h);
    ASSERT_TRUE(memcmp(&a, &b, sizeof a) == 0);
    const float c = cmlc_bf16_to_f32_inline((uint16_t)h), d = cml_bf16_to_f32((uint16_t)h);
    ASSERT_TRUE(memcmp(&c, &d, sizeof c) == 0);
  }
  static const uint32_t low[] = {0,      1,      0x7FF,  0xFFF,  0x1000, 0x1001,
                                 0x17FF, 0x1FFF, 0x7FFF, 0x8000, 0x8001, 0xFFFF};
  int bad = 0;
  for (uint32_t top = 0; top < (1u << 19) && bad < 5; ++top) {
    for (size_t l = 0; l < sizeof low / sizeof low[0]; ++l) {
      const uint32_t u = (top << 13) | (low[l] & 0x1FFFu);
      float x;
      memcpy(&x, &u, sizeof x);
      if (cmlc_f32_to_f16_inline(x) != cml_f32_to_f16(x) && bad++ < 5)
        fprintf(stderr, "f16 of %08x: %04x, base %04x\n", (unsigned)u, cmlc_f32_to_f16_inline(x),
                cml_f32_to_f16(x));
      const uint32_t v = (top << 13) ^ low[l];
      memcpy(&x, &v, sizeof x);
      if (cmlc_f32_to_bf16_inline(x) != cml_f32_to_bf16(x) && bad++ < 5)
        fprintf(stderr, "bf16 of %08x: %04x, base %04x\n", (unsigned)v, cmlc_f32_to_bf16_inline(x),
                cml_f32_to_bf16(x));
    }
  }
  uint64_t r = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < (1 << 20) && bad < 5; ++i) {
    r = r * 6364136223846793005ull + 1442695040888963407ull;
    const uint32_t u = (uint32_t)(r >> 32);
    float x;
    memcpy(&x, &u, sizeof x);
    if (cmlc_f32_to_f16_inline(x) != cml_f32_to_f16(x) ||
        cmlc_f32_to_bf16_inline(x) != cml_f32_to_bf16(x)) {
      if (bad++ < 5) fprintf(stderr, "random %08x differs\n", (unsigned)u);
    }
  }
  ASSERT_EQ_INT(bad, 0);
}

TEST_MAIN(TEST_ENTRY(dtype_size_matches_dtype_bits), TEST_ENTRY(dtype_size_out_of_range_is_zero),
          TEST_ENTRY(row_major_strides), TEST_ENTRY(isa_needs_f16c),
          TEST_ENTRY(cpu_detect_is_consistent), TEST_ENTRY(inline_half_conversions_match_base))
