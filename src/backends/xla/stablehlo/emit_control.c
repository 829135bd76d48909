// SPDX-License-Identifier: Apache-2.0
// src/backends/xla/stablehlo/emit_control.c: StableHLO lowerings of the "control" ops that are
// not control flow: OptimizationBarrier and SchedulingBarrier. (Call, While, If and Sort have
// regions and are emitted by emitter.c.)
//
// Notes on semantics:
// - SchedulingBarrier is an optimization_barrier over (x, deps...) whose first result is used.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/xla/stablehlo/emit_internal.h"

static cml_status_t cml_shlo_barrier(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  cml__shlo_val_t* ins = malloc(n->input_count * sizeof *ins + 1);
  cml_shape_t* outs = malloc(n->input_count * sizeof *outs + 1);
  if (!ins || !outs) {
    free(ins);
    free(outs);
    return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  }
  for (uint32_t i = 0; i < n->input_count; ++i) {
    ins[i] = cml__shlo_value(c, n->inputs[i]);
    outs[i] = ins[i].shape;
  }
  // SchedulingBarrier(x, deps...) returns the first result only: x, ordered after the deps.
  cml__shlo_name_t r = cml__shlo_op_begin(c, "stablehlo.optimization_barrier", ins,
                                          (int)n->input_count, n->input_count);
  cml__shlo_op_end(c, NULL, ins, (int)n->input_count, outs, n->input_count);
  for (uint32_t i = 0; i < n->output_count; ++i) {
    cml__shlo_name_t name = n->input_count == 1 ? r : cml__shlo_result(&r, i);
    cml__shlo_bind(c, n->first_output + i, &name);
  }
  free(ins);
  free(outs);
  return CML_OK;
}

cml_status_t cml__shlo_emit_control(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  switch (n->op) {
    case CML_OP_OPTIMIZATION_BARRIER:
    case CML_OP_SCHEDULING_BARRIER:
      return cml_shlo_barrier(c, n);
    default:
      return cml__shlo_unimplemented(c, n, "no StableHLO lowering for this op");
  }
}
