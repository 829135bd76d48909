// SPDX-License-Identifier: Apache-2.0
// src/core/shape_infer_elementwise.c: shape inference of the "elementwise" ops (unary, binary
// and compare ops with restricted broadcasting, ConvertDType, Bitcast, Clamp, Where, Iota).
#include "core/shape_infer_internal.h"

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
    if (a->rank != b->rank) {
      return INVALID(
          "%s: incompatible shapes %s and %s (%s and %s): ranks %d and %d; operands "
          "broadcast only from a scalar or between equal ranks (a size-1 axis "
          "stretches): give the lower-rank one the other's rank with Reshape (size-1 "
          "axes) or BroadcastInDim",
          cml_op_name(op), S0(a), S1(b), a_name, b_name, (int)a->rank, (int)b->rank);
    }
    int32_t axis = 0;
    while (axis < a->rank &&
           (a->dims[axis] == b->dims[axis] || a->dims[axis] == 1 || b->dims[axis] == 1)) {
      ++axis;
    }
    return INVALID(
        "%s: incompatible shapes %s and %s (%s and %s): axis %d has sizes %lld and "
        "%lld (they must be equal, or one of them 1)",
        cml_op_name(op), S0(a), S1(b), a_name, b_name, (int)axis, (long long)a->dims[axis],
        (long long)b->dims[axis]);
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

cml_status_t cml__infer_iota(const cml_shape_t* shape, int64_t axis, cml_ir_attrs_t* attrs,
                             cml_shape_t* out) {
  CML_RETURN_IF_ERROR(cml_check_user_shape(CML_OP_IOTA, shape, "output"));
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_IOTA, shape, "output", false));
  CML_RETURN_IF_ERROR(cml_check_axis(CML_OP_IOTA, shape, axis, "axis"));
  *out = cml_shape_with(shape->dtype, shape->rank, shape->dims);
  attrs->axis = axis;
  return CML_OK;
}
