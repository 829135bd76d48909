// SPDX-License-Identifier: Apache-2.0
// tests/unit/c_kernels_gemm_bf16_test.c: bf16 DotGeneral on every path of the C backend (the
// AVX-512 BF16 vdpbf16ps GEMM when the CPU has it, the convert-on-pack f32 GEMM for AVX-512,
// AVX2 and the scalar ISA, and reference mode), called through the linalg kernel group on
// hand-made nodes. Every result is checked against an independent f64 loop within the bound
// documented in kernels/x86_64/gemm_x86_64_avx512bf16.c: |c - exact| <= (K + 2) * 2^-24 *
// sum |a b| (plus the final rounding for a bf16 output), and each path gives the same bits
// with 1 and 3 threads.
#include <math.h>
#include <stdlib.h>

#include "backends/c/cmlc.h"
#include "test.h"

typedef struct fake_t {
  cml_ir_value_t values[4];
  uint32_t inputs[2];
  cml_ir_node_t node;
  cml_ir_attrs_t attrs;
  cml_module_t module;
} fake_t;

// DotGeneral of lhs [B, M, K] (or [M, K] when batch == 0; [B, K, M] when |lhs_transposed|)
// with rhs [B, K, N], or rhs [B, N, K] when |rhs_transposed|; operands |in_dtype|,
// accumulation in f32, output |out_dtype|.
static void fake_dot_typed(fake_t* f, int64_t batch, int64_t m, int64_t k, int64_t n,
                           bool lhs_transposed, bool rhs_transposed, cml_dtype_t in_dtype,
                           cml_dtype_t out_dtype) {
  memset(f, 0, sizeof *f);
  const int32_t nb = batch > 0 ? 1 : 0;
  int64_t ld[3], rd[3], od[3];
  int32_t r = 0;
  if (nb) ld[r] = rd[r] = od[r] = batch, ++r;
  ld[r] = lhs_transposed ? k : m, ld[r + 1] = lhs_transposed ? m : k;
  rd[r] = rhs_transposed ? n : k, rd[r + 1] = rhs_transposed ? k : n;
  od[r] = m, od[r + 1] = n;
  f->values[1].shape = cml_shape_make(in_dtype, r + 2, ld);
  f->values[2].shape = cml_shape_make(in_dtype, r + 2, rd);
  f->values[3].shape = cml_shape_make(out_dtype, r + 2, od);
  f->inputs[0] = 1;
  f->inputs[1] = 2;
  cml_dot_config_t* d = &f->attrs.u.dot;
  d->lhs_batch_count = d->rhs_batch_count = nb;
  d->lhs_batch_axes[0] = d->rhs_batch_axes[0] = 0;
  d->lhs_contracting_count = d->rhs_contracting_count = 1;
  d->lhs_contracting_axes[0] = lhs_transposed ? nb : nb + 1;
  d->rhs_contracting_axes[0] = rhs_transposed ? nb + 1 : nb;
  d->accumulator_dtype = CML_DTYPE_F32;
  d->output_dtype = out_dtype;
  f->node.op = CML_OP_DOT_GENERAL;
  f->node.input_count = 2;
  f->node.inputs = f->inputs;
  f->node.output_count = 1;
  f->node.first_output = 3;
  f->node.attrs = &f->attrs;
  f->module.node_count = 1;
  f->module.nodes = &f->node;
  f->module.value_count = 4;
  f->module.values = f->values;
  f->module.num_devices = 1;
}

// bf16 operands, lhs row-major.
static void fake_dot(fake_t* f, int64_t batch, int64_t m, int64_t k, int64_t n, bool rhs_transposed,
                     cml_dtype_t out_dtype) {
  fake_dot_typed(f, batch, m, k, n, false, rhs_transposed, CML_DTYPE_BF16, out_dtype);
}

static cml_status_t fake_run(fake_t* f, const cmlc_options_t* opts, cmlc_pool_t* pool,
                             const void* lhs, const void* rhs, void* out) {
  cmlc_kernel_entry_t e;
  memset(&e, 0, sizeof e);
  if (!cmlc_kernels_linalg_lookup(&f->module, &f->node, opts, &e)) {
    return cml_status_make(CML_STATUS_INTERNAL, "lookup failed");
  }
  const size_t size = e.scratch ? e.scratch(&f->module, &f->node, opts) : 0;
  void* scratch = size ? aligned_alloc(64, (size + 63) & ~(size_t)63) : NULL;
  if (size && !scratch) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  const cml_shape_t* in_shapes[2] = {&f->values[1].shape, &f->values[2].shape};
  const cml_shape_t* out_shapes[1] = {&f->values[3].shape};
  const void* inputs[2] = {lhs, rhs};
  void* outputs[1] = {out};
  cmlc_kernel_args_t a;
  memset(&a, 0, sizeof a);
  a.module = &f->module;
  a.node = &f->node;
  a.options = opts;
  a.input_count = 2;
  a.input_shapes = in_shapes;
  a.inputs = inputs;
  a.output_count = 1;
  a.output_shapes = out_shapes;
  a.outputs = outputs;
  a.scratch = scratch;
  a.scratch_size = size;
  a.pool = pool;
  memcpy(a.impl, e.impl, sizeof a.impl);
  cml_status_t st = e.run(&a);
  free(scratch);
  return st;
}

typedef struct path_t {
  const char* name;
  cmlc_isa_t isa;
  bool bf16, reference;
} path_t;

// The paths this CPU can run.
static int usable_paths(path_t* out) {
  int n = 0;
  out[n++] = (path_t){"reference", CMLC_ISA_SCALAR, false, true};
  out[n++] = (path_t){"scalar", CMLC_ISA_SCALAR, false, false};
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    out[n++] = (path_t){"avx2", CMLC_ISA_AVX2, false, false};
  }
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")) {
    out[n++] = (path_t){"avx512 (convert on pack)", CMLC_ISA_AVX512, false, false};
#if (defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 10) || \
    (defined(__clang__) && __clang_major__ >= 9)
    if (__builtin_cpu_supports("avx512bf16")) {
      out[n++] = (path_t){"avx512 bf16 (vdpbf16ps)", CMLC_ISA_AVX512, true, false};
    }
#endif
  }
#endif
  return n;
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static double rng_uniform(double lo, double hi) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return lo + (hi - lo) * (double)(rng_state >> 11) * 0x1p-53;
}

TEST(bf16_every_path_within_bound) {
  static const struct {
    int64_t batch, m, k, n;
    bool transposed;
  } cases[] = {{0, 1, 1, 1, false},
               {0, 3, 5, 7, false},
               {0, 13, 37, 45, false},
               {0, 150, 515, 70, false},
               {2, 20, 33, 130, false},
               {0, 29, 1100, 33, true},
               {3, 12, 64, 32, true},
               {0, 200, 96, 2100, false},
               // 1600 rows on 3 threads: 108-row blocks (cmlc__gemm_row_block), not 144.
               {0, 1600, 96, 48, false},
               // Batch mode (whole small products per thread): 9 x 64 x 70 x 65, 7 x 150 x 40.
               {9, 64, 70, 65, false},
               {7, 150, 40, 33, true}};
  path_t paths[6];
  const int path_count = usable_paths(paths);
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  int failures = 0, checked = 0;
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ++ci) {
    const int64_t nb = cases[ci].batch > 0 ? cases[ci].batch : 1;
    const int64_t m = cases[ci].m, k = cases[ci].k, n = cases[ci].n;
    const bool tr = cases[ci].transposed;
    uint16_t* lhs = malloc((size_t)(nb * m * k) * sizeof(uint16_t));
    uint16_t* rhs = malloc((size_t)(nb * k * n) * sizeof(uint16_t));
    double* exact = malloc((size_t)(nb * m * n) * sizeof(double));
    double* mag = malloc((size_t)(nb * m * n) * sizeof(double));
    float* out1 = malloc((size_t)(nb * m * n) * sizeof(float));
    float* out3 = malloc((size_t)(nb * m * n) * sizeof(float));
    for (int64_t i = 0; i < nb * m * k; ++i) lhs[i] = cml_f32_to_bf16((float)rng_uniform(-2, 2));
    for (int64_t i = 0; i < nb * k * n; ++i) rhs[i] = cml_f32_to_bf16((float)rng_uniform(-2, 2));
    // The independent reference: f64 sums of the exact products.
    for (int64_t b = 0; b < nb; ++b) {
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          double s = 0, g = 0;
          for (int64_t kk = 0; kk < k; ++kk) {
            const double x = cml_bf16_to_f32(lhs[(b * m + i) * k + kk]);
            const double y =
                cml_bf16_to_f32(tr ? rhs[(b * n + j) * k + kk] : rhs[(b * k + kk) * n + j]);
            s += x * y;
            g += fabs(x * y);
          }
          exact[(b * m + i) * n + j] = s;
          mag[(b * m + i) * n + j] = g;
        }
      }
    }
    const double f32_bound = (double)(k + 2) * 0x1p-24;
    for (int oi = 0; oi < 2; ++oi) {
      const cml_dtype_t out_dtype = oi ? CML_DTYPE_BF16 : CML_DTYPE_F32;
      fake_t f;
      fake_dot(&f, cases[ci].batch, m, k, n, tr, out_dtype);
      for (int pi = 0; pi < path_count; ++pi) {
        cmlc_options_t o;
        memset(&o, 0, sizeof o);
        o.isa = paths[pi].isa;
        o.reference = paths[pi].reference;
        o.avx512_bf16 = paths[pi].bf16;
        o.devices = 1;
        o.threads = 1;
        cml_status_t st1 = fake_run(&f, &o, NULL, lhs, rhs, out1);
        o.threads = 3;
        cml_status_t st3 = fake_run(&f, &o, pool, lhs, rhs, out3);
        if (st1 != CML_OK || st3 != CML_OK) {
          fprintf(stderr, "case %zu %s: run failed\n", ci, paths[pi].name);
          cml_status_free(st1);
          cml_status_free(st3);
          ++failures;
          continue;
        }
        const size_t bytes = (size_t)(nb * m * n) * (oi ? sizeof(uint16_t) : sizeof(float));
        if (memcmp(out1, out3, bytes) != 0) {
          fprintf(stderr, "case %zu %s %s: 1 and 3 threads differ\n", ci, paths[pi].name,
                  cml_dtype_name(out_dtype));
          ++failures;
        }
        for (int64_t e = 0; e < nb * m * n; ++e) {
          const double got = oi ? cml_bf16_to_f32(((const uint16_t*)out1)[e]) : out1[e];
          double tol = f32_bound * mag[e];
          if (oi) tol += 0x1p-8 * (fabs(exact[e]) + tol);  // the final rounding to bf16
          ++checked;
          if (!(fabs(got - exact[e]) <= tol) && failures++ < 8) {
            fprintf(stderr, "case %zu %s %s [%lld]: got %.9g exact %.9g tolerance %.3g\n", ci,
                    paths[pi].name, cml_dtype_name(out_dtype), (long long)e, got, exact[e], tol);
          }
        }
      }
    }
    free(lhs);
    free(rhs);
    free(exact);
    free(mag);
    free(out1);
    free(out3);
  }
  cmlc_pool_destroy(pool);
  ASSERT_EQ_INT(failures, 0);
  ASSERT_TRUE(checked > 0);
}

// Exact small cases by hand, on every path: [[1, 2, 3]] x [[4], [5], [6]] = 32 (odd K: the
// padded pair adds 0 * 0), and a zero-padded edge column next to an infinity in A.
TEST(bf16_hand_values) {
  path_t paths[6];
  const int path_count = usable_paths(paths);
  const uint16_t a[3] = {cml_f32_to_bf16(1), cml_f32_to_bf16(2), cml_f32_to_bf16(3)};
  const uint16_t b[3] = {cml_f32_to_bf16(4), cml_f32_to_bf16(5), cml_f32_to_bf16(6)};
  for (int pi = 0; pi < path_count; ++pi) {
    cmlc_options_t o;
    memset(&o, 0, sizeof o);
    o.isa = paths[pi].isa;
    o.reference = paths[pi].reference;
    o.avx512_bf16 = paths[pi].bf16;
    o.devices = 1;
    o.threads = 1;
    fake_t f;
    fake_dot(&f, 0, 1, 3, 1, false, CML_DTYPE_F32);
    float y = 0;
    ASSERT_STATUS_OK(fake_run(&f, &o, NULL, a, b, &y));
    ASSERT_EQ_DBL(y, 32);
    // [[inf, 1]] x [[1, 0], [2, 3]] = [[inf, 3]] (no 0 * inf from the padding).
    const uint16_t ai[2] = {cml_f32_to_bf16(INFINITY), cml_f32_to_bf16(1)};
    const uint16_t bi[4] = {cml_f32_to_bf16(1), cml_f32_to_bf16(0), cml_f32_to_bf16(2),
                            cml_f32_to_bf16(3)};
    float yi[2] = {0, 0};
    fake_dot(&f, 0, 1, 2, 2, false, CML_DTYPE_F32);
    ASSERT_STATUS_OK(fake_run(&f, &o, NULL, ai, bi, yi));
    ASSERT_EQ_DBL(yi[0], INFINITY);
    ASSERT_TRUE(isnan(yi[1]));  // inf * 0 + 1 * 3: NaN under IEEE
  }
}

// A bf16 output is the f32 result of the same path rounded once (cml_f64_to_bf16 of each
// value), on every path: K within one k block and K over several (f32 partial sums, then the
// rounding store), edge tiles, a transposed rhs, with NaN, Inf, overflow to Inf, ties and values
// that round up into the next binade.
TEST(bf16_output_is_the_rounded_f32_output) {
  static const struct {
    int64_t batch, m, k, n;
    bool transposed;
  } cases[] = {{0, 1, 2, 1, false},     {0, 13, 37, 45, false},  {0, 30, 256, 70, false},
               {0, 25, 515, 33, false}, {2, 14, 1100, 40, true}, {0, 300, 64, 97, false}};
  path_t paths[6];
  const int path_count = usable_paths(paths);
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  int failures = 0;
  int64_t checked = 0, specials = 0;
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ++ci) {
    const int64_t nb = cases[ci].batch > 0 ? cases[ci].batch : 1;
    const int64_t m = cases[ci].m, k = cases[ci].k, n = cases[ci].n;
    const bool tr = cases[ci].transposed;
    uint16_t* lhs = malloc((size_t)(nb * m * k) * sizeof(uint16_t));
    uint16_t* rhs = malloc((size_t)(nb * k * n) * sizeof(uint16_t));
    float* f32 = malloc((size_t)(nb * m * n) * sizeof(float));
    uint16_t* b16 = malloc((size_t)(nb * m * n) * sizeof(uint16_t));
    for (int64_t i = 0; i < nb * m * k; ++i) lhs[i] = cml_f32_to_bf16((float)rng_uniform(-2, 2));
    for (int64_t i = 0; i < nb * k * n; ++i) rhs[i] = cml_f32_to_bf16((float)rng_uniform(-2, 2));
    // Row 0 of the first batch: NaN (k 0), Inf (k 1), huge values that overflow f32 when
    // summed (the last two k), so its outputs are NaN / Inf / overflow.
    if (k >= 2) lhs[0] = cml_f32_to_bf16(NAN);
    if (m >= 2 && k >= 2) {
      lhs[k] = cml_f32_to_bf16(INFINITY);
      lhs[k + k - 1] = lhs[k + k - 2] = cml_f32_to_bf16(3e38f);
    }
    // Row 2: exactly 1 + 2^-8 (a tie between bf16 neighbours) and 1 + 3 * 2^-9 (rounds up).
    if (m >= 3 && k >= 2 && !tr) {
      for (int64_t kk = 0; kk < k; ++kk) lhs[2 * k + kk] = 0;
      lhs[2 * k] = cml_f32_to_bf16(1.0f);
      lhs[2 * k + 1] = cml_f32_to_bf16(0x1p-8f);
      for (int64_t j = 0; j < n; ++j) {
        rhs[j] = cml_f32_to_bf16(1.0f);
        rhs[n + j] = cml_f32_to_bf16(j % 2 ? 1.5f : 1.0f);
      }
    }
    fake_t ff, fb;
    fake_dot(&ff, cases[ci].batch, m, k, n, tr, CML_DTYPE_F32);
    fake_dot(&fb, cases[ci].batch, m, k, n, tr, CML_DTYPE_BF16);
    for (int pi = 0; pi < path_count; ++pi) {
      cmlc_options_t o;
      memset(&o, 0, sizeof o);
      o.isa = paths[pi].isa;
      o.reference = paths[pi].reference;
      o.avx512_bf16 = paths[pi].bf16;
      o.devices = 1;
      o.threads = 3;
      ASSERT_STATUS_OK(fake_run(&ff, &o, pool, lhs, rhs, f32));
      memset(b16, 0xA5, (size_t)(nb * m * n) * sizeof(uint16_t));
      ASSERT_STATUS_OK(fake_run(&fb, &o, pool, lhs, rhs, b16));
      for (int64_t e = 0; e < nb * m * n; ++e) {
        const uint16_t want = cml_f64_to_bf16((double)f32[e]);
        ++checked;
        specials += !isfinite(f32[e]);
        if (b16[e] != want && failures++ < 8) {
          fprintf(stderr, "case %zu %s [%lld]: bf16 0x%04x, f32 %.9g rounds to 0x%04x\n", ci,
                  paths[pi].name, (long long)e, b16[e], f32[e], want);
        }
      }
    }
    free(lhs);
    free(rhs);
    free(f32);
    free(b16);
  }
  cmlc_pool_destroy(pool);
  ASSERT_EQ_INT(failures, 0);
  ASSERT_TRUE(checked > 0);
  ASSERT_TRUE(specials > 0);
}

// f16 operands (widened while packing: F16C runs with the SIMD ISAs) on every path, in every
// operand layout: within the f32 bound of the exact f64 result (f16 products are exact in f32),
// an f16 output equal to the same path's f32 output rounded once (cml_f64_to_f16), the same
// bits with 1 and 3 threads. Values include f16 subnormals, NaN, Inf and sums that overflow f16.
TEST(f16_every_path_and_layout) {
  static const struct {
    int64_t batch, m, k, n;
    bool lhs_tr, rhs_tr;
  } cases[] = {{0, 1, 9, 3, false, false},    {0, 13, 37, 45, false, false},
               {0, 30, 300, 70, true, false}, {0, 25, 515, 33, false, true},
               {2, 14, 100, 40, true, true},  {0, 150, 64, 2100, false, false},
               {3, 24, 40, 17, true, false}};
  path_t paths[6];
  const int path_count = usable_paths(paths);
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  int failures = 0;
  int64_t checked = 0, specials = 0;
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ++ci) {
    const int64_t nb = cases[ci].batch > 0 ? cases[ci].batch : 1;
    const int64_t m = cases[ci].m, k = cases[ci].k, n = cases[ci].n;
    const bool ltr = cases[ci].lhs_tr, rtr = cases[ci].rhs_tr;
    const size_t outs = (size_t)(nb * m * n);
    uint16_t* lhs = malloc((size_t)(nb * m * k) * sizeof(uint16_t));
    uint16_t* rhs = malloc((size_t)(nb * k * n) * sizeof(uint16_t));
    double* exact = malloc(outs * sizeof(double));
    double* mag = malloc(outs * sizeof(double));
    float* f1 = malloc(outs * sizeof(float));
    float* f3 = malloc(outs * sizeof(float));
    uint16_t* h3 = malloc(outs * sizeof(uint16_t));
    for (int64_t i = 0; i < nb * m * k; ++i) lhs[i] = cml_f32_to_f16((float)rng_uniform(-4, 4));
    for (int64_t i = 0; i < nb * k * n; ++i) rhs[i] = cml_f32_to_f16((float)rng_uniform(-4, 4));
      // Element offsets of lhs (b, i, kk) and rhs (b, kk, j) in their layouts.
#define LHS_AT(b, i, kk) ((b)*m * k + (ltr ? (kk)*m + (i) : (i)*k + (kk)))
#define RHS_AT(b, kk, j) ((b)*k * n + (rtr ? (j)*k + (kk) : (kk)*n + (j)))
    // Row 0: subnormal f16 values (2^-20, 3 * 2^-24); row 1: 300 * 300 * k overflows f16;
    // (row 2, k 0) NaN, (row 3, k 1) Inf.
    for (int64_t kk = 0; kk < k; ++kk) lhs[LHS_AT(0, 0, kk)] = kk % 2 ? 3 : 16;
    if (m > 1)
      for (int64_t kk = 0; kk < k; ++kk) lhs[LHS_AT(0, 1, kk)] = cml_f32_to_f16(300.0f);
    if (m > 1)
      for (int64_t j = 0; j < n; ++j) rhs[RHS_AT(0, 0, j)] = cml_f32_to_f16(j % 2 ? 300.0f : -2.0f);
    if (m > 2) lhs[LHS_AT(0, 2, 0)] = cml_f32_to_f16(NAN);
    if (m > 3 && k > 1) lhs[LHS_AT(0, 3, 1)] = cml_f32_to_f16(INFINITY);
    for (int64_t b = 0; b < nb; ++b) {
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          double sum = 0, g = 0;
          for (int64_t kk = 0; kk < k; ++kk) {
            const double x = cml_f16_to_f32(lhs[LHS_AT(b, i, kk)]);
            const double y = cml_f16_to_f32(rhs[RHS_AT(b, kk, j)]);
            sum += x * y;
            g += fabs(x * y);
          }
          exact[(b * m + i) * n + j] = sum;
          mag[(b * m + i) * n + j] = g;
        }
      }
    }
#undef LHS_AT
#undef RHS_AT
    fake_t ff, fh;
    fake_dot_typed(&ff, cases[ci].batch, m, k, n, ltr, rtr, CML_DTYPE_F16, CML_DTYPE_F32);
    fake_dot_typed(&fh, cases[ci].batch, m, k, n, ltr, rtr, CML_DTYPE_F16, CML_DTYPE_F16);
    for (int pi = 0; pi < path_count; ++pi) {
      if (paths[pi].bf16) continue;  // the vdpbf16ps GEMM is for bf16 operands only
      cmlc_options_t o;
      memset(&o, 0, sizeof o);
      o.isa = paths[pi].isa;
      o.reference = paths[pi].reference;
      o.devices = 1;
      o.threads = 1;
      ASSERT_STATUS_OK(fake_run(&ff, &o, NULL, lhs, rhs, f1));
      o.threads = 3;
      ASSERT_STATUS_OK(fake_run(&ff, &o, pool, lhs, rhs, f3));
      memset(h3, 0xA5, outs * sizeof(uint16_t));
      ASSERT_STATUS_OK(fake_run(&fh, &o, pool, lhs, rhs, h3));
      if (memcmp(f1, f3, outs * sizeof(float)) != 0 && failures++ < 8) {
        fprintf(stderr, "case %zu %s: 1 and 3 threads differ\n", ci, paths[pi].name);
      }
      for (size_t e = 0; e < outs; ++e) {
        ++checked;
        const double tol = (double)(k + 2) * 0x1p-24 * mag[e];
        const bool ok = isnan(exact[e])   ? isnan(f1[e])
                        : isinf(exact[e]) ? f1[e] == exact[e]
                                          : fabs(f1[e] - exact[e]) <= tol;
        specials += !isfinite(exact[e]) || !isfinite((double)cml_f16_to_f32(h3[e]));
        if (!ok && failures++ < 8) {
          fprintf(stderr, "case %zu %s [%zu]: got %.9g exact %.9g tolerance %.3g\n", ci,
                  paths[pi].name, e, f1[e], exact[e], tol);
        }
        const uint16_t want = cml_f64_to_f16((double)f3[e]);
        if (h3[e] != want && failures++ < 8) {
          fprintf(stderr, "case %zu %s [%zu]: f16 0x%04x, f32 %.9g rounds to 0x%04x\n", ci,
                  paths[pi].name, e, h3[e], f3[e], want);
        }
      }
    }
    free(lhs);
    free(rhs);
    free(exact);
    free(mag);
    free(f1);
    free(f3);
    free(h3);
  }
  cmlc_pool_destroy(pool);
  ASSERT_EQ_INT(failures, 0);
  ASSERT_TRUE(checked > 0);
  ASSERT_TRUE(specials > 0);
}

TEST_MAIN(TEST_ENTRY(bf16_every_path_within_bound), TEST_ENTRY(bf16_hand_values),
          TEST_ENTRY(bf16_output_is_the_rounded_f32_output), TEST_ENTRY(f16_every_path_and_layout))
