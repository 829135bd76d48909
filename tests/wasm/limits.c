// SPDX-License-Identifier: Apache-2.0
// tests/wasm/limits.c: wasm32-wasi limits that must come back as statuses, never as a trap
// (built by scripts/build_wasm.sh, run by scripts/test_wasm.sh in Node's WASI; docs/wasm.md):
//   1. a graph whose intermediates need 4 GiB or more (past the 32-bit size_t): compile may
//      succeed, execution returns RESOURCE_EXHAUSTED (the arena's size used to wrap, and the
//      kernels wrote past a too-small arena: "memory access out of bounds");
//   2. cml_plugin_load of any path: NOT_FOUND saying wasm has no dynamic loading.
// Prints "ok: ..." and exits 0, or names what failed and exits 1.
#include <stdio.h>
#include <string.h>

#include "cml/backend_impl.h"
#include "cml/cml.h"

static int failures;

static void expect(int ok, const char* what, cml_status_t st) {
  if (!ok) {
    printf("FAIL: %s: %s: %s\n", what, cml_status_code_name(cml_status_code(st)),
           cml_status_message(st));
    ++failures;
  }
}

// max(broadcast(x) + iota) over Int8 [65536, 65536] (4 GiB per intermediate), without fusion so
// that the intermediates are stored.
static void huge_intermediate(void) {
  cml_backend_t* b = NULL;
  cml_status_t st = cml_backend_new_with_config("c:fusion=false", &b);
  expect(st == CML_OK, "backend", st);
  if (st != CML_OK) return;
  cml_builder_t* bl = NULL;
  st = cml_builder_create(b, "huge", &bl);
  expect(st == CML_OK, "builder", st);
  cml_function_t* f = cml_builder_main(bl);
  cml_shape_t scalar = cml_shape_scalar(CML_DTYPE_I8);
  cml_shape_t big = cml_shape_make(CML_DTYPE_I8, 2, (int64_t[]){65536, 65536});
  cml_value_t x = cml_parameter(f, "x", &scalar);
  cml_value_t wide = cml_op_broadcast_in_dim(f, x, big.dims, 2, NULL, 0);
  cml_value_t y = cml_op_add(f, wide, cml_op_iota(f, &big, 1));
  cml_value_t r = cml_op_reduce_max(f, y, NULL, 0);
  cml_executable_t* exe = NULL;
  if (st == CML_OK) st = cml_function_return(f, &r, 1);
  if (st == CML_OK) st = cml_builder_compile(bl, &exe);
  cml_builder_destroy(bl);
  if (st == CML_OK) {
    const int8_t one = 1;
    cml_buffer_t *in = NULL, *out = NULL;
    st = cml_buffer_from_host(b, 0, &scalar, &one, 1, &in);
    if (st == CML_OK) st = cml_executable_execute(exe, &in, 1, NULL, 0, &out);
    cml_buffer_release(in);
    cml_buffer_release(out);
    cml_executable_release(exe);
  }
  expect(cml_status_code(st) == CML_STATUS_RESOURCE_EXHAUSTED,
         "a 4 GiB intermediate: want RESOURCE_EXHAUSTED", st);
  cml_status_free(st);
  cml_backend_release(b);
}

static void plugin_load(void) {
  const char* const paths[2] = {"/nonexistent/libplugin.so", "libplugin.so"};
  for (int i = 0; i < 2; ++i) {
    cml_status_t st = cml_plugin_load(paths[i]);
    expect(cml_status_code(st) == CML_STATUS_NOT_FOUND &&
               strstr(cml_status_message(st), "not supported on wasm32-wasi") != NULL,
           "cml_plugin_load: want NOT_FOUND, no dynamic loading", st);
    cml_status_free(st);
  }
}

int main(void) {
  huge_intermediate();
  plugin_load();
  if (failures) return 1;
  printf("ok: limits give statuses (4 GiB intermediate: RESOURCE_EXHAUSTED; plugin: NOT_FOUND)\n");
  return 0;
}
