// SPDX-License-Identifier: Apache-2.0
// bench/bench_train.c: one training step of a 2-layer MLP (784-512-10, relu, softmax
// cross-entropy, batch 128): the forward loss alone, and loss + gradients (cml_gradients) +
// an SGD update, c vs c:reference vs xla:cpu; and of one pre-norm transformer block (d 256,
// 4 heads, seq 128, batch 8: layer norm, QKV projection, causal FusedScaledDotProductAttention,
// output projection, layer norm, gelu MLP 256-1024-256, residuals; squared-error loss): the
// forward loss alone, loss + gradients + AdamW, and the gradient graph alone (loss and
// gradients, the gradients concatenated as the output). Run the block with
// -b c -b c:fusion=false -b xla:cpu to compare the fused ops (native kernels and VJPs) with the
// same graph decomposed, and with XLA. A step's output is the updated parameters concatenated
// (one output keeps every gradient live). And an LSTM written as a While loop over 128 and
// 1024 steps: the forward loss, and the gradients (the loop differentiated as a loop).
#include <math.h>
#include <string.h>

#include "bench/bench_common.h"

enum { TR_BATCH = 0, TR_STEP = 1 };
static const int64_t kIn = 784, kHidden = 512, kOut = 10;

static cml_value_t build_train(cml_function_t* f, const bench_case_t* c) {
  int64_t batch = c->dims[TR_BATCH];
  cml_dtype_t dt = c->dtype;
  cml_value_t x = bench_param(f, "x", dt, 2, (int64_t[]){batch, kIn});
  cml_value_t y = bench_param(f, "onehot", dt, 2, (int64_t[]){batch, kOut});
  cml_value_t p[4] = {
      bench_param(f, "w1", dt, 2, (int64_t[]){kIn, kHidden}), bench_param(f, "b1", dt, 1, &kHidden),
      bench_param(f, "w2", dt, 2, (int64_t[]){kHidden, kOut}), bench_param(f, "b2", dt, 1, &kOut)};
  cml_value_t h = cml_op_dot(f, x, p[0]);
  h = cml_op_add(f, h, bench_broadcast_back(f, p[1], (int64_t[]){batch, kHidden}, 2, 0));
  h = cml_op_max(f, h, cml_constant_scalar_f64(f, dt, 0.0));
  cml_value_t z = cml_op_dot(f, h, p[2]);
  z = cml_op_add(f, z, bench_broadcast_back(f, p[3], (int64_t[]){batch, kOut}, 2, 0));
  cml_value_t m = cml_op_stop_gradient(f, cml_op_reduce_max(f, z, (int64_t[]){1}, 1));
  z = cml_op_sub(f, z, bench_broadcast_back(f, m, (int64_t[]){batch, kOut}, 2, 1));
  cml_value_t lse = cml_op_log(f, cml_op_reduce_sum(f, cml_op_exp(f, z), (int64_t[]){1}, 1));
  cml_value_t picked = cml_op_reduce_sum(f, cml_op_mul(f, z, y), (int64_t[]){1}, 1);
  cml_value_t loss = cml_op_reduce_sum(f, cml_op_sub(f, lse, picked), NULL, 0);
  loss = cml_op_mul(f, loss, cml_constant_scalar_f64(f, dt, 1.0 / (double)batch));
  if (!c->dims[TR_STEP]) return loss;
  cml_value_t g[4], np[4];
  cml_sgd_config_t sc;
  cml_sgd_config_init(&sc);
  cml_status_t st = cml_gradients(f, loss, p, 4, g);
  if (st == CML_OK) st = cml_optim_sgd_step(f, &sc, p, g, NULL, 4, np, NULL);
  if (st != CML_OK) {
    cml_status_free(st);  // the error sticks to the builder; the runner reports it
    return CML_VALUE_INVALID;
  }
  cml_value_t flat[4];
  for (int i = 0; i < 4; ++i) {
    cml_shape_t s;
    cml_builder_value_shape(cml_function_builder(f), np[i], &s);
    int64_t n = cml_shape_element_count(&s);
    flat[i] = cml_op_reshape(f, np[i], &n, 1);
  }
  return cml_op_concatenate(f, 0, flat, 4);
}

enum { TB_B = 8, TB_S = 128, TB_D = 256, TB_H = 4, TB_F = 1024 };

// Flattens |v| to rank 1 (for concatenating the updated parameters).
static cml_value_t flatten(cml_function_t* f, cml_value_t v) {
  cml_shape_t s;
  cml_builder_value_shape(cml_function_builder(f), v, &s);
  int64_t n = cml_shape_element_count(&s);
  return cml_op_reshape(f, v, &n, 1);
}

// The block's parameters, in the order they are packed into one flat vector (the runner takes
// at most 12 inputs, so parameters and optimizer state travel as flat vectors).
enum { TB_P = 10 };
static const int32_t kBlockRank[TB_P] = {1, 1, 2, 2, 1, 1, 2, 1, 2, 1};
static const int64_t kBlockDims[TB_P][2] = {{TB_D, 0},    {TB_D, 0}, {TB_D, 3 * TB_D}, {TB_D, TB_D},
                                            {TB_D, 0},    {TB_D, 0}, {TB_D, TB_F},     {TB_F, 0},
                                            {TB_F, TB_D}, {TB_D, 0}};

static int64_t block_param_count(void) {
  int64_t total = 0;
  for (int i = 0; i < TB_P; ++i)
    total += kBlockDims[i][0] * (kBlockRank[i] == 2 ? kBlockDims[i][1] : 1);
  return total;
}

static cml_value_t build_block(cml_function_t* f, const bench_case_t* c) {
  const cml_dtype_t dt = c->dtype;
  const int64_t n = TB_B * TB_S, hd = TB_D / TB_H, total = block_param_count();
  cml_value_t x = bench_param(f, "x", dt, 2, (int64_t[]){n, TB_D});
  cml_value_t t = bench_param(f, "target", dt, 2, (int64_t[]){n, TB_D});
  cml_value_t theta = bench_param(f, "theta", dt, 1, &total);
  cml_value_t p[TB_P];
  int64_t at = 0;
  for (int i = 0; i < TB_P; ++i) {
    const int64_t size = kBlockDims[i][0] * (kBlockRank[i] == 2 ? kBlockDims[i][1] : 1);
    const int64_t end = at + size;
    p[i] =
        cml_op_reshape(f, cml_op_slice(f, theta, &at, &end, NULL, 1), kBlockDims[i], kBlockRank[i]);
    // The runner's inputs are uniform in [-1, 1): scale the matrices by 1 / sqrt(fan-in).
    if (kBlockRank[i] == 2) {
      p[i] =
          cml_op_mul(f, p[i], cml_constant_scalar_f64(f, dt, 1.0 / sqrt((double)kBlockDims[i][0])));
    }
    at = end;
  }
  const int64_t last = -1;
  cml_value_t h = cml_op_fused_layer_norm(f, x, &last, 1, 1e-5, p[0], p[1]);
  cml_value_t qkv[3];
  if (!cml_op_fused_attention_qkv_projection(f, h, p[2], CML_VALUE_INVALID, CML_VALUE_INVALID,
                                             CML_VALUE_INVALID, TB_D, TB_D, qkv)) {
    return CML_VALUE_INVALID;
  }
  const int64_t bshd[4] = {TB_B, TB_S, TB_H, hd};
  for (int i = 0; i < 3; ++i) qkv[i] = cml_op_reshape(f, qkv[i], bshd, 4);
  cml_sdpa_config_t sc;
  cml_sdpa_config_init(&sc);
  sc.causal = true;
  cml_value_t a =
      cml_op_fused_sdpa(f, qkv[0], qkv[1], qkv[2], CML_ATTENTION_LAYOUT_BSHD, &sc, NULL, NULL);
  a = cml_op_dot(f, cml_op_reshape(f, a, (int64_t[]){n, TB_D}, 2), p[3]);
  cml_value_t r = cml_op_add(f, x, a);
  h = cml_op_fused_layer_norm(f, r, &last, 1, 1e-5, p[4], p[5]);
  cml_dense_config_t dc;
  cml_dense_config_init(&dc);
  dc.activation = CML_ACTIVATION_GELU;
  h = cml_op_fused_dense(f, h, p[6], p[7], &dc);
  h = cml_op_fused_dense(f, h, p[8], p[9], NULL);
  cml_value_t y = cml_op_add(f, r, h);
  cml_value_t e = cml_op_sub(f, y, t);
  cml_value_t loss = cml_op_mul(f, cml_op_reduce_sum(f, cml_op_mul(f, e, e), NULL, 0),
                                cml_constant_scalar_f64(f, dt, 1.0 / (double)(n * TB_D)));
  if (!c->dims[TR_STEP]) return loss;
  // Gradients of the unpacked parameters, packed again; AdamW on the flat vectors.
  cml_value_t g[TB_P];
  cml_status_t st = cml_gradients(f, loss, p, TB_P, g);
  if (st != CML_OK) {
    cml_status_free(st);  // the error sticks to the builder; the runner reports it
    return CML_VALUE_INVALID;
  }
  for (int i = 0; i < TB_P; ++i) g[i] = flatten(f, g[i]);
  cml_value_t grad = cml_op_concatenate(f, 0, g, TB_P);
  if (c->dims[TR_STEP] == 2) return grad;  // the gradient graph alone
  cml_value_t m = bench_param(f, "m", dt, 1, &total), v = bench_param(f, "v", dt, 1, &total);
  cml_value_t step = bench_param(f, "step", dt, 0, NULL);
  // Valid optimizer state from the runner's inputs: v >= 0, step >= 1.
  v = cml_op_abs(f, v);
  step = cml_op_add(f, cml_op_abs(f, step), cml_constant_scalar_f64(f, dt, 1.0));
  cml_adam_config_t ac;
  cml_adamw_config_init(&ac);
  cml_value_t np, nm, nv;
  st = cml_optim_adam_step(f, &ac, &theta, &grad, &m, &v, 1, step, &np, &nm, &nv);
  if (st != CML_OK) {
    cml_status_free(st);
    return CML_VALUE_INVALID;
  }
  return cml_op_concatenate(f, 0, (cml_value_t[]){np, nm, nv}, 3);
}

// An LSTM over a While (batch 8, input 64, hidden 64, T steps): each trip reads x_t from a
// captured [T, 8, 64] sequence and writes h into a [T, 8, 64] results buffer in the state;
// loss = sum(buffer^2). TL_GRAD 0: the loss; 1: the gradients of w [128, 256] and b [256]
// (cml_gradients differentiates the loop as a loop), concatenated.
enum { TL_T = 0, TL_GRAD = 1, TL_B = 8, TL_I = 64, TL_H = 64 };

static cml_value_t build_lstm(cml_function_t* f, const bench_case_t* c) {
  const int64_t steps = c->dims[TL_T];
  const cml_dtype_t dt = CML_DTYPE_F32;
  cml_value_t xs = bench_param(f, "xs", dt, 3, (int64_t[]){steps, TL_B, TL_I});
  cml_value_t w = bench_param(f, "w", dt, 2, (int64_t[]){TL_I + TL_H, 4 * TL_H});
  cml_value_t bias = bench_param(f, "b", dt, 1, (int64_t[]){4 * TL_H});
  const int64_t hd[2] = {TL_B, TL_H}, bd[3] = {steps, TL_B, TL_H}, gd[2] = {TL_B, 4 * TL_H};
  const cml_shape_t is = cml_shape_make(CML_DTYPE_I32, 0, NULL), hs = cml_shape_make(dt, 2, hd),
                    bs = cml_shape_make(dt, 3, bd);
  const cml_shape_t state[4] = {is, hs, hs, bs};
  cml_function_t *cond = NULL, *body = NULL;
  if (cml_function_new_closure(f, &cond) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t ct = cml_parameter(cond, "t", &is);
  for (int k = 1; k < 4; ++k) (void)cml_parameter(cond, NULL, &state[k]);
  cml_value_t lt = cml_op_less_than(cond, ct, cml_constant_scalar_i64(cond, CML_DTYPE_I32, steps));
  if (cml_function_return(cond, &lt, 1) != CML_OK) return CML_VALUE_INVALID;
  if (cml_function_new_closure(f, &body) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t v[4];
  for (int k = 0; k < 4; ++k) v[k] = cml_parameter(body, NULL, &state[k]);
  cml_value_t z = cml_constant_scalar_i64(body, CML_DTYPE_I32, 0), at[3] = {v[0], z, z};
  cml_value_t xt = cml_op_dynamic_slice(body, xs, at, (int64_t[]){1, TL_B, TL_I}, 3);
  xt = cml_op_reshape(body, xt, (int64_t[]){TL_B, TL_I}, 2);
  cml_value_t xh = cml_op_concatenate(body, 1, (cml_value_t[]){xt, v[1]}, 2);
  cml_value_t g =
      cml_op_add(body, cml_op_dot(body, xh, w), bench_broadcast_back(body, bias, gd, 2, 0));
  cml_value_t gate[4];
  for (int i = 0; i < 4; ++i) {
    gate[i] =
        cml_op_slice(body, g, (int64_t[]){0, i * TL_H}, (int64_t[]){TL_B, (i + 1) * TL_H}, NULL, 2);
  }
  cml_value_t c2 =
      cml_op_add(body, cml_op_mul(body, cml_op_logistic(body, gate[1]), v[2]),
                 cml_op_mul(body, cml_op_logistic(body, gate[0]), cml_op_tanh(body, gate[2])));
  cml_value_t h2 = cml_op_mul(body, cml_op_logistic(body, gate[3]), cml_op_tanh(body, c2));
  cml_value_t row = cml_op_reshape(body, h2, (int64_t[]){1, TL_B, TL_H}, 3);
  cml_value_t next[4] = {cml_op_add(body, v[0], cml_constant_scalar_i64(body, CML_DTYPE_I32, 1)),
                         h2, c2, cml_op_dynamic_update_slice(body, v[3], row, at, 3)};
  if (cml_function_return(body, next, 4) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t zero = cml_constant_scalar_f64(f, dt, 0.0);
  cml_value_t zh = cml_op_broadcast_in_dim(f, zero, hd, 2, NULL, 0);
  cml_value_t init[4] = {cml_constant_scalar_i64(f, CML_DTYPE_I32, 0), zh, zh,
                         cml_op_broadcast_in_dim(f, zero, bd, 3, NULL, 0)};
  cml_value_t out[4];
  if (!cml_op_while(f, cond, body, init, 4, out)) return CML_VALUE_INVALID;
  cml_value_t loss = cml_op_reduce_sum(f, cml_op_mul(f, out[3], out[3]), NULL, 0);
  if (!c->dims[TL_GRAD]) return loss;
  cml_value_t grads[2];
  cml_status_t st = cml_gradients(f, loss, (cml_value_t[]){w, bias}, 2, grads);
  if (st != CML_OK) {
    cml_status_free(st);
    return CML_VALUE_INVALID;
  }
  return cml_op_concatenate(f, 0, (cml_value_t[]){flatten(f, grads[0]), grads[1]}, 2);
}

// Clears |c| and sets what every case here shares: f32, the "train" group, |build|.
static void train_case(bench_case_t* c, bench_build_fn build) {
  memset(c, 0, sizeof *c);
  c->group = "train";
  c->build = build;
  c->dtype = CML_DTYPE_F32;
}

int main(int argc, char** argv) {
  bench_options_t opts;
  if (!bench_parse_args(&opts, argc, argv, "MLP training step (gradients + SGD)")) return 2;
  bench_case_t cases[9];
  double fwd = 2.0 * 128 * (double)(kIn * kHidden + kHidden * kOut);
  for (int step = 0; step < 2; ++step) {
    bench_case_t* c = &cases[step];
    train_case(c, build_train);
    c->dims[TR_BATCH] = 128;
    c->dims[TR_STEP] = step;
    c->flops = step ? 3 * fwd : fwd;  // backward: about twice the forward's products
    c->heavy = true;
    bench_case_name(c, "f32 784-512-10 batch 128: %s",
                    step ? "train step (loss, gradients, SGD)" : "forward loss");
  }
  // The block: projections 2 n D (3D + D + 2F) flops, attention 4 B S^2 D (causal: in full).
  const double n = TB_B * TB_S;
  double block = 2.0 * n * TB_D * (4.0 * TB_D + 2.0 * TB_F) + 4.0 * TB_B * TB_S * TB_S * TB_D;
  static const char* const kBlockCase[3] = {"forward loss", "train step (loss, gradients, AdamW)",
                                            "gradient graph (loss and gradients)"};
  for (int step = 0; step < 3; ++step) {
    bench_case_t* c = &cases[2 + step];
    train_case(c, build_block);
    c->dims[TR_STEP] = step;
    c->flops = step ? 3 * block : block;
    c->heavy = true;
    bench_case_name(c, "f32 transformer block d256 h4 seq 128 batch 8: %s", kBlockCase[step]);
  }
  // The LSTM: per trip 2 B (I + H) 4H flops; the gradient about 4x (the forward, the body
  // recomputed, its VJP).
  static const int64_t kSteps[2] = {128, 1024};
  for (int k = 0; k < 4; ++k) {
    bench_case_t* c = &cases[5 + k];
    train_case(c, build_lstm);
    c->dims[TL_T] = kSteps[k / 2];
    c->dims[TL_GRAD] = k % 2;
    const double lstm = 2.0 * TL_B * (TL_I + TL_H) * 4 * TL_H * (double)kSteps[k / 2];
    c->flops = k % 2 ? 4 * lstm : lstm;
    bench_case_name(c, "f32 LSTM While, %lld steps, batch 8, 64-64: %s", (long long)kSteps[k / 2],
                    k % 2 ? "gradients" : "forward loss");
  }
  bench_run(&opts, cases, 9);
  return bench_finish(&opts);
}
