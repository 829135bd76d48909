// SPDX-License-Identifier: Apache-2.0
// backendtest/cases_elementwise_f8.c: the float8/float4 storage dtypes (F8E4M3FN, F8E5M2, ...,
// F4E2M1FN): ConvertDType from and to F32/F64/F16/BF16, Bitcast and the movement ops, on any
// backend that advertises the dtype (UNSUPPORTED with the reason otherwise); and Int1/Uint1.
//
// Expected values: the codes of f8_values below come from ml_dtypes 0.7.0 (the reference JAX
// uses; scripts/gen_f8_fixtures.py makes the full fixtures the unit test checks); decoding is
// the plain formula of bt_f8_decode, written here independently of src/base/float8.c.
#include <float.h>
#include <math.h>
#include <string.h>

#include "bt.h"

#define F8_VALUE_COUNT 21
static const float f8_values[F8_VALUE_COUNT] = {
    0.0f,   -0.0f, 1.0f,    -1.5f,  0.3f,   3.0f,     -7.0f,    100.0f,   1e5f,      1e-3f, 1e-6f,
    -1e-9f, 2.5f,  0.1875f, 448.0f, 464.0f, 57344.0f, 61440.0f, INFINITY, -INFINITY, NAN};

typedef struct f8_type_t {
  cml_dtype_t dtype;
  uint8_t codes[F8_VALUE_COUNT];  // ml_dtypes' conversion of f8_values
} f8_type_t;

static const f8_type_t f8_types[] = {
    {CML_DTYPE_F8E4M3FN, {0x00, 0x80, 0x38, 0xBC, 0x2A, 0x44, 0xCE, 0x6C, 0x7F, 0x01, 0x00,
                          0x80, 0x42, 0x24, 0x7E, 0x7E, 0x7F, 0x7F, 0x7F, 0xFF, 0x7F}},
    {CML_DTYPE_F8E5M2, {0x00, 0x80, 0x3C, 0xBE, 0x35, 0x42, 0xC7, 0x56, 0x7C, 0x14, 0x00,
                        0x80, 0x41, 0x32, 0x5F, 0x5F, 0x7B, 0x7C, 0x7C, 0xFC, 0x7E}},
    {CML_DTYPE_F8E4M3, {0x00, 0x80, 0x38, 0xBC, 0x2A, 0x44, 0xCE, 0x6C, 0x78, 0x01, 0x00,
                        0x80, 0x42, 0x24, 0x78, 0x78, 0x78, 0x78, 0x78, 0xF8, 0x7C}},
    {CML_DTYPE_F8E3M4, {0x00, 0x80, 0x30, 0xB8, 0x13, 0x48, 0xDC, 0x70, 0x70, 0x00, 0x00,
                        0x80, 0x44, 0x0C, 0x70, 0x70, 0x70, 0x70, 0x70, 0xF0, 0x78}},
    {CML_DTYPE_F8E4M3FNUZ, {0x00, 0x00, 0x40, 0xC4, 0x32, 0x4C, 0xD6, 0x74, 0x80, 0x01, 0x00,
                            0x00, 0x4A, 0x2C, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80}},
    {CML_DTYPE_F8E5M2FNUZ, {0x00, 0x00, 0x40, 0xC2, 0x39, 0x46, 0xCB, 0x5A, 0x80, 0x18, 0x00,
                            0x00, 0x45, 0x36, 0x63, 0x63, 0x7F, 0x80, 0x80, 0x80, 0x80}},
    {CML_DTYPE_F8E4M3B11FNUZ, {0x00, 0x00, 0x58, 0xDC, 0x4A, 0x64, 0xEE, 0x80, 0x80, 0x08, 0x00,
                               0x00, 0x62, 0x44, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80}},
    {CML_DTYPE_F8E8M0FNU, {0xFF, 0xFF, 0x7F, 0xFF, 0x7D, 0x81, 0xFF, 0x86, 0x90, 0x75, 0x6B,
                           0xFF, 0x80, 0x7D, 0x88, 0x88, 0x8F, 0x8F, 0xFF, 0xFF, 0xFF}},
    {CML_DTYPE_F4E2M1FN, {0x00, 0x08, 0x02, 0x0B, 0x01, 0x05, 0x0F, 0x07, 0x07, 0x00, 0x00,
                          0x08, 0x04, 0x00, 0x07, 0x07, 0x07, 0x07, 0x07, 0x0F, 0x08}},
};

//===--- a reference decoder (XLA / ml_dtypes definitions) ---===//

// Decodes |code| of |dtype|: value = (1 + m / 2^M) * 2^(e - bias), subnormals at e == 0.
static double bt_f8_decode(cml_dtype_t dtype, unsigned code) {
  int eb = 4, mb = 3, bias = 7;
  bool ieee = false, fn = false, fnuz = false;
  switch (dtype) {
    case CML_DTYPE_F8E5M2:
      eb = 5, mb = 2, bias = 15, ieee = true;
      break;
    case CML_DTYPE_F8E4M3:
      ieee = true;
      break;
    case CML_DTYPE_F8E3M4:
      eb = 3, mb = 4, bias = 3, ieee = true;
      break;
    case CML_DTYPE_F8E4M3FN:
      fn = true;
      break;
    case CML_DTYPE_F8E4M3FNUZ:
      bias = 8, fnuz = true;
      break;
    case CML_DTYPE_F8E5M2FNUZ:
      eb = 5, mb = 2, bias = 16, fnuz = true;
      break;
    case CML_DTYPE_F8E4M3B11FNUZ:
      bias = 11, fnuz = true;
      break;
    case CML_DTYPE_F8E8M0FNU:
      return code == 0xFF ? NAN : ldexp(1.0, (int)code - 127);
    default:  // F4E2M1FN
      eb = 2, mb = 1, bias = 1;
      break;
  }
  const int width = 1 + eb + mb;
  const bool neg = (code >> (width - 1)) & 1;
  const unsigned e = (code >> mb) & ((1u << eb) - 1), m = code & ((1u << mb) - 1);
  const unsigned emax = (1u << eb) - 1, mmax = (1u << mb) - 1;
  if ((ieee && e == emax && m) || (fn && e == emax && m == mmax) || (fnuz && neg && !e && !m))
    return NAN;
  double v = ieee && e == emax ? INFINITY
             : e == 0          ? ldexp(m, 1 - bias - mb)
                               : ldexp(m + (1u << mb), (int)e - bias - mb);
  return neg ? -v : v;
}

static bool bt_f8_packed(cml_dtype_t dtype) { return dtype == CML_DTYPE_F4E2M1FN; }

// Element |i| of a tensor of |dtype| codes (F4E2M1FN: packed, low nibble first).
static unsigned bt_f8_code_at(cml_dtype_t dtype, const uint8_t* data, int64_t i) {
  if (!bt_f8_packed(dtype)) return data[i];
  return (data[i / 2] >> (4 * (i % 2))) & 15u;
}

static bt_tensor_t bt_f8_tensor(bt_t* t, cml_dtype_t dtype, int32_t rank, const int64_t* dims,
                                const uint8_t* codes, int64_t n) {
  uint8_t packed[256];
  if (bt_f8_packed(dtype)) {
    memset(packed, 0, sizeof packed);
    for (int64_t i = 0; i < n; ++i) packed[i / 2] |= (uint8_t)((codes[i] & 15u) << (4 * (i % 2)));
    codes = packed;
  }
  return bt_tensor(t, dtype, rank, dims, codes);
}

// Checks |got| (dtype codes) element by element: the same code, or any NaN for a NaN.
static void bt_f8_expect_codes(bt_t* t, const char* what, const bt_tensor_t* got, cml_dtype_t dtype,
                               const uint8_t* want, int64_t n) {
  if (got->shape.dtype != dtype || cml_shape_element_count(&got->shape) != n) {
    bt_fail(t, "%s: got dtype %s with %lld elements, want %s with %lld", what,
            cml_dtype_name(got->shape.dtype), (long long)cml_shape_element_count(&got->shape),
            cml_dtype_name(dtype), (long long)n);
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const unsigned g = bt_f8_code_at(dtype, got->data, i);
    if (g == want[i] || (isnan(bt_f8_decode(dtype, want[i])) && isnan(bt_f8_decode(dtype, g))))
      continue;
    bt_fail(t, "%s: %s element %lld: got 0x%02X, want 0x%02X", what, cml_dtype_name(dtype),
            (long long)i, g, want[i]);
    return;
  }
}

static const f8_type_t* bt_f8_type(cml_dtype_t dtype) {
  for (size_t k = 0; k < sizeof f8_types / sizeof f8_types[0]; ++k)
    if (f8_types[k].dtype == dtype) return &f8_types[k];
  return NULL;
}

//===--- cases ---===//

// F32 and F64 -> dtype (the same values: one rounding either way).
static void bt_f8_case_from_float(bt_t* t, cml_dtype_t dtype) {
  if (!bt_require_op(t, CML_OP_CONVERT_DTYPE) || !bt_require_dtype(t, dtype) ||
      !bt_require_dtype(t, CML_DTYPE_F64))
    return;
  const f8_type_t* ty = bt_f8_type(dtype);
  double wide[F8_VALUE_COUNT];
  for (int i = 0; i < F8_VALUE_COUNT; ++i) wide[i] = (double)f8_values[i];
  cml_function_t* f = bt_main(t);
  int64_t dims[] = {F8_VALUE_COUNT};
  bt_tensor_t x32 = bt_tensor(t, CML_DTYPE_F32, 1, dims, f8_values);
  bt_tensor_t x64 = bt_tensor(t, CML_DTYPE_F64, 1, dims, wide);
  // And from a constant: xla:cpu's constant folder once converted by other rules than its
  // runtime (inf to 0 in F4E2M1FN, -2.5 to 2 in F8E8M0FNU).
  cml_value_t ys[3] = {cml_op_convert_dtype(f, bt_param(t, f, &x32), dtype),
                       cml_op_convert_dtype(f, bt_param(t, f, &x64), dtype),
                       cml_op_convert_dtype(f, bt_const(t, f, &x32), dtype)};
  bt_tensor_t out[3];
  if (!bt_exec(t, ys, 3, out)) return;
  bt_f8_expect_codes(t, "from F32", &out[0], dtype, ty->codes, F8_VALUE_COUNT);
  bt_f8_expect_codes(t, "from F64", &out[1], dtype, ty->codes, F8_VALUE_COUNT);
  bt_f8_expect_codes(t, "from an F32 constant", &out[2], dtype, ty->codes, F8_VALUE_COUNT);
}

// Every code of dtype -> F32, F64, F16, BF16 (exact, or rounded once for F16/BF16) and back to
// dtype; Bitcast to the same-width unsigned int.
static void bt_f8_case_all_codes(bt_t* t, cml_dtype_t dtype) {
  if (!bt_require_op(t, CML_OP_CONVERT_DTYPE) || !bt_require_dtype(t, dtype) ||
      !bt_require_dtype(t, CML_DTYPE_F64) || !bt_require_dtype(t, CML_DTYPE_F16) ||
      !bt_require_dtype(t, CML_DTYPE_BF16) || !bt_require_op(t, CML_OP_ADD))
    return;
  const int64_t n = bt_f8_packed(dtype) ? 16 : 256;
  uint8_t codes[256];
  for (int64_t i = 0; i < n; ++i) codes[i] = (uint8_t)i;
  cml_function_t* f = bt_main(t);
  int64_t dims[] = {n};
  bt_tensor_t x = bt_f8_tensor(t, dtype, 1, dims, codes, n);
  cml_value_t xv = bt_param(t, f, &x);
  const cml_dtype_t wide[4] = {CML_DTYPE_F32, CML_DTYPE_F64, CML_DTYPE_F16, CML_DTYPE_BF16};
  cml_value_t ys[8];
  for (int k = 0; k < 4; ++k) ys[k] = cml_op_convert_dtype(f, xv, wide[k]);
  ys[4] = cml_op_convert_dtype(f, ys[0], dtype);
  const cml_dtype_t raw = bt_f8_packed(dtype) ? CML_DTYPE_U4 : CML_DTYPE_U8;
  ys[5] = cml_op_bitcast(f, xv, raw);
  // A convert feeding arithmetic (a fused loop on `c`).
  cml_value_t w = cml_op_convert_dtype(f, xv, CML_DTYPE_F32);
  ys[6] = cml_op_add(f, w, w);
  // To Bool: true for every nonzero code, NaNs included (xla once wrote the zero it compares
  // with as an integer literal, a parse error for the minifloats).
  ys[7] = cml_op_convert_dtype(f, xv, CML_DTYPE_BOOL);
  bt_tensor_t out[8];
  if (!bt_exec(t, ys, 8, out)) return;
  double* want = bt_alloc(t, (size_t)n * sizeof(double));
  for (int64_t i = 0; i < n; ++i) want[i] = bt_f8_decode(dtype, (unsigned)i);
  bt_expect_f64(t, "to F32", &out[0], CML_DTYPE_F32, 1, dims, want, 0);
  bt_expect_f64(t, "to F64", &out[1], CML_DTYPE_F64, 1, dims, want, 0);
  bt_expect_f64(t, "to F16", &out[2], CML_DTYPE_F16, 1, dims, want, 0);
  bt_expect_f64(t, "to BF16", &out[3], CML_DTYPE_BF16, 1, dims, want, 0);
  // Back: every code but the NaNs (any NaN) and FNUZ's nothing else; -0 stays -0.
  bt_f8_expect_codes(t, "F32 and back", &out[4], dtype, codes, n);
  int64_t* ints = bt_alloc(t, (size_t)n * sizeof(int64_t));
  for (int64_t i = 0; i < n; ++i) ints[i] = i;
  bt_expect_i64(t, "bitcast", &out[5], raw, 1, dims, ints);
  int64_t* truth = bt_alloc(t, (size_t)n * sizeof(int64_t));
  for (int64_t i = 0; i < n; ++i) truth[i] = want[i] != 0;  // NaN != 0
  bt_expect_i64(t, "to Bool", &out[7], CML_DTYPE_BOOL, 1, dims, truth);
  // Doubled; a float32 subnormal input (F8E8M0FNU's 2^-127) may flush to zero (XLA's CPU does).
  for (int64_t i = 0; i < n; ++i) {
    const double g = bt_get_f64(&out[6], i), e = (double)(float)(2 * want[i]);
    const bool flushed = fabs(want[i]) < FLT_MIN && g == 0;
    if (!(g == e || (isnan(g) && isnan(e)) || flushed)) {
      bt_fail(t, "converted and doubled: element %lld: got %.9g, want %.9g", (long long)i, g, e);
      break;
    }
  }
}

// Reshape, Transpose, Slice, Concatenate and BroadcastInDim of the 8-bit kinds move bytes.
static void bt_f8_case_movement(bt_t* t, cml_dtype_t dtype) {
  if (!bt_require_dtype(t, dtype) || !bt_require_op(t, CML_OP_TRANSPOSE) ||
      !bt_require_op(t, CML_OP_SLICE) || !bt_require_op(t, CML_OP_CONCATENATE) ||
      !bt_require_op(t, CML_OP_BROADCAST_IN_DIM) || !bt_require_op(t, CML_OP_RESHAPE))
    return;
  if (bt_f8_packed(dtype)) {
    bt_unsupported(t, "%s is packed: only Reshape moves it", cml_dtype_name(dtype));
    return;
  }
  uint8_t codes[256];
  for (int i = 0; i < 256; ++i) codes[i] = (uint8_t)i;
  cml_function_t* f = bt_main(t);
  int64_t dims[] = {256};
  bt_tensor_t x = bt_f8_tensor(t, dtype, 1, dims, codes, 256);
  cml_value_t xv = bt_param(t, f, &x);
  cml_value_t sq = cml_op_reshape(f, xv, (int64_t[]){16, 16}, 2);
  cml_value_t ys[4];
  ys[0] = cml_op_transpose(f, sq, (int64_t[]){1, 0}, 2);
  ys[1] = cml_op_slice(f, sq, (int64_t[]){2, 3}, (int64_t[]){4, 14}, (int64_t[]){1, 5}, 2);
  ys[2] = cml_op_concatenate(f, 0, (cml_value_t[]){ys[1], ys[1]}, 2);
  cml_value_t one = cml_op_slice(f, xv, (int64_t[]){0x38}, (int64_t[]){0x39}, NULL, 1);
  ys[3] = cml_op_broadcast_in_dim(f, one, (int64_t[]){3, 1}, 2, (int64_t[]){1}, 1);
  bt_tensor_t out[4];
  if (!bt_exec(t, ys, 4, out)) return;
  uint8_t tr[256], sl[6], cat[12], bc[3] = {0x38, 0x38, 0x38};
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) tr[i * 16 + j] = (uint8_t)(j * 16 + i);
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 3; ++c) sl[r * 3 + c] = (uint8_t)((2 + r) * 16 + 3 + 5 * c);
  memcpy(cat, sl, 6);
  memcpy(cat + 6, sl, 6);
  bt_f8_expect_codes(t, "transpose", &out[0], dtype, tr, 256);
  bt_f8_expect_codes(t, "slice", &out[1], dtype, sl, 6);
  bt_f8_expect_codes(t, "concatenate", &out[2], dtype, cat, 12);
  bt_f8_expect_codes(t, "broadcast_in_dim", &out[3], dtype, bc, 3);
}

// A Constant of the dtype (the emitters write its literal) converted to F32.
static void bt_f8_case_constant(bt_t* t, cml_dtype_t dtype) {
  if (!bt_require_op(t, CML_OP_CONVERT_DTYPE) || !bt_require_dtype(t, dtype)) return;
  const f8_type_t* ty = bt_f8_type(dtype);
  cml_function_t* f = bt_main(t);
  int64_t dims[] = {F8_VALUE_COUNT};
  bt_tensor_t c = bt_f8_tensor(t, dtype, 1, dims, ty->codes, F8_VALUE_COUNT);
  cml_value_t ys[2] = {cml_op_convert_dtype(f, bt_const(t, f, &c), CML_DTYPE_F32),
                       cml_op_convert_dtype(f, bt_const(t, f, &c), dtype)};
  bt_tensor_t out[2];
  if (!bt_exec(t, ys, 2, out)) return;
  double want[F8_VALUE_COUNT];
  for (int i = 0; i < F8_VALUE_COUNT; ++i) want[i] = bt_f8_decode(dtype, ty->codes[i]);
  bt_expect_f64(t, "constant to F32", &out[0], CML_DTYPE_F32, 1, dims, want, 0);
  bt_f8_expect_codes(t, "constant", &out[1], dtype, ty->codes, F8_VALUE_COUNT);
}

// Int1/Uint1, packed 8 per byte: ConvertDType both ways, Bitcast to bytes and Reshape.
static void bt_int1_case(bt_t* t, cml_dtype_t dtype) {
  if (!bt_require_op(t, CML_OP_CONVERT_DTYPE) || !bt_require_op(t, CML_OP_BITCAST) ||
      !bt_require_dtype(t, dtype) || !bt_require_dtype(t, CML_DTYPE_U8))
    return;
  const int64_t one = dtype == CML_DTYPE_I1 ? -1 : 1;
  int64_t v[16];
  uint8_t bytes[2] = {0, 0};
  for (int i = 0; i < 16; ++i) {
    v[i] = (i * 7 + i / 3) % 3 == 1 ? one : 0;
    if (v[i]) bytes[i / 8] |= (uint8_t)(1u << (i % 8));
  }
  cml_function_t* f = bt_main(t);
  int64_t dims[] = {2, 8};
  cml_value_t x = bt_param_i64(t, f, CML_DTYPE_I32, 2, dims, v);
  cml_value_t p = cml_op_convert_dtype(f, x, dtype);
  cml_value_t ys[4] = {
      cml_op_convert_dtype(f, p, CML_DTYPE_I32), cml_op_bitcast(f, p, CML_DTYPE_U8),
      cml_op_convert_dtype(f, cml_op_reshape(f, p, (int64_t[]){16}, 1), CML_DTYPE_F32), p};
  bt_tensor_t out[4];
  if (!bt_exec(t, ys, 4, out)) return;
  bt_expect_i64(t, "back to I32", &out[0], CML_DTYPE_I32, 2, dims, v);
  bt_expect_i64(t, "bitcast to bytes", &out[1], CML_DTYPE_U8, 1, (int64_t[]){2},
                (int64_t[]){bytes[0], bytes[1]});
  double w[16];
  for (int i = 0; i < 16; ++i) w[i] = (double)v[i];
  bt_expect_f64(t, "reshaped to F32", &out[2], CML_DTYPE_F32, 1, (int64_t[]){16}, w, 0);
  if (out[3].size != 2 || memcmp(out[3].data, bytes, 2) != 0)
    bt_fail(t, "%s storage: want bytes 0x%02X 0x%02X", cml_dtype_name(dtype), bytes[0], bytes[1]);
}
static void case_int1(bt_t* t) { bt_int1_case(t, CML_DTYPE_I1); }
static void case_uint1(bt_t* t) { bt_int1_case(t, CML_DTYPE_U1); }

#define BT_F8_CASES(T)                                                                  \
  static void case_from_float_##T(bt_t* t) { bt_f8_case_from_float(t, CML_DTYPE_##T); } \
  static void case_all_codes_##T(bt_t* t) { bt_f8_case_all_codes(t, CML_DTYPE_##T); }   \
  static void case_movement_##T(bt_t* t) { bt_f8_case_movement(t, CML_DTYPE_##T); }     \
  static void case_constant_##T(bt_t* t) { bt_f8_case_constant(t, CML_DTYPE_##T); }
BT_F8_CASES(F8E4M3FN)
BT_F8_CASES(F8E5M2)
BT_F8_CASES(F8E4M3)
BT_F8_CASES(F8E3M4)
BT_F8_CASES(F8E4M3FNUZ)
BT_F8_CASES(F8E5M2FNUZ)
BT_F8_CASES(F8E4M3B11FNUZ)
BT_F8_CASES(F8E8M0FNU)
BT_F8_CASES(F4E2M1FN)

#define BT_F8_ENTRIES(T)                                           \
  {"from_float_" #T, CML_OP_CONVERT_DTYPE, case_from_float_##T},   \
      {"all_codes_" #T, CML_OP_CONVERT_DTYPE, case_all_codes_##T}, \
      {"movement_" #T, CML_OP_TRANSPOSE, case_movement_##T}, {     \
    "constant_" #T, CML_OP_CONVERT_DTYPE, case_constant_##T        \
  }

const bt_case_t bt_cases_elementwise_f8[] = {
    BT_F8_ENTRIES(F8E4M3FN),
    BT_F8_ENTRIES(F8E5M2),
    BT_F8_ENTRIES(F8E4M3),
    BT_F8_ENTRIES(F8E3M4),
    BT_F8_ENTRIES(F8E4M3FNUZ),
    BT_F8_ENTRIES(F8E5M2FNUZ),
    BT_F8_ENTRIES(F8E4M3B11FNUZ),
    BT_F8_ENTRIES(F8E8M0FNU),
    BT_F8_ENTRIES(F4E2M1FN),
    {"int1", CML_OP_CONVERT_DTYPE, case_int1},
    {"uint1", CML_OP_CONVERT_DTYPE, case_uint1},
};
const size_t bt_cases_elementwise_f8_count =
    sizeof bt_cases_elementwise_f8 / sizeof bt_cases_elementwise_f8[0];
