// SPDX-License-Identifier: Apache-2.0
// tests/unit/builder_ops_test.c: every public op builder records its op with the hand-computed
// output shape (the shape rules themselves are covered by shape_infer_test.c).
#include "builder_fake_backend.h"
#include "cml/graph.h"
#include "test.h"

#define SHAPE(dt, ...)                                                                \
  cml_shape_make((dt), (int32_t)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), \
                 (int64_t[]){__VA_ARGS__})

static bool shape_is(const cml_builder_t* b, cml_value_t v, cml_shape_t want) {
  cml_shape_t got;
  if (!cml_builder_value_shape(b, v, &got)) {
    cml_status_t st = cml_builder_status(b);
    fprintf(stderr, "invalid value; builder: %s\n", cml_status_message(st));
    cml_status_free(st);
    return false;
  }
  if (cml_shape_equal(&got, &want)) return true;
  char g[128], w[128];
  fprintf(stderr, "shape %s, want %s\n", cml_shape_format(&got, g, sizeof g),
          cml_shape_format(&want, w, sizeof w));
  return false;
}
#define ASSERT_SHAPE(v, ...) ASSERT_TRUE(shape_is(b, (v), SHAPE(__VA_ARGS__)))
#define ASSERT_SCALAR(v, dt) ASSERT_TRUE(shape_is(b, (v), cml_shape_scalar(dt)))

TEST(every_builder) {
  fake_backend_t* fb = fake_backend_new();
  ASSERT_TRUE(fb != NULL);
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(&fb->base, NULL, &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s23 = SHAPE(CML_DTYPE_F32, 2, 3), i23 = SHAPE(CML_DTYPE_I32, 2, 3);
  cml_value_t x = cml_parameter(f, "x", &s23);
  cml_value_t n = cml_parameter(f, "n", &i23);
  ASSERT_SHAPE(cml_op_unary(f, CML_OP_TANH, x), CML_DTYPE_F32, 2, 3);
  ASSERT_SHAPE(cml_op_binary(f, CML_OP_ATAN2, x, x), CML_DTYPE_F32, 2, 3);
  ASSERT_SHAPE(cml_op_binary(f, CML_OP_NOT_EQUAL, n, n), CML_DTYPE_BOOL, 2, 3);
  ASSERT_SHAPE(cml_op_greater_or_equal_total_order(f, x, x), CML_DTYPE_BOOL, 2, 3);
  ASSERT_SHAPE(cml_op_shift_right_logical(f, n, n), CML_DTYPE_I32, 2, 3);
  ASSERT_SHAPE(cml_op_clz(f, n), CML_DTYPE_I32, 2, 3);
  ASSERT_SHAPE(cml_op_reduce(f, CML_OP_REDUCE_PRODUCT, x, (int64_t[]){0}, 1), CML_DTYPE_F32, 3);
  ASSERT_SCALAR(cml_op_reduce_bitwise_xor(f, n, NULL, 0), CML_DTYPE_I32);
  ASSERT_SHAPE(cml_op_complex(f, x, x), CML_DTYPE_C64, 2, 3);
  ASSERT_SHAPE(cml_op_bitcast(f, n, CML_DTYPE_F32), CML_DTYPE_F32, 2, 3);
  ASSERT_SHAPE(cml_op_clamp(f, cml_constant_scalar_f64(f, CML_DTYPE_F32, -1), x,
                            cml_constant_scalar_f64(f, CML_DTYPE_F32, 1)),
               CML_DTYPE_F32, 2, 3);
  cml_value_t cond = cml_op_is_finite(f, x);
  ASSERT_SHAPE(cml_op_where(f, cond, x, cml_constant_scalar_f64(f, CML_DTYPE_F32, 0)),
               CML_DTYPE_F32, 2, 3);
  ASSERT_SHAPE(cml_op_transpose(f, x, (int64_t[]){1, 0}, 2), CML_DTYPE_F32, 3, 2);
  ASSERT_SHAPE(cml_op_broadcast_in_dim(f, x, (int64_t[]){4, 2, 3}, 3, (int64_t[]){1, 2}, 2),
               CML_DTYPE_F32, 4, 2, 3);
  cml_value_t parts[3] = {x, x, x};
  ASSERT_SHAPE(cml_op_concatenate(f, 0, parts, 3), CML_DTYPE_F32, 6, 3);
  ASSERT_SHAPE(cml_op_slice(f, x, (int64_t[]){0, 1}, (int64_t[]){2, 3}, (int64_t[]){2, 1}, 2),
               CML_DTYPE_F32, 1, 2);
  ASSERT_SHAPE(cml_op_reverse(f, x, (int64_t[]){1}, 1), CML_DTYPE_F32, 2, 3);
  cml_shape_t is = SHAPE(CML_DTYPE_I64, 5, 2);
  ASSERT_SHAPE(cml_op_iota(f, &is, 0), CML_DTYPE_I64, 5, 2);
  cml_pad_axis_t pads[2] = {{0, 0, 1}, {2, -1, 0}};
  ASSERT_SHAPE(cml_op_pad(f, x, cml_constant_scalar_f64(f, CML_DTYPE_F32, 0), pads, 2),
               CML_DTYPE_F32, 3, 4);
  cml_value_t zero = cml_constant_scalar_i64(f, CML_DTYPE_I32, 0);
  cml_value_t starts[2] = {zero, zero};
  cml_value_t ds = cml_op_dynamic_slice(f, x, starts, (int64_t[]){1, 2}, 2);
  ASSERT_SHAPE(ds, CML_DTYPE_F32, 1, 2);
  ASSERT_SHAPE(cml_op_dynamic_update_slice(f, x, ds, starts, 2), CML_DTYPE_F32, 2, 3);
  // Gather rows of x with indices [4, 1] -> [4, 3]; scatter them back.
  cml_shape_t idx_s = SHAPE(CML_DTYPE_I32, 4, 1);
  cml_value_t idx = cml_parameter(f, "idx", &idx_s);
  cml_gather_dims_t gd;
  memset(&gd, 0, sizeof gd);
  gd.index_vector_axis = 1;
  gd.offset_output_axis_count = 1;
  gd.offset_output_axes[0] = 1;
  gd.collapsed_slice_axis_count = 1;
  gd.start_index_map_count = 1;
  gd.slice_size_count = 2;
  gd.slice_sizes[0] = 1;
  gd.slice_sizes[1] = 3;
  cml_value_t rows = cml_op_gather(f, x, idx, &gd);
  ASSERT_SHAPE(rows, CML_DTYPE_F32, 4, 3);
  cml_scatter_dims_t sd;
  memset(&sd, 0, sizeof sd);
  sd.index_vector_axis = 1;
  sd.update_window_axis_count = 1;
  sd.update_window_axes[0] = 1;
  sd.inserted_window_axis_count = 1;
  sd.scatter_axes_to_operand_axes_count = 1;
  ASSERT_SHAPE(cml_op_scatter_sum(f, x, idx, rows, &sd), CML_DTYPE_F32, 2, 3);
  ASSERT_SHAPE(cml_op_scatter_max(f, x, idx, rows, &sd), CML_DTYPE_F32, 2, 3);
  ASSERT_SHAPE(cml_op_scatter_min(f, x, idx, rows, &sd), CML_DTYPE_F32, 2, 3);
  cml_window_config_t wc;
  memset(&wc, 0, sizeof wc);
  wc.rank = 2;
  wc.window_dims[0] = 1;
  wc.window_dims[1] = 3;
  cml_value_t pooled = cml_op_reduce_window(f, x, CML_REDUCE_MIN, &wc);
  ASSERT_SHAPE(pooled, CML_DTYPE_F32, 2, 1);
  ASSERT_SHAPE(cml_op_select_and_scatter(f, CML_OP_SELECT_AND_SCATTER_MAX, x, pooled, &wc),
               CML_DTYPE_F32, 2, 3);
  ASSERT_SHAPE(cml_op_arg_min_max(f, x, 1, CML_DTYPE_I32, false), CML_DTYPE_I32, 2);
  cml_value_t cx = cml_op_convert_dtype(f, x, CML_DTYPE_C64);
  ASSERT_SHAPE(cml_op_fft(f, cx, CML_FFT_FORWARD, (int64_t[]){3}, 1), CML_DTYPE_C64, 2, 3);
  ASSERT_SHAPE(cml_op_fft(f, x, CML_FFT_FORWARD_REAL, (int64_t[]){3}, 1), CML_DTYPE_C64, 2, 2);
  ASSERT_SHAPE(cml_op_dot(f, x, cml_op_transpose(f, x, (int64_t[]){1, 0}, 2)), CML_DTYPE_F32, 2, 2);
  ASSERT_SHAPE(cml_op_logical_not(f, cond), CML_DTYPE_BOOL, 2, 3);
  cml_status_t st = cml_builder_status(b);
  ASSERT_STATUS_OK(st);
  // A closure using a main value through a multi-operand op captures it once.
  cml_function_t* c = NULL;
  ASSERT_STATUS_OK(cml_function_new_closure(f, &c));
  cml_value_t cc[2] = {x, x};
  cml_value_t cat = cml_op_concatenate(c, 1, cc, 2);
  ASSERT_SHAPE(cat, CML_DTYPE_F32, 2, 6);
  ASSERT_STATUS_OK(cml_function_return(c, &cat, 1));
  cml_value_t called[1];
  ASSERT_TRUE(cml_op_call(f, c, NULL, 0, called));
  ASSERT_STATUS_OK(cml_function_return(f, called, 1));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(cml_builder_compile(b, &exe));
  const cml_module_t* m = fb->module;
  ASSERT_EQ_INT(m->functions[1].capture_count, 1);
  ASSERT_STREQ(m->name, "");
  cml_executable_release(exe);
  cml_builder_destroy(b);
  cml_backend_release(&fb->base);
}

TEST_MAIN(TEST_ENTRY(every_builder))
