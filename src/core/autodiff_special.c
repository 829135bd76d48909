// SPDX-License-Identifier: Apache-2.0
// src/core/autodiff_special.c: VJPs of the special group: BatchNormForTraining (through
// BatchNormGradient, plus the terms of the batch mean and variance outputs) and
// BatchNormForInference; FFT (complex forward and inverse: the same transform of the cotangent).
// The real FFTs and RNGBitGenerator have none (RNG bits are integers).
#include "autodiff_internal.h"

// |v| (rank 1 over the feature axis) broadcast to |xs|.
static cml_value_t cml_ad_feature(cml__ad_t* ad, cml_value_t v, const cml_shape_t* xs,
                                  int64_t axis) {
  return cml_op_broadcast_in_dim(ad->f, v, xs->dims, xs->rank, &axis, 1);
}

// Sum of |v| (of |xs|'s shape) over every axis but the feature axis.
static cml_value_t cml_ad_feature_sum(cml__ad_t* ad, cml_value_t v, const cml_shape_t* xs,
                                      int64_t axis) {
  int64_t axes[CML_MAX_RANK];
  int32_t count = 0;
  for (int32_t i = 0; i < xs->rank; ++i) {
    if (i != axis) axes[count++] = i;
  }
  return cml_op_reduce_sum(ad->f, v, axes, (size_t)count);
}

cml_status_t cml__ad_vjp_special(cml__ad_t* ad, const cml_ir_node_t* n, const cml_value_t* cts,
                                 cml_value_t* in_cts) {
  cml_function_t* f = ad->f;
  const cml_shape_t* xs = cml__ad_in_shape(ad, n, 0);
  int64_t axis = n->attrs->axis;
  cml_dtype_t dt = xs->dtype;
  cml_value_t x = cml__ad_in(ad, n, 0), scale = cml__ad_in(ad, n, 1);
  switch (n->op) {
    case CML_OP_BATCH_NORM_TRAINING: {
      cml_value_t mean = cml__ad_out(ad, n, 1), var = cml__ad_out(ad, n, 2);
      cml_value_t g = cts[0] ? cts[0] : cml__ad_zeros(ad, xs);
      cml_value_t outs[3];
      if (!cml_op_batch_norm_gradient(f, x, scale, mean, var, g, n->attrs->epsilon, axis, outs)) {
        return CML_OK;  // the error sticks to the builder
      }
      cml_value_t dx = outs[0];
      double count = (double)cml_shape_element_count(xs) / (double)xs->dims[axis];
      if (cts[1]) {  // d mean / dx = 1 / N
        dx = cml__ad_add(ad, dx,
                         cml__ad_mul(ad, cml_ad_feature(ad, cts[1], xs, axis),
                                     cml__ad_scalar(ad, dt, 1.0 / count)));
      }
      if (cts[2]) {  // d var / dx = 2 (x - mean) / N (biased variance)
        cml_value_t centered = cml__ad_sub(ad, x, cml_ad_feature(ad, mean, xs, axis));
        dx = cml__ad_add(
            ad, dx,
            cml__ad_mul(ad, cml_ad_feature(ad, cts[2], xs, axis),
                        cml__ad_mul(ad, centered, cml__ad_scalar(ad, dt, 2.0 / count))));
      }
      if (cml__ad_wants(ad, n, 0)) in_cts[0] = dx;
      if (cml__ad_wants(ad, n, 1)) in_cts[1] = outs[1];
      if (cml__ad_wants(ad, n, 2)) in_cts[2] = outs[2];
      return CML_OK;
    }
    case CML_OP_BATCH_NORM_INFERENCE: {
      // y = (x - mean) * rsqrt(var + eps) * scale + offset
      cml_value_t g = cts[0];
      cml_value_t mean = cml__ad_in(ad, n, 3), var = cml__ad_in(ad, n, 4);
      cml_value_t inv =
          cml_op_rsqrt(f, cml__ad_add(ad, var, cml__ad_scalar(ad, dt, n->attrs->epsilon)));
      cml_value_t centered = cml__ad_sub(ad, x, cml_ad_feature(ad, mean, xs, axis));
      cml_value_t gs = cml_ad_feature_sum(ad, g, xs, axis);
      cml_value_t gc = cml_ad_feature_sum(ad, cml__ad_mul(ad, g, centered), xs, axis);
      cml_value_t si = cml__ad_mul(ad, scale, inv);
      if (cml__ad_wants(ad, n, 0)) in_cts[0] = cml__ad_mul(ad, g, cml_ad_feature(ad, si, xs, axis));
      if (cml__ad_wants(ad, n, 1)) in_cts[1] = cml__ad_mul(ad, gc, inv);
      if (cml__ad_wants(ad, n, 2)) in_cts[2] = gs;
      if (cml__ad_wants(ad, n, 3)) in_cts[3] = cml_op_neg(f, cml__ad_mul(ad, gs, si));
      if (cml__ad_wants(ad, n, 4)) {  // d rsqrt(v + eps) = -1/2 inv^3
        cml_value_t inv3 = cml__ad_mul(ad, inv, cml__ad_mul(ad, inv, inv));
        in_cts[4] = cml__ad_mul(ad, cml__ad_mul(ad, gc, scale),
                                cml__ad_mul(ad, inv3, cml__ad_scalar(ad, dt, -0.5)));
      }
      return CML_OK;
    }
    case CML_OP_FFT: {
      // The DFT matrix (and its Kronecker products over several axes) is symmetric, so the
      // transpose of a complex FFT or inverse FFT is the same transform (JAX's transpose, no
      // conjugation). The real transforms' transposes are not implemented.
      const cml_fft_type_t type = n->attrs->fft_type;
      if (type != CML_FFT_FORWARD && type != CML_FFT_INVERSE) {
        return cml__ad_no_vjp(ad, n, "the real FFTs (RFFT, IRFFT) have none yet");
      }
      in_cts[0] = cml_op_fft(f, cts[0], type, n->attrs->axes, (size_t)n->attrs->axis_count);
      return CML_OK;
    }
    default:
      return cml__ad_no_vjp(ad, n, NULL);
  }
}
