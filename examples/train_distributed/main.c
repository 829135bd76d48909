// SPDX-License-Identifier: Apache-2.0
// examples/train_distributed/main.c: data-parallel training of the train_mlp model over every
// device of every process, fed by a device dataset, with checkpoints and resume.
//
// The task and model are examples/train_mlp's: 384 training points in [-1, 1]^8 labelled by a
// fixed linear teacher (4 classes), a student relu(x @ w1 + b1) @ w2 + b2 (8-32-4), softmax
// cross-entropy, Adam (lr 0.02). Here training is by minibatches of 96 points (4 batches per
// epoch, 200 steps), and each global batch is split by rows over the N devices of the backend
// (a cml_device_dataset with the spec S(data) over the mesh {data: N}, prefetched while a step
// runs). Each device computes the gradients of its rows' share of the loss (sum over its rows /
// 96); the gradients are summed across the devices, and the same Adam step runs on every
// replica of the parameters. The sum is made either
//   - inside the program (SPMD with cml_op_all_reduce: c:devices=N, c:distributed=mpi under
//     mpirun, xla:cpu,cpu_device_count=N), or
//   - host-staged between a "gradients" and an "apply" executable (cml_host_all_reduce): for
//     XLA backends under mpirun, where every process is its own client (--host-allreduce forces
//     it). Each process then feeds its devices only its own part of the global batch.
// The same steps also run on one device of the c backend (the reference), and the per-step losses
// must agree within a relative 1e-4 (float sums in another order; measured ~1e-7).
//
// Usage: example_train_distributed [options] [BACKEND]   (default GOMLX_BACKEND, else c:devices=4)
//   --reference CFG      the single-device reference backend ("c"; "none" skips the comparison)
//   --checkpoint PATH    save parameters and Adam state every --every K steps (default 25) and,
//                        when PATH exists at start, resume from it
//   --kill-at S          SIGKILL this process right after step S (and its checkpoint, if due)
//   --host-allreduce     sum gradients host-staged (cml_host_all_reduce) instead of in-program
//   --test-resume        run 1..200 with checkpoints in a child killed at step 60, resume in this
//                        process from the step-50 checkpoint, and check that steps 51..200 give
//                        bit-identical losses and parameters to an uninterrupted run
// Exit status 0 when the losses agree with the reference (and the resume check holds) and the
// held-out accuracy reaches 90%; 1 otherwise; 77 when the backend is unavailable.
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cml/checkpoint.h"
#include "cml/cml.h"
#include "cml/dataset.h"
#include "cml/distributed.h"
#include "cml/host_collective.h"

enum { kIn = 8, kHidden = 32, kClasses = 4, kTrain = 384, kTest = 128, kBatch = 96 };
enum { kSteps = 200, kParams = 4, kState = 3 * kParams + 1 };  // params, m, v, step
enum { kMaxDevices = 32 };
static const double kBound = 1e-4;

static float g_x[kTrain + kTest][kIn];
static int g_label[kTrain + kTest];
static float g_onehot[kTrain][kClasses];

static uint64_t g_rng = 12345;
static float rnd(void) {  // uniform in [-1, 1)
  g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((double)(g_rng >> 11) / 4503599627370496.0 - 1.0);
}

// The data of examples/train_mlp (same generator and seed).
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
static const char* const kNames[kState] = {
    "w1",        "b1",        "w2",        "b2",        "adam/m/w1", "adam/m/b1", "adam/m/w2",
    "adam/m/b2", "adam/v/w1", "adam/v/b1", "adam/v/w2", "adam/v/b2", "adam/step"};

static cml_shape_t state_shape(int i) {
  if (i == 3 * kParams) return cml_shape_scalar(CML_DTYPE_F32);
  int p = i % kParams;
  return cml_shape_make(CML_DTYPE_F32, kDims[p][1] ? 2 : 1, kDims[p]);
}

//===--- the programs ---===//

// Adds the parameters x, onehot, the state (params, m, v, step) to |f| for |rows| rows.
static void add_parameters(cml_function_t* f, int64_t rows, bool with_state, cml_value_t* x,
                           cml_value_t* onehot, cml_value_t* state) {
  cml_shape_t xs = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){rows, kIn});
  cml_shape_t ys = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){rows, kClasses});
  *x = cml_parameter(f, "x", &xs);
  *onehot = cml_parameter(f, "onehot", &ys);
  for (int i = 0; i < (with_state ? kState : kParams); ++i) {
    cml_shape_t s = state_shape(i);
    state[i] = cml_parameter(f, kNames[i], &s);
  }
}

// This device's share of the loss: sum over its |rows| rows of the cross-entropy / kBatch.
static cml_value_t local_loss(cml_function_t* f, cml_value_t x, cml_value_t onehot,
                              const cml_value_t* p, int64_t rows) {
  cml_value_t h = cml_op_dot(f, x, p[0]);
  h = cml_op_add(
      f, h, cml_op_broadcast_in_dim(f, p[1], (int64_t[]){rows, kHidden}, 2, (int64_t[]){1}, 1));
  h = cml_op_max(f, h, cml_constant_scalar_f64(f, CML_DTYPE_F32, 0.0));
  cml_value_t y = cml_op_dot(f, h, p[2]);
  y = cml_op_add(
      f, y, cml_op_broadcast_in_dim(f, p[3], (int64_t[]){rows, kClasses}, 2, (int64_t[]){1}, 1));
  cml_value_t mx = cml_op_stop_gradient(f, cml_op_reduce_max(f, y, (int64_t[]){1}, 1));
  cml_value_t z = cml_op_sub(
      f, y, cml_op_broadcast_in_dim(f, mx, (int64_t[]){rows, kClasses}, 2, (int64_t[]){0}, 1));
  cml_value_t lse = cml_op_log(f, cml_op_reduce_sum(f, cml_op_exp(f, z), (int64_t[]){1}, 1));
  cml_value_t picked = cml_op_reduce_sum(f, cml_op_mul(f, z, onehot), (int64_t[]){1}, 1);
  cml_value_t loss = cml_op_reduce_sum(f, cml_op_sub(f, lse, picked), NULL, 0);
  return cml_op_div(f, loss, cml_constant_scalar_f64(f, CML_DTYPE_F32, kBatch));
}

// Adds one Adam step and returns {params', m', v', step + 1} through |outs|.
static cml_status_t add_adam(cml_function_t* f, const cml_value_t* state, const cml_value_t* g,
                             cml_value_t* outs) {
  cml_adam_config_t ac;
  cml_adam_config_init(&ac);
  ac.learning_rate = 0.02;
  CML_RETURN_IF_ERROR(cml_optim_adam_step(f, &ac, state, g, state + kParams, state + 2 * kParams,
                                          kParams, state[3 * kParams], outs, outs + kParams,
                                          outs + 2 * kParams));
  outs[3 * kParams] =
      cml_op_add(f, state[3 * kParams], cml_constant_scalar_f64(f, CML_DTYPE_F32, 1.0));
  return CML_OK;
}

static cml_status_t begin(cml_backend_t* backend, const char* name, int slots,
                          cml_builder_t** out) {
  CML_RETURN_IF_ERROR(cml_builder_create(backend, name, out));
  cml_status_t st = slots > 1 ? cml_builder_spmd(*out, slots) : CML_OK;
  if (st != CML_OK) {
    cml_builder_destroy(*out);
    *out = NULL;
  }
  return st;
}

static cml_status_t finish(cml_builder_t* b, cml_function_t* f, const cml_value_t* outs,
                           size_t count, cml_executable_t** out_exe) {
  cml_status_t st = cml_function_return(f, outs, count);
  if (st == CML_OK) st = cml_builder_compile(b, out_exe);
  cml_builder_destroy(b);
  return st;
}

// The whole step on |slots| devices: (x, onehot, state) -> (loss, state'), the gradients and the
// loss AllReduced inside the program.
static cml_status_t build_step(cml_backend_t* backend, int slots, cml_executable_t** out_exe) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(begin(backend, "train_step", slots, &b));
  cml_function_t* f = cml_builder_main(b);
  const int64_t rows = kBatch / slots;
  cml_value_t x, onehot, state[kState], g[kParams + 1], outs[1 + kState];
  add_parameters(f, rows, true, &x, &onehot, state);
  cml_value_t loss = local_loss(f, x, onehot, state, rows);
  cml_status_t st = cml_gradients(f, loss, state, kParams, g);
  g[kParams] = loss;
  if (st == CML_OK && slots > 1 && !cml_op_all_reduce(f, g, kParams + 1, CML_REDUCE_SUM, NULL, g)) {
    st = cml_builder_status(b);
    if (st == CML_OK) st = cml_status_make(CML_STATUS_INTERNAL, "all_reduce failed");
  }
  outs[0] = g[kParams];
  if (st == CML_OK) st = add_adam(f, state, g, outs + 1);
  if (st != CML_OK) {
    cml_builder_destroy(b);
    return st;
  }
  return finish(b, f, outs, 1 + kState, out_exe);
}

// The host-staged split: "gradients" (x, onehot, params) -> (loss share, grads) and "apply"
// (state, grads) -> state', each SPMD over this process's |slots| devices without collectives.
static cml_status_t build_split(cml_backend_t* backend, int slots, int64_t rows,
                                cml_executable_t** out_grad, cml_executable_t** out_apply) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(begin(backend, "gradients", slots, &b));
  cml_function_t* f = cml_builder_main(b);
  cml_value_t x, onehot, state[kState], outs[1 + kState];
  add_parameters(f, rows, false, &x, &onehot, state);
  outs[0] = local_loss(f, x, onehot, state, rows);
  cml_status_t st = cml_gradients(f, outs[0], state, kParams, outs + 1);
  if (st != CML_OK) {
    cml_builder_destroy(b);
    return st;
  }
  CML_RETURN_IF_ERROR(finish(b, f, outs, 1 + kParams, out_grad));
  CML_RETURN_IF_ERROR(begin(backend, "apply", slots, &b));
  f = cml_builder_main(b);
  cml_value_t g[kParams];
  for (int i = 0; i < kState; ++i) {
    cml_shape_t s = state_shape(i);
    state[i] = cml_parameter(f, kNames[i], &s);
  }
  for (int i = 0; i < kParams; ++i) {
    cml_shape_t s = state_shape(i);
    g[i] = cml_parameter(f, NULL, &s);
  }
  st = add_adam(f, state, g, outs);
  if (st != CML_OK) {
    cml_builder_destroy(b);
    return st;
  }
  return finish(b, f, outs, kState, out_apply);
}

//===--- the data ---===//

// Global batch i (counted from the run's first step) holds the training points
// ((first + i) * 96 + r) mod 384; with |split| processes this process feeds only its part.
typedef struct feed_t {
  int64_t first;   // the batch index of step first + 1 (steps already done)
  int64_t steps;   // the last step
  int64_t rows;    // rows per batch here (96 / processes when host-staged, else 96)
  int64_t offset;  // the first row of this process's part
} feed_t;

static cml_status_t produce(void* user, int64_t index, void* const* data, size_t count,
                            int64_t* out_rows) {
  const feed_t* feed = (const feed_t*)user;
  (void)count;
  int64_t batch = feed->first + index;
  if (batch >= feed->steps) {
    *out_rows = 0;
    return CML_OK;
  }
  float* x = (float*)data[0];
  float* y = (float*)data[1];
  for (int64_t r = 0; r < feed->rows; ++r) {
    int64_t n = (batch * kBatch + feed->offset + r) % kTrain;
    memcpy(x + r * kIn, g_x[n], sizeof g_x[n]);
    memcpy(y + r * kClasses, g_onehot[n], sizeof g_onehot[n]);
  }
  *out_rows = feed->rows;
  return CML_OK;
}

//===--- training ---===//

typedef struct run_t {
  const char* config;
  const char* checkpoint;  // NULL: none
  int every;
  int kill_at;  // 0: never
  bool host_staged;
  // Results.
  int first_step;  // the first step this run executed (1, or the checkpoint's step + 1)
  float losses[kSteps + 1];
  float params[kParams][kHidden * kHidden];
  int devices;    // device slots of the program
  int processes;  // MPI processes
  int rank;
} run_t;

// The initial state (train_mlp's initial weights, zero moments, step 1) on |device|.
static cml_status_t initial_state(cml_backend_t* backend, int device, cml_buffer_t** state) {
  static float init[kParams][kHidden * kHidden], zeros[kHidden * kHidden];
  uint64_t saved = g_rng;
  g_rng = 777;
  for (int i = 0; i < kParams; ++i) {
    cml_shape_t s = state_shape(i);
    int64_t n = cml_shape_element_count(&s);
    double scale = kDims[i][1] ? 1.0 / sqrt((double)kDims[i][0]) : 0.0;
    for (int64_t k = 0; k < n; ++k) init[i][k] = (float)(scale * rnd());
  }
  g_rng = saved;
  float one = 1.0f;
  for (int i = 0; i < kState; ++i) {
    cml_shape_t s = state_shape(i);
    const void* src = i < kParams ? (const void*)init[i] : i == 3 * kParams ? &one : zeros;
    CML_RETURN_IF_ERROR(
        cml_buffer_from_host(backend, device, &s, src, cml_shape_byte_size(&s), &state[i]));
  }
  return CML_OK;
}

static void release_all(cml_buffer_t** b, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    cml_buffer_release(b[i]);
    b[i] = NULL;
  }
}

static cml_status_t train(run_t* r) {
  cml_backend_t* backend = NULL;
  cml_executable_t *step_exe = NULL, *grad_exe = NULL, *apply_exe = NULL;
  cml_mesh_t* mesh = NULL;
  cml_device_dataset_t* ds = NULL;
  cml_checkpoint_t* ck = NULL;
  cml_buffer_t* state[kMaxDevices][kState];
  memset(state, 0, sizeof state);
  memset(r->losses, 0, sizeof r->losses);
  cml_status_t st = cml_backend_new_with_config(r->config, &backend);
  if (st != CML_OK) return st;
  cml_process_info_t pi;
  cml_backend_process_info(backend, &pi);
  int slots = cml_backend_device_count(backend);
  int processes = pi.process_count, rank = pi.process_index;
  int64_t rows = kBatch, offset = 0;
  if (r->host_staged && processes > 1) {
    st = cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                         "--host-allreduce needs one client per process, but \"%s\" spans %d "
                         "processes (its programs sum across them themselves)",
                         r->config, processes);
    goto done;
  }
  if (r->host_staged) {
    // Every process is its own client: its devices get its part of the global batch.
    cml_host_process_info(&rank, &processes);
    rows = kBatch / processes;
    offset = rows * rank;
  }
  r->devices = slots;
  r->processes = processes;
  r->rank = rank;
  if (slots > kMaxDevices || kBatch % processes != 0 || rows % slots != 0) {
    st = cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                         "%d devices x %d processes do not divide the batch of %d (at most %d "
                         "devices)",
                         slots, processes, kBatch, kMaxDevices);
    goto done;
  }
  if (r->host_staged) {
    st = build_split(backend, slots, rows / slots, &grad_exe, &apply_exe);
  } else {
    st = build_step(backend, slots, &step_exe);
  }
  if (st != CML_OK) goto done;

  // The state on every local device: from the checkpoint when there is one.
  r->first_step = 1;
  if (r->checkpoint) {
    cml_status_t ls = cml_checkpoint_load(r->checkpoint, &ck);
    if (cml_status_code(ls) == CML_STATUS_NOT_FOUND) {
      cml_status_free(ls);
    } else if (ls != CML_OK) {
      st = ls;
      goto done;
    } else if (cml_checkpoint_step(ck) < 0 || cml_checkpoint_step(ck) > kSteps) {
      // The step indexes the data and the loss table: a file from elsewhere is refused.
      st = cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "checkpoint \"%s\" is at step %lld, outside this run's 0..%d",
                           r->checkpoint, (long long)cml_checkpoint_step(ck), kSteps);
      goto done;
    } else {
      r->first_step = (int)cml_checkpoint_step(ck) + 1;
    }
  }
  for (int d = 0; d < slots && st == CML_OK; ++d) {
    if (!cml_backend_device_is_local(backend, d)) continue;
    if (!ck) {
      st = initial_state(backend, d, state[d]);
      continue;
    }
    for (int i = 0; i < kState && st == CML_OK; ++i) {
      cml_shape_t s = state_shape(i);
      st = cml_checkpoint_read_buffer(ck, kNames[i], &s, backend, d, &state[d][i]);
    }
  }
  if (st != CML_OK) goto done;

  // The dataset: both tensors split by rows over the mesh {data: slots}.
  feed_t feed = {r->first_step - 1, kSteps, rows, offset};
  cml_shape_t shapes[2] = {cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){rows, kIn}),
                           cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){rows, kClasses})};
  cml_dataset_t source = {.tensor_count = 2, .shapes = shapes, .next = produce, .user = &feed};
  cml_sharding_t specs[2];
  memset(specs, 0, sizeof specs);
  if (slots > 1) {
    st = cml_mesh_create("batch", (const char* const[]){"data"}, (int64_t[]){slots}, 1, &mesh);
    if (st == CML_OK) st = cml_sharding_make(mesh, (const char* const[]){"data"}, 1, &specs[0]);
    specs[1] = specs[0];
  }
  if (st == CML_OK) st = cml_device_dataset_create(backend, &source, specs, NULL, &ds);
  if (st != CML_OK) goto done;

  for (int step = r->first_step; step <= kSteps; ++step) {
    cml_device_batch_t* batch = NULL;
    st = cml_device_dataset_next(ds, &batch);
    if (st == CML_OK && !batch) {
      st = cml_status_make(CML_STATUS_INTERNAL, "the data ended before step %d", step);
    }
    if (st != CML_OK) goto done;
    cml_buffer_t* in[kMaxDevices * (2 + kState + kParams)];
    cml_buffer_t* out[kMaxDevices * (1 + kState)];
    memset(in, 0, sizeof in);
    memset(out, 0, sizeof out);
    float loss = 0;
    int first_local = -1;
    if (!r->host_staged) {
      for (int d = 0; d < slots; ++d) {
        if (!state[d][0]) continue;
        if (first_local < 0) first_local = d;
        in[d * (2 + kState) + 0] = cml_device_batch_shard(batch, 0, (size_t)d);
        in[d * (2 + kState) + 1] = cml_device_batch_shard(batch, 1, (size_t)d);
        memcpy(&in[d * (2 + kState) + 2], state[d], sizeof state[d]);
      }
      st = cml_executable_execute(step_exe, in, (size_t)slots * (2 + kState), NULL, 0, out);
      if (st == CML_OK) {
        st = cml_buffer_copy_to_host(out[first_local * (1 + kState)], &loss, sizeof loss);
      }
      for (int d = 0; d < slots && st == CML_OK; ++d) {
        if (!state[d][0]) continue;
        release_all(state[d], kState);
        memcpy(state[d], &out[d * (1 + kState) + 1], sizeof state[d]);
        cml_buffer_release(out[d * (1 + kState)]);
      }
    } else {
      cml_buffer_t* gin[kMaxDevices * (2 + kParams)];
      cml_buffer_t* gout[kMaxDevices * (1 + kParams)];
      cml_buffer_t* summed[kMaxDevices * (1 + kParams)];
      first_local = 0;
      for (int d = 0; d < slots; ++d) {
        gin[d * (2 + kParams) + 0] = cml_device_batch_shard(batch, 0, (size_t)d);
        gin[d * (2 + kParams) + 1] = cml_device_batch_shard(batch, 1, (size_t)d);
        memcpy(&gin[d * (2 + kParams) + 2], state[d], kParams * sizeof state[d][0]);
      }
      st = cml_executable_execute(grad_exe, gin, (size_t)slots * (2 + kParams), NULL, 0, gout);
      if (st == CML_OK) {
        st = cml_host_all_reduce(gout, (size_t)slots, 1 + kParams, CML_HOST_REDUCE_SUM,
                                 processes > 1, summed);
        release_all(gout, (size_t)slots * (1 + kParams));
      }
      if (st == CML_OK) st = cml_buffer_copy_to_host(summed[0], &loss, sizeof loss);
      if (st == CML_OK) {
        for (int d = 0; d < slots; ++d) {
          memcpy(&in[d * (kState + kParams)], state[d], sizeof state[d]);
          memcpy(&in[d * (kState + kParams) + kState], &summed[d * (1 + kParams) + 1],
                 kParams * sizeof summed[0]);
        }
        st =
            cml_executable_execute(apply_exe, in, (size_t)slots * (kState + kParams), NULL, 0, out);
        release_all(summed, (size_t)slots * (1 + kParams));
      }
      for (int d = 0; d < slots && st == CML_OK; ++d) {
        release_all(state[d], kState);
        memcpy(state[d], &out[d * kState], sizeof state[d]);
      }
    }
    cml_device_batch_release(batch);
    if (st != CML_OK) goto done;
    r->losses[step] = loss;
    if (r->checkpoint && r->every > 0 && step % r->every == 0 && rank == 0) {
      st = cml_checkpoint_save_buffers(r->checkpoint, step, kNames, state[first_local], kState);
      if (st != CML_OK) goto done;
    }
    if (step == r->kill_at) {
      fflush(stdout);
      raise(SIGKILL);
    }
  }
  for (int d = 0; d < slots && st == CML_OK; ++d) {
    if (!state[d][0]) continue;
    for (int i = 0; i < kParams && st == CML_OK; ++i) {
      cml_shape_t s = state_shape(i);
      st = cml_buffer_copy_to_host(state[d][i], r->params[i], cml_shape_byte_size(&s));
    }
    break;
  }
done:
  cml_device_dataset_destroy(ds);
  cml_checkpoint_destroy(ck);
  cml_mesh_destroy(mesh);
  for (int d = 0; d < kMaxDevices; ++d) release_all(state[d], kState);
  cml_executable_release(step_exe);
  cml_executable_release(grad_exe);
  cml_executable_release(apply_exe);
  cml_backend_release(backend);
  return st;
}

// Held-out accuracy of |r|'s final parameters, computed on the host.
static double accuracy(const run_t* r) {
  int correct = 0;
  for (int n = kTrain; n < kTrain + kTest; ++n) {
    float h[kHidden], best = -1e30f;
    int arg = 0;
    for (int j = 0; j < kHidden; ++j) {
      float a = r->params[1][j];
      for (int i = 0; i < kIn; ++i) a += g_x[n][i] * r->params[0][i * kHidden + j];
      h[j] = a > 0 ? a : 0;
    }
    for (int k = 0; k < kClasses; ++k) {
      float a = r->params[3][k];
      for (int j = 0; j < kHidden; ++j) a += h[j] * r->params[2][j * kClasses + k];
      if (a > best) {
        best = a;
        arg = k;
      }
    }
    correct += arg == g_label[n];
  }
  return (double)correct / kTest;
}

static int report(cml_status_t st, const char* what) {
  bool missing =
      cml_status_code(st) == CML_STATUS_UNAVAILABLE || cml_status_code(st) == CML_STATUS_NOT_FOUND;
  fprintf(stderr, "%s: %s\n", what, cml_status_message(st));
  cml_status_free(st);
  return missing ? 77 : 1;
}

// --test-resume: a child trains with checkpoints and is killed at step 60; this process resumes
// from the checkpoint of step 50, then runs 1..200 afresh, and compares.
static int test_resume(const char* config, bool host_staged) {
  char path[64];
  snprintf(path, sizeof path, "train_distributed_%ld.ckpt", (long)getpid());
  unlink(path);
  pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) {
    static run_t killed;
    killed = (run_t){.config = config,
                     .checkpoint = path,
                     .every = 25,
                     .kill_at = 60,
                     .host_staged = host_staged};
    cml_status_t st = train(&killed);
    _exit(st == CML_OK ? 0 : report(st, config));  // not reached when the kill works
  }
  int wstatus = 0;
  waitpid(child, &wstatus, 0);
  if (!WIFSIGNALED(wstatus) || WTERMSIG(wstatus) != SIGKILL) {
    fprintf(stderr, "the child was not killed at step 60 (status %d)\n", wstatus);
    unlink(path);
    return WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 77 ? 77 : 1;
  }
  static run_t resumed, fresh;
  resumed = (run_t){.config = config, .checkpoint = path, .every = 25, .host_staged = host_staged};
  fresh = (run_t){.config = config, .host_staged = host_staged};
  cml_status_t st = train(&resumed);
  unlink(path);
  if (st != CML_OK) return report(st, "resumed run");
  st = train(&fresh);
  if (st != CML_OK) return report(st, "fresh run");
  int failures = 0;
  if (resumed.first_step != 51) {
    fprintf(stderr, "resumed at step %d, want 51 (checkpoint every 25, killed after 60)\n",
            resumed.first_step);
    ++failures;
  }
  for (int s = 51; s <= kSteps; ++s) {
    if (resumed.losses[s] != fresh.losses[s]) {
      fprintf(stderr, "step %d: loss %.9g after resume, %.9g uninterrupted\n", s, resumed.losses[s],
              fresh.losses[s]);
      ++failures;
    }
  }
  if (memcmp(resumed.params, fresh.params, sizeof fresh.params) != 0) {
    fprintf(stderr, "the final parameters differ after resume\n");
    ++failures;
  }
  printf("resume: killed after step 60, resumed at step %d, steps 51..%d %s\n", resumed.first_step,
         kSteps, failures ? "DIFFER" : "bit-identical to an uninterrupted run");
  return failures ? 1 : 0;
}

int main(int argc, char** argv) {
  make_data();
  const char* config = getenv("GOMLX_BACKEND");
  const char* reference = "c";
  static run_t run;
  run.every = 25;
  bool resume_test = false;
  for (int i = 1; i < argc; ++i) {
    bool more = i + 1 < argc;
    const bool takes_value = strcmp(argv[i], "--reference") == 0 ||
                             strcmp(argv[i], "--checkpoint") == 0 ||
                             strcmp(argv[i], "--every") == 0 || strcmp(argv[i], "--kill-at") == 0;
    if (takes_value && !more) {
      fprintf(stderr, "%s needs a value (see the comment at the top of main.c)\n", argv[i]);
      return 2;
    }
    if (strcmp(argv[i], "--reference") == 0) {
      reference = argv[++i];
    } else if (strcmp(argv[i], "--checkpoint") == 0) {
      run.checkpoint = argv[++i];
    } else if (strcmp(argv[i], "--every") == 0 || strcmp(argv[i], "--kill-at") == 0) {
      const char* name = argv[i];
      const char* v = argv[++i];
      char* end = NULL;
      const long n = strtol(v, &end, 10);
      if (end == v || *end || n < 0 || n > kSteps) {
        fprintf(stderr, "%s needs a step count in 0..%d, got \"%s\"\n", name, kSteps, v);
        return 2;
      }
      if (strcmp(name, "--every") == 0) {
        run.every = (int)n;
      } else {
        run.kill_at = (int)n;
      }
    } else if (strcmp(argv[i], "--host-allreduce") == 0) {
      run.host_staged = true;
    } else if (strcmp(argv[i], "--test-resume") == 0) {
      resume_test = true;
    } else if (argv[i][0] == '-') {
      fprintf(stderr, "unknown option %s (see the comment at the top of main.c)\n", argv[i]);
      return 2;
    } else {
      config = argv[i];
    }
  }
  if (!config || !*config) config = "c:devices=4";
  run.config = config;
  // XLA backends under mpirun: every process is its own client, so the sum is host-staged.
  int world_rank = 0, world_size = 1;
  if (strncmp(config, "xla", 3) == 0) {
    cml_host_process_info(&world_rank, &world_size);
    if (world_size > 1) run.host_staged = true;
  }
  if (resume_test) return test_resume(config, run.host_staged);

  cml_status_t st = train(&run);
  if (st != CML_OK) return report(st, config);
  int failures = 0;
  double worst = 0;
  static run_t ref;
  bool compare = strcmp(reference, "none") != 0;
  if (compare) {
    ref = (run_t){.config = reference};
    st = train(&ref);
    if (st != CML_OK) return report(st, reference);
    if (ref.devices != 1) {
      fprintf(stderr, "the reference \"%s\" has %d devices; it must have one\n", reference,
              ref.devices);
      return 1;
    }
  }
  bool print = run.rank == 0;
  for (int s = run.first_step; s <= kSteps; ++s) {
    if (compare) {
      double diff = fabs((double)run.losses[s] - ref.losses[s]) / (1.0 + fabs(ref.losses[s]));
      if (diff > worst) worst = diff;
      if (diff > kBound) {
        fprintf(stderr, "step %d: loss %.9g on %s vs %.9g on one device\n", s, run.losses[s],
                config, ref.losses[s]);
        ++failures;
      }
    }
    if (print && (s == run.first_step || s % 25 == 0)) {
      if (compare) {
        printf("step %3d  loss %.6f (%d devices, %d processes)  %.6f (1 device)\n", s,
               run.losses[s], run.devices * (run.host_staged ? run.processes : 1), run.processes,
               ref.losses[s]);
      } else {
        printf("step %3d  loss %.6f\n", s, run.losses[s]);
      }
    }
  }
  double acc = accuracy(&run);
  if (print) {
    printf("%s%s: held-out accuracy %.1f%% (target 90%%)\n", config,
           run.host_staged ? " (host-staged gradient sum)" : "", 100 * acc);
    if (compare) {
      printf("largest per-step loss difference vs one device (relative): %.3g (bound %g)\n", worst,
             kBound);
    }
  }
  if (acc < 0.9) ++failures;
  return failures ? 1 : 0;
}
