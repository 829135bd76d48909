// SPDX-License-Identifier: Apache-2.0
// tests/unit/c_attention_segments_test.c: the c backend's segmented k / v for the native
// FusedScaledDotProductAttention (opt.c cmlc_opt_segments, kernels/generic/fused_attention*):
// a Concatenate along the key axis whose only consumer is the attention (a KV cache and the new
// keys) is not run, the kernel reads its operands in place.
//
// Each case runs the graph twice on the same backend: as is (the Concatenates are read in
// parts: the executable's stats count them) and with the Concatenates also returned (they then
// run, and the attention reads the copies). The attention's results must be bitwise equal (the
// kernel does the same arithmetic on the same values), on every ISA variant; the returned
// concatenations must equal the host's. Both are checked against c:reference=true (the scalar
// decomposition) within the bounds of fused_attention_test.c: f32 2e-5 / 2e-5, f64 1e-12, f16
// 5e-3, bf16 4e-2. Cases: cache lengths 0, 1, odd, at and across the key tiles of 64, up to four
// parts of unequal lengths, k only, v only, k and v one Concatenate, GQA, causal, Bool and
// additive masks, bias, per-batch lengths, batch > 1, both layouts, v's head dim not a multiple of
// the vectors, f32, f64, f16 and bf16. Graphs the rewrite must leave alone (a Concatenate along
// another axis, more parts than the kernel takes) and a kernel call with parts that do not fit
// together are checked too.
#include <math.h>
#include <stdlib.h>

#include "api_common.h"
#include "attention_test_common.h"
#include "backends/c/engine_internal.h"
#include "backends/c/kernels/generic/fused_attention.h"
#include "test.h"

static uint64_t sg_rng = 0x2545F4914F6CDD1Dull;
static double sg_uniform(double lo, double hi) { return at_uniform(&sg_rng, lo, hi); }

enum { SG_MAX_PARTS = 10 };

// One problem: k and v have parts of lengths len[0..parts) along the key axis (concatenated
// by the graph when seg_k / seg_v, else passed whole); same_kv: v is k's Concatenate.
typedef struct sg_case_t {
  const char* name;
  cml_dtype_t dtype;
  cml_attention_layout_t layout;
  int64_t batch, heads, kv_heads, seq, d, dv;
  int parts;
  int64_t len[SG_MAX_PARTS];
  bool seg_k, seg_v, same_kv;
  bool causal;
  int mask;   // 0 none, 1 Bool [B, 1, S, Skv], 2 additive [S, Skv]
  bool bias;  // [H, S, Skv]
  bool lens;
  int concat_axis;  // 0: the key axis; otherwise this axis (the rewrite must not apply)
  int64_t keys;     // with concat_axis: kv_seq (the parts, len[], split that axis)
} sg_case_t;

static void* sg_random(int64_t n, cml_dtype_t dt, double lo, double hi) {
  return at_random(&sg_rng, n, dt, lo, hi);
}

static int64_t sg_kv_seq(const sg_case_t* c) {
  if (c->concat_axis) return c->keys;
  int64_t n = 0;
  for (int p = 0; p < c->parts; ++p) n += c->len[p];
  return n;
}

// Dims of a rank-4 operand of the case's layout with |h| heads, |s| positions, head dim |d|.
static void sg_dims(const sg_case_t* c, int64_t h, int64_t s, int64_t d, int64_t out[4]) {
  at_dims(c->layout, c->batch, h, s, d, out);
}

static int sg_key_axis(const sg_case_t* c) {
  return c->layout == CML_ATTENTION_LAYOUT_BHSD ? 2 : 1;
}

// Host data: the parts of k and v, their concatenations along the concat axis, and the
// optional inputs.
typedef struct sg_data_t {
  void* q;
  void* kp[SG_MAX_PARTS];
  void* vp[SG_MAX_PARTS];
  void* k;  // the concatenations (the whole operands)
  void* v;
  void* mask;
  void* bias;
  int32_t qlen[8], kvlen[8];
} sg_data_t;

// Concatenates the parts (dims |pd[p]|) along |axis| into |whole| (dims |wd|).
static void sg_concat(const sg_case_t* c, int parts, void* const* src, int64_t (*pd)[4],
                      const int64_t wd[4], int axis, void* whole) {
  const size_t es = at_elem(c->dtype);
  int64_t outer = 1, inner = 1;
  for (int a = 0; a < axis; ++a) outer *= wd[a];
  for (int a = axis + 1; a < 4; ++a) inner *= wd[a];
  int64_t at = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (int p = 0; p < parts; ++p) {
      const int64_t n = pd[p][axis] * inner;
      memcpy((char*)whole + (size_t)at * es, (const char*)src[p] + (size_t)(o * n) * es,
             (size_t)n * es);
      at += n;
    }
  }
}

// The concat axis of the case and the part dims of k (head dim |d|).
static int sg_part_dims(const sg_case_t* c, int64_t d, int64_t (*pd)[4], int64_t wd[4]) {
  const int axis = c->concat_axis ? c->concat_axis : sg_key_axis(c);
  for (int p = 0; p < c->parts; ++p) {
    if (c->concat_axis) {
      // Along the heads axis: the parts split the kv heads, each with every key.
      sg_dims(c, c->len[p], c->keys, d, pd[p]);
    } else {
      sg_dims(c, c->kv_heads, c->len[p], d, pd[p]);
    }
  }
  sg_dims(c, c->kv_heads, sg_kv_seq(c), d, wd);
  return axis;
}

static int64_t sg_count4(const int64_t d[4]) { return d[0] * d[1] * d[2] * d[3]; }

static void sg_data_make(const sg_case_t* c, sg_data_t* data) {
  memset(data, 0, sizeof *data);
  const cml_dtype_t dt = c->dtype;
  int64_t qd[4], pd[SG_MAX_PARTS][4], wd[4];
  sg_dims(c, c->heads, c->seq, c->d, qd);
  data->q = sg_random(sg_count4(qd), dt, -1.5, 1.5);
  int axis = sg_part_dims(c, c->d, pd, wd);
  for (int p = 0; p < c->parts; ++p) data->kp[p] = sg_random(sg_count4(pd[p]), dt, -1.5, 1.5);
  data->k = malloc((size_t)(sg_count4(wd) + 1) * at_elem(dt));
  sg_concat(c, c->parts, data->kp, pd, wd, axis, data->k);
  axis = sg_part_dims(c, c->dv, pd, wd);
  for (int p = 0; p < c->parts; ++p) data->vp[p] = sg_random(sg_count4(pd[p]), dt, -1, 1);
  data->v = malloc((size_t)(sg_count4(wd) + 1) * at_elem(dt));
  sg_concat(c, c->parts, data->vp, pd, wd, axis, data->v);
  const int64_t kv_seq = sg_kv_seq(c);
  if (c->mask == 1) {
    const int64_t n = c->batch * c->seq * kv_seq;
    uint8_t* m = malloc((size_t)(n + 1));
    for (int64_t i = 0; i < n; ++i) m[i] = sg_uniform(0, 1) < 0.7;
    data->mask = m;
  } else if (c->mask == 2) {
    const int64_t n = c->seq * kv_seq;
    data->mask = malloc((size_t)(n + 1) * at_elem(dt));
    for (int64_t i = 0; i < n; ++i) {
      const double u = sg_uniform(0, 1);
      at_put(data->mask, i, dt, u < 0.2 ? -INFINITY : (u < 0.4 ? sg_uniform(-2, 1) : 0.0));
    }
  }
  if (c->bias) data->bias = sg_random(c->heads * c->seq * kv_seq, dt, -1, 1);
  for (int64_t b = 0; b < c->batch && b < 8; ++b) {
    // Batch 0: every key; batch 1: none; others: ending inside the last part or earlier.
    data->qlen[b] = (int32_t)(b == 0 ? c->seq : (c->seq * (b + 1)) / (b + 2) + 1);
    data->kvlen[b] = (int32_t)(b == 0 ? kv_seq + 3 : (b == 1 ? 0 : kv_seq - b));
  }
}

static void sg_data_free(sg_data_t* data) {
  free(data->q);
  for (int p = 0; p < SG_MAX_PARTS; ++p) {
    free(data->kp[p]);
    free(data->vp[p]);
  }
  free(data->k);
  free(data->v);
  free(data->mask);
  free(data->bias);
}

static int64_t sg_out_count(const sg_case_t* c) { return c->batch * c->heads * c->seq * c->dv; }

// Adds parameters for k (|dd| = d) or v (|dd| = dv): its parts and their Concatenate when
// |seg|, else one parameter of the whole.
static cml_value_t sg_operand(cml_function_t* f, const sg_case_t* c, int64_t dd, bool seg,
                              void* const* parts, void* whole, const void** ins, size_t* n) {
  int64_t pd[SG_MAX_PARTS][4], wd[4];
  const int axis = sg_part_dims(c, dd, pd, wd);
  if (!seg) {
    cml_shape_t s = cml_shape_make(c->dtype, 4, wd);
    ins[(*n)++] = whole;
    return cml_parameter(f, NULL, &s);
  }
  cml_value_t vals[SG_MAX_PARTS];
  for (int p = 0; p < c->parts; ++p) {
    cml_shape_t s = cml_shape_make(c->dtype, 4, pd[p]);
    vals[p] = cml_parameter(f, NULL, &s);
    ins[(*n)++] = parts[p];
  }
  return cml_op_concatenate(f, axis, vals, (size_t)c->parts);
}

typedef struct sg_result_t {
  double* out;    // the attention, as f64
  double* k_cat;  // the returned concatenations (pinned runs), as f64
  double* v_cat;
  uint32_t segmented;
} sg_result_t;

static void sg_result_free(sg_result_t* r) {
  free(r->out);
  free(r->k_cat);
  free(r->v_cat);
  memset(r, 0, sizeof *r);
}

// Builds, compiles and runs the case on |config|. |pin|: the Concatenates are returned too.
static cml_status_t sg_run(const char* config, const sg_case_t* c, const sg_data_t* data, bool pin,
                           sg_result_t* r) {
  memset(r, 0, sizeof *r);
  cml_backend_t* be = NULL;
  cml_builder_t* b = NULL;
  cml_status_t st = at_open(config, "segments", &be, &b);
  if (st != CML_OK) return st;
  cml_function_t* f = cml_builder_main(b);
  const void* ins[16];
  size_t n = 0;
  int64_t qd[4];
  sg_dims(c, c->heads, c->seq, c->d, qd);
  cml_shape_t s = cml_shape_make(c->dtype, 4, qd);
  cml_value_t q = cml_parameter(f, NULL, &s);
  ins[n++] = data->q;
  cml_value_t k = sg_operand(f, c, c->d, c->seg_k, data->kp, data->k, ins, &n);
  cml_value_t v = c->same_kv ? k : sg_operand(f, c, c->dv, c->seg_v, data->vp, data->v, ins, &n);
  const int64_t kv_seq = sg_kv_seq(c);
  cml_sdpa_config_t cfg;
  cml_sdpa_config_init(&cfg);
  cfg.causal = c->causal;
  const at_options_t options = {c->dtype,   c->batch,   c->heads,   c->seq,
                                kv_seq,     c->mask,    c->bias,    c->lens,
                                data->mask, data->bias, data->qlen, data->kvlen};
  at_add_options(f, &options, &cfg, ins, &n);
  cml_value_t outs[3];
  size_t out_count = 0;
  outs[out_count++] = cml_op_fused_sdpa(f, q, k, v, c->layout, &cfg, NULL, NULL);
  const bool ret_k = pin && c->seg_k, ret_v = pin && c->seg_v && !c->same_kv;
  if (ret_k) outs[out_count++] = k;
  if (ret_v) outs[out_count++] = v;
  int64_t pd[SG_MAX_PARTS][4], wd[4];
  sg_part_dims(c, c->d, pd, wd);
  const int64_t nk = sg_count4(wd);
  sg_part_dims(c, c->dv, pd, wd);
  const int64_t nv = sg_count4(wd), no = sg_out_count(c);
  const size_t es = at_elem(c->dtype);
  void* raw[3] = {malloc((size_t)(no + 1) * es), malloc((size_t)(nk + 1) * es),
                  malloc((size_t)(nv + 1) * es)};
  void* dst[3] = {raw[0], ret_k ? raw[1] : raw[2], raw[2]};
  cml_executable_t* exe = NULL;
  st = api_finish(b, outs, out_count, &exe);
  if (st == CML_OK) {
    r->segmented = ((const cmlc_executable_t*)exe)->stats.segmented;
    st = api_run(be, exe, ins, dst);
  }
  if (st == CML_OK) {
    r->out = malloc((size_t)(no + 1) * sizeof(double));
    for (int64_t i = 0; i < no; ++i) r->out[i] = at_get(raw[0], i, c->dtype);
    if (ret_k) {
      r->k_cat = malloc((size_t)(nk + 1) * sizeof(double));
      for (int64_t i = 0; i < nk; ++i) r->k_cat[i] = at_get(raw[1], i, c->dtype);
    }
    if (ret_v) {
      r->v_cat = malloc((size_t)(nv + 1) * sizeof(double));
      for (int64_t i = 0; i < nv; ++i) r->v_cat[i] = at_get(raw[2], i, c->dtype);
    }
  }
  for (int i = 0; i < 3; ++i) free(raw[i]);
  cml_executable_release(exe);
  cml_backend_release(be);
  return st;
}

// max |a - b| / (atol + rtol |b|); NaN anywhere counts as infinitely bad.
static double sg_worst(const double* a, const double* b, int64_t n, double rtol, double atol) {
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double e = fabs(a[i] - b[i]) / (atol + rtol * fabs(b[i]));
    if (isnan(e)) return INFINITY;
    if (e > worst) worst = e;
  }
  return worst;
}

static double sg_tol(cml_dtype_t dt) {
  switch (dt) {
    case CML_DTYPE_F64:
      return 1e-12;
    case CML_DTYPE_F32:
      return 2e-5;
    case CML_DTYPE_F16:
      return 5e-3;
    default:
      return 4e-2;
  }
}

// Number of Concatenates the rewrite should read in parts.
static uint32_t sg_expected(const sg_case_t* c) {
  if (c->concat_axis || c->parts > CMLC_FA_MAX_PARTS) return 0;
  return (uint32_t)c->seg_k + (uint32_t)(c->seg_v && !c->same_kv);
}

static const char* const sg_configs[] = {"c", "c:avx512=false", "c:avx512=false,avx2=false",
                                         "c:threads=1"};

// Runs |c| on every config (rewritten and pinned, bitwise equal) and against the reference.
static int sg_check(const sg_case_t* c) {
  sg_data_t data;
  sg_data_make(c, &data);
  const int64_t n = sg_out_count(c);
  int failures = 0;
  sg_result_t ref;
  cml_status_t st = sg_run("c:reference=true", c, &data, false, &ref);
  if (st != CML_OK) {
    fprintf(stderr, "%s reference: %s\n", c->name, cml_status_message(st));
    cml_status_free(st);
    sg_data_free(&data);
    return 1;
  }
  if (ref.segmented != 0) ++failures;  // reference mode rewrites nothing
  int64_t pd[SG_MAX_PARTS][4], wd[4];
  sg_part_dims(c, c->d, pd, wd);
  const int64_t nk = sg_count4(wd);
  sg_part_dims(c, c->dv, pd, wd);
  const int64_t nv = sg_count4(wd);
  for (size_t ci = 0; ci < sizeof sg_configs / sizeof sg_configs[0]; ++ci) {
    sg_result_t seg, pin;
    st = sg_run(sg_configs[ci], c, &data, false, &seg);
    if (st == CML_OK) {
      st = sg_run(sg_configs[ci], c, &data, true, &pin);
      if (st != CML_OK) sg_result_free(&seg);
    }
    if (st != CML_OK) {
      fprintf(stderr, "%s %s: %s\n", c->name, sg_configs[ci], cml_status_message(st));
      cml_status_free(st);
      ++failures;
      continue;
    }
    if (seg.segmented != sg_expected(c) || pin.segmented != 0) {
      fprintf(stderr, "%s %s: %u Concatenates read in parts (want %u), %u when returned\n", c->name,
              sg_configs[ci], seg.segmented, sg_expected(c), pin.segmented);
      ++failures;
    }
    int64_t diff = 0;
    for (int64_t i = 0; i < n; ++i) {
      diff += memcmp(&seg.out[i], &pin.out[i], sizeof(double)) != 0;
    }
    if (diff) {
      fprintf(stderr, "%s %s: %lld of %lld outputs differ from the copied operands' run\n", c->name,
              sg_configs[ci], (long long)diff, (long long)n);
      ++failures;
    }
    for (int64_t i = 0; pin.k_cat && i < nk; ++i) {
      if (pin.k_cat[i] != at_get(data.k, i, c->dtype)) {
        fprintf(stderr, "%s: returned k concatenation differs at %lld\n", c->name, (long long)i);
        ++failures;
        break;
      }
    }
    for (int64_t i = 0; pin.v_cat && i < nv; ++i) {
      if (pin.v_cat[i] != at_get(data.v, i, c->dtype)) {
        fprintf(stderr, "%s: returned v concatenation differs at %lld\n", c->name, (long long)i);
        ++failures;
        break;
      }
    }
    const double tol = sg_tol(c->dtype), worst = sg_worst(seg.out, ref.out, n, tol, tol);
    if (!(worst <= 1)) {
      fprintf(stderr, "%s %s: %.3g of the bound from the reference\n", c->name, sg_configs[ci],
              worst);
      ++failures;
    }
    sg_result_free(&seg);
    sg_result_free(&pin);
  }
  // Not every output may be zero (the data reaches the result).
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += fabs(ref.out[i]);
  if (n > 0 && !(sum > 0)) {
    fprintf(stderr, "%s: the reference output is all zeros\n", c->name);
    ++failures;
  }
  sg_result_free(&ref);
  sg_data_free(&data);
  return failures;
}

#define F32 CML_DTYPE_F32
#define BSHD CML_ATTENTION_LAYOUT_BSHD
#define BHSD CML_ATTENTION_LAYOUT_BHSD

// Decoder steps: one new position after a cache of length 0, 1, odd, a tile, across tiles.
TEST(decoder_cache_lengths) {
  const int64_t caches[] = {0, 1, 5, 63, 64, 65, 130};
  int failures = 0;
  for (size_t i = 0; i < sizeof caches / sizeof caches[0]; ++i) {
    sg_case_t c = {.name = "decoder",
                   .dtype = F32,
                   .layout = BSHD,
                   .batch = 3,
                   .heads = 4,
                   .kv_heads = 4,
                   .seq = 1,
                   .d = 16,
                   .dv = 16,
                   .parts = 2,
                   .len = {caches[i], 1},
                   .seg_k = true,
                   .seg_v = true};
    failures += sg_check(&c);
  }
  ASSERT_EQ_INT(failures, 0);
}

// The fields of a case in sg_case_t's order, up to |lens|.
#define SG_CASE(name_, dt_, layout_, batch_, heads_, kv_heads_, seq_, d_, dv_, parts_, len_, k_, \
                v_, same_, causal_, mask_, bias_, lens_)                                         \
  {                                                                                              \
    .name = name_, .dtype = dt_, .layout = layout_, .batch = batch_, .heads = heads_,            \
    .kv_heads = kv_heads_, .seq = seq_, .d = d_, .dv = dv_, .parts = parts_, .len = len_,        \
    .seg_k = k_, .seg_v = v_, .same_kv = same_, .causal = causal_, .mask = mask_, .bias = bias_, \
    .lens = lens_                                                                                \
  }
#define SG_LEN(...) \
  { __VA_ARGS__ }

TEST(unequal_parts_options) {
  const sg_case_t cases[] = {
      SG_CASE("three parts gqa causal", F32, BHSD, 2, 4, 2, 37, 9, 11, 3, SG_LEN(70, 3, 29), true,
              true, false, true, 0, false, false),
      SG_CASE("four parts bool mask bias lens", F32, BSHD, 3, 4, 2, 5, 16, 16, 4,
              SG_LEN(40, 0, 7, 30), true, true, false, false, 1, true, true),
      SG_CASE("additive mask causal", F32, BHSD, 2, 3, 3, 9, 8, 16, 2, SG_LEN(61, 9), true, true,
              false, true, 2, false, false),
      SG_CASE("k only", F32, BSHD, 2, 4, 4, 3, 16, 16, 2, SG_LEN(100, 3), true, false, false, false,
              0, false, false),
      SG_CASE("v only", F32, BSHD, 2, 4, 1, 3, 16, 16, 2, SG_LEN(100, 3), false, true, false, false,
              0, false, false),
      SG_CASE("k and v one concatenation", F32, BSHD, 2, 2, 2, 4, 16, 16, 3, SG_LEN(20, 50, 1),
              true, true, true, false, 0, false, false),
      SG_CASE("odd head dims lens", F32, BSHD, 4, 2, 2, 2, 7, 5, 2, SG_LEN(66, 2), true, true,
              false, false, 0, false, true),
      SG_CASE("f64", CML_DTYPE_F64, BSHD, 2, 2, 2, 3, 8, 8, 2, SG_LEN(70, 1), true, true, false,
              true, 1, false, false),
      SG_CASE("f16", CML_DTYPE_F16, BHSD, 2, 4, 2, 2, 16, 16, 2, SG_LEN(33, 1), true, true, false,
              false, 0, false, false),
      SG_CASE("bf16 decoder", CML_DTYPE_BF16, BSHD, 2, 4, 4, 1, 16, 16, 2, SG_LEN(129, 1), true,
              true, false, false, 0, false, false),
      SG_CASE("bf16 gqa mask bias", CML_DTYPE_BF16, BSHD, 2, 4, 2, 6, 16, 16, 3, SG_LEN(10, 64, 5),
              true, true, false, true, 1, true, false),
  };
  int failures = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) failures += sg_check(&cases[i]);
  ASSERT_EQ_INT(failures, 0);
}

// The decode path (tasks of 1 to CMLC_FA_DEC_ROWS live query rows: scores from k's rows in
// place or converted per tile, no transposed k): 1 to 4 rows, and the last 1 or 3 rows of a
// longer query after a tiled task; head dims that fill the vectors (k read in place) and odd
// ones (converted, zero-padded); key counts that end inside a group of keys and inside a tile;
// every option; f32, f64, f16 and bf16; on the AVX-512, AVX2 and portable variants (sg_configs)
// against c:reference=true.
TEST(decode_rows) {
  const sg_case_t cases[] = {
      SG_CASE("decode 1 row d64 gqa", F32, BSHD, 2, 4, 2, 1, 64, 64, 2, SG_LEN(130, 1), true, true,
              false, false, 0, false, false),
      SG_CASE("decode 2 rows odd dims causal", F32, BHSD, 2, 3, 3, 2, 7, 5, 3, SG_LEN(66, 0, 2),
              true, true, false, true, 0, false, false),
      SG_CASE("decode 3 rows bool mask bias lens", F32, BSHD, 3, 4, 2, 3, 13, 19, 2, SG_LEN(70, 3),
              true, true, false, false, 1, true, true),
      SG_CASE("decode 4 rows additive mask", F32, BSHD, 2, 2, 1, 4, 24, 40, 2, SG_LEN(64, 4), true,
              true, false, false, 2, false, false),
      SG_CASE("decode 4 rows d32 causal lens", F32, BHSD, 4, 2, 2, 4, 32, 48, 2, SG_LEN(5, 2), true,
              false, false, true, 0, false, true),
      SG_CASE("decode last row of 33", F32, BHSD, 1, 2, 2, 33, 16, 16, 2, SG_LEN(90, 33), true,
              true, false, false, 1, true, false),
      SG_CASE("decode last 3 rows of 35 causal", F32, BSHD, 2, 2, 1, 35, 9, 16, 2, SG_LEN(40, 35),
              true, true, false, true, 0, false, true),
      SG_CASE("decode f64 1 row", CML_DTYPE_F64, BSHD, 2, 2, 2, 1, 8, 8, 2, SG_LEN(69, 1), true,
              true, false, false, 0, true, false),
      SG_CASE("decode f64 3 rows odd", CML_DTYPE_F64, BHSD, 2, 2, 1, 3, 5, 7, 2, SG_LEN(20, 3),
              true, true, false, true, 2, false, false),
      SG_CASE("decode f16 2 rows d64 gqa", CML_DTYPE_F16, BSHD, 2, 4, 1, 2, 64, 64, 2,
              SG_LEN(100, 2), true, true, false, false, 0, false, false),
      SG_CASE("decode f16 4 rows odd causal", CML_DTYPE_F16, BSHD, 2, 2, 2, 4, 5, 3, 2,
              SG_LEN(9, 4), true, true, false, true, 1, false, true),
      SG_CASE("decode bf16 1 row d64", CML_DTYPE_BF16, BSHD, 3, 4, 4, 1, 64, 64, 2, SG_LEN(129, 1),
              true, true, false, false, 0, false, false),
      SG_CASE("decode bf16 3 rows odd mask bias", CML_DTYPE_BF16, BHSD, 2, 3, 3, 3, 9, 11, 3,
              SG_LEN(50, 1, 20), true, true, false, false, 1, true, false),
  };
  int failures = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) failures += sg_check(&cases[i]);
  ASSERT_EQ_INT(failures, 0);
}

// Concatenates the kernel cannot read in parts run as before, with the same results.
TEST(not_rewritten) {
  // Along the heads axis of BSHD (the parts are kv heads 0 and 1..3, 37 keys each).
  sg_case_t heads = SG_CASE("heads axis", F32, BSHD, 2, 4, 4, 3, 16, 16, 2, SG_LEN(1, 3), true,
                            true, false, false, 0, false, false);
  heads.concat_axis = 2;
  heads.keys = 37;
  // More parts than CMLC_FA_MAX_PARTS (k only: the test runner takes 16 inputs).
  const sg_case_t nine =
      SG_CASE("nine parts", F32, BHSD, 1, 2, 2, 2, 8, 8, 9, SG_LEN(3, 1, 4, 1, 5, 9, 2, 6, 5), true,
              false, false, false, 0, false, false);
  ASSERT_EQ_INT(sg_check(&heads), 0);
  ASSERT_EQ_INT(sg_check(&nine), 0);
}

// The kernel refuses parts that are not pieces of one operand, naming the op and the shapes.
TEST(kernel_rejects_mismatched_parts) {
  int64_t qd[4] = {1, 1, 2, 8}, k0d[4] = {1, 4, 2, 8}, k1d[4] = {1, 1, 1, 8};
  cml_shape_t qs = cml_shape_make(F32, 4, qd), k0 = cml_shape_make(F32, 4, k0d);
  cml_shape_t k1 = cml_shape_make(F32, 4, k1d),
              vs = cml_shape_make(F32, 4, (int64_t[]){1, 5, 2, 8});
  cml_shape_t ks = cml_shape_make(F32, 4, (int64_t[]){1, 5, 2, 8});
  cml_ir_value_t values[5];
  memset(values, 0, sizeof values);
  values[1].shape = qs;
  values[2].shape = ks;
  values[3].shape = vs;
  values[4].shape = qs;
  const uint32_t node_inputs[3] = {1, 2, 3};
  cml_ir_attrs_t attrs;
  memset(&attrs, 0, sizeof attrs);
  attrs.fused.layout = BSHD;
  attrs.fused.scale = 0.5;
  cml_ir_node_t node;
  memset(&node, 0, sizeof node);
  node.op = CML_OP_FUSED_SDPA;
  node.input_count = 3;
  node.inputs = node_inputs;
  node.output_count = 1;
  node.first_output = 4;
  node.attrs = &attrs;
  cml_module_t module;
  memset(&module, 0, sizeof module);
  module.values = values;
  module.value_count = 5;
  module.nodes = &node;
  module.node_count = 1;
  cmlc_options_t options;
  memset(&options, 0, sizeof options);
  options.threads = 1;
  float buf[64] = {0}, out[16];
  const void* inputs[4] = {buf, buf, buf, buf};
  const cml_shape_t* shapes[5] = {&qs, &k0, &k1, &vs, &qs};
  void* outputs[1] = {out};
  const uint32_t parts[3] = {1, 2, 1};
  const size_t scratch_size = cmlc__fa_scratch(&module, &node, &options);
  void* scratch = aligned_alloc(64, (scratch_size + 63) / 64 * 64);
  cmlc_kernel_args_t a;
  memset(&a, 0, sizeof a);
  a.module = &module;
  a.node = &node;
  a.options = &options;
  a.input_count = 4;
  a.input_shapes = shapes;
  a.inputs = inputs;
  a.output_count = 1;
  a.output_shapes = shapes + 4;
  a.outputs = outputs;
  a.scratch = scratch;
  a.scratch_size = scratch_size;
  a.input_parts = parts;
  // k's part 1 has 1 kv head where part 0 has 2.
  cml_status_t st = cmlc__fa_run(&a);
  const cml_status_code_t code = cml_status_code(st);
  char message[512];
  snprintf(message, sizeof message, "%s", st ? cml_status_message(st) : "");
  cml_status_free(st);
  // Consistent parts run: the result equals the same operand in one piece.
  cml_shape_t k1ok = cml_shape_make(F32, 4, (int64_t[]){1, 1, 2, 8});
  shapes[2] = &k1ok;
  float kv[80], out_parts[16], out_whole[16];
  for (int i = 0; i < 80; ++i) kv[i] = (float)sg_uniform(-1, 1);
  float q[16];
  for (int i = 0; i < 16; ++i) q[i] = (float)sg_uniform(-1, 1);
  const void* in_parts[4] = {q, kv, kv + 64, kv};
  a.inputs = in_parts;
  outputs[0] = out_parts;
  cml_status_t st_parts = cmlc__fa_run(&a);
  const cml_shape_t* whole_shapes[4] = {&qs, &ks, &vs, &qs};
  const void* in_whole[3] = {q, kv, kv};
  a.input_count = 3;
  a.input_shapes = whole_shapes;
  a.output_shapes = whole_shapes + 3;
  a.inputs = in_whole;
  a.input_parts = NULL;
  outputs[0] = out_whole;
  cml_status_t st_whole = cmlc__fa_run(&a);
  free(scratch);
  ASSERT_EQ_INT(code, CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(message, "FusedScaledDotProductAttention");
  ASSERT_CONTAINS(message, "[1, 1, 1, 8]");
  ASSERT_STATUS_OK(st_parts);
  ASSERT_STATUS_OK(st_whole);
  for (int i = 0; i < 16; ++i) ASSERT_EQ_DBL(out_parts[i], out_whole[i]);
}

TEST_MAIN(TEST_ENTRY(decoder_cache_lengths), TEST_ENTRY(unequal_parts_options),
          TEST_ENTRY(decode_rows), TEST_ENTRY(not_rewritten),
          TEST_ENTRY(kernel_rejects_mismatched_parts))
