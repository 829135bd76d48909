// SPDX-License-Identifier: Apache-2.0
// kernels/x86_64/gemm_x86_64_gemv.c: the f32 GEMV kernels (M == 1 or N == 1) for AVX-512 and
// AVX2: they stream the matrix from memory once and are bound by its read rate, not by FMAs.
//
// The matrix is read as four concurrent row streams (axpy form: four k rows of B, each a run of
// the outputs' columns; dot form: four weight rows, each a run of k). A row of 4096 floats is
// 16 KiB, and four such streams jump from page to page faster than the hardware prefetchers
// train, so while a group of four rows is read, the next group is prefetched into L2 at the same
// offset (prefetcht1; one group = 4 rows ahead): the measured stream rate rises from about 62-77%
// to 80-87% of a plain sequential read of the same machine (bench/README.md, "f32 GEMV").
//
// Half matrices (bf16 or f16, M == 1 with contiguous B rows: a bf16 model's x @ w in a decode
// step) stream in place in the _h axpy kernels: each run of B widens to f32 in registers
// (bf16: a 16-bit shift; f16: F16C), so the matrix is read once at half the bytes instead of
// being packed (converted and copied) first. The vector's values widen one by one.
//
// Arithmetic: each output sums its k terms in the order of the scalar contract in
// linalg_internal.h (axpy: one FMA per k row, in k order; dot: four lane-strided partial sums per
// row and a fixed reduction tree), identical to the one-row-at-a-time kernels these replace, so
// the result never depends on how the outputs are split over threads. Compiled with function
// target attributes; only called when options->isa is AVX512 (or AVX2 for the _avx2 kernels).
#include "backends/c/kernels/generic/linalg_internal.h"

#if defined(CMLC_HAVE_X86_64)
#include <immintrin.h>

#define CMLC_GEMV512_TARGET __attribute__((target("avx512f")))
#define CMLC_GEMV256_TARGET __attribute__((target("avx2,fma")))

// Rows of the next group are prefetched this many rows ahead (one group of four).
#define CMLC_GEMV_AHEAD 4

static inline __attribute__((always_inline)) CMLC_GEMV512_TARGET __mmask16
cmlc_gemv512_mask(int64_t count) {
  return count >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << count) - 1u);
}

// Prefetches the 64-byte line at |p| and the lines at the same offset 1..3 rows of |ld| bytes
// further into L2 (a prefetch never faults, so rows past the matrix's end are harmless).
static inline __attribute__((always_inline)) void cmlc_gemv_prefetch4(const char* p, int64_t ld) {
  _mm_prefetch(p, _MM_HINT_T1);
  _mm_prefetch(p + ld, _MM_HINT_T1);
  _mm_prefetch(p + 2 * ld, _MM_HINT_T1);
  _mm_prefetch(p + 3 * ld, _MM_HINT_T1);
}

//===--- AVX-512 ---===//

// c[j] = sum_k a[k * a_stride] * b[k * ldb + j]: four k rows per pass over the outputs (in L1),
// one chained FMA per row, the next four rows prefetched into L2 at the same columns.
CMLC_GEMV512_TARGET void cmlc__gemv_axpy_f32_avx512(int64_t k, const float* a, int64_t a_stride,
                                                    const float* b, int64_t ldb, float* c,
                                                    int64_t n) {
  for (int64_t j = 0; j < n; ++j) c[j] = 0.0f;
  const int64_t ldb_bytes = ldb * (int64_t)sizeof(float);
  int64_t kk = 0;
  for (; kk + 4 <= k; kk += 4) {
    const __m512 a0 = _mm512_set1_ps(a[kk * a_stride]), a1 = _mm512_set1_ps(a[(kk + 1) * a_stride]);
    const __m512 a2 = _mm512_set1_ps(a[(kk + 2) * a_stride]);
    const __m512 a3 = _mm512_set1_ps(a[(kk + 3) * a_stride]);
    const float* b0 = b + kk * ldb;
    const float* b1 = b0 + ldb;
    const float* b2 = b1 + ldb;
    const float* b3 = b2 + ldb;
    const char* next = (const char*)(b0 + CMLC_GEMV_AHEAD * ldb);
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
      cmlc_gemv_prefetch4(next + j * (int64_t)sizeof(float), ldb_bytes);
      __m512 v = _mm512_loadu_ps(c + j);
      v = _mm512_fmadd_ps(a0, _mm512_loadu_ps(b0 + j), v);
      v = _mm512_fmadd_ps(a1, _mm512_loadu_ps(b1 + j), v);
      v = _mm512_fmadd_ps(a2, _mm512_loadu_ps(b2 + j), v);
      v = _mm512_fmadd_ps(a3, _mm512_loadu_ps(b3 + j), v);
      _mm512_storeu_ps(c + j, v);
    }
    if (j < n) {
      const __mmask16 m = cmlc_gemv512_mask(n - j);
      __m512 v = _mm512_maskz_loadu_ps(m, c + j);
      v = _mm512_fmadd_ps(a0, _mm512_maskz_loadu_ps(m, b0 + j), v);
      v = _mm512_fmadd_ps(a1, _mm512_maskz_loadu_ps(m, b1 + j), v);
      v = _mm512_fmadd_ps(a2, _mm512_maskz_loadu_ps(m, b2 + j), v);
      v = _mm512_fmadd_ps(a3, _mm512_maskz_loadu_ps(m, b3 + j), v);
      _mm512_mask_storeu_ps(c + j, m, v);
    }
  }
  for (; kk < k; ++kk) {
    const __m512 a0 = _mm512_set1_ps(a[kk * a_stride]);
    const float* b0 = b + kk * ldb;
    for (int64_t j = 0; j < n; j += 16) {
      const __mmask16 m = cmlc_gemv512_mask(n - j);
      __m512 v = _mm512_maskz_loadu_ps(m, c + j);
      v = _mm512_fmadd_ps(a0, _mm512_maskz_loadu_ps(m, b0 + j), v);
      _mm512_mask_storeu_ps(c + j, m, v);
    }
  }
}

//===--- AVX-512, half B ---===//

#define CMLC_GEMV512H_TARGET __attribute__((target("avx512f,avx512bw,avx512vl")))

// Rows of A one pass of the multi-row kernel takes (its outputs, rows x columns, stay in L1).
#define CMLC_GEMV_HALF_ROWS 16

// 16 bf16 (|f16| false) or f16 values widened to f32, exactly.
static inline __attribute__((always_inline)) CMLC_GEMV512H_TARGET __m512
cmlc_gemv512_widen(__m256i v, bool f16) {
  return f16 ? _mm512_cvtph_ps(v)
             : _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16));
}
static inline __attribute__((always_inline)) CMLC_GEMV512H_TARGET __m512
cmlc_gemv512_h(const uint16_t* p, bool f16) {
  return cmlc_gemv512_widen(_mm256_loadu_si256((const __m256i*)p), f16);
}
static inline __attribute__((always_inline)) CMLC_GEMV512H_TARGET __m512
cmlc_gemv512_h_mask(const uint16_t* p, __mmask16 m, bool f16) {
  return cmlc_gemv512_widen(_mm256_maskz_loadu_epi16(m, p), f16);
}

// The f32 axpy form's loop over a half B (32 columns, one line of each of four rows, a step):
// per output the same FMAs in the same order as cmlc__gemv_axpy_f32_avx512 on the widened
// values, so the result is the f32 GEMV's bit for bit. bf16: each 32-column group widens as
// its even columns (the low halves shifted up) and its odd ones (the high halves masked), two
// integer operations per 32 values instead of two widening moves and two shifts; the group's
// outputs are kept even columns first in |c| while k runs and interleaved back at the end.
static inline __attribute__((always_inline)) CMLC_GEMV512H_TARGET void cmlc_gemv512_axpy_h(
    int64_t k, const void* a, cml_dtype_t a_dtype, int64_t a_stride, const uint16_t* b, int64_t ldb,
    float* c, int64_t n, bool f16) {
  for (int64_t j = 0; j < n; ++j) c[j] = 0.0f;
  const int64_t ldb_bytes = ldb * (int64_t)sizeof(uint16_t);
  const int64_t n32 = n / 32 * 32;
  const __m512i hi_mask = _mm512_set1_epi32((int)0xFFFF0000u);
#define CMLC_GEMV512_EVEN(v) _mm512_castsi512_ps(_mm512_slli_epi32(v, 16))
#define CMLC_GEMV512_ODD(v) _mm512_castsi512_ps(_mm512_and_si512(v, hi_mask))
  int64_t kk = 0;
  // bf16: eight rows per pass over the outputs (half the output loads and stores per byte of B
  // of four rows; the order of each output's FMAs is unchanged).
  for (; !f16 && kk + 8 <= k; kk += 8) {
    __m512 av[8];
    for (int r = 0; r < 8; ++r)
      av[r] = _mm512_set1_ps(cmlc_load_f32(a, (kk + r) * a_stride, a_dtype));
    const uint16_t* b0 = b + kk * ldb;
    const char* next = (const char*)(b0 + 8 * ldb);
    int64_t j = 0;
    for (; j < n32; j += 32) {
      cmlc_gemv_prefetch4(next + j * (int64_t)sizeof(uint16_t), ldb_bytes);
      cmlc_gemv_prefetch4(next + 4 * ldb_bytes + j * (int64_t)sizeof(uint16_t), ldb_bytes);
      __m512 ev = _mm512_loadu_ps(c + j), od = _mm512_loadu_ps(c + j + 16);
#pragma GCC unroll 8
      for (int r = 0; r < 8; ++r) {
        const __m512i w = _mm512_loadu_si512((const void*)(b0 + r * ldb + j));
        ev = _mm512_fmadd_ps(av[r], CMLC_GEMV512_EVEN(w), ev);
        od = _mm512_fmadd_ps(av[r], CMLC_GEMV512_ODD(w), od);
      }
      _mm512_storeu_ps(c + j, ev);
      _mm512_storeu_ps(c + j + 16, od);
    }
    for (; j < n; j += 16) {
      const __mmask16 m = cmlc_gemv512_mask(n - j);
      __m512 v = _mm512_maskz_loadu_ps(m, c + j);
      for (int r = 0; r < 8; ++r)
        v = _mm512_fmadd_ps(av[r], cmlc_gemv512_h_mask(b0 + r * ldb + j, m, false), v);
      _mm512_mask_storeu_ps(c + j, m, v);
    }
  }
  for (; kk + 4 <= k; kk += 4) {
    const __m512 a0 = _mm512_set1_ps(cmlc_load_f32(a, kk * a_stride, a_dtype));
    const __m512 a1 = _mm512_set1_ps(cmlc_load_f32(a, (kk + 1) * a_stride, a_dtype));
    const __m512 a2 = _mm512_set1_ps(cmlc_load_f32(a, (kk + 2) * a_stride, a_dtype));
    const __m512 a3 = _mm512_set1_ps(cmlc_load_f32(a, (kk + 3) * a_stride, a_dtype));
    const uint16_t* b0 = b + kk * ldb;
    const uint16_t* b1 = b0 + ldb;
    const uint16_t* b2 = b1 + ldb;
    const uint16_t* b3 = b2 + ldb;
    const char* next = (const char*)(b0 + CMLC_GEMV_AHEAD * ldb);
    int64_t j = 0;
    for (; j < n32; j += 32) {
      cmlc_gemv_prefetch4(next + j * (int64_t)sizeof(uint16_t), ldb_bytes);
      if (f16) {
        for (int h = 0; h < 32; h += 16) {
          __m512 v = _mm512_loadu_ps(c + j + h);
          v = _mm512_fmadd_ps(a0, cmlc_gemv512_h(b0 + j + h, true), v);
          v = _mm512_fmadd_ps(a1, cmlc_gemv512_h(b1 + j + h, true), v);
          v = _mm512_fmadd_ps(a2, cmlc_gemv512_h(b2 + j + h, true), v);
          v = _mm512_fmadd_ps(a3, cmlc_gemv512_h(b3 + j + h, true), v);
          _mm512_storeu_ps(c + j + h, v);
        }
      } else {
        const __m512i w0 = _mm512_loadu_si512((const void*)(b0 + j));
        const __m512i w1 = _mm512_loadu_si512((const void*)(b1 + j));
        const __m512i w2 = _mm512_loadu_si512((const void*)(b2 + j));
        const __m512i w3 = _mm512_loadu_si512((const void*)(b3 + j));
        __m512 ev = _mm512_loadu_ps(c + j), od = _mm512_loadu_ps(c + j + 16);
        ev = _mm512_fmadd_ps(a0, CMLC_GEMV512_EVEN(w0), ev);
        od = _mm512_fmadd_ps(a0, CMLC_GEMV512_ODD(w0), od);
        ev = _mm512_fmadd_ps(a1, CMLC_GEMV512_EVEN(w1), ev);
        od = _mm512_fmadd_ps(a1, CMLC_GEMV512_ODD(w1), od);
        ev = _mm512_fmadd_ps(a2, CMLC_GEMV512_EVEN(w2), ev);
        od = _mm512_fmadd_ps(a2, CMLC_GEMV512_ODD(w2), od);
        ev = _mm512_fmadd_ps(a3, CMLC_GEMV512_EVEN(w3), ev);
        od = _mm512_fmadd_ps(a3, CMLC_GEMV512_ODD(w3), od);
        _mm512_storeu_ps(c + j, ev);
        _mm512_storeu_ps(c + j + 16, od);
      }
    }
    for (; j < n; j += 16) {
      const __mmask16 m = cmlc_gemv512_mask(n - j);
      __m512 v = _mm512_maskz_loadu_ps(m, c + j);
      v = _mm512_fmadd_ps(a0, cmlc_gemv512_h_mask(b0 + j, m, f16), v);
      v = _mm512_fmadd_ps(a1, cmlc_gemv512_h_mask(b1 + j, m, f16), v);
      v = _mm512_fmadd_ps(a2, cmlc_gemv512_h_mask(b2 + j, m, f16), v);
      v = _mm512_fmadd_ps(a3, cmlc_gemv512_h_mask(b3 + j, m, f16), v);
      _mm512_mask_storeu_ps(c + j, m, v);
    }
  }
  for (; kk < k; ++kk) {
    const __m512 a0 = _mm512_set1_ps(cmlc_load_f32(a, kk * a_stride, a_dtype));
    const uint16_t* b0 = b + kk * ldb;
    int64_t j = 0;
    for (; j < n32 && !f16; j += 32) {
      const __m512i w0 = _mm512_loadu_si512((const void*)(b0 + j));
      _mm512_storeu_ps(c + j, _mm512_fmadd_ps(a0, CMLC_GEMV512_EVEN(w0), _mm512_loadu_ps(c + j)));
      _mm512_storeu_ps(c + j + 16,
                       _mm512_fmadd_ps(a0, CMLC_GEMV512_ODD(w0), _mm512_loadu_ps(c + j + 16)));
    }
    for (; j < n; j += 16) {
      const __mmask16 m = cmlc_gemv512_mask(n - j);
      __m512 v = _mm512_maskz_loadu_ps(m, c + j);
      v = _mm512_fmadd_ps(a0, cmlc_gemv512_h_mask(b0 + j, m, f16), v);
      _mm512_mask_storeu_ps(c + j, m, v);
    }
  }
#undef CMLC_GEMV512_EVEN
#undef CMLC_GEMV512_ODD
  if (f16) return;
  // Each bf16 group's outputs back in column order: (even, odd) pairs.
  const __m512i lo_idx = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i hi_idx =
      _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  for (int64_t j = 0; j < n32; j += 32) {
    const __m512 ev = _mm512_loadu_ps(c + j), od = _mm512_loadu_ps(c + j + 16);
    _mm512_storeu_ps(c + j, _mm512_permutex2var_ps(ev, lo_idx, od));
    _mm512_storeu_ps(c + j + 16, _mm512_permutex2var_ps(ev, hi_idx, od));
  }
}

// The element types of B the multi-row kernel reads.
enum { CMLC_GEMV_B_BF16, CMLC_GEMV_B_F16, CMLC_GEMV_B_F32 };

// 32 columns of one row of B at |p| as two f32 vectors: bf16 as its even and odd columns (the
// order cmlc_gemv512_axpy_h keeps its outputs in), f16 and f32 as columns 0-15 and 16-31.
static inline __attribute__((always_inline)) CMLC_GEMV512H_TARGET void cmlc_gemv512_pair(
    const void* p, int kind, __m512* e, __m512* o) {
  if (kind == CMLC_GEMV_B_F32) {
    *e = _mm512_loadu_ps(p);
    *o = _mm512_loadu_ps((const float*)p + 16);
  } else if (kind == CMLC_GEMV_B_F16) {
    *e = cmlc_gemv512_h(p, true);
    *o = cmlc_gemv512_h((const uint16_t*)p + 16, true);
  } else {
    const __m512i w = _mm512_loadu_si512((const void*)p);
    *e = _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
    *o = _mm512_castsi512_ps(_mm512_and_si512(w, _mm512_set1_epi32((int)0xFFFF0000u)));
  }
}

// |count| < 16 columns of one row of B at |p|, zero beyond.
static inline __attribute__((always_inline)) CMLC_GEMV512H_TARGET __m512
cmlc_gemv512_load_mask(const void* p, __mmask16 m, int kind) {
  if (kind == CMLC_GEMV_B_F32) return _mm512_maskz_loadu_ps(m, p);
  return cmlc_gemv512_h_mask(p, m, kind == CMLC_GEMV_B_F16);
}

//===--- AVX-512 dot form (f32 or half rows) ---===//

// 16 values of a row of |kind| starting at value |i|, as f32 (half values widened exactly).
static inline __attribute__((always_inline)) CMLC_GEMV512H_TARGET __m512
cmlc_gemv512_row(const void* p, int64_t i, int kind) {
  if (kind == CMLC_GEMV_B_F32) return _mm512_loadu_ps((const float*)p + i);
  return cmlc_gemv512_h((const uint16_t*)p + i, kind == CMLC_GEMV_B_F16);
}

// One output of the dot form: four zmm partial sums over k (lane-strided, 64 values a step),
// the masked tail into the first, then (s0 + s1) + (s2 + s3) and a horizontal sum.
#define CMLC_GEMV512_DOT_STEP(r)                                                   \
  do {                                                                             \
    s##r##0 = _mm512_fmadd_ps(x0, cmlc_gemv512_row(y##r, kk, kind), s##r##0);      \
    s##r##1 = _mm512_fmadd_ps(x1, cmlc_gemv512_row(y##r, kk + 16, kind), s##r##1); \
    s##r##2 = _mm512_fmadd_ps(x2, cmlc_gemv512_row(y##r, kk + 32, kind), s##r##2); \
    s##r##3 = _mm512_fmadd_ps(x3, cmlc_gemv512_row(y##r, kk + 48, kind), s##r##3); \
  } while (0)
#define CMLC_GEMV512_DOT_SUM(r) \
  _mm512_reduce_add_ps(         \
      _mm512_add_ps(_mm512_add_ps(s##r##0, s##r##1), _mm512_add_ps(s##r##2, s##r##3)))

static inline __attribute__((always_inline)) CMLC_GEMV512H_TARGET float cmlc_gemv512_dot1(
    int64_t k, const float* x, const void* y0, int kind) {
  __m512 s00 = _mm512_setzero_ps(), s01 = s00, s02 = s00, s03 = s00;
  int64_t kk = 0;
  for (; kk + 64 <= k; kk += 64) {
    const __m512 x0 = _mm512_loadu_ps(x + kk), x1 = _mm512_loadu_ps(x + kk + 16);
    const __m512 x2 = _mm512_loadu_ps(x + kk + 32), x3 = _mm512_loadu_ps(x + kk + 48);
    CMLC_GEMV512_DOT_STEP(0);
  }
  const size_t esize = kind == CMLC_GEMV_B_F32 ? sizeof(float) : sizeof(uint16_t);
  for (; kk < k; kk += 16) {
    const __mmask16 m = cmlc_gemv512_mask(k - kk);
    s00 =
        _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x + kk),
                        cmlc_gemv512_load_mask((const char*)y0 + (size_t)kk * esize, m, kind), s00);
  }
  return CMLC_GEMV512_DOT_SUM(0);
}

// c[j * c_stride] = dot(x, y_j) for f32 rows y_j (|ldy| values apart): four rows at a time
// sharing each x vector (sixteen accumulators), the next four rows prefetched into L2 at the same
// k; the rest one by one (cmlc_gemv512_dot1: the same sums).
CMLC_GEMV512H_TARGET void cmlc__gemv_dot_f32_avx512(int64_t k, const float* x, const float* y,
                                                    int64_t ldy, float* c, int64_t c_stride,
                                                    int64_t n) {
  const int kind = CMLC_GEMV_B_F32;
  const int64_t esize = (int64_t)sizeof(float), ldy_bytes = ldy * esize;
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const char* y0 = (const char*)y + j * ldy_bytes;
    const char* y1 = y0 + ldy_bytes;
    const char* y2 = y1 + ldy_bytes;
    const char* y3 = y2 + ldy_bytes;
    const char* next = y0 + CMLC_GEMV_AHEAD * ldy_bytes;
    __m512 s00 = _mm512_setzero_ps(), s01 = s00, s02 = s00, s03 = s00;
    __m512 s10 = s00, s11 = s00, s12 = s00, s13 = s00;
    __m512 s20 = s00, s21 = s00, s22 = s00, s23 = s00;
    __m512 s30 = s00, s31 = s00, s32 = s00, s33 = s00;
    int64_t kk = 0;
    for (; kk + 64 <= k; kk += 64) {
      const char* p = next + kk * esize;
      for (int line = 0; line < 256; line += 64) cmlc_gemv_prefetch4(p + line, ldy_bytes);
      const __m512 x0 = _mm512_loadu_ps(x + kk), x1 = _mm512_loadu_ps(x + kk + 16);
      const __m512 x2 = _mm512_loadu_ps(x + kk + 32), x3 = _mm512_loadu_ps(x + kk + 48);
      CMLC_GEMV512_DOT_STEP(0);
      CMLC_GEMV512_DOT_STEP(1);
      CMLC_GEMV512_DOT_STEP(2);
      CMLC_GEMV512_DOT_STEP(3);
    }
    for (; kk < k; kk += 16) {
      const __mmask16 m = cmlc_gemv512_mask(k - kk);
      const __m512 xv = _mm512_maskz_loadu_ps(m, x + kk);
      const size_t off = (size_t)(kk * esize);
      s00 = _mm512_fmadd_ps(xv, cmlc_gemv512_load_mask(y0 + off, m, kind), s00);
      s10 = _mm512_fmadd_ps(xv, cmlc_gemv512_load_mask(y1 + off, m, kind), s10);
      s20 = _mm512_fmadd_ps(xv, cmlc_gemv512_load_mask(y2 + off, m, kind), s20);
      s30 = _mm512_fmadd_ps(xv, cmlc_gemv512_load_mask(y3 + off, m, kind), s30);
    }
    c[j * c_stride] = CMLC_GEMV512_DOT_SUM(0);
    c[(j + 1) * c_stride] = CMLC_GEMV512_DOT_SUM(1);
    c[(j + 2) * c_stride] = CMLC_GEMV512_DOT_SUM(2);
    c[(j + 3) * c_stride] = CMLC_GEMV512_DOT_SUM(3);
  }
  for (; j < n; ++j)
    c[j * c_stride] = cmlc_gemv512_dot1(k, x, (const char*)y + j * ldy_bytes, kind);
}
#undef CMLC_GEMV512_DOT_STEP
#undef CMLC_GEMV512_DOT_SUM

// |m| rows of x (|ldx| apart) against half weight rows y_j (|ldy| values apart): c[i * ldc + j]
// = dot(x_i, y_j), each output as cmlc_gemv512_dot1. The weight rows are read one after another
// (a weight stored [N, K]: one sequential stream; four rows at a time, as the f32 form runs, took
// 0.55 against 0.43 ms for [1, 4096] x [4096, 4096]^T bf16 on 2 threads of Zen 5), in blocks of
// about 256 KiB (cmlc__gemv_l2_rows) that each x row takes in turn, so a block comes from memory
// once and from L2 for the other rows, while each x row (16 KiB at K = 4096) stays in L1.
// Holding four x rows' sums in registers and widening each weight vector once for them was
// slower (x rows evicted from L1: 1.58 against 0.86 ms for 4 rows).
static inline __attribute__((always_inline)) CMLC_GEMV512H_TARGET void cmlc_gemv512_dot_h(
    int64_t m, int64_t k, const float* x, int64_t ldx, const uint16_t* y, int64_t ldy, float* c,
    int64_t ldc, int64_t n, int kind) {
  const int64_t row_bytes = ldy * (int64_t)sizeof(uint16_t);
  const int64_t block = cmlc__gemv_l2_rows(row_bytes, n);
  for (int64_t j0 = 0; j0 < n; j0 += block) {
    const int64_t w = n - j0 < block ? n - j0 : block;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = j0; j < j0 + w; ++j)
        c[i * ldc + j] = cmlc_gemv512_dot1(k, x + i * ldx, (const char*)y + j * row_bytes, kind);
    }
  }
}

CMLC_GEMV512H_TARGET void cmlc__gemv_dot_h_avx512(int64_t m, int64_t k, const float* x, int64_t ldx,
                                                  const uint16_t* y, cml_dtype_t y_dtype,
                                                  int64_t ldy, float* c, int64_t ldc, int64_t n) {
  if (y_dtype == CML_DTYPE_F16) {
    cmlc_gemv512_dot_h(m, k, x, ldx, y, ldy, c, ldc, n, CMLC_GEMV_B_F16);
  } else {
    cmlc_gemv512_dot_h(m, k, x, ldx, y, ldy, c, ldc, n, CMLC_GEMV_B_BF16);
  }
}

// Rows 2..CMLC_GEMV_HALF_ROWS of A at once (rows |lda| apart, outputs |ldc| apart): each group
// of four k rows of B is loaded and widened once for all rows of A, whose outputs (m x n, in
// L1) take four FMAs per 16 columns in k order, so every row's outputs are the bits of the
// one-row kernel for that row. bf16 groups of 32 columns keep the one-row kernel's even / odd
// order until the end.
static inline __attribute__((always_inline)) CMLC_GEMV512H_TARGET void cmlc_gemv512_axpy_h_rows(
    int64_t m, int64_t k, const void* a, cml_dtype_t a_dtype, int64_t lda, int64_t a_stride,
    const void* b, int64_t ldb, float* c, int64_t ldc, int64_t n, int kind) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = 0.0f;
  const int64_t es = kind == CMLC_GEMV_B_F32 ? 4 : 2;  // bytes per element of B
  const int64_t ldb_bytes = ldb * es;
  // Element (r, col) of B from the current group's first row b0; prefetches of the next
  // group's rows cover the 32 columns of a step (64 or 128 bytes of each).
#define CMLC_GEMV_AT(r, col) ((const void*)(b0 + ((r)*ldb + (col)) * es))
#define CMLC_GEMV_PF(at)                                    \
  do {                                                      \
    cmlc_gemv_prefetch4((at), ldb_bytes);                   \
    if (es == 4) cmlc_gemv_prefetch4((at) + 64, ldb_bytes); \
  } while (0)
  const int64_t n32 = n / 32 * 32;
  float av[CMLC_GEMV_HALF_ROWS][8];
  int64_t kk = 0;
  // Eight k rows per pass while they last: the widened rows stay in sixteen registers while
  // each row of A takes its sixteen FMAs, so the outputs are loaded and stored half as often.
  for (; kk + 8 <= k; kk += 8) {
    for (int64_t i = 0; i < m; ++i)
      for (int r = 0; r < 8; ++r)
        av[i][r] = cmlc_load_f32(a, i * lda + (kk + r) * a_stride, a_dtype);
    const char* b0 = (const char*)b + kk * ldb_bytes;
    const char* next = b0 + 8 * ldb_bytes;
    int64_t j = 0;
    for (; j < n32; j += 32) {
      __m512 e[8], o[8];
      CMLC_GEMV_PF(next + j * es);
      CMLC_GEMV_PF(next + 4 * ldb_bytes + j * es);
#pragma GCC unroll 8
      for (int r = 0; r < 8; ++r) cmlc_gemv512_pair(CMLC_GEMV_AT(r, j), kind, &e[r], &o[r]);
      for (int64_t i = 0; i < m; ++i) {
        float* ci = c + i * ldc + j;
        const float* ai = av[i];
        __m512 ev = _mm512_loadu_ps(ci), od = _mm512_loadu_ps(ci + 16);
#pragma GCC unroll 8
        for (int r = 0; r < 8; ++r) {
          const __m512 ar = _mm512_set1_ps(ai[r]);
          ev = _mm512_fmadd_ps(ar, e[r], ev);
          od = _mm512_fmadd_ps(ar, o[r], od);
        }
        _mm512_storeu_ps(ci, ev);
        _mm512_storeu_ps(ci + 16, od);
      }
    }
    for (; j < n; j += 16) {
      const __mmask16 mk = cmlc_gemv512_mask(n - j);
      for (int r = 0; r < 8; ++r) {
        const __m512 w = cmlc_gemv512_load_mask(CMLC_GEMV_AT(r, j), mk, kind);
        for (int64_t i = 0; i < m; ++i) {
          float* ci = c + i * ldc + j;
          _mm512_mask_storeu_ps(
              ci, mk, _mm512_fmadd_ps(_mm512_set1_ps(av[i][r]), w, _mm512_maskz_loadu_ps(mk, ci)));
        }
      }
    }
  }
  for (; kk < k; kk += 4) {
    const int rows = k - kk >= 4 ? 4 : (int)(k - kk);
    for (int64_t i = 0; i < m; ++i)
      for (int r = 0; r < 4; ++r)
        av[i][r] = r < rows ? cmlc_load_f32(a, i * lda + (kk + r) * a_stride, a_dtype) : 0.0f;
    const char* b0 = (const char*)b + kk * ldb_bytes;
    const char* next = b0 + CMLC_GEMV_AHEAD * ldb_bytes;
    int64_t j = 0;
    if (rows == 4) {
      for (; j < n32; j += 32) {
        __m512 e0, o0, e1, o1, e2, o2, e3, o3;
        CMLC_GEMV_PF(next + j * es);
        cmlc_gemv512_pair(CMLC_GEMV_AT(0, j), kind, &e0, &o0);
        cmlc_gemv512_pair(CMLC_GEMV_AT(1, j), kind, &e1, &o1);
        cmlc_gemv512_pair(CMLC_GEMV_AT(2, j), kind, &e2, &o2);
        cmlc_gemv512_pair(CMLC_GEMV_AT(3, j), kind, &e3, &o3);
        for (int64_t i = 0; i < m; ++i) {
          float* ci = c + i * ldc + j;
          const float* ai = av[i];
          __m512 ev = _mm512_loadu_ps(ci), od = _mm512_loadu_ps(ci + 16);
          __m512 ar = _mm512_set1_ps(ai[0]);
          ev = _mm512_fmadd_ps(ar, e0, ev), od = _mm512_fmadd_ps(ar, o0, od);
          ar = _mm512_set1_ps(ai[1]);
          ev = _mm512_fmadd_ps(ar, e1, ev), od = _mm512_fmadd_ps(ar, o1, od);
          ar = _mm512_set1_ps(ai[2]);
          ev = _mm512_fmadd_ps(ar, e2, ev), od = _mm512_fmadd_ps(ar, o2, od);
          ar = _mm512_set1_ps(ai[3]);
          ev = _mm512_fmadd_ps(ar, e3, ev), od = _mm512_fmadd_ps(ar, o3, od);
          _mm512_storeu_ps(ci, ev);
          _mm512_storeu_ps(ci + 16, od);
        }
      }
    }
    for (; j < n32; j += 32) {  // the last 1-3 k rows
      for (int r = 0; r < rows; ++r) {
        __m512 e, o;
        cmlc_gemv512_pair(CMLC_GEMV_AT(r, j), kind, &e, &o);
        for (int64_t i = 0; i < m; ++i) {
          float* ci = c + i * ldc + j;
          const __m512 ar = _mm512_set1_ps(av[i][r]);
          _mm512_storeu_ps(ci, _mm512_fmadd_ps(ar, e, _mm512_loadu_ps(ci)));
          _mm512_storeu_ps(ci + 16, _mm512_fmadd_ps(ar, o, _mm512_loadu_ps(ci + 16)));
        }
      }
    }
    for (; j < n; j += 16) {
      const __mmask16 mk = cmlc_gemv512_mask(n - j);
      __m512 w[4];
      for (int r = 0; r < rows; ++r) w[r] = cmlc_gemv512_load_mask(CMLC_GEMV_AT(r, j), mk, kind);
      for (int64_t i = 0; i < m; ++i) {
        float* ci = c + i * ldc + j;
        __m512 v = _mm512_maskz_loadu_ps(mk, ci);
        for (int r = 0; r < rows; ++r) v = _mm512_fmadd_ps(_mm512_set1_ps(av[i][r]), w[r], v);
        _mm512_mask_storeu_ps(ci, mk, v);
      }
    }
  }
#undef CMLC_GEMV_AT
#undef CMLC_GEMV_PF
  if (kind != CMLC_GEMV_B_BF16) return;
  const __m512i lo_idx = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i hi_idx =
      _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n32; j += 32) {
      float* ci = c + i * ldc + j;
      const __m512 ev = _mm512_loadu_ps(ci), od = _mm512_loadu_ps(ci + 16);
      _mm512_storeu_ps(ci, _mm512_permutex2var_ps(ev, lo_idx, od));
      _mm512_storeu_ps(ci + 16, _mm512_permutex2var_ps(ev, hi_idx, od));
    }
  }
}

CMLC_GEMV512H_TARGET void cmlc__gemv_axpy_h_avx512(int64_t m, int64_t k, const void* a,
                                                   cml_dtype_t a_dtype, int64_t lda,
                                                   int64_t a_stride, const uint16_t* b,
                                                   cml_dtype_t b_dtype, int64_t ldb, float* c,
                                                   int64_t ldc, int64_t n) {
  const bool f16 = b_dtype == CML_DTYPE_F16;
  if (m == 1) {
    if (f16) {
      cmlc_gemv512_axpy_h(k, a, a_dtype, a_stride, b, ldb, c, n, true);
    } else {
      cmlc_gemv512_axpy_h(k, a, a_dtype, a_stride, b, ldb, c, n, false);
    }
    return;
  }
  const size_t a_size = a_dtype == CML_DTYPE_F32 ? sizeof(float) : sizeof(uint16_t);
  for (int64_t i0 = 0; i0 < m; i0 += CMLC_GEMV_HALF_ROWS) {
    const int64_t rows = m - i0 < CMLC_GEMV_HALF_ROWS ? m - i0 : CMLC_GEMV_HALF_ROWS;
    const void* ai = (const char*)a + (size_t)(i0 * lda) * a_size;
    if (f16) {
      cmlc_gemv512_axpy_h_rows(rows, k, ai, a_dtype, lda, a_stride, b, ldb, c + i0 * ldc, ldc, n,
                               CMLC_GEMV_B_F16);
    } else {
      cmlc_gemv512_axpy_h_rows(rows, k, ai, a_dtype, lda, a_stride, b, ldb, c + i0 * ldc, ldc, n,
                               CMLC_GEMV_B_BF16);
    }
  }
}

// The multi-row kernel over an f32 B (2..16 rows of an f32 A at a time; see
// cmlc__gemv_axpy_rows_fn).
CMLC_GEMV512H_TARGET void cmlc__gemv_axpy_rows_f32_avx512(int64_t m, int64_t k, const float* a,
                                                          int64_t lda, int64_t a_stride,
                                                          const float* b, int64_t ldb, float* c,
                                                          int64_t ldc, int64_t n) {
  for (int64_t i0 = 0; i0 < m; i0 += CMLC_GEMV_HALF_ROWS) {
    const int64_t rows = m - i0 < CMLC_GEMV_HALF_ROWS ? m - i0 : CMLC_GEMV_HALF_ROWS;
    cmlc_gemv512_axpy_h_rows(rows, k, a + i0 * lda, CML_DTYPE_F32, lda, a_stride, b, ldb,
                             c + i0 * ldc, ldc, n, CMLC_GEMV_B_F32);
  }
}

//===--- AVX2 ---===//

// Lane mask with the first |count| (clamped to 0..8) lanes on.
static inline __attribute__((always_inline)) CMLC_GEMV256_TARGET __m256i
cmlc_gemv256_mask(int64_t count) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(count > 8 ? 8 : count)), lanes);
}

// The AVX2 axpy form: as the AVX-512 one, eight columns per vector.
CMLC_GEMV256_TARGET void cmlc__gemv_axpy_f32_avx2(int64_t k, const float* a, int64_t a_stride,
                                                  const float* b, int64_t ldb, float* c,
                                                  int64_t n) {
  for (int64_t j = 0; j < n; ++j) c[j] = 0.0f;
  const int64_t ldb_bytes = ldb * (int64_t)sizeof(float);
  int64_t kk = 0;
  for (; kk + 4 <= k; kk += 4) {
    const __m256 a0 = _mm256_set1_ps(a[kk * a_stride]), a1 = _mm256_set1_ps(a[(kk + 1) * a_stride]);
    const __m256 a2 = _mm256_set1_ps(a[(kk + 2) * a_stride]);
    const __m256 a3 = _mm256_set1_ps(a[(kk + 3) * a_stride]);
    const float* b0 = b + kk * ldb;
    const float* b1 = b0 + ldb;
    const float* b2 = b1 + ldb;
    const float* b3 = b2 + ldb;
    const char* next = (const char*)(b0 + CMLC_GEMV_AHEAD * ldb);
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {  // one 64-byte line of each row per step
      cmlc_gemv_prefetch4(next + j * (int64_t)sizeof(float), ldb_bytes);
      for (int h = 0; h < 16; h += 8) {
        __m256 v = _mm256_loadu_ps(c + j + h);
        v = _mm256_fmadd_ps(a0, _mm256_loadu_ps(b0 + j + h), v);
        v = _mm256_fmadd_ps(a1, _mm256_loadu_ps(b1 + j + h), v);
        v = _mm256_fmadd_ps(a2, _mm256_loadu_ps(b2 + j + h), v);
        v = _mm256_fmadd_ps(a3, _mm256_loadu_ps(b3 + j + h), v);
        _mm256_storeu_ps(c + j + h, v);
      }
    }
    for (; j < n; j += 8) {
      const __m256i m = cmlc_gemv256_mask(n - j);
      __m256 v = _mm256_maskload_ps(c + j, m);
      v = _mm256_fmadd_ps(a0, _mm256_maskload_ps(b0 + j, m), v);
      v = _mm256_fmadd_ps(a1, _mm256_maskload_ps(b1 + j, m), v);
      v = _mm256_fmadd_ps(a2, _mm256_maskload_ps(b2 + j, m), v);
      v = _mm256_fmadd_ps(a3, _mm256_maskload_ps(b3 + j, m), v);
      _mm256_maskstore_ps(c + j, m, v);
    }
  }
  for (; kk < k; ++kk) {
    const __m256 a0 = _mm256_set1_ps(a[kk * a_stride]);
    const float* b0 = b + kk * ldb;
    for (int64_t j = 0; j < n; j += 8) {
      const __m256i m = cmlc_gemv256_mask(n - j);
      __m256 v = _mm256_maskload_ps(c + j, m);
      v = _mm256_fmadd_ps(a0, _mm256_maskload_ps(b0 + j, m), v);
      _mm256_maskstore_ps(c + j, m, v);
    }
  }
}

// The AVX2 axpy form over a half B (as the AVX-512 one, eight columns per vector; the column
// tail widens through a zero-padded copy of its at most seven values).
static inline __attribute__((always_inline)) __attribute__((target("avx2,fma,f16c"))) __m256
cmlc_gemv256_h(const uint16_t* p, bool f16) {
  const __m128i v = _mm_loadu_si128((const __m128i*)p);
  return f16 ? _mm256_cvtph_ps(v)
             : _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(v), 16));
}
static inline __attribute__((always_inline)) __attribute__((target("avx2,fma,f16c"))) __m256
cmlc_gemv256_h_tail(const uint16_t* p, int64_t count, bool f16) {
  uint16_t t[8] = {0};
  memcpy(t, p, (size_t)(count > 8 ? 8 : count) * sizeof(uint16_t));
  return cmlc_gemv256_h(t, f16);
}

// 8 values of a row of |kind| starting at value |i|, as f32 (half values widened exactly).
static inline __attribute__((always_inline)) __attribute__((target("avx2,fma,f16c"))) __m256
cmlc_gemv256_row(const void* p, int64_t i, int kind) {
  if (kind == CMLC_GEMV_B_F32) return _mm256_loadu_ps((const float*)p + i);
  return cmlc_gemv256_h((const uint16_t*)p + i, kind == CMLC_GEMV_B_F16);
}

// c[j * c_stride] = dot(x, y_j) for rows y_j of |kind| (|ldy| values apart): four ymm partial
// sums (lane-strided over k), a fixed reduction tree, then the scalar tail in k order; one row at
// a time (sixteen ymm registers do not hold four rows' sums), the row four ahead prefetched into
// L2 at the same k. Half rows widen exactly: every output is the f32 form's bits on the widened
// values.
static inline __attribute__((always_inline)) __attribute__((target("avx2,fma,f16c"))) void
cmlc_gemv256_dot(int64_t k, const float* x, const void* y, int64_t ldy, float* c, int64_t c_stride,
                 int64_t n, int kind) {
  const int64_t esize =
      kind == CMLC_GEMV_B_F32 ? (int64_t)sizeof(float) : (int64_t)sizeof(uint16_t);
  const cml_dtype_t dtype = kind == CMLC_GEMV_B_F32   ? CML_DTYPE_F32
                            : kind == CMLC_GEMV_B_F16 ? CML_DTYPE_F16
                                                      : CML_DTYPE_BF16;
  for (int64_t j = 0; j < n; ++j) {
    const char* yj = (const char*)y + j * ldy * esize;
    const char* next = yj + CMLC_GEMV_AHEAD * ldy * esize;
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    __m256 s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
    int64_t kk = 0;
    for (; kk + 32 <= k; kk += 32) {
      _mm_prefetch(next + kk * esize, _MM_HINT_T1);
      if (esize == (int64_t)sizeof(float)) _mm_prefetch(next + kk * esize + 64, _MM_HINT_T1);
      s0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + kk), cmlc_gemv256_row(yj, kk, kind), s0);
      s1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + kk + 8), cmlc_gemv256_row(yj, kk + 8, kind), s1);
      s2 = _mm256_fmadd_ps(_mm256_loadu_ps(x + kk + 16), cmlc_gemv256_row(yj, kk + 16, kind), s2);
      s3 = _mm256_fmadd_ps(_mm256_loadu_ps(x + kk + 24), cmlc_gemv256_row(yj, kk + 24, kind), s3);
    }
    __m256 t = _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3));
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_shuffle_ps(h, h, 1));
    float total = _mm_cvtss_f32(h);
    for (; kk < k; ++kk) total = fmaf(x[kk], cmlc_load_f32(yj, kk, dtype), total);
    c[j * c_stride] = total;
  }
}

__attribute__((target("avx2,fma,f16c"))) void cmlc__gemv_dot_f32_avx2(int64_t k, const float* x,
                                                                      const float* y, int64_t ldy,
                                                                      float* c, int64_t c_stride,
                                                                      int64_t n) {
  cmlc_gemv256_dot(k, x, y, ldy, c, c_stride, n, CMLC_GEMV_B_F32);
}

// f64 outputs c[j * c_stride] = x . y_j (y_j = y + j * ldy, k values each): four 4-lane
// accumulators along k (16 values a step), combined as (s0 + s1) + (s2 + s3), the lanes in
// order, then the tail added one fused multiply-add at a time. The scalar loop's single chain
// waited on each add's latency (a [2048, 2048] f64 matrix-vector product 2.1-2.9x xla:cpu's
// time); this sums in another order (within the f64 GEMM's bound), the same for any threads.
__attribute__((target("avx2,fma"))) void cmlc__gemv_dot_f64_avx2(int64_t k, const double* x,
                                                                 const double* y, int64_t ldy,
                                                                 double* c, int64_t c_stride,
                                                                 int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    const double* yj = y + j * ldy;
    const char* next = (const char*)(yj + CMLC_GEMV_AHEAD * ldy);
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    __m256d s2 = _mm256_setzero_pd(), s3 = _mm256_setzero_pd();
    int64_t kk = 0;
    for (; kk + 16 <= k; kk += 16) {
      _mm_prefetch(next + kk * (int64_t)sizeof(double), _MM_HINT_T1);
      _mm_prefetch(next + kk * (int64_t)sizeof(double) + 64, _MM_HINT_T1);
      s0 = _mm256_fmadd_pd(_mm256_loadu_pd(x + kk), _mm256_loadu_pd(yj + kk), s0);
      s1 = _mm256_fmadd_pd(_mm256_loadu_pd(x + kk + 4), _mm256_loadu_pd(yj + kk + 4), s1);
      s2 = _mm256_fmadd_pd(_mm256_loadu_pd(x + kk + 8), _mm256_loadu_pd(yj + kk + 8), s2);
      s3 = _mm256_fmadd_pd(_mm256_loadu_pd(x + kk + 12), _mm256_loadu_pd(yj + kk + 12), s3);
    }
    const __m256d t = _mm256_add_pd(_mm256_add_pd(s0, s1), _mm256_add_pd(s2, s3));
    __m128d h = _mm_add_pd(_mm256_castpd256_pd128(t), _mm256_extractf128_pd(t, 1));
    double total = _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
    for (; kk < k; ++kk) total = fma(x[kk], yj[kk], total);
    c[j * c_stride] = total;
  }
}

// |m| rows of x against the half weight rows: per block of weight rows of about 256 KiB
// (cmlc__gemv_l2_rows), each x row in turn, one output at a time as the one-row form.
__attribute__((target("avx2,fma,f16c"))) void cmlc__gemv_dot_h_avx2(
    int64_t m, int64_t k, const float* x, int64_t ldx, const uint16_t* y, cml_dtype_t y_dtype,
    int64_t ldy, float* c, int64_t ldc, int64_t n) {
  const int64_t block = cmlc__gemv_l2_rows(ldy * (int64_t)sizeof(uint16_t), n);
  for (int64_t j0 = 0; j0 < n; j0 += block) {
    const int64_t w = n - j0 < block ? n - j0 : block;
    for (int64_t i = 0; i < m; ++i) {
      if (y_dtype == CML_DTYPE_F16) {
        cmlc_gemv256_dot(k, x + i * ldx, y + j0 * ldy, ldy, c + i * ldc + j0, 1, w,
                         CMLC_GEMV_B_F16);
      } else {
        cmlc_gemv256_dot(k, x + i * ldx, y + j0 * ldy, ldy, c + i * ldc + j0, 1, w,
                         CMLC_GEMV_B_BF16);
      }
    }
  }
}

static inline __attribute__((always_inline)) __attribute__((target("avx2,fma,f16c"))) void
cmlc_gemv256_axpy_h(int64_t k, const void* a, cml_dtype_t a_dtype, int64_t a_stride,
                    const uint16_t* b, int64_t ldb, float* c, int64_t n, bool f16) {
  for (int64_t j = 0; j < n; ++j) c[j] = 0.0f;
  const int64_t ldb_bytes = ldb * (int64_t)sizeof(uint16_t);
  int64_t kk = 0;
  for (; kk + 4 <= k; kk += 4) {
    const __m256 a0 = _mm256_set1_ps(cmlc_load_f32(a, kk * a_stride, a_dtype));
    const __m256 a1 = _mm256_set1_ps(cmlc_load_f32(a, (kk + 1) * a_stride, a_dtype));
    const __m256 a2 = _mm256_set1_ps(cmlc_load_f32(a, (kk + 2) * a_stride, a_dtype));
    const __m256 a3 = _mm256_set1_ps(cmlc_load_f32(a, (kk + 3) * a_stride, a_dtype));
    const uint16_t* b0 = b + kk * ldb;
    const uint16_t* b1 = b0 + ldb;
    const uint16_t* b2 = b1 + ldb;
    const uint16_t* b3 = b2 + ldb;
    const char* next = (const char*)(b0 + CMLC_GEMV_AHEAD * ldb);
    int64_t j = 0;
    for (; j + 32 <= n; j += 32) {  // one 64-byte line of each row per step
      cmlc_gemv_prefetch4(next + j * (int64_t)sizeof(uint16_t), ldb_bytes);
      for (int h = 0; h < 32; h += 8) {
        __m256 v = _mm256_loadu_ps(c + j + h);
        v = _mm256_fmadd_ps(a0, cmlc_gemv256_h(b0 + j + h, f16), v);
        v = _mm256_fmadd_ps(a1, cmlc_gemv256_h(b1 + j + h, f16), v);
        v = _mm256_fmadd_ps(a2, cmlc_gemv256_h(b2 + j + h, f16), v);
        v = _mm256_fmadd_ps(a3, cmlc_gemv256_h(b3 + j + h, f16), v);
        _mm256_storeu_ps(c + j + h, v);
      }
    }
    for (; j < n; j += 8) {
      const __m256i m = cmlc_gemv256_mask(n - j);
      __m256 v = _mm256_maskload_ps(c + j, m);
      v = _mm256_fmadd_ps(a0, cmlc_gemv256_h_tail(b0 + j, n - j, f16), v);
      v = _mm256_fmadd_ps(a1, cmlc_gemv256_h_tail(b1 + j, n - j, f16), v);
      v = _mm256_fmadd_ps(a2, cmlc_gemv256_h_tail(b2 + j, n - j, f16), v);
      v = _mm256_fmadd_ps(a3, cmlc_gemv256_h_tail(b3 + j, n - j, f16), v);
      _mm256_maskstore_ps(c + j, m, v);
    }
  }
  for (; kk < k; ++kk) {
    const __m256 a0 = _mm256_set1_ps(cmlc_load_f32(a, kk * a_stride, a_dtype));
    const uint16_t* b0 = b + kk * ldb;
    for (int64_t j = 0; j < n; j += 8) {
      const __m256i m = cmlc_gemv256_mask(n - j);
      __m256 v = _mm256_maskload_ps(c + j, m);
      v = _mm256_fmadd_ps(a0, cmlc_gemv256_h_tail(b0 + j, n - j, f16), v);
      _mm256_maskstore_ps(c + j, m, v);
    }
  }
}

// 16 columns of one row of B at |p| as two f32 vectors: bf16 as its even and odd columns, f16
// and f32 as columns 0-7 and 8-15.
static inline __attribute__((always_inline)) __attribute__((target("avx2,fma,f16c"))) void
cmlc_gemv256_pair(const void* p, int kind, __m256* e, __m256* o) {
  if (kind == CMLC_GEMV_B_F32) {
    *e = _mm256_loadu_ps(p);
    *o = _mm256_loadu_ps((const float*)p + 8);
  } else if (kind == CMLC_GEMV_B_F16) {
    *e = cmlc_gemv256_h(p, true);
    *o = cmlc_gemv256_h((const uint16_t*)p + 8, true);
  } else {
    const __m256i w = _mm256_loadu_si256((const __m256i*)p);
    *e = _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
    *o = _mm256_castsi256_ps(_mm256_and_si256(w, _mm256_set1_epi32((int)0xFFFF0000u)));
  }
}

// |count| (clamped to 8) columns of one row of B at |p|, zero beyond.
static inline __attribute__((always_inline)) __attribute__((target("avx2,fma,f16c"))) __m256
cmlc_gemv256_load_tail(const void* p, int64_t count, int kind) {
  if (kind == CMLC_GEMV_B_F32) return _mm256_maskload_ps(p, cmlc_gemv256_mask(count));
  return cmlc_gemv256_h_tail(p, count, kind == CMLC_GEMV_B_F16);
}

// The AVX2 form of cmlc_gemv512_axpy_h_rows: 2..CMLC_GEMV_HALF_ROWS rows of A, each group of
// four k rows of B loaded and widened once (16 columns a step) for all of them, every output's
// FMAs in k order (each row the one-row kernel's bits).
static inline __attribute__((always_inline)) __attribute__((target("avx2,fma,f16c"))) void
cmlc_gemv256_axpy_h_rows(int64_t m, int64_t k, const void* a, cml_dtype_t a_dtype, int64_t lda,
                         int64_t a_stride, const void* b, int64_t ldb, float* c, int64_t ldc,
                         int64_t n, int kind) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = 0.0f;
  const int64_t es = kind == CMLC_GEMV_B_F32 ? 4 : 2;  // bytes per element of B
  const int64_t ldb_bytes = ldb * es;
#define CMLC_GEMV_AT(r, col) ((const void*)(b0 + ((r)*ldb + (col)) * es))
  const int64_t n16 = n / 16 * 16;
  float av[CMLC_GEMV_HALF_ROWS][4];
  for (int64_t kk = 0; kk < k; kk += 4) {
    const int rows = k - kk >= 4 ? 4 : (int)(k - kk);
    for (int64_t i = 0; i < m; ++i)
      for (int r = 0; r < 4; ++r)
        av[i][r] = r < rows ? cmlc_load_f32(a, i * lda + (kk + r) * a_stride, a_dtype) : 0.0f;
    const char* b0 = (const char*)b + kk * ldb_bytes;
    const char* next = b0 + CMLC_GEMV_AHEAD * ldb_bytes;
    int64_t j = 0;
    if (rows == 4) {
      for (; j < n16; j += 16) {
        __m256 e0, o0, e1, o1, e2, o2, e3, o3;
        if (es == 4 || (j & 31) == 0) cmlc_gemv_prefetch4(next + j * es, ldb_bytes);
        cmlc_gemv256_pair(CMLC_GEMV_AT(0, j), kind, &e0, &o0);
        cmlc_gemv256_pair(CMLC_GEMV_AT(1, j), kind, &e1, &o1);
        cmlc_gemv256_pair(CMLC_GEMV_AT(2, j), kind, &e2, &o2);
        cmlc_gemv256_pair(CMLC_GEMV_AT(3, j), kind, &e3, &o3);
        for (int64_t i = 0; i < m; ++i) {
          float* ci = c + i * ldc + j;
          const float* ai = av[i];
          __m256 ev = _mm256_loadu_ps(ci), od = _mm256_loadu_ps(ci + 8);
          __m256 ar = _mm256_set1_ps(ai[0]);
          ev = _mm256_fmadd_ps(ar, e0, ev), od = _mm256_fmadd_ps(ar, o0, od);
          ar = _mm256_set1_ps(ai[1]);
          ev = _mm256_fmadd_ps(ar, e1, ev), od = _mm256_fmadd_ps(ar, o1, od);
          ar = _mm256_set1_ps(ai[2]);
          ev = _mm256_fmadd_ps(ar, e2, ev), od = _mm256_fmadd_ps(ar, o2, od);
          ar = _mm256_set1_ps(ai[3]);
          ev = _mm256_fmadd_ps(ar, e3, ev), od = _mm256_fmadd_ps(ar, o3, od);
          _mm256_storeu_ps(ci, ev);
          _mm256_storeu_ps(ci + 8, od);
        }
      }
    }
    for (; j < n16; j += 16) {  // the last 1-3 k rows
      for (int r = 0; r < rows; ++r) {
        __m256 e, o;
        cmlc_gemv256_pair(CMLC_GEMV_AT(r, j), kind, &e, &o);
        for (int64_t i = 0; i < m; ++i) {
          float* ci = c + i * ldc + j;
          const __m256 ar = _mm256_set1_ps(av[i][r]);
          _mm256_storeu_ps(ci, _mm256_fmadd_ps(ar, e, _mm256_loadu_ps(ci)));
          _mm256_storeu_ps(ci + 8, _mm256_fmadd_ps(ar, o, _mm256_loadu_ps(ci + 8)));
        }
      }
    }
    for (; j < n; j += 8) {
      const __m256i mk = cmlc_gemv256_mask(n - j);
      for (int r = 0; r < rows; ++r) {
        const __m256 w = cmlc_gemv256_load_tail(CMLC_GEMV_AT(r, j), n - j, kind);
        for (int64_t i = 0; i < m; ++i) {
          float* ci = c + i * ldc + j;
          _mm256_maskstore_ps(
              ci, mk, _mm256_fmadd_ps(_mm256_set1_ps(av[i][r]), w, _mm256_maskload_ps(ci, mk)));
        }
      }
    }
  }
#undef CMLC_GEMV_AT
  if (kind != CMLC_GEMV_B_BF16) return;
  // bf16 groups back in column order: (even, odd) pairs.
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n16; j += 16) {
      float* ci = c + i * ldc + j;
      const __m256 ev = _mm256_loadu_ps(ci), od = _mm256_loadu_ps(ci + 8);
      const __m256 lo = _mm256_unpacklo_ps(ev, od), hi = _mm256_unpackhi_ps(ev, od);
      _mm256_storeu_ps(ci, _mm256_permute2f128_ps(lo, hi, 0x20));
      _mm256_storeu_ps(ci + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
    }
  }
}

__attribute__((target("avx2,fma,f16c"))) void cmlc__gemv_axpy_h_avx2(
    int64_t m, int64_t k, const void* a, cml_dtype_t a_dtype, int64_t lda, int64_t a_stride,
    const uint16_t* b, cml_dtype_t b_dtype, int64_t ldb, float* c, int64_t ldc, int64_t n) {
  const bool f16 = b_dtype == CML_DTYPE_F16;
  if (m == 1) {
    if (f16) {
      cmlc_gemv256_axpy_h(k, a, a_dtype, a_stride, b, ldb, c, n, true);
    } else {
      cmlc_gemv256_axpy_h(k, a, a_dtype, a_stride, b, ldb, c, n, false);
    }
    return;
  }
  const size_t a_size = a_dtype == CML_DTYPE_F32 ? sizeof(float) : sizeof(uint16_t);
  for (int64_t i0 = 0; i0 < m; i0 += CMLC_GEMV_HALF_ROWS) {
    const int64_t rows = m - i0 < CMLC_GEMV_HALF_ROWS ? m - i0 : CMLC_GEMV_HALF_ROWS;
    const void* ai = (const char*)a + (size_t)(i0 * lda) * a_size;
    if (f16) {
      cmlc_gemv256_axpy_h_rows(rows, k, ai, a_dtype, lda, a_stride, b, ldb, c + i0 * ldc, ldc, n,
                               CMLC_GEMV_B_F16);
    } else {
      cmlc_gemv256_axpy_h_rows(rows, k, ai, a_dtype, lda, a_stride, b, ldb, c + i0 * ldc, ldc, n,
                               CMLC_GEMV_B_BF16);
    }
  }
}

__attribute__((target("avx2,fma,f16c"))) void cmlc__gemv_axpy_rows_f32_avx2(
    int64_t m, int64_t k, const float* a, int64_t lda, int64_t a_stride, const float* b,
    int64_t ldb, float* c, int64_t ldc, int64_t n) {
  for (int64_t i0 = 0; i0 < m; i0 += CMLC_GEMV_HALF_ROWS) {
    const int64_t rows = m - i0 < CMLC_GEMV_HALF_ROWS ? m - i0 : CMLC_GEMV_HALF_ROWS;
    cmlc_gemv256_axpy_h_rows(rows, k, a + i0 * lda, CML_DTYPE_F32, lda, a_stride, b, ldb,
                             c + i0 * ldc, ldc, n, CMLC_GEMV_B_F32);
  }
}

#endif  // CMLC_HAVE_X86_64
