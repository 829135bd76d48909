// SPDX-License-Identifier: Apache-2.0
// src/core/shape_infer.c: shape inference and validation of every standard op (StableHLO/XLA
// rules), independent of builders: shapes and attributes in, output shapes and normalized
// attributes (every default filled in) out. This file holds what every group uses (shape text,
// the dtype check); the ops are in shape_infer_<group>.c, one file per op group of cml/ops.def
// (source, elementwise, reduce, movement, index, window, linalg, special), and the shared
// macros and checks in shape_infer_internal.h.
#include "core/shape_infer_internal.h"

const char* cml__shape_text(const cml_shape_t* shape, char* buffer) {
  return cml_shape_format(shape, buffer, CML__SHAPE_TEXT);
}

cml_status_t cml__infer_check_dtype(cml_op_t op, const cml_shape_t* shape, const char* what,
                                    bool allow_packed) {
  cml_dtype_t d = shape->dtype;
  if (allow_packed && cml_dtype_is_storage_only(d)) return CML_OK;
  if (cml_dtype_in(cml_op_dtypes(op), d)) return CML_OK;
  SHAPE_BUFFERS;
  (void)sb1_;
  (void)sb2_;
  return INVALID("%s: %s %s: dtype %s is not accepted by %s", cml_op_name(op), what, S0(shape),
                 cml_dtype_name(d), cml_op_name(op));
}
