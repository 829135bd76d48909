// SPDX-License-Identifier: Apache-2.0
// kernels/x86_64/gemm_x86_64_avx512bf16.c: bf16 x bf16 -> f32 or bf16 GEMM with AVX-512 BF16
// (vdpbf16ps): packing of k pairs, a 12 x 32 micro-kernel whose store can round to bf16, and
// its cache-blocked driver. Only called when options->avx512_bf16 (linalg.c); compiled with
// function attributes, so the file needs no global -m flags.
//
// vdpbf16ps multiplies pairs of bf16 values and adds both products to an f32 lane:
// c[i] += a[2i] * b[2i] + a[2i+1] * b[2i+1]. So B is packed in NR-column slivers of k pairs
// (for each pair: 32 columns x {k even, k odd}, one zmm per 16 columns) and A in MR-row slivers
// of k pairs (one 32-bit {k even, k odd} value per row, broadcast). An odd k is padded with a
// zero in both operands, and a partial tile with zero rows / columns, so padding adds 0 * 0.
// Packing has vector / word-copy fast paths for row-major and transposed operands (offset
// tables that are affine), and a gather through the tables for any other layout.
//
// The blocking, the thread split and the batch mode are the k-pair driver's
// (gemm_x86_64_pairs.c, shared with the integer GEMM): this file gives it the bf16 packing and
// micro-kernel.
//
// bf16 output: the micro-kernel of the last k block rounds its f32 sums to bf16 in registers
// and stores them to the output (round to nearest even, NaN -> the canonical quiet NaN of its
// sign: the same bits as rounding the f32 result with cml_f64_to_bf16). Earlier k blocks (only
// when K > KC) keep f32 partial sums in the caller's f32 buffer. There is no conversion pass.
//
// Accuracy (documented bound, checked by tests/unit/c_kernels_gemm_bf16_test.c): bf16 x bf16
// products are exact in f32; each vdpbf16ps adds two of them to the f32 accumulator (Intel
// documents two additions, the odd element's product first, each rounded to nearest even, with
// denormal inputs and results flushed to zero; an implementation that fuses the two additions
// rounds less). The order differs from the f32 FMA path, so results are not bit-identical to
// it; both obey
// |c - exact| <= (K + 2) * 2^-24 * sum_k |a_k * b_k| (+ 2^-126 per step when values are
// denormal), which is the bound the tests use for every path.
#include "backends/c/kernels/generic/linalg_internal.h"

#if defined(CMLC_HAVE_X86_64)
#include <immintrin.h>

enum {
  CMLC_BF_MR = CMLC__GEMM_PAIRS_MR,
  CMLC_BF_NR = CMLC__GEMM_PAIRS_NR,
};

#define CMLC_BF_TARGET __attribute__((target("avx512f,avx512bw,avx512bf16")))

#define CMLC_BF_NOT_AFFINE CMLC__GEMM_PAIRS_NOT_AFFINE

static int64_t cmlc_bf_min(int64_t a, int64_t b) { return a < b ? a : b; }

//===--- micro-kernel ---===//

// Rounds 16 f32 lanes to bf16 (nearest even; NaN -> sign | 0x7FC0), in the low 16 bits of each
// 32-bit lane: bit-identical to cml_f64_to_bf16 of each value (exact f32 -> f64 first).
static inline __attribute__((always_inline)) CMLC_BF_TARGET __m512i cmlc_bf_round(__m512 v) {
  const __m512i u = _mm512_castps_si512(v);
  const __m512i hi = _mm512_srli_epi32(u, 16);
  const __m512i bias =
      _mm512_add_epi32(_mm512_and_si512(hi, _mm512_set1_epi32(1)), _mm512_set1_epi32(0x7FFF));
  const __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, bias), 16);
  const __m512i qnan =
      _mm512_or_si512(_mm512_and_si512(hi, _mm512_set1_epi32(0x8000)), _mm512_set1_epi32(0x7FC0));
  return _mm512_mask_mov_epi32(r, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), qnan);
}

#define CMLC_BF_ROW(r, i)                                  \
  do {                                                     \
    __m512bh av_ = (__m512bh)_mm512_set1_epi32((int)a[i]); \
    acc##r##0 = _mm512_dpbf16_ps(acc##r##0, av_, b0);      \
    acc##r##1 = _mm512_dpbf16_ps(acc##r##1, av_, b1);      \
  } while (0)

#define CMLC_BF_STORE(r, i)                                                        \
  do {                                                                             \
    if ((i) < rows) {                                                              \
      float* cr_ = c + (int64_t)(i)*ldc;                                           \
      if (accumulate) {                                                            \
        acc##r##0 = _mm512_add_ps(_mm512_maskz_loadu_ps(m0, cr_), acc##r##0);      \
        acc##r##1 = _mm512_add_ps(_mm512_maskz_loadu_ps(m1, cr_ + 16), acc##r##1); \
      }                                                                            \
      if (out) {                                                                   \
        uint16_t* or_ = out + (int64_t)(i)*ldo;                                    \
        _mm512_mask_cvtepi32_storeu_epi16(or_, m0, cmlc_bf_round(acc##r##0));      \
        _mm512_mask_cvtepi32_storeu_epi16(or_ + 16, m1, cmlc_bf_round(acc##r##1)); \
      } else {                                                                     \
        _mm512_mask_storeu_ps(cr_, m0, acc##r##0);                                 \
        _mm512_mask_storeu_ps(cr_ + 16, m1, acc##r##1);                            \
      }                                                                            \
    }                                                                              \
  } while (0)

// Sums = (accumulate ? C : 0) + A sliver x B sliver over |kp| k pairs, for rows x cols of the
// tile. |a|: kp x MR packed pairs; |b|: kp x NR x 2 bf16 (both zero padded). The sums go to C
// (f32, row stride |ldc|), or, when |out| is not NULL, rounded to bf16 to |out| (row stride
// |ldo|; C is then only read, when |accumulate|).
CMLC_BF_TARGET void cmlc__gemm_ukernel_bf16_avx512_12x32(int64_t kp, const uint32_t* a,
                                                         const uint32_t* b, void* cv, int64_t ldc,
                                                         int accumulate, uint16_t* out, int64_t ldo,
                                                         int rows, int cols) {
  float* c = cv;
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
  // Fetch the tile's partial sums and output rows while the k loop runs.
  for (int r = 0; r < rows; ++r) {
    if (accumulate || !out) {
      _mm_prefetch((const char*)(c + (int64_t)r * ldc), _MM_HINT_T0);
      _mm_prefetch((const char*)(c + (int64_t)r * ldc + 31), _MM_HINT_T0);
    }
    if (out) {
      _mm_prefetch((const char*)(out + (int64_t)r * ldo), _MM_HINT_T0);
      _mm_prefetch((const char*)(out + (int64_t)r * ldo + 31), _MM_HINT_T0);
    }
  }
  for (int64_t q = 0; q < kp; ++q) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512((const void*)b);
    const __m512bh b1 = (__m512bh)_mm512_loadu_si512((const void*)(b + 16));
    CMLC_BF_ROW(0, 0);
    CMLC_BF_ROW(1, 1);
    CMLC_BF_ROW(2, 2);
    CMLC_BF_ROW(3, 3);
    CMLC_BF_ROW(4, 4);
    CMLC_BF_ROW(5, 5);
    CMLC_BF_ROW(6, 6);
    CMLC_BF_ROW(7, 7);
    CMLC_BF_ROW(8, 8);
    CMLC_BF_ROW(9, 9);
    CMLC_BF_ROW(A, 10);
    CMLC_BF_ROW(B, 11);
    a += CMLC_BF_MR;
    b += CMLC_BF_NR;
  }
  const __mmask16 m0 = cols >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << cols) - 1u);
  const __mmask16 m1 = cols >= 32   ? (__mmask16)0xFFFF
                       : cols <= 16 ? (__mmask16)0
                                    : (__mmask16)((1u << (cols - 16)) - 1u);
  CMLC_BF_STORE(0, 0);
  CMLC_BF_STORE(1, 1);
  CMLC_BF_STORE(2, 2);
  CMLC_BF_STORE(3, 3);
  CMLC_BF_STORE(4, 4);
  CMLC_BF_STORE(5, 5);
  CMLC_BF_STORE(6, 6);
  CMLC_BF_STORE(7, 7);
  CMLC_BF_STORE(8, 8);
  CMLC_BF_STORE(9, 9);
  CMLC_BF_STORE(A, 10);
  CMLC_BF_STORE(B, 11);
}

#undef CMLC_BF_ROW
#undef CMLC_BF_STORE

//===--- packing ---===//

// Two consecutive bf16 values as one {even, odd} pair word (little endian).
static inline uint32_t cmlc_bf_pair(const uint16_t* p) {
  uint32_t w;
  memcpy(&w, p, sizeof w);
  return w;
}

// Packs A rows [ic, ic+mc) x k [pc, pc+kc) of batch |bt| into MR-row slivers of k pairs.
static void cmlc_bf_pack_a(const cmlc__gemm_operand_t* a, const cmlc__gemm_pairs_access_t* acc,
                           int64_t bt, int64_t ic, int64_t mc, int64_t pc, int64_t kc,
                           uint32_t* dst) {
  const uint16_t* data = (const uint16_t*)a->data + a->batch_offsets[bt];
  const int64_t* cols = a->col_offsets + pc;
  const int64_t kp = (kc + 1) / 2, full = kc / 2;
  for (int64_t i = 0; i < mc; i += CMLC_BF_MR) {
    uint32_t* sliver = dst + i * kp;
    const int rows = (int)cmlc_bf_min(CMLC_BF_MR, mc - i);
    if (acc->a_row == 1 && acc->a_col != CMLC_BF_NOT_AFFINE && rows == CMLC_BF_MR) {
      // Transposed A (rows contiguous): MR consecutive values per k.
      const int64_t cs = acc->a_col;
      const uint16_t* src = data + (ic + i) + pc * cs;
      for (int64_t q = 0; q < kp; ++q) {
        const uint16_t* r0 = src + 2 * q * cs;
        uint32_t* d = sliver + q * CMLC_BF_MR;
        if (2 * q + 1 < kc) {
          const uint16_t* r1 = r0 + cs;
          for (int r = 0; r < CMLC_BF_MR; ++r) d[r] = (uint32_t)r0[r] | (uint32_t)r1[r] << 16;
        } else {
          for (int r = 0; r < CMLC_BF_MR; ++r) d[r] = r0[r];
        }
      }
      continue;
    }
    if (acc->a_col == 1) {
      // Row-major A: the k pairs of a row are consecutive words; MR row streams are read
      // side by side so the sliver is written in order.
      const uint16_t* src[CMLC_BF_MR];
      for (int r = 0; r < CMLC_BF_MR; ++r)
        src[r] = data + a->row_offsets[ic + i + (r < rows ? r : 0)] + pc;
      // Whole groups of 16 pairs: the f32 packer's 16 x 16 transposes move the pairs as 32-bit
      // words (shuffles only, the bits unchanged); the rest pair by pair.
      const int64_t full16 = full / 16 * 16;
      if (full16 > 0) {
        const float* rows32[CMLC_BF_MR];
        for (int r = 0; r < CMLC_BF_MR; ++r) rows32[r] = (const float*)(const void*)src[r];
        cmlc__gemm_pack_a_f32_avx512_12(rows32, full16, (float*)(void*)sliver);
      }
      for (int64_t q = full16; q < full; ++q) {
        uint32_t* d = sliver + q * CMLC_BF_MR;
        for (int r = 0; r < CMLC_BF_MR; ++r) d[r] = cmlc_bf_pair(src[r] + 2 * q);
      }
      if (kp > full) {
        for (int r = 0; r < CMLC_BF_MR; ++r) sliver[full * CMLC_BF_MR + r] = src[r][2 * full];
      }
      if (rows < CMLC_BF_MR) {
        for (int64_t q = 0; q < kp; ++q)
          for (int r = rows; r < CMLC_BF_MR; ++r) sliver[q * CMLC_BF_MR + r] = 0;
      }
      continue;
    }
    for (int r = 0; r < CMLC_BF_MR; ++r) {
      if (r >= rows) {
        for (int64_t q = 0; q < kp; ++q) sliver[q * CMLC_BF_MR + r] = 0;
        continue;
      }
      const uint16_t* row = data + a->row_offsets[ic + i + r];
      for (int64_t q = 0; q < kp; ++q) {
        const int64_t k0 = 2 * q;
        const uint32_t lo = row[cols[k0]];
        const uint32_t hi = k0 + 1 < kc ? row[cols[k0 + 1]] : 0u;
        sliver[q * CMLC_BF_MR + r] = lo | hi << 16;
      }
    }
  }
}

// Interleaves two rows of 32 bf16 (|r1| may be NULL: zeros) into 32 {even, odd} pairs, the
// columns past |cols| zero.
static inline __attribute__((always_inline)) CMLC_BF_TARGET void cmlc_bf_interleave(
    const uint16_t* r0, const uint16_t* r1, __mmask32 m, uint16_t* d) {
  static const uint16_t lo_idx[32] = {0, 32, 1, 33, 2,  34, 3,  35, 4,  36, 5,  37, 6,  38, 7,  39,
                                      8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
  static const uint16_t hi_idx[32] = {16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21,
                                      53, 22, 54, 23, 55, 24, 56, 25, 57, 26, 58,
                                      27, 59, 28, 60, 29, 61, 30, 62, 31, 63};
  const __m512i x = _mm512_maskz_loadu_epi16(m, r0);
  const __m512i y = r1 ? _mm512_maskz_loadu_epi16(m, r1) : _mm512_setzero_si512();
  _mm512_storeu_si512((void*)d,
                      _mm512_permutex2var_epi16(x, _mm512_loadu_si512((const void*)lo_idx), y));
  _mm512_storeu_si512((void*)(d + 32),
                      _mm512_permutex2var_epi16(x, _mm512_loadu_si512((const void*)hi_idx), y));
}

// Packs B slivers [s0, s1) of k [pc, pc+kc) x columns [jc, jc+nc) of batch |bt|.
static CMLC_BF_TARGET void cmlc_bf_pack_b(const cmlc__gemm_operand_t* bop,
                                          const cmlc__gemm_pairs_access_t* acc, int64_t bt,
                                          int64_t jc, int64_t nc, int64_t pc, int64_t kc,
                                          int64_t s0, int64_t s1, uint32_t* panel_words) {
  uint16_t* panel = (uint16_t*)(void*)panel_words;
  const uint16_t* data = (const uint16_t*)bop->data + bop->batch_offsets[bt];
  const int64_t kp = (kc + 1) / 2, full = kc / 2;
  for (int64_t s = s0; s < s1; ++s) {
    uint16_t* sliver = panel + s * kp * 2 * CMLC_BF_NR;
    const int64_t col0 = s * CMLC_BF_NR;
    const int64_t cols = cmlc_bf_min(CMLC_BF_NR, nc - col0);
    const int64_t* coff = bop->col_offsets + jc + col0;
    if (acc->b_col == 1) {
      // Row-major B: two k rows of 32 columns interleave into one pair row.
      const __mmask32 m = cols >= 32 ? (__mmask32)0xFFFFFFFFu : (__mmask32)((1u << cols) - 1u);
      for (int64_t q = 0; q < kp; ++q) {
        const int64_t k0 = pc + 2 * q;
        const uint16_t* r0 = data + bop->row_offsets[k0] + jc + col0;
        const uint16_t* r1 = k0 + 1 < pc + kc ? data + bop->row_offsets[k0 + 1] + jc + col0 : NULL;
        cmlc_bf_interleave(r0, r1, m, sliver + q * 2 * CMLC_BF_NR);
      }
      continue;
    }
    uint32_t* words = (uint32_t*)(void*)sliver;
    if (acc->b_row == 1) {
      // Transposed B (k contiguous): the k pairs of a column are consecutive words.
      for (int64_t j = 0; j < CMLC_BF_NR; ++j) {
        if (j >= cols) {
          for (int64_t q = 0; q < kp; ++q) words[q * CMLC_BF_NR + j] = 0;
          continue;
        }
        const uint16_t* src = data + coff[j] + pc;
        for (int64_t q = 0; q < full; ++q) words[q * CMLC_BF_NR + j] = cmlc_bf_pair(src + 2 * q);
        if (kp > full) words[full * CMLC_BF_NR + j] = src[2 * full];
      }
      continue;
    }
    for (int64_t q = 0; q < kp; ++q) {
      const int64_t k0 = pc + 2 * q;
      const uint16_t* r0 = data + bop->row_offsets[k0];
      const uint16_t* r1 = k0 + 1 < pc + kc ? data + bop->row_offsets[k0 + 1] : NULL;
      uint16_t* d = sliver + q * 2 * CMLC_BF_NR;
      for (int64_t j = 0; j < cols; ++j) {
        d[2 * j] = r0[coff[j]];
        d[2 * j + 1] = r1 ? r1[coff[j]] : 0;
      }
      for (int64_t j = cols; j < CMLC_BF_NR; ++j) d[2 * j] = d[2 * j + 1] = 0;
    }
  }
}

//===--- driver ---===//

static const cmlc__gemm_pairs_kernels_t cmlc_bf_kernels = {
    .k_per_word = 2,
    .pack_a = cmlc_bf_pack_a,
    .pack_b = cmlc_bf_pack_b,
    .ukernel = cmlc__gemm_ukernel_bf16_avx512_12x32,
};

size_t cmlc__gemm_bf16_scratch(int64_t m, int64_t n, int64_t k, int threads) {
  return cmlc__gemm_pairs_scratch(m, n, k, 2, threads);
}

void cmlc__gemm_bf16(const cmlc__gemm_problem_t* p, uint16_t* out_bf16, cmlc_pool_t* pool,
                     void* scratch, int threads) {
  const cmlc__gemm_pairs_problem_t q = {
      p->batch, p->m, p->n, p->k, p->a, p->b, p->c, out_bf16,
  };
  cmlc__gemm_pairs(&cmlc_bf_kernels, &q, pool, scratch, threads);
}

#endif  // CMLC_HAVE_X86_64
