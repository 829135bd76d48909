// SPDX-License-Identifier: Apache-2.0
// tools/cml/models.c: graph builders of the standard benchmark models (see models.h).
#include "tools/cml/models.h"

#include <string.h>

static cml_value_t cml_cli_model_param(cml_function_t* f, const char* name, cml_dtype_t dtype,
                                       int32_t rank, const int64_t* dims) {
  cml_shape_t s = cml_shape_make(dtype, rank, dims);
  return cml_parameter(f, name, &s);
}

// x [..., n] + bias [n] (broadcast along the last axis of |out_dims|).
static cml_value_t cml_cli_model_add_bias(cml_function_t* f, cml_value_t x, cml_value_t bias,
                                          const int64_t* out_dims, int32_t out_rank) {
  int64_t axis = out_rank - 1;
  return cml_op_add(f, x, cml_op_broadcast_in_dim(f, bias, out_dims, out_rank, &axis, 1));
}

// x [..., k] @ w [k, n]: contracts x's last axis with w's first.
static cml_value_t cml_cli_model_matmul(cml_function_t* f, cml_value_t x, int32_t x_rank,
                                        cml_value_t w) {
  cml_dot_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.lhs_contracting_count = 1;
  cfg.lhs_contracting_axes[0] = x_rank - 1;
  cfg.rhs_contracting_count = 1;
  cfg.rhs_contracting_axes[0] = 0;
  cfg.accumulator_dtype = CML_DTYPE_INVALID;
  cfg.output_dtype = CML_DTYPE_INVALID;
  return cml_op_dot_general(f, x, w, &cfg);
}

//===--- MLP ---===//

static const int64_t kCmlCliMlpWidths[] = {784, 512, 512, 10};
#define CML_CLI_MLP_LAYERS 3

cml_value_t cml_cli_model_mlp(cml_function_t* f, cml_dtype_t dtype, int64_t batch) {
  cml_value_t h = cml_cli_model_param(f, "x", dtype, 2, (int64_t[]){batch, kCmlCliMlpWidths[0]});
  cml_value_t weights[CML_CLI_MLP_LAYERS], biases[CML_CLI_MLP_LAYERS];
  for (int l = 0; l < CML_CLI_MLP_LAYERS; ++l) {
    weights[l] = cml_cli_model_param(f, NULL, dtype, 2,
                                     (int64_t[]){kCmlCliMlpWidths[l], kCmlCliMlpWidths[l + 1]});
    biases[l] = cml_cli_model_param(f, NULL, dtype, 1, &kCmlCliMlpWidths[l + 1]);
  }
  cml_value_t zero = cml_constant_scalar_f64(f, dtype, 0.0);
  for (int l = 0; l < CML_CLI_MLP_LAYERS; ++l) {
    int64_t out_dims[2] = {batch, kCmlCliMlpWidths[l + 1]};
    h = cml_cli_model_add_bias(f, cml_op_dot(f, h, weights[l]), biases[l], out_dims, 2);
    if (l + 1 < CML_CLI_MLP_LAYERS) h = cml_op_max(f, h, zero);
  }
  return h;
}

double cml_cli_model_mlp_flops(int64_t batch) {
  double macs = 0;
  for (int l = 0; l < CML_CLI_MLP_LAYERS; ++l)
    macs += (double)kCmlCliMlpWidths[l] * (double)kCmlCliMlpWidths[l + 1];
  return 2.0 * macs * (double)batch;
}

//===--- convolutions ---===//

// NHWC input, HWIO kernel, NHWC output; the same stride and padding on both spatial axes.
cml_value_t cml_cli_model_conv_nhwc(cml_function_t* f, cml_value_t x, cml_value_t kernel,
                                    int64_t stride, int64_t pad, int64_t groups) {
  cml_conv_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.spatial_count = 2;
  cfg.input_batch_axis = 0;
  cfg.input_channel_axis = 3;
  cfg.kernel_input_channel_axis = 2;
  cfg.kernel_output_channel_axis = 3;
  cfg.output_batch_axis = 0;
  cfg.output_channel_axis = 3;
  for (int i = 0; i < 2; ++i) {
    cfg.input_spatial_axes[i] = 1 + i;
    cfg.kernel_spatial_axes[i] = i;
    cfg.output_spatial_axes[i] = 1 + i;
    cfg.strides[i] = stride;
    cfg.padding_low[i] = pad;
    cfg.padding_high[i] = pad;
  }
  cfg.channel_group_count = groups;
  cfg.batch_group_count = 1;
  cfg.output_dtype = CML_DTYPE_INVALID;
  return cml_op_conv_general(f, x, kernel, &cfg);
}

cml_value_t cml_cli_model_conv2d(cml_function_t* f, cml_dtype_t dtype, int64_t n, int64_t h,
                                 int64_t w, int64_t c, int64_t k, int64_t o, int64_t stride,
                                 int64_t pad) {
  cml_value_t x = cml_cli_model_param(f, "x", dtype, 4, (int64_t[]){n, h, w, c});
  cml_value_t kernel = cml_cli_model_param(f, "k", dtype, 4, (int64_t[]){k, k, c, o});
  return cml_cli_model_conv_nhwc(f, x, kernel, stride, pad, 1);
}

double cml_cli_model_conv2d_flops(int64_t n, int64_t h, int64_t w, int64_t c, int64_t k, int64_t o,
                                  int64_t stride, int64_t pad) {
  int64_t oh = (h + 2 * pad - k) / stride + 1, ow = (w + 2 * pad - k) / stride + 1;
  return 2.0 * (double)n * (double)oh * (double)ow * (double)o * (double)(k * k * c);
}

cml_value_t cml_cli_model_resnet_block(cml_function_t* f, cml_dtype_t dtype, int64_t n, int64_t hw,
                                       int64_t channels) {
  const int64_t dims[4] = {n, hw, hw, channels};
  const int64_t kdims[4] = {3, 3, channels, channels};
  cml_value_t x = cml_cli_model_param(f, "x", dtype, 4, dims);
  cml_value_t k1 = cml_cli_model_param(f, "k1", dtype, 4, kdims);
  cml_value_t b1 = cml_cli_model_param(f, "b1", dtype, 1, &channels);
  cml_value_t k2 = cml_cli_model_param(f, "k2", dtype, 4, kdims);
  cml_value_t b2 = cml_cli_model_param(f, "b2", dtype, 1, &channels);
  cml_value_t zero = cml_constant_scalar_f64(f, dtype, 0.0);
  cml_value_t h =
      cml_cli_model_add_bias(f, cml_cli_model_conv_nhwc(f, x, k1, 1, 1, 1), b1, dims, 4);
  h = cml_op_max(f, h, zero);
  h = cml_cli_model_add_bias(f, cml_cli_model_conv_nhwc(f, h, k2, 1, 1, 1), b2, dims, 4);
  return cml_op_max(f, cml_op_add(f, x, h), zero);
}

double cml_cli_model_resnet_block_flops(int64_t n, int64_t hw, int64_t channels) {
  return 2.0 * cml_cli_model_conv2d_flops(n, hw, hw, channels, 3, channels, 1, 1);
}

//===--- transformer encoder block ---===//

cml_value_t cml_cli_model_transformer_block(cml_function_t* f, cml_dtype_t dtype, int64_t batch,
                                            int64_t seq, int64_t d_model, int64_t heads) {
  const int64_t d = d_model, ff = 4 * d_model;
  const int64_t dims[3] = {batch, seq, d}, ff_dims[3] = {batch, seq, ff};
  const int64_t head_dims[4] = {batch, seq, heads, heads > 0 ? d / heads : d};
  cml_value_t x = cml_cli_model_param(f, "x", dtype, 3, dims);
  cml_value_t ln1_g = cml_cli_model_param(f, "ln1_gamma", dtype, 1, &d);
  cml_value_t ln1_b = cml_cli_model_param(f, "ln1_beta", dtype, 1, &d);
  cml_value_t wq = cml_cli_model_param(f, "wq", dtype, 2, (int64_t[]){d, d});
  cml_value_t wk = cml_cli_model_param(f, "wk", dtype, 2, (int64_t[]){d, d});
  cml_value_t wv = cml_cli_model_param(f, "wv", dtype, 2, (int64_t[]){d, d});
  cml_value_t wo = cml_cli_model_param(f, "wo", dtype, 2, (int64_t[]){d, d});
  cml_value_t bo = cml_cli_model_param(f, "bo", dtype, 1, &d);
  cml_value_t ln2_g = cml_cli_model_param(f, "ln2_gamma", dtype, 1, &d);
  cml_value_t ln2_b = cml_cli_model_param(f, "ln2_beta", dtype, 1, &d);
  cml_value_t w1 = cml_cli_model_param(f, "w1", dtype, 2, (int64_t[]){d, ff});
  cml_value_t b1 = cml_cli_model_param(f, "b1", dtype, 1, &ff);
  cml_value_t w2 = cml_cli_model_param(f, "w2", dtype, 2, (int64_t[]){ff, d});
  cml_value_t b2 = cml_cli_model_param(f, "b2", dtype, 1, &d);
  const int64_t last = -1;

  cml_value_t h = cml_op_fused_layer_norm(f, x, &last, 1, 1e-5, ln1_g, ln1_b);
  cml_value_t q = cml_op_reshape(f, cml_cli_model_matmul(f, h, 3, wq), head_dims, 4);
  cml_value_t k = cml_op_reshape(f, cml_cli_model_matmul(f, h, 3, wk), head_dims, 4);
  cml_value_t v = cml_op_reshape(f, cml_cli_model_matmul(f, h, 3, wv), head_dims, 4);
  cml_value_t att = cml_op_fused_sdpa(f, q, k, v, CML_ATTENTION_LAYOUT_BSHD, NULL, NULL, NULL);
  att = cml_op_reshape(f, att, dims, 3);
  cml_value_t x1 =
      cml_op_add(f, x, cml_cli_model_add_bias(f, cml_cli_model_matmul(f, att, 3, wo), bo, dims, 3));

  h = cml_op_fused_layer_norm(f, x1, &last, 1, 1e-5, ln2_g, ln2_b);
  h = cml_cli_model_add_bias(f, cml_cli_model_matmul(f, h, 3, w1), b1, ff_dims, 3);
  h = cml_op_fused_gelu(f, h, false);
  h = cml_cli_model_add_bias(f, cml_cli_model_matmul(f, h, 3, w2), b2, dims, 3);
  return cml_op_add(f, x1, h);
}

double cml_cli_model_transformer_block_flops(int64_t batch, int64_t seq, int64_t d_model) {
  // Per token: q, k, v, o projections (4 d^2) and the MLP (8 d^2) multiply-adds; attention
  // 2 * seq * d multiply-adds (scores and the weighted sum).
  const double tokens = (double)batch * (double)seq, d = (double)d_model;
  return 2.0 * tokens * (12.0 * d * d + 2.0 * (double)seq * d);
}

//===--- decoder step with a KV cache ---===//

cml_value_t cml_cli_model_decoder_step(cml_function_t* f, cml_dtype_t dtype, int64_t batch,
                                       int64_t cached, int64_t d_model, int64_t heads) {
  const int64_t d = d_model, ff = 4 * d_model, dh = heads > 0 ? d / heads : d;
  const int64_t dims[3] = {batch, 1, d}, ff_dims[3] = {batch, 1, ff};
  const int64_t head_dims[4] = {batch, 1, heads, dh};
  const int64_t cache_dims[4] = {batch, cached, heads, dh};
  cml_value_t x = cml_cli_model_param(f, "x", dtype, 3, dims);
  cml_value_t k_cache = cml_cli_model_param(f, "k_cache", dtype, 4, cache_dims);
  cml_value_t v_cache = cml_cli_model_param(f, "v_cache", dtype, 4, cache_dims);
  cml_value_t ln1_g = cml_cli_model_param(f, "ln1_gamma", dtype, 1, &d);
  cml_value_t ln1_b = cml_cli_model_param(f, "ln1_beta", dtype, 1, &d);
  cml_value_t wq = cml_cli_model_param(f, "wq", dtype, 2, (int64_t[]){d, d});
  cml_value_t wk = cml_cli_model_param(f, "wk", dtype, 2, (int64_t[]){d, d});
  cml_value_t wv = cml_cli_model_param(f, "wv", dtype, 2, (int64_t[]){d, d});
  cml_value_t wo = cml_cli_model_param(f, "wo", dtype, 2, (int64_t[]){d, d});
  cml_value_t bo = cml_cli_model_param(f, "bo", dtype, 1, &d);
  cml_value_t ln2_g = cml_cli_model_param(f, "ln2_gamma", dtype, 1, &d);
  cml_value_t ln2_b = cml_cli_model_param(f, "ln2_beta", dtype, 1, &d);
  cml_value_t w1 = cml_cli_model_param(f, "w1", dtype, 2, (int64_t[]){d, ff});
  cml_value_t b1 = cml_cli_model_param(f, "b1", dtype, 1, &ff);
  cml_value_t w2 = cml_cli_model_param(f, "w2", dtype, 2, (int64_t[]){ff, d});
  cml_value_t b2 = cml_cli_model_param(f, "b2", dtype, 1, &d);
  const int64_t last = -1;

  cml_value_t h = cml_op_fused_layer_norm(f, x, &last, 1, 1e-5, ln1_g, ln1_b);
  cml_value_t q = cml_op_reshape(f, cml_cli_model_matmul(f, h, 3, wq), head_dims, 4);
  cml_value_t k = cml_op_reshape(f, cml_cli_model_matmul(f, h, 3, wk), head_dims, 4);
  cml_value_t v = cml_op_reshape(f, cml_cli_model_matmul(f, h, 3, wv), head_dims, 4);
  k = cml_op_concatenate(f, 1, (cml_value_t[]){k_cache, k}, 2);
  v = cml_op_concatenate(f, 1, (cml_value_t[]){v_cache, v}, 2);
  cml_value_t att = cml_op_fused_sdpa(f, q, k, v, CML_ATTENTION_LAYOUT_BSHD, NULL, NULL, NULL);
  att = cml_op_reshape(f, att, dims, 3);
  cml_value_t x1 =
      cml_op_add(f, x, cml_cli_model_add_bias(f, cml_cli_model_matmul(f, att, 3, wo), bo, dims, 3));

  h = cml_op_fused_layer_norm(f, x1, &last, 1, 1e-5, ln2_g, ln2_b);
  h = cml_cli_model_add_bias(f, cml_cli_model_matmul(f, h, 3, w1), b1, ff_dims, 3);
  h = cml_op_fused_gelu(f, h, false);
  h = cml_cli_model_add_bias(f, cml_cli_model_matmul(f, h, 3, w2), b2, dims, 3);
  return cml_op_add(f, x1, h);
}

double cml_cli_model_decoder_step_flops(int64_t batch, int64_t cached, int64_t d_model) {
  // Per token: the projections and the MLP (12 d^2 multiply-adds) and attention over the
  // cached + 1 positions (2 (cached + 1) d).
  const double d = (double)d_model;
  return 2.0 * (double)batch * (12.0 * d * d + 2.0 * (double)(cached + 1) * d);
}
