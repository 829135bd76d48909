// SPDX-License-Identifier: Apache-2.0
// tests/unit/backendtest_test.c: the compliance suite's helpers (backendtest/bt.c) without a
// backend: conversions, packing, comparisons (one-ulp differences, NaN and signed-zero rules),
// messages, result precedence and the per-case random numbers.
//
// bt.c and runner.c are not part of cml_internal (they live in the cml_backendtest library), so
// they are compiled into this test directly, with fake case groups defined below; that also
// gives access to the case context in bt_internal.h. The runner runs on a fake backend that
// advertises two ops (Add and Sub) and implements nothing else.
#include <float.h>
#include <unistd.h>

#include "backendtest/bt.c"
#include "backendtest/runner.c"
#include "cml/backend_impl.h"
#include "test.h"

static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static float f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static uint64_t f64_bits(double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  return u;
}

//===--- conversions ---===//

TEST(tensor_f64_floats) {
  bt_t t;
  bt_case_begin(&t, NULL, "unit", "tensor_f64_floats");
  int64_t dims[] = {4};
  bt_tensor_t x = bt_tensor_f64(&t, CML_DTYPE_F32, 1, dims, (double[]){1.5, -0.0, NAN, 0.1});
  ASSERT_TRUE(x.data != NULL);
  ASSERT_EQ_U64(x.size, 16);
  const uint32_t* u = x.data;
  ASSERT_EQ_U64(u[0], 0x3fc00000u);
  ASSERT_EQ_U64(u[1], 0x80000000u);  // the sign of zero is kept
  ASSERT_TRUE((u[2] & 0x7f800000u) == 0x7f800000u && (u[2] & 0x7fffffu) != 0);
  ASSERT_EQ_U64(u[3], 0x3dcccccdu);  // 0.1 rounded to nearest

  // f16 from double rounds once, ties to even: 1 + 2^-11 is halfway between 1 and 1 + 2^-10.
  bt_tensor_t h = bt_tensor_f64(&t, CML_DTYPE_F16, 1, dims,
                                (double[]){1.5, 1.0 + 0x1p-11, 1.0 + 3 * 0x1p-11, 65520.0});
  const uint16_t* hu = h.data;
  ASSERT_EQ_U64(hu[0], 0x3e00);
  ASSERT_EQ_U64(hu[1], 0x3c00);
  ASSERT_EQ_U64(hu[2], 0x3c02);
  ASSERT_EQ_U64(hu[3], 0x7c00);  // overflows to +Inf

  bt_tensor_t b = bt_tensor_f64(&t, CML_DTYPE_BF16, 1, dims, (double[]){1.0, -2.0, 3.0, 0.0});
  const uint16_t* bu = b.data;
  ASSERT_EQ_U64(bu[0], 0x3f80);
  ASSERT_EQ_U64(bu[1], 0xc000);
  ASSERT_EQ_U64(bu[2], 0x4040);
  ASSERT_EQ_U64(bu[3], 0x0000);

  bt_tensor_t d = bt_tensor_f64(&t, CML_DTYPE_F64, 0, NULL, (double[]){-3.25});
  ASSERT_EQ_U64(d.size, 8);
  ASSERT_EQ_U64(*(const uint64_t*)d.data, f64_bits(-3.25));
  ASSERT_FALSE(bt_failed(&t));
  bt_case_end(&t);
  bt_case_clear(&t);
}

TEST(tensor_f64_ints_bool_complex) {
  bt_t t;
  bt_case_begin(&t, NULL, "unit", "ints");
  int64_t dims[] = {3};
  bt_tensor_t i8 = bt_tensor_f64(&t, CML_DTYPE_I8, 1, dims, (double[]){-5.9, 127, 300});
  const int8_t* p8 = i8.data;
  ASSERT_EQ_INT(p8[0], -5);  // truncated toward zero
  ASSERT_EQ_INT(p8[1], 127);
  ASSERT_EQ_INT(p8[2], 44);  // 300 wraps like a cast through int64: 300 - 256
  bt_tensor_t u8 = bt_tensor_i64(&t, CML_DTYPE_U8, 1, dims, (int64_t[]){-1, 0, 255});
  const uint8_t* pu = u8.data;
  ASSERT_EQ_INT(pu[0], 255);
  ASSERT_EQ_INT(pu[1], 0);
  ASSERT_EQ_INT(pu[2], 255);
  bt_tensor_t u64 =
      bt_tensor_f64(&t, CML_DTYPE_U64, 1, dims, (double[]){18446744073709549568.0, 1e30, -1});
  const uint64_t* p64 = u64.data;
  ASSERT_EQ_U64(p64[0], 18446744073709549568ull);
  ASSERT_EQ_U64(p64[1], UINT64_MAX);  // saturates instead of undefined behaviour
  ASSERT_EQ_U64(p64[2], UINT64_MAX);  // -1 cast to unsigned
  bt_tensor_t i64 = bt_tensor_i64(&t, CML_DTYPE_I64, 1, dims, (int64_t[]){INT64_MIN, INT64_MAX, 0});
  ASSERT_EQ_INT(bt_get_i64(&i64, 0), INT64_MIN);
  ASSERT_EQ_INT(bt_get_i64(&i64, 1), INT64_MAX);

  bt_tensor_t bools = bt_tensor_f64(&t, CML_DTYPE_BOOL, 1, dims, (double[]){0.5, 0, -2});
  const uint8_t* pb = bools.data;
  ASSERT_EQ_INT(pb[0], 1);
  ASSERT_EQ_INT(pb[1], 0);
  ASSERT_EQ_INT(pb[2], 1);

  // int64 -> f32 rounds once: 2^24 + 1 is a tie between 2^24 and 2^24 + 2 (even: 2^24).
  bt_tensor_t f =
      bt_tensor_i64(&t, CML_DTYPE_F32, 1, dims, (int64_t[]){16777217, -3, (int64_t)1 << 40});
  ASSERT_EQ_DBL(bt_get_f64(&f, 0), 16777216.0);
  ASSERT_EQ_DBL(bt_get_f64(&f, 1), -3.0);
  ASSERT_EQ_DBL(bt_get_f64(&f, 2), 1099511627776.0);

  bt_tensor_t c = bt_tensor_f64(&t, CML_DTYPE_C64, 1, dims, (double[]){2, -1, 0.5});
  const float* pc = c.data;
  ASSERT_EQ_U64(c.size, 24);
  ASSERT_EQ_DBL(pc[0], 2.0);
  ASSERT_EQ_DBL(pc[1], 0.0);
  ASSERT_EQ_DBL(pc[2], -1.0);
  ASSERT_EQ_DBL(pc[5], 0.0);
  bt_tensor_t cc = bt_tensor_c(&t, CML_DTYPE_C128, 1, (int64_t[]){2}, (double[]){1, 2, 3, -4});
  const double* pcc = cc.data;
  ASSERT_EQ_DBL(pcc[1], 2.0);
  ASSERT_EQ_DBL(pcc[3], -4.0);
  ASSERT_EQ_DBL(bt_get_f64(&cc, 1), 3.0);  // real part
  ASSERT_FALSE(bt_failed(&t));
  // A complex tensor from a real dtype is a mistake in the case: a failure, not a crash.
  bt_tensor_t bad = bt_tensor_c(&t, CML_DTYPE_F32, 1, (int64_t[]){1}, (double[]){1, 2});
  ASSERT_TRUE(bad.data == NULL);
  ASSERT_TRUE(bt_failed(&t));
  bt_case_end(&t);
  bt_case_clear(&t);
}

TEST(tensor_packed) {
  bt_t t;
  bt_case_begin(&t, NULL, "unit", "packed");
  int64_t dims[] = {5};
  bt_tensor_t i4 = bt_tensor_i64(&t, CML_DTYPE_I4, 1, dims, (int64_t[]){1, -1, 7, -8, 3});
  ASSERT_EQ_U64(i4.size, 3);
  const uint8_t* p = i4.data;
  ASSERT_EQ_U64(p[0], 0xf1);  // first element in the low nibble
  ASSERT_EQ_U64(p[1], 0x87);
  ASSERT_EQ_U64(p[2], 0x03);
  ASSERT_EQ_INT(bt_get_i64(&i4, 0), 1);
  ASSERT_EQ_INT(bt_get_i64(&i4, 1), -1);
  ASSERT_EQ_INT(bt_get_i64(&i4, 2), 7);
  ASSERT_EQ_INT(bt_get_i64(&i4, 3), -8);
  ASSERT_EQ_DBL(bt_get_f64(&i4, 3), -8.0);

  bt_tensor_t u2 = bt_tensor_f64(&t, CML_DTYPE_U2, 1, dims, (double[]){0, 1, 2, 3, 1});
  ASSERT_EQ_U64(u2.size, 2);
  p = u2.data;
  ASSERT_EQ_U64(p[0], 0xe4);  // 0 | 1<<2 | 2<<4 | 3<<6
  ASSERT_EQ_U64(p[1], 0x01);
  ASSERT_EQ_INT(bt_get_i64(&u2, 3), 3);

  bt_tensor_t u4 = bt_tensor_i64(&t, CML_DTYPE_U4, 1, dims, (int64_t[]){15, 0, 9, 1, 2});
  ASSERT_EQ_INT(bt_get_i64(&u4, 0), 15);
  ASSERT_EQ_INT(bt_get_i64(&u4, 2), 9);
  bt_tensor_t i2 = bt_tensor_i64(&t, CML_DTYPE_I2, 1, dims, (int64_t[]){-2, -1, 0, 1, -2});
  ASSERT_EQ_U64(((const uint8_t*)i2.data)[0], 0x4e);  // 2 | 3<<2 | 0<<4 | 1<<6
  ASSERT_EQ_INT(bt_get_i64(&i2, 0), -2);
  ASSERT_EQ_INT(bt_get_i64(&i2, 4), -2);

  bt_tensor_t i1 =
      bt_tensor_i64(&t, CML_DTYPE_U1, 1, (int64_t[]){9}, (int64_t[]){1, 0, 1, 1, 0, 0, 0, 1, 1});
  ASSERT_EQ_U64(i1.size, 2);
  ASSERT_EQ_U64(((const uint8_t*)i1.data)[0], 0x8d);
  ASSERT_EQ_U64(((const uint8_t*)i1.data)[1], 0x01);
  ASSERT_FALSE(bt_failed(&t));
  bt_case_end(&t);
  bt_case_clear(&t);
}

TEST(get_out_of_range) {
  bt_t t;
  bt_case_begin(&t, NULL, "unit", "get");
  bt_tensor_t x = bt_tensor_f64(&t, CML_DTYPE_F16, 1, (int64_t[]){2}, (double[]){0.5, -2});
  ASSERT_EQ_DBL(bt_get_f64(&x, 0), 0.5);
  ASSERT_EQ_DBL(bt_get_f64(&x, 1), -2.0);
  ASSERT_TRUE(isnan(bt_get_f64(&x, 2)));
  ASSERT_TRUE(isnan(bt_get_f64(&x, -1)));
  ASSERT_EQ_INT(bt_get_i64(&x, 5), 0);
  bt_tensor_t empty;
  memset(&empty, 0, sizeof empty);
  ASSERT_TRUE(isnan(bt_get_f64(&empty, 0)));
  bt_case_end(&t);
  bt_case_clear(&t);
}

//===--- comparisons ---===//

TEST(equal_catches_one_ulp) {
  bt_t t;
  bt_case_begin(&t, NULL, "unit", "one_ulp");
  int64_t dims[] = {2, 2};
  float want_data[] = {1.0f, 2.0f, 3.0f, 4.0f};
  float got_data[] = {1.0f, 2.0f, 3.0f, 4.0f};
  got_data[2] = nextafterf(3.0f, 4.0f);
  bt_tensor_t want = bt_tensor(&t, CML_DTYPE_F32, 2, dims, want_data);
  bt_tensor_t got = bt_tensor(&t, CML_DTYPE_F32, 2, dims, got_data);
  bt_expect_equal(&t, "sum", &got, &want);
  ASSERT_TRUE(bt_failed(&t));
  const char* m = bt_case_message(&t);
  ASSERT_CONTAINS(m, "sum");
  ASSERT_CONTAINS(m, "[1, 0]");              // the multi-dimensional index
  ASSERT_CONTAINS(m, "element 2");           // and the flat one
  ASSERT_CONTAINS(m, "0x40400001");          // got, in hex
  ASSERT_CONTAINS(m, "3.0000002384185791");  // got, %.17g
  ASSERT_CONTAINS(m, "0x40400000");          // want
  bt_case_end(&t);
  bt_case_clear(&t);

  // The same pair passes within one ulp, and fails within zero.
  bt_case_begin(&t, NULL, "unit", "one_ulp_ok");
  want = bt_tensor(&t, CML_DTYPE_F32, 2, dims, want_data);
  got = bt_tensor(&t, CML_DTYPE_F32, 2, dims, got_data);
  bt_expect_ulps(&t, "sum", &got, &want, 1);
  ASSERT_FALSE(bt_failed(&t));
  bt_expect_ulps(&t, "sum", &got, &want, 0);
  ASSERT_TRUE(bt_failed(&t));
  ASSERT_CONTAINS(bt_case_message(&t), "1 ulps");
  bt_case_end(&t);
  bt_case_clear(&t);
}

TEST(ulps_other_widths) {
  bt_t t;
  bt_case_begin(&t, NULL, "unit", "widths");
  int64_t dims[] = {1};
  // f16: 0x3c00 (1.0) and 0x3c01 are one ulp apart.
  bt_tensor_t a = bt_tensor(&t, CML_DTYPE_F16, 1, dims, (uint16_t[]){0x3c00});
  bt_tensor_t b = bt_tensor(&t, CML_DTYPE_F16, 1, dims, (uint16_t[]){0x3c01});
  bt_expect_ulps(&t, "f16", &a, &b, 1);
  ASSERT_FALSE(bt_failed(&t));
  bt_expect_equal(&t, "f16", &a, &b);
  ASSERT_TRUE(bt_failed(&t));
  ASSERT_CONTAINS(bt_case_message(&t), "0x3c01");
  bt_case_end(&t);
  bt_case_clear(&t);

  bt_case_begin(&t, NULL, "unit", "widths64");
  double x = 0.1, y = nextafter(0.1, 1.0), z = nextafter(y, 1.0);
  bt_tensor_t dx = bt_tensor(&t, CML_DTYPE_F64, 1, dims, &x);
  bt_tensor_t dy = bt_tensor(&t, CML_DTYPE_F64, 1, dims, &y);
  bt_tensor_t dz = bt_tensor(&t, CML_DTYPE_F64, 1, dims, &z);
  bt_expect_ulps(&t, "f64", &dx, &dy, 1);
  ASSERT_FALSE(bt_failed(&t));
  bt_expect_ulps(&t, "f64", &dx, &dz, 1);  // two ulps
  ASSERT_TRUE(bt_failed(&t));
  ASSERT_CONTAINS(bt_case_message(&t), "2 ulps");
  bt_case_end(&t);
  bt_case_clear(&t);

  // Across zero: the smallest positive and negative subnormals are 2 ulps apart.
  bt_case_begin(&t, NULL, "unit", "across_zero");
  bt_tensor_t p = bt_tensor(&t, CML_DTYPE_F32, 1, dims, (float[]){f32_from_bits(0x00000001u)});
  bt_tensor_t n = bt_tensor(&t, CML_DTYPE_F32, 1, dims, (float[]){f32_from_bits(0x80000001u)});
  bt_expect_ulps(&t, "tiny", &p, &n, 2);
  ASSERT_FALSE(bt_failed(&t));
  bt_expect_ulps(&t, "tiny", &p, &n, 1);
  ASSERT_TRUE(bt_failed(&t));
  bt_case_end(&t);
  bt_case_clear(&t);
}

TEST(nan_and_signed_zero_rules) {
  bt_t t;
  bt_case_begin(&t, NULL, "unit", "nan");
  int64_t dims[] = {2};
  // Any NaN matches any NaN: different sign and payload.
  bt_tensor_t a = bt_tensor(&t, CML_DTYPE_F32, 1, dims,
                            (float[]){f32_from_bits(0x7fc00000u), f32_from_bits(0xffc00123u)});
  bt_tensor_t b = bt_tensor(&t, CML_DTYPE_F32, 1, dims,
                            (float[]){f32_from_bits(0x7f800001u), f32_from_bits(0x7fc00000u)});
  bt_expect_equal(&t, "nan", &a, &b);
  bt_expect_ulps(&t, "nan", &a, &b, 0);
  bt_expect_close(&t, "nan", &a, &b, 0, 0);
  ASSERT_FALSE(bt_failed(&t));
  // NaN does not match a number.
  bt_tensor_t c =
      bt_tensor(&t, CML_DTYPE_F32, 1, dims, (float[]){1.0f, f32_from_bits(0x7fc00000u)});
  bt_expect_ulps(&t, "nan vs 1", &a, &c, 1000000);
  ASSERT_TRUE(bt_failed(&t));
  bt_case_end(&t);
  bt_case_clear(&t);

  // +0 and -0 differ in every mode: they are 0 ulps apart and within any tolerance, but a
  // zero of the wrong sign is a wrong result (Tanh(-0) = +0 passed the ulps comparison once).
  const struct {
    const char* name;
    int mode;  // 0 equal, 1 ulps, 2 close
  } modes[] = {{"zero_equal", 0}, {"zero_ulps", 1}, {"zero_close", 2}};
  for (int m = 0; m < 3; ++m) {
    bt_case_begin(&t, NULL, "unit", modes[m].name);
    bt_tensor_t pz = bt_tensor(&t, CML_DTYPE_F32, 1, dims, (float[]){0.0f, 1.0f});
    bt_tensor_t nz = bt_tensor(&t, CML_DTYPE_F32, 1, dims, (float[]){-0.0f, 1.0f});
    if (modes[m].mode == 0) bt_expect_equal(&t, "zero", &pz, &nz);
    if (modes[m].mode == 1) bt_expect_ulps(&t, "zero", &pz, &nz, 4);
    if (modes[m].mode == 2) bt_expect_close(&t, "zero", &pz, &nz, 1, 1);
    ASSERT_TRUE(bt_failed(&t));
    ASSERT_CONTAINS(bt_case_message(&t), "-0 (0x80000000)");
    bt_case_end(&t);
    bt_case_clear(&t);
    // A zero against the smallest subnormal of the same sign is 1 ulp, not a sign error.
    bt_case_begin(&t, NULL, "unit", modes[m].name);
    nz = bt_tensor(&t, CML_DTYPE_F32, 1, dims, (float[]){-0.0f, 1.0f});
    bt_tensor_t tiny = bt_tensor(&t, CML_DTYPE_F32, 1, dims, (float[]){-1e-45f, 1.0f});
    if (modes[m].mode == 1) bt_expect_ulps(&t, "subnormal", &nz, &tiny, 1);
    if (modes[m].mode == 2) bt_expect_close(&t, "subnormal", &nz, &tiny, 0, 1e-44);
    ASSERT_FALSE(bt_failed(&t));
    bt_case_end(&t);
    bt_case_clear(&t);
  }
  // The parts of a complex result are sums of products: their zeros' signs are not compared.
  bt_case_begin(&t, NULL, "unit", "complex_zero");
  bt_tensor_t cp = bt_tensor(&t, CML_DTYPE_C64, 1, (int64_t[]){1}, (float[]){1.0f, 0.0f});
  bt_tensor_t cn = bt_tensor(&t, CML_DTYPE_C64, 1, (int64_t[]){1}, (float[]){1.0f, -0.0f});
  bt_expect_close(&t, "complex", &cp, &cn, 1e-6, 0);
  ASSERT_FALSE(bt_failed(&t));
  bt_case_end(&t);
  bt_case_clear(&t);

  // bt_expect_f64 with 0 ulps is exact: -0 is not 0.
  bt_case_begin(&t, NULL, "unit", "expect_f64_zero");
  bt_tensor_t nz = bt_tensor(&t, CML_DTYPE_F32, 1, dims, (float[]){-0.0f, 1.0f});
  bt_expect_f64(&t, "neg", &nz, CML_DTYPE_F32, 1, dims, (double[]){-0.0, 1.0}, 0);
  ASSERT_FALSE(bt_failed(&t));
  bt_expect_f64(&t, "neg", &nz, CML_DTYPE_F32, 1, dims, (double[]){0.0, 1.0}, 0);
  ASSERT_TRUE(bt_failed(&t));
  bt_case_end(&t);
  bt_case_clear(&t);

  // Infinities must match exactly even in ulps mode (max finite is 1 ulp below +Inf).
  bt_case_begin(&t, NULL, "unit", "inf");
  bt_tensor_t inf = bt_tensor(&t, CML_DTYPE_F32, 1, (int64_t[]){1}, (float[]){INFINITY});
  bt_tensor_t big = bt_tensor(&t, CML_DTYPE_F32, 1, (int64_t[]){1}, (float[]){FLT_MAX});
  bt_expect_ulps(&t, "inf", &inf, &big, 4);
  ASSERT_TRUE(bt_failed(&t));
  bt_case_end(&t);
  bt_case_clear(&t);
}

TEST(close_tolerances) {
  bt_t t;
  bt_case_begin(&t, NULL, "unit", "close");
  int64_t dims[] = {3};
  bt_tensor_t want = bt_tensor_f64(&t, CML_DTYPE_F64, 1, dims, (double[]){100, 0, -5});
  bt_tensor_t got = bt_tensor_f64(&t, CML_DTYPE_F64, 1, dims, (double[]){100.5, 1e-7, -5});
  bt_expect_close(&t, "close", &got, &want, 0.01, 1e-6);  // 0.5 <= 1e-6 + 1; 1e-7 <= 1e-6
  ASSERT_FALSE(bt_failed(&t));
  bt_expect_close(&t, "close", &got, &want, 0.001, 1e-6);  // 0.5 > 0.1
  ASSERT_TRUE(bt_failed(&t));
  ASSERT_CONTAINS(bt_case_message(&t), "rtol 0.001");
  bt_case_end(&t);
  bt_case_clear(&t);

  bt_case_begin(&t, NULL, "unit", "close_inf");
  bt_tensor_t i1 = bt_tensor_f64(&t, CML_DTYPE_F32, 1, (int64_t[]){1}, (double[]){INFINITY});
  bt_tensor_t i2 = bt_tensor_f64(&t, CML_DTYPE_F32, 1, (int64_t[]){1}, (double[]){-INFINITY});
  bt_expect_close(&t, "inf", &i1, &i1, 0, 0);
  ASSERT_FALSE(bt_failed(&t));
  bt_expect_close(&t, "inf", &i1, &i2, 1e9, 1e9);
  ASSERT_TRUE(bt_failed(&t));
  bt_case_end(&t);
  bt_case_clear(&t);
}

TEST(integer_and_complex_messages) {
  bt_t t;
  bt_case_begin(&t, NULL, "unit", "ints");
  int64_t dims[] = {3};
  bt_tensor_t got = bt_tensor_i64(&t, CML_DTYPE_I32, 1, dims, (int64_t[]){1, -7, 3});
  bt_expect_i64(&t, "ints", &got, CML_DTYPE_I32, 1, dims, (int64_t[]){1, -7, 3});
  ASSERT_FALSE(bt_failed(&t));
  bt_expect_i64(&t, "ints", &got, CML_DTYPE_I32, 1, dims, (int64_t[]){1, -8, 3});
  ASSERT_TRUE(bt_failed(&t));
  ASSERT_CONTAINS(bt_case_message(&t), "at [1] (element 1): got -7, want -8");
  bt_case_end(&t);
  bt_case_clear(&t);

  bt_case_begin(&t, NULL, "unit", "u64");
  bt_tensor_t big = bt_tensor_i64(&t, CML_DTYPE_U64, 1, (int64_t[]){1}, (int64_t[]){-1});
  bt_expect_i64(&t, "u64", &big, CML_DTYPE_U64, 1, (int64_t[]){1}, (int64_t[]){0});
  ASSERT_CONTAINS(bt_case_message(&t), "got 18446744073709551615, want 0");
  bt_case_end(&t);
  bt_case_clear(&t);

  bt_case_begin(&t, NULL, "unit", "complex");
  bt_tensor_t c1 = bt_tensor_c(&t, CML_DTYPE_C64, 1, (int64_t[]){2}, (double[]){1, 2, 3, 4});
  bt_tensor_t c2 = bt_tensor_c(&t, CML_DTYPE_C64, 1, (int64_t[]){2}, (double[]){1, 2, 3, 5});
  bt_expect_equal(&t, "c", &c1, &c2);
  ASSERT_TRUE(bt_failed(&t));
  ASSERT_CONTAINS(bt_case_message(&t), "[1].im");
  ASSERT_CONTAINS(bt_case_message(&t), "0x40800000");
  bt_case_end(&t);
  bt_case_clear(&t);

  bt_case_begin(&t, NULL, "unit", "bool");
  bt_tensor_t b1 = bt_tensor(&t, CML_DTYPE_BOOL, 1, (int64_t[]){2}, (uint8_t[]){1, 2});
  bt_tensor_t b2 = bt_tensor_i64(&t, CML_DTYPE_BOOL, 1, (int64_t[]){2}, (int64_t[]){1, 1});
  bt_expect_equal(&t, "bool", &b1, &b2);  // 2 is not a valid Bool byte
  ASSERT_TRUE(bt_failed(&t));
  ASSERT_CONTAINS(bt_case_message(&t), "not 0 or 1");
  bt_case_end(&t);
  bt_case_clear(&t);
}

TEST(shape_mismatch_and_missing_data) {
  bt_t t;
  bt_case_begin(&t, NULL, "unit", "shapes");
  bt_tensor_t a = bt_tensor_f64(&t, CML_DTYPE_F32, 2, (int64_t[]){2, 3}, NULL);
  bt_tensor_t b = bt_tensor_f64(&t, CML_DTYPE_F32, 1, (int64_t[]){6}, NULL);
  bt_expect_equal(&t, "reshaped", &a, &b);
  ASSERT_TRUE(bt_failed(&t));
  ASSERT_CONTAINS(bt_case_message(&t), "shape mismatch");
  ASSERT_CONTAINS(bt_case_message(&t), "[2, 3]");
  ASSERT_CONTAINS(bt_case_message(&t), "[6]");
  bt_case_end(&t);
  bt_case_clear(&t);

  bt_case_begin(&t, NULL, "unit", "dtype");
  bt_tensor_t i = bt_tensor_f64(&t, CML_DTYPE_I32, 1, (int64_t[]){6}, NULL);
  bt_expect_equal(&t, "dtype", &i, &b);
  ASSERT_CONTAINS(bt_case_message(&t), "Int32");
  ASSERT_CONTAINS(bt_case_message(&t), "Float32");
  bt_case_end(&t);
  bt_case_clear(&t);

  // A zeroed tensor (a case that ignored a failed bt_exec) must not crash the comparison.
  bt_case_begin(&t, NULL, "unit", "zeroed");
  bt_tensor_t z;
  memset(&z, 0, sizeof z);
  bt_expect_f64(&t, "zeroed", &z, CML_DTYPE_F32, 1, (int64_t[]){1}, (double[]){1}, 0);
  ASSERT_TRUE(bt_failed(&t));
  bt_case_end(&t);
  bt_case_clear(&t);

  // Many mismatches: the first few are listed, the rest counted.
  bt_case_begin(&t, NULL, "unit", "many");
  double w[100], g[100];
  for (int k = 0; k < 100; ++k) {
    w[k] = k;
    g[k] = k + 1;
  }
  bt_tensor_t gw = bt_tensor_f64(&t, CML_DTYPE_F64, 1, (int64_t[]){100}, g);
  bt_expect_f64(&t, "many", &gw, CML_DTYPE_F64, 1, (int64_t[]){100}, w, 0);
  ASSERT_CONTAINS(bt_case_message(&t), "100 mismatches in all, of 100 elements");
  bt_case_end(&t);
  bt_case_clear(&t);
}

//===--- case control ---===//

TEST(results_and_statuses) {
  bt_t t;
  bt_case_begin(&t, NULL, "unit", "status");
  ASSERT_TRUE(bt_ok(&t, CML_OK, "nothing"));
  ASSERT_FALSE(bt_ok(&t, cml_status_make(CML_STATUS_UNIMPLEMENTED, "op Foo on Int4"), "build"));
  ASSERT_EQ_INT(t.result, BT_RESULT_UNSUPPORTED);
  ASSERT_CONTAINS(bt_case_message(&t), "build: op Foo on Int4");
  ASSERT_FALSE(bt_ok(&t, cml_status_make(CML_STATUS_INVALID_ARGUMENT, "Add: (Float32)[2] vs [3]"),
                     "compile"));
  ASSERT_EQ_INT(t.result, BT_RESULT_FAILED);  // a failure outranks unsupported
  ASSERT_CONTAINS(bt_case_message(&t), "compile: INVALID_ARGUMENT: Add: (Float32)[2] vs [3]");
  bt_unsupported(&t, "later");
  ASSERT_EQ_INT(t.result, BT_RESULT_FAILED);
  ASSERT_EQ_INT(bt_case_end(&t), BT_RESULT_FAILED);
  bt_case_clear(&t);

  bt_case_begin(&t, NULL, "unit", "expect_status");
  const char* needles[] = {"Transpose", "(Float32)[2, 3]", NULL};
  bt_expect_status(&t,
                   cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                                   "Transpose: bad permutation [0, 0] for (Float32)[2, 3]"),
                   CML_STATUS_INVALID_ARGUMENT, needles);
  ASSERT_FALSE(bt_failed(&t));
  bt_expect_status(&t, cml_status_make(CML_STATUS_INVALID_ARGUMENT, "Transpose: bad"),
                   CML_STATUS_INVALID_ARGUMENT, needles);
  ASSERT_TRUE(bt_failed(&t));
  ASSERT_CONTAINS(bt_case_message(&t), "does not mention \"(Float32)[2, 3]\"");
  bt_case_end(&t);
  bt_case_clear(&t);

  bt_case_begin(&t, NULL, "unit", "expect_status_code");
  bt_expect_status(&t, cml_status_from_code(CML_STATUS_OUT_OF_RANGE),
                   CML_STATUS_FAILED_PRECONDITION, NULL);
  ASSERT_TRUE(bt_failed(&t));
  ASSERT_CONTAINS(bt_case_message(&t), "want status FAILED_PRECONDITION, got OUT_OF_RANGE");
  bt_case_end(&t);
  bt_case_clear(&t);

  bt_case_begin(&t, NULL, "unit", "expect_ok_status");
  bt_expect_status(&t, CML_OK, CML_STATUS_INVALID_ARGUMENT, NULL);
  ASSERT_TRUE(bt_failed(&t));
  bt_case_end(&t);
  bt_case_clear(&t);

  // Without a backend, building is a failure with a message, not a crash.
  bt_case_begin(&t, NULL, "unit", "no_backend");
  ASSERT_TRUE(bt_main(&t) == NULL);
  ASSERT_TRUE(bt_failed(&t));
  ASSERT_FALSE(bt_require_op(&t, CML_OP_ADD));
  bt_case_end(&t);
  bt_case_clear(&t);

  bt_case_begin(&t, NULL, "unit", "unsupported");
  ASSERT_FALSE(bt_require_dtype(&t, CML_DTYPE_F32));
  ASSERT_EQ_INT(bt_case_end(&t), BT_RESULT_UNSUPPORTED);
  ASSERT_CONTAINS(bt_case_message(&t), "Float32");
  bt_case_clear(&t);
}

TEST(message_limit) {
  bt_t t;
  bt_case_begin(&t, NULL, "unit", "limit");
  for (int i = 0; i < 5000; ++i) bt_fail(&t, "failure number %d with some text to fill", i);
  ASSERT_TRUE(t.message_len < BT_MESSAGE_LIMIT + 200);
  ASSERT_CONTAINS(bt_case_message(&t), "failure number 0 ");
  ASSERT_CONTAINS(bt_case_message(&t), "further messages cut");
  ASSERT_EQ_INT(t.failure_count, 5000);
  bt_case_end(&t);
  bt_case_clear(&t);
}

TEST(alloc_is_zeroed_and_freed) {
  bt_t t;
  bt_case_begin(&t, NULL, "unit", "alloc");
  for (int i = 0; i < 100; ++i) {
    unsigned char* p = bt_alloc(&t, 1000);
    ASSERT_TRUE(p != NULL);
    for (int k = 0; k < 1000; ++k) ASSERT_EQ_INT(p[k], 0);
    p[999] = 1;
  }
  ASSERT_TRUE(bt_alloc(&t, 0) != NULL);
  ASSERT_EQ_INT(bt_case_end(&t), BT_RESULT_OK);  // LeakSanitizer checks the frees
  bt_case_clear(&t);
}

TEST(random_is_deterministic_per_case) {
  bt_t a, b, c;
  bt_case_begin(&a, NULL, "unary", "exp_f32");
  bt_case_begin(&b, NULL, "unary", "exp_f32");
  bt_case_begin(&c, NULL, "unary", "exp_f64");
  int same_c = 0;
  for (int i = 0; i < 64; ++i) {
    uint64_t x = bt_rand_u64(&a), y = bt_rand_u64(&b), z = bt_rand_u64(&c);
    ASSERT_EQ_U64(x, y);
    same_c += x == z;
  }
  ASSERT_TRUE(same_c < 2);
  double lo = 1e300, hi = -1e300, sum = 0;
  for (int i = 0; i < 10000; ++i) {
    double u = bt_rand_uniform(&a, -2.0, 3.0);
    ASSERT_TRUE(u >= -2.0 && u < 3.0);
    lo = u < lo ? u : lo;
    hi = u > hi ? u : hi;
    sum += u;
  }
  ASSERT_TRUE(lo < -1.9 && hi > 2.9);
  ASSERT_NEAR(sum / 10000, 0.5, 0.1);  // mean of U(-2, 3)
  // FNV-1a of "a" (a published test vector).
  ASSERT_EQ_U64(bt_hash_string("a"), 0xaf63dc4c8601ec8cull);
  bt_case_end(&a);
  bt_case_end(&b);
  bt_case_end(&c);
  bt_case_clear(&a);
  bt_case_clear(&b);
  bt_case_clear(&c);
}

TEST(f32_helpers_sanity) {
  // The helpers above rely on these identities.
  ASSERT_EQ_U64(f32_bits(1.0f), 0x3f800000u);
  ASSERT_EQ_U64(f32_bits(f32_from_bits(0x12345678u)), 0x12345678u);
}

//===--- the runner, on fake groups and a fake backend ---===//

static void fake_pass_add(bt_t* t) {
  bt_tensor_t x = bt_tensor_f64(t, CML_DTYPE_F32, 1, (int64_t[]){1}, (double[]){2});
  bt_expect_f64(t, "x", &x, CML_DTYPE_F32, 1, (int64_t[]){1}, (double[]){2}, 0);
  bt_count_execution(t);  // as if it had run something (the fake backend cannot)
}
// Passes without running anything, as a case that only checks a build error does: it must not
// count as covering Mul.
static void fake_pass_without_running(bt_t* t) { (void)t; }
static void fake_fail_quotes(bt_t* t) {
  bt_fail(t, "bad \"quote\" back\\slash\ttab\x01 ctrl");
  bt_fail(t, "second line");
}
static void fake_skip(bt_t* t) { bt_unsupported(t, "not here"); }
static void fake_silent_fail(bt_t* t) { t->result = BT_RESULT_FAILED; }
static void fake_never_run(bt_t* t) { bt_fail(t, "a placeholder entry must not run"); }

const bt_case_t bt_cases_exec[] = {{"pass_add", CML_OP_ADD, fake_pass_add},
                                   {"fail_quotes", CML_OP_INVALID, fake_fail_quotes},
                                   {"mul_error_only", CML_OP_MUL, fake_pass_without_running}};
const size_t bt_cases_exec_count = 3;
const bt_case_t bt_cases_control[] = {{"skip", CML_OP_SUB, fake_skip}};
const size_t bt_cases_control_count = 1;
const bt_case_t bt_cases_elementwise_unary[] = {{"silent_fail", CML_OP_INVALID, fake_silent_fail}};
const size_t bt_cases_elementwise_unary_count = 1;
// A placeholder group (count 0, one NULL entry) as the case files start out.
const bt_case_t bt_cases_elementwise_binary[] = {{NULL, CML_OP_INVALID, fake_never_run}};
const size_t bt_cases_elementwise_binary_count = 0;
#define FAKE_EMPTY_GROUP(g)                                        \
  const bt_case_t bt_cases_##g[] = {{NULL, CML_OP_INVALID, NULL}}; \
  const size_t bt_cases_##g##_count = 0;
FAKE_EMPTY_GROUP(elementwise_f8)
FAKE_EMPTY_GROUP(reduce)
FAKE_EMPTY_GROUP(movement)
FAKE_EMPTY_GROUP(index)
FAKE_EMPTY_GROUP(window)
FAKE_EMPTY_GROUP(linalg_dot)
FAKE_EMPTY_GROUP(linalg_conv)
FAKE_EMPTY_GROUP(special)
FAKE_EMPTY_GROUP(fused)
FAKE_EMPTY_GROUP(collective)
FAKE_EMPTY_GROUP(fused_quant)
FAKE_EMPTY_GROUP(autodiff)
FAKE_EMPTY_GROUP(dynamic)

static void fake_backend_destroy(cml_backend_t* backend) {
  cml_backend_deinit_base(backend);
  free(backend);
}

static const cml_backend_vtable_t fake_vtable = {
    .struct_size = sizeof(cml_backend_vtable_t),
    .destroy = fake_backend_destroy,
};

static cml_backend_t* fake_backend(void) {
  cml_backend_t* b = calloc(1, sizeof *b);
  if (!b) return NULL;
  if (cml_backend_init_base(b, &fake_vtable, cml_allocator_system(), "fake", "fake:x", 1) !=
      CML_OK) {
    free(b);
    return NULL;
  }
  cml_capabilities_set_op(&b->capabilities, CML_OP_ADD, true);
  cml_capabilities_set_op(&b->capabilities, CML_OP_SUB, true);
  cml_capabilities_set_op(&b->capabilities, CML_OP_MUL, true);
  return b;
}

static char* read_file_text(FILE* f) {
  long n;
  if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) return NULL;
  char* text = calloc(1, (size_t)n + 1);
  if (text && fread(text, 1, (size_t)n, f) != (size_t)n) {
    free(text);
    return NULL;
  }
  return text;
}

TEST(runner_listing) {
  ASSERT_EQ_INT(cml_backendtest_case_count(), 5);
  ASSERT_STREQ(cml_backendtest_case_name(0), "exec/pass_add");
  ASSERT_STREQ(cml_backendtest_case_name(3), "control/skip");
  ASSERT_STREQ(cml_backendtest_case_name(4), "elementwise_unary/silent_fail");
  ASSERT_TRUE(cml_backendtest_case_name(5) == NULL);
}

TEST(runner_summary_coverage_and_json) {
  cml_backend_t* backend = fake_backend();
  ASSERT_TRUE(backend != NULL);
  FILE* log = tmpfile();
  ASSERT_TRUE(log != NULL);
  char json_path[] = "cml_backendtest_json_XXXXXX";  // in the working directory
  int fd = mkstemp(json_path);
  ASSERT_TRUE(fd >= 0);
  close(fd);
  cml_backendtest_options_t opts;
  cml_backendtest_options_init(&opts);
  opts.log = log;
  opts.json_path = json_path;
  opts.verbosity = 1;
  cml_backendtest_summary_t sum;
  cml_status_t st = cml_backendtest_run_all(backend, &opts, &sum);
  cml_backend_release(backend);
  ASSERT_STATUS_OK(st);
  ASSERT_EQ_INT(sum.passed, 2);
  ASSERT_EQ_INT(sum.skipped, 1);
  // Sub: advertised, only a skipped case; Mul: only a case that passed without running.
  ASSERT_EQ_INT(sum.uncovered_ops, 2);
  ASSERT_EQ_INT(sum.failed, 4);  // two failing cases + the uncovered ops
  char* text = read_file_text(log);
  fclose(log);
  ASSERT_TRUE(text != NULL);
  int ok =
      strstr(text, "ok   exec/pass_add\n") && strstr(text, "FAIL exec/fail_quotes\n") &&
      strstr(text, "    second line\n") && strstr(text, "skip control/skip\n") &&
      strstr(text, "FAIL elementwise_unary/silent_fail\n    the case failed without a message\n") &&
      strstr(text, "not covered: Sub\n") && strstr(text, "not covered: Mul\n") &&
      !strstr(text, "not covered: Add") && strstr(text, "\n2 passed, 4 failed, 1 skipped\n");
  if (!ok) fprintf(stderr, "log was:\n%s", text);
  free(text);
  ASSERT_TRUE(ok);

  FILE* jf = fopen(json_path, "r");
  ASSERT_TRUE(jf != NULL);
  char* json = read_file_text(jf);
  fclose(jf);
  remove(json_path);
  ASSERT_TRUE(json != NULL);
  ok = strstr(json, "\"backend\": \"fake\"") &&
       strstr(json,
              "{\"name\": \"exec/pass_add\", \"op\": \"Add\", \"group\": \"elementwise\", "
              "\"result\": \"ok\", \"message\": \"\"}") &&
       strstr(json, "bad \\\"quote\\\" back\\\\slash\\ttab\\u0001 ctrl\\nsecond line") &&
       strstr(json, "\"op\": null, \"group\": null, \"result\": \"failed\"") &&
       strstr(json, "\"result\": \"unsupported\", \"message\": \"not here\"") &&
       strstr(json, "\"not_covered\": [\"Mul\", \"Sub\"]") &&
       strstr(json, "\"passed\": 2, \"failed\": 4, \"skipped\": 1, \"uncovered_ops\": 2}");
  if (!ok) fprintf(stderr, "json was:\n%s", json);
  free(json);
  ASSERT_TRUE(ok);
}

TEST(runner_filter) {
  cml_backend_t* backend = fake_backend();
  ASSERT_TRUE(backend != NULL);
  FILE* log = tmpfile();
  ASSERT_TRUE(log != NULL);
  cml_backendtest_options_t opts;
  cml_backendtest_options_init(&opts);
  opts.log = log;
  cml_backendtest_summary_t sum;
  // "^Add$" selects pass_add through its op name, and only Add must be covered.
  opts.op_regex = "^Add$";
  cml_status_t st = cml_backendtest_run_all(backend, &opts, &sum);
  if (st == CML_OK) {
    ASSERT_EQ_INT(sum.passed, 1);
    ASSERT_EQ_INT(sum.failed, 0);
    ASSERT_EQ_INT(sum.skipped, 0);
    // A group prefix selects by case name.
    opts.op_regex = "^control/";
    st = cml_backendtest_run_all(backend, &opts, &sum);
  }
  if (st == CML_OK) {
    ASSERT_EQ_INT(sum.passed, 0);
    ASSERT_EQ_INT(sum.skipped, 1);
    ASSERT_EQ_INT(sum.failed, 0);
    // The ops.def group of a case's op selects too: Add, Sub and Mul are "elementwise" (the
    // case files are exec/ and control/); the cases without an op are left out, and Sub
    // (only skipped) and Mul (only passed without running) are not covered.
    opts.op_regex = "^elementwise$";
    st = cml_backendtest_run_all(backend, &opts, &sum);
  }
  if (st == CML_OK) {
    ASSERT_EQ_INT(sum.passed, 2);
    ASSERT_EQ_INT(sum.skipped, 1);
    ASSERT_EQ_INT(sum.uncovered_ops, 2);
    ASSERT_EQ_INT(sum.failed, 2);
    opts.op_regex = "(";
    st = cml_backendtest_run_all(backend, &opts, &sum);
    ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
    ASSERT_CONTAINS(cml_status_message(st), "regular expression");
    cml_status_free(st);
    opts.op_regex = NULL;
    opts.json_path = "";
    st = cml_backendtest_run_all(backend, &opts, &sum);
    ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
    ASSERT_CONTAINS(cml_status_message(st), "empty JSON path");
    cml_status_free(st);
    opts.json_path = "/nonexistent-dir/x.json";
    st = cml_backendtest_run_all(backend, &opts, &sum);
    ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
    ASSERT_CONTAINS(cml_status_message(st), "/nonexistent-dir/x.json");
    cml_status_free(st);
    st = CML_OK;
  }
  fclose(log);
  cml_backend_release(backend);
  ASSERT_STATUS_OK(st);
  // Options from an older caller (smaller struct) are refused, not misread.
  cml_backendtest_options_t old;
  cml_backendtest_options_init(&old);
  old.struct_size = 8;
  backend = fake_backend();
  ASSERT_TRUE(backend != NULL);
  st = cml_backendtest_run_all(backend, &old, &sum);
  cml_backend_release(backend);
  ASSERT_STATUS_CODE(st, CML_STATUS_INCOMPATIBLE);
}

// A multi-device case on a backend without the strategy bit, or with too few devices, is
// skipped with the reason (never passed).
TEST(require_devices_skips_with_reason) {
  cml_backend_t* backend = fake_backend();
  ASSERT_TRUE(backend != NULL);
  bt_t t;
  bt_case_begin(&t, backend, "collective", "needs_spmd");
  ASSERT_FALSE(bt_require_devices(&t, CML_DISTRIBUTION_SPMD, 4));
  ASSERT_EQ_INT(bt_case_end(&t), BT_RESULT_UNSUPPORTED);
  ASSERT_CONTAINS(bt_case_message(&t), "needs the SPMD distribution strategy");
  ASSERT_CONTAINS(bt_case_message(&t), "\"fake\"");
  bt_case_clear(&t);
  backend->capabilities.distributions |= 1u << CML_DISTRIBUTION_SPMD;
  bt_case_begin(&t, backend, "collective", "needs_4");
  ASSERT_FALSE(bt_require_devices(&t, CML_DISTRIBUTION_SPMD, 4));
  ASSERT_EQ_INT(bt_case_end(&t), BT_RESULT_UNSUPPORTED);
  ASSERT_CONTAINS(bt_case_message(&t), "needs 4 devices, backend \"fake\" has 1");
  bt_case_clear(&t);
  bt_case_begin(&t, backend, "collective", "enough");
  ASSERT_TRUE(bt_require_devices(&t, CML_DISTRIBUTION_SPMD, 1));
  ASSERT_TRUE(bt_require_devices(&t, CML_DISTRIBUTION_NONE, 1));
  ASSERT_EQ_INT(bt_case_end(&t), BT_RESULT_OK);
  bt_case_clear(&t);
  cml_backend_release(backend);
}

TEST_MAIN(TEST_ENTRY(runner_listing), TEST_ENTRY(require_devices_skips_with_reason),
          TEST_ENTRY(runner_summary_coverage_and_json), TEST_ENTRY(runner_filter),
          TEST_ENTRY(tensor_f64_floats), TEST_ENTRY(tensor_f64_ints_bool_complex),
          TEST_ENTRY(tensor_packed), TEST_ENTRY(get_out_of_range),
          TEST_ENTRY(equal_catches_one_ulp), TEST_ENTRY(ulps_other_widths),
          TEST_ENTRY(nan_and_signed_zero_rules), TEST_ENTRY(close_tolerances),
          TEST_ENTRY(integer_and_complex_messages), TEST_ENTRY(shape_mismatch_and_missing_data),
          TEST_ENTRY(results_and_statuses), TEST_ENTRY(message_limit),
          TEST_ENTRY(alloc_is_zeroed_and_freed), TEST_ENTRY(random_is_deterministic_per_case),
          TEST_ENTRY(f32_helpers_sanity))
