// SPDX-License-Identifier: Apache-2.0
// kernels/generic/quant.c: the quantized kernel group: FusedQuantizedDense and
// QuantizedEmbeddingLookup (cml/fused.h) on every format, with its lookup and capabilities.
//
// Weights are never dequantized as a whole: the GGML kernel decodes one block (32 or 256
// values) into registers/stack and uses it at once for every activation row (so a batch-N call
// decodes each block once, not N times); the Linear/NF4 kernels decode one strip of at most
// CMLC_Q_TILE output columns of one weight row at a time (the SIMD ones: into registers, or for
// larger batches into a bounded per-thread panel of such rows). Work is split over output columns
// (GGML: weight rows; Linear/NF4: column tiles), each column computed by one task in a fixed
// order, so results never depend on the thread count. Sums are in f32 per block, accumulated in
// f32 across blocks, as ggml does; against the decomposition (f32 weights, DotGeneral) the
// results differ by summation order only: |y - y_ref| <= K * 2^-22 * sum_k |x_k * w_k|
// (checked by tests/unit/quant_test.c with that bound).
//
// Batch-1 GGML products of every format go to the SIMD row kernels
// (kernels/x86_64/quant_x86_64_body.h, built for AVX-512 and AVX2) when the ISA allows, with f32
// activations or, with the option quant_int8, int8 activations quantized here once per call
// (cmlc_q_prepare); batch-N products to the panel GEMMs (AVX-512 or AVX2). Linear/NF4 products
// with K > 0 go to cmlc_quant_lin_avx512 / _avx2 (kernels/x86_64/quant_lin_x86_64_body.h: f32
// FMA chains in ascending k, like the scalar loop, so within the same bound). The rest
// ("reference=true", a CPU without AVX2, a batch-1 GGML row with an infinite or NaN activation)
// to the scalar kernels here.
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backends/c/kernels/generic/quant_internal.h"
#include "core/quant_blocks.h"

#define CMLC_Q_TILE 64

//===--- activations ---===//

static inline float cmlc_q_act(int32_t act, float v) {
  switch (act) {
    case CML_ACTIVATION_GELU:
      return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    case CML_ACTIVATION_RELU:
      return v < 0 ? 0.0f : v;  // a NaN stays NaN, as in FusedDense and the decomposition
    case CML_ACTIVATION_SILU:
      return v / (1.0f + expf(-v));
    case CML_ACTIVATION_HARD_SWISH: {
      float t = v / 6.0f + 0.5f;
      t = t < 0 ? 0.0f : (t > 1 ? 1.0f : t);
      return v * t;
    }
    case CML_ACTIVATION_TANH:
      return tanhf(v);
    default:
      return v;
  }
}

//===--- GGML dense ---===//

typedef struct cmlc_q_ggml_ctx_t {
  cml_ggml_type_t type;
  const uint8_t* w;
  int64_t row_bytes, k, m, n;
  const float* x;
  const float* bias;
  float* y;
  int32_t act;
  cmlc_quant_gemv_fn simd;    // batch-1 row kernel (NULL: scalar)
  cmlc_quant_act_t prepared;  // its activation row
  bool gemm;                  // batch-N rows through cmlc_quant_gemm_avx2 / _avx512
  bool gemm512;               // the AVX-512 one
  float* panel;               // its scratch: 4 * k floats per thread
} cmlc_q_ggml_ctx_t;

// Output column |r| for every activation row: each block decoded once per group of 16 rows,
// each dequantized weight times its activation (as the decomposition computes it).
static void cmlc_q_ggml_scalar_column(const cmlc_q_ggml_ctx_t* c, int64_t r) {
  const int64_t vpb = cml__qb_values[c->type], bpb = cml__qb_bytes[c->type];
  const int64_t nb = c->k / vpb;
  float tmp[256];
  float acc[16];
  const uint8_t* row = c->w + r * c->row_bytes;
  for (int64_t m0 = 0; m0 < c->m; m0 += 16) {
    const int64_t mc = c->m - m0 < 16 ? c->m - m0 : 16;
    for (int64_t i = 0; i < mc; ++i) acc[i] = 0;
    for (int64_t bi = 0; bi < nb; ++bi) {
      cml__qb_decode(c->type, row + bi * bpb, tmp);
      for (int64_t i = 0; i < mc; ++i) {
        const float* x = c->x + (m0 + i) * c->k + bi * vpb;
        float s = 0;
        for (int64_t j = 0; j < vpb; ++j) s += tmp[j] * x[j];
        acc[i] += s;
      }
    }
    for (int64_t i = 0; i < mc; ++i) {
      c->y[(m0 + i) * c->n + r] = cmlc_q_act(c->act, acc[i] + (c->bias ? c->bias[r] : 0.0f));
    }
  }
}

static void cmlc_q_ggml_rows(void* vctx, int64_t begin, int64_t end, int thread_index) {
  const cmlc_q_ggml_ctx_t* c = vctx;
  if (c->m == 1 && c->simd) {
    c->simd(c->type, c->w + begin * c->row_bytes, c->row_bytes, end - begin, &c->prepared,
            c->y + begin);
    for (int64_t r = begin; r < end; ++r) {
      if (!isfinite(c->y[r])) {
        // A non-finite block scale or offset (d or m decoding to inf or NaN, or sums past
        // FLT_MAX): the row kernels fold offsets and zero codes apart from the products, which
        // gave +-inf where the dequantized weights give inf - inf = NaN. Such rows are rare:
        // computed again as the decomposition does.
        cmlc_q_ggml_scalar_column(c, r);
        continue;
      }
      c->y[r] = cmlc_q_act(c->act, c->y[r] + (c->bias ? c->bias[r] : 0.0f));
    }
    return;
  }
#if defined(CMLC_HAVE_X86_64)
  if (c->m > 1 && c->gemm) {
    (c->gemm512 ? cmlc_quant_gemm_avx512 : cmlc_quant_gemm_avx2)(
        c->type, c->w + begin * c->row_bytes, c->row_bytes, end - begin, c->x, c->m, c->k,
        c->y + begin, c->n, c->panel + thread_index * 4 * c->k);
    for (int64_t i = 0; i < c->m; ++i) {
      float* y = c->y + i * c->n;
      for (int64_t r = begin; r < end; ++r) {
        y[r] = cmlc_q_act(c->act, y[r] + (c->bias ? c->bias[r] : 0.0f));
      }
    }
    return;
  }
#endif
  for (int64_t r = begin; r < end; ++r) cmlc_q_ggml_scalar_column(c, r);
}

//===--- Linear / NF4 dense ---===//

typedef struct cmlc_q_lin_ctx_t {
  cmlc_quant_lin_t p;
  const float* bias;
  int32_t act;
  cmlc_quant_lin_fn simd;  // NULL: the scalar kernel
  float* panels;           // CMLC_QUANT_LIN_PANEL floats per thread, or NULL
} cmlc_q_lin_ctx_t;

// Column tiles [begin, end) of CMLC_Q_TILE columns: the SIMD kernel (cmlc_quant_lin_fn) or the
// scalar loop below (reference=true, a CPU without AVX2, K = 0), then bias and activation.
static void cmlc_q_lin_tiles(void* vctx, int64_t begin, int64_t end, int thread_index) {
  const cmlc_q_lin_ctx_t* c = vctx;
  const cmlc_quant_lin_t* p = &c->p;
  const float* nf4 = cml_quant_nf4_table();
  float wt[CMLC_Q_TILE];
  for (int64_t t = begin; t < end; ++t) {
    const int64_t n0 = t * CMLC_Q_TILE;
    const int64_t n1 = n0 + CMLC_Q_TILE < p->n ? n0 + CMLC_Q_TILE : p->n;
    const int64_t w = n1 - n0;
    if (c->simd) {
      c->simd(p, n0, n1,
              c->panels ? c->panels + (size_t)thread_index * CMLC_QUANT_LIN_PANEL : NULL);
    } else {
      for (int64_t i = 0; i < p->m; ++i) memset(p->y + i * p->n + n0, 0, sizeof(float) * (size_t)w);
      for (int64_t kk = 0; kk < p->k; ++kk) {
        const float* srow = p->scale + kk * p->nb;
        const float* zrow = p->zero ? p->zero + kk * p->nb : NULL;
        for (int64_t j = 0; j < w; ++j) {
          const int64_t col = n0 + j, blk = col / p->block;
          const int q = cmlc_quant_lin_int_at(p->wdt, p->w, kk * p->n + col);
          wt[j] =
              p->nf4 ? nf4[q & 15] * srow[blk] : (float)q * srow[blk] + (zrow ? zrow[blk] : 0.0f);
        }
        for (int64_t i = 0; i < p->m; ++i) {
          const float xv = p->x[i * p->k + kk];
          float* y = p->y + i * p->n + n0;
          for (int64_t j = 0; j < w; ++j) y[j] += xv * wt[j];
        }
      }
    }
    for (int64_t i = 0; i < p->m; ++i) {
      float* y = p->y + i * p->n + n0;
      for (int64_t j = 0; j < w; ++j) {
        y[j] = cmlc_q_act(c->act, y[j] + (c->bias ? c->bias[n0 + j] : 0.0f));
      }
    }
  }
}

// The values that share one activation scale on the int8 path: 256 (a super-block) for Q4_K,
// so that the AVX512-VNNI kernel can scale the integer sub-block dots by the weights' 6-bit
// scales in integers and convert once per super-block (ggml's Q8_K makes the same choice);
// 32 for every other format.
static int cmlc_q_act_group(cml_ggml_type_t type) { return type == CML_GGML_Q4_K ? 256 : 32; }

// Prepares the activation row |x| [k] for the batch-1 row kernels in |scratch| (the layout of
// cmlc_q_act_bytes): sums per 16 values and, for the int8 path, the activations quantized per
// |group| values (32 or 256, a divisor of |k|) to int8 with scale max|x| / 127 over the group
// (round to nearest, so |x - xd * xq| <= xd / 2 up to float rounding; xd[k / 32] repeats a
// group's scale for each of its blocks of 32; the sums are then those of the quantized values,
// so that the int8 result is exactly the f32 product with the quantized activations, up to
// float summation order).
//
// Returns false when a sum is not finite (an infinite or NaN activation, or sums past FLT_MAX):
// the row kernels multiply the weights' offsets by these sums apart from the q * x products, so
// that one -inf activation would give inf - inf = NaN where the product with the dequantized
// weights is -inf or +inf. The caller then runs the row on the scalar kernel, which multiplies
// each dequantized weight by its activation as the decomposition does.
//
// With |int8|, *|tiny| tells whether a group's max |x| is nonzero but below 2^-64 (CMLC_Q_TINY):
// its step max|x| / 127, times the weights' scales (f16, down to 2^-24), would reach the
// subnormal range and lose its precision, and below 3.7e-37 127 / max|x| overflows outright.
// The caller then prepares the row again for the f32 kernels.
#define CMLC_Q_TINY 0x1p-64f
static bool cmlc_q_prepare(const float* x, int64_t k, bool int8, int group, void* scratch,
                           cmlc_quant_act_t* out, bool* tiny) {
  float* xs16 = scratch;
  int8_t* xq = (int8_t*)(xs16 + k / 16);
  float* xd = (float*)(xq + k);
  out->x = x;
  out->xs16 = xs16;
  out->xq = int8 ? xq : NULL;
  out->xd = int8 ? xd : NULL;
  out->vnni = NULL;
  out->prefetch_l1 = false;
  out->k = k;
  bool all_finite = true;
  *tiny = false;
  if (!int8) {
    for (int64_t b = 0; b < k / 16; ++b) {
      float t = 0;
      for (int l = 0; l < 16; ++l) t += x[16 * b + l];
      xs16[b] = t;
      all_finite = all_finite && isfinite(t);
    }
    return all_finite;
  }
  for (int64_t g = 0; g < k / group; ++g) {
    const float* xg = x + group * g;
    float amax = 0;
    bool finite = true;
    for (int l = 0; l < group; ++l) {
      const float a = fabsf(xg[l]);
      amax = a > amax ? a : amax;
      finite = finite && a <= FLT_MAX;
    }
    *tiny = *tiny || (amax > 0 && amax < CMLC_Q_TINY);
    // A NaN or infinity cannot be quantized (ggml would turn its group into zeros: a silent
    // wrong answer). The caller runs such a row on the scalar f32 kernel; the NaN scale only
    // keeps the unused layout well defined.
    all_finite = all_finite && finite;
    const float d = finite ? amax / 127.0f : NAN, id = finite && amax > 0 ? 127.0f / amax : 0.0f;
    for (int64_t b = group * g / 32; b < group * (g + 1) / 32; ++b) {
      const float* xb = x + 32 * b;
      xd[b] = d;
      for (int h = 0; h < 2; ++h) {
        int32_t t = 0;
        for (int l = 0; l < 16; ++l) {
          // Round to nearest even by adding and removing 1.5 * 2^23 (|v| <= 127 here, NaN -> 0);
          // unlike nearbyintf, no library call.
          float v = xb[16 * h + l] * id;
          v = v > 127.0f ? 127.0f : (v < -127.0f ? -127.0f : (v == v ? v : 0.0f));
          v = (v + 12582912.0f) - 12582912.0f;
          xq[32 * b + 16 * h + l] = (int8_t)v;
          t += (int32_t)v;
        }
        xs16[2 * b + h] = d * (float)t;
      }
    }
  }
  return all_finite;
}

// Bytes of the prepared activation row (cmlc_q_prepare) for |k| values, 64-byte multiple.
static size_t cmlc_q_act_bytes(int64_t k) {
  return ((size_t)k / 16 * 4 + (size_t)k + (size_t)k / 32 * 4 + 63) / 64 * 64;
}

static cml_status_t cmlc_q_dense_run(const cmlc_kernel_args_t* args) {
  const cml_ir_fused_attrs_t* a = &args->node->attrs->fused;
  const cml_shape_t* xs = args->input_shapes[0];
  const cml_shape_t* ws = args->input_shapes[1];
  const int64_t k = xs->dims[xs->rank - 1];
  // Rows of x from its leading dims, not count / k: with K = 0 there are still m rows of
  // act(bias) to write.
  int64_t m = 1;
  for (int32_t d = 0; d + 1 < xs->rank; ++d) m *= xs->dims[d];
  uint32_t next = 2;
  const float* scale = NULL;
  const float* zero = NULL;
  const float* bias = NULL;
  if (a->optional_inputs & 1u) scale = args->inputs[next++];
  if (a->optional_inputs & 2u) zero = args->inputs[next++];
  if (a->optional_inputs & 4u) bias = args->inputs[next++];
  float* y = args->outputs[0];
  if (a->quant_scheme == CML_QUANT_GGML) {
    cmlc_q_ggml_ctx_t c;
    memset(&c, 0, sizeof c);
    c.type = (cml_ggml_type_t)a->quant_ggml_type;
    c.w = args->inputs[1];
    c.row_bytes = ws->dims[1];
    c.k = k;
    c.m = m;
    c.n = ws->dims[0];
    c.x = args->inputs[0];
    c.bias = bias;
    c.y = y;
    c.act = a->activation;
    cmlc_pool_t* pool = args->pool;
#if defined(CMLC_HAVE_X86_64)
    if (args->options->isa >= CMLC_ISA_AVX2 && !args->options->reference && args->scratch) {
      bool int8 = args->options->quant_int8;
      if (m == 1 && k > 0) {
        const bool vnni = args->options->isa >= CMLC_ISA_AVX512 && args->options->avx512_vnni;
        c.simd = args->options->isa >= CMLC_ISA_AVX512 && (!int8 || vnni) ? cmlc_quant_gemv_avx512
                                                                          : cmlc_quant_gemv_avx2;
        bool tiny;
        bool finite = cmlc_q_prepare(c.x, k, int8, cmlc_q_act_group(c.type), args->scratch,
                                     &c.prepared, &tiny);
        if (finite && tiny) {  // activations too small for int8 steps: the f32 kernels
          int8 = false;
          c.simd =
              args->options->isa >= CMLC_ISA_AVX512 ? cmlc_quant_gemv_avx512 : cmlc_quant_gemv_avx2;
          finite = cmlc_q_prepare(c.x, k, false, cmlc_q_act_group(c.type), args->scratch,
                                  &c.prepared, &tiny);
        }
        c.prepared.prefetch_l1 = args->options->l1d_bytes >= CMLC_QUANT_PREFETCH_L1_MIN;
        if (!finite) {
          c.simd = NULL;  // the scalar kernel: see cmlc_q_prepare
        } else if (int8 && vnni && cmlc_quant_vnni_supports(c.type)) {
          void* layout = (uint8_t*)args->scratch + cmlc_q_act_bytes(k);
          cmlc_quant_vnni_prepare(c.type, &c.prepared, layout);
          c.prepared.vnni = layout;
          c.simd = cmlc_quant_gemv_vnni;
        }
      } else if (m > 1) {
        c.gemm = true;
        c.gemm512 = args->options->isa >= CMLC_ISA_AVX512;
        c.panel = args->scratch;
        const int threads = args->options->threads > 0 ? args->options->threads : 1;
        if (cmlc_pool_thread_count(pool) > threads) pool = NULL;  // |threads| panels
      }
    }
#endif
    if (m == 0 || c.n == 0) return CML_OK;
    if (k == 0) {
      for (int64_t i = 0; i < m * c.n; ++i) y[i] = cmlc_q_act(c.act, bias ? bias[i % c.n] : 0);
      return CML_OK;
    }
    int64_t chunk = 65536 / (k * m);
    if (chunk < 4) chunk = 4;  // whole 4-row panels
    cmlc_parallel_for(pool, c.n, chunk, cmlc_q_ggml_rows, &c);
    return CML_OK;
  }
  const int64_t n = ws->dims[1];
  cmlc_q_lin_ctx_t c;
  memset(&c, 0, sizeof c);
  c.p.wdt = ws->dtype;
  c.p.nf4 = a->quant_scheme == CML_QUANT_NF4;
  c.p.w = args->inputs[1];
  c.p.scale = scale;
  c.p.zero = zero;
  c.p.k = k;
  c.p.m = m;
  c.p.n = n;
  c.p.block = a->quant_block_size;
  c.p.nb = args->input_shapes[2]->dims[1];
  c.p.x = args->inputs[0];
  c.p.y = y;
  c.bias = bias;
  c.act = a->activation;
  if (m == 0 || n == 0) return CML_OK;
  cmlc_pool_t* pool = args->pool;
#if defined(CMLC_HAVE_X86_64)
  if (args->options->isa >= CMLC_ISA_AVX2 && !args->options->reference && k > 0) {
    c.simd = args->options->isa >= CMLC_ISA_AVX512 ? cmlc_quant_lin_avx512 : cmlc_quant_lin_avx2;
    c.panels = args->scratch;  // set for batches past the direct driver's (see the scratch)
    const int threads = args->options->threads > 0 ? args->options->threads : 1;
    if (c.panels && cmlc_pool_thread_count(pool) > threads) pool = NULL;  // |threads| panels
  }
#endif
  const int64_t tiles = (n + CMLC_Q_TILE - 1) / CMLC_Q_TILE;
  int64_t chunk = 65536 / ((k + 1) * m * CMLC_Q_TILE);
  cmlc_parallel_for(pool, tiles, chunk < 1 ? 1 : chunk, cmlc_q_lin_tiles, &c);
  return CML_OK;
}

//===--- QuantizedEmbeddingLookup ---===//

// Index |i| of |indices| (any integer dtype), or -1 when it does not fit int64.
static int64_t cmlc_q_index(cml_dtype_t dt, const void* p, int64_t i) {
  switch (dt) {
    case CML_DTYPE_I8:
      return ((const int8_t*)p)[i];
    case CML_DTYPE_I16:
      return ((const int16_t*)p)[i];
    case CML_DTYPE_I32:
      return ((const int32_t*)p)[i];
    case CML_DTYPE_I64:
      return ((const int64_t*)p)[i];
    case CML_DTYPE_U8:
      return ((const uint8_t*)p)[i];
    case CML_DTYPE_U16:
      return ((const uint16_t*)p)[i];
    case CML_DTYPE_U32:
      return ((const uint32_t*)p)[i];
    case CML_DTYPE_U64: {
      uint64_t v = ((const uint64_t*)p)[i];
      return v > (uint64_t)INT64_MAX ? -1 : (int64_t)v;
    }
    default:
      return -1;
  }
}

typedef struct cmlc_q_embed_ctx_t {
  cml_ggml_type_t type;
  const uint8_t* data;
  int64_t row_bytes, k;
  cml_dtype_t idt;
  const void* idx;
  float* y;
} cmlc_q_embed_ctx_t;

static void cmlc_q_embed_rows(void* vctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const cmlc_q_embed_ctx_t* c = vctx;
  const int64_t vpb = cml__qb_values[c->type], bpb = cml__qb_bytes[c->type];
  for (int64_t i = begin; i < end; ++i) {
    const uint8_t* row = c->data + cmlc_q_index(c->idt, c->idx, i) * c->row_bytes;
    for (int64_t bi = 0; bi < c->k / vpb; ++bi) {
      cml__qb_decode(c->type, row + bi * bpb, c->y + i * c->k + bi * vpb);
    }
  }
}

static cml_status_t cmlc_q_embed_run(const cmlc_kernel_args_t* args) {
  const cml_ir_fused_attrs_t* a = &args->node->attrs->fused;
  const cml_shape_t* ds = args->input_shapes[0];
  const cml_shape_t* is = args->input_shapes[1];
  const cml_ggml_type_t type = (cml_ggml_type_t)a->quant_ggml_type;
  const int64_t count = cml_shape_element_count(is);
  const int64_t vocab = ds->dims[0];
  for (int64_t i = 0; i < count; ++i) {
    int64_t v = cmlc_q_index(is->dtype, args->inputs[1], i);
    if (v < 0 || v >= vocab) {
      // The index as stored: a Uint64 index past INT64_MAX reads -1 from cmlc_q_index.
      char text[24];
      if (is->dtype == CML_DTYPE_U64) {
        snprintf(text, sizeof text, "%llu",
                 (unsigned long long)((const uint64_t*)args->inputs[1])[i]);
      } else {
        snprintf(text, sizeof text, "%lld", (long long)v);
      }
      char shape[160];
      return cml_status_make(CML_STATUS_OUT_OF_RANGE,
                             "index %s (position %lld of indices %s) out of range [0, %lld) of "
                             "data [%lld, %lld] %s",
                             text, (long long)i, cml_shape_format(is, shape, sizeof shape),
                             (long long)vocab, (long long)vocab, (long long)ds->dims[1],
                             cml_ggml_type_name(type));
    }
  }
  cmlc_q_embed_ctx_t c = {type,
                          args->inputs[0],
                          ds->dims[1],
                          ds->dims[1] / cml__qb_bytes[type] * cml__qb_values[type],
                          is->dtype,
                          args->inputs[1],
                          args->outputs[0]};
  int64_t chunk = c.k > 0 ? 16384 / c.k : 1;
  cmlc_parallel_for(args->pool, count, chunk < 1 ? 1 : chunk, cmlc_q_embed_rows, &c);
  return CML_OK;
}

// Scratch of the SIMD GGML paths: batch 1, the prepared activation row (cmlc_q_prepare);
// batch N, one 4-row float panel per thread (cmlc_quant_gemm_avx2 / _avx512). Linear / NF4
// batches past 2 rows: one CMLC_QUANT_LIN_PANEL panel per thread (cmlc_quant_lin_fn).
static size_t cmlc_q_dense_scratch(const cml_module_t* module, const cml_ir_node_t* node,
                                   const cmlc_options_t* options) {
  const cml_shape_t* xs = &module->values[node->inputs[0]].shape;
  if (options->reference || options->isa < CMLC_ISA_AVX2 || xs->rank < 1) return 0;
  const int64_t k = xs->dims[xs->rank - 1];
  if (k <= 0) return 0;
  const int64_t m = cml_shape_element_count(xs) / k;
  const int threads = options->threads > 0 ? options->threads : 1;
  if (node->attrs->fused.quant_scheme != CML_QUANT_GGML) {
    // Linear / NF4: a weight panel per thread past the direct driver's rows (4 on zmm, 2 on ymm).
    if (m <= 2) return 0;
    return cmlc_size_mul((size_t)threads, CMLC_QUANT_LIN_PANEL * sizeof(float));
  }
  if (m == 1) {
    size_t bytes = cmlc_q_act_bytes(k);
#if defined(CMLC_HAVE_X86_64)
    const cml_ggml_type_t type = (cml_ggml_type_t)node->attrs->fused.quant_ggml_type;
    if (options->quant_int8 && options->isa >= CMLC_ISA_AVX512 && options->avx512_vnni &&
        cmlc_quant_vnni_supports(type))
      bytes = cmlc_size_add(bytes, cmlc_quant_vnni_bytes(type, k));
#endif
    return bytes;
  }
  if (m < 2) return 0;
  return cmlc_size_mul((size_t)threads, cmlc_size_of(k, 4 * sizeof(float)));  // saturating
}

//===--- lookup and capabilities ---===//

static bool cmlc_q_dense_valid(const cml_module_t* module, const cml_ir_node_t* node) {
  const cml_ir_fused_attrs_t* a = &node->attrs->fused;
  uint32_t opt = a->optional_inputs;
  uint32_t want = 2u + (opt & 1u) + ((opt >> 1) & 1u) + ((opt >> 2) & 1u);
  if (node->input_count != want || node->output_count != 1) return false;
  if (module->values[node->inputs[0]].shape.dtype != CML_DTYPE_F32) return false;
  if (a->quant_scheme == CML_QUANT_GGML) {
    return a->quant_ggml_type >= 0 && a->quant_ggml_type < CML_GGML_TYPE_COUNT;
  }
  return (a->quant_scheme == CML_QUANT_LINEAR || a->quant_scheme == CML_QUANT_NF4) && (opt & 1u) &&
         a->quant_block_size >= 1;
}

bool cmlc_kernels_quant_lookup(const cml_module_t* module, const cml_ir_node_t* node,
                               const cmlc_options_t* options, cmlc_kernel_entry_t* out) {
  (void)options;
  if (node->op == CML_OP_FUSED_QUANTIZED_DENSE) {
    if (!cmlc_q_dense_valid(module, node)) return false;
    out->run = cmlc_q_dense_run;
    out->scratch = cmlc_q_dense_scratch;
  } else if (node->op == CML_OP_QUANTIZED_EMBEDDING_LOOKUP) {
    const cml_ir_fused_attrs_t* a = &node->attrs->fused;
    if (node->input_count != 2 || a->quant_scheme != CML_QUANT_GGML || a->quant_ggml_type < 0 ||
        a->quant_ggml_type >= CML_GGML_TYPE_COUNT)
      return false;
    out->run = cmlc_q_embed_run;
    out->scratch = NULL;
  } else {
    return false;
  }
  out->in_place_input = -1;
  return true;
}

void cmlc_kernels_quant_capabilities(cml_capabilities_t* caps, const cmlc_options_t* options) {
  if (!options->fusion || options->reference) return;
  cml_capabilities_set_op(caps, CML_OP_FUSED_QUANTIZED_DENSE, true);
  cml_capabilities_set_op(caps, CML_OP_QUANTIZED_EMBEDDING_LOOKUP, true);
}
