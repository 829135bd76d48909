// SPDX-License-Identifier: Apache-2.0
// src/backends/c/dispatch.c: the c backend's op table. One row per ops.def group says who runs
// the group's ops: a kernel group (its lookup and its capability function, both in
// kernels/generic/<group>*.c) or the engine itself (sources, control flow, barriers). The
// planner's kernel lookup and the backend's capability table both read these rows, so the
// backend advertises an op exactly when its group has a way to run it.
//
// Thread-safety: everything here reads constant tables; thread-safe.
#include "backends/c/engine_internal.h"
#include "backends/c/kernels/generic/quant_internal.h"

typedef struct cmlc_group_row_t {
  cmlc_group_lookup_fn lookup;                     // the kernel group; NULL: none
  void (*capabilities)(cml_capabilities_t* caps);  // ops of the group it runs
  bool engine;                                     // the engine runs every op of the group
} cmlc_group_row_t;

// The fused group's kernels: the float fused ops, then the quantized ones (quant.c).
static bool cmlc_dispatch_fused_lookup(const cml_module_t* module, const cml_ir_node_t* node,
                                       const cmlc_options_t* options, cmlc_kernel_entry_t* out) {
  return cmlc_kernels_fused_lookup(module, node, options, out) ||
         cmlc_kernels_quant_lookup(module, node, options, out);
}

static const cmlc_group_row_t cmlc_group_rows[CML_OPG_COUNT] = {
    [CML_OPG_SOURCE] = {.engine = true},  // Parameter, Constant, CapturedValue
    [CML_OPG_ELEMENTWISE] = {.lookup = cmlc_kernels_elementwise_lookup,
                             .capabilities = cmlc_kernels_elementwise_capabilities},
    [CML_OPG_REDUCE] = {.lookup = cmlc_kernels_reduce_lookup,
                        .capabilities = cmlc_kernels_reduce_capabilities},
    [CML_OPG_MOVEMENT] = {.lookup = cmlc_kernels_movement_lookup,
                          .capabilities = cmlc_kernels_movement_capabilities},
    [CML_OPG_INDEX] = {.lookup = cmlc_kernels_index_lookup,
                       .capabilities = cmlc_kernels_index_capabilities},
    [CML_OPG_WINDOW] = {.lookup = cmlc_kernels_window_lookup,
                        .capabilities = cmlc_kernels_window_capabilities},
    [CML_OPG_LINALG] = {.lookup = cmlc_kernels_linalg_lookup,
                        .capabilities = cmlc_kernels_linalg_capabilities},
    [CML_OPG_SPECIAL] = {.lookup = cmlc_kernels_special_lookup,
                         .capabilities = cmlc_kernels_special_capabilities},
    // Call, While, If: engine steps; Sort: cmlc_sort_run; the barriers: aliases.
    [CML_OPG_CONTROL] = {.engine = true},
    // Advertised by their own tables, depending on the options (cmlc_kernels_fused_capabilities,
    // cmlc_kernels_quant_capabilities).
    [CML_OPG_FUSED] = {.lookup = cmlc_dispatch_fused_lookup, .capabilities = NULL},
    // Collectives over the SPMD rendezvous (spmd.c), ReplicaId and PartitionId.
    [CML_OPG_COLLECTIVE] = {.lookup = cmlc_kernels_collective_lookup,
                            .capabilities = cmlc_kernels_collective_capabilities},
};

bool cmlc_dispatch_lookup(const cml_module_t* module, const cml_ir_node_t* node,
                          const cmlc_options_t* options, cmlc_kernel_entry_t* out) {
  const cml_op_group_t group = cml_op_group(node->op);
  if ((int)group < 0 || group >= CML_OPG_COUNT || !cmlc_group_rows[group].lookup) return false;
  return cmlc_group_rows[group].lookup(module, node, options, out);
}

void cmlc_dispatch_capabilities(cml_capabilities_t* caps, const cmlc_options_t* options) {
  for (int g = 0; g < CML_OPG_COUNT; ++g) {
    const cmlc_group_row_t* row = &cmlc_group_rows[g];
    if (row->capabilities) row->capabilities(caps);
    if (row->engine) cmlc_kernels_group_capabilities(caps, (cml_op_group_t)g);
  }
  cmlc_kernels_fused_capabilities(caps, options);
  cmlc_kernels_quant_capabilities(caps, options);
}
