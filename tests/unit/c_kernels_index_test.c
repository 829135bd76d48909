// SPDX-License-Identifier: Apache-2.0
// tests/unit/c_kernels_index_test.c: the C backend's index kernels (DynamicSlice,
// DynamicUpdateSlice, Gather, ScatterSum/Max/Min), called directly on hand-made nodes.
// Expected values are hand-computed or produced by per-element reference formulas written here
// straight from XLA's definitions (a different structure from the kernels' loops).
#include <stdlib.h>
#include <string.h>

#include "backends/c/engine_internal.h"

#define KT_LOOKUP cmlc_kernels_index_lookup
#include "kernel_fixture.h"
#include "test.h"

//===--- DynamicSlice / DynamicUpdateSlice ---===//

TEST(dynamic_slice_clamps_starts) {
  int64_t xd[] = {5}, od[] = {3};
  cml_shape_t ins[2] = {kt_shape(CML_DTYPE_I32, 1, xd), kt_shape(CML_DTYPE_I8, 0, NULL)};
  cml_shape_t os = kt_shape(CML_DTYPE_I32, 1, od);
  kt_t k;
  kt_init(&k, CML_OP_DYNAMIC_SLICE, 2, ins, &os);
  k.attrs.axis_count = 1;
  k.attrs.axes[0] = 3;
  int32_t x[] = {10, 11, 12, 13, 14}, out[3];
  int8_t start = 3;  // clamped to 5 - 3 = 2
  const void* in[] = {x, &start};
  ASSERT_STATUS_OK(kt_run(&k, NULL, in, out));
  ASSERT_EQ_INT(out[0], 12);
  ASSERT_EQ_INT(out[1], 13);
  ASSERT_EQ_INT(out[2], 14);
  start = -7;  // clamped to 0
  ASSERT_STATUS_OK(kt_run(&k, NULL, in, out));
  ASSERT_EQ_INT(out[0], 10);
  ASSERT_EQ_INT(out[2], 12);
  // A u64 start above INT64_MAX clamps to the end.
  ins[1] = kt_shape(CML_DTYPE_U64, 0, NULL);
  kt_init(&k, CML_OP_DYNAMIC_SLICE, 2, ins, &os);
  uint64_t big = UINT64_MAX;
  const void* in2[] = {x, &big};
  ASSERT_STATUS_OK(kt_run(&k, NULL, in2, out));
  ASSERT_EQ_INT(out[0], 12);
}

TEST(dynamic_slice_2d_mixed_index_dtypes) {
  int64_t xd[] = {4, 5}, od[] = {2, 2};
  cml_shape_t ins[3] = {kt_shape(CML_DTYPE_C64, 2, xd), kt_shape(CML_DTYPE_I64, 0, NULL),
                        kt_shape(CML_DTYPE_I16, 0, NULL)};
  cml_shape_t os = kt_shape(CML_DTYPE_C64, 2, od);
  kt_t k;
  kt_init(&k, CML_OP_DYNAMIC_SLICE, 3, ins, &os);
  cml_c64_t x[20], out[4];
  for (int i = 0; i < 20; ++i) x[i] = (cml_c64_t){(float)i, (float)-i};
  int64_t s0 = 1;
  int16_t s1 = 4;  // clamped to 3
  const void* in[] = {x, &s0, &s1};
  ASSERT_STATUS_OK(kt_run(&k, NULL, in, out));
  float want[] = {8, 9, 13, 14};
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ_DBL(out[i].re, want[i]);
    ASSERT_EQ_DBL(out[i].im, -want[i]);
  }
}

TEST(dynamic_update_slice_clamps_and_runs_in_place) {
  int64_t xd[] = {5}, ud[] = {2};
  cml_shape_t ins[3] = {kt_shape(CML_DTYPE_I32, 1, xd), kt_shape(CML_DTYPE_I32, 1, ud),
                        kt_shape(CML_DTYPE_U32, 0, NULL)};
  cml_shape_t os = ins[0];
  kt_t k;
  kt_init(&k, CML_OP_DYNAMIC_UPDATE_SLICE, 3, ins, &os);
  int32_t x[] = {1, 2, 3, 4, 5}, u[] = {70, 80}, out[5];
  uint32_t start = 4;  // clamped to 3
  const void* in[] = {x, u, &start};
  ASSERT_STATUS_OK(kt_run(&k, NULL, in, out));
  int32_t want[] = {1, 2, 3, 70, 80};
  for (int i = 0; i < 5; ++i) ASSERT_EQ_INT(out[i], want[i]);
  // In place: the output is the operand's storage.
  start = 0;
  const void* in2[] = {x, u, &start};
  ASSERT_STATUS_OK(kt_run(&k, NULL, in2, x));
  int32_t want2[] = {70, 80, 3, 4, 5};
  for (int i = 0; i < 5; ++i) ASSERT_EQ_INT(x[i], want2[i]);
}

// Windows of rank 1 to 4, of element sizes 1 to 16, at starts in and out of range (clamped):
// small contiguous runs (leading size-1 dimensions, then a partial dimension, then whole ones:
// one memcpy), small strided windows and windows past 4096 bytes (the general copy), for
// DynamicSlice and DynamicUpdateSlice, against a per-element reference.
static int64_t ix_clamp_ref(int64_t v, int64_t hi) { return v < 0 ? 0 : v > hi ? hi : v; }

// The element of the whole array [xd] that window index j of the window [wd] at |at| reads.
static int64_t ix_window_element(int64_t j, int32_t rank, const int64_t* wd, const int64_t* xd,
                                 const int64_t* at) {
  int64_t element = 0, stride = 1;
  for (int32_t d = rank - 1; d >= 0; --d) {
    element += (j % wd[d] + at[d]) * stride;
    j /= wd[d];
    stride *= xd[d];
  }
  return element;
}

TEST(dynamic_windows_match_per_element_reference) {
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  const cml_dtype_t dtypes[5] = {CML_DTYPE_I8, CML_DTYPE_F16, CML_DTYPE_F32, CML_DTYPE_F64,
                                 CML_DTYPE_C128};
  int checked_runs = 0, checked_strided = 0;
  for (int trial = 0; trial < 400; ++trial) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    const cml_dtype_t dt = dtypes[(seed >> 33) % 5];
    const size_t es = (size_t)cml_shape_byte_size(&(cml_shape_t){.dtype = dt, .rank = 0});
    const int32_t rank = 1 + (int32_t)((seed >> 40) % 4);
    int64_t xd[4], wd[4];
    const bool big = trial % 10 == 0;
    for (int32_t d = 0; d < rank; ++d) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      xd[d] = 1 + (int64_t)((seed >> 35) % (big ? 24 : 6));
      wd[d] = 1 + (int64_t)((seed >> 45) % (uint64_t)xd[d]);
    }
    if (trial % 3 == 0) {  // shape a contiguous run: leading ones, one partial, whole after
      const int32_t lead = (int32_t)((seed >> 50) % (uint64_t)rank);
      for (int32_t d = 0; d < rank; ++d) {
        if (d < lead) wd[d] = 1;
        if (d > lead) wd[d] = xd[d];
      }
    }
    cml_shape_t xs = kt_shape(dt, rank, xd), ws = kt_shape(dt, rank, wd);
    const int64_t xn = cml_shape_element_count(&xs), wn = cml_shape_element_count(&ws);
    uint8_t* x = malloc((size_t)xn * es);
    uint8_t* w = malloc((size_t)wn * es);
    uint8_t* got = malloc((size_t)xn * es);
    uint8_t* want = malloc((size_t)xn * es);
    ASSERT_TRUE(x && w && got && want);
    for (int64_t i = 0; i < xn * (int64_t)es; ++i) x[i] = (uint8_t)(i * 31 + trial);
    for (int64_t i = 0; i < wn * (int64_t)es; ++i) w[i] = (uint8_t)(i * 17 + 5 + trial);
    int32_t starts[4];
    int64_t clamped[4];
    for (int32_t d = 0; d < rank; ++d) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      starts[d] = (int32_t)((seed >> 40) % (uint64_t)(xd[d] + 7)) - 3;
      clamped[d] = ix_clamp_ref(starts[d], xd[d] - wd[d]);
    }
    cml_shape_t ins[6];
    const void* in[6];
    // DynamicSlice: want[j] = x[clamped + j] for every window index j.
    ins[0] = xs;
    in[0] = x;
    for (int32_t d = 0; d < rank; ++d) {
      ins[1 + d] = kt_shape(CML_DTYPE_I32, 0, NULL);
      in[1 + d] = &starts[d];
    }
    kt_t k;
    kt_init(&k, CML_OP_DYNAMIC_SLICE, (uint32_t)(1 + rank), ins, &ws);
    ASSERT_STATUS_OK(kt_run(&k, NULL, in, got));
    for (int64_t j = 0; j < wn; ++j) {
      const int64_t src = ix_window_element(j, rank, wd, xd, clamped);
      memcpy(want + j * (int64_t)es, x + src * (int64_t)es, es);
    }
    ASSERT_TRUE(memcmp(got, want, (size_t)wn * es) == 0);
    // DynamicUpdateSlice: the operand with w written at the clamped starts.
    ins[0] = xs;
    ins[1] = ws;
    in[0] = x;
    in[1] = w;
    for (int32_t d = 0; d < rank; ++d) {
      ins[2 + d] = kt_shape(CML_DTYPE_I32, 0, NULL);
      in[2 + d] = &starts[d];
    }
    kt_init(&k, CML_OP_DYNAMIC_UPDATE_SLICE, (uint32_t)(2 + rank), ins, &xs);
    ASSERT_STATUS_OK(kt_run(&k, NULL, in, got));
    memcpy(want, x, (size_t)xn * es);
    for (int64_t j = 0; j < wn; ++j) {
      const int64_t dst = ix_window_element(j, rank, wd, xd, clamped);
      memcpy(want + dst * (int64_t)es, w + j * (int64_t)es, es);
    }
    ASSERT_TRUE(memcmp(got, want, (size_t)xn * es) == 0);
    bool run = true;
    int32_t lead = 0;
    while (lead < rank && wd[lead] == 1) ++lead;
    for (int32_t d = lead + 1; d < rank; ++d) run = run && wd[d] == xd[d];
    if (run && wn * (int64_t)es <= 4096) {
      ++checked_runs;
    } else {
      ++checked_strided;
    }
    free(x);
    free(w);
    free(got);
    free(want);
  }
  // Both paths were taken many times.
  ASSERT_TRUE(checked_runs > 100);
  ASSERT_TRUE(checked_strided > 50);
}

//===--- Gather ---===//

TEST(gather_rows_by_hand) {
  // Embedding lookup: operand [3, 4], indices [3] (implicit index vector axis), rows 2, 0, 5->2.
  int64_t xd[] = {3, 4}, id[] = {3}, od[] = {3, 4};
  cml_shape_t ins[2] = {kt_shape(CML_DTYPE_F32, 2, xd), kt_shape(CML_DTYPE_I32, 1, id)};
  cml_shape_t os = kt_shape(CML_DTYPE_F32, 2, od);
  kt_t k;
  kt_init(&k, CML_OP_GATHER, 2, ins, &os);
  cml_gather_dims_t* g = &k.attrs.u.gather;
  g->index_vector_axis = 1;
  g->offset_output_axis_count = 1;
  g->offset_output_axes[0] = 1;
  g->collapsed_slice_axis_count = 1;
  g->collapsed_slice_axes[0] = 0;
  g->start_index_map_count = 1;
  g->start_index_map[0] = 0;
  g->slice_size_count = 2;
  g->slice_sizes[0] = 1;
  g->slice_sizes[1] = 4;
  float x[12], out[12];
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) x[r * 4 + c] = (float)(r * 10 + c);
  int32_t idx[] = {2, 0, 5};
  const void* in[] = {x, idx};
  ASSERT_STATUS_OK(kt_run(&k, NULL, in, out));
  float want[] = {20, 21, 22, 23, 0, 1, 2, 3, 20, 21, 22, 23};
  for (int i = 0; i < 12; ++i) ASSERT_EQ_DBL(out[i], want[i]);
}

TEST(gather_windows_by_hand) {
  // operand [4, 5] = r*10+c, indices [3, 2], slices 2x2 at (1,2), (3,4)->(2,3), (-1,0)->(0,0).
  int64_t xd[] = {4, 5}, id[] = {3, 2}, od[] = {3, 2, 2};
  cml_shape_t ins[2] = {kt_shape(CML_DTYPE_I32, 2, xd), kt_shape(CML_DTYPE_I64, 2, id)};
  cml_shape_t os = kt_shape(CML_DTYPE_I32, 3, od);
  kt_t k;
  kt_init(&k, CML_OP_GATHER, 2, ins, &os);
  cml_gather_dims_t* g = &k.attrs.u.gather;
  g->index_vector_axis = 1;
  g->offset_output_axis_count = 2;
  g->offset_output_axes[0] = 1;
  g->offset_output_axes[1] = 2;
  g->start_index_map_count = 2;
  g->start_index_map[0] = 0;
  g->start_index_map[1] = 1;
  g->slice_size_count = 2;
  g->slice_sizes[0] = 2;
  g->slice_sizes[1] = 2;
  int32_t x[20], out[12];
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 5; ++c) x[r * 5 + c] = r * 10 + c;
  int64_t idx[] = {1, 2, 3, 4, -1, 0};
  const void* in[] = {x, idx};
  ASSERT_STATUS_OK(kt_run(&k, NULL, in, out));
  int32_t want[] = {12, 13, 22, 23, 23, 24, 33, 34, 0, 1, 10, 11};
  for (int i = 0; i < 12; ++i) ASSERT_EQ_INT(out[i], want[i]);
}

static int kt_contains(const int64_t* list, int32_t n, int64_t v) {
  for (int32_t i = 0; i < n; ++i)
    if (list[i] == v) return 1;
  return 0;
}

// The operand element (row-major flat index) that output element |out_index| of a gather reads,
// from XLA's definition; indices I32 or I64.
static int64_t kt_ref_gather_at(const cml_shape_t* xs, const cml_shape_t* is, const void* idx,
                                const cml_shape_t* os, const cml_gather_dims_t* g,
                                const int64_t* out_index) {
  int64_t batch[CML_MAX_RANK] = {0};
  int32_t nb = 0;
  for (int32_t d = 0; d < os->rank; ++d)
    if (!kt_contains(g->offset_output_axes, g->offset_output_axis_count, d))
      batch[nb++] = out_index[d];
  int64_t in_index[CML_MAX_RANK] = {0};
  for (int32_t k = 0; k < g->start_index_map_count; ++k) {
    int64_t pos[CML_MAX_RANK + 1];
    int32_t b = 0;
    for (int32_t d = 0; d < is->rank; ++d) pos[d] = d == g->index_vector_axis ? k : batch[b++];
    int64_t flat = 0;
    for (int32_t d = 0; d < is->rank; ++d) flat = flat * is->dims[d] + pos[d];
    int64_t a = g->start_index_map[k], hi = xs->dims[a] - g->slice_sizes[a];
    int64_t v =
        is->dtype == CML_DTYPE_I32 ? ((const int32_t*)idx)[flat] : ((const int64_t*)idx)[flat];
    in_index[a] = v < 0 ? 0 : (v > hi ? hi : v);
  }
  int32_t o = 0;
  for (int32_t d = 0; d < xs->rank; ++d) {
    if (kt_contains(g->collapsed_slice_axes, g->collapsed_slice_axis_count, d)) continue;
    in_index[d] += out_index[g->offset_output_axes[o++]];
  }
  int64_t flat = 0;
  for (int32_t d = 0; d < xs->rank; ++d) flat = flat * xs->dims[d] + in_index[d];
  return flat;
}

// Per-output-element gather straight from XLA's definition (I32 operand).
static int32_t kt_ref_gather(const cml_shape_t* xs, const int32_t* x, const cml_shape_t* is,
                             const int32_t* idx, const cml_shape_t* os, const cml_gather_dims_t* g,
                             const int64_t* out_index) {
  return x[kt_ref_gather_at(xs, is, idx, os, g, out_index)];
}

TEST(gather_matches_reference) {
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  // operand [5, 6, 7]; indices [4, 2, 3] with the index vector on axis 2 (components -> operand
  // axes 2, 0); slice sizes [1, 3, 2] with axis 0 collapsed; offset output axes {1, 3}.
  int64_t xd[] = {5, 6, 7}, id[] = {4, 2, 2};
  cml_gather_dims_t g;
  memset(&g, 0, sizeof g);
  g.index_vector_axis = 2;
  g.offset_output_axis_count = 2;
  g.offset_output_axes[0] = 1;
  g.offset_output_axes[1] = 3;
  g.collapsed_slice_axis_count = 1;
  g.collapsed_slice_axes[0] = 0;
  g.start_index_map_count = 2;
  g.start_index_map[0] = 2;
  g.start_index_map[1] = 0;
  g.slice_size_count = 3;
  g.slice_sizes[0] = 1;
  g.slice_sizes[1] = 3;
  g.slice_sizes[2] = 2;
  // Output: batch dims (4, 2) at axes 0, 2; offset dims (3, 2) at axes 1, 3.
  int64_t od[] = {4, 3, 2, 2};
  cml_shape_t ins[2] = {kt_shape(CML_DTYPE_I32, 3, xd), kt_shape(CML_DTYPE_I32, 3, id)};
  cml_shape_t os = kt_shape(CML_DTYPE_I32, 4, od);
  kt_t k;
  kt_init(&k, CML_OP_GATHER, 2, ins, &os);
  k.attrs.u.gather = g;
  int32_t x[210], idx[16], out[48];
  for (int i = 0; i < 210; ++i) x[i] = i * 3 + 1;
  int32_t vals[16] = {0, 1, 6, 4, -2, 3, 5, 9, 2, 2, 3, -1, 100, 0, 4, 4};
  memcpy(idx, vals, sizeof idx);
  const void* in[] = {x, idx};
  for (int p = 0; p < 2; ++p) {
    memset(out, 0, sizeof out);
    ASSERT_STATUS_OK(kt_run(&k, p ? pool : NULL, in, out));
    for (int64_t i = 0; i < kt_count(&os); ++i) {
      int64_t oi[4], rem = i;
      for (int d = 3; d >= 0; --d) {
        oi[d] = rem % od[d];
        rem /= od[d];
      }
      int32_t want = kt_ref_gather(&ins[0], x, &ins[1], idx, &os, &g, oi);
      if (out[i] != want) {
        cmlc_pool_destroy(pool);
        TEST_FAIL_("element %lld: got %d want %d", (long long)i, out[i], want);
      }
    }
  }
  cmlc_pool_destroy(pool);
}

// Gathers of small contiguous windows (the kernel's blocked path: single elements and short
// rows of 1- to 8-byte elements, I32 and I64 indices, 1 to 3 coordinates, one or two batch
// axes, more windows than a block, indices out of range) against the reference, byte for byte,
// on one thread and on three.
TEST(gather_small_windows_match_reference) {
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  static const cml_dtype_t dts[4] = {CML_DTYPE_U8, CML_DTYPE_F16, CML_DTYPE_F32, CML_DTYPE_I64};
  // kind 0: elements of x[6, 7] at (row, col) pairs; 1: rows of 5 of x[9, 5]; 2: rows of 8 of
  // x[9, 8] with the index vector implicit; 3: elements of x[4, 5, 6] (three coordinates);
  // 4: rows of 8 with two batch axes [3, 4].
  for (int kind = 0; kind < 5; ++kind) {
    for (int di = 0; di < 4; ++di) {
      for (int i64 = 0; i64 < 2; ++i64) {
        const cml_dtype_t dt = dts[di], it = i64 ? CML_DTYPE_I64 : CML_DTYPE_I32;
        const size_t es = (size_t)cml_dtype_bits(dt) / 8;
        int64_t xd[3] = {6, 7, 1}, id[3] = {600, 2, 1}, od[3] = {600, 1, 1};
        int32_t xr = 2, ir = 2, orank = 1;
        cml_gather_dims_t g;
        memset(&g, 0, sizeof g);
        g.index_vector_axis = 1;
        g.slice_size_count = 2;
        g.slice_sizes[0] = g.slice_sizes[1] = 1;
        if (kind == 0) {
          g.start_index_map_count = 2;
          g.start_index_map[1] = 1;
          g.collapsed_slice_axis_count = 2;
          g.collapsed_slice_axes[1] = 1;
        } else if (kind == 3) {
          xr = 3;
          xd[0] = 4, xd[1] = 5, xd[2] = 6;
          id[1] = 3;
          g.slice_size_count = 3;
          g.slice_sizes[2] = 1;
          g.start_index_map_count = 3;
          g.start_index_map[0] = 2, g.start_index_map[1] = 0, g.start_index_map[2] = 1;
          g.collapsed_slice_axis_count = 3;
          g.collapsed_slice_axes[0] = 0, g.collapsed_slice_axes[1] = 1;
          g.collapsed_slice_axes[2] = 2;
        } else {
          xd[0] = 9, xd[1] = kind == 1 ? 5 : 8;
          g.slice_sizes[1] = xd[1];
          g.start_index_map_count = 1;
          g.collapsed_slice_axis_count = 1;
          g.offset_output_axis_count = 1;
          orank = 2;
          od[1] = xd[1];
          g.offset_output_axes[0] = 1;
          if (kind == 1) id[1] = 1;
          if (kind == 2) ir = 1, g.index_vector_axis = 1;
          if (kind == 4) {
            ir = 3, id[0] = 3, id[1] = 4, id[2] = 1, g.index_vector_axis = 2;
            orank = 3, od[0] = 3, od[1] = 4, od[2] = 8;
            g.offset_output_axes[0] = 2;
          }
        }
        cml_shape_t ins[2] = {kt_shape(dt, xr, xd), kt_shape(it, ir, id)};
        cml_shape_t os = kt_shape(dt, orank, od);
        kt_t k;
        kt_init(&k, CML_OP_GATHER, 2, ins, &os);
        k.attrs.u.gather = g;
        const int64_t nx = kt_count(&ins[0]), ni = kt_count(&ins[1]), no = kt_count(&os);
        unsigned char* x = malloc((size_t)nx * es);
        unsigned char* out = malloc((size_t)no * es);
        int64_t* idx = malloc((size_t)ni * sizeof(int64_t));
        ASSERT_TRUE(x && out && idx);
        for (int64_t i = 0; i < nx * (int64_t)es; ++i) x[i] = (unsigned char)(i * 7 + 3);
        for (int64_t i = 0; i < ni; ++i) {
          const int64_t v = (i * 37 + 11) % 13 - 2;  // -2 .. 10: some clamp at both ends
          if (i64) {
            idx[i] = v;
          } else {
            ((int32_t*)(void*)idx)[i] = (int32_t)v;
          }
        }
        const void* in[] = {x, idx};
        for (int p = 0; p < 2; ++p) {
          memset(out, 0, (size_t)no * es);
          ASSERT_STATUS_OK(kt_run(&k, p ? pool : NULL, in, out));
          for (int64_t i = 0; i < no; ++i) {
            int64_t oi[3], rem = i;
            for (int d = orank - 1; d >= 0; --d) {
              oi[d] = rem % od[d];
              rem /= od[d];
            }
            const int64_t at = kt_ref_gather_at(&ins[0], &ins[1], idx, &os, &g, oi);
            if (memcmp(out + i * (int64_t)es, x + at * (int64_t)es, es) != 0) {
              free(x), free(out), free(idx);
              cmlc_pool_destroy(pool);
              TEST_FAIL_("kind %d %s indices %s element %lld: want operand element %lld", kind,
                         cml_dtype_name(dt), cml_dtype_name(it), (long long)i, (long long)at);
            }
          }
        }
        free(x), free(out), free(idx);
      }
    }
  }
  cmlc_pool_destroy(pool);
}

// Gathers whose window runs along one strided axis (audio framing: frames[c, t, k] =
// signal[c, idx[t, k]], the signal's leading axis kept): the small windows' blocks lane by lane
// up to 64 elements per window, the general task beyond; the offset axis first or last in the
// output, 1- to 8-byte elements, I32 / I64 / U8 indices (U8: the general task), more windows
// than a block, indices out of range at both ends: against the reference, on 1 and 3 threads.
TEST(gather_strided_windows_match_reference) {
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  static const cml_dtype_t dts[4] = {CML_DTYPE_U8, CML_DTYPE_F16, CML_DTYPE_F32, CML_DTYPE_I64};
  static const cml_dtype_t its[3] = {CML_DTYPE_I32, CML_DTYPE_I64, CML_DTYPE_U8};
  static const int64_t channels[3] = {3, 64, 70};  // 70: past the lanes' limit
  for (int ci = 0; ci < 3; ++ci) {
    for (int last = 0; last < 2; ++last) {
      for (int di = 0; di < 4; ++di) {
        for (int ti = 0; ti < 3; ++ti) {
          const cml_dtype_t dt = dts[di], it = its[ti];
          const size_t es = (size_t)cml_dtype_bits(dt) / 8;
          const int64_t C = channels[ci], L = 50, T = 20, K = 15;
          int64_t xd[2] = {C, L}, id[2] = {T, K};
          int64_t od[3] = {C, T, K};
          if (last) od[0] = T, od[1] = K, od[2] = C;
          cml_gather_dims_t g;
          memset(&g, 0, sizeof g);
          g.index_vector_axis = 2;  // implicit: one coordinate per (t, k)
          g.offset_output_axis_count = 1;
          g.offset_output_axes[0] = last ? 2 : 0;
          g.collapsed_slice_axis_count = 1;
          g.collapsed_slice_axes[0] = 1;
          g.start_index_map_count = 1;
          g.start_index_map[0] = 1;
          g.slice_size_count = 2;
          g.slice_sizes[0] = C;
          g.slice_sizes[1] = 1;
          cml_shape_t ins[2] = {kt_shape(dt, 2, xd), kt_shape(it, 2, id)};
          cml_shape_t os = kt_shape(dt, 3, od);
          kt_t k;
          kt_init(&k, CML_OP_GATHER, 2, ins, &os);
          k.attrs.u.gather = g;
          const int64_t nx = C * L, ni = T * K, no = C * T * K;
          unsigned char* x = malloc((size_t)nx * es);
          unsigned char* out = malloc((size_t)no * es);
          int64_t* idx = malloc((size_t)ni * sizeof(int64_t));
          int64_t* idx64 = malloc((size_t)ni * sizeof(int64_t));  // the reference reads I64
          ASSERT_TRUE(x && out && idx && idx64);
          for (int64_t i = 0; i < nx * (int64_t)es; ++i) x[i] = (unsigned char)(i * 7 + 3);
          for (int64_t i = 0; i < ni; ++i) {
            const int64_t v = it == CML_DTYPE_U8 ? (i * 37 + 11) % 60 : (i * 37 + 11) % 61 - 5;
            idx64[i] = v;  // -5 .. 55 (U8: 0 .. 59): clamped to [0, 49] at both ends
            if (it == CML_DTYPE_I64) idx[i] = v;
            if (it == CML_DTYPE_I32) ((int32_t*)(void*)idx)[i] = (int32_t)v;
            if (it == CML_DTYPE_U8) ((uint8_t*)(void*)idx)[i] = (uint8_t)v;
          }
          cml_shape_t is64 = kt_shape(CML_DTYPE_I64, 2, id);
          const void* in[] = {x, idx};
          for (int p = 0; p < 2; ++p) {
            memset(out, 0, (size_t)no * es);
            ASSERT_STATUS_OK(kt_run(&k, p ? pool : NULL, in, out));
            for (int64_t i = 0; i < no; ++i) {
              int64_t oi[3], rem = i;
              for (int d = 2; d >= 0; --d) {
                oi[d] = rem % od[d];
                rem /= od[d];
              }
              const int64_t at = kt_ref_gather_at(&ins[0], &is64, idx64, &os, &g, oi);
              if (memcmp(out + i * (int64_t)es, x + at * (int64_t)es, es) != 0) {
                free(x), free(out), free(idx), free(idx64);
                cmlc_pool_destroy(pool);
                TEST_FAIL_(
                    "channels %lld offset axis %s %s indices %s element %lld: want "
                    "operand element %lld",
                    (long long)C, last ? "last" : "first", cml_dtype_name(dt), cml_dtype_name(it),
                    (long long)i, (long long)at);
              }
            }
          }
          free(x), free(out), free(idx), free(idx64);
        }
      }
    }
  }
  cmlc_pool_destroy(pool);
}

//===--- Scatter ---===//

TEST(scatter_sum_skips_out_of_bounds) {
  int64_t xd[] = {4}, id[] = {5, 1}, ud[] = {5};
  cml_shape_t ins[3] = {kt_shape(CML_DTYPE_I32, 1, xd), kt_shape(CML_DTYPE_I32, 2, id),
                        kt_shape(CML_DTYPE_I32, 1, ud)};
  kt_t k;
  kt_init(&k, CML_OP_SCATTER_SUM, 3, ins, &ins[0]);
  cml_scatter_dims_t* s = &k.attrs.u.scatter;
  s->index_vector_axis = 1;
  s->inserted_window_axis_count = 1;
  s->inserted_window_axes[0] = 0;
  s->scatter_axes_to_operand_axes_count = 1;
  s->scatter_axes_to_operand_axes[0] = 0;
  int32_t x[] = {1, 2, 3, 4}, idx[] = {0, 2, 0, 9, -1}, u[] = {10, 20, 30, 40, 50}, out[4];
  const void* in[] = {x, idx, u};
  ASSERT_STATUS_OK(kt_run(&k, NULL, in, out));
  int32_t want[] = {41, 2, 23, 4};
  for (int i = 0; i < 4; ++i) ASSERT_EQ_INT(out[i], want[i]);
}

TEST(scatter_window_fully_in_bounds_only) {
  // operand [3, 4] zeros; windows 2x2 at (0, 1) (fits) and (2, 3) (does not: skipped whole).
  int64_t xd[] = {3, 4}, id[] = {2, 2}, ud[] = {2, 2, 2};
  cml_shape_t ins[3] = {kt_shape(CML_DTYPE_I8, 2, xd), kt_shape(CML_DTYPE_U8, 2, id),
                        kt_shape(CML_DTYPE_I8, 3, ud)};
  kt_t k;
  kt_init(&k, CML_OP_SCATTER_SUM, 3, ins, &ins[0]);
  cml_scatter_dims_t* s = &k.attrs.u.scatter;
  s->index_vector_axis = 1;
  s->update_window_axis_count = 2;
  s->update_window_axes[0] = 1;
  s->update_window_axes[1] = 2;
  s->scatter_axes_to_operand_axes_count = 2;
  s->scatter_axes_to_operand_axes[0] = 0;
  s->scatter_axes_to_operand_axes[1] = 1;
  int8_t x[12] = {0};
  x[1] = 127;  // wraps: 127 + 1 = -128
  uint8_t idx[] = {0, 1, 2, 3};
  int8_t u[] = {1, 2, 3, 4, 5, 6, 7, 8}, out[12];
  const void* in[] = {x, idx, u};
  ASSERT_STATUS_OK(kt_run(&k, NULL, in, out));
  int8_t want[12] = {0, -128, 2, 0, 0, 3, 4, 0, 0, 0, 0, 0};
  for (int i = 0; i < 12; ++i) ASSERT_EQ_INT(out[i], want[i]);
}

TEST(scatter_max_min_propagate_nan) {
  int64_t xd[] = {3}, id[] = {4}, ud[] = {4};
  cml_shape_t ins[3] = {kt_shape(CML_DTYPE_F32, 1, xd), kt_shape(CML_DTYPE_I16, 1, id),
                        kt_shape(CML_DTYPE_F32, 1, ud)};
  kt_t k;
  kt_init(&k, CML_OP_SCATTER_MAX, 3, ins, &ins[0]);
  cml_scatter_dims_t* s = &k.attrs.u.scatter;
  s->index_vector_axis = 1;  // implicit trailing axis
  s->inserted_window_axis_count = 1;
  s->inserted_window_axes[0] = 0;
  s->scatter_axes_to_operand_axes_count = 1;
  s->scatter_axes_to_operand_axes[0] = 0;
  float x[] = {1, 5, NAN}, u[] = {3, NAN, 4, 7}, out[3];
  int16_t idx[] = {0, 0, 1, 2};
  const void* in[] = {x, idx, u};
  ASSERT_STATUS_OK(kt_run(&k, NULL, in, out));
  ASSERT_TRUE(isnan(out[0]));
  ASSERT_EQ_DBL(out[1], 5);
  ASSERT_TRUE(isnan(out[2]));
  k.node.op = CML_OP_SCATTER_MIN;
  float u2[] = {-3, 0, 4, 7};
  const void* in2[] = {x, idx, u2};
  ASSERT_STATUS_OK(kt_run(&k, NULL, in2, out));
  ASSERT_EQ_DBL(out[0], -3);
  ASSERT_EQ_DBL(out[1], 4);
  ASSERT_TRUE(isnan(out[2]));
}

TEST(scatter_sum_f16_rounds_each_step_and_complex) {
  int64_t xd[] = {1}, id[] = {2}, ud[] = {2};
  cml_shape_t ins[3] = {kt_shape(CML_DTYPE_F16, 1, xd), kt_shape(CML_DTYPE_I32, 1, id),
                        kt_shape(CML_DTYPE_F16, 1, ud)};
  kt_t k;
  kt_init(&k, CML_OP_SCATTER_SUM, 3, ins, &ins[0]);
  cml_scatter_dims_t* s = &k.attrs.u.scatter;
  s->index_vector_axis = 1;
  s->inserted_window_axis_count = 1;
  s->scatter_axes_to_operand_axes_count = 1;
  // 1 + 2^-11 rounds (ties to even) back to 1 in f16, twice; summing in f32 first would give
  // 1 + 2^-10. f16 bits: 1.0 = 0x3C00, 2^-11 = 0x1000.
  uint16_t x[] = {0x3C00}, u[] = {0x1000, 0x1000}, out[1];
  int32_t idx[] = {0, 0};
  const void* in[] = {x, idx, u};
  ASSERT_STATUS_OK(kt_run(&k, NULL, in, out));
  ASSERT_EQ_INT(out[0], 0x3C00);

  const cml_scatter_dims_t dims = *s;
  ins[0] = kt_shape(CML_DTYPE_C64, 1, xd);
  ins[2] = kt_shape(CML_DTYPE_C64, 1, ud);
  kt_init(&k, CML_OP_SCATTER_SUM, 3, ins, &ins[0]);
  k.attrs.u.scatter = dims;
  cml_c64_t cx[] = {{1, 2}}, cu[] = {{10, 20}, {100, 200}}, cout[1];
  const void* in2[] = {cx, idx, cu};
  ASSERT_STATUS_OK(kt_run(&k, NULL, in2, cout));
  ASSERT_EQ_DBL(cout[0].re, 111);
  ASSERT_EQ_DBL(cout[0].im, 222);
  // Max is not defined for complex: the lookup declines it.
  kt_init(&k, CML_OP_SCATTER_MAX, 3, ins, &ins[0]);
  cmlc_kernel_entry_t e;
  ASSERT_FALSE(cmlc_kernels_index_lookup(&k.module, &k.node, &k.options, &e));
}

TEST(scatter_sum_matches_reference) {
  // operand [6, 5] i32; indices [3, 2, 1] (index vector on axis 2, component -> operand axis 0);
  // updates [3, 4, 2] with window axis 1 (-> operand axis 1, size 4) and scatter axes 0, 2;
  // operand axis 0 inserted. Windows overlap; integer sums are order-independent.
  int64_t xd[] = {6, 5}, id[] = {3, 2, 1}, ud[] = {3, 4, 2};
  cml_shape_t ins[3] = {kt_shape(CML_DTYPE_I32, 2, xd), kt_shape(CML_DTYPE_I64, 3, id),
                        kt_shape(CML_DTYPE_I32, 3, ud)};
  kt_t k;
  kt_init(&k, CML_OP_SCATTER_SUM, 3, ins, &ins[0]);
  cml_scatter_dims_t* s = &k.attrs.u.scatter;
  s->index_vector_axis = 2;
  s->update_window_axis_count = 1;
  s->update_window_axes[0] = 1;
  s->inserted_window_axis_count = 1;
  s->inserted_window_axes[0] = 0;
  s->scatter_axes_to_operand_axes_count = 1;
  s->scatter_axes_to_operand_axes[0] = 0;
  // The window along operand axis 1 starts at 0 (no index component): size 4 <= 5 fits.
  int32_t x[30], u[24], out[30], want[30];
  for (int i = 0; i < 30; ++i) x[i] = i;
  for (int i = 0; i < 24; ++i) u[i] = 100 * (i + 1);
  int64_t idx[] = {0, 5, 2, 2, 6, -1};
  memcpy(want, x, sizeof want);
  // Reference: for each update element U = (g0, w, g1) in row-major order.
  for (int g0 = 0; g0 < 3; ++g0)
    for (int w = 0; w < 4; ++w)
      for (int g1 = 0; g1 < 2; ++g1) {
        int64_t row = idx[g0 * 2 + g1];
        if (row < 0 || row > 6 - 1) continue;  // window size 1 along the inserted axis
        want[row * 5 + w] += u[(g0 * 4 + w) * 2 + g1];
      }
  const void* in[] = {x, idx, u};
  ASSERT_STATUS_OK(kt_run(&k, NULL, in, out));
  for (int i = 0; i < 30; ++i) ASSERT_EQ_INT(out[i], want[i]);
}

// f16 / bf16 ScatterSum of contiguous rows (an embedding's gradient) takes the widened-row
// path: the same bits as the reference kernel, which rounds after every addition, with rows
// hit several times (the order of the additions matters), rows longer than one 256-element
// block, ties to even and NaN.
TEST(scatter_sum_half_rows_match_reference) {
  static const cml_dtype_t dts[2] = {CML_DTYPE_BF16, CML_DTYPE_F16};
  enum { ROWS = 9, COLS = 300, UPD = 20 };
  for (int di = 0; di < 2; ++di) {
    const bool bf = dts[di] == CML_DTYPE_BF16;
    int64_t xd[] = {ROWS, COLS}, id[] = {UPD, 1}, ud[] = {UPD, COLS};
    cml_shape_t ins[3] = {kt_shape(dts[di], 2, xd), kt_shape(CML_DTYPE_I32, 2, id),
                          kt_shape(dts[di], 2, ud)};
    kt_t k;
    kt_init(&k, CML_OP_SCATTER_SUM, 3, ins, &ins[0]);
    cml_scatter_dims_t* s = &k.attrs.u.scatter;
    s->index_vector_axis = 1;
    s->update_window_axis_count = 1;
    s->update_window_axes[0] = 1;
    s->inserted_window_axis_count = 1;
    s->inserted_window_axes[0] = 0;
    s->scatter_axes_to_operand_axes_count = 1;
    s->scatter_axes_to_operand_axes[0] = 0;
    static uint16_t x[ROWS * COLS], u[UPD * COLS], want[ROWS * COLS], got[ROWS * COLS];
    int32_t idx[UPD];
    for (int i = 0; i < ROWS * COLS; ++i) {
      const float v = (float)((i * 7919) % 2001) / 16.0f - 60.0f;
      x[i] = bf ? cml_f32_to_bf16(v) : cml_f32_to_f16(v);
    }
    for (int i = 0; i < UPD * COLS; ++i) {
      const float v = (float)((i * 104729) % 977) / 64.0f - 7.0f;
      u[i] = bf ? cml_f32_to_bf16(v) : cml_f32_to_f16(v);
    }
    u[5] = bf ? 0x7FC1u : 0x7E01u;                          // a NaN with a payload
    for (int i = 0; i < UPD; ++i) idx[i] = (i * 7) % ROWS;  // every row hit two or three times
    const void* in[] = {x, idx, u};
    k.options.reference = true;
    ASSERT_STATUS_OK(kt_run(&k, NULL, in, want));
    cmlc_cpu_features_t f;
    cmlc_cpu_detect(&f);
    if (!f.avx2_fma || !f.f16c) continue;
    k.options.reference = false;
    k.options.isa = f.avx512 ? CMLC_ISA_AVX512 : CMLC_ISA_AVX2;
    ASSERT_STATUS_OK(kt_run(&k, NULL, in, got));
    for (int i = 0; i < ROWS * COLS; ++i) {
      if (got[i] != want[i]) {
        TEST_FAIL_("%s element %d: got %04x want %04x", cml_dtype_name(dts[di]), i, got[i],
                   want[i]);
      }
    }
  }
}

// Large scatters whose windows are one row thick along the operand's first axis split that axis
// over threads: the same bits as the reference kernel on one thread (every element combines
// its updates in the same order), for f32 and bf16 sums (order-dependent roundings), max,
// out-of-bounds windows skipped, and windows of two axes (several window rows per update).
TEST(scatter_threads_split_rows_same_bits) {
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  enum { ROWS = 40, COLS = 700, UPD = 300, R3 = 6 };
  static const cml_dtype_t dts[2] = {CML_DTYPE_F32, CML_DTYPE_BF16};
  static const cml_op_t ops[2] = {CML_OP_SCATTER_SUM, CML_OP_SCATTER_MAX};
  static float xf[ROWS * R3 * COLS], uf[UPD * R3 * COLS];
  static uint16_t xh[ROWS * R3 * COLS], uh[UPD * R3 * COLS];
  static uint8_t want[ROWS * R3 * COLS * 4], got[ROWS * R3 * COLS * 4];
  int32_t idx[UPD];
  for (int i = 0; i < ROWS * R3 * COLS; ++i) {
    xf[i] = (float)(((int64_t)i * 7919) % 2001) / 16.0f - 60.0f;
    xh[i] = cml_f32_to_bf16(xf[i]);
  }
  for (int i = 0; i < UPD * R3 * COLS; ++i) {
    uf[i] = (float)(((int64_t)i * 104729) % 977) / 64.0f - 7.0f + 1e-3f * (float)(i % 13);
    uh[i] = cml_f32_to_bf16(uf[i]);
  }
  for (int i = 0; i < UPD; ++i) idx[i] = (i * 7) % (ROWS + 3) - 1;  // -1, 40 and 41 skipped
  for (int rank3 = 0; rank3 < 2; ++rank3) {
    for (int di = 0; di < 2; ++di) {
      for (int oi = 0; oi < 2; ++oi) {
        const int64_t xd2[] = {ROWS, COLS}, ud2[] = {UPD, COLS};
        const int64_t xd3[] = {ROWS, R3, COLS}, ud3[] = {UPD, R3, COLS};
        int64_t id[] = {UPD, 1};
        cml_shape_t ins[3] = {kt_shape(dts[di], rank3 ? 3 : 2, rank3 ? xd3 : xd2),
                              kt_shape(CML_DTYPE_I32, 2, id),
                              kt_shape(dts[di], rank3 ? 3 : 2, rank3 ? ud3 : ud2)};
        kt_t k;
        kt_init(&k, ops[oi], 3, ins, &ins[0]);
        cml_scatter_dims_t* s = &k.attrs.u.scatter;
        s->index_vector_axis = 1;
        s->update_window_axis_count = rank3 ? 2 : 1;
        s->update_window_axes[0] = 1;
        s->update_window_axes[1] = 2;
        s->inserted_window_axis_count = 1;
        s->inserted_window_axes[0] = 0;
        s->scatter_axes_to_operand_axes_count = 1;
        s->scatter_axes_to_operand_axes[0] = 0;
        const void* in[] = {di ? (const void*)xh : (const void*)xf, idx,
                            di ? (const void*)uh : (const void*)uf};
        const size_t bytes = cml_shape_byte_size(&ins[0]);
        k.options.reference = true;
        ASSERT_STATUS_OK(kt_run(&k, NULL, in, want));
        cmlc_cpu_features_t f;
        cmlc_cpu_detect(&f);
        k.options.reference = false;
        k.options.isa = f.avx512 ? CMLC_ISA_AVX512 : f.avx2_fma ? CMLC_ISA_AVX2 : CMLC_ISA_SCALAR;
        k.options.threads = 3;
        memset(got, 0x5a, sizeof got);
        ASSERT_STATUS_OK(kt_run(&k, pool, in, got));
        if (memcmp(got, want, bytes) != 0) {
          TEST_FAIL_("%s %s rank %d: threads differ from the reference", cml_op_name(ops[oi]),
                     cml_dtype_name(dts[di]), rank3 ? 3 : 2);
        }
      }
    }
  }
  cmlc_pool_destroy(pool);
}

// One-element windows (a histogram, a scatter-add of scalars) take a loop of their own for
// f32 / f64 / 32- and 64-bit integer sums with I32 / I64 indices: against a per-update loop
// written here, with repeated bins (f32 sums in update order), out-of-range starts skipped
// (-1, the dim, a huge i64), integers wrapping, and the index on either operand axis of a
// [6, 3] operand (the other axis starts at 0).
TEST(scatter_sum_one_element_windows) {
  static const cml_dtype_t dts[6] = {CML_DTYPE_F32, CML_DTYPE_F64, CML_DTYPE_I32,
                                     CML_DTYPE_U32, CML_DTYPE_I64, CML_DTYPE_U64};
  enum { N = 40 };
  const int64_t raw[N] = {0, 5, 2, 2, -1, 6, 3, 1, 0, 0, 4, (int64_t)1 << 40,
                          5, 5, 2, 1, 3,  3, 0, 7, 2, 4, 4, 1,
                          5, 0, 2, 3, 1,  1, 2, 6, 0, 5, 4, 3,
                          2, 1, 0, 5};
  for (int di = 0; di < 6; ++di) {
    for (int wide = 0; wide < 2; ++wide) {
      for (int axis = 0; axis < 2; ++axis) {
        const cml_dtype_t dt = dts[di];
        const int64_t xd[] = {6, 3}, id[] = {N, 1}, ud[] = {N};
        cml_shape_t ins[3] = {kt_shape(dt, 2, xd),
                              kt_shape(wide ? CML_DTYPE_I64 : CML_DTYPE_I32, 2, id),
                              kt_shape(dt, 1, ud)};
        kt_t k;
        kt_init(&k, CML_OP_SCATTER_SUM, 3, ins, &ins[0]);
        cml_scatter_dims_t* s = &k.attrs.u.scatter;
        s->index_vector_axis = 1;
        s->inserted_window_axis_count = 2;
        s->inserted_window_axes[0] = 0;
        s->inserted_window_axes[1] = 1;
        s->scatter_axes_to_operand_axes_count = 1;
        s->scatter_axes_to_operand_axes[0] = axis;
        int32_t i32[N];
        int64_t i64[N];
        for (int i = 0; i < N; ++i) {
          i64[i] = raw[i];
          i32[i] = raw[i] > 1000 ? 1000 : (int32_t)raw[i];
        }
        // Operand and updates: values whose f32 sums round (order matters), integers that wrap.
        union {
          float f[18];
          double d[18];
          uint32_t u32[18];
          uint64_t u64[18];
        } x, want, got;
        union {
          float f[N];
          double d[N];
          uint32_t u32[N];
          uint64_t u64[N];
        } up;
        memset(&x, 0, sizeof x);
        for (int i = 0; i < 18; ++i) {
          const double v = 1.0 + (double)i / 3.0;
          if (dt == CML_DTYPE_F32) x.f[i] = (float)v;
          if (dt == CML_DTYPE_F64) x.d[i] = v;
          if (dt == CML_DTYPE_I32 || dt == CML_DTYPE_U32) x.u32[i] = 0xFFFFFFF0u + (uint32_t)i;
          if (dt == CML_DTYPE_I64 || dt == CML_DTYPE_U64)
            x.u64[i] = 0xFFFFFFFFFFFFFFF0ull + (uint64_t)i;
        }
        for (int i = 0; i < N; ++i) {
          const double v = 1e7 / (double)(i + 3) + 0.1 * (double)i;
          if (dt == CML_DTYPE_F32) up.f[i] = (float)v;
          if (dt == CML_DTYPE_F64) up.d[i] = v;
          if (dt == CML_DTYPE_I32 || dt == CML_DTYPE_U32) up.u32[i] = 7u + (uint32_t)i;
          if (dt == CML_DTYPE_I64 || dt == CML_DTYPE_U64) up.u64[i] = 7u + (uint64_t)i;
        }
        want = x;
        const int64_t dim = axis ? 3 : 6, stride = axis ? 1 : 3;
        for (int i = 0; i < N; ++i) {
          const int64_t v = wide ? i64[i] : i32[i];
          if (v < 0 || v >= dim) continue;
          const int64_t o = v * stride;
          if (dt == CML_DTYPE_F32) want.f[o] += up.f[i];
          if (dt == CML_DTYPE_F64) want.d[o] += up.d[i];
          if (dt == CML_DTYPE_I32 || dt == CML_DTYPE_U32) want.u32[o] += up.u32[i];
          if (dt == CML_DTYPE_I64 || dt == CML_DTYPE_U64) want.u64[o] += up.u64[i];
        }
        const void* in[] = {&x, wide ? (const void*)i64 : (const void*)i32, &up};
        memset(&got, 0x5a, sizeof got);
        ASSERT_STATUS_OK(kt_run(&k, NULL, in, &got));
        if (memcmp(&got, &want, cml_shape_byte_size(&ins[0])) != 0) {
          TEST_FAIL_("%s, %s indices, axis %d: differs from the per-update loop",
                     cml_dtype_name(dt), wide ? "i64" : "i32", axis);
        }
      }
    }
  }
}

// ScatterMax / ScatterMin of one-element windows with I32 and I64 indices (the kernel's unit
// path, without the combiner's call per update) on f32, f64, Int32 and Int64: 40 updates, some
// out of range, onto x[6] holding a NaN, -0 and +0, updates with NaNs, signed zeros, ties and
// large values, against a per-update loop with the combiner's rule (a NaN on either side wins,
// the stored one first; -0 < +0; Int32 values signed).
static double ix_max_rule(double a, double b, bool max) {
  if (isnan(a)) return a;
  if (isnan(b)) return b;
  if (max ? a > b : a < b) return a;
  if (max ? b > a : b < a) return b;
  return signbit(a) == max ? b : a;
}
TEST(scatter_max_min_one_element_windows) {
  static const cml_dtype_t dts[4] = {CML_DTYPE_F32, CML_DTYPE_F64, CML_DTYPE_I32, CML_DTYPE_I64};
  enum { N = 40 };
  const int64_t raw[N] = {0, 5, 2, 2, -1, 6, 3, 1, 0, 0, 4, (int64_t)1 << 40,
                          5, 5, 2, 1, 3,  3, 0, 7, 2, 4, 4, 1,
                          5, 0, 2, 3, 1,  1, 2, 6, 0, 5, 4, 3,
                          2, 1, 0, 5};
  const double xv[6] = {1.5, -2.0, NAN, -0.0, 0.0, 7.0};
  int32_t i32[N];
  int64_t i64[N];
  double uv[N];
  for (int i = 0; i < N; ++i) {
    i64[i] = raw[i];
    i32[i] = raw[i] > 1000 ? 1000 : (int32_t)raw[i];
    uv[i] = (double)((i * 37) % 11) - 5.0;  // ties among them and with x
    if (i % 13 == 4) uv[i] = NAN;
    if (i % 9 == 2) uv[i] = i % 2 ? -0.0 : 0.0;
    if (i % 17 == 6) uv[i] = -3e9;  // an Int32 value far below the others: signed compares
  }
  for (int di = 0; di < 4; ++di) {
    const cml_dtype_t dt = dts[di];
    const bool is_float = dt == CML_DTYPE_F32 || dt == CML_DTYPE_F64;
    for (int wide = 0; wide < 2; ++wide) {
      for (int max = 0; max < 2; ++max) {
        const int64_t xd[] = {6}, id[] = {N, 1}, ud[] = {N};
        cml_shape_t ins[3] = {kt_shape(dt, 1, xd),
                              kt_shape(wide ? CML_DTYPE_I64 : CML_DTYPE_I32, 2, id),
                              kt_shape(dt, 1, ud)};
        kt_t k;
        kt_init(&k, max ? CML_OP_SCATTER_MAX : CML_OP_SCATTER_MIN, 3, ins, &ins[0]);
        cml_scatter_dims_t* s = &k.attrs.u.scatter;
        s->index_vector_axis = 1;
        s->inserted_window_axis_count = 1;
        s->scatter_axes_to_operand_axes_count = 1;
        union {
          float f[N];
          double d[N];
          int32_t i[N];
          int64_t l[N];
        } x, up, got;
        double want[6];
        for (int i = 0; i < 6; ++i) {
          // Integers: the NaN becomes 3 and the zeros 0.
          const double v = is_float ? xv[i] : isnan(xv[i]) ? 3.0 : xv[i];
          want[i] = v;
          if (dt == CML_DTYPE_F32) x.f[i] = (float)v;
          if (dt == CML_DTYPE_F64) x.d[i] = v;
          if (dt == CML_DTYPE_I32) x.i[i] = (int32_t)v;
          if (dt == CML_DTYPE_I64) x.l[i] = (int64_t)v;
        }
        for (int i = 0; i < N; ++i) {
          double v = uv[i];
          if (!is_float) v = isnan(v) ? 11.0 : v == -3e9 && dt == CML_DTYPE_I32 ? -2e9 : v;
          if (dt == CML_DTYPE_F32) up.f[i] = (float)v;
          if (dt == CML_DTYPE_F64) up.d[i] = v;
          if (dt == CML_DTYPE_I32) up.i[i] = (int32_t)v;
          if (dt == CML_DTYPE_I64) up.l[i] = (int64_t)v;
          const int64_t at = wide ? i64[i] : i32[i];
          if (at >= 0 && at < 6) {
            const double b = dt == CML_DTYPE_F32 ? (double)up.f[i] : v;
            want[at] = ix_max_rule(want[at], b, max);
          }
        }
        const void* in[] = {&x, wide ? (const void*)i64 : (const void*)i32, &up};
        memset(&got, 0x5a, sizeof got);
        ASSERT_STATUS_OK(kt_run(&k, NULL, in, &got));
        for (int i = 0; i < 6; ++i) {
          double g = 0;
          if (dt == CML_DTYPE_F32) g = got.f[i];
          if (dt == CML_DTYPE_F64) g = got.d[i];
          if (dt == CML_DTYPE_I32) g = got.i[i];
          if (dt == CML_DTYPE_I64) g = (double)got.l[i];
          const bool same = isnan(want[i]) ? isnan(g)
                            : is_float     ? g == want[i] && signbit(g) == signbit(want[i])
                                           : g == want[i];
          if (!same) {
            TEST_FAIL_("%s %s, %s indices, x[%d]: %g, want %g", cml_dtype_name(dt),
                       max ? "max" : "min", wide ? "i64" : "i32", i, g, want[i]);
          }
        }
      }
    }
  }
}

// ScatterMax / ScatterMin of rows (a graph's segment max over neighbour features): f32 and f64
// rows of 2, 3, 8 and 9 elements with I32 indices (some out of range) onto x[6, R] holding
// NaNs and signed zeros, updates with NaNs, signed zeros and ties, against the per-element loop
// with the combiner's rule (the row kernels' selects: a NaN on either side wins, the stored
// one first; -0 < +0).
TEST(scatter_max_min_rows) {
  enum { N = 60, RMAX = 33 };
  static const int64_t rows[6] = {2, 3, 8, 9, 17, 33};
  for (int fd = 0; fd < 2; ++fd) {
    const cml_dtype_t dt = fd ? CML_DTYPE_F64 : CML_DTYPE_F32;
    for (int ri = 0; ri < 6; ++ri) {
      const int64_t r = rows[ri];
      for (int max = 0; max < 2; ++max) {
        cml_shape_t ins[3] = {kt_shape(dt, 2, (int64_t[]){6, r}),
                              kt_shape(CML_DTYPE_I32, 2, (int64_t[]){N, 1}),
                              kt_shape(dt, 2, (int64_t[]){N, r})};
        kt_t k;
        kt_init(&k, max ? CML_OP_SCATTER_MAX : CML_OP_SCATTER_MIN, 3, ins, &ins[0]);
        cml_scatter_dims_t* s = &k.attrs.u.scatter;
        s->index_vector_axis = 1;
        s->update_window_axis_count = 1;
        s->update_window_axes[0] = 1;
        s->inserted_window_axis_count = 1;
        s->scatter_axes_to_operand_axes_count = 1;
        int32_t idx[N];
        double want[6 * RMAX], xv[6 * RMAX], uv[N * RMAX];
        for (int64_t i = 0; i < 6 * r; ++i) {
          xv[i] = (double)((i * 5) % 7) - 3.0;
          if (i % 11 == 3) xv[i] = NAN;
          if (i % 7 == 1) xv[i] = i % 2 ? -0.0 : 0.0;
          // Row 2: zeros that update 0 (alone) meets with the other sign.
          if (i / r == 2) xv[i] = i % 2 ? 0.0 : -0.0;
          want[i] = xv[i];
        }
        for (int i = 0; i < N; ++i) {
          idx[i] = (int32_t)((i * 7) % 8) - 1;  // -1 and 6: out of range
          if (idx[i] == 2) idx[i] = 3;
          if (i == 0) idx[i] = 2;
          for (int64_t e = 0; e < r; ++e) {
            double v = (double)((i * 13 + e * 3) % 9) - 4.0;  // ties among them and with x
            if ((i + e) % 17 == 5) v = NAN;
            if ((i * 3 + e) % 10 == 2) v = (i + e) % 2 ? -0.0 : 0.0;
            if (i == 0) v = e % 2 ? -0.0 : 0.0;
            uv[i * r + e] = v;
            if (idx[i] >= 0 && idx[i] < 6) {
              want[idx[i] * r + e] = ix_max_rule(want[idx[i] * r + e], v, max);
            }
          }
        }
        union {
          float f[6 * RMAX];
          double d[6 * RMAX];
        } x, got;
        union {
          float f[N * RMAX];
          double d[N * RMAX];
        } up;
        for (int64_t i = 0; i < 6 * r; ++i)
          fd ? (void)(x.d[i] = xv[i]) : (void)(x.f[i] = (float)xv[i]);
        for (int64_t i = 0; i < N * r; ++i)
          fd ? (void)(up.d[i] = uv[i]) : (void)(up.f[i] = (float)uv[i]);
        const void* in[] = {&x, idx, &up};
        // The baseline rows, then (where the CPU has AVX2) the vectorized ones.
        for (int isa = 0; isa < 2; ++isa) {
          k.options.isa = CMLC_ISA_SCALAR;
          if (isa == 1) {
            cmlc_cpu_features_t cpu;
            cmlc_cpu_detect(&cpu);
            if (!cpu.avx2_fma || !cpu.f16c) break;
            k.options.isa = CMLC_ISA_AVX2;
          }
          memset(&got, 0x5a, sizeof got);
          ASSERT_STATUS_OK(kt_run(&k, NULL, in, &got));
          for (int64_t i = 0; i < 6 * r; ++i) {
            const double g = fd ? got.d[i] : (double)got.f[i];
            const bool same =
                isnan(want[i]) ? isnan(g) : g == want[i] && signbit(g) == signbit(want[i]);
            if (!same) {
              TEST_FAIL_("%s %s rows of %lld isa %d, x[%lld]: %g, want %g", cml_dtype_name(dt),
                         max ? "max" : "min", (long long)r, isa, (long long)i, g, want[i]);
              return;
            }
          }
        }
      }
    }
  }
}

// One-element windows at (i, k) or (i, j, k) coordinates of x[6, 3, 5] (the kernel's unit sums
// over several scatter axes, I32 and I64 indices, some out of range, so skipped), and rows of 7
// and 16 elements (the row sums; f16 / bf16 rows of 16 take the widening row sums), against a
// per-update loop that rounds after every addition.
TEST(scatter_sum_several_coordinates_and_short_half_rows) {
  static const cml_dtype_t dts[4] = {CML_DTYPE_F32, CML_DTYPE_BF16, CML_DTYPE_F16, CML_DTYPE_I32};
  enum { N = 300 };
  for (int kind = 0; kind < 4; ++kind) {  // 0: (i, k); 1: (i, j, k); 2, 3: rows of 7, 16
    for (int di = 0; di < 4; ++di) {
      for (int wide = 0; wide < 2; ++wide) {
        const cml_dtype_t dt = dts[di];
        const int64_t cols = kind == 2 ? 7 : 16;
        int64_t xd[3] = {6, 3, 5}, id[2] = {N, kind == 1 ? 3 : kind == 0 ? 2 : 1};
        int64_t ud[2] = {N, cols};
        int32_t xr = 3;
        if (kind >= 2) xr = 2, xd[0] = 11, xd[1] = cols;
        cml_shape_t ins[3] = {kt_shape(dt, xr, xd),
                              kt_shape(wide ? CML_DTYPE_I64 : CML_DTYPE_I32, 2, id),
                              kt_shape(dt, kind >= 2 ? 2 : 1, ud)};
        kt_t k;
        kt_init(&k, CML_OP_SCATTER_SUM, 3, ins, &ins[0]);
        cml_scatter_dims_t* s = &k.attrs.u.scatter;
        s->index_vector_axis = 1;
        if (kind < 2) {
          s->inserted_window_axis_count = 3;
          s->inserted_window_axes[0] = 0, s->inserted_window_axes[1] = 1;
          s->inserted_window_axes[2] = 2;
          // (i, k): j is a window axis of size 1 that is inserted, at 0.
          s->scatter_axes_to_operand_axes_count = kind == 0 ? 2 : 3;
          s->scatter_axes_to_operand_axes[0] = 0;
          s->scatter_axes_to_operand_axes[1] = kind == 0 ? 2 : 1;
          s->scatter_axes_to_operand_axes[2] = 2;
        } else {
          s->update_window_axis_count = 1;
          s->update_window_axes[0] = 1;
          s->inserted_window_axis_count = 1;
          s->inserted_window_axes[0] = 0;
          s->scatter_axes_to_operand_axes_count = 1;
          s->scatter_axes_to_operand_axes[0] = 0;
        }
        const int64_t nx = kt_count(&ins[0]), nc = id[1], nu = kt_count(&ins[2]);
        const int64_t row = kind >= 2 ? cols : 1;
        static float xf[200], uf[N * 16], wantf[200];
        static uint16_t xh[200], uh[N * 16], wanth[200], goth[200];
        static int32_t xi[200], ui[N * 16], wanti[200], goti[200];
        static float gotf[200];
        int64_t idx64[N * 3];
        int32_t idx32[N * 3];
        for (int64_t i = 0; i < N * nc; ++i) {
          int64_t v = (i * 131 + 7) % 9 - 1;  // -1 .. 7: out of range on every axis sometimes
          if (i == 17) v = (int64_t)1 << 40;
          idx64[i] = v;
          idx32[i] = v > 1000 ? 1000 : (int32_t)v;
        }
        for (int64_t i = 0; i < nx; ++i) {
          const float v = (float)((i * 7919) % 2001) / 16.0f - 60.0f;
          xf[i] = v, xh[i] = dt == CML_DTYPE_BF16 ? cml_f32_to_bf16(v) : cml_f32_to_f16(v);
          xi[i] = (int32_t)(0x7FFFFFF0 + i);  // wraps
        }
        for (int64_t i = 0; i < nu; ++i) {
          const float v = 1e4f / (float)(i + 3) + 0.1f * (float)i;
          uf[i] = v, uh[i] = dt == CML_DTYPE_BF16 ? cml_f32_to_bf16(v) : cml_f32_to_f16(v);
          ui[i] = (int32_t)(i * 1000003);
        }
        memcpy(wantf, xf, sizeof wantf), memcpy(wanth, xh, sizeof wanth);
        memcpy(wanti, xi, sizeof wanti);
        for (int64_t u = 0; u < N; ++u) {
          int64_t start[3] = {0, 0, 0};
          bool fits = true;
          for (int64_t c = 0; c < nc; ++c) {
            const int64_t v = wide ? idx64[u * nc + c] : idx32[u * nc + c];
            const int64_t a = s->scatter_axes_to_operand_axes[c];
            const int64_t limit = xd[a] - (kind >= 2 && a == 1 ? cols : 1);
            if (v < 0 || v > limit) fits = false;
            start[a] = v;
          }
          if (!fits) continue;
          const int64_t at = kind >= 2 ? start[0] * cols : (start[0] * 3 + start[1]) * 5 + start[2];
          for (int64_t e = 0; e < row; ++e) {
            const int64_t o = at + e, i = u * row + e;
            if (dt == CML_DTYPE_F32) wantf[o] += uf[i];
            if (dt == CML_DTYPE_I32) wanti[o] = (int32_t)((uint32_t)wanti[o] + (uint32_t)ui[i]);
            if (dt == CML_DTYPE_BF16)
              wanth[o] = cml_f32_to_bf16(cml_bf16_to_f32(wanth[o]) + cml_bf16_to_f32(uh[i]));
            if (dt == CML_DTYPE_F16)
              wanth[o] = cml_f32_to_f16(cml_f16_to_f32(wanth[o]) + cml_f16_to_f32(uh[i]));
          }
        }
        const void* ix = wide ? (const void*)idx64 : (const void*)idx32;
        const bool half = dt == CML_DTYPE_BF16 || dt == CML_DTYPE_F16;
        const void* in[] = {dt == CML_DTYPE_F32 ? (const void*)xf
                            : half              ? (const void*)xh
                                                : xi,
                            ix,
                            dt == CML_DTYPE_F32 ? (const void*)uf
                            : half              ? (const void*)uh
                                                : ui};
        void* got = dt == CML_DTYPE_F32 ? (void*)gotf : half ? (void*)goth : (void*)goti;
        const void* want = dt == CML_DTYPE_F32 ? (void*)wantf : half ? (void*)wanth : (void*)wanti;
        cmlc_cpu_features_t f;
        cmlc_cpu_detect(&f);
        for (int isa = 0; isa < 2; ++isa) {
          k.options.reference = isa == 0;
          if (isa == 1) {
            if (!f.avx2_fma || !f.f16c) continue;
            k.options.isa = f.avx512 ? CMLC_ISA_AVX512 : CMLC_ISA_AVX2;
          }
          memset(got, 0x5a, (size_t)cml_shape_byte_size(&ins[0]));
          ASSERT_STATUS_OK(kt_run(&k, NULL, in, got));
          if (memcmp(got, want, (size_t)cml_shape_byte_size(&ins[0])) != 0) {
            TEST_FAIL_("kind %d %s, %s indices, %s: differs from the per-update loop", kind,
                       cml_dtype_name(dt), wide ? "I64" : "I32", isa ? "SIMD" : "reference");
          }
        }
      }
    }
  }
}

TEST(lookup_and_capabilities) {
  cml_capabilities_t caps;
  memset(&caps, 0, sizeof caps);
  cmlc_kernels_index_capabilities(&caps);
  cml_op_t ops[] = {CML_OP_DYNAMIC_SLICE, CML_OP_DYNAMIC_UPDATE_SLICE, CML_OP_GATHER,
                    CML_OP_SCATTER_SUM,   CML_OP_SCATTER_MAX,          CML_OP_SCATTER_MIN};
  for (size_t i = 0; i < sizeof ops / sizeof *ops; ++i)
    ASSERT_TRUE(cml_capabilities_has_op(&caps, ops[i]));
  // Float indices are rejected.
  int64_t d[] = {4};
  cml_shape_t ins[2] = {kt_shape(CML_DTYPE_F32, 1, d), kt_shape(CML_DTYPE_F32, 0, NULL)};
  kt_t k;
  cmlc_kernel_entry_t e;
  kt_init(&k, CML_OP_DYNAMIC_SLICE, 2, ins, &ins[0]);
  ASSERT_FALSE(cmlc_kernels_index_lookup(&k.module, &k.node, &k.options, &e));
  (void)kt_pattern;
}

TEST_MAIN(
    TEST_ENTRY(dynamic_slice_clamps_starts), TEST_ENTRY(dynamic_slice_2d_mixed_index_dtypes),
    TEST_ENTRY(dynamic_update_slice_clamps_and_runs_in_place),
    TEST_ENTRY(dynamic_windows_match_per_element_reference), TEST_ENTRY(gather_rows_by_hand),
    TEST_ENTRY(gather_windows_by_hand), TEST_ENTRY(gather_matches_reference),
    TEST_ENTRY(gather_small_windows_match_reference),
    TEST_ENTRY(gather_strided_windows_match_reference), TEST_ENTRY(scatter_sum_skips_out_of_bounds),
    TEST_ENTRY(scatter_window_fully_in_bounds_only), TEST_ENTRY(scatter_max_min_propagate_nan),
    TEST_ENTRY(scatter_sum_f16_rounds_each_step_and_complex),
    TEST_ENTRY(scatter_sum_matches_reference), TEST_ENTRY(scatter_sum_half_rows_match_reference),
    TEST_ENTRY(scatter_threads_split_rows_same_bits), TEST_ENTRY(scatter_sum_one_element_windows),
    TEST_ENTRY(scatter_max_min_one_element_windows), TEST_ENTRY(scatter_max_min_rows),
    TEST_ENTRY(scatter_sum_several_coordinates_and_short_half_rows),
    TEST_ENTRY(lookup_and_capabilities))
