// SPDX-License-Identifier: Apache-2.0
// src/backends/xla/stablehlo/emit_window.c: StableHLO lowerings of the "window" ops
// (ReduceWindow, the SelectAndScatter* ops).
//
// Notes on semantics:
// - SelectAndScatterSum (add every source element to its whole window) is a pad with interior
//   padding (stride - 1) followed by a stride-1 window sum.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/xla/stablehlo/emit_internal.h"

static void cml_shlo_window_attrs(cml__shlo_attr_t* a, const cml_window_config_t* w,
                                  bool dilations) {
  cml__shlo_attr_printf(a, "window_dimensions = ");
  cml__shlo_attr_array(a, w->window_dims, w->rank);
  cml__shlo_attr_printf(a, ", window_strides = ");
  cml__shlo_attr_array(a, w->strides, w->rank);
  if (dilations) {
    cml__shlo_attr_printf(a, ", base_dilations = ");
    cml__shlo_attr_array(a, w->input_dilations, w->rank);
    cml__shlo_attr_printf(a, ", window_dilations = ");
    cml__shlo_attr_array(a, w->window_dilations, w->rank);
  }
  cml__shlo_attr_printf(a, ", padding = ");
  cml__shlo_attr_padding(a, w->padding_low, w->padding_high, w->rank);
}

// reduce_window of |x| with |body| and |init_kind| over |w|, to |out|.
static cml__shlo_val_t cml_shlo_reduce_window_op(cml__shlo_ctx_t* c, const cml__shlo_val_t* x,
                                                 const char* body,
                                                 cml__shlo_scalar_kind_t init_kind,
                                                 const cml_window_config_t* w,
                                                 const cml_shape_t* out) {
  const cml_dtype_t dtype = x->shape.dtype;
  const bool is_max = strcmp(body, "stablehlo.maximum") == 0;
  // A float max/min in a module Shardy partitions runs on order keys (emit_internal.h), so that
  // whatever Shardy makes of the region compiles.
  const bool keyed = (is_max || strcmp(body, "stablehlo.minimum") == 0) &&
                     cml_dtype_is_float(dtype) && cml_xla_emit_is_sharded(c->module);
  // Float16/BFloat16 sums and products accumulate in Float32 and round once, as Reduce does
  // here and both ops do on `c`: a running sum over [65504, 100, -65504] is 100 at the end, not
  // the inf of an f16 accumulator.
  const bool widen = cml__shlo_is_half(dtype) && (strcmp(body, "stablehlo.add") == 0 ||
                                                  strcmp(body, "stablehlo.multiply") == 0);
  cml__shlo_val_t ins[2];
  ins[0] = widen ? cml__shlo_convert(c, x, CML_DTYPE_F32) : *x;
  ins[1] = cml__shlo_const_scalar(c, ins[0].shape.dtype, init_kind);
  if (keyed) {
    ins[0] = cml__shlo_order_key(c, &ins[0], is_max);
    ins[1] = cml__shlo_order_key(c, &ins[1], is_max);
  }
  // Base (input) dilation as an interior pad with the init value, then an undilated window:
  // the same elements (a hole holds the init value either way). xla:cpu's compile of a
  // base-dilated reduce_window lost the holes at larger sizes (a Sum over [1, 3, 2, 1096],
  // dilation 2 on the last axis: 4784 of 6573 outputs wrong; docs/differential.md).
  cml_window_config_t undilated;
  bool dilated = false;
  for (int32_t i = 0; i < w->rank; ++i) dilated |= w->input_dilations[i] > 1;
  if (dilated) {
    int64_t low[CML_MAX_RANK], high[CML_MAX_RANK], interior[CML_MAX_RANK];
    cml_shape_t padded = ins[0].shape;
    undilated = *w;
    for (int32_t i = 0; i < w->rank; ++i) {
      const int64_t d = w->input_dilations[i] > 1 ? w->input_dilations[i] : 1, m = padded.dims[i];
      low[i] = high[i] = 0;
      interior[i] = d - 1;
      padded.dims[i] = m > 0 ? (m - 1) * d + 1 : 0;
      undilated.input_dilations[i] = 1;
    }
    ins[0] = cml__shlo_pad(c, &ins[0], &ins[1], low, high, interior, &padded);
    // (Behind a barrier: XLA's simplifier folds such a pad back into the window's dilation.)
    ins[0] = cml__shlo_op(c, "stablehlo.optimization_barrier", &ins[0], 1, NULL, &ins[0].shape);
    w = &undilated;
  }
  cml__shlo_val_t r;
  r.shape = cml_shlo_retype(out, ins[0].shape.dtype);
  r.name = cml__shlo_op_begin(c, "stablehlo.reduce_window", ins, 2, 1);
  cml__shlo_printf(c, " (");
  cml__shlo_binary_region(c, body, ins[0].shape.dtype);
  cml__shlo_printf(c, ")");
  cml__shlo_attr_t a;
  cml__shlo_attr_init(&a);
  cml_shlo_window_attrs(&a, w, true);
  cml__shlo_op_end(c, a.s, ins, 2, &r.shape, 1);
  if (keyed) r = cml__shlo_from_order_key(c, &r, dtype);
  if (widen) r = cml__shlo_convert(c, &r, dtype);
  return r;
}

static cml_status_t cml_shlo_reduce_window(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  const char* body;
  cml__shlo_scalar_kind_t init_kind;
  if (!cml__shlo_reduce_type_kind(n->attrs->reduce_type, &body, &init_kind)) {
    return cml__shlo_unimplemented(c, n, "undefined reduction type");
  }
  cml__shlo_val_t x = cml__shlo_value(c, n->inputs[0]);
  cml__shlo_val_t r =
      cml_shlo_reduce_window_op(c, &x, body, init_kind, &n->attrs->u.window, cml_shlo_out(c, n, 0));
  cml_shlo_bind1(c, n, &r);
  return CML_OK;
}

static cml_status_t cml_shlo_select_and_scatter(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  const cml_window_config_t* w = &n->attrs->u.window;
  cml__shlo_val_t operand = cml__shlo_value(c, n->inputs[0]);
  cml__shlo_val_t source = cml__shlo_value(c, n->inputs[1]);
  const cml_shape_t* out = cml_shlo_out(c, n, 0);
  cml_dtype_t dt = operand.shape.dtype;
  if (n->op == CML_OP_SELECT_AND_SCATTER_SUM) {
    // Every source element is added to its whole window: dilate the source by the stride,
    // pad it so that output element i sees the windows covering it, and sum windows of size W.
    int32_t rank = w->rank;
    int64_t low[CML_MAX_RANK], high[CML_MAX_RANK], interior[CML_MAX_RANK];
    cml_window_config_t sum;
    memset(&sum, 0, sizeof sum);
    sum.rank = rank;
    cml_shape_t padded = source.shape;
    for (int32_t i = 0; i < rank; ++i) {
      int64_t wd = w->window_dims[i], s = w->strides[i];
      int64_t m = source.shape.dims[i], dim = operand.shape.dims[i];
      int64_t dilated = m > 0 ? (m - 1) * s + 1 : 0;
      low[i] = wd - 1 - w->padding_low[i];
      high[i] = dim + wd - 1 - low[i] - dilated;
      interior[i] = s - 1;
      padded.dims[i] = dim + wd - 1;
      sum.window_dims[i] = wd;
      sum.strides[i] = 1;
      sum.input_dilations[i] = 1;
      sum.window_dilations[i] = 1;
    }
    const cml__shlo_val_t zero = cml__shlo_const_scalar(c, dt, CML__SHLO_ZERO);
    cml__shlo_val_t p = cml__shlo_pad(c, &source, &zero, low, high, interior, &padded);
    cml__shlo_val_t r =
        cml_shlo_reduce_window_op(c, &p, "stablehlo.add", CML__SHLO_ZERO, &sum, out);
    cml_shlo_bind1(c, n, &r);
    return CML_OK;
  }
  if (operand.shape.rank == 0) {
    // One element, one window: the source lands on it (XLA's CPU compiler aborts the process on
    // a rank-0 select_and_scatter: "parameter number 1 already allocated").
    cml_shlo_bind1(c, n, &source);
    return CML_OK;
  }
  bool is_max = n->op == CML_OP_SELECT_AND_SCATTER_MAX;
  cml__shlo_val_t ins[3];
  ins[0] = operand;
  ins[1] = source;
  ins[2] = cml__shlo_const_scalar(c, dt, CML__SHLO_ZERO);
  cml__shlo_name_t r = cml__shlo_op_begin(c, "stablehlo.select_and_scatter", ins, 3, 1);
  // Select: keep the current (earlier) element on ties, so the first max/min wins.
  cml__shlo_printf(c, " ({\n");
  c->indent++;
  cml_dtype_t dtypes[2] = {dt, dt};
  cml__shlo_val_t args[2];
  cml__shlo_scalar_header(c, dtypes, 2, args);
  cml__shlo_val_t keep = cml__shlo_compare(c, is_max ? "GE" : "LE", &args[0], &args[1], false);
  cml__shlo_region_return(c, &keep, 1);
  c->indent--;
  cml__shlo_line(c);
  cml__shlo_printf(c, "}, ");
  cml__shlo_binary_region(c, "stablehlo.add", dt);
  cml__shlo_printf(c, ")");
  cml__shlo_attr_t a;
  cml__shlo_attr_init(&a);
  cml_shlo_window_attrs(&a, w, false);
  cml__shlo_op_end(c, a.s, ins, 3, out, 1);
  cml__shlo_bind(c, n->first_output, &r);
  return CML_OK;
}

cml_status_t cml__shlo_emit_window(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  switch (n->op) {
    case CML_OP_REDUCE_WINDOW:
      return cml_shlo_reduce_window(c, n);
    case CML_OP_SELECT_AND_SCATTER_MAX:
    case CML_OP_SELECT_AND_SCATTER_MIN:
    case CML_OP_SELECT_AND_SCATTER_SUM:
      return cml_shlo_select_and_scatter(c, n);
    default:
      return cml__shlo_unimplemented(c, n, "no StableHLO lowering for this op");
  }
}
