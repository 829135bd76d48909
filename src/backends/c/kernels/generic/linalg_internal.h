// SPDX-License-Identifier: Apache-2.0
// kernels/generic/linalg_internal.h: internals shared by the "linalg" and "special" kernel
// files: computation domains (element loads and stores live in kernels/elements.h), and the
// packed f32 GEMM (gemm.c, with SIMD micro-kernels in kernels/x86_64/gemm_*.c).
//
// Thread-safety: every function here is reentrant and keeps no state.
#ifndef CML_BACKENDS_C_KERNELS_GENERIC_LINALG_INTERNAL_H_
#define CML_BACKENDS_C_KERNELS_GENERIC_LINALG_INTERNAL_H_

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "backends/c/cmlc.h"
#include "backends/c/kernels/common.h"
#include "backends/c/kernels/elements.h"

#ifdef __cplusplus
extern "C" {
#endif

//===--- computation domains ---===//

// The arithmetic a kernel does for an accumulator dtype: f16, bf16 and f32 accumulate in f32;
// f64 in f64; every integer dtype in uint64 arithmetic (wrapping, truncated to the
// accumulator's width at the end: wrapping is a ring homomorphism, so the result equals
// wrapping at every step); complex in float or double pairs.
typedef enum cmlc__la_domain_t {
  CMLC__LA_DOM_F32 = 0,
  CMLC__LA_DOM_F64 = 1,
  CMLC__LA_DOM_INT = 2,
  CMLC__LA_DOM_C64 = 3,
  CMLC__LA_DOM_C128 = 4,
  CMLC__LA_DOM_NONE = 5,
} cmlc__la_domain_t;

static inline cmlc__la_domain_t cmlc__la_domain_of(cml_dtype_t dtype) {
  switch (dtype) {
    case CML_DTYPE_F16:
    case CML_DTYPE_BF16:
    case CML_DTYPE_F32:
      return CMLC__LA_DOM_F32;
    case CML_DTYPE_F64:
      return CMLC__LA_DOM_F64;
    case CML_DTYPE_I8:
    case CML_DTYPE_I16:
    case CML_DTYPE_I32:
    case CML_DTYPE_I64:
    case CML_DTYPE_U8:
    case CML_DTYPE_U16:
    case CML_DTYPE_U32:
    case CML_DTYPE_U64:
      return CMLC__LA_DOM_INT;
    case CML_DTYPE_C64:
      return CMLC__LA_DOM_C64;
    case CML_DTYPE_C128:
      return CMLC__LA_DOM_C128;
    default:
      return CMLC__LA_DOM_NONE;
  }
}

// Bytes of one element of |domain| (complex: two components).
static inline size_t cmlc__la_domain_size(cmlc__la_domain_t domain) {
  switch (domain) {
    case CMLC__LA_DOM_F32:
      return 4;
    case CMLC__LA_DOM_F64:
      return 8;
    case CMLC__LA_DOM_INT:
      return 8;
    case CMLC__LA_DOM_C64:
      return 8;
    case CMLC__LA_DOM_C128:
      return 16;
    default:
      return 0;
  }
}

static inline bool cmlc__la_is_real_storage(cml_dtype_t dtype) {
  return cmlc__la_domain_of(dtype) == CMLC__LA_DOM_F32 ||
         cmlc__la_domain_of(dtype) == CMLC__LA_DOM_F64 ||
         cmlc__la_domain_of(dtype) == CMLC__LA_DOM_INT;
}

//===--- shapes ---===//

// Fills |out|[t] (t over the row-major index space of the |count| axes |axes| of a shape
// with |dims| and |strides|) with the element offset of that multi-index. Returns the count.
static inline int64_t cmlc__la_offsets(int32_t count, const int64_t* axes, const int64_t* dims,
                                       const int64_t* strides, int64_t* out) {
  int64_t total = 1;
  for (int32_t a = 0; a < count; ++a) total *= dims[axes[a]];
  if (total <= 0) return total;
  if (count == 1) {
    const int64_t stride = strides[axes[0]];
    for (int64_t t = 0; t < total; ++t) out[t] = t * stride;
    return total;
  }
  // An odometer over the multi-index (no divisions: this runs on every execute of a product).
  int64_t index[CML_MAX_RANK] = {0};
  int64_t off = 0;
  for (int64_t t = 0; t < total; ++t) {
    out[t] = off;
    for (int32_t a = count - 1; a >= 0; --a) {
      off += strides[axes[a]];
      if (++index[a] < dims[axes[a]]) break;
      off -= index[a] * strides[axes[a]];
      index[a] = 0;
    }
  }
  return total;
}

//===--- packed f32 / f64 GEMM (gemm.c, gemm_impl.h) ---===//

// One operand of a GEMM, addressed through offset tables: element (r, c) of batch b is
// data[batch_offsets[b] + row_offsets[r] + col_offsets[c]] (A: rows = M, cols = K; B: rows = K,
// cols = N). dtype: F32, F16 or BF16 (converted to f32 while packing); F64 too for the f64
// GEMM, and I8, U8 or I16 for the integer k-pair GEMM (widened to i16 while packing).
typedef struct cmlc__gemm_operand_t {
  const void* data;
  cml_dtype_t dtype;
  const int64_t* batch_offsets;
  const int64_t* row_offsets;
  const int64_t* col_offsets;
} cmlc__gemm_operand_t;

typedef struct cmlc__gemm_problem_t {
  int64_t batch, m, n, k;
  cmlc__gemm_operand_t a, b;
  float* c;  // [batch, m, n] row-major, overwritten
} cmlc__gemm_problem_t;

// The height of the row blocks (tasks of A rows) of a product of |m| rows split over |threads|
// (> 1) threads: a multiple of |mr| up to |mc| (the default height). About four blocks per
// thread; among the heights from there up to |mc| that still give two blocks per thread, the
// one whose rounds of blocks put the fewest rows on the busiest thread (rounds x height), the
// lowest on a tie; then, when a height down to half of |mc| puts strictly fewer rows on it,
// the largest such. The f32 / f64 driver and the bf16 GEMM use it.
int64_t cmlc__gemm_row_block(int64_t m, int64_t mr, int64_t mc, int threads);

// Scratch bytes cmlc__gemm_f32 needs for |p| dims with |isa| and up to |threads| threads.
size_t cmlc__gemm_f32_scratch(int64_t batch, int64_t m, int64_t n, int64_t k, cmlc_isa_t isa,
                              int threads);
// C = A x B per batch with a cache-blocked, packed GEMM and a register-tiled micro-kernel for
// |isa|. Work is split over output tiles (never over k), so results do not depend on the
// thread count. |scratch| must hold cmlc__gemm_f32_scratch(..., threads) bytes for the
// pool's thread count (the caller passes pool NULL otherwise). Picks the kernels per call;
// a planned kernel picks them once with cmlc__gemm_f32_pick.
void cmlc__gemm_f32(const cmlc__gemm_problem_t* p, cmlc_isa_t isa, cmlc_pool_t* pool, void* scratch,
                    int threads);
// The driver of one ISA: cmlc__gemm_f32 with the kernel table fixed. |b_packed| (NULL: none)
// is p->b packed whole by cmlc__gemm_f32_prepack for the same ISA and the same K and N; it is
// used for batch 1 only (the blocked and skinny paths read its panels instead of packing or
// copying B) and gives the same bits as packing per call.
typedef void (*cmlc__gemm_f32_fn)(const cmlc__gemm_problem_t* p, const float* b_packed,
                                  cmlc_pool_t* pool, void* scratch, int threads);
cmlc__gemm_f32_fn cmlc__gemm_f32_pick(cmlc_isa_t isa);
// Packs the B operand of |p| (batch 1; every k block of every column block, in the driver's
// panel layout for |isa|) into |dst| (64-byte aligned) and returns its bytes; with |dst| NULL
// only returns the bytes. Returns 0 when p->batch != 1 or a dimension is empty.
size_t cmlc__gemm_f32_prepack(const cmlc__gemm_problem_t* p, cmlc_isa_t isa, void* dst);

// The same in f64 (f64 accumulation; operands of other real float dtypes convert on packing).
typedef struct cmlc__gemm_f64_problem_t {
  int64_t batch, m, n, k;
  cmlc__gemm_operand_t a, b;
  double* c;  // [batch, m, n] row-major, overwritten
} cmlc__gemm_f64_problem_t;
size_t cmlc__gemm_f64_scratch(int64_t batch, int64_t m, int64_t n, int64_t k, cmlc_isa_t isa,
                              int threads);
void cmlc__gemm_f64(const cmlc__gemm_f64_problem_t* p, cmlc_isa_t isa, cmlc_pool_t* pool,
                    void* scratch, int threads);
typedef void (*cmlc__gemm_f64_fn)(const cmlc__gemm_f64_problem_t* p, const double* b_packed,
                                  cmlc_pool_t* pool, void* scratch, int threads);
cmlc__gemm_f64_fn cmlc__gemm_f64_pick(cmlc_isa_t isa);
size_t cmlc__gemm_f64_prepack(const cmlc__gemm_f64_problem_t* p, cmlc_isa_t isa, void* dst);

// Micro-kernels: C[rows x cols] (row stride |ldc|) = (accumulate ? C : 0) + sum over |kc| of
// a[k*MR + r] * b[k*ldb + j]. |a| is a packed MR-row sliver (zero padded past |rows|); |b| is
// either a packed NR-column sliver (ldb = NR) or the operand itself (ldb = its row stride); only
// columns below |cols| of b are read and only rows x cols of C are written (1 <= rows <= MR,
// 1 <= cols <= NR). Each output sums its k terms in order, one fused multiply-add at a time,
// so a tile's result never depends on where the tile sits or which thread runs it.
typedef void (*cmlc__gemm_ukernel_fn)(int64_t kc, const float* a, const float* b, int64_t ldb,
                                      float* c, int64_t ldc, int accumulate, int rows, int cols);
// The same with A read in place: row r of the tile at a + r * lda, k contiguous (the rows past
// |rows| are not read past the last one; 1 <= rows <= the table's direct_mr). Same arithmetic, same
// bits as the packed kernel.
typedef void (*cmlc__gemm_direct_fn)(int64_t kc, const float* a, int64_t lda, const float* b,
                                     int64_t ldb, float* c, int64_t ldc, int accumulate, int rows,
                                     int cols);
// Transposed-B tile kernels (products of a few rows, M <= 128, with a weight stored [N, K]):
// c[m * ldc + r] = the sum over j < k of w[r * ldw + j] * xt[j * LANES + m] for r < |rows| and
// m < |cols| (1 <= rows <= ROWS, 1 <= cols <= LANES; ROWS and LANES fixed per kernel), where
// |w| is the weight read in place (|wdtype| F32, BF16 or F16, widened exactly; row r of the tile
// at element r * ldw, k contiguous) and |xt| the rows of x packed k-major (LANES floats per k,
// zero padded, 32-byte aligned). The k terms are summed in blocks of |kcb|, each block one
// fused multiply-add per k from zero, the blocks added in order: the arithmetic of the
// micro-kernels over a packed B, so the same bits.
typedef void (*cmlc__gemm_bt_fn)(int64_t k, int64_t kcb, const void* w, cml_dtype_t wdtype,
                                 int64_t ldw, const float* xt, float* c, int64_t ldc, int rows,
                                 int cols);
// GEMV kernels (one output row or column, f32):
//   axpy form: c[j] = sum_k a[k * a_stride] * b[k * ldb + j] for j < n (b rows contiguous);
//   dot form:  c[j * c_stride] = sum_k x[k] * y[j * ldy + k] for j < n (x and y rows
//              contiguous in k).
// Each output's summation order is fixed by the kernel alone (not by how n is split).
typedef void (*cmlc__gemv_axpy_fn)(int64_t k, const float* a, int64_t a_stride, const float* b,
                                   int64_t ldb, float* c, int64_t n);
typedef void (*cmlc__gemv_dot_fn)(int64_t k, const float* x, const float* y, int64_t ldy, float* c,
                                  int64_t c_stride, int64_t n);
// Products of at most this many rows with a half B stored transposed take the dot form above
// (the f32 driver's gemv_try). [M, 4096] x [4096, 4096]^T bf16 on 2 threads of Zen 5, against
// the transposed-B tiles: M = 2 0.75 against 1.85 ms, 6 1.15 / 1.66, 8 1.43 / 1.69, 12 2.02 /
// 2.52, 16 2.65 / 2.53.
#define CMLC__GEMM_DOT_H_M 12
// The same for an f32 (or f64) weight stored [N, K]: 2..6 rows take the f32 dot form row by row
// over L2-resident blocks of weight rows (kern.dot) instead of the tiles. [M, 4096] x [4096,
// 4096]^T f32 on 2 threads of Zen 5, dot form / tiles: M = 2 1.09 / 3.22 ms, 4 1.71 / 3.23, 6
// 2.32 / 3.41, 8 2.94 / 3.31, 12 4.26 / 3.65; a cached [768, 768]^T weight: M = 2 0.023 / 0.114
// ms, 4 0.040 / 0.059, 6 0.057 / 0.059, 8 0.078 / 0.060.
#define CMLC__GEMM_DOT_ROWS_M 6
// The axpy GEMV forms (one row, a few rows over a half or large f32 B) sum K in blocks of this
// many rows (gemm_impl.h): the kernels' chained sums over k lose digits with K. The blocks' sums
// of several rows go through a buffer of at most CMLC__GEMV_PART_MAX floats on the stack.
#define CMLC__GEMV_AXPY_KC 2048
#define CMLC__GEMV_PART_MAX 8704
// Weight rows of |row_bytes| per block of about 256 KiB, which the GEMV dot forms with several
// rows of x run each row through in turn (the block comes from memory once and from L2 for the
// other rows); all |n| when the stride is 0 (one weight row).
static inline int64_t cmlc__gemv_l2_rows(int64_t row_bytes, int64_t n) {
  return row_bytes <= 0 ? n : row_bytes > 262144 ? 1 : 262144 / row_bytes;
}
// The dot form over a half matrix (rows of |y_dtype|, bf16 or f16, contiguous in k: a weight
// stored [N, K]) for |m| rows of x (f32, |ldx| apart): c[i * ldc + j] = sum_k x[i * ldx + k] *
// y[j * ldy + k] for i < m, j < n, the weight read in place and widened exactly: each output the
// bits of the f32 dot form (cmlc__gemv_dot_fn) on x_i and the widened row.
typedef void (*cmlc__gemv_dot_h_fn)(int64_t m, int64_t k, const float* x, int64_t ldx,
                                    const uint16_t* y, cml_dtype_t y_dtype, int64_t ldy, float* c,
                                    int64_t ldc, int64_t n);
// The axpy form over a half matrix (B rows contiguous), for |m| rows of A (|lda| apart, k
// stride |a_stride|) and outputs |ldc| apart: c[i * ldc + j] = sum_k a[i * lda + k * a_stride] *
// b[k * ldb + j] for i < m, j < n, with |a| f32, bf16 or f16 (|a_dtype|) and |b| bf16 or f16
// (|b_dtype|), read in place and widened exactly. Each row's outputs are the bits of the f32
// axpy form (cmlc__gemv_axpy_fn) on that row and the widened values.
typedef void (*cmlc__gemv_axpy_h_fn)(int64_t m, int64_t k, const void* a, cml_dtype_t a_dtype,
                                     int64_t lda, int64_t a_stride, const uint16_t* b,
                                     cml_dtype_t b_dtype, int64_t ldb, float* c, int64_t ldc,
                                     int64_t n);
// The same form for |m| rows of an f32 A times an f32 B (rows contiguous): each row's outputs
// the bits of cmlc__gemv_axpy_fn on that row.
typedef void (*cmlc__gemv_axpy_rows_fn)(int64_t m, int64_t k, const float* a, int64_t lda,
                                        int64_t a_stride, const float* b, int64_t ldb, float* c,
                                        int64_t ldc, int64_t n);
// Widens |n| consecutive f16 or bf16 values to f32 (exact), for packing half operands.
typedef void (*cmlc__gemm_widen_fn)(const uint16_t* src, float* dst, int64_t n);
// Rounds |n| f32 values to |dtype| (F16 or BF16) at |dst|: the bits cml_f64_to_f16 /
// cml_f64_to_bf16 give for each value, with SIMD for |isa|. Returns false for other dtypes.
bool cmlc__gemm_narrow_f32(const float* src, void* dst, cml_dtype_t dtype, int64_t n,
                           cmlc_isa_t isa);
// The same rounding as one function picked for |dtype| and |isa| (NULL for other dtypes).
typedef void (*cmlc__gemm_narrow_fn)(const float* src, uint16_t* dst, int64_t n);
cmlc__gemm_narrow_fn cmlc__gemm_narrow_pick(cml_dtype_t dtype, cmlc_isa_t isa);
// f64 versions of the three kernel types (same contracts).
typedef void (*cmlc__gemm_ukernel_f64_fn)(int64_t kc, const double* a, const double* b, int64_t ldb,
                                          double* c, int64_t ldc, int accumulate, int rows,
                                          int cols);
typedef void (*cmlc__gemv_axpy_f64_fn)(int64_t k, const double* a, int64_t a_stride,
                                       const double* b, int64_t ldb, double* c, int64_t n);
typedef void (*cmlc__gemv_dot_f64_fn)(int64_t k, const double* x, const double* y, int64_t ldy,
                                      double* c, int64_t c_stride, int64_t n);
#if defined(CMLC_HAVE_X86_64)
void cmlc__gemm_ukernel_f64_avx2_6x8(int64_t kc, const double* a, const double* b, int64_t ldb,
                                     double* c, int64_t ldc, int accumulate, int rows, int cols);
void cmlc__gemm_ukernel_f64_avx512_12x16(int64_t kc, const double* a, const double* b, int64_t ldb,
                                         double* c, int64_t ldc, int accumulate, int rows,
                                         int cols);
void cmlc__gemm_ukernel_f32_avx2_6x16(int64_t kc, const float* a, const float* b, int64_t ldb,
                                      float* c, int64_t ldc, int accumulate, int rows, int cols);
void cmlc__gemm_ukernel_f32_avx512_12x32(int64_t kc, const float* a, const float* b, int64_t ldb,
                                         float* c, int64_t ldc, int accumulate, int rows, int cols);
// The skinny products' 16 x 16 tile (M = 13..16 with AVX-512): |a| a packed 16-row sliver,
// |b| read in place (row stride |ldb|); same contract and per-tile arithmetic as the 12 x 32
// kernel.
void cmlc__gemm_ukernel_f32_avx512_16x16(int64_t kc, const float* a, const float* b, int64_t ldb,
                                         float* c, int64_t ldc, int accumulate, int rows, int cols);
// AVX2 + FMA + F16C: 6 weight rows x 16 lanes, and 12 weight rows x 8 lanes (also the AVX-512
// ISA's; see gemm_x86_64_avx2.c).
void cmlc__gemm_bt_f32_avx2_6x16(int64_t k, int64_t kcb, const void* w, cml_dtype_t wdtype,
                                 int64_t ldw, const float* xt, float* c, int64_t ldc, int rows,
                                 int cols);
void cmlc__gemm_bt_f32_avx2_12x8(int64_t k, int64_t kcb, const void* w, cml_dtype_t wdtype,
                                 int64_t ldw, const float* xt, float* c, int64_t ldc, int rows,
                                 int cols);
void cmlc__gemv_axpy_f32_avx2(int64_t k, const float* a, int64_t a_stride, const float* b,
                              int64_t ldb, float* c, int64_t n);
void cmlc__gemv_axpy_rows_f32_avx2(int64_t m, int64_t k, const float* a, int64_t lda,
                                   int64_t a_stride, const float* b, int64_t ldb, float* c,
                                   int64_t ldc, int64_t n);
void cmlc__gemv_axpy_h_avx2(int64_t m, int64_t k, const void* a, cml_dtype_t a_dtype, int64_t lda,
                            int64_t a_stride, const uint16_t* b, cml_dtype_t b_dtype, int64_t ldb,
                            float* c, int64_t ldc, int64_t n);
void cmlc__gemv_dot_h_avx2(int64_t m, int64_t k, const float* x, int64_t ldx, const uint16_t* y,
                           cml_dtype_t y_dtype, int64_t ldy, float* c, int64_t ldc, int64_t n);
void cmlc__gemv_dot_f32_avx2(int64_t k, const float* x, const float* y, int64_t ldy, float* c,
                             int64_t c_stride, int64_t n);
void cmlc__gemv_dot_f64_avx2(int64_t k, const double* x, const double* y, int64_t ldy, double* c,
                             int64_t c_stride, int64_t n);
void cmlc__gemm_widen_f16_f16c(const uint16_t* src, float* dst, int64_t n);
void cmlc__gemm_pack_bt_f32_avx512(const float* src, int64_t ld, int64_t kc, float* sliver);
// dst[j * ldo + i] = src[i * ld + j] for a 16 x 16 block of 4-byte elements (moved as bits).
void cmlc__transpose16_b32_avx512(const void* src, int64_t ld, void* dst, int64_t ldo);
// dst[j * ldo + i] = src[i * ld + j] for a 32 x 16 block of 2-byte elements (32 source rows of
// 16): 16 destination rows of 32; |ldo| even and |dst| 4-byte aligned.
void cmlc__transpose_b16_avx512(const uint16_t* src, int64_t ld, uint16_t* dst, int64_t ldo);
// Packs a 12-row sliver of a row-major A (row r's kc values at rows[r]) into sliver[kk * 12 + r].
void cmlc__gemm_pack_a_f32_avx512_12(const float* const* rows, int64_t kc, float* sliver);
void cmlc__gemm_direct_f32_avx512_14x32(int64_t kc, const float* a, int64_t lda, const float* b,
                                        int64_t ldb, float* c, int64_t ldc, int accumulate,
                                        int rows, int cols);
void cmlc__gemm_narrow_f16_f16c(const float* src, uint16_t* dst, int64_t n);
void cmlc__gemv_axpy_f32_avx512(int64_t k, const float* a, int64_t a_stride, const float* b,
                                int64_t ldb, float* c, int64_t n);
void cmlc__gemv_axpy_rows_f32_avx512(int64_t m, int64_t k, const float* a, int64_t lda,
                                     int64_t a_stride, const float* b, int64_t ldb, float* c,
                                     int64_t ldc, int64_t n);
void cmlc__gemv_axpy_h_avx512(int64_t m, int64_t k, const void* a, cml_dtype_t a_dtype, int64_t lda,
                              int64_t a_stride, const uint16_t* b, cml_dtype_t b_dtype, int64_t ldb,
                              float* c, int64_t ldc, int64_t n);
void cmlc__gemv_dot_h_avx512(int64_t m, int64_t k, const float* x, int64_t ldx, const uint16_t* y,
                             cml_dtype_t y_dtype, int64_t ldy, float* c, int64_t ldc, int64_t n);
void cmlc__gemv_dot_f32_avx512(int64_t k, const float* x, const float* y, int64_t ldy, float* c,
                               int64_t c_stride, int64_t n);
//===--- k-pair GEMMs (16-bit operands, 32-bit sums) ---===//

// The driver shared by the bf16 GEMM (vdpbf16ps) and the integer GEMM (vpdpwssd / vpmaddwd):
// kernels/x86_64/gemm_x86_64_pairs.c. Both multiply 16-bit values and add two products per
// 32-bit lane, so both pack B in NR-column slivers of k pairs (per pair of k: NR words
// {k even, k odd}) and A in MR-row slivers of pair words, zero padded (an odd K, a partial
// tile), and both run the same blocking, thread split and batch mode. What differs (the
// packing's element loads, the micro-kernel and its 32-bit arithmetic) comes in a table.
enum { CMLC__GEMM_PAIRS_MR = 12, CMLC__GEMM_PAIRS_NR = 32 };

// Marks an offset table that is not affine.
#define CMLC__GEMM_PAIRS_NOT_AFFINE INT64_MIN

// The operands' layouts, from their offset tables: strides, or CMLC__GEMM_PAIRS_NOT_AFFINE.
typedef struct cmlc__gemm_pairs_access_t {
  int64_t a_row, a_col, b_row, b_col;
} cmlc__gemm_pairs_access_t;

// A product of 16-bit pairs: C ([batch, m, n] row-major 32-bit sums, f32 or i32, overwritten)
// = A x B per batch. |out| (bf16 only; NULL otherwise): where the micro-kernel of the last k
// block stores its rounded sums instead of C.
typedef struct cmlc__gemm_pairs_problem_t {
  int64_t batch, m, n, k;
  cmlc__gemm_operand_t a, b;
  void* c;
  uint16_t* out;
} cmlc__gemm_pairs_problem_t;

// One element kind's packing and micro-kernel.
//   pack_a: A rows [ic, ic+mc) x k [pc, pc+kc) of batch |bt| into MR-row slivers of
//           (kc + 1) / 2 pair words each (sliver i at dst + i * kp, pair q of row r at q * MR + r);
//   pack_b: B slivers [s0, s1) of k [pc, pc+kc) x columns [jc, jc+nc) of batch |bt| (sliver s
//           at panel + s * kp * NR, pair q of column j at q * NR + j);
//   ukernel: sums = (accumulate ? C : 0) + A sliver x B sliver over |kp| pairs for rows x cols
//           of a tile (C row stride |ldc|); to |out| (row stride |ldo|) instead of C when |out|
//           is not NULL. Each output's arithmetic never depends on the tile's place.
typedef struct cmlc__gemm_pairs_kernels_t {
  // k values per packed word: 2 (a pair of 16-bit values), or 1 (one 32-bit value: the
  // packers' and micro-kernel's "pairs" are then single k values, |kp| is the k count).
  int k_per_word;
  void (*pack_a)(const cmlc__gemm_operand_t* a, const cmlc__gemm_pairs_access_t* acc, int64_t bt,
                 int64_t ic, int64_t mc, int64_t pc, int64_t kc, uint32_t* dst);
  void (*pack_b)(const cmlc__gemm_operand_t* b, const cmlc__gemm_pairs_access_t* acc, int64_t bt,
                 int64_t jc, int64_t nc, int64_t pc, int64_t kc, int64_t s0, int64_t s1,
                 uint32_t* panel);
  void (*ukernel)(int64_t kp, const uint32_t* a, const uint32_t* b, void* c, int64_t ldc,
                  int accumulate, uint16_t* out, int64_t ldo, int rows, int cols);
} cmlc__gemm_pairs_kernels_t;

// Scratch bytes of cmlc__gemm_pairs for |m|, |n|, |k|, kernels of |k_per_word| and up to
// |threads| threads.
size_t cmlc__gemm_pairs_scratch(int64_t m, int64_t n, int64_t k, int k_per_word, int threads);
// Runs |p| with |kern|. Work is split over output tiles, never over k, so the result does not
// depend on the thread count. |scratch| (64-byte aligned) holds cmlc__gemm_pairs_scratch bytes
// for |threads|; pool NULL (or one larger than |threads|) runs on the calling thread. K = 0
// writes zeros to C (to |out| when it is set).
void cmlc__gemm_pairs(const cmlc__gemm_pairs_kernels_t* kern, const cmlc__gemm_pairs_problem_t* p,
                      cmlc_pool_t* pool, void* scratch, int threads);

// bf16 x bf16 -> f32 GEMM with AVX-512 BF16 (vdpbf16ps; kernels/x86_64/gemm_x86_64_avx512bf16.c),
// for options->avx512_bf16 only. Both operands of |p| must be BF16. Same contract as
// cmlc__gemm_f32 (work split over output tiles, never over k: the result does not depend on
// the thread count); the accuracy bound is in that file's header. With |out_bf16| not NULL the
// result is rounded to bf16 ([batch, m, n], the bits of cml_f64_to_bf16 of each f32 sum) in the
// micro-kernel's store, and p->c only holds f32 partial sums when k exceeds one k block.
// |scratch| must hold cmlc__gemm_bf16_scratch(m, n, k, threads) bytes, 64-byte aligned.
size_t cmlc__gemm_bf16_scratch(int64_t m, int64_t n, int64_t k, int threads);
void cmlc__gemm_bf16(const cmlc__gemm_problem_t* p, uint16_t* out_bf16, cmlc_pool_t* pool,
                     void* scratch, int threads);
void cmlc__gemm_ukernel_bf16_avx512_12x32(int64_t kp, const uint32_t* a, const uint32_t* b, void* c,
                                          int64_t ldc, int accumulate, uint16_t* out, int64_t ldo,
                                          int rows, int cols);

// Integer products with an i32 accumulator whose operands are I8, U8 or I16 (see
// cmlc__gemm_i16_supports): both operands widen exactly to i16 while packing, and the
// micro-kernels add pairs of i16 products to i32 lanes, wrapping (vpdpwssd with AVX-512 VNNI;
// vpmaddwd + vpaddd with AVX-512 or AVX2: vpmaddwd's one overflowing case, -32768 * -32768
// twice, wraps to INT32_MIN, which is the sum mod 2^32 as well). Integer addition mod 2^32 is
// associative, so C is bit for bit the generic path's i32 result (kernels/x86_64/
// gemm_x86_64_int16.c). p->c is int32_t [batch, m, n]; p->out must be NULL.
bool cmlc__gemm_i16_supports(cml_dtype_t dtype);
typedef void (*cmlc__gemm_i16_fn)(const cmlc__gemm_pairs_problem_t* p, cmlc_pool_t* pool,
                                  void* scratch, int threads);
// The driver for |isa| (AVX2 or AVX-512; with |vnni| on AVX-512, the vpdpwssd kernel), or NULL
// for the scalar ISA. Its scratch is cmlc__gemm_pairs_scratch.
cmlc__gemm_i16_fn cmlc__gemm_i16_pick(cmlc_isa_t isa, bool vnni);

// Integer products with an i32 accumulator over any integer operands (I8 ... U64, see
// cmlc__gemm_i32_supports; the DotGeneral plan takes it where cmlc__gemm_i16_supports does
// not hold for both): each operand's low 32 bits packed one k value per word, vpmulld +
// vpaddd micro-kernels. The low 32 bits of a product depend only on the low 32 bits of its
// factors, so C is bit for bit the generic path's i32 result (kernels/x86_64/
// gemm_x86_64_int32.c, kernels in gemm_x86_64_int16.c). Same problem and driver contract as
// cmlc__gemm_i16_pick; the scratch is cmlc__gemm_pairs_scratch with k_per_word 1.
bool cmlc__gemm_i32_supports(cml_dtype_t dtype);
cmlc__gemm_i16_fn cmlc__gemm_i32_pick(cmlc_isa_t isa);
// Its micro-kernels (gemm_x86_64_int16.c: the k-pair kernels' bodies with vpmulld for the
// pair product), in the cmlc__gemm_pairs_kernels_t ukernel form.
void cmlc__gemm_ukernel_i32_avx512_12x32(int64_t kp, const uint32_t* a, const uint32_t* b, void* cv,
                                         int64_t ldc, int accumulate, uint16_t* out, int64_t ldo,
                                         int rows, int cols);
void cmlc__gemm_ukernel_i32_avx2_12x32(int64_t kp, const uint32_t* a, const uint32_t* b, void* cv,
                                       int64_t ldc, int accumulate, uint16_t* out, int64_t ldo,
                                       int rows, int cols);
#endif

// The GEMM of the fused ops' f32-domain products (FusedDense, FusedAttentionQKVProjection): a
// bf16 x bf16 product of more than 16 rows on AVX-512 BF16 takes the vdpbf16ps GEMM, as
// DotGeneral plans it (fewer rows stream the weight in place through the f32 GEMM's GEMV and
// transposed-B tiles); everything else the f32 GEMM. The choice depends on the dtypes, the rows
// and the options, never on the thread count. (The fused ops once always widened bf16 into the
// f32 GEMM: 1.6-2x xla:cpu's time where DotGeneral of the same product was ahead.)
static inline bool cmlc__gemm_fused_bf16(const cmlc_options_t* options, cml_dtype_t a,
                                         cml_dtype_t b, int64_t m) {
#if defined(CMLC_HAVE_X86_64)
  return options && !options->reference && options->avx512_bf16 &&
         options->isa == CMLC_ISA_AVX512 && a == CML_DTYPE_BF16 && b == CML_DTYPE_BF16 && m > 16;
#else
  (void)options, (void)a, (void)b, (void)m;
  return false;
#endif
}
// Scratch bytes of cmlc__gemm_fused for one [m, k] x [k, n] product.
static inline size_t cmlc__gemm_fused_scratch(bool bf16, int64_t m, int64_t n, int64_t k,
                                              cmlc_isa_t isa, int threads) {
#if defined(CMLC_HAVE_X86_64)
  if (bf16) return cmlc__gemm_bf16_scratch(m, n, k, threads);
#endif
  return cmlc__gemm_f32_scratch(1, m, n, k, isa, threads);
}
// Runs |g| (batch 1, f32 result) with the GEMM that cmlc__gemm_fused_bf16 picked.
static inline void cmlc__gemm_fused(const cmlc__gemm_problem_t* g, bool bf16, cmlc_isa_t isa,
                                    cmlc_pool_t* pool, void* scratch, int threads) {
#if defined(CMLC_HAVE_X86_64)
  if (bf16) {
    cmlc__gemm_bf16(g, NULL, pool, scratch, threads);
    return;
  }
#endif
  (void)bf16;
  cmlc__gemm_f32(g, isa, pool, scratch, threads);
}

//===--- conv (linalg_conv.c) ---===//

bool cmlc__conv_lookup(const cml_module_t* module, const cml_ir_node_t* node,
                       const cmlc_options_t* options, cmlc_kernel_entry_t* out);

// The direct 2-D convolution micro-kernel's geometry (linalg_conv.c): the input value of
// pixel p at tap (ky, kx) and input channel ci sits at
// x[x_offsets[p] + ky * x_ky + kx * x_kx + ci] (a zero-padded strip of input rows), its filter
// vector at w[((ky * kw + kx) * channels + ci) * ldw] (ldw: 16 x the vectors of the block, zero
// past the live columns), and pixel p's output at out[out_offsets[p]].
// A call sums one chunk of K: the taps t = ky * kw + kx in [t0, t1) and, of each, the channels
// [c0, c1); a chunk is a contiguous range of K in (ky, kx, ci) order (either whole taps, or
// a channel range of one tap), |w| points at its first row. The chunk is summed in blocks of
// CMLC__CONV_DIRECT_K_BLOCK rows, each from zero and added to the output; with |accumulate| the
// output already holds the earlier chunks' f32 sum, which the first block adds to.
// The most K rows of one chunk: one chunk of a 64-channel filter block (K_MAX x 64 floats)
// stays in L2 while the task's pixel blocks stream past it (tests/unit/c_kernels_conv_test.c
// mirrors the chunks and blocks to check the order bit for bit).
enum { CMLC__CONV_DIRECT_K_MAX = 1280 };
// Within a chunk the micro-kernel sums blocks of this many k rows (from the chunk's start), each
// from zero, and adds each block's sums to the output: the error bound is then about
// (K_BLOCK + K / K_BLOCK) x 2^-24 x sum |terms|, the GEMM's (whose kc is 256) and xla:cpu's
// (a kernel gradient over K = 4096 positions: the same error as xla:cpu's).
enum { CMLC__CONV_DIRECT_K_BLOCK = 256 };
typedef struct cmlc__conv_direct_args_t {
  int64_t kh, kw, channels;
  int64_t x_ky, x_kx;
  int64_t ldw;
  int64_t t0, t1, c0, c1;
  int accumulate;
} cmlc__conv_direct_args_t;
// The direct micro-kernel of one ISA (same contract for each).
typedef void (*cmlc__conv_direct_fn)(const cmlc__conv_direct_args_t* args, const float* x,
                                     const int64_t* x_offsets, const float* w, float* out,
                                     const int64_t* out_offsets, int pixels, int cols);
#if defined(CMLC_HAVE_X86_64)
// out[out_offsets[p] + o] = the sum above for p < pixels (1..6) and o < cols (1..64), AVX-512F.
void cmlc__conv_direct_f32_avx512_6x64(const cmlc__conv_direct_args_t* args, const float* x,
                                       const int64_t* x_offsets, const float* w, float* out,
                                       const int64_t* out_offsets, int pixels, int cols);
// The same with AVX2 + FMA: 6 pixels x 16 channels per pass (12 ymm accumulators), one pass
// per 16 of the |cols| (1..64); each output's terms in the same order, so the same bits.
void cmlc__conv_direct_f32_avx2_6x16(const cmlc__conv_direct_args_t* args, const float* x,
                                     const int64_t* x_offsets, const float* w, float* out,
                                     const int64_t* out_offsets, int pixels, int cols);
#endif

//===--- FFT (special_fft.c) ---===//

bool cmlc__fft_lookup(const cml_module_t* module, const cml_ir_node_t* node,
                      const cmlc_options_t* options, cmlc_kernel_entry_t* out);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_BACKENDS_C_KERNELS_GENERIC_LINALG_INTERNAL_H_
