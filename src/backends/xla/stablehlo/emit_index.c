// SPDX-License-Identifier: Apache-2.0
// src/backends/xla/stablehlo/emit_index.c: StableHLO lowerings of the "index" ops
// (DynamicSlice, DynamicUpdateSlice, Gather, the Scatter* ops).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/xla/stablehlo/emit_internal.h"

// Start indices (or scatter indices) of an unsigned dtype as Int64, with the same meaning: XLA's
// constant folders read constant unsigned indices as signed (a U32 start of 2^32 - 1 sliced from
// 0, where it is clamped to the end). U8 / U16 / U32 convert exactly; U64 values of 2^63 and more
// are held at 2^63 - 1 first (the ops clamp or skip both alike), using only a logical shift, an
// equality and a select on the u64 values, which XLA folds correctly. Other dtypes: unchanged.
static cml__shlo_val_t cml_shlo_signed_indices(cml__shlo_ctx_t* c, const cml__shlo_val_t* v) {
  const cml_shape_t* is = &v->shape;
  const cml_shape_t signed_shape = cml_shlo_retype(is, CML_DTYPE_I64);
  switch (is->dtype) {
    case CML_DTYPE_U8:
    case CML_DTYPE_U16:
    case CML_DTYPE_U32:
      return cml__shlo_op(c, "stablehlo.convert", v, 1, NULL, &signed_shape);
    case CML_DTYPE_U64:
      break;
    default:
      return *v;
  }
  const cml_shape_t scalar = cml_shape_scalar(CML_DTYPE_U64);
  const uint64_t k63 = 63, k0 = 0, cap = (uint64_t)INT64_MAX;
  cml__shlo_val_t c63 = cml__shlo_constant(c, &scalar, &k63);
  cml__shlo_val_t c0 = cml__shlo_constant(c, &scalar, &k0);
  cml__shlo_val_t ccap = cml__shlo_constant(c, &scalar, &cap);
  cml__shlo_val_t shift[2] = {*v, cml__shlo_broadcast(c, &c63, is)};
  cml__shlo_val_t top = cml__shlo_op(c, "stablehlo.shift_right_logical", shift, 2, NULL, is);
  cml__shlo_val_t zeros = cml__shlo_broadcast(c, &c0, is);
  cml__shlo_val_t big = cml__shlo_compare(c, "NE", &top, &zeros, false);
  cml__shlo_val_t sel[3] = {big, cml__shlo_broadcast(c, &ccap, is), *v};
  cml__shlo_val_t held = cml__shlo_op(c, "stablehlo.select", sel, 3, NULL, is);
  return cml__shlo_op(c, "stablehlo.convert", &held, 1, NULL, &signed_shape);
}

// Scatter indices, as cml_shlo_signed_indices makes them, with Int8 / Int16 as Int32: XLA's CPU
// runtime checks a scatter window's bounds in the index dtype, and skipped in-range updates
// when an operand axis minus the window was larger than the dtype's maximum (a Uint8 index of
// 130 into [257], an Int8 row index of [2, 300] with windows of 100 columns).
static cml__shlo_val_t cml_shlo_scatter_indices(cml__shlo_ctx_t* c, const cml__shlo_val_t* v) {
  if (v->shape.dtype != CML_DTYPE_I8 && v->shape.dtype != CML_DTYPE_I16) {
    return cml_shlo_signed_indices(c, v);
  }
  const cml_shape_t wide = cml_shlo_retype(&v->shape, CML_DTYPE_I32);
  return cml__shlo_op(c, "stablehlo.convert", v, 1, NULL, &wide);
}

static cml_status_t cml_shlo_gather(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  const cml_gather_dims_t* g = &n->attrs->u.gather;
  cml__shlo_val_t ins[2] = {cml__shlo_value(c, n->inputs[0]), cml__shlo_value(c, n->inputs[1])};
  ins[1] = cml_shlo_signed_indices(c, &ins[1]);
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
  ins[1] = cml_shlo_scatter_indices(c, &ins[1]);
  // Under Shardy the indices are replicated: XLA's partitioner added updates twice when they
  // were a Slice of a split tensor (a sum of 64 for 48 ones), and ended the process on the
  // gradient of a Gather whose indices came from a split parameter.
  ins[1] = cml__shlo_replicate_axes(c, &ins[1], ~(uint64_t)0);
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

// A scalar constant |v| of the integer |dtype| (|v| fits it).
static cml__shlo_val_t cml_shlo_int_scalar(cml__shlo_ctx_t* c, cml_dtype_t dtype, int64_t v) {
  unsigned char bytes[8] = {0};
  switch (cml_dtype_bits(dtype)) {
    case 8:
      bytes[0] = (unsigned char)v;
      break;
    case 16: {
      const uint16_t w = (uint16_t)v;
      memcpy(bytes, &w, 2);
      break;
    }
    case 32: {
      const uint32_t w = (uint32_t)v;
      memcpy(bytes, &w, 4);
      break;
    }
    default:
      memcpy(bytes, &v, 8);
      break;
  }
  const cml_shape_t s = cml_shape_scalar(dtype);
  return cml__shlo_constant(c, &s, bytes);
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
      // Unsigned starts as Int64 (cml_shlo_signed_indices); then every start is Int64, as
      // StableHLO wants one dtype for all of them.
      const uint32_t first = n->op == CML_OP_DYNAMIC_SLICE ? 1 : 2;
      bool any_unsigned = false;
      for (uint32_t k = first; k < n->input_count; ++k) {
        any_unsigned = any_unsigned || cml_dtype_is_unsigned_int(ins[k].shape.dtype);
      }
      for (uint32_t k = first; any_unsigned && k < n->input_count; ++k) {
        ins[k] = cml_shlo_signed_indices(c, &ins[k]);
        if (ins[k].shape.dtype != CML_DTYPE_I64) {
          const cml_shape_t s64 = cml_shlo_retype(&ins[k].shape, CML_DTYPE_I64);
          ins[k] = cml__shlo_op(c, "stablehlo.convert", &ins[k], 1, NULL, &s64);
        }
      }
      if (cml_xla_emit_is_sharded(c->module)) {
        // Under Shardy the start indices are clamped here, as the ops define them: XLA's
        // partitioned dynamic_slice skips the clamp when the result is sharded along the sliced
        // axis (start 13 of 16 with size 4 read rows 13..16, not 12..15), and its partitioned
        // dynamic_update_slice lost the update at a negative start (-1 on an axis the result
        // is split along: no element of the update written).
        const cml_shape_t* xs = &ins[0].shape;
        const cml_shape_t* window = n->op == CML_OP_DYNAMIC_SLICE ? out : &ins[1].shape;
        for (uint32_t k = first; k < n->input_count && (int32_t)(k - first) < xs->rank; ++k) {
          const cml_dtype_t dt = ins[k].shape.dtype;
          const int64_t limit = xs->dims[k - first] - window->dims[k - first];
          const cml__shlo_val_t bounds[3] = {cml_shlo_int_scalar(c, dt, 0), ins[k],
                                             cml_shlo_int_scalar(c, dt, limit < 0 ? 0 : limit)};
          ins[k] = cml__shlo_op(c, "stablehlo.clamp", bounds, 3, NULL, &ins[k].shape);
        }
      }
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
