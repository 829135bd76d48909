// SPDX-License-Identifier: Apache-2.0
// bench/bench_ops.c: single ops that models built from primitives spend time in, each in f32,
// bf16 and f16: reductions over each axis, transposes, pooling (ReduceWindow, NHWC and NCHW)
// and its gradient (SelectAndScatter), Clamp, strided slices, batched products, gathers; c vs
// Where with a compare, conversions between 16-bit floats and to i32, a row scatter-add and a
// 3x3 convolution, Floor, Expm1, Log1p, Sin, a ReLU mask through a Bool conversion and Int32
// Div/Rem, the tanh GELU with and without a bias, reductions and ArgMax over short rows, global
// pooling, NHWC pooling of 3 channels, a pool by reshape, a 3x3 stencil of shifted Slices,
// pairs scaled by a broadcast, a count down columns, batched 3x3 products; c vs
// c:reference vs xla:cpu. Written to find the shapes where a dtype or a layout falls back to slow
// generic code (bench/README.md, "Single ops in three dtypes"). The rate column is the input bytes
// (the first operand) per second.
#include <string.h>

#include "bench/bench_common.h"

enum { OP_ROWS = 1024, OP_COLS = 1024 };

enum {
  K_SUM_AXIS1,
  K_SUM_AXIS0,
  K_MAX_AXIS0,
  K_SUM_ALL,
  K_SUM_NHW,
  K_TRANSPOSE,
  K_TRANSPOSE_0213,
  K_MAXPOOL_NHWC,
  K_MAXPOOL_NCHW,
  K_AVGPOOL_NHWC,
  K_MAXPOOL_GRAD,
  K_CLAMP,
  K_TANH,
  K_SLICE_STRIDED,
  K_BATCH_DOT,
  K_GATHER_ROWS,
  K_ARGMAX,
  K_WHERE,
  K_CONVERT_16,
  K_CONVERT_I32,
  K_SCATTER_ROWS,
  K_CONV3X3,
  K_FLOOR,
  K_EXPM1,
  K_LOG1P,
  K_SIN,
  K_RELU_MASK,
  K_I32_DIVREM,
  K_GELU_TANH,
  K_BIAS_GELU,
  K_GATHER_ELEMS,
  K_GATHER_ROWS8,
  K_SCATTER_ELEMS,
  K_SCATTER_ROWS8,
  K_MAX_ROWS4,
  K_ARGMAX_ROWS4,
  K_MIN_ROWS16,
  K_GLOBALPOOL_NCHW,
  K_STENCIL9,
  K_STENCIL9_PAD,
  K_MAXPOOL_NHWC_C3,
  K_SUM_AXES13,
  K_PAIRS_SCALED,
  K_COUNT_COLUMNS,
  K_BATCH_3X3,
  K_COUNT
};

static const char* const kNames[K_COUNT] = {
    "sum axis 1 [1024,1024]",
    "sum axis 0 [1024,1024]",
    "max axis 0 [1024,1024]",
    "sum all [1024,1024]",
    "sum N,H,W of [4,64,64,64]",
    "transpose [1024,1024]",
    "transpose 0213 [8,128,16,64]",
    "max pool 3x3/2 NHWC [4,64,64,64]",
    "max pool 3x3/2 NCHW [4,64,64,64]",
    "sum pool 2x2/2 NHWC [4,64,64,64]",
    "max pool gradient NHWC [4,64,64,64]",
    "clamp(-0.5, x, 0.5) [1024,1024]",
    "tanh [1024,1024]",
    "slice [1:1023, 3:1019:2]",
    "batch dot [64,128,128]^2",
    "gather 4096 rows of [1024,1024]",
    "argmax axis 1 [1024,1024]",
    "where(x > y, x, y) [1024,1024]",
    "convert to the other 16-bit float (f32: to bf16) [1024,1024]",
    "convert to i32 [1024,1024]",
    "scatter-add 1024 rows into [512,1024]",
    "conv 3x3 NHWC [4,64,64,64] x [3,3,64,64]",
    "floor [1024,1024]",
    "expm1 [1024,1024]",
    "log1p [1024,1024]",
    "sin(8 x) [1024,1024]",
    "relu mask x * convert(x > 0) [1024,1024]",
    "i32 i / 37 + i % 37, i = convert(1000 x) [1024,1024]",
    "gelu tanh form [1024,1024]",
    "gelu tanh form of x + bias[1024] [1024,1024]",
    "gather 65536 random elements (row, col) of [1024,1024]",
    "gather 65536 random rows of 8 of [131072,8]",
    "scatter-add 65536 elements at random (row, col) into [1024,1024]",
    "scatter-add 65536 rows of 8 at random into [131072,8]",
    "max over rows of 4 [262144,4]",
    "argmax over rows of 4 [262144,4]",
    "min over rows of 16 [65536,16]",
    "global sum pool NCHW [16,64,32,32]",
    "stencil: sum of 9 shifted slices of [8,66,66,32]",
    "stencil: sum of 9 shifted slices of pad([8,64,64,32], 1)",
    "max pool 2x2/2 NHWC of 3 channels [16,112,112,3]",
    "sum axes 1, 3 of [8192,2,32,2] (a 2x2 pool by reshape)",
    "pairs scaled: x[524288,2] * b[524288] broadcast along the pairs",
    "count of x > 0 down the columns: i32 sum axis 0 [1024,1024]",
    "batched 3x3 products [65536,3,3] @ [65536,3,3]",
};

// Random I32 indices in [0, n): n |u| for a uniform u in [-1, 1) made in the graph from a
// parameter of |rank| |dims| (integer parameters are not filled by the runner).
static cml_value_t random_indices(cml_function_t* f, cml_dtype_t dt, int32_t rank,
                                  const int64_t* dims, double n) {
  cml_value_t u = bench_param(f, "u", dt, rank, dims);
  return cml_op_convert_dtype(
      f, cml_op_mul(f, cml_op_abs(f, u), cml_constant_scalar_f64(f, dt, n - 0.5)), CML_DTYPE_I32);
}

// The sum of the 9 windows [:, i:i+64, j:j+64, :] (i, j in 0..2) of |s| [8,66,66,32]: a 3x3
// box filter written with Slices, as code ported from numpy does.
static cml_value_t stencil9(cml_function_t* f, cml_value_t s) {
  cml_value_t sum = 0;
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 3; ++j) {
      cml_value_t w =
          cml_op_slice(f, s, (int64_t[]){0, i, j, 0}, (int64_t[]){8, i + 64, j + 64, 32}, NULL, 4);
      sum = i + j == 0 ? w : cml_op_add(f, sum, w);
    }
  }
  return sum;
}

// A Gather (|scatter| false) or ScatterSum of |count| windows of |x| reshaped to [rows, cols]:
// one element at a (row, col) pair (|elements|, rows == cols) or a whole row.
static cml_value_t gather_scatter_small(cml_function_t* f, cml_value_t x, cml_dtype_t dt,
                                        bool scatter, int64_t count, int64_t rows, int64_t cols,
                                        bool elements) {
  x = cml_op_reshape(f, x, (int64_t[]){rows, cols}, 2);
  const int32_t coords = elements ? 2 : 1;
  // Elements: rows == cols, so both coordinates are in [0, cols).
  cml_value_t idx =
      random_indices(f, dt, 2, (int64_t[]){count, coords}, (double)(elements ? cols : rows));
  if (!scatter) {
    cml_gather_dims_t g;
    memset(&g, 0, sizeof g);
    g.index_vector_axis = 1;
    g.start_index_map_count = coords;
    g.start_index_map[0] = 0;
    g.start_index_map[1] = 1;
    g.slice_size_count = 2;
    g.slice_sizes[0] = 1;
    g.slice_sizes[1] = elements ? 1 : cols;
    g.collapsed_slice_axis_count = elements ? 2 : 1;
    g.collapsed_slice_axes[0] = 0;
    g.collapsed_slice_axes[1] = 1;
    if (!elements) {
      g.offset_output_axis_count = 1;
      g.offset_output_axes[0] = 1;
    }
    return cml_op_gather(f, x, idx, &g);
  }
  cml_value_t upd = elements ? bench_param(f, "updates", dt, 1, (int64_t[]){count})
                             : bench_param(f, "updates", dt, 2, (int64_t[]){count, cols});
  cml_scatter_dims_t d;
  memset(&d, 0, sizeof d);
  d.index_vector_axis = 1;
  d.scatter_axes_to_operand_axes_count = coords;
  d.scatter_axes_to_operand_axes[0] = 0;
  d.scatter_axes_to_operand_axes[1] = 1;
  d.inserted_window_axis_count = elements ? 2 : 1;
  d.inserted_window_axes[0] = 0;
  d.inserted_window_axes[1] = 1;
  if (!elements) {
    d.update_window_axis_count = 1;
    d.update_window_axes[0] = 1;
  }
  return cml_op_scatter_sum(f, x, idx, upd, &d);
}

static cml_window_config_t window4(const int64_t* dims, const int64_t* strides) {
  cml_window_config_t w;
  memset(&w, 0, sizeof w);
  w.rank = 4;
  memcpy(w.window_dims, dims, 4 * sizeof(int64_t));
  memcpy(w.strides, strides, 4 * sizeof(int64_t));
  return w;
}

static cml_value_t build_op(cml_function_t* f, const bench_case_t* c) {
  const int64_t dims[2] = {OP_ROWS, OP_COLS}, d4[4] = {4, 64, 64, 64};
  const cml_dtype_t dt = c->dtype;
  cml_value_t x = bench_param(f, "x", dt, 2, dims);
  switch (c->dims[0]) {
    case K_SUM_AXIS1:
      return cml_op_reduce_sum(f, x, (int64_t[]){1}, 1);
    case K_SUM_AXIS0:
      return cml_op_reduce_sum(f, x, (int64_t[]){0}, 1);
    case K_MAX_AXIS0:
      return cml_op_reduce_max(f, x, (int64_t[]){0}, 1);
    case K_SUM_ALL:
      return cml_op_reduce_sum(f, x, (int64_t[]){0, 1}, 2);
    case K_SUM_NHW:
      return cml_op_reduce_sum(f, cml_op_reshape(f, x, d4, 4), (int64_t[]){0, 1, 2}, 3);
    case K_TRANSPOSE:
      return cml_op_transpose(f, x, (int64_t[]){1, 0}, 2);
    case K_TRANSPOSE_0213:
      return cml_op_transpose(f, cml_op_reshape(f, x, (int64_t[]){8, 128, 16, 64}, 4),
                              (int64_t[]){0, 2, 1, 3}, 4);
    case K_MAXPOOL_NHWC: {
      cml_window_config_t w = window4((int64_t[]){1, 3, 3, 1}, (int64_t[]){1, 2, 2, 1});
      return cml_op_reduce_window(f, cml_op_reshape(f, x, d4, 4), CML_REDUCE_MAX, &w);
    }
    case K_MAXPOOL_NCHW: {
      cml_window_config_t w = window4((int64_t[]){1, 1, 3, 3}, (int64_t[]){1, 1, 2, 2});
      return cml_op_reduce_window(f, cml_op_reshape(f, x, d4, 4), CML_REDUCE_MAX, &w);
    }
    case K_AVGPOOL_NHWC: {
      cml_window_config_t w = window4((int64_t[]){1, 2, 2, 1}, (int64_t[]){1, 2, 2, 1});
      return cml_op_reduce_window(f, cml_op_reshape(f, x, d4, 4), CML_REDUCE_SUM, &w);
    }
    case K_MAXPOOL_GRAD: {
      // The gradient of a 3x3/2 max pool: the pooled output's cotangent scattered back.
      cml_window_config_t w = window4((int64_t[]){1, 3, 3, 1}, (int64_t[]){1, 2, 2, 1});
      cml_value_t g = bench_param(f, "g", dt, 4, (int64_t[]){4, 31, 31, 64});
      return cml_op_select_and_scatter(f, CML_OP_SELECT_AND_SCATTER_MAX,
                                       cml_op_reshape(f, x, d4, 4), g, &w);
    }
    case K_CLAMP:
      return cml_op_clamp(f, cml_constant_scalar_f64(f, dt, -0.5), x,
                          cml_constant_scalar_f64(f, dt, 0.5));
    case K_TANH:
      return cml_op_tanh(f, x);
    case K_SLICE_STRIDED:
      return cml_op_slice(f, x, (int64_t[]){1, 3}, (int64_t[]){OP_ROWS - 1, OP_COLS - 5},
                          (int64_t[]){1, 2}, 2);
    case K_BATCH_DOT: {
      const int64_t b3[3] = {64, 128, 128};
      cml_value_t y = bench_param(f, "y", dt, 2, dims);
      cml_dot_config_t d;
      memset(&d, 0, sizeof d);
      d.lhs_batch_count = d.rhs_batch_count = 1;
      d.lhs_contracting_count = d.rhs_contracting_count = 1;
      d.lhs_contracting_axes[0] = 2;
      d.rhs_contracting_axes[0] = 1;
      return cml_op_dot_general(f, cml_op_reshape(f, x, b3, 3), cml_op_reshape(f, y, b3, 3), &d);
    }
    case K_GATHER_ROWS: {
      // Rows 37 i mod 1024 (an embedding lookup's pattern), indices made in the graph.
      cml_shape_t is = cml_shape_make(CML_DTYPE_I32, 2, (int64_t[]){4096, 1});
      cml_value_t idx = cml_op_rem(
          f, cml_op_mul(f, cml_op_iota(f, &is, 0), cml_constant_scalar_f64(f, CML_DTYPE_I32, 37)),
          cml_constant_scalar_f64(f, CML_DTYPE_I32, OP_ROWS));
      cml_gather_dims_t g;
      memset(&g, 0, sizeof g);
      g.index_vector_axis = 1;
      g.offset_output_axis_count = 1;
      g.offset_output_axes[0] = 1;
      g.collapsed_slice_axis_count = 1;
      g.collapsed_slice_axes[0] = 0;
      g.start_index_map_count = 1;
      g.start_index_map[0] = 0;
      g.slice_size_count = 2;
      g.slice_sizes[0] = 1;
      g.slice_sizes[1] = OP_COLS;
      return cml_op_gather(f, x, idx, &g);
    }
    case K_ARGMAX:
      return cml_op_convert_dtype(f, cml_op_arg_min_max(f, x, 1, CML_DTYPE_I32, false),
                                  CML_DTYPE_F32);
    case K_WHERE: {
      cml_value_t y = bench_param(f, "y", dt, 2, dims);
      return cml_op_where(f, cml_op_greater_than(f, x, y), x, y);
    }
    case K_CONVERT_16:
      return cml_op_convert_dtype(f, x, dt == CML_DTYPE_BF16 ? CML_DTYPE_F16 : CML_DTYPE_BF16);
    case K_CONVERT_I32:
      return cml_op_convert_dtype(f, cml_op_convert_dtype(f, x, CML_DTYPE_I32), CML_DTYPE_F32);
    case K_SCATTER_ROWS: {
      // Rows 37 i mod 512 of a [512, 1024] table get the 1024 update rows (an embedding's
      // gradient): every row hit twice.
      cml_value_t table = cml_op_slice(f, x, (int64_t[]){0, 0}, (int64_t[]){512, OP_COLS}, NULL, 2);
      cml_shape_t is = cml_shape_make(CML_DTYPE_I32, 2, (int64_t[]){OP_ROWS, 1});
      cml_value_t idx = cml_op_rem(
          f, cml_op_mul(f, cml_op_iota(f, &is, 0), cml_constant_scalar_f64(f, CML_DTYPE_I32, 37)),
          cml_constant_scalar_f64(f, CML_DTYPE_I32, 512));
      cml_scatter_dims_t d;
      memset(&d, 0, sizeof d);
      d.index_vector_axis = 1;
      d.update_window_axis_count = 1;
      d.update_window_axes[0] = 1;
      d.inserted_window_axis_count = 1;
      d.inserted_window_axes[0] = 0;
      d.scatter_axes_to_operand_axes_count = 1;
      d.scatter_axes_to_operand_axes[0] = 0;
      return cml_op_scatter_sum(f, table, idx, x, &d);
    }
    case K_FLOOR:
      return cml_op_unary(f, CML_OP_FLOOR, cml_op_mul(f, x, cml_constant_scalar_f64(f, dt, 100)));
    case K_EXPM1:
      return cml_op_unary(f, CML_OP_EXPM1, x);
    case K_LOG1P:
      return cml_op_unary(f, CML_OP_LOG1P, x);
    case K_SIN:
      return cml_op_unary(f, CML_OP_SIN, cml_op_mul(f, x, cml_constant_scalar_f64(f, dt, 8)));
    case K_RELU_MASK:
      return cml_op_mul(f, x,
                        cml_op_convert_dtype(
                            f, cml_op_greater_than(f, x, cml_constant_scalar_f64(f, dt, 0)), dt));
    case K_I32_DIVREM: {
      // Integer arithmetic on integers made from x (a constant iota would be folded away).
      cml_value_t i = cml_op_convert_dtype(
          f, cml_op_mul(f, x, cml_constant_scalar_f64(f, dt, 1000)), CML_DTYPE_I32);
      cml_value_t d = cml_constant_scalar_f64(f, CML_DTYPE_I32, 37);
      cml_value_t r = cml_op_add(f, cml_op_div(f, i, d), cml_op_rem(f, i, d));
      return cml_op_convert_dtype(f, r, dt);
    }
    case K_GELU_TANH:
      return cml_op_fused_gelu(f, x, false);
    case K_BIAS_GELU: {
      cml_value_t bias = bench_param(f, "bias", dt, 1, (int64_t[]){OP_COLS});
      int64_t axis = 1;
      return cml_op_fused_gelu(
          f, cml_op_add(f, x, cml_op_broadcast_in_dim(f, bias, dims, 2, &axis, 1)), false);
    }
    case K_GATHER_ELEMS:
      return gather_scatter_small(f, x, dt, false, 65536, OP_ROWS, OP_COLS, true);
    case K_GATHER_ROWS8:
      return gather_scatter_small(f, x, dt, false, 65536, OP_ROWS * OP_COLS / 8, 8, false);
    case K_SCATTER_ELEMS:
      return gather_scatter_small(f, x, dt, true, 65536, OP_ROWS, OP_COLS, true);
    case K_SCATTER_ROWS8:
      return gather_scatter_small(f, x, dt, true, 65536, OP_ROWS * OP_COLS / 8, 8, false);
    case K_MAX_ROWS4:
      return cml_op_reduce_max(f, cml_op_reshape(f, x, (int64_t[]){OP_ROWS * OP_COLS / 4, 4}, 2),
                               (int64_t[]){1}, 1);
    case K_ARGMAX_ROWS4:
      return cml_op_convert_dtype(
          f,
          cml_op_arg_min_max(f, cml_op_reshape(f, x, (int64_t[]){OP_ROWS * OP_COLS / 4, 4}, 2), 1,
                             CML_DTYPE_I32, false),
          CML_DTYPE_F32);
    case K_GLOBALPOOL_NCHW: {
      cml_window_config_t w = window4((int64_t[]){1, 1, 32, 32}, (int64_t[]){1, 1, 1, 1});
      return cml_op_reduce_window(f, cml_op_reshape(f, x, (int64_t[]){16, 64, 32, 32}, 4),
                                  CML_REDUCE_SUM, &w);
    }
    case K_STENCIL9:
      return stencil9(f, bench_param(f, "s", dt, 4, (int64_t[]){8, 66, 66, 32}));
    case K_STENCIL9_PAD: {
      cml_pad_axis_t pad[3] = {{0, 0, 0}, {1, 1, 0}, {1, 1, 0}};
      return stencil9(f, cml_op_pad(f, cml_op_reshape(f, x, (int64_t[]){8, 64, 64, 32}, 4),
                                    cml_constant_scalar_f64(f, dt, 0), pad, 3));
    }
    case K_MAXPOOL_NHWC_C3: {
      cml_window_config_t w = window4((int64_t[]){1, 2, 2, 1}, (int64_t[]){1, 2, 2, 1});
      return cml_op_reduce_window(f, bench_param(f, "img", dt, 4, (int64_t[]){16, 112, 112, 3}),
                                  CML_REDUCE_MAX, &w);
    }
    case K_SUM_AXES13:
      return cml_op_reduce_sum(f, cml_op_reshape(f, x, (int64_t[]){8192, 2, 32, 2}, 4),
                               (int64_t[]){1, 3}, 2);
    case K_PAIRS_SCALED: {
      const int64_t pairs[2] = {OP_ROWS * OP_COLS / 2, 2};
      cml_value_t b = bench_param(f, "b", dt, 1, pairs);
      return cml_op_mul(f, cml_op_reshape(f, x, pairs, 2), bench_broadcast_back(f, b, pairs, 2, 1));
    }
    case K_COUNT_COLUMNS: {
      cml_value_t pos = cml_op_greater_than(f, x, cml_constant_scalar_f64(f, dt, 0));
      cml_value_t count =
          cml_op_reduce_sum(f, cml_op_convert_dtype(f, pos, CML_DTYPE_I32), (int64_t[]){0}, 1);
      return cml_op_convert_dtype(f, count, dt);
    }
    case K_BATCH_3X3: {
      const int64_t b3[3] = {65536, 3, 3};
      cml_dot_config_t d;
      memset(&d, 0, sizeof d);
      d.lhs_batch_count = d.rhs_batch_count = 1;
      d.lhs_contracting_count = d.rhs_contracting_count = 1;
      d.lhs_contracting_axes[0] = 2;
      d.rhs_contracting_axes[0] = 1;
      return cml_op_dot_general(f, bench_param(f, "a", dt, 3, b3), bench_param(f, "b", dt, 3, b3),
                                &d);
    }
    case K_MIN_ROWS16:
      return cml_op_reduce_min(f, cml_op_reshape(f, x, (int64_t[]){OP_ROWS * OP_COLS / 16, 16}, 2),
                               (int64_t[]){1}, 1);
    default: {
      cml_value_t k = bench_param(f, "k", dt, 4, (int64_t[]){3, 3, 64, 64});
      cml_conv_config_t cc;
      memset(&cc, 0, sizeof cc);
      cc.spatial_count = 2;
      cc.input_channel_axis = 3;
      cc.input_spatial_axes[0] = 1;
      cc.input_spatial_axes[1] = 2;
      cc.kernel_input_channel_axis = 2;
      cc.kernel_output_channel_axis = 3;
      cc.kernel_spatial_axes[0] = 0;
      cc.kernel_spatial_axes[1] = 1;
      cc.output_channel_axis = 3;
      cc.output_spatial_axes[0] = 1;
      cc.output_spatial_axes[1] = 2;
      for (int a = 0; a < 2; ++a) {
        cc.strides[a] = cc.input_dilations[a] = cc.kernel_dilations[a] = 1;
        cc.padding_low[a] = cc.padding_high[a] = 1;
      }
      cc.channel_group_count = cc.batch_group_count = 1;
      cc.output_dtype = CML_DTYPE_INVALID;
      return cml_op_conv_general(f, cml_op_reshape(f, x, d4, 4), k, &cc);
    }
  }
}

int main(int argc, char** argv) {
  bench_options_t opts;
  if (!bench_parse_args(&opts, argc, argv, "single ops in f32, bf16 and f16")) return 2;
  static const cml_dtype_t dtypes[3] = {CML_DTYPE_F32, CML_DTYPE_BF16, CML_DTYPE_F16};
  bench_case_t cases[K_COUNT * 3];
  size_t count = 0;
  for (int k = 0; k < K_COUNT; ++k) {
    for (int d = 0; d < 3; ++d) {
      bench_case_t* c = &cases[count++];
      memset(c, 0, sizeof *c);
      c->group = "op";
      c->build = build_op;
      c->dtype = dtypes[d];
      c->dims[0] = k;
      c->bytes = (double)OP_ROWS * OP_COLS * (double)cml_dtype_bits(dtypes[d]) / 8.0;
      c->flops = k == K_BATCH_DOT   ? 2.0 * 64 * 128 * 128 * 128
                 : k == K_BATCH_3X3 ? 2.0 * 65536 * 27
                 : k == K_CONV3X3   ? 2.0 * 4 * 64 * 64 * 64 * 64 * 9
                                    : 0;
      // The scalar reference kernels take seconds on the pooling gradient and the products.
      c->heavy = k == K_MAXPOOL_GRAD || k == K_BATCH_DOT || k == K_CONV3X3;
      bench_case_name(c, "%s %s", cml_dtype_name(dtypes[d]), kNames[k]);
    }
  }
  bench_run(&opts, cases, count);
  return bench_finish(&opts);
}
