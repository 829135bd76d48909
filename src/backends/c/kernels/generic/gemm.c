// SPDX-License-Identifier: Apache-2.0
// kernels/generic/gemm.c: the packed f32 GEMM (GotoBLAS style) behind DotGeneral, with the
// scalar micro-kernel; the AVX2 and AVX-512 micro-kernels live in kernels/x86_64/gemm_*.c.
//
// Loops, per batch: jc over N in NC-column blocks, pc over K in KC-deep blocks (sequential,
// so every output sums its k blocks in the same order), then output tiles of MC rows x a run
// of NR-column slivers. The B panel (KC x NC) is packed once per (jc, pc) into NR-column
// slivers; each tile task packs its A block (MC x KC) into MR-row slivers and runs the
// MR x NR micro-kernel over it. Tasks never split K, and a tile's arithmetic does not depend
// on which thread runs it, so results are identical for any thread count. Many small batched
// products run one whole batch per task instead.
#include "backends/c/kernels/generic/linalg_internal.h"

enum {
  CMLC_GEMM_KC = 256,
  CMLC_GEMM_MC = 96,  // a multiple of every MR (4, 6, 12)
  CMLC_GEMM_NC = 2048,  // a multiple of every NR (8, 16, 32)
  CMLC_GEMM_MR_MAX = 12,
  CMLC_GEMM_NR_MAX = 32,
};

//===--- micro-kernels ---===//

// Scalar 4 x 8 micro-kernel (the portable one).
static void cmlc_gemm_ukernel_scalar_4x8(int64_t kc, const float* a, const float* b, float* c,
                                         int64_t ldc, int accumulate) {
  float acc[4][8];
  memset(acc, 0, sizeof acc);
  for (int64_t k = 0; k < kc; ++k) {
    const float* ak = a + k * 4;
    const float* bk = b + k * 8;
    for (int r = 0; r < 4; ++r) {
      float av = ak[r];
      for (int j = 0; j < 8; ++j) acc[r][j] += av * bk[j];
    }
  }
  for (int r = 0; r < 4; ++r) {
    float* cr = c + r * ldc;
    if (accumulate) {
      for (int j = 0; j < 8; ++j) cr[j] += acc[r][j];
    } else {
      for (int j = 0; j < 8; ++j) cr[j] = acc[r][j];
    }
  }
}

typedef struct cmlc_gemm_kernel_t {
  int mr, nr;
  cmlc__gemm_ukernel_fn fn;
} cmlc_gemm_kernel_t;

static cmlc_gemm_kernel_t cmlc_gemm_select(cmlc_isa_t isa) {
#if defined(CMLC__GEMM_HAVE_X86)
  if (isa == CMLC_ISA_AVX512)
    return (cmlc_gemm_kernel_t){12, 32, cmlc__gemm_ukernel_f32_avx512_12x32};
  if (isa == CMLC_ISA_AVX2) return (cmlc_gemm_kernel_t){6, 16, cmlc__gemm_ukernel_f32_avx2_6x16};
#else
  (void)isa;
#endif
  return (cmlc_gemm_kernel_t){4, 8, cmlc_gemm_ukernel_scalar_4x8};
}

//===--- blocking ---===//

static int64_t cmlc_gemm_round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }
static int64_t cmlc_gemm_min(int64_t a, int64_t b) { return a < b ? a : b; }

typedef struct cmlc_gemm_sizes_t {
  int64_t kc, mc, nc;     // effective block sizes
  size_t a_floats;        // one packed A block
  size_t b_floats;        // one packed B panel
} cmlc_gemm_sizes_t;

static cmlc_gemm_sizes_t cmlc_gemm_sizes(int64_t m, int64_t n, int64_t k,
                                         const cmlc_gemm_kernel_t* kern) {
  cmlc_gemm_sizes_t s;
  s.kc = cmlc_gemm_min(CMLC_GEMM_KC, k > 0 ? k : 1);
  s.mc = cmlc_gemm_min(CMLC_GEMM_MC, cmlc_gemm_round_up(m > 0 ? m : 1, kern->mr));
  s.nc = cmlc_gemm_min(CMLC_GEMM_NC, cmlc_gemm_round_up(n > 0 ? n : 1, kern->nr));
  s.a_floats = (size_t)cmlc_gemm_round_up(s.mc * s.kc, 16);
  s.b_floats = (size_t)cmlc_gemm_round_up(s.kc * s.nc, 16);
  return s;
}

// Batch-parallel mode: many batches of small products.
static bool cmlc_gemm_batch_mode(int64_t batch, int64_t m, int64_t n, int64_t k, int threads) {
  if (batch < 2) return false;
  double work = (double)m * (double)n * (double)k;
  return batch >= 2 * (int64_t)threads || work < 64.0 * 64.0 * 64.0;
}

size_t cmlc__gemm_f32_scratch(int64_t batch, int64_t m, int64_t n, int64_t k, cmlc_isa_t isa,
                              int threads) {
  cmlc_gemm_kernel_t kern = cmlc_gemm_select(isa);
  cmlc_gemm_sizes_t s = cmlc_gemm_sizes(m, n, k, &kern);
  if (threads < 1) threads = 1;
  (void)batch;
  // Per thread: an A block and a private B panel (batch mode); plus one shared B panel.
  return ((size_t)threads * (s.a_floats + s.b_floats) + s.b_floats) * sizeof(float);
}

//===--- packing ---===//

// Packs A rows [ic, ic+mc) x k [pc, pc+kc) of batch |b| into MR-row slivers (zero padded).
static void cmlc_gemm_pack_a(const cmlc__gemm_operand_t* a, int64_t b, int64_t ic, int64_t mc,
                             int64_t pc, int64_t kc, int64_t m, int mr, float* dst) {
  const int64_t* cols = a->col_offsets + pc;
  int64_t boff = a->batch_offsets[b];
  for (int64_t i = 0; i < mc; i += mr) {
    float* sliver = dst + i * kc;
    for (int r = 0; r < mr; ++r) {
      int64_t row = ic + i + r;
      if (row >= m || i + r >= mc) {
        for (int64_t kk = 0; kk < kc; ++kk) sliver[kk * mr + r] = 0.0f;
        continue;
      }
      int64_t base = boff + a->row_offsets[row];
      if (a->dtype == CML_DTYPE_F32) {
        const float* src = (const float*)a->data + base;
        for (int64_t kk = 0; kk < kc; ++kk) sliver[kk * mr + r] = src[cols[kk]];
      } else {
        for (int64_t kk = 0; kk < kc; ++kk)
          sliver[kk * mr + r] = cmlc__la_load_f32(a->data, base + cols[kk], a->dtype);
      }
    }
  }
}

// Packs slivers [s0, s1) of B k [pc, pc+kc) x cols [jc, jc+nc) of batch |b|.
static void cmlc_gemm_pack_b(const cmlc__gemm_operand_t* bop, int64_t b, int64_t jc,
                             int64_t nc, int64_t pc, int64_t kc, int nr, int64_t s0, int64_t s1,
                             float* panel) {
  int64_t boff = bop->batch_offsets[b];
  for (int64_t s = s0; s < s1; ++s) {
    float* sliver = panel + s * nr * kc;
    int64_t col0 = s * nr;
    int64_t cols = cmlc_gemm_min(nr, nc - col0);
    const int64_t* coff = bop->col_offsets + jc + col0;
    for (int64_t kk = 0; kk < kc; ++kk) {
      int64_t base = boff + bop->row_offsets[pc + kk];
      float* d = sliver + kk * nr;
      if (bop->dtype == CML_DTYPE_F32) {
        const float* src = (const float*)bop->data + base;
        for (int64_t j = 0; j < cols; ++j) d[j] = src[coff[j]];
      } else {
        for (int64_t j = 0; j < cols; ++j)
          d[j] = cmlc__la_load_f32(bop->data, base + coff[j], bop->dtype);
      }
      for (int64_t j = cols; j < nr; ++j) d[j] = 0.0f;
    }
  }
}

//===--- compute ---===//

// Runs the micro-kernel over A block rows [0, mc) (packed in |ap|) and panel slivers [s0, s1).
static void cmlc_gemm_tiles(const cmlc__gemm_problem_t* p, const cmlc_gemm_kernel_t* kern,
                            int64_t b, int64_t ic, int64_t mc, int64_t jc, int64_t nc,
                            int64_t kc, bool accumulate, const float* ap, const float* panel,
                            int64_t s0, int64_t s1) {
  int mr = kern->mr, nr = kern->nr;
  int64_t ldc = p->n;
  float* cb = p->c + b * p->m * p->n;
  float tmp[CMLC_GEMM_MR_MAX * CMLC_GEMM_NR_MAX];
  for (int64_t s = s0; s < s1; ++s) {
    int64_t col0 = jc + s * nr;
    int64_t cols = cmlc_gemm_min(nr, jc + nc - col0);
    const float* bs = panel + s * nr * kc;
    for (int64_t i = 0; i < mc; i += mr) {
      int64_t row0 = ic + i;
      int64_t rows = cmlc_gemm_min(mr, cmlc_gemm_min(ic + mc, p->m) - row0);
      if (rows <= 0) break;
      const float* as = ap + i * kc;
      float* c = cb + row0 * ldc + col0;
      if (rows == mr && cols == nr) {
        kern->fn(kc, as, bs, c, ldc, accumulate);
        continue;
      }
      kern->fn(kc, as, bs, tmp, nr, 0);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < cols; ++j) {
          float v = tmp[r * nr + j];
          c[r * ldc + j] = accumulate ? c[r * ldc + j] + v : v;
        }
      }
    }
  }
}

// The whole product of batch |b| on the calling thread with private buffers.
static void cmlc_gemm_batch_serial(const cmlc__gemm_problem_t* p, const cmlc_gemm_kernel_t* kern,
                                   const cmlc_gemm_sizes_t* sz, int64_t b, float* abuf,
                                   float* panel) {
  for (int64_t jc = 0; jc < p->n; jc += sz->nc) {
    int64_t nc = cmlc_gemm_min(sz->nc, p->n - jc);
    int64_t slivers = (nc + kern->nr - 1) / kern->nr;
    for (int64_t pc = 0; pc < p->k; pc += sz->kc) {
      int64_t kc = cmlc_gemm_min(sz->kc, p->k - pc);
      cmlc_gemm_pack_b(&p->b, b, jc, nc, pc, kc, kern->nr, 0, slivers, panel);
      for (int64_t ic = 0; ic < p->m; ic += sz->mc) {
        int64_t mc = cmlc_gemm_min(sz->mc, p->m - ic);
        cmlc_gemm_pack_a(&p->a, b, ic, mc, pc, kc, p->m, kern->mr, abuf);
        cmlc_gemm_tiles(p, kern, b, ic, mc, jc, nc, kc, pc > 0, abuf, panel, 0, slivers);
      }
    }
  }
}

typedef struct cmlc_gemm_ctx_t {
  const cmlc__gemm_problem_t* p;
  cmlc_gemm_kernel_t kern;
  cmlc_gemm_sizes_t sz;
  float* scratch;  // per-thread blocks, then the shared panel
  int threads;
  // Tile mode state for the current (b, jc, pc).
  int64_t b, jc, nc, pc, kc;
  int64_t slivers, slivers_per_chunk, n_chunks;
  float* shared_panel;
} cmlc_gemm_ctx_t;

static float* cmlc_gemm_thread_a(cmlc_gemm_ctx_t* c, int thread_index) {
  return c->scratch + (size_t)thread_index * (c->sz.a_floats + c->sz.b_floats);
}

static void cmlc_gemm_batch_task(void* vctx, int64_t begin, int64_t end, int thread_index) {
  cmlc_gemm_ctx_t* c = vctx;
  float* abuf = cmlc_gemm_thread_a(c, thread_index);
  float* panel = abuf + c->sz.a_floats;
  for (int64_t b = begin; b < end; ++b) cmlc_gemm_batch_serial(c->p, &c->kern, &c->sz, b, abuf, panel);
}

static void cmlc_gemm_pack_b_task(void* vctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  cmlc_gemm_ctx_t* c = vctx;
  cmlc_gemm_pack_b(&c->p->b, c->b, c->jc, c->nc, c->pc, c->kc, c->kern.nr, begin, end,
                   c->shared_panel);
}

static void cmlc_gemm_tile_task(void* vctx, int64_t begin, int64_t end, int thread_index) {
  cmlc_gemm_ctx_t* c = vctx;
  float* abuf = cmlc_gemm_thread_a(c, thread_index);
  for (int64_t t = begin; t < end; ++t) {
    int64_t ib = t / c->n_chunks, chunk = t % c->n_chunks;
    int64_t ic = ib * c->sz.mc;
    int64_t mc = cmlc_gemm_min(c->sz.mc, c->p->m - ic);
    int64_t s0 = chunk * c->slivers_per_chunk;
    int64_t s1 = cmlc_gemm_min(c->slivers, s0 + c->slivers_per_chunk);
    cmlc_gemm_pack_a(&c->p->a, c->b, ic, mc, c->pc, c->kc, c->p->m, c->kern.mr, abuf);
    cmlc_gemm_tiles(c->p, &c->kern, c->b, ic, mc, c->jc, c->nc, c->kc, c->pc > 0, abuf,
                    c->shared_panel, s0, s1);
  }
}

void cmlc__gemm_f32(const cmlc__gemm_problem_t* p, cmlc_isa_t isa, cmlc_pool_t* pool,
                    void* scratch, int threads) {
  if (p->batch <= 0 || p->m <= 0 || p->n <= 0) return;
  if (p->k <= 0) {
    memset(p->c, 0, (size_t)(p->batch * p->m * p->n) * sizeof(float));
    return;
  }
  cmlc_gemm_ctx_t c;
  memset(&c, 0, sizeof c);
  c.p = p;
  c.kern = cmlc_gemm_select(isa);
  c.sz = cmlc_gemm_sizes(p->m, p->n, p->k, &c.kern);
  c.scratch = scratch;
  c.threads = threads < 1 ? 1 : threads;
  int pool_threads = cmlc_pool_thread_count(pool);
  if (pool_threads > c.threads) pool = NULL, pool_threads = 1;
  c.shared_panel = c.scratch + (size_t)c.threads * (c.sz.a_floats + c.sz.b_floats);
  double flops = 2.0 * (double)p->m * (double)p->n * (double)p->k;
  if (flops * (double)p->batch < 2.0 * 64 * 64 * 64) pool = NULL, pool_threads = 1;

  if (cmlc_gemm_batch_mode(p->batch, p->m, p->n, p->k, pool_threads)) {
    int64_t min_chunk = (int64_t)(2.0 * 64 * 64 * 64 / (flops > 1 ? flops : 1)) + 1;
    cmlc_parallel_for(pool, p->batch, min_chunk, cmlc_gemm_batch_task, &c);
    return;
  }
  int64_t ic_blocks = (p->m + c.sz.mc - 1) / c.sz.mc;
  for (int64_t b = 0; b < p->batch; ++b) {
    c.b = b;
    for (int64_t jc = 0; jc < p->n; jc += c.sz.nc) {
      c.jc = jc;
      c.nc = cmlc_gemm_min(c.sz.nc, p->n - jc);
      c.slivers = (c.nc + c.kern.nr - 1) / c.kern.nr;
      int64_t want = 4 * (int64_t)pool_threads;
      int64_t n_chunks = (want + ic_blocks - 1) / ic_blocks;
      if (n_chunks < 1) n_chunks = 1;
      if (n_chunks > c.slivers) n_chunks = c.slivers;
      c.slivers_per_chunk = (c.slivers + n_chunks - 1) / n_chunks;
      c.n_chunks = (c.slivers + c.slivers_per_chunk - 1) / c.slivers_per_chunk;
      for (int64_t pc = 0; pc < p->k; pc += c.sz.kc) {
        c.pc = pc;
        c.kc = cmlc_gemm_min(c.sz.kc, p->k - pc);
        int64_t pack_chunk = (int64_t)(16384 / (c.kc * c.kern.nr)) + 1;
        cmlc_parallel_for(pool, c.slivers, pack_chunk, cmlc_gemm_pack_b_task, &c);
        cmlc_parallel_for(pool, ic_blocks * c.n_chunks, 1, cmlc_gemm_tile_task, &c);
      }
    }
  }
}
