// SPDX-License-Identifier: Apache-2.0
// cml/cml.h: the umbrella header. Include this to use cml.
//
// cml lowers machine-learning computation graphs onto pluggable backends: build a graph with
// the portable API (cml/graph.h), pick a backend (cml/backend.h: the pure C backend "c", or
// "xla" driving PJRT plugins), compile, and execute on buffers that live on numbered devices.
//
// Example (add two vectors on the default backend; C, not C++: the array literal is C99's):
//
//   #include <cml/cml.h>
//   cml_backend_t* be = NULL;
//   cml_status_t st = cml_backend_new(&be);                 // honours GOMLX_BACKEND
//   cml_builder_t* b = NULL;
//   if (st == CML_OK) st = cml_builder_create(be, "add", &b);
//   cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){3});
//   cml_function_t* f = cml_builder_main(b);
//   cml_value_t x = cml_parameter(f, "x", &s);  // parameter 0: one statement each, as C
//   cml_value_t y = cml_parameter(f, "y", &s);  // leaves the order of arguments unspecified
//   cml_value_t sum = cml_op_add(f, x, y);
//   if (st == CML_OK) st = cml_function_return(f, &sum, 1);
//   cml_executable_t* exe = NULL;
//   if (st == CML_OK) st = cml_builder_compile(b, &exe);
//   ... cml_buffer_from_host, cml_executable_execute, cml_buffer_copy_to_host ...
//   if (st != CML_OK) fprintf(stderr, "%s\n", cml_status_message(st));
//   cml_status_free(st);
//   cml_builder_destroy(b);
//   cml_executable_release(exe);
//   cml_backend_release(be);
#ifndef CML_CML_H_
#define CML_CML_H_

#include "cml/base.h"
#include "cml/shape.h"
#include "cml/graph.h"
#include "cml/backend.h"
#include "cml/fused.h"
#include "cml/distributed.h"
#include "cml/autodiff.h"
#include "cml/optim.h"
#include "cml/dataset.h"
#include "cml/checkpoint.h"
#include "cml/host_collective.h"
#include "cml/xla.h"

#endif  // CML_CML_H_
