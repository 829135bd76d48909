// SPDX-License-Identifier: Apache-2.0
// src/core/autodiff_special.c: VJPs of the special group: BatchNormForTraining (through
// BatchNormGradient, plus the terms of the batch mean and variance outputs), BatchNormGradient
// (second derivatives: its standard-op form, differentiated) and BatchNormForInference; FFT
// (complex forward and inverse: the same transform of the cotangent; RFFT: the complex FFT of the
// zero-padded cotangent, real part; IRFFT: the RFFT of the cotangent, conjugated and weighted by
// each frequency's multiplicity). RNGBitGenerator has none (RNG bits are integers).
#include <stdlib.h>
#include <string.h>

#include "autodiff_internal.h"

// The VJP of RFFT (real x, complex y of L/2+1 on the last axis) and IRFFT (complex z of L/2+1,
// real y of L) over the trailing |lengths|, in JAX's convention for complex cotangents (the
// cotangent of a + ib is dL/da - i dL/db; the one the complex ops' rules use).
//  RFFT = Slice(FFT(Complex(x))): its transpose pads g with zeros to L, takes the (symmetric)
//    complex FFT and keeps the real part.
//  IRFFT(z)[n] = (1/N) sum_k c_k Re(z_k e^{+2 pi i k n / L}) over the half spectrum, with
//    c_0 = 1, c_k = 2 for the frequencies that stand for a conjugate pair, and c_{L/2} = 1 for
//    even L; the imaginary parts of z_0 (and z_{L/2}, L even) are ignored. So
//    dL/da_k - i dL/db_k = (c_k / N) conj(RFFT(g))_k, N the product of |lengths|.
static cml_value_t cml_ad_real_fft(cml__ad_t* ad, const cml_ir_node_t* n, cml_value_t g) {
  cml_function_t* f = ad->f;
  const cml_fft_type_t type = n->attrs->fft_type;
  const int64_t* lengths = n->attrs->axes;
  const size_t count = (size_t)n->attrs->axis_count;
  const cml_shape_t* xs = cml__ad_in_shape(ad, n, 0);
  const cml_shape_t* ys = cml__ad_out_shape(ad, n, 0);
  const int64_t l = lengths[count - 1], half = l / 2 + 1;
  if (type == CML_FFT_FORWARD_REAL) {
    const cml_dtype_t ct = ys->dtype;  // the complex dtype
    cml_pad_axis_t pads[CML_MAX_RANK];
    memset(pads, 0, sizeof pads);
    pads[ys->rank - 1].high = l - half;
    cml_value_t full = cml_op_pad(f, g, cml__ad_scalar(ad, ct, 0.0), pads, (size_t)ys->rank);
    return cml_op_real(f, cml_op_fft(f, full, CML_FFT_FORWARD, lengths, count));
  }
  // IRFFT: the input is complex of |xs|, the output real of |ys|.
  double total = 1;
  for (size_t i = 0; i < count; ++i) total *= (double)lengths[i];
  const cml_dtype_t rt = ys->dtype;
  cml_shape_t ms = cml_shape_make(CML_DTYPE_F64, 1, (int64_t[]){half});
  double* w = calloc((size_t)half, sizeof *w);
  if (!w) {
    return cml__fail(ad->b, CML_STATUS_RESOURCE_EXHAUSTED,
                     "FFT: no memory for the IRFFT VJP's %lld frequency weights", (long long)half);
  }
  for (int64_t k = 0; k < half; ++k) {
    const bool single = k == 0 || (l % 2 == 0 && k == l / 2);
    w[k] = (single ? 1.0 : 2.0) / total;
  }
  cml_value_t weight = cml__ad_convert(ad, cml_constant(f, &ms, w), rt);
  free(w);
  int64_t last = xs->rank - 1;
  weight = cml_op_broadcast_in_dim(f, weight, xs->dims, xs->rank, &last, 1);
  cml_value_t r = cml_op_conj(f, cml_op_fft(f, g, CML_FFT_FORWARD_REAL, lengths, count));
  return cml__ad_mul(ad, r, cml_op_complex(f, weight, cml__ad_scalar(ad, rt, 0.0)));
}

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
    case CML_OP_BATCH_NORM_GRADIENT: {
      // Second derivatives through BatchNormForTraining: the gradient recomputed in standard
      // ops (as XLA defines BatchNormGrad) and differentiated:
      //   xhat = (x - mean) rsqrt(var + eps), doffset = sum(g), dscale = sum(g xhat),
      //   dx = scale rsqrt(var + eps) / N (N g - doffset - xhat dscale).
      cml_value_t mean = cml__ad_in(ad, n, 2), var = cml__ad_in(ad, n, 3);
      cml_value_t g = cml__ad_in(ad, n, 4);
      const double count = (double)cml_shape_element_count(xs) / (double)xs->dims[axis];
      uint32_t begin = f->nodes.count;
      cml_value_t rstd =
          cml_op_rsqrt(f, cml__ad_add(ad, var, cml__ad_scalar(ad, dt, n->attrs->epsilon)));
      cml_value_t xhat = cml__ad_mul(ad, cml__ad_sub(ad, x, cml_ad_feature(ad, mean, xs, axis)),
                                     cml_ad_feature(ad, rstd, xs, axis));
      cml_value_t doffset = cml_ad_feature_sum(ad, g, xs, axis);
      cml_value_t dscale = cml_ad_feature_sum(ad, cml__ad_mul(ad, g, xhat), xs, axis);
      cml_value_t inner =
          cml__ad_sub(ad,
                      cml__ad_sub(ad, cml__ad_mul(ad, g, cml__ad_scalar(ad, dt, count)),
                                  cml_ad_feature(ad, doffset, xs, axis)),
                      cml__ad_mul(ad, xhat, cml_ad_feature(ad, dscale, xs, axis)));
      cml_value_t factor =
          cml__ad_mul(ad, cml__ad_mul(ad, scale, rstd), cml__ad_scalar(ad, dt, 1.0 / count));
      cml_value_t dx = cml__ad_mul(ad, cml_ad_feature(ad, factor, xs, axis), inner);
      if (ad->b->error != CML_OK) return CML_OK;
      const uint32_t index[3] = {dx & CML__VALUE_INDEX_MASK, dscale & CML__VALUE_INDEX_MASK,
                                 doffset & CML__VALUE_INDEX_MASK};
      return cml__ad_nested(ad, begin, index, cts, 3);
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
      // conjugation).
      const cml_fft_type_t type = n->attrs->fft_type;
      if (type == CML_FFT_FORWARD_REAL || type == CML_FFT_INVERSE_REAL) {
        in_cts[0] = cml_ad_real_fft(ad, n, cts[0]);
        return CML_OK;
      }
      in_cts[0] = cml_op_fft(f, cts[0], type, n->attrs->axes, (size_t)n->attrs->axis_count);
      return CML_OK;
    }
    default:
      return cml__ad_no_vjp(ad, n, NULL);
  }
}
