// SPDX-License-Identifier: Apache-2.0
// src/core/fused_internal.h: what src/core/fused.c shares with the quantized fused ops
// (src/core/fused_quant.c). Not a public header.
#ifndef CML_CORE_FUSED_INTERNAL_H_
#define CML_CORE_FUSED_INTERNAL_H_

#include "cml/fused.h"

#ifdef __cplusplus
extern "C" {
#endif

// |activation| applied to |y| (of float dtype |dtype|) in standard ops, as FusedDense's
// decomposition does it (Gelu: the exact erf form). NONE returns |y|.
cml_value_t cml__fused_activation_ops(cml_function_t* f, cml_value_t y, cml_dtype_t dtype,
                                      cml_activation_t activation);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_CORE_FUSED_INTERNAL_H_
