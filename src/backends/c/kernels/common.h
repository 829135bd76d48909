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

#include "base/half_inline.h"
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

// dst[j] = cml__f32_to_bf16(src[j]) for j < n (base/half_inline.h's conversions, inline).
static inline void cmlc_f32_to_bf16_row(uint16_t* dst, const float* src, int64_t n) {
  for (int64_t j = 0; j < n; ++j) dst[j] = cml__f32_to_bf16(src[j]);
}

#ifdef __cplusplus
}
#endif

#endif  // CML_BACKENDS_C_KERNELS_COMMON_H_
