// SPDX-License-Identifier: Apache-2.0
// src/core/shape_infer_source.c: shape inference of the "source" ops (Parameter, Constant: a
// user-given shape).
#include "core/shape_infer_internal.h"

cml_status_t cml__infer_user_shape(cml_op_t op, const cml_shape_t* shape, bool allow_packed,
                                   cml_shape_t* out) {
  CML_RETURN_IF_ERROR(cml_check_user_shape(op, shape, "the"));
  if (!cml_dtype_is_array_dtype(shape->dtype) ||
      (!allow_packed && cml_dtype_is_storage_only(shape->dtype))) {
    SHAPE_BUFFERS;
    (void)sb1_;
    (void)sb2_;
    return INVALID("%s: dtype %s of %s is not accepted", cml_op_name(op),
                   cml_dtype_name(shape->dtype), S0(shape));
  }
  *out = cml_shape_with(shape->dtype, shape->rank, shape->dims);
  return CML_OK;
}
