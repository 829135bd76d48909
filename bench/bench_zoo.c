// SPDX-License-Identifier: Apache-2.0
// bench/bench_zoo.c: small models as users write them from primitives, beyond bench_nn's
// standard set: a LeNet-style CNN, a MobileNet block (depthwise 3x3 + pointwise, BN folded,
// ReLU6), a strided depthwise layer, an LSTM unrolled by a While loop, LayerNorm, softmax,
// batch-norm statistics, an embedding lookup with LayerNorm, a 3x3 convolution in PyTorch's
// NCHW/OIHW layout, a transposed (upsampling) convolution, attention from DotGeneral and
// softmax, an erf-GELU MLP, a 1-D convolution, and the pieces of LLaMA-style decoders and
// CNN heads: RMSNorm, rotary embeddings, a SwiGLU MLP, causal attention with an iota mask,
// GroupNorm, global average pooling and a cross-entropy loss; c vs c:reference vs xla:cpu.
// Written to find what models outside the repository's own set spend time on.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench/bench_common.h"
#include "tools/cml/models.h"
#include "cml/autodiff.h"

enum {
  Z_LENET,
  Z_MOBILENET,
  Z_DEPTHWISE_S2,
  Z_LSTM,
  Z_LAYERNORM,
  Z_SOFTMAX,
  Z_BATCHNORM,
  Z_EMBED_LN,
  Z_CONV_NCHW,
  Z_CONV_TRANSPOSED,
  Z_ATTENTION,
  Z_GELU_MLP,
  Z_CONV1D,
  Z_RMSNORM,
  Z_ROPE,
  Z_SWIGLU,
  Z_CAUSAL_ATTENTION,
  Z_GROUPNORM,
  Z_GLOBAL_POOL,
  Z_CROSS_ENTROPY,
  Z_LENET_TRAIN,
  Z_VIT_PATCHES,
  Z_UNET_UP,
  Z_SORT_ROWS,
  Z_LAYERNORM_BF16,
  Z_MOE_GATE,
  Z_CAUSAL_DEPTHWISE_1D,
  Z_COUNT
};

static const char* const kNames[Z_COUNT] = {
    "LeNet x[64,28,28,1]: conv5x5 32, pool, conv5x5 64, pool, dense 3136-512-10, softmax",
    "MobileNet block x[8,56,56,64]: depthwise 3x3, BN, relu6, 1x1 to 128, BN, relu6",
    "depthwise 3x3/2 x[8,112,112,32] + BN + relu6",
    "LSTM 32 steps, batch 32, input 256, hidden 256 (While loop)",
    "LayerNorm [1024,768]",
    "softmax [8,12,128,128] last axis",
    "batch-norm statistics and normalize [32,28,28,64]",
    "embedding [32000,512] lookup of [16,128] ids + LayerNorm",
    "conv 3x3 NCHW x[8,64,32,32] OIHW [64,64,3,3] pad 1",
    "transposed conv 4x4/2 x[8,16,16,64] -> [8,32,32,32]",
    "attention from DotGeneral q,k,v [8,12,128,64]",
    "MLP [256,768]-3072-768, erf GELU",
    "conv1d x[16,1000,64] k5 -> 128 pad 2",
    "RMSNorm [512,4096]",
    "rotary embedding of q [8,128,12,64] (halves rotated)",
    "SwiGLU MLP [128,768]-2048-768",
    "causal attention from DotGeneral, iota mask, q,k,v [4,12,256,64]",
    "GroupNorm 32 groups x[8,32,32,64]",
    "global average pool x[32,7,7,512] + dense 512-1000",
    "cross-entropy of logits [256,32000] with labels (log-softmax, one-hot)",
    "LeNet train step x[64,28,28,1]: cross-entropy, gradients of both convs and denses (flat)",
    "ViT patch embedding x[8,224,224,3] conv 16x16/16 -> 768",
    "U-Net up block: nearest 2x upsample [4,32,32,64], concat skip, conv 3x3 -> 64",
    "sort rows of [64,1000] descending (Sort with a comparator)",
    "bf16 LayerNorm [1024,768] through f32 (converts, statistics, scale)",
    "MoE gate [2048,768] x [768,8]: softmax, argmax, top-1 weight",
    "causal depthwise conv1d x[8,1024,512] k4 (Mamba-style)",
};

static cml_value_t scalar(cml_function_t* f, cml_dtype_t dt, double v) {
  return cml_constant_scalar_f64(f, dt, v);
}

// Broadcasts |v| of rank |r| into |dims| (rank |out_rank|), the axes of v at |axes|.
static cml_value_t bcast(cml_function_t* f, cml_value_t v, const int64_t* dims, int32_t out_rank,
                         const int64_t* axes, int32_t r) {
  return cml_op_broadcast_in_dim(f, v, dims, out_rank, axes, r);
}

// x [..., n] * scale[n] + shift[n] over the last axis.
static cml_value_t affine_last(cml_function_t* f, cml_value_t x, const int64_t* dims, int32_t rank,
                               const char* name) {
  cml_dtype_t dt = CML_DTYPE_F32;
  int64_t n = dims[rank - 1], axis = rank - 1;
  char sn[32], bn[32];
  snprintf(sn, sizeof sn, "%s_scale", name);
  snprintf(bn, sizeof bn, "%s_shift", name);
  cml_value_t s = bench_param(f, sn, dt, 1, &n), b = bench_param(f, bn, dt, 1, &n);
  return cml_op_add(f, cml_op_mul(f, x, bcast(f, s, dims, rank, &axis, 1)),
                    bcast(f, b, dims, rank, &axis, 1));
}

// A 1-D ConvGeneral of an NWC |x| with a WIO |kernel|: padding |lo| / |hi|, |groups| feature
// groups.
static cml_value_t conv_nwc(cml_function_t* f, cml_value_t x, cml_value_t kernel, int64_t lo,
                            int64_t hi, int64_t groups) {
  cml_conv_config_t cc;
  memset(&cc, 0, sizeof cc);
  cc.spatial_count = 1;
  cc.input_channel_axis = 2;
  cc.input_spatial_axes[0] = 1;
  cc.kernel_spatial_axes[0] = 0;
  cc.kernel_input_channel_axis = 1;
  cc.kernel_output_channel_axis = 2;
  cc.output_channel_axis = 2;
  cc.output_spatial_axes[0] = 1;
  cc.padding_low[0] = lo;
  cc.padding_high[0] = hi;
  cc.channel_group_count = groups;
  cc.output_dtype = CML_DTYPE_INVALID;
  return cml_op_conv_general(f, x, kernel, &cc);
}

static cml_value_t relu(cml_function_t* f, cml_value_t x) {
  return cml_op_max(f, x, scalar(f, CML_DTYPE_F32, 0.0));
}

static cml_value_t maxpool2(cml_function_t* f, cml_value_t x) {
  cml_window_config_t w;
  memset(&w, 0, sizeof w);
  w.rank = 4;
  int64_t d[4] = {1, 2, 2, 1};
  memcpy(w.window_dims, d, sizeof d);
  memcpy(w.strides, d, sizeof d);
  return cml_op_reduce_window(f, x, CML_REDUCE_MAX, &w);
}

// x [m, k] @ w [k, n] + b, the parameters declared here.
static cml_value_t dense(cml_function_t* f, cml_value_t x, int64_t m, int64_t k, int64_t n) {
  cml_value_t w = bench_param(f, NULL, CML_DTYPE_F32, 2, (int64_t[]){k, n});
  cml_value_t b = bench_param(f, NULL, CML_DTYPE_F32, 1, &n);
  int64_t axis = 1;
  return cml_op_add(f, cml_op_dot(f, x, w), bcast(f, b, (int64_t[]){m, n}, 2, &axis, 1));
}

// Softmax over the last axis of x (rank |rank|, dims |dims|).
static cml_value_t softmax(cml_function_t* f, cml_value_t x, const int64_t* dims, int32_t rank) {
  int64_t last = rank - 1, keep[CML_MAX_RANK];
  for (int32_t i = 0; i < rank - 1; ++i) keep[i] = i;
  cml_value_t mx = cml_op_reduce_max(f, x, &last, 1);
  cml_value_t e = cml_op_exp(f, cml_op_sub(f, x, bcast(f, mx, dims, rank, keep, rank - 1)));
  cml_value_t s = cml_op_reduce_sum(f, e, &last, 1);
  return cml_op_div(f, e, bcast(f, s, dims, rank, keep, rank - 1));
}

// LayerNorm over the last axis, eps 1e-5, learned scale and shift.
static cml_value_t layernorm(cml_function_t* f, cml_value_t x, const int64_t* dims, int32_t rank) {
  int64_t last = rank - 1, keep[CML_MAX_RANK];
  for (int32_t i = 0; i < rank - 1; ++i) keep[i] = i;
  cml_value_t inv_n = scalar(f, CML_DTYPE_F32, 1.0 / (double)dims[rank - 1]);
  cml_value_t mean = cml_op_mul(f, cml_op_reduce_sum(f, x, &last, 1), inv_n);
  cml_value_t xc = cml_op_sub(f, x, bcast(f, mean, dims, rank, keep, rank - 1));
  cml_value_t var = cml_op_mul(f, cml_op_reduce_sum(f, cml_op_mul(f, xc, xc), &last, 1), inv_n);
  cml_value_t r = cml_op_rsqrt(f, cml_op_add(f, var, scalar(f, CML_DTYPE_F32, 1e-5)));
  return affine_last(f, cml_op_mul(f, xc, bcast(f, r, dims, rank, keep, rank - 1)), dims, rank,
                     "ln");
}

static cml_value_t relu6_bn(cml_function_t* f, cml_value_t x, const int64_t* dims,
                            const char* name) {
  x = affine_last(f, x, dims, 4, name);
  return cml_op_clamp(f, scalar(f, CML_DTYPE_F32, 0.0), x, scalar(f, CML_DTYPE_F32, 6.0));
}

static cml_value_t build_lenet(cml_function_t* f) {
  const int64_t n = 64;
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 4, (int64_t[]){n, 28, 28, 1});
  cml_value_t k1 = bench_param(f, "k1", CML_DTYPE_F32, 4, (int64_t[]){5, 5, 1, 32});
  cml_value_t k2 = bench_param(f, "k2", CML_DTYPE_F32, 4, (int64_t[]){5, 5, 32, 64});
  cml_value_t h = maxpool2(f, relu(f, cml_cli_model_conv_nhwc(f, x, k1, 1, 2, 1)));  // [n,14,14,32]
  h = maxpool2(f, relu(f, cml_cli_model_conv_nhwc(f, h, k2, 1, 2, 1)));              // [n,7,7,64]
  h = cml_op_reshape(f, h, (int64_t[]){n, 7 * 7 * 64}, 2);
  h = relu(f, dense(f, h, n, 7 * 7 * 64, 512));
  h = dense(f, h, n, 512, 10);
  return softmax(f, h, (int64_t[]){n, 10}, 2);
}

static cml_value_t build_mobilenet(cml_function_t* f) {
  const int64_t d[4] = {8, 56, 56, 64}, o[4] = {8, 56, 56, 128};
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 4, d);
  cml_value_t dw = bench_param(f, "dw", CML_DTYPE_F32, 4, (int64_t[]){3, 3, 1, 64});
  cml_value_t pw = bench_param(f, "pw", CML_DTYPE_F32, 4, (int64_t[]){1, 1, 64, 128});
  cml_value_t h = relu6_bn(f, cml_cli_model_conv_nhwc(f, x, dw, 1, 1, 64), d, "bn1");
  return relu6_bn(f, cml_cli_model_conv_nhwc(f, h, pw, 1, 0, 1), o, "bn2");
}

static cml_value_t build_depthwise_s2(cml_function_t* f) {
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 4, (int64_t[]){8, 112, 112, 32});
  cml_value_t dw = bench_param(f, "dw", CML_DTYPE_F32, 4, (int64_t[]){3, 3, 1, 32});
  return relu6_bn(f, cml_cli_model_conv_nhwc(f, x, dw, 2, 1, 32), (int64_t[]){8, 56, 56, 32}, "bn");
}

enum { LSTM_T = 32, LSTM_B = 32, LSTM_IN = 256, LSTM_H = 256 };

static cml_value_t build_lstm(cml_function_t* f) {
  const cml_dtype_t dt = CML_DTYPE_F32;
  cml_value_t xs = bench_param(f, "xs", dt, 3, (int64_t[]){LSTM_T, LSTM_B, LSTM_IN});
  cml_value_t w = bench_param(f, "w", dt, 2, (int64_t[]){LSTM_IN + LSTM_H, 4 * LSTM_H});
  cml_value_t bias = bench_param(f, "b", dt, 1, (int64_t[]){4 * LSTM_H});
  const int64_t hd[2] = {LSTM_B, LSTM_H};
  cml_value_t zero = cml_op_broadcast_in_dim(f, scalar(f, dt, 0.0), hd, 2, NULL, 0);
  cml_value_t init[3] = {cml_constant_scalar_i64(f, CML_DTYPE_I32, 0), zero, zero};

  cml_function_t *cond = NULL, *body = NULL;
  if (cml_function_new_closure(f, &cond) != CML_OK) return CML_VALUE_INVALID;
  cml_shape_t ts = cml_shape_make(CML_DTYPE_I32, 0, NULL), hs = cml_shape_make(dt, 2, hd);
  cml_value_t ct = cml_parameter(cond, "t", &ts);
  (void)cml_parameter(cond, "h", &hs);
  (void)cml_parameter(cond, "c", &hs);
  cml_value_t lt = cml_op_less_than(cond, ct, cml_constant_scalar_i64(cond, CML_DTYPE_I32, LSTM_T));
  if (cml_function_return(cond, &lt, 1) != CML_OK) return CML_VALUE_INVALID;

  if (cml_function_new_closure(f, &body) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t t = cml_parameter(body, "t", &ts);
  cml_value_t h = cml_parameter(body, "h", &hs);
  cml_value_t c = cml_parameter(body, "c", &hs);
  cml_value_t z = cml_constant_scalar_i64(body, CML_DTYPE_I32, 0);
  cml_value_t starts[3] = {t, z, z};
  cml_value_t xt = cml_op_dynamic_slice(body, xs, starts, (int64_t[]){1, LSTM_B, LSTM_IN}, 3);
  xt = cml_op_reshape(body, xt, (int64_t[]){LSTM_B, LSTM_IN}, 2);
  cml_value_t xh = cml_op_concatenate(body, 1, (cml_value_t[]){xt, h}, 2);
  int64_t axis = 1;
  cml_value_t g = cml_op_add(body, cml_op_dot(body, xh, w),
                             bcast(body, bias, (int64_t[]){LSTM_B, 4 * LSTM_H}, 2, &axis, 1));
  cml_value_t gates[4];
  for (int i = 0; i < 4; ++i)
    gates[i] = cml_op_slice(body, g, (int64_t[]){0, i * LSTM_H},
                            (int64_t[]){LSTM_B, (i + 1) * LSTM_H}, NULL, 2);
  cml_value_t ig = cml_op_logistic(body, gates[0]), fg = cml_op_logistic(body, gates[1]);
  cml_value_t gg = cml_op_tanh(body, gates[2]), og = cml_op_logistic(body, gates[3]);
  cml_value_t c2 = cml_op_add(body, cml_op_mul(body, fg, c), cml_op_mul(body, ig, gg));
  cml_value_t h2 = cml_op_mul(body, og, cml_op_tanh(body, c2));
  cml_value_t t2 = cml_op_add(body, t, cml_constant_scalar_i64(body, CML_DTYPE_I32, 1));
  cml_value_t outs[3] = {t2, h2, c2};
  if (cml_function_return(body, outs, 3) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t fin[3];
  if (!cml_op_while(f, cond, body, init, 3, fin)) return CML_VALUE_INVALID;
  return fin[1];
}

// Per (batch, head) product over [b, h, s, d] operands: lhs axis 3 against rhs axis |rhs_k|.
static cml_value_t head_dot(cml_function_t* f, cml_value_t lhs, cml_value_t rhs, int64_t rhs_k) {
  cml_dot_config_t c;
  memset(&c, 0, sizeof c);
  c.lhs_batch_count = c.rhs_batch_count = 2;
  c.lhs_batch_axes[0] = c.rhs_batch_axes[0] = 0;
  c.lhs_batch_axes[1] = c.rhs_batch_axes[1] = 1;
  c.lhs_contracting_count = c.rhs_contracting_count = 1;
  c.lhs_contracting_axes[0] = 3;
  c.rhs_contracting_axes[0] = rhs_k;
  c.accumulator_dtype = c.output_dtype = CML_DTYPE_INVALID;
  return cml_op_dot_general(f, lhs, rhs, &c);
}

static cml_value_t build_attention(cml_function_t* f) {
  const int64_t d[4] = {8, 12, 128, 64}, sd[4] = {8, 12, 128, 128};
  cml_value_t q = bench_param(f, "q", CML_DTYPE_F32, 4, d);
  cml_value_t k = bench_param(f, "k", CML_DTYPE_F32, 4, d);
  cml_value_t v = bench_param(f, "v", CML_DTYPE_F32, 4, d);
  cml_value_t s = cml_op_mul(f, head_dot(f, q, k, 3), scalar(f, CML_DTYPE_F32, 0.125));
  cml_value_t p = softmax(f, s, sd, 4);
  return head_dot(f, p, v, 2);
}

static cml_value_t build_gelu_mlp(cml_function_t* f) {
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 2, (int64_t[]){256, 768});
  cml_value_t h = dense(f, x, 256, 768, 3072);
  cml_value_t e = cml_op_erf(f, cml_op_mul(f, h, scalar(f, CML_DTYPE_F32, M_SQRT1_2)));
  h = cml_op_mul(f, cml_op_mul(f, h, scalar(f, CML_DTYPE_F32, 0.5)),
                 cml_op_add(f, e, scalar(f, CML_DTYPE_F32, 1.0)));
  return dense(f, h, 256, 3072, 768);
}

static cml_value_t build_rmsnorm(cml_function_t* f) {
  const int64_t d[2] = {512, 4096}, last = 1, keep = 0, one = 1;
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 2, d);
  cml_value_t w = bench_param(f, "w", CML_DTYPE_F32, 1, &d[1]);
  cml_value_t ms = cml_op_mul(f, cml_op_reduce_sum(f, cml_op_mul(f, x, x), &last, 1),
                              scalar(f, CML_DTYPE_F32, 1.0 / 4096));
  cml_value_t r = cml_op_rsqrt(f, cml_op_add(f, ms, scalar(f, CML_DTYPE_F32, 1e-6)));
  return cml_op_mul(f, cml_op_mul(f, x, bcast(f, r, d, 2, &keep, 1)), bcast(f, w, d, 2, &one, 1));
}

// q * cos + rotate_half(q) * sin, with cos/sin [128, 64] broadcast over batch and heads.
static cml_value_t build_rope(cml_function_t* f) {
  const int64_t d[4] = {8, 128, 12, 64}, h[4] = {8, 128, 12, 32}, cs[2] = {128, 64};
  const int64_t axes[2] = {1, 3};
  cml_value_t q = bench_param(f, "q", CML_DTYPE_F32, 4, d);
  cml_value_t cosv = bench_param(f, "cos", CML_DTYPE_F32, 2, cs);
  cml_value_t sinv = bench_param(f, "sin", CML_DTYPE_F32, 2, cs);
  cml_value_t lo = cml_op_slice(f, q, (int64_t[]){0, 0, 0, 0}, h, NULL, 4);
  cml_value_t hi = cml_op_slice(f, q, (int64_t[]){0, 0, 0, 32}, d, NULL, 4);
  cml_value_t rot = cml_op_concatenate(f, 3, (cml_value_t[]){cml_op_neg(f, hi), lo}, 2);
  return cml_op_add(f, cml_op_mul(f, q, bcast(f, cosv, d, 4, axes, 2)),
                    cml_op_mul(f, rot, bcast(f, sinv, d, 4, axes, 2)));
}

static cml_value_t build_swiglu(cml_function_t* f) {
  const int64_t m = 128, d = 768, hdim = 2048;
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 2, (int64_t[]){m, d});
  cml_value_t w1 = bench_param(f, "w1", CML_DTYPE_F32, 2, (int64_t[]){d, hdim});
  cml_value_t w3 = bench_param(f, "w3", CML_DTYPE_F32, 2, (int64_t[]){d, hdim});
  cml_value_t w2 = bench_param(f, "w2", CML_DTYPE_F32, 2, (int64_t[]){hdim, d});
  cml_value_t a = cml_op_dot(f, x, w1), b = cml_op_dot(f, x, w3);
  cml_value_t silu = cml_op_mul(f, a, cml_op_logistic(f, a));
  return cml_op_dot(f, cml_op_mul(f, silu, b), w2);
}

static cml_value_t build_causal_attention(cml_function_t* f) {
  const int64_t d[4] = {4, 12, 256, 64}, sd[4] = {4, 12, 256, 256};
  cml_value_t q = bench_param(f, "q", CML_DTYPE_F32, 4, d);
  cml_value_t k = bench_param(f, "k", CML_DTYPE_F32, 4, d);
  cml_value_t v = bench_param(f, "v", CML_DTYPE_F32, 4, d);
  cml_value_t s = cml_op_mul(f, head_dot(f, q, k, 3), scalar(f, CML_DTYPE_F32, 0.125));
  cml_shape_t is = cml_shape_make(CML_DTYPE_I32, 4, sd);
  cml_value_t allowed = cml_op_greater_or_equal(f, cml_op_iota(f, &is, 2), cml_op_iota(f, &is, 3));
  s = cml_op_where(f, allowed, s, scalar(f, CML_DTYPE_F32, -1e30));
  cml_value_t p = softmax(f, s, sd, 4);
  return head_dot(f, p, v, 2);
}

// GroupNorm: x [n, h, w, c] viewed as [n, h, w, groups, c / groups], statistics over h, w and
// the channels of a group, then a per-channel scale and shift.
static cml_value_t build_groupnorm(cml_function_t* f) {
  const int64_t d[4] = {8, 32, 32, 64}, g[5] = {8, 32, 32, 32, 2};
  const int64_t axes[3] = {1, 2, 4}, keep[2] = {0, 3};
  cml_value_t x = cml_op_reshape(f, bench_param(f, "x", CML_DTYPE_F32, 4, d), g, 5);
  cml_value_t inv = scalar(f, CML_DTYPE_F32, 1.0 / (32.0 * 32 * 2));
  cml_value_t mean = cml_op_mul(f, cml_op_reduce_sum(f, x, axes, 3), inv);
  cml_value_t xc = cml_op_sub(f, x, bcast(f, mean, g, 5, keep, 2));
  cml_value_t var = cml_op_mul(f, cml_op_reduce_sum(f, cml_op_mul(f, xc, xc), axes, 3), inv);
  cml_value_t r = cml_op_rsqrt(f, cml_op_add(f, var, scalar(f, CML_DTYPE_F32, 1e-5)));
  cml_value_t y = cml_op_reshape(f, cml_op_mul(f, xc, bcast(f, r, g, 5, keep, 2)), d, 4);
  return affine_last(f, y, d, 4, "gn");
}

static cml_value_t build_global_pool(cml_function_t* f) {
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 4, (int64_t[]){32, 7, 7, 512});
  cml_value_t m = cml_op_mul(f, cml_op_reduce_sum(f, x, (int64_t[]){1, 2}, 2),
                             scalar(f, CML_DTYPE_F32, 1.0 / 49));
  return dense(f, m, 32, 512, 1000);
}

// Mean cross-entropy: labels made in the graph (row i: class 7919 i mod 32000).
static cml_value_t build_cross_entropy(cml_function_t* f) {
  const int64_t d[2] = {256, 32000}, last = 1, keep = 0;
  cml_value_t logits = bench_param(f, "logits", CML_DTYPE_F32, 2, d);
  cml_value_t mx = cml_op_reduce_max(f, logits, &last, 1);
  cml_value_t z = cml_op_sub(f, logits, bcast(f, mx, d, 2, &keep, 1));
  cml_value_t lse = cml_op_log(f, cml_op_reduce_sum(f, cml_op_exp(f, z), &last, 1));
  cml_value_t logp = cml_op_sub(f, z, bcast(f, lse, d, 2, &keep, 1));
  cml_shape_t ls = cml_shape_make(CML_DTYPE_I32, 1, d);
  cml_value_t labels = cml_op_rem(
      f, cml_op_mul(f, cml_op_iota(f, &ls, 0), cml_constant_scalar_i64(f, CML_DTYPE_I32, 7919)),
      cml_constant_scalar_i64(f, CML_DTYPE_I32, 32000));
  cml_shape_t is = cml_shape_make(CML_DTYPE_I32, 2, d);
  cml_value_t onehot = cml_op_convert_dtype(
      f, cml_op_equal(f, cml_op_iota(f, &is, 1), bcast(f, labels, d, 2, &keep, 1)), CML_DTYPE_F32);
  cml_value_t picked = cml_op_reduce_sum(f, cml_op_mul(f, logp, onehot), (int64_t[]){0, 1}, 2);
  return cml_op_mul(f, picked, scalar(f, CML_DTYPE_F32, -1.0 / 256));
}

// The LeNet above, trained: mean cross-entropy against labels made in the graph, the
// gradients of its six parameters (convolutions' input and kernel gradients, max-pool and ReLU
// backward), concatenated flat as an optimizer over one parameter vector takes them.
static cml_value_t build_lenet_train(cml_function_t* f) {
  const int64_t n = 64, cls[2] = {64, 10}, keep = 0;
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 4, (int64_t[]){n, 28, 28, 1});
  cml_value_t p[6];
  p[0] = bench_param(f, "k1", CML_DTYPE_F32, 4, (int64_t[]){5, 5, 1, 32});
  p[1] = bench_param(f, "k2", CML_DTYPE_F32, 4, (int64_t[]){5, 5, 32, 64});
  p[2] = bench_param(f, "w3", CML_DTYPE_F32, 2, (int64_t[]){7 * 7 * 64, 512});
  p[3] = bench_param(f, "b3", CML_DTYPE_F32, 1, (int64_t[]){512});
  p[4] = bench_param(f, "w4", CML_DTYPE_F32, 2, (int64_t[]){512, 10});
  p[5] = bench_param(f, "b4", CML_DTYPE_F32, 1, (int64_t[]){10});
  cml_value_t h = maxpool2(f, relu(f, cml_cli_model_conv_nhwc(f, x, p[0], 1, 2, 1)));
  h = maxpool2(f, relu(f, cml_cli_model_conv_nhwc(f, h, p[1], 1, 2, 1)));
  h = cml_op_reshape(f, h, (int64_t[]){n, 7 * 7 * 64}, 2);
  int64_t axis = 1;
  h = relu(f,
           cml_op_add(f, cml_op_dot(f, h, p[2]), bcast(f, p[3], (int64_t[]){n, 512}, 2, &axis, 1)));
  cml_value_t logits = cml_op_add(f, cml_op_dot(f, h, p[4]), bcast(f, p[5], cls, 2, &axis, 1));
  const int64_t last = 1;
  cml_value_t mx = cml_op_reduce_max(f, logits, &last, 1);
  cml_value_t z = cml_op_sub(f, logits, bcast(f, mx, cls, 2, &keep, 1));
  cml_value_t lse = cml_op_log(f, cml_op_reduce_sum(f, cml_op_exp(f, z), &last, 1));
  cml_value_t logp = cml_op_sub(f, z, bcast(f, lse, cls, 2, &keep, 1));
  cml_shape_t ls = cml_shape_make(CML_DTYPE_I32, 1, &n);
  cml_value_t labels =
      cml_op_rem(f, cml_op_iota(f, &ls, 0), cml_constant_scalar_i64(f, CML_DTYPE_I32, 10));
  cml_shape_t is = cml_shape_make(CML_DTYPE_I32, 2, cls);
  cml_value_t onehot = cml_op_convert_dtype(
      f, cml_op_equal(f, cml_op_iota(f, &is, 1), bcast(f, labels, cls, 2, &keep, 1)),
      CML_DTYPE_F32);
  cml_value_t loss =
      cml_op_mul(f, cml_op_reduce_sum(f, cml_op_mul(f, logp, onehot), (int64_t[]){0, 1}, 2),
                 scalar(f, CML_DTYPE_F32, -1.0 / (double)n));
  cml_value_t g[6];
  if (cml_gradients(f, loss, p, 6, g) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t flat[6];
  for (int i = 0; i < 6; ++i) {
    cml_shape_t gs;
    if (!cml_builder_value_shape(cml_function_builder(f), g[i], &gs)) return CML_VALUE_INVALID;
    int64_t count = cml_shape_element_count(&gs);
    flat[i] = cml_op_reshape(f, g[i], &count, 1);
  }
  return cml_op_concatenate(f, 0, flat, 6);
}

static cml_value_t build_vit_patches(cml_function_t* f) {
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 4, (int64_t[]){8, 224, 224, 3});
  cml_value_t k = bench_param(f, "k", CML_DTYPE_F32, 4, (int64_t[]){16, 16, 3, 768});
  return cml_cli_model_conv_nhwc(f, x, k, 16, 0, 1);
}

// Nearest-neighbour 2x upsampling as a broadcast and a reshape, the skip connection
// concatenated along channels, a 3x3 conv.
static cml_value_t build_unet_up(cml_function_t* f) {
  const int64_t d6[6] = {4, 32, 2, 32, 2, 64};
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 4, (int64_t[]){4, 32, 32, 64});
  cml_value_t skip = bench_param(f, "skip", CML_DTYPE_F32, 4, (int64_t[]){4, 64, 64, 64});
  cml_value_t k = bench_param(f, "k", CML_DTYPE_F32, 4, (int64_t[]){3, 3, 128, 64});
  cml_value_t up = bcast(f, x, d6, 6, (int64_t[]){0, 1, 3, 5}, 4);
  up = cml_op_reshape(f, up, (int64_t[]){4, 64, 64, 64}, 4);
  cml_value_t cat = cml_op_concatenate(f, 3, (cml_value_t[]){up, skip}, 2);
  return relu(f, cml_cli_model_conv_nhwc(f, cat, k, 1, 1, 1));
}

static cml_value_t build_sort_rows(cml_function_t* f) {
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 2, (int64_t[]){64, 1000});
  cml_function_t* cmp = NULL;
  if (cml_function_new_closure(f, &cmp) != CML_OK) return CML_VALUE_INVALID;
  cml_shape_t ss = cml_shape_scalar(CML_DTYPE_F32);
  cml_value_t a = cml_parameter(cmp, "a", &ss), b = cml_parameter(cmp, "b", &ss);
  cml_value_t gt = cml_op_greater_than(cmp, a, b);
  if (cml_function_return(cmp, &gt, 1) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t out;
  if (!cml_op_sort(f, cmp, 1, false, &x, 1, &out)) return CML_VALUE_INVALID;
  return out;
}

static cml_value_t build_layernorm_bf16(cml_function_t* f) {
  const int64_t d[2] = {1024, 768};
  cml_value_t x = cml_op_convert_dtype(f, bench_param(f, "x", CML_DTYPE_BF16, 2, d), CML_DTYPE_F32);
  return cml_op_convert_dtype(f, layernorm(f, x, d, 2), CML_DTYPE_BF16);
}

// Top-1 routing: the softmax of the router's logits, the chosen expert (argmax) and its weight
// (the row max of the probabilities), as [tokens, 2] f32 (the index converted).
static cml_value_t build_moe_gate(cml_function_t* f) {
  const int64_t t = 2048, e = 8, d[2] = {2048, 8}, last = 1;
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 2, (int64_t[]){t, 768});
  cml_value_t w = bench_param(f, "w", CML_DTYPE_F32, 2, (int64_t[]){768, e});
  cml_value_t p = softmax(f, cml_op_dot(f, x, w), d, 2);
  cml_value_t idx = cml_op_arg_min_max(f, p, 1, CML_DTYPE_I32, false);
  cml_value_t top = cml_op_reduce_max(f, p, &last, 1);
  cml_value_t cols[2] = {
      cml_op_reshape(f, cml_op_convert_dtype(f, idx, CML_DTYPE_F32), (int64_t[]){t, 1}, 2),
      cml_op_reshape(f, top, (int64_t[]){t, 1}, 2)};
  return cml_op_concatenate(f, 1, cols, 2);
}

// A causal depthwise 1-D conv (left padding k - 1), as Mamba's and Hyena's blocks use.
static cml_value_t build_causal_depthwise_1d(cml_function_t* f) {
  cml_value_t x = bench_param(f, "x", CML_DTYPE_F32, 3, (int64_t[]){8, 1024, 512});
  cml_value_t k = bench_param(f, "k", CML_DTYPE_F32, 3, (int64_t[]){4, 1, 512});
  return conv_nwc(f, x, k, 3, 0, 512);
}

static cml_value_t build_zoo(cml_function_t* f, const bench_case_t* c) {
  const cml_dtype_t dt = CML_DTYPE_F32;
  switch (c->dims[0]) {
    case Z_LENET:
      return build_lenet(f);
    case Z_MOBILENET:
      return build_mobilenet(f);
    case Z_DEPTHWISE_S2:
      return build_depthwise_s2(f);
    case Z_LSTM:
      return build_lstm(f);
    case Z_LAYERNORM: {
      const int64_t d[2] = {1024, 768};
      return layernorm(f, bench_param(f, "x", dt, 2, d), d, 2);
    }
    case Z_SOFTMAX: {
      const int64_t d[4] = {8, 12, 128, 128};
      return softmax(f, bench_param(f, "x", dt, 4, d), d, 4);
    }
    case Z_BATCHNORM: {
      const int64_t d[4] = {32, 28, 28, 64};
      int64_t axes[3] = {0, 1, 2}, ch = 3;
      cml_value_t x = bench_param(f, "x", dt, 4, d);
      cml_value_t inv_n = scalar(f, dt, 1.0 / (32.0 * 28 * 28));
      cml_value_t mean = cml_op_mul(f, cml_op_reduce_sum(f, x, axes, 3), inv_n);
      cml_value_t xc = cml_op_sub(f, x, bcast(f, mean, d, 4, &ch, 1));
      cml_value_t var = cml_op_mul(f, cml_op_reduce_sum(f, cml_op_mul(f, xc, xc), axes, 3), inv_n);
      cml_value_t r = cml_op_rsqrt(f, cml_op_add(f, var, scalar(f, dt, 1e-5)));
      return affine_last(f, cml_op_mul(f, xc, bcast(f, r, d, 4, &ch, 1)), d, 4, "bn");
    }
    case Z_EMBED_LN: {
      cml_value_t table = bench_param(f, "table", dt, 2, (int64_t[]){32000, 512});
      cml_shape_t is = cml_shape_make(CML_DTYPE_I32, 3, (int64_t[]){16, 128, 1});
      cml_value_t ids = cml_op_rem(
          f, cml_op_mul(f, cml_op_iota(f, &is, 1), cml_constant_scalar_i64(f, CML_DTYPE_I32, 7919)),
          cml_constant_scalar_i64(f, CML_DTYPE_I32, 32000));
      ids = cml_op_add(f, ids, cml_op_iota(f, &is, 0));
      cml_gather_dims_t g;
      memset(&g, 0, sizeof g);
      g.index_vector_axis = 2;
      g.offset_output_axis_count = 1;
      g.offset_output_axes[0] = 2;
      g.collapsed_slice_axis_count = 1;
      g.collapsed_slice_axes[0] = 0;
      g.start_index_map_count = 1;
      g.slice_size_count = 2;
      g.slice_sizes[0] = 1;
      g.slice_sizes[1] = 512;
      const int64_t d[3] = {16, 128, 512};
      return layernorm(f, cml_op_gather(f, table, ids, &g), d, 3);
    }
    case Z_CONV_NCHW: {
      cml_value_t x = bench_param(f, "x", dt, 4, (int64_t[]){8, 64, 32, 32});
      cml_value_t k = bench_param(f, "k", dt, 4, (int64_t[]){64, 64, 3, 3});
      cml_conv_config_t cc;
      memset(&cc, 0, sizeof cc);
      cc.spatial_count = 2;
      cc.input_batch_axis = 0;
      cc.input_channel_axis = 1;
      cc.kernel_output_channel_axis = 0;
      cc.kernel_input_channel_axis = 1;
      cc.output_batch_axis = 0;
      cc.output_channel_axis = 1;
      for (int i = 0; i < 2; ++i) {
        cc.input_spatial_axes[i] = cc.kernel_spatial_axes[i] = cc.output_spatial_axes[i] = 2 + i;
        cc.padding_low[i] = cc.padding_high[i] = 1;
      }
      cc.output_dtype = CML_DTYPE_INVALID;
      return cml_op_conv_general(f, x, k, &cc);
    }
    case Z_CONV_TRANSPOSED: {
      // The gradient-of-conv form: input dilation 2, padding k-1-p = 2 each side.
      cml_value_t x = bench_param(f, "x", dt, 4, (int64_t[]){8, 16, 16, 64});
      cml_value_t k = bench_param(f, "k", dt, 4, (int64_t[]){4, 4, 64, 32});
      cml_conv_config_t cc;
      memset(&cc, 0, sizeof cc);
      cc.spatial_count = 2;
      cc.input_channel_axis = 3;
      cc.kernel_input_channel_axis = 2;
      cc.kernel_output_channel_axis = 3;
      cc.output_channel_axis = 3;
      for (int i = 0; i < 2; ++i) {
        cc.input_spatial_axes[i] = cc.output_spatial_axes[i] = 1 + i;
        cc.kernel_spatial_axes[i] = i;
        cc.padding_low[i] = cc.padding_high[i] = 2;
        cc.input_dilations[i] = 2;
      }
      cc.output_dtype = CML_DTYPE_INVALID;
      return cml_op_conv_general(f, x, k, &cc);
    }
    case Z_ATTENTION:
      return build_attention(f);
    case Z_GELU_MLP:
      return build_gelu_mlp(f);
    case Z_CONV1D: {
      cml_value_t x = bench_param(f, "x", dt, 3, (int64_t[]){16, 1000, 64});
      cml_value_t k = bench_param(f, "k", dt, 3, (int64_t[]){5, 64, 128});
      return conv_nwc(f, x, k, 2, 2, 1);
    }
    case Z_RMSNORM:
      return build_rmsnorm(f);
    case Z_ROPE:
      return build_rope(f);
    case Z_SWIGLU:
      return build_swiglu(f);
    case Z_CAUSAL_ATTENTION:
      return build_causal_attention(f);
    case Z_GROUPNORM:
      return build_groupnorm(f);
    case Z_GLOBAL_POOL:
      return build_global_pool(f);
    case Z_CROSS_ENTROPY:
      return build_cross_entropy(f);
    case Z_LENET_TRAIN:
      return build_lenet_train(f);
    case Z_VIT_PATCHES:
      return build_vit_patches(f);
    case Z_UNET_UP:
      return build_unet_up(f);
    case Z_SORT_ROWS:
      return build_sort_rows(f);
    case Z_LAYERNORM_BF16:
      return build_layernorm_bf16(f);
    case Z_MOE_GATE:
      return build_moe_gate(f);
    case Z_CAUSAL_DEPTHWISE_1D:
      return build_causal_depthwise_1d(f);
    default:
      return CML_VALUE_INVALID;
  }
}

// Multiply-adds x 2 of the products (elementwise work not counted); 0: report bytes.
static double zoo_flops(int z) {
  switch (z) {
    case Z_LENET:
      return 2.0 * 64 * (28 * 28 * 25 * 32 + 14 * 14 * 25 * 32 * 64 + 3136 * 512 + 512 * 10);
    case Z_MOBILENET:
      return 2.0 * 8 * 56 * 56 * (9 * 64 + 64 * 128);
    case Z_DEPTHWISE_S2:
      return 2.0 * 8 * 56 * 56 * 9 * 32;
    case Z_LSTM:
      return 2.0 * LSTM_T * LSTM_B * (LSTM_IN + LSTM_H) * 4 * LSTM_H;
    case Z_CONV_NCHW:
      return 2.0 * 8 * 32 * 32 * 64 * 64 * 9;
    case Z_CONV_TRANSPOSED:
      return 2.0 * 8 * 32 * 32 * 32 * 64 * 4;  // the non-zero taps: a quarter of 16
    case Z_ATTENTION:
      return 2.0 * 2 * 8 * 12 * 128 * 128 * 64;
    case Z_GELU_MLP:
      return 2.0 * 2 * 256 * 768 * 3072;
    case Z_CONV1D:
      return 2.0 * 16 * 1000 * 5 * 64 * 128;
    case Z_SWIGLU:
      return 2.0 * 3 * 128 * 768 * 2048;
    case Z_VIT_PATCHES:
      return 2.0 * 8 * 14 * 14 * 16 * 16 * 3 * 768;
    case Z_UNET_UP:
      return 2.0 * 4 * 64 * 64 * 9 * 128 * 64;
    case Z_MOE_GATE:
      return 2.0 * 2048 * 768 * 8;
    case Z_CAUSAL_DEPTHWISE_1D:
      return 2.0 * 8 * 1024 * 512 * 4;
    case Z_LENET_TRAIN:  // forward, and twice that backward
      return 3 * 2.0 * 64 * (28 * 28 * 25 * 32 + 14 * 14 * 25 * 32 * 64 + 3136 * 512 + 512 * 10);
    case Z_CAUSAL_ATTENTION:
      return 2.0 * 2 * 4 * 12 * 256 * 256 * 64;
    case Z_GLOBAL_POOL:
      return 2.0 * 32 * 512 * 1000;
    default:
      return 0;
  }
}

static double zoo_bytes(int z) {
  switch (z) {
    case Z_LAYERNORM:
      return 2.0 * 4 * 1024 * 768;
    case Z_SOFTMAX:
      return 2.0 * 4 * 8 * 12 * 128 * 128;
    case Z_BATCHNORM:
      return 2.0 * 4 * 32 * 28 * 28 * 64;
    case Z_EMBED_LN:
      return 2.0 * 4 * 16 * 128 * 512;
    case Z_RMSNORM:
      return 2.0 * 4 * 512 * 4096;
    case Z_ROPE:
      return 2.0 * 4 * 8 * 128 * 12 * 64;
    case Z_GROUPNORM:
      return 2.0 * 4 * 8 * 32 * 32 * 64;
    case Z_CROSS_ENTROPY:
      return 4.0 * 256 * 32000;
    case Z_SORT_ROWS:
      return 2.0 * 4 * 64 * 1000;
    case Z_LAYERNORM_BF16:
      return 2.0 * 2 * 1024 * 768;
    default:
      return 0;
  }
}

int main(int argc, char** argv) {
  bench_options_t opts;
  if (!bench_parse_args(&opts, argc, argv, "small models written from primitives")) return 2;
  bench_case_t cases[Z_COUNT];
  for (int z = 0; z < Z_COUNT; ++z) {
    bench_case_t* c = &cases[z];
    memset(c, 0, sizeof *c);
    c->group = "zoo";
    c->build = build_zoo;
    c->dtype = CML_DTYPE_F32;
    c->dims[0] = z;
    c->flops = zoo_flops(z);
    c->bytes = zoo_bytes(z);
    c->heavy = c->flops > 1e9;
    bench_case_name(c, "%s", kNames[z]);
  }
  bench_run(&opts, cases, Z_COUNT);
  return bench_finish(&opts);
}
