// SPDX-License-Identifier: Apache-2.0
// src/backends/c/kernels/common.c: small helpers shared by the C backend's kernels.
//
// Thread-safety: every function here is pure and thread-safe.
#include "backends/c/cmlc.h"

void cmlc_strides(const cml_shape_t* shape, int64_t* out_strides) {
  int64_t stride = 1;
  for (int32_t i = shape->rank - 1; i >= 0; --i) {
    out_strides[i] = stride;
    stride *= shape->dims[i];
  }
}

void cmlc_kernels_group_capabilities(cml_capabilities_t* caps, cml_op_group_t group) {
  for (int op = 1; op < CML_OP_COUNT; ++op) {
    if (cml_op_group((cml_op_t)op) == group) cml_capabilities_set_op(caps, (cml_op_t)op, true);
  }
}
