// SPDX-License-Identifier: Apache-2.0
// kernels/generic/movement_internal.h: helpers shared by the movement, index and window kernel
// groups of the C backend (strided copies, fills, index reads). Private to those files.
//
// A strided copy moves a box of |dims| elements from |in| to |out|, each side with its own
// strides in elements (an input stride may be 0, to broadcast, or negative, to reverse).
// Every function here is pure and reentrant; only `cmlc__mv_copy` and `cmlc__mv_fill` use the
// pool, and only when the work is large enough.
#ifndef CML_BACKENDS_C_KERNELS_GENERIC_MOVEMENT_INTERNAL_H_
#define CML_BACKENDS_C_KERNELS_GENERIC_MOVEMENT_INTERNAL_H_

#include <string.h>

#include "backends/c/cmlc.h"
#include "backends/c/kernels/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cmlc__mv_elem16_t {
  uint64_t lo, hi;
} cmlc__mv_elem16_t;

// Contiguous output rows read with stride 2 or 3 (strided slices: every other column) or -1
// (Reverse of the last axis) get loops with constant strides, which the compiler turns into
// vector shuffles.
#define CMLC_MV_ROW_LOOP(T)                                    \
  do {                                                         \
    T* o_ = (T*)out;                                           \
    const T* i_ = (const T*)in;                                \
    if (is == 0) {                                             \
      T v_ = i_[0];                                            \
      for (int64_t k = 0; k < n; ++k) o_[k * os] = v_;         \
    } else if (os == 1 && is == 2) {                           \
      for (int64_t k = 0; k < n; ++k) o_[k] = i_[2 * k];       \
    } else if (os == 1 && is == 3) {                           \
      for (int64_t k = 0; k < n; ++k) o_[k] = i_[3 * k];       \
    } else if (os == 1 && is == -1) {                          \
      for (int64_t k = 0; k < n; ++k) o_[k] = i_[-k];          \
    } else {                                                   \
      for (int64_t k = 0; k < n; ++k) o_[k * os] = i_[k * is]; \
    }                                                          \
  } while (0)

// Copies one row of |n| elements with strides |os| / |is| (in elements; |is| may be 0, to
// broadcast, or negative). Inline: the fused loops' gathers (loop_fusion.c) call it per run
// with |os| 1, and the constant-stride loops specialize there.
static inline void cmlc__mv_copy_row(char* out, const char* in, int64_t n, int64_t os, int64_t is,
                                     size_t es) {
  if (os == 1 && is == 1) {
    memcpy(out, in, (size_t)n * es);
    return;
  }
  switch (es) {
    case 1:
      CMLC_MV_ROW_LOOP(uint8_t);
      break;
    case 2:
      CMLC_MV_ROW_LOOP(uint16_t);
      break;
    case 4:
      CMLC_MV_ROW_LOOP(uint32_t);
      break;
    case 8:
      CMLC_MV_ROW_LOOP(uint64_t);
      break;
    case 16:
      CMLC_MV_ROW_LOOP(cmlc__mv_elem16_t);
      break;
    default:
      for (int64_t k = 0; k < n; ++k)
        memcpy(out + k * os * (int64_t)es, in + k * is * (int64_t)es, es);
      break;
  }
}

// Describes a strided copy. Strides are in elements; |elem_size| is 1, 2, 4, 8 or 16.
typedef struct cmlc__mv_copy_t {
  int32_t rank;
  int64_t dims[CML_MAX_RANK];
  int64_t out_strides[CML_MAX_RANK];
  int64_t in_strides[CML_MAX_RANK];
  size_t elem_size;
} cmlc__mv_copy_t;

// Drops size-1 axes and merges axes that are contiguous on both sides. A copy with a
// zero-size axis becomes one with dims[0] == 0. Rank 0 becomes rank 1 of one element.
void cmlc__mv_copy_simplify(cmlc__mv_copy_t* copy);

// Total number of elements the copy moves.
int64_t cmlc__mv_copy_count(const cmlc__mv_copy_t* copy);

// Copies on the calling thread (for use inside another kernel's parallel task). |out| and
// |in| point at the box's first element on each side. Simplifies a local copy first.
void cmlc__mv_copy_serial(const cmlc__mv_copy_t* copy, void* out, const void* in);

// Copies, splitting rows over |pool| (may be NULL) when the box is large.
void cmlc__mv_copy(cmlc_pool_t* pool, const cmlc__mv_copy_t* copy, void* out, const void* in);

// Writes |count| copies of the |elem_size|-byte |value| to |out|.
void cmlc__mv_fill(cmlc_pool_t* pool, void* out, int64_t count, const void* value,
                   size_t elem_size);

// Copies |size| bytes, splitting large copies over |pool|. Does nothing when out == in.
void cmlc__mv_memcpy(cmlc_pool_t* pool, void* out, const void* in, size_t size);

// Reads element |i| of an integer array of |dtype| as int64. Unsigned values above INT64_MAX
// read as INT64_MAX (callers clamp anyway). Returns 0 for a non-integer dtype.
int64_t cmlc__mv_read_index(const void* data, cml_dtype_t dtype, int64_t i);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_BACKENDS_C_KERNELS_GENERIC_MOVEMENT_INTERNAL_H_
