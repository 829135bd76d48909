// SPDX-License-Identifier: Apache-2.0
// src/backends/c/kernels/common.h: the layer every kernel group shares: the dtype traits table
// (element size and kind per dtype) and row-major strides.
//
// Thread-safety: the table is constant and every function here is pure and thread-safe.
#ifndef CML_BACKENDS_C_KERNELS_COMMON_H_
#define CML_BACKENDS_C_KERNELS_COMMON_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cml/shape.h"

#ifdef __cplusplus
extern "C" {
#endif

//===--- dtype traits ---===//

// What the kernels need to know of one dtype, in one table indexed by cml_dtype_t (the place for
// further per-dtype facts, instead of a switch per kernel file).
typedef struct cmlc_dtype_traits_t {
  uint8_t size;  // bytes per element; 0: not byte-addressable (INVALID, TOKEN, packed sub-byte)
} cmlc_dtype_traits_t;

extern const cmlc_dtype_traits_t cmlc_dtype_traits[CML_DTYPE_COUNT];

// The traits of |dtype|; an all-zero entry for out-of-range values.
static inline const cmlc_dtype_traits_t* cmlc_dtype_traits_of(cml_dtype_t dtype) {
  return &cmlc_dtype_traits[(unsigned)dtype < (unsigned)CML_DTYPE_COUNT ? dtype
                                                                        : CML_DTYPE_INVALID];
}

// Bytes per element of |dtype|: 0 for invalid, TOKEN, packed (sub-byte) and out-of-range values.
static inline size_t cmlc_dtype_size(cml_dtype_t dtype) {
  return cmlc_dtype_traits_of(dtype)->size;
}

//===--- shapes ---===//

// Row-major element strides of a shape with |rank| dims |dims| (the last axis has stride 1).
static inline void cmlc_row_major_strides(int32_t rank, const int64_t* dims, int64_t* out_strides) {
  int64_t s = 1;
  for (int32_t i = rank - 1; i >= 0; --i) {
    out_strides[i] = s;
    s *= dims[i];
  }
}

// Row-major element strides of |shape| (|out_strides| holds shape->rank values).
static inline void cmlc_shape_strides(const cml_shape_t* shape, int64_t* out_strides) {
  cmlc_row_major_strides(shape->rank, shape->dims, out_strides);
}

//===--- inline 16-bit float conversions (the values of base/half.c's, without a call) ---===//

// f16 bits -> f32: exact (subnormals scaled, infinities and NaN payloads kept as
// cml_f16_to_f32 keeps them).
static inline float cmlc_f16_to_f32_inline(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu;
  uint32_t bits;
  float f;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (man << 13);
  } else if (exp == 0) {
    f = (float)man * 0x1p-24f;  // exact: at most 10 significant bits
    return sign ? -f : f;
  } else {
    bits = sign | ((exp + 112u) << 23) | (man << 13);
  }
  memcpy(&f, &bits, sizeof f);
  return f;
}

// f32 -> f16 bits, rounded to nearest even once, as cml_f32_to_f16: NaN -> sign | 0x7E00,
// |x| >= 65520 -> infinity, subnormal results rounded on the 2^-24 grid.
static inline uint16_t cmlc_f32_to_f16_inline(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return (uint16_t)(sign | 0x7E00u);
  if (a >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u);  // 65520 and up, infinity included
  if (a < 0x38800000u) {
    // Below 2^-14: the result is round(|x| * 2^24). Adding 0.5 (whose last mantissa bit is
    // worth 2^-24) rounds exactly that way; the low bits of the sum are the result.
    float f;
    memcpy(&f, &a, sizeof f);
    f += 0.5f;
    uint32_t r;
    memcpy(&r, &f, sizeof r);
    return (uint16_t)(sign | (uint16_t)(r - 0x3F000000u));
  }
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped bits to nearest even.
  const uint32_t odd = (a >> 13) & 1u;
  return (uint16_t)(sign | (uint16_t)((a - 0x38000000u + 0xFFFu + odd) >> 13));
}

// f32 -> bf16 bits, as cml_f32_to_bf16: rounded to nearest even, NaN quieted (payload kept).
// Branch-free, so that loops over it (cmlc_f32_to_bf16_row) vectorize.
static inline uint16_t cmlc_f32_to_bf16_inline(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  return (uint16_t)((u & 0x7FFFFFFFu) > 0x7F800000u ? (u >> 16) | 0x0040u : rounded);
}

// dst[j] = cmlc_f32_to_bf16_inline(src[j]) for j < n.
static inline void cmlc_f32_to_bf16_row(uint16_t* dst, const float* src, int64_t n) {
  for (int64_t j = 0; j < n; ++j) dst[j] = cmlc_f32_to_bf16_inline(src[j]);
}

// bf16 bits -> f32 (exact), as cml_bf16_to_f32.
static inline float cmlc_bf16_to_f32_inline(uint16_t h) {
  const uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

#ifdef __cplusplus
}
#endif

#endif  // CML_BACKENDS_C_KERNELS_COMMON_H_
