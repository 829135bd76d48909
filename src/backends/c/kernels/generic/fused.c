// SPDX-License-Identifier: Apache-2.0
// kernels/generic/fused.c: the "fused" kernel group: FusedSoftmax, FusedGelu,
// FusedLayerNorm and FusedDense (cml/fused.h), and the group's lookup and capabilities (which
// also cover FusedScaledDotProductAttention, whose kernel is in fused_attention.c).
//
// Each kernel does in one pass over its rows what the decomposition (src/core/fused.c) does in
// several ops. Float16, BFloat16 and Float32 are computed in f32 and Float64 in f64, with the
// per-row sums (softmax, layer norm statistics) accumulated in double; half-precision results
// are rounded once. Work is split over rows (softmax lanes, layer-norm rows, dense output rows)
// or fixed element chunks (gelu), and every row is computed by one task in a fixed order, so
// results never depend on the thread count. FusedDense runs the packed GEMM of the linalg
// group (kernels/generic/gemm.c), then adds the bias and applies the activation in place.
//
// Tolerances against the decomposition (checked by backendtest/cases_fused.c and
// tests/unit/fused_test.c): softmax, gelu and layer norm within a few ulps of the computation
// dtype (the decomposition sums in its own order and rounds every intermediate); dense within
// the GEMM's own bound plus one rounding of the bias and activation.
//
// With a SIMD ISA, the lookup also picks vector inner loops (kernels/x86_64/
// elementwise_x86_64_fused.h, vector math in kernels/x86_64/vecmath.h) for f32, bf16 and f16:
// GELU, the dense epilogue, contiguous layer-norm rows and contiguous softmax lanes; they sum
// rows in f32 over 32 fixed virtual lanes (the scalar code sums in double) and their
// transcendentals are within a few ulp of libm (bounds in vecmath.h). Softmax along a
// non-last axis runs one lane per vector lane (the inner axis is contiguous), and short rows
// and narrow inner axes are packed W lanes at a time into a buffer for that same loop; these
// sum each lane in f32 over blocks of 64 elements added up in double, with lanewise operations
// only, so a lane's bits depend neither on its position nor on the thread count.
//
// The group is advertised only when fusion is on and the backend does not run its reference
// kernels: "c:fusion=false" (GOMLX_FUSION=0) and "c:reference=true" make the builder decompose.
#include "backends/c/kernels/generic/elementwise_internal.h"
#include "backends/c/kernels/generic/fused_attention.h"
#include "backends/c/kernels/generic/linalg_internal.h"
#include "cml/fused.h"

static size_t cmlc_fk_align(size_t x) { return cmlc_size_align(x, 64); }  // saturating

// Stores an f32-domain result into element |i| of |dtype| (F32, F16 or BF16).
static inline void cmlc_fk_store_f32(void* p, int64_t i, cml_dtype_t dtype, float v) {
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

//===--- FusedSoftmax ---===//
//
// The operand is viewed as [outer, n, inner] around the axis; a lane is one (outer, inner)
// pair: its n elements sit |inner| apart. Three passes per lane: max, exp(x - max) (written to
// the output) with their sum, then the division.

typedef struct cmlc_fk_softmax_ctx_t {
  cml_dtype_t dtype;
  int64_t n, inner;
  const void* x;
  void* y;
  cmlc_fk_softmax_row_fn row;        // SIMD loop for contiguous lanes (inner 1), or NULL
  cmlc_fk_softmax_lanes_fn lanes;    // SIMD loop across adjacent strided lanes (inner > 1), or NULL
  cmlc_fk_softmax_packed_fn packed;  // SIMD loop for short rows and narrow inner axes, or NULL
} cmlc_fk_softmax_ctx_t;

static void cmlc_fk_softmax_lanes(void* vctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const cmlc_fk_softmax_ctx_t* c = vctx;
  const int64_t n = c->n, inner = c->inner;
  if (c->row && inner == 1) {
    const size_t es = cmlc_dtype_size(c->dtype);
    for (int64_t lane = begin; lane < end; ++lane) {
      c->row((char*)c->y + (size_t)(lane * n) * es, (const char*)c->x + (size_t)(lane * n) * es, n);
    }
    return;
  }
  for (int64_t lane = begin; lane < end; ++lane) {
    const int64_t base = (lane / inner) * n * inner + lane % inner;
    if (c->dtype == CML_DTYPE_F64) {
      const double* x = (const double*)c->x + base;
      double* y = (double*)c->y + base;
      double m = -INFINITY;
      for (int64_t j = 0; j < n; ++j)
        m = x[j * inner] > m || isnan(x[j * inner]) ? x[j * inner] : m;
      // The sum carries its rounding errors (Neumaier): a plain double sum of 1e6 terms was
      // 522 ulps off in the outputs, the decomposition's 5.
      double sum = 0, carry = 0;
      for (int64_t j = 0; j < n; ++j) {
        double e = exp(x[j * inner] - m);
        y[j * inner] = e;
        const double t = sum + e;
        carry += fabs(sum) >= fabs(e) ? (sum - t) + e : (e - t) + sum;
        sum = t;
      }
      sum += carry;
      for (int64_t j = 0; j < n; ++j) y[j * inner] /= sum;
    } else if (c->dtype == CML_DTYPE_F32) {
      const float* x = (const float*)c->x + base;
      float* y = (float*)c->y + base;
      float m = -INFINITY;
      for (int64_t j = 0; j < n; ++j)
        m = x[j * inner] > m || isnan(x[j * inner]) ? x[j * inner] : m;
      double sum = 0;
      for (int64_t j = 0; j < n; ++j) {
        float e = expf(x[j * inner] - m);
        y[j * inner] = e;
        sum += e;
      }
      const float s = (float)sum;
      for (int64_t j = 0; j < n; ++j) y[j * inner] /= s;
    } else {
      // f16 / bf16: computed in f32; the exponentials are kept in f32 until the division (the
      // output may alias the input, so they are recomputed rather than stored in half).
      float m = -INFINITY;
      for (int64_t j = 0; j < n; ++j) {
        float v = cmlc_load_f32(c->x, base + j * inner, c->dtype);
        m = v > m || isnan(v) ? v : m;
      }
      double sum = 0;
      for (int64_t j = 0; j < n; ++j)
        sum += expf(cmlc_load_f32(c->x, base + j * inner, c->dtype) - m);
      const float s = (float)sum;
      for (int64_t j = 0; j < n; ++j) {
        int64_t idx = base + j * inner;
        float e = expf(cmlc_load_f32(c->x, idx, c->dtype) - m);
        cmlc_fk_store_f32(c->y, idx, c->dtype, e / s);
      }
    }
  }
}

// The SIMD paths (one thread of a Zen 4, 1M f32 elements): rows (inner 1) of up to 64 and
// inner axes below 32 are packed (rows of 32: 7.7 -> 1.6 ms against the row kernel; rows of
// 128 and up are faster in the row kernel; inner 17: 2.1 ms packed, 4.5 in vectors); wider
// inner axes run softmax_lanes on whole vectors, 64 lanes a task, with the last lanes packed
// (inner 33: 3.4 ms with the last lane in a padded vector, 2.9 packed). Inner axes below 16
// with rows past the packing buffer keep the scalar loop (most of a vector would be padding).
enum {
  CMLC_FK_SOFTMAX_LANE_TASK = 64,  // a multiple of every vector width
  CMLC_FK_SOFTMAX_PACK_ROW = 64,
  CMLC_FK_SOFTMAX_PACK_INNER = 32,
};

// Tasks [begin, end) of the strided SIMD path: task t is lanes [64 (t % blocks), +64) of outer
// index t / blocks, blocks = ceil(inner / 64), cut at |inner|.
static void cmlc_fk_softmax_lane_blocks(void* vctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const cmlc_fk_softmax_ctx_t* c = vctx;
  const int64_t n = c->n, inner = c->inner;
  const int64_t blocks = (inner + CMLC_FK_SOFTMAX_LANE_TASK - 1) / CMLC_FK_SOFTMAX_LANE_TASK;
  const size_t es = cmlc_dtype_size(c->dtype);
  for (int64_t t = begin; t < end; ++t) {
    const int64_t j0 = (t % blocks) * CMLC_FK_SOFTMAX_LANE_TASK;
    const int64_t count =
        inner - j0 < CMLC_FK_SOFTMAX_LANE_TASK ? inner - j0 : CMLC_FK_SOFTMAX_LANE_TASK;
    const size_t off = (size_t)((t / blocks) * n * inner + j0) * es;
    // Whole vectors here; the last few lanes packed (softmax_lanes pads a partial vector).
    const int64_t whole =
        c->packed && n <= CMLC_FK_SOFTMAX_PACKED_MAX_N ? count & ~(int64_t)15 : count;
    if (whole > 0) c->lanes((char*)c->y + off, (const char*)c->x + off, n, inner, whole);
    if (whole < count)
      c->packed(c->y, c->x, n, inner, (t / blocks) * inner + j0 + whole, count - whole);
  }
}

// Lanes [begin, end) of the packed SIMD path (n <= CMLC_FK_SOFTMAX_PACKED_MAX_N).
static void cmlc_fk_softmax_packed_lanes(void* vctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const cmlc_fk_softmax_ctx_t* c = vctx;
  c->packed(c->y, c->x, c->n, c->inner, begin, end - begin);
}

static cml_status_t cmlc_fk_softmax_run(const cmlc_kernel_args_t* args) {
  const cml_shape_t* xs = args->input_shapes[0];
  const int64_t axis = args->node->attrs->axis;
  cmlc_fk_softmax_ctx_t c = {xs->dtype,
                             xs->dims[axis],
                             1,
                             args->inputs[0],
                             args->outputs[0],
                             (cmlc_fk_softmax_row_fn)args->impl[0],
                             (cmlc_fk_softmax_lanes_fn)args->impl[1],
                             (cmlc_fk_softmax_packed_fn)args->impl[2]};
  int64_t outer = 1;
  for (int32_t d = 0; d < xs->rank; ++d) {
    if (d < axis) outer *= xs->dims[d];
    if (d > axis) c.inner *= xs->dims[d];
  }
  const int64_t lanes = outer * c.inner;
  if (lanes == 0 || c.n == 0) return CML_OK;
  int64_t chunk = 8192 / c.n;
  if (c.packed && c.n <= CMLC_FK_SOFTMAX_PACKED_MAX_N &&
      (c.inner == 1 ? c.n <= CMLC_FK_SOFTMAX_PACK_ROW : c.inner < CMLC_FK_SOFTMAX_PACK_INNER)) {
    // Short rows and narrow inner axes: a multiple of 16 lanes per task, so the blocks of W
    // lanes stay whole.
    cmlc_parallel_for(args->pool, lanes, (chunk + 15) & ~(int64_t)15, cmlc_fk_softmax_packed_lanes,
                      &c);
    return CML_OK;
  }
  if (c.lanes && c.inner >= 16) {
    const int64_t blocks = (c.inner + CMLC_FK_SOFTMAX_LANE_TASK - 1) / CMLC_FK_SOFTMAX_LANE_TASK;
    chunk /= CMLC_FK_SOFTMAX_LANE_TASK;
    cmlc_parallel_for(args->pool, outer * blocks, chunk < 1 ? 1 : chunk,
                      cmlc_fk_softmax_lane_blocks, &c);
    return CML_OK;
  }
  cmlc_parallel_for(args->pool, lanes, chunk < 1 ? 1 : chunk, cmlc_fk_softmax_lanes, &c);
  return CML_OK;
}

//===--- FusedGelu ---===//

typedef struct cmlc_fk_gelu_ctx_t {
  cml_dtype_t dtype;
  bool exact;
  const void* x;
  void* y;
  cmlc_fk_map_fn simd;  // SIMD loop for the dtype and form, or NULL
} cmlc_fk_gelu_ctx_t;

static inline float cmlc_fk_gelu_f32(float v, bool exact) {
  if (exact) return 0.5f * v * (1.0f + erff(v * (float)M_SQRT1_2));
  float inner = 0.79788456080286535588f * (v + 0.044715f * v * v * v);
  return 0.5f * v * (1.0f + tanhf(inner));
}

static inline double cmlc_fk_gelu_f64(double v, bool exact) {
  if (exact) return 0.5 * v * (1.0 + erf(v * M_SQRT1_2));
  double inner = 0.79788456080286535588 * (v + 0.044715 * v * v * v);
  return 0.5 * v * (1.0 + tanh(inner));
}

static void cmlc_fk_gelu_chunk(void* vctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const cmlc_fk_gelu_ctx_t* c = vctx;
  if (c->simd) {
    const size_t es = cmlc_dtype_size(c->dtype);
    c->simd((char*)c->y + (size_t)begin * es, (const char*)c->x + (size_t)begin * es, end - begin);
    return;
  }
  if (c->dtype == CML_DTYPE_F64) {
    const double* x = c->x;
    double* y = c->y;
    for (int64_t i = begin; i < end; ++i) y[i] = cmlc_fk_gelu_f64(x[i], c->exact);
  } else if (c->dtype == CML_DTYPE_F32) {
    const float* x = c->x;
    float* y = c->y;
    for (int64_t i = begin; i < end; ++i) y[i] = cmlc_fk_gelu_f32(x[i], c->exact);
  } else {
    for (int64_t i = begin; i < end; ++i) {
      float v = cmlc_load_f32(c->x, i, c->dtype);
      cmlc_fk_store_f32(c->y, i, c->dtype, cmlc_fk_gelu_f32(v, c->exact));
    }
  }
}

static cml_status_t cmlc_fk_gelu_run(const cmlc_kernel_args_t* args) {
  const cml_shape_t* xs = args->input_shapes[0];
  cmlc_fk_gelu_ctx_t c = {xs->dtype, args->node->attrs->fused.exact, args->inputs[0],
                          args->outputs[0], (cmlc_fk_map_fn)args->impl[0]};
  cmlc_parallel_for(args->pool, cml_shape_element_count(xs), 4096, cmlc_fk_gelu_chunk, &c);
  return CML_OK;
}

//===--- FusedLayerNorm ---===//
//
// Rows are the index space of the kept axes, and a row's elements that of the normalized axes
// (row-major over them, which is also the order of gamma and beta). Both are addressed through
// offset tables built in scratch, so any set of axes works without a transpose; for the usual
// trailing axes the row's elements are simply contiguous.

typedef struct cmlc_fk_ln_ctx_t {
  cml_dtype_t dtype;
  int64_t n;
  double eps;
  const int64_t* row_offsets;
  const int64_t* col_offsets;
  const void* x;
  const void* gamma;  // NULL: 1
  const void* beta;   // NULL: 0
  void* y;
  cmlc_fk_ln_row_fn row;  // SIMD loop when every row is contiguous, or NULL
} cmlc_fk_ln_ctx_t;

// The offset of row |r|'s first element and of its element |j| after it (no tables: the
// normalized axes are the trailing ones, rows r * n).
static inline int64_t cmlc_fk_ln_row(const cmlc_fk_ln_ctx_t* c, int64_t r) {
  return c->row_offsets ? c->row_offsets[r] : r * c->n;
}
static inline int64_t cmlc_fk_ln_col(const cmlc_fk_ln_ctx_t* c, int64_t j) {
  return c->col_offsets ? c->col_offsets[j] : j;
}

static void cmlc_fk_ln_rows(void* vctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const cmlc_fk_ln_ctx_t* c = vctx;
  const cml_dtype_t dt = c->dtype;
  const int64_t n = c->n;
  if (c->row) {
    const size_t es = cmlc_dtype_size(dt);
    for (int64_t r = begin; r < end; ++r) {
      const size_t off = (size_t)cmlc_fk_ln_row(c, r) * es;
      c->row((char*)c->y + off, (const char*)c->x + off, c->gamma, c->beta, n, (float)c->eps);
    }
    return;
  }
  // In double, as the SIMD rows do in f32: the mean shifted by the row's first element (a
  // constant row normalizes to exact zeros however large it is: the plain mean of 64 x 3e20 in
  // Float64 was an ulp off, and every output +-1) and the corrected two-pass variance. Float64
  // rows whose squares could overflow (|x| past 2^480) are scaled by a power of two first
  // (exact), with eps scaled alike.
  for (int64_t r = begin; r < end; ++r) {
    const int64_t base = cmlc_fk_ln_row(c, r);
    double scale = 1, eps = c->eps;
    if (dt == CML_DTYPE_F64) {
      double big = 0;
      for (int64_t j = 0; j < n; ++j) {
        const double a = fabs(cmlc_load_f64(c->x, base + cmlc_fk_ln_col(c, j), dt));
        if (a > big) big = a;  // NaN is skipped here and propagates below
      }
      if (big > 0x1p480 && isfinite(big)) {
        int e = 0;
        (void)frexp(big, &e);
        scale = ldexp(1.0, -e);
        eps = ldexp(eps, -2 * e);
      }
    }
    const double first = cmlc_load_f64(c->x, base, dt) * scale;
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) {
      sum += cmlc_load_f64(c->x, base + cmlc_fk_ln_col(c, j), dt) * scale - first;
    }
    const double m = first + sum / (double)n;
    double rs = 0, sq = 0;
    for (int64_t j = 0; j < n; ++j) {
      const double d = cmlc_load_f64(c->x, base + cmlc_fk_ln_col(c, j), dt) * scale - m;
      rs += d;
      sq += d * d;
    }
    const double corr = rs / (double)n;
    double var = (sq - rs * corr) / (double)n;
    if (!(var > 0)) var = var == var ? 0 : var;  // rounding below 0; NaN stays NaN
    const double rstd = 1.0 / sqrt(var + eps);
    for (int64_t j = 0; j < n; ++j) {
      const int64_t idx = base + cmlc_fk_ln_col(c, j);
      double v = ((cmlc_load_f64(c->x, idx, dt) * scale - m) - corr) * rstd;
      if (c->gamma) v *= cmlc_load_f64(c->gamma, j, dt);
      if (c->beta) v += cmlc_load_f64(c->beta, j, dt);
      cmlc_store_f64(c->y, idx, dt, v);
    }
  }
}

// Splits x's axes into kept and normalized ones; returns the row count and sets |*out_n|.
static int64_t cmlc_fk_ln_split(const cml_shape_t* xs, const cml_ir_attrs_t* attrs, int64_t* kept,
                                int32_t* kept_count, int64_t* out_n) {
  int64_t rows = 1, n = 1;
  *kept_count = 0;
  for (int32_t d = 0; d < xs->rank; ++d) {
    bool norm = false;
    for (int32_t i = 0; i < attrs->axis_count; ++i) norm |= attrs->axes[i] == d;
    if (norm) {
      n *= xs->dims[d];
    } else {
      kept[(*kept_count)++] = d;
      rows *= xs->dims[d];
    }
  }
  *out_n = n;
  return rows;
}

// Whether the normalized axes are the trailing ones in order: rows and their elements are then
// contiguous, and no offset tables are needed.
static bool cmlc_fk_ln_trailing(const cml_shape_t* xs, const cml_ir_attrs_t* attrs) {
  for (int32_t i = 0; i < attrs->axis_count; ++i) {
    if (attrs->axes[i] != xs->rank - attrs->axis_count + i) return false;
  }
  return true;
}

static size_t cmlc_fk_ln_scratch(const cml_module_t* module, const cml_ir_node_t* node,
                                 const cmlc_options_t* options) {
  (void)options;
  const cml_shape_t* xs = &module->values[node->inputs[0]].shape;
  int64_t kept[CML_MAX_RANK], n;
  int32_t kept_count;
  int64_t rows = cmlc_fk_ln_split(xs, node->attrs, kept, &kept_count, &n);
  return cmlc_fk_ln_trailing(xs, node->attrs) ? 0 : cmlc_size_of(rows + n, sizeof(int64_t));
}

static cml_status_t cmlc_fk_ln_run(const cmlc_kernel_args_t* args) {
  const cml_shape_t* xs = args->input_shapes[0];
  const cml_ir_attrs_t* attrs = args->node->attrs;
  int64_t kept[CML_MAX_RANK], n;
  int32_t kept_count;
  int64_t rows = cmlc_fk_ln_split(xs, attrs, kept, &kept_count, &n);
  if (rows == 0 || n == 0) return CML_OK;
  int64_t* row_offsets = NULL;
  int64_t* col_offsets = NULL;
  if (!cmlc_fk_ln_trailing(xs, attrs)) {
    int64_t strides[CML_MAX_RANK];
    cmlc_shape_strides(xs, strides);
    row_offsets = args->scratch;
    col_offsets = row_offsets + rows;
    cmlc__la_offsets(kept_count, kept, xs->dims, strides, row_offsets);
    cmlc__la_offsets(attrs->axis_count, attrs->axes, xs->dims, strides, col_offsets);
  }
  cmlc_fk_ln_ctx_t c;
  memset(&c, 0, sizeof c);
  c.dtype = xs->dtype;
  c.n = n;
  c.eps = attrs->fused.epsilon;
  c.row_offsets = row_offsets;
  c.col_offsets = col_offsets;
  c.x = args->inputs[0];
  uint32_t next = 1;
  if (attrs->fused.optional_inputs & 1u) c.gamma = args->inputs[next++];
  if (attrs->fused.optional_inputs & 2u) c.beta = args->inputs[next++];
  c.y = args->outputs[0];
  // The SIMD row loop needs the row's elements contiguous and in order (trailing axes).
  bool contiguous = true;
  for (int64_t j = 0; col_offsets && j < n && contiguous; ++j) contiguous = col_offsets[j] == j;
  c.row = contiguous ? (cmlc_fk_ln_row_fn)args->impl[0] : NULL;
  int64_t chunk = 16384 / n;
  cmlc_parallel_for(args->pool, rows, chunk < 1 ? 1 : chunk, cmlc_fk_ln_rows, &c);
  return CML_OK;
}

//===--- FusedDense ---===//
//
// x is [M, K] (batch axes flattened), W is [K, N] or [N, K] (output axes flattened), both
// read in place by the GEMM through offset tables. The product lands in the output (f32, f64)
// or in an f32 scratch matrix (f16, bf16); the epilogue then adds the bias, applies the
// activation and stores, one output row per task.

typedef struct cmlc_fk_dense_plan_t {
  int64_t m, n, k;
  bool f64;
  bool bf16;  // bf16 x bf16 on AVX-512 BF16: the vdpbf16ps GEMM DotGeneral takes
  int threads;
  size_t off_tables, off_c, off_gemm, total;
} cmlc_fk_dense_plan_t;

static void cmlc_fk_dense_plan(const cml_shape_t* xs, const cml_shape_t* ws, const cml_shape_t* out,
                               const cmlc_options_t* options, cmlc_fk_dense_plan_t* p) {
  memset(p, 0, sizeof *p);
  p->k = xs->dims[xs->rank - 1];
  p->m = 1;
  for (int32_t d = 0; d + 1 < xs->rank; ++d) p->m *= xs->dims[d];
  p->n = 1;
  for (int32_t d = xs->rank - 1; d < out->rank; ++d) p->n *= out->dims[d];
  p->f64 = xs->dtype == CML_DTYPE_F64;
  p->bf16 = cmlc__gemm_fused_bf16(options, xs->dtype, ws->dtype, p->m);
  p->threads = options->threads > 0 ? options->threads : 1;
  size_t off = 0;
  p->off_tables = off;
  off =
      cmlc_fk_align(cmlc_size_add(off, cmlc_size_of(2 + p->m + 2 * p->k + p->n, sizeof(int64_t))));
  p->off_c = off;
  if (!p->f64 && xs->dtype != CML_DTYPE_F32) {
    off = cmlc_fk_align(cmlc_size_add(off, cmlc_size_of(p->m * p->n, sizeof(float))));
  }
  p->off_gemm = off;
  if (p->f64) {
    off = cmlc_size_add(off, cmlc__gemm_f64_scratch(1, p->m, p->n, p->k, options->isa, p->threads));
  } else {
    off = cmlc_size_add(
        off, cmlc__gemm_fused_scratch(p->bf16, p->m, p->n, p->k, options->isa, p->threads));
  }
  p->total = cmlc_fk_align(off);
}

static size_t cmlc_fk_dense_scratch(const cml_module_t* module, const cml_ir_node_t* node,
                                    const cmlc_options_t* options) {
  cmlc_fk_dense_plan_t p;
  cmlc_fk_dense_plan(&module->values[node->inputs[0]].shape, &module->values[node->inputs[1]].shape,
                     &module->values[node->first_output].shape, options, &p);
  return p.total;
}

static inline double cmlc_fk_act_f64(double v, int act) {
  switch (act) {
    case CML_ACTIVATION_GELU:
      return cmlc_fk_gelu_f64(v, true);
    case CML_ACTIVATION_RELU:
      return v < 0 ? 0.0 : v;
    case CML_ACTIVATION_SILU:
      return v / (1.0 + exp(-v));
    case CML_ACTIVATION_HARD_SWISH: {
      double t = v / 6.0 + 0.5;
      t = t < 0 ? 0 : (t > 1 ? 1 : t);
      return v * t;
    }
    case CML_ACTIVATION_TANH:
      return tanh(v);
    default:
      return v;
  }
}

static inline float cmlc_fk_act_f32(float v, int act) {
  switch (act) {
    case CML_ACTIVATION_GELU:
      return cmlc_fk_gelu_f32(v, true);
    case CML_ACTIVATION_RELU:
      return v < 0 ? 0.0f : v;
    case CML_ACTIVATION_SILU:
      return v / (1.0f + expf(-v));
    case CML_ACTIVATION_HARD_SWISH: {
      float t = v / 6.0f + 0.5f;
      t = t < 0 ? 0 : (t > 1 ? 1 : t);
      return v * t;
    }
    case CML_ACTIVATION_TANH:
      return tanhf(v);
    default:
      return v;
  }
}

typedef struct cmlc_fk_dense_ctx_t {
  cml_dtype_t dtype;
  int act;
  int64_t n;
  const void* c;     // the product: float or double [m, n]
  const void* bias;  // NULL: none
  void* y;
  cmlc_fk_dense_row_fn row;  // SIMD epilogue for the dtype, or NULL
} cmlc_fk_dense_ctx_t;

static void cmlc_fk_dense_epilogue(void* vctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const cmlc_fk_dense_ctx_t* c = vctx;
  const int64_t n = c->n;
  if (c->row) {
    const size_t es = cmlc_dtype_size(c->dtype);
    for (int64_t r = begin; r < end; ++r) {
      c->row((char*)c->y + (size_t)(r * n) * es, (const float*)c->c + r * n, c->bias, n, c->act);
    }
    return;
  }
  for (int64_t r = begin; r < end; ++r) {
    if (c->dtype == CML_DTYPE_F64) {
      const double* src = (const double*)c->c + r * n;
      double* dst = (double*)c->y + r * n;
      const double* bias = c->bias;
      for (int64_t j = 0; j < n; ++j)
        dst[j] = cmlc_fk_act_f64(src[j] + (bias ? bias[j] : 0.0), c->act);
    } else {
      const float* src = (const float*)c->c + r * n;
      for (int64_t j = 0; j < n; ++j) {
        float v = src[j];
        if (c->bias) v += cmlc_load_f32(c->bias, j, c->dtype);
        cmlc_fk_store_f32(c->y, r * n + j, c->dtype, cmlc_fk_act_f32(v, c->act));
      }
    }
  }
}

static cml_status_t cmlc_fk_dense_run(const cmlc_kernel_args_t* args) {
  const cml_shape_t* xs = args->input_shapes[0];
  const cml_shape_t* ws = args->input_shapes[1];
  const cml_ir_attrs_t* attrs = args->node->attrs;
  cmlc_fk_dense_plan_t p;
  cmlc_fk_dense_plan(xs, ws, args->output_shapes[0], args->options, &p);
  if (p.m == 0 || p.n == 0) return CML_OK;
  char* s = args->scratch;
  int64_t* t = (int64_t*)(s + p.off_tables);
  int64_t* batch_off = t;  // one batch: offset 0 for both operands
  batch_off[0] = batch_off[1] = 0;
  int64_t* a_rows = t + 2;
  int64_t* a_cols = a_rows + p.m;
  int64_t* b_rows = a_cols + p.k;
  int64_t* b_cols = b_rows + p.k;
  for (int64_t i = 0; i < p.m; ++i) a_rows[i] = i * p.k;
  for (int64_t i = 0; i < p.k; ++i) a_cols[i] = i;
  const bool in_first = attrs->fused.layout == CML_DENSE_LAYOUT_INPUT_OUTPUTS;
  for (int64_t i = 0; i < p.k; ++i) b_rows[i] = in_first ? i * p.n : i;
  for (int64_t j = 0; j < p.n; ++j) b_cols[j] = in_first ? j : j * p.k;
  cmlc_pool_t* pool = args->pool;
  if (cmlc_pool_thread_count(pool) > p.threads) pool = NULL;
  void* product;
  if (p.f64) {
    cmlc__gemm_f64_problem_t g;
    g.batch = 1;
    g.m = p.m;
    g.n = p.n;
    g.k = p.k;
    g.a = (cmlc__gemm_operand_t){args->inputs[0], xs->dtype, batch_off, a_rows, a_cols};
    g.b = (cmlc__gemm_operand_t){args->inputs[1], ws->dtype, batch_off + 1, b_rows, b_cols};
    g.c = args->outputs[0];
    cmlc__gemm_f64(&g, args->options->isa, pool, s + p.off_gemm, p.threads);
    product = g.c;
  } else {
    cmlc__gemm_problem_t g;
    g.batch = 1;
    g.m = p.m;
    g.n = p.n;
    g.k = p.k;
    g.a = (cmlc__gemm_operand_t){args->inputs[0], xs->dtype, batch_off, a_rows, a_cols};
    g.b = (cmlc__gemm_operand_t){args->inputs[1], ws->dtype, batch_off + 1, b_rows, b_cols};
    g.c = xs->dtype == CML_DTYPE_F32 ? (float*)args->outputs[0] : (float*)(s + p.off_c);
    cmlc__gemm_fused(&g, p.bf16, args->options->isa, pool, s + p.off_gemm, p.threads);
    product = g.c;
  }
  const bool has_bias = (attrs->fused.optional_inputs & 1u) != 0;
  if (!has_bias && attrs->fused.activation == CML_ACTIVATION_NONE &&
      (xs->dtype == CML_DTYPE_F32 || xs->dtype == CML_DTYPE_F64))
    return CML_OK;
  cmlc_fk_dense_ctx_t c = {xs->dtype,
                           attrs->fused.activation,
                           p.n,
                           product,
                           has_bias ? args->inputs[2] : NULL,
                           args->outputs[0],
                           (cmlc_fk_dense_row_fn)args->impl[0]};
  int64_t chunk = 16384 / p.n;
  cmlc_parallel_for(args->pool, p.m, chunk < 1 ? 1 : chunk, cmlc_fk_dense_epilogue, &c);
  return CML_OK;
}

//===--- group lookup and capabilities ---===//

// True when every input and output of |node| has the float dtype of input 0.
static bool cmlc_fk_same_float(const cml_module_t* module, const cml_ir_node_t* node) {
  if (node->input_count < 1 || node->output_count != 1) return false;
  cml_dtype_t dt = module->values[node->inputs[0]].shape.dtype;
  if (!cml_dtype_is_float(dt)) return false;
  for (uint32_t i = 1; i < node->input_count; ++i) {
    if (module->values[node->inputs[i]].shape.dtype != dt) return false;
  }
  return module->values[node->first_output].shape.dtype == dt;
}

static bool cmlc_fk_one_input(const cml_module_t* module, const cml_ir_node_t* node) {
  (void)module;
  return node->input_count == 1;
}

static bool cmlc_fk_ln_valid(const cml_module_t* module, const cml_ir_node_t* node) {
  (void)module;
  uint32_t opt = node->attrs->fused.optional_inputs;
  uint32_t want = 1u + (opt & 1u) + ((opt >> 1) & 1u);
  return node->input_count == want && node->attrs->axis_count >= 1;
}

static bool cmlc_fk_dense_valid(const cml_module_t* module, const cml_ir_node_t* node) {
  uint32_t want = 2u + (node->attrs->fused.optional_inputs & 1u);
  return node->input_count == want && module->values[node->inputs[0]].shape.rank >= 1 &&
         module->values[node->inputs[1]].shape.rank >= 1;
}

// The group's one table: the lookup and the capabilities both read it. in_place_input 0:
// softmax reads each element (pass 1 and 2) before its own position is written; GELU and layer
// norm likewise.
typedef struct cmlc_fk_row_t {
  cml_op_t op;
  cmlc_kernel_fn run;
  cmlc_scratch_fn scratch;
  int in_place_input;
  bool (*valid)(const cml_module_t* module, const cml_ir_node_t* node);
  bool mixed_dtypes;  // valid() checks the dtypes (SDPA: Bool masks, Int32 lengths)
} cmlc_fk_row_t;

static const cmlc_fk_row_t cmlc_fk_rows[] = {
    {CML_OP_FUSED_SOFTMAX, cmlc_fk_softmax_run, NULL, 0, cmlc_fk_one_input, false},
    {CML_OP_FUSED_GELU, cmlc_fk_gelu_run, NULL, 0, cmlc_fk_one_input, false},
    {CML_OP_FUSED_LAYER_NORM, cmlc_fk_ln_run, cmlc_fk_ln_scratch, 0, cmlc_fk_ln_valid, false},
    {CML_OP_FUSED_DENSE, cmlc_fk_dense_run, cmlc_fk_dense_scratch, -1, cmlc_fk_dense_valid, false},
    {CML_OP_FUSED_SDPA, cmlc__fa_run, cmlc__fa_scratch, -1, cmlc__fa_valid, true},
    {CML_OP_FUSED_SDPA_VJP, cmlc__fa_bwd_run, cmlc__fa_bwd_scratch, -1, cmlc__fa_bwd_valid, true},
    {CML_OP_FUSED_ATTENTION_QKV_PROJECTION, cmlc__fa_qkv_run, cmlc__fa_qkv_scratch, -1,
     cmlc__fa_qkv_valid, true},
};

bool cmlc_kernels_fused_lookup(const cml_module_t* module, const cml_ir_node_t* node,
                               const cmlc_options_t* options, cmlc_kernel_entry_t* out) {
  for (size_t i = 0; i < sizeof cmlc_fk_rows / sizeof *cmlc_fk_rows; ++i) {
    const cmlc_fk_row_t* row = &cmlc_fk_rows[i];
    if (row->op != node->op) continue;
    if (!row->mixed_dtypes && !cmlc_fk_same_float(module, node)) return false;
    if (!row->valid(module, node)) return false;
    out->run = row->run;
    out->scratch = row->scratch;
    out->in_place_input = row->in_place_input;
    const cml_dtype_t dt = module->values[node->inputs[0]].shape.dtype;
    switch (node->op) {
      case CML_OP_FUSED_SOFTMAX:
        out->impl[0] = cmlc_ew_simd_fused_fn(options, CMLC_FK_SOFTMAX_ROW, dt);
        out->impl[1] = cmlc_ew_simd_fused_fn(options, CMLC_FK_SOFTMAX_LANES, dt);
        out->impl[2] = cmlc_ew_simd_fused_fn(options, CMLC_FK_SOFTMAX_PACKED, dt);
        break;
      case CML_OP_FUSED_GELU:
        out->impl[0] = cmlc_ew_simd_fused_fn(
            options, node->attrs->fused.exact ? CMLC_FK_GELU_ERF : CMLC_FK_GELU_TANH, dt);
        break;
      case CML_OP_FUSED_LAYER_NORM:
        out->impl[0] = cmlc_ew_simd_fused_fn(options, CMLC_FK_LN_ROW, dt);
        break;
      case CML_OP_FUSED_DENSE:
        out->impl[0] = cmlc_ew_simd_fused_fn(options, CMLC_FK_DENSE_ROW, dt);
        break;
      case CML_OP_FUSED_SDPA:
        // A mark, never called: the logsumexp output is read (no decode path).
        out->impl[0] = cmlc__fa_lse_read(module, node) ? (cmlc_impl_fn)cmlc__fa_run : NULL;
        break;
      default:
        break;
    }
    return true;
  }
  return false;
}

void cmlc_kernels_fused_capabilities(cml_capabilities_t* caps, const cmlc_options_t* options) {
  if (!options->fusion || options->reference) return;
  for (size_t i = 0; i < sizeof cmlc_fk_rows / sizeof *cmlc_fk_rows; ++i) {
    cml_capabilities_set_op(caps, cmlc_fk_rows[i].op, true);
  }
}
