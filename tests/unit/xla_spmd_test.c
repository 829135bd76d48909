// SPDX-License-Identifier: Apache-2.0
// tests/unit/xla_spmd_test.c: the XLA backend on many devices, on the real CPU PJRT plugin with
// 4 devices (xla:cpu,cpu_device_count=4): the PJRT multi-device plumbing (compile options with
// a device assignment, argument lists per device slot), every collective with hand-computed
// values, AutoSharding (data parallel, Megatron) against single-device values, device
// assignment permutations, and bad inputs that must come back as statuses. Exits 77 (skipped)
// when no CPU plugin is installed (scripts/install_xla_plugin.sh or `cml install cpu`).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/xla/pjrt/pjrt.h"
#include "backends/xla/stablehlo/emitter.h"
#include "backends/xla/xla_internal.h"
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
  free(g_plugin_path);
  printf("%d passed, %d failed, 0 skipped\n", ran - failures, failures);
  return (failures || ran == 0) ? 1 : 0;
}
