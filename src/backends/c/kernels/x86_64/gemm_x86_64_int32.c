// SPDX-License-Identifier: Apache-2.0
// kernels/x86_64/gemm_x86_64_int32.c: integer products with an i32 accumulator (or one whose
// sums are the i32 sums mod 2^width) over operands that the k-pair integer GEMM does not take
// (U16, I32, U32, I64, U64, or one of those with I8 / U8 / I16): packing that keeps the low 32
// bits of each value, one k value per word, for the 12 x 32 micro-kernels of vpmulld + vpaddd
// (AVX-512; AVX2 as four 6 x 16 sub-tiles of the same packed tile), which share the k-pair
// integer kernels' bodies (gemm_x86_64_int16.c). The blocking and threads are the k-pair
// driver's (gemm_x86_64_pairs.c, with one k value per word). Compiled with function
// attributes, so the file needs no global -m flags.
//
// Exactness: the low 32 bits of a product depend only on the low 32 bits of its factors, and
// vpmulld keeps the low 32 bits of the 64-bit product, so each product is the generic path's
// (which multiplies sign- or zero-extended 64-bit values) mod 2^32. vpaddd wraps, and addition
// mod 2^32 is associative and commutative: C is bit for bit the generic path's i32 result
// whatever the order, the tiling or the thread count. Padding (a partial tile's rows and
// columns) is zero in both operands.
//
// Thread-safety: reentrant; no state.
#include "backends/c/kernels/generic/linalg_internal.h"

#if defined(CMLC_HAVE_X86_64)

enum {
  CMLC_I32_MR = CMLC__GEMM_PAIRS_MR,
  CMLC_I32_NR = CMLC__GEMM_PAIRS_NR,
};

#define CMLC_I32_AVX2 __attribute__((target("avx2,fma")))
#define CMLC_I32_INLINE static inline __attribute__((always_inline))

#define CMLC_I32_NOT_AFFINE CMLC__GEMM_PAIRS_NOT_AFFINE

static int64_t cmlc_i32_min(int64_t a, int64_t b) { return a < b ? a : b; }

bool cmlc__gemm_i32_supports(cml_dtype_t dtype) {
  switch (dtype) {
    case CML_DTYPE_I8:
    case CML_DTYPE_U8:
    case CML_DTYPE_I16:
    case CML_DTYPE_U16:
    case CML_DTYPE_I32:
    case CML_DTYPE_U32:
    case CML_DTYPE_I64:
    case CML_DTYPE_U64:
      return true;
    default:
      return false;
  }
}

//===--- packing ---===//

// The low 32 bits of element |i| as a sign- or zero-extended integer. |dtype| is a constant at
// every call (the packers are instantiated per dtype), so the choice folds away.
CMLC_I32_INLINE uint32_t cmlc_i32_load(const void* data, int64_t i, cml_dtype_t dtype) {
  switch (dtype) {
    case CML_DTYPE_I8:
      return (uint32_t)(int32_t)((const int8_t*)data)[i];
    case CML_DTYPE_U8:
      return ((const uint8_t*)data)[i];
    case CML_DTYPE_I16:
      return (uint32_t)(int32_t)((const int16_t*)data)[i];
    case CML_DTYPE_U16:
      return ((const uint16_t*)data)[i];
    case CML_DTYPE_I32:
    case CML_DTYPE_U32:
      return ((const uint32_t*)data)[i];
    default:  // I64, U64: the low word
      return (uint32_t)((const uint64_t*)data)[i];
  }
}

// Packs A rows [ic, ic+mc) x k [pc, pc+kc) of batch |bt| into MR-row slivers (value q of row r
// at q * MR + r).
CMLC_I32_INLINE void cmlc_i32_pack_a_t(const cmlc__gemm_operand_t* a,
                                       const cmlc__gemm_pairs_access_t* acc, int64_t bt, int64_t ic,
                                       int64_t mc, int64_t pc, int64_t kc, uint32_t* dst,
                                       cml_dtype_t dt) {
  const void* data = a->data;
  const int64_t boff = a->batch_offsets[bt];
  const int64_t* cols = a->col_offsets + pc;
  for (int64_t i = 0; i < mc; i += CMLC_I32_MR) {
    uint32_t* sliver = dst + i * kc;
    const int rows = (int)cmlc_i32_min(CMLC_I32_MR, mc - i);
    if (acc->a_row == 1 && acc->a_col != CMLC_I32_NOT_AFFINE && rows == CMLC_I32_MR) {
      // Transposed A (rows contiguous): MR consecutive values per k.
      const int64_t o = boff + (ic + i) + pc * acc->a_col;
      for (int64_t q = 0; q < kc; ++q) {
        uint32_t* d = sliver + q * CMLC_I32_MR;
        for (int r = 0; r < CMLC_I32_MR; ++r)
          d[r] = cmlc_i32_load(data, o + q * acc->a_col + r, dt);
      }
      continue;
    }
    for (int r = 0; r < CMLC_I32_MR; ++r) {
      uint32_t* d = sliver + r;
      if (r >= rows) {
        for (int64_t q = 0; q < kc; ++q) d[q * CMLC_I32_MR] = 0;
        continue;
      }
      const int64_t o = boff + a->row_offsets[ic + i + r];
      if (acc->a_col == 1) {
        for (int64_t q = 0; q < kc; ++q) d[q * CMLC_I32_MR] = cmlc_i32_load(data, o + pc + q, dt);
        continue;
      }
      for (int64_t q = 0; q < kc; ++q) d[q * CMLC_I32_MR] = cmlc_i32_load(data, o + cols[q], dt);
    }
  }
}

// Packs B slivers [s0, s1) of k [pc, pc+kc) x columns [jc, jc+nc) of batch |bt| (sliver s at
// panel + s * kc * NR, value q of column j at q * NR + j).
CMLC_I32_INLINE void cmlc_i32_pack_b_t(const cmlc__gemm_operand_t* b,
                                       const cmlc__gemm_pairs_access_t* acc, int64_t bt, int64_t jc,
                                       int64_t nc, int64_t pc, int64_t kc, int64_t s0, int64_t s1,
                                       uint32_t* panel, cml_dtype_t dt) {
  const void* data = b->data;
  const int64_t boff = b->batch_offsets[bt];
  for (int64_t s = s0; s < s1; ++s) {
    uint32_t* sliver = panel + s * kc * CMLC_I32_NR;
    const int64_t col0 = s * CMLC_I32_NR;
    const int64_t cols = cmlc_i32_min(CMLC_I32_NR, nc - col0);
    const int64_t* coff = b->col_offsets + jc + col0;
    if (acc->b_col == 1) {
      // Row-major B: a k row's NR columns are consecutive values.
      for (int64_t q = 0; q < kc; ++q) {
        const int64_t o = boff + b->row_offsets[pc + q] + jc + col0;
        uint32_t* d = sliver + q * CMLC_I32_NR;
        for (int64_t j = 0; j < cols; ++j) d[j] = cmlc_i32_load(data, o + j, dt);
        for (int64_t j = cols; j < CMLC_I32_NR; ++j) d[j] = 0;
      }
      continue;
    }
    if (acc->b_row == 1) {
      // Transposed B (k contiguous): a column's k values are consecutive.
      for (int64_t j = 0; j < CMLC_I32_NR; ++j) {
        uint32_t* d = sliver + j;
        if (j >= cols) {
          for (int64_t q = 0; q < kc; ++q) d[q * CMLC_I32_NR] = 0;
          continue;
        }
        const int64_t o = boff + coff[j] + pc;
        for (int64_t q = 0; q < kc; ++q) d[q * CMLC_I32_NR] = cmlc_i32_load(data, o + q, dt);
      }
      continue;
    }
    // Any other layout: through the offset tables.
    for (int64_t q = 0; q < kc; ++q) {
      const int64_t o = boff + b->row_offsets[pc + q];
      uint32_t* d = sliver + q * CMLC_I32_NR;
      for (int64_t j = 0; j < cols; ++j) d[j] = cmlc_i32_load(data, o + coff[j], dt);
      for (int64_t j = cols; j < CMLC_I32_NR; ++j) d[j] = 0;
    }
  }
}

// The packers, instantiated per operand dtype (AVX2 code: every ISA that runs them has it).
#define CMLC_I32_DISPATCH(dtype, CALL) \
  switch (dtype) {                     \
    case CML_DTYPE_I8:                 \
      CALL(CML_DTYPE_I8);              \
      break;                           \
    case CML_DTYPE_U8:                 \
      CALL(CML_DTYPE_U8);              \
      break;                           \
    case CML_DTYPE_I16:                \
      CALL(CML_DTYPE_I16);             \
      break;                           \
    case CML_DTYPE_U16:                \
      CALL(CML_DTYPE_U16);             \
      break;                           \
    case CML_DTYPE_I32:                \
    case CML_DTYPE_U32:                \
      CALL(CML_DTYPE_I32);             \
      break;                           \
    default:                           \
      CALL(CML_DTYPE_I64);             \
      break;                           \
  }

static CMLC_I32_AVX2 void cmlc_i32_pack_a(const cmlc__gemm_operand_t* a,
                                          const cmlc__gemm_pairs_access_t* acc, int64_t bt,
                                          int64_t ic, int64_t mc, int64_t pc, int64_t kc,
                                          uint32_t* dst) {
#define CMLC_I32_PACK_A(dt) cmlc_i32_pack_a_t(a, acc, bt, ic, mc, pc, kc, dst, dt)
  CMLC_I32_DISPATCH(a->dtype, CMLC_I32_PACK_A)
#undef CMLC_I32_PACK_A
}

static CMLC_I32_AVX2 void cmlc_i32_pack_b(const cmlc__gemm_operand_t* b,
                                          const cmlc__gemm_pairs_access_t* acc, int64_t bt,
                                          int64_t jc, int64_t nc, int64_t pc, int64_t kc,
                                          int64_t s0, int64_t s1, uint32_t* panel) {
#define CMLC_I32_PACK_B(dt) cmlc_i32_pack_b_t(b, acc, bt, jc, nc, pc, kc, s0, s1, panel, dt)
  CMLC_I32_DISPATCH(b->dtype, CMLC_I32_PACK_B)
#undef CMLC_I32_PACK_B
}

#undef CMLC_I32_DISPATCH

//===--- drivers ---===//

static const cmlc__gemm_pairs_kernels_t cmlc_i32_kernels_avx512 = {
    .k_per_word = 1,
    .pack_a = cmlc_i32_pack_a,
    .pack_b = cmlc_i32_pack_b,
    .ukernel = cmlc__gemm_ukernel_i32_avx512_12x32,
};
static const cmlc__gemm_pairs_kernels_t cmlc_i32_kernels_avx2 = {
    .k_per_word = 1,
    .pack_a = cmlc_i32_pack_a,
    .pack_b = cmlc_i32_pack_b,
    .ukernel = cmlc__gemm_ukernel_i32_avx2_12x32,
};

static void cmlc_i32_run_avx512(const cmlc__gemm_pairs_problem_t* p, cmlc_pool_t* pool,
                                void* scratch, int threads) {
  cmlc__gemm_pairs(&cmlc_i32_kernels_avx512, p, pool, scratch, threads);
}
static void cmlc_i32_run_avx2(const cmlc__gemm_pairs_problem_t* p, cmlc_pool_t* pool, void* scratch,
                              int threads) {
  cmlc__gemm_pairs(&cmlc_i32_kernels_avx2, p, pool, scratch, threads);
}

cmlc__gemm_i16_fn cmlc__gemm_i32_pick(cmlc_isa_t isa) {
  switch (isa) {
    case CMLC_ISA_AVX512:
      return cmlc_i32_run_avx512;
    case CMLC_ISA_AVX2:
      return cmlc_i32_run_avx2;
    case CMLC_ISA_SCALAR:
      break;
  }
  return NULL;
}

#endif  // CMLC_HAVE_X86_64
