// SPDX-License-Identifier: Apache-2.0
// examples/mlp/main.c: a 2-layer perceptron on the default backend, checked against plain C.
//
//   h = relu(x @ w1 + b1)        x: [4, 3], w1: [3, 5], b1: [5]
//   y = h @ w2 + b2              w2: [5, 2], b2: [2] (a constant in the graph)
//   s = sum(y, axis 1)           [4]
//
// The backend comes from GOMLX_BACKEND, or the best available one. Exits 0 when both outputs
// match the plain C computation, 1 otherwise.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cml/cml.h"

enum { kBatch = 4, kIn = 3, kHidden = 5, kOut = 2 };

static const float kX[kBatch][kIn] = {
    {1.0f, -2.0f, 0.5f}, {0.0f, 1.5f, -1.0f}, {2.0f, 0.25f, 3.0f}, {-1.0f, -1.0f, -1.0f}};
static const float kW1[kIn][kHidden] = {{0.5f, -1.0f, 0.25f, 2.0f, -0.5f},
                                        {1.0f, 0.75f, -0.5f, 0.0f, 0.125f},
                                        {-0.25f, 0.5f, 1.5f, -1.0f, 1.0f}};
static const float kB1[kHidden] = {0.1f, -0.2f, 0.3f, 0.0f, -0.5f};
static const float kW2[kHidden][kOut] = {
    {1.0f, -1.0f}, {0.5f, 0.25f}, {-0.75f, 1.0f}, {2.0f, 0.5f}, {0.0f, -1.5f}};
static const float kB2[kOut] = {0.5f, -0.25f};

// The same computation in plain C, in double precision.
static void reference(double y[kBatch][kOut], double s[kBatch]) {
  for (int b = 0; b < kBatch; ++b) {
    double h[kHidden];
    for (int j = 0; j < kHidden; ++j) {
      double acc = kB1[j];
      for (int i = 0; i < kIn; ++i) acc += (double)kX[b][i] * kW1[i][j];
      h[j] = acc > 0 ? acc : 0;
    }
    s[b] = 0;
    for (int k = 0; k < kOut; ++k) {
      double acc = kB2[k];
      for (int j = 0; j < kHidden; ++j) acc += h[j] * kW2[j][k];
      y[b][k] = acc;
      s[b] += acc;
    }
  }
}

// Builds and compiles the graph.
static cml_status_t build(cml_backend_t* backend, cml_executable_t** out_exe) {
  cml_builder_t* builder = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(backend, "mlp", &builder));
  cml_function_t* f = cml_builder_main(builder);
  cml_shape_t xs = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){kBatch, kIn});
  cml_shape_t w1s = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){kIn, kHidden});
  cml_shape_t b1s = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){kHidden});
  cml_shape_t w2s = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){kHidden, kOut});
  cml_shape_t b2s = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){kOut});

  cml_value_t x = cml_parameter(f, "x", &xs);
  cml_value_t w1 = cml_parameter(f, "w1", &w1s);
  cml_value_t b1 = cml_parameter(f, "b1", &b1s);
  cml_value_t w2 = cml_parameter(f, "w2", &w2s);
  cml_value_t b2 = cml_constant(f, &b2s, kB2);

  // Layer 1: the bias row is broadcast over the batch axis explicitly (restricted broadcasting).
  cml_value_t h = cml_op_dot(f, x, w1);
  h = cml_op_add(
      f, h, cml_op_broadcast_in_dim(f, b1, (int64_t[]){kBatch, kHidden}, 2, (int64_t[]){1}, 1));
  h = cml_op_max(f, h, cml_constant_scalar_f64(f, CML_DTYPE_F32, 0.0));  // relu
  // Layer 2.
  cml_value_t y = cml_op_dot(f, h, w2);
  y = cml_op_add(f, y,
                 cml_op_broadcast_in_dim(f, b2, (int64_t[]){kBatch, kOut}, 2, (int64_t[]){1}, 1));
  cml_value_t s = cml_op_reduce_sum(f, y, (int64_t[]){1}, 1);

  cml_value_t outputs[2] = {y, s};
  cml_status_t st = cml_function_return(f, outputs, 2);  // reports the first builder error
  if (st == CML_OK) st = cml_builder_compile(builder, out_exe);
  cml_builder_destroy(builder);
  return st;
}

static int fail(const char* what, cml_status_t st) {
  fprintf(stderr, "mlp: %s: %s: %s\n", what, cml_status_code_name(cml_status_code(st)),
          cml_status_message(st));
  cml_status_free(st);
  return 1;
}

int main(void) {
  cml_backend_t* backend = NULL;
  cml_status_t st = cml_backend_new(&backend);
  if (st != CML_OK) return fail("creating the backend", st);
  printf("backend: %s (%s)\n", cml_backend_name(backend), cml_backend_description(backend));

  cml_executable_t* exe = NULL;
  st = build(backend, &exe);
  if (st != CML_OK) {
    cml_backend_release(backend);
    return fail("building the graph", st);
  }

  // Inputs, in parameter order.
  const void* host[4] = {kX, kW1, kB1, kW2};
  const size_t sizes[4] = {sizeof kX, sizeof kW1, sizeof kB1, sizeof kW2};
  cml_buffer_t* inputs[4] = {NULL, NULL, NULL, NULL};
  cml_buffer_t* outputs[2] = {NULL, NULL};
  float y[kBatch][kOut];
  float s[kBatch];
  for (size_t i = 0; i < 4 && st == CML_OK; ++i) {
    st = cml_buffer_from_host(backend, 0, cml_executable_input_shape(exe, i), host[i], sizes[i],
                              &inputs[i]);
  }
  if (st == CML_OK) st = cml_executable_execute(exe, inputs, 4, NULL, 0, outputs);
  if (st == CML_OK) st = cml_buffer_copy_to_host(outputs[0], y, sizeof y);
  if (st == CML_OK) st = cml_buffer_copy_to_host(outputs[1], s, sizeof s);
  for (size_t i = 0; i < 4; ++i) cml_buffer_release(inputs[i]);
  for (size_t i = 0; i < 2; ++i) cml_buffer_release(outputs[i]);
  cml_executable_release(exe);
  cml_backend_release(backend);
  if (st != CML_OK) return fail("running the graph", st);

  double want_y[kBatch][kOut], want_s[kBatch];
  reference(want_y, want_s);
  int mismatches = 0;
  for (int b = 0; b < kBatch; ++b) {
    printf("row %d: y = [", b);
    for (int k = 0; k < kOut; ++k) {
      printf("%s%.6f", k ? ", " : "", (double)y[b][k]);
      if (fabs(y[b][k] - want_y[b][k]) > 1e-5 * (1 + fabs(want_y[b][k]))) ++mismatches;
    }
    printf("] (want [");
    for (int k = 0; k < kOut; ++k) printf("%s%.6f", k ? ", " : "", want_y[b][k]);
    printf("]), sum = %.6f (want %.6f)\n", (double)s[b], want_s[b]);
    if (fabs(s[b] - want_s[b]) > 1e-5 * (1 + fabs(want_s[b]))) ++mismatches;
  }
  if (mismatches) {
    fprintf(stderr, "mlp: %d value(s) differ from the plain C computation\n", mismatches);
    return 1;
  }
  printf("ok: results match the plain C computation\n");
  return 0;
}
