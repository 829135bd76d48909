// SPDX-License-Identifier: Apache-2.0
// src/core/shape_infer.c: shape inference and validation of every standard op (StableHLO/XLA
// rules), independent of builders: shapes and attributes in, output shapes and normalized
// attributes (every default filled in) out.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/builder_internal.h"

#define INVALID(...) cml_status_make(CML_STATUS_INVALID_ARGUMENT, __VA_ARGS__)

const char* cml__shape_text(const cml_shape_t* shape, char* buffer) {
  return cml_shape_format(shape, buffer, CML__SHAPE_TEXT);
}

// Formats up to 4 shapes per message through these locals.
#define SHAPE_BUFFERS char sb0_[CML__SHAPE_TEXT], sb1_[CML__SHAPE_TEXT], sb2_[CML__SHAPE_TEXT]
#define S0(s) cml__shape_text((s), sb0_)
#define S1(s) cml__shape_text((s), sb1_)
#define S2(s) cml__shape_text((s), sb2_)

static cml_shape_t cml_shape_with(cml_dtype_t dtype, int32_t rank, const int64_t* dims) {
  cml_shape_t s;
  memset(&s, 0, sizeof s);
  s.dtype = dtype;
  s.rank = rank;
  for (int32_t i = 0; i < rank; ++i) s.dims[i] = dims[i];
  return s;
}

static bool cml_dtype_in(cml_dtype_set_t set, cml_dtype_t dtype) {
  return (int)dtype > 0 && (int)dtype < 64 && (set & CML_DTYPE_BIT(dtype)) != 0;
}

static bool cml_dtype_is_plain_int(cml_dtype_t dtype) { return cml_dtype_in(CML_DSET_INT, dtype); }

// Writes "[a, b, c]" of |count| int64s into |buffer|.
static const char* cml_list_text(const int64_t* values, size_t count, char* buffer, size_t size) {
  size_t used = 0;
  buffer[0] = '\0';
  used += (size_t)snprintf(buffer, size, "[");
  for (size_t i = 0; i < count && used < size; ++i) {
    used +=
        (size_t)snprintf(buffer + used, size - used, "%s%lld", i ? ", " : "", (long long)values[i]);
  }
  if (used < size) snprintf(buffer + used, size - used, "]");
  return buffer;
}
#define LIST_BUFFER char lb_[CML__SHAPE_TEXT]
#define L(v, n) cml_list_text((v), (size_t)(n), lb_, sizeof lb_)

// Checks a user-given shape (dtype valid, rank, dims, size) for |op|.
static cml_status_t cml_check_user_shape(cml_op_t op, const cml_shape_t* shape, const char* what) {
  if (!shape) return INVALID("%s: %s shape is NULL", cml_op_name(op), what);
  if (shape->rank < 0 || shape->rank > CML_MAX_RANK) {
    return INVALID("%s: %s rank %d out of range [0, %d]", cml_op_name(op), what, (int)shape->rank,
                   CML_MAX_RANK);
  }
  cml_shape_t tmp;
  cml_status_t st = cml_shape_init(&tmp, shape->dtype, shape->rank, shape->dims);
  if (st != CML_OK) return cml_status_annotate(st, "%s: %s shape", cml_op_name(op), what);
  return CML_OK;
}

cml_status_t cml__infer_check_dtype(cml_op_t op, const cml_shape_t* shape, const char* what,
                                    bool allow_packed) {
  cml_dtype_t d = shape->dtype;
  if (allow_packed && cml_dtype_is_packed(d) && cml_dtype_is_supported(d)) return CML_OK;
  if (cml_dtype_in(cml_op_dtypes(op), d)) return CML_OK;
  SHAPE_BUFFERS;
  (void)sb1_;
  (void)sb2_;
  return INVALID("%s: %s %s: dtype %s is not accepted by %s", cml_op_name(op), what, S0(shape),
                 cml_dtype_name(d), cml_op_name(op));
}

static cml_status_t cml_check_axis(cml_op_t op, const cml_shape_t* x, int64_t axis,
                                   const char* what) {
  if (axis < 0 || axis >= x->rank) {
    SHAPE_BUFFERS;
    (void)sb1_;
    (void)sb2_;
    return INVALID("%s: %s %lld out of range for %s (rank %d)", cml_op_name(op), what,
                   (long long)axis, S0(x), (int)x->rank);
  }
  return CML_OK;
}

// Checks |count| axes of |x|: in range and distinct.
static cml_status_t cml_check_axes(cml_op_t op, const cml_shape_t* x, const int64_t* axes,
                                   size_t count, const char* what) {
  if (count > (size_t)x->rank) {
    SHAPE_BUFFERS;
    (void)sb1_;
    (void)sb2_;
    return INVALID("%s: %zu %s for %s (rank %d)", cml_op_name(op), count, what, S0(x),
                   (int)x->rank);
  }
  bool seen[CML_MAX_RANK] = {false};
  for (size_t i = 0; i < count; ++i) {
    CML_RETURN_IF_ERROR(cml_check_axis(op, x, axes[i], what));
    if (seen[axes[i]]) {
      SHAPE_BUFFERS;
      LIST_BUFFER;
      (void)sb1_;
      (void)sb2_;
      return INVALID("%s: duplicate %s %lld in %s for %s", cml_op_name(op), what,
                     (long long)axes[i], L(axes, count), S0(x));
    }
    seen[axes[i]] = true;
  }
  return CML_OK;
}

static int cml_compare_i64(const void* a, const void* b) {
  int64_t x = *(const int64_t*)a, y = *(const int64_t*)b;
  return (x > y) - (x < y);
}

// Whether a size-like attribute lies in [lo, CML__ATTR_MAX] (|lo| is 0, 1 or -CML__ATTR_MAX):
// see CML__ATTR_MAX in builder_internal.h.
static bool cml_attr_in_range(int64_t value, int64_t lo) {
  return value >= lo && value <= CML__ATTR_MAX;
}

//===--- elementwise ---===//

cml_status_t cml__infer_unary(cml_op_t op, const cml_shape_t* x, cml_shape_t* out) {
  if (cml_op_kind(op) != CML_OPK_UNARY) {
    return INVALID("%s is not a unary op", cml_op_name(op));
  }
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(op, x, "operand", op == CML_OP_IDENTITY));
  *out = *x;
  out->dtype = cml__apply_out_rule(cml__op_out_rule(op), x->dtype);
  return CML_OK;
}

// Restricted broadcasting: equal shapes, a scalar side, or the same rank with size-1 axes.
static cml_status_t cml_broadcast(cml_op_t op, const cml_shape_t* a, const cml_shape_t* b,
                                  const char* a_name, const char* b_name, cml_shape_t* out) {
  if (a->rank == 0) {
    *out = *b;
    return CML_OK;
  }
  if (b->rank == 0) {
    *out = *a;
    return CML_OK;
  }
  bool ok = a->rank == b->rank;
  for (int32_t i = 0; ok && i < a->rank; ++i) {
    ok = a->dims[i] == b->dims[i] || a->dims[i] == 1 || b->dims[i] == 1;
  }
  if (!ok) {
    SHAPE_BUFFERS;
    (void)sb2_;
    return INVALID("%s: incompatible shapes %s and %s (%s and %s)", cml_op_name(op), S0(a), S1(b),
                   a_name, b_name);
  }
  *out = *a;
  for (int32_t i = 0; i < a->rank; ++i) {
    out->dims[i] = a->dims[i] == 1 ? b->dims[i] : a->dims[i];
  }
  return CML_OK;
}

cml_status_t cml__infer_binary(cml_op_t op, const cml_shape_t* lhs, const cml_shape_t* rhs,
                               cml_shape_t* out) {
  cml_op_kind_t kind = cml_op_kind(op);
  if (kind != CML_OPK_BINARY && kind != CML_OPK_COMPARE) {
    return INVALID("%s is not a binary op", cml_op_name(op));
  }
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(op, lhs, "lhs", false));
  if (lhs->dtype != rhs->dtype) {
    SHAPE_BUFFERS;
    (void)sb2_;
    return INVALID("%s: dtype mismatch: lhs %s and rhs %s (%s vs %s; no implicit promotion)",
                   cml_op_name(op), S0(lhs), S1(rhs), cml_dtype_name(lhs->dtype),
                   cml_dtype_name(rhs->dtype));
  }
  CML_RETURN_IF_ERROR(cml_broadcast(op, lhs, rhs, "lhs", "rhs", out));
  out->dtype = cml__apply_out_rule(cml__op_out_rule(op), lhs->dtype);
  return CML_OK;
}

cml_status_t cml__infer_reduce(cml_op_t op, const cml_shape_t* x, const int64_t* axes,
                               size_t axis_count, cml_ir_attrs_t* attrs, cml_shape_t* out) {
  if (cml_op_kind(op) != CML_OPK_REDUCE) {
    return INVALID("%s is not a reduction op", cml_op_name(op));
  }
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(op, x, "operand", false));
  if (axis_count > 0 && !axes) return INVALID("%s: axes is NULL", cml_op_name(op));
  CML_RETURN_IF_ERROR(cml_check_axes(op, x, axes, axis_count, "axis"));
  bool reduced[CML_MAX_RANK] = {false};
  if (axis_count == 0) {
    for (int32_t i = 0; i < x->rank; ++i) reduced[i] = true;
  } else {
    for (size_t i = 0; i < axis_count; ++i) reduced[axes[i]] = true;
  }
  attrs->axis_count = 0;
  *out = *x;
  out->rank = 0;
  for (int32_t i = 0; i < x->rank; ++i) {
    if (reduced[i]) {
      attrs->axes[attrs->axis_count++] = i;
    } else {
      out->dims[out->rank++] = x->dims[i];
    }
  }
  for (int32_t i = out->rank; i < CML_MAX_RANK; ++i) out->dims[i] = 0;
  return CML_OK;
}

static bool cml_dtype_is_array_dtype(cml_dtype_t d) {
  return cml_dtype_in(CML_DSET_ALL, d) || (cml_dtype_is_packed(d) && cml_dtype_is_supported(d));
}

cml_status_t cml__infer_convert(const cml_shape_t* x, cml_dtype_t dtype, cml_shape_t* out) {
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_CONVERT_DTYPE, x, "operand", true));
  if (!cml_dtype_is_array_dtype(dtype)) {
    SHAPE_BUFFERS;
    (void)sb1_;
    (void)sb2_;
    return INVALID("ConvertDType: cannot convert %s to dtype %s (%d)", S0(x), cml_dtype_name(dtype),
                   (int)dtype);
  }
  *out = *x;
  out->dtype = dtype;
  return CML_OK;
}

cml_status_t cml__infer_bitcast(const cml_shape_t* x, cml_dtype_t dtype, cml_shape_t* out) {
  SHAPE_BUFFERS;
  (void)sb1_;
  (void)sb2_;
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_BITCAST, x, "operand", true));
  if (!cml_dtype_is_array_dtype(dtype)) {
    return INVALID("Bitcast: cannot bitcast %s to dtype %s (%d)", S0(x), cml_dtype_name(dtype),
                   (int)dtype);
  }
  int src = cml_dtype_bits(x->dtype), dst = cml_dtype_bits(dtype);
  *out = *x;
  out->dtype = dtype;
  if (src == dst) return CML_OK;
  if (dst < src) {
    if (x->rank >= CML_MAX_RANK) {
      return INVALID("Bitcast: %s to %s would exceed rank %d", S0(x), cml_dtype_name(dtype),
                     CML_MAX_RANK);
    }
    out->dims[out->rank++] = src / dst;
    return CML_OK;
  }
  int64_t ratio = dst / src;
  if (x->rank == 0 || x->dims[x->rank - 1] != ratio) {
    return INVALID("Bitcast: %s to %s needs a last axis of size %lld (%d/%d bits)", S0(x),
                   cml_dtype_name(dtype), (long long)ratio, dst, src);
  }
  out->rank--;
  out->dims[out->rank] = 0;
  return CML_OK;
}

// |s| must be a scalar or have |x|'s dims, and |x|'s dtype.
static cml_status_t cml_check_scalar_or_same(cml_op_t op, const cml_shape_t* s,
                                             const cml_shape_t* x, const char* s_name,
                                             const char* x_name) {
  SHAPE_BUFFERS;
  (void)sb2_;
  if (s->dtype != x->dtype) {
    return INVALID("%s: dtype mismatch: %s %s and %s %s", cml_op_name(op), s_name, S0(s), x_name,
                   S1(x));
  }
  if (s->rank != 0 && !cml_shape_dims_equal(s, x)) {
    return INVALID("%s: incompatible shapes %s and %s (%s must be a scalar or match %s)",
                   cml_op_name(op), S0(s), S1(x), s_name, x_name);
  }
  return CML_OK;
}

cml_status_t cml__infer_clamp(const cml_shape_t* min, const cml_shape_t* x, const cml_shape_t* max,
                              cml_shape_t* out) {
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_CLAMP, x, "operand", false));
  CML_RETURN_IF_ERROR(cml_check_scalar_or_same(CML_OP_CLAMP, min, x, "min", "x"));
  CML_RETURN_IF_ERROR(cml_check_scalar_or_same(CML_OP_CLAMP, max, x, "max", "x"));
  *out = *x;
  return CML_OK;
}

cml_status_t cml__infer_where(const cml_shape_t* cond, const cml_shape_t* on_true,
                              const cml_shape_t* on_false, cml_shape_t* out) {
  SHAPE_BUFFERS;
  if (cond->dtype != CML_DTYPE_BOOL) {
    (void)sb1_;
    (void)sb2_;
    return INVALID("Where: condition %s must be Bool, not %s", S0(cond),
                   cml_dtype_name(cond->dtype));
  }
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_WHERE, on_true, "on_true", false));
  if (on_true->dtype != on_false->dtype) {
    return INVALID("Where: dtype mismatch: on_true %s and on_false %s", S0(on_true), S1(on_false));
  }
  const cml_shape_t* ref = NULL;
  const cml_shape_t* all[3] = {cond, on_true, on_false};
  for (int i = 0; i < 3; ++i) {
    if (all[i]->rank == 0) continue;
    if (!ref) {
      ref = all[i];
    } else if (!cml_shape_dims_equal(ref, all[i])) {
      return INVALID(
          "Where: incompatible shapes %s, %s and %s (each must be a scalar or of the "
          "output shape)",
          S0(cond), S1(on_true), S2(on_false));
    }
  }
  *out = ref ? *ref : *on_true;
  out->dtype = on_true->dtype;
  return CML_OK;
}

//===--- shape and data movement ---===//

cml_status_t cml__infer_reshape(const cml_shape_t* x, const int64_t* dims, int32_t rank,
                                cml_ir_attrs_t* attrs, cml_shape_t* out) {
  SHAPE_BUFFERS;
  LIST_BUFFER;
  (void)sb1_;
  (void)sb2_;
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_RESHAPE, x, "operand", true));
  if (rank < 0 || rank > CML_MAX_RANK || (rank > 0 && !dims)) {
    return INVALID("Reshape: bad rank %d for %s", (int)rank, S0(x));
  }
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
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_TRANSPOSE, x, "operand", false));
  if (rank != x->rank || (rank > 0 && !permutation)) {
    return INVALID("Transpose: permutation has %d axes, operand %s has rank %d", (int)rank, S0(x),
                   (int)x->rank);
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
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_BROADCAST_IN_DIM, x, "operand", false));
  if (out_rank < 0 || out_rank > CML_MAX_RANK || (out_rank > 0 && !out_dims)) {
    return INVALID("BroadcastInDim: bad output rank %d for %s", (int)out_rank, S0(x));
  }
  cml_shape_t target = cml_shape_with(x->dtype, out_rank, out_dims);
  for (int32_t i = 0; i < out_rank; ++i) {
    if (out_dims[i] < 0) return INVALID("BroadcastInDim: negative dimension in %s", S0(&target));
  }
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
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_CONCATENATE, first, "operand #0", false));
  if (first->rank == 0) return INVALID("Concatenate: operand #0 %s is a scalar", S0(first));
  CML_RETURN_IF_ERROR(cml_check_axis(CML_OP_CONCATENATE, first, axis, "axis"));
  *out = *first;
  for (size_t k = 1; k < count; ++k) {
    const cml_shape_t* s = &shapes[k];
    bool ok = s->dtype == first->dtype && s->rank == first->rank;
    for (int32_t i = 0; ok && i < s->rank; ++i) {
      ok = i == axis || s->dims[i] == first->dims[i];
    }
    if (!ok) {
      return INVALID("Concatenate: operand #%zu %s does not match operand #0 %s along axis %lld", k,
                     S1(s), S0(first), (long long)axis);
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
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_SLICE, x, "operand", false));
  if (rank != x->rank || (rank > 0 && (!starts || !limits))) {
    return INVALID("Slice: %d starts/limits for operand %s of rank %d", (int)rank, S0(x),
                   (int)x->rank);
  }
  *out = *x;
  attrs->axis_count = rank;
  for (int32_t i = 0; i < rank; ++i) {
    int64_t stride = strides ? strides[i] : 1;
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

cml_status_t cml__infer_iota(const cml_shape_t* shape, int64_t axis, cml_ir_attrs_t* attrs,
                             cml_shape_t* out) {
  CML_RETURN_IF_ERROR(cml_check_user_shape(CML_OP_IOTA, shape, "output"));
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_IOTA, shape, "output", false));
  CML_RETURN_IF_ERROR(cml_check_axis(CML_OP_IOTA, shape, axis, "axis"));
  *out = cml_shape_with(shape->dtype, shape->rank, shape->dims);
  attrs->axis = axis;
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
  if (axis_count > (size_t)x->rank || (axis_count > 0 && !axes)) {
    return INVALID("Pad: %zu axes configured for operand %s of rank %d", axis_count, S0(x),
                   (int)x->rank);
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

static cml_status_t cml_check_start_indices(cml_op_t op, const cml_shape_t* x,
                                            const cml_shape_t* starts, size_t start_count) {
  SHAPE_BUFFERS;
  (void)sb2_;
  if (start_count != (size_t)x->rank) {
    return INVALID("%s: %zu start indices for operand %s of rank %d", cml_op_name(op), start_count,
                   S0(x), (int)x->rank);
  }
  for (size_t i = 0; i < start_count; ++i) {
    if (starts[i].rank != 0 || !cml_dtype_is_plain_int(starts[i].dtype) ||
        starts[i].dtype != starts[0].dtype) {
      return INVALID(
          "%s: start index #%zu %s must be an integer scalar of the same dtype as "
          "start index #0 %s",
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
  bool ok = update->dtype == x->dtype && update->rank == x->rank;
  for (int32_t i = 0; ok && i < x->rank; ++i) ok = update->dims[i] <= x->dims[i];
  if (!ok) {
    return INVALID("DynamicUpdateSlice: update %s does not fit in operand %s", S1(update), S0(x));
  }
  *out = *x;
  return CML_OK;
}

//===--- gather and scatter ---===//

// Checks |count| entries of |axes| are strictly increasing in [0, bound).
static bool cml_sorted_in_range(const int64_t* axes, int32_t count, int64_t bound) {
  for (int32_t i = 0; i < count; ++i) {
    if (axes[i] < 0 || axes[i] >= bound || (i > 0 && axes[i] <= axes[i - 1])) return false;
  }
  return true;
}

static bool cml_unique_in_range(const int64_t* axes, int32_t count, int64_t bound) {
  bool seen[CML_MAX_RANK] = {false};
  for (int32_t i = 0; i < count; ++i) {
    if (axes[i] < 0 || axes[i] >= bound || bound > CML_MAX_RANK || seen[axes[i]]) return false;
    seen[axes[i]] = true;
  }
  return true;
}

static bool cml_count_ok(int32_t count) { return count >= 0 && count <= CML_MAX_RANK; }

cml_status_t cml__infer_gather(const cml_shape_t* operand, const cml_shape_t* indices,
                               const cml_gather_dims_t* dims, cml_ir_attrs_t* attrs,
                               cml_shape_t* out) {
  SHAPE_BUFFERS;
  LIST_BUFFER;
  (void)sb2_;
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_GATHER, operand, "operand", false));
  if (!dims) return INVALID("Gather: dimension numbers are NULL");
  if (!cml_dtype_is_plain_int(indices->dtype)) {
    return INVALID("Gather: indices %s must have an integer dtype (operand %s)", S1(indices),
                   S0(operand));
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
    return INVALID("Gather: dimension number counts out of range (operand %s, indices %s)",
                   S0(operand), S1(indices));
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
    if (s < 0 || s > operand->dims[i] || (collapsed[i] && s > 1)) {
      return INVALID(
          "Gather: slice sizes %s out of range for operand %s (collapsed axes need "
          "size <= 1)",
          L(dims->slice_sizes, orank), S0(operand));
    }
  }
  int32_t out_rank = batch_rank + dims->offset_output_axis_count;
  if (out_rank > CML_MAX_RANK) {
    return INVALID("Gather: output rank %d exceeds %d", (int)out_rank, CML_MAX_RANK);
  }
  if (!cml_sorted_in_range(dims->offset_output_axes, dims->offset_output_axis_count, out_rank)) {
    return INVALID("Gather: offset_output_axes %s must be sorted, distinct and in [0, %d)",
                   L(dims->offset_output_axes, dims->offset_output_axis_count), (int)out_rank);
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
    return INVALID("%s: indices %s must have an integer dtype", name, S1(indices));
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
    return INVALID("%s: dimension number counts out of range", name);
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

//===--- windows: convolution, reduce window, select and scatter ---===//

typedef enum cml_window_result_t {
  CML_WINDOW_OK,
  CML_WINDOW_NEGATIVE,      // the padded input is negative
  CML_WINDOW_OUT_OF_RANGE,  // an attribute or intermediate size is beyond CML__ATTR_MAX
} cml_window_result_t;

// XLA's windowed output size along one axis, for |in| >= 0, |window|, |base_dilation|,
// |window_dilation|, |stride| >= 1 and any int64 padding. Every attribute and every
// intermediate size (dilated input, padded input, dilated window) must lie within
// CML__ATTR_MAX in magnitude (builder_internal.h); all arithmetic is overflow-checked.
static cml_window_result_t cml_window_output(int64_t in, int64_t base_dilation, int64_t pad_low,
                                             int64_t pad_high, int64_t window,
                                             int64_t window_dilation, int64_t stride,
                                             int64_t* out) {
  if (!cml_attr_in_range(pad_low, -CML__ATTR_MAX) || !cml_attr_in_range(pad_high, -CML__ATTR_MAX) ||
      !cml_attr_in_range(base_dilation, 1) || !cml_attr_in_range(window_dilation, 1) ||
      !cml_attr_in_range(window, 1) || !cml_attr_in_range(stride, 1)) {
    return CML_WINDOW_OUT_OF_RANGE;
  }
  int64_t dilated_in = 0, dilated_window = 0;
  if (in > 0 &&
      (__builtin_mul_overflow(in - 1, base_dilation, &dilated_in) ||
       __builtin_add_overflow(dilated_in, 1, &dilated_in) || dilated_in > CML__ATTR_MAX)) {
    return CML_WINDOW_OUT_OF_RANGE;
  }
  if (__builtin_mul_overflow(window - 1, window_dilation, &dilated_window) ||
      __builtin_add_overflow(dilated_window, 1, &dilated_window) ||
      dilated_window > CML__ATTR_MAX) {
    return CML_WINDOW_OUT_OF_RANGE;
  }
  // Three terms of at most 2^55 in magnitude: no overflow.
  int64_t padded = dilated_in + pad_low + pad_high;
  if (padded < 0) return CML_WINDOW_NEGATIVE;
  if (padded > CML__ATTR_MAX) return CML_WINDOW_OUT_OF_RANGE;
  *out = padded < dilated_window ? 0 : (padded - dilated_window) / stride + 1;
  return CML_WINDOW_OK;
}

// Checks that |count| axes (|a|, then the |n| entries of |rest|...) form a permutation of
// [0, rank).
static bool cml_is_axis_permutation(int32_t rank, int64_t a, int64_t b, const int64_t* rest,
                                    int32_t n) {
  if (n + 2 != rank) return false;
  bool seen[CML_MAX_RANK] = {false};
  int64_t all[CML_MAX_RANK];
  all[0] = a;
  all[1] = b;
  for (int32_t i = 0; i < n; ++i) all[i + 2] = rest[i];
  for (int32_t i = 0; i < rank; ++i) {
    if (all[i] < 0 || all[i] >= rank || seen[all[i]]) return false;
    seen[all[i]] = true;
  }
  return true;
}

cml_status_t cml__infer_conv(const cml_shape_t* input, const cml_shape_t* kernel,
                             const cml_conv_config_t* config, cml_ir_attrs_t* attrs,
                             cml_shape_t* out) {
  SHAPE_BUFFERS;
  (void)sb2_;
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_CONV_GENERAL, input, "input", false));
  if (!config) return INVALID("ConvGeneral: config is NULL");
  if (kernel->dtype != input->dtype) {
    return INVALID("ConvGeneral: dtype mismatch: input %s and kernel %s", S0(input), S1(kernel));
  }
  int32_t n = config->spatial_count;
  if (n < 0 || n + 2 > CML_MAX_RANK || input->rank != n + 2 || kernel->rank != n + 2) {
    return INVALID("ConvGeneral: input %s and kernel %s must both have rank %d (%d spatial axes)",
                   S0(input), S1(kernel), (int)(n + 2), (int)n);
  }
  cml_conv_config_t c = *config;
  if (!cml_is_axis_permutation(n + 2, c.input_batch_axis, c.input_channel_axis,
                               c.input_spatial_axes, n)) {
    return INVALID(
        "ConvGeneral: input axes (batch, channel, spatial) are not a permutation of "
        "the axes of input %s",
        S0(input));
  }
  if (!cml_is_axis_permutation(n + 2, c.kernel_input_channel_axis, c.kernel_output_channel_axis,
                               c.kernel_spatial_axes, n)) {
    return INVALID(
        "ConvGeneral: kernel axes (input channel, output channel, spatial) are not a "
        "permutation of the axes of kernel %s",
        S1(kernel));
  }
  if (!cml_is_axis_permutation(n + 2, c.output_batch_axis, c.output_channel_axis,
                               c.output_spatial_axes, n)) {
    return INVALID(
        "ConvGeneral: output axes (batch, channel, spatial) are not a permutation of "
        "[0, %d) (input %s)",
        (int)(n + 2), S0(input));
  }
  if (c.channel_group_count < 0 || c.channel_group_count > CML__ATTR_MAX ||
      c.batch_group_count < 0 || c.batch_group_count > CML__ATTR_MAX) {
    return INVALID(
        "ConvGeneral: channel_group_count %lld and batch_group_count %lld must be in [0, %lld] "
        "(0 means 1; input %s, kernel %s)",
        (long long)c.channel_group_count, (long long)c.batch_group_count, (long long)CML__ATTR_MAX,
        S0(input), S1(kernel));
  }
  if (c.channel_group_count == 0) c.channel_group_count = 1;
  if (c.batch_group_count == 0) c.batch_group_count = 1;
  int64_t fg = c.channel_group_count, bg = c.batch_group_count;
  if (fg > 1 && bg > 1) {
    return INVALID(
        "ConvGeneral: channel_group_count %lld and batch_group_count %lld cannot both "
        "be > 1 (input %s, kernel %s)",
        (long long)fg, (long long)bg, S0(input), S1(kernel));
  }
  int64_t in_batch = input->dims[c.input_batch_axis];
  int64_t in_channels = input->dims[c.input_channel_axis];
  int64_t k_in = kernel->dims[c.kernel_input_channel_axis];
  int64_t k_out = kernel->dims[c.kernel_output_channel_axis];
  int64_t want_channels = 0;
  if (__builtin_mul_overflow(k_in, fg, &want_channels) || in_channels != want_channels) {
    return INVALID(
        "ConvGeneral: input channels %lld of input %s must equal kernel input "
        "channels %lld of kernel %s times channel_group_count %lld",
        (long long)in_channels, S0(input), (long long)k_in, S1(kernel), (long long)fg);
  }
  if (k_out % fg != 0 || k_out % bg != 0) {
    return INVALID(
        "ConvGeneral: kernel output channels %lld of kernel %s must be divisible by "
        "channel_group_count %lld and batch_group_count %lld",
        (long long)k_out, S1(kernel), (long long)fg, (long long)bg);
  }
  if (in_batch % bg != 0) {
    return INVALID(
        "ConvGeneral: input batch %lld of input %s must be divisible by "
        "batch_group_count %lld",
        (long long)in_batch, S0(input), (long long)bg);
  }
  if (c.output_dtype == CML_DTYPE_INVALID) c.output_dtype = input->dtype;
  if (!cml_dtype_in(CML_DSET_NUMBER_REAL, c.output_dtype)) {
    return INVALID("ConvGeneral: output dtype %s is not accepted (input %s)",
                   cml_dtype_name(c.output_dtype), S0(input));
  }
  cml_shape_t result = cml_shape_with(c.output_dtype, n + 2, input->dims);
  result.dims[c.output_batch_axis] = in_batch / bg;
  result.dims[c.output_channel_axis] = k_out;
  for (int32_t i = 0; i < n; ++i) {
    if (c.strides[i] == 0) c.strides[i] = 1;
    if (c.input_dilations[i] == 0) c.input_dilations[i] = 1;
    if (c.kernel_dilations[i] == 0) c.kernel_dilations[i] = 1;
    if (c.strides[i] < 0 || c.input_dilations[i] < 0 || c.kernel_dilations[i] < 0) {
      return INVALID(
          "ConvGeneral: spatial axis %d: stride %lld and dilations %lld, %lld must be "
          "positive (input %s)",
          (int)i, (long long)c.strides[i], (long long)c.input_dilations[i],
          (long long)c.kernel_dilations[i], S0(input));
    }
    int64_t window = kernel->dims[c.kernel_spatial_axes[i]];
    if (window < 1) {
      // StableHLO/XLA: windows are non-empty (XLA refuses a zero-size window).
      return INVALID(
          "ConvGeneral: spatial axis %d: kernel %s has size 0 along its spatial axis %lld (the "
          "window must not be empty; input %s)",
          (int)i, S1(kernel), (long long)c.kernel_spatial_axes[i], S0(input));
    }
    int64_t size = 0;
    cml_window_result_t r = cml_window_output(
        input->dims[c.input_spatial_axes[i]], c.input_dilations[i], c.padding_low[i],
        c.padding_high[i], kernel->dims[c.kernel_spatial_axes[i]], c.kernel_dilations[i],
        c.strides[i], &size);
    if (r == CML_WINDOW_NEGATIVE) {
      return INVALID("ConvGeneral: spatial axis %d: padding (%lld, %lld) makes input %s negative",
                     (int)i, (long long)c.padding_low[i], (long long)c.padding_high[i], S0(input));
    }
    if (r == CML_WINDOW_OUT_OF_RANGE) {
      return INVALID(
          "ConvGeneral: spatial axis %d: padding (%lld, %lld), stride %lld or dilations (input "
          "%lld, kernel %lld) out of range: each, and the dilated and padded sizes, must be at "
          "most %lld in magnitude (input %s, kernel %s)",
          (int)i, (long long)c.padding_low[i], (long long)c.padding_high[i],
          (long long)c.strides[i], (long long)c.input_dilations[i],
          (long long)c.kernel_dilations[i], (long long)CML__ATTR_MAX, S0(input), S1(kernel));
    }
    result.dims[c.output_spatial_axes[i]] = size;
  }
  for (int32_t i = n; i < CML_MAX_RANK; ++i) {
    c.strides[i] = c.input_dilations[i] = c.kernel_dilations[i] = 0;
    c.padding_low[i] = c.padding_high[i] = 0;
    c.input_spatial_axes[i] = c.kernel_spatial_axes[i] = c.output_spatial_axes[i] = 0;
  }
  *out = result;
  attrs->u.conv = c;
  return CML_OK;
}

// Normalizes a window config for |x| (strides 0 -> window, dilations 0 -> 1) and computes the
// output shape.
static cml_status_t cml_window_shape(cml_op_t op, const cml_shape_t* x,
                                     const cml_window_config_t* config,
                                     cml_window_config_t* normalized, cml_shape_t* out) {
  SHAPE_BUFFERS;
  LIST_BUFFER;
  (void)sb1_;
  (void)sb2_;
  if (!config) return INVALID("%s: window config is NULL", cml_op_name(op));
  if (config->rank != x->rank) {
    return INVALID("%s: window config of rank %d for operand %s of rank %d", cml_op_name(op),
                   (int)config->rank, S0(x), (int)x->rank);
  }
  cml_window_config_t w;
  memset(&w, 0, sizeof w);
  w.rank = config->rank;
  *out = *x;
  for (int32_t i = 0; i < x->rank; ++i) {
    w.window_dims[i] = config->window_dims[i];
    w.strides[i] = config->strides[i] == 0 ? config->window_dims[i] : config->strides[i];
    w.input_dilations[i] = config->input_dilations[i] == 0 ? 1 : config->input_dilations[i];
    w.window_dilations[i] = config->window_dilations[i] == 0 ? 1 : config->window_dilations[i];
    w.padding_low[i] = config->padding_low[i];
    w.padding_high[i] = config->padding_high[i];
    if (w.window_dims[i] == 1 && (w.padding_low[i] < 0 || w.padding_high[i] < 0)) {
      // XLA's algebraic simplifier aborts on a size-1 window with negative padding (it
      // replaces the op by an elementwise one of the operand's shape): one rule for every
      // backend. Crop with Slice instead.
      return INVALID(
          "%s: axis %d of %s: padding (%lld, %lld) must not be negative with a window of size 1",
          cml_op_name(op), (int)i, S0(x), (long long)w.padding_low[i],
          (long long)w.padding_high[i]);
    }
    if (w.window_dims[i] < 1 || w.strides[i] < 1 || w.input_dilations[i] < 1 ||
        w.window_dilations[i] < 1) {
      return INVALID(
          "%s: axis %d of %s: window %lld, stride %lld and dilations must be "
          "positive (window dims %s)",
          cml_op_name(op), (int)i, S0(x), (long long)w.window_dims[i], (long long)w.strides[i],
          L(config->window_dims, x->rank));
    }
    cml_window_result_t r =
        cml_window_output(x->dims[i], w.input_dilations[i], w.padding_low[i], w.padding_high[i],
                          w.window_dims[i], w.window_dilations[i], w.strides[i], &out->dims[i]);
    if (r == CML_WINDOW_NEGATIVE) {
      return INVALID("%s: axis %d: padding (%lld, %lld) makes operand %s negative", cml_op_name(op),
                     (int)i, (long long)w.padding_low[i], (long long)w.padding_high[i], S0(x));
    }
    if (r == CML_WINDOW_OUT_OF_RANGE) {
      return INVALID(
          "%s: axis %d: padding (%lld, %lld), window %lld, stride %lld or dilations (base "
          "%lld, window %lld) out of range: each, and the dilated and padded sizes, must be at "
          "most %lld in magnitude (operand %s)",
          cml_op_name(op), (int)i, (long long)w.padding_low[i], (long long)w.padding_high[i],
          (long long)w.window_dims[i], (long long)w.strides[i], (long long)w.input_dilations[i],
          (long long)w.window_dilations[i], (long long)CML__ATTR_MAX, S0(x));
    }
  }
  *normalized = w;
  return CML_OK;
}

cml_status_t cml__infer_reduce_window(const cml_shape_t* x, cml_reduce_type_t type,
                                      const cml_window_config_t* config, cml_ir_attrs_t* attrs,
                                      cml_shape_t* out) {
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_REDUCE_WINDOW, x, "operand", false));
  if (type <= CML_REDUCE_UNDEFINED || type >= CML_REDUCE_TYPE_COUNT) {
    return INVALID("ReduceWindow: invalid reduction type %d", (int)type);
  }
  CML_RETURN_IF_ERROR(cml_window_shape(CML_OP_REDUCE_WINDOW, x, config, &attrs->u.window, out));
  attrs->reduce_type = type;
  return CML_OK;
}

cml_status_t cml__infer_select_and_scatter(cml_op_t op, const cml_shape_t* operand,
                                           const cml_shape_t* source,
                                           const cml_window_config_t* config, cml_ir_attrs_t* attrs,
                                           cml_shape_t* out) {
  SHAPE_BUFFERS;
  (void)sb2_;
  if (op != CML_OP_SELECT_AND_SCATTER_MAX && op != CML_OP_SELECT_AND_SCATTER_MIN &&
      op != CML_OP_SELECT_AND_SCATTER_SUM) {
    return INVALID("SelectAndScatter: %s is not SelectAndScatterMax, Min or Sum", cml_op_name(op));
  }
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(op, operand, "operand", false));
  if (source->dtype != operand->dtype) {
    return INVALID("%s: dtype mismatch: operand %s and source %s", cml_op_name(op), S0(operand),
                   S1(source));
  }
  if (config) {
    for (int32_t i = 0; i < config->rank && i < CML_MAX_RANK; ++i) {
      if ((config->input_dilations[i] != 0 && config->input_dilations[i] != 1) ||
          (config->window_dilations[i] != 0 && config->window_dilations[i] != 1)) {
        return INVALID("%s: dilations are not supported (axis %d of operand %s)", cml_op_name(op),
                       (int)i, S0(operand));
      }
    }
  }
  cml_shape_t windows;
  CML_RETURN_IF_ERROR(cml_window_shape(op, operand, config, &attrs->u.window, &windows));
  if (!cml_shape_dims_equal(&windows, source)) {
    return INVALID("%s: source %s must have the window output shape %s of operand %s",
                   cml_op_name(op), S1(source), cml__shape_text(&windows, sb2_), S0(operand));
  }
  *out = *operand;
  return CML_OK;
}

//===--- dot ---===//

cml_status_t cml__infer_dot_general(cml_op_t op, const cml_shape_t* lhs, const cml_shape_t* rhs,
                                    const cml_dot_config_t* config, cml_ir_attrs_t* attrs,
                                    cml_shape_t* out) {
  SHAPE_BUFFERS;
  (void)sb2_;
  const char* name = cml_op_name(op);
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(op, lhs, "lhs", false));
  if (!config) return INVALID("%s: config is NULL", name);
  if (lhs->dtype != rhs->dtype) {
    return INVALID("%s: dtype mismatch: lhs %s and rhs %s", name, S0(lhs), S1(rhs));
  }
  const cml_dot_config_t* c = config;
  if (!cml_count_ok(c->lhs_contracting_count) || !cml_count_ok(c->rhs_contracting_count) ||
      !cml_count_ok(c->lhs_batch_count) || !cml_count_ok(c->rhs_batch_count) ||
      c->lhs_contracting_count != c->rhs_contracting_count ||
      c->lhs_batch_count != c->rhs_batch_count) {
    return INVALID(
        "%s: lhs and rhs need as many contracting axes (%d vs %d) and batch axes "
        "(%d vs %d) (lhs %s, rhs %s)",
        name, (int)c->lhs_contracting_count, (int)c->rhs_contracting_count, (int)c->lhs_batch_count,
        (int)c->rhs_batch_count, S0(lhs), S1(rhs));
  }
  int64_t lhs_axes[2 * CML_MAX_RANK], rhs_axes[2 * CML_MAX_RANK];
  int32_t nc = c->lhs_contracting_count, nb = c->lhs_batch_count;
  for (int32_t i = 0; i < nc; ++i) {
    lhs_axes[i] = c->lhs_contracting_axes[i];
    rhs_axes[i] = c->rhs_contracting_axes[i];
  }
  for (int32_t i = 0; i < nb; ++i) {
    lhs_axes[nc + i] = c->lhs_batch_axes[i];
    rhs_axes[nc + i] = c->rhs_batch_axes[i];
  }
  if (nc + nb > lhs->rank || !cml_unique_in_range(lhs_axes, nc + nb, lhs->rank)) {
    return INVALID("%s: contracting and batch axes of lhs %s must be distinct and in range", name,
                   S0(lhs));
  }
  if (nc + nb > rhs->rank || !cml_unique_in_range(rhs_axes, nc + nb, rhs->rank)) {
    return INVALID("%s: contracting and batch axes of rhs %s must be distinct and in range", name,
                   S1(rhs));
  }
  for (int32_t i = 0; i < nc + nb; ++i) {
    if (lhs->dims[lhs_axes[i]] != rhs->dims[rhs_axes[i]]) {
      return INVALID(
          "%s: %s axis %lld of lhs %s (size %lld) does not match axis %lld of rhs %s "
          "(size %lld)",
          name, i < nc ? "contracting" : "batch", (long long)lhs_axes[i], S0(lhs),
          (long long)lhs->dims[lhs_axes[i]], (long long)rhs_axes[i], S1(rhs),
          (long long)rhs->dims[rhs_axes[i]]);
    }
  }
  cml_dot_config_t norm = *c;
  if (norm.accumulator_dtype == CML_DTYPE_INVALID) norm.accumulator_dtype = lhs->dtype;
  if (norm.output_dtype == CML_DTYPE_INVALID) norm.output_dtype = norm.accumulator_dtype;
  if (!cml_dtype_in(CML_DSET_NUMBER, norm.accumulator_dtype) ||
      !cml_dtype_in(CML_DSET_NUMBER, norm.output_dtype)) {
    return INVALID("%s: accumulator dtype %s / output dtype %s not accepted (lhs %s)", name,
                   cml_dtype_name(norm.accumulator_dtype), cml_dtype_name(norm.output_dtype),
                   S0(lhs));
  }
  int32_t out_rank = lhs->rank + rhs->rank - 2 * nc - nb;
  if (out_rank > CML_MAX_RANK) {
    return INVALID("%s: output rank %d exceeds %d (lhs %s, rhs %s)", name, (int)out_rank,
                   CML_MAX_RANK, S0(lhs), S1(rhs));
  }
  bool lhs_used[CML_MAX_RANK] = {false}, rhs_used[CML_MAX_RANK] = {false};
  for (int32_t i = 0; i < nc + nb; ++i) {
    lhs_used[lhs_axes[i]] = true;
    rhs_used[rhs_axes[i]] = true;
  }
  cml_shape_t result = cml_shape_with(norm.output_dtype, 0, NULL);
  for (int32_t i = 0; i < nb; ++i) result.dims[result.rank++] = lhs->dims[c->lhs_batch_axes[i]];
  for (int32_t i = 0; i < lhs->rank; ++i) {
    if (!lhs_used[i]) result.dims[result.rank++] = lhs->dims[i];
  }
  for (int32_t i = 0; i < rhs->rank; ++i) {
    if (!rhs_used[i]) result.dims[result.rank++] = rhs->dims[i];
  }
  for (int32_t i = nc; i < CML_MAX_RANK; ++i) {
    norm.lhs_contracting_axes[i] = norm.rhs_contracting_axes[i] = 0;
  }
  for (int32_t i = nb; i < CML_MAX_RANK; ++i) norm.lhs_batch_axes[i] = norm.rhs_batch_axes[i] = 0;
  *out = result;
  attrs->u.dot = norm;
  return CML_OK;
}

cml_status_t cml__infer_dot(const cml_shape_t* lhs, const cml_shape_t* rhs, cml_ir_attrs_t* attrs,
                            cml_shape_t* out) {
  SHAPE_BUFFERS;
  (void)sb2_;
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_DOT, lhs, "lhs", false));
  if (lhs->rank < 1 || lhs->rank > 2 || rhs->rank < 1 || rhs->rank > 2) {
    return INVALID("Dot: operands must be vectors or matrices, got lhs %s and rhs %s", S0(lhs),
                   S1(rhs));
  }
  cml_dot_config_t c;
  memset(&c, 0, sizeof c);
  c.lhs_contracting_count = c.rhs_contracting_count = 1;
  c.lhs_contracting_axes[0] = lhs->rank - 1;
  c.rhs_contracting_axes[0] = 0;
  if (lhs->dtype == rhs->dtype && lhs->dims[lhs->rank - 1] != rhs->dims[0]) {
    return INVALID("Dot: incompatible shapes %s and %s (contracting sizes %lld and %lld)", S0(lhs),
                   S1(rhs), (long long)lhs->dims[lhs->rank - 1], (long long)rhs->dims[0]);
  }
  cml_status_t st = cml__infer_dot_general(CML_OP_DOT, lhs, rhs, &c, attrs, out);
  return st;
}

//===--- other ops ---===//

cml_status_t cml__infer_arg_min_max(const cml_shape_t* x, int64_t axis, cml_dtype_t out_dtype,
                                    bool is_min, cml_ir_attrs_t* attrs, cml_shape_t* out) {
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_ARG_MIN_MAX, x, "operand", false));
  CML_RETURN_IF_ERROR(cml_check_axis(CML_OP_ARG_MIN_MAX, x, axis, "axis"));
  if (!cml_dtype_is_plain_int(out_dtype)) {
    SHAPE_BUFFERS;
    (void)sb1_;
    (void)sb2_;
    return INVALID("ArgMinMax: output dtype %s must be an integer dtype (operand %s)",
                   cml_dtype_name(out_dtype), S0(x));
  }
  *out = *x;
  out->dtype = out_dtype;
  out->rank = 0;
  for (int32_t i = 0; i < x->rank; ++i) {
    if (i != axis) out->dims[out->rank++] = x->dims[i];
  }
  for (int32_t i = out->rank; i < CML_MAX_RANK; ++i) out->dims[i] = 0;
  attrs->axis = axis;
  attrs->dtype = out_dtype;
  attrs->flag = is_min;
  return CML_OK;
}

cml_status_t cml__infer_rng(const cml_shape_t* state, const cml_shape_t* shape,
                            cml_shape_t out[2]) {
  SHAPE_BUFFERS;
  (void)sb1_;
  (void)sb2_;
  if (state->dtype != CML_DTYPE_U64 || state->rank != 1 || state->dims[0] != 3) {
    return INVALID("RNGBitGenerator: state %s must be (Uint64)[3]", S0(state));
  }
  CML_RETURN_IF_ERROR(cml_check_user_shape(CML_OP_RNG_BIT_GENERATOR, shape, "output"));
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_RNG_BIT_GENERATOR, shape, "output", false));
  out[0] = *state;
  out[1] = cml_shape_with(shape->dtype, shape->rank, shape->dims);
  return CML_OK;
}

cml_status_t cml__infer_fft(const cml_shape_t* x, cml_fft_type_t type, const int64_t* lengths,
                            size_t length_count, cml_ir_attrs_t* attrs, cml_shape_t* out) {
  SHAPE_BUFFERS;
  LIST_BUFFER;
  (void)sb1_;
  (void)sb2_;
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_FFT, x, "operand", false));
  if ((int)type < 0 || type >= CML_FFT_TYPE_COUNT) {
    return INVALID("FFT: invalid FFT type %d (operand %s)", (int)type, S0(x));
  }
  if (length_count < 1 || length_count > 3 || length_count > (size_t)x->rank || !lengths) {
    return INVALID("FFT: %zu FFT lengths for operand %s (need 1 to 3, at most its rank)",
                   length_count, S0(x));
  }
  bool is_complex = cml_dtype_is_complex(x->dtype);
  bool want_complex = type != CML_FFT_FORWARD_REAL;
  if (is_complex != want_complex) {
    return INVALID("FFT: type %d needs a %s operand, got %s", (int)type,
                   want_complex ? "complex" : "real (Float32/Float64)", S0(x));
  }
  *out = *x;
  int32_t first = x->rank - (int32_t)length_count;
  for (size_t i = 0; i < length_count; ++i) {
    int64_t want = lengths[i];
    bool last = i + 1 == length_count;
    if (lengths[i] < 1) {
      // XLA refuses empty transforms (and a length-0 real FFT would have 1 output from 0
      // inputs): every length must be positive, for every FFT type.
      return INVALID("FFT: length %lld in %s must be positive (operand %s)", (long long)lengths[i],
                     L(lengths, length_count), S0(x));
    }
    if (last && type == CML_FFT_INVERSE_REAL) want = lengths[i] / 2 + 1;
    if (x->dims[first + (int32_t)i] != want) {
      return INVALID("FFT: the trailing axes of operand %s do not match FFT lengths %s (type %d)",
                     S0(x), L(lengths, length_count), (int)type);
    }
  }
  int32_t last_axis = x->rank - 1;
  switch (type) {
    case CML_FFT_FORWARD_REAL:
      out->dtype = x->dtype == CML_DTYPE_F32 ? CML_DTYPE_C64 : CML_DTYPE_C128;
      out->dims[last_axis] = lengths[length_count - 1] / 2 + 1;
      break;
    case CML_FFT_INVERSE_REAL:
      out->dtype = cml_dtype_real_part(x->dtype);
      out->dims[last_axis] = lengths[length_count - 1];
      break;
    default:
      break;
  }
  attrs->fft_type = type;
  attrs->axis_count = (int32_t)length_count;
  for (size_t i = 0; i < length_count; ++i) attrs->axes[i] = lengths[i];
  return CML_OK;
}

cml_status_t cml__infer_batch_norm(cml_op_t op, const cml_shape_t* x, const cml_shape_t* params,
                                   size_t param_count, float epsilon, int64_t feature_axis,
                                   cml_ir_attrs_t* attrs, cml_shape_t* outs) {
  SHAPE_BUFFERS;
  (void)sb2_;
  const char* name = cml_op_name(op);
  static const char* const kInference[] = {"scale", "offset", "mean", "variance"};
  static const char* const kTraining[] = {"scale", "offset"};
  static const char* const kGradient[] = {"scale", "mean", "variance", "grad_output"};
  const char* const* names = op == CML_OP_BATCH_NORM_TRAINING   ? kTraining
                             : op == CML_OP_BATCH_NORM_GRADIENT ? kGradient
                                                                : kInference;
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(op, x, "operand", false));
  CML_RETURN_IF_ERROR(cml_check_axis(op, x, feature_axis, "feature axis"));
  if (!(epsilon >= 0.0f) || isinf(epsilon)) {
    return INVALID("%s: epsilon %g must be finite and >= 0 (operand %s)", name, (double)epsilon,
                   S0(x));
  }
  int64_t features = x->dims[feature_axis];
  cml_shape_t vec = cml_shape_with(x->dtype, 1, &features);
  for (size_t i = 0; i < param_count; ++i) {
    bool is_grad = op == CML_OP_BATCH_NORM_GRADIENT && i == 3;
    const cml_shape_t* want = is_grad ? x : &vec;
    if (!cml_shape_equal(&params[i], want)) {
      return INVALID("%s: %s %s must be %s (operand %s, feature axis %lld)", name, names[i],
                     S1(&params[i]), cml__shape_text(want, sb2_), S0(x), (long long)feature_axis);
    }
  }
  outs[0] = *x;
  if (op != CML_OP_BATCH_NORM_INFERENCE) {
    outs[1] = vec;
    outs[2] = vec;
  }
  attrs->axis = feature_axis;
  attrs->epsilon = epsilon;
  return CML_OK;
}

cml_status_t cml__infer_user_shape(cml_op_t op, const cml_shape_t* shape, bool allow_packed,
                                   cml_shape_t* out) {
  CML_RETURN_IF_ERROR(cml_check_user_shape(op, shape, "the"));
  if (!cml_dtype_is_array_dtype(shape->dtype) ||
      (!allow_packed && cml_dtype_is_packed(shape->dtype))) {
    SHAPE_BUFFERS;
    (void)sb1_;
    (void)sb2_;
    return INVALID("%s: dtype %s of %s is not accepted", cml_op_name(op),
                   cml_dtype_name(shape->dtype), S0(shape));
  }
  *out = cml_shape_with(shape->dtype, shape->rank, shape->dims);
  return CML_OK;
}
