// SPDX-License-Identifier: Apache-2.0
// tests/unit/quant_test.c: quantized inference (cml/fused.h): the host quantizer and
// dequantizer against the gguf package's fixtures (tests/data/quant/, made by
// scripts/gen_quant_fixtures.py), FusedQuantizedDense on every format x activation x batch
// (1 and 7) on c, c:reference=true, the decomposition (c:fusion=false) and xla:cpu (when its
// plugin is installed) against a double-precision reference from the gguf / numpy weights,
// QuantizedEmbeddingLookup, thread-count independence, and every build-time error.
#include <math.h>
#include <stdlib.h>

#include "api_common.h"
#include "backends/c/engine_internal.h"
#include "backends/c/kernels/generic/quant_internal.h"
#include "test.h"

//===--- fixtures ---===//

// The fixture directory, next to this file's directory: <repo>/tests/data/quant.
static void qt_path(const char* name, char* out, size_t size) {
  const char* file = __FILE__;
  const char* cut = strstr(file, "unit/quant_test.c");
  int prefix = cut ? (int)(cut - file) : 0;
  snprintf(out, size, "%.*sdata/quant/%s", prefix, file, name);
}

static uint8_t* qt_read(const char* name, size_t* out_size) {
  char path[1024];
  qt_path(name, path, sizeof path);
  FILE* fp = fopen(path, "rb");
  if (!fp) {
    fprintf(stderr, "cannot open %s\n", path);
    return NULL;
  }
  fseek(fp, 0, SEEK_END);
  long n = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  uint8_t* p = malloc((size_t)n);
  if (p && fread(p, 1, (size_t)n, fp) != (size_t)n) {
    free(p);
    p = NULL;
  }
  fclose(fp);
  *out_size = (size_t)n;
  return p;
}

typedef struct qt_ggml_t {
  uint8_t* file;
  cml_ggml_type_t type;
  int64_t rows, k, row_bytes;
  const float* src;  // NULL unless gguf quantized it
  const uint8_t* blocks;
  const float* deq;
} qt_ggml_t;

static bool qt_load_ggml(cml_ggml_type_t type, qt_ggml_t* g) {
  char name[64];
  snprintf(name, sizeof name, "%s.bin", cml_ggml_type_name(type));
  size_t size = 0;
  memset(g, 0, sizeof *g);
  g->file = qt_read(name, &size);
  if (!g->file || size < 24 || memcmp(g->file, "CMLQ", 4) != 0) return false;
  uint32_t h[5];
  memcpy(h, g->file + 4, sizeof h);
  if (h[0] != 1 || h[1] != (uint32_t)type) return false;
  g->type = type;
  g->rows = h[2];
  g->k = h[3];
  g->row_bytes = cml_ggml_row_bytes(type, g->k);
  const size_t floats = (size_t)(g->rows * g->k) * 4, blocks = (size_t)(g->rows * g->row_bytes);
  if (size != 24 + (h[4] ? floats : 0) + blocks + floats) return false;
  // Re-laid out as [deq][src][blocks] in one allocation (freed with |file|), so that the floats
  // are aligned whatever the block bytes of the format.
  uint8_t* all = malloc(2 * floats + blocks);
  if (!all) return false;
  size_t off = 24;
  if (h[4]) {
    memcpy(all + floats, g->file + off, floats);
    g->src = (const float*)(all + floats);
    off += floats;
  }
  memcpy(all + 2 * floats, g->file + off, blocks);
  g->blocks = all + 2 * floats;
  off += blocks;
  memcpy(all, g->file + off, floats);
  g->deq = (const float*)all;
  free(g->file);
  g->file = all;
  return true;
}

//===--- helpers ---===//

static uint64_t qt_rng = 0x9E3779B97F4A7C15ull;
static double qt_uniform(double lo, double hi) {
  qt_rng ^= qt_rng << 13;
  qt_rng ^= qt_rng >> 7;
  qt_rng ^= qt_rng << 17;
  return lo + (hi - lo) * (double)(qt_rng >> 11) / 9007199254740992.0;
}
static double qt_normal(void) {
  double u = qt_uniform(1e-12, 1), v = qt_uniform(0, 1);
  return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

static double qt_act(int act, double v) {
  switch (act) {
    case CML_ACTIVATION_GELU:
      return 0.5 * v * (1 + erf(v / sqrt(2.0)));
    case CML_ACTIVATION_RELU:
      return v > 0 ? v : 0;
    case CML_ACTIVATION_SILU:
      return v / (1 + exp(-v));
    case CML_ACTIVATION_HARD_SWISH: {
      double t = v / 6 + 0.5;
      return v * (t < 0 ? 0 : (t > 1 ? 1 : t));
    }
    case CML_ACTIVATION_TANH:
      return tanh(v);
    default:
      return v;
  }
}

// The share of the format loops a run covers: `quant_test --part I/N` runs the formats (and the
// Linear/NF4 cases) whose index is I mod N in the three loops over every format x backend, and
// the other tests in part 0 only. tests/CMakeLists.txt runs the parts as separate ctest
// entries, so that each stays well under its time limit under the sanitizers on a loaded
// machine. Without --part: everything.
static int qt_part = 0, qt_parts = 1;
static bool qt_mine(int index) { return index % qt_parts == qt_part; }

// The backends every dense case runs on; xla:cpu only when its plugin loads.
static const char* const qt_configs[] = {
    "c",      "c:reference=true", "c:fusion=false", "c:avx512=false", "c:avx2=false,avx512=false",
    "xla:cpu"};
#define QT_CONFIGS (sizeof qt_configs / sizeof *qt_configs)

static cml_backend_t* qt_backend(const char* config) {
  cml_backend_t* b = NULL;
  cml_status_t st = cml_backend_new_with_config(config, &b);
  if (st != CML_OK) {
    if (strncmp(config, "xla", 3) != 0) fprintf(stderr, "%s: %s\n", config, cml_status_message(st));
    cml_status_free(st);
    return NULL;
  }
  return b;
}

// A dense case: weights [rows, bytes] (GGML) or [k, n] (Linear/NF4), plus scale / zero point.
typedef struct qt_dense_t {
  cml_quantization_t q;
  cml_shape_t ws, ss;
  const void* w;
  const float* scale;
  const float* zero;
  int64_t k, n;
  const double* wref;  // [n, k] dequantized weights for the reference
  bool int8;           // the int8-activation path (quant_int8): its bound is added
  double worst;        // out: the largest |error| / bound seen
} qt_dense_t;

// The FusedQuantizedDense operands of GGML weights |blocks| ([n] rows of k values).
static qt_dense_t qt_dense_ggml(cml_ggml_type_t type, const void* blocks, int64_t n, int64_t k) {
  qt_dense_t d;
  memset(&d, 0, sizeof d);
  cml_quantization_init(&d.q);
  d.q.scheme = CML_QUANT_GGML;
  d.q.ggml_type = type;
  d.ws = API_SHAPE(CML_DTYPE_U8, n, cml_ggml_row_bytes(type, k));
  d.w = blocks;
  d.k = k;
  d.n = n;
  return d;
}

// Runs x [m, k] through the op with all 6 activations (one graph, 6 outputs) on |config|;
// checks each output against the double reference. Returns false (printed) on a mismatch.
static bool qt_check_dense(const char* config, qt_dense_t* d, int64_t m, bool* skipped) {
  *skipped = false;
  cml_backend_t* be = qt_backend(config);
  if (!be) {
    *skipped = true;
    return true;
  }
  const int64_t k = d->k, n = d->n;
  float* x = malloc(sizeof(float) * (size_t)(m * k));
  float* bias = malloc(sizeof(float) * (size_t)n);
  float* out[CML_ACTIVATION_COUNT];
  for (int64_t i = 0; i < m * k; ++i) x[i] = (float)qt_uniform(-1, 1);
  for (int64_t i = 0; i < n; ++i) bias[i] = (float)qt_uniform(-0.5, 0.5);
  for (int a = 0; a < CML_ACTIVATION_COUNT; ++a) out[a] = calloc((size_t)(m * n), sizeof(float));
  cml_builder_t* b = NULL;
  cml_status_t st = cml_builder_create(be, "quant", &b);
  bool ok = st == CML_OK;
  if (ok) {
    cml_function_t* f = cml_builder_main(b);
    cml_shape_t xs = API_SHAPE(CML_DTYPE_F32, m, k);
    cml_shape_t bs = API_SHAPE(CML_DTYPE_F32, n);
    cml_value_t xv = cml_parameter(f, "x", &xs);
    cml_value_t wv = cml_parameter(f, "w", &d->ws);
    cml_value_t bv = cml_parameter(f, "bias", &bs);
    cml_quantization_t q = d->q;
    if (d->scale) q.scale = cml_parameter(f, "scale", &d->ss);
    if (d->zero) q.zero_point = cml_parameter(f, "zero", &d->ss);
    cml_value_t ys[CML_ACTIVATION_COUNT];
    for (int a = 0; a < CML_ACTIVATION_COUNT; ++a) {
      ys[a] = cml_op_fused_quantized_dense(f, xv, wv, bv, &q, (cml_activation_t)a);
    }
    cml_executable_t* exe = NULL;
    st = api_finish(b, ys, CML_ACTIVATION_COUNT, &exe);
    const void* ins[5] = {x, d->w, bias, d->scale, d->zero};
    if (st == CML_OK) st = api_run(be, exe, ins, (void* const*)out);
    cml_executable_release(exe);
    ok = st == CML_OK;
  }
  if (!ok) {
    fprintf(stderr, "%s: %s\n", config, cml_status_message(st));
  }
  cml_status_free(st);
  for (int64_t i = 0; ok && i < m; ++i) {
    for (int64_t j = 0; ok && j < n; ++j) {
      double sum = bias[j], mag = fabs(bias[j]);
      for (int64_t kk = 0; kk < k; ++kk) {
        sum += (double)x[i * k + kk] * d->wref[j * k + kk];
        mag += fabs((double)x[i * k + kk] * d->wref[j * k + kk]);
      }
      // f32 sums in any order: |error| <= K * 2^-23 * sum |x w|, times the activation's slope
      // (at most 1.5, hard_swish), plus the activation's own rounding.
      double bound = 1.5 * (double)(k + 2) * 1.2e-7 * mag + 1e-6;
      if (d->int8) {
        // int8 activations: each group of 32 values (256 for Q4_K, one scale per super-block)
        // is rounded to multiples of its scale dx = max |x| / 127, so |x_k - x^_k| <= dx / 2
        // (plus float slack in computing x / dx: a few ulps of values up to 127, below 1e-4 of
        // a step), and the product moves by at most sum_groups dx / 2 * sum |w_k| (times the
        // slope).
        const int64_t group =
            d->q.scheme == CML_QUANT_GGML && d->q.ggml_type == CML_GGML_Q4_K ? 256 : 32;
        double q8 = 0;
        for (int64_t b0 = 0; b0 < k; b0 += group) {
          double amax = 0, wsum = 0;
          for (int64_t kk = b0; kk < b0 + group; ++kk) {
            amax = fmax(amax, fabs((double)x[i * k + kk]));
            wsum += fabs(d->wref[j * k + kk]);
          }
          q8 += (0.5 + 1e-4) * (amax / 127) * wsum;
        }
        bound += 1.5 * q8;
      }
      for (int a = 0; a < CML_ACTIVATION_COUNT; ++a) {
        double want = qt_act(a, sum), got = out[a][i * n + j];
        double ratio = fabs(got - want) / (bound + 1e-6 * fabs(want));
        if (ratio > d->worst) d->worst = ratio;
        if (!(fabs(got - want) <= bound + 1e-6 * fabs(want))) {
          fprintf(stderr, "%s %s m=%lld act %s: y[%lld, %lld] = %.9g, want %.9g (bound %.3g)\n",
                  config,
                  d->q.scheme == CML_QUANT_GGML ? cml_ggml_type_name(d->q.ggml_type)
                                                : cml_quant_scheme_name(d->q.scheme),
                  (long long)m, cml_activation_name((cml_activation_t)a), (long long)i,
                  (long long)j, got, want, bound);
          ok = false;
          break;
        }
      }
    }
  }
  for (int a = 0; a < CML_ACTIVATION_COUNT; ++a) free(out[a]);
  free(x);
  free(bias);
  cml_backend_release(be);
  return ok;
}

//===--- enums and sizes ---===//

TEST(enums_and_block_sizes) {
  static const int64_t bytes[] = {18, 34, 18, 84, 110, 144, 176, 210, 20, 22, 24};
  static const char* const names[] = {"Q4_0", "Q8_0", "IQ4_NL", "Q2_K", "Q3_K", "Q4_K",
                                      "Q5_K", "Q6_K", "Q4_1",   "Q5_0", "Q5_1"};
  ASSERT_EQ_INT(CML_GGML_TYPE_COUNT, 11);
  for (int t = 0; t < CML_GGML_TYPE_COUNT; ++t) {
    ASSERT_EQ_INT(cml_ggml_type_bytes_per_block((cml_ggml_type_t)t), bytes[t]);
    ASSERT_STREQ(cml_ggml_type_name((cml_ggml_type_t)t), names[t]);
    int64_t v = cml_ggml_type_values_per_block((cml_ggml_type_t)t);
    ASSERT_EQ_INT(v, (t >= 3 && t <= 7) ? 256 : 32);
    ASSERT_EQ_INT(cml_ggml_row_bytes((cml_ggml_type_t)t, 512), 512 / v * bytes[t]);
    ASSERT_EQ_INT(cml_ggml_row_bytes((cml_ggml_type_t)t, v + 1), 0);
  }
  ASSERT_STREQ(cml_ggml_type_name(CML_GGML_TYPE_COUNT), "unknown");
  ASSERT_EQ_INT(cml_ggml_type_bytes_per_block(CML_GGML_TYPE_COUNT), 0);
  ASSERT_STREQ(cml_quant_scheme_name(CML_QUANT_NF4), "NF4");
  ASSERT_STREQ(cml_quant_scheme_name(CML_QUANT_SCHEME_COUNT), "unknown");
  ASSERT_EQ_DBL(cml_quant_nf4_table()[7], 0.0);
  ASSERT_EQ_DBL(cml_quant_nf4_table()[14], 0.7229568362236023f);
  ASSERT_EQ_DBL(cml_quant_iq4nl_table()[0], -127.0);
  cml_quantization_t q;
  cml_quantization_init(&q);
  ASSERT_EQ_INT(q.scheme, CML_QUANT_LINEAR);
  ASSERT_EQ_INT(q.block_axis, 1);
  ASSERT_TRUE(q.scale == CML_VALUE_INVALID && q.zero_point == CML_VALUE_INVALID);
}

//===--- host quantizer vs the gguf package ---===//

TEST(dequantize_matches_gguf_bit_for_bit) {
  for (int t = 0; t < CML_GGML_TYPE_COUNT; ++t) {
    qt_ggml_t g;
    bool loaded = qt_load_ggml((cml_ggml_type_t)t, &g);
    if (!loaded) free(g.file);
    ASSERT_TRUE(loaded);
    float* y = malloc(sizeof(float) * (size_t)(g.rows * g.k));
    ASSERT_STATUS_OK(cml_dequantize_ggml(g.type, g.blocks, g.rows, g.k, y));
    int64_t bad = -1;
    for (int64_t i = 0; i < g.rows * g.k && bad < 0; ++i) {
      if (memcmp(&y[i], &g.deq[i], 4) != 0) bad = i;
    }
    if (bad >= 0) {
      fprintf(stderr, "%s: value %lld = %.9g, gguf %.9g\n", cml_ggml_type_name(g.type),
              (long long)bad, y[bad], g.deq[bad]);
    }
    free(y);
    free(g.file);
    ASSERT_EQ_INT(bad, -1);
  }
}

TEST(quantize_matches_gguf_bit_for_bit) {
  int checked = 0;
  for (int t = 0; t < CML_GGML_TYPE_COUNT; ++t) {
    qt_ggml_t g;
    ASSERT_TRUE(qt_load_ggml((cml_ggml_type_t)t, &g) || (free(g.file), false));
    if (!g.src) {
      free(g.file);
      continue;
    }
    size_t size = (size_t)(g.rows * g.row_bytes);
    uint8_t* q = malloc(size);
    ASSERT_STATUS_OK(cml_quantize_ggml(g.type, g.src, g.rows, g.k, q, size));
    int64_t bad = -1;
    for (size_t i = 0; i < size && bad < 0; ++i) {
      if (q[i] != g.blocks[i]) bad = (int64_t)i;
    }
    if (bad >= 0) {
      fprintf(stderr, "%s: byte %lld = %u, gguf %u\n", cml_ggml_type_name(g.type), (long long)bad,
              q[bad], g.blocks[bad]);
    }
    free(q);
    free(g.file);
    ASSERT_EQ_INT(bad, -1);
    ++checked;
  }
  ASSERT_EQ_INT(checked, 5);  // Q4_0, Q8_0, Q4_1, Q5_0, Q5_1
}

// Round trip of N(0, 1) weights: RMSE within 25% of ggml's own quantizers (measured on the same
// distribution, 256 x 4096, no importance matrix) for every format.
TEST(quantize_round_trip_error) {
  static const double ggml_rmse[CML_GGML_TYPE_COUNT] = {
      0.0859, 0.0054, 0.0761, 0.297, 0.151, 0.0713, 0.0361, 0.0177, 0.0782, 0.0427, 0.0378};
  const int64_t rows = 16, k = 4096;
  float* x = malloc(sizeof(float) * (size_t)(rows * k));
  float* y = malloc(sizeof(float) * (size_t)(rows * k));
  uint8_t* q = malloc((size_t)(rows * k * 2));
  for (int64_t i = 0; i < rows * k; ++i) x[i] = (float)qt_normal();
  for (int t = 0; t < CML_GGML_TYPE_COUNT; ++t) {
    const cml_ggml_type_t type = (cml_ggml_type_t)t;
    size_t size = (size_t)(rows * cml_ggml_row_bytes(type, k));
    ASSERT_STATUS_CODE(cml_quantize_ggml(type, x, rows, k, q, size - 1),
                       CML_STATUS_INVALID_ARGUMENT);
    ASSERT_STATUS_OK(cml_quantize_ggml(type, x, rows, k, q, size));
    ASSERT_STATUS_OK(cml_dequantize_ggml(type, q, rows, k, y));
    double se = 0;
    for (int64_t i = 0; i < rows * k; ++i) se += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
    double rmse = sqrt(se / (double)(rows * k));
    printf("  %-6s rmse %.4f (ggml %.4f)\n", cml_ggml_type_name(type), rmse, ggml_rmse[t]);
    ASSERT_TRUE(rmse <= 1.25 * ggml_rmse[t]);
  }
  ASSERT_STATUS_CODE(cml_quantize_ggml(CML_GGML_Q4_K, x, 1, 100, q, 1000),
                     CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(cml_quantize_ggml(CML_GGML_TYPE_COUNT, x, 1, 256, q, 1000),
                     CML_STATUS_INVALID_ARGUMENT);
  free(x);
  free(y);
  free(q);
}

//===--- FusedQuantizedDense, GGML ---===//

static bool qt_ggml_dense_all(const qt_ggml_t* g, int* out_runs) {
  qt_dense_t d = qt_dense_ggml(g->type, g->blocks, g->rows, g->k);
  double* wref = malloc(sizeof(double) * (size_t)(g->rows * g->k));
  for (int64_t i = 0; i < g->rows * g->k; ++i) wref[i] = g->deq[i];
  d.wref = wref;
  bool ok = true;
  for (size_t c = 0; c < QT_CONFIGS; ++c) {
    for (int64_t m = 1; m <= 7; m += 6) {
      bool skipped;
      ok = qt_check_dense(qt_configs[c], &d, m, &skipped) && ok;
      *out_runs += !skipped;
    }
  }
  free(wref);
  return ok;
}

TEST(ggml_dense_every_format_activation_batch_backend) {
  int runs = 0, formats = 0;
  for (int t = 0; t < CML_GGML_TYPE_COUNT; ++t) {
    if (!qt_mine(t)) continue;
    ++formats;
    qt_ggml_t g;
    ASSERT_TRUE(qt_load_ggml((cml_ggml_type_t)t, &g) || (free(g.file), false));
    bool ok = qt_ggml_dense_all(&g, &runs);
    free(g.file);
    ASSERT_TRUE(ok);
  }
  printf("  %d runs (%d formats x 2 batches x backends)\n", runs, formats);
  ASSERT_TRUE(formats >= 1);
  ASSERT_TRUE(runs >= formats * 2 * 5);
}

//===--- FusedQuantizedDense, Linear and NF4 ---===//

static void qt_pack(cml_dtype_t dt, const int32_t* codes, int64_t count, uint8_t* out) {
  int bits = cml_dtype_bits(dt);
  if (bits == 8) {
    for (int64_t i = 0; i < count; ++i) out[i] = (uint8_t)codes[i];
    return;
  }
  int per = 8 / bits;
  memset(out, 0, (size_t)((count + per - 1) / per));
  for (int64_t i = 0; i < count; ++i) {
    out[i / per] |= (uint8_t)(((unsigned)codes[i] & ((1u << bits) - 1)) << ((i % per) * bits));
  }
}

TEST(linear_nf4_dense_every_dtype_activation_batch_backend) {
  size_t size = 0;
  uint8_t* file = qt_read("linear.bin", &size);
  ASSERT_TRUE(file && size > 12 && memcmp(file, "CMLL", 4) == 0);
  uint32_t head[2];
  memcpy(head, file + 4, sizeof head);
  size_t off = 12;
  int runs = 0;
  bool ok = true;
  for (uint32_t c = 0; c < head[1] && ok; ++c) {
    uint32_t h[6];
    memcpy(h, file + off, sizeof h);
    off += sizeof h;
    const int64_t k = h[2], n = h[3], block = h[4], nb = (n + block - 1) / block;
    const int32_t* codes = (const int32_t*)(file + off);
    off += (size_t)(k * n) * 4;
    const float* scale = (const float*)(file + off);
    off += (size_t)(k * nb) * 4;
    const float* zero = NULL;
    if (h[5]) {
      zero = (const float*)(file + off);
      off += (size_t)(k * nb) * 4;
    }
    const float* w = (const float*)(file + off);
    off += (size_t)(k * n) * 4;
    if (!qt_mine((int)c)) continue;
    qt_dense_t d;
    memset(&d, 0, sizeof d);
    cml_quantization_init(&d.q);
    d.q.scheme = (cml_quant_scheme_t)h[0];
    d.q.block_size = block;
    d.ws = API_SHAPE((cml_dtype_t)h[1], k, n);
    d.ss = API_SHAPE(CML_DTYPE_F32, k, nb);
    uint8_t* packed = malloc((size_t)(k * n));
    qt_pack((cml_dtype_t)h[1], codes, k * n, packed);
    d.w = packed;
    d.scale = scale;
    d.zero = zero;
    d.k = k;
    d.n = n;
    double* wref = malloc(sizeof(double) * (size_t)(k * n));
    for (int64_t kk = 0; kk < k; ++kk) {
      for (int64_t j = 0; j < n; ++j) wref[j * k + kk] = w[kk * n + j];
    }
    d.wref = wref;
    for (size_t ci = 0; ci < QT_CONFIGS; ++ci) {
      for (int64_t m = 1; m <= 7; m += 6) {
        bool skipped;
        bool one = qt_check_dense(qt_configs[ci], &d, m, &skipped);
        if (!one) {
          fprintf(stderr, "  case %u: %s %s k=%lld n=%lld block=%lld zero=%u\n", c,
                  cml_quant_scheme_name(d.q.scheme), cml_dtype_name((cml_dtype_t)h[1]),
                  (long long)k, (long long)n, (long long)block, h[5]);
        }
        ok = one && ok;
        runs += !skipped;
      }
    }
    free(wref);
    free(packed);
  }
  free(file);
  ASSERT_TRUE(ok);
  ASSERT_EQ_U64(off, size);
  printf("  %d runs\n", runs);
}

// y = act(x [m, k] times the weights of |d| + bias) on |config| into |y| [m, n].
static bool qt_lin_run(const char* config, const qt_dense_t* d, int64_t m, const float* x,
                       const float* bias, cml_activation_t act, float* y) {
  cml_backend_t* be = qt_backend(config);
  if (!be) return false;
  cml_builder_t* b = NULL;
  cml_status_t st = cml_builder_create(be, "qlin", &b);
  if (st == CML_OK) {
    cml_function_t* f = cml_builder_main(b);
    cml_shape_t xs = API_SHAPE(CML_DTYPE_F32, m, d->k);
    cml_shape_t bs = API_SHAPE(CML_DTYPE_F32, d->n);
    cml_value_t xv = cml_parameter(f, "x", &xs);
    cml_value_t wv = cml_parameter(f, "w", &d->ws);
    cml_value_t bv = cml_parameter(f, "bias", &bs);
    cml_quantization_t q = d->q;
    q.scale = cml_parameter(f, "scale", &d->ss);
    if (d->zero) q.zero_point = cml_parameter(f, "zero", &d->ss);
    cml_value_t yv = cml_op_fused_quantized_dense(f, xv, wv, bv, &q, act);
    cml_executable_t* exe = NULL;
    st = api_finish(b, &yv, 1, &exe);
    const void* ins[5] = {x, d->w, bias, d->scale, d->zero};
    if (st == CML_OK) st = api_run(be, exe, ins, (void* const[]){y});
    cml_executable_release(exe);
  }
  bool ok = st == CML_OK;
  if (!ok) fprintf(stderr, "%s: %s\n", config, cml_status_message(st));
  cml_status_free(st);
  cml_backend_release(be);
  return ok;
}

// The Linear / NF4 SIMD kernels (kernels/x86_64/quant_lin_x86_64_body.h) on every weight dtype,
// with and without a zero point, and NF4: K odd and past one 128-row panel, N not a multiple of
// the 64-column strip, blocks that do not divide N (24: vectors across two blocks, the gather;
// 64: one block per vector), sub-byte rows that do not start on a byte (N odd, N % 4 = 2), batch
// 1, 7 and 33 (the direct driver, the panel driver with a partial row group), each activation in
// turn. Each run is checked against a double-precision loop with the f32 bound; threads=1 and
// threads=3 agree bit for bit, and so do the zmm and ymm builds (both promise the same FMA chain
// per output from the same decoded weights); the scalar ISA and the reference kernel agree
// within the bound.
TEST(linear_nf4_simd_matches_double_reference_and_threads) {
  static const cml_dtype_t dts[] = {CML_DTYPE_I8, CML_DTYPE_U8, CML_DTYPE_I4,
                                    CML_DTYPE_U4, CML_DTYPE_I2, CML_DTYPE_U2};
  static const int64_t shapes[][3] = {{37, 150, 24}, {301, 131, 64}};  // k, n, block
  static const char* const cfgs[] = {"c:threads=1",
                                     "c:threads=3",
                                     "c:threads=1,avx512=false",
                                     "c:threads=3,avx512=false",
                                     "c:threads=2,avx2=false,avx512=false",
                                     "c:reference=true"};
  enum { CFGS = sizeof cfgs / sizeof *cfgs };
  const float* nf4 = cml_quant_nf4_table();
  int variant = 0, runs = 0;
  bool ok = true;
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; ++s) {
    const int64_t k = shapes[s][0], n = shapes[s][1], block = shapes[s][2];
    const int64_t nb = (n + block - 1) / block;
    int32_t* codes = malloc(sizeof(int32_t) * (size_t)(k * n));
    uint8_t* packed = malloc((size_t)(k * n));
    float* scale = malloc(sizeof(float) * (size_t)(k * nb));
    float* zero = malloc(sizeof(float) * (size_t)(k * nb));
    double* wref = malloc(sizeof(double) * (size_t)(k * n));
    float* x = malloc(sizeof(float) * (size_t)(33 * k));
    float* bias = malloc(sizeof(float) * (size_t)n);
    float* out[CFGS];
    for (int c = 0; c < CFGS; ++c) out[c] = malloc(sizeof(float) * (size_t)(33 * n));
    for (int64_t i = 0; i < k * nb; ++i) {
      scale[i] = (float)qt_uniform(0.01, 0.1) * (i % 3 == 0 ? -1.0f : 1.0f);
      zero[i] = (float)qt_uniform(-0.05, 0.05);
    }
    for (int64_t i = 0; i < n; ++i) bias[i] = (float)qt_uniform(-0.5, 0.5);
    // 12 Linear variants (each dtype without and with a zero point), then NF4 stored in the
    // four dtypes it takes (the low 4 bits index the table).
    for (size_t t = 0; t < 2 * sizeof dts / sizeof *dts + 4; ++t, ++variant) {
      const bool is_nf4 = t >= 2 * sizeof dts / sizeof *dts;
      const cml_dtype_t dt = is_nf4 ? dts[t - 2 * sizeof dts / sizeof *dts] : dts[t / 2];
      const bool has_zero = !is_nf4 && t % 2 == 1;
      const int bits = cml_dtype_bits(dt);
      const bool sgn = dt == CML_DTYPE_I8 || dt == CML_DTYPE_I4 || dt == CML_DTYPE_I2;
      const int lo = sgn ? -(1 << (bits - 1)) : 0, span = 1 << bits;
      for (int64_t i = 0; i < k * n; ++i) codes[i] = lo + (int32_t)(qt_uniform(0, 1) * span);
      qt_pack(dt, codes, k * n, packed);
      for (int64_t kk = 0; kk < k; ++kk) {
        for (int64_t j = 0; j < n; ++j) {
          const int64_t e = kk * n + j, sb = kk * nb + j / block;
          wref[j * k + kk] = is_nf4 ? (double)nf4[codes[e] & 15] * scale[sb]
                                    : (double)codes[e] * scale[sb] + (has_zero ? zero[sb] : 0.0);
        }
      }
      qt_dense_t d;
      memset(&d, 0, sizeof d);
      cml_quantization_init(&d.q);
      d.q.scheme = is_nf4 ? CML_QUANT_NF4 : CML_QUANT_LINEAR;
      d.q.block_size = block;
      d.ws = API_SHAPE(dt, k, n);
      d.ss = API_SHAPE(CML_DTYPE_F32, k, nb);
      d.w = packed;
      d.scale = scale;
      d.zero = has_zero ? zero : NULL;
      d.k = k;
      d.n = n;
      d.wref = wref;
      for (int64_t m = 1; m <= 33 && ok; m = m == 1 ? 7 : m + 26) {
        const cml_activation_t act = (cml_activation_t)(variant % CML_ACTIVATION_COUNT);
        for (int64_t i = 0; i < m * k; ++i) x[i] = (float)qt_uniform(-1, 1);
        for (int c = 0; c < CFGS && ok; ++c) {
          ok = qt_lin_run(cfgs[c], &d, m, x, bias, act, out[c]);
          for (int64_t i = 0; ok && i < m; ++i) {
            for (int64_t j = 0; ok && j < n; ++j) {
              double sum = bias[j], mag = fabs(bias[j]);
              for (int64_t kk = 0; kk < k; ++kk) {
                sum += (double)x[i * k + kk] * wref[j * k + kk];
                mag += fabs((double)x[i * k + kk] * wref[j * k + kk]);
              }
              const double want = qt_act(act, sum), got = out[c][i * n + j];
              const double bound = 1.5 * (double)(k + 2) * 1.2e-7 * mag + 1e-6 + 1e-6 * fabs(want);
              if (!(fabs(got - want) <= bound)) {
                fprintf(stderr,
                        "%s %s %s zero=%d k=%lld n=%lld m=%lld act %s: y[%lld, %lld] = %.9g, "
                        "want %.9g\n",
                        cfgs[c], cml_quant_scheme_name(d.q.scheme), cml_dtype_name(dt), has_zero,
                        (long long)k, (long long)n, (long long)m, cml_activation_name(act),
                        (long long)i, (long long)j, got, want);
                ok = false;
              }
            }
          }
          ++runs;
        }
        // threads=1 vs 3 (zmm; ymm) and zmm vs ymm: the same bits.
        for (int c = 1; ok && c < 4; ++c) {
          if (memcmp(out[0], out[c], sizeof(float) * (size_t)(m * n)) != 0) {
            fprintf(stderr, "%s differs from %s: %s %s zero=%d k=%lld n=%lld m=%lld\n", cfgs[c],
                    cfgs[0], cml_quant_scheme_name(d.q.scheme), cml_dtype_name(dt), has_zero,
                    (long long)k, (long long)n, (long long)m);
            ok = false;
          }
        }
      }
    }
    for (int c = 0; c < CFGS; ++c) free(out[c]);
    free(codes);
    free(packed);
    free(scale);
    free(zero);
    free(wref);
    free(x);
    free(bias);
  }
  ASSERT_TRUE(ok);
  printf("  %d runs\n", runs);
}

//===--- QuantizedEmbeddingLookup ---===//

TEST(embedding_lookup_every_format_matches_gguf) {
  static const char* const configs[] = {"c", "c:fusion=false", "xla:cpu"};
  for (int t = 0; t < CML_GGML_TYPE_COUNT; ++t) {
    if (!qt_mine(t)) continue;
    qt_ggml_t g;
    ASSERT_TRUE(qt_load_ggml((cml_ggml_type_t)t, &g) || (free(g.file), false));
    const int32_t idx[6] = {3, 0, 8, 3, 5, 1};
    float* out = malloc(sizeof(float) * (size_t)(6 * g.k));
    bool ok = true;
    for (size_t c = 0; c < sizeof configs / sizeof *configs && ok; ++c) {
      cml_backend_t* be = qt_backend(configs[c]);
      if (!be) continue;
      cml_builder_t* b = NULL;
      cml_status_t st = cml_builder_create(be, "embed", &b);
      if (st == CML_OK) {
        cml_function_t* f = cml_builder_main(b);
        cml_shape_t ds = API_SHAPE(CML_DTYPE_U8, g.rows, g.row_bytes);
        cml_shape_t is = API_SHAPE(CML_DTYPE_I32, 2, 3, 1);
        cml_quantization_t q;
        cml_quantization_init(&q);
        q.scheme = CML_QUANT_GGML;
        q.ggml_type = g.type;
        cml_value_t dv = cml_parameter(f, "d", &ds);  // parameters in order: d, i
        cml_value_t iv = cml_parameter(f, "i", &is);
        cml_value_t y = cml_op_quantized_embedding_lookup(f, dv, iv, &q);
        cml_executable_t* exe = NULL;
        st = api_finish(b, &y, 1, &exe);
        if (st == CML_OK)
          st = api_run(be, exe, (const void* const[]){g.blocks, idx}, &(void*){out});
        cml_executable_release(exe);
      }
      if (st != CML_OK) fprintf(stderr, "%s: %s\n", configs[c], cml_status_message(st));
      ok = st == CML_OK;
      cml_status_free(st);
      for (int i = 0; ok && i < 6; ++i) {
        if (memcmp(out + i * g.k, g.deq + idx[i] * g.k, sizeof(float) * (size_t)g.k) != 0) {
          fprintf(stderr, "%s %s: row %d differs from gguf\n", configs[c],
                  cml_ggml_type_name(g.type), i);
          ok = false;
        }
      }
      cml_backend_release(be);
    }
    free(out);
    free(g.file);
    ASSERT_TRUE(ok);
  }
}

TEST(embedding_index_out_of_range_is_a_status) {
  qt_ggml_t g;
  ASSERT_TRUE(qt_load_ggml(CML_GGML_Q4_K, &g) || (free(g.file), false));
  cml_backend_t* be = qt_backend("c");
  ASSERT_TRUE(be != NULL);
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(be, "embed", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t ds = API_SHAPE(CML_DTYPE_U8, g.rows, g.row_bytes);
  cml_shape_t is = API_SHAPE(CML_DTYPE_I64, 2, 1);
  cml_quantization_t q;
  cml_quantization_init(&q);
  q.scheme = CML_QUANT_GGML;
  q.ggml_type = CML_GGML_Q4_K;
  cml_value_t dv = cml_parameter(f, "d", &ds);
  cml_value_t iv = cml_parameter(f, "i", &is);
  cml_value_t y = cml_op_quantized_embedding_lookup(f, dv, iv, &q);
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(b, &y, 1, &exe));
  float* out = malloc(sizeof(float) * 2 * 256);
  char msg[512];
  const int64_t bad_hi[2] = {1, 9}, bad_lo[2] = {-1, 0}, good[2] = {8, 0};
  cml_status_code_t c1 = api_code_msg(
      api_run(be, exe, (const void* const[]){g.blocks, bad_hi}, &(void*){out}), msg, sizeof msg);
  ASSERT_EQ_INT(c1, CML_STATUS_OUT_OF_RANGE);
  ASSERT_CONTAINS(msg, "QuantizedEmbeddingLookup: index 9");
  ASSERT_CONTAINS(msg, "[0, 9)");
  ASSERT_EQ_INT(api_code(api_run(be, exe, (const void* const[]){g.blocks, bad_lo}, &(void*){out})),
                CML_STATUS_OUT_OF_RANGE);
  ASSERT_STATUS_OK(api_run(be, exe, (const void* const[]){g.blocks, good}, &(void*){out}));
  ASSERT_TRUE(memcmp(out, g.deq + 8 * 256, 256 * sizeof(float)) == 0);
  free(out);
  cml_executable_release(exe);
  cml_backend_release(be);
  free(g.file);
}

//===--- larger shapes: the pool, thread counts, the quantizer end to end ---===//

// Every format on [77, 512] weights (19 groups of four rows and a single row; 16 blocks of 32
// or 2 of 256 per row), batch 1 and 5: the native kernel on 1 thread (AVX-512 and AVX2), on
// 4 threads and the decomposition agree within the f32 bound.
TEST(native_matches_decomposition_and_thread_counts) {
  static const cml_ggml_type_t types[] = {
      CML_GGML_Q4_0, CML_GGML_Q8_0, CML_GGML_IQ4_NL, CML_GGML_Q2_K, CML_GGML_Q3_K, CML_GGML_Q4_K,
      CML_GGML_Q5_K, CML_GGML_Q6_K, CML_GGML_Q4_1,   CML_GGML_Q5_0, CML_GGML_Q5_1};
  const int64_t n = 77, k = 512;
  float* w = malloc(sizeof(float) * (size_t)(n * k));
  for (int64_t i = 0; i < n * k; ++i) w[i] = (float)qt_normal();
  uint8_t* q = malloc((size_t)(n * k * 2));
  float* wd = malloc(sizeof(float) * (size_t)(n * k));
  for (size_t t = 0; t < sizeof types / sizeof *types; ++t) {
    const int64_t rb = cml_ggml_row_bytes(types[t], k);
    ASSERT_STATUS_OK(cml_quantize_ggml(types[t], w, n, k, q, (size_t)(n * rb)));
    ASSERT_STATUS_OK(cml_dequantize_ggml(types[t], q, n, k, wd));
    double* wref = malloc(sizeof(double) * (size_t)(n * k));
    for (int64_t i = 0; i < n * k; ++i) wref[i] = wd[i];
    qt_dense_t d = qt_dense_ggml(types[t], q, n, k);
    d.wref = wref;
    static const char* const cfgs[] = {"c:threads=1", "c:threads=4", "c:threads=1,avx512=false",
                                       "c:fusion=false"};
    bool ok = true;
    for (size_t c = 0; c < 4; ++c) {
      for (int64_t m = 1; m <= 5; m += 4) {
        bool skipped;
        ok = qt_check_dense(cfgs[c], &d, m, &skipped) && ok;
      }
    }
    free(wref);
    ASSERT_TRUE(ok);
  }
  free(w);
  free(q);
  free(wd);
}

// y = act(x [1, k] times the weights of |d|) (no bias) on |config|.
static bool qt_gemv_act(const char* config, const qt_dense_t* d, const float* x, float* y,
                        cml_activation_t act) {
  cml_backend_t* be = qt_backend(config);
  if (!be) return false;
  cml_builder_t* b = NULL;
  cml_status_t st = cml_builder_create(be, "gemv", &b);
  if (st == CML_OK) {
    cml_function_t* f = cml_builder_main(b);
    cml_shape_t xs = API_SHAPE(CML_DTYPE_F32, 1, d->k);
    cml_value_t xv = cml_parameter(f, "x", &xs);
    cml_value_t wv = cml_parameter(f, "w", &d->ws);
    cml_value_t yv = cml_op_fused_quantized_dense(f, xv, wv, CML_VALUE_INVALID, &d->q, act);
    cml_executable_t* exe = NULL;
    st = api_finish(b, &yv, 1, &exe);
    if (st == CML_OK) st = api_run(be, exe, (const void* const[]){x, d->w}, (void* const[]){y});
    cml_executable_release(exe);
  }
  bool ok = st == CML_OK;
  if (!ok) fprintf(stderr, "%s: %s\n", config, cml_status_message(st));
  cml_status_free(st);
  cml_backend_release(be);
  return ok;
}

// y = x [1, k] times the weights of |d| (no bias, no activation) on |config|.
static bool qt_gemv(const char* config, const qt_dense_t* d, const float* x, float* y) {
  return qt_gemv_act(config, d, x, y, CML_ACTIVATION_NONE);
}

// The int8-activation path (c:quant_int8=true; AVX512-VNNI where the CPU has it, and the AVX2
// kernels) on every format, [77, 512] weights, batch 1: within the f32 bound plus the bound
// of rounding each 32 activations (256 for Q4_K) to multiples of max |x| / 127
// (qt_check_dense), and really
// taken (its results differ from the f32 path's), and a NaN activation gives NaN outputs.
// Batch 5 ignores the option (f32 path).
TEST(int8_activations_within_block_scale_bound) {
  const int64_t n = 77, k = 512;
  float* w = malloc(sizeof(float) * (size_t)(n * k));
  for (int64_t i = 0; i < n * k; ++i) w[i] = (float)qt_normal();
  uint8_t* q = malloc((size_t)(n * k * 2));
  float* wd = malloc(sizeof(float) * (size_t)(n * k));
  for (int t = 0; t < CML_GGML_TYPE_COUNT; ++t) {
    const cml_ggml_type_t type = (cml_ggml_type_t)t;
    const int64_t rb = cml_ggml_row_bytes(type, k);
    ASSERT_STATUS_OK(cml_quantize_ggml(type, w, n, k, q, (size_t)(n * rb)));
    ASSERT_STATUS_OK(cml_dequantize_ggml(type, q, n, k, wd));
    double* wref = malloc(sizeof(double) * (size_t)(n * k));
    for (int64_t i = 0; i < n * k; ++i) wref[i] = wd[i];
    qt_dense_t d = qt_dense_ggml(type, q, n, k);
    d.wref = wref;
    d.int8 = true;
    static const char* const cfgs[] = {"c:quant_int8=true", "c:quant_int8=true,avx512=false"};
    bool ok = true;
    for (size_t c = 0; c < 2; ++c) {
      for (int64_t m = 1; m <= 5; m += 4) {
        bool skipped;
        qt_rng = 42;  // the same x for every config
        ok = qt_check_dense(cfgs[c], &d, m, &skipped) && ok;
      }
    }
    // Taken: y differs from the f32 path's on the same x.
    float x[512], y8[77], y32[77], ynan[77];
    for (int64_t i = 0; i < k; ++i) x[i] = (float)qt_uniform(-1, 1);
    ASSERT_TRUE(qt_gemv("c:quant_int8=true", &d, x, y8));
    ASSERT_TRUE(qt_gemv("c", &d, x, y32));
    // A NaN activation makes every output NaN (not a block of zeros).
    x[40] = NAN;
    ASSERT_TRUE(qt_gemv("c:quant_int8=true", &d, x, ynan));
    for (int64_t j = 0; j < n; ++j) ASSERT_TRUE(isnan(ynan[j]));
    int differ = 0;
    for (int64_t j = 0; j < n; ++j) differ += y8[j] != y32[j];
    printf("  %-6s worst |error| / bound %.3f, %d of %lld outputs differ from f32\n",
           cml_ggml_type_name(type), d.worst, differ, (long long)n);
    free(wref);
    ASSERT_TRUE(ok);
    // The scalar kernels (GOMLX_SIMD_AVX2=0, or a CPU without AVX2) ignore the option.
    cml_backend_t* probe = qt_backend("c:quant_int8=true");
    ASSERT_TRUE(probe != NULL);
    const bool simd = strstr(cml_backend_config(probe), "avx2=true") != NULL;
    cml_backend_release(probe);
    if (simd) ASSERT_TRUE(differ > n / 2);
  }
  free(w);
  free(q);
  free(wd);
}

// The int8 path computes the f32 product of the weights with the activations quantized here
// independently: per group of 32 values (one super-block of 256 for Q4_K), scale max |x| / 127
// in f32, values rounded to nearest even; y is within the f32 summation bound of
// sum_k w_k * dx * xq_k (in double). The activations' magnitudes differ between blocks of 32
// (1x to 4x), so another grouping gives other products (checked: the per-32 quantization of
// Q4_K's activations misses the bound). On the VNNI kernels where the CPU has them, and on the
// AVX2 kernels (skipped where the scalar kernels run: they ignore the option).
TEST(int8_activation_groups_exact) {
  static const cml_ggml_type_t types[] = {CML_GGML_Q4_0, CML_GGML_Q8_0, CML_GGML_Q4_K,
                                          CML_GGML_Q6_K, CML_GGML_Q5_K};
  const int64_t n = 77, k = 1024;
  float* w = malloc(sizeof(float) * (size_t)(n * k));
  float* wd = malloc(sizeof(float) * (size_t)(n * k));
  uint8_t* q = malloc((size_t)(n * k * 2));
  float x[1024], y[77];
  double xh[1024], xh32[1024];
  for (int64_t i = 0; i < n * k; ++i) w[i] = (float)qt_normal();
  for (int64_t i = 0; i < k; ++i) x[i] = (float)(qt_uniform(-1, 1) * (double)(1 + (i / 32) % 4));
  for (size_t t = 0; t < sizeof types / sizeof types[0]; ++t) {
    const cml_ggml_type_t type = types[t];
    const int64_t group = type == CML_GGML_Q4_K ? 256 : 32;
    for (int pass = 0; pass < 2; ++pass) {
      const int64_t g = pass == 0 ? group : 32;
      double* out = pass == 0 ? xh : xh32;
      for (int64_t b = 0; b < k / g; ++b) {
        float amax = 0;
        for (int64_t i = b * g; i < (b + 1) * g; ++i) amax = fmaxf(amax, fabsf(x[i]));
        const float dx = amax / 127.0f, id = 127.0f / amax;
        for (int64_t i = b * g; i < (b + 1) * g; ++i) {
          out[i] = (double)dx * (double)nearbyintf(x[i] * id);
        }
      }
    }
    const int64_t rb = cml_ggml_row_bytes(type, k);
    ASSERT_STATUS_OK(cml_quantize_ggml(type, w, n, k, q, (size_t)(n * rb)));
    ASSERT_STATUS_OK(cml_dequantize_ggml(type, q, n, k, wd));
    qt_dense_t d = qt_dense_ggml(type, q, n, k);
    static const char* const cfgs[] = {"c:quant_int8=true", "c:quant_int8=true,avx512=false"};
    float y32[77];
    ASSERT_TRUE(qt_gemv("c", &d, x, y32));
    for (size_t c = 0; c < 2; ++c) {
      ASSERT_TRUE(qt_gemv(cfgs[c], &d, x, y));
      if (memcmp(y, y32, sizeof y) == 0) {
        // The option has no effect without AVX2 (GOMLX_SIMD_AVX2=0: the scalar kernels).
        printf("  %s %s: the f32 path's results (no int8 kernels here), skipped\n", cfgs[c],
               cml_ggml_type_name(type));
        continue;
      }
      int other = 0;  // outputs outside the bound of the per-32 grouping (Q4_K)
      for (int64_t j = 0; j < n; ++j) {
        double want = 0, want32 = 0, mag = 0;
        for (int64_t i = 0; i < k; ++i) {
          want += (double)wd[j * k + i] * xh[i];
          want32 += (double)wd[j * k + i] * xh32[i];
          mag += fabs((double)wd[j * k + i] * xh[i]);
        }
        const double bound = (double)(k + 2) * 1.2e-7 * mag + 1e-6;
        if (!(fabs(y[j] - want) <= bound)) {
          fprintf(stderr, "%s %s: y[%lld] = %.9g, want %.9g (bound %.3g)\n", cfgs[c],
                  cml_ggml_type_name(type), (long long)j, y[j], want, bound);
        }
        ASSERT_TRUE(fabs(y[j] - want) <= bound);
        other += !(fabs(y[j] - want32) <= bound);
      }
      if (group != 32) ASSERT_TRUE(other > n / 2);
    }
  }
  free(w);
  free(wd);
  free(q);
}

// The AVX512-VNNI int8 kernels (Q4_0, Q4_K, Q6_K: per-call activation layouts, offsets as
// integer activation sums, kernels/x86_64/quant_x86_64_vnni.c) at the shapes that reach their
// edges: Q4_0 rows of 5, 6, 7 and 8 blocks (a last group of 1-3 blocks or none) and 131 blocks,
// k-quant rows of 1 and 3 super-blocks, 3 and 77 rows (rows outside groups of four). Each
// matches the generic int8 kernels (c:quant_int8=true,avx512=false: the same quantized
// activations and integer dots, other f32 summation order) to 1e-5 of sum |x| * max |w|, and
// stays within the int8 bound of qt_check_dense at batch 1 and 7, on both configurations.
TEST(int8_vnni_kernels_match_generic_int8) {
  static const struct {
    cml_ggml_type_t type;
    int64_t k;
  } cases[] = {{CML_GGML_Q4_0, 160}, {CML_GGML_Q4_0, 192},  {CML_GGML_Q4_0, 224},
               {CML_GGML_Q4_0, 256}, {CML_GGML_Q4_0, 4192}, {CML_GGML_Q4_K, 256},
               {CML_GGML_Q4_K, 768}, {CML_GGML_Q6_K, 256},  {CML_GGML_Q6_K, 768}};
  static const int64_t ns[] = {3, 77};
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ++ci) {
    const cml_ggml_type_t type = cases[ci].type;
    const int64_t k = cases[ci].k;
    for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ++ni) {
      const int64_t n = ns[ni];
      const int64_t rb = cml_ggml_row_bytes(type, k);
      float* w = malloc(sizeof(float) * (size_t)(n * k));
      float* wd = malloc(sizeof(float) * (size_t)(n * k));
      double* wref = malloc(sizeof(double) * (size_t)(n * k));
      uint8_t* q = malloc((size_t)(n * rb));
      float* x = malloc(sizeof(float) * (size_t)k);
      float* yv = malloc(sizeof(float) * (size_t)n);
      float* yg = malloc(sizeof(float) * (size_t)n);
      for (int64_t i = 0; i < n * k; ++i) w[i] = (float)qt_normal();
      ASSERT_STATUS_OK(cml_quantize_ggml(type, w, n, k, q, (size_t)(n * rb)));
      ASSERT_STATUS_OK(cml_dequantize_ggml(type, q, n, k, wd));
      for (int64_t i = 0; i < n * k; ++i) wref[i] = wd[i];
      qt_dense_t d = qt_dense_ggml(type, q, n, k);
      d.wref = wref;
      d.int8 = true;
      // Magnitudes that differ between blocks of 32 (1x to 4x), so that each block's own
      // activation scale differs from its group's: a kernel that read the wrong one would miss.
      double xabs = 0;
      for (int64_t i = 0; i < k; ++i) {
        x[i] = (float)(qt_uniform(-1, 1) * (double)(1 + (i / 32) % 4));
        xabs += fabs(x[i]);
      }
      ASSERT_TRUE(qt_gemv("c:quant_int8=true", &d, x, yv));
      ASSERT_TRUE(qt_gemv("c:quant_int8=true,avx512=false", &d, x, yg));
      for (int64_t j = 0; j < n; ++j) {
        double wmax = 0;
        for (int64_t i = 0; i < k; ++i) wmax = fmax(wmax, fabs(wref[j * k + i]));
        const double tol = 1e-5 * 1.1 * xabs * wmax + 1e-6;
        if (!(fabs((double)yv[j] - yg[j]) <= tol)) {
          fprintf(stderr, "%s k=%lld n=%lld: y[%lld] = %.9g (vnni), %.9g (generic), tol %.3g\n",
                  cml_ggml_type_name(type), (long long)k, (long long)n, (long long)j, yv[j], yg[j],
                  tol);
        }
        ASSERT_TRUE(fabs((double)yv[j] - yg[j]) <= tol);
      }
      // Every activation at batch 1 and 7 (batch 7 takes the f32 panel GEMM), on 77 rows.
      static const char* const cfgs[] = {"c:quant_int8=true", "c:quant_int8=true,avx512=false"};
      for (size_t c = 0; n == 77 && c < 2; ++c) {
        for (int64_t m = 1; m <= 7; m += 6) {
          bool skipped;
          ASSERT_TRUE(qt_check_dense(cfgs[c], &d, m, &skipped));
        }
      }
      free(w);
      free(wd);
      free(wref);
      free(q);
      free(x);
      free(yv);
      free(yg);
    }
  }
}

TEST(quantize_linear_round_trip) {
  const int64_t k = 6, n = 21, block = 8, nb = 3;
  float src[6 * 21], scale[6 * 3], zero[6 * 3];
  uint8_t wq[6 * 21];
  for (int i = 0; i < k * n; ++i) src[i] = (float)qt_uniform(-2, 2);
  static const cml_dtype_t dts[] = {CML_DTYPE_I8, CML_DTYPE_U8, CML_DTYPE_I4,
                                    CML_DTYPE_U4, CML_DTYPE_I2, CML_DTYPE_U2};
  static const double tol[] = {2.0 / 127, 4.0 / 255, 2.0 / 7, 4.0 / 15, 2.0, 4.0 / 3};
  for (size_t i = 0; i < 6; ++i) {
    bool is_signed = i % 2 == 0;
    ASSERT_STATUS_OK(cml_quantize_linear(CML_QUANT_LINEAR, dts[i], src, k, n, block, wq, scale,
                                         is_signed ? NULL : zero));
    cml_shape_t ws = API_SHAPE(dts[i], k, n);
    (void)ws;
    int bits = cml_dtype_bits(dts[i]), per = 8 / bits;
    for (int64_t e = 0; e < k * n; ++e) {
      int v = (wq[e / per] >> ((e % per) * bits)) & ((1 << bits) - 1);
      if (is_signed && v >= (1 << (bits - 1))) v -= 1 << bits;
      int64_t r = e / n, blk = (e % n) / block;
      double back = v * (double)scale[r * nb + blk] + (is_signed ? 0 : zero[r * nb + blk]);
      ASSERT_TRUE(fabs(back - src[e]) <= 0.5 * tol[i] + 1e-6);
    }
  }
  ASSERT_STATUS_OK(
      cml_quantize_linear(CML_QUANT_NF4, CML_DTYPE_U4, src, k, n, block, wq, scale, NULL));
  ASSERT_STATUS_CODE(
      cml_quantize_linear(CML_QUANT_LINEAR, CML_DTYPE_U8, src, k, n, block, wq, scale, NULL),
      CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(
      cml_quantize_linear(CML_QUANT_NF4, CML_DTYPE_I2, src, k, n, block, wq, scale, NULL),
      CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(
      cml_quantize_linear(CML_QUANT_GGML, CML_DTYPE_I8, src, k, n, block, wq, scale, NULL),
      CML_STATUS_INVALID_ARGUMENT);
  ASSERT_STATUS_CODE(
      cml_quantize_linear(CML_QUANT_LINEAR, CML_DTYPE_I8, src, k, n, 0, wq, scale, NULL),
      CML_STATUS_INVALID_ARGUMENT);
}

//===--- edge cases ---===//

// K = 0 (x [3, 0], Linear Int8 weights [0, 10], NF4 Uint4 weights [0, 10]): the product is
// empty, so every output is act(bias) on every backend, batch 1 and 3. The native kernel once
// derived the batch as count / K and wrote nothing. (GGML weights cannot have K = 0: a row holds
// at least one block.)
TEST(dense_empty_k_gives_activation_of_bias) {
  static const uint8_t none[1] = {0};
  static const float no_scale[1] = {0};
  for (int s = 0; s < 2; ++s) {
    qt_dense_t d;
    memset(&d, 0, sizeof d);
    cml_quantization_init(&d.q);
    d.q.scheme = s == 0 ? CML_QUANT_LINEAR : CML_QUANT_NF4;
    d.q.block_size = 4;
    d.ws = API_SHAPE(s == 0 ? CML_DTYPE_I8 : CML_DTYPE_U4, 0, 10);
    d.ss = API_SHAPE(CML_DTYPE_F32, 0, 3);
    d.w = none;
    d.scale = no_scale;
    d.zero = s == 0 ? no_scale : NULL;
    d.k = 0;
    d.n = 10;
    d.wref = NULL;  // no k: the reference is act(bias)
    for (size_t c = 0; c < QT_CONFIGS; ++c) {
      for (int64_t m = 1; m <= 3; m += 2) {
        bool skipped;
        ASSERT_TRUE(qt_check_dense(qt_configs[c], &d, m, &skipped));
      }
    }
  }
}

// A Linear Int8 layer x [2, 6] @ [6, 10] whose weights are (k + 2n) % 7 - 3 with scale
// 0.5 + k / 8 per k and block size |block|, on every backend, against the double reference;
// |nb| is the scale's second dim.
static bool qt_block_case(int64_t block, int64_t nb) {
  enum { K = 6, N = 10 };
  static int8_t w[K * N];
  static float scale[K];
  double wref[N * K];
  for (int64_t k = 0; k < K; ++k) {
    scale[k] = 0.5f + (float)k / 8;
    for (int64_t n = 0; n < N; ++n) {
      w[k * N + n] = (int8_t)((k + 2 * n) % 7 - 3);
      wref[n * K + k] = (double)w[k * N + n] * scale[k];
    }
  }
  qt_dense_t d;
  memset(&d, 0, sizeof d);
  cml_quantization_init(&d.q);
  d.q.block_size = block;
  d.ws = API_SHAPE(CML_DTYPE_I8, K, N);
  d.ss = API_SHAPE(CML_DTYPE_F32, K, nb);
  d.w = w;
  d.scale = scale;
  d.k = K;
  d.n = N;
  d.wref = wref;
  bool ok = true;
  for (size_t c = 0; c < QT_CONFIGS; ++c) {
    bool skipped;
    ok = qt_check_dense(qt_configs[c], &d, 2, &skipped) && ok;
  }
  return ok;
}

// Block sizes up to INT64_MAX: ceil(N / B) is 1 for any B >= N (it once overflowed to a
// negative count for B near INT64_MAX), so a [K, 1] scale is accepted and [K, 0] rejected; the
// decomposition's broadcast of the scales is [K, 1, min(B, N)] (it was [K, 1, B]: "too large"
// for B = 2^62, 100 MB for B = 2^22 here), with the same results.
TEST(dense_huge_block_size) {
  static const int64_t blocks[] = {10, 11, 4194304, INT64_MAX / 2, INT64_MAX - 1, INT64_MAX};
  for (size_t i = 0; i < sizeof blocks / sizeof *blocks; ++i) {
    if (!qt_block_case(blocks[i], 1)) fprintf(stderr, "  block_size %lld\n", (long long)blocks[i]);
    ASSERT_TRUE(qt_block_case(blocks[i], 1));
  }
  // nb = 0 and 2 are not ceil(10 / B).
  cml_backend_t* be = qt_backend("c");
  ASSERT_TRUE(be != NULL);
  for (int64_t nb = 0; nb <= 2; nb += 2) {
    cml_builder_t* b = NULL;
    ASSERT_STATUS_OK(cml_builder_create(be, "bad", &b));
    cml_function_t* f = cml_builder_main(b);
    cml_shape_t xs = API_SHAPE(CML_DTYPE_F32, 2, 6), ws = API_SHAPE(CML_DTYPE_I8, 6, 10);
    cml_shape_t ss = API_SHAPE(CML_DTYPE_F32, 6, nb);
    cml_quantization_t q;
    cml_quantization_init(&q);
    q.block_size = INT64_MAX;
    cml_value_t x = cml_parameter(f, "x", &xs), w = cml_parameter(f, "w", &ws);
    q.scale = cml_parameter(f, "s", &ss);
    cml_value_t y =
        cml_op_fused_quantized_dense(f, x, w, CML_VALUE_INVALID, &q, CML_ACTIVATION_NONE);
    char msg[1024];
    cml_status_code_t code = api_code_msg(cml_builder_status(b), msg, sizeof msg);
    cml_builder_destroy(b);
    ASSERT_TRUE(y == CML_VALUE_INVALID);
    ASSERT_EQ_INT(code, CML_STATUS_INVALID_ARGUMENT);
    ASSERT_CONTAINS(msg,
                    "must be Float32[6, 1] for weights (Int8)[6, 10] and block_size "
                    "9223372036854775807");
  }
  cml_backend_release(be);
  // The host quantizer: one block per row of 8, symmetric Int8: scale = max |w| / 127 (it once
  // returned OK without writing the scales).
  float src[4 * 8], scale[4];
  int8_t wq[4 * 8];
  for (int i = 0; i < 4 * 8; ++i) src[i] = (float)(i % 17) - 8;
  for (int64_t block = 8; block > 0; block = block == 8 ? INT64_MAX : 0) {
    for (int r = 0; r < 4; ++r) scale[r] = NAN;
    ASSERT_STATUS_OK(
        cml_quantize_linear(CML_QUANT_LINEAR, CML_DTYPE_I8, src, 4, 8, block, wq, scale, NULL));
    for (int r = 0; r < 4; ++r) {
      float amax = 0;
      for (int c = 0; c < 8; ++c) amax = fmaxf(amax, fabsf(src[r * 8 + c]));
      ASSERT_EQ_DBL(scale[r], amax / 127.0f);
      for (int c = 0; c < 8; ++c) {
        ASSERT_EQ_INT(wq[r * 8 + c], (int)roundf(src[r * 8 + c] / scale[r]));
      }
    }
  }
}

// A Q8_0 table of 5 rows looked up with Uint64 indices past INT64_MAX: the decomposition
// (c:fusion=false, xla:cpu) clamps them to the last row as Gather does with Uint64 indices (it
// once converted them to Int64 first, wrapping them negative and clamping to row 0), and the
// native kernel reports the index's unsigned value (it once printed -1).
TEST(embedding_uint64_indices_past_int64) {
  enum { V = 5, K = 32 };
  float src[V * K], deq[V * K];
  uint8_t data[V * 34];
  for (int i = 0; i < V * K; ++i) src[i] = (float)(i % 13) - 6 + (float)(i / K);
  ASSERT_STATUS_OK(cml_quantize_ggml(CML_GGML_Q8_0, src, V, K, data, sizeof data));
  ASSERT_STATUS_OK(cml_dequantize_ggml(CML_GGML_Q8_0, data, V, K, deq));
  const uint64_t idx[4] = {1ull << 63, UINT64_MAX, 1, (uint64_t)INT64_MAX};
  const int want[4] = {4, 4, 1, 4};
  static const char* const configs[] = {"c:fusion=false", "xla:cpu", "c"};
  for (size_t c = 0; c < 3; ++c) {
    cml_backend_t* be = qt_backend(configs[c]);
    if (!be) continue;
    cml_builder_t* b = NULL;
    ASSERT_STATUS_OK(cml_builder_create(be, "embed", &b));
    cml_function_t* f = cml_builder_main(b);
    cml_shape_t ds = API_SHAPE(CML_DTYPE_U8, V, 34), is = API_SHAPE(CML_DTYPE_U64, 4, 1);
    cml_quantization_t q;
    cml_quantization_init(&q);
    q.scheme = CML_QUANT_GGML;
    q.ggml_type = CML_GGML_Q8_0;
    cml_value_t dv = cml_parameter(f, "d", &ds);
    cml_value_t iv = cml_parameter(f, "i", &is);
    cml_value_t y = cml_op_quantized_embedding_lookup(f, dv, iv, &q);
    cml_executable_t* exe = NULL;
    ASSERT_STATUS_OK(api_finish(b, &y, 1, &exe));
    float out[4 * K];
    char msg[512];
    cml_status_code_t code = api_code_msg(
        api_run(be, exe, (const void* const[]){data, idx}, &(void*){out}), msg, sizeof msg);
    cml_executable_release(exe);
    cml_backend_release(be);
    if (c == 2) {
      ASSERT_EQ_INT(code, CML_STATUS_OUT_OF_RANGE);
      ASSERT_CONTAINS(msg, "index 9223372036854775808 (position 0 of indices (Uint64)[4, 1])");
      continue;
    }
    if (code != CML_STATUS_OK) fprintf(stderr, "%s: %s\n", configs[c], msg);
    ASSERT_EQ_INT(code, CML_STATUS_OK);
    for (int i = 0; i < 4; ++i) {
      if (memcmp(out + i * K, deq + want[i] * K, sizeof(float) * K) != 0) {
        fprintf(stderr, "%s: index %llu: not row %d\n", configs[c], (unsigned long long)idx[i],
                want[i]);
      }
      ASSERT_TRUE(memcmp(out + i * K, deq + want[i] * K, sizeof(float) * K) == 0);
    }
  }
}

// A table of no rows (data [0, 34] Q8_0): empty indices [0, 1] give an empty [0, 32] output
// on every backend (the decomposition once failed in Gather), and indices [2, 1] fail at build
// time with a message naming the op, the format and both shapes on every backend (the c kernel
// once failed only at run time).
TEST(embedding_empty_table) {
  static const char* const configs[] = {"c", "c:fusion=false", "xla:cpu"};
  for (size_t c = 0; c < 3; ++c) {
    cml_backend_t* be = qt_backend(configs[c]);
    if (!be) continue;
    for (int64_t count = 0; count <= 2; count += 2) {
      cml_builder_t* b = NULL;
      ASSERT_STATUS_OK(cml_builder_create(be, "embed", &b));
      cml_function_t* f = cml_builder_main(b);
      cml_shape_t ds = API_SHAPE(CML_DTYPE_U8, 0, 34), is = API_SHAPE(CML_DTYPE_I32, count, 1);
      cml_quantization_t q;
      cml_quantization_init(&q);
      q.scheme = CML_QUANT_GGML;
      q.ggml_type = CML_GGML_Q8_0;
      cml_value_t dv = cml_parameter(f, "d", &ds);
      cml_value_t iv = cml_parameter(f, "i", &is);
      cml_value_t y = cml_op_quantized_embedding_lookup(f, dv, iv, &q);
      if (count > 0) {
        char msg[1024];
        cml_status_code_t code = api_code_msg(cml_builder_status(b), msg, sizeof msg);
        cml_builder_destroy(b);
        ASSERT_TRUE(y == CML_VALUE_INVALID);
        ASSERT_EQ_INT(code, CML_STATUS_INVALID_ARGUMENT);
        ASSERT_CONTAINS(msg,
                        "QuantizedEmbeddingLookup(GGML Q8_0): data (Uint8)[0, 34] has no "
                        "rows, so indices (Int32)[2, 1] cannot be looked up");
        continue;
      }
      cml_executable_t* exe = NULL;
      cml_status_t st = api_finish(b, &y, 1, &exe);
      if (st != CML_OK) fprintf(stderr, "%s: %s\n", configs[c], cml_status_message(st));
      ASSERT_STATUS_OK(st);
      ASSERT_EQ_INT(cml_executable_output_shape(exe, 0)->rank, 2);
      ASSERT_EQ_INT(cml_executable_output_shape(exe, 0)->dims[0], 0);
      ASSERT_EQ_INT(cml_executable_output_shape(exe, 0)->dims[1], 32);
      static const uint8_t no_data[1] = {0};
      static const int32_t no_idx[1] = {0};
      float out[1];
      ASSERT_STATUS_OK(api_run(be, exe, (const void* const[]){no_data, no_idx}, &(void*){out}));
      cml_executable_release(exe);
    }
    cml_backend_release(be);
  }
}

// Same value, or both NaN.
static bool qt_same_or_nan(float a, float b) { return a == b || (isnan(a) && isnan(b)); }

// Batch 1 with one infinite activation and finite weights: every output is +-inf (or NaN where
// the weight under the infinity is 0, or where infinities of both signs meet), exactly as the
// decomposition computes it, on every format and kernel. The SIMD row kernels multiply the
// offsets of Q4_1, Q5_1, Q2_K, Q4_K and Q5_K by sums of activations, which once made inf - inf =
// NaN where the decomposition gives +-inf; such rows now take the scalar kernel. Finite rows
// keep the SIMD kernels (checked by the other tests).
TEST(dense_infinite_activation_matches_decomposition) {
  const int64_t n = 13, k = 512;
  float* w = malloc(sizeof(float) * (size_t)(n * k));
  uint8_t* q = malloc((size_t)(n * k * 2));
  for (int64_t i = 0; i < n * k; ++i) w[i] = (float)qt_normal();
  static const char* const cfgs[] = {"c", "c:avx512=false", "c:quant_int8=true",
                                     "c:quant_int8=true,avx512=false", "c:avx2=false,avx512=false"};
  for (int t = 0; t < CML_GGML_TYPE_COUNT; ++t) {
    const cml_ggml_type_t type = (cml_ggml_type_t)t;
    const int64_t rb = cml_ggml_row_bytes(type, k);
    ASSERT_STATUS_OK(cml_quantize_ggml(type, w, n, k, q, (size_t)(n * rb)));
    qt_dense_t d = qt_dense_ggml(type, q, n, k);
    for (int sign = -1; sign <= 1; sign += 2) {
      float x[512], want[13], got[13];
      for (int64_t i = 0; i < k; ++i) x[i] = (float)qt_uniform(-1, 1);
      x[77] = sign * INFINITY;
      ASSERT_TRUE(qt_gemv("c:fusion=false", &d, x, want));
      int inf = 0;
      for (int64_t j = 0; j < n; ++j) inf += isinf(want[j]) != 0;
      ASSERT_TRUE(inf > n / 2);  // mostly +-inf, not NaN: the case is meaningful
      for (size_t c = 0; c < sizeof cfgs / sizeof *cfgs; ++c) {
        ASSERT_TRUE(qt_gemv(cfgs[c], &d, x, got));
        for (int64_t j = 0; j < n; ++j) {
          if (!qt_same_or_nan(got[j], want[j])) {
            fprintf(stderr, "%s %s x[77] = %cinf: y[%lld] = %g, decomposition %g\n", cfgs[c],
                    cml_ggml_type_name(type), sign < 0 ? '-' : '+', (long long)j, got[j], want[j]);
          }
          ASSERT_TRUE(qt_same_or_nan(got[j], want[j]));
        }
      }
    }
  }
  free(w);
  free(q);
}

// relu of a NaN product is NaN on every path, as in FusedDense and the decomposition
// (max(x, 0) there): the native kernels' epilogue once returned 0 for it.
TEST(dense_relu_keeps_nan) {
  const int64_t n = 9, k = 256;
  float* w = malloc(sizeof(float) * (size_t)(n * k));
  uint8_t* q = malloc((size_t)(n * k * 2));
  for (int64_t i = 0; i < n * k; ++i) w[i] = (float)qt_normal();
  static const char* const cfgs[] = {"c",
                                     "c:avx512=false",
                                     "c:avx2=false,avx512=false",
                                     "c:fusion=false",
                                     "c:reference=true",
                                     "c:quant_int8=true"};
  for (int t = 0; t < CML_GGML_TYPE_COUNT; ++t) {
    const cml_ggml_type_t type = (cml_ggml_type_t)t;
    const int64_t rb = cml_ggml_row_bytes(type, k);
    ASSERT_STATUS_OK(cml_quantize_ggml(type, w, n, k, q, (size_t)(n * rb)));
    qt_dense_t d = qt_dense_ggml(type, q, n, k);
    float x[256], y[9];
    for (int64_t i = 0; i < k; ++i) x[i] = (float)qt_uniform(-1, 1);
    x[100] = NAN;
    for (size_t c = 0; c < sizeof cfgs / sizeof *cfgs; ++c) {
      ASSERT_TRUE(qt_gemv_act(cfgs[c], &d, x, y, CML_ACTIVATION_RELU));
      for (int64_t j = 0; j < n; ++j) {
        if (!isnan(y[j])) {
          fprintf(stderr, "%s %s: relu y[%lld] = %g\n", cfgs[c], cml_ggml_type_name(type),
                  (long long)j, y[j]);
        }
        ASSERT_TRUE(isnan(y[j]));
      }
    }
  }
  free(w);
  free(q);
}

// The int8 path on very small activations. x * 2^-60 is still quantized (the int8 result
// differs from the f32 path's) and gives x's product times 2^-60 within the int8 bound (a few
// 1e-4 of sum |x w| here). x * 2^-130, where 127 / max |x| overflows (every value once rounded
// to +-127: errors of 6-7e-2), and anything below 2^-64 run the f32 kernels: the same bits as
// the f32 path.
TEST(int8_activations_below_the_scale_range) {
  const int64_t n = 9, k = 512;
  float* w = malloc(sizeof(float) * (size_t)(n * k));
  float* wd = malloc(sizeof(float) * (size_t)(n * k));
  uint8_t* q = malloc((size_t)(n * k * 2));
  for (int64_t i = 0; i < n * k; ++i) w[i] = (float)qt_normal();
  float x[512], xs[512], xt[512], y[9], y32[9];
  for (int64_t i = 0; i < k; ++i) {
    x[i] = (float)qt_uniform(-1, 1);
    xs[i] = ldexpf(x[i], -60);
    xt[i] = ldexpf(x[i], -130);
  }
  static const cml_ggml_type_t types[] = {CML_GGML_Q4_0, CML_GGML_Q8_0, CML_GGML_Q4_K,
                                          CML_GGML_Q6_K};
  for (size_t t = 0; t < sizeof types / sizeof *types; ++t) {
    const cml_ggml_type_t type = types[t];
    const int64_t rb = cml_ggml_row_bytes(type, k);
    ASSERT_STATUS_OK(cml_quantize_ggml(type, w, n, k, q, (size_t)(n * rb)));
    ASSERT_STATUS_OK(cml_dequantize_ggml(type, q, n, k, wd));
    qt_dense_t d = qt_dense_ggml(type, q, n, k);
    static const char* const cfgs[] = {"c:quant_int8=true", "c:quant_int8=true,avx512=false"};
    static const char* const f32[] = {"c", "c:avx512=false"};
    for (size_t c = 0; c < 2; ++c) {
      ASSERT_TRUE(qt_gemv(cfgs[c], &d, xs, y));
      ASSERT_TRUE(qt_gemv(f32[c], &d, xs, y32));
      int differ = 0;
      for (int64_t j = 0; j < n; ++j) {
        double want = 0, mag = 0;
        for (int64_t i = 0; i < k; ++i) {
          want += (double)wd[j * k + i] * x[i];
          mag += fabs((double)wd[j * k + i] * x[i]);
        }
        const double got = ldexp((double)y[j], 60);
        if (!(fabs(got - want) <= 4e-3 * mag)) {
          fprintf(stderr, "%s %s: y[%lld] * 2^60 = %.6g, want %.6g (sum |x w| %.4g)\n", cfgs[c],
                  cml_ggml_type_name(type), (long long)j, got, want, mag);
        }
        ASSERT_TRUE(fabs(got - want) <= 4e-3 * mag);
        differ += y[j] != y32[j];
      }
      // The int8 kernels ran (where there are any: the scalar kernels ignore the option).
      cml_backend_t* probe = qt_backend(cfgs[c]);
      ASSERT_TRUE(probe != NULL);
      const bool simd = strstr(cml_backend_config(probe), "avx2=true") != NULL;
      cml_backend_release(probe);
      if (simd) ASSERT_TRUE(differ > 0);
      ASSERT_TRUE(qt_gemv(cfgs[c], &d, xt, y));
      ASSERT_TRUE(qt_gemv(f32[c], &d, xt, y32));
      ASSERT_TRUE(memcmp(y, y32, sizeof y) == 0);
    }
  }
  free(w);
  free(wd);
  free(q);
}

// Blocks where ggml's C quantizer and the gguf package differ, quantized as gguf does (the
// expected bytes worked out from gguf/quants.py): a block of -0.0 stores d = +0.0 (numpy's
// argmax picks x[0] = -0.0, and -0.0 / -8 = +0.0; ggml's loop starts from +0.0 and stores
// -0.0), with every q at the zero code; a block holding a NaN stores d = NaN (0x7E00; Q4_1,
// Q5_1: m too) and every q 0, where ggml skips the NaN.
TEST(quantize_negative_zero_and_nan_blocks_match_gguf) {
  float negz[32], nan1[32];
  for (int i = 0; i < 32; ++i) {
    negz[i] = -0.0f;
    nan1[i] = (float)(i % 5) - 2;
  }
  nan1[5] = NAN;
  static const struct {
    cml_ggml_type_t type;
    int zero_code;  // the q of 0 (the offset), packed as the format stores it
  } cases[] = {{CML_GGML_Q4_0, 8},
               {CML_GGML_Q5_0, 16},
               {CML_GGML_Q8_0, 0},
               {CML_GGML_Q4_1, 0},
               {CML_GGML_Q5_1, 0}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; ++i) {
    const cml_ggml_type_t type = cases[i].type;
    const size_t bytes = (size_t)cml_ggml_type_bytes_per_block(type);
    const bool has_m = type == CML_GGML_Q4_1 || type == CML_GGML_Q5_1;
    const bool five = type == CML_GGML_Q5_0 || type == CML_GGML_Q5_1;
    uint8_t got[34], want[34];
    // -0.0: d = +0.0; Q4_1 / Q5_1: m = min = -0.0 (0x8000) and q = 0.
    memset(want, 0, sizeof want);
    if (has_m) want[3] = 0x80;
    const size_t qs_at = 2 + (has_m ? 2 : 0) + (five ? 4 : 0);
    if (cases[i].zero_code == 8) memset(want + qs_at, 0x88, 16);
    if (cases[i].zero_code == 16) memset(want + 2, 0xFF, 4);  // q = 16: every 5th bit set
    ASSERT_STATUS_OK(cml_quantize_ggml(type, negz, 1, 32, got, bytes));
    if (memcmp(got, want, bytes) != 0) {
      fprintf(stderr, "%s -0.0: d = 0x%02x%02x\n", cml_ggml_type_name(type), got[1], got[0]);
    }
    ASSERT_TRUE(memcmp(got, want, bytes) == 0);
    // NaN: d = 0x7E00 (m too), q = 0.
    memset(want, 0, sizeof want);
    want[1] = 0x7E;
    if (has_m) want[3] = 0x7E;
    ASSERT_STATUS_OK(cml_quantize_ggml(type, nan1, 1, 32, got, bytes));
    if (memcmp(got, want, bytes) != 0) {
      fprintf(stderr, "%s NaN: d = 0x%02x%02x, byte %zu = 0x%02x\n", cml_ggml_type_name(type),
              got[1], got[0], qs_at, got[qs_at]);
    }
    ASSERT_TRUE(memcmp(got, want, bytes) == 0);
    // A block whose range is below about 2.4e-38: 1 / d overflows, d rounds to 0 in f16, and
    // numpy casts the infinite x / d to q = 0 (gguf 0.19.0: Q4_0 / Q5_0 / Q8_0 all zero
    // bytes; Q4_1 / Q5_1 store m = -0.0, the f16 of the block's tiny negative minimum).
    float tiny[32];
    for (int j = 0; j < 32; ++j) tiny[j] = ((float)j - 15.5f) * 1e-39f;
    memset(want, 0, sizeof want);
    if (has_m) want[3] = 0x80;
    ASSERT_STATUS_OK(cml_quantize_ggml(type, tiny, 1, 32, got, bytes));
    if (memcmp(got, want, bytes) != 0) {
      fprintf(stderr, "%s tiny block: byte %zu = 0x%02x\n", cml_ggml_type_name(type), qs_at,
              got[qs_at]);
    }
    ASSERT_TRUE(memcmp(got, want, bytes) == 0);
  }
}

// A k whose row size overflows int64 is named as such, not as a k that is no multiple of the
// block (9223372036854775776 is 32 * (2^58 - 1)).
// IQ4_NL and the k-quants: a block holding a NaN or an infinity dequantizes to NaN in full (the
// fits rounded a NaN to a finite code, and an infinity zeroed IQ4_NL's block); the blocks
// around it keep their values.
TEST(quantize_non_finite_blocks_of_own_fits_are_nan) {
  static const cml_ggml_type_t types[] = {CML_GGML_IQ4_NL, CML_GGML_Q2_K, CML_GGML_Q3_K,
                                          CML_GGML_Q4_K,   CML_GGML_Q5_K, CML_GGML_Q6_K};
  static const float bad[] = {NAN, INFINITY, -INFINITY};
  enum { kBlocks = 3 };
  float src[256 * kBlocks], back[256 * kBlocks];
  uint8_t q[210 * kBlocks];
  for (size_t t = 0; t < sizeof types / sizeof *types; ++t) {
    const cml_ggml_type_t type = types[t];
    const int64_t vpb = cml_ggml_type_values_per_block(type), k = vpb * kBlocks;
    for (size_t v = 0; v < sizeof bad / sizeof *bad; ++v) {
      for (int64_t i = 0; i < k; ++i) src[i] = (float)((i * 7) % 19 - 9) / 9.0f;
      src[vpb + 3] = bad[v];  // in the middle block
      ASSERT_STATUS_OK(cml_quantize_ggml(type, src, 1, k, q, sizeof q));
      ASSERT_STATUS_OK(cml_dequantize_ggml(type, q, 1, k, back));
      int finite_in_bad = 0;
      double worst = 0;
      for (int64_t i = 0; i < k; ++i) {
        if (i >= vpb && i < 2 * vpb) {
          finite_in_bad += isnan(back[i]) ? 0 : 1;
        } else {
          worst = fmax(worst, fabs((double)back[i] - src[i]));
        }
      }
      if (finite_in_bad != 0 || !(worst < 0.5)) {
        fprintf(stderr,
                "%s with %g: %d values of the bad block not NaN, worst error %g elsewhere\n",
                cml_ggml_type_name(type), (double)bad[v], finite_in_bad, worst);
      }
      ASSERT_EQ_INT(finite_in_bad, 0);
      ASSERT_TRUE(worst < 0.5);
    }
  }
}

TEST(quantize_row_size_overflow_message) {
  float src[32] = {0};
  uint8_t dst[34];
  char msg[512];
  const int64_t k = INT64_MAX / 32 * 32;
  ASSERT_EQ_INT(
      api_code_msg(cml_quantize_ggml(CML_GGML_Q8_0, src, 1, k, dst, sizeof dst), msg, sizeof msg),
      CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(msg, "cml_quantize_ggml: the row size of k 9223372036854775776 Q8_0 values");
  ASSERT_CONTAINS(msg, "overflows int64");
  ASSERT_TRUE(strstr(msg, "multiple") == NULL);
  ASSERT_EQ_INT(api_code_msg(cml_dequantize_ggml(CML_GGML_Q4_0, dst, 1, k, src), msg, sizeof msg),
                CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(msg, "cml_dequantize_ggml: the row size of k");
  ASSERT_EQ_INT(
      api_code_msg(cml_quantize_ggml(CML_GGML_Q8_0, src, 1, 33, dst, sizeof dst), msg, sizeof msg),
      CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(msg, "k 33 is not a positive multiple of Q8_0's block of 32 values");
  // rows x k past 2^55 values: refused by both directions (dequantize returned OK having done
  // nothing: its block count overflowed), and by the Linear quantizer (it walked past |src|).
  ASSERT_EQ_INT(
      api_code_msg(cml_dequantize_ggml(CML_GGML_Q4_0, dst, (int64_t)1 << 33, (int64_t)1 << 36, src),
                   msg, sizeof msg),
      CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(msg, "more than 2^55 values");
  float scale[4];
  int8_t w8[4];
  ASSERT_EQ_INT(api_code_msg(cml_quantize_linear(CML_QUANT_LINEAR, CML_DTYPE_I8, src,
                                                 (int64_t)1 << 62, 4, 4, w8, scale, NULL),
                             msg, sizeof msg),
                CML_STATUS_INVALID_ARGUMENT);
  ASSERT_CONTAINS(msg, "more than 2^55 elements");
}

// Batch-1 rows whose block scale or offset decodes to infinity: a Q4_1 block with m = +inf (every
// weight +inf, activations of both signs: inf - inf = NaN) and a Q4_0 block with d = +inf and one
// code 8 (that weight (8 - 8) * inf = NaN). The row kernels folded offsets and zero codes apart
// and gave +-inf; every config now gives NaN, as the decomposition does.
static float qt_run_row(const char* config, cml_ggml_type_t type, const uint8_t* w,
                        int64_t row_bytes, const float* x, int64_t k) {
  cml_backend_t* be = NULL;
  cml_builder_t* b = NULL;
  cml_executable_t* exe = NULL;
  float y = 12345;
  if (cml_backend_new_with_config(config, &be) != CML_OK) return y;
  if (cml_builder_create(be, "inf_scale", &b) == CML_OK) {
    cml_function_t* f = cml_builder_main(b);
    cml_shape_t xs = API_SHAPE(CML_DTYPE_F32, 1, k), ws = API_SHAPE(CML_DTYPE_U8, 1, row_bytes);
    cml_value_t xv = cml_parameter(f, "x", &xs), wv = cml_parameter(f, "w", &ws);
    cml_quantization_t q;
    cml_quantization_init(&q);
    q.scheme = CML_QUANT_GGML;
    q.ggml_type = type;
    cml_value_t out =
        cml_op_fused_quantized_dense(f, xv, wv, CML_VALUE_INVALID, &q, CML_ACTIVATION_NONE);
    if (api_finish(b, &out, 1, &exe) == CML_OK) {
      cml_status_t st = api_run(be, exe, (const void*[]){x, w}, (void*[]){&y});
      cml_status_free(st);
    }
    cml_executable_release(exe);
  }
  cml_backend_release(be);
  return y;
}

TEST(batch1_rows_with_infinite_block_scales_are_nan) {
  float x[64];
  for (int i = 0; i < 64; ++i) x[i] = (i % 2) ? 0.5f : -0.25f;
  uint8_t q41[20] = {0x00, 0x3c, 0x00, 0x7c};  // d = 1, m = +inf
  memset(q41 + 4, 0x11, 16);
  uint8_t q40[36] = {0};  // block 0: d = 1, codes 9; block 1: d = +inf, codes 9 but one 8
  q40[1] = 0x3c;
  memset(q40 + 2, 0x99, 16);
  q40[19] = 0x7c;
  memset(q40 + 20, 0x99, 16);
  q40[20] = 0x98;
  static const char* const cfgs[] = {"c", "c:avx512=false", "c:quant_int8=true", "c:fusion=false"};
  for (size_t i = 0; i < sizeof cfgs / sizeof *cfgs; ++i) {
    ASSERT_TRUE(isnan(qt_run_row(cfgs[i], CML_GGML_Q4_1, q41, 20, x, 32)));
    ASSERT_TRUE(isnan(qt_run_row(cfgs[i], CML_GGML_Q4_0, q40, 36, x, 64)));
  }
}

// The Linear quantizer on blocks it used to get wrong: a NaN was skipped by fminf / fmaxf and
// came back as a finite weight; +-3e38 made (hi - lo) overflow to an infinite scale (every
// weight NaN). Now a non-finite block is scale NaN (it dequantizes to NaN), and the range is
// taken in double.
TEST(quantize_linear_non_finite_and_extreme_blocks) {
  const float nan_block[4] = {NAN, 1, 2, 3}, big[4] = {3e38f, -3e38f, 1, 0};
  float scale[1], zp[1];
  int8_t q[4];
  ASSERT_STATUS_OK(
      cml_quantize_linear(CML_QUANT_LINEAR, CML_DTYPE_I8, nan_block, 1, 4, 4, q, scale, NULL));
  ASSERT_TRUE(isnan(scale[0]));
  for (int i = 0; i < 4; ++i) ASSERT_EQ_INT(q[i], 0);
  ASSERT_STATUS_OK(cml_quantize_linear(CML_QUANT_LINEAR, CML_DTYPE_I8, big, 1, 4, 4, q, scale, zp));
  ASSERT_TRUE(isfinite(scale[0]) && isfinite(zp[0]));
  // w = q * scale + zero_point: the two extremes come back within a step of themselves.
  const double w0 = q[0] * (double)scale[0] + zp[0], w1 = q[1] * (double)scale[0] + zp[0];
  ASSERT_TRUE(fabs(w0 - 3e38) <= scale[0]);
  ASSERT_TRUE(fabs(w1 + 3e38) <= scale[0]);
}

//===--- build-time errors ---===//

typedef struct qt_bad_t {
  const char* what;
  cml_shape_t xs, ws, ss, zs, bs;  // dtype INVALID: absent
  cml_quant_scheme_t scheme;
  cml_ggml_type_t type;
  int64_t block_size, block_axis;
  int activation;
  bool null_q;
  const char* expect;
} qt_bad_t;

TEST(dense_bad_input_names_op_shapes_and_format) {
  const cml_shape_t none = {0};
  const cml_shape_t x256 = API_SHAPE(CML_DTYPE_F32, 2, 256);
  const cml_shape_t x8 = API_SHAPE(CML_DTYPE_F32, 3, 8);
  const cml_shape_t w8 = API_SHAPE(CML_DTYPE_I8, 8, 10);
  const cml_shape_t s8 = API_SHAPE(CML_DTYPE_F32, 8, 3);
  const qt_bad_t cases[] = {
      {"null quantization", x8, w8, s8, none, none, 0, 0, 4, 1, 0, true, "NULL quantization"},
      {"unknown scheme", x8, w8, s8, none, none, (cml_quant_scheme_t)7, 0, 4, 1, 0, false,
       "unknown quantization scheme 7"},
      {"unknown ggml type", x256, API_SHAPE(CML_DTYPE_U8, 5, 144), none, none, none, CML_QUANT_GGML,
       (cml_ggml_type_t)11, 0, 1, 0, false, "unknown GGML type 11 for weights (Uint8)[5, 144]"},
      {"unknown activation", x8, w8, s8, none, none, 0, 0, 4, 1, 9, false, "unknown activation 9"},
      {"x f64", API_SHAPE(CML_DTYPE_F64, 3, 8), w8, s8, none, none, 0, 0, 4, 1, 0, false,
       "FusedQuantizedDense(Linear): x (Float64)[3, 8] must be Float32"},
      {"ggml row bytes", x256, API_SHAPE(CML_DTYPE_U8, 5, 145), none, none, none, CML_QUANT_GGML,
       CML_GGML_Q4_K, 0, 1, 0, false,
       "FusedQuantizedDense(GGML Q4_K): weights (Uint8)[5, 145]: bytes_per_row 145 is not a "
       "positive multiple of the 144 bytes"},
      {"ggml weights dtype", x256, API_SHAPE(CML_DTYPE_I8, 5, 144), none, none, none,
       CML_QUANT_GGML, CML_GGML_Q4_K, 0, 1, 0, false, "must be [rows, bytes_per_row] Uint8"},
      {"ggml k mismatch", x256, API_SHAPE(CML_DTYPE_U8, 5, 288), none, none, none, CML_QUANT_GGML,
       CML_GGML_Q4_K, 0, 1, 0, false, "last dim 256 must match K=512"},
      {"ggml with scale", x256, API_SHAPE(CML_DTYPE_U8, 5, 144), s8, none, none, CML_QUANT_GGML,
       CML_GGML_Q4_K, 0, 1, 0, false, "scale and zero_point must be CML_VALUE_INVALID"},
      {"scale shape", x8, w8, API_SHAPE(CML_DTYPE_F32, 8, 2), none, none, 0, 0, 4, 1, 0, false,
       "scale (Float32)[8, 2] must be Float32[8, 3]"},
      {"scale dtype", x8, w8, API_SHAPE(CML_DTYPE_F16, 8, 3), none, none, 0, 0, 4, 1, 0, false,
       "must be Float32[8, 3]"},
      {"no scale", x8, w8, none, none, none, 0, 0, 4, 1, 0, false,
       "a scale Float32[8, 3] is "
       "required"},
      {"block size 0", x8, w8, s8, none, none, 0, 0, 0, 1, 0, false, "block_size 0 must be >= 1"},
      {"block axis", x8, w8, s8, none, none, 0, 0, 4, 0, 0, false, "only block_axis=1"},
      {"weights k", x8, API_SHAPE(CML_DTYPE_I8, 7, 10), s8, none, none, 0, 0, 4, 1, 0, false,
       "weights (Int8)[7, 10] must be [8, N]"},
      {"weights float", x8, API_SHAPE(CML_DTYPE_F32, 8, 10), s8, none, none, 0, 0, 4, 1, 0, false,
       "must be [8, N] of Int8"},
      {"nf4 int2", x8, API_SHAPE(CML_DTYPE_I2, 8, 10), s8, none, none, CML_QUANT_NF4, 0, 4, 1, 0,
       false, "FusedQuantizedDense(NF4): weights (Int2)[8, 10]"},
      {"nf4 zero point", x8, w8, s8, s8, none, CML_QUANT_NF4, 0, 4, 1, 0, false,
       "zero_point must be CML_VALUE_INVALID for the NF4 scheme"},
      {"zero point shape", x8, w8, s8, API_SHAPE(CML_DTYPE_F32, 8, 4), none, 0, 0, 4, 1, 0, false,
       "zero_point (Float32)[8, 4] must have the scale's shape"},
      {"bias shape", x8, w8, s8, none, API_SHAPE(CML_DTYPE_F32, 9), 0, 0, 4, 1, 0, false,
       "bias (Float32)[9] must be Float32[10]"},
  };
  cml_backend_t* be = qt_backend("c");
  ASSERT_TRUE(be != NULL);
  for (size_t i = 0; i < sizeof cases / sizeof *cases; ++i) {
    const qt_bad_t* c = &cases[i];
    cml_builder_t* b = NULL;
    ASSERT_STATUS_OK(cml_builder_create(be, "bad", &b));
    cml_function_t* f = cml_builder_main(b);
    cml_quantization_t q;
    cml_quantization_init(&q);
    q.scheme = c->scheme;
    q.ggml_type = c->type;
    q.block_size = c->block_size;
    q.block_axis = c->block_axis;
    cml_value_t x = cml_parameter(f, "x", &c->xs);
    cml_value_t w = cml_parameter(f, "w", &c->ws);
    if (c->ss.dtype) q.scale = cml_parameter(f, "s", &c->ss);
    if (c->zs.dtype) q.zero_point = cml_parameter(f, "z", &c->zs);
    cml_value_t bias = c->bs.dtype ? cml_parameter(f, "b", &c->bs) : CML_VALUE_INVALID;
    cml_value_t y = cml_op_fused_quantized_dense(f, x, w, bias, c->null_q ? NULL : &q,
                                                 (cml_activation_t)c->activation);
    char msg[1024];
    cml_status_code_t code = api_code_msg(cml_builder_status(b), msg, sizeof msg);
    if (code != CML_STATUS_INVALID_ARGUMENT || !strstr(msg, c->expect)) {
      fprintf(stderr, "case %s: got %d \"%s\"\n", c->what, (int)code, msg);
    }
    cml_builder_destroy(b);
    ASSERT_TRUE(y == CML_VALUE_INVALID);
    ASSERT_EQ_INT(code, CML_STATUS_INVALID_ARGUMENT);
    ASSERT_CONTAINS(msg, c->expect);
    ASSERT_CONTAINS(msg, "FusedQuantizedDense");
  }
  cml_backend_release(be);
}

TEST(embedding_bad_input) {
  cml_backend_t* be = qt_backend("c");
  ASSERT_TRUE(be != NULL);
  struct {
    cml_shape_t ds, is;
    cml_quant_scheme_t scheme;
    cml_status_code_t code;
    const char* expect;
  } cases[] = {
      {API_SHAPE(CML_DTYPE_U8, 4, 18), API_SHAPE(CML_DTYPE_I32, 3, 1), CML_QUANT_LINEAR,
       CML_STATUS_UNIMPLEMENTED, "only the GGML scheme is supported, got Linear"},
      {API_SHAPE(CML_DTYPE_U8, 4, 19), API_SHAPE(CML_DTYPE_I32, 3, 1), CML_QUANT_GGML,
       CML_STATUS_INVALID_ARGUMENT, "QuantizedEmbeddingLookup(GGML Q4_0): data (Uint8)[4, 19]"},
      {API_SHAPE(CML_DTYPE_U8, 4, 18), API_SHAPE(CML_DTYPE_F32, 3, 1), CML_QUANT_GGML,
       CML_STATUS_INVALID_ARGUMENT, "indices (Float32)[3, 1] must have an integer dtype"},
      {API_SHAPE(CML_DTYPE_U8, 4, 18), API_SHAPE(CML_DTYPE_I32, 3, 2), CML_QUANT_GGML,
       CML_STATUS_INVALID_ARGUMENT, "last dim 1"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; ++i) {
    cml_builder_t* b = NULL;
    ASSERT_STATUS_OK(cml_builder_create(be, "bad", &b));
    cml_function_t* f = cml_builder_main(b);
    cml_quantization_t q;
    cml_quantization_init(&q);
    q.scheme = cases[i].scheme;
    q.block_size = 1;
    cml_value_t dv = cml_parameter(f, "d", &cases[i].ds);
    cml_value_t iv = cml_parameter(f, "i", &cases[i].is);
    cml_value_t y = cml_op_quantized_embedding_lookup(f, dv, iv, &q);
    char msg[1024];
    cml_status_code_t code = api_code_msg(cml_builder_status(b), msg, sizeof msg);
    cml_builder_destroy(b);
    if (!strstr(msg, cases[i].expect)) fprintf(stderr, "case %zu: \"%s\"\n", i, msg);
    ASSERT_TRUE(y == CML_VALUE_INVALID);
    ASSERT_EQ_INT(code, cases[i].code);
    ASSERT_CONTAINS(msg, cases[i].expect);
  }
  cml_backend_release(be);
}

// The c backend advertises both ops unless fusion is off or it runs its reference kernels; a
// native build records one node, a decomposed one none.
TEST(capabilities_follow_fusion_option) {
  cml_backend_t* on = qt_backend("c");
  cml_backend_t* off = qt_backend("c:fusion=false");
  cml_backend_t* ref = qt_backend("c:reference=true");
  ASSERT_TRUE(on && off && ref);
  const cml_op_t ops[2] = {CML_OP_FUSED_QUANTIZED_DENSE, CML_OP_QUANTIZED_EMBEDDING_LOOKUP};
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(cml_capabilities_has_op(cml_backend_capabilities(on), ops[i]));
    ASSERT_FALSE(cml_capabilities_has_op(cml_backend_capabilities(off), ops[i]));
    ASSERT_FALSE(cml_capabilities_has_op(cml_backend_capabilities(ref), ops[i]));
  }
  cml_backend_release(on);
  cml_backend_release(off);
  cml_backend_release(ref);
}

// The AVX512-VNNI kernels called directly with both prefetch choices (into L2, and into L1 on
// CPUs whose L1 data cache is at least CMLC_QUANT_PREFETCH_L1_MIN: two instantiations of the
// row loops) on every format they take, 4096-value rows (the streaming shape) and 4096 + one
// block, 3 and 83 rows: both give the same bits (prefetches never change a result), and each
// output is within 1e-5 of sum |x| * max |w| of the double product of the dequantized weights
// and the quantized activations (xq * dx, as prepared here), which the kernels compute exactly
// in integers before their f32 scaling. Skipped without AVX512-VNNI.
TEST(int8_vnni_prefetch_variants_same_bits) {
#if defined(CMLC_HAVE_X86_64)
  cmlc_cpu_features_t cpu;
  cmlc_cpu_detect(&cpu);
  if (!cpu.avx512_vnni) {
    fprintf(stderr, "  (skipped: the CPU has no AVX512-VNNI)\n");
    return;
  }
  static const cml_ggml_type_t types[] = {CML_GGML_Q4_0, CML_GGML_Q4_K, CML_GGML_Q6_K};
  static const int64_t ks[] = {4096, 4096 + 256};
  static const int64_t ns[] = {3, 83};
  for (size_t ti = 0; ti < 3; ++ti) {
    const cml_ggml_type_t type = types[ti];
    ASSERT_TRUE(cmlc_quant_vnni_supports(type));
    const int group = type == CML_GGML_Q4_K ? 256 : 32;  // as the c backend quantizes them
    for (size_t ki = 0; ki < 2; ++ki) {
      for (size_t ni = 0; ni < 2; ++ni) {
        const int64_t k = ks[ki], n = ns[ni], rb = cml_ggml_row_bytes(type, k);
        float* w = malloc(sizeof(float) * (size_t)(n * k));
        float* wd = malloc(sizeof(float) * (size_t)(n * k));
        uint8_t* q = malloc((size_t)(n * rb));
        float* x = malloc(sizeof(float) * (size_t)k);
        int8_t* xq = malloc((size_t)k);
        float* xd = malloc(sizeof(float) * (size_t)(k / 32));
        float* xs16 = calloc((size_t)(k / 16), sizeof(float));
        void* layout = aligned_alloc(64, (cmlc_quant_vnni_bytes(type, k) + 63) / 64 * 64);
        float* y2 = malloc(sizeof(float) * (size_t)n);
        float* y1 = malloc(sizeof(float) * (size_t)n);
        ASSERT_TRUE(w && wd && q && x && xq && xd && xs16 && layout && y1 && y2);
        for (int64_t i = 0; i < n * k; ++i) w[i] = (float)qt_normal();
        ASSERT_STATUS_OK(cml_quantize_ggml(type, w, n, k, q, (size_t)(n * rb)));
        ASSERT_STATUS_OK(cml_dequantize_ggml(type, q, n, k, wd));
        for (int64_t i = 0; i < k; ++i) x[i] = (float)(qt_uniform(-1, 1) * (1 + (i / 32) % 4));
        for (int64_t g = 0; g < k / group; ++g) {
          float amax = 0;
          for (int l = 0; l < group; ++l) amax = fmaxf(amax, fabsf(x[g * group + l]));
          for (int l = 0; l < group; ++l) {
            xq[g * group + l] = (int8_t)lrintf(x[g * group + l] * 127.0f / amax);
          }
          for (int b = 0; b < group / 32; ++b) xd[g * group / 32 + b] = amax / 127.0f;
        }
        cmlc_quant_act_t act = {.x = x, .xs16 = xs16, .xq = xq, .xd = xd, .k = k};
        cmlc_quant_vnni_prepare(type, &act, layout);
        act.vnni = layout;
        act.prefetch_l1 = false;
        cmlc_quant_gemv_vnni(type, q, rb, n, &act, y2);
        act.prefetch_l1 = true;
        cmlc_quant_gemv_vnni(type, q, rb, n, &act, y1);
        for (int64_t j = 0; j < n; ++j) {
          double want = 0, xabs = 0, wmax = 0;
          for (int64_t i = 0; i < k; ++i) {
            const double xv = (double)xq[i] * (double)xd[i / 32];
            want += xv * (double)wd[j * k + i];
            xabs += fabs(xv);
            wmax = fmax(wmax, fabs((double)wd[j * k + i]));
          }
          const double tol = 1e-5 * xabs * wmax;
          if (!(memcmp(&y1[j], &y2[j], sizeof(float)) == 0 && fabs(y1[j] - want) <= tol)) {
            fprintf(stderr, "%s k=%lld n=%lld: y[%lld] = %.9g (L1), %.9g (L2), want %.9g\n",
                    cml_ggml_type_name(type), (long long)k, (long long)n, (long long)j, y1[j],
                    y2[j], want);
          }
          ASSERT_TRUE(memcmp(&y1[j], &y2[j], sizeof(float)) == 0);
          ASSERT_TRUE(fabs(y1[j] - want) <= tol);
        }
        free(w);
        free(wd);
        free(q);
        free(x);
        free(xq);
        free(xd);
        free(xs16);
        free(layout);
        free(y1);
        free(y2);
      }
    }
  }
#endif
}

// The tests, and whether a --part run splits them (the others run in part 0).
static const struct {
  test_entry_t entry;
  bool split;
} qt_tests[] = {
    {TEST_ENTRY(enums_and_block_sizes), false},
    {TEST_ENTRY(dequantize_matches_gguf_bit_for_bit), false},
    {TEST_ENTRY(quantize_matches_gguf_bit_for_bit), false},
    {TEST_ENTRY(quantize_round_trip_error), false},
    {TEST_ENTRY(ggml_dense_every_format_activation_batch_backend), true},
    {TEST_ENTRY(linear_nf4_dense_every_dtype_activation_batch_backend), true},
    {TEST_ENTRY(linear_nf4_simd_matches_double_reference_and_threads), false},
    {TEST_ENTRY(embedding_lookup_every_format_matches_gguf), true},
    {TEST_ENTRY(embedding_index_out_of_range_is_a_status), false},
    {TEST_ENTRY(native_matches_decomposition_and_thread_counts), false},
    {TEST_ENTRY(int8_activations_within_block_scale_bound), false},
    {TEST_ENTRY(int8_vnni_kernels_match_generic_int8), false},
    {TEST_ENTRY(int8_vnni_prefetch_variants_same_bits), false},
    {TEST_ENTRY(int8_activation_groups_exact), false},
    {TEST_ENTRY(quantize_linear_round_trip), false},
    {TEST_ENTRY(dense_empty_k_gives_activation_of_bias), false},
    {TEST_ENTRY(dense_huge_block_size), false},
    {TEST_ENTRY(embedding_uint64_indices_past_int64), false},
    {TEST_ENTRY(embedding_empty_table), false},
    {TEST_ENTRY(dense_infinite_activation_matches_decomposition), false},
    {TEST_ENTRY(dense_relu_keeps_nan), false},
    {TEST_ENTRY(int8_activations_below_the_scale_range), false},
    {TEST_ENTRY(quantize_negative_zero_and_nan_blocks_match_gguf), false},
    {TEST_ENTRY(quantize_non_finite_blocks_of_own_fits_are_nan), false},
    {TEST_ENTRY(quantize_row_size_overflow_message), false},
    {TEST_ENTRY(quantize_linear_non_finite_and_extreme_blocks), false},
    {TEST_ENTRY(batch1_rows_with_infinite_block_scales_are_nan), false},
    {TEST_ENTRY(dense_bad_input_names_op_shapes_and_format), false},
    {TEST_ENTRY(embedding_bad_input), false},
    {TEST_ENTRY(capabilities_follow_fusion_option), false},
};

// quant_test [--part I/N] [TEST_NAME]
int main(int argc, char** argv) {
  const char* only = NULL;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--part") == 0 && i + 1 < argc) {
      if (sscanf(argv[++i], "%d/%d", &qt_part, &qt_parts) != 2 || qt_parts < 1 || qt_part < 0 ||
          qt_part >= qt_parts) {
        fprintf(stderr, "quant_test: --part %s: want I/N with 0 <= I < N\n", argv[i]);
        return 2;
      }
    } else {
      only = argv[i];
    }
  }
  int failures = 0, ran = 0;
  for (size_t i = 0; i < sizeof qt_tests / sizeof qt_tests[0]; ++i) {
    if (only && strcmp(only, qt_tests[i].entry.name) != 0) continue;
    if (!only && !qt_tests[i].split && qt_part != 0) continue;
    int failed = 0;
    qt_tests[i].entry.fn(&failed);
    ++ran;
    printf("%s %s\n", failed ? "FAIL" : "ok  ", qt_tests[i].entry.name);
    failures += failed;
  }
  printf("%d passed, %d failed, 0 skipped\n", ran - failures, failures);
  return (failures || ran == 0) ? 1 : 0;
}
