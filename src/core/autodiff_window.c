// SPDX-License-Identifier: Apache-2.0
// src/core/autodiff_window.c: VJPs of the window group. ReduceWindow Sum: the cotangent,
// dilated by the strides and edge-padded by window - 1, summed over the same window (stride
// 1), then the operand's padding removed; with windows that do not overlap (stride = window on
// every axis: 2x2/2 average pooling) each operand element lies in at most one window and its
// cotangent is that window's, so the cotangent is broadcast over the windows instead. ReduceWindow
// Max/Min: SelectAndScatter of the cotangent onto the selected elements. Dilated windows have no
// VJP yet.
#include <string.h>

#include "autodiff_internal.h"

// Whether no two windows of |w| (output |os|) overlap: stride = window on every axis that has
// more than one output (the rank fits twice in CML_MAX_RANK, for the split axes).
static bool cml__ad_window_disjoint(const cml_window_config_t* w, const cml_shape_t* os) {
  if (2 * w->rank > CML_MAX_RANK || cml_shape_element_count(os) == 0) return false;
  for (int32_t i = 0; i < w->rank; ++i) {
    if (w->window_dims[i] < 1 || (os->dims[i] > 1 && w->strides[i] != w->window_dims[i])) {
      return false;
    }
  }
  return true;
}

// The cotangent of a ReduceWindow Sum with disjoint windows: |g| ([.., m, ..]) broadcast over
// each window ([.., m, k, ..], reshaped to [.., m * k, ..]: padded position p of axis i reads
// window p / k), then cut or zero-padded to the operand: the padding removed, positions past
// the last window zero.
static cml_value_t cml__ad_window_spread(cml__ad_t* ad, cml_value_t g, const cml_window_config_t* w,
                                         const cml_shape_t* xs, const cml_shape_t* os) {
  cml_function_t* f = ad->f;
  int64_t split[CML_MAX_RANK], axes[CML_MAX_RANK], joined[CML_MAX_RANK];
  cml_pad_axis_t edges[CML_MAX_RANK];
  int32_t rank = 0;
  bool padded = false;
  for (int32_t i = 0; i < w->rank; ++i) {
    const int64_t m = os->dims[i], k = w->window_dims[i];
    axes[i] = rank;
    split[rank++] = m;
    if (k > 1) split[rank++] = k;
    joined[i] = m * k;
    // The windows span the padded positions [0, m * k): the operand is [low, low + dim).
    edges[i].low = -w->padding_low[i];
    edges[i].high = xs->dims[i] + w->padding_low[i] - m * k;
    edges[i].interior = 0;
    padded |= edges[i].low != 0 || edges[i].high != 0;
  }
  cml_value_t spread = cml_op_broadcast_in_dim(f, g, split, rank, axes, w->rank);
  spread = cml_op_reshape(f, spread, joined, w->rank);
  if (!padded) return spread;
  return cml_op_pad(f, spread, cml__ad_scalar(ad, xs->dtype, 0.0), edges, (size_t)w->rank);
}

cml_status_t cml__ad_vjp_window(cml__ad_t* ad, const cml_ir_node_t* n, const cml_value_t* cts,
                                cml_value_t* in_cts) {
  if (n->op != CML_OP_REDUCE_WINDOW) return cml__ad_no_vjp(ad, n, NULL);
  cml_function_t* f = ad->f;
  const cml_window_config_t* w = &n->attrs->u.window;
  const cml_shape_t* xs = cml__ad_in_shape(ad, n, 0);
  const cml_shape_t* os = cml__ad_out_shape(ad, n, 0);
  for (int32_t i = 0; i < w->rank; ++i) {
    if (w->input_dilations[i] != 1 || w->window_dilations[i] != 1) {
      return cml__ad_no_vjp(ad, n, "dilated windows");
    }
  }
  cml_value_t g = cts[0];
  switch (n->attrs->reduce_type) {
    case CML_REDUCE_SUM: {
      if (cml__ad_window_disjoint(w, os)) {
        in_cts[0] = cml__ad_window_spread(ad, g, w, xs, os);
        return CML_OK;
      }
      cml_pad_axis_t pads[CML_MAX_RANK], crop[CML_MAX_RANK];
      cml_window_config_t sum;
      memset(&sum, 0, sizeof sum);
      sum.rank = w->rank;
      for (int32_t i = 0; i < w->rank; ++i) {
        int64_t padded = w->padding_low[i] + xs->dims[i] + w->padding_high[i];
        int64_t m = os->dims[i], s = w->strides[i], k = w->window_dims[i];
        pads[i].low = k - 1;
        pads[i].interior = m > 0 ? s - 1 : 0;
        pads[i].high = padded - (m > 0 ? (m - 1) * s + 1 : 0);
        sum.window_dims[i] = k;
        sum.strides[i] = 1;
        crop[i].low = -w->padding_low[i];
        crop[i].high = -w->padding_high[i];
        crop[i].interior = 0;
      }
      cml_value_t zero = cml__ad_scalar(ad, xs->dtype, 0.0);
      cml_value_t spread = cml_op_pad(f, g, zero, pads, (size_t)w->rank);
      cml_value_t summed = cml_op_reduce_window(f, spread, CML_REDUCE_SUM, &sum);
      in_cts[0] = cml_op_pad(f, summed, zero, crop, (size_t)w->rank);
      return CML_OK;
    }
    case CML_REDUCE_MAX:
    case CML_REDUCE_MIN: {
      cml_window_config_t c = *w;
      for (int32_t i = 0; i < c.rank; ++i) c.input_dilations[i] = c.window_dilations[i] = 0;
      cml_op_t op = n->attrs->reduce_type == CML_REDUCE_MAX ? CML_OP_SELECT_AND_SCATTER_MAX
                                                            : CML_OP_SELECT_AND_SCATTER_MIN;
      in_cts[0] = cml_op_select_and_scatter(f, op, cml__ad_in(ad, n, 0), g, &c);
      return CML_OK;
    }
    default:
      return cml__ad_no_vjp(ad, n, "ReduceWindow Product");
  }
}
