// SPDX-License-Identifier: Apache-2.0
// kernels/generic/gemm.c: the packed f32 GEMM (GotoBLAS style) behind DotGeneral, its GEMV
// path, and the scalar micro-kernels; the AVX2 and AVX-512 kernels live in
// kernels/x86_64/gemm_*.c.
//
// Loops, per batch: jc over N in NC-column blocks, pc over K in KC-deep blocks (sequential,
// so every output sums its k blocks in the same order), then output tiles of MC rows x a run
// of NR-column slivers. The B panel (KC x NC) is packed once per (jc, pc) into NR-column
// slivers, shared by all threads; each tile task packs its A block (MC x KC) into MR-row
// slivers and runs the MR x NR micro-kernel over it, one B sliver (L1-resident) against all
// A slivers of the block (L2-resident). Small B operands whose rows are contiguous are read in
// place (no B packing), and so is a B with whole-cache-line rows when M fits one row block
// (each sliver is then used by one pass of calls, so a copy would only add memory traffic; the
// next sliver is prefetched instead). Tasks never split K, and a tile's arithmetic does not
// depend on which thread runs it or where it sits (edges are masked, not recomputed), so
// results are identical for any thread count. Many small batched products run one whole batch per
// task instead.
//
// Packing reads operands through offset tables (any axis layout); when a table is affine
// (offset = index * stride, the common row-major and transposed cases) it uses the stride
// directly, so a row of B becomes one contiguous copy.
//
// GEMV: M == 1 (a row vector times a matrix) and N == 1 (a matrix times a column vector) never
// go through the blocked path: they stream the matrix once (axpy form for contiguous B rows,
// dot form for contiguous k), split over outputs only. A bf16 or f16 B with contiguous rows
// streams in place too, widened in registers, for up to CMLC_GEMM_HALF_M rows of A with SIMD
// (the _h axpy kernels: each k row of B loaded once for all rows of A) and one row with scalar
// code.
#include "backends/c/kernels/generic/linalg_internal.h"

enum {
  CMLC_GEMM_KC = 256,
  CMLC_GEMM_MC = 144,         // a multiple of every MR (4, 6, 12)
  CMLC_GEMM_MC_STREAM = 288,  // the tallest row block of a B read in place (gemm_run)
  CMLC_GEMM_NC = 2048,        // a multiple of every NR (8, 16, 32)
  CMLC_GEMM_MR_MAX = 16,      // the skinny 16 x 16 kernel's A slivers
  CMLC_GEMM_NR_MAX = 32,
  // B operands up to this many elements (K x N) with contiguous rows are not packed.
  CMLC_GEMM_DIRECT_B_MAX = 64 * 256,
  // Products of at most this many rows take the skinny path (B streamed from memory once).
  CMLC_GEMM_SKINNY_M = 32,
  // Skinny products with several A slivers copy this many B slivers at a time.
  CMLC_GEMM_SKINNY_GROUP = 8,
  // Products of at most this many rows with a large B stored transposed (k contiguous in each
  // column: a weight stored [N, K]) take the transposed-B tiles (the weight read in place).
  // Measured against the blocked path on one core (CPU time, 4096 x 4096 weight): 96 rows 33.9
  // against 44.8 ms, 128 rows 45.0 against 52.8; 256 rows would gain nothing (92-99 ms).
  CMLC_GEMM_BT_M = 128,
  CMLC_GEMM_BT_KINDS = 3,  // transposed-B tile kernels per ISA, at most
  // Batched products of at most these sizes (and at least CMLC_GEMM_TINY_BATCH of them) run
  // kern.tiny batch by batch: the blocked path's loop nest and masked tiles cost several times
  // the arithmetic of a 3 x 3 product (65536 of them: 1.1 ms, against 0.56 for xla:cpu).
  CMLC_GEMM_TINY_M = 8,
  CMLC_GEMM_TINY_N = 16,
  CMLC_GEMM_TINY_K = 16,
  CMLC_GEMM_TINY_BATCH = 16,
  // Products of at least this many rows with at most 16 columns run the transposed-B tiles
  // with the roles swapped (narrow_try), and the largest tile (rows x lanes) they may use.
  CMLC_GEMM_NARROW_MIN_M = 64,
  CMLC_GEMM_NARROW_TILE = 256,
  // Products of at most this many rows with a half (bf16 / f16) B whose rows are contiguous
  // stream B in place (kern.axpy_h with AVX-512 and AVX2; the scalar kernel takes one row)
  // instead of packing it. 2 x 4096 x 4096 bf16 on two
  // threads: 3.9 -> 0.9 ms; 16 rows 5.2 -> 2.2 ms (bench/README.md, "bf16 GEMV").
  CMLC_GEMM_HALF_M = 16,
  // Products of 2..CMLC_GEMM_ROWS_M rows with an f32 B of at least this many elements (K x N)
  // whose rows are contiguous stream it the same way (AVX-512 and AVX2: kern.axpy_rows). [M, 4096]
  // x [4096, 4096] on two threads, best of 4, three pairs: M = 2 3.6-4.9 -> 2.1-2.3 ms, 4 4.0-4.1
  // -> 1.8-2.4, 8 3.7-4.0 -> 2.7-2.8; 16 rows gained nothing (3.9-4.0 against 3.9-4.4: the FMAs
  // bound them), so they stay with the skinny kernels.
  CMLC_GEMM_ROWS_B_MIN = 1 << 20,
  CMLC_GEMM_ROWS_M = 8,
};

// Marks an offset table that is not affine.
#define CMLC_GEMM_NOT_AFFINE INT64_MIN

//===--- scalar micro-kernels ---===//

// The scalar 4 x 8 micro-kernel and GEMV kernels, for float and double (gemm_scalar_impl.h).
#define CMLC_GEMM_CAT3_(a, b, c) a##b##_##c
#define CMLC_GEMM_CAT3(a, b, c) CMLC_GEMM_CAT3_(a, b, c)
#define CMLC_GEMM_N(x) CMLC_GEMM_CAT3(cmlc_, x, CMLC_GEMM_SUFFIX)

#define CMLC_GEMM_T float
#define CMLC_GEMM_SUFFIX f32
#include "backends/c/kernels/generic/gemm_scalar_impl.h"

#define CMLC_GEMM_T double
#define CMLC_GEMM_SUFFIX f64
#include "backends/c/kernels/generic/gemm_scalar_impl.h"

// The axpy form over a half B for the scalar ISA (cmlc__gemv_axpy_h_fn): the scalar f32 axpy's
// arithmetic on the widened values.
static void cmlc_gemv_axpy_h_scalar(int64_t m, int64_t k, const void* a, cml_dtype_t a_dtype,
                                    int64_t lda, int64_t a_stride, const uint16_t* b,
                                    cml_dtype_t b_dtype, int64_t ldb, float* c, int64_t ldc,
                                    int64_t n) {
  for (int64_t i = 0; i < m; ++i) {
    float* ci = c + i * ldc;
    for (int64_t j = 0; j < n; ++j) ci[j] = 0;
    for (int64_t kk = 0; kk < k; ++kk) {
      const float av = cmlc_load_f32(a, i * lda + kk * a_stride, a_dtype);
      const uint16_t* bk = b + kk * ldb;
      for (int64_t j = 0; j < n; ++j) ci[j] += av * cmlc_load_f32(bk, j, b_dtype);
    }
  }
}

//===--- kernel tables ---===//

// A transposed-B tile kernel and its shape (cmlc__gemm_bt_fn).
typedef struct cmlc_bt_t_f32 {
  cmlc__gemm_bt_fn fn;
  int rows, lanes;
} cmlc_bt_t_f32;
typedef void (*cmlc_bt_fn_f64)(int64_t k, int64_t kcb, const void* w, cml_dtype_t wdtype,
                               int64_t ldw, const double* xt, double* c, int64_t ldc, int rows,
                               int cols);
typedef struct cmlc_bt_t_f64 {
  cmlc_bt_fn_f64 fn;
  int rows, lanes;
} cmlc_bt_t_f64;

// A tiny product (at most CMLC_GEMM_TINY_M x CMLC_GEMM_TINY_N x CMLC_GEMM_TINY_K, batch by batch:
// 65536 3 x 3 rotations) of one batch: c[i * n + j] = the sum over k of a[i * ars + k * acs] *
// b[k * brs + j], each output accumulated from +0 in k order with the ISA micro-kernels'
// arithmetic (a fused multiply-add on the FMA ISAs, a product then a sum on the scalar one),
// so the same bits as the blocked path, without its loop nest per batch.
typedef void (*cmlc_gemm_tiny_fn_f32)(const float* a, int64_t ars, int64_t acs, const float* b,
                                      int64_t brs, float* c, int64_t m, int64_t n, int64_t k);
typedef void (*cmlc_gemm_tiny_fn_f64)(const double* a, int64_t ars, int64_t acs, const double* b,
                                      int64_t brs, double* c, int64_t m, int64_t n, int64_t k);

static void cmlc_gemm_tiny_scalar_f32(const float* a, int64_t ars, int64_t acs, const float* b,
                                      int64_t brs, float* c, int64_t m, int64_t n, int64_t k) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (int64_t kk = 0; kk < k; ++kk) acc += a[i * ars + kk * acs] * b[kk * brs + j];
      c[i * n + j] = acc;  // as cmlc_ukernel_scalar_4x8_f32
    }
  }
}
#if defined(CMLC_HAVE_X86_64)
#include <immintrin.h>

// The AVX2 / AVX-512 ISAs' tiny products: a row of c in one or two 8-lane accumulators (lanes
// past n masked), one fused multiply-add per k, as their micro-kernels compute each output.
__attribute__((target("avx2,fma"))) static void cmlc_gemm_tiny_fma_f32(const float* a, int64_t ars,
                                                                       int64_t acs, const float* b,
                                                                       int64_t brs, float* c,
                                                                       int64_t m, int64_t n,
                                                                       int64_t k) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), lane);
  const __m256i m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n - 8), lane);
  const bool two = n > 8;
  __m256 acc0[CMLC_GEMM_TINY_M], acc1[CMLC_GEMM_TINY_M];
#pragma GCC unroll 8
  for (int i = 0; i < CMLC_GEMM_TINY_M; ++i) acc0[i] = acc1[i] = _mm256_setzero_ps();
  for (int64_t kk = 0; kk < k; ++kk) {
    const float* bk = b + kk * brs;
    const __m256 b0 = _mm256_maskload_ps(bk, m0);
    const __m256 b1 = two ? _mm256_maskload_ps(bk + 8, m1) : _mm256_setzero_ps();
#pragma GCC unroll 8
    for (int i = 0; i < CMLC_GEMM_TINY_M; ++i) {
      if (i >= m) break;
      const __m256 x = _mm256_set1_ps(a[i * ars + kk * acs]);
      acc0[i] = _mm256_fmadd_ps(x, b0, acc0[i]);
      if (two) acc1[i] = _mm256_fmadd_ps(x, b1, acc1[i]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < CMLC_GEMM_TINY_M; ++i) {
    if (i >= m) break;
    _mm256_maskstore_ps(c + i * n, m0, acc0[i]);
    if (two) _mm256_maskstore_ps(c + i * n + 8, m1, acc1[i]);
  }
}
#endif

// The f32 kernels of one ISA. A table is picked once, when a kernel is planned
// (cmlc__gemm_f32_pick); the driver never looks at the ISA.
typedef struct cmlc_kernel_t_f32 {
  int mr, nr;
  cmlc__gemm_ukernel_fn fn;
  cmlc__gemv_axpy_fn axpy;
  cmlc__gemv_dot_fn dot;
  // Packs one full sliver of a transposed B (columns |ld| apart), or NULL.
  void (*pack_bt)(const float* src, int64_t ld, int64_t kc, float* sliver);
  // Packs one full sliver of MR row-major A rows (k contiguous in each), or NULL.
  void (*pack_a)(const float* const* rows, int64_t kc, float* sliver);
  // Widens runs of an f16 operand (F16C with a SIMD ISA).
  cmlc__gemm_widen_fn widen_f16;
  // Skinny products of skinny_min..16 rows: a 16 x 16 kernel that reads B in place (16-row A
  // slivers), or NULL.
  cmlc__gemm_ukernel_fn skinny16;
  int skinny_min;
  // Transposed-B tiles for M <= BT_M (weights stored [N, K]), by decreasing lanes (rows of x per
  // tile; the weight rows of each divide the largest), up to the first with fn NULL.
  cmlc_bt_t_f32 bt[CMLC_GEMM_BT_KINDS];
  // The kernel reading A in place (small products; tiles of up to direct_mr rows), or NULL.
  cmlc__gemm_direct_fn direct_a;
  int direct_mr;
  // The axpy form over a half B read in place, for up to axpy_h_rows rows of A (1: the kernel
  // reads B again for every row, so only row vectors take it).
  cmlc__gemv_axpy_h_fn axpy_h;
  int axpy_h_rows;
  // The same form over an f32 B for 2..CMLC_GEMM_ROWS_M rows of A, or NULL.
  cmlc__gemv_axpy_rows_fn axpy_rows;
  // The dot form over a half B stored transposed (k contiguous: a weight stored [N, K]) read in
  // place, for up to CMLC__GEMM_DOT_H_M rows of A, or NULL.
  cmlc__gemv_dot_h_fn dot_h;
  // Tiny products (CMLC_GEMM_TINY_*) one batch at a time, or NULL.
  cmlc_gemm_tiny_fn_f32 tiny;
} cmlc_kernel_t_f32;

static void cmlc_widen_f16(const uint16_t* src, float* dst, int64_t n);

#if defined(CMLC_HAVE_X86_64)
static const cmlc_kernel_t_f32 cmlc_kern_avx512_f32 = {
    12,
    32,
    cmlc__gemm_ukernel_f32_avx512_12x32,
    cmlc__gemv_axpy_f32_avx512,
    cmlc__gemv_dot_f32_avx512,
    cmlc__gemm_pack_bt_f32_avx512,
    cmlc__gemm_pack_a_f32_avx512_12,
    cmlc__gemm_widen_f16_f16c,
    cmlc__gemm_ukernel_f32_avx512_16x16,
    13,
    {{cmlc__gemm_bt_f32_avx2_6x16, 6, 16}, {cmlc__gemm_bt_f32_avx2_12x8, 12, 8}, {NULL, 0, 0}},
    cmlc__gemm_direct_f32_avx512_14x32,
    14,
    cmlc__gemv_axpy_h_avx512,
    CMLC_GEMM_HALF_M,
    cmlc__gemv_axpy_rows_f32_avx512,
    cmlc__gemv_dot_h_avx512,
    cmlc_gemm_tiny_fma_f32};
static const cmlc_kernel_t_f32 cmlc_kern_avx2_f32 = {
    6,
    16,
    cmlc__gemm_ukernel_f32_avx2_6x16,
    cmlc__gemv_axpy_f32_avx2,
    cmlc__gemv_dot_f32_avx2,
    NULL,
    NULL,
    cmlc__gemm_widen_f16_f16c,
    NULL,
    0,
    {{cmlc__gemm_bt_f32_avx2_6x16, 6, 16}, {cmlc__gemm_bt_f32_avx2_12x8, 12, 8}, {NULL, 0, 0}},
    NULL,
    0,
    cmlc__gemv_axpy_h_avx2,
    CMLC_GEMM_HALF_M,
    cmlc__gemv_axpy_rows_f32_avx2,
    cmlc__gemv_dot_h_avx2,
    cmlc_gemm_tiny_fma_f32};
#endif
static const cmlc_kernel_t_f32 cmlc_kern_scalar_f32 = {4,
                                                       8,
                                                       cmlc_ukernel_scalar_4x8_f32,
                                                       cmlc_gemv_axpy_scalar_f32,
                                                       cmlc_gemv_dot_scalar_f32,
                                                       NULL,
                                                       NULL,
                                                       cmlc_widen_f16,
                                                       NULL,
                                                       0,
                                                       {{NULL, 0, 0}},
                                                       NULL,
                                                       0,
                                                       cmlc_gemv_axpy_h_scalar,
                                                       1,
                                                       NULL,
                                                       NULL,
                                                       cmlc_gemm_tiny_scalar_f32};

int64_t cmlc__gemm_row_block(int64_t m, int64_t mr, int64_t mc, int threads) {
  if (threads < 2 || mr < 1 || mc < mr || m <= 0) return mc;
  const int64_t t = threads;
  // Rows on the busiest thread with blocks of |h| rows: rounds of |t| blocks, times |h|.
#define CMLC_GEMM_ROUNDS_ROWS(h) ((((m + (h)-1) / (h)) + t - 1) / t * (h))
  const int64_t want_blocks = 4 * t;
  int64_t lo = ((m + want_blocks - 1) / want_blocks + mr - 1) / mr * mr;
  if (lo < 4 * mr) lo = 4 * mr;
  int64_t best = mc, best_cost = CMLC_GEMM_ROUNDS_ROWS(mc);
  if (lo < mc) {
    // 416 rows on 2 threads: 60-row blocks make 7 tasks, 4 rounds of 60 = 240 rows on one
    // thread while the other idles for one; 72-row blocks make 6 tasks, 3 rounds = 216. The
    // lowest on a tie: more tasks absorb a preempted thread.
    best_cost = INT64_MAX;
    for (int64_t h = lo; h <= mc; h += mr) {
      if (h > lo && (m + h - 1) / h < 2 * t) break;
      const int64_t cost = CMLC_GEMM_ROUNDS_ROWS(h);
      if (cost < best_cost) best = h, best_cost = cost;
    }
  }
  // Many rows: blocks down to half the default height when they balance strictly better
  // (1536 rows on 2 threads at the default 144: 11 blocks, 6 rounds = 864 rows on one thread;
  // 96-row blocks: 16 blocks, 8 rounds = 768, an even split).
  const int64_t floor_h = (mc / 2 + mr - 1) / mr * mr;
  for (int64_t h = (lo < best ? lo : best) - mr; h >= floor_h && h >= mr; h -= mr) {
    const int64_t cost = CMLC_GEMM_ROUNDS_ROWS(h);
    if (cost < best_cost) best = h, best_cost = cost;
  }
#undef CMLC_GEMM_ROUNDS_ROWS
  return best;
}

static const cmlc_kernel_t_f32* cmlc_select_f32(cmlc_isa_t isa) {
#if defined(CMLC_HAVE_X86_64)
  if (isa == CMLC_ISA_AVX512) return &cmlc_kern_avx512_f32;
  if (isa == CMLC_ISA_AVX2) return &cmlc_kern_avx2_f32;
#else
  (void)isa;
#endif
  return &cmlc_kern_scalar_f32;
}

typedef void (*cmlc_widen_fn_f64)(const uint16_t* src, double* dst, int64_t n);
typedef struct cmlc_kernel_t_f64 {
  int mr, nr;
  cmlc__gemm_ukernel_f64_fn fn;
  cmlc__gemv_axpy_f64_fn axpy;
  cmlc__gemv_dot_f64_fn dot;
  void (*pack_bt)(const double* src, int64_t ld, int64_t kc, double* sliver);  // NULL
  void (*pack_a)(const double* const* rows, int64_t kc, double* sliver);       // NULL
  cmlc_widen_fn_f64 widen_f16;         // NULL: the f64 GEMM converts half operands one by one
  cmlc__gemm_ukernel_f64_fn skinny16;  // NULL
  int skinny_min;
  cmlc_bt_t_f64 bt[CMLC_GEMM_BT_KINDS];  // none
  void (*direct_a)(int64_t kc, const double* a, int64_t lda, const double* b, int64_t ldb,
                   double* c, int64_t ldc, int accumulate, int rows, int cols);  // NULL
  int direct_mr;
  cmlc_gemm_tiny_fn_f64 tiny;  // NULL
} cmlc_kernel_t_f64;

// f64 GEMV: the axpy form's scalar loop vectorizes; the dot form has an AVX2 kernel (one
// serial chain of adds per output was latency-bound).
#if defined(CMLC_HAVE_X86_64)
static const cmlc_kernel_t_f64 cmlc_kern_avx512_f64 = {12,
                                                       16,
                                                       cmlc__gemm_ukernel_f64_avx512_12x16,
                                                       cmlc_gemv_axpy_scalar_f64,
                                                       cmlc__gemv_dot_f64_avx2,
                                                       NULL,
                                                       NULL,
                                                       NULL,
                                                       NULL,
                                                       0,
                                                       {{NULL, 0, 0}},
                                                       NULL,
                                                       0,
                                                       NULL};
static const cmlc_kernel_t_f64 cmlc_kern_avx2_f64 = {6,
                                                     8,
                                                     cmlc__gemm_ukernel_f64_avx2_6x8,
                                                     cmlc_gemv_axpy_scalar_f64,
                                                     cmlc__gemv_dot_f64_avx2,
                                                     NULL,
                                                     NULL,
                                                     NULL,
                                                     NULL,
                                                     0,
                                                     {{NULL, 0, 0}},
                                                     NULL,
                                                     0,
                                                     NULL};
#endif
static const cmlc_kernel_t_f64 cmlc_kern_scalar_f64 = {4,
                                                       8,
                                                       cmlc_ukernel_scalar_4x8_f64,
                                                       cmlc_gemv_axpy_scalar_f64,
                                                       cmlc_gemv_dot_scalar_f64,
                                                       NULL,
                                                       NULL,
                                                       NULL,
                                                       NULL,
                                                       0,
                                                       {{NULL, 0, 0}},
                                                       NULL,
                                                       0,
                                                       NULL};

static const cmlc_kernel_t_f64* cmlc_select_f64(cmlc_isa_t isa) {
#if defined(CMLC_HAVE_X86_64)
  if (isa == CMLC_ISA_AVX512) return &cmlc_kern_avx512_f64;
  if (isa == CMLC_ISA_AVX2) return &cmlc_kern_avx2_f64;
#else
  (void)isa;
#endif
  return &cmlc_kern_scalar_f64;
}

//===--- half operands and outputs ---===//

static void cmlc_widen_bf16(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t u = (uint32_t)src[i] << 16;
    memcpy(dst + i, &u, sizeof u);
  }
}

static void cmlc_widen_f16(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = cml__f16_to_f32(src[i]);
}

// Contiguous runs of a half operand widen in bulk while packing (F16C for f16 with a SIMD ISA).
typedef cmlc__gemm_widen_fn cmlc_widen_fn_f32;
static cmlc_widen_fn_f32 cmlc_select_widen_f32(const cmlc_kernel_t_f32* kern, cml_dtype_t dtype) {
  if (dtype == CML_DTYPE_BF16) return cmlc_widen_bf16;
  return dtype == CML_DTYPE_F16 ? kern->widen_f16 : NULL;
}

// The f64 GEMM converts half operands element by element.
static cmlc_widen_fn_f64 cmlc_select_widen_f64(const cmlc_kernel_t_f64* kern, cml_dtype_t dtype) {
  return dtype == CML_DTYPE_F16 ? kern->widen_f16 : NULL;
}

// Nearest even on the bits; NaN -> sign | 0x7FC0 (cml_f64_to_bf16's quiet NaN).
static void cmlc_narrow_bf16(const float* src, uint16_t* d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t u;
    memcpy(&u, src + i, sizeof u);
    const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
    const uint32_t qnan = ((u >> 16) & 0x8000u) | 0x7FC0u;
    d[i] = (uint16_t)((u & 0x7FFFFFFFu) > 0x7F800000u ? qnan : rounded);
  }
}

static void cmlc_narrow_f16(const float* src, uint16_t* d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = cml__f32_to_f16(src[i]);
}

cmlc__gemm_narrow_fn cmlc__gemm_narrow_pick(cml_dtype_t dtype, cmlc_isa_t isa) {
  if (dtype == CML_DTYPE_BF16) return cmlc_narrow_bf16;
  if (dtype != CML_DTYPE_F16) return NULL;
#if defined(CMLC_HAVE_X86_64)
  if (isa == CMLC_ISA_AVX512 || isa == CMLC_ISA_AVX2) return cmlc__gemm_narrow_f16_f16c;
#else
  (void)isa;
#endif
  return cmlc_narrow_f16;
}

bool cmlc__gemm_narrow_f32(const float* src, void* dst, cml_dtype_t dtype, int64_t n,
                           cmlc_isa_t isa) {
  cmlc__gemm_narrow_fn fn = cmlc__gemm_narrow_pick(dtype, isa);
  if (!fn) return false;
  fn(src, dst, n);
  return true;
}

//===--- tiny products of fixed sizes ---===//

// Batches [begin, end) of a tiny product whose sizes are compile-time constants: the FMA ISAs'
// arithmetic of cmlc_gemm_tiny_fma_f32 (each output a fused multiply-add chain from +0 in k
// order: the same bits) unrolled whole, the batch loop inside (a call per batch and the masked
// 8-lane rows cost 140 cycles a 3 x 3 product: 65536 of them took 2.4 ms).
typedef void (*cmlc_gemm_tiny_batch_fn_f32)(const float* a, const int64_t* a_batch, int64_t ars,
                                            int64_t acs, const float* b, const int64_t* b_batch,
                                            int64_t brs, float* c, int64_t begin, int64_t end);
typedef void (*cmlc_gemm_tiny_batch_fn_f64)(const double* a, const int64_t* a_batch, int64_t ars,
                                            int64_t acs, const double* b, const int64_t* b_batch,
                                            int64_t brs, double* c, int64_t begin, int64_t end);

#if defined(CMLC_HAVE_X86_64)
#define CMLC_GEMM_TINY_BODY(M, N, K, ARS, ACS, BRS)                                  \
  for (int64_t t = begin; t < end; ++t) {                                            \
    const float* at = a + a_batch[t];                                                \
    const float* bt = b + b_batch[t];                                                \
    float* ct = c + t * ((M) * (N));                                                 \
    for (int i = 0; i < (M); ++i) {                                                  \
      for (int j = 0; j < (N); ++j) {                                                \
        float acc = 0.0f;                                                            \
        for (int kk = 0; kk < (K); ++kk) {                                           \
          acc = __builtin_fmaf(at[i * (ARS) + kk * (ACS)], bt[kk * (BRS) + j], acc); \
        }                                                                            \
        ct[i * (N) + j] = acc;                                                       \
      }                                                                              \
    }                                                                                \
  }
// (Row-major operands, the common layout, with every offset a constant.)
#define CMLC_GEMM_TINY_FIXED(M, N, K)                                                   \
  __attribute__((target("avx2,fma"))) static void cmlc_gemm_tiny_##M##x##N##x##K##_f32( \
      const float* a, const int64_t* a_batch, int64_t ars, int64_t acs, const float* b, \
      const int64_t* b_batch, int64_t brs, float* c, int64_t begin, int64_t end) {      \
    if (ars == (K) && acs == 1 && brs == (N)) {                                         \
      CMLC_GEMM_TINY_BODY(M, N, K, K, 1, N)                                             \
    } else {                                                                            \
      CMLC_GEMM_TINY_BODY(M, N, K, ars, acs, brs)                                       \
    }                                                                                   \
  }
// Square products (rotations, 2-D and 3-D transforms, quaternion algebra as 4 x 4), matrix
// times vector and vector times matrix, of 2, 3 and 4.
#define CMLC_GEMM_TINY_SIZES(X) \
  X(2, 2, 2) X(3, 3, 3) X(4, 4, 4) X(2, 1, 2) X(3, 1, 3) X(4, 1, 4) X(1, 2, 2) X(1, 3, 3) X(1, 4, 4)
CMLC_GEMM_TINY_SIZES(CMLC_GEMM_TINY_FIXED)
#undef CMLC_GEMM_TINY_FIXED
#undef CMLC_GEMM_TINY_BODY
#endif

// The fixed-size kernel for an m x n x k product with the kernels |tiny| (FMA ISAs only), or NULL.
static cmlc_gemm_tiny_batch_fn_f32 cmlc_tiny_fixed_f32(cmlc_gemm_tiny_fn_f32 tiny, int64_t m,
                                                       int64_t n, int64_t k) {
#if defined(CMLC_HAVE_X86_64)
  if (tiny != cmlc_gemm_tiny_fma_f32) return NULL;
#define CMLC_GEMM_TINY_PICK(M, N, K) \
  if (m == (M) && n == (N) && k == (K)) return cmlc_gemm_tiny_##M##x##N##x##K##_f32;
  CMLC_GEMM_TINY_SIZES(CMLC_GEMM_TINY_PICK)
#undef CMLC_GEMM_TINY_PICK
#undef CMLC_GEMM_TINY_SIZES
#else
  (void)tiny;
  (void)m;
  (void)n;
  (void)k;
#endif
  return NULL;
}
static cmlc_gemm_tiny_batch_fn_f64 cmlc_tiny_fixed_f64(cmlc_gemm_tiny_fn_f64 tiny, int64_t m,
                                                       int64_t n, int64_t k) {
  (void)tiny;
  (void)m;
  (void)n;
  (void)k;
  return NULL;
}

//===--- the driver, per element type ---===//

static inline double cmlc_gemm_load_f64(const void* data, int64_t i, cml_dtype_t dtype) {
  return cmlc_load_f64(data, i, dtype);
}

#define CMLC_GEMM_T float
#define CMLC_GEMM_SUFFIX f32
#define CMLC_GEMM_DTYPE CML_DTYPE_F32
#define CMLC_GEMM_HALF_GEMV 1
#define CMLC_GEMM_PROBLEM cmlc__gemm_problem_t
#define CMLC_GEMM_LOAD_CONV cmlc_load_f32
#define CMLC_GEMM_ENTRY cmlc__gemm_f32
#define CMLC_GEMM_ENTRY_SCRATCH cmlc__gemm_f32_scratch
#define CMLC_GEMM_ENTRY_PICK cmlc__gemm_f32_pick
#define CMLC_GEMM_ENTRY_PREPACK cmlc__gemm_f32_prepack
#define CMLC_GEMM_FN cmlc__gemm_f32_fn
#include "backends/c/kernels/generic/gemm_impl.h"

#define CMLC_GEMM_T double
#define CMLC_GEMM_SUFFIX f64
#define CMLC_GEMM_DTYPE CML_DTYPE_F64
#define CMLC_GEMM_HALF_GEMV 0
#define CMLC_GEMM_PROBLEM cmlc__gemm_f64_problem_t
#define CMLC_GEMM_LOAD_CONV cmlc_gemm_load_f64
#define CMLC_GEMM_ENTRY cmlc__gemm_f64
#define CMLC_GEMM_ENTRY_SCRATCH cmlc__gemm_f64_scratch
#define CMLC_GEMM_ENTRY_PICK cmlc__gemm_f64_pick
#define CMLC_GEMM_ENTRY_PREPACK cmlc__gemm_f64_prepack
#define CMLC_GEMM_FN cmlc__gemm_f64_fn
#include "backends/c/kernels/generic/gemm_impl.h"
