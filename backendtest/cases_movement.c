// SPDX-License-Identifier: Apache-2.0
// backendtest/cases_movement.c: compliance cases of the "movement" group: Reshape, Transpose,
// BroadcastInDim, Concatenate, Slice, Reverse and Pad.
//
// These ops only move elements, so each case sweeps every dtype the backend supports with
// inputs of distinct small values (exact in every dtype; complex ones get a distinct imaginary
// part) and compares bytes with an expected tensor built by a plain index-mapping loop here.
#include <math.h>
#include <string.h>

#include "backendtest/bt.h"

//===--- helpers ---===//

static const cml_dtype_t cs_all_dtypes[] = {
    CML_DTYPE_BOOL, CML_DTYPE_I8,  CML_DTYPE_I16, CML_DTYPE_I32, CML_DTYPE_I64,
    CML_DTYPE_U8,   CML_DTYPE_U16, CML_DTYPE_U32, CML_DTYPE_U64, CML_DTYPE_F16,
    CML_DTYPE_BF16, CML_DTYPE_F32, CML_DTYPE_F64, CML_DTYPE_C64, CML_DTYPE_C128};
#define CS_DTYPE_COUNT (sizeof cs_all_dtypes / sizeof cs_all_dtypes[0])

static bool cs_has_dtype(bt_t* t, cml_dtype_t dtype) {
  return cml_capabilities_has_dtype(cml_backend_capabilities(bt_backend(t)), dtype);
}

static int64_t cs_count(int32_t rank, const int64_t* dims) {
  int64_t n = 1;
  for (int32_t i = 0; i < rank; ++i) n *= dims[i];
  return n;
}

// Distinct small values (0..96), exact in every dtype; Bool gets 0/1, complex a distinct
// imaginary part.
static bt_tensor_t cs_values(bt_t* t, cml_dtype_t dtype, int32_t rank, const int64_t* dims,
                             int64_t seed) {
  int64_t n = cs_count(rank, dims);
  if (cml_dtype_is_complex(dtype)) {
    double* v = bt_alloc(t, (size_t)(2 * n + 2) * sizeof(double));
    for (int64_t i = 0; i < n; ++i) {
      v[2 * i] = (double)((i * 37 + seed * 11 + 5) % 97);
      v[2 * i + 1] = -(double)((i * 13 + seed) % 89) - 1;
    }
    return bt_tensor_c(t, dtype, rank, dims, v);
  }
  int64_t* v = bt_alloc(t, (size_t)(n + 1) * sizeof(int64_t));
  for (int64_t i = 0; i < n; ++i) {
    v[i] = (i * 37 + seed * 11 + 5) % 97;
    if (dtype == CML_DTYPE_BOOL) v[i] %= 2;
  }
  return bt_tensor_i64(t, dtype, rank, dims, v);
}

// Maps an output multi-index to the flat input index it copies, or -1 for the fill value.
typedef int64_t (*cs_src_fn)(const void* ctx, const int64_t* out_index);

// The expected output of |rank|/|dims|: element o copies in[src(o)] (or |fill|, a tensor of one
// element, when src returns -1).
static bt_tensor_t cs_expect_map(bt_t* t, const bt_tensor_t* in, int32_t rank, const int64_t* dims,
                                 cs_src_fn src, const void* ctx, const bt_tensor_t* fill) {
  const size_t es = (size_t)cml_dtype_bits(in->shape.dtype) / 8;
  const int64_t n = cs_count(rank, dims);
  unsigned char* data = bt_alloc(t, (size_t)n * es + 1);
  int64_t idx[CML_MAX_RANK] = {0};
  for (int64_t o = 0; o < n; ++o) {
    int64_t rem = o;
    for (int32_t d = rank - 1; d >= 0; --d) {
      idx[d] = rem % dims[d];
      rem /= dims[d];
    }
    int64_t s = src(ctx, idx);
    const unsigned char* from =
        s < 0 ? (const unsigned char*)fill->data : (const unsigned char*)in->data + s * (int64_t)es;
    memcpy(data + o * (int64_t)es, from, es);
  }
  return bt_tensor(t, in->shape.dtype, rank, dims, data);
}

// Flat row-major index of |idx| in |dims|.
static int64_t cs_flat(int32_t rank, const int64_t* dims, const int64_t* idx) {
  int64_t f = 0;
  for (int32_t d = 0; d < rank; ++d) f = f * dims[d] + idx[d];
  return f;
}

//===--- Reshape ---===//

static void case_reshape_all_dtypes(bt_t* t) {
  if (!bt_require_op(t, CML_OP_RESHAPE)) return;
  struct {
    int32_t in_rank, out_rank;
    int64_t in_dims[4], out_dims[4];
  } shapes[] = {
      {3, 2, {2, 3, 4}, {4, 6}},      {0, 2, {0}, {1, 1}}, {2, 2, {0, 3}, {3, 0}},
      {3, 3, {5, 7, 11}, {11, 7, 5}}, {1, 0, {1}, {0}},
  };
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; ++s) {
    for (size_t k = 0; k < CS_DTYPE_COUNT; ++k) {
      cml_dtype_t dt = cs_all_dtypes[k];
      if (!cs_has_dtype(t, dt)) continue;
      bt_new_builder(t);
      cml_function_t* f = bt_main(t);
      bt_tensor_t x = cs_values(t, dt, shapes[s].in_rank, shapes[s].in_dims, 1);
      cml_value_t y = cml_op_reshape(f, bt_param(t, f, &x), shapes[s].out_dims, shapes[s].out_rank);
      bt_tensor_t out[1];
      if (!bt_exec(t, &y, 1, out)) return;
      // Same bytes, new dims.
      bt_tensor_t want = bt_tensor(t, dt, shapes[s].out_rank, shapes[s].out_dims, x.data);
      bt_expect_equal(t, cml_dtype_name(dt), &out[0], &want);
    }
  }
}

static void case_reshape_packed(bt_t* t) {
  if (!bt_require_op(t, CML_OP_RESHAPE)) return;
  static const cml_dtype_t packed[] = {CML_DTYPE_I4, CML_DTYPE_U4, CML_DTYPE_I2, CML_DTYPE_U2};
  bool ran = false;
  for (size_t k = 0; k < sizeof packed / sizeof *packed; ++k) {
    cml_dtype_t dt = packed[k];
    if (!cs_has_dtype(t, dt)) continue;
    bt_new_builder(t);
    cml_function_t* f = bt_main(t);
    int64_t in_dims[] = {2, 3, 2}, out_dims[] = {3, 4};
    int64_t v[12];
    for (int i = 0; i < 12; ++i) v[i] = cml_dtype_is_signed_int(dt) ? (i % 3) - 1 : i % 4;
    bt_tensor_t x = bt_tensor_i64(t, dt, 3, in_dims, v);
    cml_value_t y = cml_op_reshape(f, bt_param(t, f, &x), out_dims, 2);
    bt_tensor_t out[1];
    if (!bt_exec(t, &y, 1, out)) return;
    bt_tensor_t want = bt_tensor_i64(t, dt, 2, out_dims, v);
    bt_expect_equal(t, cml_dtype_name(dt), &out[0], &want);
    ran = true;
  }
  if (!ran) bt_unsupported(t, "no packed dtype supported");
}

//===--- Transpose ---===//

typedef struct cs_perm_ctx_t {
  int32_t rank;
  const int64_t* in_dims;
  const int64_t* perm;
} cs_perm_ctx_t;

static int64_t cs_src_transpose(const void* ctx, const int64_t* idx) {
  const cs_perm_ctx_t* c = (const cs_perm_ctx_t*)ctx;
  int64_t in_idx[CML_MAX_RANK];
  for (int32_t i = 0; i < c->rank; ++i) in_idx[c->perm[i]] = idx[i];
  return cs_flat(c->rank, c->in_dims, in_idx);
}

static void cs_check_transpose(bt_t* t, cml_dtype_t dt, int32_t rank, const int64_t* in_dims,
                               const int64_t* perm) {
  bt_new_builder(t);
  cml_function_t* f = bt_main(t);
  bt_tensor_t x = cs_values(t, dt, rank, in_dims, 2);
  cml_value_t y = cml_op_transpose(f, bt_param(t, f, &x), perm, rank);
  bt_tensor_t out[1];
  if (!bt_exec(t, &y, 1, out)) return;
  int64_t out_dims[CML_MAX_RANK];
  for (int32_t i = 0; i < rank; ++i) out_dims[i] = in_dims[perm[i]];
  cs_perm_ctx_t c = {rank, in_dims, perm};
  bt_tensor_t want = cs_expect_map(t, &x, rank, out_dims, cs_src_transpose, &c, NULL);
  bt_expect_equal(t, cml_dtype_name(dt), &out[0], &want);
}

static void case_transpose_all_dtypes(bt_t* t) {
  if (!bt_require_op(t, CML_OP_TRANSPOSE)) return;
  int64_t d3[] = {5, 7, 11}, p3[] = {2, 0, 1};
  int64_t d8[] = {2, 3, 1, 2, 3, 1, 2, 2}, p8[] = {7, 5, 3, 1, 0, 2, 4, 6};
  int64_t dz[] = {3, 0, 2}, pz[] = {1, 2, 0};
  for (size_t k = 0; k < CS_DTYPE_COUNT && !bt_failed(t); ++k) {
    cml_dtype_t dt = cs_all_dtypes[k];
    if (!cs_has_dtype(t, dt)) continue;
    cs_check_transpose(t, dt, 3, d3, p3);
    cs_check_transpose(t, dt, 8, d8, p8);
    cs_check_transpose(t, dt, 3, dz, pz);
    cs_check_transpose(t, dt, 0, d3, p3);  // a scalar: rank 0 uses no dims
  }
}

static void case_transpose_large(bt_t* t) {
  if (!bt_require_op(t, CML_OP_TRANSPOSE)) return;
  int64_t d2[] = {67, 131}, p2[] = {1, 0};
  int64_t d3[] = {13, 17, 19}, p3[] = {2, 1, 0};
  int64_t d4[] = {3, 40, 5, 50}, p4[] = {3, 1, 0, 2};
  static const cml_dtype_t dts[] = {CML_DTYPE_U8, CML_DTYPE_BF16, CML_DTYPE_F32, CML_DTYPE_F64,
                                    CML_DTYPE_C128};
  for (size_t k = 0; k < sizeof dts / sizeof *dts && !bt_failed(t); ++k) {
    if (!cs_has_dtype(t, dts[k])) continue;
    cs_check_transpose(t, dts[k], 2, d2, p2);
    cs_check_transpose(t, dts[k], 3, d3, p3);
    cs_check_transpose(t, dts[k], 4, d4, p4);
  }
}

static void case_transpose_bad_permutation(bt_t* t) {
  if (!bt_require_op(t, CML_OP_TRANSPOSE)) return;
  cml_function_t* f = bt_main(t);
  int64_t dims[] = {2, 3}, perm[] = {0, 0};
  cml_value_t x = bt_param_f64(t, f, CML_DTYPE_F32, 2, dims, (double[]){1, 2, 3, 4, 5, 6});
  (void)cml_op_transpose(f, x, perm, 2);
  bt_expect_builder_error(t, CML_STATUS_INVALID_ARGUMENT, (const char* const[]){"Transpose", NULL});
}

//===--- BroadcastInDim ---===//

typedef struct cs_bcast_ctx_t {
  int32_t in_rank;
  const int64_t* in_dims;
  const int64_t* axes;
} cs_bcast_ctx_t;

static int64_t cs_src_broadcast(const void* ctx, const int64_t* idx) {
  const cs_bcast_ctx_t* c = (const cs_bcast_ctx_t*)ctx;
  int64_t in_idx[CML_MAX_RANK];
  for (int32_t i = 0; i < c->in_rank; ++i) in_idx[i] = c->in_dims[i] == 1 ? 0 : idx[c->axes[i]];
  return cs_flat(c->in_rank, c->in_dims, in_idx);
}

static void case_broadcast_in_dim_all_dtypes(bt_t* t) {
  if (!bt_require_op(t, CML_OP_BROADCAST_IN_DIM)) return;
  struct {
    int32_t in_rank, out_rank;
    int64_t in_dims[4], out_dims[4], axes[4];
  } cases[] = {
      {3, 4, {5, 1, 11}, {3, 5, 7, 11}, {1, 2, 3}},
      {0, 2, {0}, {2, 3}, {0}},
      {2, 3, {1, 4}, {4, 0, 4}, {0, 2}},
      {1, 2, {7}, {7, 6}, {0}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; ++c) {
    for (size_t k = 0; k < CS_DTYPE_COUNT && !bt_failed(t); ++k) {
      cml_dtype_t dt = cs_all_dtypes[k];
      if (!cs_has_dtype(t, dt)) continue;
      bt_new_builder(t);
      cml_function_t* f = bt_main(t);
      bt_tensor_t x = cs_values(t, dt, cases[c].in_rank, cases[c].in_dims, 3);
      cml_value_t y = cml_op_broadcast_in_dim(f, bt_param(t, f, &x), cases[c].out_dims,
                                              cases[c].out_rank, cases[c].axes, cases[c].in_rank);
      bt_tensor_t out[1];
      if (!bt_exec(t, &y, 1, out)) return;
      cs_bcast_ctx_t ctx = {cases[c].in_rank, cases[c].in_dims, cases[c].axes};
      bt_tensor_t want =
          cs_expect_map(t, &x, cases[c].out_rank, cases[c].out_dims, cs_src_broadcast, &ctx, NULL);
      bt_expect_equal(t, cml_dtype_name(dt), &out[0], &want);
    }
  }
}

//===--- Concatenate ---===//

static void case_concatenate_all_dtypes(bt_t* t) {
  if (!bt_require_op(t, CML_OP_CONCATENATE)) return;
  // [5, 2, 11], [5, 0, 11], [5, 7, 11] along axis 1, and a single operand along axis 0.
  int64_t da[] = {5, 2, 11}, db[] = {5, 0, 11}, dc[] = {5, 7, 11}, dout[] = {5, 9, 11};
  for (size_t k = 0; k < CS_DTYPE_COUNT && !bt_failed(t); ++k) {
    cml_dtype_t dt = cs_all_dtypes[k];
    if (!cs_has_dtype(t, dt)) continue;
    bt_new_builder(t);
    cml_function_t* f = bt_main(t);
    bt_tensor_t a = cs_values(t, dt, 3, da, 4), b = cs_values(t, dt, 3, db, 5),
                c = cs_values(t, dt, 3, dc, 6);
    cml_value_t ops[3] = {bt_param(t, f, &a), bt_param(t, f, &b), bt_param(t, f, &c)};
    cml_value_t y[2] = {cml_op_concatenate(f, 1, ops, 3), cml_op_concatenate(f, 0, ops + 2, 1)};
    bt_tensor_t out[2];
    if (!bt_exec(t, y, 2, out)) return;
    const size_t es = (size_t)cml_dtype_bits(dt) / 8;
    unsigned char* want = bt_alloc(t, 5 * 9 * 11 * es);
    for (int64_t i = 0; i < 5; ++i)
      for (int64_t j = 0; j < 9; ++j)
        for (int64_t l = 0; l < 11; ++l) {
          const unsigned char* src =
              j < 2 ? (const unsigned char*)a.data + ((i * 2 + j) * 11 + l) * (int64_t)es
                    : (const unsigned char*)c.data + ((i * 7 + j - 2) * 11 + l) * (int64_t)es;
          memcpy(want + ((i * 9 + j) * 11 + l) * (int64_t)es, src, es);
        }
    bt_tensor_t w = bt_tensor(t, dt, 3, dout, want);
    bt_expect_equal(t, cml_dtype_name(dt), &out[0], &w);
    bt_expect_equal(t, "single operand", &out[1], &c);
  }
}

//===--- Slice ---===//

typedef struct cs_slice_ctx_t {
  int32_t rank;
  const int64_t* in_dims;
  const int64_t* starts;
  const int64_t* strides;
} cs_slice_ctx_t;

static int64_t cs_src_slice(const void* ctx, const int64_t* idx) {
  const cs_slice_ctx_t* c = (const cs_slice_ctx_t*)ctx;
  int64_t in_idx[CML_MAX_RANK];
  for (int32_t i = 0; i < c->rank; ++i) in_idx[i] = c->starts[i] + idx[i] * c->strides[i];
  return cs_flat(c->rank, c->in_dims, in_idx);
}

static void case_slice_all_dtypes(bt_t* t) {
  if (!bt_require_op(t, CML_OP_SLICE)) return;
  struct {
    int32_t rank;
    int64_t dims[8], starts[8], limits[8], strides[8];
  } cases[] = {
      {3, {5, 7, 11}, {1, 0, 2}, {5, 7, 11}, {2, 3, 4}},
      {3, {5, 7, 11}, {0, 3, 0}, {5, 3, 11}, {1, 1, 1}},  // zero-size
      {8,
       {2, 3, 2, 3, 2, 3, 2, 3},
       {1, 0, 0, 1, 0, 2, 1, 0},
       {2, 3, 2, 3, 1, 3, 2, 3},
       {1, 2, 1, 1, 1, 1, 1, 2}},
      {1, {9}, {8}, {9}, {5}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; ++c) {
    for (size_t k = 0; k < CS_DTYPE_COUNT && !bt_failed(t); ++k) {
      cml_dtype_t dt = cs_all_dtypes[k];
      if (!cs_has_dtype(t, dt)) continue;
      bt_new_builder(t);
      cml_function_t* f = bt_main(t);
      int32_t r = cases[c].rank;
      bt_tensor_t x = cs_values(t, dt, r, cases[c].dims, 7);
      cml_value_t y = cml_op_slice(f, bt_param(t, f, &x), cases[c].starts, cases[c].limits,
                                   cases[c].strides, r);
      bt_tensor_t out[1];
      if (!bt_exec(t, &y, 1, out)) return;
      int64_t od[8];
      for (int32_t i = 0; i < r; ++i) {
        int64_t span = cases[c].limits[i] - cases[c].starts[i];
        od[i] = span <= 0 ? 0 : (span + cases[c].strides[i] - 1) / cases[c].strides[i];
      }
      cs_slice_ctx_t ctx = {r, cases[c].dims, cases[c].starts, cases[c].strides};
      bt_tensor_t want = cs_expect_map(t, &x, r, od, cs_src_slice, &ctx, NULL);
      bt_expect_equal(t, cml_dtype_name(dt), &out[0], &want);
    }
  }
}

//===--- Reverse ---===//

typedef struct cs_rev_ctx_t {
  int32_t rank;
  const int64_t* dims;
  bool reversed[CML_MAX_RANK];
} cs_rev_ctx_t;

static int64_t cs_src_reverse(const void* ctx, const int64_t* idx) {
  const cs_rev_ctx_t* c = (const cs_rev_ctx_t*)ctx;
  int64_t in_idx[CML_MAX_RANK];
  for (int32_t i = 0; i < c->rank; ++i)
    in_idx[i] = c->reversed[i] ? c->dims[i] - 1 - idx[i] : idx[i];
  return cs_flat(c->rank, c->dims, in_idx);
}

static void case_reverse_all_dtypes(bt_t* t) {
  if (!bt_require_op(t, CML_OP_REVERSE)) return;
  int64_t dims[] = {5, 7, 11};
  int64_t axes_sets[3][3] = {{0, 2}, {1}, {0, 1, 2}};
  size_t axes_counts[3] = {2, 1, 3};
  for (size_t s = 0; s < 3; ++s) {
    for (size_t k = 0; k < CS_DTYPE_COUNT && !bt_failed(t); ++k) {
      cml_dtype_t dt = cs_all_dtypes[k];
      if (!cs_has_dtype(t, dt)) continue;
      bt_new_builder(t);
      cml_function_t* f = bt_main(t);
      bt_tensor_t x = cs_values(t, dt, 3, dims, 8);
      cml_value_t y = cml_op_reverse(f, bt_param(t, f, &x), axes_sets[s], axes_counts[s]);
      bt_tensor_t out[1];
      if (!bt_exec(t, &y, 1, out)) return;
      cs_rev_ctx_t ctx;
      memset(&ctx, 0, sizeof ctx);
      ctx.rank = 3;
      ctx.dims = dims;
      for (size_t i = 0; i < axes_counts[s]; ++i) ctx.reversed[axes_sets[s][i]] = true;
      bt_tensor_t want = cs_expect_map(t, &x, 3, dims, cs_src_reverse, &ctx, NULL);
      bt_expect_equal(t, cml_dtype_name(dt), &out[0], &want);
    }
  }
}

//===--- Pad ---===//

typedef struct cs_pad_ctx_t {
  int32_t rank;
  const int64_t* in_dims;
  const cml_pad_axis_t* pads;
} cs_pad_ctx_t;

static int64_t cs_src_pad(const void* ctx, const int64_t* idx) {
  const cs_pad_ctx_t* c = (const cs_pad_ctx_t*)ctx;
  int64_t in_idx[CML_MAX_RANK];
  for (int32_t i = 0; i < c->rank; ++i) {
    int64_t p = idx[i] - c->pads[i].low, step = c->pads[i].interior + 1;
    if (p < 0 || p % step != 0 || p / step >= c->in_dims[i]) return -1;
    in_idx[i] = p / step;
  }
  return cs_flat(c->rank, c->in_dims, in_idx);
}

static void case_pad_all_dtypes(bt_t* t) {
  if (!bt_require_op(t, CML_OP_PAD)) return;
  int64_t dims[] = {5, 7};
  cml_pad_axis_t pad_sets[3][2] = {
      {{2, -1, 1}, {-2, 3, 2}},
      {{0, 0, 0}, {1, 1, 0}},
      {{-3, -2, 0}, {0, 0, 3}},  // crops rows to nothing
  };
  for (size_t s = 0; s < 3; ++s) {
    for (size_t k = 0; k < CS_DTYPE_COUNT && !bt_failed(t); ++k) {
      cml_dtype_t dt = cs_all_dtypes[k];
      if (!cs_has_dtype(t, dt)) continue;
      bt_new_builder(t);
      cml_function_t* f = bt_main(t);
      bt_tensor_t x = cs_values(t, dt, 2, dims, 9);
      int64_t fill_value = dt == CML_DTYPE_BOOL ? 1 : 99;
      bt_tensor_t fill = bt_tensor_i64(t, dt, 0, NULL, &fill_value);
      cml_value_t y = cml_op_pad(f, bt_param(t, f, &x), bt_param(t, f, &fill), pad_sets[s], 2);
      bt_tensor_t out[1];
      if (!bt_exec(t, &y, 1, out)) return;
      int64_t od[2];
      for (int i = 0; i < 2; ++i) {
        const cml_pad_axis_t* p = &pad_sets[s][i];
        od[i] = dims[i] + p->low + p->high + (dims[i] - 1) * p->interior;
      }
      cs_pad_ctx_t ctx = {2, dims, pad_sets[s]};
      bt_tensor_t want = cs_expect_map(t, &x, 2, od, cs_src_pad, &ctx, &fill);
      bt_expect_equal(t, cml_dtype_name(dt), &out[0], &want);
    }
  }
}

static void case_pad_float_edges(bt_t* t) {
  if (!bt_require_op(t, CML_OP_PAD) || !bt_require_dtype(t, CML_DTYPE_F32)) return;
  // NaN fill, -0 and infinities carried through, a scalar operand with no pads.
  cml_function_t* f = bt_main(t);
  int64_t d[] = {3};
  cml_value_t x = bt_param_f64(t, f, CML_DTYPE_F32, 1, d, (double[]){-0.0, INFINITY, -INFINITY});
  cml_value_t fill = bt_param_f64(t, f, CML_DTYPE_F32, 0, NULL, (double[]){NAN});
  cml_pad_axis_t p = {1, 1, 1};
  cml_value_t y = cml_op_pad(f, x, fill, &p, 1);
  cml_value_t s = bt_param_f64(t, f, CML_DTYPE_F32, 0, NULL, (double[]){2.5});
  cml_value_t z = cml_op_pad(f, s, fill, NULL, 0);
  cml_value_t outs[2] = {y, z};
  bt_tensor_t out[2];
  if (!bt_exec(t, outs, 2, out)) return;
  int64_t od[] = {7};
  bt_expect_f64(t, "pad", &out[0], CML_DTYPE_F32, 1, od,
                (double[]){NAN, -0.0, NAN, INFINITY, NAN, -INFINITY, NAN}, 0);
  bt_expect_f64(t, "scalar", &out[1], CML_DTYPE_F32, 0, NULL, (double[]){2.5}, 0);
}

//===--- table ---===//

const bt_case_t bt_cases_movement[] = {
    {"reshape_all_dtypes", CML_OP_RESHAPE, case_reshape_all_dtypes},
    {"reshape_packed", CML_OP_RESHAPE, case_reshape_packed},
    {"transpose_all_dtypes", CML_OP_TRANSPOSE, case_transpose_all_dtypes},
    {"transpose_large", CML_OP_TRANSPOSE, case_transpose_large},
    {"transpose_bad_permutation", CML_OP_TRANSPOSE, case_transpose_bad_permutation},
    {"broadcast_in_dim_all_dtypes", CML_OP_BROADCAST_IN_DIM, case_broadcast_in_dim_all_dtypes},
    {"concatenate_all_dtypes", CML_OP_CONCATENATE, case_concatenate_all_dtypes},
    {"slice_all_dtypes", CML_OP_SLICE, case_slice_all_dtypes},
    {"reverse_all_dtypes", CML_OP_REVERSE, case_reverse_all_dtypes},
    {"pad_all_dtypes", CML_OP_PAD, case_pad_all_dtypes},
    {"pad_float_edges", CML_OP_PAD, case_pad_float_edges},
};
const size_t bt_cases_movement_count = sizeof bt_cases_movement / sizeof bt_cases_movement[0];
