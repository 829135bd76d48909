// SPDX-License-Identifier: Apache-2.0
// src/core/autodiff_control.c: VJPs of the control group: the barriers pass the cotangent
// through. Call, If, While and Sort have no VJP yet (UNIMPLEMENTED naming the op; see
// docs/autodiff.md).
#include "autodiff_internal.h"

cml_status_t cml__ad_vjp_control(cml__ad_t* ad, const cml_ir_node_t* n, const cml_value_t* cts,
                                 cml_value_t* in_cts) {
  switch (n->op) {
    case CML_OP_OPTIMIZATION_BARRIER:
      for (uint32_t i = 0; i < n->input_count; ++i) in_cts[i] = cts[i];
      return CML_OK;
    case CML_OP_SCHEDULING_BARRIER:
      in_cts[0] = cts[0];
      return CML_OK;
    case CML_OP_WHILE:
      return cml__ad_no_vjp(ad, n, "loops are not differentiated yet");
    case CML_OP_CALL:
    case CML_OP_IF:
      return cml__ad_no_vjp(ad, n, "callees are not differentiated yet");
    case CML_OP_SORT:
      return cml__ad_no_vjp(ad, n, "sorts are not differentiated yet");
    default:
      return cml__ad_no_vjp(ad, n, NULL);
  }
}
