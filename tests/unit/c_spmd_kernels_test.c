// SPDX-License-Identifier: Apache-2.0
// tests/unit/c_spmd_kernels_test.c: the c backend's collective kernels and SPMD rendezvous,
// driven directly: one hand-made collective node, one thread per device slot calling the
// kernel (as exec.c does), hand-computed results for every collective, replica groups, several
// operands and dtypes (Float16/BFloat16 rounded once), and the failure paths (a failing slot,
// a slot that never arrives, a deadline while waiting). End-to-end programs: c_spmd_test.c.
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/c/engine_internal.h"
#include "cml/cml.h"
#include "test.h"

#define MAX_SLOTS 8
#define MAX_OPERANDS 3

// A module with one collective node over |operand_count| operands, run by |slots| slots.
typedef struct co_t {
  cml_ir_value_t values[2 * MAX_OPERANDS + 1];
  uint32_t inputs[MAX_OPERANDS];
  int32_t device_assignment[MAX_SLOTS];
  int32_t groups[MAX_SLOTS];
  int32_t pairs[2 * MAX_SLOTS];
  uint32_t collective_index[1];
  cml_module_t module;
  cml_ir_node_t node;
  cml_ir_attrs_t attrs;
  cmlc_executable_t exe;  // just what the rendezvous reads
  cml_backend_t* backend;
  cmlc_pool_t* pool;
  int slots;
  // Per slot: operands and results.
  const void* in[MAX_SLOTS][MAX_OPERANDS];
  void* out[MAX_SLOTS][MAX_OPERANDS];
  // Test hooks: a slot that fails before the op, one that skips it.
  int fail_slot, skip_slot;
  int64_t skip_sleep_ms;
  cml_execute_control_t control;
  bool use_control;
} co_t;

static cml_shape_t shape(cml_dtype_t dtype, int32_t rank, const int64_t* dims) {
  cml_shape_t s;
  memset(&s, 0, sizeof s);
  s.dtype = dtype;
  s.rank = rank;
  for (int32_t i = 0; i < rank; ++i) s.dims[i] = dims[i];
  return s;
}

// |threads|: the pool the kernels split their work over (1: no workers); |isa|: NULL, or
// options appended to the backend's config ("avx512=false").
static void co_init_isa(co_t* k, cml_op_t op, int slots, int threads, const char* isa,
                        int operand_count, const cml_shape_t* in_shapes,
                        const cml_shape_t* out_shapes) {
  memset(k, 0, sizeof *k);
  k->fail_slot = k->skip_slot = -1;
  k->slots = slots;
  for (int i = 0; i < operand_count; ++i) {
    k->values[1 + i].shape = in_shapes[i];
    k->values[1 + operand_count + i].shape = out_shapes[i];
    k->inputs[i] = (uint32_t)(1 + i);
  }
  for (int j = 0; j < slots; ++j) k->device_assignment[j] = j;
  k->module.value_count = (uint32_t)(1 + 2 * operand_count);
  k->module.values = k->values;
  k->module.node_count = 1;
  k->module.nodes = &k->node;
  k->module.num_devices = slots;
  k->module.distribution = CML_DISTRIBUTION_SPMD;
  k->module.device_assignment = k->device_assignment;
  k->node.op = op;
  k->node.input_count = (uint32_t)operand_count;
  k->node.inputs = k->inputs;
  k->node.output_count =
      (uint32_t)(op == CML_OP_REPLICA_ID || op == CML_OP_PARTITION_ID ? 1 : operand_count);
  k->node.first_output = (uint32_t)(1 + operand_count);
  k->node.attrs = &k->attrs;
  // One group of every slot by default.
  for (int j = 0; j < slots; ++j) k->groups[j] = j;
  k->attrs.collective.groups = k->groups;
  k->attrs.collective.group_count = 1;
  k->attrs.collective.group_size = slots;
  char config[96];
  snprintf(config, sizeof config, "c:devices=%d,threads=%d%s%s", slots, threads, isa ? "," : "",
           isa ? isa : "");
  if (cml_backend_new_with_config(config, &k->backend) != CML_OK) abort();
  k->pool = ((cmlc_backend_t*)k->backend)->pool;
  k->collective_index[0] = 0;
  k->exe.backend = (cmlc_backend_t*)k->backend;
  k->exe.module = &k->module;
  k->exe.collective_index = k->collective_index;
  k->exe.collective_count = 1;
}

static void co_init(co_t* k, cml_op_t op, int slots, int threads, int operand_count,
                    const cml_shape_t* in_shapes, const cml_shape_t* out_shapes) {
  co_init_isa(k, op, slots, threads, NULL, operand_count, in_shapes, out_shapes);
}

static void co_deinit(co_t* k) { cml_backend_release(k->backend); }

static void co_groups(co_t* k, const int32_t* ids, int group_count, int group_size) {
  memcpy(k->groups, ids, sizeof(int32_t) * (size_t)(group_count * group_size));
  k->attrs.collective.group_count = group_count;
  k->attrs.collective.group_size = group_size;
}

typedef struct co_slot_t {
  co_t* k;
  cmlc_rendezvous_t* rendezvous;
  int index;
  pthread_t thread;
} co_slot_t;

static void* co_slot_main(void* arg) {
  co_slot_t* s = (co_slot_t*)arg;
  co_t* k = s->k;
  const int j = s->index;
  if (j == k->fail_slot) {
    cmlc_rendezvous_fail(s->rendezvous, j,
                         cml_status_make(CML_STATUS_INVALID_ARGUMENT, "Sqrt: injected failure"));
    return NULL;
  }
  if (j == k->skip_slot) {
    if (k->skip_sleep_ms) {
      struct timespec ts = {k->skip_sleep_ms / 1000, (k->skip_sleep_ms % 1000) * 1000000};
      nanosleep(&ts, NULL);
    }
    cmlc_rendezvous_slot_done(s->rendezvous, j);
    return NULL;
  }
  cmlc_kernel_entry_t e;
  cmlc_options_t options = ((cmlc_backend_t*)k->backend)->options;
  cml_status_t st = CML_OK;
  if (!cmlc_dispatch_lookup(&k->module, &k->node, &options, &e)) {
    st = cml_status_make(CML_STATUS_UNIMPLEMENTED, "no kernel");
  }
  const cml_shape_t* shapes[2 * MAX_OPERANDS];
  for (uint32_t i = 0; i < k->node.input_count; ++i) shapes[i] = &k->values[1 + i].shape;
  for (uint32_t o = 0; o < k->node.output_count; ++o) {
    shapes[k->node.input_count + o] = &k->values[k->node.first_output + o].shape;
  }
  size_t scratch_size = st == CML_OK && e.scratch ? e.scratch(&k->module, &k->node, &options) : 0;
  void* scratch = scratch_size ? aligned_alloc(64, (scratch_size + 63) / 64 * 64) : NULL;
  if (st == CML_OK) {
    cmlc_kernel_args_t a;
    memset(&a, 0, sizeof a);
    a.module = &k->module;
    a.node = &k->node;
    a.options = &options;
    a.input_count = k->node.input_count;
    a.input_shapes = shapes;
    a.inputs = k->in[j];
    a.output_count = k->node.output_count;
    a.output_shapes = shapes + k->node.input_count;
    a.outputs = k->out[j];
    a.scratch = scratch;
    a.scratch_size = scratch_size;
    a.pool = k->pool;
    a.rendezvous = s->rendezvous;
    a.replica = j;
    a.replica_count = k->slots;
    memcpy(a.impl, e.impl, sizeof a.impl);  // as the engine does
    st = e.run(&a);
  }
  free(scratch);
  if (st != CML_OK) {
    cmlc_rendezvous_fail(s->rendezvous, j, st);
  } else {
    cmlc_rendezvous_slot_done(s->rendezvous, j);
  }
  return NULL;
}

// Runs the node on every slot at once; returns the execution's status.
static cml_status_t co_run(co_t* k) {
  cmlc_rendezvous_t* r = NULL;
  cml_status_t st = cmlc_rendezvous_create(&k->exe, k->use_control ? &k->control : NULL, &r);
  if (st != CML_OK) return st;
  co_slot_t slots[MAX_SLOTS];
  for (int j = 0; j < k->slots; ++j) {
    slots[j] = (co_slot_t){k, r, j, 0};
    if (pthread_create(&slots[j].thread, NULL, co_slot_main, &slots[j]) != 0) abort();
  }
  for (int j = 0; j < k->slots; ++j) pthread_join(slots[j].thread, NULL);
  st = cmlc_rendezvous_take_failure(r);
  cmlc_rendezvous_destroy(r);
  return st;
}

//===--- AllReduce ---===//

TEST(all_reduce_sum_two_operands_four_slots) {
  const int64_t d3[] = {3}, d2[] = {2};
  cml_shape_t ins[2] = {shape(CML_DTYPE_F32, 1, d3), shape(CML_DTYPE_I32, 1, d2)};
  co_t k;
  co_init(&k, CML_OP_ALL_REDUCE, 4, 2, 2, ins, ins);
  k.attrs.reduce_type = CML_REDUCE_SUM;
  float a[4][3], ra[4][3];
  int32_t b[4][2], rb[4][2];
  for (int j = 0; j < 4; ++j) {
    for (int i = 0; i < 3; ++i) a[j][i] = (float)(10 * j + i) + 0.5f;
    b[j][0] = j + 1;
    b[j][1] = -(j + 1) * 100;
    k.in[j][0] = a[j];
    k.in[j][1] = b[j];
    k.out[j][0] = ra[j];
    k.out[j][1] = rb[j];
  }
  ASSERT_STATUS_OK(co_run(&k));
  for (int j = 0; j < 4; ++j) {
    // sum over j of 10j + i + 0.5 = 60 + 4i + 2
    ASSERT_EQ_DBL(ra[j][0], 62.0);
    ASSERT_EQ_DBL(ra[j][1], 66.0);
    ASSERT_EQ_DBL(ra[j][2], 70.0);
    ASSERT_EQ_INT(rb[j][0], 10);
    ASSERT_EQ_INT(rb[j][1], -1000);
  }
  co_deinit(&k);
}

TEST(all_reduce_groups_max_min_product) {
  const int64_t d2[] = {2};
  cml_shape_t in = shape(CML_DTYPE_I32, 1, d2);
  const cml_reduce_type_t types[] = {CML_REDUCE_MAX, CML_REDUCE_MIN, CML_REDUCE_PRODUCT};
  // Groups {0, 2} and {3, 1}: slot j holds {j + 1, -(j + 1)}.
  const int32_t groups[] = {0, 2, 3, 1};
  const int32_t want[3][4][2] = {
      {{3, -1}, {4, -2}, {3, -1}, {4, -2}},  // max
      {{1, -3}, {2, -4}, {1, -3}, {2, -4}},  // min
      {{3, 3}, {8, 8}, {3, 3}, {8, 8}},      // product
  };
  for (int t = 0; t < 3; ++t) {
    co_t k;
    co_init(&k, CML_OP_ALL_REDUCE, 4, 1, 1, &in, &in);
    co_groups(&k, groups, 2, 2);
    k.attrs.reduce_type = types[t];
    int32_t x[4][2], r[4][2];
    for (int j = 0; j < 4; ++j) {
      x[j][0] = j + 1;
      x[j][1] = -(j + 1);
      k.in[j][0] = x[j];
      k.out[j][0] = r[j];
    }
    ASSERT_STATUS_OK(co_run(&k));
    for (int j = 0; j < 4; ++j) {
      ASSERT_EQ_INT(r[j][0], want[t][j][0]);
      ASSERT_EQ_INT(r[j][1], want[t][j][1]);
    }
    co_deinit(&k);
  }
}

// Integers wrap; Float16 and BFloat16 are summed in f32 and rounded once; NaN wins max.
TEST(all_reduce_dtypes) {
  const int64_t d1[] = {1};
  {  // Int8 sum wraps: 100 + 100 + 100 = 300 -> 44.
    cml_shape_t s = shape(CML_DTYPE_I8, 1, d1);
    co_t k;
    co_init(&k, CML_OP_ALL_REDUCE, 3, 2, 1, &s, &s);
    k.attrs.reduce_type = CML_REDUCE_SUM;
    int8_t x[3] = {100, 100, 100}, r[3];
    for (int j = 0; j < 3; ++j) k.in[j][0] = &x[j], k.out[j][0] = &r[j];
    ASSERT_STATUS_OK(co_run(&k));
    for (int j = 0; j < 3; ++j) ASSERT_EQ_INT(r[j], 44);
    co_deinit(&k);
  }
  {  // Uint16 product wraps: 300 * 300 * 2 = 180000 -> 180000 - 2 * 65536 = 48928.
    cml_shape_t s = shape(CML_DTYPE_U16, 1, d1);
    co_t k;
    co_init(&k, CML_OP_ALL_REDUCE, 3, 2, 1, &s, &s);
    k.attrs.reduce_type = CML_REDUCE_PRODUCT;
    uint16_t x[3] = {300, 300, 2}, r[3];
    for (int j = 0; j < 3; ++j) k.in[j][0] = &x[j], k.out[j][0] = &r[j];
    ASSERT_STATUS_OK(co_run(&k));
    for (int j = 0; j < 3; ++j) ASSERT_EQ_INT(r[j], 48928);
    co_deinit(&k);
  }
  {  // Float16: 2048 + 1 + 1 = 2050 (f16 step by step would give 2048).
    cml_shape_t s = shape(CML_DTYPE_F16, 1, d1);
    co_t k;
    co_init(&k, CML_OP_ALL_REDUCE, 3, 2, 1, &s, &s);
    k.attrs.reduce_type = CML_REDUCE_SUM;
    uint16_t x[3] = {cml_f32_to_f16(2048.f), cml_f32_to_f16(1.f), cml_f32_to_f16(1.f)}, r[3];
    for (int j = 0; j < 3; ++j) k.in[j][0] = &x[j], k.out[j][0] = &r[j];
    ASSERT_STATUS_OK(co_run(&k));
    for (int j = 0; j < 3; ++j) ASSERT_EQ_DBL(cml_f16_to_f32(r[j]), 2050.0);
    co_deinit(&k);
  }
  {  // BFloat16: 256 + 1 + 1 = 258 (bf16 step by step: 256).
    cml_shape_t s = shape(CML_DTYPE_BF16, 1, d1);
    co_t k;
    co_init(&k, CML_OP_ALL_REDUCE, 3, 2, 1, &s, &s);
    k.attrs.reduce_type = CML_REDUCE_SUM;
    uint16_t x[3] = {cml_f32_to_bf16(256.f), cml_f32_to_bf16(1.f), cml_f32_to_bf16(1.f)}, r[3];
    for (int j = 0; j < 3; ++j) k.in[j][0] = &x[j], k.out[j][0] = &r[j];
    ASSERT_STATUS_OK(co_run(&k));
    for (int j = 0; j < 3; ++j) ASSERT_EQ_DBL(cml_bf16_to_f32(r[j]), 258.0);
    co_deinit(&k);
  }
  {  // Float64 max with a NaN: NaN.
    cml_shape_t s = shape(CML_DTYPE_F64, 1, d1);
    co_t k;
    co_init(&k, CML_OP_ALL_REDUCE, 2, 2, 1, &s, &s);
    k.attrs.reduce_type = CML_REDUCE_MAX;
    double x[2] = {1.0, NAN}, r[2];
    for (int j = 0; j < 2; ++j) k.in[j][0] = &x[j], k.out[j][0] = &r[j];
    ASSERT_STATUS_OK(co_run(&k));
    ASSERT_TRUE(isnan(r[0]) && isnan(r[1]));
    co_deinit(&k);
  }
  {  // Complex64 product: (1 + 2i)(3 + 4i) = -5 + 10i; Complex128 sum.
    cml_shape_t s = shape(CML_DTYPE_C64, 1, d1);
    co_t k;
    co_init(&k, CML_OP_ALL_REDUCE, 2, 2, 1, &s, &s);
    k.attrs.reduce_type = CML_REDUCE_PRODUCT;
    float x[2][2] = {{1, 2}, {3, 4}}, r[2][2];
    for (int j = 0; j < 2; ++j) k.in[j][0] = x[j], k.out[j][0] = r[j];
    ASSERT_STATUS_OK(co_run(&k));
    for (int j = 0; j < 2; ++j) {
      ASSERT_EQ_DBL(r[j][0], -5.0);
      ASSERT_EQ_DBL(r[j][1], 10.0);
    }
    co_deinit(&k);
    cml_shape_t s2 = shape(CML_DTYPE_C128, 1, d1);
    co_init(&k, CML_OP_ALL_REDUCE, 2, 2, 1, &s2, &s2);
    k.attrs.reduce_type = CML_REDUCE_SUM;
    double y[2][2] = {{1, 2}, {3, 4}}, q[2][2];
    for (int j = 0; j < 2; ++j) k.in[j][0] = y[j], k.out[j][0] = q[j];
    ASSERT_STATUS_OK(co_run(&k));
    for (int j = 0; j < 2; ++j) {
      ASSERT_EQ_DBL(q[j][0], 4.0);
      ASSERT_EQ_DBL(q[j][1], 6.0);
    }
    co_deinit(&k);
    // Complex max has no kernel (as in XLA).
    co_init(&k, CML_OP_ALL_REDUCE, 2, 2, 1, &s, &s);
    k.attrs.reduce_type = CML_REDUCE_MAX;
    cmlc_kernel_entry_t e;
    cmlc_options_t options = ((cmlc_backend_t*)k.backend)->options;
    ASSERT_FALSE(cmlc_dispatch_lookup(&k.module, &k.node, &options, &e));
    co_deinit(&k);
  }
}

// A large operand: every member reduces its chunk with the pool; 4 slots share 2 threads, and
// 4 slots run with a pool of 1 thread.
TEST(all_reduce_large_chunks_devices_over_threads) {
  const int64_t n = 300001;  // not a multiple of the slot count
  const int64_t dims[] = {n};
  cml_shape_t s = shape(CML_DTYPE_F32, 1, dims);
  for (int threads = 1; threads <= 2; ++threads) {
    co_t k;
    co_init(&k, CML_OP_ALL_REDUCE, 4, threads, 1, &s, &s);
    k.attrs.reduce_type = CML_REDUCE_SUM;
    float* x[4];
    float* r[4];
    for (int j = 0; j < 4; ++j) {
      x[j] = malloc(sizeof(float) * (size_t)n);
      r[j] = malloc(sizeof(float) * (size_t)n);
      for (int64_t i = 0; i < n; ++i) x[j][i] = (float)(i % 1000) * (float)(j + 1);
      k.in[j][0] = x[j];
      k.out[j][0] = r[j];
    }
    ASSERT_STATUS_OK(co_run(&k));
    int bad = 0;
    for (int j = 0; j < 4; ++j) {
      for (int64_t i = 0; i < n; ++i) bad += r[j][i] != (float)(i % 1000) * 10.f;
    }
    for (int j = 0; j < 4; ++j) free(x[j]), free(r[j]);
    co_deinit(&k);
    ASSERT_EQ_INT(bad, 0);
  }
}

// In place (the planner lets each result take its dying operand's storage: in_place_each):
// every member's outputs are its inputs, below and above the streaming threshold (4 x 8 MiB
// written per operand), with element counts that are not multiples of the members; two
// operands of different dtypes. Each block of every source is read before any output is
// written, so every element is the full sum.
TEST(all_reduce_in_place) {
  const int64_t d1[] = {1};
  cml_shape_t one = shape(CML_DTYPE_F32, 1, d1);
  co_t probe;
  co_init(&probe, CML_OP_ALL_REDUCE, 2, 1, 1, &one, &one);
  probe.attrs.reduce_type = CML_REDUCE_SUM;
  cmlc_kernel_entry_t e;
  cmlc_options_t options = ((cmlc_backend_t*)probe.backend)->options;
  ASSERT_TRUE(cmlc_dispatch_lookup(&probe.module, &probe.node, &options, &e));
  ASSERT_TRUE(e.in_place_each);
  co_deinit(&probe);
  const int64_t sizes[2] = {300001, 2097157};
  for (int v = 0; v < 2; ++v) {
    const int64_t n = sizes[v], m = n / 3 + 1;
    const int64_t dn[] = {n}, dm[] = {m};
    cml_shape_t ins[2] = {shape(CML_DTYPE_F32, 1, dn), shape(CML_DTYPE_I32, 1, dm)};
    co_t k;
    co_init(&k, CML_OP_ALL_REDUCE, 4, 2, 2, ins, ins);
    k.attrs.reduce_type = CML_REDUCE_SUM;
    float* x[4];
    int32_t* y[4];
    for (int j = 0; j < 4; ++j) {
      x[j] = malloc(sizeof(float) * (size_t)n);
      y[j] = malloc(sizeof(int32_t) * (size_t)m);
      ASSERT_TRUE(x[j] && y[j]);
      for (int64_t i = 0; i < n; ++i) x[j][i] = (float)(i % 1000) * (float)(j + 1);
      for (int64_t i = 0; i < m; ++i) y[j][i] = (int32_t)(i % 77) - 1000 * j;
      k.in[j][0] = x[j];
      k.in[j][1] = y[j];
      k.out[j][0] = x[j];
      k.out[j][1] = y[j];
    }
    ASSERT_STATUS_OK(co_run(&k));
    int64_t bad = 0;
    for (int j = 0; j < 4; ++j) {
      for (int64_t i = 0; i < n; ++i) bad += x[j][i] != (float)(i % 1000) * 10.f;
      for (int64_t i = 0; i < m; ++i) bad += y[j][i] != 4 * (int32_t)(i % 77) - 6000;
    }
    for (int j = 0; j < 4; ++j) free(x[j]), free(y[j]);
    co_deinit(&k);
    ASSERT_EQ_INT(bad, 0);
  }
}

// The scalar fold of the reducer, in member order, for the SIMD folds' expected values: XLA's
// Max/Min (NaN propagates, -0 < +0), wrapping integers. f32 and f64:
#define FOLD_FLOAT(name, T)                                \
  static T name(cml_reduce_type_t t, T a, T b) {           \
    switch (t) {                                           \
      case CML_REDUCE_SUM:                                 \
        return a + b;                                      \
      case CML_REDUCE_PRODUCT:                             \
        return a * b;                                      \
      case CML_REDUCE_MAX:                                 \
        if (isnan(a) || isnan(b)) return isnan(a) ? a : b; \
        if (a == b) return signbit(a) ? b : a;             \
        return a > b ? a : b;                              \
      default:                                             \
        if (isnan(a) || isnan(b)) return isnan(a) ? a : b; \
        if (a == b) return signbit(a) ? a : b;             \
        return a < b ? a : b;                              \
    }                                                      \
  }
FOLD_FLOAT(fold_f32, float)
FOLD_FLOAT(fold_f64, double)
#undef FOLD_FLOAT

// The same for 32- or 64-bit integers (|bits|), wrapping; values zero-extended to 64 bits.
static uint64_t fold_int(cml_reduce_type_t t, int bits, bool is_signed, uint64_t a, uint64_t b) {
  const uint64_t mask = bits == 64 ? ~(uint64_t)0 : 0xffffffffu;
  const int64_t sa = bits == 64 ? (int64_t)a : (int64_t)(int32_t)(uint32_t)a;
  const int64_t sb = bits == 64 ? (int64_t)b : (int64_t)(int32_t)(uint32_t)b;
  switch (t) {
    case CML_REDUCE_SUM:
      return (a + b) & mask;
    case CML_REDUCE_PRODUCT:
      return (a * b) & mask;
    case CML_REDUCE_MAX:
      return is_signed ? (sa > sb ? a : b) : (a > b ? a : b);
    default:
      return is_signed ? (sa < sb ? a : b) : (a < b ? a : b);
  }
}

// A half float's value (|dtype| F16 or BF16) and back, rounded to nearest even.
static float half_to_f32(cml_dtype_t dtype, uint16_t h) {
  return dtype == CML_DTYPE_F16 ? cml_f16_to_f32(h) : cml_bf16_to_f32(h);
}
static uint16_t f32_to_half(cml_dtype_t dtype, float f) {
  return dtype == CML_DTYPE_F16 ? cml_f32_to_f16(f) : cml_f32_to_bf16(f);
}

// AllReduce and ReduceScatter through the SIMD folds (f32, f64, f16, bf16, i32/u32/i64/u64) on
// every ISA, 3 members (two folds per element), cached and streamed sizes, separate outputs and
// in place: every element equals the member-order scalar fold, bit for bit (half floats folded
// in f32 and rounded once). The float values span 2^-12 .. 2^12 so that another summation
// order would round differently; Max/Min see NaNs and signed zeros; the integers wrap.
TEST(all_reduce_simd_folds_match_the_member_order) {
  const char* isas[] = {NULL, "avx512=false", "avx512=false,avx2=false"};
  const cml_dtype_t dtypes[] = {CML_DTYPE_F32, CML_DTYPE_I32, CML_DTYPE_U32,  CML_DTYPE_I64,
                                CML_DTYPE_U64, CML_DTYPE_F16, CML_DTYPE_BF16, CML_DTYPE_F64};
  const cml_reduce_type_t types[] = {CML_REDUCE_SUM, CML_REDUCE_PRODUCT, CML_REDUCE_MAX,
                                     CML_REDUCE_MIN};
  enum { M = 3 };
  uint64_t seed = 12345;
  for (int isa = 0; isa < 3; ++isa) {
    for (int d = 0; d < 8; ++d) {
      const bool half = dtypes[d] == CML_DTYPE_F16 || dtypes[d] == CML_DTYPE_BF16;
      const bool f64 = dtypes[d] == CML_DTYPE_F64;
      for (int t = 0; t < 4; ++t) {
        // Streamed (3 x 3 x 4 MiB and more written) only for f32 and bf16 sums, to keep the
        // test short.
        const bool big = (dtypes[d] == CML_DTYPE_F32 || dtypes[d] == CML_DTYPE_BF16) &&
                         types[t] == CML_REDUCE_SUM;
        for (int v = 0; v < (big ? 3 : 2); ++v) {
          const int64_t n = v == 0 ? 1003 : v == 1 ? 70001 : 3145733;
          const bool in_place = v == 1;
          const size_t es = (size_t)cml_dtype_bits(dtypes[d]) / 8;
          const int64_t dn[] = {n};
          cml_shape_t sh = shape(dtypes[d], 1, dn);
          co_t k;
          co_init_isa(&k, CML_OP_ALL_REDUCE, M, 2, isas[isa], 1, &sh, &sh);
          k.attrs.reduce_type = types[t];
          uint8_t* x[M];
          uint8_t* r[M];
          for (int j = 0; j < M; ++j) {
            x[j] = malloc(es * (size_t)n);
            r[j] = in_place ? x[j] : malloc(es * (size_t)n);
            ASSERT_TRUE(x[j] && r[j]);
            for (int64_t i = 0; i < n; ++i) {
              seed = seed * 6364136223846793005ull + 1442695040888963407ull;
              const uint64_t bits = seed >> 11;
              if (dtypes[d] == CML_DTYPE_F32 || half || f64) {
                float f = ((float)(bits & 0xffff) / 65536.f - 0.5f) *
                          ldexpf(1.f, (int)((bits >> 16) % 25) - 12);
                const int special = (int)((bits >> 40) % 64);
                if (special == 0) f = NAN;
                if (special == 1) f = 0.f;
                if (special == 2) f = -0.f;
                if (half) {
                  ((uint16_t*)x[j])[i] = f32_to_half(dtypes[d], f);
                } else if (f64) {
                  ((double*)x[j])[i] = (double)f * (1.0 + (double)(bits >> 45) * 0x1p-20);
                } else {
                  ((float*)x[j])[i] = f;
                }
              } else if (es == 4) {
                ((uint32_t*)x[j])[i] = (uint32_t)(bits * 2654435761u);
              } else {
                ((uint64_t*)x[j])[i] = bits * 0x9e3779b97f4a7c15ull;
              }
            }
            k.in[j][0] = x[j];
            k.out[j][0] = r[j];
          }
          // Expected values first (in place overwrites the operands).
          uint8_t* want = malloc(es * (size_t)n);
          ASSERT_TRUE(want != NULL);
          const bool sgn = dtypes[d] == CML_DTYPE_I32 || dtypes[d] == CML_DTYPE_I64;
          for (int64_t i = 0; i < n; ++i) {
            if (dtypes[d] == CML_DTYPE_F32) {
              float a = ((float*)x[0])[i];
              for (int j = 1; j < M; ++j) a = fold_f32(types[t], a, ((float*)x[j])[i]);
              ((float*)want)[i] = a;
            } else if (f64) {
              double a = ((double*)x[0])[i];
              for (int j = 1; j < M; ++j) a = fold_f64(types[t], a, ((double*)x[j])[i]);
              ((double*)want)[i] = a;
            } else if (half) {
              float a = half_to_f32(dtypes[d], ((uint16_t*)x[0])[i]);
              for (int j = 1; j < M; ++j) {
                a = fold_f32(types[t], a, half_to_f32(dtypes[d], ((uint16_t*)x[j])[i]));
              }
              ((uint16_t*)want)[i] = f32_to_half(dtypes[d], a);
            } else if (es == 4) {
              uint32_t a = ((uint32_t*)x[0])[i];
              for (int j = 1; j < M; ++j) {
                a = (uint32_t)fold_int(types[t], 32, sgn, a, ((uint32_t*)x[j])[i]);
              }
              ((uint32_t*)want)[i] = a;
            } else {
              uint64_t a = ((uint64_t*)x[0])[i];
              for (int j = 1; j < M; ++j) a = fold_int(types[t], 64, sgn, a, ((uint64_t*)x[j])[i]);
              ((uint64_t*)want)[i] = a;
            }
          }
          ASSERT_STATUS_OK(co_run(&k));
          int64_t bad = 0;
          for (int j = 0; j < M; ++j) {
            for (int64_t i = 0; i < n; ++i) {
              // Any NaN matches a NaN (payloads are not specified).
              if (dtypes[d] == CML_DTYPE_F32 && isnan(((float*)want)[i])) {
                bad += !isnan(((float*)r[j])[i]);
              } else if (f64 && isnan(((double*)want)[i])) {
                bad += !isnan(((double*)r[j])[i]);
              } else if (half && isnan(half_to_f32(dtypes[d], ((uint16_t*)want)[i]))) {
                bad += !isnan(half_to_f32(dtypes[d], ((uint16_t*)r[j])[i]));
              } else {
                bad += memcmp(r[j] + (size_t)i * es, want + (size_t)i * es, es) != 0;
              }
            }
          }
          if (bad) {
            fprintf(stderr, "isa %s dtype %s type %d n %lld in_place %d: %lld wrong\n",
                    isas[isa] ? isas[isa] : "default", cml_dtype_name(dtypes[d]), (int)types[t],
                    (long long)n, (int)in_place, (long long)bad);
          }
          for (int j = 0; j < M; ++j) {
            if (!in_place) free(r[j]);
            free(x[j]);
          }
          free(want);
          co_deinit(&k);
          ASSERT_EQ_INT(bad, 0);
        }
      }
    }
  }
  // ReduceScatter of f32 sums over 3 members: member p gets part p of the axis.
  for (int isa = 0; isa < 3; ++isa) {
    const int64_t rows = 3 * 41, cols = 37;
    const int64_t di[] = {rows, cols}, dout[] = {rows / M, cols};
    cml_shape_t in = shape(CML_DTYPE_F32, 2, di), out = shape(CML_DTYPE_F32, 2, dout);
    co_t k;
    co_init_isa(&k, CML_OP_REDUCE_SCATTER, M, 2, isas[isa], 1, &in, &out);
    k.attrs.reduce_type = CML_REDUCE_SUM;
    k.attrs.axis = 0;
    float* x[M];
    float* r[M];
    for (int j = 0; j < M; ++j) {
      x[j] = malloc(sizeof(float) * (size_t)(rows * cols));
      r[j] = malloc(sizeof(float) * (size_t)(rows / M * cols));
      ASSERT_TRUE(x[j] && r[j]);
      for (int64_t i = 0; i < rows * cols; ++i) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        x[j][i] = ((float)((seed >> 20) & 0xffff) / 65536.f - 0.5f) *
                  ldexpf(1.f, (int)((seed >> 40) % 25) - 12);
      }
      k.in[j][0] = x[j];
      k.out[j][0] = r[j];
    }
    ASSERT_STATUS_OK(co_run(&k));
    int64_t bad = 0;
    for (int p = 0; p < M; ++p) {
      for (int64_t i = 0; i < rows / M * cols; ++i) {
        const int64_t at = p * (rows / M) * cols + i;
        const float want = (x[0][at] + x[1][at]) + x[2][at];
        bad += memcmp(&r[p][i], &want, sizeof want) != 0;
      }
    }
    for (int j = 0; j < M; ++j) free(x[j]), free(r[j]);
    co_deinit(&k);
    ASSERT_EQ_INT(bad, 0);
  }
}

//===--- AllGather, ReduceScatter, AllToAll ---===//

TEST(all_gather_axis1) {
  const int64_t di[] = {2, 2}, dout[] = {2, 4};
  cml_shape_t in = shape(CML_DTYPE_I16, 2, di), out = shape(CML_DTYPE_I16, 2, dout);
  co_t k;
  co_init(&k, CML_OP_ALL_GATHER, 2, 2, 1, &in, &out);
  k.attrs.axis = 1;
  int16_t x[2][4] = {{0, 1, 2, 3}, {100, 101, 102, 103}}, r[2][8];
  for (int j = 0; j < 2; ++j) k.in[j][0] = x[j], k.out[j][0] = r[j];
  ASSERT_STATUS_OK(co_run(&k));
  const int16_t want[8] = {0, 1, 100, 101, 2, 3, 102, 103};
  for (int j = 0; j < 2; ++j) {
    for (int i = 0; i < 8; ++i) ASSERT_EQ_INT(r[j][i], want[i]);
  }
  co_deinit(&k);
}

// The reference's values (distributed.md §2.2): dev0 [0 1 2 3], dev1 [100 .. 103].
TEST(reduce_scatter_and_all_to_all_reference_values) {
  const int64_t d4[] = {4}, d2[] = {2};
  cml_shape_t in = shape(CML_DTYPE_F32, 1, d4), half = shape(CML_DTYPE_F32, 1, d2);
  float x[2][4] = {{0, 1, 2, 3}, {100, 101, 102, 103}}, r[2][4];
  co_t k;
  co_init(&k, CML_OP_REDUCE_SCATTER, 2, 2, 1, &in, &half);
  k.attrs.reduce_type = CML_REDUCE_SUM;
  k.attrs.axis = 0;
  for (int j = 0; j < 2; ++j) k.in[j][0] = x[j], k.out[j][0] = r[j];
  ASSERT_STATUS_OK(co_run(&k));
  ASSERT_EQ_DBL(r[0][0], 100);
  ASSERT_EQ_DBL(r[0][1], 102);
  ASSERT_EQ_DBL(r[1][0], 104);
  ASSERT_EQ_DBL(r[1][1], 106);
  co_deinit(&k);

  co_init(&k, CML_OP_ALL_TO_ALL, 2, 2, 1, &in, &in);
  k.attrs.collective.split_axis = 0;
  k.attrs.collective.concat_axis = 0;
  for (int j = 0; j < 2; ++j) k.in[j][0] = x[j], k.out[j][0] = r[j];
  ASSERT_STATUS_OK(co_run(&k));
  const float want[2][4] = {{0, 1, 100, 101}, {2, 3, 102, 103}};
  for (int j = 0; j < 2; ++j) {
    for (int i = 0; i < 4; ++i) ASSERT_EQ_DBL(r[j][i], want[j][i]);
  }
  co_deinit(&k);
}

// ReduceScatter along axis 1 of a 2x4 (max), AllToAll splitting axis 1 and concatenating axis 0.
TEST(reduce_scatter_and_all_to_all_inner_axes) {
  const int64_t d24[] = {2, 4}, d22[] = {2, 2}, d42[] = {4, 2};
  cml_shape_t in = shape(CML_DTYPE_I64, 2, d24);
  cml_shape_t rs = shape(CML_DTYPE_I64, 2, d22), a2a = shape(CML_DTYPE_I64, 2, d42);
  // slot 0: [[0 1 2 3] [4 5 6 7]]; slot 1: [[7 6 5 4] [3 2 1 0]]
  int64_t x[2][8] = {{0, 1, 2, 3, 4, 5, 6, 7}, {7, 6, 5, 4, 3, 2, 1, 0}}, r[2][8];
  co_t k;
  co_init(&k, CML_OP_REDUCE_SCATTER, 2, 2, 1, &in, &rs);
  k.attrs.reduce_type = CML_REDUCE_MAX;
  k.attrs.axis = 1;
  for (int j = 0; j < 2; ++j) k.in[j][0] = x[j], k.out[j][0] = r[j];
  ASSERT_STATUS_OK(co_run(&k));
  // max: [[7 6 5 4] [4 5 6 7]]; slot 0 keeps columns 0-1, slot 1 columns 2-3.
  const int64_t want_rs[2][4] = {{7, 6, 4, 5}, {5, 4, 6, 7}};
  for (int j = 0; j < 2; ++j) {
    for (int i = 0; i < 4; ++i) ASSERT_EQ_INT(r[j][i], want_rs[j][i]);
  }
  co_deinit(&k);

  co_init(&k, CML_OP_ALL_TO_ALL, 2, 2, 1, &in, &a2a);
  k.attrs.collective.split_axis = 1;
  k.attrs.collective.concat_axis = 0;
  for (int j = 0; j < 2; ++j) k.in[j][0] = x[j], k.out[j][0] = r[j];
  ASSERT_STATUS_OK(co_run(&k));
  // Slot 0 receives columns 0-1 of each sender, stacked: [[0 1] [4 5] [7 6] [3 2]].
  const int64_t want_a2a[2][8] = {{0, 1, 4, 5, 7, 6, 3, 2}, {2, 3, 6, 7, 5, 4, 1, 0}};
  for (int j = 0; j < 2; ++j) {
    for (int i = 0; i < 8; ++i) ASSERT_EQ_INT(r[j][i], want_a2a[j][i]);
  }
  co_deinit(&k);
}

//===--- CollectivePermute, CollectiveBroadcast, ids ---===//

TEST(collective_permute_zeros_for_non_targets) {
  const int64_t d2[] = {2};
  cml_shape_t s = shape(CML_DTYPE_U8, 1, d2);
  co_t k;
  co_init(&k, CML_OP_COLLECTIVE_PERMUTE, 3, 2, 1, &s, &s);
  k.attrs.collective.groups = NULL;
  k.attrs.collective.group_count = k.attrs.collective.group_size = 0;
  const int32_t pairs[] = {0, 1, 1, 2};
  memcpy(k.pairs, pairs, sizeof pairs);
  k.attrs.collective.pairs = k.pairs;
  k.attrs.collective.pair_count = 2;
  uint8_t x[3][2] = {{1, 2}, {3, 4}, {5, 6}}, r[3][2];
  memset(r, 0xee, sizeof r);
  for (int j = 0; j < 3; ++j) k.in[j][0] = x[j], k.out[j][0] = r[j];
  ASSERT_STATUS_OK(co_run(&k));
  ASSERT_EQ_INT(r[0][0], 0);
  ASSERT_EQ_INT(r[0][1], 0);
  ASSERT_EQ_INT(r[1][0], 1);
  ASSERT_EQ_INT(r[1][1], 2);
  ASSERT_EQ_INT(r[2][0], 3);
  ASSERT_EQ_INT(r[2][1], 4);
  co_deinit(&k);
}

TEST(collective_broadcast_from_first_member) {
  const int64_t d1[] = {1};
  cml_shape_t s = shape(CML_DTYPE_BOOL, 1, d1);
  co_t k;
  co_init(&k, CML_OP_COLLECTIVE_BROADCAST, 4, 2, 1, &s, &s);
  const int32_t groups[] = {1, 0, 3, 2};
  co_groups(&k, groups, 2, 2);
  uint8_t x[4] = {0, 1, 0, 0}, r[4];
  x[3] = 0;
  for (int j = 0; j < 4; ++j) k.in[j][0] = &x[j], k.out[j][0] = &r[j];
  ASSERT_STATUS_OK(co_run(&k));
  ASSERT_EQ_INT(r[0], 1);
  ASSERT_EQ_INT(r[1], 1);
  ASSERT_EQ_INT(r[2], 0);
  ASSERT_EQ_INT(r[3], 0);
  co_deinit(&k);
}

TEST(replica_and_partition_ids) {
  cml_shape_t s = shape(CML_DTYPE_U32, 0, NULL);
  for (int p = 0; p < 2; ++p) {
    co_t k;
    co_init(&k, p ? CML_OP_PARTITION_ID : CML_OP_REPLICA_ID, 3, 1, 0, NULL, NULL);
    k.node.output_count = 1;
    k.node.first_output = 1;
    k.values[1].shape = s;
    k.module.value_count = 2;
    uint32_t r[3] = {99, 99, 99};
    for (int j = 0; j < 3; ++j) k.out[j][0] = &r[j];
    ASSERT_STATUS_OK(co_run(&k));
    for (int j = 0; j < 3; ++j) ASSERT_EQ_INT(r[j], p ? 0 : j);
    co_deinit(&k);
  }
}

//===--- failures: nobody waits forever ---===//

static cml_status_t run_sum_with(co_t* k, int slots) {
  const int64_t d1[] = {1};
  cml_shape_t s = shape(CML_DTYPE_F32, 1, d1);
  static float x[MAX_SLOTS], r[MAX_SLOTS];
  co_init(k, CML_OP_ALL_REDUCE, slots, 1, 1, &s, &s);
  k->attrs.reduce_type = CML_REDUCE_SUM;
  for (int j = 0; j < slots; ++j) k->in[j][0] = &x[j], k->out[j][0] = &r[j];
  return CML_OK;
}

TEST(a_failing_slot_wakes_the_waiting_ones) {
  co_t k;
  ASSERT_STATUS_OK(run_sum_with(&k, 4));
  k.fail_slot = 2;
  cml_status_t st = co_run(&k);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "device slot 2 (device 2) of 4");
  ASSERT_CONTAINS(cml_status_message(st), "Sqrt: injected failure");
  cml_status_free(st);
  co_deinit(&k);
}

TEST(a_slot_that_finished_without_arriving_fails_the_round) {
  co_t k;
  ASSERT_STATUS_OK(run_sum_with(&k, 4));
  k.skip_slot = 3;
  k.skip_sleep_ms = 150;  // the others are waiting by then (with room for a loaded machine)
  cml_status_t st = co_run(&k);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_FAILED_PRECONDITION);
  ASSERT_CONTAINS(cml_status_message(st), "AllReduce (run 1) of replica group {0, 1, 2, 3}");
  ASSERT_CONTAINS(cml_status_message(st), "device slot 3 finished its program");
  cml_status_free(st);
  co_deinit(&k);
  // The same when the slot finishes before anyone arrives.
  ASSERT_STATUS_OK(run_sum_with(&k, 2));
  k.skip_slot = 0;
  st = co_run(&k);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_FAILED_PRECONDITION);
  ASSERT_CONTAINS(cml_status_message(st), "device slot 0 finished its program");
  cml_status_free(st);
  co_deinit(&k);
}

TEST(a_deadline_stops_a_wait) {
  co_t k;
  ASSERT_STATUS_OK(run_sum_with(&k, 3));
  k.skip_slot = 1;
  k.skip_sleep_ms = 1000;  // arrives never; finishes only after the deadline
  k.use_control = true;
  k.control.struct_size = sizeof k.control;
  // Late enough that the other slots reach the AllReduce first, even on a loaded machine.
  k.control.deadline_ns = cml_clock_monotonic_ns() + 200 * 1000000;
  const int64_t start = cml_clock_monotonic_ns();
  cml_status_t st = co_run(&k);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_DEADLINE_EXCEEDED);
  ASSERT_CONTAINS(cml_status_message(st), "while waiting at AllReduce");
  cml_status_free(st);
  co_deinit(&k);
  // The run ended when the sleeping slot did, not later.
  ASSERT_TRUE(cml_clock_monotonic_ns() - start < (int64_t)5 * 1000000000);
  // A cancel token too.
  int token = 1;
  ASSERT_STATUS_OK(run_sum_with(&k, 2));
  k.skip_slot = 1;
  k.skip_sleep_ms = 100;
  k.use_control = true;
  k.control.struct_size = sizeof k.control;
  k.control.cancelled = &token;
  st = co_run(&k);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_CANCELLED);
  ASSERT_CONTAINS(cml_status_message(st), "cancelled by its token while waiting at AllReduce");
  cml_status_free(st);
  co_deinit(&k);
}

TEST_MAIN(TEST_ENTRY(all_reduce_sum_two_operands_four_slots),
          TEST_ENTRY(all_reduce_groups_max_min_product), TEST_ENTRY(all_reduce_dtypes),
          TEST_ENTRY(all_reduce_large_chunks_devices_over_threads), TEST_ENTRY(all_reduce_in_place),
          TEST_ENTRY(all_reduce_simd_folds_match_the_member_order), TEST_ENTRY(all_gather_axis1),
          TEST_ENTRY(reduce_scatter_and_all_to_all_reference_values),
          TEST_ENTRY(reduce_scatter_and_all_to_all_inner_axes),
          TEST_ENTRY(collective_permute_zeros_for_non_targets),
          TEST_ENTRY(collective_broadcast_from_first_member), TEST_ENTRY(replica_and_partition_ids),
          TEST_ENTRY(a_failing_slot_wakes_the_waiting_ones),
          TEST_ENTRY(a_slot_that_finished_without_arriving_fails_the_round),
          TEST_ENTRY(a_deadline_stops_a_wait))
