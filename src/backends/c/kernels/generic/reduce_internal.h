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

// Short runs of an f32 reduction whose innermost axis is reduced: out[q] = the |len| floats
// from x + q * len combined in index order from the identity (the scalar kernels' order and
// combine, so the same bits), for q < rows; 1 <= len <= CMLC__RD_RUN_MAX.
typedef void (*cmlc__rd_runs_f32_fn)(const float* x, int64_t len, int64_t rows, float* out);
enum { CMLC__RD_RUN_MAX = 16 };
// The short-run kernel for |op| (ReduceSum, ReduceMax, ReduceMin) with the ISA of |options|, or
// NULL (reference mode, an ISA without one, another op).
cmlc__rd_runs_f32_fn cmlc__rd_runs_f32(const cmlc_options_t* options, cml_op_t op);

// Reductions of an input that is computed on the fly, never stored (the c backend's reduce
// fusion, loop_fusion.c): |produce| writes input elements [start, start + len) (row-major
// positions) into |dst|. The reduction reads the same values in the same order as from a
// stored input, so the result has the same bits.
typedef void (*cmlc__rd_produce_fn)(void* ctx, int64_t start, int64_t len, void* dst);
// The longest run a produced reduction asks for at once: f32 elements (f64: half as many), on
// the task's stack.
enum { CMLC__RD_PRODUCE_MAX_RUN = 8192 };
// The SIMD row reducers (kernels/x86_64/elementwise_x86_64_body.h) combine runs of more than
// CMLC__RD_SIMD_SPLIT elements as two halves, the first (n / 2) rounded down to a multiple of
// CMLC__RD_SIMD_LANES: a produced input is produced half by half down to runs that short,
// each reduced as a stored run would be. (Each lane sums a leaf's 64 elements in order: leaves of
// 8192, 256 per lane, put a sum of 300,001 equal values 2.25e-6 x sum|x| off.)
enum { CMLC__RD_SIMD_LANES = 32, CMLC__RD_SIMD_SPLIT = 2048 };
// Whether |node| (ReduceSum / Max / Min) can run on a produced input with |options|: f32 to
// f32 with the SIMD row reduction (runs of at most CMLC__RD_PRODUCE_MAX_RUN, or a blocked full
// reduction) or the SIMD column step; f64 to f64 with the innermost axis reduced (the scalar
// kernels' pairwise order, on any ISA).
bool cmlc__rd_produced_ok(const cml_module_t* module, const cml_ir_node_t* node,
                          const cmlc_options_t* options);
// Scratch bytes the produced reduction needs (as the kernel's own).
size_t cmlc__rd_produced_scratch(const cml_module_t* module, const cml_ir_node_t* node,
                                 const cmlc_options_t* options);
// Runs |node| (cmlc__rd_produced_ok) into |out|, its input from |produce|.
CML_MUST_USE cml_status_t cmlc__rd_run_produced(const cml_module_t* module,
                                                const cml_ir_node_t* node,
                                                const cmlc_options_t* options, cmlc_pool_t* pool,
                                                void* scratch, size_t scratch_size,
                                                cmlc__rd_produce_fn produce, void* produce_ctx,
                                                void* out);

#if defined(CMLC_HAVE_X86_64)
void cmlc__rd_cols_sum_f32_avx512(float* acc, const float* x, int64_t n);
void cmlc__rd_cols_max_f32_avx512(float* acc, const float* x, int64_t n);
void cmlc__rd_cols_min_f32_avx512(float* acc, const float* x, int64_t n);
void cmlc__rd_cols_sum_f32_avx2(float* acc, const float* x, int64_t n);
void cmlc__rd_cols_max_f32_avx2(float* acc, const float* x, int64_t n);
void cmlc__rd_cols_min_f32_avx2(float* acc, const float* x, int64_t n);
void cmlc__rd_runs_sum_f32_avx512(const float* x, int64_t len, int64_t rows, float* out);
void cmlc__rd_runs_max_f32_avx512(const float* x, int64_t len, int64_t rows, float* out);
void cmlc__rd_runs_min_f32_avx512(const float* x, int64_t len, int64_t rows, float* out);
#endif

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_BACKENDS_C_KERNELS_GENERIC_REDUCE_INTERNAL_H_
