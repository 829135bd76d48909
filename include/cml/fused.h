// SPDX-License-Identifier: Apache-2.0
// cml/fused.h: fused ops (softmax, layer norm, gelu, dense, attention, quantized dense and
// embedding lookup) that work on every backend.
//
// A fused op is one node when the backend advertises it (its capabilities list the op, e.g.
// CML_OP_FUSED_SOFTMAX), so a backend can run it as one kernel. When the backend lacks it, the
// builder decomposes it on the spot into standard ops (Reduce*, Exp, DotGeneral, ...) with the
// same semantics, so a fused op never fails for lack of support. One limit comes from the
// graph, not the backend: on a dynamic axis FusedLayerNorm, FusedDense, the attention ops and
// FusedQuantizedDense are refused (docs/dynamic_shapes.md). Under AutoSharding on `c` every
// fused op stays one node per device (docs/partitioner.md: the batch and head splits of the
// attention ops and the batch splits of the dense and quantized ops are kept). The C backend
// advertises FusedSoftmax, FusedLayerNorm, FusedGelu, FusedDense, FusedScaledDotProductAttention
// (and its VJP op), FusedAttentionQKVProjection and the quantized ops (FusedQuantizedDense,
// QuantizedEmbeddingLookup, below) unless fusion is off (GOMLX_FUSION=0 or the config
// "c:fusion=false") or it runs its reference kernels ("c:reference=true"); then the
// decomposition runs. The XLA backend advertises none: XLA fuses the decomposition itself.
// Native kernels match the decomposition within a few ulps of the computation dtype (f16 and
// bf16 are computed in f32 and rounded once). On c, FusedSoftmax sums long rows in blocks (f32)
// or with a compensated sum (f64), so its error does not grow with the row: rows of 1e6 measured
// 3.4 ulps in f64 and 3.0 in f32 (inputs in [-2, 2]; 17.7 in f32 for inputs in [-15, 15], as
// for rows of 1000, where the exponential's own rounding dominates). See each backend's kernel
// file for its bounds.
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
// then differentiate the decomposition instead; 1 on the c backend's native node: the per-row
// logsumexp of the scores, [batch, heads, seq], Float32 or Float64 for Float64 operands, -inf
// for rows that attend no key). cml_gradients uses them by itself (cml/autodiff.h).
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

//===--- quantized inference ---===//
//
// FusedQuantizedDense and QuantizedEmbeddingLookup run on weights stored in a quantized form,
// with GoMLX's contracts (its compute package's Quantization, QuantizationScheme and
// GGMLQuantType). Three schemes:
//
// - Linear: weights [K, N] of an integer dtype (Int8, Uint8, Int4, Uint4, Int2, Uint2; the
//   sub-byte ones packed as every packed dtype, cml/shape.h), with one float32 scale per block
//   of |block_size| consecutive elements along N (the output axis) and an optional float32 zero
//   point of the scale's shape: w[k, n] = q[k, n] * scale[k, n / B] + zero_point[k, n / B].
//   The stored value is used as is (signed for Int4/Int2, no implicit offset).
// - NF4: the same layout without a zero point; the low 4 bits of each stored value index the
//   16-entry NF4 table (cml_quant_nf4_table): w[k, n] = T[q[k, n] & 15] * scale[k, n / B].
//   Weights Int4, Uint4 (packed, one index per element), Int8 or Uint8 (one index per byte).
// - GGML: weights [N, bytes_per_row] Uint8 holding ggml's blocks (row n = output feature n, as
//   a GGUF file stores a linear layer, so GGUF tensors need no repacking). K = bytes_per_row /
//   bytes_per_block * values_per_block. No scale and no zero point.
//
// |block_size| need not divide N: there are ceil(N / B) blocks and the last one is short.
// B == N is one scale per k ("per-axis"), as is any B > N (up to INT64_MAX; the memory of every
// path is independent of B beyond N).
//
// Backends: the C backend runs both ops natively (unless fusion is off or it runs its reference
// kernels); elsewhere (XLA, GOMLX_FUSION=0, "c:reference=true") they decompose into standard
// ops: Bitcast of the fp16 fields, shifts and masks for the bit fields, Gather for the NF4 and
// IQ4_NL tables, ConvertDType, Mul, DotGeneral. cml_backend_capabilities tells which one runs.
//
// Example (a GGUF Q4_K linear layer [N, K] applied to x [batch, K]):
//
//   cml_quantization_t q;
//   cml_quantization_init(&q);
//   q.scheme = CML_QUANT_GGML;
//   q.ggml_type = CML_GGML_Q4_K;
//   int64_t bytes = cml_ggml_row_bytes(CML_GGML_Q4_K, K);           // 0 when K % 256 != 0
//   cml_shape_t ws = cml_shape_make(CML_DTYPE_U8, 2, (int64_t[]){N, bytes});
//   cml_value_t w = cml_parameter(f, "w", &ws);
//   cml_value_t y = cml_op_fused_quantized_dense(f, x, w, CML_VALUE_INVALID, &q,
//                                                CML_ACTIVATION_SILU);  // silu(x @ W^T)
//
// Host side, cml_quantize_ggml turns float rows into any GGML format (bit-identical to the
// gguf Python package for Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0) and cml_dequantize_ggml reverses it.

// Quantization schemes (GoMLX's QuantizationScheme values and names).
typedef enum cml_quant_scheme_t {
  CML_QUANT_LINEAR = 0,  // "Linear"
  CML_QUANT_NF4 = 1,     // "NF4"
  CML_QUANT_GGML = 2,    // "GGML"
  CML_QUANT_SCHEME_COUNT
} cml_quant_scheme_t;

// "Linear", "NF4", "GGML", or "unknown". Never NULL.
CML_API const char* cml_quant_scheme_name(cml_quant_scheme_t scheme);

// GGML block formats. Values 0..7 are GoMLX's GGMLQuantType numbering (not ggml's ggml_type
// ids); Q4_1, Q5_0 and Q5_1, which GoMLX lacks, follow. Layouts: ggml's ggml-common.h.
typedef enum cml_ggml_type_t {
  CML_GGML_Q4_0 = 0,    // 32 values in 18 bytes: fp16 d, 16 bytes of nibbles; (q - 8) * d
  CML_GGML_Q8_0 = 1,    // 32 values in 34 bytes: fp16 d, 32 int8; q * d
  CML_GGML_IQ4_NL = 2,  // 32 values in 18 bytes: fp16 d, nibbles indexing a 16-entry int8 table
  CML_GGML_Q2_K = 3,    // 256 values in 84 bytes
  CML_GGML_Q3_K = 4,    // 256 values in 110 bytes
  CML_GGML_Q4_K = 5,    // 256 values in 144 bytes
  CML_GGML_Q5_K = 6,    // 256 values in 176 bytes
  CML_GGML_Q6_K = 7,    // 256 values in 210 bytes
  CML_GGML_Q4_1 = 8,    // 32 values in 20 bytes: fp16 d, fp16 m, nibbles; q * d + m
  CML_GGML_Q5_0 = 9,    // 32 values in 22 bytes: fp16 d, 4 bytes of 5th bits, nibbles
  CML_GGML_Q5_1 = 10,   // 32 values in 24 bytes: fp16 d, fp16 m, 4 bytes of 5th bits, nibbles
  CML_GGML_TYPE_COUNT
} cml_ggml_type_t;

// "Q4_0", "Q8_0", "IQ4_NL", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q4_1", "Q5_0", "Q5_1", or
// "unknown". Never NULL.
CML_API const char* cml_ggml_type_name(cml_ggml_type_t type);

// Values per block (32 or 256) and bytes per block of |type|; 0 for an unknown type (GoMLX
// returns 256 values there; cml returns 0 so that callers cannot mistake it for a format).
CML_API int64_t cml_ggml_type_values_per_block(cml_ggml_type_t type);
CML_API int64_t cml_ggml_type_bytes_per_block(cml_ggml_type_t type);

// Bytes of one row of |k| values of |type|: 0 when |type| is unknown or |k| is not a positive
// multiple of its block.
CML_API int64_t cml_ggml_row_bytes(cml_ggml_type_t type, int64_t k);

// The 16 float32 values of the NF4 table (QLoRA's; index 7 is 0) and of the IQ4_NL table
// (ggml's kvalues_iq4nl as floats). Static storage.
CML_API const float* cml_quant_nf4_table(void);
CML_API const float* cml_quant_iq4nl_table(void);

// How the weights of a quantized op are stored (GoMLX's Quantization, field by field).
typedef struct cml_quantization_t {
  cml_quant_scheme_t scheme;  // default CML_QUANT_LINEAR
  // Linear and NF4: Float32 [K, ceil(N / block_size)]; required. GGML: must be
  // CML_VALUE_INVALID (the scales are inside the blocks).
  cml_value_t scale;
  // Linear only, optional (CML_VALUE_INVALID: symmetric): Float32 of the scale's shape.
  cml_value_t zero_point;
  int64_t block_axis;         // must be 1 (the N axis of [K, N]); ignored for GGML. Default 1.
  int64_t block_size;         // Linear and NF4: >= 1; ignored for GGML. Default 0 (must be set).
  cml_ggml_type_t ggml_type;  // GGML only
} cml_quantization_t;

// Sets the defaults: Linear, no scale, no zero point, block axis 1, block size 0.
CML_API void cml_quantization_init(cml_quantization_t* quantization);

// FusedQuantizedDense: y = activation(x @ dequant(weights) + bias), the bias added before the
// activation. |x| is Float32 [batch..., K] (rank >= 1); |weights| and |quantization| as the
// section above says; |bias| is optional (CML_VALUE_INVALID) Float32 [N]; |activation| any
// cml_activation_t (Gelu is the exact erf form). Output: Float32 [batch..., N].
// Fails (INVALID_ARGUMENT, naming the op, the shapes, dtypes and the format) for: a NULL
// |quantization|, an unknown scheme, GGML type or activation, x not Float32 or of rank 0,
// weights of a dtype the scheme does not take, weights not [K, N] (Linear, NF4) or not
// [N, whole blocks] Uint8 (GGML), x's last dim not K, a scale that is missing, not Float32 or
// not [K, ceil(N / B)], block_size < 1, block_axis != 1, a zero point for NF4 or GGML (or of
// another shape than the scale), a scale for GGML, a bias that is not Float32 [N].
CML_API cml_value_t cml_op_fused_quantized_dense(cml_function_t* f, cml_value_t x,
                                                 cml_value_t weights, cml_value_t bias,
                                                 const cml_quantization_t* quantization,
                                                 cml_activation_t activation);

// QuantizedEmbeddingLookup: out[i..., :] = dequant(data row indices[i..., 0]) (ggml's get_rows).
// GGML scheme only. |data| is Uint8 [vocab, bytes_per_row] of whole blocks of
// |quantization|->ggml_type; |indices| has an integer dtype and rank >= 1 with last dim 1 (the
// Gather convention, e.g. [batch, seq, 1]). Output: Float32 [indices dims but the last..., K].
// Fails at build time as FusedQuantizedDense does (INVALID_ARGUMENT; UNIMPLEMENTED for the
// Linear and NF4 schemes), and with INVALID_ARGUMENT for non-empty |indices| into a |data| of
// no rows (vocab 0); empty |indices| give an empty output whatever vocab is, on every backend.
// An index outside [0, vocab) fails the execution with OUT_OF_RANGE on the C backend's kernel;
// the decomposition (XLA, fusion off) clamps it as Gather does, by its value (a Uint64 index of
// 2^63 or more goes to the last row).
CML_API cml_value_t cml_op_quantized_embedding_lookup(cml_function_t* f, cml_value_t data,
                                                      cml_value_t indices,
                                                      const cml_quantization_t* quantization);

//===--- host-side quantizer ---===//

// Quantizes |rows| rows of |k| floats (|src|, row-major) into |type|'s blocks at |dst|
// (|dst_size| >= rows * cml_ggml_row_bytes(type, k) bytes), the [N, bytes_per_row] layout the
// ops take. Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 are bit-identical to the gguf package's quantizers
// (gguf/quants.py, numpy), and so to ggml's reference quantizers except on two kinds of blocks
// where those two differ: a block of only -0.0 stores d = +0.0 in Q4_0 and Q5_0 as gguf does
// (ggml's C code stores -0.0), and a block holding a NaN stores d = NaN (and m = NaN in Q4_1 and
// Q5_1) with every q 0 as gguf does (ggml's C code skips the NaN when it looks for the block's
// range). The gguf package cannot quantize the k-quants and IQ4_NL; for
// those cml uses its own fit (per sub-block min/max, scales rounded to their stored width
// first), whose round-trip RMSE on N(0, 1) weights is within 12% of ggml's own quantizers
// (tests/unit/quant_test.c holds it within 25%); a block of those formats holding a NaN or an
// infinity stores its scales (d, and dmin where the format has it) as NaN and every other byte
// 0, so the whole block dequantizes to NaN: a non-finite weight never comes back finite, and
// never zeroes the finite weights beside it unnoticed. Thread-safe (no state). Returns
// INVALID_ARGUMENT for an unknown type, k not a positive multiple of the block, a row size that
// overflows int64, a short |dst| or NULL pointers; never reads past |src| or writes past
// |dst_size|.
CML_API cml_status_t cml_quantize_ggml(cml_ggml_type_t type, const float* src, int64_t rows,
                                       int64_t k, void* dst, size_t dst_size);

// Dequantizes |rows| rows of |type| blocks (|src|, |rows| * cml_ggml_row_bytes(type, k) bytes)
// into |rows| * |k| floats at |dst|, exactly as ggml (and the gguf package) do. Errors as
// cml_quantize_ggml.
CML_API cml_status_t cml_dequantize_ggml(cml_ggml_type_t type, const void* src, int64_t rows,
                                         int64_t k, float* dst);

// Quantizes a float [k, n] matrix (|src|, row-major) for the Linear or NF4 scheme with blocks of
// |block_size| along n: writes |weights| in |weight_dtype| (Int8, Uint8, Int4, Uint4, Int2 or
// Uint2 for Linear; Int4, Uint4, Int8 or Uint8 for NF4; packed dtypes packed as cml stores them,
// cml_shape_byte_size bytes of [k, n]) and |scale| (float [k, ceil(n / block_size)]).
// Linear, signed dtype, NULL |zero_point|: symmetric, scale = max|w| / (2^(bits-1) - 1).
// Linear with |zero_point| (required for unsigned dtypes): the block's range [min(0, min w),
// max(0, max w)] onto the dtype's whole range, w = q * scale + zero_point. NF4: scale = max|w|
// of the block and q = the index of the nearest table entry of w / scale. Round to nearest.
// The scale and zero point are computed in double and stored as floats. A block holding a NaN
// or an infinity gets scale (and zero point) NaN and codes 0: it dequantizes to NaN, as the
// GGML quantizers store d = NaN. Returns INVALID_ARGUMENT for bad arguments (scheme not
// Linear/NF4, a dtype the scheme does not take, block_size < 1, an unsigned Linear dtype without
// |zero_point|, NULL buffers, more than 2^55 elements).
CML_API cml_status_t cml_quantize_linear(cml_quant_scheme_t scheme, cml_dtype_t weight_dtype,
                                         const float* src, int64_t k, int64_t n, int64_t block_size,
                                         void* weights, float* scale, float* zero_point);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_FUSED_H_
