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

static cml_status_t tnode_run(tnode_t* t, const void* input, void* output, cmlc_pool_t* pool) {
  cmlc_options_t options;
  memset(&options, 0, sizeof options);
  options.reference = true;
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
  return entry.run(&args);
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
  tnode_init(&t, CML_OP_REDUCE_LOGICAL_AND, shp(CML_DTYPE_BOOL, 1, (int64_t[]){0}),
             (int64_t[]){0}, 1);
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

TEST_MAIN(TEST_ENTRY(sum_f32_axes), TEST_ENTRY(empty_extent_identities_and_nan),
          TEST_ENTRY(ints_wrap_and_bitwise_logical), TEST_ENTRY(half_accumulates_in_f32),
          TEST_ENTRY(odd_shapes_all_axis_sets_threads),
          TEST_ENTRY(float_sum_thread_count_independent), TEST_ENTRY(arg_min_max),
          TEST_ENTRY(capabilities))
