// SPDX-License-Identifier: Apache-2.0
// src/backends/xla/stablehlo/emit_movement.c: StableHLO lowerings of the "movement" ops
// (Reshape, Transpose, BroadcastInDim, Concatenate, Slice, Reverse, Pad).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/xla/stablehlo/emit_internal.h"

cml_status_t cml__shlo_emit_movement(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  const cml_ir_attrs_t* at = n->attrs;
  const cml_shape_t* out = cml_shlo_out(c, n, 0);
  cml__shlo_attr_t a;
  cml__shlo_attr_init(&a);
  cml__shlo_val_t r;
  switch (n->op) {
    case CML_OP_RESHAPE: {
      cml__shlo_val_t x = cml__shlo_value(c, n->inputs[0]);
      r = cml__shlo_op(c, "stablehlo.reshape", &x, 1, NULL, out);
      break;
    }
    case CML_OP_TRANSPOSE: {
      cml__shlo_val_t x = cml__shlo_value(c, n->inputs[0]);
      cml__shlo_attr_printf(&a, "permutation = ");
      cml__shlo_attr_array(&a, at->axes, at->axis_count);
      r = cml__shlo_op(c, "stablehlo.transpose", &x, 1, a.s, out);
      break;
    }
    case CML_OP_BROADCAST_IN_DIM: {
      cml__shlo_val_t x = cml__shlo_value(c, n->inputs[0]);
      cml__shlo_attr_printf(&a, "broadcast_dimensions = ");
      cml__shlo_attr_array(&a, at->axes, at->axis_count);
      r = cml__shlo_op(c, "stablehlo.broadcast_in_dim", &x, 1, a.s, out);
      break;
    }
    case CML_OP_CONCATENATE: {
      cml__shlo_val_t* ins = malloc(n->input_count * sizeof *ins + 1);
      if (!ins) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
      for (uint32_t k = 0; k < n->input_count; ++k) ins[k] = cml__shlo_value(c, n->inputs[k]);
      cml__shlo_attr_printf(&a, "dimension = %lld : i64", (long long)at->axis);
      r = cml__shlo_op(c, "stablehlo.concatenate", ins, (int)n->input_count, a.s, out);
      free(ins);
      break;
    }
    case CML_OP_SLICE: {
      cml__shlo_val_t x = cml__shlo_value(c, n->inputs[0]);
      r = cml__shlo_slice(c, &x, at->starts, at->limits, at->strides, out);
      break;
    }
    case CML_OP_REVERSE: {
      cml__shlo_val_t x = cml__shlo_value(c, n->inputs[0]);
      cml__shlo_attr_printf(&a, "dimensions = ");
      cml__shlo_attr_array(&a, at->axes, at->axis_count);
      r = cml__shlo_op(c, "stablehlo.reverse", &x, 1, a.s, out);
      break;
    }
    case CML_OP_PAD: {
      cml__shlo_val_t ins[2] = {cml__shlo_value(c, n->inputs[0]), cml__shlo_value(c, n->inputs[1])};
      int32_t rank = ins[0].shape.rank;
      int64_t low[CML_MAX_RANK], high[CML_MAX_RANK], interior[CML_MAX_RANK];
      for (int32_t i = 0; i < rank; ++i) {
        low[i] = at->pads[i].low;
        high[i] = at->pads[i].high;
        interior[i] = at->pads[i].interior;
      }
      r = cml__shlo_pad(c, &ins[0], &ins[1], low, high, interior, out);
      break;
    }
    default:
      return cml__shlo_unimplemented(c, n, "no StableHLO lowering for this op");
  }
  cml_shlo_bind1(c, n, &r);
  return CML_OK;
}
