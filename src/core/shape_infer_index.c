// SPDX-License-Identifier: Apache-2.0
// src/core/shape_infer_index.c: shape inference of the "index" ops (DynamicSlice,
// DynamicUpdateSlice, Gather, the Scatter* ops).
#include "core/shape_infer_internal.h"

static cml_status_t cml_check_start_indices(cml_op_t op, const cml_shape_t* x,
                                            const cml_shape_t* starts, size_t start_count) {
  SHAPE_BUFFERS;
  (void)sb2_;
  if (start_count != (size_t)x->rank) {
    return INVALID("%s: %zu start indices for operand %s of rank %d", cml_op_name(op), start_count,
                   S0(x), (int)x->rank);
  }
  for (size_t i = 0; i < start_count; ++i) {
    if (starts[i].rank != 0 || !cml_dtype_is_plain_int(starts[i].dtype)) {
      return INVALID(
          "%s: start index #%zu %s must be an integer scalar of 8 bits or more (the "
          "packed Int4 / Uint4 / Int2 / Uint2 store weights, not indices)",
          cml_op_name(op), i, S0(&starts[i]));
    }
    if (starts[i].dtype != starts[0].dtype) {
      return INVALID("%s: start index #%zu %s must have the dtype of start index #0 %s",
                     cml_op_name(op), i, S0(&starts[i]), S1(&starts[0]));
    }
  }
  return CML_OK;
}

cml_status_t cml__infer_dynamic_slice(const cml_shape_t* x, const cml_shape_t* starts,
                                      size_t start_count, const int64_t* sizes, int32_t rank,
                                      cml_ir_attrs_t* attrs, cml_shape_t* out) {
  SHAPE_BUFFERS;
  LIST_BUFFER;
  (void)sb1_;
  (void)sb2_;
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_DYNAMIC_SLICE, x, "operand", false));
  CML_RETURN_IF_ERROR(cml_check_start_indices(CML_OP_DYNAMIC_SLICE, x, starts, start_count));
  if (rank != x->rank || (rank > 0 && !sizes)) {
    return INVALID("DynamicSlice: %d slice sizes for operand %s of rank %d", (int)rank, S0(x),
                   (int)x->rank);
  }
  for (int32_t i = 0; i < rank; ++i) {
    if (sizes[i] < 0 || sizes[i] > x->dims[i]) {
      return INVALID("DynamicSlice: slice sizes %s out of range for %s", L(sizes, rank), S0(x));
    }
  }
  *out = cml_shape_with(x->dtype, rank, sizes);
  attrs->axis_count = rank;
  for (int32_t i = 0; i < rank; ++i) attrs->axes[i] = sizes[i];
  return CML_OK;
}

cml_status_t cml__infer_dynamic_update_slice(const cml_shape_t* x, const cml_shape_t* update,
                                             const cml_shape_t* starts, size_t start_count,
                                             int32_t rank, cml_shape_t* out) {
  SHAPE_BUFFERS;
  (void)sb2_;
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_DYNAMIC_UPDATE_SLICE, x, "operand", false));
  if (rank != x->rank) {
    return INVALID("DynamicUpdateSlice: rank %d given for operand %s of rank %d", (int)rank, S0(x),
                   (int)x->rank);
  }
  CML_RETURN_IF_ERROR(cml_check_start_indices(CML_OP_DYNAMIC_UPDATE_SLICE, x, starts, start_count));
  if (update->dtype != x->dtype) {
    return INVALID("DynamicUpdateSlice: update %s has another dtype than operand %s", S1(update),
                   S0(x));
  }
  bool ok = update->rank == x->rank;
  for (int32_t i = 0; ok && i < x->rank; ++i) ok = update->dims[i] <= x->dims[i];
  if (!ok) {
    return INVALID("DynamicUpdateSlice: update %s does not fit in operand %s", S1(update), S0(x));
  }
  *out = *x;
  return CML_OK;
}

cml_status_t cml__infer_gather(const cml_shape_t* operand, const cml_shape_t* indices,
                               const cml_gather_dims_t* dims, cml_ir_attrs_t* attrs,
                               cml_shape_t* out) {
  SHAPE_BUFFERS;
  LIST_BUFFER;
  (void)sb2_;
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_GATHER, operand, "operand", false));
  if (!dims) return INVALID("Gather: dimension numbers are NULL");
  if (!cml_dtype_is_plain_int(indices->dtype)) {
    return INVALID(
        "Gather: indices %s must have an integer dtype of 8 bits or more (operand %s; "
        "the packed Int4 / Uint4 / Int2 / Uint2 store weights, not indices)",
        S1(indices), S0(operand));
  }
  int32_t ir = indices->rank, orank = operand->rank;
  int64_t iva = dims->index_vector_axis;
  if (iva < 0 || iva > ir) {
    return INVALID("Gather: index_vector_axis %lld out of range [0, %d] for indices %s",
                   (long long)iva, (int)ir, S1(indices));
  }
  if (!cml_count_ok(dims->offset_output_axis_count) ||
      !cml_count_ok(dims->collapsed_slice_axis_count) ||
      !cml_count_ok(dims->start_index_map_count) || !cml_count_ok(dims->slice_size_count)) {
    return INVALID(
        "Gather: dimension number counts out of range (offset_output_axis_count %d, "
        "collapsed_slice_axis_count %d, start_index_map_count %d, slice_size_count %d; each in "
        "[0, %d]) for operand %s, indices %s",
        (int)dims->offset_output_axis_count, (int)dims->collapsed_slice_axis_count,
        (int)dims->start_index_map_count, (int)dims->slice_size_count, CML_MAX_RANK, S0(operand),
        S1(indices));
  }
  int64_t index_size = iva < ir ? indices->dims[iva] : 1;
  int32_t batch_rank = iva < ir ? ir - 1 : ir;
  if (dims->slice_size_count != orank) {
    return INVALID("Gather: %d slice sizes for operand %s of rank %d", (int)dims->slice_size_count,
                   S0(operand), (int)orank);
  }
  if (dims->offset_output_axis_count + dims->collapsed_slice_axis_count != orank) {
    return INVALID(
        "Gather: offset_output_axes (%d) + collapsed_slice_axes (%d) must equal the "
        "rank of operand %s",
        (int)dims->offset_output_axis_count, (int)dims->collapsed_slice_axis_count, S0(operand));
  }
  if (dims->start_index_map_count != index_size) {
    return INVALID(
        "Gather: start_index_map has %d entries but the index vector of indices %s "
        "(axis %lld) has %lld",
        (int)dims->start_index_map_count, S1(indices), (long long)iva, (long long)index_size);
  }
  if (!cml_unique_in_range(dims->start_index_map, dims->start_index_map_count, orank)) {
    return INVALID("Gather: start_index_map %s must hold distinct axes of operand %s",
                   L(dims->start_index_map, dims->start_index_map_count), S0(operand));
  }
  if (!cml_sorted_in_range(dims->collapsed_slice_axes, dims->collapsed_slice_axis_count, orank)) {
    return INVALID("Gather: collapsed_slice_axes %s must be sorted, distinct axes of operand %s",
                   L(dims->collapsed_slice_axes, dims->collapsed_slice_axis_count), S0(operand));
  }
  bool collapsed[CML_MAX_RANK] = {false};
  for (int32_t i = 0; i < dims->collapsed_slice_axis_count; ++i) {
    collapsed[dims->collapsed_slice_axes[i]] = true;
  }
  for (int32_t i = 0; i < orank; ++i) {
    int64_t s = dims->slice_sizes[i];
    // A collapsed axis takes exactly one element: StableHLO's rule is <= 1, but a collapsed
    // size 0 made XLA's compiler abort the process, and the c kernel read one element anyway.
    if (s < 0 || s > operand->dims[i] || (collapsed[i] && s != 1)) {
      return INVALID(
          "Gather: slice sizes %s out of range for operand %s (axis %d: a collapsed axis takes "
          "size 1, any other at most its dimension)",
          L(dims->slice_sizes, orank), S0(operand), (int)i);
    }
  }
  int32_t out_rank = batch_rank + dims->offset_output_axis_count;
  if (out_rank > CML_MAX_RANK) {
    return INVALID("Gather: output rank %d exceeds %d", (int)out_rank, CML_MAX_RANK);
  }
  if (!cml_sorted_in_range(dims->offset_output_axes, dims->offset_output_axis_count, out_rank)) {
    return INVALID(
        "Gather: offset_output_axes %s must be sorted, distinct and in [0, %d) (the output's "
        "rank) for operand %s, indices %s",
        L(dims->offset_output_axes, dims->offset_output_axis_count), (int)out_rank, S0(operand),
        S1(indices));
  }
  bool is_offset[CML_MAX_RANK] = {false};
  for (int32_t i = 0; i < dims->offset_output_axis_count; ++i) {
    is_offset[dims->offset_output_axes[i]] = true;
  }
  cml_shape_t result = cml_shape_with(operand->dtype, 0, NULL);
  result.rank = out_rank;
  int32_t next_operand_axis = 0, next_batch_axis = 0;
  for (int32_t i = 0; i < out_rank; ++i) {
    if (is_offset[i]) {
      while (collapsed[next_operand_axis]) ++next_operand_axis;
      result.dims[i] = dims->slice_sizes[next_operand_axis++];
    } else {
      if (next_batch_axis == iva) ++next_batch_axis;
      result.dims[i] = indices->dims[next_batch_axis++];
    }
  }
  *out = result;
  attrs->u.gather = *dims;
  return CML_OK;
}

cml_status_t cml__infer_scatter(cml_op_t op, const cml_shape_t* operand, const cml_shape_t* indices,
                                const cml_shape_t* updates, const cml_scatter_dims_t* dims,
                                cml_ir_attrs_t* attrs, cml_shape_t* out) {
  SHAPE_BUFFERS;
  LIST_BUFFER;
  const char* name = cml_op_name(op);
  if (op != CML_OP_SCATTER_SUM && op != CML_OP_SCATTER_MAX && op != CML_OP_SCATTER_MIN) {
    return INVALID("Scatter: %s is not ScatterSum, ScatterMax or ScatterMin", name);
  }
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(op, operand, "operand", false));
  if (!dims) return INVALID("%s: dimension numbers are NULL", name);
  if (updates->dtype != operand->dtype) {
    return INVALID("%s: dtype mismatch: operand %s and updates %s", name, S0(operand), S2(updates));
  }
  if (!cml_dtype_is_plain_int(indices->dtype)) {
    return INVALID(
        "%s: indices %s must have an integer dtype of 8 bits or more (the packed Int4 "
        "/ Uint4 / Int2 / Uint2 store weights, not indices)",
        name, S1(indices));
  }
  int32_t ir = indices->rank, orank = operand->rank, ur = updates->rank;
  int64_t iva = dims->index_vector_axis;
  if (iva < 0 || iva > ir) {
    return INVALID("%s: index_vector_axis %lld out of range [0, %d] for indices %s", name,
                   (long long)iva, (int)ir, S1(indices));
  }
  if (!cml_count_ok(dims->update_window_axis_count) ||
      !cml_count_ok(dims->inserted_window_axis_count) ||
      !cml_count_ok(dims->scatter_axes_to_operand_axes_count)) {
    return INVALID(
        "%s: dimension number counts out of range (update_window_axis_count %d, "
        "inserted_window_axis_count %d, scatter_axes_to_operand_axes_count %d; each in [0, %d]) "
        "for operand %s, indices %s, updates %s",
        name, (int)dims->update_window_axis_count, (int)dims->inserted_window_axis_count,
        (int)dims->scatter_axes_to_operand_axes_count, CML_MAX_RANK, S0(operand), S1(indices),
        S2(updates));
  }
  int64_t index_size = iva < ir ? indices->dims[iva] : 1;
  int32_t batch_rank = iva < ir ? ir - 1 : ir;
  if (!cml_sorted_in_range(dims->update_window_axes, dims->update_window_axis_count, ur)) {
    return INVALID("%s: update_window_axes %s must be sorted, distinct axes of updates %s", name,
                   L(dims->update_window_axes, dims->update_window_axis_count), S2(updates));
  }
  if (!cml_sorted_in_range(dims->inserted_window_axes, dims->inserted_window_axis_count, orank)) {
    return INVALID("%s: inserted_window_axes %s must be sorted, distinct axes of operand %s", name,
                   L(dims->inserted_window_axes, dims->inserted_window_axis_count), S0(operand));
  }
  if (dims->update_window_axis_count + dims->inserted_window_axis_count != orank) {
    return INVALID(
        "%s: update_window_axes (%d) + inserted_window_axes (%d) must equal the rank "
        "of operand %s",
        name, (int)dims->update_window_axis_count, (int)dims->inserted_window_axis_count,
        S0(operand));
  }
  if (ur - dims->update_window_axis_count != batch_rank) {
    return INVALID("%s: updates %s has %d scatter axes but indices %s has %d batch axes", name,
                   S2(updates), (int)(ur - dims->update_window_axis_count), S1(indices),
                   (int)batch_rank);
  }
  if (dims->scatter_axes_to_operand_axes_count != index_size) {
    return INVALID(
        "%s: scatter_axes_to_operand_axes has %d entries but the index vector of "
        "indices %s has %lld",
        name, (int)dims->scatter_axes_to_operand_axes_count, S1(indices), (long long)index_size);
  }
  if (!cml_unique_in_range(dims->scatter_axes_to_operand_axes,
                           dims->scatter_axes_to_operand_axes_count, orank)) {
    return INVALID("%s: scatter_axes_to_operand_axes %s must hold distinct axes of operand %s",
                   name,
                   L(dims->scatter_axes_to_operand_axes, dims->scatter_axes_to_operand_axes_count),
                   S0(operand));
  }
  bool is_window[CML_MAX_RANK] = {false}, inserted[CML_MAX_RANK] = {false};
  for (int32_t i = 0; i < dims->update_window_axis_count; ++i) {
    is_window[dims->update_window_axes[i]] = true;
  }
  for (int32_t i = 0; i < dims->inserted_window_axis_count; ++i) {
    inserted[dims->inserted_window_axes[i]] = true;
  }
  int32_t next_operand_axis = 0, next_batch_axis = 0;
  for (int32_t i = 0; i < ur; ++i) {
    if (is_window[i]) {
      while (inserted[next_operand_axis]) ++next_operand_axis;
      if (updates->dims[i] > operand->dims[next_operand_axis]) {
        return INVALID(
            "%s: update window axis %d of updates %s (size %lld) exceeds operand %s "
            "axis %d",
            name, (int)i, S2(updates), (long long)updates->dims[i], S0(operand),
            (int)next_operand_axis);
      }
      ++next_operand_axis;
    } else {
      if (next_batch_axis == iva) ++next_batch_axis;
      if (updates->dims[i] != indices->dims[next_batch_axis]) {
        return INVALID(
            "%s: scatter axis %d of updates %s (size %lld) does not match indices %s "
            "axis %d",
            name, (int)i, S2(updates), (long long)updates->dims[i], S1(indices),
            (int)next_batch_axis);
      }
      ++next_batch_axis;
    }
  }
  *out = *operand;
  attrs->u.scatter = *dims;
  return CML_OK;
}
