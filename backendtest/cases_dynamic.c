// SPDX-License-Identifier: Apache-2.0
// backendtest/cases_dynamic.c: dynamic axes (cml/shape.h): a graph with named dynamic axes is
// compiled once and run on inputs of several sizes; the dynamic ops; the rejections. Skipped
// where the backend does not advertise capabilities.dynamic_axes. Expected values are
// hand-computed.
#include <string.h>

#include "bt.h"

static bool require_dynamic(bt_t* t) {
  if (cml_backend_capabilities(bt_backend(t))->dynamic_axes) return true;
  bt_unsupported(t, "the backend has no dynamic axes");
  return false;
}

// A dynamic parameter of main: |dims| with CML_DYNAMIC_DIM where |names| has a name.
static cml_value_t dyn_param(bt_t* t, const char* name, cml_dtype_t dtype, int32_t rank,
                             const int64_t* dims, const char* const* names) {
  cml_shape_t s;
  if (!bt_ok(t, cml_shape_init_dynamic(&s, dtype, rank, dims, names), "cml_shape_init_dynamic")) {
    return CML_VALUE_INVALID;
  }
  return cml_parameter(bt_main(t), name, &s);
}

#define D CML_DYNAMIC_DIM

// x: [b=?, 3] + y: [1, 3], run with b = 2 and b = 4 (one executable).
static void case_broadcast(bt_t* t) {
  if (!require_dynamic(t) || !bt_require_op(t, CML_OP_ADD)) return;
  cml_value_t x = dyn_param(t, "x", CML_DTYPE_F32, 2, (int64_t[]){D, 3}, (const char*[]){"b", 0});
  cml_shape_t ys = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){1, 3});
  cml_value_t y = cml_parameter(bt_main(t), "y", &ys);
  cml_value_t z = cml_op_add(bt_main(t), x, y);
  cml_executable_t* exe = bt_compile(t, &z, 1);
  if (!exe) return;
  bt_tensor_t yv = bt_tensor_f64(t, CML_DTYPE_F32, 2, (int64_t[]){1, 3}, (double[]){10, 20, 30});
  for (int64_t b = 2; b <= 4; b += 2) {
    double xd[12];
    for (int i = 0; i < 12; ++i) xd[i] = i;
    bt_tensor_t in[2] = {bt_tensor_f64(t, CML_DTYPE_F32, 2, (int64_t[]){b, 3}, xd), yv};
    bt_tensor_t out[1];
    if (!bt_run(t, exe, in, 2, 0, out, 1)) return;
    double want[12];
    for (int i = 0; i < b * 3; ++i) want[i] = i + 10 * (i % 3 + 1);
    bt_expect_f64(t, b == 2 ? "batch 2" : "batch 4", &out[0], CML_DTYPE_F32, 2, (int64_t[]){b, 3},
                  want, 0);
  }
}

// ReduceSum over the dynamic axis and over a static one: [n=?, 2].
static void case_reduce(bt_t* t) {
  if (!require_dynamic(t) || !bt_require_op(t, CML_OP_REDUCE_SUM)) return;
  cml_function_t* f = bt_main(t);
  cml_value_t x = dyn_param(t, "x", CML_DTYPE_F32, 2, (int64_t[]){D, 2}, (const char*[]){"n", 0});
  cml_value_t outs[2] = {cml_op_reduce_sum(f, x, (int64_t[]){0}, 1),
                         cml_op_reduce_max(f, x, (int64_t[]){1}, 1)};
  cml_executable_t* exe = bt_compile(t, outs, 2);
  if (!exe) return;
  // n = 3: rows {1, 2}, {3, 4}, {5, -6}.
  bt_tensor_t in =
      bt_tensor_f64(t, CML_DTYPE_F32, 2, (int64_t[]){3, 2}, (double[]){1, 2, 3, 4, 5, -6});
  bt_tensor_t out[2];
  if (!bt_run(t, exe, &in, 1, 0, out, 2)) return;
  bt_expect_f64(t, "sum n=3", &out[0], CML_DTYPE_F32, 1, (int64_t[]){2}, (double[]){9, 0}, 0);
  bt_expect_f64(t, "max n=3", &out[1], CML_DTYPE_F32, 1, (int64_t[]){3}, (double[]){2, 4, 5}, 0);
  in = bt_tensor_f64(t, CML_DTYPE_F32, 2, (int64_t[]){1, 2}, (double[]){7, 8});
  if (!bt_run(t, exe, &in, 1, 0, out, 2)) return;
  bt_expect_f64(t, "sum n=1", &out[0], CML_DTYPE_F32, 1, (int64_t[]){2}, (double[]){7, 8}, 0);
  bt_expect_f64(t, "max n=1", &out[1], CML_DTYPE_F32, 1, (int64_t[]){1}, (double[]){8}, 0);
}

// DotGeneral with a dynamic batch: [b=?, 2, 2] x [b=?, 2, 1] -> [b, 2, 1].
static void case_dot_batch(bt_t* t) {
  if (!require_dynamic(t) || !bt_require_op(t, CML_OP_DOT_GENERAL)) return;
  const char* names[3] = {"b", 0, 0};
  cml_value_t l = dyn_param(t, "l", CML_DTYPE_F32, 3, (int64_t[]){D, 2, 2}, names);
  cml_value_t r = dyn_param(t, "r", CML_DTYPE_F32, 3, (int64_t[]){D, 2, 1}, names);
  cml_dot_config_t c;
  memset(&c, 0, sizeof c);
  c.lhs_batch_count = c.rhs_batch_count = 1;
  c.lhs_contracting_count = c.rhs_contracting_count = 1;
  c.lhs_contracting_axes[0] = 2;
  c.rhs_contracting_axes[0] = 1;
  cml_value_t z = cml_op_dot_general(bt_main(t), l, r, &c);
  cml_executable_t* exe = bt_compile(t, &z, 1);
  if (!exe) return;
  // b = 1: [[1,2],[3,4]] x [5,6] = [17, 39].
  bt_tensor_t in[2] = {
      bt_tensor_f64(t, CML_DTYPE_F32, 3, (int64_t[]){1, 2, 2}, (double[]){1, 2, 3, 4}),
      bt_tensor_f64(t, CML_DTYPE_F32, 3, (int64_t[]){1, 2, 1}, (double[]){5, 6})};
  bt_tensor_t out[1];
  if (!bt_run(t, exe, in, 2, 0, out, 1)) return;
  bt_expect_f64(t, "b=1", &out[0], CML_DTYPE_F32, 3, (int64_t[]){1, 2, 1}, (double[]){17, 39}, 0);
  // b = 3: identity, 2*identity, [[0,1],[1,0]] with rhs [1,2], [3,4], [5,6].
  in[0] = bt_tensor_f64(t, CML_DTYPE_F32, 3, (int64_t[]){3, 2, 2},
                        (double[]){1, 0, 0, 1, 2, 0, 0, 2, 0, 1, 1, 0});
  in[1] = bt_tensor_f64(t, CML_DTYPE_F32, 3, (int64_t[]){3, 2, 1}, (double[]){1, 2, 3, 4, 5, 6});
  if (!bt_run(t, exe, in, 2, 0, out, 1)) return;
  bt_expect_f64(t, "b=3", &out[0], CML_DTYPE_F32, 3, (int64_t[]){3, 2, 1},
                (double[]){1, 2, 6, 8, 6, 5}, 0);
}

// While over a dynamic state: x doubles three times (i counts to 3).
static void case_while(bt_t* t) {
  if (!require_dynamic(t) || !bt_require_functions(t) || !bt_require_op(t, CML_OP_WHILE)) return;
  cml_function_t* f = bt_main(t);
  const char* names[1] = {"n"};
  cml_value_t x = dyn_param(t, "x", CML_DTYPE_F32, 1, (int64_t[]){D}, names);
  cml_shape_t is = cml_shape_scalar(CML_DTYPE_I32);
  int32_t zero = 0, three = 3, one = 1;
  cml_value_t i0 = cml_constant(f, &is, &zero);
  cml_function_t *cond = NULL, *body = NULL;
  if (!bt_ok(t, cml_function_new_closure(f, &cond), "closure") ||
      !bt_ok(t, cml_function_new_closure(f, &body), "closure")) {
    return;
  }
  cml_shape_t xs;
  if (!bt_ok(t, cml_shape_init_dynamic(&xs, CML_DTYPE_F32, 1, (int64_t[]){D}, names), "shape")) {
    return;
  }
  cml_parameter(cond, "x", &xs);
  cml_value_t ci = cml_parameter(cond, "i", &is);
  cml_value_t lt = cml_op_less_than(cond, ci, cml_constant(cond, &is, &three));
  if (!bt_ok(t, cml_function_return(cond, &lt, 1), "cond return")) return;
  cml_value_t bx = cml_parameter(body, "x", &xs);
  cml_value_t bi = cml_parameter(body, "i", &is);
  cml_value_t next[2] = {cml_op_add(body, bx, bx),
                         cml_op_add(body, bi, cml_constant(body, &is, &one))};
  if (!bt_ok(t, cml_function_return(body, next, 2), "body return")) return;
  cml_value_t init[2] = {x, i0}, outs[2];
  if (!cml_op_while(f, cond, body, init, 2, outs)) {
    bt_ok(t, cml_builder_status(bt_builder(t)), "While");
    return;
  }
  cml_executable_t* exe = bt_compile(t, outs, 1);
  if (!exe) return;
  for (int64_t n = 2; n <= 5; n += 3) {
    double xd[5] = {1, -2, 0.5, 3, 4}, want[5];
    for (int i = 0; i < 5; ++i) want[i] = xd[i] * 8;
    bt_tensor_t in = bt_tensor_f64(t, CML_DTYPE_F32, 1, &n, xd);
    bt_tensor_t out[1];
    if (!bt_run(t, exe, &in, 1, 0, out, 1)) return;
    bt_expect_f64(t, n == 2 ? "n=2" : "n=5", &out[0], CML_DTYPE_F32, 1, &n, want, 0);
  }
}

// DynamicShape, DynamicDimensionSize and DynamicReshape with an inferred axis.
static void case_dynamic_ops(bt_t* t) {
  if (!require_dynamic(t) || !bt_require_op(t, CML_OP_DYNAMIC_RESHAPE) ||
      !bt_require_op(t, CML_OP_DYNAMIC_SHAPE) || !bt_require_op(t, CML_OP_DYNAMIC_DIMENSION_SIZE)) {
    return;
  }
  cml_function_t* f = bt_main(t);
  cml_value_t x = dyn_param(t, "x", CML_DTYPE_I32, 2, (int64_t[]){D, 4}, (const char*[]){"n", 0});
  // [n, 4] -> [g, 2] with g = 2n inferred.
  cml_value_t r = cml_op_dynamic_reshape(f, x, (int64_t[]){D, 2}, (const char*[]){"g", 0}, 2);
  cml_value_t outs[4] = {cml_op_dynamic_shape(f, x), cml_op_dynamic_dimension_size(f, r, 0),
                         cml_op_dynamic_dimension_size(f, x, 1), r};
  cml_executable_t* exe = bt_compile(t, outs, 4);
  if (!exe) return;
  bt_tensor_t in =
      bt_tensor_i64(t, CML_DTYPE_I32, 2, (int64_t[]){2, 4}, (int64_t[]){0, 1, 2, 3, 4, 5, 6, 7});
  bt_tensor_t out[4];
  if (!bt_run(t, exe, &in, 1, 0, out, 4)) return;
  bt_expect_i64(t, "DynamicShape", &out[0], CML_DTYPE_I32, 1, (int64_t[]){2}, (int64_t[]){2, 4});
  bt_expect_i64(t, "DynamicDimensionSize(g)", &out[1], CML_DTYPE_I32, 0, NULL, (int64_t[]){4});
  bt_expect_i64(t, "DynamicDimensionSize(static)", &out[2], CML_DTYPE_I32, 0, NULL, (int64_t[]){4});
  bt_expect_i64(t, "DynamicReshape", &out[3], CML_DTYPE_I32, 2, (int64_t[]){4, 2},
                (int64_t[]){0, 1, 2, 3, 4, 5, 6, 7});
}

// DynamicReshape with a runtime size value: [n=?, 4] -> [m, 2] with m = 2 * size(x, 0), run
// with n = 1 and n = 3 (one executable).
static void case_reshape_size_value(bt_t* t) {
  if (!require_dynamic(t) || !bt_require_op(t, CML_OP_DYNAMIC_RESHAPE) ||
      !bt_require_op(t, CML_OP_DYNAMIC_DIMENSION_SIZE)) {
    return;
  }
  cml_function_t* f = bt_main(t);
  cml_value_t x = dyn_param(t, "x", CML_DTYPE_I32, 2, (int64_t[]){D, 4}, (const char*[]){"n", 0});
  cml_value_t v = cml_op_mul(f, cml_op_dynamic_dimension_size(f, x, 0),
                             cml_constant_scalar_i64(f, CML_DTYPE_I32, 2));
  cml_value_t r = cml_op_dynamic_reshape_values(f, x, (int64_t[]){D, 2}, (const char*[]){"m", 0},
                                                (cml_value_t[]){v, CML_VALUE_INVALID}, 2);
  cml_executable_t* exe = bt_compile(t, &r, 1);
  if (!exe) return;
  int64_t xd[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  for (int64_t n = 1; n <= 3; n += 2) {
    bt_tensor_t in = bt_tensor_i64(t, CML_DTYPE_I32, 2, (int64_t[]){n, 4}, xd);
    bt_tensor_t out;
    if (!bt_run(t, exe, &in, 1, 0, &out, 1)) return;
    bt_expect_i64(t, "DynamicReshape(size value)", &out, CML_DTYPE_I32, 2, (int64_t[]){2 * n, 2},
                  xd);
  }
}

// Concatenate along a dynamic axis: [n=?, 2] ++ [1, 2] -> [=n+1, 2].
static void case_concatenate(bt_t* t) {
  if (!require_dynamic(t) || !bt_require_op(t, CML_OP_CONCATENATE)) return;
  cml_function_t* f = bt_main(t);
  cml_value_t x = dyn_param(t, "x", CML_DTYPE_F32, 2, (int64_t[]){D, 2}, (const char*[]){"n", 0});
  cml_shape_t ys = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){1, 2});
  cml_value_t y = cml_parameter(f, "y", &ys);
  cml_value_t ops[2] = {x, y};
  cml_value_t c = cml_op_concatenate(f, 0, ops, 2);
  cml_shape_t cs;
  cml_builder_value_shape(bt_builder(t), c, &cs);
  const char* name = cml_shape_axis_name(&cs, 0);
  if (!name || strcmp(name, "=n+1") != 0)
    bt_fail(t, "axis 0 of the result is %s, not =n+1", name ? name : "static");
  cml_executable_t* exe = bt_compile(t, &c, 1);
  if (!exe) return;
  bt_tensor_t in[2] = {
      bt_tensor_f64(t, CML_DTYPE_F32, 2, (int64_t[]){2, 2}, (double[]){1, 2, 3, 4}),
      bt_tensor_f64(t, CML_DTYPE_F32, 2, (int64_t[]){1, 2}, (double[]){9, 8})};
  bt_tensor_t out[1];
  if (!bt_run(t, exe, in, 2, 0, out, 1)) return;
  bt_expect_f64(t, "n=2", &out[0], CML_DTYPE_F32, 2, (int64_t[]){3, 2},
                (double[]){1, 2, 3, 4, 9, 8}, 0);
}

// More distinct bindings than the default cache holds (16): evictions, then early sizes again.
static void case_many_bindings(bt_t* t) {
  if (!require_dynamic(t) || !bt_require_op(t, CML_OP_MUL)) return;
  cml_function_t* f = bt_main(t);
  cml_value_t x = dyn_param(t, "x", CML_DTYPE_F32, 1, (int64_t[]){D}, (const char*[]){"n"});
  cml_value_t y = cml_op_mul(f, x, x);
  cml_executable_t* exe = bt_compile(t, &y, 1);
  if (!exe) return;
  for (int k = 0; k < 24; ++k) {
    int64_t n = 1 + (k * 7) % 20;
    double xd[20], want[20];
    for (int i = 0; i < n; ++i) {
      xd[i] = i - 3;
      want[i] = (i - 3) * (i - 3);
    }
    bt_tensor_t in = bt_tensor_f64(t, CML_DTYPE_F32, 1, &n, xd);
    bt_tensor_t out[1];
    if (!bt_run(t, exe, &in, 1, 0, out, 1)) return;
    bt_expect_f64(t, "x*x", &out[0], CML_DTYPE_F32, 1, &n, want, 0);
  }
}

// Bad input at execution: contradicting sizes for one name, a size of 0.
static void case_bad_bindings(bt_t* t) {
  if (!require_dynamic(t) || !bt_require_op(t, CML_OP_ADD)) return;
  const char* names[2] = {"n", 0};
  cml_value_t x = dyn_param(t, "x", CML_DTYPE_F32, 2, (int64_t[]){D, 2}, names);
  cml_value_t y = dyn_param(t, "y", CML_DTYPE_F32, 2, (int64_t[]){D, 2}, names);
  cml_value_t z = cml_op_add(bt_main(t), x, y);
  cml_executable_t* exe = bt_compile(t, &z, 1);
  if (!exe) return;
  bt_tensor_t a = bt_tensor_f64(t, CML_DTYPE_F32, 2, (int64_t[]){2, 2}, (double[]){1, 2, 3, 4});
  bt_tensor_t b =
      bt_tensor_f64(t, CML_DTYPE_F32, 2, (int64_t[]){3, 2}, (double[]){1, 2, 3, 4, 5, 6});
  bt_tensor_t e = bt_tensor_f64(t, CML_DTYPE_F32, 2, (int64_t[]){0, 2}, NULL);
  cml_buffer_t* in[2] = {bt_upload(t, 0, &a), bt_upload(t, 0, &b)};
  cml_buffer_t* out[1] = {NULL};
  if (!in[0] || !in[1]) return;
  bt_expect_status(t, cml_executable_execute(exe, in, 2, NULL, 0, out), CML_STATUS_INVALID_ARGUMENT,
                   (const char*[]){"\"y\"", "\"n\"", NULL});
  in[1] = bt_upload(t, 0, &e);
  in[0] = in[1];
  if (!in[1]) return;
  bt_expect_status(t, cml_executable_execute(exe, in, 2, NULL, 0, out), CML_STATUS_INVALID_ARGUMENT,
                   (const char*[]){"size 0", NULL});
}

// Rejected at build time, naming the op and the axis: padding a dynamic axis, a partial slice of
// one, a window over one, and two different names meeting in an elementwise op.
static void case_rejections(bt_t* t) {
  if (!require_dynamic(t) || !bt_require_op(t, CML_OP_PAD) || !bt_require_op(t, CML_OP_SLICE)) {
    return;
  }
  const char* names[2] = {"b", 0};
  cml_value_t x = dyn_param(t, "x", CML_DTYPE_F32, 2, (int64_t[]){D, 3}, names);
  cml_shape_t ss = cml_shape_scalar(CML_DTYPE_F32);
  float zero = 0;
  cml_value_t z = cml_constant(bt_main(t), &ss, &zero);
  cml_pad_axis_t pads[2] = {{1, 1, 0}, {0, 0, 0}};
  cml_op_pad(bt_main(t), x, z, pads, 2);
  bt_expect_builder_error(t, CML_STATUS_INVALID_ARGUMENT, (const char*[]){"Pad", "\"b\"", NULL});
  bt_new_builder(t);
  x = dyn_param(t, "x", CML_DTYPE_F32, 2, (int64_t[]){D, 3}, names);
  cml_op_slice(bt_main(t), x, (int64_t[]){0, 0}, (int64_t[]){2, 3}, NULL, 2);
  bt_expect_builder_error(t, CML_STATUS_INVALID_ARGUMENT,
                          (const char*[]){"Slice", "full-axis", NULL});
  bt_new_builder(t);
  x = dyn_param(t, "x", CML_DTYPE_F32, 2, (int64_t[]){D, 3}, names);
  cml_window_config_t w;
  memset(&w, 0, sizeof w);
  w.rank = 2;
  w.window_dims[0] = w.window_dims[1] = 1;
  cml_op_reduce_window(bt_main(t), x, CML_REDUCE_SUM, &w);
  bt_expect_builder_error(t, CML_STATUS_INVALID_ARGUMENT,
                          (const char*[]){"ReduceWindow", "\"b\"", NULL});
  bt_new_builder(t);
  x = dyn_param(t, "x", CML_DTYPE_F32, 2, (int64_t[]){D, 3}, names);
  cml_value_t y = dyn_param(t, "y", CML_DTYPE_F32, 2, (int64_t[]){D, 3}, (const char*[]){"c", 0});
  cml_op_add(bt_main(t), x, y);
  bt_expect_builder_error(t, CML_STATUS_INVALID_ARGUMENT,
                          (const char*[]){"Add", "b=?", "c=?", NULL});
}

const bt_case_t bt_cases_dynamic[] = {
    {"broadcast", CML_OP_ADD, case_broadcast},
    {"reduce", CML_OP_REDUCE_SUM, case_reduce},
    {"dot_general_batch", CML_OP_DOT_GENERAL, case_dot_batch},
    {"while", CML_OP_WHILE, case_while},
    {"dynamic_ops", CML_OP_DYNAMIC_RESHAPE, case_dynamic_ops},
    {"reshape_size_value", CML_OP_DYNAMIC_RESHAPE, case_reshape_size_value},
    {"concatenate", CML_OP_CONCATENATE, case_concatenate},
    {"many_bindings", CML_OP_MUL, case_many_bindings},
    {"bad_bindings", CML_OP_INVALID, case_bad_bindings},
    {"rejections", CML_OP_PAD, case_rejections},
};
const size_t bt_cases_dynamic_count = sizeof bt_cases_dynamic / sizeof bt_cases_dynamic[0];
