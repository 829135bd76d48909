// SPDX-License-Identifier: Apache-2.0
// tests/unit/stablehlo_golden_test.c: golden StableHLO text for every op the emitter lowers.
//
// Each case builds a small graph (through the builder, with a fake backend that advertises
// what the XLA backend advertises, so fused ops arrive decomposed as XLA would get them), emits
// it and compares the text with tests/unit/golden/stablehlo/<case>.mlir. Every op of ops.def
// needs a case (or an entry in kNotLowered saying why the emitter never sees it): a new op
// fails `every_op_has_a_golden` until it gets one.
//
//   stablehlo_golden_test          text comparisons only (no plugin needed)
//   stablehlo_golden_test --xla    also compiles every golden text on xla:cpu, runs the
//                                  adversarial-name and nesting-depth modules there; exits 77
//                                  (skipped) without the CPU plugin
//   CML_UPDATE_GOLDEN=1 stablehlo_golden_test    rewrites the golden files from the emitter
//
// Regenerated goldens must be reviewed (git diff) against the StableHLO spec before committing.
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/xla/pjrt/pjrt.h"
#include "backends/xla/stablehlo/emitter.h"
#include "backends/xla/xla_internal.h"
#include "builder_fake_backend.h"
#include "cml/cml.h"
#include "cml/fused.h"
#include "cml/xla.h"
#include "stablehlo_chain_ir.h"
#include "test.h"

#ifndef CML_GOLDEN_DIR
#error "CML_GOLDEN_DIR (the directory of the golden files) must be defined by the build"
#endif

#define SHAPE(dt, ...)                                                                \
  cml_shape_make((dt), (int32_t)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), \
                 (int64_t[]){__VA_ARGS__})

//===--- cases ---===//

// A case builds main's body into |f| (of builder |b|) and returns its outputs; false when a
// builder call failed (the builder's status says why).
typedef bool (*case_fn)(cml_builder_t* b, cml_function_t* f, cml_value_t* outs, size_t* count);

typedef struct golden_case_t {
  const char* name;  // golden file name without ".mlir"
  cml_op_t op;       // the op it covers
  case_fn fn;        // NULL: the generic element-wise/reduce case of |op|
  // The core builds this graph's nodes in an order that depends on the compiler (operands
  // created as the arguments of one call): compared as the sorted lines with SSA numbers
  // blanked out instead of byte for byte.
  bool order_free;
  // The platform the emitter lowers for (NULL: "cpu").
  const char* platform;
} golden_case_t;

static cml_value_t param(cml_function_t* f, const char* name, cml_shape_t s) {
  return cml_parameter(f, name, &s);
}

// A case that returned main's outputs itself (with shardings) sets *n to this.
#define RETURNED ((size_t)-1)

#define CASE(name) \
  static bool case_##name(cml_builder_t* b, cml_function_t* f, cml_value_t* o, size_t* n)
#define UNUSED_B (void)b

// The dtype a generic case of |op| uses: Float32 when allowed, else Int32, Bool, Complex64.
static cml_dtype_t generic_dtype(cml_op_t op) {
  cml_dtype_set_t set = cml_op_dtypes(op);
  static const cml_dtype_t kPrefer[] = {CML_DTYPE_F32, CML_DTYPE_I32, CML_DTYPE_BOOL,
                                        CML_DTYPE_C64};
  for (size_t i = 0; i < sizeof kPrefer / sizeof kPrefer[0]; ++i) {
    if (set & CML_DTYPE_BIT(kPrefer[i])) return kPrefer[i];
  }
  return CML_DTYPE_INVALID;
}

static bool generic_case(cml_op_t op, cml_function_t* f, cml_value_t* o, size_t* n) {
  cml_shape_t s = SHAPE(generic_dtype(op), 2, 3);
  cml_value_t x = cml_parameter(f, "x", &s);
  switch (cml_op_kind(op)) {
    case CML_OPK_UNARY:
      o[0] = cml_op_unary(f, op, x);
      break;
    case CML_OPK_BINARY:
    case CML_OPK_COMPARE:
      o[0] = cml_op_binary(f, op, x, cml_parameter(f, "y", &s));
      break;
    case CML_OPK_REDUCE:
      o[0] = cml_op_reduce(f, op, x, (int64_t[]){1}, 1);
      break;
    default:
      return false;
  }
  *n = 1;
  return o[0] != CML_VALUE_INVALID;
}

// Special lowerings of element-wise ops.
CASE(div_f32_in_f64) {
  UNUSED_B;
  cml_value_t x = param(f, "x", SHAPE(CML_DTYPE_F32, 3));
  cml_value_t y = param(f, "y", SHAPE(CML_DTYPE_F32, 3));
  o[0] = cml_op_div(f, x, y);
  *n = 1;
  return o[0];
}
CASE(div_f64_barriers) {
  UNUSED_B;
  cml_value_t p_x = param(f, "x", SHAPE(CML_DTYPE_F64, 3));
  cml_value_t p_y = param(f, "y", cml_shape_scalar(CML_DTYPE_F64));
  o[0] = cml_op_div(f, p_x, p_y);
  *n = 1;
  return o[0];
}
CASE(div_i32) {
  UNUSED_B;
  cml_value_t x = param(f, "x", SHAPE(CML_DTYPE_I32, 3));
  cml_value_t y = param(f, "y", SHAPE(CML_DTYPE_I32, 3));
  o[0] = cml_op_div(f, x, y);
  *n = 1;
  return o[0];
}
CASE(pow_i32) {
  UNUSED_B;
  cml_value_t x = param(f, "x", SHAPE(CML_DTYPE_I32, 3));
  cml_value_t y = param(f, "y", SHAPE(CML_DTYPE_I32, 3));
  o[0] = cml_op_pow(f, x, y);
  *n = 1;
  return o[0];
}
CASE(max_i32_min_u8) {
  UNUSED_B;
  cml_value_t x = param(f, "x", SHAPE(CML_DTYPE_I32, 3)), y = param(f, "y", SHAPE(CML_DTYPE_U8, 3));
  o[0] = cml_op_max(f, x, x);
  o[1] = cml_op_min(f, y, y);
  *n = 2;
  return o[0] && o[1];
}
CASE(exp_f16_in_f32) {
  UNUSED_B;
  o[0] = cml_op_exp(f, param(f, "x", SHAPE(CML_DTYPE_F16, 3)));
  *n = 1;
  return o[0];
}
CASE(atan2_bf16_in_f32) {
  UNUSED_B;
  cml_value_t x = param(f, "x", SHAPE(CML_DTYPE_BF16, 3));
  o[0] = cml_op_atan2(f, x, x);
  *n = 1;
  return o[0];
}
CASE(abs_sign_c64) {
  UNUSED_B;
  cml_value_t z = param(f, "z", SHAPE(CML_DTYPE_C64, 3));
  o[0] = cml_op_abs(f, z);
  o[1] = cml_op_sign(f, z);
  o[2] = cml_op_real(f, z);
  o[3] = cml_op_imag(f, z);
  *n = 4;
  return o[0] && o[1] && o[2] && o[3];
}
CASE(real_imag_f32) {
  UNUSED_B;
  cml_value_t x = param(f, "x", SHAPE(CML_DTYPE_F32, 3));
  o[0] = cml_op_real(f, x);
  o[1] = cml_op_imag(f, x);
  *n = 2;
  return o[0] && o[1];
}
CASE(scalar_and_size_one_broadcast) {
  UNUSED_B;
  cml_value_t x = param(f, "x", SHAPE(CML_DTYPE_F32, 2, 1));
  cml_value_t y = param(f, "y", SHAPE(CML_DTYPE_F32, 1, 3));
  cml_value_t s = param(f, "s", cml_shape_scalar(CML_DTYPE_F32));
  o[0] = cml_op_add(f, cml_op_mul(f, x, y), s);
  *n = 1;
  return o[0];
}
CASE(reduce_max_f32_sum_c64_and_i8) {
  UNUSED_B;
  cml_value_t x = param(f, "x", SHAPE(CML_DTYPE_F32, 2, 3));
  cml_value_t z = param(f, "z", SHAPE(CML_DTYPE_C64, 2));
  cml_value_t k = param(f, "k", SHAPE(CML_DTYPE_I8, 4));
  o[0] = cml_op_reduce_max(f, x, NULL, 0);
  o[1] = cml_op_reduce_sum(f, z, (int64_t[]){0}, 1);
  o[2] = cml_op_reduce_product(f, k, (int64_t[]){0}, 1);
  *n = 3;
  return o[0] && o[1] && o[2];
}

// Constants, parameters and conversions.
CASE(parameter) {
  UNUSED_B;
  o[0] = param(f, "x", SHAPE(CML_DTYPE_F32, 2));
  o[1] = param(f, "y", cml_shape_scalar(CML_DTYPE_U16));
  *n = 2;
  return o[0] && o[1];
}
CASE(constant) {
  UNUSED_B;
  float fv[4] = {1.5f, -0.0f, 1e10f, 3.0f};
  int64_t iv[3] = {-1, 0, 9007199254740993LL};
  uint8_t bv[2] = {1, 0};
  cml_shape_t fs = SHAPE(CML_DTYPE_F32, 2, 2), is = SHAPE(CML_DTYPE_I64, 3);
  cml_shape_t bs = SHAPE(CML_DTYPE_BOOL, 2), es = SHAPE(CML_DTYPE_F32, 0, 2);
  o[0] = cml_constant(f, &fs, fv);
  o[1] = cml_constant(f, &is, iv);
  o[2] = cml_constant(f, &bs, bv);
  o[3] = cml_constant(f, &es, NULL);
  o[4] = cml_constant_scalar_f64(f, CML_DTYPE_F64, 1.0 / 0.0);
  *n = 5;
  return o[0] && o[1] && o[2] && o[3] && o[4];
}
CASE(convert_dtype) {
  UNUSED_B;
  cml_value_t x = param(f, "x", SHAPE(CML_DTYPE_F32, 3));
  cml_value_t z = param(f, "z", SHAPE(CML_DTYPE_C64, 3));
  cml_value_t d = param(f, "d", SHAPE(CML_DTYPE_F64, 3));
  cml_value_t w = param(f, "w", SHAPE(CML_DTYPE_I64, 3));
  o[0] = cml_op_convert_dtype(f, x, CML_DTYPE_I32);
  o[1] = cml_op_convert_dtype(f, x, CML_DTYPE_BOOL);
  o[2] = cml_op_convert_dtype(f, z, CML_DTYPE_F32);
  o[3] = cml_op_convert_dtype(f, d, CML_DTYPE_BF16);
  o[4] = cml_op_convert_dtype(f, w, CML_DTYPE_BF16);
  o[5] = cml_op_convert_dtype(f, x, CML_DTYPE_C64);
  *n = 6;
  for (int i = 0; i < 6; ++i)
    if (!o[i]) return false;
  return true;
}
CASE(bitcast) {
  UNUSED_B;
  cml_value_t x = param(f, "x", SHAPE(CML_DTYPE_F32, 3));
  cml_value_t p = param(f, "p", SHAPE(CML_DTYPE_BOOL, 3));
  cml_value_t u = param(f, "u", SHAPE(CML_DTYPE_U8, 3, 2));
  o[0] = cml_op_bitcast(f, x, CML_DTYPE_U32);
  o[1] = cml_op_bitcast(f, x, CML_DTYPE_U8);
  o[2] = cml_op_bitcast(f, p, CML_DTYPE_U8);
  o[3] = cml_op_bitcast(f, u, CML_DTYPE_I16);
  *n = 4;
  return o[0] && o[1] && o[2] && o[3];
}

// Data movement.
CASE(broadcast_in_dim) {
  UNUSED_B;
  o[0] = cml_op_broadcast_in_dim(f, param(f, "x", SHAPE(CML_DTYPE_F32, 3, 1)), (int64_t[]){2, 3, 4},
                                 3, (int64_t[]){1, 2}, 2);
  *n = 1;
  return o[0];
}
CASE(clamp) {
  UNUSED_B;
  cml_value_t x = param(f, "x", SHAPE(CML_DTYPE_F32, 3));
  cml_value_t lo = param(f, "lo", cml_shape_scalar(CML_DTYPE_F32));
  cml_value_t i = param(f, "i", SHAPE(CML_DTYPE_I32, 3));
  o[0] = cml_op_clamp(f, lo, x, x);
  o[1] = cml_op_clamp(f, i, i, i);
  *n = 2;
  return o[0] && o[1];
}
CASE(concatenate) {
  UNUSED_B;
  cml_value_t p_a = param(f, "a", SHAPE(CML_DTYPE_I32, 2, 1));
  cml_value_t p_b = param(f, "b", SHAPE(CML_DTYPE_I32, 2, 3));
  cml_value_t p_c = param(f, "c", SHAPE(CML_DTYPE_I32, 2, 2));
  cml_value_t ins[3] = {p_a, p_b, p_c};
  o[0] = cml_op_concatenate(f, 1, ins, 3);
  *n = 1;
  return o[0];
}
CASE(reshape) {
  UNUSED_B;
  o[0] = cml_op_reshape(f, param(f, "x", SHAPE(CML_DTYPE_F32, 2, 3)), (int64_t[]){3, 1, 2}, 3);
  *n = 1;
  return o[0];
}
CASE(transpose) {
  UNUSED_B;
  o[0] = cml_op_transpose(f, param(f, "x", SHAPE(CML_DTYPE_F32, 2, 3, 4)), (int64_t[]){2, 0, 1}, 3);
  *n = 1;
  return o[0];
}
CASE(reverse) {
  UNUSED_B;
  o[0] = cml_op_reverse(f, param(f, "x", SHAPE(CML_DTYPE_F32, 2, 3, 4)), (int64_t[]){0, 2}, 2);
  *n = 1;
  return o[0];
}
CASE(slice) {
  UNUSED_B;
  o[0] = cml_op_slice(f, param(f, "x", SHAPE(CML_DTYPE_F32, 5, 4)), (int64_t[]){1, 0},
                      (int64_t[]){5, 3}, (int64_t[]){2, 1}, 2);
  *n = 1;
  return o[0];
}
CASE(pad) {
  UNUSED_B;
  cml_pad_axis_t pads[2] = {{1, -1, 2}, {0, 2, 0}};
  cml_value_t p_x = param(f, "x", SHAPE(CML_DTYPE_F32, 3, 2));
  cml_value_t fill = cml_constant_scalar_f64(f, CML_DTYPE_F32, 0.5);
  o[0] = cml_op_pad(f, p_x, fill, pads, 2);
  *n = 1;
  return o[0];
}
CASE(iota) {
  UNUSED_B;
  cml_shape_t s = SHAPE(CML_DTYPE_I32, 2, 3);
  cml_shape_t fs = SHAPE(CML_DTYPE_F32, 4);
  o[0] = cml_op_iota(f, &s, 1);
  o[1] = cml_op_iota(f, &fs, 0);
  *n = 2;
  return o[0] && o[1];
}
CASE(where) {
  UNUSED_B;
  cml_value_t p = param(f, "p", cml_shape_scalar(CML_DTYPE_BOOL));
  cml_value_t x = param(f, "x", SHAPE(CML_DTYPE_F32, 2, 3));
  cml_value_t s = param(f, "s", cml_shape_scalar(CML_DTYPE_F32));
  o[0] = cml_op_where(f, p, x, s);
  *n = 1;
  return o[0];
}
CASE(dynamic_slice) {
  UNUSED_B;
  cml_value_t x = param(f, "x", SHAPE(CML_DTYPE_F32, 5, 4));
  cml_value_t p_i = param(f, "i", cml_shape_scalar(CML_DTYPE_I32));
  cml_value_t p_j = param(f, "j", cml_shape_scalar(CML_DTYPE_I32));
  cml_value_t starts[2] = {p_i, p_j};
  o[0] = cml_op_dynamic_slice(f, x, starts, (int64_t[]){2, 3}, 2);
  *n = 1;
  return o[0];
}
CASE(dynamic_update_slice) {
  UNUSED_B;
  cml_value_t x = param(f, "x", SHAPE(CML_DTYPE_F32, 5, 4));
  cml_value_t u = param(f, "u", SHAPE(CML_DTYPE_F32, 2, 3));
  cml_value_t p_i = param(f, "i", cml_shape_scalar(CML_DTYPE_I64));
  cml_value_t p_j = param(f, "j", cml_shape_scalar(CML_DTYPE_I64));
  cml_value_t starts[2] = {p_i, p_j};
  o[0] = cml_op_dynamic_update_slice(f, x, u, starts, 2);
  *n = 1;
  return o[0];
}

// Indexing: Gather and Scatter with dimension numbers.
CASE(gather) {
  UNUSED_B;
  cml_gather_dims_t g;
  memset(&g, 0, sizeof g);
  // operand [5, 4, 3], indices [2, 2, 2] (index vector on axis 2): picks operand[i, j, :]
  // windows of [1, 2, 3] with axis 0 collapsed.
  g.index_vector_axis = 2;
  g.offset_output_axis_count = 2;
  g.offset_output_axes[0] = 2;
  g.offset_output_axes[1] = 3;
  g.collapsed_slice_axis_count = 1;
  g.collapsed_slice_axes[0] = 0;
  g.start_index_map_count = 2;
  g.start_index_map[0] = 0;
  g.start_index_map[1] = 1;
  g.slice_size_count = 3;
  g.slice_sizes[0] = 1;
  g.slice_sizes[1] = 2;
  g.slice_sizes[2] = 3;
  cml_value_t p_x = param(f, "x", SHAPE(CML_DTYPE_F32, 5, 4, 3));
  cml_value_t p_idx = param(f, "idx", SHAPE(CML_DTYPE_I32, 2, 2, 2));
  o[0] = cml_op_gather(f, p_x, p_idx, &g);
  *n = 1;
  return o[0];
}
static bool scatter_case(cml_op_t op, cml_function_t* f, cml_value_t* o, size_t* n) {
  cml_scatter_dims_t d;
  memset(&d, 0, sizeof d);
  // operand [5, 3], indices [2, 1], updates [2, 3]: rows idx[k] get updates[k].
  d.index_vector_axis = 1;
  d.update_window_axis_count = 1;
  d.update_window_axes[0] = 1;
  d.inserted_window_axis_count = 1;
  d.inserted_window_axes[0] = 0;
  d.scatter_axes_to_operand_axes_count = 1;
  d.scatter_axes_to_operand_axes[0] = 0;
  cml_value_t p_x = param(f, "x", SHAPE(CML_DTYPE_F32, 5, 3));
  cml_value_t p_idx = param(f, "idx", SHAPE(CML_DTYPE_I32, 2, 1));
  cml_value_t p_upd = param(f, "upd", SHAPE(CML_DTYPE_F32, 2, 3));
  o[0] = cml_op_scatter(f, op, p_x, p_idx, p_upd, &d);
  *n = 1;
  return o[0];
}
CASE(scatter_sum) {
  UNUSED_B;
  return scatter_case(CML_OP_SCATTER_SUM, f, o, n);
}
CASE(scatter_max) {
  UNUSED_B;
  return scatter_case(CML_OP_SCATTER_MAX, f, o, n);
}
CASE(scatter_min) {
  UNUSED_B;
  return scatter_case(CML_OP_SCATTER_MIN, f, o, n);
}

// Windows.
static cml_window_config_t window_2x2(void) {
  cml_window_config_t w;
  memset(&w, 0, sizeof w);
  w.rank = 2;
  w.window_dims[0] = w.window_dims[1] = 2;
  w.strides[0] = w.strides[1] = 2;
  return w;
}
CASE(reduce_window_sum_padded_dilated) {
  UNUSED_B;
  cml_window_config_t w;
  memset(&w, 0, sizeof w);
  w.rank = 4;
  int64_t dims[4] = {1, 3, 3, 1}, strides[4] = {1, 2, 1, 1}, wdil[4] = {1, 1, 2, 1};
  int64_t lo[4] = {0, 1, 2, 0}, hi[4] = {0, 1, 0, 0};
  for (int i = 0; i < 4; ++i) {
    w.window_dims[i] = dims[i];
    w.strides[i] = strides[i];
    w.window_dilations[i] = wdil[i];
    w.padding_low[i] = lo[i];
    w.padding_high[i] = hi[i];
  }
  o[0] =
      cml_op_reduce_window(f, param(f, "x", SHAPE(CML_DTYPE_F32, 1, 5, 6, 2)), CML_REDUCE_SUM, &w);
  *n = 1;
  return o[0];
}
CASE(reduce_window_max_min_product) {
  UNUSED_B;
  cml_window_config_t w = window_2x2();
  w.input_dilations[0] = 2;
  cml_value_t x = param(f, "x", SHAPE(CML_DTYPE_F32, 4, 4));
  cml_value_t k = param(f, "k", SHAPE(CML_DTYPE_I32, 4, 4));
  o[0] = cml_op_reduce_window(f, x, CML_REDUCE_MAX, &w);
  o[1] = cml_op_reduce_window(f, k, CML_REDUCE_MIN, &w);
  o[2] = cml_op_reduce_window(f, k, CML_REDUCE_PRODUCT, &w);
  *n = 3;
  return o[0] && o[1] && o[2];
}
static bool select_and_scatter_case(cml_op_t op, cml_function_t* f, cml_value_t* o, size_t* n) {
  cml_window_config_t w = window_2x2();
  if (op == CML_OP_SELECT_AND_SCATTER_SUM) {
    w.strides[1] = 1;
    w.padding_high[1] = 1;
  }
  cml_shape_t src =
      op == CML_OP_SELECT_AND_SCATTER_SUM ? SHAPE(CML_DTYPE_F32, 2, 4) : SHAPE(CML_DTYPE_F32, 2, 2);
  cml_value_t p_x = param(f, "x", SHAPE(CML_DTYPE_F32, 4, 4));
  cml_value_t p_src = param(f, "src", src);
  o[0] = cml_op_select_and_scatter(f, op, p_x, p_src, &w);
  *n = 1;
  return o[0];
}
CASE(select_and_scatter_max) {
  UNUSED_B;
  return select_and_scatter_case(CML_OP_SELECT_AND_SCATTER_MAX, f, o, n);
}
CASE(select_and_scatter_min) {
  UNUSED_B;
  return select_and_scatter_case(CML_OP_SELECT_AND_SCATTER_MIN, f, o, n);
}
CASE(select_and_scatter_sum) {
  UNUSED_B;
  return select_and_scatter_case(CML_OP_SELECT_AND_SCATTER_SUM, f, o, n);
}
// NHWC input, HWIO kernel.
static cml_conv_config_t conv_nhwc(void) {
  cml_conv_config_t c;
  memset(&c, 0, sizeof c);
  c.spatial_count = 2;
  c.input_batch_axis = 0;
  c.input_channel_axis = 3;
  c.input_spatial_axes[0] = 1;
  c.input_spatial_axes[1] = 2;
  c.kernel_spatial_axes[0] = 0;
  c.kernel_spatial_axes[1] = 1;
  c.kernel_input_channel_axis = 2;
  c.kernel_output_channel_axis = 3;
  c.output_batch_axis = 0;
  c.output_channel_axis = 3;
  c.output_spatial_axes[0] = 1;
  c.output_spatial_axes[1] = 2;
  return c;
}
CASE(conv_general_padding_strides_dilations) {
  UNUSED_B;
  cml_conv_config_t c = conv_nhwc();
  c.strides[0] = 2;
  c.padding_low[0] = 1;
  c.padding_high[0] = 2;
  c.padding_low[1] = 1;
  c.kernel_dilations[1] = 2;
  c.input_dilations[0] = 2;
  cml_value_t p_img = param(f, "img", SHAPE(CML_DTYPE_F32, 1, 5, 6, 3));
  cml_value_t p_ker = param(f, "ker", SHAPE(CML_DTYPE_F32, 3, 2, 3, 4));
  o[0] = cml_op_conv_general(f, p_img, p_ker, &c);
  *n = 1;
  return o[0];
}
CASE(conv_general_groups_nchw) {
  UNUSED_B;
  // NCHW input, OIHW kernel, 2 feature groups; and a batch-grouped Int8 one into Int32.
  cml_conv_config_t c;
  memset(&c, 0, sizeof c);
  c.spatial_count = 2;
  c.input_batch_axis = 0;
  c.input_channel_axis = 1;
  c.input_spatial_axes[0] = 2;
  c.input_spatial_axes[1] = 3;
  c.kernel_output_channel_axis = 0;
  c.kernel_input_channel_axis = 1;
  c.kernel_spatial_axes[0] = 2;
  c.kernel_spatial_axes[1] = 3;
  c.output_batch_axis = 0;
  c.output_channel_axis = 1;
  c.output_spatial_axes[0] = 2;
  c.output_spatial_axes[1] = 3;
  c.channel_group_count = 2;
  cml_value_t p_img = param(f, "img", SHAPE(CML_DTYPE_F32, 2, 4, 5, 5));
  cml_value_t p_ker = param(f, "ker", SHAPE(CML_DTYPE_F32, 6, 2, 3, 3));
  o[0] = cml_op_conv_general(f, p_img, p_ker, &c);
  cml_conv_config_t d = conv_nhwc();
  d.batch_group_count = 2;
  d.output_dtype = CML_DTYPE_I32;
  cml_value_t p_q = param(f, "q", SHAPE(CML_DTYPE_I8, 2, 4, 4, 3));
  cml_value_t p_qk = param(f, "qk", SHAPE(CML_DTYPE_I8, 2, 2, 3, 4));
  o[1] = cml_op_conv_general(f, p_q, p_qk, &d);
  *n = 2;
  return o[0] && o[1];
}

// Dot products.
CASE(dot) {
  UNUSED_B;
  cml_value_t p_a = param(f, "a", SHAPE(CML_DTYPE_F32, 2, 3));
  cml_value_t p_b = param(f, "b", SHAPE(CML_DTYPE_F32, 3));
  o[0] = cml_op_dot(f, p_a, p_b);
  *n = 1;
  return o[0];
}
CASE(dot_general_batch_and_int8) {
  UNUSED_B;
  cml_dot_config_t d;
  memset(&d, 0, sizeof d);
  d.lhs_batch_count = d.rhs_batch_count = 1;
  d.lhs_batch_axes[0] = 0;
  d.rhs_batch_axes[0] = 0;
  d.lhs_contracting_count = d.rhs_contracting_count = 1;
  d.lhs_contracting_axes[0] = 2;
  d.rhs_contracting_axes[0] = 1;
  cml_value_t p_a = param(f, "a", SHAPE(CML_DTYPE_F32, 2, 3, 4));
  cml_value_t p_b = param(f, "b", SHAPE(CML_DTYPE_F32, 2, 4, 5));
  o[0] = cml_op_dot_general(f, p_a, p_b, &d);
  cml_dot_config_t q;
  memset(&q, 0, sizeof q);
  q.lhs_contracting_count = q.rhs_contracting_count = 1;
  q.lhs_contracting_axes[0] = 1;
  q.rhs_contracting_axes[0] = 0;
  q.accumulator_dtype = CML_DTYPE_I32;
  q.output_dtype = CML_DTYPE_F32;
  cml_value_t p_qa = param(f, "qa", SHAPE(CML_DTYPE_I8, 2, 3));
  cml_value_t p_qb = param(f, "qb", SHAPE(CML_DTYPE_I8, 3, 4));
  o[1] = cml_op_dot_general(f, p_qa, p_qb, &q);
  *n = 2;
  return o[0] && o[1];
}

// Other ops.
CASE(arg_min_max) {
  UNUSED_B;
  cml_value_t x = param(f, "x", SHAPE(CML_DTYPE_F32, 2, 3));
  cml_value_t k = param(f, "k", SHAPE(CML_DTYPE_U8, 4));
  o[0] = cml_op_arg_min_max(f, x, 1, CML_DTYPE_I32, false);
  o[1] = cml_op_arg_min_max(f, k, 0, CML_DTYPE_I64, true);
  *n = 2;
  return o[0] && o[1];
}
CASE(rng_bit_generator) {
  UNUSED_B;
  cml_value_t state = param(f, "state", SHAPE(CML_DTYPE_U64, 3));
  cml_shape_t fs = SHAPE(CML_DTYPE_F32, 2, 2), us = SHAPE(CML_DTYPE_U8, 5);
  cml_value_t s1 = 0, s2 = 0;
  bool ok = cml_op_rng_bit_generator(f, state, &fs, &s1, &o[0]);
  ok = ok && cml_op_rng_bit_generator(f, s1, &us, &s2, &o[1]);
  o[2] = s2;
  *n = 3;
  return ok;
}
CASE(fft) {
  UNUSED_B;
  cml_value_t z = param(f, "z", SHAPE(CML_DTYPE_C64, 2, 8));
  cml_value_t x = param(f, "x", SHAPE(CML_DTYPE_F32, 8));
  cml_value_t h = param(f, "h", SHAPE(CML_DTYPE_C128, 5));
  o[0] = cml_op_fft(f, z, CML_FFT_FORWARD, (int64_t[]){2, 8}, 2);
  o[1] = cml_op_fft(f, z, CML_FFT_INVERSE, (int64_t[]){8}, 1);
  o[2] = cml_op_fft(f, x, CML_FFT_FORWARD_REAL, (int64_t[]){8}, 1);
  o[3] = cml_op_fft(f, h, CML_FFT_INVERSE_REAL, (int64_t[]){8}, 1);
  *n = 4;
  return o[0] && o[1] && o[2] && o[3];
}
CASE(batch_norm_inference) {
  UNUSED_B;
  cml_value_t x = param(f, "x", SHAPE(CML_DTYPE_F32, 2, 3));
  cml_value_t v = param(f, "v", SHAPE(CML_DTYPE_F32, 3));
  o[0] = cml_op_batch_norm_inference(f, x, v, v, v, v, 1e-3f, 1);
  *n = 1;
  return o[0];
}
CASE(batch_norm_training) {
  UNUSED_B;
  cml_value_t x = param(f, "x", SHAPE(CML_DTYPE_F32, 2, 3));
  cml_value_t v = param(f, "v", SHAPE(CML_DTYPE_F32, 3));
  *n = 3;
  return cml_op_batch_norm_training(f, x, v, v, 1e-3f, 1, o);
}
CASE(batch_norm_gradient) {
  UNUSED_B;
  cml_value_t x = param(f, "x", SHAPE(CML_DTYPE_F32, 2, 3));
  cml_value_t v = param(f, "v", SHAPE(CML_DTYPE_F32, 3));
  *n = 3;
  return cml_op_batch_norm_gradient(f, x, v, v, v, x, 1e-3f, 1, o);
}
CASE(optimization_barrier) {
  UNUSED_B;
  cml_value_t p_x = param(f, "x", SHAPE(CML_DTYPE_F32, 3));
  cml_value_t p_k = param(f, "k", cml_shape_scalar(CML_DTYPE_I32));
  cml_value_t ins[2] = {p_x, p_k};
  *n = 2;
  return cml_op_optimization_barrier(f, ins, 2, o);
}
CASE(scheduling_barrier) {
  UNUSED_B;
  cml_value_t x = param(f, "x", SHAPE(CML_DTYPE_F32, 3));
  cml_value_t dep = param(f, "dep", cml_shape_scalar(CML_DTYPE_I32));
  o[0] = cml_op_scheduling_barrier(f, x, &dep, 1);
  *n = 1;
  return o[0];
}

// Control flow and closures.
CASE(call_named_function) {
  cml_function_t* g = NULL;
  if (cml_builder_new_function(b, "scale.by-two", &g) != CML_OK) return false;
  cml_value_t gx = param(g, "x", SHAPE(CML_DTYPE_F32, 3));
  cml_value_t gy = cml_op_add(g, gx, gx);
  if (cml_function_return(g, &gy, 1) != CML_OK) return false;
  cml_value_t x = param(f, "x", SHAPE(CML_DTYPE_F32, 3));
  cml_value_t r = 0;
  bool ok = cml_op_call(f, g, &x, 1, &r) && cml_op_call(f, g, &r, 1, &o[0]);
  *n = 1;
  return ok;
}
CASE(call_closure_with_captures) {
  UNUSED_B;
  cml_value_t x = param(f, "x", SHAPE(CML_DTYPE_F32, 3));
  cml_value_t s = param(f, "s", cml_shape_scalar(CML_DTYPE_F32));
  cml_function_t* cl = NULL;
  if (cml_function_new_closure(f, &cl) != CML_OK) return false;
  cml_value_t a = param(cl, "a", SHAPE(CML_DTYPE_F32, 3));
  cml_value_t r = cml_op_mul(cl, a, s);  // captures s
  if (cml_function_return(cl, &r, 1) != CML_OK) return false;
  *n = 1;
  return cml_op_call(f, cl, &x, 1, &o[0]);
}
CASE(while_with_captures) {
  UNUSED_B;
  cml_shape_t sc = cml_shape_scalar(CML_DTYPE_I32);
  cml_value_t limit = param(f, "limit", sc);
  cml_value_t acc0 = param(f, "acc", SHAPE(CML_DTYPE_F32, 2));
  cml_value_t big = cml_constant(f, &(cml_shape_t){CML_DTYPE_F32, 1, {20}}, (float[20]){0});
  cml_function_t *cond = NULL, *body = NULL;
  if (cml_function_new_closure(f, &cond) != CML_OK) return false;
  cml_value_t ci = param(cond, "i", sc);
  param(cond, "acc", SHAPE(CML_DTYPE_F32, 2));
  cml_value_t lt = cml_op_less_than(cond, ci, limit);  // captured: extra loop state
  if (cml_function_return(cond, &lt, 1) != CML_OK) return false;
  if (cml_function_new_closure(f, &body) != CML_OK) return false;
  cml_value_t bi = param(body, "i", sc);
  cml_value_t bacc = param(body, "acc", SHAPE(CML_DTYPE_F32, 2));
  cml_value_t one = cml_constant_scalar_i64(body, CML_DTYPE_I32, 1);
  cml_value_t half = cml_constant_scalar_f64(f, CML_DTYPE_F32, 0.5);
  cml_value_t next[2];
  next[0] = cml_op_add(body, bi, one);
  cml_value_t big_sum = cml_op_reduce_sum(body, big, NULL, 0);        // big: extra loop state
  next[1] = cml_op_add(body, bacc, cml_op_add(body, half, big_sum));  // half: re-emitted
  if (cml_function_return(body, next, 2) != CML_OK) return false;
  cml_value_t init[2] = {cml_constant_scalar_i64(f, CML_DTYPE_I32, 0), acc0};
  cml_value_t outs[2];
  if (!cml_op_while(f, cond, body, init, 2, outs)) return false;
  o[0] = outs[1];
  *n = 1;
  return true;
}
CASE(if_with_captures) {
  UNUSED_B;
  cml_shape_t sc = cml_shape_scalar(CML_DTYPE_I32);
  cml_value_t n0 = param(f, "n", sc);
  cml_function_t *then_b = NULL, *else_b = NULL;
  cml_value_t p = cml_op_greater_than(f, n0, cml_constant_scalar_i64(f, CML_DTYPE_I32, 0));
  if (cml_function_new_closure(f, &then_b) != CML_OK) return false;
  cml_value_t t = cml_op_mul(then_b, n0, n0);
  if (cml_function_return(then_b, &t, 1) != CML_OK) return false;
  if (cml_function_new_closure(f, &else_b) != CML_OK) return false;
  cml_value_t e = cml_op_neg(else_b, n0);
  if (cml_function_return(else_b, &e, 1) != CML_OK) return false;
  *n = 1;
  return cml_op_if(f, p, then_b, else_b, &o[0]);
}
// while (i < n) i = (i < 3) ? i + 1 : i * 2, the branches capturing the body's parameter.
CASE(if_inside_while_body) {
  UNUSED_B;
  cml_shape_t sc = cml_shape_scalar(CML_DTYPE_I32);
  cml_value_t n0 = param(f, "n", sc);
  cml_function_t *cond = NULL, *body = NULL, *then_b = NULL, *else_b = NULL;
  if (cml_function_new_closure(f, &cond) != CML_OK) return false;
  cml_value_t ci = param(cond, "i", sc);
  cml_value_t lt = cml_op_less_than(cond, ci, n0);
  if (cml_function_return(cond, &lt, 1) != CML_OK) return false;
  if (cml_function_new_closure(f, &body) != CML_OK) return false;
  cml_value_t bi = param(body, "i", sc);
  cml_value_t three = cml_constant_scalar_i64(body, CML_DTYPE_I32, 3);
  cml_value_t small = cml_op_less_than(body, bi, three);
  if (cml_function_new_closure(body, &then_b) != CML_OK) return false;
  cml_value_t one = cml_constant_scalar_i64(then_b, CML_DTYPE_I32, 1);
  cml_value_t t = cml_op_add(then_b, bi, one);
  if (cml_function_return(then_b, &t, 1) != CML_OK) return false;
  if (cml_function_new_closure(body, &else_b) != CML_OK) return false;
  cml_value_t e = cml_op_add(else_b, bi, bi);
  if (cml_function_return(else_b, &e, 1) != CML_OK) return false;
  cml_value_t next = 0;
  if (!cml_op_if(body, small, then_b, else_b, &next)) return false;
  if (cml_function_return(body, &next, 1) != CML_OK) return false;
  cml_value_t i0 = cml_constant_scalar_i64(f, CML_DTYPE_I32, 0);
  *n = 1;
  return cml_op_while(f, cond, body, &i0, 1, o);
}
CASE(sort_two_operands_stable) {
  UNUSED_B;
  cml_value_t p_keys = param(f, "keys", SHAPE(CML_DTYPE_F32, 2, 4));
  cml_value_t p_vals = param(f, "vals", SHAPE(CML_DTYPE_I32, 2, 4));
  cml_value_t ins[2] = {p_keys, p_vals};
  cml_function_t* cmp = NULL;
  if (cml_function_new_closure(f, &cmp) != CML_OK) return false;
  cml_value_t k0 = param(cmp, "k0", cml_shape_scalar(CML_DTYPE_F32));
  cml_value_t k1 = param(cmp, "k1", cml_shape_scalar(CML_DTYPE_F32));
  param(cmp, "v0", cml_shape_scalar(CML_DTYPE_I32));
  param(cmp, "v1", cml_shape_scalar(CML_DTYPE_I32));
  cml_value_t lt = cml_op_less_than_total_order(cmp, k0, k1);
  if (cml_function_return(cmp, &lt, 1) != CML_OK) return false;
  *n = 2;
  return cml_op_sort(f, cmp, 1, true, ins, 2, o);
}

// Fused ops, as the XLA backend receives them: decomposed by the core.
CASE(fused_softmax) {
  UNUSED_B;
  o[0] = cml_op_fused_softmax(f, param(f, "x", SHAPE(CML_DTYPE_F32, 2, 3)), -1);
  *n = 1;
  return o[0];
}
CASE(fused_layer_norm) {
  UNUSED_B;
  cml_value_t g = param(f, "gamma", SHAPE(CML_DTYPE_F32, 3));
  o[0] = cml_op_fused_layer_norm(f, param(f, "x", SHAPE(CML_DTYPE_F32, 2, 3)), (int64_t[]){-1}, 1,
                                 1e-5, g, g);
  *n = 1;
  return o[0];
}
CASE(fused_gelu) {
  UNUSED_B;
  cml_value_t x = param(f, "x", SHAPE(CML_DTYPE_F32, 3));
  o[0] = cml_op_fused_gelu(f, x, true);
  o[1] = cml_op_fused_gelu(f, x, false);
  *n = 2;
  return o[0] && o[1];
}
CASE(fused_dense) {
  UNUSED_B;
  cml_dense_config_t dc;
  cml_dense_config_init(&dc);
  dc.activation = CML_ACTIVATION_RELU;
  cml_value_t p_x = param(f, "x", SHAPE(CML_DTYPE_F32, 2, 3));
  cml_value_t p_w = param(f, "w", SHAPE(CML_DTYPE_F32, 3, 4));
  cml_value_t p_bias = param(f, "bias", SHAPE(CML_DTYPE_F32, 4));
  o[0] = cml_op_fused_dense(f, p_x, p_w, p_bias, &dc);
  *n = 1;
  return o[0];
}
CASE(fused_sdpa) {
  UNUSED_B;
  cml_sdpa_config_t sc;
  cml_sdpa_config_init(&sc);
  // Not causal: the core builds the causal mask's two iotas as the arguments of one call, in
  // an order that differs between compilers (src/core/fused.c), and a golden must not.
  cml_value_t q = param(f, "q", SHAPE(CML_DTYPE_F32, 1, 2, 3, 4));
  cml_value_t k = param(f, "k", SHAPE(CML_DTYPE_F32, 1, 1, 3, 4));
  sc.mask = param(f, "mask", SHAPE(CML_DTYPE_BOOL, 3, 3));
  o[0] = cml_op_fused_sdpa(f, q, k, k, CML_ATTENTION_LAYOUT_BHSD, &sc, NULL, NULL);
  *n = 1;
  return o[0];
}
CASE(fused_attention_qkv_projection) {
  UNUSED_B;
  cml_value_t x = param(f, "x", SHAPE(CML_DTYPE_F32, 2, 3));
  cml_value_t w = param(f, "w", SHAPE(CML_DTYPE_F32, 3, 8));
  cml_value_t bq = param(f, "bq", SHAPE(CML_DTYPE_F32, 4));
  *n = 3;
  return cml_op_fused_attention_qkv_projection(f, x, w, bq, CML_VALUE_INVALID, CML_VALUE_INVALID, 4,
                                               2, o);
}
// Quantized ops decompose into bit operations (cml/fused.h); Q4_0 and Q8_0 keep the text short.
CASE(fused_quantized_dense_q4_0) {
  UNUSED_B;
  cml_quantization_t q;
  cml_quantization_init(&q);
  q.scheme = CML_QUANT_GGML;
  q.ggml_type = CML_GGML_Q4_0;
  cml_value_t x = param(f, "x", SHAPE(CML_DTYPE_F32, 2, 32));
  cml_value_t w = param(f, "w", SHAPE(CML_DTYPE_U8, 3, 18));
  cml_value_t bias = param(f, "bias", SHAPE(CML_DTYPE_F32, 3));
  o[0] = cml_op_fused_quantized_dense(f, x, w, bias, &q, CML_ACTIVATION_RELU);
  *n = 1;
  return o[0];
}
CASE(quantized_embedding_lookup_q8_0) {
  UNUSED_B;
  cml_quantization_t q;
  cml_quantization_init(&q);
  q.scheme = CML_QUANT_GGML;
  q.ggml_type = CML_GGML_Q8_0;
  cml_value_t data = param(f, "data", SHAPE(CML_DTYPE_U8, 4, 34));
  cml_value_t idx = param(f, "indices", SHAPE(CML_DTYPE_I32, 2, 1));
  o[0] = cml_op_quantized_embedding_lookup(f, data, idx, &q);
  *n = 1;
  return o[0];
}

// Collectives: SPMD modules on 4 device slots (cml_builder_spmd before any parameter).
static const int32_t kPairsOf4[4] = {0, 1, 2, 3};
static const cml_replica_groups_t kGroups2x2 = {kPairsOf4, 2, 2};
static const int32_t kStrided[4] = {0, 2, 1, 3};
static const cml_replica_groups_t kGroupsStrided = {kStrided, 2, 2};

// Several operands of mixed dtypes: one all_reduce per dtype, results back in operand order.
CASE(collective_all_reduce_mixed_dtypes) {
  if (cml_builder_spmd(b, 4) != CML_OK) return false;
  cml_value_t in[4];
  in[0] = param(f, "x", SHAPE(CML_DTYPE_F32, 2));
  in[1] = param(f, "y", SHAPE(CML_DTYPE_I32, 3));
  in[2] = param(f, "z", SHAPE(CML_DTYPE_F32, 2, 2));
  in[3] = param(f, "w", SHAPE(CML_DTYPE_BF16, 2));
  *n = 4;
  return cml_op_all_reduce(f, in, 4, CML_REDUCE_SUM, &kGroups2x2, o);
}
// One body per reduction type.
CASE(collective_all_reduce_types) {
  if (cml_builder_spmd(b, 4) != CML_OK) return false;
  cml_value_t x = param(f, "x", SHAPE(CML_DTYPE_F32, 2));
  cml_value_t y = param(f, "y", SHAPE(CML_DTYPE_I8, 2));
  bool ok = cml_op_all_reduce(f, &x, 1, CML_REDUCE_MAX, NULL, &o[0]) &&
            cml_op_all_reduce(f, &y, 1, CML_REDUCE_MIN, &kGroupsStrided, &o[1]) &&
            cml_op_all_reduce(f, &x, 1, CML_REDUCE_PRODUCT, &kGroups2x2, &o[2]);
  *n = 3;
  return ok;
}
CASE(collective_all_gather) {
  if (cml_builder_spmd(b, 4) != CML_OK) return false;
  o[0] = cml_op_all_gather(f, param(f, "x", SHAPE(CML_DTYPE_F32, 2, 3)), 1, &kGroups2x2);
  *n = 1;
  return o[0];
}
CASE(collective_reduce_scatter) {
  if (cml_builder_spmd(b, 4) != CML_OK) return false;
  o[0] = cml_op_reduce_scatter(f, param(f, "x", SHAPE(CML_DTYPE_I32, 4, 3)), CML_REDUCE_SUM, 0,
                               &kGroupsStrided);
  *n = 1;
  return o[0];
}
CASE(collective_all_to_all) {
  if (cml_builder_spmd(b, 4) != CML_OK) return false;
  o[0] = cml_op_all_to_all(f, param(f, "x", SHAPE(CML_DTYPE_F32, 2, 4)), 1, 0, NULL);
  *n = 1;
  return o[0];
}
CASE(collective_permute_ring) {
  if (cml_builder_spmd(b, 4) != CML_OK) return false;
  static const int32_t kRing[8] = {0, 1, 1, 2, 2, 3, 3, 0};
  o[0] = cml_op_collective_permute(f, param(f, "x", SHAPE(CML_DTYPE_F32, 3)), kRing, 4);
  *n = 1;
  return o[0];
}
// On CPU: a masked all_reduce (collective_broadcast does not compile there); Float32 as bits,
// Bool through Uint8.
CASE(collective_broadcast_cpu_masked) {
  if (cml_builder_spmd(b, 4) != CML_OK) return false;
  static const int32_t kRoots[4] = {1, 0, 3, 2};
  static const cml_replica_groups_t kGroups = {kRoots, 2, 2};
  cml_value_t x = param(f, "x", SHAPE(CML_DTYPE_F32, 2));
  cml_value_t p = param(f, "p", SHAPE(CML_DTYPE_BOOL, 2));
  o[0] = cml_op_collective_broadcast(f, x, &kGroups);
  o[1] = cml_op_collective_broadcast(f, p, NULL);
  *n = 2;
  return o[0] && o[1];
}
// Other plugins get the real op.
CASE(collective_broadcast_cuda) {
  if (cml_builder_spmd(b, 4) != CML_OK) return false;
  o[0] = cml_op_collective_broadcast(f, param(f, "x", SHAPE(CML_DTYPE_F32, 2)), &kGroups2x2);
  *n = 1;
  return o[0];
}
CASE(collective_replica_id) {
  if (cml_builder_spmd(b, 4) != CML_OK) return false;
  o[0] = cml_op_replica_id(f);
  *n = 1;
  return o[0];
}
CASE(collective_partition_id) {
  if (cml_builder_spmd(b, 4) != CML_OK) return false;
  o[0] = cml_op_partition_id(f);
  *n = 1;
  return o[0];
}
// AutoSharding: Shardy meshes (device_ids only for a non-identity assignment) and a closed
// sharding on every parameter and result (zeroed spec: replicated).
CASE(auto_sharding_meshes_and_shardings) {
  static const char* const kAxes[2] = {"data", "model"};
  static const char* const kOne[1] = {"x"};
  cml_mesh_t *grid = NULL, *line = NULL;
  bool ok = cml_mesh_create("grid", kAxes, (int64_t[]){2, 2}, 2, &grid) == CML_OK &&
            cml_mesh_create("line", kOne, (int64_t[]){4}, 1, &line) == CML_OK &&
            cml_mesh_set_device_assignment(line, (int32_t[]){3, 2, 1, 0}, 4) == CML_OK;
  const cml_mesh_t* meshes[2] = {grid, line};
  ok = ok && cml_builder_auto_sharding(b, meshes, 2) == CML_OK;
  cml_sharding_t sx, sw, sv, so;
  ok = ok && cml_sharding_make(grid, (const char*[]){"data", NULL}, 2, &sx) == CML_OK &&
       cml_sharding_make(grid, (const char*[]){NULL, "model"}, 2, &sw) == CML_OK &&
       cml_sharding_make(line, (const char*[]){"x"}, 1, &sv) == CML_OK &&
       cml_sharding_make(grid, (const char*[]){"data", "model"}, 2, &so) == CML_OK;
  if (ok) {
    cml_shape_t xs = SHAPE(CML_DTYPE_F32, 4, 3), ws = SHAPE(CML_DTYPE_F32, 3, 2),
                vs = SHAPE(CML_DTYPE_F32, 8), ss = cml_shape_scalar(CML_DTYPE_F32);
    cml_value_t x = cml_parameter_sharded(f, "x", &xs, &sx);
    cml_value_t w = cml_parameter_sharded(f, "w", &ws, &sw);
    cml_value_t v = cml_parameter_sharded(f, "v", &vs, &sv);
    cml_value_t s = cml_parameter_sharded(f, "s", &ss, NULL);
    cml_value_t y = cml_op_dot(f, x, w);
    cml_value_t vs2 = cml_op_mul(f, v, s);
    cml_value_t outs[3] = {y, vs2, y};
    cml_sharding_t shardings[3];
    memset(shardings, 0, sizeof shardings);  // [2] stays zeroed: replicated
    shardings[0] = so;
    shardings[1] = sv;
    ok = cml_function_return_sharded(f, outs, 3, shardings) == CML_OK;
    *n = RETURNED;  // the builder keeps its own copies of the meshes
  }
  cml_mesh_destroy(grid);
  cml_mesh_destroy(line);
  return ok;
}

#define C(name, op) \
  { #name, CML_OP_##op, case_##name, false, NULL }
static const golden_case_t kCustomCases[] = {
    C(parameter, PARAMETER),
    C(constant, CONSTANT),
    C(div_f32_in_f64, DIV),
    C(div_f64_barriers, DIV),
    C(div_i32, DIV),
    C(pow_i32, POW),
    C(max_i32_min_u8, MAX),
    C(exp_f16_in_f32, EXP),
    C(atan2_bf16_in_f32, ATAN2),
    C(abs_sign_c64, ABS),
    C(real_imag_f32, REAL),
    C(scalar_and_size_one_broadcast, ADD),
    C(reduce_max_f32_sum_c64_and_i8, REDUCE_MAX),
    C(convert_dtype, CONVERT_DTYPE),
    C(bitcast, BITCAST),
    C(broadcast_in_dim, BROADCAST_IN_DIM),
    C(clamp, CLAMP),
    C(concatenate, CONCATENATE),
    C(reshape, RESHAPE),
    C(transpose, TRANSPOSE),
    C(reverse, REVERSE),
    C(slice, SLICE),
    C(pad, PAD),
    C(iota, IOTA),
    C(where, WHERE),
    C(dynamic_slice, DYNAMIC_SLICE),
    C(dynamic_update_slice, DYNAMIC_UPDATE_SLICE),
    C(gather, GATHER),
    C(scatter_sum, SCATTER_SUM),
    C(scatter_max, SCATTER_MAX),
    C(scatter_min, SCATTER_MIN),
    C(reduce_window_sum_padded_dilated, REDUCE_WINDOW),
    C(reduce_window_max_min_product, REDUCE_WINDOW),
    C(select_and_scatter_max, SELECT_AND_SCATTER_MAX),
    C(select_and_scatter_min, SELECT_AND_SCATTER_MIN),
    C(select_and_scatter_sum, SELECT_AND_SCATTER_SUM),
    C(conv_general_padding_strides_dilations, CONV_GENERAL),
    C(conv_general_groups_nchw, CONV_GENERAL),
    C(dot, DOT),
    C(dot_general_batch_and_int8, DOT_GENERAL),
    C(arg_min_max, ARG_MIN_MAX),
    C(rng_bit_generator, RNG_BIT_GENERATOR),
    C(fft, FFT),
    C(batch_norm_inference, BATCH_NORM_INFERENCE),
    C(batch_norm_training, BATCH_NORM_TRAINING),
    C(batch_norm_gradient, BATCH_NORM_GRADIENT),
    C(optimization_barrier, OPTIMIZATION_BARRIER),
    C(scheduling_barrier, SCHEDULING_BARRIER),
    C(call_named_function, CALL),
    C(call_closure_with_captures, CAPTURED_VALUE),
    C(while_with_captures, WHILE),
    C(if_with_captures, IF),
    C(if_inside_while_body, IF),
    C(sort_two_operands_stable, SORT),
    C(fused_softmax, FUSED_SOFTMAX),
    C(fused_layer_norm, FUSED_LAYER_NORM),
    C(fused_gelu, FUSED_GELU),
    C(fused_dense, FUSED_DENSE),
    // src/core/fused.c builds e.g. `where(is_finite(m), m, scalar(0))` in argument order.
    {"fused_sdpa", CML_OP_FUSED_SDPA, case_fused_sdpa, true, NULL},
    C(fused_attention_qkv_projection, FUSED_ATTENTION_QKV_PROJECTION),
    C(collective_all_reduce_mixed_dtypes, ALL_REDUCE),
    C(collective_all_reduce_types, ALL_REDUCE),
    C(collective_all_gather, ALL_GATHER),
    C(collective_reduce_scatter, REDUCE_SCATTER),
    C(collective_all_to_all, ALL_TO_ALL),
    C(collective_permute_ring, COLLECTIVE_PERMUTE),
    C(collective_broadcast_cpu_masked, COLLECTIVE_BROADCAST),
    {"collective_broadcast_cuda", CML_OP_COLLECTIVE_BROADCAST, case_collective_broadcast_cuda,
     false, "cuda"},
    C(collective_replica_id, REPLICA_ID),
    C(collective_partition_id, PARTITION_ID),
    C(auto_sharding_meshes_and_shardings, DOT),
    // src/core/fused_quant.c builds operands as the arguments of one call.
    {"fused_quantized_dense_q4_0", CML_OP_FUSED_QUANTIZED_DENSE, case_fused_quantized_dense_q4_0,
     true, NULL},
    {"quantized_embedding_lookup_q8_0", CML_OP_QUANTIZED_EMBEDDING_LOOKUP,
     case_quantized_embedding_lookup_q8_0, true, NULL},
};
#undef C

// Ops the emitter never receives, and why. Keep this list short: anything XLA can run needs a
// golden case instead.
typedef struct not_lowered_t {
  cml_op_t op;
  const char* why;
} not_lowered_t;
static const not_lowered_t kNotLowered[] = {
    {CML_OP_INVALID, "not an op"},
    {CML_OP_DYNAMIC_DIMENSION_SIZE, "dynamic shapes: UNIMPLEMENTED everywhere"},
    {CML_OP_DYNAMIC_SHAPE, "dynamic shapes: UNIMPLEMENTED everywhere"},
    {CML_OP_DYNAMIC_RESHAPE, "dynamic shapes: UNIMPLEMENTED everywhere"},
    {CML_OP_BLOCK_FOR_DOT_GENERAL, "internal to the c backend"},
    {CML_OP_FUSED_SDPA_VJP, "fused op without a public builder yet"},
};

//===--- the case list ---===//

#define MAX_CASES 256
static golden_case_t g_cases[MAX_CASES];
static char g_generic_names[CML_OP_COUNT][64];
static size_t g_case_count;

static bool is_not_lowered(cml_op_t op) {
  for (size_t i = 0; i < sizeof kNotLowered / sizeof kNotLowered[0]; ++i) {
    if (kNotLowered[i].op == op) return true;
  }
  return false;
}

// Generic cases for every element-wise and reduce op, then the custom ones.
static void collect_cases(void) {
  g_case_count = 0;
#define CML_OP(ENUM, SEED, lower, KIND, GROUP, TRAITS, DSET, OUT)                          \
  if (CML_OPK_##KIND == CML_OPK_UNARY || CML_OPK_##KIND == CML_OPK_BINARY ||               \
      CML_OPK_##KIND == CML_OPK_COMPARE || CML_OPK_##KIND == CML_OPK_REDUCE) {             \
    snprintf(g_generic_names[CML_OP_##ENUM], sizeof g_generic_names[0], "%s_%s", #lower,   \
             cml_dtype_name(generic_dtype(CML_OP_##ENUM)));                                \
    g_cases[g_case_count++] =                                                              \
        (golden_case_t){g_generic_names[CML_OP_##ENUM], CML_OP_##ENUM, NULL, false, NULL}; \
  }
#include "cml/ops.def"
  for (size_t i = 0; i < sizeof kCustomCases / sizeof kCustomCases[0]; ++i) {
    g_cases[g_case_count++] = kCustomCases[i];
  }
}

//===--- building and emitting ---===//

// A fake backend advertising every op but the fused ones (so the core decomposes those, as it
// does for the xla backend) and every dtype.
static fake_backend_t* golden_backend(void) {
  fake_backend_t* fb = fake_backend_new();
  if (!fb) return NULL;
  // SPMD and AutoSharding modules on 4 device slots, as on xla:cpu.
  fb->base.device_count = 4;
  fb->base.capabilities.distributions = (1u << CML_DISTRIBUTION_NONE) |
                                        (1u << CML_DISTRIBUTION_SPMD) |
                                        (1u << CML_DISTRIBUTION_AUTO_SHARDING);
  for (int op = 1; op < CML_OP_COUNT; ++op) {
    if (cml_op_kind((cml_op_t)op) == CML_OPK_FUSED) {
      cml_capabilities_set_op(&fb->base.capabilities, (cml_op_t)op, false);
    }
  }
  return fb;
}

static bool module_has_op(const cml_module_t* m, cml_op_t op) {
  for (uint32_t i = 0; i < m->node_count; ++i) {
    if (m->nodes[i].op == op) return true;
  }
  return false;
}

// Builds case |gc|, checks that its module holds (or, for fused ops, no longer holds) the op it
// covers, and emits it. |*out_text| is malloc'd.
static cml_status_t emit_case(const golden_case_t* gc, char** out_text) {
  *out_text = NULL;
  fake_backend_t* fb = golden_backend();
  if (!fb) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  cml_builder_t* b = NULL;
  cml_status_t st = cml_builder_create(&fb->base, gc->name, &b);
  if (st != CML_OK) {
    cml_backend_release(&fb->base);
    return st;
  }
  cml_function_t* f = cml_builder_main(b);
  cml_value_t outs[8];
  size_t count = 0;
  bool ok = gc->fn ? gc->fn(b, f, outs, &count) : generic_case(gc->op, f, outs, &count);
  st = cml_builder_status(b);
  if (st == CML_OK && !ok) st = cml_status_make(CML_STATUS_INTERNAL, "case %s failed", gc->name);
  if (st == CML_OK && count != RETURNED) st = cml_function_return(f, outs, count);
  cml_executable_t* exe = NULL;
  if (st == CML_OK) st = cml_builder_compile(b, &exe);
  if (st == CML_OK) {
    bool fused = cml_op_kind(gc->op) == CML_OPK_FUSED;
    if (module_has_op(fb->module, gc->op) == fused) {
      st = cml_status_make(CML_STATUS_INTERNAL, "case %s: the module %s %s", gc->name,
                           fused ? "still holds" : "does not hold", cml_op_name(gc->op));
    }
  }
  if (st == CML_OK) {
    cml_xla_emit_options_t opts;
    cml_xla_emit_options_init(&opts);
    opts.donatable_inputs = false;  // shorter goldens; donation is tested elsewhere
    if (gc->platform) opts.platform = gc->platform;
    cml_xla_emit_options_distribution(&opts, fb->module);
    st = cml_xla_emit_stablehlo(fb->module, &opts, out_text);
  }
  if (exe) cml_executable_release(exe);
  cml_builder_destroy(b);
  cml_backend_release(&fb->base);
  return st;
}

static char* golden_path(const char* name) {
  size_t size = strlen(CML_GOLDEN_DIR) + strlen(name) + 16;
  char* p = malloc(size);
  if (p) snprintf(p, size, "%s/%s.mlir", CML_GOLDEN_DIR, name);
  return p;
}

// Reads a whole file (malloc'd, NUL-terminated); NULL when missing.
static char* read_file(const char* path) {
  FILE* fp = fopen(path, "rb");
  if (!fp) return NULL;
  size_t cap = 4096, size = 0;
  char* data = malloc(cap);
  while (data) {
    size_t got = fread(data + size, 1, cap - size - 1, fp);
    size += got;
    if (got == 0) break;
    if (cap - size - 1 == 0) {
      char* grown = realloc(data, cap * 2);
      if (!grown) {
        free(data);
        data = NULL;
        break;
      }
      data = grown;
      cap *= 2;
    }
  }
  fclose(fp);
  if (data) data[size] = '\0';
  return data;
}

static bool write_file(const char* path, const char* text) {
  FILE* fp = fopen(path, "wb");
  if (!fp) return false;
  bool ok = fwrite(text, 1, strlen(text), fp) == strlen(text);
  return fclose(fp) == 0 && ok;
}

// Prints the first differing line of |got| and |want|.
static void print_first_difference(const char* got, const char* want) {
  int line = 1;
  const char *g = got, *w = want;
  while (*g && *g == *w) {
    if (*g == '\n') {
      ++line;
      got = g + 1;
      want = w + 1;
    }
    ++g;
    ++w;
  }
  const char* ge = strchr(got, '\n');
  const char* we = strchr(want, '\n');
  fprintf(stderr, "  line %d:\n    got:  %.*s\n    want: %.*s\n", line,
          (int)(ge ? ge - got : (long)strlen(got)), got, (int)(we ? we - want : (long)strlen(want)),
          want);
}

// |text| with every SSA number ("%12") written as "%N", its lines sorted (malloc'd).
static int compare_lines(const void* a, const void* b) {
  return strcmp(*(const char* const*)a, *(const char* const*)b);
}
static char* order_free_form(const char* text) {
  size_t len = strlen(text);
  char* blank = malloc(len + 1);
  size_t lines = 1;
  for (const char* p = text; *p; ++p) lines += *p == '\n';
  char** starts = malloc(lines * sizeof *starts);
  char* out = malloc(len + lines + 2);
  if (!blank || !starts || !out) {
    free(blank);
    free(starts);
    free(out);
    return NULL;
  }
  size_t k = 0;
  for (const char* p = text; *p;) {
    if (*p == '%' && p[1] >= '0' && p[1] <= '9') {
      blank[k++] = '%';
      blank[k++] = 'N';
      for (++p; *p >= '0' && *p <= '9'; ++p) {
      }
      continue;
    }
    blank[k++] = *p++;
  }
  blank[k] = '\0';
  size_t n = 0;
  for (char* line = strtok(blank, "\n"); line; line = strtok(NULL, "\n")) starts[n++] = line;
  qsort(starts, n, sizeof *starts, compare_lines);
  size_t o = 0;
  for (size_t i = 0; i < n; ++i) {
    size_t l = strlen(starts[i]);
    memcpy(out + o, starts[i], l);
    o += l;
    out[o++] = '\n';
  }
  out[o] = '\0';
  free(blank);
  free(starts);
  return out;
}

// Whether |got| matches the golden |want| for case |gc|.
static bool golden_equal(const golden_case_t* gc, const char* got, const char* want) {
  if (!gc->order_free) return strcmp(got, want) == 0;
  char* a = order_free_form(got);
  char* b = order_free_form(want);
  bool same = a && b && strcmp(a, b) == 0;
  free(a);
  free(b);
  return same;
}

//===--- xla:cpu ---===//

static cml__xla_client_t* g_client;  // set with --xla

// The compile configuration a golden text asks for: its module header's mhlo.num_replicas and
// mhlo.num_partitions (non-portable on devices 0.. when there are several; Shardy when the
// text has sdy.mesh lines).
static cml__xla_compile_config_t golden_config(const char* text, int64_t ids[16]) {
  cml__xla_compile_config_t cc = {.portable = true, .num_replicas = 1, .num_partitions = 1};
  const char* r = strstr(text, "mhlo.num_replicas = ");
  const char* p = strstr(text, "mhlo.num_partitions = ");
  int replicas = r ? atoi(r + strlen("mhlo.num_replicas = ")) : 1;
  int partitions = p ? atoi(p + strlen("mhlo.num_partitions = ")) : 1;
  if (replicas * partitions > 1 && replicas * partitions <= 16) {
    for (int i = 0; i < replicas * partitions; ++i) ids[i] = i;
    cc = (cml__xla_compile_config_t){.num_replicas = replicas,
                                     .num_partitions = partitions,
                                     .use_spmd_partitioning = true,
                                     .use_shardy_partitioner = strstr(text, "sdy.mesh") != NULL,
                                     .device_ids = ids};
  }
  return cc;
}

// Compiles |text| on xla:cpu; with |arg| non-NULL also runs it on one Float32 scalar input
// and writes the Float32 scalar result.
static cml_status_t xla_compile(const char* text, const float* arg, float* out_result) {
  uint8_t options[256];
  size_t options_size = 0;
  int64_t ids[16];
  cml__xla_compile_config_t cc = golden_config(text, ids);
  CML_RETURN_IF_ERROR(cml__xla_compile_options_encode(&cc, options, sizeof options, &options_size));
  cml_pjrt_loaded_executable_t* exe = NULL;
  CML_RETURN_IF_ERROR(cml__xla_compile(g_client, text, strlen(text), options, options_size, &exe));
  cml_status_t st = CML_OK;
  if (arg) {
    cml_shape_t s = cml_shape_scalar(CML_DTYPE_F32);
    cml_pjrt_buffer_t *in = NULL, *out = NULL;
    st = cml__xla_buffer_from_host(g_client, 0, &s, arg, &in);
    int64_t keep = 0;
    if (st == CML_OK) st = cml__xla_execute(g_client, exe, 0, &in, 1, &keep, 1, &out, 1);
    if (st == CML_OK)
      st = cml__xla_buffer_to_host(g_client, out, &s, out_result, sizeof *out_result);
    if (in) cml__xla_buffer_destroy(g_client, in);
    if (out) cml__xla_buffer_destroy(g_client, out);
  }
  cml__xla_executable_destroy(g_client, exe);
  return st;
}

//===--- tests ---===//

// Every case's text equals its golden file (CML_UPDATE_GOLDEN=1: rewrites the files), and
// with --xla every golden text compiles on xla:cpu.
TEST(goldens_match) {
  const char* update = getenv("CML_UPDATE_GOLDEN");
  bool updating = update && *update && strcmp(update, "0") != 0;
  int mismatches = 0;
  for (size_t i = 0; i < g_case_count; ++i) {
    const golden_case_t* gc = &g_cases[i];
    char* text = NULL;
    cml_status_t st = emit_case(gc, &text);
    if (st != CML_OK) {
      fprintf(stderr, "case %s: %s\n", gc->name, cml_status_message(st));
      cml_status_free(st);
      ++mismatches;
      continue;
    }
    char* path = golden_path(gc->name);
    ASSERT_TRUE(path != NULL);
    char* want = read_file(path);
    if (updating) {
      if (!want || !golden_equal(gc, text, want)) {
        if (!write_file(path, text)) {
          fprintf(stderr, "case %s: cannot write %s\n", gc->name, path);
          ++mismatches;
        } else {
          fprintf(stderr, "updated %s\n", path);
        }
      }
    } else if (!want) {
      fprintf(stderr, "case %s: no golden file %s (run with CML_UPDATE_GOLDEN=1)\n", gc->name,
              path);
      ++mismatches;
    } else if (!golden_equal(gc, text, want)) {
      fprintf(stderr, "case %s: the emitted text differs from %s:\n", gc->name, path);
      print_first_difference(text, want);
      ++mismatches;
    }
    // Goldens for other platforms (collective_broadcast_cuda) are text comparisons only.
    if (g_client && !updating && want && !gc->platform) {
      st = xla_compile(want, NULL, NULL);
      if (st != CML_OK) {
        fprintf(stderr, "case %s: xla:cpu rejects the golden text: %s\n", gc->name,
                cml_status_message(st));
        cml_status_free(st);
        ++mismatches;
      }
    }
    free(want);
    free(path);
    free(text);
  }
  ASSERT_EQ_INT(mismatches, 0);
}

// Every op of ops.def has a golden case or a reason not to; no golden file lacks its case.
TEST(every_op_has_a_golden) {
  int missing = 0;
  for (int op = 0; op < CML_OP_COUNT; ++op) {
    bool covered = false;
    for (size_t i = 0; i < g_case_count; ++i) covered = covered || (int)g_cases[i].op == op;
    bool excluded = is_not_lowered((cml_op_t)op);
    if (covered == excluded) {
      fprintf(stderr, "%s: %s\n", cml_op_name((cml_op_t)op),
              covered ? "has a golden case but is listed in kNotLowered"
                      : "has no golden case (add one to kCustomCases, or a reason to "
                        "kNotLowered)");
      ++missing;
    }
  }
  // Case names are unique (each is a file).
  for (size_t i = 0; i < g_case_count; ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (strcmp(g_cases[i].name, g_cases[j].name) == 0) {
        fprintf(stderr, "duplicate case name %s\n", g_cases[i].name);
        ++missing;
      }
    }
  }
  ASSERT_EQ_INT(missing, 0);
}

// The golden check fails on a difference: a changed text is reported, not accepted.
TEST(a_changed_text_is_a_mismatch) {
  char* text = NULL;
  ASSERT_STATUS_OK(emit_case(&kCustomCases[0], &text));
  char* path = golden_path(kCustomCases[0].name);
  char* want = read_file(path);
  free(path);
  bool same = want && strcmp(want, text) == 0;
  if (want) want[strlen(want) / 2] ^= 1;
  bool still_same = want && strcmp(want, text) == 0;
  free(want);
  free(text);
  ASSERT_TRUE(same || getenv("CML_UPDATE_GOLDEN"));
  ASSERT_FALSE(still_same);
}

// --xla: parameter names that used to collide (INTERNAL from xla:cpu) run, through the public
// API, and each parameter reaches its own place.
TEST(xla_adversarial_names_run) {
  if (!g_client) return;
  cml_backend_t* be = NULL;
  ASSERT_STATUS_OK(cml_backend_new(&be));
  static const char* const kNames[] = {"a_b", "a_b_2", "a b",   "arg1",     "%arg0",
                                       "0",   "@main", "q\"\\", "\xcf\x80", "x"};
  enum { kCount = sizeof kNames / sizeof kNames[0] };
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(be, "names \"and\" \\ more", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t sc = cml_shape_scalar(CML_DTYPE_F32);
  cml_value_t sum = 0;
  for (int i = 0; i < kCount; ++i) {
    cml_value_t p = cml_parameter(f, kNames[i], &sc);
    sum = sum ? cml_op_add(f, cml_op_add(f, sum, sum), p) : p;  // sum * 2 + p
  }
  // A named function whose name normalizes like another's.
  cml_function_t *g1 = NULL, *g2 = NULL;
  cml_status_t st = cml_builder_new_function(b, "f.x", &g1);
  if (st == CML_OK) st = cml_builder_new_function(b, "f_x", &g2);
  if (st == CML_OK) {
    cml_value_t x1 = cml_parameter(g1, "x", &sc), x2 = cml_parameter(g2, "x", &sc);
    cml_value_t y1 = cml_op_add(g1, x1, x1), y2 = cml_op_mul(g2, x2, x2);
    st = cml_function_return(g1, &y1, 1);
    if (st == CML_OK) st = cml_function_return(g2, &y2, 1);
  }
  cml_value_t outs[3] = {sum, 0, 0};
  if (st == CML_OK &&
      (!cml_op_call(f, g1, &sum, 1, &outs[1]) || !cml_op_call(f, g2, &sum, 1, &outs[2]))) {
    st = cml_builder_status(b);
  }
  if (st == CML_OK) st = cml_function_return(f, outs, 3);
  cml_executable_t* exe = NULL;
  if (st == CML_OK) st = cml_builder_compile(b, &exe);
  cml_builder_destroy(b);
  cml_buffer_t* in[kCount] = {NULL};
  float want = 0;
  for (int i = 0; i < kCount && st == CML_OK; ++i) {
    float v = (float)(i + 1);
    want = want * 2 + v;
    st = cml_buffer_from_host(be, 0, &sc, &v, sizeof v, &in[i]);
  }
  cml_buffer_t* res[3] = {NULL, NULL, NULL};
  if (st == CML_OK) st = cml_executable_execute(exe, in, kCount, NULL, 0, res);
  float got[3] = {0, 0, 0};
  for (int i = 0; i < 3 && st == CML_OK; ++i) {
    st = cml_buffer_copy_to_host(res[i], &got[i], sizeof got[i]);
  }
  for (int i = 0; i < kCount; ++i)
    if (in[i]) cml_buffer_release(in[i]);
  for (int i = 0; i < 3; ++i)
    if (res[i]) cml_buffer_release(res[i]);
  if (exe) cml_executable_release(exe);
  cml_backend_release(be);
  ASSERT_STATUS_OK(st);
  ASSERT_EQ_DBL(got[0], want);
  ASSERT_EQ_DBL(got[1], want + want);
  ASSERT_EQ_DBL(got[2], want * want);
}

// --xla: float Max/Min, as an elementwise op and as a reduction body, emitted for "cpu"
// (TOTALORDER compare) and for "cuda" (FLOAT compare plus the signed-zero fix-up, because XLA's
// CUDA compiler rejects TOTALORDER in reduction bodies), agree on xla:cpu: NaN propagates and
// -0 < +0 in either operand order.
typedef struct minmax_probe_t {
  bool is_max, reduce;
  float x, c;
  uint32_t want_bits;
} minmax_probe_t;

static cml_status_t minmax_run(const minmax_probe_t* p, const char* platform, float* out) {
  fake_backend_t* fb = golden_backend();
  if (!fb) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  cml_builder_t* b = NULL;
  cml_status_t st = cml_builder_create(&fb->base, "minmax", &b);
  if (st == CML_OK) {
    cml_function_t* f = cml_builder_main(b);
    cml_shape_t sc = cml_shape_scalar(CML_DTYPE_F32);
    cml_value_t x = cml_parameter(f, "x", &sc);
    cml_value_t c = cml_constant_scalar_f64(f, CML_DTYPE_F32, p->c);
    cml_value_t r;
    if (p->reduce) {
      const int64_t one[1] = {1}, axis[1] = {0};
      cml_value_t parts[2] = {cml_op_reshape(f, x, one, 1), cml_op_reshape(f, c, one, 1)};
      cml_value_t both = cml_op_concatenate(f, 0, parts, 2);
      r = p->is_max ? cml_op_reduce_max(f, both, axis, 1) : cml_op_reduce_min(f, both, axis, 1);
    } else {
      r = p->is_max ? cml_op_max(f, x, c) : cml_op_min(f, x, c);
    }
    st = cml_function_return(f, &r, 1);
    cml_executable_t* exe = NULL;
    if (st == CML_OK) st = cml_builder_compile(b, &exe);
    char* text = NULL;
    if (st == CML_OK) {
      cml_xla_emit_options_t opts;
      cml_xla_emit_options_init(&opts);
      opts.platform = platform;
      st = cml_xla_emit_stablehlo(fb->module, &opts, &text);
    }
    if (st == CML_OK && strcmp(platform, "cpu") != 0 && strstr(text, "TOTALORDER")) {
      st = cml_status_make(CML_STATUS_INTERNAL, "a TOTALORDER compare emitted for %s", platform);
    }
    if (st == CML_OK) st = xla_compile(text, &p->x, out);
    free(text);
    if (exe) cml_executable_release(exe);
    cml_builder_destroy(b);
  }
  cml_backend_release(&fb->base);
  return st;
}

TEST(xla_float_minmax_on_every_platform_runs) {
  if (!g_client) return;
  const float nan = NAN;
  const minmax_probe_t probes[] = {
      {true, false, -0.0f, 0.0f, 0x00000000u},  {true, false, 0.0f, -0.0f, 0x00000000u},
      {true, false, -0.0f, -0.0f, 0x80000000u}, {false, false, 0.0f, -0.0f, 0x80000000u},
      {false, false, -0.0f, 0.0f, 0x80000000u}, {false, false, 0.0f, 0.0f, 0x00000000u},
      {true, false, 3.0f, -1.0f, 0x40400000u},  {false, false, 3.0f, -1.0f, 0xbf800000u},
      {true, true, -0.0f, 0.0f, 0x00000000u},   {true, true, 0.0f, -0.0f, 0x00000000u},
      {true, true, -0.0f, -0.0f, 0x80000000u},  {false, true, 0.0f, -0.0f, 0x80000000u},
      {false, true, -0.0f, 0.0f, 0x80000000u},  {false, true, 0.0f, 0.0f, 0x00000000u},
      {true, true, -2.0f, 5.0f, 0x40a00000u},   {false, true, -2.0f, 5.0f, 0xc0000000u},
      {true, true, 2.0f, 2.0f, 0x40000000u},    {false, true, -7.0f, -7.0f, 0xc0e00000u},
  };
  const char* const platforms[2] = {"cpu", "cuda"};
  for (int k = 0; k < 2; ++k) {
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; ++i) {
      float got = 0;
      ASSERT_STATUS_OK(minmax_run(&probes[i], platforms[k], &got));
      uint32_t bits;
      memcpy(&bits, &got, sizeof bits);
      if (bits != probes[i].want_bits) {
        fprintf(stderr, "%s %s%s(%g, %g): got 0x%08x, want 0x%08x\n", platforms[k],
                probes[i].reduce ? "Reduce" : "", probes[i].is_max ? "Max" : "Min",
                (double)probes[i].x, (double)probes[i].c, (unsigned)bits,
                (unsigned)probes[i].want_bits);
      }
      ASSERT_EQ_INT(bits, probes[i].want_bits);
    }
    // NaN in either place propagates.
    for (int m = 0; m < 4; ++m) {
      minmax_probe_t p = {m & 1, m >> 1, nan, 1.0f, 0};
      float got = 0;
      ASSERT_STATUS_OK(minmax_run(&p, platforms[k], &got));
      ASSERT_TRUE(isnan(got));
      p.x = 1.0f;
      p.c = nan;
      ASSERT_STATUS_OK(minmax_run(&p, platforms[k], &got));
      ASSERT_TRUE(isnan(got));
    }
  }
}

// --xla: a Call chain and nested If closures exactly at the emitter's limit compile and run
// on xla:cpu with the right result; one level more gets INVALID_ARGUMENT, not a crash.
TEST(xla_nesting_at_the_limit_runs) {
  if (!g_client) return;
  const uint32_t limit = CML_XLA_EMIT_MAX_NESTING_DEPTH;
  cml_xla_emit_options_t opts;
  cml_xla_emit_options_init(&opts);
  for (int kind = 0; kind < 2; ++kind) {
    for (uint32_t depth = limit; depth <= limit + 1; ++depth) {
      chain_ir_t ir;
      ASSERT_TRUE(kind == 0 ? chain_ir_make_calls(&ir, depth, false)
                            : chain_ir_make_ifs(&ir, depth));
      char* text = NULL;
      cml_status_t st = cml_xla_emit_stablehlo(&ir.module, &opts, &text);
      chain_ir_destroy(&ir);
      if (depth > limit) {
        ASSERT_STATUS_CODE(st, CML_STATUS_INVALID_ARGUMENT);
        continue;
      }
      ASSERT_STATUS_OK(st);
      float x = 1.5f, got = 0;
      st = xla_compile(text, &x, &got);
      free(text);
      ASSERT_STATUS_OK(st);
      // Calls: 2x + depth - 1; Ifs: 2x + depth.
      float want = 2 * x + (float)depth - (kind == 0 ? 1.0f : 0.0f);
      ASSERT_EQ_DBL(got, want);
    }
  }
}

// --xla: on a thread with a 2 MiB stack (where XLA itself crashes on a chain of about 150-200
// calls), the emitter refuses the limit's 256 levels with RESOURCE_EXHAUSTED, and what it
// accepts there (80 levels, near the most it accepts) compiles and runs.
typedef struct small_stack_run_t {
  uint32_t depth;
  cml_status_t emit_status, run_status;
  float result;
} small_stack_run_t;

static void* small_stack_thread(void* arg) {
  small_stack_run_t* run = arg;
  chain_ir_t ir;
  if (!chain_ir_make_calls(&ir, run->depth, false)) {
    run->emit_status = cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
    return NULL;
  }
  cml_xla_emit_options_t opts;
  cml_xla_emit_options_init(&opts);
  char* text = NULL;
  run->emit_status = cml_xla_emit_stablehlo(&ir.module, &opts, &text);
  chain_ir_destroy(&ir);
  if (run->emit_status == CML_OK) {
    float x = 1.5f;
    run->run_status = xla_compile(text, &x, &run->result);
  }
  free(text);
  return NULL;
}

TEST(xla_small_thread_stack) {
  if (!g_client) return;
  for (int k = 0; k < 2; ++k) {
    small_stack_run_t run = {k == 0 ? (uint32_t)CML_XLA_EMIT_MAX_NESTING_DEPTH : 80u, CML_OK,
                             CML_OK, 0};
    // A stack of our own: glibc may hand a new thread a larger cached stack otherwise.
    size_t size = 2u << 20;
    void* stack = NULL;
    ASSERT_EQ_INT(posix_memalign(&stack, 1u << 16, size), 0);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstack(&attr, stack, size);
    pthread_t thread;
    int rc = pthread_create(&thread, &attr, small_stack_thread, &run);
    pthread_attr_destroy(&attr);
    if (rc == 0) pthread_join(thread, NULL);
    free(stack);
    ASSERT_EQ_INT(rc, 0);
    if (k == 0) {
      ASSERT_STATUS_CODE(run.emit_status, CML_STATUS_RESOURCE_EXHAUSTED);
    } else {
      ASSERT_STATUS_OK(run.emit_status);
      ASSERT_STATUS_OK(run.run_status);
      ASSERT_EQ_DBL(run.result, 2 * 1.5f + 79);
    }
  }
}

int main(int argc, char** argv) {
  collect_cases();
  bool xla = argc > 1 && strcmp(argv[1], "--xla") == 0;
  const char* only = argc > (xla ? 2 : 1) ? argv[xla ? 2 : 1] : NULL;
  if (xla) {
    cml_xla_enable_auto_install(false);  // tests never download
    cml__xla_search_t search;
    cml__xla_search_from_env(&search);
    char* path = NULL;
    cml_status_t st = cml__xla_find_plugin(&search, "cpu", &path);
    const cml__xla_plugin_t* plugin = NULL;
    if (st == CML_OK) st = cml__xla_plugin_load(path, &plugin);
    free(path);
    if (st != CML_OK) {
      printf("skipped: no usable XLA CPU plugin (%s)\n", cml_status_message(st));
      cml_status_free(st);
      return 77;
    }
    st = cml__xla_client_create(plugin, NULL, 0, &g_client);
    if (st != CML_OK) {
      fprintf(stderr, "xla:cpu client: %s\n", cml_status_message(st));
      cml_status_free(st);
      return 1;
    }
    setenv("GOMLX_BACKEND", "xla:cpu", 1);
  }
  static const test_entry_t tests[] = {
      TEST_ENTRY(goldens_match),
      TEST_ENTRY(every_op_has_a_golden),
      TEST_ENTRY(a_changed_text_is_a_mismatch),
      TEST_ENTRY(xla_adversarial_names_run),
      TEST_ENTRY(xla_float_minmax_on_every_platform_runs),
      TEST_ENTRY(xla_nesting_at_the_limit_runs),
      TEST_ENTRY(xla_small_thread_stack),
  };
  int failures = 0, ran = 0;
  for (size_t i = 0; i < sizeof tests / sizeof tests[0]; ++i) {
    if (only && strcmp(only, tests[i].name) != 0) continue;
    int failed = 0;
    tests[i].fn(&failed);
    ++ran;
    printf("%s %s\n", failed ? "FAIL" : "ok  ", tests[i].name);
    failures += failed;
  }
  if (g_client) cml__xla_client_destroy(g_client);
  printf("%d passed, %d failed, 0 skipped\n", ran - failures, failures);
  return (failures || ran == 0) ? 1 : 0;
}
