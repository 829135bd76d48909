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

// Index components as the forward clamps or checks them: for the start indices |idx| (shape
// |is|) of windows of |gd|'s slice sizes into an operand of shape |xs|, each component's upper
// bound (operand size minus window size along the axis it maps to) at every element of |idx|, as
// Int64 of |is|'s shape. *|out_fits| is false when some window is larger than its operand axis
// (no start fits).
static cml_value_t cml_ad_index_upper(cml__ad_t* ad, const cml_shape_t* is,
                                      const cml_gather_dims_t* gd, const cml_shape_t* xs,
                                      bool* out_fits) {
  cml_function_t* f = ad->f;
  int64_t upper[CML_MAX_RANK];
  *out_fits = true;
  for (int32_t j = 0; j < gd->start_index_map_count; ++j) {
    const int64_t a = gd->start_index_map[j];
    upper[j] = xs->dims[a] - gd->slice_sizes[a];
    if (upper[j] < 0) *out_fits = false, upper[j] = 0;
  }
  const bool implicit = gd->index_vector_axis == is->rank;
  cml_shape_t us = cml_shape_make(CML_DTYPE_I64, implicit ? 0 : 1,
                                  (int64_t[]){(int64_t)gd->start_index_map_count});
  cml_value_t u = cml_constant(f, &us, upper);
  return cml_op_broadcast_in_dim(f, u, is->dims, is->rank,
                                 implicit ? NULL : (const int64_t[]){gd->index_vector_axis},
                                 implicit ? 0 : 1);
}

// Start indices |idx| of |dtype| as I64, for comparisons with bounds: a U64 start of 2^63 or
// more (which the ops clamp to the end, or skip) is held at INT64_MAX instead of wrapping to a
// negative number (which clamped to 0: the gradient of a Gather went to the first row).
static cml_value_t cml_ad_index_i64(cml_function_t* f, cml_value_t idx, cml_dtype_t dtype) {
  if (dtype == CML_DTYPE_U64) {
    idx = cml_op_min(f, idx, cml_constant_scalar_i64(f, CML_DTYPE_U64, INT64_MAX));
  }
  return cml_op_convert_dtype(f, idx, CML_DTYPE_I64);
}

// Whether each window of a scatter (|gd| is its transposed Gather) lies inside the operand:
// the scatter skips the others. Bool of the updates' shape |us|.
static cml_value_t cml_ad_scatter_applied(cml__ad_t* ad, cml_value_t idx, const cml_shape_t* is,
                                          const cml_scatter_dims_t* sd, const cml_gather_dims_t* gd,
                                          const cml_shape_t* xs, const cml_shape_t* us) {
  cml_function_t* f = ad->f;
  bool fits = true;
  cml_value_t upper = cml_ad_index_upper(ad, is, gd, xs, &fits);
  cml_value_t i64 = cml_ad_index_i64(f, idx, is->dtype);
  cml_value_t ok = cml_op_logical_and(
      f, cml_op_greater_or_equal(f, i64, cml_constant_scalar_i64(f, CML_DTYPE_I64, 0)),
      cml_op_less_or_equal(f, i64, upper));
  if (!fits) ok = cml_op_logical_and(f, ok, cml_constant_scalar_i64(f, CML_DTYPE_BOOL, 0));
  if (gd->index_vector_axis < is->rank) {
    const int64_t axis = gd->index_vector_axis;
    ok = cml_op_reduce(f, CML_OP_REDUCE_LOGICAL_AND, ok, &axis, 1);
  }
  // The updates' scatter axes (those not in the window) are the indices' batch axes, in order.
  int64_t map[CML_MAX_RANK];
  int32_t n = 0;
  for (int32_t d = 0; d < us->rank; ++d) {
    bool window = false;
    for (int32_t k = 0; k < sd->update_window_axis_count; ++k) {
      window |= sd->update_window_axes[k] == d;
    }
    if (!window) map[n++] = d;
  }
  return cml_op_broadcast_in_dim(f, ok, us->dims, us->rank, map, n);
}

// ScatterMax/ScatterMin: y = max (min) of the operand element and every update scattered onto
// it. The winners are the operand element when it equals y and each update that equals y (read
// back with the transposed Gather); g at each position is split equally among its winners, so
// ties share it (JAX's rule) and the total is conserved. A position where NaN wins has no
// winner (NaN != NaN) and passes no gradient. Updates whose windows fall out of bounds are
// skipped by the scatter and get no gradient (the Gather that reads y clamps their indices: an
// equal value there would have made them winners).
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
  cml_value_t kept = cml_op_equal(f, x, y);  // operand wins
  cml_value_t won = cml_op_logical_and(      // update wins (and was applied)
      f, cml_op_equal(f, u, cml_op_gather(f, y, idx, &gd)),
      cml_ad_scatter_applied(ad, idx, cml__ad_in_shape(ad, n, 1), sd, &gd, xs, us));
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
      // The forward clamps out-of-range starts into the operand and reads that window, so the
      // gradient goes there: the scatter gets the clamped starts (unclamped, it skipped them
      // and those rows got no gradient).
      const cml_shape_t* is = cml__ad_in_shape(ad, n, 1);
      bool fits = true;
      cml_value_t upper = cml_ad_index_upper(ad, is, gd, xs, &fits);
      cml_value_t idx = cml_ad_index_i64(f, cml__ad_in(ad, n, 1), is->dtype);
      idx = cml_op_min(f, cml_op_max(f, idx, cml_constant_scalar_i64(f, CML_DTYPE_I64, 0)), upper);
      in_cts[0] = cml_op_scatter_sum(f, cml__ad_zeros(ad, xs), idx, g, &sd);
      return CML_OK;
    }
    case CML_OP_SCATTER_SUM: {
      if (cml__ad_wants(ad, n, 0)) in_cts[0] = g;
      if (cml__ad_wants(ad, n, 2)) {
        // g read back at each update's window; updates the scatter skipped (window out of
        // bounds) get 0 (the Gather alone clamps their indices and read a neighbour's g).
        const cml_shape_t* us = cml__ad_in_shape(ad, n, 2);
        const cml_scatter_dims_t* sd = &n->attrs->u.scatter;
        cml_gather_dims_t gd;
        cml_ad_scatter_gather_dims(sd, xs, us, &gd);
        cml_value_t idx = cml__ad_in(ad, n, 1);
        cml_value_t applied =
            cml_ad_scatter_applied(ad, idx, cml__ad_in_shape(ad, n, 1), sd, &gd, xs, us);
        in_cts[2] = cml_op_where(f, applied, cml_op_gather(f, g, idx, &gd),
                                 cml__ad_scalar(ad, us->dtype, 0.0));
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
      // The read of the update's window first, then the write that zeros it: a backend can
      // then write the cotangent in place (a loop's carried buffer: c, plan.c).
      if (cml__ad_wants(ad, n, 1)) {
        in_cts[1] = cml_op_dynamic_slice(f, g, starts, us->dims, us->rank);
      }
      if (cml__ad_wants(ad, n, 0)) {
        if (in_cts[1]) {
          cml_value_t ops[2] = {in_cts[1], g}, outs[2];
          cml_op_optimization_barrier(f, ops, 2, outs);
          in_cts[1] = outs[0];
          g = outs[1];
        }
        in_cts[0] = cml_op_dynamic_update_slice(f, g, cml__ad_zeros(ad, us), starts, xs->rank);
      }
      return CML_OK;
    }
    default:
      return cml__ad_no_vjp(ad, n, NULL);
  }
}
