// SPDX-License-Identifier: Apache-2.0
// tests/unit/api_runtime_test.c: lifetimes (refcounts keep the backend alive), concurrency,
// compile/execute/release loops (run it under valgrind for leaks), zero-size tensors through
// every op family, and rank-8 tensors — through the public API only, with results checked
// against plain C.
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api_common.h"
#include "test.h"

static cml_backend_t* new_backend(const char* config) {
  cml_backend_t* backend = NULL;
  cml_status_t st = cml_backend_new_with_config(config, &backend);
  if (st != CML_OK) {
    fprintf(stderr, "backend %s: %s\n", config, cml_status_message(st));
    cml_status_free(st);
  }
  return backend;
}

// y = x * a + b (elementwise, f32[n]), with |a| a parameter and b a constant 0.5.
static cml_status_t build_axpb(cml_backend_t* backend, int64_t n, cml_executable_t** out) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(backend, "axpb", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 1, &n);
  cml_value_t x = cml_parameter(f, "x", &s);
  cml_value_t a = cml_parameter(f, "a", &s);
  cml_value_t y =
      cml_op_add(f, cml_op_mul(f, x, a), cml_constant_scalar_f64(f, CML_DTYPE_F32, 0.5));
  cml_value_t total = cml_op_reduce_sum(f, y, NULL, 0);
  return api_finish(b, (cml_value_t[]){y, total}, 2, out);
}

//===--- lifetimes ---===//

TEST(backend_released_first) {
  cml_backend_t* backend = new_backend("c");
  ASSERT_TRUE(backend);
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(build_axpb(backend, 4, &exe));
  float x[4] = {1, 2, 3, 4}, a[4] = {2, 2, -1, 0.5f};
  cml_shape_t s = API_SHAPE(CML_DTYPE_F32, 4);
  cml_buffer_t* bx = api_buffer(backend, &s, x);
  cml_buffer_t* ba = api_buffer(backend, &s, a);
  ASSERT_TRUE(bx && ba);
  // A builder that outlives the backend reference too.
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(backend, "late", &b));
  cml_backend_release(backend);  // buffers, executable and builder keep it alive
  cml_buffer_t* out[2] = {0};
  ASSERT_STATUS_OK(cml_executable_execute(exe, (cml_buffer_t*[]){bx, ba}, 2, NULL, 0, out));
  float y[4], total;
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[0], y, sizeof y));
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[1], &total, sizeof total));
  for (int i = 0; i < 4; ++i) ASSERT_EQ_DBL(y[i], x[i] * a[i] + 0.5f);
  ASSERT_EQ_DBL(total, 2.5 + 4.5 - 2.5 + 2.5);
  ASSERT_STREQ(cml_backend_name(cml_buffer_backend(out[0])), "c");
  // The late builder still compiles and runs.
  cml_function_t* f = cml_builder_main(b);
  cml_value_t p = cml_parameter(f, "p", &s);
  cml_value_t q = cml_op_neg(f, p);
  cml_executable_t* exe2 = NULL;
  ASSERT_STATUS_OK(api_finish(b, &q, 1, &exe2));
  cml_buffer_t* out2[1] = {0};
  ASSERT_STATUS_OK(cml_executable_execute(exe2, &bx, 1, NULL, 0, out2));
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(out2[0], y, sizeof y));
  for (int i = 0; i < 4; ++i) ASSERT_EQ_DBL(y[i], -x[i]);
  // Release in an odd order: executable first, then inputs, outputs last.
  cml_executable_release(exe);
  cml_executable_release(exe2);
  cml_buffer_release(bx);
  cml_buffer_release(ba);
  cml_buffer_release(out2[0]);
  cml_buffer_release(out[1]);
  cml_buffer_release(out[0]);  // the last reference: the backend dies here
}

TEST(retain_release_counts) {
  cml_backend_t* backend = new_backend("c");
  ASSERT_TRUE(backend);
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(build_axpb(backend, 3, &exe));
  ASSERT_TRUE(cml_executable_retain(exe) == exe);
  cml_executable_release(exe);
  ASSERT_EQ_INT(cml_executable_output_count(exe), 2);
  ASSERT_TRUE(cml_executable_input_name(exe, 2) == NULL);
  ASSERT_TRUE(cml_executable_output_shape(exe, 2) == NULL);
  ASSERT_EQ_INT(cml_executable_output_shape(exe, 1)->rank, 0);
  ASSERT_TRUE(cml_backend_retain(backend) == backend);
  cml_backend_release(backend);
  cml_executable_release(exe);
  cml_backend_release(backend);
}

// Compile/execute/release many times; meant to run under valgrind --leak-check=full.
TEST(compile_execute_loop) {
  for (int round = 0; round < 12; ++round) {
    cml_backend_t* backend = new_backend(round % 2 ? "c:threads=2" : "c");
    ASSERT_TRUE(backend);
    cml_executable_t* exe = NULL;
    int64_t n = 1 + round * 37;
    ASSERT_STATUS_OK(build_axpb(backend, n, &exe));
    float* x = (float*)malloc((size_t)n * sizeof(float));
    float* a = (float*)malloc((size_t)n * sizeof(float));
    float* y = (float*)malloc((size_t)n * sizeof(float));
    ASSERT_TRUE(x && a && y);
    for (int64_t i = 0; i < n; ++i) {
      x[i] = (float)(i % 7) - 3;
      a[i] = (float)(round + 1);
    }
    float total = 0;
    for (int rep = 0; rep < 3; ++rep) {
      cml_status_t st =
          api_run(backend, exe, (const void* const[]){x, a}, (void* const[]){y, &total});
      if (st != CML_OK) {
        free(x), free(a), free(y);
        ASSERT_STATUS_OK(st);
      }
    }
    double want_total = 0;
    int bad = 0;
    for (int64_t i = 0; i < n; ++i) {
      float want = x[i] * a[i] + 0.5f;
      want_total += want;
      if (y[i] != want) ++bad;
    }
    free(x), free(a), free(y);
    cml_executable_release(exe);
    cml_backend_release(backend);
    ASSERT_EQ_INT(bad, 0);
    ASSERT_NEAR(total, want_total, 1e-3 * (1 + fabs(want_total)));
    // A builder destroyed with a pending error, and one never compiled: nothing leaks.
    backend = new_backend("c");
    cml_builder_t* b = NULL;
    ASSERT_STATUS_OK(cml_builder_create(backend, "err", &b));
    cml_function_t* f = cml_builder_main(b);
    cml_shape_t s = API_SHAPE(CML_DTYPE_F32, 2);
    cml_value_t p = cml_parameter(f, "p", &s);
    (void)cml_op_add(f, p, cml_op_convert_dtype(f, p, CML_DTYPE_I32));
    cml_function_t* c = NULL;
    ASSERT_STATUS_OK(cml_function_new_closure(f, &c));
    (void)cml_op_neg(c, p);
    cml_builder_destroy(b);
    ASSERT_STATUS_OK(cml_builder_create(backend, "unused", &b));
    (void)cml_constant(cml_builder_main(b), &s, (float[]){1, 2});
    cml_backend_release(backend);
    cml_builder_destroy(b);
  }
}

//===--- concurrency ---===//

enum { kThreads = 6, kRuns = 40, kN = 1000 };

typedef struct worker_t {
  cml_backend_t* backend;
  cml_executable_t* exe;
  int id;
  int failures;
  char message[256];
} worker_t;

static void* worker_main(void* arg) {
  worker_t* w = (worker_t*)arg;
  float* x = (float*)malloc(kN * sizeof(float));
  float* a = (float*)malloc(kN * sizeof(float));
  float* y = (float*)malloc(kN * sizeof(float));
  if (!x || !a || !y) {
    w->failures++;
    free(x), free(a), free(y);
    return NULL;
  }
  for (int run = 0; run < kRuns && !w->failures; ++run) {
    for (int i = 0; i < kN; ++i) {
      x[i] = (float)((i + w->id * 13 + run) % 17) - 8;
      a[i] = (float)(w->id + 1);
    }
    float total = 0;
    cml_status_t st =
        api_run(w->backend, w->exe, (const void* const[]){x, a}, (void* const[]){y, &total});
    if (st != CML_OK) {
      snprintf(w->message, sizeof w->message, "%s", cml_status_message(st));
      cml_status_free(st);
      w->failures++;
      break;
    }
    double want_total = 0;
    for (int i = 0; i < kN; ++i) {
      float want = x[i] * a[i] + 0.5f;
      want_total += want;
      if (y[i] != want) {
        snprintf(w->message, sizeof w->message, "thread %d run %d: y[%d] = %g, want %g", w->id, run,
                 i, y[i], want);
        w->failures++;
        break;
      }
    }
    if (!w->failures && fabs(total - want_total) > 1e-2) {
      snprintf(w->message, sizeof w->message, "thread %d: total %g, want %g", w->id, total,
               want_total);
      w->failures++;
    }
  }
  free(x), free(a), free(y);
  return NULL;
}

TEST(concurrent_execute) {
  cml_backend_t* backend = new_backend("c:threads=2");
  ASSERT_TRUE(backend);
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(build_axpb(backend, kN, &exe));
  worker_t workers[kThreads];
  pthread_t threads[kThreads];
  for (int t = 0; t < kThreads; ++t) {
    workers[t] = (worker_t){backend, exe, t, 0, ""};
    ASSERT_EQ_INT(pthread_create(&threads[t], NULL, worker_main, &workers[t]), 0);
  }
  int failures = 0;
  for (int t = 0; t < kThreads; ++t) {
    pthread_join(threads[t], NULL);
    if (workers[t].failures) fprintf(stderr, "worker %d: %s\n", t, workers[t].message);
    failures += workers[t].failures;
  }
  cml_executable_release(exe);
  cml_backend_release(backend);
  ASSERT_EQ_INT(failures, 0);
}

// Two threads donating one buffer to concurrent executions of identity(x): exactly one of them
// takes it, the other gets FAILED_PRECONDITION, and the released outputs free the storage once.
// Both once succeeded with outputs on the same storage (a double free at release). 400 rounds
// on 1 KiB and on 400 KB buffers (the second size goes through the buffer cache).
typedef struct donor_t {
  cml_executable_t* exe;
  cml_buffer_t* x;
  pthread_barrier_t* barrier;
  cml_buffer_t* out;
  cml_status_code_t code;
} donor_t;

static void* donor_main(void* arg) {
  donor_t* d = arg;
  pthread_barrier_wait(d->barrier);
  cml_status_t st = cml_executable_execute(d->exe, &d->x, 1, (const bool[]){true}, 0, &d->out);
  d->code = cml_status_code(st);
  cml_status_free(st);
  return NULL;
}

TEST(concurrent_donations_of_one_buffer) {
  cml_backend_t* backend = new_backend("c:threads=2");
  ASSERT_TRUE(backend);
  static const int64_t sizes[] = {256, 100000};
  for (int z = 0; z < 2; ++z) {
    const int64_t n = sizes[z];
    cml_builder_t* b = NULL;
    ASSERT_STATUS_OK(cml_builder_create(backend, "identity", &b));
    cml_function_t* f = cml_builder_main(b);
    cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 1, &n);
    cml_value_t x = cml_parameter(f, "x", &s);
    cml_executable_t* exe = NULL;
    ASSERT_STATUS_OK(api_finish(b, &x, 1, &exe));
    float* host = calloc((size_t)n, sizeof(float));
    ASSERT_TRUE(host != NULL);
    int both = 0, none = 0;
    for (int round = 0; round < 400; ++round) {
      cml_buffer_t* in = NULL;
      ASSERT_STATUS_OK(cml_buffer_from_host(backend, 0, &s, host, (size_t)n * sizeof(float), &in));
      pthread_barrier_t barrier;
      pthread_barrier_init(&barrier, NULL, 2);
      donor_t d[2] = {{exe, in, &barrier, NULL, CML_STATUS_OK},
                      {exe, in, &barrier, NULL, CML_STATUS_OK}};
      pthread_t t[2];
      for (int i = 0; i < 2; ++i) ASSERT_EQ_INT(pthread_create(&t[i], NULL, donor_main, &d[i]), 0);
      for (int i = 0; i < 2; ++i) pthread_join(t[i], NULL);
      pthread_barrier_destroy(&barrier);
      const int ok = (d[0].code == CML_STATUS_OK) + (d[1].code == CML_STATUS_OK);
      both += ok == 2;
      none += ok == 0;
      for (int i = 0; i < 2; ++i) {
        if (d[i].code != CML_STATUS_OK) ASSERT_EQ_INT(d[i].code, CML_STATUS_FAILED_PRECONDITION);
        cml_buffer_release(d[i].out);
      }
      cml_buffer_release(in);
    }
    free(host);
    cml_executable_release(exe);
    ASSERT_EQ_INT(both, 0);
    ASSERT_EQ_INT(none, 0);
  }
  cml_backend_release(backend);
}

// A donation while other threads read the buffer (one copying it to the host, one running an
// execution on it): the donation is refused while a read runs, and every read either sees the
// buffer's own data or FAILED_PRECONDITION. The donor took storage a running read still used:
// copies returned another buffer's bytes and kernels read freed memory.
typedef struct reader_t {
  cml_buffer_t* buffer;
  cml_executable_t* exe;  // NULL: copy to the host
  const float* want;
  int64_t n;
  atomic_int* phase;
  atomic_int* started;
  int bad;
} reader_t;

static void* reader_main(void* arg) {
  reader_t* r = arg;
  float* got = malloc((size_t)r->n * sizeof(float));
  while (got && atomic_load(r->phase) == 1) {
    cml_buffer_t* out = NULL;
    cml_status_t st = r->exe ? cml_executable_execute(r->exe, &r->buffer, 1, NULL, 0, &out)
                             : cml_buffer_copy_to_host(r->buffer, got, (size_t)r->n * 4);
    if (st == CML_OK && out) st = cml_buffer_copy_to_host(out, got, (size_t)r->n * 4);
    cml_buffer_release(out);
    if (st == CML_OK) {
      const bool wrong = memcmp(got, r->want, (size_t)r->n * sizeof(float)) != 0;
      if (wrong) {
        int64_t at = 0;
        while (at < r->n && got[at] == r->want[at]) ++at;
        fprintf(stderr, "  %s read wrong data at %lld: %g (want %g)\n",
                r->exe ? "an execution" : "a copy", (long long)at, got[at], r->want[at]);
      }
      r->bad += wrong;
    } else {
      const bool wrong = cml_status_code(st) != CML_STATUS_FAILED_PRECONDITION;
      if (wrong)
        fprintf(stderr, "  %s: %s\n", r->exe ? "an execution" : "a copy", cml_status_message(st));
      r->bad += wrong;
      cml_status_free(st);
    }
    atomic_fetch_add(r->started, 1);
  }
  free(got);
  return NULL;
}

TEST(donation_while_other_threads_read) {
  cml_backend_t* backend = new_backend("c:threads=1,buffer_cache_mb=0");
  ASSERT_TRUE(backend);
  const int64_t n = 65536;
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(backend, "identity", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 1, &n);
  cml_value_t x = cml_parameter(f, "x", &s);
  cml_executable_t* id = NULL;
  ASSERT_STATUS_OK(api_finish(b, &x, 1, &id));
  float* data = malloc((size_t)n * sizeof(float));
  float* junk = malloc((size_t)n * sizeof(float));
  ASSERT_TRUE(data && junk);
  for (int64_t i = 0; i < n; ++i) {
    data[i] = (float)i;
    junk[i] = -1;
  }
  int refused = 0, bad = 0;
  for (int round = 0; round < 60; ++round) {
    cml_buffer_t* in = NULL;
    ASSERT_STATUS_OK(cml_buffer_from_host(backend, 0, &s, data, (size_t)n * 4, &in));
    atomic_int phase = 1, started = 0;
    reader_t r[2] = {{in, NULL, data, n, &phase, &started, 0},
                     {in, id, data, n, &phase, &started, 0}};
    pthread_t t[2];
    for (int i = 0; i < 2; ++i) ASSERT_EQ_INT(pthread_create(&t[i], NULL, reader_main, &r[i]), 0);
    while (atomic_load(&started) < 4) sched_yield();
    // Donate until it goes through; each refusal consumed nothing.
    cml_buffer_t* out = NULL;
    for (;;) {
      cml_status_t st = cml_executable_execute(id, &in, 1, (const bool[]){true}, 0, &out);
      if (st == CML_OK) break;
      ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_FAILED_PRECONDITION);
      ASSERT_TRUE(strstr(cml_status_message(st), "cannot be donated") != NULL);
      cml_status_free(st);
      ++refused;
    }
    // The donor's result, released at once, and a new buffer that may take its memory.
    cml_buffer_release(out);
    cml_buffer_t* other = NULL;
    ASSERT_STATUS_OK(cml_buffer_from_host(backend, 0, &s, junk, (size_t)n * 4, &other));
    atomic_store(&phase, 0);
    for (int i = 0; i < 2; ++i) {
      pthread_join(t[i], NULL);
      bad += r[i].bad;
    }
    cml_buffer_release(other);
    cml_buffer_release(in);
  }
  printf("  donations refused while a read ran: %d\n", refused);
  ASSERT_EQ_INT(bad, 0);
  free(data);
  free(junk);
  cml_executable_release(id);
  cml_backend_release(backend);
}

//===--- zero-size tensors through every op family ---===//

TEST(zero_size_ops) {
  cml_backend_t* backend = new_backend("c");
  ASSERT_TRUE(backend);
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(backend, "zero", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t xs = API_SHAPE(CML_DTYPE_F32, 0, 3), ys = API_SHAPE(CML_DTYPE_F32, 2, 3);
  cml_shape_t ws = API_SHAPE(CML_DTYPE_F32, 2, 0), ts = API_SHAPE(CML_DTYPE_F32, 4, 2);
  cml_value_t x = cml_parameter(f, "x", &xs);
  cml_value_t y = cml_parameter(f, "y", &ys);
  cml_value_t w = cml_parameter(f, "w", &ws);
  cml_value_t table = cml_parameter(f, "table", &ts);
  cml_value_t outs[32];
  int n = 0;
  cml_value_t e = cml_op_exp(f, cml_op_add(f, x, x));               // [0,3]
  outs[n++] = cml_op_reduce_sum(f, e, (int64_t[]){0}, 1);           // [3] = 0
  outs[n++] = cml_op_reduce_max(f, x, (int64_t[]){0}, 1);           // [3] = -inf
  outs[n++] = cml_op_reduce_product(f, x, (int64_t[]){0}, 1);       // [3] = 1
  outs[n++] = cml_op_reduce_min(f, x, NULL, 0);                     // scalar +inf
  cml_value_t tr = cml_op_transpose(f, x, (int64_t[]){1, 0}, 2);    // [3,0]
  cml_value_t rs = cml_op_reshape(f, tr, (int64_t[]){3, 0, 1}, 3);  // [3,0,1]
  outs[n++] = cml_op_reduce_sum(f, rs, (int64_t[]){1, 2}, 2);       // [3] = 0
  cml_value_t bc = cml_op_broadcast_in_dim(f, x, (int64_t[]){2, 0, 3}, 3, (int64_t[]){1, 2}, 2);
  outs[n++] = cml_op_reduce_sum(f, bc, (int64_t[]){1}, 1);                             // [2,3] = 0
  cml_value_t sl = cml_op_slice(f, y, (int64_t[]){1, 1}, (int64_t[]){1, 3}, NULL, 2);  // [0,2]
  outs[n++] = sl;
  outs[n++] = cml_op_concatenate(f, 0, (cml_value_t[]){x, y, x}, 3);  // [2,3] = y
  cml_pad_axis_t pads[2] = {{1, 0, 0}, {0, 0, 0}};
  outs[n++] = cml_op_pad(f, x, cml_constant_scalar_f64(f, CML_DTYPE_F32, 7), pads, 2);  // [1,3] = 7
  cml_shape_t vs = API_SHAPE(CML_DTYPE_F32, 0, 3);
  cml_value_t v = cml_op_reverse(f, cml_parameter(f, "v", &vs), (int64_t[]){0}, 1);
  outs[n++] = cml_op_dot(f, w, v);                                              // [2,3] = 0
  outs[n++] = cml_op_dot(f, x, cml_op_transpose(f, y, (int64_t[]){1, 0}, 2));   // [0,2]
  outs[n++] = cml_op_convert_dtype(f, x, CML_DTYPE_I32);                        // [0,3]
  outs[n++] = cml_op_arg_min_max(f, x, 1, CML_DTYPE_I32, false);                // [0]
  outs[n++] = cml_op_where(f, cml_op_less_than(f, x, x), x, cml_op_neg(f, x));  // [0,3]
  // Sort of zero rows.
  cml_function_t* cmp = NULL;
  ASSERT_STATUS_OK(cml_function_new_closure(f, &cmp));
  cml_shape_t sc = cml_shape_scalar(CML_DTYPE_F32);
  cml_value_t l = cml_parameter(cmp, "l", &sc), r = cml_parameter(cmp, "r", &sc);
  cml_value_t lt = cml_op_less_than(cmp, l, r);
  ASSERT_STATUS_OK(cml_function_return(cmp, &lt, 1));
  cml_value_t sorted;
  ASSERT_TRUE(cml_op_sort(f, cmp, 1, false, &x, 1, &sorted));
  outs[n++] = sorted;  // [0,3]
  // Gather of zero indices: [0, 2].
  cml_shape_t is = API_SHAPE(CML_DTYPE_I32, 0);
  cml_value_t idx = cml_op_iota(f, &is, 0);
  cml_gather_dims_t gd;
  memset(&gd, 0, sizeof gd);
  gd.index_vector_axis = 1;
  gd.offset_output_axis_count = 1;
  gd.offset_output_axes[0] = 1;
  gd.collapsed_slice_axis_count = 1;
  gd.start_index_map_count = 1;
  gd.slice_size_count = 2;
  gd.slice_sizes[0] = 1;
  gd.slice_sizes[1] = 2;
  outs[n++] = cml_op_gather(f, table, idx, &gd);
  // ReduceWindow over a zero-size axis, and a window larger than the axis (XLA: size 0).
  cml_window_config_t wc;
  memset(&wc, 0, sizeof wc);
  wc.rank = 2;
  wc.window_dims[0] = 1;
  wc.window_dims[1] = 2;
  wc.strides[0] = wc.strides[1] = 1;
  outs[n++] = cml_op_reduce_window(f, x, CML_REDUCE_SUM, &wc);  // [0,2]
  wc.window_dims[0] = 3;
  outs[n++] = cml_op_reduce_window(f, y, CML_REDUCE_MAX, &wc);  // [0,2]
  // Conv with a zero batch: [0, 3, 1] * [2, 1, 2] -> [0, 2, 2].
  cml_conv_config_t cc;
  memset(&cc, 0, sizeof cc);
  cc.spatial_count = 1;
  cc.input_channel_axis = 2;
  cc.input_spatial_axes[0] = 1;
  cc.kernel_input_channel_axis = 1;
  cc.kernel_output_channel_axis = 2;
  cc.kernel_spatial_axes[0] = 0;
  cc.output_channel_axis = 2;
  cc.output_spatial_axes[0] = 1;
  cml_value_t x3 = cml_op_reshape(f, x, (int64_t[]){0, 3, 1}, 3);
  cml_shape_t ks = API_SHAPE(CML_DTYPE_F32, 2, 1, 2);
  cml_value_t kv = cml_constant(f, &ks, (float[]){1, 2, 3, 4});
  outs[n++] = cml_op_conv_general(f, x3, kv, &cc);
  // While carrying a zero-size value next to a counter.
  cml_function_t *cond = NULL, *body = NULL;
  ASSERT_STATUS_OK(cml_function_new_closure(f, &cond));
  ASSERT_STATUS_OK(cml_function_new_closure(f, &body));
  cml_shape_t i32 = cml_shape_scalar(CML_DTYPE_I32);
  {
    cml_value_t i = cml_parameter(cond, "i", &i32);
    (void)cml_parameter(cond, "z", &xs);
    cml_value_t c = cml_op_less_than(cond, i, cml_constant_scalar_i64(cond, CML_DTYPE_I32, 3));
    ASSERT_STATUS_OK(cml_function_return(cond, &c, 1));
  }
  {
    cml_value_t i = cml_parameter(body, "i", &i32);
    cml_value_t z = cml_parameter(body, "z", &xs);
    cml_value_t r2[2] = {cml_op_add(body, i, cml_constant_scalar_i64(body, CML_DTYPE_I32, 1)),
                         cml_op_mul(body, z, z)};
    ASSERT_STATUS_OK(cml_function_return(body, r2, 2));
  }
  cml_value_t wout[2];
  ASSERT_TRUE(cml_op_while(
      f, cond, body, (cml_value_t[]){cml_constant_scalar_i64(f, CML_DTYPE_I32, 0), x}, 2, wout));
  outs[n++] = wout[0];  // 3
  outs[n++] = wout[1];  // [0,3]
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(b, outs, (size_t)n, &exe));
  ASSERT_EQ_INT(cml_executable_output_count(exe), n);
  ASSERT_EQ_INT(cml_executable_output_shape(exe, 16)->dims[0], 0);
  ASSERT_EQ_INT(cml_executable_output_shape(exe, 16)->dims[1], 2);
  ASSERT_EQ_INT(cml_executable_output_shape(exe, 18)->dims[1], 2);
  // Execute (inputs: x, y, w, table, v).
  static const float yv[6] = {1, -2, 3, 4, 5, -6};
  static const float tv[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  cml_buffer_t* ins[5];
  ins[0] = api_buffer(backend, &xs, NULL);
  ins[1] = api_buffer(backend, &ys, yv);
  ins[2] = api_buffer(backend, &ws, NULL);
  ins[3] = api_buffer(backend, &ts, tv);
  ins[4] = api_buffer(backend, &vs, NULL);
  cml_buffer_t* res[32] = {0};
  cml_status_t st = CML_OK;
  for (int i = 0; i < 5; ++i) {
    if (!ins[i]) st = cml_status_from_code(CML_STATUS_INTERNAL);
  }
  if (st == CML_OK) st = cml_executable_execute(exe, ins, 5, NULL, 0, res);
  float got[32][8];
  int32_t count = -1;
  for (int i = 0; i < n && st == CML_OK; ++i) {
    const cml_shape_t* s = cml_buffer_shape(res[i]);
    size_t bytes = cml_shape_byte_size(s);
    if (i == 19) {
      st = cml_buffer_copy_to_host(res[i], &count, sizeof count);
    } else if (bytes <= sizeof got[i]) {
      st = cml_buffer_copy_to_host(res[i], got[i], bytes);
    } else {
      st = cml_status_make(CML_STATUS_INTERNAL, "output %d too large", i);
    }
    if (bytes != 0 && cml_shape_element_count(s) == 0)
      st = cml_status_from_code(CML_STATUS_INTERNAL);
  }
  for (int i = 0; i < 5; ++i) cml_buffer_release(ins[i]);
  for (int i = 0; i < n; ++i) cml_buffer_release(res[i]);
  cml_executable_release(exe);
  cml_backend_release(backend);
  ASSERT_STATUS_OK(st);
  for (int k = 0; k < 3; ++k) {
    ASSERT_EQ_DBL(got[0][k], 0);
    ASSERT_EQ_DBL(got[1][k], -INFINITY);
    ASSERT_EQ_DBL(got[2][k], 1);
    ASSERT_EQ_DBL(got[4][k], 0);
  }
  ASSERT_EQ_DBL(got[3][0], INFINITY);
  for (int k = 0; k < 6; ++k) {
    ASSERT_EQ_DBL(got[5][k], 0);
    ASSERT_EQ_DBL(got[7][k], yv[k]);
    ASSERT_EQ_DBL(got[9][k], 0);
  }
  for (int k = 0; k < 3; ++k) ASSERT_EQ_DBL(got[8][k], 7);
  ASSERT_EQ_INT(count, 3);
}

//===--- rank-8 tensors ---===//

TEST(rank8) {
  static const int64_t dims[8] = {2, 1, 3, 1, 2, 2, 1, 2};
  enum { N = 2 * 3 * 2 * 2 * 2 };
  float x[N];
  for (int i = 0; i < N; ++i) x[i] = (float)(i * 3 % 11) - 5;
  // Row-major strides.
  int64_t strides[8];
  strides[7] = 1;
  for (int a = 6; a >= 0; --a) strides[a] = strides[a + 1] * dims[a + 1];
  // Reference transpose with the reversed permutation, and a sum over axes {0, 2, 5}.
  static const int64_t perm[8] = {7, 6, 5, 4, 3, 2, 1, 0};
  float want_t[N];
  int64_t tdims[8], tstrides[8];
  for (int a = 0; a < 8; ++a) tdims[a] = dims[perm[a]];
  tstrides[7] = 1;
  for (int a = 6; a >= 0; --a) tstrides[a] = tstrides[a + 1] * tdims[a + 1];
  double want_s[2 * 2 * 2] = {0};  // remaining axes 1,3,4,6,7 -> dims 1,1,2,1,2
  for (int i = 0; i < N; ++i) {
    int64_t idx[8], rem = i;
    for (int a = 0; a < 8; ++a) {
      idx[a] = rem / strides[a];
      rem %= strides[a];
    }
    int64_t off = 0;
    for (int a = 0; a < 8; ++a) off += idx[perm[a]] * tstrides[a];
    want_t[off] = x[i];
    want_s[idx[4] * 2 + idx[7]] += x[i];
  }
  cml_backend_t* backend = new_backend("c");
  ASSERT_TRUE(backend);
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(backend, "rank8", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t xs = cml_shape_make(CML_DTYPE_F32, 8, dims);
  cml_value_t vx = cml_parameter(f, "x", &xs);
  cml_value_t t = cml_op_transpose(f, vx, perm, 8);
  cml_value_t s = cml_op_reduce_sum(f, vx, (int64_t[]){0, 2, 5}, 3);
  // x + x broadcast from a size-1 slice: x[:, :, 0:1, ...] broadcast along axis 2.
  cml_value_t sl = cml_op_slice(f, vx, (int64_t[]){0, 0, 1, 0, 0, 0, 0, 0},
                                (int64_t[]){2, 1, 2, 1, 2, 2, 1, 2}, NULL, 8);
  cml_value_t bc = cml_op_broadcast_in_dim(f, sl, dims, 8, (int64_t[]){0, 1, 2, 3, 4, 5, 6, 7}, 8);
  cml_value_t sum = cml_op_add(f, vx, bc);
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(b, (cml_value_t[]){t, s, sum}, 3, &exe));
  float got_t[N], got_s[8], got_sum[N];
  cml_status_t st =
      api_run(backend, exe, (const void* const[]){x}, (void* const[]){got_t, got_s, got_sum});
  cml_executable_release(exe);
  cml_backend_release(backend);
  ASSERT_STATUS_OK(st);
  for (int i = 0; i < N; ++i) ASSERT_EQ_DBL(got_t[i], want_t[i]);
  for (int i = 0; i < 4; ++i) ASSERT_NEAR(got_s[i], want_s[i], 1e-4);
  for (int i = 0; i < N; ++i) {
    int64_t idx2 = (i / strides[2]) % 3;
    int64_t base = i - idx2 * strides[2] + 1 * strides[2];
    ASSERT_EQ_DBL(got_sum[i], x[i] + x[base]);
  }
}

//===--- output aliasing, donation and nested control flow ---===//

// Outputs that are a parameter, a constant, or the same value twice must be independent
// buffers: donating or releasing one never changes another, nor the executable's constants.
TEST(output_aliasing) {
  cml_backend_t* backend = new_backend("c");
  ASSERT_TRUE(backend);
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(backend, "alias", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = API_SHAPE(CML_DTYPE_F32, 3);
  cml_value_t x = cml_parameter(f, "x", &s);
  cml_value_t c = cml_constant(f, &s, (float[]){10, 20, 30});
  cml_value_t y = cml_op_add(f, x, c);
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(b, (cml_value_t[]){x, c, y, y, x}, 5, &exe));
  // inc(v) = v + 1, used with donation to write into buffers in place.
  ASSERT_STATUS_OK(cml_builder_create(backend, "inc", &b));
  f = cml_builder_main(b);
  cml_value_t v = cml_parameter(f, "v", &s);
  cml_value_t w = cml_op_add(f, v, cml_constant_scalar_f64(f, CML_DTYPE_F32, 1));
  cml_executable_t* inc = NULL;
  ASSERT_STATUS_OK(api_finish(b, &w, 1, &inc));

  float xv[3] = {1, 2, 3}, got[3];
  cml_buffer_t* bx = api_buffer(backend, &s, xv);
  ASSERT_TRUE(bx);
  cml_buffer_t* out[5] = {0};
  ASSERT_STATUS_OK(cml_executable_execute(exe, &bx, 1, NULL, 0, out));
  for (int i = 0; i < 5; ++i) {
    for (int j = 0; j < i; ++j) ASSERT_TRUE(out[i] != out[j]);
  }
  // Donate every output, one by one, into inc; the others must not change.
  static const float want[5][3] = {{1, 2, 3}, {10, 20, 30}, {11, 22, 33}, {11, 22, 33}, {1, 2, 3}};
  for (int i = 0; i < 5; ++i) {
    cml_buffer_t* r[1] = {0};
    ASSERT_STATUS_OK(cml_executable_execute(inc, &out[i], 1, (bool[]){true}, 0, r));
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(r[0], got, sizeof got));
    for (int k = 0; k < 3; ++k) ASSERT_EQ_DBL(got[k], want[i][k] + 1);
    cml_buffer_release(r[0]);
    for (int j = i + 1; j < 5; ++j) {
      ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[j], got, sizeof got));
      for (int k = 0; k < 3; ++k) ASSERT_EQ_DBL(got[k], want[j][k]);
    }
  }
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(bx, got, sizeof got));
  for (int k = 0; k < 3; ++k) ASSERT_EQ_DBL(got[k], xv[k]);
  for (int i = 0; i < 5; ++i) cml_buffer_release(out[i]);
  // The constant is unchanged on the next run, even with x donated.
  ASSERT_STATUS_OK(cml_executable_execute(exe, &bx, 1, (bool[]){true}, 0, out));
  ASSERT_FALSE(cml_buffer_is_valid(bx));
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[1], got, sizeof got));
  for (int k = 0; k < 3; ++k) ASSERT_EQ_DBL(got[k], want[1][k]);
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[0], got, sizeof got));
  for (int k = 0; k < 3; ++k) ASSERT_EQ_DBL(got[k], xv[k]);
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[3], got, sizeof got));
  for (int k = 0; k < 3; ++k) ASSERT_EQ_DBL(got[k], want[3][k]);
  for (int i = 0; i < 5; ++i) cml_buffer_release(out[i]);
  cml_buffer_release(bx);
  cml_executable_release(exe);
  cml_executable_release(inc);
  cml_backend_release(backend);
}

// Collatz step counts: a While whose body holds an If whose branch calls a named function,
// over a vector (a While per element through a nested While over the index).
static int collatz_steps(int64_t n) {
  int steps = 0;
  while (n != 1) {
    n = (n % 2 == 0) ? n / 2 : 3 * n + 1;
    ++steps;
  }
  return steps;
}

TEST(nested_control_flow) {
  enum { N = 6 };
  static const int64_t start[N] = {1, 2, 3, 7, 27, 97};
  cml_backend_t* backend = new_backend("c");
  ASSERT_TRUE(backend);
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(backend, "collatz", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t i64 = cml_shape_scalar(CML_DTYPE_I64), i32 = cml_shape_scalar(CML_DTYPE_I32);
  cml_shape_t vs = API_SHAPE(CML_DTYPE_I64, N), cs = API_SHAPE(CML_DTYPE_I32, N);
  // Named function odd(n) = 3n + 1.
  cml_function_t* odd = NULL;
  ASSERT_STATUS_OK(cml_builder_new_function(b, "odd", &odd));
  {
    cml_value_t n = cml_parameter(odd, "n", &i64);
    cml_value_t r =
        cml_op_add(odd, cml_op_mul(odd, n, cml_constant_scalar_i64(odd, CML_DTYPE_I64, 3)),
                   cml_constant_scalar_i64(odd, CML_DTYPE_I64, 1));
    ASSERT_STATUS_OK(cml_function_return(odd, &r, 1));
  }
  cml_value_t vec = cml_parameter(f, "start", &vs);
  // Outer while over k: state (k, counts).
  cml_function_t *ocond = NULL, *obody = NULL;
  ASSERT_STATUS_OK(cml_function_new_closure(f, &ocond));
  ASSERT_STATUS_OK(cml_function_new_closure(f, &obody));
  {
    cml_value_t k = cml_parameter(ocond, "k", &i32);
    (void)cml_parameter(ocond, "counts", &cs);
    cml_value_t c = cml_op_less_than(ocond, k, cml_constant_scalar_i64(ocond, CML_DTYPE_I32, N));
    ASSERT_STATUS_OK(cml_function_return(ocond, &c, 1));
  }
  {
    cml_value_t k = cml_parameter(obody, "k", &i32);
    cml_value_t counts = cml_parameter(obody, "counts", &cs);
    cml_value_t n0 =
        cml_op_reshape(obody, cml_op_dynamic_slice(obody, vec, &k, (int64_t[]){1}, 1), NULL, 0);
    // Inner while: state (n, steps) until n == 1.
    cml_function_t *icond = NULL, *ibody = NULL;
    ASSERT_STATUS_OK(cml_function_new_closure(obody, &icond));
    ASSERT_STATUS_OK(cml_function_new_closure(obody, &ibody));
    {
      cml_value_t n = cml_parameter(icond, "n", &i64);
      (void)cml_parameter(icond, "steps", &i32);
      cml_value_t c = cml_op_not_equal(icond, n, cml_constant_scalar_i64(icond, CML_DTYPE_I64, 1));
      ASSERT_STATUS_OK(cml_function_return(icond, &c, 1));
    }
    {
      cml_value_t n = cml_parameter(ibody, "n", &i64);
      cml_value_t steps = cml_parameter(ibody, "steps", &i32);
      cml_value_t even = cml_op_equal(
          ibody, cml_op_rem(ibody, n, cml_constant_scalar_i64(ibody, CML_DTYPE_I64, 2)),
          cml_constant_scalar_i64(ibody, CML_DTYPE_I64, 0));
      cml_function_t *tb = NULL, *fb = NULL;
      ASSERT_STATUS_OK(cml_function_new_closure(ibody, &tb));
      ASSERT_STATUS_OK(cml_function_new_closure(ibody, &fb));
      cml_value_t half = cml_op_div(tb, n, cml_constant_scalar_i64(tb, CML_DTYPE_I64, 2));
      ASSERT_STATUS_OK(cml_function_return(tb, &half, 1));
      cml_value_t tripled;
      ASSERT_TRUE(cml_op_call(fb, odd, &n, 1, &tripled));
      ASSERT_STATUS_OK(cml_function_return(fb, &tripled, 1));
      cml_value_t next;
      ASSERT_TRUE(cml_op_if(ibody, even, tb, fb, &next));
      cml_value_t r[2] = {
          next, cml_op_add(ibody, steps, cml_constant_scalar_i64(ibody, CML_DTYPE_I32, 1))};
      ASSERT_STATUS_OK(cml_function_return(ibody, r, 2));
    }
    cml_value_t inner[2];
    ASSERT_TRUE(cml_op_while(obody, icond, ibody,
                             (cml_value_t[]){n0, cml_constant_scalar_i64(obody, CML_DTYPE_I32, 0)},
                             2, inner));
    cml_value_t upd = cml_op_reshape(obody, inner[1], (int64_t[]){1}, 1);
    cml_value_t r[2] = {cml_op_add(obody, k, cml_constant_scalar_i64(obody, CML_DTYPE_I32, 1)),
                        cml_op_dynamic_update_slice(obody, counts, upd, &k, 1)};
    ASSERT_STATUS_OK(cml_function_return(obody, r, 2));
  }
  cml_value_t zeros = cml_op_broadcast_in_dim(f, cml_constant_scalar_i64(f, CML_DTYPE_I32, -1),
                                              (int64_t[]){N}, 1, NULL, 0);
  cml_value_t outer[2];
  ASSERT_TRUE(cml_op_while(f, ocond, obody,
                           (cml_value_t[]){cml_constant_scalar_i64(f, CML_DTYPE_I32, 0), zeros}, 2,
                           outer));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(b, &outer[1], 1, &exe));
  int32_t got[N];
  cml_status_t st = api_run(backend, exe, (const void* const[]){start}, (void* const[]){got});
  cml_executable_release(exe);
  cml_backend_release(backend);
  ASSERT_STATUS_OK(st);
  for (int i = 0; i < N; ++i) ASSERT_EQ_INT(got[i], collatz_steps(start[i]));
}

//===--- fork ---===//

#if defined(__SANITIZE_THREAD__)
#define API_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define API_TSAN 1
#endif
#endif

// A child of fork() has none of the parent's threads: a c backend it inherited refuses to
// compile and execute (an SPMD execution waited forever for slot threads that are not there),
// buffers stay readable, and releasing the backend neither joins the parent's threads (a
// crash) nor destroys condition variables the parent's workers wait on (a hang). A new backend
// works. The child runs under alarm(): a hang is a failure, not a stuck test.
#if !defined(API_TSAN)
static int fork_child(cml_backend_t* be, cml_executable_t* exe, cml_buffer_t** in, size_t n_in,
                      cml_buffer_t* first_out, float expect) {
  alarm(30);
  int bad = 0;
  cml_buffer_t* out[8] = {0};
  cml_status_t st = cml_executable_execute(exe, in, n_in, NULL, 0, out);
  if (cml_status_code(st) != CML_STATUS_FAILED_PRECONDITION ||
      !strstr(cml_status_message(st), "fork()")) {
    fprintf(stderr, "child execute: %s\n", cml_status_message(st));
    bad |= 1;
  }
  cml_status_free(st);
  cml_executable_t* again = NULL;
  st = build_axpb(be, 4, &again);
  if (cml_status_code(st) != CML_STATUS_FAILED_PRECONDITION) bad |= 2;
  cml_status_free(st);
  cml_executable_release(again);
  float got = 0;
  st = cml_buffer_copy_to_host(first_out, &got, sizeof got);
  if (st != CML_OK || got != expect) bad |= 4;
  cml_status_free(st);
  cml_executable_release(exe);
  for (size_t i = 0; i < n_in; ++i) cml_buffer_release(in[i]);
  cml_buffer_release(first_out);
  cml_backend_release(be);
  cml_backend_t* fresh = new_backend("c:threads=2");
  cml_executable_t* axpb = NULL;
  if (!fresh || build_axpb(fresh, 4, &axpb) != CML_OK) bad |= 8;
  cml_executable_release(axpb);
  cml_backend_release(fresh);
  return bad;
}

static void fork_case(int* test_failed_, const char* config) {
  cml_backend_t* be = new_backend(config);
  ASSERT_TRUE(be != NULL);
  const int devices = cml_backend_device_count(be);
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(be, "fork", &b));
  if (devices > 1) ASSERT_STATUS_OK(cml_builder_spmd(b, devices));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = cml_shape_scalar(CML_DTYPE_F32);
  cml_value_t x = cml_parameter(f, "x", &s), y;
  if (devices > 1) {
    ASSERT_TRUE(cml_op_all_reduce(f, &x, 1, CML_REDUCE_SUM, NULL, &y));
  } else {
    y = cml_op_add(f, x, x);
  }
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(b, &y, 1, &exe));
  cml_buffer_t* in[4] = {0};
  cml_buffer_t* out[4] = {0};
  const float one = 1.5f;
  for (int d = 0; d < devices; ++d) {
    ASSERT_STATUS_OK(cml_buffer_from_host(be, d, &s, &one, sizeof one, &in[d]));
  }
  ASSERT_STATUS_OK(cml_executable_execute(exe, in, (size_t)devices, NULL, 0, out));
  float got = 0;
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[0], &got, sizeof got));
  const float expect = devices > 1 ? 1.5f * (float)devices : 3.0f;
  ASSERT_EQ_INT((int)(got * 2), (int)(expect * 2));
  fflush(NULL);
  const pid_t pid = fork();
  ASSERT_TRUE(pid >= 0);
  if (pid == 0) _exit(fork_child(be, exe, in, (size_t)devices, out[0], expect));
  int status = 0;
  ASSERT_TRUE(waitpid(pid, &status, 0) == pid);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "fork child (%s): %s %d\n", config,
            WIFEXITED(status) ? "exit status" : "signal",
            WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    *test_failed_ = 1;
  }
  // The parent's backend is untouched.
  for (int d = 0; d < devices; ++d) cml_buffer_release(out[d]);
  ASSERT_STATUS_OK(cml_executable_execute(exe, in, (size_t)devices, NULL, 0, out));
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[0], &got, sizeof got));
  ASSERT_EQ_INT((int)(got * 2), (int)(expect * 2));
  for (int d = 0; d < devices; ++d) {
    cml_buffer_release(out[d]);
    cml_buffer_release(in[d]);
  }
  cml_executable_release(exe);
  cml_backend_release(be);
}

#endif  // !API_TSAN

TEST(forked_child_refuses_an_inherited_backend) {
#if defined(API_TSAN)
  fprintf(stderr, "  (skipped under TSan: fork of a threaded process)\n");
#else
  fork_case(test_failed_, "c:devices=4,threads=2");
  fork_case(test_failed_, "c:threads=4");
#endif
}

TEST_MAIN(TEST_ENTRY(backend_released_first), TEST_ENTRY(retain_release_counts),
          TEST_ENTRY(compile_execute_loop), TEST_ENTRY(concurrent_execute),
          TEST_ENTRY(concurrent_donations_of_one_buffer),
          TEST_ENTRY(donation_while_other_threads_read), TEST_ENTRY(zero_size_ops),
          TEST_ENTRY(rank8), TEST_ENTRY(output_aliasing), TEST_ENTRY(nested_control_flow),
          TEST_ENTRY(forked_child_refuses_an_inherited_backend))
