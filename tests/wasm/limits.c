// SPDX-License-Identifier: Apache-2.0
// tests/wasm/limits.c: wasm32-wasi limits that must come back as statuses, never as a trap
// (built by scripts/build_wasm.sh, run by scripts/test_wasm.sh in Node's WASI; docs/wasm.md):
//   1. a graph whose intermediates need 4 GiB or more (past the 32-bit size_t): compile may
//      succeed, execution returns RESOURCE_EXHAUSTED (the arena's size used to wrap, and the
//      kernels wrote past a too-small arena: "memory access out of bounds");
//   2. kernels whose scratch needs 4 GiB or more while their operands fit (Sort of 2^28
//      elements: 16 bytes of index per element; an Int8 DotGeneral of 2^29 products widened to
//      8 bytes; a generic Int8 ConvGeneral of 2^29 inputs widened the same way; a BFloat16
//      FusedLayerNorm over a non-trailing axis of 2^29 elements, whose offsets take 8 bytes
//      each): their scratch
//      sizes used to wrap to a few bytes, the kernels' own checks wrapped alike, and they wrote
//      past it. Saturated sizes make the execution RESOURCE_EXHAUSTED;
//   3. cml_plugin_load of any path: NOT_FOUND saying wasm has no dynamic loading.
// Prints "ok: ..." and exits 0, or names what failed and exits 1.
#include <stdio.h>
#include <string.h>

#include "cml/backend_impl.h"
#include "cml/cml.h"
#include "cml/fused.h"

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

// One case of 2.: |build| makes the output from x (an Int8 or Float32 scalar parameter, so
// nothing folds at compile time); the execution must fail with RESOURCE_EXHAUSTED.
typedef cml_value_t (*scratch_build_fn)(cml_function_t* f, cml_value_t x);

static void huge_scratch(const char* what, cml_dtype_t dtype, scratch_build_fn build) {
  cml_backend_t* b = NULL;
  cml_status_t st = cml_backend_new_with_config("c", &b);
  expect(st == CML_OK, "backend", st);
  if (st != CML_OK) return;
  cml_builder_t* bl = NULL;
  st = cml_builder_create(b, what, &bl);
  expect(st == CML_OK, "builder", st);
  cml_function_t* f = cml_builder_main(bl);
  cml_shape_t scalar = cml_shape_scalar(dtype);
  cml_value_t r = build(f, cml_parameter(f, "x", &scalar));
  cml_executable_t* exe = NULL;
  if (st == CML_OK) st = cml_function_return(f, &r, 1);
  if (st == CML_OK) st = cml_builder_compile(bl, &exe);
  cml_builder_destroy(bl);
  if (st == CML_OK) {
    const float one = 1;
    cml_buffer_t *in = NULL, *out = NULL;
    st = cml_buffer_from_host(b, 0, &scalar, &one, (size_t)(cml_dtype_bits(dtype) / 8), &in);
    if (st == CML_OK) st = cml_executable_execute(exe, &in, 1, NULL, 0, &out);
    cml_buffer_release(in);
    cml_buffer_release(out);
    cml_executable_release(exe);
  }
  char text[160];
  snprintf(text, sizeof text, "%s: want RESOURCE_EXHAUSTED", what);
  expect(cml_status_code(st) == CML_STATUS_RESOURCE_EXHAUSTED, text, st);
  cml_status_free(st);
  cml_backend_release(b);
}

// x + iota over |dims| (rank |rank|, iota along the last axis).
static cml_value_t ramp(cml_function_t* f, cml_value_t x, cml_dtype_t dtype, int32_t rank,
                        const int64_t* dims) {
  cml_shape_t s = cml_shape_make(dtype, rank, dims);
  cml_value_t wide = cml_op_broadcast_in_dim(f, x, dims, rank, NULL, 0);
  return cml_op_add(f, wide, cml_op_iota(f, &s, rank - 1));
}

static cml_value_t build_sort(cml_function_t* f, cml_value_t x) {
  const int64_t n = (int64_t)1 << 28;
  cml_value_t v = ramp(f, x, CML_DTYPE_F32, 1, &n), sorted = CML_VALUE_INVALID;
  cml_function_t* cmp = NULL;
  if (cml_function_new_closure(f, &cmp) == CML_OK) {
    cml_shape_t s = cml_shape_scalar(CML_DTYPE_F32);
    cml_value_t l = cml_parameter(cmp, "l", &s), r = cml_parameter(cmp, "r", &s);
    cml_value_t less = cml_op_less_than(cmp, l, r);
    if (cml_function_return(cmp, &less, 1) == CML_OK) {
      (void)cml_op_sort(f, cmp, 0, false, &v, 1, &sorted);
    }
  }
  return cml_op_reduce_max(f, sorted, NULL, 0);
}

static cml_value_t build_dot(cml_function_t* f, cml_value_t x) {
  const int64_t a[2] = {(int64_t)1 << 23, 64}, w[2] = {64, 1};
  cml_value_t y = cml_op_dot(f, ramp(f, x, CML_DTYPE_I8, 2, a), ramp(f, x, CML_DTYPE_I8, 2, w));
  return cml_op_reduce_max(f, y, NULL, 0);
}

static cml_value_t build_conv(cml_function_t* f, cml_value_t x) {
  const int64_t in[3] = {1, 1, ((int64_t)1 << 29) + 8}, ker[3] = {1, 1, 1};
  cml_conv_config_t c;
  memset(&c, 0, sizeof c);
  c.spatial_count = 1;
  c.input_batch_axis = 0, c.input_channel_axis = 1, c.input_spatial_axes[0] = 2;
  c.kernel_output_channel_axis = 0, c.kernel_input_channel_axis = 1, c.kernel_spatial_axes[0] = 2;
  c.output_batch_axis = 0, c.output_channel_axis = 1, c.output_spatial_axes[0] = 2;
  c.output_dtype = CML_DTYPE_INVALID;
  cml_value_t y =
      cml_op_conv_general(f, ramp(f, x, CML_DTYPE_I8, 3, in), ramp(f, x, CML_DTYPE_I8, 3, ker), &c);
  return cml_op_reduce_max(f, y, NULL, 0);
}

// Normalized over axis 0 of [2^29, 1] (not the trailing axis: the kernel keeps an offset per
// element; over trailing axes it keeps none, and the same row runs).
static cml_value_t build_layer_norm(cml_function_t* f, cml_value_t x) {
  const int64_t dims[2] = {(int64_t)1 << 29, 1};
  const int64_t axis = 0;
  cml_value_t y = cml_op_fused_layer_norm(f, ramp(f, x, CML_DTYPE_BF16, 2, dims), &axis, 1, 1e-5,
                                          CML_VALUE_INVALID, CML_VALUE_INVALID);
  return cml_op_reduce_max(f, y, NULL, 0);
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
  huge_scratch("Sort of 2^28 Float32", CML_DTYPE_F32, build_sort);
  huge_scratch("Int8 Dot [2^23, 64] x [64, 1]", CML_DTYPE_I8, build_dot);
  huge_scratch("Int8 ConvGeneral of 2^29 + 8 inputs", CML_DTYPE_I8, build_conv);
  huge_scratch("BFloat16 FusedLayerNorm over axis 0 of [2^29, 1]", CML_DTYPE_BF16,
               build_layer_norm);
  plugin_load();
  if (failures) return 1;
  printf(
      "ok: limits give statuses (4 GiB intermediate and 4 GiB kernel scratch: "
      "RESOURCE_EXHAUSTED; plugin: NOT_FOUND)\n");
  return 0;
}
