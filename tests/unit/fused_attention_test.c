// SPDX-License-Identifier: Apache-2.0
// tests/unit/fused_attention_test.c: the native FusedScaledDotProductAttention of the c backend
// (kernels/generic/fused_attention.c) against its decomposition (c:fusion=false) over every
// option combination (both layouts, GQA, causal, boolean / additive masks, bias, per-batch
// lengths), sizes that are not multiples of the tiles, rows whose keys are all masked, the
// float dtypes, the ISA variants, 1 vs several threads, and against xla:cpu (the decomposition
// there) when the plugin loads.
//
// Bounds (max |native - other| <= atol + rtol |other|): f32 and f64 against the c
// decomposition 2e-5 / 1e-12 (rounding order only); f32 against xla:cpu 1e-4; f16 5e-3 and
// bf16 4e-2 (the decomposition rounds every intermediate to the half dtype, the kernel once).
// Fully masked rows and rows past query_seq_len are exact zeros on both paths.
#include <math.h>
#include <stdlib.h>

#include "api_common.h"
#include "core/builder_internal.h"
#include "test.h"

static uint64_t fa_rng = 0x9E3779B97F4A7C15ull;
static double fa_uniform(double lo, double hi) {
  fa_rng ^= fa_rng << 13;
  fa_rng ^= fa_rng >> 7;
  fa_rng ^= fa_rng << 17;
  return lo + (hi - lo) * (double)(fa_rng >> 11) / 9007199254740992.0;
}

// One test problem: sizes, options and host data (f64 master copies).
typedef struct fa_case_t {
  cml_dtype_t dtype;
  cml_attention_layout_t layout;
  int64_t batch, heads, kv_heads, seq, kv_seq, d, dv;
  bool causal;
  int mask;   // 0 none, 1 Bool [B, 1, S, Skv], 2 additive [S, Skv]
  bool bias;  // [H, S, Skv]
  bool lens;
  double scale;
} fa_case_t;

typedef struct fa_data_t {
  void* q;
  void* k;
  void* v;
  void* mask;
  void* bias;
  int32_t qlen[8], kvlen[8];
} fa_data_t;

static void fa_dims(const fa_case_t* c, int64_t h, int64_t s, int64_t d, int64_t out[4]) {
  bool bhsd = c->layout == CML_ATTENTION_LAYOUT_BHSD;
  out[0] = c->batch;
  out[1] = bhsd ? h : s;
  out[2] = bhsd ? s : h;
  out[3] = d;
}

static size_t fa_elem(cml_dtype_t dt) {
  return dt == CML_DTYPE_F64 ? 8 : (dt == CML_DTYPE_F32 ? 4 : 2);
}

static void fa_put(void* p, int64_t i, cml_dtype_t dt, double v) {
  switch (dt) {
    case CML_DTYPE_F64:
      ((double*)p)[i] = v;
      break;
    case CML_DTYPE_F32:
      ((float*)p)[i] = (float)v;
      break;
    case CML_DTYPE_F16:
      ((uint16_t*)p)[i] = cml_f32_to_f16((float)v);
      break;
    default:
      ((uint16_t*)p)[i] = cml_f32_to_bf16((float)v);
      break;
  }
}

static double fa_get(const void* p, int64_t i, cml_dtype_t dt) {
  switch (dt) {
    case CML_DTYPE_F64:
      return ((const double*)p)[i];
    case CML_DTYPE_F32:
      return ((const float*)p)[i];
    case CML_DTYPE_F16:
      return cml_f16_to_f32(((const uint16_t*)p)[i]);
    default:
      return cml_bf16_to_f32(((const uint16_t*)p)[i]);
  }
}

static void* fa_random(int64_t n, cml_dtype_t dt, double lo, double hi) {
  void* p = malloc((size_t)(n > 0 ? n : 1) * fa_elem(dt));
  for (int64_t i = 0; p && i < n; ++i) fa_put(p, i, dt, fa_uniform(lo, hi));
  return p;
}

static void fa_data_make(const fa_case_t* c, fa_data_t* data) {
  memset(data, 0, sizeof *data);
  const cml_dtype_t dt = c->dtype;
  data->q = fa_random(c->batch * c->heads * c->seq * c->d, dt, -1.5, 1.5);
  data->k = fa_random(c->batch * c->kv_heads * c->kv_seq * c->d, dt, -1.5, 1.5);
  data->v = fa_random(c->batch * c->kv_heads * c->kv_seq * c->dv, dt, -1, 1);
  if (c->mask == 1) {
    // Random, with query row 3 of every batch masked entirely.
    int64_t n = c->batch * c->seq * c->kv_seq;
    uint8_t* m = malloc((size_t)n);
    for (int64_t i = 0; i < n; ++i) {
      int64_t row = (i / c->kv_seq) % c->seq;
      m[i] = row != 3 && fa_uniform(0, 1) < 0.7;
    }
    data->mask = m;
  } else if (c->mask == 2) {
    // Mostly 0 with some -inf and some finite offsets; query row 5 all -inf.
    int64_t n = c->seq * c->kv_seq;
    data->mask = malloc((size_t)n * fa_elem(dt));
    for (int64_t i = 0; i < n; ++i) {
      double u = fa_uniform(0, 1);
      double v = u < 0.2 ? -INFINITY : (u < 0.4 ? fa_uniform(-2, 1) : 0.0);
      if (i / c->kv_seq == 5) v = -INFINITY;
      fa_put(data->mask, i, dt, v);
    }
  }
  if (c->bias) data->bias = fa_random(c->heads * c->seq * c->kv_seq, dt, -1, 1);
  for (int64_t b = 0; b < c->batch && b < 8; ++b) {
    // Batch 0: all keys; batch 1: no key at all (every row masked); others: partial.
    data->qlen[b] = (int32_t)(b == 0 ? c->seq : (c->seq * (b + 1)) / (b + 3));
    data->kvlen[b] = (int32_t)(b == 0 ? c->kv_seq + 5 : (b == 1 ? 0 : c->kv_seq / 2 + 1));
  }
}

static void fa_data_free(fa_data_t* data) {
  free(data->q);
  free(data->k);
  free(data->v);
  free(data->mask);
  free(data->bias);
}

static int64_t fa_out_count(const fa_case_t* c) { return c->batch * c->heads * c->seq * c->dv; }

// Builds, compiles and runs the case on |config|; writes the output (as f64) into |out| and
// the number of FusedScaledDotProductAttention nodes recorded into |*nodes|.
static cml_status_t fa_run(const char* config, const fa_case_t* c, const fa_data_t* data,
                           double* out, int* nodes) {
  cml_backend_t* be = NULL;
  cml_status_t st = cml_backend_new_with_config(config, &be);
  if (st != CML_OK) return st;
  cml_builder_t* b = NULL;
  st = cml_builder_create(be, "sdpa", &b);
  if (st != CML_OK) {
    cml_backend_release(be);
    return st;
  }
  cml_function_t* f = cml_builder_main(b);
  int64_t dims[4];
  const void* ins[8];
  size_t n = 0;
  fa_dims(c, c->heads, c->seq, c->d, dims);
  cml_shape_t s = cml_shape_make(c->dtype, 4, dims);
  cml_value_t q = cml_parameter(f, NULL, &s);
  ins[n++] = data->q;
  fa_dims(c, c->kv_heads, c->kv_seq, c->d, dims);
  s = cml_shape_make(c->dtype, 4, dims);
  cml_value_t k = cml_parameter(f, NULL, &s);
  ins[n++] = data->k;
  fa_dims(c, c->kv_heads, c->kv_seq, c->dv, dims);
  s = cml_shape_make(c->dtype, 4, dims);
  cml_value_t v = cml_parameter(f, NULL, &s);
  ins[n++] = data->v;
  cml_sdpa_config_t cfg;
  cml_sdpa_config_init(&cfg);
  cfg.causal = c->causal;
  cfg.scale = c->scale;
  if (c->mask == 1) {
    s = cml_shape_make(CML_DTYPE_BOOL, 4, (int64_t[]){c->batch, 1, c->seq, c->kv_seq});
    cfg.mask = cml_parameter(f, NULL, &s);
    ins[n++] = data->mask;
  } else if (c->mask == 2) {
    s = cml_shape_make(c->dtype, 2, (int64_t[]){c->seq, c->kv_seq});
    cfg.mask = cml_parameter(f, NULL, &s);
    ins[n++] = data->mask;
  }
  if (c->bias) {
    s = cml_shape_make(c->dtype, 3, (int64_t[]){c->heads, c->seq, c->kv_seq});
    cfg.bias = cml_parameter(f, NULL, &s);
    ins[n++] = data->bias;
  }
  if (c->lens) {
    s = cml_shape_make(CML_DTYPE_I32, 1, (int64_t[]){c->batch});
    cfg.query_seq_len = cml_parameter(f, NULL, &s);
    ins[n++] = data->qlen;
    cfg.kv_seq_len = cml_parameter(f, NULL, &s);
    ins[n++] = data->kvlen;
  }
  cml_value_t y = cml_op_fused_sdpa(f, q, k, v, c->layout, &cfg, NULL, NULL);
  if (nodes) {
    *nodes = 0;
    for (uint32_t i = 0; i < f->nodes.count; ++i)
      *nodes += f->impl->nodes[f->nodes.data[i]].op == CML_OP_FUSED_SDPA;
  }
  const int64_t count = fa_out_count(c);
  void* raw = malloc((size_t)count * fa_elem(c->dtype) + 1);
  cml_executable_t* exe = NULL;
  st = api_finish(b, &y, 1, &exe);
  if (st == CML_OK) st = api_run(be, exe, ins, (void* const[]){raw});
  for (int64_t i = 0; st == CML_OK && i < count; ++i) out[i] = fa_get(raw, i, c->dtype);
  free(raw);
  cml_executable_release(exe);
  cml_backend_release(be);
  return st;
}

// max |a - b| / (atol + rtol |b|); NaN anywhere counts as infinitely bad.
static double fa_worst(const double* a, const double* b, int64_t n, double rtol, double atol) {
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    double e = fabs(a[i] - b[i]) / (atol + rtol * fabs(b[i]));
    if (isnan(e)) return INFINITY;
    if (e > worst) worst = e;
  }
  return worst;
}

// Every option combination, f32, odd sizes that cross tile borders (seq 37, kv_seq 70).
TEST(native_matches_decomposition_all_options) {
  int combos = 0;
  for (int bits = 0; bits < 2 * 2 * 2 * 3 * 2 * 2; ++bits) {
    fa_case_t c = {CML_DTYPE_F32,
                   CML_ATTENTION_LAYOUT_BHSD,
                   3,
                   4,
                   4,
                   37,
                   70,
                   9,
                   11,
                   false,
                   0,
                   false,
                   false,
                   0};
    int r = bits;
    c.layout = r % 2 ? CML_ATTENTION_LAYOUT_BSHD : CML_ATTENTION_LAYOUT_BHSD;
    r /= 2;
    c.kv_heads = r % 2 ? 2 : 4;
    r /= 2;
    c.causal = r % 2;
    r /= 2;
    c.mask = r % 3;
    r /= 3;
    c.bias = r % 2;
    r /= 2;
    c.lens = r % 2;
    c.scale = bits % 5 == 0 ? 0.3 : 0.0;
    fa_data_t data;
    fa_data_make(&c, &data);
    const int64_t n = fa_out_count(&c);
    double* native = malloc((size_t)n * sizeof(double));
    double* decomp = malloc((size_t)n * sizeof(double));
    int native_nodes = 0, decomp_nodes = 0;
    ASSERT_STATUS_OK(fa_run("c", &c, &data, native, &native_nodes));
    ASSERT_STATUS_OK(fa_run("c:fusion=false", &c, &data, decomp, &decomp_nodes));
    ASSERT_EQ_INT(native_nodes, 1);
    ASSERT_EQ_INT(decomp_nodes, 0);
    double w = fa_worst(native, decomp, n, 2e-5, 2e-5);
    if (w > 1) fprintf(stderr, "combo %d: worst %g\n", bits, w);
    ASSERT_TRUE(w <= 1);
    // Rows whose keys are all masked are exact zeros: the Bool mask's query row 3, the
    // additive mask's -inf row 5, and batch 1 with kv_seq_len 0.
    int64_t row = c.mask == 1 ? 3 : (c.mask == 2 ? 5 : -1);
    for (int64_t i = 0; i < n; ++i) {
      int64_t b = i / (c.heads * c.seq * c.dv);
      int64_t s = c.layout == CML_ATTENTION_LAYOUT_BHSD ? (i / c.dv) % c.seq
                                                        : (i / (c.dv * c.heads)) % c.seq;
      if (s == row || (c.lens && b == 1)) {
        ASSERT_TRUE(native[i] == 0.0);
        ASSERT_TRUE(decomp[i] == 0.0);
      }
    }
    ++combos;
    free(native);
    free(decomp);
    fa_data_free(&data);
  }
  ASSERT_EQ_INT(combos, 96);
}

// The other float dtypes on a few option sets, and a larger problem with many tiles.
TEST(native_matches_decomposition_dtypes_and_sizes) {
  static const cml_dtype_t dts[] = {CML_DTYPE_F64, CML_DTYPE_F16, CML_DTYPE_BF16};
  static const double tol[] = {1e-12, 5e-3, 4e-2};
  for (size_t t = 0; t < 3; ++t) {
    for (int opt = 0; opt < 3; ++opt) {
      fa_case_t c = {dts[t],
                     opt == 1 ? CML_ATTENTION_LAYOUT_BSHD : CML_ATTENTION_LAYOUT_BHSD,
                     2,
                     6,
                     opt == 2 ? 3 : 6,
                     33,
                     65,
                     16,
                     8,
                     opt != 0,
                     opt,
                     opt == 2,
                     opt == 1,
                     0};
      fa_data_t data;
      fa_data_make(&c, &data);
      const int64_t n = fa_out_count(&c);
      double* native = malloc((size_t)n * sizeof(double));
      double* decomp = malloc((size_t)n * sizeof(double));
      ASSERT_STATUS_OK(fa_run("c", &c, &data, native, NULL));
      ASSERT_STATUS_OK(fa_run("c:fusion=false", &c, &data, decomp, NULL));
      double w = fa_worst(native, decomp, n, tol[t], tol[t]);
      if (w > 1) fprintf(stderr, "dtype %s opt %d: worst %g\n", cml_dtype_name(dts[t]), opt, w);
      ASSERT_TRUE(w <= 1);
      free(native);
      free(decomp);
      fa_data_free(&data);
    }
  }
  fa_case_t big = {
      CML_DTYPE_F32, CML_ATTENTION_LAYOUT_BSHD, 2, 8, 2, 200, 300, 64, 64, true, 2, true, true, 0};
  fa_data_t data;
  fa_data_make(&big, &data);
  const int64_t n = fa_out_count(&big);
  double* native = malloc((size_t)n * sizeof(double));
  double* decomp = malloc((size_t)n * sizeof(double));
  ASSERT_STATUS_OK(fa_run("c", &big, &data, native, NULL));
  ASSERT_STATUS_OK(fa_run("c:fusion=false", &big, &data, decomp, NULL));
  ASSERT_TRUE(fa_worst(native, decomp, n, 2e-5, 2e-5) <= 1);
  free(native);
  free(decomp);
  fa_data_free(&data);
}

// Results do not depend on the thread count (bitwise); reference=true decomposes.
TEST(native_thread_count_independent) {
  fa_case_t c = {
      CML_DTYPE_F32, CML_ATTENTION_LAYOUT_BHSD, 3, 8, 4, 130, 150, 32, 24, true, 1, true, true, 0};
  fa_data_t data;
  fa_data_make(&c, &data);
  const int64_t n = fa_out_count(&c);
  double* one = malloc((size_t)n * sizeof(double));
  double* four = malloc((size_t)n * sizeof(double));
  double* ref = malloc((size_t)n * sizeof(double));
  int nodes = -1;
  ASSERT_STATUS_OK(fa_run("c:threads=1", &c, &data, one, NULL));
  ASSERT_STATUS_OK(fa_run("c:threads=4", &c, &data, four, NULL));
  ASSERT_TRUE(memcmp(one, four, (size_t)n * sizeof(double)) == 0);
  ASSERT_STATUS_OK(fa_run("c:reference=true", &c, &data, ref, &nodes));
  ASSERT_EQ_INT(nodes, 0);
  ASSERT_TRUE(fa_worst(one, ref, n, 2e-5, 2e-5) <= 1);
  free(one);
  free(four);
  free(ref);
  fa_data_free(&data);
}

// The AVX2 and portable (16-byte vector) variants, f32 and f64, with and without masks.
TEST(isa_variants_match_decomposition) {
  static const char* const configs[] = {"c:avx512=false", "c:avx2=false,avx512=false"};
  for (int cfg = 0; cfg < 2; ++cfg) {
    for (int opt = 0; opt < 4; ++opt) {
      const cml_dtype_t dt = opt % 2 ? CML_DTYPE_F64 : CML_DTYPE_F32;
      const bool masked = opt >= 2;
      fa_case_t c = {dt,
                     CML_ATTENTION_LAYOUT_BSHD,
                     2,
                     4,
                     2,
                     45,
                     77,
                     12,
                     21,
                     true,
                     masked ? 2 : 0,
                     masked,
                     masked,
                     0};
      fa_data_t data;
      fa_data_make(&c, &data);
      const int64_t n = fa_out_count(&c);
      double* native = malloc((size_t)n * sizeof(double));
      double* decomp = malloc((size_t)n * sizeof(double));
      int nodes = 0;
      ASSERT_STATUS_OK(fa_run(configs[cfg], &c, &data, native, &nodes));
      ASSERT_EQ_INT(nodes, 1);
      ASSERT_STATUS_OK(fa_run("c:fusion=false", &c, &data, decomp, NULL));
      const double tol = dt == CML_DTYPE_F64 ? 1e-12 : 2e-5;
      double w = fa_worst(native, decomp, n, tol, tol);
      if (w > 1) fprintf(stderr, "%s opt %d: worst %g\n", configs[cfg], opt, w);
      ASSERT_TRUE(w <= 1);
      free(native);
      free(decomp);
      fa_data_free(&data);
    }
  }
}

// Against xla:cpu (which decomposes); skipped when the plugin is not installed.
TEST(native_matches_xla_cpu) {
  cml_backend_t* probe = NULL;
  cml_status_t st = cml_backend_new_with_config("xla:cpu", &probe);
  if (st != CML_OK) {
    fprintf(stderr, "xla:cpu unavailable, skipped: %s\n", cml_status_message(st));
    cml_status_free(st);
    return;
  }
  cml_backend_release(probe);
  for (int opt = 0; opt < 4; ++opt) {
    fa_case_t c = {CML_DTYPE_F32,
                   opt % 2 ? CML_ATTENTION_LAYOUT_BSHD : CML_ATTENTION_LAYOUT_BHSD,
                   3,
                   4,
                   opt >= 2 ? 2 : 4,
                   37,
                   70,
                   9,
                   11,
                   opt != 1,
                   opt % 3,
                   opt == 3,
                   opt >= 2,
                   0};
    fa_data_t data;
    fa_data_make(&c, &data);
    const int64_t n = fa_out_count(&c);
    double* native = malloc((size_t)n * sizeof(double));
    double* xla = malloc((size_t)n * sizeof(double));
    ASSERT_STATUS_OK(fa_run("c", &c, &data, native, NULL));
    ASSERT_STATUS_OK(fa_run("xla:cpu", &c, &data, xla, NULL));
    double w = fa_worst(native, xla, n, 1e-4, 1e-4);
    if (w > 1) fprintf(stderr, "xla opt %d: worst %g\n", opt, w);
    ASSERT_TRUE(w <= 1);
    free(native);
    free(xla);
    fa_data_free(&data);
  }
}

// c advertises the op only with fusion on and not in reference mode.
TEST(capabilities) {
  static const char* const configs[] = {"c", "c:fusion=false", "c:reference=true"};
  for (int i = 0; i < 3; ++i) {
    cml_backend_t* be = NULL;
    ASSERT_STATUS_OK(cml_backend_new_with_config(configs[i], &be));
    ASSERT_EQ_INT(cml_capabilities_has_op(cml_backend_capabilities(be), CML_OP_FUSED_SDPA), i == 0);
    cml_backend_release(be);
  }
}

TEST_MAIN(TEST_ENTRY(capabilities), TEST_ENTRY(native_matches_decomposition_all_options),
          TEST_ENTRY(native_matches_decomposition_dtypes_and_sizes),
          TEST_ENTRY(native_thread_count_independent), TEST_ENTRY(isa_variants_match_decomposition),
          TEST_ENTRY(native_matches_xla_cpu))
