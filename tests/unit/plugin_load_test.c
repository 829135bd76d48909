// SPDX-License-Identifier: Apache-2.0
// tests/unit/plugin_load_test.c: a third-party backend loaded as a shared-library plug-in.
//
// Loads examples/plugin_backend ("ref") with cml_plugin_load, creates it by name, runs small
// graphs whose results are computed by hand, checks that what it lacks fails when the graph is
// built (UNIMPLEMENTED naming op, dtype and backend), sweeps out-of-memory failures through it
// (each must be RESOURCE_EXHAUSTED and leak nothing), runs the whole compliance suite on it, and
// checks cml_plugin_load's errors with deliberately broken modules (wrong API major, newer
// minor, NULL factory, no query symbol) and a duplicate registration.
//
// Like a real host program, this test links the shared cml (see tests/CMakeLists.txt) and uses
// only the public API. The module paths come from compile definitions; without them (the
// example was not built) the test exits 77, which CTest reports as skipped.
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef REF_PLUGIN_PATH

int main(void) {
  printf("plugin_load_test: skipped (examples/plugin_backend not built)\n");
  return 77;
}

#else

#include "cml/backend_impl.h"
#include "cml/backendtest.h"
#include "test.h"

//===--- helpers ---===//

// True when |status| has |code| and its message contains every needle (NULL-terminated list).
// Prints what differs. Frees |status|.
static bool status_is(cml_status_t status, cml_status_code_t code, const char* const* needles) {
  bool ok = cml_status_code(status) == code;
  for (size_t i = 0; ok && needles && needles[i]; ++i) {
    ok = strstr(cml_status_message(status), needles[i]) != NULL;
  }
  if (!ok) {
    fprintf(stderr, "  want %s with", cml_status_code_name(code));
    for (size_t i = 0; needles && needles[i]; ++i) fprintf(stderr, " \"%s\"", needles[i]);
    fprintf(stderr, "\n  got  %s: %s\n", cml_status_code_name(cml_status_code(status)),
            cml_status_message(status));
  }
  cml_status_free(status);
  return ok;
}
#define NEEDLES(...) ((const char* const[]){__VA_ARGS__, NULL})

// Loads the ref plug-in once per process (every test needs it; each can run alone).
static cml_status_t ensure_ref_loaded(void) {
  static bool loaded = false;
  if (loaded) return CML_OK;
  cml_status_t st = cml_plugin_load(REF_PLUGIN_PATH);
  if (st == CML_OK) loaded = true;
  return st;
}

static cml_status_t new_ref(const char* config, cml_backend_t** out) {
  CML_RETURN_IF_ERROR(ensure_ref_loaded());
  return cml_backend_new_with_config(config, out);
}

//===--- loading and registration ---===//

TEST(load_registers_backend) {
  ASSERT_STATUS_OK(ensure_ref_loaded());
  bool listed = false;
  for (size_t i = 0; i < cml_backend_registered_count(); ++i) {
    if (strcmp(cml_backend_registered_name(i), "ref") == 0) listed = true;
  }
  ASSERT_TRUE(listed);
  ASSERT_STREQ(cml_backend_registered_aliases("ref"), "");
  ASSERT_CONTAINS(cml_backend_config_help("ref"), "devices=N");

  cml_backend_t* b = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("ref", &b));
  ASSERT_STREQ(cml_backend_name(b), "ref");
  ASSERT_STREQ(cml_backend_config(b), "ref");
  ASSERT_EQ_INT(cml_backend_device_count(b), 1);
  ASSERT_STREQ(cml_backend_device_description(b, 0), "ref:0");
  ASSERT_TRUE(cml_backend_has_shared_buffers(b));
  const cml_capabilities_t* caps = cml_backend_capabilities(b);
  ASSERT_TRUE(cml_capabilities_has_op(caps, CML_OP_DOT_GENERAL));
  ASSERT_TRUE(cml_capabilities_has_op(caps, CML_OP_WHERE));
  ASSERT_FALSE(cml_capabilities_has_op(caps, CML_OP_SIN));
  ASSERT_FALSE(cml_capabilities_has_op(caps, CML_OP_DOT));
  ASSERT_TRUE(cml_capabilities_has_dtype(caps, CML_DTYPE_I32));
  ASSERT_FALSE(cml_capabilities_has_dtype(caps, CML_DTYPE_I64));
  ASSERT_FALSE(caps->functions);
  cml_backend_release(b);
}

TEST(duplicate_registration) {
  ASSERT_STATUS_OK(ensure_ref_loaded());
  // The same module again: the registry refuses a second "ref" and the first one keeps working.
  ASSERT_TRUE(status_is(cml_plugin_load(REF_PLUGIN_PATH), CML_STATUS_INVALID_ARGUMENT,
                        NEEDLES("\"ref\"", "already registered")));
  cml_backend_t* b = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("ref", &b));
  cml_backend_release(b);
}

TEST(load_errors) {
  ASSERT_TRUE(status_is(cml_plugin_load(REF_BAD_WRONG_MAJOR_PATH), CML_STATUS_INCOMPATIBLE,
                        NEEDLES("bad_major", "major versions must match")));
  ASSERT_TRUE(status_is(cml_plugin_load(REF_BAD_NEWER_MINOR_PATH), CML_STATUS_INCOMPATIBLE,
                        NEEDLES("bad_minor", "needs backend API")));
  ASSERT_TRUE(status_is(cml_plugin_load(REF_BAD_NULL_FACTORY_PATH), CML_STATUS_INCOMPATIBLE,
                        NEEDLES("returned no backend")));
  ASSERT_TRUE(status_is(cml_plugin_load(REF_BAD_NO_SYMBOL_PATH), CML_STATUS_INVALID_ARGUMENT,
                        NEEDLES("not a cml plugin", "cml_plugin_query")));
  ASSERT_TRUE(status_is(cml_plugin_load(REF_PLUGIN_PATH ".missing"), CML_STATUS_NOT_FOUND,
                        NEEDLES(".missing")));
  // A FIFO: refused at once (dlopen would wait for a writer forever), as is a directory.
  char fifo[64];
  snprintf(fifo, sizeof fifo, "./plugin_load_test_%ld.so", (long)getpid());
  ASSERT_TRUE(mkfifo(fifo, 0600) == 0);
  ASSERT_TRUE(status_is(cml_plugin_load(fifo), CML_STATUS_INVALID_ARGUMENT,
                        NEEDLES(fifo, "not a regular file")));
  ASSERT_TRUE(unlink(fifo) == 0);
  ASSERT_TRUE(
      status_is(cml_plugin_load("./"), CML_STATUS_INVALID_ARGUMENT, NEEDLES("not a regular file")));
  // Nothing of the refused modules was registered.
  ASSERT_TRUE(cml_backend_registered_aliases("bad_major") == NULL);
  ASSERT_TRUE(cml_backend_registered_aliases("bad_minor") == NULL);
  cml_backend_t* b = NULL;
  ASSERT_STATUS_CODE(cml_backend_new_with_config("bad_major", &b), CML_STATUS_NOT_FOUND);
  ASSERT_TRUE(b == NULL);
}

// A plug-in that registers its factory itself when loaded (a constructor) stays loaded: the
// registry points into it. cml_plugin_load closed such a library after refusing the factory
// as "already registered" (and after a NULL query result), and the next look at the registry
// read freed memory.
TEST(self_registering_plugins_stay_loaded) {
  ASSERT_STATUS_OK(cml_plugin_load(REF_BAD_SELF_REGISTER_PATH));
  ASSERT_TRUE(status_is(cml_plugin_load(REF_BAD_SELF_ORPHAN_PATH), CML_STATUS_INCOMPATIBLE,
                        NEEDLES("returned no backend")));
  size_t named = 0;
  for (size_t i = 0; i < cml_backend_registered_count(); ++i) {
    const char* name = cml_backend_registered_name(i);
    ASSERT_TRUE(name != NULL);
    named += strcmp(name, "self_registered") == 0 || strcmp(name, "self_orphan") == 0;
  }
  ASSERT_EQ_INT((int)named, 2);
  static const char* const names[] = {"self_registered", "self_orphan"};
  for (int k = 0; k < 2; ++k) {
    cml_backend_t* b = NULL;
    ASSERT_TRUE(status_is(cml_backend_new_with_config(names[k], &b), CML_STATUS_UNAVAILABLE,
                          NEEDLES("create reached")));
    ASSERT_TRUE(b == NULL);
  }
}

TEST(config_errors) {
  ASSERT_STATUS_OK(ensure_ref_loaded());
  cml_backend_t* b = NULL;
  ASSERT_TRUE(status_is(cml_backend_new_with_config("ref:bogus=1", &b), CML_STATUS_INVALID_ARGUMENT,
                        NEEDLES("bogus", "devices=N")));
  ASSERT_TRUE(status_is(cml_backend_new_with_config("ref:devices=0", &b),
                        CML_STATUS_INVALID_ARGUMENT, NEEDLES("devices", "1..16")));
  ASSERT_TRUE(status_is(cml_backend_new_with_config("ref:devices=2x", &b),
                        CML_STATUS_INVALID_ARGUMENT, NEEDLES("2x")));
  ASSERT_TRUE(status_is(cml_backend_new_with_config("ref:help", &b), CML_STATUS_INVALID_ARGUMENT,
                        NEEDLES("devices=N")));
  ASSERT_TRUE(b == NULL);
}

//===--- running graphs ---===//

// Uploads |count| host arrays, executes |exe| on |device| and returns its outputs.
static cml_status_t run(cml_backend_t* backend, cml_executable_t* exe, int device,
                        const void* const* host, size_t count, cml_buffer_t** out) {
  cml_buffer_t* in[8] = {NULL};
  cml_status_t st = CML_OK;
  for (size_t i = 0; i < count && st == CML_OK; ++i) {
    const cml_shape_t* s = cml_executable_input_shape(exe, i);
    st = cml_buffer_from_host(backend, device, s, host[i], cml_shape_byte_size(s), &in[i]);
  }
  if (st == CML_OK) st = cml_executable_execute(exe, in, count, NULL, device, out);
  for (size_t i = 0; i < count; ++i) {
    if (in[i]) cml_buffer_release(in[i]);
  }
  return st;
}

// relu(x @ w + b) summed over rows, the transpose of x @ w + b, and |x @ w + b| through
// Where(z > 0, z, -z): Parameter, Constant, DotGeneral, BroadcastInDim, Add, Max, ReduceSum,
// Transpose, GreaterThan, Neg, Where.
TEST(small_graph_f32) {
  cml_backend_t* backend = NULL;
  ASSERT_STATUS_OK(new_ref("ref", &backend));
  cml_builder_t* bld = NULL;
  ASSERT_STATUS_OK(cml_builder_create(backend, "small", &bld));
  cml_function_t* f = cml_builder_main(bld);
  cml_shape_t xs = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){2, 3});
  cml_shape_t ws = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){3, 2});
  cml_shape_t bs = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){2});
  cml_value_t x = cml_parameter(f, "x", &xs);
  cml_value_t w = cml_parameter(f, "w", &ws);
  cml_value_t bias = cml_parameter(f, "b", &bs);
  cml_value_t y = cml_op_dot(f, x, w);  // recorded as DotGeneral: ref has no Dot
  cml_value_t bb = cml_op_broadcast_in_dim(f, bias, (int64_t[]){2, 2}, 2, (int64_t[]){1}, 1);
  cml_value_t z = cml_op_add(f, y, bb);
  cml_value_t zero = cml_constant_scalar_f64(f, CML_DTYPE_F32, 0.0);
  cml_value_t relu = cml_op_max(f, z, zero);
  cml_value_t sums = cml_op_reduce_sum(f, relu, (int64_t[]){1}, 1);
  cml_value_t zt = cml_op_transpose(f, z, (int64_t[]){1, 0}, 2);
  cml_value_t positive = cml_op_greater_than(f, z, zero);
  cml_value_t absz = cml_op_where(f, positive, z, cml_op_neg(f, z));
  cml_value_t outs[] = {sums, zt, absz};
  ASSERT_STATUS_OK(cml_function_return(f, outs, 3));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(cml_builder_compile(bld, &exe));
  cml_builder_destroy(bld);

  const float xv[] = {1, 2, 3, 4, 5, 6};
  const float wv[] = {1, 0, 0, 1, 1, -1};
  const float bv[] = {0.5f, -2};
  cml_buffer_t* out[3] = {NULL};
  ASSERT_STATUS_OK(run(backend, exe, 0, (const void* const[]){xv, wv, bv}, 3, out));
  // x @ w = [[4, -1], [10, -1]]; + b = [[4.5, -3], [10.5, -3]].
  float s[2], t[4], a[4];
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[0], s, sizeof s));
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[1], t, sizeof t));
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[2], a, sizeof a));
  const float want_s[] = {4.5f, 10.5f};
  const float want_t[] = {4.5f, 10.5f, -3, -3};
  const float want_a[] = {4.5f, 3, 10.5f, 3};
  for (int i = 0; i < 2; ++i) ASSERT_EQ_DBL(s[i], want_s[i]);
  for (int i = 0; i < 4; ++i) ASSERT_EQ_DBL(t[i], want_t[i]);
  for (int i = 0; i < 4; ++i) ASSERT_EQ_DBL(a[i], want_a[i]);
  ASSERT_EQ_INT(cml_buffer_shape(out[1])->dims[0], 2);
  for (int i = 0; i < 3; ++i) cml_buffer_release(out[i]);
  cml_executable_release(exe);
  cml_backend_release(backend);
}

// Int32 division edge cases and Float64 Exp/Abs/ReduceMax, on device 1 of "ref:devices=2".
TEST(small_graph_i32_f64_second_device) {
  cml_backend_t* backend = NULL;
  ASSERT_STATUS_OK(new_ref("ref:devices=2", &backend));
  ASSERT_EQ_INT(cml_backend_device_count(backend), 2);
  ASSERT_STREQ(cml_backend_config(backend), "ref:devices=2");
  cml_builder_t* bld = NULL;
  ASSERT_STATUS_OK(cml_builder_create(backend, "ints", &bld));
  cml_function_t* f = cml_builder_main(bld);
  cml_shape_t is = cml_shape_make(CML_DTYPE_I32, 1, (int64_t[]){5});
  cml_shape_t ds = cml_shape_make(CML_DTYPE_F64, 2, (int64_t[]){2, 2});
  cml_value_t n = cml_parameter(f, "n", &is);
  cml_value_t d = cml_parameter(f, "d", &is);
  cml_value_t v = cml_parameter(f, "v", &ds);
  cml_value_t q = cml_op_div(f, n, d);
  cml_value_t e = cml_op_exp(f, cml_op_abs(f, v));
  cml_value_t m = cml_op_reduce_max(f, e, (int64_t[]){0}, 1);
  cml_value_t outs[] = {q, m};
  ASSERT_STATUS_OK(cml_function_return(f, outs, 2));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(cml_builder_compile(bld, &exe));
  cml_builder_destroy(bld);

  const int32_t nv[] = {7, -7, 5, INT32_MIN, INT32_MAX};
  const int32_t dv[] = {2, 2, 0, -1, -1};
  const double vv[] = {0, -1, -2, 0};
  cml_buffer_t* out[2] = {NULL};
  ASSERT_STATUS_OK(run(backend, exe, 1, (const void* const[]){nv, dv, vv}, 3, out));
  ASSERT_EQ_INT(cml_buffer_device(out[0]), 1);
  int32_t qv[5];
  double mv[2];
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[0], qv, sizeof qv));
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[1], mv, sizeof mv));
  // C division truncates; x / 0 = -1 and INT_MIN / -1 = INT_MIN as XLA's CPU plugin does.
  const int32_t want_q[] = {3, -3, -1, INT32_MIN, -INT32_MAX};
  for (int i = 0; i < 5; ++i) ASSERT_EQ_INT(qv[i], want_q[i]);
  // exp(|v|) = [[1, e], [e^2, 1]]; the max over axis 0 is [e^2, e].
  ASSERT_NEAR(mv[0], 7.38905609893065, 1e-13);
  ASSERT_NEAR(mv[1], 2.718281828459045, 1e-14);
  for (int i = 0; i < 2; ++i) cml_buffer_release(out[i]);
  cml_executable_release(exe);
  cml_backend_release(backend);
}

//===--- out of memory ---===//

// Fails the |fail_at|-th allocation (1-based) and every later one; counts live bytes.
typedef struct failing_allocator_t {
  size_t count;
  size_t fail_at;
  size_t live_bytes;
} failing_allocator_t;

static void* failing_alloc(void* self, void* ptr, size_t old_size, size_t new_size,
                           size_t alignment) {
  failing_allocator_t* fa = self;
  if (new_size == 0) {
    if (ptr) fa->live_bytes -= old_size;
    free(ptr);
    return NULL;
  }
  if (++fa->count >= fa->fail_at) return NULL;
  void* p = NULL;
  if (posix_memalign(&p, alignment < sizeof(void*) ? sizeof(void*) : alignment, new_size) != 0) {
    return NULL;
  }
  if (ptr) {
    memcpy(p, ptr, old_size < new_size ? old_size : new_size);
    fa->live_bytes -= old_size;
    free(ptr);
  }
  fa->live_bytes += new_size;
  return p;
}

// Create ref, build, compile, run and download a small graph; every allocation goes through
// |allocator|.
static cml_status_t oom_round(cml_allocator_t allocator) {
  cml_backend_t* backend = NULL;
  CML_RETURN_IF_ERROR(cml_backend_create("ref", allocator, &backend));
  cml_builder_t* bld = NULL;
  cml_executable_t* exe = NULL;
  cml_buffer_t* out[1] = {NULL};
  cml_status_t st = cml_builder_create(backend, "oom", &bld);
  if (st == CML_OK) {
    cml_function_t* f = cml_builder_main(bld);
    cml_shape_t xs = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){2, 2});
    cml_value_t x = cml_parameter(f, "x", &xs);
    cml_value_t y = cml_op_reduce_sum(f, cml_op_dot(f, x, x), (int64_t[]){0}, 1);
    st = cml_function_return(f, &y, 1);
    if (st == CML_OK) st = cml_builder_compile(bld, &exe);
    cml_builder_destroy(bld);
  }
  const float xv[] = {1, 2, 3, 4};
  if (st == CML_OK) st = run(backend, exe, 0, (const void* const[]){xv}, 1, out);
  float got[2] = {0, 0};
  if (st == CML_OK) st = cml_buffer_copy_to_host(out[0], got, sizeof got);
  // x @ x = [[7, 10], [15, 22]]; summed over rows: [22, 32].
  if (st == CML_OK && (got[0] != 22 || got[1] != 32)) {
    st = cml_status_make(CML_STATUS_INTERNAL, "wrong result %g %g", got[0], got[1]);
  }
  if (out[0]) cml_buffer_release(out[0]);
  if (exe) cml_executable_release(exe);
  cml_backend_release(backend);
  return st;
}

TEST(out_of_memory_sweep) {
  ASSERT_STATUS_OK(ensure_ref_loaded());
  for (size_t n = 1;; ++n) {
    ASSERT_TRUE(n < 10000);
    failing_allocator_t fa = {0, n, 0};
    cml_allocator_t allocator = {&fa, failing_alloc};
    cml_status_t st = oom_round(allocator);
    if (st != CML_OK && cml_status_code(st) != CML_STATUS_RESOURCE_EXHAUSTED) {
      fprintf(stderr, "  allocation %zu failed: %s\n", n, cml_status_message(st));
    }
    bool done = st == CML_OK;
    ASSERT_STATUS_CODE(st, done ? CML_STATUS_OK : CML_STATUS_RESOURCE_EXHAUSTED);
    ASSERT_EQ_U64(fa.live_bytes, 0);  // nothing leaked, whatever failed
    if (done) break;
  }
}

//===--- what the backend lacks ---===//

TEST(unsupported_op_fails_at_build_time) {
  cml_backend_t* backend = NULL;
  ASSERT_STATUS_OK(new_ref("ref", &backend));
  cml_shape_t xs = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){3});

  // An op ref does not advertise: the builder refuses it when it is added.
  cml_builder_t* bld = NULL;
  ASSERT_STATUS_OK(cml_builder_create(backend, "sin", &bld));
  cml_function_t* f = cml_builder_main(bld);
  cml_value_t x = cml_parameter(f, "x", &xs);
  ASSERT_TRUE(x != CML_VALUE_INVALID);
  ASSERT_TRUE(cml_op_sin(f, x) == CML_VALUE_INVALID);
  ASSERT_TRUE(
      status_is(cml_builder_status(bld), CML_STATUS_UNIMPLEMENTED, NEEDLES("Sin", "\"ref\"")));
  cml_builder_destroy(bld);

  // A dtype ref does not advertise: refused at the first op that would hold it.
  ASSERT_STATUS_OK(cml_builder_create(backend, "i64", &bld));
  f = cml_builder_main(bld);
  cml_shape_t ls = cml_shape_make(CML_DTYPE_I64, 1, (int64_t[]){3});
  ASSERT_TRUE(cml_parameter(f, "l", &ls) == CML_VALUE_INVALID);
  ASSERT_TRUE(status_is(cml_builder_status(bld), CML_STATUS_UNIMPLEMENTED,
                        NEEDLES("Parameter", "Int64", "\"ref\"")));
  cml_builder_destroy(bld);

  // ConvertDType of an advertised dtype into another advertised dtype: still the op is missing.
  ASSERT_STATUS_OK(cml_builder_create(backend, "convert", &bld));
  f = cml_builder_main(bld);
  x = cml_parameter(f, "x", &xs);
  ASSERT_TRUE(cml_op_convert_dtype(f, x, CML_DTYPE_F64) == CML_VALUE_INVALID);
  cml_value_t dummy = x;
  ASSERT_TRUE(status_is(cml_function_return(f, &dummy, 1), CML_STATUS_UNIMPLEMENTED,
                        NEEDLES("ConvertDType", "\"ref\"")));
  cml_builder_destroy(bld);

  // DotGeneral on Float64: the capabilities cannot say "Float32 only", so the builder accepts
  // it and ref's compile refuses it, naming op, dtype and backend.
  ASSERT_STATUS_OK(cml_builder_create(backend, "dot64", &bld));
  f = cml_builder_main(bld);
  cml_shape_t ds = cml_shape_make(CML_DTYPE_F64, 2, (int64_t[]){2, 2});
  cml_value_t a = cml_parameter(f, "a", &ds);
  cml_value_t y = cml_op_dot(f, a, a);
  ASSERT_STATUS_OK(cml_function_return(f, &y, 1));
  cml_executable_t* exe = NULL;
  ASSERT_TRUE(status_is(cml_builder_compile(bld, &exe), CML_STATUS_UNIMPLEMENTED,
                        NEEDLES("DotGeneral", "Float64", "\"ref\"")));
  ASSERT_TRUE(exe == NULL);
  cml_builder_destroy(bld);

  // Float32 operands with a Float64 accumulator and output: the message names that dtype.
  ASSERT_STATUS_OK(cml_builder_create(backend, "dot32_64", &bld));
  f = cml_builder_main(bld);
  cml_shape_t fs = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){2, 2});
  a = cml_parameter(f, "a", &fs);
  cml_dot_config_t config;
  memset(&config, 0, sizeof config);
  config.lhs_contracting_count = 1;
  config.lhs_contracting_axes[0] = 1;
  config.rhs_contracting_count = 1;
  config.rhs_contracting_axes[0] = 0;
  config.accumulator_dtype = CML_DTYPE_F64;
  config.output_dtype = CML_DTYPE_F64;
  y = cml_op_dot_general(f, a, a, &config);
  ASSERT_STATUS_OK(cml_function_return(f, &y, 1));
  ASSERT_TRUE(status_is(cml_builder_compile(bld, &exe), CML_STATUS_UNIMPLEMENTED,
                        NEEDLES("DotGeneral", "accumulator dtype Float64", "\"ref\"")));
  ASSERT_TRUE(exe == NULL);
  cml_builder_destroy(bld);
  cml_backend_release(backend);
}

//===--- the compliance suite ---===//

// Runs the suite (or the cases matching |regex|) and checks: no failure, something passed,
// every other case skipped, and every advertised op covered by a passing case.
static cml_status_t run_suite(const char* config, const char* regex,
                              cml_backendtest_summary_t* sum) {
  cml_backend_t* backend = NULL;
  CML_RETURN_IF_ERROR(new_ref(config, &backend));
  cml_backendtest_options_t opts;
  cml_backendtest_options_init(&opts);
  opts.op_regex = regex;
  cml_status_t st = cml_backendtest_run_all(backend, &opts, sum);
  cml_backend_release(backend);
  return st;
}

TEST(compliance_suite) {
  cml_backendtest_summary_t sum;
  memset(&sum, 0, sizeof sum);
  ASSERT_STATUS_OK(run_suite("ref", NULL, &sum));
  ASSERT_EQ_U64(sum.failed, 0);
  ASSERT_EQ_U64(sum.uncovered_ops, 0);
  ASSERT_TRUE(sum.passed > 0);
  ASSERT_TRUE(sum.skipped > 0);  // ref runs a subset on purpose
  ASSERT_EQ_U64(sum.passed + sum.failed + sum.skipped, cml_backendtest_case_count());
}

// The execution group again with two devices: device copies and per-device execution.
TEST(compliance_exec_two_devices) {
  cml_backendtest_summary_t sum;
  memset(&sum, 0, sizeof sum);
  ASSERT_STATUS_OK(run_suite("ref:devices=2", "^exec/", &sum));
  ASSERT_EQ_U64(sum.failed, 0);
  ASSERT_TRUE(sum.passed > 0);
}

TEST_MAIN(TEST_ENTRY(load_registers_backend), TEST_ENTRY(duplicate_registration),
          TEST_ENTRY(self_registering_plugins_stay_loaded), TEST_ENTRY(load_errors),
          TEST_ENTRY(config_errors), TEST_ENTRY(small_graph_f32),
          TEST_ENTRY(small_graph_i32_f64_second_device),
          TEST_ENTRY(unsupported_op_fails_at_build_time), TEST_ENTRY(out_of_memory_sweep),
          TEST_ENTRY(compliance_suite), TEST_ENTRY(compliance_exec_two_devices))

#endif  // REF_PLUGIN_PATH
