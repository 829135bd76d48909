// SPDX-License-Identifier: Apache-2.0
// src/core/autodiff_movement.c: VJPs of the movement group (Reshape, Transpose,
// BroadcastInDim, Slice, Pad, Concatenate, Reverse): each is a linear map whose transpose is
// another movement (or a sum).
#include "autodiff_internal.h"

cml_status_t cml__ad_vjp_movement(cml__ad_t* ad, const cml_ir_node_t* n, const cml_value_t* cts,
                                  cml_value_t* in_cts) {
  cml_function_t* f = ad->f;
  cml_value_t g = cts[0];
  const cml_shape_t* xs = cml__ad_in_shape(ad, n, 0);
  const cml_shape_t* os = cml__ad_out_shape(ad, n, 0);
  const cml_ir_attrs_t* a = n->attrs;
  switch (n->op) {
    case CML_OP_RESHAPE:
      in_cts[0] = cml_op_reshape(f, g, xs->dims, xs->rank);
      return CML_OK;
    case CML_OP_TRANSPOSE: {
      int64_t inverse[CML_MAX_RANK];
      for (int32_t i = 0; i < a->axis_count; ++i) inverse[a->axes[i]] = i;
      in_cts[0] = cml_op_transpose(f, g, inverse, a->axis_count);
      return CML_OK;
    }
    case CML_OP_BROADCAST_IN_DIM: {
      // Sum over the new axes and over the size-1 axes that were stretched, then reshape.
      bool mapped[CML_MAX_RANK] = {false};
      int64_t sum_axes[CML_MAX_RANK];
      int32_t count = 0;
      for (int32_t i = 0; i < a->axis_count; ++i) {
        mapped[a->axes[i]] = true;
        if (xs->dims[i] == 1 && os->dims[a->axes[i]] != 1) sum_axes[count++] = a->axes[i];
      }
      for (int32_t i = 0; i < os->rank; ++i) {
        if (!mapped[i]) sum_axes[count++] = i;
      }
      // ReduceSum wants its axes sorted.
      for (int32_t i = 1; i < count; ++i) {
        for (int32_t j = i; j > 0 && sum_axes[j - 1] > sum_axes[j]; --j) {
          int64_t t = sum_axes[j];
          sum_axes[j] = sum_axes[j - 1];
          sum_axes[j - 1] = t;
        }
      }
      cml_value_t r = count ? cml_op_reduce_sum(f, g, sum_axes, (size_t)count) : g;
      in_cts[0] = cml_op_reshape(f, r, xs->dims, xs->rank);
      return CML_OK;
    }
    case CML_OP_SLICE: {
      cml_pad_axis_t pads[CML_MAX_RANK];
      for (int32_t i = 0; i < xs->rank; ++i) {
        if (xs->dims[i] < 0) {
          // A dynamic axis is only ever sliced whole: nothing to pad back.
          pads[i].low = pads[i].high = pads[i].interior = 0;
          continue;
        }
        int64_t s = a->strides[i], m = os->dims[i];
        pads[i].low = a->starts[i];
        pads[i].interior = s - 1;
        int64_t used = m > 0 ? a->starts[i] + (m - 1) * s + 1 : a->starts[i];
        if (m == 0) pads[i].interior = 0;
        pads[i].high = xs->dims[i] - used;
      }
      in_cts[0] = cml_op_pad(f, g, cml__ad_scalar(ad, xs->dtype, 0.0), pads, (size_t)xs->rank);
      return CML_OK;
    }
    case CML_OP_PAD: {
      // Undo the edge padding (negative pads crop, positive ones restore cropped zeros), then
      // take every (interior + 1)-th element.
      cml_pad_axis_t undo[CML_MAX_RANK];
      int64_t starts[CML_MAX_RANK], limits[CML_MAX_RANK], strides[CML_MAX_RANK];
      bool strided = false;
      for (int32_t i = 0; i < xs->rank; ++i) {
        undo[i].low = -a->pads[i].low;
        undo[i].high = -a->pads[i].high;
        undo[i].interior = 0;
        starts[i] = 0;
        strides[i] = a->pads[i].interior + 1;
        strided |= strides[i] != 1;
        // A dynamic axis is never padded: sliced whole (its stored dim is the whole axis).
        limits[i] = xs->dims[i] < 0   ? xs->dims[i]
                    : xs->dims[i] > 0 ? (xs->dims[i] - 1) * strides[i] + 1
                                      : 0;
      }
      cml_value_t zero = cml__ad_scalar(ad, xs->dtype, 0.0);
      cml_value_t core = cml_op_pad(f, g, zero, undo, (size_t)xs->rank);
      cml_value_t dx = strided ? cml_op_slice(f, core, starts, limits, strides, xs->rank) : core;
      if (cml__ad_wants(ad, n, 0)) in_cts[0] = dx;
      if (cml__ad_wants(ad, n, 1)) {
        in_cts[1] =
            cml__ad_sub(ad, cml_op_reduce_sum(f, g, NULL, 0), cml_op_reduce_sum(f, dx, NULL, 0));
      }
      return CML_OK;
    }
    case CML_OP_CONCATENATE: {
      if (os->dims[a->axis] < 0) {
        // The parts' offsets along a dynamic axis are sizes known only at execution.
        return cml__ad_no_vjp(ad, n, "concatenated along a dynamic axis");
      }
      int64_t starts[CML_MAX_RANK] = {0}, limits[CML_MAX_RANK];
      for (int32_t i = 0; i < os->rank; ++i) limits[i] = os->dims[i];
      int64_t at = 0;
      for (uint32_t k = 0; k < n->input_count; ++k) {
        const cml_shape_t* ks = cml__ad_in_shape(ad, n, k);
        starts[a->axis] = at;
        limits[a->axis] = at + ks->dims[a->axis];
        at += ks->dims[a->axis];
        if (cml__ad_wants(ad, n, k)) in_cts[k] = cml_op_slice(f, g, starts, limits, NULL, os->rank);
      }
      return CML_OK;
    }
    case CML_OP_REVERSE:
      in_cts[0] = cml_op_reverse(f, g, a->axes, (size_t)a->axis_count);
      return CML_OK;
    default:
      return cml__ad_no_vjp(ad, n, NULL);
  }
}
