// SPDX-License-Identifier: Apache-2.0
// kernels/x86_64/gemm_x86_64_avx512.c: AVX-512F f32 GEMM micro-kernel (12 x 32 tile: twenty-four
// zmm accumulators, two B vectors and twelve broadcast A values per k step; FMA latency 4 at
// two per cycle needs at least 8 independent chains; tiles of at most 4 or 8 rows skip the
// absent rows' FMAs). Compiled for the target with function attributes,
// so the file needs no global -m flags; only called when options->isa is AVX512.
//
// Edges: the columns of a partial tile are loaded and stored with masks (masked-off lanes are
// neither read nor written, so b may end anywhere), and only |rows| rows of C are stored. A full
// tile and a masked one run the same arithmetic, so a tile's values do not depend on its place.
#include "backends/c/kernels/generic/linalg_internal.h"

#if defined(CMLC_HAVE_X86_64)
#include <immintrin.h>

#define CMLC_AVX512_TARGET __attribute__((target("avx512f")))

// Rows at or past |live| (a compile-time constant in each instantiation) are not computed.
// With |direct| (also a constant), A is read in place: row i at ar[i], k contiguous.
#define CMLC_AVX512_ROW(r, i)                                \
  do {                                                       \
    if ((i) < live) {                                        \
      __m512 av_ = _mm512_set1_ps(direct ? ar[i][k] : a[i]); \
      acc##r##0 = _mm512_fmadd_ps(av_, b0, acc##r##0);       \
      acc##r##1 = _mm512_fmadd_ps(av_, b1, acc##r##1);       \
    }                                                        \
  } while (0)

// Row i of the tile (accumulators acc<r>0 / acc<r>1): stored when live and below |rows|.
#define CMLC_AVX512_STORE(r, i)                                                    \
  do {                                                                             \
    if ((i) < live && (i) < rows) {                                                \
      float* cr_ = c + (int64_t)(i)*ldc;                                           \
      if (accumulate) {                                                            \
        acc##r##0 = _mm512_add_ps(_mm512_maskz_loadu_ps(m0, cr_), acc##r##0);      \
        acc##r##1 = _mm512_add_ps(_mm512_maskz_loadu_ps(m1, cr_ + 16), acc##r##1); \
      }                                                                            \
      _mm512_mask_storeu_ps(cr_, m0, acc##r##0);                                   \
      _mm512_mask_storeu_ps(cr_ + 16, m1, acc##r##1);                              \
    }                                                                              \
  } while (0)

// The k loop, specialized for full (masked == 0) and partial column counts, and for the number
// of rows computed (|live|: 4, 8 or 12, or 14 when direct; at least |rows|; a packed A sliver
// keeps its 12-row stride).
// Skipping dead rows changes no live row's arithmetic.
// |direct| (a constant): A is not a packed sliver but rows |lda| apart, k contiguous (rows past
// |rows| read the last row again; their sums are never stored).
static inline __attribute__((always_inline)) CMLC_AVX512_TARGET void cmlc_avx512_12x32_body(
    int64_t kc, const float* a, const float* b, int64_t ldb, float* c, int64_t ldc, int accumulate,
    int rows, __mmask16 m0, __mmask16 m1, const int masked, const int live, const int direct,
    int64_t lda) {
  // Direct tiles have up to 14 rows (28 accumulators, two B vectors and the broadcast: 31 of
  // the 32 registers); a packed sliver has 12 (|live| <= 12 leaves rows 12 and 13 out).
  const float* ar[14];
  if (direct)
    for (int i = 0; i < 14; ++i) ar[i] = a + (int64_t)(i < rows ? i : rows - 1) * lda;
  __m512 acc00 = _mm512_setzero_ps(), acc01 = _mm512_setzero_ps();
  __m512 acc10 = _mm512_setzero_ps(), acc11 = _mm512_setzero_ps();
  __m512 acc20 = _mm512_setzero_ps(), acc21 = _mm512_setzero_ps();
  __m512 acc30 = _mm512_setzero_ps(), acc31 = _mm512_setzero_ps();
  __m512 acc40 = _mm512_setzero_ps(), acc41 = _mm512_setzero_ps();
  __m512 acc50 = _mm512_setzero_ps(), acc51 = _mm512_setzero_ps();
  __m512 acc60 = _mm512_setzero_ps(), acc61 = _mm512_setzero_ps();
  __m512 acc70 = _mm512_setzero_ps(), acc71 = _mm512_setzero_ps();
  __m512 acc80 = _mm512_setzero_ps(), acc81 = _mm512_setzero_ps();
  __m512 acc90 = _mm512_setzero_ps(), acc91 = _mm512_setzero_ps();
  __m512 accA0 = _mm512_setzero_ps(), accA1 = _mm512_setzero_ps();
  __m512 accB0 = _mm512_setzero_ps(), accB1 = _mm512_setzero_ps();
  __m512 accC0 = _mm512_setzero_ps(), accC1 = _mm512_setzero_ps();
  __m512 accD0 = _mm512_setzero_ps(), accD1 = _mm512_setzero_ps();
  // Fetch the C tile while the k loop runs: it is read (accumulate) or written at the end.
  for (int r = 0; r < rows; ++r) {
    _mm_prefetch((const char*)(c + (int64_t)r * ldc), _MM_HINT_T0);
    _mm_prefetch((const char*)(c + (int64_t)r * ldc + 31), _MM_HINT_T0);
  }
  for (int64_t k = 0; k < kc; ++k) {
    __m512 b0, b1;
    if (masked) {
      b0 = _mm512_maskz_loadu_ps(m0, b);
      b1 = _mm512_maskz_loadu_ps(m1, b + 16);
    } else {
      b0 = _mm512_loadu_ps(b);
      b1 = _mm512_loadu_ps(b + 16);
    }
    CMLC_AVX512_ROW(0, 0);
    CMLC_AVX512_ROW(1, 1);
    CMLC_AVX512_ROW(2, 2);
    CMLC_AVX512_ROW(3, 3);
    CMLC_AVX512_ROW(4, 4);
    CMLC_AVX512_ROW(5, 5);
    CMLC_AVX512_ROW(6, 6);
    CMLC_AVX512_ROW(7, 7);
    CMLC_AVX512_ROW(8, 8);
    CMLC_AVX512_ROW(9, 9);
    CMLC_AVX512_ROW(A, 10);
    CMLC_AVX512_ROW(B, 11);
    CMLC_AVX512_ROW(C, 12);
    CMLC_AVX512_ROW(D, 13);
    if (!direct) a += 12;
    b += ldb;
  }
  CMLC_AVX512_STORE(0, 0);
  CMLC_AVX512_STORE(1, 1);
  CMLC_AVX512_STORE(2, 2);
  CMLC_AVX512_STORE(3, 3);
  CMLC_AVX512_STORE(4, 4);
  CMLC_AVX512_STORE(5, 5);
  CMLC_AVX512_STORE(6, 6);
  CMLC_AVX512_STORE(7, 7);
  CMLC_AVX512_STORE(8, 8);
  CMLC_AVX512_STORE(9, 9);
  CMLC_AVX512_STORE(A, 10);
  CMLC_AVX512_STORE(B, 11);
  CMLC_AVX512_STORE(C, 12);
  CMLC_AVX512_STORE(D, 13);
}

static __mmask16 cmlc_avx512_mask(int count) {
  if (count >= 16) return (__mmask16)0xFFFF;
  if (count <= 0) return 0;
  return (__mmask16)((1u << count) - 1u);
}

// One tile: the body specialized for full or masked columns and for the rows computed (4, 8,
// 12, and 14 when |direct|, a constant). Short tiles (the last rows of a product, skinny
// products) skip the FMAs of absent rows.
#define CMLC_AVX512_TILE_ROWS(masked)                                                             \
  do {                                                                                            \
    if (direct && rows > 12) {                                                                    \
      cmlc_avx512_12x32_body(kc, a, b, ldb, c, ldc, accumulate, rows, m0, m1, masked, 14, direct, \
                             lda);                                                                \
    } else if (rows > 8) {                                                                        \
      cmlc_avx512_12x32_body(kc, a, b, ldb, c, ldc, accumulate, rows, m0, m1, masked, 12, direct, \
                             lda);                                                                \
    } else if (rows > 4) {                                                                        \
      cmlc_avx512_12x32_body(kc, a, b, ldb, c, ldc, accumulate, rows, m0, m1, masked, 8, direct,  \
                             lda);                                                                \
    } else {                                                                                      \
      cmlc_avx512_12x32_body(kc, a, b, ldb, c, ldc, accumulate, rows, m0, m1, masked, 4, direct,  \
                             lda);                                                                \
    }                                                                                             \
  } while (0)

static inline __attribute__((always_inline)) CMLC_AVX512_TARGET void cmlc_avx512_12x32_tile(
    int64_t kc, const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
    int accumulate, int rows, int cols, const int direct) {
  __mmask16 m0 = cmlc_avx512_mask(cols), m1 = cmlc_avx512_mask(cols - 16);
  if (cols >= 32) {
    CMLC_AVX512_TILE_ROWS(0);
  } else {
    CMLC_AVX512_TILE_ROWS(1);
  }
}

CMLC_AVX512_TARGET void cmlc__gemm_ukernel_f32_avx512_12x32(int64_t kc, const float* a,
                                                            const float* b, int64_t ldb, float* c,
                                                            int64_t ldc, int accumulate, int rows,
                                                            int cols) {
  cmlc_avx512_12x32_tile(kc, a, 0, b, ldb, c, ldc, accumulate, rows, cols, 0);
}

// The same tile with A read in place (rows |lda| apart, k contiguous) and up to 14 rows: small
// products whose A is in L1 skip packing it. Each output's arithmetic is the packed kernel's, so
// the bits are the same.
CMLC_AVX512_TARGET void cmlc__gemm_direct_f32_avx512_14x32(int64_t kc, const float* a, int64_t lda,
                                                           const float* b, int64_t ldb, float* c,
                                                           int64_t ldc, int accumulate, int rows,
                                                           int cols) {
  cmlc_avx512_12x32_tile(kc, a, lda, b, ldb, c, ldc, accumulate, rows, cols, 1);
}

//===--- 16 x 16, B read in place (skinny products) ---===//

// One row of the 16 x 16 tile: a broadcast A value times the B vector.
#define CMLC_AVX512_ROW16(r)                                                    \
  do {                                                                          \
    if ((r) < live) acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(a[r]), bv, acc[r]); \
  } while (0)

// B rows fetched ahead into L2 (rows a power of two apart share a few cache sets; 64 rows of a
// 16 KiB stride fit in a 1 MiB 8-way L2).
enum { CMLC_AVX512_SKINNY_AHEAD = 40 };

// The k loop of the 16 x 16 tile: |live| (4, 8, 12 or 16, at least |rows|) rows computed,
// |masked| for partial column counts. Each output starts from zero, adds its k terms in order
// with one fused multiply-add each, and adds C at the end when |accumulate|: the arithmetic of
// the 12 x 32 kernel, so both give the same bits for an output.
static inline __attribute__((always_inline)) CMLC_AVX512_TARGET void cmlc_avx512_16x16_body(
    int64_t kc, const float* a, const float* b, int64_t ldb, float* c, int64_t ldc, int accumulate,
    int rows, __mmask16 m0, const int masked, const int live) {
  __m512 acc[16];
  for (int r = 0; r < 16; ++r) acc[r] = _mm512_setzero_ps();
  for (int r = 0; r < rows; ++r) _mm_prefetch((const char*)(c + (int64_t)r * ldc), _MM_HINT_T0);
  for (int64_t k = 0; k < kc; ++k) {
    if (k + CMLC_AVX512_SKINNY_AHEAD < kc)
      _mm_prefetch((const char*)(b + CMLC_AVX512_SKINNY_AHEAD * ldb), _MM_HINT_T1);
    const __m512 bv = masked ? _mm512_maskz_loadu_ps(m0, b) : _mm512_loadu_ps(b);
    CMLC_AVX512_ROW16(0);
    CMLC_AVX512_ROW16(1);
    CMLC_AVX512_ROW16(2);
    CMLC_AVX512_ROW16(3);
    CMLC_AVX512_ROW16(4);
    CMLC_AVX512_ROW16(5);
    CMLC_AVX512_ROW16(6);
    CMLC_AVX512_ROW16(7);
    CMLC_AVX512_ROW16(8);
    CMLC_AVX512_ROW16(9);
    CMLC_AVX512_ROW16(10);
    CMLC_AVX512_ROW16(11);
    CMLC_AVX512_ROW16(12);
    CMLC_AVX512_ROW16(13);
    CMLC_AVX512_ROW16(14);
    CMLC_AVX512_ROW16(15);
    a += 16;
    b += ldb;
  }
  for (int r = 0; r < rows; ++r) {
    float* cr = c + (int64_t)r * ldc;
    __m512 v = acc[r];
    if (accumulate) v = _mm512_add_ps(_mm512_maskz_loadu_ps(m0, cr), v);
    _mm512_mask_storeu_ps(cr, m0, v);
  }
}

CMLC_AVX512_TARGET void cmlc__gemm_ukernel_f32_avx512_16x16(int64_t kc, const float* a,
                                                            const float* b, int64_t ldb, float* c,
                                                            int64_t ldc, int accumulate, int rows,
                                                            int cols) {
  const __mmask16 m0 = cmlc_avx512_mask(cols);
  const int masked = cols < 16;
  if (rows > 12) {
    if (masked)
      cmlc_avx512_16x16_body(kc, a, b, ldb, c, ldc, accumulate, rows, m0, 1, 16);
    else
      cmlc_avx512_16x16_body(kc, a, b, ldb, c, ldc, accumulate, rows, m0, 0, 16);
  } else if (rows > 8) {
    cmlc_avx512_16x16_body(kc, a, b, ldb, c, ldc, accumulate, rows, m0, masked, 12);
  } else if (rows > 4) {
    cmlc_avx512_16x16_body(kc, a, b, ldb, c, ldc, accumulate, rows, m0, masked, 8);
  } else {
    cmlc_avx512_16x16_body(kc, a, b, ldb, c, ldc, accumulate, rows, m0, masked, 4);
  }
}

//===--- f64 ---===//

#define CMLC_AVX512D_ROW(r, av_src)                  \
  do {                                               \
    __m512d av_ = _mm512_set1_pd(av_src);            \
    acc##r##0 = _mm512_fmadd_pd(av_, b0, acc##r##0); \
    acc##r##1 = _mm512_fmadd_pd(av_, b1, acc##r##1); \
  } while (0)

#define CMLC_AVX512D_STORE(r)                                                     \
  do {                                                                            \
    if ((r) < rows) {                                                             \
      double* cr_ = c + (int64_t)(r)*ldc;                                         \
      if (accumulate) {                                                           \
        acc##r##0 = _mm512_add_pd(_mm512_maskz_loadu_pd(m0, cr_), acc##r##0);     \
        acc##r##1 = _mm512_add_pd(_mm512_maskz_loadu_pd(m1, cr_ + 8), acc##r##1); \
      }                                                                           \
      _mm512_mask_storeu_pd(cr_, m0, acc##r##0);                                  \
      _mm512_mask_storeu_pd(cr_ + 8, m1, acc##r##1);                              \
    }                                                                             \
  } while (0)

// The f64 12 x 16 tile (eight doubles per zmm): same structure as the f32 kernel above.
static inline __attribute__((always_inline)) CMLC_AVX512_TARGET void cmlc_avx512_12x16_f64_body(
    int64_t kc, const double* a, const double* b, int64_t ldb, double* c, int64_t ldc,
    int accumulate, int rows, __mmask8 m0, __mmask8 m1, const int masked) {
  __m512d acc00 = _mm512_setzero_pd(), acc01 = _mm512_setzero_pd();
  __m512d acc10 = _mm512_setzero_pd(), acc11 = _mm512_setzero_pd();
  __m512d acc20 = _mm512_setzero_pd(), acc21 = _mm512_setzero_pd();
  __m512d acc30 = _mm512_setzero_pd(), acc31 = _mm512_setzero_pd();
  __m512d acc40 = _mm512_setzero_pd(), acc41 = _mm512_setzero_pd();
  __m512d acc50 = _mm512_setzero_pd(), acc51 = _mm512_setzero_pd();
  __m512d acc60 = _mm512_setzero_pd(), acc61 = _mm512_setzero_pd();
  __m512d acc70 = _mm512_setzero_pd(), acc71 = _mm512_setzero_pd();
  __m512d acc80 = _mm512_setzero_pd(), acc81 = _mm512_setzero_pd();
  __m512d acc90 = _mm512_setzero_pd(), acc91 = _mm512_setzero_pd();
  __m512d accA0 = _mm512_setzero_pd(), accA1 = _mm512_setzero_pd();
  __m512d accB0 = _mm512_setzero_pd(), accB1 = _mm512_setzero_pd();
  // Fetch the C tile while the k loop runs: it is read (accumulate) or written at the end.
  for (int r = 0; r < rows; ++r) {
    _mm_prefetch((const char*)(c + (int64_t)r * ldc), _MM_HINT_T0);
    _mm_prefetch((const char*)(c + (int64_t)r * ldc + 15), _MM_HINT_T0);
  }
  for (int64_t k = 0; k < kc; ++k) {
    __m512d b0, b1;
    if (masked) {
      b0 = _mm512_maskz_loadu_pd(m0, b);
      b1 = _mm512_maskz_loadu_pd(m1, b + 8);
    } else {
      b0 = _mm512_loadu_pd(b);
      b1 = _mm512_loadu_pd(b + 8);
    }
    CMLC_AVX512D_ROW(0, a[0]);
    CMLC_AVX512D_ROW(1, a[1]);
    CMLC_AVX512D_ROW(2, a[2]);
    CMLC_AVX512D_ROW(3, a[3]);
    CMLC_AVX512D_ROW(4, a[4]);
    CMLC_AVX512D_ROW(5, a[5]);
    CMLC_AVX512D_ROW(6, a[6]);
    CMLC_AVX512D_ROW(7, a[7]);
    CMLC_AVX512D_ROW(8, a[8]);
    CMLC_AVX512D_ROW(9, a[9]);
    CMLC_AVX512D_ROW(A, a[10]);
    CMLC_AVX512D_ROW(B, a[11]);
    a += 12;
    b += ldb;
  }
  CMLC_AVX512D_STORE(0);
  CMLC_AVX512D_STORE(1);
  CMLC_AVX512D_STORE(2);
  CMLC_AVX512D_STORE(3);
  CMLC_AVX512D_STORE(4);
  CMLC_AVX512D_STORE(5);
  CMLC_AVX512D_STORE(6);
  CMLC_AVX512D_STORE(7);
  CMLC_AVX512D_STORE(8);
  CMLC_AVX512D_STORE(9);
  // Rows 10 and 11 use the accA* / accB* names (the row macro pastes one token).
  if (10 < rows) {
    double* cr = c + 10 * ldc;
    if (accumulate) {
      accA0 = _mm512_add_pd(_mm512_maskz_loadu_pd(m0, cr), accA0);
      accA1 = _mm512_add_pd(_mm512_maskz_loadu_pd(m1, cr + 8), accA1);
    }
    _mm512_mask_storeu_pd(cr, m0, accA0);
    _mm512_mask_storeu_pd(cr + 8, m1, accA1);
  }
  if (11 < rows) {
    double* cr = c + 11 * ldc;
    if (accumulate) {
      accB0 = _mm512_add_pd(_mm512_maskz_loadu_pd(m0, cr), accB0);
      accB1 = _mm512_add_pd(_mm512_maskz_loadu_pd(m1, cr + 8), accB1);
    }
    _mm512_mask_storeu_pd(cr, m0, accB0);
    _mm512_mask_storeu_pd(cr + 8, m1, accB1);
  }
}

static __mmask8 cmlc_avx512_mask8(int count) {
  if (count >= 8) return (__mmask8)0xFF;
  if (count <= 0) return 0;
  return (__mmask8)((1u << count) - 1u);
}

CMLC_AVX512_TARGET void cmlc__gemm_ukernel_f64_avx512_12x16(int64_t kc, const double* a,
                                                            const double* b, int64_t ldb, double* c,
                                                            int64_t ldc, int accumulate, int rows,
                                                            int cols) {
  __mmask8 m0 = cmlc_avx512_mask8(cols), m1 = cmlc_avx512_mask8(cols - 8);
  if (cols >= 16) {
    cmlc_avx512_12x16_f64_body(kc, a, b, ldb, c, ldc, accumulate, rows, m0, m1, 0);
  } else {
    cmlc_avx512_12x16_f64_body(kc, a, b, ldb, c, ldc, accumulate, rows, m0, m1, 1);
  }
}

// The GEMV kernels are in gemm_x86_64_gemv.c.

//===--- packing ---===//

// Transposes 16 rows of 16 floats (row j at src + j * ld) into out[k * ldo + j]: 32-bit and
// 64-bit interleaves within 128-bit lanes, then a 4 x 4 transpose of the lanes.
// (Row j is read from rows[j] when |rows| is not NULL; only the lanes of |store| are written.)
static inline __attribute__((always_inline)) CMLC_AVX512_TARGET void cmlc_avx512_transpose16(
    const float* src, int64_t ld, const float* const* rows, float* out, int64_t ldo,
    __mmask16 store) {
  __m512 r[16], t[16], u[16];
  for (int j = 0; j < 16; ++j) r[j] = _mm512_loadu_ps(rows ? rows[j] : src + j * ld);
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  // u[4i + e], lane L: rows 4i..4i+3 at k = 4L + e.
  for (int i = 0; i < 4; ++i) {
    u[4 * i + 0] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    u[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
    u[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    u[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  for (int e = 0; e < 4; ++e) {
    const __m512 v0 = _mm512_shuffle_f32x4(u[e], u[4 + e], 0x44);
    const __m512 v1 = _mm512_shuffle_f32x4(u[e], u[4 + e], 0xEE);
    const __m512 v2 = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], 0x44);
    const __m512 v3 = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], 0xEE);
    _mm512_mask_storeu_ps(out + (0 + e) * ldo, store, _mm512_shuffle_f32x4(v0, v2, 0x88));
    _mm512_mask_storeu_ps(out + (4 + e) * ldo, store, _mm512_shuffle_f32x4(v0, v2, 0xDD));
    _mm512_mask_storeu_ps(out + (8 + e) * ldo, store, _mm512_shuffle_f32x4(v1, v3, 0x88));
    _mm512_mask_storeu_ps(out + (12 + e) * ldo, store, _mm512_shuffle_f32x4(v1, v3, 0xDD));
  }
}

// Packs a 32-column sliver of a transposed B (column j's k run at src + j * ld, kc values) into
// sliver[kk * 32 + j]: 16 x 16 register transposes, the last kc % 16 values one by one.
CMLC_AVX512_TARGET void cmlc__gemm_pack_bt_f32_avx512(const float* src, int64_t ld, int64_t kc,
                                                      float* sliver) {
  int64_t kk = 0;
  for (; kk + 16 <= kc; kk += 16) {
    cmlc_avx512_transpose16(src + kk, ld, NULL, sliver + kk * 32, 32, 0xFFFF);
    cmlc_avx512_transpose16(src + 16 * ld + kk, ld, NULL, sliver + kk * 32 + 16, 32, 0xFFFF);
  }
  for (; kk < kc; ++kk)
    for (int j = 0; j < 32; ++j) sliver[kk * 32 + j] = src[j * ld + kk];
}

// Transposes for the c backend's Transpose kernel (kernels/generic/movement.c).
CMLC_AVX512_TARGET void cmlc__transpose16_b32_avx512(const void* src, int64_t ld, void* dst,
                                                     int64_t ldo) {
  cmlc_avx512_transpose16((const float*)src, ld, NULL, (float*)dst, ldo, 0xFFFF);
}

CMLC_AVX512_TARGET void cmlc__transpose_b16_avx512(const uint16_t* src, int64_t ld, uint16_t* dst,
                                                   int64_t ldo) {
  // Rows 2i and 2i + 1 of the source interleave into 16 words pairs (32-bit lanes): the 32-bit
  // transpose of those then puts each column's 32 values in order into one output row.
  _Alignas(64) uint32_t pairs[16 * 16];
  for (int i = 0; i < 16; ++i) {
    const __m512i lo =
        _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i*)(const void*)(src + 2 * i * ld)));
    const __m512i hi = _mm512_cvtepu16_epi32(
        _mm256_loadu_si256((const __m256i*)(const void*)(src + (2 * i + 1) * ld)));
    _mm512_store_si512((void*)(pairs + 16 * i), _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
  }
  cmlc_avx512_transpose16((const float*)(const void*)pairs, 16, NULL, (float*)(void*)dst, ldo / 2,
                          0xFFFF);
}

// Packs a 12-row sliver of a row-major A (row r's k run at rows[r]) into sliver[kk * 12 + r]:
// the same 16 x 16 transposes (the last row loaded four more times; only 12 lanes of each
// transposed row stored), the last kc % 16 values one by one.
CMLC_AVX512_TARGET void cmlc__gemm_pack_a_f32_avx512_12(const float* const* rows, int64_t kc,
                                                        float* sliver) {
  int64_t kk = 0;
  for (; kk + 16 <= kc; kk += 16) {
    const float* r16[16];
    for (int j = 0; j < 16; ++j) r16[j] = rows[j < 12 ? j : 11] + kk;
    cmlc_avx512_transpose16(NULL, 0, r16, sliver + kk * 12, 12, 0x0FFF);
  }
  for (; kk < kc; ++kk)
    for (int r = 0; r < 12; ++r) sliver[kk * 12 + r] = rows[r][kk];
}

#else
// Keeps the translation unit non-empty on other architectures.
typedef int cmlc_gemm_avx512_unused_t;
#endif
