// SPDX-License-Identifier: Apache-2.0
// kernels/generic/fused_attention.h: the native FusedScaledDotProductAttention kernel's entry
// points, for the fused group's lookup table (kernels/generic/fused.c).
#ifndef CML_BACKENDS_C_KERNELS_GENERIC_FUSED_ATTENTION_H_
#define CML_BACKENDS_C_KERNELS_GENERIC_FUSED_ATTENTION_H_

#include <stdbool.h>
#include <stddef.h>

#include "backends/c/cmlc.h"
#include "backends/c/kernels/elements.h"

// Query rows and keys per tile.
#define CMLC_FA_BQ 32
#define CMLC_FA_BK 64

// Tasks with at most this many live query rows (a decoder step: one new position) take the
// decode path: scores read straight from k's rows, no transposed k.
#define CMLC_FA_DEC_ROWS 4

// The most parts a segmented k or v may have (CMLC_FA_MAX_PARTS operands of a Concatenate
// along the key axis, read in place: the c backend's planner rewrites no larger one).
#define CMLC_FA_MAX_PARTS 8

// k or v of the forward as a list of parts along the key axis: part p holds the keys
// [start[p], start[p + 1]) at data[p] (its own tensor, its key 0 being key start[p]), with the
// element strides str[p] of [batch, heads, seq]. A plain operand is one part. Parts may be
// empty (start[p] == start[p + 1]).
typedef struct cmlc_fa_parts_t {
  int count;
  int64_t start[CMLC_FA_MAX_PARTS + 1];
  const void* data[CMLC_FA_MAX_PARTS];
  int64_t str[CMLC_FA_MAX_PARTS][3];
} cmlc_fa_parts_t;

// One kernel call's problem; a task is one (batch, head, query tile).
typedef struct cmlc_fa_ctx_t {
  cml_dtype_t dtype;
  int64_t heads, groups, seq, kv_seq, d, dv, dvp, q_tiles;
  int64_t dqp;  // d rounded up to 16: the decode path's q and converted k rows
  double scale;
  cmlc_isa_t isa;  // the vector variant to run
  bool causal, mask_bool;
  // The logsumexp output has a reader (a VJP node): no decode path, whose scores are summed in
  // another order than the backward's tiles recompute them (cmlc__fa_lse_read).
  bool lse_read;
  // Element strides of [batch, heads, seq] (the head dim is contiguous) and, for the mask
  // and bias, of [batch, heads, seq, kv_seq] with 0 on broadcast axes.
  int64_t q_str[3], k_str[3], v_str[3], o_str[3], mask_str[4], bias_str[4];
  const void *q, *k, *v, *mask, *bias;
  // The forward reads k and v through these (the backward pass through k, v and their
  // strides, always whole tensors).
  cmlc_fa_parts_t kp, vp;
  const int32_t *q_len, *kv_len;  // both or neither
  void* out;
  void* lse;  // the logsumexp state [batch, heads, seq] (T), or NULL
  char* scratch;
  // Per thread: q tile, transposed k of one (batch, kv head) (off_k, [kv tiles, d, BK]) and the
  // tag naming it (off_tag), v tile, scores, outputs, row statistics; the decode path's k rows
  // converted to the computation type (off_kb, [BK, dqp]).
  size_t per_thread, off_q, off_k, off_v, off_s, off_o, off_m, off_tag, off_kb;
} cmlc_fa_ctx_t;

// The backward pass's problem (FusedScaledDotProductAttentionVJP): the forward's context |f|
// (shapes, options, q, k, v, masks, lengths; o_str are the strides of o and dout), the
// forward's output, logsumexp and the output cotangent, and the gradients. Pass 1 tasks are
// (batch, kv head, key tile), pass 2 tasks (batch, head, query tile).
typedef struct cmlc_fa_bwd_ctx_t {
  cmlc_fa_ctx_t f;
  const void *o, *lse, *dout;
  // Rows whose saved logsumexp is too large in magnitude to hold log(l) (bwd_stats): the row's
  // score max in |lse|'s place and log(l) here, [batch, heads, seq] (T, 0 for the other rows);
  // NULL when no row needs it. bwd_stats writes both into |stat_m| and |stat_c|.
  const void* lse_c;
  void *stat_m, *stat_c;
  void *dq, *dk, *dv;
  int64_t dp, kv_tiles;  // d rounded up to 16; key tiles
  // Single pass (a task per batch and kv head) rather than two: the group's rows, seq_pad (seq
  // rounded up to CMLC_FA_BQ) each, in scratch at off_hq.. off_hdq.
  bool by_head;
  int64_t seq_pad;
  char* scratch;
  size_t per_thread, off_q, off_do, off_kt, off_vt, off_k, off_p, off_ds, off_a1, off_a2, off_st;
  size_t off_hq, off_hdo, off_hl, off_hd, off_hc, off_hdq;
} cmlc_fa_bwd_ctx_t;

// The magnitude of a saved logsumexp from which bwd_stats recomputes the row's max and log(l).
// Below 2^10 the value's spacing is at most 2^-13 (f32) or 2^-42 (f64): rounding m + log(l)
// moves P = exp(S - lse) by at most 6.1e-5 or 1.2e-13 relative (1024 of the dtype's epsilons).
#define CMLC_FA_LSE_EXACT 1024.0

// cmlc_load_f32 with bf16 decoded inline (the bits shifted up: exact, NaN kept), for the f32
// kernels' element-by-element loads of q, k, v, o and dO in the half dtypes (cml_bf16_to_f32
// is an exported, out-of-line function).
static inline float cmlc__fa_load_f32(const void* p, int64_t i, cml_dtype_t dtype) {
  if (dtype == CML_DTYPE_BF16) {
    const uint32_t u = (uint32_t)((const uint16_t*)p)[i] << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
  }
  return cmlc_load_f32(p, i, dtype);
}

// acc = max(acc, x) lane by lane for the includer's CMLC_FA_V / CMLC_FA_IV vectors (acc where
// x is NaN; the callers check finiteness separately).
#define CMLC_FA_VMAX_INTO(acc, x)                                            \
  do {                                                                       \
    const CMLC_FA_IV gt_ = (x) > (acc);                                      \
    (acc) = (CMLC_FA_V)(((CMLC_FA_IV)(x)&gt_) | ((CMLC_FA_IV)(acc) & ~gt_)); \
  } while (0)

// y = exp(x) lane by lane for float vectors x <= 0 (type V, int32 vector type IV): 2^n * p(r)
// with n = round(x log2 e) and r = x - n ln 2 (Cephes' expf polynomial, within 2 ulps); lanes
// below -87.3 (including -inf) give exactly 0.
#define CMLC_FA_VEXPF(V, IV, x_in, y_out)                               \
  do {                                                                  \
    V x_ = (x_in);                                                      \
    const IV keep_ = x_ >= -87.3f;                                      \
    x_ = (V)((IV)x_ & keep_);                                           \
    const V t_ = x_ * 1.44269504088896341f - 0.5f;                      \
    const IV n_ = __builtin_convertvector(t_, IV); /* round(x log2e) */ \
    const V nf_ = __builtin_convertvector(n_, V);                       \
    const V r_ = x_ - nf_ * 0.693359375f + nf_ * 2.12194440e-4f;        \
    V y_ = 1.9875691500e-4f * r_ + 1.3981999507e-3f;                    \
    y_ = y_ * r_ + 8.3334519073e-3f;                                    \
    y_ = y_ * r_ + 4.1665795894e-2f;                                    \
    y_ = y_ * r_ + 1.6666665459e-1f;                                    \
    y_ = y_ * r_ + 5.0000001201e-1f;                                    \
    y_ = y_ * r_ * r_ + r_ + 1.0f;                                      \
    y_ *= (V)((n_ + 127) << 23);                                        \
    (y_out) = (V)((IV)y_ & keep_);                                      \
  } while (0)

// Keys ahead whose k (and v) rows the forward prefetches while it transposes k, and the most
// bytes of v rows it prefetches there (the rest: one tile ahead).
#define CMLC_FA_PF_ROWS 8
#define CMLC_FA_PF_V_BYTES ((size_t)256 << 10)
// Keys ahead whose k and v rows the decode path prefetches from its score loop.
#ifndef CMLC_FA_DEC_PF_ROWS
#define CMLC_FA_DEC_PF_ROWS 8
#endif

// The address of key |j|'s row of batch |b|, head |h| in |parts| (elements of |elem| bytes);
// *|pi| is a part at or before the one holding it, and is moved to that part.
static inline const void* cmlc__fa_row(const cmlc_fa_parts_t* parts, int* pi, int64_t b, int64_t h,
                                       int64_t j, size_t elem) {
  while (parts->start[*pi + 1] <= j) ++*pi;
  const int64_t* st = parts->str[*pi];
  return (const char*)parts->data[*pi] +
         (size_t)(b * st[0] + h * st[1] + (j - parts->start[*pi]) * st[2]) * elem;
}

// Prefetches every 64-byte line holding one of the |bytes| bytes at |p|, for reading.
static inline void cmlc__fa_prefetch(const void* p, size_t bytes) {
  const uintptr_t end = (uintptr_t)p + bytes;
  for (uintptr_t a = (uintptr_t)p & ~(uintptr_t)63; a < end; a += 64)
    __builtin_prefetch((const void*)a, 0, 3);
}

static inline void cmlc__fa_store_f32(void* p, int64_t i, cml_dtype_t dtype, float v) {
  switch (dtype) {
    case CML_DTYPE_F32:
      ((float*)p)[i] = v;
      return;
    case CML_DTYPE_F16:
      ((uint16_t*)p)[i] = cml__f32_to_f16(v);
      return;
    case CML_DTYPE_BF16:
      ((uint16_t*)p)[i] = cml__f32_to_bf16(v);
      return;
    default:
      cmlc_store_f64(p, i, dtype, v);
      return;
  }
}

#if defined(CMLC_HAVE_X86_64)
// The AVX2 + FMA and AVX-512 variants of one task (kernels/x86_64/fused_attention_x86_64.c).
void cmlc__fa_task_f32_avx2(const cmlc_fa_ctx_t* c, int64_t task, int thread_index);
void cmlc__fa_task_f64_avx2(const cmlc_fa_ctx_t* c, int64_t task, int thread_index);
void cmlc__fa_task_f32_avx512(const cmlc_fa_ctx_t* c, int64_t task, int thread_index);
void cmlc__fa_task_f64_avx512(const cmlc_fa_ctx_t* c, int64_t task, int thread_index);
#endif

#if defined(CMLC_HAVE_X86_64)
void cmlc__fa_bwd_kv_f32_avx2(const cmlc_fa_bwd_ctx_t* c, int64_t task, int thread_index);
void cmlc__fa_bwd_kv_f64_avx2(const cmlc_fa_bwd_ctx_t* c, int64_t task, int thread_index);
void cmlc__fa_bwd_kv_f32_avx512(const cmlc_fa_bwd_ctx_t* c, int64_t task, int thread_index);
void cmlc__fa_bwd_kv_f64_avx512(const cmlc_fa_bwd_ctx_t* c, int64_t task, int thread_index);
void cmlc__fa_bwd_q_f32_avx2(const cmlc_fa_bwd_ctx_t* c, int64_t task, int thread_index);
void cmlc__fa_bwd_q_f64_avx2(const cmlc_fa_bwd_ctx_t* c, int64_t task, int thread_index);
void cmlc__fa_bwd_q_f32_avx512(const cmlc_fa_bwd_ctx_t* c, int64_t task, int thread_index);
void cmlc__fa_bwd_q_f64_avx512(const cmlc_fa_bwd_ctx_t* c, int64_t task, int thread_index);
void cmlc__fa_bwd_head_f32_avx2(const cmlc_fa_bwd_ctx_t* c, int64_t task, int thread_index);
void cmlc__fa_bwd_head_f64_avx2(const cmlc_fa_bwd_ctx_t* c, int64_t task, int thread_index);
void cmlc__fa_bwd_head_f32_avx512(const cmlc_fa_bwd_ctx_t* c, int64_t task, int thread_index);
void cmlc__fa_bwd_head_f64_avx512(const cmlc_fa_bwd_ctx_t* c, int64_t task, int thread_index);
void cmlc__fa_bwd_stats_f32_avx2(const cmlc_fa_bwd_ctx_t* c, int64_t task, int thread_index);
void cmlc__fa_bwd_stats_f64_avx2(const cmlc_fa_bwd_ctx_t* c, int64_t task, int thread_index);
void cmlc__fa_bwd_stats_f32_avx512(const cmlc_fa_bwd_ctx_t* c, int64_t task, int thread_index);
void cmlc__fa_bwd_stats_f64_avx512(const cmlc_fa_bwd_ctx_t* c, int64_t task, int thread_index);
#endif

// Whether |node|'s logsumexp output (output 1) is read by a node, returned or captured. The
// backward recomputes P = exp(S - lse) from scores summed in its tiles' order; the forward's
// decode path sums them in another, and for scores of hundreds their last bits then differ
// enough that P no longer sums to 1 against the saved output (dq of a 4-row attention with
// scores near 1900 was 90% off). So a forward whose logsumexp is read runs the tile path.
bool cmlc__fa_lse_read(const cml_module_t* module, const cml_ir_node_t* node);

// FusedScaledDotProductAttentionVJP (inputs q, k, v, o, lse, dout, then the forward's
// optional inputs; outputs dq, dk, dv): the tiled backward pass (fused_attention_bwd_impl.h).
cml_status_t cmlc__fa_bwd_run(const cmlc_kernel_args_t* args);
size_t cmlc__fa_bwd_scratch(const cml_module_t* module, const cml_ir_node_t* node,
                            const cmlc_options_t* options);
bool cmlc__fa_bwd_valid(const cml_module_t* module, const cml_ir_node_t* node);

// FusedAttentionQKVProjection (inputs x [M, K], w_qkv [K, qd + 2 kd], optional biases; outputs
// q, k, v): three packed GEMMs reading the column blocks of w_qkv in place, then the biases.
cml_status_t cmlc__fa_qkv_run(const cmlc_kernel_args_t* args);
size_t cmlc__fa_qkv_scratch(const cml_module_t* module, const cml_ir_node_t* node,
                            const cmlc_options_t* options);
bool cmlc__fa_qkv_valid(const cml_module_t* module, const cml_ir_node_t* node);

// Runs the node (inputs q, k, v, then the optional mask, bias, query_seq_len, kv_seq_len as
// attrs->fused.optional_inputs says) with the tiled online-softmax kernel. With
// args->input_parts, k and v may each arrive as input_parts[1] / input_parts[2] consecutive
// inputs, the operands of a Concatenate along the key axis (at most CMLC_FA_MAX_PARTS), which
// the kernel reads in place; the results are bitwise those of the concatenated operand.
cml_status_t cmlc__fa_run(const cmlc_kernel_args_t* args);

// The key (sequence) axis of k and v in |layout| (CML_ATTENTION_LAYOUT_*): 2 for BHSD, 1 for
// BSHD.
int cmlc__fa_key_axis(int32_t layout);

// Scratch bytes of the node: one tile workspace per thread, independent of the sequences.
size_t cmlc__fa_scratch(const cml_module_t* module, const cml_ir_node_t* node,
                        const cmlc_options_t* options);

// True when the kernel handles the node (any float dtype, Bool or same-dtype masks, Int32
// lengths, both layouts); the builder already checked shapes.
bool cmlc__fa_valid(const cml_module_t* module, const cml_ir_node_t* node);

#endif  // CML_BACKENDS_C_KERNELS_GENERIC_FUSED_ATTENTION_H_
