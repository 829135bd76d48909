// SPDX-License-Identifier: Apache-2.0
// tests/unit/f8_dtypes_test.c: the float8/float4 conversions (src/base/float8.c) checked bit
// for bit against ml_dtypes through tests/data/f8/ (made by scripts/gen_f8_fixtures.py), and
// ConvertDType / Bitcast / movement ops with those dtypes on the `c` backend.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cml/shape.h"
#include "test.h"

static const cml_dtype_t f8_types[] = {
    CML_DTYPE_F8E4M3FN,      CML_DTYPE_F8E5M2,     CML_DTYPE_F8E4M3,
    CML_DTYPE_F8E3M4,        CML_DTYPE_F8E4M3FNUZ, CML_DTYPE_F8E5M2FNUZ,
    CML_DTYPE_F8E4M3B11FNUZ, CML_DTYPE_F8E8M0FNU,  CML_DTYPE_F4E2M1FN,
};

static uint32_t f8_bits(float f) {
  uint32_t b;
  memcpy(&b, &f, sizeof b);
  return b;
}

static float f8_float(uint32_t b) {
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}

// Opens <repo>/tests/data/f8/<dtype name>.txt, next to this file's directory.
static FILE* f8_open(cml_dtype_t dtype) {
  const char* file = __FILE__;
  const char* cut = strstr(file, "unit/f8_dtypes_test.c");
  const int prefix = cut ? (int)(cut - file) : 0;
  char path[1024];
  snprintf(path, sizeof path, "%.*sdata/f8/%s.txt", prefix, file, cml_dtype_name(dtype));
  FILE* fp = fopen(path, "r");
  if (!fp) fprintf(stderr, "cannot open %s\n", path);
  return fp;
}

// The same value, NaNs compared by their sign only.
static bool f8_same(uint32_t got, uint32_t want) {
  if (isnan(f8_float(want))) return isnan(f8_float(got)) && (got >> 31) == (want >> 31);
  return got == want;
}

TEST(predicates) {
  for (size_t t = 0; t < sizeof f8_types / sizeof f8_types[0]; ++t) {
    ASSERT_TRUE(cml_dtype_is_minifloat(f8_types[t]));
    ASSERT_TRUE(cml_dtype_is_supported(f8_types[t]));
    ASSERT_TRUE(cml_dtype_is_storage_only(f8_types[t]));
    ASSERT_FALSE(cml_dtype_is_float(f8_types[t]));
  }
  ASSERT_TRUE(cml_dtype_is_packed(CML_DTYPE_F4E2M1FN));
  ASSERT_FALSE(cml_dtype_is_minifloat(CML_DTYPE_F16));
  ASSERT_FALSE(cml_dtype_is_storage_only(CML_DTYPE_F32));
  ASSERT_TRUE(cml_dtype_is_storage_only(CML_DTYPE_I1));
  ASSERT_TRUE(cml_dtype_is_storage_only(CML_DTYPE_U1));
  ASSERT_FALSE(cml_dtype_is_minifloat((cml_dtype_t)200));
  ASSERT_TRUE(isnan(cml_f8_to_f32(CML_DTYPE_F32, 0x3C)));
  ASSERT_EQ_INT(cml_f32_to_f8(CML_DTYPE_I8, 1.0f), 0);
  ASSERT_STREQ(cml_dtype_stablehlo_name(CML_DTYPE_F8E4M3FN), "f8E4M3FN");
  ASSERT_STREQ(cml_dtype_stablehlo_name(CML_DTYPE_F4E2M1FN), "f4E2M1FN");
}

// Every fixture record: decoding every bit pattern, encoding from f32 and from f64 (the same
// value, so the same single rounding), and through f16/bf16 when the input is exact there.
TEST(against_ml_dtypes) {
  for (size_t t = 0; t < sizeof f8_types / sizeof f8_types[0]; ++t) {
    const cml_dtype_t d = f8_types[t];
    FILE* fp = f8_open(d);
    ASSERT_TRUE(fp != NULL);
    char line[128];
    int decoded = 0, encoded = 0, failures = 0;
    while (fgets(line, sizeof line, fp)) {
      unsigned a, b;
      if (line[0] == 'd' && sscanf(line + 1, "%x %x", &a, &b) == 2) {
        ++decoded;
        const uint32_t got = f8_bits(cml_f8_to_f32(d, (uint8_t)a));
        const double wide = cml_f8_to_f64(d, (uint8_t)a);
        if (!f8_same(got, b) || !f8_same(f8_bits((float)wide), b)) {
          if (failures++ < 5)
            fprintf(stderr, "%s: decode %02x: got %08x want %08x\n", cml_dtype_name(d), a, got, b);
        }
      } else if (line[0] == 'e' && sscanf(line + 1, "%x %x", &a, &b) == 2) {
        ++encoded;
        const float x = f8_float(a);
        const unsigned got = cml_f32_to_f8(d, x), got64 = cml_f64_to_f8(d, (double)x);
        if (got != b || got64 != b) {
          if (failures++ < 5)
            fprintf(stderr, "%s: encode %08x (%g): got %02x/%02x want %02x\n", cml_dtype_name(d), a,
                    (double)x, got, got64, b);
        }
        // Through f16 / bf16 when x is exact there.
        const uint16_t h = cml_f32_to_f16(x), bh = cml_f32_to_bf16(x);
        if (!isnan(x) && cml_f16_to_f32(h) == x && cml_f32_to_f8(d, cml_f16_to_f32(h)) != b)
          ++failures;
        if (!isnan(x) && cml_bf16_to_f32(bh) == x && cml_f32_to_f8(d, cml_bf16_to_f32(bh)) != b)
          ++failures;
      }
    }
    fclose(fp);
    ASSERT_EQ_INT(failures, 0);
    ASSERT_EQ_INT(decoded, d == CML_DTYPE_F4E2M1FN ? 16 : 256);
    ASSERT_TRUE(encoded > 500);
  }
}

// A few values written out, so a regenerated fixture cannot hide a rule change.
TEST(documented_rules) {
  ASSERT_EQ_INT(cml_f32_to_f8(CML_DTYPE_F8E4M3FN, 448.0f), 0x7E);
  ASSERT_EQ_INT(cml_f32_to_f8(CML_DTYPE_F8E4M3FN, 464.0f), 0x7E);     // tie to even (448)
  ASSERT_EQ_INT(cml_f32_to_f8(CML_DTYPE_F8E4M3FN, 1e9f), 0x7F);       // overflow: NaN
  ASSERT_EQ_INT(cml_f32_to_f8(CML_DTYPE_F8E4M3FN, -INFINITY), 0xFF);  // no Inf: NaN
  ASSERT_EQ_INT(cml_f32_to_f8(CML_DTYPE_F8E5M2, 1e9f), 0x7C);         // Inf
  ASSERT_EQ_INT(cml_f32_to_f8(CML_DTYPE_F8E5M2, NAN), 0x7E);
  ASSERT_EQ_INT(cml_f32_to_f8(CML_DTYPE_F8E4M3FNUZ, -0.0f), 0x00);     // no -0
  ASSERT_EQ_INT(cml_f32_to_f8(CML_DTYPE_F8E4M3FNUZ, INFINITY), 0x80);  // the NaN
  ASSERT_EQ_INT(cml_f32_to_f8(CML_DTYPE_F8E8M0FNU, 0.0f), 0xFF);
  ASSERT_EQ_INT(cml_f32_to_f8(CML_DTYPE_F8E8M0FNU, 3.0f), 0x81);  // tie up: 4
  ASSERT_EQ_INT(cml_f32_to_f8(CML_DTYPE_F8E8M0FNU, -2.0f), 0xFF);
  ASSERT_EQ_INT(cml_f32_to_f8(CML_DTYPE_F4E2M1FN, 100.0f), 0x7);  // saturates: 6
  ASSERT_EQ_INT(cml_f32_to_f8(CML_DTYPE_F4E2M1FN, -INFINITY), 0xF);
  ASSERT_EQ_INT(cml_f32_to_f8(CML_DTYPE_F4E2M1FN, 2.5f), 0x4);  // tie to even: 2
  ASSERT_EQ_DBL(cml_f8_to_f32(CML_DTYPE_F4E2M1FN, 0xF7), 6.0);  // high bits ignored
  ASSERT_EQ_DBL(cml_f8_to_f32(CML_DTYPE_F8E4M3B11FNUZ, 0x7F), 30.0);
  ASSERT_EQ_DBL(cml_f8_to_f32(CML_DTYPE_F8E3M4, 0x6F), 15.5);
}

TEST_MAIN(TEST_ENTRY(predicates), TEST_ENTRY(against_ml_dtypes), TEST_ENTRY(documented_rules))
