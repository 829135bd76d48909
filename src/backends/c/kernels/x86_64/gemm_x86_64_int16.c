// SPDX-License-Identifier: Apache-2.0
// kernels/x86_64/gemm_x86_64_int16.c: integer products with an i32 accumulator over I8, U8 or
// I16 operands (DotGeneral, linalg.c): packing that widens to i16 with k pairs interleaved, and
// 12 x 32 micro-kernels that add two i16 products per i32 lane: vpdpwssd (AVX-512 VNNI),
// vpmaddwd + vpaddd (AVX-512 without VNNI; AVX2, as four 6 x 16 sub-tiles of the same packed
// tile). The same kernel bodies with vpmulld serve wider operands packed one 32-bit value per
// word (gemm_x86_64_int32.c). The blocking and threads are the k-pair driver's
// (gemm_x86_64_pairs.c, shared with the bf16 GEMM). Compiled with function attributes, so the
// file needs no global -m flags.
//
// Exactness: i8, u8 and i16 values are i16 values, so widening is exact. Every product and sum
// is taken mod 2^32: vpdpwssd is the wrapping form (not vpdpwssds), vpaddd wraps, and
// vpmaddwd's one overflowing case (both pairs -32768 * -32768) gives 0x80000000, which is 2^31
// mod 2^32. The generic path sums the same products in uint64 and keeps the low 32 bits; both
// compute the exact sum mod 2^32 (addition mod 2^32 is associative and commutative), so the
// results are the same bits whatever the order, the tiling or the thread count. Padding (an odd
// K's last pair, a partial tile's rows and columns) is zero in both operands.
//
// Thread-safety: reentrant; no state.
#include "backends/c/kernels/generic/linalg_internal.h"

#if defined(CMLC_HAVE_X86_64)
#include <immintrin.h>

enum {
  CMLC_I16_MR = CMLC__GEMM_PAIRS_MR,
  CMLC_I16_NR = CMLC__GEMM_PAIRS_NR,
};

#define CMLC_I16_AVX2 __attribute__((target("avx2,fma")))
#define CMLC_I16_AVX512 __attribute__((target("avx2,fma,avx512f,avx512bw")))
#define CMLC_I16_VNNI __attribute__((target("avx2,fma,avx512f,avx512bw,avx512vnni")))
#define CMLC_I16_INLINE static inline __attribute__((always_inline))

#define CMLC_I16_NOT_AFFINE CMLC__GEMM_PAIRS_NOT_AFFINE

static int64_t cmlc_i16_min(int64_t a, int64_t b) { return a < b ? a : b; }

bool cmlc__gemm_i16_supports(cml_dtype_t dtype) {
  return dtype == CML_DTYPE_I8 || dtype == CML_DTYPE_U8 || dtype == CML_DTYPE_I16;
}

//===--- packing ---===//

// Element |i| of an I8, U8 or I16 array as an integer (exact in i16). |dtype| is a constant
// at every call (the packers are instantiated per dtype), so the choice folds away.
CMLC_I16_INLINE int32_t cmlc_i16_load(const void* data, int64_t i, cml_dtype_t dtype) {
  if (dtype == CML_DTYPE_I8) return ((const int8_t*)data)[i];
  if (dtype == CML_DTYPE_U8) return ((const uint8_t*)data)[i];
  return ((const int16_t*)data)[i];
}

// One {k even, k odd} pair word of two i16 values (little endian).
CMLC_I16_INLINE uint32_t cmlc_i16_pair(int32_t lo, int32_t hi) {
  return (uint32_t)(uint16_t)lo | (uint32_t)(uint16_t)hi << 16;
}

// Packs A rows [ic, ic+mc) x k [pc, pc+kc) of batch |bt| into MR-row slivers of pair words.
CMLC_I16_INLINE void cmlc_i16_pack_a_t(const cmlc__gemm_operand_t* a,
                                       const cmlc__gemm_pairs_access_t* acc, int64_t bt, int64_t ic,
                                       int64_t mc, int64_t pc, int64_t kc, uint32_t* dst,
                                       cml_dtype_t dt) {
  const void* data = a->data;
  const int64_t boff = a->batch_offsets[bt];
  const int64_t* cols = a->col_offsets + pc;
  const int64_t kp = (kc + 1) / 2, full = kc / 2;
  for (int64_t i = 0; i < mc; i += CMLC_I16_MR) {
    uint32_t* sliver = dst + i * kp;
    const int rows = (int)cmlc_i16_min(CMLC_I16_MR, mc - i);
    if (acc->a_row == 1 && acc->a_col != CMLC_I16_NOT_AFFINE && rows == CMLC_I16_MR) {
      // Transposed A (rows contiguous): MR consecutive values per k.
      const int64_t cs = acc->a_col;
      const int64_t o = boff + (ic + i) + pc * cs;
      for (int64_t q = 0; q < kp; ++q) {
        const int64_t o0 = o + 2 * q * cs;
        uint32_t* d = sliver + q * CMLC_I16_MR;
        if (2 * q + 1 < kc) {
          for (int r = 0; r < CMLC_I16_MR; ++r)
            d[r] = cmlc_i16_pair(cmlc_i16_load(data, o0 + r, dt),
                                 cmlc_i16_load(data, o0 + cs + r, dt));
        } else {
          for (int r = 0; r < CMLC_I16_MR; ++r)
            d[r] = cmlc_i16_pair(cmlc_i16_load(data, o0 + r, dt), 0);
        }
      }
      continue;
    }
    for (int r = 0; r < CMLC_I16_MR; ++r) {
      uint32_t* d = sliver + r;
      if (r >= rows) {
        for (int64_t q = 0; q < kp; ++q) d[q * CMLC_I16_MR] = 0;
        continue;
      }
      const int64_t o = boff + a->row_offsets[ic + i + r];
      if (acc->a_col == 1) {
        // Row-major A: the row's k run, pair by pair.
        for (int64_t q = 0; q < full; ++q)
          d[q * CMLC_I16_MR] = cmlc_i16_pair(cmlc_i16_load(data, o + pc + 2 * q, dt),
                                             cmlc_i16_load(data, o + pc + 2 * q + 1, dt));
        if (kp > full)
          d[full * CMLC_I16_MR] = cmlc_i16_pair(cmlc_i16_load(data, o + pc + kc - 1, dt), 0);
        continue;
      }
      for (int64_t q = 0; q < full; ++q)
        d[q * CMLC_I16_MR] = cmlc_i16_pair(cmlc_i16_load(data, o + cols[2 * q], dt),
                                           cmlc_i16_load(data, o + cols[2 * q + 1], dt));
      if (kp > full)
        d[full * CMLC_I16_MR] = cmlc_i16_pair(cmlc_i16_load(data, o + cols[kc - 1], dt), 0);
    }
  }
}

// Packs B slivers [s0, s1) of k [pc, pc+kc) x columns [jc, jc+nc) of batch |bt|.
CMLC_I16_INLINE void cmlc_i16_pack_b_t(const cmlc__gemm_operand_t* b,
                                       const cmlc__gemm_pairs_access_t* acc, int64_t bt, int64_t jc,
                                       int64_t nc, int64_t pc, int64_t kc, int64_t s0, int64_t s1,
                                       uint32_t* panel, cml_dtype_t dt) {
  const void* data = b->data;
  const int64_t boff = b->batch_offsets[bt];
  const int64_t kp = (kc + 1) / 2, full = kc / 2;
  for (int64_t s = s0; s < s1; ++s) {
    uint32_t* sliver = panel + s * kp * CMLC_I16_NR;
    const int64_t col0 = s * CMLC_I16_NR;
    const int64_t cols = cmlc_i16_min(CMLC_I16_NR, nc - col0);
    const int64_t* coff = b->col_offsets + jc + col0;
    if (acc->b_col == 1) {
      // Row-major B: two k rows of NR columns interleave into one row of pair words.
      for (int64_t q = 0; q < kp; ++q) {
        const int64_t k0 = pc + 2 * q;
        const bool odd = k0 + 1 < pc + kc;
        const int64_t o0 = boff + b->row_offsets[k0] + jc + col0;
        const int64_t o1 = odd ? boff + b->row_offsets[k0 + 1] + jc + col0 : o0;
        uint32_t* d = sliver + q * CMLC_I16_NR;
        if (odd && cols == CMLC_I16_NR) {
          for (int j = 0; j < CMLC_I16_NR; ++j)
            d[j] = cmlc_i16_pair(cmlc_i16_load(data, o0 + j, dt), cmlc_i16_load(data, o1 + j, dt));
          continue;
        }
        for (int64_t j = 0; j < cols; ++j)
          d[j] = cmlc_i16_pair(cmlc_i16_load(data, o0 + j, dt),
                               odd ? cmlc_i16_load(data, o1 + j, dt) : 0);
        for (int64_t j = cols; j < CMLC_I16_NR; ++j) d[j] = 0;
      }
      continue;
    }
    if (acc->b_row == 1) {
      // Transposed B (k contiguous): the k pairs of a column are consecutive values.
      for (int64_t j = 0; j < CMLC_I16_NR; ++j) {
        uint32_t* d = sliver + j;
        if (j >= cols) {
          for (int64_t q = 0; q < kp; ++q) d[q * CMLC_I16_NR] = 0;
          continue;
        }
        const int64_t o = boff + coff[j] + pc;
        for (int64_t q = 0; q < full; ++q)
          d[q * CMLC_I16_NR] = cmlc_i16_pair(cmlc_i16_load(data, o + 2 * q, dt),
                                             cmlc_i16_load(data, o + 2 * q + 1, dt));
        if (kp > full)
          d[full * CMLC_I16_NR] = cmlc_i16_pair(cmlc_i16_load(data, o + kc - 1, dt), 0);
      }
      continue;
    }
    // Any other layout: through the offset tables.
    for (int64_t q = 0; q < kp; ++q) {
      const int64_t k0 = pc + 2 * q;
      const bool odd = k0 + 1 < pc + kc;
      const int64_t o0 = boff + b->row_offsets[k0];
      const int64_t o1 = odd ? boff + b->row_offsets[k0 + 1] : o0;
      uint32_t* d = sliver + q * CMLC_I16_NR;
      for (int64_t j = 0; j < cols; ++j)
        d[j] = cmlc_i16_pair(cmlc_i16_load(data, o0 + coff[j], dt),
                             odd ? cmlc_i16_load(data, o1 + coff[j], dt) : 0);
      for (int64_t j = cols; j < CMLC_I16_NR; ++j) d[j] = 0;
    }
  }
}

// The packers, instantiated per operand dtype (AVX2 code: every ISA that runs them has it).
static CMLC_I16_AVX2 void cmlc_i16_pack_a(const cmlc__gemm_operand_t* a,
                                          const cmlc__gemm_pairs_access_t* acc, int64_t bt,
                                          int64_t ic, int64_t mc, int64_t pc, int64_t kc,
                                          uint32_t* dst) {
  switch (a->dtype) {
    case CML_DTYPE_I8:
      cmlc_i16_pack_a_t(a, acc, bt, ic, mc, pc, kc, dst, CML_DTYPE_I8);
      break;
    case CML_DTYPE_U8:
      cmlc_i16_pack_a_t(a, acc, bt, ic, mc, pc, kc, dst, CML_DTYPE_U8);
      break;
    default:
      cmlc_i16_pack_a_t(a, acc, bt, ic, mc, pc, kc, dst, CML_DTYPE_I16);
      break;
  }
}

static CMLC_I16_AVX2 void cmlc_i16_pack_b(const cmlc__gemm_operand_t* b,
                                          const cmlc__gemm_pairs_access_t* acc, int64_t bt,
                                          int64_t jc, int64_t nc, int64_t pc, int64_t kc,
                                          int64_t s0, int64_t s1, uint32_t* panel) {
  switch (b->dtype) {
    case CML_DTYPE_I8:
      cmlc_i16_pack_b_t(b, acc, bt, jc, nc, pc, kc, s0, s1, panel, CML_DTYPE_I8);
      break;
    case CML_DTYPE_U8:
      cmlc_i16_pack_b_t(b, acc, bt, jc, nc, pc, kc, s0, s1, panel, CML_DTYPE_U8);
      break;
    default:
      cmlc_i16_pack_b_t(b, acc, bt, jc, nc, pc, kc, s0, s1, panel, CML_DTYPE_I16);
      break;
  }
}

//===--- AVX-512 micro-kernels (12 x 32) ---===//

// vpdpwssd: acc += a.lo * b.lo + a.hi * b.hi per i32 lane, wrapping.
#define CMLC_I16_MADD_VNNI(acc, a, b) acc = _mm512_dpwssd_epi32(acc, a, b)
// vpmaddwd then vpaddd: the same sum mod 2^32.
#define CMLC_I16_MADD_512(acc, a, b) acc = _mm512_add_epi32(acc, _mm512_madd_epi16(a, b))
// One 32-bit value per word (k_per_word 1, gemm_x86_64_int32.c's packing): vpmulld (the low 32
// bits of the product) then vpaddd.
#define CMLC_I16_MUL32_512(acc, a, b) acc = _mm512_add_epi32(acc, _mm512_mullo_epi32(a, b))

#define CMLC_I16_ROW512(MADD, r, i)                   \
  do {                                                \
    const __m512i av_ = _mm512_set1_epi32((int)a[i]); \
    MADD(acc##r##0, av_, b0);                         \
    MADD(acc##r##1, av_, b1);                         \
  } while (0)

#define CMLC_I16_STORE512(r, i)                                                          \
  do {                                                                                   \
    if ((i) < rows) {                                                                    \
      int32_t* cr_ = c + (int64_t)(i)*ldc;                                               \
      if (accumulate) {                                                                  \
        acc##r##0 = _mm512_add_epi32(_mm512_maskz_loadu_epi32(m0, cr_), acc##r##0);      \
        acc##r##1 = _mm512_add_epi32(_mm512_maskz_loadu_epi32(m1, cr_ + 16), acc##r##1); \
      }                                                                                  \
      _mm512_mask_storeu_epi32(cr_, m0, acc##r##0);                                      \
      _mm512_mask_storeu_epi32(cr_ + 16, m1, acc##r##1);                                 \
    }                                                                                    \
  } while (0)

// The body of both AVX-512 kernels: 24 zmm accumulators, one pair word of A broadcast per row
// and pair, two zmm of B (32 columns) per pair. Rows past |rows| are computed on A's zero
// padding and not stored.
#define CMLC_I16_KERNEL512(MADD)                                                        \
  int32_t* c = cv;                                                                      \
  (void)out;                                                                            \
  (void)ldo;                                                                            \
  __m512i acc00 = _mm512_setzero_si512(), acc01 = _mm512_setzero_si512();               \
  __m512i acc10 = _mm512_setzero_si512(), acc11 = _mm512_setzero_si512();               \
  __m512i acc20 = _mm512_setzero_si512(), acc21 = _mm512_setzero_si512();               \
  __m512i acc30 = _mm512_setzero_si512(), acc31 = _mm512_setzero_si512();               \
  __m512i acc40 = _mm512_setzero_si512(), acc41 = _mm512_setzero_si512();               \
  __m512i acc50 = _mm512_setzero_si512(), acc51 = _mm512_setzero_si512();               \
  __m512i acc60 = _mm512_setzero_si512(), acc61 = _mm512_setzero_si512();               \
  __m512i acc70 = _mm512_setzero_si512(), acc71 = _mm512_setzero_si512();               \
  __m512i acc80 = _mm512_setzero_si512(), acc81 = _mm512_setzero_si512();               \
  __m512i acc90 = _mm512_setzero_si512(), acc91 = _mm512_setzero_si512();               \
  __m512i accA0 = _mm512_setzero_si512(), accA1 = _mm512_setzero_si512();               \
  __m512i accB0 = _mm512_setzero_si512(), accB1 = _mm512_setzero_si512();               \
  for (int r = 0; r < rows; ++r) {                                                      \
    _mm_prefetch((const char*)(c + (int64_t)r * ldc), _MM_HINT_T0);                     \
    _mm_prefetch((const char*)(c + (int64_t)r * ldc + 31), _MM_HINT_T0);                \
  }                                                                                     \
  for (int64_t q = 0; q < kp; ++q) {                                                    \
    const __m512i b0 = _mm512_loadu_si512((const void*)b);                              \
    const __m512i b1 = _mm512_loadu_si512((const void*)(b + 16));                       \
    CMLC_I16_ROW512(MADD, 0, 0);                                                        \
    CMLC_I16_ROW512(MADD, 1, 1);                                                        \
    CMLC_I16_ROW512(MADD, 2, 2);                                                        \
    CMLC_I16_ROW512(MADD, 3, 3);                                                        \
    CMLC_I16_ROW512(MADD, 4, 4);                                                        \
    CMLC_I16_ROW512(MADD, 5, 5);                                                        \
    CMLC_I16_ROW512(MADD, 6, 6);                                                        \
    CMLC_I16_ROW512(MADD, 7, 7);                                                        \
    CMLC_I16_ROW512(MADD, 8, 8);                                                        \
    CMLC_I16_ROW512(MADD, 9, 9);                                                        \
    CMLC_I16_ROW512(MADD, A, 10);                                                       \
    CMLC_I16_ROW512(MADD, B, 11);                                                       \
    a += CMLC_I16_MR;                                                                   \
    b += CMLC_I16_NR;                                                                   \
  }                                                                                     \
  const __mmask16 m0 = cols >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << cols) - 1u); \
  const __mmask16 m1 = cols >= 32   ? (__mmask16)0xFFFF                                 \
                       : cols <= 16 ? (__mmask16)0                                      \
                                    : (__mmask16)((1u << (cols - 16)) - 1u);            \
  CMLC_I16_STORE512(0, 0);                                                              \
  CMLC_I16_STORE512(1, 1);                                                              \
  CMLC_I16_STORE512(2, 2);                                                              \
  CMLC_I16_STORE512(3, 3);                                                              \
  CMLC_I16_STORE512(4, 4);                                                              \
  CMLC_I16_STORE512(5, 5);                                                              \
  CMLC_I16_STORE512(6, 6);                                                              \
  CMLC_I16_STORE512(7, 7);                                                              \
  CMLC_I16_STORE512(8, 8);                                                              \
  CMLC_I16_STORE512(9, 9);                                                              \
  CMLC_I16_STORE512(A, 10);                                                             \
  CMLC_I16_STORE512(B, 11)

static CMLC_I16_VNNI void cmlc_i16_ukernel_avx512vnni_12x32(int64_t kp, const uint32_t* a,
                                                            const uint32_t* b, void* cv,
                                                            int64_t ldc, int accumulate,
                                                            uint16_t* out, int64_t ldo, int rows,
                                                            int cols) {
  CMLC_I16_KERNEL512(CMLC_I16_MADD_VNNI);
}

static CMLC_I16_AVX512 void cmlc_i16_ukernel_avx512_12x32(int64_t kp, const uint32_t* a,
                                                          const uint32_t* b, void* cv, int64_t ldc,
                                                          int accumulate, uint16_t* out,
                                                          int64_t ldo, int rows, int cols) {
  CMLC_I16_KERNEL512(CMLC_I16_MADD_512);
}

CMLC_I16_AVX512 void cmlc__gemm_ukernel_i32_avx512_12x32(int64_t kp, const uint32_t* a,
                                                         const uint32_t* b, void* cv, int64_t ldc,
                                                         int accumulate, uint16_t* out, int64_t ldo,
                                                         int rows, int cols) {
  CMLC_I16_KERNEL512(CMLC_I16_MUL32_512);
}

#undef CMLC_I16_KERNEL512
#undef CMLC_I16_STORE512
#undef CMLC_I16_ROW512
#undef CMLC_I16_MUL32_512
#undef CMLC_I16_MADD_512
#undef CMLC_I16_MADD_VNNI

//===--- AVX2 micro-kernel (the 12 x 32 tile as 6 x 16 sub-tiles) ---===//

// |mul32| (a constant at each inlined call): one 32-bit value per word, vpmulld; else pairs of
// i16, vpmaddwd.
#define CMLC_I16_PROD256(x, y) (mul32 ? _mm256_mullo_epi32(x, y) : _mm256_madd_epi16(x, y))
#define CMLC_I16_ROW256(r)                                              \
  do {                                                                  \
    const __m256i av_ = _mm256_set1_epi32((int)a[r]);                   \
    acc##r##0 = _mm256_add_epi32(acc##r##0, CMLC_I16_PROD256(av_, b0)); \
    acc##r##1 = _mm256_add_epi32(acc##r##1, CMLC_I16_PROD256(av_, b1)); \
  } while (0)

#define CMLC_I16_STORE256(r)                                                                   \
  do {                                                                                         \
    if ((r) < rows) {                                                                          \
      int32_t* cr_ = c + (int64_t)(r)*ldc;                                                     \
      if (cols == 16) {                                                                        \
        if (accumulate) {                                                                      \
          acc##r##0 = _mm256_add_epi32(_mm256_loadu_si256((const void*)cr_), acc##r##0);       \
          acc##r##1 = _mm256_add_epi32(_mm256_loadu_si256((const void*)(cr_ + 8)), acc##r##1); \
        }                                                                                      \
        _mm256_storeu_si256((void*)cr_, acc##r##0);                                            \
        _mm256_storeu_si256((void*)(cr_ + 8), acc##r##1);                                      \
      } else {                                                                                 \
        if (accumulate) {                                                                      \
          acc##r##0 = _mm256_add_epi32(_mm256_maskload_epi32(cr_, k0), acc##r##0);             \
          acc##r##1 = _mm256_add_epi32(_mm256_maskload_epi32(cr_ + 8, k1), acc##r##1);         \
        }                                                                                      \
        _mm256_maskstore_epi32(cr_, k0, acc##r##0);                                            \
        _mm256_maskstore_epi32(cr_ + 8, k1, acc##r##1);                                        \
      }                                                                                        \
    }                                                                                          \
  } while (0)

// Rows [0, rows) (<= 6) x columns [0, cols) (<= 16) of a tile: |a| points at the sliver's first
// row of the sub-tile (pairs MR words apart), |b| at its first column (pairs NR words apart).
CMLC_I16_INLINE CMLC_I16_AVX2 void cmlc_i16_avx2_6x16(int64_t kp, const uint32_t* a,
                                                      const uint32_t* b, int32_t* c, int64_t ldc,
                                                      int accumulate, int rows, int cols,
                                                      bool mul32) {
  __m256i acc00 = _mm256_setzero_si256(), acc01 = _mm256_setzero_si256();
  __m256i acc10 = _mm256_setzero_si256(), acc11 = _mm256_setzero_si256();
  __m256i acc20 = _mm256_setzero_si256(), acc21 = _mm256_setzero_si256();
  __m256i acc30 = _mm256_setzero_si256(), acc31 = _mm256_setzero_si256();
  __m256i acc40 = _mm256_setzero_si256(), acc41 = _mm256_setzero_si256();
  __m256i acc50 = _mm256_setzero_si256(), acc51 = _mm256_setzero_si256();
  for (int64_t q = 0; q < kp; ++q) {
    const __m256i b0 = _mm256_loadu_si256((const void*)b);
    const __m256i b1 = _mm256_loadu_si256((const void*)(b + 8));
    CMLC_I16_ROW256(0);
    CMLC_I16_ROW256(1);
    CMLC_I16_ROW256(2);
    CMLC_I16_ROW256(3);
    CMLC_I16_ROW256(4);
    CMLC_I16_ROW256(5);
    a += CMLC_I16_MR;
    b += CMLC_I16_NR;
  }
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i k0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(cols), lane);
  const __m256i k1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(cols - 8), lane);
  CMLC_I16_STORE256(0);
  CMLC_I16_STORE256(1);
  CMLC_I16_STORE256(2);
  CMLC_I16_STORE256(3);
  CMLC_I16_STORE256(4);
  CMLC_I16_STORE256(5);
}

#undef CMLC_I16_STORE256
#undef CMLC_I16_ROW256
#undef CMLC_I16_PROD256

// The 12 x 32 tile as 6 x 16 sub-tiles; |mul32| as in cmlc_i16_avx2_6x16.
CMLC_I16_INLINE CMLC_I16_AVX2 void cmlc_i16_avx2_tile(int64_t kp, const uint32_t* a,
                                                      const uint32_t* b, int32_t* c, int64_t ldc,
                                                      int accumulate, int rows, int cols,
                                                      bool mul32) {
  for (int r0 = 0; r0 < rows; r0 += 6) {
    for (int c0 = 0; c0 < cols; c0 += 16) {
      cmlc_i16_avx2_6x16(kp, a + r0, b + c0, c + (int64_t)r0 * ldc + c0, ldc, accumulate,
                         rows - r0 < 6 ? rows - r0 : 6, cols - c0 < 16 ? cols - c0 : 16, mul32);
    }
  }
}

static CMLC_I16_AVX2 void cmlc_i16_ukernel_avx2_12x32(int64_t kp, const uint32_t* a,
                                                      const uint32_t* b, void* cv, int64_t ldc,
                                                      int accumulate, uint16_t* out, int64_t ldo,
                                                      int rows, int cols) {
  (void)out;
  (void)ldo;
  cmlc_i16_avx2_tile(kp, a, b, cv, ldc, accumulate, rows, cols, false);
}

CMLC_I16_AVX2 void cmlc__gemm_ukernel_i32_avx2_12x32(int64_t kp, const uint32_t* a,
                                                     const uint32_t* b, void* cv, int64_t ldc,
                                                     int accumulate, uint16_t* out, int64_t ldo,
                                                     int rows, int cols) {
  (void)out;
  (void)ldo;
  cmlc_i16_avx2_tile(kp, a, b, cv, ldc, accumulate, rows, cols, true);
}

//===--- drivers ---===//

static const cmlc__gemm_pairs_kernels_t cmlc_i16_kernels_vnni = {
    .k_per_word = 2,
    .pack_a = cmlc_i16_pack_a,
    .pack_b = cmlc_i16_pack_b,
    .ukernel = cmlc_i16_ukernel_avx512vnni_12x32,
};
static const cmlc__gemm_pairs_kernels_t cmlc_i16_kernels_avx512 = {
    .k_per_word = 2,
    .pack_a = cmlc_i16_pack_a,
    .pack_b = cmlc_i16_pack_b,
    .ukernel = cmlc_i16_ukernel_avx512_12x32,
};
static const cmlc__gemm_pairs_kernels_t cmlc_i16_kernels_avx2 = {
    .k_per_word = 2,
    .pack_a = cmlc_i16_pack_a,
    .pack_b = cmlc_i16_pack_b,
    .ukernel = cmlc_i16_ukernel_avx2_12x32,
};

static void cmlc_i16_run_vnni(const cmlc__gemm_pairs_problem_t* p, cmlc_pool_t* pool, void* scratch,
                              int threads) {
  cmlc__gemm_pairs(&cmlc_i16_kernels_vnni, p, pool, scratch, threads);
}
static void cmlc_i16_run_avx512(const cmlc__gemm_pairs_problem_t* p, cmlc_pool_t* pool,
                                void* scratch, int threads) {
  cmlc__gemm_pairs(&cmlc_i16_kernels_avx512, p, pool, scratch, threads);
}
static void cmlc_i16_run_avx2(const cmlc__gemm_pairs_problem_t* p, cmlc_pool_t* pool, void* scratch,
                              int threads) {
  cmlc__gemm_pairs(&cmlc_i16_kernels_avx2, p, pool, scratch, threads);
}

cmlc__gemm_i16_fn cmlc__gemm_i16_pick(cmlc_isa_t isa, bool vnni) {
  switch (isa) {
    case CMLC_ISA_AVX512:
      return vnni ? cmlc_i16_run_vnni : cmlc_i16_run_avx512;
    case CMLC_ISA_AVX2:
      return cmlc_i16_run_avx2;
    case CMLC_ISA_SCALAR:
      break;
  }
  return NULL;
}

#endif  // CMLC_HAVE_X86_64
