// SPDX-License-Identifier: Apache-2.0
// tests/unit/c_sort_program_test.c: Sort with comparators the c backend runs as programs
// (lexicographic chains of compares of per-element keys, under Abs / Neg): every result must be
// the reference backend's bit for bit (c:reference=true calls the comparator per comparison),
// the same on 1 and 3 threads, and on lines free of NaN (or under TotalOrder compares) the
// stable sort a direct insertion sort here computes with the comparator written in C.
// Keys mix ties, -0 and +0, infinities, subnormals and the most negative integers (whose Abs
// and Neg wrap), each set with and without NaNs of both signs (lines free of NaN take the
// encoded sort: the merge sort on u64 keys, or the radix sort from 1024 elements; lines with one
// run the program's compares); lines of 0, 1, 2, 7, 64, 1001, 1500 and 5000 elements along the
// last axis and along axis 0. Plain LessThan / GreaterThan of the dtypes without a 32-bit radix
// sort run the same checks (their u64-key radix sort from 1024 elements against the reference's
// merge sort through the typed comparison, and by hand with NaN placed as that comparison
// places it).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cml/cml.h"
#include "test.h"

enum { SP_MAX_OPERANDS = 4 };

// A comparator body: |p| holds the 2 * operand-count parameters (lhs_0, rhs_0, lhs_1, ...).
typedef cml_value_t (*sp_body_fn)(cml_function_t* c, const cml_value_t* p);
// The comparator in C on flat elements |i| (lhs) and |j| (rhs) of the host keys.
typedef bool (*sp_before_fn)(void* const* keys, int64_t i, int64_t j);

typedef struct sp_case_t {
  const char* name;
  uint32_t key_count;  // operands before the i32 payload
  cml_dtype_t dtypes[SP_MAX_OPERANDS - 1];
  sp_body_fn body;
  sp_before_fn before;
  bool total;  // a strict weak order even with NaNs: lines with NaN are checked by hand too
} sp_case_t;

//===--- comparators ---===//

static float sp_f32(void* const* k, uint32_t o, int64_t i) { return ((const float*)k[o])[i]; }
static double sp_f64(void* const* k, uint32_t o, int64_t i) { return ((const double*)k[o])[i]; }

// GreaterThan(Abs(lhs), Abs(rhs)) of f32: by magnitude, descending.
static cml_value_t sp_abs_gt(cml_function_t* c, const cml_value_t* p) {
  return cml_op_greater_than(c, cml_op_abs(c, p[0]), cml_op_abs(c, p[1]));
}
static bool sp_abs_gt_c(void* const* k, int64_t i, int64_t j) {
  return fabsf(sp_f32(k, 0, i)) > fabsf(sp_f32(k, 0, j));
}

// (i32 k0, f32 k1) ascending: Or(LessThan(a0, b0), And(Equal(a0, b0), LessThan(a1, b1))).
static cml_value_t sp_lexi(cml_function_t* c, const cml_value_t* p) {
  return cml_op_logical_or(
      c, cml_op_less_than(c, p[0], p[1]),
      cml_op_logical_and(c, cml_op_equal(c, p[0], p[1]), cml_op_less_than(c, p[2], p[3])));
}
static bool sp_lexi_c(void* const* k, int64_t i, int64_t j) {
  const int32_t a = ((const int32_t*)k[0])[i], b = ((const int32_t*)k[0])[j];
  return a < b || (a == b && sp_f32(k, 1, i) < sp_f32(k, 1, j));
}

// The same chain written mirrored and with the operands of Or / And swapped, over (f64, f32):
// Or(And(Equal(b0, a0), GreaterThan(Neg(b1), Neg(a1))), GreaterThan(b0, a0)).
static cml_value_t sp_mirrored(cml_function_t* c, const cml_value_t* p) {
  cml_value_t tie =
      cml_op_logical_and(c, cml_op_equal(c, p[1], p[0]),
                         cml_op_greater_than(c, cml_op_neg(c, p[3]), cml_op_neg(c, p[2])));
  return cml_op_logical_or(c, tie, cml_op_greater_than(c, p[1], p[0]));
}
static bool sp_mirrored_c(void* const* k, int64_t i, int64_t j) {
  const double a = sp_f64(k, 0, i), b = sp_f64(k, 0, j);
  return b > a || (b == a && -sp_f32(k, 1, j) > -sp_f32(k, 1, i));
}

// TotalOrder f32 keys, then i64 ascending.
static cml_value_t sp_total(cml_function_t* c, const cml_value_t* p) {
  return cml_op_logical_or(c, cml_op_less_than_total_order(c, p[0], p[1]),
                           cml_op_logical_and(c, cml_op_equal_total_order(c, p[0], p[1]),
                                              cml_op_less_than(c, p[2], p[3])));
}
// -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN, on the bits.
static int64_t sp_total_rank(float x) {
  uint32_t b;
  memcpy(&b, &x, sizeof b);
  return (b & 0x80000000u) ? -(int64_t)(b & 0x7FFFFFFFu) - 1 : (int64_t)b;
}
static bool sp_total_c(void* const* k, int64_t i, int64_t j) {
  const int64_t a = sp_total_rank(sp_f32(k, 0, i)), b = sp_total_rank(sp_f32(k, 0, j));
  return a < b || (a == b && ((const int64_t*)k[1])[i] < ((const int64_t*)k[1])[j]);
}

// LessOrEqual(Abs(lhs), Abs(rhs)) of bf16: no strict weak order (equal magnitudes are each
// before the other), only the reference's permutation says where they go.
static cml_value_t sp_bf16_le(cml_function_t* c, const cml_value_t* p) {
  return cml_op_less_or_equal(c, cml_op_abs(c, p[0]), cml_op_abs(c, p[1]));
}

// i8 by Neg descending (-128 stays -128), ties (Equal of the raw keys) by u32 descending.
static cml_value_t sp_i8_neg(cml_function_t* c, const cml_value_t* p) {
  return cml_op_logical_or(
      c, cml_op_greater_than(c, cml_op_neg(c, p[0]), cml_op_neg(c, p[1])),
      cml_op_logical_and(c, cml_op_equal(c, p[0], p[1]), cml_op_less_than(c, p[3], p[2])));
}
static bool sp_i8_neg_c(void* const* k, int64_t i, int64_t j) {
  const int8_t a = ((const int8_t*)k[0])[i], b = ((const int8_t*)k[0])[j];
  const int8_t na = (int8_t)(uint8_t)(0u - (uint8_t)a), nb = (int8_t)(uint8_t)(0u - (uint8_t)b);
  const uint32_t x = ((const uint32_t*)k[1])[i], y = ((const uint32_t*)k[1])[j];
  return na > nb || (a == b && y < x);
}

// i32 by Abs descending (Abs(INT32_MIN) is INT32_MIN: last).
static bool sp_i32_abs_c(void* const* k, int64_t i, int64_t j) {
  const int32_t a = ((const int32_t*)k[0])[i], b = ((const int32_t*)k[0])[j];
  const int32_t x = a < 0 ? (int32_t)(0u - (uint32_t)a) : a;
  const int32_t y = b < 0 ? (int32_t)(0u - (uint32_t)b) : b;
  return x > y;
}

// i16 descending, then f16 by Neg ascending (the f16 keys are compared as f32).
static cml_value_t sp_i16_f16(cml_function_t* c, const cml_value_t* p) {
  return cml_op_logical_or(
      c, cml_op_greater_than(c, p[0], p[1]),
      cml_op_logical_and(c, cml_op_equal(c, p[0], p[1]),
                         cml_op_less_than(c, cml_op_neg(c, p[2]), cml_op_neg(c, p[3]))));
}
static bool sp_i16_f16_c(void* const* k, int64_t i, int64_t j) {
  const int16_t a = ((const int16_t*)k[0])[i], b = ((const int16_t*)k[0])[j];
  const float x = cml_f16_to_f32(((const uint16_t*)k[1])[i]);
  const float y = cml_f16_to_f32(((const uint16_t*)k[1])[j]);
  return a > b || (a == b && -x < -y);
}

// Three levels: bool ascending, i16 descending, f64 by Abs(Neg) ascending.
static cml_value_t sp_three(cml_function_t* c, const cml_value_t* p) {
  cml_value_t last =
      cml_op_less_than(c, cml_op_abs(c, cml_op_neg(c, p[4])), cml_op_abs(c, cml_op_neg(c, p[5])));
  cml_value_t second = cml_op_logical_or(
      c, cml_op_greater_than(c, p[2], p[3]),
      cml_op_logical_and(c, last, cml_op_equal(c, p[2], p[3])));  // And's operands swapped
  return cml_op_logical_or(c, cml_op_less_than(c, p[0], p[1]),
                           cml_op_logical_and(c, cml_op_equal(c, p[0], p[1]), second));
}
static bool sp_three_c(void* const* k, int64_t i, int64_t j) {
  const int a = ((const uint8_t*)k[0])[i] != 0, b = ((const uint8_t*)k[0])[j] != 0;
  const int16_t x = ((const int16_t*)k[1])[i], y = ((const int16_t*)k[1])[j];
  if (a != b) return a < b;
  if (x != y) return x > y;
  return fabs(sp_f64(k, 2, i)) < fabs(sp_f64(k, 2, j));
}

// A plain LessThan / GreaterThan of operand 0 whose dtype has no 32-bit radix sort (not f32 or
// i32): lines from 1024 elements take one u64 key per element and a radix sort, the reference
// the merge sort through the typed comparison. In C: the key as a long double (exact for every
// integer here), a NaN after every other value under LessThan and before under GreaterThan,
// equal among NaNs, -0 equal to +0 (the typed comparisons' strict weak order, as XLA's CPU
// runtime places NaNs): checked by hand on lines with NaNs too.
static cml_value_t sp_plain_lt(cml_function_t* c, const cml_value_t* p) {
  return cml_op_less_than(c, p[0], p[1]);
}
static cml_value_t sp_plain_gt(cml_function_t* c, const cml_value_t* p) {
  return cml_op_greater_than(c, p[0], p[1]);
}
static long double sp_key(cml_dtype_t dt, void* const* k, int64_t i) {
  switch (dt) {
    case CML_DTYPE_BOOL:
    case CML_DTYPE_U8:
      return ((const uint8_t*)k[0])[i];
    case CML_DTYPE_I8:
      return ((const int8_t*)k[0])[i];
    case CML_DTYPE_U16:
      return ((const uint16_t*)k[0])[i];
    case CML_DTYPE_I16:
      return ((const int16_t*)k[0])[i];
    case CML_DTYPE_U32:
      return ((const uint32_t*)k[0])[i];
    case CML_DTYPE_U64:
      return ((const uint64_t*)k[0])[i];
    case CML_DTYPE_I64:
      return ((const int64_t*)k[0])[i];
    case CML_DTYPE_F64:
      return ((const double*)k[0])[i];
    case CML_DTYPE_F16:
      return cml_f16_to_f32(((const uint16_t*)k[0])[i]);
    case CML_DTYPE_BF16:
      return cml_bf16_to_f32(((const uint16_t*)k[0])[i]);
    default:
      return 0;
  }
}
static bool sp_plain_before(cml_dtype_t dt, bool gt, void* const* k, int64_t i, int64_t j) {
  const long double x = sp_key(dt, k, i), y = sp_key(dt, k, j);
  if (x != x || y != y) return gt ? (x != x && y == y) : (x == x && y != y);
  return gt ? x > y : x < y;
}
#define SP_PLAIN(name, DT, GT)                                        \
  static bool sp_plain_##name(void* const* k, int64_t i, int64_t j) { \
    return sp_plain_before(DT, GT, k, i, j);                          \
  }
SP_PLAIN(lt_u32, CML_DTYPE_U32, false)
SP_PLAIN(gt_i64, CML_DTYPE_I64, true)
SP_PLAIN(lt_f64, CML_DTYPE_F64, false)
SP_PLAIN(gt_f64, CML_DTYPE_F64, true)
SP_PLAIN(lt_bf16, CML_DTYPE_BF16, false)
SP_PLAIN(gt_f16, CML_DTYPE_F16, true)
SP_PLAIN(lt_i8, CML_DTYPE_I8, false)
SP_PLAIN(gt_i16, CML_DTYPE_I16, true)
SP_PLAIN(lt_bool, CML_DTYPE_BOOL, false)
SP_PLAIN(gt_u8, CML_DTYPE_U8, true)
SP_PLAIN(lt_u16, CML_DTYPE_U16, false)
SP_PLAIN(lt_u64, CML_DTYPE_U64, false)
SP_PLAIN(gt_u64, CML_DTYPE_U64, true)

static const sp_case_t sp_cases[] = {
    {"plain_lt_u32", 1, {CML_DTYPE_U32}, sp_plain_lt, sp_plain_lt_u32, true},
    {"plain_gt_i64", 1, {CML_DTYPE_I64}, sp_plain_gt, sp_plain_gt_i64, true},
    {"plain_lt_f64", 1, {CML_DTYPE_F64}, sp_plain_lt, sp_plain_lt_f64, true},
    {"plain_gt_f64", 1, {CML_DTYPE_F64}, sp_plain_gt, sp_plain_gt_f64, true},
    {"plain_lt_bf16", 1, {CML_DTYPE_BF16}, sp_plain_lt, sp_plain_lt_bf16, true},
    {"plain_gt_f16", 1, {CML_DTYPE_F16}, sp_plain_gt, sp_plain_gt_f16, true},
    {"plain_lt_i8", 1, {CML_DTYPE_I8}, sp_plain_lt, sp_plain_lt_i8, true},
    {"plain_gt_i16", 1, {CML_DTYPE_I16}, sp_plain_gt, sp_plain_gt_i16, true},
    {"plain_lt_bool", 1, {CML_DTYPE_BOOL}, sp_plain_lt, sp_plain_lt_bool, true},
    {"plain_gt_u8", 1, {CML_DTYPE_U8}, sp_plain_gt, sp_plain_gt_u8, true},
    {"plain_lt_u16", 1, {CML_DTYPE_U16}, sp_plain_lt, sp_plain_lt_u16, true},
    {"plain_lt_u64", 1, {CML_DTYPE_U64}, sp_plain_lt, sp_plain_lt_u64, true},
    {"plain_gt_u64", 1, {CML_DTYPE_U64}, sp_plain_gt, sp_plain_gt_u64, true},
    {"abs_gt_f32", 1, {CML_DTYPE_F32}, sp_abs_gt, sp_abs_gt_c, false},
    {"lexi_i32_f32", 2, {CML_DTYPE_I32, CML_DTYPE_F32}, sp_lexi, sp_lexi_c, false},
    {"mirrored_f64_f32", 2, {CML_DTYPE_F64, CML_DTYPE_F32}, sp_mirrored, sp_mirrored_c, false},
    {"total_f32_i64", 2, {CML_DTYPE_F32, CML_DTYPE_I64}, sp_total, sp_total_c, true},
    {"le_abs_bf16", 1, {CML_DTYPE_BF16}, sp_bf16_le, NULL, false},
    {"neg_i8_u32", 2, {CML_DTYPE_I8, CML_DTYPE_U32}, sp_i8_neg, sp_i8_neg_c, false},
    {"abs_gt_i32", 1, {CML_DTYPE_I32}, sp_abs_gt, sp_i32_abs_c, false},
    {"i16_neg_f16", 2, {CML_DTYPE_I16, CML_DTYPE_F16}, sp_i16_f16, sp_i16_f16_c, false},
    {"three_bool_i16_f64",
     3,
     {CML_DTYPE_BOOL, CML_DTYPE_I16, CML_DTYPE_F64},
     sp_three,
     sp_three_c,
     false},
};

//===--- data ---===//

static uint32_t sp_hash(uint32_t x) {
  x *= 2654435761u;
  x ^= x >> 15;
  x *= 2246822519u;
  x ^= x >> 13;
  return x;
}

// A float key for hash |h|: few distinct values (ties), and the special values (NaN only when
// |*nan| is true on entry; it says on return whether the value is NaN).
static double sp_float_value(uint32_t h, bool* nan) {
  const bool allow_nan = *nan;
  *nan = false;
  if (allow_nan && h % 17u == 0) {
    *nan = true;
    return (h & 64u) ? -NAN : NAN;
  }
  if (h % 19u == 0) return -0.0;
  if (h % 23u == 0) return 0.0;
  if (h % 29u == 0) return (h & 64u) ? -INFINITY : INFINITY;
  return (double)((int)(h % 13u) - 6) / 2.0;
}

// Fills element |i| of |dtype| at |dst|; NaN keys only when |*nan| is true on entry, and
// |*nan| says on return whether the key is NaN.
static void sp_fill(cml_dtype_t dtype, void* dst, int64_t i, uint32_t h, bool* nan) {
  const bool allow_nan = *nan;
  *nan = false;
  switch (dtype) {
    case CML_DTYPE_F32: {
      *nan = allow_nan;
      float v = (float)sp_float_value(h, nan);
      if (h % 31u == 0) v = (h & 64u) ? -1e-40f : 1e-40f;  // subnormal
      ((float*)dst)[i] = v;
      break;
    }
    case CML_DTYPE_F64: {
      *nan = allow_nan;
      double v = sp_float_value(h, nan);
      if (h % 31u == 0) v = (h & 64u) ? -1e-310 : 1e-310;
      ((double*)dst)[i] = v;
      break;
    }
    case CML_DTYPE_F16:
      *nan = allow_nan;
      ((uint16_t*)dst)[i] = cml_f32_to_f16((float)sp_float_value(h, nan));
      break;
    case CML_DTYPE_BF16:
      *nan = allow_nan;
      ((uint16_t*)dst)[i] = cml_f32_to_bf16((float)sp_float_value(h, nan));
      break;
    case CML_DTYPE_I8:
      ((int8_t*)dst)[i] = h % 11u == 0 ? INT8_MIN : h % 13u == 0 ? INT8_MAX : (int8_t)(h % 7u) - 3;
      break;
    case CML_DTYPE_I16:
      ((int16_t*)dst)[i] = (int16_t)((int)(h % 5u) - 2);
      break;
    case CML_DTYPE_I32:
      ((int32_t*)dst)[i] = h % 11u == 0 ? INT32_MIN : (int32_t)(h % 9u) - 4;
      break;
    case CML_DTYPE_I64:
      ((int64_t*)dst)[i] = h % 11u == 0 ? INT64_MIN : (int64_t)(h % 3u) - 1;
      break;
    case CML_DTYPE_U32:
      ((uint32_t*)dst)[i] = (h % 13u == 0 ? 4000000000u : 0u) + h % 4u;
      break;
    case CML_DTYPE_U8:
      ((uint8_t*)dst)[i] = (uint8_t)(h % 7u == 0 ? 255u - h % 3u : h % 5u);
      break;
    case CML_DTYPE_U16:
      ((uint16_t*)dst)[i] = (uint16_t)(h % 7u == 0 ? 65535u - h % 3u : h % 300u);
      break;
    case CML_DTYPE_U64:  // every byte of the key in play: the radix sort's 8 passes
      ((uint64_t*)dst)[i] = h % 5u == 0   ? UINT64_MAX - h % 3u
                            : h % 5u == 1 ? ((uint64_t)(h % 7u) << 56) | (h % 3u)
                                          : (uint64_t)(h % 11u) * 0x0101010101010101ull;
      break;
    case CML_DTYPE_BOOL:
      ((uint8_t*)dst)[i] = (uint8_t)(h % 2u);
      break;
    default:
      break;
  }
}

//===--- running ---===//

// Sorts |count| operands of |shape| along |axis| with |c|'s comparator on backend |config|
// (the last operand an i32 payload) into |out| (caller-allocated, one array per operand).
static void sp_run(int* test_failed_, const char* config, const sp_case_t* c, cml_shape_t shape,
                   int64_t axis, void* const* in, void** out) {
  cml_backend_t* backend = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config(config, &backend));
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(backend, "sort_program", &b));
  cml_function_t* f = cml_builder_main(b);
  const uint32_t count = c->key_count + 1;
  cml_shape_t shapes[SP_MAX_OPERANDS];
  cml_value_t ops[SP_MAX_OPERANDS], params[2 * SP_MAX_OPERANDS], sorted[SP_MAX_OPERANDS];
  cml_function_t* cmp = NULL;
  ASSERT_STATUS_OK(cml_function_new_closure(f, &cmp));
  for (uint32_t k = 0; k < count; ++k) {
    shapes[k] = shape;
    shapes[k].dtype = k < c->key_count ? c->dtypes[k] : CML_DTYPE_I32;
    ops[k] = cml_parameter(f, NULL, &shapes[k]);
    cml_shape_t scalar = cml_shape_scalar(shapes[k].dtype);
    params[2 * k] = cml_parameter(cmp, NULL, &scalar);
    params[2 * k + 1] = cml_parameter(cmp, NULL, &scalar);
  }
  cml_value_t res = c->body(cmp, params);
  ASSERT_STATUS_OK(cml_function_return(cmp, &res, 1));
  ASSERT_TRUE(cml_op_sort(f, cmp, axis, true, ops, count, sorted));
  ASSERT_STATUS_OK(cml_function_return(f, sorted, count));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(cml_builder_compile(b, &exe));
  cml_builder_destroy(b);
  cml_buffer_t *bin[SP_MAX_OPERANDS] = {0}, *bout[SP_MAX_OPERANDS] = {0};
  for (uint32_t k = 0; k < count; ++k) {
    ASSERT_STATUS_OK(cml_buffer_from_host(backend, 0, &shapes[k], in[k],
                                          cml_shape_byte_size(&shapes[k]), &bin[k]));
  }
  ASSERT_STATUS_OK(cml_executable_execute(exe, bin, count, NULL, 0, bout));
  for (uint32_t k = 0; k < count; ++k) {
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(bout[k], out[k], cml_shape_byte_size(&shapes[k])));
    cml_buffer_release(bout[k]);
    cml_buffer_release(bin[k]);
  }
  cml_executable_release(exe);
  cml_backend_release(backend);
}

// The backends: the reference (which calls the comparator), 1 and 3 threads, and the same
// flushing denormal results (subnormal keys must stay as the calls see them), each checked
// against the reference of the same flush setting (sp_oracle).
enum { SP_CONFIGS = 5 };
static const char* const configs[SP_CONFIGS] = {"c:reference=true", "c:threads=1", "c:threads=3",
                                                "c:reference=true,flush_denormals=true",
                                                "c:threads=2,flush_denormals=true"};
static const int sp_oracle[SP_CONFIGS] = {0, 0, 0, 3, 3};

// One case on [rows, cols] sorted along |axis|.
static void sp_check(int* test_failed_, const sp_case_t* c, int64_t rows, int64_t cols,
                     int64_t axis, bool with_nan) {
  const int64_t n = rows * cols, len = axis == 0 ? rows : cols, lines = n / (len ? len : 1);
  const uint32_t count = c->key_count + 1;
  const int64_t dims[2] = {rows, cols};
  cml_shape_t shape = cml_shape_make(CML_DTYPE_I32, 2, dims);
  void *in[SP_MAX_OPERANDS], *out[SP_CONFIGS][SP_MAX_OPERANDS];
  size_t bytes[SP_MAX_OPERANDS];
  bool* nan_line = calloc((size_t)lines + 1, 1);
  ASSERT_TRUE(nan_line != NULL);
  for (uint32_t k = 0; k < count; ++k) {
    const cml_dtype_t dt = k < c->key_count ? c->dtypes[k] : CML_DTYPE_I32;
    bytes[k] = (size_t)n * (size_t)cml_dtype_bits(dt) / 8;
    in[k] = malloc(bytes[k] + 8);
    ASSERT_TRUE(in[k] != NULL);
    for (int r = 0; r < SP_CONFIGS; ++r) {
      out[r][k] = malloc(bytes[k] + 8);
      ASSERT_TRUE(out[r][k] != NULL);
    }
    for (int64_t i = 0; i < n; ++i) {
      bool nan = with_nan;
      if (k < c->key_count) {
        sp_fill(dt, in[k], i, sp_hash((uint32_t)(i * 4 + k)), &nan);
      } else {
        ((int32_t*)in[k])[i] = (int32_t)i;
        nan = false;
      }
      // Element i lies on line (row) i / cols along axis 1, (column) i % cols along axis 0.
      if (nan) nan_line[axis == 0 ? i % cols : i / cols] = true;
    }
  }
  for (int r = 0; r < SP_CONFIGS; ++r) {
    sp_run(test_failed_, configs[r], c, shape, axis, in, out[r]);
    if (*test_failed_) {
      fprintf(stderr, "case %s [%lld, %lld] axis %lld%s on %s\n", c->name, (long long)rows,
              (long long)cols, (long long)axis, with_nan ? " with NaNs" : "", configs[r]);
      return;
    }
  }
  for (uint32_t k = 0; k < count; ++k) {
    for (int r = 1; r < SP_CONFIGS; ++r) {
      if (memcmp(out[sp_oracle[r]][k], out[r][k], bytes[k]) != 0) {
        TEST_FAIL_("case %s [%lld, %lld] axis %lld: operand %u on %s differs from the reference",
                   c->name, (long long)rows, (long long)cols, (long long)axis, k, configs[r]);
      }
    }
  }
  // By hand: a stable insertion sort of each line's flat indices with the C comparator.
  int64_t* perm = malloc(sizeof(int64_t) * (size_t)(len + 1));
  ASSERT_TRUE(perm != NULL);
  const int32_t* payload = (const int32_t*)out[1][c->key_count];
  for (int64_t line = 0; c->before && line < lines; ++line) {
    if (nan_line[line] && !c->total) continue;
    for (int64_t p = 0; p < len; ++p) perm[p] = axis == 0 ? p * cols + line : line * cols + p;
    for (int64_t p = 1; p < len; ++p) {
      for (int64_t q = p; q > 0 && c->before(in, perm[q], perm[q - 1]); --q) {
        const int64_t t = perm[q];
        perm[q] = perm[q - 1];
        perm[q - 1] = t;
      }
    }
    for (int64_t p = 0; p < len; ++p) {
      const int64_t at = axis == 0 ? p * cols + line : line * cols + p;
      if (payload[at] != perm[p]) {
        TEST_FAIL_("case %s [%lld, %lld] axis %lld line %lld: position %lld holds %d, not %lld",
                   c->name, (long long)rows, (long long)cols, (long long)axis, (long long)line,
                   (long long)p, payload[at], (long long)perm[p]);
      }
      for (uint32_t k = 0; k < c->key_count; ++k) {
        const size_t es = (size_t)cml_dtype_bits(c->dtypes[k]) / 8;
        ASSERT_TRUE(memcmp((const uint8_t*)out[1][k] + (size_t)at * es,
                           (const uint8_t*)in[k] + (size_t)perm[p] * es, es) == 0);
      }
    }
  }
  free(perm);
  free(nan_line);
  for (uint32_t k = 0; k < count; ++k) {
    free(in[k]);
    for (int r = 0; r < SP_CONFIGS; ++r) free(out[r][k]);
  }
}

TEST(sort_programs_match_the_reference_and_by_hand) {
  static const int64_t shapes[][3] = {
      // rows, cols, axis
      {3, 0, 1},    {2, 1, 1},    {5, 2, 1},    {3, 7, 1},    {7, 64, 0},
      {1001, 3, 0}, {2, 1001, 1}, {1500, 2, 0}, {1, 5000, 1},
  };
  for (size_t ci = 0; ci < sizeof sp_cases / sizeof sp_cases[0]; ++ci) {
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; ++si) {
      for (int with_nan = 0; with_nan < 2; ++with_nan) {
        sp_check(test_failed_, &sp_cases[ci], shapes[si][0], shapes[si][1], shapes[si][2],
                 with_nan != 0);
        if (*test_failed_) {
          fprintf(stderr, "case %s [%lld, %lld] axis %lld%s\n", sp_cases[ci].name,
                  (long long)shapes[si][0], (long long)shapes[si][1], (long long)shapes[si][2],
                  with_nan ? " with NaNs" : "");
          return;
        }
      }
    }
  }
}

TEST_MAIN(TEST_ENTRY(sort_programs_match_the_reference_and_by_hand))
