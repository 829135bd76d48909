// SPDX-License-Identifier: Apache-2.0
// tests/unit/api_oom_test.c: an out-of-memory sweep through the public API. A backend created
// with a failing allocator (`cml_backend_create`) fails its Nth allocation, for N = 1, 2, ...
// until a whole build/compile/execute round succeeds. Every failure must come back as a status
// (RESOURCE_EXHAUSTED, or a status carrying it), never a crash, and leak nothing: the allocator
// counts live bytes, which must be zero at the end of each round.
#include <pthread.h>

#include "api_common.h"
#include "test.h"

typedef struct failing_alloc_t {
  pthread_mutex_t mutex;
  long countdown;  // fail when it reaches 0; < 0 never fails
  long live;       // live allocations
  long failures;
} failing_alloc_t;

static void* failing_fn(void* self, void* ptr, size_t old_size, size_t new_size, size_t align) {
  failing_alloc_t* a = (failing_alloc_t*)self;
  (void)old_size;
  if (new_size == 0) {
    if (ptr) {
      pthread_mutex_lock(&a->mutex);
      a->live--;
      pthread_mutex_unlock(&a->mutex);
      free(ptr);
    }
    return NULL;
  }
  pthread_mutex_lock(&a->mutex);
  bool fail = a->countdown == 0;
  if (a->countdown >= 0) a->countdown--;
  if (fail) a->failures++;
  pthread_mutex_unlock(&a->mutex);
  if (fail) return NULL;
  if (align < sizeof(void*)) align = sizeof(void*);
  void* p = NULL;
  if (posix_memalign(&p, align, new_size) != 0) return NULL;
  if (ptr) {
    memcpy(p, ptr, old_size < new_size ? old_size : new_size);
    free(ptr);
  } else {
    pthread_mutex_lock(&a->mutex);
    a->live++;
    pthread_mutex_unlock(&a->mutex);
  }
  return p;
}

// One round: backend, builder with a closure-based While, compile, execute, copy back.
static cml_status_t round_trip(cml_allocator_t alloc, float* out) {
  cml_backend_t* backend = NULL;
  CML_RETURN_IF_ERROR(cml_backend_create("c", alloc, &backend));
  cml_builder_t* b = NULL;
  cml_status_t st = cml_builder_create(backend, "oom", &b);
  cml_executable_t* exe = NULL;
  if (st == CML_OK) {
    cml_function_t* f = cml_builder_main(b);
    cml_shape_t s = API_SHAPE(CML_DTYPE_F32, 4), i32 = cml_shape_scalar(CML_DTYPE_I32);
    cml_value_t x = cml_parameter(f, "x", &s);
    cml_function_t *cond = NULL, *body = NULL;
    st = cml_function_new_closure(f, &cond);
    if (st == CML_OK) st = cml_function_new_closure(f, &body);
    if (st == CML_OK) {
      cml_value_t i = cml_parameter(cond, "i", &i32);
      (void)cml_parameter(cond, "v", &s);
      cml_value_t c = cml_op_less_than(cond, i, cml_constant_scalar_i64(cond, CML_DTYPE_I32, 3));
      st = cml_function_return(cond, &c, 1);
    }
    if (st == CML_OK) {
      cml_value_t i = cml_parameter(body, "i", &i32);
      cml_value_t v = cml_parameter(body, "v", &s);
      cml_value_t r[2] = {cml_op_add(body, i, cml_constant_scalar_i64(body, CML_DTYPE_I32, 1)),
                          cml_op_add(body, v, x)};
      st = cml_function_return(body, r, 2);
    }
    cml_value_t w[2] = {0, 0};
    if (st == CML_OK &&
        !cml_op_while(f, cond, body,
                      (cml_value_t[]){cml_constant_scalar_i64(f, CML_DTYPE_I32, 0), x}, 2, w)) {
      st = cml_builder_status(b);
      if (st == CML_OK) st = cml_status_from_code(CML_STATUS_INTERNAL);
    }
    if (st == CML_OK) {
      cml_value_t y = cml_op_reduce_sum(f, cml_op_mul(f, w[1], w[1]), NULL, 0);
      st = cml_function_return(f, &y, 1);
    }
    if (st == CML_OK) st = cml_builder_compile(b, &exe);
  }
  cml_builder_destroy(b);
  if (st == CML_OK) {
    static const float xv[4] = {1, -2, 0.5f, 3};
    st = api_run(backend, exe, (const void* const[]){xv}, (void* const[]){out});
  }
  cml_executable_release(exe);
  cml_backend_release(backend);
  return st;
}

TEST(oom_sweep) {
  failing_alloc_t state;
  memset(&state, 0, sizeof state);
  pthread_mutex_init(&state.mutex, NULL);
  cml_allocator_t alloc = {&state, failing_fn};
  int bad = 0;
  long n = 0;
  for (; n < 5000; ++n) {
    state.countdown = n;
    state.live = 0;
    state.failures = 0;
    float out = -1;
    cml_status_t st = round_trip(alloc, &out);
    cml_status_code_t code = cml_status_code(st);
    if (state.live != 0) {
      fprintf(stderr, "fail at allocation %ld: %ld allocations leaked (%s: %s)\n", n + 1,
              state.live, cml_status_code_name(code), cml_status_message(st));
      ++bad;
    }
    if (st == CML_OK) {
      if (state.failures != 0) {
        fprintf(stderr, "fail at allocation %ld: the failure was swallowed\n", n + 1);
        ++bad;
      }
      // v = x + 3x = 4x; sum((4x)^2) = 16 * (1 + 4 + 0.25 + 9).
      if (out != 16.0f * 14.25f) {
        fprintf(stderr, "result %g, want %g\n", out, 16.0 * 14.25);
        ++bad;
      }
      break;
    }
    if (code != CML_STATUS_RESOURCE_EXHAUSTED) {
      fprintf(stderr, "fail at allocation %ld: %s: %s\n", n + 1, cml_status_code_name(code),
              cml_status_message(st));
      ++bad;
    }
    cml_status_free(st);
    if (bad > 10) break;
  }
  pthread_mutex_destroy(&state.mutex);
  printf("oom_sweep: %ld allocation points checked\n", n);
  ASSERT_EQ_INT(bad, 0);
  ASSERT_TRUE(n < 5000);
}

TEST_MAIN(TEST_ENTRY(oom_sweep))
