// SPDX-License-Identifier: Apache-2.0
// tests/unit/xla_e2e_test.c: the XLA backend end to end on the real CPU PJRT plugin, through the
// public API (GOMLX_BACKEND=xla:cpu). Exits 77 (skipped) when no CPU plugin is installed; the
// project's scripts install it (scripts/install_xla_plugin.sh or `cml install cpu`).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // feenableexcept, fegetexcept
#endif
#include <fenv.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/xla/xla_internal.h"
#include "cml/cml.h"
#include "cml/xla.h"
#include "test.h"

#if defined(__x86_64__) && defined(__GLIBC__)
#include <xmmintrin.h>
#endif

static cml_backend_t* g_backend;

static cml_status_t build_binary(cml_backend_t* be, cml_op_t op, const cml_shape_t* xs,
                                 const cml_shape_t* ys, cml_executable_t** out) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(be, "e2e", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_value_t x = cml_parameter(f, "x", xs);
  cml_value_t y = cml_parameter(f, "y", ys);
  cml_value_t z = cml_op_binary(f, op, x, y);
  cml_status_t st = cml_function_return(f, &z, 1);
  if (st == CML_OK) st = cml_builder_compile(b, out);
  cml_builder_destroy(b);
  return st;
}

TEST(backend_from_env) {
  ASSERT_STREQ(cml_backend_name(g_backend), "xla");
  ASSERT_EQ_INT(cml_backend_device_count(g_backend), 4);  // the CPU plugin's default
  ASSERT_CONTAINS(cml_backend_config(g_backend), "xla:cpu");
  ASSERT_CONTAINS(cml_backend_config(g_backend), "shared_buffers=true");
  ASSERT_CONTAINS(cml_backend_config(g_backend), "tf32=false");
  const cml_xla_extension_t* x = cml_backend_get_extension(g_backend, CML_XLA_EXTENSION_NAME);
  ASSERT_TRUE(x != NULL);
  ASSERT_EQ_INT(x->pjrt_major, 0);
  ASSERT_TRUE(x->pjrt_minor >= 57);
  ASSERT_STREQ(x->platform_name, "cpu");
  ASSERT_CONTAINS(x->plugin_path, "cpu");
  ASSERT_CONTAINS(cml_backend_description(g_backend), "PJRT 0.");
  ASSERT_CONTAINS(cml_backend_device_description(g_backend, 3), "cpu:3");
  ASSERT_TRUE(cml_backend_has_shared_buffers(g_backend));
  const cml_capabilities_t* caps = cml_backend_capabilities(g_backend);
  ASSERT_TRUE(cml_capabilities_has_op(caps, CML_OP_ADD));
  ASSERT_TRUE(cml_capabilities_has_op(caps, CML_OP_DOT_GENERAL));
  ASSERT_TRUE(cml_capabilities_has_dtype(caps, CML_DTYPE_BF16));
  ASSERT_TRUE(cml_capabilities_has_dtype(caps, CML_DTYPE_F16));  // the CPU plugin runs f16
  ASSERT_TRUE(cml_capabilities_has_dtype(caps, CML_DTYPE_I4));   // packed in cml's buffers
  ASSERT_TRUE(cml_capabilities_has_dtype(caps, CML_DTYPE_U2));
  ASSERT_FALSE(cml_capabilities_has_dtype(caps, CML_DTYPE_I1));  // StableHLO has no 1-bit ints
  ASSERT_TRUE(cml_capabilities_has_op(caps, CML_OP_SELECT_AND_SCATTER_SUM));
  ASSERT_TRUE(caps->dynamic_axes);  // one XLA compile per binding set (docs/dynamic_shapes.md)
}

TEST(add_graph) {
  cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){2, 3});
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(build_binary(g_backend, CML_OP_ADD, &s, &s, &exe));
  float x[6], y[6], want[6], got[6];
  for (int i = 0; i < 6; ++i) {
    x[i] = (float)i + 0.5f;
    y[i] = 10.0f * (float)i;
    want[i] = x[i] + y[i];
  }
  for (int device = 0; device < 2; ++device) {
    cml_buffer_t *xb = NULL, *yb = NULL, *out[1] = {NULL};
    ASSERT_STATUS_OK(cml_buffer_from_host(g_backend, device, &s, x, sizeof x, &xb));
    ASSERT_STATUS_OK(cml_buffer_from_host(g_backend, device, &s, y, sizeof y, &yb));
    cml_status_t st = cml_executable_execute(exe, (cml_buffer_t*[]){xb, yb}, 2, NULL, device, out);
    if (st == CML_OK) st = cml_buffer_copy_to_host(out[0], got, sizeof got);
    if (st == CML_OK && cml_buffer_device(out[0]) != device) {
      st = cml_status_make(CML_STATUS_INTERNAL, "output on device %d", cml_buffer_device(out[0]));
    }
    cml_buffer_release(xb);
    cml_buffer_release(yb);
    if (out[0]) cml_buffer_release(out[0]);
    if (st != CML_OK) cml_executable_release(exe);
    ASSERT_STATUS_OK(st);
    for (int i = 0; i < 6; ++i) ASSERT_EQ_DBL(got[i], want[i]);
  }
  cml_executable_release(exe);
}

// cml_executable_dump on xla writes the StableHLO text the executable was compiled from.
TEST(executable_dump_is_the_stablehlo_text) {
  cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){2, 3});
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(build_binary(g_backend, CML_OP_MUL, &s, &s, &exe));
  char* text = NULL;
  size_t size = 0;
  FILE* mem = open_memstream(&text, &size);
  ASSERT_TRUE(mem != NULL);
  cml_status_t st = cml_executable_dump(exe, mem);
  fclose(mem);
  cml_executable_release(exe);
  ASSERT_STATUS_OK(st);
  ASSERT_CONTAINS(text, "func.func public @main");
  ASSERT_CONTAINS(text, "stablehlo.multiply");
  ASSERT_CONTAINS(text, "tensor<2x3xf32>");
  free(text);
}

TEST(mul_int32_scalar_broadcast_and_donation) {
  cml_shape_t s = cml_shape_make(CML_DTYPE_I32, 1, (int64_t[]){5});
  cml_shape_t sc = cml_shape_scalar(CML_DTYPE_I32);
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(build_binary(g_backend, CML_OP_MUL, &s, &sc, &exe));
  int32_t x[5] = {1, -2, 3, 40000, -5}, k = -3, got[5];
  cml_buffer_t *xb = NULL, *kb = NULL, *out[1] = {NULL};
  ASSERT_STATUS_OK(cml_buffer_from_host(g_backend, 0, &s, x, sizeof x, &xb));
  ASSERT_STATUS_OK(cml_buffer_from_host(g_backend, 0, &sc, &k, sizeof k, &kb));
  bool donate[2] = {true, false};
  cml_status_t st = cml_executable_execute(exe, (cml_buffer_t*[]){xb, kb}, 2, donate, 0, out);
  if (st == CML_OK) st = cml_buffer_copy_to_host(out[0], got, sizeof got);
  bool x_valid = cml_buffer_is_valid(xb), k_valid = cml_buffer_is_valid(kb);
  cml_buffer_release(xb);
  cml_buffer_release(kb);
  if (out[0]) cml_buffer_release(out[0]);
  cml_executable_release(exe);
  ASSERT_STATUS_OK(st);
  for (int i = 0; i < 5; ++i) ASSERT_EQ_INT(got[i], x[i] * k);
  ASSERT_FALSE(x_valid);  // donated
  ASSERT_TRUE(k_valid);
}

TEST(shared_buffers_and_copy_to_device) {
  cml_shape_t s = cml_shape_make(CML_DTYPE_F64, 1, (int64_t[]){3});
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(build_binary(g_backend, CML_OP_ADD, &s, &s, &exe));
  cml_buffer_t *a = NULL, *b = NULL, *out[1] = {NULL}, *moved = NULL;
  void *pa = NULL, *pb = NULL;
  ASSERT_STATUS_OK(cml_buffer_create_shared(g_backend, 1, &s, &a, &pa));
  ASSERT_STATUS_OK(cml_buffer_create_shared(g_backend, 1, &s, &b, &pb));
  double* da = pa;
  double* db = pb;
  for (int i = 0; i < 3; ++i) {
    da[i] = 1.25 * i;
    db[i] = 100.0 + i;
  }
  double got[3] = {0}, got2[3] = {0};
  cml_status_t st = cml_executable_execute(exe, (cml_buffer_t*[]){a, b}, 2, NULL, 1, out);
  if (st == CML_OK) st = cml_buffer_copy_to_host(out[0], got, sizeof got);
  if (st == CML_OK) st = cml_buffer_copy_to_device(out[0], 2, &moved);
  if (st == CML_OK) st = cml_buffer_copy_to_host(moved, got2, sizeof got2);
  // Writing through the shared pointer changes what the next execution sees.
  cml_buffer_t* out2[1] = {NULL};
  double got3[3] = {0};
  if (st == CML_OK) {
    da[0] = 1000.0;
    st = cml_executable_execute(exe, (cml_buffer_t*[]){a, b}, 2, NULL, 1, out2);
  }
  if (st == CML_OK) st = cml_buffer_copy_to_host(out2[0], got3, sizeof got3);
  int moved_device = moved ? cml_buffer_device(moved) : -1;
  cml_buffer_release(a);
  cml_buffer_release(b);
  if (out[0]) cml_buffer_release(out[0]);
  if (out2[0]) cml_buffer_release(out2[0]);
  if (moved) cml_buffer_release(moved);
  cml_executable_release(exe);
  ASSERT_STATUS_OK(st);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ_DBL(got[i], 1.25 * i + 100.0 + i);
    ASSERT_EQ_DBL(got2[i], got[i]);
  }
  ASSERT_EQ_DBL(got3[0], 1100.0);
  ASSERT_EQ_INT(moved_device, 2);
}

TEST(device_out_of_range) {
  cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){2});
  float x[2] = {1, 2};
  cml_buffer_t* buf = NULL;
  ASSERT_STATUS_CODE(cml_buffer_from_host(g_backend, 4, &s, x, sizeof x, &buf),
                     CML_STATUS_OUT_OF_RANGE);
  ASSERT_STATUS_CODE(cml_buffer_from_host(g_backend, -1, &s, x, sizeof x, &buf),
                     CML_STATUS_OUT_OF_RANGE);
  ASSERT_TRUE(buf == NULL);
  ASSERT_STREQ(cml_backend_device_description(g_backend, 9), "invalid device");
}

// XLA's CPU compiler ended the process (SIGFPE) compiling an Add of U8[2^39 - 1] (and of
// U8[2^39], F32[2^38]): such arrays are refused before XLA sees them, naming the op, the shape
// and the size. An array well below stays compilable.
TEST(arrays_of_512_gib_are_refused_before_xla_compiles) {
  const int64_t huge = ((int64_t)1 << 39) - 1;
  cml_shape_t s = cml_shape_make(CML_DTYPE_U8, 1, &huge);
  cml_executable_t* exe = NULL;
  cml_status_t st = build_binary(g_backend, CML_OP_ADD, &s, &s, &exe);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_RESOURCE_EXHAUSTED);
  ASSERT_CONTAINS(cml_status_message(st), "(Uint8)[549755813887]");
  ASSERT_CONTAINS(cml_status_message(st), "512 GiB");
  cml_status_free(st);
  ASSERT_TRUE(exe == NULL);
  const int64_t big = (int64_t)1 << 36;  // 64 GiB: compiles (never run)
  s = cml_shape_make(CML_DTYPE_U8, 1, &big);
  ASSERT_STATUS_OK(build_binary(g_backend, CML_OP_ADD, &s, &s, &exe));
  cml_executable_release(exe);
}

// A child of fork() inherits XLA's plugin without its threads: an execution there hung, a
// release crashed, and a new xla backend aborted the process. Each is now FAILED_PRECONDITION
// (releases leave the plugin's objects to the parent), and the parent goes on.
static bool fork_status_is_refusal(cml_status_t st) {
  bool ok = cml_status_code(st) == CML_STATUS_FAILED_PRECONDITION &&
            strstr(cml_status_message(st), "a child of fork()") != NULL;
  cml_status_free(st);
  return ok;
}

TEST(forked_child_refuses_xla) {
  cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){2});
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(build_binary(g_backend, CML_OP_ADD, &s, &s, &exe));
  const float x[2] = {1, 2};
  cml_buffer_t* in[2] = {NULL, NULL};
  for (int i = 0; i < 2; ++i)
    ASSERT_STATUS_OK(cml_buffer_from_host(g_backend, 0, &s, x, 8, &in[i]));
  fflush(NULL);
  const pid_t pid = fork();
  ASSERT_TRUE(pid >= 0);
  if (pid == 0) {
    alarm(60);
    int bad = 0;
    cml_buffer_t* out = NULL;
    if (!fork_status_is_refusal(cml_executable_execute(exe, in, 2, NULL, 0, &out))) bad |= 1;
    float back[2];
    if (!fork_status_is_refusal(cml_buffer_copy_to_host(in[0], back, sizeof back))) bad |= 2;
    cml_backend_t* fresh = NULL;
    if (!fork_status_is_refusal(cml_backend_new_with_config("xla:cpu", &fresh))) bad |= 4;
    cml_executable_release(exe);
    cml_buffer_release(in[0]);
    cml_buffer_release(in[1]);
    cml_backend_release(g_backend);
    _exit(bad);
  }
  int status = 0;
  ASSERT_TRUE(waitpid(pid, &status, 0) == pid);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ_INT(WEXITSTATUS(status), 0);
  cml_buffer_t* out = NULL;
  ASSERT_STATUS_OK(cml_executable_execute(exe, in, 2, NULL, 0, &out));
  float y[2] = {0, 0};
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(out, y, sizeof y));
  ASSERT_EQ_DBL(y[1], 4);
  cml_buffer_release(out);
  cml_buffer_release(in[0]);
  cml_buffer_release(in[1]);
  cml_executable_release(exe);
}

TEST(config_options_reach_the_plugin) {
  cml_backend_t* be = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("xla:cpu,cpu_device_count=2,noshared_buffers", &be));
  int n = cml_backend_device_count(be);
  bool shared = cml_backend_has_shared_buffers(be);
  cml_backend_release(be);
  ASSERT_EQ_INT(n, 2);
  ASSERT_FALSE(shared);
  ASSERT_STATUS_CODE(cml_backend_new_with_config("xla:cpu,cpu_device_count=0", &be),
                     CML_STATUS_INVALID_ARGUMENT);
  cml_status_t st = cml_backend_new_with_config("xla:cpu,frobnicate=1", &be);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "frobnicate");
  ASSERT_CONTAINS(cml_status_message(st), "memory_fraction");
  cml_status_free(st);
  st = cml_backend_new_with_config("xla:help", &be);  // the registry answers with the options
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "visible_devices");
  cml_status_free(st);
  st = cml_backend_new_with_config("xla:cpu,help", &be);  // the backend adds the plugins found
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "cpu: /");
  ASSERT_CONTAINS(cml_status_message(st), "cpu_device_count");
  cml_status_free(st);
  // An alias and a path config.
  const cml_xla_extension_t* x = cml_backend_get_extension(g_backend, CML_XLA_EXTENSION_NAME);
  char config[4200];
  snprintf(config, sizeof config, "stablehlo:%s", x->plugin_path);
  ASSERT_STATUS_OK(cml_backend_new_with_config(config, &be));
  ASSERT_STREQ(cml_backend_name(be), "xla");
  cml_backend_release(be);
}

TEST(bad_plugin_path) {
  cml_backend_t* be = NULL;
  cml_status_t st = cml_backend_new_with_config("xla:/nonexistent/pjrt_c_api_cpu_plugin.so", &be);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_NOT_FOUND);
  ASSERT_CONTAINS(cml_status_message(st), "/nonexistent/pjrt_c_api_cpu_plugin.so");
  cml_status_free(st);
  ASSERT_TRUE(be == NULL);
}

// Packed dtypes: cml's host layout is packed (first element in the low bits); the plugin's host
// buffers hold one element per byte. Int4 in, widened to Int8 by the graph, and narrowed back.
TEST(packed_int4_round_trip) {
  cml_shape_t s4 = cml_shape_make(CML_DTYPE_I4, 1, (int64_t[]){5});
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(g_backend, "packed", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_value_t x = cml_parameter(f, "x", &s4);
  cml_value_t wide = cml_op_convert_dtype(f, x, CML_DTYPE_I8);
  cml_value_t outs[2] = {wide, cml_op_convert_dtype(f, cml_op_neg(f, wide), CML_DTYPE_I4)};
  cml_status_t st = cml_function_return(f, outs, 2);
  cml_executable_t* exe = NULL;
  if (st == CML_OK) st = cml_builder_compile(b, &exe);
  cml_builder_destroy(b);
  ASSERT_STATUS_OK(st);
  // Elements 1, -2, 7, -8, 0 packed two per byte: 0xE1, 0x87, 0x00.
  const uint8_t packed[3] = {0xE1, 0x87, 0x00};
  cml_buffer_t* in = NULL;
  ASSERT_STATUS_OK(cml_buffer_from_host(g_backend, 0, &s4, packed, sizeof packed, &in));
  cml_buffer_t* out[2] = {NULL, NULL};
  ASSERT_STATUS_OK(cml_executable_execute(exe, &in, 1, NULL, 0, out));
  int8_t got8[5];
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[0], got8, sizeof got8));
  const int8_t want8[5] = {1, -2, 7, -8, 0};
  for (int i = 0; i < 5; ++i) ASSERT_EQ_INT(got8[i], want8[i]);
  // -x wraps in Int4: -1, 2, -7, -8 (8 wraps), 0 -> nibbles F, 2, 9, 8, 0.
  uint8_t got4[3] = {0xAA, 0xAA, 0xAA};
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[1], got4, sizeof got4));
  ASSERT_EQ_INT(got4[0], 0x2F);
  ASSERT_EQ_INT(got4[1], 0x89);
  ASSERT_EQ_INT(got4[2], 0x00);  // the unused high nibble is zero
  // A shared (host-memory) buffer cannot hold a packed dtype on this plugin.
  cml_buffer_t* shared = NULL;
  void* data = NULL;
  st = cml_buffer_create_shared(g_backend, 0, &s4, &shared, &data);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_UNIMPLEMENTED);
  ASSERT_CONTAINS(cml_status_message(st), "(Int4)[5]");
  cml_status_free(st);
  ASSERT_TRUE(shared == NULL);
  cml_buffer_release(out[0]);
  cml_buffer_release(out[1]);
  cml_buffer_release(in);
  cml_executable_release(exe);
}

// An allocator that fails its |fail_at|-th request (counted in |calls|); 0: never.
typedef struct failing_alloc_t {
  long calls, fail_at, failures;
} failing_alloc_t;

static void* failing_fn(void* self, void* ptr, size_t old_size, size_t new_size, size_t align) {
  failing_alloc_t* a = self;
  if (new_size == 0) {
    free(ptr);
    return NULL;
  }
  if (++a->calls == a->fail_at) {
    ++a->failures;
    return NULL;
  }
  void* fresh = aligned_alloc(align < 16 ? 16 : align, (new_size + 63) / 64 * 64);
  if (fresh && ptr) memcpy(fresh, ptr, old_size < new_size ? old_size : new_size);
  free(ptr);
  return fresh;
}

// An output object that could not be allocated after PJRT ran left a donated input consumed
// by a failed execution (its copy read "deleted or donated buffer"): they are allocated before
// now. Each allocation of the execution fails in turn; x keeps its values and runs again.
TEST(failed_execute_leaves_donated_input_intact) {
  failing_alloc_t a = {0, 0, 0};
  cml_backend_t* be = NULL;
  ASSERT_STATUS_OK(cml_backend_create("xla:cpu", (cml_allocator_t){&a, failing_fn}, &be));
  cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){4});
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(be, "donated", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_value_t outs[2];
  outs[0] = cml_parameter(f, "x", &s);  // parameter 0, then 1
  outs[1] = cml_parameter(f, "y", &s);
  cml_executable_t* exe = NULL;
  cml_status_t st = cml_function_return(f, outs, 2);  // main(x, y) = (x, y)
  if (st == CML_OK) st = cml_builder_compile(b, &exe);
  cml_builder_destroy(b);
  ASSERT_STATUS_OK(st);
  const float xs[4] = {1, 2, 3, 4}, ys[4] = {5, 6, 7, 8};
  cml_buffer_t* in[2] = {NULL, NULL};
  cml_buffer_t* out[2] = {NULL, NULL};
  ASSERT_STATUS_OK(cml_buffer_from_host(be, 0, &s, xs, sizeof xs, &in[0]));
  ASSERT_STATUS_OK(cml_buffer_from_host(be, 0, &s, ys, sizeof ys, &in[1]));
  const bool donate[2] = {true, false};
  int swept = 0;
  for (long n = 1; n <= 16; ++n) {
    a.fail_at = a.calls + n;
    a.failures = 0;
    st = cml_executable_execute(exe, in, 2, donate, 0, out);
    a.fail_at = 0;
    if (st == CML_OK) {
      ASSERT_EQ_INT(a.failures, 0);  // swept every allocation of the execution
      break;
    }
    ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_RESOURCE_EXHAUSTED);
    cml_status_free(st);
    ++swept;
    float got[4] = {0};
    ASSERT_TRUE(cml_buffer_is_valid(in[0]));
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(in[0], got, sizeof got));
    ASSERT_TRUE(memcmp(got, xs, sizeof got) == 0);
  }
  ASSERT_TRUE(swept > 0);
  ASSERT_FALSE(cml_buffer_is_valid(in[0]));  // the last, successful execution consumed x
  float got[4] = {0};
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[0], got, sizeof got));
  ASSERT_TRUE(memcmp(got, xs, sizeof got) == 0);
  for (int k = 0; k < 2; ++k) {
    cml_buffer_release(in[k]);
    cml_buffer_release(out[k]);
  }
  cml_executable_release(exe);
  cml_backend_release(be);
}

// A dynamic-shape module compiles each new binding set at its first execution, which takes
// milliseconds to seconds: a deadline that passes meanwhile is honoured before PJRT runs
// (DEADLINE_EXCEEDED, no output), and the specialization is kept for the next call.
TEST(dynamic_specialization_compile_honours_the_deadline) {
  const char* names[] = {"batch", NULL};
  cml_shape_t xs;
  ASSERT_STATUS_OK(
      cml_shape_init_dynamic(&xs, CML_DTYPE_F32, 2, (int64_t[]){CML_DYNAMIC_DIM, 64}, names));
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(g_backend, "dyn_deadline", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_value_t x = cml_parameter(f, "x", &xs);
  cml_value_t y = cml_op_tanh(f, cml_op_mul(f, x, x));
  ASSERT_STATUS_OK(cml_function_return(f, &y, 1));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(cml_builder_compile(b, &exe));
  cml_builder_destroy(b);
  cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){3, 64});
  float host[3 * 64], got[3 * 64];
  for (int i = 0; i < 3 * 64; ++i) host[i] = (float)i / 100.0f;
  cml_buffer_t* in = NULL;
  ASSERT_STATUS_OK(cml_buffer_from_host(g_backend, 0, &s, host, sizeof host, &in));
  cml_execute_options_t o;
  cml_execute_options_init(&o);
  o.timeout_ns = 2000000;  // 2 ms: far below an XLA compile
  cml_buffer_t* out = (cml_buffer_t*)0x1;
  cml_status_t st = cml_executable_execute_with_options(exe, &in, 1, &o, &out);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_DEADLINE_EXCEEDED);
  ASSERT_CONTAINS(cml_status_message(st), "deadline");
  ASSERT_CONTAINS(cml_status_message(st), "module \"dyn_deadline\", bindings batch=3");
  cml_status_free(st);
  ASSERT_TRUE(out == NULL);
  ASSERT_STATUS_OK(cml_executable_execute(exe, &in, 1, NULL, 0, &out));  // compiled already
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(out, got, sizeof got));
  for (int i = 0; i < 3 * 64; ++i) ASSERT_NEAR(got[i], tanhf(host[i] * host[i]), 1e-6);
  cml_buffer_release(out);
  cml_buffer_release(in);
  cml_executable_release(exe);
}

// A caller's floating-point environment (rounding up, trapping invalid operations and divisions
// by zero, FTZ/DAZ) set before the backend exists: the plugin's threads started in it trapped
// in XLA's code (SIGFPE). cml creates, compiles and executes in the default environment and
// gives the caller its own back.
#if defined(__x86_64__) && defined(__GLIBC__)
TEST(a_callers_floating_point_environment_does_not_reach_xla) {
  fesetround(FE_UPWARD);
  feenableexcept(FE_DIVBYZERO | FE_INVALID | FE_OVERFLOW);
  _mm_setcsr(_mm_getcsr() | 0x8040u);
  cml_backend_t* be = NULL;
  cml_status_t st = cml_backend_new_with_config("xla:cpu", &be);
  cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){4096});
  cml_executable_t* exe = NULL;
  if (st == CML_OK) st = build_binary(be, CML_OP_DIV, &s, &s, &exe);
  static float x[4096], y[4096], got[4096];
  for (int i = 0; i < 4096; ++i) {
    x[i] = i % 3 == 0 ? 0.0f : 1.0f;  // 0 / 0, 1 / 0, 1 / 3
    y[i] = i % 3 == 2 ? 3.0f : 0.0f;
  }
  cml_buffer_t *in[2] = {NULL, NULL}, *out = NULL;
  if (st == CML_OK) st = cml_buffer_from_host(be, 0, &s, x, sizeof x, &in[0]);
  if (st == CML_OK) st = cml_buffer_from_host(be, 0, &s, y, sizeof y, &in[1]);
  if (st == CML_OK) st = cml_executable_execute(exe, in, 2, NULL, 0, &out);
  if (st == CML_OK) st = cml_buffer_copy_to_host(out, got, sizeof got);
  const int round = fegetround(), traps = fegetexcept();
  const unsigned csr = _mm_getcsr();
  fedisableexcept(FE_ALL_EXCEPT);
  fesetenv(FE_DFL_ENV);
  _mm_setcsr(0x1F80u);
  ASSERT_STATUS_OK(st);
  ASSERT_EQ_INT(round, FE_UPWARD);
  ASSERT_EQ_INT(traps, FE_DIVBYZERO | FE_INVALID | FE_OVERFLOW);
  ASSERT_EQ_INT((int)(csr & 0x8040u), 0x8040);
  for (int i = 0; i < 4096; ++i) {
    if (i % 3 == 0) ASSERT_TRUE(got[i] != got[i]);
    if (i % 3 == 1) ASSERT_TRUE(got[i] == HUGE_VALF);
    if (i % 3 == 2) ASSERT_TRUE(got[i] == 1.0f / 3.0f);  // to nearest (upward: one ulp more)
  }
  cml_buffer_release(out);
  cml_buffer_release(in[0]);
  cml_buffer_release(in[1]);
  cml_executable_release(exe);
  cml_backend_release(be);
}
#endif

int main(int argc, char** argv) {
  cml_xla_enable_auto_install(false);  // tests never download
  cml__xla_search_t search;
  cml__xla_search_from_env(&search);
  char* path = NULL;
  cml_status_t st = cml__xla_find_plugin(&search, "cpu", &path);
  if (st != CML_OK) {
    printf("skipped: no XLA CPU plugin installed (%s)\n", cml_status_message(st));
    cml_status_free(st);
    return 77;
  }
  free(path);
  setenv("GOMLX_BACKEND", "xla:cpu", 1);
  st = cml_backend_new(&g_backend);
  if (st != CML_OK) {
    fprintf(stderr, "cml_backend_new(xla:cpu): %s\n", cml_status_message(st));
    cml_status_free(st);
    return 1;
  }
  static const test_entry_t tests[] = {
    TEST_ENTRY(backend_from_env),
    TEST_ENTRY(add_graph),
    TEST_ENTRY(executable_dump_is_the_stablehlo_text),
    TEST_ENTRY(mul_int32_scalar_broadcast_and_donation),
    TEST_ENTRY(failed_execute_leaves_donated_input_intact),
    TEST_ENTRY(shared_buffers_and_copy_to_device),
    TEST_ENTRY(device_out_of_range),
    TEST_ENTRY(arrays_of_512_gib_are_refused_before_xla_compiles),
    TEST_ENTRY(forked_child_refuses_xla),
    TEST_ENTRY(config_options_reach_the_plugin),
    TEST_ENTRY(bad_plugin_path),
    TEST_ENTRY(packed_int4_round_trip),
    TEST_ENTRY(dynamic_specialization_compile_honours_the_deadline),
#if defined(__x86_64__) && defined(__GLIBC__)
    TEST_ENTRY(a_callers_floating_point_environment_does_not_reach_xla),
#endif
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
  printf("%d passed, %d failed, 0 skipped\n", ran - failures, failures);
  return (failures || ran == 0) ? 1 : 0;
}
