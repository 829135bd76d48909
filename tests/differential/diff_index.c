// SPDX-License-Identifier: Apache-2.0
// tests/differential/diff_index.c: Gather (row gather and 2-D windows, with out-of-range starts
// that are clamped) and ScatterSum/Max/Min (duplicate indices, out-of-bounds windows that are
// skipped). Exact: float updates are small multiples of 1/4, so sums do not round.
#include <stdio.h>
#include <string.h>

#include "diff_common.h"

typedef struct dt_index_ctx_t {
  int variant;  // gather: 0 rows, 1 windows; scatter: the op
  cml_op_t op;
} dt_index_ctx_t;

static size_t dt_build_gather(cml_function_t* f, const cml_value_t* p, const void* ctx,
                              cml_value_t* outs) {
  const dt_index_ctx_t* g = ctx;
  cml_gather_dims_t dims;
  memset(&dims, 0, sizeof dims);
  dims.index_vector_axis = 1;
  if (g->variant == 0) {
    dims.offset_output_axis_count = 1;
    dims.offset_output_axes[0] = 1;
    dims.collapsed_slice_axis_count = 1;
    dims.collapsed_slice_axes[0] = 0;
    dims.start_index_map_count = 1;
    dims.start_index_map[0] = 0;
    dims.slice_size_count = 2;
    dims.slice_sizes[0] = 1;
    dims.slice_sizes[1] = 5;
  } else {
    dims.offset_output_axis_count = 2;
    dims.offset_output_axes[0] = 1;
    dims.offset_output_axes[1] = 2;
    dims.start_index_map_count = 2;
    dims.start_index_map[0] = 0;
    dims.start_index_map[1] = 1;
    dims.slice_size_count = 2;
    dims.slice_sizes[0] = 2;
    dims.slice_sizes[1] = 3;
  }
  outs[0] = cml_op_gather(f, p[0], p[1], &dims);
  return 1;
}

static size_t dt_build_scatter(cml_function_t* f, const cml_value_t* p, const void* ctx,
                               cml_value_t* outs) {
  const dt_index_ctx_t* s = ctx;
  cml_scatter_dims_t dims;
  memset(&dims, 0, sizeof dims);
  dims.index_vector_axis = 1;
  dims.update_window_axis_count = 1;
  dims.update_window_axes[0] = 1;
  dims.inserted_window_axis_count = 1;
  dims.inserted_window_axes[0] = 0;
  dims.scatter_axes_to_operand_axes_count = 1;
  dims.scatter_axes_to_operand_axes[0] = 0;
  outs[0] = cml_op_scatter(f, s->op, p[0], p[1], p[2], &dims);
  return 1;
}

static void dt_gather(cml_dtype_t d, int variant) {
  if (!dt_selected("Gather", d)) return;
  dt_case_t c;
  dt_case_init(&c, "Gather", d, (dt_tol_t){DT_EXACT, 0, 0});
  snprintf(c.variant, sizeof c.variant, "%s", variant == 0 ? "rows" : "windows");
  void* x = dt_case_input(&c, d, 2, (const int64_t[]){6, 5});
  dt_fill(d, x, 0, 30, DT_FILL_EDGE);
  if (variant == 0) {
    int32_t* idx = dt_case_input(&c, CML_DTYPE_I32, 2, (const int64_t[]){4, 1});
    const int32_t v[4] = {0, 5, -1, 9};
    memcpy(idx, v, sizeof v);
  } else {
    int64_t* idx = dt_case_input(&c, CML_DTYPE_I64, 2, (const int64_t[]){3, 2});
    const int64_t v[6] = {0, 0, 4, 3, -2, 7};
    memcpy(idx, v, sizeof v);
  }
  dt_index_ctx_t ctx = {variant, CML_OP_GATHER};
  c.build = dt_build_gather;
  c.ctx = &ctx;
  dt_check(&c);
  dt_case_free(&c);
}

static void dt_scatter(cml_op_t op, cml_dtype_t d) {
  if (!(cml_op_dtypes(op) & CML_DTYPE_BIT(d)) || !dt_selected(cml_op_name(op), d)) return;
  dt_case_t c;
  dt_case_init(&c, cml_op_name(op), d, (dt_tol_t){DT_EXACT, 0, 0});
  void* x = dt_case_input(&c, d, 2, (const int64_t[]){6, 5});
  int32_t* idx = dt_case_input(&c, CML_DTYPE_I32, 2, (const int64_t[]){5, 1});
  void* u = dt_case_input(&c, d, 2, (const int64_t[]){5, 5});
  dt_fill_t kind = cml_dtype_is_int(d) ? DT_FILL_WIDE : DT_FILL_EXACT;
  dt_fill(d, x, 0, 30, kind);
  dt_fill(d, u, 0, 25, kind);
  const int32_t v[5] = {1, 3, 1, 6, -1};  // a duplicate, then two out-of-bounds windows
  memcpy(idx, v, sizeof v);
  dt_index_ctx_t ctx = {0, op};
  c.build = dt_build_scatter;
  c.ctx = &ctx;
  dt_check(&c);
  dt_case_free(&c);
}

void dt_group_index(void) {
  for (const cml_dtype_t* d = dt_all_dtypes; *d != CML_DTYPE_INVALID; ++d) {
    dt_gather(*d, 0);
    dt_gather(*d, 1);
    dt_scatter(CML_OP_SCATTER_SUM, *d);
    dt_scatter(CML_OP_SCATTER_MAX, *d);
    dt_scatter(CML_OP_SCATTER_MIN, *d);
  }
}
