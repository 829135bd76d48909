// SPDX-License-Identifier: Apache-2.0
// src/base/dtype.c: dtype names, sizes and categories.
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "cml/shape.h"

typedef struct cml_dtype_info_t {
  const char* name;        // the seed's name
  const char* pjrt;        // PJRT alias
  const char* short_name;  // lower-case short form
  const char* stablehlo;   // StableHLO element type, NULL when none
  int bits;
} cml_dtype_info_t;

static const cml_dtype_info_t cml_dtype_infos[CML_DTYPE_COUNT] = {
    [CML_DTYPE_INVALID] = {"InvalidDType", "INVALID", "invalid", NULL, 0},
    [CML_DTYPE_BOOL] = {"Bool", "PRED", "bool", "i1", 8},
    [CML_DTYPE_I8] = {"Int8", "S8", "i8", "i8", 8},
    [CML_DTYPE_I16] = {"Int16", "S16", "i16", "i16", 16},
    [CML_DTYPE_I32] = {"Int32", "S32", "i32", "i32", 32},
    [CML_DTYPE_I64] = {"Int64", "S64", "i64", "i64", 64},
    [CML_DTYPE_U8] = {"Uint8", "U8", "u8", "ui8", 8},
    [CML_DTYPE_U16] = {"Uint16", "U16", "u16", "ui16", 16},
    [CML_DTYPE_U32] = {"Uint32", "U32", "u32", "ui32", 32},
    [CML_DTYPE_U64] = {"Uint64", "U64", "u64", "ui64", 64},
    [CML_DTYPE_F16] = {"Float16", "F16", "f16", "f16", 16},
    [CML_DTYPE_F32] = {"Float32", "F32", "f32", "f32", 32},
    [CML_DTYPE_F64] = {"Float64", "F64", "f64", "f64", 64},
    [CML_DTYPE_BF16] = {"BFloat16", "BF16", "bf16", "bf16", 16},
    [CML_DTYPE_C64] = {"Complex64", "C64", "c64", "complex<f32>", 64},
    [CML_DTYPE_C128] = {"Complex128", "C128", "c128", "complex<f64>", 128},
    [CML_DTYPE_F8E5M2] = {"F8E5M2", "F8E5M2", "f8e5m2", "f8E5M2", 8},
    [CML_DTYPE_F8E4M3FN] = {"F8E4M3FN", "F8E4M3FN", "f8e4m3fn", "f8E4M3FN", 8},
    [CML_DTYPE_F8E4M3B11FNUZ] = {"F8E4M3B11FNUZ", "F8E4M3B11FNUZ", "f8e4m3b11fnuz", "f8E4M3B11FNUZ",
                                 8},
    [CML_DTYPE_F8E5M2FNUZ] = {"F8E5M2FNUZ", "F8E5M2FNUZ", "f8e5m2fnuz", "f8E5M2FNUZ", 8},
    [CML_DTYPE_F8E4M3FNUZ] = {"F8E4M3FNUZ", "F8E4M3FNUZ", "f8e4m3fnuz", "f8E4M3FNUZ", 8},
    [CML_DTYPE_I4] = {"Int4", "S4", "i4", "i4", 4},
    [CML_DTYPE_U4] = {"Uint4", "U4", "u4", "ui4", 4},
    [CML_DTYPE_TOKEN] = {"TOKEN", "TOKEN", "token", NULL, 0},
    [CML_DTYPE_I2] = {"Int2", "S2", "i2", "i2", 2},
    [CML_DTYPE_U2] = {"Uint2", "U2", "u2", "ui2", 2},
    [CML_DTYPE_F8E4M3] = {"F8E4M3", "F8E4M3", "f8e4m3", "f8E4M3", 8},
    [CML_DTYPE_F8E3M4] = {"F8E3M4", "F8E3M4", "f8e3m4", "f8E3M4", 8},
    [CML_DTYPE_F8E8M0FNU] = {"F8E8M0FNU", "F8E8M0FNU", "f8e8m0fnu", "f8E8M0FNU", 8},
    [CML_DTYPE_F4E2M1FN] = {"F4E2M1FN", "F4E2M1FN", "f4e2m1fn", "f4E2M1FN", 4},
    [CML_DTYPE_I1] = {"Int1", "S1", "i1", NULL, 1},
    [CML_DTYPE_U1] = {"Uint1", "U1", "u1", NULL, 1},
};

static bool cml_dtype_in_range(cml_dtype_t d) { return (int)d > 0 && d < CML_DTYPE_COUNT; }

const char* cml_dtype_name(cml_dtype_t dtype) {
  if (!cml_dtype_in_range(dtype)) return "unknown";
  return cml_dtype_infos[dtype].name;
}

cml_dtype_t cml_dtype_from_name(const char* name) {
  if (!name || !*name) return CML_DTYPE_INVALID;
  for (int d = 1; d < CML_DTYPE_COUNT; ++d) {
    const cml_dtype_info_t* i = &cml_dtype_infos[d];
    if (strcasecmp(name, i->name) == 0 || strcasecmp(name, i->pjrt) == 0 ||
        strcasecmp(name, i->short_name) == 0)
      return (cml_dtype_t)d;
  }
  static const struct {
    const char* alias;
    cml_dtype_t dtype;
  } extra[] = {
      {"I8", CML_DTYPE_I8},         {"I16", CML_DTYPE_I16},         {"I32", CML_DTYPE_I32},
      {"I64", CML_DTYPE_I64},       {"UI8", CML_DTYPE_U8},          {"UI16", CML_DTYPE_U16},
      {"UI32", CML_DTYPE_U32},      {"UI64", CML_DTYPE_U64},        {"pred", CML_DTYPE_BOOL},
      {"half", CML_DTYPE_F16},      {"float", CML_DTYPE_F32},       {"double", CML_DTYPE_F64},
      {"complex64", CML_DTYPE_C64}, {"complex128", CML_DTYPE_C128}, {"bfloat16", CML_DTYPE_BF16},
      {"uint8", CML_DTYPE_U8},      {"uint16", CML_DTYPE_U16},      {"uint32", CML_DTYPE_U32},
      {"uint64", CML_DTYPE_U64},    {"int4", CML_DTYPE_I4},         {"uint4", CML_DTYPE_U4},
      {"int2", CML_DTYPE_I2},       {"uint2", CML_DTYPE_U2}};
  for (size_t k = 0; k < sizeof extra / sizeof extra[0]; ++k)
    if (strcasecmp(name, extra[k].alias) == 0) return extra[k].dtype;
  return CML_DTYPE_INVALID;
}

int cml_dtype_bits(cml_dtype_t dtype) {
  if (!cml_dtype_in_range(dtype)) return 0;
  return cml_dtype_infos[dtype].bits;
}

bool cml_dtype_is_valid(cml_dtype_t dtype) {
  return cml_dtype_in_range(dtype) && dtype != CML_DTYPE_TOKEN;
}

bool cml_dtype_is_float(cml_dtype_t d) {
  return d == CML_DTYPE_F16 || d == CML_DTYPE_BF16 || d == CML_DTYPE_F32 || d == CML_DTYPE_F64;
}

bool cml_dtype_is_complex(cml_dtype_t d) { return d == CML_DTYPE_C64 || d == CML_DTYPE_C128; }

bool cml_dtype_is_signed_int(cml_dtype_t d) {
  return (d >= CML_DTYPE_I8 && d <= CML_DTYPE_I64) || d == CML_DTYPE_I4 || d == CML_DTYPE_I2 ||
         d == CML_DTYPE_I1;
}

bool cml_dtype_is_unsigned_int(cml_dtype_t d) {
  return (d >= CML_DTYPE_U8 && d <= CML_DTYPE_U64) || d == CML_DTYPE_U4 || d == CML_DTYPE_U2 ||
         d == CML_DTYPE_U1;
}

bool cml_dtype_is_int(cml_dtype_t d) {
  return cml_dtype_is_signed_int(d) || cml_dtype_is_unsigned_int(d);
}

bool cml_dtype_is_packed(cml_dtype_t d) {
  return cml_dtype_is_valid(d) && cml_dtype_bits(d) > 0 && cml_dtype_bits(d) < 8;
}

bool cml_dtype_is_supported(cml_dtype_t d) {
  return d == CML_DTYPE_BOOL || cml_dtype_is_int(d) || cml_dtype_is_float(d) ||
         cml_dtype_is_complex(d) || cml_dtype_is_minifloat(d);
}

bool cml_dtype_is_storage_only(cml_dtype_t d) {
  return cml_dtype_is_supported(d) && (cml_dtype_is_packed(d) || cml_dtype_is_minifloat(d));
}

cml_dtype_t cml_dtype_real_part(cml_dtype_t d) {
  if (d == CML_DTYPE_C64) return CML_DTYPE_F32;
  if (d == CML_DTYPE_C128) return CML_DTYPE_F64;
  return d;
}

const char* cml_dtype_stablehlo_name(cml_dtype_t dtype) {
  if (!cml_dtype_in_range(dtype)) return NULL;
  return cml_dtype_infos[dtype].stablehlo;
}
