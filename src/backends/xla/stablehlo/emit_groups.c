// SPDX-License-Identifier: Apache-2.0
// src/backends/xla/stablehlo/emit_groups.c: the emitter's lowering table by ops.def group.
// emit_<group>.c lowers the ops of each of these groups (one case, or one kind-wide rule, per
// op; emit_ops.c dispatches by group); the backend advertises exactly them.
//
// Thread-safety: reads a constant table; thread-safe.
#include "backends/xla/stablehlo/emit_groups.h"

static const bool cml_xla_lowered_groups[CML_OPG_COUNT] = {
    [CML_OPG_SOURCE] = true,     [CML_OPG_ELEMENTWISE] = true, [CML_OPG_REDUCE] = true,
    [CML_OPG_MOVEMENT] = true,   [CML_OPG_INDEX] = true,       [CML_OPG_WINDOW] = true,
    [CML_OPG_LINALG] = true,     [CML_OPG_SPECIAL] = true,     [CML_OPG_CONTROL] = true,
    [CML_OPG_FUSED] = false,      // decomposed by the builder into standard ops
    [CML_OPG_COLLECTIVE] = true,  // SPMD modules (emit_collective.c)
    [CML_OPG_DYNAMIC] = false,    // dynamic shapes: UNIMPLEMENTED everywhere
    [CML_OPG_INTERNAL] = false,
};

bool cml_xla_emit_lowers_group(cml_op_group_t group) {
  return (int)group >= 0 && group < CML_OPG_COUNT && cml_xla_lowered_groups[group];
}

void cml_xla_emit_capabilities(cml_capabilities_t* caps) {
  for (int op = 1; op < CML_OP_COUNT; ++op) {
    if (cml_xla_emit_lowers_group(cml_op_group((cml_op_t)op))) {
      cml_capabilities_set_op(caps, (cml_op_t)op, true);
    }
  }
}
