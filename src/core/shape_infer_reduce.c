// SPDX-License-Identifier: Apache-2.0
// src/core/shape_infer_reduce.c: shape inference of the "reduce" ops (the Reduce* ops,
// ArgMinMax).
#include "core/shape_infer_internal.h"

cml_status_t cml__infer_reduce(cml_op_t op, const cml_shape_t* x, const int64_t* axes,
                               size_t axis_count, cml_ir_attrs_t* attrs, cml_shape_t* out) {
  if (cml_op_kind(op) != CML_OPK_REDUCE) {
    return INVALID("%s is not a reduction op", cml_op_name(op));
  }
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(op, x, "operand", false));
  if (axis_count > 0 && !axes) return INVALID("%s: axes is NULL", cml_op_name(op));
  CML_RETURN_IF_ERROR(cml_check_axes(op, x, axes, axis_count, "axis"));
  bool reduced[CML_MAX_RANK] = {false};
  if (axis_count == 0) {
    for (int32_t i = 0; i < x->rank; ++i) reduced[i] = true;
  } else {
    for (size_t i = 0; i < axis_count; ++i) reduced[axes[i]] = true;
  }
  attrs->axis_count = 0;
  *out = *x;
  out->rank = 0;
  for (int32_t i = 0; i < x->rank; ++i) {
    if (reduced[i]) {
      attrs->axes[attrs->axis_count++] = i;
    } else {
      out->dims[out->rank++] = x->dims[i];
    }
  }
  for (int32_t i = out->rank; i < CML_MAX_RANK; ++i) out->dims[i] = 0;
  return CML_OK;
}

cml_status_t cml__infer_arg_min_max(const cml_shape_t* x, int64_t axis, cml_dtype_t out_dtype,
                                    bool is_min, cml_ir_attrs_t* attrs, cml_shape_t* out) {
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_ARG_MIN_MAX, x, "operand", false));
  CML_RETURN_IF_ERROR(cml_check_axis(CML_OP_ARG_MIN_MAX, x, axis, "axis"));
  if (!cml_dtype_is_plain_int(out_dtype)) {
    SHAPE_BUFFERS;
    (void)sb1_;
    (void)sb2_;
    return INVALID("ArgMinMax: output dtype %s must be an integer dtype (operand %s)",
                   cml_dtype_name(out_dtype), S0(x));
  }
  // Every index of the axis must fit the output dtype (an Int8 index of element 299 wrapped to
  // 43 on every backend). A dynamic axis, of unknown size here, is not checked.
  const int bits = cml_dtype_bits(out_dtype);
  const uint64_t largest = bits >= 64                             ? UINT64_MAX
                           : cml_dtype_is_unsigned_int(out_dtype) ? ((uint64_t)1 << bits) - 1
                                                                  : ((uint64_t)1 << (bits - 1)) - 1;
  if (x->dims[axis] > 0 && (uint64_t)(x->dims[axis] - 1) > largest) {
    SHAPE_BUFFERS;
    (void)sb1_;
    (void)sb2_;
    return INVALID(
        "ArgMinMax: axis %lld of %s has %lld elements, whose last index %lld does not "
        "fit the output dtype %s (at most %llu): use a wider one",
        (long long)axis, S0(x), (long long)x->dims[axis], (long long)(x->dims[axis] - 1),
        cml_dtype_name(out_dtype), (unsigned long long)largest);
  }
  *out = *x;
  out->dtype = out_dtype;
  out->rank = 0;
  for (int32_t i = 0; i < x->rank; ++i) {
    if (i != axis) out->dims[out->rank++] = x->dims[i];
  }
  for (int32_t i = out->rank; i < CML_MAX_RANK; ++i) out->dims[i] = 0;
  attrs->axis = axis;
  attrs->dtype = out_dtype;
  attrs->flag = is_min;
  return CML_OK;
}
