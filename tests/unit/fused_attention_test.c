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
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "api_common.h"
#include "attention_test_common.h"
#include "core/builder_internal.h"
#include "cml/autodiff.h"
#include "test.h"

static uint64_t fa_rng = 0x9E3779B97F4A7C15ull;
static double fa_uniform(double lo, double hi) { return at_uniform(&fa_rng, lo, hi); }

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
  at_dims(c->layout, c->batch, h, s, d, out);
}

static void* fa_random(int64_t n, cml_dtype_t dt, double lo, double hi) {
  return at_random(&fa_rng, n, dt, lo, hi);
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
    data->mask = malloc((size_t)n * at_elem(dt));
    for (int64_t i = 0; i < n; ++i) {
      double u = fa_uniform(0, 1);
      double v = u < 0.2 ? -INFINITY : (u < 0.4 ? fa_uniform(-2, 1) : 0.0);
      if (i / c->kv_seq == 5) v = -INFINITY;
      at_put(data->mask, i, dt, v);
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

// Adds the case's parameters and its attention to |f|: the inputs' host data go to |ins| (*n of
// them); |p| receives q, k, v and the bias (CML_VALUE_INVALID without one). Returns the output.
static cml_value_t fa_build(cml_function_t* f, const fa_case_t* c, const fa_data_t* data,
                            const void** ins, size_t* count, cml_value_t p[4]) {
  int64_t dims[4];
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
  const at_options_t options = {c->dtype,   c->batch,   c->heads,   c->seq,
                                c->kv_seq,  c->mask,    c->bias,    c->lens,
                                data->mask, data->bias, data->qlen, data->kvlen};
  at_add_options(f, &options, &cfg, ins, &n);
  *count = n;
  p[0] = q;
  p[1] = k;
  p[2] = v;
  p[3] = cfg.bias;
  return cml_op_fused_sdpa(f, q, k, v, c->layout, &cfg, NULL, NULL);
}

// The number of |op| nodes in |f|.
static int fa_count_nodes(cml_function_t* f, cml_op_t op) {
  int nodes = 0;
  for (uint32_t i = 0; i < f->nodes.count; ++i) nodes += f->impl->nodes[f->nodes.data[i]].op == op;
  return nodes;
}

// Builds, compiles and runs the case on |config|; writes the output (as f64) into |out| and
// the number of FusedScaledDotProductAttention nodes recorded into |*nodes|.
static cml_status_t fa_run(const char* config, const fa_case_t* c, const fa_data_t* data,
                           double* out, int* nodes) {
  cml_backend_t* be = NULL;
  cml_builder_t* b = NULL;
  cml_status_t st = at_open(config, "sdpa", &be, &b);
  if (st != CML_OK) return st;
  cml_function_t* f = cml_builder_main(b);
  const void* ins[8];
  size_t n = 0;
  cml_value_t p[4];
  cml_value_t y = fa_build(f, c, data, ins, &n, p);
  if (nodes) *nodes = fa_count_nodes(f, CML_OP_FUSED_SDPA);
  const int64_t count = fa_out_count(c);
  void* raw = malloc((size_t)count * at_elem(c->dtype) + 1);
  cml_executable_t* exe = NULL;
  st = api_finish(b, &y, 1, &exe);
  if (st == CML_OK) st = api_run(be, exe, ins, (void* const[]){raw});
  for (int64_t i = 0; st == CML_OK && i < count; ++i) out[i] = at_get(raw, i, c->dtype);
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

// A case of |dt| and |layout| with these sizes and no options (not causal, no mask, bias or
// lengths, the default scale).
static fa_case_t fa_case(cml_dtype_t dt, cml_attention_layout_t layout, int64_t batch,
                         int64_t heads, int64_t kv_heads, int64_t seq, int64_t kv_seq, int64_t d,
                         int64_t dv) {
  fa_case_t c = {dt, layout, batch, heads, kv_heads, seq, kv_seq, d, dv, false, 0, false, false, 0};
  return c;
}

// The case's option combination |bits| (of 96): layout, GQA (half the heads), causal, mask
// (none, Bool, additive), bias, lengths, and a scale of 0.3 for every fifth.
static void fa_case_combo(fa_case_t* c, int bits) {
  int r = bits;
  c->layout = r % 2 ? CML_ATTENTION_LAYOUT_BSHD : CML_ATTENTION_LAYOUT_BHSD;
  r /= 2;
  c->kv_heads = r % 2 ? c->heads / 2 : c->heads;
  r /= 2;
  c->causal = r % 2;
  r /= 2;
  c->mask = r % 3;
  r /= 3;
  c->bias = r % 2;
  r /= 2;
  c->lens = r % 2;
  c->scale = bits % 5 == 0 ? 0.3 : 0.0;
}

// One case's outputs on two configurations (fa_pair_run), as f64.
typedef struct fa_pair_t {
  int64_t n;     // elements of each output
  double* a;     // on the first configuration
  double* b;     // on the second
  int nodes[2];  // FusedScaledDotProductAttention nodes in each graph
} fa_pair_t;

// Runs |c| with |data| on |config_a| and on |config_b| into |r|; fa_pair_free frees |r| (after
// a failure too).
static cml_status_t fa_pair_run(fa_pair_t* r, const char* config_a, const char* config_b,
                                const fa_case_t* c, const fa_data_t* data) {
  r->n = fa_out_count(c);
  r->a = malloc((size_t)r->n * sizeof(double));
  r->b = malloc((size_t)r->n * sizeof(double));
  r->nodes[0] = r->nodes[1] = -1;
  cml_status_t st = fa_run(config_a, c, data, r->a, &r->nodes[0]);
  if (st == CML_OK) st = fa_run(config_b, c, data, r->b, &r->nodes[1]);
  return st;
}

static void fa_pair_free(fa_pair_t* r) {
  free(r->a);
  free(r->b);
}

// The verdict of the check |label|: the runs' status |st| (freed), the graphs' node counts
// |got| against |want| (-1: any number), and the worst error |worst| (at most 1 passes).
// Prints what failed.
static bool fa_verdict(const char* label, cml_status_t st, const int got[2], const int want[2],
                       double worst) {
  if (st != CML_OK) {
    fprintf(stderr, "%s: run failed: %s\n", label, cml_status_message(st));
    cml_status_free(st);
    return false;
  }
  if ((want[0] >= 0 && got[0] != want[0]) || (want[1] >= 0 && got[1] != want[1])) {
    fprintf(stderr, "%s: %d and %d nodes, want %d and %d\n", label, got[0], got[1], want[0],
            want[1]);
    return false;
  }
  if (!(worst <= 1)) fprintf(stderr, "%s: worst %g\n", label, worst);
  return worst <= 1;
}

// Makes |c|'s data and checks |c| on |config| against |other|: both run, their graphs hold
// |nodes_config| and |nodes_other| FusedScaledDotProductAttention nodes (-1: any number), and
// fa_worst(|tol|, |tol|) <= 1. Prints |label| with what failed.
static bool fa_check(const char* label, const fa_case_t* c, const char* config, const char* other,
                     double tol, int nodes_config, int nodes_other) {
  fa_data_t data;
  fa_data_make(c, &data);
  fa_pair_t r;
  cml_status_t st = fa_pair_run(&r, config, other, c, &data);
  const double w = st == CML_OK ? fa_worst(r.a, r.b, r.n, tol, tol) : INFINITY;
  const bool ok = fa_verdict(label, st, r.nodes, (const int[]){nodes_config, nodes_other}, w);
  fa_pair_free(&r);
  fa_data_free(&data);
  return ok;
}

// Full key tiles without a bias or mask take the score loop's fused row max; a row whose
// scores are not finite falls back to the separate pass. q row 5 holds a NaN (its scores are
// NaN), q row 7 values of 3e37 (scores near the float limit: the finiteness probe, a sum of
// them, overflows): those rows must match the decomposition's (NaN where it is NaN), the others too
// (kv_seq 128: two full tiles; causal with seq 128: the second query tile sees key tile 0 whole; dv
// 16: v read in place).
TEST(native_nonfinite_scores_fused_max) {
  for (int causal = 0; causal < 2; ++causal) {
    fa_case_t c = fa_case(CML_DTYPE_F32, CML_ATTENTION_LAYOUT_BHSD, 1, 2, 2, 128, 128, 16, 16);
    c.causal = causal;
    fa_data_t data;
    fa_data_make(&c, &data);
    float* q = data.q;
    q[5 * c.d + 3] = NAN;
    for (int64_t e = 0; e < c.d; ++e) q[7 * c.d + e] = 3e37f;
    q[(c.seq + 70) * c.d + 1] = NAN;  // head 1, row 70 (second query tile)
    fa_pair_t r;
    ASSERT_STATUS_OK(fa_pair_run(&r, "c", "c:fusion=false", &c, &data));
    const double* native = r.a;
    const double* decomp = r.b;
    int64_t nan_rows = 0, bad = 0;
    for (int64_t i = 0; i < r.n; ++i) {
      if (isnan(decomp[i]) || isnan(native[i])) {
        bad += isnan(decomp[i]) != isnan(native[i]);
        nan_rows += i % c.dv == 0 && isnan(native[i]);
        continue;
      }
      bad += !(fabs(native[i] - decomp[i]) <= 1e-5 + 1e-4 * fabs(decomp[i]));
    }
    if (bad) fprintf(stderr, "causal %d: %lld elements differ\n", causal, (long long)bad);
    ASSERT_EQ_INT(bad, 0);
    ASSERT_EQ_INT(nan_rows, 2);  // rows 5 and 70
    for (int64_t e = 0; e < c.dv; ++e) ASSERT_TRUE(isnan(native[5 * c.dv + e]));
    fa_pair_free(&r);
    fa_data_free(&data);
  }
}

// An additive mask holding +inf makes the row's max +inf and exp(inf - inf) NaN: the row is NaN,
// as in the decomposition. The vector exp gave 0 there, the row's sum 0, and the row came out
// zeros, as if every key were masked. Rows 1 (a +inf) and 2 (a +inf and a NaN-free -inf) are NaN,
// the others match the decomposition.
TEST(native_plus_infinity_in_additive_mask) {
  fa_case_t c = fa_case(CML_DTYPE_F32, CML_ATTENTION_LAYOUT_BHSD, 1, 1, 1, 4, 40, 16, 16);
  c.mask = 2;
  fa_data_t data;
  fa_data_make(&c, &data);
  float* mask = data.mask;  // [S, Skv]
  mask[1 * c.kv_seq + 1] = INFINITY;
  mask[2 * c.kv_seq + 33] = INFINITY;
  mask[2 * c.kv_seq + 0] = -INFINITY;
  fa_pair_t r;
  ASSERT_STATUS_OK(fa_pair_run(&r, "c", "c:fusion=false", &c, &data));
  for (int64_t row = 0; row < c.seq; ++row) {
    for (int64_t e = 0; e < c.dv; ++e) {
      const double native = r.a[row * c.dv + e], decomp = r.b[row * c.dv + e];
      if (row == 1 || row == 2) {
        ASSERT_TRUE(isnan(native));
        ASSERT_TRUE(isnan(decomp));
      } else {
        ASSERT_TRUE(fabs(native - decomp) <= 1e-5 + 1e-4 * fabs(decomp));
      }
    }
  }
  fa_pair_free(&r);
  fa_data_free(&data);
}

// Every option combination, f32, odd sizes that cross tile borders (seq 37, kv_seq 70).
TEST(native_matches_decomposition_all_options) {
  int combos = 0;
  for (int bits = 0; bits < 2 * 2 * 2 * 3 * 2 * 2; ++bits) {
    fa_case_t c = fa_case(CML_DTYPE_F32, CML_ATTENTION_LAYOUT_BHSD, 3, 4, 4, 37, 70, 9, 11);
    fa_case_combo(&c, bits);
    fa_data_t data;
    fa_data_make(&c, &data);
    fa_pair_t r;
    ASSERT_STATUS_OK(fa_pair_run(&r, "c", "c:fusion=false", &c, &data));
    const double* native = r.a;
    const double* decomp = r.b;
    ASSERT_EQ_INT(r.nodes[0], 1);
    ASSERT_EQ_INT(r.nodes[1], 0);
    double w = fa_worst(native, decomp, r.n, 2e-5, 2e-5);
    if (w > 1) fprintf(stderr, "combo %d: worst %g\n", bits, w);
    ASSERT_TRUE(w <= 1);
    // Rows whose keys are all masked are exact zeros: the Bool mask's query row 3, the
    // additive mask's -inf row 5, and batch 1 with kv_seq_len 0.
    int64_t row = c.mask == 1 ? 3 : (c.mask == 2 ? 5 : -1);
    for (int64_t i = 0; i < r.n; ++i) {
      int64_t b = i / (c.heads * c.seq * c.dv);
      int64_t s = c.layout == CML_ATTENTION_LAYOUT_BHSD ? (i / c.dv) % c.seq
                                                        : (i / (c.dv * c.heads)) % c.seq;
      if (s == row || (c.lens && b == 1)) {
        ASSERT_TRUE(native[i] == 0.0);
        ASSERT_TRUE(decomp[i] == 0.0);
      }
    }
    ++combos;
    fa_pair_free(&r);
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
      fa_case_t c =
          fa_case(dts[t], opt == 1 ? CML_ATTENTION_LAYOUT_BSHD : CML_ATTENTION_LAYOUT_BHSD, 2, 6,
                  opt == 2 ? 3 : 6, 33, 65, 16, 8);
      c.causal = opt != 0, c.mask = opt, c.bias = opt == 2, c.lens = opt == 1;
      char label[64];
      snprintf(label, sizeof label, "dtype %s opt %d", cml_dtype_name(dts[t]), opt);
      ASSERT_TRUE(fa_check(label, &c, "c", "c:fusion=false", tol[t], -1, -1));
    }
  }
  fa_case_t big = fa_case(CML_DTYPE_F32, CML_ATTENTION_LAYOUT_BSHD, 2, 8, 2, 200, 300, 64, 64);
  big.causal = true, big.mask = 2, big.bias = true, big.lens = true;
  ASSERT_TRUE(fa_check("big", &big, "c", "c:fusion=false", 2e-5, -1, -1));
}

// Results do not depend on the thread count (bitwise); reference=true decomposes.
TEST(native_thread_count_independent) {
  fa_case_t c = fa_case(CML_DTYPE_F32, CML_ATTENTION_LAYOUT_BHSD, 3, 8, 4, 130, 150, 32, 24);
  c.causal = true, c.mask = 1, c.bias = true, c.lens = true;
  fa_data_t data;
  fa_data_make(&c, &data);
  fa_pair_t r;
  ASSERT_STATUS_OK(fa_pair_run(&r, "c:threads=1", "c:threads=4", &c, &data));
  ASSERT_TRUE(memcmp(r.a, r.b, (size_t)r.n * sizeof(double)) == 0);
  int nodes = -1;
  ASSERT_STATUS_OK(fa_run("c:reference=true", &c, &data, r.b, &nodes));  // b: the reference
  ASSERT_EQ_INT(nodes, 0);
  ASSERT_TRUE(fa_worst(r.a, r.b, r.n, 2e-5, 2e-5) <= 1);
  fa_pair_free(&r);
  fa_data_free(&data);
}

// The AVX2 and portable (16-byte vector) variants, f32 and f64, with and without masks.
TEST(isa_variants_match_decomposition) {
  static const char* const configs[] = {"c:avx512=false", "c:avx2=false,avx512=false"};
  for (int cfg = 0; cfg < 2; ++cfg) {
    for (int opt = 0; opt < 4; ++opt) {
      const cml_dtype_t dt = opt % 2 ? CML_DTYPE_F64 : CML_DTYPE_F32;
      const bool masked = opt >= 2;
      fa_case_t c = fa_case(dt, CML_ATTENTION_LAYOUT_BSHD, 2, 4, 2, 45, 77, 12, 21);
      c.causal = true, c.mask = masked ? 2 : 0, c.bias = masked, c.lens = masked;
      const double tol = dt == CML_DTYPE_F64 ? 1e-12 : 2e-5;
      char label[64];
      snprintf(label, sizeof label, "%s opt %d", configs[cfg], opt);
      ASSERT_TRUE(fa_check(label, &c, configs[cfg], "c:fusion=false", tol, 1, -1));
    }
  }
}

// Against xla:cpu (which decomposes); skipped when the plugin is not installed.
TEST(native_matches_xla_cpu) {
  if (!at_xla_cpu_available()) return;
  for (int opt = 0; opt < 4; ++opt) {
    fa_case_t c =
        fa_case(CML_DTYPE_F32, opt % 2 ? CML_ATTENTION_LAYOUT_BSHD : CML_ATTENTION_LAYOUT_BHSD, 3,
                4, opt >= 2 ? 2 : 4, 37, 70, 9, 11);
    c.causal = opt != 1, c.mask = opt % 3, c.bias = opt == 3, c.lens = opt >= 2;
    char label[64];
    snprintf(label, sizeof label, "xla opt %d", opt);
    ASSERT_TRUE(fa_check(label, &c, "c", "xla:cpu", 1e-4, -1, -1));
  }
}

//===--- gradients (FusedScaledDotProductAttentionVJP) ---===//

// Element counts of q, k, v and the bias [H, S, Skv].
static void fa_grad_counts(const fa_case_t* c, int64_t n[4]) {
  n[0] = c->batch * c->heads * c->seq * c->d;
  n[1] = c->batch * c->kv_heads * c->kv_seq * c->d;
  n[2] = c->batch * c->kv_heads * c->kv_seq * c->dv;
  n[3] = c->heads * c->seq * c->kv_seq;
}

// Builds loss = sum(y * w) (|weight|: y's element count of values, in the case's dtype) and
// its gradients with respect to q, k, v (and the bias when |bias_grad|), runs it on |config|
// and writes the gradients (as f64) to grads[0..3]. *vjp_nodes: how many
// FusedScaledDotProductAttentionVJP nodes the gradient graph holds.
static cml_status_t fa_grad_run(const char* config, const fa_case_t* c, const fa_data_t* data,
                                const double* weight, bool bias_grad, double* grads[4],
                                int* vjp_nodes) {
  cml_backend_t* be = NULL;
  cml_builder_t* b = NULL;
  cml_status_t st = at_open(config, "sdpa_grad", &be, &b);
  if (st != CML_OK) return st;
  cml_function_t* f = cml_builder_main(b);
  const void* ins[8];
  size_t n_in = 0;
  cml_value_t p[4];
  cml_value_t y = fa_build(f, c, data, ins, &n_in, p);
  cml_shape_t ys;
  cml_builder_value_shape(b, y, &ys);
  const int64_t ny = fa_out_count(c);
  void* w = malloc((size_t)ny * at_elem(c->dtype));
  for (int64_t i = 0; i < ny; ++i) at_put(w, i, c->dtype, weight[i]);
  cml_value_t loss = cml_op_reduce_sum(f, cml_op_mul(f, y, cml_constant(f, &ys, w)), NULL, 0);
  free(w);
  const int ng = bias_grad ? 4 : 3;
  cml_value_t g[4];
  st = cml_gradients(f, loss, p, (size_t)ng, g);
  if (st != CML_OK) {
    cml_builder_destroy(b);
    cml_backend_release(be);
    return st;
  }
  if (vjp_nodes) *vjp_nodes = fa_count_nodes(f, CML_OP_FUSED_SDPA_VJP);
  int64_t counts[4];
  fa_grad_counts(c, counts);
  void* raw[4];
  for (int i = 0; i < ng; ++i) raw[i] = malloc((size_t)counts[i] * at_elem(c->dtype) + 1);
  cml_executable_t* exe = NULL;
  st = api_finish(b, g, (size_t)ng, &exe);
  if (st == CML_OK) st = api_run(be, exe, ins, raw);
  for (int i = 0; i < ng; ++i) {
    for (int64_t e = 0; st == CML_OK && e < counts[i]; ++e)
      grads[i][e] = at_get(raw[i], e, c->dtype);
    free(raw[i]);
  }
  cml_executable_release(exe);
  cml_backend_release(be);
  return st;
}

typedef struct fa_grads_t {
  double* g[4];
  double* weight;
} fa_grads_t;

static void fa_grads_alloc(const fa_case_t* c, fa_grads_t* out) {
  int64_t n[4];
  fa_grad_counts(c, n);
  for (int i = 0; i < 4; ++i) out->g[i] = calloc((size_t)n[i] + 1, sizeof(double));
  const int64_t ny = fa_out_count(c);
  out->weight = malloc((size_t)ny * sizeof(double));
  for (int64_t i = 0; i < ny; ++i) out->weight[i] = fa_uniform(-1, 1);
}

static void fa_grads_free(fa_grads_t* g) {
  for (int i = 0; i < 4; ++i) free(g->g[i]);
  free(g->weight);
}

// The worst of fa_worst over the |ng| gradients.
static double fa_grads_worst(const fa_case_t* c, const fa_grads_t* a, const fa_grads_t* b, int ng,
                             double tol) {
  int64_t n[4];
  fa_grad_counts(c, n);
  double worst = 0;
  for (int i = 0; i < ng; ++i) {
    double w = fa_worst(a->g[i], b->g[i], n[i], tol, tol);
    if (w > worst) worst = w;
  }
  return worst;
}

// Makes |c|'s data and checks the gradients of q, k, v (and the bias with |bias_grad|) on
// |config| against |other| (the same loss weights): both run, their gradient graphs hold
// |vjp_config| and |vjp_other| FusedScaledDotProductAttentionVJP nodes (-1: any number), and
// fa_grads_worst(|tol|) <= 1. Prints |label| with what failed.
static bool fa_grad_check(const char* label, const fa_case_t* c, const char* config,
                          const char* other, bool bias_grad, double tol, int vjp_config,
                          int vjp_other) {
  fa_data_t data;
  fa_data_make(c, &data);
  fa_grads_t a, b;
  fa_grads_alloc(c, &a);
  fa_grads_alloc(c, &b);
  memcpy(b.weight, a.weight, (size_t)fa_out_count(c) * sizeof(double));
  int vjp[2] = {-1, -1};
  cml_status_t st = fa_grad_run(config, c, &data, a.weight, bias_grad, a.g, &vjp[0]);
  if (st == CML_OK) st = fa_grad_run(other, c, &data, b.weight, bias_grad, b.g, &vjp[1]);
  const double w = st == CML_OK ? fa_grads_worst(c, &a, &b, bias_grad ? 4 : 3, tol) : INFINITY;
  const bool ok = fa_verdict(label, st, vjp, (const int[]){vjp_config, vjp_other}, w);
  fa_grads_free(&a);
  fa_grads_free(&b);
  fa_data_free(&data);
  return ok;
}

// dq, dk, dv of the native VJP against the gradients of the decomposition, every option
// combination, f32 (bound 5e-5 / 5e-5: rounding order only).
TEST(vjp_matches_decomposition_all_options) {
  int combos = 0;
  for (int bits = 0; bits < 96; ++bits) {
    fa_case_t c = fa_case(CML_DTYPE_F32, CML_ATTENTION_LAYOUT_BHSD, 3, 4, 4, 37, 70, 9, 11);
    fa_case_combo(&c, bits);
    char label[64];
    snprintf(label, sizeof label, "vjp combo %d", bits);
    ASSERT_TRUE(fa_grad_check(label, &c, "c", "c:fusion=false", false, 5e-5, 1, 0));
    ++combos;
  }
  ASSERT_EQ_INT(combos, 96);
}

// Query rows masked entirely by huge finite additive values (-1e9, the dtype's lowest value,
// -1e30 plus small offsets) get uniform weights over their keys in the forward; the saved
// logsumexp m + log(l) is one float there, log(l) lost to rounding, and the backward took P as 1
// instead of 1/l (those rows' gradients l times too large). Rows 5-7 of the additive mask hold
// such values and the loss weights them like every other row; every ISA variant and both
// backward schedules (one task per head at 1 thread, two passes at 8) against the decomposition.
TEST(vjp_rows_masked_by_huge_finite_values) {
  static const char* const cfgs[] = {"c:threads=1", "c:threads=8", "c:avx512=false",
                                     "c:avx512=false,avx2=false"};
  static const cml_dtype_t dts[] = {CML_DTYPE_F32, CML_DTYPE_F64, CML_DTYPE_F16};
  for (size_t t = 0; t < sizeof dts / sizeof *dts; ++t) {
    for (int causal = 0; causal < 2; ++causal) {
      fa_case_t c = fa_case(dts[t], CML_ATTENTION_LAYOUT_BHSD, 2, 2, 2, 37, 70, 9, 11);
      c.mask = 2;
      c.causal = causal;
      fa_data_t data;
      fa_data_make(&c, &data);
      const double lowest = dts[t] == CML_DTYPE_F32   ? -FLT_MAX
                            : dts[t] == CML_DTYPE_F64 ? -DBL_MAX
                                                      : -65504.0;
      for (int64_t j = 0; j < c.kv_seq; ++j) {
        at_put(data.mask, 5 * c.kv_seq + j, c.dtype, dts[t] == CML_DTYPE_F16 ? -60000.0 : -1e9);
        at_put(data.mask, 6 * c.kv_seq + j, c.dtype, lowest);
        at_put(data.mask, 7 * c.kv_seq + j, c.dtype,
               dts[t] == CML_DTYPE_F16 ? -30000.0 - (double)(j % 3) : -1e30 + (double)(j % 3));
      }
      const double tol = dts[t] == CML_DTYPE_F16 ? 2e-2 : (dts[t] == CML_DTYPE_F64 ? 1e-11 : 5e-5);
      fa_grads_t want;
      fa_grads_alloc(&c, &want);
      ASSERT_STATUS_OK(fa_grad_run("c:fusion=false", &c, &data, want.weight, false, want.g, NULL));
      for (size_t k = 0; k < sizeof cfgs / sizeof *cfgs; ++k) {
        fa_grads_t got;
        fa_grads_alloc(&c, &got);
        int vjp = -1;
        ASSERT_STATUS_OK(fa_grad_run(cfgs[k], &c, &data, want.weight, false, got.g, &vjp));
        ASSERT_EQ_INT(vjp, 1);
        const double w = fa_grads_worst(&c, &got, &want, 3, tol);
        if (!(w <= 1))
          fprintf(stderr, "%s %s causal %d: worst %g\n", cml_dtype_name(dts[t]), cfgs[k], causal,
                  w);
        ASSERT_TRUE(w <= 1);
        fa_grads_free(&got);
      }
      fa_grads_free(&want);
      fa_data_free(&data);
    }
  }
}

// At most 4 query rows (the forward's decode path) with scores near 1900 (q and k entries of
// 31 +- 0.03): the forward summed the scores in another order than the backward's tiles, the
// saved logsumexp then missed the recomputed scores by their last bits, P summed to 1 + 1e-4, and
// dq (a sum of dS times keys that share an offset of 31) came out 90% off on the SIMD kernels
// (found by an outside test). A forward whose logsumexp is read now runs the tile path: dq, dk
// and dv within 1% of the largest gradient of the decomposition in f64, on every ISA.
TEST(vjp_decode_rows_with_large_scores) {
  static const char* const cfgs[] = {"c", "c:avx512=false", "c:avx512=false,avx2=false"};
  fa_case_t c = fa_case(CML_DTYPE_F32, CML_ATTENTION_LAYOUT_BHSD, 1, 2, 2, 4, 7, 4, 4);
  fa_case_t c64 = c;
  c64.dtype = CML_DTYPE_F64;
  fa_data_t data, data64;
  fa_data_make(&c, &data);
  fa_data_make(&c64, &data64);
  float* q = data.q;
  float* k = data.k;
  double* q64 = data64.q;
  double* k64 = data64.k;
  double* v64 = data64.v;
  const float* v = data.v;
  for (int i = 0; i < 2 * 4 * 4; ++i) q64[i] = q[i] = 31.0f + (float)fa_uniform(-0.03, 0.03);
  for (int i = 0; i < 2 * 7 * 4; ++i) k64[i] = k[i] = 31.0f + (float)fa_uniform(-0.03, 0.03);
  for (int i = 0; i < 2 * 7 * 4; ++i) v64[i] = v[i];
  fa_grads_t want;
  fa_grads_alloc(&c, &want);
  ASSERT_STATUS_OK(fa_grad_run("c:fusion=false", &c64, &data64, want.weight, false, want.g, NULL));
  int64_t n[4];
  fa_grad_counts(&c, n);
  for (size_t k_cfg = 0; k_cfg < sizeof cfgs / sizeof *cfgs; ++k_cfg) {
    fa_grads_t got;
    fa_grads_alloc(&c, &got);
    int vjp = -1;
    ASSERT_STATUS_OK(fa_grad_run(cfgs[k_cfg], &c, &data, want.weight, false, got.g, &vjp));
    ASSERT_EQ_INT(vjp, 1);
    for (int g = 0; g < 3; ++g) {
      double err = 0, big = 0;
      for (int64_t e = 0; e < n[g]; ++e) {
        err = fmax(err, fabs(got.g[g][e] - want.g[g][e]));
        big = fmax(big, fabs(want.g[g][e]));
      }
      if (!(err <= 1e-2 * big))
        fprintf(stderr, "%s gradient %d: max error %g of max %g\n", cfgs[k_cfg], g, err, big);
      ASSERT_TRUE(err <= 1e-2 * big);
    }
    fa_grads_free(&got);
  }
  fa_grads_free(&want);
  fa_data_free(&data);
  fa_data_free(&data64);
}

// loss(q, k, v, bias) = sum(sdpa(...) * w) for f64 data, by running the forward on |exe|.
static double fa_loss(cml_backend_t* be, cml_executable_t* exe, const void* const* ins,
                      const double* w, int64_t ny, double* y) {
  cml_status_t st = api_run(be, exe, ins, (void* const[]){y});
  if (st != CML_OK) {
    cml_status_free(st);
    return NAN;
  }
  double loss = 0;
  for (int64_t i = 0; i < ny; ++i) loss += y[i] * w[i];
  return loss;
}

// f64: the native VJP (and, with a bias gradient, the decomposition path) against central
// finite differences of the native forward, on several option sets (bound 1e-6 relative).
TEST(vjp_f64_matches_finite_differences) {
  for (int opt = 0; opt < 5; ++opt) {
    static const int combos[5] = {0, 13, 46, 71, 95};
    fa_case_t c = fa_case(CML_DTYPE_F64, CML_ATTENTION_LAYOUT_BHSD, 3, 2, 2, 7, 9, 3, 2);
    fa_case_combo(&c, combos[opt]);
    const bool bias_grad = c.bias;
    fa_data_t data;
    fa_data_make(&c, &data);
    fa_grads_t got;
    fa_grads_alloc(&c, &got);
    int vjp = -1;
    ASSERT_STATUS_OK(fa_grad_run("c", &c, &data, got.weight, bias_grad, got.g, &vjp));
    ASSERT_EQ_INT(vjp, bias_grad ? 0 : 1);  // a bias gradient takes the decomposition
    cml_backend_t* be = NULL;
    cml_builder_t* b = NULL;
    ASSERT_STATUS_OK(at_open("c", "sdpa_fd", &be, &b));
    cml_function_t* f = cml_builder_main(b);
    const void* ins[8];
    size_t n_in = 0;
    cml_value_t p[4];
    cml_value_t y = fa_build(f, &c, &data, ins, &n_in, p);
    cml_executable_t* exe = NULL;
    ASSERT_STATUS_OK(api_finish(b, &y, 1, &exe));
    const int64_t ny = fa_out_count(&c);
    double* ybuf = malloc((size_t)ny * sizeof(double));
    double* bufs[4] = {data.q, data.k, data.v, data.bias};
    int64_t counts[4];
    fa_grad_counts(&c, counts);
    int bad = 0;
    for (int t = 0; t < (bias_grad ? 4 : 3); ++t) {
      for (int64_t e = 0; e < counts[t]; ++e) {
        const double x0 = bufs[t][e], h = 1e-6 * (1 + fabs(x0));
        bufs[t][e] = x0 + h;
        const double lp = fa_loss(be, exe, ins, got.weight, ny, ybuf);
        bufs[t][e] = x0 - h;
        const double lm = fa_loss(be, exe, ins, got.weight, ny, ybuf);
        bufs[t][e] = x0;
        const double fd = (lp - lm) / (2 * h);
        if (!(fabs(got.g[t][e] - fd) <= 1e-6 * (1 + fabs(fd)))) {
          if (bad++ < 5)
            fprintf(stderr, "fd opt %d: d/d%d[%lld] = %.12g, finite differences %.12g\n", opt, t,
                    (long long)e, got.g[t][e], fd);
        }
      }
    }
    ASSERT_EQ_INT(bad, 0);
    free(ybuf);
    cml_executable_release(exe);
    cml_backend_release(be);
    fa_grads_free(&got);
    fa_data_free(&data);
  }
}

// f64 / f16 / bf16 against the decomposition's gradients, the ISA variants, a problem of many
// tiles, and the thread count (bitwise).
TEST(vjp_dtypes_isa_sizes_threads) {
  static const cml_dtype_t dts[] = {CML_DTYPE_F64, CML_DTYPE_F16, CML_DTYPE_BF16};
  static const double tol[] = {1e-11, 2e-2, 1.5e-1};
  for (size_t t = 0; t < 3; ++t) {
    for (int opt = 0; opt < 3; ++opt) {
      static const int combos[3] = {0, 23, 71};
      fa_case_t c = fa_case(dts[t], CML_ATTENTION_LAYOUT_BHSD, 2, 6, 6, 33, 65, 16, 8);
      fa_case_combo(&c, combos[opt]);
      char label[64];
      snprintf(label, sizeof label, "vjp %s opt %d", cml_dtype_name(dts[t]), opt);
      ASSERT_TRUE(fa_grad_check(label, &c, "c", "c:fusion=false", false, tol[t], -1, -1));
    }
  }
  static const char* const configs[] = {"c:avx512=false", "c:avx2=false,avx512=false"};
  for (int cfg = 0; cfg < 2; ++cfg) {
    for (int opt = 0; opt < 4; ++opt) {
      fa_case_t c = fa_case(opt % 2 ? CML_DTYPE_F64 : CML_DTYPE_F32, CML_ATTENTION_LAYOUT_BSHD, 2,
                            4, 2, 45, 77, 12, 21);
      c.causal = true, c.mask = opt >= 2 ? 2 : 0, c.bias = opt >= 2, c.lens = opt >= 2;
      char label[64];
      snprintf(label, sizeof label, "vjp %s opt %d", configs[cfg], opt);
      const double tol_isa = opt % 2 ? 1e-11 : 5e-5;
      ASSERT_TRUE(fa_grad_check(label, &c, configs[cfg], "c:fusion=false", false, tol_isa, 1, -1));
    }
  }
  fa_case_t big = fa_case(CML_DTYPE_F32, CML_ATTENTION_LAYOUT_BSHD, 2, 8, 2, 200, 300, 64, 64);
  big.causal = true, big.mask = 2, big.bias = true, big.lens = true;
  fa_data_t data;
  fa_data_make(&big, &data);
  fa_grads_t one, four, decomp;
  fa_grads_alloc(&big, &one);
  fa_grads_alloc(&big, &four);
  fa_grads_alloc(&big, &decomp);
  const size_t wbytes = (size_t)fa_out_count(&big) * sizeof(double);
  memcpy(four.weight, one.weight, wbytes);
  memcpy(decomp.weight, one.weight, wbytes);
  ASSERT_STATUS_OK(fa_grad_run("c:threads=1", &big, &data, one.weight, false, one.g, NULL));
  ASSERT_STATUS_OK(fa_grad_run("c:threads=8", &big, &data, four.weight, false, four.g, NULL));
  ASSERT_STATUS_OK(
      fa_grad_run("c:fusion=false", &big, &data, decomp.weight, false, decomp.g, NULL));
  int64_t n[4];
  fa_grad_counts(&big, n);
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(memcmp(one.g[i], four.g[i], (size_t)n[i] * sizeof(double)) == 0);
  ASSERT_TRUE(fa_grads_worst(&big, &one, &decomp, 3, 1e-4) <= 1);
  fa_grads_free(&one);
  fa_grads_free(&four);
  fa_grads_free(&decomp);
  fa_data_free(&data);
}

// A bias that needs a gradient, and a float mask, take the decomposition (no VJP node) and
// match it; the native VJP against xla:cpu's gradients (the decomposition differentiated there).
TEST(vjp_bias_gradient_and_xla) {
  fa_case_t c = fa_case(CML_DTYPE_F32, CML_ATTENTION_LAYOUT_BSHD, 3, 4, 2, 37, 70, 9, 11);
  c.causal = true, c.mask = 2, c.bias = true, c.lens = true;
  ASSERT_TRUE(fa_grad_check("vjp bias gradient", &c, "c", "c:fusion=false", true, 5e-5, 0, -1));
  if (!at_xla_cpu_available()) return;
  // Three combinations (each compile on xla:cpu takes seconds): plain; GQA, causal, additive
  // mask and bias; BSHD, GQA, causal, Bool mask, bias and lengths.
  static const int kXlaCombos[3] = {0, 46, 87};
  for (int ci = 0; ci < 3; ++ci) {
    const int bits = kXlaCombos[ci];
    fa_case_t x = c;
    fa_case_combo(&x, bits);
    char label[64];
    snprintf(label, sizeof label, "vjp xla combo %d", bits);
    ASSERT_TRUE(fa_grad_check(label, &x, "c", "xla:cpu", false, 2e-4, 1, -1));
  }
}

// The logsumexp state: one state on c's native node, the host's log(sum(exp(scores))) per row
// (f64, causal, GQA; -inf for the rows past query_seq_len); none when decomposed.
TEST(logsumexp_state) {
  enum { B = 2, H = 2, S = 5, SK = 7, D = 3 };
  static double q[B * H * S * D], k[B * SK * D], v[B * SK * D], lse[B * H * S];
  for (int i = 0; i < B * H * S * D; ++i) q[i] = fa_uniform(-2, 2);
  for (int i = 0; i < B * SK * D; ++i) k[i] = fa_uniform(-2, 2), v[i] = fa_uniform(-1, 1);
  static const int32_t qlen[B] = {S, 3}, kvlen[B] = {SK, SK};
  for (int config = 0; config < 2; ++config) {
    cml_backend_t* be = NULL;
    cml_builder_t* b = NULL;
    ASSERT_STATUS_OK(at_open(config ? "c:fusion=false" : "c", "lse", &be, &b));
    cml_function_t* f = cml_builder_main(b);
    cml_shape_t qs = cml_shape_make(CML_DTYPE_F64, 4, (int64_t[]){B, H, S, D});
    cml_shape_t ks = cml_shape_make(CML_DTYPE_F64, 4, (int64_t[]){B, 1, SK, D});
    cml_shape_t ls = cml_shape_make(CML_DTYPE_I32, 1, (int64_t[]){B});
    cml_value_t pq = cml_parameter(f, NULL, &qs), pk = cml_parameter(f, NULL, &ks);
    cml_value_t pv = cml_parameter(f, NULL, &ks);
    cml_sdpa_config_t cfg;
    cml_sdpa_config_init(&cfg);
    cfg.causal = true;
    cfg.query_seq_len = cml_parameter(f, NULL, &ls);
    cfg.kv_seq_len = cml_parameter(f, NULL, &ls);
    cml_value_t states[CML_SDPA_MAX_STATES];
    size_t count = 99;
    cml_value_t y =
        cml_op_fused_sdpa(f, pq, pk, pv, CML_ATTENTION_LAYOUT_BHSD, &cfg, states, &count);
    ASSERT_NE_INT(y, CML_VALUE_INVALID);
    if (config == 1) {
      ASSERT_EQ_INT((int)count, 0);
      ASSERT_EQ_INT(states[0], CML_VALUE_INVALID);
      cml_builder_destroy(b);
      cml_backend_release(be);
      continue;
    }
    ASSERT_EQ_INT((int)count, 1);
    cml_shape_t ss;
    ASSERT_TRUE(cml_builder_value_shape(b, states[0], &ss));
    ASSERT_EQ_INT(ss.dtype, CML_DTYPE_F64);
    ASSERT_EQ_INT(ss.rank, 3);
    ASSERT_TRUE(ss.dims[0] == B && ss.dims[1] == H && ss.dims[2] == S);
    cml_executable_t* exe = NULL;
    ASSERT_STATUS_OK(api_finish(b, &states[0], 1, &exe));
    ASSERT_STATUS_OK(
        api_run(be, exe, (const void* const[]){q, k, v, qlen, kvlen}, (void* const[]){lse}));
    cml_executable_release(exe);
    cml_backend_release(be);
    const double scale = 1 / sqrt((double)D);
    for (int bb = 0; bb < B; ++bb) {
      for (int h = 0; h < H; ++h) {
        for (int i = 0; i < S; ++i) {
          const double got = lse[(bb * H + h) * S + i];
          if (i >= qlen[bb]) {
            ASSERT_TRUE(got == -INFINITY);
            continue;
          }
          double sum = 0;
          for (int j = 0; j <= i && j < SK; ++j) {
            double dot = 0;
            for (int e = 0; e < D; ++e)
              dot += q[((bb * H + h) * S + i) * D + e] * k[(bb * SK + j) * D + e];
            sum += exp(dot * scale);
          }
          ASSERT_TRUE(fabs(got - log(sum)) <= 1e-12 * (1 + fabs(log(sum))));
        }
      }
    }
  }
}

// A v head dim of 0: nothing to write to the output, but the logsumexp state is still
// computed (it was left as whatever the memory held). q = k = ones of head dim 4: every score is
// 4 / sqrt(4) = 2, so lse = 2 + log(3) over three keys.
TEST(logsumexp_state_without_value_columns) {
  cml_backend_t* be = NULL;
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(at_open("c", "lse_dv0", &be, &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t qs = cml_shape_make(CML_DTYPE_F64, 4, (int64_t[]){1, 1, 2, 4});
  cml_shape_t ks = cml_shape_make(CML_DTYPE_F64, 4, (int64_t[]){1, 1, 3, 4});
  cml_shape_t vs = cml_shape_make(CML_DTYPE_F64, 4, (int64_t[]){1, 1, 3, 0});
  cml_value_t pq = cml_parameter(f, NULL, &qs), pk = cml_parameter(f, NULL, &ks);
  cml_value_t pv = cml_parameter(f, NULL, &vs);
  cml_value_t states[CML_SDPA_MAX_STATES];
  size_t count = 0;
  cml_value_t y = cml_op_fused_sdpa(f, pq, pk, pv, CML_ATTENTION_LAYOUT_BHSD, NULL, states, &count);
  ASSERT_NE_INT(y, CML_VALUE_INVALID);
  ASSERT_EQ_INT((int)count, 1);
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(b, &states[0], 1, &exe));
  static const double ones[12] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  double lse[2] = {-7, -7};
  ASSERT_STATUS_OK(api_run(be, exe, (const void* const[]){ones, ones, NULL}, (void* const[]){lse}));
  cml_executable_release(exe);
  cml_backend_release(be);
  for (int i = 0; i < 2; ++i) ASSERT_NEAR(lse[i], 2 + log(3.0), 1e-14);
}

// Keys past kv_seq_len are never read: NaN and Inf rows of k and v there (an uncleared KV
// cache) leave the output and the gradient of q finite on the native kernel and on the
// decomposition alike (the decomposition multiplied v's by p = 0: NaN; and its gradient of q,
// dS k with dS = 0 there, read k's: NaN).
TEST(keys_past_kv_seq_len_are_not_read) {
  static const char* const cfgs[] = {"c", "c:fusion=false", "c:reference=true"};
  // One query, four keys of head dim 1, kv_seq_len 2: scores q k = 1 and 2 for the first two.
  static const double q[1] = {1}, k[4] = {1, 2, NAN, -INFINITY}, v[4] = {1, 3, NAN, INFINITY};
  static const int32_t qlen[1] = {1}, kvlen[1] = {2};
  const double p1 = exp(1.0) / (exp(1.0) + exp(2.0)), want = p1 * 1 + (1 - p1) * 3;
  // d out / d q = sum_j p_j (k_j - sum_i p_i k_i) v_j over the two keys read.
  const double kbar = p1 * 1 + (1 - p1) * 2;
  const double want_dq = p1 * (1 - kbar) * 1 + (1 - p1) * (2 - kbar) * 3;
  for (size_t c = 0; c < 2; ++c) {
    cml_backend_t* be = NULL;
    cml_builder_t* b = NULL;
    ASSERT_STATUS_OK(at_open(cfgs[c], "kvlen_nan", &be, &b));
    cml_function_t* f = cml_builder_main(b);
    cml_shape_t qs = cml_shape_make(CML_DTYPE_F64, 4, (int64_t[]){1, 1, 1, 1});
    cml_shape_t ks = cml_shape_make(CML_DTYPE_F64, 4, (int64_t[]){1, 1, 4, 1});
    cml_shape_t ls = cml_shape_make(CML_DTYPE_I32, 1, (int64_t[]){1});
    cml_value_t pq = cml_parameter(f, NULL, &qs), pk = cml_parameter(f, NULL, &ks);
    cml_value_t pv = cml_parameter(f, NULL, &ks);
    cml_sdpa_config_t cfg;
    cml_sdpa_config_init(&cfg);
    cfg.scale = 1;
    cfg.query_seq_len = cml_parameter(f, NULL, &ls);
    cfg.kv_seq_len = cml_parameter(f, NULL, &ls);
    cml_value_t ys[2];
    ys[0] = cml_op_fused_sdpa(f, pq, pk, pv, CML_ATTENTION_LAYOUT_BHSD, &cfg, NULL, NULL);
    ASSERT_STATUS_OK(cml_gradients(f, cml_op_reduce_sum(f, ys[0], NULL, 0), &pq, 1, &ys[1]));
    cml_executable_t* exe = NULL;
    ASSERT_STATUS_OK(api_finish(b, ys, 2, &exe));
    double out = 0, dq = 0;
    ASSERT_STATUS_OK(
        api_run(be, exe, (const void* const[]){q, k, v, qlen, kvlen}, (void* const[]){&out, &dq}));
    cml_executable_release(exe);
    cml_backend_release(be);
    ASSERT_NEAR(out, want, 1e-14);
    ASSERT_NEAR(dq, want_dq, 1e-13);
  }
}

// Query rows past query_seq_len are zeros and get zero gradients: a NaN in such a row of q (an
// uncleared buffer) stays out of every gradient. The decomposition once kept it in the scores,
// and dS = P (dP - D) made dq, dk and dv of the whole group NaN. One head, two query rows (row
// 1 padded, NaN), two keys of head dim 2; loss = sum(o); the native path is the oracle for the
// first row (checked against the decomposition's forward value too).
TEST(query_rows_past_query_seq_len_stay_out_of_gradients) {
  static const char* const cfgs[] = {"c", "c:fusion=false", "c:reference=true"};
  static const float q[4] = {0.5f, -1, NAN, NAN}, k[4] = {1, 2, -1, 0.5f}, v[4] = {1, 2, 3, 4};
  static const int32_t qlen[1] = {1}, kvlen[1] = {2};
  // Row 0: scores (0.5 - 2, -0.5 - 0.5) / sqrt(2) = (-1.5, -1) / sqrt(2).
  const double s0 = -1.5 / sqrt(2.0), s1 = -1.0 / sqrt(2.0);
  const double p0 = exp(s0) / (exp(s0) + exp(s1)), p1 = 1 - p0;
  const double o0 = p0 * 1 + p1 * 3, o1 = p0 * 2 + p1 * 4;
  for (size_t c = 0; c < sizeof cfgs / sizeof *cfgs; ++c) {
    cml_backend_t* be = NULL;
    cml_builder_t* b = NULL;
    ASSERT_STATUS_OK(at_open(cfgs[c], "qpad_nan", &be, &b));
    cml_function_t* f = cml_builder_main(b);
    cml_shape_t xs = cml_shape_make(CML_DTYPE_F32, 4, (int64_t[]){1, 1, 2, 2});
    cml_shape_t ls = cml_shape_make(CML_DTYPE_I32, 1, (int64_t[]){1});
    cml_value_t p[3];
    for (int i = 0; i < 3; ++i) p[i] = cml_parameter(f, NULL, &xs);
    cml_sdpa_config_t cfg;
    cml_sdpa_config_init(&cfg);
    cfg.query_seq_len = cml_parameter(f, NULL, &ls);
    cfg.kv_seq_len = cml_parameter(f, NULL, &ls);
    cml_value_t outs[4];
    outs[0] = cml_op_fused_sdpa(f, p[0], p[1], p[2], CML_ATTENTION_LAYOUT_BHSD, &cfg, NULL, NULL);
    ASSERT_STATUS_OK(cml_gradients(f, cml_op_reduce_sum(f, outs[0], NULL, 0), p, 3, &outs[1]));
    cml_executable_t* exe = NULL;
    ASSERT_STATUS_OK(api_finish(b, outs, 4, &exe));
    float got[4][4];
    ASSERT_STATUS_OK(api_run(be, exe, (const void* const[]){q, k, v, qlen, kvlen},
                             (void* const[]){got[0], got[1], got[2], got[3]}));
    cml_executable_release(exe);
    cml_backend_release(be);
    ASSERT_NEAR(got[0][0], o0, 1e-6);
    ASSERT_NEAR(got[0][1], o1, 1e-6);
    ASSERT_EQ_DBL(got[0][2], 0.0);  // the padded row
    ASSERT_EQ_DBL(got[0][3], 0.0);
    for (int g = 1; g < 4; ++g) {
      for (int e = 0; e < 4; ++e) {
        if (!isfinite(got[g][e]))
          fprintf(stderr, "%s: gradient %d [%d] = %g\n", cfgs[c], g, e, got[g][e]);
        ASSERT_TRUE(isfinite(got[g][e]));
      }
    }
    ASSERT_EQ_DBL(got[1][2], 0.0);  // dq of the padded row
    ASSERT_EQ_DBL(got[1][3], 0.0);
  }
}

// Float16 inputs whose scores pass the Float16 range (q k = 80000, scaled by 1/2 to 40000) or
// whose softmax sum would (10^5 keys): the native kernel computes in Float32, and so does the
// decomposition now (in Float16 it gave NaN for the first and zeros for the second).
TEST(half_scores_past_the_half_range) {
  static const char* const cfgs[] = {"c", "c:fusion=false", "c:reference=true"};
  for (size_t c = 0; c < sizeof cfgs / sizeof *cfgs; ++c) {
    for (int which = 0; which < 2; ++which) {
      const int64_t kv = which == 0 ? 2 : 100000, d = 4;
      cml_backend_t* be = NULL;
      cml_builder_t* b = NULL;
      ASSERT_STATUS_OK(at_open(cfgs[c], "half_range", &be, &b));
      cml_function_t* f = cml_builder_main(b);
      cml_shape_t qs = cml_shape_make(CML_DTYPE_F16, 4, (int64_t[]){1, 1, 1, d});
      cml_shape_t ks = cml_shape_make(CML_DTYPE_F16, 4, (int64_t[]){1, 1, kv, d});
      const cml_value_t pq = cml_parameter(f, NULL, &qs);
      const cml_value_t pk = cml_parameter(f, NULL, &ks);
      const cml_value_t pv = cml_parameter(f, NULL, &ks);
      cml_sdpa_config_t cfg;
      cml_sdpa_config_init(&cfg);
      cfg.scale = 0.5;
      cml_value_t y = cml_op_fused_sdpa(f, pq, pk, pv, CML_ATTENTION_LAYOUT_BHSD, &cfg, NULL, NULL);
      cml_executable_t* exe = NULL;
      ASSERT_STATUS_OK(api_finish(b, &y, 1, &exe));
      uint16_t* qh = calloc((size_t)d, sizeof *qh);
      uint16_t* kh = calloc((size_t)(kv * d), sizeof *kh);
      uint16_t* vh = calloc((size_t)(kv * d), sizeof *vh);
      ASSERT_TRUE(qh && kh && vh);
      for (int64_t e = 0; e < d; ++e) qh[e] = cml_f32_to_f16(which == 0 ? 200.0f : 0.0f);
      for (int64_t j = 0; j < kv; ++j) {
        for (int64_t e = 0; e < d; ++e) {
          kh[j * d + e] = cml_f32_to_f16(which == 0 && j == 0 ? 100.0f : 0.0f);
          vh[j * d + e] = cml_f32_to_f16(which == 0 ? (float)(j * d + e + 1) : 1.0f);
        }
      }
      uint16_t out[4];
      ASSERT_STATUS_OK(api_run(be, exe, (const void* const[]){qh, kh, vh}, (void* const[]){out}));
      free(qh), free(kh), free(vh);
      cml_executable_release(exe);
      cml_backend_release(be);
      for (int64_t e = 0; e < d; ++e) {
        // First: all weight on key 0 (scores 40000 and 0): v row 0 = 1 2 3 4. Second: the mean
        // of rows of ones.
        const double want = which == 0 ? (double)(e + 1) : 1.0;
        const double got = cml_f16_to_f32(out[e]);
        if (!(fabs(got - want) <= 2e-3 * want)) {
          fprintf(stderr, "%s case %d: o[%lld] = %g, want %g\n", cfgs[c], which, (long long)e, got,
                  want);
        }
        ASSERT_TRUE(fabs(got - want) <= 2e-3 * want);
      }
    }
  }
}

// FusedAttentionQKVProjection: c's native node (three GEMMs over column blocks of w_qkv) against
// the decomposition (Dot, Slice, Add) for each float dtype and bias combination.
static cml_status_t fa_qkv_run(const char* config, cml_dtype_t dt, unsigned biases, const void* x,
                               const void* w, const void* const bias[3], double* out[3],
                               int* nodes) {
  enum { M = 37, K = 20, QD = 24, KD = 8 };
  cml_backend_t* be = NULL;
  cml_builder_t* b = NULL;
  cml_status_t st = at_open(config, "qkv", &be, &b);
  if (st != CML_OK) return st;
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t xs = cml_shape_make(dt, 2, (int64_t[]){M, K});
  cml_shape_t ws = cml_shape_make(dt, 2, (int64_t[]){K, QD + 2 * KD});
  const void* ins[5] = {x, w};
  size_t n = 2;
  cml_value_t px = cml_parameter(f, NULL, &xs), pw = cml_parameter(f, NULL, &ws);
  cml_value_t pb[3] = {CML_VALUE_INVALID, CML_VALUE_INVALID, CML_VALUE_INVALID};
  for (int i = 0; i < 3; ++i) {
    if (!(biases & (1u << i))) continue;
    cml_shape_t bs = cml_shape_make(dt, 1, (int64_t[]){i == 0 ? QD : KD});
    pb[i] = cml_parameter(f, NULL, &bs);
    ins[n++] = bias[i];
  }
  cml_value_t o[3];
  if (!cml_op_fused_attention_qkv_projection(f, px, pw, pb[0], pb[1], pb[2], QD, KD, o)) {
    cml_builder_destroy(b);
    cml_backend_release(be);
    return cml_status_make(CML_STATUS_INTERNAL, "qkv projection failed to build");
  }
  *nodes = fa_count_nodes(f, CML_OP_FUSED_ATTENTION_QKV_PROJECTION);
  void* raw[3];
  for (int i = 0; i < 3; ++i) raw[i] = malloc((size_t)(M * (i == 0 ? QD : KD)) * at_elem(dt));
  cml_executable_t* exe = NULL;
  st = api_finish(b, o, 3, &exe);
  if (st == CML_OK) st = api_run(be, exe, ins, raw);
  for (int i = 0; i < 3; ++i) {
    for (int64_t e = 0; st == CML_OK && e < M * (i == 0 ? QD : KD); ++e)
      out[i][e] = at_get(raw[i], e, dt);
    free(raw[i]);
  }
  cml_executable_release(exe);
  cml_backend_release(be);
  return st;
}

TEST(qkv_projection_native) {
  enum { M = 37, K = 20, QD = 24, KD = 8 };
  static const cml_dtype_t dts[] = {CML_DTYPE_F32, CML_DTYPE_F64, CML_DTYPE_F16, CML_DTYPE_BF16};
  static const double tol[] = {1e-5, 1e-12, 5e-3, 4e-2};
  for (int t = 0; t < 4; ++t) {
    for (unsigned biases = 0; biases < 8; biases += 3) {  // none, q+k, q+v... (0, 3, 6)
      void* x = fa_random(M * K, dts[t], -1, 1);
      void* w = fa_random(K * (QD + 2 * KD), dts[t], -1, 1);
      void* bias_data[3] = {fa_random(QD, dts[t], -1, 1), fa_random(KD, dts[t], -1, 1),
                            fa_random(KD, dts[t], -1, 1)};
      double* native[3];
      double* decomp[3];
      for (int i = 0; i < 3; ++i) {
        native[i] = malloc(sizeof(double) * M * (i == 0 ? QD : KD));
        decomp[i] = malloc(sizeof(double) * M * (i == 0 ? QD : KD));
      }
      int nn = -1, nd = -1;
      const void* const bc[3] = {bias_data[0], bias_data[1], bias_data[2]};
      ASSERT_STATUS_OK(fa_qkv_run("c", dts[t], biases, x, w, bc, native, &nn));
      ASSERT_STATUS_OK(fa_qkv_run("c:fusion=false", dts[t], biases, x, w, bc, decomp, &nd));
      ASSERT_EQ_INT(nn, 1);
      ASSERT_EQ_INT(nd, 0);
      for (int i = 0; i < 3; ++i) {
        double wst = fa_worst(native[i], decomp[i], M * (i == 0 ? QD : KD), tol[t], tol[t]);
        if (wst > 1)
          fprintf(stderr, "qkv %s biases %u out %d: %g\n", cml_dtype_name(dts[t]), biases, i, wst);
        ASSERT_TRUE(wst <= 1);
        free(native[i]);
        free(decomp[i]);
      }
      free(x);
      free(w);
      for (int i = 0; i < 3; ++i) free(bias_data[i]);
    }
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

TEST_MAIN(TEST_ENTRY(capabilities), TEST_ENTRY(logsumexp_state_without_value_columns),
          TEST_ENTRY(keys_past_kv_seq_len_are_not_read),
          TEST_ENTRY(native_matches_decomposition_all_options),
          TEST_ENTRY(native_nonfinite_scores_fused_max),
          TEST_ENTRY(native_plus_infinity_in_additive_mask),
          TEST_ENTRY(query_rows_past_query_seq_len_stay_out_of_gradients),
          TEST_ENTRY(half_scores_past_the_half_range),
          TEST_ENTRY(native_matches_decomposition_dtypes_and_sizes),
          TEST_ENTRY(native_thread_count_independent), TEST_ENTRY(isa_variants_match_decomposition),
          TEST_ENTRY(native_matches_xla_cpu), TEST_ENTRY(vjp_matches_decomposition_all_options),
          TEST_ENTRY(vjp_f64_matches_finite_differences), TEST_ENTRY(vjp_dtypes_isa_sizes_threads),
          TEST_ENTRY(vjp_bias_gradient_and_xla), TEST_ENTRY(logsumexp_state),
          TEST_ENTRY(vjp_rows_masked_by_huge_finite_values),
          TEST_ENTRY(vjp_decode_rows_with_large_scores), TEST_ENTRY(qkv_projection_native))
