// SPDX-License-Identifier: Apache-2.0
// bench/bench_train.c: one training step of a 2-layer MLP (784-512-10, relu, softmax
// cross-entropy, batch 128): the forward loss alone, and loss + gradients (cml_gradients) +
// an SGD update, c vs c:reference vs xla:cpu. The step's output is the updated parameters
// concatenated (one output keeps every gradient live).
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

int main(int argc, char** argv) {
  bench_options_t opts;
  if (!bench_parse_args(&opts, argc, argv, "MLP training step (gradients + SGD)")) return 2;
  bench_case_t cases[2];
  double fwd = 2.0 * 128 * (double)(kIn * kHidden + kHidden * kOut);
  for (int step = 0; step < 2; ++step) {
    bench_case_t* c = &cases[step];
    memset(c, 0, sizeof *c);
    c->group = "train";
    c->build = build_train;
    c->dtype = CML_DTYPE_F32;
    c->dims[TR_BATCH] = 128;
    c->dims[TR_STEP] = step;
    c->flops = step ? 3 * fwd : fwd;  // backward: about twice the forward's products
    c->heavy = true;
    bench_case_name(c, "f32 784-512-10 batch 128: %s",
                    step ? "train step (loss, gradients, SGD)" : "forward loss");
  }
  bench_run(&opts, cases, 2);
  return bench_finish(&opts);
}
