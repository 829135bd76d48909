// SPDX-License-Identifier: Apache-2.0
// tests/unit/c_opt_test.c: the C backend's compile-time optimizations through the public API:
// constant folding (and its size bound, RNG never folded), common-subexpression elimination
// (barriers never merged), elementwise fusion (chains, broadcasts, closures) checked through
// the executable's stats, results against plain loops here, a sweep of random elementwise
// graphs whose fused results must be bit-identical to the unfused ones on every ISA, and
// concurrent executions of a fused executable. It also prints (never asserts) the cost of
// one execution of a tiny graph.
#include <math.h>
#include <pthread.h>
#include <time.h>

#include "backends/c/engine_internal.h"
#include "cml/cml.h"
#include "test.h"

//===--- helpers ---===//

static cml_backend_t* ot_backend(const char* config) {
  cml_backend_t* b = NULL;
  cml_status_t st = cml_backend_new_with_config(config, &b);
  if (st != CML_OK) {
    fprintf(stderr, "backend %s: %s\n", config, cml_status_message(st));
    cml_status_free(st);
  }
  return b;
}

static cml_shape_t ot_shape2(cml_dtype_t d, int64_t r, int64_t c) {
  int64_t dims[2] = {r, c};
  return cml_shape_make(d, 2, dims);
}

static cml_shape_t ot_vec(cml_dtype_t d, int64_t n) { return cml_shape_make(d, 1, &n); }

static const cmlc_opt_stats_t* ot_stats(const cml_executable_t* exe) {
  return &((const cmlc_executable_t*)exe)->stats;
}

static cml_buffer_t* ot_buf(cml_backend_t* b, cml_shape_t s, const void* data) {
  cml_buffer_t* buf = NULL;
  cml_status_t st = cml_buffer_from_host(b, 0, &s, data, cml_shape_byte_size(&s), &buf);
  if (st != CML_OK) {
    fprintf(stderr, "buffer: %s\n", cml_status_message(st));
    cml_status_free(st);
  }
  return buf;
}

// Runs |exe| on host arrays; writes output |o| to outs[o] (byte sizes from the executable).
static cml_status_t ot_run(cml_executable_t* exe, cml_backend_t* b, const void* const* inputs,
                           void** outs) {
  size_t ni = cml_executable_input_count(exe), no = cml_executable_output_count(exe);
  cml_buffer_t* in[16] = {0};
  cml_buffer_t* out[16] = {0};
  cml_status_t st = CML_OK;
  for (size_t i = 0; i < ni; ++i) {
    in[i] = ot_buf(b, *cml_executable_input_shape(exe, i), inputs[i]);
    if (!in[i]) st = cml_status_make(CML_STATUS_INTERNAL, "input %zu", i);
  }
  if (st == CML_OK) st = cml_executable_execute(exe, in, ni, NULL, 0, out);
  for (size_t o = 0; st == CML_OK && o < no; ++o) {
    st = cml_buffer_copy_to_host(out[o], outs[o], cml_shape_byte_size(cml_buffer_shape(out[o])));
  }
  for (size_t i = 0; i < ni; ++i) {
    if (in[i]) cml_buffer_release(in[i]);
  }
  for (size_t o = 0; o < no; ++o) {
    if (out[o]) cml_buffer_release(out[o]);
  }
  return st;
}

static cml_status_t ot_finish(cml_builder_t* b, const cml_value_t* outs, size_t count,
                              cml_executable_t** exe) {
  cml_status_t st = cml_function_return(cml_builder_main(b), outs, count);
  if (st == CML_OK) st = cml_builder_compile(b, exe);
  cml_builder_destroy(b);
  return st;
}

//===--- constant folding ---===//

// y = x + (c * 2) + iota: the product and the Iota are folded.
static cml_status_t ot_build_fold(cml_backend_t* backend, cml_executable_t** exe) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(backend, "fold", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = ot_vec(CML_DTYPE_F32, 4);
  cml_value_t x = cml_parameter(f, "x", &s);
  const float cdata[4] = {1, 2, 3, 4};
  cml_value_t c = cml_constant(f, &s, cdata);
  cml_value_t two = cml_constant_scalar_f64(f, CML_DTYPE_F32, 2.0);
  cml_value_t c2 = cml_op_mul(f, c, two);
  cml_value_t io = cml_op_iota(f, &s, 0);
  cml_value_t y = cml_op_add(f, cml_op_add(f, x, c2), io);
  return ot_finish(b, &y, 1, exe);
}

TEST(folding_constants) {
  const char* configs[2] = {"c:threads=2", "c:threads=2,reference=true"};
  for (int k = 0; k < 2; ++k) {
    cml_backend_t* b = ot_backend(configs[k]);
    ASSERT_TRUE(b != NULL);
    cml_executable_t* exe = NULL;
    ASSERT_STATUS_OK(ot_build_fold(b, &exe));
    ASSERT_EQ_INT(ot_stats(exe)->folded, k == 0 ? 2 : 0);
    const float x[4] = {10, 20, 30, 40};
    float got[4];
    const void* ins[1] = {x};
    void* outs[1] = {got};
    ASSERT_STATUS_OK(ot_run(exe, b, ins, outs));
    for (int i = 0; i < 4; ++i) ASSERT_EQ_DBL(got[i], x[i] + 2.0f * (float)(i + 1) + (float)i);
    // Again: the folded constants live in the executable, not in an execution.
    ASSERT_STATUS_OK(ot_run(exe, b, ins, outs));
    ASSERT_EQ_DBL(got[3], 40 + 8 + 3);
    cml_executable_release(exe);
    cml_backend_release(b);
  }
}

// An Iota of 2 MiB stays lazy (over the 1 MiB bound); RNG with a constant state is not folded.
TEST(folding_bounds_and_rng) {
  cml_backend_t* b = ot_backend("c:threads=2");
  ASSERT_TRUE(b != NULL);
  cml_builder_t* gb = NULL;
  ASSERT_STATUS_OK(cml_builder_create(b, "big", &gb));
  cml_function_t* f = cml_builder_main(gb);
  cml_shape_t s = ot_shape2(CML_DTYPE_F32, 1024, 512);
  cml_value_t p = cml_parameter(f, "p", &s);
  cml_value_t y = cml_op_add(f, p, cml_op_iota(f, &s, 1));
  const uint64_t state[3] = {42, 0, 0};
  cml_shape_t ss = ot_vec(CML_DTYPE_U64, 3);
  cml_value_t st_v = cml_constant(f, &ss, state);
  cml_shape_t rs = ot_vec(CML_DTYPE_U32, 8);
  cml_value_t new_state = 0, bits = 0;
  ASSERT_TRUE(cml_op_rng_bit_generator(f, st_v, &rs, &new_state, &bits));
  cml_value_t outs_v[2] = {y, bits};
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(ot_finish(gb, outs_v, 2, &exe));
  ASSERT_EQ_INT(ot_stats(exe)->folded, 0);
  float* pin = calloc(1024 * 512, sizeof(float));
  float* got = calloc(1024 * 512, sizeof(float));
  ASSERT_TRUE(pin && got);
  for (int i = 0; i < 1024 * 512; ++i) pin[i] = (float)(i / 512);
  uint32_t r1[8], r2[8];
  const void* ins[1] = {pin};
  void* outs[2] = {got, r1};
  ASSERT_STATUS_OK(ot_run(exe, b, ins, outs));
  outs[1] = r2;
  ASSERT_STATUS_OK(ot_run(exe, b, ins, outs));
  int bad = 0;
  for (int i = 0; i < 1024 * 512; ++i) bad += got[i] != (float)(i / 512) + (float)(i % 512);
  free(pin);
  free(got);
  ASSERT_EQ_INT(bad, 0);
  ASSERT_TRUE(memcmp(r1, r2, sizeof r1) == 0);  // pure: the same state gives the same bits
  cml_executable_release(exe);
  cml_backend_release(b);
}

//===--- CSE ---===//

static cml_status_t ot_build_cse(cml_backend_t* backend, cml_executable_t** exe) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(backend, "cse", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = ot_vec(CML_DTYPE_F32, 5);
  cml_value_t x = cml_parameter(f, "x", &s);
  cml_value_t a = cml_op_mul(f, x, x);
  cml_value_t a2 = cml_op_mul(f, x, x);  // merged
  cml_value_t c = cml_op_add(f, a, a2);  // 2x^2
  cml_value_t e1 = cml_op_neg(f, x);
  cml_value_t e2 = cml_op_neg(f, x);  // merged
  cml_value_t k1 = cml_constant_scalar_f64(f, CML_DTYPE_F32, 3.0);
  cml_value_t k2 = cml_constant_scalar_f64(f, CML_DTYPE_F32, 3.0);  // merged
  cml_value_t m1 = cml_op_mul(f, x, k1);
  cml_value_t m2 = cml_op_mul(f, x, k2);  // merged (k2 is k1)
  cml_value_t t = cml_op_add(f, m1, m2);  // 6x
  cml_value_t bar[2] = {x, x}, bo[2] = {0, 0};
  cml_op_optimization_barrier(f, bar, 1, &bo[0]);
  cml_op_optimization_barrier(f, bar + 1, 1, &bo[1]);  // barriers: never merged
  cml_value_t u = cml_op_add(f, bo[0], bo[1]);         // 2x
  cml_value_t outs[5] = {c, e2, t, e1, u};
  return ot_finish(b, outs, 5, exe);
}

TEST(cse_merges_identical_nodes) {
  const char* configs[3] = {"c:fusion=false", "c", "c:reference=true"};
  for (int k = 0; k < 3; ++k) {
    cml_backend_t* b = ot_backend(configs[k]);
    ASSERT_TRUE(b != NULL);
    cml_executable_t* exe = NULL;
    ASSERT_STATUS_OK(ot_build_cse(b, &exe));
    ASSERT_EQ_INT(ot_stats(exe)->merged, k == 2 ? 0 : 4);
    const float x[5] = {1, -2, 0.5f, 3, -0.25f};
    float got[5][5];
    const void* ins[1] = {x};
    void* outs[5] = {got[0], got[1], got[2], got[3], got[4]};
    ASSERT_STATUS_OK(ot_run(exe, b, ins, outs));
    for (int i = 0; i < 5; ++i) {
      ASSERT_EQ_DBL(got[0][i], x[i] * x[i] + x[i] * x[i]);
      ASSERT_EQ_DBL(got[1][i], -x[i]);
      ASSERT_EQ_DBL(got[2][i], x[i] * 3.0f + x[i] * 3.0f);
      ASSERT_EQ_DBL(got[3][i], -x[i]);
      ASSERT_EQ_DBL(got[4][i], x[i] + x[i]);
    }
    cml_executable_release(exe);
    cml_backend_release(b);
  }
}

//===--- fusion ---===//

enum { OT_M = 37, OT_N = 300 };

// out = max(x * y + s, 0) - z, z: f32[1, N] broadcast over rows.
static cml_status_t ot_build_chain(cml_backend_t* backend, cml_executable_t** exe) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(backend, "chain", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = ot_shape2(CML_DTYPE_F32, OT_M, OT_N);
  cml_shape_t zs = ot_shape2(CML_DTYPE_F32, 1, OT_N);
  cml_shape_t sc = cml_shape_scalar(CML_DTYPE_F32);
  cml_value_t x = cml_parameter(f, "x", &s);
  cml_value_t y = cml_parameter(f, "y", &s);
  cml_value_t z = cml_parameter(f, "z", &zs);
  cml_value_t sv = cml_parameter(f, "s", &sc);
  cml_value_t a = cml_op_add(f, cml_op_mul(f, x, y), sv);
  cml_value_t r = cml_op_max(f, a, cml_constant_scalar_f64(f, CML_DTYPE_F32, 0.0));
  cml_value_t out = cml_op_sub(f, r, z);
  return ot_finish(b, &out, 1, exe);
}

TEST(fusion_chain_with_broadcasts) {
  static float x[OT_M * OT_N], y[OT_M * OT_N], z[OT_N], got[OT_M * OT_N];
  for (int i = 0; i < OT_M * OT_N; ++i) {
    x[i] = (float)((i * 37) % 101) / 8.0f - 6.0f;
    y[i] = (float)((i * 11) % 23) / 4.0f - 2.0f;
  }
  for (int j = 0; j < OT_N; ++j) z[j] = (float)(j % 7) - 3.0f;
  const float s = 1.5f;
  const char* configs[2] = {"c:threads=2", "c:threads=2,fusion=false"};
  for (int k = 0; k < 2; ++k) {
    cml_backend_t* b = ot_backend(configs[k]);
    ASSERT_TRUE(b != NULL);
    cml_executable_t* exe = NULL;
    ASSERT_STATUS_OK(ot_build_chain(b, &exe));
    const cmlc_executable_t* ce = (const cmlc_executable_t*)exe;
    if (k == 0) {
      ASSERT_EQ_INT(ot_stats(exe)->fused_groups, 1);
      ASSERT_EQ_INT(ot_stats(exe)->fused_nodes, 4);
      ASSERT_EQ_U64(ce->functions[0].arena_size, 0);  // no intermediate is stored
    } else {
      ASSERT_EQ_INT(ot_stats(exe)->fused_groups, 0);
      ASSERT_TRUE(ce->functions[0].arena_size > 0);
    }
    const void* ins[4] = {x, y, z, &s};
    void* outs[1] = {got};
    ASSERT_STATUS_OK(ot_run(exe, b, ins, outs));
    for (int i = 0; i < OT_M * OT_N; ++i) {
      float a = x[i] * y[i] + s;
      float r = a > 0.0f ? a : 0.0f;
      ASSERT_EQ_DBL(got[i], r - z[i % OT_N]);
    }
    cml_executable_release(exe);
    cml_backend_release(b);
  }
}

//===--- groups longer than one loop holds ---===//

enum { OT_LONG_OPS = 48, OT_LONG_R = 24, OT_LONG_C = 300, OT_LONG_B = 9 };

// y = a chain of OT_LONG_OPS ops over x[R, C]: multiplies and adds by distinct scalar constants
// (op i: *= 1 + i/64, then += i/16), every third op after the tenth also times one of
// OT_LONG_B broadcast rows b_k[C] (k = i % B), then, with |sum|, a sum over axis 1. One loop
// holds far fewer distinct inputs (scalars and broadcasts) than the chain reads.
static cml_status_t ot_build_long(cml_backend_t* backend, bool sum, cml_executable_t** exe) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(backend, "long", &b));
  cml_function_t* f = cml_builder_main(b);
  const int64_t dims[2] = {OT_LONG_R, OT_LONG_C}, one = 1;
  cml_shape_t s = ot_shape2(CML_DTYPE_F32, OT_LONG_R, OT_LONG_C);
  cml_shape_t rs = ot_vec(CML_DTYPE_F32, OT_LONG_C);
  cml_value_t y = cml_parameter(f, "x", &s);
  cml_value_t rows[OT_LONG_B];
  for (int k = 0; k < OT_LONG_B; ++k) {
    char name[8];
    snprintf(name, sizeof name, "b%d", k);
    rows[k] = cml_op_broadcast_in_dim(f, cml_parameter(f, name, &rs), dims, 2, &one, 1);
  }
  for (int i = 0; i < OT_LONG_OPS; ++i) {
    y = i % 2 == 0 ? cml_op_mul(f, y, cml_constant_scalar_f64(f, CML_DTYPE_F32, 1.0 + i / 64.0))
                   : cml_op_add(f, y, cml_constant_scalar_f64(f, CML_DTYPE_F32, i / 16.0));
    if (i > 10 && i % 3 == 0) y = cml_op_mul(f, y, rows[i % OT_LONG_B]);
  }
  if (sum) y = cml_op_reduce_sum(f, y, &one, 1);
  return ot_finish(b, &y, 1, exe);
}

// A group that reads more distinct inputs than one loop holds is cut into loops that do
// (each the longest group the loop can take), instead of leaving the whole chain unfused
// (every op a pass over memory). The results: the same bits as unfused, and the chain computed
// here one op at a time.
TEST(fusion_cuts_long_groups_into_loops) {
  enum { N = OT_LONG_R * OT_LONG_C };
  static float x[N], rows[OT_LONG_B][OT_LONG_C], want[N], got[N], plain[N];
  for (int i = 0; i < N; ++i) x[i] = (float)((i * 37) % 101) / 64.0f - 0.75f;
  for (int k = 0; k < OT_LONG_B; ++k) {
    for (int j = 0; j < OT_LONG_C; ++j) rows[k][j] = 1.0f + (float)((j * 7 + k) % 5 - 2) / 256.0f;
  }
  for (int i = 0; i < N; ++i) {
    volatile float y = x[i];
    for (int o = 0; o < OT_LONG_OPS; ++o) {
      y = o % 2 == 0 ? y * (float)(1.0 + o / 64.0) : y + (float)(o / 16.0);
      if (o > 10 && o % 3 == 0) y = y * rows[o % OT_LONG_B][i % OT_LONG_C];
    }
    want[i] = y;
  }
  const void* ins[1 + OT_LONG_B];
  ins[0] = x;
  for (int k = 0; k < OT_LONG_B; ++k) ins[1 + k] = rows[k];
  const char* configs[3] = {"c:threads=2", "c:threads=1,avx512=false",
                            "c:threads=3,avx512=false,avx2=false"};
  int ops = OT_LONG_OPS;  // and the products by rows
  for (int o = 0; o < OT_LONG_OPS; ++o) ops += o > 10 && o % 3 == 0;
  for (int sum = 0; sum < 2; ++sum) {
    for (int k = 0; k < 3; ++k) {
      for (int fusion = 1; fusion >= 0; --fusion) {
        char config[96];
        snprintf(config, sizeof config, "%s%s", configs[k], fusion ? "" : ",fusion=false");
        cml_backend_t* b = ot_backend(config);
        ASSERT_TRUE(b != NULL);
        cml_executable_t* exe = NULL;
        ASSERT_STATUS_OK(ot_build_long(b, sum != 0, &exe));
        const cmlc_opt_stats_t* st = ot_stats(exe);
        if (fusion) {
          // Every op in a loop, in more than one loop (and the sum in the last, where the
          // ISA's reductions take a produced operand: not the scalar loops).
          ASSERT_TRUE(st->fused_groups >= 2);
          ASSERT_TRUE(st->fused_reduces <= (uint32_t)sum);
          ASSERT_EQ_INT(st->fused_nodes, ops + (int)st->fused_reduces);
        } else {
          ASSERT_EQ_INT(st->fused_groups, 0);
        }
        void* outs[1] = {fusion ? got : plain};
        ASSERT_STATUS_OK(ot_run(exe, b, ins, outs));
        cml_executable_release(exe);
        cml_backend_release(b);
      }
      const int count = sum ? OT_LONG_R : N;
      for (int i = 0; i < count; ++i) ASSERT_EQ_DBL(got[i], plain[i]);
      for (int i = 0; i < count && !sum; ++i) ASSERT_EQ_DBL(got[i], want[i]);
      for (int r = 0; r < count && sum; ++r) {
        double total = 0.0;
        for (int j = 0; j < OT_LONG_C; ++j) total += want[r * OT_LONG_C + j];
        ASSERT_NEAR(got[r], total, 1e-5 * fabs(total));
      }
    }
  }
}

//===--- random graphs: fused == unfused, bit for bit ---===//

typedef struct ot_rng_t {
  uint64_t s;
} ot_rng_t;

static uint32_t ot_next(ot_rng_t* r) {
  r->s = r->s * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(r->s >> 33);
}

static uint32_t ot_pick(ot_rng_t* r, uint32_t n) { return ot_next(r) % n; }

enum { OT_MAX_VALUES = 64 };

typedef struct ot_graph_t {
  cml_function_t* f;
  cml_value_t v[OT_MAX_VALUES];
  cml_dtype_t dtype[OT_MAX_VALUES];
  int kind[OT_MAX_VALUES];  // 0 full, 1 row broadcast [1, C], 2 column [R, 1], 3 scalar
  int count;
} ot_graph_t;

static void ot_add(ot_graph_t* g, cml_value_t v, cml_dtype_t d, int kind) {
  if (g->count < OT_MAX_VALUES && v != CML_VALUE_INVALID) {
    g->v[g->count] = v;
    g->dtype[g->count] = d;
    g->kind[g->count] = kind;
    ++g->count;
  }
}

enum { OT_FULL = 1, OT_ROW = 2, OT_COL = 4, OT_SCALAR = 8, OT_ANY = 15 };

// A random value of |dtype| whose kind is in |kinds|; -1 when there is none.
static int ot_choose(ot_graph_t* g, ot_rng_t* r, cml_dtype_t dtype, int kinds) {
  int idx[OT_MAX_VALUES], n = 0;
  for (int i = 0; i < g->count; ++i) {
    if (g->dtype[i] == dtype && ((kinds >> g->kind[i]) & 1)) idx[n++] = i;
  }
  if (n == 0) return -1;
  // Prefer recent values, so that chains form.
  if (ot_pick(r, 3) != 0) {
    for (int k = n - 1; k >= 0; --k) {
      if (ot_pick(r, 2) == 0) return idx[k];
    }
  }
  return idx[ot_pick(r, (uint32_t)n)];
}

static const cml_op_t ot_unary_ops[] = {
    CML_OP_NEG,      CML_OP_ABS,   CML_OP_EXP,   CML_OP_LOG,       CML_OP_TANH,
    CML_OP_LOGISTIC, CML_OP_SQRT,  CML_OP_RSQRT, CML_OP_ERF,       CML_OP_SIN,
    CML_OP_COS,      CML_OP_FLOOR, CML_OP_SIGN,  CML_OP_IS_FINITE,
};
static const cml_op_t ot_binary_ops[] = {
    CML_OP_ADD, CML_OP_SUB, CML_OP_MUL, CML_OP_DIV, CML_OP_MAX, CML_OP_MIN, CML_OP_POW,
};
static const cml_op_t ot_compare_ops[] = {
    CML_OP_LESS_THAN, CML_OP_GREATER_OR_EQUAL, CML_OP_EQUAL,
    CML_OP_NOT_EQUAL, CML_OP_GREATER_THAN,     CML_OP_LESS_OR_EQUAL,
};

#define OT_COUNT(a) (sizeof(a) / sizeof *(a))

// Builds a random elementwise graph over parameters x, y: f32[R, C], row: f32[1, C],
// col: f32[R, 1], s: f32[], d: f64[R, C] and returns |out_count| outputs.
static cml_status_t ot_build_random(cml_backend_t* backend, uint64_t seed, int64_t R, int64_t C,
                                    cml_executable_t** exe, size_t* out_count) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(backend, "random", &b));
  ot_rng_t r = {seed * 0x9e3779b97f4a7c15ull + 1};
  ot_graph_t g;
  memset(&g, 0, sizeof g);
  g.f = cml_builder_main(b);
  cml_function_t* f = g.f;
  cml_shape_t full = ot_shape2(CML_DTYPE_F32, R, C), row = ot_shape2(CML_DTYPE_F32, 1, C);
  cml_shape_t col = ot_shape2(CML_DTYPE_F32, R, 1), sc = cml_shape_scalar(CML_DTYPE_F32);
  cml_shape_t dfull = ot_shape2(CML_DTYPE_F64, R, C);
  ot_add(&g, cml_parameter(f, "x", &full), CML_DTYPE_F32, 0);
  ot_add(&g, cml_parameter(f, "y", &full), CML_DTYPE_F32, 0);
  ot_add(&g, cml_parameter(f, "row", &row), CML_DTYPE_F32, 1);
  ot_add(&g, cml_parameter(f, "col", &col), CML_DTYPE_F32, 2);
  ot_add(&g, cml_parameter(f, "s", &sc), CML_DTYPE_F32, 3);
  ot_add(&g, cml_parameter(f, "d", &dfull), CML_DTYPE_F64, 0);
  ot_add(&g, cml_constant_scalar_f64(f, CML_DTYPE_F32, 0.75), CML_DTYPE_F32, 3);
  ot_add(&g, cml_constant_scalar_f64(f, CML_DTYPE_F64, -1.25), CML_DTYPE_F64, 3);
  const int ops = 6 + (int)ot_pick(&r, 18);
  for (int i = 0; i < ops; ++i) {
    const cml_dtype_t dt = ot_pick(&r, 4) == 0 ? CML_DTYPE_F64 : CML_DTYPE_F32;
    const int a = ot_choose(&g, &r, dt, OT_FULL);
    if (a < 0) continue;
    switch (ot_pick(&r, 6)) {
      case 0:
      case 1: {
        cml_op_t op = ot_unary_ops[ot_pick(&r, OT_COUNT(ot_unary_ops))];
        if (op == CML_OP_IS_FINITE) {
          // Bool: feed it to a Where right away.
          cml_value_t m = cml_op_unary(f, op, g.v[a]);
          int t = ot_choose(&g, &r, dt, OT_FULL | OT_SCALAR), e = ot_choose(&g, &r, dt, OT_FULL);
          if (t >= 0 && e >= 0) ot_add(&g, cml_op_where(f, m, g.v[t], g.v[e]), dt, 0);
        } else {
          ot_add(&g, cml_op_unary(f, op, g.v[a]), dt, 0);
        }
        break;
      }
      case 2:
      case 3: {
        int c = ot_choose(&g, &r, dt, OT_ANY);
        if (c < 0) break;
        cml_op_t op = ot_binary_ops[ot_pick(&r, OT_COUNT(ot_binary_ops))];
        bool swap = ot_pick(&r, 2) == 0;
        ot_add(&g, cml_op_binary(f, op, g.v[swap ? c : a], g.v[swap ? a : c]), dt, 0);
        break;
      }
      case 4: {
        int c = ot_choose(&g, &r, dt, OT_ANY), t = ot_choose(&g, &r, dt, OT_FULL | OT_SCALAR);
        if (c < 0 || t < 0) break;
        cml_op_t op = ot_compare_ops[ot_pick(&r, OT_COUNT(ot_compare_ops))];
        cml_value_t m = cml_op_binary(f, op, g.v[a], g.v[c]);
        if (ot_pick(&r, 3) == 0) {
          cml_value_t lo = cml_constant_scalar_f64(f, dt, -0.5);
          cml_value_t hi = cml_constant_scalar_f64(f, dt, 2.0);
          ot_add(&g, cml_op_clamp(f, lo, g.v[a], hi), dt, 0);
        } else {
          ot_add(&g, cml_op_where(f, m, g.v[t], g.v[a]), dt, 0);
        }
        break;
      }
      default: {
        cml_dtype_t to = dt == CML_DTYPE_F32 ? CML_DTYPE_F64 : CML_DTYPE_F32;
        ot_add(&g, cml_op_convert_dtype(f, g.v[a], to), to, 0);
        break;
      }
    }
  }
  // Outputs: the last value and a few others (multi-use intermediates stay stored).
  cml_value_t outs[4];
  size_t n = 0;
  outs[n++] = g.v[g.count - 1];
  for (int k = 0; k < 3; ++k) {
    if (ot_pick(&r, 2) != 0) continue;
    int idx = g.count > 8 ? 8 + (int)ot_pick(&r, (uint32_t)(g.count - 8)) : g.count - 1;
    outs[n++] = g.v[idx];
  }
  *out_count = n;
  return ot_finish(b, outs, n, exe);
}

typedef struct ot_inputs_t {
  float *x, *y, *row, *col, s;
  double* d;
} ot_inputs_t;

static void ot_inputs_fill(ot_inputs_t* in, int64_t R, int64_t C, uint64_t seed) {
  ot_rng_t r = {seed + 17};
  for (int64_t i = 0; i < R * C; ++i) {
    in->x[i] = ((float)ot_pick(&r, 20001) - 10000.0f) / 2500.0f;
    in->y[i] = ((float)ot_pick(&r, 20001) - 10000.0f) / 3000.0f;
    in->d[i] = ((double)ot_pick(&r, 20001) - 10000.0) / 1700.0;
  }
  // A few special values.
  in->x[0] = NAN;
  if (R * C > 5) {
    in->y[3] = INFINITY;
    in->d[5] = -0.0;
  }
  for (int64_t j = 0; j < C; ++j) in->row[j] = ((float)ot_pick(&r, 2001) - 1000.0f) / 300.0f;
  for (int64_t i = 0; i < R; ++i) in->col[i] = ((float)ot_pick(&r, 2001) - 1000.0f) / 400.0f;
  in->s = 0.375f;
}

// out = tanh(max(x * y + s, 0) - z) computed in |dtype| (bf16 or f16) from f32 inputs.
static cml_status_t ot_build_half_chain(cml_backend_t* backend, cml_dtype_t dtype,
                                        cml_executable_t** exe) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(backend, "half_chain", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = ot_shape2(CML_DTYPE_F32, OT_M, OT_N);
  cml_shape_t zs = ot_shape2(CML_DTYPE_F32, 1, OT_N);
  cml_value_t x = cml_op_convert_dtype(f, cml_parameter(f, "x", &s), dtype);
  cml_value_t y = cml_op_convert_dtype(f, cml_parameter(f, "y", &s), dtype);
  cml_value_t z = cml_op_convert_dtype(f, cml_parameter(f, "z", &zs), dtype);
  cml_value_t a = cml_op_add(f, cml_op_mul(f, x, y), cml_constant_scalar_f64(f, dtype, 1.5));
  cml_value_t r = cml_op_max(f, a, cml_constant_scalar_f64(f, dtype, 0.0));
  cml_value_t out = cml_op_tanh(f, cml_op_sub(f, r, z));
  return ot_finish(b, &out, 1, exe);
}

// bf16 and f16 chains fuse, and the fused loop gives the unfused result bit for bit (each op
// rounds to the half type in both).
TEST(fusion_half_chains_equal_unfused) {
  static float x[OT_M * OT_N], y[OT_M * OT_N], z[OT_N];
  static uint16_t got[2][OT_M * OT_N];
  for (int i = 0; i < OT_M * OT_N; ++i) {
    x[i] = (float)((i * 37) % 101) / 17.0f - 2.5f;
    y[i] = (float)((i * 11) % 23) / 9.0f - 1.0f;
  }
  for (int j = 0; j < OT_N; ++j) z[j] = (float)(j % 7) / 3.0f - 1.0f;
  const cml_dtype_t dtypes[2] = {CML_DTYPE_BF16, CML_DTYPE_F16};
  const char* configs[2] = {"c:threads=2", "c:threads=2,fusion=false"};
  for (int d = 0; d < 2; ++d) {
    for (int k = 0; k < 2; ++k) {
      cml_backend_t* b = ot_backend(configs[k]);
      ASSERT_TRUE(b != NULL);
      cml_executable_t* exe = NULL;
      ASSERT_STATUS_OK(ot_build_half_chain(b, dtypes[d], &exe));
      if (k == 0) {
        ASSERT_TRUE(ot_stats(exe)->fused_groups >= 1);
        ASSERT_TRUE(ot_stats(exe)->fused_nodes >= 5);
      } else {
        ASSERT_EQ_INT(ot_stats(exe)->fused_groups, 0);
      }
      const void* ins[3] = {x, y, z};
      void* outs[1] = {got[k]};
      ASSERT_STATUS_OK(ot_run(exe, b, ins, outs));
      cml_executable_release(exe);
      cml_backend_release(b);
    }
    int nonzero = 0;
    for (int i = 0; i < OT_M * OT_N; ++i) {
      ASSERT_EQ_INT(got[0][i], got[1][i]);
      nonzero += (got[0][i] & 0x7fff) != 0;
    }
    ASSERT_TRUE(nonzero > OT_M * OT_N / 4);
  }
}

TEST(fused_equals_unfused_random_sweep) {
  const char* pairs[4][2] = {
      {"c:threads=2", "c:threads=2,fusion=false"},
      {"c:threads=2,avx512=false", "c:threads=2,avx512=false,fusion=false"},
      {"c:threads=2,avx512=false,avx2=false", "c:threads=2,avx512=false,avx2=false,fusion=false"},
      {"c:threads=1,avx512=false,avx2=false", "c:threads=1,reference=true"},
  };
  enum { MAXR = 40, MAXC = 700 };
  ot_inputs_t in;
  in.x = calloc(MAXR * MAXC, sizeof(float));
  in.y = calloc(MAXR * MAXC, sizeof(float));
  in.row = calloc(MAXC, sizeof(float));
  in.col = calloc(MAXR, sizeof(float));
  in.d = calloc(MAXR * MAXC, sizeof(double));
  uint8_t* out_a = calloc(4 * MAXR * MAXC, sizeof(double));
  uint8_t* out_b = calloc(4 * MAXR * MAXC, sizeof(double));
  ASSERT_TRUE(in.x && in.y && in.row && in.col && in.d && out_a && out_b);
  uint32_t groups = 0, graphs = 0;
  int failures = 0;
  for (int pi = 0; pi < 4 && failures == 0; ++pi) {
    cml_backend_t* fb = ot_backend(pairs[pi][0]);
    cml_backend_t* ub = ot_backend(pairs[pi][1]);
    ASSERT_TRUE(fb && ub);
    for (uint64_t seed = 0; seed < 40 && failures == 0; ++seed) {
      ot_rng_t r = {seed * 31 + (uint64_t)pi};
      const int64_t R = 1 + (int64_t)ot_pick(&r, MAXR);
      const int64_t C = 1 + (int64_t)ot_pick(&r, MAXC);
      ot_inputs_fill(&in, R, C, seed);
      cml_executable_t *fe = NULL, *ue = NULL;
      size_t nf = 0, nu = 0;
      cml_status_t st = ot_build_random(fb, seed, R, C, &fe, &nf);
      if (st == CML_OK) st = ot_build_random(ub, seed, R, C, &ue, &nu);
      if (st != CML_OK) {
        fprintf(stderr, "seed %llu: %s\n", (unsigned long long)seed, cml_status_message(st));
        cml_status_free(st);
        ++failures;
        if (fe) cml_executable_release(fe);
        break;
      }
      groups += ot_stats(fe)->fused_groups;
      ++graphs;
      if (pi < 3 && ot_stats(ue)->fused_groups != 0) ++failures;
      const void* ins[6] = {in.x, in.y, in.row, in.col, &in.s, in.d};
      void *oa[4], *ob[4];
      size_t off = 0;
      for (size_t o = 0; o < nf; ++o) {
        oa[o] = out_a + off;
        ob[o] = out_b + off;
        off += cml_shape_byte_size(cml_executable_output_shape(fe, o));
      }
      memset(out_a, 0xa5, off);
      memset(out_b, 0x5a, off);
      st = ot_run(fe, fb, ins, oa);
      if (st == CML_OK) st = ot_run(ue, ub, ins, ob);
      if (st != CML_OK) {
        fprintf(stderr, "run: %s\n", cml_status_message(st));
        cml_status_free(st);
        ++failures;
      } else {
        bool same = true;
        for (size_t o = 0; o < nf; ++o) {
          const cml_shape_t* os = cml_executable_output_shape(fe, o);
          same &= test_same_values(os->dtype, oa[o], ob[o], cml_shape_byte_size(os));
        }
        if (!same) {
          fprintf(stderr, "%s vs %s: seed %llu (%lld x %lld) differs\n", pairs[pi][0], pairs[pi][1],
                  (unsigned long long)seed, (long long)R, (long long)C);
          ++failures;
        }
      }
      cml_executable_release(fe);
      cml_executable_release(ue);
    }
    cml_backend_release(fb);
    cml_backend_release(ub);
  }
  free(in.x);
  free(in.y);
  free(in.row);
  free(in.col);
  free(in.d);
  free(out_a);
  free(out_b);
  ASSERT_EQ_INT(failures, 0);
  ASSERT_EQ_INT(graphs, 160);
  ASSERT_TRUE(groups > 40);  // the sweep really fuses
}

// A While whose body is a fusable chain with a constant that gets folded: fused == unfused.
static cml_status_t ot_build_loop(cml_backend_t* backend, cml_executable_t** exe) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(backend, "loop", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = ot_vec(CML_DTYPE_F32, 1000), si = cml_shape_scalar(CML_DTYPE_I32);
  cml_value_t x = cml_parameter(f, "x", &s);
  cml_value_t scale = cml_parameter(f, "scale", &s);
  cml_value_t init[2] = {cml_constant_scalar_i64(f, CML_DTYPE_I32, 0), x};
  cml_function_t *cond = NULL, *body = NULL;
  cml_status_t st = cml_function_new_closure(f, &cond);
  if (st == CML_OK) {
    cml_value_t i = cml_parameter(cond, "i", &si);
    cml_parameter(cond, "x", &s);
    cml_value_t lt = cml_op_less_than(cond, i, cml_constant_scalar_i64(cond, CML_DTYPE_I32, 5));
    st = cml_function_return(cond, &lt, 1);
  }
  if (st == CML_OK) st = cml_function_new_closure(f, &body);
  if (st == CML_OK) {
    cml_value_t i = cml_parameter(body, "i", &si);
    cml_value_t bx = cml_parameter(body, "x", &s);
    cml_value_t half = cml_op_mul(body, cml_constant_scalar_f64(body, CML_DTYPE_F32, 0.25),
                                  cml_constant_scalar_f64(body, CML_DTYPE_F32, 2.0));  // folded
    cml_value_t t = cml_op_tanh(body, cml_op_add(body, cml_op_mul(body, bx, half), scale));
    cml_value_t nx = cml_op_sub(body, t, cml_op_mul(body, bx, scale));
    cml_value_t next[2] = {cml_op_add(body, i, cml_constant_scalar_i64(body, CML_DTYPE_I32, 1)),
                           nx};
    st = cml_function_return(body, next, 2);
  }
  cml_value_t res[2] = {0, 0};
  if (st == CML_OK) {
    cml_op_while(f, cond, body, init, 2, res);
    st = cml_function_return(f, &res[1], 1);
  }
  if (st == CML_OK) st = cml_builder_compile(b, exe);
  cml_builder_destroy(b);
  return st;
}

TEST(fusion_and_folding_in_closures) {
  static float x[1000], scale[1000], got[2][1000];
  for (int i = 0; i < 1000; ++i) {
    x[i] = (float)(i % 41) / 10.0f - 2.0f;
    scale[i] = (float)(i % 13) / 20.0f;
  }
  const char* configs[2] = {"c:threads=2", "c:threads=2,fusion=false"};
  for (int k = 0; k < 2; ++k) {
    cml_backend_t* b = ot_backend(configs[k]);
    ASSERT_TRUE(b != NULL);
    cml_executable_t* exe = NULL;
    ASSERT_STATUS_OK(ot_build_loop(b, &exe));
    ASSERT_TRUE(ot_stats(exe)->folded >= 1);
    if (k == 0) ASSERT_TRUE(ot_stats(exe)->fused_groups >= 1);
    const void* ins[2] = {x, scale};
    void* outs[1] = {got[k]};
    ASSERT_STATUS_OK(ot_run(exe, b, ins, outs));
    cml_executable_release(exe);
    cml_backend_release(b);
  }
  ASSERT_TRUE(memcmp(got[0], got[1], sizeof got[0]) == 0);
}

//===--- concurrency ---===//

enum { OT_BIG = 200003 };

typedef struct ot_conc_t {
  cml_backend_t* backend;
  cml_executable_t* exe;
  const float* x;
  const float* y;
  int failures;
} ot_conc_t;

static void* ot_conc_main(void* arg) {
  ot_conc_t* c = (ot_conc_t*)arg;
  float* got = malloc(sizeof(float) * OT_BIG);
  if (!got) {
    ++c->failures;
    return NULL;
  }
  for (int r = 0; r < 6; ++r) {
    const void* ins[2] = {c->x, c->y};
    void* outs[1] = {got};
    cml_status_t st = ot_run(c->exe, c->backend, ins, outs);
    if (st != CML_OK) {
      cml_status_free(st);
      ++c->failures;
      continue;
    }
    for (int i = 0; i < OT_BIG; ++i) {
      float a = c->x[i] * c->y[i] - c->y[i];
      float w = a < 0.0f ? -a : a;
      if (got[i] != w + c->x[i]) {
        ++c->failures;
        break;
      }
    }
  }
  free(got);
  return NULL;
}

TEST(concurrent_fused_executions) {
  cml_backend_t* b = ot_backend("c:threads=2");
  ASSERT_TRUE(b != NULL);
  cml_builder_t* gb = NULL;
  ASSERT_STATUS_OK(cml_builder_create(b, "conc", &gb));
  cml_function_t* f = cml_builder_main(gb);
  cml_shape_t s = ot_vec(CML_DTYPE_F32, OT_BIG);
  cml_value_t x = cml_parameter(f, "x", &s);
  cml_value_t y = cml_parameter(f, "y", &s);
  cml_value_t out = cml_op_add(f, cml_op_abs(f, cml_op_sub(f, cml_op_mul(f, x, y), y)), x);
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(ot_finish(gb, &out, 1, &exe));
  ASSERT_EQ_INT(ot_stats(exe)->fused_groups, 1);
  float* xd = malloc(sizeof(float) * OT_BIG);
  float* yd = malloc(sizeof(float) * OT_BIG);
  ASSERT_TRUE(xd && yd);
  for (int i = 0; i < OT_BIG; ++i) {
    xd[i] = (float)(i % 1001) / 100.0f - 5.0f;
    yd[i] = (float)(i % 77) / 16.0f - 2.0f;
  }
  pthread_t th[4];
  ot_conc_t args[4];
  for (int i = 0; i < 4; ++i) {
    args[i] = (ot_conc_t){b, exe, xd, yd, 0};
    pthread_create(&th[i], NULL, ot_conc_main, &args[i]);
  }
  int failures = 0;
  for (int i = 0; i < 4; ++i) {
    pthread_join(th[i], NULL);
    failures += args[i].failures;
  }
  free(xd);
  free(yd);
  cml_executable_release(exe);
  cml_backend_release(b);
  ASSERT_EQ_INT(failures, 0);
}

//===--- execution overhead (printed, never asserted) ---===//

static double ot_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

TEST(execute_overhead_report) {
  const char* configs[2] = {"c:threads=1", "c:threads=1,fusion=false"};
  for (int k = 0; k < 2; ++k) {
    cml_backend_t* b = ot_backend(configs[k]);
    ASSERT_TRUE(b != NULL);
    cml_builder_t* gb = NULL;
    ASSERT_STATUS_OK(cml_builder_create(b, "tiny", &gb));
    cml_function_t* f = cml_builder_main(gb);
    cml_shape_t s = ot_vec(CML_DTYPE_F32, 8);
    cml_value_t x = cml_parameter(f, "x", &s);
    cml_value_t y = cml_op_add(f, cml_op_add(f, cml_op_add(f, x, x), x), x);
    cml_executable_t* exe = NULL;
    ASSERT_STATUS_OK(ot_finish(gb, &y, 1, &exe));
    const float xd[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    cml_buffer_t* in = ot_buf(b, s, xd);
    ASSERT_TRUE(in != NULL);
    enum { RUNS = 20000 };
    double best = 1e9;
    for (int rep = 0; rep < 3; ++rep) {
      double t0 = ot_now();
      for (int r = 0; r < RUNS; ++r) {
        cml_buffer_t* out = NULL;
        ASSERT_STATUS_OK(cml_executable_execute(exe, &in, 1, NULL, 0, &out));
        cml_buffer_release(out);
      }
      double us = (ot_now() - t0) * 1e6 / RUNS;
      if (us < best) best = us;
    }
    float got[8];
    cml_buffer_t* out = NULL;
    ASSERT_STATUS_OK(cml_executable_execute(exe, &in, 1, NULL, 0, &out));
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(out, got, sizeof got));
    cml_buffer_release(out);
    for (int i = 0; i < 8; ++i) ASSERT_EQ_DBL(got[i], 4 * xd[i]);
    fprintf(stderr, "execute (3 adds on f32[8], %s): %.2f us per call\n", configs[k], best);
    cml_buffer_release(in);
    cml_executable_release(exe);
    cml_backend_release(b);
  }
}

//===--- transpose folding ---===//

// Five products whose operands are transposed: (1) x^T y, 2-D; (2) x w^T, the rhs; (3) a
// batched DotGeneral whose lhs is a [0,2,1] transpose; (4) a rank-3 transpose whose free axes
// keep their order, contracted over its last axis; (5) one whose free axes swap (not
// foldable: it must stay a Transpose); plus (6) a transpose that is also returned (it must
// still run, so its dot is left alone). Small integers keep every sum exact, so each result
// is compared exactly with loops here, on the folding backend and on the reference one.
enum { TF_M = 5, TF_K = 7, TF_N = 3, TF_W = 6 };

static cml_status_t ot_build_transposes(cml_backend_t* backend, cml_executable_t** exe) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(backend, "transposes", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t xs = ot_shape2(CML_DTYPE_F32, TF_M, TF_K);  // x[5,7]
  cml_shape_t ys = ot_shape2(CML_DTYPE_F32, TF_M, TF_N);  // y[5,3]
  cml_shape_t ws = ot_shape2(CML_DTYPE_F32, TF_W, TF_K);  // w[6,7]
  cml_shape_t as = cml_shape_make(CML_DTYPE_F32, 3, (int64_t[]){2, 4, 3});
  cml_shape_t bs = cml_shape_make(CML_DTYPE_F32, 3, (int64_t[]){2, 4, 6});
  cml_value_t x = cml_parameter(f, "x", &xs);
  cml_value_t y = cml_parameter(f, "y", &ys);
  cml_value_t w = cml_parameter(f, "w", &ws);
  cml_value_t a = cml_parameter(f, "a", &as);
  cml_value_t bb = cml_parameter(f, "b", &bs);
  const int64_t swap[2] = {1, 0};
  // (1) x^T y: [7,5] . [5,3] -> [7,3].
  cml_value_t r1 = cml_op_dot(f, cml_op_transpose(f, x, swap, 2), y);
  // (2) x w^T: [5,7] . [7,6] -> [5,6].
  cml_value_t r2 = cml_op_dot(f, x, cml_op_transpose(f, w, swap, 2));
  // (3) a^T(0,2,1) [2,3,4] . b [2,4,6], batch 0, contracting 2 / 1 -> [2,3,6].
  cml_value_t at = cml_op_transpose(f, a, (const int64_t[]){0, 2, 1}, 3);
  cml_dot_config_t c3;
  memset(&c3, 0, sizeof c3);
  c3.lhs_batch_count = c3.rhs_batch_count = 1;
  c3.lhs_contracting_count = c3.rhs_contracting_count = 1;
  c3.lhs_contracting_axes[0] = 2;
  c3.rhs_contracting_axes[0] = 1;
  cml_value_t r3 = cml_op_dot_general(f, at, bb, &c3);
  // (4) t = transpose(a, {1,2,0}) [4,3,2]: free axes 0,1 are a's 1,2 (in order); contract
  // its axis 2 (a's axis 0, size 2) with y2[2,3] -> [4,3,3].
  cml_value_t t4 = cml_op_transpose(f, a, (const int64_t[]){1, 2, 0}, 3);
  cml_shape_t y2s = ot_shape2(CML_DTYPE_F32, 2, 3);
  cml_value_t y2 = cml_parameter(f, "y2", &y2s);
  cml_dot_config_t c4;
  memset(&c4, 0, sizeof c4);
  c4.lhs_contracting_count = c4.rhs_contracting_count = 1;
  c4.lhs_contracting_axes[0] = 2;
  c4.rhs_contracting_axes[0] = 0;
  cml_value_t r4 = cml_op_dot_general(f, t4, y2, &c4);
  // (5) t = transpose(a, {2,1,0}) [3,4,2]: free axes 0,1 are a's 2,1 (swapped): not folded.
  cml_value_t t5 = cml_op_transpose(f, a, (const int64_t[]){2, 1, 0}, 3);
  cml_value_t r5 = cml_op_dot_general(f, t5, y2, &c4);
  // (6) y^T x with y^T also returned.
  cml_value_t yt = cml_op_transpose(f, y, swap, 2);
  cml_value_t r6 = cml_op_dot(f, yt, x);
  const cml_value_t outs[7] = {r1, r2, r3, r4, r5, r6, yt};
  return ot_finish(b, outs, 7, exe);
}

TEST(transposes_fold_into_dots) {
  float x[TF_M * TF_K], y[TF_M * TF_N], w[TF_W * TF_K], a[24], bv[48], y2[6];
  for (int i = 0; i < TF_M * TF_K; ++i) x[i] = (float)((i * 7) % 11 - 5);
  for (int i = 0; i < TF_M * TF_N; ++i) y[i] = (float)((i * 5) % 9 - 4);
  for (int i = 0; i < TF_W * TF_K; ++i) w[i] = (float)((i * 3) % 7 - 3);
  for (int i = 0; i < 24; ++i) a[i] = (float)((i * 5) % 13 - 6);
  for (int i = 0; i < 48; ++i) bv[i] = (float)((i * 11) % 7 - 3);
  for (int i = 0; i < 6; ++i) y2[i] = (float)(i - 2);
  // Expected results, by definition.
  float e1[TF_K * TF_N] = {0}, e2[TF_M * TF_W] = {0}, e3[2 * 3 * 6] = {0}, e4[4 * 3 * 3] = {0},
                  e5[3 * 4 * 3] = {0}, e6[TF_N * TF_K] = {0}, e7[TF_N * TF_M];
  for (int i = 0; i < TF_K; ++i)
    for (int j = 0; j < TF_N; ++j)
      for (int k = 0; k < TF_M; ++k) e1[i * TF_N + j] += x[k * TF_K + i] * y[k * TF_N + j];
  for (int i = 0; i < TF_M; ++i)
    for (int j = 0; j < TF_W; ++j)
      for (int k = 0; k < TF_K; ++k) e2[i * TF_W + j] += x[i * TF_K + k] * w[j * TF_K + k];
  for (int g = 0; g < 2; ++g)  // a[g,k,i] b[g,k,j]
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 6; ++j)
        for (int k = 0; k < 4; ++k)
          e3[(g * 3 + i) * 6 + j] += a[(g * 4 + k) * 3 + i] * bv[(g * 4 + k) * 6 + j];
  for (int p = 0; p < 4; ++p)  // t4[p,q,r] = a[r,p,q]
    for (int q = 0; q < 3; ++q)
      for (int j = 0; j < 3; ++j)
        for (int r = 0; r < 2; ++r)
          e4[(p * 3 + q) * 3 + j] += a[(r * 4 + p) * 3 + q] * y2[r * 3 + j];
  for (int q = 0; q < 3; ++q)  // t5[q,p,r] = a[r,p,q]
    for (int p = 0; p < 4; ++p)
      for (int j = 0; j < 3; ++j)
        for (int r = 0; r < 2; ++r)
          e5[(q * 4 + p) * 3 + j] += a[(r * 4 + p) * 3 + q] * y2[r * 3 + j];
  for (int i = 0; i < TF_N; ++i)
    for (int j = 0; j < TF_K; ++j)
      for (int k = 0; k < TF_M; ++k) e6[i * TF_K + j] += y[k * TF_N + i] * x[k * TF_K + j];
  for (int i = 0; i < TF_N; ++i)
    for (int k = 0; k < TF_M; ++k) e7[i * TF_M + k] = y[k * TF_N + i];
  const float* want[7] = {e1, e2, e3, e4, e5, e6, e7};
  const int sizes[7] = {TF_K * TF_N, TF_M * TF_W, 36, 36, 36, TF_N * TF_K, TF_N * TF_M};
  const char* configs[3] = {"c:threads=2", "c:threads=1,fusion=false", "c:reference=true"};
  for (int c = 0; c < 3; ++c) {
    cml_backend_t* be = ot_backend(configs[c]);
    ASSERT_TRUE(be != NULL);
    cml_executable_t* exe = NULL;
    ASSERT_STATUS_OK(ot_build_transposes(be, &exe));
    // (1) to (4) fold (one operand each); (5) and (6) keep their Transposes.
    ASSERT_EQ_INT(ot_stats(exe)->transposes_folded, c < 2 ? 4 : 0);
    float g1[TF_K * TF_N], g2[TF_M * TF_W], g3[36], g4[36], g5[36], g6[TF_N * TF_K],
        g7[TF_N * TF_M];
    const void* ins[6] = {x, y, w, a, bv, y2};
    void* outs[7] = {g1, g2, g3, g4, g5, g6, g7};
    for (int rep = 0; rep < 2; ++rep) {
      ASSERT_STATUS_OK(ot_run(exe, be, ins, outs));
      for (int o = 0; o < 7; ++o) {
        const float* got = outs[o];
        for (int i = 0; i < sizes[o]; ++i) ASSERT_EQ_DBL(got[i], want[o][i]);
      }
    }
    cml_executable_release(exe);
    cml_backend_release(be);
  }
}

//===--- Concatenate operands computed in place ---===//

// x[4,16], w[16,32], y[64], z[8,16]:
//   c1 = concat(reshape(x*2+1, [64]), reshape(x.w, [128]), y): a main output; the fused loop
//        and the dot write straight into its buffer (2 placed), y is copied;
//   c2 = concat(exp(x), x-1) along axis 0, read by c2*z: its arena block is allocated at exp's
//        step and both operands are written in place (2 placed);
//   c3 = concat(s, x) with s = x+3 also returned: s has two readers (not placed), x is a
//        parameter; c4 = concat(x*3, x*4) along axis 1: not contiguous runs (not placed);
//   c5 = concat(m*2, m*5) along axis 1 with m = x[0:1, 0:3]: runs of 12 bytes (not placed).
static cml_status_t ot_build_concats(cml_backend_t* backend, cml_executable_t** exe) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(backend, "concats", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t xs = ot_shape2(CML_DTYPE_F32, 4, 16), ws = ot_shape2(CML_DTYPE_F32, 16, 32);
  cml_shape_t ys = ot_vec(CML_DTYPE_F32, 64), zs = ot_shape2(CML_DTYPE_F32, 8, 16);
  cml_value_t x = cml_parameter(f, "x", &xs), w = cml_parameter(f, "w", &ws);
  cml_value_t y = cml_parameter(f, "y", &ys), z = cml_parameter(f, "z", &zs);
  const cml_dtype_t d = CML_DTYPE_F32;
  const int64_t n64 = 64, n128 = 128;
  cml_value_t a = cml_op_add(f, cml_op_mul(f, x, cml_constant_scalar_f64(f, d, 2.0)),
                             cml_constant_scalar_f64(f, d, 1.0));
  cml_value_t c1 =
      cml_op_concatenate(f, 0,
                         (cml_value_t[]){cml_op_reshape(f, a, &n64, 1),
                                         cml_op_reshape(f, cml_op_dot(f, x, w), &n128, 1), y},
                         3);
  cml_value_t c2 = cml_op_concatenate(
      f, 0, (cml_value_t[]){cml_op_exp(f, x), cml_op_sub(f, x, cml_constant_scalar_f64(f, d, 1.0))},
      2);
  cml_value_t r2 = cml_op_mul(f, c2, z);
  cml_value_t s = cml_op_add(f, x, cml_constant_scalar_f64(f, d, 3.0));
  cml_value_t c3 = cml_op_concatenate(f, 0, (cml_value_t[]){s, x}, 2);
  cml_value_t c4 =
      cml_op_concatenate(f, 1,
                         (cml_value_t[]){cml_op_mul(f, x, cml_constant_scalar_f64(f, d, 3.0)),
                                         cml_op_mul(f, x, cml_constant_scalar_f64(f, d, 4.0))},
                         2);
  cml_value_t m = cml_op_slice(f, x, (const int64_t[]){0, 0}, (const int64_t[]){1, 3}, NULL, 2);
  cml_value_t c5 =
      cml_op_concatenate(f, 1,
                         (cml_value_t[]){cml_op_mul(f, m, cml_constant_scalar_f64(f, d, 2.0)),
                                         cml_op_mul(f, m, cml_constant_scalar_f64(f, d, 5.0))},
                         2);
  // c6 = concat(x*6, x*8) with x*6 also read (by r6 = x*6 + 1) before the Concatenate: both
  // placed; c7 = concat(x*7, x) with x*7 read after it (r7 = x*7 - 1): not placed.
  cml_value_t t6 = cml_op_mul(f, x, cml_constant_scalar_f64(f, d, 6.0));
  cml_value_t r6 = cml_op_add(f, t6, cml_constant_scalar_f64(f, d, 1.0));
  cml_value_t c6 = cml_op_concatenate(
      f, 0, (cml_value_t[]){t6, cml_op_mul(f, x, cml_constant_scalar_f64(f, d, 8.0))}, 2);
  cml_value_t t7 = cml_op_mul(f, x, cml_constant_scalar_f64(f, d, 7.0));
  cml_value_t c7 = cml_op_concatenate(f, 0, (cml_value_t[]){t7, x}, 2);
  cml_value_t r7 = cml_op_sub(f, t7, cml_constant_scalar_f64(f, d, 1.0));
  const cml_value_t outs[10] = {c1, r2, c3, s, c4, c5, c6, r6, c7, r7};
  return ot_finish(b, outs, 10, exe);
}

TEST(concat_operands_computed_in_place) {
  float x[64], w[512], y[64], z[128];
  for (int i = 0; i < 64; ++i) x[i] = (float)((i * 7) % 11 - 5) * 0.25f;
  for (int i = 0; i < 512; ++i) w[i] = (float)((i * 5) % 9 - 4);
  for (int i = 0; i < 64; ++i) y[i] = (float)(i % 13) - 6.0f;
  for (int i = 0; i < 128; ++i) z[i] = (float)((i * 3) % 7 - 3);
  // Expected results, by definition (exp from the reference backend's run below).
  float e1[256], e3[128], e4[64], e5[128], e6[6];
  for (int i = 0; i < 64; ++i) e1[i] = x[i] * 2.0f + 1.0f;
  for (int r = 0; r < 4; ++r)
    for (int j = 0; j < 32; ++j) {
      float acc = 0;
      for (int k = 0; k < 16; ++k) acc += x[r * 16 + k] * w[k * 32 + j];
      e1[64 + r * 32 + j] = acc;
    }
  for (int i = 0; i < 64; ++i) e1[192 + i] = y[i];
  for (int i = 0; i < 64; ++i) e3[i] = x[i] + 3.0f, e3[64 + i] = x[i], e4[i] = x[i] + 3.0f;
  for (int r = 0; r < 4; ++r)
    for (int j = 0; j < 16; ++j) {
      e5[r * 32 + j] = x[r * 16 + j] * 3.0f;
      e5[r * 32 + 16 + j] = x[r * 16 + j] * 4.0f;
    }
  for (int j = 0; j < 3; ++j) e6[j] = x[j] * 2.0f, e6[3 + j] = x[j] * 5.0f;
  const char* configs[3] = {"c:reference=true", "c:threads=2", "c:threads=1"};
  float ref2[128];
  for (int c = 0; c < 3; ++c) {
    cml_backend_t* be = ot_backend(configs[c]);
    ASSERT_TRUE(be != NULL);
    cml_executable_t* exe = NULL;
    ASSERT_STATUS_OK(ot_build_concats(be, &exe));
    ASSERT_EQ_INT(ot_stats(exe)->concat_placed, c == 0 ? 0 : 6);
    float g1[256], g2[128], g3[128], g4[64], g5[128], g6[6], g7[128], g8[64], g9[128], g10[64];
    const void* ins[4] = {x, w, y, z};
    void* outs[10] = {g1, g2, g3, g4, g5, g6, g7, g8, g9, g10};
    for (int rep = 0; rep < 2; ++rep) {
      ASSERT_STATUS_OK(ot_run(exe, be, ins, outs));
      for (int i = 0; i < 256; ++i) ASSERT_EQ_DBL(g1[i], e1[i]);
      if (c == 0) {
        memcpy(ref2, g2, sizeof ref2);
        for (int i = 0; i < 64; ++i) ASSERT_EQ_DBL(g2[64 + i], (x[i] - 1.0f) * z[64 + i]);
      }
      for (int i = 0; i < 128; ++i) ASSERT_EQ_DBL(g2[i], ref2[i]);  // exp: the reference's bits
      for (int i = 0; i < 128; ++i) ASSERT_EQ_DBL(g3[i], e3[i]);
      for (int i = 0; i < 64; ++i) ASSERT_EQ_DBL(g4[i], e4[i]);
      for (int i = 0; i < 128; ++i) ASSERT_EQ_DBL(g5[i], e5[i]);
      for (int i = 0; i < 6; ++i) ASSERT_EQ_DBL(g6[i], e6[i]);
      for (int i = 0; i < 64; ++i) {
        ASSERT_EQ_DBL(g7[i], x[i] * 6.0f);
        ASSERT_EQ_DBL(g7[64 + i], x[i] * 8.0f);
        ASSERT_EQ_DBL(g8[i], x[i] * 6.0f + 1.0f);
        ASSERT_EQ_DBL(g9[i], x[i] * 7.0f);
        ASSERT_EQ_DBL(g9[64 + i], x[i]);
        ASSERT_EQ_DBL(g10[i], x[i] * 7.0f - 1.0f);
      }
    }
    cml_executable_release(exe);
    cml_backend_release(be);
  }
}

// Scatter and DynamicUpdateSlice into a broadcast of one element:
//   s1 = ScatterSum(B(0.0) [1100, 256], ids, wide): filled (the gradient of a gather; over
//        CMLC_OPT_FOLD_MAX_BYTES, so the broadcast is not folded into a constant)
//   s2 = ScatterMax(B(x0) [6, 4], ids, rows), x0 a scalar parameter: filled
//   s3 = DUS(B(k) [5, 3], u, (1, 0)), i32, k a scalar parameter: filled
//   s4 = ScatterSum(z, ids, rows) + z with z = B(-x0): z read twice, not filled
//   s5 = ScatterSum(B(row [1, 4]) [6, 4], ...): a broadcast of 4 elements, not filled
static cml_status_t ot_build_fills(cml_backend_t* backend, cml_executable_t** exe) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(backend, "fills", &b));
  cml_function_t* f = cml_builder_main(b);
  const cml_dtype_t d = CML_DTYPE_F32;
  cml_shape_t is = ot_shape2(CML_DTYPE_I32, 5, 1), rs = ot_shape2(d, 5, 4);
  cml_shape_t ss = cml_shape_scalar(d), us = ot_shape2(CML_DTYPE_I32, 2, 3),
              ws = ot_shape2(d, 1, 4);
  cml_shape_t ks = cml_shape_scalar(CML_DTYPE_I32), wide_s = ot_shape2(d, 5, 256);
  cml_value_t ids = cml_parameter(f, "ids", &is), rows = cml_parameter(f, "rows", &rs);
  cml_value_t x0 = cml_parameter(f, "x0", &ss), u = cml_parameter(f, "u", &us);
  cml_value_t row = cml_parameter(f, "row", &ws), k = cml_parameter(f, "k", &ks);
  cml_value_t wide = cml_parameter(f, "wide", &wide_s);
  const int64_t od[2] = {6, 4};
  cml_scatter_dims_t sd;
  memset(&sd, 0, sizeof sd);
  sd.index_vector_axis = 1;
  sd.update_window_axis_count = 1;
  sd.update_window_axes[0] = 1;
  sd.inserted_window_axis_count = 1;
  sd.scatter_axes_to_operand_axes_count = 1;
  cml_value_t zero = cml_op_broadcast_in_dim(f, cml_constant_scalar_f64(f, d, 0.0),
                                             (const int64_t[]){1100, 256}, 2, NULL, 0);
  cml_value_t s1 = cml_op_scatter_sum(f, zero, ids, wide, &sd);
  cml_value_t s2 =
      cml_op_scatter_max(f, cml_op_broadcast_in_dim(f, x0, od, 2, NULL, 0), ids, rows, &sd);
  cml_value_t kk = cml_op_broadcast_in_dim(f, k, (const int64_t[]){5, 3}, 2, NULL, 0);
  cml_value_t starts[2] = {cml_constant_scalar_i64(f, CML_DTYPE_I32, 1),
                           cml_constant_scalar_i64(f, CML_DTYPE_I32, 0)};
  cml_value_t s3 = cml_op_dynamic_update_slice(f, kk, u, starts, 2);
  cml_value_t z = cml_op_broadcast_in_dim(f, cml_op_neg(f, x0), od, 2, NULL, 0);
  cml_value_t s4 = cml_op_add(f, cml_op_scatter_sum(f, z, ids, rows, &sd), z);
  cml_value_t s5 = cml_op_scatter_sum(
      f, cml_op_broadcast_in_dim(f, row, od, 2, (const int64_t[]){0, 1}, 2), ids, rows, &sd);
  const cml_value_t outs[5] = {s1, s2, s3, s4, s5};
  return ot_finish(b, outs, 5, exe);
}

TEST(scatter_into_a_broadcast_fills_the_output) {
  const int32_t ids[5] = {2, 0, 2, 5, 1100};  // 1100: out of bounds everywhere, skipped
  float rows[20], x0 = -0.5f, row[4] = {3, -1, 0.25f, 8};
  static float wide[5 * 256], e1[1100 * 256], g1[1100 * 256];
  for (int i = 0; i < 20; ++i) rows[i] = (float)((i * 7) % 11 - 5) * 0.5f;
  for (int i = 0; i < 5 * 256; ++i) wide[i] = (float)((i * 5) % 13 - 6) * 0.25f;
  const int32_t u[6] = {-1, -2, -3, -4, -5, -6}, k = 7;
  // Expected, by definition.
  float e2[24], e4[24], e5[24];
  int32_t e3[15];
  memset(e1, 0, sizeof e1);
  for (int i = 0; i < 24; ++i) e2[i] = x0, e4[i] = -x0, e5[i] = row[i % 4];
  for (int s = 0; s < 5; ++s) {
    if (ids[s] >= 1100) continue;
    for (int j = 0; j < 256; ++j) e1[ids[s] * 256 + j] += wide[s * 256 + j];
    if (ids[s] > 5) continue;
    for (int j = 0; j < 4; ++j) {
      const float v = rows[s * 4 + j];
      if (v > e2[ids[s] * 4 + j]) e2[ids[s] * 4 + j] = v;
      e4[ids[s] * 4 + j] += v;
      e5[ids[s] * 4 + j] += v;
    }
  }
  for (int i = 0; i < 24; ++i) e4[i] += -x0;
  for (int i = 0; i < 15; ++i) e3[i] = (i >= 3 && i < 9) ? u[i - 3] : k;
  const char* configs[3] = {"c:reference=true", "c:threads=2", "c:threads=1,fusion=false"};
  for (int c = 0; c < 3; ++c) {
    cml_backend_t* be = ot_backend(configs[c]);
    ASSERT_TRUE(be != NULL);
    cml_executable_t* exe = NULL;
    ASSERT_STATUS_OK(ot_build_fills(be, &exe));
    ASSERT_EQ_INT(ot_stats(exe)->broadcasts_filled, c == 0 ? 0 : 3);
    float g2[24], g4[24], g5[24];
    int32_t g3[15];
    const void* ins[7] = {ids, rows, &x0, u, row, &k, wide};
    void* outs[5] = {g1, g2, g3, g4, g5};
    for (int rep = 0; rep < 2; ++rep) {
      ASSERT_STATUS_OK(ot_run(exe, be, ins, outs));
      ASSERT_TRUE(memcmp(g1, e1, sizeof e1) == 0);
      for (int i = 0; i < 24; ++i) {
        ASSERT_EQ_DBL(g2[i], e2[i]);
        ASSERT_EQ_DBL(g4[i], e4[i]);
        ASSERT_EQ_DBL(g5[i], e5[i]);
      }
      for (int i = 0; i < 15; ++i) ASSERT_EQ_INT(g3[i], e3[i]);
    }
    cml_executable_release(exe);
    cml_backend_release(be);
  }
}

TEST_MAIN(TEST_ENTRY(folding_constants), TEST_ENTRY(folding_bounds_and_rng),
          TEST_ENTRY(cse_merges_identical_nodes), TEST_ENTRY(fusion_chain_with_broadcasts),
          TEST_ENTRY(fusion_cuts_long_groups_into_loops),
          TEST_ENTRY(fusion_half_chains_equal_unfused),
          TEST_ENTRY(fused_equals_unfused_random_sweep), TEST_ENTRY(fusion_and_folding_in_closures),
          TEST_ENTRY(concurrent_fused_executions), TEST_ENTRY(transposes_fold_into_dots),
          TEST_ENTRY(concat_operands_computed_in_place),
          TEST_ENTRY(scatter_into_a_broadcast_fills_the_output),
          TEST_ENTRY(execute_overhead_report))
