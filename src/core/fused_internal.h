// SPDX-License-Identifier: Apache-2.0
// src/core/fused_internal.h: what src/core/fused.c shares with the quantized fused ops
// (src/core/fused_quant.c). Not a public header.
#ifndef CML_CORE_FUSED_INTERNAL_H_
#define CML_CORE_FUSED_INTERNAL_H_

#include "cml/fused.h"
#include "cml/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

// |activation| applied to |y| (of float dtype |dtype|) in standard ops, as FusedDense's
// decomposition does it (Gelu: the exact erf form). NONE returns |y|.
cml_value_t cml__fused_activation_ops(cml_function_t* f, cml_value_t y, cml_dtype_t dtype,
                                      cml_activation_t activation);

// cml_op_fused_sdpa and cml_op_fused_attention_qkv_projection with |allow_native| false: the
// decomposition into standard ops even when the backend advertises the op (the VJP rules
// differentiate it). With |allow_native| false and |out_states| not NULL, the attention's
// decomposition also writes the native node's logsumexp state (output 1), computed in standard
// ops, to out_states[0] (the public builder, |allow_native| true, reports no state when it
// decomposes).
cml_value_t cml__fused_sdpa_build(cml_function_t* f, cml_value_t q, cml_value_t k, cml_value_t v,
                                  cml_attention_layout_t layout, const cml_sdpa_config_t* config,
                                  cml_value_t* out_states, size_t* out_state_count,
                                  bool allow_native);
bool cml__fused_qkv_build(cml_function_t* f, cml_value_t x, cml_value_t w_qkv, cml_value_t bias_q,
                          cml_value_t bias_k, cml_value_t bias_v, int64_t query_dim, int64_t kv_dim,
                          cml_value_t out_values[3], bool allow_native);
// cml_op_fused_quantized_dense likewise (src/core/fused_quant.c).
cml_value_t cml__fused_quantized_dense_build(cml_function_t* f, cml_value_t x, cml_value_t weights,
                                             cml_value_t bias,
                                             const cml_quantization_t* quantization,
                                             cml_activation_t activation, bool allow_native);

// FusedScaledDotProductAttentionVJP: (dq, dk, dv) of the native FusedScaledDotProductAttention
// node |fwd| (its output and logsumexp state) for the output cotangent |dout|. Adds one node and
// returns true when the backend advertises the op; false (nothing added, no error) otherwise.
bool cml__fused_sdpa_vjp(cml_function_t* f, const cml_ir_node_t* fwd, cml_value_t dout,
                         cml_value_t out_grads[3]);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_CORE_FUSED_INTERNAL_H_
