// SPDX-License-Identifier: Apache-2.0
// src/core/autodiff_fused.c: VJPs of the fused ops recorded as one node (a backend that
// advertises them). Backends without them get the decomposition, which is differentiated op
// by op. FusedSoftmax: y * (g - sum(g * y)). FusedGelu: the derivative of the exact (erf) or
// tanh form. FusedLayerNorm and FusedAttentionQKVProjection: their VJPs written directly in
// standard ops. FusedScaledDotProductAttention: the native FusedScaledDotProductAttentionVJP
// node when the backend has it. FusedDense (cml_gradients has already split a gelu activation
// off as its own FusedGelu node, src/core/autodiff.c), FusedQuantizedDense (and attention
// otherwise): their decomposition into standard ops is recomputed in the function and
// differentiated (cml__ad_nested).
// FusedScaledDotProductAttentionVJP (second derivatives): the backward pass written as the VJP
// of the decomposition (cml__ad_inner_vjp), then differentiated.
#include <math.h>
#include <string.h>

#include "autodiff_internal.h"
#include "fused_internal.h"

// y = activation(y) in standard ops (cml/fused.h's definitions).
static cml_value_t cml_ad_activation(cml__ad_t* ad, cml_value_t y, cml_dtype_t dt, int32_t act) {
  cml_function_t* f = ad->f;
  switch ((cml_activation_t)act) {
    case CML_ACTIVATION_NONE:
      return y;
    case CML_ACTIVATION_GELU: {
      cml_value_t t = cml_op_erf(f, cml__ad_mul(ad, y, cml__ad_scalar(ad, dt, M_SQRT1_2)));
      return cml__ad_mul(ad, cml__ad_mul(ad, y, cml__ad_scalar(ad, dt, 0.5)),
                         cml__ad_add(ad, cml__ad_scalar(ad, dt, 1.0), t));
    }
    case CML_ACTIVATION_RELU:
      return cml_op_max(f, y, cml__ad_scalar(ad, dt, 0.0));
    case CML_ACTIVATION_SILU:
      return cml__ad_mul(ad, y, cml_op_logistic(f, y));
    case CML_ACTIVATION_HARD_SWISH: {
      cml_value_t t = cml__ad_add(ad, cml__ad_mul(ad, y, cml__ad_scalar(ad, dt, 1.0 / 6.0)),
                                  cml__ad_scalar(ad, dt, 0.5));
      t = cml_op_clamp(f, cml__ad_scalar(ad, dt, 0.0), t, cml__ad_scalar(ad, dt, 1.0));
      return cml__ad_mul(ad, y, t);
    }
    case CML_ACTIVATION_TANH:
      return cml_op_tanh(f, y);
    default:
      return CML_VALUE_INVALID;
  }
}

// FusedLayerNorm's VJP in standard ops. With N the size of the normalized axes, r =
// rsqrt(var + eps), xhat = (x - mean) r and gh = g * gamma (g without a scale):
// dx = r (gh - mean(gh) - xhat mean(gh xhat)), dgamma = sum(g xhat), dbeta = sum(g), the
// last two over the other axes. The forward's mean and variance are recomputed (two
// reductions); the backward needs two more (sum(gh) and sum(gh xhat)), both over the same axes.
// Float16/BFloat16 rows are differentiated in Float32, as the forward kernels compute them:
// in the dtype, the squares of values near 300 overflowed Float16 and every gradient came out 0.
static void cml_ad_layer_norm_vjp(cml__ad_t* ad, const cml_ir_node_t* n, cml_value_t g,
                                  cml_value_t* in_cts) {
  const cml_shape_t xs = *cml__ad_in_shape(ad, n, 0);
  const cml_dtype_t io_dt = xs.dtype;
  const bool widen = io_dt == CML_DTYPE_F16 || io_dt == CML_DTYPE_BF16;
  cml_dtype_t dt = widen ? CML_DTYPE_F32 : io_dt;
  if (widen) g = cml_op_convert_dtype(ad->f, g, dt);
  const int64_t* axes = n->attrs->axes;
  int32_t count = n->attrs->axis_count;
  double size = 1;
  for (int32_t i = 0; i < count; ++i) size *= (double)xs.dims[axes[i]];
  int64_t gdims[CML_MAX_RANK], other[CML_MAX_RANK];
  bool normalized[CML_MAX_RANK] = {false};
  for (int32_t d = 0; d < xs.rank; ++d) gdims[d] = 1;
  for (int32_t i = 0; i < count; ++i) {
    gdims[axes[i]] = xs.dims[axes[i]];
    normalized[axes[i]] = true;
  }
  int32_t other_count = 0;
  for (int32_t d = 0; d < xs.rank; ++d) {
    if (!normalized[d]) other[other_count++] = d;
  }
  uint32_t next = 1, gamma_at = 0, beta_at = 0;
  if (n->attrs->fused.optional_inputs & 1u) gamma_at = next++;
  if (n->attrs->fused.optional_inputs & 2u) beta_at = next++;
  cml_value_t x = cml__ad_in(ad, n, 0);
  if (widen) x = cml_op_convert_dtype(ad->f, x, dt);
  cml_value_t inv = cml__ad_scalar(ad, dt, size > 0 ? 1.0 / size : 0.0);
  cml_value_t mean = cml__ad_mul(ad, cml__ad_sum_keep(ad, x, axes, count), inv);
  cml_value_t xc = cml__ad_sub(ad, x, mean);
  cml_value_t var =
      cml__ad_mul(ad, cml__ad_sum_keep(ad, cml__ad_mul(ad, xc, xc), axes, count), inv);
  cml_value_t r =
      cml_op_rsqrt(ad->f, cml__ad_add(ad, var, cml__ad_scalar(ad, dt, n->attrs->fused.epsilon)));
  cml_value_t xhat = cml__ad_mul(ad, xc, r);
  // Sums over the other axes (none when every axis is normalized; a count of 0 would mean
  // all axes to ReduceSum), reshaped to the scale's or offset's shape.
  if (beta_at && cml__ad_wants(ad, n, beta_at)) {
    const cml_shape_t* bs = cml__ad_in_shape(ad, n, beta_at);
    cml_value_t sum = other_count ? cml_op_reduce_sum(ad->f, g, other, (size_t)other_count) : g;
    in_cts[beta_at] = cml_op_reshape(ad->f, sum, bs->dims, bs->rank);
    if (widen) in_cts[beta_at] = cml_op_convert_dtype(ad->f, in_cts[beta_at], io_dt);
  }
  cml_value_t gh = g;
  if (gamma_at) {
    if (cml__ad_wants(ad, n, gamma_at)) {
      const cml_shape_t* gs = cml__ad_in_shape(ad, n, gamma_at);
      cml_value_t gx = cml__ad_mul(ad, g, xhat);
      if (other_count) gx = cml_op_reduce_sum(ad->f, gx, other, (size_t)other_count);
      in_cts[gamma_at] = cml_op_reshape(ad->f, gx, gs->dims, gs->rank);
      if (widen) in_cts[gamma_at] = cml_op_convert_dtype(ad->f, in_cts[gamma_at], io_dt);
    }
    cml_value_t gamma = cml_op_reshape(ad->f, cml__ad_in(ad, n, gamma_at), gdims, xs.rank);
    if (widen) gamma = cml_op_convert_dtype(ad->f, gamma, dt);
    gh = cml__ad_mul(ad, g, gamma);
  }
  if (!cml__ad_wants(ad, n, 0)) return;
  cml_value_t mg = cml__ad_mul(ad, cml__ad_sum_keep(ad, gh, axes, count), inv);
  cml_value_t mgx =
      cml__ad_mul(ad, cml__ad_sum_keep(ad, cml__ad_mul(ad, gh, xhat), axes, count), inv);
  cml_value_t t = cml__ad_sub(ad, cml__ad_sub(ad, gh, mg), cml__ad_mul(ad, xhat, mgx));
  in_cts[0] = cml__ad_mul(ad, t, r);
  if (widen) in_cts[0] = cml_op_convert_dtype(ad->f, in_cts[0], io_dt);
}

// FusedDense in standard ops.
static cml_value_t cml_ad_dense(cml__ad_t* ad, const cml_ir_node_t* n) {
  const cml_shape_t* xs = cml__ad_in_shape(ad, n, 0);
  const cml_shape_t* ws = cml__ad_in_shape(ad, n, 1);
  const cml_shape_t* os = cml__ad_out_shape(ad, n, 0);
  cml_dot_config_t dc;
  memset(&dc, 0, sizeof dc);
  dc.lhs_contracting_count = dc.rhs_contracting_count = 1;
  dc.lhs_contracting_axes[0] = xs->rank - 1;
  dc.rhs_contracting_axes[0] =
      n->attrs->fused.layout == CML_DENSE_LAYOUT_INPUT_OUTPUTS ? 0 : ws->rank - 1;
  cml_value_t y = cml_op_dot_general(ad->f, cml__ad_in(ad, n, 0), cml__ad_in(ad, n, 1), &dc);
  if (n->attrs->fused.optional_inputs & 1u) {
    const cml_shape_t* bs = cml__ad_in_shape(ad, n, 2);
    int64_t axes[CML_MAX_RANK];
    for (int32_t i = 0; i < bs->rank; ++i) axes[i] = os->rank - bs->rank + i;
    y = cml__ad_add(
        ad, y,
        cml_op_broadcast_in_dim(ad->f, cml__ad_in(ad, n, 2), os->dims, os->rank, axes, bs->rank));
  }
  return cml_ad_activation(ad, y, xs->dtype, n->attrs->fused.activation);
}

// FusedScaledDotProductAttention: the native FusedScaledDotProductAttentionVJP node (tiled,
// recomputing the probabilities from q, k and the forward's logsumexp) when the backend has it,
// no float mask or bias needs a gradient and the logsumexp state (output 1) has no cotangent;
// otherwise the decomposition (src/core/fused.c, which then computes the logsumexp as
// m + log(sum) too) recomputed and differentiated.
static cml_status_t cml_ad_sdpa(cml__ad_t* ad, const cml_ir_node_t* n, const cml_value_t* cts,
                                cml_value_t* in_cts) {
  cml_function_t* f = ad->f;
  // A cotangent on the logsumexp state (output 1): the decomposition, which computes it too.
  const bool lse_ct = n->output_count > 1 && cts[1];
  if (!cts[0] && !lse_ct) return CML_OK;
  const uint32_t opt = n->attrs->fused.optional_inputs;
  cml_sdpa_config_t cfg;
  cml_sdpa_config_init(&cfg);
  cfg.causal = n->attrs->fused.causal;
  cfg.scale = n->attrs->fused.scale;
  uint32_t next = 3;
  bool side_grads = false;  // a float mask or the bias needs a gradient
  if (opt & 1u) {
    side_grads |= cml__ad_wants(ad, n, next);
    cfg.mask = cml__ad_in(ad, n, next++);
  }
  if (opt & 2u) {
    side_grads |= cml__ad_wants(ad, n, next);
    cfg.bias = cml__ad_in(ad, n, next++);
  }
  if (opt & 4u) {
    cfg.query_seq_len = cml__ad_in(ad, n, next++);
    cfg.kv_seq_len = cml__ad_in(ad, n, next++);
  }
  cml_value_t grads[3];
  if (!side_grads && !lse_ct && cml__fused_sdpa_vjp(f, n, cts[0], grads)) {
    for (uint32_t i = 0; i < 3; ++i) in_cts[i] = grads[i];
    return CML_OK;
  }
  if (ad->b->error != CML_OK) return CML_OK;
  uint32_t begin = f->nodes.count;
  cml_value_t states[CML_SDPA_MAX_STATES];
  size_t state_count = 0;
  cml_value_t d = cml__fused_sdpa_build(
      f, cml__ad_in(ad, n, 0), cml__ad_in(ad, n, 1), cml__ad_in(ad, n, 2),
      (cml_attention_layout_t)n->attrs->fused.layout, &cfg, states, &state_count, false);
  if (d == CML_VALUE_INVALID || ad->b->error != CML_OK) return CML_OK;
  uint32_t index[2] = {d & CML__VALUE_INDEX_MASK, 0};
  cml_value_t seeds[2] = {cts[0], CML_VALUE_INVALID};
  uint32_t seed_count = 1;
  if (lse_ct && state_count > 0) {
    index[1] = states[0] & CML__VALUE_INDEX_MASK;
    seeds[1] = cts[1];
    seed_count = 2;
  }
  return cml__ad_nested(ad, begin, index, seeds, seed_count);
}

// FusedScaledDotProductAttentionVJP (inputs q, k, v, the forward's output and logsumexp, the
// output's cotangent, the forward's optional inputs): (dq, dk, dv) = the VJP of the attention
// at (q, k, v) for that cotangent. Its own VJP: the attention is recomputed as its
// decomposition, (dq, dk, dv) as that decomposition's VJP in standard ops, and those are
// differentiated with the cotangents of dq, dk and dv. The output and logsumexp inputs are
// functions of q, k and v that the recomputation already follows, so they get no cotangent.
static cml_status_t cml_ad_sdpa_vjp(cml__ad_t* ad, const cml_ir_node_t* n, const cml_value_t* cts) {
  cml_function_t* f = ad->f;
  const uint32_t opt = n->attrs->fused.optional_inputs;
  cml_sdpa_config_t cfg;
  cml_sdpa_config_init(&cfg);
  cfg.causal = n->attrs->fused.causal;
  cfg.scale = n->attrs->fused.scale;
  uint32_t next = 6;
  if (opt & 1u) cfg.mask = cml__ad_in(ad, n, next++);
  if (opt & 2u) cfg.bias = cml__ad_in(ad, n, next++);
  if (opt & 4u) {
    cfg.query_seq_len = cml__ad_in(ad, n, next++);
    cfg.kv_seq_len = cml__ad_in(ad, n, next++);
  }
  // Copies of q, k and v, so that the inner VJP tells their cotangents apart when they are one
  // value (self-attention on x).
  uint32_t begin = f->nodes.count;
  cml_value_t q = cml_op_identity(f, cml__ad_in(ad, n, 0));
  cml_value_t k = cml_op_identity(f, cml__ad_in(ad, n, 1));
  cml_value_t v = cml_op_identity(f, cml__ad_in(ad, n, 2));
  cml_value_t o = cml__fused_sdpa_build(f, q, k, v, (cml_attention_layout_t)n->attrs->fused.layout,
                                        &cfg, NULL, NULL, false);
  if (o == CML_VALUE_INVALID || ad->b->error != CML_OK) return CML_OK;
  const uint32_t qkv[3] = {q & CML__VALUE_INDEX_MASK, k & CML__VALUE_INDEX_MASK,
                           v & CML__VALUE_INDEX_MASK};
  cml_value_t grads[3];
  cml_status_t st =
      cml__ad_inner_vjp(ad, begin, o & CML__VALUE_INDEX_MASK, cml__ad_in(ad, n, 5), qkv, 3, grads);
  if (st != CML_OK || ad->b->error != CML_OK) return st;
  uint32_t index[3];
  for (int i = 0; i < 3; ++i) index[i] = grads[i] & CML__VALUE_INDEX_MASK;
  return cml__ad_nested(ad, begin, index, cts, 3);
}

// FusedAttentionQKVProjection (q, k, v = the column blocks of x @ w_qkv, plus their biases):
// the three cotangents concatenated into dy (zeros for an output without one), then the
// matmul's two transposed products, dx = dy w_qkv^T and dw = x^T dy (DotGenerals contracting
// the right axes, so neither needs a transpose), and each bias's cotangent the column sums of
// its block.
static void cml_ad_qkv_vjp(cml__ad_t* ad, const cml_ir_node_t* n, const cml_value_t* cts,
                           cml_value_t* in_cts) {
  cml_function_t* f = ad->f;
  const uint32_t opt = n->attrs->fused.optional_inputs;
  const cml_shape_t xs = *cml__ad_in_shape(ad, n, 0);
  if (!cts[0] && !cts[1] && !cts[2]) return;
  uint32_t next = 2;
  for (uint32_t i = 0; i < 3; ++i) {
    if (!(opt & (1u << i))) continue;
    const uint32_t at = next++;
    if (!cts[i] || !cml__ad_wants(ad, n, at)) continue;
    in_cts[at] = cml_op_reduce_sum(f, cts[i], (int64_t[]){0}, 1);
  }
  const bool want_x = cml__ad_wants(ad, n, 0), want_w = cml__ad_wants(ad, n, 1);
  if (!want_x && !want_w) return;
  cml_value_t parts[3];
  for (uint32_t i = 0; i < 3; ++i) {
    parts[i] = cts[i] ? cml__ad_convert(ad, cts[i], xs.dtype)
                      : cml__ad_zeros(ad, cml__ad_out_shape(ad, n, i));
  }
  cml_value_t dy = cml_op_concatenate(f, 1, parts, 3);  // [batch, query_dim + 2 kv_dim]
  cml_dot_config_t dc;
  memset(&dc, 0, sizeof dc);
  dc.lhs_contracting_count = dc.rhs_contracting_count = 1;
  if (want_x) {
    dc.lhs_contracting_axes[0] = 1;
    dc.rhs_contracting_axes[0] = 1;
    in_cts[0] = cml_op_dot_general(f, dy, cml__ad_in(ad, n, 1), &dc);  // [batch, in]
  }
  if (want_w) {
    dc.lhs_contracting_axes[0] = 0;
    dc.rhs_contracting_axes[0] = 0;
    in_cts[1] = cml_op_dot_general(f, cml__ad_in(ad, n, 0), dy, &dc);  // [in, query_dim + 2 kv_dim]
  }
}

cml_status_t cml__ad_vjp_fused(cml__ad_t* ad, const cml_ir_node_t* n, const cml_value_t* cts,
                               cml_value_t* in_cts) {
  cml_function_t* f = ad->f;
  cml_value_t g = cts[0], x = cml__ad_in(ad, n, 0), y = cml__ad_out(ad, n, 0);
  cml_dtype_t dt = cml__ad_in_shape(ad, n, 0)->dtype;
  switch (n->op) {
    case CML_OP_FUSED_SOFTMAX: {
      int64_t axis = n->attrs->axis;
      cml_value_t gy = cml__ad_mul(ad, g, y);
      cml_value_t s = cml__ad_sum_keep(ad, gy, &axis, 1);
      in_cts[0] = cml__ad_sub(ad, gy, cml__ad_mul(ad, y, s));
      return CML_OK;
    }
    case CML_OP_FUSED_GELU: {
      cml_value_t half = cml__ad_scalar(ad, dt, 0.5), one = cml__ad_scalar(ad, dt, 1.0);
      cml_value_t d;
      if (n->attrs->fused.exact) {  // Phi(x) + x phi(x)
        cml_value_t cdf = cml__ad_mul(
            ad, half,
            cml__ad_add(ad, one,
                        cml_op_erf(f, cml__ad_mul(ad, x, cml__ad_scalar(ad, dt, M_SQRT1_2)))));
        cml_value_t pdf = cml__ad_mul(
            ad, cml_op_exp(f, cml__ad_mul(ad, cml__ad_mul(ad, x, x), cml__ad_scalar(ad, dt, -0.5))),
            cml__ad_scalar(ad, dt, 0.3989422804014327));
        d = cml__ad_add(ad, cml__ad_mul(ad, x, pdf), cdf);
      } else {  // 0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 a x^2), t = tanh(c (x + a x^3))
        const double a = 0.044715, c = 0.79788456080286535588;
        cml_value_t x2 = cml__ad_mul(ad, x, x);
        cml_value_t inner = cml__ad_mul(
            ad,
            cml__ad_add(ad, x, cml__ad_mul(ad, cml__ad_mul(ad, x2, x), cml__ad_scalar(ad, dt, a))),
            cml__ad_scalar(ad, dt, c));
        cml_value_t t = cml_op_tanh(f, inner);
        cml_value_t dinner = cml__ad_mul(
            ad, cml__ad_add(ad, one, cml__ad_mul(ad, x2, cml__ad_scalar(ad, dt, 3.0 * a))),
            cml__ad_scalar(ad, dt, c));
        cml_value_t sech2 = cml__ad_sub(ad, one, cml__ad_mul(ad, t, t));
        d = cml__ad_add(ad, cml__ad_mul(ad, half, cml__ad_add(ad, one, t)),
                        cml__ad_mul(ad, cml__ad_mul(ad, half, x), cml__ad_mul(ad, sech2, dinner)));
      }
      in_cts[0] = cml__ad_mul(ad, g, d);
      return CML_OK;
    }
    case CML_OP_FUSED_LAYER_NORM:
      if (!g) return CML_OK;
      cml_ad_layer_norm_vjp(ad, n, g, in_cts);
      return CML_OK;
    case CML_OP_FUSED_DENSE: {
      uint32_t begin = f->nodes.count;
      cml_value_t d = cml_ad_dense(ad, n);
      if (d == CML_VALUE_INVALID || ad->b->error != CML_OK) return CML_OK;
      uint32_t index = d & CML__VALUE_INDEX_MASK;
      return cml__ad_nested(ad, begin, &index, &g, 1);
    }
    case CML_OP_FUSED_SDPA:
      return cml_ad_sdpa(ad, n, cts, in_cts);
    case CML_OP_FUSED_SDPA_VJP:
      return cml_ad_sdpa_vjp(ad, n, cts);
    case CML_OP_FUSED_ATTENTION_QKV_PROJECTION:
      cml_ad_qkv_vjp(ad, n, cts, in_cts);
      return CML_OK;
    case CML_OP_FUSED_QUANTIZED_DENSE: {
      // The weights are integer codes (no gradient); x, the scales, the zero points and the
      // bias get theirs through the decomposition (dequantized weights, DotGeneral, bias,
      // activation).
      const uint32_t opt = n->attrs->fused.optional_inputs;
      cml_quantization_t q;
      cml_quantization_init(&q);
      q.scheme = (cml_quant_scheme_t)n->attrs->fused.quant_scheme;
      q.ggml_type = (cml_ggml_type_t)n->attrs->fused.quant_ggml_type;
      q.block_size = n->attrs->fused.quant_block_size;
      uint32_t next = 2;
      if (opt & 1u) q.scale = cml__ad_in(ad, n, next++);
      if (opt & 2u) q.zero_point = cml__ad_in(ad, n, next++);
      cml_value_t bias = (opt & 4u) ? cml__ad_in(ad, n, next++) : CML_VALUE_INVALID;
      uint32_t begin = f->nodes.count;
      cml_value_t d =
          cml__fused_quantized_dense_build(f, x, cml__ad_in(ad, n, 1), bias, &q,
                                           (cml_activation_t)n->attrs->fused.activation, false);
      if (d == CML_VALUE_INVALID || ad->b->error != CML_OK) return CML_OK;
      uint32_t index = d & CML__VALUE_INDEX_MASK;
      return cml__ad_nested(ad, begin, &index, &g, 1);
    }
    default:
      return cml__ad_no_vjp(ad, n,
                            "fused op without a VJP: build it on a backend that "
                            "decomposes it, e.g. c:fusion=false");
  }
}
