// SPDX-License-Identifier: Apache-2.0
// tests/mpi/c_distributed_test.c: "c:distributed=mpi,devices=2" under `mpirun -np 2` and
// `-np 4`: the global device space, local-only buffers, every collective (dtype classes, groups
// across processes, a device assignment), an SPMD step and AutoSharding (data parallel and
// Megatron) compared bit for bit with one process running "c:devices=2*P"; mismatched
// configurations and modules across processes; a process that fails mid-run stops the others.
//
// `c_distributed_test kill` is the killed-process scenario (tests/mpi/run_kill.sh): the last
// process kills itself in the middle of a loop of executions; the others must return a status
// within seconds.
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cml/backend_impl.h"
#include "cml/cml.h"
#include "cml/ir.h"
#include "test.h"

enum { kLocalDevices = 2 };

static int g_rank, g_size, g_total;
static cml_backend_t* g_mp;   // c:distributed=mpi,devices=2
static cml_backend_t* g_ref;  // c:devices=2*P in this process

static int device_process(int device) { return device / kLocalDevices; }

//===--- values ---===//

static void put_value(cml_dtype_t dtype, double v, void* p) {
  switch (dtype) {
    case CML_DTYPE_F32:
      *(float*)p = (float)v;
      break;
    case CML_DTYPE_F64:
      *(double*)p = v;
      break;
    case CML_DTYPE_F16:
      *(uint16_t*)p = cml_f32_to_f16((float)v);
      break;
    case CML_DTYPE_BF16:
      *(uint16_t*)p = cml_f32_to_bf16((float)v);
      break;
    case CML_DTYPE_I32:
      *(int32_t*)p = (int32_t)v;
      break;
    case CML_DTYPE_I64:
      *(int64_t*)p = (int64_t)v;
      break;
    case CML_DTYPE_U8:
      *(uint8_t*)p = (uint8_t)(int)v;
      break;
    case CML_DTYPE_C64:
      ((float*)p)[0] = (float)v;
      ((float*)p)[1] = (float)(v * 0.5 - 1.0);
      break;
    default:
      memset(p, 0, (size_t)(cml_dtype_bits(dtype) / 8));
      break;
  }
}

// Slot-dependent inputs, except for AutoSharding parameters that are replicated (the same on
// every slot, as their meaning requires). Values are small and not integers (1/3 steps in f32
// round differently with another fold order).
static cml_status_t make_inputs(cml_backend_t* be, const cml_executable_t* exe, int slots,
                                const int32_t* assignment, bool only_local, cml_buffer_t** out) {
  const size_t np = cml_executable_input_count(exe);
  for (int j = 0; j < slots; ++j) {
    const int device = assignment ? assignment[j] : j;
    for (size_t i = 0; i < np; ++i) {
      out[(size_t)j * np + i] = NULL;
      if (only_local && device_process(device) != g_rank) continue;
      const cml_shape_t* s = cml_executable_input_shape(exe, i);
      const cml_sharding_t* sh = cml_executable_input_sharding(exe, i);
      const int seed = sh && cml_sharding_is_replicated(sh) ? 0 : j;
      const int64_t n = cml_shape_element_count(s);
      const size_t esize = (size_t)(cml_dtype_bits(s->dtype) / 8);
      uint8_t* host = malloc((size_t)(n > 0 ? n : 1) * esize);
      if (!host) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
      for (int64_t e = 0; e < n; ++e) {
        const double v = (double)((seed * 5 + (int)i * 3 + (int)e * 7) % 13 - 6) / 3.0 + seed;
        put_value(s->dtype, cml_dtype_is_int(s->dtype) ? (double)(int)(v * 3) : v,
                  host + (size_t)e * esize);
      }
      cml_status_t st =
          cml_buffer_from_host(be, device, s, host, (size_t)n * esize, &out[(size_t)j * np + i]);
      free(host);
      CML_RETURN_IF_ERROR(st);
    }
  }
  return CML_OK;
}

typedef cml_status_t (*build_fn)(cml_backend_t* be, cml_executable_t** out);

static void release_all(cml_buffer_t** b, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    cml_buffer_release(b[i]);
    b[i] = NULL;
  }
}

// Builds with |build| on both backends, runs, and compares every local slot's results byte for
// byte; the other processes' results must stay NULL.
static void compare_with_one_process(int* test_failed_, build_fn build, const char* what) {
  cml_executable_t *mp = NULL, *ref = NULL;
  ASSERT_STATUS_OK(build(g_mp, &mp));
  ASSERT_STATUS_OK(build(g_ref, &ref));
  const int slots = cml_executable_num_devices(mp);
  const size_t np = cml_executable_input_count(mp), no = cml_executable_output_count(mp);
  cml_buffer_t** in_mp = calloc((size_t)slots * np + 1, sizeof *in_mp);
  cml_buffer_t** in_ref = calloc((size_t)slots * np + 1, sizeof *in_ref);
  cml_buffer_t** out_mp = calloc((size_t)slots * no + 1, sizeof *out_mp);
  cml_buffer_t** out_ref = calloc((size_t)slots * no + 1, sizeof *out_ref);
  ASSERT_TRUE(in_mp && in_ref && out_mp && out_ref);
  // The device assignment of the module (identity unless the build set one).
  int32_t* assignment = calloc((size_t)slots + 1, sizeof(int32_t));
  ASSERT_TRUE(assignment != NULL);
  const cml_module_t* m = mp->module;
  for (int j = 0; j < slots; ++j) {
    assignment[j] = m && m->device_assignment ? m->device_assignment[j] : j;
  }
  ASSERT_STATUS_OK(make_inputs(g_mp, mp, slots, assignment, true, in_mp));
  ASSERT_STATUS_OK(make_inputs(g_ref, ref, slots, assignment, false, in_ref));
  ASSERT_STATUS_OK(cml_executable_execute(mp, in_mp, (size_t)slots * np, NULL, 0, out_mp));
  ASSERT_STATUS_OK(cml_executable_execute(ref, in_ref, (size_t)slots * np, NULL, 0, out_ref));
  int compared = 0;
  for (int j = 0; j < slots; ++j) {
    const bool local = device_process(assignment[j]) == g_rank;
    for (size_t k = 0; k < no; ++k) {
      cml_buffer_t* a = out_mp[(size_t)j * no + k];
      cml_buffer_t* b = out_ref[(size_t)j * no + k];
      if (!local) {
        ASSERT_TRUE(a == NULL);
        continue;
      }
      ASSERT_TRUE(a != NULL && b != NULL);
      const size_t bytes = cml_shape_byte_size(cml_buffer_shape(b));
      uint8_t* ha = malloc(bytes + 1);
      uint8_t* hb = malloc(bytes + 1);
      ASSERT_TRUE(ha && hb);
      ASSERT_STATUS_OK(cml_buffer_copy_to_host(a, ha, bytes));
      ASSERT_STATUS_OK(cml_buffer_copy_to_host(b, hb, bytes));
      const int same = memcmp(ha, hb, bytes) == 0;
      free(ha);
      free(hb);
      if (!same) {
        TEST_FAIL_("%s: rank %d slot %d result %zu differs from one process", what, g_rank, j, k);
      }
      ++compared;
    }
  }
  ASSERT_TRUE(compared > 0 || slots * (int)no == 0);
  release_all(in_mp, (size_t)slots * np);
  release_all(in_ref, (size_t)slots * np);
  release_all(out_mp, (size_t)slots * no);
  release_all(out_ref, (size_t)slots * no);
  free(in_mp), free(in_ref), free(out_mp), free(out_ref), free(assignment);
  cml_executable_release(mp);
  cml_executable_release(ref);
}

//===--- modules ---===//

// Groups {k, T-1-k}: every group spans two processes (one member each: the direct MPI path).
static int32_t g_pairs[256];
// Groups {even slots}, {odd slots}: several members per process (the gathered path).
static int32_t g_parity[256];
// One group: the last slot first, then 0..T-2 (CollectiveBroadcast from the last process).
static int32_t g_rotated[256];

static cml_shape_t shape2(cml_dtype_t d, int64_t a, int64_t b) {
  return cml_shape_make(d, 2, (int64_t[]){a, b});
}

static cml_status_t finish(cml_builder_t* b, cml_function_t* f, const cml_value_t* outs, size_t n,
                           cml_status_t st, cml_executable_t** out) {
  if (st == CML_OK) st = cml_function_return(f, outs, n);
  if (st == CML_OK) st = cml_builder_compile(b, out);
  cml_builder_destroy(b);
  return st;
}

static cml_status_t build_all_reduce(cml_backend_t* be, cml_executable_t** out) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(be, "all_reduce", &b));
  cml_status_t st = cml_builder_spmd(b, g_total);
  cml_function_t* f = cml_builder_main(b);
  const cml_replica_groups_t pairs = {g_pairs, (size_t)g_total / 2, 2};
  const cml_replica_groups_t parity = {g_parity, 2, (size_t)g_total / 2};
  cml_shape_t sf = shape2(CML_DTYPE_F32, 3, 5), si = shape2(CML_DTYPE_I32, 2, 2);
  cml_shape_t sb = shape2(CML_DTYPE_BF16, 4, 3), sh = shape2(CML_DTYPE_F16, 1, 7);
  cml_shape_t sd = shape2(CML_DTYPE_F64, 2, 3), sc = shape2(CML_DTYPE_C64, 2, 2);
  cml_shape_t su = shape2(CML_DTYPE_U8, 3, 3);
  cml_value_t x[2] = {cml_parameter(f, "f", &sf), cml_parameter(f, "i", &si)};
  cml_value_t bf = cml_parameter(f, "bf", &sb), h = cml_parameter(f, "h", &sh);
  cml_value_t d = cml_parameter(f, "d", &sd), c = cml_parameter(f, "c", &sc);
  cml_value_t u = cml_parameter(f, "u", &su);
  cml_value_t r[2], r_bf, r_bf2, r_h, r_d, r_c, r_u;
  cml_op_all_reduce(f, x, 2, CML_REDUCE_SUM, NULL, r);  // two operands, one group
  cml_op_all_reduce(f, &bf, 1, CML_REDUCE_SUM, &pairs, &r_bf);
  cml_op_all_reduce(f, &bf, 1, CML_REDUCE_SUM, &parity, &r_bf2);
  cml_op_all_reduce(f, &h, 1, CML_REDUCE_MAX, &parity, &r_h);
  cml_op_all_reduce(f, &d, 1, CML_REDUCE_PRODUCT, &pairs, &r_d);
  cml_op_all_reduce(f, &c, 1, CML_REDUCE_SUM, &parity, &r_c);
  cml_op_all_reduce(f, &u, 1, CML_REDUCE_MIN, NULL, &r_u);
  const cml_value_t outs[8] = {r[0], r[1], r_bf, r_bf2, r_h, r_d, r_c, r_u};
  return finish(b, f, outs, 8, st, out);
}

static cml_status_t build_movement(cml_backend_t* be, cml_executable_t** out) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(be, "movement", &b));
  cml_status_t st = cml_builder_spmd(b, g_total);
  cml_function_t* f = cml_builder_main(b);
  const cml_replica_groups_t pairs = {g_pairs, (size_t)g_total / 2, 2};
  const cml_replica_groups_t parity = {g_parity, 2, (size_t)g_total / 2};
  const cml_replica_groups_t rotated = {g_rotated, 1, (size_t)g_total};
  cml_shape_t sg = shape2(CML_DTYPE_I64, 2, 3);
  cml_shape_t ss = shape2(CML_DTYPE_F32, (int64_t)g_total * 2, 3);
  cml_shape_t sa = shape2(CML_DTYPE_BF16, (int64_t)g_total, 2);
  cml_value_t g = cml_parameter(f, "g", &sg);
  cml_value_t s = cml_parameter(f, "s", &ss);
  cml_value_t a = cml_parameter(f, "a", &sa);
  int32_t ring[2 * 256];
  for (int k = 0; k + 1 < g_total; ++k) {  // k -> k+1; slot 0 receives nothing (zeros)
    ring[2 * k] = k;
    ring[2 * k + 1] = k + 1;
  }
  const cml_value_t outs[7] = {
      cml_op_all_gather(f, g, 1, &pairs),
      cml_op_all_gather(f, g, 0, &parity),
      cml_op_reduce_scatter(f, s, CML_REDUCE_SUM, 0, NULL),
      cml_op_all_to_all(f, a, 0, 1, NULL),
      cml_op_collective_permute(f, g, ring, (size_t)g_total - 1),
      cml_op_collective_broadcast(f, s, &rotated),
      cml_op_collective_broadcast(f, g, &parity),
  };
  return finish(b, f, outs, 7, st, out);
}

// A data-parallel step, with the slots assigned to the devices in reverse order: y = x @ w,
// the gradient x^T (y - t) summed over all slots, the loss summed over pairs.
static cml_status_t build_step(cml_backend_t* be, cml_executable_t** out) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(be, "step", &b));
  cml_status_t st = cml_builder_spmd(b, g_total);
  int32_t reversed[256];
  for (int k = 0; k < g_total; ++k) reversed[k] = g_total - 1 - k;
  if (st == CML_OK) st = cml_builder_device_assignment(b, reversed, (size_t)g_total);
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t xs = shape2(CML_DTYPE_F32, 4, 3), ws = shape2(CML_DTYPE_F32, 3, 2);
  cml_shape_t ts = shape2(CML_DTYPE_F32, 4, 2);
  cml_value_t x = cml_parameter(f, "x", &xs), w = cml_parameter(f, "w", &ws);
  cml_value_t t = cml_parameter(f, "t", &ts);
  cml_value_t y = cml_op_dot(f, x, w);
  cml_value_t d = cml_op_sub(f, y, t);
  cml_dot_config_t c;
  memset(&c, 0, sizeof c);
  c.lhs_contracting_count = c.rhs_contracting_count = 1;
  cml_value_t g = cml_op_dot_general(f, x, d, &c);
  cml_value_t loss = cml_op_reduce_sum(f, cml_op_mul(f, d, d), NULL, 0);
  const cml_replica_groups_t pairs = {g_pairs, (size_t)g_total / 2, 2};
  cml_value_t gs, ls;
  cml_op_all_reduce(f, &g, 1, CML_REDUCE_SUM, NULL, &gs);
  cml_op_all_reduce(f, &loss, 1, CML_REDUCE_SUM, &pairs, &ls);
  const cml_value_t outs[3] = {y, gs, ls};
  return finish(b, f, outs, 3, st, out);
}

static cml_mesh_t* g_mesh_data;   // {data: T}
static cml_mesh_t* g_mesh_model;  // {data: T/2, model: 2}

static cml_sharding_t spec(const cml_mesh_t* mesh, const char* a0, const char* a1) {
  const char* axes[2] = {a0, a1};
  cml_sharding_t s;
  if (cml_sharding_make(mesh, axes, 2, &s) != CML_OK) memset(&s, 0, sizeof s);
  return s;
}

// A builder for AutoSharding over |mesh| (NULL *|out| when it could not be created; a failure
// of the AutoSharding call comes back with the builder, which the caller destroys).
static cml_status_t begin_auto(cml_backend_t* be, const char* name, const cml_mesh_t* mesh,
                               cml_builder_t** out) {
  *out = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(be, name, out));
  return cml_builder_auto_sharding(*out, &mesh, 1);
}

// AutoSharding, data parallel: x and t split on the batch, w replicated; y split, the loss and
// the gradient replicated (the partitioner inserts the AllReduces).
static cml_status_t build_auto_data(cml_backend_t* be, cml_executable_t** out) {
  const cml_mesh_t* mesh = g_mesh_data;
  cml_builder_t* b = NULL;
  cml_status_t st = begin_auto(be, "auto_data", mesh, &b);
  if (!b) return st;
  cml_function_t* f = cml_builder_main(b);
  cml_sharding_t batch = spec(mesh, "data", NULL), rep;
  cml_sharding_replicated(mesh, &rep);
  cml_shape_t xs = shape2(CML_DTYPE_F32, 2 * (int64_t)g_total, 3);
  cml_shape_t ws = shape2(CML_DTYPE_F32, 3, 2);
  cml_shape_t ts = shape2(CML_DTYPE_F32, 2 * (int64_t)g_total, 2);
  cml_value_t x = cml_parameter_sharded(f, "x", &xs, &batch);
  cml_value_t w = cml_parameter_sharded(f, "w", &ws, &rep);
  cml_value_t t = cml_parameter_sharded(f, "t", &ts, &batch);
  cml_value_t y = cml_op_dot(f, x, w);
  cml_value_t d = cml_op_sub(f, y, t);
  cml_value_t loss = cml_op_reduce_sum(f, cml_op_mul(f, d, d), NULL, 0);
  cml_dot_config_t c;
  memset(&c, 0, sizeof c);
  c.lhs_contracting_count = c.rhs_contracting_count = 1;
  cml_value_t g = cml_op_dot_general(f, x, d, &c);
  const cml_value_t outs[3] = {y, loss, g};
  const cml_sharding_t out_specs[3] = {batch, rep, rep};
  if (st == CML_OK) st = cml_function_return_sharded(f, outs, 3, out_specs);
  if (st == CML_OK) st = cml_builder_compile(b, out);
  cml_builder_destroy(b);
  return st;
}

// AutoSharding, data x model: the batch split over data, a Megatron MLP over model (W1 by
// columns, W2 by rows, relu between).
static cml_status_t build_auto_megatron(cml_backend_t* be, cml_executable_t** out) {
  const cml_mesh_t* mesh = g_mesh_model;
  cml_builder_t* b = NULL;
  cml_status_t st = begin_auto(be, "auto_megatron", mesh, &b);
  if (!b) return st;
  cml_function_t* f = cml_builder_main(b);
  cml_sharding_t batch = spec(mesh, "data", NULL), col = spec(mesh, NULL, "model");
  cml_sharding_t row = spec(mesh, "model", NULL);
  cml_shape_t xs = shape2(CML_DTYPE_F32, (int64_t)g_total, 4);
  cml_shape_t w1s = shape2(CML_DTYPE_F32, 4, 6), w2s = shape2(CML_DTYPE_F32, 6, 4);
  cml_value_t x = cml_parameter_sharded(f, "x", &xs, &batch);
  cml_value_t w1 = cml_parameter_sharded(f, "w1", &w1s, &col);
  cml_value_t w2 = cml_parameter_sharded(f, "w2", &w2s, &row);
  cml_value_t h = cml_op_dot(f, x, w1);
  h = cml_op_max(f, h, cml_constant_scalar_f64(f, CML_DTYPE_F32, 0.0));
  cml_value_t y = cml_op_dot(f, h, w2);
  if (st == CML_OK) st = cml_function_return_sharded(f, &y, 1, &batch);
  if (st == CML_OK) st = cml_builder_compile(b, out);
  cml_builder_destroy(b);
  return st;
}

//===--- tests ---===//

TEST(global_device_space) {
  ASSERT_EQ_INT(cml_backend_device_count(g_mp), g_total);
  cml_process_info_t info;
  cml_backend_process_info(g_mp, &info);
  ASSERT_EQ_INT(info.process_index, g_rank);
  ASSERT_EQ_INT(info.process_count, g_size);
  ASSERT_EQ_INT(info.first_local_device, g_rank * kLocalDevices);
  ASSERT_EQ_INT(info.local_device_count, kLocalDevices);
  ASSERT_TRUE(cml_backend_device_is_local(g_mp, g_rank * kLocalDevices + 1));
  const int other = ((g_rank + 1) % g_size) * kLocalDevices;
  ASSERT_FALSE(cml_backend_device_is_local(g_mp, other));
  char want[32];
  snprintf(want, sizeof want, "process %d", (g_rank + 1) % g_size);
  ASSERT_CONTAINS(cml_backend_device_description(g_mp, other), want);
  // Buffers live on local devices only.
  const float v = 1.0f;
  cml_shape_t s = cml_shape_scalar(CML_DTYPE_F32);
  cml_buffer_t* buf = NULL;
  cml_status_t st = cml_buffer_from_host(g_mp, other, &s, &v, sizeof v, &buf);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_FAILED_PRECONDITION);
  char dev[64];
  snprintf(dev, sizeof dev, "device %d belongs to process %d", other, (g_rank + 1) % g_size);
  ASSERT_CONTAINS(cml_status_message(st), dev);
  cml_status_free(st);
  ASSERT_TRUE(buf == NULL);
  ASSERT_STATUS_OK(cml_buffer_from_host(g_mp, g_rank * kLocalDevices, &s, &v, sizeof v, &buf));
  cml_buffer_release(buf);
}

TEST(all_reduce_dtypes_and_groups) {
  compare_with_one_process(test_failed_, build_all_reduce, "AllReduce");
}

TEST(gather_scatter_all_to_all_permute_broadcast) {
  compare_with_one_process(test_failed_, build_movement, "movement");
}

TEST(spmd_step_with_device_assignment) {
  compare_with_one_process(test_failed_, build_step, "SPMD step");
}

TEST(auto_sharding_data_parallel) {
  compare_with_one_process(test_failed_, build_auto_data, "AutoSharding data parallel");
}

TEST(auto_sharding_megatron) {
  compare_with_one_process(test_failed_, build_auto_megatron, "AutoSharding Megatron");
}

// (A buffer in another process's slot of a multi-device execution ends the job, as any failed
// multi-device execution does: before_dispatch_scenario "remote" checks it.)
TEST(execute_checks_remote_entries) {
  // A single-device execution on another process's device.
  cml_status_t st;
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(g_mp, "one", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_value_t z = cml_constant_scalar_f64(f, CML_DTYPE_F32, 2.0);
  cml_executable_t* one = NULL;
  ASSERT_STATUS_OK(finish(b, f, &z, 1, CML_OK, &one));
  cml_buffer_t* r = NULL;
  st = cml_executable_execute(one, NULL, 0, NULL, ((g_rank + 1) % g_size) * kLocalDevices, &r);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_FAILED_PRECONDITION);
  ASSERT_CONTAINS(cml_status_message(st), "belongs to another process");
  cml_status_free(st);
  ASSERT_STATUS_OK(cml_executable_execute(one, NULL, 0, NULL, g_rank * kLocalDevices, &r));
  cml_buffer_release(r);
  cml_executable_release(one);
}

// An SPMD module on process 0's two devices only (every process compiles it; only process 0
// runs it): a refused execution stays local (no other process takes part, so the job goes on),
// and the next one runs.
TEST(local_module_failure_stays_local) {
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(g_mp, "local", &b));
  const int32_t devices[2] = {0, 1};
  cml_status_t st = cml_builder_spmd(b, 2);
  if (st == CML_OK) st = cml_builder_device_assignment(b, devices, 2);
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t is = cml_shape_scalar(CML_DTYPE_I64);
  cml_value_t x = cml_parameter(f, "x", &is), r;
  cml_op_all_reduce(f, &x, 1, CML_REDUCE_SUM, NULL, &r);
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(finish(b, f, &r, 1, st, &exe));
  if (g_rank == 0) {
    cml_buffer_t* in[2] = {0};
    cml_buffer_t* out[2] = {0};
    const int64_t v[2] = {5, 7};
    const float wrong = 1;
    cml_shape_t fs = cml_shape_scalar(CML_DTYPE_F32);
    ASSERT_STATUS_OK(cml_buffer_from_host(g_mp, 0, &fs, &wrong, sizeof wrong, &in[0]));
    ASSERT_STATUS_OK(cml_buffer_from_host(g_mp, 1, &is, &v[1], sizeof v[1], &in[1]));
    st = cml_executable_execute(exe, in, 2, NULL, 0, out);
    ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
    ASSERT_TRUE(strstr(cml_status_message(st), "told to stop") == NULL);
    cml_status_free(st);
    cml_buffer_release(in[0]);
    ASSERT_STATUS_OK(cml_buffer_from_host(g_mp, 0, &is, &v[0], sizeof v[0], &in[0]));
    ASSERT_STATUS_OK(cml_executable_execute(exe, in, 2, NULL, 0, out));
    int64_t sum = 0;
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[0], &sum, sizeof sum));
    ASSERT_EQ_INT(sum, 12);
    release_all(in, 2);
    release_all(out, 2);
  }
  cml_executable_release(exe);
}

TEST(mismatched_configuration) {
  char config[64];
  snprintf(config, sizeof config, "c:distributed=mpi,devices=%d", g_rank == 1 ? 3 : 2);
  cml_backend_t* be = NULL;
  cml_status_t st = cml_backend_new_with_config(config, &be);
  // Every process fails, naming the process that differs and both settings.
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_FAILED_PRECONDITION);
  ASSERT_CONTAINS(cml_status_message(st), "configuration differs across processes");
  ASSERT_CONTAINS(cml_status_message(st), "process 1 has \"devices=3");
  cml_status_free(st);
  ASSERT_TRUE(be == NULL);
}

static cml_status_t build_rank_dependent(cml_backend_t* be, cml_executable_t** out) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(be, "differs", &b));
  cml_status_t st = cml_builder_spmd(b, g_total);
  cml_function_t* f = cml_builder_main(b);
  cml_value_t c = cml_constant_scalar_f64(f, CML_DTYPE_F32, g_rank == 0 ? 1.0 : 2.0), r;
  cml_op_all_reduce(f, &c, 1, CML_REDUCE_SUM, NULL, &r);
  return finish(b, f, &r, 1, st, out);
}

// The same ops and shapes, but process 0 slices x[0:2] where the others slice x[2:4].
static cml_status_t build_rank_dependent_slice(cml_backend_t* be, cml_executable_t** out) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(be, "differs", &b));
  cml_status_t st = cml_builder_spmd(b, g_total);
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t xs = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){4});
  cml_value_t x = cml_parameter(f, "x", &xs), r;
  const int64_t start = g_rank == 0 ? 0 : 2, limit = start + 2;
  cml_value_t part = cml_op_slice(f, x, &start, &limit, NULL, 1);
  cml_op_all_reduce(f, &part, 1, CML_REDUCE_SUM, NULL, &r);
  return finish(b, f, &r, 1, st, out);
}

// AutoSharding with the same graph, but x split over "data" on process 0 and replicated on the
// others: they would partition into different programs.
static cml_status_t build_rank_dependent_sharding(cml_backend_t* be, cml_executable_t** out) {
  const cml_mesh_t* mesh = g_mesh_data;
  cml_builder_t* b = NULL;
  cml_status_t st = begin_auto(be, "differs", mesh, &b);
  if (!b) return st;
  cml_function_t* f = cml_builder_main(b);
  cml_sharding_t batch = spec(mesh, "data", NULL), rep;
  cml_sharding_replicated(mesh, &rep);
  cml_shape_t xs = shape2(CML_DTYPE_F32, 2 * (int64_t)g_total, 3);
  cml_value_t x = cml_parameter_sharded(f, "x", &xs, g_rank == 0 ? &batch : &rep);
  cml_value_t y = cml_op_reduce_sum(f, x, NULL, 0);
  if (st == CML_OK) st = cml_function_return_sharded(f, &y, 1, &rep);
  if (st == CML_OK) st = cml_builder_compile(b, out);
  cml_builder_destroy(b);
  return st;
}

TEST(mismatched_module_at_compile) {
  const build_fn builds[3] = {build_rank_dependent, build_rank_dependent_slice,
                              build_rank_dependent_sharding};
  for (int i = 0; i < 3; ++i) {
    cml_executable_t* exe = NULL;
    cml_status_t st = builds[i](g_mp, &exe);
    ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_FAILED_PRECONDITION);
    ASSERT_CONTAINS(cml_status_message(st), "compiled multi-device module differs");
    cml_status_free(st);
    ASSERT_TRUE(exe == NULL);
  }
}

// A While loop of |n| iterations per slot, then an AllReduce over every slot.
static cml_status_t build_loop(cml_backend_t* be, cml_executable_t** out) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(be, "loop", &b));
  cml_status_t st = cml_builder_spmd(b, g_total);
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t is = cml_shape_scalar(CML_DTYPE_I64);
  cml_value_t n = cml_parameter(f, "n", &is);
  cml_function_t *cond = NULL, *body = NULL;
  if (st == CML_OK) st = cml_function_new_closure(f, &cond);
  if (st == CML_OK) st = cml_function_new_closure(f, &body);
  if (st == CML_OK) {
    cml_value_t ci = cml_parameter(cond, "i", &is);
    cml_value_t go = cml_op_less_than(cond, ci, n);
    st = cml_function_return(cond, &go, 1);
  }
  if (st == CML_OK) {
    cml_value_t bi = cml_parameter(body, "i", &is);
    cml_value_t next = cml_op_add(body, bi, cml_constant_scalar_i64(body, CML_DTYPE_I64, 1));
    st = cml_function_return(body, &next, 1);
  }
  cml_value_t init = cml_constant_scalar_i64(f, CML_DTYPE_I64, 0), i, sum;
  cml_op_while(f, cond, body, &init, 1, &i);
  cml_op_all_reduce(f, &i, 1, CML_REDUCE_SUM, NULL, &sum);
  return finish(b, f, &sum, 1, st, out);
}

static cml_status_t run_loop(cml_executable_t* exe, int64_t n, int64_t timeout_ns,
                             int64_t* out_sum) {
  cml_shape_t is = cml_shape_scalar(CML_DTYPE_I64);
  cml_buffer_t* in[256] = {0};
  cml_buffer_t* out[256] = {0};
  cml_status_t st = CML_OK;
  for (int d = g_rank * kLocalDevices; d < (g_rank + 1) * kLocalDevices && st == CML_OK; ++d) {
    st = cml_buffer_from_host(g_mp, d, &is, &n, sizeof n, &in[d]);
  }
  cml_execute_options_t opts;
  cml_execute_options_init(&opts);
  opts.timeout_ns = timeout_ns;
  if (st == CML_OK) st = cml_executable_execute_with_options(exe, in, (size_t)g_total, &opts, out);
  if (st == CML_OK && out_sum) {
    st = cml_buffer_copy_to_host(out[g_rank * kLocalDevices], out_sum, sizeof *out_sum);
  }
  release_all(in, (size_t)g_total);
  release_all(out, (size_t)g_total);
  return st;
}

// Last (a failure stops the job's MPI transport): the last process runs past its deadline
// inside a long loop; the others wait for it in the AllReduce and stop within seconds.
// Two distributed=mpi backends, each executed in a loop on a thread of its own: each backend's
// executions are issued in the same order on every process, but the two loops interleave
// differently on each. Each backend talks on a communicator of its own, so neither waits for
// the other and a peer's message of the other backend is never taken for a divergence (both
// were: the loops stopped with FAILED_PRECONDITION after a few hundred iterations).
typedef struct two_loops_t {
  cml_backend_t* backend;
  cml_executable_t* exe;
  int iterations, wrong;
  cml_status_t status;
} two_loops_t;

static void* two_loops_thread(void* arg) {
  two_loops_t* t = arg;
  cml_shape_t is = cml_shape_scalar(CML_DTYPE_I64);
  for (int it = 0; it < t->iterations && t->status == CML_OK; ++it) {
    const int64_t n = 1 + it % 3;
    cml_buffer_t* in[256] = {0};
    cml_buffer_t* out[256] = {0};
    for (int d = g_rank * kLocalDevices; d < (g_rank + 1) * kLocalDevices && t->status == CML_OK;
         ++d) {
      t->status = cml_buffer_from_host(t->backend, d, &is, &n, sizeof n, &in[d]);
    }
    if (t->status == CML_OK) {
      t->status = cml_executable_execute(t->exe, in, (size_t)g_total, NULL, 0, out);
    }
    int64_t sum = 0;
    if (t->status == CML_OK) {
      t->status = cml_buffer_copy_to_host(out[g_rank * kLocalDevices], &sum, sizeof sum);
    }
    if (t->status == CML_OK && sum != n * g_total) ++t->wrong;
    release_all(in, (size_t)g_total);
    release_all(out, (size_t)g_total);
  }
  return NULL;
}

TEST(two_backends_on_two_threads) {
  cml_backend_t* second = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("c:distributed=mpi,devices=2,threads=1", &second));
  two_loops_t loops[2] = {{.backend = g_mp, .iterations = 400},
                          {.backend = second, .iterations = 400}};
  for (int k = 0; k < 2; ++k) ASSERT_STATUS_OK(build_loop(loops[k].backend, &loops[k].exe));
  pthread_t threads[2];
  for (int k = 0; k < 2; ++k) {
    ASSERT_TRUE(pthread_create(&threads[k], NULL, two_loops_thread, &loops[k]) == 0);
  }
  for (int k = 0; k < 2; ++k) pthread_join(threads[k], NULL);
  for (int k = 0; k < 2; ++k) {
    ASSERT_STATUS_OK(loops[k].status);
    ASSERT_EQ_INT(loops[k].wrong, 0);
    cml_executable_release(loops[k].exe);
  }
  cml_backend_release(second);
}

TEST(failure_stops_every_process) {
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(build_loop(g_mp, &exe));
  int64_t sum = 0;
  ASSERT_STATUS_OK(run_loop(exe, 3, 0, &sum));
  ASSERT_EQ_INT(sum, 3 * g_total);
  const bool last = g_rank == g_size - 1;
  const int64_t start = cml_clock_monotonic_ns();
  cml_status_t st = run_loop(exe, last ? (int64_t)1 << 40 : 3, last ? 300000000 : 0, NULL);
  const double took = (double)(cml_clock_monotonic_ns() - start) / 1e9;
  char want[64];
  snprintf(want, sizeof want, "process %d failed", g_size - 1);
  if (last) {
    ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_DEADLINE_EXCEEDED);
  } else {
    ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_FAILED_PRECONDITION);
    ASSERT_CONTAINS(cml_status_message(st), want);
    ASSERT_CONTAINS(cml_status_message(st), "deadline");
  }
  cml_status_free(st);
  ASSERT_TRUE(took < 10.0);
  // Later executions fail at once.
  st = run_loop(exe, 3, 0, NULL);
  ASSERT_NE_INT(cml_status_code(st), CML_STATUS_OK);
  cml_status_free(st);
  cml_executable_release(exe);
}

//===--- a failure before dispatch (its own run: it ends the job) ---===//

// The last process stops its second execution before the backend runs it (an input of the
// wrong shape, or a cancelled token): every other process's execution of that launch must fail
// too, naming it, within seconds; none may pair it with the next launch and return OK.
static void before_dispatch_scenario(int* test_failed_, const char* how) {
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(build_loop(g_mp, &exe));
  int64_t sum = 0;
  ASSERT_STATUS_OK(run_loop(exe, 3, 0, &sum));
  ASSERT_EQ_INT(sum, 3 * g_total);
  const bool last = g_rank == g_size - 1;
  const int64_t start = cml_clock_monotonic_ns();
  cml_status_t st;
  if (strcmp(how, "remote") == 0) {  // every process: a buffer in another process's slot
    cml_buffer_t* in[256] = {0};
    cml_buffer_t* out[256] = {0};
    cml_shape_t is = cml_shape_scalar(CML_DTYPE_I64);
    const int64_t n = 3;
    st = CML_OK;
    for (int d = g_rank * kLocalDevices; d < (g_rank + 1) * kLocalDevices && st == CML_OK; ++d) {
      st = cml_buffer_from_host(g_mp, d, &is, &n, sizeof n, &in[d]);
    }
    const int remote = ((g_rank + 1) % g_size) * kLocalDevices;
    in[remote] = in[g_rank * kLocalDevices];
    if (st == CML_OK) st = cml_executable_execute(exe, in, (size_t)g_total, NULL, 0, out);
    in[remote] = NULL;
    release_all(in, (size_t)g_total);
    release_all(out, (size_t)g_total);
  } else if (last && strcmp(how, "shape") == 0) {
    cml_buffer_t* in[256] = {0};
    cml_buffer_t* out[256] = {0};
    cml_shape_t wrong = cml_shape_scalar(CML_DTYPE_F32);
    const float v = 3;
    st = CML_OK;
    for (int d = g_rank * kLocalDevices; d < (g_rank + 1) * kLocalDevices && st == CML_OK; ++d) {
      st = cml_buffer_from_host(g_mp, d, &wrong, &v, sizeof v, &in[d]);
    }
    if (st == CML_OK) st = cml_executable_execute(exe, in, (size_t)g_total, NULL, 0, out);
    release_all(in, (size_t)g_total);
    release_all(out, (size_t)g_total);
  } else if (last) {
    cml_cancel_token_t* token = NULL;
    ASSERT_STATUS_OK(cml_cancel_token_create(cml_allocator_system(), &token));
    cml_cancel_token_cancel(token);
    cml_buffer_t* in[256] = {0};
    cml_buffer_t* out[256] = {0};
    cml_shape_t is = cml_shape_scalar(CML_DTYPE_I64);
    const int64_t n = 3;
    st = CML_OK;
    for (int d = g_rank * kLocalDevices; d < (g_rank + 1) * kLocalDevices && st == CML_OK; ++d) {
      st = cml_buffer_from_host(g_mp, d, &is, &n, sizeof n, &in[d]);
    }
    cml_execute_options_t opts;
    cml_execute_options_init(&opts);
    opts.cancel_token = token;
    if (st == CML_OK)
      st = cml_executable_execute_with_options(exe, in, (size_t)g_total, &opts, out);
    release_all(in, (size_t)g_total);
    release_all(out, (size_t)g_total);
    cml_cancel_token_destroy(token);
  } else {
    st = run_loop(exe, 3, 0, &sum);
  }
  const double took = (double)(cml_clock_monotonic_ns() - start) / 1e9;
  printf("rank %d: %s after %.2f s: %s\n", g_rank, cml_status_code_name(cml_status_code(st)), took,
         cml_status_message(st));
  fflush(stdout);
  char want[64];
  snprintf(want, sizeof want, "process %d failed", g_size - 1);
  if (strcmp(how, "remote") == 0) {
    ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
    ASSERT_CONTAINS(cml_status_message(st), "of another process: pass NULL there");
    ASSERT_CONTAINS(cml_status_message(st), "told to stop");
  } else if (last) {
    ASSERT_EQ_INT(cml_status_code(st),
                  strcmp(how, "shape") == 0 ? CML_STATUS_INVALID_ARGUMENT : CML_STATUS_CANCELLED);
    ASSERT_CONTAINS(cml_status_message(st), "told to stop");
  } else {
    ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_FAILED_PRECONDITION);
    ASSERT_CONTAINS(cml_status_message(st), want);
  }
  cml_status_free(st);
  ASSERT_TRUE(took < 10.0);  // the notice, not CML_MPI_TIMEOUT_MS (20 s in the tests)
  // The job is over: the next launch fails at once everywhere instead of mixing launches.
  st = run_loop(exe, 3, 0, &sum);
  ASSERT_NE_INT(cml_status_code(st), CML_STATUS_OK);
  cml_status_free(st);
  cml_executable_release(exe);
}

//===--- a predicate that differs between processes (its own run: it ends the job) ---===//

// If (n > 100 or this slot is on the last process) { AllReduce(n) } else { n }, then an
// AllReduce of that: with n = 1000 every process runs both; with n = 1 only the last process
// runs the first, and its AllReduce meets the others' second. The two must not exchange data:
// every process fails within seconds, naming the divergence, instead of returning sums of two
// different collectives under OK.
static cml_status_t build_diverge(cml_backend_t* be, cml_executable_t** out) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(be, "diverge", &b));
  cml_status_t st = cml_builder_spmd(b, g_total);
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t is = cml_shape_scalar(CML_DTYPE_I64);
  cml_value_t n = cml_parameter(f, "n", &is);
  cml_value_t last = cml_op_greater_or_equal(
      f, cml_op_replica_id(f), cml_constant_scalar_i64(f, CML_DTYPE_U32, g_total - kLocalDevices));
  cml_value_t big = cml_op_greater_than(f, n, cml_constant_scalar_i64(f, CML_DTYPE_I64, 100));
  cml_value_t pred = cml_op_logical_or(f, last, big);
  cml_function_t *yes = NULL, *no = NULL;
  if (st == CML_OK) st = cml_function_new_closure(f, &yes);
  if (st == CML_OK) st = cml_function_new_closure(f, &no);
  cml_value_t y = CML_VALUE_INVALID, r = CML_VALUE_INVALID, sum = CML_VALUE_INVALID;
  if (st == CML_OK) {
    cml_op_all_reduce(yes, &n, 1, CML_REDUCE_SUM, NULL, &y);
    st = cml_function_return(yes, &y, 1);
  }
  if (st == CML_OK) st = cml_function_return(no, &n, 1);
  if (st == CML_OK) cml_op_if(f, pred, yes, no, &r);
  cml_op_all_reduce(f, &r, 1, CML_REDUCE_SUM, NULL, &sum);
  return finish(b, f, &sum, 1, st, out);
}

static void diverge_scenario(int* test_failed_) {
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(build_diverge(g_mp, &exe));
  int64_t sum = 0;
  ASSERT_STATUS_OK(run_loop(exe, 1000, 0, &sum));
  ASSERT_EQ_INT(sum, (int64_t)1000 * g_total * g_total);
  const int64_t start = cml_clock_monotonic_ns();
  cml_status_t st = run_loop(exe, 1, 0, &sum);
  const double took = (double)(cml_clock_monotonic_ns() - start) / 1e9;
  printf("rank %d: %s after %.2f s: %s\n", g_rank, cml_status_code_name(cml_status_code(st)), took,
         cml_status_message(st));
  fflush(stdout);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_FAILED_PRECONDITION);
  ASSERT_CONTAINS(cml_status_message(st), "no longer run the same collectives");
  cml_status_free(st);
  ASSERT_TRUE(took < 10.0);  // seen in the messages, not CML_MPI_TIMEOUT_MS (20 s in the tests)
  st = run_loop(exe, 1000, 0, &sum);
  ASSERT_NE_INT(cml_status_code(st), CML_STATUS_OK);
  cml_status_free(st);
  cml_executable_release(exe);
}

//===--- the killed process (run_kill.sh) ---===//

static int kill_scenario(void) {
  cml_executable_t* exe = NULL;
  cml_status_t st = build_loop(g_mp, &exe);
  const int64_t start = cml_clock_monotonic_ns();
  for (int it = 0; st == CML_OK && it < 100000; ++it) {
    if (g_rank == g_size - 1 && it == 20) raise(SIGKILL);
    int64_t sum = 0;
    st = run_loop(exe, 1000, 0, &sum);
  }
  const double took = (double)(cml_clock_monotonic_ns() - start) / 1e9;
  printf("rank %d stopped after %.1f s with status %s: %s\n", g_rank, took,
         cml_status_code_name(cml_status_code(st)), cml_status_message(st));
  fflush(stdout);
  // Its own timeout, or the notice of another survivor that timed out first.
  const bool ok = (cml_status_code(st) == CML_STATUS_DEADLINE_EXCEEDED ||
                   (cml_status_code(st) == CML_STATUS_FAILED_PRECONDITION &&
                    strstr(cml_status_message(st), "waited") != NULL)) &&
                  took < 30.0;
  cml_status_free(st);
  cml_executable_release(exe);
  cml_backend_release(g_mp);
  cml_backend_release(g_ref);
  // Without MPI_Finalize (a peer died): _exit so that no exit handler waits for it.
  _exit(ok ? 0 : 1);
}

static const test_entry_t kTests[] = {
    TEST_ENTRY(global_device_space),
    TEST_ENTRY(all_reduce_dtypes_and_groups),
    TEST_ENTRY(gather_scatter_all_to_all_permute_broadcast),
    TEST_ENTRY(spmd_step_with_device_assignment),
    TEST_ENTRY(auto_sharding_data_parallel),
    TEST_ENTRY(auto_sharding_megatron),
    TEST_ENTRY(execute_checks_remote_entries),
    TEST_ENTRY(local_module_failure_stays_local),
    TEST_ENTRY(mismatched_configuration),
    TEST_ENTRY(mismatched_module_at_compile),
    TEST_ENTRY(two_backends_on_two_threads),
    TEST_ENTRY(failure_stops_every_process),
};

int main(int argc, char** argv) {
  const char* r = getenv("OMPI_COMM_WORLD_RANK");
  const char* s = getenv("OMPI_COMM_WORLD_SIZE");
  if (!r || !s) {
    fprintf(stderr, "c_distributed_test: run under mpirun (-np 2 or more)\n");
    return 77;
  }
  g_rank = atoi(r);
  g_size = atoi(s);
  g_total = g_size * kLocalDevices;
  for (int k = 0; k < g_total / 2; ++k) {
    g_pairs[2 * k] = k;
    g_pairs[2 * k + 1] = g_total - 1 - k;
    g_parity[k] = 2 * k;
    g_parity[g_total / 2 + k] = 2 * k + 1;
  }
  g_rotated[0] = g_total - 1;
  for (int k = 0; k + 1 < g_total; ++k) g_rotated[k + 1] = k;
  cml_status_t st = cml_backend_new_with_config("c:distributed=mpi,devices=2,threads=1", &g_mp);
  char ref_config[64];
  snprintf(ref_config, sizeof ref_config, "c:devices=%d,threads=1", g_total);
  if (st == CML_OK) st = cml_backend_new_with_config(ref_config, &g_ref);
  const char* data_axes[1] = {"data"};
  const int64_t data_size[1] = {g_total};
  const char* model_axes[2] = {"data", "model"};
  const int64_t model_size[2] = {g_total / 2, 2};
  if (st == CML_OK) st = cml_mesh_create("dp", data_axes, data_size, 1, &g_mesh_data);
  if (st == CML_OK) st = cml_mesh_create("dm", model_axes, model_size, 2, &g_mesh_model);
  if (st != CML_OK) {
    fprintf(stderr, "rank %d: setup failed: %s\n", g_rank, cml_status_message(st));
    return 1;
  }
  if (argc > 1 && strcmp(argv[1], "kill") == 0) return kill_scenario();
  if (argc > 1 && strcmp(argv[1], "diverge") == 0) {
    int failed = 0;
    diverge_scenario(&failed);
    cml_mesh_destroy(g_mesh_data);
    cml_mesh_destroy(g_mesh_model);
    cml_backend_release(g_mp);
    cml_backend_release(g_ref);
    if (failed) fprintf(stderr, "[rank %d] FAILED diverge\n", g_rank);
    return failed;
  }
  if (argc > 2 && strcmp(argv[1], "before_dispatch") == 0) {
    int failed = 0;
    before_dispatch_scenario(&failed, argv[2]);
    cml_mesh_destroy(g_mesh_data);
    cml_mesh_destroy(g_mesh_model);
    cml_backend_release(g_mp);
    cml_backend_release(g_ref);
    if (failed) fprintf(stderr, "[rank %d] FAILED before_dispatch %s\n", g_rank, argv[2]);
    return failed;
  }
  int failed_total = 0;
  for (size_t i = 0; i < sizeof kTests / sizeof kTests[0]; ++i) {
    if (argc > 1 && strcmp(argv[1], kTests[i].name) != 0) continue;
    int failed = 0;
    kTests[i].fn(&failed);
    if (failed) fprintf(stderr, "[rank %d] FAILED %s\n", g_rank, kTests[i].name);
    failed_total += failed;
  }
  cml_mesh_destroy(g_mesh_data);
  cml_mesh_destroy(g_mesh_model);
  cml_backend_release(g_mp);
  cml_backend_release(g_ref);
  if (g_rank == 0) printf("c_distributed_test: %d processes, %d failed\n", g_size, failed_total);
  return failed_total ? 1 : 0;
}
