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
  // avx2=false alone turns AVX-512 off too (it builds on AVX2); it once kept it.
  ASSERT_EQ_INT(pick(all, true, false, false), CMLC_ISA_SCALAR);
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
  // The L1 data cache size: unknown (0) or a plausible size (the quantized GEMV's prefetch
  // choice reads it).
  ASSERT_TRUE(a.l1d_bytes == b.l1d_bytes);
  ASSERT_TRUE(a.l1d_bytes == 0 || (a.l1d_bytes >= 4096 && a.l1d_bytes <= (16 << 20)));
  fprintf(stderr, "  (L1 data cache: %lld bytes)\n", (long long)a.l1d_bytes);
#if defined(CMLC_HAVE_X86_64)
  // Every AVX2 + FMA CPU has F16C.
  if (a.avx2_fma) ASSERT_TRUE(a.f16c);
#endif
}

// The inline 16-bit conversions give base/half.c's values: f16 -> f32 and bf16 -> f32 for
// every bit pattern; f32 -> f16 and f32 -> bf16 for every f32 whose low 13 bits are one of a
// set covering the rounding cases (0, ties, just below and above) and for 2^20 pseudo-random
// patterns (NaN payloads, subnormals, overflow to infinity included).
// The 16-bit conversions (base/half_inline.h; base/half.c's f32 ones are the same functions)
// against independent oracles: every f16 and bf16 pattern widened against its value built in
// double; f32 -> f16 / bf16 against base/half.c's double path (frexp and nearbyint: another
// algorithm) on every exponent with the rounding-relevant low bits and a million random
// patterns, NaNs by their rule (f16: sign | 0x7E00; bf16: the payload's top bits, quieted).
static double half_value(uint32_t h, int man_bits, int exp_bits) {
  const uint32_t man = h & ((1u << man_bits) - 1), emax = (1u << exp_bits) - 1;
  const uint32_t e = (h >> man_bits) & emax;
  const int bias = (int)(emax >> 1);
  const double sign = (h >> (man_bits + exp_bits)) & 1 ? -1.0 : 1.0;
  if (e == emax) return man ? NAN : sign * INFINITY;
  if (e == 0) return sign * ldexp((double)man, 1 - bias - man_bits);
  return sign * ldexp((double)(man | (1u << man_bits)), (int)e - bias - man_bits);
}

static int check_narrow(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  int bad = 0;
  const uint16_t h = cml__f32_to_f16(x), b = cml__f32_to_bf16(x);
  if (isnan(x)) {
    bad += h != (uint16_t)(((u >> 16) & 0x8000u) | 0x7E00u);
    bad += b != (uint16_t)((u >> 16) | 0x0040u);
  } else {
    bad += h != cml_f64_to_f16((double)x);
    bad += b != cml_f64_to_bf16((double)x);
  }
  if (bad) {
    fprintf(stderr, "%08x: f16 %04x (double path %04x), bf16 %04x (double path %04x)\n",
            (unsigned)u, h, cml_f64_to_f16((double)x), b, cml_f64_to_bf16((double)x));
  }
  return bad;
}

TEST(half_conversions_match_independent_oracles) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float a = cml__f16_to_f32((uint16_t)h), c = cml__bf16_to_f32((uint16_t)h);
    const double wa = half_value(h, 10, 5), wc = half_value(h, 7, 8);
    ASSERT_TRUE(isnan(wa) ? isnan(a) : (double)a == wa && !signbit(a) == !signbit(wa));
    ASSERT_TRUE(isnan(wc) ? isnan(c) : (double)c == wc && !signbit(c) == !signbit(wc));
    // NaN payloads survive widening.
    uint32_t ua, uc;
    memcpy(&ua, &a, sizeof ua);
    memcpy(&uc, &c, sizeof uc);
    if (isnan(wa)) ASSERT_EQ_INT((int)((ua >> 13) & 0x3FFu), (int)(h & 0x3FFu));
    if (isnan(wc)) ASSERT_EQ_INT((int)(uc >> 16), (int)h);
  }
  static const uint32_t low[] = {0,      1,      0x7FF,  0xFFF,  0x1000, 0x1001,
                                 0x17FF, 0x1FFF, 0x7FFF, 0x8000, 0x8001, 0xFFFF};
  int bad = 0;
  for (uint32_t top = 0; top < (1u << 19) && bad < 5; ++top) {
    for (size_t l = 0; l < sizeof low / sizeof low[0]; ++l) {
      bad += check_narrow((top << 13) | (low[l] & 0x1FFFu));
      bad += check_narrow((top << 13) ^ low[l]);
    }
  }
  uint64_t r = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < (1 << 20) && bad < 5; ++i) {
    r = r * 6364136223846793005ull + 1442695040888963407ull;
    bad += check_narrow((uint32_t)(r >> 32));
  }
  ASSERT_EQ_INT(bad, 0);
}

TEST_MAIN(TEST_ENTRY(dtype_size_matches_dtype_bits), TEST_ENTRY(dtype_size_out_of_range_is_zero),
          TEST_ENTRY(row_major_strides), TEST_ENTRY(isa_needs_f16c),
          TEST_ENTRY(cpu_detect_is_consistent),
          TEST_ENTRY(half_conversions_match_independent_oracles))
