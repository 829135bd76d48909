// SPDX-License-Identifier: Apache-2.0
// tests/differential/diff_movement.c: data movement ops (Reshape, Transpose, BroadcastInDim,
// Concatenate, Slice, Reverse, Iota, Pad, DynamicSlice, DynamicUpdateSlice) for every dtype.
// All exact: no arithmetic happens.
#include <stdio.h>

#include "diff_common.h"

typedef enum dt_move_t {
  DT_RESHAPE,
  DT_TRANSPOSE,
  DT_BROADCAST,
  DT_CONCATENATE,
  DT_SLICE,
  DT_REVERSE,
  DT_IOTA,
  DT_PAD,
  DT_DYNAMIC_SLICE,
  DT_DYNAMIC_UPDATE_SLICE,
  DT_MOVE_COUNT
} dt_move_t;

typedef struct dt_move_ctx_t {
  dt_move_t kind;
  cml_dtype_t dtype;
} dt_move_ctx_t;

static size_t dt_build_move(cml_function_t* f, const cml_value_t* p, const void* ctx,
                            cml_value_t* outs) {
  const dt_move_ctx_t* m = ctx;
  switch (m->kind) {
    case DT_RESHAPE:
      outs[0] = cml_op_reshape(f, p[0], (const int64_t[]){5, 12}, 2);
      break;
    case DT_TRANSPOSE:
      outs[0] = cml_op_transpose(f, p[0], (const int64_t[]){2, 0, 1}, 3);
      break;
    case DT_BROADCAST:
      outs[0] = cml_op_broadcast_in_dim(f, p[0], (const int64_t[]){3, 4, 5, 2}, 4,
                                        (const int64_t[]){0, 1, 2}, 3);
      break;
    case DT_CONCATENATE:
      outs[0] = cml_op_concatenate(f, 1, (const cml_value_t[]){p[0], p[1], p[0]}, 3);
      break;
    case DT_SLICE:
      outs[0] = cml_op_slice(f, p[0], (const int64_t[]){1, 0, 1}, (const int64_t[]){3, 4, 5},
                             (const int64_t[]){1, 2, 3}, 3);
      break;
    case DT_REVERSE:
      outs[0] = cml_op_reverse(f, p[0], (const int64_t[]){0, 2}, 2);
      break;
    case DT_IOTA: {
      cml_shape_t s = cml_shape_make(m->dtype, 2, (const int64_t[]){4, 70});
      outs[0] = cml_op_iota(f, &s, 1);
      outs[1] = cml_op_iota(f, &s, 0);
      return 2;
    }
    case DT_PAD: {
      const cml_pad_axis_t axes[3] = {{1, -1, 1}, {-1, 2, 0}, {0, 0, 2}};
      outs[0] = cml_op_pad(f, p[0], p[1], axes, 3);
      break;
    }
    case DT_DYNAMIC_SLICE:
      outs[0] = cml_op_dynamic_slice(f, p[0], (const cml_value_t[]){p[1], p[2], p[3]},
                                     (const int64_t[]){2, 3, 2}, 3);
      break;
    case DT_DYNAMIC_UPDATE_SLICE:
      outs[0] =
          cml_op_dynamic_update_slice(f, p[0], p[1], (const cml_value_t[]){p[2], p[3], p[4]}, 3);
      break;
    default:
      return 0;
  }
  return 1;
}

static const char* const dt_move_names[DT_MOVE_COUNT] = {
    "Reshape", "Transpose", "BroadcastInDim", "Concatenate",       "Slice", "Reverse",
    "Iota",    "Pad",       "DynamicSlice",   "DynamicUpdateSlice"};

static void dt_move(dt_move_t kind, cml_dtype_t d, int variant) {
  const char* name = dt_move_names[kind];
  if (kind == DT_IOTA && !(cml_op_dtypes(CML_OP_IOTA) & CML_DTYPE_BIT(d))) return;
  if (!dt_selected(name, d)) return;
  dt_case_t c;
  dt_case_init(&c, name, d, (dt_tol_t){DT_EXACT, 0, 0});
  int64_t dims[3] = {3, 4, 5};
  if (kind == DT_BROADCAST) dims[1] = 1;
  if (kind != DT_IOTA) {
    void* x = dt_case_input(&c, d, 3, dims);
    dt_fill(d, x, 0, cml_shape_element_count(&c.inputs[0].shape), DT_FILL_EDGE);
  }
  if (kind == DT_CONCATENATE) {
    void* y = dt_case_input(&c, d, 3, (const int64_t[]){3, 2, 5});
    dt_fill(d, y, 0, 30, DT_FILL_WIDE);
  } else if (kind == DT_PAD) {
    void* fill = dt_case_input(&c, d, 0, NULL);
    dt_fill(d, fill, 0, 1, DT_FILL_WIDE);
  } else if (kind == DT_DYNAMIC_SLICE || kind == DT_DYNAMIC_UPDATE_SLICE) {
    if (kind == DT_DYNAMIC_UPDATE_SLICE) {
      void* u = dt_case_input(&c, d, 3, (const int64_t[]){2, 2, 3});
      dt_fill(d, u, 0, 12, DT_FILL_WIDE);
    }
    // Variant 0: in range; 1: negative and too large starts (clamped), in another int dtype.
    static const int64_t starts[2][3] = {{1, 1, 2}, {7, -3, 4}};
    cml_dtype_t sd = variant == 0 ? CML_DTYPE_I32 : CML_DTYPE_I64;
    for (int k = 0; k < 3; ++k) {
      void* s = dt_case_input(&c, sd, 0, NULL);
      dt_set_i64(sd, s, 0, starts[variant][k]);
    }
    snprintf(c.variant, sizeof c.variant, "%s starts", variant == 0 ? "in-range" : "clamped");
  }
  dt_move_ctx_t ctx = {kind, d};
  c.build = dt_build_move;
  c.ctx = &ctx;
  dt_check(&c);
  dt_case_free(&c);
}

void dt_group_movement(void) {
  for (int k = 0; k < DT_MOVE_COUNT; ++k) {
    for (const cml_dtype_t* d = dt_all_dtypes; *d != CML_DTYPE_INVALID; ++d) {
      dt_move((dt_move_t)k, *d, 0);
      if (k == DT_DYNAMIC_SLICE || k == DT_DYNAMIC_UPDATE_SLICE) dt_move((dt_move_t)k, *d, 1);
    }
  }
}
