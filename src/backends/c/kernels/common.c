// SPDX-License-Identifier: Apache-2.0
// src/backends/c/kernels/common.c: the dtype traits table and the capability helper shared by the
// C backend's kernel groups.
//
// Thread-safety: the table is constant; every function here is pure and thread-safe.
#include "backends/c/kernels/common.h"

#include "backends/c/cmlc.h"

// Sizes as cml_dtype_bits / 8 for every byte-addressable dtype; the rest stay 0.
const cmlc_dtype_traits_t cmlc_dtype_traits[CML_DTYPE_COUNT] = {
    [CML_DTYPE_BOOL] = {.size = 1},       [CML_DTYPE_I8] = {.size = 1},
    [CML_DTYPE_I16] = {.size = 2},        [CML_DTYPE_I32] = {.size = 4},
    [CML_DTYPE_I64] = {.size = 8},        [CML_DTYPE_U8] = {.size = 1},
    [CML_DTYPE_U16] = {.size = 2},        [CML_DTYPE_U32] = {.size = 4},
    [CML_DTYPE_U64] = {.size = 8},        [CML_DTYPE_F16] = {.size = 2},
    [CML_DTYPE_F32] = {.size = 4},        [CML_DTYPE_F64] = {.size = 8},
    [CML_DTYPE_BF16] = {.size = 2},       [CML_DTYPE_C64] = {.size = 8},
    [CML_DTYPE_C128] = {.size = 16},      [CML_DTYPE_F8E5M2] = {.size = 1},
    [CML_DTYPE_F8E4M3FN] = {.size = 1},   [CML_DTYPE_F8E4M3B11FNUZ] = {.size = 1},
    [CML_DTYPE_F8E5M2FNUZ] = {.size = 1}, [CML_DTYPE_F8E4M3FNUZ] = {.size = 1},
    [CML_DTYPE_F8E4M3] = {.size = 1},     [CML_DTYPE_F8E3M4] = {.size = 1},
    [CML_DTYPE_F8E8M0FNU] = {.size = 1},
};

void cmlc_kernels_group_capabilities(cml_capabilities_t* caps, cml_op_group_t group) {
  for (int op = 1; op < CML_OP_COUNT; ++op) {
    if (cml_op_group((cml_op_t)op) == group) cml_capabilities_set_op(caps, (cml_op_t)op, true);
  }
}
