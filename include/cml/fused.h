// SPDX-License-Identifier: Apache-2.0
// cml/fused.h: fused ops (softmax, layer norm, gelu, dense, attention) that always work.
//
// A fused op is one node when the backend advertises it (its capabilities list the op, e.g.
// CML_OP_FUSED_SOFTMAX), so a backend can run it as one kernel. When the backend lacks it, the
// builder decomposes it on the spot into standard ops (Reduce*, Exp, DotGeneral, ...) with the
// same semantics, so a fused op never fails for lack of support. The C backend advertises
// FusedSoftmax, FusedLayerNorm, FusedGelu and FusedDense unless fusion is off (GOMLX_FUSION=0 or
// the config "c:fusion=false") or it runs its reference kernels ("c:reference=true"); then the
// decomposition runs. The XLA backend advertises none: XLA fuses the decomposition itself.
// Native kernels match the decomposition within a few ulps of the computation dtype (f16 and
// bf16 are computed in f32 and rounded once); see each backend's kernel file for its bounds.
//
// Every builder checks its operands first and fails with INVALID_ARGUMENT naming the op (the
// seed's name, e.g. "FusedLayerNorm"), the shapes and dtypes involved. Operands are float
// arrays (Float16, BFloat16, Float32, Float64) of one dtype. Errors stick to the builder, as for
// every op (cml/graph.h).
//
// Example (a transformer block's feed-forward half):
//
//   cml_function_t* f = cml_builder_main(b);
//   cml_value_t x = cml_parameter(f, "x", &xs);             // [batch, seq, 512]
//   cml_value_t g = cml_parameter(f, "gamma", &ds);         // [512]
//   cml_value_t w1 = cml_parameter(f, "w1", &w1s);          // [512, 2048]
//   cml_value_t w2 = cml_parameter(f, "w2", &w2s);          // [2048, 512]
//   int64_t last = -1;
//   cml_value_t h = cml_op_fused_layer_norm(f, x, &last, 1, 1e-5, g, CML_VALUE_INVALID);
//   cml_dense_config_t dc;
//   cml_dense_config_init(&dc);
//   dc.activation = CML_ACTIVATION_GELU;
//   h = cml_op_fused_dense(f, h, w1, CML_VALUE_INVALID, &dc);  // gelu(h @ w1)
//   h = cml_op_fused_dense(f, h, w2, CML_VALUE_INVALID, NULL); // h @ w2
//   cml_value_t y = cml_op_add(f, x, h);
//
// Thread-safety: as every builder (cml/graph.h): one thread at a time per builder.
#ifndef CML_FUSED_H_
#define CML_FUSED_H_

#include "cml/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

//===--- enums ---===//

// Activations applied by FusedDense (the seed's ActivationType values and names).
typedef enum cml_activation_t {
  CML_ACTIVATION_NONE = 0,        // "none": identity
  CML_ACTIVATION_GELU = 1,        // "gelu": exact, x * 0.5 * (1 + erf(x / sqrt(2)))
  CML_ACTIVATION_RELU = 2,        // "relu": max(x, 0)
  CML_ACTIVATION_SILU = 3,        // "silu": x * logistic(x)
  CML_ACTIVATION_HARD_SWISH = 4,  // "hard_swish": x * clamp(x / 6 + 0.5, 0, 1)
  CML_ACTIVATION_TANH = 5,        // "tanh"
  CML_ACTIVATION_COUNT
} cml_activation_t;

// "none", "gelu", "relu", "silu", "hard_swish", "tanh", or "unknown". Never NULL.
CML_API const char* cml_activation_name(cml_activation_t activation);

// Weight layouts of FusedDense (the seed's DenseLayout values).
typedef enum cml_dense_layout_t {
  CML_DENSE_LAYOUT_INPUT_OUTPUTS = 0,  // W is [in, out...]: y = x @ W
  CML_DENSE_LAYOUT_OUTPUTS_INPUT = 1,  // W is [out..., in]: y = x @ W^T
  CML_DENSE_LAYOUT_COUNT
} cml_dense_layout_t;

// "input_outputs", "outputs_input", or "unknown". Never NULL.
CML_API const char* cml_dense_layout_name(cml_dense_layout_t layout);

// Axis layouts of attention operands (the seed's AttentionAxesLayout values). The head
// dimension is always the last axis.
typedef enum cml_attention_layout_t {
  CML_ATTENTION_LAYOUT_BHSD = 0,  // [batch, heads, seq, head_dim]
  CML_ATTENTION_LAYOUT_BSHD = 1,  // [batch, seq, heads, head_dim]
  CML_ATTENTION_LAYOUT_COUNT
} cml_attention_layout_t;

// "BHSD", "BSHD", or "unknown". Never NULL.
CML_API const char* cml_attention_layout_name(cml_attention_layout_t layout);

//===--- softmax, layer norm, gelu ---===//

// FusedSoftmax: exp(x - max) / sum(exp(x - max)) along |axis| (negative counts from the end),
// max-subtracted so that large inputs do not overflow. Output: x's shape and dtype. Returns
// CML_VALUE_INVALID (error in the builder) for a non-float |x| or an axis out of range.
CML_API cml_value_t cml_op_fused_softmax(cml_function_t* f, cml_value_t x, int64_t axis);

// FusedLayerNorm: (x - mean) / sqrt(var + |epsilon|) * gamma + beta, with the mean and the
// biased variance taken over the |axis_count| axes |axes| (negative counts from the end;
// distinct; at least one). |gamma| and |beta| are optional (CML_VALUE_INVALID: 1 and 0); when
// given they have x's dtype and the dims of the normalized axes in ascending axis order (for
// the last axis of [b, s, d]: [d]). |epsilon| must be finite and >= 0.
CML_API cml_value_t cml_op_fused_layer_norm(cml_function_t* f, cml_value_t x, const int64_t* axes,
                                            size_t axis_count, double epsilon, cml_value_t gamma,
                                            cml_value_t beta);

// FusedGelu: |exact|: x * 0.5 * (1 + erf(x / sqrt(2))); otherwise the tanh approximation
// x * 0.5 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))). Output: x's shape and dtype.
CML_API cml_value_t cml_op_fused_gelu(cml_function_t* f, cml_value_t x, bool exact);

//===--- dense ---===//

typedef struct cml_dense_config_t {
  cml_activation_t activation;       // default CML_ACTIVATION_NONE
  cml_dense_layout_t weight_layout;  // default CML_DENSE_LAYOUT_INPUT_OUTPUTS
} cml_dense_config_t;

// Sets the defaults (no activation, W as [in, out...]).
CML_API void cml_dense_config_init(cml_dense_config_t* config);

// FusedDense: y = activation(x @ W + bias). |x| is [batch..., in] (rank >= 1); |weight| is
// [in, out...] or [out..., in] as |config|->weight_layout says (rank >= 1); |bias| is
// optional (CML_VALUE_INVALID) and has the dims [out...]. Output: [batch..., out...] of x's
// dtype; the product is a DotGeneral of x's dtype (the C backend accumulates f16, bf16 and f32
// in f32, f64 in f64). |config| may be NULL (defaults). All operands share x's float dtype.
CML_API cml_value_t cml_op_fused_dense(cml_function_t* f, cml_value_t x, cml_value_t weight,
                                       cml_value_t bias, const cml_dense_config_t* config);

//===--- attention ---===//

// Options of FusedScaledDotProductAttention (the seed's ScaledDotProductAttentionConfig).
typedef struct cml_sdpa_config_t {
  // Multiplies q @ k^T; 0 means 1 / sqrt(head_dim).
  double scale;
  // Lower-triangular mask, top-left aligned: query i attends key j only when j <= i.
  bool causal;
  // Optional mask (CML_VALUE_INVALID: none), rank 2..4, broadcastable (right-aligned, size-1
  // axes) to the scores [batch, heads, seq, kv_seq]: Bool (true = attend) or q's dtype
  // (added to the scores, e.g. 0 / -inf).
  cml_value_t mask;
  // Optional additive bias of q's dtype (ALiBi and the like), broadcast as |mask|.
  cml_value_t bias;
  // Optional actual lengths, Int32 [batch], both or neither: keys at positions >= kv_seq_len[b]
  // are masked out, and query rows at positions >= query_seq_len[b] produce zeros.
  cml_value_t query_seq_len;
  cml_value_t kv_seq_len;
  // A hint (quantize Q/K/V to 8 bits for the products); backends may ignore it and the
  // decomposition does.
  bool quantized_matmuls;
} cml_sdpa_config_t;

// Sets the defaults: scale 0 (1/sqrt(head_dim)), no mask, bias or lengths, not causal.
CML_API void cml_sdpa_config_init(cml_sdpa_config_t* config);

// The most VJP states a FusedScaledDotProductAttention may return.
#define CML_SDPA_MAX_STATES 4

// FusedScaledDotProductAttention: per batch and head, softmax(q @ k^T * scale + mask + bias) @ v.
// |q| is [batch, heads, seq, dim] (BHSD) or [batch, seq, heads, dim] (BSHD); |k| and |v| have
// kv_heads heads and kv_seq positions (v may have another head dim); heads % kv_heads == 0 and
// query head h reads kv head h / (heads / kv_heads) (grouped-query attention). Rows whose keys
// are all masked produce zeros (never NaN). Output: q's dims with v's head dim, q's dtype.
// |config| may be NULL (defaults). When |out_states| is not NULL it receives the values a
// fused backward pass needs and |out_state_count| their number (0 when the op was decomposed:
// then differentiate the decomposition instead).
CML_API cml_value_t cml_op_fused_sdpa(cml_function_t* f, cml_value_t q, cml_value_t k,
                                      cml_value_t v, cml_attention_layout_t layout,
                                      const cml_sdpa_config_t* config, cml_value_t* out_states,
                                      size_t* out_state_count);

// FusedAttentionQKVProjection: y = x @ w_qkv, split along the last axis into
// q = y[:, :query_dim] + bias_q, k = y[:, query_dim:query_dim + kv_dim] + bias_k and
// v = y[:, query_dim + kv_dim:] + bias_v. |x| is [batch, in] (flatten other axes first);
// |w_qkv| is [in, query_dim + 2 * kv_dim]; each bias is optional (CML_VALUE_INVALID) and has
// dims [query_dim] or [kv_dim]. Writes q, k, v to |out_values| and returns true; on failure
// writes CML_VALUE_INVALID and returns false (the error sticks to the builder).
CML_API bool cml_op_fused_attention_qkv_projection(cml_function_t* f, cml_value_t x,
                                                   cml_value_t w_qkv, cml_value_t bias_q,
                                                   cml_value_t bias_k, cml_value_t bias_v,
                                                   int64_t query_dim, int64_t kv_dim,
                                                   cml_value_t out_values[3]);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_FUSED_H_
