// SPDX-License-Identifier: Apache-2.0
// src/core/shape_infer_dynamic.c: shape inference of the "dynamic" ops (DynamicDimensionSize,
// DynamicShape, DynamicReshape; cml/shape.h describes dynamic axes).
#include "core/shape_infer_internal.h"

cml_status_t cml__infer_dynamic_dimension_size(const cml_shape_t* x, int64_t axis,
                                               cml_ir_attrs_t* attrs, cml_shape_t* out) {
  CML_RETURN_IF_ERROR(cml_check_axis(CML_OP_DYNAMIC_DIMENSION_SIZE, x, axis, "axis"));
  *out = cml_shape_with(CML_DTYPE_I32, 0, NULL);
  attrs->axis = axis;
  return CML_OK;
}

cml_status_t cml__infer_dynamic_shape(const cml_shape_t* x, cml_shape_t* out) {
  int64_t rank = x->rank;
  *out = cml_shape_with(CML_DTYPE_I32, 1, &rank);
  return CML_OK;
}

cml_status_t cml__infer_dynamic_reshape(const cml_shape_t* x, const int64_t* dims,
                                        const char* const* names, const bool* valued, int32_t rank,
                                        cml_ir_attrs_t* attrs, cml_shape_t* out, bool* out_static) {
  SHAPE_BUFFERS;
  LIST_BUFFER;
  (void)sb1_;
  (void)sb2_;
  *out_static = false;
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_DYNAMIC_RESHAPE, x, "operand", true));
  if (rank < 0 || rank > CML_MAX_RANK || (rank > 0 && !dims)) {
    return INVALID("DynamicReshape: bad rank %d for %s", (int)rank, S0(x));
  }
  int64_t result[CML_MAX_RANK];
  int32_t inferred = -1;
  int64_t static_out = 1;
  bool has_valued = false;
  for (int32_t i = 0; i < rank; ++i) {
    const char* name = names ? names[i] : NULL;
    if (!name) {
      if (dims[i] < 0) {
        return INVALID("DynamicReshape: axis %d of %s for %s: a dynamic axis needs a name", (int)i,
                       L(dims, rank), S0(x));
      }
      if (dims[i] != 0 && static_out > INT64_MAX / dims[i]) {
        return INVALID("DynamicReshape: dimensions %s overflow", L(dims, rank));
      }
      static_out *= dims[i];
      result[i] = dims[i];
      continue;
    }
    if (dims[i] != CML_DYNAMIC_DIM) {
      return INVALID(
          "DynamicReshape: axis %d (\"%s\") of %s for %s: a named axis takes CML_DYNAMIC_DIM",
          (int)i, name, L(dims, rank), S0(x));
    }
    if (name[0] == '=' || name[0] == '#' || name[0] == '*' || name[0] == '?') {
      return INVALID("DynamicReshape: axis %d: axis name \"%s\" is reserved (operand %s)", (int)i,
                     name, S0(x));
    }
    int64_t id = 0;
    cml_status_t st = cml_axis_id(name, &id);
    if (st != CML_OK) return cml_status_annotate(st, "DynamicReshape: axis %d", (int)i);
    result[i] = -id;
    bool known = false;
    for (int32_t k = 0; k < x->rank; ++k) known = known || x->dims[k] == -id;
    if (known) continue;
    if (valued && valued[i]) {  // sized by a runtime value at execution
      has_valued = true;
      continue;
    }
    for (int32_t k = 0; k < i; ++k) {
      if (result[k] == -id) {
        return INVALID("DynamicReshape: inferred axis \"%s\" appears twice in the output of %s",
                       name, S0(x));
      }
    }
    if (inferred >= 0) {
      return INVALID(
          "DynamicReshape: axes %d (\"%s\") and %d (\"%s\") are both inferred (not axes of the "
          "operand %s); at most one may be",
          (int)inferred, cml_axis_name(cml_dim_axis_id(result[inferred])), (int)i, name, S0(x));
    }
    inferred = i;
  }
  int64_t count = 1;  // the static part of the operand
  int64_t in_ids[CML_MAX_RANK], out_ids[CML_MAX_RANK];
  int32_t in_n = 0, out_n = 0;
  for (int32_t k = 0; k < x->rank; ++k) {
    if (x->dims[k] < 0) {
      in_ids[in_n++] = x->dims[k];
    } else {
      count *= x->dims[k];
    }
  }
  for (int32_t i = 0; i < rank; ++i) {
    if (result[i] < 0) out_ids[out_n++] = result[i];
  }
  if (in_n == 0 && inferred >= 0 && !has_valued) {
    // A static operand: the inferred axis is known now, and the result is static.
    if (static_out <= 0 || count % static_out != 0 || count / static_out <= 0) {
      return INVALID(
          "DynamicReshape: cannot reshape %s to %s: axis %d (\"%s\") would not be a positive "
          "whole size",
          S0(x), L(dims, rank), (int)inferred, cml_axis_name(cml_dim_axis_id(result[inferred])));
    }
    result[inferred] = count / static_out;
    *out_static = true;
  } else if (inferred < 0) {
    // Without an inferred axis the static parts must match when the dynamic axes do.
    bool same = in_n == out_n;
    for (int32_t a = 0; same && a < in_n; ++a) {
      int32_t hits_in = 0, hits_out = 0;
      for (int32_t b = 0; b < in_n; ++b) hits_in += in_ids[b] == in_ids[a];
      for (int32_t b = 0; b < out_n; ++b) hits_out += out_ids[b] == in_ids[a];
      same = hits_in == hits_out;
    }
    if (same && count != static_out) {
      return INVALID(
          "DynamicReshape: cannot reshape %s to %s: the static dims hold %lld and %lld elements",
          S0(x), L(dims, rank), (long long)count, (long long)static_out);
    }
    *out_static = in_n == 0 && !has_valued;
  }
  *out = cml_shape_with(x->dtype, rank, result);
  attrs->axis_count = rank;
  for (int32_t i = 0; i < rank; ++i) attrs->axes[i] = result[i];
  attrs->axis = inferred;
  return CML_OK;
}
