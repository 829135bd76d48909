// SPDX-License-Identifier: Apache-2.0
// examples/while_solver/main.c: Newton's method for square roots as a While loop.
//
//   state (i, y); while i < 30 && max|y*y - a| > 1e-12 * max(a): y = (y + a / y) / 2
//
// The iteration limit and the tolerance live in the condition closure, which captures |a| from
// main. Prints the roots and the iteration count; exits 0 when they match sqrt() from libm.
#include <math.h>
#include <stdio.h>

#include "cml/cml.h"

enum { kN = 5 };

static cml_status_t build(cml_backend_t* backend, cml_executable_t** out_exe) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(backend, "newton_sqrt", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t vs = cml_shape_make(CML_DTYPE_F64, 1, (int64_t[]){kN});
  cml_shape_t is = cml_shape_scalar(CML_DTYPE_I32);
  cml_value_t a = cml_parameter(f, "a", &vs);
  cml_value_t tol = cml_op_mul(f, cml_op_reduce_max(f, a, NULL, 0),
                               cml_constant_scalar_f64(f, CML_DTYPE_F64, 1e-12));

  cml_function_t *cond = NULL, *body = NULL;
  cml_status_t st = cml_function_new_closure(f, &cond);
  if (st == CML_OK) st = cml_function_new_closure(f, &body);
  if (st == CML_OK) {
    cml_value_t i = cml_parameter(cond, "i", &is);
    cml_value_t y = cml_parameter(cond, "y", &vs);
    cml_value_t err = cml_op_reduce_max(
        cond, cml_op_abs(cond, cml_op_sub(cond, cml_op_mul(cond, y, y), a)), NULL, 0);
    cml_value_t go = cml_op_logical_and(
        cond, cml_op_less_than(cond, i, cml_constant_scalar_i64(cond, CML_DTYPE_I32, 30)),
        cml_op_greater_than(cond, err, tol));
    st = cml_function_return(cond, &go, 1);
  }
  if (st == CML_OK) {
    cml_value_t i = cml_parameter(body, "i", &is);
    cml_value_t y = cml_parameter(body, "y", &vs);
    cml_value_t next = cml_op_mul(body, cml_op_add(body, y, cml_op_div(body, a, y)),
                                  cml_constant_scalar_f64(body, CML_DTYPE_F64, 0.5));
    cml_value_t r[2] = {cml_op_add(body, i, cml_constant_scalar_i64(body, CML_DTYPE_I32, 1)), next};
    st = cml_function_return(body, r, 2);
  }
  cml_value_t out[2] = {0, 0};
  if (st == CML_OK) {
    // Start from y = a (or 1 for a < 1, with Max): y0 = max(a, 1).
    cml_value_t y0 = cml_op_max(f, a, cml_constant_scalar_f64(f, CML_DTYPE_F64, 1));
    cml_value_t init[2] = {cml_constant_scalar_i64(f, CML_DTYPE_I32, 0), y0};
    cml_op_while(f, cond, body, init, 2, out);  // errors stick to the builder
    st = cml_function_return(f, out, 2);        // reports the first builder error
  }
  if (st == CML_OK) st = cml_builder_compile(b, out_exe);
  cml_builder_destroy(b);
  return st;
}

int main(void) {
  static const double a[kN] = {2, 9, 0.25, 1e6, 12345.678};
  cml_backend_t* backend = NULL;
  cml_executable_t* exe = NULL;
  cml_buffer_t* in = NULL;
  cml_buffer_t* out[2] = {NULL, NULL};
  double roots[kN];
  int32_t iters = -1;
  cml_status_t st = cml_backend_new(&backend);
  if (st == CML_OK) st = build(backend, &exe);
  cml_shape_t vs = cml_shape_make(CML_DTYPE_F64, 1, (int64_t[]){kN});
  if (st == CML_OK) st = cml_buffer_from_host(backend, 0, &vs, a, sizeof a, &in);
  if (st == CML_OK) st = cml_executable_execute(exe, &in, 1, NULL, 0, out);
  if (st == CML_OK) st = cml_buffer_copy_to_host(out[0], &iters, sizeof iters);
  if (st == CML_OK) st = cml_buffer_copy_to_host(out[1], roots, sizeof roots);
  int failures = 0;
  if (st != CML_OK) {
    fprintf(stderr, "while_solver: %s\n", cml_status_message(st));
    cml_status_free(st);
    failures = 1;
  } else {
    printf("backend %s: converged after %d iterations\n", cml_backend_name(backend), iters);
    for (int i = 0; i < kN; ++i) {
      double want = sqrt(a[i]);
      bool ok = fabs(roots[i] - want) <= 1e-9 * want;
      printf("  sqrt(%g) = %.12g (libm %.12g)%s\n", a[i], roots[i], want, ok ? "" : "  MISMATCH");
      failures += !ok;
    }
    if (iters <= 0 || iters >= 30) {
      printf("  unexpected iteration count %d\n", iters);
      ++failures;
    }
  }
  cml_buffer_release(out[0]);
  cml_buffer_release(out[1]);
  cml_buffer_release(in);
  cml_executable_release(exe);
  cml_backend_release(backend);
  return failures ? 1 : 0;
}
