// SPDX-License-Identifier: Apache-2.0
// tests/unit/c_kernels_window_test.c: the C backend's window kernels (ReduceWindow,
// SelectAndScatterMax/Min/Sum), called directly on hand-made nodes.
// Expected values are hand-computed or produced by per-element reference formulas written here
// straight from XLA's definitions (a different structure from the kernels' loops).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/c/engine_internal.h"

#define KT_LOOKUP cmlc_kernels_window_lookup
#include "kernel_fixture.h"
#include "test.h"

// CMLC_ISA_AVX2 when the CPU has AVX2, FMA and F16C (what the c backend's SIMD kernels need,
// cpu.c's detection), else CMLC_ISA_SCALAR.
static cmlc_isa_t kt_avx2_isa(void) {
  cmlc_cpu_features_t f;
  cmlc_cpu_detect(&f);
  return f.avx2_fma && f.f16c ? CMLC_ISA_AVX2 : CMLC_ISA_SCALAR;
}

// The best ISA the c backend's SIMD kernels can use here (cpu.c's detection).
static cmlc_isa_t kt_best_isa(void) {
  cmlc_cpu_features_t f;
  cmlc_cpu_detect(&f);
  if (kt_avx2_isa() == CMLC_ISA_SCALAR) return CMLC_ISA_SCALAR;
  return f.avx512 ? CMLC_ISA_AVX512 : CMLC_ISA_AVX2;
}

// Sets a window config on |k| for |rank| axes (NULL arrays mean the defaults 1 / 0).
static void kt_window(kt_t* k, int32_t rank, const int64_t* window, const int64_t* strides,
                      const int64_t* base_dil, const int64_t* win_dil, const int64_t* lo,
                      const int64_t* hi) {
  cml_window_config_t* w = &k->attrs.u.window;
  memset(w, 0, sizeof *w);
  w->rank = rank;
  for (int32_t d = 0; d < rank; ++d) {
    w->window_dims[d] = window[d];
    w->strides[d] = strides ? strides[d] : 1;
    w->input_dilations[d] = base_dil ? base_dil[d] : 1;
    w->window_dilations[d] = win_dil ? win_dil[d] : 1;
    w->padding_low[d] = lo ? lo[d] : 0;
    w->padding_high[d] = hi ? hi[d] : 0;
  }
}

// Output dim of a window axis per XLA's formula.
static int64_t kt_window_out(int64_t in, int64_t window, int64_t stride, int64_t base_dil,
                             int64_t win_dil, int64_t lo, int64_t hi) {
  int64_t padded = (in == 0 ? 0 : (in - 1) * base_dil + 1) + lo + hi;
  int64_t eff = (window - 1) * win_dil + 1;
  return padded < eff ? 0 : (padded - eff) / stride + 1;
}

//===--- ReduceWindow ---===//

static cml_status_t kt_rw_1d(cml_dtype_t dt, cml_reduce_type_t type, int64_t n, const void* x,
                             int64_t window, int64_t stride, int64_t base_dil, int64_t win_dil,
                             int64_t lo, int64_t hi, void* out, int64_t* out_n) {
  *out_n = kt_window_out(n, window, stride, base_dil, win_dil, lo, hi);
  cml_shape_t xs = kt_shape(dt, 1, &n), os = kt_shape(dt, 1, out_n);
  kt_t k;
  kt_init(&k, CML_OP_REDUCE_WINDOW, 1, &xs, &os);
  k.attrs.reduce_type = type;
  kt_window(&k, 1, &window, &stride, &base_dil, &win_dil, &lo, &hi);
  const void* in[] = {x};
  return kt_run(&k, NULL, in, out);
}

TEST(reduce_window_1d_by_hand) {
  float x[] = {1, 2, 3, 4, 5}, out[8];
  int64_t n;
  ASSERT_STATUS_OK(kt_rw_1d(CML_DTYPE_F32, CML_REDUCE_SUM, 5, x, 2, 1, 1, 1, 0, 0, out, &n));
  ASSERT_EQ_INT(n, 4);
  float want1[] = {3, 5, 7, 9};
  for (int i = 0; i < 4; ++i) ASSERT_EQ_DBL(out[i], want1[i]);
  // Padding 1/1, window 3, stride 2: [0 1 2 3 4 5 0] -> 3, 9, 9.
  ASSERT_STATUS_OK(kt_rw_1d(CML_DTYPE_F32, CML_REDUCE_SUM, 5, x, 3, 2, 1, 1, 1, 1, out, &n));
  ASSERT_EQ_INT(n, 3);
  float want2[] = {3, 9, 9};
  for (int i = 0; i < 3; ++i) ASSERT_EQ_DBL(out[i], want2[i]);
  // Base dilation 2: [1 _ 2 _ 3], window 2 -> 1, 2, 2, 3.
  ASSERT_STATUS_OK(kt_rw_1d(CML_DTYPE_F32, CML_REDUCE_SUM, 3, x, 2, 1, 2, 1, 0, 0, out, &n));
  ASSERT_EQ_INT(n, 4);
  float want3[] = {1, 2, 2, 3};
  for (int i = 0; i < 4; ++i) ASSERT_EQ_DBL(out[i], want3[i]);
  // Window dilation 2, window 2: pairs (0,2), (1,3), (2,4) -> 4, 6, 8.
  ASSERT_STATUS_OK(kt_rw_1d(CML_DTYPE_F32, CML_REDUCE_SUM, 5, x, 2, 1, 1, 2, 0, 0, out, &n));
  ASSERT_EQ_INT(n, 3);
  float want4[] = {4, 6, 8};
  for (int i = 0; i < 3; ++i) ASSERT_EQ_DBL(out[i], want4[i]);
  // Product, stride defaults handled by the builder; here window 5 over everything = 120.
  ASSERT_STATUS_OK(kt_rw_1d(CML_DTYPE_F32, CML_REDUCE_PRODUCT, 5, x, 5, 5, 1, 1, 0, 0, out, &n));
  ASSERT_EQ_INT(n, 1);
  ASSERT_EQ_DBL(out[0], 120);
}

TEST(reduce_window_identities_and_nan) {
  // Max with padding: [pad -5] [-5 -3] [-3 -4] -> -5 -3 -3; all-padding window -> -inf.
  double x[] = {-5, -3, -4}, out[8];
  int64_t n;
  ASSERT_STATUS_OK(kt_rw_1d(CML_DTYPE_F64, CML_REDUCE_MAX, 3, x, 2, 1, 1, 1, 1, 0, out, &n));
  ASSERT_EQ_INT(n, 3);
  ASSERT_EQ_DBL(out[0], -5);
  ASSERT_EQ_DBL(out[1], -3);
  ASSERT_EQ_DBL(out[2], -3);
  ASSERT_STATUS_OK(kt_rw_1d(CML_DTYPE_F64, CML_REDUCE_MAX, 1, x, 2, 1, 1, 1, 2, 0, out, &n));
  ASSERT_EQ_INT(n, 2);
  ASSERT_TRUE(isinf(out[0]) && out[0] < 0);
  ASSERT_EQ_DBL(out[1], -5);
  ASSERT_STATUS_OK(kt_rw_1d(CML_DTYPE_F64, CML_REDUCE_MIN, 1, x, 2, 1, 1, 1, 2, 0, out, &n));
  ASSERT_TRUE(isinf(out[0]) && out[0] > 0);
  // Integer identities: INT32_MIN for max, INT32_MAX for min, 1 for product.
  int32_t xi[] = {7}, oi[4];
  ASSERT_STATUS_OK(kt_rw_1d(CML_DTYPE_I32, CML_REDUCE_MAX, 1, xi, 1, 1, 1, 1, 1, 0, oi, &n));
  ASSERT_EQ_INT(n, 2);
  ASSERT_EQ_INT(oi[0], INT32_MIN);
  ASSERT_EQ_INT(oi[1], 7);
  ASSERT_STATUS_OK(kt_rw_1d(CML_DTYPE_I32, CML_REDUCE_MIN, 1, xi, 1, 1, 1, 1, 1, 0, oi, &n));
  ASSERT_EQ_INT(oi[0], INT32_MAX);
  ASSERT_STATUS_OK(kt_rw_1d(CML_DTYPE_I32, CML_REDUCE_PRODUCT, 1, xi, 1, 1, 1, 1, 1, 0, oi, &n));
  ASSERT_EQ_INT(oi[0], 1);
  // NaN propagates through Max and Min.
  float xf[] = {1, NAN, 2}, of[4];
  ASSERT_STATUS_OK(kt_rw_1d(CML_DTYPE_F32, CML_REDUCE_MAX, 3, xf, 2, 1, 1, 1, 0, 0, of, &n));
  ASSERT_TRUE(isnan(of[0]) && isnan(of[1]));
  ASSERT_STATUS_OK(kt_rw_1d(CML_DTYPE_F32, CML_REDUCE_MIN, 3, xf, 2, 1, 1, 1, 0, 0, of, &n));
  ASSERT_TRUE(isnan(of[0]) && isnan(of[1]));
}

TEST(reduce_window_integer_wrap_and_f16_rounding) {
  int64_t n;
  int8_t x8[] = {16, 16}, o8[1];
  ASSERT_STATUS_OK(kt_rw_1d(CML_DTYPE_I8, CML_REDUCE_PRODUCT, 2, x8, 2, 2, 1, 1, 0, 0, o8, &n));
  ASSERT_EQ_INT(o8[0], 0);  // 256 wraps to 0
  int8_t y8[] = {100, 100}, p8[1];
  ASSERT_STATUS_OK(kt_rw_1d(CML_DTYPE_I8, CML_REDUCE_SUM, 2, y8, 2, 2, 1, 1, 0, 0, p8, &n));
  ASSERT_EQ_INT(p8[0], -56);  // 200 - 256
  uint8_t xu[] = {200, 100}, ou[1];
  ASSERT_STATUS_OK(kt_rw_1d(CML_DTYPE_U8, CML_REDUCE_SUM, 2, xu, 2, 2, 1, 1, 0, 0, ou, &n));
  ASSERT_EQ_INT(ou[0], 44);
  uint64_t x64[] = {UINT64_MAX, 2}, o64[1];
  ASSERT_STATUS_OK(kt_rw_1d(CML_DTYPE_U64, CML_REDUCE_SUM, 2, x64, 2, 2, 1, 1, 0, 0, o64, &n));
  ASSERT_EQ_U64(o64[0], 1);
  // f16: 1 + 2^-11 + 2^-11 computed in f32 = 1 + 2^-10 (0x3C01), rounded once.
  uint16_t xh[] = {0x3C00, 0x1000, 0x1000}, oh[1];
  ASSERT_STATUS_OK(kt_rw_1d(CML_DTYPE_F16, CML_REDUCE_SUM, 3, xh, 3, 3, 1, 1, 0, 0, oh, &n));
  ASSERT_EQ_INT(oh[0], 0x3C01);
  // bf16 max: 1.5 (0x3FC0) vs -2 (0xC000) -> 1.5.
  uint16_t xb[] = {0x3FC0, 0xC000}, ob[1];
  ASSERT_STATUS_OK(kt_rw_1d(CML_DTYPE_BF16, CML_REDUCE_MAX, 2, xb, 2, 2, 1, 1, 0, 0, ob, &n));
  ASSERT_EQ_INT(ob[0], 0x3FC0);
}

TEST(reduce_window_scalar) {
  cml_shape_t s = kt_shape(CML_DTYPE_I64, 0, NULL);
  kt_t k;
  kt_init(&k, CML_OP_REDUCE_WINDOW, 1, &s, &s);
  k.attrs.reduce_type = CML_REDUCE_SUM;
  int64_t x = -42, out = 0;
  const void* in[] = {&x};
  ASSERT_STATUS_OK(kt_run(&k, NULL, in, &out));
  ASSERT_EQ_INT(out, -42);
}

// 2-D reduce window (sum or max of i64) by walking the padded, dilated input directly.
static int64_t kt_ref_rw(const int64_t* x, const int64_t* xd, const cml_window_config_t* w,
                         cml_reduce_type_t type, const int64_t* o) {
  int64_t acc = type == CML_REDUCE_SUM ? 0 : INT64_MIN;
  for (int64_t k0 = 0; k0 < w->window_dims[0]; ++k0)
    for (int64_t k1 = 0; k1 < w->window_dims[1]; ++k1) {
      int64_t p[2] = {o[0] * w->strides[0] + k0 * w->window_dilations[0] - w->padding_low[0],
                      o[1] * w->strides[1] + k1 * w->window_dilations[1] - w->padding_low[1]};
      int inside = 1;
      int64_t idx[2];
      for (int d = 0; d < 2; ++d) {
        if (p[d] < 0 || p[d] % w->input_dilations[d] != 0) inside = 0;
        idx[d] = p[d] / w->input_dilations[d];
        if (idx[d] >= xd[d]) inside = 0;
      }
      if (!inside) continue;
      int64_t v = x[idx[0] * xd[1] + idx[1]];
      if (type == CML_REDUCE_SUM)
        acc += v;
      else if (v > acc)
        acc = v;
    }
  return acc;
}

TEST(reduce_window_2d_matches_reference) {
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  struct {
    int64_t xd[2], window[2], strides[2], base[2], wdil[2], lo[2], hi[2];
  } cases[] = {
      {{5, 7}, {2, 3}, {2, 1}, {1, 2}, {2, 1}, {1, 0}, {0, 2}},
      {{40, 61}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {{11, 13}, {4, 2}, {3, 2}, {2, 1}, {1, 3}, {-1, 2}, {3, -1}},
      // Running scans along either axis (integer kernels; rows of 40 from 5 lines, 8 at a time).
      {{5, 40}, {1, 40}, {1, 1}, {1, 1}, {1, 1}, {0, 39}, {0, 0}},
      {{17, 3}, {20, 1}, {1, 1}, {1, 1}, {1, 1}, {17, 0}, {0, 0}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; ++c) {
    for (int t = 0; t < 2; ++t) {
      cml_reduce_type_t type = t ? CML_REDUCE_MAX : CML_REDUCE_SUM;
      int64_t od[2];
      for (int d = 0; d < 2; ++d)
        od[d] = kt_window_out(cases[c].xd[d], cases[c].window[d], cases[c].strides[d],
                              cases[c].base[d], cases[c].wdil[d], cases[c].lo[d], cases[c].hi[d]);
      cml_shape_t xs = kt_shape(CML_DTYPE_I64, 2, cases[c].xd), os = kt_shape(CML_DTYPE_I64, 2, od);
      kt_t k;
      kt_init(&k, CML_OP_REDUCE_WINDOW, 1, &xs, &os);
      k.attrs.reduce_type = type;
      kt_window(&k, 2, cases[c].window, cases[c].strides, cases[c].base, cases[c].wdil, cases[c].lo,
                cases[c].hi);
      int64_t nx = kt_count(&xs), no = kt_count(&os);
      int64_t* x = malloc((size_t)nx * sizeof(int64_t));
      int64_t* out = malloc((size_t)(no + 1) * sizeof(int64_t));
      for (int64_t i = 0; i < nx; ++i) x[i] = (i * 7919) % 1000 - 500;
      const void* in[] = {x};
      int bad = 0;
      for (int p = 0; p < 2 && !bad; ++p) {
        cml_status_t st = kt_run(&k, p ? pool : NULL, in, out);
        bad = st != CML_OK;
        cml_status_free(st);
        for (int64_t i = 0; i < no && !bad; ++i) {
          int64_t o[2] = {i / od[1], i % od[1]};
          if (out[i] != kt_ref_rw(x, cases[c].xd, &k.attrs.u.window, type, o)) bad = 1;
        }
      }
      free(x);
      free(out);
      if (bad) {
        cmlc_pool_destroy(pool);
        TEST_FAIL_("case %zu type %d", c, t);
      }
    }
  }
  cmlc_pool_destroy(pool);
}

// ReduceWindow whose trailing axes the window passes through (NHWC pooling: window 1 on the
// channels) takes the row kernels, one with a window on the last two axes only (NCHW pooling)
// the plane kernels (global pooling: the whole-plane kernels), and one whose windows along one axis
// all start before it (cumulative reductions) the scan kernels: every float dtype and reduction,
// against the same node run in reference mode (the per-element kernel: same taps, same order, so
// the same bits), with padding, strides, window and base dilations on the leading axes, rows longer
// than one block of the half kernel (256), NaN and infinities, 1 and 3 threads.
TEST(reduce_window_rows_match_reference) {
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  struct {
    int64_t xd[4], window[4], strides[4], base[4], wdil[4], lo[4], hi[4];
  } cases[] = {
      // [N, H, W, C] 3x3 / 2 max pool, padded 1 on H and W.
      {{2, 9, 8, 16},
       {1, 3, 3, 1},
       {1, 2, 2, 1},
       {1, 1, 1, 1},
       {1, 1, 1, 1},
       {0, 1, 1, 0},
       {0, 1, 1, 0}},
      // Two trailing axes pass through ([.., 5, 60] = 300 per row: two half blocks).
      {{3, 7, 5, 60},
       {2, 2, 1, 1},
       {1, 2, 1, 1},
       {1, 1, 1, 1},
       {1, 2, 1, 1},
       {1, 0, 0, 0},
       {0, 2, 0, 0}},
      // Base dilation and negative padding on the leading axes, window over N too.
      {{4, 6, 5, 9},
       {2, 3, 2, 1},
       {2, 1, 2, 1},
       {1, 2, 1, 1},
       {1, 1, 2, 1},
       {1, -1, 2, 0},
       {0, 2, -1, 0}},
      // Windows on the last two axes only (NCHW pooling: the plane kernels): 3x3 / 2 padded,
      // a dilated window with negative padding, a row longer than 256.
      {{2, 3, 9, 8},
       {1, 1, 3, 3},
       {1, 1, 2, 2},
       {1, 1, 1, 1},
       {1, 1, 1, 2},
       {0, 0, 1, 1},
       {0, 0, 1, 0}},
      {{1, 2, 7, 300},
       {1, 1, 2, 3},
       {1, 1, 1, 2},
       {1, 1, 1, 1},
       {1, 1, 2, 1},
       {0, 0, 0, -1},
       {0, 0, 1, 2}},
      // Global pooling in NCHW (the window covers each plane: one output per plane): 26
      // planes of 7x7 (8 at a time, the last 2 alone), and planes of 3x40 with a stride.
      {{2, 13, 7, 7},
       {1, 1, 7, 7},
       {1, 1, 1, 1},
       {1, 1, 1, 1},
       {1, 1, 1, 1},
       {0, 0, 0, 0},
       {0, 0, 0, 0}},
      {{1, 9, 3, 40},
       {1, 1, 3, 40},
       {1, 1, 2, 5},
       {1, 1, 1, 1},
       {1, 1, 1, 1},
       {0, 0, 0, 0},
       {0, 0, 0, 0}},
      // NHWC pooling of few channels (the plane kernels over positions of C elements): 3
      // channels 3x3 / 2 padded, 1, 2, 4 and 5 channels, stride 1, a dilated window, and
      // strided rows of more positions than one copied run holds (4 channels: 128 positions;
      // 1 channel, NCHW: 512).
      {{2, 9, 8, 3},
       {1, 3, 3, 1},
       {1, 2, 2, 1},
       {1, 1, 1, 1},
       {1, 1, 1, 1},
       {0, 1, 1, 0},
       {0, 1, 1, 0}},
      {{3, 5, 7, 1},
       {1, 2, 2, 1},
       {1, 2, 2, 1},
       {1, 1, 1, 1},
       {1, 1, 1, 1},
       {0, 0, 0, 0},
       {0, 0, 0, 0}},
      {{1, 6, 9, 2},
       {1, 3, 2, 1},
       {1, 1, 3, 1},
       {1, 1, 1, 1},
       {1, 1, 2, 1},
       {0, 2, 1, 0},
       {0, 0, -1, 0}},
      {{2, 4, 7, 5},
       {1, 2, 3, 1},
       {1, 1, 1, 1},
       {1, 1, 1, 1},
       {1, 1, 1, 1},
       {0, 0, 1, 0},
       {0, 1, 1, 0}},
      {{1, 3, 300, 4},
       {1, 2, 3, 1},
       {1, 1, 2, 1},
       {1, 1, 1, 1},
       {1, 1, 1, 1},
       {0, 1, 1, 0},
       {0, 0, 1, 0}},
      {{1, 2, 3, 1100},
       {1, 1, 2, 3},
       {1, 1, 1, 2},
       {1, 1, 1, 1},
       {1, 1, 1, 1},
       {0, 0, 0, 1},
       {0, 0, 0, 1}},
      // Base dilation on the last axis: neither fast path (the per-element kernel).
      {{1, 2, 5, 6},
       {1, 1, 2, 2},
       {1, 1, 1, 1},
       {1, 1, 1, 2},
       {1, 1, 1, 1},
       {0, 0, 0, 0},
       {0, 0, 0, 0}},
      // Running scans (every window starts before the axis): a cumulative reduction of the
      // last axis over 30 lines (8 at a time, the last group partial), one of axis 1 with 350
      // elements per position (blocks of 64), windows that end before (6 outputs of the
      // identity) and after each position, and one whose first window starts inside the axis
      // (padding 2 < 3 positions - 1: not a scan).
      {{2, 3, 5, 70},
       {1, 1, 1, 70},
       {1, 1, 1, 1},
       {1, 1, 1, 1},
       {1, 1, 1, 1},
       {0, 0, 0, 69},
       {0, 0, 0, 0}},
      {{2, 9, 5, 70},
       {1, 9, 1, 1},
       {1, 1, 1, 1},
       {1, 1, 1, 1},
       {1, 1, 1, 1},
       {0, 8, 0, 0},
       {0, 0, 0, 0}},
      {{1, 2, 3, 10},
       {1, 1, 1, 4},
       {1, 1, 1, 1},
       {1, 1, 1, 1},
       {1, 1, 1, 1},
       {0, 0, 0, 9},
       {0, 0, 0, 0}},
      {{3, 1, 10, 2},
       {1, 1, 12, 1},
       {1, 1, 1, 1},
       {1, 1, 1, 1},
       {1, 1, 1, 1},
       {0, 0, 9, 0},
       {0, 0, 0, 0}},
      {{1, 1, 3, 5},
       {1, 1, 1, 3},
       {1, 1, 1, 1},
       {1, 1, 1, 1},
       {1, 1, 1, 1},
       {0, 0, 0, 2},
       {0, 0, 0, 2}},
      // Stride 1 along long rows (the plane kernels' register groups of 64 elements, the
      // per-tap loop before and after them): a 64-wide sliding window padded on both sides, a
      // dilated window cropped at the end, 3 channels (NHWC), and rows of more output
      // positions than one block (2048) whose group range ends inside the last block.
      {{1, 2, 3, 500},
       {1, 1, 1, 64},
       {1, 1, 1, 1},
       {1, 1, 1, 1},
       {1, 1, 1, 1},
       {0, 0, 0, 5},
       {0, 0, 0, 7}},
      {{1, 1, 4, 300},
       {1, 1, 2, 17},
       {1, 1, 1, 1},
       {1, 1, 1, 1},
       {1, 1, 1, 3},
       {0, 0, 1, 20},
       {0, 0, 0, -3}},
      {{1, 3, 200, 3},
       {1, 2, 9, 1},
       {1, 1, 1, 1},
       {1, 1, 1, 1},
       {1, 1, 1, 1},
       {0, 0, 4, 0},
       {0, 0, 4, 0}},
      {{1, 1, 2, 4500},
       {1, 1, 1, 33},
       {1, 1, 1, 1},
       {1, 1, 1, 1},
       {1, 1, 1, 1},
       {0, 0, 0, 3},
       {0, 0, 0, 0}},
  };
  static const cml_dtype_t dts[4] = {CML_DTYPE_F32, CML_DTYPE_F64, CML_DTYPE_BF16, CML_DTYPE_F16};
  int bad = 0;
  for (size_t c = 0; c < sizeof cases / sizeof *cases && !bad; ++c) {
    int64_t od[4];
    for (int d = 0; d < 4; ++d)
      od[d] = kt_window_out(cases[c].xd[d], cases[c].window[d], cases[c].strides[d],
                            cases[c].base[d], cases[c].wdil[d], cases[c].lo[d], cases[c].hi[d]);
    for (int di = 0; di < 4 && !bad; ++di) {
      const cml_dtype_t dt = dts[di];
      const size_t es = (size_t)cml_dtype_bits(dt) / 8;
      cml_shape_t xs = kt_shape(dt, 4, cases[c].xd), os = kt_shape(dt, 4, od);
      const int64_t nx = kt_count(&xs), no = kt_count(&os);
      uint8_t* x = malloc((size_t)nx * es);
      uint8_t* want = malloc((size_t)(no + 1) * es);
      uint8_t* got = malloc((size_t)(no + 1) * es);
      for (int64_t i = 0; i < nx; ++i) {
        double v = (double)((i * 7919) % 1001) / 64.0 - 7.0;
        if (i % 97 == 5) v = NAN;
        if (i % 89 == 3) v = -INFINITY;
        if (dt == CML_DTYPE_F32) ((float*)x)[i] = (float)v;
        if (dt == CML_DTYPE_F64) ((double*)x)[i] = v;
        if (dt == CML_DTYPE_BF16) ((uint16_t*)x)[i] = cml_f32_to_bf16((float)v);
        if (dt == CML_DTYPE_F16) ((uint16_t*)x)[i] = cml_f32_to_f16((float)v);
      }
      for (int t = 0; t < 4 && !bad; ++t) {
        const cml_reduce_type_t type = (cml_reduce_type_t)((int)CML_REDUCE_SUM + t);
        kt_t k;
        kt_init(&k, CML_OP_REDUCE_WINDOW, 1, &xs, &os);
        k.attrs.reduce_type = type;
        kt_window(&k, 4, cases[c].window, cases[c].strides, cases[c].base, cases[c].wdil,
                  cases[c].lo, cases[c].hi);
        const void* in[] = {x};
        k.options.reference = true;
        cml_status_t st = kt_run(&k, NULL, in, want);
        bad = st != CML_OK;
        cml_status_free(st);
        k.options.reference = false;
        for (int p = 0; p < 2 * ((int)kt_best_isa() + 1) && !bad; ++p) {
          k.options.isa = (cmlc_isa_t)(p / 2);  // scalar, AVX2, AVX-512: threads 1 and 3
          memset(got, 0xA5, (size_t)no * es);
          st = kt_run(&k, p % 2 ? pool : NULL, in, got);
          bad = st != CML_OK;
          cml_status_free(st);
          for (int64_t i = 0; i < no && !bad; ++i) {
            // NaN results: any NaN (the reference may carry another payload).
            double a = 0, b = 0;
            if (dt == CML_DTYPE_F32) a = ((float*)got)[i], b = ((float*)want)[i];
            if (dt == CML_DTYPE_F64) a = ((double*)got)[i], b = ((double*)want)[i];
            if (dt == CML_DTYPE_BF16)
              a = cml_bf16_to_f32(((uint16_t*)got)[i]), b = cml_bf16_to_f32(((uint16_t*)want)[i]);
            if (dt == CML_DTYPE_F16)
              a = cml_f16_to_f32(((uint16_t*)got)[i]), b = cml_f16_to_f32(((uint16_t*)want)[i]);
            const bool same =
                (isnan(a) && isnan(b)) || memcmp(got + i * es, want + i * es, es) == 0;
            if (!same) {
              fprintf(stderr, "case %zu %s type %d isa %d threads %d: [%lld] got %.9g want %.9g\n",
                      c, cml_dtype_name(dt), t, p / 2, p % 2 ? 3 : 1, (long long)i, a, b);
              bad = 1;
            }
          }
        }
      }
      free(x);
      free(want);
      free(got);
    }
  }
  cmlc_pool_destroy(pool);
  ASSERT_EQ_INT(bad, 0);
}

//===--- SelectAndScatter ---===//

static cml_status_t kt_sas_1d(cml_op_t op, cml_dtype_t dt, int64_t n, const void* x, int64_t src_n,
                              const void* src, int64_t window, int64_t stride, int64_t lo,
                              int64_t hi, void* out) {
  cml_shape_t ins[2] = {kt_shape(dt, 1, &n), kt_shape(dt, 1, &src_n)};
  kt_t k;
  kt_init(&k, op, 2, ins, &ins[0]);
  kt_window(&k, 1, &window, &stride, NULL, NULL, &lo, &hi);
  const void* in[] = {x, src};
  return kt_run(&k, NULL, in, out);
}

TEST(select_and_scatter_by_hand) {
  float x[] = {1, 3, 3, 2}, src2[] = {10, 20}, src3[] = {1, 2, 3}, out[4];
  // Max, window 2 stride 2: [1 3] -> 1, [3 2] -> 2.
  ASSERT_STATUS_OK(
      kt_sas_1d(CML_OP_SELECT_AND_SCATTER_MAX, CML_DTYPE_F32, 4, x, 2, src2, 2, 2, 0, 0, out));
  float want1[] = {0, 10, 20, 0};
  for (int i = 0; i < 4; ++i) ASSERT_EQ_DBL(out[i], want1[i]);
  // Overlapping windows, stride 1: [1 3] -> 1, [3 3] -> 1 (first), [3 2] -> 2.
  ASSERT_STATUS_OK(
      kt_sas_1d(CML_OP_SELECT_AND_SCATTER_MAX, CML_DTYPE_F32, 4, x, 3, src3, 2, 1, 0, 0, out));
  float want2[] = {0, 3, 3, 0};
  for (int i = 0; i < 4; ++i) ASSERT_EQ_DBL(out[i], want2[i]);
  // Min: [4 1] -> 1, [1 1] -> 1 (first), [1 5] -> 2.
  int32_t xm[] = {4, 1, 1, 5}, sm[] = {1, 2, 3}, om[4];
  ASSERT_STATUS_OK(
      kt_sas_1d(CML_OP_SELECT_AND_SCATTER_MIN, CML_DTYPE_I32, 4, xm, 3, sm, 2, 1, 0, 0, om));
  int32_t want3[] = {0, 3, 3, 0};
  for (int i = 0; i < 4; ++i) ASSERT_EQ_INT(om[i], want3[i]);
  // Padding is never selected: [pad -5] -> 0, [-5 -7] -> 0.
  double xp[] = {-5, -7}, sp[] = {1, 2}, op[2];
  ASSERT_STATUS_OK(
      kt_sas_1d(CML_OP_SELECT_AND_SCATTER_MAX, CML_DTYPE_F64, 2, xp, 2, sp, 2, 1, 1, 0, op));
  ASSERT_EQ_DBL(op[0], 3);
  ASSERT_EQ_DBL(op[1], 0);
  // Sum: every element of each window gets the source element.
  int16_t xs[] = {9, 9, 9}, ss[] = {1, 10}, os[3];
  ASSERT_STATUS_OK(
      kt_sas_1d(CML_OP_SELECT_AND_SCATTER_SUM, CML_DTYPE_I16, 3, xs, 2, ss, 2, 1, 0, 0, os));
  ASSERT_EQ_INT(os[0], 1);
  ASSERT_EQ_INT(os[1], 11);
  ASSERT_EQ_INT(os[2], 10);
  // Integer accumulation wraps: [pad 5] -> 0 and [5 1] -> 0 get 100 + 100 in i8.
  int8_t x8[] = {5, 1}, s8[] = {100, 100}, o8[2];
  ASSERT_STATUS_OK(
      kt_sas_1d(CML_OP_SELECT_AND_SCATTER_MAX, CML_DTYPE_I8, 2, x8, 2, s8, 2, 1, 1, 0, o8));
  ASSERT_EQ_INT(o8[0], -56);
  ASSERT_EQ_INT(o8[1], 0);
  // A NaN current selection is replaced by the next candidate (XLA's `ge` select).
  float xn[] = {NAN, 1}, sn[] = {5}, on[2];
  ASSERT_STATUS_OK(
      kt_sas_1d(CML_OP_SELECT_AND_SCATTER_MAX, CML_DTYPE_F32, 2, xn, 1, sn, 2, 2, 0, 0, on));
  ASSERT_EQ_DBL(on[0], 0);
  ASSERT_EQ_DBL(on[1], 5);
}

TEST(select_and_scatter_f16_accumulates_in_f32) {
  // One element, window 3, stride 1, padding 2/2: three windows all select it. Sources
  // 1 + 2^-11 + 2^-11 = 1 + 2^-10 (0x3C01) in f32, rounded once.
  uint16_t x[] = {0x4000}, src[] = {0x3C00, 0x1000, 0x1000}, out[1];
  ASSERT_STATUS_OK(
      kt_sas_1d(CML_OP_SELECT_AND_SCATTER_MAX, CML_DTYPE_F16, 1, x, 3, src, 3, 1, 2, 2, out));
  ASSERT_EQ_INT(out[0], 0x3C01);
  ASSERT_STATUS_OK(
      kt_sas_1d(CML_OP_SELECT_AND_SCATTER_SUM, CML_DTYPE_BF16, 1, x, 3, src, 3, 1, 2, 2, out));
  // Read as bf16 the same bits are 2^-7 (0x3C00) and two values near 2^-95 (0x1000): every
  // element of the three windows gets all three, and the sum rounds to 2^-7.
  ASSERT_EQ_INT(out[0], 0x3C00);
}

TEST(select_and_scatter_2d_matches_reference) {
  // operand [6, 7] i32 with ties, window 3x2, strides 2x2, padding (1,1)x(0,1).
  int64_t xd[] = {6, 7}, window[] = {3, 2}, strides[] = {2, 2}, lo[] = {1, 0}, hi[] = {1, 1};
  int64_t sd[2];
  for (int d = 0; d < 2; ++d)
    sd[d] = kt_window_out(xd[d], window[d], strides[d], 1, 1, lo[d], hi[d]);
  cml_shape_t ins[2] = {kt_shape(CML_DTYPE_I32, 2, xd), kt_shape(CML_DTYPE_I32, 2, sd)};
  int32_t x[42], src[64], out[42], want_max[42] = {0}, want_min[42] = {0};
  for (int i = 0; i < 42; ++i) x[i] = (i * 37) % 5;
  for (int64_t i = 0; i < sd[0] * sd[1]; ++i) src[i] = (int32_t)(i + 1);
  for (int64_t a = 0; a < sd[0]; ++a)
    for (int64_t b = 0; b < sd[1]; ++b) {
      int64_t best_max = -1, best_min = -1;
      for (int64_t k0 = 0; k0 < window[0]; ++k0)
        for (int64_t k1 = 0; k1 < window[1]; ++k1) {
          int64_t r = a * strides[0] + k0 - lo[0], c = b * strides[1] + k1 - lo[1];
          if (r < 0 || c < 0 || r >= xd[0] || c >= xd[1]) continue;
          int64_t e = r * xd[1] + c;
          if (best_max < 0 || x[e] > x[best_max]) best_max = e;
          if (best_min < 0 || x[e] < x[best_min]) best_min = e;
        }
      if (best_max >= 0) want_max[best_max] += src[a * sd[1] + b];
      if (best_min >= 0) want_min[best_min] += src[a * sd[1] + b];
    }
  kt_t k;
  kt_init(&k, CML_OP_SELECT_AND_SCATTER_MAX, 2, ins, &ins[0]);
  kt_window(&k, 2, window, strides, NULL, NULL, lo, hi);
  const void* in[] = {x, src};
  ASSERT_STATUS_OK(kt_run(&k, NULL, in, out));
  for (int i = 0; i < 42; ++i) ASSERT_EQ_INT(out[i], want_max[i]);
  k.node.op = CML_OP_SELECT_AND_SCATTER_MIN;
  ASSERT_STATUS_OK(kt_run(&k, NULL, in, out));
  for (int i = 0; i < 42; ++i) ASSERT_EQ_INT(out[i], want_min[i]);
}

// SelectAndScatter whose trailing axes the window passes through (the gradient of NHWC
// pooling) takes the row kernels: f32, f64, bf16 and f16, Max / Min / Sum, against the same
// node in reference mode (the per-element kernel) bit for bit, with overlapping windows,
// padding, ties (repeated values) and NaN, 1 and 3 threads.
TEST(select_and_scatter_rows_match_reference) {
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  struct {
    int64_t xd[4], window[4], strides[4], lo[4], hi[4];
  } cases[] = {
      {{2, 9, 8, 40}, {1, 3, 3, 1}, {1, 2, 2, 1}, {0, 1, 1, 0}, {0, 1, 1, 0}},
      {{1, 7, 6, 300}, {1, 2, 2, 1}, {1, 1, 2, 1}, {0, 0, 0, 0}, {0, 1, 0, 0}},
      {{3, 5, 5, 17}, {2, 3, 1, 1}, {1, 1, 1, 1}, {1, 0, 0, 0}, {0, 2, 0, 0}},
  };
  static const cml_dtype_t dts[4] = {CML_DTYPE_F32, CML_DTYPE_F64, CML_DTYPE_BF16, CML_DTYPE_F16};
  static const cml_op_t ops[3] = {CML_OP_SELECT_AND_SCATTER_MAX, CML_OP_SELECT_AND_SCATTER_MIN,
                                  CML_OP_SELECT_AND_SCATTER_SUM};
  int bad = 0;
  for (size_t c = 0; c < sizeof cases / sizeof *cases && !bad; ++c) {
    int64_t sd[4];
    for (int d = 0; d < 4; ++d)
      sd[d] = kt_window_out(cases[c].xd[d], cases[c].window[d], cases[c].strides[d], 1, 1,
                            cases[c].lo[d], cases[c].hi[d]);
    for (int di = 0; di < 4 && !bad; ++di) {
      const cml_dtype_t dt = dts[di];
      const size_t es = (size_t)cml_dtype_bits(dt) / 8;
      cml_shape_t ins[2] = {kt_shape(dt, 4, cases[c].xd), kt_shape(dt, 4, sd)};
      const int64_t nx = kt_count(&ins[0]), ns = kt_count(&ins[1]);
      uint8_t* x = malloc((size_t)nx * es);
      uint8_t* src = malloc((size_t)ns * es);
      uint8_t* want = malloc((size_t)nx * es);
      uint8_t* got = malloc((size_t)nx * es);
      for (int64_t i = 0; i < nx + ns; ++i) {
        const bool is_x = i < nx;
        const int64_t e = is_x ? i : i - nx;
        // Few distinct operand values (ties), a NaN now and then.
        double v = is_x ? (double)((e * 7919) % 13) / 4.0 - 1.0 : (double)((e * 31) % 101) / 8.0;
        if (is_x && e % 53 == 7) v = NAN;
        uint8_t* at = is_x ? x + (size_t)e * es : src + (size_t)e * es;
        if (dt == CML_DTYPE_F32) {
          const float f = (float)v;
          memcpy(at, &f, 4);
        } else if (dt == CML_DTYPE_F64) {
          memcpy(at, &v, 8);
        } else {
          const uint16_t h =
              dt == CML_DTYPE_BF16 ? cml_f32_to_bf16((float)v) : cml_f32_to_f16((float)v);
          memcpy(at, &h, 2);
        }
      }
      for (int oi = 0; oi < 3 && !bad; ++oi) {
        kt_t k;
        kt_init(&k, ops[oi], 2, ins, &ins[0]);
        kt_window(&k, 4, cases[c].window, cases[c].strides, NULL, NULL, cases[c].lo, cases[c].hi);
        const void* in[] = {x, src};
        k.options.reference = true;
        cml_status_t st = kt_run(&k, NULL, in, want);
        bad = st != CML_OK;
        cml_status_free(st);
        k.options.reference = false;
        for (int p = 0; p < 2 * ((int)kt_best_isa() + 1) && !bad; ++p) {
          k.options.isa = (cmlc_isa_t)(p / 2);  // scalar, AVX2, AVX-512: threads 1 and 3
          st = kt_run(&k, p ? pool : NULL, in, got);
          bad = st != CML_OK;
          cml_status_free(st);
          if (!bad && memcmp(got, want, (size_t)nx * es) != 0) {
            for (int64_t i = 0; i < nx; ++i) {
              if (memcmp(got + i * es, want + i * es, es) != 0) {
                fprintf(stderr, "case %zu %s %s threads %d: element %lld differs\n", c,
                        cml_dtype_name(dt), cml_op_name(ops[oi]), p ? 3 : 1, (long long)i);
                break;
              }
            }
            bad = 1;
          }
        }
      }
      free(x);
      free(src);
      free(want);
      free(got);
    }
  }
  cmlc_pool_destroy(pool);
  ASSERT_EQ_INT(bad, 0);
}

TEST(lookup_and_capabilities) {
  cml_capabilities_t caps;
  memset(&caps, 0, sizeof caps);
  cmlc_kernels_window_capabilities(&caps);
  ASSERT_TRUE(cml_capabilities_has_op(&caps, CML_OP_REDUCE_WINDOW));
  ASSERT_TRUE(cml_capabilities_has_op(&caps, CML_OP_SELECT_AND_SCATTER_MAX));
  ASSERT_TRUE(cml_capabilities_has_op(&caps, CML_OP_SELECT_AND_SCATTER_MIN));
  ASSERT_TRUE(cml_capabilities_has_op(&caps, CML_OP_SELECT_AND_SCATTER_SUM));
  int64_t d[] = {4};
  cml_shape_t s = kt_shape(CML_DTYPE_C64, 1, d);
  kt_t k;
  cmlc_kernel_entry_t e;
  kt_init(&k, CML_OP_REDUCE_WINDOW, 1, &s, &s);
  k.attrs.reduce_type = CML_REDUCE_SUM;
  ASSERT_FALSE(cmlc_kernels_window_lookup(&k.module, &k.node, &k.options, &e));
  s.dtype = CML_DTYPE_F32;
  kt_init(&k, CML_OP_REDUCE_WINDOW, 1, &s, &s);
  k.attrs.reduce_type = CML_REDUCE_UNDEFINED;
  ASSERT_FALSE(cmlc_kernels_window_lookup(&k.module, &k.node, &k.options, &e));
  (void)kt_pattern;
}

TEST_MAIN(TEST_ENTRY(reduce_window_1d_by_hand), TEST_ENTRY(reduce_window_rows_match_reference),
          TEST_ENTRY(reduce_window_identities_and_nan),
          TEST_ENTRY(reduce_window_integer_wrap_and_f16_rounding), TEST_ENTRY(reduce_window_scalar),
          TEST_ENTRY(reduce_window_2d_matches_reference), TEST_ENTRY(select_and_scatter_by_hand),
          TEST_ENTRY(select_and_scatter_f16_accumulates_in_f32),
          TEST_ENTRY(select_and_scatter_2d_matches_reference),
          TEST_ENTRY(select_and_scatter_rows_match_reference), TEST_ENTRY(lookup_and_capabilities))
