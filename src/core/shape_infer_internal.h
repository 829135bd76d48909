// SPDX-License-Identifier: Apache-2.0
// src/core/shape_infer_internal.h: what the shape inference files (src/core/shape_infer*.c, one
// per op group of cml/ops.def) share: the message macros and the small checks. Not a public
// header. The helpers are static inline so that each file keeps using them by the names they had
// when shape inference was one file.
#ifndef CML_CORE_SHAPE_INFER_INTERNAL_H_
#define CML_CORE_SHAPE_INFER_INTERNAL_H_

#include <stdio.h>
#include <string.h>

#include "core/builder_internal.h"

// The dim of the sum of dims |a| and |b| (src/base/shape.c): static, or a symbolic-sum dynamic
// axis "=a+b".
cml_status_t cml__axis_sum(int64_t a, int64_t b, int64_t* out_dim);

#define INVALID(...) cml_status_make(CML_STATUS_INVALID_ARGUMENT, __VA_ARGS__)

// Formats up to 4 shapes per message through these locals.
#define SHAPE_BUFFERS char sb0_[CML__SHAPE_TEXT], sb1_[CML__SHAPE_TEXT], sb2_[CML__SHAPE_TEXT]
#define S0(s) cml__shape_text((s), sb0_)
#define S1(s) cml__shape_text((s), sb1_)
#define S2(s) cml__shape_text((s), sb2_)

static inline cml_shape_t cml_shape_with(cml_dtype_t dtype, int32_t rank, const int64_t* dims) {
  cml_shape_t s;
  memset(&s, 0, sizeof s);
  s.dtype = dtype;
  s.rank = rank;
  for (int32_t i = 0; i < rank; ++i) s.dims[i] = dims[i];
  return s;
}

static inline bool cml_dtype_in(cml_dtype_set_t set, cml_dtype_t dtype) {
  return (int)dtype > 0 && (int)dtype < 64 && (set & CML_DTYPE_BIT(dtype)) != 0;
}

static inline bool cml_dtype_is_plain_int(cml_dtype_t dtype) {
  return cml_dtype_in(CML_DSET_INT, dtype);
}

// Writes "[a, b, c]" of |count| int64s into |buffer|.
static inline const char* cml_list_text(const int64_t* values, size_t count, char* buffer,
                                        size_t size) {
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
static inline cml_status_t cml_check_user_shape(cml_op_t op, const cml_shape_t* shape,
                                                const char* what) {
  if (!shape) return INVALID("%s: %s shape is NULL", cml_op_name(op), what);
  if (shape->rank < 0 || shape->rank > CML_MAX_RANK) {
    return INVALID("%s: %s rank %d out of range [0, %d]", cml_op_name(op), what, (int)shape->rank,
                   CML_MAX_RANK);
  }
  cml_status_t st = cml_shape_validate(shape);  // dynamic axes pass; Constant rejects them
  if (st != CML_OK) return cml_status_annotate(st, "%s: %s shape", cml_op_name(op), what);
  return CML_OK;
}

static inline cml_status_t cml_check_axis(cml_op_t op, const cml_shape_t* x, int64_t axis,
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
static inline cml_status_t cml_check_axes(cml_op_t op, const cml_shape_t* x, const int64_t* axes,
                                          size_t count, const char* what) {
  if (count > (size_t)x->rank) {
    SHAPE_BUFFERS;
    (void)sb1_;
    (void)sb2_;
    return INVALID("%s: %zu entries in the %s list for %s of rank %d (each axis may appear once)",
                   cml_op_name(op), count, what, S0(x), (int)x->rank);
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

// Whether a size-like attribute lies in [lo, CML__ATTR_MAX] (|lo| is 0, 1 or -CML__ATTR_MAX):
// see CML__ATTR_MAX in builder_internal.h.
static inline bool cml_attr_in_range(int64_t value, int64_t lo) {
  return value >= lo && value <= CML__ATTR_MAX;
}

static inline bool cml_dtype_is_array_dtype(cml_dtype_t d) {
  return cml_dtype_in(CML_DSET_ALL, d) || cml_dtype_is_storage_only(d);
}

// Byte-sized storage dtypes (the float8 kinds): the movement ops that work on whole elements
// (Transpose, BroadcastInDim, Concatenate, Slice) accept them as well.
static inline bool cml_dtype_is_byte_storage(cml_dtype_t d) {
  return cml_dtype_is_minifloat(d) && !cml_dtype_is_packed(d);
}

// Checks |count| entries of |axes| are strictly increasing in [0, bound).
static inline bool cml_sorted_in_range(const int64_t* axes, int32_t count, int64_t bound) {
  for (int32_t i = 0; i < count; ++i) {
    if (axes[i] < 0 || axes[i] >= bound || (i > 0 && axes[i] <= axes[i - 1])) return false;
  }
  return true;
}

static inline bool cml_unique_in_range(const int64_t* axes, int32_t count, int64_t bound) {
  bool seen[CML_MAX_RANK] = {false};
  for (int32_t i = 0; i < count; ++i) {
    if (axes[i] < 0 || axes[i] >= bound || bound > CML_MAX_RANK || seen[axes[i]]) return false;
    seen[axes[i]] = true;
  }
  return true;
}

static inline bool cml_count_ok(int32_t count) { return count >= 0 && count <= CML_MAX_RANK; }

typedef enum cml_window_result_t {
  CML_WINDOW_OK,
  CML_WINDOW_NEGATIVE,      // the padded input is negative
  CML_WINDOW_OUT_OF_RANGE,  // an attribute or intermediate size is beyond CML__ATTR_MAX
} cml_window_result_t;

// XLA's windowed output size along one axis, for |in| >= 0, |window|, |base_dilation|,
// |window_dilation|, |stride| >= 1 and any int64 padding. Every attribute and every
// intermediate size (dilated input, padded input, dilated window) must lie within
// CML__ATTR_MAX in magnitude (builder_internal.h); all arithmetic is overflow-checked.
static inline cml_window_result_t cml_window_output(int64_t in, int64_t base_dilation,
                                                    int64_t pad_low, int64_t pad_high,
                                                    int64_t window, int64_t window_dilation,
                                                    int64_t stride, int64_t* out) {
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

#endif  // CML_CORE_SHAPE_INFER_INTERNAL_H_
