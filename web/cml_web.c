// SPDX-License-Identifier: Apache-2.0
// web/cml_web.c: the entry points of the cml WebAssembly module (see cml_web.h): build, compile
// and run a two-layer perceptron with cml's c backend, and time one.
//
// Thread-safety: single-thread (the messages live in static storage; wasm has one thread).
#include "web/cml_web.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cml/cml.h"

#if defined(__wasm__)
#define CML_WEB_EXPORT(name) __attribute__((export_name(#name)))
#else
#define CML_WEB_EXPORT(name)
#endif

static char cml_web_error_text[1024];
static char cml_web_backend_text[256];

// examples/mlp's weights.
static const float cml_web_w1[CML_WEB_MLP_IN][CML_WEB_MLP_HIDDEN] = {
    {0.5f, -1.0f, 0.25f, 2.0f, -0.5f},
    {1.0f, 0.75f, -0.5f, 0.0f, 0.125f},
    {-0.25f, 0.5f, 1.5f, -1.0f, 1.0f}};
static const float cml_web_b1[CML_WEB_MLP_HIDDEN] = {0.1f, -0.2f, 0.3f, 0.0f, -0.5f};
static const float cml_web_w2[CML_WEB_MLP_HIDDEN][CML_WEB_MLP_OUT] = {
    {1.0f, -1.0f}, {0.5f, 0.25f}, {-0.75f, 1.0f}, {2.0f, 0.5f}, {0.0f, -1.5f}};
static const float cml_web_b2[CML_WEB_MLP_OUT] = {0.5f, -0.25f};

static void cml_web_set_error(const char* fmt, ...) CML_PRINTF(1, 2);
static void cml_web_set_error(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vsnprintf(cml_web_error_text, sizeof cml_web_error_text, fmt, args);
  va_end(args);
}

// Records |st| (which it frees) as the last error; returns -1.
static int cml_web_fail(const char* what, cml_status_t st) {
  cml_web_set_error("%s: %s: %s", what, cml_status_code_name(cml_status_code(st)),
                    cml_status_message(st));
  cml_status_free(st);
  return -1;
}

static double cml_web_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

// The sizes of one MLP and its compiled graph: inputs x, w1, b1, w2, b2 (in parameter order),
// outputs y and s.
typedef struct {
  int batch, in, hidden, out;
  cml_backend_t* backend;
  cml_executable_t* exe;
} cml_web_mlp_t;

static cml_status_t cml_web_mlp_build(cml_web_mlp_t* m) {
  cml_builder_t* builder = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(m->backend, "web_mlp", &builder));
  cml_function_t* f = cml_builder_main(builder);
  int64_t batch = m->batch, in = m->in, hidden = m->hidden, out = m->out;
  cml_shape_t xs = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){batch, in});
  cml_shape_t w1s = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){in, hidden});
  cml_shape_t b1s = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){hidden});
  cml_shape_t w2s = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){hidden, out});
  cml_shape_t b2s = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){out});
  cml_value_t x = cml_parameter(f, "x", &xs);
  cml_value_t w1 = cml_parameter(f, "w1", &w1s);
  cml_value_t b1 = cml_parameter(f, "b1", &b1s);
  cml_value_t w2 = cml_parameter(f, "w2", &w2s);
  cml_value_t b2 = cml_parameter(f, "b2", &b2s);
  cml_value_t h = cml_op_dot(f, x, w1);
  h = cml_op_add(f, h,
                 cml_op_broadcast_in_dim(f, b1, (int64_t[]){batch, hidden}, 2, (int64_t[]){1}, 1));
  h = cml_op_max(f, h, cml_constant_scalar_f64(f, CML_DTYPE_F32, 0.0));
  cml_value_t y = cml_op_dot(f, h, w2);
  y = cml_op_add(f, y,
                 cml_op_broadcast_in_dim(f, b2, (int64_t[]){batch, out}, 2, (int64_t[]){1}, 1));
  cml_value_t s = cml_op_reduce_sum(f, y, (int64_t[]){1}, 1);
  cml_value_t outputs[2] = {y, s};
  cml_status_t st = cml_function_return(f, outputs, 2);
  if (st == CML_OK) st = cml_builder_compile(builder, &m->exe);
  cml_builder_destroy(builder);
  return st;
}

// Creates the backend and compiles the graph for |m|'s sizes.
static cml_status_t cml_web_mlp_open(cml_web_mlp_t* m) {
  m->backend = NULL;
  m->exe = NULL;
  CML_RETURN_IF_ERROR(cml_backend_new(&m->backend));
  snprintf(cml_web_backend_text, sizeof cml_web_backend_text, "%s (%s)",
           cml_backend_name(m->backend), cml_backend_description(m->backend));
  return cml_web_mlp_build(m);
}

static void cml_web_mlp_close(cml_web_mlp_t* m) {
  cml_executable_release(m->exe);
  cml_backend_release(m->backend);
  m->exe = NULL;
  m->backend = NULL;
}

// Executes |m| on host arrays |params| (x, w1, b1, w2, b2); copies y and s out.
static cml_status_t cml_web_mlp_execute(cml_web_mlp_t* m, const float* const params[5], float* y,
                                        float* s) {
  const size_t counts[5] = {(size_t)m->batch * (size_t)m->in, (size_t)m->in * (size_t)m->hidden,
                            (size_t)m->hidden, (size_t)m->hidden * (size_t)m->out, (size_t)m->out};
  cml_buffer_t* inputs[5] = {NULL, NULL, NULL, NULL, NULL};
  cml_buffer_t* outputs[2] = {NULL, NULL};
  cml_status_t st = CML_OK;
  for (size_t i = 0; i < 5 && st == CML_OK; ++i) {
    st = cml_buffer_from_host(m->backend, 0, cml_executable_input_shape(m->exe, i), params[i],
                              counts[i] * sizeof(float), &inputs[i]);
  }
  if (st == CML_OK) st = cml_executable_execute(m->exe, inputs, 5, NULL, 0, outputs);
  if (st == CML_OK) {
    st = cml_buffer_copy_to_host(outputs[0], y, (size_t)m->batch * (size_t)m->out * sizeof *y);
  }
  if (st == CML_OK) st = cml_buffer_copy_to_host(outputs[1], s, (size_t)m->batch * sizeof *s);
  for (size_t i = 0; i < 5; ++i) cml_buffer_release(inputs[i]);
  for (size_t i = 0; i < 2; ++i) cml_buffer_release(outputs[i]);
  return st;
}

CML_WEB_EXPORT(cml_web_mlp)
int cml_web_mlp(const float* x, int batch, float* out_y, float* out_s) {
  cml_web_error_text[0] = '\0';
  if (!x || !out_y || !out_s || batch < 1 || batch > 4096) {
    cml_web_set_error("cml_web_mlp: bad arguments (batch %d, x %p, y %p, s %p)", batch,
                      (const void*)x, (void*)out_y, (void*)out_s);
    return -1;
  }
  cml_web_mlp_t m = {batch, CML_WEB_MLP_IN, CML_WEB_MLP_HIDDEN, CML_WEB_MLP_OUT, NULL, NULL};
  cml_status_t st = cml_web_mlp_open(&m);
  if (st != CML_OK) {
    cml_web_mlp_close(&m);
    return cml_web_fail("building the MLP", st);
  }
  const float* params[5] = {x, &cml_web_w1[0][0], cml_web_b1, &cml_web_w2[0][0], cml_web_b2};
  st = cml_web_mlp_execute(&m, params, out_y, out_s);
  cml_web_mlp_close(&m);
  if (st != CML_OK) return cml_web_fail("running the MLP", st);
  return 0;
}

// A fixed pseudo-random sequence in [-1, 1) (xorshift32), so both sides time the same numbers.
static float cml_web_next(uint32_t* state) {
  uint32_t v = *state;
  v ^= v << 13;
  v ^= v >> 17;
  v ^= v << 5;
  *state = v;
  return (float)((double)(v >> 8) / 8388608.0 - 1.0);
}

// Checks |y| and |s| against plain double-precision loops; sets the error and returns false on
// a mismatch.
static bool cml_web_check(const cml_web_mlp_t* m, const float* const p[5], const float* y,
                          const float* s) {
  double* h = malloc((size_t)m->hidden * sizeof *h);
  if (!h) {
    cml_web_set_error("cml_web_mlp_bench: out of memory");
    return false;
  }
  bool ok = true;
  for (int b = 0; b < m->batch && ok; ++b) {
    for (int j = 0; j < m->hidden; ++j) {
      double acc = p[2][j];
      for (int i = 0; i < m->in; ++i) acc += (double)p[0][b * m->in + i] * p[1][i * m->hidden + j];
      h[j] = acc > 0 ? acc : 0;
    }
    double sum = 0, scale = 1;
    for (int k = 0; k < m->out && ok; ++k) {
      double acc = p[4][k], mag = fabs(p[4][k]);
      for (int j = 0; j < m->hidden; ++j) {
        acc += h[j] * p[3][j * m->out + k];
        mag += fabs(h[j] * p[3][j * m->out + k]);
      }
      sum += acc;
      scale += mag;
      double got = y[b * m->out + k];
      if (fabs(got - acc) > 1e-5 * (1 + mag)) {
        cml_web_set_error("cml_web_mlp_bench: y[%d][%d] = %.9g, want %.9g", b, k, got, acc);
        ok = false;
      }
    }
    if (ok && fabs(s[b] - sum) > 1e-5 * scale) {
      cml_web_set_error("cml_web_mlp_bench: s[%d] = %.9g, want %.9g", b, (double)s[b], sum);
      ok = false;
    }
  }
  free(h);
  return ok;
}

CML_WEB_EXPORT(cml_web_mlp_bench)
double cml_web_mlp_bench(int batch, int in, int hidden, int out, int iterations,
                         double* out_compile_us) {
  cml_web_error_text[0] = '\0';
  if (out_compile_us) *out_compile_us = 0;
  if (batch < 1 || in < 1 || hidden < 1 || out < 1 || iterations < 1 || batch > 65536 ||
      in > 65536 || hidden > 65536 || out > 65536) {
    cml_web_set_error(
        "cml_web_mlp_bench: bad sizes (batch %d, in %d, hidden %d, out %d, "
        "iterations %d)",
        batch, in, hidden, out, iterations);
    return -1;
  }
  // Every buffer's byte count must fit a (32-bit) size_t: 32768 x 65536 floats wrapped to
  // malloc(0), and the fill wrote past it.
  const uint64_t pairs[4][2] = {{(uint64_t)batch, (uint64_t)in},
                                {(uint64_t)in, (uint64_t)hidden},
                                {(uint64_t)hidden, (uint64_t)out},
                                {(uint64_t)batch, (uint64_t)out}};
  for (int i = 0; i < 4; ++i) {
    if (pairs[i][0] * pairs[i][1] > SIZE_MAX / sizeof(float)) {
      cml_web_set_error(
          "cml_web_mlp_bench: sizes too large for wasm memory (batch %d, in %d, hidden %d, "
          "out %d: %llu x %llu floats)",
          batch, in, hidden, out, (unsigned long long)pairs[i][0], (unsigned long long)pairs[i][1]);
      return -1;
    }
  }
  cml_web_mlp_t m = {batch, in, hidden, out, NULL, NULL};
  const size_t counts[5] = {(size_t)batch * (size_t)in, (size_t)in * (size_t)hidden, (size_t)hidden,
                            (size_t)hidden * (size_t)out, (size_t)out};
  float* params[5] = {NULL, NULL, NULL, NULL, NULL};
  float* y = malloc((size_t)batch * (size_t)out * sizeof *y);
  float* s = malloc((size_t)batch * sizeof *s);
  bool ok = y && s;
  uint32_t state = 2463534242u;
  for (int i = 0; i < 5 && ok; ++i) {
    params[i] = malloc(counts[i] * sizeof(float));
    ok = params[i] != NULL;
    for (size_t j = 0; ok && j < counts[i]; ++j) params[i][j] = cml_web_next(&state);
  }
  double result = -1;
  if (!ok) {
    cml_web_set_error("cml_web_mlp_bench: out of memory");
  } else {
    const float* const* cparams = (const float* const*)params;
    double t0 = cml_web_now_us();
    cml_status_t st = cml_web_mlp_open(&m);
    double t1 = cml_web_now_us();
    if (out_compile_us) *out_compile_us = t1 - t0;
    // The first execution is checked (and warms the arena); the rest are timed.
    if (st == CML_OK) st = cml_web_mlp_execute(&m, cparams, y, s);
    if (st != CML_OK) {
      cml_web_fail("cml_web_mlp_bench", st);
    } else if (cml_web_check(&m, cparams, y, s)) {
      double start = cml_web_now_us();
      for (int it = 0; it < iterations && st == CML_OK; ++it) {
        st = cml_web_mlp_execute(&m, cparams, y, s);
      }
      double elapsed = cml_web_now_us() - start;
      if (st != CML_OK) {
        cml_web_fail("cml_web_mlp_bench", st);
      } else {
        result = elapsed / iterations;
      }
    }
  }
  cml_web_mlp_close(&m);
  for (int i = 0; i < 5; ++i) free(params[i]);
  free(y);
  free(s);
  return result;
}

CML_WEB_EXPORT(cml_web_error)
const char* cml_web_error(void) { return cml_web_error_text; }

CML_WEB_EXPORT(cml_web_backend)
const char* cml_web_backend(void) { return cml_web_backend_text; }

CML_WEB_EXPORT(cml_web_malloc)
void* cml_web_malloc(size_t size) { return malloc(size ? size : 1); }

CML_WEB_EXPORT(cml_web_free)
void cml_web_free(void* pointer) { free(pointer); }
