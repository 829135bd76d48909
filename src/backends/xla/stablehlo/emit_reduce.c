// SPDX-License-Identifier: Apache-2.0
// src/backends/xla/stablehlo/emit_reduce.c: StableHLO lowerings of the "reduce" ops (the
// Reduce* ops, ArgMinMax).
//
// Notes on semantics:
// - ArgMinMax is a variadic reduce over (value, iota index): NaN wins, ties pick the first
//   index; the reducer is commutative so XLA may combine partial results in any order.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/xla/stablehlo/emit_internal.h"

// Body op and init value of a reduction op.
static bool cml_shlo_reduce_kind(cml_op_t op, const char** body, cml__shlo_scalar_kind_t* init) {
  switch (op) {
    case CML_OP_REDUCE_SUM:
      *body = "stablehlo.add";
      *init = CML__SHLO_ZERO;
      return true;
    case CML_OP_REDUCE_PRODUCT:
      *body = "stablehlo.multiply";
      *init = CML__SHLO_ONE;
      return true;
    case CML_OP_REDUCE_MAX:
      *body = "stablehlo.maximum";
      *init = CML__SHLO_LOWEST;
      return true;
    case CML_OP_REDUCE_MIN:
      *body = "stablehlo.minimum";
      *init = CML__SHLO_HIGHEST;
      return true;
    case CML_OP_REDUCE_BITWISE_AND:
    case CML_OP_REDUCE_LOGICAL_AND:
      *body = "stablehlo.and";
      *init = CML__SHLO_ALL_ONES;
      return true;
    case CML_OP_REDUCE_BITWISE_OR:
    case CML_OP_REDUCE_LOGICAL_OR:
      *body = "stablehlo.or";
      *init = CML__SHLO_ZERO;
      return true;
    case CML_OP_REDUCE_BITWISE_XOR:
    case CML_OP_REDUCE_LOGICAL_XOR:
      *body = "stablehlo.xor";
      *init = CML__SHLO_ZERO;
      return true;
    default:
      return false;
  }
}

bool cml__shlo_reduce_type_kind(cml_reduce_type_t type, const char** body,
                                cml__shlo_scalar_kind_t* init) {
  switch (type) {
    case CML_REDUCE_SUM:
      return cml_shlo_reduce_kind(CML_OP_REDUCE_SUM, body, init);
    case CML_REDUCE_PRODUCT:
      return cml_shlo_reduce_kind(CML_OP_REDUCE_PRODUCT, body, init);
    case CML_REDUCE_MAX:
      return cml_shlo_reduce_kind(CML_OP_REDUCE_MAX, body, init);
    case CML_REDUCE_MIN:
      return cml_shlo_reduce_kind(CML_OP_REDUCE_MIN, body, init);
    default:
      return false;
  }
}

// A float max/min reduction in a module that Shardy partitions: Shardy copies the reduction's
// region into the all-reduce that combines the devices' partial results, and XLA compiles an
// all-reduce only for a plain region, so the reduction runs on order keys (emit_internal.h)
// with an integer max/min region and is decoded after it.
static cml_status_t cml_shlo_reduce_keyed(cml__shlo_ctx_t* c, const cml_ir_node_t* n,
                                          const cml__shlo_val_t* x, const char* body,
                                          cml__shlo_scalar_kind_t init_kind) {
  const cml_dtype_t dtype = x->shape.dtype;
  const bool is_max = n->op == CML_OP_REDUCE_MAX;
  cml__shlo_val_t ins[2];
  ins[0] = cml__shlo_order_key(c, x, is_max);
  cml__shlo_val_t init = cml__shlo_const_scalar(c, dtype, init_kind);
  ins[1] = cml__shlo_order_key(c, &init, is_max);
  const cml_dtype_t kt = ins[0].shape.dtype;
  cml__shlo_val_t r;
  r.shape = cml_shlo_retype(cml_shlo_out(c, n, 0), kt);
  r.name = cml__shlo_op_begin(c, "stablehlo.reduce", ins, 2, 1);
  cml__shlo_printf(c, " (");
  cml__shlo_binary_region(c, body, kt);
  cml__shlo_printf(c, ")");
  cml__shlo_attr_t a;
  cml__shlo_attr_init(&a);
  cml__shlo_attr_printf(&a, "dimensions = ");
  cml__shlo_attr_array(&a, n->attrs->axes, n->attrs->axis_count);
  cml__shlo_op_end(c, a.s, ins, 2, &r.shape, 1);
  r = cml__shlo_from_order_key(c, &r, dtype);
  cml_shlo_bind1(c, n, &r);
  return CML_OK;
}

static cml_status_t cml_shlo_reduce(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  const char* body;
  cml__shlo_scalar_kind_t init_kind;
  if (!cml_shlo_reduce_kind(n->op, &body, &init_kind)) {
    return cml__shlo_unimplemented(c, n, "not a reduction");
  }
  cml__shlo_val_t ins[2];
  ins[0] = cml__shlo_value(c, n->inputs[0]);
  const bool minmax = n->op == CML_OP_REDUCE_MAX || n->op == CML_OP_REDUCE_MIN;
  if (minmax && cml_dtype_is_float(ins[0].shape.dtype) && cml_xla_emit_is_sharded(c->module)) {
    return cml_shlo_reduce_keyed(c, n, &ins[0], body, init_kind);
  }
  // Float16/BFloat16 sums and products accumulate in Float32 and round once, as on the c
  // backend: XLA's CUDA compiler otherwise keeps Float16 partial products, which overflow and
  // underflow in a tree order (inf * 0 = NaN where the exact product is 2).
  const cml_dtype_t dtype = ins[0].shape.dtype;
  const bool widen =
      cml__shlo_is_half(dtype) && (n->op == CML_OP_REDUCE_SUM || n->op == CML_OP_REDUCE_PRODUCT);
  if (widen) ins[0] = cml__shlo_convert(c, &ins[0], CML_DTYPE_F32);
  ins[1] = cml__shlo_const_scalar(c, ins[0].shape.dtype, init_kind);
  const cml_shape_t wide_out = cml_shlo_retype(cml_shlo_out(c, n, 0), CML_DTYPE_F32);
  const cml_shape_t* out = widen ? &wide_out : cml_shlo_out(c, n, 0);
  cml__shlo_name_t r = cml__shlo_op_begin(c, "stablehlo.reduce", ins, 2, 1);
  cml__shlo_printf(c, " (");
  cml__shlo_binary_region(c, body, ins[0].shape.dtype);
  cml__shlo_printf(c, ")");
  cml__shlo_attr_t a;
  cml__shlo_attr_init(&a);
  cml__shlo_attr_printf(&a, "dimensions = ");
  cml__shlo_attr_array(&a, n->attrs->axes, n->attrs->axis_count);
  cml__shlo_op_end(c, a.s, ins, 2, out, 1);
  if (widen) {
    cml__shlo_val_t wide = {.name = r, .shape = wide_out};
    cml__shlo_val_t narrow = cml__shlo_convert(c, &wide, dtype);
    r = narrow.name;
  }
  cml__shlo_bind(c, n->first_output, &r);
  return CML_OK;
}

static cml_status_t cml_shlo_arg_min_max(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  cml__shlo_val_t x = cml__shlo_value(c, n->inputs[0]);
  cml_dtype_t vt = x.shape.dtype, it = n->attrs->dtype;
  bool is_min = n->attrs->flag;
  bool is_float = cml_dtype_is_float(vt);
  cml_shape_t iota_shape = cml_shlo_retype(&x.shape, it);
  cml__shlo_attr_t a;
  cml__shlo_attr_init(&a);
  cml__shlo_attr_printf(&a, "iota_dimension = %lld : i64", (long long)n->attrs->axis);
  cml__shlo_val_t ins[4];
  ins[0] = x;
  ins[1] = cml__shlo_op(c, "stablehlo.iota", NULL, 0, a.s, &iota_shape);
  ins[2] = cml__shlo_const_scalar(c, vt, is_min ? CML__SHLO_HIGHEST : CML__SHLO_LOWEST);
  ins[3] = cml__shlo_const_scalar(c, it, CML__SHLO_ZERO);
  cml_shape_t outs[2] = {cml_shlo_retype(cml_shlo_out(c, n, 0), vt), *cml_shlo_out(c, n, 0)};
  cml__shlo_name_t r = cml__shlo_op_begin(c, "stablehlo.reduce", ins, 4, 2);
  cml__shlo_printf(c, " ({\n");
  c->indent++;
  // Block args: (acc value, acc index, new value, new index).
  cml_dtype_t dtypes[4] = {vt, it, vt, it};
  cml__shlo_val_t args[4];
  cml__shlo_scalar_header(c, dtypes, 4, args);
  const cml__shlo_val_t *av = &args[0], *ai = &args[1], *bv = &args[2], *bi = &args[3];
  cml_shape_t bool_scalar = cml_shape_scalar(CML_DTYPE_BOOL);
  cml__shlo_val_t better = cml__shlo_compare(c, is_min ? "LT" : "GT", bv, av, false);
  cml__shlo_val_t equal = cml__shlo_compare(c, "EQ", bv, av, false);
  cml__shlo_val_t first = cml__shlo_compare(c, "LT", bi, ai, false);
  cml__shlo_val_t pair[2] = {equal, first};
  cml__shlo_val_t tie = cml__shlo_op(c, "stablehlo.and", pair, 2, NULL, &bool_scalar);
  pair[0] = better;
  pair[1] = tie;
  cml__shlo_val_t pick = cml__shlo_op(c, "stablehlo.or", pair, 2, NULL, &bool_scalar);
  if (is_float) {
    // NaN wins; between two NaNs the first index wins.
    cml__shlo_val_t b_nan = cml__shlo_compare(c, "NE", bv, bv, false);
    cml__shlo_val_t a_nan = cml__shlo_compare(c, "NE", av, av, false);
    cml__shlo_val_t a_num = cml__shlo_op(c, "stablehlo.not", &a_nan, 1, NULL, &bool_scalar);
    pair[0] = b_nan;
    pair[1] = a_num;
    cml__shlo_val_t nan_new = cml__shlo_op(c, "stablehlo.and", pair, 2, NULL, &bool_scalar);
    pair[0] = b_nan;
    pair[1] = a_nan;
    cml__shlo_val_t both = cml__shlo_op(c, "stablehlo.and", pair, 2, NULL, &bool_scalar);
    pair[0] = both;
    pair[1] = first;
    cml__shlo_val_t both_first = cml__shlo_op(c, "stablehlo.and", pair, 2, NULL, &bool_scalar);
    pair[0] = pick;
    pair[1] = nan_new;
    pick = cml__shlo_op(c, "stablehlo.or", pair, 2, NULL, &bool_scalar);
    pair[0] = pick;
    pair[1] = both_first;
    pick = cml__shlo_op(c, "stablehlo.or", pair, 2, NULL, &bool_scalar);
  }
  cml__shlo_val_t sel[3] = {pick, *bv, *av};
  cml__shlo_val_t results[2];
  results[0] = cml__shlo_op(c, "stablehlo.select", sel, 3, NULL, &bv->shape);
  sel[1] = *bi;
  sel[2] = *ai;
  results[1] = cml__shlo_op(c, "stablehlo.select", sel, 3, NULL, &bi->shape);
  cml__shlo_region_return(c, results, 2);
  c->indent--;
  cml__shlo_line(c);
  cml__shlo_printf(c, "})");
  cml__shlo_attr_init(&a);
  cml__shlo_attr_printf(&a, "dimensions = array<i64: %lld>", (long long)n->attrs->axis);
  cml__shlo_op_end(c, a.s, ins, 4, outs, 2);
  cml__shlo_name_t index = cml__shlo_result(&r, 1);
  cml__shlo_bind(c, n->first_output, &index);
  return CML_OK;
}

// The reduce group: the Reduce* ops by kind, and ArgMinMax.
cml_status_t cml__shlo_emit_reduce(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  if (cml_op_kind(n->op) == CML_OPK_REDUCE) return cml_shlo_reduce(c, n);
  switch (n->op) {
    case CML_OP_ARG_MIN_MAX:
      return cml_shlo_arg_min_max(c, n);
    default:
      return cml__shlo_unimplemented(c, n, "no StableHLO lowering for this op");
  }
}
