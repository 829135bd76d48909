// SPDX-License-Identifier: Apache-2.0
// web/cml_web.h: the C entry points a web page (or Node) calls in the cml WebAssembly module.
//
// The module is built by scripts/build_wasm.sh as a WASI reactor (cml_web.wasm): JavaScript
// instantiates it (web/cml.js), calls `_initialize`, then these exports. Pointers are offsets
// into the module's memory; cml_web_malloc/cml_web_free manage that memory from JavaScript.
// The entries use the default backend (cml_backend_new: GOMLX_BACKEND where the host has an
// environment, as the WASI commands do; else the best one built in, the c backend on wasm).
// Single-thread.
#ifndef CML_WEB_H_
#define CML_WEB_H_

#include <stddef.h>

// The demo model, examples/mlp's two-layer perceptron with its fixed weights:
//   y = relu(x @ w1 + b1) @ w2 + b2,   s = sum(y, axis 1)
// |x| holds |batch| rows of CML_WEB_MLP_IN floats; |out_y| receives batch * CML_WEB_MLP_OUT
// floats and |out_s| |batch| floats. Builds, compiles and executes the graph. Returns 0 on
// success, -1 on failure (cml_web_error() says why).
enum { CML_WEB_MLP_IN = 3, CML_WEB_MLP_HIDDEN = 5, CML_WEB_MLP_OUT = 2 };
int cml_web_mlp(const float* x, int batch, float* out_y, float* out_s);

// Times an MLP of the given sizes (weights from a fixed pseudo-random sequence): compiles once,
// checks one result against a plain C loop, then executes |iterations| times. Returns the mean
// microseconds per execution, or -1 on failure (cml_web_error()). |out_compile_us| (may be
// NULL) receives the build + compile time in microseconds.
double cml_web_mlp_bench(int batch, int in, int hidden, int out, int iterations,
                         double* out_compile_us);

// The last failure's message ("" if none). Valid until the next call.
const char* cml_web_error(void);
// The description of the backend the entries use (after a successful call; "" before).
const char* cml_web_backend(void);

// Memory for JavaScript to pass arrays in and out.
void* cml_web_malloc(size_t size);
void cml_web_free(void* pointer);

#endif  // CML_WEB_H_
