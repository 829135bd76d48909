// SPDX-License-Identifier: Apache-2.0
// tests/unit/xla_spmd_test.c: the XLA backend on many devices, on the real CPU PJRT plugin with
// 4 devices (xla:cpu,cpu_device_count=4): the PJRT multi-device plumbing (compile options with
// a device assignment, argument lists per device slot), every collective with hand-computed
// values, AutoSharding (data parallel, Megatron) against single-device values, device
// assignment permutations, and bad inputs that must come back as statuses. Exits 77 (skipped)
// when no CPU plugin is installed (scripts/install_xla_plugin.sh or `cml install cpu`).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/xla/pjrt/pjrt.h"
#include "backends/xla/stablehlo/emitter.h"
#include "backends/xla/xla_internal.h"
#include "cml/backend_impl.h"
#include "cml/cml.h"
#include "cml/xla.h"
#include "test.h"

// Only the building blocks of the chain modules are used here.
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#endif
#include "stablehlo_chain_ir.h"
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

static char* g_plugin_path;

//===--- the PJRT layer: compile options and multi-device execute ---===//

static const char kAllReduceText[] =
    "module @spmd attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 4 : i32} {\n"
    "  func.func public @main(%arg0: tensor<2xf32>) -> (tensor<2xf32>, tensor<ui32>) {\n"
    "    %0 = \"stablehlo.all_reduce\"(%arg0) ({\n"
    "      ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n"
    "        %s = \"stablehlo.add\"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>\n"
    "        \"stablehlo.return\"(%s) : (tensor<f32>) -> ()\n"
    "    }) {replica_groups = dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>}"
    " : (tensor<2xf32>) -> tensor<2xf32>\n"
    "    %1 = \"stablehlo.replica_id\"() : () -> tensor<ui32>\n"
    "    \"func.return\"(%0, %1) : (tensor<2xf32>, tensor<ui32>) -> ()\n"
    "  }\n"
    "}\n";

// Replica r holds [r, 10 r]; groups {0, 1} and {2, 3} sum pairwise. Run with device assignment
// |assign| (slot -> device): slot d's argument must live on device assign[d], and its outputs
// come back there, with replica id d.
static void run_pjrt_all_reduce(int* test_failed_, const int64_t assign[4]) {
  const cml__xla_plugin_t* plugin = NULL;
  ASSERT_STATUS_OK(cml__xla_plugin_load(g_plugin_path, &plugin));
  cml__xla_option_t opt = {
      .name = "cpu_device_count", .type = CML_PJRT_NAMED_INT64, .int64_value = 4};
  cml__xla_client_t* client = NULL;
  ASSERT_STATUS_OK(cml__xla_client_create(plugin, &opt, 1, &client));
  cml__xla_compile_config_t cc = {
      .num_replicas = 4, .num_partitions = 1, .use_spmd_partitioning = true, .device_ids = assign};
  uint8_t options[256];
  size_t size = 0;
  cml_status_t st = cml__xla_compile_options_encode(&cc, options, sizeof options, &size);
  cml_pjrt_loaded_executable_t* exe = NULL;
  if (st == CML_OK) {
    st = cml__xla_compile(client, kAllReduceText, sizeof kAllReduceText - 1, options, size, &exe);
  }
  cml_pjrt_buffer_t* ins[4] = {NULL};
  cml_pjrt_buffer_t* outs[8] = {NULL};
  cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){2});
  for (int d = 0; d < 4 && st == CML_OK; ++d) {
    float v[2] = {(float)d, 10.0f * (float)d};
    st = cml__xla_buffer_from_host(client, (int)assign[d], &s, v, &ins[d]);
  }
  if (st == CML_OK) st = cml__xla_execute_devices(client, exe, 4, ins, 1, NULL, 0, outs, 2);
  float got[4][2] = {{0}};
  uint32_t ids[4] = {0};
  cml_shape_t u = cml_shape_scalar(CML_DTYPE_U32);
  for (int d = 0; d < 4 && st == CML_OK; ++d) {
    st = cml__xla_buffer_to_host(client, outs[2 * d], &s, got[d], sizeof got[d]);
    if (st == CML_OK) st = cml__xla_buffer_to_host(client, outs[2 * d + 1], &u, &ids[d], 4);
  }
  for (int i = 0; i < 8; ++i) cml__xla_buffer_destroy(client, outs[i]);
  for (int i = 0; i < 4; ++i) cml__xla_buffer_destroy(client, ins[i]);
  cml__xla_executable_destroy(client, exe);
  cml__xla_client_destroy(client);
  ASSERT_STATUS_OK(st);
  static const float kWant[4][2] = {{1, 10}, {1, 10}, {5, 50}, {5, 50}};
  for (int d = 0; d < 4; ++d) {
    ASSERT_EQ_DBL(got[d][0], kWant[d][0]);
    ASSERT_EQ_DBL(got[d][1], kWant[d][1]);
    ASSERT_EQ_INT(ids[d], d);
  }
}

TEST(pjrt_all_reduce_identity_assignment) {
  static const int64_t kAssign[4] = {0, 1, 2, 3};
  run_pjrt_all_reduce(test_failed_, kAssign);
}

TEST(pjrt_all_reduce_permuted_assignment) {
  static const int64_t kAssign[4] = {3, 1, 0, 2};
  run_pjrt_all_reduce(test_failed_, kAssign);
}

TEST(pjrt_execute_more_devices_than_the_client) {
  const cml__xla_plugin_t* plugin = NULL;
  ASSERT_STATUS_OK(cml__xla_plugin_load(g_plugin_path, &plugin));
  cml__xla_option_t opt = {
      .name = "cpu_device_count", .type = CML_PJRT_NAMED_INT64, .int64_value = 2};
  cml__xla_client_t* client = NULL;
  ASSERT_STATUS_OK(cml__xla_client_create(plugin, &opt, 1, &client));
  cml_pjrt_buffer_t* outs[3] = {(cml_pjrt_buffer_t*)1, (cml_pjrt_buffer_t*)1,
                                (cml_pjrt_buffer_t*)1};
  cml_status_t st = cml__xla_execute_devices(client, NULL, 3, NULL, 0, NULL, 0, outs, 1);
  cml__xla_client_destroy(client);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_OUT_OF_RANGE);
  ASSERT_CONTAINS(cml_status_message(st), "3 device(s)");
  cml_status_free(st);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(outs[i] == NULL);
}

//===--- the emitter's collectives, on hand-built IR, through the PJRT layer ---===//

// An SPMD module on 4 replicas: main(x: f32[4]) = op(x) with |attrs|, the result of |out|
// shape. Replica r gets x = [100 r, 100 r + 1, 100 r + 2, 100 r + 3]; |got| receives the 4
// replicas' results (each cml_shape_element_count(out) floats, at most 8).
static cml_status_t run_ir_collective(cml_op_t op, const cml_ir_attrs_t* attrs,
                                      const cml_shape_t* out, float got[4][8], char** out_text) {
  *out_text = NULL;
  chain_ir_t ir;
  if (!chain_ir_alloc(&ir, 1, 4)) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  ir.module.name = "collective";
  ir.module.num_devices = 4;
  ir.module.distribution = CML_DISTRIBUTION_SPMD;
  static const int32_t kAssign[4] = {0, 1, 2, 3};
  ir.module.device_assignment = kAssign;
  uint32_t x = chain_ir_param(&ir, 0, "x");
  cml_shape_t xs = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){4});
  ir.values[x].shape = xs;
  uint32_t r = chain_ir_node(&ir, 0, op, &x, op == CML_OP_REPLICA_ID ? 0 : 1, out);
  ir.attrs[ir.values[r].node] = *attrs;
  chain_ir_return(&ir, 0, r);
  cml_xla_emit_options_t opts;
  cml_xla_emit_options_init(&opts);
  cml_xla_emit_options_distribution(&opts, &ir.module);
  cml_status_t st = cml_xla_emit_stablehlo(&ir.module, &opts, out_text);
  chain_ir_destroy(&ir);
  if (st != CML_OK) return st;
  const cml__xla_plugin_t* plugin = NULL;
  CML_RETURN_IF_ERROR(cml__xla_plugin_load(g_plugin_path, &plugin));
  cml__xla_option_t opt = {
      .name = "cpu_device_count", .type = CML_PJRT_NAMED_INT64, .int64_value = 4};
  cml__xla_client_t* client = NULL;
  CML_RETURN_IF_ERROR(cml__xla_client_create(plugin, &opt, 1, &client));
  int64_t ids[4] = {0, 1, 2, 3};
  cml__xla_compile_config_t cc = {
      .num_replicas = 4, .num_partitions = 1, .use_spmd_partitioning = true, .device_ids = ids};
  uint8_t options[256];
  size_t size = 0;
  st = cml__xla_compile_options_encode(&cc, options, sizeof options, &size);
  cml_pjrt_loaded_executable_t* exe = NULL;
  if (st == CML_OK)
    st = cml__xla_compile(client, *out_text, strlen(*out_text), options, size, &exe);
  cml_pjrt_buffer_t* ins[4] = {NULL};
  cml_pjrt_buffer_t* outs[4] = {NULL};
  for (int d = 0; d < 4 && st == CML_OK; ++d) {
    float v[4];
    for (int i = 0; i < 4; ++i) v[i] = (float)(100 * d + i);
    st = cml__xla_buffer_from_host(client, d, &xs, v, &ins[d]);
  }
  if (st == CML_OK) st = cml__xla_execute_devices(client, exe, 4, ins, 1, NULL, 0, outs, 1);
  for (int d = 0; d < 4 && st == CML_OK; ++d) {
    st = cml__xla_buffer_to_host(client, outs[d], out, got[d], cml_shape_byte_size(out));
  }
  for (int i = 0; i < 4; ++i) {
    cml__xla_buffer_destroy(client, outs[i]);
    cml__xla_buffer_destroy(client, ins[i]);
  }
  cml__xla_executable_destroy(client, exe);
  cml__xla_client_destroy(client);
  return st;
}

#define RUN_IR(op, attrs, out_shape, got)                                              \
  do {                                                                                 \
    char* text_ = NULL;                                                                \
    cml_status_t st_ = run_ir_collective((op), (attrs), (out_shape), (got), &text_);   \
    if ((st_ != CML_OK || getenv("SHOW_TEXT")) && text_) fprintf(stderr, "%s", text_); \
    free(text_);                                                                       \
    ASSERT_STATUS_OK(st_);                                                             \
  } while (0)

static const int32_t kPairs01_23[4] = {0, 1, 2, 3};
static const int32_t kAll[4] = {0, 1, 2, 3};

TEST(ir_all_reduce_groups) {
  cml_ir_attrs_t a;
  memset(&a, 0, sizeof a);
  a.reduce_type = CML_REDUCE_MAX;
  a.collective =
      (cml_ir_collective_attrs_t){.groups = kPairs01_23, .group_count = 2, .group_size = 2};
  cml_shape_t out = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){4});
  float got[4][8];
  RUN_IR(CML_OP_ALL_REDUCE, &a, &out, got);
  for (int d = 0; d < 4; ++d) {
    for (int i = 0; i < 4; ++i) ASSERT_EQ_DBL(got[d][i], (d < 2 ? 100 : 300) + i);
  }
}

TEST(ir_all_gather_groups) {
  cml_ir_attrs_t a;
  memset(&a, 0, sizeof a);
  a.axis = 0;
  a.collective =
      (cml_ir_collective_attrs_t){.groups = kPairs01_23, .group_count = 2, .group_size = 2};
  cml_shape_t out = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){8});
  float got[4][8];
  RUN_IR(CML_OP_ALL_GATHER, &a, &out, got);
  for (int d = 0; d < 4; ++d) {
    int first = d < 2 ? 0 : 2;
    for (int i = 0; i < 8; ++i) ASSERT_EQ_DBL(got[d][i], 100 * (first + i / 4) + i % 4);
  }
}

TEST(ir_reduce_scatter_all) {
  cml_ir_attrs_t a;
  memset(&a, 0, sizeof a);
  a.axis = 0;
  a.reduce_type = CML_REDUCE_SUM;
  a.collective = (cml_ir_collective_attrs_t){.groups = kAll, .group_count = 1, .group_size = 4};
  cml_shape_t out = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){1});
  float got[4][8];
  RUN_IR(CML_OP_REDUCE_SCATTER, &a, &out, got);
  // Element i summed over the replicas: 600 + 4 i; replica d keeps element d.
  for (int d = 0; d < 4; ++d) ASSERT_EQ_DBL(got[d][0], 600 + 4 * d);
}

TEST(ir_all_to_all) {
  cml_ir_attrs_t a;
  memset(&a, 0, sizeof a);
  a.collective = (cml_ir_collective_attrs_t){
      .groups = kAll, .group_count = 1, .group_size = 4, .split_axis = 0, .concat_axis = 0};
  cml_shape_t out = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){4});
  float got[4][8];
  RUN_IR(CML_OP_ALL_TO_ALL, &a, &out, got);
  // Replica d receives element d of every sender, in sender order.
  for (int d = 0; d < 4; ++d) {
    for (int j = 0; j < 4; ++j) ASSERT_EQ_DBL(got[d][j], 100 * j + d);
  }
}

TEST(ir_collective_permute_shift) {
  static const int32_t kShift[6] = {0, 1, 1, 2, 2, 3};
  cml_ir_attrs_t a;
  memset(&a, 0, sizeof a);
  a.collective = (cml_ir_collective_attrs_t){.pairs = kShift, .pair_count = 3};
  cml_shape_t out = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){4});
  float got[4][8];
  RUN_IR(CML_OP_COLLECTIVE_PERMUTE, &a, &out, got);
  for (int i = 0; i < 4; ++i) ASSERT_EQ_DBL(got[0][i], 0);  // nobody sends to 0
  for (int d = 1; d < 4; ++d) {
    for (int i = 0; i < 4; ++i) ASSERT_EQ_DBL(got[d][i], 100 * (d - 1) + i);
  }
}

TEST(ir_collective_broadcast_masked) {
  static const int32_t kRoots[4] = {1, 0, 3, 2};  // roots 1 and 3
  cml_ir_attrs_t a;
  memset(&a, 0, sizeof a);
  a.collective = (cml_ir_collective_attrs_t){.groups = kRoots, .group_count = 2, .group_size = 2};
  cml_shape_t out = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){4});
  float got[4][8];
  RUN_IR(CML_OP_COLLECTIVE_BROADCAST, &a, &out, got);
  for (int d = 0; d < 4; ++d) {
    for (int i = 0; i < 4; ++i) ASSERT_EQ_DBL(got[d][i], 100 * (d < 2 ? 1 : 3) + i);
  }
}

//===--- through the public API on xla:cpu,cpu_device_count=4 ---===//

static cml_backend_t* g_backend;

#define SHAPE(dt, ...)                                                                \
  cml_shape_make((dt), (int32_t)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), \
                 (int64_t[]){__VA_ARGS__})

// Uploads |count| inputs per slot for |slots| slots (device-major, slot d on |devices[d]|, or d).
static cml_status_t upload(int slots, const int32_t* devices, size_t count,
                           const cml_shape_t* shapes, const void* const* data, cml_buffer_t** out) {
  for (size_t i = 0; i < (size_t)slots * count; ++i) out[i] = NULL;
  for (int d = 0; d < slots; ++d) {
    for (size_t a = 0; a < count; ++a) {
      const cml_shape_t* s = &shapes[(size_t)d * count + a];
      CML_RETURN_IF_ERROR(cml_buffer_from_host(g_backend, devices ? devices[d] : d, s,
                                               data[(size_t)d * count + a], cml_shape_byte_size(s),
                                               &out[(size_t)d * count + a]));
    }
  }
  return CML_OK;
}

static void release_all(cml_buffer_t** b, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (b[i]) cml_buffer_release(b[i]);
    b[i] = NULL;
  }
}

static uint16_t to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)(u >> 16);  // exact for the small integers used here
}
static float from_bf16(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

TEST(capabilities_say_spmd_and_auto_sharding) {
  const cml_capabilities_t* caps = cml_backend_capabilities(g_backend);
  ASSERT_EQ_INT(cml_backend_device_count(g_backend), 4);
  ASSERT_TRUE(caps->distributions & (1u << CML_DISTRIBUTION_NONE));
  ASSERT_TRUE(caps->distributions & (1u << CML_DISTRIBUTION_SPMD));
  ASSERT_TRUE(caps->distributions & (1u << CML_DISTRIBUTION_AUTO_SHARDING));
  static const cml_op_t kOps[] = {CML_OP_ALL_REDUCE,         CML_OP_ALL_GATHER,
                                  CML_OP_REDUCE_SCATTER,     CML_OP_ALL_TO_ALL,
                                  CML_OP_COLLECTIVE_PERMUTE, CML_OP_COLLECTIVE_BROADCAST,
                                  CML_OP_REPLICA_ID,         CML_OP_PARTITION_ID};
  for (size_t i = 0; i < sizeof kOps / sizeof kOps[0]; ++i) {
    ASSERT_TRUE(cml_capabilities_has_op(caps, kOps[i]));
  }
}

// AllReduce of 4 operands of 3 dtypes (Float32 twice, Int32, BFloat16) over groups {0, 1} and
// {2, 3}: slot d holds x = [d, 2d], y = [d, d + 1, d + 2], z = [10 d], w = [d + 1, 3].
TEST(all_reduce_mixed_dtypes_groups) {
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(g_backend, "mixed", &b));
  cml_status_t st = cml_builder_spmd(b, 4);
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t sx = SHAPE(CML_DTYPE_F32, 2), sy = SHAPE(CML_DTYPE_I32, 3),
              sz = SHAPE(CML_DTYPE_F32, 1), sw = SHAPE(CML_DTYPE_BF16, 2);
  cml_value_t in[4];
  in[0] = cml_parameter(f, "x", &sx);
  in[1] = cml_parameter(f, "y", &sy);
  in[2] = cml_parameter(f, "z", &sz);
  in[3] = cml_parameter(f, "w", &sw);
  static const int32_t kGroups[4] = {0, 1, 2, 3};
  cml_replica_groups_t groups = {kGroups, 2, 2};
  cml_value_t out[4];
  cml_op_all_reduce(f, in, 4, CML_REDUCE_SUM, &groups, out);
  if (st == CML_OK) st = cml_function_return(f, out, 4);
  cml_executable_t* exe = NULL;
  if (st == CML_OK) st = cml_builder_compile(b, &exe);
  cml_builder_destroy(b);
  ASSERT_STATUS_OK(st);
  float x[4][2], z[4][1];
  int32_t y[4][3];
  uint16_t w[4][2];
  cml_shape_t shapes[16];
  const void* data[16];
  for (int d = 0; d < 4; ++d) {
    x[d][0] = (float)d;
    x[d][1] = 2.0f * (float)d;
    for (int i = 0; i < 3; ++i) y[d][i] = d + i;
    z[d][0] = 10.0f * (float)d;
    w[d][0] = to_bf16((float)d + 1.0f);
    w[d][1] = to_bf16(3.0f);
    shapes[4 * d] = sx;
    shapes[4 * d + 1] = sy;
    shapes[4 * d + 2] = sz;
    shapes[4 * d + 3] = sw;
    data[4 * d] = x[d];
    data[4 * d + 1] = y[d];
    data[4 * d + 2] = z[d];
    data[4 * d + 3] = w[d];
  }
  cml_buffer_t* ins[16];
  cml_buffer_t* outs[16] = {NULL};
  st = upload(4, NULL, 4, shapes, data, ins);
  if (st == CML_OK) st = cml_executable_execute(exe, ins, 16, NULL, 0, outs);
  float gx[4][2], gz[4][1];
  int32_t gy[4][3];
  uint16_t gw[4][2];
  for (int d = 0; d < 4 && st == CML_OK; ++d) {
    st = cml_buffer_copy_to_host(outs[4 * d], gx[d], sizeof gx[d]);
    if (st == CML_OK) st = cml_buffer_copy_to_host(outs[4 * d + 1], gy[d], sizeof gy[d]);
    if (st == CML_OK) st = cml_buffer_copy_to_host(outs[4 * d + 2], gz[d], sizeof gz[d]);
    if (st == CML_OK) st = cml_buffer_copy_to_host(outs[4 * d + 3], gw[d], sizeof gw[d]);
    if (st == CML_OK && cml_buffer_device(outs[4 * d]) != d) {
      st = cml_status_make(CML_STATUS_INTERNAL, "output of slot %d on device %d", d,
                           cml_buffer_device(outs[4 * d]));
    }
  }
  release_all(ins, 16);
  release_all(outs, 16);
  cml_executable_release(exe);
  ASSERT_STATUS_OK(st);
  for (int d = 0; d < 4; ++d) {
    int a = d < 2 ? 0 : 2;  // the group's first member; the sum is over a and a + 1
    ASSERT_EQ_DBL(gx[d][0], 2 * a + 1);
    ASSERT_EQ_DBL(gx[d][1], 2 * (2 * a + 1));
    for (int i = 0; i < 3; ++i) ASSERT_EQ_INT(gy[d][i], 2 * a + 1 + 2 * i);
    ASSERT_EQ_DBL(gz[d][0], 10 * (2 * a + 1));
    ASSERT_EQ_DBL(from_bf16(gw[d][0]), 2 * a + 3);
    ASSERT_EQ_DBL(from_bf16(gw[d][1]), 6);
  }
}

// Builds main(x: Float32[4]) on 4 SPMD slots with |n_out| outputs made by |body|; runs it on
// slot d's x = [100 d, 100 d + 1, 100 d + 2, 100 d + 3] with the device assignment |assign|
// (NULL: identity), and copies output k of slot d into got[d][k] (at most 8 floats each, of
// |out_bytes[k]| bytes).
typedef bool (*spmd_body_fn)(cml_function_t* f, cml_value_t x, cml_value_t* outs);
static cml_status_t run_spmd(spmd_body_fn body, size_t n_out, const size_t* out_bytes,
                             const int32_t* assign, float got[4][6][8], int out_devices[4]) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(g_backend, "spmd", &b));
  cml_status_t st = cml_builder_spmd(b, 4);
  if (st == CML_OK && assign) st = cml_builder_device_assignment(b, assign, 4);
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t xs = SHAPE(CML_DTYPE_F32, 4);
  cml_value_t x = cml_parameter(f, "x", &xs);
  cml_value_t outs[6];
  if (st == CML_OK && !body(f, x, outs)) st = cml_builder_status(b);
  if (st == CML_OK) st = cml_function_return(f, outs, n_out);
  cml_executable_t* exe = NULL;
  if (st == CML_OK) st = cml_builder_compile(b, &exe);
  cml_builder_destroy(b);
  if (st != CML_OK) return st;
  float x_host[4][4];
  cml_shape_t shapes[4];
  const void* data[4];
  for (int d = 0; d < 4; ++d) {
    for (int i = 0; i < 4; ++i) x_host[d][i] = (float)(100 * d + i);
    shapes[d] = xs;
    data[d] = x_host[d];
  }
  cml_buffer_t* ins[4];
  cml_buffer_t* res[24] = {NULL};
  st = upload(4, assign, 1, shapes, data, ins);
  if (st == CML_OK) st = cml_executable_execute(exe, ins, 4, NULL, 0, res);
  for (int d = 0; d < 4 && st == CML_OK; ++d) {
    out_devices[d] = cml_buffer_device(res[d * n_out]);
    for (size_t k = 0; k < n_out && st == CML_OK; ++k) {
      st = cml_buffer_copy_to_host(res[d * n_out + k], got[d][k], out_bytes[k]);
    }
  }
  release_all(ins, 4);
  release_all(res, 4 * n_out);
  cml_executable_release(exe);
  return st;
}

//===--- If and While whose closures run collectives (stablehlo/emit_guard.c) ---===//
// Slots of a replica group that answer a predicate differently would meet different
// collectives; XLA's CPU runtime then waits 40 s and ends the process. These come back as
// FAILED_PRECONDITION naming the node instead, and agreeing groups run as before.

static cml_value_t slot_below(cml_function_t* f, int64_t k) {
  return cml_op_less_than(f, cml_op_replica_id(f), cml_constant_scalar_i64(f, CML_DTYPE_U32, k));
}

// If (slot < 2) { AllReduce(x) over all slots } else { x }.
static bool body_if_diverges(cml_function_t* f, cml_value_t x, cml_value_t* o) {
  cml_function_t *yes = NULL, *no = NULL;
  if (cml_function_new_closure(f, &yes) != CML_OK || cml_function_new_closure(f, &no) != CML_OK) {
    return false;
  }
  cml_value_t y;
  if (!cml_op_all_reduce(yes, &x, 1, CML_REDUCE_SUM, NULL, &y)) return false;
  if (cml_function_return(yes, &y, 1) != CML_OK || cml_function_return(no, &x, 1) != CML_OK) {
    return false;
  }
  return cml_op_if(f, slot_below(f, 2), yes, no, o);
}

// i = 0; while (i < slot + 1) { x = AllReduce(x); i += 1 }: slot 0 leaves first.
static bool body_while_diverges(cml_function_t* f, cml_value_t x, cml_value_t* o) {
  cml_function_t *cond = NULL, *body = NULL;
  if (cml_function_new_closure(f, &cond) != CML_OK ||
      cml_function_new_closure(f, &body) != CML_OK) {
    return false;
  }
  cml_shape_t is = cml_shape_scalar(CML_DTYPE_U32), xs = SHAPE(CML_DTYPE_F32, 4);
  cml_value_t ci = cml_parameter(cond, "i", &is);
  (void)cml_parameter(cond, "x", &xs);
  cml_value_t bound =
      cml_op_add(cond, cml_op_replica_id(cond), cml_constant_scalar_i64(cond, CML_DTYPE_U32, 1));
  cml_value_t go = cml_op_less_than(cond, ci, bound);
  cml_value_t bi = cml_parameter(body, "i", &is), bx = cml_parameter(body, "x", &xs);
  cml_value_t next[2];
  next[0] = cml_op_add(body, bi, cml_constant_scalar_i64(body, CML_DTYPE_U32, 1));
  if (!cml_op_all_reduce(body, &bx, 1, CML_REDUCE_SUM, NULL, &next[1])) return false;
  if (cml_function_return(cond, &go, 1) != CML_OK || cml_function_return(body, next, 2) != CML_OK) {
    return false;
  }
  cml_value_t init[2] = {cml_constant_scalar_i64(f, CML_DTYPE_U32, 0), x}, out[2];
  if (!cml_op_while(f, cond, body, init, 2, out)) return false;
  o[0] = out[1];
  return true;
}

// A named function "step" holding body_if_diverges, called from main inside a While that
// runs twice (the flag goes through a call, a loop body and the loop's state).
static bool body_call_in_loop_diverges(cml_function_t* f, cml_value_t x, cml_value_t* o) {
  cml_builder_t* b = cml_function_builder(f);
  cml_function_t *step = NULL, *cond = NULL, *body = NULL;
  if (cml_builder_new_function(b, "step", &step) != CML_OK) return false;
  cml_shape_t is = cml_shape_scalar(CML_DTYPE_I32), xs = SHAPE(CML_DTYPE_F32, 4);
  cml_value_t sx = cml_parameter(step, "x", &xs), sy;
  if (!body_if_diverges(step, sx, &sy) || cml_function_return(step, &sy, 1) != CML_OK) {
    return false;
  }
  if (cml_function_new_closure(f, &cond) != CML_OK ||
      cml_function_new_closure(f, &body) != CML_OK) {
    return false;
  }
  cml_value_t ci = cml_parameter(cond, "i", &is);
  (void)cml_parameter(cond, "x", &xs);
  cml_value_t go = cml_op_less_than(cond, ci, cml_constant_scalar_i64(cond, CML_DTYPE_I32, 2));
  cml_value_t bi = cml_parameter(body, "i", &is), bx = cml_parameter(body, "x", &xs);
  cml_value_t next[2];
  next[0] = cml_op_add(body, bi, cml_constant_scalar_i64(body, CML_DTYPE_I32, 1));
  if (!cml_op_call(body, step, &bx, 1, &next[1])) return false;
  if (cml_function_return(cond, &go, 1) != CML_OK || cml_function_return(body, next, 2) != CML_OK) {
    return false;
  }
  cml_value_t init[2] = {cml_constant_scalar_i64(f, CML_DTYPE_I32, 0), x}, out[2];
  if (!cml_op_while(f, cond, body, init, 2, out)) return false;
  o[0] = out[1];
  return true;
}

TEST(diverging_if_and_while_are_statuses_not_aborts) {
  static const struct {
    spmd_body_fn body;
    const char* want;
  } kCases[] = {
      {body_if_diverges, "the predicate of If (node"},
      {body_while_diverges, "the condition of While (node"},
      {body_call_in_loop_diverges, "in function 1 \"step\""},
  };
  const size_t bytes[1] = {16};
  for (size_t k = 0; k < sizeof kCases / sizeof kCases[0]; ++k) {
    float got[4][6][8];
    int devices[4];
    cml_status_t st = run_spmd(kCases[k].body, 1, bytes, NULL, got, devices);
    ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_FAILED_PRECONDITION);
    ASSERT_CONTAINS(cml_status_message(st), kCases[k].want);
    ASSERT_CONTAINS(cml_status_message(st), "answered the");
    cml_status_free(st);
  }
}

// Compiles main(x) = body(x) on 4 slots.
static cml_status_t compile_spmd(spmd_body_fn body, cml_executable_t** out_exe) {
  *out_exe = NULL;
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(g_backend, "spmd", &b));
  cml_status_t st = cml_builder_spmd(b, 4);
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t xs = SHAPE(CML_DTYPE_F32, 4);
  cml_value_t x = cml_parameter(f, "x", &xs), y;
  if (st == CML_OK && !body(f, x, &y)) st = cml_builder_status(b);
  if (st == CML_OK) st = cml_function_return(f, &y, 1);
  if (st == CML_OK) st = cml_builder_compile(b, out_exe);
  cml_builder_destroy(b);
  return st;
}

static bool body_if_agrees_per_group(cml_function_t* f, cml_value_t x, cml_value_t* o);

// The divergence is found after PJRT ran: a donated input given to PJRT was gone by then, and
// the failed execution handed it back "valid" (reads: "deleted or donated buffer"). A module
// with the flag donates nothing to PJRT; a successful execution still consumes its inputs.
TEST(diverging_execution_leaves_donated_inputs_intact) {
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(compile_spmd(body_if_diverges, &exe));
  float x_host[4][4];
  cml_shape_t shapes[4];
  const void* data[4];
  for (int d = 0; d < 4; ++d) {
    for (int i = 0; i < 4; ++i) x_host[d][i] = (float)(10 * d + i);
    shapes[d] = SHAPE(CML_DTYPE_F32, 4);
    data[d] = x_host[d];
  }
  cml_buffer_t* ins[4];
  cml_buffer_t* res[4] = {NULL};
  const bool donate[4] = {true, true, true, true};
  ASSERT_STATUS_OK(upload(4, NULL, 1, shapes, data, ins));
  for (int round = 0; round < 2; ++round) {  // donated, then not
    cml_status_t st = cml_executable_execute(exe, ins, 4, round == 0 ? donate : NULL, 0, res);
    ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_FAILED_PRECONDITION);
    cml_status_free(st);
    for (int d = 0; d < 4; ++d) {
      float got[4] = {0};
      ASSERT_TRUE(cml_buffer_is_valid(ins[d]));
      ASSERT_STATUS_OK(cml_buffer_copy_to_host(ins[d], got, sizeof got));
      for (int i = 0; i < 4; ++i) ASSERT_EQ_INT((int)got[i], 10 * d + i);
    }
  }
  cml_executable_release(exe);
  ASSERT_STATUS_OK(compile_spmd(body_if_agrees_per_group, &exe));
  ASSERT_STATUS_OK(cml_executable_execute(exe, ins, 4, donate, 0, res));
  for (int d = 0; d < 4; ++d) {
    float got[4] = {0};
    ASSERT_FALSE(cml_buffer_is_valid(ins[d]));  // consumed
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(res[d], got, sizeof got));
    // Groups {0, 1} and {2, 3}: slots 0 and 1 sum, slots 2 and 3 sum and negate.
    const int g = d / 2;
    for (int i = 0; i < 4; ++i) {
      const int sum = (10 * (2 * g) + i) + (10 * (2 * g + 1) + i);
      ASSERT_EQ_INT((int)got[i], g == 0 ? sum : -sum);
    }
  }
  release_all(ins, 4);
  release_all(res, 4);
  cml_executable_release(exe);
}

// If (slot < 2) { AllReduce over {0, 1}, {2, 3} } else { AllReduce over the same groups, then
// negated }: each group agrees, so both branches run, on different groups.
static bool body_if_agrees_per_group(cml_function_t* f, cml_value_t x, cml_value_t* o) {
  static const int32_t kIds[4] = {0, 1, 2, 3};
  static const cml_replica_groups_t kGroups = {kIds, 2, 2};
  cml_function_t *yes = NULL, *no = NULL;
  if (cml_function_new_closure(f, &yes) != CML_OK || cml_function_new_closure(f, &no) != CML_OK) {
    return false;
  }
  cml_value_t y, z;
  if (!cml_op_all_reduce(yes, &x, 1, CML_REDUCE_SUM, &kGroups, &y)) return false;
  if (!cml_op_all_reduce(no, &x, 1, CML_REDUCE_SUM, &kGroups, &z)) return false;
  z = cml_op_neg(no, z);
  if (cml_function_return(yes, &y, 1) != CML_OK || cml_function_return(no, &z, 1) != CML_OK) {
    return false;
  }
  return cml_op_if(f, slot_below(f, 2), yes, no, o);
}

// while (AllReduce(x)[0] < 1000) { x = x + (If (AllReduce(x)[0] < 700) { 100 } else { 1 }) }:
// the condition and the If's predicate come from AllReduces, so every slot agrees.
static bool body_loop_agrees(cml_function_t* f, cml_value_t x, cml_value_t* o) {
  cml_function_t *cond = NULL, *body = NULL, *big = NULL, *small = NULL;
  if (cml_function_new_closure(f, &cond) != CML_OK ||
      cml_function_new_closure(f, &body) != CML_OK) {
    return false;
  }
  cml_shape_t xs = SHAPE(CML_DTYPE_F32, 4);
  cml_value_t cx = cml_parameter(cond, "x", &xs), csum, bsum;
  if (!cml_op_all_reduce(cond, &cx, 1, CML_REDUCE_SUM, NULL, &csum)) return false;
  cml_value_t first = cml_op_reshape(
      cond, cml_op_slice(cond, csum, (int64_t[]){0}, (int64_t[]){1}, NULL, 1), NULL, 0);
  cml_value_t go =
      cml_op_less_than(cond, first, cml_constant_scalar_f64(cond, CML_DTYPE_F32, 1000));
  cml_value_t bx = cml_parameter(body, "x", &xs);
  if (!cml_op_all_reduce(body, &bx, 1, CML_REDUCE_SUM, NULL, &bsum)) return false;
  cml_value_t b0 = cml_op_reshape(
      body, cml_op_slice(body, bsum, (int64_t[]){0}, (int64_t[]){1}, NULL, 1), NULL, 0);
  if (cml_function_new_closure(body, &big) != CML_OK ||
      cml_function_new_closure(body, &small) != CML_OK) {
    return false;
  }
  // The If's branches run a collective too (an AllReduce of a constant), so it is guarded.
  cml_value_t hundred = cml_constant_scalar_f64(big, CML_DTYPE_F32, 25), one, step;
  if (!cml_op_all_reduce(big, &hundred, 1, CML_REDUCE_SUM, NULL, &hundred)) return false;
  one = cml_constant_scalar_f64(small, CML_DTYPE_F32, 1);
  if (cml_function_return(big, &hundred, 1) != CML_OK ||
      cml_function_return(small, &one, 1) != CML_OK) {
    return false;
  }
  cml_value_t low = cml_op_less_than(body, b0, cml_constant_scalar_f64(body, CML_DTYPE_F32, 700));
  if (!cml_op_if(body, low, big, small, &step)) return false;
  cml_value_t next = cml_op_add(body, bx, cml_op_broadcast_in_dim(body, step, xs.dims, 1, NULL, 0));
  if (cml_function_return(cond, &go, 1) != CML_OK ||
      cml_function_return(body, &next, 1) != CML_OK) {
    return false;
  }
  return cml_op_while(f, cond, body, &x, 1, o);
}

TEST(agreeing_if_and_while_with_collectives_run) {
  const size_t bytes[1] = {16};
  float got[4][6][8];
  int devices[4];
  ASSERT_STATUS_OK(run_spmd(body_if_agrees_per_group, 1, bytes, NULL, got, devices));
  // x of slot d is 100 d + i: groups {0, 1} sum to 100 + 2 i, {2, 3} to 500 + 2 i (negated).
  for (int d = 0; d < 4; ++d) {
    for (int i = 0; i < 4; ++i) ASSERT_EQ_DBL(got[d][0][i], d < 2 ? 100 + 2 * i : -(500 + 2 * i));
  }
  ASSERT_STATUS_OK(run_spmd(body_loop_agrees, 1, bytes, NULL, got, devices));
  // The sum of x[0] over slots starts at 600; each step adds 4 * 100 while it is below 700,
  // then 4 * 1: 600 -> 1000 -> stop. So x[0] of slot d is 100 d + 100.
  for (int d = 0; d < 4; ++d) {
    for (int i = 0; i < 4; ++i) ASSERT_EQ_DBL(got[d][0][i], 100 * d + i + 100);
  }
}

static bool body_each_collective(cml_function_t* f, cml_value_t x, cml_value_t* o) {
  static const int32_t kPairs[4] = {0, 1, 2, 3};
  static const cml_replica_groups_t kGroups = {kPairs, 2, 2};
  static const int32_t kRoots[4] = {1, 0, 3, 2};
  static const cml_replica_groups_t kBcast = {kRoots, 2, 2};
  static const int32_t kRing[8] = {0, 1, 1, 2, 2, 3, 3, 0};
  o[0] = cml_op_all_gather(f, x, 0, &kGroups);
  o[1] = cml_op_reduce_scatter(f, x, CML_REDUCE_MAX, 0, NULL);
  o[2] = cml_op_all_to_all(f, x, 0, 0, NULL);
  o[3] = cml_op_collective_permute(f, x, kRing, 3);  // 0->1, 1->2, 2->3: slot 0 gets zeros
  o[4] = cml_op_collective_broadcast(f, x, &kBcast);
  o[5] = cml_op_convert_dtype(f, cml_op_replica_id(f), CML_DTYPE_F32);
  for (int i = 0; i < 6; ++i) {
    if (o[i] == CML_VALUE_INVALID) return false;
  }
  return true;
}

static void check_each_collective(int* test_failed_, float got[4][6][8]) {
  for (int d = 0; d < 4; ++d) {
    int first = d < 2 ? 0 : 2;
    for (int i = 0; i < 8; ++i) ASSERT_EQ_DBL(got[d][0][i], 100 * (first + i / 4) + i % 4);
    ASSERT_EQ_DBL(got[d][1][0], 300 + d);  // max over the slots of element d
    for (int j = 0; j < 4; ++j) ASSERT_EQ_DBL(got[d][2][j], 100 * j + d);
    for (int i = 0; i < 4; ++i) ASSERT_EQ_DBL(got[d][3][i], d == 0 ? 0 : 100 * (d - 1) + i);
    for (int i = 0; i < 4; ++i) ASSERT_EQ_DBL(got[d][4][i], 100 * (d < 2 ? 1 : 3) + i);
    ASSERT_EQ_DBL(got[d][5][0], d);
  }
}

static const size_t kEachBytes[6] = {32, 4, 16, 16, 16, 4};

TEST(each_collective_by_hand) {
  float got[4][6][8];
  int devices[4];
  ASSERT_STATUS_OK(run_spmd(body_each_collective, 6, kEachBytes, NULL, got, devices));
  check_each_collective(test_failed_, got);
  for (int d = 0; d < 4; ++d) ASSERT_EQ_INT(devices[d], d);
}

// A permuted device assignment changes where slots run, not what they compute: slot d (replica
// d) runs on device kAssign[d], its inputs and outputs live there.
TEST(device_assignment_permutations) {
  static const int32_t kAssigns[3][4] = {{3, 1, 0, 2}, {1, 0, 3, 2}, {3, 2, 1, 0}};
  for (int a = 0; a < 3; ++a) {
    float got[4][6][8];
    int devices[4];
    ASSERT_STATUS_OK(run_spmd(body_each_collective, 6, kEachBytes, kAssigns[a], got, devices));
    check_each_collective(test_failed_, got);
    for (int d = 0; d < 4; ++d) ASSERT_EQ_INT(devices[d], kAssigns[a][d]);
  }
}

static bool body_int_and_bool(cml_function_t* f, cml_value_t x, cml_value_t* o) {
  static const int32_t kPairs[4] = {0, 1, 2, 3};
  static const cml_replica_groups_t kGroups = {kPairs, 2, 2};
  cml_value_t xi = cml_op_convert_dtype(f, x, CML_DTYPE_I32);
  // [true, true, false, false] on slot 0, all false elsewhere.
  cml_value_t small = cml_op_less_than(f, x, cml_constant_scalar_f64(f, CML_DTYPE_F32, 1.5));
  cml_value_t mn;
  if (!cml_op_all_reduce(f, &xi, 1, CML_REDUCE_MIN, NULL, &mn)) return false;
  o[0] = cml_op_convert_dtype(f, mn, CML_DTYPE_F32);
  o[1] = cml_op_convert_dtype(f, cml_op_collective_broadcast(f, small, NULL), CML_DTYPE_F32);
  o[2] = cml_op_convert_dtype(f, cml_op_all_gather(f, xi, 0, &kGroups), CML_DTYPE_F32);
  return o[0] && o[1] && o[2];
}

// Float16 sums and products across slots combine in f32 and round once, as on c (XLA's CPU
// plugin combined them in Float16, one member at a time). Element j of v is 2048 on slot j and
// 1 elsewhere (2051, 2052 in Float16; in Float16 order 2048 + 1 + 1 + 1 stays 2048 when the
// 2048 comes first), and p[0] is 256 on slots 0 and 1, 2^-8 on slots 2 and 3 (256 * 256
// overflows Float16).
static bool body_half_sums(cml_function_t* f, cml_value_t x, cml_value_t* o) {
  cml_value_t slot = cml_op_convert_dtype(f, cml_op_replica_id(f), CML_DTYPE_F32);
  cml_value_t mine =
      cml_op_equal(f, x, cml_op_mul(f, slot, cml_constant_scalar_f64(f, CML_DTYPE_F32, 101)));
  cml_value_t v =
      cml_op_convert_dtype(f,
                           cml_op_where(f, mine, cml_constant_scalar_f64(f, CML_DTYPE_F32, 2048),
                                        cml_constant_scalar_f64(f, CML_DTYPE_F32, 1)),
                           CML_DTYPE_F16);
  cml_value_t low = cml_op_less_than(f, x, cml_constant_scalar_f64(f, CML_DTYPE_F32, 200));
  cml_value_t p =
      cml_op_convert_dtype(f,
                           cml_op_where(f, low, cml_constant_scalar_f64(f, CML_DTYPE_F32, 256),
                                        cml_constant_scalar_f64(f, CML_DTYPE_F32, 1.0 / 256)),
                           CML_DTYPE_F16);
  cml_value_t sum, prod;
  if (!cml_op_all_reduce(f, &v, 1, CML_REDUCE_SUM, NULL, &sum)) return false;
  if (!cml_op_all_reduce(f, &p, 1, CML_REDUCE_PRODUCT, NULL, &prod)) return false;
  o[0] = cml_op_convert_dtype(f, sum, CML_DTYPE_F32);
  o[1] =
      cml_op_convert_dtype(f, cml_op_reduce_scatter(f, v, CML_REDUCE_SUM, 0, NULL), CML_DTYPE_F32);
  o[2] = cml_op_convert_dtype(f, prod, CML_DTYPE_F32);
  return o[0] && o[1] && o[2];
}

TEST(half_sums_and_products_round_once) {
  float got[4][6][8];
  int devices[4];
  static const size_t kBytes[3] = {16, 4, 16};
  ASSERT_STATUS_OK(run_spmd(body_half_sums, 3, kBytes, NULL, got, devices));
  for (int d = 0; d < 4; ++d) {
    for (int i = 0; i < 4; ++i) ASSERT_EQ_DBL(got[d][0][i], 2052);
    ASSERT_EQ_DBL(got[d][1][0], 2052);
    for (int i = 0; i < 4; ++i) ASSERT_EQ_DBL(got[d][2][i], 1);
  }
}

// Int32 AllReduce (min) and AllGather, and a Bool CollectiveBroadcast from slot 0.
TEST(int_and_bool_collectives) {
  float got[4][6][8];
  int devices[4];
  static const size_t kBytes[3] = {16, 16, 32};
  ASSERT_STATUS_OK(run_spmd(body_int_and_bool, 3, kBytes, NULL, got, devices));
  for (int d = 0; d < 4; ++d) {
    int first = d < 2 ? 0 : 2;
    for (int i = 0; i < 4; ++i) {
      ASSERT_EQ_DBL(got[d][0][i], i);      // min over the slots: slot 0's values
      ASSERT_EQ_DBL(got[d][1][i], i < 2);  // slot 0's mask
    }
    for (int i = 0; i < 8; ++i) ASSERT_EQ_DBL(got[d][2][i], 100 * (first + i / 4) + i % 4);
  }
}

// AllReduce and ReduceScatter Max/Min of floats propagate NaN and order -0 < +0, as on c: slot j
// holds column j of
//   [1, NaN, 2, 0], [-0, +0, -0, -0], [+0, -0, -0, -0], [-3, -1, -2, -inf]
// (element i of slot j is kCols[i][j]); also as BFloat16.
static const float kCols[4][4] = {{1, NAN, 2, 0},
                                  {-0.0f, 0.0f, -0.0f, -0.0f},
                                  {0.0f, -0.0f, -0.0f, -0.0f},
                                  {-3, -1, -2, -INFINITY}};

static bool body_max_min(cml_function_t* f, cml_value_t x, cml_value_t* o) {
  cml_value_t h = cml_op_convert_dtype(f, x, CML_DTYPE_BF16);
  bool ok = cml_op_all_reduce(f, &x, 1, CML_REDUCE_MAX, NULL, &o[0]) &&
            cml_op_all_reduce(f, &x, 1, CML_REDUCE_MIN, NULL, &o[1]) &&
            cml_op_all_reduce(f, &h, 1, CML_REDUCE_MAX, NULL, &o[2]) &&
            cml_op_all_reduce(f, &h, 1, CML_REDUCE_MIN, NULL, &o[3]);
  if (!ok) return false;
  o[2] = cml_op_convert_dtype(f, o[2], CML_DTYPE_F32);
  o[3] = cml_op_convert_dtype(f, o[3], CML_DTYPE_F32);
  o[4] = cml_op_reduce_scatter(f, x, CML_REDUCE_MAX, 0, NULL);
  o[5] = cml_op_reduce_scatter(f, x, CML_REDUCE_MIN, 0, NULL);
  for (int i = 0; i < 6; ++i) {
    if (o[i] == CML_VALUE_INVALID) return false;
  }
  return true;
}

// Whether |got| is |want| with the same sign of zero (NaN: any NaN).
static bool same_float(float got, float want) {
  if (isnan(want)) return isnan(got);
  return got == want && signbit(got) == signbit(want);
}

TEST(all_reduce_max_min_nan_and_zeros) {
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(g_backend, "max_min", &b));
  ASSERT_STATUS_OK(cml_builder_spmd(b, 4));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t xs = SHAPE(CML_DTYPE_F32, 4);
  cml_value_t x = cml_parameter(f, "x", &xs);
  cml_value_t outs[6];
  ASSERT_TRUE(body_max_min(f, x, outs));
  ASSERT_STATUS_OK(cml_function_return(f, outs, 6));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(cml_builder_compile(b, &exe));
  cml_builder_destroy(b);
  float host[4][4];
  cml_shape_t shapes[4];
  const void* data[4];
  for (int j = 0; j < 4; ++j) {
    for (int i = 0; i < 4; ++i) host[j][i] = kCols[i][j];
    shapes[j] = xs;
    data[j] = host[j];
  }
  cml_buffer_t* ins[4];
  cml_buffer_t* res[24] = {NULL};
  cml_status_t st = upload(4, NULL, 1, shapes, data, ins);
  if (st == CML_OK) st = cml_executable_execute(exe, ins, 4, NULL, 0, res);
  ASSERT_STATUS_OK(st);
  const float want_max[4] = {NAN, 0.0f, 0.0f, -1};
  const float want_min[4] = {NAN, -0.0f, -0.0f, -INFINITY};
  for (int j = 0; j < 4; ++j) {
    float got[6][4];
    for (int k = 0; k < 6; ++k) {
      ASSERT_STATUS_OK(cml_buffer_copy_to_host(res[j * 6 + k], got[k], k < 4 ? 16 : 4));
    }
    for (int i = 0; i < 4; ++i) {
      ASSERT_TRUE(same_float(got[0][i], want_max[i]));
      ASSERT_TRUE(same_float(got[1][i], want_min[i]));
      ASSERT_TRUE(same_float(got[2][i], want_max[i]));
      ASSERT_TRUE(same_float(got[3][i], want_min[i]));
    }
    ASSERT_TRUE(same_float(got[4][0], want_max[j]));  // slot j keeps element j
    ASSERT_TRUE(same_float(got[5][0], want_min[j]));
  }
  release_all(ins, 4);
  release_all(res, 24);
  cml_executable_release(exe);
}

// AllGather and ReduceScatter along a zero-size axis: an empty result, no collective (StableHLO
// refuses a zero dimension there); an AllReduce of the same program still communicates.
TEST(empty_all_gather_and_reduce_scatter) {
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(g_backend, "empty", &b));
  ASSERT_STATUS_OK(cml_builder_spmd(b, 4));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t es = SHAPE(CML_DTYPE_F32, 0, 2), xs = SHAPE(CML_DTYPE_F32, 2);
  cml_value_t e = cml_parameter(f, "e", &es);
  cml_value_t x = cml_parameter(f, "x", &xs);
  cml_value_t outs[4];
  outs[0] = cml_op_all_gather(f, e, 0, NULL);
  outs[1] = cml_op_reduce_scatter(f, e, CML_REDUCE_SUM, 0, NULL);
  outs[2] = cml_op_all_gather(f, cml_op_convert_dtype(f, e, CML_DTYPE_BF16), 0, NULL);
  ASSERT_TRUE(cml_op_all_reduce(f, &x, 1, CML_REDUCE_SUM, NULL, &outs[3]));
  ASSERT_STATUS_OK(cml_function_return(f, outs, 4));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(cml_builder_compile(b, &exe));
  cml_builder_destroy(b);
  float host[4][2];
  cml_shape_t shapes[8];
  const void* data[8];
  for (int j = 0; j < 4; ++j) {
    host[j][0] = (float)j;
    host[j][1] = (float)(10 * j);
    shapes[2 * j] = es;
    shapes[2 * j + 1] = xs;
    data[2 * j] = host[j];  // no bytes are read for the empty shape
    data[2 * j + 1] = host[j];
  }
  cml_buffer_t* ins[8];
  cml_buffer_t* res[16] = {NULL};
  cml_status_t st = upload(4, NULL, 2, shapes, data, ins);
  if (st == CML_OK) st = cml_executable_execute(exe, ins, 8, NULL, 0, res);
  ASSERT_STATUS_OK(st);
  for (int j = 0; j < 4; ++j) {
    for (int k = 0; k < 3; ++k) {
      const cml_shape_t* rs = cml_buffer_shape(res[j * 4 + k]);
      ASSERT_EQ_INT(rs->rank, 2);
      ASSERT_EQ_INT(rs->dims[0], 0);
      ASSERT_EQ_INT(rs->dims[1], 2);
    }
    float sum[2];
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(res[j * 4 + 3], sum, sizeof sum));
    ASSERT_EQ_DBL(sum[0], 6);
    ASSERT_EQ_DBL(sum[1], 60);
  }
  release_all(ins, 8);
  release_all(res, 16);
  cml_executable_release(exe);
}

//===--- AutoSharding (Shardy) ---===//

// Runs an AutoSharding module built by |build| (which returns its outputs itself) with
// |n_in| inputs per slot; the caller's |data|/|shapes| are device-major. Output k of slot d goes
// to got[d * n_out + k] (|out_bytes[k]| bytes).
typedef bool (*sharded_build_fn)(cml_builder_t* b, cml_function_t* f, const cml_mesh_t* mesh);
static cml_status_t run_sharded(const cml_mesh_t* mesh, const int32_t* assign,
                                sharded_build_fn build, size_t n_in, const cml_shape_t* shapes,
                                const void* const* data, size_t n_out, const size_t* out_bytes,
                                float (*got)[32], int* out_devices, cml_executable_t** keep) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(g_backend, "sharded", &b));
  cml_status_t st = cml_builder_auto_sharding(b, &mesh, 1);
  if (st == CML_OK && assign) st = cml_builder_device_assignment(b, assign, 4);
  cml_function_t* f = cml_builder_main(b);
  if (st == CML_OK && !build(b, f, mesh)) st = cml_builder_status(b);
  cml_executable_t* exe = NULL;
  if (st == CML_OK) st = cml_builder_compile(b, &exe);
  cml_builder_destroy(b);
  if (st != CML_OK) return st;
  cml_buffer_t* ins[16] = {NULL};
  cml_buffer_t* res[16] = {NULL};
  st = upload(4, assign, n_in, shapes, data, ins);
  if (st == CML_OK) st = cml_executable_execute(exe, ins, 4 * n_in, NULL, 0, res);
  for (size_t i = 0; i < 4 * n_out && st == CML_OK; ++i) {
    st = cml_buffer_copy_to_host(res[i], got[i], out_bytes[i % n_out]);
    out_devices[i] = cml_buffer_device(res[i]);
  }
  release_all(ins, 4 * n_in);
  release_all(res, 4 * n_out);
  if (keep && st == CML_OK) {
    *keep = exe;
  } else {
    cml_executable_release(exe);
  }
  return st;
}

// Data parallel: x [8, 3] split by rows over "data" (4), w [3, 2] replicated; y = x w stays
// split (2 rows a slot), g = x^T y is a contraction over the split rows: XLA inserts the
// all-reduce, every slot gets the whole g.
static bool build_data_parallel(cml_builder_t* b, cml_function_t* f, const cml_mesh_t* mesh) {
  cml_sharding_t rows, none;
  if (cml_sharding_make(mesh, (const char*[]){"data"}, 1, &rows) != CML_OK) return false;
  memset(&none, 0, sizeof none);
  cml_shape_t xs = SHAPE(CML_DTYPE_F32, 8, 3), ws = SHAPE(CML_DTYPE_F32, 3, 2);
  cml_value_t x = cml_parameter_sharded(f, "x", &xs, &rows);
  cml_value_t w = cml_parameter_sharded(f, "w", &ws, NULL);
  cml_value_t y = cml_op_dot(f, x, w);
  cml_value_t g = cml_op_dot(f, cml_op_transpose(f, x, (int64_t[]){1, 0}, 2), y);
  cml_value_t outs[2] = {y, g};
  cml_sharding_t specs[2] = {rows, none};
  (void)b;
  return cml_function_return_sharded(f, outs, 2, specs) == CML_OK;
}

TEST(auto_sharding_data_parallel) {
  cml_mesh_t* mesh = NULL;
  ASSERT_STATUS_OK(cml_mesh_create("dp", (const char*[]){"data"}, (int64_t[]){4}, 1, &mesh));
  float x[8][3], w[3][2], y[8][2], g[3][2];
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 3; ++j) x[i][j] = (float)((i * 3 + j) % 5 - 2);
  }
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 2; ++j) w[i][j] = (float)(i - j + 1);
  }
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 2; ++j) {
      y[i][j] = 0;
      for (int k = 0; k < 3; ++k) y[i][j] += x[i][k] * w[k][j];
    }
  }
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 2; ++j) {
      g[i][j] = 0;
      for (int k = 0; k < 8; ++k) g[i][j] += x[k][i] * y[k][j];
    }
  }
  cml_shape_t shapes[8];
  const void* data[8];
  for (int d = 0; d < 4; ++d) {
    shapes[2 * d] = SHAPE(CML_DTYPE_F32, 2, 3);  // the shard
    shapes[2 * d + 1] = SHAPE(CML_DTYPE_F32, 3, 2);
    data[2 * d] = x[2 * d];
    data[2 * d + 1] = w;
  }
  float got[8][32];
  int devices[8];
  static const size_t kBytes[2] = {16, 24};
  cml_executable_t* exe = NULL;
  cml_status_t st =
      run_sharded(mesh, NULL, build_data_parallel, 2, shapes, data, 2, kBytes, got, devices, &exe);
  cml_mesh_destroy(mesh);
  ASSERT_STATUS_OK(st);
  // The executable's shapes are per device: the shards.
  ASSERT_EQ_INT(cml_executable_input_shape(exe, 0)->dims[0], 2);
  ASSERT_EQ_INT(cml_executable_output_shape(exe, 0)->dims[0], 2);
  ASSERT_EQ_INT(cml_executable_output_shape(exe, 1)->dims[0], 3);
  cml_executable_release(exe);
  for (int d = 0; d < 4; ++d) {
    for (int i = 0; i < 4; ++i) ASSERT_EQ_DBL(got[2 * d][i], y[2 * d + i / 2][i % 2]);
    for (int i = 0; i < 6; ++i) ASSERT_EQ_DBL(got[2 * d + 1][i], g[i / 2][i % 2]);
    ASSERT_EQ_INT(devices[2 * d], d);
  }
}

// DynamicSlice under AutoSharding with the result split along the sliced axis: x [16, 4] split by
// rows, y = x[start : start + 4] split by rows too. Starts past 12 are clamped to 12 (XLA's
// partitioned slice skipped the clamp: start 13 read rows 13..16).
static bool build_dynamic_slice(cml_builder_t* b, cml_function_t* f, const cml_mesh_t* mesh) {
  (void)b;
  cml_sharding_t rows;
  if (cml_sharding_make(mesh, (const char*[]){"data"}, 1, &rows) != CML_OK) return false;
  cml_shape_t xs = SHAPE(CML_DTYPE_F32, 16, 4), ss = cml_shape_scalar(CML_DTYPE_I32);
  cml_value_t x = cml_parameter_sharded(f, "x", &xs, &rows);
  cml_value_t start = cml_parameter_sharded(f, "start", &ss, NULL);
  cml_value_t starts[2] = {start, cml_constant_scalar_i64(f, CML_DTYPE_I32, 0)};
  cml_value_t y = cml_op_dynamic_slice(f, x, starts, (const int64_t[]){4, 4}, 2);
  return cml_function_return_sharded(f, &y, 1, &rows) == CML_OK;
}

TEST(auto_sharding_dynamic_slice_clamps_its_start) {
  cml_mesh_t* mesh = NULL;
  ASSERT_STATUS_OK(cml_mesh_create("ds", (const char*[]){"data"}, (int64_t[]){4}, 1, &mesh));
  float x[16][4];
  for (int r = 0; r < 16; ++r) {
    for (int c = 0; c < 4; ++c) x[r][c] = (float)(10 * r + c);
  }
  for (int32_t start = 10; start < 16; ++start) {
    cml_shape_t shapes[8];
    const void* data[8];
    for (int d = 0; d < 4; ++d) {
      shapes[2 * d] = SHAPE(CML_DTYPE_F32, 4, 4);  // the shard
      shapes[2 * d + 1] = cml_shape_scalar(CML_DTYPE_I32);
      data[2 * d] = x[4 * d];
      data[2 * d + 1] = &start;
    }
    float got[4][32];
    int devices[4];
    static const size_t kBytes[1] = {16};
    ASSERT_STATUS_OK(run_sharded(mesh, NULL, build_dynamic_slice, 2, shapes, data, 1, kBytes, got,
                                 devices, NULL));
    const int first = start > 12 ? 12 : start;
    for (int d = 0; d < 4; ++d) {
      for (int c = 0; c < 4; ++c) ASSERT_EQ_DBL(got[d][c], 10 * (first + d) + c);
    }
  }
  cml_mesh_destroy(mesh);
}

//===--- ops XLA's partitioner gets wrong when split (docs/robustness.md, finding 100) ---===//

// Parameter specs and the result spec of one program on the mesh {a: 2, b: 2}: one string per
// axis, "" replicated, "a" / "b" that mesh axis.
typedef struct trap_specs_t {
  const char* in[2][4];
  const char* out[4];
} trap_specs_t;

static bool trap_sharding(const cml_mesh_t* mesh, const char* const* axes, int32_t rank,
                          cml_sharding_t* s) {
  return cml_sharding_make(mesh, axes, (size_t)rank, s) == CML_OK;
}

// The program of |which| on |f|: its |n_in| parameters (shapes |in|) and one result; the
// specs when |mesh| is set (AutoSharding), plain otherwise.
static bool trap_program(int which, cml_function_t* f, const cml_mesh_t* mesh,
                         const trap_specs_t* sp, const cml_shape_t* in, int n_in) {
  cml_value_t p[2];
  for (int i = 0; i < n_in; ++i) {
    cml_sharding_t s;
    if (mesh && !trap_sharding(mesh, sp->in[i], in[i].rank, &s)) return false;
    p[i] = cml_parameter_sharded(f, i ? "b" : "a", &in[i], mesh ? &s : NULL);
  }
  cml_value_t y;
  if (which == 0) {  // NHWC 3x3 conv, stride 2 on H, padding 1 on W
    cml_conv_config_t cc;
    cml_conv_config_init(&cc, 2, CML_CONV_LAYOUT_CHANNELS_LAST);
    cc.strides[0] = 2;
    cc.padding_low[1] = cc.padding_high[1] = 1;
    y = cml_op_conv_general(f, p[0], p[1], &cc);
  } else if (which == 1) {  // update [4, 4] at (0, -1): the start clamps to (0, 0)
    cml_value_t starts[2] = {cml_constant_scalar_i64(f, CML_DTYPE_I32, 0),
                             cml_constant_scalar_i64(f, CML_DTYPE_I32, -1)};
    y = cml_op_dynamic_update_slice(f, p[0], p[1], starts, 2);
  } else if (which == 2) {  // ScatterSum of ones at the first 3 columns of split ids
    cml_value_t idx =
        cml_op_slice(f, p[0], (const int64_t[]){0, 0}, (const int64_t[]){4, 3}, NULL, 2);
    cml_scatter_dims_t sd;
    memset(&sd, 0, sizeof sd);
    sd.index_vector_axis = 2;
    sd.update_window_axis_count = 1;
    sd.update_window_axes[0] = 2;
    sd.inserted_window_axis_count = 1;
    sd.scatter_axes_to_operand_axes_count = 1;
    cml_value_t zeros = cml_op_broadcast_in_dim(f, cml_constant_scalar_f64(f, CML_DTYPE_F32, 0),
                                                (const int64_t[]){16, 4}, 2, NULL, 0);
    cml_value_t ones = cml_op_broadcast_in_dim(f, cml_constant_scalar_f64(f, CML_DTYPE_F32, 1),
                                               (const int64_t[]){4, 3, 4}, 3, NULL, 0);
    y = cml_op_scatter_sum(f, zeros, idx, ones, &sd);
  } else {  // Pad of axis 1: low -1, high 1, interior 1
    const cml_pad_axis_t axes[2] = {{0, 0, 0}, {-1, 1, 1}};
    y = cml_op_pad(f, p[0], cml_constant_scalar_f64(f, CML_DTYPE_F32, 7), axes, 2);
  }
  if (!mesh) return cml_function_return(f, &y, 1) == CML_OK;
  cml_sharding_t so;
  return trap_sharding(mesh, sp->out, which == 0 ? 4 : 2, &so) &&
         cml_function_return_sharded(f, &y, 1, &so) == CML_OK;
}

// Runs program |which| on one device of g_backend and under AutoSharding over 4, and returns
// how many of the result's |count| values differ (-1 when a step failed).
static int64_t trap_differences(int which, const trap_specs_t* sp, const cml_shape_t* in,
                                const float* const* data, int n_in, int64_t count) {
  cml_mesh_t* mesh = NULL;
  if (cml_mesh_create("m", (const char*[]){"a", "b"}, (const int64_t[]){2, 2}, 2, &mesh) != CML_OK)
    return -1;
  float* want = calloc((size_t)count, sizeof(float));
  float* got = calloc((size_t)count, sizeof(float));
  int64_t bad = -1;
  cml_executable_t* e[2] = {NULL, NULL};
  cml_buffer_t* one_in[2] = {NULL, NULL};
  cml_buffer_t* one_out = NULL;
  cml_dtensor_t* dts[2] = {NULL, NULL};
  cml_dtensor_t* dout = NULL;
  cml_buffer_t* ins[8] = {NULL};
  cml_buffer_t* outs[4] = {NULL};
  bool ok = want && got;
  for (int k = 0; k < 2 && ok; ++k) {
    cml_builder_t* b = NULL;
    ok = cml_builder_create(g_backend, "trap", &b) == CML_OK;
    const cml_mesh_t* meshes[1] = {mesh};
    if (ok && k == 1) ok = cml_builder_auto_sharding(b, meshes, 1) == CML_OK;
    ok = ok && trap_program(which, cml_builder_main(b), k ? mesh : NULL, sp, in, n_in) &&
         cml_builder_compile(b, &e[k]) == CML_OK;
    cml_builder_destroy(b);
  }
  for (int i = 0; i < n_in && ok; ++i) {
    const size_t bytes = (size_t)cml_shape_element_count(&in[i]) * sizeof(float);
    ok = cml_buffer_from_host(g_backend, 0, &in[i], data[i], bytes, &one_in[i]) == CML_OK &&
         cml_dtensor_from_host(g_backend, cml_executable_input_sharding(e[1], (size_t)i), &in[i],
                               data[i], bytes, NULL, &dts[i]) == CML_OK;
  }
  if (ok) ok = cml_executable_execute(e[0], one_in, (size_t)n_in, NULL, 0, &one_out) == CML_OK;
  if (ok) ok = cml_buffer_copy_to_host(one_out, want, (size_t)count * sizeof(float)) == CML_OK;
  for (int j = 0; j < 4 && ok; ++j) {
    for (int i = 0; i < n_in; ++i) ins[j * n_in + i] = cml_dtensor_shard(dts[i], (size_t)j);
  }
  if (ok) ok = cml_executable_execute(e[1], ins, 4 * (size_t)n_in, NULL, 0, outs) == CML_OK;
  if (ok) {
    ok = cml_dtensor_from_shards(cml_executable_output_sharding(e[1], 0), outs, 4, &dout) ==
             CML_OK &&
         cml_dtensor_to_host(dout, got, (size_t)count * sizeof(float)) == CML_OK;
  }
  if (ok) {
    bad = 0;
    for (int64_t i = 0; i < count; ++i) bad += want[i] != got[i];
  }
  cml_dtensor_destroy(dout);
  release_all(outs, 4);
  for (int i = 0; i < 2; ++i) cml_dtensor_destroy(dts[i]);
  release_all(one_in, 2);
  cml_buffer_release(one_out);
  for (int k = 0; k < 2; ++k) cml_executable_release(e[k]);
  free(want), free(got);
  cml_mesh_destroy(mesh);
  return bad;
}

// Each program gave wrong values or ended the process under Shardy before the emitter kept
// the axes concerned unsplit (or clamped the starts): a convolution with x split along W and
// the kernel along its input channels (every output doubled), a DynamicUpdateSlice at a
// negative start with the result split (the update lost), a ScatterSum whose indices are a
// Slice of split ids (updates added twice), a Pad with interior and negative padding of a
// split axis (a failed CHECK: the process ended).
TEST(auto_sharding_partitioner_traps_give_one_device_values) {
  float x[4 * 6 * 6 * 2], k[3 * 3 * 2 * 4], m[64], u[16], pad_in[32];
  for (int i = 0; i < 288; ++i) x[i] = (float)((i * 7) % 13 - 6);
  for (int i = 0; i < 72; ++i) k[i] = (float)((i * 5) % 7 - 3);
  for (int i = 0; i < 64; ++i) m[i] = (float)i;
  for (int i = 0; i < 16; ++i) u[i] = (float)(100 + i);
  for (int i = 0; i < 32; ++i) pad_in[i] = (float)(i + 1);
  int32_t id32[32];
  for (int i = 0; i < 32; ++i) id32[i] = (i * 5) % 16;
  const trap_specs_t conv = {{{"", "", "a", ""}, {"", "", "a", ""}}, {"", "b", "", ""}};
  const cml_shape_t conv_in[2] = {cml_shape_make(CML_DTYPE_F32, 4, (const int64_t[]){4, 6, 6, 2}),
                                  cml_shape_make(CML_DTYPE_F32, 4, (const int64_t[]){3, 3, 2, 4})};
  ASSERT_EQ_INT(trap_differences(0, &conv, conv_in, (const float* const[]){x, k}, 2, 4 * 2 * 6 * 4),
                0);
  const trap_specs_t dus = {{{"", ""}, {"", ""}}, {"", "b"}};
  const cml_shape_t dus_in[2] = {cml_shape_make(CML_DTYPE_F32, 2, (const int64_t[]){8, 8}),
                                 cml_shape_make(CML_DTYPE_F32, 2, (const int64_t[]){4, 4})};
  ASSERT_EQ_INT(trap_differences(1, &dus, dus_in, (const float* const[]){m, u}, 2, 64), 0);
  const trap_specs_t scatter = {{{"", "a"}}, {"", ""}};
  const cml_shape_t scatter_in[1] = {cml_shape_make(CML_DTYPE_I32, 2, (const int64_t[]){4, 8})};
  ASSERT_EQ_INT(
      trap_differences(2, &scatter, scatter_in, (const float* const[]){(const float*)id32}, 1, 64),
      0);
  const trap_specs_t pad = {{{"", "a"}}, {"", ""}};
  const cml_shape_t pad_shape[1] = {cml_shape_make(CML_DTYPE_F32, 2, (const int64_t[]){4, 8})};
  ASSERT_EQ_INT(trap_differences(3, &pad, pad_shape, (const float* const[]){pad_in}, 1, 60), 0);
}

// A shared buffer copied to another device: the copy holds the values of the moment of the
// call, and the source can be written or released right after it (the CPU plugin's copy ran on
// in the background: the copy read later writes, and a released source's freed memory).
TEST(shared_buffer_copy_to_device_completes_before_returning) {
  const int64_t n = 4 << 20;  // 16 MiB of Float32: long enough for a background copy
  cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 1, &n);
  float* check = malloc((size_t)n * sizeof(float));
  ASSERT_TRUE(check != NULL);
  for (int round = 0; round < 3; ++round) {
    cml_buffer_t* shared = NULL;
    void* data = NULL;
    ASSERT_STATUS_OK(cml_buffer_create_shared(g_backend, 0, &s, &shared, &data));
    float* f = data;
    for (int64_t i = 0; i < n; ++i) f[i] = 1.0f;
    cml_buffer_t* copy = NULL;
    ASSERT_STATUS_OK(cml_buffer_copy_to_device(shared, 1, &copy));
    for (int64_t i = 0; i < n; ++i) f[i] = 2.0f;
    cml_buffer_release(shared);
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(copy, check, (size_t)n * sizeof(float)));
    int64_t differ = 0;
    for (int64_t i = 0; i < n; ++i) differ += check[i] != 1.0f;
    ASSERT_EQ_INT(differ, 0);
    cml_buffer_release(copy);
  }
  free(check);
}

// Megatron MLP (1-D tensor parallel): x [2, 4] replicated, W1 [4, 8] split by columns, relu,
// W2 [8, 4] split by rows, the result replicated: XLA inserts one all-reduce at the end.
static bool build_megatron(cml_builder_t* b, cml_function_t* f, const cml_mesh_t* mesh) {
  cml_sharding_t cols, rows, none;
  if (cml_sharding_make(mesh, (const char*[]){NULL, "model"}, 2, &cols) != CML_OK ||
      cml_sharding_make(mesh, (const char*[]){"model", NULL}, 2, &rows) != CML_OK) {
    return false;
  }
  memset(&none, 0, sizeof none);
  cml_shape_t xs = SHAPE(CML_DTYPE_F32, 2, 4), w1s = SHAPE(CML_DTYPE_F32, 4, 8),
              w2s = SHAPE(CML_DTYPE_F32, 8, 4);
  cml_value_t x = cml_parameter_sharded(f, "x", &xs, NULL);
  cml_value_t w1 = cml_parameter_sharded(f, "w1", &w1s, &cols);
  cml_value_t w2 = cml_parameter_sharded(f, "w2", &w2s, &rows);
  cml_value_t h = cml_op_max(f, cml_op_dot(f, x, w1), cml_constant_scalar_f64(f, CML_DTYPE_F32, 0));
  cml_value_t out = cml_op_dot(f, h, w2);
  (void)b;
  return cml_function_return_sharded(f, &out, 1, &none) == CML_OK;
}

// The same MLP as one plain single-device module on device 0 (the reference).
static cml_status_t run_mlp_single_device(const float* x, const float* w1, const float* w2,
                                          float* out) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(g_backend, "mlp", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t xs = SHAPE(CML_DTYPE_F32, 2, 4), w1s = SHAPE(CML_DTYPE_F32, 4, 8),
              w2s = SHAPE(CML_DTYPE_F32, 8, 4);
  cml_value_t xv = cml_parameter(f, "x", &xs);
  cml_value_t w1v = cml_parameter(f, "w1", &w1s);
  cml_value_t w2v = cml_parameter(f, "w2", &w2s);
  cml_value_t h =
      cml_op_max(f, cml_op_dot(f, xv, w1v), cml_constant_scalar_f64(f, CML_DTYPE_F32, 0));
  cml_value_t y = cml_op_dot(f, h, w2v);
  cml_status_t st = cml_builder_status(b);
  if (st == CML_OK) st = cml_function_return(f, &y, 1);
  cml_executable_t* exe = NULL;
  if (st == CML_OK) st = cml_builder_compile(b, &exe);
  cml_builder_destroy(b);
  if (st != CML_OK) return st;
  cml_shape_t shapes[3] = {xs, w1s, w2s};
  const void* data[3] = {x, w1, w2};
  cml_buffer_t* ins[3];
  cml_buffer_t* res[1] = {NULL};
  st = upload(1, NULL, 3, shapes, data, ins);
  if (st == CML_OK) st = cml_executable_execute(exe, ins, 3, NULL, 0, res);
  if (st == CML_OK) st = cml_buffer_copy_to_host(res[0], out, 8 * sizeof(float));
  release_all(ins, 3);
  release_all(res, 1);
  cml_executable_release(exe);
  return st;
}

TEST(auto_sharding_megatron_mlp) {
  cml_mesh_t* mesh = NULL;
  ASSERT_STATUS_OK(cml_mesh_create("mp", (const char*[]){"model"}, (int64_t[]){4}, 1, &mesh));
  float x[2][4], w1[4][8], w2[8][4], want[2][4];
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 4; ++j) x[i][j] = (float)(i + j - 2);
  }
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 8; ++j) w1[i][j] = (float)((i * 8 + j) % 7 - 3);
  }
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 4; ++j) w2[i][j] = (float)((i + 2 * j) % 5 - 2);
  }
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 4; ++j) {
      want[i][j] = 0;
      for (int k = 0; k < 8; ++k) {
        float h = 0;
        for (int q = 0; q < 4; ++q) h += x[i][q] * w1[q][k];
        want[i][j] += (h > 0 ? h : 0) * w2[k][j];
      }
    }
  }
  // Shards: slot d holds columns 2d..2d+1 of W1 and rows 2d..2d+1 of W2.
  float w1_shard[4][4][2];
  for (int d = 0; d < 4; ++d) {
    for (int i = 0; i < 4; ++i) {
      for (int j = 0; j < 2; ++j) w1_shard[d][i][j] = w1[i][2 * d + j];
    }
  }
  cml_shape_t shapes[12];
  const void* data[12];
  for (int d = 0; d < 4; ++d) {
    shapes[3 * d] = SHAPE(CML_DTYPE_F32, 2, 4);
    shapes[3 * d + 1] = SHAPE(CML_DTYPE_F32, 4, 2);
    shapes[3 * d + 2] = SHAPE(CML_DTYPE_F32, 2, 4);
    data[3 * d] = x;
    data[3 * d + 1] = w1_shard[d];
    data[3 * d + 2] = w2[2 * d];
  }
  float got[4][32];
  int devices[4];
  static const size_t kBytes[1] = {32};
  cml_status_t st =
      run_sharded(mesh, NULL, build_megatron, 3, shapes, data, 1, kBytes, got, devices, NULL);
  cml_mesh_destroy(mesh);
  ASSERT_STATUS_OK(st);
  // The single-device module computes the same values.
  float single[8];
  ASSERT_STATUS_OK(run_mlp_single_device(&x[0][0], &w1[0][0], &w2[0][0], single));
  for (int i = 0; i < 8; ++i) ASSERT_EQ_DBL(single[i], want[i / 4][i % 4]);
  for (int d = 0; d < 4; ++d) {
    for (int i = 0; i < 8; ++i) ASSERT_EQ_DBL(got[d][i], want[i / 4][i % 4]);
  }
}

// A mesh with a logical device assignment: mesh position k is run by slot ids[k] (Shardy's
// device_ids), and the slots by a permuted physical assignment: slot s on device phys[s].
static bool build_scaled(cml_builder_t* b, cml_function_t* f, const cml_mesh_t* mesh) {
  cml_sharding_t split, none;
  if (cml_sharding_make(mesh, (const char*[]){"x"}, 1, &split) != CML_OK) return false;
  memset(&none, 0, sizeof none);
  cml_shape_t vs = SHAPE(CML_DTYPE_F32, 4);
  cml_value_t v = cml_parameter_sharded(f, "v", &vs, &split);
  cml_value_t outs[2] = {cml_op_mul(f, v, cml_constant_scalar_f64(f, CML_DTYPE_F32, 2)),
                         CML_VALUE_INVALID};
  outs[1] = cml_op_reduce_sum(f, v, (int64_t[]){0}, 1);
  cml_sharding_t specs[2] = {split, none};
  (void)b;
  return cml_function_return_sharded(f, outs, 2, specs) == CML_OK;
}

TEST(auto_sharding_mesh_and_slot_assignments) {
  static const int32_t kLogical[4] = {1, 0, 3, 2};
  static const int32_t kPhysical[4] = {2, 3, 0, 1};
  cml_mesh_t* mesh = NULL;
  ASSERT_STATUS_OK(cml_mesh_create("perm", (const char*[]){"x"}, (int64_t[]){4}, 1, &mesh));
  cml_status_t st = cml_mesh_set_device_assignment(mesh, kLogical, 4);
  float v[4] = {1, 2, 3, 4};
  cml_shape_t shapes[4];
  const void* data[4];
  for (int k = 0; k < 4; ++k) {
    int slot = kLogical[k];
    shapes[slot] = SHAPE(CML_DTYPE_F32, 1);
    data[slot] = &v[k];
  }
  float got[8][32];
  int devices[8];
  static const size_t kBytes[2] = {4, 4};
  if (st == CML_OK) {
    st = run_sharded(mesh, kPhysical, build_scaled, 1, shapes, data, 2, kBytes, got, devices, NULL);
  }
  cml_mesh_destroy(mesh);
  ASSERT_STATUS_OK(st);
  for (int k = 0; k < 4; ++k) {
    int slot = kLogical[k];
    ASSERT_EQ_DBL(got[2 * slot][0], 2 * v[k]);
    ASSERT_EQ_DBL(got[2 * slot + 1][0], 10);
    ASSERT_EQ_INT(devices[2 * slot], kPhysical[slot]);
  }
}

// ReduceMax / ReduceMin over an axis split over 4 devices, in Float32 and BFloat16: XLA's
// partitioner combines the devices' results with an all-reduce of the reduction's region,
// which must compile (a region with NaN/-0 selects did not, and aborted the process for
// BFloat16), and the results keep cml's rules. x [8, 4] split by rows; its columns:
//   NaN in row 5; {-1, -0, -2, +0, -0, -3, -0, -5}; +0 but -0 in row 6; -0 but +0 in row 4.
static float g_reduce_x[8][4];

static bool build_reduce_max_min(cml_builder_t* b, cml_function_t* f, const cml_mesh_t* mesh) {
  cml_sharding_t rows;
  if (cml_sharding_make(mesh, (const char*[]){"data"}, 1, &rows) != CML_OK) return false;
  cml_shape_t xs = SHAPE(CML_DTYPE_F32, 8, 4);
  cml_value_t x = cml_parameter_sharded(f, "x", &xs, &rows);
  cml_value_t h = cml_op_convert_dtype(f, x, CML_DTYPE_BF16);
  int64_t axis0[1] = {0};
  cml_value_t outs[4] = {cml_op_reduce_max(f, x, axis0, 1), cml_op_reduce_min(f, x, axis0, 1),
                         cml_op_convert_dtype(f, cml_op_reduce_max(f, h, axis0, 1), CML_DTYPE_F32),
                         cml_op_convert_dtype(f, cml_op_reduce_min(f, h, axis0, 1), CML_DTYPE_F32)};
  (void)b;
  return cml_function_return_sharded(f, outs, 4, NULL) == CML_OK;
}

TEST(auto_sharding_reduce_max_min) {
  static const float kCol1[8] = {-1, -0.0f, -2, 0.0f, -0.0f, -3, -0.0f, -5};
  for (int r = 0; r < 8; ++r) {
    g_reduce_x[r][0] = r == 5 ? NAN : (float)r;
    g_reduce_x[r][1] = kCol1[r];
    g_reduce_x[r][2] = r == 6 ? -0.0f : 0.0f;
    g_reduce_x[r][3] = r == 4 ? 0.0f : -0.0f;
  }
  cml_mesh_t* mesh = NULL;
  ASSERT_STATUS_OK(cml_mesh_create("dp", (const char*[]){"data"}, (int64_t[]){4}, 1, &mesh));
  cml_shape_t shapes[4];
  const void* data[4];
  for (int d = 0; d < 4; ++d) {
    shapes[d] = SHAPE(CML_DTYPE_F32, 2, 4);
    data[d] = g_reduce_x[2 * d];
  }
  float got[16][32];
  int devices[16];
  static const size_t kBytes[4] = {16, 16, 16, 16};
  cml_status_t st =
      run_sharded(mesh, NULL, build_reduce_max_min, 1, shapes, data, 4, kBytes, got, devices, NULL);
  cml_mesh_destroy(mesh);
  ASSERT_STATUS_OK(st);
  const float want_max[4] = {NAN, 0.0f, 0.0f, 0.0f};
  const float want_min[4] = {NAN, -5, -0.0f, -0.0f};
  for (int d = 0; d < 4; ++d) {
    for (int i = 0; i < 4; ++i) {
      ASSERT_TRUE(same_float(got[4 * d][i], want_max[i]));
      ASSERT_TRUE(same_float(got[4 * d + 1][i], want_min[i]));
      ASSERT_TRUE(same_float(got[4 * d + 2][i], want_max[i]));
      ASSERT_TRUE(same_float(got[4 * d + 3][i], want_min[i]));
    }
  }
}

//===--- bad inputs ---===//

#define ASSERT_STATUS_MSG(expr, code, needle)                                                  \
  do {                                                                                         \
    cml_status_t m_ = (expr);                                                                  \
    if (cml_status_code(m_) != (code) || !strstr(cml_status_message(m_), (needle))) {          \
      fprintf(stderr, "%s:%d: want %s containing \"%s\", got %s: %s\n", __FILE__, __LINE__,    \
              cml_status_code_name(code), (needle), cml_status_code_name(cml_status_code(m_)), \
              cml_status_message(m_));                                                         \
      cml_status_free(m_);                                                                     \
      *test_failed_ = 1;                                                                       \
      return;                                                                                  \
    }                                                                                          \
    cml_status_free(m_);                                                                       \
  } while (0)

// Compiles a hand-built module on the backend directly (past the builder's own checks), so
// that the backend's checks are the ones that answer.
static cml_status_t compile_direct(cml_module_t* m) {
  cml_executable_t* exe = NULL;
  cml_status_t st = g_backend->vtable->compile(g_backend, m, &exe);
  if (exe) g_backend->vtable->executable_destroy(exe);
  return st;
}

// main(x: Float32[4]) = AllReduce(x) (or x itself when |collective| is false).
static bool make_module(chain_ir_t* ir, bool collective) {
  if (!chain_ir_alloc(ir, 1, 4)) return false;
  uint32_t x = chain_ir_param(ir, 0, "x");
  cml_shape_t xs = SHAPE(CML_DTYPE_F32, 4);
  ir->values[x].shape = xs;
  uint32_t r = x;
  if (collective) {
    static const int32_t kEvery[4] = {0, 1, 2, 3};
    r = chain_ir_node(ir, 0, CML_OP_ALL_REDUCE, &x, 1, &xs);
    ir->attrs[ir->values[r].node].reduce_type = CML_REDUCE_SUM;
    ir->attrs[ir->values[r].node].collective =
        (cml_ir_collective_attrs_t){.groups = kEvery, .group_count = 1, .group_size = 4};
  }
  chain_ir_return(ir, 0, r);
  return true;
}

TEST(bad_device_counts_and_assignments) {
  chain_ir_t ir;
  ASSERT_TRUE(make_module(&ir, true));
  ir.module.distribution = CML_DISTRIBUTION_SPMD;
  ir.module.num_devices = 8;
  static const int32_t kEight[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  ir.module.device_assignment = kEight;
  cml_status_t st = compile_direct(&ir.module);
  ir.module.num_devices = 4;
  static const int32_t kRepeated[4] = {0, 1, 1, 2};
  ir.module.device_assignment = kRepeated;
  cml_status_t st2 = compile_direct(&ir.module);
  static const int32_t kOut[4] = {0, 1, 2, 7};
  ir.module.device_assignment = kOut;
  cml_status_t st3 = compile_direct(&ir.module);
  ir.module.distribution = CML_DISTRIBUTION_NONE;
  ir.module.num_devices = 1;
  ir.module.device_assignment = NULL;
  cml_status_t st4 = compile_direct(&ir.module);
  chain_ir_destroy(&ir);
  ASSERT_STATUS_MSG(st, CML_STATUS_INVALID_ARGUMENT, "8 device slots");
  ASSERT_STATUS_MSG(st2, CML_STATUS_INVALID_ARGUMENT, "both run on device 1");
  ASSERT_STATUS_MSG(st3, CML_STATUS_OUT_OF_RANGE, "runs on device 7");
  ASSERT_STATUS_MSG(st4, CML_STATUS_INVALID_ARGUMENT, "not SPMD");
  // Through the builder: more slots than devices.
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(g_backend, "too_many", &b));
  cml_status_t st5 = cml_builder_spmd(b, 8);
  cml_builder_destroy(b);
  ASSERT_STATUS_CODE(st5, CML_STATUS_INVALID_ARGUMENT);
}

TEST(bad_shardings) {
  cml_mesh_t *four = NULL, *two = NULL;
  ASSERT_STATUS_OK(cml_mesh_create("four", (const char*[]){"x"}, (int64_t[]){4}, 1, &four));
  ASSERT_STATUS_OK(cml_mesh_create("two", (const char*[]){"y"}, (int64_t[]){2}, 1, &two));
  chain_ir_t ir;
  ASSERT_TRUE(make_module(&ir, false));
  static const int32_t kIds[4] = {0, 1, 2, 3};
  ir.module.distribution = CML_DISTRIBUTION_AUTO_SHARDING;
  ir.module.num_devices = 4;
  ir.module.device_assignment = kIds;
  // A 2-device mesh in a module partitioned over 4.
  const cml_mesh_t* meshes[2] = {four, two};
  ir.module.meshes = meshes;
  ir.module.mesh_count = 2;
  cml_status_t st = compile_direct(&ir.module);
  // 6 elements over 4 shards: XLA would drop the sharding; refused with the numbers.
  ir.module.mesh_count = 1;
  cml_sharding_t split;
  cml_status_t made = cml_sharding_make(four, (const char*[]){"x"}, 1, &split);
  cml_shape_t six = SHAPE(CML_DTYPE_F32, 6);
  ir.values[ir.functions[0].params[0]].shape = six;
  ir.module.param_shardings = &split;
  cml_status_t st2 = made == CML_OK ? compile_direct(&ir.module) : made;
  // A sharding on a mesh the module does not have.
  cml_sharding_t other;
  cml_status_t made2 = cml_sharding_make(two, (const char*[]){"y"}, 1, &other);
  ir.values[ir.functions[0].params[0]].shape = SHAPE(CML_DTYPE_F32, 4);
  ir.module.param_shardings = &other;
  cml_status_t st3 = made2 == CML_OK ? compile_direct(&ir.module) : made2;
  chain_ir_destroy(&ir);
  cml_mesh_destroy(four);
  cml_mesh_destroy(two);
  ASSERT_STATUS_MSG(st, CML_STATUS_INVALID_ARGUMENT, "mesh \"two\" has 2 devices");
  ASSERT_STATUS_MSG(st2, CML_STATUS_INVALID_ARGUMENT, "silently");
  ASSERT_STATUS_MSG(st3, CML_STATUS_INVALID_ARGUMENT, "not one of the module's meshes");
}

// Collectives (PartitionId included) in an AutoSharding module are refused, naming the op.
TEST(collectives_refused_under_auto_sharding) {
  cml_mesh_t* mesh = NULL;
  ASSERT_STATUS_OK(cml_mesh_create("m", (const char*[]){"x"}, (int64_t[]){4}, 1, &mesh));
  chain_ir_t ir;
  ASSERT_TRUE(make_module(&ir, true));
  static const int32_t kIds[4] = {0, 1, 2, 3};
  const cml_mesh_t* meshes[1] = {mesh};
  ir.module.distribution = CML_DISTRIBUTION_AUTO_SHARDING;
  ir.module.num_devices = 4;
  ir.module.device_assignment = kIds;
  ir.module.meshes = meshes;
  ir.module.mesh_count = 1;
  cml_status_t st = compile_direct(&ir.module);
  chain_ir_destroy(&ir);
  // Through the builder: PartitionId in auto-partitioned code.
  cml_builder_t* b = NULL;
  cml_status_t st2 = cml_builder_create(g_backend, "pid", &b);
  if (st2 == CML_OK) st2 = cml_builder_auto_sharding(b, meshes, 1);
  if (st2 == CML_OK) {
    cml_function_t* f = cml_builder_main(b);
    cml_value_t p = cml_op_partition_id(f);
    st2 = cml_builder_status(b);
    if (st2 == CML_OK) st2 = cml_function_return(f, &p, 1);
    cml_executable_t* exe = NULL;
    if (st2 == CML_OK) st2 = cml_builder_compile(b, &exe);
    cml_executable_release(exe);
  }
  cml_builder_destroy(b);
  cml_mesh_destroy(mesh);
  ASSERT_STATUS_MSG(st, CML_STATUS_INVALID_ARGUMENT, "AllReduce in an AutoSharding module");
  ASSERT_STATUS_MSG(st2, CML_STATUS_INVALID_ARGUMENT, "PartitionId");
}

int main(int argc, char** argv) {
  cml_xla_enable_auto_install(false);  // tests never download
  cml__xla_search_t search;
  cml__xla_search_from_env(&search);
  cml_status_t st = cml__xla_find_plugin(&search, "cpu", &g_plugin_path);
  if (st != CML_OK) {
    printf("skipped: no XLA CPU plugin installed (%s)\n", cml_status_message(st));
    cml_status_free(st);
    return 77;
  }
  st = cml_backend_new_with_config("xla:cpu,cpu_device_count=4", &g_backend);
  if (st != CML_OK) {
    fprintf(stderr, "xla:cpu,cpu_device_count=4: %s\n", cml_status_message(st));
    cml_status_free(st);
    free(g_plugin_path);
    return 1;
  }
  static const test_entry_t tests[] = {
      TEST_ENTRY(pjrt_all_reduce_identity_assignment),
      TEST_ENTRY(pjrt_all_reduce_permuted_assignment),
      TEST_ENTRY(pjrt_execute_more_devices_than_the_client),
      TEST_ENTRY(ir_all_reduce_groups),
      TEST_ENTRY(ir_all_gather_groups),
      TEST_ENTRY(ir_reduce_scatter_all),
      TEST_ENTRY(ir_all_to_all),
      TEST_ENTRY(ir_collective_permute_shift),
      TEST_ENTRY(ir_collective_broadcast_masked),
      TEST_ENTRY(capabilities_say_spmd_and_auto_sharding),
      TEST_ENTRY(all_reduce_mixed_dtypes_groups),
      TEST_ENTRY(each_collective_by_hand),
      TEST_ENTRY(device_assignment_permutations),
      TEST_ENTRY(half_sums_and_products_round_once),
      TEST_ENTRY(int_and_bool_collectives),
      TEST_ENTRY(all_reduce_max_min_nan_and_zeros),
      TEST_ENTRY(empty_all_gather_and_reduce_scatter),
      TEST_ENTRY(auto_sharding_data_parallel),
      TEST_ENTRY(auto_sharding_megatron_mlp),
      TEST_ENTRY(auto_sharding_mesh_and_slot_assignments),
      TEST_ENTRY(auto_sharding_reduce_max_min),
      TEST_ENTRY(bad_device_counts_and_assignments),
      TEST_ENTRY(bad_shardings),
      TEST_ENTRY(collectives_refused_under_auto_sharding),
      TEST_ENTRY(diverging_if_and_while_are_statuses_not_aborts),
      TEST_ENTRY(diverging_execution_leaves_donated_inputs_intact),
      TEST_ENTRY(auto_sharding_dynamic_slice_clamps_its_start),
      TEST_ENTRY(auto_sharding_partitioner_traps_give_one_device_values),
      TEST_ENTRY(shared_buffer_copy_to_device_completes_before_returning),
      TEST_ENTRY(agreeing_if_and_while_with_collectives_run),
  };
  int failures = 0, ran = 0;
  for (size_t i = 0; i < sizeof tests / sizeof tests[0]; ++i) {
    if (argc > 1 && strcmp(argv[1], tests[i].name) != 0) continue;
    int failed = 0;
    tests[i].fn(&failed);
    ++ran;
    printf("%s %s\n", failed ? "FAIL" : "ok  ", tests[i].name);
    failures += failed;
  }
  cml_backend_release(g_backend);
  free(g_plugin_path);
  printf("%d passed, %d failed, 0 skipped\n", ran - failures, failures);
  return (failures || ran == 0) ? 1 : 0;
}
