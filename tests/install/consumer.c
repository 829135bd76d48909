// SPDX-License-Identifier: Apache-2.0
// tests/install/consumer.c: a program built against the INSTALLED headers and library (through
// pkg-config and through find_package(cml)), checking a computed result by hand.
#include <cml/cml.h>
#include <math.h>
#include <stdio.h>

int main(void) {
  cml_backend_t* be = NULL;
  cml_status_t st = cml_backend_new_with_config("c", &be);
  cml_builder_t* b = NULL;
  if (st == CML_OK) st = cml_builder_create(be, "consumer", &b);
  cml_executable_t* exe = NULL;
  if (st == CML_OK) {
    cml_function_t* f = cml_builder_main(b);
    cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){4});
    cml_value_t x = cml_parameter(f, "x", &s);
    cml_value_t y = cml_op_mul(f, x, x);               // x^2
    cml_value_t z = cml_op_reduce_sum(f, y, NULL, 0);  // sum of squares
    st = cml_function_return(f, &z, 1);
    if (st == CML_OK) st = cml_builder_compile(b, &exe);
  }
  float host[4] = {1, 2, 3, 4};
  float result = 0;
  cml_buffer_t* in = NULL;
  cml_buffer_t* out[1] = {NULL};
  if (st == CML_OK) {
    cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){4});
    st = cml_buffer_from_host(be, 0, &s, host, sizeof host, &in);
  }
  if (st == CML_OK) st = cml_executable_execute(exe, &in, 1, NULL, 0, out);
  if (st == CML_OK) st = cml_buffer_copy_to_host(out[0], &result, sizeof result);
  int rc = 0;
  if (st != CML_OK) {
    fprintf(stderr, "consumer: %s\n", cml_status_message(st));
    rc = 1;
  } else if (result != 30.0f) {  // 1 + 4 + 9 + 16
    fprintf(stderr, "consumer: got %g, want 30\n", (double)result);
    rc = 1;
  } else {
    printf("consumer: sum of squares = %g (ok)\n", (double)result);
  }
  cml_status_free(st);
  cml_buffer_release(in);
  cml_buffer_release(out[0]);
  cml_executable_release(exe);
  cml_builder_destroy(b);
  cml_backend_release(be);
  return rc;
}
