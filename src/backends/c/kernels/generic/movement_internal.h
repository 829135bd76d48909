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

#include "backends/c/cmlc.h"
#include "backends/c/kernels/common.h"

#ifdef __cplusplus
extern "C" {
#endif

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
