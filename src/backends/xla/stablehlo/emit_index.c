// SPDX-License-Identifier: Apache-2.0
// src/backends/xla/stablehlo/emit_index.c: StableHLO lowerings of the "index" ops
// (DynamicSlice, DynamicUpdateSlice, Gather, the Scatter* ops).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/xla/stablehlo/emit_internal.h"

static cml_status_t cml_shlo_gather(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  const cml_gather_dims_t* g = &n->attrs->u.gather;
  cml__shlo_val_t ins[2] = {cml__shlo_value(c, n->inputs[0]), cml__shlo_value(c, n->inputs[1])};
  cml__shlo_attr_t a;
  cml__shlo_attr_init(&a);
  cml__shlo_attr_printf(&a, "dimension_numbers = #stablehlo.gather<");
  if (g->offset_output_axis_count) {
    cml__shlo_attr_printf(&a, "offset_dims = ");
    cml__shlo_attr_list(&a, g->offset_output_axes, g->offset_output_axis_count);
    cml__shlo_attr_printf(&a, ", ");
  }
  if (g->collapsed_slice_axis_count) {
    cml__shlo_attr_printf(&a, "collapsed_slice_dims = ");
    cml__shlo_attr_list(&a, g->collapsed_slice_axes, g->collapsed_slice_axis_count);
    cml__shlo_attr_printf(&a, ", ");
  }
  if (g->start_index_map_count) {
    cml__shlo_attr_printf(&a, "start_index_map = ");
    cml__shlo_attr_list(&a, g->start_index_map, g->start_index_map_count);
    cml__shlo_attr_printf(&a, ", ");
  }
  cml__shlo_attr_printf(
      &a, "index_vector_dim = %lld>, slice_sizes = ", (long long)g->index_vector_axis);
  cml__shlo_attr_array(&a, g->slice_sizes, g->slice_size_count);
  cml__shlo_attr_printf(&a, ", indices_are_sorted = %s", g->indices_are_sorted ? "true" : "false");
  cml__shlo_val_t r = cml__shlo_op(c, "stablehlo.gather", ins, 2, a.s, cml_shlo_out(c, n, 0));
  cml_shlo_bind1(c, n, &r);
  return CML_OK;
}

static cml_status_t cml_shlo_scatter(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  const cml_scatter_dims_t* s = &n->attrs->u.scatter;
  cml__shlo_val_t ins[3] = {cml__shlo_value(c, n->inputs[0]), cml__shlo_value(c, n->inputs[1]),
                            cml__shlo_value(c, n->inputs[2])};
  const char* body = n->op == CML_OP_SCATTER_MAX   ? "stablehlo.maximum"
                     : n->op == CML_OP_SCATTER_MIN ? "stablehlo.minimum"
                                                   : "stablehlo.add";
  // A float max/min combiner in a module Shardy partitions runs on order keys
  // (emit_internal.h): XLA's partitioner may combine the devices' scatters with an all-reduce of
  // the combiner, which compiles only for a plain region.
  const cml_dtype_t dtype = ins[0].shape.dtype;
  const bool keyed = n->op != CML_OP_SCATTER_SUM && cml_dtype_is_float(dtype) &&
                     cml_xla_emit_is_sharded(c->module);
  if (keyed) {
    ins[0] = cml__shlo_order_key(c, &ins[0], n->op == CML_OP_SCATTER_MAX);
    ins[2] = cml__shlo_order_key(c, &ins[2], n->op == CML_OP_SCATTER_MAX);
  }
  cml_shape_t out = cml_shlo_retype(cml_shlo_out(c, n, 0), ins[0].shape.dtype);
  cml__shlo_name_t r = cml__shlo_op_begin(c, "stablehlo.scatter", ins, 3, 1);
  cml__shlo_printf(c, " (");
  cml__shlo_binary_region(c, body, ins[0].shape.dtype);
  cml__shlo_printf(c, ")");
  cml__shlo_attr_t a;
  cml__shlo_attr_init(&a);
  cml__shlo_attr_printf(&a, "scatter_dimension_numbers = #stablehlo.scatter<");
  if (s->update_window_axis_count) {
    cml__shlo_attr_printf(&a, "update_window_dims = ");
    cml__shlo_attr_list(&a, s->update_window_axes, s->update_window_axis_count);
    cml__shlo_attr_printf(&a, ", ");
  }
  if (s->inserted_window_axis_count) {
    cml__shlo_attr_printf(&a, "inserted_window_dims = ");
    cml__shlo_attr_list(&a, s->inserted_window_axes, s->inserted_window_axis_count);
    cml__shlo_attr_printf(&a, ", ");
  }
  if (s->scatter_axes_to_operand_axes_count) {
    cml__shlo_attr_printf(&a, "scatter_dims_to_operand_dims = ");
    cml__shlo_attr_list(&a, s->scatter_axes_to_operand_axes, s->scatter_axes_to_operand_axes_count);
    cml__shlo_attr_printf(&a, ", ");
  }
  cml__shlo_attr_printf(&a,
                        "index_vector_dim = %lld>, indices_are_sorted = %s, "
                        "unique_indices = %s",
                        (long long)s->index_vector_axis, s->indices_are_sorted ? "true" : "false",
                        s->unique_indices ? "true" : "false");
  cml__shlo_op_end(c, a.s, ins, 3, &out, 1);
  cml__shlo_val_t res = {.name = r, .shape = out};
  if (keyed) res = cml__shlo_from_order_key(c, &res, dtype);
  cml_shlo_bind1(c, n, &res);
  return CML_OK;
}

cml_status_t cml__shlo_emit_index(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  const cml_shape_t* out = cml_shlo_out(c, n, 0);
  cml__shlo_attr_t a;
  cml__shlo_attr_init(&a);
  cml__shlo_val_t r;
  switch (n->op) {
    case CML_OP_DYNAMIC_SLICE:
    case CML_OP_DYNAMIC_UPDATE_SLICE: {
      cml__shlo_val_t* ins = malloc(n->input_count * sizeof *ins + 1);
      if (!ins) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
      for (uint32_t k = 0; k < n->input_count; ++k) ins[k] = cml__shlo_value(c, n->inputs[k]);
      if (n->op == CML_OP_DYNAMIC_SLICE) {
        cml__shlo_attr_printf(&a, "slice_sizes = ");
        cml__shlo_attr_array(&a, out->dims, out->rank);
        r = cml__shlo_op(c, "stablehlo.dynamic_slice", ins, (int)n->input_count, a.s, out);
      } else {
        r = cml__shlo_op(c, "stablehlo.dynamic_update_slice", ins, (int)n->input_count, NULL, out);
      }
      free(ins);
      break;
    }
    case CML_OP_GATHER:
      return cml_shlo_gather(c, n);
    case CML_OP_SCATTER_SUM:
    case CML_OP_SCATTER_MAX:
    case CML_OP_SCATTER_MIN:
      return cml_shlo_scatter(c, n);
    default:
      return cml__shlo_unimplemented(c, n, "no StableHLO lowering for this op");
  }
  cml_shlo_bind1(c, n, &r);
  return CML_OK;
}
