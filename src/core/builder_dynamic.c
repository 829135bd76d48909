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

cml_value_t cml_op_dynamic_reshape(cml_function_t* f, cml_value_t x, const int64_t* dims,
                                   const char* const* names, int32_t rank) {
  if (!cml__op_begin(f, CML_OP_DYNAMIC_RESHAPE)) return CML_VALUE_INVALID;
  uint32_t in;
  cml_shape_t xs, out;
  cml_ir_attrs_t attrs;
  memset(&attrs, 0, sizeof attrs);
  if (!cml__op_input(f, CML_OP_DYNAMIC_RESHAPE, x, 0, &in, &xs)) return CML_VALUE_INVALID;
  bool is_static = false;
  if (!cml_dynamic_ok(
          f, cml__infer_dynamic_reshape(&xs, dims, names, rank, &attrs, &out, &is_static))) {
    return CML_VALUE_INVALID;
  }
  // Every size known now (a static operand): a plain Reshape.
  if (is_static) {
    attrs.axis = 0;
    for (int32_t i = 0; i < out.rank; ++i) attrs.axes[i] = out.dims[i];
    return cml__op_add_node(f, CML_OP_RESHAPE, &in, 1, &out, 1, &attrs);
  }
  return cml__op_add_node(f, CML_OP_DYNAMIC_RESHAPE, &in, 1, &out, 1, &attrs);
}
