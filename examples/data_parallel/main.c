// SPDX-License-Identifier: Apache-2.0
// examples/data_parallel/main.c: data-parallel training of a small MLP over 4 devices (SPMD with
// one AllReduce of the gradients per step), checked against the same steps on one device.
//
//   h = relu(x @ w1 + b1)            x: [8, 3] (global batch 8), w1: [3, 6], b1: [6]
//   y = h @ w2 + b2                  w2: [6, 2], b2: [2]
//   loss = sum((y - t)^2) / 8        t: [8, 2]
//
// The gradients are written by hand (no autodiff): with d = 2 (y - t) / 8,
//   dw2 = h^T d, db2 = sum_rows(d), dh = (d @ w2^T) * (h > 0), dw1 = x^T dh, db1 = sum_rows(dh),
// and one step updates every parameter p -= 0.1 * dp. On N devices each one holds 8 / N rows of
// x and t (a cml_dtensor split over the mesh axis "data") and a replica of the parameters; its
// gradients are partial sums over its rows, so one AllReduce (sum) of the five values
// (dw1, db1, dw2, db2, loss) gives every device the full-batch gradients, and the replicas stay
// equal. The parameters stay on the devices between steps (each step's outputs feed the next).
//
// Usage: example_data_parallel [BACKEND_CONFIG]  (default: GOMLX_BACKEND, else "c:devices=4";
// e.g. "xla:cpu,cpu_device_count=4"). Exits 0 when the 4-device run matches the single-device
// run, 1 on a mismatch or error, 77 when the backend cannot run SPMD on 4 devices.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cml/cml.h"
#include "cml/distributed.h"

enum { kDevices = 4, kBatch = 8, kIn = 3, kHidden = 6, kOut = 2, kSteps = 3, kParams = 4 };
static const double kLearningRate = 0.1;

// Builds one training step for |devices| device slots (1: a plain single-device module).
// Parameters: x [B, In], t [B, Out], w1, b1, w2, b2 (B = kBatch / devices); results: the
// updated w1, b1, w2, b2 and the loss over the whole batch.
static cml_status_t build_step(cml_backend_t* backend, int devices, cml_executable_t** out_exe) {
  cml_builder_t* builder = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(backend, devices > 1 ? "step_dp" : "step", &builder));
  cml_status_t st = devices > 1 ? cml_builder_spmd(builder, devices) : CML_OK;
  if (st != CML_OK) {
    cml_builder_destroy(builder);
    return st;
  }
  const int64_t b = kBatch / devices;
  cml_function_t* f = cml_builder_main(builder);
  cml_shape_t xs = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){b, kIn});
  cml_shape_t ts = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){b, kOut});
  cml_shape_t w1s = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){kIn, kHidden});
  cml_shape_t b1s = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){kHidden});
  cml_shape_t w2s = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){kHidden, kOut});
  cml_shape_t b2s = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){kOut});
  cml_value_t x = cml_parameter(f, "x", &xs);
  cml_value_t t = cml_parameter(f, "t", &ts);
  cml_value_t w1 = cml_parameter(f, "w1", &w1s);
  cml_value_t b1 = cml_parameter(f, "b1", &b1s);
  cml_value_t w2 = cml_parameter(f, "w2", &w2s);
  cml_value_t b2 = cml_parameter(f, "b2", &b2s);
  const int64_t rows[1] = {0}, both[2] = {0, 1}, swap[2] = {1, 0};

  // Forward.
  cml_value_t zero = cml_constant_scalar_f64(f, CML_DTYPE_F32, 0.0);
  cml_value_t pre =
      cml_op_add(f, cml_op_dot(f, x, w1),
                 cml_op_broadcast_in_dim(f, b1, (int64_t[]){b, kHidden}, 2, (int64_t[]){1}, 1));
  cml_value_t h = cml_op_max(f, pre, zero);
  cml_value_t y =
      cml_op_add(f, cml_op_dot(f, h, w2),
                 cml_op_broadcast_in_dim(f, b2, (int64_t[]){b, kOut}, 2, (int64_t[]){1}, 1));
  cml_value_t diff = cml_op_sub(f, y, t);
  cml_value_t inv_batch = cml_constant_scalar_f64(f, CML_DTYPE_F32, 1.0 / kBatch);
  cml_value_t loss =
      cml_op_mul(f, cml_op_reduce_sum(f, cml_op_mul(f, diff, diff), both, 2), inv_batch);

  // Backward (partial sums over this device's rows).
  cml_value_t d = cml_op_mul(f, diff, cml_constant_scalar_f64(f, CML_DTYPE_F32, 2.0 / kBatch));
  cml_value_t dw2 = cml_op_dot(f, cml_op_transpose(f, h, swap, 2), d);
  cml_value_t db2 = cml_op_reduce_sum(f, d, rows, 1);
  cml_value_t mask = cml_op_convert_dtype(f, cml_op_greater_than(f, pre, zero), CML_DTYPE_F32);
  cml_value_t dh = cml_op_mul(f, cml_op_dot(f, d, cml_op_transpose(f, w2, swap, 2)), mask);
  cml_value_t dw1 = cml_op_dot(f, cml_op_transpose(f, x, swap, 2), dh);
  cml_value_t db1 = cml_op_reduce_sum(f, dh, rows, 1);

  // Data parallel: sum the partial gradients and losses of all devices, in one AllReduce.
  cml_value_t parts[5] = {dw1, db1, dw2, db2, loss};
  if (devices > 1) (void)cml_op_all_reduce(f, parts, 5, CML_REDUCE_SUM, NULL, parts);

  // Update.
  cml_value_t lr = cml_constant_scalar_f64(f, CML_DTYPE_F32, kLearningRate);
  cml_value_t outs[5] = {cml_op_sub(f, w1, cml_op_mul(f, parts[0], lr)),
                         cml_op_sub(f, b1, cml_op_mul(f, parts[1], lr)),
                         cml_op_sub(f, w2, cml_op_mul(f, parts[2], lr)),
                         cml_op_sub(f, b2, cml_op_mul(f, parts[3], lr)), parts[4]};
  st = cml_function_return(f, outs, 5);  // reports the first builder error
  if (st == CML_OK) st = cml_builder_compile(builder, out_exe);
  cml_builder_destroy(builder);
  return st;
}

// Fixed data: inputs, targets and initial parameters.
static float g_x[kBatch * kIn], g_t[kBatch * kOut];
static float g_init[kParams][kHidden * kIn];
static const int64_t kParamDims[kParams][2] = {
    {kIn, kHidden}, {kHidden, 0}, {kHidden, kOut}, {kOut, 0}};

static cml_shape_t param_shape(int p) {
  int32_t rank = kParamDims[p][1] ? 2 : 1;
  return cml_shape_make(CML_DTYPE_F32, rank, kParamDims[p]);
}

static void make_data(void) {
  for (int i = 0; i < kBatch * kIn; ++i) g_x[i] = (float)((i * 7) % 11) / 5.0f - 1.0f;
  for (int i = 0; i < kBatch * kOut; ++i) g_t[i] = (float)((i * 3) % 5) / 4.0f - 0.5f;
  for (int p = 0; p < kParams; ++p) {
    cml_shape_t s = param_shape(p);
    for (int64_t i = 0; i < cml_shape_element_count(&s); ++i) {
      g_init[p][i] = (float)(((i + 3 * p) * 5) % 9) / 8.0f - 0.5f;
    }
  }
}

// Runs kSteps steps on |devices| slots; fills |params| (device 0's final values) and |losses|.
static cml_status_t train(cml_backend_t* backend, int devices, float params[kParams][kIn * kHidden],
                          double losses[kSteps]) {
  cml_executable_t* exe = NULL;
  CML_RETURN_IF_ERROR(build_step(backend, devices, &exe));
  cml_status_t st = CML_OK;
  const char* axis = "data";
  const int64_t size = devices;
  cml_mesh_t* mesh = NULL;
  cml_dtensor_t *x = NULL, *t = NULL;
  enum { kInputs = 2 + kParams, kOutputs = kParams + 1 };
  cml_buffer_t* inputs[kDevices * kInputs] = {0};
  cml_buffer_t* outputs[kDevices * kOutputs] = {0};
  cml_buffer_t* params_now[kDevices * kParams] = {0};  // owned: this step's parameters

  // The batch, split by rows over the mesh axis "data": shard k on device k.
  cml_sharding_t rows;
  st = cml_mesh_create("mesh", &axis, &size, 1, &mesh);
  if (st == CML_OK) st = cml_sharding_make(mesh, (const char* const[]){"data"}, 1, &rows);
  cml_shape_t xs = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){kBatch, kIn});
  cml_shape_t ts = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){kBatch, kOut});
  if (st == CML_OK) st = cml_dtensor_from_host(backend, &rows, &xs, g_x, sizeof g_x, NULL, &x);
  if (st == CML_OK) st = cml_dtensor_from_host(backend, &rows, &ts, g_t, sizeof g_t, NULL, &t);
  // The initial parameters, replicated on every device.
  for (int j = 0; j < devices && st == CML_OK; ++j) {
    for (int p = 0; p < kParams && st == CML_OK; ++p) {
      cml_shape_t s = param_shape(p);
      st = cml_buffer_from_host(backend, j, &s, g_init[p], cml_shape_byte_size(&s),
                                &params_now[j * kParams + p]);
    }
  }
  for (int step = 0; step < kSteps && st == CML_OK; ++step) {
    for (int j = 0; j < devices; ++j) {
      inputs[j * kInputs + 0] = cml_dtensor_shard(x, (size_t)j);
      inputs[j * kInputs + 1] = cml_dtensor_shard(t, (size_t)j);
      for (int p = 0; p < kParams; ++p) {
        inputs[j * kInputs + 2 + p] = params_now[j * kParams + p];
      }
    }
    st = cml_executable_execute(exe, inputs, (size_t)(devices * kInputs), NULL, 0, outputs);
    if (st != CML_OK) break;
    // The new parameters replace the old ones on each device; the loss goes to the host.
    float loss = 0;
    for (int j = 0; j < devices; ++j) {
      for (int p = 0; p < kParams; ++p) {
        cml_buffer_release(params_now[j * kParams + p]);
        params_now[j * kParams + p] = outputs[j * kOutputs + p];
      }
      float lj = 0;
      if (st == CML_OK) st = cml_buffer_copy_to_host(outputs[j * kOutputs + kParams], &lj, 4);
      cml_buffer_release(outputs[j * kOutputs + kParams]);
      if (j == 0) loss = lj;
      if (st == CML_OK && lj != loss) {
        st = cml_status_make(CML_STATUS_INTERNAL,
                             "step %d: device %d's loss %.9g differs from device 0's %.9g", step, j,
                             (double)lj, (double)loss);
      }
    }
    losses[step] = loss;
  }
  for (int p = 0; p < kParams && st == CML_OK; ++p) {
    cml_shape_t s = param_shape(p);
    st = cml_buffer_copy_to_host(params_now[p], params[p], cml_shape_byte_size(&s));
  }
  for (int i = 0; i < kDevices * kParams; ++i) cml_buffer_release(params_now[i]);
  cml_dtensor_destroy(x);
  cml_dtensor_destroy(t);
  cml_mesh_destroy(mesh);
  cml_executable_release(exe);
  return st;
}

int main(int argc, char** argv) {
  const char* config = argc > 1 ? argv[1] : getenv("GOMLX_BACKEND");
  if (!config || !*config) config = "c:devices=4";
  cml_backend_t* backend = NULL;
  cml_status_t st = cml_backend_new_with_config(config, &backend);
  if (st != CML_OK) {
    fprintf(stderr, "backend \"%s\": %s\n", config, cml_status_message(st));
    cml_status_free(st);
    return 1;
  }
  const cml_capabilities_t* caps = cml_backend_capabilities(backend);
  if (!(caps->distributions & (1u << CML_DISTRIBUTION_SPMD)) ||
      cml_backend_device_count(backend) < kDevices ||
      !cml_capabilities_has_op(caps, CML_OP_ALL_REDUCE)) {
    printf("skipped: backend \"%s\" (%d devices) cannot run SPMD with AllReduce on %d devices\n",
           cml_backend_config(backend), cml_backend_device_count(backend), kDevices);
    cml_backend_release(backend);
    return 77;
  }
  make_data();
  static float single[kParams][kIn * kHidden], parallel[kParams][kIn * kHidden];
  double loss1[kSteps], loss4[kSteps];
  st = train(backend, 1, single, loss1);
  if (st == CML_OK) st = train(backend, kDevices, parallel, loss4);
  cml_backend_release(backend);
  if (st != CML_OK) {
    fprintf(stderr, "error: %s\n", cml_status_message(st));
    cml_status_free(st);
    return 1;
  }
  // Summation order differs (per-device partial sums): allow a few float ulps.
  int bad = 0;
  for (int s = 0; s < kSteps; ++s) {
    printf("step %d: loss %.6f (1 device) %.6f (%d devices)\n", s, loss1[s], loss4[s], kDevices);
    if (fabs(loss1[s] - loss4[s]) > 1e-5 * (1 + fabs(loss1[s]))) ++bad;
  }
  if (!(loss1[kSteps - 1] < loss1[0])) {
    fprintf(stderr, "the loss did not decrease\n");
    ++bad;
  }
  for (int p = 0; p < kParams; ++p) {
    cml_shape_t s = param_shape(p);
    for (int64_t i = 0; i < cml_shape_element_count(&s); ++i) {
      double a = single[p][i], b = parallel[p][i];
      if (fabs(a - b) > 1e-5 * (1 + fabs(a))) {
        fprintf(stderr, "parameter %d element %lld: %.9g (1 device) vs %.9g\n", p, (long long)i, a,
                b);
        ++bad;
      }
    }
  }
  printf("%s\n", bad ? "MISMATCH" : "data parallel matches the single-device run");
  return bad ? 1 : 0;
}
