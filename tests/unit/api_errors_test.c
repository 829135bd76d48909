// SPDX-License-Identifier: Apache-2.0
// tests/unit/api_errors_test.c: bad input through the public API only. Every case must come
// back as a status with the right code whose message names the op (and the shapes or dtypes
// involved) — never a crash, an abort or a leak.
#include "api_common.h"
#include "test.h"

static cml_backend_t* g_backend;

static cml_backend_t* backend_c(void) {
  if (!g_backend) {
    cml_status_t st = cml_backend_new_with_config("c", &g_backend);
    if (st != CML_OK) {
      fprintf(stderr, "backend: %s\n", cml_status_message(st));
      cml_status_free(st);
    }
  }
  return g_backend;
}

//===--- table of builder errors ---===//

typedef cml_value_t (*bad_op_fn)(cml_function_t* f);

typedef struct bad_case_t {
  const char* name;
  bad_op_fn fn;
  cml_status_code_t code;
  const char* needles[4];  // substrings the message must contain (NULL-terminated)
} bad_case_t;

static cml_value_t p(cml_function_t* f, cml_dtype_t dt, int32_t rank, const int64_t* dims) {
  cml_shape_t s = cml_shape_make(dt, rank, dims);
  return cml_parameter(f, NULL, &s);
}
#define P(f, dt, ...)                                                         \
  p((f), (dt), (int32_t)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), \
    (int64_t[]){__VA_ARGS__})
#define PS(f, dt) p((f), (dt), 0, NULL)

static cml_value_t bad_add_shapes(cml_function_t* f) {
  return cml_op_add(f, P(f, CML_DTYPE_F32, 2, 3), P(f, CML_DTYPE_F32, 3, 2));
}
static cml_value_t bad_add_dtypes(cml_function_t* f) {
  return cml_op_add(f, P(f, CML_DTYPE_F32, 2), P(f, CML_DTYPE_F64, 2));
}
static cml_value_t bad_add_rank(cml_function_t* f) {
  return cml_op_add(f, P(f, CML_DTYPE_F32, 2, 3), P(f, CML_DTYPE_F32, 3));
}
static cml_value_t bad_bitand_float(cml_function_t* f) {
  return cml_op_bitwise_and(f, P(f, CML_DTYPE_F32, 2), P(f, CML_DTYPE_F32, 2));
}
static cml_value_t bad_sin_int(cml_function_t* f) { return cml_op_sin(f, P(f, CML_DTYPE_I32, 2)); }
static cml_value_t bad_logical_not_f32(cml_function_t* f) {
  return cml_op_logical_not(f, P(f, CML_DTYPE_F32, 2));
}
static cml_value_t bad_unary_by_op(cml_function_t* f) {
  return cml_op_unary(f, CML_OP_ADD, P(f, CML_DTYPE_F32, 2));
}
static cml_value_t bad_binary_by_op(cml_function_t* f) {
  cml_value_t x = P(f, CML_DTYPE_F32, 2);
  return cml_op_binary(f, CML_OP_SIN, x, x);
}
static cml_value_t bad_binary_op_count(cml_function_t* f) {
  cml_value_t x = P(f, CML_DTYPE_F32, 2);
  return cml_op_binary(f, (cml_op_t)CML_OP_COUNT, x, x);
}
static cml_value_t bad_reduce_by_op(cml_function_t* f) {
  return cml_op_reduce(f, CML_OP_EXP, P(f, CML_DTYPE_F32, 2), NULL, 0);
}
static cml_value_t bad_reduce_axis(cml_function_t* f) {
  return cml_op_reduce_sum(f, P(f, CML_DTYPE_F32, 2, 3), (int64_t[]){5}, 1);
}
static cml_value_t bad_reduce_dup_axes(cml_function_t* f) {
  return cml_op_reduce_sum(f, P(f, CML_DTYPE_F32, 2, 3), (int64_t[]){1, 1}, 2);
}
static cml_value_t bad_reduce_neg_axis(cml_function_t* f) {
  return cml_op_reduce_max(f, P(f, CML_DTYPE_F32, 2, 3), (int64_t[]){-7}, 1);
}
static cml_value_t bad_reduce_null_axes(cml_function_t* f) {
  return cml_op_reduce_sum(f, P(f, CML_DTYPE_F32, 2, 3), NULL, 2);
}
static cml_value_t bad_reduce_logical_f32(cml_function_t* f) {
  return cml_op_reduce_logical_and(f, P(f, CML_DTYPE_F32, 2, 3), NULL, 0);
}
static cml_value_t bad_transpose_dup(cml_function_t* f) {
  return cml_op_transpose(f, P(f, CML_DTYPE_F32, 2, 3), (int64_t[]){0, 0}, 2);
}
static cml_value_t bad_transpose_len(cml_function_t* f) {
  return cml_op_transpose(f, P(f, CML_DTYPE_F32, 2, 3), (int64_t[]){1, 0, 2}, 3);
}
static cml_value_t bad_transpose_range(cml_function_t* f) {
  return cml_op_transpose(f, P(f, CML_DTYPE_F32, 2, 3), (int64_t[]){0, 2}, 2);
}
static cml_value_t bad_transpose_null(cml_function_t* f) {
  return cml_op_transpose(f, P(f, CML_DTYPE_F32, 2, 3), NULL, 2);
}
static cml_value_t bad_reshape_count(cml_function_t* f) {
  return cml_op_reshape(f, P(f, CML_DTYPE_F32, 2, 3), (int64_t[]){4, 2}, 2);
}
static cml_value_t bad_reshape_neg(cml_function_t* f) {
  return cml_op_reshape(f, P(f, CML_DTYPE_F32, 2, 3), (int64_t[]){-2, -3}, 2);
}
static cml_value_t bad_reshape_rank(cml_function_t* f) {
  int64_t dims[CML_MAX_RANK + 1];
  for (int i = 0; i <= CML_MAX_RANK; ++i) dims[i] = 1;
  return cml_op_reshape(f, P(f, CML_DTYPE_F32, 1), dims, CML_MAX_RANK + 1);
}
static cml_value_t bad_reshape_neg_rank(cml_function_t* f) {
  return cml_op_reshape(f, P(f, CML_DTYPE_F32, 1), (int64_t[]){1}, -1);
}
static cml_value_t bad_reshape_null(cml_function_t* f) {
  return cml_op_reshape(f, P(f, CML_DTYPE_F32, 6), NULL, 2);
}
static cml_value_t bad_reshape_overflow(cml_function_t* f) {
  // 2^32 * 2^32 wraps to 0 in 64 bits: must not be accepted as a reshape of a zero-size array.
  return cml_op_reshape(f, P(f, CML_DTYPE_F32, 0), (int64_t[]){(int64_t)1 << 32, (int64_t)1 << 32},
                        2);
}
static cml_value_t bad_bcast_axes_order(cml_function_t* f) {
  return cml_op_broadcast_in_dim(f, P(f, CML_DTYPE_F32, 2, 3), (int64_t[]){2, 3, 4}, 3,
                                 (int64_t[]){1, 0}, 2);
}
static cml_value_t bad_bcast_dim(cml_function_t* f) {
  return cml_op_broadcast_in_dim(f, P(f, CML_DTYPE_F32, 2), (int64_t[]){3, 4}, 2, (int64_t[]){0},
                                 1);
}
static cml_value_t bad_bcast_count(cml_function_t* f) {
  return cml_op_broadcast_in_dim(f, P(f, CML_DTYPE_F32, 2, 3), (int64_t[]){2, 3}, 2, (int64_t[]){0},
                                 1);
}
static cml_value_t bad_bcast_huge(cml_function_t* f) {
  const int64_t big = (int64_t)1 << 31;
  return cml_op_broadcast_in_dim(f, PS(f, CML_DTYPE_F32), (int64_t[]){big, big, big}, 3, NULL, 0);
}
static cml_value_t bad_slice_order(cml_function_t* f) {
  return cml_op_slice(f, P(f, CML_DTYPE_F32, 5), (int64_t[]){3}, (int64_t[]){2}, NULL, 1);
}
static cml_value_t bad_slice_limit(cml_function_t* f) {
  return cml_op_slice(f, P(f, CML_DTYPE_F32, 5), (int64_t[]){0}, (int64_t[]){6}, NULL, 1);
}
static cml_value_t bad_slice_stride0(cml_function_t* f) {
  return cml_op_slice(f, P(f, CML_DTYPE_F32, 5), (int64_t[]){0}, (int64_t[]){5}, (int64_t[]){0}, 1);
}
static cml_value_t bad_slice_neg_start(cml_function_t* f) {
  return cml_op_slice(f, P(f, CML_DTYPE_F32, 5), (int64_t[]){-1}, (int64_t[]){2}, NULL, 1);
}
static cml_value_t bad_slice_rank(cml_function_t* f) {
  return cml_op_slice(f, P(f, CML_DTYPE_F32, 5, 2), (int64_t[]){0}, (int64_t[]){2}, NULL, 1);
}
static cml_value_t bad_slice_huge_limit(cml_function_t* f) {
  return cml_op_slice(f, P(f, CML_DTYPE_F32, 5), (int64_t[]){0}, (int64_t[]){INT64_MAX},
                      (int64_t[]){INT64_MAX}, 1);
}
static cml_value_t bad_concat_zero(cml_function_t* f) { return cml_op_concatenate(f, 0, NULL, 0); }
static cml_value_t bad_concat_axis(cml_function_t* f) {
  cml_value_t ops[2] = {P(f, CML_DTYPE_F32, 2), P(f, CML_DTYPE_F32, 3)};
  return cml_op_concatenate(f, 1, ops, 2);
}
static cml_value_t bad_concat_dims(cml_function_t* f) {
  cml_value_t ops[2] = {P(f, CML_DTYPE_F32, 2, 3), P(f, CML_DTYPE_F32, 2, 4)};
  return cml_op_concatenate(f, 0, ops, 2);
}
static cml_value_t bad_concat_dtypes(cml_function_t* f) {
  cml_value_t ops[2] = {P(f, CML_DTYPE_F32, 2), P(f, CML_DTYPE_I32, 3)};
  return cml_op_concatenate(f, 0, ops, 2);
}
static cml_value_t bad_concat_null(cml_function_t* f) { return cml_op_concatenate(f, 0, NULL, 2); }
static cml_value_t bad_concat_overflow(cml_function_t* f) {
  int64_t big = (int64_t)1 << 54;  // four of them pass the 2^55-element limit
  cml_value_t x = p(f, CML_DTYPE_BOOL, 1, &big);
  cml_value_t ops[4] = {x, x, x, x};
  return cml_op_concatenate(f, 0, ops, 4);
}
static cml_value_t bad_pad_interior(cml_function_t* f) {
  cml_pad_axis_t a = {0, 0, -1};
  return cml_op_pad(f, P(f, CML_DTYPE_F32, 3), PS(f, CML_DTYPE_F32), &a, 1);
}
static cml_value_t bad_pad_crop(cml_function_t* f) {
  cml_pad_axis_t a = {-3, -1, 0};
  return cml_op_pad(f, P(f, CML_DTYPE_F32, 3), PS(f, CML_DTYPE_F32), &a, 1);
}
static cml_value_t bad_pad_fill(cml_function_t* f) {
  cml_pad_axis_t a = {1, 1, 0};
  return cml_op_pad(f, P(f, CML_DTYPE_F32, 3), P(f, CML_DTYPE_F32, 1), &a, 1);
}
static cml_value_t bad_pad_fill_dtype(cml_function_t* f) {
  cml_pad_axis_t a = {1, 1, 0};
  return cml_op_pad(f, P(f, CML_DTYPE_F32, 3), PS(f, CML_DTYPE_F64), &a, 1);
}
static cml_value_t bad_pad_huge(cml_function_t* f) {
  cml_pad_axis_t a = {INT64_MAX / 2, INT64_MAX / 2, INT64_MAX / 2};
  return cml_op_pad(f, P(f, CML_DTYPE_F32, 3), PS(f, CML_DTYPE_F32), &a, 1);
}
static cml_value_t bad_pad_axes(cml_function_t* f) {
  cml_pad_axis_t a[2] = {{1, 1, 0}, {1, 1, 0}};
  return cml_op_pad(f, P(f, CML_DTYPE_F32, 3), PS(f, CML_DTYPE_F32), a, 2);
}
static cml_value_t bad_iota_axis(cml_function_t* f) {
  cml_shape_t s = API_SHAPE(CML_DTYPE_F32, 2, 3);
  return cml_op_iota(f, &s, 2);
}
static cml_value_t bad_iota_null(cml_function_t* f) { return cml_op_iota(f, NULL, 0); }
static cml_value_t bad_iota_bool(cml_function_t* f) {
  cml_shape_t s = API_SHAPE(CML_DTYPE_BOOL, 3);
  return cml_op_iota(f, &s, 0);
}
static cml_value_t bad_param_shape(cml_function_t* f) {
  cml_shape_t s = {CML_DTYPE_F32, 2, {(int64_t)1 << 40, (int64_t)1 << 40}};
  return cml_parameter(f, "huge", &s);
}
static cml_value_t bad_param_neg_dim(cml_function_t* f) {
  cml_shape_t s = {CML_DTYPE_F32, 1, {-4}};
  return cml_parameter(f, "neg", &s);
}
static cml_value_t bad_param_dtype(cml_function_t* f) {
  cml_shape_t s = {(cml_dtype_t)99, 1, {4}};
  return cml_parameter(f, "bad", &s);
}
static cml_value_t bad_param_rank(cml_function_t* f) {
  cml_shape_t s = {CML_DTYPE_F32, 40, {4}};
  return cml_parameter(f, "bad", &s);
}
// cml_shape_make's invalid shape (here for a negative dim): the message says what makes one.
static cml_value_t bad_param_made_invalid(cml_function_t* f) {
  cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){-3, 4});
  return cml_parameter(f, "made", &s);
}
static cml_value_t bad_param_null(cml_function_t* f) { return cml_parameter(f, "x", NULL); }
static cml_value_t bad_param_dup(cml_function_t* f) {
  cml_shape_t s = API_SHAPE(CML_DTYPE_F32, 2);
  (void)cml_parameter(f, "x", &s);
  return cml_parameter(f, "x", &s);
}
static cml_value_t bad_constant_null(cml_function_t* f) {
  cml_shape_t s = API_SHAPE(CML_DTYPE_F32, 2);
  return cml_constant(f, &s, NULL);
}
static cml_value_t bad_constant_dtype(cml_function_t* f) {
  return cml_constant_scalar_f64(f, CML_DTYPE_INVALID, 1.0);
}
static cml_value_t bad_convert_dtype(cml_function_t* f) {
  return cml_op_convert_dtype(f, P(f, CML_DTYPE_F32, 2), CML_DTYPE_TOKEN);
}
static cml_value_t bad_convert_invalid(cml_function_t* f) {
  return cml_op_convert_dtype(f, P(f, CML_DTYPE_F32, 2), (cml_dtype_t)-3);
}
static cml_value_t bad_bitcast(cml_function_t* f) {
  return cml_op_bitcast(f, P(f, CML_DTYPE_I8, 3), CML_DTYPE_I32);
}
static cml_value_t bad_clamp(cml_function_t* f) {
  return cml_op_clamp(f, P(f, CML_DTYPE_F32, 2), P(f, CML_DTYPE_F32, 3), PS(f, CML_DTYPE_F32));
}
static cml_value_t bad_where_cond(cml_function_t* f) {
  cml_value_t x = P(f, CML_DTYPE_F32, 3);
  return cml_op_where(f, P(f, CML_DTYPE_I32, 3), x, x);
}
static cml_value_t bad_where_branches(cml_function_t* f) {
  return cml_op_where(f, P(f, CML_DTYPE_BOOL, 3), P(f, CML_DTYPE_F32, 3), P(f, CML_DTYPE_I32, 3));
}
static cml_value_t bad_dot_inner(cml_function_t* f) {
  return cml_op_dot(f, P(f, CML_DTYPE_F32, 2, 3), P(f, CML_DTYPE_F32, 4, 2));
}
static cml_value_t bad_dot_rank(cml_function_t* f) {
  return cml_op_dot(f, P(f, CML_DTYPE_F32, 2, 3, 4), P(f, CML_DTYPE_F32, 4, 2));
}
static cml_value_t bad_dot_dtype(cml_function_t* f) {
  return cml_op_dot(f, P(f, CML_DTYPE_F32, 2, 3), P(f, CML_DTYPE_F64, 3, 2));
}
static cml_value_t bad_dot_general_axes(cml_function_t* f) {
  cml_dot_config_t c;
  memset(&c, 0, sizeof c);
  c.lhs_contracting_count = 1;
  c.lhs_contracting_axes[0] = 3;
  c.rhs_contracting_count = 1;
  c.rhs_contracting_axes[0] = 0;
  return cml_op_dot_general(f, P(f, CML_DTYPE_F32, 2, 3), P(f, CML_DTYPE_F32, 3, 2), &c);
}
static cml_value_t bad_dot_general_count(cml_function_t* f) {
  cml_dot_config_t c;
  memset(&c, 0, sizeof c);
  c.lhs_contracting_count = 1000;
  return cml_op_dot_general(f, P(f, CML_DTYPE_F32, 2, 3), P(f, CML_DTYPE_F32, 3, 2), &c);
}
static cml_value_t bad_dot_general_null(cml_function_t* f) {
  return cml_op_dot_general(f, P(f, CML_DTYPE_F32, 2, 3), P(f, CML_DTYPE_F32, 3, 2), NULL);
}
static cml_value_t bad_conv_channels(cml_function_t* f) {
  cml_conv_config_t c;
  memset(&c, 0, sizeof c);
  c.spatial_count = 1;
  c.input_batch_axis = 0;
  c.input_channel_axis = 2;
  c.input_spatial_axes[0] = 1;
  c.kernel_spatial_axes[0] = 0;
  c.kernel_input_channel_axis = 1;
  c.kernel_output_channel_axis = 2;
  c.output_batch_axis = 0;
  c.output_channel_axis = 2;
  c.output_spatial_axes[0] = 1;
  return cml_op_conv_general(f, P(f, CML_DTYPE_F32, 1, 5, 3), P(f, CML_DTYPE_F32, 2, 4, 6), &c);
}
static cml_value_t bad_conv_axes(cml_function_t* f) {
  cml_conv_config_t c;
  memset(&c, 0, sizeof c);
  c.spatial_count = 1;
  c.input_batch_axis = 0;
  c.input_channel_axis = 0;  // same as batch
  c.input_spatial_axes[0] = 9;
  return cml_op_conv_general(f, P(f, CML_DTYPE_F32, 1, 5, 3), P(f, CML_DTYPE_F32, 2, 3, 6), &c);
}
static cml_value_t bad_conv_null(cml_function_t* f) {
  return cml_op_conv_general(f, P(f, CML_DTYPE_F32, 1, 5, 3), P(f, CML_DTYPE_F32, 2, 3, 6), NULL);
}
static cml_value_t bad_conv_spatial_count(cml_function_t* f) {
  cml_conv_config_t c;
  memset(&c, 0, sizeof c);
  c.spatial_count = 100;
  return cml_op_conv_general(f, P(f, CML_DTYPE_F32, 1, 5, 3), P(f, CML_DTYPE_F32, 2, 3, 6), &c);
}
static cml_value_t bad_window_rank(cml_function_t* f) {
  cml_window_config_t w;
  memset(&w, 0, sizeof w);
  w.rank = 1;
  w.window_dims[0] = 2;
  return cml_op_reduce_window(f, P(f, CML_DTYPE_F32, 4, 4), CML_REDUCE_SUM, &w);
}
static cml_value_t bad_window_zero(cml_function_t* f) {
  cml_window_config_t w;
  memset(&w, 0, sizeof w);
  w.rank = 2;
  w.window_dims[0] = 0;
  w.window_dims[1] = 2;
  return cml_op_reduce_window(f, P(f, CML_DTYPE_F32, 4, 4), CML_REDUCE_SUM, &w);
}
static cml_value_t bad_dot_huge(cml_function_t* f) {
  // [2^31, 1] . [1, 2^31] -> 2^62 elements: more than any shape may hold.
  const int64_t big = (int64_t)1 << 31;
  return cml_op_dot(f, p(f, CML_DTYPE_F32, 2, (int64_t[]){big, 1}),
                    p(f, CML_DTYPE_F32, 2, (int64_t[]){1, big}));
}
static cml_value_t bad_conv_huge_pad(cml_function_t* f) {
  cml_conv_config_t c;
  memset(&c, 0, sizeof c);
  c.spatial_count = 1;
  c.input_batch_axis = 0;
  c.input_channel_axis = 2;
  c.input_spatial_axes[0] = 1;
  c.kernel_spatial_axes[0] = 0;
  c.kernel_input_channel_axis = 1;
  c.kernel_output_channel_axis = 2;
  c.output_batch_axis = 0;
  c.output_channel_axis = 2;
  c.output_spatial_axes[0] = 1;
  c.padding_low[0] = INT64_MAX - 2;
  c.padding_high[0] = 5;
  return cml_op_conv_general(f, P(f, CML_DTYPE_F32, 1, 5, 3), P(f, CML_DTYPE_F32, 2, 3, 6), &c);
}
static cml_value_t bad_conv_huge_dilation(cml_function_t* f) {
  cml_conv_config_t c;
  memset(&c, 0, sizeof c);
  c.spatial_count = 1;
  c.input_batch_axis = 0;
  c.input_channel_axis = 2;
  c.input_spatial_axes[0] = 1;
  c.kernel_spatial_axes[0] = 0;
  c.kernel_input_channel_axis = 1;
  c.kernel_output_channel_axis = 2;
  c.output_batch_axis = 0;
  c.output_channel_axis = 2;
  c.output_spatial_axes[0] = 1;
  c.input_dilations[0] = INT64_MAX / 2;
  return cml_op_conv_general(f, P(f, CML_DTYPE_F32, 1, 5, 3), P(f, CML_DTYPE_F32, 2, 3, 6), &c);
}
static cml_value_t bad_pad_huge_interior(cml_function_t* f) {
  cml_pad_axis_t a = {0, 0, (int64_t)1 << 61};
  return cml_op_pad(f, P(f, CML_DTYPE_F32, 3), PS(f, CML_DTYPE_F32), &a, 1);
}
static cml_value_t bad_window_type(cml_function_t* f) {
  cml_window_config_t w;
  memset(&w, 0, sizeof w);
  w.rank = 1;
  w.window_dims[0] = 2;
  return cml_op_reduce_window(f, P(f, CML_DTYPE_F32, 4), (cml_reduce_type_t)77, &w);
}
static cml_value_t bad_window_null(cml_function_t* f) {
  return cml_op_reduce_window(f, P(f, CML_DTYPE_F32, 4), CML_REDUCE_SUM, NULL);
}
static cml_value_t bad_window_huge_pad(cml_function_t* f) {
  cml_window_config_t w;
  memset(&w, 0, sizeof w);
  w.rank = 1;
  w.window_dims[0] = 2;
  w.strides[0] = 1;
  w.padding_low[0] = INT64_MAX;
  w.padding_high[0] = INT64_MAX;
  return cml_op_reduce_window(f, P(f, CML_DTYPE_F32, 4), CML_REDUCE_SUM, &w);
}
static cml_value_t bad_gather_sizes(cml_function_t* f) {
  cml_gather_dims_t g;
  memset(&g, 0, sizeof g);
  g.index_vector_axis = 1;
  g.offset_output_axis_count = 1;
  g.offset_output_axes[0] = 1;
  g.collapsed_slice_axis_count = 1;
  g.collapsed_slice_axes[0] = 0;
  g.start_index_map_count = 1;
  g.start_index_map[0] = 0;
  g.slice_size_count = 2;
  g.slice_sizes[0] = 1;
  g.slice_sizes[1] = 9;  // operand axis 1 has 3
  return cml_op_gather(f, P(f, CML_DTYPE_F32, 5, 3), P(f, CML_DTYPE_I32, 4), &g);
}
// A collapsed axis of slice size 0 (StableHLO allows <= 1): XLA's compiler aborted on it and
// the c kernel read one element anyway.
static cml_value_t bad_gather_collapsed_zero(cml_function_t* f) {
  cml_gather_dims_t g;
  memset(&g, 0, sizeof g);
  g.index_vector_axis = 0;
  g.offset_output_axis_count = 1;
  g.offset_output_axes[0] = 0;
  g.collapsed_slice_axis_count = 1;
  g.collapsed_slice_axes[0] = 0;
  g.start_index_map_count = 1;
  g.start_index_map[0] = 0;
  g.slice_size_count = 2;
  g.slice_sizes[0] = 0;
  g.slice_sizes[1] = 4;
  return cml_op_gather(f, P(f, CML_DTYPE_I32, 3, 4), P(f, CML_DTYPE_I32, 1), &g);
}
static cml_value_t bad_gather_float_indices(cml_function_t* f) {
  cml_gather_dims_t g;
  memset(&g, 0, sizeof g);
  g.index_vector_axis = 1;
  g.offset_output_axis_count = 1;
  g.offset_output_axes[0] = 1;
  g.collapsed_slice_axis_count = 1;
  g.collapsed_slice_axes[0] = 0;
  g.start_index_map_count = 1;
  g.start_index_map[0] = 0;
  g.slice_size_count = 2;
  g.slice_sizes[0] = 1;
  g.slice_sizes[1] = 3;
  return cml_op_gather(f, P(f, CML_DTYPE_F32, 5, 3), P(f, CML_DTYPE_F32, 4), &g);
}
static cml_value_t bad_gather_null(cml_function_t* f) {
  return cml_op_gather(f, P(f, CML_DTYPE_F32, 5, 3), P(f, CML_DTYPE_I32, 4), NULL);
}
static cml_value_t bad_gather_garbage(cml_function_t* f) {
  cml_gather_dims_t g;
  memset(&g, 0xff, sizeof g);  // every count -1, every axis -1
  return cml_op_gather(f, P(f, CML_DTYPE_F32, 5, 3), P(f, CML_DTYPE_I32, 4), &g);
}
static cml_value_t bad_scatter_garbage(cml_function_t* f) {
  cml_scatter_dims_t s;
  memset(&s, 0x7f, sizeof s);
  return cml_op_scatter_sum(f, P(f, CML_DTYPE_F32, 5, 3), P(f, CML_DTYPE_I32, 4, 1),
                            P(f, CML_DTYPE_F32, 4, 3), &s);
}
// Counts and offset axes out of range: the messages name the counts and every operand's shape.
static cml_value_t bad_scatter_counts(cml_function_t* f) {
  cml_scatter_dims_t s;
  memset(&s, 0, sizeof s);
  s.index_vector_axis = 1;
  s.update_window_axis_count = 99;
  return cml_op_scatter_sum(f, P(f, CML_DTYPE_F32, 5, 3), P(f, CML_DTYPE_I32, 4, 1),
                            P(f, CML_DTYPE_F32, 4, 3), &s);
}
static cml_value_t bad_gather_offset_axis(cml_function_t* f) {
  cml_gather_dims_t g;
  memset(&g, 0, sizeof g);
  g.index_vector_axis = 1;
  g.offset_output_axis_count = 1;
  g.offset_output_axes[0] = 5;
  g.collapsed_slice_axis_count = 1;
  g.start_index_map_count = 1;
  g.slice_size_count = 2;
  g.slice_sizes[0] = 1;
  g.slice_sizes[1] = 3;
  return cml_op_gather(f, P(f, CML_DTYPE_F32, 5, 3), P(f, CML_DTYPE_I32, 4, 1), &g);
}
static cml_value_t bad_scatter_op(cml_function_t* f) {
  cml_scatter_dims_t s;
  memset(&s, 0, sizeof s);
  return cml_op_scatter(f, CML_OP_ADD, P(f, CML_DTYPE_F32, 5, 3), P(f, CML_DTYPE_I32, 4, 1),
                        P(f, CML_DTYPE_F32, 4, 3), &s);
}
static cml_value_t bad_dynamic_slice_count(cml_function_t* f) {
  cml_value_t st = PS(f, CML_DTYPE_I32);  // one start (rank 1) for an operand of rank 2
  return cml_op_dynamic_slice(f, P(f, CML_DTYPE_F32, 5, 3), &st, (int64_t[]){2}, 1);
}
static cml_value_t bad_dynamic_slice_size(cml_function_t* f) {
  cml_value_t st[2] = {PS(f, CML_DTYPE_I32), PS(f, CML_DTYPE_I32)};
  return cml_op_dynamic_slice(f, P(f, CML_DTYPE_F32, 5, 3), st, (int64_t[]){2, 4}, 2);
}
static cml_value_t bad_dynamic_slice_null(cml_function_t* f) {
  return cml_op_dynamic_slice(f, P(f, CML_DTYPE_F32, 5, 3), NULL, (int64_t[]){2, 2}, 2);
}
static cml_value_t bad_dynamic_slice_float_start(cml_function_t* f) {
  cml_value_t st[2] = {PS(f, CML_DTYPE_I32), PS(f, CML_DTYPE_F32)};
  return cml_op_dynamic_slice(f, P(f, CML_DTYPE_F32, 5, 3), st, (int64_t[]){2, 2}, 2);
}
static cml_value_t bad_dynamic_slice_mixed_starts(cml_function_t* f) {
  cml_value_t st[2] = {PS(f, CML_DTYPE_I32), PS(f, CML_DTYPE_I64)};
  return cml_op_dynamic_slice(f, P(f, CML_DTYPE_F32, 5, 3), st, (int64_t[]){2, 2}, 2);
}
static cml_value_t bad_dus_update(cml_function_t* f) {
  cml_value_t st[2] = {PS(f, CML_DTYPE_I32), PS(f, CML_DTYPE_I32)};
  return cml_op_dynamic_update_slice(f, P(f, CML_DTYPE_F32, 5, 3), P(f, CML_DTYPE_F32, 6, 1), st,
                                     2);
}
static cml_value_t bad_argmax_dtype(cml_function_t* f) {
  return cml_op_arg_min_max(f, P(f, CML_DTYPE_F32, 5, 3), 1, CML_DTYPE_F32, false);
}
static cml_value_t bad_argmax_axis(cml_function_t* f) {
  return cml_op_arg_min_max(f, P(f, CML_DTYPE_F32, 5, 3), 2, CML_DTYPE_I32, false);
}
static cml_value_t bad_argmax_narrow(cml_function_t* f) {  // index 299 does not fit Int8
  return cml_op_arg_min_max(f, P(f, CML_DTYPE_F32, 300), 0, CML_DTYPE_I8, false);
}
static cml_value_t bad_fft_real(cml_function_t* f) {
  return cml_op_fft(f, P(f, CML_DTYPE_F32, 8), CML_FFT_FORWARD, (int64_t[]){8}, 1);
}
static cml_value_t bad_fft_len(cml_function_t* f) {
  return cml_op_fft(f, P(f, CML_DTYPE_C64, 8), CML_FFT_FORWARD, (int64_t[]){7}, 1);
}
static cml_value_t bad_fft_null(cml_function_t* f) {
  return cml_op_fft(f, P(f, CML_DTYPE_C64, 8), CML_FFT_FORWARD, NULL, 1);
}
static cml_value_t bad_fft_count(cml_function_t* f) {
  return cml_op_fft(f, P(f, CML_DTYPE_C64, 8), CML_FFT_FORWARD, (int64_t[]){8, 8, 8, 8}, 4);
}
static cml_value_t bad_rng_state(cml_function_t* f) {
  cml_shape_t s = API_SHAPE(CML_DTYPE_U32, 4);
  cml_value_t a, b;
  (void)cml_op_rng_bit_generator(f, P(f, CML_DTYPE_U64, 2), &s, &a, &b);
  return b;
}
static cml_value_t bad_rng_null(cml_function_t* f) {
  cml_value_t a;
  (void)cml_op_rng_bit_generator(f, P(f, CML_DTYPE_U64, 3), NULL, &a, NULL);
  return a;
}
static cml_value_t bad_batch_norm(cml_function_t* f) {
  cml_value_t s = P(f, CML_DTYPE_F32, 4);
  return cml_op_batch_norm_inference(f, P(f, CML_DTYPE_F32, 2, 3), s, s, s, s, 1e-3f, 1);
}
static cml_value_t bad_batch_norm_axis(cml_function_t* f) {
  cml_value_t s = P(f, CML_DTYPE_F32, 3);
  return cml_op_batch_norm_inference(f, P(f, CML_DTYPE_F32, 2, 3), s, s, s, s, 1e-3f, 5);
}
static cml_value_t bad_select_scatter_op(cml_function_t* f) {
  cml_window_config_t w;
  memset(&w, 0, sizeof w);
  w.rank = 1;
  w.window_dims[0] = 2;
  return cml_op_select_and_scatter(f, CML_OP_MAX, P(f, CML_DTYPE_F32, 4), P(f, CML_DTYPE_F32, 2),
                                   &w);
}
static cml_value_t bad_select_scatter_source(cml_function_t* f) {
  cml_window_config_t w;
  memset(&w, 0, sizeof w);
  w.rank = 1;
  w.window_dims[0] = 2;
  return cml_op_select_and_scatter(f, CML_OP_SELECT_AND_SCATTER_MAX, P(f, CML_DTYPE_F32, 4),
                                   P(f, CML_DTYPE_F32, 3), &w);
}
static cml_value_t bad_reverse_axis(cml_function_t* f) {
  return cml_op_reverse(f, P(f, CML_DTYPE_F32, 4), (int64_t[]){1}, 1);
}
static cml_value_t bad_invalid_operand(cml_function_t* f) {
  return cml_op_exp(f, CML_VALUE_INVALID);
}
static cml_value_t bad_unknown_value(cml_function_t* f) {
  cml_value_t x = P(f, CML_DTYPE_F32, 4);
  return cml_op_exp(f, x + 1000);
}
static cml_value_t bad_garbage_value(cml_function_t* f) { return cml_op_exp(f, 0xdeadbeefu); }
static cml_value_t bad_barrier_null(cml_function_t* f) {
  cml_value_t out[2];
  (void)cml_op_optimization_barrier(f, NULL, 2, out);
  return out[0];
}
static cml_value_t bad_barrier_out_null(cml_function_t* f) {
  cml_value_t x = P(f, CML_DTYPE_F32, 4);
  if (cml_op_optimization_barrier(f, &x, 1, NULL)) return x;
  return CML_VALUE_INVALID;
}
static cml_value_t bad_sched_barrier_null(cml_function_t* f) {
  return cml_op_scheduling_barrier(f, P(f, CML_DTYPE_F32, 4), NULL, 3);
}
static cml_value_t bad_bn_training_null(cml_function_t* f) {
  cml_value_t s = P(f, CML_DTYPE_F32, 3);
  if (cml_op_batch_norm_training(f, P(f, CML_DTYPE_F32, 2, 3), s, s, 1e-3f, 1, NULL)) return s;
  return CML_VALUE_INVALID;
}

#define CASE(fn, code, ...)              \
  {                                      \
#fn, fn, code, { __VA_ARGS__, NULL } \
  }
#define IA CML_STATUS_INVALID_ARGUMENT
static const bad_case_t kBadCases[] = {
    CASE(bad_add_shapes, IA, "Add", "[2, 3]", "[3, 2]"),
    CASE(bad_add_dtypes, IA, "Add", "Float32", "Float64"),
    CASE(bad_add_rank, IA, "Add", "[2, 3]", "[3]"),
    CASE(bad_bitand_float, IA, "BitwiseAnd", "Float32"),
    CASE(bad_sin_int, IA, "Sin", "Int32"),
    CASE(bad_logical_not_f32, IA, "LogicalNot", "Float32"),
    CASE(bad_unary_by_op, IA, "Add"),
    CASE(bad_binary_by_op, IA, "Sin"),
    CASE(bad_binary_op_count, IA, NULL),
    CASE(bad_reduce_by_op, IA, "Exp"),
    CASE(bad_reduce_axis, IA, "ReduceSum", "5"),
    CASE(bad_reduce_dup_axes, IA, "ReduceSum"),
    CASE(bad_reduce_neg_axis, IA, "ReduceMax"),
    CASE(bad_reduce_null_axes, IA, "ReduceSum"),
    CASE(bad_reduce_logical_f32, IA, "ReduceLogicalAnd", "Float32"),
    CASE(bad_transpose_dup, IA, "Transpose"),
    CASE(bad_transpose_len, IA, "Transpose"),
    CASE(bad_transpose_range, IA, "Transpose"),
    CASE(bad_transpose_null, IA, "Transpose: the permutation is NULL"),
    CASE(bad_reshape_count, IA, "Reshape", "[2, 3]"),
    CASE(bad_reshape_neg, IA, "Reshape"),
    CASE(bad_reshape_rank, IA, "Reshape"),
    CASE(bad_reshape_neg_rank, IA, "Reshape"),
    CASE(bad_reshape_null, IA, "Reshape: the new dimensions are NULL for rank 2"),
    CASE(bad_reshape_overflow, IA, "Reshape"),
    CASE(bad_bcast_axes_order, IA, "BroadcastInDim"),
    CASE(bad_bcast_dim, IA, "BroadcastInDim"),
    CASE(bad_bcast_count, IA, "BroadcastInDim"),
    CASE(bad_bcast_huge, IA, "BroadcastInDim"),
    CASE(bad_slice_order, IA, "Slice"),
    CASE(bad_slice_limit, IA, "Slice"),
    CASE(bad_slice_stride0, IA, "Slice"),
    CASE(bad_slice_neg_start, IA, "Slice"),
    CASE(bad_slice_rank, IA, "Slice"),
    CASE(bad_slice_huge_limit, IA, "Slice"),
    CASE(bad_concat_zero, IA, "Concatenate"),
    CASE(bad_concat_axis, IA, "Concatenate"),
    CASE(bad_concat_dims, IA, "Concatenate", "in axis 1", "(only the concatenation axis 0"),
    CASE(bad_concat_dtypes, IA, "Concatenate", "has another dtype"),
    CASE(bad_concat_null, IA, "Concatenate"),
    CASE(bad_concat_overflow, IA, "Concatenate"),
    CASE(bad_pad_interior, IA, "Pad"),
    CASE(bad_pad_crop, IA, "Pad"),
    CASE(bad_pad_fill, IA, "Pad"),
    CASE(bad_pad_fill_dtype, IA, "Pad"),
    CASE(bad_pad_huge, IA, "Pad"),
    CASE(bad_pad_axes, IA, "Pad"),
    CASE(bad_iota_axis, IA, "Iota"),
    CASE(bad_iota_null, IA, "Iota"),
    CASE(bad_iota_bool, IA, "Iota"),
    CASE(bad_param_shape, IA, "Parameter"),
    CASE(bad_param_neg_dim, IA, "Parameter"),
    CASE(bad_param_made_invalid, IA, "Parameter", "a negative dimension", "cml_shape_init"),
    CASE(bad_param_dtype, IA, "Parameter"),
    CASE(bad_param_rank, IA, "Parameter"),
    CASE(bad_param_null, IA, "Parameter"),
    CASE(bad_param_dup, IA, "Parameter", "\"x\""),
    CASE(bad_constant_null, IA, "Constant"),
    CASE(bad_constant_dtype, IA, "Constant"),
    CASE(bad_convert_dtype, IA, "ConvertDType", "TOKEN"),
    CASE(bad_convert_invalid, IA, "ConvertDType"),
    CASE(bad_bitcast, IA, "Bitcast"),
    CASE(bad_clamp, IA, "Clamp"),
    CASE(bad_where_cond, IA, "Where"),
    CASE(bad_where_branches, IA, "Where"),
    CASE(bad_dot_inner, IA, "Dot", "[2, 3]"),
    CASE(bad_dot_rank, IA, "Dot"),
    CASE(bad_dot_dtype, IA, "Dot"),
    CASE(bad_dot_general_axes, IA, "DotGeneral"),
    CASE(bad_dot_general_count, IA, "DotGeneral"),
    CASE(bad_dot_general_null, IA, "DotGeneral"),
    CASE(bad_conv_channels, IA, "ConvGeneral"),
    CASE(bad_conv_axes, IA, "ConvGeneral"),
    CASE(bad_conv_null, IA, "ConvGeneral"),
    CASE(bad_conv_spatial_count, IA, "ConvGeneral"),
    CASE(bad_window_rank, IA, "ReduceWindow"),
    CASE(bad_window_zero, IA, "ReduceWindow"),
    CASE(bad_window_type, IA, "ReduceWindow", "type 77", "(Float32)[4]"),
    CASE(bad_window_null, IA, "ReduceWindow"),
    CASE(bad_window_huge_pad, IA, "ReduceWindow"),
    CASE(bad_dot_huge, IA, "Dot"),
    CASE(bad_conv_huge_pad, IA, "ConvGeneral"),
    CASE(bad_conv_huge_dilation, IA, "ConvGeneral"),
    CASE(bad_pad_huge_interior, IA, "Pad"),
    CASE(bad_gather_sizes, IA, "Gather"),
    CASE(bad_gather_collapsed_zero, IA, "Gather: slice sizes [0, 4]", "(Int32)[3, 4]",
         "axis 0: a collapsed axis takes size 1"),
    CASE(bad_gather_float_indices, IA, "Gather"),
    CASE(bad_gather_null, IA, "Gather"),
    CASE(bad_gather_garbage, IA, "Gather"),
    CASE(bad_scatter_garbage, IA, "Scatter"),
    CASE(bad_scatter_op, IA, "Add"),
    CASE(bad_scatter_counts, IA, "ScatterSum: dimension number counts out of range",
         "update_window_axis_count 99",
         "operand (Float32)[5, 3], indices (Int32)[4, 1], updates "
         "(Float32)[4, 3]"),
    CASE(bad_gather_offset_axis, IA, "Gather: offset_output_axes [5]",
         "operand (Float32)[5, 3], indices (Int32)[4, 1]"),
    CASE(bad_dynamic_slice_count, IA, "DynamicSlice"),
    CASE(bad_dynamic_slice_size, IA, "DynamicSlice"),
    CASE(bad_dynamic_slice_null, IA, "DynamicSlice"),
    CASE(bad_dynamic_slice_float_start, IA, "DynamicSlice", "start index #1 (Float32)",
         "must be an integer scalar"),
    CASE(bad_dynamic_slice_mixed_starts, IA, "DynamicSlice", "start index #1 (Int64)",
         "the dtype of start index #0 (Int32)"),
    CASE(bad_dus_update, IA, "DynamicUpdateSlice"),
    CASE(bad_argmax_dtype, IA, "ArgMinMax"),
    CASE(bad_argmax_axis, IA, "ArgMinMax"),
    CASE(bad_argmax_narrow, IA, "ArgMinMax: axis 0 of (Float32)[300] has 300 elements",
         "last index 299 does not fit the output dtype Int8 (at most 127)"),
    CASE(bad_fft_real, IA, "FFT"),
    CASE(bad_fft_len, IA, "FFT"),
    CASE(bad_fft_null, IA, "FFT"),
    CASE(bad_fft_count, IA, "FFT"),
    CASE(bad_rng_state, IA, "RNGBitGenerator"),
    CASE(bad_rng_null, IA, "RNGBitGenerator"),
    CASE(bad_batch_norm, IA, "BatchNorm"),
    CASE(bad_batch_norm_axis, IA, "BatchNorm"),
    CASE(bad_select_scatter_op, IA, "Max", "operand (Float32)[4]", "source (Float32)[2]"),
    CASE(bad_select_scatter_source, IA, "SelectAndScatter"),
    CASE(bad_reverse_axis, IA, "Reverse"),
    CASE(bad_invalid_operand, IA, "Exp"),
    CASE(bad_unknown_value, IA, "Exp"),
    CASE(bad_garbage_value, IA, "Exp"),
    CASE(bad_barrier_null, IA, "OptimizationBarrier"),
    CASE(bad_barrier_out_null, IA, "OptimizationBarrier"),
    CASE(bad_sched_barrier_null, IA, "SchedulingBarrier"),
    CASE(bad_bn_training_null, IA, "BatchNormForTraining"),
};

TEST(builder_bad_ops) {
  cml_backend_t* backend = backend_c();
  ASSERT_TRUE(backend);
  int bad = 0;
  // API_ERRORS_CASE=<name> runs one case (useful under UBSan, which stops at the first error).
  const char* only = getenv("API_ERRORS_CASE");
  for (size_t i = 0; i < sizeof kBadCases / sizeof kBadCases[0]; ++i) {
    const bad_case_t* c = &kBadCases[i];
    if (only && strcmp(only, c->name) != 0) continue;
    cml_builder_t* b = NULL;
    ASSERT_STATUS_OK(cml_builder_create(backend, c->name, &b));
    cml_function_t* f = cml_builder_main(b);
    cml_value_t v = c->fn(f);
    char msg[2048];
    cml_status_code_t code = api_code_msg(cml_builder_status(b), msg, sizeof msg);
    bool ok = v == CML_VALUE_INVALID && code == c->code;
    for (int k = 0; ok && c->needles[k]; ++k) ok = strstr(msg, c->needles[k]) != NULL;
    if (!ok) {
      fprintf(stderr, "case %s: value %u, want %s, got %s: %s\n", c->name, (unsigned)v,
              cml_status_code_name(c->code), cml_status_code_name(code), msg);
      ++bad;
    }
    // The first error also surfaces from return and compile, and nothing leaks.
    cml_executable_t* exe = NULL;
    cml_status_t st = cml_function_return(f, &v, 1);
    if (st == CML_OK) st = cml_builder_compile(b, &exe);
    if (st == CML_OK || exe) {
      fprintf(stderr, "case %s: compiled despite the error\n", c->name);
      ++bad;
    }
    cml_status_free(st);
    cml_executable_release(exe);
    cml_builder_destroy(b);
  }
  ASSERT_EQ_INT(bad, 0);
}

//===--- functions, closures and control flow misuse ---===//

// Creates a builder on the c backend.
static cml_builder_t* new_builder(void) {
  cml_builder_t* b = NULL;
  cml_status_t st = cml_builder_create(backend_c(), "t", &b);
  cml_status_free(st);
  return b;
}

static cml_status_code_t builder_code(cml_builder_t* b, char* msg, size_t size) {
  return api_code_msg(cml_builder_status(b), msg, size);
}

// The largest axis each narrow output dtype can index builds (Uint8: 256 elements, Int8: 128);
// one more element is refused (kBadCases' bad_argmax_narrow has the message).
TEST(arg_min_max_output_dtype_limits) {
  static const struct {
    cml_dtype_t dtype;
    int64_t fits;
  } kLimits[] = {{CML_DTYPE_U8, 256}, {CML_DTYPE_I8, 128}, {CML_DTYPE_I16, 32768}};
  for (size_t i = 0; i < sizeof kLimits / sizeof kLimits[0]; ++i) {
    for (int64_t extra = 0; extra < 2; ++extra) {
      cml_builder_t* b = NULL;
      ASSERT_STATUS_OK(cml_builder_create(backend_c(), "argmax", &b));
      cml_function_t* f = cml_builder_main(b);
      const int64_t n = kLimits[i].fits + extra;
      cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 1, &n);
      (void)cml_op_arg_min_max(f, cml_parameter(f, "x", &s), 0, kLimits[i].dtype, true);
      cml_status_t st = cml_builder_status(b);
      ASSERT_EQ_INT(cml_status_code(st), extra ? CML_STATUS_INVALID_ARGUMENT : CML_STATUS_OK);
      cml_status_free(st);
      cml_builder_destroy(b);
    }
  }
}

TEST(foreign_values) {
  cml_builder_t* a = new_builder();
  cml_builder_t* b = new_builder();
  ASSERT_TRUE(a && b);
  cml_value_t xa = P(cml_builder_main(a), CML_DTYPE_F32, 3);
  cml_value_t xb = P(cml_builder_main(b), CML_DTYPE_F32, 3);
  ASSERT_EQ_INT(cml_op_add(cml_builder_main(b), xa, xb), CML_VALUE_INVALID);
  char msg[1024];
  ASSERT_EQ_INT(builder_code(b, msg, sizeof msg), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(msg, "Add");
  ASSERT_CONTAINS(msg, "another builder");
  // Returning a foreign value from a healthy builder.
  ASSERT_STATUS_CODE(cml_function_return(cml_builder_main(a), &xb, 1), CML_STATUS_INVALID_ARGUMENT);
  // Many builders: values of one must never be mistaken for another's (tags wrap).
  int collisions = 0;
  for (int i = 0; i < 300; ++i) {
    cml_builder_t* c = new_builder();
    ASSERT_TRUE(c);
    (void)P(cml_builder_main(c), CML_DTYPE_F32, 3);
    if (cml_op_neg(cml_builder_main(c), xa) != CML_VALUE_INVALID) ++collisions;
    cml_builder_destroy(c);
  }
  cml_builder_destroy(a);
  cml_builder_destroy(b);
  if (collisions) {
    fprintf(stderr, "foreign_values: %d of 300 builders accepted a value of another builder\n",
            collisions);
  }
  ASSERT_EQ_INT(collisions, 0);
}

TEST(non_ancestor_values) {
  char msg[1024];
  // A closure's value used in its parent.
  {
    cml_builder_t* b = new_builder();
    cml_function_t* f = cml_builder_main(b);
    cml_function_t* c = NULL;
    ASSERT_STATUS_OK(cml_function_new_closure(f, &c));
    cml_value_t y = P(c, CML_DTYPE_F32, 2);
    ASSERT_EQ_INT(cml_op_neg(f, y), CML_VALUE_INVALID);
    ASSERT_EQ_INT(builder_code(b, msg, sizeof msg), CML_STATUS_INVALID_ARGUMENT);
    ASSERT_CONTAINS(msg, "Neg");
    cml_builder_destroy(b);
  }
  // A sibling closure's value.
  {
    cml_builder_t* b = new_builder();
    cml_function_t* f = cml_builder_main(b);
    cml_function_t *c1 = NULL, *c2 = NULL;
    ASSERT_STATUS_OK(cml_function_new_closure(f, &c1));
    ASSERT_STATUS_OK(cml_function_new_closure(f, &c2));
    cml_value_t y = P(c1, CML_DTYPE_F32, 2);
    ASSERT_EQ_INT(cml_op_neg(c2, y), CML_VALUE_INVALID);
    ASSERT_EQ_INT(builder_code(b, msg, sizeof msg), CML_STATUS_INVALID_ARGUMENT);
    cml_builder_destroy(b);
  }
  // A named function using main's value, and main returning a value of a named function.
  {
    cml_builder_t* b = new_builder();
    cml_function_t* f = cml_builder_main(b);
    cml_function_t* g = NULL;
    ASSERT_STATUS_OK(cml_builder_new_function(b, "g", &g));
    cml_value_t x = P(f, CML_DTYPE_F32, 2);
    ASSERT_EQ_INT(cml_op_neg(g, x), CML_VALUE_INVALID);
    ASSERT_EQ_INT(builder_code(b, msg, sizeof msg), CML_STATUS_INVALID_ARGUMENT);
    cml_builder_destroy(b);
  }
  {
    cml_builder_t* b = new_builder();
    cml_function_t* f = cml_builder_main(b);
    cml_function_t* g = NULL;
    ASSERT_STATUS_OK(cml_builder_new_function(b, "g", &g));
    cml_value_t y = P(g, CML_DTYPE_F32, 2);
    ASSERT_STATUS_CODE(cml_function_return(f, &y, 1), CML_STATUS_INVALID_ARGUMENT);
    cml_builder_destroy(b);
  }
  // A grandchild closure captures through its parent: valid, and computes the right thing.
  {
    cml_builder_t* b = new_builder();
    cml_function_t* f = cml_builder_main(b);
    cml_value_t x = P(f, CML_DTYPE_F32, 2);
    cml_function_t *c1 = NULL, *c2 = NULL;
    ASSERT_STATUS_OK(cml_function_new_closure(f, &c1));
    ASSERT_STATUS_OK(cml_function_new_closure(c1, &c2));
    cml_value_t z = cml_op_neg(c2, x);
    ASSERT_NE_INT(z, CML_VALUE_INVALID);
    ASSERT_STATUS_OK(cml_builder_status(b));
    cml_builder_destroy(b);
  }
}

TEST(return_misuse) {
  char msg[1024];
  cml_builder_t* b = new_builder();
  cml_function_t* f = cml_builder_main(b);
  cml_value_t x = P(f, CML_DTYPE_F32, 2);
  ASSERT_STATUS_CODE(cml_function_return(f, NULL, 1), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_function_return(f, &x, 0), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_function_return(NULL, &x, 1), CML_STATUS_INVALID_ARGUMENT);
  cml_value_t inv = CML_VALUE_INVALID;
  ASSERT_STATUS_CODE(cml_function_return(f, &inv, 1), CML_STATUS_INVALID_ARGUMENT);
  // The invalid return must not have frozen main; a proper return still works...
  cml_builder_t* b2 = new_builder();
  cml_function_t* f2 = cml_builder_main(b2);
  cml_value_t x2 = P(f2, CML_DTYPE_F32, 2);
  ASSERT_STATUS_OK(cml_function_return(f2, &x2, 1));
  ASSERT_EQ_INT(cml_function_output_count(f2), 1);
  ASSERT_STATUS_CODE(cml_function_return(f2, &x2, 1), CML_STATUS_FAILED_PRECONDITION);
  // ... and the second return did not poison the builder: the complete module compiles.
  ASSERT_EQ_INT(builder_code(b2, msg, sizeof msg), CML_STATUS_OK);
  cml_executable_t* exe2 = NULL;
  ASSERT_STATUS_OK(cml_builder_compile(b2, &exe2));
  ASSERT_EQ_INT(cml_executable_output_count(exe2), 1);
  cml_executable_release(exe2);
  ASSERT_STATUS_CODE(cml_function_return(f2, &x2, 1), CML_STATUS_FAILED_PRECONDITION);
  ASSERT_EQ_INT(builder_code(b2, msg, sizeof msg), CML_STATUS_OK);
  cml_builder_destroy(b2);
  // Ops after return fail, naming the op.
  b2 = new_builder();
  f2 = cml_builder_main(b2);
  x2 = P(f2, CML_DTYPE_F32, 2);
  ASSERT_STATUS_OK(cml_function_return(f2, &x2, 1));
  ASSERT_EQ_INT(cml_op_neg(f2, x2), CML_VALUE_INVALID);
  ASSERT_EQ_INT(builder_code(b2, msg, sizeof msg), CML_STATUS_FAILED_PRECONDITION);
  ASSERT_CONTAINS(msg, "Neg");
  cml_builder_destroy(b2);
  cml_builder_destroy(b);
}

TEST(compile_misuse) {
  // Compiling without a return.
  cml_builder_t* b = new_builder();
  (void)P(cml_builder_main(b), CML_DTYPE_F32, 2);
  cml_executable_t* exe = (cml_executable_t*)(uintptr_t)1;
  ASSERT_STATUS_CODE(cml_builder_compile(b, &exe), CML_STATUS_FAILED_PRECONDITION);
  ASSERT_TRUE(exe == NULL);
  ASSERT_STATUS_CODE(cml_builder_compile(b, NULL), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_builder_compile(NULL, &exe), CML_STATUS_INVALID_ARGUMENT);
  cml_builder_destroy(b);
  // Compiling twice, and ops after compile.
  b = new_builder();
  cml_function_t* f = cml_builder_main(b);
  cml_value_t x = P(f, CML_DTYPE_F32, 2);
  ASSERT_STATUS_OK(cml_function_return(f, &x, 1));
  ASSERT_STATUS_OK(cml_builder_compile(b, &exe));
  cml_executable_t* exe2 = NULL;
  ASSERT_STATUS_CODE(cml_builder_compile(b, &exe2), CML_STATUS_FAILED_PRECONDITION);
  ASSERT_TRUE(exe2 == NULL);
  cml_function_t* g = NULL;
  ASSERT_STATUS_CODE(cml_builder_new_function(b, "g", &g), CML_STATUS_FAILED_PRECONDITION);
  cml_builder_destroy(b);
  // The executable outlives its builder: an identity.
  float in[2] = {1.5f, -2}, out[2] = {0, 0};
  cml_status_t st = api_run(backend_c(), exe, (const void* const[]){in}, (void* const[]){out});
  cml_executable_release(exe);
  ASSERT_STATUS_OK(st);
  ASSERT_EQ_DBL(out[0], 1.5);
  ASSERT_EQ_DBL(out[1], -2);
  // A closure returned but main not returned.
  b = new_builder();
  f = cml_builder_main(b);
  cml_function_t* c = NULL;
  ASSERT_STATUS_OK(cml_function_new_closure(f, &c));
  x = P(c, CML_DTYPE_F32, 2);
  ASSERT_STATUS_OK(cml_function_return(c, &x, 1));
  ASSERT_STATUS_CODE(cml_builder_compile(b, &exe), CML_STATUS_FAILED_PRECONDITION);
  cml_builder_destroy(b);
  // Function names.
  b = new_builder();
  ASSERT_STATUS_CODE(cml_builder_new_function(b, "main", &g), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_builder_new_function(b, "", &g), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_builder_new_function(b, NULL, &g), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_builder_new_function(b, "a b", &g), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_OK(cml_builder_new_function(b, "g", &g));
  ASSERT_STATUS_CODE(cml_builder_new_function(b, "g", &g), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_TRUE(g == NULL);
  ASSERT_STATUS_CODE(cml_builder_new_function(NULL, "h", &g), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_builder_new_function(b, "h", NULL), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_function_new_closure(NULL, &c), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_function_new_closure(cml_builder_main(b), NULL),
                     CML_STATUS_INVALID_ARGUMENT);
  cml_builder_destroy(b);
}

// Builds one control-flow misuse and checks the sticky error.
typedef bool (*bad_control_fn)(cml_function_t* f);

static bool ctl_while_unreturned(cml_function_t* f) {
  cml_value_t x = PS(f, CML_DTYPE_I32), out;
  cml_function_t *cond = NULL, *body = NULL;
  cml_status_free(cml_function_new_closure(f, &cond));
  cml_status_free(cml_function_new_closure(f, &body));
  cml_value_t ci = PS(cond, CML_DTYPE_I32);
  (void)ci;
  cml_value_t bi = PS(body, CML_DTYPE_I32);
  cml_status_free(cml_function_return(body, &bi, 1));
  return cml_op_while(f, cond, body, &x, 1, &out);
}
static bool ctl_while_cond_not_bool(cml_function_t* f) {
  cml_value_t x = PS(f, CML_DTYPE_I32), out;
  cml_function_t *cond = NULL, *body = NULL;
  cml_status_free(cml_function_new_closure(f, &cond));
  cml_status_free(cml_function_new_closure(f, &body));
  cml_value_t ci = PS(cond, CML_DTYPE_I32);
  cml_status_free(cml_function_return(cond, &ci, 1));
  cml_value_t bi = PS(body, CML_DTYPE_I32);
  cml_status_free(cml_function_return(body, &bi, 1));
  return cml_op_while(f, cond, body, &x, 1, &out);
}
static bool ctl_while_body_shape(cml_function_t* f) {
  cml_value_t x = PS(f, CML_DTYPE_I32), out;
  cml_function_t *cond = NULL, *body = NULL;
  cml_status_free(cml_function_new_closure(f, &cond));
  cml_status_free(cml_function_new_closure(f, &body));
  cml_value_t ci = PS(cond, CML_DTYPE_I32);
  cml_value_t t = cml_op_less_than(cond, ci, ci);
  cml_status_free(cml_function_return(cond, &t, 1));
  (void)PS(body, CML_DTYPE_I32);
  cml_value_t bo = cml_constant_scalar_f64(body, CML_DTYPE_F32, 1);
  cml_status_free(cml_function_return(body, &bo, 1));
  return cml_op_while(f, cond, body, &x, 1, &out);
}
static bool ctl_while_state_count(cml_function_t* f) {
  cml_value_t x = PS(f, CML_DTYPE_I32), out[2];
  cml_function_t *cond = NULL, *body = NULL;
  cml_status_free(cml_function_new_closure(f, &cond));
  cml_status_free(cml_function_new_closure(f, &body));
  cml_value_t ci = PS(cond, CML_DTYPE_I32);
  cml_value_t t = cml_op_less_than(cond, ci, ci);
  cml_status_free(cml_function_return(cond, &t, 1));
  cml_value_t bi = PS(body, CML_DTYPE_I32);
  cml_status_free(cml_function_return(body, &bi, 1));
  return cml_op_while(f, cond, body, (cml_value_t[]){x, x}, 2, out);
}
static bool ctl_while_null(cml_function_t* f) {
  cml_value_t x = PS(f, CML_DTYPE_I32), out;
  return cml_op_while(f, NULL, NULL, &x, 1, &out);
}
static bool ctl_while_foreign_closure(cml_function_t* f) {
  // cond and body are closures of a closure, not of f.
  cml_value_t x = PS(f, CML_DTYPE_I32), out;
  cml_function_t *mid = NULL, *cond = NULL, *body = NULL;
  cml_status_free(cml_function_new_closure(f, &mid));
  cml_status_free(cml_function_new_closure(mid, &cond));
  cml_status_free(cml_function_new_closure(mid, &body));
  cml_value_t ci = PS(cond, CML_DTYPE_I32);
  cml_value_t t = cml_op_less_than(cond, ci, ci);
  cml_status_free(cml_function_return(cond, &t, 1));
  cml_value_t bi = PS(body, CML_DTYPE_I32);
  cml_status_free(cml_function_return(body, &bi, 1));
  return cml_op_while(f, cond, body, &x, 1, &out);
}
static bool ctl_while_out_null(cml_function_t* f) {
  cml_value_t x = PS(f, CML_DTYPE_I32);
  cml_function_t *cond = NULL, *body = NULL;
  cml_status_free(cml_function_new_closure(f, &cond));
  cml_status_free(cml_function_new_closure(f, &body));
  cml_value_t ci = PS(cond, CML_DTYPE_I32);
  cml_value_t t = cml_op_less_than(cond, ci, ci);
  cml_status_free(cml_function_return(cond, &t, 1));
  cml_value_t bi = PS(body, CML_DTYPE_I32);
  cml_status_free(cml_function_return(body, &bi, 1));
  return cml_op_while(f, cond, body, &x, 1, NULL);
}
static bool ctl_if_pred(cml_function_t* f) {
  cml_value_t pred = P(f, CML_DTYPE_BOOL, 2), out;
  cml_function_t *t = NULL, *e = NULL;
  cml_status_free(cml_function_new_closure(f, &t));
  cml_status_free(cml_function_new_closure(f, &e));
  cml_value_t a = cml_constant_scalar_f64(t, CML_DTYPE_F32, 1);
  cml_value_t c = cml_constant_scalar_f64(e, CML_DTYPE_F32, 2);
  cml_status_free(cml_function_return(t, &a, 1));
  cml_status_free(cml_function_return(e, &c, 1));
  return cml_op_if(f, pred, t, e, &out);
}
static bool ctl_if_branch_params(cml_function_t* f) {
  cml_value_t pred = PS(f, CML_DTYPE_BOOL), out;
  cml_function_t *t = NULL, *e = NULL;
  cml_status_free(cml_function_new_closure(f, &t));
  cml_status_free(cml_function_new_closure(f, &e));
  cml_value_t a = PS(t, CML_DTYPE_F32);
  cml_value_t c = cml_constant_scalar_f64(e, CML_DTYPE_F32, 2);
  cml_status_free(cml_function_return(t, &a, 1));
  cml_status_free(cml_function_return(e, &c, 1));
  return cml_op_if(f, pred, t, e, &out);
}
static bool ctl_if_branch_mismatch(cml_function_t* f) {
  cml_value_t pred = PS(f, CML_DTYPE_BOOL), out;
  cml_function_t *t = NULL, *e = NULL;
  cml_status_free(cml_function_new_closure(f, &t));
  cml_status_free(cml_function_new_closure(f, &e));
  cml_value_t a = cml_constant_scalar_f64(t, CML_DTYPE_F32, 1);
  cml_value_t c = cml_constant_scalar_f64(e, CML_DTYPE_F64, 2);
  cml_status_free(cml_function_return(t, &a, 1));
  cml_status_free(cml_function_return(e, &c, 1));
  return cml_op_if(f, pred, t, e, &out);
}
static bool ctl_if_same_closure_self(cml_function_t* f) {
  // A closure used as a branch of an If inside itself: never returned at that point.
  cml_value_t out;
  cml_function_t* t = NULL;
  cml_status_free(cml_function_new_closure(f, &t));
  cml_value_t pred = PS(t, CML_DTYPE_BOOL);
  return cml_op_if(t, pred, t, t, &out);
}
static bool ctl_sort_params(cml_function_t* f) {
  cml_value_t x = P(f, CML_DTYPE_F32, 5), out;
  cml_function_t* cmp = NULL;
  cml_status_free(cml_function_new_closure(f, &cmp));
  cml_value_t a = PS(cmp, CML_DTYPE_F32);
  cml_value_t t = cml_op_less_than(cmp, a, a);
  cml_status_free(cml_function_return(cmp, &t, 1));
  return cml_op_sort(f, cmp, 0, false, &x, 1, &out);
}
static bool ctl_sort_param_dtype(cml_function_t* f) {
  cml_value_t x = P(f, CML_DTYPE_F32, 5), out;
  cml_function_t* cmp = NULL;
  cml_status_free(cml_function_new_closure(f, &cmp));
  cml_value_t a = PS(cmp, CML_DTYPE_F64), c = PS(cmp, CML_DTYPE_F64);
  cml_value_t t = cml_op_less_than(cmp, a, c);
  cml_status_free(cml_function_return(cmp, &t, 1));
  return cml_op_sort(f, cmp, 0, false, &x, 1, &out);
}
static bool ctl_sort_axis(cml_function_t* f) {
  cml_value_t x = P(f, CML_DTYPE_F32, 5), out;
  cml_function_t* cmp = NULL;
  cml_status_free(cml_function_new_closure(f, &cmp));
  cml_value_t a = PS(cmp, CML_DTYPE_F32), c = PS(cmp, CML_DTYPE_F32);
  cml_value_t t = cml_op_less_than(cmp, a, c);
  cml_status_free(cml_function_return(cmp, &t, 1));
  return cml_op_sort(f, cmp, 1, false, &x, 1, &out);
}
static bool ctl_sort_dims(cml_function_t* f) {
  cml_value_t x = P(f, CML_DTYPE_F32, 5), y = P(f, CML_DTYPE_I32, 4), out[2];
  cml_function_t* cmp = NULL;
  cml_status_free(cml_function_new_closure(f, &cmp));
  cml_value_t a = PS(cmp, CML_DTYPE_F32), c = PS(cmp, CML_DTYPE_F32);
  (void)PS(cmp, CML_DTYPE_I32);
  (void)PS(cmp, CML_DTYPE_I32);
  cml_value_t t = cml_op_less_than(cmp, a, c);
  cml_status_free(cml_function_return(cmp, &t, 1));
  return cml_op_sort(f, cmp, 0, false, (cml_value_t[]){x, y}, 2, out);
}
static bool ctl_sort_comparator_output(cml_function_t* f) {
  cml_value_t x = P(f, CML_DTYPE_F32, 5), out;
  cml_function_t* cmp = NULL;
  cml_status_free(cml_function_new_closure(f, &cmp));
  cml_value_t a = PS(cmp, CML_DTYPE_F32), c = PS(cmp, CML_DTYPE_F32);
  cml_value_t t = cml_op_sub(cmp, a, c);
  cml_status_free(cml_function_return(cmp, &t, 1));
  return cml_op_sort(f, cmp, 0, false, &x, 1, &out);
}
static bool ctl_sort_zero(cml_function_t* f) {
  cml_value_t out;
  cml_function_t* cmp = NULL;
  cml_status_free(cml_function_new_closure(f, &cmp));
  cml_value_t t = cml_constant_scalar_i64(cmp, CML_DTYPE_BOOL, 1);
  cml_status_free(cml_function_return(cmp, &t, 1));
  return cml_op_sort(f, cmp, 0, false, NULL, 0, &out);
}
static bool ctl_call_count(cml_function_t* f) {
  cml_builder_t* b = cml_function_builder(f);
  cml_function_t* g = NULL;
  cml_status_free(cml_builder_new_function(b, "g", &g));
  cml_value_t a = PS(g, CML_DTYPE_F32);
  cml_status_free(cml_function_return(g, &a, 1));
  cml_value_t out;
  return cml_op_call(f, g, NULL, 0, &out);
}
static bool ctl_call_shape(cml_function_t* f) {
  cml_builder_t* b = cml_function_builder(f);
  cml_function_t* g = NULL;
  cml_status_free(cml_builder_new_function(b, "g", &g));
  cml_value_t a = PS(g, CML_DTYPE_F32);
  cml_status_free(cml_function_return(g, &a, 1));
  cml_value_t out, x = PS(f, CML_DTYPE_I32);
  return cml_op_call(f, g, &x, 1, &out);
}
static bool ctl_call_main(cml_function_t* f) {
  cml_builder_t* b = cml_function_builder(f);
  cml_function_t* g = NULL;
  cml_status_free(cml_builder_new_function(b, "g", &g));
  cml_value_t out;
  return cml_op_call(g, f, NULL, 0, &out);
}
static bool ctl_call_self(cml_function_t* f) {
  cml_builder_t* b = cml_function_builder(f);
  cml_function_t* g = NULL;
  cml_status_free(cml_builder_new_function(b, "g", &g));
  cml_value_t a = PS(g, CML_DTYPE_F32), out;
  return cml_op_call(g, g, &a, 1, &out);
}
static bool ctl_call_other_builder(cml_function_t* f) {
  cml_builder_t* other = new_builder();
  cml_function_t* g = NULL;
  cml_status_free(cml_builder_new_function(other, "g", &g));
  cml_value_t a = cml_constant_scalar_f64(g, CML_DTYPE_F32, 1);
  cml_status_free(cml_function_return(g, &a, 1));
  cml_value_t out;
  bool ok = cml_op_call(f, g, NULL, 0, &out);
  cml_builder_destroy(other);
  return ok;
}
static bool ctl_capture_after_return(cml_function_t* f) {
  // A closure returns, then a later op of the closure's child wants a new capture through it.
  cml_value_t x = PS(f, CML_DTYPE_F32);
  cml_function_t *c = NULL, *cc = NULL;
  cml_status_free(cml_function_new_closure(f, &c));
  cml_status_free(cml_function_new_closure(c, &cc));
  cml_value_t one = cml_constant_scalar_f64(c, CML_DTYPE_F32, 1);
  cml_status_free(cml_function_return(c, &one, 1));
  return cml_op_neg(cc, x) != CML_VALUE_INVALID;
}

typedef struct bad_control_t {
  const char* name;
  bad_control_fn fn;
  cml_status_code_t code;
  const char* needle;
} bad_control_t;

static const bad_control_t kBadControl[] = {
    {"while_unreturned", ctl_while_unreturned, CML_STATUS_FAILED_PRECONDITION, "While"},
    {"while_cond_not_bool", ctl_while_cond_not_bool, IA, "While"},
    {"while_body_shape", ctl_while_body_shape, IA, "While"},
    {"while_state_count", ctl_while_state_count, IA, "While"},
    {"while_null", ctl_while_null, IA, "While"},
    {"while_foreign_closure", ctl_while_foreign_closure, IA, "While"},
    {"while_out_null", ctl_while_out_null, IA, "While"},
    {"if_pred", ctl_if_pred, IA, "If"},
    {"if_branch_params", ctl_if_branch_params, IA, "If"},
    {"if_branch_mismatch", ctl_if_branch_mismatch, IA, "If"},
    {"if_same_closure_self", ctl_if_same_closure_self, IA, "If"},
    {"sort_params", ctl_sort_params, IA, "Sort"},
    {"sort_param_dtype", ctl_sort_param_dtype, IA, "Sort"},
    {"sort_axis", ctl_sort_axis, IA, "Sort"},
    {"sort_dims", ctl_sort_dims, IA, "Sort"},
    {"sort_comparator_output", ctl_sort_comparator_output, IA, "Sort"},
    {"sort_zero", ctl_sort_zero, IA, "Sort"},
    {"call_count", ctl_call_count, IA, "Call"},
    {"call_shape", ctl_call_shape, IA, "Call"},
    {"call_main", ctl_call_main, IA, "Call"},
    {"call_self", ctl_call_self, CML_STATUS_FAILED_PRECONDITION, "Call"},
    {"call_other_builder", ctl_call_other_builder, IA, "Call"},
    {"capture_after_return", ctl_capture_after_return, CML_STATUS_FAILED_PRECONDITION, "Neg"},
};

TEST(control_flow_misuse) {
  int bad = 0;
  for (size_t i = 0; i < sizeof kBadControl / sizeof kBadControl[0]; ++i) {
    const bad_control_t* c = &kBadControl[i];
    cml_builder_t* b = new_builder();
    ASSERT_TRUE(b);
    bool ok = c->fn(cml_builder_main(b));
    char msg[2048];
    cml_status_code_t code = builder_code(b, msg, sizeof msg);
    if (ok || code != c->code || !strstr(msg, c->needle)) {
      fprintf(stderr, "case %s: returned %d, want %s, got %s: %s\n", c->name, ok,
              cml_status_code_name(c->code), cml_status_code_name(code), msg);
      ++bad;
    }
    cml_builder_destroy(b);
  }
  ASSERT_EQ_INT(bad, 0);
}

//===--- execute misuse ---===//

TEST(execute_misuse) {
  cml_backend_t* backend = backend_c();
  ASSERT_TRUE(backend);
  cml_builder_t* b = new_builder();
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = API_SHAPE(CML_DTYPE_F32, 2, 3);
  cml_value_t x = cml_parameter(f, "x", &s);
  cml_value_t y = cml_parameter(f, "y", &s);
  cml_value_t z = cml_op_add(f, x, y);
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(b, &z, 1, &exe));
  float data[6] = {1, 2, 3, 4, 5, 6};
  cml_buffer_t* bx = api_buffer(backend, &s, data);
  cml_buffer_t* by = api_buffer(backend, &s, data);
  cml_shape_t s2 = API_SHAPE(CML_DTYPE_F32, 3, 2);
  cml_shape_t s3 = API_SHAPE(CML_DTYPE_I32, 2, 3);
  cml_buffer_t* bwrong = api_buffer(backend, &s2, data);
  cml_buffer_t* bint = api_buffer(backend, &s3, data);
  ASSERT_TRUE(bx && by && bwrong && bint);
  cml_buffer_t* out[1] = {(cml_buffer_t*)(uintptr_t)1};
  char msg[1024];
  ASSERT_EQ_INT(api_code_msg(cml_executable_execute(exe, (cml_buffer_t*[]){bx}, 1, NULL, 0, out),
                             msg, sizeof msg),
                CML_STATUS_INVALID_ARGUMENT);
  ASSERT_TRUE(out[0] == NULL);
  ASSERT_CONTAINS(msg, "2");
  ASSERT_EQ_INT(
      api_code_msg(cml_executable_execute(exe, (cml_buffer_t*[]){bx, bwrong}, 2, NULL, 0, out), msg,
                   sizeof msg),
      CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(msg, "\"y\"");
  ASSERT_CONTAINS(msg, "[3, 2]");
  ASSERT_EQ_INT(
      api_code_msg(cml_executable_execute(exe, (cml_buffer_t*[]){bint, by}, 2, NULL, 0, out), msg,
                   sizeof msg),
      CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(msg, "Int32");
  ASSERT_STATUS_CODE(cml_executable_execute(exe, (cml_buffer_t*[]){bx, NULL}, 2, NULL, 0, out),
                     CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_executable_execute(exe, NULL, 2, NULL, 0, out),
                     CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_executable_execute(exe, (cml_buffer_t*[]){bx, by}, 2, NULL, 0, NULL),
                     CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_executable_execute(NULL, (cml_buffer_t*[]){bx, by}, 2, NULL, 0, out),
                     CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_executable_execute(exe, (cml_buffer_t*[]){bx, by}, 2, NULL, 1, out),
                     CML_STATUS_OUT_OF_RANGE);
  ASSERT_STATUS_CODE(cml_executable_execute(exe, (cml_buffer_t*[]){bx, by}, 2, NULL, -1, out),
                     CML_STATUS_OUT_OF_RANGE);
  ASSERT_STATUS_CODE(cml_executable_execute(exe, (cml_buffer_t*[]){bx, by}, 2, NULL, 1 << 30, out),
                     CML_STATUS_OUT_OF_RANGE);
  // A buffer of another backend instance.
  cml_backend_t* other = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config("c", &other));
  cml_buffer_t* bo = api_buffer(other, &s, data);
  ASSERT_TRUE(bo);
  ASSERT_EQ_INT(
      api_code_msg(cml_executable_execute(exe, (cml_buffer_t*[]){bx, bo}, 2, NULL, 0, out), msg,
                   sizeof msg),
      CML_STATUS_INVALID_ARGUMENT);
  // Both are "c": the message says it is another instance, not "backend c, but backend c".
  ASSERT_CONTAINS(msg, "another instance of backend \"c\"");
  ASSERT_FALSE(strstr(msg, "belongs to backend") != NULL);
  cml_buffer_release(bo);
  cml_backend_release(other);
  // Donation: the same buffer donated and also passed again.
  ASSERT_STATUS_CODE(
      cml_executable_execute(exe, (cml_buffer_t*[]){bx, bx}, 2, (bool[]){true, false}, 0, out),
      CML_STATUS_INVALID_ARGUMENT);
  ASSERT_TRUE(cml_buffer_is_valid(bx));
  // Same buffer twice without donation is fine: x + x.
  ASSERT_STATUS_OK(cml_executable_execute(exe, (cml_buffer_t*[]){bx, bx}, 2, NULL, 0, out));
  float got[6];
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[0], got, sizeof got));
  for (int i = 0; i < 6; ++i) ASSERT_EQ_DBL(got[i], 2 * data[i]);
  cml_buffer_release(out[0]);
  // Donate x: the result is right, x is dead afterwards.
  ASSERT_STATUS_OK(
      cml_executable_execute(exe, (cml_buffer_t*[]){bx, by}, 2, (bool[]){true, false}, 0, out));
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[0], got, sizeof got));
  for (int i = 0; i < 6; ++i) ASSERT_EQ_DBL(got[i], 2 * data[i]);
  ASSERT_FALSE(cml_buffer_is_valid(bx));
  ASSERT_TRUE(cml_buffer_is_valid(by));
  ASSERT_STATUS_CODE(cml_buffer_copy_to_host(bx, got, sizeof got), CML_STATUS_FAILED_PRECONDITION);
  cml_buffer_t* out2[1];
  ASSERT_STATUS_CODE(cml_executable_execute(exe, (cml_buffer_t*[]){bx, by}, 2, NULL, 0, out2),
                     CML_STATUS_FAILED_PRECONDITION);
  // A donated buffer stays allocated while referenced (a released one would be undefined
  // behaviour, see graph.h): every reference keeps seeing FAILED_PRECONDITION.
  cml_buffer_t* bx_ref = cml_buffer_retain(bx);
  cml_buffer_release(bx);
  ASSERT_STATUS_CODE(cml_executable_execute(exe, (cml_buffer_t*[]){bx_ref, by}, 2, NULL, 0, out2),
                     CML_STATUS_FAILED_PRECONDITION);
  ASSERT_FALSE(cml_buffer_is_valid(bx_ref));
  // The result buffer itself can be donated into the next call.
  cml_buffer_t* out3[1];
  ASSERT_STATUS_OK(
      cml_executable_execute(exe, (cml_buffer_t*[]){out[0], by}, 2, (bool[]){true, true}, 0, out3));
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(out3[0], got, sizeof got));
  for (int i = 0; i < 6; ++i) ASSERT_EQ_DBL(got[i], 3 * data[i]);
  ASSERT_FALSE(cml_buffer_is_valid(by));
  cml_buffer_release(out3[0]);
  cml_buffer_release(out[0]);
  cml_buffer_release(bx);
  cml_buffer_release(by);
  cml_buffer_release(bwrong);
  cml_buffer_release(bint);
  cml_executable_release(exe);
}

//===--- buffers, backends and NULL pointers ---===//

TEST(buffer_misuse) {
  cml_backend_t* backend = backend_c();
  ASSERT_TRUE(backend);
  cml_shape_t s = API_SHAPE(CML_DTYPE_F32, 2, 3);
  float data[6] = {0};
  cml_buffer_t* buf = (cml_buffer_t*)(uintptr_t)1;
  ASSERT_STATUS_CODE(cml_buffer_from_host(backend, 0, &s, data, 5, &buf),
                     CML_STATUS_INVALID_ARGUMENT);
  ASSERT_TRUE(buf == NULL);
  ASSERT_STATUS_CODE(cml_buffer_from_host(backend, 3, &s, data, sizeof data, &buf),
                     CML_STATUS_OUT_OF_RANGE);
  ASSERT_STATUS_CODE(cml_buffer_from_host(backend, -1, &s, data, sizeof data, &buf),
                     CML_STATUS_OUT_OF_RANGE);
  ASSERT_STATUS_CODE(cml_buffer_from_host(NULL, 0, &s, data, sizeof data, &buf),
                     CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_buffer_from_host(backend, 0, NULL, data, sizeof data, &buf),
                     CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_buffer_from_host(backend, 0, &s, NULL, sizeof data, &buf),
                     CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_buffer_from_host(backend, 0, &s, data, sizeof data, NULL),
                     CML_STATUS_INVALID_ARGUMENT);
  cml_shape_t huge = {CML_DTYPE_F32, 2, {(int64_t)1 << 40, (int64_t)1 << 40}};
  ASSERT_STATUS_CODE(cml_buffer_from_host(backend, 0, &huge, data, sizeof data, &buf),
                     CML_STATUS_INVALID_ARGUMENT);
  cml_shape_t garbage;
  memset(&garbage, 0xa5, sizeof garbage);
  ASSERT_STATUS_CODE(cml_buffer_from_host(backend, 0, &garbage, data, sizeof data, &buf),
                     CML_STATUS_INVALID_ARGUMENT);
  cml_shape_t f8 = API_SHAPE(CML_DTYPE_TOKEN, 6);
  ASSERT_NE_INT(api_code(cml_buffer_from_host(backend, 0, &f8, data, 6, &buf)), CML_STATUS_OK);
  ASSERT_TRUE(buf == NULL);
  // Zero-size buffers work.
  cml_shape_t empty = API_SHAPE(CML_DTYPE_F32, 0, 3);
  ASSERT_STATUS_OK(cml_buffer_from_host(backend, 0, &empty, NULL, 0, &buf));
  ASSERT_STATUS_OK(cml_buffer_copy_to_host(buf, NULL, 0));
  ASSERT_STATUS_CODE(cml_buffer_copy_to_host(buf, data, 4), CML_STATUS_INVALID_ARGUMENT);
  cml_buffer_release(buf);
  ASSERT_STATUS_OK(cml_buffer_from_host(backend, 0, &s, data, sizeof data, &buf));
  ASSERT_STATUS_CODE(cml_buffer_copy_to_host(buf, data, sizeof data - 1),
                     CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_buffer_copy_to_host(buf, NULL, sizeof data), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_buffer_copy_to_host(NULL, data, sizeof data), CML_STATUS_INVALID_ARGUMENT);
  void* ptr = (void*)1;
  ASSERT_STATUS_CODE(cml_buffer_data(buf, &ptr), CML_STATUS_FAILED_PRECONDITION);
  ASSERT_TRUE(ptr == NULL);
  ASSERT_STATUS_CODE(cml_buffer_data(NULL, &ptr), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_buffer_data(buf, NULL), CML_STATUS_INVALID_ARGUMENT);
  cml_buffer_t* copy = NULL;
  ASSERT_STATUS_CODE(cml_buffer_copy_to_device(buf, 0, &copy), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_buffer_copy_to_device(buf, 7, &copy), CML_STATUS_OUT_OF_RANGE);
  ASSERT_STATUS_CODE(cml_buffer_copy_to_device(NULL, 0, &copy), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_buffer_copy_to_device(buf, 0, NULL), CML_STATUS_INVALID_ARGUMENT);
  cml_buffer_release(buf);
  // Shared buffers: NULL outputs.
  ASSERT_STATUS_CODE(cml_buffer_create_shared(backend, 0, &s, NULL, &ptr),
                     CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_buffer_create_shared(backend, 0, &s, &buf, NULL),
                     CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_buffer_create_shared(NULL, 0, &s, &buf, &ptr),
                     CML_STATUS_INVALID_ARGUMENT);
  // An allocator without a function is a bad argument, not "out of memory".
  cml_cancel_token_t* token = NULL;
  cml_allocator_t no_fn;
  memset(&no_fn, 0, sizeof no_fn);
  ASSERT_STATUS_CODE(cml_cancel_token_create(no_fn, &token), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_TRUE(token == NULL);
  // NULL-tolerant accessors.
  ASSERT_TRUE(cml_buffer_shape(NULL) == NULL);
  ASSERT_EQ_INT(cml_buffer_device(NULL), -1);
  ASSERT_TRUE(cml_buffer_backend(NULL) == NULL);
  ASSERT_FALSE(cml_buffer_is_valid(NULL));
  ASSERT_TRUE(cml_buffer_retain(NULL) == NULL);
  cml_buffer_release(NULL);
}

TEST(backend_config_errors) {
  cml_backend_t* be = (cml_backend_t*)(uintptr_t)1;
  char msg[4096];
  ASSERT_EQ_INT(api_code_msg(cml_backend_new_with_config("nosuch", &be), msg, sizeof msg),
                CML_STATUS_NOT_FOUND);
  ASSERT_TRUE(be == NULL);
  ASSERT_CONTAINS(msg, "nosuch");
  ASSERT_CONTAINS(msg, "c");
  ASSERT_EQ_INT(api_code_msg(cml_backend_new_with_config("c:bogus=1", &be), msg, sizeof msg),
                CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(msg, "bogus");
  ASSERT_TRUE(be == NULL);
  ASSERT_NE_INT(api_code(cml_backend_new_with_config("c:threads=abc", &be)), CML_STATUS_OK);
  ASSERT_NE_INT(api_code(cml_backend_new_with_config("c:threads=-3", &be)), CML_STATUS_OK);
  ASSERT_NE_INT(api_code(cml_backend_new_with_config("c:threads=99999999999999999999", &be)),
                CML_STATUS_OK);
  ASSERT_NE_INT(api_code(cml_backend_new_with_config("c:devices=0", &be)), CML_STATUS_OK);
  ASSERT_NE_INT(api_code(cml_backend_new_with_config("c:reference=maybe", &be)), CML_STATUS_OK);
  ASSERT_NE_INT(api_code(cml_backend_new_with_config("c:help", &be)), CML_STATUS_OK);
  ASSERT_NE_INT(api_code(cml_backend_new_with_config("c:=", &be)), CML_STATUS_OK);
  ASSERT_NE_INT(api_code(cml_backend_new_with_config(":", &be)), CML_STATUS_OK);
  ASSERT_NE_INT(api_code(cml_backend_new_with_config("c:threads", &be)), CML_STATUS_OK);
  ASSERT_TRUE(be == NULL);
  ASSERT_STATUS_CODE(cml_backend_new_with_config("c", NULL), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_backend_create("c", (cml_allocator_t){NULL, NULL}, &be),
                     CML_STATUS_INVALID_ARGUMENT);
  // A long config string must not overflow anything.
  char longcfg[5000];
  memset(longcfg, 'x', sizeof longcfg - 1);
  longcfg[sizeof longcfg - 1] = '\0';
  ASSERT_NE_INT(api_code(cml_backend_new_with_config(longcfg, &be)), CML_STATUS_OK);
  memcpy(longcfg, "c:", 2);
  ASSERT_NE_INT(api_code(cml_backend_new_with_config(longcfg, &be)), CML_STATUS_OK);
  // GOMLX_BACKEND is honoured, unknown names fail, even through the environment.
  ASSERT_EQ_INT(setenv("GOMLX_BACKEND", "nosuch:x=1", 1), 0);
  ASSERT_EQ_INT(api_code_msg(cml_backend_new(&be), msg, sizeof msg), CML_STATUS_NOT_FOUND);
  ASSERT_CONTAINS(msg, "nosuch");
  ASSERT_EQ_INT(setenv("GOMLX_BACKEND", "c:threads=2", 1), 0);
  ASSERT_STATUS_OK(cml_backend_new(&be));
  ASSERT_STREQ(cml_backend_name(be), "c");
  cml_backend_release(be);
  be = NULL;
  ASSERT_EQ_INT(unsetenv("GOMLX_BACKEND"), 0);
  ASSERT_STATUS_CODE(cml_backend_new(NULL), CML_STATUS_INVALID_ARGUMENT);
  // Aliases and accessors.
  ASSERT_STATUS_OK(cml_backend_new_with_config("go", &be));
  ASSERT_STREQ(cml_backend_name(be), "c");
  ASSERT_TRUE(cml_backend_device_count(be) >= 1);
  ASSERT_STREQ(cml_backend_device_description(be, 99), "invalid device");
  ASSERT_STREQ(cml_backend_device_description(be, -1), "invalid device");
  ASSERT_TRUE(cml_backend_get_extension(be, NULL) == NULL);
  ASSERT_TRUE(cml_backend_get_extension(be, "nosuch") == NULL);
  cml_backend_release(be);
  ASSERT_STATUS_OK(cml_backend_new_with_config("c:devices=3,threads=2", &be));
  ASSERT_EQ_INT(cml_backend_device_count(be), 3);
  cml_backend_release(be);
  // NULL-tolerant accessors.
  ASSERT_TRUE(cml_backend_retain(NULL) == NULL);
  cml_backend_release(NULL);
  ASSERT_TRUE(cml_backend_name(NULL) != NULL);
  ASSERT_TRUE(cml_backend_config(NULL) != NULL);
  ASSERT_TRUE(cml_backend_description(NULL) != NULL);
  ASSERT_EQ_INT(cml_backend_device_count(NULL), 0);
  ASSERT_TRUE(cml_backend_device_description(NULL, 0) != NULL);
  ASSERT_TRUE(cml_backend_capabilities(NULL) == NULL);
  ASSERT_FALSE(cml_capabilities_has_op(NULL, CML_OP_ADD));
  ASSERT_FALSE(cml_capabilities_has_dtype(NULL, CML_DTYPE_F32));
  cml_capabilities_set_op(NULL, CML_OP_ADD, true);
  ASSERT_FALSE(cml_backend_has_shared_buffers(NULL));
  ASSERT_TRUE(cml_backend_registered_name(9999) == NULL);
  ASSERT_TRUE(cml_backend_registered_aliases(NULL) == NULL);
  ASSERT_TRUE(cml_backend_config_help(NULL) == NULL);
  ASSERT_TRUE(cml_backend_config_help("nosuch") == NULL);
  const cml_capabilities_t* caps = cml_backend_capabilities(backend_c());
  ASSERT_FALSE(cml_capabilities_has_op(caps, (cml_op_t)-1));
  ASSERT_FALSE(cml_capabilities_has_op(caps, (cml_op_t)100000));
  ASSERT_FALSE(cml_capabilities_has_dtype(caps, (cml_dtype_t)-1));
  ASSERT_FALSE(cml_capabilities_has_dtype(caps, (cml_dtype_t)1000));
}

TEST(null_everywhere) {
  // Builders and functions.
  cml_builder_t* b = (cml_builder_t*)(uintptr_t)1;
  ASSERT_STATUS_CODE(cml_builder_create(NULL, "x", &b), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_TRUE(b == NULL);
  ASSERT_STATUS_CODE(cml_builder_create(backend_c(), "x", NULL), CML_STATUS_INVALID_ARGUMENT);
  cml_builder_destroy(NULL);
  ASSERT_STATUS_CODE(cml_builder_status(NULL), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_TRUE(cml_builder_main(NULL) == NULL);
  ASSERT_TRUE(cml_function_name(NULL) != NULL);
  ASSERT_TRUE(cml_function_builder(NULL) == NULL);
  ASSERT_TRUE(cml_function_parent(NULL) == NULL);
  ASSERT_EQ_INT(cml_function_output_count(NULL), 0);
  cml_shape_t s;
  ASSERT_FALSE(cml_builder_value_shape(NULL, 1, &s));
  cml_shape_t fs = API_SHAPE(CML_DTYPE_F32, 2);
  ASSERT_EQ_INT(cml_parameter(NULL, "x", &fs), CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_constant(NULL, &fs, (float[]){1, 2}), CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_constant_scalar_f64(NULL, CML_DTYPE_F32, 1), CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_constant_scalar_i64(NULL, CML_DTYPE_F32, 1), CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_op_add(NULL, 1, 2), CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_op_exp(NULL, 1), CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_op_reduce_sum(NULL, 1, NULL, 0), CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_op_unary(NULL, CML_OP_EXP, 1), CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_op_binary(NULL, CML_OP_ADD, 1, 1), CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_op_reduce(NULL, CML_OP_REDUCE_SUM, 1, NULL, 0), CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_op_convert_dtype(NULL, 1, CML_DTYPE_F32), CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_op_bitcast(NULL, 1, CML_DTYPE_F32), CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_op_reshape(NULL, 1, NULL, 0), CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_op_transpose(NULL, 1, NULL, 0), CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_op_broadcast_in_dim(NULL, 1, NULL, 0, NULL, 0), CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_op_concatenate(NULL, 0, NULL, 0), CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_op_slice(NULL, 1, NULL, NULL, NULL, 0), CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_op_reverse(NULL, 1, NULL, 0), CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_op_iota(NULL, &fs, 0), CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_op_pad(NULL, 1, 1, NULL, 0), CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_op_clamp(NULL, 1, 1, 1), CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_op_where(NULL, 1, 1, 1), CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_op_gather(NULL, 1, 1, NULL), CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_op_scatter_sum(NULL, 1, 1, 1, NULL), CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_op_conv_general(NULL, 1, 1, NULL), CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_op_reduce_window(NULL, 1, CML_REDUCE_SUM, NULL), CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_op_select_and_scatter(NULL, CML_OP_SELECT_AND_SCATTER_MAX, 1, 1, NULL),
                CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_op_dot_general(NULL, 1, 1, NULL), CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_op_dot(NULL, 1, 1), CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_op_arg_min_max(NULL, 1, 0, CML_DTYPE_I32, true), CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_op_fft(NULL, 1, CML_FFT_FORWARD, NULL, 0), CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_op_dynamic_slice(NULL, 1, NULL, NULL, 0), CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_op_dynamic_update_slice(NULL, 1, 1, NULL, 0), CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_op_batch_norm_inference(NULL, 1, 1, 1, 1, 1, 0, 0), CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_op_scheduling_barrier(NULL, 1, NULL, 0), CML_VALUE_INVALID);
  cml_value_t outs[4] = {7, 7, 7, 7};
  ASSERT_FALSE(cml_op_rng_bit_generator(NULL, 1, &fs, &outs[0], &outs[1]));
  ASSERT_FALSE(cml_op_batch_norm_training(NULL, 1, 1, 1, 0, 0, outs));
  ASSERT_FALSE(cml_op_batch_norm_gradient(NULL, 1, 1, 1, 1, 1, 0, 0, outs));
  ASSERT_FALSE(cml_op_optimization_barrier(NULL, outs, 1, outs));
  ASSERT_FALSE(cml_op_call(NULL, NULL, NULL, 0, outs));
  ASSERT_FALSE(cml_op_sort(NULL, NULL, 0, false, NULL, 0, outs));
  ASSERT_FALSE(cml_op_while(NULL, NULL, NULL, NULL, 0, outs));
  ASSERT_FALSE(cml_op_if(NULL, 1, NULL, NULL, outs));
  // Executables.
  ASSERT_TRUE(cml_executable_retain(NULL) == NULL);
  cml_executable_release(NULL);
  ASSERT_EQ_INT(cml_executable_input_count(NULL), 0);
  ASSERT_EQ_INT(cml_executable_output_count(NULL), 0);
  ASSERT_TRUE(cml_executable_input_name(NULL, 0) == NULL);
  ASSERT_TRUE(cml_executable_input_shape(NULL, 0) == NULL);
  ASSERT_TRUE(cml_executable_output_shape(NULL, 0) == NULL);
  // Statuses, shapes, names.
  ASSERT_TRUE(cml_status_message(CML_OK) != NULL);
  cml_status_free(CML_OK);
  ASSERT_STATUS_CODE(cml_shape_init(NULL, CML_DTYPE_F32, 0, NULL), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_shape_init(&s, CML_DTYPE_F32, 2, NULL), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_shape_parse(NULL, &s), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_shape_parse("f32[2,3]", NULL), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_shape_parse("f32[99999999999999999999]", &s), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_shape_parse("f32[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]", &s),
                     CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_shape_parse("f32[-1]", &s), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_shape_parse("f32[2,", &s), CML_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ_INT(cml_shape_element_count(NULL), 0);
  ASSERT_EQ_INT(cml_shape_byte_size(NULL), 0);
  ASSERT_FALSE(cml_shape_equal(NULL, &s));
  char text[8];
  ASSERT_TRUE(cml_shape_format(NULL, text, sizeof text) != NULL);
  cml_shape_t big = API_SHAPE(CML_DTYPE_F32, 1000, 2000, 3000);
  cml_shape_format(&big, text, sizeof text);  // truncated, NUL-terminated
  ASSERT_TRUE(strlen(text) < sizeof text);
  ASSERT_STREQ(cml_dtype_name((cml_dtype_t)-5), "unknown");
  ASSERT_STREQ(cml_op_name((cml_op_t)-5), "unknown");
  ASSERT_STREQ(cml_op_name((cml_op_t)CML_OP_COUNT), "unknown");
  ASSERT_EQ_INT(cml_op_from_name(NULL), CML_OP_INVALID);
  ASSERT_EQ_INT(cml_dtype_from_name(NULL), CML_DTYPE_INVALID);
  ASSERT_TRUE(cml_reduce_type_name((cml_reduce_type_t)99) != NULL);
  ASSERT_TRUE(cml_status_code_name((cml_status_code_t)99) != NULL);
  ASSERT_EQ_INT(cml_op_dtypes((cml_op_t)-1), 0);
  ASSERT_FALSE(cml_op_is_standard((cml_op_t)1000));
}

static void cleanup(int* test_failed_) {
  (void)test_failed_;
  cml_backend_release(g_backend);
  g_backend = NULL;
}

TEST_MAIN(TEST_ENTRY(builder_bad_ops), TEST_ENTRY(arg_min_max_output_dtype_limits),
          TEST_ENTRY(foreign_values), TEST_ENTRY(non_ancestor_values), TEST_ENTRY(return_misuse),
          TEST_ENTRY(compile_misuse), TEST_ENTRY(control_flow_misuse), TEST_ENTRY(execute_misuse),
          TEST_ENTRY(buffer_misuse), TEST_ENTRY(backend_config_errors), TEST_ENTRY(null_everywhere),
          {"cleanup", cleanup})
