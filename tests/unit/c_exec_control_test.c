// SPDX-License-Identifier: Apache-2.0
// tests/unit/c_exec_control_test.c: the c engine under execution control and in depth:
// cancelling an endless While from another thread, deadlines, tokens cancelled before or after
// an execution, concurrent executions with separate tokens, the scalar fast path against the
// reference kernels (bit for bit), and 256-deep Call / closure nests run on a thread with a
// 256 KiB stack.
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "cml/cml.h"
#include "test.h"

// A hang guard only: tests never assert timings, but a stop that never comes must fail.
#define HANG_GUARD_NS (20LL * 1000 * 1000 * 1000)

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
}

// main(x: f32[]) -> acc of: (i, acc) = (0, x); while (i < limit) { i + step; acc + 1 }.
// step = 0 makes the loop endless (the condition never turns false).
static cml_status_t compile_loop(cml_backend_t* backend, int32_t limit, int32_t step,
                                 cml_executable_t** out_exe) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(backend, "loop", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t is = cml_shape_scalar(CML_DTYPE_I32), fs = cml_shape_scalar(CML_DTYPE_F32);
  cml_value_t x = cml_parameter(f, "x", &fs);
  cml_function_t *cond = NULL, *body = NULL;
  cml_status_t st = cml_function_new_closure(f, &cond);
  if (st == CML_OK) st = cml_function_new_closure(f, &body);
  if (st == CML_OK) {
    cml_value_t i = cml_parameter(cond, "i", &is);
    (void)cml_parameter(cond, "acc", &fs);
    cml_value_t go = cml_op_less_than(cond, i, cml_constant_scalar_i64(cond, CML_DTYPE_I32, limit));
    st = cml_function_return(cond, &go, 1);
  }
  if (st == CML_OK) {
    cml_value_t i = cml_parameter(body, "i", &is);
    cml_value_t acc = cml_parameter(body, "acc", &fs);
    cml_value_t r[2] = {cml_op_add(body, i, cml_constant_scalar_i64(body, CML_DTYPE_I32, step)),
                        cml_op_add(body, acc, cml_constant_scalar_f64(body, CML_DTYPE_F32, 1))};
    st = cml_function_return(body, r, 2);
  }
  cml_value_t out[2] = {0, 0};
  if (st == CML_OK) {
    cml_value_t init[2] = {cml_constant_scalar_i64(f, CML_DTYPE_I32, 0), x};
    cml_op_while(f, cond, body, init, 2, out);
    st = cml_function_return(f, &out[1], 1);
  }
  if (st == CML_OK) st = cml_builder_compile(b, out_exe);
  cml_builder_destroy(b);
  return st;
}

static cml_buffer_t* scalar_f32(cml_backend_t* be, float v) {
  cml_shape_t s = cml_shape_scalar(CML_DTYPE_F32);
  cml_buffer_t* buf = NULL;
  cml_status_t st = cml_buffer_from_host(be, 0, &s, &v, sizeof v, &buf);
  cml_status_free(st);
  return buf;
}

typedef struct run_t {
  cml_executable_t* exe;
  cml_buffer_t* x;
  cml_execute_options_t opts;
  cml_buffer_t* out;
  cml_status_code_t code;
  atomic_int started;
  atomic_int done;
} run_t;

static void* run_main(void* arg) {
  run_t* r = (run_t*)arg;
  atomic_store(&r->started, 1);
  cml_status_t st = cml_executable_execute_with_options(r->exe, &r->x, 1, &r->opts, &r->out);
  r->code = cml_status_code(st);
  cml_status_free(st);
  atomic_store(&r->done, 1);
  return NULL;
}

// Waits until |r| finished (true) or the hang guard expired (false).
static bool wait_done(run_t* r) {
  int64_t start = now_ns();
  while (!atomic_load(&r->done)) {
    if (now_ns() - start > HANG_GUARD_NS) return false;
    sleep_ms(1);
  }
  return true;
}

TEST(cancel_endless_while_from_another_thread) {
  cml_backend_t* be = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("c", &be));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(compile_loop(be, 10, 0, &exe));
  ASSERT_TRUE(cml_executable_is_interruptible(exe));
  cml_cancel_token_t* token = NULL;
  ASSERT_STATUS_OK(cml_cancel_token_create(cml_allocator_system(), &token));
  ASSERT_FALSE(cml_cancel_token_is_cancelled(token));
  run_t r = {0};
  r.exe = exe;
  r.x = scalar_f32(be, 1.0f);
  r.out = (cml_buffer_t*)&r;  // must be reset to NULL by the failed call
  cml_execute_options_init(&r.opts);
  r.opts.cancel_token = token;
  pthread_t th;
  ASSERT_EQ_INT(pthread_create(&th, NULL, run_main, &r), 0);
  while (!atomic_load(&r.started)) sleep_ms(1);
  sleep_ms(30);  // let the loop spin
  ASSERT_FALSE(atomic_load(&r.done));
  cml_cancel_token_cancel(token);
  ASSERT_TRUE(cml_cancel_token_is_cancelled(token));
  bool finished = wait_done(&r);
  if (!finished) {
    fprintf(stderr, "the cancelled While did not stop\n");
    abort();  // the thread still runs: end the process rather than hang
  }
  pthread_join(th, NULL);
  ASSERT_EQ_INT(r.code, CML_STATUS_CANCELLED);
  ASSERT_TRUE(r.out == NULL);
  // The executable still works with a fresh token (contexts were returned intact).
  cml_executable_t* finite = NULL;
  ASSERT_STATUS_OK(compile_loop(be, 1000, 1, &finite));
  cml_buffer_t* out = NULL;
  ASSERT_STATUS_OK(cml_executable_execute(finite, &r.x, 1, NULL, 0, &out));
  float got = 0;
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(out, &got, sizeof got));
  ASSERT_EQ_DBL(got, 1001.0);
  cml_buffer_release(out);
  cml_executable_release(finite);
  cml_cancel_token_destroy(token);
  cml_buffer_release(r.x);
  cml_executable_release(exe);
  cml_backend_release(be);
}

TEST(deadline_stops_endless_while) {
  cml_backend_t* be = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("c", &be));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(compile_loop(be, 10, 0, &exe));
  cml_buffer_t* x = scalar_f32(be, 0.0f);
  cml_execute_options_t opts;
  cml_execute_options_init(&opts);
  opts.timeout_ns = 50 * 1000000LL;
  cml_buffer_t* out = NULL;
  run_t r = {0};
  r.exe = exe;
  r.x = x;
  r.opts = opts;
  pthread_t th;
  ASSERT_EQ_INT(pthread_create(&th, NULL, run_main, &r), 0);
  if (!wait_done(&r)) {
    fprintf(stderr, "the deadline did not stop the While\n");
    abort();
  }
  pthread_join(th, NULL);
  ASSERT_EQ_INT(r.code, CML_STATUS_DEADLINE_EXCEEDED);
  ASSERT_TRUE(r.out == NULL);
  // A generous deadline leaves a finite loop alone.
  cml_executable_t* finite = NULL;
  ASSERT_STATUS_OK(compile_loop(be, 100, 1, &finite));
  opts.timeout_ns = 60LL * 1000000000;
  ASSERT_STATUS_OK(cml_executable_execute_with_options(finite, &x, 1, &opts, &out));
  float got = -1;
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(out, &got, sizeof got));
  ASSERT_EQ_DBL(got, 100.0);
  cml_buffer_release(out);
  cml_executable_release(finite);
  cml_buffer_release(x);
  cml_executable_release(exe);
  cml_backend_release(be);
}

TEST(token_cancelled_before_and_after) {
  cml_backend_t* be = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("c", &be));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(compile_loop(be, 50, 1, &exe));
  cml_buffer_t* x = scalar_f32(be, 2.0f);
  cml_cancel_token_t* token = NULL;
  ASSERT_STATUS_OK(cml_cancel_token_create(cml_allocator_system(), &token));
  cml_execute_options_t opts;
  cml_execute_options_init(&opts);
  opts.cancel_token = token;
  // Not cancelled: runs to the end; a later cancel does not touch the finished result.
  cml_buffer_t* out = NULL;
  ASSERT_STATUS_OK(cml_executable_execute_with_options(exe, &x, 1, &opts, &out));
  cml_cancel_token_cancel(token);
  float got = 0;
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(out, &got, sizeof got));
  ASSERT_EQ_DBL(got, 52.0);
  cml_buffer_release(out);
  // Cancelled before execute: fails at once, no output, the donated input is not consumed.
  out = (cml_buffer_t*)&opts;
  bool donate[1] = {true};
  opts.donate = donate;
  ASSERT_STATUS_CODE(cml_executable_execute_with_options(exe, &x, 1, &opts, &out),
                     CML_STATUS_CANCELLED);
  ASSERT_TRUE(out == NULL);
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(x, &got, sizeof got));
  ASSERT_EQ_DBL(got, 2.0);
  // Options: NULL means the defaults; bad struct_size and negative timeouts are rejected.
  ASSERT_STATUS_OK(cml_executable_execute_with_options(exe, &x, 1, NULL, &out));
  cml_buffer_release(out);
  cml_execute_options_t bad;
  cml_execute_options_init(&bad);
  bad.timeout_ns = -1;
  ASSERT_STATUS_CODE(cml_executable_execute_with_options(exe, &x, 1, &bad, &out),
                     CML_STATUS_INVALID_ARGUMENT);
  cml_execute_options_init(&bad);
  bad.struct_size = 8;
  ASSERT_STATUS_CODE(cml_executable_execute_with_options(exe, &x, 1, &bad, &out),
                     CML_STATUS_INVALID_ARGUMENT);
  // Longer than this library's struct: built against newer headers, whose fields it cannot
  // honour.
  bad.struct_size = sizeof bad + 8;
  ASSERT_STATUS_CODE(cml_executable_execute_with_options(exe, &x, 1, &bad, &out),
                     CML_STATUS_INVALID_ARGUMENT);
  ASSERT_TRUE(out == NULL);
  cml_cancel_token_destroy(token);
  cml_cancel_token_destroy(NULL);
  cml_cancel_token_cancel(NULL);
  ASSERT_FALSE(cml_cancel_token_is_cancelled(NULL));
  ASSERT_STATUS_CODE(cml_cancel_token_create(cml_allocator_system(), NULL),
                     CML_STATUS_INVALID_ARGUMENT);
  cml_buffer_release(x);
  cml_executable_release(exe);
  cml_backend_release(be);
}

TEST(concurrent_executions_separate_tokens) {
  cml_backend_t* be = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("c", &be));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(compile_loop(be, 10, 0, &exe));
  enum { kRuns = 3 };
  run_t runs[kRuns];
  cml_cancel_token_t* tokens[kRuns];
  pthread_t threads[kRuns];
  memset(runs, 0, sizeof runs);
  for (int i = 0; i < kRuns; ++i) {
    ASSERT_STATUS_OK(cml_cancel_token_create(cml_allocator_system(), &tokens[i]));
    runs[i].exe = exe;
    runs[i].x = scalar_f32(be, (float)i);
    cml_execute_options_init(&runs[i].opts);
    runs[i].opts.cancel_token = tokens[i];
    ASSERT_EQ_INT(pthread_create(&threads[i], NULL, run_main, &runs[i]), 0);
  }
  for (int i = 0; i < kRuns; ++i) {
    while (!atomic_load(&runs[i].started)) sleep_ms(1);
  }
  // Cancelling one token stops only its execution.
  cml_cancel_token_cancel(tokens[1]);
  if (!wait_done(&runs[1])) abort();
  sleep_ms(20);
  ASSERT_FALSE(atomic_load(&runs[0].done));
  ASSERT_FALSE(atomic_load(&runs[2].done));
  cml_cancel_token_cancel(tokens[0]);
  cml_cancel_token_cancel(tokens[2]);
  for (int i = 0; i < kRuns; ++i) {
    if (!wait_done(&runs[i])) abort();
    pthread_join(threads[i], NULL);
    ASSERT_EQ_INT(runs[i].code, CML_STATUS_CANCELLED);
    ASSERT_TRUE(runs[i].out == NULL);
    cml_buffer_release(runs[i].x);
    cml_cancel_token_destroy(tokens[i]);
  }
  cml_executable_release(exe);
  cml_backend_release(be);
}

//===--- the scalar fast path is bit-identical to the kernels ---===//

typedef cml_value_t (*binary_fn)(cml_function_t*, cml_value_t, cml_value_t);

// Runs main(a, b) -> op(a, b) on one-element operands on |be|; writes the result's bytes.
static cml_status_t run_scalar_op(cml_backend_t* be, binary_fn op, cml_dtype_t dtype, const void* a,
                                  const void* b, void* out, size_t out_size) {
  cml_builder_t* bld = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(be, "scalar", &bld));
  cml_function_t* f = cml_builder_main(bld);
  cml_shape_t s = cml_shape_scalar(dtype);
  cml_value_t x = cml_parameter(f, "a", &s);
  cml_value_t y = cml_parameter(f, "b", &s);
  cml_value_t r = op ? op(f, x, y) : cml_op_logical_not(f, x);
  cml_executable_t* exe = NULL;
  cml_status_t st = cml_function_return(f, &r, 1);
  if (st == CML_OK) st = cml_builder_compile(bld, &exe);
  cml_builder_destroy(bld);
  cml_buffer_t *in[2] = {NULL, NULL}, *res = NULL;
  size_t bytes = cml_shape_byte_size(&s);
  if (st == CML_OK) st = cml_buffer_from_host(be, 0, &s, a, bytes, &in[0]);
  if (st == CML_OK) st = cml_buffer_from_host(be, 0, &s, b, bytes, &in[1]);
  if (st == CML_OK) st = cml_executable_execute(exe, in, 2, NULL, 0, &res);
  if (st == CML_OK) st = cml_buffer_copy_to_host(res, out, out_size);
  cml_buffer_release(res);
  cml_buffer_release(in[0]);
  cml_buffer_release(in[1]);
  cml_executable_release(exe);
  return st;
}

TEST(scalar_fast_path_matches_reference) {
  cml_backend_t *fast = NULL, *ref = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("c", &fast));
  ASSERT_STATUS_OK(cml_backend_new_with_config("c:reference=true", &ref));
  static const struct {
    const char* name;
    binary_fn fn;
    bool compare;
  } ops[] = {
      {"add", cml_op_add, false},
      {"sub", cml_op_sub, false},
      {"mul", cml_op_mul, false},
      {"div", cml_op_div, false},
      {"rem", cml_op_rem, false},
      {"max", cml_op_max, false},
      {"min", cml_op_min, false},
      {"eq", cml_op_equal, true},
      {"ne", cml_op_not_equal, true},
      {"lt", cml_op_less_than, true},
      {"le", cml_op_less_or_equal, true},
      {"gt", cml_op_greater_than, true},
      {"ge", cml_op_greater_or_equal, true},
  };
  // Operand pairs per dtype: wrap-around, NaN, -0, infinities, denormals, division by 0 and
  // by -1 (INT_MIN / -1), negative remainders.
  const int32_t i32[][2] = {{INT32_MAX, 1},   {INT32_MIN, -1}, {-7, 7},
                            {123456, 654321}, {-7, 0},         {-7, 2}};
  const int64_t i64[][2] = {{INT64_MAX, 1},         {INT64_MIN, 3},  {-5, -5},
                            {1LL << 40, 1LL << 30}, {INT64_MIN, -1}, {9, 0}};
  const uint32_t u32[][2] = {{0, 1}, {UINT32_MAX, 2}, {5, 5}, {1u << 31, 3}, {7, 0}};
  const uint64_t u64[][2] = {{0, 1}, {UINT64_MAX, UINT64_MAX}, {9, 2}, {1ull << 63, 2}, {3, 0}};
  const float f32[][2] = {{NAN, 1.0f},     {-0.0f, 0.0f}, {INFINITY, -INFINITY},
                          {1e-45f, 3e38f}, {0.1f, 0.2f},  {-7.5f, 2.0f},
                          {1.0f, 0.0f},    {-0.0f, 3.0f}, {5.0f, INFINITY}};
  const double f64[][2] = {{NAN, NAN}, {-0.0, 0.0}, {1e308, 1e308}, {4.9e-324, -1.0},
                           {0.1, 0.7}, {-7.5, 2.0}, {1.0, 0.0},     {1e300, 1e-300}};
  struct {
    cml_dtype_t dtype;
    const void* pairs;
    size_t count, size;
  } types[] = {
      {CML_DTYPE_I32, i32, 6, 4}, {CML_DTYPE_I64, i64, 6, 8}, {CML_DTYPE_U32, u32, 5, 4},
      {CML_DTYPE_U64, u64, 5, 8}, {CML_DTYPE_F32, f32, 9, 4}, {CML_DTYPE_F64, f64, 8, 8},
  };
  int checked = 0;
  for (size_t t = 0; t < sizeof types / sizeof types[0]; ++t) {
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; ++o) {
      for (size_t p = 0; p < types[t].count; ++p) {
        const uint8_t* a = (const uint8_t*)types[t].pairs + 2 * p * types[t].size;
        const uint8_t* b = a + types[t].size;
        uint8_t got[8] = {0}, want[8] = {0};
        size_t out_size = ops[o].compare ? 1 : types[t].size;
        ASSERT_STATUS_OK(run_scalar_op(fast, ops[o].fn, types[t].dtype, a, b, got, out_size));
        ASSERT_STATUS_OK(run_scalar_op(ref, ops[o].fn, types[t].dtype, a, b, want, out_size));
        if (memcmp(got, want, out_size) != 0) {
          fprintf(stderr, "%s %s pair %zu: fast path differs from the reference\n", ops[o].name,
                  cml_dtype_name(types[t].dtype), p);
          ASSERT_TRUE(false);
        }
        ++checked;
      }
    }
  }
  // Bool: logical ops and comparisons over all pairs (bytes other than 0/1 read as true).
  static const struct {
    binary_fn fn;
  } bool_ops[] = {{cml_op_logical_and}, {cml_op_logical_or}, {cml_op_logical_xor},
                  {cml_op_equal},       {cml_op_less_than},  {NULL}};
  for (size_t o = 0; o < sizeof bool_ops / sizeof bool_ops[0]; ++o) {
    for (int a = 0; a < 2; ++a) {
      for (int b = 0; b < 2; ++b) {
        uint8_t av = (uint8_t)a, bv = (uint8_t)b, got = 9, want = 7;
        ASSERT_STATUS_OK(run_scalar_op(fast, bool_ops[o].fn, CML_DTYPE_BOOL, &av, &bv, &got, 1));
        ASSERT_STATUS_OK(run_scalar_op(ref, bool_ops[o].fn, CML_DTYPE_BOOL, &av, &bv, &want, 1));
        ASSERT_EQ_INT(got, want);
        ++checked;
      }
    }
  }
  ASSERT_EQ_INT(checked, 13 * 39 + 6 * 4);
  cml_backend_release(fast);
  cml_backend_release(ref);
}

//===--- depth: 256-deep nests on a 256 KiB stack ---===//

enum { kDepth = 256 };

// main(x: f32[]) -> f_1(x), f_k(x) = f_{k+1}(x) + 1, f_depth(x) = x + 1: named functions.
static cml_status_t compile_call_chain(cml_backend_t* be, int depth, cml_executable_t** out) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(be, "chain", &b));
  cml_shape_t fs = cml_shape_scalar(CML_DTYPE_F32);
  cml_function_t* callee = NULL;
  cml_status_t st = CML_OK;
  for (int k = depth; k >= 1 && st == CML_OK; --k) {
    char name[32];
    snprintf(name, sizeof name, "f%d", k);
    cml_function_t* fn = NULL;
    st = cml_builder_new_function(b, name, &fn);
    if (st != CML_OK) break;
    cml_value_t x = cml_parameter(fn, "x", &fs);
    cml_value_t y = x;
    if (callee) cml_op_call(fn, callee, &x, 1, &y);
    y = cml_op_add(fn, y, cml_constant_scalar_f64(fn, CML_DTYPE_F32, 1));
    st = cml_function_return(fn, &y, 1);
    callee = fn;
  }
  if (st == CML_OK) {
    cml_function_t* f = cml_builder_main(b);
    cml_value_t x = cml_parameter(f, "x", &fs);
    cml_value_t y = CML_VALUE_INVALID;
    cml_op_call(f, callee, &x, 1, &y);
    st = cml_function_return(f, &y, 1);
  }
  if (st == CML_OK) st = cml_builder_compile(b, out);
  cml_builder_destroy(b);
  return st;
}

// Closures nested |depth| deep: c_1 of main, c_k of c_{k-1}; c_depth returns main's x + 1 (a
// capture through every level) and c_k returns Call(c_{k+1}) + 1.
static cml_status_t compile_closure_nest(cml_backend_t* be, int depth, cml_executable_t** out) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(be, "nest", &b));
  cml_shape_t fs = cml_shape_scalar(CML_DTYPE_F32);
  cml_function_t* f = cml_builder_main(b);
  cml_value_t x = cml_parameter(f, "x", &fs);
  cml_function_t* chain[kDepth + 1];
  chain[0] = f;
  cml_status_t st = CML_OK;
  for (int k = 1; k <= depth && st == CML_OK; ++k)
    st = cml_function_new_closure(chain[k - 1], &chain[k]);
  for (int k = depth; k >= 1 && st == CML_OK; --k) {
    cml_function_t* c = chain[k];
    cml_value_t y = x;  // captured from main through every level
    if (k < depth) cml_op_call(c, chain[k + 1], NULL, 0, &y);
    y = cml_op_add(c, y, cml_constant_scalar_f64(c, CML_DTYPE_F32, 1));
    st = cml_function_return(c, &y, 1);
  }
  if (st == CML_OK) {
    cml_value_t y = CML_VALUE_INVALID;
    cml_op_call(f, chain[1], NULL, 0, &y);
    st = cml_function_return(f, &y, 1);
  }
  if (st == CML_OK) st = cml_builder_compile(b, out);
  cml_builder_destroy(b);
  return st;
}

typedef struct deep_run_t {
  cml_executable_t* exe;
  cml_buffer_t* x;
  float result;
  cml_status_code_t code;
} deep_run_t;

static void* deep_main(void* arg) {
  deep_run_t* r = (deep_run_t*)arg;
  cml_buffer_t* out = NULL;
  cml_status_t st = cml_executable_execute(r->exe, &r->x, 1, NULL, 0, &out);
  if (st == CML_OK) st = cml_buffer_copy_to_host(out, &r->result, sizeof r->result);
  r->code = cml_status_code(st);
  cml_status_free(st);
  cml_buffer_release(out);
  return NULL;
}

// Compiles with |compile| at the deepest depth <= kDepth the core accepts (it may limit nesting
// to CML_MAX_NESTING_DEPTH levels), at least kDepth - 8, and runs it on a 256 KiB stack.
static int run_deep(cml_status_t (*compile)(cml_backend_t*, int, cml_executable_t**),
                    float* out_result, int* out_depth) {
  cml_backend_t* be = NULL;
  cml_status_t st = cml_backend_new_with_config("c", &be);
  if (st != CML_OK) return (int)cml_status_code(st);
  cml_executable_t* exe = NULL;
  int depth = kDepth;
  for (; depth >= kDepth - 8; --depth) {
    st = compile(be, depth, &exe);
    if (st == CML_OK) break;
    if (depth == kDepth - 8) fprintf(stderr, "depth %d: %s\n", depth, cml_status_message(st));
    cml_status_free(st);
  }
  int code = exe ? 0 : CML_STATUS_INTERNAL;
  if (exe) {
    deep_run_t r = {exe, scalar_f32(be, 0.5f), 0, CML_STATUS_OK};
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    pthread_t th;
    if (pthread_create(&th, &attr, deep_main, &r) == 0) {
      pthread_join(th, NULL);
      code = (int)r.code;
    } else {
      code = CML_STATUS_INTERNAL;
    }
    pthread_attr_destroy(&attr);
    *out_result = r.result;
    cml_buffer_release(r.x);
  }
  *out_depth = depth;
  if (depth != kDepth) fprintf(stderr, "note: the core accepted a nest of %d levels\n", depth);
  cml_executable_release(exe);
  cml_backend_release(be);
  return code;
}

TEST(deep_call_chain_on_small_stack) {
  float result = 0;
  int depth = 0;
  ASSERT_EQ_INT(run_deep(compile_call_chain, &result, &depth), CML_STATUS_OK);
  ASSERT_TRUE(depth >= kDepth - 8);
  ASSERT_EQ_DBL(result, 0.5 + depth);
}

TEST(deep_closure_nest_on_small_stack) {
  float result = 0;
  int depth = 0;
  ASSERT_EQ_INT(run_deep(compile_closure_nest, &result, &depth), CML_STATUS_OK);
  ASSERT_TRUE(depth >= kDepth - 8);
  ASSERT_EQ_DBL(result, 0.5 + depth);
}

// The deepest kernel frames on the caller's thread: a fused column reduction (Exp fused into a
// ReduceMax over axis 0, beside a plain column ReduceSum) keeps about 89 KiB of tiles on the
// stack of the thread running chunk 0, which is the caller. docs/engine.md asks callers for
// 128 KiB (a 96 KiB thread overflowed in an outside test); ASan's redzones need more.
#if defined(__SANITIZE_ADDRESS__)
enum { kCallerStack = 512 << 10 };
#else
enum { kCallerStack = 128 << 10 };
#endif

typedef struct column_run_t {
  cml_executable_t* exe;
  cml_buffer_t* x;
  float sum0, max0;
  cml_status_code_t code;
} column_run_t;

static void* column_main(void* arg) {
  column_run_t* r = (column_run_t*)arg;
  cml_buffer_t* out[2] = {NULL, NULL};
  cml_status_t st = cml_executable_execute(r->exe, &r->x, 1, NULL, 0, out);
  float row[512];
  if (st == CML_OK) st = cml_buffer_copy_to_host(out[0], row, sizeof row);
  r->sum0 = row[0];
  if (st == CML_OK) st = cml_buffer_copy_to_host(out[1], row, sizeof row);
  r->max0 = row[0];
  r->code = cml_status_code(st);
  cml_status_free(st);
  cml_buffer_release(out[0]);
  cml_buffer_release(out[1]);
  return NULL;
}

TEST(fused_column_reduction_on_a_small_stack) {
  static const char* const configs[] = {"c", "c:threads=1"};
  for (int k = 0; k < 2; ++k) {
    cml_backend_t* be = NULL;
    ASSERT_STATUS_OK(cml_backend_new_with_config(configs[k], &be));
    cml_builder_t* b = NULL;
    ASSERT_STATUS_OK(cml_builder_create(be, "columns", &b));
    cml_function_t* f = cml_builder_main(b);
    cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){1024, 512});
    cml_value_t x = cml_parameter(f, "x", &s);
    cml_value_t y[2] = {cml_op_reduce_sum(f, x, (int64_t[]){0}, 1),
                        cml_op_reduce_max(f, cml_op_exp(f, x), (int64_t[]){0}, 1)};
    cml_executable_t* exe = NULL;
    cml_status_t st = cml_function_return(f, y, 2);
    if (st == CML_OK) st = cml_builder_compile(b, &exe);
    cml_builder_destroy(b);
    ASSERT_STATUS_OK(st);
    // Column 0 holds i / 1024 at row i: its sum is 511.5, its largest exp is exp(1023 / 1024).
    float* host = calloc(1024 * 512, sizeof(float));
    ASSERT_TRUE(host != NULL);
    for (int i = 0; i < 1024; ++i) host[i * 512] = (float)i / 1024.0f;
    column_run_t r = {exe, NULL, 0, 0, CML_STATUS_INTERNAL};
    st = cml_buffer_from_host(be, 0, &s, host, 1024 * 512 * sizeof(float), &r.x);
    free(host);
    ASSERT_STATUS_OK(st);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, kCallerStack);
    pthread_t th;
    ASSERT_EQ_INT(pthread_create(&th, &attr, column_main, &r), 0);
    pthread_join(th, NULL);
    pthread_attr_destroy(&attr);
    cml_buffer_release(r.x);
    cml_executable_release(exe);
    cml_backend_release(be);
    ASSERT_EQ_INT(r.code, CML_STATUS_OK);
    ASSERT_NEAR(r.sum0, 511.5, 1e-3);
    ASSERT_NEAR(r.max0, exp(1023.0 / 1024.0), 1e-6);
  }
}

TEST_MAIN(TEST_ENTRY(cancel_endless_while_from_another_thread),
          TEST_ENTRY(deadline_stops_endless_while), TEST_ENTRY(token_cancelled_before_and_after),
          TEST_ENTRY(concurrent_executions_separate_tokens),
          TEST_ENTRY(scalar_fast_path_matches_reference),
          TEST_ENTRY(deep_call_chain_on_small_stack), TEST_ENTRY(deep_closure_nest_on_small_stack),
          TEST_ENTRY(fused_column_reduction_on_a_small_stack))
