// SPDX-License-Identifier: Apache-2.0
// src/core/shape_infer_movement.c: shape inference of the "movement" ops (Reshape, Transpose,
// BroadcastInDim, Concatenate, Slice, Reverse, Pad).
#include <stdlib.h>

#include "core/shape_infer_internal.h"

static int cml_compare_i64(const void* a, const void* b) {
  int64_t x = *(const int64_t*)a, y = *(const int64_t*)b;
  return (x > y) - (x < y);
}

// Reshape of an operand with dynamic axes: its dynamic axes must reappear in the same order
// (CML_DYNAMIC_DIM takes the next one; a stored dynamic dim must be that one) and the static
// dims must hold as many elements on both sides.
static cml_status_t cml_infer_reshape_dynamic(const cml_shape_t* x, const int64_t* dims,
                                              int32_t rank, cml_ir_attrs_t* attrs,
                                              cml_shape_t* out) {
  SHAPE_BUFFERS;
  LIST_BUFFER;
  (void)sb1_;
  (void)sb2_;
  int64_t in_dynamic[CML_MAX_RANK];
  int32_t in_count = 0;
  int64_t in_static = 1, out_static = 1;
  for (int32_t i = 0; i < x->rank; ++i) {
    if (x->dims[i] < 0) {
      in_dynamic[in_count++] = x->dims[i];
    } else {
      in_static *= x->dims[i];  // the operand's size is bounded: no overflow
    }
  }
  int64_t resolved[CML_MAX_RANK];
  int32_t next = 0;
  for (int32_t i = 0; i < rank; ++i) {
    if (dims[i] >= 0) {
      if (dims[i] != 0 && out_static > INT64_MAX / dims[i]) {
        return INVALID("Reshape: dimensions %s overflow", L(dims, rank));
      }
      out_static *= dims[i];
      resolved[i] = dims[i];
      continue;
    }
    if (next >= in_count || (dims[i] != CML_DYNAMIC_DIM && dims[i] != in_dynamic[next])) {
      return INVALID(
          "Reshape: cannot reshape %s to %s: the dynamic axes of the operand must be matched in "
          "order by dynamic axes of the output (CML_DYNAMIC_DIM takes the next one)",
          S0(x), L(dims, rank));
    }
    resolved[i] = in_dynamic[next++];
  }
  if (next != in_count) {
    return INVALID(
        "Reshape: cannot reshape %s to %s: dynamic axis \"%s\" has no dynamic axis in the output",
        S0(x), L(dims, rank), cml_axis_name(cml_dim_axis_id(in_dynamic[next])));
  }
  if (in_static != out_static) {
    return INVALID(
        "Reshape: cannot reshape %s to %s: the static dims hold %lld and %lld elements (dynamic "
        "axes map one to one)",
        S0(x), L(dims, rank), (long long)in_static, (long long)out_static);
  }
  *out = cml_shape_with(x->dtype, rank, resolved);
  attrs->axis_count = rank;
  for (int32_t i = 0; i < rank; ++i) attrs->axes[i] = resolved[i];
  return CML_OK;
}

cml_status_t cml__infer_reshape(const cml_shape_t* x, const int64_t* dims, int32_t rank,
                                cml_ir_attrs_t* attrs, cml_shape_t* out) {
  SHAPE_BUFFERS;
  LIST_BUFFER;
  (void)sb1_;
  (void)sb2_;
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_RESHAPE, x, "operand", true));
  if (rank < 0 || rank > CML_MAX_RANK) {
    return INVALID("Reshape: rank %d for %s (ranks go from 0 to %d)", (int)rank, S0(x),
                   CML_MAX_RANK);
  }
  if (rank > 0 && !dims) {
    return INVALID("Reshape: the new dimensions are NULL for rank %d (operand %s)", (int)rank,
                   S0(x));
  }
  if (cml_shape_is_dynamic(x)) return cml_infer_reshape_dynamic(x, dims, rank, attrs, out);
  int64_t count = 1;
  for (int32_t i = 0; i < rank; ++i) {
    if (dims[i] < 0)
      return INVALID("Reshape: negative dimension in %s for %s", L(dims, rank), S0(x));
    if (dims[i] != 0 && count > INT64_MAX / dims[i]) {
      return INVALID("Reshape: dimensions %s overflow", L(dims, rank));
    }
    count *= dims[i];
  }
  if (count != cml_shape_element_count(x)) {
    return INVALID("Reshape: cannot reshape %s (%lld elements) to %s (%lld elements)", S0(x),
                   (long long)cml_shape_element_count(x), L(dims, rank), (long long)count);
  }
  *out = cml_shape_with(x->dtype, rank, dims);
  attrs->axis_count = rank;
  for (int32_t i = 0; i < rank; ++i) attrs->axes[i] = dims[i];
  return CML_OK;
}

cml_status_t cml__infer_transpose(const cml_shape_t* x, const int64_t* permutation, int32_t rank,
                                  cml_ir_attrs_t* attrs, cml_shape_t* out) {
  SHAPE_BUFFERS;
  LIST_BUFFER;
  (void)sb1_;
  (void)sb2_;
  CML_RETURN_IF_ERROR(
      cml__infer_check_dtype(CML_OP_TRANSPOSE, x, "operand", cml_dtype_is_byte_storage(x->dtype)));
  if (rank != x->rank) {
    return INVALID("Transpose: permutation has %d axes, operand %s has rank %d", (int)rank, S0(x),
                   (int)x->rank);
  }
  if (rank > 0 && !permutation) {
    return INVALID("Transpose: the permutation is NULL (operand %s)", S0(x));
  }
  bool seen[CML_MAX_RANK] = {false};
  for (int32_t i = 0; i < rank; ++i) {
    int64_t p = permutation[i];
    if (p < 0 || p >= rank || seen[p]) {
      return INVALID("Transpose: %s is not a permutation of the axes of %s", L(permutation, rank),
                     S0(x));
    }
    seen[p] = true;
  }
  *out = *x;
  attrs->axis_count = rank;
  for (int32_t i = 0; i < rank; ++i) {
    out->dims[i] = x->dims[permutation[i]];
    attrs->axes[i] = permutation[i];
  }
  return CML_OK;
}

cml_status_t cml__infer_broadcast_in_dim(const cml_shape_t* x, const int64_t* out_dims,
                                         int32_t out_rank, const int64_t* axes, int32_t axis_count,
                                         cml_ir_attrs_t* attrs, cml_shape_t* out) {
  SHAPE_BUFFERS;
  LIST_BUFFER;
  (void)sb2_;
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_BROADCAST_IN_DIM, x, "operand",
                                             cml_dtype_is_byte_storage(x->dtype)));
  if (out_rank < 0 || out_rank > CML_MAX_RANK || (out_rank > 0 && !out_dims)) {
    return INVALID("BroadcastInDim: bad output rank %d for %s", (int)out_rank, S0(x));
  }
  cml_shape_t target = cml_shape_with(x->dtype, out_rank, out_dims);
  for (int32_t i = 0; i < out_rank; ++i) {
    // A dynamic target axis is a stored dynamic dim, or CML_DYNAMIC_DIM where the operand's
    // axis mapped to it is dynamic (it takes that axis).
    if (out_dims[i] == CML_DYNAMIC_DIM) {
      for (int32_t k = 0; k < axis_count && axes && k < x->rank; ++k) {
        if (axes[k] == i && x->dims[k] < 0) target.dims[i] = x->dims[k];
      }
    }
    if (target.dims[i] < 0 && !cml_axis_name(cml_dim_axis_id(target.dims[i]))) {
      return INVALID("BroadcastInDim: negative dimension in %s", S0(&target));
    }
  }
  out_dims = target.dims;
  if (axis_count != x->rank || (axis_count > 0 && !axes)) {
    return INVALID("BroadcastInDim: %d broadcast axes for operand %s of rank %d", (int)axis_count,
                   S0(x), (int)x->rank);
  }
  if (out_rank < x->rank) {
    return INVALID("BroadcastInDim: output %s has a lower rank than operand %s", S1(&target),
                   S0(x));
  }
  for (int32_t i = 0; i < axis_count; ++i) {
    if (axes[i] < 0 || axes[i] >= out_rank || (i > 0 && axes[i] <= axes[i - 1])) {
      return INVALID(
          "BroadcastInDim: axes %s must be strictly increasing and in [0, %d) "
          "(operand %s, output %s)",
          L(axes, axis_count), (int)out_rank, S0(x), S1(&target));
    }
  }
  for (int32_t i = 0; i < axis_count; ++i) {
    if (x->dims[i] != 1 && x->dims[i] != out_dims[axes[i]]) {
      if (x->dims[i] < 0 || out_dims[axes[i]] < 0) {
        return INVALID(
            "BroadcastInDim: operand %s axis %d cannot broadcast to output %s axis %lld (a "
            "dynamic axis only matches the same axis name; only a size-1 axis broadcasts)",
            S0(x), (int)i, S1(&target), (long long)axes[i]);
      }
      return INVALID(
          "BroadcastInDim: operand %s axis %d (size %lld) cannot broadcast to output "
          "%s axis %lld",
          S0(x), (int)i, (long long)x->dims[i], S1(&target), (long long)axes[i]);
    }
  }
  *out = target;
  attrs->axis_count = axis_count;
  for (int32_t i = 0; i < axis_count; ++i) attrs->axes[i] = axes[i];
  return CML_OK;
}

cml_status_t cml__infer_concatenate(int64_t axis, const cml_shape_t* shapes, size_t count,
                                    cml_ir_attrs_t* attrs, cml_shape_t* out) {
  SHAPE_BUFFERS;
  (void)sb2_;
  if (count == 0) return INVALID("Concatenate: no operands");
  const cml_shape_t* first = &shapes[0];
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_CONCATENATE, first, "operand #0",
                                             cml_dtype_is_byte_storage(first->dtype)));
  if (first->rank == 0) return INVALID("Concatenate: operand #0 %s is a scalar", S0(first));
  CML_RETURN_IF_ERROR(cml_check_axis(CML_OP_CONCATENATE, first, axis, "axis"));
  *out = *first;
  for (size_t k = 1; k < count; ++k) {
    const cml_shape_t* s = &shapes[k];
    if (s->dtype != first->dtype || s->rank != first->rank) {
      return INVALID("Concatenate: operand #%zu %s has another %s than operand #0 %s", k, S1(s),
                     s->dtype != first->dtype ? "dtype" : "rank", S0(first));
    }
    for (int32_t i = 0; i < s->rank; ++i) {
      if (i != axis && s->dims[i] != first->dims[i]) {
        return INVALID(
            "Concatenate: operand #%zu %s differs from operand #0 %s in axis %d (only "
            "the concatenation axis %lld may differ)",
            k, S1(s), S0(first), (int)i, (long long)axis);
      }
    }
    if (out->dims[axis] < 0 || s->dims[axis] < 0) {
      cml_status_t st = cml__axis_sum(out->dims[axis], s->dims[axis], &out->dims[axis]);
      if (st != CML_OK) {
        return cml_status_annotate(st, "Concatenate: operand #%zu %s along dynamic axis %lld", k,
                                   S1(s), (long long)axis);
      }
      continue;
    }
    if (__builtin_add_overflow(out->dims[axis], s->dims[axis], &out->dims[axis])) {
      return INVALID(
          "Concatenate: the sizes along axis %lld overflow at operand #%zu %s "
          "(operand #0 %s)",
          (long long)axis, k, S1(s), S0(first));
    }
  }
  attrs->axis = axis;
  return CML_OK;
}

cml_status_t cml__infer_slice(const cml_shape_t* x, const int64_t* starts, const int64_t* limits,
                              const int64_t* strides, int32_t rank, cml_ir_attrs_t* attrs,
                              cml_shape_t* out) {
  SHAPE_BUFFERS;
  (void)sb1_;
  (void)sb2_;
  CML_RETURN_IF_ERROR(
      cml__infer_check_dtype(CML_OP_SLICE, x, "operand", cml_dtype_is_byte_storage(x->dtype)));
  if (rank != x->rank) {
    return INVALID("Slice: %d starts/limits for operand %s of rank %d", (int)rank, S0(x),
                   (int)x->rank);
  }
  if (rank > 0 && (!starts || !limits)) {
    return INVALID("Slice: the %s are NULL (operand %s)", !starts ? "starts" : "limits", S0(x));
  }
  *out = *x;
  attrs->axis_count = rank;
  for (int32_t i = 0; i < rank; ++i) {
    int64_t stride = strides ? strides[i] : 1;
    if (x->dims[i] < 0) {
      // A dynamic axis is sliced whole or not at all: start 0, stride 1, limit = the axis
      // (its stored dim or CML_DYNAMIC_DIM).
      if (starts[i] != 0 || stride != 1 ||
          (limits[i] != x->dims[i] && limits[i] != CML_DYNAMIC_DIM)) {
        return INVALID(
            "Slice: axis %d of %s is dynamic (\"%s\"): only a full-axis slice is supported "
            "(start 0, limit CML_DYNAMIC_DIM, stride 1), got start %lld, limit %lld, stride %lld",
            (int)i, S0(x), cml_axis_name(cml_dim_axis_id(x->dims[i])), (long long)starts[i],
            (long long)limits[i], (long long)stride);
      }
      attrs->starts[i] = 0;
      attrs->limits[i] = x->dims[i];
      attrs->strides[i] = 1;
      continue;  // out->dims[i] stays the dynamic dim
    }
    // The stride is bounded like every size-like attribute (CML__ATTR_MAX): XLA computes
    // (limit - start + stride - 1) / stride and aborts when that overflows.
    if (starts[i] < 0 || starts[i] > limits[i] || limits[i] > x->dims[i] ||
        !cml_attr_in_range(stride, 1)) {
      return INVALID(
          "Slice: axis %d of %s: start %lld, limit %lld, stride %lld out of range "
          "(need 0 <= start <= limit <= %lld, 1 <= stride <= %lld)",
          (int)i, S0(x), (long long)starts[i], (long long)limits[i], (long long)stride,
          (long long)x->dims[i], (long long)CML__ATTR_MAX);
    }
    // 0 <= start <= limit, so the length cannot overflow; ceil(length / stride) without the
    // "+ stride - 1" that overflows for huge strides.
    int64_t length = limits[i] - starts[i];
    out->dims[i] = length == 0 ? 0 : (length - 1) / stride + 1;
    attrs->starts[i] = starts[i];
    attrs->limits[i] = limits[i];
    attrs->strides[i] = stride;
  }
  return CML_OK;
}

cml_status_t cml__infer_reverse(const cml_shape_t* x, const int64_t* axes, size_t axis_count,
                                cml_ir_attrs_t* attrs, cml_shape_t* out) {
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_REVERSE, x, "operand", false));
  if (axis_count > 0 && !axes) return INVALID("Reverse: axes is NULL");
  CML_RETURN_IF_ERROR(cml_check_axes(CML_OP_REVERSE, x, axes, axis_count, "axis"));
  attrs->axis_count = (int32_t)axis_count;
  for (size_t i = 0; i < axis_count; ++i) attrs->axes[i] = axes[i];
  qsort(attrs->axes, axis_count, sizeof attrs->axes[0], cml_compare_i64);
  *out = *x;
  return CML_OK;
}

cml_status_t cml__infer_pad(const cml_shape_t* x, const cml_shape_t* fill,
                            const cml_pad_axis_t* axes, size_t axis_count, cml_ir_attrs_t* attrs,
                            cml_shape_t* out) {
  SHAPE_BUFFERS;
  (void)sb2_;
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_PAD, x, "operand", false));
  if (fill->rank != 0 || fill->dtype != x->dtype) {
    return INVALID("Pad: fill value %s must be a scalar of the operand's dtype (operand %s)",
                   S0(fill), S1(x));
  }
  if (axis_count > (size_t)x->rank) {
    return INVALID("Pad: %zu axes configured for operand %s of rank %d", axis_count, S0(x),
                   (int)x->rank);
  }
  if (axis_count > 0 && !axes) {
    return INVALID("Pad: the %zu axis configurations are NULL (operand %s)", axis_count, S0(x));
  }
  *out = *x;
  for (int32_t i = 0; i < x->rank; ++i) {
    cml_pad_axis_t p = {0, 0, 0};
    if ((size_t)i < axis_count) p = axes[i];
    if (!cml_attr_in_range(p.low, -CML__ATTR_MAX) || !cml_attr_in_range(p.high, -CML__ATTR_MAX) ||
        !cml_attr_in_range(p.interior, 0)) {
      return INVALID(
          "Pad: axis %d of %s: padding (low %lld, high %lld, interior %lld) out of range (need "
          "|low|, |high| <= %lld and 0 <= interior <= %lld)",
          (int)i, S0(x), (long long)p.low, (long long)p.high, (long long)p.interior,
          (long long)CML__ATTR_MAX, (long long)CML__ATTR_MAX);
    }
    int64_t d = x->dims[i];
    if (d < 0) {
      if (p.low != 0 || p.high != 0 || p.interior != 0) {
        return INVALID(
            "Pad: axis %d of %s is dynamic (\"%s\"): padding (low %lld, high %lld, interior "
            "%lld) on a dynamic axis is not supported",
            (int)i, S0(x), cml_axis_name(cml_dim_axis_id(d)), (long long)p.low, (long long)p.high,
            (long long)p.interior);
      }
      attrs->pads[i] = p;
      continue;
    }
    int64_t n = 0;  // the interior-padded size, then the output size
    if (__builtin_mul_overflow(d > 0 ? d - 1 : 0, p.interior, &n) ||
        __builtin_add_overflow(n, d, &n) || n > CML__ATTR_MAX) {
      return INVALID(
          "Pad: axis %d of %s: interior padding %lld makes the axis larger than %lld (low "
          "%lld, high %lld)",
          (int)i, S0(x), (long long)p.interior, (long long)CML__ATTR_MAX, (long long)p.low,
          (long long)p.high);
    }
    n += p.low + p.high;  // each of the three is at most 2^55 in magnitude: no overflow
    if (n < 0) {
      return INVALID(
          "Pad: axis %d of %s: padding (low %lld, high %lld, interior %lld) gives a "
          "negative size %lld",
          (int)i, S0(x), (long long)p.low, (long long)p.high, (long long)p.interior, (long long)n);
    }
    out->dims[i] = n;
    attrs->pads[i] = p;
  }
  return CML_OK;
}
