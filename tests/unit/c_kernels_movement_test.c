// SPDX-License-Identifier: Apache-2.0
// tests/unit/c_kernels_movement_test.c: the C backend's movement kernels (Reshape, Transpose,
// BroadcastInDim, Concatenate, Slice, Reverse, Pad), called directly on hand-made nodes.
// Expected values are hand-computed or produced by plain reference loops written here.
#include <stdlib.h>
#include <string.h>

#define KT_LOOKUP cmlc_kernels_movement_lookup
#include "kernel_fixture.h"
#include "test.h"

static const cml_dtype_t kt_size_dtypes[] = {CML_DTYPE_U8, CML_DTYPE_I16, CML_DTYPE_F32,
                                             CML_DTYPE_F64, CML_DTYPE_C128};

//===--- Transpose ---===//

TEST(transpose_2x3_by_hand) {
  int64_t xd[] = {2, 3}, od[] = {3, 2};
  cml_shape_t xs = kt_shape(CML_DTYPE_F32, 2, xd), os = kt_shape(CML_DTYPE_F32, 2, od);
  kt_t k;
  kt_init(&k, CML_OP_TRANSPOSE, 1, &xs, &os);
  k.attrs.axis_count = 2;
  k.attrs.axes[0] = 1;
  k.attrs.axes[1] = 0;
  float x[] = {1, 2, 3, 4, 5, 6}, out[6] = {0};
  const void* in[] = {x};
  ASSERT_STATUS_OK(kt_run(&k, NULL, in, out));
  float want[] = {1, 4, 2, 5, 3, 6};
  for (int i = 0; i < 6; ++i) ASSERT_EQ_DBL(out[i], want[i]);
}

// Compares a transpose of |rank| dims by |perm| against a plain reference loop, for every
// element size, with and without a pool.
static int kt_check_transpose(int32_t rank, const int64_t* xd, const int64_t* perm,
                              cmlc_pool_t* pool) {
  for (size_t t = 0; t < sizeof kt_size_dtypes / sizeof *kt_size_dtypes; ++t) {
    cml_dtype_t dt = kt_size_dtypes[t];
    size_t es = (size_t)cml_dtype_bits(dt) / 8;
    int64_t od[CML_MAX_RANK];
    for (int32_t i = 0; i < rank; ++i) od[i] = xd[perm[i]];
    cml_shape_t xs = kt_shape(dt, rank, xd), os = kt_shape(dt, rank, od);
    kt_t k;
    kt_init(&k, CML_OP_TRANSPOSE, 1, &xs, &os);
    k.attrs.axis_count = rank;
    for (int32_t i = 0; i < rank; ++i) k.attrs.axes[i] = perm[i];
    int64_t n = kt_count(&xs);
    unsigned char* x = malloc((size_t)n * es + 1);
    unsigned char* out = malloc((size_t)n * es + 1);
    unsigned char* want = malloc((size_t)n * es + 1);
    kt_pattern(x, n, es);
    memset(out, 0xAB, (size_t)n * es);
    // Reference: for each output index, the input index is idx_in[perm[i]] = idx_out[i].
    int64_t xstr[CML_MAX_RANK], s = 1;
    for (int32_t i = rank - 1; i >= 0; --i) {
      xstr[i] = s;
      s *= xd[i];
    }
    for (int64_t o = 0; o < n; ++o) {
      int64_t rem = o, src = 0;
      for (int32_t i = rank - 1; i >= 0; --i) {
        src += (rem % od[i]) * xstr[perm[i]];
        rem /= od[i];
      }
      memcpy(want + o * (int64_t)es, x + src * (int64_t)es, es);
    }
    const void* in[] = {x};
    int bad = 0;
    // The portable loops, then (where the CPU has it) the AVX-512 register transposes.
    for (int v = 0; v < 2 && !bad; ++v) {
      k.options.isa = CMLC_ISA_SCALAR;
#if defined(__x86_64__)
      __builtin_cpu_init();
      if (v == 1 && !__builtin_cpu_supports("avx512f")) break;
      if (v == 1) k.options.isa = CMLC_ISA_AVX512;
#else
      if (v == 1) break;
#endif
      memset(out, 0xAB, (size_t)n * es);
      cml_status_t st = kt_run(&k, pool, in, out);
      bad = st != CML_OK || memcmp(out, want, (size_t)n * es) != 0;
      if (bad) {
        fprintf(stderr, "transpose mismatch: dtype %s rank %d isa %d\n", cml_dtype_name(dt), rank,
                (int)k.options.isa);
      }
      cml_status_free(st);
    }
    free(x);
    free(out);
    free(want);
    if (bad) return 1;
  }
  return 0;
}

TEST(transpose_matches_reference) {
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  struct {
    int32_t rank;
    int64_t dims[8];
    int64_t perm[8];
  } cases[] = {
      {2, {67, 131}, {1, 0}},                                   // tiled 2-D
      {2, {64, 96}, {1, 0}},                                    // whole 32 x 32 tiles
      {3, {3, 70, 33}, {0, 2, 1}},                              // odd output rows (16-bit)
      {3, {2, 64, 66}, {0, 2, 1}},                              // outer axis, edge tiles
      {3, {5, 7, 11}, {2, 0, 1}},                               // small, odd
      {3, {13, 17, 19}, {2, 1, 0}},                             // tiled with an outer axis
      {3, {9, 33, 40}, {1, 0, 2}},                              // inner axis kept: row copies
      {4, {3, 1, 40, 50}, {2, 3, 1, 0}},                        // size-1 axis
      {8, {2, 3, 2, 1, 3, 2, 2, 3}, {7, 6, 5, 4, 3, 2, 1, 0}},  // rank 8
      {2, {0, 5}, {1, 0}},                                      // zero-size
      {1, {7}, {0}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; ++c) {
    for (int p = 0; p < 2; ++p) {
      if (kt_check_transpose(cases[c].rank, cases[c].dims, cases[c].perm, p ? pool : NULL)) {
        cmlc_pool_destroy(pool);
        TEST_FAIL_("case %zu (pool %d)", c, p);
      }
    }
  }
  cmlc_pool_destroy(pool);
}

//===--- BroadcastInDim ---===//

TEST(broadcast_in_dim_by_hand) {
  {
    int64_t xd[] = {3}, od[] = {2, 3};
    cml_shape_t xs = kt_shape(CML_DTYPE_I32, 1, xd), os = kt_shape(CML_DTYPE_I32, 2, od);
    kt_t k;
    kt_init(&k, CML_OP_BROADCAST_IN_DIM, 1, &xs, &os);
    k.attrs.axis_count = 1;
    k.attrs.axes[0] = 1;
    int32_t x[] = {1, 2, 3}, out[6];
    const void* in[] = {x};
    ASSERT_STATUS_OK(kt_run(&k, NULL, in, out));
    int32_t want[] = {1, 2, 3, 1, 2, 3};
    for (int i = 0; i < 6; ++i) ASSERT_EQ_INT(out[i], want[i]);
  }
  {
    // [3, 1] -> [3, 4] with axes {0, 1}: the size-1 axis broadcasts.
    int64_t xd[] = {3, 1}, od[] = {3, 4};
    cml_shape_t xs = kt_shape(CML_DTYPE_I8, 2, xd), os = kt_shape(CML_DTYPE_I8, 2, od);
    kt_t k;
    kt_init(&k, CML_OP_BROADCAST_IN_DIM, 1, &xs, &os);
    k.attrs.axis_count = 2;
    k.attrs.axes[0] = 0;
    k.attrs.axes[1] = 1;
    int8_t x[] = {-1, 5, 9}, out[12];
    const void* in[] = {x};
    ASSERT_STATUS_OK(kt_run(&k, NULL, in, out));
    for (int i = 0; i < 12; ++i) ASSERT_EQ_INT(out[i], x[i / 4]);
  }
  {
    // Scalar complex -> [2, 2].
    int64_t od[] = {2, 2};
    cml_shape_t xs = kt_shape(CML_DTYPE_C64, 0, NULL), os = kt_shape(CML_DTYPE_C64, 2, od);
    kt_t k;
    kt_init(&k, CML_OP_BROADCAST_IN_DIM, 1, &xs, &os);
    cml_c64_t x = {1.5f, -2.0f}, out[4];
    const void* in[] = {&x};
    ASSERT_STATUS_OK(kt_run(&k, NULL, in, out));
    for (int i = 0; i < 4; ++i) {
      ASSERT_EQ_DBL(out[i].re, 1.5);
      ASSERT_EQ_DBL(out[i].im, -2.0);
    }
  }
}

TEST(broadcast_in_dim_large_with_pool) {
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  // [7, 1, 11] -> [5, 7, 300, 11] with axes {1, 2, 3}.
  int64_t xd[] = {7, 1, 11}, od[] = {5, 7, 300, 11};
  cml_shape_t xs = kt_shape(CML_DTYPE_F64, 3, xd), os = kt_shape(CML_DTYPE_F64, 4, od);
  kt_t k;
  kt_init(&k, CML_OP_BROADCAST_IN_DIM, 1, &xs, &os);
  k.attrs.axis_count = 3;
  k.attrs.axes[0] = 1;
  k.attrs.axes[1] = 2;
  k.attrs.axes[2] = 3;
  double x[77];
  for (int i = 0; i < 77; ++i) x[i] = i * 0.5;
  int64_t n = kt_count(&os);
  double* out = malloc((size_t)n * sizeof(double));
  const void* in[] = {x};
  cml_status_t st = kt_run(&k, pool, in, out);
  int bad = st != CML_OK;
  for (int64_t i = 0; i < n && !bad; ++i) {
    int64_t c = i % 11, b = (i / (11 * 300)) % 7;
    if (out[i] != x[b * 11 + c]) bad = 1;
  }
  cml_status_free(st);
  free(out);
  cmlc_pool_destroy(pool);
  ASSERT_FALSE(bad);
}

//===--- Concatenate ---===//

TEST(concatenate_by_hand) {
  int64_t ad[] = {2, 2}, bd[] = {2, 3}, cd[] = {2, 0}, od[] = {2, 5};
  cml_shape_t ins[3] = {kt_shape(CML_DTYPE_I16, 2, ad), kt_shape(CML_DTYPE_I16, 2, cd),
                        kt_shape(CML_DTYPE_I16, 2, bd)};
  cml_shape_t os = kt_shape(CML_DTYPE_I16, 2, od);
  kt_t k;
  kt_init(&k, CML_OP_CONCATENATE, 3, ins, &os);
  k.attrs.axis = 1;
  int16_t a[] = {1, 2, 3, 4}, b[] = {10, 20, 30, 40, 50, 60}, out[10];
  const void* in[] = {a, NULL, b};
  ASSERT_STATUS_OK(kt_run(&k, NULL, in, out));
  int16_t want[] = {1, 2, 10, 20, 30, 3, 4, 40, 50, 60};
  for (int i = 0; i < 10; ++i) ASSERT_EQ_INT(out[i], want[i]);

  // Axis 0 of bools.
  int64_t xd[] = {1, 3}, yd[] = {2, 3}, zd[] = {3, 3};
  cml_shape_t ins2[2] = {kt_shape(CML_DTYPE_BOOL, 2, xd), kt_shape(CML_DTYPE_BOOL, 2, yd)};
  cml_shape_t os2 = kt_shape(CML_DTYPE_BOOL, 2, zd);
  kt_init(&k, CML_OP_CONCATENATE, 2, ins2, &os2);
  k.attrs.axis = 0;
  uint8_t x[] = {1, 0, 1}, y[] = {0, 0, 1, 1, 1, 0}, out2[9];
  const void* in2[] = {x, y};
  ASSERT_STATUS_OK(kt_run(&k, NULL, in2, out2));
  uint8_t want2[] = {1, 0, 1, 0, 0, 1, 1, 1, 0};
  for (int i = 0; i < 9; ++i) ASSERT_EQ_INT(out2[i], want2[i]);
}

//===--- Slice ---===//

TEST(slice_with_strides) {
  int64_t xd[] = {5, 7}, od[] = {2, 3};
  cml_shape_t xs = kt_shape(CML_DTYPE_I32, 2, xd), os = kt_shape(CML_DTYPE_I32, 2, od);
  kt_t k;
  kt_init(&k, CML_OP_SLICE, 1, &xs, &os);
  k.attrs.starts[0] = 1;
  k.attrs.limits[0] = 5;
  k.attrs.strides[0] = 2;
  k.attrs.starts[1] = 0;
  k.attrs.limits[1] = 7;
  k.attrs.strides[1] = 3;
  int32_t x[35], out[6];
  for (int i = 0; i < 35; ++i) x[i] = i;
  const void* in[] = {x};
  ASSERT_STATUS_OK(kt_run(&k, NULL, in, out));
  // Rows 1 and 3, columns 0, 3, 6.
  int32_t want[] = {7, 10, 13, 21, 24, 27};
  for (int i = 0; i < 6; ++i) ASSERT_EQ_INT(out[i], want[i]);

  // A zero-size result writes nothing.
  int64_t zd[] = {0, 7};
  cml_shape_t zs = kt_shape(CML_DTYPE_I32, 2, zd);
  kt_init(&k, CML_OP_SLICE, 1, &xs, &zs);
  k.attrs.starts[0] = 3;
  k.attrs.limits[0] = 3;
  k.attrs.strides[0] = 1;
  k.attrs.limits[1] = 7;
  k.attrs.strides[1] = 1;
  ASSERT_STATUS_OK(kt_run(&k, NULL, in, out));
}

// Strides 2 and 3 along the last axis (the constant-stride row loops) for every element size,
// rows long enough for vector loops and their tails, against a host loop.
TEST(slice_last_axis_strides_2_3_every_element_size) {
  static const cml_dtype_t dts[5] = {CML_DTYPE_U8, CML_DTYPE_BF16, CML_DTYPE_F32, CML_DTYPE_I64,
                                     CML_DTYPE_C128};
  for (int di = 0; di < 5; ++di) {
    const size_t es = (size_t)cml_dtype_bits(dts[di]) / 8;
    for (int64_t stride = 2; stride <= 3; ++stride) {
      const int64_t rows = 3, cols = 203, start = 1;
      const int64_t out_cols = (cols - start + stride - 1) / stride;
      int64_t xd[] = {rows, cols}, od[] = {rows, out_cols};
      cml_shape_t xs = kt_shape(dts[di], 2, xd), os = kt_shape(dts[di], 2, od);
      kt_t k;
      kt_init(&k, CML_OP_SLICE, 1, &xs, &os);
      k.attrs.starts[0] = 0;
      k.attrs.limits[0] = rows;
      k.attrs.strides[0] = 1;
      k.attrs.starts[1] = start;
      k.attrs.limits[1] = cols;
      k.attrs.strides[1] = stride;
      uint8_t* x = malloc((size_t)(rows * cols) * es);
      uint8_t* out = malloc((size_t)(rows * out_cols) * es);
      for (size_t b = 0; b < (size_t)(rows * cols) * es; ++b) x[b] = (uint8_t)(b * 131u + 7u);
      const void* in[] = {x};
      ASSERT_STATUS_OK(kt_run(&k, NULL, in, out));
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < out_cols; ++c) {
          const uint8_t* want = x + (size_t)(r * cols + start + c * stride) * es;
          ASSERT_TRUE(memcmp(out + (size_t)(r * out_cols + c) * es, want, es) == 0);
        }
      }
      free(x);
      free(out);
    }
  }
}

//===--- Reverse ---===//

TEST(reverse_by_hand) {
  int64_t d[] = {2, 3};
  cml_shape_t s = kt_shape(CML_DTYPE_F64, 2, d);
  double x[] = {1, 2, 3, 4, 5, 6}, out[6];
  const void* in[] = {x};
  kt_t k;
  kt_init(&k, CML_OP_REVERSE, 1, &s, &s);
  k.attrs.axis_count = 1;
  k.attrs.axes[0] = 1;
  ASSERT_STATUS_OK(kt_run(&k, NULL, in, out));
  double want1[] = {3, 2, 1, 6, 5, 4};
  for (int i = 0; i < 6; ++i) ASSERT_EQ_DBL(out[i], want1[i]);
  k.attrs.axis_count = 2;
  k.attrs.axes[0] = 0;
  k.attrs.axes[1] = 1;
  ASSERT_STATUS_OK(kt_run(&k, NULL, in, out));
  double want2[] = {6, 5, 4, 3, 2, 1};
  for (int i = 0; i < 6; ++i) ASSERT_EQ_DBL(out[i], want2[i]);
}

// Reverse of the last axis (the stride -1 row loop) for every element size, of the first axis
// and of both, rows long enough for vector loops and their tails, against a host loop.
TEST(reverse_every_element_size) {
  static const cml_dtype_t dts[5] = {CML_DTYPE_U8, CML_DTYPE_BF16, CML_DTYPE_F32, CML_DTYPE_I64,
                                     CML_DTYPE_C128};
  for (int di = 0; di < 5; ++di) {
    const size_t es = (size_t)cml_dtype_bits(dts[di]) / 8;
    const int64_t rows = 3, cols = 203;
    int64_t xd[] = {rows, cols};
    cml_shape_t xs = kt_shape(dts[di], 2, xd);
    uint8_t* x = malloc((size_t)(rows * cols) * es);
    uint8_t* out = malloc((size_t)(rows * cols) * es);
    for (size_t b = 0; b < (size_t)(rows * cols) * es; ++b) x[b] = (uint8_t)(b * 131u + 7u);
    for (int which = 0; which < 3; ++which) {  // last axis, first axis, both
      kt_t k;
      kt_init(&k, CML_OP_REVERSE, 1, &xs, &xs);
      k.attrs.axis_count = which == 2 ? 2 : 1;
      k.attrs.axes[0] = which == 1 ? 0 : 1;
      k.attrs.axes[1] = 0;
      const void* in[] = {x};
      ASSERT_STATUS_OK(kt_run(&k, NULL, in, out));
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
          const int64_t sr = which >= 1 ? rows - 1 - r : r, sc = which != 1 ? cols - 1 - c : c;
          const uint8_t* want = x + (size_t)(sr * cols + sc) * es;
          ASSERT_TRUE(memcmp(out + (size_t)(r * cols + c) * es, want, es) == 0);
        }
      }
    }
    free(x);
    free(out);
  }
}

//===--- Pad ---===//

TEST(pad_by_hand) {
  int64_t xd[] = {3}, od[] = {8};
  cml_shape_t ins[2] = {kt_shape(CML_DTYPE_F32, 1, xd), kt_shape(CML_DTYPE_F32, 0, NULL)};
  cml_shape_t os = kt_shape(CML_DTYPE_F32, 1, od);
  kt_t k;
  kt_init(&k, CML_OP_PAD, 2, ins, &os);
  k.attrs.pads[0].low = 1;
  k.attrs.pads[0].high = 2;
  k.attrs.pads[0].interior = 1;
  float x[] = {1, 2, 3}, fill = -9, out[8];
  const void* in[] = {x, &fill};
  ASSERT_STATUS_OK(kt_run(&k, NULL, in, out));
  float want[] = {-9, 1, -9, 2, -9, 3, -9, -9};
  for (int i = 0; i < 8; ++i) ASSERT_EQ_DBL(out[i], want[i]);

  // Negative low crops: [1, f, 2, f, 3] without its first element.
  int64_t od2[] = {4};
  cml_shape_t os2 = kt_shape(CML_DTYPE_F32, 1, od2);
  kt_init(&k, CML_OP_PAD, 2, ins, &os2);
  k.attrs.pads[0].low = -1;
  k.attrs.pads[0].high = 0;
  k.attrs.pads[0].interior = 1;
  ASSERT_STATUS_OK(kt_run(&k, NULL, in, out));
  float want2[] = {-9, 2, -9, 3};
  for (int i = 0; i < 4; ++i) ASSERT_EQ_DBL(out[i], want2[i]);

  // Cropping everything away leaves only the fill: low = -5 on 3 elements, high = +2.
  int64_t od3[] = {0};
  cml_shape_t os3 = kt_shape(CML_DTYPE_F32, 1, od3);
  kt_init(&k, CML_OP_PAD, 2, ins, &os3);
  k.attrs.pads[0].low = -5;
  k.attrs.pads[0].high = 2;
  ASSERT_STATUS_OK(kt_run(&k, NULL, in, out));
}

TEST(pad_2d_matches_reference) {
  // [5, 7] u16 with (low, high, interior) = (2, -3, 1) and (-2, 4, 2).
  int64_t xd[] = {5, 7};
  cml_pad_axis_t pads[2] = {{2, -3, 1}, {-2, 4, 2}};
  int64_t od[2];
  for (int i = 0; i < 2; ++i)
    od[i] = xd[i] + pads[i].low + pads[i].high + (xd[i] - 1) * pads[i].interior;
  cml_shape_t ins[2] = {kt_shape(CML_DTYPE_U16, 2, xd), kt_shape(CML_DTYPE_U16, 0, NULL)};
  cml_shape_t os = kt_shape(CML_DTYPE_U16, 2, od);
  kt_t k;
  kt_init(&k, CML_OP_PAD, 2, ins, &os);
  k.attrs.pads[0] = pads[0];
  k.attrs.pads[1] = pads[1];
  uint16_t x[35], fill = 999;
  for (int i = 0; i < 35; ++i) x[i] = (uint16_t)(i + 1);
  uint16_t out[200], want[200];
  for (int64_t r = 0; r < od[0]; ++r)
    for (int64_t c = 0; c < od[1]; ++c) {
      uint16_t v = fill;
      int64_t pr = r - pads[0].low, pc = c - pads[1].low;
      if (pr >= 0 && pc >= 0 && pr % (pads[0].interior + 1) == 0 &&
          pc % (pads[1].interior + 1) == 0) {
        int64_t ir = pr / (pads[0].interior + 1), ic = pc / (pads[1].interior + 1);
        if (ir < xd[0] && ic < xd[1]) v = x[ir * xd[1] + ic];
      }
      want[r * od[1] + c] = v;
    }
  const void* in[] = {x, &fill};
  ASSERT_STATUS_OK(kt_run(&k, NULL, in, out));
  for (int64_t i = 0; i < od[0] * od[1]; ++i) ASSERT_EQ_INT(out[i], want[i]);
}

//===--- Reshape and lookup ---===//

TEST(reshape_copies_bytes_packed_included) {
  int64_t xd[] = {2, 3}, od[] = {6};
  cml_shape_t xs = kt_shape(CML_DTYPE_I4, 2, xd), os = kt_shape(CML_DTYPE_I4, 1, od);
  kt_t k;
  kt_init(&k, CML_OP_RESHAPE, 1, &xs, &os);
  uint8_t x[3] = {0x21, 0x43, 0x65}, out[3] = {0};
  const void* in[] = {x};
  ASSERT_STATUS_OK(kt_run(&k, NULL, in, out));
  for (int i = 0; i < 3; ++i) ASSERT_EQ_INT(out[i], x[i]);
  // In place (the engine may alias): the data stays.
  const void* in2[] = {out};
  ASSERT_STATUS_OK(kt_run(&k, NULL, in2, out));
  for (int i = 0; i < 3; ++i) ASSERT_EQ_INT(out[i], x[i]);
}

TEST(lookup_rejects_packed_except_reshape) {
  int64_t d[] = {4};
  cml_shape_t s = kt_shape(CML_DTYPE_U2, 1, d);
  kt_t k;
  cmlc_kernel_entry_t e;
  kt_init(&k, CML_OP_TRANSPOSE, 1, &s, &s);
  ASSERT_FALSE(cmlc_kernels_movement_lookup(&k.module, &k.node, &k.options, &e));
  kt_init(&k, CML_OP_RESHAPE, 1, &s, &s);
  ASSERT_TRUE(cmlc_kernels_movement_lookup(&k.module, &k.node, &k.options, &e));
  ASSERT_EQ_INT(e.in_place_input, 0);
  kt_init(&k, CML_OP_ADD, 1, &s, &s);
  ASSERT_FALSE(cmlc_kernels_movement_lookup(&k.module, &k.node, &k.options, &e));
}

TEST(capabilities) {
  cml_capabilities_t caps;
  memset(&caps, 0, sizeof caps);
  cmlc_kernels_movement_capabilities(&caps);
  cml_op_t ops[] = {CML_OP_RESHAPE,     CML_OP_TRANSPOSE, CML_OP_BROADCAST_IN_DIM,
                    CML_OP_CONCATENATE, CML_OP_SLICE,     CML_OP_REVERSE,
                    CML_OP_PAD};
  for (size_t i = 0; i < sizeof ops / sizeof *ops; ++i)
    ASSERT_TRUE(cml_capabilities_has_op(&caps, ops[i]));
  ASSERT_FALSE(cml_capabilities_has_op(&caps, CML_OP_ADD));
}

TEST_MAIN(TEST_ENTRY(transpose_2x3_by_hand), TEST_ENTRY(transpose_matches_reference),
          TEST_ENTRY(broadcast_in_dim_by_hand), TEST_ENTRY(broadcast_in_dim_large_with_pool),
          TEST_ENTRY(concatenate_by_hand), TEST_ENTRY(slice_with_strides),
          TEST_ENTRY(slice_last_axis_strides_2_3_every_element_size), TEST_ENTRY(reverse_by_hand),
          TEST_ENTRY(reverse_every_element_size), TEST_ENTRY(pad_by_hand),
          TEST_ENTRY(pad_2d_matches_reference), TEST_ENTRY(reshape_copies_bytes_packed_included),
          TEST_ENTRY(lookup_rejects_packed_except_reshape), TEST_ENTRY(capabilities))
