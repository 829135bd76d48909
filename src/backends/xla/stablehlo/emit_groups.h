// SPDX-License-Identifier: Apache-2.0
// src/backends/xla/stablehlo/emit_groups.h: which ops.def groups the StableHLO emitter lowers;
// the xla backend's capabilities are read from it (src/backends/xla/backend.c).
#ifndef CML_BACKENDS_XLA_STABLEHLO_EMIT_GROUPS_H_
#define CML_BACKENDS_XLA_STABLEHLO_EMIT_GROUPS_H_

#include "cml/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

// True when the emitter has a lowering for every op of |group| (every dtype of each op's ops.def
// dtype set that the plugin supports; tests/unit/op_table_test.c checks it op by op).
bool cml_xla_emit_lowers_group(cml_op_group_t group);

// Sets in |caps| every op the emitter lowers.
void cml_xla_emit_capabilities(cml_capabilities_t* caps);

#ifdef __cplusplus
}
#endif

#endif  // CML_BACKENDS_XLA_STABLEHLO_EMIT_GROUPS_H_
