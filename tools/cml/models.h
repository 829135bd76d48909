// SPDX-License-Identifier: Apache-2.0
// tools/cml/models.h: graph builders of the standard benchmark models (an MLP, a convolution, a
// ResNet basic block and a transformer encoder block), over the public API only; used by
// `cml bench` (bench.c) and by the side-by-side programs in bench/ (bench_nn.c).
//
// Each builder first declares all of its parameters (so their order is fixed: the input, then
// the weights in the order the model uses them), then the ops, and returns the one output.
// The matching *_flops function counts 2 per multiply-add of the matrix products and
// convolutions (the elementwise work is not counted).
#ifndef CML_TOOLS_MODELS_H_
#define CML_TOOLS_MODELS_H_

#include "cml/cml.h"

// MLP forward, x [batch, 784] -> 512 relu -> 512 relu -> 10 (Dot + broadcast bias + Max).
cml_value_t cml_cli_model_mlp(cml_function_t* f, cml_dtype_t dtype, int64_t batch);
double cml_cli_model_mlp_flops(int64_t batch);

// ConvGeneral of an NHWC |x| with an HWIO |kernel|: |stride| and symmetric |pad| on both
// spatial axes, |groups| feature groups (1: none; C: depthwise).
cml_value_t cml_cli_model_conv_nhwc(cml_function_t* f, cml_value_t x, cml_value_t kernel,
                                    int64_t stride, int64_t pad, int64_t groups);

// ConvGeneral NHWC input [n, h, w, c], HWIO kernel [k, k, c, o], |stride| and symmetric |pad|
// on both spatial axes.
cml_value_t cml_cli_model_conv2d(cml_function_t* f, cml_dtype_t dtype, int64_t n, int64_t h,
                                 int64_t w, int64_t c, int64_t k, int64_t o, int64_t stride,
                                 int64_t pad);
double cml_cli_model_conv2d_flops(int64_t n, int64_t h, int64_t w, int64_t c, int64_t k, int64_t o,
                                  int64_t stride, int64_t pad);

// ResNet basic block (inference, batch norm folded into the convolutions' biases):
// relu(x + conv3x3(relu(conv3x3(x) + b1)) + b2) on x [n, hw, hw, channels].
cml_value_t cml_cli_model_resnet_block(cml_function_t* f, cml_dtype_t dtype, int64_t n, int64_t hw,
                                       int64_t channels);
double cml_cli_model_resnet_block_flops(int64_t n, int64_t hw, int64_t channels);

// Pre-LayerNorm transformer encoder block (inference) on x [batch, seq, d_model]:
// x1 = x + (sdpa(ln1(x) Wq, ln1(x) Wk, ln1(x) Wv) Wo + bo), y = x1 + W2 gelu(W1 ln2(x1) + b1) + b2,
// |heads| heads (d_model % heads == 0), an MLP of 4 * d_model, no mask.
cml_value_t cml_cli_model_transformer_block(cml_function_t* f, cml_dtype_t dtype, int64_t batch,
                                            int64_t seq, int64_t d_model, int64_t heads);
double cml_cli_model_transformer_block_flops(int64_t batch, int64_t seq, int64_t d_model);

// One autoregressive decoder step with a KV cache (inference): the same pre-LayerNorm block on
// one new token x [batch, 1, d_model], whose key and value are appended to the caches
// k_cache, v_cache [batch, cached, heads, d_model / heads] (parameters) before attention over
// the cached + 1 positions; returns the block's output [batch, 1, d_model].
cml_value_t cml_cli_model_decoder_step(cml_function_t* f, cml_dtype_t dtype, int64_t batch,
                                       int64_t cached, int64_t d_model, int64_t heads);
double cml_cli_model_decoder_step_flops(int64_t batch, int64_t cached, int64_t d_model);

#endif  // CML_TOOLS_MODELS_H_
