// SPDX-License-Identifier: Apache-2.0
// tests/unit/shape_infer_test.c: shape inference of every op family against hand-computed
// shapes (XLA/StableHLO rules), and the messages of the error cases.
#include <string.h>

#include "core/builder_internal.h"
#include "test.h"

#define SHAPE(dt, ...)                                                                \
  cml_shape_make((dt), (int32_t)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), \
                 (int64_t[]){__VA_ARGS__})

static bool same(const cml_shape_t* got, cml_shape_t want) {
  if (cml_shape_equal(got, &want)) return true;
  char g[128], w[128];
  fprintf(stderr, "shape %s, want %s\n", cml_shape_format(got, g, sizeof g),
          cml_shape_format(&want, w, sizeof w));
  return false;
}
#define ASSERT_OUT(...) ASSERT_TRUE(same(&out, SHAPE(__VA_ARGS__)))

// Asserts |expr| fails with INVALID_ARGUMENT and a message containing every needle.
static bool fails_with(cml_status_t st, const char* const* needles) {
  bool ok = cml_status_code(st) == CML_STATUS_INVALID_ARGUMENT;
  for (const char* const* n = needles; ok && *n; ++n)
    ok = strstr(cml_status_message(st), *n) != NULL;
  if (!ok)
    fprintf(stderr, "got %s: \"%s\"\n", cml_status_code_name(cml_status_code(st)),
            cml_status_message(st));
  cml_status_free(st);
  return ok;
}
#define ASSERT_FAILS(expr, ...) \
  ASSERT_TRUE(fails_with((expr), (const char* const[]){__VA_ARGS__, NULL}))

TEST(unary) {
  cml_shape_t out;
  cml_shape_t c = SHAPE(CML_DTYPE_C64, 3), fx = SHAPE(CML_DTYPE_F32, 3);
  ASSERT_STATUS_OK(cml__infer_unary(CML_OP_ABS, &c, &out));
  ASSERT_OUT(CML_DTYPE_F32, 3);
  ASSERT_STATUS_OK(cml__infer_unary(CML_OP_IS_NAN, &fx, &out));
  ASSERT_OUT(CML_DTYPE_BOOL, 3);
  ASSERT_STATUS_OK(cml__infer_unary(CML_OP_REAL, &fx, &out));
  ASSERT_OUT(CML_DTYPE_F32, 3);
  ASSERT_STATUS_OK(cml__infer_unary(CML_OP_IMAG, &c, &out));
  ASSERT_OUT(CML_DTYPE_F32, 3);
  cml_shape_t u4 = SHAPE(CML_DTYPE_U4, 5);
  ASSERT_STATUS_OK(cml__infer_unary(CML_OP_IDENTITY, &u4, &out));
  ASSERT_OUT(CML_DTYPE_U4, 5);
  ASSERT_FAILS(cml__infer_unary(CML_OP_NEG, &u4, &out), "Neg", "Uint4");
  cml_shape_t u8 = SHAPE(CML_DTYPE_U8, 2);
  ASSERT_FAILS(cml__infer_unary(CML_OP_NEG, &u8, &out), "Neg", "(Uint8)[2]");
  ASSERT_FAILS(cml__infer_unary(CML_OP_CONJ, &fx, &out), "Conj", "Float32");
  ASSERT_FAILS(cml__infer_unary(CML_OP_BIT_COUNT, &fx, &out), "BitCount", "Float32");
}

TEST(binary_broadcasting) {
  cml_shape_t out;
  cml_shape_t a = SHAPE(CML_DTYPE_F32, 2, 1, 4), b = SHAPE(CML_DTYPE_F32, 1, 3, 4);
  ASSERT_STATUS_OK(cml__infer_binary(CML_OP_ADD, &a, &b, &out));
  ASSERT_OUT(CML_DTYPE_F32, 2, 3, 4);
  cml_shape_t s = cml_shape_scalar(CML_DTYPE_F32);
  ASSERT_STATUS_OK(cml__infer_binary(CML_OP_SUB, &s, &a, &out));
  ASSERT_OUT(CML_DTYPE_F32, 2, 1, 4);
  ASSERT_STATUS_OK(cml__infer_binary(CML_OP_LESS_THAN, &a, &s, &out));
  ASSERT_OUT(CML_DTYPE_BOOL, 2, 1, 4);
  cml_shape_t z = SHAPE(CML_DTYPE_F32, 0, 1, 4);  // size-1 axes broadcast to 0 too
  ASSERT_STATUS_OK(cml__infer_binary(CML_OP_MUL, &z, &b, &out));
  ASSERT_OUT(CML_DTYPE_F32, 0, 3, 4);
  cml_shape_t f64 = SHAPE(CML_DTYPE_F64, 3);
  ASSERT_STATUS_OK(cml__infer_binary(CML_OP_COMPLEX, &f64, &f64, &out));
  ASSERT_OUT(CML_DTYPE_C128, 3);
  // No rank-extending numpy broadcasting.
  cml_shape_t v = SHAPE(CML_DTYPE_F32, 4);
  ASSERT_FAILS(cml__infer_binary(CML_OP_ADD, &a, &v, &out), "Add", "incompatible shapes",
               "(Float32)[2, 1, 4]", "(Float32)[4]", "ranks 3 and 1", "Reshape", "BroadcastInDim");
  cml_shape_t c = SHAPE(CML_DTYPE_F32, 2, 2, 4);
  ASSERT_FAILS(cml__infer_binary(CML_OP_ADD, &b, &c, &out), "Add", "(Float32)[1, 3, 4]",
               "(Float32)[2, 2, 4]", "axis 1 has sizes 3 and 2");
  cml_shape_t i = SHAPE(CML_DTYPE_I32, 2, 1, 4);
  ASSERT_FAILS(cml__infer_binary(CML_OP_ADD, &a, &i, &out), "Add", "dtype", "Float32", "Int32");
  cml_shape_t bl = SHAPE(CML_DTYPE_BOOL, 2);
  ASSERT_FAILS(cml__infer_binary(CML_OP_ADD, &bl, &bl, &out), "Add", "Bool");
  ASSERT_STATUS_OK(cml__infer_binary(CML_OP_LOGICAL_XOR, &bl, &bl, &out));
  ASSERT_OUT(CML_DTYPE_BOOL, 2);
  ASSERT_FAILS(cml__infer_binary(CML_OP_SHIFT_LEFT, &c, &c, &out), "ShiftLeft", "Float32");
}

TEST(reduce) {
  cml_shape_t out;
  cml_ir_attrs_t a;
  memset(&a, 0, sizeof a);
  cml_shape_t x = SHAPE(CML_DTYPE_I32, 2, 3, 4, 5);
  ASSERT_STATUS_OK(cml__infer_reduce(CML_OP_REDUCE_MAX, &x, (int64_t[]){3, 1}, 2, &a, &out));
  ASSERT_OUT(CML_DTYPE_I32, 2, 4);
  ASSERT_EQ_INT(a.axis_count, 2);
  ASSERT_EQ_INT(a.axes[0], 1);
  ASSERT_EQ_INT(a.axes[1], 3);
  ASSERT_STATUS_OK(cml__infer_reduce(CML_OP_REDUCE_SUM, &x, NULL, 0, &a, &out));
  ASSERT_TRUE(same(&out, cml_shape_scalar(CML_DTYPE_I32)));
  ASSERT_EQ_INT(a.axis_count, 4);
  ASSERT_FAILS(cml__infer_reduce(CML_OP_REDUCE_SUM, &x, (int64_t[]){4}, 1, &a, &out), "ReduceSum",
               "axis 4", "(Int32)[2, 3, 4, 5]");
  ASSERT_FAILS(cml__infer_reduce(CML_OP_REDUCE_SUM, &x, (int64_t[]){-1}, 1, &a, &out), "ReduceSum",
               "-1");
  ASSERT_FAILS(cml__infer_reduce(CML_OP_REDUCE_SUM, &x, (int64_t[]){2, 2}, 2, &a, &out),
               "ReduceSum", "duplicate");
  ASSERT_FAILS(cml__infer_reduce(CML_OP_REDUCE_LOGICAL_OR, &x, NULL, 0, &a, &out),
               "ReduceLogicalOr", "Int32");
  ASSERT_STATUS_OK(cml__infer_arg_min_max(&x, 2, CML_DTYPE_I64, true, &a, &out));
  ASSERT_OUT(CML_DTYPE_I64, 2, 3, 5);
  ASSERT_EQ_INT(a.axis, 2);
  ASSERT_TRUE(a.flag);
  ASSERT_FAILS(cml__infer_arg_min_max(&x, 2, CML_DTYPE_F32, true, &a, &out), "ArgMinMax",
               "Float32");
  ASSERT_FAILS(cml__infer_arg_min_max(&x, 4, CML_DTYPE_I32, false, &a, &out), "ArgMinMax",
               "axis 4");
}

TEST(convert_and_bitcast) {
  cml_shape_t out;
  cml_shape_t x = SHAPE(CML_DTYPE_F32, 2, 3);
  ASSERT_STATUS_OK(cml__infer_convert(&x, CML_DTYPE_I4, &out));
  ASSERT_OUT(CML_DTYPE_I4, 2, 3);
  ASSERT_FAILS(cml__infer_convert(&x, CML_DTYPE_TOKEN, &out), "ConvertDType");
  ASSERT_STATUS_OK(cml__infer_convert(&x, CML_DTYPE_F8E5M2, &out));
  ASSERT_OUT(CML_DTYPE_F8E5M2, 2, 3);
  // Minifloats are storage dtypes: moved and converted, no arithmetic; F4E2M1FN is packed.
  cml_shape_t f8 = SHAPE(CML_DTYPE_F8E4M3FN, 2, 3), f4 = SHAPE(CML_DTYPE_F4E2M1FN, 2, 3);
  cml_ir_attrs_t attrs;
  memset(&attrs, 0, sizeof attrs);
  ASSERT_FAILS(cml__infer_binary(CML_OP_ADD, &f8, &f8, &out), "Add", "F8E4M3FN");
  ASSERT_FAILS(cml__infer_unary(CML_OP_NEG, &f8, &out), "Neg", "F8E4M3FN");
  ASSERT_STATUS_OK(cml__infer_transpose(&f8, (int64_t[]){1, 0}, 2, &attrs, &out));
  ASSERT_OUT(CML_DTYPE_F8E4M3FN, 3, 2);
  ASSERT_FAILS(cml__infer_transpose(&f4, (int64_t[]){1, 0}, 2, &attrs, &out), "Transpose",
               "F4E2M1FN");
  ASSERT_STATUS_OK(cml__infer_reshape(&f4, (int64_t[]){6}, 1, &attrs, &out));
  ASSERT_OUT(CML_DTYPE_F4E2M1FN, 6);
  ASSERT_STATUS_OK(cml__infer_bitcast(&f8, CML_DTYPE_I8, &out));
  ASSERT_OUT(CML_DTYPE_I8, 2, 3);
  ASSERT_STATUS_OK(cml__infer_bitcast(&x, CML_DTYPE_U8, &out));
  ASSERT_OUT(CML_DTYPE_U8, 2, 3, 4);
  ASSERT_STATUS_OK(cml__infer_bitcast(&x, CML_DTYPE_I32, &out));
  ASSERT_OUT(CML_DTYPE_I32, 2, 3);
  cml_shape_t y = SHAPE(CML_DTYPE_F32, 3, 2);
  ASSERT_STATUS_OK(cml__infer_bitcast(&y, CML_DTYPE_F64, &out));
  ASSERT_OUT(CML_DTYPE_F64, 3);
  ASSERT_STATUS_OK(cml__infer_bitcast(&x, CML_DTYPE_U4, &out));
  ASSERT_OUT(CML_DTYPE_U4, 2, 3, 8);
  ASSERT_FAILS(cml__infer_bitcast(&x, CML_DTYPE_F64, &out), "Bitcast", "(Float32)[2, 3]", "Float64",
               "size 2");
  cml_shape_t s = cml_shape_scalar(CML_DTYPE_I16);
  ASSERT_FAILS(cml__infer_bitcast(&s, CML_DTYPE_I32, &out), "Bitcast", "(Int16)");
}

TEST(clamp_and_where) {
  cml_shape_t out;
  cml_shape_t x = SHAPE(CML_DTYPE_F32, 2, 3), s = cml_shape_scalar(CML_DTYPE_F32);
  ASSERT_STATUS_OK(cml__infer_clamp(&s, &x, &x, &out));
  ASSERT_OUT(CML_DTYPE_F32, 2, 3);
  cml_shape_t bad = SHAPE(CML_DTYPE_F32, 3);
  ASSERT_FAILS(cml__infer_clamp(&bad, &x, &s, &out), "Clamp", "(Float32)[3]", "(Float32)[2, 3]");
  cml_shape_t i = cml_shape_scalar(CML_DTYPE_I32);
  ASSERT_FAILS(cml__infer_clamp(&s, &x, &i, &out), "Clamp", "(Int32)");
  cml_shape_t cond = SHAPE(CML_DTYPE_BOOL, 2, 3), sc = cml_shape_scalar(CML_DTYPE_BOOL);
  ASSERT_STATUS_OK(cml__infer_where(&cond, &s, &x, &out));
  ASSERT_OUT(CML_DTYPE_F32, 2, 3);
  ASSERT_STATUS_OK(cml__infer_where(&sc, &s, &s, &out));
  ASSERT_TRUE(same(&out, s));
  ASSERT_STATUS_OK(cml__infer_where(&cond, &s, &s, &out));
  ASSERT_OUT(CML_DTYPE_F32, 2, 3);
  ASSERT_FAILS(cml__infer_where(&x, &s, &s, &out), "Where", "Bool", "(Float32)[2, 3]");
  ASSERT_FAILS(cml__infer_where(&cond, &bad, &x, &out), "Where", "(Float32)[3]");
  cml_shape_t xi = SHAPE(CML_DTYPE_I32, 2, 3);
  ASSERT_FAILS(cml__infer_where(&cond, &x, &xi, &out), "Where", "dtype", "(Int32)[2, 3]");
}

TEST(movement) {
  cml_shape_t out;
  cml_ir_attrs_t a;
  memset(&a, 0, sizeof a);
  cml_shape_t x = SHAPE(CML_DTYPE_F32, 2, 3, 4);
  ASSERT_STATUS_OK(cml__infer_reshape(&x, (int64_t[]){6, 4}, 2, &a, &out));
  ASSERT_OUT(CML_DTYPE_F32, 6, 4);
  ASSERT_FAILS(cml__infer_reshape(&x, (int64_t[]){5, 5}, 2, &a, &out), "Reshape", "24", "25");
  ASSERT_STATUS_OK(cml__infer_transpose(&x, (int64_t[]){2, 0, 1}, 3, &a, &out));
  ASSERT_OUT(CML_DTYPE_F32, 4, 2, 3);
  ASSERT_EQ_INT(a.axes[0], 2);
  ASSERT_FAILS(cml__infer_transpose(&x, (int64_t[]){0, 1}, 2, &a, &out), "Transpose", "rank 3");
  ASSERT_FAILS(cml__infer_transpose(&x, (int64_t[]){0, 3, 1}, 3, &a, &out), "Transpose",
               "[0, 3, 1]");
  cml_shape_t v = SHAPE(CML_DTYPE_F32, 3, 1);
  ASSERT_STATUS_OK(
      cml__infer_broadcast_in_dim(&v, (int64_t[]){2, 3, 5}, 3, (int64_t[]){1, 2}, 2, &a, &out));
  ASSERT_OUT(CML_DTYPE_F32, 2, 3, 5);
  ASSERT_FAILS(
      cml__infer_broadcast_in_dim(&v, (int64_t[]){2, 3, 5}, 3, (int64_t[]){2, 1}, 2, &a, &out),
      "BroadcastInDim", "strictly increasing");
  ASSERT_FAILS(
      cml__infer_broadcast_in_dim(&v, (int64_t[]){2, 4, 5}, 3, (int64_t[]){1, 2}, 2, &a, &out),
      "BroadcastInDim", "(Float32)[3, 1]", "(Float32)[2, 4, 5]");
  cml_shape_t parts[3] = {SHAPE(CML_DTYPE_F32, 2, 3), SHAPE(CML_DTYPE_F32, 2, 5),
                          SHAPE(CML_DTYPE_F32, 2, 1)};
  ASSERT_STATUS_OK(cml__infer_concatenate(1, parts, 3, &a, &out));
  ASSERT_OUT(CML_DTYPE_F32, 2, 9);
  ASSERT_EQ_INT(a.axis, 1);
  ASSERT_FAILS(cml__infer_concatenate(0, parts, 3, &a, &out), "Concatenate", "(Float32)[2, 5]");
  ASSERT_FAILS(cml__infer_concatenate(2, parts, 3, &a, &out), "Concatenate", "axis 2");
  cml_shape_t y = SHAPE(CML_DTYPE_I8, 10, 7);
  ASSERT_STATUS_OK(
      cml__infer_slice(&y, (int64_t[]){1, 0}, (int64_t[]){8, 7}, (int64_t[]){3, 2}, 2, &a, &out));
  ASSERT_OUT(CML_DTYPE_I8, 3, 4);  // ceil(7/3), ceil(7/2)
  ASSERT_EQ_INT(a.strides[0], 3);
  ASSERT_FAILS(cml__infer_slice(&y, (int64_t[]){5, 0}, (int64_t[]){4, 7}, NULL, 2, &a, &out),
               "Slice", "axis 0", "(Int8)[10, 7]");
  ASSERT_FAILS(
      cml__infer_slice(&y, (int64_t[]){0, 0}, (int64_t[]){1, 7}, (int64_t[]){1, 0}, 2, &a, &out),
      "Slice", "stride 0");
  ASSERT_STATUS_OK(cml__infer_reverse(&x, (int64_t[]){2, 0}, 2, &a, &out));
  ASSERT_OUT(CML_DTYPE_F32, 2, 3, 4);
  ASSERT_EQ_INT(a.axes[0], 0);
  ASSERT_EQ_INT(a.axes[1], 2);
  ASSERT_FAILS(cml__infer_reverse(&x, (int64_t[]){1, 1}, 2, &a, &out), "Reverse", "duplicate");
  cml_shape_t io = SHAPE(CML_DTYPE_U16, 4, 2);
  ASSERT_STATUS_OK(cml__infer_iota(&io, 1, &a, &out));
  ASSERT_OUT(CML_DTYPE_U16, 4, 2);
  ASSERT_FAILS(cml__infer_iota(&io, 2, &a, &out), "Iota", "axis 2");
  cml_shape_t ib = SHAPE(CML_DTYPE_BOOL, 4);
  ASSERT_FAILS(cml__infer_iota(&ib, 0, &a, &out), "Iota", "Bool");
}

TEST(pad_and_dynamic_slices) {
  cml_shape_t out;
  cml_ir_attrs_t a;
  memset(&a, 0, sizeof a);
  cml_shape_t x = SHAPE(CML_DTYPE_F32, 3, 4), fill = cml_shape_scalar(CML_DTYPE_F32);
  cml_pad_axis_t p[2] = {{1, 2, 1}, {-1, 0, 0}};
  ASSERT_STATUS_OK(cml__infer_pad(&x, &fill, p, 2, &a, &out));
  ASSERT_OUT(CML_DTYPE_F32, 8, 3);  // 3+1+2+2*1, 4-1
  cml_pad_axis_t neg = {0, 0, -1};
  ASSERT_FAILS(cml__infer_pad(&x, &fill, &neg, 1, &a, &out), "Pad", "interior", "-1");
  cml_pad_axis_t crop = {-3, -1, 0};
  ASSERT_FAILS(cml__infer_pad(&x, &fill, &crop, 1, &a, &out), "Pad", "negative");
  cml_shape_t bad_fill = cml_shape_scalar(CML_DTYPE_F64);
  ASSERT_FAILS(cml__infer_pad(&x, &bad_fill, p, 2, &a, &out), "Pad", "(Float64)");
  cml_shape_t starts[2] = {cml_shape_scalar(CML_DTYPE_I32), cml_shape_scalar(CML_DTYPE_I32)};
  ASSERT_STATUS_OK(cml__infer_dynamic_slice(&x, starts, 2, (int64_t[]){2, 2}, 2, &a, &out));
  ASSERT_OUT(CML_DTYPE_F32, 2, 2);
  ASSERT_FAILS(cml__infer_dynamic_slice(&x, starts, 2, (int64_t[]){4, 2}, 2, &a, &out),
               "DynamicSlice", "(Float32)[3, 4]");
  cml_shape_t mixed[2] = {cml_shape_scalar(CML_DTYPE_I32), cml_shape_scalar(CML_DTYPE_I64)};
  ASSERT_FAILS(cml__infer_dynamic_slice(&x, mixed, 2, (int64_t[]){1, 1}, 2, &a, &out),
               "DynamicSlice", "(Int64)");
  cml_shape_t upd = SHAPE(CML_DTYPE_F32, 2, 4);
  ASSERT_STATUS_OK(cml__infer_dynamic_update_slice(&x, &upd, starts, 2, 2, &out));
  ASSERT_OUT(CML_DTYPE_F32, 3, 4);
  cml_shape_t big = SHAPE(CML_DTYPE_F32, 2, 5);
  ASSERT_FAILS(cml__infer_dynamic_update_slice(&x, &big, starts, 2, 2, &out), "DynamicUpdateSlice",
               "(Float32)[2, 5]");
}

TEST(gather) {
  cml_shape_t out;
  cml_ir_attrs_t a;
  memset(&a, 0, sizeof a);
  // Embedding lookup: operand [10, 4], indices [2, 3, 1] (index vector last) -> [2, 3, 4].
  cml_shape_t op = SHAPE(CML_DTYPE_F32, 10, 4), idx = SHAPE(CML_DTYPE_I32, 2, 3, 1);
  cml_gather_dims_t d;
  memset(&d, 0, sizeof d);
  d.index_vector_axis = 2;
  d.offset_output_axis_count = 1;
  d.offset_output_axes[0] = 2;
  d.collapsed_slice_axis_count = 1;
  d.collapsed_slice_axes[0] = 0;
  d.start_index_map_count = 1;
  d.start_index_map[0] = 0;
  d.slice_size_count = 2;
  d.slice_sizes[0] = 1;
  d.slice_sizes[1] = 4;
  ASSERT_STATUS_OK(cml__infer_gather(&op, &idx, &d, &a, &out));
  ASSERT_OUT(CML_DTYPE_F32, 2, 3, 4);
  ASSERT_EQ_INT(a.u.gather.slice_sizes[1], 4);
  // Implicit index vector axis (== rank of indices) and the offset axis first.
  cml_shape_t idx2 = SHAPE(CML_DTYPE_I64, 5);
  d.index_vector_axis = 1;
  d.offset_output_axes[0] = 0;
  ASSERT_STATUS_OK(cml__infer_gather(&op, &idx2, &d, &a, &out));
  ASSERT_OUT(CML_DTYPE_F32, 4, 5);
  // Non-collapsed slices: operand [5, 6], slice [2, 3], two index components -> [7, 2, 3].
  cml_shape_t op3 = SHAPE(CML_DTYPE_F32, 5, 6), idx3 = SHAPE(CML_DTYPE_I32, 7, 2);
  cml_gather_dims_t d3;
  memset(&d3, 0, sizeof d3);
  d3.index_vector_axis = 1;
  d3.offset_output_axis_count = 2;
  d3.offset_output_axes[0] = 1;
  d3.offset_output_axes[1] = 2;
  d3.start_index_map_count = 2;
  d3.start_index_map[0] = 0;
  d3.start_index_map[1] = 1;
  d3.slice_size_count = 2;
  d3.slice_sizes[0] = 2;
  d3.slice_sizes[1] = 3;
  ASSERT_STATUS_OK(cml__infer_gather(&op3, &idx3, &d3, &a, &out));
  ASSERT_OUT(CML_DTYPE_F32, 7, 2, 3);
  d3.slice_sizes[1] = 7;
  ASSERT_FAILS(cml__infer_gather(&op3, &idx3, &d3, &a, &out), "Gather", "slice sizes",
               "(Float32)[5, 6]");
  d3.slice_sizes[1] = 3;
  d3.start_index_map_count = 1;
  ASSERT_FAILS(cml__infer_gather(&op3, &idx3, &d3, &a, &out), "Gather", "start_index_map",
               "(Int32)[7, 2]");
  cml_shape_t fidx = SHAPE(CML_DTYPE_F32, 7, 2);
  ASSERT_FAILS(cml__infer_gather(&op3, &fidx, &d3, &a, &out), "Gather", "integer");
}

TEST(scatter) {
  cml_shape_t out;
  cml_ir_attrs_t a;
  memset(&a, 0, sizeof a);
  // Row updates: operand [10, 4], indices [3, 1], updates [3, 4].
  cml_shape_t op = SHAPE(CML_DTYPE_F32, 10, 4), idx = SHAPE(CML_DTYPE_I32, 3, 1),
              upd = SHAPE(CML_DTYPE_F32, 3, 4);
  cml_scatter_dims_t d;
  memset(&d, 0, sizeof d);
  d.index_vector_axis = 1;
  d.update_window_axis_count = 1;
  d.update_window_axes[0] = 1;
  d.inserted_window_axis_count = 1;
  d.inserted_window_axes[0] = 0;
  d.scatter_axes_to_operand_axes_count = 1;
  d.scatter_axes_to_operand_axes[0] = 0;
  ASSERT_STATUS_OK(cml__infer_scatter(CML_OP_SCATTER_SUM, &op, &idx, &upd, &d, &a, &out));
  ASSERT_OUT(CML_DTYPE_F32, 10, 4);
  cml_shape_t upd_bad = SHAPE(CML_DTYPE_F32, 2, 4);
  ASSERT_FAILS(cml__infer_scatter(CML_OP_SCATTER_MAX, &op, &idx, &upd_bad, &d, &a, &out),
               "ScatterMax", "(Float32)[2, 4]", "(Int32)[3, 1]");
  cml_shape_t upd_wide = SHAPE(CML_DTYPE_F32, 3, 5);
  ASSERT_FAILS(cml__infer_scatter(CML_OP_SCATTER_MIN, &op, &idx, &upd_wide, &d, &a, &out),
               "ScatterMin", "window", "(Float32)[3, 5]");
  cml_shape_t upd_i = SHAPE(CML_DTYPE_I32, 3, 4);
  ASSERT_FAILS(cml__infer_scatter(CML_OP_SCATTER_SUM, &op, &idx, &upd_i, &d, &a, &out),
               "ScatterSum", "dtype", "(Int32)[3, 4]");
  ASSERT_FAILS(cml__infer_scatter(CML_OP_ADD, &op, &idx, &upd, &d, &a, &out), "Scatter", "Add");
  d.inserted_window_axis_count = 0;
  ASSERT_FAILS(cml__infer_scatter(CML_OP_SCATTER_SUM, &op, &idx, &upd, &d, &a, &out), "ScatterSum",
               "rank", "(Float32)[10, 4]");
}

static cml_conv_config_t nchw_config(int32_t spatial) {
  cml_conv_config_t c;
  memset(&c, 0, sizeof c);
  c.spatial_count = spatial;
  c.input_batch_axis = 0;
  c.input_channel_axis = 1;
  c.kernel_output_channel_axis = 0;
  c.kernel_input_channel_axis = 1;
  c.output_batch_axis = 0;
  c.output_channel_axis = 1;
  for (int32_t i = 0; i < spatial; ++i) {
    c.input_spatial_axes[i] = c.kernel_spatial_axes[i] = c.output_spatial_axes[i] = 2 + i;
  }
  return c;
}

TEST(conv) {
  cml_shape_t out;
  cml_ir_attrs_t a;
  memset(&a, 0, sizeof a);
  cml_shape_t in = SHAPE(CML_DTYPE_F32, 2, 3, 10, 9), k = SHAPE(CML_DTYPE_F32, 8, 3, 3, 2);
  cml_conv_config_t c = nchw_config(2);
  ASSERT_STATUS_OK(cml__infer_conv(&in, &k, &c, &a, &out));
  ASSERT_OUT(CML_DTYPE_F32, 2, 8, 8, 8);
  // Strides 2, padding (1, 1), kernel dilation 2 on axis 0: dilated kernel 5 -> (10+2-5)/2+1 = 4;
  // axis 1: input dilation 2 -> dilated input 17, (17-2)/2+1 = 8.
  c.strides[0] = c.strides[1] = 2;
  c.padding_low[0] = c.padding_high[0] = 1;
  c.kernel_dilations[0] = 2;
  c.input_dilations[1] = 2;
  ASSERT_STATUS_OK(cml__infer_conv(&in, &k, &c, &a, &out));
  ASSERT_OUT(CML_DTYPE_F32, 2, 8, 4, 8);
  ASSERT_EQ_INT(a.u.conv.kernel_dilations[1], 1);
  ASSERT_EQ_INT(a.u.conv.input_dilations[0], 1);
  // Channel groups: input channels 6 = kernel in 3 * 2 groups; out channels 8 % 2 == 0.
  cml_shape_t in6 = SHAPE(CML_DTYPE_F32, 2, 6, 5, 5);
  cml_conv_config_t g = nchw_config(2);
  g.channel_group_count = 2;
  ASSERT_STATUS_OK(cml__infer_conv(&in6, &k, &g, &a, &out));
  ASSERT_OUT(CML_DTYPE_F32, 2, 8, 3, 4);
  g.channel_group_count = 3;
  ASSERT_FAILS(cml__infer_conv(&in6, &k, &g, &a, &out), "ConvGeneral", "channels",
               "(Float32)[2, 6, 5, 5]", "(Float32)[8, 3, 3, 2]");
  // Batch groups: output batch = 4 / 2.
  cml_shape_t in4 = SHAPE(CML_DTYPE_F32, 4, 3, 5, 5);
  cml_conv_config_t bg = nchw_config(2);
  bg.batch_group_count = 2;
  ASSERT_STATUS_OK(cml__infer_conv(&in4, &k, &bg, &a, &out));
  ASSERT_OUT(CML_DTYPE_F32, 2, 8, 3, 4);
  bg.batch_group_count = 3;
  ASSERT_FAILS(cml__infer_conv(&in4, &k, &bg, &a, &out), "ConvGeneral", "batch_group_count");
  // Output layout NHWC.
  cml_conv_config_t nhwc = nchw_config(2);
  nhwc.output_channel_axis = 3;
  nhwc.output_spatial_axes[0] = 1;
  nhwc.output_spatial_axes[1] = 2;
  ASSERT_STATUS_OK(cml__infer_conv(&in, &k, &nhwc, &a, &out));
  ASSERT_OUT(CML_DTYPE_F32, 2, 8, 8, 8);
  nhwc.output_spatial_axes[1] = 1;
  ASSERT_FAILS(cml__infer_conv(&in, &k, &nhwc, &a, &out), "ConvGeneral", "output axes");
  cml_shape_t k64 = SHAPE(CML_DTYPE_F64, 8, 3, 3, 2);
  cml_conv_config_t c0 = nchw_config(2);
  ASSERT_FAILS(cml__infer_conv(&in, &k64, &c0, &a, &out), "ConvGeneral", "dtype",
               "(Float64)[8, 3, 3, 2]");
}

TEST(windows) {
  cml_shape_t out;
  cml_ir_attrs_t a;
  memset(&a, 0, sizeof a);
  cml_shape_t x = SHAPE(CML_DTYPE_F32, 1, 7, 6);
  cml_window_config_t w;
  memset(&w, 0, sizeof w);
  w.rank = 3;
  w.window_dims[0] = 1;
  w.window_dims[1] = 3;
  w.window_dims[2] = 2;
  ASSERT_STATUS_OK(cml__infer_reduce_window(&x, CML_REDUCE_SUM, &w, &a, &out));
  ASSERT_OUT(CML_DTYPE_F32, 1, 2, 3);  // strides = window: (7-3)/3+1, (6-2)/2+1
  w.strides[1] = 1;
  w.padding_low[2] = 1;
  w.window_dilations[1] = 2;  // dilated window 5: (7-5)/1+1 = 3; axis 2: (7-2)/2+1 = 3
  ASSERT_STATUS_OK(cml__infer_reduce_window(&x, CML_REDUCE_MAX, &w, &a, &out));
  ASSERT_OUT(CML_DTYPE_F32, 1, 3, 3);
  ASSERT_EQ_INT(a.u.window.strides[2], 2);
  ASSERT_EQ_INT(a.u.window.input_dilations[0], 1);
  ASSERT_FAILS(cml__infer_reduce_window(&x, CML_REDUCE_UNDEFINED, &w, &a, &out), "ReduceWindow",
               "type");
  w.window_dims[0] = 0;
  ASSERT_FAILS(cml__infer_reduce_window(&x, CML_REDUCE_SUM, &w, &a, &out), "ReduceWindow", "axis 0",
               "(Float32)[1, 7, 6]");
  cml_window_config_t p;
  memset(&p, 0, sizeof p);
  p.rank = 2;
  p.window_dims[0] = p.window_dims[1] = 2;
  cml_shape_t op = SHAPE(CML_DTYPE_F32, 4, 6), src = SHAPE(CML_DTYPE_F32, 2, 3);
  ASSERT_STATUS_OK(
      cml__infer_select_and_scatter(CML_OP_SELECT_AND_SCATTER_MAX, &op, &src, &p, &a, &out));
  ASSERT_OUT(CML_DTYPE_F32, 4, 6);
  cml_shape_t src_bad = SHAPE(CML_DTYPE_F32, 3, 3);
  ASSERT_FAILS(
      cml__infer_select_and_scatter(CML_OP_SELECT_AND_SCATTER_MIN, &op, &src_bad, &p, &a, &out),
      "SelectAndScatterMin", "(Float32)[3, 3]", "(Float32)[2, 3]");
  p.window_dilations[0] = 2;
  ASSERT_FAILS(
      cml__infer_select_and_scatter(CML_OP_SELECT_AND_SCATTER_SUM, &op, &src, &p, &a, &out),
      "SelectAndScatterSum", "dilations");
}

TEST(dot) {
  cml_shape_t out;
  cml_ir_attrs_t a;
  memset(&a, 0, sizeof a);
  cml_shape_t m = SHAPE(CML_DTYPE_F32, 4, 3), v = SHAPE(CML_DTYPE_F32, 3),
              n = SHAPE(CML_DTYPE_F32, 3, 5);
  ASSERT_STATUS_OK(cml__infer_dot(&m, &n, &a, &out));
  ASSERT_OUT(CML_DTYPE_F32, 4, 5);
  ASSERT_STATUS_OK(cml__infer_dot(&m, &v, &a, &out));
  ASSERT_OUT(CML_DTYPE_F32, 4);
  ASSERT_STATUS_OK(cml__infer_dot(&v, &n, &a, &out));
  ASSERT_OUT(CML_DTYPE_F32, 5);
  ASSERT_STATUS_OK(cml__infer_dot(&v, &v, &a, &out));
  ASSERT_TRUE(same(&out, cml_shape_scalar(CML_DTYPE_F32)));
  ASSERT_FAILS(cml__infer_dot(&n, &m, &a, &out), "Dot", "(Float32)[3, 5]", "(Float32)[4, 3]");
  cml_shape_t t = SHAPE(CML_DTYPE_F32, 2, 3, 4);
  ASSERT_FAILS(cml__infer_dot(&t, &n, &a, &out), "Dot", "(Float32)[2, 3, 4]");
  // DotGeneral: lhs [b=2, 5, k=3, 7], rhs [k=3, b=2, 6] -> [2, 5, 7, 6].
  cml_shape_t l = SHAPE(CML_DTYPE_F32, 2, 5, 3, 7), r = SHAPE(CML_DTYPE_F32, 3, 2, 6);
  cml_dot_config_t c;
  memset(&c, 0, sizeof c);
  c.lhs_contracting_count = c.rhs_contracting_count = 1;
  c.lhs_contracting_axes[0] = 2;
  c.rhs_contracting_axes[0] = 0;
  c.lhs_batch_count = c.rhs_batch_count = 1;
  c.lhs_batch_axes[0] = 0;
  c.rhs_batch_axes[0] = 1;
  ASSERT_STATUS_OK(cml__infer_dot_general(CML_OP_DOT_GENERAL, &l, &r, &c, &a, &out));
  ASSERT_OUT(CML_DTYPE_F32, 2, 5, 7, 6);
  ASSERT_EQ_INT(a.u.dot.accumulator_dtype, CML_DTYPE_F32);
  ASSERT_EQ_INT(a.u.dot.output_dtype, CML_DTYPE_F32);
  c.rhs_batch_axes[0] = 0;  // duplicates the contracting axis
  ASSERT_FAILS(cml__infer_dot_general(CML_OP_DOT_GENERAL, &l, &r, &c, &a, &out), "DotGeneral",
               "rhs", "(Float32)[3, 2, 6]");
  c.rhs_batch_axes[0] = 1;
  c.rhs_batch_count = 0;
  ASSERT_FAILS(cml__infer_dot_general(CML_OP_DOT_GENERAL, &l, &r, &c, &a, &out), "DotGeneral",
               "batch");
}

TEST(special) {
  cml_shape_t out;
  cml_ir_attrs_t a;
  memset(&a, 0, sizeof a);
  cml_shape_t outs[3];
  cml_shape_t st = SHAPE(CML_DTYPE_U64, 3), vs = SHAPE(CML_DTYPE_F32, 4, 4);
  ASSERT_STATUS_OK(cml__infer_rng(&st, &vs, outs));
  ASSERT_TRUE(same(&outs[0], SHAPE(CML_DTYPE_U64, 3)));
  ASSERT_TRUE(same(&outs[1], SHAPE(CML_DTYPE_F32, 4, 4)));
  cml_shape_t st2 = SHAPE(CML_DTYPE_I64, 3);
  ASSERT_FAILS(cml__infer_rng(&st2, &vs, outs), "RNGBitGenerator", "(Int64)[3]");
  cml_shape_t bs = SHAPE(CML_DTYPE_BOOL, 2);
  ASSERT_FAILS(cml__infer_rng(&st, &bs, outs), "RNGBitGenerator", "Bool");
  // FFT.
  cml_shape_t c = SHAPE(CML_DTYPE_C64, 3, 8), r = SHAPE(CML_DTYPE_F64, 3, 8);
  ASSERT_STATUS_OK(cml__infer_fft(&c, CML_FFT_FORWARD, (int64_t[]){8}, 1, &a, &out));
  ASSERT_OUT(CML_DTYPE_C64, 3, 8);
  ASSERT_STATUS_OK(cml__infer_fft(&r, CML_FFT_FORWARD_REAL, (int64_t[]){8}, 1, &a, &out));
  ASSERT_OUT(CML_DTYPE_C128, 3, 5);
  cml_shape_t half = SHAPE(CML_DTYPE_C64, 3, 5);
  ASSERT_STATUS_OK(cml__infer_fft(&half, CML_FFT_INVERSE_REAL, (int64_t[]){8}, 1, &a, &out));
  ASSERT_OUT(CML_DTYPE_F32, 3, 8);
  ASSERT_STATUS_OK(cml__infer_fft(&c, CML_FFT_INVERSE, (int64_t[]){3, 8}, 2, &a, &out));
  ASSERT_OUT(CML_DTYPE_C64, 3, 8);
  ASSERT_EQ_INT(a.axis_count, 2);
  ASSERT_EQ_INT(a.fft_type, CML_FFT_INVERSE);
  ASSERT_FAILS(cml__infer_fft(&c, CML_FFT_FORWARD, (int64_t[]){4}, 1, &a, &out), "FFT",
               "(Complex64)[3, 8]", "[4]");
  ASSERT_FAILS(cml__infer_fft(&r, CML_FFT_FORWARD, (int64_t[]){8}, 1, &a, &out), "FFT", "complex");
  ASSERT_FAILS(cml__infer_fft(&c, CML_FFT_FORWARD, (int64_t[]){1, 3, 8}, 3, &a, &out), "FFT",
               "lengths");
  // Length 0 is refused for every type (XLA refuses it; a real FFT of an empty axis would
  // otherwise have one output).
  cml_shape_t r0 = SHAPE(CML_DTYPE_F32, 0), c0 = SHAPE(CML_DTYPE_C64, 0);
  cml_shape_t c1 = SHAPE(CML_DTYPE_C64, 1);
  ASSERT_FAILS(cml__infer_fft(&r0, CML_FFT_FORWARD_REAL, (int64_t[]){0}, 1, &a, &out), "FFT",
               "length 0 in [0] must be positive", "(Float32)[0]");
  ASSERT_FAILS(cml__infer_fft(&c0, CML_FFT_FORWARD, (int64_t[]){0}, 1, &a, &out), "FFT",
               "must be positive");
  ASSERT_FAILS(cml__infer_fft(&c1, CML_FFT_INVERSE_REAL, (int64_t[]){0}, 1, &a, &out), "FFT",
               "must be positive");
  ASSERT_STATUS_OK(cml__infer_fft(&c1, CML_FFT_INVERSE_REAL, (int64_t[]){1}, 1, &a, &out));
  ASSERT_OUT(CML_DTYPE_F32, 1);
  // Batch norm.
  cml_shape_t x = SHAPE(CML_DTYPE_F32, 2, 4, 3), p4 = SHAPE(CML_DTYPE_F32, 4);
  cml_shape_t params[4] = {p4, p4, p4, p4};
  ASSERT_STATUS_OK(
      cml__infer_batch_norm(CML_OP_BATCH_NORM_INFERENCE, &x, params, 4, 1e-5f, 1, &a, outs));
  ASSERT_TRUE(same(&outs[0], x));
  ASSERT_EQ_INT(a.axis, 1);
  ASSERT_STATUS_OK(
      cml__infer_batch_norm(CML_OP_BATCH_NORM_TRAINING, &x, params, 2, 1e-5f, 1, &a, outs));
  ASSERT_TRUE(same(&outs[1], p4));
  ASSERT_TRUE(same(&outs[2], p4));
  cml_shape_t grad[4] = {p4, p4, p4, x};
  ASSERT_STATUS_OK(
      cml__infer_batch_norm(CML_OP_BATCH_NORM_GRADIENT, &x, grad, 4, 1e-5f, 1, &a, outs));
  ASSERT_TRUE(same(&outs[0], x));
  ASSERT_FAILS(
      cml__infer_batch_norm(CML_OP_BATCH_NORM_INFERENCE, &x, params, 4, 1e-5f, 2, &a, outs),
      "BatchNormForInference", "scale", "(Float32)[4]", "(Float32)[3]");
  ASSERT_FAILS(cml__infer_batch_norm(CML_OP_BATCH_NORM_TRAINING, &x, params, 2, -1.0f, 1, &a, outs),
               "BatchNormForTraining", "epsilon");
  cml_shape_t xi = SHAPE(CML_DTYPE_I32, 2, 4);
  ASSERT_FAILS(cml__infer_batch_norm(CML_OP_BATCH_NORM_TRAINING, &xi, params, 2, 0.1f, 1, &a, outs),
               "BatchNormForTraining", "Int32");
}

// A shape struct filled by hand, without cml_shape_init's limits (inference takes any dims).
static cml_shape_t raw_shape(cml_dtype_t dtype, int32_t rank, const int64_t* dims) {
  cml_shape_t s;
  memset(&s, 0, sizeof s);
  s.dtype = dtype;
  s.rank = rank;
  for (int32_t i = 0; i < rank; ++i) s.dims[i] = dims[i];
  return s;
}

// Attribute values at the ends of int64 never overflow (UBSan checks) and fail with a message
// naming the op; sizes that fit are computed exactly (hand-computed values).
TEST(overflowing_attributes) {
  cml_shape_t out;
  cml_ir_attrs_t a;
  memset(&a, 0, sizeof a);
  cml_shape_t x = SHAPE(CML_DTYPE_F32, 3), fill = cml_shape_scalar(CML_DTYPE_F32);
  // Pad.
  const int64_t pads[][3] = {
      {INT64_MAX, 0, 0},         {0, INT64_MAX, 0}, {INT64_MAX, INT64_MAX, 0},
      {INT64_MIN, INT64_MIN, 0}, {0, 0, INT64_MAX}, {INT64_MAX / 2, INT64_MAX / 2, INT64_MAX / 2},
      {INT64_MAX - 2, 0, 0}};
  for (size_t i = 0; i < sizeof pads / sizeof pads[0]; ++i) {
    cml_pad_axis_t p = {pads[i][0], pads[i][1], pads[i][2]};
    ASSERT_FAILS(cml__infer_pad(&x, &fill, &p, 1, &a, &out), "Pad", "axis 0", "(Float32)[3]");
  }
  // Every padding is bounded by CML__ATTR_MAX = 2^55 (the reported crash: low MAX - 3 with
  // high -(MAX - 5), net size 5, was accepted and crashed the c kernel and XLA).
  const int64_t big = CML__ATTR_MAX;
  cml_pad_axis_t crop = {INT64_MIN, 0, 0};
  ASSERT_FAILS(cml__infer_pad(&x, &fill, &crop, 1, &a, &out), "Pad", "out of range",
               "(Float32)[3]");
  cml_pad_axis_t reported = {INT64_MAX - 3, -(INT64_MAX - 5), 0};
  ASSERT_FAILS(cml__infer_pad(&x, &fill, &reported, 1, &a, &out), "Pad", "out of range",
               "low 9223372036854775804, high -9223372036854775802");
  cml_pad_axis_t fits = {big - 3, 0, 0};  // 3 + 2^55 - 3
  ASSERT_STATUS_OK(cml__infer_pad(&x, &fill, &fits, 1, &a, &out));
  ASSERT_EQ_INT(out.dims[0], big);
  cml_pad_axis_t low_too_big = {big + 1, -big, 0};  // net 4, but low is past the bound
  ASSERT_FAILS(cml__infer_pad(&x, &fill, &low_too_big, 1, &a, &out), "Pad", "out of range");
  cml_pad_axis_t crop_all = {-big, big, 0};  // 3 - 2^55 + 2^55 = 3: all fill
  ASSERT_STATUS_OK(cml__infer_pad(&x, &fill, &crop_all, 1, &a, &out));
  ASSERT_EQ_INT(out.dims[0], 3);
  cml_pad_axis_t interior = {0, 0, (int64_t)1 << 61};  // 3 + 2 * 2^61: past the bound
  ASSERT_FAILS(cml__infer_pad(&x, &fill, &interior, 1, &a, &out), "Pad", "out of range",
               "interior <= 36028797018963968");
  cml_pad_axis_t interior_crop = {-(big / 2 - 2), -(big / 2 - 2),
                                  big / 2 - 2};  // 2^55 - 1 - 2^55 + 4
  ASSERT_STATUS_OK(cml__infer_pad(&x, &fill, &interior_crop, 1, &a, &out));
  ASSERT_EQ_INT(out.dims[0], 3);
  interior_crop.interior = big / 2 - 1;  // interior-padded size 2^55 + 1
  ASSERT_FAILS(cml__infer_pad(&x, &fill, &interior_crop, 1, &a, &out), "Pad", "interior padding");
  // Slice: strides up to 2^55 (XLA overflows, and aborts, on larger ones) give one element.
  cml_shape_t v = SHAPE(CML_DTYPE_F32, 5);
  ASSERT_FAILS(
      cml__infer_slice(&v, (int64_t[]){0}, (int64_t[]){5}, (int64_t[]){INT64_MAX}, 1, &a, &out),
      "Slice", "stride 9223372036854775807 out of range", "(Float32)[5]");
  ASSERT_STATUS_OK(
      cml__infer_slice(&v, (int64_t[]){0}, (int64_t[]){5}, (int64_t[]){big}, 1, &a, &out));
  ASSERT_OUT(CML_DTYPE_F32, 1);
  ASSERT_STATUS_OK(
      cml__infer_slice(&v, (int64_t[]){1}, (int64_t[]){5}, (int64_t[]){3}, 1, &a, &out));
  ASSERT_OUT(CML_DTYPE_F32, 2);  // elements 1 and 4
  ASSERT_STATUS_OK(
      cml__infer_slice(&v, (int64_t[]){5}, (int64_t[]){5}, (int64_t[]){big}, 1, &a, &out));
  ASSERT_OUT(CML_DTYPE_F32, 0);
  ASSERT_FAILS(cml__infer_slice(&v, (int64_t[]){INT64_MIN}, (int64_t[]){INT64_MAX},
                                (int64_t[]){INT64_MIN}, 1, &a, &out),
               "Slice", "(Float32)[5]");
  // Concatenate: the sum of the sizes along the axis overflows.
  const int64_t half = (int64_t)1 << 62;
  cml_shape_t parts[3] = {raw_shape(CML_DTYPE_F32, 1, &half), raw_shape(CML_DTYPE_F32, 1, &half),
                          raw_shape(CML_DTYPE_F32, 1, &half)};
  ASSERT_FAILS(cml__infer_concatenate(0, parts, 3, &a, &out), "Concatenate", "overflow",
               "operand #1");
  ASSERT_STATUS_OK(cml__infer_concatenate(0, parts, 1, &a, &out));
  ASSERT_EQ_INT(out.dims[0], half);
  // ReduceWindow: padding, window sizes and dilations at the ends of int64.
  cml_shape_t w4 = SHAPE(CML_DTYPE_F32, 4);
  cml_window_config_t w;
  memset(&w, 0, sizeof w);
  w.rank = 1;
  w.window_dims[0] = 2;
  w.strides[0] = 1;
  w.padding_low[0] = w.padding_high[0] = INT64_MAX;
  ASSERT_FAILS(cml__infer_reduce_window(&w4, CML_REDUCE_SUM, &w, &a, &out), "ReduceWindow",
               "out of range", "(Float32)[4]");
  w.padding_low[0] = w.padding_high[0] = INT64_MIN;
  ASSERT_FAILS(cml__infer_reduce_window(&w4, CML_REDUCE_SUM, &w, &a, &out), "ReduceWindow",
               "out of range");
  w.padding_low[0] = 0;
  w.padding_high[0] = -1;  // fine with a window of 2: 2 windows
  ASSERT_STATUS_OK(cml__infer_reduce_window(&w4, CML_REDUCE_SUM, &w, &a, &out));
  ASSERT_OUT(CML_DTYPE_F32, 2);
  w.window_dims[0] = 1;  // XLA aborts on a size-1 window with negative padding
  ASSERT_FAILS(cml__infer_reduce_window(&w4, CML_REDUCE_SUM, &w, &a, &out), "ReduceWindow",
               "padding (0, -1) must not be negative with a window of size 1", "(Float32)[4]");
  w.window_dims[0] = 2;
  w.padding_low[0] = -big;
  w.padding_high[0] = 0;
  ASSERT_FAILS(cml__infer_reduce_window(&w4, CML_REDUCE_SUM, &w, &a, &out), "ReduceWindow",
               "negative");
  w.padding_low[0] = w.padding_high[0] = 0;
  w.input_dilations[0] = INT64_MAX;  // (4 - 1) * INT64_MAX
  ASSERT_FAILS(cml__infer_reduce_window(&w4, CML_REDUCE_SUM, &w, &a, &out), "ReduceWindow",
               "out of range");
  w.input_dilations[0] = 1;
  w.window_dims[0] = INT64_MAX;
  w.window_dilations[0] = 2;  // (INT64_MAX - 1) * 2
  ASSERT_FAILS(cml__infer_reduce_window(&w4, CML_REDUCE_SUM, &w, &a, &out), "ReduceWindow",
               "out of range");
  w.window_dilations[0] = 1;  // a window past the bound
  ASSERT_FAILS(cml__infer_reduce_window(&w4, CML_REDUCE_SUM, &w, &a, &out), "ReduceWindow",
               "out of range");
  w.window_dims[0] = big;  // a window larger than the input: 0 windows
  ASSERT_STATUS_OK(cml__infer_reduce_window(&w4, CML_REDUCE_SUM, &w, &a, &out));
  ASSERT_OUT(CML_DTYPE_F32, 0);
  w.window_dims[0] = 2;
  w.strides[0] = INT64_MAX;  // past the bound
  ASSERT_FAILS(cml__infer_reduce_window(&w4, CML_REDUCE_SUM, &w, &a, &out), "ReduceWindow",
               "out of range", "stride 9223372036854775807");
  w.strides[0] = big;  // one window
  ASSERT_STATUS_OK(cml__infer_reduce_window(&w4, CML_REDUCE_SUM, &w, &a, &out));
  ASSERT_OUT(CML_DTYPE_F32, 1);
  w.strides[0] = 1;
  w.padding_low[0] = w.padding_high[0] = (int64_t)1 << 40;  // 4 + 2^41 - 2 + 1 windows
  ASSERT_STATUS_OK(cml__infer_reduce_window(&w4, CML_REDUCE_SUM, &w, &a, &out));
  ASSERT_EQ_INT(out.dims[0], ((int64_t)1 << 41) + 3);
  // ConvGeneral: padding and dilations at the ends of int64; group counts that overflow.
  cml_shape_t in = SHAPE(CML_DTYPE_F32, 1, 3, 5), k = SHAPE(CML_DTYPE_F32, 6, 3, 2);
  cml_conv_config_t c = nchw_config(1);
  c.padding_low[0] = INT64_MAX - 2;
  c.padding_high[0] = 5;
  ASSERT_FAILS(cml__infer_conv(&in, &k, &c, &a, &out), "ConvGeneral", "spatial axis 0",
               "(Float32)[1, 3, 5]", "(Float32)[6, 3, 2]");
  c = nchw_config(1);
  c.input_dilations[0] = INT64_MAX / 2;
  ASSERT_FAILS(cml__infer_conv(&in, &k, &c, &a, &out), "ConvGeneral", "out of range");
  c = nchw_config(1);
  c.kernel_dilations[0] = INT64_MAX;  // (2 - 1) * INT64_MAX + 1
  ASSERT_FAILS(cml__infer_conv(&in, &k, &c, &a, &out), "ConvGeneral", "out of range");
  c = nchw_config(1);
  c.kernel_dilations[0] = big - 1;  // dilated kernel 2^55 > 5: no output positions
  ASSERT_STATUS_OK(cml__infer_conv(&in, &k, &c, &a, &out));
  ASSERT_OUT(CML_DTYPE_F32, 1, 6, 0);
  c = nchw_config(1);
  c.padding_low[0] = c.padding_high[0] = INT64_MIN;
  ASSERT_FAILS(cml__infer_conv(&in, &k, &c, &a, &out), "ConvGeneral", "out of range");
  c = nchw_config(1);
  c.channel_group_count = INT64_MAX;  // 3 * INT64_MAX kernel input channels
  ASSERT_FAILS(cml__infer_conv(&in, &k, &c, &a, &out), "ConvGeneral", "must be in [0, ");
  c = nchw_config(1);
  c.channel_group_count = -1;  // negative group counts are not "1"
  ASSERT_FAILS(cml__infer_conv(&in, &k, &c, &a, &out), "ConvGeneral", "channel_group_count -1");
  c = nchw_config(1);
  c.batch_group_count = INT64_MIN;
  ASSERT_FAILS(cml__infer_conv(&in, &k, &c, &a, &out), "ConvGeneral", "must be in [0, ");
  // A zero-size window (kernel spatial size 0) is refused, as XLA does.
  cml_shape_t k0 = SHAPE(CML_DTYPE_F32, 6, 3, 0);
  c = nchw_config(1);
  ASSERT_FAILS(cml__infer_conv(&in, &k0, &c, &a, &out), "ConvGeneral", "spatial axis 0",
               "(Float32)[6, 3, 0] has size 0");
  c = nchw_config(1);
  c.strides[0] = INT64_MIN;
  ASSERT_FAILS(cml__infer_conv(&in, &k, &c, &a, &out), "ConvGeneral", "positive");
}

// cml_shape_init's limit (the one every op output is held to): at most CML_MAX_ELEMENTS = 2^55
// elements whatever the dtype, zero dims counting as 1; the product never overflows.
TEST(shape_limits) {
  cml_shape_t s;
  const int64_t limit = (int64_t)1 << 55;
  ASSERT_EQ_INT(CML_MAX_ELEMENTS, limit);
  ASSERT_STATUS_OK(cml_shape_init(&s, CML_DTYPE_C128, 1, &limit));
  ASSERT_EQ_INT(cml_shape_byte_size(&s), (uint64_t)1 << 59);  // 16 bytes each
  ASSERT_STATUS_OK(
      cml_shape_init(&s, CML_DTYPE_U1, 2, (int64_t[]){(int64_t)1 << 20, (int64_t)1 << 35}));
  ASSERT_EQ_INT(cml_shape_byte_size(&s), (uint64_t)1 << 52);  // 2^55 bits
  ASSERT_STATUS_OK(
      cml_shape_init(&s, CML_DTYPE_F32, 3, (int64_t[]){(int64_t)1 << 30, 0, (int64_t)1 << 25}));
  ASSERT_EQ_INT(cml_shape_element_count(&s), 0);
  ASSERT_FAILS(cml_shape_init(&s, CML_DTYPE_BOOL, 1, (int64_t[]){limit + 1}), "too many elements",
               "(Bool)[36028797018963969]");
  ASSERT_FAILS(cml_shape_init(&s, CML_DTYPE_F32, 2, (int64_t[]){0, limit * 2}),
               "too many elements");
  int64_t huge[CML_MAX_RANK];
  for (int i = 0; i < CML_MAX_RANK; ++i) huge[i] = INT64_MAX;
  ASSERT_FAILS(cml_shape_init(&s, CML_DTYPE_I8, CML_MAX_RANK, huge), "too many elements");
  huge[0] = 0;  // an empty shape with overflowing strides is rejected too
  ASSERT_FAILS(cml_shape_init(&s, CML_DTYPE_I8, CML_MAX_RANK, huge), "too many elements");
  // A user-given shape (Parameter, Iota, RNG) gets the same limit, with the op named.
  cml_shape_t user = {CML_DTYPE_F32, 2, {limit, 2}};
  ASSERT_FAILS(cml__infer_user_shape(CML_OP_PARAMETER, &user, false, &s), "Parameter",
               "too many elements");
}

//===--- random extreme attributes ---===//

static uint64_t g_rng = 0x9e3779b97f4a7c15u;
static uint64_t rng_next(void) {  // xorshift64*
  g_rng ^= g_rng >> 12;
  g_rng ^= g_rng << 25;
  g_rng ^= g_rng >> 27;
  return g_rng * 0x2545f4914f6cdd1du;
}
// An int64 from the ends of the range, around 0, around 2^31/2^32/2^62, or anything.
static int64_t extreme(void) {
  static const int64_t kValues[] = {0,
                                    1,
                                    2,
                                    -1,
                                    -2,
                                    INT64_MAX,
                                    INT64_MIN,
                                    INT64_MAX - 1,
                                    INT64_MIN + 1,
                                    INT64_MAX / 2,
                                    INT64_MIN / 2,
                                    (int64_t)1 << 31,
                                    (int64_t)1 << 32,
                                    (int64_t)1 << 55,
                                    (int64_t)1 << 62,
                                    -((int64_t)1 << 62)};
  uint64_t r = rng_next();
  if (r % 8 == 0) return (int64_t)rng_next();
  if (r % 8 == 1) return (int64_t)(rng_next() % 9);
  return kValues[(r >> 8) % (sizeof kValues / sizeof kValues[0])];
}
// Replaces |v| by an extreme value one time in |one_in|.
static void perturb(int64_t* v, unsigned one_in) {
  if (rng_next() % one_in == 0) *v = extreme();
}
// A dim: small, zero, or as large as int64 allows (inference takes unchecked shapes).
static int64_t random_dim(void) {
  static const int64_t kDims[] = {0, 1, 2, 3, 5, 7, (int64_t)1 << 20, (int64_t)1 << 55, INT64_MAX};
  uint64_t r = rng_next();
  return r % 4 ? (int64_t)(r % 6) : kDims[(r >> 8) % (sizeof kDims / sizeof kDims[0])];
}
static cml_shape_t random_shape(cml_dtype_t dtype, int32_t rank) {
  int64_t dims[CML_MAX_RANK];
  for (int32_t i = 0; i < rank; ++i) dims[i] = random_dim();
  return raw_shape(dtype, rank, dims);
}

// The result of one inference: OK with non-negative output dims, or INVALID_ARGUMENT whose
// message starts with |op|'s name. Arithmetic overflow would stop the UBSan build.
static bool check_result(cml_status_t st, const char* op, const cml_shape_t* out, int count) {
  bool ok = true;
  if (st == CML_OK) {
    for (int k = 0; k < count; ++k) {
      for (int32_t i = 0; i < out[k].rank; ++i) ok = ok && out[k].dims[i] >= 0;
    }
    if (!ok) fprintf(stderr, "%s: negative output dim\n", op);
  } else {
    ok = cml_status_code(st) == CML_STATUS_INVALID_ARGUMENT &&
         strncmp(cml_status_message(st), op, strlen(op)) == 0;
    if (!ok) fprintf(stderr, "%s: got \"%s\"\n", op, cml_status_message(st));
  }
  cml_status_free(st);
  return ok;
}

TEST(random_extreme_attributes) {
  cml_ir_attrs_t a;
  cml_shape_t out[3];
  const cml_shape_t fill = cml_shape_scalar(CML_DTYPE_F32);
  for (int iter = 0; iter < 20000; ++iter) {
    int32_t rank = 1 + (int32_t)(rng_next() % 3);
    cml_shape_t x = random_shape(CML_DTYPE_F32, rank);
    memset(&a, 0, sizeof a);
    // Pad.
    cml_pad_axis_t pads[3];
    for (int32_t i = 0; i < rank; ++i) {
      pads[i] = (cml_pad_axis_t){(int64_t)(rng_next() % 3), (int64_t)(rng_next() % 3),
                                 (int64_t)(rng_next() % 2)};
      perturb(&pads[i].low, 3);
      perturb(&pads[i].high, 3);
      perturb(&pads[i].interior, 3);
    }
    ASSERT_TRUE(
        check_result(cml__infer_pad(&x, &fill, pads, (size_t)rank, &a, out), "Pad", out, 1));
    // Slice.
    int64_t starts[3], limits[3], strides[3];
    for (int32_t i = 0; i < rank; ++i) {
      starts[i] = 0;
      limits[i] = x.dims[i];
      strides[i] = 1 + (int64_t)(rng_next() % 3);
      perturb(&starts[i], 4);
      perturb(&limits[i], 4);
      perturb(&strides[i], 3);
    }
    ASSERT_TRUE(check_result(cml__infer_slice(&x, starts, limits, strides, rank, &a, out), "Slice",
                             out, 1));
    // Concatenate along a random axis (sizes may sum past int64).
    cml_shape_t parts[3] = {x, x, x};
    for (int k = 1; k < 3; ++k) parts[k].dims[0] = random_dim();
    ASSERT_TRUE(check_result(cml__infer_concatenate(0, parts, 3, &a, out), "Concatenate", out, 1));
    // Reshape and BroadcastInDim to extreme dims.
    int64_t dims[3] = {extreme(), extreme(), extreme()};
    ASSERT_TRUE(check_result(cml__infer_reshape(&x, dims, rank, &a, out), "Reshape", out, 1));
    cml_shape_t one = raw_shape(CML_DTYPE_F32, 1, (int64_t[]){1});
    ASSERT_TRUE(check_result(
        cml__infer_broadcast_in_dim(&one, dims, 3, (int64_t[]){extreme() & 3}, 1, &a, out),
        "BroadcastInDim", out, 1));
    // DynamicSlice sizes.
    cml_shape_t idx[3] = {cml_shape_scalar(CML_DTYPE_I32), cml_shape_scalar(CML_DTYPE_I32),
                          cml_shape_scalar(CML_DTYPE_I32)};
    ASSERT_TRUE(check_result(cml__infer_dynamic_slice(&x, idx, (size_t)rank, dims, rank, &a, out),
                             "DynamicSlice", out, 1));
    // ReduceWindow and SelectAndScatter.
    cml_window_config_t w;
    memset(&w, 0, sizeof w);
    w.rank = rank;
    for (int32_t i = 0; i < rank; ++i) {
      w.window_dims[i] = 1 + (int64_t)(rng_next() % 3);
      perturb(&w.window_dims[i], 5);
      perturb(&w.strides[i], 4);
      perturb(&w.input_dilations[i], 5);
      perturb(&w.window_dilations[i], 5);
      perturb(&w.padding_low[i], 3);
      perturb(&w.padding_high[i], 3);
    }
    ASSERT_TRUE(check_result(cml__infer_reduce_window(&x, CML_REDUCE_MAX, &w, &a, out),
                             "ReduceWindow", out, 1));
    ASSERT_TRUE(check_result(
        cml__infer_select_and_scatter(CML_OP_SELECT_AND_SCATTER_SUM, &x, &x, &w, &a, out),
        "SelectAndScatterSum", out, 1));
    // ConvGeneral with one spatial axis (NCH / OIH).
    cml_shape_t in = random_shape(CML_DTYPE_F32, 3), k = random_shape(CML_DTYPE_F32, 3);
    if (rng_next() % 2) k.dims[1] = in.dims[1];  // matching channels reach the window code
    cml_conv_config_t c = nchw_config(1);
    perturb(&c.strides[0], 3);
    perturb(&c.padding_low[0], 3);
    perturb(&c.padding_high[0], 3);
    perturb(&c.input_dilations[0], 3);
    perturb(&c.kernel_dilations[0], 3);
    perturb(&c.channel_group_count, 6);
    perturb(&c.batch_group_count, 6);
    ASSERT_TRUE(check_result(cml__infer_conv(&in, &k, &c, &a, out), "ConvGeneral", out, 1));
    // FFT lengths, Iota and ArgMinMax axes, BatchNorm feature axis.
    int64_t len = extreme();
    ASSERT_TRUE(
        check_result(cml__infer_fft(&x, CML_FFT_FORWARD_REAL, &len, 1, &a, out), "FFT", out, 1));
    ASSERT_TRUE(check_result(cml__infer_iota(&x, extreme(), &a, out), "Iota", out, 1));
    ASSERT_TRUE(check_result(cml__infer_arg_min_max(&x, extreme(), CML_DTYPE_I32, true, &a, out),
                             "ArgMinMax", out, 1));
    ASSERT_TRUE(check_result(cml__infer_reduce(CML_OP_REDUCE_SUM, &x, dims, (size_t)rank, &a, out),
                             "ReduceSum", out, 1));
    ASSERT_TRUE(check_result(cml__infer_transpose(&x, dims, rank, &a, out), "Transpose", out, 1));
    ASSERT_TRUE(
        check_result(cml__infer_reverse(&x, dims, (size_t)rank, &a, out), "Reverse", out, 1));
  }
}

TEST_MAIN(TEST_ENTRY(unary), TEST_ENTRY(binary_broadcasting), TEST_ENTRY(reduce),
          TEST_ENTRY(convert_and_bitcast), TEST_ENTRY(clamp_and_where), TEST_ENTRY(movement),
          TEST_ENTRY(pad_and_dynamic_slices), TEST_ENTRY(gather), TEST_ENTRY(scatter),
          TEST_ENTRY(conv), TEST_ENTRY(windows), TEST_ENTRY(dot), TEST_ENTRY(special),
          TEST_ENTRY(overflowing_attributes), TEST_ENTRY(shape_limits),
          TEST_ENTRY(random_extreme_attributes))
