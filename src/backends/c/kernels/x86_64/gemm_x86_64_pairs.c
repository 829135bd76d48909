// SPDX-License-Identifier: Apache-2.0
// kernels/x86_64/gemm_x86_64_pairs.c: the cache-blocked driver of the k-pair GEMMs (16-bit
// operands, two products added per 32-bit lane): the bf16 GEMM (vdpbf16ps,
// gemm_x86_64_avx512bf16.c) and the integer GEMM (vpdpwssd / vpmaddwd, gemm_x86_64_int16.c).
// Each brings its packing and micro-kernel in a cmlc__gemm_pairs_kernels_t; this file owns the
// blocking, the thread split and the batch mode. Plain C: it needs no ISA flags.
//
// Loops, per batch: jc over N in NC-column blocks, pc over K in KC-deep blocks (sequential,
// accumulated in the same order for every tile), then tasks of (MC-row block of A, run of B
// slivers) on the pool: a task packs its A block and runs the micro-kernel; the B panel is
// packed once per (jc, pc) by all threads. Tasks never split K and a tile's arithmetic does not
// depend on its place or thread, so the result does not depend on the thread count.
//
// Thread-safety: reentrant; no state.
#include "backends/c/kernels/generic/linalg_internal.h"

#if defined(CMLC_HAVE_X86_64)

enum {
  CMLC_PAIRS_MR = CMLC__GEMM_PAIRS_MR,
  CMLC_PAIRS_NR = CMLC__GEMM_PAIRS_NR,
  // k values per block (even): 256 pairs. The packed B sliver (256 pairs x 32 columns, 32 KiB)
  // is re-read from L1/L2 by every A sliver of the block; a K up to 512 is one block, so a bf16
  // output needs no f32 partial sums. (KC 256 / MC 288 measured the same on Zen 4 for bf16.)
  CMLC_PAIRS_KC = 512,
  CMLC_PAIRS_MC = 144,   // a multiple of MR; the A block (144 x 256 pairs, 144 KiB) stays in L2
  CMLC_PAIRS_NC = 2048,  // a multiple of NR
};

static int64_t cmlc_pairs_min(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t cmlc_pairs_round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

// Returns the stride when offsets[i] == i * stride for all i < count, else NOT_AFFINE.
static int64_t cmlc_pairs_affine(const int64_t* offsets, int64_t count) {
  if (count <= 1) return 0;
  const int64_t stride = offsets[1] - offsets[0];
  if (offsets[0] != 0) return CMLC__GEMM_PAIRS_NOT_AFFINE;
  for (int64_t i = 2; i < count; ++i)
    if (offsets[i] != i * stride) return CMLC__GEMM_PAIRS_NOT_AFFINE;
  return stride;
}

typedef struct cmlc_pairs_ctx_t {
  const cmlc__gemm_pairs_kernels_t* kern;
  const cmlc__gemm_pairs_problem_t* p;
  cmlc__gemm_pairs_access_t acc;
  int64_t kc_max, mc_max, nc_max;
  int k_per_word;           // k values per packed word: 2 (pairs) or 1
  size_t a_words, b_words;  // words per A block and per B panel
  void* scratch;
  int64_t bt, jc, nc, pc, kc;
  int64_t slivers, slivers_per_chunk, n_chunks;
  uint32_t* panel;
  // Several tasks share each A block (its B slivers split among them): every A block of the
  // current (bt, pc) is packed once, block ib into thread ib's A buffer, before the tile tasks.
  bool a_shared;
  int64_t a_slivers;  // MR-row slivers per A block
} cmlc_pairs_ctx_t;

// Block sizes for |k_per_word| k values per word: a k block is at most KC / 2 words deep
// either way (KC values as pairs, KC / 2 values one per word), so the buffers are the same.
static void cmlc_pairs_sizes(int64_t m, int64_t n, int64_t k, int k_per_word, cmlc_pairs_ctx_t* c) {
  const int64_t kk = k > 0 ? k : 1;
  c->k_per_word = k_per_word;
  c->kc_max = k_per_word == 2 ? cmlc_pairs_min(CMLC_PAIRS_KC, cmlc_pairs_round_up(kk, 2))
                              : cmlc_pairs_min(CMLC_PAIRS_KC / 2, kk);
  c->mc_max = cmlc_pairs_min(CMLC_PAIRS_MC, cmlc_pairs_round_up(m > 0 ? m : 1, CMLC_PAIRS_MR));
  c->nc_max = cmlc_pairs_min(CMLC_PAIRS_NC, cmlc_pairs_round_up(n > 0 ? n : 1, CMLC_PAIRS_NR));
  c->a_words = (size_t)cmlc_pairs_round_up(c->mc_max * (c->kc_max / k_per_word), 16);
  c->b_words = (size_t)cmlc_pairs_round_up(c->kc_max / k_per_word * c->nc_max, 16);
}

// Words of a k block of |kc| values.
static int64_t cmlc_pairs_words(const cmlc_pairs_ctx_t* c) {
  return (c->kc + c->k_per_word - 1) / c->k_per_word;
}

size_t cmlc__gemm_pairs_scratch(int64_t m, int64_t n, int64_t k, int k_per_word, int threads) {
  cmlc_pairs_ctx_t c;
  cmlc_pairs_sizes(m, n, k, k_per_word == 1 ? 1 : 2, &c);
  if (threads < 1) threads = 1;
  // Per thread an A block and a private B panel (batch mode), then the shared B panel.
  return ((size_t)threads * (c.a_words + c.b_words) + c.b_words) * sizeof(uint32_t) + 64;
}

static void cmlc_pairs_pack_b_task(void* vctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const cmlc_pairs_ctx_t* c = vctx;
  c->kern->pack_b(&c->p->b, &c->acc, c->bt, c->jc, c->nc, c->pc, c->kc, begin, end, c->panel);
}

// a_shared: packs MR-row slivers [begin, end) of the A blocks (block t / a_slivers).
static void cmlc_pairs_pack_a_task(void* vctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const cmlc_pairs_ctx_t* c = vctx;
  const int64_t kp = cmlc_pairs_words(c);
  for (int64_t t = begin; t < end; ++t) {
    const int64_t ib = t / c->a_slivers, s = t % c->a_slivers;
    const int64_t ic = ib * c->mc_max + s * CMLC_PAIRS_MR;
    const int64_t block_end = cmlc_pairs_min(ib * c->mc_max + c->mc_max, c->p->m);
    if (ic >= block_end) continue;
    uint32_t* dst = (uint32_t*)c->scratch + (size_t)ib * c->a_words + s * CMLC_PAIRS_MR * kp;
    c->kern->pack_a(&c->p->a, &c->acc, c->bt, ic, cmlc_pairs_min(CMLC_PAIRS_MR, block_end - ic),
                    c->pc, c->kc, dst);
  }
}

static void cmlc_pairs_tile_task(void* vctx, int64_t begin, int64_t end, int thread_index) {
  const cmlc_pairs_ctx_t* c = vctx;
  const cmlc__gemm_pairs_problem_t* p = c->p;
  uint32_t* abuf = (uint32_t*)c->scratch + (size_t)thread_index * c->a_words;
  const int64_t kp = cmlc_pairs_words(c);
  uint32_t* cb = (uint32_t*)p->c + c->bt * p->m * p->n;
  // The last k block stores straight into |out| when there is one.
  uint16_t* ob = p->out && c->pc + c->kc >= p->k ? p->out + c->bt * p->m * p->n : NULL;
  for (int64_t t = begin; t < end; ++t) {
    const int64_t ib = t / c->n_chunks, chunk = t % c->n_chunks;
    const int64_t ic = ib * c->mc_max;
    const int64_t mc = cmlc_pairs_min(c->mc_max, p->m - ic);
    const int64_t s0 = chunk * c->slivers_per_chunk;
    const int64_t s1 = cmlc_pairs_min(c->slivers, s0 + c->slivers_per_chunk);
    if (c->a_shared) {
      abuf = (uint32_t*)c->scratch + (size_t)ib * c->a_words;
    } else {
      c->kern->pack_a(&p->a, &c->acc, c->bt, ic, mc, c->pc, c->kc, abuf);
    }
    for (int64_t s = s0; s < s1; ++s) {
      const int64_t col0 = c->jc + s * CMLC_PAIRS_NR;
      const int cols = (int)cmlc_pairs_min(CMLC_PAIRS_NR, c->jc + c->nc - col0);
      const uint32_t* bs = c->panel + s * kp * CMLC_PAIRS_NR;
      for (int64_t i = 0; i < mc; i += CMLC_PAIRS_MR) {
        const int rows = (int)cmlc_pairs_min(CMLC_PAIRS_MR, mc - i);
        const int64_t at = (ic + i) * p->n + col0;
        c->kern->ukernel(kp, abuf + i * kp, bs, cb + at, p->n, c->pc > 0, ob ? ob + at : NULL, p->n,
                         rows, cols);
      }
    }
  }
}

// One batch element's product on the calling thread (batch mode), with that thread's A block
// and B panel (the same blocking, so the same results as the shared path).
static void cmlc_pairs_product(cmlc_pairs_ctx_t* c, int64_t bt, uint32_t* abuf, uint32_t* panel) {
  const cmlc__gemm_pairs_problem_t* p = c->p;
  c->bt = bt;
  c->panel = panel;
  c->n_chunks = 1;
  c->a_shared = false;
  const int64_t ic_blocks = (p->m + c->mc_max - 1) / c->mc_max;
  for (int64_t jc = 0; jc < p->n; jc += c->nc_max) {
    c->jc = jc;
    c->nc = cmlc_pairs_min(c->nc_max, p->n - jc);
    c->slivers = (c->nc + CMLC_PAIRS_NR - 1) / CMLC_PAIRS_NR;
    c->slivers_per_chunk = c->slivers;
    for (int64_t pc = 0; pc < p->k; pc += c->kc_max) {
      c->pc = pc;
      c->kc = cmlc_pairs_min(c->kc_max, p->k - pc);
      c->kern->pack_b(&p->b, &c->acc, bt, jc, c->nc, pc, c->kc, 0, c->slivers, panel);
      // The tile task with thread index 0 reads the A buffer at scratch + 0: point it here.
      cmlc_pairs_ctx_t one = *c;
      one.scratch = abuf;
      cmlc_pairs_tile_task(&one, 0, ic_blocks, 0);
    }
  }
}

// Batch mode: whole products of batch elements [begin, end) on one thread.
static void cmlc_pairs_batch_task(void* vctx, int64_t begin, int64_t end, int thread_index) {
  const cmlc_pairs_ctx_t* shared = vctx;
  cmlc_pairs_ctx_t c = *shared;
  uint32_t* abuf = (uint32_t*)shared->scratch + (size_t)thread_index * (c.a_words + c.b_words);
  uint32_t* panel = abuf + c.a_words;
  for (int64_t bt = begin; bt < end; ++bt) cmlc_pairs_product(&c, bt, abuf, panel);
}

void cmlc__gemm_pairs(const cmlc__gemm_pairs_kernels_t* kern, const cmlc__gemm_pairs_problem_t* p,
                      cmlc_pool_t* pool, void* scratch, int threads) {
  if (p->batch <= 0 || p->m <= 0 || p->n <= 0) return;
  if (p->k <= 0) {
    if (p->out) {
      memset(p->out, 0, (size_t)(p->batch * p->m * p->n) * sizeof(uint16_t));
    } else {
      memset(p->c, 0, (size_t)(p->batch * p->m * p->n) * sizeof(uint32_t));
    }
    return;
  }
  cmlc_pairs_ctx_t c;
  memset(&c, 0, sizeof c);
  c.kern = kern;
  c.p = p;
  c.acc.a_row = cmlc_pairs_affine(p->a.row_offsets, p->m);
  c.acc.a_col = cmlc_pairs_affine(p->a.col_offsets, p->k);
  c.acc.b_row = cmlc_pairs_affine(p->b.row_offsets, p->k);
  c.acc.b_col = cmlc_pairs_affine(p->b.col_offsets, p->n);
  cmlc_pairs_sizes(p->m, p->n, p->k, kern->k_per_word, &c);
  if (threads < 1) threads = 1;
  int pool_threads = cmlc_pool_thread_count(pool);
  if (pool_threads > threads) pool = NULL, pool_threads = 1;
  c.scratch = scratch;
  // Many small products: one per task, each on one thread (a product up to 128^3 would
  // otherwise run alone on the calling thread, batch element after batch element).
  const double work = (double)p->m * (double)p->n * (double)p->k;
  const int batch_threads = cmlc_pool_thread_count(pool);
  if (p->batch >= 2 && batch_threads > 1 && batch_threads <= threads &&
      (double)p->batch * work > 128.0 * 128.0 * 128.0 &&
      (p->batch >= 2 * (int64_t)batch_threads || work <= 128.0 * 128.0 * 128.0)) {
    const int64_t min_chunk = (int64_t)(2.0 * 64 * 64 * 64 / (2.0 * work > 1 ? 2.0 * work : 1)) + 1;
    cmlc_parallel_for(pool, p->batch, min_chunk, cmlc_pairs_batch_task, &c);
    return;
  }
  // Up to 128^3 a product stays on the calling thread (a hand-off costs more than it saves).
  if (2.0 * (double)p->m * (double)p->n * (double)p->k <= 2.0 * 128 * 128 * 128) {
    pool = NULL, pool_threads = 1;
  }
  c.panel = (uint32_t*)scratch + (size_t)threads * (c.a_words + c.b_words);
  // Row blocks that split evenly over the threads (1536 rows on 2: 96 instead of 144 rows;
  // cmlc__gemm_row_block), within the A buffers sized for CMLC_PAIRS_MC.
  if (pool_threads > 1)
    c.mc_max = cmlc__gemm_row_block(p->m, CMLC_PAIRS_MR, c.mc_max, pool_threads);
  const int64_t ic_blocks = (p->m + c.mc_max - 1) / c.mc_max;
  for (int64_t bt = 0; bt < p->batch; ++bt) {
    c.bt = bt;
    for (int64_t jc = 0; jc < p->n; jc += c.nc_max) {
      c.jc = jc;
      c.nc = cmlc_pairs_min(c.nc_max, p->n - jc);
      c.slivers = (c.nc + CMLC_PAIRS_NR - 1) / CMLC_PAIRS_NR;
      // Enough tasks for the pool; the split changes which thread computes a tile, never how.
      const int64_t want = 4 * (int64_t)pool_threads;
      int64_t n_chunks = pool_threads > 1 ? (want + ic_blocks - 1) / ic_blocks : 1;
      if (n_chunks < 1) n_chunks = 1;
      if (n_chunks > c.slivers) n_chunks = c.slivers;
      c.slivers_per_chunk = (c.slivers + n_chunks - 1) / n_chunks;
      c.n_chunks = (c.slivers + c.slivers_per_chunk - 1) / c.slivers_per_chunk;
      // Tasks that split one A block's slivers would each pack that block again: pack every
      // block once first (in parallel), one block per thread's A buffer.
      c.a_shared = c.n_chunks > 1 && ic_blocks <= (int64_t)threads;
      c.a_slivers = (c.mc_max + CMLC_PAIRS_MR - 1) / CMLC_PAIRS_MR;
      for (int64_t pc = 0; pc < p->k; pc += c.kc_max) {
        c.pc = pc;
        c.kc = cmlc_pairs_min(c.kc_max, p->k - pc);
        const int64_t pack_chunk = 16384 / (c.kc * CMLC_PAIRS_NR) + 1;
        cmlc_parallel_for(pool, c.slivers, pack_chunk, cmlc_pairs_pack_b_task, &c);
        if (c.a_shared) {
          const int64_t a_chunk = 16384 / (c.kc * CMLC_PAIRS_MR) + 1;
          cmlc_parallel_for(pool, ic_blocks * c.a_slivers, a_chunk, cmlc_pairs_pack_a_task, &c);
        }
        cmlc_parallel_for(pool, ic_blocks * c.n_chunks, 1, cmlc_pairs_tile_task, &c);
      }
    }
  }
}

#endif  // CMLC_HAVE_X86_64
