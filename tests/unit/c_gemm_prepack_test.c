// SPDX-License-Identifier: Apache-2.0
// tests/unit/c_gemm_prepack_test.c: the C backend's GEMM weight packing at plan time and its
// kernel choice at plan time. A DotGeneral whose rhs is a constant of the module gets its B
// panels packed once when the plan is built (entry.prepare; counted in the executable's stats);
// its results must be bit-identical to the same product with the rhs as a parameter (packed
// per execute), on every ISA, with 1 and 2 threads, odd shapes (edge slivers, several k and
// column blocks, skinny M), transposed and f16 weights, f64 accumulation, and across repeated
// and concurrent executions of one executable. The lookup must pick the GEMM driver and the
// output rounding for the ISA (entry.impl), and a runner handed no driver reports INTERNAL.
#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "backends/c/engine_internal.h"
#include "backends/c/kernels/generic/linalg_internal.h"
#include "cml/cml.h"
#include "test.h"

//===--- helpers ---===//

static cml_backend_t* pk_backend(const char* config) {
  cml_backend_t* b = NULL;
  cml_status_t st = cml_backend_new_with_config(config, &b);
  if (st != CML_OK) {
    fprintf(stderr, "backend %s: %s\n", config, cml_status_message(st));
    cml_status_free(st);
  }
  return b;
}

static const cmlc_opt_stats_t* pk_stats(const cml_executable_t* exe) {
  return &((const cmlc_executable_t*)exe)->stats;
}

// A deterministic value in [-1, 1) with few mantissa bits (exact in f16).
static float pk_value(int64_t i, int salt) {
  uint32_t h = (uint32_t)(i * 2654435761u) ^ (uint32_t)(salt * 40503);
  h ^= h >> 13;
  return (float)((int)(h % 256) - 128) / 128.0f;
}

typedef struct pk_case_t {
  int64_t m, k, n;
  bool trans;             // rhs stored [N, K]
  cml_dtype_t rhs_dtype;  // F32, F16 or F64 (the lhs has the same dtype)
  cml_dtype_t acc;        // accumulator / output dtype (F32 or F64)
} pk_case_t;

// lhs [M, K] times rhs [K, N] or [N, K], the rhs a constant (|as_const|) or a second
// parameter.
static cml_status_t pk_build(cml_backend_t* backend, const pk_case_t* c, const void* rhs,
                             bool as_const, cml_executable_t** exe) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(backend, "prepack", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t ls = cml_shape_make(c->rhs_dtype, 2, (int64_t[]){c->m, c->k});
  int64_t rd[2] = {c->k, c->n};
  if (c->trans) rd[0] = c->n, rd[1] = c->k;
  cml_shape_t rs = cml_shape_make(c->rhs_dtype, 2, rd);
  cml_value_t x = cml_parameter(f, "x", &ls);
  cml_value_t w = as_const ? cml_constant(f, &rs, rhs) : cml_parameter(f, "w", &rs);
  cml_dot_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.lhs_contracting_count = cfg.rhs_contracting_count = 1;
  cfg.lhs_contracting_axes[0] = 1;
  cfg.rhs_contracting_axes[0] = c->trans ? 1 : 0;
  cfg.accumulator_dtype = c->acc;
  cfg.output_dtype = c->acc;
  cml_value_t y = cml_op_dot_general(f, x, w, &cfg);
  cml_status_t st = cml_function_return(f, &y, 1);
  if (st == CML_OK) st = cml_builder_compile(b, exe);
  cml_builder_destroy(b);
  return st;
}

// Executes |exe| on host inputs and copies output 0 to |out|.
static cml_status_t pk_run(cml_executable_t* exe, cml_backend_t* b, const void* const* inputs,
                           size_t input_count, void* out) {
  cml_buffer_t* in[2] = {0};
  cml_buffer_t* res[1] = {0};
  cml_status_t st = CML_OK;
  for (size_t i = 0; i < input_count && st == CML_OK; ++i) {
    const cml_shape_t* s = cml_executable_input_shape(exe, i);
    st = cml_buffer_from_host(b, 0, s, inputs[i], cml_shape_byte_size(s), &in[i]);
  }
  if (st == CML_OK) st = cml_executable_execute(exe, in, input_count, NULL, 0, res);
  if (st == CML_OK)
    st = cml_buffer_copy_to_host(res[0], out, cml_shape_byte_size(cml_buffer_shape(res[0])));
  for (size_t i = 0; i < input_count; ++i)
    if (in[i]) cml_buffer_release(in[i]);
  if (res[0]) cml_buffer_release(res[0]);
  return st;
}

typedef struct pk_data_t {
  void* lhs;
  void* rhs;
  double* want;  // f64 reference of the product
  size_t out_bytes;
} pk_data_t;

static void pk_fill(void* data, cml_dtype_t dtype, int64_t count, int salt) {
  for (int64_t i = 0; i < count; ++i) {
    const float v = pk_value(i, salt);
    if (dtype == CML_DTYPE_F16) {
      ((uint16_t*)data)[i] = cml_f32_to_f16(v);
    } else if (dtype == CML_DTYPE_F64) {
      ((double*)data)[i] = v;
    } else {
      ((float*)data)[i] = v;
    }
  }
}

static void pk_data_make(const pk_case_t* c, int salt, pk_data_t* d) {
  const size_t es = (size_t)(cml_dtype_bits(c->rhs_dtype) / 8);
  d->lhs = malloc((size_t)(c->m * c->k) * es);
  d->rhs = malloc((size_t)(c->k * c->n) * es);
  d->want = calloc((size_t)(c->m * c->n), sizeof(double));
  d->out_bytes = (size_t)(c->m * c->n) * (c->acc == CML_DTYPE_F64 ? 8 : 4);
  pk_fill(d->lhs, c->rhs_dtype, c->m * c->k, salt);
  pk_fill(d->rhs, c->rhs_dtype, c->k * c->n, salt + 7);
  for (int64_t i = 0; i < c->m; ++i)
    for (int64_t kk = 0; kk < c->k; ++kk) {
      const double a = pk_value(i * c->k + kk, salt);
      for (int64_t j = 0; j < c->n; ++j) {
        const int64_t bi = c->trans ? j * c->k + kk : kk * c->n + j;
        d->want[i * c->n + j] += a * (double)pk_value(bi, salt + 7);
      }
    }
}

static void pk_data_free(pk_data_t* d) {
  free(d->lhs);
  free(d->rhs);
  free(d->want);
}

// Checks |got| (f32 or f64 per |c|) against the f64 reference within a bound of the f32 GEMM
// (K terms of magnitude <= 1). Returns the number of bad elements.
static int64_t pk_check(const pk_case_t* c, const void* got, const double* want) {
  int64_t bad = 0;
  const double tol = c->acc == CML_DTYPE_F64 ? 1e-12 * (double)c->k : 4e-7 * (double)c->k;
  for (int64_t i = 0; i < c->m * c->n; ++i) {
    const double g = c->acc == CML_DTYPE_F64 ? ((const double*)got)[i] : ((const float*)got)[i];
    if (!(fabs(g - want[i]) <= tol)) {
      if (bad++ < 3) fprintf(stderr, "element %lld: %.9g want %.9g\n", (long long)i, g, want[i]);
    }
  }
  return bad;
}

//===--- packed constants ---===//

static const pk_case_t kCases[] = {
    // skinny (M <= 32): one A sliver, several, a partial last one; odd N (edge slivers)
    {5, 300, 333, false, CML_DTYPE_F32, CML_DTYPE_F32},
    {16, 384, 1152, false, CML_DTYPE_F32, CML_DTYPE_F32},
    {32, 520, 200, true, CML_DTYPE_F32, CML_DTYPE_F32},
    {13, 260, 2100, false, CML_DTYPE_F32, CML_DTYPE_F32},  // two column blocks, two k blocks
    // AVX-512 per execute: the 16 x 16 in-place kernel (15 rows) or the copy (17..32) against
    // the 12 x 32 kernel on the packed constant; 33 rows: blocked
    {15, 300, 1001, false, CML_DTYPE_F32, CML_DTYPE_F32},
    {31, 300, 517, false, CML_DTYPE_F32, CML_DTYPE_F32},
    {24, 1000, 95, false, CML_DTYPE_F32, CML_DTYPE_F32},
    {33, 301, 300, false, CML_DTYPE_F32, CML_DTYPE_F32},
    // blocked path: several row blocks, column blocks and k blocks
    {100, 513, 2090, false, CML_DTYPE_F32, CML_DTYPE_F32},
    {47, 300, 129, true, CML_DTYPE_F32, CML_DTYPE_F32},
    // half weights (widened once), f64 accumulation
    {40, 257, 300, false, CML_DTYPE_F16, CML_DTYPE_F32},
    {20, 200, 150, true, CML_DTYPE_F16, CML_DTYPE_F32},
    {30, 270, 100, false, CML_DTYPE_F64, CML_DTYPE_F64},
};

static const char* const kConfigs[] = {
    "c:threads=1",
    "c:threads=2",
    "c:threads=2,avx512=false",
    "c:threads=2,avx512=false,avx2=false",
};

TEST(constant_rhs_packed_once_same_bits_as_per_execute) {
  for (size_t ci = 0; ci < sizeof kConfigs / sizeof kConfigs[0]; ++ci) {
    cml_backend_t* b = pk_backend(kConfigs[ci]);
    ASSERT_TRUE(b != NULL);
    for (size_t i = 0; i < sizeof kCases / sizeof kCases[0]; ++i) {
      const pk_case_t* c = &kCases[i];
      pk_data_t d;
      pk_data_make(c, (int)i, &d);
      cml_executable_t* ce = NULL;
      cml_executable_t* pe = NULL;
      ASSERT_STATUS_OK(pk_build(b, c, d.rhs, true, &ce));
      ASSERT_STATUS_OK(pk_build(b, c, d.rhs, false, &pe));
      ASSERT_EQ_INT(pk_stats(ce)->prepared, 1);
      ASSERT_EQ_INT(pk_stats(pe)->prepared, 0);
      void* want = malloc(d.out_bytes);
      void* got = malloc(d.out_bytes);
      const void* pins[2] = {d.lhs, d.rhs};
      ASSERT_STATUS_OK(pk_run(pe, b, pins, 2, want));
      ASSERT_EQ_INT(pk_check(c, want, d.want), 0);
      for (int rep = 0; rep < 3; ++rep) {
        memset(got, 0xA5, d.out_bytes);
        ASSERT_STATUS_OK(pk_run(ce, b, (const void* const*)&d.lhs, 1, got));
        if (memcmp(got, want, d.out_bytes) != 0) {
          fprintf(stderr, "%s case %zu (M%lld K%lld N%lld) rep %d differs\n", kConfigs[ci], i,
                  (long long)c->m, (long long)c->k, (long long)c->n, rep);
        }
        ASSERT_TRUE(memcmp(got, want, d.out_bytes) == 0);
      }
      free(want);
      free(got);
      cml_executable_release(ce);
      cml_executable_release(pe);
      pk_data_free(&d);
    }
    cml_backend_release(b);
  }
}

// Skinny products with values whose products and sums round (so a change in the order of the
// k terms, or a multiply and add in place of a fused multiply-add, changes the bits): the
// parameter B goes through the skinny path (AVX-512: the 16 x 16 kernel reading B in place for
// 13..16 rows, each sliver copied for 17..32; AVX2: each sliver copied), the constant B through
// the packed 12 x 32 (AVX2: 6 x 16) kernel; both must give the same bits, and be close to an
// f64 reference.
TEST(skinny_in_place_same_bits_as_packed_inexact) {
  static const int64_t shapes[][3] = {{13, 300, 517}, {16, 384, 1152}, {17, 260, 300},
                                      {24, 1000, 95}, {31, 300, 517},  {32, 530, 333},
                                      {12, 290, 333}, {1, 300, 500}};
  static const char* const configs[] = {"c:threads=1", "c:threads=2", "c:threads=2,avx512=false"};
  for (size_t ci = 0; ci < sizeof configs / sizeof configs[0]; ++ci) {
    cml_backend_t* b = pk_backend(configs[ci]);
    ASSERT_TRUE(b != NULL);
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; ++si) {
      const pk_case_t c = {shapes[si][0], shapes[si][1], shapes[si][2],
                           false,         CML_DTYPE_F32, CML_DTYPE_F32};
      float* lhs = malloc(sizeof(float) * (size_t)(c.m * c.k));
      float* rhs = malloc(sizeof(float) * (size_t)(c.k * c.n));
      float* want = malloc(sizeof(float) * (size_t)(c.m * c.n));
      float* got = malloc(sizeof(float) * (size_t)(c.m * c.n));
      for (int64_t i = 0; i < c.m * c.k; ++i) lhs[i] = pk_value(i, 3) * 0.7071f + 0.0173f;
      for (int64_t i = 0; i < c.k * c.n; ++i) rhs[i] = pk_value(i, 5) * 1.1f - 0.0311f;
      cml_executable_t* ce = NULL;
      cml_executable_t* pe = NULL;
      ASSERT_STATUS_OK(pk_build(b, &c, rhs, true, &ce));
      ASSERT_STATUS_OK(pk_build(b, &c, rhs, false, &pe));
      ASSERT_STATUS_OK(pk_run(pe, b, (const void*[]){lhs, rhs}, 2, want));
      ASSERT_STATUS_OK(pk_run(ce, b, (const void* const*)&lhs, 1, got));
      int64_t bad = 0;
      for (int64_t i = 0; i < c.m; ++i)
        for (int64_t j = 0; j < c.n; ++j) {
          double ref = 0;
          for (int64_t kk = 0; kk < c.k; ++kk)
            ref += (double)lhs[i * c.k + kk] * (double)rhs[kk * c.n + j];
          if (!(fabs(want[i * c.n + j] - ref) <= 1e-6 * (double)c.k) && bad++ < 3)
            fprintf(stderr, "%s M%lld (%lld,%lld): %.9g want %.9g\n", configs[ci], (long long)c.m,
                    (long long)i, (long long)j, want[i * c.n + j], ref);
        }
      if (memcmp(got, want, sizeof(float) * (size_t)(c.m * c.n)) != 0)
        fprintf(stderr, "%s M%lld K%lld N%lld: constant and parameter rhs differ\n", configs[ci],
                (long long)c.m, (long long)c.k, (long long)c.n);
      ASSERT_EQ_INT(bad, 0);
      ASSERT_TRUE(memcmp(got, want, sizeof(float) * (size_t)(c.m * c.n)) == 0);
      cml_executable_release(ce);
      cml_executable_release(pe);
      free(lhs), free(rhs), free(want), free(got);
    }
    cml_backend_release(b);
  }
}

// Where packing once would not pay (GEMV, small B) or the GEMM does not run (reference
// kernels), nothing is prepared and the results are still right.
TEST(no_prepare_where_it_does_not_apply) {
  const struct {
    const char* config;
    pk_case_t c;
  } cases[] = {
      {"c:threads=2", {1, 512, 512, false, CML_DTYPE_F32, CML_DTYPE_F32}},  // GEMV
      {"c:threads=2", {64, 64, 64, false, CML_DTYPE_F32, CML_DTYPE_F32}},   // B read in place
      {"c:threads=2,reference=true", {16, 300, 200, false, CML_DTYPE_F32, CML_DTYPE_F32}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    cml_backend_t* b = pk_backend(cases[i].config);
    ASSERT_TRUE(b != NULL);
    const pk_case_t* c = &cases[i].c;
    pk_data_t d;
    pk_data_make(c, 3, &d);
    cml_executable_t* ce = NULL;
    ASSERT_STATUS_OK(pk_build(b, c, d.rhs, true, &ce));
    ASSERT_EQ_INT(pk_stats(ce)->prepared, 0);
    void* got = malloc(d.out_bytes);
    ASSERT_STATUS_OK(pk_run(ce, b, (const void* const*)&d.lhs, 1, got));
    ASSERT_EQ_INT(pk_check(c, got, d.want), 0);
    free(got);
    cml_executable_release(ce);
    pk_data_free(&d);
    cml_backend_release(b);
  }
}

typedef struct pk_thread_t {
  cml_executable_t* exe;
  cml_backend_t* backend;
  const pk_case_t* c;
  const void* lhs;
  const void* want;
  size_t out_bytes;
  int mismatches;
  int failures;
} pk_thread_t;

static void* pk_thread_main(void* arg) {
  pk_thread_t* t = arg;
  void* got = malloc(t->out_bytes);
  for (int rep = 0; rep < 4; ++rep) {
    cml_status_t st = pk_run(t->exe, t->backend, &t->lhs, 1, got);
    if (st != CML_OK) {
      ++t->failures;
      cml_status_free(st);
      continue;
    }
    if (memcmp(got, t->want, t->out_bytes) != 0) ++t->mismatches;
  }
  free(got);
  return NULL;
}

// One executable with a packed constant, executed from four threads at once (each with its
// own lhs), on a 2-thread pool: every result equals the per-execute packing's.
TEST(prepacked_executable_shared_by_threads) {
  cml_backend_t* b = pk_backend("c:threads=2");
  ASSERT_TRUE(b != NULL);
  const pk_case_t c = {24, 300, 700, false, CML_DTYPE_F32, CML_DTYPE_F32};
  enum { kThreads = 4 };
  pk_data_t d[kThreads];
  for (int t = 0; t < kThreads; ++t) pk_data_make(&c, 11, &d[t]);
  // Same weights, different activations.
  for (int t = 1; t < kThreads; ++t)
    for (int64_t i = 0; i < c.m * c.k; ++i) ((float*)d[t].lhs)[i] = pk_value(i, 100 + t);
  cml_executable_t* ce = NULL;
  cml_executable_t* pe = NULL;
  ASSERT_STATUS_OK(pk_build(b, &c, d[0].rhs, true, &ce));
  ASSERT_STATUS_OK(pk_build(b, &c, d[0].rhs, false, &pe));
  ASSERT_EQ_INT(pk_stats(ce)->prepared, 1);
  void* want[kThreads];
  pk_thread_t th[kThreads];
  pthread_t ids[kThreads];
  for (int t = 0; t < kThreads; ++t) {
    want[t] = malloc(d[t].out_bytes);
    const void* pins[2] = {d[t].lhs, d[0].rhs};
    ASSERT_STATUS_OK(pk_run(pe, b, pins, 2, want[t]));
    th[t] = (pk_thread_t){ce, b, &c, d[t].lhs, want[t], d[t].out_bytes, 0, 0};
  }
  for (int t = 0; t < kThreads; ++t)
    ASSERT_EQ_INT(pthread_create(&ids[t], NULL, pk_thread_main, &th[t]), 0);
  for (int t = 0; t < kThreads; ++t) pthread_join(ids[t], NULL);
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ_INT(th[t].failures, 0);
    ASSERT_EQ_INT(th[t].mismatches, 0);
    free(want[t]);
    pk_data_free(&d[t]);
  }
  cml_executable_release(ce);
  cml_executable_release(pe);
  cml_backend_release(b);
}

//===--- kernel choice at plan time ---===//

// A hand-made DotGeneral [m, k] x [k, n] with |out| dtype.
typedef struct pk_node_t {
  cml_ir_value_t values[4];
  uint32_t inputs[2];
  cml_module_t module;
  cml_ir_node_t node;
  cml_ir_attrs_t attrs;
} pk_node_t;

static void pk_node_init(pk_node_t* f, int64_t m, int64_t k, int64_t n, cml_dtype_t in,
                         cml_dtype_t out) {
  memset(f, 0, sizeof *f);
  f->values[1].shape = cml_shape_make(in, 2, (int64_t[]){m, k});
  f->values[2].shape = cml_shape_make(in, 2, (int64_t[]){k, n});
  f->values[3].shape = cml_shape_make(out, 2, (int64_t[]){m, n});
  f->inputs[0] = 1;
  f->inputs[1] = 2;
  f->module.value_count = 4;
  f->module.values = f->values;
  f->module.node_count = 1;
  f->module.nodes = &f->node;
  f->module.num_devices = 1;
  f->node.op = CML_OP_DOT_GENERAL;
  f->node.input_count = 2;
  f->node.inputs = f->inputs;
  f->node.output_count = 1;
  f->node.first_output = 3;
  f->node.attrs = &f->attrs;
  cml_dot_config_t* d = &f->attrs.u.dot;
  d->lhs_contracting_count = d->rhs_contracting_count = 1;
  d->lhs_contracting_axes[0] = 1;
  d->rhs_contracting_axes[0] = 0;
  d->accumulator_dtype = CML_DTYPE_F32;
  d->output_dtype = out;
}

TEST(lookup_picks_gemm_driver_at_plan_time) {
  const cmlc_isa_t isas[] = {CMLC_ISA_SCALAR, CMLC_ISA_AVX2, CMLC_ISA_AVX512};
  pk_node_t f;
  pk_node_init(&f, 8, 40, 24, CML_DTYPE_F32, CML_DTYPE_F16);
  for (size_t i = 0; i < 3; ++i) {
    cmlc_options_t o;
    memset(&o, 0, sizeof o);
    o.isa = isas[i];
    o.threads = 1;
    o.devices = 1;
    cmlc_kernel_entry_t e;
    memset(&e, 0, sizeof e);
    ASSERT_TRUE(cmlc_kernels_linalg_lookup(&f.module, &f.node, &o, &e));
    ASSERT_TRUE(e.impl[0] == (cmlc_impl_fn)cmlc__gemm_f32_pick(isas[i]));
    ASSERT_TRUE(e.impl[1] == (cmlc_impl_fn)cmlc__gemm_narrow_pick(CML_DTYPE_F16, isas[i]));
    ASSERT_TRUE(e.prepare != NULL);
  }
#if defined(CMLC_HAVE_X86_64)
  ASSERT_TRUE(cmlc__gemm_f32_pick(CMLC_ISA_AVX512) != cmlc__gemm_f32_pick(CMLC_ISA_SCALAR));
  ASSERT_TRUE(cmlc__gemm_f32_pick(CMLC_ISA_AVX2) != cmlc__gemm_f32_pick(CMLC_ISA_SCALAR));
  ASSERT_TRUE(cmlc__gemm_f64_pick(CMLC_ISA_AVX512) != cmlc__gemm_f64_pick(CMLC_ISA_AVX2));
#endif
  // Reference kernels: no GEMM, nothing picked.
  cmlc_options_t r;
  memset(&r, 0, sizeof r);
  r.reference = true;
  r.threads = 1;
  r.devices = 1;
  cmlc_kernel_entry_t e;
  memset(&e, 0, sizeof e);
  ASSERT_TRUE(cmlc_kernels_linalg_lookup(&f.module, &f.node, &r, &e));
  ASSERT_TRUE(e.impl[0] == NULL && e.prepare == NULL);
}

// The runner never picks a driver itself: handed an entry without one, it reports INTERNAL
// naming the op and shapes.
TEST(runner_without_picked_driver_is_internal) {
  pk_node_t f;
  pk_node_init(&f, 4, 8, 8, CML_DTYPE_F32, CML_DTYPE_F32);
  cmlc_options_t o;
  memset(&o, 0, sizeof o);
  o.isa = CMLC_ISA_SCALAR;
  o.threads = 1;
  o.devices = 1;
  cmlc_kernel_entry_t e;
  memset(&e, 0, sizeof e);
  ASSERT_TRUE(cmlc_kernels_linalg_lookup(&f.module, &f.node, &o, &e));
  float x[32] = {0}, w[64] = {0}, y[32];
  const void* ins[2] = {x, w};
  void* outs[1] = {y};
  const cml_shape_t* in_shapes[2] = {&f.values[1].shape, &f.values[2].shape};
  const cml_shape_t* out_shapes[1] = {&f.values[3].shape};
  size_t size = e.scratch(&f.module, &f.node, &o);
  void* scratch = aligned_alloc(64, (size + 63) & ~(size_t)63);
  cmlc_kernel_args_t a;
  memset(&a, 0, sizeof a);
  a.module = &f.module;
  a.node = &f.node;
  a.options = &o;
  a.input_count = 2;
  a.input_shapes = in_shapes;
  a.inputs = ins;
  a.output_count = 1;
  a.output_shapes = out_shapes;
  a.outputs = outs;
  a.scratch = scratch;
  a.scratch_size = size;
  cml_status_t st = e.run(&a);  // impl not copied
  ASSERT_EQ_INT(cml_status_code(st), CML_STATUS_INTERNAL);
  ASSERT_TRUE(strstr(cml_status_message(st), "DotGeneral") != NULL);
  ASSERT_TRUE(strstr(cml_status_message(st), "[4, 8]") != NULL);
  cml_status_free(st);
  memcpy(a.impl, e.impl, sizeof a.impl);
  ASSERT_STATUS_OK(e.run(&a));
  free(scratch);
}

TEST_MAIN(TEST_ENTRY(constant_rhs_packed_once_same_bits_as_per_execute),
          TEST_ENTRY(skinny_in_place_same_bits_as_packed_inexact),
          TEST_ENTRY(no_prepare_where_it_does_not_apply),
          TEST_ENTRY(prepacked_executable_shared_by_threads),
          TEST_ENTRY(lookup_picks_gemm_driver_at_plan_time),
          TEST_ENTRY(runner_without_picked_driver_is_internal))
