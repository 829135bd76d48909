// SPDX-License-Identifier: Apache-2.0
// tests/unit/fused_test.c: the fused ops (src/core/fused.c, kernels/generic/fused.c):
// which backends advertise them, that a native backend records one fused node and the others
// the decomposition, native kernels against plain reference loops and against the
// decomposition on sizes that use the thread pool, thread-count independence, and the
// argument errors.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api_common.h"
#include "base/half_inline.h"
#include "cml/autodiff.h"
#include "core/builder_internal.h"
#include "test.h"

//===--- helpers ---===//

static cml_backend_t* fz_backend(const char* config) {
  cml_backend_t* b = NULL;
  cml_status_t st = cml_backend_new_with_config(config, &b);
  if (st != CML_OK) {
    fprintf(stderr, "backend %s: %s\n", config, cml_status_message(st));
    cml_status_free(st);
    return NULL;
  }
  return b;
}

// How many nodes of |op| the main function of |b| holds.
static int fz_count_op(cml_builder_t* b, cml_op_t op) {
  cml_function_t* f = cml_builder_main(b);
  int count = 0;
  for (uint32_t i = 0; i < f->nodes.count; ++i) count += f->impl->nodes[f->nodes.data[i]].op == op;
  return count;
}

static uint64_t fz_rng = 0x243F6A8885A308D3ull;
static double fz_uniform(double lo, double hi) {
  fz_rng ^= fz_rng << 13;
  fz_rng ^= fz_rng >> 7;
  fz_rng ^= fz_rng << 17;
  return lo + (hi - lo) * (double)(fz_rng >> 11) / 9007199254740992.0;
}

static float* fz_random_f32(int64_t n, double lo, double hi) {
  float* p = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
  for (int64_t i = 0; p && i < n; ++i) p[i] = (float)fz_uniform(lo, hi);
  return p;
}

// A graph builder callback: builds the op under test from the parameters.
typedef cml_value_t (*fz_build_fn)(cml_function_t* f, const cml_value_t* params, const void* ctx);

// Builds params of |shapes|, the op, compiles on |config| and runs with |inputs|; writes the
// single f32 output into |out|. Also reports how many nodes of |op| were recorded.
static cml_status_t fz_run(const char* config, fz_build_fn build, const void* ctx,
                           const cml_shape_t* shapes, size_t count, const void* const* inputs,
                           void* out, cml_op_t op, int* out_nodes) {
  cml_backend_t* be = fz_backend(config);
  if (!be) return cml_status_from_code(CML_STATUS_INTERNAL);
  cml_builder_t* b = NULL;
  cml_status_t st = cml_builder_create(be, "fused", &b);
  if (st != CML_OK) {
    cml_backend_release(be);
    return st;
  }
  cml_function_t* f = cml_builder_main(b);
  cml_value_t params[8];
  for (size_t i = 0; i < count; ++i) params[i] = cml_parameter(f, NULL, &shapes[i]);
  cml_value_t y = build(f, params, ctx);
  if (out_nodes) *out_nodes = fz_count_op(b, op);
  cml_executable_t* exe = NULL;
  st = api_finish(b, &y, 1, &exe);
  if (st == CML_OK) st = api_run(be, exe, inputs, (void* const[]){out});
  cml_executable_release(exe);
  cml_backend_release(be);
  return st;
}

// max |a - b| / (atol + rtol |b|) over n floats (<= 1 means within tolerance).
static double fz_worst(const float* a, const double* b, int64_t n, double rtol, double atol) {
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    double e = fabs((double)a[i] - b[i]) / (atol + rtol * fabs(b[i]));
    if (!(e <= worst)) worst = e;  // NaN counts as worst
  }
  return worst;
}

static double fz_worst_f32(const float* a, const float* b, int64_t n, double rtol, double atol) {
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    double e = fabs((double)a[i] - (double)b[i]) / (atol + rtol * fabs((double)b[i]));
    if (!(e <= worst)) worst = e;
  }
  return worst;
}

//===--- capabilities ---===//

TEST(capabilities_follow_fusion_option) {
  static const cml_op_t native[] = {CML_OP_FUSED_SOFTMAX, CML_OP_FUSED_GELU,
                                    CML_OP_FUSED_LAYER_NORM, CML_OP_FUSED_DENSE};
  cml_backend_t* on = fz_backend("c");
  cml_backend_t* off = fz_backend("c:fusion=false");
  cml_backend_t* ref = fz_backend("c:reference=true");
  ASSERT_TRUE(on && off && ref);
  for (size_t i = 0; i < sizeof native / sizeof *native; ++i) {
    ASSERT_TRUE(cml_capabilities_has_op(cml_backend_capabilities(on), native[i]));
    ASSERT_FALSE(cml_capabilities_has_op(cml_backend_capabilities(off), native[i]));
    ASSERT_FALSE(cml_capabilities_has_op(cml_backend_capabilities(ref), native[i]));
  }
  // Attention has a native kernel on c (tests/unit/fused_attention_test.c).
  ASSERT_TRUE(cml_capabilities_has_op(cml_backend_capabilities(on), CML_OP_FUSED_SDPA));
  ASSERT_FALSE(cml_capabilities_has_op(cml_backend_capabilities(off), CML_OP_FUSED_SDPA));
  cml_backend_release(on);
  cml_backend_release(off);
  cml_backend_release(ref);
  // GOMLX_FUSION=0 is read when the backend is created.
  const char* old = getenv("GOMLX_FUSION");
  char* saved = old ? strdup(old) : NULL;
  setenv("GOMLX_FUSION", "0", 1);
  cml_backend_t* env_off = fz_backend("c");
  if (saved) {
    setenv("GOMLX_FUSION", saved, 1);
    free(saved);
  } else {
    unsetenv("GOMLX_FUSION");
  }
  ASSERT_TRUE(env_off != NULL);
  bool has = cml_capabilities_has_op(cml_backend_capabilities(env_off), CML_OP_FUSED_SOFTMAX);
  cml_backend_release(env_off);
  ASSERT_FALSE(has);
}

TEST(enum_names) {
  ASSERT_STREQ(cml_activation_name(CML_ACTIVATION_NONE), "none");
  ASSERT_STREQ(cml_activation_name(CML_ACTIVATION_HARD_SWISH), "hard_swish");
  ASSERT_STREQ(cml_activation_name(CML_ACTIVATION_TANH), "tanh");
  ASSERT_STREQ(cml_activation_name(CML_ACTIVATION_COUNT), "unknown");
  ASSERT_STREQ(cml_dense_layout_name(CML_DENSE_LAYOUT_OUTPUTS_INPUT), "outputs_input");
  ASSERT_STREQ(cml_attention_layout_name(CML_ATTENTION_LAYOUT_BSHD), "BSHD");
  ASSERT_STREQ(cml_attention_layout_name((cml_attention_layout_t)7), "unknown");
  ASSERT_EQ_INT(CML_ACTIVATION_SILU, 3);
  ASSERT_EQ_INT(CML_DENSE_LAYOUT_OUTPUTS_INPUT, 1);
}

//===--- softmax: one node natively, the decomposition otherwise ---===//

static cml_value_t fz_build_softmax(cml_function_t* f, const cml_value_t* p, const void* ctx) {
  return cml_op_fused_softmax(f, p[0], *(const int64_t*)ctx);
}

TEST(softmax_native_vs_decomposed) {
  // 96 rows of 301: enough lanes for the pool; axis 0 of [301, 96] exercises strided lanes.
  for (int layout = 0; layout < 2; ++layout) {
    const int64_t rows = 96, n = 301;
    cml_shape_t s =
        layout == 0 ? API_SHAPE(CML_DTYPE_F32, rows, n) : API_SHAPE(CML_DTYPE_F32, n, rows);
    int64_t axis = layout == 0 ? 1 : 0;
    float* x = fz_random_f32(rows * n, -8, 8);
    float* native = malloc(sizeof(float) * (size_t)(rows * n));
    float* decomposed = malloc(sizeof(float) * (size_t)(rows * n));
    double* want = malloc(sizeof(double) * (size_t)(rows * n));
    ASSERT_TRUE(x && native && decomposed && want);
    for (int64_t r = 0; r < rows; ++r) {
      // Element j of lane r.
#define FZ_AT(j) (layout == 0 ? r * n + (j) : (j)*rows + r)
      double m = -INFINITY, sum = 0;
      for (int64_t j = 0; j < n; ++j) m = fmax(m, x[FZ_AT(j)]);
      for (int64_t j = 0; j < n; ++j) sum += exp((double)x[FZ_AT(j)] - m);
      for (int64_t j = 0; j < n; ++j) want[FZ_AT(j)] = exp((double)x[FZ_AT(j)] - m) / sum;
#undef FZ_AT
    }
    int nodes_on = -1, nodes_off = -1;
    ASSERT_STATUS_OK(fz_run("c", fz_build_softmax, &axis, &s, 1, (const void* const[]){x}, native,
                            CML_OP_FUSED_SOFTMAX, &nodes_on));
    ASSERT_STATUS_OK(fz_run("c:fusion=false", fz_build_softmax, &axis, &s, 1,
                            (const void* const[]){x}, decomposed, CML_OP_FUSED_SOFTMAX,
                            &nodes_off));
    ASSERT_EQ_INT(nodes_on, 1);
    ASSERT_EQ_INT(nodes_off, 0);
    double e1 = fz_worst(native, want, rows * n, 1e-5, 1e-9);
    double e2 = fz_worst(decomposed, want, rows * n, 1e-5, 1e-9);
    double e3 = fz_worst_f32(native, decomposed, rows * n, 2e-5, 1e-9);
    free(x), free(native), free(decomposed), free(want);
    ASSERT_TRUE(e1 <= 1);
    ASSERT_TRUE(e2 <= 1);
    ASSERT_TRUE(e3 <= 1);
  }
}

// A Float64 row of 1e6: each output within 8 ulps of the long double softmax (a plain double sum
// was 522 ulps off; the compensated one is 3.4, the decomposition 5.1).
TEST(softmax_f64_long_row) {
  const int64_t n = 1000000;
  const int64_t axis = 1;
  cml_shape_t s = API_SHAPE(CML_DTYPE_F64, 1, n);
  double* x = malloc(sizeof(double) * (size_t)n);
  double* y = malloc(sizeof(double) * (size_t)n);
  ASSERT_TRUE(x && y);
  for (int64_t j = 0; j < n; ++j) x[j] = fz_uniform(-2, 2);
  int nodes = -1;
  ASSERT_STATUS_OK(fz_run("c", fz_build_softmax, &axis, &s, 1, (const void* const[]){x}, y,
                          CML_OP_FUSED_SOFTMAX, &nodes));
  ASSERT_EQ_INT(nodes, 1);
  long double m = -INFINITY, sum = 0;
  for (int64_t j = 0; j < n; ++j) m = x[j] > m ? x[j] : m;
  for (int64_t j = 0; j < n; ++j) sum += expl((long double)x[j] - m);
  double worst = 0;
  for (int64_t j = 0; j < n; ++j) {
    const double want = (double)(expl((long double)x[j] - m) / sum);
    const double ulps = fabs(y[j] - want) / (nextafter(want, INFINITY) - want);
    worst = ulps > worst ? ulps : worst;
  }
  free(x), free(y);
  if (!(worst <= 8)) fprintf(stderr, "worst %.1f ulps\n", worst);
  ASSERT_TRUE(worst <= 8);
}

// The SIMD softmax paths for a non-last axis (lanes across the contiguous inner axis, and
// narrow inner axes packed into lanes) and for short last-axis rows (blocks of rows packed
// into lanes), on [outer, n, inner] over axis 1: against a double loop, the decomposition
// (c:reference=true), the scalar kernel (the same NaN pattern: -Inf entries, an all -Inf lane,
// a +Inf lane, values near the f32 limit), threads 1 and 3 bit for bit, and AVX2 against
// AVX-512 bit for bit; bf16 and f16 through a conversion in the graph.
typedef struct fz_softmax_ctx_t {
  int64_t axis;
  cml_dtype_t dtype;
} fz_softmax_ctx_t;

static cml_value_t fz_build_softmax_dt(cml_function_t* f, const cml_value_t* p, const void* ctx) {
  const fz_softmax_ctx_t* c = ctx;
  cml_value_t x = c->dtype == CML_DTYPE_F32 ? p[0] : cml_op_convert_dtype(f, p[0], c->dtype);
  cml_value_t y = cml_op_fused_softmax(f, x, c->axis);
  return c->dtype == CML_DTYPE_F32 ? y : cml_op_convert_dtype(f, y, CML_DTYPE_F32);
}

// Runs the checks above on one shape; returns whether any failed (and prints the first).
static bool fz_softmax_lanes_bad(cml_dtype_t dt, int64_t outer, int64_t n, int64_t inner) {
  static const char* const configs[] = {"c:threads=1", "c:threads=3", "c:threads=1,avx512=false",
                                        "c:threads=1,avx512=false,avx2=false", "c:reference=true"};
  enum { CONFIGS = sizeof configs / sizeof *configs, SCALAR = 3, REF = 4 };
  const bool half = dt != CML_DTYPE_F32;
  const int64_t all = outer * n * inner, lanes = outer * inner;
  cml_shape_t s = API_SHAPE(CML_DTYPE_F32, outer, n, inner);
  float* x = fz_random_f32(all, -8, 8);
  double* want = malloc(sizeof(double) * (size_t)all);
  float* y[CONFIGS] = {0};
  bool bad = !x || !want;
  // Lane l: element j at (l / inner) n inner + j inner + l % inner.
  for (int64_t l = 0; l < lanes && !bad; ++l) {
    const int64_t base = (l / inner) * n * inner + l % inner;
    const int kind = (int)(l % 7);
    for (int64_t j = 0; j < n; ++j) {
      float* v = &x[base + j * inner];
      if (kind == 1 && j % 3 == 1) *v = -INFINITY;               // some -Inf entries
      if (kind == 2) *v = -INFINITY;                             // an all -Inf lane
      if (kind == 3 && j == n / 2) *v = INFINITY;                // a +Inf entry
      if (kind == 4) *v = (j % 2 ? -3.0e38f : 3.0e38f) * 0.9f;   // near the f32 limit
      if (kind == 4 && half) *v = j % 2 ? -60000.0f : 60000.0f;  // within f16's range
      if (kind == 5) *v *= 12.0f;                                // a wide range (e^190)
    }
  }
  // The double loop sees the values the kernel sees: x rounded to the storage dtype.
  for (int64_t i = 0; half && !bad && i < all; ++i) {
    x[i] = dt == CML_DTYPE_BF16 ? cml__bf16_to_f32(cml__f32_to_bf16(x[i]))
                                : cml__f16_to_f32(cml__f32_to_f16(x[i]));
  }
  for (int64_t l = 0; l < lanes && !bad; ++l) {
    const int64_t base = (l / inner) * n * inner + l % inner;
    double m = -INFINITY, sum = 0;
    for (int64_t j = 0; j < n; ++j) m = fmax(m, x[base + j * inner]);
    for (int64_t j = 0; j < n; ++j) sum += exp((double)x[base + j * inner] - m);
    for (int64_t j = 0; j < n; ++j)
      want[base + j * inner] = exp((double)x[base + j * inner] - m) / sum;
  }
  fz_softmax_ctx_t ctx = {1, dt};
  for (int k = 0; k < CONFIGS && !bad; ++k) {
    y[k] = malloc(sizeof(float) * (size_t)all);
    cml_status_t st = y[k] ? fz_run(configs[k], fz_build_softmax_dt, &ctx, &s, 1,
                                    (const void* const[]){x}, y[k], CML_OP_FUSED_SOFTMAX, NULL)
                           : cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
    if (st != CML_OK) {
      fprintf(stderr, "%s: %s\n", configs[k], cml_status_message(st));
      cml_status_free(st);
      bad = true;
    }
  }
  // Where the double loop is finite: f32 within 1e-5 relative (2e-5 for the decomposition),
  // halves within about one rounding of the storage dtype (the decomposition rounds its sums
  // to the half dtype: not compared).
  const double rtol = dt == CML_DTYPE_BF16 ? 8e-3 : dt == CML_DTYPE_F16 ? 1e-3 : 1e-5;
  const double atol = dt == CML_DTYPE_F16 ? 1e-7 : 1e-30;
  for (int64_t i = 0; i < all && !bad; ++i) {
    for (int k = 0; k < CONFIGS && !bad; ++k) {
      const double got = y[k][i], w = want[i];
      if (isnan(w)) {
        // NaN lanes: the SIMD kernels give NaN exactly where the scalar kernel does.
        bad = k != REF && isnan(got) != isnan(y[SCALAR][i]);
      } else if (k != REF || !half) {
        bad = !(fabs(got - w) <= atol + (k == REF ? 2 : 1) * rtol * fabs(w));
      }
    }
    // Thread counts and ISAs: the same bits.
    bad = bad || memcmp(&y[0][i], &y[1][i], sizeof(float)) != 0 ||
          memcmp(&y[0][i], &y[2][i], sizeof(float)) != 0;
    if (bad) {
      fprintf(stderr, "%s [%lld,%lld,%lld] at %lld: want %.9g got", cml_dtype_name(dt),
              (long long)outer, (long long)n, (long long)inner, (long long)i, want[i]);
      for (int k = 0; k < CONFIGS; ++k) fprintf(stderr, " %.9g", (double)y[k][i]);
      fprintf(stderr, "\n");
    }
  }
  free(x), free(want);
  for (int k = 0; k < CONFIGS; ++k) free(y[k]);
  return bad;
}

TEST(softmax_simd_lanes_and_short_rows) {
  static const int64_t inners[] = {1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 33, 100};
  static const int64_t ns[] = {1, 2, 3, 5, 8, 13, 16, 17, 64, 65, 130, 256, 257, 300};
  static const cml_dtype_t dts[] = {CML_DTYPE_F32, CML_DTYPE_BF16, CML_DTYPE_F16};
  int failures = 0;
  for (size_t di = 0; di < sizeof dts / sizeof *dts; ++di) {
    for (size_t ii = 0; ii < sizeof inners / sizeof *inners; ++ii) {
      for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ++ni) {
        if (dts[di] != CML_DTYPE_F32 && ns[ni] > 65 && ns[ni] != 257) continue;
        // Rows (inner 1) come 40 at a time, to fill several blocks of W rows.
        failures += fz_softmax_lanes_bad(dts[di], inners[ii] == 1 ? 120 : 3, ns[ni], inners[ii]);
      }
    }
  }
  // Shapes big enough to be split over the threads (lane tasks of 64, packed blocks of 16).
  static const int64_t big[][3] = {{4099, 8, 1}, {1030, 50, 1}, {64, 20, 100},
                                   {515, 70, 3}, {8, 300, 200}, {5, 257, 29}};
  for (size_t bi = 0; bi < sizeof big / sizeof *big; ++bi) {
    failures += fz_softmax_lanes_bad(CML_DTYPE_F32, big[bi][0], big[bi][1], big[bi][2]);
  }
  ASSERT_EQ_INT(failures, 0);
}

//===--- layer norm ---===//

static cml_value_t fz_build_ln(cml_function_t* f, const cml_value_t* p, const void* ctx) {
  (void)ctx;
  int64_t axis = -1;
  return cml_op_fused_layer_norm(f, p[0], &axis, 1, 1e-5, p[1], p[2]);
}

TEST(layer_norm_native_vs_decomposed) {
  const int64_t rows = 130, n = 257;
  cml_shape_t shapes[3] = {API_SHAPE(CML_DTYPE_F32, rows, n), API_SHAPE(CML_DTYPE_F32, n),
                           API_SHAPE(CML_DTYPE_F32, n)};
  float* x = fz_random_f32(rows * n, -2, 6);
  float* g = fz_random_f32(n, 0.5, 1.5);
  float* be = fz_random_f32(n, -1, 1);
  float* native = malloc(sizeof(float) * (size_t)(rows * n));
  float* decomposed = malloc(sizeof(float) * (size_t)(rows * n));
  double* want = malloc(sizeof(double) * (size_t)(rows * n));
  ASSERT_TRUE(x && g && be && native && decomposed && want);
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0, sq = 0;
    for (int64_t j = 0; j < n; ++j) sum += x[r * n + j];
    double mean = sum / (double)n;
    for (int64_t j = 0; j < n; ++j) sq += (x[r * n + j] - mean) * (x[r * n + j] - mean);
    double rstd = 1 / sqrt(sq / (double)n + 1e-5);
    for (int64_t j = 0; j < n; ++j) want[r * n + j] = (x[r * n + j] - mean) * rstd * g[j] + be[j];
  }
  int nodes_on = -1, nodes_off = -1;
  const void* const ins[] = {x, g, be};
  ASSERT_STATUS_OK(
      fz_run("c", fz_build_ln, NULL, shapes, 3, ins, native, CML_OP_FUSED_LAYER_NORM, &nodes_on));
  ASSERT_STATUS_OK(fz_run("c:fusion=false", fz_build_ln, NULL, shapes, 3, ins, decomposed,
                          CML_OP_FUSED_LAYER_NORM, &nodes_off));
  double e1 = fz_worst(native, want, rows * n, 1e-5, 1e-5);
  double e2 = fz_worst(decomposed, want, rows * n, 1e-4, 1e-4);
  free(x), free(g), free(be), free(native), free(decomposed), free(want);
  ASSERT_EQ_INT(nodes_on, 1);
  ASSERT_EQ_INT(nodes_off, 0);
  ASSERT_TRUE(e1 <= 1);
  ASSERT_TRUE(e2 <= 1);
}

// Rows whose squared deviations overflow f32 (values near +-1e30, all finite): the native
// kernel's variance once came out inf - inf = NaN, was taken as 0, and the outputs were
// (x - mean) / sqrt(eps), about 1e32; the decomposition's squares overflowed to inf and it gave
// zeros. Now both give the double-precision answer on every ISA. Rows of 33 (a tail on both
// ISAs) and 300, f32 and bf16 (f16 cannot hold 1e30). Near 3e38 the SIMD kernels' x - x[0] and
// lane sums overflowed as well (their mean came out NaN, and every output NaN).
TEST(layer_norm_huge_values) {
  for (int mag = 0; mag < 2; ++mag) {
    const double scale = mag == 0 ? 1e30 : 3e38;
    static const char* const cfgs[] = {"c", "c:avx512=false", "c:avx512=false,avx2=false",
                                       "c:fusion=false", "c:reference=true"};
    static const int64_t lens[] = {33, 300};
    for (int dt = 0; dt < 2; ++dt) {
      const cml_dtype_t dtype = dt == 0 ? CML_DTYPE_F32 : CML_DTYPE_BF16;
      for (size_t l = 0; l < 2; ++l) {
        const int64_t n = lens[l];
        float xf[300];
        uint16_t xb[300], yb[300];
        float y[300];
        for (int64_t j = 0; j < n; ++j) {
          xf[j] = (float)(fz_uniform(-1, 1) * scale);
          xb[j] = cml_f32_to_bf16(xf[j]);
          if (dt == 1) xf[j] = cml_bf16_to_f32(xb[j]);
        }
        double mean = 0, sq = 0;
        for (int64_t j = 0; j < n; ++j) mean += xf[j];
        mean /= (double)n;
        for (int64_t j = 0; j < n; ++j) sq += (xf[j] - mean) * (xf[j] - mean);
        const double rstd = 1 / sqrt(sq / (double)n + 1e-5);
        cml_shape_t shapes[3] = {cml_shape_make(dtype, 2, (int64_t[]){1, n}),
                                 cml_shape_make(dtype, 1, (int64_t[]){n}),
                                 cml_shape_make(dtype, 1, (int64_t[]){n})};
        float ones[300], zeros[300];
        uint16_t onesb[300], zerosb[300];
        for (int64_t j = 0; j < n; ++j) {
          ones[j] = 1, zeros[j] = 0;
          onesb[j] = cml_f32_to_bf16(1), zerosb[j] = 0;
        }
        const void* const ins_f[] = {xf, ones, zeros};
        const void* const ins_b[] = {xb, onesb, zerosb};
        for (size_t c = 0; c < sizeof cfgs / sizeof *cfgs; ++c) {
          int nodes = -1;
          ASSERT_STATUS_OK(fz_run(cfgs[c], fz_build_ln, NULL, shapes, 3, dt == 0 ? ins_f : ins_b,
                                  dt == 0 ? (void*)y : (void*)yb, CML_OP_FUSED_LAYER_NORM, &nodes));
          for (int64_t j = 0; j < n; ++j) {
            const double got = dt == 0 ? y[j] : cml_bf16_to_f32(yb[j]);
            const double want = (xf[j] - mean) * rstd;
            const double tol = dt == 0 ? 1e-4 : 2e-2;
            if (!(fabs(got - want) <= tol * (1 + fabs(want)))) {
              fprintf(stderr, "%s %s n=%lld: y[%lld] = %g, want %g\n", cfgs[c],
                      cml_dtype_name(dtype), (long long)n, (long long)j, got, want);
            }
            ASSERT_TRUE(fabs(got - want) <= tol * (1 + fabs(want)));
          }
        }
      }
    }
  }
}

// d/dx of sum(LayerNorm(x) * w) over the last axis (eps 1e-5).
static cml_value_t fz_build_ln_grad(cml_function_t* f, const cml_value_t* p, const void* ctx) {
  (void)ctx;
  int64_t axis = -1;
  cml_value_t y =
      cml_op_fused_layer_norm(f, p[0], &axis, 1, 1e-5, CML_VALUE_INVALID, CML_VALUE_INVALID);
  cml_value_t g = CML_VALUE_INVALID;
  cml_status_t st =
      cml_gradients(f, cml_op_reduce_sum(f, cml_op_mul(f, y, p[1]), NULL, 0), &p[0], 1, &g);
  cml_status_free(st);
  return g;
}

// Float16 rows whose squares overflow Float16 (+-300: 90000 > 65504): the VJP recomputed the
// variance in Float16 (inf), and every gradient came out 0. It runs in Float32 now. Exact:
// dx = r (w - mean w - xhat mean(w xhat)) with r = 1/sqrt(var + eps).
TEST(layer_norm_gradient_of_half_rows_past_the_half_range) {
  static const char* const cfgs[] = {"c", "c:fusion=false", "c:reference=true"};
  const double xv[4] = {300, -300, 300, -300}, wv[4] = {1, 2, 3, 4};
  uint16_t xh[4], wh[4], gh[4];
  for (int i = 0; i < 4; ++i)
    xh[i] = cml_f32_to_f16((float)xv[i]), wh[i] = cml_f32_to_f16((float)wv[i]);
  double mean = 0, var = 0, mw = 0, mwx = 0;
  for (int i = 0; i < 4; ++i) mean += xv[i] / 4;
  for (int i = 0; i < 4; ++i) var += (xv[i] - mean) * (xv[i] - mean) / 4;
  const double r = 1 / sqrt(var + 1e-5);
  for (int i = 0; i < 4; ++i) mw += wv[i] / 4, mwx += wv[i] * (xv[i] - mean) * r / 4;
  const cml_shape_t shapes[2] = {cml_shape_make(CML_DTYPE_F16, 2, (int64_t[]){1, 4}),
                                 cml_shape_make(CML_DTYPE_F16, 2, (int64_t[]){1, 4})};
  for (size_t c = 0; c < sizeof cfgs / sizeof *cfgs; ++c) {
    ASSERT_STATUS_OK(fz_run(cfgs[c], fz_build_ln_grad, NULL, shapes, 2,
                            (const void* const[]){xh, wh}, gh, CML_OP_INVALID, NULL));
    for (int i = 0; i < 4; ++i) {
      const double want = r * (wv[i] - mw - (xv[i] - mean) * r * mwx);  // -+0.00333
      const double got = cml_f16_to_f32(gh[i]);
      if (!(fabs(got - want) <= 1e-3 * fabs(want))) {
        fprintf(stderr, "%s: dx[%d] = %g, want %g\n", cfgs[c], i, got, want);
      }
      ASSERT_TRUE(fabs(got - want) <= 1e-3 * fabs(want));
    }
  }
}

static cml_value_t fz_build_ln_plain(cml_function_t* f, const cml_value_t* p, const void* ctx) {
  (void)ctx;
  int64_t axis = -1;
  return cml_op_fused_layer_norm(f, p[0], &axis, 1, 1e-5, CML_VALUE_INVALID, CML_VALUE_INVALID);
}

// Rows at the edges, native and decomposed: a constant Float64 row of 64 x 3e20 (the plain mean
// was an ulp off and every output +-1 on c) and of 3 x 0.1 normalize to zeros; 64 x -1e38 in
// Float32 (its sum overflowed in the decomposition: NaN) to zeros; +-1e200, +-2e200 in Float64
// (squares past the range: zeros everywhere) to +-0.632456, +-1.26491.
TEST(layer_norm_constant_and_extreme_rows) {
  static const char* const cfgs[] = {"c", "c:fusion=false", "c:reference=true"};
  double c64[64], tenth[3] = {0.1, 0.1, 0.1}, big64[4] = {1e200, -1e200, 2e200, -2e200};
  float c32[64];
  for (int j = 0; j < 64; ++j) c64[j] = 3e20, c32[j] = -1e38f;
  const double sign[4] = {1, -1, 2, -2};
  for (size_t k = 0; k < sizeof cfgs / sizeof *cfgs; ++k) {
    double y64[64];
    float y32[64];
    cml_shape_t s64 = API_SHAPE(CML_DTYPE_F64, 1, 64), s3 = API_SHAPE(CML_DTYPE_F64, 1, 3);
    cml_shape_t s4 = API_SHAPE(CML_DTYPE_F64, 1, 4), s32 = API_SHAPE(CML_DTYPE_F32, 1, 64);
    ASSERT_STATUS_OK(fz_run(cfgs[k], fz_build_ln_plain, NULL, &s64, 1, (const void* const[]){c64},
                            y64, CML_OP_FUSED_LAYER_NORM, NULL));
    for (int j = 0; j < 64; ++j) ASSERT_EQ_DBL(y64[j], 0);
    ASSERT_STATUS_OK(fz_run(cfgs[k], fz_build_ln_plain, NULL, &s3, 1, (const void* const[]){tenth},
                            y64, CML_OP_FUSED_LAYER_NORM, NULL));
    for (int j = 0; j < 3; ++j) ASSERT_TRUE(fabs(y64[j]) <= 1e-9);
    ASSERT_STATUS_OK(fz_run(cfgs[k], fz_build_ln_plain, NULL, &s32, 1, (const void* const[]){c32},
                            y32, CML_OP_FUSED_LAYER_NORM, NULL));
    for (int j = 0; j < 64; ++j) ASSERT_EQ_DBL(y32[j], 0);
    ASSERT_STATUS_OK(fz_run(cfgs[k], fz_build_ln_plain, NULL, &s4, 1, (const void* const[]){big64},
                            y64, CML_OP_FUSED_LAYER_NORM, NULL));
    for (int j = 0; j < 4; ++j) ASSERT_NEAR(y64[j], sign[j] * 0.6324555320336759, 1e-12);
  }
  // The shifted mean (native kernels and, since, the decomposition) makes the constant 0.1 row
  // exactly zero, and constant Float32 rows of 41 x 1e20 and 47 x -3e38, where 41 fl(1/41) is
  // not 1: the decomposition's mean missed the value by an ulp, normalized to +-1 (found by an
  // outside test; xla:cpu runs the same decomposition).
  for (size_t k = 0; k < sizeof cfgs / sizeof *cfgs; ++k) {
    double y[3];
    cml_shape_t s3 = API_SHAPE(CML_DTYPE_F64, 1, 3);
    ASSERT_STATUS_OK(fz_run(cfgs[k], fz_build_ln_plain, NULL, &s3, 1, (const void* const[]){tenth},
                            y, CML_OP_FUSED_LAYER_NORM, NULL));
    for (int j = 0; j < 3; ++j) ASSERT_EQ_DBL(y[j], 0);
    for (int w = 0; w < 2; ++w) {
      const int64_t n = w ? 47 : 41;
      float row[47], out[47];
      for (int j = 0; j < n; ++j) row[j] = w ? -3e38f : 1e20f;
      cml_shape_t rs = API_SHAPE(CML_DTYPE_F32, 1, n);
      ASSERT_STATUS_OK(fz_run(cfgs[k], fz_build_ln_plain, NULL, &rs, 1, (const void* const[]){row},
                              out, CML_OP_FUSED_LAYER_NORM, NULL));
      for (int j = 0; j < n; ++j) {
        if (out[j] != 0) fprintf(stderr, "%s row of %lld: %g\n", cfgs[k], (long long)n, out[j]);
        ASSERT_EQ_DBL(out[j], 0);
      }
    }
  }
}

//===--- dense: every activation, threads 1 vs 4 bit-identical ---===//

typedef struct fz_dense_ctx_t {
  cml_activation_t act;
  cml_dense_layout_t layout;
} fz_dense_ctx_t;

static cml_value_t fz_build_dense(cml_function_t* f, const cml_value_t* p, const void* ctx) {
  const fz_dense_ctx_t* c = ctx;
  cml_dense_config_t cfg;
  cml_dense_config_init(&cfg);
  cfg.activation = c->act;
  cfg.weight_layout = c->layout;
  return cml_op_fused_dense(f, p[0], p[1], p[2], &cfg);
}

static double fz_act(double v, cml_activation_t act) {
  switch (act) {
    case CML_ACTIVATION_GELU:
      return 0.5 * v * (1 + erf(v / sqrt(2.0)));
    case CML_ACTIVATION_RELU:
      return v > 0 ? v : 0;
    case CML_ACTIVATION_SILU:
      return v / (1 + exp(-v));
    case CML_ACTIVATION_HARD_SWISH:
      return v * fmin(fmax(v / 6 + 0.5, 0), 1);
    case CML_ACTIVATION_TANH:
      return tanh(v);
    default:
      return v;
  }
}

TEST(dense_all_activations) {
  const int64_t m = 70, k = 129, n = 65;
  float* x = fz_random_f32(m * k, -1, 1);
  float* w = fz_random_f32(k * n, -0.3, 0.3);
  float* bias = fz_random_f32(n, -1, 1);
  float* out1 = malloc(sizeof(float) * (size_t)(m * n));
  float* out4 = malloc(sizeof(float) * (size_t)(m * n));
  float* dec = malloc(sizeof(float) * (size_t)(m * n));
  double* want = malloc(sizeof(double) * (size_t)(m * n));
  ASSERT_TRUE(x && w && bias && out1 && out4 && dec && want);
  const void* const ins[] = {x, w, bias};
  for (int layout = 0; layout < 2; ++layout) {
    cml_shape_t shapes[3] = {
        API_SHAPE(CML_DTYPE_F32, m, k),
        layout == 0 ? API_SHAPE(CML_DTYPE_F32, k, n) : API_SHAPE(CML_DTYPE_F32, n, k),
        API_SHAPE(CML_DTYPE_F32, n)};
    for (int act = 0; act < CML_ACTIVATION_COUNT; ++act) {
      fz_dense_ctx_t ctx = {(cml_activation_t)act, (cml_dense_layout_t)layout};
      for (int64_t r = 0; r < m; ++r) {
        for (int64_t j = 0; j < n; ++j) {
          double acc = bias[j];
          for (int64_t i = 0; i < k; ++i)
            acc += (double)x[r * k + i] * (layout == 0 ? w[i * n + j] : w[j * k + i]);
          want[r * n + j] = fz_act(acc, ctx.act);
        }
      }
      int nodes = -1, nodes_off = -1;
      ASSERT_STATUS_OK(fz_run("c:threads=1", fz_build_dense, &ctx, shapes, 3, ins, out1,
                              CML_OP_FUSED_DENSE, &nodes));
      ASSERT_EQ_INT(nodes, 1);
      ASSERT_STATUS_OK(fz_run("c:threads=4", fz_build_dense, &ctx, shapes, 3, ins, out4,
                              CML_OP_FUSED_DENSE, NULL));
      ASSERT_STATUS_OK(fz_run("c:fusion=false", fz_build_dense, &ctx, shapes, 3, ins, dec,
                              CML_OP_FUSED_DENSE, &nodes_off));
      ASSERT_EQ_INT(nodes_off, 0);
      ASSERT_TRUE(memcmp(out1, out4, sizeof(float) * (size_t)(m * n)) == 0);
      ASSERT_TRUE(fz_worst(out1, want, m * n, 1e-5, 1e-5) <= 1);
      ASSERT_TRUE(fz_worst(dec, want, m * n, 1e-5, 1e-5) <= 1);
    }
  }
  free(x), free(w), free(bias), free(out1), free(out4), free(dec), free(want);
}

// bf16 FusedDense of more than 16 rows: on CPUs with AVX-512 BF16 the vdpbf16ps GEMM that
// DotGeneral takes (elsewhere the f32 GEMM widening as it packs); both layouts, a bias, several
// activations: against a double-precision loop over the bf16 inputs (within the bf16 output's
// rounding and f32 accumulation), the same bits on 1 and 4 threads, and the decomposition.
TEST(dense_bf16_rows) {
  const int64_t m = 70, k = 129, n = 65;
  uint16_t* x = malloc(sizeof(uint16_t) * (size_t)(m * k));
  uint16_t* w = malloc(sizeof(uint16_t) * (size_t)(k * n));
  uint16_t* bias = malloc(sizeof(uint16_t) * (size_t)n);
  uint16_t* out1 = malloc(sizeof(uint16_t) * (size_t)(m * n));
  uint16_t* out4 = malloc(sizeof(uint16_t) * (size_t)(m * n));
  uint16_t* dec = malloc(sizeof(uint16_t) * (size_t)(m * n));
  float* got = malloc(sizeof(float) * (size_t)(m * n));
  float* got_dec = malloc(sizeof(float) * (size_t)(m * n));
  double* want = malloc(sizeof(double) * (size_t)(m * n));
  ASSERT_TRUE(x && w && bias && out1 && out4 && dec && got && got_dec && want);
  for (int64_t i = 0; i < m * k; ++i) x[i] = cml_f32_to_bf16((float)fz_uniform(-1, 1));
  for (int64_t i = 0; i < k * n; ++i) w[i] = cml_f32_to_bf16((float)fz_uniform(-0.3, 0.3));
  for (int64_t i = 0; i < n; ++i) bias[i] = cml_f32_to_bf16((float)fz_uniform(-1, 1));
  const void* const ins[] = {x, w, bias};
  static const cml_activation_t acts[] = {CML_ACTIVATION_NONE, CML_ACTIVATION_GELU,
                                          CML_ACTIVATION_RELU};
  for (int layout = 0; layout < 2; ++layout) {
    cml_shape_t shapes[3] = {
        API_SHAPE(CML_DTYPE_BF16, m, k),
        layout == 0 ? API_SHAPE(CML_DTYPE_BF16, k, n) : API_SHAPE(CML_DTYPE_BF16, n, k),
        API_SHAPE(CML_DTYPE_BF16, n)};
    for (size_t a = 0; a < sizeof acts / sizeof acts[0]; ++a) {
      fz_dense_ctx_t ctx = {acts[a], (cml_dense_layout_t)layout};
      for (int64_t r = 0; r < m; ++r) {
        for (int64_t j = 0; j < n; ++j) {
          double acc = cml_bf16_to_f32(bias[j]);
          for (int64_t i = 0; i < k; ++i) {
            acc += (double)cml_bf16_to_f32(x[r * k + i]) *
                   cml_bf16_to_f32(layout == 0 ? w[i * n + j] : w[j * k + i]);
          }
          want[r * n + j] = fz_act(acc, ctx.act);
        }
      }
      int nodes = -1;
      ASSERT_STATUS_OK(fz_run("c:threads=1", fz_build_dense, &ctx, shapes, 3, ins, out1,
                              CML_OP_FUSED_DENSE, &nodes));
      ASSERT_EQ_INT(nodes, 1);
      ASSERT_STATUS_OK(fz_run("c:threads=4", fz_build_dense, &ctx, shapes, 3, ins, out4,
                              CML_OP_FUSED_DENSE, NULL));
      ASSERT_STATUS_OK(fz_run("c:fusion=false", fz_build_dense, &ctx, shapes, 3, ins, dec,
                              CML_OP_FUSED_DENSE, NULL));
      ASSERT_TRUE(memcmp(out1, out4, sizeof(uint16_t) * (size_t)(m * n)) == 0);
      for (int64_t i = 0; i < m * n; ++i) {
        got[i] = cml_bf16_to_f32(out1[i]);
        got_dec[i] = cml_bf16_to_f32(dec[i]);
      }
      // One bf16 rounding of the sum (2^-9 relative) and the f32 sums' error; the
      // decomposition rounds the product to bf16 before the bias and the activation too.
      const double native_err = fz_worst(got, want, m * n, 6e-3, 2e-3);
      const double dec_err = fz_worst_f32(got, got_dec, m * n, 2e-2, 2e-2);
      if (native_err > 1 || dec_err > 1) {
        fprintf(stderr,
                "layout %d activation %d: %g against the loop, %g against the "
                "decomposition\n",
                layout, (int)acts[a], native_err, dec_err);
      }
      ASSERT_TRUE(native_err <= 1);
      ASSERT_TRUE(dec_err <= 1);
    }
  }
  free(x), free(w), free(bias), free(out1), free(out4), free(dec), free(got), free(got_dec);
  free(want);
}

//===--- gelu f64 on many elements (parallel chunks) ---===//

static cml_value_t fz_build_gelu(cml_function_t* f, const cml_value_t* p, const void* ctx) {
  return cml_op_fused_gelu(f, p[0], *(const bool*)ctx);
}

TEST(gelu_f64_parallel) {
  const int64_t n = 40000;
  cml_shape_t s = API_SHAPE(CML_DTYPE_F64, n);
  double* x = malloc(sizeof(double) * (size_t)n);
  double* got = malloc(sizeof(double) * (size_t)n);
  ASSERT_TRUE(x && got);
  for (int64_t i = 0; i < n; ++i) x[i] = fz_uniform(-6, 6);
  for (int exact = 0; exact < 2; ++exact) {
    bool e = exact != 0;
    int nodes = -1;
    ASSERT_STATUS_OK(fz_run("c:threads=3", fz_build_gelu, &e, &s, 1, (const void* const[]){x}, got,
                            CML_OP_FUSED_GELU, &nodes));
    ASSERT_EQ_INT(nodes, 1);
    for (int64_t i = 0; i < n; ++i) {
      double v = x[i];
      double want = e ? 0.5 * v * (1 + erf(v / sqrt(2.0)))
                      : 0.5 * v * (1 + tanh(sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
      ASSERT_NEAR(got[i], want, 1e-13 + 1e-13 * fabs(want));
    }
  }
  free(x), free(got);
}

//===--- constant operands: the c backend folds the fused nodes at compile time ---===//

TEST(folded_constants) {
  cml_backend_t* be = fz_backend("c");
  ASSERT_TRUE(be != NULL);
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(be, "fold", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s13 = API_SHAPE(CML_DTYPE_F32, 1, 3);
  const float xs[3] = {0.0f, (float)log(2.0), (float)log(5.0)};
  cml_value_t x = cml_constant(f, &s13, xs);
  cml_shape_t s32 = API_SHAPE(CML_DTYPE_F32, 3, 2);
  const float ws[6] = {1, 0, 0, 1, 1, 1};
  cml_value_t w = cml_constant(f, &s32, ws);
  cml_dense_config_t cfg;
  cml_dense_config_init(&cfg);
  cfg.activation = CML_ACTIVATION_RELU;
  // softmax(x) = [1, 2, 5] / 8; @ W = [1 + 5, 2 + 5] / 8.
  cml_value_t y = cml_op_fused_dense(f, cml_op_fused_softmax(f, x, 1), w, CML_VALUE_INVALID, &cfg);
  ASSERT_EQ_INT(fz_count_op(b, CML_OP_FUSED_DENSE), 1);
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(b, &y, 1, &exe));
  float out[2] = {0, 0};
  cml_status_t st = api_run(be, exe, NULL, (void* const[]){out});
  cml_executable_release(exe);
  cml_backend_release(be);
  ASSERT_STATUS_OK(st);
  ASSERT_NEAR(out[0], 0.75, 1e-6);
  ASSERT_NEAR(out[1], 0.875, 1e-6);
}

//===--- errors ---===//

// Runs |build| on a fresh builder of "c" and expects the builder error |code| with |needle|.
static bool fz_expect_error(cml_value_t (*build)(cml_function_t* f), const char* needle,
                            char* message, size_t size) {
  cml_backend_t* be = fz_backend("c");
  if (!be) return false;
  cml_builder_t* b = NULL;
  if (cml_builder_create(be, "err", &b) != CML_OK) {
    cml_backend_release(be);
    return false;
  }
  cml_value_t y = build(cml_builder_main(b));
  cml_status_t st = cml_builder_status(b);
  bool ok = y == CML_VALUE_INVALID && cml_status_code(st) == CML_STATUS_INVALID_ARGUMENT &&
            strstr(cml_status_message(st), needle) != NULL;
  snprintf(message, size, "%s", cml_status_message(st));
  cml_status_free(st);
  cml_builder_destroy(b);
  cml_backend_release(be);
  return ok;
}

static cml_value_t fz_err_activation(cml_function_t* f) {
  cml_shape_t s = API_SHAPE(CML_DTYPE_F32, 2, 2);
  cml_value_t x = cml_parameter(f, "x", &s);
  cml_dense_config_t cfg;
  cml_dense_config_init(&cfg);
  cfg.activation = (cml_activation_t)42;
  return cml_op_fused_dense(f, x, x, CML_VALUE_INVALID, &cfg);
}

static cml_value_t fz_err_epsilon(cml_function_t* f) {
  cml_shape_t s = API_SHAPE(CML_DTYPE_F32, 2, 2);
  int64_t axis = 0;
  return cml_op_fused_layer_norm(f, cml_parameter(f, "x", &s), &axis, 1, -1.0, CML_VALUE_INVALID,
                                 CML_VALUE_INVALID);
}

static cml_value_t fz_err_repeated_axes(cml_function_t* f) {
  cml_shape_t s = API_SHAPE(CML_DTYPE_F64, 2, 3);
  int64_t axes[] = {1, -1};
  return cml_op_fused_layer_norm(f, cml_parameter(f, "x", &s), axes, 2, 0.0, CML_VALUE_INVALID,
                                 CML_VALUE_INVALID);
}

static cml_value_t fz_err_dense_dtype(cml_function_t* f) {
  cml_shape_t s = API_SHAPE(CML_DTYPE_F32, 2, 2);
  cml_shape_t w = API_SHAPE(CML_DTYPE_F64, 2, 2);
  return cml_op_fused_dense(f, cml_parameter(f, "x", &s), cml_parameter(f, "w", &w),
                            CML_VALUE_INVALID, NULL);
}

static cml_value_t fz_err_sdpa_lengths(cml_function_t* f) {
  cml_shape_t s = API_SHAPE(CML_DTYPE_F32, 1, 2, 3, 4);
  cml_shape_t l = API_SHAPE(CML_DTYPE_I32, 1);
  cml_value_t q = cml_parameter(f, "q", &s);
  cml_sdpa_config_t cfg;
  cml_sdpa_config_init(&cfg);
  cfg.kv_seq_len = cml_parameter(f, "len", &l);
  return cml_op_fused_sdpa(f, q, q, q, CML_ATTENTION_LAYOUT_BHSD, &cfg, NULL, NULL);
}

// SDPA of q = k = v f32[1, 2, 3, 4] (scores [1, 2, 3, 3]) with a mask of shape |m|.
static cml_value_t fz_sdpa_masked(cml_function_t* f, cml_shape_t m) {
  cml_shape_t s = API_SHAPE(CML_DTYPE_F32, 1, 2, 3, 4);
  cml_value_t q = cml_parameter(f, "q", &s);
  cml_sdpa_config_t cfg;
  cml_sdpa_config_init(&cfg);
  cfg.mask = cml_parameter(f, "mask", &m);
  return cml_op_fused_sdpa(f, q, q, q, CML_ATTENTION_LAYOUT_BHSD, &cfg, NULL, NULL);
}

static cml_value_t fz_err_sdpa_mask(cml_function_t* f) {
  return fz_sdpa_masked(f, API_SHAPE(CML_DTYPE_BOOL, 2, 3));  // [2, 3] does not fit [3, 3]
}

static cml_value_t fz_err_sdpa_mask_dtype(cml_function_t* f) {
  return fz_sdpa_masked(f, API_SHAPE(CML_DTYPE_I32, 3, 3));
}

static cml_value_t fz_err_qkv(cml_function_t* f) {
  cml_shape_t x = API_SHAPE(CML_DTYPE_F32, 2, 4);
  cml_shape_t w = API_SHAPE(CML_DTYPE_F32, 4, 9);
  cml_value_t outs[3] = {1, 1, 1};
  bool ok = cml_op_fused_attention_qkv_projection(f, cml_parameter(f, "x", &x),
                                                  cml_parameter(f, "w", &w), CML_VALUE_INVALID,
                                                  CML_VALUE_INVALID, CML_VALUE_INVALID, 4, 3, outs);
  return ok || outs[0] || outs[1] || outs[2] ? 1 : CML_VALUE_INVALID;
}

TEST(argument_errors) {
  char msg[512];
  ASSERT_TRUE(
      fz_expect_error(fz_err_activation, "FusedDense: unknown activation 42", msg, sizeof msg));
  ASSERT_TRUE(fz_expect_error(fz_err_epsilon, "FusedLayerNorm: epsilon", msg, sizeof msg));
  ASSERT_TRUE(fz_expect_error(fz_err_repeated_axes, "repeated", msg, sizeof msg));
  ASSERT_TRUE(fz_expect_error(fz_err_dense_dtype, "Float64", msg, sizeof msg));
  ASSERT_CONTAINS(msg, "FusedDense");
  ASSERT_TRUE(
      fz_expect_error(fz_err_sdpa_lengths, "both query_seq_len and kv_seq_len", msg, sizeof msg));
  ASSERT_TRUE(fz_expect_error(fz_err_sdpa_mask, "mask (Bool)[2, 3]", msg, sizeof msg));
  // The dtypes a mask may have, both named (Bool was once left out).
  ASSERT_TRUE(fz_expect_error(fz_err_sdpa_mask_dtype,
                              "mask (Int32)[3, 3] must be Bool or q's "
                              "dtype Float32",
                              msg, sizeof msg));
  ASSERT_TRUE(fz_expect_error(fz_err_qkv, "query_dim 4", msg, sizeof msg));
  ASSERT_CONTAINS(msg, "[4, 9]");
}

// An invalid operand leaves the first error in place (no crash, no overwrite).
TEST(invalid_operand_keeps_first_error) {
  cml_backend_t* be = fz_backend("c");
  ASSERT_TRUE(be != NULL);
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(be, "inv", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = API_SHAPE(CML_DTYPE_F32, 3);
  cml_value_t x = cml_parameter(f, "x", &s);
  cml_value_t bad = cml_op_fused_softmax(f, x, 5);
  ASSERT_EQ_INT(bad, CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_op_fused_gelu(f, bad, true), CML_VALUE_INVALID);
  ASSERT_EQ_INT(cml_op_fused_dense(f, bad, x, CML_VALUE_INVALID, NULL), CML_VALUE_INVALID);
  cml_status_t st = cml_builder_status(b);
  char msg[256];
  snprintf(msg, sizeof msg, "%s", cml_status_message(st));
  cml_status_free(st);
  cml_builder_destroy(b);
  cml_backend_release(be);
  ASSERT_CONTAINS(msg, "FusedSoftmax: axis 5");
}

TEST_MAIN(TEST_ENTRY(capabilities_follow_fusion_option), TEST_ENTRY(enum_names),
          TEST_ENTRY(softmax_native_vs_decomposed), TEST_ENTRY(softmax_f64_long_row),
          TEST_ENTRY(softmax_simd_lanes_and_short_rows),
          TEST_ENTRY(layer_norm_native_vs_decomposed), TEST_ENTRY(layer_norm_huge_values),
          TEST_ENTRY(layer_norm_gradient_of_half_rows_past_the_half_range),
          TEST_ENTRY(layer_norm_constant_and_extreme_rows), TEST_ENTRY(dense_all_activations),
          TEST_ENTRY(dense_bf16_rows), TEST_ENTRY(gelu_f64_parallel), TEST_ENTRY(folded_constants),
          TEST_ENTRY(argument_errors), TEST_ENTRY(invalid_operand_keeps_first_error))
