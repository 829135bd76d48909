// SPDX-License-Identifier: Apache-2.0
// examples/train_mlp/main.c: trains a 2-layer classifier with cml_gradients and Adam.
//
// The task is generated, with a known optimum: 512 points x uniform in [-1, 1]^8, labelled by
// a fixed "teacher" (class = argmax(x @ T), 4 classes), so a perfect classifier exists (100%
// accuracy). The student is relu(x @ w1 + b1) @ w2 + b2 (8-32-4), trained full-batch on 384
// points with softmax cross-entropy and Adam (lr 0.02) for 300 steps; the other 128 points are
// held out. One executable runs one training step: inputs are the parameters, the Adam state
// and the step number, outputs the loss and the updated parameters and state, fed back in.
//
//   example_train_mlp [backend]           train on |backend| (default: GOMLX_BACKEND or the
//                                          best available), print the loss curve; exit 0 when
//                                          the held-out accuracy reaches 90%
//   example_train_mlp --compare A B       train on A and B side by side; exit 0 when every
//                                          step's loss agrees within 1e-4 (relative) and both
//                                          reach 90%; exit 77 when B (or A) is unavailable
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cml/cml.h"

enum { kIn = 8, kHidden = 32, kClasses = 4, kTrain = 384, kTest = 128, kSteps = 300 };
enum { kParams = 4, kInputs = 2 + 3 * kParams + 1 };  // x, onehot, params, m, v, step

static float g_x[kTrain + kTest][kIn];
static int g_label[kTrain + kTest];
static float g_onehot[kTrain][kClasses];

static uint64_t g_rng = 12345;
static float rnd(void) {  // uniform in [-1, 1)
  g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((double)(g_rng >> 11) / 4503599627370496.0 - 1.0);
}

static void make_data(void) {
  float teacher[kIn][kClasses];
  for (int i = 0; i < kIn; ++i) {
    for (int k = 0; k < kClasses; ++k) teacher[i][k] = rnd();
  }
  for (int n = 0; n < kTrain + kTest; ++n) {
    float best = -1e30f;
    for (int i = 0; i < kIn; ++i) g_x[n][i] = rnd();
    for (int k = 0; k < kClasses; ++k) {
      float s = 0;
      for (int i = 0; i < kIn; ++i) s += g_x[n][i] * teacher[i][k];
      if (s > best) {
        best = s;
        g_label[n] = k;
      }
    }
    if (n < kTrain) {
      for (int k = 0; k < kClasses; ++k) g_onehot[n][k] = k == g_label[n] ? 1.0f : 0.0f;
    }
  }
}

static const int64_t kDims[kParams][2] = {
    {kIn, kHidden}, {kHidden, 0}, {kHidden, kClasses}, {kClasses, 0}};
static cml_shape_t param_shape(int i) {
  return cml_shape_make(CML_DTYPE_F32, kDims[i][1] ? 2 : 1, kDims[i]);
}

// logits = relu(x @ w1 + b1) @ w2 + b2.
static cml_value_t forward(cml_function_t* f, cml_value_t x, const cml_value_t* p, int64_t batch) {
  cml_value_t h = cml_op_dot(f, x, p[0]);
  h = cml_op_add(
      f, h, cml_op_broadcast_in_dim(f, p[1], (int64_t[]){batch, kHidden}, 2, (int64_t[]){1}, 1));
  h = cml_op_max(f, h, cml_constant_scalar_f64(f, CML_DTYPE_F32, 0.0));
  cml_value_t y = cml_op_dot(f, h, p[2]);
  return cml_op_add(
      f, y, cml_op_broadcast_in_dim(f, p[3], (int64_t[]){batch, kClasses}, 2, (int64_t[]){1}, 1));
}

// The training step: loss = mean(logsumexp(y) - sum(onehot * y)), then one Adam step.
// Outputs: loss, params[4], m[4], v[4], step + 1.
static cml_status_t build_step(cml_backend_t* backend, cml_executable_t** out_exe) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(backend, "train_step", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t xs = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){kTrain, kIn});
  cml_shape_t ys = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){kTrain, kClasses});
  cml_shape_t ts = cml_shape_make(CML_DTYPE_F32, 0, NULL);
  cml_value_t x = cml_parameter(f, "x", &xs), onehot = cml_parameter(f, "onehot", &ys);
  cml_value_t p[kParams], m[kParams], v[kParams];
  for (int i = 0; i < kParams; ++i) {
    cml_shape_t s = param_shape(i);
    p[i] = cml_parameter(f, NULL, &s);
  }
  for (int i = 0; i < kParams; ++i) {
    cml_shape_t s = param_shape(i);
    m[i] = cml_parameter(f, NULL, &s);
  }
  for (int i = 0; i < kParams; ++i) {
    cml_shape_t s = param_shape(i);
    v[i] = cml_parameter(f, NULL, &s);
  }
  cml_value_t step = cml_parameter(f, "step", &ts);
  cml_value_t y = forward(f, x, p, kTrain);
  cml_value_t mx = cml_op_stop_gradient(f, cml_op_reduce_max(f, y, (int64_t[]){1}, 1));
  cml_value_t z = cml_op_sub(
      f, y, cml_op_broadcast_in_dim(f, mx, (int64_t[]){kTrain, kClasses}, 2, (int64_t[]){0}, 1));
  cml_value_t lse = cml_op_log(f, cml_op_reduce_sum(f, cml_op_exp(f, z), (int64_t[]){1}, 1));
  cml_value_t picked = cml_op_reduce_sum(f, cml_op_mul(f, z, onehot), (int64_t[]){1}, 1);
  cml_value_t loss = cml_op_reduce_sum(f, cml_op_sub(f, lse, picked), NULL, 0);
  loss = cml_op_div(f, loss, cml_constant_scalar_f64(f, CML_DTYPE_F32, kTrain));

  cml_value_t outs[1 + 3 * kParams + 1];
  cml_value_t g[kParams];
  cml_status_t st = cml_gradients(f, loss, p, kParams, g);
  cml_adam_config_t ac;
  cml_adam_config_init(&ac);
  ac.learning_rate = 0.02;
  if (st == CML_OK) {
    st = cml_optim_adam_step(f, &ac, p, g, m, v, kParams, step, outs + 1, outs + 1 + kParams,
                             outs + 1 + 2 * kParams);
  }
  outs[0] = loss;
  outs[1 + 3 * kParams] = cml_op_add(f, step, cml_constant_scalar_f64(f, CML_DTYPE_F32, 1.0));
  if (st == CML_OK) st = cml_function_return(f, outs, 1 + 3 * kParams + 1);
  if (st == CML_OK) st = cml_builder_compile(b, out_exe);
  cml_builder_destroy(b);
  return st;
}

typedef struct trainer_t {
  cml_backend_t* backend;
  cml_executable_t* exe;
  cml_buffer_t* in[kInputs];  // x, onehot, params, m, v, step
  float params[kParams][kHidden * kHidden];
} trainer_t;

static cml_status_t upload(trainer_t* t, int slot, const cml_shape_t* s, const void* data) {
  return cml_buffer_from_host(t->backend, 0, s, data, cml_shape_byte_size(s), &t->in[slot]);
}

static cml_status_t trainer_init(trainer_t* t, const char* config) {
  memset(t, 0, sizeof *t);
  CML_RETURN_IF_ERROR(cml_backend_new_with_config(config, &t->backend));
  CML_RETURN_IF_ERROR(build_step(t->backend, &t->exe));
  cml_shape_t xs = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){kTrain, kIn});
  cml_shape_t ys = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){kTrain, kClasses});
  CML_RETURN_IF_ERROR(upload(t, 0, &xs, g_x));
  CML_RETURN_IF_ERROR(upload(t, 1, &ys, g_onehot));
  static float init[kParams][kHidden * kHidden], zeros[kHidden * kHidden];
  uint64_t saved = g_rng;
  g_rng = 777;  // the same initial weights on every backend
  for (int i = 0; i < kParams; ++i) {
    cml_shape_t s = param_shape(i);
    int64_t n = cml_shape_element_count(&s);
    double scale = kDims[i][1] ? 1.0 / sqrt((double)kDims[i][0]) : 0.0;
    for (int64_t k = 0; k < n; ++k) init[i][k] = (float)(scale * rnd());
    CML_RETURN_IF_ERROR(upload(t, 2 + i, &s, init[i]));
    CML_RETURN_IF_ERROR(upload(t, 2 + kParams + i, &s, zeros));
    CML_RETURN_IF_ERROR(upload(t, 2 + 2 * kParams + i, &s, zeros));
  }
  g_rng = saved;
  cml_shape_t ts = cml_shape_make(CML_DTYPE_F32, 0, NULL);
  float one = 1.0f;
  return upload(t, 2 + 3 * kParams, &ts, &one);
}

// One step: runs the executable and swaps the new state in. Writes the loss.
static cml_status_t trainer_step(trainer_t* t, float* loss) {
  cml_buffer_t* out[1 + 3 * kParams + 1];
  CML_RETURN_IF_ERROR(cml_executable_execute(t->exe, t->in, kInputs, NULL, 0, out));
  cml_status_t st = cml_buffer_copy_to_host(out[0], loss, sizeof *loss);
  cml_buffer_release(out[0]);
  for (int k = 0; k < 3 * kParams + 1; ++k) {
    cml_buffer_release(t->in[2 + k]);
    t->in[2 + k] = out[1 + k];
  }
  return st;
}

// Held-out accuracy, computed on the host from the trained parameters.
static cml_status_t trainer_accuracy(trainer_t* t, double* accuracy) {
  for (int i = 0; i < kParams; ++i) {
    cml_shape_t s = param_shape(i);
    CML_RETURN_IF_ERROR(
        cml_buffer_copy_to_host(t->in[2 + i], t->params[i], cml_shape_byte_size(&s)));
  }
  int correct = 0;
  for (int n = kTrain; n < kTrain + kTest; ++n) {
    float h[kHidden], best = -1e30f;
    int arg = 0;
    for (int j = 0; j < kHidden; ++j) {
      float a = t->params[1][j];
      for (int i = 0; i < kIn; ++i) a += g_x[n][i] * t->params[0][i * kHidden + j];
      h[j] = a > 0 ? a : 0;
    }
    for (int k = 0; k < kClasses; ++k) {
      float a = t->params[3][k];
      for (int j = 0; j < kHidden; ++j) a += h[j] * t->params[2][j * kClasses + k];
      if (a > best) {
        best = a;
        arg = k;
      }
    }
    correct += arg == g_label[n];
  }
  *accuracy = (double)correct / kTest;
  return CML_OK;
}

static void trainer_deinit(trainer_t* t) {
  for (int i = 0; i < kInputs; ++i) cml_buffer_release(t->in[i]);
  cml_executable_release(t->exe);
  cml_backend_release(t->backend);
}

static int report(cml_status_t st, const char* what) {
  fprintf(stderr, "%s: %s\n", what, cml_status_message(st));
  cml_status_free(st);
  return 1;
}

static int usage(void) {
  fprintf(stderr,
          "usage: example_train_mlp [backend]\n"
          "       example_train_mlp --compare A B\n");
  return 2;
}

int main(int argc, char** argv) {
  make_data();
  // One optional backend, or --compare with exactly two; anything else is a usage error.
  if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
    usage();
    return 0;
  }
  if (argc >= 2 && argv[1][0] == '-' && strcmp(argv[1], "--compare") != 0) return usage();
  if (argc >= 2 && strcmp(argv[1], "--compare") == 0 && argc != 4) return usage();
  if (argc >= 2 && strcmp(argv[1], "--compare") != 0 && argc != 2) return usage();
  bool compare = argc >= 4 && strcmp(argv[1], "--compare") == 0;
  const char* configs[2] = {argc >= 2 && !compare ? argv[1] : getenv("GOMLX_BACKEND"), NULL};
  if (compare) {
    configs[0] = argv[2];
    configs[1] = argv[3];
  }
  if (!configs[0]) configs[0] = "";
  int count = compare ? 2 : 1;
  trainer_t t[2];
  for (int k = 0; k < count; ++k) {
    cml_status_t st = trainer_init(&t[k], configs[k]);
    if (st != CML_OK) {
      bool missing = cml_status_code(st) == CML_STATUS_UNAVAILABLE ||
                     cml_status_code(st) == CML_STATUS_NOT_FOUND;
      int rc = report(st, configs[k]);
      for (int j = 0; j <= k; ++j) trainer_deinit(&t[j]);
      if (compare && missing) {
        printf("skipped: backend \"%s\" unavailable\n", configs[k]);
        return 77;
      }
      return rc;
    }
  }
  int failures = 0;
  double worst = 0;
  for (int step = 1; step <= kSteps; ++step) {
    float loss[2] = {0, 0};
    for (int k = 0; k < count; ++k) {
      cml_status_t st = trainer_step(&t[k], &loss[k]);
      if (st != CML_OK) {
        failures = report(st, configs[k]);
        goto done;
      }
    }
    if (compare) {
      double diff = fabs((double)loss[0] - loss[1]) / (1.0 + fabs((double)loss[0]));
      if (diff > worst) worst = diff;
      if (diff > 1e-4) {
        fprintf(stderr, "step %d: loss %.9g on %s vs %.9g on %s\n", step, loss[0], configs[0],
                loss[1], configs[1]);
        ++failures;
      }
    }
    if (step == 1 || step % 25 == 0) {
      if (compare) {
        printf("step %3d  loss %.6f (%s)  %.6f (%s)\n", step, loss[0], configs[0], loss[1],
               configs[1]);
      } else {
        printf("step %3d  loss %.6f\n", step, loss[0]);
      }
    }
  }
  for (int k = 0; k < count; ++k) {
    double acc = 0;
    cml_status_t st = trainer_accuracy(&t[k], &acc);
    if (st != CML_OK) {
      failures = report(st, configs[k]);
      goto done;
    }
    printf("%s: held-out accuracy %.1f%% (target 90%%; the teacher reaches 100%%)\n",
           cml_backend_name(t[k].backend), 100 * acc);
    if (acc < 0.9) ++failures;
  }
  if (compare) printf("largest per-step loss difference (relative): %.3g (bound 1e-4)\n", worst);
done:
  for (int k = 0; k < count; ++k) trainer_deinit(&t[k]);
  return failures ? 1 : 0;
}
