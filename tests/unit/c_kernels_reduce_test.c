// SPDX-License-Identifier: Apache-2.0
// tests/unit/c_kernels_reduce_test.c: the C backend's reduction and ArgMinMax kernels, called
// through cmlc_kernels_reduce_lookup on hand-made IR nodes; expected values are hand-computed
// or come from plain reference loops written here.
#include <math.h>
#include <stdint.h>

#include "backends/c/cmlc.h"
#include "test.h"

typedef struct tnode_t {
  cml_module_t module;
  cml_ir_value_t values[3];
  cml_ir_node_t node;
  uint32_t inputs[1];
  cml_ir_attrs_t attrs;
} tnode_t;

// A reduction node of |op| over |axes| of |in|; the output shape drops those axes.
static void tnode_init(tnode_t* t, cml_op_t op, cml_shape_t in, const int64_t* axes,
                       int axis_count) {
  memset(t, 0, sizeof *t);
  t->values[1].shape = in;
  cml_shape_t out = in;
  out.rank = 0;
  for (int32_t d = 0; d < in.rank; ++d) {
    bool reduced = false;
    for (int k = 0; k < axis_count; ++k) reduced |= axes[k] == d;
    if (!reduced) out.dims[out.rank++] = in.dims[d];
  }
  for (int32_t d = out.rank; d < CML_MAX_RANK; ++d) out.dims[d] = 0;
  t->values[2].shape = out;
  t->inputs[0] = 1;
  t->attrs.axis_count = axis_count;
  for (int k = 0; k < axis_count; ++k) t->attrs.axes[k] = axes[k];
  t->node.op = op;
  t->node.input_count = 1;
  t->node.inputs = t->inputs;
  t->node.output_count = 1;
  t->node.first_output = 2;
  t->node.attrs = &t->attrs;
  t->module.node_count = 1;
  t->module.nodes = &t->node;
  t->module.value_count = 3;
  t->module.values = t->values;
  t->module.num_devices = 1;
}

// ArgMinMax node: output drops |axis| and has |out_dtype|.
static void tnode_init_arg(tnode_t* t, cml_shape_t in, int64_t axis, cml_dtype_t out_dtype,
                           bool is_min) {
  tnode_init(t, CML_OP_ARG_MIN_MAX, in, &axis, 1);
  t->values[2].shape.dtype = out_dtype;
  t->attrs.axis_count = 0;
  t->attrs.axis = axis;
  t->attrs.dtype = out_dtype;
  t->attrs.flag = is_min;
}

// Runs the node with the kernels of |isa| (reference mode for CMLC_ISA_SCALAR).
static cml_status_t tnode_run_isa(tnode_t* t, const void* input, void* output, cmlc_pool_t* pool,
                                  cmlc_isa_t isa) {
  cmlc_options_t options;
  memset(&options, 0, sizeof options);
  options.reference = isa == CMLC_ISA_SCALAR;
  options.isa = isa;
  options.threads = cmlc_pool_thread_count(pool);
  options.devices = 1;
  cmlc_kernel_entry_t entry;
  if (!cmlc_kernels_reduce_lookup(&t->module, &t->node, &options, &entry)) {
    return cml_status_make(CML_STATUS_UNIMPLEMENTED, "no kernel for %s", cml_op_name(t->node.op));
  }
  const cml_shape_t* in_shapes[1] = {&t->values[1].shape};
  const cml_shape_t* out_shapes[1] = {&t->values[2].shape};
  const void* inputs[1] = {input};
  void* outputs[1] = {output};
  cmlc_kernel_args_t args;
  memset(&args, 0, sizeof args);
  args.module = &t->module;
  args.node = &t->node;
  args.options = &options;
  args.input_count = 1;
  args.input_shapes = in_shapes;
  args.inputs = inputs;
  args.output_count = 1;
  args.output_shapes = out_shapes;
  args.outputs = outputs;
  args.pool = pool;
  // Scratch as the engine plans it: the size the entry asks for, 64-byte aligned.
  void* scratch = NULL;
  if (entry.scratch) {
    args.scratch_size = entry.scratch(&t->module, &t->node, &options);
    if (args.scratch_size > 0) {
      scratch = aligned_alloc(64, (args.scratch_size + 63) / 64 * 64);
      if (!scratch) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
    }
  }
  args.scratch = scratch;
  memcpy(args.impl, entry.impl, sizeof args.impl);
  cml_status_t st = entry.run(&args);
  free(scratch);
  return st;
}

static cml_status_t tnode_run(tnode_t* t, const void* input, void* output, cmlc_pool_t* pool) {
  return tnode_run_isa(t, input, output, pool, CMLC_ISA_SCALAR);
}

static cml_shape_t shp(cml_dtype_t dtype, int32_t rank, const int64_t* dims) {
  return cml_shape_make(dtype, rank, dims);
}

TEST(sum_f32_axes) {
  float x[6] = {1, 2, 3, 4, 5, 6}, y[3];
  cml_shape_t s = shp(CML_DTYPE_F32, 2, (int64_t[]){2, 3});
  tnode_t t;
  tnode_init(&t, CML_OP_REDUCE_SUM, s, (int64_t[]){1}, 1);
  ASSERT_STATUS_OK(tnode_run(&t, x, y, NULL));
  ASSERT_EQ_DBL(y[0], 6);
  ASSERT_EQ_DBL(y[1], 15);
  tnode_init(&t, CML_OP_REDUCE_SUM, s, (int64_t[]){0}, 1);
  ASSERT_STATUS_OK(tnode_run(&t, x, y, NULL));
  ASSERT_EQ_DBL(y[0], 5);
  ASSERT_EQ_DBL(y[1], 7);
  ASSERT_EQ_DBL(y[2], 9);
  tnode_init(&t, CML_OP_REDUCE_SUM, s, (int64_t[]){0, 1}, 2);
  ASSERT_STATUS_OK(tnode_run(&t, x, y, NULL));
  ASSERT_EQ_DBL(y[0], 21);
  tnode_init(&t, CML_OP_REDUCE_PRODUCT, s, (int64_t[]){0, 1}, 2);
  ASSERT_STATUS_OK(tnode_run(&t, x, y, NULL));
  ASSERT_EQ_DBL(y[0], 720);
  tnode_init(&t, CML_OP_REDUCE_MAX, s, (int64_t[]){1}, 1);
  ASSERT_STATUS_OK(tnode_run(&t, x, y, NULL));
  ASSERT_EQ_DBL(y[0], 3);
  ASSERT_EQ_DBL(y[1], 6);
  tnode_init(&t, CML_OP_REDUCE_MIN, s, (int64_t[]){0}, 1);
  ASSERT_STATUS_OK(tnode_run(&t, x, y, NULL));
  ASSERT_EQ_DBL(y[2], 3);
}

TEST(empty_extent_identities_and_nan) {
  cml_shape_t s = shp(CML_DTYPE_F32, 2, (int64_t[]){2, 0});
  float y[2];
  tnode_t t;
  tnode_init(&t, CML_OP_REDUCE_MAX, s, (int64_t[]){1}, 1);
  ASSERT_STATUS_OK(tnode_run(&t, NULL, y, NULL));
  ASSERT_TRUE(isinf(y[0]) && y[0] < 0);
  tnode_init(&t, CML_OP_REDUCE_MIN, s, (int64_t[]){1}, 1);
  ASSERT_STATUS_OK(tnode_run(&t, NULL, y, NULL));
  ASSERT_TRUE(isinf(y[1]) && y[1] > 0);
  tnode_init(&t, CML_OP_REDUCE_PRODUCT, s, (int64_t[]){1}, 1);
  ASSERT_STATUS_OK(tnode_run(&t, NULL, y, NULL));
  ASSERT_EQ_DBL(y[0], 1);
  int32_t iy[2];
  tnode_init(&t, CML_OP_REDUCE_MAX, shp(CML_DTYPE_I32, 2, (int64_t[]){0, 2}), (int64_t[]){0}, 1);
  ASSERT_STATUS_OK(tnode_run(&t, NULL, iy, NULL));
  ASSERT_EQ_INT(iy[0], INT32_MIN);
  tnode_init(&t, CML_OP_REDUCE_BITWISE_AND, shp(CML_DTYPE_I32, 2, (int64_t[]){0, 2}),
             (int64_t[]){0}, 1);
  ASSERT_STATUS_OK(tnode_run(&t, NULL, iy, NULL));
  ASSERT_EQ_INT(iy[1], -1);
  uint8_t b;
  tnode_init(&t, CML_OP_REDUCE_LOGICAL_AND, shp(CML_DTYPE_BOOL, 1, (int64_t[]){0}), (int64_t[]){0},
             1);
  ASSERT_STATUS_OK(tnode_run(&t, NULL, &b, NULL));
  ASSERT_EQ_INT(b, 1);
  // NaN propagates through max and min, wherever it sits among many elements.
  float x[1000];
  for (int i = 0; i < 1000; ++i) x[i] = (float)i;
  x[777] = NAN;
  float m;
  tnode_init(&t, CML_OP_REDUCE_MAX, shp(CML_DTYPE_F32, 1, (int64_t[]){1000}), (int64_t[]){0}, 1);
  ASSERT_STATUS_OK(tnode_run(&t, x, &m, NULL));
  ASSERT_TRUE(isnan(m));
  tnode_init(&t, CML_OP_REDUCE_MIN, shp(CML_DTYPE_F32, 1, (int64_t[]){1000}), (int64_t[]){0}, 1);
  ASSERT_STATUS_OK(tnode_run(&t, x, &m, NULL));
  ASSERT_TRUE(isnan(m));
}

TEST(ints_wrap_and_bitwise_logical) {
  int8_t x[3] = {100, 100, 1};
  int8_t y;
  tnode_t t;
  cml_shape_t s = shp(CML_DTYPE_I8, 1, (int64_t[]){3});
  tnode_init(&t, CML_OP_REDUCE_SUM, s, (int64_t[]){0}, 1);
  ASSERT_STATUS_OK(tnode_run(&t, x, &y, NULL));
  ASSERT_EQ_INT(y, -55);  // 201 wraps to -55
  tnode_init(&t, CML_OP_REDUCE_PRODUCT, s, (int64_t[]){0}, 1);
  ASSERT_STATUS_OK(tnode_run(&t, x, &y, NULL));
  ASSERT_EQ_INT(y, 16);  // 10000 mod 256 = 16
  uint16_t u[4] = {0x0f0f, 0x00ff, 0xf00f, 0x000f}, uy;
  cml_shape_t us = shp(CML_DTYPE_U16, 1, (int64_t[]){4});
  tnode_init(&t, CML_OP_REDUCE_BITWISE_AND, us, (int64_t[]){0}, 1);
  ASSERT_STATUS_OK(tnode_run(&t, u, &uy, NULL));
  ASSERT_EQ_INT(uy, 0x000f);
  tnode_init(&t, CML_OP_REDUCE_BITWISE_OR, us, (int64_t[]){0}, 1);
  ASSERT_STATUS_OK(tnode_run(&t, u, &uy, NULL));
  ASSERT_EQ_INT(uy, 0xffff);
  tnode_init(&t, CML_OP_REDUCE_BITWISE_XOR, us, (int64_t[]){0}, 1);
  ASSERT_STATUS_OK(tnode_run(&t, u, &uy, NULL));
  ASSERT_EQ_INT(uy, 0x0f0f ^ 0x00ff ^ 0xf00f ^ 0x000f);
  uint16_t big[2] = {60000, 60000};
  tnode_init(&t, CML_OP_REDUCE_PRODUCT, shp(CML_DTYPE_U16, 1, (int64_t[]){2}), (int64_t[]){0}, 1);
  ASSERT_STATUS_OK(tnode_run(&t, big, &uy, NULL));
  ASSERT_EQ_INT(uy, (uint16_t)(60000u * 60000u));
  uint8_t b[6] = {1, 0, 1, 1, 1, 1}, by[3];
  cml_shape_t bs = shp(CML_DTYPE_BOOL, 2, (int64_t[]){2, 3});
  tnode_init(&t, CML_OP_REDUCE_LOGICAL_AND, bs, (int64_t[]){1}, 1);
  ASSERT_STATUS_OK(tnode_run(&t, b, by, NULL));
  ASSERT_EQ_INT(by[0], 0);
  ASSERT_EQ_INT(by[1], 1);
  tnode_init(&t, CML_OP_REDUCE_LOGICAL_XOR, bs, (int64_t[]){1}, 1);
  ASSERT_STATUS_OK(tnode_run(&t, b, by, NULL));
  ASSERT_EQ_INT(by[0], 0);
  ASSERT_EQ_INT(by[1], 1);
  tnode_init(&t, CML_OP_REDUCE_LOGICAL_OR, bs, (int64_t[]){0}, 1);
  ASSERT_STATUS_OK(tnode_run(&t, b, by, NULL));
  ASSERT_EQ_INT(by[0], 1);
  ASSERT_EQ_INT(by[1], 1);
  ASSERT_EQ_INT(by[2], 1);
}

TEST(half_accumulates_in_f32) {
  // 4096 ones: an f16 accumulator would stall at 2048; f32 accumulation gives 4096 exactly.
  enum { N = 4096 };
  static uint16_t x[N];
  for (int i = 0; i < N; ++i) x[i] = cml_f32_to_f16(1.0f);
  uint16_t y;
  tnode_t t;
  tnode_init(&t, CML_OP_REDUCE_SUM, shp(CML_DTYPE_F16, 1, (int64_t[]){N}), (int64_t[]){0}, 1);
  ASSERT_STATUS_OK(tnode_run(&t, x, &y, NULL));
  ASSERT_EQ_DBL(cml_f16_to_f32(y), 4096);
  // Same along a kept inner axis (the column path): [N, 2] over axis 0.
  static uint16_t x2[2 * N];
  for (int i = 0; i < 2 * N; ++i) x2[i] = cml_f32_to_bf16(1.0f);
  uint16_t y2[2];
  tnode_init(&t, CML_OP_REDUCE_SUM, shp(CML_DTYPE_BF16, 2, (int64_t[]){N, 2}), (int64_t[]){0}, 1);
  ASSERT_STATUS_OK(tnode_run(&t, x2, y2, NULL));
  ASSERT_EQ_DBL(cml_bf16_to_f32(y2[0]), 4096);
  ASSERT_EQ_DBL(cml_bf16_to_f32(y2[1]), 4096);
}

// Reference: sum of a [5,7,11,3] i64 tensor over a set of axes, with a plain loop.
TEST(odd_shapes_all_axis_sets_threads) {
  enum { A = 5, B = 7, C = 11, D = 3, N = A * B * C * D };
  static int64_t x[N], want[N], got1[N], got4[N];
  for (int i = 0; i < N; ++i) x[i] = (int64_t)((i * 7919) % 1000) - 500;
  const int64_t dims[4] = {A, B, C, D};
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(4, cml_allocator_system(), &pool));
  for (int mask = 1; mask < 16; ++mask) {
    int64_t axes[4];
    int count = 0;
    for (int d = 0; d < 4; ++d) {
      if (mask & (1 << d)) axes[count++] = d;
    }
    // Reference loop: output index from the kept coordinates, row-major.
    int64_t out_n = 1;
    for (int d = 0; d < 4; ++d) {
      if (!(mask & (1 << d))) out_n *= dims[d];
    }
    for (int64_t o = 0; o < out_n; ++o) want[o] = 0;
    for (int64_t i = 0; i < N; ++i) {
      int64_t c[4] = {i / (B * C * D), (i / (C * D)) % B, (i / D) % C, i % D};
      int64_t o = 0;
      for (int d = 0; d < 4; ++d) {
        if (!(mask & (1 << d))) o = o * dims[d] + c[d];
      }
      want[o] += x[i];
    }
    tnode_t t;
    tnode_init(&t, CML_OP_REDUCE_SUM, shp(CML_DTYPE_I64, 4, dims), axes, count);
    cml_status_t st1 = tnode_run(&t, x, got1, NULL);
    cml_status_t st4 = tnode_run(&t, x, got4, pool);
    if (st1 != CML_OK || st4 != CML_OK) cmlc_pool_destroy(pool);
    ASSERT_STATUS_OK(st1);
    ASSERT_STATUS_OK(st4);
    for (int64_t o = 0; o < out_n; ++o) {
      if (got1[o] != want[o] || got4[o] != want[o]) cmlc_pool_destroy(pool);
      ASSERT_EQ_INT(got1[o], want[o]);
      ASSERT_EQ_INT(got4[o], want[o]);
    }
  }
  cmlc_pool_destroy(pool);
}

TEST(float_sum_thread_count_independent) {
  enum { R = 3, N = 200003 };
  static float x[R * N];
  for (int i = 0; i < R * N; ++i) x[i] = (float)((i * 2654435761u) % 10007) * 1e-3f - 5.0f;
  float y1[R], y3[R], col1[N], col3[N];
  double ref[R];
  for (int r = 0; r < R; ++r) {
    ref[r] = 0;
    for (int i = 0; i < N; ++i) ref[r] += x[r * N + i];
  }
  tnode_t t;
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  tnode_init(&t, CML_OP_REDUCE_SUM, shp(CML_DTYPE_F32, 2, (int64_t[]){R, N}), (int64_t[]){1}, 1);
  cml_status_t a = tnode_run(&t, x, y1, NULL), b = tnode_run(&t, x, y3, pool);
  tnode_init(&t, CML_OP_REDUCE_SUM, shp(CML_DTYPE_F32, 2, (int64_t[]){R, N}), (int64_t[]){0}, 1);
  cml_status_t c = tnode_run(&t, x, col1, NULL), d = tnode_run(&t, x, col3, pool);
  cmlc_pool_destroy(pool);
  ASSERT_STATUS_OK(a);
  ASSERT_STATUS_OK(b);
  ASSERT_STATUS_OK(c);
  ASSERT_STATUS_OK(d);
  for (int r = 0; r < R; ++r) {
    ASSERT_TRUE(memcmp(&y1[r], &y3[r], sizeof(float)) == 0);
    ASSERT_NEAR(y1[r], ref[r], 1e-6 * N);  // pairwise: error far below N * eps * max|x|
  }
  for (int i = 0; i < N; ++i) {
    ASSERT_TRUE(memcmp(&col1[i], &col3[i], sizeof(float)) == 0);
    ASSERT_NEAR(col1[i], (double)x[i] + x[N + i] + x[2 * N + i], 1e-5);
  }
}

//===--- reductions over leading / middle axes (the column path) ---===//

// The ISAs this CPU can run: always the scalar reference, plus AVX2 / AVX-512 when present.
static int col_isas(cmlc_isa_t* out) {
  int n = 0;
  out[n++] = CMLC_ISA_SCALAR;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) out[n++] = CMLC_ISA_AVX2;
  if (__builtin_cpu_supports("avx512f")) out[n++] = CMLC_ISA_AVX512;
#endif
  return n;
}

// IEEE maximum / minimum with NaN propagation and -0 < +0, written independently.
static float col_ref_max(float a, float b) {
  if (isnan(a) || isnan(b)) return NAN;
  if (a == b) return signbit(a) ? b : a;
  return a > b ? a : b;
}
static float col_ref_min(float a, float b) {
  if (isnan(a) || isnan(b)) return NAN;
  if (a == b) return signbit(a) ? a : b;
  return a < b ? a : b;
}

static bool col_same(float a, float b) {
  return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0;
}

// f32 Sum/Max/Min over axis sets that keep the innermost axis, shapes [A, R, W] reducing R
// (and A too when |both|), for widths around the SIMD widths and tile size: every ISA gives
// the reference kernel's bits, max/min equal an independent loop exactly, and sums stay
// within the documented three-level bound of an f64 loop: (256 + R/16384 + 2) * eps * sum|x|.
TEST(f32_columns_every_isa) {
  // Widths up to 16 take an inline loop over the rows (their own case in every split).
  static const int64_t shapes[][3] = {
      {1, 5, 1},     {2, 3, 7},      {3, 130, 17},   {1, 257, 64}, {2, 129, 100}, {1, 40, 1030},
      {4, 33, 2051}, {1, 16500, 19}, {2, 130, 4100}, {5, 33, 16},  {3, 4100, 16}, {2, 9000, 8},
      {2, 300, 2},   {3, 4100, 3},   {2, 129, 4},    {1, 700, 5},  {4, 33, 7},    {2, 260, 9},
      {3, 1000, 15}, {2, 17000, 3},  {3, 1, 3},      {2, 128, 13}};
  static const cml_op_t ops[3] = {CML_OP_REDUCE_SUM, CML_OP_REDUCE_MAX, CML_OP_REDUCE_MIN};
  cmlc_isa_t isas[3];
  const int isa_count = col_isas(isas);
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  int failures = 0;
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; ++si) {
    const int64_t A = shapes[si][0], R = shapes[si][1], W = shapes[si][2], N = A * R * W;
    float* x = malloc((size_t)N * sizeof(float));
    float* want = malloc((size_t)(A * W) * sizeof(float));
    double* exact = malloc((size_t)(A * W) * sizeof(double));
    double* mag = malloc((size_t)(A * W) * sizeof(double));
    float* ref = malloc((size_t)(A * W) * sizeof(float));
    float* got = malloc((size_t)(A * W) * sizeof(float));
    for (int64_t i = 0; i < N; ++i) {
      x[i] = (float)((uint32_t)(i * 2654435761u) % 20011u) * 1e-3f - 10.0f;
    }
    if (N > 7) x[N / 2] = -0.0f;
    for (int both = 0; both < (A > 1 ? 2 : 1); ++both) {
      const int64_t outs = both ? W : A * W;
      for (int oi = 0; oi < 3; ++oi) {
        const cml_op_t op = ops[oi];
        for (int64_t o = 0; o < outs; ++o) {
          exact[o] = 0;
          mag[o] = 0;
          want[o] = op == CML_OP_REDUCE_MAX ? -INFINITY : op == CML_OP_REDUCE_MIN ? INFINITY : 0;
        }
        for (int64_t a = 0; a < A; ++a) {
          for (int64_t r = 0; r < R; ++r) {
            for (int64_t w = 0; w < W; ++w) {
              const float v = x[(a * R + r) * W + w];
              const int64_t o = both ? w : a * W + w;
              exact[o] += v;
              mag[o] += fabs(v);
              want[o] = op == CML_OP_REDUCE_MAX   ? col_ref_max(want[o], v)
                        : op == CML_OP_REDUCE_MIN ? col_ref_min(want[o], v)
                                                  : want[o];
            }
          }
        }
        tnode_t t;
        const int64_t axes[2] = {0, 1};
        tnode_init(&t, op, shp(CML_DTYPE_F32, 3, shapes[si]), both ? axes : axes + 1, both ? 2 : 1);
        for (int ii = 0; ii < isa_count; ++ii) {
          for (int threaded = 0; threaded < 2; ++threaded) {
            float* y = ii == 0 && !threaded ? ref : got;
            cml_status_t st = tnode_run_isa(&t, x, y, threaded ? pool : NULL, isas[ii]);
            if (st != CML_OK) {
              cml_status_free(st);
              ++failures;
              continue;
            }
            const double rows = (double)(both ? A * R : R);
            const double bound = (256.0 + rows / 16384.0 + 2.0) * 0x1p-24;
            for (int64_t o = 0; o < outs; ++o) {
              bool ok = col_same(y[o], ref[o]);
              if (op == CML_OP_REDUCE_SUM) {
                ok = ok && fabs((double)y[o] - exact[o]) <= bound * mag[o];
              } else {
                ok = ok && col_same(y[o], want[o]);
              }
              if (!ok && failures++ < 5) {
                fprintf(stderr,
                        "shape %lld,%lld,%lld both %d op %s isa %d threads %d: [%lld] "
                        "got %.9g ref %.9g want %.9g exact %.9g\n",
                        (long long)A, (long long)R, (long long)W, both, cml_op_name(op),
                        (int)isas[ii], threaded, (long long)o, y[o], ref[o], want[o], exact[o]);
              }
            }
          }
        }
      }
    }
    free(x);
    free(want);
    free(exact);
    free(mag);
    free(ref);
    free(got);
  }
  cmlc_pool_destroy(pool);
  ASSERT_EQ_INT(failures, 0);
}

// Sums over two reduced axes that are not neighbours ([3, 5, 300, W] over axes 0 and 2) with
// narrow kept columns: the inline narrow loop walks the reduced rows with the odometer. Every
// ISA and thread count gives the reference kernel's bits, within the three-level bound.
TEST(f32_narrow_columns_two_reduced_axes) {
  cmlc_isa_t isas[3];
  const int isa_count = col_isas(isas);
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  int failures = 0;
  static const int64_t widths[] = {2, 3, 5, 8, 11, 16};
  for (size_t wi = 0; wi < sizeof widths / sizeof *widths; ++wi) {
    const int64_t W = widths[wi], dims[4] = {3, 5, 300, W}, N = 3 * 5 * 300 * W;
    float* x = malloc((size_t)N * sizeof(float));
    float ref[5 * 16], got[5 * 16];
    double exact[5 * 16] = {0}, mag[5 * 16] = {0};
    ASSERT_TRUE(x);
    for (int64_t i = 0; i < N; ++i)
      x[i] = (float)((uint32_t)(i * 2246822519u) % 10007u) * 1e-2f - 50.0f;
    for (int64_t a = 0; a < 3; ++a) {
      for (int64_t b = 0; b < 5; ++b) {
        for (int64_t r = 0; r < 300; ++r) {
          for (int64_t w = 0; w < W; ++w) {
            const float v = x[((a * 5 + b) * 300 + r) * W + w];
            exact[b * W + w] += v;
            mag[b * W + w] += fabs(v);
          }
        }
      }
    }
    tnode_t t;
    const int64_t axes[2] = {0, 2};
    tnode_init(&t, CML_OP_REDUCE_SUM, shp(CML_DTYPE_F32, 4, dims), axes, 2);
    for (int ii = 0; ii < isa_count; ++ii) {
      for (int threaded = 0; threaded < 2; ++threaded) {
        float* y = ii == 0 && !threaded ? ref : got;
        ASSERT_STATUS_OK(tnode_run_isa(&t, x, y, threaded ? pool : NULL, isas[ii]));
        const double bound = (256.0 + 900.0 / 16384.0 + 2.0) * 0x1p-24;
        for (int64_t o = 0; o < 5 * W; ++o) {
          const bool ok = col_same(y[o], ref[o]) && fabs((double)y[o] - exact[o]) <= bound * mag[o];
          if (!ok && failures++ < 5) {
            fprintf(stderr, "W %lld isa %d threads %d: [%lld] got %.9g ref %.9g exact %.9g\n",
                    (long long)W, (int)isas[ii], threaded, (long long)o, y[o], ref[o], exact[o]);
          }
        }
      }
    }
    free(x);
  }
  cmlc_pool_destroy(pool);
  ASSERT_EQ_INT(failures, 0);
}

// NaN, infinities and signed zeros down columns, on every ISA (x is [4, 21]: 21 columns cover
// a full AVX2 vector, a masked AVX-512 tail and the scalar tail).
TEST(f32_columns_special_values) {
  enum { R = 4, W = 21 };
  float x[R * W];
  for (int i = 0; i < R * W; ++i) x[i] = (float)(i % 7) - 3.0f;
  for (int r = 0; r < R; ++r) {
    x[r * W + 0] = r == 2 ? NAN : 1.0f;   // NaN in the middle
    x[r * W + 1] = r == 0 ? NAN : 1.0f;   // NaN first
    x[r * W + 2] = r % 2 ? -0.0f : 0.0f;  // mixed zeros
    x[r * W + 3] = -0.0f;                 // only -0
    x[r * W + 4] = r == 1 ? INFINITY : -INFINITY;
    x[r * W + 19] = r == 3 ? NAN : -2.0f;  // NaN last, in the scalar/masked tail
    x[r * W + 20] = r % 2 ? 0.0f : -0.0f;
  }
  cmlc_isa_t isas[3];
  const int isa_count = col_isas(isas);
  for (int ii = 0; ii < isa_count; ++ii) {
    float mx[W], mn[W], sm[W];
    tnode_t t;
    cml_shape_t s = shp(CML_DTYPE_F32, 2, (int64_t[]){R, W});
    tnode_init(&t, CML_OP_REDUCE_MAX, s, (int64_t[]){0}, 1);
    ASSERT_STATUS_OK(tnode_run_isa(&t, x, mx, NULL, isas[ii]));
    tnode_init(&t, CML_OP_REDUCE_MIN, s, (int64_t[]){0}, 1);
    ASSERT_STATUS_OK(tnode_run_isa(&t, x, mn, NULL, isas[ii]));
    tnode_init(&t, CML_OP_REDUCE_SUM, s, (int64_t[]){0}, 1);
    ASSERT_STATUS_OK(tnode_run_isa(&t, x, sm, NULL, isas[ii]));
    ASSERT_TRUE(isnan(mx[0]) && isnan(mn[0]) && isnan(sm[0]));
    ASSERT_TRUE(isnan(mx[1]) && isnan(mn[1]) && isnan(sm[1]));
    ASSERT_TRUE(isnan(mx[19]) && isnan(mn[19]) && isnan(sm[19]));
    ASSERT_TRUE(mx[2] == 0 && !signbit(mx[2]));
    ASSERT_TRUE(mn[2] == 0 && signbit(mn[2]));
    ASSERT_TRUE(mx[3] == 0 && signbit(mx[3]));
    ASSERT_TRUE(mn[3] == 0 && signbit(mn[3]));
    ASSERT_TRUE(sm[3] == 0 && !signbit(sm[3]));  // 0 (the identity) + -0 + ... = +0
    ASSERT_TRUE(mx[20] == 0 && !signbit(mx[20]));
    ASSERT_TRUE(mn[20] == 0 && signbit(mn[20]));
    ASSERT_EQ_DBL(mx[4], INFINITY);
    ASSERT_EQ_DBL(mn[4], -INFINITY);
    ASSERT_TRUE(isnan(sm[4]));  // +Inf + -Inf
    // An empty leading axis: the identities.
    tnode_init(&t, CML_OP_REDUCE_MAX, shp(CML_DTYPE_F32, 2, (int64_t[]){0, 5}), (int64_t[]){0}, 1);
    ASSERT_STATUS_OK(tnode_run_isa(&t, x, mx, NULL, isas[ii]));
    tnode_init(&t, CML_OP_REDUCE_SUM, shp(CML_DTYPE_F32, 2, (int64_t[]){0, 5}), (int64_t[]){0}, 1);
    ASSERT_STATUS_OK(tnode_run_isa(&t, x, sm, NULL, isas[ii]));
    ASSERT_EQ_DBL(mx[4], -INFINITY);
    ASSERT_TRUE(sm[4] == 0 && !signbit(sm[4]));
    for (int j = 5; j < 19; ++j) {
      float a = -INFINITY, b = INFINITY, c = 0;
      for (int r = 0; r < R; ++r) {
        a = x[r * W + j] > a ? x[r * W + j] : a;
        b = x[r * W + j] < b ? x[r * W + j] : b;
        c += x[r * W + j];
      }
      ASSERT_EQ_DBL(mx[j], a);
      ASSERT_EQ_DBL(mn[j], b);
      ASSERT_EQ_DBL(sm[j], c);  // small integers: exact in any order
    }
  }
}

// Short innermost runs (GroupNorm's statistics: [n, m, g, L] over m and L, L small): the SIMD
// ISAs reduce each run, then the runs with the column path (two passes, scratch); the scalar
// reference reduces the runs one after another. Small-integer inputs make every sum exact in
// any order, so each ISA and thread count must give the double loop's values; inexact inputs
// must give the same bits on 1 and 3 threads. Run lengths 2, 3, 16 take the two passes (with
// at least 2 runs per output), 17 does not.
TEST(f32_short_inner_runs_every_isa) {
  static const int64_t shapes[][4] = {
      {2, 64, 5, 2}, {3, 500, 7, 3}, {1, 100, 32, 16}, {2, 70, 3, 17}, {4, 40, 4, 2}};
  static const cml_op_t ops[3] = {CML_OP_REDUCE_SUM, CML_OP_REDUCE_MAX, CML_OP_REDUCE_MIN};
  cmlc_isa_t isas[3];
  const int isa_count = col_isas(isas);
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  int failures = 0, two_pass = 0;
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; ++si) {
    const int64_t n = shapes[si][0], m = shapes[si][1], g = shapes[si][2], l = shapes[si][3];
    const int64_t count = n * m * g * l, outs = n * g;
    float* x = malloc((size_t)count * sizeof(float));
    float* got = malloc((size_t)outs * sizeof(float));
    float* got3 = malloc((size_t)outs * sizeof(float));
    double* want = malloc((size_t)outs * sizeof(double));
    for (int pass = 0; pass < 2; ++pass) {
      const bool exact = pass == 0;
      for (int64_t i = 0; i < count; ++i) {
        const uint32_t h = (uint32_t)(i * 2654435761u);
        x[i] = exact ? (float)(h % 201u) - 100.0f : (float)(h % 20011u) * 1e-3f - 10.0f;
      }
      for (int oi = 0; oi < 3; ++oi) {
        const cml_op_t op = ops[oi];
        for (int64_t o = 0; o < outs; ++o) {
          want[o] = op == CML_OP_REDUCE_SUM ? 0 : op == CML_OP_REDUCE_MAX ? -INFINITY : INFINITY;
        }
        for (int64_t i = 0; i < count; ++i) {
          const int64_t o = (i / (m * g * l)) * g + (i / l) % g;
          if (op == CML_OP_REDUCE_SUM) want[o] += x[i];
          if (op == CML_OP_REDUCE_MAX && x[i] > want[o]) want[o] = x[i];
          if (op == CML_OP_REDUCE_MIN && x[i] < want[o]) want[o] = x[i];
        }
        for (int ii = 0; ii < isa_count; ++ii) {
          tnode_t t;
          tnode_init(&t, op, shp(CML_DTYPE_F32, 4, (int64_t[]){n, m, g, l}), (int64_t[]){1, 3}, 2);
          if (tnode_run_isa(&t, x, got, NULL, isas[ii]) != CML_OK ||
              tnode_run_isa(&t, x, got3, pool, isas[ii]) != CML_OK) {
            ++failures;
            continue;
          }
          // The two-pass path asks for scratch (T); the one-run-at-a-time path needs none.
          if (isas[ii] != CMLC_ISA_SCALAR && exact && oi == 0) {
            cmlc_options_t o;
            memset(&o, 0, sizeof o);
            o.isa = isas[ii];
            o.threads = 1;
            o.devices = 1;
            cmlc_kernel_entry_t e;
            ASSERT_TRUE(cmlc_kernels_reduce_lookup(&t.module, &t.node, &o, &e));
            const bool expected = l <= 16 && m >= 2;
            const size_t scratch = e.scratch(&t.module, &t.node, &o);
            if ((scratch > 0) != expected) {
              fprintf(stderr, "shape %zu isa %d: scratch %zu\n", si, (int)isas[ii], scratch);
              ++failures;
            }
            two_pass += scratch > 0;
          }
          for (int64_t o = 0; o < outs; ++o) {
            const bool ok = exact ? got[o] == (float)want[o] && got3[o] == (float)want[o]
                                  : memcmp(&got[o], &got3[o], sizeof(float)) == 0 &&
                                        fabs(got[o] - want[o]) <= 1e-3 * (1 + fabs(want[o]));
            if (!ok) {
              fprintf(stderr, "shape %zu %s isa %d out %lld: %.9g / %.9g, want %.9g\n", si,
                      cml_op_name(op), (int)isas[ii], (long long)o, (double)got[o], (double)got3[o],
                      want[o]);
              ++failures;
              break;
            }
          }
        }
      }
    }
    free(x), free(got), free(got3), free(want);
  }
  cmlc_pool_destroy(pool);
  ASSERT_EQ_INT(failures, 0);
  if (isa_count > 1) ASSERT_TRUE(two_pass >= 3);
}

// bf16 / f16 short innermost runs (an average pool written as a reshape and a sum over axes 1
// and 3 of [n, 2, w, 2]; GroupNorm's statistics in bf16): the two passes widen the runs to f32,
// combine in f32 and round once into the output. Small integers make every f32 sum exact, so
// each ISA and thread count must give the exact sum rounded once.
TEST(half_short_inner_runs_every_isa) {
  static const int64_t shapes[][4] = {{64, 2, 8, 2}, {2, 3, 5, 4}, {3, 70, 4, 3}, {5, 2, 3, 16}};
  static const cml_dtype_t dts[2] = {CML_DTYPE_BF16, CML_DTYPE_F16};
  static const cml_op_t ops[3] = {CML_OP_REDUCE_SUM, CML_OP_REDUCE_MAX, CML_OP_REDUCE_MIN};
  cmlc_isa_t isas[3];
  const int isa_count = col_isas(isas);
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  int failures = 0, two_pass = 0;
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; ++si) {
    const int64_t n = shapes[si][0], m = shapes[si][1], g = shapes[si][2], l = shapes[si][3];
    const int64_t count = n * m * g * l, outs = n * g;
    uint16_t* x = malloc((size_t)count * sizeof(uint16_t));
    uint16_t* got = malloc((size_t)outs * sizeof(uint16_t));
    uint16_t* got3 = malloc((size_t)outs * sizeof(uint16_t));
    double* want = malloc((size_t)outs * sizeof(double));
    for (int di = 0; di < 2; ++di) {
      const cml_dtype_t dt = dts[di];
      for (int64_t i = 0; i < count; ++i) {
        const float v = (float)((uint32_t)(i * 2654435761u) % 201u) - 100.0f;  // exact in both
        x[i] = dt == CML_DTYPE_BF16 ? cml_f32_to_bf16(v) : cml_f32_to_f16(v);
      }
      for (int oi = 0; oi < 3; ++oi) {
        const cml_op_t op = ops[oi];
        for (int64_t o = 0; o < outs; ++o) {
          want[o] = op == CML_OP_REDUCE_SUM ? 0 : op == CML_OP_REDUCE_MAX ? -INFINITY : INFINITY;
        }
        for (int64_t i = 0; i < count; ++i) {
          const double v = dt == CML_DTYPE_BF16 ? cml_bf16_to_f32(x[i]) : cml_f16_to_f32(x[i]);
          const int64_t o = (i / (m * g * l)) * g + (i / l) % g;
          if (op == CML_OP_REDUCE_SUM) want[o] += v;
          if (op == CML_OP_REDUCE_MAX && v > want[o]) want[o] = v;
          if (op == CML_OP_REDUCE_MIN && v < want[o]) want[o] = v;
        }
        for (int ii = 0; ii < isa_count; ++ii) {
          tnode_t t;
          tnode_init(&t, op, shp(dt, 4, (int64_t[]){n, m, g, l}), (int64_t[]){1, 3}, 2);
          if (tnode_run_isa(&t, x, got, NULL, isas[ii]) != CML_OK ||
              tnode_run_isa(&t, x, got3, pool, isas[ii]) != CML_OK) {
            ++failures;
            continue;
          }
          if (isas[ii] != CMLC_ISA_SCALAR && oi == 0) {
            cmlc_options_t o;
            memset(&o, 0, sizeof o);
            o.isa = isas[ii];
            o.threads = 1;
            o.devices = 1;
            cmlc_kernel_entry_t e;
            ASSERT_TRUE(cmlc_kernels_reduce_lookup(&t.module, &t.node, &o, &e));
            const size_t scratch = e.scratch ? e.scratch(&t.module, &t.node, &o) : 0;
            if (scratch == 0) {
              fprintf(stderr, "half shape %zu isa %d: no two-pass scratch\n", si, (int)isas[ii]);
              ++failures;
            }
            two_pass += scratch > 0;
          }
          for (int64_t o = 0; o < outs; ++o) {
            // (The sums are exact in f32: below 2^24. Rounded once to the dtype.)
            const uint16_t w = dt == CML_DTYPE_BF16 ? cml_f32_to_bf16((float)want[o])
                                                    : cml_f32_to_f16((float)want[o]);
            if (got[o] != w || got3[o] != w) {
              fprintf(stderr, "half shape %zu %s %s isa %d out %lld: %04x / %04x, want %04x\n", si,
                      cml_dtype_name(dt), cml_op_name(op), (int)isas[ii], (long long)o, got[o],
                      got3[o], w);
              ++failures;
              break;
            }
          }
        }
      }
    }
    free(x), free(got), free(got3), free(want);
  }
  cmlc_pool_destroy(pool);
  ASSERT_EQ_INT(failures, 0);
  if (isa_count > 1) ASSERT_TRUE(two_pass >= 4);
}

// |acc| combined with |e| as the reductions define it: rounded sums; Max / Min with NaN
// propagating (the first NaN kept) and -0 < +0.
static float seq_comb(cml_op_t op, float acc, float e) {
  if (op == CML_OP_REDUCE_SUM) return acc + e;
  if (isnan(acc) || isnan(e)) return isnan(acc) ? acc : e;
  if (op == CML_OP_REDUCE_MAX) return e > acc || (e == acc && !signbit(e)) ? e : acc;
  return e < acc || (e == acc && signbit(e)) ? e : acc;
}

// Runs of at most 16 f32 values are combined in index order from the identity (sums rounded
// at each step; Max/Min with NaN propagating, the first NaN kept, -0 < +0), as a hand loop
// here does: one row per output (rows of consecutive outputs, 16 at a time, the last group
// partial), and several runs per output (axes 0 and 2 of [3, r, len]); runs of 17 keep the SIMD
// reducer, and the scalar ISA its generic loops (both checked within rounding). Every ISA, 1
// and 3 threads, bit for bit.
TEST(f32_short_rows_in_order_every_isa) {
  static const int64_t shapes[][3] = {{1, 37, 8}, {1, 2048, 8}, {1, 15, 1}, {1, 16, 16},
                                      {1, 5, 13}, {3, 7, 2},    {3, 9, 5},  {1, 40, 17}};
  static const cml_op_t ops[3] = {CML_OP_REDUCE_SUM, CML_OP_REDUCE_MAX, CML_OP_REDUCE_MIN};
  cmlc_isa_t isas[3];
  const int isa_count = col_isas(isas);
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  int failures = 0;
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; ++si) {
    const int64_t a = shapes[si][0], r = shapes[si][1], len = shapes[si][2];
    const bool many = a > 1;  // axes 0 and 2 of [a, r, len]: a runs per output
    const int64_t count = a * r * len, outs = r;
    float* x = malloc((size_t)count * sizeof(float));
    float *got = malloc((size_t)outs * sizeof(float)), *got3 = malloc((size_t)outs * sizeof(float));
    float* want = malloc((size_t)outs * sizeof(float));
    for (int64_t i = 0; i < count; ++i) {
      const uint32_t h = (uint32_t)(i * 2654435761u) ^ (uint32_t)si;
      x[i] = (float)(h % 20011u) * 1.37e-3f - 13.0f;
      if (h % 53u == 0) x[i] = -0.0f;
      if (h % 59u == 0) x[i] = 0.0f;
      if (h % 97u == 1) x[i] = (h & 1) ? NAN : -NAN;
    }
    for (int oi = 0; oi < 3; ++oi) {
      const cml_op_t op = ops[oi];
      const float ident = op == CML_OP_REDUCE_SUM   ? 0.0f
                          : op == CML_OP_REDUCE_MAX ? -INFINITY
                                                    : INFINITY;
      for (int64_t o = 0; o < outs; ++o) {
        float acc = ident;
        for (int64_t q = 0; q < a; ++q) {
          float v = ident;
          for (int64_t j = 0; j < len; ++j) v = seq_comb(op, v, x[(q * r + o) * len + j]);
          acc = seq_comb(op, acc, v);
        }
        want[o] = acc;
      }
      for (int ii = 0; ii < isa_count; ++ii) {
        tnode_t t;
        if (many) {
          tnode_init(&t, op, shp(CML_DTYPE_F32, 3, (int64_t[]){a, r, len}), (int64_t[]){0, 2}, 2);
        } else {
          tnode_init(&t, op, shp(CML_DTYPE_F32, 2, (int64_t[]){r, len}), (int64_t[]){1}, 1);
        }
        if (tnode_run_isa(&t, x, got, NULL, isas[ii]) != CML_OK ||
            tnode_run_isa(&t, x, got3, pool, isas[ii]) != CML_OK) {
          ++failures;
          continue;
        }
        for (int64_t o = 0; o < outs; ++o) {
          const bool same = memcmp(&got[o], &got3[o], sizeof(float)) == 0;
          const bool ok = len <= 16 && isas[ii] != CMLC_ISA_SCALAR
                              ? same && memcmp(&got[o], &want[o], sizeof(float)) == 0
                              : same && (isnan(want[o]) ? isnan(got[o])
                                                        : fabsf(got[o] - want[o]) <=
                                                              1e-4f * (1.0f + fabsf(want[o])));
          if (!ok) {
            fprintf(stderr, "shape %zu %s isa %d out %lld: %.9g / %.9g, want %.9g\n", si,
                    cml_op_name(op), (int)isas[ii], (long long)o, (double)got[o], (double)got3[o],
                    (double)want[o]);
            ++failures;
            break;
          }
        }
      }
    }
    free(x), free(got), free(got3), free(want);
  }
  cmlc_pool_destroy(pool);
  ASSERT_EQ_INT(failures, 0);
}

TEST(arg_min_max) {
  float x[8] = {1, 5, 5, 2, NAN, 3, NAN, -1};  // [2, 4]
  cml_shape_t s = shp(CML_DTYPE_F32, 2, (int64_t[]){2, 4});
  int32_t i32[4];
  tnode_t t;
  tnode_init_arg(&t, s, 1, CML_DTYPE_I32, false);
  ASSERT_STATUS_OK(tnode_run(&t, x, i32, NULL));
  ASSERT_EQ_INT(i32[0], 1);  // tie 5, 5: first index
  ASSERT_EQ_INT(i32[1], 0);  // first NaN wins
  tnode_init_arg(&t, s, 1, CML_DTYPE_I32, true);
  ASSERT_STATUS_OK(tnode_run(&t, x, i32, NULL));
  ASSERT_EQ_INT(i32[0], 0);
  ASSERT_EQ_INT(i32[1], 0);
  uint8_t u8[4];
  tnode_init_arg(&t, s, 0, CML_DTYPE_U8, true);
  ASSERT_STATUS_OK(tnode_run(&t, x, u8, NULL));
  ASSERT_EQ_INT(u8[0], 1);  // NaN in row 1
  ASSERT_EQ_INT(u8[1], 1);  // 3 < 5
  ASSERT_EQ_INT(u8[2], 1);  // NaN
  ASSERT_EQ_INT(u8[3], 1);  // -1 < 2
  int64_t ix[6] = {-3, 7, 7, -3, INT64_MIN, 0}, i64[1];
  tnode_init_arg(&t, shp(CML_DTYPE_I64, 1, (int64_t[]){6}), 0, CML_DTYPE_I64, false);
  ASSERT_STATUS_OK(tnode_run(&t, ix, i64, NULL));
  ASSERT_EQ_INT(i64[0], 1);
  tnode_init_arg(&t, shp(CML_DTYPE_I64, 1, (int64_t[]){6}), 0, CML_DTYPE_I64, true);
  ASSERT_STATUS_OK(tnode_run(&t, ix, i64, NULL));
  ASSERT_EQ_INT(i64[0], 4);
  // Packed output dtypes have no kernel.
  tnode_init_arg(&t, s, 1, CML_DTYPE_I4, false);
  ASSERT_STATUS_CODE(tnode_run(&t, x, i32, NULL), CML_STATUS_UNIMPLEMENTED);
}

// A complex product that overflows gives Mul's infinities (-inf + inf i), not NaN + NaN i from
// the tree's identity lanes (inf * 0): [1e300+1e300i, 1e300+1e300i] in c128, the same in c64 at
// 1e30, over 2 and 11 elements (ones after the first two), and a product through an outer axis.
TEST(complex_product_keeps_infinities) {
  for (int n = 2; n <= 11; n += 9) {
    cml_c128_t x[11];
    cml_c64_t y[11];
    for (int i = 0; i < n; ++i) {
      x[i] = i < 2 ? (cml_c128_t){1e300, 1e300} : (cml_c128_t){1, 0};
      y[i] = i < 2 ? (cml_c64_t){1e30f, 1e30f} : (cml_c64_t){1, 0};
    }
    tnode_t t;
    cml_c128_t r;
    tnode_init(&t, CML_OP_REDUCE_PRODUCT, cml_shape_make(CML_DTYPE_C128, 1, (int64_t[]){n}),
               (int64_t[]){0}, 1);
    ASSERT_STATUS_OK(tnode_run(&t, x, &r, NULL));
    ASSERT_TRUE(isinf(r.re) && r.re < 0 && isinf(r.im) && r.im > 0);
    cml_c64_t r64;
    tnode_init(&t, CML_OP_REDUCE_PRODUCT, cml_shape_make(CML_DTYPE_C64, 1, (int64_t[]){n}),
               (int64_t[]){0}, 1);
    ASSERT_STATUS_OK(tnode_run(&t, y, &r64, NULL));
    ASSERT_TRUE(isinf(r64.re) && r64.re < 0 && isinf(r64.im) && r64.im > 0);
  }
  // [2, 1]: the product runs through the outer (non-innermost) axis.
  cml_c128_t x2[2] = {{1e300, 1e300}, {1e300, 1e300}}, r2;
  tnode_t t;
  tnode_init(&t, CML_OP_REDUCE_PRODUCT, cml_shape_make(CML_DTYPE_C128, 2, (int64_t[]){2, 1}),
             (int64_t[]){0, 1}, 2);
  ASSERT_STATUS_OK(tnode_run(&t, x2, &r2, NULL));
  ASSERT_TRUE(isinf(r2.re) && r2.re < 0 && isinf(r2.im) && r2.im > 0);
  // Finite products keep Mul's bits: (1 + 2i)(3 - i) = 5 + 5i.
  cml_c128_t x3[2] = {{1, 2}, {3, -1}}, r3;
  tnode_init(&t, CML_OP_REDUCE_PRODUCT, cml_shape_make(CML_DTYPE_C128, 1, (int64_t[]){2}),
             (int64_t[]){0}, 1);
  ASSERT_STATUS_OK(tnode_run(&t, x3, &r3, NULL));
  ASSERT_EQ_DBL(r3.re, 5);
  ASSERT_EQ_DBL(r3.im, 5);
}

TEST(capabilities) {
  cml_capabilities_t caps;
  memset(&caps, 0, sizeof caps);
  cmlc_kernels_reduce_capabilities(&caps);
  ASSERT_TRUE(cml_capabilities_has_op(&caps, CML_OP_REDUCE_SUM));
  ASSERT_TRUE(cml_capabilities_has_op(&caps, CML_OP_REDUCE_LOGICAL_XOR));
  ASSERT_TRUE(cml_capabilities_has_op(&caps, CML_OP_ARG_MIN_MAX));
  ASSERT_FALSE(cml_capabilities_has_op(&caps, CML_OP_ADD));
  // Max over complex is not defined.
  tnode_t t;
  tnode_init(&t, CML_OP_REDUCE_MAX, cml_shape_make(CML_DTYPE_C64, 1, (int64_t[]){2}),
             (int64_t[]){0}, 1);
  ASSERT_STATUS_CODE(tnode_run(&t, NULL, NULL, NULL), CML_STATUS_UNIMPLEMENTED);
}

// bf16 / f16 reductions of the innermost axis (the softmax and layer norm rows of half
// models): on each SIMD ISA, the half kernel's result is the f32 kernel's result over the
// widened values, rounded once (bit for bit; same lanes and order), for row lengths around the
// vector widths, the 32 lanes and the split above 8192, with and without an outer reduced axis,
// 1 and 3 threads; max/min also equal an independent loop (NaN, infinities, signed zeros), and
// sums the f64 sum within the f32 rounding of 32 lanes plus the final half rounding.
TEST(half_rows_every_isa) {
  static const int64_t shapes[][3] = {{3, 1, 1},    {2, 1, 5},    {2, 3, 31},
                                      {1, 2, 32},   {3, 1, 33},   {2, 2, 100},
                                      {1, 3, 1000}, {2, 1, 8193}, {1, 1, 20000}};
  static const cml_op_t ops[3] = {CML_OP_REDUCE_SUM, CML_OP_REDUCE_MAX, CML_OP_REDUCE_MIN};
  static const cml_dtype_t halves[2] = {CML_DTYPE_BF16, CML_DTYPE_F16};
  cmlc_isa_t isas[3];
  const int isa_count = col_isas(isas);
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  int failures = 0, checked = 0;
  for (int hi = 0; hi < 2; ++hi) {
    const cml_dtype_t dt = halves[hi];
    const bool bf = dt == CML_DTYPE_BF16;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; ++si) {
      const int64_t A = shapes[si][0], R = shapes[si][1], W = shapes[si][2], N = A * R * W;
      uint16_t* x = malloc((size_t)N * sizeof(uint16_t));
      float* wide = malloc((size_t)N * sizeof(float));
      float* f32_out = malloc((size_t)A * sizeof(float));
      uint16_t* got = malloc((size_t)A * sizeof(uint16_t));
      for (int64_t i = 0; i < N; ++i) {
        const float v = (float)((uint32_t)(i * 2654435761u) % 2003u) * 1e-2f - 10.0f;
        x[i] = bf ? cml_f32_to_bf16(v) : cml_f32_to_f16(v);
      }
      // Special values in the first row (kept out of the sums' bound check below).
      if (W >= 5) {
        x[1] = bf ? 0x8000u : 0x8000u;                   // -0
        x[2] = bf ? 0x7F80u : 0x7C00u;                   // +inf
        if (W >= 33) x[W - 1] = bf ? 0x7FC1u : 0x7E01u;  // NaN, past the first 32 lanes
      }
      for (int64_t i = 0; i < N; ++i) wide[i] = bf ? cml_bf16_to_f32(x[i]) : cml_f16_to_f32(x[i]);
      for (int oi = 0; oi < 3; ++oi) {
        const cml_op_t op = ops[oi];
        // Reduce the innermost axis and, when R > 1, the middle one too: [A, R, W] -> [A].
        const int64_t axes[2] = {1, 2};
        tnode_t th, tf;
        tnode_init(&th, op, shp(dt, 3, shapes[si]), axes, 2);
        tnode_init(&tf, op, shp(CML_DTYPE_F32, 3, shapes[si]), axes, 2);
        for (int ii = 1; ii < isa_count; ++ii) {
          for (int threaded = 0; threaded < 2; ++threaded) {
            cmlc_pool_t* pl = threaded ? pool : NULL;
            ASSERT_STATUS_OK(tnode_run_isa(&tf, wide, f32_out, pl, isas[ii]));
            ASSERT_STATUS_OK(tnode_run_isa(&th, x, got, pl, isas[ii]));
            for (int64_t a = 0; a < A; ++a) {
              const uint16_t want = bf ? cml_f32_to_bf16(f32_out[a]) : cml_f32_to_f16(f32_out[a]);
              bool ok = want == got[a];
              const float g = bf ? cml_bf16_to_f32(got[a]) : cml_f16_to_f32(got[a]);
              float ref = op == CML_OP_REDUCE_MAX   ? -INFINITY
                          : op == CML_OP_REDUCE_MIN ? INFINITY
                                                    : 0;
              double exact = 0, mag = 0;
              for (int64_t e = 0; e < R * W; ++e) {
                const float v = wide[a * R * W + e];
                exact += v;
                mag += fabs(v);
                ref = op == CML_OP_REDUCE_MAX   ? col_ref_max(ref, v)
                      : op == CML_OP_REDUCE_MIN ? col_ref_min(ref, v)
                                                : ref;
              }
              if (op != CML_OP_REDUCE_SUM) {
                ok = ok && col_same(g, ref);
              } else if (isfinite(exact)) {
                const double unit = bf ? 0x1p-8 : 0x1p-11;  // half rounding of the result
                ok = ok && fabs((double)g - exact) <= unit * fabs(exact) + 64.0 * 0x1p-24 * mag;
              } else {
                ok = ok && (isnan(g) || isinf(g));
              }
              ++checked;
              if (!ok && failures++ < 5) {
                fprintf(stderr,
                        "%s [%lld,%lld,%lld] %s isa %d threads %d: [%lld] got 0x%04x (%.9g) "
                        "f32 kernel %.9g loop %.9g exact %.9g\n",
                        cml_dtype_name(dt), (long long)A, (long long)R, (long long)W,
                        cml_op_name(op), (int)isas[ii], threaded, (long long)a, got[a], g,
                        f32_out[a], ref, exact);
              }
            }
          }
        }
      }
      free(x);
      free(wide);
      free(f32_out);
      free(got);
    }
  }
  cmlc_pool_destroy(pool);
  ASSERT_EQ_INT(failures, 0);
  ASSERT_TRUE(checked > 0 || isa_count == 1);
}

// bf16 / f16 reductions that keep the innermost axis (batch-norm statistics, means over the
// batch): each SIMD ISA's column path (f32 column steps on widened rows, the generic task's
// three-level order) gives the reference kernel's bits, for widths around the vector widths and
// the 4096-column tile, reduced extents across the row blocks, 1 and 3 threads. Full
// reductions large enough to be blocked give the f32 kernel's result over the widened values,
// rounded once.
TEST(half_columns_and_blocked_every_isa) {
  static const int64_t shapes[][3] = {{1, 5, 1},     {2, 3, 7},     {3, 130, 17}, {1, 257, 64},
                                      {2, 129, 100}, {1, 40, 4100}, {1, 1100, 33}};
  static const cml_op_t ops[3] = {CML_OP_REDUCE_SUM, CML_OP_REDUCE_MAX, CML_OP_REDUCE_MIN};
  static const cml_dtype_t halves[2] = {CML_DTYPE_BF16, CML_DTYPE_F16};
  cmlc_isa_t isas[3];
  const int isa_count = col_isas(isas);
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  int failures = 0;
  for (int hi = 0; hi < 2; ++hi) {
    const cml_dtype_t dt = halves[hi];
    const bool bf = dt == CML_DTYPE_BF16;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; ++si) {
      const int64_t A = shapes[si][0], R = shapes[si][1], W = shapes[si][2], N = A * R * W;
      uint16_t* x = malloc((size_t)N * sizeof(uint16_t));
      uint16_t* ref = malloc((size_t)(A * W) * sizeof(uint16_t));
      uint16_t* got = malloc((size_t)(A * W) * sizeof(uint16_t));
      for (int64_t i = 0; i < N; ++i) {
        const float v = (float)((uint32_t)(i * 2654435761u) % 20011u) * 1e-3f - 10.0f;
        x[i] = bf ? cml_f32_to_bf16(v) : cml_f32_to_f16(v);
      }
      if (N > 9) x[N / 2] = bf ? 0x7FC0u : 0x7E00u;  // NaN in one column
      if (N > 9) x[N / 3] = bf ? 0xFF80u : 0xFC00u;  // -inf in another
      for (int both = 0; both < (A > 1 ? 2 : 1); ++both) {
        const int64_t outs = both ? W : A * W;
        const int64_t axes[2] = {0, 1};
        for (int oi = 0; oi < 3; ++oi) {
          tnode_t t;
          tnode_init(&t, ops[oi], shp(dt, 3, shapes[si]), both ? axes : axes + 1, both ? 2 : 1);
          ASSERT_STATUS_OK(tnode_run_isa(&t, x, ref, NULL, CMLC_ISA_SCALAR));
          for (int ii = 1; ii < isa_count; ++ii) {
            for (int threaded = 0; threaded < 2; ++threaded) {
              ASSERT_STATUS_OK(tnode_run_isa(&t, x, got, threaded ? pool : NULL, isas[ii]));
              for (int64_t o = 0; o < outs; ++o) {
                const float g = bf ? cml_bf16_to_f32(got[o]) : cml_f16_to_f32(got[o]);
                const float r = bf ? cml_bf16_to_f32(ref[o]) : cml_f16_to_f32(ref[o]);
                if (!col_same(g, r) && failures++ < 5) {
                  fprintf(stderr,
                          "%s [%lld,%lld,%lld] both %d %s isa %d threads %d: [%lld] "
                          "got %.9g ref %.9g\n",
                          cml_dtype_name(dt), (long long)A, (long long)R, (long long)W, both,
                          cml_op_name(ops[oi]), (int)isas[ii], threaded, (long long)o, g, r);
                }
              }
            }
          }
        }
      }
      free(x);
      free(ref);
      free(got);
    }
    // A blocked full reduction (at least two 65536-element blocks).
    enum { NB = 3 * 65536 + 77 };
    uint16_t* xb = malloc(NB * sizeof(uint16_t));
    float* wide = malloc(NB * sizeof(float));
    for (int64_t i = 0; i < NB; ++i) {
      const float v = (float)((uint32_t)(i * 40503u) % 4001u) * 1e-3f - 2.0f;
      xb[i] = bf ? cml_f32_to_bf16(v) : cml_f32_to_f16(v);
      wide[i] = bf ? cml_bf16_to_f32(xb[i]) : cml_f16_to_f32(xb[i]);
    }
    for (int oi = 0; oi < 3; ++oi) {
      tnode_t th, tf;
      tnode_init(&th, ops[oi], shp(dt, 1, (int64_t[]){NB}), (int64_t[]){0}, 1);
      tnode_init(&tf, ops[oi], shp(CML_DTYPE_F32, 1, (int64_t[]){NB}), (int64_t[]){0}, 1);
      for (int ii = 1; ii < isa_count; ++ii) {
        for (int threaded = 0; threaded < 2; ++threaded) {
          float f32_out = 0;
          uint16_t h = 0;
          ASSERT_STATUS_OK(tnode_run_isa(&tf, wide, &f32_out, threaded ? pool : NULL, isas[ii]));
          ASSERT_STATUS_OK(tnode_run_isa(&th, xb, &h, threaded ? pool : NULL, isas[ii]));
          const uint16_t want = bf ? cml_f32_to_bf16(f32_out) : cml_f32_to_f16(f32_out);
          if (h != want && failures++ < 5) {
            fprintf(stderr, "%s blocked %s isa %d threads %d: got 0x%04x want 0x%04x\n",
                    cml_dtype_name(dt), cml_op_name(ops[oi]), (int)isas[ii], threaded, h, want);
          }
        }
      }
    }
    free(xb);
    free(wide);
  }
  cmlc_pool_destroy(pool);
  ASSERT_EQ_INT(failures, 0);
}

// ArgMin/ArgMax of f16 / bf16 along the contiguous last axis (the widened-row scan): the same
// indices as the reference kernel, for rows across the 1024-element widening blocks, with ties
// (the first wins), NaN (the first NaN wins) and infinities, every ISA, 1 and 3 threads.
TEST(half_argminmax_rows_every_isa) {
  static const int64_t lens[4] = {1, 37, 1024, 2500};
  static const cml_dtype_t halves[2] = {CML_DTYPE_BF16, CML_DTYPE_F16};
  cmlc_isa_t isas[3];
  const int isa_count = col_isas(isas);
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  int failures = 0;
  for (int hi = 0; hi < 2; ++hi) {
    const bool bf = halves[hi] == CML_DTYPE_BF16;
    for (int li = 0; li < 4; ++li) {
      const int64_t rows = 7, len = lens[li], n = rows * len;
      uint16_t* x = malloc((size_t)n * sizeof(uint16_t));
      for (int64_t i = 0; i < n; ++i) {
        const float v = (float)((i * 7919) % 97) / 8.0f - 6.0f;  // many ties
        x[i] = bf ? cml_f32_to_bf16(v) : cml_f32_to_f16(v);
      }
      // Row 1: a NaN late; row 2: two NaNs; row 3: +inf and -inf.
      if (len > 5) {
        x[1 * len + len - 2] = bf ? 0x7FC0u : 0x7E00u;
        x[2 * len + 3] = bf ? 0xFFC1u : 0xFE01u;
        x[2 * len + len - 1] = bf ? 0x7FC0u : 0x7E00u;
        x[3 * len + len / 2] = bf ? 0x7F80u : 0x7C00u;
        x[3 * len + len / 3] = bf ? 0xFF80u : 0xFC00u;
      }
      for (int is_min = 0; is_min < 2; ++is_min) {
        tnode_t t;
        tnode_init_arg(&t, shp(halves[hi], 2, (int64_t[]){rows, len}), 1, CML_DTYPE_I32,
                       is_min != 0);
        int32_t ref[7], got[7];
        ASSERT_STATUS_OK(tnode_run_isa(&t, x, ref, NULL, CMLC_ISA_SCALAR));
        for (int ii = 1; ii < isa_count; ++ii) {
          for (int threaded = 0; threaded < 2; ++threaded) {
            ASSERT_STATUS_OK(tnode_run_isa(&t, x, got, threaded ? pool : NULL, isas[ii]));
            for (int r = 0; r < rows; ++r) {
              if (got[r] != ref[r] && failures++ < 5) {
                fprintf(stderr, "%s len %lld min %d isa %d threads %d: row %d got %d want %d\n",
                        cml_dtype_name(halves[hi]), (long long)len, is_min, (int)isas[ii], threaded,
                        r, got[r], ref[r]);
              }
            }
          }
        }
      }
      free(x);
    }
  }
  cmlc_pool_destroy(pool);
  ASSERT_EQ_INT(failures, 0);
}

// Rows of 1..17 that follow each other ([37, len], the last group of 16 partial), for the
// integer kernels (combined in index order: every order gives the same wrapped bits) and for
// ArgMinMax along a contiguous axis (a block of rows per task, indices stored together): Int32
// Sum / Product / Max / Min, Int64 Sum, Uint8 Max / Min (identities 0 and 255), and ArgMax /
// ArgMin of Int32 values with many ties and of Float32 with NaNs, against plain loops here, on
// every ISA with 1 and 3 threads. (Rows of 4 went through the 8-lane tree and an index store
// per row: 8-39x xla:cpu's time.)
TEST(int_and_arg_short_rows_every_isa) {
  static const int64_t lens[] = {1, 2, 3, 4, 7, 16, 17};
  enum { R = 37 };
  cmlc_isa_t isas[3];
  const int isa_count = col_isas(isas);
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  int failures = 0;
  for (size_t li = 0; li < sizeof lens / sizeof lens[0]; ++li) {
    const int64_t len = lens[li], n = R * len;
    int32_t* xi = malloc((size_t)n * sizeof(int32_t));
    int64_t* xl = malloc((size_t)n * sizeof(int64_t));
    uint8_t* xb = malloc((size_t)n);
    float* xf = malloc((size_t)n * sizeof(float));
    ASSERT_TRUE(xi && xl && xb && xf);
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t h = (uint32_t)(i * 2654435761u) ^ (uint32_t)(li * 977u);
      xi[i] = (int32_t)(h % 7u + (h % 101u == 0 ? 0x7ffffff0u : 0u)) - 3;  // ties, and big values
      xl[i] = (int64_t)h * 4099 - ((int64_t)1 << 40);
      xb[i] = (uint8_t)(h >> 7);
      xf[i] = (float)(h % 5u) - 2.0f;
      if (h % 23u == 3) xf[i] = NAN;
    }
    for (int ii = 0; ii < isa_count; ++ii) {
      for (int threads = 0; threads < 2; ++threads) {
        cmlc_pool_t* use = threads ? pool : NULL;
        tnode_t t;
        const int64_t dims[2] = {R, len}, axis = 1;
        static const cml_op_t iops[4] = {CML_OP_REDUCE_SUM, CML_OP_REDUCE_PRODUCT,
                                         CML_OP_REDUCE_MAX, CML_OP_REDUCE_MIN};
        for (int oi = 0; oi < 4; ++oi) {
          int32_t got[R];
          tnode_init(&t, iops[oi], shp(CML_DTYPE_I32, 2, dims), &axis, 1);
          if (tnode_run_isa(&t, xi, got, use, isas[ii]) != CML_OK) {
            ++failures;
            continue;
          }
          for (int64_t o = 0; o < R; ++o) {
            uint32_t acc = oi == 0 ? 0u : oi == 1 ? 1u : oi == 2 ? 0x80000000u : 0x7fffffffu;
            for (int64_t j = 0; j < len; ++j) {
              const int32_t v = xi[o * len + j];
              if (oi == 0) acc += (uint32_t)v;
              if (oi == 1) acc *= (uint32_t)v;
              if (oi == 2 && v > (int32_t)acc) acc = (uint32_t)v;
              if (oi == 3 && v < (int32_t)acc) acc = (uint32_t)v;
            }
            if (got[o] != (int32_t)acc) {
              fprintf(stderr, "len %lld %s i32 row %lld: %d, want %d\n", (long long)len,
                      cml_op_name(iops[oi]), (long long)o, got[o], (int32_t)acc);
              ++failures;
              break;
            }
          }
        }
        int64_t gl[R];
        tnode_init(&t, CML_OP_REDUCE_SUM, shp(CML_DTYPE_I64, 2, dims), &axis, 1);
        if (tnode_run_isa(&t, xl, gl, use, isas[ii]) != CML_OK) ++failures;
        for (int64_t o = 0; o < R; ++o) {
          uint64_t acc = 0;
          for (int64_t j = 0; j < len; ++j) acc += (uint64_t)xl[o * len + j];
          if (gl[o] != (int64_t)acc) {
            ++failures;
            break;
          }
        }
        for (int mx = 0; mx < 2; ++mx) {
          uint8_t gb[R];
          tnode_init(&t, mx ? CML_OP_REDUCE_MAX : CML_OP_REDUCE_MIN, shp(CML_DTYPE_U8, 2, dims),
                     &axis, 1);
          if (tnode_run_isa(&t, xb, gb, use, isas[ii]) != CML_OK) ++failures;
          for (int64_t o = 0; o < R; ++o) {
            uint8_t acc = mx ? 0 : 255;
            for (int64_t j = 0; j < len; ++j) {
              const uint8_t v = xb[o * len + j];
              acc = mx ? (v > acc ? v : acc) : (v < acc ? v : acc);
            }
            if (gb[o] != acc) {
              ++failures;
              break;
            }
          }
        }
        for (int is_min = 0; is_min < 2; ++is_min) {
          for (int f = 0; f < 2; ++f) {
            int32_t gi[R];
            tnode_init_arg(&t, shp(f ? CML_DTYPE_F32 : CML_DTYPE_I32, 2, dims), 1, CML_DTYPE_I32,
                           is_min);
            if (tnode_run_isa(&t, f ? (const void*)xf : (const void*)xi, gi, use, isas[ii]) !=
                CML_OK) {
              ++failures;
              continue;
            }
            for (int64_t o = 0; o < R; ++o) {
              int32_t at = 0;
              for (int64_t j = 1; j < len; ++j) {
                const int64_t b = o * len + at, k = o * len + j;
                if (f && isnan(xf[b])) break;
                if (f && isnan(xf[k])) {
                  at = (int32_t)j;
                  break;
                }
                const bool better = f ? (is_min ? xf[k] < xf[b] : xf[k] > xf[b])
                                      : (is_min ? xi[k] < xi[b] : xi[k] > xi[b]);
                if (better) at = (int32_t)j;
              }
              if (gi[o] != at) {
                fprintf(stderr, "len %lld arg%s %s row %lld: %d, want %d\n", (long long)len,
                        is_min ? "min" : "max", f ? "f32" : "i32", (long long)o, gi[o], at);
                ++failures;
                break;
              }
            }
          }
        }
      }
    }
    free(xi), free(xl), free(xb), free(xf);
  }
  cmlc_pool_destroy(pool);
  ASSERT_EQ_INT(failures, 0);
}

TEST_MAIN(TEST_ENTRY(sum_f32_axes), TEST_ENTRY(f32_narrow_columns_two_reduced_axes),
          TEST_ENTRY(complex_product_keeps_infinities), TEST_ENTRY(empty_extent_identities_and_nan),
          TEST_ENTRY(ints_wrap_and_bitwise_logical), TEST_ENTRY(half_accumulates_in_f32),
          TEST_ENTRY(odd_shapes_all_axis_sets_threads),
          TEST_ENTRY(float_sum_thread_count_independent), TEST_ENTRY(f32_columns_every_isa),
          TEST_ENTRY(f32_columns_special_values), TEST_ENTRY(half_rows_every_isa),
          TEST_ENTRY(half_columns_and_blocked_every_isa), TEST_ENTRY(half_argminmax_rows_every_isa),
          TEST_ENTRY(arg_min_max), TEST_ENTRY(capabilities),
          TEST_ENTRY(f32_short_inner_runs_every_isa), TEST_ENTRY(half_short_inner_runs_every_isa),
          TEST_ENTRY(f32_short_rows_in_order_every_isa),
          TEST_ENTRY(int_and_arg_short_rows_every_isa))
