// SPDX-License-Identifier: Apache-2.0
// tests/differential/diff_reduce.c: Reduce* over one axis, the other axis and all axes, and
// ArgMinMax. Integer reductions are exact (wrap-around included); float sums and products are
// compared within a relative bound (the summation order differs between backends); max/min
// exactly, with NaN, ±Inf and ±0 rows.
#include <math.h>
#include <stdio.h>

#include "diff_common.h"

typedef struct dt_reduce_ctx_t {
  cml_op_t op;
  int64_t axes[2];
  size_t axis_count;
  bool is_min;
  cml_dtype_t out_dtype;
} dt_reduce_ctx_t;

static size_t dt_build_reduce(cml_function_t* f, const cml_value_t* p, const void* ctx,
                              cml_value_t* outs) {
  const dt_reduce_ctx_t* r = ctx;
  outs[0] = cml_op_reduce(f, r->op, p[0], r->axes, r->axis_count);
  return 1;
}

static size_t dt_build_argminmax(cml_function_t* f, const cml_value_t* p, const void* ctx,
                                 cml_value_t* outs) {
  const dt_reduce_ctx_t* r = ctx;
  outs[0] = cml_op_arg_min_max(f, p[0], r->axes[0], r->out_dtype, r->is_min);
  return 1;
}

enum { DT_ROWS = 9, DT_COLS = 37 };

// Rows 0..6 random (|kind|), row 7 holds an Inf (and a -Inf at odd columns for max/min), row 8
// a NaN; for max/min also rows with both zeros.
static void dt_reduce_fill(cml_op_t op, cml_dtype_t d, void* x) {
  int64_t n = DT_ROWS * DT_COLS;
  bool is_float = cml_dtype_is_float(d) || cml_dtype_is_complex(d);
  dt_fill_t kind = DT_FILL_WIDE;
  if (is_float && (op == CML_OP_REDUCE_SUM)) kind = DT_FILL_UNIT;
  if (is_float && (op == CML_OP_REDUCE_MAX || op == CML_OP_REDUCE_MIN)) kind = DT_FILL_EDGE;
  if (op == CML_OP_REDUCE_PRODUCT && !is_float) kind = DT_FILL_SMALL;
  dt_fill(d, x, 0, n, kind);
  if (op == CML_OP_REDUCE_PRODUCT && is_float) {
    for (int64_t i = 0; i < n; ++i) {  // magnitudes in [0.5, 2): no overflow over 37 factors
      double v = dt_uniform(0.5, 2.0) * ((dt_rand() & 1) ? -1 : 1);
      if (cml_dtype_is_complex(d)) {
        dt_set_c(d, x, i, v, dt_uniform(-0.5, 0.5));
      } else {
        dt_set_f64(d, x, i, v);
      }
    }
  }
  if (!is_float) return;
  dt_set_f64(d, x, 7 * DT_COLS + 3, INFINITY);
  dt_set_f64(d, x, 8 * DT_COLS + 5, NAN);
  if (op == CML_OP_REDUCE_MAX || op == CML_OP_REDUCE_MIN) {
    for (int64_t j = 0; j < DT_COLS; ++j) {  // row 6: zeros of both signs only
      dt_set_f64(d, x, 6 * DT_COLS + j, (j % 3 == 0) ? -0.0 : 0.0);
    }
    dt_set_f64(d, x, 7 * DT_COLS + 4, -INFINITY);
  }
}

static void dt_reduce(cml_op_t op, cml_dtype_t d) {
  if (!dt_selected(cml_op_name(op), d)) return;
  bool is_float = cml_dtype_is_float(d) || cml_dtype_is_complex(d);
  dt_tol_t tol = {DT_EXACT, 0, 0};
  if (is_float && (op == CML_OP_REDUCE_SUM || op == CML_OP_REDUCE_PRODUCT)) {
    tol = (dt_tol_t){DT_REL, 16, 1};
  }
  static const struct {
    const char* name;
    int64_t axes[2];
    size_t count;
  } variants[] = {{"axis=1", {1, 0}, 1}, {"axis=0", {0, 0}, 1}, {"all", {0, 1}, 2}};
  for (size_t v = 0; v < 3; ++v) {
    dt_case_t c;
    dt_case_init(&c, cml_op_name(op), d, tol);
    snprintf(c.variant, sizeof c.variant, "%s", variants[v].name);
    int64_t dims[2] = {DT_ROWS, DT_COLS};
    void* x = dt_case_input(&c, d, 2, dims);
    dt_reduce_fill(op, d, x);
    // The all-axes float sum and product get finite rows 7 and 8 (the per-axis variants keep
    // their Inf and NaN), so that their bound is checked on a finite result.
    dt_reduce_ctx_t ctx = {op,
                           {variants[v].axes[0], variants[v].axes[1]},
                           variants[v].count,
                           false,
                           CML_DTYPE_INVALID};
    if (v == 2 && is_float && tol.kind != DT_EXACT) {
      for (int64_t j = 0; j < 2 * DT_COLS; ++j) {
        dt_set_f64(d, x, 7 * DT_COLS + j, (op == CML_OP_REDUCE_PRODUCT) ? 1.0 : 0.25);
      }
    }
    c.build = dt_build_reduce;
    c.ctx = &ctx;
    dt_check(&c);
    dt_case_free(&c);
  }
}

static void dt_argminmax(cml_dtype_t d) {
  if (!dt_selected("ArgMinMax", d)) return;
  for (int v = 0; v < 4; ++v) {
    dt_case_t c;
    dt_case_init(&c, "ArgMinMax", d, (dt_tol_t){DT_EXACT, 0, 0});
    int64_t axis = v & 1;
    bool is_min = (v & 2) != 0;
    snprintf(c.variant, sizeof c.variant, "axis=%d %s", (int)axis, is_min ? "min" : "max");
    int64_t dims[2] = {DT_ROWS, DT_COLS};
    void* x = dt_case_input(&c, d, 2, dims);
    dt_fill(d, x, 0, DT_ROWS * DT_COLS, DT_FILL_SMALL);  // many ties
    if (cml_dtype_is_float(d)) {
      dt_set_f64(d, x, 2 * DT_COLS + 4, NAN);  // one NaN in row 2
      dt_set_f64(d, x, 3 * DT_COLS + 1, NAN);  // two NaNs in row 3
      dt_set_f64(d, x, 3 * DT_COLS + 9, NAN);
      dt_set_f64(d, x, 4 * DT_COLS + 0, INFINITY);
      dt_set_f64(d, x, 4 * DT_COLS + 1, -INFINITY);
      for (int64_t j = 0; j < DT_COLS; ++j) dt_set_f64(d, x, 5 * DT_COLS + j, j % 2 ? 0.0 : -0.0);
    }
    dt_reduce_ctx_t ctx = {CML_OP_ARG_MIN_MAX, {axis, 0}, 1, is_min, CML_DTYPE_I32};
    c.build = dt_build_argminmax;
    c.ctx = &ctx;
    dt_check(&c);
    dt_case_free(&c);
  }
}

void dt_group_reduce(void) {
  for (int o = 0; o < CML_OP_COUNT; ++o) {
    cml_op_t op = (cml_op_t)o;
    if (cml_op_kind(op) != CML_OPK_REDUCE) continue;
    for (const cml_dtype_t* d = dt_all_dtypes; *d != CML_DTYPE_INVALID; ++d) {
      if (cml_op_dtypes(op) & CML_DTYPE_BIT(*d)) dt_reduce(op, *d);
    }
  }
  for (const cml_dtype_t* d = dt_all_dtypes; *d != CML_DTYPE_INVALID; ++d) {
    if (cml_op_dtypes(CML_OP_ARG_MIN_MAX) & CML_DTYPE_BIT(*d)) dt_argminmax(*d);
  }
}
