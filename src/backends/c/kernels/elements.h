// SPDX-License-Identifier: Apache-2.0
// kernels/elements.h: one element of any storage dtype read or written as a double, a float,
// integer bits or a complex pair, with ConvertDType's rounding and saturation rules. For the
// kernels that compute in a wider domain one element at a time (linalg, special, fused, FFT);
// the elementwise group converts whole blocks instead (kernels/generic/elementwise_convert.c).
//
// Thread-safety: every function here is reentrant and keeps no state.
#ifndef CML_BACKENDS_C_KERNELS_ELEMENTS_H_
#define CML_BACKENDS_C_KERNELS_ELEMENTS_H_

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "backends/c/cmlc.h"
#include "backends/c/kernels/common.h"

#ifdef __cplusplus
extern "C" {
#endif

//===--- loading elements ---===//

// Element |i| of |p| (dtype |dtype|) as a double (complex: real part; ints may round).
static inline double cmlc_load_f64(const void* p, int64_t i, cml_dtype_t dtype) {
  switch (dtype) {
    case CML_DTYPE_I8:
      return ((const int8_t*)p)[i];
    case CML_DTYPE_I16:
      return ((const int16_t*)p)[i];
    case CML_DTYPE_I32:
      return ((const int32_t*)p)[i];
    case CML_DTYPE_I64:
      return (double)((const int64_t*)p)[i];
    case CML_DTYPE_U8:
      return ((const uint8_t*)p)[i];
    case CML_DTYPE_U16:
      return ((const uint16_t*)p)[i];
    case CML_DTYPE_U32:
      return ((const uint32_t*)p)[i];
    case CML_DTYPE_U64:
      return (double)((const uint64_t*)p)[i];
    case CML_DTYPE_F16:
      return cml__f16_to_f32(((const uint16_t*)p)[i]);
    case CML_DTYPE_BF16:
      return cml__bf16_to_f32(((const uint16_t*)p)[i]);
    case CML_DTYPE_F32:
      return ((const float*)p)[i];
    case CML_DTYPE_F64:
      return ((const double*)p)[i];
    case CML_DTYPE_C64:
      return ((const float*)p)[2 * i];
    case CML_DTYPE_C128:
      return ((const double*)p)[2 * i];
    case CML_DTYPE_BOOL:
      return ((const uint8_t*)p)[i] ? 1.0 : 0.0;
    default:
      return 0.0;
  }
}

// Element |i| as a float (exact for f16, bf16, f32; the f32 domain's loader).
static inline float cmlc_load_f32(const void* p, int64_t i, cml_dtype_t dtype) {
  switch (dtype) {
    case CML_DTYPE_F32:
      return ((const float*)p)[i];
    case CML_DTYPE_F16:
      return cml__f16_to_f32(((const uint16_t*)p)[i]);
    case CML_DTYPE_BF16:
      return cml__bf16_to_f32(((const uint16_t*)p)[i]);
    default:
      return (float)cmlc_load_f64(p, i, dtype);
  }
}

// Imaginary part of element |i| (0 for real dtypes).
static inline double cmlc_load_imag(const void* p, int64_t i, cml_dtype_t dtype) {
  if (dtype == CML_DTYPE_C64) return ((const float*)p)[2 * i + 1];
  if (dtype == CML_DTYPE_C128) return ((const double*)p)[2 * i + 1];
  return 0.0;
}

// Float -> integer conversion as XLA's ConvertDType does it: truncate toward zero, saturate
// at the target's range, NaN -> 0. Returns the value's bits in 64 bits (two's complement).
static inline uint64_t cmlc_f64_to_int_bits(double v, cml_dtype_t dtype) {
  const int bits = cml_dtype_bits(dtype);
  if (cml_dtype_is_signed_int(dtype)) {
    const int64_t hi = bits == 64 ? INT64_MAX : (int64_t)(((uint64_t)1 << (bits - 1)) - 1);
    return (uint64_t)cmlc_f64_to_signed(v, -hi - 1, hi);
  }
  return cmlc_f64_to_unsigned(v, bits == 64 ? UINT64_MAX : (((uint64_t)1 << bits) - 1));
}

// Element |i| as integer bits (sign-extended for signed dtypes; floats converted as above to
// |int_dtype|, the integer dtype the value is headed for).
static inline uint64_t cmlc_load_int_bits(const void* p, int64_t i, cml_dtype_t dtype,
                                          cml_dtype_t int_dtype) {
  switch (dtype) {
    case CML_DTYPE_I8:
      return (uint64_t)(int64_t)((const int8_t*)p)[i];
    case CML_DTYPE_I16:
      return (uint64_t)(int64_t)((const int16_t*)p)[i];
    case CML_DTYPE_I32:
      return (uint64_t)(int64_t)((const int32_t*)p)[i];
    case CML_DTYPE_I64:
      return (uint64_t)((const int64_t*)p)[i];
    case CML_DTYPE_U8:
      return ((const uint8_t*)p)[i];
    case CML_DTYPE_U16:
      return ((const uint16_t*)p)[i];
    case CML_DTYPE_U32:
      return ((const uint32_t*)p)[i];
    case CML_DTYPE_U64:
      return ((const uint64_t*)p)[i];
    case CML_DTYPE_BOOL:
      return ((const uint8_t*)p)[i] ? 1 : 0;
    default:
      return cmlc_f64_to_int_bits(cmlc_load_f64(p, i, dtype), int_dtype);
  }
}

// Sign- or zero-extends the low bits of |bits| as an integer of |dtype|.
static inline uint64_t cmlc_int_extend(uint64_t bits, cml_dtype_t dtype) {
  int w = cml_dtype_bits(dtype);
  if (w >= 64) return bits;
  uint64_t mask = ((uint64_t)1 << w) - 1;
  bits &= mask;
  if (cml_dtype_is_signed_int(dtype) && (bits >> (w - 1)) & 1) bits |= ~mask;
  return bits;
}

//===--- storing elements ---===//

// Stores a real value |v| (computed in float or double) into element |i| of |dtype|:
// f16/bf16 round once from |v|, ints convert as ConvertDType, complex gets imag 0.
static inline void cmlc_store_f64(void* p, int64_t i, cml_dtype_t dtype, double v) {
  switch (dtype) {
    case CML_DTYPE_F32:
      ((float*)p)[i] = (float)v;
      return;
    case CML_DTYPE_F64:
      ((double*)p)[i] = v;
      return;
    case CML_DTYPE_F16:
      ((uint16_t*)p)[i] = cml_f64_to_f16(v);
      return;
    case CML_DTYPE_BF16:
      ((uint16_t*)p)[i] = cml_f64_to_bf16(v);
      return;
    case CML_DTYPE_C64:
      ((float*)p)[2 * i] = (float)v;
      ((float*)p)[2 * i + 1] = 0;
      return;
    case CML_DTYPE_C128:
      ((double*)p)[2 * i] = v;
      ((double*)p)[2 * i + 1] = 0;
      return;
    case CML_DTYPE_BOOL:
      ((uint8_t*)p)[i] = v != 0;
      return;
    default:
      break;
  }
  uint64_t b = cmlc_f64_to_int_bits(v, dtype);
  switch (cml_dtype_bits(dtype)) {
    case 8:
      ((uint8_t*)p)[i] = (uint8_t)b;
      return;
    case 16:
      ((uint16_t*)p)[i] = (uint16_t)b;
      return;
    case 32:
      ((uint32_t*)p)[i] = (uint32_t)b;
      return;
    case 64:
      ((uint64_t*)p)[i] = b;
      return;
    default:
      return;
  }
}

// Stores an integer (|bits| holding a value of integer dtype |from|, already extended) into
// element |i| of |dtype|: ints wrap, floats round to nearest from the exact value.
static inline void cmlc_store_int(void* p, int64_t i, cml_dtype_t dtype, uint64_t bits,
                                  cml_dtype_t from) {
  switch (cml_dtype_is_int(dtype) ? cml_dtype_bits(dtype) : 0) {
    case 8:
      ((uint8_t*)p)[i] = (uint8_t)bits;
      return;
    case 16:
      ((uint16_t*)p)[i] = (uint16_t)bits;
      return;
    case 32:
      ((uint32_t*)p)[i] = (uint32_t)bits;
      return;
    case 64:
      ((uint64_t*)p)[i] = bits;
      return;
    default:
      break;
  }
  bool is_signed = cml_dtype_is_signed_int(from);
  if (dtype == CML_DTYPE_F32) {
    ((float*)p)[i] = is_signed ? (float)(int64_t)bits : (float)bits;
  } else if (dtype == CML_DTYPE_BOOL) {
    ((uint8_t*)p)[i] = bits != 0;
  } else {
    cmlc_store_f64(p, i, dtype, is_signed ? (double)(int64_t)bits : (double)bits);
  }
}

// Stores a complex value (real dtypes keep the real part).
static inline void cmlc_store_c(void* p, int64_t i, cml_dtype_t dtype, double re, double im) {
  if (dtype == CML_DTYPE_C64) {
    ((float*)p)[2 * i] = (float)re;
    ((float*)p)[2 * i + 1] = (float)im;
  } else if (dtype == CML_DTYPE_C128) {
    ((double*)p)[2 * i] = re;
    ((double*)p)[2 * i + 1] = im;
  } else {
    cmlc_store_f64(p, i, dtype, re);
  }
}

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_BACKENDS_C_KERNELS_ELEMENTS_H_
