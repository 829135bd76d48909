// SPDX-License-Identifier: Apache-2.0
// src/backends/xla/stablehlo/emit_literal.c: MLIR literals for StableHLO constants: decimal
// floats with a '.' (exact round trip), hex bit patterns for non-finite floats, true/false
// for Bool, (re, im) for complex, signed and unsigned integers, splats and nested lists, and the
// raw hex form for large arrays.
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/base_internal.h"
#include "backends/xla/stablehlo/emit_internal.h"

// Arrays up to this many elements are written as readable nested lists; larger ones as the
// raw little-endian hex string (Bool and packed dtypes always as lists).
#define CML_SHLO_LIST_LIMIT 4096

// Makes a printf'd finite float a valid MLIR float literal: it needs a '.' before any exponent
// ("1e+10" -> "1.0e+10", "-0" -> "-0.0").
static void cml_shlo_fix_float(char* buf, size_t size) {
  if (strchr(buf, '.')) return;
  char* e = strchr(buf, 'e');
  size_t len = strlen(buf);
  if (len + 3 > size) return;
  if (!e) {
    memcpy(buf + len, ".0", 3);
    return;
  }
  size_t at = (size_t)(e - buf);
  memmove(buf + at + 2, buf + at, len - at + 1);
  buf[at] = '.';
  buf[at + 1] = '0';
}

static void cml_shlo_format_f64(double v, int digits, uint64_t bits, int hex_digits, char* buf,
                                size_t size) {
  if (isfinite(v)) {
    cml__snprintf_c(buf, size, "%.*g", digits, v);
    cml_shlo_fix_float(buf, size);
  } else {
    snprintf(buf, size, "0x%0*" PRIX64, hex_digits, bits);
  }
}

static int64_t cml_shlo_packed_value(cml_dtype_t dtype, const uint8_t* p, int64_t index) {
  int bits = cml_dtype_bits(dtype);
  int64_t bit = index * bits;
  unsigned mask = (1u << bits) - 1u;
  unsigned raw = ((unsigned)p[bit / 8] >> (bit % 8)) & mask;
  if (cml_dtype_is_signed_int(dtype) && (raw & (1u << (bits - 1)))) {
    return (int64_t)raw - ((int64_t)1 << bits);
  }
  return (int64_t)raw;
}

void cml__shlo_format_element(cml_dtype_t dtype, const void* data, int64_t index, char* buf,
                              size_t size) {
  const uint8_t* p = data;
  switch (dtype) {
    case CML_DTYPE_BOOL:
      snprintf(buf, size, "%s", p[index] ? "true" : "false");
      return;
    case CML_DTYPE_I8:
      snprintf(buf, size, "%d", (int)((const int8_t*)data)[index]);
      return;
    case CML_DTYPE_I16: {
      int16_t v;
      memcpy(&v, p + index * 2, 2);
      snprintf(buf, size, "%d", (int)v);
      return;
    }
    case CML_DTYPE_I32: {
      int32_t v;
      memcpy(&v, p + index * 4, 4);
      snprintf(buf, size, "%" PRId32, v);
      return;
    }
    case CML_DTYPE_I64: {
      int64_t v;
      memcpy(&v, p + index * 8, 8);
      snprintf(buf, size, "%" PRId64, v);
      return;
    }
    case CML_DTYPE_U8:
      snprintf(buf, size, "%u", (unsigned)p[index]);
      return;
    case CML_DTYPE_U16: {
      uint16_t v;
      memcpy(&v, p + index * 2, 2);
      snprintf(buf, size, "%u", (unsigned)v);
      return;
    }
    case CML_DTYPE_U32: {
      uint32_t v;
      memcpy(&v, p + index * 4, 4);
      snprintf(buf, size, "%" PRIu32, v);
      return;
    }
    case CML_DTYPE_U64: {
      uint64_t v;
      memcpy(&v, p + index * 8, 8);
      snprintf(buf, size, "%" PRIu64, v);
      return;
    }
    case CML_DTYPE_I4:
    case CML_DTYPE_U4:
    case CML_DTYPE_I2:
    case CML_DTYPE_U2:
      snprintf(buf, size, "%" PRId64, cml_shlo_packed_value(dtype, p, index));
      return;
    case CML_DTYPE_F16:
    case CML_DTYPE_BF16: {
      uint16_t v;
      memcpy(&v, p + index * 2, 2);
      float f = dtype == CML_DTYPE_F16 ? cml_f16_to_f32(v) : cml_bf16_to_f32(v);
      cml_shlo_format_f64((double)f, 9, v, 4, buf, size);
      return;
    }
    case CML_DTYPE_F32: {
      float f;
      uint32_t bits;
      memcpy(&f, p + index * 4, 4);
      memcpy(&bits, p + index * 4, 4);
      cml_shlo_format_f64((double)f, 9, bits, 8, buf, size);
      return;
    }
    case CML_DTYPE_F64: {
      double d;
      uint64_t bits;
      memcpy(&d, p + index * 8, 8);
      memcpy(&bits, p + index * 8, 8);
      cml_shlo_format_f64(d, 17, bits, 16, buf, size);
      return;
    }
    case CML_DTYPE_C64:
    case CML_DTYPE_C128: {
      char re[48], im[48];
      cml_dtype_t part = cml_dtype_real_part(dtype);
      cml__shlo_format_element(part, data, 2 * index, re, sizeof re);
      cml__shlo_format_element(part, data, 2 * index + 1, im, sizeof im);
      snprintf(buf, size, "(%s, %s)", re, im);
      return;
    }
    case CML_DTYPE_F4E2M1FN:
      snprintf(buf, size, "0x%X", (unsigned)cml_shlo_packed_value(dtype, p, index));
      return;
    default: {
      // The 8-bit float kinds: their bit pattern.
      snprintf(buf, size, "0x%02X", (unsigned)p[index]);
      return;
    }
  }
}

void cml__shlo_format_scalar_kind(cml_dtype_t dtype, cml__shlo_scalar_kind_t kind, char* buf,
                                  size_t size) {
  if (dtype == CML_DTYPE_BOOL) {
    bool v = kind == CML__SHLO_ONE || kind == CML__SHLO_HIGHEST || kind == CML__SHLO_ALL_ONES;
    snprintf(buf, size, "%s", v ? "true" : "false");
    return;
  }
  if (cml_dtype_is_complex(dtype)) {
    snprintf(buf, size, "(%s, 0.0)", kind == CML__SHLO_ONE ? "1.0" : "0.0");
    return;
  }
  // Minifloats (storage dtypes: converted, moved, compared with zero) take float literals too:
  // "0" for a Float4E2M1FN zero was a parse error in XLA.
  if (cml_dtype_is_minifloat(dtype) && (kind == CML__SHLO_ZERO || kind == CML__SHLO_ONE)) {
    snprintf(buf, size, "%s", kind == CML__SHLO_ONE ? "1.0" : "0.0");
    return;
  }
  if (cml_dtype_is_float(dtype)) {
    switch (kind) {
      case CML__SHLO_ONE:
        snprintf(buf, size, "1.0");
        return;
      case CML__SHLO_LOWEST:
      case CML__SHLO_HIGHEST: {
        bool neg = kind == CML__SHLO_LOWEST;
        const char* text = "0.0";
        switch (dtype) {
          case CML_DTYPE_F16:
            text = neg ? "0xFC00" : "0x7C00";
            break;
          case CML_DTYPE_BF16:
            text = neg ? "0xFF80" : "0x7F80";
            break;
          case CML_DTYPE_F32:
            text = neg ? "0xFF800000" : "0x7F800000";
            break;
          default:
            text = neg ? "0xFFF0000000000000" : "0x7FF0000000000000";
            break;
        }
        snprintf(buf, size, "%s", text);
        return;
      }
      default:
        snprintf(buf, size, "0.0");
        return;
    }
  }
  int bits = cml_dtype_bits(dtype);
  bool is_signed = cml_dtype_is_signed_int(dtype);
  switch (kind) {
    case CML__SHLO_ONE:
      snprintf(buf, size, "1");
      return;
    case CML__SHLO_LOWEST:
      if (is_signed) {
        snprintf(buf, size, "%" PRId64, bits >= 64 ? INT64_MIN : -((int64_t)1 << (bits - 1)));
      } else {
        snprintf(buf, size, "0");
      }
      return;
    case CML__SHLO_HIGHEST:
      if (is_signed) {
        snprintf(buf, size, "%" PRId64, bits >= 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1);
      } else {
        snprintf(buf, size, "%" PRIu64, bits >= 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1);
      }
      return;
    case CML__SHLO_ALL_ONES:
      if (is_signed) {
        snprintf(buf, size, "-1");
      } else {
        snprintf(buf, size, "%" PRIu64, bits >= 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1);
      }
      return;
    default:
      snprintf(buf, size, "0");
      return;
  }
}

// Nested list "[[a, b], [c, d]]" of the elements from |*index| on.
static void cml_shlo_list(cml__shlo_ctx_t* c, const cml_shape_t* s, int32_t axis, const void* data,
                          int64_t* index) {
  if (axis == s->rank) {
    char buf[112];
    cml__shlo_format_element(s->dtype, data, (*index)++, buf, sizeof buf);
    cml__shlo_text_printf(&c->text, "%s", buf);
    return;
  }
  cml__shlo_text_printf(&c->text, "[");
  for (int64_t i = 0; i < s->dims[axis]; ++i) {
    if (i) cml__shlo_text_printf(&c->text, ", ");
    cml_shlo_list(c, s, axis + 1, data, index);
  }
  cml__shlo_text_printf(&c->text, "]");
}

static bool cml_shlo_is_splat(const cml_shape_t* s, const void* data, int64_t count) {
  if (cml_dtype_is_packed(s->dtype)) {
    int64_t first = cml_shlo_packed_value(s->dtype, data, 0);
    for (int64_t i = 1; i < count; ++i) {
      if (cml_shlo_packed_value(s->dtype, data, i) != first) return false;
    }
    return true;
  }
  size_t width = (size_t)cml_dtype_bits(s->dtype) / 8;
  const uint8_t* p = data;
  if (s->dtype == CML_DTYPE_BOOL) {
    for (int64_t i = 1; i < count; ++i) {
      if ((p[i] != 0) != (p[0] != 0)) return false;
    }
    return true;
  }
  for (int64_t i = 1; i < count; ++i) {
    if (memcmp(p, p + (size_t)i * width, width) != 0) return false;
  }
  return true;
}

void cml__shlo_dense_literal(cml__shlo_ctx_t* c, const cml_shape_t* shape, const void* data) {
  int64_t count = cml_shape_element_count(shape);
  cml__shlo_text_printf(&c->text, "value = dense<");
  if (cml_shlo_is_splat(shape, data, count)) {
    char buf[112];
    cml__shlo_format_element(shape->dtype, data, 0, buf, sizeof buf);
    cml__shlo_text_printf(&c->text, "%s", buf);
  } else if (count <= CML_SHLO_LIST_LIMIT || shape->dtype == CML_DTYPE_BOOL ||
             cml_dtype_is_packed(shape->dtype)) {
    int64_t index = 0;
    cml_shlo_list(c, shape, 0, data, &index);
  } else {
    // Raw form: the array's little-endian bytes.
    size_t bytes = cml_shape_byte_size(shape);
    const uint8_t* p = data;
    static const char kHex[] = "0123456789ABCDEF";
    cml__shlo_text_printf(&c->text, "\"0x");
    char chunk[513];
    size_t k = 0;
    for (size_t i = 0; i < bytes; ++i) {
      chunk[k++] = kHex[p[i] >> 4];
      chunk[k++] = kHex[p[i] & 15];
      if (k == 512) {
        chunk[k] = '\0';
        cml__shlo_text_printf(&c->text, "%s", chunk);
        k = 0;
      }
    }
    chunk[k] = '\0';
    cml__shlo_text_printf(&c->text, "%s\"", chunk);
  }
  cml__shlo_text_printf(&c->text, "> : ");
  cml__shlo_type(c, shape);
}
