// SPDX-License-Identifier: Apache-2.0
// examples/quantized_mlp/main.c: an f32 MLP whose weights are quantized to Q4_K and Q8_0 with
// cml's own quantizer, run with FusedQuantizedDense on the default backend.
//
//   h = silu(x @ W1^T + b1)      x: [8, 512], W1: [1024, 512] (ggml rows: one per output)
//   y = h @ W2^T + b2            W2: [256, 1024]
//
// The f32 model runs through FusedDense on the same backend; the example prints, per format,
// the relative RMS error of y against f32 and the weight memory saved. Exits 0 when the errors
// are within what the formats give (weight RMSE 0.5% and 8% compounded over two layers:
// Q8_0 < 2%, Q4_K < 15%), 1 otherwise.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cml/cml.h"
#include "cml/fused.h"

enum { kBatch = 8, kIn = 512, kHidden = 1024, kOut = 256 };

static uint64_t rng = 0x853C49E6748FEA9Bull;
static float normal(void) {
  double u[2];
  for (int i = 0; i < 2; ++i) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    u[i] = ((double)(rng >> 11) + 0.5) / 9007199254740992.0;
  }
  return (float)(sqrt(-2 * log(u[0])) * cos(6.283185307179586 * u[1]));
}

static int check(cml_status_t st, const char* what) {
  if (st == CML_OK) return 0;
  fprintf(stderr, "%s: %s\n", what, cml_status_message(st));
  cml_status_free(st);
  return 1;
}

// Runs the graph of |outputs| (one output) on |inputs| (host data, in parameter order).
static int run(cml_backend_t* be, cml_builder_t* b, cml_value_t y, const void* const* inputs,
               size_t input_count, float* out) {
  cml_executable_t* exe = NULL;
  cml_status_t st = cml_function_return(cml_builder_main(b), &y, 1);
  if (st == CML_OK) st = cml_builder_compile(b, &exe);
  cml_builder_destroy(b);
  if (check(st, "compile")) return 1;
  cml_buffer_t* ins[8] = {0};
  cml_buffer_t* res = NULL;
  for (size_t i = 0; i < input_count && st == CML_OK; ++i) {
    const cml_shape_t* s = cml_executable_input_shape(exe, i);
    st = cml_buffer_from_host(be, 0, s, inputs[i], cml_shape_byte_size(s), &ins[i]);
  }
  if (st == CML_OK) st = cml_executable_execute(exe, ins, input_count, NULL, 0, &res);
  if (st == CML_OK) {
    st = cml_buffer_copy_to_host(res, out, cml_shape_byte_size(cml_buffer_shape(res)));
  }
  for (size_t i = 0; i < input_count; ++i) cml_buffer_release(ins[i]);
  cml_buffer_release(res);
  cml_executable_release(exe);
  return check(st, "execute");
}

// The f32 model: weights as [out, in] rows (FusedDense's outputs_input layout).
static int run_f32(cml_backend_t* be, const float* x, const float* w1, const float* b1,
                   const float* w2, const float* b2, float* y) {
  cml_builder_t* b = NULL;
  if (check(cml_builder_create(be, "mlp_f32", &b), "builder")) return 1;
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t xs = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){kBatch, kIn});
  cml_shape_t w1s = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){kHidden, kIn});
  cml_shape_t b1s = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){kHidden});
  cml_shape_t w2s = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){kOut, kHidden});
  cml_shape_t b2s = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){kOut});
  cml_value_t xv = cml_parameter(f, "x", &xs);
  cml_value_t w1v = cml_parameter(f, "w1", &w1s);
  cml_value_t b1v = cml_parameter(f, "b1", &b1s);
  cml_value_t w2v = cml_parameter(f, "w2", &w2s);
  cml_value_t b2v = cml_parameter(f, "b2", &b2s);
  cml_dense_config_t dc;
  cml_dense_config_init(&dc);
  dc.weight_layout = CML_DENSE_LAYOUT_OUTPUTS_INPUT;
  dc.activation = CML_ACTIVATION_SILU;
  cml_value_t h = cml_op_fused_dense(f, xv, w1v, b1v, &dc);
  dc.activation = CML_ACTIVATION_NONE;
  cml_value_t yv = cml_op_fused_dense(f, h, w2v, b2v, &dc);
  return run(be, b, yv, (const void* const[]){x, w1, b1, w2, b2}, 5, y);
}

// The quantized model: both weights in |type|.
static int run_quantized(cml_backend_t* be, cml_ggml_type_t type, const float* x, const uint8_t* w1,
                         const float* b1, const uint8_t* w2, const float* b2, float* y) {
  cml_builder_t* b = NULL;
  if (check(cml_builder_create(be, "mlp_quantized", &b), "builder")) return 1;
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t xs = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){kBatch, kIn});
  cml_shape_t w1s =
      cml_shape_make(CML_DTYPE_U8, 2, (int64_t[]){kHidden, cml_ggml_row_bytes(type, kIn)});
  cml_shape_t b1s = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){kHidden});
  cml_shape_t w2s =
      cml_shape_make(CML_DTYPE_U8, 2, (int64_t[]){kOut, cml_ggml_row_bytes(type, kHidden)});
  cml_shape_t b2s = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){kOut});
  cml_value_t xv = cml_parameter(f, "x", &xs);
  cml_value_t w1v = cml_parameter(f, "w1", &w1s);
  cml_value_t b1v = cml_parameter(f, "b1", &b1s);
  cml_value_t w2v = cml_parameter(f, "w2", &w2s);
  cml_value_t b2v = cml_parameter(f, "b2", &b2s);
  cml_quantization_t q;
  cml_quantization_init(&q);
  q.scheme = CML_QUANT_GGML;
  q.ggml_type = type;
  cml_value_t h = cml_op_fused_quantized_dense(f, xv, w1v, b1v, &q, CML_ACTIVATION_SILU);
  cml_value_t yv = cml_op_fused_quantized_dense(f, h, w2v, b2v, &q, CML_ACTIVATION_NONE);
  return run(be, b, yv, (const void* const[]){x, w1, b1, w2, b2}, 5, y);
}

int main(void) {
  cml_backend_t* be = NULL;
  if (check(cml_backend_new(&be), "backend")) return 1;
  printf("backend: %s\n", cml_backend_config(be));
  float* x = malloc(sizeof(float) * kBatch * kIn);
  float* w1 = malloc(sizeof(float) * kHidden * kIn);
  float* w2 = malloc(sizeof(float) * kOut * kHidden);
  float b1[kHidden], b2[kOut];
  float* y_f32 = malloc(sizeof(float) * kBatch * kOut);
  float* y_q = malloc(sizeof(float) * kBatch * kOut);
  uint8_t* q1 = malloc((size_t)kHidden * kIn * 2);
  uint8_t* q2 = malloc((size_t)kOut * kHidden * 2);
  int failed = !x || !w1 || !w2 || !y_f32 || !y_q || !q1 || !q2;
  for (int i = 0; !failed && i < kBatch * kIn; ++i) x[i] = normal();
  for (int i = 0; !failed && i < kHidden * kIn; ++i) w1[i] = normal() / sqrtf((float)kIn);
  for (int i = 0; !failed && i < kOut * kHidden; ++i) w2[i] = normal() / sqrtf((float)kHidden);
  for (int i = 0; i < kHidden; ++i) b1[i] = 0.1f * normal();
  for (int i = 0; i < kOut; ++i) b2[i] = 0.1f * normal();
  failed = failed || run_f32(be, x, w1, b1, w2, b2, y_f32);
  const double f32_bytes = 4.0 * (kHidden * kIn + kOut * kHidden);
  const cml_ggml_type_t types[2] = {CML_GGML_Q8_0, CML_GGML_Q4_K};
  const double limits[2] = {0.02, 0.15};
  for (int t = 0; t < 2 && !failed; ++t) {
    const int64_t r1 = cml_ggml_row_bytes(types[t], kIn),
                  r2 = cml_ggml_row_bytes(types[t], kHidden);
    failed = check(cml_quantize_ggml(types[t], w1, kHidden, kIn, q1, (size_t)(kHidden * r1)),
                   "quantize w1") ||
             check(cml_quantize_ggml(types[t], w2, kOut, kHidden, q2, (size_t)(kOut * r2)),
                   "quantize w2") ||
             run_quantized(be, types[t], x, q1, b1, q2, b2, y_q);
    if (failed) break;
    double se = 0, ss = 0;
    for (int i = 0; i < kBatch * kOut; ++i) {
      se += ((double)y_q[i] - y_f32[i]) * ((double)y_q[i] - y_f32[i]);
      ss += (double)y_f32[i] * y_f32[i];
    }
    const double rel = sqrt(se / ss);
    const double q_bytes = (double)(kHidden * r1 + kOut * r2);
    printf(
        "%-5s relative RMS error vs f32: %.4f   weights %.0f KiB vs %.0f KiB f32 (%.1fx "
        "smaller, %.0f%% saved)\n",
        cml_ggml_type_name(types[t]), rel, q_bytes / 1024, f32_bytes / 1024, f32_bytes / q_bytes,
        100.0 * (1 - q_bytes / f32_bytes));
    if (!(rel < limits[t])) {
      fprintf(stderr, "%s: error %.4f above %.2f\n", cml_ggml_type_name(types[t]), rel, limits[t]);
      failed = 1;
    }
  }
  free(x);
  free(w1);
  free(w2);
  free(y_f32);
  free(y_q);
  free(q1);
  free(q2);
  cml_backend_release(be);
  return failed ? 1 : 0;
}
