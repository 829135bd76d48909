// SPDX-License-Identifier: Apache-2.0
// tests/differential/diff_window.c: ReduceWindow (every reduction, with padding, strides and
// dilations) and SelectAndScatter (max, min, sum; overlapping windows with ties).
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "diff_common.h"

typedef struct dt_window_ctx_t {
  cml_reduce_type_t type;
  cml_op_t op;
  int variant;
} dt_window_ctx_t;

static size_t dt_build_reduce_window(cml_function_t* f, const cml_value_t* p, const void* ctx,
                                     cml_value_t* outs) {
  const dt_window_ctx_t* w = ctx;
  cml_window_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.rank = 3;
  const int64_t win[3] = {1, 3, 2}, strides[3] = {1, 2, 1};
  memcpy(cfg.window_dims, win, sizeof win);
  memcpy(cfg.strides, strides, sizeof strides);
  cfg.padding_low[1] = 1;
  cfg.padding_high[1] = 1;
  cfg.padding_high[2] = 1;
  if (w->variant == 1) {
    cfg.window_dilations[1] = 2;
    cfg.input_dilations[2] = 2;
  }
  outs[0] = cml_op_reduce_window(f, p[0], w->type, &cfg);
  return 1;
}

static size_t dt_build_select_and_scatter(cml_function_t* f, const cml_value_t* p, const void* ctx,
                                          cml_value_t* outs) {
  const dt_window_ctx_t* w = ctx;
  cml_window_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.rank = 2;
  cfg.window_dims[0] = 3;
  cfg.window_dims[1] = 2;
  cfg.strides[0] = 2;
  cfg.strides[1] = 2;
  outs[0] = cml_op_select_and_scatter(f, w->op, p[0], p[1], &cfg);
  return 1;
}

static void dt_reduce_window(cml_dtype_t d, cml_reduce_type_t type, int variant) {
  if (!dt_selected("ReduceWindow", d)) return;
  bool is_float = cml_dtype_is_float(d);
  bool arith = type == CML_REDUCE_SUM || type == CML_REDUCE_PRODUCT;
  dt_tol_t tol = is_float && arith ? (dt_tol_t){DT_REL, 8, 1} : (dt_tol_t){DT_EXACT, 0, 0};
  dt_case_t c;
  dt_case_init(&c, "ReduceWindow", d, tol);
  snprintf(c.variant, sizeof c.variant, "%s%s", cml_reduce_type_name(type),
           variant ? " dilated" : "");
  void* x = dt_case_input(&c, d, 3, (const int64_t[]){2, 9, 8});
  int64_t n = 2 * 9 * 8;
  if (!is_float) {
    dt_fill(d, x, 0, n, type == CML_REDUCE_PRODUCT ? DT_FILL_SMALL : DT_FILL_WIDE);
  } else if (type == CML_REDUCE_PRODUCT) {
    for (int64_t i = 0; i < n; ++i) dt_set_f64(d, x, i, dt_uniform(0.5, 2) * (i % 3 ? 1 : -1));
  } else if (type == CML_REDUCE_SUM) {
    dt_fill(d, x, 0, n, DT_FILL_UNIT);
  } else {
    dt_fill(d, x, 0, n, DT_FILL_EDGE);
  }
  dt_window_ctx_t ctx = {type, CML_OP_REDUCE_WINDOW, variant};
  c.build = dt_build_reduce_window;
  c.ctx = &ctx;
  dt_check(&c);
  dt_case_free(&c);
}

static void dt_select_and_scatter(cml_dtype_t d, cml_op_t op) {
  if (!dt_selected(cml_op_name(op), d)) return;
  dt_case_t c;
  dt_case_init(&c, cml_op_name(op), d, (dt_tol_t){DT_EXACT, 0, 0});
  void* x = dt_case_input(&c, d, 2, (const int64_t[]){9, 8});
  void* s = dt_case_input(&c, d, 2, (const int64_t[]){4, 4});
  dt_fill(d, x, 0, 72, DT_FILL_SMALL);  // small values: many ties inside windows
  if (cml_dtype_is_float(d)) {
    for (int64_t i = 0; i < 72; ++i) dt_set_f64(d, x, i, floor(dt_get_f64(d, x, i)));
  }
  dt_fill(d, s, 0, 16, cml_dtype_is_int(d) ? DT_FILL_WIDE : DT_FILL_EXACT);
  dt_window_ctx_t ctx = {CML_REDUCE_UNDEFINED, op, 0};
  c.build = dt_build_select_and_scatter;
  c.ctx = &ctx;
  dt_check(&c);
  dt_case_free(&c);
}

void dt_group_window(void) {
  for (const cml_dtype_t* d = dt_all_dtypes; *d != CML_DTYPE_INVALID; ++d) {
    if (cml_op_dtypes(CML_OP_REDUCE_WINDOW) & CML_DTYPE_BIT(*d)) {
      for (int t = CML_REDUCE_SUM; t <= CML_REDUCE_MIN; ++t) {
        dt_reduce_window(*d, (cml_reduce_type_t)t, 0);
      }
      dt_reduce_window(*d, CML_REDUCE_MAX, 1);
      dt_reduce_window(*d, CML_REDUCE_SUM, 1);
    }
    for (cml_op_t op = CML_OP_SELECT_AND_SCATTER_MAX; op <= CML_OP_SELECT_AND_SCATTER_SUM; ++op) {
      if (cml_op_dtypes(op) & CML_DTYPE_BIT(*d)) dt_select_and_scatter(*d, op);
    }
  }
}
