// SPDX-License-Identifier: Apache-2.0
// kernels/generic/gemm_impl.h: the packed GEMM driver, instantiated once per element type by
// gemm.c (private to it; see gemm.c for the algorithm). Before including, define:
//   CMLC_GEMM_T        the element type (float or double)
//   CMLC_GEMM_SUFFIX   the name suffix (f32 or f64)
//   CMLC_GEMM_DTYPE    the matching dtype (CML_DTYPE_F32 or CML_DTYPE_F64)
//   CMLC_GEMM_HALF_GEMV  1 when the kernel table has axpy_h (the f32 GEMV over a half B, for
//                      up to kern.axpy_h_rows rows of A)
//   CMLC_GEMM_PROBLEM  the problem type (cmlc__gemm_problem_t or cmlc__gemm_f64_problem_t)
//   CMLC_GEMM_LOAD_CONV(data, index, dtype)  loads one element of another dtype as CMLC_GEMM_T
//   CMLC_GEMM_ENTRY, CMLC_GEMM_ENTRY_SCRATCH, CMLC_GEMM_ENTRY_PICK, CMLC_GEMM_ENTRY_PREPACK
//                      the names of the four functions it defines
//   CMLC_GEMM_FN       the type of the per-ISA drivers CMLC_GEMM_ENTRY_PICK returns
// and provide CMLC_GEMM_N(kernel_t) with CMLC_GEMM_N(select)(isa) (a pointer to the ISA's
// table) and the tables CMLC_GEMM_N(kern_avx512 / kern_avx2 / kern_scalar), and
// CMLC_GEMM_N(widen_fn) with CMLC_GEMM_N(select_widen)(kern, dtype) (bulk widening of f16 /
// bf16 runs, or NULL) for this suffix (CMLC_GEMM_N(x) pastes cmlc_<x>_<suffix>). The macros
// above are undefined at the end.
//
// Thread-safety: reentrant; no state.

//===--- blocking ---===//

static int64_t CMLC_GEMM_N(gemm_round_up)(int64_t x, int64_t to) { return (x + to - 1) / to * to; }
static int64_t CMLC_GEMM_N(gemm_min)(int64_t a, int64_t b) { return a < b ? a : b; }

typedef struct CMLC_GEMM_N(gemm_sizes_t) {
  int64_t kc, mc, nc;  // effective block sizes
  size_t a_elems;      // one packed A block
  size_t b_elems;      // one packed B panel
} CMLC_GEMM_N(gemm_sizes_t);

static CMLC_GEMM_N(gemm_sizes_t)
    CMLC_GEMM_N(gemm_sizes)(int64_t m, int64_t n, int64_t k, const CMLC_GEMM_N(kernel_t) * kern) {
  CMLC_GEMM_N(gemm_sizes_t) s;
  s.kc = CMLC_GEMM_N(gemm_min)(CMLC_GEMM_KC, k > 0 ? k : 1);
  s.mc = CMLC_GEMM_N(gemm_min)(CMLC_GEMM_MC, CMLC_GEMM_N(gemm_round_up)(m > 0 ? m : 1, kern->mr));
  s.nc = CMLC_GEMM_N(gemm_min)(CMLC_GEMM_NC, CMLC_GEMM_N(gemm_round_up)(n > 0 ? n : 1, kern->nr));
  const int64_t stream_mc = CMLC_GEMM_N(gemm_min)(
      CMLC_GEMM_MC_STREAM, CMLC_GEMM_N(gemm_round_up)(m > 0 ? m : 1, kern->mr));
  s.a_elems = (size_t)CMLC_GEMM_N(gemm_round_up)(stream_mc * s.kc, 16);  // the tallest block
  s.b_elems = (size_t)CMLC_GEMM_N(gemm_round_up)(s.kc * s.nc, 16);
  return s;
}

// Batch-parallel mode: many batches of small products.
static bool CMLC_GEMM_N(gemm_batch_mode)(int64_t batch, int64_t m, int64_t n, int64_t k,
                                         int threads) {
  if (batch < 2) return false;
  double work = (double)m * (double)n * (double)k;
  return batch >= 2 * (int64_t)threads || work < 64.0 * 64.0 * 64.0;
}

size_t CMLC_GEMM_ENTRY_SCRATCH(int64_t batch, int64_t m, int64_t n, int64_t k, cmlc_isa_t isa,
                               int threads) {
  const CMLC_GEMM_N(kernel_t)* kern = CMLC_GEMM_N(select)(isa);
  CMLC_GEMM_N(gemm_sizes_t) s = CMLC_GEMM_N(gemm_sizes)(m, n, k, kern);
  if (threads < 1) threads = 1;
  (void)batch;
  // Per thread: an A block and a private B panel (batch mode); plus one shared B panel.
  // (The skinny path packs all of A into this space when it fits, see skinny_try, and so does
  // the transposed-B path, into the whole of it, see bt_try.)
  // (Saturating: the blocks are bounded, but the thread count is the caller's.)
  return cmlc_size_mul(
      cmlc_size_add(cmlc_size_mul((size_t)threads, s.a_elems + s.b_elems), s.b_elems),
      sizeof(CMLC_GEMM_T));
}

//===--- operand access ---===//

// Returns the stride when offsets[i] == i * stride for all i < count, else NOT_AFFINE.
static int64_t CMLC_GEMM_N(gemm_affine)(const int64_t* offsets, int64_t count) {
  if (count <= 1) return 0;
  int64_t stride = offsets[1] - offsets[0];
  if (offsets[0] != 0) return CMLC_GEMM_NOT_AFFINE;
  for (int64_t i = 2; i < count; ++i)
    if (offsets[i] != i * stride) return CMLC_GEMM_NOT_AFFINE;
  return stride;
}

typedef struct CMLC_GEMM_N(gemm_access_t) {
  int64_t row_stride, col_stride;  // CMLC_GEMM_NOT_AFFINE when the table is not affine
  CMLC_GEMM_N(widen_fn) widen;     // bulk widening of a half operand's runs, or NULL
  // B only: the ISA's packing of a full transposed sliver (native dtype), or NULL.
  void (*pack_bt)(const CMLC_GEMM_T* src, int64_t ld, int64_t kc, CMLC_GEMM_T* sliver);
  // A only: the ISA's packing of a full sliver of MR row-major rows (native dtype), or NULL.
  void (*pack_a)(const CMLC_GEMM_T* const* rows, int64_t kc, CMLC_GEMM_T* sliver);
} CMLC_GEMM_N(gemm_access_t);

static CMLC_GEMM_N(gemm_access_t)
    CMLC_GEMM_N(gemm_access)(const cmlc__gemm_operand_t* op, int64_t rows, int64_t cols,
                             const CMLC_GEMM_N(kernel_t) * kern) {
  CMLC_GEMM_N(gemm_access_t) a;
  a.row_stride = CMLC_GEMM_N(gemm_affine)(op->row_offsets, rows);
  a.col_stride = CMLC_GEMM_N(gemm_affine)(op->col_offsets, cols);
  a.widen = CMLC_GEMM_N(select_widen)(kern, op->dtype);
  a.pack_bt = NULL;
  a.pack_a = NULL;
  return a;
}

//===--- packing ---===//

// Packs A rows [ic, ic+mc) x k [pc, pc+kc) of batch |b| into MR-row slivers (zero padded).
static void CMLC_GEMM_N(gemm_pack_a)(const cmlc__gemm_operand_t* a,
                                     const CMLC_GEMM_N(gemm_access_t) * acc, int64_t b, int64_t ic,
                                     int64_t mc, int64_t pc, int64_t kc, int mr, CMLC_GEMM_T* dst) {
  const int64_t* cols = a->col_offsets + pc;
  int64_t boff = a->batch_offsets[b];
  bool native = a->dtype == CMLC_GEMM_DTYPE;
  for (int64_t i = 0; i < mc; i += mr) {
    CMLC_GEMM_T* sliver = dst + i * kc;
    int rows = (int)CMLC_GEMM_N(gemm_min)(mr, mc - i);
    if (native && acc->row_stride == 1 && acc->col_stride != CMLC_GEMM_NOT_AFFINE && rows == mr) {
      // Transposed A (rows contiguous): one contiguous run of MR values per k, copied with a
      // constant size for the kernels' MR (a few vector moves instead of an element loop).
      const CMLC_GEMM_T* src = (const CMLC_GEMM_T*)a->data + boff + (ic + i) + pc * acc->col_stride;
      const int64_t ld = acc->col_stride;
#define CMLC_GEMM_PACK_AT_(MR)        \
  for (int64_t kk = 0; kk < kc; ++kk) \
    memcpy(sliver + kk * (MR), src + kk * ld, (size_t)(MR) * sizeof(CMLC_GEMM_T));
      switch (mr) {
        case 16:
          CMLC_GEMM_PACK_AT_(16)
          break;
        case 12:
          CMLC_GEMM_PACK_AT_(12)
          break;
        case 6:
          CMLC_GEMM_PACK_AT_(6)
          break;
        case 4:
          CMLC_GEMM_PACK_AT_(4)
          break;
        default:
          for (int64_t kk = 0; kk < kc; ++kk) {
            const CMLC_GEMM_T* s = src + kk * ld;
            for (int r = 0; r < mr; ++r) sliver[kk * mr + r] = s[r];
          }
      }
#undef CMLC_GEMM_PACK_AT_
      continue;
    }
    if (acc->widen && acc->row_stride == 1 && acc->col_stride != CMLC_GEMM_NOT_AFFINE &&
        rows == mr) {
      // Transposed half A: each k gives MR contiguous values, widened straight into place.
      const uint16_t* src = (const uint16_t*)a->data + boff + (ic + i) + pc * acc->col_stride;
      for (int64_t kk = 0; kk < kc; ++kk)
        acc->widen(src + kk * acc->col_stride, sliver + kk * mr, mr);
      continue;
    }
    if (acc->widen && acc->col_stride == 1) {
      // Row-major half A: widen each row's k run, then interleave it into the sliver.
      CMLC_GEMM_T run[CMLC_GEMM_KC];
      for (int r = 0; r < mr; ++r) {
        if (r >= rows) {
          for (int64_t kk = 0; kk < kc; ++kk) sliver[kk * mr + r] = 0.0f;
          continue;
        }
        acc->widen((const uint16_t*)a->data + boff + a->row_offsets[ic + i + r] + pc, run, kc);
        for (int64_t kk = 0; kk < kc; ++kk) sliver[kk * mr + r] = run[kk];
      }
      continue;
    }
    if (native && acc->col_stride == 1 && rows == mr) {
      // Row-major A: MR row streams read side by side, so the sliver is written in order.
      const CMLC_GEMM_T* src[CMLC_GEMM_MR_MAX];
      for (int r = 0; r < mr; ++r)
        src[r] = (const CMLC_GEMM_T*)a->data + boff + a->row_offsets[ic + i + r] + pc;
      if (acc->pack_a) {
        acc->pack_a(src, kc, sliver);
        continue;
      }
      for (int64_t kk = 0; kk < kc; ++kk) {
        CMLC_GEMM_T* d = sliver + kk * mr;
        for (int r = 0; r < mr; ++r) d[r] = src[r][kk];
      }
      continue;
    }
    for (int r = 0; r < mr; ++r) {
      if (r >= rows) {
        for (int64_t kk = 0; kk < kc; ++kk) sliver[kk * mr + r] = 0.0f;
        continue;
      }
      int64_t base = boff + a->row_offsets[ic + i + r];
      if (native && acc->col_stride == 1) {
        const CMLC_GEMM_T* src = (const CMLC_GEMM_T*)a->data + base + pc;
        for (int64_t kk = 0; kk < kc; ++kk) sliver[kk * mr + r] = src[kk];
      } else if (native) {
        const CMLC_GEMM_T* src = (const CMLC_GEMM_T*)a->data + base;
        for (int64_t kk = 0; kk < kc; ++kk) sliver[kk * mr + r] = src[cols[kk]];
      } else {
        for (int64_t kk = 0; kk < kc; ++kk)
          sliver[kk * mr + r] = CMLC_GEMM_LOAD_CONV(a->data, base + cols[kk], a->dtype);
      }
    }
  }
}

// Packs slivers [s0, s1) of B k [pc, pc+kc) x cols [jc, jc+nc) of batch |b|.
static void CMLC_GEMM_N(gemm_pack_b)(const cmlc__gemm_operand_t* bop,
                                     const CMLC_GEMM_N(gemm_access_t) * acc, int64_t b, int64_t jc,
                                     int64_t nc, int64_t pc, int64_t kc, int nr, int64_t s0,
                                     int64_t s1, CMLC_GEMM_T* panel) {
  int64_t boff = bop->batch_offsets[b];
  bool native = bop->dtype == CMLC_GEMM_DTYPE;
  for (int64_t s = s0; s < s1; ++s) {
    CMLC_GEMM_T* sliver = panel + s * nr * kc;
    int64_t col0 = s * nr;
    int64_t cols = CMLC_GEMM_N(gemm_min)(nr, nc - col0);
    const int64_t* coff = bop->col_offsets + jc + col0;
    if (native && acc->col_stride == 1) {
      // Row-major B: each k row of the sliver is one contiguous copy.
      const CMLC_GEMM_T* src = (const CMLC_GEMM_T*)bop->data + boff + jc + col0;
      for (int64_t kk = 0; kk < kc; ++kk) {
        CMLC_GEMM_T* d = sliver + kk * nr;
        memcpy(d, src + bop->row_offsets[pc + kk], (size_t)cols * sizeof(CMLC_GEMM_T));
        for (int64_t j = cols; j < nr; ++j) d[j] = 0.0f;
      }
      continue;
    }
    if (acc->widen && acc->col_stride == 1) {
      // Row-major half B: each k row of the sliver is one widened run.
      const uint16_t* src = (const uint16_t*)bop->data + boff + jc + col0;
      for (int64_t kk = 0; kk < kc; ++kk) {
        CMLC_GEMM_T* d = sliver + kk * nr;
        acc->widen(src + bop->row_offsets[pc + kk], d, cols);
        for (int64_t j = cols; j < nr; ++j) d[j] = 0.0f;
      }
      continue;
    }
    if (acc->widen && acc->row_stride == 1) {
      // Transposed half B: widen each column's k run, then write it down the sliver.
      CMLC_GEMM_T run[CMLC_GEMM_KC];
      for (int64_t j = 0; j < nr; ++j) {
        if (j >= cols) {
          for (int64_t kk = 0; kk < kc; ++kk) sliver[kk * nr + j] = 0.0f;
          continue;
        }
        acc->widen((const uint16_t*)bop->data + boff + coff[j] + pc, run, kc);
        for (int64_t kk = 0; kk < kc; ++kk) sliver[kk * nr + j] = run[kk];
      }
      continue;
    }
    if (acc->pack_bt && cols == nr) {
      acc->pack_bt((const CMLC_GEMM_T*)bop->data + boff + coff[0] + pc, acc->col_stride, kc,
                   sliver);
      continue;
    }
    if (native && acc->row_stride == 1 && cols == nr) {
      // Transposed B (k contiguous): NR column streams read side by side, so the sliver is
      // written in order.
      const CMLC_GEMM_T* src[CMLC_GEMM_NR_MAX];
      for (int64_t j = 0; j < nr; ++j) src[j] = (const CMLC_GEMM_T*)bop->data + boff + coff[j] + pc;
      for (int64_t kk = 0; kk < kc; ++kk) {
        CMLC_GEMM_T* d = sliver + kk * nr;
        for (int64_t j = 0; j < nr; ++j) d[j] = src[j][kk];
      }
      continue;
    }
    if (native && acc->row_stride == 1) {
      // Transposed B (k contiguous): read each column's k run, write it down the sliver.
      for (int64_t j = 0; j < nr; ++j) {
        if (j >= cols) {
          for (int64_t kk = 0; kk < kc; ++kk) sliver[kk * nr + j] = 0.0f;
          continue;
        }
        const CMLC_GEMM_T* src = (const CMLC_GEMM_T*)bop->data + boff + coff[j] + pc;
        for (int64_t kk = 0; kk < kc; ++kk) sliver[kk * nr + j] = src[kk];
      }
      continue;
    }
    for (int64_t kk = 0; kk < kc; ++kk) {
      int64_t base = boff + bop->row_offsets[pc + kk];
      CMLC_GEMM_T* d = sliver + kk * nr;
      if (native) {
        const CMLC_GEMM_T* src = (const CMLC_GEMM_T*)bop->data + base;
        for (int64_t j = 0; j < cols; ++j) d[j] = src[coff[j]];
      } else {
        for (int64_t j = 0; j < cols; ++j)
          d[j] = CMLC_GEMM_LOAD_CONV(bop->data, base + coff[j], bop->dtype);
      }
      for (int64_t j = cols; j < nr; ++j) d[j] = 0.0f;
    }
  }
}

//===--- compute ---===//

typedef struct CMLC_GEMM_N(gemm_ctx_t) {
  const CMLC_GEMM_PROBLEM* p;
  CMLC_GEMM_N(kernel_t) kern;
  CMLC_GEMM_N(gemm_sizes_t) sz;
  CMLC_GEMM_N(gemm_access_t) a_acc, b_acc;
  bool direct_b;  // B is read in place (rows contiguous; small, or M <= MC)
  bool direct_a;  // A is read in place by kern.direct_a (small products, k contiguous)
  int64_t lda;    // direct_a: A's row stride
  // B packed once for every (jc, pc) block (batch 1; CMLC_GEMM_ENTRY_PREPACK's layout), or NULL.
  const CMLC_GEMM_T* b_packed;
  CMLC_GEMM_T* scratch;  // per-thread blocks, then the shared panel
  int threads;
  // Tile mode state for the current (b, jc, pc).
  int64_t b, jc, nc, pc, kc;
  int64_t slivers, slivers_per_chunk, n_chunks;
  // Several tasks share each A block (its B slivers split among them): every A block of the
  // current (b, pc) is packed once, block ib into thread ib's A buffer, before the tile tasks.
  bool a_shared;
  int64_t a_slivers;  // MR-row slivers per A block (a_shared)
  CMLC_GEMM_T* shared_panel;
  int64_t gemv_chunk;  // outputs per GEMV task
  // Skinny path: A in 16-row slivers and kern.skinny16 reading B in place (16-column slivers).
  bool skinny16;
  // Transposed-B path: A packed for the tile kernels, pass after pass (bt_try).
  const CMLC_GEMM_T* bt_x;
  int64_t bt_group;  // weight rows per task unit: the most rows of a kernel (a multiple of all)
  int narrow_kind;   // narrow path: the transposed-B kernel (kern.bt index) it runs
  // Tiny path: the unrolled kernel of the product's sizes (all batches), or NULL.
  CMLC_GEMM_N(gemm_tiny_batch_fn) tiny_fixed;
} CMLC_GEMM_N(gemm_ctx_t);

// The B sliver |s| of the current block: packed, or the operand itself.
static const CMLC_GEMM_T* CMLC_GEMM_N(gemm_b_sliver)(const CMLC_GEMM_N(gemm_ctx_t) * c, int64_t b,
                                                     int64_t jc, int64_t pc, int64_t kc,
                                                     const CMLC_GEMM_T* panel, int64_t s,
                                                     int64_t* out_ldb) {
  if (c->direct_b) {
    const cmlc__gemm_operand_t* bop = &c->p->b;
    *out_ldb = c->b_acc.row_stride;
    return (const CMLC_GEMM_T*)bop->data + bop->batch_offsets[b] + pc * c->b_acc.row_stride + jc +
           s * c->kern.nr;
  }
  *out_ldb = c->kern.nr;
  return panel + s * c->kern.nr * kc;
}

// The packed panel of block (jc, pc) in a B packed whole: the blocks of earlier columns hold
// jc * k values (every NC block is a whole number of slivers), and inside a column block the
// panels of earlier k blocks hold pc * (its sliver columns) values each.
static const CMLC_GEMM_T* CMLC_GEMM_N(gemm_packed_panel)(const CMLC_GEMM_N(gemm_ctx_t) * c,
                                                         int64_t jc, int64_t pc) {
  const int64_t nr = c->kern.nr;
  const int64_t nc = CMLC_GEMM_N(gemm_min)(c->sz.nc, c->p->n - jc);
  const int64_t width = (nc + nr - 1) / nr * nr;
  return c->b_packed + jc * c->p->k + pc * width;
}

// Runs the micro-kernel over A block rows [0, mc) (packed in |ap|) and B slivers [s0, s1).
static void CMLC_GEMM_N(gemm_tiles)(const CMLC_GEMM_N(gemm_ctx_t) * ctx, int64_t b, int64_t ic,
                                    int64_t mc, int64_t jc, int64_t nc, int64_t pc, int64_t kc,
                                    const CMLC_GEMM_T* ap, const CMLC_GEMM_T* panel, int64_t s0,
                                    int64_t s1) {
  const CMLC_GEMM_PROBLEM* p = ctx->p;
  const CMLC_GEMM_N(kernel_t)* kern = &ctx->kern;
  // |ap| NULL: direct_a, A read in place in tiles of direct_mr rows.
  int mr = ap ? kern->mr : kern->direct_mr, nr = kern->nr;
  int64_t ldc = p->n;
  CMLC_GEMM_T* cb = p->c + b * p->m * p->n;
  int accumulate = pc > 0;
  for (int64_t s = s0; s < s1; ++s) {
    int64_t col0 = jc + s * nr;
    int cols = (int)CMLC_GEMM_N(gemm_min)(nr, jc + nc - col0);
    int64_t ldb;
    const CMLC_GEMM_T* bs = CMLC_GEMM_N(gemm_b_sliver)(ctx, b, jc, pc, kc, panel, s, &ldb);
    // B read in place comes from memory (not from a panel packed into L2 just before): fetch
    // the next sliver's k rows while this one runs, a share of them before each call.
    const int64_t calls = (mc + mr - 1) / mr;
    const int64_t per_call = ctx->direct_b && s + 1 < s1 ? (kc + calls - 1) / calls : 0;
    for (int64_t i = 0, r0 = 0; i < mc; i += mr, r0 += per_call) {
      int rows = (int)CMLC_GEMM_N(gemm_min)(mr, mc - i);
      for (int64_t r = r0; r < r0 + per_call && r < kc; ++r) {
        const char* next = (const char*)(bs + r * ldb + nr);
        for (size_t off = 0; off < (size_t)nr * sizeof(CMLC_GEMM_T); off += 64)
          __builtin_prefetch(next + off, 0, 2);
      }
      if (ap) {
        kern->fn(kc, ap + i * kc, bs, ldb, cb + (ic + i) * ldc + col0, ldc, accumulate, rows, cols);
      } else {  // direct_a
        const CMLC_GEMM_T* ar =
            (const CMLC_GEMM_T*)p->a.data + p->a.batch_offsets[b] + (ic + i) * ctx->lda + pc;
        kern->direct_a(kc, ar, ctx->lda, bs, ldb, cb + (ic + i) * ldc + col0, ldc, accumulate, rows,
                       cols);
      }
    }
  }
}

// The whole product of batch |b| on the calling thread with private buffers.
static void CMLC_GEMM_N(gemm_batch_serial)(const CMLC_GEMM_N(gemm_ctx_t) * c, int64_t b,
                                           CMLC_GEMM_T* abuf, CMLC_GEMM_T* panel) {
  const CMLC_GEMM_PROBLEM* p = c->p;
  const CMLC_GEMM_N(gemm_sizes_t)* sz = &c->sz;
  int64_t nr = c->kern.nr;
  for (int64_t jc = 0; jc < p->n; jc += sz->nc) {
    int64_t nc = CMLC_GEMM_N(gemm_min)(sz->nc, p->n - jc);
    int64_t slivers = (nc + nr - 1) / nr;
    for (int64_t pc = 0; pc < p->k; pc += sz->kc) {
      int64_t kc = CMLC_GEMM_N(gemm_min)(sz->kc, p->k - pc);
      if (!c->direct_b)
        CMLC_GEMM_N(gemm_pack_b)(&p->b, &c->b_acc, b, jc, nc, pc, kc, (int)nr, 0, slivers, panel);
      for (int64_t ic = 0; ic < p->m; ic += sz->mc) {
        int64_t mc = CMLC_GEMM_N(gemm_min)(sz->mc, p->m - ic);
        if (!c->direct_a)
          CMLC_GEMM_N(gemm_pack_a)(&p->a, &c->a_acc, b, ic, mc, pc, kc, c->kern.mr, abuf);
        CMLC_GEMM_N(gemm_tiles)
        (c, b, ic, mc, jc, nc, pc, kc, c->direct_a ? NULL : abuf, panel, 0, slivers);
      }
    }
  }
}

static CMLC_GEMM_T* CMLC_GEMM_N(gemm_thread_a)(const CMLC_GEMM_N(gemm_ctx_t) * c,
                                               int thread_index) {
  return c->scratch + (size_t)thread_index * (c->sz.a_elems + c->sz.b_elems);
}

static void CMLC_GEMM_N(gemm_batch_task)(void* vctx, int64_t begin, int64_t end, int thread_index) {
  CMLC_GEMM_N(gemm_ctx_t)* c = vctx;
  CMLC_GEMM_T* abuf = CMLC_GEMM_N(gemm_thread_a)(c, thread_index);
  CMLC_GEMM_T* panel = abuf + c->sz.a_elems;
  for (int64_t b = begin; b < end; ++b) CMLC_GEMM_N(gemm_batch_serial)(c, b, abuf, panel);
}

static void CMLC_GEMM_N(gemm_pack_b_task)(void* vctx, int64_t begin, int64_t end,
                                          int thread_index) {
  (void)thread_index;
  CMLC_GEMM_N(gemm_ctx_t)* c = vctx;
  CMLC_GEMM_N(gemm_pack_b)
  (&c->p->b, &c->b_acc, c->b, c->jc, c->nc, c->pc, c->kc, c->kern.nr, begin, end, c->shared_panel);
}

// a_shared: packs MR-row slivers [begin, end) of the A blocks (block t / a_slivers).
static void CMLC_GEMM_N(gemm_pack_a_task)(void* vctx, int64_t begin, int64_t end,
                                          int thread_index) {
  (void)thread_index;
  CMLC_GEMM_N(gemm_ctx_t)* c = vctx;
  const int64_t mr = c->kern.mr;
  for (int64_t t = begin; t < end; ++t) {
    const int64_t ib = t / c->a_slivers, s = t % c->a_slivers;
    const int64_t ic = ib * c->sz.mc + s * mr;
    const int64_t block_end = CMLC_GEMM_N(gemm_min)(ib * c->sz.mc + c->sz.mc, c->p->m);
    if (ic >= block_end) continue;
    CMLC_GEMM_T* dst = CMLC_GEMM_N(gemm_thread_a)(c, (int)ib) + s * mr * c->kc;
    CMLC_GEMM_N(gemm_pack_a)
    (&c->p->a, &c->a_acc, c->b, ic, CMLC_GEMM_N(gemm_min)(mr, block_end - ic), c->pc, c->kc,
     (int)mr, dst);
  }
}

// One row block with B read in place (gemm_run's whole-A mode): packs MR-row sliver t %
// a_slivers of k block t / a_slivers into thread 0's A buffer and the B panel behind it (unused
// when B is read in place), block q at q * KC * MC.
static void CMLC_GEMM_N(gemm_pack_a_whole_task)(void* vctx, int64_t begin, int64_t end,
                                                int thread_index) {
  (void)thread_index;
  CMLC_GEMM_N(gemm_ctx_t)* c = vctx;
  const CMLC_GEMM_PROBLEM* p = c->p;
  const int64_t mr = c->kern.mr;
  for (int64_t t = begin; t < end; ++t) {
    const int64_t q = t / c->a_slivers, ic = (t % c->a_slivers) * mr;
    if (ic >= p->m) continue;
    const int64_t pc = q * c->sz.kc, kc = CMLC_GEMM_N(gemm_min)(c->sz.kc, p->k - pc);
    CMLC_GEMM_T* dst = CMLC_GEMM_N(gemm_thread_a)(c, 0) + q * c->sz.kc * c->sz.mc + ic * kc;
    CMLC_GEMM_N(gemm_pack_a)
    (&p->a, &c->a_acc, c->b, ic, CMLC_GEMM_N(gemm_min)(mr, p->m - ic), pc, kc, (int)mr, dst);
  }
}

// Whole-A mode: sliver runs [begin, end) through every k block in order (the tiles of each k
// block as gemm_tile_task runs them, so the same bits).
static void CMLC_GEMM_N(gemm_tile_whole_task)(void* vctx, int64_t begin, int64_t end,
                                              int thread_index) {
  (void)thread_index;
  CMLC_GEMM_N(gemm_ctx_t)* c = vctx;
  const CMLC_GEMM_PROBLEM* p = c->p;
  for (int64_t t = begin; t < end; ++t) {
    const int64_t s0 = t * c->slivers_per_chunk;
    const int64_t s1 = CMLC_GEMM_N(gemm_min)(c->slivers, s0 + c->slivers_per_chunk);
    for (int64_t q = 0, pc = 0; pc < p->k; ++q, pc += c->sz.kc) {
      const int64_t kc = CMLC_GEMM_N(gemm_min)(c->sz.kc, p->k - pc);
      const CMLC_GEMM_T* ap = CMLC_GEMM_N(gemm_thread_a)(c, 0) + q * c->sz.kc * c->sz.mc;
      CMLC_GEMM_N(gemm_tiles)(c, c->b, 0, p->m, c->jc, c->nc, pc, kc, ap, NULL, s0, s1);
    }
  }
}

static void CMLC_GEMM_N(gemm_tile_task)(void* vctx, int64_t begin, int64_t end, int thread_index) {
  CMLC_GEMM_N(gemm_ctx_t)* c = vctx;
  CMLC_GEMM_T* abuf = CMLC_GEMM_N(gemm_thread_a)(c, thread_index);
  for (int64_t t = begin; t < end; ++t) {
    int64_t ib = t / c->n_chunks, chunk = t % c->n_chunks;
    int64_t ic = ib * c->sz.mc;
    int64_t mc = CMLC_GEMM_N(gemm_min)(c->sz.mc, c->p->m - ic);
    int64_t s0 = chunk * c->slivers_per_chunk;
    int64_t s1 = CMLC_GEMM_N(gemm_min)(c->slivers, s0 + c->slivers_per_chunk);
    if (c->direct_a) {
      abuf = NULL;
    } else if (c->a_shared) {
      abuf = CMLC_GEMM_N(gemm_thread_a)(c, (int)ib);
    } else {
      CMLC_GEMM_N(gemm_pack_a)(&c->p->a, &c->a_acc, c->b, ic, mc, c->pc, c->kc, c->kern.mr, abuf);
    }
    const CMLC_GEMM_T* panel =
        c->b_packed ? CMLC_GEMM_N(gemm_packed_panel)(c, c->jc, c->pc) : c->shared_panel;
    CMLC_GEMM_N(gemm_tiles)(c, c->b, ic, mc, c->jc, c->nc, c->pc, c->kc, abuf, panel, s0, s1);
  }
}

//===--- GEMV ---===//

// M == 1: outputs [begin, end) of the flattened (batch, column-chunk) range.
static void CMLC_GEMM_N(gemv_row_task)(void* vctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  CMLC_GEMM_N(gemm_ctx_t)* c = vctx;
  const CMLC_GEMM_PROBLEM* p = c->p;
  int64_t chunks = (p->n + c->gemv_chunk - 1) / c->gemv_chunk;
  for (int64_t t = begin; t < end; ++t) {
    int64_t b = t / chunks, j0 = (t % chunks) * c->gemv_chunk;
    int64_t w = CMLC_GEMM_N(gemm_min)(c->gemv_chunk, p->n - j0);
    const CMLC_GEMM_T* a =
        (const CMLC_GEMM_T*)p->a.data + p->a.batch_offsets[b] + p->a.row_offsets[0];
    const CMLC_GEMM_T* bm = (const CMLC_GEMM_T*)p->b.data + p->b.batch_offsets[b];
    CMLC_GEMM_T* out = p->c + b * p->n + j0;
    if (c->b_acc.col_stride == 1 && p->k > CMLC__GEMV_AXPY_KC && w <= 4096) {
      // A long K in blocks of CMLC__GEMV_AXPY_KC rows, each summed by the kernel into |part|
      // and added to the outputs in order: the kernel's chained sum over k loses digits with K
      // (a [1, 1e6] x [1e6, 3] product was 1.5e-3 off), blocks bound the chains.
      CMLC_GEMM_T part[4096];
      const int64_t ka = c->a_acc.col_stride, kb = c->b_acc.row_stride;
      c->kern.axpy(CMLC__GEMV_AXPY_KC, a, ka, bm + j0, kb, out, w);
      for (int64_t k0 = CMLC__GEMV_AXPY_KC; k0 < p->k; k0 += CMLC__GEMV_AXPY_KC) {
        const int64_t kc = CMLC_GEMM_N(gemm_min)(CMLC__GEMV_AXPY_KC, p->k - k0);
        c->kern.axpy(kc, a + k0 * ka, ka, bm + k0 * kb + j0, kb, part, w);
        for (int64_t j = 0; j < w; ++j) out[j] += part[j];
      }
    } else if (c->b_acc.col_stride == 1) {
      c->kern.axpy(p->k, a, c->a_acc.col_stride, bm + j0, c->b_acc.row_stride, out, w);
    } else {
      c->kern.dot(p->k, a, bm + j0 * c->b_acc.col_stride, c->b_acc.col_stride, out, 1, w);
    }
  }
}

// 2..CMLC__GEMM_DOT_ROWS_M rows of A times a B stored transposed (k contiguous in each column: a
// weight stored [N, K]): outputs [begin, end) of the flattened (batch, column-chunk) range, per
// block of weight rows of about 256 KiB each row of A in turn through the dot form (kern.dot),
// so the block comes from memory once and from L2 for the other rows; every output is the
// one-row GEMV's bits (figures at CMLC__GEMM_DOT_ROWS_M).
static void CMLC_GEMM_N(gemv_dot_rows_task)(void* vctx, int64_t begin, int64_t end,
                                            int thread_index) {
  (void)thread_index;
  CMLC_GEMM_N(gemm_ctx_t)* c = vctx;
  const CMLC_GEMM_PROBLEM* p = c->p;
  const int64_t chunks = (p->n + c->gemv_chunk - 1) / c->gemv_chunk;
  const int64_t ldy = c->b_acc.col_stride;
  const int64_t block = cmlc__gemv_l2_rows(ldy * (int64_t)sizeof(CMLC_GEMM_T), p->n);
  for (int64_t t = begin; t < end; ++t) {
    const int64_t b = t / chunks, j0 = (t % chunks) * c->gemv_chunk;
    const int64_t j1 = CMLC_GEMM_N(gemm_min)(p->n, j0 + c->gemv_chunk);
    const CMLC_GEMM_T* a =
        (const CMLC_GEMM_T*)p->a.data + p->a.batch_offsets[b] + p->a.row_offsets[0];
    const CMLC_GEMM_T* bm = (const CMLC_GEMM_T*)p->b.data + p->b.batch_offsets[b];
    for (int64_t jb = j0; jb < j1; jb += block) {
      const int64_t w = CMLC_GEMM_N(gemm_min)(block, j1 - jb);
      for (int64_t i = 0; i < p->m; ++i) {
        c->kern.dot(p->k, a + i * c->a_acc.row_stride, bm + jb * ldy, ldy,
                    p->c + (b * p->m + i) * p->n + jb, 1, w);
      }
    }
  }
}

// N == 1: rows [begin, end) of the flattened (batch, row-chunk) range, dot form over A rows.
static void CMLC_GEMM_N(gemv_col_task)(void* vctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  CMLC_GEMM_N(gemm_ctx_t)* c = vctx;
  const CMLC_GEMM_PROBLEM* p = c->p;
  int64_t chunks = (p->m + c->gemv_chunk - 1) / c->gemv_chunk;
  for (int64_t t = begin; t < end; ++t) {
    int64_t b = t / chunks, i0 = (t % chunks) * c->gemv_chunk;
    int64_t h = CMLC_GEMM_N(gemm_min)(c->gemv_chunk, p->m - i0);
    const CMLC_GEMM_T* x =
        (const CMLC_GEMM_T*)p->b.data + p->b.batch_offsets[b] + p->b.col_offsets[0];
    const CMLC_GEMM_T* am = (const CMLC_GEMM_T*)p->a.data + p->a.batch_offsets[b];
    c->kern.dot(p->k, x, am + i0 * c->a_acc.row_stride, c->a_acc.row_stride, p->c + b * p->m + i0,
                1, h);
  }
}

#if CMLC_GEMM_HALF_GEMV
// Task |t| of the half GEMV paths over the flattened (batch, column-chunk) range: its batch
// element |b|, first column |j0| and width |w|; returns the first row of A (f32, bf16 or f16).
static const void* CMLC_GEMM_N(gemv_half_chunk)(const CMLC_GEMM_N(gemm_ctx_t) * c, int64_t t,
                                                int64_t* b, int64_t* j0, int64_t* w) {
  const CMLC_GEMM_PROBLEM* p = c->p;
  const size_t a_size = p->a.dtype == CML_DTYPE_F32 ? sizeof(float) : sizeof(uint16_t);
  const int64_t chunks = (p->n + c->gemv_chunk - 1) / c->gemv_chunk;
  *b = t / chunks, *j0 = (t % chunks) * c->gemv_chunk;
  *w = CMLC_GEMM_N(gemm_min)(c->gemv_chunk, p->n - *j0);
  return (const char*)p->a.data + (size_t)(p->a.batch_offsets[*b] + p->a.row_offsets[0]) * a_size;
}

// Up to kern.axpy_h_rows rows over a half B (or up to CMLC_GEMM_ROWS_M rows over a large f32 B)
// with contiguous rows: outputs [begin, end) of the flattened (batch, column-chunk) range, B
// read in place by kern.axpy_h (kern.axpy_rows) for all rows at once.
//
// With several rows the outputs go to the thread's scratch first, rows a cache line apart
// beyond the chunk's width, then to the output: the output rows are n floats apart, and at
// n = 4096 the rows' lines for one column all fall into the same L1 set (16 KiB apart), which
// evicted them on every pass (8 rows took 3.1 ms instead of 1.4 at 4096 x 4096).
static void CMLC_GEMM_N(gemv_half_task)(void* vctx, int64_t begin, int64_t end, int thread_index) {
  CMLC_GEMM_N(gemm_ctx_t)* c = vctx;
  const CMLC_GEMM_PROBLEM* p = c->p;
  for (int64_t t = begin; t < end; ++t) {
    int64_t b, j0, w;
    const void* a = CMLC_GEMM_N(gemv_half_chunk)(c, t, &b, &j0, &w);
    float* out = p->c + b * p->m * p->n + j0;
    const int64_t ldl = CMLC_GEMM_N(gemm_round_up)(w, 16) + 16;
    const bool local = p->m > 1 && cmlc_size_of(p->m * ldl, 1) <= c->sz.a_elems + c->sz.b_elems;
    float* dst = local ? CMLC_GEMM_N(gemm_thread_a)(c, thread_index) : out;
    const int64_t ldd = local ? ldl : p->n;
    // A long K in blocks of CMLC__GEMV_AXPY_KC rows, as the one-row task sums them (the same
    // bits for a row): the first block into the outputs, each next one into |part| and added.
    const int64_t kb = c->b_acc.row_stride, ka = c->a_acc.col_stride;
    const size_t a_size = (size_t)cml_dtype_bits(p->a.dtype) / 8;
    const bool blocked = p->k > CMLC__GEMV_AXPY_KC && p->m * ldl <= CMLC__GEMV_PART_MAX;
    float part[CMLC__GEMV_PART_MAX];
    // (K = 0: one call with kc = 0, which writes the zeros.)
    const int64_t step = blocked ? CMLC__GEMV_AXPY_KC : (p->k > 0 ? p->k : 1);
    for (int64_t k0 = 0; k0 == 0 || k0 < p->k; k0 += step) {
      const int64_t kc = blocked ? CMLC_GEMM_N(gemm_min)(CMLC__GEMV_AXPY_KC, p->k - k0) : p->k;
      const void* ak = (const char*)a + (size_t)(k0 * ka) * a_size;
      float* to = k0 == 0 ? dst : part;
      const int64_t ldt = k0 == 0 ? ldd : ldl;
      if (p->b.dtype == CML_DTYPE_F32) {
        const float* bm = (const float*)p->b.data + p->b.batch_offsets[b] + k0 * kb;
        c->kern.axpy_rows(p->m, kc, (const float*)ak, c->a_acc.row_stride, ka, bm + j0, kb, to, ldt,
                          w);
      } else {
        const uint16_t* bm = (const uint16_t*)p->b.data + p->b.batch_offsets[b] + k0 * kb;
        c->kern.axpy_h(p->m, kc, ak, p->a.dtype, c->a_acc.row_stride, ka, bm + j0, p->b.dtype, kb,
                       to, ldt, w);
      }
      if (k0 > 0) {
        for (int64_t i = 0; i < p->m; ++i)
          for (int64_t j = 0; j < w; ++j) dst[i * ldd + j] += part[i * ldl + j];
      }
    }
    if (local) {
      for (int64_t i = 0; i < p->m; ++i)
        memcpy(out + i * p->n, dst + i * ldl, (size_t)w * sizeof(float));
    }
  }
}

// Up to CMLC__GEMM_DOT_H_M rows times a half B stored transposed (k contiguous in each
// column: a weight stored [N, K]): outputs [begin, end) of the flattened (batch, column-chunk)
// range, each the dot of an x row with one weight row read in place (kern.dot_h). x rows that
// are not f32 with contiguous k widen into the thread's scratch first.
static void CMLC_GEMM_N(gemv_dot_h_task)(void* vctx, int64_t begin, int64_t end, int thread_index) {
  CMLC_GEMM_N(gemm_ctx_t)* c = vctx;
  const CMLC_GEMM_PROBLEM* p = c->p;
  for (int64_t t = begin; t < end; ++t) {
    int64_t b, j0, w;
    const void* a = CMLC_GEMM_N(gemv_half_chunk)(c, t, &b, &j0, &w);
    const float* x = a;
    int64_t ldx = c->a_acc.row_stride;
    if (p->a.dtype != CML_DTYPE_F32 || c->a_acc.col_stride != 1) {
      float* xs = CMLC_GEMM_N(gemm_thread_a)(c, thread_index);
      for (int64_t i = 0; i < p->m; ++i) {
        for (int64_t kk = 0; kk < p->k; ++kk) {
          xs[i * p->k + kk] =
              cmlc_load_f32(a, i * c->a_acc.row_stride + kk * c->a_acc.col_stride, p->a.dtype);
        }
      }
      x = xs, ldx = p->k;
    }
    const uint16_t* bm = (const uint16_t*)p->b.data + p->b.batch_offsets[b];
    c->kern.dot_h(p->m, p->k, x, ldx, bm + j0 * c->b_acc.col_stride, p->b.dtype,
                  c->b_acc.col_stride, p->c + b * p->m * p->n + j0, p->n, w);
  }
}
#endif

// The output chunk of an M == 1 GEMV: whole B rows stream best; the outputs of a chunk
// (<= 16 KiB) stay in L1. Splitting over outputs changes no output's arithmetic, so the chunk
// may follow the thread count. Returns the number of chunks per batch element.
static int64_t CMLC_GEMM_N(gemv_row_chunks)(CMLC_GEMM_N(gemm_ctx_t) * c, cmlc_pool_t* pool) {
  const CMLC_GEMM_PROBLEM* p = c->p;
  int threads = cmlc_pool_thread_count(pool);
  int64_t chunk = CMLC_GEMM_N(gemm_round_up)((p->n + threads - 1) / threads, 64);
  int64_t chunk_floor = CMLC_GEMM_N(gemm_round_up)(65536 / (p->k > 0 ? p->k : 1), 64);
  if (chunk < chunk_floor) chunk = chunk_floor;
  c->gemv_chunk = chunk > 4096 ? 4096 : chunk;
  // Tasks from the capped chunk: each task writes gemv_chunk outputs, so counting them with
  // the uncapped one left every output past 4096 per thread unwritten (zeros).
  return (p->n + c->gemv_chunk - 1) / c->gemv_chunk;
}

// Runs the GEMV path when it applies (f32 operands, or a half B with contiguous rows for the
// f32 GEMM; M == 1 or N == 1, affine layouts); returns false to let the blocked path run.
static bool CMLC_GEMM_N(gemv_try)(CMLC_GEMM_N(gemm_ctx_t) * c, cmlc_pool_t* pool) {
  const CMLC_GEMM_PROBLEM* p = c->p;
#if CMLC_GEMM_HALF_GEMV
  const bool half_b =
      p->m <= c->kern.axpy_h_rows && c->kern.axpy_h &&
      (p->b.dtype == CML_DTYPE_BF16 || p->b.dtype == CML_DTYPE_F16) &&
      (p->a.dtype == CML_DTYPE_F32 || p->a.dtype == CML_DTYPE_BF16 || p->a.dtype == CML_DTYPE_F16);
  // 2..8 rows times a large f32 B: the same streaming form (kern.axpy_rows). The packed
  // micro-kernels run B's rows in short runs (a sliver's 128 bytes per row of a 16 KiB stride),
  // which the prefetchers follow poorly once B comes from memory; a B that fits the caches
  // stays with them (they reach a higher share of the FMA peak).
  const bool f32_b = p->m >= 2 && p->m <= CMLC_GEMM_ROWS_M && c->kern.axpy_rows &&
                     p->a.dtype == CML_DTYPE_F32 && p->b.dtype == CML_DTYPE_F32 &&
                     p->k * p->n >= CMLC_GEMM_ROWS_B_MIN;
  // A few rows times a half B stored transposed (a weight stored [N, K]): the dot form over the
  // weight's rows, read in place. (The transposed-B tiles took it before: [1, 4096] x [4096,
  // 4096]^T bf16 on 2 threads of Zen 5 took 1.57 ms there, 0.43 ms here.)
  if (p->m <= CMLC__GEMM_DOT_H_M && c->kern.dot_h &&
      (p->b.dtype == CML_DTYPE_BF16 || p->b.dtype == CML_DTYPE_F16) &&
      (p->a.dtype == CML_DTYPE_F32 || p->a.dtype == CML_DTYPE_BF16 ||
       p->a.dtype == CML_DTYPE_F16) &&
      c->a_acc.col_stride != CMLC_GEMM_NOT_AFFINE && c->a_acc.row_stride != CMLC_GEMM_NOT_AFFINE &&
      c->b_acc.row_stride == 1 && c->b_acc.col_stride != CMLC_GEMM_NOT_AFFINE &&
      ((p->a.dtype == CML_DTYPE_F32 && c->a_acc.col_stride == 1) ||
       cmlc_size_of(p->m * p->k, 1) <= c->sz.a_elems + c->sz.b_elems)) {
    int64_t chunks = CMLC_GEMM_N(gemv_row_chunks)(c, pool);
    cmlc_parallel_for(pool, p->batch * chunks, 1, CMLC_GEMM_N(gemv_dot_h_task), c);
    return true;
  }
  if ((half_b || f32_b) && c->a_acc.col_stride != CMLC_GEMM_NOT_AFFINE &&
      c->a_acc.row_stride != CMLC_GEMM_NOT_AFFINE && c->b_acc.row_stride != CMLC_GEMM_NOT_AFFINE &&
      c->b_acc.col_stride == 1) {
    int64_t chunks = CMLC_GEMM_N(gemv_row_chunks)(c, pool);
    if (p->m > 1) {
      // The outputs of all rows of a chunk stay in L1: at most 8192 of them.
      int64_t cap = CMLC_GEMM_N(gemm_round_up)((f32_b ? 4096 : 8192) / p->m, 64);
      if (c->gemv_chunk > cap) c->gemv_chunk = cap;
      chunks = (p->n + c->gemv_chunk - 1) / c->gemv_chunk;
    }
    cmlc_parallel_for(pool, p->batch * chunks, 1, CMLC_GEMM_N(gemv_half_task), c);
    return true;
  }
#endif
  if (p->a.dtype != CMLC_GEMM_DTYPE || p->b.dtype != CMLC_GEMM_DTYPE) return false;
  if (p->m == 1 && c->a_acc.col_stride != CMLC_GEMM_NOT_AFFINE &&
      c->b_acc.row_stride != CMLC_GEMM_NOT_AFFINE &&
      (c->b_acc.col_stride == 1 || (c->b_acc.row_stride == 1 && c->a_acc.col_stride == 1 &&
                                    c->b_acc.col_stride != CMLC_GEMM_NOT_AFFINE))) {
    int64_t chunks = CMLC_GEMM_N(gemv_row_chunks)(c, pool);
    cmlc_parallel_for(pool, p->batch * chunks, 1, CMLC_GEMM_N(gemv_row_task), c);
    return true;
  }
  if (p->m >= 2 && p->m <= CMLC__GEMM_DOT_ROWS_M && p->n > 1 && c->a_acc.col_stride == 1 &&
      c->a_acc.row_stride != CMLC_GEMM_NOT_AFFINE && c->b_acc.row_stride == 1 &&
      c->b_acc.col_stride != CMLC_GEMM_NOT_AFFINE && c->b_acc.col_stride > 0) {
    int64_t chunks = CMLC_GEMM_N(gemv_row_chunks)(c, pool);
    cmlc_parallel_for(pool, p->batch * chunks, 1, CMLC_GEMM_N(gemv_dot_rows_task), c);
    return true;
  }
  if (p->n == 1 && p->m > 1 && c->a_acc.col_stride == 1 &&
      c->a_acc.row_stride != CMLC_GEMM_NOT_AFFINE && c->b_acc.row_stride == 1) {
    int64_t chunk = 16384 / (p->k > 0 ? p->k : 1);
    c->gemv_chunk = chunk < 8 ? 8 : chunk;
    int64_t chunks = (p->m + c->gemv_chunk - 1) / c->gemv_chunk;
    cmlc_parallel_for(pool, p->batch * chunks, 1, CMLC_GEMM_N(gemv_col_task), c);
    return true;
  }
  return false;
}

//===--- skinny products ---===//

// Slivers [begin, end) chunks of the skinny product: every k block in order. With one A sliver
// the micro-kernel reads B in place; with several, each group of SKINNY_GROUP B slivers is
// first copied into the thread's own buffer (sliver by sliver, rows |nr| apart, so its rows no
// longer share a few cache sets; each B row of the group is read as one run) and every A
// sliver runs against that copy. A B packed at plan time is read as it is.
static void CMLC_GEMM_N(skinny_task)(void* vctx, int64_t begin, int64_t end, int thread_index) {
  const CMLC_GEMM_N(gemm_ctx_t)* c = vctx;
  const CMLC_GEMM_PROBLEM* p = c->p;
  const CMLC_GEMM_N(kernel_t)* kern = &c->kern;
  const int mr = c->skinny16 ? 16 : kern->mr, nr = c->skinny16 ? 16 : kern->nr;
  const int64_t ldb = c->b_acc.row_stride, mpad = CMLC_GEMM_N(gemm_round_up)(p->m, mr);
  const int64_t s0 = begin * c->slivers_per_chunk;
  const int64_t s1 = CMLC_GEMM_N(gemm_min)(c->slivers, end * c->slivers_per_chunk);
  const CMLC_GEMM_T* bm = (const CMLC_GEMM_T*)p->b.data + p->b.batch_offsets[0];
  // The thread's private B panel (kc x nc elements) holds the copied group of slivers.
  CMLC_GEMM_T* copy = mpad > mr && !c->b_packed && !c->skinny16
                          ? CMLC_GEMM_N(gemm_thread_a)(c, thread_index) + c->sz.a_elems
                          : NULL;
  // Slivers copied together: each B row of a group is one longer contiguous read.
  int64_t group = copy ? CMLC_GEMM_SKINNY_GROUP : 1;
  if (group * nr > c->sz.nc) group = c->sz.nc / nr;
  if (group < 1) group = 1;
  for (int64_t pc = 0; pc < p->k; pc += c->sz.kc) {
    const int64_t kc = CMLC_GEMM_N(gemm_min)(c->sz.kc, p->k - pc);
    const CMLC_GEMM_T* ap = c->shared_panel + (pc / c->sz.kc) * mpad * c->sz.kc;
    if (c->b_packed) {
      for (int64_t s = s0; s < s1; ++s) {
        // A B packed at plan time: the sliver is contiguous (kc x nr), every A sliver reads it.
        const int64_t col0 = s * nr;
        const int cols = (int)CMLC_GEMM_N(gemm_min)(nr, p->n - col0);
        const int64_t jc = col0 / c->sz.nc * c->sz.nc;
        const CMLC_GEMM_T* bp = CMLC_GEMM_N(gemm_packed_panel)(c, jc, pc) + (col0 - jc) * kc;
        for (int64_t i = 0; i < p->m; i += mr) {
          const int rows = (int)CMLC_GEMM_N(gemm_min)(mr, p->m - i);
          kern->fn(kc, ap + i * kc, bp, nr, p->c + i * p->n + col0, p->n, pc > 0, rows, cols);
        }
      }
      continue;
    }
    for (int64_t g0 = s0; g0 < s1; g0 += group) {
      const int64_t g1 = CMLC_GEMM_N(gemm_min)(s1, g0 + group);
      const CMLC_GEMM_T* bs = bm + pc * ldb + g0 * nr;
#if (defined(__GNUC__) || defined(__clang__))
      // B rows are a page or more apart, which hardware prefetchers do not follow: fetch the
      // next group's rows into L2 while this one computes (into L1, the burst of a whole
      // group measured slower: it evicts the sliver being computed).
      if (g1 < s1 && !c->skinny16) {
        const int64_t next_cols = (CMLC_GEMM_N(gemm_min)(s1, g1 + group) - g1) * nr;
        const char* next = (const char*)(bs + (g1 - g0) * nr);
        for (int64_t kk = 0; kk < kc; ++kk) {
          const char* row = next + (size_t)(kk * ldb) * sizeof(CMLC_GEMM_T);
          for (size_t off = 0; off < (size_t)next_cols * sizeof(CMLC_GEMM_T); off += 64)
            __builtin_prefetch(row + off, 0, 2);
        }
      }
#endif
      if (copy) {
        // Each k row of the group is one contiguous read, split into the group's slivers.
        const int64_t width = CMLC_GEMM_N(gemm_min)(p->n, g1 * nr) - g0 * nr;
        for (int64_t kk = 0; kk < kc; ++kk) {
          const CMLC_GEMM_T* row = bs + kk * ldb;
          for (int64_t t = 0; t * nr < width; ++t)
            memcpy(copy + t * nr * kc + kk * nr, row + t * nr,
                   (size_t)CMLC_GEMM_N(gemm_min)(nr, width - t * nr) * sizeof(CMLC_GEMM_T));
        }
      }
      for (int64_t s = g0; s < g1; ++s) {
        const int64_t col0 = s * nr;
        const int cols = (int)CMLC_GEMM_N(gemm_min)(nr, p->n - col0);
        const CMLC_GEMM_T* bk = copy ? copy + (s - g0) * nr * kc : bm + pc * ldb + col0;
        const int64_t ldk = copy ? nr : ldb;
        if (c->skinny16) {
          for (int64_t i = 0; i < p->m; i += 16) {
            const int rows = (int)CMLC_GEMM_N(gemm_min)(16, p->m - i);
            kern->skinny16(kc, ap + i * kc, bk, ldk, p->c + i * p->n + col0, p->n, pc > 0, rows,
                           cols);
          }
          continue;
        }
        for (int64_t i = 0; i < p->m; i += mr) {
          const int rows = (int)CMLC_GEMM_N(gemm_min)(mr, p->m - i);
          kern->fn(kc, ap + i * kc, bk, ldk, p->c + i * p->n + col0, p->n, pc > 0, rows, cols);
        }
      }
    }
  }
}

// A few rows (M <= SKINNY_M) against a large B with contiguous rows: A is packed whole once
// (into the shared panel's space), B is streamed from memory once, sliver by sliver (read in
// place by the micro-kernel when M <= MR, else copied once per sliver into a thread-private
// buffer that every A sliver reuses from L1), and the tasks are column chunks that each run
// every k block, with no barrier between k blocks and no shared B panel. The k blocks,
// micro-kernel and summation order are those of the blocked path, so the results are the same
// bits; the split is over columns only. Returns false when it does not apply.
static bool CMLC_GEMM_N(skinny_try)(CMLC_GEMM_N(gemm_ctx_t) * c, cmlc_pool_t* pool) {
  const CMLC_GEMM_PROBLEM* p = c->p;
  if (p->batch != 1 || p->m > CMLC_GEMM_SKINNY_M || p->k * p->n <= CMLC_GEMM_DIRECT_B_MAX)
    return false;
  if (!c->b_packed && (p->b.dtype != CMLC_GEMM_DTYPE || c->b_acc.col_stride != 1 ||
                       c->b_acc.row_stride == CMLC_GEMM_NOT_AFFINE))
    return false;
  // M = 13..16 with AVX-512: the 16 x 16 kernel reads every B row in place once (no copy of
  // B); its per-tile arithmetic is that of kern.fn, so the bits are the same. M = 17..32 takes
  // two 16-row passes over each in-place sliver (the second reads it from L1) when every B row
  // starts on a cache line: B is read from memory once, and 32 rows are not padded to 36
  // (1.2-1.55x faster than the copy, e.g. 32 x 4096 x 4096: 10.2 -> 7.6 ms on 2 threads). With
  // unaligned rows the passes split loads and measured slower (0.36-0.55x for N = 1000).
  const bool b_lines = ((uintptr_t)p->b.data % 64 == 0) &&
                       ((size_t)c->b_acc.row_stride * sizeof(CMLC_GEMM_T)) % 64 == 0 &&
                       ((size_t)p->b.batch_offsets[0] * sizeof(CMLC_GEMM_T)) % 64 == 0;
  c->skinny16 =
      !c->b_packed && c->kern.skinny16 && p->m >= c->kern.skinny_min && (p->m <= 16 || b_lines);
  const int mr = c->skinny16 ? 16 : c->kern.mr, nr = c->skinny16 ? 16 : c->kern.nr;
  const int64_t mpad = CMLC_GEMM_N(gemm_round_up)(p->m, mr);
  // All of A must fit in the shared panel.
  if (cmlc_size_of(mpad * CMLC_GEMM_N(gemm_round_up)(p->k, c->sz.kc), 1) > c->sz.b_elems) {
    c->skinny16 = false;
    return false;
  }
  // The ISA's A packing is for kern.mr rows; 16-row slivers take the generic loops.
  CMLC_GEMM_N(gemm_access_t) a_acc = c->a_acc;
  if (c->skinny16) a_acc.pack_a = NULL;
  for (int64_t pc = 0; pc < p->k; pc += c->sz.kc) {
    const int64_t kc = CMLC_GEMM_N(gemm_min)(c->sz.kc, p->k - pc);
    CMLC_GEMM_N(gemm_pack_a)
    (&p->a, &a_acc, 0, 0, p->m, pc, kc, mr, c->shared_panel + (pc / c->sz.kc) * mpad * c->sz.kc);
  }
  c->slivers = (p->n + nr - 1) / nr;
  // About four chunks per thread, at least 128 f32 columns each.
  const int threads = cmlc_pool_thread_count(pool);
  const int64_t per = (c->slivers + 4 * threads - 1) / (4 * threads), min_per = 128 / nr;
  c->slivers_per_chunk = per < min_per ? min_per : per;
  const int64_t chunks = (c->slivers + c->slivers_per_chunk - 1) / c->slivers_per_chunk;
  cmlc_parallel_for(pool, chunks, 1, CMLC_GEMM_N(skinny_task), c);
  return true;
}

//===--- transposed B, small M ---===//

// The transposed-B kernel for a pass with |left| rows of A to go: the narrowest that covers
// them, else the widest.
static int CMLC_GEMM_N(bt_pick)(const CMLC_GEMM_N(kernel_t) * kern, int64_t left) {
  int pick = 0;
  for (int i = 1; i < CMLC_GEMM_BT_KINDS && kern->bt[i].fn; ++i)
    if (kern->bt[i].lanes >= left) pick = i;
  return pick;
}

// Weight row groups [begin, end) of the transposed-B product: each group (bt_group weight rows)
// runs its whole k once per pass over the rows of A.
static void CMLC_GEMM_N(bt_task)(void* vctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const CMLC_GEMM_N(gemm_ctx_t)* c = vctx;
  const CMLC_GEMM_PROBLEM* p = c->p;
  const int64_t ldw = c->b_acc.col_stride, group = c->bt_group;
  const size_t es = p->b.dtype == CMLC_GEMM_DTYPE ? sizeof(CMLC_GEMM_T) : 2;
  const char* w = (const char*)p->b.data + (size_t)p->b.batch_offsets[0] * es;
  for (int64_t g = begin; g < end; ++g) {
    const int64_t n0 = g * group, n1 = CMLC_GEMM_N(gemm_min)(n0 + group, p->n);
    const CMLC_GEMM_T* xt = c->bt_x;
    for (int64_t m0 = 0; m0 < p->m;) {
      const CMLC_GEMM_N(bt_t)* bt = &c->kern.bt[CMLC_GEMM_N(bt_pick)(&c->kern, p->m - m0)];
      const int cols = (int)CMLC_GEMM_N(gemm_min)(bt->lanes, p->m - m0);
      for (int64_t r0 = n0; r0 < n1; r0 += bt->rows) {
        const int rows = (int)CMLC_GEMM_N(gemm_min)(bt->rows, n1 - r0);
        bt->fn(p->k, c->sz.kc, w + (size_t)(r0 * ldw) * es, p->b.dtype, ldw, xt,
               p->c + m0 * p->n + r0, p->n, rows, cols);
      }
      xt += bt->lanes * p->k;
      m0 += bt->lanes;
    }
  }
}

// A few rows (2 <= M <= BT_M) against a large B stored transposed (k contiguous in each of its
// N columns: a weight stored [N, K]; f32, or f16 / bf16 widened by the kernels). Packing such a
// B for the blocked path means reading many columns side by side a few values at a time, which
// is bound by memory latency, not by its bandwidth; instead the roles are swapped: A is packed
// k-major in passes of a kernel's lanes (the widest first, the last pass the narrowest kernel that
// covers the rows left) and the tile kernels read the weight row by row in place, so the weight is
// streamed from memory once. Threads split the weight rows (the outputs' columns); the k blocks and
// the per-output arithmetic are those of the blocked path, so the results are the same bits.
// Returns false when it does not apply.
static bool CMLC_GEMM_N(bt_try)(CMLC_GEMM_N(gemm_ctx_t) * c, cmlc_pool_t* pool) {
  const CMLC_GEMM_PROBLEM* p = c->p;
  // One row of an f32 weight is the GEMV's; of a half weight, these tiles' (no half GEMV reads
  // a weight stored [N, K]).
  if (!c->kern.bt[0].fn || p->batch != 1 || c->b_packed ||
      (p->m < 2 && p->b.dtype == CMLC_GEMM_DTYPE) || p->m > CMLC_GEMM_BT_M ||
      p->k * p->n <= CMLC_GEMM_DIRECT_B_MAX)
    return false;
  // The kernels widen f16 and bf16 weights as they copy them (only f32 tables have kernels).
  if ((p->b.dtype != CMLC_GEMM_DTYPE && p->b.dtype != CML_DTYPE_F16 &&
       p->b.dtype != CML_DTYPE_BF16) ||
      c->b_acc.row_stride != 1 || c->b_acc.col_stride == CMLC_GEMM_NOT_AFFINE)
    return false;
  // A, packed as one xt[k][lanes] panel per pass (zero padded), 64-byte aligned, in the whole
  // scratch (the path uses no other buffer); it must fit.
  int64_t packed = 0;
  for (int64_t m0 = 0; m0 < p->m;) {
    const int64_t lanes = c->kern.bt[CMLC_GEMM_N(bt_pick)(&c->kern, p->m - m0)].lanes;
    packed += lanes * p->k;
    m0 += lanes;
  }
  const size_t room = (size_t)c->threads * (c->sz.a_elems + c->sz.b_elems) + c->sz.b_elems;
  if (cmlc_size_add(cmlc_size_of(packed, 1), 64 / sizeof(CMLC_GEMM_T)) > room) return false;
  uintptr_t at = (uintptr_t)c->scratch;
  at = (at + 63) & ~(uintptr_t)63;
  CMLC_GEMM_T* xt = (CMLC_GEMM_T*)at;
  const cmlc__gemm_operand_t* a = &p->a;
  const bool native = a->dtype == CMLC_GEMM_DTYPE;
  for (int64_t m0 = 0; m0 < p->m;) {
    const int64_t lanes = c->kern.bt[CMLC_GEMM_N(bt_pick)(&c->kern, p->m - m0)].lanes;
    const int64_t live = CMLC_GEMM_N(gemm_min)(lanes, p->m - m0);
    if (live < lanes) memset(xt, 0, (size_t)(lanes * p->k) * sizeof(CMLC_GEMM_T));
    for (int64_t m = 0; m < live; ++m) {
      CMLC_GEMM_T* d = xt + m;
      const int64_t base = a->batch_offsets[0] + a->row_offsets[m0 + m];
      if (native && c->a_acc.col_stride == 1) {
        const CMLC_GEMM_T* s = (const CMLC_GEMM_T*)a->data + base;
        for (int64_t kk = 0; kk < p->k; ++kk) d[kk * lanes] = s[kk];
      } else if (native) {
        const CMLC_GEMM_T* s = (const CMLC_GEMM_T*)a->data + base;
        for (int64_t kk = 0; kk < p->k; ++kk) d[kk * lanes] = s[a->col_offsets[kk]];
      } else {
        for (int64_t kk = 0; kk < p->k; ++kk)
          d[kk * lanes] = CMLC_GEMM_LOAD_CONV(a->data, base + a->col_offsets[kk], a->dtype);
      }
    }
    xt += lanes * p->k;
    m0 += lanes;
  }
  c->bt_x = (const CMLC_GEMM_T*)at;
  c->bt_group = 1;
  for (int i = 0; i < CMLC_GEMM_BT_KINDS && c->kern.bt[i].fn; ++i)
    if (c->kern.bt[i].rows > c->bt_group) c->bt_group = c->kern.bt[i].rows;
  const int64_t groups = (p->n + c->bt_group - 1) / c->bt_group;
  // About four tasks per thread (spare ones absorb a preempted thread).
  const int threads = cmlc_pool_thread_count(pool);
  const int64_t chunk = (groups + 4 * threads - 1) / (4 * threads);
  cmlc_parallel_for(pool, groups, chunk < 1 ? 1 : chunk, CMLC_GEMM_N(bt_task), c);
  return true;
}

//===--- narrow products: many rows, few columns ---===//

// Groups of a tile kernel's rows of A [begin, end): the kernel reads the rows in place (k
// contiguous) against B packed k-major in its lanes, writing the transposed tile into a stack
// buffer that goes to C row by row.
static void CMLC_GEMM_N(narrow_task)(void* vctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const CMLC_GEMM_N(gemm_ctx_t)* c = vctx;
  const CMLC_GEMM_PROBLEM* p = c->p;
  const CMLC_GEMM_N(bt_t)* bt = &c->kern.bt[c->narrow_kind];
  const int64_t lda = c->a_acc.row_stride;
  const size_t es = p->a.dtype == CMLC_GEMM_DTYPE ? sizeof(CMLC_GEMM_T) : 2;
  const char* a = (const char*)p->a.data + (size_t)p->a.batch_offsets[0] * es;
  CMLC_GEMM_T tile[CMLC_GEMM_NARROW_TILE] __attribute__((aligned(64)));
  for (int64_t g = begin; g < end; ++g) {
    const int64_t r0 = g * bt->rows;
    const int rows = (int)CMLC_GEMM_N(gemm_min)(bt->rows, p->m - r0);
    bt->fn(p->k, c->sz.kc, a + (size_t)(r0 * lda) * es, p->a.dtype, lda, c->bt_x, tile, bt->rows,
           rows, (int)p->n);
    for (int r = 0; r < rows; ++r) {
      CMLC_GEMM_T* dst = p->c + (r0 + r) * p->n;
      for (int64_t m = 0; m < p->n; ++m) dst[m] = tile[m * bt->rows + r];
    }
  }
}

// Many rows of A (at least CMLC_GEMM_NARROW_MIN_M) against a B of at most 16 columns (a
// classifier's head, an MoE router): the blocked path's micro-kernel would compute mostly
// padding (12 x 32 tiles for 8 columns). The transposed-B tile kernels run with the roles
// swapped: the rows of A are their weight rows, read in place, and B, packed k-major in the
// lanes of the narrowest kernel that holds its columns, is their x; each tile is the
// transposed output. The k blocks and the per-output arithmetic are the blocked path's, so the
// results are the same bits. Returns false when it does not apply.
static bool CMLC_GEMM_N(narrow_try)(CMLC_GEMM_N(gemm_ctx_t) * c, cmlc_pool_t* pool) {
  const CMLC_GEMM_PROBLEM* p = c->p;
  if (!c->kern.bt[0].fn || p->batch != 1 || p->m < CMLC_GEMM_NARROW_MIN_M || p->n < 2) {
    return false;
  }
  int kind = -1;
  for (int i = 0; i < CMLC_GEMM_BT_KINDS && c->kern.bt[i].fn; ++i) {
    const CMLC_GEMM_N(bt_t)* bt = &c->kern.bt[i];
    if (bt->lanes >= p->n && bt->rows * bt->lanes <= CMLC_GEMM_NARROW_TILE &&
        (kind < 0 || bt->lanes < c->kern.bt[kind].lanes))
      kind = i;
  }
  if (kind < 0) return false;
  // A: rows read in place by the kernels (k contiguous; f32, or f16 / bf16 they widen).
  if ((p->a.dtype != CMLC_GEMM_DTYPE && p->a.dtype != CML_DTYPE_F16 &&
       p->a.dtype != CML_DTYPE_BF16) ||
      c->a_acc.col_stride != 1 || c->a_acc.row_stride == CMLC_GEMM_NOT_AFFINE ||
      c->a_acc.row_stride <= 0)
    return false;
  const int64_t lanes = c->kern.bt[kind].lanes;
  const size_t room = (size_t)c->threads * (c->sz.a_elems + c->sz.b_elems) + c->sz.b_elems;
  if (cmlc_size_add(cmlc_size_of(lanes * p->k, 1), 64 / sizeof(CMLC_GEMM_T)) > room) return false;
  uintptr_t at = ((uintptr_t)c->scratch + 63) & ~(uintptr_t)63;
  CMLC_GEMM_T* xt = (CMLC_GEMM_T*)at;
  const cmlc__gemm_operand_t* b = &p->b;
  const int64_t bbase = b->batch_offsets[0];
  for (int64_t kk = 0; kk < p->k; ++kk) {
    CMLC_GEMM_T* d = xt + kk * lanes;
    const int64_t rbase = bbase + b->row_offsets[kk];
    for (int64_t n = 0; n < p->n; ++n) {
      d[n] = b->dtype == CMLC_GEMM_DTYPE
                 ? ((const CMLC_GEMM_T*)b->data)[rbase + b->col_offsets[n]]
                 : CMLC_GEMM_LOAD_CONV(b->data, rbase + b->col_offsets[n], b->dtype);
    }
    for (int64_t n = p->n; n < lanes; ++n) d[n] = 0;
  }
  c->bt_x = xt;
  c->narrow_kind = kind;
  const int64_t rows = c->kern.bt[kind].rows;
  const int64_t groups = (p->m + rows - 1) / rows;
  const int threads = cmlc_pool_thread_count(pool);
  const int64_t chunk = (groups + 4 * threads - 1) / (4 * threads);
  cmlc_parallel_for(pool, groups, chunk < 1 ? 1 : chunk, CMLC_GEMM_N(narrow_task), c);
  return true;
}

//===--- entry ---===//

// The whole product with the kernels of |kern| (and B packed at plan time when |b_packed| is not
// NULL; only for batch 1).
// Tasks of the tiny path: batches [begin, end).
static void CMLC_GEMM_N(tiny_task)(void* vctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const CMLC_GEMM_N(gemm_ctx_t)* c = vctx;
  const CMLC_GEMM_PROBLEM* p = c->p;
  const CMLC_GEMM_T* a = (const CMLC_GEMM_T*)p->a.data + p->a.row_offsets[0] + p->a.col_offsets[0];
  const CMLC_GEMM_T* b = (const CMLC_GEMM_T*)p->b.data + p->b.row_offsets[0] + p->b.col_offsets[0];
  if (c->tiny_fixed) {
    c->tiny_fixed(a, p->a.batch_offsets, c->a_acc.row_stride, c->a_acc.col_stride, b,
                  p->b.batch_offsets, c->b_acc.row_stride, p->c, begin, end);
    return;
  }
  for (int64_t t = begin; t < end; ++t) {
    c->kern.tiny(a + p->a.batch_offsets[t], c->a_acc.row_stride, c->a_acc.col_stride,
                 b + p->b.batch_offsets[t], c->b_acc.row_stride, p->c + t * p->m * p->n, p->m, p->n,
                 p->k);
  }
}

// Many tiny products of native operands with affine layouts, B rows contiguous: kern.tiny per
// batch (see cmlc_gemm_tiny_fn_f32).
static bool CMLC_GEMM_N(tiny_try)(const CMLC_GEMM_N(gemm_ctx_t) * c, cmlc_pool_t* pool) {
  const CMLC_GEMM_PROBLEM* p = c->p;
  // (An unrolled size takes it from one batch up: the same bits for a product alone or batched.)
  const bool fixed = CMLC_GEMM_N(tiny_fixed)(c->kern.tiny, p->m, p->n, p->k) != NULL;
  if (!c->kern.tiny || (p->batch < CMLC_GEMM_TINY_BATCH && !fixed) || p->m > CMLC_GEMM_TINY_M ||
      p->n > CMLC_GEMM_TINY_N || p->k > CMLC_GEMM_TINY_K || p->a.dtype != CMLC_GEMM_DTYPE ||
      p->b.dtype != CMLC_GEMM_DTYPE || c->a_acc.row_stride == CMLC_GEMM_NOT_AFFINE ||
      c->a_acc.col_stride == CMLC_GEMM_NOT_AFFINE || c->b_acc.row_stride == CMLC_GEMM_NOT_AFFINE ||
      (p->n > 1 && c->b_acc.col_stride != 1)) {
    return false;
  }
  const int64_t per = p->m * p->n * p->k;
  CMLC_GEMM_N(gemm_ctx_t) t = *c;
  t.tiny_fixed = CMLC_GEMM_N(tiny_fixed)(c->kern.tiny, p->m, p->n, p->k);
  cmlc_parallel_for(pool, p->batch, 16384 / (per > 0 ? per : 1) + 1, CMLC_GEMM_N(tiny_task),
                    (void*)&t);
  return true;
}

static void CMLC_GEMM_N(gemm_run)(const CMLC_GEMM_PROBLEM* p, const CMLC_GEMM_N(kernel_t) * kern,
                                  const CMLC_GEMM_T* b_packed, cmlc_pool_t* pool, void* scratch,
                                  int threads) {
  if (p->batch <= 0 || p->m <= 0 || p->n <= 0) return;
  if (p->k <= 0) {
    memset(p->c, 0, (size_t)(p->batch * p->m * p->n) * sizeof(CMLC_GEMM_T));
    return;
  }
  CMLC_GEMM_N(gemm_ctx_t) c;
  memset(&c, 0, sizeof c);
  c.p = p;
  c.kern = *kern;
  c.sz = CMLC_GEMM_N(gemm_sizes)(p->m, p->n, p->k, kern);
  c.b_packed = p->batch == 1 ? b_packed : NULL;
  c.scratch = scratch;
  c.threads = threads < 1 ? 1 : threads;
  c.a_acc = CMLC_GEMM_N(gemm_access)(&p->a, p->m, p->k, kern);
  c.b_acc = CMLC_GEMM_N(gemm_access)(&p->b, p->k, p->n, kern);
  if (p->b.dtype == CMLC_GEMM_DTYPE && c.b_acc.row_stride == 1 && c.b_acc.col_stride > 0 &&
      c.b_acc.col_stride <= INT32_MAX / 32)
    c.b_acc.pack_bt = c.kern.pack_bt;
  if (p->a.dtype == CMLC_GEMM_DTYPE && c.a_acc.col_stride == 1) c.a_acc.pack_a = c.kern.pack_a;
  int pool_threads = cmlc_pool_thread_count(pool);
  if (pool_threads > c.threads) pool = NULL, pool_threads = 1;
  c.shared_panel = c.scratch + (size_t)c.threads * (c.sz.a_elems + c.sz.b_elems);
  double flops = 2.0 * (double)p->m * (double)p->n * (double)p->k;
  // Many tiny products of a fixed-size kernel's sizes (a batch of 3 x 3 matrices times
  // 3-vectors) before GEMV: one unrolled loop over the batches.
  if (CMLC_GEMM_N(tiny_fixed)(c.kern.tiny, p->m, p->n, p->k) &&
      CMLC_GEMM_N(tiny_try)(&c, flops * (double)p->batch <= 2.0 * 128 * 128 * 128 ? NULL : pool)) {
    return;
  }
  // GEMV streams the matrix once; threads help as soon as it is larger than L2.
  if (flops * (double)p->batch < 2.0 * 256 * 1024) {
    if (CMLC_GEMM_N(gemv_try)(&c, NULL)) return;
  } else if (CMLC_GEMM_N(gemv_try)(&c, pool)) {
    return;
  }
  // Up to 128^3 a product stays on the calling thread (a hand-off costs more than it saves).
  if (flops * (double)p->batch <= 2.0 * 128 * 128 * 128) pool = NULL, pool_threads = 1;
  if (CMLC_GEMM_N(tiny_try)(&c, pool)) return;
  if (CMLC_GEMM_N(bt_try)(&c, pool)) return;
  if (CMLC_GEMM_N(narrow_try)(&c, pool)) return;
  // A small product on one thread, or one of many in batch mode, whose A rows (k contiguous)
  // span at most 32 KiB: the kernel reads A in place. Packing A would copy it for one or two
  // passes of the kernel (a 13 x 13 A took as long to pack as to multiply).
  c.lda = c.a_acc.row_stride;
  c.direct_a =
      kern->direct_a && p->a.dtype == CMLC_GEMM_DTYPE && c.a_acc.col_stride == 1 &&
      c.lda != CMLC_GEMM_NOT_AFFINE && c.lda > 0 && p->k <= c.sz.kc &&
      p->m * c.lda * (int64_t)sizeof(CMLC_GEMM_T) <= 32768 &&
      (pool == NULL || CMLC_GEMM_N(gemm_batch_mode)(p->batch, p->m, p->n, p->k, pool_threads));
  if (CMLC_GEMM_N(skinny_try)(&c, pool)) return;
  const bool b_rows = !c.b_packed && p->b.dtype == CMLC_GEMM_DTYPE && c.b_acc.col_stride == 1 &&
                      c.b_acc.row_stride != CMLC_GEMM_NOT_AFFINE;
  // With one row block (M <= MC) each B sliver is used by one pass of micro-kernel calls, so
  // packing B would only add a copy of it (a memory-bound one when B is a large weight matrix
  // read once per execute): B is read in place when its rows start on cache lines, and
  // gemm_tiles fetches the next sliver while the current one runs. Threads then split the
  // slivers instead of the rows.
  //
  // Up to CMLC_GEMM_MC_STREAM rows (an A block that still fits L2 beside the sliver) the rows
  // become one taller block for this, when there are enough slivers to split over the threads:
  // a 256-row product (a data-parallel device's half batch) skips the copy of B. On one core,
  // [256,512] x [512,1024] took 2.45 instead of 2.56 ms and [150,4096] x [4096,4096] 50 instead
  // of 55 ms; on two, 1.26 instead of 1.48 and 25 instead of 33 ms. With fewer than four
  // slivers per thread the split by rows stays faster ([256,1024] x [1024,128] on two threads:
  // 0.62 ms by rows, 0.81 by slivers).
  const int64_t all_slivers = (p->n + c.kern.nr - 1) / c.kern.nr;
  const bool stream_b =
      b_rows && p->k * p->n > CMLC_GEMM_DIRECT_B_MAX &&
      (p->m <= c.sz.mc ||
       (p->m <= CMLC_GEMM_MC_STREAM && all_slivers >= 4 * (int64_t)pool_threads)) &&
      c.b_acc.row_stride > 0 && (c.b_acc.row_stride * (int64_t)sizeof(CMLC_GEMM_T)) % 64 == 0;
  c.direct_b = stream_b || (b_rows && p->k * p->n <= CMLC_GEMM_DIRECT_B_MAX);
  if (stream_b) c.sz.mc = CMLC_GEMM_N(gemm_round_up)(p->m, c.kern.mr);

  if (CMLC_GEMM_N(gemm_batch_mode)(p->batch, p->m, p->n, p->k, pool_threads)) {
    int64_t min_chunk = (int64_t)(2.0 * 64 * 64 * 64 / (flops > 1 ? flops : 1)) + 1;
    cmlc_parallel_for(pool, p->batch, min_chunk, CMLC_GEMM_N(gemm_batch_task), &c);
    return;
  }
  // Tasks are (A row block, run of B slivers). Splitting the slivers makes each task pack the
  // same A block again, so first make the row blocks smaller (down to 4 slivers of MR rows)
  // until there are about four per thread (spare tasks absorb a preempted thread on a shared
  // machine); the blocking never changes a tile's arithmetic.
  if (pool_threads > 1 && !stream_b) {
    c.sz.mc = cmlc__gemm_row_block(p->m, c.kern.mr, c.sz.mc, pool_threads);
  }
  int64_t ic_blocks = (p->m + c.sz.mc - 1) / c.sz.mc;
  for (int64_t b = 0; b < p->batch; ++b) {
    c.b = b;
    for (int64_t jc = 0; jc < p->n; jc += c.sz.nc) {
      c.jc = jc;
      c.nc = CMLC_GEMM_N(gemm_min)(c.sz.nc, p->n - jc);
      c.slivers = (c.nc + c.kern.nr - 1) / c.kern.nr;
      int64_t want = 4 * (int64_t)pool_threads;
      int64_t n_chunks = pool_threads > 1 && ic_blocks < 2 * (int64_t)pool_threads
                             ? (want + ic_blocks - 1) / ic_blocks
                             : 1;
      if (n_chunks < 1) n_chunks = 1;
      if (n_chunks > c.slivers) n_chunks = c.slivers;
      c.slivers_per_chunk = (c.slivers + n_chunks - 1) / n_chunks;
      c.n_chunks = (c.slivers + c.slivers_per_chunk - 1) / c.slivers_per_chunk;
      // Tasks that split one A block's slivers would each pack that block again: pack every
      // block once first (in parallel), into the per-thread A buffers, one block per buffer.
      c.a_shared = c.n_chunks > 1 && ic_blocks <= (int64_t)c.threads;
      c.a_slivers = (c.sz.mc + c.kern.mr - 1) / c.kern.mr;
      // One row block with B read in place and several k blocks: A is packed for every k block
      // at once, and each task then runs its slivers through all k blocks, so the threads meet
      // twice per product instead of twice per k block (the MLP's [128, 784] x [784, 512]:
      // 2 hand-offs instead of 8). Needs room for all of A beside thread 0's A buffer: the B
      // panel there is unused when B is read in place.
      const int64_t kblocks = (p->k + c.sz.kc - 1) / c.sz.kc;
      if (c.a_shared && c.direct_b && !c.direct_a && ic_blocks == 1 && kblocks > 1 &&
          cmlc_size_of(kblocks * c.sz.kc * c.sz.mc, 1) <= c.sz.a_elems + c.sz.b_elems) {
        const int64_t pack_chunk = (int64_t)(16384 / (c.sz.kc * c.kern.mr)) + 1;
        cmlc_parallel_for(pool, kblocks * c.a_slivers, pack_chunk,
                          CMLC_GEMM_N(gemm_pack_a_whole_task), &c);
        cmlc_parallel_for(pool, c.n_chunks, 1, CMLC_GEMM_N(gemm_tile_whole_task), &c);
        continue;
      }
      for (int64_t pc = 0; pc < p->k; pc += c.sz.kc) {
        c.pc = pc;
        c.kc = CMLC_GEMM_N(gemm_min)(c.sz.kc, p->k - pc);
        if (!c.direct_b && !c.b_packed) {
          int64_t pack_chunk = (int64_t)(16384 / (c.kc * c.kern.nr)) + 1;
          cmlc_parallel_for(pool, c.slivers, pack_chunk, CMLC_GEMM_N(gemm_pack_b_task), &c);
        }
        if (c.a_shared) {
          int64_t pack_chunk = (int64_t)(16384 / (c.kc * c.kern.mr)) + 1;
          cmlc_parallel_for(pool, ic_blocks * c.a_slivers, pack_chunk,
                            CMLC_GEMM_N(gemm_pack_a_task), &c);
        }
        cmlc_parallel_for(pool, ic_blocks * c.n_chunks, 1, CMLC_GEMM_N(gemm_tile_task), &c);
      }
    }
  }
}

// The per-ISA drivers (the kernel table is fixed in each).
#if defined(CMLC_HAVE_X86_64)
static void CMLC_GEMM_N(gemm_avx512)(const CMLC_GEMM_PROBLEM* p, const CMLC_GEMM_T* b_packed,
                                     cmlc_pool_t* pool, void* scratch, int threads) {
  CMLC_GEMM_N(gemm_run)(p, &CMLC_GEMM_N(kern_avx512), b_packed, pool, scratch, threads);
}
static void CMLC_GEMM_N(gemm_avx2)(const CMLC_GEMM_PROBLEM* p, const CMLC_GEMM_T* b_packed,
                                   cmlc_pool_t* pool, void* scratch, int threads) {
  CMLC_GEMM_N(gemm_run)(p, &CMLC_GEMM_N(kern_avx2), b_packed, pool, scratch, threads);
}
#endif
static void CMLC_GEMM_N(gemm_scalar)(const CMLC_GEMM_PROBLEM* p, const CMLC_GEMM_T* b_packed,
                                     cmlc_pool_t* pool, void* scratch, int threads) {
  CMLC_GEMM_N(gemm_run)(p, &CMLC_GEMM_N(kern_scalar), b_packed, pool, scratch, threads);
}

CMLC_GEMM_FN CMLC_GEMM_ENTRY_PICK(cmlc_isa_t isa) {
#if defined(CMLC_HAVE_X86_64)
  if (isa == CMLC_ISA_AVX512) return CMLC_GEMM_N(gemm_avx512);
  if (isa == CMLC_ISA_AVX2) return CMLC_GEMM_N(gemm_avx2);
#endif
  (void)isa;
  return CMLC_GEMM_N(gemm_scalar);
}

void CMLC_GEMM_ENTRY(const CMLC_GEMM_PROBLEM* p, cmlc_isa_t isa, cmlc_pool_t* pool, void* scratch,
                     int threads) {
  CMLC_GEMM_ENTRY_PICK(isa)(p, NULL, pool, scratch, threads);
}

size_t CMLC_GEMM_ENTRY_PREPACK(const CMLC_GEMM_PROBLEM* p, cmlc_isa_t isa, void* dst) {
  if (p->batch != 1 || p->m <= 0 || p->n <= 0 || p->k <= 0) return 0;
  const CMLC_GEMM_N(kernel_t)* kern = CMLC_GEMM_N(select)(isa);
  const int64_t nr = kern->nr;
  const size_t bytes = (size_t)((p->n + nr - 1) / nr * nr) * (size_t)p->k * sizeof(CMLC_GEMM_T);
  if (!dst) return bytes;
  CMLC_GEMM_N(gemm_ctx_t) c;
  memset(&c, 0, sizeof c);
  c.p = p;
  c.kern = *kern;
  c.sz = CMLC_GEMM_N(gemm_sizes)(p->m, p->n, p->k, kern);
  c.b_packed = dst;
  CMLC_GEMM_N(gemm_access_t) acc = CMLC_GEMM_N(gemm_access)(&p->b, p->k, p->n, kern);
  if (p->b.dtype == CMLC_GEMM_DTYPE && acc.row_stride == 1 && acc.col_stride > 0 &&
      acc.col_stride <= INT32_MAX / 32)
    acc.pack_bt = kern->pack_bt;
  // Exactly the panels the blocked path packs per (jc, pc), one after another.
  for (int64_t jc = 0; jc < p->n; jc += c.sz.nc) {
    const int64_t nc = CMLC_GEMM_N(gemm_min)(c.sz.nc, p->n - jc);
    const int64_t slivers = (nc + nr - 1) / nr;
    for (int64_t pc = 0; pc < p->k; pc += c.sz.kc) {
      const int64_t kc = CMLC_GEMM_N(gemm_min)(c.sz.kc, p->k - pc);
      CMLC_GEMM_T* panel = (CMLC_GEMM_T*)CMLC_GEMM_N(gemm_packed_panel)(&c, jc, pc);
      CMLC_GEMM_N(gemm_pack_b)(&p->b, &acc, 0, jc, nc, pc, kc, (int)nr, 0, slivers, panel);
    }
  }
  return bytes;
}

#undef CMLC_GEMM_T
#undef CMLC_GEMM_SUFFIX
#undef CMLC_GEMM_DTYPE
#undef CMLC_GEMM_HALF_GEMV
#undef CMLC_GEMM_PROBLEM
#undef CMLC_GEMM_LOAD_CONV
#undef CMLC_GEMM_ENTRY
#undef CMLC_GEMM_ENTRY_SCRATCH
#undef CMLC_GEMM_ENTRY_PICK
#undef CMLC_GEMM_ENTRY_PREPACK
#undef CMLC_GEMM_FN
