// SPDX-License-Identifier: Apache-2.0
// tests/unit/c_kernels_linalg_test.c: the "linalg" kernel group (DotGeneral, Dot, ConvGeneral)
// called directly on hand-made IR nodes: hand-computed values, an independent naive loop for
// larger products, every ISA's GEMM, and thread-count independence.
#include <float.h>
#include <stdlib.h>

#include "backends/c/cmlc.h"
#include "backends/c/kernels/generic/linalg_internal.h"
#include "test.h"

//===--- a one-node module ---===//

typedef struct fake_t {
  cml_ir_value_t values[8];
  uint32_t inputs[6];
  cml_ir_node_t node;
  cml_ir_attrs_t attrs;
  cml_module_t module;
} fake_t;

static void fake_init(fake_t* f, cml_op_t op, const cml_shape_t* ins, uint32_t nin,
                      const cml_shape_t* outs, uint32_t nout) {
  memset(f, 0, sizeof *f);
  for (uint32_t i = 0; i < nin; ++i) {
    f->values[1 + i].shape = ins[i];
    f->inputs[i] = 1 + i;
  }
  for (uint32_t i = 0; i < nout; ++i) {
    f->values[1 + nin + i].shape = outs[i];
    f->values[1 + nin + i].output = i;
  }
  f->node.op = op;
  f->node.input_count = nin;
  f->node.inputs = f->inputs;
  f->node.output_count = nout;
  f->node.first_output = 1 + nin;
  f->node.attrs = &f->attrs;
  f->module.node_count = 1;
  f->module.nodes = &f->node;
  f->module.value_count = 1 + nin + nout;
  f->module.values = f->values;
  f->module.num_devices = 1;
}

static cmlc_options_t make_options(cmlc_isa_t isa, bool reference, int threads) {
  cmlc_options_t o;
  memset(&o, 0, sizeof o);
  o.isa = isa;
  o.reference = reference;
  o.threads = threads;
  o.devices = 1;
  return o;
}

// Looks the node up in the linalg group and runs it. Returns the run status (INTERNAL when the
// lookup fails).
static cml_status_t fake_run(fake_t* f, const cmlc_options_t* opts, cmlc_pool_t* pool,
                             const void* const* inputs, void* const* outputs) {
  cmlc_kernel_entry_t e;
  memset(&e, 0, sizeof e);
  if (!cmlc_kernels_linalg_lookup(&f->module, &f->node, opts, &e))
    return cml_status_make(CML_STATUS_INTERNAL, "lookup failed for %s", cml_op_name(f->node.op));
  size_t size = e.scratch ? e.scratch(&f->module, &f->node, opts) : 0;
  void* scratch = size ? aligned_alloc(64, (size + 63) & ~(size_t)63) : NULL;
  const cml_shape_t* in_shapes[6];
  const cml_shape_t* out_shapes[3];
  for (uint32_t i = 0; i < f->node.input_count; ++i) in_shapes[i] = &f->values[f->inputs[i]].shape;
  for (uint32_t i = 0; i < f->node.output_count; ++i)
    out_shapes[i] = &f->values[f->node.first_output + i].shape;
  cmlc_kernel_args_t a;
  memset(&a, 0, sizeof a);
  a.module = &f->module;
  a.node = &f->node;
  a.options = opts;
  a.input_count = f->node.input_count;
  a.input_shapes = in_shapes;
  a.inputs = inputs;
  a.output_count = f->node.output_count;
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

static cml_shape_t shp(cml_dtype_t dt, int32_t rank, const int64_t* dims) {
  return cml_shape_make(dt, rank, dims);
}

// Standard matmul config: lhs [.., M, K] x rhs [.., K, N] with |nb| leading batch axes.
static void dot_config(cml_ir_attrs_t* at, int32_t nb, int32_t lhs_rank, cml_dtype_t acc) {
  cml_dot_config_t* d = &at->u.dot;
  d->lhs_batch_count = d->rhs_batch_count = nb;
  for (int32_t i = 0; i < nb; ++i) d->lhs_batch_axes[i] = d->rhs_batch_axes[i] = i;
  d->lhs_contracting_count = d->rhs_contracting_count = 1;
  d->lhs_contracting_axes[0] = lhs_rank - 1;
  d->rhs_contracting_axes[0] = nb;
  d->accumulator_dtype = acc;
  d->output_dtype = acc;
}

static const cmlc_isa_t kIsas[] = {CMLC_ISA_SCALAR, CMLC_ISA_AVX2, CMLC_ISA_AVX512};

static bool isa_usable(cmlc_isa_t isa) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (isa == CMLC_ISA_AVX2) return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (isa == CMLC_ISA_AVX512) return __builtin_cpu_supports("avx512f");
  return true;
#else
  return isa == CMLC_ISA_SCALAR;
#endif
}

//===--- DotGeneral ---===//

TEST(dot_f32_small_every_path) {
  // [[1,2,3],[4,5,6]] x [[7,8],[9,10],[11,12]] = [[58,64],[139,154]].
  float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {7, 8, 9, 10, 11, 12};
  fake_t f;
  cml_shape_t ins[2] = {shp(CML_DTYPE_F32, 2, (int64_t[]){2, 3}),
                        shp(CML_DTYPE_F32, 2, (int64_t[]){3, 2})};
  cml_shape_t out = shp(CML_DTYPE_F32, 2, (int64_t[]){2, 2});
  fake_init(&f, CML_OP_DOT_GENERAL, ins, 2, &out, 1);
  dot_config(&f.attrs, 0, 2, CML_DTYPE_F32);
  for (int ref = 0; ref < 2; ++ref) {
    for (size_t i = 0; i < 3; ++i) {
      if (!isa_usable(kIsas[i])) continue;
      cmlc_options_t o = make_options(kIsas[i], ref, 1);
      float c[4] = {-1, -1, -1, -1};
      ASSERT_STATUS_OK(fake_run(&f, &o, NULL, (const void*[]){a, b}, (void*[]){c}));
      ASSERT_EQ_DBL(c[0], 58);
      ASSERT_EQ_DBL(c[1], 64);
      ASSERT_EQ_DBL(c[2], 139);
      ASSERT_EQ_DBL(c[3], 154);
    }
  }
}

// Naive reference: lhs [B, K, M] (transposed layout), rhs [N, B, K], out [B, M, N].
static void naive_bkm_nbk(const float* a, const float* b, double* c, int64_t B, int64_t M,
                          int64_t N, int64_t K) {
  for (int64_t bb = 0; bb < B; ++bb)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k)
          s += (double)a[(bb * K + k) * M + m] * (double)b[(n * B + bb) * K + k];
        c[(bb * M + m) * N + n] = s;
      }
}

TEST(dot_f32_transposed_layouts_blocks_and_threads) {
  // Sizes cross every block boundary: M > MC, K > KC (two k blocks), odd N.
  const int64_t B = 2, M = 131, N = 37, K = 600;
  float* a = malloc(sizeof(float) * B * K * M);
  float* b = malloc(sizeof(float) * N * B * K);
  double* want = malloc(sizeof(double) * B * M * N);
  float* c1 = malloc(sizeof(float) * B * M * N);
  float* c2 = malloc(sizeof(float) * B * M * N);
  uint32_t seed = 12345;
  for (int64_t i = 0; i < B * K * M; ++i) {
    seed = seed * 1664525u + 1013904223u;
    a[i] = (float)((int)(seed >> 20) % 17 - 8) / 8.0f;
  }
  for (int64_t i = 0; i < N * B * K; ++i) {
    seed = seed * 1664525u + 1013904223u;
    b[i] = (float)((int)(seed >> 20) % 13 - 6) / 4.0f;
  }
  naive_bkm_nbk(a, b, want, B, M, N, K);
  fake_t f;
  cml_shape_t ins[2] = {shp(CML_DTYPE_F32, 3, (int64_t[]){B, K, M}),
                        shp(CML_DTYPE_F32, 3, (int64_t[]){N, B, K})};
  cml_shape_t out = shp(CML_DTYPE_F32, 3, (int64_t[]){B, M, N});
  fake_init(&f, CML_OP_DOT_GENERAL, ins, 2, &out, 1);
  cml_dot_config_t* d = &f.attrs.u.dot;
  d->lhs_batch_count = d->rhs_batch_count = 1;
  d->lhs_batch_axes[0] = 0;
  d->rhs_batch_axes[0] = 1;
  d->lhs_contracting_count = d->rhs_contracting_count = 1;
  d->lhs_contracting_axes[0] = 1;
  d->rhs_contracting_axes[0] = 2;
  d->accumulator_dtype = d->output_dtype = CML_DTYPE_F32;
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  int failed = 0;
  for (int ref = 0; ref < 2 && !failed; ++ref) {
    for (size_t i = 0; i < 3 && !failed; ++i) {
      if (!isa_usable(kIsas[i]) || (ref && i > 0)) continue;
      cmlc_options_t o1 = make_options(kIsas[i], ref, 1);
      cmlc_options_t o3 = make_options(kIsas[i], ref, 3);
      cml_status_t s1 = fake_run(&f, &o1, NULL, (const void*[]){a, b}, (void*[]){c1});
      cml_status_t s3 = fake_run(&f, &o3, pool, (const void*[]){a, b}, (void*[]){c2});
      if (s1 != CML_OK || s3 != CML_OK) {
        fprintf(stderr, "run failed: %s / %s\n", cml_status_message(s1), cml_status_message(s3));
        cml_status_free(s1);
        cml_status_free(s3);
        failed = 1;
        break;
      }
      // Inputs are multiples of 1/8 and 1/4 with small numerators: every product and partial
      // sum is exact in f32, so the result must equal the double reference exactly.
      for (int64_t e = 0; e < B * M * N; ++e) {
        if ((double)c1[e] != want[e] || memcmp(&c1[e], &c2[e], sizeof(float)) != 0) {
          fprintf(stderr, "isa %d ref %d elem %lld: got %g / %g want %g\n", (int)kIsas[i], ref,
                  (long long)e, c1[e], c2[e], want[e]);
          failed = 1;
          break;
        }
      }
    }
  }
  cmlc_pool_destroy(pool);
  free(a), free(b), free(want), free(c1), free(c2);
  ASSERT_FALSE(failed);
}

TEST(dot_f32_inexact_thread_independent) {
  // Inexact values: results from 1 and 4 threads must be bitwise identical, and close to a
  // double reference.
  const int64_t M = 200, N = 300, K = 700;
  float* a = malloc(sizeof(float) * M * K);
  float* b = malloc(sizeof(float) * K * N);
  float* c1 = malloc(sizeof(float) * M * N);
  float* c4 = malloc(sizeof(float) * M * N);
  uint32_t seed = 777;
  for (int64_t i = 0; i < M * K; ++i) {
    seed = seed * 1664525u + 1013904223u;
    a[i] = (float)(seed >> 8) / 16777216.0f - 0.5f;
  }
  for (int64_t i = 0; i < K * N; ++i) {
    seed = seed * 1664525u + 1013904223u;
    b[i] = (float)(seed >> 8) / 16777216.0f - 0.5f;
  }
  fake_t f;
  cml_shape_t ins[2] = {shp(CML_DTYPE_F32, 2, (int64_t[]){M, K}),
                        shp(CML_DTYPE_F32, 2, (int64_t[]){K, N})};
  cml_shape_t out = shp(CML_DTYPE_F32, 2, (int64_t[]){M, N});
  fake_init(&f, CML_OP_DOT, ins, 2, &out, 1);
  dot_config(&f.attrs, 0, 2, CML_DTYPE_F32);
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(4, cml_allocator_system(), &pool));
  int failed = 0;
  for (size_t i = 0; i < 3 && !failed; ++i) {
    if (!isa_usable(kIsas[i])) continue;
    cmlc_options_t o1 = make_options(kIsas[i], false, 1), o4 = make_options(kIsas[i], false, 4);
    cml_status_t s1 = fake_run(&f, &o1, NULL, (const void*[]){a, b}, (void*[]){c1});
    cml_status_t s4 = fake_run(&f, &o4, pool, (const void*[]){a, b}, (void*[]){c4});
    if (s1 != CML_OK || s4 != CML_OK) {
      cml_status_free(s1), cml_status_free(s4);
      failed = 1;
      break;
    }
    if (memcmp(c1, c4, sizeof(float) * M * N) != 0) failed = 2;
    for (int64_t m = 0; m < M && !failed; m += 37) {
      for (int64_t n = 0; n < N; n += 41) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k) s += (double)a[m * K + k] * (double)b[k * N + n];
        if (fabs(s - c1[m * N + n]) > 1e-4) {
          fprintf(stderr, "isa %d (%lld,%lld): %g vs %g\n", (int)kIsas[i], (long long)m,
                  (long long)n, c1[m * N + n], s);
          failed = 3;
          break;
        }
      }
    }
  }
  cmlc_pool_destroy(pool);
  free(a), free(b), free(c1), free(c4);
  ASSERT_EQ_INT(failed, 0);
}

TEST(dot_int_wraps_and_accumulates) {
  // i8 x i8 with an i32 accumulator: 127*127*3 = 48387 fits in i32.
  int8_t a[3] = {127, 127, 127}, b[3] = {127, 127, -128};
  fake_t f;
  cml_shape_t ins[2] = {shp(CML_DTYPE_I8, 1, (int64_t[]){3}), shp(CML_DTYPE_I8, 1, (int64_t[]){3})};
  cml_shape_t out = shp(CML_DTYPE_I32, 0, NULL);
  fake_init(&f, CML_OP_DOT, ins, 2, &out, 1);
  f.attrs.u.dot.lhs_contracting_count = f.attrs.u.dot.rhs_contracting_count = 1;
  f.attrs.u.dot.accumulator_dtype = f.attrs.u.dot.output_dtype = CML_DTYPE_I32;
  cmlc_options_t o = make_options(CMLC_ISA_SCALAR, false, 1);
  int32_t r = 0;
  ASSERT_STATUS_OK(fake_run(&f, &o, NULL, (const void*[]){a, b}, (void*[]){&r}));
  ASSERT_EQ_INT(r, 127 * 127 + 127 * 127 - 127 * 128);
  // Same with an i8 accumulator: 16129 + 16129 - 16256 = 16002 wraps to 16002 mod 256 = 130
  // -> as int8: -126.
  f.values[3].shape = shp(CML_DTYPE_I8, 0, NULL);
  f.attrs.u.dot.accumulator_dtype = f.attrs.u.dot.output_dtype = CML_DTYPE_I8;
  int8_t r8 = 0;
  ASSERT_STATUS_OK(fake_run(&f, &o, NULL, (const void*[]){a, b}, (void*[]){&r8}));
  ASSERT_EQ_INT(r8, -126);
  // u32: 0xFFFFFFFF * 2 + 3 * 1 wraps to 1.
  uint32_t ua[2] = {0xFFFFFFFFu, 3}, ub[2] = {2, 1};
  f.values[1].shape = shp(CML_DTYPE_U32, 1, (int64_t[]){2});
  f.values[2].shape = shp(CML_DTYPE_U32, 1, (int64_t[]){2});
  f.values[3].shape = shp(CML_DTYPE_U32, 0, NULL);
  f.attrs.u.dot.accumulator_dtype = f.attrs.u.dot.output_dtype = CML_DTYPE_U32;
  uint32_t ur = 0;
  ASSERT_STATUS_OK(fake_run(&f, &o, NULL, (const void*[]){ua, ub}, (void*[]){&ur}));
  ASSERT_EQ_U64(ur, 1);
  // i64: INT64_MAX * 2 wraps to -2.
  int64_t la[1] = {INT64_MAX}, lb[1] = {2};
  f.values[1].shape = shp(CML_DTYPE_I64, 1, (int64_t[]){1});
  f.values[2].shape = shp(CML_DTYPE_I64, 1, (int64_t[]){1});
  f.values[3].shape = shp(CML_DTYPE_I64, 0, NULL);
  f.attrs.u.dot.accumulator_dtype = f.attrs.u.dot.output_dtype = CML_DTYPE_I64;
  int64_t lr = 0;
  ASSERT_STATUS_OK(fake_run(&f, &o, NULL, (const void*[]){la, lb}, (void*[]){&lr}));
  ASSERT_EQ_INT(lr, -2);
}

TEST(dot_half_accumulates_in_f32) {
  // f16: 2048 + 1 + 1 + ... : in f16 arithmetic 2048 + 1 = 2048 (spacing 2), but f32
  // accumulation of 2048 + 8 * 1 gives 2056, exactly representable in f16.
  uint16_t a[9], b[9];
  for (int i = 0; i < 9; ++i) {
    a[i] = cml_f32_to_f16(i == 0 ? 2048.0f : 1.0f);
    b[i] = cml_f32_to_f16(1.0f);
  }
  fake_t f;
  cml_shape_t ins[2] = {shp(CML_DTYPE_F16, 2, (int64_t[]){1, 9}),
                        shp(CML_DTYPE_F16, 2, (int64_t[]){9, 1})};
  cml_shape_t out = shp(CML_DTYPE_F16, 2, (int64_t[]){1, 1});
  for (int dt = 0; dt < 2; ++dt) {
    cml_dtype_t t = dt ? CML_DTYPE_BF16 : CML_DTYPE_F16;
    for (int i = 0; i < 9; ++i) {
      a[i] = dt ? cml_f32_to_bf16(i == 0 ? 256.0f : 1.0f) : cml_f32_to_f16(i == 0 ? 2048.0f : 1.0f);
      b[i] = dt ? cml_f32_to_bf16(1.0f) : cml_f32_to_f16(1.0f);
    }
    ins[0].dtype = ins[1].dtype = out.dtype = t;
    fake_init(&f, CML_OP_DOT_GENERAL, ins, 2, &out, 1);
    dot_config(&f.attrs, 0, 2, t);
    for (int ref = 0; ref < 2; ++ref) {
      cmlc_options_t o = make_options(CMLC_ISA_SCALAR, ref, 1);
      uint16_t r = 0;
      ASSERT_STATUS_OK(fake_run(&f, &o, NULL, (const void*[]){a, b}, (void*[]){&r}));
      // bf16: 256 + 8 = 264 (bf16 spacing at 256 is 2: representable).
      ASSERT_EQ_DBL(dt ? cml_bf16_to_f32(r) : cml_f16_to_f32(r), dt ? 264.0 : 2056.0);
    }
  }
  // bf16 inputs, f32 accumulator and output.
  uint16_t x[2] = {cml_f32_to_bf16(1.5f), cml_f32_to_bf16(-2.0f)};
  uint16_t y[2] = {cml_f32_to_bf16(4.0f), cml_f32_to_bf16(0.25f)};
  cml_shape_t i2[2] = {shp(CML_DTYPE_BF16, 1, (int64_t[]){2}),
                       shp(CML_DTYPE_BF16, 1, (int64_t[]){2})};
  cml_shape_t o2 = shp(CML_DTYPE_F32, 0, NULL);
  fake_init(&f, CML_OP_DOT, i2, 2, &o2, 1);
  f.attrs.u.dot.lhs_contracting_count = f.attrs.u.dot.rhs_contracting_count = 1;
  f.attrs.u.dot.accumulator_dtype = f.attrs.u.dot.output_dtype = CML_DTYPE_F32;
  cmlc_options_t o = make_options(CMLC_ISA_AVX2, false, 1);
  if (!isa_usable(CMLC_ISA_AVX2)) o.isa = CMLC_ISA_SCALAR;
  float r = 0;
  ASSERT_STATUS_OK(fake_run(&f, &o, NULL, (const void*[]){x, y}, (void*[]){&r}));
  ASSERT_EQ_DBL(r, 5.5);
}

TEST(dot_complex_and_f64) {
  // (1+2i)(3+4i) + (5-1i)(2+0i) = (-5+10i) + (10-2i) = 5+8i.
  float a[4] = {1, 2, 5, -1}, b[4] = {3, 4, 2, 0};
  fake_t f;
  cml_shape_t ins[2] = {shp(CML_DTYPE_C64, 1, (int64_t[]){2}),
                        shp(CML_DTYPE_C64, 1, (int64_t[]){2})};
  cml_shape_t out = shp(CML_DTYPE_C64, 0, NULL);
  fake_init(&f, CML_OP_DOT, ins, 2, &out, 1);
  f.attrs.u.dot.lhs_contracting_count = f.attrs.u.dot.rhs_contracting_count = 1;
  f.attrs.u.dot.accumulator_dtype = f.attrs.u.dot.output_dtype = CML_DTYPE_C64;
  cmlc_options_t o = make_options(CMLC_ISA_SCALAR, false, 1);
  float r[2] = {0, 0};
  ASSERT_STATUS_OK(fake_run(&f, &o, NULL, (const void*[]){a, b}, (void*[]){r}));
  ASSERT_EQ_DBL(r[0], 5);
  ASSERT_EQ_DBL(r[1], 8);
  double ca[4] = {1, 2, 5, -1}, cb[4] = {3, 4, 2, 0}, cr[2];
  f.values[1].shape.dtype = f.values[2].shape.dtype = f.values[3].shape.dtype = CML_DTYPE_C128;
  f.attrs.u.dot.accumulator_dtype = f.attrs.u.dot.output_dtype = CML_DTYPE_C128;
  ASSERT_STATUS_OK(fake_run(&f, &o, NULL, (const void*[]){ca, cb}, (void*[]){cr}));
  ASSERT_EQ_DBL(cr[0], 5);
  ASSERT_EQ_DBL(cr[1], 8);
  // f64 with NaN and Inf propagation: [1, NaN] . [2, 3] = NaN; [Inf, 1] . [1, 1] = Inf.
  double x[4] = {1, NAN, INFINITY, 1}, y[2] = {2, 3}, z[2];
  cml_shape_t i2[2] = {shp(CML_DTYPE_F64, 2, (int64_t[]){2, 2}),
                       shp(CML_DTYPE_F64, 1, (int64_t[]){2})};
  cml_shape_t o2 = shp(CML_DTYPE_F64, 1, (int64_t[]){2});
  fake_init(&f, CML_OP_DOT, i2, 2, &o2, 1);
  f.attrs.u.dot.lhs_contracting_count = f.attrs.u.dot.rhs_contracting_count = 1;
  f.attrs.u.dot.lhs_contracting_axes[0] = 1;
  f.attrs.u.dot.accumulator_dtype = f.attrs.u.dot.output_dtype = CML_DTYPE_F64;
  ASSERT_STATUS_OK(fake_run(&f, &o, NULL, (const void*[]){x, y}, (void*[]){z}));
  ASSERT_TRUE(isnan(z[0]));
  ASSERT_EQ_DBL(z[1], INFINITY);
}

TEST(dot_multiple_contracting_and_batch_axes) {
  // lhs [K1=2, B=2, M=2, K2=3], rhs [K2=3, N=2, B=2, K1=2]; contracting (0,3) with (3,0),
  // batch 1 with 2. Integer values so the naive i64 loop here is exact.
  int64_t ld[4] = {2, 2, 2, 3}, rd[4] = {3, 2, 2, 2};
  int32_t lhs[24], rhs[24], got[8];
  for (int i = 0; i < 24; ++i) lhs[i] = i - 11, rhs[i] = (i * 7) % 11 - 5;
  fake_t f;
  cml_shape_t ins[2] = {shp(CML_DTYPE_I32, 4, ld), shp(CML_DTYPE_I32, 4, rd)};
  cml_shape_t out = shp(CML_DTYPE_I32, 3, (int64_t[]){2, 2, 2});
  fake_init(&f, CML_OP_DOT_GENERAL, ins, 2, &out, 1);
  cml_dot_config_t* d = &f.attrs.u.dot;
  d->lhs_contracting_count = d->rhs_contracting_count = 2;
  d->lhs_contracting_axes[0] = 0, d->lhs_contracting_axes[1] = 3;
  d->rhs_contracting_axes[0] = 3, d->rhs_contracting_axes[1] = 0;
  d->lhs_batch_count = d->rhs_batch_count = 1;
  d->lhs_batch_axes[0] = 1, d->rhs_batch_axes[0] = 2;
  d->accumulator_dtype = d->output_dtype = CML_DTYPE_I32;
  cmlc_options_t o = make_options(CMLC_ISA_SCALAR, false, 1);
  ASSERT_STATUS_OK(fake_run(&f, &o, NULL, (const void*[]){lhs, rhs}, (void*[]){got}));
  for (int b = 0; b < 2; ++b)
    for (int m = 0; m < 2; ++m)
      for (int n = 0; n < 2; ++n) {
        int64_t s = 0;
        for (int k1 = 0; k1 < 2; ++k1)
          for (int k2 = 0; k2 < 3; ++k2)
            s += (int64_t)lhs[((k1 * 2 + b) * 2 + m) * 3 + k2] *
                 rhs[((k2 * 2 + n) * 2 + b) * 2 + k1];
        ASSERT_EQ_INT(got[(b * 2 + m) * 2 + n], s);
      }
  // The same in f32 through the GEMM path (values exact).
  float fl[24], fr[24], fg[8];
  for (int i = 0; i < 24; ++i) fl[i] = (float)lhs[i], fr[i] = (float)rhs[i];
  f.values[1].shape.dtype = f.values[2].shape.dtype = f.values[3].shape.dtype = CML_DTYPE_F32;
  d->accumulator_dtype = d->output_dtype = CML_DTYPE_F32;
  for (size_t i = 0; i < 3; ++i) {
    if (!isa_usable(kIsas[i])) continue;
    o.isa = kIsas[i];
    ASSERT_STATUS_OK(fake_run(&f, &o, NULL, (const void*[]){fl, fr}, (void*[]){fg}));
    for (int e = 0; e < 8; ++e) ASSERT_EQ_DBL(fg[e], got[e]);
  }
}

TEST(dot_zero_k_and_empty) {
  // K = 0: zeros; M = 0: nothing written.
  float a[1] = {0}, b[1] = {0};
  float c[6] = {7, 7, 7, 7, 7, 7};
  fake_t f;
  cml_shape_t ins[2] = {shp(CML_DTYPE_F32, 2, (int64_t[]){2, 0}),
                        shp(CML_DTYPE_F32, 2, (int64_t[]){0, 3})};
  cml_shape_t out = shp(CML_DTYPE_F32, 2, (int64_t[]){2, 3});
  fake_init(&f, CML_OP_DOT_GENERAL, ins, 2, &out, 1);
  dot_config(&f.attrs, 0, 2, CML_DTYPE_F32);
  for (int ref = 0; ref < 2; ++ref) {
    cmlc_options_t o = make_options(CMLC_ISA_SCALAR, ref, 1);
    for (int i = 0; i < 6; ++i) c[i] = 7;
    ASSERT_STATUS_OK(fake_run(&f, &o, NULL, (const void*[]){a, b}, (void*[]){c}));
    for (int i = 0; i < 6; ++i) ASSERT_EQ_DBL(c[i], 0);
  }
  int32_t ia[1] = {0}, ib[1] = {0}, ic[6] = {7, 7, 7, 7, 7, 7};
  f.values[1].shape.dtype = f.values[2].shape.dtype = f.values[3].shape.dtype = CML_DTYPE_I32;
  dot_config(&f.attrs, 0, 2, CML_DTYPE_I32);
  cmlc_options_t o = make_options(CMLC_ISA_SCALAR, false, 1);
  ASSERT_STATUS_OK(fake_run(&f, &o, NULL, (const void*[]){ia, ib}, (void*[]){ic}));
  for (int i = 0; i < 6; ++i) ASSERT_EQ_INT(ic[i], 0);
}

TEST(dot_f32_to_int_output) {
  // f32 accumulate, i32 output: truncation toward zero, saturation, NaN -> 0.
  float a[6] = {2.75f, 0, -3e9f, 0, NAN, 0}, b[2] = {1, 1};
  int32_t r[3];
  fake_t f;
  cml_shape_t ins[2] = {shp(CML_DTYPE_F32, 2, (int64_t[]){3, 2}),
                        shp(CML_DTYPE_F32, 1, (int64_t[]){2})};
  cml_shape_t out = shp(CML_DTYPE_I32, 1, (int64_t[]){3});
  fake_init(&f, CML_OP_DOT_GENERAL, ins, 2, &out, 1);
  f.attrs.u.dot.lhs_contracting_count = f.attrs.u.dot.rhs_contracting_count = 1;
  f.attrs.u.dot.lhs_contracting_axes[0] = 1;
  f.attrs.u.dot.accumulator_dtype = CML_DTYPE_F32;
  f.attrs.u.dot.output_dtype = CML_DTYPE_I32;
  for (int ref = 0; ref < 2; ++ref) {
    cmlc_options_t o = make_options(CMLC_ISA_SCALAR, ref, 1);
    ASSERT_STATUS_OK(fake_run(&f, &o, NULL, (const void*[]){a, b}, (void*[]){r}));
    ASSERT_EQ_INT(r[0], 2);
    ASSERT_EQ_INT(r[1], INT32_MIN);
    ASSERT_EQ_INT(r[2], 0);
  }
}

//===--- GEMM paths: every ISA, layout and edge, exact values ---===//

// Fills |x| with multiples of 1/8 in [-1, 1]: products are multiples of 1/64 and sums of up to
// 2^17 of them are exact in f32, so any summation order gives the exact result.
static void fill_eighths(float* x, int64_t count, uint32_t seed) {
  for (int64_t i = 0; i < count; ++i) {
    seed = seed * 1664525u + 1013904223u;
    x[i] = (float)((int)(seed >> 24) % 17 - 8) / 8.0f;
  }
}

// Element (r, c) of a 2-D [R, C] matrix, or of its transpose stored as [C, R].
static double at2(const float* x, bool transposed, int64_t rows, int64_t cols, int64_t r,
                  int64_t c) {
  return transposed ? (double)x[c * rows + r] : (double)x[r * cols + c];
}

// DotGeneral of lhs [M, K] (or [K, M] when |ta|) and rhs [K, N] (or [N, K] when |tb|).
static void dot_2d_node(fake_t* f, cml_dtype_t in, cml_dtype_t out, int64_t m, int64_t n, int64_t k,
                        bool ta, bool tb) {
  cml_shape_t ins[2] = {shp(in, 2, ta ? (int64_t[]){k, m} : (int64_t[]){m, k}),
                        shp(in, 2, tb ? (int64_t[]){n, k} : (int64_t[]){k, n})};
  cml_shape_t o = shp(out, 2, (int64_t[]){m, n});
  fake_init(f, CML_OP_DOT_GENERAL, ins, 2, &o, 1);
  cml_dot_config_t* d = &f->attrs.u.dot;
  d->lhs_contracting_count = d->rhs_contracting_count = 1;
  d->lhs_contracting_axes[0] = ta ? 0 : 1;
  d->rhs_contracting_axes[0] = tb ? 1 : 0;
  d->accumulator_dtype = out;
  d->output_dtype = out;
}

TEST(gemm_f32_shapes_layouts_isas_threads) {
  // M = 1 and N = 1 take the GEMV path, tiny ones read B in place, the rest are blocked with
  // masked edges and (K > 256) several k blocks. With a row-major rhs, M <= 32 and K x N over
  // 16 Ki take the skinny path (A packed whole, B streamed by column chunks): 2 and 8 rows
  // (B read in place), 12 rows (one full AVX-512 sliver), 13, 16, 24, 29, 31 and 32 rows
  // (AVX-512: 13 and 16 rows run the 16 x 16 kernel reading B in place, 17..32 rows copy each
  // B sliver once; AVX2: several A slivers, each B sliver copied once; partial slivers, several
  // k blocks); 33 rows are blocked. {32, 40, 5000} has too little scratch for
  // all of A and is blocked. Tiles of 1-4, 5-8 and 9-12 rows run different AVX-512 kernel
  // variants. M <= 144 (one row block) with a row-major rhs whose rows are whole cache lines
  // (N a multiple of 16) and K x N over 16 Ki reads B in place without packing, threads
  // splitting the slivers: {100, 528, 300} (a 16-column last sliver, two k blocks),
  // {144, 64, 601}, {40, 512, 257}; {150, 70, 520} and {33, 301, 300} pack B. Up to 288 rows
  // make one taller block read the same way when there are at least 4 slivers per thread:
  // {256, 512, 300} on 1 and 3 threads, {197, 528, 100} (a partial last sliver), {288, 160, 257}
  // on 1 thread only (5 slivers: 3 threads pack B); {289, 512, 40} packs B. When threads
  // split one A block's slivers, every A block is packed once before the tiles: the in-place
  // cases above, and {50, 300, 100} and {61, 130, 290} (two row blocks, the second partial).
  // {1600, 48, 96} on 3 threads: 108-row blocks (cmlc__gemm_row_block below), a partial last.
  static const int64_t shapes[][3] = {
      {1, 1, 1},       {1, 37, 19},     {1, 300, 700},   {45, 1, 33},     {300, 1, 513},
      {5, 7, 11},      {12, 32, 64},    {13, 33, 65},    {64, 64, 64},    {150, 70, 520},
      {2, 600, 300},   {8, 1000, 530},  {13, 2100, 70},  {32, 97, 777},   {32, 40, 5000},
      {16, 1000, 600}, {29, 530, 300},  {12, 333, 290},  {31, 517, 300},  {33, 301, 300},
      {24, 1000, 95},  {17, 130, 1000}, {15, 1001, 300}, {100, 528, 300}, {144, 64, 601},
      {40, 512, 257},  {50, 300, 100},  {61, 130, 290},  {256, 512, 300}, {197, 528, 100},
      {288, 160, 257}, {289, 512, 40},  {1600, 48, 96}};
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  int failed = 0;
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0] && !failed; ++si) {
    int64_t m = shapes[si][0], n = shapes[si][1], k = shapes[si][2];
    float* a = malloc(sizeof(float) * (size_t)(m * k));
    float* b = malloc(sizeof(float) * (size_t)(k * n));
    float* c1 = malloc(sizeof(float) * (size_t)(m * n));
    float* c3 = malloc(sizeof(float) * (size_t)(m * n));
    fill_eighths(a, m * k, 11u + (uint32_t)si);
    fill_eighths(b, k * n, 99u + (uint32_t)si);
    for (int layout = 0; layout < 4 && !failed; ++layout) {
      bool ta = layout & 1, tb = (layout >> 1) & 1;
      fake_t f;
      dot_2d_node(&f, CML_DTYPE_F32, CML_DTYPE_F32, m, n, k, ta, tb);
      for (size_t i = 0; i < 3 && !failed; ++i) {
        if (!isa_usable(kIsas[i])) continue;
        cmlc_options_t o1 = make_options(kIsas[i], false, 1);
        cmlc_options_t o3 = make_options(kIsas[i], false, 3);
        cml_status_t s1 = fake_run(&f, &o1, NULL, (const void*[]){a, b}, (void*[]){c1});
        cml_status_t s3 = fake_run(&f, &o3, pool, (const void*[]){a, b}, (void*[]){c3});
        if (s1 != CML_OK || s3 != CML_OK) {
          cml_status_free(s1), cml_status_free(s3);
          failed = 1;
          break;
        }
        for (int64_t r = 0; r < m && !failed; ++r) {
          for (int64_t cc = 0; cc < n; ++cc) {
            double want = 0;
            for (int64_t kk = 0; kk < k; ++kk)
              want += at2(a, ta, m, k, r, kk) * at2(b, tb, k, n, kk, cc);
            if ((double)c1[r * n + cc] != want || c1[r * n + cc] != c3[r * n + cc]) {
              fprintf(stderr, "M%lld N%lld K%lld ta%d tb%d isa %d (%lld,%lld): %g / %g want %g\n",
                      (long long)m, (long long)n, (long long)k, ta, tb, (int)kIsas[i], (long long)r,
                      (long long)cc, c1[r * n + cc], c3[r * n + cc], want);
              failed = 2;
              break;
            }
          }
        }
      }
    }
    free(a), free(b), free(c1), free(c3);
  }
  cmlc_pool_destroy(pool);
  ASSERT_EQ_INT(failed, 0);
}

// At least 64 rows against at most 16 columns (a classifier head, an MoE router) run the
// transposed-B tiles with the roles swapped (the rows of A read in place, B packed in the
// lanes of the narrowest kernel): exact eighths must give the double loop's values on every
// ISA, layout and thread count; inexact values must give, row for row, the bits of the same
// product over 63 rows (the blocked path). 17 columns stay blocked.
// Batched products of tiny matrices (at most 8 x 16 x 16, at least 16 batches) run batch by
// batch without the blocked path's loop nest (kern.tiny): [batch, m, k] x [batch, k, n] must
// equal, bit for bit, the same products run one batch at a time (batch 1: the blocked path),
// on every ISA and on 1 and 3 threads; with eighths the exact sums, otherwise a double oracle.
// A transposed lhs ([batch, k, m]: strided A) takes the tiny path too; a transposed rhs (B
// columns strided) and 9 rows do not. Square products, matrices times vectors and vectors times
// matrices of 2, 3 and 4 run unrolled kernels on the FMA ISAs (matrix-vector ones before GEMV).
TEST(gemm_tiny_batches_match_one_at_a_time) {
  static const int64_t shapes[][5] = {// m, n, k, batch, transposed lhs / rhs (bit 0 / 1)
                                      {3, 3, 3, 64, 0},
                                      {1, 16, 16, 20, 0},
                                      {8, 9, 5, 33, 0},
                                      {8, 8, 1, 16, 0},
                                      {4, 1, 7, 40, 0},
                                      {5, 12, 3, 17, 1},
                                      {3, 3, 3, 30, 2},
                                      {9, 4, 4, 25, 0},
                                      // The unrolled sizes (square, matrix times vector, vector
                                      // times matrix of 2, 3, 4), row-major and with a
                                      // transposed lhs.
                                      {2, 2, 2, 40, 0},
                                      {4, 4, 4, 17, 0},
                                      {3, 1, 3, 50, 0},
                                      {2, 1, 2, 16, 0},
                                      {4, 1, 4, 33, 1},
                                      {1, 3, 3, 20, 0},
                                      {1, 2, 2, 18, 1},
                                      {1, 4, 4, 21, 0},
                                      {3, 3, 3, 19, 1}};
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  int failed = 0;
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0] && !failed; ++si) {
    const int64_t m = shapes[si][0], n = shapes[si][1], k = shapes[si][2], nb = shapes[si][3];
    const bool ta = shapes[si][4] & 1, tb = (shapes[si][4] & 2) != 0;
    float* a = malloc(sizeof(float) * (size_t)(nb * m * k));
    float* b = malloc(sizeof(float) * (size_t)(nb * k * n));
    float* c1 = malloc(sizeof(float) * (size_t)(nb * m * n));
    float* c3 = malloc(sizeof(float) * (size_t)(nb * m * n));
    float* one = malloc(sizeof(float) * (size_t)(m * n));
    for (int exact = 1; exact >= 0 && !failed; --exact) {
      if (exact) {
        fill_eighths(a, nb * m * k, 11u + (uint32_t)si);
        fill_eighths(b, nb * k * n, 110u + (uint32_t)si);
      } else {
        uint32_t h = 777u + (uint32_t)si;
        for (int64_t i = 0; i < nb * m * k; ++i)
          a[i] = (float)((h = h * 1664525u + 1013904223u) >> 8) * 0x1p-24f - 0.5f;
        for (int64_t i = 0; i < nb * k * n; ++i)
          b[i] = (float)((h = h * 1664525u + 1013904223u) >> 8) * 0x1p-24f - 0.5f;
      }
      fake_t fb, f1;
      for (int v = 0; v < 2; ++v) {
        fake_t* f = v ? &f1 : &fb;
        const int64_t bat = v ? 1 : nb;
        cml_shape_t ins[2] = {
            shp(CML_DTYPE_F32, 3, ta ? (int64_t[]){bat, k, m} : (int64_t[]){bat, m, k}),
            shp(CML_DTYPE_F32, 3, tb ? (int64_t[]){bat, n, k} : (int64_t[]){bat, k, n})};
        cml_shape_t o = shp(CML_DTYPE_F32, 3, (int64_t[]){bat, m, n});
        fake_init(f, CML_OP_DOT_GENERAL, ins, 2, &o, 1);
        cml_dot_config_t* d = &f->attrs.u.dot;
        d->lhs_batch_count = d->rhs_batch_count = 1;
        d->lhs_contracting_count = d->rhs_contracting_count = 1;
        d->lhs_contracting_axes[0] = ta ? 1 : 2;
        d->rhs_contracting_axes[0] = tb ? 2 : 1;
        d->accumulator_dtype = d->output_dtype = CML_DTYPE_F32;
      }
      for (size_t i = 0; i < 3 && !failed; ++i) {
        if (!isa_usable(kIsas[i])) continue;
        cmlc_options_t o1 = make_options(kIsas[i], false, 1);
        cmlc_options_t o3 = make_options(kIsas[i], false, 3);
        cml_status_t s1 = fake_run(&fb, &o1, NULL, (const void*[]){a, b}, (void*[]){c1});
        cml_status_t s3 = fake_run(&fb, &o3, pool, (const void*[]){a, b}, (void*[]){c3});
        if (s1 != CML_OK || s3 != CML_OK) {
          cml_status_free(s1), cml_status_free(s3);
          failed = 1;
          break;
        }
        for (int64_t t = 0; t < nb && !failed; ++t) {
          cml_status_t st = fake_run(&f1, &o1, NULL, (const void*[]){a + t * m * k, b + t * k * n},
                                     (void*[]){one});
          if (st != CML_OK) {
            cml_status_free(st);
            failed = 1;
            break;
          }
          for (int64_t r = 0; r < m && !failed; ++r) {
            for (int64_t cc = 0; cc < n; ++cc) {
              double want = 0;
              for (int64_t kk = 0; kk < k; ++kk) {
                want += (double)at2(a + t * m * k, ta, m, k, r, kk) *
                        at2(b + t * k * n, tb, k, n, kk, cc);
              }
              const float g1 = c1[(t * m + r) * n + cc], g3 = c3[(t * m + r) * n + cc];
              bool ok =
                  memcmp(&g1, &g3, sizeof g1) == 0 && memcmp(&g1, &one[r * n + cc], sizeof g1) == 0;
              ok = ok && (exact ? (double)g1 == want : fabs((double)g1 - want) <= 1e-5);
              if (!ok) {
                fprintf(stderr,
                        "M%lld N%lld K%lld batch %lld ta%d tb%d isa %d exact %d (%lld,%lld): "
                        "%.9g / %.9g, alone %.9g, want %.9g\n",
                        (long long)m, (long long)n, (long long)k, (long long)t, ta, tb,
                        (int)kIsas[i], exact, (long long)r, (long long)cc, g1, g3, one[r * n + cc],
                        want);
                failed = 2;
                break;
              }
            }
          }
        }
      }
    }
    free(a), free(b), free(c1), free(c3), free(one);
  }
  cmlc_pool_destroy(pool);
  ASSERT_EQ_INT(failed, 0);
}

TEST(gemm_narrow_columns_many_rows) {
  static const int64_t shapes[][3] = {{64, 8, 100},  {200, 10, 300}, {130, 2, 700},
                                      {100, 16, 33}, {77, 5, 1000},  {64, 17, 50}};
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  int failed = 0;
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0] && !failed; ++si) {
    const int64_t m = shapes[si][0], n = shapes[si][1], k = shapes[si][2], m63 = 63;
    float* a = malloc(sizeof(float) * (size_t)(m * k));
    float* b = malloc(sizeof(float) * (size_t)(k * n));
    float* c1 = malloc(sizeof(float) * (size_t)(m * n));
    float* c3 = malloc(sizeof(float) * (size_t)(m * n));
    float* c63 = malloc(sizeof(float) * (size_t)(m63 * n));
    for (int exact = 1; exact >= 0 && !failed; --exact) {
      if (exact) {
        fill_eighths(a, m * k, 7u + (uint32_t)si);
        fill_eighths(b, k * n, 70u + (uint32_t)si);
      } else {
        uint32_t h = 12345u + (uint32_t)si;
        for (int64_t i = 0; i < m * k; ++i)
          a[i] = (float)((h = h * 1664525u + 1013904223u) >> 8) * 0x1p-24f - 0.5f;
        for (int64_t i = 0; i < k * n; ++i)
          b[i] = (float)((h = h * 1664525u + 1013904223u) >> 8) * 0x1p-24f - 0.5f;
      }
      for (int layout = 0; layout < 2 && !failed; ++layout) {
        const bool tb = layout == 1;  // rhs stored [N, K]
        fake_t f, f63;
        dot_2d_node(&f, CML_DTYPE_F32, CML_DTYPE_F32, m, n, k, false, tb);
        dot_2d_node(&f63, CML_DTYPE_F32, CML_DTYPE_F32, m63, n, k, false, tb);
        for (size_t i = 0; i < 3 && !failed; ++i) {
          if (!isa_usable(kIsas[i])) continue;
          cmlc_options_t o1 = make_options(kIsas[i], false, 1);
          cmlc_options_t o3 = make_options(kIsas[i], false, 3);
          cml_status_t s1 = fake_run(&f, &o1, NULL, (const void*[]){a, b}, (void*[]){c1});
          cml_status_t s3 = fake_run(&f, &o3, pool, (const void*[]){a, b}, (void*[]){c3});
          cml_status_t s63 = fake_run(&f63, &o1, NULL, (const void*[]){a, b}, (void*[]){c63});
          if (s1 != CML_OK || s3 != CML_OK || s63 != CML_OK) {
            cml_status_free(s1), cml_status_free(s3), cml_status_free(s63);
            failed = 1;
            break;
          }
          for (int64_t r = 0; r < m && !failed; ++r) {
            for (int64_t cc = 0; cc < n; ++cc) {
              double want = 0;
              for (int64_t kk = 0; kk < k; ++kk)
                want += (double)a[r * k + kk] * at2(b, tb, k, n, kk, cc);
              const float g1 = c1[r * n + cc], g3 = c3[r * n + cc];
              bool ok = memcmp(&g1, &g3, sizeof g1) == 0;
              if (exact) ok = ok && (double)g1 == want;
              if (!exact && r < m63) ok = ok && memcmp(&g1, &c63[r * n + cc], sizeof g1) == 0;
              if (!exact)
                ok = ok && fabs((double)g1 - want) <= 1e-4 * (1 + fabs(want)) * (double)k / 100;
              if (!ok) {
                fprintf(stderr,
                        "M%lld N%lld K%lld tb%d isa %d exact %d (%lld,%lld): %.9g / %.9g, 63 rows "
                        "%.9g, want %.9g\n",
                        (long long)m, (long long)n, (long long)k, tb, (int)kIsas[i], exact,
                        (long long)r, (long long)cc, g1, g3, r < m63 ? c63[r * n + cc] : 0.0f,
                        want);
                failed = 2;
                break;
              }
            }
          }
        }
      }
    }
    free(a), free(b), free(c1), free(c3), free(c63);
  }
  cmlc_pool_destroy(pool);
  ASSERT_EQ_INT(failed, 0);
}

//===--- integer k-pair GEMM ---===//

// A DotGeneral of integers in one of four layouts: 0 lhs [M, K] x rhs [K, N]; 1 rhs stored
// [N, K]; 2 lhs stored [K, M] and rhs [N, K]; 3 batched with the batch axes in the middle,
// lhs [M, B, K] x rhs [K, B, N] -> [B, M, N].
static void int_dot_node(fake_t* f, cml_dtype_t lt, cml_dtype_t rt, cml_dtype_t ot, int64_t bsz,
                         int64_t m, int64_t n, int64_t k, int layout) {
  cml_shape_t ins[2], out;
  cml_dot_config_t d;
  memset(&d, 0, sizeof d);
  d.lhs_contracting_count = d.rhs_contracting_count = 1;
  if (layout == 3) {
    ins[0] = shp(lt, 3, (int64_t[]){m, bsz, k});
    ins[1] = shp(rt, 3, (int64_t[]){k, bsz, n});
    out = shp(ot, 3, (int64_t[]){bsz, m, n});
    d.lhs_batch_count = d.rhs_batch_count = 1;
    d.lhs_batch_axes[0] = d.rhs_batch_axes[0] = 1;
    d.lhs_contracting_axes[0] = 2;
    d.rhs_contracting_axes[0] = 0;
  } else {
    ins[0] = layout == 2 ? shp(lt, 2, (int64_t[]){k, m}) : shp(lt, 2, (int64_t[]){m, k});
    ins[1] = layout == 0 ? shp(rt, 2, (int64_t[]){k, n}) : shp(rt, 2, (int64_t[]){n, k});
    out = shp(ot, 2, (int64_t[]){m, n});
    d.lhs_contracting_axes[0] = layout == 2 ? 0 : 1;
    d.rhs_contracting_axes[0] = layout == 0 ? 0 : 1;
  }
  fake_init(f, CML_OP_DOT_GENERAL, ins, 2, &out, 1);
  d.accumulator_dtype = CML_DTYPE_I32;
  d.output_dtype = ot;
  f->attrs.u.dot = d;
}

// Element |i| of an integer array, sign- or zero-extended to 64 bits.
static uint64_t int_at(const void* data, cml_dtype_t dt, int64_t i) {
  switch (dt) {
    case CML_DTYPE_I8:
      return (uint64_t)(int64_t)((const int8_t*)data)[i];
    case CML_DTYPE_U8:
      return ((const uint8_t*)data)[i];
    case CML_DTYPE_I16:
      return (uint64_t)(int64_t)((const int16_t*)data)[i];
    case CML_DTYPE_U16:
      return ((const uint16_t*)data)[i];
    case CML_DTYPE_I32:
      return (uint64_t)(int64_t)((const int32_t*)data)[i];
    case CML_DTYPE_U32:
      return ((const uint32_t*)data)[i];
    default:
      return ((const uint64_t*)data)[i];
  }
}

// Fills |count| values of |dt|: the whole range of i8 / u8, for i16 mostly the extremes
// (+-32767, -32768), so that long sums wrap i32 many times, and for the wider dtypes mostly
// values near their extremes with random low bits (64-bit values with their high word set:
// only the low 32 bits may reach an i32 sum).
static void int_fill(void* data, cml_dtype_t dt, int64_t count, uint32_t seed) {
  static const int16_t extremes[4] = {32767, -32768, -32767, 32766};
  uint32_t s = seed * 2654435761u + 12345u;
  for (int64_t i = 0; i < count; ++i) {
    s = s * 1664525u + 1013904223u;
    const uint32_t r = s >> 8;
    const uint32_t r2 = s * 747796405u + 2891336453u;
    const uint64_t wide = (r & 3u) ? ((uint64_t)(r2 ^ 0x80000000u) << 32 | (r2 * 2246822519u))
                                   : (uint64_t)(int64_t)(int32_t)(r - (1u << 23));
    switch (dt) {
      case CML_DTYPE_I8:
        ((int8_t*)data)[i] = (int8_t)(int32_t)((int32_t)(r & 0xFFu) - 128);
        break;
      case CML_DTYPE_U8:
        ((uint8_t*)data)[i] = (uint8_t)(r & 0xFFu);
        break;
      case CML_DTYPE_I16:
        ((int16_t*)data)[i] =
            (r & 3u) ? extremes[(r >> 2) & 3u] : (int16_t)(int32_t)((r >> 4) & 0xFFFFu);
        break;
      case CML_DTYPE_U16:
        ((uint16_t*)data)[i] = (uint16_t)((r & 3u) ? 0xFFFFu - (r >> 20) : r);
        break;
      case CML_DTYPE_I32:
      case CML_DTYPE_U32:
        ((uint32_t*)data)[i] = (uint32_t)wide;
        break;
      default:
        ((uint64_t*)data)[i] = wide;
        break;
    }
  }
}

// I8, U8 and I16 operands with an i32 accumulator take the k-pair GEMM on the AVX2 and
// AVX-512 ISAs (vpdpwssd with VNNI, vpmaddwd without), and wider ones (U16, I32, U32, I64, U64,
// alone or with a narrow one) the one-value-per-k GEMM (vpmulld): every result must be, bit
// for bit, the generic path's (reference=true) and an independent loop's (the exact sum
// wrapped to i32; 64-bit operands' high words must not reach it), for
// odd sizes (K odd: the last pair is half padding), several k blocks (K > 512), row blocks
// (M > 144) and column blocks (N > 2048), a transposed lhs and rhs, batch axes in the middle,
// I32 / I64 / F32 outputs, and 1 and 3 threads. The sums of i16 extremes wrap i32.
TEST(dot_int16_pairs_match_generic) {
  static const cml_dtype_t pairs[][2] = {
      {CML_DTYPE_I8, CML_DTYPE_I8},   {CML_DTYPE_U8, CML_DTYPE_U8},  {CML_DTYPE_I8, CML_DTYPE_U8},
      {CML_DTYPE_I16, CML_DTYPE_I16}, {CML_DTYPE_U8, CML_DTYPE_I16}, {CML_DTYPE_I32, CML_DTYPE_I32},
      {CML_DTYPE_U16, CML_DTYPE_U16}, {CML_DTYPE_I8, CML_DTYPE_U32}, {CML_DTYPE_I64, CML_DTYPE_I32},
      {CML_DTYPE_U64, CML_DTYPE_I16}};
  static const int64_t shapes[][3] = {{1, 1, 1},       {3, 5, 7},    {13, 33, 127}, {33, 13, 1},
                                      {127, 3, 33},    {1, 127, 13}, {12, 32, 64},  {25, 40, 513},
                                      {150, 70, 1025}, {3, 2100, 5}};
  static const cml_dtype_t outs[] = {CML_DTYPE_I32, CML_DTYPE_I64, CML_DTYPE_F32};
  // The SIMD configurations: AVX-512 with VNNI, AVX-512 without it, AVX2.
  bool usable[3] = {false, false, false};
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
  usable[0] = avx512 && __builtin_cpu_supports("avx512vnni");
  usable[1] = avx512;
  usable[2] = isa_usable(CMLC_ISA_AVX2);
#endif
  static const cmlc_isa_t config_isa[3] = {CMLC_ISA_AVX512, CMLC_ISA_AVX512, CMLC_ISA_AVX2};
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  int failed = 0, fast_runs = 0;
  for (size_t pi = 0; pi < sizeof pairs / sizeof pairs[0] && !failed; ++pi) {
    const cml_dtype_t lt = pairs[pi][0], rt = pairs[pi][1];
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0] && !failed; ++si) {
      const int64_t m = shapes[si][0], n = shapes[si][1], k = shapes[si][2];
      for (int layout = 0; layout < 4 && !failed; ++layout) {
        const int64_t bsz = layout == 3 ? 3 : 1;
        const int64_t total = bsz * m * n;
        void* lhs = malloc((size_t)(bsz * m * k) * 8);
        void* rhs = malloc((size_t)(bsz * k * n) * 8);
        int32_t* want = malloc(sizeof(int32_t) * (size_t)total);
        void* ref = malloc(sizeof(int64_t) * (size_t)total);
        void* got = malloc(sizeof(int64_t) * (size_t)total);
        int_fill(lhs, lt, bsz * m * k, (uint32_t)(pi * 100 + si * 10 + (size_t)layout));
        int_fill(rhs, rt, bsz * k * n, (uint32_t)(pi * 100 + si * 10 + (size_t)layout + 7));
        // The oracle: exact products summed mod 2^64, wrapped to i32.
        for (int64_t b = 0; b < bsz; ++b)
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
              uint64_t s = 0;
              for (int64_t kk = 0; kk < k; ++kk) {
                const int64_t li = layout == 3   ? (i * bsz + b) * k + kk
                                   : layout == 2 ? kk * m + i
                                                 : i * k + kk;
                const int64_t ri = layout == 3   ? (kk * bsz + b) * n + j
                                   : layout == 0 ? kk * n + j
                                                 : j * k + kk;
                s += int_at(lhs, lt, li) * int_at(rhs, rt, ri);
              }
              want[(b * m + i) * n + j] = (int32_t)(uint32_t)s;
            }
        for (size_t oi = 0; oi < sizeof outs / sizeof outs[0] && !failed; ++oi) {
          const cml_dtype_t ot = outs[oi];
          const size_t osize = ot == CML_DTYPE_I64 ? 8 : 4;
          fake_t f;
          int_dot_node(&f, lt, rt, ot, bsz, m, n, k, layout);
          cmlc_options_t ro = make_options(CMLC_ISA_SCALAR, true, 1);
          cml_status_t st = fake_run(&f, &ro, NULL, (const void*[]){lhs, rhs}, (void*[]){ref});
          if (st != CML_OK) {
            cml_status_free(st);
            failed = 1;
            break;
          }
          for (int64_t e = 0; e < total && !failed; ++e) {
            const bool ok = ot == CML_DTYPE_I32   ? ((int32_t*)ref)[e] == want[e]
                            : ot == CML_DTYPE_I64 ? ((int64_t*)ref)[e] == (int64_t)want[e]
                                                  : ((float*)ref)[e] == (float)want[e];
            if (!ok) {
              fprintf(stderr, "reference %s x %s -> %s layout %d: element %lld differs\n",
                      cml_dtype_name(lt), cml_dtype_name(rt), cml_dtype_name(ot), layout,
                      (long long)e);
              failed = 2;
            }
          }
          for (int cfg = 0; cfg < 3 && !failed; ++cfg) {
            if (!usable[cfg]) continue;
            for (int threads = 1; threads <= 3 && !failed; threads += 2) {
              cmlc_options_t o = make_options(config_isa[cfg], false, threads);
              o.avx512_vnni = cfg == 0;
              // The integer GEMM must be the path taken (its driver picked at lookup): the
              // one-value GEMM for operands past i16, the k-pair GEMM otherwise.
              cmlc_kernel_entry_t e;
              memset(&e, 0, sizeof e);
              const bool one_value = !cmlc__gemm_i16_supports(lt) || !cmlc__gemm_i16_supports(rt);
              const cmlc_impl_fn want_impl =
                  one_value ? (cmlc_impl_fn)cmlc__gemm_i32_pick(config_isa[cfg])
                            : (cmlc_impl_fn)cmlc__gemm_i16_pick(config_isa[cfg], o.avx512_vnni);
              if (!cmlc_kernels_linalg_lookup(&f.module, &f.node, &o, &e) || !e.impl[0] ||
                  e.impl[0] != want_impl) {
                fprintf(stderr, "%s x %s: no integer GEMM driver for config %d\n",
                        cml_dtype_name(lt), cml_dtype_name(rt), cfg);
                failed = 3;
                break;
              }
              memset(got, 0xA5, osize * (size_t)total);
              st = fake_run(&f, &o, threads > 1 ? pool : NULL, (const void*[]){lhs, rhs},
                            (void*[]){got});
              if (st != CML_OK) {
                cml_status_free(st);
                failed = 4;
                break;
              }
              ++fast_runs;
              if (memcmp(got, ref, osize * (size_t)total) != 0) {
                for (int64_t q = 0; q < total; ++q) {
                  if (memcmp((char*)got + (size_t)q * osize, (char*)ref + (size_t)q * osize,
                             osize) != 0) {
                    fprintf(stderr,
                            "%s x %s -> %s M%lld N%lld K%lld layout %d config %d threads %d: "
                            "element %lld differs from the generic path (want %d)\n",
                            cml_dtype_name(lt), cml_dtype_name(rt), cml_dtype_name(ot),
                            (long long)m, (long long)n, (long long)k, layout, cfg, threads,
                            (long long)q, want[q]);
                    break;
                  }
                }
                failed = 5;
              }
            }
          }
        }
        free(lhs), free(rhs), free(want), free(ref), free(got);
      }
    }
  }
  cmlc_pool_destroy(pool);
  ASSERT_EQ_INT(failed, 0);
  // An i64 accumulator stays on the generic path.
  fake_t f;
  cmlc_options_t o =
      make_options(isa_usable(CMLC_ISA_AVX2) ? CMLC_ISA_AVX2 : CMLC_ISA_SCALAR, false, 1);
  cmlc_kernel_entry_t e;
  int_dot_node(&f, CML_DTYPE_I8, CML_DTYPE_I8, CML_DTYPE_I64, 1, 4, 4, 4, 0);
  f.attrs.u.dot.accumulator_dtype = CML_DTYPE_I64;
  memset(&e, 0, sizeof e);
  ASSERT_TRUE(cmlc_kernels_linalg_lookup(&f.module, &f.node, &o, &e));
  ASSERT_TRUE(e.impl[0] == NULL);
  if (usable[2]) ASSERT_TRUE(fast_runs > 0);
}

// The row-block heights, by hand (rows on the busiest thread = rounds of blocks x height):
// 416 rows on 2 threads with 12-row slivers: 72 (6 blocks, 3 rounds = 216 rows; 60 gives 240,
// 108 ties at 216 and the lowest wins); 1536 on 2: 96 (16 blocks, 8 rounds = 768, an even
// split; the default 144 puts 864 on one thread); 1024 on 2: 132 (528: 8 blocks, 4 rounds;
// nothing down to 72 does better); 1600 on 3: 108 (15 blocks, 5 rounds = 540; 144: 576);
// 1728 on 3: 144 (12 blocks, 4 rounds, even); one thread or 100 rows: the default or what
// balances. Every result is a multiple of the sliver height within (0, default] and never puts
// more rows on the busiest thread than the default height.
TEST(gemm_row_block_balances_threads) {
  ASSERT_EQ_INT(cmlc__gemm_row_block(416, 12, 144, 2), 72);
  ASSERT_EQ_INT(cmlc__gemm_row_block(1536, 12, 144, 2), 96);
  ASSERT_EQ_INT(cmlc__gemm_row_block(1024, 12, 144, 2), 132);
  ASSERT_EQ_INT(cmlc__gemm_row_block(1600, 12, 144, 3), 108);
  ASSERT_EQ_INT(cmlc__gemm_row_block(1728, 12, 144, 3), 144);
  ASSERT_EQ_INT(cmlc__gemm_row_block(1536, 12, 144, 1), 144);
  for (int64_t m = 1; m <= 5000; m += 7) {
    for (int t = 2; t <= 8; ++t) {
      const int64_t h = cmlc__gemm_row_block(m, 12, 144, t);
      ASSERT_TRUE(h > 0 && h <= 144 && h % 12 == 0);
      const int64_t busiest = ((m + h - 1) / h + t - 1) / t * h;
      const int64_t busiest_default = ((m + 143) / 144 + t - 1) / t * 144;
      ASSERT_TRUE(busiest <= busiest_default);
    }
  }
}

TEST(gemm_f32_transposed_rhs_small_m) {
  // A rhs stored [N, K] (a weight in the PyTorch layout) with 2..128 lhs rows and K x N over
  // 16 Ki takes the transposed-B tiles with AVX2 and AVX-512 (the weight read in place in groups
  // of 12 rows, the lhs packed in passes of 16 rows and a last one of 8 when that covers the
  // rest): M odd and even around the pass widths (2, 3, 7, 8, 9, 15, 16, 17, 23, 25, 31, 33, 41,
  // 63, 64, 65, 100, 128; 129 is blocked), N not a multiple of the groups (301, 1001; 1100 = 91
  // groups and 8 rows), K tails past whole 64-value copies and 256-value k blocks (100, 257, 513,
  // 700). Exact values (sums of multiples of 1/64) against a double loop; 1 and 3 threads; a
  // row-major and a transposed lhs. Then inexact values: the result must be the same bits as the
  // same product with the rhs stored [K, N] (the skinny and blocked paths: the same k blocks and
  // fused multiply-adds). A row-major lhs of 2..CMLC__GEMM_DOT_ROWS_M rows takes the dot form
  // row by row (SIMD ISAs): each row must be the bits of that row alone times the [N, K] rhs
  // (the one-row GEMV) instead; 6 and 7 rows sit on either side of the bound.
  static const int64_t shapes[][3] = {
      {2, 301, 100},   {3, 1001, 257}, {6, 301, 257},   {7, 301, 513},    {8, 1100, 100},
      {9, 301, 700},   {15, 301, 257}, {16, 1001, 64},  {17, 301, 100},   {23, 301, 513},
      {25, 1100, 257}, {31, 301, 100}, {33, 301, 257},  {41, 301, 100},   {63, 1001, 100},
      {64, 301, 513},  {65, 301, 257}, {100, 301, 100}, {128, 1001, 100}, {129, 301, 257}};
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  int failed = 0;
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0] && !failed; ++si) {
    const int64_t m = shapes[si][0], n = shapes[si][1], k = shapes[si][2];
    float* a = malloc(sizeof(float) * (size_t)(m * k));
    float* b = malloc(sizeof(float) * (size_t)(k * n));   // [N, K]
    float* bt = malloc(sizeof(float) * (size_t)(k * n));  // the same values stored [K, N]
    float* c1 = malloc(sizeof(float) * (size_t)(m * n));
    float* c3 = malloc(sizeof(float) * (size_t)(m * n));
    double* want = malloc(sizeof(double) * (size_t)(m * n));
    for (int exact = 1; exact >= 0 && !failed; --exact) {
      if (exact) {
        fill_eighths(a, m * k, 5u + (uint32_t)si);
        fill_eighths(b, k * n, 77u + (uint32_t)si);
      } else {
        uint32_t seed = 123u + (uint32_t)si;
        for (int64_t i = 0; i < m * k; ++i) {
          seed = seed * 1664525u + 1013904223u;
          a[i] = (float)(seed >> 8) / 16777216.0f - 0.5f;
        }
        for (int64_t i = 0; i < k * n; ++i) {
          seed = seed * 1664525u + 1013904223u;
          b[i] = (float)(seed >> 8) / 16777216.0f - 0.5f;
        }
      }
      for (int64_t j = 0; j < n; ++j)
        for (int64_t kk = 0; kk < k; ++kk) bt[kk * n + j] = b[j * k + kk];
      for (int ta = 0; ta < 2 && !failed; ++ta) {
        for (int64_t r = 0; r < m; ++r)
          for (int64_t cc = 0; cc < n; ++cc) {
            double sum = 0;
            for (int64_t kk = 0; kk < k; ++kk)
              sum += at2(a, ta, m, k, r, kk) * (double)b[cc * k + kk];
            want[r * n + cc] = sum;
          }
        fake_t f, fkn;
        dot_2d_node(&f, CML_DTYPE_F32, CML_DTYPE_F32, m, n, k, ta, true);
        dot_2d_node(&fkn, CML_DTYPE_F32, CML_DTYPE_F32, m, n, k, ta, false);
        for (size_t i = 0; i < 3 && !failed; ++i) {
          if (!isa_usable(kIsas[i])) continue;
          cmlc_options_t o1 = make_options(kIsas[i], false, 1);
          cmlc_options_t o3 = make_options(kIsas[i], false, 3);
          // NaN everywhere first: an output left unwritten cannot pass.
          memset(c1, 0xFF, sizeof(float) * (size_t)(m * n));
          memset(c3, 0xFF, sizeof(float) * (size_t)(m * n));
          cml_status_t s1 = fake_run(&f, &o1, NULL, (const void*[]){a, b}, (void*[]){c1});
          cml_status_t s3 = fake_run(&f, &o3, pool, (const void*[]){a, b}, (void*[]){c3});
          if (s1 != CML_OK || s3 != CML_OK) {
            cml_status_free(s1), cml_status_free(s3);
            failed = 1;
            break;
          }
          for (int64_t t = 0; t < m * n && !failed; ++t) {
            const bool ok = exact ? (double)c1[t] == want[t]
                                  : fabs((double)c1[t] - want[t]) <= 1e-5 * (double)k;
            if (!ok || memcmp(&c1[t], &c3[t], sizeof(float)) != 0) {
              fprintf(
                  stderr,
                  "M%lld N%lld K%lld ta%d isa %d exact %d at (%lld,%lld): %.9g / %.9g want %.9g\n",
                  (long long)m, (long long)n, (long long)k, ta, (int)kIsas[i], exact,
                  (long long)(t / n), (long long)(t % n), c1[t], c3[t], want[t]);
              failed = 2;
            }
          }
          if (exact || failed || kIsas[i] == CMLC_ISA_SCALAR) continue;
          // The same product with the rhs stored [K, N] (or, on the dot form, each row alone
          // times the [N, K] rhs): the same bits.
          memset(c3, 0xFF, sizeof(float) * (size_t)(m * n));
          cml_status_t sk = CML_OK;
          if (!ta && m <= CMLC__GEMM_DOT_ROWS_M) {
            fake_t f1;
            dot_2d_node(&f1, CML_DTYPE_F32, CML_DTYPE_F32, 1, n, k, false, true);
            for (int64_t r = 0; r < m && sk == CML_OK; ++r)
              sk = fake_run(&f1, &o3, pool, (const void*[]){a + r * k, b}, (void*[]){c3 + r * n});
          } else {
            sk = fake_run(&fkn, &o3, pool, (const void*[]){a, bt}, (void*[]){c3});
          }
          if (sk != CML_OK) {
            cml_status_free(sk);
            failed = 3;
            break;
          }
          if (memcmp(c1, c3, sizeof(float) * (size_t)(m * n)) != 0) {
            fprintf(stderr, "M%lld N%lld K%lld ta%d isa %d: [N, K] and [K, N] rhs differ\n",
                    (long long)m, (long long)n, (long long)k, ta, (int)kIsas[i]);
            failed = 4;
          }
        }
      }
    }
    free(a), free(b), free(bt), free(c1), free(c3), free(want);
  }
  cmlc_pool_destroy(pool);
  ASSERT_EQ_INT(failed, 0);
}

TEST(gemm_half_transposed_rhs_small_m) {
  // bf16 and f16 operands with the rhs stored [N, K] and 2..128 lhs rows: the transposed-B tiles
  // widen the weight as they copy it. Exact eighths against a double loop (1 and 3 threads,
  // outputs poisoned first); then inexact values, which must give the same bits as the rhs
  // stored [K, N] (the blocked and skinny paths widen on packing). Up to CMLC__GEMM_DOT_H_M lhs
  // rows (SIMD ISAs) take the half dot form (kern.dot_h: each weight row read in place, widened
  // in registers): each row's inexact results must be the bits of the f32 dot form (that row
  // alone times an f32 rhs stored [N, K]) on the widened values instead. 12 and 13 rows sit on
  // either side of that bound.
  static const int64_t shapes[][3] = {{1, 301, 257},  {1, 1001, 100}, {3, 301, 257},
                                      {12, 129, 130}, {13, 129, 130}, {17, 1001, 100},
                                      {40, 301, 513}, {90, 301, 100}};
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  int failed = 0;
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0] && !failed; ++si) {
    const int64_t m = shapes[si][0], n = shapes[si][1], k = shapes[si][2];
    float* af = malloc(sizeof(float) * (size_t)(m * k));
    float* bf = malloc(sizeof(float) * (size_t)(k * n));  // [N, K]
    uint16_t* ah = malloc(sizeof(uint16_t) * (size_t)(m * k));
    uint16_t* bh = malloc(sizeof(uint16_t) * (size_t)(k * n));
    uint16_t* bth = malloc(sizeof(uint16_t) * (size_t)(k * n));  // [K, N]
    float* c1 = malloc(sizeof(float) * (size_t)(m * n));
    float* c3 = malloc(sizeof(float) * (size_t)(m * n));
    for (int half = 0; half < 2 && !failed; ++half) {
      const cml_dtype_t dt = half ? CML_DTYPE_F16 : CML_DTYPE_BF16;
      for (int exact = 1; exact >= 0 && !failed; --exact) {
        fill_eighths(af, m * k, 31u + (uint32_t)si);
        fill_eighths(bf, k * n, 41u + (uint32_t)si);
        if (!exact) {  // a non-dyadic scale: inexact products and sums
          for (int64_t i = 0; i < m * k; ++i) af[i] *= 0.3f;
          for (int64_t i = 0; i < k * n; ++i) bf[i] *= 0.7f;
        }
        for (int64_t i = 0; i < m * k; ++i)
          ah[i] = half ? cml_f32_to_f16(af[i]) : cml_f32_to_bf16(af[i]);
        for (int64_t i = 0; i < k * n; ++i)
          bh[i] = half ? cml_f32_to_f16(bf[i]) : cml_f32_to_bf16(bf[i]);
        for (int64_t j = 0; j < n; ++j)
          for (int64_t kk = 0; kk < k; ++kk) bth[kk * n + j] = bh[j * k + kk];
        fake_t f, fkn;
        dot_2d_node(&f, dt, CML_DTYPE_F32, m, n, k, false, true);
        dot_2d_node(&fkn, dt, CML_DTYPE_F32, m, n, k, false, false);
        for (size_t i = 0; i < 3 && !failed; ++i) {
          if (!isa_usable(kIsas[i])) continue;
          cmlc_options_t o1 = make_options(kIsas[i], false, 1);
          cmlc_options_t o3 = make_options(kIsas[i], false, 3);
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
          // With AVX-512 BF16, bf16 products of up to 16 rows leave the vdpbf16ps GEMM for
          // these tiles (more rows stay there: then only the exact values are compared).
          o1.avx512_bf16 = o3.avx512_bf16 =
              kIsas[i] == CMLC_ISA_AVX512 && __builtin_cpu_supports("avx512bf16");
#endif
          memset(c1, 0xFF, sizeof(float) * (size_t)(m * n));
          memset(c3, 0xFF, sizeof(float) * (size_t)(m * n));
          ASSERT_STATUS_OK(fake_run(&f, &o1, NULL, (const void*[]){ah, bh}, (void*[]){c1}));
          ASSERT_STATUS_OK(fake_run(&f, &o3, pool, (const void*[]){ah, bh}, (void*[]){c3}));
          for (int64_t t = 0; t < m * n && !failed; ++t) {
            bool ok = memcmp(&c1[t], &c3[t], sizeof(float)) == 0;
            if (exact) {
              double want = 0;
              for (int64_t kk = 0; kk < k; ++kk)
                want += (double)af[(t / n) * k + kk] * (double)bf[(t % n) * k + kk];
              ok = ok && (double)c1[t] == want;
            }
            if (!ok) {
              fprintf(stderr, "%s M%lld N%lld K%lld isa %d exact %d at %lld: %.9g / %.9g\n",
                      cml_dtype_name(dt), (long long)m, (long long)n, (long long)k, (int)kIsas[i],
                      exact, (long long)t, c1[t], c3[t]);
              failed = 1;
            }
          }
          if (exact || failed || kIsas[i] == CMLC_ISA_SCALAR) continue;
          memset(c3, 0xFF, sizeof(float) * (size_t)(m * n));
          const bool dot_h = m <= CMLC__GEMM_DOT_H_M;
          if (dot_h) {
            // Row by row, the f32 dot form (one row times an f32 [N, K] rhs) on the widened
            // values.
            float* aw = malloc(sizeof(float) * (size_t)(m * k));
            float* bw = malloc(sizeof(float) * (size_t)(k * n));
            for (int64_t t = 0; t < m * k; ++t)
              aw[t] = half ? cml_f16_to_f32(ah[t]) : cml_bf16_to_f32(ah[t]);
            for (int64_t t = 0; t < k * n; ++t)
              bw[t] = half ? cml_f16_to_f32(bh[t]) : cml_bf16_to_f32(bh[t]);
            fake_t ff;
            dot_2d_node(&ff, CML_DTYPE_F32, CML_DTYPE_F32, 1, n, k, false, true);
            for (int64_t r = 0; r < m; ++r) {
              ASSERT_STATUS_OK(
                  fake_run(&ff, &o3, pool, (const void*[]){aw + r * k, bw}, (void*[]){c3 + r * n}));
            }
            free(aw), free(bw);
          } else {
            ASSERT_STATUS_OK(fake_run(&fkn, &o3, pool, (const void*[]){ah, bth}, (void*[]){c3}));
          }
          if (memcmp(c1, c3, sizeof(float) * (size_t)(m * n)) != 0) {
            fprintf(stderr, "%s M%lld N%lld K%lld isa %d: [N, K] rhs and %s differ\n",
                    cml_dtype_name(dt), (long long)m, (long long)n, (long long)k, (int)kIsas[i],
                    dot_h ? "the f32 dot form" : "[K, N] rhs");
            failed = 2;
          }
        }
      }
    }
    free(af), free(bf), free(ah), free(bh), free(bth), free(c1), free(c3);
  }
  cmlc_pool_destroy(pool);
  ASSERT_EQ_INT(failed, 0);
}

TEST(gemm_f64_every_isa_thread_independent) {
  // f64: inexact values; 1 and 3 threads must agree bitwise, and the result must be within
  // 1e-12 of a long double reference.
  // {100, 48, 400}: B rows of 48 doubles (whole cache lines), one row block: B read in place.
  static const int64_t shapes[][3] = {
      {1, 50, 300}, {40, 1, 70}, {7, 9, 5}, {130, 45, 600}, {100, 48, 400}};
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  int failed = 0;
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0] && !failed; ++si) {
    int64_t m = shapes[si][0], n = shapes[si][1], k = shapes[si][2];
    double* a = malloc(sizeof(double) * (size_t)(m * k));
    double* b = malloc(sizeof(double) * (size_t)(k * n));
    double* c1 = malloc(sizeof(double) * (size_t)(m * n));
    double* c3 = malloc(sizeof(double) * (size_t)(m * n));
    uint32_t seed = 5u + (uint32_t)si;
    for (int64_t i = 0; i < m * k; ++i) {
      seed = seed * 1664525u + 1013904223u;
      a[i] = (double)seed / 4294967296.0 - 0.5;
    }
    for (int64_t i = 0; i < k * n; ++i) {
      seed = seed * 1664525u + 1013904223u;
      b[i] = (double)seed / 4294967296.0 - 0.5;
    }
    fake_t f;
    dot_2d_node(&f, CML_DTYPE_F64, CML_DTYPE_F64, m, n, k, false, false);
    for (size_t i = 0; i < 3 && !failed; ++i) {
      if (!isa_usable(kIsas[i])) continue;
      cmlc_options_t o1 = make_options(kIsas[i], false, 1);
      cmlc_options_t o3 = make_options(kIsas[i], false, 3);
      ASSERT_STATUS_OK(fake_run(&f, &o1, NULL, (const void*[]){a, b}, (void*[]){c1}));
      ASSERT_STATUS_OK(fake_run(&f, &o3, pool, (const void*[]){a, b}, (void*[]){c3}));
      if (memcmp(c1, c3, sizeof(double) * (size_t)(m * n)) != 0) failed = 1;
      for (int64_t r = 0; r < m && !failed; ++r) {
        for (int64_t cc = 0; cc < n; ++cc) {
          long double want = 0;
          for (int64_t kk = 0; kk < k; ++kk) want += (long double)a[r * k + kk] * b[kk * n + cc];
          if (fabsl(want - c1[r * n + cc]) > 1e-12L) {
            fprintf(stderr, "f64 isa %d (%lld,%lld): %.17g want %.17Lg\n", (int)kIsas[i],
                    (long long)r, (long long)cc, c1[r * n + cc], want);
            failed = 2;
            break;
          }
        }
      }
    }
    free(a), free(b), free(c1), free(c3);
  }
  cmlc_pool_destroy(pool);
  ASSERT_EQ_INT(failed, 0);
}

TEST(gemm_half_inputs_convert_on_pack) {
  // bf16 and f16 operands (exact eighths) with an f32 accumulator, through the packed GEMM on
  // every ISA; an f32 accumulator with an f64 output; and f32 operands with an f64 accumulator.
  const int64_t m = 20, n = 35, k = 300;
  float* af = malloc(sizeof(float) * m * k);
  float* bf = malloc(sizeof(float) * k * n);
  uint16_t* ah = malloc(sizeof(uint16_t) * m * k);
  uint16_t* bh = malloc(sizeof(uint16_t) * k * n);
  float* c = malloc(sizeof(float) * m * n);
  double* cd = malloc(sizeof(double) * m * n);
  fill_eighths(af, m * k, 3);
  fill_eighths(bf, k * n, 4);
  int failed = 0;
  for (int half = 0; half < 2 && !failed; ++half) {
    cml_dtype_t dt = half ? CML_DTYPE_F16 : CML_DTYPE_BF16;
    for (int64_t i = 0; i < m * k; ++i)
      ah[i] = half ? cml_f32_to_f16(af[i]) : cml_f32_to_bf16(af[i]);
    for (int64_t i = 0; i < k * n; ++i)
      bh[i] = half ? cml_f32_to_f16(bf[i]) : cml_f32_to_bf16(bf[i]);
    fake_t f;
    dot_2d_node(&f, dt, CML_DTYPE_F32, m, n, k, false, half);
    if (half) {  // f16: B given transposed ([N, K]).
      for (int64_t kk = 0; kk < k; ++kk)
        for (int64_t j = 0; j < n; ++j) bh[j * k + kk] = cml_f32_to_f16(bf[kk * n + j]);
    }
    for (size_t i = 0; i < 3 && !failed; ++i) {
      if (!isa_usable(kIsas[i])) continue;
      cmlc_options_t o = make_options(kIsas[i], false, 1);
      ASSERT_STATUS_OK(fake_run(&f, &o, NULL, (const void*[]){ah, bh}, (void*[]){c}));
      for (int64_t r = 0; r < m && !failed; ++r)
        for (int64_t j = 0; j < n; ++j) {
          double want = 0;
          for (int64_t kk = 0; kk < k; ++kk) want += (double)af[r * k + kk] * bf[kk * n + j];
          if ((double)c[r * n + j] != want) {
            fprintf(stderr, "%s isa %d (%lld,%lld): %g want %g\n", cml_dtype_name(dt),
                    (int)kIsas[i], (long long)r, (long long)j, c[r * n + j], want);
            failed = 1;
            break;
          }
        }
    }
  }
  // f32 operands, f64 accumulator and output: the f64 GEMM converts on packing.
  fake_t f;
  dot_2d_node(&f, CML_DTYPE_F32, CML_DTYPE_F64, m, n, k, true, false);
  float* at = malloc(sizeof(float) * m * k);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t kk = 0; kk < k; ++kk) at[kk * m + r] = af[r * k + kk];
  for (size_t i = 0; i < 3 && !failed; ++i) {
    if (!isa_usable(kIsas[i])) continue;
    cmlc_options_t o = make_options(kIsas[i], false, 1);
    ASSERT_STATUS_OK(fake_run(&f, &o, NULL, (const void*[]){at, bf}, (void*[]){cd}));
    for (int64_t r = 0; r < m && !failed; ++r)
      for (int64_t j = 0; j < n; ++j) {
        double want = 0;
        for (int64_t kk = 0; kk < k; ++kk) want += (double)af[r * k + kk] * bf[kk * n + j];
        if (cd[r * n + j] != want) {
          failed = 2;
          break;
        }
      }
  }
  free(af), free(bf), free(ah), free(bh), free(c), free(cd), free(at);
  ASSERT_EQ_INT(failed, 0);
}

TEST(gemm_batched_gemv_and_small) {
  // Batched products in batch mode (many small) and in tile mode (few large), and a batched
  // M = 1 product: lhs [B, 1, K] x rhs [B, K, N]. Exact values. {1, 1, 8300, 3}: a GEMV whose
  // outputs per thread exceed the 4096 of one task (more tasks than threads).
  static const int64_t cases[][4] = {
      {6, 1, 40, 30}, {9, 8, 9, 10}, {2, 100, 50, 300}, {1, 1, 8300, 3}};
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(2, cml_allocator_system(), &pool));
  int failed = 0;
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0] && !failed; ++ci) {
    int64_t B = cases[ci][0], m = cases[ci][1], n = cases[ci][2], k = cases[ci][3];
    float* a = malloc(sizeof(float) * B * m * k);
    float* b = malloc(sizeof(float) * B * k * n);
    float* c1 = malloc(sizeof(float) * B * m * n);
    float* c2 = malloc(sizeof(float) * B * m * n);
    fill_eighths(a, B * m * k, 7);
    fill_eighths(b, B * k * n, 8);
    fake_t f;
    cml_shape_t ins[2] = {shp(CML_DTYPE_F32, 3, (int64_t[]){B, m, k}),
                          shp(CML_DTYPE_F32, 3, (int64_t[]){B, k, n})};
    cml_shape_t out = shp(CML_DTYPE_F32, 3, (int64_t[]){B, m, n});
    fake_init(&f, CML_OP_DOT_GENERAL, ins, 2, &out, 1);
    dot_config(&f.attrs, 1, 3, CML_DTYPE_F32);
    for (size_t i = 0; i < 3 && !failed; ++i) {
      if (!isa_usable(kIsas[i])) continue;
      cmlc_options_t o1 = make_options(kIsas[i], false, 1), o2 = make_options(kIsas[i], false, 2);
      ASSERT_STATUS_OK(fake_run(&f, &o1, NULL, (const void*[]){a, b}, (void*[]){c1}));
      ASSERT_STATUS_OK(fake_run(&f, &o2, pool, (const void*[]){a, b}, (void*[]){c2}));
      for (int64_t bb = 0; bb < B && !failed; ++bb)
        for (int64_t r = 0; r < m && !failed; ++r)
          for (int64_t j = 0; j < n; ++j) {
            double want = 0;
            for (int64_t kk = 0; kk < k; ++kk)
              want += (double)a[(bb * m + r) * k + kk] * b[(bb * k + kk) * n + j];
            int64_t e = (bb * m + r) * n + j;
            if ((double)c1[e] != want || c1[e] != c2[e]) {
              failed = 1;
              break;
            }
          }
    }
    free(a), free(b), free(c1), free(c2);
  }
  cmlc_pool_destroy(pool);
  ASSERT_EQ_INT(failed, 0);
}

TEST(gemv_half_rhs_streams_in_place) {
  // 1..16 rows (f32, bf16 or f16; scalar code: one row) times a bf16 or f16 matrix
  // with contiguous rows ([K, N], batched or not): the GEMV streams the matrix in place,
  // widened in registers. Exact eighths
  // against a double loop; inexact values give the same bits on 1 and 3 threads, and every row
  // the same bits as the one-row f32 GEMV of that row and the widened matrix (the kernels
  // promise the f32 axpy form's arithmetic), on every ISA; with AVX-512 BF16 enabled,
  // bf16 x bf16 takes this path too. N = 5000 splits into more tasks than threads; K = 1, 3, 5,
  // 11 and 301 leave rows after the groups of eight and four; N = 7, 33 and 100 leave column
  // tails; 17 rows take the other paths (same checks but the one-row bits).
  static const int64_t cases[][4] = {{1, 1, 5, 7},     {1, 1, 301, 33},  {3, 1, 3, 100},
                                     {1, 1, 64, 5000}, {2, 1, 1, 40},    {1, 2, 11, 100},
                                     {1, 5, 301, 33},  {2, 16, 64, 300}, {1, 17, 40, 70}};
  static const cml_dtype_t halves[2] = {CML_DTYPE_BF16, CML_DTYPE_F16};
  static const cml_dtype_t vecs[3] = {CML_DTYPE_F32, CML_DTYPE_BF16, CML_DTYPE_F16};
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  int failed = 0;
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0] && !failed; ++ci) {
    const int64_t B = cases[ci][0], m = cases[ci][1], k = cases[ci][2], n = cases[ci][3];
    float* af = malloc(sizeof(float) * (size_t)(B * m * k));
    float* bf = malloc(sizeof(float) * (size_t)(B * k * n));
    uint16_t* ah = malloc(sizeof(uint16_t) * (size_t)(B * m * k));
    uint16_t* bh = malloc(sizeof(uint16_t) * (size_t)(B * k * n));
    float* c1 = malloc(sizeof(float) * (size_t)(B * m * n));
    float* c3 = malloc(sizeof(float) * (size_t)(B * m * n));
    float* cw = malloc(sizeof(float) * (size_t)n);
    for (int hi = 0; hi < 2 && !failed; ++hi) {
      const cml_dtype_t bdt = halves[hi];
      for (int vi = 0; vi < 3 && !failed; ++vi) {
        const cml_dtype_t adt = vecs[vi];
        for (int exact = 1; exact >= 0 && !failed; --exact) {
          fill_eighths(af, B * m * k, 71u + (uint32_t)ci);
          fill_eighths(bf, B * k * n, 83u + (uint32_t)ci);
          if (!exact) {
            for (int64_t i = 0; i < B * m * k; ++i) af[i] *= 0.3f;
            for (int64_t i = 0; i < B * k * n; ++i) bf[i] *= 0.7f;
          }
          // The operands as stored, and af / bf replaced by their exact f32 values.
          for (int64_t i = 0; i < B * k * n; ++i) {
            bh[i] = bdt == CML_DTYPE_F16 ? cml_f32_to_f16(bf[i]) : cml_f32_to_bf16(bf[i]);
            bf[i] = bdt == CML_DTYPE_F16 ? cml_f16_to_f32(bh[i]) : cml_bf16_to_f32(bh[i]);
          }
          for (int64_t i = 0; i < B * m * k; ++i) {
            ah[i] = adt == CML_DTYPE_F16 ? cml_f32_to_f16(af[i]) : cml_f32_to_bf16(af[i]);
            if (adt != CML_DTYPE_F32)
              af[i] = adt == CML_DTYPE_F16 ? cml_f16_to_f32(ah[i]) : cml_bf16_to_f32(ah[i]);
          }
          const void* a_in = adt == CML_DTYPE_F32 ? (const void*)af : (const void*)ah;
          fake_t f, fw;
          const int32_t r = B > 1 ? 3 : 2;
          const int64_t ad[3] = {B, m, k}, bd[3] = {B, k, n}, od[3] = {B, m, n};
          cml_shape_t ins[2] = {shp(adt, r, ad + 3 - r), shp(bdt, r, bd + 3 - r)};
          cml_shape_t out = shp(CML_DTYPE_F32, r, od + 3 - r);
          fake_init(&f, CML_OP_DOT_GENERAL, ins, 2, &out, 1);
          dot_config(&f.attrs, r - 2, r, CML_DTYPE_F32);
          // The reference: one row of A (f32) times one batch element's widened matrix.
          cml_shape_t wins[2] = {shp(CML_DTYPE_F32, 2, (int64_t[]){1, k}),
                                 shp(CML_DTYPE_F32, 2, (int64_t[]){k, n})};
          cml_shape_t wout = shp(CML_DTYPE_F32, 2, (int64_t[]){1, n});
          fake_init(&fw, CML_OP_DOT_GENERAL, wins, 2, &wout, 1);
          dot_config(&fw.attrs, 0, 2, CML_DTYPE_F32);
          for (size_t i = 0; i < 3 && !failed; ++i) {
            if (!isa_usable(kIsas[i])) continue;
            cmlc_options_t o1 = make_options(kIsas[i], false, 1);
            cmlc_options_t o3 = make_options(kIsas[i], false, 3);
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
            o1.avx512_bf16 = o3.avx512_bf16 =
                kIsas[i] == CMLC_ISA_AVX512 && __builtin_cpu_supports("avx512bf16");
#endif
            memset(c1, 0xFF, sizeof(float) * (size_t)(B * m * n));
            memset(c3, 0xFF, sizeof(float) * (size_t)(B * m * n));
            ASSERT_STATUS_OK(fake_run(&f, &o1, NULL, (const void*[]){a_in, bh}, (void*[]){c1}));
            ASSERT_STATUS_OK(fake_run(&f, &o3, pool, (const void*[]){a_in, bh}, (void*[]){c3}));
            for (int64_t row = 0; row < B * m && !failed; ++row) {
              const int64_t bb = row / m;
              ASSERT_STATUS_OK(fake_run(
                  &fw, &o1, NULL, (const void*[]){af + row * k, bf + bb * k * n}, (void*[]){cw}));
              for (int64_t j = 0; j < n && !failed; ++j) {
                const int64_t t = row * n + j;
                bool ok = memcmp(&c1[t], &c3[t], sizeof(float)) == 0;
                // 17 rows (and 2 or more with scalar code) leave this path (the blocked,
                // skinny or bf16 GEMM): their own bits.
                if (m == 1 || (m <= 16 && kIsas[i] != CMLC_ISA_SCALAR))
                  ok = ok && memcmp(&c1[t], &cw[j], sizeof(float)) == 0;
                if (exact) {
                  double want = 0;
                  for (int64_t kk = 0; kk < k; ++kk)
                    want += (double)af[row * k + kk] * (double)bf[(bb * k + kk) * n + j];
                  ok = ok && (double)c1[t] == want;
                }
                if (!ok) {
                  fprintf(stderr,
                          "%s x %s B%lld M%lld K%lld N%lld isa %d exact %d at %lld: %.9g %.9g "
                          "%.9g\n",
                          cml_dtype_name(adt), cml_dtype_name(bdt), (long long)B, (long long)m,
                          (long long)k, (long long)n, (int)kIsas[i], exact, (long long)t, c1[t],
                          c3[t], cw[j]);
                  failed = 1;
                }
              }
            }
          }
        }
      }
    }
    free(af), free(bf), free(ah), free(bh), free(c1), free(c3), free(cw);
  }
  cmlc_pool_destroy(pool);
  ASSERT_EQ_INT(failed, 0);
}

TEST(gemv_rows_f32_streams_in_place) {
  // 2..8 rows of f32 times a large f32 matrix with contiguous rows (K x N >= 2^20) stream the
  // matrix in place with AVX-512 and AVX2 (the multi-row axpy form): exact eighths against a
  // double loop; inexact values the same bits on 1 and 3 threads and, with SIMD, each row the
  // bits of the one-row GEMV of that row. 9 rows take the skinny kernels (their own bits).
  static const int64_t ms[] = {2, 3, 8, 9};
  const int64_t k = 1027, n = 1029;
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  float* a = malloc(sizeof(float) * (size_t)(9 * k));
  float* b = malloc(sizeof(float) * (size_t)(k * n));
  float* c1 = malloc(sizeof(float) * (size_t)(9 * n));
  float* c3 = malloc(sizeof(float) * (size_t)(9 * n));
  float* cw = malloc(sizeof(float) * (size_t)n);
  int failed = 0;
  for (int exact = 1; exact >= 0 && !failed; --exact) {
    fill_eighths(a, 9 * k, 5u);
    fill_eighths(b, k * n, 6u);
    if (!exact) {
      for (int64_t i = 0; i < 9 * k; ++i) a[i] *= 0.3f;
      for (int64_t i = 0; i < k * n; ++i) b[i] *= 0.7f;
    }
    for (size_t mi = 0; mi < sizeof ms / sizeof ms[0] && !failed; ++mi) {
      const int64_t m = ms[mi];
      fake_t f, f1;
      dot_2d_node(&f, CML_DTYPE_F32, CML_DTYPE_F32, m, n, k, false, false);
      dot_2d_node(&f1, CML_DTYPE_F32, CML_DTYPE_F32, 1, n, k, false, false);
      for (size_t i = 0; i < 3 && !failed; ++i) {
        if (!isa_usable(kIsas[i])) continue;
        cmlc_options_t o1 = make_options(kIsas[i], false, 1);
        cmlc_options_t o3 = make_options(kIsas[i], false, 3);
        memset(c1, 0xFF, sizeof(float) * (size_t)(m * n));
        memset(c3, 0xFF, sizeof(float) * (size_t)(m * n));
        ASSERT_STATUS_OK(fake_run(&f, &o1, NULL, (const void*[]){a, b}, (void*[]){c1}));
        ASSERT_STATUS_OK(fake_run(&f, &o3, pool, (const void*[]){a, b}, (void*[]){c3}));
        for (int64_t r = 0; r < m && !failed; ++r) {
          ASSERT_STATUS_OK(fake_run(&f1, &o1, NULL, (const void*[]){a + r * k, b}, (void*[]){cw}));
          for (int64_t j = 0; j < n && !failed; ++j) {
            const int64_t t = r * n + j;
            bool ok = memcmp(&c1[t], &c3[t], sizeof(float)) == 0;
            if (m <= 8 && kIsas[i] != CMLC_ISA_SCALAR)
              ok = ok && memcmp(&c1[t], &cw[j], sizeof(float)) == 0;
            if (exact) {
              double want = 0;
              for (int64_t kk = 0; kk < k; ++kk) want += (double)a[r * k + kk] * b[kk * n + j];
              ok = ok && (double)c1[t] == want;
            }
            if (!ok) {
              fprintf(stderr, "f32 M%lld isa %d exact %d at (%lld,%lld): %.9g %.9g %.9g\n",
                      (long long)m, (int)kIsas[i], exact, (long long)r, (long long)j, c1[t], c3[t],
                      cw[j]);
              failed = 1;
            }
          }
        }
      }
    }
  }
  free(a), free(b), free(c1), free(c3), free(cw);
  cmlc_pool_destroy(pool);
  ASSERT_EQ_INT(failed, 0);
}

// The f64 dot form of the GEMV on AVX2 (a matrix times a vector): integer values (every sum
// exact in any order) must give the exact sums, bit for bit, for every k up to 70 (the 16-value
// steps and every tail) and long rows with a stride; random values within 2 k eps of a long
// double loop; c_stride places the outputs.
TEST(gemv_dot_f64_avx2) {
  if (!isa_usable(CMLC_ISA_AVX2)) return;
  enum { K = 1100, N = 5, LD = 1111 };
  static double x[K], y[N * LD], c[N * 3];
  uint32_t r = 7u;
  for (int pass = 0; pass < 2; ++pass) {
    for (int i = 0; i < K; ++i) {
      r = r * 1664525u + 1013904223u;
      x[i] = pass ? (double)(r >> 8) / 16777216.0 - 0.5 : (double)((int)(r >> 24) - 128);
    }
    for (int i = 0; i < N * LD; ++i) {
      r = r * 1664525u + 1013904223u;
      y[i] = pass ? (double)(r >> 8) / 16777216.0 - 0.5 : (double)((int)(r >> 26) - 32);
    }
    for (int64_t k = 0; k <= K; k += k < 70 ? 1 : K - 70) {
      for (int i = 0; i < N * 3; ++i) c[i] = -99.0;
      cmlc__gemv_dot_f64_avx2(k, x, y, LD, c, 3, N);
      for (int j = 0; j < N; ++j) {
        long double want = 0, mag = 0;
        for (int64_t kk = 0; kk < k; ++kk) {
          want += (long double)x[kk] * y[j * LD + kk];
          mag += fabsl((long double)x[kk] * y[j * LD + kk]);
        }
        const double got = c[j * 3];
        const bool ok = pass == 0
                            ? got == (double)want
                            : fabsl((long double)got - want) <= 2.0L * (k + 1) * DBL_EPSILON * mag;
        if (!ok || c[j * 3 + 1] != -99.0) {
          TEST_FAIL_("pass %d k %lld row %d: %.17g, want %.17Lg", pass, (long long)k, j, got, want);
          return;
        }
      }
    }
  }
}

//===--- ConvGeneral ---===//

static void conv_default_axes(cml_conv_config_t* c, int32_t spatial) {
  // Input [N, C, S...], kernel [O, I, S...], output [N, O, S...].
  memset(c, 0, sizeof *c);
  c->spatial_count = spatial;
  c->input_batch_axis = 0, c->input_channel_axis = 1;
  c->kernel_output_channel_axis = 0, c->kernel_input_channel_axis = 1;
  c->output_batch_axis = 0, c->output_channel_axis = 1;
  for (int32_t d = 0; d < spatial; ++d) {
    c->input_spatial_axes[d] = c->kernel_spatial_axes[d] = c->output_spatial_axes[d] = 2 + d;
    c->strides[d] = c->input_dilations[d] = c->kernel_dilations[d] = 1;
  }
  c->channel_group_count = c->batch_group_count = 1;
}

TEST(conv_1d_stride_padding_dilations) {
  // x = [1 2 3 4 5], w = [1 10], stride 2, pad (1, 1), kernel dilation 2, input dilation 1.
  // Padded x: [0 1 2 3 4 5 0]; dilated kernel taps at offsets 0 and 2.
  // Outputs at p = 0, 2, 4: 0*1 + 2*10 = 20; 2*1 + 4*10 = 42; 4*1 + 0*10 = 4.
  float x[5] = {1, 2, 3, 4, 5}, w[2] = {1, 10}, y[3] = {0};
  fake_t f;
  cml_shape_t ins[2] = {shp(CML_DTYPE_F32, 3, (int64_t[]){1, 1, 5}),
                        shp(CML_DTYPE_F32, 3, (int64_t[]){1, 1, 2})};
  cml_shape_t out = shp(CML_DTYPE_F32, 3, (int64_t[]){1, 1, 3});
  fake_init(&f, CML_OP_CONV_GENERAL, ins, 2, &out, 1);
  conv_default_axes(&f.attrs.u.conv, 1);
  f.attrs.u.conv.strides[0] = 2;
  f.attrs.u.conv.padding_low[0] = f.attrs.u.conv.padding_high[0] = 1;
  f.attrs.u.conv.kernel_dilations[0] = 2;
  cmlc_options_t o = make_options(CMLC_ISA_SCALAR, false, 1);
  ASSERT_STATUS_OK(fake_run(&f, &o, NULL, (const void*[]){x, w}, (void*[]){y}));
  ASSERT_EQ_DBL(y[0], 20);
  ASSERT_EQ_DBL(y[1], 42);
  ASSERT_EQ_DBL(y[2], 4);
  // Input dilation 2: x becomes [1 0 2 0 3 0 4 0 5] (9 long), w = [1 10], stride 1, no pad:
  // 8 outputs: 1, 20, 2, 30, 3, 40, 4, 50.
  float y2[8];
  f.values[3].shape = shp(CML_DTYPE_F32, 3, (int64_t[]){1, 1, 8});
  conv_default_axes(&f.attrs.u.conv, 1);
  f.attrs.u.conv.input_dilations[0] = 2;
  ASSERT_STATUS_OK(fake_run(&f, &o, NULL, (const void*[]){x, w}, (void*[]){y2}));
  const float want2[8] = {1, 20, 2, 30, 3, 40, 4, 50};
  for (int i = 0; i < 8; ++i) ASSERT_EQ_DBL(y2[i], want2[i]);
}

// A 1-D convolution runs as a 2-D one of height 1 (the direct kernel and its input-dilation
// phases: a transposed 1-D convolution went through im2col, multiplying the inserted zeros).
// Channels-first and channels-last layouts, strides, padding (negative too), kernel and input
// dilations (a transposed convolution), groups: on each SIMD ISA and 1 and 3 threads the result
// must be, bit for bit, the same convolution written as 2-D with a size-1 axis, and within a
// relative 1e-5 of a double loop; the plan must say how it runs.
typedef struct conv1d_case_t {
  int64_t n, c, w, o, k, stride, lo, hi, kdil, idil, groups;
  bool last;  // channels last (input [N, W, C], kernel [K, I, O], output [N, W', O])
} conv1d_case_t;

static void conv1d_config(cml_conv_config_t* cc, const conv1d_case_t* t, bool as_2d) {
  const int32_t sp = as_2d ? 2 : 1;
  memset(cc, 0, sizeof *cc);
  cc->spatial_count = sp;
  if (t->last) {
    cc->input_batch_axis = 0, cc->input_channel_axis = 1 + sp;
    cc->kernel_input_channel_axis = sp, cc->kernel_output_channel_axis = sp + 1;
    cc->output_batch_axis = 0, cc->output_channel_axis = 1 + sp;
    for (int32_t d = 0; d < sp; ++d) {
      cc->input_spatial_axes[d] = cc->output_spatial_axes[d] = 1 + d;
      cc->kernel_spatial_axes[d] = d;
    }
  } else {
    cc->input_batch_axis = 0, cc->input_channel_axis = 1;
    cc->kernel_output_channel_axis = 0, cc->kernel_input_channel_axis = 1;
    cc->output_batch_axis = 0, cc->output_channel_axis = 1;
    for (int32_t d = 0; d < sp; ++d)
      cc->input_spatial_axes[d] = cc->kernel_spatial_axes[d] = cc->output_spatial_axes[d] = 2 + d;
  }
  for (int32_t d = 0; d < sp; ++d)
    cc->strides[d] = cc->input_dilations[d] = cc->kernel_dilations[d] = 1;
  const int32_t w = sp - 1;
  cc->strides[w] = t->stride;
  cc->padding_low[w] = t->lo, cc->padding_high[w] = t->hi;
  cc->kernel_dilations[w] = t->kdil;
  cc->input_dilations[w] = t->idil;
  cc->channel_group_count = t->groups;
  cc->batch_group_count = 1;
}

// Shapes of input, kernel and output (1-D, or 2-D with a size-1 axis before the width).
static void conv1d_shapes(const conv1d_case_t* t, bool as_2d, int64_t ow, cml_shape_t sh[3]) {
  const int64_t ci = t->c / t->groups;
  if (t->last) {
    sh[0] = as_2d ? shp(CML_DTYPE_F32, 4, (int64_t[]){t->n, 1, t->w, t->c})
                  : shp(CML_DTYPE_F32, 3, (int64_t[]){t->n, t->w, t->c});
    sh[1] = as_2d ? shp(CML_DTYPE_F32, 4, (int64_t[]){1, t->k, ci, t->o})
                  : shp(CML_DTYPE_F32, 3, (int64_t[]){t->k, ci, t->o});
    sh[2] = as_2d ? shp(CML_DTYPE_F32, 4, (int64_t[]){t->n, 1, ow, t->o})
                  : shp(CML_DTYPE_F32, 3, (int64_t[]){t->n, ow, t->o});
  } else {
    sh[0] = as_2d ? shp(CML_DTYPE_F32, 4, (int64_t[]){t->n, t->c, 1, t->w})
                  : shp(CML_DTYPE_F32, 3, (int64_t[]){t->n, t->c, t->w});
    sh[1] = as_2d ? shp(CML_DTYPE_F32, 4, (int64_t[]){t->o, ci, 1, t->k})
                  : shp(CML_DTYPE_F32, 3, (int64_t[]){t->o, ci, t->k});
    sh[2] = as_2d ? shp(CML_DTYPE_F32, 4, (int64_t[]){t->n, t->o, 1, ow})
                  : shp(CML_DTYPE_F32, 3, (int64_t[]){t->n, t->o, ow});
  }
}

TEST(conv_1d_runs_as_2d) {
  static const conv1d_case_t cases[] = {
      {2, 64, 40, 32, 16, 1, 11, 11, 1, 8, 1, false},  // a vocoder's transposed conv
      {2, 64, 40, 32, 16, 1, 11, 11, 1, 8, 1, true},
      {3, 16, 50, 24, 4, 1, 2, 2, 1, 2, 1, true},    // transposed, stride 2
      {1, 48, 300, 64, 3, 1, 1, 1, 1, 1, 1, false},  // a plain 3-tap conv
      {2, 32, 97, 16, 5, 2, 2, 1, 1, 1, 1, true},    // strided
      {2, 24, 80, 24, 3, 1, 4, 4, 2, 1, 1, false},   // kernel dilation
      {1, 32, 64, 32, 3, 1, -1, 2, 1, 3, 2, false},  // negative padding, groups
      {2, 8, 33, 8, 7, 1, 3, 3, 1, 1, 8, true},      // depthwise
  };
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  int failed = 0, runs = 0;
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0] && !failed; ++ci) {
    const conv1d_case_t* t = &cases[ci];
    const int64_t span = (t->w - 1) * t->idil + 1 + t->lo + t->hi, keff = (t->k - 1) * t->kdil + 1;
    const int64_t ow = (span - keff) / t->stride + 1;
    const int64_t cig = t->c / t->groups, og = t->o / t->groups;
    const int64_t nx = t->n * t->c * t->w, nk = t->k * cig * t->o, ny = t->n * t->o * ow;
    float* x = malloc(sizeof(float) * (size_t)nx);
    float* w = malloc(sizeof(float) * (size_t)nk);
    float* y1 = malloc(sizeof(float) * (size_t)ny);
    float* y2 = malloc(sizeof(float) * (size_t)ny);
    double* want = calloc((size_t)ny, sizeof(double));
    uint32_t r = 12345u + (uint32_t)ci;
    for (int64_t i = 0; i < nx; ++i)
      r = r * 1664525u + 1013904223u, x[i] = (float)(r >> 9) / 8388608.0f - 1.0f;
    for (int64_t i = 0; i < nk; ++i)
      r = r * 1664525u + 1013904223u, w[i] = (float)(r >> 9) / 8388608.0f - 1.0f;
    // The double loop: output position p reads dilated input position p * stride + j * kdil - lo.
    for (int64_t b = 0; b < t->n; ++b)
      for (int64_t o = 0; o < t->o; ++o)
        for (int64_t p = 0; p < ow; ++p) {
          double acc = 0;
          const int64_t g = o / og;
          for (int64_t j = 0; j < t->k; ++j) {
            const int64_t pos = p * t->stride + j * t->kdil - t->lo;
            if (pos < 0 || pos % t->idil != 0 || pos / t->idil >= t->w) continue;
            const int64_t xi = pos / t->idil;
            for (int64_t q = 0; q < cig; ++q) {
              const int64_t c = g * cig + q;
              const double xv =
                  t->last ? x[(b * t->w + xi) * t->c + c] : x[(b * t->c + c) * t->w + xi];
              const double wv = t->last ? w[(j * cig + q) * t->o + o] : w[(o * cig + q) * t->k + j];
              acc += xv * wv;
            }
          }
          want[t->last ? (b * ow + p) * t->o + o : (b * t->o + o) * ow + p] = acc;
        }
    for (size_t ii = 1; ii < sizeof kIsas / sizeof kIsas[0] && !failed; ++ii) {
      if (!isa_usable(kIsas[ii])) continue;
      for (int threads = 1; threads <= 3 && !failed; threads += 2) {
        cmlc_options_t o = make_options(kIsas[ii], false, threads);
        cml_shape_t sh[3];
        fake_t f1, f2;
        conv1d_shapes(t, false, ow, sh);
        fake_init(&f1, CML_OP_CONV_GENERAL, sh, 2, &sh[2], 1);
        conv1d_config(&f1.attrs.u.conv, t, false);
        conv1d_shapes(t, true, ow, sh);
        fake_init(&f2, CML_OP_CONV_GENERAL, sh, 2, &sh[2], 1);
        conv1d_config(&f2.attrs.u.conv, t, true);
        cmlc_kernel_entry_t e;
        memset(&e, 0, sizeof e);
        ASSERT_TRUE(cmlc_kernels_linalg_lookup(&f1.module, &f1.node, &o, &e) && e.describe);
        char text[160];
        e.describe(&f1.module, &f1.node, &o, text, sizeof text);
        if (!strstr(text, "(1-D as 2-D)") ||
            (t->idil > 1 && t->groups == 1 && !strstr(text, "phases"))) {
          fprintf(stderr, "case %zu: the plan says \"%s\"\n", ci, text);
          failed = 1;
          break;
        }
        memset(y1, 0x5a, sizeof(float) * (size_t)ny), memset(y2, 0xa5, sizeof(float) * (size_t)ny);
        cml_status_t st =
            fake_run(&f1, &o, threads > 1 ? pool : NULL, (const void*[]){x, w}, (void*[]){y1});
        if (st == CML_OK)
          st = fake_run(&f2, &o, threads > 1 ? pool : NULL, (const void*[]){x, w}, (void*[]){y2});
        if (st != CML_OK) {
          cml_status_free(st);
          failed = 2;
          break;
        }
        ++runs;
        if (memcmp(y1, y2, sizeof(float) * (size_t)ny) != 0) {
          fprintf(stderr, "case %zu isa %d threads %d: 1-D and 2-D differ\n", ci, (int)kIsas[ii],
                  threads);
          failed = 3;
        }
        for (int64_t i = 0; i < ny && !failed; ++i) {
          if (fabs(y1[i] - want[i]) > 1e-5 * (1.0 + fabs(want[i]))) {
            fprintf(stderr, "case %zu isa %d threads %d: y[%lld] = %.9g, want %.9g\n", ci,
                    (int)kIsas[ii], threads, (long long)i, y1[i], want[i]);
            failed = 4;
          }
        }
      }
    }
    free(x), free(w), free(y1), free(y2), free(want);
  }
  cmlc_pool_destroy(pool);
  ASSERT_EQ_INT(failed, 0);
  if (isa_usable(CMLC_ISA_AVX2)) ASSERT_TRUE(runs > 0);
}

// A 2-D convolution cropped by 2^55 on one side of an axis and padded by 2^55 on the other:
// three outputs that read only padding, so zeros (the direct kernel's strip copy ended the
// process on it). Every ISA, 1 and 3 threads.
TEST(conv_2d_huge_padding_reads_only_padding) {
  float x[4] = {1, 2, 3, 4}, w[2] = {1, 1}, y[3];
  fake_t f;
  cml_shape_t ins[2] = {shp(CML_DTYPE_F32, 4, (int64_t[]){1, 1, 1, 4}),
                        shp(CML_DTYPE_F32, 4, (int64_t[]){1, 1, 1, 2})};
  cml_shape_t out = shp(CML_DTYPE_F32, 4, (int64_t[]){1, 1, 1, 3});
  fake_init(&f, CML_OP_CONV_GENERAL, ins, 2, &out, 1);
  conv_default_axes(&f.attrs.u.conv, 2);
  f.attrs.u.conv.padding_low[1] = -((int64_t)1 << 55);
  f.attrs.u.conv.padding_high[1] = (int64_t)1 << 55;
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  for (size_t i = 0; i < sizeof kIsas / sizeof kIsas[0]; ++i) {
    if (!isa_usable(kIsas[i])) continue;
    for (int threads = 1; threads <= 3; threads += 2) {
      cmlc_options_t o = make_options(kIsas[i], false, threads);
      y[0] = y[1] = y[2] = -1;
      ASSERT_STATUS_OK(
          fake_run(&f, &o, threads > 1 ? pool : NULL, (const void*[]){x, w}, (void*[]){y}));
      for (int j = 0; j < 3; ++j) ASSERT_EQ_DBL(y[j], 0);
    }
  }
  cmlc_pool_destroy(pool);
}

TEST(conv_2d_nhwc_layout_and_int) {
  // NHWC input [1, 3, 3, 1], HWIO kernel [2, 2, 1, 1] all ones: 2x2 window sums.
  int32_t x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w[4] = {1, 1, 1, 1}, y[4];
  fake_t f;
  cml_shape_t ins[2] = {shp(CML_DTYPE_I32, 4, (int64_t[]){1, 3, 3, 1}),
                        shp(CML_DTYPE_I32, 4, (int64_t[]){2, 2, 1, 1})};
  cml_shape_t out = shp(CML_DTYPE_I32, 4, (int64_t[]){1, 2, 2, 1});
  fake_init(&f, CML_OP_CONV_GENERAL, ins, 2, &out, 1);
  cml_conv_config_t* c = &f.attrs.u.conv;
  conv_default_axes(c, 2);
  c->input_batch_axis = 0, c->input_channel_axis = 3;
  c->input_spatial_axes[0] = 1, c->input_spatial_axes[1] = 2;
  c->kernel_spatial_axes[0] = 0, c->kernel_spatial_axes[1] = 1;
  c->kernel_input_channel_axis = 2, c->kernel_output_channel_axis = 3;
  c->output_batch_axis = 0, c->output_channel_axis = 3;
  c->output_spatial_axes[0] = 1, c->output_spatial_axes[1] = 2;
  cmlc_options_t o = make_options(CMLC_ISA_SCALAR, false, 1);
  ASSERT_STATUS_OK(fake_run(&f, &o, NULL, (const void*[]){x, w}, (void*[]){y}));
  ASSERT_EQ_INT(y[0], 12);
  ASSERT_EQ_INT(y[1], 16);
  ASSERT_EQ_INT(y[2], 24);
  ASSERT_EQ_INT(y[3], 28);
  // u8 wraps: 200 * 2 = 400 -> 144.
  uint8_t ux[9] = {200, 0, 0, 0, 0, 0, 0, 0, 0}, uw[4] = {2, 0, 0, 0}, uy[4];
  f.values[1].shape.dtype = f.values[2].shape.dtype = f.values[3].shape.dtype = CML_DTYPE_U8;
  ASSERT_STATUS_OK(fake_run(&f, &o, NULL, (const void*[]){ux, uw}, (void*[]){uy}));
  ASSERT_EQ_INT(uy[0], 144);
}

TEST(conv_feature_and_batch_groups) {
  // Depthwise: input [1, 2, 3] (2 channels), kernel [O=2, I=1, 1], groups 2:
  // channel 0 x [1 2 3] * 10, channel 1 x [4 5 6] * 100.
  float x[6] = {1, 2, 3, 4, 5, 6}, w[2] = {10, 100}, y[6];
  fake_t f;
  cml_shape_t ins[2] = {shp(CML_DTYPE_F32, 3, (int64_t[]){1, 2, 3}),
                        shp(CML_DTYPE_F32, 3, (int64_t[]){2, 1, 1})};
  cml_shape_t out = shp(CML_DTYPE_F32, 3, (int64_t[]){1, 2, 3});
  fake_init(&f, CML_OP_CONV_GENERAL, ins, 2, &out, 1);
  conv_default_axes(&f.attrs.u.conv, 1);
  f.attrs.u.conv.channel_group_count = 2;
  cmlc_options_t o = make_options(CMLC_ISA_SCALAR, false, 1);
  ASSERT_STATUS_OK(fake_run(&f, &o, NULL, (const void*[]){x, w}, (void*[]){y}));
  const float want[6] = {10, 20, 30, 400, 500, 600};
  for (int i = 0; i < 6; ++i) ASSERT_EQ_DBL(y[i], want[i]);
  // Batch groups: input [N=2, C=1, 3], kernel [O=2, I=1, 1], batch_group_count 2 -> output
  // [1, 2, 3]: feature 0 from batch 0 (x 10), feature 1 from batch 1 (x 100).
  fake_init(&f, CML_OP_CONV_GENERAL,
            (cml_shape_t[]){shp(CML_DTYPE_F32, 3, (int64_t[]){2, 1, 3}),
                            shp(CML_DTYPE_F32, 3, (int64_t[]){2, 1, 1})},
            2, &out, 1);
  conv_default_axes(&f.attrs.u.conv, 1);
  f.attrs.u.conv.batch_group_count = 2;
  ASSERT_STATUS_OK(fake_run(&f, &o, NULL, (const void*[]){x, w}, (void*[]){y}));
  for (int i = 0; i < 6; ++i) ASSERT_EQ_DBL(y[i], want[i]);
}

TEST(conv_half_and_f64) {
  // f16 input 2048 + 1*8 accumulates in f32 -> 2056.
  uint16_t x[9], w[9], y[1];
  for (int i = 0; i < 9; ++i)
    x[i] = cml_f32_to_f16(i == 0 ? 2048.0f : 1.0f), w[i] = cml_f32_to_f16(1.0f);
  fake_t f;
  cml_shape_t ins[2] = {shp(CML_DTYPE_F16, 3, (int64_t[]){1, 9, 1}),
                        shp(CML_DTYPE_F16, 3, (int64_t[]){1, 9, 1})};
  cml_shape_t out = shp(CML_DTYPE_F16, 3, (int64_t[]){1, 1, 1});
  fake_init(&f, CML_OP_CONV_GENERAL, ins, 2, &out, 1);
  conv_default_axes(&f.attrs.u.conv, 1);
  cmlc_options_t o = make_options(CMLC_ISA_SCALAR, false, 1);
  ASSERT_STATUS_OK(fake_run(&f, &o, NULL, (const void*[]){x, w}, (void*[]){y}));
  ASSERT_EQ_DBL(cml_f16_to_f32(y[0]), 2056);
  double dx[9], dw[9], dy[1];
  for (int i = 0; i < 9; ++i) dx[i] = i * 0.5, dw[i] = 2.0;
  f.values[1].shape.dtype = f.values[2].shape.dtype = f.values[3].shape.dtype = CML_DTYPE_F64;
  ASSERT_STATUS_OK(fake_run(&f, &o, NULL, (const void*[]){dx, dw}, (void*[]){dy}));
  ASSERT_EQ_DBL(dy[0], 36.0);
}

TEST(capabilities_and_lookup_rejects) {
  cml_capabilities_t caps;
  memset(&caps, 0, sizeof caps);
  cmlc_kernels_linalg_capabilities(&caps);
  ASSERT_TRUE(cml_capabilities_has_op(&caps, CML_OP_DOT_GENERAL));
  ASSERT_TRUE(cml_capabilities_has_op(&caps, CML_OP_DOT));
  ASSERT_TRUE(cml_capabilities_has_op(&caps, CML_OP_CONV_GENERAL));
  ASSERT_FALSE(cml_capabilities_has_op(&caps, CML_OP_ADD));
  fake_t f;
  cml_shape_t ins[2] = {shp(CML_DTYPE_BOOL, 1, (int64_t[]){2}),
                        shp(CML_DTYPE_BOOL, 1, (int64_t[]){2})};
  cml_shape_t out = shp(CML_DTYPE_BOOL, 0, NULL);
  fake_init(&f, CML_OP_DOT, ins, 2, &out, 1);
  f.attrs.u.dot.lhs_contracting_count = f.attrs.u.dot.rhs_contracting_count = 1;
  f.attrs.u.dot.accumulator_dtype = f.attrs.u.dot.output_dtype = CML_DTYPE_BOOL;
  cmlc_options_t o = make_options(CMLC_ISA_SCALAR, false, 1);
  cmlc_kernel_entry_t e;
  ASSERT_FALSE(cmlc_kernels_linalg_lookup(&f.module, &f.node, &o, &e));
  f.node.op = CML_OP_ADD;
  ASSERT_FALSE(cmlc_kernels_linalg_lookup(&f.module, &f.node, &o, &e));
}

TEST_MAIN(TEST_ENTRY(dot_f32_small_every_path),
          TEST_ENTRY(dot_f32_transposed_layouts_blocks_and_threads),
          TEST_ENTRY(dot_f32_inexact_thread_independent), TEST_ENTRY(dot_int_wraps_and_accumulates),
          TEST_ENTRY(dot_half_accumulates_in_f32), TEST_ENTRY(dot_complex_and_f64),
          TEST_ENTRY(dot_multiple_contracting_and_batch_axes), TEST_ENTRY(dot_zero_k_and_empty),
          TEST_ENTRY(dot_f32_to_int_output), TEST_ENTRY(gemm_f32_shapes_layouts_isas_threads),
          TEST_ENTRY(gemm_row_block_balances_threads), TEST_ENTRY(dot_int16_pairs_match_generic),
          TEST_ENTRY(gemm_narrow_columns_many_rows),
          TEST_ENTRY(gemm_tiny_batches_match_one_at_a_time),
          TEST_ENTRY(gemm_f32_transposed_rhs_small_m), TEST_ENTRY(gemm_half_transposed_rhs_small_m),
          TEST_ENTRY(gemm_f64_every_isa_thread_independent),
          TEST_ENTRY(gemm_half_inputs_convert_on_pack), TEST_ENTRY(gemm_batched_gemv_and_small),
          TEST_ENTRY(gemv_half_rhs_streams_in_place), TEST_ENTRY(gemv_rows_f32_streams_in_place),
          TEST_ENTRY(conv_1d_stride_padding_dilations), TEST_ENTRY(conv_2d_nhwc_layout_and_int),
          TEST_ENTRY(conv_feature_and_batch_groups), TEST_ENTRY(conv_half_and_f64),
          TEST_ENTRY(conv_1d_runs_as_2d), TEST_ENTRY(gemv_dot_f64_avx2),
          TEST_ENTRY(conv_2d_huge_padding_reads_only_padding),
          TEST_ENTRY(capabilities_and_lookup_rejects))
