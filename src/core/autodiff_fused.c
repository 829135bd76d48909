// SPDX-License-Identifier: Apache-2.0
// src/core/autodiff_fused.c: VJPs of the fused ops recorded as one node (a backend that
// advertises them). Backends without them get the decomposition, which is differentiated op
// by op. FusedSoftmax: y * (g - sum(g * y)). FusedGelu: the derivative of the exact (erf) or
// tanh form.
#include <math.h>

#include "autodiff_internal.h"

cml_status_t cml__ad_vjp_fused(cml__ad_t* ad, const cml_ir_node_t* n, const cml_value_t* cts,
                               cml_value_t* in_cts) {
  cml_function_t* f = ad->f;
  cml_value_t g = cts[0], x = cml__ad_in(ad, n, 0), y = cml__ad_out(ad, n, 0);
  cml_dtype_t dt = cml__ad_in_shape(ad, n, 0)->dtype;
  switch (n->op) {
    case CML_OP_FUSED_SOFTMAX: {
      int64_t axis = n->attrs->axis;
      cml_value_t gy = cml__ad_mul(ad, g, y);
      cml_value_t s = cml__ad_sum_keep(ad, gy, &axis, 1);
      in_cts[0] = cml__ad_sub(ad, gy, cml__ad_mul(ad, y, s));
      return CML_OK;
    }
    case CML_OP_FUSED_GELU: {
      cml_value_t half = cml__ad_scalar(ad, dt, 0.5), one = cml__ad_scalar(ad, dt, 1.0);
      cml_value_t d;
      if (n->attrs->fused.exact) {  // Phi(x) + x phi(x)
        cml_value_t cdf = cml__ad_mul(
            ad, half,
            cml__ad_add(ad, one,
                        cml_op_erf(f, cml__ad_mul(ad, x, cml__ad_scalar(ad, dt, M_SQRT1_2)))));
        cml_value_t pdf = cml__ad_mul(
            ad, cml_op_exp(f, cml__ad_mul(ad, cml__ad_mul(ad, x, x), cml__ad_scalar(ad, dt, -0.5))),
            cml__ad_scalar(ad, dt, 0.3989422804014327));
        d = cml__ad_add(ad, cml__ad_mul(ad, x, pdf), cdf);
      } else {  // 0.5 (1 + t) + 0.5 x (1 - t^2) c (1 + 3 a x^2), t = tanh(c (x + a x^3))
        const double a = 0.044715, c = 0.79788456080286535588;
        cml_value_t x2 = cml__ad_mul(ad, x, x);
        cml_value_t inner = cml__ad_mul(
            ad,
            cml__ad_add(ad, x, cml__ad_mul(ad, cml__ad_mul(ad, x2, x), cml__ad_scalar(ad, dt, a))),
            cml__ad_scalar(ad, dt, c));
        cml_value_t t = cml_op_tanh(f, inner);
        cml_value_t dinner = cml__ad_mul(
            ad, cml__ad_add(ad, one, cml__ad_mul(ad, x2, cml__ad_scalar(ad, dt, 3.0 * a))),
            cml__ad_scalar(ad, dt, c));
        cml_value_t sech2 = cml__ad_sub(ad, one, cml__ad_mul(ad, t, t));
        d = cml__ad_add(ad, cml__ad_mul(ad, half, cml__ad_add(ad, one, t)),
                        cml__ad_mul(ad, cml__ad_mul(ad, half, x), cml__ad_mul(ad, sech2, dinner)));
      }
      in_cts[0] = cml__ad_mul(ad, g, d);
      return CML_OK;
    }
    default:
      return cml__ad_no_vjp(ad, n,
                            "fused op without a VJP: build it on a backend that "
                            "decomposes it, e.g. c:fusion=false");
  }
}
