// SPDX-License-Identifier: Apache-2.0
// tests/unit/base_test.c: statuses, dtypes, shapes and half-precision conversions.
#include <math.h>

#include "cml/shape.h"
#include "test.h"

TEST(status_codes) {
  ASSERT_EQ_INT(cml_status_code(CML_OK), CML_STATUS_OK);
  cml_status_t s = cml_status_from_code(CML_STATUS_UNIMPLEMENTED);
  ASSERT_EQ_INT(cml_status_code(s), CML_STATUS_UNIMPLEMENTED);
  ASSERT_STREQ(cml_status_message(s), "UNIMPLEMENTED");
  cml_status_free(s);
  s = cml_status_make(CML_STATUS_INVALID_ARGUMENT, "Add: %s vs %s", "(Float32)[2]", "(Int32)[2]");
  ASSERT_EQ_INT(cml_status_code(s), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STREQ(cml_status_message(s), "Add: (Float32)[2] vs (Int32)[2]");
  cml_status_t c = cml_status_clone(s);
  s = cml_status_annotate(s, "building %s", "main");
  ASSERT_STREQ(cml_status_message(s), "building main: Add: (Float32)[2] vs (Int32)[2]");
  ASSERT_EQ_INT(cml_status_code(s), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STREQ(cml_status_message(c), "Add: (Float32)[2] vs (Int32)[2]");
  // A NULL format (a misuse, as printf(NULL)) adds nothing instead of crashing in vsnprintf.
  const char* volatile no_format = NULL;
  s = cml_status_annotate(s, no_format, 0);
  ASSERT_STREQ(cml_status_message(s), "building main: Add: (Float32)[2] vs (Int32)[2]");
  cml_status_t bare = cml_status_make(CML_STATUS_NOT_FOUND, no_format, 0);
  ASSERT_EQ_INT(cml_status_code(bare), CML_STATUS_NOT_FOUND);
  ASSERT_STREQ(cml_status_message(bare), "NOT_FOUND");
  cml_status_free(bare);
  cml_status_free(s);
  cml_status_free(c);
  ASSERT_TRUE(cml_status_make(CML_STATUS_OK, "ignored") == CML_OK);
  ASSERT_STREQ(cml_status_code_name((cml_status_code_t)99), "UNKNOWN");
  // The message taken as it is (no format: "%s" stays), for callers without varargs.
  s = cml_status_make_message(CML_STATUS_NOT_FOUND, "no file \"a%sb\" 100%");
  ASSERT_EQ_INT(cml_status_code(s), CML_STATUS_NOT_FOUND);
  ASSERT_STREQ(cml_status_message(s), "no file \"a%sb\" 100%");
  cml_status_free(s);
  s = cml_status_make_message(CML_STATUS_CANCELLED, NULL);
  ASSERT_EQ_INT(cml_status_code(s), CML_STATUS_CANCELLED);
  ASSERT_STREQ(cml_status_message(s), "CANCELLED");
  cml_status_free(s);
  ASSERT_TRUE(cml_status_make_message(CML_STATUS_OK, "ignored") == CML_OK);
  // A code out of range is INTERNAL.
  s = cml_status_from_code((cml_status_code_t)CML_STATUS_CODE_COUNT);
  ASSERT_EQ_INT(cml_status_code(s), CML_STATUS_INTERNAL);
}

TEST(dtypes) {
  ASSERT_STREQ(cml_dtype_name(CML_DTYPE_F32), "Float32");
  ASSERT_STREQ(cml_dtype_name(CML_DTYPE_BF16), "BFloat16");
  ASSERT_STREQ(cml_dtype_name((cml_dtype_t)200), "unknown");
  ASSERT_EQ_INT(cml_dtype_from_name("Float32"), CML_DTYPE_F32);
  ASSERT_EQ_INT(cml_dtype_from_name("f32"), CML_DTYPE_F32);
  ASSERT_EQ_INT(cml_dtype_from_name("PRED"), CML_DTYPE_BOOL);
  ASSERT_EQ_INT(cml_dtype_from_name("S4"), CML_DTYPE_I4);
  ASSERT_EQ_INT(cml_dtype_from_name("ui8"), CML_DTYPE_U8);
  ASSERT_EQ_INT(cml_dtype_from_name("nope"), CML_DTYPE_INVALID);
  ASSERT_EQ_INT(cml_dtype_bits(CML_DTYPE_BOOL), 8);
  ASSERT_EQ_INT(cml_dtype_bits(CML_DTYPE_C128), 128);
  ASSERT_EQ_INT(cml_dtype_bits(CML_DTYPE_U2), 2);
  ASSERT_TRUE(cml_dtype_is_packed(CML_DTYPE_I4));
  ASSERT_FALSE(cml_dtype_is_packed(CML_DTYPE_I8));
  ASSERT_TRUE(cml_dtype_is_supported(CML_DTYPE_F8E5M2));
  ASSERT_FALSE(cml_dtype_is_supported(CML_DTYPE_TOKEN));
  ASSERT_TRUE(cml_dtype_is_supported(CML_DTYPE_U4));
  ASSERT_EQ_INT(cml_dtype_real_part(CML_DTYPE_C64), CML_DTYPE_F32);
  ASSERT_STREQ(cml_dtype_stablehlo_name(CML_DTYPE_U16), "ui16");
  ASSERT_STREQ(cml_dtype_stablehlo_name(CML_DTYPE_BOOL), "i1");
  ASSERT_STREQ(cml_dtype_stablehlo_name(CML_DTYPE_C128), "complex<f64>");
}

TEST(shapes) {
  cml_shape_t s;
  ASSERT_STATUS_OK(cml_shape_init(&s, CML_DTYPE_F32, 2, (int64_t[]){2, 3}));
  ASSERT_EQ_INT(cml_shape_element_count(&s), 6);
  ASSERT_EQ_INT(cml_shape_byte_size(&s), 24);
  char text[64];
  ASSERT_STREQ(cml_shape_format(&s, text, sizeof text), "(Float32)[2, 3]");
  cml_shape_t sc = cml_shape_scalar(CML_DTYPE_I8);
  ASSERT_STREQ(cml_shape_format(&sc, text, sizeof text), "(Int8)");
  ASSERT_EQ_INT(cml_shape_byte_size(&sc), 1);
  cml_shape_t p = cml_shape_make(CML_DTYPE_I4, 1, (int64_t[]){5});
  ASSERT_EQ_INT(cml_shape_byte_size(&p), 3);  // 20 bits -> 3 bytes
  cml_shape_t z = cml_shape_make(CML_DTYPE_F64, 3, (int64_t[]){4, 0, 7});
  ASSERT_EQ_INT(cml_shape_element_count(&z), 0);
  ASSERT_EQ_INT(cml_shape_byte_size(&z), 0);
  ASSERT_STATUS_CODE(cml_shape_init(&s, CML_DTYPE_F32, 1, (int64_t[]){-1}),
                     CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_shape_init(&s, CML_DTYPE_F32, CML_MAX_RANK + 1, (int64_t[20]){0}),
                     CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_shape_init(&s, CML_DTYPE_TOKEN, 0, NULL), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_OK(cml_shape_init(&s, CML_DTYPE_F8E5M2, 0, NULL));
  ASSERT_STATUS_CODE(
      cml_shape_init(&s, CML_DTYPE_F32, 4, (int64_t[]){1 << 20, 1 << 20, 1 << 20, 1 << 20}),
      CML_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ_INT(cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){-3}).dtype, CML_DTYPE_INVALID);
}

TEST(shape_parse) {
  cml_shape_t s;
  ASSERT_STATUS_OK(cml_shape_parse("(Float32)[2, 3]", &s));
  ASSERT_TRUE(cml_shape_equal(&s, &(cml_shape_t){CML_DTYPE_F32, 2, {2, 3}}));
  ASSERT_STATUS_OK(cml_shape_parse("bf16[4,0,5]", &s));
  ASSERT_EQ_INT(s.dtype, CML_DTYPE_BF16);
  ASSERT_EQ_INT(s.rank, 3);
  ASSERT_EQ_INT(s.dims[2], 5);
  ASSERT_STATUS_OK(cml_shape_parse("i32", &s));
  ASSERT_EQ_INT(s.rank, 0);
  ASSERT_STATUS_OK(cml_shape_parse("(Bool)", &s));
  ASSERT_EQ_INT(s.dtype, CML_DTYPE_BOOL);
  ASSERT_STATUS_CODE(cml_shape_parse("f33[2]", &s), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_shape_parse("f32[2,", &s), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_shape_parse("f32[2]x", &s), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_shape_parse("f32[-2]", &s), CML_STATUS_INVALID_ARGUMENT);
}

TEST(f16_conversions) {
  // Hand-derived IEEE binary16 bit patterns.
  ASSERT_EQ_INT(cml_f32_to_f16(1.0f), 0x3C00);
  ASSERT_EQ_INT(cml_f32_to_f16(-2.0f), 0xC000);
  ASSERT_EQ_INT(cml_f32_to_f16(65504.0f), 0x7BFF);
  ASSERT_EQ_INT(cml_f32_to_f16(65519.0f), 0x7BFF);
  ASSERT_EQ_INT(cml_f32_to_f16(65520.0f), 0x7C00);  // tie rounds to even: infinity
  ASSERT_EQ_INT(cml_f32_to_f16(0x1p-24f), 0x0001);
  ASSERT_EQ_INT(cml_f32_to_f16(0x1p-25f), 0x0000);  // tie to even: 0
  ASSERT_EQ_INT(cml_f32_to_f16(0x3p-25f), 0x0002);  // 1.5 quanta -> 2
  ASSERT_EQ_INT(cml_f32_to_f16(0x1p-14f), 0x0400);  // smallest normal
  ASSERT_EQ_INT(cml_f32_to_f16(1.0f / 3.0f), 0x3555);
  ASSERT_EQ_INT(cml_f32_to_f16(1.0f + 0x1p-11f), 0x3C00);  // tie -> even
  ASSERT_EQ_INT(cml_f32_to_f16(1.0f + 0x3p-11f), 0x3C02);  // tie -> even (up)
  ASSERT_EQ_INT(cml_f32_to_f16(-0.0f), 0x8000);
  ASSERT_EQ_INT(cml_f32_to_f16(INFINITY), 0x7C00);
  ASSERT_EQ_INT(cml_f32_to_f16(-INFINITY), 0xFC00);
  ASSERT_EQ_INT(cml_f32_to_f16(NAN) & 0x7E00, 0x7E00);
  ASSERT_EQ_DBL(cml_f16_to_f32(0x3555), 0.333251953125);
  ASSERT_EQ_DBL(cml_f16_to_f32(0x0001), 0x1p-24);
  ASSERT_EQ_DBL(cml_f16_to_f32(0x7BFF), 65504.0);
  ASSERT_TRUE(isnan(cml_f16_to_f32(0x7E00)));
  ASSERT_TRUE(signbit(cml_f16_to_f32(0x8000)));
  // Every f16 value round-trips.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = cml_f16_to_f32((uint16_t)h);
    if (isnan(f)) continue;
    ASSERT_EQ_INT(cml_f32_to_f16(f), h);
    ASSERT_EQ_INT(cml_f64_to_f16((double)f), h);
  }
  // Double rounding is avoided: 1 + 2^-11 + 2^-40 is above the tie, so it rounds up.
  ASSERT_EQ_INT(cml_f64_to_f16(1.0 + 0x1p-11 + 0x1p-40), 0x3C01);
}

TEST(bf16_conversions) {
  ASSERT_EQ_INT(cml_f32_to_bf16(1.0f), 0x3F80);
  ASSERT_EQ_INT(cml_f32_to_bf16(1.0f + 0x1p-8f), 0x3F80);  // tie -> even
  ASSERT_EQ_INT(cml_f32_to_bf16(1.0f + 0x3p-8f), 0x3F82);  // tie -> even (up)
  ASSERT_EQ_INT(cml_f32_to_bf16(3.14159265f), 0x4049);
  ASSERT_EQ_INT(cml_f32_to_bf16(-0.0f), 0x8000);
  ASSERT_EQ_INT(cml_f32_to_bf16(INFINITY), 0x7F80);
  ASSERT_EQ_INT(cml_f32_to_bf16(NAN) & 0x7FC0, 0x7FC0);
  ASSERT_EQ_INT(cml_f32_to_bf16(3.4e38f), 0x7F80);  // above the largest bf16: rounds to Inf
  ASSERT_EQ_DBL(cml_bf16_to_f32(0x4049), 3.140625);
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = cml_bf16_to_f32((uint16_t)h);
    if (isnan(f)) continue;
    ASSERT_EQ_INT(cml_f32_to_bf16(f), h);
    ASSERT_EQ_INT(cml_f64_to_bf16((double)f), h);
  }
  ASSERT_EQ_INT(cml_f64_to_bf16(1.0 + 0x1p-8 + 0x1p-30), 0x3F81);
}

TEST(allocator) {
  cml_allocator_t a = cml_allocator_system();
  void* p = cml_allocator_malloc(a, 100, 64);
  ASSERT_TRUE(p != NULL);
  ASSERT_EQ_INT((uintptr_t)p % 64, 0);
  cml_allocator_free(a, p, 100);
  ASSERT_TRUE(cml_allocator_malloc(a, 0, 64) == NULL);
}

TEST_MAIN(TEST_ENTRY(status_codes), TEST_ENTRY(dtypes), TEST_ENTRY(shapes), TEST_ENTRY(shape_parse),
          TEST_ENTRY(f16_conversions), TEST_ENTRY(bf16_conversions), TEST_ENTRY(allocator))
