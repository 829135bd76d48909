// SPDX-License-Identifier: Apache-2.0
// tests/mpi/xla_distributed_test.c: `xla:<plugin>,distributed=mpi` under `mpirun -np 2` and
// `-np 4`, with the fake multi-node PJRT plugin (tests/unit/xla_fake_plugin.c built with
// FAKE_PJRT_MULTI_NODE): at client creation every process puts its topology key and gets every
// other's through the key-value store served over MPI (checked on every process from the
// plugin's own log and the devices it reports), the client lists the job's devices with the
// local ones marked (cml_backend_process_info / cml_backend_device_is_local), another
// process's device is refused, an SPMD execution runs each process's own slots with a shared
// launch id; a get of a key nobody puts times out with a status; a plugin that ignores the node
// options and mismatched configurations are refused on every process.
//
// `xla_distributed_test cpu_plugin_refuses` (ctest label device): XLA's real CPU plugin
// refuses the options: UNIMPLEMENTED naming the plugin and the option (exit 77 without it).
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cml/backend_impl.h"
#include "cml/cml.h"
#include "test.h"

static int g_rank, g_size;

#if defined(CML_HAVE_BACKEND_XLA) && defined(XLA_FAKE_MULTINODE_PLUGIN_PATH)

static const char kFake[] = XLA_FAKE_MULTINODE_PLUGIN_PATH;

// The fake plugin gives node k 1 + k % 2 devices.
static int devices_of(int node) { return 1 + node % 2; }

static const char* fake_log(void) {
  void* handle = dlopen(kFake, RTLD_NOW | RTLD_NOLOAD);
  if (!handle) return NULL;
  const char* (*fn)(void) = NULL;
  void* sym = dlsym(handle, "fake_pjrt_kv_log");
  memcpy(&fn, &sym, sizeof fn);
  const char* log = fn ? fn() : NULL;
  dlclose(handle);
  return log;
}

static cml_status_t new_fake_backend(const char* extra, cml_backend_t** out) {
  char config[2048];
  snprintf(config, sizeof config, "xla:%s,distributed=mpi%s", kFake, extra ? extra : "");
  return cml_backend_new_with_config(config, out);
}

// Twice in a row: each backend has its own store (the second exchange must not see the first's
// keys, which would let a get succeed without the other process's put).
TEST(client_spans_every_process) {
  for (int round = 0; round < 2; ++round) {
    cml_backend_t* be = NULL;
    ASSERT_STATUS_OK(new_fake_backend(NULL, &be));
    int total = 0, first = 0;
    for (int k = 0; k < g_size; ++k) {
      if (k == g_rank) first = total;
      total += devices_of(k);
    }
    cml_process_info_t info;
    cml_backend_process_info(be, &info);
    ASSERT_EQ_INT(info.process_index, g_rank);
    ASSERT_EQ_INT(info.process_count, g_size);
    ASSERT_EQ_INT(info.first_local_device, first);
    ASSERT_EQ_INT(info.local_device_count, devices_of(g_rank));
    ASSERT_EQ_INT(cml_backend_device_count(be), total);
    for (int d = 0, owner = 0, seen = 0; d < total; ++d, ++seen) {
      if (seen == devices_of(owner)) ++owner, seen = 0;
      ASSERT_EQ_INT(cml_backend_device_is_local(be, d), owner == g_rank);
      char want[128];
      snprintf(want, sizeof want, "fake:%d (fake device, id %d, process %d)", d, 100 + d, owner);
      ASSERT_STREQ(cml_backend_device_description(be, d), want);
    }
    char over[64];
    snprintf(over, sizeof over, "over %d MPI processes (this is process %d", g_size, g_rank);
    ASSERT_CONTAINS(cml_backend_description(be), over);
    // What the plugin exchanged through the store: its put, the try-gets, every other node.
    const char* log = fake_log();
    ASSERT_TRUE(log != NULL);
    char part[96];
    snprintf(part, sizeof part, "node %d of %d: put fake_pjrt/topology/%d; try-get ok;", g_rank,
             g_size, g_rank);
    ASSERT_CONTAINS(log, part);
    for (int k = 0; k < g_size; ++k) {
      if (k == g_rank) continue;
      snprintf(part, sizeof part, " got node %d (%d devices);", k, devices_of(k));
      ASSERT_CONTAINS(log, part);
    }
    // Buffers live on local devices only.
    const int remote = (first + devices_of(g_rank)) % total;
    cml_shape_t shape;
    int64_t dims[1] = {2};
    ASSERT_STATUS_OK(cml_shape_init(&shape, CML_DTYPE_F32, 1, dims));
    float data[2] = {1, 2};
    cml_buffer_t* buf = NULL;
    cml_status_t st = cml_buffer_from_host(be, remote, &shape, data, sizeof data, &buf);
    ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_FAILED_PRECONDITION);
    snprintf(part, sizeof part, "device %d belongs to process %d", remote, (g_rank + 1) % g_size);
    ASSERT_CONTAINS(cml_status_message(st), part);
    cml_status_free(st);
    ASSERT_TRUE(buf == NULL);
    cml_backend_release(be);
  }
}

// y = x + x on |count| device slots assigned to |devices|.
static cml_status_t build_spmd(cml_backend_t* be, const int32_t* devices, int count,
                               const cml_shape_t* shape, cml_executable_t** out) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(be, "spmd", &b));
  cml_status_t st = cml_builder_spmd(b, count);
  if (st == CML_OK) st = cml_builder_device_assignment(b, devices, (size_t)count);
  cml_function_t* f = cml_builder_main(b);
  cml_value_t x = cml_parameter(f, "x", shape);
  cml_value_t y = cml_op_add(f, x, x);
  if (st == CML_OK) st = cml_function_return(f, &y, 1);
  if (st == CML_OK) st = cml_builder_compile(b, out);
  cml_builder_destroy(b);
  return st;
}

// An SPMD program over every device of the job, slots assigned in reverse: each process runs
// its own slots only (the fake plugin returns argument 0 plus the device's id), with the same
// launch id everywhere, one per execution.
TEST(spmd_execution_runs_the_local_slots) {
  cml_backend_t* be = NULL;
  ASSERT_STATUS_OK(new_fake_backend(NULL, &be));
  cml_process_info_t info;
  cml_backend_process_info(be, &info);
  const int total = cml_backend_device_count(be);
  int32_t assignment[64];
  ASSERT_TRUE(total <= 64);
  for (int j = 0; j < total; ++j) assignment[j] = total - 1 - j;
  cml_shape_t shape;
  const int64_t dims[1] = {3};
  ASSERT_STATUS_OK(cml_shape_init(&shape, CML_DTYPE_F32, 1, dims));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(build_spmd(be, assignment, total, &shape, &exe));
  cml_buffer_t* in[64] = {NULL};
  cml_buffer_t* out[64] = {NULL};
  char want_devices[256] = "";
  size_t used = 0;
  for (int j = 0; j < total; ++j) {
    if (!cml_backend_device_is_local(be, assignment[j])) continue;
    const float v[3] = {(float)j, (float)j + 0.5f, -(float)j};
    ASSERT_STATUS_OK(cml_buffer_from_host(be, assignment[j], &shape, v, sizeof v, &in[j]));
    used += (size_t)snprintf(want_devices + used, sizeof want_devices - used, "%s%d",
                             used ? "," : "", 100 + assignment[j]);
  }
  for (int launch = 1; launch <= 2; ++launch) {
    ASSERT_STATUS_OK(cml_executable_execute(exe, in, (size_t)total, NULL, 0, out));
    for (int j = 0; j < total; ++j) {
      if (!cml_backend_device_is_local(be, assignment[j])) {
        ASSERT_TRUE(out[j] == NULL);
        continue;
      }
      ASSERT_TRUE(out[j] != NULL);
      ASSERT_EQ_INT(cml_buffer_device(out[j]), assignment[j]);
      float got[3];
      ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[j], got, sizeof got));
      const float id = (float)(100 + assignment[j]);
      ASSERT_EQ_DBL(got[0], (float)j + id);
      ASSERT_EQ_DBL(got[1], (float)j + 0.5f + id);
      ASSERT_EQ_DBL(got[2], -(float)j + id);
      cml_buffer_release(out[j]);
      out[j] = NULL;
    }
    char part[300];
    snprintf(part, sizeof part, " execute launch=%d devices=%s;", launch, want_devices);
    ASSERT_CONTAINS(fake_log(), part);
  }
  // A program on the last process's devices only: the others run nothing, yet their launch ids
  // advance with the last process's, so the next launch is 4 everywhere.
  const int last_count = devices_of(g_size - 1);
  int32_t last[8];
  for (int j = 0; j < last_count; ++j) last[j] = total - last_count + j;
  cml_executable_t* part_exe = NULL;
  ASSERT_STATUS_OK(build_spmd(be, last, last_count, &shape, &part_exe));
  cml_buffer_t* part_in[8] = {NULL};
  cml_buffer_t* part_out[8] = {NULL};
  const float v[3] = {1, 2, 3};
  for (int j = 0; j < last_count && g_rank == g_size - 1; ++j) {
    ASSERT_STATUS_OK(cml_buffer_from_host(be, last[j], &shape, v, sizeof v, &part_in[j]));
  }
  ASSERT_STATUS_OK(
      cml_executable_execute(part_exe, part_in, (size_t)last_count, NULL, 0, part_out));
  for (int j = 0; j < last_count; ++j) {
    ASSERT_EQ_INT(part_out[j] != NULL, g_rank == g_size - 1);
    cml_buffer_release(part_out[j]);
    cml_buffer_release(part_in[j]);
  }
  ASSERT_STATUS_OK(cml_executable_execute(exe, in, (size_t)total, NULL, 0, out));
  for (int j = 0; j < total; ++j) cml_buffer_release(out[j]);
  char part[300];
  snprintf(part, sizeof part, " execute launch=4 devices=%s;", want_devices);
  ASSERT_CONTAINS(fake_log(), part);
  for (int j = 0; j < total; ++j) cml_buffer_release(in[j]);
  cml_executable_release(part_exe);
  cml_executable_release(exe);
  cml_backend_release(be);
}

// The plugin also gets a key nobody puts, with a 300 ms timeout: client creation fails with
// DEADLINE_EXCEEDED naming the key, on every process.
TEST(get_of_a_key_never_put_times_out) {
  setenv("FAKE_PJRT_MISSING_KEY_MS", "300", 1);
  cml_backend_t* be = NULL;
  const int64_t t0 = cml_clock_monotonic_ns();
  cml_status_t st = new_fake_backend(NULL, &be);
  const int64_t ms = (cml_clock_monotonic_ns() - t0) / 1000000;
  unsetenv("FAKE_PJRT_MISSING_KEY_MS");
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_DEADLINE_EXCEEDED);
  ASSERT_CONTAINS(cml_status_message(st), "\"fake_pjrt/missing\"");
  ASSERT_CONTAINS(cml_status_message(st), "within 300 ms");
  ASSERT_CONTAINS(cml_status_message(st), "PJRT key-value store");
  cml_status_free(st);
  ASSERT_TRUE(be == NULL);
  if (ms < 300 || ms > 15000) {
    TEST_FAIL_("rank %d: creation failed after %lld ms", g_rank, (long long)ms);
  }
}

// A plugin that ignores the node options lists only its own devices as process 0.
TEST(plugin_ignoring_the_options_is_unimplemented) {
  setenv("FAKE_PJRT_IGNORE_NODES", "1", 1);
  cml_backend_t* be = NULL;
  cml_status_t st = new_fake_backend(NULL, &be);
  unsetenv("FAKE_PJRT_IGNORE_NODES");
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_UNIMPLEMENTED);
  ASSERT_CONTAINS(cml_status_message(st), "libxla_fake_multinode_plugin");
  ASSERT_CONTAINS(cml_status_message(st), "node_id, num_nodes");
  ASSERT_CONTAINS(cml_status_message(st), "cml_host_all_reduce");
  cml_status_free(st);
  ASSERT_TRUE(be == NULL);
}

TEST(mismatched_configuration) {
  cml_backend_t* be = NULL;
  cml_status_t st = new_fake_backend(g_rank == 1 ? ",memory_fraction=0.5" : NULL, &be);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_FAILED_PRECONDITION);
  ASSERT_CONTAINS(cml_status_message(st), "differs across processes");
  ASSERT_CONTAINS(cml_status_message(st), "memory_fraction=0.5");
  cml_status_free(st);
  ASSERT_TRUE(be == NULL);
}

// XLA's CPU plugin refuses node_id / num_nodes ("Unexpected option name"); which of the two it
// names depends on the plugin's version (the order it checks the options in).
TEST(cpu_plugin_refuses) {
  setenv("GOMLX_NO_AUTO_INSTALL", "1", 1);
  cml_backend_t* be = NULL;
  cml_status_t st = cml_backend_new_with_config("xla:cpu,distributed=mpi", &be);
  if (cml_status_code(st) == CML_STATUS_NOT_FOUND) {
    printf("skipped: no CPU plugin: %s\n", cml_status_message(st));
    cml_status_free(st);
    exit(77);
  }
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_UNIMPLEMENTED);
  const char* m = cml_status_message(st);
  if (g_rank == 0) printf("xla:cpu,distributed=mpi: %s\n", m);
  ASSERT_CONTAINS(m, "PJRT plugin \"cpu\"");
  static const char kRefused[] = "Unexpected option name passed to PJRT_Client_Create: ";
  ASSERT_CONTAINS(m, kRefused);
  const char* named = strstr(m, kRefused) + sizeof kRefused - 1;
  ASSERT_TRUE(strncmp(named, "node_id", 7) == 0 || strncmp(named, "num_nodes", 9) == 0);
  ASSERT_CONTAINS(m, "cml_host_all_reduce");
  cml_status_free(st);
  ASSERT_TRUE(be == NULL);
}

static const test_entry_t kTests[] = {
    TEST_ENTRY(client_spans_every_process),
    TEST_ENTRY(spmd_execution_runs_the_local_slots),
    TEST_ENTRY(get_of_a_key_never_put_times_out),
    TEST_ENTRY(plugin_ignoring_the_options_is_unimplemented),
    TEST_ENTRY(mismatched_configuration),
};

int main(int argc, char** argv) {
  const char* r = getenv("OMPI_COMM_WORLD_RANK");
  const char* s = getenv("OMPI_COMM_WORLD_SIZE");
  if (!r || !s) {
    fprintf(stderr, "xla_distributed_test: run under mpirun (-np 2 or more)\n");
    return 77;
  }
  g_rank = atoi(r);
  g_size = atoi(s);
  int failed_total = 0;
  if (argc > 1 && strcmp(argv[1], "cpu_plugin_refuses") == 0) {
    test_cpu_plugin_refuses(&failed_total);
  } else {
    for (size_t i = 0; i < sizeof kTests / sizeof kTests[0]; ++i) {
      if (argc > 1 && strcmp(argv[1], kTests[i].name) != 0) continue;
      int failed = 0;
      kTests[i].fn(&failed);
      if (failed) fprintf(stderr, "[rank %d] FAILED %s\n", g_rank, kTests[i].name);
      failed_total += failed;
    }
  }
  if (g_rank == 0) printf("xla_distributed_test: %d processes, %d failed\n", g_size, failed_total);
  return failed_total ? 1 : 0;
}

#else

int main(void) {
  printf("skipped: no xla backend in this build\n");
  return 77;
}

#endif
