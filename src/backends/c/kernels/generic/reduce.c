// SPDX-License-Identifier: Apache-2.0
// kernels/generic/reduce.c: the "reduce" kernel group: Reduce{Sum,Product,Max,Min},
// ReduceBitwise{And,Or,Xor}, ReduceLogical{And,Or,Xor} and ArgMinMax (scalar reference).
//
// The input's axes are classified as kept or reduced; size-1 axes are dropped and neighbouring
// axes of the same class merged. Two loop shapes cover every case:
//  - innermost axis reduced: each output element reduces a contiguous run (8 lanes, split in
//    halves above 256 elements: a pairwise summation) for every outer reduced index;
//  - innermost axis kept: tiles of output columns accumulate whole rows (the innermost loop
//    runs over contiguous output columns; f32 Sum/Max/Min use the SIMD column steps of
//    kernels/x86_64/reduce_x86_64.c unless reference=true). The order is blocked in three
//    levels, the same for every column, tile width and ISA: rows are combined in order into
//    a block partial (128 rows), block partials in order into a super-block partial (128
//    blocks, 16384 rows), and super-block partials in order into the total. A float sum of R
//    rows thus has an error bound of about (128 + 128 + R / 16384) ulp-units instead of R.
//    Each lane does one scalar operation per step, so the SIMD and scalar kernels give the
//    same bits.
// Work is split by output elements (rows x tiles), so each result is computed in one fixed
// order whatever the thread count. f16/bf16 accumulate in f32, integers wrap (they accumulate
// in an unsigned type at least 32 bits wide). An empty reduced extent gives the identity:
// 0 (sum), 1 (product), -Inf or the lowest integer (max), +Inf or the highest (min), all ones
// (bitwise and), true (logical and), false / 0 otherwise. Max/Min propagate NaN.
// ArgMinMax: NaN wins (the first NaN), ties pick the first index.
//
// Full reductions of at least 2 blocks (65536 elements, more when that would give over 1024
// blocks; the block size depends only on the element count) reduce each block on the pool into
// a partial in scratch, then combine the partials on the calling thread in a fixed pairwise
// order, so big sums run on every thread and still give the same bits for any thread count.
// f32 Sum/Max/Min with an innermost reduced axis use the SIMD kernels (32 virtual lanes, see
// kernels/x86_64/elementwise_x86_64_body.h) unless reference=true.
#include <tgmath.h>

#include "backends/c/kernels/generic/elementwise_internal.h"
#include "backends/c/kernels/generic/reduce_internal.h"

enum {
  CMLC_RD_TILE = 256,
  CMLC_RD_ROW_BLOCK = 128,                        // rows per block partial
  CMLC_RD_SUPER_BLOCK = 128 * CMLC_RD_ROW_BLOCK,  // rows per super-block partial
  CMLC_RD_SIMD_TILE = 4096,                       // columns per pass-1 task, SIMD column path
  CMLC_RD_MIN_WORK = 32768,
  CMLC_RD_BLOCK = 65536,  // elements per partial of a blocked full reduction (at least)
  CMLC_RD_MAX_BLOCKS = 1024,
  CMLC_RD_PARTIAL_SIZE = 16,  // bytes per partial (the widest accumulator: complex double)
  // Rows of at most this many are short: order-free ops and f32 combine them in index order,
  // the f32 ones by the SIMD short-run kernel where there is one.
  CMLC_RD_SHORT_ROW = CMLC__RD_RUN_MAX
};

typedef struct cmlc_rd_plan_t {
  const void* in;
  void* out;
  int nk, nr;
  int64_t kd[CML_MAX_RANK], ks[CML_MAX_RANK];  // kept dims / input strides
  int64_t rd[CML_MAX_RANK], rs[CML_MAX_RANK];  // reduced dims / input strides
  int64_t outputs;                             // product of kd
  int64_t reduced;                             // product of rd
  int64_t tiles;                               // inner-kept case: tiles per row
  cmlc_rd_f32_fn simd;                         // f32 SIMD contiguous reduction, or NULL
  cmlc_rd_half_fn simd_half;                   // bf16 / f16 (dtype |half|) likewise, or NULL
  cml_dtype_t half;
  cmlc_ew_convert_fn widen;   // bf16 / f16 -> f32 rows (column path), or NULL
  cmlc__rd_cols_f32_fn cols;  // f32 SIMD column step, or NULL
  cmlc__rd_runs_f32_fn runs;  // f32 SIMD short runs (cmlc_rd_rows_f32's), or NULL
  int64_t tile;               // SIMD column path: columns per task
  cml_op_t op;
  void* partials;  // blocked full reduction: one per block
  int64_t block, blocks;
  // f32 input computed on the fly (cmlc__rd_run_produced): |in| is NULL and the tasks ask
  // |produce| for each contiguous run they would read.
  cmlc__rd_produce_fn produce;
  void* produce_ctx;
  cmlc_rd_f32_step_fn step;  // produced f32: p->simd in steps (cmlc_rd_simd_split_produced)
} cmlc_rd_plan_t;

// Block size and count of a blocked full reduction of |n| elements (blocks < 2: not blocked).
static void cmlc_rd_blocking(int64_t n, int64_t* out_block, int64_t* out_blocks) {
  int64_t block = CMLC_RD_BLOCK;
  if (n > block * CMLC_RD_MAX_BLOCKS) {
    block = (n + CMLC_RD_MAX_BLOCKS - 1) / CMLC_RD_MAX_BLOCKS;
    block = (block + 63) & ~(int64_t)63;
  }
  *out_block = block;
  *out_blocks = n >= 2 * block ? (n + block - 1) / block : 0;
}

// |n| floats rounded up to a 64-byte multiple.
static int64_t cmlc_rd_align_floats(int64_t n) { return (n + 15) & ~(int64_t)15; }

// End of the block that starts at |start| with |size| elements, clipped to |limit|.
static inline int64_t cmlc_rd_block_end(int64_t start, int64_t size, int64_t limit) {
  return limit - start < size ? limit : start + size;
}

// Offset of the |index|-th element of the row-major grid |dims|[0..n) with |strides|.
static inline int64_t cmlc_rd_offset(int n, const int64_t* dims, const int64_t* strides,
                                     int64_t index) {
  int64_t off = 0;
  for (int d = n - 1; d >= 0; --d) {
    off += (index % dims[d]) * strides[d];
    index /= dims[d];
  }
  return off;
}

// Advances the odometer |idx| over |dims| and keeps |*off| in step.
static inline void cmlc_rd_next(int n, const int64_t* dims, const int64_t* strides, int64_t* idx,
                                int64_t* off) {
  for (int d = n - 1; d >= 0; --d) {
    *off += strides[d];
    if (++idx[d] < dims[d]) return;
    *off -= strides[d] * dims[d];
    idx[d] = 0;
  }
}

//===--- generator ---===//

// name: prefix; T: storage; CT: accumulator; LOAD: T -> CT; STORE: CT -> T; IDENT: identity;
// COMB(a, b): the combining function; ANY_ORDER: 1 when every order of combining gives the same
// bits (integers wrap, bitwise and logical ops), so that short rows are combined in index order.
#define CMLC_RD_GEN(name, T, CT, LOAD, STORE, IDENT, COMB, ANY_ORDER)                          \
  static CT name##_contig(const T* x, int64_t n) {                                             \
    if (n > 2 * CMLC_RD_TILE) {                                                                \
      const int64_t h = (n / 2) & ~(int64_t)7;                                                 \
      CT a = name##_contig(x, h), b = name##_contig(x + h, n - h);                             \
      return COMB(a, b);                                                                       \
    }                                                                                          \
    CT lane[8];                                                                                \
    for (int j = 0; j < 8; ++j) lane[j] = (IDENT);                                             \
    int64_t i = 0;                                                                             \
    for (; i + 8 <= n; i += 8) {                                                               \
      for (int j = 0; j < 8; ++j) {                                                            \
        CT v = LOAD(x[i + j]);                                                                 \
        lane[j] = COMB(lane[j], v);                                                            \
      }                                                                                        \
    }                                                                                          \
    for (int j = 0; i < n; ++i, ++j) {                                                         \
      CT v = LOAD(x[i]);                                                                       \
      lane[j] = COMB(lane[j], v);                                                              \
    }                                                                                          \
    for (int w = 1; w < 8; w *= 2) {                                                           \
      for (int j = 0; j < 8; j += 2 * w) lane[j] = COMB(lane[j], lane[j + w]);                 \
    }                                                                                          \
    return lane[0];                                                                            \
  }                                                                                            \
  /* Innermost axis reduced: outputs [begin, end). */                                          \
  static void name##_a(void* ctx, int64_t begin, int64_t end, int thread_index) {              \
    (void)thread_index;                                                                        \
    const cmlc_rd_plan_t* p = (const cmlc_rd_plan_t*)ctx;                                      \
    const T* x = (const T*)p->in;                                                              \
    T* y = (T*)p->out;                                                                         \
    const int64_t len = p->rd[p->nr - 1];                                                      \
    const int64_t outer = len ? p->reduced / len : 0;                                          \
    if (p->nr == 1 && p->nk == 1 && p->ks[0] == len && p->rs[0] == 1) {                        \
      /* Rows that follow each other (x [outputs, len]): no odometer; short rows of an         \
         order-free op in index order (a row of 4 through the 8 lanes and their tree cost      \
         5-10x the row's own work). */                                                         \
      for (int64_t o = begin; o < end; ++o) {                                                  \
        const T* row = x + o * len;                                                            \
        CT acc = (IDENT);                                                                      \
        if ((ANY_ORDER) && len <= CMLC_RD_SHORT_ROW) {                                         \
          for (int64_t j = 0; j < len; ++j) acc = COMB(acc, LOAD(row[j]));                     \
        } else {                                                                               \
          const CT v = name##_contig(row, len);                                                \
          acc = COMB(acc, v);                                                                  \
        }                                                                                      \
        y[o] = STORE(acc);                                                                     \
      }                                                                                        \
      return;                                                                                  \
    }                                                                                          \
    for (int64_t o = begin; o < end; ++o) {                                                    \
      const int64_t base = cmlc_rd_offset(p->nk, p->kd, p->ks, o);                             \
      CT acc = (IDENT);                                                                        \
      int64_t idx[CML_MAX_RANK] = {0};                                                         \
      int64_t off = 0;                                                                         \
      for (int64_t r = 0; r < outer; ++r) {                                                    \
        CT v = name##_contig(x + base + off, len);                                             \
        acc = COMB(acc, v);                                                                    \
        cmlc_rd_next(p->nr - 1, p->rd, p->rs, idx, &off);                                      \
      }                                                                                        \
      y[o] = STORE(acc);                                                                       \
    }                                                                                          \
  }                                                                                            \
  /* Innermost axis kept: tasks are (row, tile of columns); three-level blocked order. */      \
  static void name##_b(void* ctx, int64_t begin, int64_t end, int thread_index) {              \
    (void)thread_index;                                                                        \
    const cmlc_rd_plan_t* p = (const cmlc_rd_plan_t*)ctx;                                      \
    const T* x = (const T*)p->in;                                                              \
    T* y = (T*)p->out;                                                                         \
    const int64_t width = p->kd[p->nk - 1];                                                    \
    CT total[CMLC_RD_TILE], mid[CMLC_RD_TILE], part[CMLC_RD_TILE];                             \
    for (int64_t t = begin; t < end; ++t) {                                                    \
      const int64_t row = t / p->tiles, c0 = (t % p->tiles) * CMLC_RD_TILE;                    \
      const int64_t len = width - c0 < CMLC_RD_TILE ? width - c0 : CMLC_RD_TILE;               \
      const int64_t base = cmlc_rd_offset(p->nk - 1, p->kd, p->ks, row) + c0;                  \
      for (int64_t j = 0; j < len; ++j) total[j] = (IDENT);                                    \
      int64_t idx[CML_MAX_RANK] = {0};                                                         \
      int64_t off = 0;                                                                         \
      for (int64_t r0 = 0; r0 < p->reduced; r0 += CMLC_RD_SUPER_BLOCK) {                       \
        const int64_t r0e = cmlc_rd_block_end(r0, CMLC_RD_SUPER_BLOCK, p->reduced);            \
        for (int64_t j = 0; j < len; ++j) mid[j] = (IDENT);                                    \
        for (int64_t r1 = r0; r1 < r0e; r1 += CMLC_RD_ROW_BLOCK) {                             \
          const int64_t r1e = cmlc_rd_block_end(r1, CMLC_RD_ROW_BLOCK, r0e);                   \
          for (int64_t j = 0; j < len; ++j) part[j] = (IDENT);                                 \
          for (int64_t r = r1; r < r1e; ++r) {                                                 \
            const T* row_x = x + base + off;                                                   \
            for (int64_t j = 0; j < len; ++j) {                                                \
              CT v = LOAD(row_x[j]);                                                           \
              part[j] = COMB(part[j], v);                                                      \
            }                                                                                  \
            cmlc_rd_next(p->nr, p->rd, p->rs, idx, &off);                                      \
          }                                                                                    \
          for (int64_t j = 0; j < len; ++j) mid[j] = COMB(mid[j], part[j]);                    \
        }                                                                                      \
        for (int64_t j = 0; j < len; ++j) total[j] = COMB(total[j], mid[j]);                   \
      }                                                                                        \
      T* out_row = y + row * width + c0;                                                       \
      for (int64_t j = 0; j < len; ++j) out_row[j] = STORE(total[j]);                          \
    }                                                                                          \
  }                                                                                            \
  /* Blocked full reduction: partials of blocks [begin, end). */                               \
  static void name##_blk(void* ctx, int64_t begin, int64_t end, int thread_index) {            \
    (void)thread_index;                                                                        \
    const cmlc_rd_plan_t* p = (const cmlc_rd_plan_t*)ctx;                                      \
    const T* x = (const T*)p->in;                                                              \
    CT* part = (CT*)p->partials;                                                               \
    for (int64_t b = begin; b < end; ++b) {                                                    \
      const int64_t start = b * p->block;                                                      \
      const int64_t len = p->reduced - start < p->block ? p->reduced - start : p->block;       \
      part[b] = name##_contig(x + start, len);                                                 \
    }                                                                                          \
  }                                                                                            \
  /* Combines the partials pairwise in a fixed order and stores the result. */                 \
  static void name##_fin(const cmlc_rd_plan_t* p) {                                            \
    CT* part = (CT*)p->partials;                                                               \
    for (int64_t w = 1; w < p->blocks; w *= 2) {                                               \
      for (int64_t j = 0; j + w < p->blocks; j += 2 * w) part[j] = COMB(part[j], part[j + w]); \
    }                                                                                          \
    *(T*)p->out = STORE(part[0]);                                                              \
  }

#define CMLC_RD_ADD(a, b) ((a) + (b))
#define CMLC_RD_MUL(a, b) ((a) * (b))
#define CMLC_RD_AND(a, b) ((a) & (b))
#define CMLC_RD_OR(a, b) ((a) | (b))
#define CMLC_RD_XOR(a, b) ((a) ^ (b))
#define CMLC_RD_IMAX(a, b) ((a) > (b) ? (a) : (b))
#define CMLC_RD_IMIN(a, b) ((a) < (b) ? (a) : (b))
#define CMLC_RD_LAND(a, b) ((a) & (b))
#define CMLC_RD_LOR(a, b) ((a) | (b))
#define CMLC_RD_LXOR(a, b) ((a) ^ (b))
#define CMLC_RD_CAST(T) (T)

// Floats (f16/bf16 accumulate in f32).
#define CMLC_RD_FLOAT(sfx, T, CT, LOAD, STORE)                                       \
  CMLC_RD_GEN(cmlc_rd_sum_##sfx, T, CT, LOAD, STORE, (CT)0, CMLC_RD_ADD, 0)          \
  CMLC_RD_GEN(cmlc_rd_prod_##sfx, T, CT, LOAD, STORE, (CT)1, CMLC_RD_MUL, 0)         \
  CMLC_RD_GEN(cmlc_rd_max_##sfx, T, CT, LOAD, STORE, (CT)-INFINITY, CMLC_EW_FMAX, 0) \
  CMLC_RD_GEN(cmlc_rd_min_##sfx, T, CT, LOAD, STORE, (CT)INFINITY, CMLC_EW_FMIN, 0)
CMLC_RD_FLOAT(f16, uint16_t, float, cml_f16_to_f32, cml_f32_to_f16)
CMLC_RD_FLOAT(bf16, uint16_t, float, cml_bf16_to_f32, cml_f32_to_bf16)
CMLC_RD_FLOAT(f32, float, float, CMLC_EW_ID, CMLC_EW_ID)
CMLC_RD_FLOAT(f64, double, double, CMLC_EW_ID, CMLC_EW_ID)

// f64 inputs computed on the fly (cmlc__rd_run_produced): the stored kernels' pairwise halves
// (_contig) down to their leaves (at most 2 * CMLC_RD_TILE elements), each produced into a
// buffer and reduced by _contig itself, so the same bits as from a stored input. Short rows
// that follow each other are produced CMLC_RD_PRODUCED_F64 elements at a time (the buffer
// stays in L1). _ap and _blkp are _a and _blk for such an input.
enum { CMLC_RD_PRODUCED_F64 = 1024 };
_Static_assert((int)CMLC_RD_PRODUCED_F64 >= 2 * (int)CMLC_RD_TILE, "a leaf fits the buffer");
#define CMLC_RD_GEN_PRODUCED(name, T, IDENT, COMB)                                               \
  static T name##_contig_p(const cmlc_rd_plan_t* p, int64_t start, int64_t n, T* buf) {          \
    if (n > 2 * CMLC_RD_TILE) {                                                                  \
      const int64_t h = (n / 2) & ~(int64_t)7;                                                   \
      const T a = name##_contig_p(p, start, h, buf);                                             \
      const T b = name##_contig_p(p, start + h, n - h, buf);                                     \
      return COMB(a, b);                                                                         \
    }                                                                                            \
    p->produce(p->produce_ctx, start, n, buf);                                                   \
    return name##_contig(buf, n);                                                                \
  }                                                                                              \
  static void name##_ap(void* ctx, int64_t begin, int64_t end, int thread_index) {               \
    (void)thread_index;                                                                          \
    const cmlc_rd_plan_t* p = (const cmlc_rd_plan_t*)ctx;                                        \
    _Alignas(64) T buf[CMLC_RD_PRODUCED_F64];                                                    \
    T* y = (T*)p->out;                                                                           \
    const int64_t len = p->rd[p->nr - 1];                                                        \
    const int64_t outer = len ? p->reduced / len : 0;                                            \
    if (len > 0 && len <= CMLC_RD_PRODUCED_F64 && p->nr == 1 && p->nk == 1 && p->ks[0] == len && \
        p->rs[0] == 1) {                                                                         \
      /* Rows that follow each other: produced many at a time. */                                \
      const int64_t per = CMLC_RD_PRODUCED_F64 / len;                                            \
      for (int64_t o0 = begin; o0 < end; o0 += per) {                                            \
        const int64_t rows = end - o0 < per ? end - o0 : per;                                    \
        p->produce(p->produce_ctx, o0* len, rows* len, buf);                                     \
        for (int64_t q = 0; q < rows; ++q) {                                                     \
          const T v = name##_contig(buf + q * len, len);                                         \
          y[o0 + q] = COMB((T)(IDENT), v);                                                       \
        }                                                                                        \
      }                                                                                          \
      return;                                                                                    \
    }                                                                                            \
    for (int64_t o = begin; o < end; ++o) {                                                      \
      const int64_t base = cmlc_rd_offset(p->nk, p->kd, p->ks, o);                               \
      T acc = (IDENT);                                                                           \
      int64_t idx[CML_MAX_RANK] = {0};                                                           \
      int64_t off = 0;                                                                           \
      for (int64_t r = 0; r < outer; ++r) {                                                      \
        const T v = name##_contig_p(p, base + off, len, buf);                                    \
        acc = COMB(acc, v);                                                                      \
        cmlc_rd_next(p->nr - 1, p->rd, p->rs, idx, &off);                                        \
      }                                                                                          \
      y[o] = acc;                                                                                \
    }                                                                                            \
  }                                                                                              \
  static void name##_blkp(void* ctx, int64_t begin, int64_t end, int thread_index) {             \
    (void)thread_index;                                                                          \
    const cmlc_rd_plan_t* p = (const cmlc_rd_plan_t*)ctx;                                        \
    _Alignas(64) T buf[CMLC_RD_PRODUCED_F64];                                                    \
    T* part = (T*)p->partials;                                                                   \
    for (int64_t b = begin; b < end; ++b) {                                                      \
      const int64_t start = b * p->block;                                                        \
      const int64_t len = p->reduced - start < p->block ? p->reduced - start : p->block;         \
      part[b] = name##_contig_p(p, start, len, buf);                                             \
    }                                                                                            \
  }
CMLC_RD_GEN_PRODUCED(cmlc_rd_sum_f64, double, 0.0, CMLC_RD_ADD)
CMLC_RD_GEN_PRODUCED(cmlc_rd_max_f64, double, -INFINITY, CMLC_EW_FMAX)
CMLC_RD_GEN_PRODUCED(cmlc_rd_min_f64, double, INFINITY, CMLC_EW_FMIN)
#undef CMLC_RD_GEN_PRODUCED

// The produced f64 tasks of |op| (_ap, _blkp), or NULLs.
static void cmlc_rd_pick_f64_produced(cml_op_t op, cmlc_task_fn* rows, cmlc_task_fn* blocks) {
  *rows = *blocks = NULL;
  if (op == CML_OP_REDUCE_SUM) {
    *rows = cmlc_rd_sum_f64_ap;
    *blocks = cmlc_rd_sum_f64_blkp;
  } else if (op == CML_OP_REDUCE_MAX) {
    *rows = cmlc_rd_max_f64_ap;
    *blocks = cmlc_rd_max_f64_blkp;
  } else if (op == CML_OP_REDUCE_MIN) {
    *rows = cmlc_rd_min_f64_ap;
    *blocks = cmlc_rd_min_f64_blkp;
  }
}

// Complex products use the same multiply as the elementwise Mul (XLA's, not C99 Annex G's),
// except that the identity (1 + 0i) times a value with an infinite or NaN part is that value:
// the lanes and partials of the tree start at the identity, and the textbook product's
// inf * 0 turned a product that had overflowed to (-inf + inf i) into NaN + NaN i when a lane
// of 1 met it (Mul of the same two values gives (-inf + inf i)). Finite values keep Mul's bits.
#define CMLC_RD_CPROD(name, CT, CMUL, RE, IM)                                      \
  static inline CT name(CT x, CT y) {                                              \
    const bool x_one = RE(x) == 1 && IM(x) == 0, y_one = RE(y) == 1 && IM(y) == 0; \
    if (y_one && !(isfinite(RE(x)) && isfinite(IM(x)))) return x;                  \
    if (x_one && !(isfinite(RE(y)) && isfinite(IM(y)))) return y;                  \
    return CMUL(x, y);                                                             \
  }
CMLC_RD_CPROD(cmlc_rd_cprod_f, float _Complex, cmlc_ew_cmul_f, crealf, cimagf)
CMLC_RD_CPROD(cmlc_rd_cprod_d, double _Complex, cmlc_ew_cmul_d, creal, cimag)
#undef CMLC_RD_CPROD
#define CMLC_RD_COMPLEX(sfx, T, CT, LOAD, STORE, CMUL)                      \
  CMLC_RD_GEN(cmlc_rd_sum_##sfx, T, CT, LOAD, STORE, (CT)0, CMLC_RD_ADD, 0) \
  CMLC_RD_GEN(cmlc_rd_prod_##sfx, T, CT, LOAD, STORE, (CT)1, CMUL, 0)
CMLC_RD_COMPLEX(c64, cml_c64_t, float _Complex, cmlc_ew_load_c64, cmlc_ew_store_c64,
                cmlc_rd_cprod_f)
CMLC_RD_COMPLEX(c128, cml_c128_t, double _Complex, cmlc_ew_load_c128, cmlc_ew_store_c128,
                cmlc_rd_cprod_d)

// Integers: W is the wrapping accumulator (>= 32 bits so no promotion to signed int).
#define CMLC_RD_INT(sfx, T, W, TMIN, TMAX)                                                       \
  CMLC_RD_GEN(cmlc_rd_sum_##sfx, T, W, CMLC_RD_CAST(W), CMLC_RD_CAST(T), (W)0, CMLC_RD_ADD, 1)   \
  CMLC_RD_GEN(cmlc_rd_prod_##sfx, T, W, CMLC_RD_CAST(W), CMLC_RD_CAST(T), (W)1, CMLC_RD_MUL, 1)  \
  CMLC_RD_GEN(cmlc_rd_max_##sfx, T, T, CMLC_EW_ID, CMLC_EW_ID, (T)TMIN, CMLC_RD_IMAX, 1)         \
  CMLC_RD_GEN(cmlc_rd_min_##sfx, T, T, CMLC_EW_ID, CMLC_EW_ID, (T)TMAX, CMLC_RD_IMIN, 1)         \
  CMLC_RD_GEN(cmlc_rd_and_##sfx, T, W, CMLC_RD_CAST(W), CMLC_RD_CAST(T), (W) ~(W)0, CMLC_RD_AND, \
              1)                                                                                 \
  CMLC_RD_GEN(cmlc_rd_or_##sfx, T, W, CMLC_RD_CAST(W), CMLC_RD_CAST(T), (W)0, CMLC_RD_OR, 1)     \
  CMLC_RD_GEN(cmlc_rd_xor_##sfx, T, W, CMLC_RD_CAST(W), CMLC_RD_CAST(T), (W)0, CMLC_RD_XOR, 1)
CMLC_RD_INT(i8, int8_t, uint32_t, INT8_MIN, INT8_MAX)
CMLC_RD_INT(i16, int16_t, uint32_t, INT16_MIN, INT16_MAX)
CMLC_RD_INT(i32, int32_t, uint32_t, INT32_MIN, INT32_MAX)
CMLC_RD_INT(i64, int64_t, uint64_t, INT64_MIN, INT64_MAX)
CMLC_RD_INT(u8, uint8_t, uint32_t, 0, UINT8_MAX)
CMLC_RD_INT(u16, uint16_t, uint32_t, 0, UINT16_MAX)
CMLC_RD_INT(u32, uint32_t, uint32_t, 0, UINT32_MAX)
CMLC_RD_INT(u64, uint64_t, uint64_t, 0, UINT64_MAX)

#define CMLC_RD_BOOL_LOAD(x) ((unsigned)((x) != 0))
#define CMLC_RD_BOOL_STORE(x) ((uint8_t)((x) != 0))
CMLC_RD_GEN(cmlc_rd_land_bool, uint8_t, unsigned, CMLC_RD_BOOL_LOAD, CMLC_RD_BOOL_STORE, 1u,
            CMLC_RD_LAND, 1)
CMLC_RD_GEN(cmlc_rd_lor_bool, uint8_t, unsigned, CMLC_RD_BOOL_LOAD, CMLC_RD_BOOL_STORE, 0u,
            CMLC_RD_LOR, 1)
CMLC_RD_GEN(cmlc_rd_lxor_bool, uint8_t, unsigned, CMLC_RD_BOOL_LOAD, CMLC_RD_BOOL_STORE, 0u,
            CMLC_RD_LXOR, 1)

//===--- table ---===//

typedef struct cmlc_rd_fns_t {
  cmlc_task_fn inner_reduced;
  cmlc_task_fn inner_kept;
  cmlc_task_fn block;
  void (*finish)(const cmlc_rd_plan_t* p);
} cmlc_rd_fns_t;

#define CMLC_RD_PICK(name, DT, sfx)                                                  \
  if (dtype == CML_DTYPE_##DT) {                                                     \
    cmlc_rd_fns_t f_ = {cmlc_rd_##name##_##sfx##_a, cmlc_rd_##name##_##sfx##_b,      \
                        cmlc_rd_##name##_##sfx##_blk, cmlc_rd_##name##_##sfx##_fin}; \
    return f_;                                                                       \
  }
#define CMLC_RD_PICK_FLOAT(name) \
  CMLC_RD_PICK(name, F16, f16)   \
  CMLC_RD_PICK(name, BF16, bf16) CMLC_RD_PICK(name, F32, f32) CMLC_RD_PICK(name, F64, f64)
// clang-format off
#define CMLC_RD_PICK_INT(name)      \
  CMLC_RD_PICK(name, I8, i8)        \
  CMLC_RD_PICK(name, I16, i16)      \
  CMLC_RD_PICK(name, I32, i32)      \
  CMLC_RD_PICK(name, I64, i64)      \
  CMLC_RD_PICK(name, U8, u8)        \
  CMLC_RD_PICK(name, U16, u16)      \
  CMLC_RD_PICK(name, U32, u32)      \
  CMLC_RD_PICK(name, U64, u64)
// clang-format on
#define CMLC_RD_PICK_COMPLEX(name) CMLC_RD_PICK(name, C64, c64) CMLC_RD_PICK(name, C128, c128)

static cmlc_rd_fns_t cmlc_rd_pick(cml_op_t op, cml_dtype_t dtype) {
  switch (op) {
    case CML_OP_REDUCE_SUM:
      CMLC_RD_PICK_FLOAT(sum) CMLC_RD_PICK_INT(sum) CMLC_RD_PICK_COMPLEX(sum) break;
    case CML_OP_REDUCE_PRODUCT:
      CMLC_RD_PICK_FLOAT(prod) CMLC_RD_PICK_INT(prod) CMLC_RD_PICK_COMPLEX(prod) break;
    case CML_OP_REDUCE_MAX:
      CMLC_RD_PICK_FLOAT(max) CMLC_RD_PICK_INT(max) break;
    case CML_OP_REDUCE_MIN:
      CMLC_RD_PICK_FLOAT(min) CMLC_RD_PICK_INT(min) break;
    case CML_OP_REDUCE_BITWISE_AND:
      CMLC_RD_PICK_INT(and) break;
    case CML_OP_REDUCE_BITWISE_OR:
      CMLC_RD_PICK_INT(or) break;
    case CML_OP_REDUCE_BITWISE_XOR:
      CMLC_RD_PICK_INT(xor) break;
    case CML_OP_REDUCE_LOGICAL_AND:
      CMLC_RD_PICK(land, BOOL, bool) break;
    case CML_OP_REDUCE_LOGICAL_OR:
      CMLC_RD_PICK(lor, BOOL, bool) break;
    case CML_OP_REDUCE_LOGICAL_XOR:
      CMLC_RD_PICK(lxor, BOOL, bool) break;
    default:
      break;
  }
  cmlc_rd_fns_t none = {NULL, NULL, NULL, NULL};
  return none;
}

//===--- f32 SIMD tasks ---===//

static inline float cmlc_rd_comb_f32(cml_op_t op, float a, float b) {
  switch (op) {
    case CML_OP_REDUCE_MAX:
      return CMLC_EW_FMAX(a, b);
    case CML_OP_REDUCE_MIN:
      return CMLC_EW_FMIN(a, b);
    default:
      return a + b;
  }
}

static float cmlc_rd_ident_f32(cml_op_t op) {
  return op == CML_OP_REDUCE_MAX ? -INFINITY : op == CML_OP_REDUCE_MIN ? INFINITY : 0.0f;
}

// f32 runs of at most CMLC_RD_SEQ_RUN elements (an MoE router's 8 experts, a small head) are
// combined in index order from the identity by cmlc_rd_rows_f32, CMLC_RD_SEQ_LINES consecutive
// runs at once, one lane per run, instead of by the SIMD reducer (whose setup costs more than
// such a run). The two-pass short-run path's pass 1 combines its runs with it too.
enum { CMLC_RD_SEQ_RUN = CMLC_RD_SHORT_ROW, CMLC_RD_SEQ_LINES = 16 };

// One f32 run of |len| (<= CMLC_RD_SEQ_RUN: in order; longer: the SIMD reducer).
static void cmlc_rd_rows_f32(cml_op_t op, const float* x, int64_t len, int64_t rows, float* out);
static inline float cmlc_rd_run_f32(const cmlc_rd_plan_t* p, const float* x, int64_t len) {
  if (len > CMLC_RD_SEQ_RUN) return p->simd(x, len);
  float v;
  cmlc_rd_rows_f32(p->op, x, len, 1, &v);
  return v;
}

// out[q] = run q of |rows| consecutive runs of |len| at |x|, combined in order from the
// identity. (Such a sum never ends at -0, and Max / Min of the identity with a value is the
// value, so out[q] is also ident (+) run q, what the row paths store.)
static void cmlc_rd_rows_f32(cml_op_t op, const float* x, int64_t len, int64_t rows, float* out) {
  const float ident = cmlc_rd_ident_f32(op);
  for (int64_t q0 = 0; q0 < rows; q0 += CMLC_RD_SEQ_LINES) {
    const int64_t n = rows - q0 < CMLC_RD_SEQ_LINES ? rows - q0 : CMLC_RD_SEQ_LINES;
    const float* r = x + q0 * len;
    float acc[CMLC_RD_SEQ_LINES];
    for (int64_t l = 0; l < n; ++l) acc[l] = ident;
      // One loop per op (chosen outside the loops): lanes are rows, independent chains.
#define CMLC_RD_SEQ_ROWS(COMB)                                             \
  for (int64_t j = 0; j < len; ++j) {                                      \
    for (int64_t l = 0; l < n; ++l) acc[l] = COMB(acc[l], r[l * len + j]); \
  }
    switch (op) {
      case CML_OP_REDUCE_MAX:
        CMLC_RD_SEQ_ROWS(CMLC_EW_FMAX);
        break;
      case CML_OP_REDUCE_MIN:
        CMLC_RD_SEQ_ROWS(CMLC_EW_FMIN);
        break;
      default:
        CMLC_RD_SEQ_ROWS(CMLC_RD_ADD);
        break;
    }
#undef CMLC_RD_SEQ_ROWS
    for (int64_t l = 0; l < n; ++l) out[q0 + l] = acc[l];
  }
}

// Innermost axis reduced: as the generic _a task, with the SIMD contiguous reduction (f32, or
// bf16 / f16 widened: combined across runs in f32, rounded once into the output).
static void cmlc_rd_simd_a(void* ctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const cmlc_rd_plan_t* p = (const cmlc_rd_plan_t*)ctx;
  const int64_t len = p->rd[p->nr - 1];
  const int64_t outer = len ? p->reduced / len : 0;
  if (p->simd && len > 0 && len <= CMLC_RD_SEQ_RUN && p->nr == 1 && p->nk == 1 && p->ks[0] == len &&
      p->rs[0] == 1) {
    if (p->runs) {
      p->runs((const float*)p->in + begin * len, len, end - begin, (float*)p->out + begin);
    } else {
      cmlc_rd_rows_f32(p->op, (const float*)p->in + begin * len, len, end - begin,
                       (float*)p->out + begin);
    }
    return;
  }
  for (int64_t o = begin; o < end; ++o) {
    const int64_t base = cmlc_rd_offset(p->nk, p->kd, p->ks, o);
    float acc = cmlc_rd_ident_f32(p->op);
    int64_t idx[CML_MAX_RANK] = {0};
    int64_t off = 0;
    for (int64_t r = 0; r < outer; ++r) {
      const float v = p->simd ? cmlc_rd_run_f32(p, (const float*)p->in + base + off, len)
                              : p->simd_half((const uint16_t*)p->in + base + off, len);
      acc = cmlc_rd_comb_f32(p->op, acc, v);
      cmlc_rd_next(p->nr - 1, p->rd, p->rs, idx, &off);
    }
    if (p->simd) {
      ((float*)p->out)[o] = acc;
    } else {
      ((uint16_t*)p->out)[o] =
          p->half == CML_DTYPE_BF16 ? cml__f32_to_bf16(acc) : cml__f32_to_f16(acc);
    }
  }
}

// bf16 / f16 short runs that follow each other (x [outputs, len], len <= CMLC_RD_SHORT_ROW):
// widened CMLC_RD_HALF_RUNS floats at a time, combined by the f32 short-run kernel (in index
// order from the identity, in f32), each result rounded once (Max / Min: exactly).
enum { CMLC_RD_HALF_RUNS = 2048 };
static void cmlc_rd_half_runs(void* ctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const cmlc_rd_plan_t* p = (const cmlc_rd_plan_t*)ctx;
  const int64_t len = p->rd[0];
  _Alignas(64) float buf[CMLC_RD_HALF_RUNS];
  _Alignas(64) float res[CMLC_RD_HALF_RUNS];
  const int64_t per = CMLC_RD_HALF_RUNS / len;
  for (int64_t o0 = begin; o0 < end; o0 += per) {
    const int64_t n = end - o0 < per ? end - o0 : per;
    p->widen(buf, (const uint16_t*)p->in + o0 * len, n * len);
    p->runs(buf, len, n, res);
    uint16_t* y = (uint16_t*)p->out + o0;
    if (p->half == CML_DTYPE_BF16) {
      for (int64_t q = 0; q < n; ++q) y[q] = cml__f32_to_bf16(res[q]);
    } else {
      for (int64_t q = 0; q < n; ++q) y[q] = cml__f32_to_f16(res[q]);
    }
  }
}

// p->simd's value for the produced elements [start, start + n): its halves (the split rule of
// CMLC__RD_SIMD_SPLIT) down to runs of at most CMLC__RD_SIMD_SPLIT, each produced into |buf|
// and reduced by p->simd (which does not split them again), so the same bits as a stored run.
_Static_assert((int)CMLC__RD_PRODUCE_MAX_RUN >= (int)CMLC__RD_SIMD_SPLIT, "a leaf fits the buffer");
// Each run is produced CMLC_RD_STREAM elements at a time (a multiple of the lanes), folded into
// the reducer's lanes by p->step as it comes: the produced chunk stays in L1 (whole runs of
// 8192 produced at once read 0.5-1.5 ms slower on the cross-entropy of [256, 32000] logits, 1
// thread on Zen 5: the reducer's reads of a 32 KiB run and the producer's own blocks no longer
// fit beside each other).
enum { CMLC_RD_STREAM = 2048 };
_Static_assert((int)CMLC_RD_STREAM % (int)CMLC__RD_SIMD_LANES == 0, "steps of whole lanes");
static float cmlc_rd_simd_split_produced(const cmlc_rd_plan_t* p, int64_t start, int64_t n,
                                         float* buf) {
  if (n > CMLC__RD_SIMD_SPLIT) {
    const int64_t h = (n / 2) & ~(int64_t)(CMLC__RD_SIMD_LANES - 1);
    const float a = cmlc_rd_simd_split_produced(p, start, h, buf);
    const float b = cmlc_rd_simd_split_produced(p, start + h, n - h, buf);
    return cmlc_rd_comb_f32(p->op, a, b);
  }
  if (!p->step || n <= CMLC_RD_STREAM) {
    p->produce(p->produce_ctx, start, n, buf);
    return p->simd(buf, n);
  }
  _Alignas(64) float lanes[CMLC__RD_SIMD_LANES];
  for (int64_t at = 0;; at += CMLC_RD_STREAM) {
    const int64_t c = n - at < CMLC_RD_STREAM ? n - at : CMLC_RD_STREAM;
    p->produce(p->produce_ctx, start + at, c, buf);
    const int flags = (at == 0 ? CMLC_RD_STEP_FIRST : 0) | (at + c == n ? CMLC_RD_STEP_LAST : 0);
    const float v = p->step(lanes, buf, c, flags);
    if (at + c == n) return v;
  }
}

// cmlc_rd_simd_blk for a produced f32 input (a sum of squares of 16M elements: the squares are
// never stored).
static void cmlc_rd_simd_blk_produced(void* ctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const cmlc_rd_plan_t* p = (const cmlc_rd_plan_t*)ctx;
  _Alignas(64) float buf[CMLC__RD_PRODUCE_MAX_RUN];
  float* part = (float*)p->partials;
  for (int64_t b = begin; b < end; ++b) {
    const int64_t start = b * p->block;
    const int64_t len = p->reduced - start < p->block ? p->reduced - start : p->block;
    part[b] = cmlc_rd_simd_split_produced(p, start, len, buf);
  }
}

// cmlc_rd_simd_a for a produced f32 input: each run is produced into a buffer first (runs
// longer than CMLC__RD_PRODUCE_MAX_RUN half by half, as p->simd splits them), then reduced
// exactly as a stored run would be.
static void cmlc_rd_simd_a_produced(void* ctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const cmlc_rd_plan_t* p = (const cmlc_rd_plan_t*)ctx;
  const int64_t len = p->rd[p->nr - 1];
  const int64_t outer = len ? p->reduced / len : 0;
  _Alignas(64) float run[CMLC__RD_PRODUCE_MAX_RUN];
  if (len <= CMLC_RD_STREAM && p->nr == 1 && p->nk == 1 && p->ks[0] == len && p->rs[0] == 1) {
    // Rows that follow each other: produced many at a time (a producer call per short row would
    // cost more than the row), each reduced as a stored row would be.
    const int64_t per = CMLC_RD_STREAM / (len > 0 ? len : 1);
    for (int64_t o0 = begin; o0 < end; o0 += per) {
      const int64_t rows = end - o0 < per ? end - o0 : per;
      if (len > 0) p->produce(p->produce_ctx, o0 * len, rows * len, run);
      if (len > 0 && len <= CMLC_RD_SEQ_RUN) {
        cmlc_rd_rows_f32(p->op, run, len, rows, (float*)p->out + o0);
        continue;
      }
      for (int64_t q = 0; q < rows; ++q) {
        const float v = len > 0 ? p->simd(run + q * len, len) : cmlc_rd_ident_f32(p->op);
        ((float*)p->out)[o0 + q] = cmlc_rd_comb_f32(p->op, cmlc_rd_ident_f32(p->op), v);
      }
    }
    return;
  }
  for (int64_t o = begin; o < end; ++o) {
    const int64_t base = cmlc_rd_offset(p->nk, p->kd, p->ks, o);
    float acc = cmlc_rd_ident_f32(p->op);
    int64_t idx[CML_MAX_RANK] = {0};
    int64_t off = 0;
    for (int64_t r = 0; r < outer; ++r) {
      float v;
      if (len > CMLC_RD_SEQ_RUN) {
        v = cmlc_rd_simd_split_produced(p, base + off, len, run);
      } else {
        p->produce(p->produce_ctx, base + off, len, run);
        v = cmlc_rd_run_f32(p, run, len);
      }
      acc = cmlc_rd_comb_f32(p->op, acc, v);
      cmlc_rd_next(p->nr - 1, p->rd, p->rs, idx, &off);
    }
    ((float*)p->out)[o] = acc;
  }
}

// acc[0..W) += each reduced row of W floats from r0 to r1 (the odometer |idx| / |off| at r0), in
// row order: p->cols's additions for a sum.
#define CMLC_RD_NARROW_COLS(W)                                            \
  do {                                                                    \
    float a[W];                                                           \
    for (int64_t j = 0; j < (W); ++j) a[j] = acc[j];                      \
    if (p->nr == 1) { /* one reduced axis: a plain stride, no odometer */ \
      const int64_t step = p->rs[0];                                      \
      const float* x = in + off;                                          \
      for (int64_t r = r0; r < r1; ++r, x += step) {                      \
        for (int64_t j = 0; j < (W); ++j) a[j] += x[j];                   \
      }                                                                   \
    } else {                                                              \
      for (int64_t r = r0; r < r1; ++r) {                                 \
        const float* x = in + off;                                        \
        for (int64_t j = 0; j < (W); ++j) a[j] += x[j];                   \
        cmlc_rd_next(p->nr, p->rd, p->rs, idx, &off);                     \
      }                                                                   \
    }                                                                     \
    for (int64_t j = 0; j < (W); ++j) acc[j] = a[j];                      \
  } while (0)

// Innermost axis kept, f32 with the SIMD column step, in two passes that keep the generic _b
// task's three-level order (so its bits). Pass 1, tasks (row, column tile, block of
// CMLC_RD_ROW_BLOCK reduced rows): combines the block's rows in order into its partial, a
// row of p->partials ([row][block][width]), or straight into the output when there is one
// block. Tiles are wide (CMLC_RD_SIMD_TILE columns), so a task streams long contiguous runs
// whatever the thread count.
static void cmlc_rd_simd_f32_cols1(void* ctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const cmlc_rd_plan_t* p = (const cmlc_rd_plan_t*)ctx;
  const int64_t width = p->kd[p->nk - 1];
  const float ident = cmlc_rd_ident_f32(p->op);
  _Alignas(64) float row[CMLC_RD_SIMD_TILE];              // a widened bf16 / f16 row (p->widen)
  _Alignas(64) float produced[CMLC__RD_PRODUCE_MAX_RUN];  // produced rows (p->produce)
  for (int64_t t = begin; t < end; ++t) {
    const int64_t blk = t % p->blocks, rest = t / p->blocks;
    const int64_t r_row = rest / p->tiles, c0 = (rest % p->tiles) * p->tile;
    const int64_t len = width - c0 < p->tile ? width - c0 : p->tile;
    const int64_t base = cmlc_rd_offset(p->nk - 1, p->kd, p->ks, r_row) + c0;
    float* acc = p->blocks == 1 && !p->widen
                     ? (float*)p->out + r_row * width + c0
                     : (float*)p->partials + (r_row * p->blocks + blk) * width + c0;
    for (int64_t j = 0; j < len; ++j) acc[j] = ident;
    const int64_t r0 = blk * CMLC_RD_ROW_BLOCK;
    const int64_t r1 = cmlc_rd_block_end(r0, CMLC_RD_ROW_BLOCK, p->reduced);
    if (r1 <= r0) continue;  // an empty reduced extent: the identity
    // The odometer at reduced row r0.
    int64_t idx[CML_MAX_RANK];
    int64_t off = cmlc_rd_offset(p->nr, p->rd, p->rs, r0);
    int64_t rest_r = r0;
    for (int d = p->nr - 1; d >= 0; --d) {
      idx[d] = rest_r % p->rd[d];
      rest_r /= p->rd[d];
    }
    if (p->produce && len == width && p->ks[p->nk - 1] == 1 && p->nr == 1 && p->rs[0] == width) {
      // Produced rows that follow each other in the input: produced many at a time, about
      // CMLC_RD_STREAM elements (the buffer stays in L1: masked mean pooling of [32, 512, 768],
      // 1 thread on Zen 5, 2.4-2.9 -> 1.8-2.1 ms against ten rows of 768 at a time).
      const int64_t per = len < CMLC_RD_STREAM ? CMLC_RD_STREAM / len : 1;
      for (int64_t r = r0; r < r1; r += per) {
        const int64_t rows = r1 - r < per ? r1 - r : per;
        p->produce(p->produce_ctx, base + r * width, rows * len, produced);
        for (int64_t q = 0; q < rows; ++q) p->cols(acc, produced + q * len, len);
      }
      continue;
    }
    if (!p->produce && !p->widen && p->op == CML_OP_REDUCE_SUM && len <= 16) {
      // Rows of 1 to 16 columns (a sum over a middle axis with a short innermost one): a call
      // of p->cols per row cost more than its adds ([64, 4096, 16] over axis 1: 262144 calls;
      // [2048, 1024, 3] over axis 1, 1 thread on Zen: 17.5 ms against XLA's 5.8). The same
      // additions in the same order, inline, with the width a constant so the accumulators
      // stay in registers.
      const float* in = (const float*)p->in + base;
      switch (len) {
#define CMLC_RD_NARROW_CASE(W) \
  case W:                      \
    CMLC_RD_NARROW_COLS(W);    \
    break;
        CMLC_RD_NARROW_CASE(1)
        CMLC_RD_NARROW_CASE(2)
        CMLC_RD_NARROW_CASE(3)
        CMLC_RD_NARROW_CASE(4)
        CMLC_RD_NARROW_CASE(5)
        CMLC_RD_NARROW_CASE(6)
        CMLC_RD_NARROW_CASE(7)
        CMLC_RD_NARROW_CASE(8)
        CMLC_RD_NARROW_CASE(9)
        CMLC_RD_NARROW_CASE(10)
        CMLC_RD_NARROW_CASE(11)
        CMLC_RD_NARROW_CASE(12)
        CMLC_RD_NARROW_CASE(13)
        CMLC_RD_NARROW_CASE(14)
        CMLC_RD_NARROW_CASE(15)
        default:
          CMLC_RD_NARROW_COLS(16);
          break;
#undef CMLC_RD_NARROW_CASE
      }
      continue;
    }
    for (int64_t r = r0; r < r1; ++r) {
      if (p->produce) {
        p->produce(p->produce_ctx, base + off, len, row);
        p->cols(acc, row, len);
      } else if (p->widen) {
        p->widen(row, (const uint16_t*)p->in + base + off, len);
        p->cols(acc, row, len);
      } else {
        p->cols(acc, (const float*)p->in + base + off, len);
      }
      cmlc_rd_next(p->nr, p->rd, p->rs, idx, &off);
    }
  }
}

// Pass 2, tasks (row, tile of CMLC_RD_TILE columns): block partials in order into a
// super-block partial, super-block partials in order into the output.
static void cmlc_rd_simd_f32_cols2(void* ctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const cmlc_rd_plan_t* p = (const cmlc_rd_plan_t*)ctx;
  const int64_t width = p->kd[p->nk - 1];
  const int64_t tiles = (width + CMLC_RD_TILE - 1) / CMLC_RD_TILE;
  const int64_t per_super = CMLC_RD_SUPER_BLOCK / CMLC_RD_ROW_BLOCK;
  const float ident = cmlc_rd_ident_f32(p->op);
  _Alignas(64) float mid[CMLC_RD_TILE], rounded[CMLC_RD_TILE];
  for (int64_t t = begin; t < end; ++t) {
    const int64_t row = t / tiles, c0 = (t % tiles) * CMLC_RD_TILE;
    const int64_t len = width - c0 < CMLC_RD_TILE ? width - c0 : CMLC_RD_TILE;
    // bf16 / f16 (p->widen): the total in f32 here, rounded once into the output below.
    float* total = p->widen ? rounded : (float*)p->out + row * width + c0;
    const float* part = (const float*)p->partials + row * p->blocks * width + c0;
    for (int64_t j = 0; j < len; ++j) total[j] = ident;
    for (int64_t s0 = 0; s0 < p->blocks; s0 += per_super) {
      const int64_t s1 = cmlc_rd_block_end(s0, per_super, p->blocks);
      for (int64_t j = 0; j < len; ++j) mid[j] = ident;
      for (int64_t b = s0; b < s1; ++b) p->cols(mid, part + b * width, len);
      p->cols(total, mid, len);
    }
    if (p->widen) {
      uint16_t* y = (uint16_t*)p->out + row * width + c0;
      const bool bf = p->half == CML_DTYPE_BF16;
      for (int64_t j = 0; j < len; ++j)
        y[j] = bf ? cml__f32_to_bf16(total[j]) : cml__f32_to_f16(total[j]);
    }
  }
}

// Scratch floats of the SIMD column path (0 when it needs none: one block or no path).
static int64_t cmlc_rd_cols_scratch_floats(const cmlc_rd_plan_t* p) {
  const int64_t blocks = (p->reduced + CMLC_RD_ROW_BLOCK - 1) / CMLC_RD_ROW_BLOCK;
  return blocks > 1 ? p->outputs * blocks : 0;
}

// Scratch floats of the half column path: every block's partial.
static int64_t cmlc_rd_half_scratch_floats(const cmlc_rd_plan_t* p) {
  const int64_t blocks = (p->reduced + CMLC_RD_ROW_BLOCK - 1) / CMLC_RD_ROW_BLOCK;
  return p->outputs * (blocks > 1 ? blocks : 1);
}

// Blocked full reduction with the SIMD row reduction (f32, or bf16 / f16 in f32): f32 partials
// (the generic finish combines them and rounds halves once).
static void cmlc_rd_simd_blk(void* ctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const cmlc_rd_plan_t* p = (const cmlc_rd_plan_t*)ctx;
  float* part = (float*)p->partials;
  for (int64_t b = begin; b < end; ++b) {
    const int64_t start = b * p->block;
    const int64_t len = p->reduced - start < p->block ? p->reduced - start : p->block;
    part[b] = p->simd ? p->simd((const float*)p->in + start, len)
                      : p->simd_half((const uint16_t*)p->in + start, len);
  }
}

//===--- reduce runner ---===//

// The SIMD f32 kernels' slot of |op|: 0 ReduceSum, 1 ReduceMax, 2 ReduceMin; -1: none (also
// in reference mode and without the x86-64 kernels).
static int cmlc_rd_f32_slot(const cmlc_options_t* options, cml_op_t op) {
#if defined(CMLC_HAVE_X86_64)
  if (!options || options->reference) return -1;
  return op == CML_OP_REDUCE_SUM   ? 0
         : op == CML_OP_REDUCE_MAX ? 1
         : op == CML_OP_REDUCE_MIN ? 2
                                   : -1;
#else
  (void)options;
  (void)op;
  return -1;
#endif
}

cmlc__rd_runs_f32_fn cmlc__rd_runs_f32(const cmlc_options_t* options, cml_op_t op) {
  const int slot = cmlc_rd_f32_slot(options, op);
  if (slot < 0 || options->isa != CMLC_ISA_AVX512) return NULL;
#if defined(CMLC_HAVE_X86_64)
  static const cmlc__rd_runs_f32_fn runs[3] = {
      cmlc__rd_runs_sum_f32_avx512, cmlc__rd_runs_max_f32_avx512, cmlc__rd_runs_min_f32_avx512};
  return runs[slot];
#else
  return NULL;
#endif
}

cmlc__rd_cols_f32_fn cmlc__rd_cols_f32(const cmlc_options_t* options, cml_op_t op) {
  const int slot = cmlc_rd_f32_slot(options, op);
  if (slot < 0) return NULL;
#if defined(CMLC_HAVE_X86_64)
  static const cmlc__rd_cols_f32_fn cols512[3] = {
      cmlc__rd_cols_sum_f32_avx512, cmlc__rd_cols_max_f32_avx512, cmlc__rd_cols_min_f32_avx512};
  static const cmlc__rd_cols_f32_fn cols256[3] = {
      cmlc__rd_cols_sum_f32_avx2, cmlc__rd_cols_max_f32_avx2, cmlc__rd_cols_min_f32_avx2};
  if (options->isa == CMLC_ISA_AVX512) return cols512[slot];
  if (options->isa == CMLC_ISA_AVX2) return cols256[slot];
#endif
  return NULL;
}

// Classifies the axes of |is| (reduced per |attrs|, or all when no axes are given and the
// rank drops) into merged kept and reduced dims in |p| (in/out pointers left NULL); sets
// *|out_last| to the class of the innermost merged axis (0 kept, 1 reduced). Fails for an
// axis out of range.
static cml_status_t cmlc_rd_classify(const cml_shape_t* is, const cml_shape_t* os,
                                     const cml_ir_attrs_t* attrs, cml_op_t op, cmlc_rd_plan_t* p,
                                     int* out_last) {
  bool reduced[CML_MAX_RANK] = {false};
  if (attrs->axis_count == 0 && os->rank != is->rank) {
    for (int32_t d = 0; d < is->rank; ++d) reduced[d] = true;
  }
  for (int32_t k = 0; k < attrs->axis_count; ++k) {
    const int64_t a = attrs->axes[k];
    if (a < 0 || a >= is->rank) {
      char text[128];
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: axis %lld out of range for %s",
                             cml_op_name(op), (long long)a,
                             cml_shape_format(is, text, sizeof text));
    }
    reduced[a] = true;
  }
  memset(p, 0, sizeof *p);
  p->op = op;
  int64_t strides[CML_MAX_RANK];
  cmlc_shape_strides(is, strides);
  int last = -1;
  for (int32_t d = 0; d < is->rank; ++d) {
    if (is->dims[d] == 1) continue;
    const int cls = reduced[d] ? 1 : 0;
    int64_t* dims = cls ? p->rd : p->kd;
    int64_t* st = cls ? p->rs : p->ks;
    int* count = cls ? &p->nr : &p->nk;
    if (cls == last) {
      dims[*count - 1] *= is->dims[d];
      st[*count - 1] = strides[d];
    } else {
      dims[*count] = is->dims[d];
      st[*count] = strides[d];
      ++*count;
    }
    last = cls;
  }
  p->outputs = 1;
  for (int k = 0; k < p->nk; ++k) p->outputs *= p->kd[k];
  p->reduced = 1;
  for (int k = 0; k < p->nr; ++k) p->reduced *= p->rd[k];
  if (p->nr == 0) {  // nothing reduced: a "reduction" of one element each
    p->rd[0] = 1;
    p->rs[0] = 0;
    p->nr = 1;
    last = p->nk > 0 ? 0 : 1;
  }
  if (p->nk == 0) {  // full reduction: one kept axis of size 1
    p->kd[0] = 1;
    p->ks[0] = 0;
    p->nk = 1;
    last = 1;
  }
  *out_last = last;
  return CML_OK;
}

//===--- short innermost runs ---===//
// A reduction whose innermost merged axis is reduced but short (at most CMLC_RD_SHORT_RUN
// elements) with many such runs per output (GroupNorm's statistics: [n, h, w, groups, c / g]
// over h, w and c / g) would make one tiny contiguous reduction per run. It runs in two passes
// instead: pass 1 reduces each run in order into T (the input without that axis, in scratch),
// pass 2 reduces T, whose innermost axis is kept, with the column path (its blocked order).

enum {
  CMLC_RD_SHORT_RUN = 16,
  CMLC_RD_SHORT_MIN_RUNS = 2,                 // runs per output
  CMLC_RD_SHORT_MAX_BYTES = 16 * 1024 * 1024  // bytes of T
};

// The plan of pass 2 (over T) when |p| (classified with an innermost reduced axis) takes the
// short-run path with the column step |cols|; false otherwise.
static bool cmlc_rd_short_plan(const cmlc_rd_plan_t* p, cml_dtype_t dtype,
                               cmlc__rd_cols_f32_fn cols, cmlc_rd_plan_t* t) {
  const bool half = dtype == CML_DTYPE_BF16 || dtype == CML_DTYPE_F16;
  if ((dtype != CML_DTYPE_F32 && !half) || !cols || p->nr < 2 || p->nk < 1) return false;
  const int64_t len = p->rd[p->nr - 1];
  if (len < 2 || len > CMLC_RD_SHORT_RUN || p->rs[p->nr - 1] != 1) return false;
  if (p->reduced / len < CMLC_RD_SHORT_MIN_RUNS) return false;
  if (p->ks[p->nk - 1] != len) return false;  // the kept axis right above the runs
  const int64_t t_count = p->outputs * (p->reduced / len);
  if ((double)t_count * sizeof(float) > CMLC_RD_SHORT_MAX_BYTES) return false;
  *t = *p;
  t->nr = p->nr - 1;
  t->reduced = p->reduced / len;
  for (int k = 0; k < t->nk; ++k) t->ks[k] = p->ks[k] / len;
  for (int r = 0; r < t->nr; ++r) t->rs[r] = p->rs[r] / len;
  t->cols = cols;
  return true;
}

// Scratch floats of the short-run path: T, pass 2's block partials, then (bf16 / f16: |half|)
// pass 2's f32 results before they are rounded into the output.
static int64_t cmlc_rd_short_scratch_floats(const cmlc_rd_plan_t* t, bool half) {
  return cmlc_rd_align_floats(t->outputs * t->reduced) +
         cmlc_rd_align_floats(cmlc_rd_cols_scratch_floats(t)) + (half ? t->outputs : 0);
}

typedef struct cmlc_rd_short_t {
  const cmlc_rd_plan_t* p;  // the reduction (op, input or producer)
  float* t;
  int64_t len;
} cmlc_rd_short_t;

// Pass 1: T[i] = the run of |len| input elements from i * len, combined in order from the
// identity.
static void cmlc_rd_short_pass1(void* ctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const cmlc_rd_short_t* c = (const cmlc_rd_short_t*)ctx;
  const cmlc_rd_plan_t* p = c->p;
  const int64_t len = c->len;
  _Alignas(64) float produced[CMLC__RD_PRODUCE_MAX_RUN];
  const int64_t per = CMLC__RD_PRODUCE_MAX_RUN / len;  // runs per produced chunk
  for (int64_t i0 = begin; i0 < end; i0 += per) {
    const int64_t n = end - i0 < per ? end - i0 : per;
    const float* x = (const float*)p->in + i0 * len;
    if (p->produce) {
      p->produce(p->produce_ctx, i0 * len, n * len, produced);
      x = produced;
    } else if (p->half != CML_DTYPE_INVALID) {
      // bf16 / f16 widened to f32 (exact), combined in f32 as the other half paths.
      const uint16_t* h = (const uint16_t*)p->in + i0 * len;
      if (p->widen) {
        p->widen(produced, h, n * len);
      } else if (p->half == CML_DTYPE_BF16) {
        for (int64_t k = 0; k < n * len; ++k) produced[k] = cml_bf16_to_f32(h[k]);
      } else {
        for (int64_t k = 0; k < n * len; ++k) produced[k] = cml_f16_to_f32(h[k]);
      }
      x = produced;
    }
    if (p->runs) {
      p->runs(x, len, n, c->t + i0);  // (the same order and bits, SIMD across runs)
    } else {
      cmlc_rd_rows_f32(p->op, x, len, n, c->t + i0);
    }
  }
}

// Scratch: the partials of a blocked full reduction, or the block partials of the f32 SIMD
// column path.
static size_t cmlc_rd_scratch(const cml_module_t* module, const cml_ir_node_t* node,
                              const cmlc_options_t* options) {
  const cml_shape_t* is = &module->values[node->inputs[0]].shape;
  const cml_shape_t* os = &module->values[node->first_output].shape;
  if (cml_shape_element_count(os) == 1) {
    int64_t block, blocks;
    cmlc_rd_blocking(cml_shape_element_count(is), &block, &blocks);
    return cmlc_size_of(blocks, CMLC_RD_PARTIAL_SIZE);
  }
  const bool half = is->dtype == CML_DTYPE_BF16 || is->dtype == CML_DTYPE_F16;
  if ((is->dtype != CML_DTYPE_F32 && !half) || !cmlc__rd_cols_f32(options, node->op)) return 0;
  cmlc_rd_plan_t p;
  int last;
  cml_status_t st = cmlc_rd_classify(is, os, node->attrs, node->op, &p, &last);
  if (st != CML_OK) {
    cml_status_free(st);
    return 0;
  }
  cmlc_rd_plan_t t;
  if (last == 1 && cmlc_rd_short_plan(&p, is->dtype, cmlc__rd_cols_f32(options, node->op), &t)) {
    return cmlc_size_of(cmlc_rd_short_scratch_floats(&t, half), sizeof(float));
  }
  if (last != 0) return 0;
  // Halves keep every block's partial, even a single one (pass 2 rounds them into the output).
  const int64_t floats = half ? cmlc_rd_half_scratch_floats(&p) : cmlc_rd_cols_scratch_floats(&p);
  return cmlc_size_of(floats, sizeof(float));
}

// Runs the short-run path: pass 1 into T (at |scratch|), then the column path over T (pass 2's
// partials after T) into p->out (bf16 / f16: into f32 results after the partials, rounded into
// p->out once).
static void cmlc_rd_run_short(const cmlc_rd_plan_t* p, cmlc_rd_plan_t* t, void* scratch,
                              cmlc_pool_t* pool, cmlc_ew_convert_fn narrow) {
  const int64_t len = p->rd[p->nr - 1];
  const int64_t t_count = t->outputs * t->reduced;
  const bool half = p->half != CML_DTYPE_INVALID;
  cmlc_rd_short_t c = {p, (float*)scratch, len};
  cmlc_parallel_for(pool, t_count, CMLC_RD_MIN_WORK / len + 1, cmlc_rd_short_pass1, &c);
  t->in = scratch;
  t->produce = NULL;
  t->widen = NULL;
  t->half = CML_DTYPE_INVALID;
  t->simd_half = NULL;
  t->partials = (float*)scratch + cmlc_rd_align_floats(t_count);
  float* results = (float*)t->partials + cmlc_rd_align_floats(cmlc_rd_cols_scratch_floats(t));
  t->out = half ? (void*)results : p->out;
  const int64_t width = t->kd[t->nk - 1];
  const int64_t per_output = t->reduced > 0 ? t->reduced : 1;
  t->tile = CMLC_RD_SIMD_TILE;
  t->tiles = (width + t->tile - 1) / t->tile;
  t->blocks = (t->reduced + CMLC_RD_ROW_BLOCK - 1) / CMLC_RD_ROW_BLOCK;
  if (t->blocks < 1) t->blocks = 1;
  const int64_t rows = t->outputs / width;
  const int64_t block_work = (t->reduced < CMLC_RD_ROW_BLOCK ? per_output : CMLC_RD_ROW_BLOCK) *
                             (width < t->tile ? width : t->tile);
  int64_t chunk = CMLC_RD_MIN_WORK / block_work;
  cmlc_parallel_for(pool, rows * t->tiles * t->blocks, chunk < 1 ? 1 : chunk,
                    cmlc_rd_simd_f32_cols1, t);
  if (t->blocks > 1) {
    const int64_t tiles2 = (width + CMLC_RD_TILE - 1) / CMLC_RD_TILE;
    const int64_t work2 = t->blocks * (width < CMLC_RD_TILE ? width : CMLC_RD_TILE);
    chunk = CMLC_RD_MIN_WORK / work2;
    cmlc_parallel_for(pool, rows * tiles2, chunk < 1 ? 1 : chunk, cmlc_rd_simd_f32_cols2, t);
  }
  if (!half) return;
  uint16_t* out = (uint16_t*)p->out;
  if (p->half == CML_DTYPE_BF16) {
    cmlc_f32_to_bf16_row(out, results, t->outputs);
  } else if (narrow) {
    narrow(out, results, t->outputs);
  } else {
    for (int64_t k = 0; k < t->outputs; ++k) out[k] = cml_f32_to_f16(results[k]);
  }
}

// The reduce runner; |produce| (NULL: read args->inputs[0]) computes an f32 input on the fly
// (cmlc__rd_run_produced: only the SIMD row and column paths take one).
static cml_status_t cmlc_rd_run_with(const cmlc_kernel_args_t* args, cmlc__rd_produce_fn produce,
                                     void* produce_ctx) {
  const cml_shape_t* is = args->input_shapes[0];
  const cml_shape_t* os = args->output_shapes[0];
  cmlc_rd_fns_t fns = cmlc_rd_pick(args->node->op, is->dtype);
  if (!fns.inner_reduced) {
    return cml_status_make(CML_STATUS_INTERNAL, "%s: no kernel for %s", cml_op_name(args->node->op),
                           cml_dtype_name(is->dtype));
  }
  cmlc_rd_plan_t p;
  int last;
  CML_RETURN_IF_ERROR(cmlc_rd_classify(is, os, args->node->attrs, args->node->op, &p, &last));
  p.in = produce ? NULL : args->inputs[0];
  p.out = args->outputs[0];
  p.produce = produce;
  p.produce_ctx = produce_ctx;
  if (p.outputs == 0) return CML_OK;
  const int64_t per_output = p.reduced > 0 ? p.reduced : 1;
  // The lookup's picks: slot 0 the SIMD row reducer, slot 1 the SIMD column reducer (f32 only).
  if (is->dtype == CML_DTYPE_F32) {
    p.simd = (cmlc_rd_f32_fn)args->impl[0];
    p.runs = p.simd ? cmlc__rd_runs_f32(args->options, args->node->op) : NULL;
  }
  const bool half = is->dtype == CML_DTYPE_BF16 || is->dtype == CML_DTYPE_F16;
  if (half) {
    p.simd_half = (cmlc_rd_half_fn)args->impl[0];
    p.half = is->dtype;
  }
  {
    cmlc_rd_plan_t t;
    if (last == 1 && cmlc_rd_short_plan(&p, is->dtype, (cmlc__rd_cols_f32_fn)args->impl[1], &t) &&
        args->scratch &&
        args->scratch_size >= cmlc_size_of(cmlc_rd_short_scratch_floats(&t, half), sizeof(float))) {
      cmlc_ew_convert_fn narrow = NULL;
      if (half) {
        p.runs = cmlc__rd_runs_f32(args->options, args->node->op);
        p.widen = cmlc_ew_simd_convert_fn(args->options, is->dtype, CML_DTYPE_F32);
        narrow = cmlc_ew_simd_convert_fn(args->options, CML_DTYPE_F32, is->dtype);
      }
      cmlc_rd_run_short(&p, &t, args->scratch, args->pool, narrow);
      return CML_OK;
    }
  }
  if (produce) {
    // cmlc__rd_produced_ok picked these cases: f32 with the SIMD row reduction (a full
    // reduction blocked as a stored one) or the SIMD column step; f64 with the innermost axis
    // reduced.
    cmlc_task_fn f64_rows = NULL, f64_blocks = NULL;
    if (is->dtype == CML_DTYPE_F64)
      cmlc_rd_pick_f64_produced(args->node->op, &f64_rows, &f64_blocks);
    if (is->dtype != CML_DTYPE_F32) p.simd = NULL;
    if (p.simd) p.step = cmlc_rd_simd_f32_step_fn(args->options, args->node->op);
    if (last == 1 && (p.simd || f64_rows)) {
      if (p.outputs == 1 && p.nr == 1) {
        cmlc_rd_blocking(p.reduced, &p.block, &p.blocks);
        if (p.blocks >= 2 && args->scratch &&
            args->scratch_size >= cmlc_size_of(p.blocks, CMLC_RD_PARTIAL_SIZE)) {
          p.partials = args->scratch;
          cmlc_parallel_for(args->pool, p.blocks, 1,
                            p.simd ? cmlc_rd_simd_blk_produced : f64_blocks, &p);
          fns.finish(&p);
          return CML_OK;
        }
      }
      int64_t chunk = CMLC_RD_MIN_WORK / per_output;
      cmlc_parallel_for(args->pool, p.outputs, chunk < 1 ? 1 : chunk,
                        p.simd ? cmlc_rd_simd_a_produced : f64_rows, &p);
      return CML_OK;
    }
    p.cols = is->dtype == CML_DTYPE_F32 && last == 0 ? (cmlc__rd_cols_f32_fn)args->impl[1] : NULL;
    if (!p.cols ||
        args->scratch_size < cmlc_size_of(cmlc_rd_cols_scratch_floats(&p), sizeof(float))) {
      char in_text[128], out_text[128];
      return cml_status_make(
          CML_STATUS_INTERNAL, "%s: no path for an operand computed on the fly: %s -> %s",
          cml_op_name(args->node->op), cml_shape_format(is, in_text, sizeof in_text),
          cml_shape_format(os, out_text, sizeof out_text));
    }
  }
  if (last == 1 && p.outputs == 1 && p.nr == 1) {
    cmlc_rd_blocking(p.reduced, &p.block, &p.blocks);
    if (p.blocks >= 2 && args->scratch &&
        args->scratch_size >= cmlc_size_of(p.blocks, CMLC_RD_PARTIAL_SIZE)) {
      p.partials = args->scratch;
      cmlc_task_fn blk = p.simd || p.simd_half ? cmlc_rd_simd_blk : fns.block;
      cmlc_parallel_for(args->pool, p.blocks, 1, blk, &p);
      fns.finish(&p);
      return CML_OK;
    }
  }
  if (last == 0 && half && args->impl[1] && args->impl[2]) {
    p.cols = (cmlc__rd_cols_f32_fn)args->impl[1];
    p.widen = (cmlc_ew_convert_fn)args->impl[2];
    const int64_t width = p.kd[p.nk - 1];
    p.tile = CMLC_RD_SIMD_TILE;
    p.tiles = (width + p.tile - 1) / p.tile;
    p.blocks = (p.reduced + CMLC_RD_ROW_BLOCK - 1) / CMLC_RD_ROW_BLOCK;
    if (p.blocks < 1) p.blocks = 1;
    if (args->scratch &&
        args->scratch_size >= cmlc_size_of(cmlc_rd_half_scratch_floats(&p), sizeof(float))) {
      p.partials = args->scratch;
      const int64_t rows = p.outputs / width;
      const int64_t block_work = (p.reduced < CMLC_RD_ROW_BLOCK ? per_output : CMLC_RD_ROW_BLOCK) *
                                 (width < p.tile ? width : p.tile);
      int64_t chunk = CMLC_RD_MIN_WORK / block_work;
      cmlc_parallel_for(args->pool, rows * p.tiles * p.blocks, chunk < 1 ? 1 : chunk,
                        cmlc_rd_simd_f32_cols1, &p);
      const int64_t tiles2 = (width + CMLC_RD_TILE - 1) / CMLC_RD_TILE;
      const int64_t work2 = p.blocks * (width < CMLC_RD_TILE ? width : CMLC_RD_TILE);
      chunk = CMLC_RD_MIN_WORK / work2;
      cmlc_parallel_for(args->pool, rows * tiles2, chunk < 1 ? 1 : chunk, cmlc_rd_simd_f32_cols2,
                        &p);
      return CML_OK;
    }
    p.cols = NULL;
  }
  if (last == 0 && is->dtype == CML_DTYPE_F32) {
    p.cols = (cmlc__rd_cols_f32_fn)args->impl[1];
    if (p.cols &&
        args->scratch_size < cmlc_size_of(cmlc_rd_cols_scratch_floats(&p), sizeof(float))) {
      p.cols = NULL;  // no room for the block partials (a caller that skipped the scratch)
    }
  }
  // bf16 / f16 rows of at most CMLC_RD_SHORT_ROW that follow each other: widened and combined
  // by the f32 short-run kernel, else the generic task (the SIMD row reducer's call and setup
  // per row of 4 cost 30x xla:cpu's time).
  if (p.simd_half && last == 1 && p.nr == 1 && p.nk == 1 && p.rd[0] >= 1 &&
      p.rd[0] <= CMLC_RD_SHORT_ROW && p.rs[0] == 1 && p.ks[0] == p.rd[0]) {
    p.simd_half = NULL;
    p.runs = cmlc__rd_runs_f32(args->options, args->node->op);
    p.widen = p.runs ? cmlc_ew_simd_convert_fn(args->options, is->dtype, CML_DTYPE_F32) : NULL;
    if (p.runs && p.widen) {
      p.half = is->dtype;
      cmlc_parallel_for(args->pool, p.outputs, CMLC_RD_MIN_WORK / p.rd[0] + 1, cmlc_rd_half_runs,
                        &p);
      return CML_OK;
    }
  }
  if (last == 1 && (p.simd || p.simd_half)) {
    int64_t chunk = CMLC_RD_MIN_WORK / per_output;
    cmlc_parallel_for(args->pool, p.outputs, chunk < 1 ? 1 : chunk, cmlc_rd_simd_a, &p);
  } else if (last == 1) {
    int64_t chunk = CMLC_RD_MIN_WORK / per_output;
    cmlc_parallel_for(args->pool, p.outputs, chunk < 1 ? 1 : chunk, fns.inner_reduced, &p);
  } else if (p.cols) {
    const int64_t width = p.kd[p.nk - 1];
    p.tile = CMLC_RD_SIMD_TILE;
    p.tiles = (width + p.tile - 1) / p.tile;
    p.blocks = (p.reduced + CMLC_RD_ROW_BLOCK - 1) / CMLC_RD_ROW_BLOCK;
    if (p.blocks < 1) p.blocks = 1;
    p.partials = args->scratch;
    const int64_t rows = p.outputs / width;
    const int64_t block_work = (p.reduced < CMLC_RD_ROW_BLOCK ? per_output : CMLC_RD_ROW_BLOCK) *
                               (width < p.tile ? width : p.tile);
    int64_t chunk = CMLC_RD_MIN_WORK / block_work;
    cmlc_parallel_for(args->pool, rows * p.tiles * p.blocks, chunk < 1 ? 1 : chunk,
                      cmlc_rd_simd_f32_cols1, &p);
    if (p.blocks > 1) {
      const int64_t tiles2 = (width + CMLC_RD_TILE - 1) / CMLC_RD_TILE;
      const int64_t work2 = p.blocks * (width < CMLC_RD_TILE ? width : CMLC_RD_TILE);
      chunk = CMLC_RD_MIN_WORK / work2;
      cmlc_parallel_for(args->pool, rows * tiles2, chunk < 1 ? 1 : chunk, cmlc_rd_simd_f32_cols2,
                        &p);
    }
  } else {
    const int64_t width = p.kd[p.nk - 1];
    p.tiles = (width + CMLC_RD_TILE - 1) / CMLC_RD_TILE;
    const int64_t tasks = (p.outputs / width) * p.tiles;
    int64_t chunk = CMLC_RD_MIN_WORK / (per_output * (width < CMLC_RD_TILE ? width : CMLC_RD_TILE));
    cmlc_parallel_for(args->pool, tasks, chunk < 1 ? 1 : chunk, fns.inner_kept, &p);
  }
  return CML_OK;
}

static cml_status_t cmlc_rd_run(const cmlc_kernel_args_t* args) {
  return cmlc_rd_run_with(args, NULL, NULL);
}

bool cmlc__rd_produced_ok(const cml_module_t* module, const cml_ir_node_t* node,
                          const cmlc_options_t* options) {
  if (!options || options->reference || node->input_count != 1 || node->output_count != 1) {
    return false;
  }
  if (node->op != CML_OP_REDUCE_SUM && node->op != CML_OP_REDUCE_MAX &&
      node->op != CML_OP_REDUCE_MIN) {
    return false;
  }
  const cml_shape_t* is = &module->values[node->inputs[0]].shape;
  const cml_shape_t* os = &module->values[node->first_output].shape;
  const bool f64 = is->dtype == CML_DTYPE_F64 && os->dtype == CML_DTYPE_F64;
  if (!f64 && (is->dtype != CML_DTYPE_F32 || os->dtype != CML_DTYPE_F32)) return false;
  cmlc_rd_plan_t p;
  int last;
  cml_status_t st = cmlc_rd_classify(is, os, node->attrs, node->op, &p, &last);
  if (st != CML_OK) {
    cml_status_free(st);
    return false;
  }
  if (f64) return last == 1;
  cmlc_rd_plan_t t;
  if (last == 1 && cmlc_rd_short_plan(&p, is->dtype, cmlc__rd_cols_f32(options, node->op), &t)) {
    return true;
  }
  if (last == 1) return cmlc_rd_simd_f32_fn(options, node->op) != NULL;
  return cmlc__rd_cols_f32(options, node->op) != NULL;
}

size_t cmlc__rd_produced_scratch(const cml_module_t* module, const cml_ir_node_t* node,
                                 const cmlc_options_t* options) {
  return cmlc_rd_scratch(module, node, options);
}

cml_status_t cmlc__rd_run_produced(const cml_module_t* module, const cml_ir_node_t* node,
                                   const cmlc_options_t* options, cmlc_pool_t* pool, void* scratch,
                                   size_t scratch_size, cmlc__rd_produce_fn produce,
                                   void* produce_ctx, void* out) {
  const cml_shape_t* shapes[2] = {&module->values[node->inputs[0]].shape,
                                  &module->values[node->first_output].shape};
  void* outs[1] = {out};
  cmlc_kernel_args_t args = {
      .module = module,
      .node = node,
      .options = options,
      .input_count = 1,
      .input_shapes = shapes,
      .output_count = 1,
      .output_shapes = shapes + 1,
      .outputs = outs,
      .scratch = scratch,
      .scratch_size = scratch_size,
      .pool = pool,
      .replica_count = 1,
  };
  args.impl[0] = (cmlc_impl_fn)cmlc_rd_simd_f32_fn(options, node->op);
  args.impl[1] = (cmlc_impl_fn)cmlc__rd_cols_f32(options, node->op);
  return cmlc_rd_run_with(&args, produce, produce_ctx);
}

//===--- ArgMinMax ---===//

typedef struct cmlc_rd_arg_plan_t {
  const void* in;
  void* out;
  cml_dtype_t out_dtype;
  bool is_min;
  int64_t outer, dim, inner, tiles;
  cmlc_ew_convert_fn widen;  // f16 / bf16 rows along the axis (inner == 1): the SIMD widening
} cmlc_rd_arg_plan_t;

#define CMLC_RD_NOT_NAN(x) 0
#define CMLC_RD_FLOAT_NAN(x) isnan(x)

// Tasks are (outer index, tile of inner columns); each column scans the axis in order.
#define CMLC_RD_ARG_GEN(sfx, T, CT, LOAD, ISNAN)                                           \
  static void cmlc_rd_arg_##sfx(void* ctx, int64_t begin, int64_t end, int thread_index) { \
    (void)thread_index;                                                                    \
    const cmlc_rd_arg_plan_t* p = (const cmlc_rd_arg_plan_t*)ctx;                          \
    const T* x = (const T*)p->in;                                                          \
    CT best[CMLC_RD_TILE];                                                                 \
    int64_t index[CMLC_RD_TILE];                                                           \
    for (int64_t t = begin; t < end; ++t) {                                                \
      const int64_t o = t / p->tiles, c0 = (t % p->tiles) * CMLC_RD_TILE;                  \
      const int64_t len = p->inner - c0 < CMLC_RD_TILE ? p->inner - c0 : CMLC_RD_TILE;     \
      const T* base = x + o * p->dim * p->inner + c0;                                      \
      for (int64_t j = 0; j < len; ++j) index[j] = 0;                                      \
      if (p->dim > 0) {                                                                    \
        for (int64_t j = 0; j < len; ++j) best[j] = LOAD(base[j]);                         \
      }                                                                                    \
      for (int64_t k = 1; k < p->dim; ++k) {                                               \
        const T* row = base + k * p->inner;                                                \
        for (int64_t j = 0; j < len; ++j) {                                                \
          const CT v = LOAD(row[j]);                                                       \
          const CT b = best[j];                                                            \
          (void)b;                                                                         \
          bool better;                                                                     \
          if (ISNAN(b)) {                                                                  \
            better = false;                                                                \
          } else if (ISNAN(v)) {                                                           \
            better = true;                                                                 \
          } else {                                                                         \
            better = p->is_min ? v < b : v > b;                                            \
          }                                                                                \
          if (better) {                                                                    \
            best[j] = v;                                                                   \
            index[j] = k;                                                                  \
          }                                                                                \
        }                                                                                  \
      }                                                                                    \
      cmlc_ew_store_i64(p->out_dtype, index, len, p->out, o * p->inner + c0);              \
    }                                                                                      \
  }
CMLC_RD_ARG_GEN(f16, uint16_t, float, cml_f16_to_f32, CMLC_RD_FLOAT_NAN)
CMLC_RD_ARG_GEN(bf16, uint16_t, float, cml_bf16_to_f32, CMLC_RD_FLOAT_NAN)
CMLC_RD_ARG_GEN(f32, float, float, CMLC_EW_ID, CMLC_RD_FLOAT_NAN)
CMLC_RD_ARG_GEN(f64, double, double, CMLC_EW_ID, CMLC_RD_FLOAT_NAN)
CMLC_RD_ARG_GEN(i8, int8_t, int8_t, CMLC_EW_ID, CMLC_RD_NOT_NAN)
CMLC_RD_ARG_GEN(i16, int16_t, int16_t, CMLC_EW_ID, CMLC_RD_NOT_NAN)
CMLC_RD_ARG_GEN(i32, int32_t, int32_t, CMLC_EW_ID, CMLC_RD_NOT_NAN)
CMLC_RD_ARG_GEN(i64, int64_t, int64_t, CMLC_EW_ID, CMLC_RD_NOT_NAN)
CMLC_RD_ARG_GEN(u8, uint8_t, uint8_t, CMLC_EW_ID, CMLC_RD_NOT_NAN)
CMLC_RD_ARG_GEN(u16, uint16_t, uint16_t, CMLC_EW_ID, CMLC_RD_NOT_NAN)
CMLC_RD_ARG_GEN(u32, uint32_t, uint32_t, CMLC_EW_ID, CMLC_RD_NOT_NAN)
CMLC_RD_ARG_GEN(u64, uint64_t, uint64_t, CMLC_EW_ID, CMLC_RD_NOT_NAN)

// The axis contiguous (inner == 1: the class axis of logits): rows [begin, end), scanned as the
// tiled task scans a column (the first NaN is final: nothing after it is better), their indices
// stored CMLC_RD_TILE at a time (one store per row cost 56 ns per row of 4, 34x xla:cpu's time).
#define CMLC_RD_ARG_ROWS_GEN(sfx, T, CT, LOAD, ISNAN)                                          \
  static void cmlc_rd_argrows_##sfx(void* ctx, int64_t begin, int64_t end, int thread_index) { \
    (void)thread_index;                                                                        \
    const cmlc_rd_arg_plan_t* p = (const cmlc_rd_arg_plan_t*)ctx;                              \
    const T* x = (const T*)p->in;                                                              \
    const bool is_min = p->is_min;                                                             \
    int64_t index[CMLC_RD_TILE];                                                               \
    for (int64_t o0 = begin; o0 < end; o0 += CMLC_RD_TILE) {                                   \
      const int64_t n = end - o0 < CMLC_RD_TILE ? end - o0 : CMLC_RD_TILE;                     \
      for (int64_t q = 0; q < n; ++q) {                                                        \
        const T* row = x + (o0 + q) * p->dim;                                                  \
        int64_t at = 0;                                                                        \
        CT best = LOAD(row[0]);                                                                \
        for (int64_t k = 1; k < p->dim && !ISNAN(best); ++k) {                                 \
          const CT v = LOAD(row[k]);                                                           \
          if (ISNAN(v) || (is_min ? v < best : v > best)) best = v, at = k;                    \
        }                                                                                      \
        index[q] = at;                                                                         \
      }                                                                                        \
      cmlc_ew_store_i64(p->out_dtype, index, n, p->out, o0);                                   \
    }                                                                                          \
  }
CMLC_RD_ARG_ROWS_GEN(f16, uint16_t, float, cml_f16_to_f32, CMLC_RD_FLOAT_NAN)
CMLC_RD_ARG_ROWS_GEN(bf16, uint16_t, float, cml_bf16_to_f32, CMLC_RD_FLOAT_NAN)
CMLC_RD_ARG_ROWS_GEN(f32, float, float, CMLC_EW_ID, CMLC_RD_FLOAT_NAN)
CMLC_RD_ARG_ROWS_GEN(f64, double, double, CMLC_EW_ID, CMLC_RD_FLOAT_NAN)
CMLC_RD_ARG_ROWS_GEN(i8, int8_t, int8_t, CMLC_EW_ID, CMLC_RD_NOT_NAN)
CMLC_RD_ARG_ROWS_GEN(i16, int16_t, int16_t, CMLC_EW_ID, CMLC_RD_NOT_NAN)
CMLC_RD_ARG_ROWS_GEN(i32, int32_t, int32_t, CMLC_EW_ID, CMLC_RD_NOT_NAN)
CMLC_RD_ARG_ROWS_GEN(i64, int64_t, int64_t, CMLC_EW_ID, CMLC_RD_NOT_NAN)
CMLC_RD_ARG_ROWS_GEN(u8, uint8_t, uint8_t, CMLC_EW_ID, CMLC_RD_NOT_NAN)
CMLC_RD_ARG_ROWS_GEN(u16, uint16_t, uint16_t, CMLC_EW_ID, CMLC_RD_NOT_NAN)
CMLC_RD_ARG_ROWS_GEN(u32, uint32_t, uint32_t, CMLC_EW_ID, CMLC_RD_NOT_NAN)
CMLC_RD_ARG_ROWS_GEN(u64, uint64_t, uint64_t, CMLC_EW_ID, CMLC_RD_NOT_NAN)
#undef CMLC_RD_ARG_ROWS_GEN

// f16 / bf16 along a contiguous axis (inner == 1: the class axis of logits): each row widened
// in blocks by the SIMD conversion (exact; NaN stays NaN), then scanned as the f32 kernel scans
// (the same comparisons, in the same order, so the same index).
static void cmlc_rd_arg_half_rows(void* ctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  enum { BLOCK = 1024 };
  const cmlc_rd_arg_plan_t* p = (const cmlc_rd_arg_plan_t*)ctx;
  const uint16_t* x = (const uint16_t*)p->in;
  float buf[BLOCK];
  for (int64_t o = begin; o < end; ++o) {
    const uint16_t* row = x + o * p->dim;
    float best = 0;
    int64_t index = 0;
    for (int64_t k0 = 0; k0 < p->dim; k0 += BLOCK) {
      const int64_t n = p->dim - k0 < BLOCK ? p->dim - k0 : BLOCK;
      p->widen(buf, row + k0, n);
      int64_t j = 0;
      if (k0 == 0) best = buf[0], j = 1;
      for (; j < n; ++j) {
        const float v = buf[j];
        bool better;
        if (isnan(best)) {
          better = false;
        } else if (isnan(v)) {
          better = true;
        } else {
          better = p->is_min ? v < best : v > best;
        }
        if (better) {
          best = v;
          index = k0 + j;
        }
      }
    }
    cmlc_ew_store_i64(p->out_dtype, &index, 1, p->out, o);
  }
}

// The tiled task of |dtype|, or with |rows| the task of rows along a contiguous axis.
static cmlc_task_fn cmlc_rd_arg_pick(cml_dtype_t dtype, bool rows) {
#define CMLC_RD_ARG_CASE(DT, sfx) \
  case CML_DTYPE_##DT:            \
    return rows ? cmlc_rd_argrows_##sfx : cmlc_rd_arg_##sfx;
  switch (dtype) {
    CMLC_RD_ARG_CASE(F16, f16)
    CMLC_RD_ARG_CASE(BF16, bf16)
    CMLC_RD_ARG_CASE(F32, f32)
    CMLC_RD_ARG_CASE(F64, f64)
    CMLC_RD_ARG_CASE(I8, i8)
    CMLC_RD_ARG_CASE(I16, i16)
    CMLC_RD_ARG_CASE(I32, i32)
    CMLC_RD_ARG_CASE(I64, i64)
    CMLC_RD_ARG_CASE(U8, u8)
    CMLC_RD_ARG_CASE(U16, u16)
    CMLC_RD_ARG_CASE(U32, u32)
    CMLC_RD_ARG_CASE(U64, u64)
    default:
      return NULL;
  }
#undef CMLC_RD_ARG_CASE
}

static bool cmlc_rd_arg_out_ok(cml_dtype_t dtype) {
  return cml_dtype_is_int(dtype) && !cml_dtype_is_packed(dtype);
}

static cml_status_t cmlc_rd_run_arg(const cmlc_kernel_args_t* args) {
  const cml_shape_t* is = args->input_shapes[0];
  const cml_shape_t* os = args->output_shapes[0];
  const int64_t axis = args->node->attrs->axis;
  cmlc_task_fn fn = cmlc_rd_arg_pick(is->dtype, false);
  if (!fn || !cmlc_rd_arg_out_ok(os->dtype) || axis < 0 || axis >= is->rank) {
    char a[128], b[128];
    return cml_status_make(
        CML_STATUS_INVALID_ARGUMENT, "ArgMinMax: unsupported input %s, output %s or axis %lld",
        cml_shape_format(is, a, sizeof a), cml_shape_format(os, b, sizeof b), (long long)axis);
  }
  cmlc_rd_arg_plan_t p = {args->inputs[0],
                          args->outputs[0],
                          os->dtype,
                          args->node->attrs->flag,
                          1,
                          is->dims[axis],
                          1,
                          0,
                          NULL};
  for (int32_t d = 0; d < axis; ++d) p.outer *= is->dims[d];
  for (int32_t d = (int32_t)axis + 1; d < is->rank; ++d) p.inner *= is->dims[d];
  if (p.outer == 0 || p.inner == 0) return CML_OK;
  p.tiles = (p.inner + CMLC_RD_TILE - 1) / CMLC_RD_TILE;
  if (p.inner == 1 && p.dim > 0) {
    // Rows along the axis: long f16 / bf16 rows widened by the SIMD conversion, the others
    // scanned as they are, many rows per task.
    if ((is->dtype == CML_DTYPE_F16 || is->dtype == CML_DTYPE_BF16) && p.dim > CMLC_RD_TILE) {
      p.widen = cmlc_ew_simd_convert_fn(args->options, is->dtype, CML_DTYPE_F32);
    }
    fn = p.widen ? cmlc_rd_arg_half_rows : cmlc_rd_arg_pick(is->dtype, true);
    int64_t chunk = CMLC_RD_MIN_WORK / p.dim;
    cmlc_parallel_for(args->pool, p.outer, chunk < 1 ? 1 : chunk, fn, &p);
    return CML_OK;
  }
  const int64_t work = (p.dim > 0 ? p.dim : 1) * (p.inner < CMLC_RD_TILE ? p.inner : CMLC_RD_TILE);
  int64_t chunk = CMLC_RD_MIN_WORK / work;
  cmlc_parallel_for(args->pool, p.outer * p.tiles, chunk < 1 ? 1 : chunk, fn, &p);
  return CML_OK;
}

//===--- lookup and capabilities ---===//

bool cmlc_kernels_reduce_lookup(const cml_module_t* module, const cml_ir_node_t* node,
                                const cmlc_options_t* options, cmlc_kernel_entry_t* out) {
  if (!module || !node || !out || node->input_count < 1) return false;
  const cml_dtype_t in = module->values[node->inputs[0]].shape.dtype;
  cmlc_kernel_entry_t e = {.in_place_input = -1};
  if (node->op == CML_OP_ARG_MIN_MAX) {
    if (!cmlc_rd_arg_pick(in, false) ||
        !cmlc_rd_arg_out_ok(module->values[node->first_output].shape.dtype)) {
      return false;
    }
    e.run = cmlc_rd_run_arg;
  } else if (cml_op_kind(node->op) == CML_OPK_REDUCE) {
    if (!cmlc_rd_pick(node->op, in).inner_reduced) return false;
    e.run = cmlc_rd_run;
    e.scratch = cmlc_rd_scratch;
    if (in == CML_DTYPE_F32) {
      e.impl[0] = (cmlc_impl_fn)cmlc_rd_simd_f32_fn(options, node->op);
      e.impl[1] = (cmlc_impl_fn)cmlc__rd_cols_f32(options, node->op);
    } else if (in == CML_DTYPE_BF16 || in == CML_DTYPE_F16) {
      e.impl[0] = (cmlc_impl_fn)cmlc_rd_simd_half_fn(options, node->op, in);
      e.impl[1] = (cmlc_impl_fn)cmlc__rd_cols_f32(options, node->op);
      e.impl[2] = (cmlc_impl_fn)cmlc_ew_simd_convert_fn(options, in, CML_DTYPE_F32);
    }
  } else {
    return false;
  }
  *out = e;
  return true;
}

void cmlc_kernels_reduce_capabilities(cml_capabilities_t* caps) {
  cmlc_kernels_group_capabilities(caps, CML_OPG_REDUCE);
}
