// SPDX-License-Identifier: Apache-2.0
// kernels/generic/fused_attention.h: the native FusedScaledDotProductAttention kernel's entry
// points, for the fused group's lookup table (kernels/generic/fused.c).
#ifndef CML_BACKENDS_C_KERNELS_GENERIC_FUSED_ATTENTION_H_
#define CML_BACKENDS_C_KERNELS_GENERIC_FUSED_ATTENTION_H_

#include <stdbool.h>
#include <stddef.h>

#include "backends/c/cmlc.h"

// Runs the node (inputs q, k, v, then the optional mask, bias, query_seq_len, kv_seq_len as
// attrs->fused.optional_inputs says) with the tiled online-softmax kernel.
cml_status_t cmlc__fa_run(const cmlc_kernel_args_t* args);

// Scratch bytes of the node: one tile workspace per thread, independent of the sequences.
size_t cmlc__fa_scratch(const cml_module_t* module, const cml_ir_node_t* node,
                        const cmlc_options_t* options);

// True when the kernel handles the node (any float dtype, Bool or same-dtype masks, Int32
// lengths, both layouts); the builder already checked shapes.
bool cmlc__fa_valid(const cml_module_t* module, const cml_ir_node_t* node);

#endif  // CML_BACKENDS_C_KERNELS_GENERIC_FUSED_ATTENTION_H_
