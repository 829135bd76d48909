// SPDX-License-Identifier: Apache-2.0
// tests/unit/api_nesting_test.c: deep nesting and large graphs through the public API: the
// CML_MAX_NESTING_DEPTH limit (closures in closures, Call chains, both together), 255-deep
// nesting built, compiled and run from a thread with a 256 KiB stack (c, and xla:cpu when its
// plugin is installed), and build times of 1k/10k/100k sequential Ifs and ops (printed, never
// asserted: the builder is linear in the number of ops).
#include <math.h>
#include <pthread.h>
#include <time.h>

#include "api_common.h"
#include "test.h"

enum { kSmallStack = 256 * 1024 };

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// Runs |fn|(|arg|) on a new thread with a |stack|-byte stack and waits for it.
static bool run_on_stack(size_t stack, void* (*fn)(void*), void* arg) {
  pthread_attr_t attr;
  pthread_t thread;
  if (pthread_attr_init(&attr) != 0) return false;
  bool ok = pthread_attr_setstacksize(&attr, stack) == 0 &&
            pthread_create(&thread, &attr, fn, arg) == 0 && pthread_join(thread, NULL) == 0;
  pthread_attr_destroy(&attr);
  return ok;
}

static bool run_on_small_stack(void* (*fn)(void*), void* arg) {
  return run_on_stack(kSmallStack, fn, arg);
}

// Runs a main that takes (x: f32 scalar, p: bool scalar) and returns one f32 scalar.
static cml_status_t run_x_p(cml_backend_t* be, cml_executable_t* exe, float x, bool p, float* out) {
  uint8_t pb = p ? 1 : 0;
  const void* in[2] = {&x, &pb};
  void* outs[1] = {out};
  return api_run(be, exe, in, outs);
}

//===--- 255-deep nesting: builds, compiles, runs on a 256 KiB stack ---===//

enum { kDeep = CML_MAX_NESTING_DEPTH - 1 };  // closures below main: main + 255 = 256 levels

typedef struct deep_job_t {
  const char* config;
  int depth;               // closures below main
  cml_status_code_t code;  // of the first failure
  char message[512];
  float result_true, result_false;
  bool skipped;
} deep_job_t;

static void deep_fail(deep_job_t* job, cml_status_t st) {
  job->code = api_code_msg(st, job->message, sizeof job->message);
}

// main(x, p): c_0 = main; c_k = closure of c_{k-1} (k = 1..255), e_k = closure of c_{k-1}
// returning x. c_255 returns 2x (x captured through 255 levels); c_k (k < 255) returns
// If(p, c_{k+1}, e_{k+1}) + 1. So main gives 2x + 255 when p, else x + 1.
static void* deep_if_job(void* arg) {
  deep_job_t* job = (deep_job_t*)arg;
  cml_backend_t* be = NULL;
  cml_status_t st = cml_backend_new_with_config(job->config, &be);
  if (st != CML_OK) {
    job->skipped = true;
    deep_fail(job, st);
    return NULL;
  }
  static cml_function_t* chain[kDeep + 1];
  static cml_function_t* other[kDeep + 1];
  const int deep = job->depth;
  cml_builder_t* b = NULL;
  st = cml_builder_create(be, "deep_if", &b);
  cml_executable_t* exe = NULL;
  if (st == CML_OK) {
    chain[0] = cml_builder_main(b);
    cml_shape_t xs = cml_shape_scalar(CML_DTYPE_F32), ps = cml_shape_scalar(CML_DTYPE_BOOL);
    cml_value_t x = cml_parameter(chain[0], "x", &xs);
    cml_value_t p = cml_parameter(chain[0], "p", &ps);
    for (int k = 1; k <= deep && st == CML_OK; ++k) {
      st = cml_function_new_closure(chain[k - 1], &chain[k]);
      if (st == CML_OK) st = cml_function_new_closure(chain[k - 1], &other[k]);
      if (st == CML_OK) st = cml_function_return(other[k], &x, 1);
    }
    if (st == CML_OK) {
      cml_value_t two = cml_constant_scalar_f64(chain[deep], CML_DTYPE_F32, 2.0);
      cml_value_t r = cml_op_mul(chain[deep], x, two);
      st = cml_function_return(chain[deep], &r, 1);
    }
    for (int k = deep - 1; k > 0 && st == CML_OK; --k) {
      cml_value_t r = CML_VALUE_INVALID;
      (void)cml_op_if(chain[k], p, chain[k + 1], other[k + 1], &r);
      r = cml_op_add(chain[k], r, cml_constant_scalar_f64(chain[k], CML_DTYPE_F32, 1.0));
      st = cml_function_return(chain[k], &r, 1);
    }
    if (st == CML_OK) {
      cml_value_t r = CML_VALUE_INVALID;
      (void)cml_op_if(chain[0], p, chain[1], other[1], &r);
      r = cml_op_add(chain[0], r, cml_constant_scalar_f64(chain[0], CML_DTYPE_F32, 1.0));
      st = api_finish(b, &r, 1, &exe);  // destroys the builder
    } else {
      cml_builder_destroy(b);
    }
  }
  if (st == CML_OK) st = run_x_p(be, exe, 1.5f, true, &job->result_true);
  if (st == CML_OK) st = run_x_p(be, exe, 1.5f, false, &job->result_false);
  if (st != CML_OK) deep_fail(job, st);
  cml_executable_release(exe);
  cml_backend_release(be);
  return NULL;
}

static void check_deep_if(int* test_failed_, const char* config, int depth, size_t stack) {
  deep_job_t job;
  memset(&job, 0, sizeof job);
  job.config = config;
  job.depth = depth;
  double t0 = now_seconds();
  ASSERT_TRUE(run_on_stack(stack, deep_if_job, &job));
  if (job.skipped) {
    printf("  %s: skipped (%s)\n", config, job.message);
    return;
  }
  if (job.code != CML_STATUS_OK) TEST_FAIL_("%s: %s", config, job.message);
  printf("  %s: %d nested Ifs built, compiled, run twice on a %zu KiB stack in %.3f s\n", config,
         depth, stack / 1024, now_seconds() - t0);
  ASSERT_EQ_DBL(job.result_true, 2 * 1.5 + depth);
  ASSERT_EQ_DBL(job.result_false, 1.5 + 1);
}

TEST(nested_ifs_255_on_small_stack_c) { check_deep_if(test_failed_, "c", kDeep, kSmallStack); }

// xla:cpu: the PJRT plugin's own compiler needs far more than 256 KiB of stack for nested
// regions (about 12 KiB a level); the backend compiles on a thread of its own with a large
// stack, so a caller with a 256 KiB stack compiles nested modules too. XLA's compile time grows
// steeply with the depth (255 nested Ifs: minutes), so this checks a moderate depth.
TEST(nested_ifs_on_xla_cpu) { check_deep_if(test_failed_, "xla:cpu", 48, kSmallStack); }

//===--- the limit: 3,000 nested closures fail fast and stay failed ---===//

typedef struct limit_job_t {
  int created;  // closures created before the failure
  cml_status_code_t code, sticky_code, compile_code;
  char message[512], compile_message[512];
  double seconds;
} limit_job_t;

static void* nested_limit_job(void* arg) {
  limit_job_t* job = (limit_job_t*)arg;
  cml_backend_t* be = NULL;
  if (cml_backend_new_with_config("c", &be) != CML_OK) return NULL;
  cml_builder_t* b = NULL;
  if (cml_builder_create(be, "too_deep", &b) != CML_OK) {
    cml_backend_release(be);
    return NULL;
  }
  double t0 = now_seconds();
  cml_function_t* cur = cml_builder_main(b);
  cml_shape_t xs = cml_shape_scalar(CML_DTYPE_F32);
  cml_value_t x = cml_parameter(cur, "x", &xs);
  // As a user writing 3,000 nested Ifs would: open closures in closures, use x in each.
  for (int k = 0; k < 3000; ++k) {
    cml_function_t* next = NULL;
    cml_status_t st = cml_function_new_closure(cur, &next);
    if (st != CML_OK) {
      job->code = api_code_msg(st, job->message, sizeof job->message);
      break;
    }
    ++job->created;
    (void)cml_op_neg(next, x);
    cur = next;
  }
  job->sticky_code = api_code(cml_builder_status(b));
  cml_executable_t* exe = NULL;
  cml_status_t st = cml_function_return(cml_builder_main(b), &x, 1);
  if (st == CML_OK) st = cml_builder_compile(b, &exe);
  job->compile_code = api_code_msg(st, job->compile_message, sizeof job->compile_message);
  job->seconds = now_seconds() - t0;
  cml_executable_release(exe);
  cml_builder_destroy(b);
  cml_backend_release(be);
  return NULL;
}

TEST(nested_closures_3000_fail_fast) {
  limit_job_t job;
  memset(&job, 0, sizeof job);
  ASSERT_TRUE(run_on_small_stack(nested_limit_job, &job));
  printf("  3000 nested closures: stopped after %d in %.4f s: %s\n", job.created, job.seconds,
         job.message);
  ASSERT_EQ_INT(job.created, CML_MAX_NESTING_DEPTH - 1);
  ASSERT_EQ_INT(job.code, CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(job.message, "nesting depth 257");
  ASSERT_CONTAINS(job.message, "CML_MAX_NESTING_DEPTH (256)");
  ASSERT_EQ_INT(job.sticky_code, CML_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ_INT(job.compile_code, CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(job.compile_message, "CML_MAX_NESTING_DEPTH");
}

//===--- Call chains count too ---===//

// Named functions g_1..g_n: g_1(x) = x + 1, g_k(x) = g_{k-1}(x) + 1. g_k nests k levels.
static cml_status_t build_call_chain(cml_builder_t* b, int n, cml_function_t** out_last) {
  cml_shape_t xs = cml_shape_scalar(CML_DTYPE_F32);
  cml_function_t* prev = NULL;
  for (int k = 1; k <= n; ++k) {
    char name[32];
    snprintf(name, sizeof name, "g_%d", k);
    cml_function_t* g = NULL;
    CML_RETURN_IF_ERROR(cml_builder_new_function(b, name, &g));
    cml_value_t x = cml_parameter(g, "x", &xs);
    cml_value_t y = x;
    if (prev) (void)cml_op_call(g, prev, &x, 1, &y);
    y = cml_op_add(g, y, cml_constant_scalar_f64(g, CML_DTYPE_F32, 1.0));
    CML_RETURN_IF_ERROR(cml_function_return(g, &y, 1));
    prev = g;
  }
  *out_last = prev;
  return CML_OK;
}

typedef struct call_job_t {
  cml_status_code_t too_deep_code, closure_code, ok_code;
  char too_deep_message[512], closure_message[512], ok_message[512];
  float result;
} call_job_t;

static void* call_chain_job(void* arg) {
  call_job_t* job = (call_job_t*)arg;
  cml_backend_t* be = NULL;
  if (cml_backend_new_with_config("c", &be) != CML_OK) return NULL;
  cml_shape_t xs = cml_shape_scalar(CML_DTYPE_F32), ps = cml_shape_scalar(CML_DTYPE_BOOL);
  // main -> g_256: 257 levels, the Call in main fails.
  cml_builder_t* b = NULL;
  cml_function_t* g = NULL;
  cml_status_t st = cml_builder_create(be, "calls", &b);
  if (st == CML_OK) st = build_call_chain(b, CML_MAX_NESTING_DEPTH, &g);
  if (st == CML_OK) {
    cml_function_t* m = cml_builder_main(b);
    cml_value_t x = cml_parameter(m, "x", &xs), y = CML_VALUE_INVALID;
    if (cml_op_call(m, g, &x, 1, &y)) st = cml_status_from_code(CML_STATUS_INTERNAL);
    if (st == CML_OK) st = cml_builder_status(b);
  }
  job->too_deep_code = api_code_msg(st, job->too_deep_message, sizeof job->too_deep_message);
  cml_builder_destroy(b);
  // main -> If branch (depth 2) -> g_255: 257 levels, the Call in the branch fails.
  b = NULL;
  st = cml_builder_create(be, "calls", &b);
  if (st == CML_OK) st = build_call_chain(b, CML_MAX_NESTING_DEPTH - 1, &g);
  if (st == CML_OK) {
    cml_function_t* m = cml_builder_main(b);
    cml_function_t* branch = NULL;
    cml_value_t x = cml_parameter(m, "x", &xs), y = CML_VALUE_INVALID;
    st = cml_function_new_closure(m, &branch);
    if (st == CML_OK && cml_op_call(branch, g, &x, 1, &y)) {
      st = cml_status_from_code(CML_STATUS_INTERNAL);
    }
    if (st == CML_OK) st = cml_builder_status(b);
  }
  job->closure_code = api_code_msg(st, job->closure_message, sizeof job->closure_message);
  cml_builder_destroy(b);
  // main -> g_255: 256 levels, builds and runs (x + 255).
  b = NULL;
  cml_executable_t* exe = NULL;
  st = cml_builder_create(be, "calls", &b);
  if (st == CML_OK) st = build_call_chain(b, CML_MAX_NESTING_DEPTH - 1, &g);
  if (st == CML_OK) {
    cml_function_t* m = cml_builder_main(b);
    cml_value_t x = cml_parameter(m, "x", &xs);
    (void)cml_parameter(m, "p", &ps);
    cml_value_t y = CML_VALUE_INVALID;
    (void)cml_op_call(m, g, &x, 1, &y);
    st = api_finish(b, &y, 1, &exe);
    b = NULL;
  }
  if (st == CML_OK) st = run_x_p(be, exe, 0.5f, true, &job->result);
  job->ok_code = api_code_msg(st, job->ok_message, sizeof job->ok_message);
  cml_builder_destroy(b);
  cml_executable_release(exe);
  cml_backend_release(be);
  return NULL;
}

TEST(call_chains_count_toward_the_limit) {
  call_job_t job;
  memset(&job, 0, sizeof job);
  ASSERT_TRUE(run_on_small_stack(call_chain_job, &job));
  printf("  main -> g_256: %s\n  branch -> g_255: %s\n", job.too_deep_message, job.closure_message);
  ASSERT_EQ_INT(job.too_deep_code, CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(job.too_deep_message, "Call");
  ASSERT_CONTAINS(job.too_deep_message, "g_256");
  ASSERT_CONTAINS(job.too_deep_message, "nesting depth 257");
  ASSERT_CONTAINS(job.too_deep_message, "CML_MAX_NESTING_DEPTH (256)");
  ASSERT_EQ_INT(job.closure_code, CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(job.closure_message, "nesting depth 257");
  if (job.ok_code != CML_STATUS_OK) TEST_FAIL_("main -> g_255: %s", job.ok_message);
  ASSERT_EQ_DBL(job.result, 0.5f + (CML_MAX_NESTING_DEPTH - 1));
}

//===--- scale: sequential Ifs and long op chains (times printed) ---===//

// main(x, p): n sequential Ifs, acc = If(p, {acc + 1}, {acc - 1}); gives x + n when p.
static void check_sequential_ifs(int* test_failed_, cml_backend_t* be, int n, bool run) {
  double t0 = now_seconds();
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(be, "ifs", &b));
  cml_function_t* m = cml_builder_main(b);
  cml_shape_t xs = cml_shape_scalar(CML_DTYPE_F32), ps = cml_shape_scalar(CML_DTYPE_BOOL);
  cml_value_t acc = cml_parameter(m, "x", &xs);
  cml_value_t p = cml_parameter(m, "p", &ps);
  cml_value_t one = cml_constant_scalar_f64(m, CML_DTYPE_F32, 1.0);
  cml_status_t st = CML_OK;
  for (int i = 0; i < n && st == CML_OK; ++i) {
    cml_function_t *t = NULL, *e = NULL;
    st = cml_function_new_closure(m, &t);
    if (st == CML_OK) st = cml_function_new_closure(m, &e);
    if (st != CML_OK) break;
    cml_value_t up = cml_op_add(t, acc, one), down = cml_op_sub(e, acc, one);
    st = cml_function_return(t, &up, 1);
    if (st == CML_OK) st = cml_function_return(e, &down, 1);
    if (st == CML_OK) (void)cml_op_if(m, p, t, e, &acc);
  }
  if (st != CML_OK) cml_builder_destroy(b);
  ASSERT_STATUS_OK(st);
  double built = now_seconds() - t0;
  cml_executable_t* exe = NULL;
  if (!run) {
    ASSERT_STATUS_OK(cml_function_return(m, &acc, 1));
    ASSERT_STATUS_OK(cml_builder_status(b));
    cml_builder_destroy(b);
    printf("  %6d sequential Ifs: built in %.4f s (not compiled)\n", n, built);
    return;
  }
  ASSERT_STATUS_OK(api_finish(b, &acc, 1, &exe));
  double compiled = now_seconds() - t0 - built;
  float out = 0;
  cml_status_t rs = run_x_p(be, exe, 0.25f, true, &out);
  cml_executable_release(exe);
  ASSERT_STATUS_OK(rs);
  printf("  %6d sequential Ifs: built in %.4f s, compiled in %.4f s\n", n, built, compiled);
  ASSERT_EQ_DBL(out, 0.25f + (float)n);
}

// main(x, p): n chained ops acc = acc + 1; gives x + n.
static void check_op_chain(int* test_failed_, cml_backend_t* be, int n, bool run) {
  double t0 = now_seconds();
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(be, "chain", &b));
  cml_function_t* m = cml_builder_main(b);
  cml_shape_t xs = cml_shape_scalar(CML_DTYPE_F32), ps = cml_shape_scalar(CML_DTYPE_BOOL);
  cml_value_t acc = cml_parameter(m, "x", &xs);
  (void)cml_parameter(m, "p", &ps);
  cml_value_t one = cml_constant_scalar_f64(m, CML_DTYPE_F32, 1.0);
  for (int i = 0; i < n; ++i) acc = cml_op_add(m, acc, one);
  double built = now_seconds() - t0;
  ASSERT_STATUS_OK(cml_builder_status(b));
  if (!run) {
    ASSERT_STATUS_OK(cml_function_return(m, &acc, 1));
    cml_builder_destroy(b);
    printf("  %6d chained ops:    built in %.4f s (not compiled)\n", n, built);
    return;
  }
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(b, &acc, 1, &exe));
  double compiled = now_seconds() - t0 - built;
  float out = 0;
  cml_status_t rs = run_x_p(be, exe, 0.5f, true, &out);
  cml_executable_release(exe);
  ASSERT_STATUS_OK(rs);
  printf("  %6d chained ops:    built in %.4f s, compiled in %.4f s\n", n, built, compiled);
  ASSERT_EQ_DBL(out, 0.5f + (float)n);
}

// Many parameters and named functions: duplicate-name checks are hashed, not linear scans.
static void check_many_names(int* test_failed_, cml_backend_t* be, int n) {
  double t0 = now_seconds();
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(be, "names", &b));
  cml_function_t* m = cml_builder_main(b);
  cml_shape_t xs = cml_shape_scalar(CML_DTYPE_F32);
  cml_value_t first = CML_VALUE_INVALID;
  for (int i = 0; i < n; ++i) {
    char name[32];
    snprintf(name, sizeof name, "x%d", i);
    cml_value_t v = cml_parameter(m, name, &xs);
    if (i == 0) first = v;
    cml_function_t* g = NULL;
    snprintf(name, sizeof name, "g%d", i);
    cml_status_t st = cml_builder_new_function(b, name, &g);
    if (st != CML_OK) cml_builder_destroy(b);
    ASSERT_STATUS_OK(st);
  }
  double built = now_seconds() - t0;
  cml_function_t* dup = NULL;
  cml_status_t st = cml_builder_new_function(b, "g7", &dup);
  cml_status_code_t dup_code = api_code(st);
  ASSERT_STATUS_OK(cml_builder_status(b));
  ASSERT_EQ_INT(cml_parameter(m, "x7", &xs), CML_VALUE_INVALID);
  cml_status_code_t param_code = api_code(cml_builder_status(b));
  (void)first;
  cml_builder_destroy(b);
  printf("  %6d parameters and named functions: %.4f s\n", n, built);
  ASSERT_EQ_INT(dup_code, CML_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ_INT(param_code, CML_STATUS_INVALID_ARGUMENT);
}

TEST(scale_sequential_ifs_and_ops) {
  cml_backend_t* be = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("c", &be));
  const int sizes[] = {1000, 10000, 100000};
  for (size_t i = 0; i < 3; ++i) {
    check_sequential_ifs(test_failed_, be, sizes[i], sizes[i] <= 10000);
    if (*test_failed_) break;
    check_op_chain(test_failed_, be, sizes[i], true);
    if (*test_failed_) break;
    check_many_names(test_failed_, be, sizes[i]);
    if (*test_failed_) break;
  }
  cml_backend_release(be);
}

TEST_MAIN(TEST_ENTRY(nested_ifs_255_on_small_stack_c), TEST_ENTRY(nested_ifs_on_xla_cpu),
          TEST_ENTRY(nested_closures_3000_fail_fast),
          TEST_ENTRY(call_chains_count_toward_the_limit), TEST_ENTRY(scale_sequential_ifs_and_ops))
