// SPDX-License-Identifier: Apache-2.0
// kernels/x86_64/quant_lin_x86_64_body.h: the Linear / NF4 FusedQuantizedDense kernel
// (cmlc_quant_lin_fn), included once by quant_x86_64_avx2.c and once by quant_x86_64_avx512.c
// with:
//   CMLC_QL_TARGET   the function target attribute of the including file;
//   CMLC_QL_ZMM      1: 16-lane zmm vectors (else 8-lane ymm);
//   CMLC_QL_NAME     the name of the exported function.
//
// Weights are [K, N] with N contiguous and the scale blocks along N, so a weight row k of a
// strip of columns decodes into vectors along N: int8 / uint8 widen, 4-bit and 2-bit values are
// unpacked by a byte shuffle (each byte repeated for its values) and a per-lane shift, NF4 looks
// its 16 levels up with a register permute, then w = q * scale + zero (one FMA; NF4:
// T[q] * scale). A strip is NV vectors wide (64 columns on zmm, 32 on ymm). Two drivers:
//   direct (m <= CMLC_QL_MD): each weight row of the strip is decoded in registers and used at
//     once by every activation row; the sums stay in registers for the whole K (batch 1 streams
//     each weight byte once);
//   panel (larger m): CMLC_QL_KC rows of the strip are decoded into |panel| (32 KiB, per
//     thread), then an MR x NV register tile of FMAs runs over them for each group of MR rows.
// Both compute every output as one f32 FMA chain over k in ascending order from the same decoded
// weights, so they, and the zmm and ymm builds, give identical bits; the result never depends on
// how strips are spread over threads.
#include <immintrin.h>
#include <math.h>

#if CMLC_QL_ZMM
#define CMLC_QL_W 16
#define CMLC_QL_MD 4  // direct: 4 x 4 accumulators + 4 weight vectors
#define CMLC_QL_MR 6  // panel: 6 x 4 accumulators
typedef __m512 cmlc_ql_v;
typedef __m512i cmlc_ql_vi;
#define QL_ZERO() _mm512_setzero_ps()
#define QL_LOAD(p) _mm512_loadu_ps(p)
#define QL_STORE(p, v) _mm512_storeu_ps((p), (v))
#define QL_SET1(f) _mm512_set1_ps(f)
#define QL_FMA(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define QL_MUL(a, b) _mm512_mul_ps((a), (b))
#define QL_CVT(i) _mm512_cvtepi32_ps(i)
#define QL_GATHER(idx, base) _mm512_i32gather_ps((idx), (base), 4)
#define QL_LOADI(p) _mm512_loadu_si512((const void*)(p))
#define QL_SET1I(i) _mm512_set1_epi32(i)
#define QL_AND(a, b) _mm512_and_si512((a), (b))
#define QL_XOR(a, b) _mm512_xor_si512((a), (b))
#define QL_SUBI(a, b) _mm512_sub_epi32((a), (b))
#define QL_SRLV(a, b) _mm512_srlv_epi32((a), (b))
#define QL_I8(p) _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i*)(p)))
#define QL_U8(p) _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)(p)))
#define QL_U8X(x) _mm512_cvtepu8_epi32(x)
#else
#define CMLC_QL_W 8
#define CMLC_QL_MD 2  // direct: 2 x 4 accumulators + 4 weight vectors (16 ymm)
#define CMLC_QL_MR 3  // panel: 3 x 4 accumulators, 3 broadcasts, 1 weight vector
typedef __m256 cmlc_ql_v;
typedef __m256i cmlc_ql_vi;
#define QL_ZERO() _mm256_setzero_ps()
#define QL_LOAD(p) _mm256_loadu_ps(p)
#define QL_STORE(p, v) _mm256_storeu_ps((p), (v))
#define QL_SET1(f) _mm256_set1_ps(f)
#define QL_FMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define QL_MUL(a, b) _mm256_mul_ps((a), (b))
#define QL_CVT(i) _mm256_cvtepi32_ps(i)
#define QL_GATHER(idx, base) _mm256_i32gather_ps((base), (idx), 4)
#define QL_LOADI(p) _mm256_loadu_si256((const __m256i*)(p))
#define QL_SET1I(i) _mm256_set1_epi32(i)
#define QL_AND(a, b) _mm256_and_si256((a), (b))
#define QL_XOR(a, b) _mm256_xor_si256((a), (b))
#define QL_SUBI(a, b) _mm256_sub_epi32((a), (b))
#define QL_SRLV(a, b) _mm256_srlv_epi32((a), (b))
#define QL_I8(p) _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)(p)))
#define QL_U8(p) _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)(p)))
#define QL_U8X(x) _mm256_cvtepu8_epi32(x)
#endif
#define CMLC_QL_PF 64                                     // weight rows prefetched ahead
#define CMLC_QL_NV 4                                      // vectors per strip
#define CMLC_QL_COLS (CMLC_QL_NV * CMLC_QL_W)             // columns per strip
#define CMLC_QL_KC (CMLC_QUANT_LIN_PANEL / CMLC_QL_COLS)  // weight rows per panel

// The decode variants, each its own copy of the strip loops (the dtype is a constant there).
enum {
  CMLC_QL_I8,
  CMLC_QL_U8,
  CMLC_QL_I4,
  CMLC_QL_U4,
  CMLC_QL_I2,
  CMLC_QL_U2,
  CMLC_QL_NF4_8,  // NF4 stored in Int8 / Uint8
  CMLC_QL_NF4_4   // NF4 stored in Int4 / Uint4
};

// log2 of the values per byte of |kind|.
#define CMLC_QL_SHIFT(kind)                                                    \
  ((kind) == CMLC_QL_I4 || (kind) == CMLC_QL_U4 || (kind) == CMLC_QL_NF4_4 ? 1 \
   : (kind) == CMLC_QL_I2 || (kind) == CMLC_QL_U2                          ? 2 \
                                                                           : 0)

// Per-lane shifts and byte-repeat shuffles of the packed dtypes (lane j: value j of the vector).
static const int32_t cmlc_ql_sh4[16] = {0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4};
static const int32_t cmlc_ql_sh2[16] = {0, 2, 4, 6, 0, 2, 4, 6, 0, 2, 4, 6, 0, 2, 4, 6};

// The shared state of one call: the operands and, per strip, how each vector finds its scale.
typedef struct cmlc_ql_ctx_t {
  const cmlc_quant_lin_t* p;
  int64_t c0, width;           // the strip's first column and its width (<= CMLC_QL_COLS)
  bool one[CMLC_QL_NV];        // vector v lies in one scale block (broadcast, else gather)
  int64_t blk[CMLC_QL_NV];     // that block (the first lane's)
  cmlc_ql_vi idx[CMLC_QL_NV];  // each lane's block, for the gather
  cmlc_ql_v nf4lo, nf4hi;      // the NF4 table (lo: all 16 levels on zmm; ymm: 0-7, 8-15)
} cmlc_ql_ctx_t;

// The W stored integers (unsigned bit fields, not yet sign-adjusted) at packed byte |b|, whose
// first value starts at bit 0.
static inline __attribute__((always_inline)) CMLC_QL_TARGET cmlc_ql_vi
cmlc_ql_fields(int bits, const uint8_t* b) {
  if (bits == 4) {
    __m128i v;
#if CMLC_QL_ZMM
    v = _mm_loadl_epi64((const __m128i*)b);  // 8 bytes, 16 values
#else
    uint32_t u;
    memcpy(&u, b, 4);  // 4 bytes, 8 values
    v = _mm_cvtsi32_si128((int)u);
#endif
    v = _mm_shuffle_epi8(v, _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7));
    return QL_AND(QL_SRLV(QL_U8X(v), QL_LOADI(cmlc_ql_sh4)), QL_SET1I(15));
  }
  __m128i v;
#if CMLC_QL_ZMM
  uint32_t u;
  memcpy(&u, b, 4);  // 4 bytes, 16 values
#else
  uint16_t u;
  memcpy(&u, b, 2);  // 2 bytes, 8 values
#endif
  v = _mm_cvtsi32_si128((int)u);
  v = _mm_shuffle_epi8(v, _mm_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3));
  return QL_AND(QL_SRLV(QL_U8X(v), QL_LOADI(cmlc_ql_sh2)), QL_SET1I(3));
}

// The scale (or zero point) vector of vector |v| of the strip in weight row |kk|.
static inline __attribute__((always_inline)) CMLC_QL_TARGET cmlc_ql_v
cmlc_ql_block_vec(const cmlc_ql_ctx_t* c, const float* row, int v) {
  return c->one[v] ? QL_SET1(row[c->blk[v]]) : QL_GATHER(c->idx[v], row);
}

// Weight row |kk| of the strip, dequantized into |out| (NV vectors; columns past the strip's
// width are 0). The SIMD decode when the strip is whole and the row's first value starts a byte;
// else (a short last strip, or sub-byte rows that do not start on a byte boundary when N is not a
// multiple of the values per byte) the values one by one, with the same float operations.
static inline __attribute__((always_inline)) CMLC_QL_TARGET void cmlc_ql_row(const cmlc_ql_ctx_t* c,
                                                                             int64_t kk,
                                                                             cmlc_ql_v* out,
                                                                             int kind) {
  const cmlc_quant_lin_t* p = c->p;
  const float* srow = p->scale + kk * p->nb;
  const float* zrow = p->zero ? p->zero + kk * p->nb : NULL;
  const int64_t e = kk * p->n + c->c0;
  const int shift = CMLC_QL_SHIFT(kind);
  if (c->width == CMLC_QL_COLS && (e & ((1 << shift) - 1)) == 0) {
    const uint8_t* b = p->w + (e >> shift);
    // The rows of a strip are N values apart, more than a page for large N: the hardware
    // prefetchers do not follow, so each row's line is asked for CMLC_QL_PF rows ahead (a
    // prefetch past the weights' end does not fault).
    _mm_prefetch((const char*)p->w + ((e + CMLC_QL_PF * p->n) >> shift), _MM_HINT_T0);
#pragma GCC unroll 4
    for (int v = 0; v < CMLC_QL_NV; ++v) {
      const uint8_t* bv = b + v * (CMLC_QL_W >> shift);
      const cmlc_ql_v s = cmlc_ql_block_vec(c, srow, v);
      cmlc_ql_vi q;
      if (kind == CMLC_QL_NF4_8 || kind == CMLC_QL_NF4_4) {
        // The NF4 index: the low 4 bits of the stored value (either sign).
        q = kind == CMLC_QL_NF4_8 ? QL_AND(QL_U8(bv), QL_SET1I(15)) : cmlc_ql_fields(4, bv);
#if CMLC_QL_ZMM
        out[v] = QL_MUL(_mm512_permutexvar_ps(q, c->nf4lo), s);
#else
        const __m256 lo = _mm256_permutevar8x32_ps(c->nf4lo, q);
        const __m256 hi = _mm256_permutevar8x32_ps(c->nf4hi, q);
        const __m256 sel = _mm256_castsi256_ps(_mm256_slli_epi32(q, 28));  // bit 3 -> sign
        out[v] = QL_MUL(_mm256_blendv_ps(lo, hi, sel), s);
#endif
        continue;
      }
      switch (kind) {
        case CMLC_QL_I8:
          q = QL_I8(bv);
          break;
        case CMLC_QL_U8:
          q = QL_U8(bv);
          break;
        case CMLC_QL_I4:
          q = QL_SUBI(QL_XOR(cmlc_ql_fields(4, bv), QL_SET1I(8)), QL_SET1I(8));
          break;
        case CMLC_QL_U4:
          q = cmlc_ql_fields(4, bv);
          break;
        case CMLC_QL_I2:
          q = QL_SUBI(QL_XOR(cmlc_ql_fields(2, bv), QL_SET1I(2)), QL_SET1I(2));
          break;
        default:  // U2
          q = cmlc_ql_fields(2, bv);
          break;
      }
      out[v] = zrow ? QL_FMA(QL_CVT(q), s, cmlc_ql_block_vec(c, zrow, v)) : QL_MUL(QL_CVT(q), s);
    }
    return;
  }
  float t[CMLC_QL_COLS];
  const float* nf4 = cml_quant_nf4_table();
  for (int64_t j = 0; j < CMLC_QL_COLS; ++j) {
    if (j >= c->width) {
      t[j] = 0;
      continue;
    }
    const int64_t blk = (c->c0 + j) / p->block;
    const int q = cmlc_quant_lin_int_at(p->wdt, p->w, e + j);
    t[j] = p->nf4 ? nf4[q & 15] * srow[blk]
                  : (zrow ? fmaf((float)q, srow[blk], zrow[blk]) : (float)q * srow[blk]);
  }
  for (int v = 0; v < CMLC_QL_NV; ++v) out[v] = QL_LOAD(t + v * CMLC_QL_W);
}

// Loads (|first|: zeros) or stores the strip's columns of one output row.
static inline __attribute__((always_inline)) CMLC_QL_TARGET void cmlc_ql_get(const cmlc_ql_ctx_t* c,
                                                                             const float* y,
                                                                             bool first,
                                                                             cmlc_ql_v* acc) {
  if (first) {
    for (int v = 0; v < CMLC_QL_NV; ++v) acc[v] = QL_ZERO();
  } else if (c->width == CMLC_QL_COLS) {
    for (int v = 0; v < CMLC_QL_NV; ++v) acc[v] = QL_LOAD(y + v * CMLC_QL_W);
  } else {
    float t[CMLC_QL_COLS] = {0};
    memcpy(t, y, sizeof(float) * (size_t)c->width);
    for (int v = 0; v < CMLC_QL_NV; ++v) acc[v] = QL_LOAD(t + v * CMLC_QL_W);
  }
}

static inline __attribute__((always_inline)) CMLC_QL_TARGET void cmlc_ql_put(const cmlc_ql_ctx_t* c,
                                                                             float* y,
                                                                             const cmlc_ql_v* acc) {
  if (c->width == CMLC_QL_COLS) {
    for (int v = 0; v < CMLC_QL_NV; ++v) QL_STORE(y + v * CMLC_QL_W, acc[v]);
  } else {
    float t[CMLC_QL_COLS];
    for (int v = 0; v < CMLC_QL_NV; ++v) QL_STORE(t + v * CMLC_QL_W, acc[v]);
    memcpy(y, t, sizeof(float) * (size_t)c->width);
  }
}

// The direct driver for |mr| (<= CMLC_QL_MD) activation rows from |i0| over all of K.
static inline __attribute__((always_inline)) CMLC_QL_TARGET void cmlc_ql_direct(
    const cmlc_ql_ctx_t* c, int64_t i0, int mr, int kind) {
  const cmlc_quant_lin_t* p = c->p;
  cmlc_ql_v acc[CMLC_QL_MD][CMLC_QL_NV];
#pragma GCC unroll 4
  for (int r = 0; r < mr; ++r) cmlc_ql_get(c, NULL, true, acc[r]);
  const float* x = p->x + i0 * p->k;
  for (int64_t kk = 0; kk < p->k; ++kk) {
    cmlc_ql_v w[CMLC_QL_NV];
    cmlc_ql_row(c, kk, w, kind);
#pragma GCC unroll 4
    for (int r = 0; r < mr; ++r) {
      const cmlc_ql_v xb = QL_SET1(x[r * p->k + kk]);
#pragma GCC unroll 4
      for (int v = 0; v < CMLC_QL_NV; ++v) acc[r][v] = QL_FMA(xb, w[v], acc[r][v]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < mr; ++r) cmlc_ql_put(c, p->y + (i0 + r) * p->n + c->c0, acc[r]);
}

// The panel driver's tile: |mr| (<= CMLC_QL_MR) rows from |i0|, weight rows [k0, k1) decoded in
// |panel| (CMLC_QL_COLS floats per row), added to the strip of y (|first|: k0 = 0, y unread).
static inline __attribute__((always_inline)) CMLC_QL_TARGET void cmlc_ql_tile(
    const cmlc_ql_ctx_t* c, const float* panel, int64_t k0, int64_t k1, int64_t i0, int mr,
    bool first) {
  const cmlc_quant_lin_t* p = c->p;
  cmlc_ql_v acc[CMLC_QL_MR][CMLC_QL_NV];
  float* y = p->y + i0 * p->n + c->c0;
#pragma GCC unroll 6
  for (int r = 0; r < mr; ++r) cmlc_ql_get(c, y + r * p->n, first, acc[r]);
  const float* x = p->x + i0 * p->k;
  for (int64_t kk = k0; kk < k1; ++kk) {
    const float* pr = panel + (kk - k0) * CMLC_QL_COLS;
    cmlc_ql_v xb[CMLC_QL_MR];
#pragma GCC unroll 6
    for (int r = 0; r < mr; ++r) xb[r] = QL_SET1(x[r * p->k + kk]);
#pragma GCC unroll 4
    for (int v = 0; v < CMLC_QL_NV; ++v) {
      const cmlc_ql_v w = QL_LOAD(pr + v * CMLC_QL_W);
#pragma GCC unroll 6
      for (int r = 0; r < mr; ++r) acc[r][v] = QL_FMA(xb[r], w, acc[r][v]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < mr; ++r) cmlc_ql_put(c, y + r * p->n, acc[r]);
}

// Sets the strip [c0, c0 + width) of |c|: per vector, one scale block or the lanes' blocks.
static CMLC_QL_TARGET void cmlc_ql_strip(cmlc_ql_ctx_t* c, int64_t c0, int64_t width) {
  c->c0 = c0;
  c->width = width;
  for (int v = 0; v < CMLC_QL_NV; ++v) {
    const int64_t a = c0 + v * CMLC_QL_W, b = a + CMLC_QL_W - 1;
    c->blk[v] = a / c->p->block;
    c->one[v] = b / c->p->block == c->blk[v];
    int32_t lanes[CMLC_QL_W];
    // Lanes past N repeat the last block (their weights are never decoded by the gather path:
    // a short strip takes the value-by-value path).
    for (int j = 0; j < CMLC_QL_W; ++j) {
      const int64_t col = a + j < c->p->n ? a + j : c->p->n - 1;
      lanes[j] = (int32_t)(col / c->p->block);
    }
    c->idx[v] = QL_LOADI(lanes);
  }
}

// The panel driver's tiles over every activation row for weight rows [k0, k1) in |panel|.
static CMLC_QL_TARGET void cmlc_ql_tiles(const cmlc_ql_ctx_t* c, const float* panel, int64_t k0,
                                         int64_t k1) {
  const int64_t m = c->p->m;
  for (int64_t i0 = 0; i0 < m; i0 += CMLC_QL_MR) {
    switch (m - i0 < CMLC_QL_MR ? m - i0 : CMLC_QL_MR) {
      case 1:
        cmlc_ql_tile(c, panel, k0, k1, i0, 1, k0 == 0);
        break;
      case 2:
        cmlc_ql_tile(c, panel, k0, k1, i0, 2, k0 == 0);
        break;
#if CMLC_QL_MR > 3
      case 3:
        cmlc_ql_tile(c, panel, k0, k1, i0, 3, k0 == 0);
        break;
      case 4:
        cmlc_ql_tile(c, panel, k0, k1, i0, 4, k0 == 0);
        break;
      case 5:
        cmlc_ql_tile(c, panel, k0, k1, i0, 5, k0 == 0);
        break;
#endif
      default:
        cmlc_ql_tile(c, panel, k0, k1, i0, CMLC_QL_MR, k0 == 0);
        break;
    }
  }
}

// One strip (set in |c|) for weights of |kind|: the direct driver, or the panel driver.
static inline __attribute__((always_inline)) CMLC_QL_TARGET void cmlc_ql_strip_run(
    const cmlc_ql_ctx_t* c, float* panel, int kind) {
  const cmlc_quant_lin_t* p = c->p;
  if (p->m <= CMLC_QL_MD || !panel) {
    for (int64_t i0 = 0; i0 < p->m; i0 += CMLC_QL_MD) {
      switch (p->m - i0 < CMLC_QL_MD ? p->m - i0 : CMLC_QL_MD) {
        case 1:
          cmlc_ql_direct(c, i0, 1, kind);
          break;
#if CMLC_QL_MD > 2
        case 2:
          cmlc_ql_direct(c, i0, 2, kind);
          break;
        case 3:
          cmlc_ql_direct(c, i0, 3, kind);
          break;
#endif
        default:
          cmlc_ql_direct(c, i0, CMLC_QL_MD, kind);
          break;
      }
    }
    return;
  }
  for (int64_t k0 = 0; k0 < p->k; k0 += CMLC_QL_KC) {
    const int64_t k1 = p->k - k0 < CMLC_QL_KC ? p->k : k0 + CMLC_QL_KC;
    for (int64_t kk = k0; kk < k1; ++kk) {
      cmlc_ql_v w[CMLC_QL_NV];
      cmlc_ql_row(c, kk, w, kind);
      for (int v = 0; v < CMLC_QL_NV; ++v) {
        QL_STORE(panel + (kk - k0) * CMLC_QL_COLS + v * CMLC_QL_W, w[v]);
      }
    }
    cmlc_ql_tiles(c, panel, k0, k1);
  }
}

// y[i, c0:c1) = sum_k x[i, k] * w[k, c0:c1) (no bias, no activation) for every activation row;
// see cmlc_quant_lin_fn.
CMLC_QL_TARGET void CMLC_QL_NAME(const cmlc_quant_lin_t* p, int64_t c0, int64_t c1, float* panel) {
  cmlc_ql_ctx_t c;
  memset(&c, 0, sizeof c);
  c.p = p;
  const float* nf4 = cml_quant_nf4_table();
#if CMLC_QL_ZMM
  c.nf4lo = _mm512_loadu_ps(nf4);
#else
  c.nf4lo = _mm256_loadu_ps(nf4);
  c.nf4hi = _mm256_loadu_ps(nf4 + 8);
#endif
  const int bits = cml_dtype_bits(p->wdt);
  int kind;
  if (p->nf4) {
    kind = bits == 8 ? CMLC_QL_NF4_8 : CMLC_QL_NF4_4;
  } else {
    switch (p->wdt) {
      case CML_DTYPE_I8:
        kind = CMLC_QL_I8;
        break;
      case CML_DTYPE_U8:
        kind = CMLC_QL_U8;
        break;
      case CML_DTYPE_I4:
        kind = CMLC_QL_I4;
        break;
      case CML_DTYPE_U4:
        kind = CMLC_QL_U4;
        break;
      case CML_DTYPE_I2:
        kind = CMLC_QL_I2;
        break;
      default:
        kind = CMLC_QL_U2;
        break;
    }
  }
  for (int64_t s0 = c0; s0 < c1; s0 += CMLC_QL_COLS) {
    cmlc_ql_strip(&c, s0, c1 - s0 < CMLC_QL_COLS ? c1 - s0 : CMLC_QL_COLS);
    switch (kind) {
      case CMLC_QL_I8:
        cmlc_ql_strip_run(&c, panel, CMLC_QL_I8);
        break;
      case CMLC_QL_U8:
        cmlc_ql_strip_run(&c, panel, CMLC_QL_U8);
        break;
      case CMLC_QL_I4:
        cmlc_ql_strip_run(&c, panel, CMLC_QL_I4);
        break;
      case CMLC_QL_U4:
        cmlc_ql_strip_run(&c, panel, CMLC_QL_U4);
        break;
      case CMLC_QL_I2:
        cmlc_ql_strip_run(&c, panel, CMLC_QL_I2);
        break;
      case CMLC_QL_U2:
        cmlc_ql_strip_run(&c, panel, CMLC_QL_U2);
        break;
      case CMLC_QL_NF4_8:
        cmlc_ql_strip_run(&c, panel, CMLC_QL_NF4_8);
        break;
      default:
        cmlc_ql_strip_run(&c, panel, CMLC_QL_NF4_4);
        break;
    }
  }
}
