// SPDX-License-Identifier: Apache-2.0
// src/base/shape.c: shape construction, sizes, formatting and parsing.
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cml/shape.h"

cml_status_t cml_shape_init(cml_shape_t* out_shape, cml_dtype_t dtype, int32_t rank,
                            const int64_t* dims) {
  if (!out_shape) return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "shape: NULL output");
  memset(out_shape, 0, sizeof *out_shape);
  if (!cml_dtype_is_supported(dtype))
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "shape: unsupported dtype %s (%d)",
                           cml_dtype_name(dtype), (int)dtype);
  if (rank < 0 || rank > CML_MAX_RANK)
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "shape: rank %d out of range [0, %d]",
                           (int)rank, CML_MAX_RANK);
  if (rank > 0 && !dims)
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "shape: NULL dims for rank %d", (int)rank);
  // At most 2^55 elements (CML_MAX_ELEMENTS): then the size in bits of any dtype (at most 128
  // bits per element) stays below 2^62, so bit and byte sizes never overflow int64. Zero
  // dimensions count as 1 here, so that the row-major strides of an empty shape fit as well.
  uint64_t count = 1;
  bool too_many = false;
  for (int32_t i = 0; i < rank; ++i) {
    if (dims[i] < 0)
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                             "shape: negative dimension %lld at axis %d", (long long)dims[i],
                             (int)i);
    uint64_t d = dims[i] == 0 ? 1u : (uint64_t)dims[i];
    if (!too_many && __builtin_mul_overflow(count, d, &count)) too_many = true;
  }
  if (too_many || count > (uint64_t)CML_MAX_ELEMENTS) {
    cml_shape_t tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.dtype = dtype;
    tmp.rank = rank;
    for (int32_t i = 0; i < rank; ++i) tmp.dims[i] = dims[i];
    char text[400];
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "shape: %s has too many elements (the limit is 2^55)",
                           cml_shape_format(&tmp, text, sizeof text));
  }
  out_shape->dtype = dtype;
  out_shape->rank = rank;
  for (int32_t i = 0; i < rank; ++i) out_shape->dims[i] = dims[i];
  return CML_OK;
}

cml_shape_t cml_shape_make(cml_dtype_t dtype, int32_t rank, const int64_t* dims) {
  cml_shape_t s;
  cml_status_t st = cml_shape_init(&s, dtype, rank, dims);
  if (st != CML_OK) {
    cml_status_free(st);
    memset(&s, 0, sizeof s);
    s.dtype = CML_DTYPE_INVALID;
  }
  return s;
}

cml_shape_t cml_shape_scalar(cml_dtype_t dtype) { return cml_shape_make(dtype, 0, NULL); }

// The rank of |shape| when it is in [0, CML_MAX_RANK], else -1. The accessors below take
// hand-filled structs too, so they never read past dims[CML_MAX_RANK - 1].
static int32_t cml_shape_checked_rank(const cml_shape_t* shape) {
  return (shape->rank >= 0 && shape->rank <= CML_MAX_RANK) ? shape->rank : -1;
}

int64_t cml_shape_element_count(const cml_shape_t* shape) {
  if (!shape) return 0;
  int32_t rank = cml_shape_checked_rank(shape);
  if (rank < 0) return 0;
  // A negative or zero dim gives 0 elements; an overflowing product saturates at INT64_MAX.
  for (int32_t i = 0; i < rank; ++i) {
    if (shape->dims[i] <= 0) return 0;
  }
  uint64_t n = 1;
  for (int32_t i = 0; i < rank; ++i) {
    uint64_t d = (uint64_t)shape->dims[i];
    if (n > (uint64_t)INT64_MAX / d) return INT64_MAX;
    n *= d;
  }
  return (int64_t)n;
}

size_t cml_shape_byte_size(const cml_shape_t* shape) {
  if (!shape) return 0;
  int64_t count = cml_shape_element_count(shape);
  uint64_t bits_per = (uint64_t)cml_dtype_bits(shape->dtype);
  if (count == INT64_MAX || (bits_per && (uint64_t)count > (UINT64_MAX - 7) / bits_per)) {
    return SIZE_MAX;  // only for shapes cml_shape_init rejects
  }
  uint64_t bytes = ((uint64_t)count * bits_per + 7) / 8;
  return bytes > SIZE_MAX ? SIZE_MAX : (size_t)bytes;
}

bool cml_shape_dims_equal(const cml_shape_t* a, const cml_shape_t* b) {
  if (!a || !b || a->rank != b->rank) return false;
  int32_t rank = a->rank < 0 ? 0 : a->rank > CML_MAX_RANK ? CML_MAX_RANK : a->rank;
  for (int32_t i = 0; i < rank; ++i)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

bool cml_shape_equal(const cml_shape_t* a, const cml_shape_t* b) {
  return a && b && a->dtype == b->dtype && cml_shape_dims_equal(a, b);
}

const char* cml_shape_format(const cml_shape_t* shape, char* buffer, size_t size) {
  if (!buffer || size == 0) return buffer;
  if (!shape) {
    snprintf(buffer, size, "(null shape)");
    return buffer;
  }
  size_t used = 0;
  int n = snprintf(buffer, size, "(%s)", cml_dtype_name(shape->dtype));
  used = n > 0 ? (size_t)n : 0;
  if (cml_shape_checked_rank(shape) < 0) {
    if (used < size) snprintf(buffer + used, size - used, "[invalid rank %d]", (int)shape->rank);
    return buffer;
  }
  if (shape->rank > 0 && used < size) {
    for (int32_t i = 0; i < shape->rank && used < size; ++i) {
      n = snprintf(buffer + used, size - used, "%s%lld", i == 0 ? "[" : ", ",
                   (long long)shape->dims[i]);
      if (n < 0) break;
      used += (size_t)n;
    }
    if (used < size) snprintf(buffer + used, size - used, "]");
  }
  return buffer;
}

static const char* cml_skip_spaces(const char* p) {
  while (*p && isspace((unsigned char)*p)) ++p;
  return p;
}

cml_status_t cml_shape_parse(const char* text, cml_shape_t* out_shape) {
  if (!out_shape) return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "shape: NULL output");
  memset(out_shape, 0, sizeof *out_shape);
  if (!text) return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "shape: NULL text");
  const char* p = cml_skip_spaces(text);
  char name[32];
  size_t len = 0;
  bool paren = (*p == '(');
  if (paren) p = cml_skip_spaces(p + 1);
  while (*p && (isalnum((unsigned char)*p) || *p == '_') && len + 1 < sizeof name)
    name[len++] = *p++;
  name[len] = '\0';
  cml_dtype_t dtype = cml_dtype_from_name(name);
  if (dtype == CML_DTYPE_INVALID)
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "shape: unknown dtype \"%s\" at offset 0 of \"%s\"", name, text);
  p = cml_skip_spaces(p);
  if (paren) {
    if (*p != ')')
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                             "shape: expected ')' at offset %d of \"%s\"", (int)(p - text), text);
    p = cml_skip_spaces(p + 1);
  }
  int64_t dims[CML_MAX_RANK];
  int32_t rank = 0;
  if (*p == '[') {
    p = cml_skip_spaces(p + 1);
    if (*p == ']') {
      p = cml_skip_spaces(p + 1);
    } else {
      for (;;) {
        if (rank >= CML_MAX_RANK)
          return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "shape: more than %d dims in \"%s\"",
                                 CML_MAX_RANK, text);
        if (!isdigit((unsigned char)*p))
          return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                                 "shape: expected a dimension at offset %d of \"%s\"",
                                 (int)(p - text), text);
        char* end = NULL;
        long long v = strtoll(p, &end, 10);
        dims[rank++] = v;
        p = cml_skip_spaces(end);
        if (*p == ',') {
          p = cml_skip_spaces(p + 1);
          continue;
        }
        if (*p == ']') {
          p = cml_skip_spaces(p + 1);
          break;
        }
        return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                               "shape: expected ',' or ']' at offset %d of \"%s\"", (int)(p - text),
                               text);
      }
    }
  }
  if (*p)
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "shape: unexpected text at offset %d of \"%s\"", (int)(p - text), text);
  return cml_shape_init(out_shape, dtype, rank, dims);
}
