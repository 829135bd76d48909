// SPDX-License-Identifier: Apache-2.0
// kernels/generic/linalg.c: the "linalg" kernel group: Dot / DotGeneral (every numeric dtype)
// and the group's lookup and capabilities (ConvGeneral lives in linalg_conv.c).
//
// DotGeneral is normalized to a batched [B, M, K] x [B, K, N] -> [B, M, N] product: offset
// tables map (batch, row, contracting) indices of each operand to element offsets, so any
// axis layout (transposed, several batch / contracting / free axes) reads through the same
// code. Two paths:
//   - f32-domain inputs (f32, f16, bf16) outside reference mode: the packed f32 GEMM of gemm.c,
//     which packs straight from the operands through the tables (converting half types); with
//     an f64 accumulator and float operands, the f64 GEMM the same way;
//   - everything else (and reference mode): the operands are converted into the accumulator's
//     domain in scratch ([B,M,K] and the transposed [B,N,K]) and each output is one contiguous
//     dot product, summed in k order.
//   - integer products with an i32 accumulator whose operands are I8, U8 or I16, with the AVX2
//     or AVX-512 ISA: the k-pair GEMM of gemm_x86_64_int16.c (operands widened to i16 while
//     packing, two products per i32 lane), the same bits as the generic path;
// Output axes are [batch..., lhs free..., rhs free...], i.e. exactly [B, M, N] row-major.
// Semantics follow XLA: the accumulator dtype is the attribute's (f16/bf16 accumulate in f32
// and round once), integers wrap, complex products do not conjugate, and the result converts
// to the output dtype as ConvertDType does.
#include "backends/c/kernels/generic/linalg_internal.h"

//===--- plan ---===//

typedef struct cmlc_la_dot_plan_t {
  int64_t batch, m, n, k;
  int32_t lb_count, lm_count, lk_count, rb_count, rk_count, rn_count;
  int64_t lb[CML_MAX_RANK], lm[CML_MAX_RANK], lk[CML_MAX_RANK];
  int64_t rb[CML_MAX_RANK], rk[CML_MAX_RANK], rn[CML_MAX_RANK];
  cml_dtype_t lhs_dtype, rhs_dtype, acc_dtype, out_dtype;
  cmlc__la_domain_t domain;
  bool use_gemm;   // the f32 GEMM
  bool gemm_bf16;  // with use_gemm: the AVX-512 BF16 GEMM (bf16 x bf16 operands)
  bool gemm_f64;   // the f64 GEMM
  bool gemm_i16;   // the integer GEMM (i32 accumulator): k pairs or, with gemm_i32, k values
  bool gemm_i32;   // ... one 32-bit value per k (operands past i16: u16, i32, u32, i64, u64)
  int threads;
  // Scratch layout (byte offsets, each 64-byte aligned).
  size_t off_tables, off_a, off_b, off_c, off_gemm, total;
} cmlc_la_dot_plan_t;

// bf16 products of at most this many rows with a weight stored [N, K] take the f32 GEMM's
// transposed-B tiles rather than the vdpbf16ps GEMM (which packs the whole weight). At 32 rows
// the vdpbf16ps GEMM was faster on a cached [768, 768] weight (0.22-0.26 against 0.31 ms), the
// tiles on a [4096, 4096] one from memory (7.4 against 5.9 ms); at 16 rows the tiles on both.
#define CMLC_LA_BT_BF16_M 16

static size_t cmlc_la_align(size_t x) { return cmlc_size_align(x, 64); }  // saturating

static bool cmlc_la_dtype_ok(cml_dtype_t d) { return cmlc__la_domain_of(d) != CMLC__LA_DOM_NONE; }

// Collects the axes of a |rank| shape not listed in |a| and |b| (ascending).
static int32_t cmlc_la_free_axes(int32_t rank, const int64_t* a, int32_t na, const int64_t* b,
                                 int32_t nb, int64_t* out) {
  int32_t count = 0;
  for (int32_t d = 0; d < rank; ++d) {
    bool used = false;
    for (int32_t i = 0; i < na; ++i) used |= a[i] == d;
    for (int32_t i = 0; i < nb; ++i) used |= b[i] == d;
    if (!used) out[count++] = d;
  }
  return count;
}

static int64_t cmlc_la_prod(const cml_shape_t* s, const int64_t* axes, int32_t count) {
  int64_t p = 1;
  for (int32_t i = 0; i < count; ++i) p *= s->dims[axes[i]];
  return p;
}

// Whether the rhs's free (n) axes are its trailing axes in order with its contracting (k) axes
// in order right before them: rows of B are contiguous runs of its n columns.
static bool cmlc_la_rhs_rows_contiguous(int32_t rank, const cmlc_la_dot_plan_t* p) {
  for (int32_t i = 0; i < p->rn_count; ++i)
    if (p->rn[i] != rank - p->rn_count + i) return false;
  for (int32_t i = 0; i < p->rk_count; ++i)
    if (p->rk[i] != rank - p->rn_count - p->rk_count + i) return false;
  return true;
}

// Whether the rhs's contracting (k) axes are its trailing axes in order, its free (n) axes in
// order right before them: B stored [N, K], each column's k values contiguous.
static bool cmlc_la_rhs_k_contiguous(int32_t rank, const cmlc_la_dot_plan_t* p) {
  for (int32_t i = 0; i < p->rk_count; ++i)
    if (p->rk[i] != rank - p->rk_count + i) return false;
  for (int32_t i = 0; i < p->rn_count; ++i)
    if (p->rn[i] != rank - p->rk_count - p->rn_count + i) return false;
  return true;
}

// Accumulators whose sums are those of an i32 accumulator modulo 2^width (the integer GEMM's).
static bool cmlc_la_i32_congruent(cml_dtype_t acc) {
  return acc == CML_DTYPE_I32 || acc == CML_DTYPE_U32 || acc == CML_DTYPE_I16 ||
         acc == CML_DTYPE_U16 || acc == CML_DTYPE_I8 || acc == CML_DTYPE_U8;
}

// Whether the integer GEMM writes its i32 sums straight into the output.
static bool cmlc_la_i32_direct(const cmlc_la_dot_plan_t* p) {
  return p->out_dtype == CML_DTYPE_I32 && p->acc_dtype == CML_DTYPE_I32;
}

static bool cmlc_la_dot_plan(const cml_shape_t* lhs, const cml_shape_t* rhs, const cml_shape_t* out,
                             const cml_ir_attrs_t* attrs, const cmlc_options_t* options,
                             cmlc_la_dot_plan_t* p) {
  memset(p, 0, sizeof *p);
  const cml_dot_config_t* c = &attrs->u.dot;
  p->lb_count = c->lhs_batch_count;
  p->lk_count = c->lhs_contracting_count;
  p->rb_count = c->rhs_batch_count;
  p->rk_count = c->rhs_contracting_count;
  if (p->lb_count != p->rb_count || p->lk_count != p->rk_count) return false;
  memcpy(p->lb, c->lhs_batch_axes, sizeof p->lb);
  memcpy(p->lk, c->lhs_contracting_axes, sizeof p->lk);
  memcpy(p->rb, c->rhs_batch_axes, sizeof p->rb);
  memcpy(p->rk, c->rhs_contracting_axes, sizeof p->rk);
  p->lm_count = cmlc_la_free_axes(lhs->rank, p->lb, p->lb_count, p->lk, p->lk_count, p->lm);
  p->rn_count = cmlc_la_free_axes(rhs->rank, p->rb, p->rb_count, p->rk, p->rk_count, p->rn);
  p->batch = cmlc_la_prod(lhs, p->lb, p->lb_count);
  p->m = cmlc_la_prod(lhs, p->lm, p->lm_count);
  p->k = cmlc_la_prod(lhs, p->lk, p->lk_count);
  p->n = cmlc_la_prod(rhs, p->rn, p->rn_count);
  if (p->batch != cmlc_la_prod(rhs, p->rb, p->rb_count) ||
      p->k != cmlc_la_prod(rhs, p->rk, p->rk_count))
    return false;
  p->lhs_dtype = lhs->dtype;
  p->rhs_dtype = rhs->dtype;
  p->acc_dtype = c->accumulator_dtype != CML_DTYPE_INVALID ? c->accumulator_dtype : lhs->dtype;
  p->out_dtype = out->dtype;
  p->domain = cmlc__la_domain_of(p->acc_dtype);
  if (p->domain == CMLC__LA_DOM_NONE || !cmlc_la_dtype_ok(p->lhs_dtype) ||
      !cmlc_la_dtype_ok(p->rhs_dtype) || !cmlc_la_dtype_ok(p->out_dtype))
    return false;
  p->use_gemm = p->domain == CMLC__LA_DOM_F32 && !options->reference &&
                cmlc__la_domain_of(p->lhs_dtype) == CMLC__LA_DOM_F32 &&
                cmlc__la_domain_of(p->rhs_dtype) == CMLC__LA_DOM_F32;
  // f64 accumulation of float operands (f16, bf16, f32 or f64): the f64 GEMM.
  p->gemm_f64 = p->domain == CMLC__LA_DOM_F64 && !options->reference &&
                cml_dtype_is_float(p->lhs_dtype) && cml_dtype_is_float(p->rhs_dtype) &&
                cmlc_la_dtype_ok(p->lhs_dtype) && cmlc_la_dtype_ok(p->rhs_dtype);
#if defined(CMLC_HAVE_X86_64)
  // bf16 x bf16 with AVX-512 BF16: pairs of k straight into vdpbf16ps (f32 accumulation);
  // otherwise the operands convert to f32 while packing. The choice depends on the options
  // and dtypes only, never on the thread count.
  p->gemm_bf16 = p->use_gemm && options->avx512_bf16 && options->isa == CMLC_ISA_AVX512 &&
                 p->lhs_dtype == CML_DTYPE_BF16 && p->rhs_dtype == CML_DTYPE_BF16;
  // A few rows times a bf16 matrix with contiguous rows (a decode step's x @ w): the f32
  // GEMM's GEMV streams the matrix in place, widened in registers (kern.axpy_h, up to 16 rows);
  // the bf16 GEMM would pack (copy) all of it first. 1 x 4096 x 4096 bf16 on 2 threads:
  // 6.7 -> 1.0 ms.
  if (p->gemm_bf16 && p->m <= 16 && cmlc_la_rhs_rows_contiguous(rhs->rank, p)) p->gemm_bf16 = false;
  // A weight stored [N, K] (k contiguous: x @ w^T, PyTorch's layout) with few rows: the f32
  // GEMM's transposed-B tiles read it in place, widening it as they go.
  if (p->gemm_bf16 && p->batch == 1 && p->m <= CMLC_LA_BT_BF16_M &&
      cmlc_la_rhs_k_contiguous(rhs->rank, p))
    p->gemm_bf16 = false;
  // Integers that fit i16 into an i32 accumulator: the k-pair GEMM (vpdpwssd / vpmaddwd).
  // U16 does not fit i16 and wider operands do not either; they stay generic.
  // A narrower (or unsigned 32-bit) accumulator takes it too: its sums are the i32 sums
  // modulo 2^width, the same bits (the generic path widened both operands to 8-byte copies:
  // 8x an Int8 operand's memory).
  p->gemm_i16 = cmlc_la_i32_congruent(p->acc_dtype) && !options->reference &&
                options->isa != CMLC_ISA_SCALAR && cmlc__gemm_i32_supports(p->lhs_dtype) &&
                cmlc__gemm_i32_supports(p->rhs_dtype);
  // Wider integer operands keep their low 32 bits, one k value per word (vpmulld): a product's
  // low 32 bits depend on its factors' low 32 bits only.
  p->gemm_i32 = p->gemm_i16 &&
                !(cmlc__gemm_i16_supports(p->lhs_dtype) && cmlc__gemm_i16_supports(p->rhs_dtype));
#endif
  p->threads = options->threads > 0 ? options->threads : 1;
  size_t tables = cmlc_size_of(2 * p->batch + p->m + 2 * p->k + p->n, sizeof(int64_t));
  size_t off = 0;
  p->off_tables = off;
  off = cmlc_la_align(cmlc_size_add(off, tables));
  if (p->use_gemm) {
    p->off_a = p->off_b = off;
    p->off_c = off;
    if (p->out_dtype != CML_DTYPE_F32)
      off = cmlc_la_align(cmlc_size_add(off, cmlc_size_of(p->batch * p->m * p->n, sizeof(float))));
    p->off_gemm = off;
#if defined(CMLC_HAVE_X86_64)
    if (p->gemm_bf16) {
      off =
          cmlc_la_align(cmlc_size_add(off, cmlc__gemm_bf16_scratch(p->m, p->n, p->k, p->threads)));
    } else
#endif
    {
      off = cmlc_la_align(cmlc_size_add(
          off, cmlc__gemm_f32_scratch(p->batch, p->m, p->n, p->k, options->isa, p->threads)));
    }
  } else if (p->gemm_i16) {
#if defined(CMLC_HAVE_X86_64)
    p->off_a = p->off_b = off;
    p->off_c = off;
    if (!cmlc_la_i32_direct(p))
      off =
          cmlc_la_align(cmlc_size_add(off, cmlc_size_of(p->batch * p->m * p->n, sizeof(int32_t))));
    p->off_gemm = off;
    off = cmlc_la_align(cmlc_size_add(
        off, cmlc__gemm_pairs_scratch(p->m, p->n, p->k, p->gemm_i32 ? 1 : 2, p->threads)));
#endif
  } else if (p->gemm_f64) {
    p->off_a = p->off_b = off;
    p->off_c = off;
    if (p->out_dtype != CML_DTYPE_F64)
      off = cmlc_la_align(cmlc_size_add(off, cmlc_size_of(p->batch * p->m * p->n, sizeof(double))));
    p->off_gemm = off;
    off = cmlc_la_align(cmlc_size_add(
        off, cmlc__gemm_f64_scratch(p->batch, p->m, p->n, p->k, options->isa, p->threads)));
  } else {
    size_t es = cmlc__la_domain_size(p->domain);
    p->off_a = off;
    off = cmlc_la_align(cmlc_size_add(off, cmlc_size_of(p->batch * p->m * p->k, es)));
    p->off_b = off;
    off = cmlc_la_align(cmlc_size_add(off, cmlc_size_of(p->batch * p->n * p->k, es)));
    p->off_c = p->off_gemm = off;
  }
  p->total = off;
  return true;
}

//===--- generic path ---===//

typedef struct cmlc_la_dot_ctx_t {
  const cmlc_la_dot_plan_t* plan;
  const void* lhs;
  const void* rhs;
  void* out;
  const int64_t *lhs_b, *lhs_m, *lhs_k, *rhs_b, *rhs_k, *rhs_n;
  void* a;                      // [B, M, K] in the domain
  void* bt;                     // [B, N, K] in the domain
  cmlc__gemm_narrow_fn narrow;  // f16 / bf16 output of the f32 GEMM (picked at plan time)
} cmlc_la_dot_ctx_t;

// Converts rows [begin, end) of a [B, R, K] domain array from |src| through the tables.
static void cmlc_la_convert_rows(const cmlc_la_dot_plan_t* p, const void* src, cml_dtype_t dtype,
                                 const int64_t* tb, const int64_t* tr, const int64_t* tk,
                                 int64_t rows_per_batch, void* dst, int64_t begin, int64_t end) {
  int64_t k = p->k;
  for (int64_t row = begin; row < end; ++row) {
    int64_t base = tb[row / rows_per_batch] + tr[row % rows_per_batch];
    switch (p->domain) {
      case CMLC__LA_DOM_F32: {
        float* d = (float*)dst + row * k;
        if (dtype == CML_DTYPE_F32) {
          for (int64_t i = 0; i < k; ++i) d[i] = ((const float*)src)[base + tk[i]];
        } else {
          for (int64_t i = 0; i < k; ++i) d[i] = cmlc_load_f32(src, base + tk[i], dtype);
        }
        break;
      }
      case CMLC__LA_DOM_F64: {
        double* d = (double*)dst + row * k;
        for (int64_t i = 0; i < k; ++i) d[i] = cmlc_load_f64(src, base + tk[i], dtype);
        break;
      }
      case CMLC__LA_DOM_INT: {
        uint64_t* d = (uint64_t*)dst + row * k;
        for (int64_t i = 0; i < k; ++i)
          d[i] = cmlc_load_int_bits(src, base + tk[i], dtype, p->acc_dtype);
        break;
      }
      case CMLC__LA_DOM_C64: {
        float* d = (float*)dst + 2 * row * k;
        for (int64_t i = 0; i < k; ++i) {
          d[2 * i] = (float)cmlc_load_f64(src, base + tk[i], dtype);
          d[2 * i + 1] = (float)cmlc_load_imag(src, base + tk[i], dtype);
        }
        break;
      }
      case CMLC__LA_DOM_C128: {
        double* d = (double*)dst + 2 * row * k;
        for (int64_t i = 0; i < k; ++i) {
          d[2 * i] = cmlc_load_f64(src, base + tk[i], dtype);
          d[2 * i + 1] = cmlc_load_imag(src, base + tk[i], dtype);
        }
        break;
      }
      default:
        break;
    }
  }
}

static void cmlc_la_dot_convert_a(void* vctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  cmlc_la_dot_ctx_t* c = vctx;
  cmlc_la_convert_rows(c->plan, c->lhs, c->plan->lhs_dtype, c->lhs_b, c->lhs_m, c->lhs_k,
                       c->plan->m, c->a, begin, end);
}

static void cmlc_la_dot_convert_b(void* vctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  cmlc_la_dot_ctx_t* c = vctx;
  cmlc_la_convert_rows(c->plan, c->rhs, c->plan->rhs_dtype, c->rhs_b, c->rhs_n, c->rhs_k,
                       c->plan->n, c->bt, begin, end);
}

// Output rows [begin, end) of [B*M, N]: each element is a contiguous dot product over k.
static void cmlc_la_dot_compute(void* vctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  cmlc_la_dot_ctx_t* c = vctx;
  const cmlc_la_dot_plan_t* p = c->plan;
  int64_t n = p->n, k = p->k, m = p->m;
  for (int64_t row = begin; row < end; ++row) {
    int64_t b = row / m;
    for (int64_t j = 0; j < n; ++j) {
      int64_t oi = row * n + j;
      int64_t bcol = b * n + j;
      switch (p->domain) {
        case CMLC__LA_DOM_F32: {
          const float* x = (const float*)c->a + row * k;
          const float* y = (const float*)c->bt + bcol * k;
          float s = 0;
          for (int64_t i = 0; i < k; ++i) s += x[i] * y[i];
          cmlc_store_f64(c->out, oi, p->out_dtype, s);
          break;
        }
        case CMLC__LA_DOM_F64: {
          const double* x = (const double*)c->a + row * k;
          const double* y = (const double*)c->bt + bcol * k;
          double s = 0;
          for (int64_t i = 0; i < k; ++i) s += x[i] * y[i];
          cmlc_store_f64(c->out, oi, p->out_dtype, s);
          break;
        }
        case CMLC__LA_DOM_INT: {
          const uint64_t* x = (const uint64_t*)c->a + row * k;
          const uint64_t* y = (const uint64_t*)c->bt + bcol * k;
          uint64_t s = 0;
          for (int64_t i = 0; i < k; ++i) s += x[i] * y[i];
          cmlc_store_int(c->out, oi, p->out_dtype, cmlc_int_extend(s, p->acc_dtype), p->acc_dtype);
          break;
        }
        case CMLC__LA_DOM_C64: {
          const float* x = (const float*)c->a + 2 * row * k;
          const float* y = (const float*)c->bt + 2 * bcol * k;
          float re = 0, im = 0;
          for (int64_t i = 0; i < k; ++i) {
            re += x[2 * i] * y[2 * i] - x[2 * i + 1] * y[2 * i + 1];
            im += x[2 * i] * y[2 * i + 1] + x[2 * i + 1] * y[2 * i];
          }
          cmlc_store_c(c->out, oi, p->out_dtype, re, im);
          break;
        }
        case CMLC__LA_DOM_C128: {
          const double* x = (const double*)c->a + 2 * row * k;
          const double* y = (const double*)c->bt + 2 * bcol * k;
          double re = 0, im = 0;
          for (int64_t i = 0; i < k; ++i) {
            re += x[2 * i] * y[2 * i] - x[2 * i + 1] * y[2 * i + 1];
            im += x[2 * i] * y[2 * i + 1] + x[2 * i + 1] * y[2 * i];
          }
          cmlc_store_c(c->out, oi, p->out_dtype, re, im);
          break;
        }
        default:
          break;
      }
    }
  }
}

// Converts the f32 (or f64) GEMM result to the output dtype.
static void cmlc_la_dot_store_c(void* vctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  cmlc_la_dot_ctx_t* c = vctx;
  if (c->plan->gemm_f64) {
    const double* src = c->a;
    for (int64_t i = begin; i < end; ++i) cmlc_store_f64(c->out, i, c->plan->out_dtype, src[i]);
    return;
  }
  const float* src = c->a;
  const cml_dtype_t dt = c->plan->out_dtype;
  if (c->narrow) {
    c->narrow(src + begin, (uint16_t*)c->out + begin, end - begin);
    return;
  }
  for (int64_t i = begin; i < end; ++i) cmlc_store_f64(c->out, i, dt, src[i]);
}

// Converts the i32 result of the integer GEMM to the output dtype, as the generic path stores
// its accumulator: cut to the accumulator's width first.
static void cmlc_la_dot_store_i32(void* vctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  cmlc_la_dot_ctx_t* c = vctx;
  const int32_t* src = c->a;
  const cml_dtype_t dt = c->plan->out_dtype, acc = c->plan->acc_dtype;
  for (int64_t i = begin; i < end; ++i)
    cmlc_store_int(c->out, i, dt, cmlc_int_extend((uint32_t)src[i], acc), acc);
}

static int64_t cmlc_la_chunk(int64_t work_per_item) {
  int64_t w = work_per_item > 0 ? work_per_item : 1;
  int64_t chunk = (int64_t)32768 / w;
  return chunk < 1 ? 1 : chunk;
}

static size_t cmlc_la_dot_scratch(const cml_module_t* module, const cml_ir_node_t* node,
                                  const cmlc_options_t* options) {
  cmlc_la_dot_plan_t p;
  if (!cmlc_la_dot_plan(&module->values[node->inputs[0]].shape,
                        &module->values[node->inputs[1]].shape,
                        &module->values[node->first_output].shape, node->attrs, options, &p))
    return 0;
  return p.total;
}

// A constant rhs packed once for the f32 / f64 GEMM (entry.prepare): the panels of
// cmlc__gemm_*_prepack, then the rhs offset tables they were packed through. Only for products
// that pack B per execute: batch 1, M > 1 and N > 1 (GEMV streams B as it is), and B larger
// than what the driver reads in place.
static size_t cmlc_la_dot_prepare(const cml_module_t* module, const cml_ir_node_t* node,
                                  const cmlc_options_t* options, const void* const* consts,
                                  void* dst) {
  if (!consts[1] || node->input_count != 2) return 0;
  const cml_shape_t* lhs = &module->values[node->inputs[0]].shape;
  const cml_shape_t* rhs = &module->values[node->inputs[1]].shape;
  cmlc_la_dot_plan_t p;
  if (!cmlc_la_dot_plan(lhs, rhs, &module->values[node->first_output].shape, node->attrs, options,
                        &p))
    return 0;
  if (!((p.use_gemm && !p.gemm_bf16) || p.gemm_f64) || p.batch != 1 || p.m <= 1 || p.n <= 1 ||
      p.k <= 0 || p.k * p.n <= 64 * 256)
    return 0;
  // A weight stored [N, K] (k the rhs's last axis) times a few rows: the GEMV dot forms read it
  // in place (gemm_impl.h's gemv_try), so a packed copy would go unused.
  const bool half_rhs = p.rhs_dtype == CML_DTYPE_BF16 || p.rhs_dtype == CML_DTYPE_F16;
  if (cmlc_la_rhs_k_contiguous(rhs->rank, &p) &&
      p.m <= (half_rhs ? CMLC__GEMM_DOT_H_M : CMLC__GEMM_DOT_ROWS_M))
    return 0;
  cmlc__gemm_problem_t g32;
  cmlc__gemm_f64_problem_t g64;
  memset(&g32, 0, sizeof g32);
  memset(&g64, 0, sizeof g64);
  g32.batch = g64.batch = 1;
  g32.m = g64.m = p.m;
  g32.n = g64.n = p.n;
  g32.k = g64.k = p.k;
  const size_t panel = cmlc_la_align(p.gemm_f64 ? cmlc__gemm_f64_prepack(&g64, options->isa, NULL)
                                                : cmlc__gemm_f32_prepack(&g32, options->isa, NULL));
  const size_t total = panel + (size_t)(1 + p.k + p.n) * sizeof(int64_t);
  if (panel == 0 || !dst) return panel ? total : 0;
  int64_t strides[CML_MAX_RANK];
  cmlc_shape_strides(rhs, strides);
  int64_t* tb = (int64_t*)((char*)dst + panel);
  int64_t* tk = tb + 1;
  int64_t* tn = tk + p.k;
  cmlc__la_offsets(p.rb_count, p.rb, rhs->dims, strides, tb);
  cmlc__la_offsets(p.rk_count, p.rk, rhs->dims, strides, tk);
  cmlc__la_offsets(p.rn_count, p.rn, rhs->dims, strides, tn);
  const cmlc__gemm_operand_t b = {consts[1], p.rhs_dtype, tb, tk, tn};
  g32.b = g64.b = b;
  const size_t packed = p.gemm_f64 ? cmlc__gemm_f64_prepack(&g64, options->isa, dst)
                                   : cmlc__gemm_f32_prepack(&g32, options->isa, dst);
  return packed ? total : 0;
}

static cml_status_t cmlc_la_dot_run(const cmlc_kernel_args_t* args) {
  cmlc_la_dot_plan_t p;
  const cml_shape_t* lhs = args->input_shapes[0];
  const cml_shape_t* rhs = args->input_shapes[1];
  char text[3][160];
  if (!cmlc_la_dot_plan(lhs, rhs, args->output_shapes[0], args->node->attrs, args->options, &p) ||
      args->scratch_size < p.total) {
    return cml_status_make(
        CML_STATUS_INTERNAL, "DotGeneral: inconsistent plan for lhs %s, rhs %s -> %s (scratch %zu)",
        cml_shape_format(lhs, text[0], sizeof text[0]),
        cml_shape_format(rhs, text[1], sizeof text[1]),
        cml_shape_format(args->output_shapes[0], text[2], sizeof text[2]), args->scratch_size);
  }
  int64_t total_out = p.batch * p.m * p.n;
  if (total_out == 0) return CML_OK;
  char* s = args->scratch;
  int64_t* tables = (int64_t*)(s + p.off_tables);
  int64_t lhs_strides[CML_MAX_RANK], rhs_strides[CML_MAX_RANK];
  cmlc_shape_strides(lhs, lhs_strides);
  cmlc_shape_strides(rhs, rhs_strides);
  cmlc_la_dot_ctx_t c;
  memset(&c, 0, sizeof c);
  c.plan = &p;
  c.lhs = args->inputs[0];
  c.rhs = args->inputs[1];
  c.out = args->outputs[0];
  c.narrow = (cmlc__gemm_narrow_fn)args->impl[1];
  int64_t* t = tables;
  c.lhs_b = t;
  t += cmlc__la_offsets(p.lb_count, p.lb, lhs->dims, lhs_strides, t);
  c.lhs_m = t;
  t += cmlc__la_offsets(p.lm_count, p.lm, lhs->dims, lhs_strides, t);
  c.lhs_k = t;
  t += cmlc__la_offsets(p.lk_count, p.lk, lhs->dims, lhs_strides, t);
  c.rhs_b = t;
  t += cmlc__la_offsets(p.rb_count, p.rb, rhs->dims, rhs_strides, t);
  c.rhs_k = t;
  t += cmlc__la_offsets(p.rk_count, p.rk, rhs->dims, rhs_strides, t);
  c.rhs_n = t;
  cmlc__la_offsets(p.rn_count, p.rn, rhs->dims, rhs_strides, t);

  if ((p.use_gemm && !p.gemm_bf16) || p.gemm_f64 || p.gemm_i16) {
    if (!args->impl[0]) {
      return cml_status_make(CML_STATUS_INTERNAL,
                             "DotGeneral: no GEMM driver was picked at plan time for lhs %s, "
                             "rhs %s -> %s",
                             cml_shape_format(lhs, text[0], sizeof text[0]),
                             cml_shape_format(rhs, text[1], sizeof text[1]),
                             cml_shape_format(args->output_shapes[0], text[2], sizeof text[2]));
    }
  }
  if (p.use_gemm) {
    cmlc_pool_t* pool = args->pool;
    if (cmlc_pool_thread_count(pool) > p.threads) pool = NULL;
    cmlc__gemm_problem_t g;
    g.batch = p.batch;
    g.m = p.m;
    g.n = p.n;
    g.k = p.k;
    g.a = (cmlc__gemm_operand_t){c.lhs, p.lhs_dtype, c.lhs_b, c.lhs_m, c.lhs_k};
    g.b = (cmlc__gemm_operand_t){c.rhs, p.rhs_dtype, c.rhs_b, c.rhs_k, c.rhs_n};
    g.c = p.out_dtype == CML_DTYPE_F32 ? (float*)c.out : (float*)(s + p.off_c);
#if defined(CMLC_HAVE_X86_64)
    if (p.gemm_bf16) {
      // A bf16 output is rounded in the micro-kernel's store: no conversion pass.
      const bool bf16_out = p.out_dtype == CML_DTYPE_BF16;
      cmlc__gemm_bf16(&g, bf16_out ? (uint16_t*)c.out : NULL, pool, s + p.off_gemm, p.threads);
      if (bf16_out) return CML_OK;
    } else
#endif
    {
      ((cmlc__gemm_f32_fn)args->impl[0])(&g, args->prepared, pool, s + p.off_gemm, p.threads);
    }
    if (p.out_dtype != CML_DTYPE_F32) {
      c.a = g.c;
      cmlc_parallel_for(args->pool, total_out, 16384, cmlc_la_dot_store_c, &c);
    }
    return CML_OK;
  }
#if defined(CMLC_HAVE_X86_64)
  if (p.gemm_i16) {
    cmlc_pool_t* pool = args->pool;
    if (cmlc_pool_thread_count(pool) > p.threads) pool = NULL;
    cmlc__gemm_pairs_problem_t g;
    g.batch = p.batch;
    g.m = p.m;
    g.n = p.n;
    g.k = p.k;
    g.a = (cmlc__gemm_operand_t){c.lhs, p.lhs_dtype, c.lhs_b, c.lhs_m, c.lhs_k};
    g.b = (cmlc__gemm_operand_t){c.rhs, p.rhs_dtype, c.rhs_b, c.rhs_k, c.rhs_n};
    g.c = cmlc_la_i32_direct(&p) ? c.out : (void*)(s + p.off_c);
    g.out = NULL;
    ((cmlc__gemm_i16_fn)args->impl[0])(&g, pool, s + p.off_gemm, p.threads);
    if (!cmlc_la_i32_direct(&p)) {
      c.a = g.c;
      cmlc_parallel_for(args->pool, total_out, 16384, cmlc_la_dot_store_i32, &c);
    }
    return CML_OK;
  }
#endif
  if (p.gemm_f64) {
    cmlc_pool_t* pool = args->pool;
    if (cmlc_pool_thread_count(pool) > p.threads) pool = NULL;
    cmlc__gemm_f64_problem_t g;
    g.batch = p.batch;
    g.m = p.m;
    g.n = p.n;
    g.k = p.k;
    g.a = (cmlc__gemm_operand_t){c.lhs, p.lhs_dtype, c.lhs_b, c.lhs_m, c.lhs_k};
    g.b = (cmlc__gemm_operand_t){c.rhs, p.rhs_dtype, c.rhs_b, c.rhs_k, c.rhs_n};
    g.c = p.out_dtype == CML_DTYPE_F64 ? (double*)c.out : (double*)(s + p.off_c);
    ((cmlc__gemm_f64_fn)args->impl[0])(&g, args->prepared, pool, s + p.off_gemm, p.threads);
    if (p.out_dtype != CML_DTYPE_F64) {
      c.a = g.c;
      cmlc_parallel_for(args->pool, total_out, 16384, cmlc_la_dot_store_c, &c);
    }
    return CML_OK;
  }
  c.a = s + p.off_a;
  c.bt = s + p.off_b;
  cmlc_parallel_for(args->pool, p.batch * p.m, cmlc_la_chunk(p.k), cmlc_la_dot_convert_a, &c);
  cmlc_parallel_for(args->pool, p.batch * p.n, cmlc_la_chunk(p.k), cmlc_la_dot_convert_b, &c);
  cmlc_parallel_for(args->pool, p.batch * p.m, cmlc_la_chunk(p.k * p.n), cmlc_la_dot_compute, &c);
  return CML_OK;
}

//===--- group lookup and capabilities ---===//

bool cmlc_kernels_linalg_lookup(const cml_module_t* module, const cml_ir_node_t* node,
                                const cmlc_options_t* options, cmlc_kernel_entry_t* out) {
  if (node->op == CML_OP_CONV_GENERAL) return cmlc__conv_lookup(module, node, options, out);
  if (node->op != CML_OP_DOT && node->op != CML_OP_DOT_GENERAL) return false;
  if (node->input_count != 2 || node->output_count < 1) return false;
  cmlc_la_dot_plan_t p;
  if (!cmlc_la_dot_plan(&module->values[node->inputs[0]].shape,
                        &module->values[node->inputs[1]].shape,
                        &module->values[node->first_output].shape, node->attrs, options, &p))
    return false;
  if (!(cml_op_dtypes(CML_OP_DOT_GENERAL) & CML_DTYPE_BIT(p.lhs_dtype)) ||
      !(cml_op_dtypes(CML_OP_DOT_GENERAL) & CML_DTYPE_BIT(p.rhs_dtype)))
    return false;
  out->run = cmlc_la_dot_run;
  out->scratch = cmlc_la_dot_scratch;
  out->in_place_input = -1;
  // The GEMM driver and the output rounding of this ISA, picked once here.
  out->impl[0] = out->impl[1] = NULL;
  out->prepare = NULL;
  if (p.gemm_f64) {
    out->impl[0] = (cmlc_impl_fn)cmlc__gemm_f64_pick(options->isa);
  } else if (p.use_gemm && !p.gemm_bf16) {
    out->impl[0] = (cmlc_impl_fn)cmlc__gemm_f32_pick(options->isa);
  }
  if (p.use_gemm) out->impl[1] = (cmlc_impl_fn)cmlc__gemm_narrow_pick(p.out_dtype, options->isa);
  if (out->impl[0]) out->prepare = cmlc_la_dot_prepare;
#if defined(CMLC_HAVE_X86_64)
  // The integer GEMM of this ISA (never prepacked: cmlc_la_dot_prepare takes f32 / f64 only).
  if (p.gemm_i16) {
    out->impl[0] = p.gemm_i32
                       ? (cmlc_impl_fn)cmlc__gemm_i32_pick(options->isa)
                       : (cmlc_impl_fn)cmlc__gemm_i16_pick(options->isa, options->avx512_vnni);
    out->prepare = NULL;
  }
#endif
  return true;
}

void cmlc_kernels_linalg_capabilities(cml_capabilities_t* caps) {
  cmlc_kernels_group_capabilities(caps, CML_OPG_LINALG);
}
