// SPDX-License-Identifier: Apache-2.0
// kernels/generic/reduce_internal.h: internals of the "reduce" kernel group shared between
// kernels/generic/reduce.c and the SIMD column kernels in kernels/x86_64/reduce_x86_64.c.
//
// Thread-safety: every function here is reentrant and keeps no state.
#ifndef CML_BACKENDS_C_KERNELS_GENERIC_REDUCE_INTERNAL_H_
#define CML_BACKENDS_C_KERNELS_GENERIC_REDUCE_INTERNAL_H_

#include <stdint.h>

#include "backends/c/cmlc.h"

#ifdef __cplusplus
extern "C" {
#endif

// A column step of an f32 reduction whose innermost axis is kept: acc[j] = comb(acc[j], x[j])
// for j < n, where comb is +, or the NaN-propagating IEEE maximum / minimum (-0 < +0) of the
// scalar kernels. Each lane is independent and does exactly one scalar operation, so the
// SIMD kernels give the same bits as the scalar loop (NaN payloads aside).
typedef void (*cmlc__rd_cols_f32_fn)(float* acc, const float* x, int64_t n);

// The column step for |op| (ReduceSum, ReduceMax, ReduceMin) with the ISA of |options|, or
// NULL when there is no SIMD one (reference mode, the scalar ISA, another op).
cmlc__rd_cols_f32_fn cmlc__rd_cols_f32(const cmlc_options_t* options, cml_op_t op);

#if defined(CMLC_HAVE_X86_64)
void cmlc__rd_cols_sum_f32_avx512(float* acc, const float* x, int64_t n);
void cmlc__rd_cols_max_f32_avx512(float* acc, const float* x, int64_t n);
void cmlc__rd_cols_min_f32_avx512(float* acc, const float* x, int64_t n);
void cmlc__rd_cols_sum_f32_avx2(float* acc, const float* x, int64_t n);
void cmlc__rd_cols_max_f32_avx2(float* acc, const float* x, int64_t n);
void cmlc__rd_cols_min_f32_avx2(float* acc, const float* x, int64_t n);
#endif

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_BACKENDS_C_KERNELS_GENERIC_REDUCE_INTERNAL_H_
