// SPDX-License-Identifier: Apache-2.0
// kernels/generic/fused_attention.c: the native FusedScaledDotProductAttention of the "fused"
// kernel group (cml/fused.h; looked up through kernels/generic/fused.c).
//
// A flash-attention style kernel: a task is one (batch, query head, tile of CMLC_FA_BQ query
// rows); it walks the keys in tiles of CMLC_FA_BK, computes the tile's scores, applies scale,
// bias, masks, causality and the sequence lengths exactly as the decomposition
// (src/core/fused.c) does, and keeps per row a running max, a running sum and an unnormalized
// output (online softmax), so the full [seq, kv_seq] score matrix never exists: scratch is
// O(threads x tile x head dim), independent of the sequence lengths. Both layouts (BHSD, BSHD)
// and grouped-query attention are read in place through strides; masks and biases broadcast
// through zero strides.
//
// Computation: Float32, Float16 and BFloat16 in f32 (half results rounded once at the store),
// Float64 in f64. The body (fused_attention_impl.h) uses GCC vector extensions: 16-byte vectors
// here (portable), 32- and 64-byte ones in the AVX2 and AVX-512 variants
// (kernels/x86_64/fused_attention_x86_64.c), picked by options->isa. Float exponentials are a
// vector polynomial, f64 ones libm's exp. Each row is computed by one task in a fixed order, so
// results do not depend on the thread count.
//
// Semantics shared with the decomposition: a row whose keys are all masked (boolean mask,
// causal, kv_seq_len, or -inf additive entries) produces zeros, never NaN; rows at or past
// query_seq_len[b] produce zeros; lengths are clamped to [0, seq]. NaN scores propagate to
// their row. Differences are rounding only: the decomposition normalizes the probabilities
// before the product with v and (for f16/bf16) rounds every intermediate to the dtype; bounds
// are in tests/unit/fused_attention_test.c and docs/attention.md.
#include "backends/c/kernels/generic/fused_attention.h"
#include "backends/c/kernels/generic/linalg_internal.h"
#include "cml/fused.h"

// Portable variants: 16-byte vectors, which every target lowers natively (SSE2, NEON).
typedef float cmlc_fa_v4f __attribute__((vector_size(16)));
typedef int32_t cmlc_fa_v4i __attribute__((vector_size(16)));
typedef double cmlc_fa_v2d __attribute__((vector_size(16)));
typedef int64_t cmlc_fa_v2l __attribute__((vector_size(16)));

#define CMLC_FA_T float
#define CMLC_FA_NATIVE CML_DTYPE_F32
#define CMLC_FA_V cmlc_fa_v4f
#define CMLC_FA_IV cmlc_fa_v4i
#define CMLC_FA_VEXP 1
#define CMLC_FA_W 4
#define CMLC_FA_EXP expf
#define CMLC_FA_LOAD cmlc__fa_load_f32
#define CMLC_FA_STORE cmlc__fa_store_f32
#define CMLC_FA_NAME(x) cmlc_fa_##x##_f32
#define CMLC_FA_LINKAGE static
#define CMLC_FA_ATTR
#include "backends/c/kernels/generic/fused_attention_impl.h"
#include "backends/c/kernels/generic/fused_attention_bwd_impl.h"
#include "backends/c/kernels/generic/fused_attention_undef.h"

#define CMLC_FA_T double
#define CMLC_FA_NATIVE CML_DTYPE_F64
#define CMLC_FA_V cmlc_fa_v2d
#define CMLC_FA_IV cmlc_fa_v2l
#define CMLC_FA_VEXP 0
#define CMLC_FA_W 2
#define CMLC_FA_EXP exp
#define CMLC_FA_LOAD cmlc_load_f64
#define CMLC_FA_STORE cmlc_store_f64
#define CMLC_FA_NAME(x) cmlc_fa_##x##_f64
#define CMLC_FA_LINKAGE static
#define CMLC_FA_ATTR
#include "backends/c/kernels/generic/fused_attention_impl.h"
#include "backends/c/kernels/generic/fused_attention_bwd_impl.h"
#include "backends/c/kernels/generic/fused_attention_undef.h"

static size_t cmlc_fa_align(size_t x) { return cmlc_size_align(x, 64); }  // saturating

// |off| plus |bytes|, rounded up to 64 bytes; saturates at SIZE_MAX (see cmlc_size_add).
static size_t cmlc_fa_next(size_t off, size_t bytes) {
  return cmlc_fa_align(cmlc_size_add(off, bytes));
}

// Lays out one thread's scratch for head dims |d| and |dv| in elements of |elem| bytes.
static void cmlc_fa_layout(cmlc_fa_ctx_t* c, size_t elem) {
  size_t off = 0;
  c->off_q = off;
  // q rows: [BQ, d] in the tiled path, [DEC_ROWS, dqp] (zero-padded) in the decode path.
  const size_t q_tiled = cmlc_size_of(CMLC_FA_BQ * c->d, elem);
  const size_t q_decode = cmlc_size_of(CMLC_FA_DEC_ROWS * c->dqp, elem);
  off = cmlc_fa_next(off, q_tiled > q_decode ? q_tiled : q_decode);
  c->off_kb = off;
  off = cmlc_fa_next(off, cmlc_size_of(CMLC_FA_BK * c->dqp, elem));
  c->off_tag = off;
  off = cmlc_fa_next(off, sizeof(int64_t));
  c->off_k = off;
  const int64_t kv_tiles = (c->kv_seq + CMLC_FA_BK - 1) / CMLC_FA_BK;
  off = cmlc_fa_next(
      off, cmlc_size_mul(cmlc_size_of(kv_tiles, 1), cmlc_size_of(c->d * CMLC_FA_BK, elem)));
  c->off_v = off;
  off = cmlc_fa_next(off, cmlc_size_of(CMLC_FA_BK * c->dvp, elem));
  c->off_s = off;
  off = cmlc_fa_next(off, cmlc_size_of(CMLC_FA_BQ * CMLC_FA_BK, elem));
  c->off_o = off;
  off = cmlc_fa_next(off, cmlc_size_of(CMLC_FA_BQ * c->dvp, elem));
  c->off_m = off;
  off = cmlc_fa_next(off, cmlc_size_of(2 * CMLC_FA_BQ, elem));
  c->per_thread = off;
}

// Fills the shape part of |c| from q, k, v and the node's layout.
static void cmlc_fa_shapes(cmlc_fa_ctx_t* c, const cml_shape_t* qs, const cml_shape_t* ks,
                           const cml_shape_t* vs, int32_t layout) {
  const int ha = layout == CML_ATTENTION_LAYOUT_BHSD ? 1 : 2, sa = 3 - ha;
  c->dtype = qs->dtype;
  c->heads = qs->dims[ha];
  c->groups = ks->dims[ha] > 0 ? c->heads / ks->dims[ha] : 1;
  if (c->groups < 1) c->groups = 1;
  c->seq = qs->dims[sa];
  c->kv_seq = ks->dims[sa];
  c->d = qs->dims[3];
  c->dv = vs->dims[3];
  c->dvp = (c->dv + 15) & ~(int64_t)15;
  c->dqp = (c->d + 15) & ~(int64_t)15;
  c->q_tiles = (c->seq + CMLC_FA_BQ - 1) / CMLC_FA_BQ;
}

static int cmlc_fa_threads(const cmlc_options_t* options) {
  return options->threads > 0 ? options->threads : 1;
}

size_t cmlc__fa_scratch(const cml_module_t* module, const cml_ir_node_t* node,
                        const cmlc_options_t* options) {
  cmlc_fa_ctx_t c;
  memset(&c, 0, sizeof c);
  const cml_shape_t* qs = &module->values[node->inputs[0]].shape;
  cmlc_fa_shapes(&c, qs, &module->values[node->inputs[1]].shape,
                 &module->values[node->inputs[2]].shape, node->attrs->fused.layout);
  cmlc_fa_layout(&c, qs->dtype == CML_DTYPE_F64 ? sizeof(double) : sizeof(float));
  return cmlc_size_mul(c.per_thread, (size_t)cmlc_fa_threads(options));
}

// Strides of [batch, heads, seq] of a rank-4 operand in |layout| (head dim contiguous).
static void cmlc_fa_strides(const cml_shape_t* s, int32_t layout, int64_t out[3]) {
  int64_t st[4];
  st[3] = 1;
  for (int d = 2; d >= 0; --d) st[d] = st[d + 1] * s->dims[d + 1];
  out[0] = st[0];
  out[1] = layout == CML_ATTENTION_LAYOUT_BHSD ? st[1] : st[2];
  out[2] = layout == CML_ATTENTION_LAYOUT_BHSD ? st[2] : st[1];
}

// Strides of a rank 2..4 mask or bias broadcast (right aligned) to [B, H, S, Skv].
static void cmlc_fa_bcast_strides(const cml_shape_t* s, int64_t out[4]) {
  int64_t st = 1;
  for (int d = 3; d >= 0; --d) {
    int sd = d - (4 - s->rank);
    if (sd < 0 || s->dims[sd] == 1) {
      out[d] = 0;
    } else {
      out[d] = st;
    }
    if (sd >= 0) st *= s->dims[sd];
  }
}

int cmlc__fa_key_axis(int32_t layout) { return layout == CML_ATTENTION_LAYOUT_BHSD ? 2 : 1; }

// Fills |parts| from the |count| inputs of |args| starting at |first| (the operands of a
// Concatenate along the key axis, or the one operand), and |whole| with the shape of their
// concatenation. INVALID_ARGUMENT when they cannot be one operand.
static cml_status_t cmlc_fa_parts(const cmlc_kernel_args_t* args, uint32_t first, uint32_t count,
                                  int32_t layout, const char* what, cmlc_fa_parts_t* parts,
                                  cml_shape_t* whole) {
  const int sa = cmlc__fa_key_axis(layout);
  if (count < 1 || count > CMLC_FA_MAX_PARTS || first + count > args->input_count) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "FusedScaledDotProductAttention: %s in %u parts (1 to %d)", what, count,
                           CMLC_FA_MAX_PARTS);
  }
  *whole = *args->input_shapes[first];
  parts->count = (int)count;
  parts->start[0] = 0;
  for (uint32_t p = 0; p < count; ++p) {
    const cml_shape_t* s = args->input_shapes[first + p];
    bool same = s->dtype == whole->dtype && s->rank == 4;
    for (int a = 0; same && a < 4; ++a) same = a == sa || s->dims[a] == whole->dims[a];
    if (!same) {
      char t0[128], t1[128];
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                             "FusedScaledDotProductAttention: part %u %s of %s does not extend "
                             "part 0 %s along the key axis %d",
                             p, cml_shape_format(s, t1, sizeof t1), what,
                             cml_shape_format(args->input_shapes[first], t0, sizeof t0), sa);
    }
    parts->data[p] = args->inputs[first + p];
    cmlc_fa_strides(s, layout, parts->str[p]);
    parts->start[p + 1] = parts->start[p] + s->dims[sa];
  }
  whole->dims[sa] = parts->start[count];
  return CML_OK;
}

static void cmlc_fa_tasks(void* vctx, int64_t begin, int64_t end, int thread_index) {
  const cmlc_fa_ctx_t* c = vctx;
  for (int64_t t = begin; t < end; ++t) {
    const bool f64 = c->dtype == CML_DTYPE_F64;
#if defined(CMLC_HAVE_X86_64)
    if (c->isa >= CMLC_ISA_AVX512) {
      f64 ? cmlc__fa_task_f64_avx512(c, t, thread_index)
          : cmlc__fa_task_f32_avx512(c, t, thread_index);
      continue;
    }
    if (c->isa >= CMLC_ISA_AVX2) {
      f64 ? cmlc__fa_task_f64_avx2(c, t, thread_index) : cmlc__fa_task_f32_avx2(c, t, thread_index);
      continue;
    }
#endif
    f64 ? cmlc_fa_task_f64(c, t, thread_index) : cmlc_fa_task_f32(c, t, thread_index);
  }
}

cml_status_t cmlc__fa_run(const cmlc_kernel_args_t* args) {
  const cml_ir_attrs_t* attrs = args->node->attrs;
  const int32_t layout = attrs->fused.layout;
  const cml_shape_t* qs = args->input_shapes[0];
  cmlc_fa_ctx_t c;
  memset(&c, 0, sizeof c);
  // k and v: one input each, or (input_parts) the parts of each.
  const uint32_t k_parts = args->input_parts ? args->input_parts[1] : 1;
  const uint32_t v_parts = args->input_parts ? args->input_parts[2] : 1;
  cml_shape_t ks, vs;
  CML_RETURN_IF_ERROR(cmlc_fa_parts(args, 1, k_parts, layout, "k", &c.kp, &ks));
  CML_RETURN_IF_ERROR(cmlc_fa_parts(args, 1 + k_parts, v_parts, layout, "v", &c.vp, &vs));
  cmlc_fa_shapes(&c, qs, &ks, &vs, layout);
  cmlc_fa_layout(&c, qs->dtype == CML_DTYPE_F64 ? sizeof(double) : sizeof(float));
  c.scale = attrs->fused.scale;
  c.isa = args->options->reference ? CMLC_ISA_SCALAR : args->options->isa;
  c.causal = attrs->fused.causal;
  cmlc_fa_strides(qs, layout, c.q_str);
  memcpy(c.k_str, c.kp.str[0], sizeof c.k_str);
  memcpy(c.v_str, c.vp.str[0], sizeof c.v_str);
  cmlc_fa_strides(args->output_shapes[0], layout, c.o_str);
  c.q = args->inputs[0];
  c.k = c.kp.data[0];
  c.v = c.vp.data[0];
  c.out = args->outputs[0];
  c.lse = args->output_count > 1 ? args->outputs[1] : NULL;
  c.lse_read = args->impl[0] != NULL;  // the lookup's mark (cmlc__fa_lse_read)
  uint32_t next = 1 + k_parts + v_parts;
  const uint32_t present = attrs->fused.optional_inputs;
  if (present & 1u) {
    c.mask_bool = args->input_shapes[next]->dtype == CML_DTYPE_BOOL;
    cmlc_fa_bcast_strides(args->input_shapes[next], c.mask_str);
    c.mask = args->inputs[next++];
  }
  if (present & 2u) {
    cmlc_fa_bcast_strides(args->input_shapes[next], c.bias_str);
    c.bias = args->inputs[next++];
  }
  if (present & 4u) {
    c.q_len = args->inputs[next++];
    c.kv_len = args->inputs[next++];
  }
  c.scratch = args->scratch;
  const int64_t batch = qs->dims[0];
  const int64_t tasks = batch * c.heads * c.q_tiles;
  // With dv = 0 there is no output to write, but a requested logsumexp still is.
  if (tasks == 0 || (c.dv == 0 && !c.lse)) return CML_OK;
  // No thread holds a transposed k yet (the scratch may hold a previous run's).
  for (int t = 0; t < cmlc_fa_threads(args->options); ++t)
    *(int64_t*)(c.scratch + (size_t)t * c.per_thread + c.off_tag) = 0;
  cmlc_pool_t* pool = args->pool;
  if (cmlc_pool_thread_count(pool) > cmlc_fa_threads(args->options)) pool = NULL;
  cmlc_parallel_for(pool, tasks, 1, cmlc_fa_tasks, &c);
  return CML_OK;
}

bool cmlc__fa_valid(const cml_module_t* module, const cml_ir_node_t* node) {
  const cml_ir_attrs_t* attrs = node->attrs;
  const uint32_t present = attrs->fused.optional_inputs;
  uint32_t want = 3u + (present & 1u) + ((present >> 1) & 1u) + ((present & 4u) ? 2u : 0u);
  if (node->input_count != want || node->output_count < 1 || node->output_count > 2) return false;
  const cml_shape_t* qs = &module->values[node->inputs[0]].shape;
  const cml_dtype_t dt = qs->dtype;
  if (!cml_dtype_is_float(dt)) return false;
  for (uint32_t i = 0; i < 3; ++i) {
    const cml_shape_t* s = &module->values[node->inputs[i]].shape;
    if (s->dtype != dt || s->rank != 4) return false;
  }
  if (module->values[node->first_output].shape.dtype != dt) return false;
  if (node->output_count == 2 && module->values[node->first_output + 1].shape.dtype !=
                                     (dt == CML_DTYPE_F64 ? CML_DTYPE_F64 : CML_DTYPE_F32))
    return false;
  uint32_t next = 3;
  if (present & 1u) {
    const cml_shape_t* s = &module->values[node->inputs[next++]].shape;
    if ((s->dtype != dt && s->dtype != CML_DTYPE_BOOL) || s->rank < 2 || s->rank > 4) return false;
  }
  if (present & 2u) {
    const cml_shape_t* s = &module->values[node->inputs[next++]].shape;
    if (s->dtype != dt || s->rank < 2 || s->rank > 4) return false;
  }
  if (present & 4u) {
    for (int i = 0; i < 2; ++i) {
      if (module->values[node->inputs[next++]].shape.dtype != CML_DTYPE_I32) return false;
    }
  }
  return attrs->fused.layout == CML_ATTENTION_LAYOUT_BHSD ||
         attrs->fused.layout == CML_ATTENTION_LAYOUT_BSHD;
}

bool cmlc__fa_lse_read(const cml_module_t* module, const cml_ir_node_t* node) {
  if (node->output_count < 2) return false;
  const uint32_t lse = node->first_output + 1;
  for (uint32_t i = 0; i < module->node_count; ++i) {
    const cml_ir_node_t* n = &module->nodes[i];
    for (uint32_t k = 0; k < n->input_count; ++k) {
      if (n->inputs[k] == lse) return true;
    }
  }
  for (uint32_t fi = 0; fi < module->function_count; ++fi) {
    const cml_ir_function_t* f = &module->functions[fi];
    for (uint32_t o = 0; o < f->output_count; ++o) {
      if (f->outputs[o] == lse) return true;
    }
    for (uint32_t c = 0; c < f->capture_count; ++c) {
      if (f->captures_outer[c] == lse) return true;
    }
  }
  return false;
}

//===--- FusedScaledDotProductAttentionVJP ---===//

// Lays out one thread's backward scratch in elements of |elem| bytes.
static void cmlc_fa_bwd_layout(cmlc_fa_bwd_ctx_t* c, size_t elem) {
  // Every size saturates at SIZE_MAX (cmlc_size_of, cmlc_fa_next) rather than wrapping.
  const size_t d = cmlc_size_of(c->f.d, 1), dv = cmlc_size_of(c->f.dv, 1);
  const size_t dp = cmlc_size_of(c->dp, 1), dvp = cmlc_size_of(c->f.dvp, 1);
  const size_t bq = CMLC_FA_BQ, bk = CMLC_FA_BK;
  size_t off = 0;
  c->off_q = off;
  off = cmlc_fa_next(off, cmlc_size_mul(bq * elem, dp));
  c->off_do = off;
  off = cmlc_fa_next(off, cmlc_size_mul(bq * elem, dvp));
  c->off_kt = off;
  off = cmlc_fa_next(off, cmlc_size_mul(bk * elem, d));
  c->off_vt = off;
  off = cmlc_fa_next(off, cmlc_size_mul(bk * elem, dv));
  c->off_k = off;
  off = cmlc_fa_next(off, cmlc_size_mul(bk * elem, dp));
  c->off_p = off;
  off = cmlc_fa_next(off, bq * bk * elem);
  c->off_ds = off;
  off = cmlc_fa_next(off, bq * bk * elem);
  c->off_a1 = off;  // dK [BK, dp] in pass 1, dQ [BQ, dp] in pass 2 (BQ <= BK)
  off = cmlc_fa_next(off, cmlc_size_mul(bk * elem, dp));
  c->off_a2 = off;
  off = cmlc_fa_next(off, cmlc_size_mul(bk * elem, dvp));
  c->off_st = off;
  off = cmlc_fa_next(off, 3 * bq * elem);
  if (c->by_head) {
    // One element per row of the head's padded queries, in bytes.
    const size_t rows = cmlc_size_of(c->f.groups * c->seq_pad, elem);
    c->off_hq = off;
    off = cmlc_fa_next(off, cmlc_size_mul(rows, dp));
    c->off_hdo = off;
    off = cmlc_fa_next(off, cmlc_size_mul(rows, dvp));
    c->off_hl = off;
    off = cmlc_fa_next(off, rows);
    c->off_hd = off;
    off = cmlc_fa_next(off, rows);
    c->off_hc = off;
    off = cmlc_fa_next(off, rows);
    c->off_hdq = off;
    off = cmlc_fa_next(off, cmlc_size_mul(rows, dp));
  }
  c->per_thread = off;
}

// Fills the shapes and the scratch layout; |threads| decides between one pass per (batch, kv
// head) (enough of them to keep the threads busy) and two passes over tiles.
static void cmlc_fa_bwd_shapes(cmlc_fa_bwd_ctx_t* c, const cml_shape_t* qs, const cml_shape_t* ks,
                               const cml_shape_t* vs, int32_t layout, int threads) {
  cmlc_fa_shapes(&c->f, qs, ks, vs, layout);
  c->dp = (c->f.d + 15) & ~(int64_t)15;
  c->kv_tiles = (c->f.kv_seq + CMLC_FA_BK - 1) / CMLC_FA_BK;
  c->seq_pad = c->f.q_tiles * CMLC_FA_BQ;
  c->by_head = qs->dims[0] * (c->f.heads / c->f.groups) >= threads;
  cmlc_fa_bwd_layout(c, qs->dtype == CML_DTYPE_F64 ? sizeof(double) : sizeof(float));
}

// The bytes of one of bwd_stats' two [batch, heads, seq] arrays, which follow the threads'
// scratch.
static size_t cmlc_fa_bwd_stat_bytes(const cmlc_fa_bwd_ctx_t* c, const cml_shape_t* qs) {
  const size_t elem = qs->dtype == CML_DTYPE_F64 ? sizeof(double) : sizeof(float);
  return cmlc_fa_align(
      cmlc_size_mul(cmlc_size_of(qs->dims[0] * c->f.heads, elem), cmlc_size_of(c->f.seq, 1)));
}

size_t cmlc__fa_bwd_scratch(const cml_module_t* module, const cml_ir_node_t* node,
                            const cmlc_options_t* options) {
  cmlc_fa_bwd_ctx_t c;
  memset(&c, 0, sizeof c);
  const cml_shape_t* qs = &module->values[node->inputs[0]].shape;
  cmlc_fa_bwd_shapes(&c, qs, &module->values[node->inputs[1]].shape,
                     &module->values[node->inputs[2]].shape, node->attrs->fused.layout,
                     cmlc_fa_threads(options));
  const size_t threads = cmlc_size_mul(c.per_thread, (size_t)cmlc_fa_threads(options));
  return cmlc_size_add(threads, cmlc_size_mul(cmlc_fa_bwd_stat_bytes(&c, qs), 2));
}

// Whether a row's saved logsumexp needs bwd_stats: finite and at least CMLC_FA_LSE_EXACT in
// magnitude.
static bool cmlc_fa_bwd_needs_stats(const cmlc_fa_bwd_ctx_t* c, int64_t rows) {
  if (c->f.dtype == CML_DTYPE_F64) {
    const double* l = c->lse;
    for (int64_t i = 0; i < rows; ++i) {
      if (fabs(l[i]) >= CMLC_FA_LSE_EXACT && isfinite(l[i])) return true;
    }
    return false;
  }
  const float* l = c->lse;
  for (int64_t i = 0; i < rows; ++i) {
    if (fabsf(l[i]) >= (float)CMLC_FA_LSE_EXACT && isfinite(l[i])) return true;
  }
  return false;
}

// The backward's task runners: each task of |begin|..|end| on the ISA variant the context
// names (AVX-512, AVX2 + FMA, or the portable one), for the pre-pass (stats) and the passes.
#if defined(CMLC_HAVE_X86_64)
#define CMLC_FA_BWD_X86(kind, f64, c, t, thread_index)          \
  if ((c)->f.isa >= CMLC_ISA_AVX512) {                          \
    f64 ? cmlc__fa_bwd_##kind##_f64_avx512(c, t, thread_index)  \
        : cmlc__fa_bwd_##kind##_f32_avx512(c, t, thread_index); \
    continue;                                                   \
  }                                                             \
  if ((c)->f.isa >= CMLC_ISA_AVX2) {                            \
    f64 ? cmlc__fa_bwd_##kind##_f64_avx2(c, t, thread_index)    \
        : cmlc__fa_bwd_##kind##_f32_avx2(c, t, thread_index);   \
    continue;                                                   \
  }
#else
#define CMLC_FA_BWD_X86(kind, f64, c, t, thread_index)
#endif
#define CMLC_FA_BWD_TASKS(kind)                                                  \
  static void cmlc_fa_bwd_##kind##_tasks(void* vctx, int64_t begin, int64_t end, \
                                         int thread_index) {                     \
    const cmlc_fa_bwd_ctx_t* c = vctx;                                           \
    const bool f64 = c->f.dtype == CML_DTYPE_F64;                                \
    for (int64_t t = begin; t < end; ++t) {                                      \
      CMLC_FA_BWD_X86(kind, f64, c, t, thread_index)                             \
      f64 ? cmlc_fa_bwd_##kind##_f64(c, t, thread_index)                         \
          : cmlc_fa_bwd_##kind##_f32(c, t, thread_index);                        \
    }                                                                            \
  }
CMLC_FA_BWD_TASKS(stats)
CMLC_FA_BWD_TASKS(kv)
CMLC_FA_BWD_TASKS(q)
CMLC_FA_BWD_TASKS(head)
#undef CMLC_FA_BWD_TASKS
#undef CMLC_FA_BWD_X86

cml_status_t cmlc__fa_bwd_run(const cmlc_kernel_args_t* args) {
  const cml_ir_attrs_t* attrs = args->node->attrs;
  const int32_t layout = attrs->fused.layout;
  const cml_shape_t* qs = args->input_shapes[0];
  cmlc_fa_bwd_ctx_t c;
  memset(&c, 0, sizeof c);
  cmlc_fa_bwd_shapes(&c, qs, args->input_shapes[1], args->input_shapes[2], layout,
                     cmlc_fa_threads(args->options));
  cmlc_fa_ctx_t* f = &c.f;
  f->scale = attrs->fused.scale;
  f->isa = args->options->reference ? CMLC_ISA_SCALAR : args->options->isa;
  f->causal = attrs->fused.causal;
  cmlc_fa_strides(qs, layout, f->q_str);
  cmlc_fa_strides(args->input_shapes[1], layout, f->k_str);
  cmlc_fa_strides(args->input_shapes[2], layout, f->v_str);
  cmlc_fa_strides(args->input_shapes[3], layout, f->o_str);
  f->q = args->inputs[0];
  f->k = args->inputs[1];
  f->v = args->inputs[2];
  c.o = args->inputs[3];
  c.lse = args->inputs[4];
  c.dout = args->inputs[5];
  c.dq = args->outputs[0];
  c.dk = args->outputs[1];
  c.dv = args->outputs[2];
  uint32_t next = 6;
  const uint32_t present = attrs->fused.optional_inputs;
  if (present & 1u) {
    f->mask_bool = args->input_shapes[next]->dtype == CML_DTYPE_BOOL;
    cmlc_fa_bcast_strides(args->input_shapes[next], f->mask_str);
    f->mask = args->inputs[next++];
  }
  if (present & 2u) {
    cmlc_fa_bcast_strides(args->input_shapes[next], f->bias_str);
    f->bias = args->inputs[next++];
  }
  if (present & 4u) {
    f->q_len = args->inputs[next++];
    f->kv_len = args->inputs[next++];
  }
  c.scratch = args->scratch;
  const int64_t batch = qs->dims[0];
  cmlc_pool_t* pool = args->pool;
  if (cmlc_pool_thread_count(pool) > cmlc_fa_threads(args->options)) pool = NULL;
  // Empty problems: the gradients are zeros (an empty head dim or no keys leave nothing to do).
  const int64_t kv_heads = f->heads / f->groups;
  const int64_t kv_tasks = batch * kv_heads * c.kv_tiles, q_tasks = batch * f->heads * f->q_tiles;
  if (cmlc_fa_bwd_needs_stats(&c, batch * f->heads * f->seq)) {
    const size_t stat = cmlc_fa_bwd_stat_bytes(&c, qs);
    c.stat_m = c.scratch + c.per_thread * (size_t)cmlc_fa_threads(args->options);
    c.stat_c = (char*)c.stat_m + stat;
    cmlc_parallel_for(pool, batch * f->heads, 1, cmlc_fa_bwd_stats_tasks, &c);
    c.lse = c.stat_m;
    c.lse_c = c.stat_c;
  }
  if (c.by_head) {
    if (batch * kv_heads > 0)
      cmlc_parallel_for(pool, batch * kv_heads, 1, cmlc_fa_bwd_head_tasks, &c);
    return CML_OK;
  }
  if (kv_tasks > 0) cmlc_parallel_for(pool, kv_tasks, 1, cmlc_fa_bwd_kv_tasks, &c);
  if (q_tasks > 0) cmlc_parallel_for(pool, q_tasks, 1, cmlc_fa_bwd_q_tasks, &c);
  return CML_OK;
}

bool cmlc__fa_bwd_valid(const cml_module_t* module, const cml_ir_node_t* node) {
  const uint32_t present = node->attrs->fused.optional_inputs;
  uint32_t want = 6u + (present & 1u) + ((present >> 1) & 1u) + ((present & 4u) ? 2u : 0u);
  if (node->input_count != want || node->output_count != 3) return false;
  const cml_shape_t* qs = &module->values[node->inputs[0]].shape;
  const cml_dtype_t dt = qs->dtype;
  if (!cml_dtype_is_float(dt)) return false;
  const uint32_t same[5] = {0, 1, 2, 3, 5};  // q, k, v, o, dout
  for (int i = 0; i < 5; ++i) {
    const cml_shape_t* s = &module->values[node->inputs[same[i]]].shape;
    if (s->dtype != dt || s->rank != 4) return false;
  }
  const cml_shape_t* ls = &module->values[node->inputs[4]].shape;
  if (ls->dtype != (dt == CML_DTYPE_F64 ? CML_DTYPE_F64 : CML_DTYPE_F32) || ls->rank != 3)
    return false;
  for (uint32_t i = 0; i < 3; ++i) {
    if (!cml_shape_equal(&module->values[node->first_output + i].shape,
                         &module->values[node->inputs[i]].shape))
      return false;
  }
  uint32_t next = 6;
  if (present & 1u) {
    const cml_shape_t* s = &module->values[node->inputs[next++]].shape;
    if ((s->dtype != dt && s->dtype != CML_DTYPE_BOOL) || s->rank < 2 || s->rank > 4) return false;
  }
  if (present & 2u) {
    const cml_shape_t* s = &module->values[node->inputs[next++]].shape;
    if (s->dtype != dt || s->rank < 2 || s->rank > 4) return false;
  }
  if (present & 4u) {
    for (int i = 0; i < 2; ++i) {
      if (module->values[node->inputs[next++]].shape.dtype != CML_DTYPE_I32) return false;
    }
  }
  return node->attrs->fused.layout == CML_ATTENTION_LAYOUT_BHSD ||
         node->attrs->fused.layout == CML_ATTENTION_LAYOUT_BSHD;
}

//===--- FusedAttentionQKVProjection ---===//

// Scratch of the projection: offset tables for the GEMM, an f32 product for half dtypes, and
// the GEMM's own scratch, sized for the widest of the three outputs.
typedef struct cmlc_fa_qkv_plan_t {
  int64_t m, k, width[3], start[3], total_n, max_w;
  bool f64;
  bool bf16;  // bf16 on AVX-512 BF16 with more than 16 rows: the vdpbf16ps GEMM (as DotGeneral)
  int threads;
  size_t off_tables, off_c, off_gemm, total;
} cmlc_fa_qkv_plan_t;

static void cmlc_fa_qkv_plan(const cml_shape_t* xs, const cml_ir_attrs_t* attrs,
                             const cmlc_options_t* options, cmlc_fa_qkv_plan_t* p) {
  memset(p, 0, sizeof *p);
  p->m = xs->dims[0];
  p->k = xs->dims[1];
  p->width[0] = attrs->fused.query_dim;
  p->width[1] = p->width[2] = attrs->fused.kv_dim;
  p->start[1] = p->width[0];
  p->start[2] = p->width[0] + p->width[1];
  p->total_n = p->start[2] + p->width[2];
  p->max_w = p->width[0] > p->width[1] ? p->width[0] : p->width[1];
  p->f64 = xs->dtype == CML_DTYPE_F64;
  p->bf16 = cmlc__gemm_fused_bf16(options, xs->dtype, xs->dtype, p->m);
  p->threads = cmlc_fa_threads(options);
  size_t off = 0;
  p->off_tables = off;
  off = cmlc_fa_next(off, cmlc_size_of(2 + p->m + 2 * p->k + p->max_w, sizeof(int64_t)));
  p->off_c = off;
  if (!p->f64 && xs->dtype != CML_DTYPE_F32) {
    off = cmlc_fa_next(off, cmlc_size_of(p->m * p->max_w, sizeof(float)));
  }
  p->off_gemm = off;
  const size_t gemm =
      p->f64 ? cmlc__gemm_f64_scratch(1, p->m, p->max_w, p->k, options->isa, p->threads)
             : cmlc__gemm_fused_scratch(p->bf16, p->m, p->max_w, p->k, options->isa, p->threads);
  off = cmlc_fa_next(off, gemm);
  p->total = off;
}

size_t cmlc__fa_qkv_scratch(const cml_module_t* module, const cml_ir_node_t* node,
                            const cmlc_options_t* options) {
  cmlc_fa_qkv_plan_t p;
  cmlc_fa_qkv_plan(&module->values[node->inputs[0]].shape, node->attrs, options, &p);
  return p.total;
}

cml_status_t cmlc__fa_qkv_run(const cmlc_kernel_args_t* args) {
  const cml_shape_t* xs = args->input_shapes[0];
  const cml_dtype_t dt = xs->dtype;
  const cml_ir_attrs_t* attrs = args->node->attrs;
  cmlc_fa_qkv_plan_t p;
  cmlc_fa_qkv_plan(xs, attrs, args->options, &p);
  char* s = args->scratch;
  int64_t* batch_off = (int64_t*)(s + p.off_tables);  // one batch: offset 0 for both operands
  batch_off[0] = batch_off[1] = 0;
  int64_t* a_rows = batch_off + 2;
  int64_t* a_cols = a_rows + p.m;
  int64_t* b_rows = a_cols + p.k;
  int64_t* b_cols = b_rows + p.k;
  for (int64_t i = 0; i < p.m; ++i) a_rows[i] = i * p.k;
  for (int64_t i = 0; i < p.k; ++i) a_cols[i] = i;
  for (int64_t i = 0; i < p.k; ++i) b_rows[i] = i * p.total_n;
  cmlc_pool_t* pool = args->pool;
  if (cmlc_pool_thread_count(pool) > p.threads) pool = NULL;
  const uint32_t present = attrs->fused.optional_inputs;
  uint32_t next = 2;
  for (int o = 0; o < 3; ++o) {
    const void* bias = (present & (1u << o)) ? args->inputs[next++] : NULL;
    const int64_t w = p.width[o];
    void* y = args->outputs[o];
    if (p.m == 0 || w == 0) continue;
    // y = x @ w_qkv[:, start:start + w]: the GEMM reads the column block through its offsets.
    for (int64_t j = 0; j < w; ++j) b_cols[j] = p.start[o] + j;
    if (p.k == 0) {
      memset(p.f64 ? y : (dt == CML_DTYPE_F32 ? y : (void*)(s + p.off_c)), 0,
             (size_t)(p.m * w) * (p.f64 ? sizeof(double) : sizeof(float)));
    } else if (p.f64) {
      cmlc__gemm_f64_problem_t g = {1, p.m, w, p.k, {0}, {0}, y};
      g.a = (cmlc__gemm_operand_t){args->inputs[0], dt, batch_off, a_rows, a_cols};
      g.b = (cmlc__gemm_operand_t){args->inputs[1], dt, batch_off + 1, b_rows, b_cols};
      cmlc__gemm_f64(&g, args->options->isa, pool, s + p.off_gemm, p.threads);
    } else {
      float* c = dt == CML_DTYPE_F32 ? (float*)y : (float*)(s + p.off_c);
      cmlc__gemm_problem_t g = {1, p.m, w, p.k, {0}, {0}, c};
      g.a = (cmlc__gemm_operand_t){args->inputs[0], dt, batch_off, a_rows, a_cols};
      g.b = (cmlc__gemm_operand_t){args->inputs[1], dt, batch_off + 1, b_rows, b_cols};
      cmlc__gemm_fused(&g, p.bf16, args->options->isa, pool, s + p.off_gemm, p.threads);
    }
    // The bias, and the rounding of half outputs (once, from the f32 product).
    if (p.f64) {
      if (!bias) continue;
      double* yd = y;
      for (int64_t r = 0; r < p.m; ++r) {
        for (int64_t j = 0; j < w; ++j) yd[r * w + j] += ((const double*)bias)[j];
      }
    } else if (dt == CML_DTYPE_F32) {
      if (!bias) continue;
      float* yf = y;
      for (int64_t r = 0; r < p.m; ++r) {
        for (int64_t j = 0; j < w; ++j) yf[r * w + j] += ((const float*)bias)[j];
      }
    } else {
      const float* c = (const float*)(s + p.off_c);
      for (int64_t r = 0; r < p.m; ++r) {
        for (int64_t j = 0; j < w; ++j) {
          float v = c[r * w + j] + (bias ? cmlc_load_f32(bias, j, dt) : 0.0f);
          cmlc__fa_store_f32(y, r * w + j, dt, v);
        }
      }
    }
  }
  return CML_OK;
}

bool cmlc__fa_qkv_valid(const cml_module_t* module, const cml_ir_node_t* node) {
  const uint32_t present = node->attrs->fused.optional_inputs;
  const uint32_t want = 2u + (present & 1u) + ((present >> 1) & 1u) + ((present >> 2) & 1u);
  if (node->input_count != want || node->output_count != 3) return false;
  const cml_shape_t* xs = &module->values[node->inputs[0]].shape;
  const cml_shape_t* ws = &module->values[node->inputs[1]].shape;
  if (!cml_dtype_is_float(xs->dtype) || xs->rank != 2 || ws->rank != 2) return false;
  const int64_t qd = node->attrs->fused.query_dim, kd = node->attrs->fused.kv_dim;
  if (qd < 0 || kd < 0 || ws->dims[0] != xs->dims[1] || ws->dims[1] != qd + 2 * kd) return false;
  for (uint32_t i = 1; i < node->input_count; ++i) {
    if (module->values[node->inputs[i]].shape.dtype != xs->dtype) return false;
  }
  for (uint32_t o = 0; o < 3; ++o) {
    const cml_shape_t* os = &module->values[node->first_output + o].shape;
    if (os->dtype != xs->dtype || os->rank != 2 || os->dims[0] != xs->dims[0]) return false;
  }
  return true;
}
