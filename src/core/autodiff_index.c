// SPDX-License-Identifier: Apache-2.0
// src/core/autodiff_index.c: VJPs of the index group: Gather (a ScatterSum into zeros),
// ScatterSum (the operand passes g, the updates Gather it), ScatterMax/ScatterMin (g goes to
// the winning positions, split equally among ties), DynamicSlice and DynamicUpdateSlice. Index
// operands are integers and carry no gradient.
#include <string.h>

#include "autodiff_internal.h"

// The Gather that reads, for each element of a scatter's updates (of |us|), the operand (of
// |xs|) element it is scattered to: the transpose of scatter dims |sd|.
static void cml_ad_scatter_gather_dims(const cml_scatter_dims_t* sd, const cml_shape_t* xs,
                                       const cml_shape_t* us, cml_gather_dims_t* gd) {
  memset(gd, 0, sizeof *gd);
  gd->index_vector_axis = sd->index_vector_axis;
  gd->offset_output_axis_count = sd->update_window_axis_count;
  memcpy(gd->offset_output_axes, sd->update_window_axes, sizeof gd->offset_output_axes);
  gd->collapsed_slice_axis_count = sd->inserted_window_axis_count;
  memcpy(gd->collapsed_slice_axes, sd->inserted_window_axes, sizeof gd->collapsed_slice_axes);
  gd->start_index_map_count = sd->scatter_axes_to_operand_axes_count;
  memcpy(gd->start_index_map, sd->scatter_axes_to_operand_axes, sizeof gd->start_index_map);
  gd->slice_size_count = xs->rank;
  int32_t w = 0;
  for (int32_t i = 0; i < xs->rank; ++i) {
    bool inserted = false;
    for (int32_t j = 0; j < sd->inserted_window_axis_count; ++j) {
      inserted |= sd->inserted_window_axes[j] == i;
    }
    gd->slice_sizes[i] = inserted ? 1 : us->dims[sd->update_window_axes[w++]];
  }
  gd->indices_are_sorted = sd->indices_are_sorted;
}

// ScatterMax/ScatterMin: y = max (min) of the operand element and every update scattered onto
// it. The winners are the operand element when it equals y and each update that equals y (read
// back with the transposed Gather); g at each position is split equally among its winners, so
// ties share it (JAX's rule) and the total is conserved. A position where NaN wins has no
// winner (NaN != NaN) and passes no gradient. Updates whose windows fall out of bounds are
// skipped by the scatter, but the Gather clamps their indices, as in ScatterSum's VJP.
static void cml_ad_scatter_extremal(cml__ad_t* ad, const cml_ir_node_t* n, cml_value_t g,
                                    cml_value_t* in_cts) {
  cml_function_t* f = ad->f;
  const cml_scatter_dims_t* sd = &n->attrs->u.scatter;
  const cml_shape_t* xs = cml__ad_in_shape(ad, n, 0);
  const cml_shape_t* us = cml__ad_in_shape(ad, n, 2);
  const cml_dtype_t dt = xs->dtype;
  cml_value_t x = cml__ad_in(ad, n, 0), idx = cml__ad_in(ad, n, 1), u = cml__ad_in(ad, n, 2);
  cml_value_t y = cml__ad_out(ad, n, 0);
  cml_gather_dims_t gd;
  cml_ad_scatter_gather_dims(sd, xs, us, &gd);
  cml_value_t one = cml__ad_scalar(ad, dt, 1.0), zero = cml__ad_scalar(ad, dt, 0.0);
  cml_value_t kept = cml_op_equal(f, x, y);                             // operand wins
  cml_value_t won = cml_op_equal(f, u, cml_op_gather(f, y, idx, &gd));  // update wins
  cml_value_t count = cml_op_scatter_sum(f, cml_op_where(f, kept, one, zero), idx,
                                         cml_op_where(f, won, one, zero), sd);
  // count >= 1 wherever a winner reads |share|; elsewhere the division's value is not used.
  cml_value_t share = cml__ad_div(ad, g, cml_op_max(f, count, one));
  if (cml__ad_wants(ad, n, 0)) in_cts[0] = cml_op_where(f, kept, share, zero);
  if (cml__ad_wants(ad, n, 2)) {
    in_cts[2] = cml_op_where(f, won, cml_op_gather(f, share, idx, &gd), zero);
  }
}

cml_status_t cml__ad_vjp_index(cml__ad_t* ad, const cml_ir_node_t* n, const cml_value_t* cts,
                               cml_value_t* in_cts) {
  cml_function_t* f = ad->f;
  cml_value_t g = cts[0];
  const cml_shape_t* xs = cml__ad_in_shape(ad, n, 0);
  switch (n->op) {
    case CML_OP_GATHER: {
      const cml_gather_dims_t* gd = &n->attrs->u.gather;
      cml_scatter_dims_t sd;
      memset(&sd, 0, sizeof sd);
      sd.index_vector_axis = gd->index_vector_axis;
      sd.update_window_axis_count = gd->offset_output_axis_count;
      memcpy(sd.update_window_axes, gd->offset_output_axes, sizeof sd.update_window_axes);
      sd.inserted_window_axis_count = gd->collapsed_slice_axis_count;
      memcpy(sd.inserted_window_axes, gd->collapsed_slice_axes, sizeof sd.inserted_window_axes);
      sd.scatter_axes_to_operand_axes_count = gd->start_index_map_count;
      memcpy(sd.scatter_axes_to_operand_axes, gd->start_index_map,
             sizeof sd.scatter_axes_to_operand_axes);
      sd.indices_are_sorted = gd->indices_are_sorted;
      in_cts[0] = cml_op_scatter_sum(f, cml__ad_zeros(ad, xs), cml__ad_in(ad, n, 1), g, &sd);
      return CML_OK;
    }
    case CML_OP_SCATTER_SUM: {
      if (cml__ad_wants(ad, n, 0)) in_cts[0] = g;
      if (cml__ad_wants(ad, n, 2)) {
        cml_gather_dims_t gd;
        cml_ad_scatter_gather_dims(&n->attrs->u.scatter, xs, cml__ad_in_shape(ad, n, 2), &gd);
        in_cts[2] = cml_op_gather(f, g, cml__ad_in(ad, n, 1), &gd);
      }
      return CML_OK;
    }
    case CML_OP_SCATTER_MAX:
    case CML_OP_SCATTER_MIN:
      cml_ad_scatter_extremal(ad, n, g, in_cts);
      return CML_OK;
    case CML_OP_DYNAMIC_SLICE: {
      cml_value_t starts[CML_MAX_RANK];
      for (int32_t i = 0; i < xs->rank; ++i) starts[i] = cml__ad_in(ad, n, 1 + (uint32_t)i);
      in_cts[0] = cml_op_dynamic_update_slice(f, cml__ad_zeros(ad, xs), g, starts, xs->rank);
      return CML_OK;
    }
    case CML_OP_DYNAMIC_UPDATE_SLICE: {
      const cml_shape_t* us = cml__ad_in_shape(ad, n, 1);
      cml_value_t starts[CML_MAX_RANK];
      for (int32_t i = 0; i < xs->rank; ++i) starts[i] = cml__ad_in(ad, n, 2 + (uint32_t)i);
      if (cml__ad_wants(ad, n, 0)) {
        in_cts[0] = cml_op_dynamic_update_slice(f, g, cml__ad_zeros(ad, us), starts, xs->rank);
      }
      if (cml__ad_wants(ad, n, 1)) {
        in_cts[1] = cml_op_dynamic_slice(f, g, starts, us->dims, us->rank);
      }
      return CML_OK;
    }
    default:
      return cml__ad_no_vjp(ad, n, NULL);
  }
}
