// SPDX-License-Identifier: Apache-2.0
// tests/unit/executable_test.c: executable base helpers, accessors and the checks of
// cml_executable_execute (input count, shapes, dtypes, devices, donation), over a small
// backend defined here that interprets Parameter and Add on Float32.
#include <stdlib.h>

#include "core/runtime_internal.h"
#include "test.h"

//===--- the "eb" backend: 2 devices, Float32/Int32, ops Parameter, Constant, Add ---===//

typedef struct eb_buffer_t {
  cml_buffer_t base;
  void* data;
} eb_buffer_t;

typedef struct eb_executable_t {
  cml_executable_t base;
} eb_executable_t;

static int g_exe_destroyed, g_execute_calls;
static bool g_fail_execute;
static bool g_last_donate[4];

static void eb_destroy(cml_backend_t* backend) {
  cml_allocator_t a = backend->allocator;
  cml_backend_deinit_base(backend);
  cml_allocator_free(a, backend, sizeof(cml_backend_t));
}

static cml_status_t eb_new_buffer(cml_backend_t* backend, int device, const cml_shape_t* shape,
                                  bool shared, eb_buffer_t** out) {
  eb_buffer_t* b = (eb_buffer_t*)calloc(1, sizeof *b);
  if (!b) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  size_t size = cml_shape_byte_size(shape);
  b->data = calloc(1, size ? size : 1);
  if (!b->data) {
    free(b);
    return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  }
  cml_buffer_init_base(&b->base, backend, shape, device, shared);
  *out = b;
  return CML_OK;
}

static cml_status_t eb_from_host(cml_backend_t* backend, int device, const cml_shape_t* shape,
                                 const void* data, cml_buffer_t** out) {
  eb_buffer_t* b = NULL;
  CML_RETURN_IF_ERROR(eb_new_buffer(backend, device, shape, false, &b));
  memcpy(b->data, data, cml_shape_byte_size(shape));
  *out = &b->base;
  return CML_OK;
}

static cml_status_t eb_to_host(cml_buffer_t* buffer, void* dst, size_t size) {
  memcpy(dst, ((eb_buffer_t*)buffer)->data, size);
  return CML_OK;
}

static cml_status_t eb_create_shared(cml_backend_t* backend, int device, const cml_shape_t* shape,
                                     cml_buffer_t** out, void** out_data) {
  eb_buffer_t* b = NULL;
  CML_RETURN_IF_ERROR(eb_new_buffer(backend, device, shape, true, &b));
  *out = &b->base;
  *out_data = b->data;
  return CML_OK;
}

static void eb_buffer_destroy(cml_buffer_t* buffer) {
  eb_buffer_t* b = (eb_buffer_t*)buffer;
  free(b->data);
  cml_buffer_deinit_base(buffer);
  free(b);
}

static cml_status_t eb_compile(cml_backend_t* backend, cml_module_t* module,
                               cml_executable_t** out) {
  eb_executable_t* e = (eb_executable_t*)calloc(1, sizeof *e);
  if (!e) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  cml_status_t st = cml_executable_init_base(&e->base, backend, module);
  if (st != CML_OK) {
    free(e);
    return st;
  }
  *out = &e->base;
  return CML_OK;
}

// Interprets main: every value is a Float32 array of the output's element count.
static cml_status_t eb_execute(cml_executable_t* exe, cml_buffer_t* const* inputs,
                               const bool* donate, int device, cml_buffer_t** out_results) {
  g_execute_calls++;
  for (size_t i = 0; i < exe->input_count && i < 4; ++i) g_last_donate[i] = donate[i];
  if (g_fail_execute) return cml_status_make(CML_STATUS_INTERNAL, "eb: asked to fail");
  const cml_module_t* m = exe->module;
  const cml_ir_function_t* main_fn = &m->functions[0];
  float** values = (float**)calloc(m->value_count, sizeof(float*));
  for (uint32_t k = 0; k < main_fn->node_count; ++k) {
    const cml_ir_node_t* n = &m->nodes[main_fn->nodes[k]];
    const cml_shape_t* s = &m->values[n->first_output].shape;
    int64_t count = cml_shape_element_count(s);
    float* v = (float*)calloc((size_t)(count ? count : 1), sizeof(float));
    if (n->op == CML_OP_PARAMETER) {
      memcpy(v, ((eb_buffer_t*)inputs[n->index])->data, (size_t)count * sizeof(float));
    } else if (n->op == CML_OP_ADD) {
      const float* a = values[n->inputs[0]];
      const float* b = values[n->inputs[1]];
      for (int64_t i = 0; i < count; ++i) v[i] = a[i] + b[i];
    }
    values[n->first_output] = v;
  }
  for (uint32_t i = 0; i < main_fn->output_count; ++i) {
    eb_buffer_t* b = NULL;
    cml_status_t st = eb_new_buffer(exe->backend, device, &exe->output_shapes[i], false, &b);
    if (st != CML_OK) return st;  // (the test never runs out of memory)
    memcpy(b->data, values[main_fn->outputs[i]], cml_shape_byte_size(&exe->output_shapes[i]));
    out_results[i] = &b->base;
  }
  for (uint32_t i = 0; i < m->value_count; ++i) free(values[i]);
  free(values);
  return CML_OK;
}

static void eb_executable_destroy(cml_executable_t* exe) {
  cml_executable_deinit_base(exe);
  free(exe);
  g_exe_destroyed++;
}

static const cml_backend_vtable_t eb_vtable = {
    .struct_size = sizeof(cml_backend_vtable_t),
    .destroy = eb_destroy,
    .buffer_from_host = eb_from_host,
    .buffer_copy_to_host = eb_to_host,
    .buffer_create_shared = eb_create_shared,
    .buffer_destroy = eb_buffer_destroy,
    .compile = eb_compile,
    .execute = eb_execute,
    .executable_destroy = eb_executable_destroy,
};

// The same backend with the execute_with_control slot (backend API 1.1): it records the control
// it was given and then executes as eb_execute does.
static int g_control_calls;
static cml_execute_control_t g_last_control;
static cml_status_t eb_execute_with_control(cml_executable_t* exe, cml_buffer_t* const* inputs,
                                            const bool* donate, int device,
                                            const cml_execute_control_t* control,
                                            cml_buffer_t** out_results) {
  g_control_calls++;
  g_last_control = *control;
  return eb_execute(exe, inputs, donate, device, out_results);
}

static const cml_backend_vtable_t eb_control_vtable = {
    .struct_size = sizeof(cml_backend_vtable_t),
    .destroy = eb_destroy,
    .buffer_from_host = eb_from_host,
    .buffer_copy_to_host = eb_to_host,
    .buffer_create_shared = eb_create_shared,
    .buffer_destroy = eb_buffer_destroy,
    .compile = eb_compile,
    .execute = eb_execute,
    .executable_destroy = eb_executable_destroy,
    .execute_with_control = eb_execute_with_control,
};

// A plug-in built against backend API 1.0: its vtable ends before execute_with_control (the
// slot below is past its struct_size and must never be called).
static const cml_backend_vtable_t eb_old_vtable = {
    .struct_size = offsetof(cml_backend_vtable_t, execute_with_control),
    .destroy = eb_destroy,
    .buffer_from_host = eb_from_host,
    .buffer_copy_to_host = eb_to_host,
    .buffer_create_shared = eb_create_shared,
    .buffer_destroy = eb_buffer_destroy,
    .compile = eb_compile,
    .execute = eb_execute,
    .executable_destroy = eb_executable_destroy,
    .execute_with_control = eb_execute_with_control,
};

static cml_backend_t* eb_new_with(const char* name, const cml_backend_vtable_t* vtable) {
  cml_backend_t* b = (cml_backend_t*)cml_allocator_malloc(cml_allocator_system(), sizeof *b, 64);
  if (!b) return NULL;
  cml_status_t st = cml_backend_init_base(b, vtable, cml_allocator_system(), name, "", 2);
  if (st != CML_OK) {
    cml_status_free(st);
    cml_allocator_free(cml_allocator_system(), b, sizeof *b);
    return NULL;
  }
  b->capabilities.dtypes = CML_DTYPE_BIT(CML_DTYPE_F32) | CML_DTYPE_BIT(CML_DTYPE_I32);
  b->capabilities.shared_buffers = true;
  cml_capabilities_set_op(&b->capabilities, CML_OP_PARAMETER, true);
  cml_capabilities_set_op(&b->capabilities, CML_OP_CONSTANT, true);
  cml_capabilities_set_op(&b->capabilities, CML_OP_ADD, true);
  return b;
}

static cml_backend_t* eb_new(const char* name) { return eb_new_with(name, &eb_vtable); }

// Compiles main(x: f32[3], y: f32[3]) -> x + y on |backend|.
static cml_status_t compile_add(cml_backend_t* backend, cml_executable_t** out) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(backend, "add", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){3});
  cml_value_t x = cml_parameter(f, "x", &s);
  cml_value_t y = cml_parameter(f, "y", &s);
  cml_value_t z = cml_op_add(f, x, y);
  cml_status_t st = cml_function_return(f, &z, 1);
  if (st == CML_OK) st = cml_builder_compile(b, out);
  cml_builder_destroy(b);
  return st;
}

static cml_buffer_t* f32_buffer(cml_backend_t* be, int device, const float* v, int64_t n) {
  cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 1, &n);
  cml_buffer_t* buf = NULL;
  cml_status_t st = cml_buffer_from_host(be, device, &s, v, (size_t)n * sizeof(float), &buf);
  if (st != CML_OK) {
    fprintf(stderr, "f32_buffer: %s\n", cml_status_message(st));
    cml_status_free(st);
  }
  return buf;
}

//===--- tests ---===//

TEST(compile_accessors_and_execute) {
  cml_backend_t* be = eb_new("eb");
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(compile_add(be, &exe));
  ASSERT_EQ_INT(cml_executable_input_count(exe), 2);
  ASSERT_STREQ(cml_executable_input_name(exe, 0), "x");
  ASSERT_STREQ(cml_executable_input_name(exe, 1), "y");
  ASSERT_TRUE(cml_executable_input_name(exe, 2) == NULL);
  cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){3});
  ASSERT_TRUE(cml_shape_equal(cml_executable_input_shape(exe, 1), &s));
  ASSERT_TRUE(cml_executable_input_shape(exe, 2) == NULL);
  ASSERT_EQ_INT(cml_executable_output_count(exe), 1);
  ASSERT_TRUE(cml_shape_equal(cml_executable_output_shape(exe, 0), &s));
  ASSERT_TRUE(cml_executable_output_shape(exe, 1) == NULL);

  float xv[3] = {1, 2, 3}, yv[3] = {10, 20, 30};
  cml_buffer_t* x = f32_buffer(be, 1, xv, 3);
  cml_buffer_t* y = f32_buffer(be, 1, yv, 3);
  cml_buffer_t* out[1] = {NULL};
  ASSERT_STATUS_OK(cml_executable_execute(exe, (cml_buffer_t*[]){x, y}, 2, NULL, 1, out));
  ASSERT_FALSE(g_last_donate[0]);  // the backend always receives a donate array
  ASSERT_FALSE(g_last_donate[1]);
  float got[3];
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[0], got, sizeof got));
  ASSERT_EQ_DBL(got[0], 11.0);
  ASSERT_EQ_DBL(got[1], 22.0);
  ASSERT_EQ_DBL(got[2], 33.0);
  ASSERT_EQ_INT(cml_buffer_device(out[0]), 1);
  ASSERT_TRUE(cml_buffer_is_valid(x));  // nothing donated
  cml_buffer_release(out[0]);

  // The executable keeps the backend alive and is destroyed by its last release.
  int destroyed = g_exe_destroyed;
  ASSERT_TRUE(cml_executable_retain(exe) == exe);
  cml_executable_release(exe);
  ASSERT_EQ_INT(g_exe_destroyed, destroyed);
  cml_buffer_release(x);
  cml_buffer_release(y);
  cml_backend_release(be);
  cml_executable_release(exe);
  ASSERT_EQ_INT(g_exe_destroyed, destroyed + 1);
  cml_executable_release(NULL);
  ASSERT_EQ_INT(cml_executable_input_count(NULL), 0);
}

TEST(execute_validation) {
  cml_backend_t* be = eb_new("eb");
  cml_backend_t* other = eb_new("other");
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(compile_add(be, &exe));
  float v3[3] = {1, 2, 3}, v4[4] = {1, 2, 3, 4};
  cml_buffer_t* x = f32_buffer(be, 0, v3, 3);
  cml_buffer_t* y = f32_buffer(be, 0, v3, 3);
  cml_buffer_t* wrong_dims = f32_buffer(be, 0, v4, 4);
  cml_buffer_t* on_dev1 = f32_buffer(be, 1, v3, 3);
  cml_buffer_t* foreign = f32_buffer(other, 0, v3, 3);
  int32_t i3[3] = {1, 2, 3};
  cml_shape_t is = cml_shape_make(CML_DTYPE_I32, 1, (int64_t[]){3});
  cml_buffer_t* wrong_dtype = NULL;
  ASSERT_STATUS_OK(cml_buffer_from_host(be, 0, &is, i3, sizeof i3, &wrong_dtype));
  cml_buffer_t* out[1] = {(cml_buffer_t*)1};
  int calls = g_execute_calls;

  cml_status_t st = cml_executable_execute(exe, (cml_buffer_t*[]){x}, 1, NULL, 0, out);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "expected 2 inputs, got 1");
  cml_status_free(st);
  ASSERT_TRUE(out[0] == NULL);

  st = cml_executable_execute(exe, (cml_buffer_t*[]){x, wrong_dims}, 2, NULL, 0, out);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "\"y\"");
  ASSERT_CONTAINS(cml_status_message(st), "#1");
  ASSERT_CONTAINS(cml_status_message(st), "expected shape (Float32)[3], got (Float32)[4]");
  cml_status_free(st);

  st = cml_executable_execute(exe, (cml_buffer_t*[]){wrong_dtype, y}, 2, NULL, 0, out);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "\"x\"");
  ASSERT_CONTAINS(cml_status_message(st), "(Int32)[3]");
  cml_status_free(st);

  st = cml_executable_execute(exe, (cml_buffer_t*[]){x, on_dev1}, 2, NULL, 0, out);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "device 1");
  cml_status_free(st);

  st = cml_executable_execute(exe, (cml_buffer_t*[]){x, y}, 2, NULL, 2, out);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_OUT_OF_RANGE);
  ASSERT_CONTAINS(cml_status_message(st), "device 2");
  cml_status_free(st);

  st = cml_executable_execute(exe, (cml_buffer_t*[]){foreign, y}, 2, NULL, 0, out);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "\"other\"");
  cml_status_free(st);

  ASSERT_STATUS_CODE(cml_executable_execute(exe, (cml_buffer_t*[]){x, NULL}, 2, NULL, 0, out),
                     CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_executable_execute(exe, NULL, 2, NULL, 0, out),
                     CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_executable_execute(exe, (cml_buffer_t*[]){x, y}, 2, NULL, 0, NULL),
                     CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_executable_execute(NULL, (cml_buffer_t*[]){x, y}, 2, NULL, 0, out),
                     CML_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ_INT(g_execute_calls, calls);  // nothing reached the backend

  // The same buffer twice without donation is fine: x + x.
  ASSERT_STATUS_OK(cml_executable_execute(exe, (cml_buffer_t*[]){x, x}, 2, NULL, 0, out));
  float got[3];
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[0], got, sizeof got));
  ASSERT_EQ_DBL(got[2], 6.0);
  cml_buffer_release(out[0]);

  cml_buffer_release(x);
  cml_buffer_release(y);
  cml_buffer_release(wrong_dims);
  cml_buffer_release(on_dev1);
  cml_buffer_release(foreign);
  cml_buffer_release(wrong_dtype);
  cml_executable_release(exe);
  cml_backend_release(other);
  cml_backend_release(be);
}

TEST(donation) {
  cml_backend_t* be = eb_new("eb");
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(compile_add(be, &exe));
  float v[3] = {1, 2, 3};
  cml_buffer_t* x = f32_buffer(be, 0, v, 3);
  cml_buffer_t* y = f32_buffer(be, 0, v, 3);
  cml_buffer_t* out[1] = {NULL};

  // Donated twice / donated and passed elsewhere.
  cml_status_t st =
      cml_executable_execute(exe, (cml_buffer_t*[]){x, x}, 2, (bool[]){true, true}, 0, out);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "donated twice");
  cml_status_free(st);
  st = cml_executable_execute(exe, (cml_buffer_t*[]){x, x}, 2, (bool[]){false, true}, 0, out);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "also passed as input 0");
  cml_status_free(st);
  ASSERT_TRUE(cml_buffer_is_valid(x));

  // Shared buffers cannot be donated.
  cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){3});
  cml_buffer_t* shared = NULL;
  void* data = NULL;
  ASSERT_STATUS_OK(cml_buffer_create_shared(be, 0, &s, &shared, &data));
  memcpy(data, v, sizeof v);
  st = cml_executable_execute(exe, (cml_buffer_t*[]){shared, y}, 2, (bool[]){true, false}, 0, out);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(cml_status_message(st), "shared buffers cannot be donated");
  cml_status_free(st);
  // ... but they can be used as plain inputs.
  ASSERT_STATUS_OK(
      cml_executable_execute(exe, (cml_buffer_t*[]){shared, y}, 2, (bool[]){false, false}, 0, out));
  cml_buffer_release(out[0]);

  // A failed execution does not consume the donated buffer.
  g_fail_execute = true;
  ASSERT_STATUS_CODE(
      cml_executable_execute(exe, (cml_buffer_t*[]){x, y}, 2, (bool[]){true, false}, 0, out),
      CML_STATUS_INTERNAL);
  g_fail_execute = false;
  ASSERT_TRUE(g_last_donate[0]);
  ASSERT_TRUE(cml_buffer_is_valid(x));

  // A successful one does.
  ASSERT_STATUS_OK(
      cml_executable_execute(exe, (cml_buffer_t*[]){x, y}, 2, (bool[]){true, false}, 0, out));
  ASSERT_FALSE(cml_buffer_is_valid(x));
  ASSERT_TRUE(cml_buffer_is_valid(y));
  float got[3];
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[0], got, sizeof got));
  ASSERT_EQ_DBL(got[0], 2.0);
  ASSERT_EQ_DBL(got[1], 4.0);
  ASSERT_EQ_DBL(got[2], 6.0);
  cml_buffer_release(out[0]);

  st = cml_executable_execute(exe, (cml_buffer_t*[]){x, y}, 2, NULL, 0, out);
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_FAILED_PRECONDITION);
  ASSERT_CONTAINS(cml_status_message(st), "buffer was donated");
  ASSERT_CONTAINS(cml_status_message(st), "\"x\"");
  cml_status_free(st);
  ASSERT_STATUS_CODE(cml_buffer_copy_to_host(x, got, sizeof got), CML_STATUS_FAILED_PRECONDITION);

  cml_buffer_release(x);  // donated buffers are still released
  cml_buffer_release(y);
  cml_buffer_release(shared);
  cml_executable_release(exe);
  cml_backend_release(be);
}

// Cancellation and deadlines on backends without the execute_with_control slot (unset, or
// beyond an API 1.0 plug-in's struct_size): checked once before dispatch, then |execute| runs.
TEST(execute_options_without_control_slot) {
  const cml_backend_vtable_t* vtables[] = {&eb_vtable, &eb_old_vtable};
  for (size_t v = 0; v < 2; ++v) {
    cml_backend_t* be = eb_new_with("eb", vtables[v]);
    cml_executable_t* exe = NULL;
    ASSERT_STATUS_OK(compile_add(be, &exe));
    ASSERT_FALSE(cml_executable_is_interruptible(exe));
    float xv[3] = {1, 2, 3}, yv[3] = {4, 5, 6};
    cml_buffer_t* x = f32_buffer(be, 0, xv, 3);
    cml_buffer_t* y = f32_buffer(be, 0, yv, 3);
    cml_cancel_token_t* token = NULL;
    ASSERT_STATUS_OK(cml_cancel_token_create(cml_allocator_system(), &token));
    cml_execute_options_t opts;
    cml_execute_options_init(&opts);
    ASSERT_EQ_INT(opts.struct_size, sizeof opts);
    opts.cancel_token = token;
    opts.timeout_ns = 3600LL * 1000000000;
    bool donate[2] = {true, false};
    opts.donate = donate;
    cml_buffer_t* out[1] = {NULL};
    int calls = g_execute_calls, control_calls = g_control_calls;
    cml_cancel_token_cancel(token);
    ASSERT_STATUS_CODE(
        cml_executable_execute_with_options(exe, (cml_buffer_t*[]){x, y}, 2, &opts, out),
        CML_STATUS_CANCELLED);
    ASSERT_EQ_INT(g_execute_calls, calls);  // stopped before dispatch
    ASSERT_TRUE(out[0] == NULL);
    ASSERT_TRUE(cml_buffer_is_valid(x));  // not consumed
    cml_cancel_token_destroy(token);
    opts.cancel_token = NULL;
    ASSERT_STATUS_OK(
        cml_executable_execute_with_options(exe, (cml_buffer_t*[]){x, y}, 2, &opts, out));
    ASSERT_EQ_INT(g_execute_calls, calls + 1);
    ASSERT_EQ_INT(g_control_calls, control_calls);  // never the slot
    ASSERT_TRUE(g_last_donate[0]);
    ASSERT_FALSE(cml_buffer_is_valid(x));  // donated on success
    float got[3];
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[0], got, sizeof got));
    ASSERT_EQ_DBL(got[2], 9.0);
    cml_buffer_release(out[0]);
    cml_buffer_release(x);
    cml_buffer_release(y);
    cml_executable_release(exe);
    cml_backend_release(be);
  }
}

// Backends with the slot receive the control only when a token or a deadline was given.
TEST(execute_options_with_control_slot) {
  cml_backend_t* be = eb_new_with("eb", &eb_control_vtable);
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(compile_add(be, &exe));
  ASSERT_TRUE(cml_executable_is_interruptible(exe));
  ASSERT_FALSE(cml_executable_is_interruptible(NULL));
  float xv[3] = {1, 2, 3};
  cml_buffer_t* x = f32_buffer(be, 1, xv, 3);
  cml_buffer_t* out[1] = {NULL};
  int calls = g_execute_calls, control_calls = g_control_calls;
  // No token, no deadline: the plain execute.
  cml_execute_options_t opts;
  cml_execute_options_init(&opts);
  opts.device = 1;
  ASSERT_STATUS_OK(
      cml_executable_execute_with_options(exe, (cml_buffer_t*[]){x, x}, 2, &opts, out));
  ASSERT_EQ_INT(g_control_calls, control_calls);
  ASSERT_EQ_INT(g_execute_calls, calls + 1);
  ASSERT_EQ_INT(cml_buffer_device(out[0]), 1);
  cml_buffer_release(out[0]);
  // A deadline: the slot, with an absolute deadline on the monotonic clock.
  int64_t before = cml_clock_monotonic_ns();
  opts.timeout_ns = 5LL * 1000000000;
  ASSERT_STATUS_OK(
      cml_executable_execute_with_options(exe, (cml_buffer_t*[]){x, x}, 2, &opts, out));
  ASSERT_EQ_INT(g_control_calls, control_calls + 1);
  ASSERT_TRUE(g_last_control.cancelled == NULL);
  ASSERT_TRUE(g_last_control.deadline_ns >= before + opts.timeout_ns);
  ASSERT_TRUE(g_last_control.deadline_ns <= cml_clock_monotonic_ns() + opts.timeout_ns);
  ASSERT_EQ_INT(g_last_control.struct_size, sizeof(cml_execute_control_t));
  cml_buffer_release(out[0]);
  // A token: the slot sees the flag flip when the token is cancelled.
  cml_cancel_token_t* token = NULL;
  ASSERT_STATUS_OK(cml_cancel_token_create(cml_allocator_system(), &token));
  opts.timeout_ns = 0;
  opts.cancel_token = token;
  ASSERT_STATUS_OK(
      cml_executable_execute_with_options(exe, (cml_buffer_t*[]){x, x}, 2, &opts, out));
  ASSERT_EQ_INT(g_control_calls, control_calls + 2);
  ASSERT_TRUE(g_last_control.cancelled != NULL);
  ASSERT_EQ_INT(g_last_control.deadline_ns, 0);
  ASSERT_STATUS_OK(cml_execute_control_check(&g_last_control, "test"));
  cml_cancel_token_cancel(token);
  ASSERT_STATUS_CODE(cml_execute_control_check(&g_last_control, "test"), CML_STATUS_CANCELLED);
  cml_buffer_release(out[0]);
  // A deadline already passed (1 ns) stops before dispatch with DEADLINE_EXCEEDED.
  cml_execute_control_t past = {sizeof past, NULL, 1};
  ASSERT_STATUS_CODE(cml_execute_control_check(&past, "test"), CML_STATUS_DEADLINE_EXCEEDED);
  ASSERT_STATUS_OK(cml_execute_control_check(NULL, "test"));
  ASSERT_STREQ(cml_status_code_name(CML_STATUS_DEADLINE_EXCEEDED), "DEADLINE_EXCEEDED");
  ASSERT_STREQ(cml_status_code_name(CML_STATUS_CANCELLED), "CANCELLED");
  ASSERT_EQ_INT(cml_status_code(cml_status_from_code(CML_STATUS_DEADLINE_EXCEEDED)),
                CML_STATUS_DEADLINE_EXCEEDED);
  cml_cancel_token_destroy(token);
  cml_buffer_release(x);
  cml_executable_release(exe);
  cml_backend_release(be);
}

// Past 64 inputs the duplicate check sorts the buffers (pairwise it cost 10^8 comparisons per
// execute for 10^4 donated weights): the same inputs are named as by the pairwise check.
TEST(donation_among_many_inputs) {
  cml_backend_t* be = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("c:threads=1", &be));
  enum { kN = 100 };
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(be, "many", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 1, (int64_t[]){1});
  cml_value_t sum = CML_VALUE_INVALID;
  for (int k = 0; k < kN; ++k) {
    char name[16];
    snprintf(name, sizeof name, "p%d", k);
    cml_value_t p = cml_parameter(f, name, &s);
    sum = k == 0 ? p : cml_op_add(f, sum, p);
  }
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(cml_function_return(f, &sum, 1));
  ASSERT_STATUS_OK(cml_builder_compile(b, &exe));
  cml_builder_destroy(b);
  cml_buffer_t* bufs[kN];
  cml_buffer_t* ins[kN];
  bool donate[kN];
  for (int k = 0; k < kN; ++k) {
    float v = (float)k;
    ASSERT_STATUS_OK(cml_buffer_from_host(be, 0, &s, &v, sizeof v, &bufs[k]));
    ins[k] = bufs[k];
    donate[k] = false;
  }
  cml_buffer_t* out[1] = {NULL};
  static const struct {
    int donated[2];  // inputs donated (-1: none)
    int same[3];     // inputs given bufs[same[0]] (-1: none)
    const char* want;
  } kCases[] = {
      {{80, -1},
       {70, 80, -1},
       "input 80 (parameter #80 \"p80\") is donated but the same buffer "
       "is also passed as input 70 (parameter #70 \"p70\")"},
      {{70, -1},
       {70, 80, -1},
       "input 70 (parameter #70 \"p70\") is donated but the same buffer "
       "is also passed as input 80"},
      {{90, 75},
       {75, 90, 3},
       "input 75 (parameter #75 \"p75\") is donated but the same buffer is "
       "also passed as input 3 (parameter #3 \"p3\")"},
      {{90, 99},
       {90, 99, -1},
       "input 90 (parameter #90 \"p90\") is donated but the same buffer "
       "is also passed as input 99 (parameter #99 \"p99\") and donated twice"},
  };
  for (size_t c = 0; c < sizeof kCases / sizeof kCases[0]; ++c) {
    for (int k = 0; k < kN; ++k) {
      ins[k] = bufs[k];
      donate[k] = false;
    }
    for (int k = 0; k < 3 && kCases[c].same[k] >= 0; ++k)
      ins[kCases[c].same[k]] = bufs[kCases[c].same[0]];
    for (int k = 0; k < 2 && kCases[c].donated[k] >= 0; ++k) donate[kCases[c].donated[k]] = true;
    cml_status_t st = cml_executable_execute(exe, ins, kN, donate, 0, out);
    ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INVALID_ARGUMENT);
    ASSERT_CONTAINS(cml_status_message(st), kCases[c].want);
    cml_status_free(st);
  }
  // No duplicate: every input donated, the sum 0 + 1 + ... + 99.
  for (int k = 0; k < kN; ++k) {
    ins[k] = bufs[k];
    donate[k] = true;
  }
  ASSERT_STATUS_OK(cml_executable_execute(exe, ins, kN, donate, 0, out));
  float got = 0;
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[0], &got, sizeof got));
  ASSERT_EQ_DBL(got, 4950.0);
  ASSERT_FALSE(cml_buffer_is_valid(bufs[0]));
  cml_buffer_release(out[0]);
  for (int k = 0; k < kN; ++k) cml_buffer_release(bufs[k]);
  cml_executable_release(exe);
  cml_backend_release(be);
}

TEST_MAIN(TEST_ENTRY(compile_accessors_and_execute), TEST_ENTRY(execute_validation),
          TEST_ENTRY(donation), TEST_ENTRY(donation_among_many_inputs),
          TEST_ENTRY(execute_options_without_control_slot),
          TEST_ENTRY(execute_options_with_control_slot))
