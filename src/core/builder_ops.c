// SPDX-License-Identifier: Apache-2.0
// src/core/builder_ops.c: the public op builders (elementwise, reductions, shape and data
// movement, indexing, windows, dot, special ops). Each one resolves its operands, runs shape
// inference (shape_infer*.c) and records a node; the first error sticks to the builder.
#include <string.h>

#include "core/builder_internal.h"

// Records |st| when it is an error; returns true when it is OK.
static bool cml_ok(cml_function_t* f, cml_status_t st) {
  if (st == CML_OK) return true;
  cml__fail_status(f->builder, st);
  return false;
}

static void cml_attrs_clear(cml_ir_attrs_t* attrs) { memset(attrs, 0, sizeof *attrs); }

static void cml_fill_invalid(cml_value_t* out, size_t count) {
  if (!out) return;
  for (size_t i = 0; i < count; ++i) out[i] = CML_VALUE_INVALID;
}

// Kind check for the by-op entry points (only when no error is pending).
static bool cml_check_kind(cml_function_t* f, cml_op_t op, cml_op_kind_t kind, const char* api) {
  if (!f || !f->builder || f->builder->error != CML_OK) return false;
  if (cml_op_kind(op) != kind || op <= CML_OP_INVALID || op >= CML_OP_COUNT) {
    cml__fail(f->builder, CML_STATUS_INVALID_ARGUMENT, "%s: %s (%d) is not of the right kind", api,
              cml_op_name(op), (int)op);
    return false;
  }
  return true;
}

//===--- elementwise and reductions ---===//

cml_value_t cml_op_unary(cml_function_t* f, cml_op_t op, cml_value_t x) {
  if (!cml_check_kind(f, op, CML_OPK_UNARY, "cml_op_unary")) return CML_VALUE_INVALID;
  if (!cml__op_begin(f, op)) return CML_VALUE_INVALID;
  uint32_t in;
  cml_shape_t xs, out;
  if (!cml__op_input(f, op, x, 0, &in, &xs)) return CML_VALUE_INVALID;
  if (!cml_ok(f, cml__infer_unary(op, &xs, &out))) return CML_VALUE_INVALID;
  return cml__op_add_node(f, op, &in, 1, &out, 1, NULL);
}

static cml_value_t cml_binary_any(cml_function_t* f, cml_op_t op, cml_value_t lhs,
                                  cml_value_t rhs) {
  if (!cml__op_begin(f, op)) return CML_VALUE_INVALID;
  uint32_t in[2];
  cml_shape_t ls, rs, out;
  if (!cml__op_input(f, op, lhs, 0, &in[0], &ls) || !cml__op_input(f, op, rhs, 1, &in[1], &rs)) {
    return CML_VALUE_INVALID;
  }
  if (!cml_ok(f, cml__infer_binary(op, &ls, &rs, &out))) return CML_VALUE_INVALID;
  return cml__op_add_node(f, op, in, 2, &out, 1, NULL);
}

cml_value_t cml_op_binary(cml_function_t* f, cml_op_t op, cml_value_t lhs, cml_value_t rhs) {
  if (!f || !f->builder || f->builder->error != CML_OK) return CML_VALUE_INVALID;
  cml_op_kind_t kind = cml_op_kind(op);
  if (kind == CML_OPK_COMPARE) return cml_binary_any(f, op, lhs, rhs);
  if (!cml_check_kind(f, op, CML_OPK_BINARY, "cml_op_binary")) return CML_VALUE_INVALID;
  return cml_binary_any(f, op, lhs, rhs);
}

cml_value_t cml_op_reduce(cml_function_t* f, cml_op_t op, cml_value_t x, const int64_t* axes,
                          size_t axis_count) {
  if (!cml_check_kind(f, op, CML_OPK_REDUCE, "cml_op_reduce")) return CML_VALUE_INVALID;
  if (!cml__op_begin(f, op)) return CML_VALUE_INVALID;
  uint32_t in;
  cml_shape_t xs, out;
  cml_ir_attrs_t attrs;
  cml_attrs_clear(&attrs);
  if (!cml__op_input(f, op, x, 0, &in, &xs)) return CML_VALUE_INVALID;
  if (!cml_ok(f, cml__infer_reduce(op, &xs, axes, axis_count, &attrs, &out))) {
    return CML_VALUE_INVALID;
  }
  return cml__op_add_node(f, op, &in, 1, &out, 1, &attrs);
}

#define CML_OP_DEFINE_PARAMETER(ENUM, lower)
#define CML_OP_DEFINE_CONSTANT(ENUM, lower)
#define CML_OP_DEFINE_UNARY(ENUM, fn) \
  cml_value_t fn(cml_function_t* f, cml_value_t x) { return cml_op_unary(f, CML_OP_##ENUM, x); }
#define CML_OP_DEFINE_BINARY(ENUM, fn)                                  \
  cml_value_t fn(cml_function_t* f, cml_value_t lhs, cml_value_t rhs) { \
    return cml_op_binary(f, CML_OP_##ENUM, lhs, rhs);                   \
  }
#define CML_OP_DEFINE_COMPARE(ENUM, fn) CML_OP_DEFINE_BINARY(ENUM, fn)
#define CML_OP_DEFINE_REDUCE(ENUM, fn)                                                       \
  cml_value_t fn(cml_function_t* f, cml_value_t x, const int64_t* axes, size_t axis_count) { \
    return cml_op_reduce(f, CML_OP_##ENUM, x, axes, axis_count);                             \
  }
#define CML_OP_DEFINE_OTHER(ENUM, lower)
#define CML_OP_DEFINE_CONTROL(ENUM, lower)
#define CML_OP_DEFINE_COLLECTIVE(ENUM, lower)
#define CML_OP_DEFINE_FUSED(ENUM, lower)
#define CML_OP_DEFINE_DYNAMIC(ENUM, lower)
#define CML_OP_DEFINE_INTERNAL(ENUM, lower)
#define CML_OP(ENUM, NAME, lower, KIND, GROUP, TRAITS, DTYPES, OUT) \
  CML_OP_DEFINE_##KIND(ENUM, cml_op_##lower)
#include "cml/ops.def"

//===--- one-operand ops with attributes ---===//

// Resolves |x| for |op| after cml__op_begin.
#define CML_BEGIN_1(op, x, in, xs)                       \
  if (!cml__op_begin(f, (op))) return CML_VALUE_INVALID; \
  uint32_t in;                                           \
  cml_shape_t xs;                                        \
  if (!cml__op_input(f, (op), (x), 0, &in, &xs)) return CML_VALUE_INVALID

cml_value_t cml_op_convert_dtype(cml_function_t* f, cml_value_t x, cml_dtype_t dtype) {
  CML_BEGIN_1(CML_OP_CONVERT_DTYPE, x, in, xs);
  cml_shape_t out;
  cml_ir_attrs_t attrs;
  cml_attrs_clear(&attrs);
  if (!cml_ok(f, cml__infer_convert(&xs, dtype, &out))) return CML_VALUE_INVALID;
  // To its own dtype the conversion is the value itself (code written for any dtype converts
  // to f32 and back): no node, so no backend has a pass to spend on it (a no-op convert in an
  // RMSNorm once kept the c backend's loop from fusing across it: 3-4x the time).
  if (dtype == xs.dtype) return cml__value_id(f->builder, in);
  attrs.dtype = dtype;
  return cml__op_add_node(f, CML_OP_CONVERT_DTYPE, &in, 1, &out, 1, &attrs);
}

cml_value_t cml_op_bitcast(cml_function_t* f, cml_value_t x, cml_dtype_t dtype) {
  CML_BEGIN_1(CML_OP_BITCAST, x, in, xs);
  cml_shape_t out;
  cml_ir_attrs_t attrs;
  cml_attrs_clear(&attrs);
  if (!cml_ok(f, cml__infer_bitcast(&xs, dtype, &out))) return CML_VALUE_INVALID;
  if (dtype == CML_DTYPE_BOOL && xs.dtype != CML_DTYPE_BOOL) {
    // A Bool holds 0 or 1: the bytes are reinterpreted as Uint8 and compared with 0 (what
    // xla:cpu does), so no backend hands out Bool bytes such as 0x80.
    attrs.dtype = CML_DTYPE_U8;
    out.dtype = CML_DTYPE_U8;
    cml_value_t bytes = cml__op_add_node(f, CML_OP_BITCAST, &in, 1, &out, 1, &attrs);
    return cml_op_not_equal(f, bytes, cml_constant_scalar_i64(f, CML_DTYPE_U8, 0));
  }
  attrs.dtype = dtype;
  return cml__op_add_node(f, CML_OP_BITCAST, &in, 1, &out, 1, &attrs);
}

cml_value_t cml_op_reshape(cml_function_t* f, cml_value_t x, const int64_t* dims, int32_t rank) {
  CML_BEGIN_1(CML_OP_RESHAPE, x, in, xs);
  cml_shape_t out;
  cml_ir_attrs_t attrs;
  cml_attrs_clear(&attrs);
  if (!cml_ok(f, cml__infer_reshape(&xs, dims, rank, &attrs, &out))) return CML_VALUE_INVALID;
  return cml__op_add_node(f, CML_OP_RESHAPE, &in, 1, &out, 1, &attrs);
}

cml_value_t cml_op_transpose(cml_function_t* f, cml_value_t x, const int64_t* permutation,
                             int32_t rank) {
  CML_BEGIN_1(CML_OP_TRANSPOSE, x, in, xs);
  cml_shape_t out;
  cml_ir_attrs_t attrs;
  cml_attrs_clear(&attrs);
  if (!cml_ok(f, cml__infer_transpose(&xs, permutation, rank, &attrs, &out))) {
    return CML_VALUE_INVALID;
  }
  return cml__op_add_node(f, CML_OP_TRANSPOSE, &in, 1, &out, 1, &attrs);
}

cml_value_t cml_op_broadcast_in_dim(cml_function_t* f, cml_value_t x, const int64_t* out_dims,
                                    int32_t out_rank, const int64_t* axes, int32_t axis_count) {
  CML_BEGIN_1(CML_OP_BROADCAST_IN_DIM, x, in, xs);
  cml_shape_t out;
  cml_ir_attrs_t attrs;
  cml_attrs_clear(&attrs);
  if (!cml_ok(f, cml__infer_broadcast_in_dim(&xs, out_dims, out_rank, axes, axis_count, &attrs,
                                             &out))) {
    return CML_VALUE_INVALID;
  }
  return cml__op_add_node(f, CML_OP_BROADCAST_IN_DIM, &in, 1, &out, 1, &attrs);
}

cml_value_t cml_op_slice(cml_function_t* f, cml_value_t x, const int64_t* starts,
                         const int64_t* limits, const int64_t* strides, int32_t rank) {
  CML_BEGIN_1(CML_OP_SLICE, x, in, xs);
  cml_shape_t out;
  cml_ir_attrs_t attrs;
  cml_attrs_clear(&attrs);
  if (!cml_ok(f, cml__infer_slice(&xs, starts, limits, strides, rank, &attrs, &out))) {
    return CML_VALUE_INVALID;
  }
  return cml__op_add_node(f, CML_OP_SLICE, &in, 1, &out, 1, &attrs);
}

cml_value_t cml_op_reverse(cml_function_t* f, cml_value_t x, const int64_t* axes,
                           size_t axis_count) {
  CML_BEGIN_1(CML_OP_REVERSE, x, in, xs);
  cml_shape_t out;
  cml_ir_attrs_t attrs;
  cml_attrs_clear(&attrs);
  if (!cml_ok(f, cml__infer_reverse(&xs, axes, axis_count, &attrs, &out))) {
    return CML_VALUE_INVALID;
  }
  return cml__op_add_node(f, CML_OP_REVERSE, &in, 1, &out, 1, &attrs);
}

cml_value_t cml_op_iota(cml_function_t* f, const cml_shape_t* shape, int64_t axis) {
  if (!cml__op_begin(f, CML_OP_IOTA)) return CML_VALUE_INVALID;
  cml_shape_t out;
  cml_ir_attrs_t attrs;
  cml_attrs_clear(&attrs);
  if (!cml_ok(f, cml__infer_iota(shape, axis, &attrs, &out))) return CML_VALUE_INVALID;
  return cml__op_add_node(f, CML_OP_IOTA, NULL, 0, &out, 1, &attrs);
}

cml_value_t cml_op_arg_min_max(cml_function_t* f, cml_value_t x, int64_t axis,
                               cml_dtype_t out_dtype, bool is_min) {
  CML_BEGIN_1(CML_OP_ARG_MIN_MAX, x, in, xs);
  cml_shape_t out;
  cml_ir_attrs_t attrs;
  cml_attrs_clear(&attrs);
  if (!cml_ok(f, cml__infer_arg_min_max(&xs, axis, out_dtype, is_min, &attrs, &out))) {
    return CML_VALUE_INVALID;
  }
  return cml__op_add_node(f, CML_OP_ARG_MIN_MAX, &in, 1, &out, 1, &attrs);
}

cml_value_t cml_op_fft(cml_function_t* f, cml_value_t x, cml_fft_type_t type,
                       const int64_t* lengths, size_t length_count) {
  CML_BEGIN_1(CML_OP_FFT, x, in, xs);
  cml_shape_t out;
  cml_ir_attrs_t attrs;
  cml_attrs_clear(&attrs);
  if (!cml_ok(f, cml__infer_fft(&xs, type, lengths, length_count, &attrs, &out))) {
    return CML_VALUE_INVALID;
  }
  return cml__op_add_node(f, CML_OP_FFT, &in, 1, &out, 1, &attrs);
}

cml_value_t cml_op_reduce_window(cml_function_t* f, cml_value_t x, cml_reduce_type_t type,
                                 const cml_window_config_t* config) {
  CML_BEGIN_1(CML_OP_REDUCE_WINDOW, x, in, xs);
  cml_shape_t out;
  cml_ir_attrs_t attrs;
  cml_attrs_clear(&attrs);
  if (!cml_ok(f, cml__infer_reduce_window(&xs, type, config, &attrs, &out))) {
    return CML_VALUE_INVALID;
  }
  return cml__op_add_node(f, CML_OP_REDUCE_WINDOW, &in, 1, &out, 1, &attrs);
}

//===--- ops with several operands ---===//

// Resolves |count| operands into |in| and |shapes|.
static bool cml_inputs(cml_function_t* f, cml_op_t op, const cml_value_t* values, size_t count,
                       size_t first_pos, uint32_t* in, cml_shape_t* shapes) {
  for (size_t i = 0; i < count; ++i) {
    if (!cml__op_input(f, op, values[i], first_pos + i, &in[i], &shapes[i])) return false;
  }
  return true;
}

cml_value_t cml_op_clamp(cml_function_t* f, cml_value_t min, cml_value_t x, cml_value_t max) {
  if (!cml__op_begin(f, CML_OP_CLAMP)) return CML_VALUE_INVALID;
  const cml_value_t values[3] = {min, x, max};
  uint32_t in[3];
  cml_shape_t s[3], out;
  if (!cml_inputs(f, CML_OP_CLAMP, values, 3, 0, in, s)) return CML_VALUE_INVALID;
  if (!cml_ok(f, cml__infer_clamp(&s[0], &s[1], &s[2], &out))) return CML_VALUE_INVALID;
  return cml__op_add_node(f, CML_OP_CLAMP, in, 3, &out, 1, NULL);
}

cml_value_t cml_op_where(cml_function_t* f, cml_value_t cond, cml_value_t on_true,
                         cml_value_t on_false) {
  if (!cml__op_begin(f, CML_OP_WHERE)) return CML_VALUE_INVALID;
  const cml_value_t values[3] = {cond, on_true, on_false};
  uint32_t in[3];
  cml_shape_t s[3], out;
  if (!cml_inputs(f, CML_OP_WHERE, values, 3, 0, in, s)) return CML_VALUE_INVALID;
  if (!cml_ok(f, cml__infer_where(&s[0], &s[1], &s[2], &out))) return CML_VALUE_INVALID;
  return cml__op_add_node(f, CML_OP_WHERE, in, 3, &out, 1, NULL);
}

cml_value_t cml_op_pad(cml_function_t* f, cml_value_t x, cml_value_t fill,
                       const cml_pad_axis_t* axes, size_t axis_count) {
  if (!cml__op_begin(f, CML_OP_PAD)) return CML_VALUE_INVALID;
  const cml_value_t values[2] = {x, fill};
  uint32_t in[2];
  cml_shape_t s[2], out;
  cml_ir_attrs_t attrs;
  cml_attrs_clear(&attrs);
  if (!cml_inputs(f, CML_OP_PAD, values, 2, 0, in, s)) return CML_VALUE_INVALID;
  if (!cml_ok(f, cml__infer_pad(&s[0], &s[1], axes, axis_count, &attrs, &out))) {
    return CML_VALUE_INVALID;
  }
  return cml__op_add_node(f, CML_OP_PAD, in, 2, &out, 1, &attrs);
}

cml_value_t cml_op_concatenate(cml_function_t* f, int64_t axis, const cml_value_t* operands,
                               size_t count) {
  if (!cml__op_begin(f, CML_OP_CONCATENATE)) return CML_VALUE_INVALID;
  cml_builder_t* b = f->builder;
  if (count == 0 || !operands) {
    return cml__fail(b, CML_STATUS_INVALID_ARGUMENT, "Concatenate: no operands");
  }
  if (count > UINT32_MAX / 2) {
    return cml__fail(b, CML_STATUS_INVALID_ARGUMENT, "Concatenate: too many operands");
  }
  uint32_t* in = (uint32_t*)cml__temp_alloc(b, count * sizeof *in);
  cml_shape_t* s = (cml_shape_t*)cml__temp_alloc(b, count * sizeof *s);
  cml_value_t result = CML_VALUE_INVALID;
  cml_shape_t out;
  cml_ir_attrs_t attrs;
  cml_attrs_clear(&attrs);
  if (in && s && cml_inputs(f, CML_OP_CONCATENATE, operands, count, 0, in, s) &&
      cml_ok(f, cml__infer_concatenate(axis, s, count, &attrs, &out))) {
    result = cml__op_add_node(f, CML_OP_CONCATENATE, in, (uint32_t)count, &out, 1, &attrs);
  }
  cml__temp_free(b, in, count * sizeof *in);
  cml__temp_free(b, s, count * sizeof *s);
  return result;
}

cml_value_t cml_op_dynamic_slice(cml_function_t* f, cml_value_t x, const cml_value_t* starts,
                                 const int64_t* sizes, int32_t rank) {
  if (!cml__op_begin(f, CML_OP_DYNAMIC_SLICE)) return CML_VALUE_INVALID;
  if (rank < 0 || rank > CML_MAX_RANK || (rank > 0 && !starts)) {
    return cml__fail(f->builder, CML_STATUS_INVALID_ARGUMENT,
                     "DynamicSlice: bad rank %d or NULL start indices", (int)rank);
  }
  uint32_t in[1 + CML_MAX_RANK];
  cml_shape_t s[1 + CML_MAX_RANK], out;
  cml_ir_attrs_t attrs;
  cml_attrs_clear(&attrs);
  if (!cml_inputs(f, CML_OP_DYNAMIC_SLICE, &x, 1, 0, in, s) ||
      !cml_inputs(f, CML_OP_DYNAMIC_SLICE, starts, (size_t)rank, 1, in + 1, s + 1)) {
    return CML_VALUE_INVALID;
  }
  if (!cml_ok(f, cml__infer_dynamic_slice(&s[0], s + 1, (size_t)rank, sizes, rank, &attrs, &out))) {
    return CML_VALUE_INVALID;
  }
  return cml__op_add_node(f, CML_OP_DYNAMIC_SLICE, in, 1 + (uint32_t)rank, &out, 1, &attrs);
}

cml_value_t cml_op_dynamic_update_slice(cml_function_t* f, cml_value_t x, cml_value_t update,
                                        const cml_value_t* starts, int32_t rank) {
  if (!cml__op_begin(f, CML_OP_DYNAMIC_UPDATE_SLICE)) return CML_VALUE_INVALID;
  if (rank < 0 || rank > CML_MAX_RANK || (rank > 0 && !starts)) {
    return cml__fail(f->builder, CML_STATUS_INVALID_ARGUMENT,
                     "DynamicUpdateSlice: bad rank %d or NULL start indices", (int)rank);
  }
  uint32_t in[2 + CML_MAX_RANK];
  cml_shape_t s[2 + CML_MAX_RANK], out;
  const cml_value_t first[2] = {x, update};
  if (!cml_inputs(f, CML_OP_DYNAMIC_UPDATE_SLICE, first, 2, 0, in, s) ||
      !cml_inputs(f, CML_OP_DYNAMIC_UPDATE_SLICE, starts, (size_t)rank, 2, in + 2, s + 2)) {
    return CML_VALUE_INVALID;
  }
  if (!cml_ok(f, cml__infer_dynamic_update_slice(&s[0], &s[1], s + 2, (size_t)rank, rank, &out))) {
    return CML_VALUE_INVALID;
  }
  return cml__op_add_node(f, CML_OP_DYNAMIC_UPDATE_SLICE, in, 2 + (uint32_t)rank, &out, 1, NULL);
}

cml_value_t cml_op_gather(cml_function_t* f, cml_value_t operand, cml_value_t indices,
                          const cml_gather_dims_t* dims) {
  if (!cml__op_begin(f, CML_OP_GATHER)) return CML_VALUE_INVALID;
  const cml_value_t values[2] = {operand, indices};
  uint32_t in[2];
  cml_shape_t s[2], out;
  cml_ir_attrs_t attrs;
  cml_attrs_clear(&attrs);
  if (!cml_inputs(f, CML_OP_GATHER, values, 2, 0, in, s)) return CML_VALUE_INVALID;
  if (!cml_ok(f, cml__infer_gather(&s[0], &s[1], dims, &attrs, &out))) return CML_VALUE_INVALID;
  return cml__op_add_node(f, CML_OP_GATHER, in, 2, &out, 1, &attrs);
}

cml_value_t cml_op_scatter(cml_function_t* f, cml_op_t op, cml_value_t operand, cml_value_t indices,
                           cml_value_t updates, const cml_scatter_dims_t* dims) {
  if (!f || !f->builder || f->builder->error != CML_OK) return CML_VALUE_INVALID;
  if (op != CML_OP_SCATTER_SUM && op != CML_OP_SCATTER_MAX && op != CML_OP_SCATTER_MIN) {
    return cml__fail(f->builder, CML_STATUS_INVALID_ARGUMENT,
                     "Scatter: %s is not ScatterSum, ScatterMax or ScatterMin", cml_op_name(op));
  }
  if (!cml__op_begin(f, op)) return CML_VALUE_INVALID;
  const cml_value_t values[3] = {operand, indices, updates};
  uint32_t in[3];
  cml_shape_t s[3], out;
  cml_ir_attrs_t attrs;
  cml_attrs_clear(&attrs);
  if (!cml_inputs(f, op, values, 3, 0, in, s)) return CML_VALUE_INVALID;
  if (!cml_ok(f, cml__infer_scatter(op, &s[0], &s[1], &s[2], dims, &attrs, &out))) {
    return CML_VALUE_INVALID;
  }
  return cml__op_add_node(f, op, in, 3, &out, 1, &attrs);
}

cml_value_t cml_op_scatter_sum(cml_function_t* f, cml_value_t operand, cml_value_t indices,
                               cml_value_t updates, const cml_scatter_dims_t* dims) {
  return cml_op_scatter(f, CML_OP_SCATTER_SUM, operand, indices, updates, dims);
}

cml_value_t cml_op_scatter_max(cml_function_t* f, cml_value_t operand, cml_value_t indices,
                               cml_value_t updates, const cml_scatter_dims_t* dims) {
  return cml_op_scatter(f, CML_OP_SCATTER_MAX, operand, indices, updates, dims);
}

cml_value_t cml_op_scatter_min(cml_function_t* f, cml_value_t operand, cml_value_t indices,
                               cml_value_t updates, const cml_scatter_dims_t* dims) {
  return cml_op_scatter(f, CML_OP_SCATTER_MIN, operand, indices, updates, dims);
}

void cml_conv_config_init(cml_conv_config_t* config, int32_t spatial_count,
                          cml_conv_layout_t layout) {
  if (!config) return;
  memset(config, 0, sizeof *config);
  config->spatial_count = spatial_count;
  if (spatial_count < 0 || spatial_count > CML_MAX_RANK - 2 || layout < 0 ||
      layout >= CML_CONV_LAYOUT_COUNT) {
    return;
  }
  const int64_t first = layout == CML_CONV_LAYOUT_CHANNELS_FIRST ? 2 : 1;
  for (int32_t i = 0; i < spatial_count; ++i) {
    config->input_spatial_axes[i] = first + i;
    config->output_spatial_axes[i] = first + i;
    config->kernel_spatial_axes[i] = layout == CML_CONV_LAYOUT_CHANNELS_FIRST ? 2 + i : i;
  }
  config->input_batch_axis = config->output_batch_axis = 0;
  if (layout == CML_CONV_LAYOUT_CHANNELS_FIRST) {
    config->input_channel_axis = config->output_channel_axis = 1;
    config->kernel_output_channel_axis = 0;
    config->kernel_input_channel_axis = 1;
  } else {
    config->input_channel_axis = config->output_channel_axis = spatial_count + 1;
    config->kernel_input_channel_axis = spatial_count;
    config->kernel_output_channel_axis = spatial_count + 1;
  }
}

cml_value_t cml_op_conv_general(cml_function_t* f, cml_value_t input, cml_value_t kernel,
                                const cml_conv_config_t* config) {
  if (!cml__op_begin(f, CML_OP_CONV_GENERAL)) return CML_VALUE_INVALID;
  const cml_value_t values[2] = {input, kernel};
  uint32_t in[2];
  cml_shape_t s[2], out;
  cml_ir_attrs_t attrs;
  cml_attrs_clear(&attrs);
  if (!cml_inputs(f, CML_OP_CONV_GENERAL, values, 2, 0, in, s)) return CML_VALUE_INVALID;
  if (!cml_ok(f, cml__infer_conv(&s[0], &s[1], config, &attrs, &out))) return CML_VALUE_INVALID;
  return cml__op_add_node(f, CML_OP_CONV_GENERAL, in, 2, &out, 1, &attrs);
}

cml_value_t cml_op_select_and_scatter(cml_function_t* f, cml_op_t op, cml_value_t operand,
                                      cml_value_t source, const cml_window_config_t* config) {
  if (!f || !f->builder || f->builder->error != CML_OK) return CML_VALUE_INVALID;
  if (op != CML_OP_SELECT_AND_SCATTER_MAX && op != CML_OP_SELECT_AND_SCATTER_MIN &&
      op != CML_OP_SELECT_AND_SCATTER_SUM) {
    cml_shape_t so, ss;
    char to[CML__SHAPE_TEXT] = "(invalid value)", ts[CML__SHAPE_TEXT] = "(invalid value)";
    if (cml_builder_value_shape(f->builder, operand, &so)) cml_shape_format(&so, to, sizeof to);
    if (cml_builder_value_shape(f->builder, source, &ss)) cml_shape_format(&ss, ts, sizeof ts);
    return cml__fail(f->builder, CML_STATUS_INVALID_ARGUMENT,
                     "SelectAndScatter: %s is not SelectAndScatterMax, Min or Sum (operand %s, "
                     "source %s)",
                     cml_op_name(op), to, ts);
  }
  if (!cml__op_begin(f, op)) return CML_VALUE_INVALID;
  const cml_value_t values[2] = {operand, source};
  uint32_t in[2];
  cml_shape_t s[2], out;
  cml_ir_attrs_t attrs;
  cml_attrs_clear(&attrs);
  if (!cml_inputs(f, op, values, 2, 0, in, s)) return CML_VALUE_INVALID;
  if (!cml_ok(f, cml__infer_select_and_scatter(op, &s[0], &s[1], config, &attrs, &out))) {
    return CML_VALUE_INVALID;
  }
  return cml__op_add_node(f, op, in, 2, &out, 1, &attrs);
}

cml_value_t cml_op_dot_general(cml_function_t* f, cml_value_t lhs, cml_value_t rhs,
                               const cml_dot_config_t* config) {
  if (!cml__op_begin(f, CML_OP_DOT_GENERAL)) return CML_VALUE_INVALID;
  const cml_value_t values[2] = {lhs, rhs};
  uint32_t in[2];
  cml_shape_t s[2], out;
  cml_ir_attrs_t attrs;
  cml_attrs_clear(&attrs);
  if (!cml_inputs(f, CML_OP_DOT_GENERAL, values, 2, 0, in, s)) return CML_VALUE_INVALID;
  if (!cml_ok(f, cml__infer_dot_general(CML_OP_DOT_GENERAL, &s[0], &s[1], config, &attrs, &out))) {
    return CML_VALUE_INVALID;
  }
  return cml__op_add_node(f, CML_OP_DOT_GENERAL, in, 2, &out, 1, &attrs);
}

cml_value_t cml_op_dot(cml_function_t* f, cml_value_t lhs, cml_value_t rhs) {
  if (!f || !f->builder || f->builder->error != CML_OK) return CML_VALUE_INVALID;
  // Dot is recorded as CML_OP_DOT (attributes filled like DotGeneral's); a backend that only
  // implements DotGeneral gets a DotGeneral node instead.
  const cml_capabilities_t* caps = cml_backend_capabilities(f->builder->backend);
  cml_op_t op = CML_OP_DOT;
  if (!cml_capabilities_has_op(caps, CML_OP_DOT) &&
      cml_capabilities_has_op(caps, CML_OP_DOT_GENERAL)) {
    op = CML_OP_DOT_GENERAL;
  }
  if (!cml__op_begin(f, op)) return CML_VALUE_INVALID;
  const cml_value_t values[2] = {lhs, rhs};
  uint32_t in[2];
  cml_shape_t s[2], out;
  cml_ir_attrs_t attrs;
  cml_attrs_clear(&attrs);
  if (!cml_inputs(f, CML_OP_DOT, values, 2, 0, in, s)) return CML_VALUE_INVALID;
  if (!cml_ok(f, cml__infer_dot(&s[0], &s[1], &attrs, &out))) return CML_VALUE_INVALID;
  return cml__op_add_node(f, op, in, 2, &out, 1, &attrs);
}

//===--- multi-output ops ---===//

// Writes the |count| consecutive value ids starting at |first| (0 writes invalids).
static bool cml_write_outputs(cml_value_t first, cml_value_t* out_values, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    out_values[i] = first == CML_VALUE_INVALID ? CML_VALUE_INVALID : first + (cml_value_t)i;
  }
  return first != CML_VALUE_INVALID;
}

bool cml_op_rng_bit_generator(cml_function_t* f, cml_value_t state, const cml_shape_t* shape,
                              cml_value_t* out_new_state, cml_value_t* out_values) {
  if (out_new_state) *out_new_state = CML_VALUE_INVALID;
  if (out_values) *out_values = CML_VALUE_INVALID;
  if (!cml__op_begin(f, CML_OP_RNG_BIT_GENERATOR)) return false;
  if (!out_new_state || !out_values) {
    cml__fail(f->builder, CML_STATUS_INVALID_ARGUMENT, "RNGBitGenerator: NULL output pointers");
    return false;
  }
  uint32_t in;
  cml_shape_t ss, outs[2];
  if (!cml__op_input(f, CML_OP_RNG_BIT_GENERATOR, state, 0, &in, &ss)) return false;
  if (!cml_ok(f, cml__infer_rng(&ss, shape, outs))) return false;
  cml_value_t first = cml__op_add_node(f, CML_OP_RNG_BIT_GENERATOR, &in, 1, outs, 2, NULL);
  if (first == CML_VALUE_INVALID) return false;
  *out_new_state = first;
  *out_values = first + 1;
  return true;
}

static cml_value_t cml_batch_norm(cml_function_t* f, cml_op_t op, const cml_value_t* values,
                                  size_t count, float epsilon, int64_t feature_axis,
                                  uint32_t output_count) {
  if (!cml__op_begin(f, op)) return CML_VALUE_INVALID;
  uint32_t in[5];
  cml_shape_t s[5], outs[3];
  cml_ir_attrs_t attrs;
  cml_attrs_clear(&attrs);
  if (!cml_inputs(f, op, values, count, 0, in, s)) return CML_VALUE_INVALID;
  if (!cml_ok(f, cml__infer_batch_norm(op, &s[0], s + 1, count - 1, epsilon, feature_axis, &attrs,
                                       outs))) {
    return CML_VALUE_INVALID;
  }
  return cml__op_add_node(f, op, in, (uint32_t)count, outs, output_count, &attrs);
}

cml_value_t cml_op_batch_norm_inference(cml_function_t* f, cml_value_t x, cml_value_t scale,
                                        cml_value_t offset, cml_value_t mean, cml_value_t variance,
                                        float epsilon, int64_t feature_axis) {
  const cml_value_t values[5] = {x, scale, offset, mean, variance};
  return cml_batch_norm(f, CML_OP_BATCH_NORM_INFERENCE, values, 5, epsilon, feature_axis, 1);
}

bool cml_op_batch_norm_training(cml_function_t* f, cml_value_t x, cml_value_t scale,
                                cml_value_t offset, float epsilon, int64_t feature_axis,
                                cml_value_t out_values[3]) {
  cml_fill_invalid(out_values, 3);
  if (!out_values) {
    if (f && f->builder) {
      cml__fail(f->builder, CML_STATUS_INVALID_ARGUMENT, "BatchNormForTraining: NULL outputs");
    }
    return false;
  }
  const cml_value_t values[3] = {x, scale, offset};
  cml_value_t first =
      cml_batch_norm(f, CML_OP_BATCH_NORM_TRAINING, values, 3, epsilon, feature_axis, 3);
  return cml_write_outputs(first, out_values, 3);
}

bool cml_op_batch_norm_gradient(cml_function_t* f, cml_value_t x, cml_value_t scale,
                                cml_value_t mean, cml_value_t variance, cml_value_t grad_output,
                                float epsilon, int64_t feature_axis, cml_value_t out_values[3]) {
  cml_fill_invalid(out_values, 3);
  if (!out_values) {
    if (f && f->builder) {
      cml__fail(f->builder, CML_STATUS_INVALID_ARGUMENT, "BatchNormGradient: NULL outputs");
    }
    return false;
  }
  const cml_value_t values[5] = {x, scale, mean, variance, grad_output};
  cml_value_t first =
      cml_batch_norm(f, CML_OP_BATCH_NORM_GRADIENT, values, 5, epsilon, feature_axis, 3);
  return cml_write_outputs(first, out_values, 3);
}

bool cml_op_optimization_barrier(cml_function_t* f, const cml_value_t* operands, size_t count,
                                 cml_value_t* out_values) {
  cml_fill_invalid(out_values, count);
  if (!cml__op_begin(f, CML_OP_OPTIMIZATION_BARRIER)) return false;
  cml_builder_t* b = f->builder;
  if (count == 0 || !operands || !out_values || count > UINT32_MAX / 2) {
    cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
              "OptimizationBarrier: needs at least one operand and an output array");
    return false;
  }
  uint32_t* in = (uint32_t*)cml__temp_alloc(b, count * sizeof *in);
  cml_shape_t* s = (cml_shape_t*)cml__temp_alloc(b, count * sizeof *s);
  cml_value_t first = CML_VALUE_INVALID;
  bool ok = in && s && cml_inputs(f, CML_OP_OPTIMIZATION_BARRIER, operands, count, 0, in, s);
  for (size_t i = 0; ok && i < count; ++i) {
    ok = cml_ok(f, cml__infer_check_dtype(CML_OP_OPTIMIZATION_BARRIER, &s[i], "operand", false));
  }
  if (ok) {
    first = cml__op_add_node(f, CML_OP_OPTIMIZATION_BARRIER, in, (uint32_t)count, s,
                             (uint32_t)count, NULL);
  }
  cml__temp_free(b, in, count * sizeof *in);
  cml__temp_free(b, s, count * sizeof *s);
  return cml_write_outputs(first, out_values, count);
}

cml_value_t cml_op_scheduling_barrier(cml_function_t* f, cml_value_t x, const cml_value_t* deps,
                                      size_t dep_count) {
  if (!cml__op_begin(f, CML_OP_SCHEDULING_BARRIER)) return CML_VALUE_INVALID;
  cml_builder_t* b = f->builder;
  if ((dep_count > 0 && !deps) || dep_count > UINT32_MAX / 2) {
    return cml__fail(b, CML_STATUS_INVALID_ARGUMENT, "SchedulingBarrier: NULL dependencies");
  }
  size_t count = dep_count + 1;
  uint32_t* in = (uint32_t*)cml__temp_alloc(b, count * sizeof *in);
  cml_shape_t* s = (cml_shape_t*)cml__temp_alloc(b, count * sizeof *s);
  cml_value_t result = CML_VALUE_INVALID;
  if (in && s && cml_inputs(f, CML_OP_SCHEDULING_BARRIER, &x, 1, 0, in, s) &&
      cml_inputs(f, CML_OP_SCHEDULING_BARRIER, deps, dep_count, 1, in + 1, s + 1) &&
      cml_ok(f, cml__infer_check_dtype(CML_OP_SCHEDULING_BARRIER, &s[0], "operand", false))) {
    result = cml__op_add_node(f, CML_OP_SCHEDULING_BARRIER, in, (uint32_t)count, &s[0], 1, NULL);
  }
  cml__temp_free(b, in, count * sizeof *in);
  cml__temp_free(b, s, count * sizeof *s);
  return result;
}
