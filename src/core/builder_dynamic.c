// SPDX-License-Identifier: Apache-2.0
// src/core/builder_dynamic.c: builders of the dynamic-shape ops (DynamicDimensionSize,
// DynamicShape, DynamicReshape). Backends never run them: the specialization of a module for
// one binding set (src/core/dynamic.c) turns them into Constant and Reshape nodes.
#include <stdint.h>
#include <string.h>

#include "core/builder_internal.h"

static bool cml_dynamic_ok(cml_function_t* f, cml_status_t st) {
  if (st == CML_OK) return true;
  cml__fail_status(f->builder, st);
  return false;
}

cml_value_t cml_op_dynamic_dimension_size(cml_function_t* f, cml_value_t x, int64_t axis) {
  if (!cml__op_begin(f, CML_OP_DYNAMIC_DIMENSION_SIZE)) return CML_VALUE_INVALID;
  uint32_t in;
  cml_shape_t xs, out;
  cml_ir_attrs_t attrs;
  memset(&attrs, 0, sizeof attrs);
  if (!cml__op_input(f, CML_OP_DYNAMIC_DIMENSION_SIZE, x, 0, &in, &xs)) return CML_VALUE_INVALID;
  if (!cml_dynamic_ok(f, cml__infer_dynamic_dimension_size(&xs, axis, &attrs, &out))) {
    return CML_VALUE_INVALID;
  }
  if (xs.dims[axis] >= 0) {  // a static axis: its size is a constant now
    if (xs.dims[axis] > INT32_MAX) {
      return cml__fail(f->builder, CML_STATUS_OUT_OF_RANGE,
                       "DynamicDimensionSize: axis %lld of size %lld is beyond Int32",
                       (long long)axis, (long long)xs.dims[axis]);
    }
    int32_t size = (int32_t)xs.dims[axis];
    return cml_constant(f, &out, &size);
  }
  return cml__op_add_node(f, CML_OP_DYNAMIC_DIMENSION_SIZE, &in, 1, &out, 1, &attrs);
}

cml_value_t cml_op_dynamic_shape(cml_function_t* f, cml_value_t x) {
  if (!cml__op_begin(f, CML_OP_DYNAMIC_SHAPE)) return CML_VALUE_INVALID;
  uint32_t in;
  cml_shape_t xs, out;
  if (!cml__op_input(f, CML_OP_DYNAMIC_SHAPE, x, 0, &in, &xs)) return CML_VALUE_INVALID;
  if (!cml_dynamic_ok(f, cml__infer_dynamic_shape(&xs, &out))) return CML_VALUE_INVALID;
  if (!cml_shape_is_dynamic(&xs)) {  // every size is a constant now
    int32_t sizes[CML_MAX_RANK] = {0};
    for (int32_t i = 0; i < xs.rank; ++i) {
      if (xs.dims[i] > INT32_MAX) {
        return cml__fail(f->builder, CML_STATUS_OUT_OF_RANGE,
                         "DynamicShape: axis %d of size %lld is beyond Int32", (int)i,
                         (long long)xs.dims[i]);
      }
      sizes[i] = (int32_t)xs.dims[i];
    }
    return cml_constant(f, &out, sizes);
  }
  return cml__op_add_node(f, CML_OP_DYNAMIC_SHAPE, &in, 1, &out, 1, NULL);
}

// The op that makes value |index| of |impl| data-dependent (not computable from the input
// shapes alone), or CML_OP_COUNT when it is one of the closed set a size value may use.
// |budget| bounds the nodes visited.
static cml_op_t cml_size_value_blocker(const cml__module_impl_t* impl, uint32_t index,
                                       int32_t* budget) {
  const cml_ir_node_t* node = cml__value_node(impl, index);
  if (--*budget < 0) return node->op;  // too large an expression to evaluate on the host
  cml_dtype_t dtype = impl->values[index].shape.dtype;
  if (dtype != CML_DTYPE_I32 && dtype != CML_DTYPE_I64) return node->op;
  switch (node->op) {
    case CML_OP_CONSTANT:
    case CML_OP_DYNAMIC_DIMENSION_SIZE:
    case CML_OP_DYNAMIC_SHAPE:
      return CML_OP_COUNT;
    case CML_OP_SLICE:
    case CML_OP_RESHAPE:
    case CML_OP_CONVERT_DTYPE:
    case CML_OP_ADD:
    case CML_OP_SUB:
    case CML_OP_MUL:
    case CML_OP_DIV:
    case CML_OP_MAX:
    case CML_OP_MIN:
      for (uint32_t k = 0; k < node->input_count; ++k) {
        cml_op_t blocker = cml_size_value_blocker(impl, node->inputs[k], budget);
        if (blocker != CML_OP_COUNT) return blocker;
      }
      return CML_OP_COUNT;
    default:
      return node->op;
  }
}

cml_value_t cml_op_dynamic_reshape_values(cml_function_t* f, cml_value_t x, const int64_t* dims,
                                          const char* const* names, const cml_value_t* values,
                                          int32_t rank) {
  if (!cml__op_begin(f, CML_OP_DYNAMIC_RESHAPE)) return CML_VALUE_INVALID;
  uint32_t in[1 + CML_MAX_RANK];
  uint32_t in_count = 1;
  cml_shape_t xs, out;
  cml_ir_attrs_t attrs;
  memset(&attrs, 0, sizeof attrs);
  if (!cml__op_input(f, CML_OP_DYNAMIC_RESHAPE, x, 0, &in[0], &xs)) return CML_VALUE_INVALID;
  bool valued[CML_MAX_RANK] = {false};
  for (int32_t i = 0; values && i >= 0 && i < rank && i < CML_MAX_RANK; ++i) {
    if (values[i] == CML_VALUE_INVALID) continue;
    if (!names || !names[i]) {
      return cml__fail(f->builder, CML_STATUS_INVALID_ARGUMENT,
                       "DynamicReshape: axis %d has a size value but no name", (int)i);
    }
    cml_shape_t vs;
    if (!cml__op_input(f, CML_OP_DYNAMIC_RESHAPE, values[i], 1 + (size_t)i, &in[in_count], &vs)) {
      return CML_VALUE_INVALID;
    }
    if (vs.rank != 0 || (vs.dtype != CML_DTYPE_I32 && vs.dtype != CML_DTYPE_I64)) {
      char text[CML__SHAPE_TEXT];
      return cml__fail(f->builder, CML_STATUS_INVALID_ARGUMENT,
                       "DynamicReshape: the size value of axis %d (\"%s\") is %s; it must be an "
                       "Int32 or Int64 scalar",
                       (int)i, names[i], cml__shape_text(&vs, text));
    }
    int32_t budget = 256;
    cml_op_t blocker = cml_size_value_blocker(f->impl, in[in_count], &budget);
    if (blocker != CML_OP_COUNT) {
      return cml__fail(f->builder, CML_STATUS_INVALID_ARGUMENT,
                       "DynamicReshape: the size value of axis %d (\"%s\") depends on %s, so it "
                       "is data-dependent (size values may only use Constant, "
                       "DynamicDimensionSize, DynamicShape, Slice, Reshape, integer ConvertDType, "
                       "Add, Sub, Mul, Div, Max and Min, at most 256 nodes)",
                       (int)i, names[i], cml_op_name(blocker));
    }
    valued[i] = true;
    attrs.limits[i] = in_count++;  // the input that holds axis i's size
  }
  bool is_static = false;
  if (!cml_dynamic_ok(f, cml__infer_dynamic_reshape(&xs, dims, names, valued, rank, &attrs, &out,
                                                    &is_static))) {
    return CML_VALUE_INVALID;
  }
  // Every size known now (a static operand): a plain Reshape.
  if (is_static) {
    attrs.axis = 0;
    for (int32_t i = 0; i < out.rank; ++i) attrs.axes[i] = out.dims[i];
    return cml__op_add_node(f, CML_OP_RESHAPE, in, 1, &out, 1, &attrs);
  }
  return cml__op_add_node(f, CML_OP_DYNAMIC_RESHAPE, in, in_count, &out, 1, &attrs);
}

cml_value_t cml_op_dynamic_reshape(cml_function_t* f, cml_value_t x, const int64_t* dims,
                                   const char* const* names, int32_t rank) {
  return cml_op_dynamic_reshape_values(f, x, dims, names, NULL, rank);
}
