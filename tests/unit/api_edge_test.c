// SPDX-License-Identifier: Apache-2.0
// tests/unit/api_edge_test.c: edge values through executed graphs (public API only): integer
// overflow, division by zero and INT_MIN / -1 (no SIGFPE, XLA's results), shifts past the bit
// width, float -> int saturation, out-of-range Gather/Scatter/DynamicSlice indices (clamped or
// skipped, never out of bounds), Sort with inconsistent comparators and NaNs. Run it under
// ASan/UBSan: signed overflow in a kernel is a bug even when the bits come out right.
#include <limits.h>
#include <math.h>

#include "api_common.h"
#include "test.h"

static cml_backend_t* g_backend;

static cml_backend_t* backend_c(void) {
  if (!g_backend) {
    cml_status_t st = cml_backend_new_with_config("c", &g_backend);
    if (st != CML_OK) {
      fprintf(stderr, "backend: %s\n", cml_status_message(st));
      cml_status_free(st);
    }
  }
  return g_backend;
}

// Runs a binary op on two 1-D arrays of |n| elements of |dt|.
static cml_status_t run_binary(cml_op_t op, cml_dtype_t dt, int64_t n, const void* a, const void* b,
                               void* out) {
  cml_builder_t* bld = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(backend_c(), "bin", &bld));
  cml_function_t* f = cml_builder_main(bld);
  cml_shape_t s = cml_shape_make(dt, 1, &n);
  cml_value_t x = cml_parameter(f, "a", &s), y = cml_parameter(f, "b", &s);
  cml_value_t z = cml_op_binary(f, op, x, y);
  cml_executable_t* exe = NULL;
  CML_RETURN_IF_ERROR(api_finish(bld, &z, 1, &exe));
  cml_status_t st = api_run(backend_c(), exe, (const void* const[]){a, b}, (void* const[]){out});
  cml_executable_release(exe);
  return st;
}

static cml_status_t run_unary(cml_op_t op, cml_dtype_t dt, int64_t n, const void* a, void* out) {
  cml_builder_t* bld = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(backend_c(), "un", &bld));
  cml_function_t* f = cml_builder_main(bld);
  cml_shape_t s = cml_shape_make(dt, 1, &n);
  cml_value_t x = cml_parameter(f, "a", &s);
  cml_value_t z = cml_op_unary(f, op, x);
  cml_executable_t* exe = NULL;
  CML_RETURN_IF_ERROR(api_finish(bld, &z, 1, &exe));
  cml_status_t st = api_run(backend_c(), exe, (const void* const[]){a}, (void* const[]){out});
  cml_executable_release(exe);
  return st;
}

TEST(int32_arithmetic_edges) {
  enum { N = 6 };
  static const int32_t a[N] = {INT_MAX, INT_MIN, INT_MIN, 7, -7, INT_MIN};
  static const int32_t b[N] = {1, -1, -1, 0, 0, INT_MIN};
  int32_t got[N];
  // Add/Sub/Mul wrap (two's complement), as XLA does.
  ASSERT_STATUS_OK(run_binary(CML_OP_ADD, CML_DTYPE_I32, N, a, b, got));
  for (int i = 0; i < N; ++i) ASSERT_EQ_INT(got[i], (int32_t)((uint32_t)a[i] + (uint32_t)b[i]));
  ASSERT_STATUS_OK(run_binary(CML_OP_SUB, CML_DTYPE_I32, N, a, b, got));
  for (int i = 0; i < N; ++i) ASSERT_EQ_INT(got[i], (int32_t)((uint32_t)a[i] - (uint32_t)b[i]));
  ASSERT_STATUS_OK(run_binary(CML_OP_MUL, CML_DTYPE_I32, N, a, b, got));
  for (int i = 0; i < N; ++i) ASSERT_EQ_INT(got[i], (int32_t)((uint32_t)a[i] * (uint32_t)b[i]));
  // Div: x / 0 = -1, INT_MIN / -1 = INT_MIN.
  ASSERT_STATUS_OK(run_binary(CML_OP_DIV, CML_DTYPE_I32, N, a, b, got));
  ASSERT_EQ_INT(got[0], INT_MAX);
  ASSERT_EQ_INT(got[1], INT_MIN);
  ASSERT_EQ_INT(got[3], -1);
  ASSERT_EQ_INT(got[4], -1);
  ASSERT_EQ_INT(got[5], 1);
  // Rem: x % 0 = x, INT_MIN % -1 = 0.
  ASSERT_STATUS_OK(run_binary(CML_OP_REM, CML_DTYPE_I32, N, a, b, got));
  ASSERT_EQ_INT(got[0], 0);
  ASSERT_EQ_INT(got[1], 0);
  ASSERT_EQ_INT(got[3], 7);
  ASSERT_EQ_INT(got[4], -7);
  ASSERT_EQ_INT(got[5], 0);
  // Neg and Abs of INT_MIN wrap to INT_MIN.
  ASSERT_STATUS_OK(run_unary(CML_OP_NEG, CML_DTYPE_I32, N, a, got));
  ASSERT_EQ_INT(got[1], INT_MIN);
  ASSERT_EQ_INT(got[0], -INT_MAX);
  ASSERT_STATUS_OK(run_unary(CML_OP_ABS, CML_DTYPE_I32, N, a, got));
  ASSERT_EQ_INT(got[1], INT_MIN);
  ASSERT_EQ_INT(got[4], 7);
}

TEST(int64_and_unsigned_edges) {
  enum { N = 4 };
  static const int64_t a[N] = {INT64_MIN, INT64_MIN, INT64_MAX, 5};
  static const int64_t b[N] = {-1, 0, 2, -3};
  int64_t got[N];
  ASSERT_STATUS_OK(run_binary(CML_OP_DIV, CML_DTYPE_I64, N, a, b, got));
  ASSERT_EQ_INT(got[0], INT64_MIN);
  ASSERT_EQ_INT(got[1], -1);
  ASSERT_EQ_INT(got[3], -1);  // truncates toward zero
  ASSERT_STATUS_OK(run_binary(CML_OP_MUL, CML_DTYPE_I64, N, a, b, got));
  ASSERT_EQ_INT(got[0], INT64_MIN);
  ASSERT_EQ_INT(got[2], -2);
  ASSERT_STATUS_OK(run_binary(CML_OP_REM, CML_DTYPE_I64, N, a, b, got));
  ASSERT_EQ_INT(got[0], 0);
  ASSERT_EQ_INT(got[1], INT64_MIN);
  ASSERT_EQ_INT(got[3], 2);  // sign of the dividend
  static const uint8_t ua[N] = {200, 7, 0, 255};
  static const uint8_t ub[N] = {100, 0, 1, 255};
  uint8_t ug[N];
  ASSERT_STATUS_OK(run_binary(CML_OP_ADD, CML_DTYPE_U8, N, ua, ub, ug));
  ASSERT_EQ_INT(ug[0], 44);
  ASSERT_EQ_INT(ug[3], 254);
  ASSERT_STATUS_OK(run_binary(CML_OP_DIV, CML_DTYPE_U8, N, ua, ub, ug));
  ASSERT_EQ_INT(ug[1], 255);  // all bits set
  ASSERT_STATUS_OK(run_binary(CML_OP_SUB, CML_DTYPE_U8, N, ub, ua, ug));
  ASSERT_EQ_INT(ug[2], 1);
  ASSERT_EQ_INT(ug[0], 156);
  static const int8_t sa[N] = {-128, 127, -128, 1};
  static const int8_t sb[N] = {-1, 1, -128, 0};
  int8_t sg[N];
  ASSERT_STATUS_OK(run_binary(CML_OP_MUL, CML_DTYPE_I8, N, sa, sb, sg));
  ASSERT_EQ_INT(sg[0], -128);
  ASSERT_EQ_INT(sg[1], 127);
  ASSERT_EQ_INT(sg[2], 0);
  ASSERT_STATUS_OK(run_binary(CML_OP_DIV, CML_DTYPE_I8, N, sa, sb, sg));
  ASSERT_EQ_INT(sg[0], -128);
  ASSERT_EQ_INT(sg[3], -1);
}

TEST(shift_edges) {
  enum { N = 6 };
  static const int32_t a[N] = {1, -8, -8, 1, 0x40000000, -1};
  static const int32_t b[N] = {31, 1, 40, -1, 1, 32};
  int32_t got[N];
  ASSERT_STATUS_OK(run_binary(CML_OP_SHIFT_LEFT, CML_DTYPE_I32, N, a, b, got));
  ASSERT_EQ_INT(got[0], INT_MIN);
  ASSERT_EQ_INT(got[1], -16);
  ASSERT_EQ_INT(got[2], 0);
  ASSERT_EQ_INT(got[3], 0);  // negative counts are huge when read unsigned
  ASSERT_EQ_INT(got[4], INT_MIN);
  ASSERT_EQ_INT(got[5], 0);
  ASSERT_STATUS_OK(run_binary(CML_OP_SHIFT_RIGHT_ARITHMETIC, CML_DTYPE_I32, N, a, b, got));
  ASSERT_EQ_INT(got[1], -4);
  ASSERT_EQ_INT(got[2], -1);
  ASSERT_EQ_INT(got[5], -1);
  ASSERT_STATUS_OK(run_binary(CML_OP_SHIFT_RIGHT_LOGICAL, CML_DTYPE_I32, N, a, b, got));
  ASSERT_EQ_INT(got[1], 0x7ffffffc);
  ASSERT_EQ_INT(got[2], 0);
  ASSERT_EQ_INT(got[5], 0);
  static const int8_t c[2] = {-128, 64};
  static const int8_t d[2] = {7, 9};
  int8_t g8[2];
  ASSERT_STATUS_OK(run_binary(CML_OP_SHIFT_RIGHT_ARITHMETIC, CML_DTYPE_I8, 2, c, d, g8));
  ASSERT_EQ_INT(g8[0], -1);
  ASSERT_EQ_INT(g8[1], 0);
  ASSERT_STATUS_OK(run_binary(CML_OP_SHIFT_LEFT, CML_DTYPE_I8, 2, c, d, g8));
  ASSERT_EQ_INT(g8[0], 0);
  ASSERT_EQ_INT(g8[1], 0);
}

TEST(int_reductions_wrap) {
  // ReduceSum / ReduceProduct of Int32 that overflow wrap like two's complement.
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(backend_c(), "red", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = API_SHAPE(CML_DTYPE_I32, 4);
  cml_value_t x = cml_parameter(f, "x", &s);
  cml_value_t outs[2] = {cml_op_reduce_sum(f, x, NULL, 0), cml_op_reduce_product(f, x, NULL, 0)};
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(b, outs, 2, &exe));
  static const int32_t v[4] = {INT_MAX, INT_MAX, 3, 65536};
  int32_t sum = 0, prod = 0;
  cml_status_t st =
      api_run(backend_c(), exe, (const void* const[]){v}, (void* const[]){&sum, &prod});
  cml_executable_release(exe);
  ASSERT_STATUS_OK(st);
  uint32_t ws = 0, wp = 1;
  for (int i = 0; i < 4; ++i) {
    ws += (uint32_t)v[i];
    wp *= (uint32_t)v[i];
  }
  ASSERT_EQ_INT(sum, (int32_t)ws);
  ASSERT_EQ_INT(prod, (int32_t)wp);
}

TEST(float_to_int_saturation) {
  enum { N = 8 };
  static const float a[N] = {NAN, INFINITY, -INFINITY, 3e9f, -3e9f, 2.9f, -2.9f, 1e20f};
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(backend_c(), "conv", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = API_SHAPE(CML_DTYPE_F32, N);
  cml_value_t x = cml_parameter(f, "x", &s);
  cml_value_t outs[3] = {cml_op_convert_dtype(f, x, CML_DTYPE_I32),
                         cml_op_convert_dtype(f, x, CML_DTYPE_U8),
                         cml_op_convert_dtype(f, x, CML_DTYPE_I64)};
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(b, outs, 3, &exe));
  int32_t g32[N];
  uint8_t g8[N];
  int64_t g64[N];
  cml_status_t st =
      api_run(backend_c(), exe, (const void* const[]){a}, (void* const[]){g32, g8, g64});
  cml_executable_release(exe);
  ASSERT_STATUS_OK(st);
  static const int32_t w32[N] = {0, INT_MAX, INT_MIN, INT_MAX, INT_MIN, 2, -2, INT_MAX};
  static const uint8_t w8[N] = {0, 255, 0, 255, 0, 2, 0, 255};
  static const int64_t w64[N] = {0, INT64_MAX, INT64_MIN, 3000000000LL, -3000000000LL,
                                 2, -2,        INT64_MAX};
  for (int i = 0; i < N; ++i) {
    ASSERT_EQ_INT(g32[i], w32[i]);
    ASSERT_EQ_INT(g8[i], w8[i]);
    if (i != 7) ASSERT_EQ_INT(g64[i], w64[i]);
  }
  ASSERT_EQ_INT(g64[7], INT64_MAX);
}

TEST(out_of_range_indices) {
  // Gather rows with indices outside [0, 5): clamped to [0, 5 - 1].
  enum { R = 5, C = 2, K = 6 };
  float table[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) table[r][c] = (float)(10 * r + c);
  static const int32_t idx[K] = {-1, 0, 4, 5, INT_MAX, INT_MIN};
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(backend_c(), "gather", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t ts = API_SHAPE(CML_DTYPE_F32, R, C), is = API_SHAPE(CML_DTYPE_I32, K);
  cml_value_t t = cml_parameter(f, "t", &ts), i = cml_parameter(f, "i", &is);
  cml_gather_dims_t gd;
  memset(&gd, 0, sizeof gd);
  gd.index_vector_axis = 1;
  gd.offset_output_axis_count = 1;
  gd.offset_output_axes[0] = 1;
  gd.collapsed_slice_axis_count = 1;
  gd.start_index_map_count = 1;
  gd.slice_size_count = 2;
  gd.slice_sizes[0] = 1;
  gd.slice_sizes[1] = C;
  cml_value_t g = cml_op_gather(f, t, i, &gd);
  // ScatterSum of ones at the same indices into zeros: out-of-range updates are skipped.
  cml_scatter_dims_t sd;
  memset(&sd, 0, sizeof sd);
  sd.index_vector_axis = 1;
  sd.update_window_axis_count = 1;
  sd.update_window_axes[0] = 1;
  sd.inserted_window_axis_count = 1;
  sd.inserted_window_axes[0] = 0;
  sd.scatter_axes_to_operand_axes_count = 1;
  sd.scatter_axes_to_operand_axes[0] = 0;
  cml_value_t zeros = cml_op_broadcast_in_dim(f, cml_constant_scalar_f64(f, CML_DTYPE_F32, 0),
                                              (int64_t[]){R, C}, 2, NULL, 0);
  cml_value_t ones = cml_op_broadcast_in_dim(f, cml_constant_scalar_f64(f, CML_DTYPE_F32, 1),
                                             (int64_t[]){K, C}, 2, NULL, 0);
  cml_value_t sc = cml_op_scatter_sum(f, zeros, i, ones, &sd);
  // DynamicSlice with starts far out of range: clamped.
  cml_value_t st0 = cml_op_slice(f, i, (int64_t[]){4}, (int64_t[]){5}, NULL, 1);
  cml_value_t st1 = cml_op_slice(f, i, (int64_t[]){5}, (int64_t[]){6}, NULL, 1);
  cml_value_t s0 = cml_op_reshape(f, st0, NULL, 0), s1 = cml_op_reshape(f, st1, NULL, 0);
  cml_value_t ds = cml_op_dynamic_slice(f, t, (cml_value_t[]){s0, s1}, (int64_t[]){2, 1}, 2);
  cml_value_t upd = cml_constant(f, &(cml_shape_t){CML_DTYPE_F32, 2, {2, 1}}, (float[]){-1, -2});
  cml_value_t dus = cml_op_dynamic_update_slice(f, t, upd, (cml_value_t[]){s0, s1}, 2);
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(b, (cml_value_t[]){g, sc, ds, dus}, 4, &exe));
  float gg[K][C], gs[R][C], gds[2], gdus[R][C];
  cml_status_t st = api_run(backend_c(), exe, (const void* const[]){table, idx},
                            (void* const[]){gg, gs, gds, gdus});
  cml_executable_release(exe);
  ASSERT_STATUS_OK(st);
  static const int clamped[K] = {0, 0, 4, 4, 4, 0};
  for (int k = 0; k < K; ++k)
    for (int c = 0; c < C; ++c) ASSERT_EQ_DBL(gg[k][c], table[clamped[k]][c]);
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) ASSERT_EQ_DBL(gs[r][c], r == 0 ? 1 : r == 4 ? 1 : 0);
  // starts (INT_MAX, INT_MIN) clamp to (3, 0).
  ASSERT_EQ_DBL(gds[0], table[3][0]);
  ASSERT_EQ_DBL(gds[1], table[4][0]);
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) {
      float want = table[r][c];
      if (c == 0 && r == 3) want = -1;
      if (c == 0 && r == 4) want = -2;
      ASSERT_EQ_DBL(gdus[r][c], want);
    }
}

// Sort with comparators that are not strict weak orders must not read or write out of bounds.
// Ops whose outputs are all empty run nothing: an FFT and a Sort along an axis of 2^40 over an
// empty batch sized their scratch by that axis and failed with RESOURCE_EXHAUSTED on c (xla:cpu
// returns the empty results).
TEST(empty_outputs_along_huge_axes) {
  const int64_t huge = (int64_t)1 << 40;
  for (int which = 0; which < 2; ++which) {
    cml_builder_t* bld = NULL;
    ASSERT_STATUS_OK(cml_builder_create(backend_c(), "empty", &bld));
    cml_function_t* f = cml_builder_main(bld);
    cml_shape_t s =
        cml_shape_make(which == 0 ? CML_DTYPE_C64 : CML_DTYPE_F32, 2, (const int64_t[]){0, huge});
    cml_value_t x = cml_parameter(f, "x", &s), y;
    if (which == 0) {
      y = cml_op_fft(f, x, CML_FFT_FORWARD, &huge, 1);
    } else {
      cml_function_t* cmp = NULL;
      ASSERT_STATUS_OK(cml_function_new_closure(f, &cmp));
      cml_shape_t sc = cml_shape_scalar(CML_DTYPE_F32);
      cml_value_t a = cml_parameter(cmp, "a", &sc), b = cml_parameter(cmp, "b", &sc);
      cml_value_t lt = cml_op_less_than(cmp, a, b);
      ASSERT_STATUS_OK(cml_function_return(cmp, &lt, 1));
      ASSERT_TRUE(cml_op_sort(f, cmp, 1, true, &x, 1, &y));
    }
    cml_executable_t* exe = NULL;
    ASSERT_STATUS_OK(api_finish(bld, &y, 1, &exe));
    const cml_shape_t* os = cml_executable_output_shape(exe, 0);
    ASSERT_EQ_INT(os->dims[0], 0);
    ASSERT_EQ_INT(os->dims[1], huge);
    char none = 0;
    ASSERT_STATUS_OK(
        api_run(backend_c(), exe, (const void* const[]){&none}, (void* const[]){&none}));
    cml_executable_release(exe);
  }
}

TEST(sort_bad_comparators) {
  enum { N = 257 };
  float x[N];
  for (int i = 0; i < N; ++i) x[i] = (i % 5 == 0) ? NAN : (float)((i * 37) % 101) - 50;
  for (int mode = 0; mode < 4; ++mode) {
    cml_builder_t* b = NULL;
    ASSERT_STATUS_OK(cml_builder_create(backend_c(), "sort", &b));
    cml_function_t* f = cml_builder_main(b);
    cml_shape_t s = API_SHAPE(CML_DTYPE_F32, N);
    cml_value_t v = cml_parameter(f, "x", &s);
    cml_function_t* cmp = NULL;
    ASSERT_STATUS_OK(cml_function_new_closure(f, &cmp));
    cml_shape_t sc = cml_shape_scalar(CML_DTYPE_F32);
    cml_value_t l = cml_parameter(cmp, "l", &sc), r = cml_parameter(cmp, "r", &sc);
    cml_value_t res;
    switch (mode) {
      case 0:
        res = cml_constant_scalar_i64(cmp, CML_DTYPE_BOOL, 1);
        break;  // always true
      case 1:
        res = cml_op_less_or_equal(cmp, l, r);
        break;  // not strict
      case 2:
        res = cml_op_less_than(cmp, l, r);
        break;  // NaN incomparable
      default:
        res = cml_op_less_than_total_order(cmp, l, r);
        break;  // a real order
    }
    ASSERT_STATUS_OK(cml_function_return(cmp, &res, 1));
    cml_value_t out;
    ASSERT_TRUE(cml_op_sort(f, cmp, 0, mode % 2 == 0, &v, 1, &out));
    cml_executable_t* exe = NULL;
    ASSERT_STATUS_OK(api_finish(b, &out, 1, &exe));
    float got[N];
    cml_status_t st = api_run(backend_c(), exe, (const void* const[]){x}, (void* const[]){got});
    cml_executable_release(exe);
    ASSERT_STATUS_OK(st);
    // Always a permutation of the input (bitwise multiset).
    int nan_got = 0, nan_want = 0;
    double sum_got = 0, sum_want = 0;
    for (int i = 0; i < N; ++i) {
      if (isnan(got[i]))
        ++nan_got;
      else
        sum_got += got[i];
      if (isnan(x[i]))
        ++nan_want;
      else
        sum_want += x[i];
    }
    ASSERT_EQ_INT(nan_got, nan_want);
    ASSERT_EQ_DBL(sum_got, sum_want);
    if (mode == 3) {
      for (int i = 1; i < N - nan_want; ++i) ASSERT_TRUE(got[i - 1] <= got[i]);
      for (int i = N - nan_want; i < N; ++i) ASSERT_TRUE(isnan(got[i]));
    }
  }
}

static void cleanup(int* test_failed_) {
  (void)test_failed_;
  cml_backend_release(g_backend);
  g_backend = NULL;
}

TEST_MAIN(TEST_ENTRY(int32_arithmetic_edges), TEST_ENTRY(int64_and_unsigned_edges),
          TEST_ENTRY(shift_edges), TEST_ENTRY(int_reductions_wrap),
          TEST_ENTRY(float_to_int_saturation), TEST_ENTRY(out_of_range_indices),
          TEST_ENTRY(sort_bad_comparators), TEST_ENTRY(empty_outputs_along_huge_axes),
          {"cleanup", cleanup})
