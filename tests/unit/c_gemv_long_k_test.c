// SPDX-License-Identifier: Apache-2.0
// tests/unit/c_gemv_long_k_test.c: products with a long K on the c backend's axpy GEMV forms
// (one row; two rows over a large f32 weight; one row over a bf16 weight) sum K in blocks, so
// their error stays near the blocked bound: ones times a [1e6, 3] weight of 0.3f (or its bf16
// value) against the exact K x w. The chained sum over k they replaced was 1.5e-3 off here.
#include <math.h>
#include <stdlib.h>

#include "cml/cml.h"
#include "test.h"

enum { K = 1000000, N = 3 };

// x [m, K] of ones times w [K, N] of |w_value|, both stored as |wdt|, summed in f32: the largest
// relative error of the outputs against K * w_value.
static cml_status_t long_k_error(cml_backend_t* be, int64_t m, cml_dtype_t wdt, double* err) {
  float* x = malloc(sizeof(float) * (size_t)(m * K));
  uint16_t* wh = malloc(sizeof(uint16_t) * (size_t)K * N);
  uint16_t* xh = malloc(sizeof(uint16_t) * (size_t)(m * K));
  float* wf = malloc(sizeof(float) * (size_t)K * N);
  if (!x || !wh || !wf || !xh) {
    free(x), free(wh), free(wf), free(xh);
    return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  }
  for (int64_t i = 0; i < m * K; ++i) x[i] = 1.0f, xh[i] = cml_f32_to_bf16(1.0f);
  const uint16_t hb = cml_f32_to_bf16(0.3f);
  for (int64_t i = 0; i < (int64_t)K * N; ++i) wf[i] = 0.3f, wh[i] = hb;
  const double w_value = wdt == CML_DTYPE_BF16 ? (double)cml_bf16_to_f32(hb) : (double)0.3f;
  cml_builder_t* b = NULL;
  cml_status_t st = cml_builder_create(be, "long_k", &b);
  cml_executable_t* exe = NULL;
  cml_buffer_t *xb = NULL, *wb = NULL, *out = NULL;
  const cml_shape_t xs = cml_shape_make(wdt, 2, (int64_t[]){m, K});
  const cml_shape_t ws = cml_shape_make(wdt, 2, (int64_t[]){K, N});
  if (st == CML_OK) {
    cml_function_t* f = cml_builder_main(b);
    cml_value_t xv = cml_parameter(f, "x", &xs);
    cml_value_t wv = cml_parameter(f, "w", &ws);
    cml_dot_config_t d = {0};
    d.lhs_contracting_count = d.rhs_contracting_count = 1;
    d.lhs_contracting_axes[0] = 1;
    d.rhs_contracting_axes[0] = 0;
    d.accumulator_dtype = d.output_dtype = CML_DTYPE_F32;
    cml_value_t y = cml_op_dot_general(f, xv, wv, &d);
    st = cml_function_return(f, &y, 1);
  }
  if (st == CML_OK) st = cml_builder_compile(b, &exe);
  cml_builder_destroy(b);
  if (st == CML_OK) {
    // Ones: x as f32, or its bf16 ones (the first m * K halves of a buffer of bf16 ones).
    st = wdt == CML_DTYPE_F32
             ? cml_buffer_from_host(be, 0, &xs, x, sizeof(float) * (size_t)(m * K), &xb)
             : cml_buffer_from_host(be, 0, &xs, xh, sizeof(uint16_t) * (size_t)(m * K), &xb);
  }
  if (st == CML_OK) {
    st = wdt == CML_DTYPE_F32
             ? cml_buffer_from_host(be, 0, &ws, wf, sizeof(float) * (size_t)K * N, &wb)
             : cml_buffer_from_host(be, 0, &ws, wh, sizeof(uint16_t) * (size_t)K * N, &wb);
  }
  if (st == CML_OK) st = cml_executable_execute(exe, (cml_buffer_t*[]){xb, wb}, 2, NULL, 0, &out);
  float y[2 * N];
  if (st == CML_OK) st = cml_buffer_copy_to_host(out, y, sizeof(float) * (size_t)(m * N));
  *err = 0;
  const double exact = (double)K * w_value;
  for (int64_t i = 0; st == CML_OK && i < m * N; ++i) {
    const double e = fabs((double)y[i] - exact) / exact;
    if (e > *err) *err = e;
  }
  cml_buffer_release(xb);
  cml_buffer_release(wb);
  cml_buffer_release(out);
  cml_executable_release(exe);
  free(x), free(wh), free(wf), free(xh);
  return st;
}

TEST(long_k_axpy_forms_stay_accurate) {
  cml_backend_t* be = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("c", &be));
  static const struct {
    int64_t m;
    cml_dtype_t w;
  } kCases[] = {{1, CML_DTYPE_F32}, {2, CML_DTYPE_F32}, {1, CML_DTYPE_BF16}};
  for (size_t i = 0; i < sizeof kCases / sizeof kCases[0]; ++i) {
    double err = 0;
    cml_status_t st = long_k_error(be, kCases[i].m, kCases[i].w, &err);
    if (st != CML_OK) {
      cml_backend_release(be);
      ASSERT_STATUS_OK(st);
    }
    // Blocks of 2048: about (2048 + K / 2048) x 2^-24 = 1.5e-4 at worst; 2.0e-5 measured.
    if (err > 1e-4) {
      cml_backend_release(be);
      TEST_FAIL_("m = %lld, w %s: relative error %.3g", (long long)kCases[i].m,
                 cml_dtype_name(kCases[i].w), err);
    }
  }
  cml_backend_release(be);
}

TEST_MAIN(TEST_ENTRY(long_k_axpy_forms_stay_accurate))
