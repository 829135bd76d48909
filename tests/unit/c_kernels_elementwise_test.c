// SPDX-License-Identifier: Apache-2.0
// tests/unit/c_kernels_elementwise_test.c: the C backend's elementwise kernels, called directly
// through cmlc_kernels_elementwise_lookup on hand-made IR nodes, checked against hand-computed
// values and plain reference loops.
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "backends/c/cmlc.h"
#include "test.h"

//===--- a one-node module ---===//

typedef struct tnode_t {
  cml_module_t module;
  cml_ir_value_t values[6];
  cml_ir_node_t node;
  uint32_t inputs[4];
  cml_ir_attrs_t attrs;
} tnode_t;

static void tnode_init(tnode_t* t, cml_op_t op, int input_count, const cml_shape_t* in_shapes,
                       const cml_shape_t* out_shape) {
  memset(t, 0, sizeof *t);
  for (int i = 0; i < input_count; ++i) {
    t->values[1 + i].node = 0;
    t->values[1 + i].shape = in_shapes[i];
    t->inputs[i] = (uint32_t)(1 + i);
  }
  t->values[1 + input_count].shape = *out_shape;
  t->node.op = op;
  t->node.input_count = (uint32_t)input_count;
  t->node.inputs = t->inputs;
  t->node.output_count = 1;
  t->node.first_output = (uint32_t)(1 + input_count);
  t->node.attrs = &t->attrs;
  t->module.node_count = 1;
  t->module.nodes = &t->node;
  t->module.value_count = (uint32_t)(2 + input_count);
  t->module.values = t->values;
  t->module.num_devices = 1;
}

// Looks the node up and runs it on |pool| (may be NULL). UNIMPLEMENTED when no kernel.
static cml_status_t tnode_run(tnode_t* t, const void* const* inputs, void* output,
                              cmlc_pool_t* pool) {
  cmlc_options_t options;
  memset(&options, 0, sizeof options);
  options.isa = CMLC_ISA_SCALAR;
  options.reference = true;
  options.threads = cmlc_pool_thread_count(pool);
  options.devices = 1;
  cmlc_kernel_entry_t entry;
  if (!cmlc_kernels_elementwise_lookup(&t->module, &t->node, &options, &entry)) {
    return cml_status_make(CML_STATUS_UNIMPLEMENTED, "no kernel for %s", cml_op_name(t->node.op));
  }
  const cml_shape_t* in_shapes[4];
  for (uint32_t i = 0; i < t->node.input_count; ++i) in_shapes[i] = &t->values[1 + i].shape;
  const cml_shape_t* out_shapes[1] = {&t->values[t->node.first_output].shape};
  void* outputs[1] = {output};
  cmlc_kernel_args_t args;
  memset(&args, 0, sizeof args);
  args.module = &t->module;
  args.node = &t->node;
  args.options = &options;
  args.input_count = t->node.input_count;
  args.input_shapes = in_shapes;
  args.inputs = inputs;
  args.output_count = 1;
  args.output_shapes = out_shapes;
  args.outputs = outputs;
  args.pool = pool;
  memcpy(args.impl, entry.impl, sizeof args.impl);
  return entry.run(&args);
}

static cml_shape_t shp(cml_dtype_t dtype, int32_t rank, const int64_t* dims) {
  return cml_shape_make(dtype, rank, dims);
}

// Runs a binary op on two operands of |dtype| and shapes |sa|, |sb| into |out|.
static cml_status_t run_binary(cml_op_t op, cml_shape_t sa, cml_shape_t sb, cml_shape_t so,
                               const void* a, const void* b, void* out) {
  tnode_t t;
  cml_shape_t in[2] = {sa, sb};
  tnode_init(&t, op, 2, in, &so);
  const void* inputs[2] = {a, b};
  return tnode_run(&t, inputs, out, NULL);
}

static cml_status_t run_unary(cml_op_t op, cml_shape_t sa, cml_shape_t so, const void* a,
                              void* out) {
  tnode_t t;
  tnode_init(&t, op, 1, &sa, &so);
  const void* inputs[1] = {a};
  return tnode_run(&t, inputs, out, NULL);
}

static cml_status_t run_convert(cml_shape_t sa, cml_shape_t so, const void* a, void* out) {
  tnode_t t;
  tnode_init(&t, CML_OP_CONVERT_DTYPE, 1, &sa, &so);
  t.attrs.dtype = so.dtype;
  const void* inputs[1] = {a};
  return tnode_run(&t, inputs, out, NULL);
}

static bool same_bits_f32(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

//===--- binary ---===//

TEST(add_f32_shapes_and_broadcast) {
  int64_t d23[] = {2, 3}, d13[] = {1, 3}, d21[] = {2, 1};
  float a[6] = {1, 2, 3, 4, 5, 6}, row[3] = {10, 20, 30}, col[2] = {100, 200}, s = 0.5f;
  float out[6];
  cml_shape_t s23 = shp(CML_DTYPE_F32, 2, d23);
  ASSERT_STATUS_OK(run_binary(CML_OP_ADD, s23, s23, s23, a, a, out));
  for (int i = 0; i < 6; ++i) ASSERT_EQ_DBL(out[i], 2 * a[i]);
  ASSERT_STATUS_OK(run_binary(CML_OP_ADD, s23, shp(CML_DTYPE_F32, 2, d13), s23, a, row, out));
  const float want_row[6] = {11, 22, 33, 14, 25, 36};
  for (int i = 0; i < 6; ++i) ASSERT_EQ_DBL(out[i], want_row[i]);
  ASSERT_STATUS_OK(run_binary(CML_OP_SUB, shp(CML_DTYPE_F32, 2, d21), s23, s23, col, a, out));
  const float want_col[6] = {99, 98, 97, 196, 195, 194};
  for (int i = 0; i < 6; ++i) ASSERT_EQ_DBL(out[i], want_col[i]);
  ASSERT_STATUS_OK(run_binary(CML_OP_MUL, cml_shape_scalar(CML_DTYPE_F32), s23, s23, &s, a, out));
  for (int i = 0; i < 6; ++i) ASSERT_EQ_DBL(out[i], 0.5 * a[i]);
  // Both sides broadcast: [2,1] x [1,3].
  ASSERT_STATUS_OK(run_binary(CML_OP_ADD, shp(CML_DTYPE_F32, 2, d21), shp(CML_DTYPE_F32, 2, d13),
                              s23, col, row, out));
  const float want_outer[6] = {110, 120, 130, 210, 220, 230};
  for (int i = 0; i < 6; ++i) ASSERT_EQ_DBL(out[i], want_outer[i]);
}

TEST(int_division_edges) {
  int64_t d[] = {6};
  cml_shape_t s = shp(CML_DTYPE_I32, 1, d);
  int32_t a[6] = {INT32_MIN, INT32_MIN, 7, -7, 7, -7};
  int32_t b[6] = {-1, 0, 0, 2, -2, 0};
  int32_t q[6], r[6];
  ASSERT_STATUS_OK(run_binary(CML_OP_DIV, s, s, s, a, b, q));
  ASSERT_STATUS_OK(run_binary(CML_OP_REM, s, s, s, a, b, r));
  const int32_t want_q[6] = {INT32_MIN, -1, -1, -3, -3, -1};
  const int32_t want_r[6] = {0, INT32_MIN, 7, -1, 1, -7};
  for (int i = 0; i < 6; ++i) {
    ASSERT_EQ_INT(q[i], want_q[i]);
    ASSERT_EQ_INT(r[i], want_r[i]);
  }
  uint8_t ua[3] = {9, 200, 5}, ub[3] = {0, 7, 0}, uq[3], ur[3];
  cml_shape_t us = shp(CML_DTYPE_U8, 1, (int64_t[]){3});
  ASSERT_STATUS_OK(run_binary(CML_OP_DIV, us, us, us, ua, ub, uq));
  ASSERT_STATUS_OK(run_binary(CML_OP_REM, us, us, us, ua, ub, ur));
  ASSERT_EQ_INT(uq[0], 255);
  ASSERT_EQ_INT(uq[1], 28);
  ASSERT_EQ_INT(ur[0], 9);
  ASSERT_EQ_INT(ur[1], 4);
  ASSERT_EQ_INT(ur[2], 5);
}

TEST(int_wrap_shift_pow) {
  cml_shape_t s = shp(CML_DTYPE_I8, 1, (int64_t[]){5});
  int8_t a[5] = {127, -128, 1, -128, 3};
  int8_t b[5] = {1, -1, 8, 9, 2};
  int8_t o[5];
  ASSERT_STATUS_OK(run_binary(CML_OP_ADD, s, s, s, a, b, o));
  ASSERT_EQ_INT(o[0], -128);  // 127 + 1 wraps
  ASSERT_EQ_INT(o[1], 127);   // -128 + -1 wraps
  ASSERT_STATUS_OK(run_binary(CML_OP_MUL, s, s, s, a, b, o));
  ASSERT_EQ_INT(o[1], -128);  // -128 * -1 wraps
  ASSERT_STATUS_OK(run_binary(CML_OP_SHIFT_LEFT, s, s, s, a, b, o));
  ASSERT_EQ_INT(o[0], -2);  // 0x7f << 1 = 0xfe
  ASSERT_EQ_INT(o[1], 0);   // count -1 reads as 255 >= 8
  ASSERT_EQ_INT(o[2], 0);   // count 8
  ASSERT_EQ_INT(o[4], 12);
  ASSERT_STATUS_OK(run_binary(CML_OP_SHIFT_RIGHT_ARITHMETIC, s, s, s, a, b, o));
  ASSERT_EQ_INT(o[0], 63);
  ASSERT_EQ_INT(o[3], -1);  // negative, count >= 8: sign fill
  ASSERT_EQ_INT(o[2], 0);
  ASSERT_STATUS_OK(run_binary(CML_OP_SHIFT_RIGHT_LOGICAL, s, s, s, a, b, o));
  ASSERT_EQ_INT(o[0], 63);
  ASSERT_EQ_INT(o[3], 0);
  int8_t pa[6] = {3, 2, 1, -1, -1, 5}, pb[6] = {4, 7, -5, -3, -2, -1}, po[6];
  cml_shape_t ps = shp(CML_DTYPE_I8, 1, (int64_t[]){6});
  ASSERT_STATUS_OK(run_binary(CML_OP_POW, ps, ps, ps, pa, pb, po));
  const int8_t want[6] = {81, -128, 1, -1, 1, 0};
  for (int i = 0; i < 6; ++i) ASSERT_EQ_INT(po[i], want[i]);
  uint32_t ua[2] = {3, 0x80000000u}, ub[2] = {21, 1}, uo[2];
  cml_shape_t us = shp(CML_DTYPE_U32, 1, (int64_t[]){2});
  ASSERT_STATUS_OK(run_binary(CML_OP_POW, us, us, us, ua, ub, uo));
  uint32_t p = 1;
  for (int i = 0; i < 21; ++i) p *= 3u;  // independent: repeated multiplication
  ASSERT_EQ_U64(uo[0], p);
  ASSERT_STATUS_OK(run_binary(CML_OP_SHIFT_RIGHT_ARITHMETIC, us, us, us, ua, ub, uo));
  ASSERT_EQ_U64(uo[1], 0xC0000000u);  // ashr of the bit pattern
}

TEST(float_max_min_nan_zero) {
  cml_shape_t s = shp(CML_DTYPE_F32, 1, (int64_t[]){4});
  float a[4] = {NAN, 1.0f, -0.0f, 0.0f}, b[4] = {1.0f, NAN, 0.0f, -0.0f}, o[4];
  ASSERT_STATUS_OK(run_binary(CML_OP_MAX, s, s, s, a, b, o));
  ASSERT_TRUE(isnan(o[0]) && isnan(o[1]));
  ASSERT_TRUE(same_bits_f32(o[2], 0.0f) && same_bits_f32(o[3], 0.0f));
  ASSERT_STATUS_OK(run_binary(CML_OP_MIN, s, s, s, a, b, o));
  ASSERT_TRUE(isnan(o[0]) && isnan(o[1]));
  ASSERT_TRUE(same_bits_f32(o[2], -0.0f) && same_bits_f32(o[3], -0.0f));
  float ra[3] = {5.5f, -5.5f, 7.0f}, rb[3] = {2.0f, 2.0f, 0.0f};
  cml_shape_t s3 = shp(CML_DTYPE_F32, 1, (int64_t[]){3});
  ASSERT_STATUS_OK(run_binary(CML_OP_REM, s3, s3, s3, ra, rb, o));
  ASSERT_EQ_DBL(o[0], 1.5);
  ASSERT_EQ_DBL(o[1], -1.5);
  ASSERT_TRUE(isnan(o[2]));
}

TEST(f16_bf16_round_once) {
  // 1 + 2^-11 in f16 is a tie between 1 and 1 + 2^-10: rounds to even (1).
  uint16_t one = cml_f32_to_f16(1.0f), tiny = cml_f32_to_f16(0x1p-11f), o;
  ASSERT_STATUS_OK(run_binary(CML_OP_ADD, cml_shape_scalar(CML_DTYPE_F16),
                              cml_shape_scalar(CML_DTYPE_F16), cml_shape_scalar(CML_DTYPE_F16),
                              &one, &tiny, &o));
  ASSERT_EQ_INT(o, 0x3c00);
  uint16_t three = cml_f32_to_f16(3.0f);
  ASSERT_STATUS_OK(run_binary(CML_OP_ADD, cml_shape_scalar(CML_DTYPE_F16),
                              cml_shape_scalar(CML_DTYPE_F16), cml_shape_scalar(CML_DTYPE_F16),
                              &three, &tiny, &o));
  ASSERT_EQ_INT(o, 0x4200);  // 3 + 2^-11 -> 3 (halfway below 2^-9 ulp)
  uint16_t bx = cml_f32_to_bf16(2.0f), by;
  ASSERT_STATUS_OK(run_unary(CML_OP_SQRT, cml_shape_scalar(CML_DTYPE_BF16),
                             cml_shape_scalar(CML_DTYPE_BF16), &bx, &by));
  ASSERT_EQ_INT(by, 0x3fb5);  // sqrt(2) = 1.41421 -> bf16 1.4140625 (0x3fb5)
}

TEST(compare_and_total_order) {
  cml_shape_t s = shp(CML_DTYPE_F32, 1, (int64_t[]){4});
  cml_shape_t bs = shp(CML_DTYPE_BOOL, 1, (int64_t[]){4});
  float a[4] = {-0.0f, NAN, 1.0f, -NAN}, b[4] = {0.0f, NAN, 2.0f, -INFINITY};
  uint8_t o[4];
  ASSERT_STATUS_OK(run_binary(CML_OP_EQUAL, s, s, bs, a, b, o));
  ASSERT_EQ_INT(o[0], 1);
  ASSERT_EQ_INT(o[1], 0);
  ASSERT_STATUS_OK(run_binary(CML_OP_EQUAL_TOTAL_ORDER, s, s, bs, a, b, o));
  ASSERT_EQ_INT(o[0], 0);
  ASSERT_EQ_INT(o[1], 1);
  ASSERT_STATUS_OK(run_binary(CML_OP_LESS_THAN_TOTAL_ORDER, s, s, bs, a, b, o));
  ASSERT_EQ_INT(o[0], 1);  // -0 < +0
  ASSERT_EQ_INT(o[2], 1);
  ASSERT_EQ_INT(o[3], 1);  // -NaN < -Inf
  ASSERT_STATUS_OK(run_binary(CML_OP_LESS_THAN, s, s, bs, a, b, o));
  ASSERT_EQ_INT(o[0], 0);
  ASSERT_EQ_INT(o[1], 0);
  ASSERT_EQ_INT(o[2], 1);
  uint8_t ba[2] = {1, 0}, bb[2] = {0, 0}, bo[2];
  cml_shape_t b2 = shp(CML_DTYPE_BOOL, 1, (int64_t[]){2});
  ASSERT_STATUS_OK(run_binary(CML_OP_GREATER_THAN, b2, b2, b2, ba, bb, bo));
  ASSERT_EQ_INT(bo[0], 1);
  ASSERT_EQ_INT(bo[1], 0);
  ASSERT_STATUS_OK(run_binary(CML_OP_LOGICAL_XOR, b2, b2, b2, ba, bb, bo));
  ASSERT_EQ_INT(bo[0], 1);
  ASSERT_EQ_INT(bo[1], 0);
}

//===--- unary ---===//

TEST(unary_float) {
  cml_shape_t s = shp(CML_DTYPE_F32, 1, (int64_t[]){6});
  float x[6] = {0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 3.7f}, y[6];
  ASSERT_STATUS_OK(run_unary(CML_OP_ROUND, s, s, x, y));
  const float want[6] = {0.0f, 2.0f, 2.0f, -0.0f, -2.0f, 4.0f};
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(same_bits_f32(y[i], want[i]));
  float sx[4] = {-3.0f, -0.0f, NAN, 2.0f}, sy[4];
  cml_shape_t s4 = shp(CML_DTYPE_F32, 1, (int64_t[]){4});
  ASSERT_STATUS_OK(run_unary(CML_OP_SIGN, s4, s4, sx, sy));
  ASSERT_EQ_DBL(sy[0], -1.0);
  ASSERT_TRUE(same_bits_f32(sy[1], -0.0f));
  ASSERT_TRUE(isnan(sy[2]));
  ASSERT_EQ_DBL(sy[3], 1.0);
  float lx[3] = {0.0f, 100.0f, -100.0f}, ly[3];
  cml_shape_t s3 = shp(CML_DTYPE_F32, 1, (int64_t[]){3});
  ASSERT_STATUS_OK(run_unary(CML_OP_LOGISTIC, s3, s3, lx, ly));
  ASSERT_EQ_DBL(ly[0], 0.5);
  ASSERT_EQ_DBL(ly[1], 1.0);
  ASSERT_NEAR(ly[2], 3.72e-44, 1e-44);
  float ex[2] = {1.0f, 0.0f}, ey[2];
  cml_shape_t s2 = shp(CML_DTYPE_F32, 1, (int64_t[]){2});
  ASSERT_STATUS_OK(run_unary(CML_OP_EXP, s2, s2, ex, ey));
  ASSERT_NEAR(ey[0], 2.718281828459045, 4e-7);
  ASSERT_EQ_DBL(ey[1], 1.0);
  uint8_t b[4];
  float fx[4] = {INFINITY, NAN, -1.0f, -INFINITY};
  ASSERT_STATUS_OK(run_unary(CML_OP_IS_FINITE, s4, shp(CML_DTYPE_BOOL, 1, (int64_t[]){4}), fx, b));
  ASSERT_EQ_INT(b[0] + 2 * b[1] + 4 * b[2] + 8 * b[3], 4);
  ASSERT_STATUS_OK(run_unary(CML_OP_IS_NAN, s4, shp(CML_DTYPE_BOOL, 1, (int64_t[]){4}), fx, b));
  ASSERT_EQ_INT(b[0] + 2 * b[1] + 4 * b[2] + 8 * b[3], 2);
}

TEST(unary_int) {
  cml_shape_t s = shp(CML_DTYPE_I16, 1, (int64_t[]){4});
  int16_t x[4] = {INT16_MIN, -5, 0, 0x0f00}, y[4];
  ASSERT_STATUS_OK(run_unary(CML_OP_ABS, s, s, x, y));
  ASSERT_EQ_INT(y[0], INT16_MIN);
  ASSERT_EQ_INT(y[1], 5);
  ASSERT_STATUS_OK(run_unary(CML_OP_NEG, s, s, x, y));
  ASSERT_EQ_INT(y[0], INT16_MIN);
  ASSERT_STATUS_OK(run_unary(CML_OP_SIGN, s, s, x, y));
  ASSERT_EQ_INT(y[0], -1);
  ASSERT_EQ_INT(y[2], 0);
  ASSERT_EQ_INT(y[3], 1);
  ASSERT_STATUS_OK(run_unary(CML_OP_CLZ, s, s, x, y));
  ASSERT_EQ_INT(y[0], 0);
  ASSERT_EQ_INT(y[2], 16);
  ASSERT_EQ_INT(y[3], 4);
  ASSERT_STATUS_OK(run_unary(CML_OP_BIT_COUNT, s, s, x, y));
  ASSERT_EQ_INT(y[0], 1);
  ASSERT_EQ_INT(y[1], 15);  // -5 = 0xfffb
  ASSERT_EQ_INT(y[3], 4);
  ASSERT_STATUS_OK(run_unary(CML_OP_BITWISE_NOT, s, s, x, y));
  ASSERT_EQ_INT(y[2], -1);
  uint64_t u = 1, uy;
  ASSERT_STATUS_OK(run_unary(CML_OP_CLZ, cml_shape_scalar(CML_DTYPE_U64),
                             cml_shape_scalar(CML_DTYPE_U64), &u, &uy));
  ASSERT_EQ_U64(uy, 63);
  // Abs of an unsigned type has no kernel (ops.def accepts signed, float, complex only).
  ASSERT_STATUS_CODE(run_unary(CML_OP_ABS, cml_shape_scalar(CML_DTYPE_U64),
                               cml_shape_scalar(CML_DTYPE_U64), &u, &uy),
                     CML_STATUS_UNIMPLEMENTED);
}

TEST(complex_ops) {
  cml_c64_t a = {1, 2}, b = {3, 4}, o;
  cml_shape_t s = cml_shape_scalar(CML_DTYPE_C64);
  ASSERT_STATUS_OK(run_binary(CML_OP_MUL, s, s, s, &a, &b, &o));
  ASSERT_EQ_DBL(o.re, -5);
  ASSERT_EQ_DBL(o.im, 10);
  ASSERT_STATUS_OK(run_binary(CML_OP_DIV, s, s, s, &b, &a, &o));  // (3+4i)/(1+2i) = 2.2 - 0.4i
  ASSERT_NEAR(o.re, 2.2, 1e-6);
  ASSERT_NEAR(o.im, -0.4, 1e-6);
  float mag;
  ASSERT_STATUS_OK(run_unary(CML_OP_ABS, s, cml_shape_scalar(CML_DTYPE_F32), &b, &mag));
  ASSERT_EQ_DBL(mag, 5);
  ASSERT_STATUS_OK(run_unary(CML_OP_SIGN, s, s, &b, &o));
  ASSERT_NEAR(o.re, 0.6, 1e-7);
  ASSERT_NEAR(o.im, 0.8, 1e-7);
  ASSERT_STATUS_OK(run_unary(CML_OP_CONJ, s, s, &b, &o));
  ASSERT_EQ_DBL(o.im, -4);
  cml_c128_t z = {-4, 0}, r;
  ASSERT_STATUS_OK(run_unary(CML_OP_SQRT, cml_shape_scalar(CML_DTYPE_C128),
                             cml_shape_scalar(CML_DTYPE_C128), &z, &r));
  ASSERT_NEAR(r.re, 0, 1e-15);
  ASSERT_NEAR(r.im, 2, 1e-15);
  cml_c128_t small = {1e-10, 1e-10};
  ASSERT_STATUS_OK(run_unary(CML_OP_EXPM1, cml_shape_scalar(CML_DTYPE_C128),
                             cml_shape_scalar(CML_DTYPE_C128), &small, &r));
  // exp(z) - 1 = z + z^2/2 + ...: z^2/2 = 1e-20 i, so re = 1e-10, im = 1e-10 + 1e-20.
  ASSERT_NEAR(r.re, 1e-10, 1e-25);
  ASSERT_NEAR(r.im, 1e-10 + 1e-20, 1e-25);
  float re[2] = {1, 2}, im[2] = {3, 4};
  cml_c64_t c[2];
  cml_shape_t f2 = shp(CML_DTYPE_F32, 1, (int64_t[]){2});
  ASSERT_STATUS_OK(
      run_binary(CML_OP_COMPLEX, f2, f2, shp(CML_DTYPE_C64, 1, (int64_t[]){2}), re, im, c));
  ASSERT_EQ_DBL(c[1].re, 2);
  ASSERT_EQ_DBL(c[1].im, 4);
}

//===--- convert, bitcast, iota, where, clamp ---===//

TEST(convert_float_to_int) {
  cml_shape_t s = shp(CML_DTYPE_F32, 1, (int64_t[]){6});
  float x[6] = {3e9f, -3e9f, NAN, -1.7f, 1.7f, 300.0f};
  int32_t y[6];
  ASSERT_STATUS_OK(run_convert(s, shp(CML_DTYPE_I32, 1, (int64_t[]){6}), x, y));
  const int32_t want[6] = {INT32_MAX, INT32_MIN, 0, -1, 1, 300};
  for (int i = 0; i < 6; ++i) ASSERT_EQ_INT(y[i], want[i]);
  uint8_t u[6];
  ASSERT_STATUS_OK(run_convert(s, shp(CML_DTYPE_U8, 1, (int64_t[]){6}), x, u));
  const uint8_t want_u[6] = {255, 0, 0, 0, 1, 255};
  for (int i = 0; i < 6; ++i) ASSERT_EQ_INT(u[i], want_u[i]);
  double big = 1e300;
  int64_t i64;
  ASSERT_STATUS_OK(
      run_convert(cml_shape_scalar(CML_DTYPE_F64), cml_shape_scalar(CML_DTYPE_I64), &big, &i64));
  ASSERT_EQ_INT(i64, INT64_MAX);
}

TEST(convert_ints_bools_halves) {
  int32_t x[4] = {300, -1, 0, 65536 + 7};
  cml_shape_t s = shp(CML_DTYPE_I32, 1, (int64_t[]){4});
  int8_t y8[4];
  ASSERT_STATUS_OK(run_convert(s, shp(CML_DTYPE_I8, 1, (int64_t[]){4}), x, y8));
  ASSERT_EQ_INT(y8[0], 44);  // 300 wraps
  ASSERT_EQ_INT(y8[1], -1);
  ASSERT_EQ_INT(y8[3], 7);
  uint8_t b[4];
  ASSERT_STATUS_OK(run_convert(s, shp(CML_DTYPE_BOOL, 1, (int64_t[]){4}), x, b));
  ASSERT_EQ_INT(b[0] + 2 * b[1] + 4 * b[2] + 8 * b[3], 11);
  float f = -0.0f, nan = NAN;
  uint8_t bb;
  ASSERT_STATUS_OK(
      run_convert(cml_shape_scalar(CML_DTYPE_F32), cml_shape_scalar(CML_DTYPE_BOOL), &f, &bb));
  ASSERT_EQ_INT(bb, 0);
  ASSERT_STATUS_OK(
      run_convert(cml_shape_scalar(CML_DTYPE_F32), cml_shape_scalar(CML_DTYPE_BOOL), &nan, &bb));
  ASSERT_EQ_INT(bb, 1);
  // int64 -> bf16 rounds once: 2^30 + 2^22 + 1 is just above the midpoint between
  // 2^30 and 2^30 + 2^23, so it rounds up (0x4e81); rounding via f32 first would give 2^30.
  int64_t v = ((int64_t)1 << 30) + ((int64_t)1 << 22) + 1;
  uint16_t h;
  ASSERT_STATUS_OK(
      run_convert(cml_shape_scalar(CML_DTYPE_I64), cml_shape_scalar(CML_DTYPE_BF16), &v, &h));
  ASSERT_EQ_INT(h, 0x4e81);
  uint16_t half = cml_f32_to_f16(-2.5f);
  int32_t hi;
  ASSERT_STATUS_OK(
      run_convert(cml_shape_scalar(CML_DTYPE_F16), cml_shape_scalar(CML_DTYPE_I32), &half, &hi));
  ASSERT_EQ_INT(hi, -2);
  cml_c64_t c = {2.5f, -1.0f};
  int32_t ci;
  ASSERT_STATUS_OK(
      run_convert(cml_shape_scalar(CML_DTYPE_C64), cml_shape_scalar(CML_DTYPE_I32), &c, &ci));
  ASSERT_EQ_INT(ci, 2);
  cml_c128_t cc;
  ASSERT_STATUS_OK(
      run_convert(cml_shape_scalar(CML_DTYPE_C64), cml_shape_scalar(CML_DTYPE_C128), &c, &cc));
  ASSERT_EQ_DBL(cc.re, 2.5);
  ASSERT_EQ_DBL(cc.im, -1.0);
}

TEST(convert_packed) {
  int32_t x[5] = {1, -1, 7, -8, 9};
  uint8_t packed[3] = {0xff, 0xff, 0xff};
  ASSERT_STATUS_OK(run_convert(shp(CML_DTYPE_I32, 1, (int64_t[]){5}),
                               shp(CML_DTYPE_I4, 1, (int64_t[]){5}), x, packed));
  // Nibbles, low first: 1, 0xf, 7, 0x8, 9 (wraps: 9 -> 0x9); padding nibble zeroed.
  ASSERT_EQ_INT(packed[0], 0xf1);
  ASSERT_EQ_INT(packed[1], 0x87);
  ASSERT_EQ_INT(packed[2], 0x09);
  int32_t back[5];
  ASSERT_STATUS_OK(run_convert(shp(CML_DTYPE_I4, 1, (int64_t[]){5}),
                               shp(CML_DTYPE_I32, 1, (int64_t[]){5}), packed, back));
  const int32_t want[5] = {1, -1, 7, -8, -7};
  for (int i = 0; i < 5; ++i) ASSERT_EQ_INT(back[i], want[i]);
  uint8_t u2 = 0xe4;  // crumbs 0, 1, 2, 3
  float f[4];
  ASSERT_STATUS_OK(run_convert(shp(CML_DTYPE_U2, 1, (int64_t[]){4}),
                               shp(CML_DTYPE_F32, 1, (int64_t[]){4}), &u2, f));
  for (int i = 0; i < 4; ++i) ASSERT_EQ_DBL(f[i], i);
  float fs[3] = {-5.5f, 1.9f, 100.0f};
  uint8_t i2 = 0;
  ASSERT_STATUS_OK(run_convert(shp(CML_DTYPE_F32, 1, (int64_t[]){3}),
                               shp(CML_DTYPE_I2, 1, (int64_t[]){3}), fs, &i2));
  // Saturating: -2 (0b10), 1 (0b01), 1 (0b01).
  ASSERT_EQ_INT(i2, 0x16);
}

TEST(bitcast_and_identity) {
  tnode_t t;
  uint32_t x[2] = {0x3f800000u, 0x12345678u};
  cml_shape_t in = shp(CML_DTYPE_U32, 1, (int64_t[]){2});
  cml_shape_t out = shp(CML_DTYPE_U16, 2, (int64_t[]){2, 2});
  tnode_init(&t, CML_OP_BITCAST, 1, &in, &out);
  t.attrs.dtype = CML_DTYPE_U16;
  uint16_t y[4];
  const void* inputs[1] = {x};
  ASSERT_STATUS_OK(tnode_run(&t, inputs, y, NULL));
  ASSERT_EQ_INT(y[0], 0x0000);
  ASSERT_EQ_INT(y[1], 0x3f80);
  ASSERT_EQ_INT(y[2], 0x5678);
  ASSERT_EQ_INT(y[3], 0x1234);
  cml_shape_t fs = shp(CML_DTYPE_F32, 1, (int64_t[]){2});
  tnode_init(&t, CML_OP_BITCAST, 1, &in, &fs);
  float f[2];
  ASSERT_STATUS_OK(tnode_run(&t, inputs, f, NULL));
  ASSERT_EQ_DBL(f[0], 1.0);
  tnode_init(&t, CML_OP_IDENTITY, 1, &in, &in);
  uint32_t z[2];
  ASSERT_STATUS_OK(tnode_run(&t, inputs, z, NULL));
  ASSERT_EQ_U64(z[1], 0x12345678u);
}

TEST(iota_where_clamp) {
  tnode_t t;
  cml_shape_t os = shp(CML_DTYPE_BF16, 2, (int64_t[]){2, 3});
  tnode_init(&t, CML_OP_IOTA, 0, NULL, &os);
  t.attrs.axis = 1;
  uint16_t y[6];
  ASSERT_STATUS_OK(tnode_run(&t, NULL, y, NULL));
  for (int i = 0; i < 6; ++i) ASSERT_EQ_DBL(cml_bf16_to_f32(y[i]), i % 3);
  t.attrs.axis = 0;
  ASSERT_STATUS_OK(tnode_run(&t, NULL, y, NULL));
  for (int i = 0; i < 6; ++i) ASSERT_EQ_DBL(cml_bf16_to_f32(y[i]), i / 3);

  uint8_t cond[4] = {1, 0, 1, 0};
  cml_c128_t on_true[4] = {{1, 1}, {2, 2}, {3, 3}, {4, 4}}, on_false = {-1, -1}, w[4];
  cml_shape_t shapes[3] = {shp(CML_DTYPE_BOOL, 1, (int64_t[]){4}),
                           shp(CML_DTYPE_C128, 1, (int64_t[]){4}),
                           cml_shape_scalar(CML_DTYPE_C128)};
  tnode_init(&t, CML_OP_WHERE, 3, shapes, &shapes[1]);
  const void* winputs[3] = {cond, on_true, &on_false};
  ASSERT_STATUS_OK(tnode_run(&t, winputs, w, NULL));
  ASSERT_EQ_DBL(w[0].re, 1);
  ASSERT_EQ_DBL(w[1].im, -1);
  ASSERT_EQ_DBL(w[2].im, 3);
  ASSERT_EQ_DBL(w[3].re, -1);

  float lo = 0.0f, hi[4] = {1, 1, 1, NAN}, x[4] = {-1, 0.5f, 2, 0.5f}, c[4];
  cml_shape_t cs[3] = {cml_shape_scalar(CML_DTYPE_F32), shp(CML_DTYPE_F32, 1, (int64_t[]){4}),
                       shp(CML_DTYPE_F32, 1, (int64_t[]){4})};
  tnode_init(&t, CML_OP_CLAMP, 3, cs, &cs[1]);
  const void* cinputs[3] = {&lo, x, hi};
  ASSERT_STATUS_OK(tnode_run(&t, cinputs, c, NULL));
  ASSERT_EQ_DBL(c[0], 0);
  ASSERT_EQ_DBL(c[1], 0.5);
  ASSERT_EQ_DBL(c[2], 1);
  ASSERT_TRUE(isnan(c[3]));

  // Scalar bounds (their own loop): i32 and f32, NaN kept.
  int32_t ilo = -2, ihi = 7, xi[6] = {-5, -2, 0, 3, 10, 7}, ci[6];
  cml_shape_t is3[3] = {cml_shape_scalar(CML_DTYPE_I32), shp(CML_DTYPE_I32, 1, (int64_t[]){6}),
                        cml_shape_scalar(CML_DTYPE_I32)};
  tnode_init(&t, CML_OP_CLAMP, 3, is3, &is3[1]);
  const void* iinputs[3] = {&ilo, xi, &ihi};
  ASSERT_STATUS_OK(tnode_run(&t, iinputs, ci, NULL));
  const int32_t iwant[6] = {-2, -2, 0, 3, 7, 7};
  for (int i = 0; i < 6; ++i) ASSERT_EQ_INT(ci[i], iwant[i]);
  float flo = -1.0f, fhi = 1.0f, xf[4] = {NAN, -2.0f, 0.25f, 9.0f}, cf[4];
  cml_shape_t fs3[3] = {cml_shape_scalar(CML_DTYPE_F32), shp(CML_DTYPE_F32, 1, (int64_t[]){4}),
                        cml_shape_scalar(CML_DTYPE_F32)};
  tnode_init(&t, CML_OP_CLAMP, 3, fs3, &fs3[1]);
  const void* finputs[3] = {&flo, xf, &fhi};
  ASSERT_STATUS_OK(tnode_run(&t, finputs, cf, NULL));
  ASSERT_TRUE(isnan(cf[0]));
  ASSERT_EQ_DBL(cf[1], -1);
  ASSERT_EQ_DBL(cf[2], 0.25);
  ASSERT_EQ_DBL(cf[3], 1);
}

// Iota over many blocks and threads (blocks start inside rows): every element of [3,700,50]
// along each axis, in i32, f32, i64 and bf16 (the narrowing path), against (e / inner) % dim.
TEST(iota_large_every_axis_threads) {
  enum { A = 3, B = 700, C = 50, N = A * B * C };
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  static int32_t yi[N];
  static float yf[N];
  static int64_t yl[N];
  static uint16_t yh[N];
  const int64_t inner[3] = {B * C, C, 1}, dim[3] = {A, B, C};
  static const cml_dtype_t dts[4] = {CML_DTYPE_I32, CML_DTYPE_F32, CML_DTYPE_I64, CML_DTYPE_BF16};
  for (int dt = 0; dt < 4; ++dt) {
    cml_shape_t os = shp(dts[dt], 3, (int64_t[]){A, B, C});
    for (int axis = 0; axis < 3; ++axis) {
      tnode_t t;
      tnode_init(&t, CML_OP_IOTA, 0, NULL, &os);
      t.attrs.axis = axis;
      void* const outs[4] = {yi, yf, yl, yh};
      ASSERT_STATUS_OK(tnode_run(&t, NULL, outs[dt], pool));
      for (int64_t e = 0; e < N; ++e) {
        const int64_t want = (e / inner[axis]) % dim[axis];
        const double got = dt == 0   ? (double)yi[e]
                           : dt == 1 ? (double)yf[e]
                           : dt == 2 ? (double)yl[e]
                                     : (double)cml_bf16_to_f32(yh[e]);
        const double exact =
            dt == 3 ? (double)cml_bf16_to_f32(cml_f32_to_bf16((float)want)) : (double)want;
        if (got != exact) {
          TEST_FAIL_("Iota axis %d %s element %lld: got %g want %g", axis, cml_dtype_name(dts[dt]),
                     (long long)e, got, exact);
          break;
        }
      }
    }
  }
  cmlc_pool_destroy(pool);
}

//===--- threads and odd shapes ---===//

TEST(broadcast_5x7x11_threads_match_reference) {
  const int64_t da[] = {5, 7, 11}, db[] = {5, 1, 11};
  enum { N = 5 * 7 * 11, NB = 5 * 11 };
  static double a[N], b[NB], want[N], got1[N], got4[N];
  for (int i = 0; i < N; ++i) a[i] = (double)((i * 37) % 101) - 50.5;
  for (int i = 0; i < NB; ++i) b[i] = (double)((i * 13) % 17) + 0.25;
  for (int i = 0; i < 5; ++i) {
    for (int j = 0; j < 7; ++j) {
      for (int k = 0; k < 11; ++k)
        want[(i * 7 + j) * 11 + k] = a[(i * 7 + j) * 11 + k] * b[i * 11 + k];
    }
  }
  tnode_t t;
  cml_shape_t shapes[2] = {shp(CML_DTYPE_F64, 3, da), shp(CML_DTYPE_F64, 3, db)};
  tnode_init(&t, CML_OP_MUL, 2, shapes, &shapes[0]);
  const void* inputs[2] = {a, b};
  ASSERT_STATUS_OK(tnode_run(&t, inputs, got1, NULL));
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(4, cml_allocator_system(), &pool));
  cml_status_t st = tnode_run(&t, inputs, got4, pool);
  cmlc_pool_destroy(pool);
  ASSERT_STATUS_OK(st);
  for (int i = 0; i < N; ++i) {
    ASSERT_EQ_DBL(got1[i], want[i]);
    ASSERT_EQ_DBL(got4[i], want[i]);
  }
}

TEST(large_flat_threads_and_zero_size) {
  enum { N = 100003 };
  static int32_t a[N], got[N];
  for (int i = 0; i < N; ++i) a[i] = i * 7919 - 400000000;
  int32_t s = 3;
  tnode_t t;
  cml_shape_t shapes[2] = {shp(CML_DTYPE_I32, 1, (int64_t[]){N}), cml_shape_scalar(CML_DTYPE_I32)};
  tnode_init(&t, CML_OP_ADD, 2, shapes, &shapes[0]);
  const void* inputs[2] = {a, &s};
  cmlc_pool_t* pool = NULL;
  ASSERT_STATUS_OK(cmlc_pool_create(3, cml_allocator_system(), &pool));
  cml_status_t st = tnode_run(&t, inputs, got, pool);
  cmlc_pool_destroy(pool);
  ASSERT_STATUS_OK(st);
  for (int i = 0; i < N; ++i) ASSERT_EQ_INT(got[i], a[i] + 3);
  // Zero-size: nothing written, OK.
  cml_shape_t z = shp(CML_DTYPE_I32, 2, (int64_t[]){0, 3});
  ASSERT_STATUS_OK(run_binary(CML_OP_ADD, z, z, z, NULL, NULL, NULL));
}

TEST(capabilities_and_lookup_misses) {
  cml_capabilities_t caps;
  memset(&caps, 0, sizeof caps);
  cmlc_kernels_elementwise_capabilities(&caps);
  ASSERT_TRUE(cml_capabilities_has_op(&caps, CML_OP_ADD));
  ASSERT_TRUE(cml_capabilities_has_op(&caps, CML_OP_CONVERT_DTYPE));
  ASSERT_TRUE(cml_capabilities_has_op(&caps, CML_OP_IOTA));
  ASSERT_TRUE(cml_capabilities_has_op(&caps, CML_OP_GREATER_THAN_TOTAL_ORDER));
  ASSERT_FALSE(cml_capabilities_has_op(&caps, CML_OP_REDUCE_SUM));
  ASSERT_FALSE(cml_capabilities_has_op(&caps, CML_OP_DOT_GENERAL));
  // A reduce node is not this group's.
  tnode_t t;
  cml_shape_t s = cml_shape_scalar(CML_DTYPE_F32);
  tnode_init(&t, CML_OP_REDUCE_SUM, 1, &s, &s);
  ASSERT_STATUS_CODE(tnode_run(&t, NULL, NULL, NULL), CML_STATUS_UNIMPLEMENTED);
}

// Integers to Float16 / BFloat16: every Int16 and Uint16 value, and Int32 / Int64 / Uint32
// values around +-2^24 (where float stops being exact), against the library's own double ->
// half rounding of the exact value (integers of up to 24 bits now convert through float).
TEST(convert_ints_to_halves_round_once) {
  enum { N = 65536 + 16 };
  static int64_t v[N];
  int n = 0;
  for (int i = 0; i < 65536; ++i) v[n++] = i - 32768;
  for (int d = -4; d < 4; ++d) {
    v[n++] = (1 << 24) + d;
    v[n++] = -(1 << 24) + d;
  }
  static const cml_dtype_t from[] = {CML_DTYPE_I16, CML_DTYPE_U16, CML_DTYPE_I32, CML_DTYPE_I64,
                                     CML_DTYPE_U32};
  static const cml_dtype_t to[] = {CML_DTYPE_F16, CML_DTYPE_BF16};
  static uint8_t in[N * 8];
  static uint16_t out[N];
  for (size_t a = 0; a < sizeof from / sizeof *from; ++a) {
    const int count = from[a] == CML_DTYPE_I16 || from[a] == CML_DTYPE_U16 ? 65536 : n;
    for (int i = 0; i < count; ++i) {
      int64_t x = v[i];
      if (from[a] == CML_DTYPE_U16) x += 32768;
      if (from[a] == CML_DTYPE_U32 && x < 0) x = -x;
      switch (from[a]) {
        case CML_DTYPE_I16:
        case CML_DTYPE_U16: {
          uint16_t u = (uint16_t)x;
          memcpy(in + 2 * i, &u, 2);
          break;
        }
        case CML_DTYPE_I32:
        case CML_DTYPE_U32: {
          uint32_t u = (uint32_t)x;
          memcpy(in + 4 * i, &u, 4);
          break;
        }
        default:
          memcpy(in + 8 * i, &x, 8);
      }
    }
    for (size_t b = 0; b < sizeof to / sizeof *to; ++b) {
      ASSERT_STATUS_OK(run_convert(shp(from[a], 1, (int64_t[]){count}),
                                   shp(to[b], 1, (int64_t[]){count}), in, out));
      for (int i = 0; i < count; ++i) {
        int64_t x = v[i];
        if (from[a] == CML_DTYPE_U16) x += 32768;
        if (from[a] == CML_DTYPE_U32 && x < 0) x = -x;
        const uint16_t want =
            to[b] == CML_DTYPE_F16 ? cml_f64_to_f16((double)x) : cml_f64_to_bf16((double)x);
        if (out[i] != want) {
          fprintf(stderr, "%s %lld -> %s: 0x%04x, want 0x%04x\n", cml_dtype_name(from[a]),
                  (long long)x, cml_dtype_name(to[b]), out[i], want);
        }
        ASSERT_EQ_INT(out[i], want);
      }
    }
  }
}

// Complex Sign of a value whose |z| overflows (both parts finite): z / |z| was 0. Complex
// Expm1 of an infinite real part: NaN from the sum form's cos(inf).
TEST(complex_sign_and_expm1_at_the_edges) {
  const cml_shape_t s128 = cml_shape_scalar(CML_DTYPE_C128), s64 = cml_shape_scalar(CML_DTYPE_C64);
  cml_c128_t z = {DBL_MAX, DBL_MAX}, r;
  ASSERT_STATUS_OK(run_unary(CML_OP_SIGN, s128, s128, &z, &r));
  ASSERT_NEAR(r.re, M_SQRT1_2, 1e-15);
  ASSERT_NEAR(r.im, M_SQRT1_2, 1e-15);
  z = (cml_c128_t){-DBL_MAX, 1};
  ASSERT_STATUS_OK(run_unary(CML_OP_SIGN, s128, s128, &z, &r));
  ASSERT_EQ_DBL(r.re, -1);
  ASSERT_NEAR(r.im, 1 / DBL_MAX, 1e-320);
  cml_c64_t w = {FLT_MAX, -FLT_MAX}, q;
  ASSERT_STATUS_OK(run_unary(CML_OP_SIGN, s64, s64, &w, &q));
  ASSERT_NEAR(q.re, M_SQRT1_2, 1e-7);
  ASSERT_NEAR(q.im, -M_SQRT1_2, 1e-7);
  // Expm1 with an infinite real part: exp(z) - 1 from Annex G's exp.
  static const double kInf = INFINITY;
  z = (cml_c128_t){-kInf, kInf};
  ASSERT_STATUS_OK(run_unary(CML_OP_EXPM1, s128, s128, &z, &r));
  ASSERT_EQ_DBL(r.re, -1);
  ASSERT_EQ_DBL(fabs(r.im), 0);
  z = (cml_c128_t){-kInf, NAN};
  ASSERT_STATUS_OK(run_unary(CML_OP_EXPM1, s128, s128, &z, &r));
  ASSERT_EQ_DBL(r.re, -1);
  z = (cml_c128_t){kInf, NAN};
  ASSERT_STATUS_OK(run_unary(CML_OP_EXPM1, s128, s128, &z, &r));
  ASSERT_TRUE(isinf(r.re) && isnan(r.im));
  w = (cml_c64_t){-INFINITY, INFINITY};
  ASSERT_STATUS_OK(run_unary(CML_OP_EXPM1, s64, s64, &w, &q));
  ASSERT_EQ_DBL(q.re, -1);
  // Infinite parts keep z / |z| (NaN for inf + inf i, as before).
  z = (cml_c128_t){INFINITY, 0};
  ASSERT_STATUS_OK(run_unary(CML_OP_SIGN, s128, s128, &z, &r));
  ASSERT_TRUE(isnan(r.re));
}

// Floor, Ceil and Round (the scalar path) quiet a signaling NaN, keeping its payload, as the
// SIMD rounding instructions and XLA do (libm returned it unchanged).
TEST(rounding_quiets_signaling_nan) {
  static const cml_op_t ops[3] = {CML_OP_FLOOR, CML_OP_CEIL, CML_OP_ROUND};
  for (int i = 0; i < 3; ++i) {
    uint32_t in32[2] = {0x7f800001u, 0xffa00000u}, out32[2];
    cml_shape_t s32 = shp(CML_DTYPE_F32, 1, (int64_t[]){2});
    ASSERT_STATUS_OK(run_unary(ops[i], s32, s32, in32, out32));
    ASSERT_EQ_INT(out32[0], 0x7fc00001u);
    ASSERT_EQ_INT(out32[1], 0xffe00000u);
    uint64_t in64 = 0x7ff0000000000003ull, out64;
    cml_shape_t s64 = cml_shape_scalar(CML_DTYPE_F64);
    ASSERT_STATUS_OK(run_unary(ops[i], s64, s64, &in64, &out64));
    ASSERT_TRUE(out64 == 0x7ff8000000000003ull);
  }
}

// Complex Log1p where the old sum form cancelled: near z = -1 (c64 gave -inf) and on the circle
// |1 + z| = 1 (a real part of 1e-17 from terms of 0.2). Expected values: mpmath at 300 bits.
TEST(complex_log1p_near_minus_one_and_unit_circle) {
  const cml_shape_t s128 = cml_shape_scalar(CML_DTYPE_C128), s64 = cml_shape_scalar(CML_DTYPE_C64);
  static const struct {
    double re, im, want_re, want_im;
  } cases[] = {
      {-0x1.00007da46d3e8p+0, 0x1.1f3677f4ac8ebp-18, -11.660783885122875, 2.6224009615130823},
      {-0x1.fff7b2p-1, -0x1.71fce4p-14, -9.127760749418615, -0.9479156625296236},
      {-0.1, 0x1.be59eba3a165ap-2, -1.556678237759826e-17, 0.4510268117962624},
      {-0.1, 0.4358898943540674, 8.629967468067369e-18, 0.4510268117962625},
      // The same circle far from 0 (an outside follow-up: the real part came out 0).
      {-0.9013547622244159, -0.9951226643304827, 2.1361910640040766e-17, -1.4719904001699098},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    cml_c128_t z = {cases[i].re, cases[i].im}, r;
    ASSERT_STATUS_OK(run_unary(CML_OP_LOG1P, s128, s128, &z, &r));
    ASSERT_NEAR(r.re, cases[i].want_re, 4e-16 * fabs(cases[i].want_re));
    ASSERT_NEAR(r.im, cases[i].want_im, 4e-16 * fabs(cases[i].want_im));
  }
  // c64: the second case's inputs are floats; the result within 2 ulp of float.
  cml_c64_t z = {(float)cases[1].re, (float)cases[1].im}, r;
  ASSERT_STATUS_OK(run_unary(CML_OP_LOG1P, s64, s64, &z, &r));
  ASSERT_NEAR(r.re, cases[1].want_re, 2.4e-7 * fabs(cases[1].want_re));
  ASSERT_NEAR(r.im, cases[1].want_im, 2.4e-7 * fabs(cases[1].want_im));
}

TEST_MAIN(TEST_ENTRY(add_f32_shapes_and_broadcast), TEST_ENTRY(int_division_edges),
          TEST_ENTRY(int_wrap_shift_pow), TEST_ENTRY(float_max_min_nan_zero),
          TEST_ENTRY(f16_bf16_round_once), TEST_ENTRY(compare_and_total_order),
          TEST_ENTRY(unary_float), TEST_ENTRY(unary_int), TEST_ENTRY(complex_ops),
          TEST_ENTRY(complex_log1p_near_minus_one_and_unit_circle),
          TEST_ENTRY(rounding_quiets_signaling_nan),
          TEST_ENTRY(complex_sign_and_expm1_at_the_edges), TEST_ENTRY(convert_float_to_int),
          TEST_ENTRY(convert_ints_bools_halves), TEST_ENTRY(convert_packed),
          TEST_ENTRY(bitcast_and_identity), TEST_ENTRY(iota_where_clamp),
          TEST_ENTRY(iota_large_every_axis_threads),
          TEST_ENTRY(broadcast_5x7x11_threads_match_reference),
          TEST_ENTRY(large_flat_threads_and_zero_size), TEST_ENTRY(capabilities_and_lookup_misses),
          TEST_ENTRY(convert_ints_to_halves_round_once))
