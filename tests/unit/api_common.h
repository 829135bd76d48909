// SPDX-License-Identifier: Apache-2.0
// tests/unit/api_common.h: helpers shared by the api_*_test.c files, which use only the public
// headers (include/cml/*.h), as an application would.
#ifndef CML_TESTS_UNIT_API_COMMON_H_
#define CML_TESTS_UNIT_API_COMMON_H_

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cml/cml.h"

// Frees |st| and returns its code (CML_STATUS_OK for CML_OK).
static inline cml_status_code_t api_code(cml_status_t st) {
  cml_status_code_t c = cml_status_code(st);
  cml_status_free(st);
  return c;
}

// Copies the message of |st| into |buf| and frees |st|; returns the code.
static inline cml_status_code_t api_code_msg(cml_status_t st, char* buf, size_t size) {
  cml_status_code_t c = cml_status_code(st);
  snprintf(buf, size, "%s", cml_status_message(st));
  cml_status_free(st);
  return c;
}

// Creates a buffer from |data| (byte size from |shape|) on device 0; NULL on failure (printed).
static inline cml_buffer_t* api_buffer(cml_backend_t* backend, const cml_shape_t* shape,
                                       const void* data) {
  cml_buffer_t* buf = NULL;
  cml_status_t st = cml_buffer_from_host(backend, 0, shape, data, cml_shape_byte_size(shape), &buf);
  if (st != CML_OK) {
    fprintf(stderr, "api_buffer: %s\n", cml_status_message(st));
    cml_status_free(st);
    return NULL;
  }
  return buf;
}

// Returns main with |outputs|, compiles, destroys the builder. The status is the first error.
static inline cml_status_t api_finish(cml_builder_t* b, const cml_value_t* outputs, size_t count,
                                      cml_executable_t** out_exe) {
  cml_status_t st = cml_function_return(cml_builder_main(b), outputs, count);
  if (st == CML_OK) st = cml_builder_compile(b, out_exe);
  cml_builder_destroy(b);
  return st;
}

// Executes |exe| on device 0 with host inputs (|in_data[i]| holds the byte size of input i's
// shape) and copies every output into |out_data[i]| (sized from the output shape).
static inline cml_status_t api_run(cml_backend_t* backend, cml_executable_t* exe,
                                   const void* const* in_data, void* const* out_data) {
  size_t n_in = cml_executable_input_count(exe), n_out = cml_executable_output_count(exe);
  cml_buffer_t* ins[16] = {0};
  cml_buffer_t* outs[16] = {0};
  cml_status_t st = CML_OK;
  if (n_in > 16 || n_out > 16) return cml_status_from_code(CML_STATUS_INTERNAL);
  for (size_t i = 0; i < n_in && st == CML_OK; ++i) {
    const cml_shape_t* s = cml_executable_input_shape(exe, i);
    st = cml_buffer_from_host(backend, 0, s, in_data[i], cml_shape_byte_size(s), &ins[i]);
  }
  if (st == CML_OK) st = cml_executable_execute(exe, ins, n_in, NULL, 0, outs);
  for (size_t i = 0; i < n_out && st == CML_OK; ++i) {
    st = cml_buffer_copy_to_host(outs[i], out_data[i],
                                 cml_shape_byte_size(cml_buffer_shape(outs[i])));
  }
  for (size_t i = 0; i < n_in; ++i) cml_buffer_release(ins[i]);
  for (size_t i = 0; i < n_out; ++i) cml_buffer_release(outs[i]);
  return st;
}

#define API_SHAPE(dt, ...)                                                            \
  cml_shape_make((dt), (int32_t)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), \
                 (int64_t[]){__VA_ARGS__})

#endif  // CML_TESTS_UNIT_API_COMMON_H_
