// SPDX-License-Identifier: Apache-2.0
// tests/unit/op_table_test.c: the op table of cml/ops.def (groups and traits) and the rule that a
// backend advertises only what runs: every op the c backend advertises (in each of its variants:
// default, reference, AVX2 only, scalar, no fusion) compiles for every dtype of its ops.def
// dtype set, and every op the xla backend advertises is lowered by the StableHLO emitter (no
// plugin needed) for every dtype it takes.
//
// When a new op is advertised, this test fails with "no one-op graph for <Op>" until
// build_one_op below learns to build it (docs/adding-an-op.md).
#include <stdlib.h>
#include <string.h>

#include "builder_fake_backend.h"
#include "cml/cml.h"
#include "cml/fused.h"
#include "test.h"

#if CML_HAVE_BACKEND_XLA
#include "backends/xla/stablehlo/emit_groups.h"
#include "backends/xla/stablehlo/emitter.h"
#endif

//===--- the table itself ---===//

TEST(op_table_groups) {
  ASSERT_EQ_INT(cml_op_group(CML_OP_REDUCE_WINDOW), CML_OPG_WINDOW);
  ASSERT_STREQ(cml_op_group_name(CML_OPG_WINDOW), "window");
  ASSERT_EQ_INT(cml_op_group(CML_OP_ADD), CML_OPG_ELEMENTWISE);
  ASSERT_EQ_INT(cml_op_group(CML_OP_TRANSPOSE), CML_OPG_MOVEMENT);
  ASSERT_EQ_INT(cml_op_group(CML_OP_GATHER), CML_OPG_INDEX);
  ASSERT_EQ_INT(cml_op_group(CML_OP_DOT_GENERAL), CML_OPG_LINALG);
  ASSERT_EQ_INT(cml_op_group(CML_OP_FFT), CML_OPG_SPECIAL);
  ASSERT_EQ_INT(cml_op_group(CML_OP_WHILE), CML_OPG_CONTROL);
  ASSERT_EQ_INT(cml_op_group(CML_OP_PARAMETER), CML_OPG_SOURCE);
  ASSERT_EQ_INT(cml_op_group(CML_OP_COUNT), CML_OPG_INTERNAL);
  ASSERT_EQ_INT(cml_op_group((cml_op_t)-1), CML_OPG_INTERNAL);
  ASSERT_STREQ(cml_op_group_name(CML_OPG_COUNT), "unknown");
  ASSERT_STREQ(cml_op_group_name((cml_op_group_t)-1), "unknown");
  // Names are distinct, lower case and known.
  for (int g = 0; g < CML_OPG_COUNT; ++g) {
    const char* name = cml_op_group_name((cml_op_group_t)g);
    ASSERT_TRUE(name[0] >= 'a' && name[0] <= 'z');
    ASSERT_TRUE(strcmp(name, "unknown") != 0);
    for (int h = 0; h < g; ++h) ASSERT_TRUE(strcmp(name, cml_op_group_name((cml_op_group_t)h)));
  }
  // The kinds with generated builders land in their groups.
  for (int op = 1; op < CML_OP_COUNT; ++op) {
    const cml_op_kind_t kind = cml_op_kind((cml_op_t)op);
    const cml_op_group_t group = cml_op_group((cml_op_t)op);
    if (kind == CML_OPK_UNARY || kind == CML_OPK_BINARY || kind == CML_OPK_COMPARE) {
      ASSERT_EQ_INT(group, CML_OPG_ELEMENTWISE);
    }
    if (kind == CML_OPK_REDUCE) ASSERT_EQ_INT(group, CML_OPG_REDUCE);
    if (kind == CML_OPK_COLLECTIVE) ASSERT_EQ_INT(group, CML_OPG_COLLECTIVE);
    if (kind == CML_OPK_DYNAMIC) ASSERT_EQ_INT(group, CML_OPG_DYNAMIC);
    if (kind == CML_OPK_FUSED) ASSERT_EQ_INT(group, CML_OPG_FUSED);
  }
}

TEST(op_table_traits) {
  ASSERT_EQ_INT(cml_op_traits(CML_OP_ADD), CML_OP_TRAIT_PURE | CML_OP_TRAIT_FOLDABLE);
  ASSERT_EQ_INT(cml_op_traits(CML_OP_COUNT), 0);
  ASSERT_EQ_INT(cml_op_callee_count(CML_OP_CALL), 1);
  ASSERT_EQ_INT(cml_op_callee_count(CML_OP_SORT), 1);
  ASSERT_EQ_INT(cml_op_callee_count(CML_OP_WHILE), 2);
  ASSERT_EQ_INT(cml_op_callee_count(CML_OP_IF), 2);
  ASSERT_EQ_INT(cml_op_callee_count(CML_OP_ADD), 0);
  // RNGBitGenerator is pure but not folded; Constant and Parameter are not folded.
  ASSERT_EQ_INT(cml_op_traits(CML_OP_RNG_BIT_GENERATOR) & CML_OP_TRAIT_FOLDABLE, 0);
  ASSERT_TRUE(cml_op_traits(CML_OP_RNG_BIT_GENERATOR) & CML_OP_TRAIT_PURE);
  ASSERT_EQ_INT(cml_op_traits(CML_OP_CONSTANT) & CML_OP_TRAIT_FOLDABLE, 0);
  ASSERT_EQ_INT(cml_op_traits(CML_OP_PARAMETER), 0);
  // Exactly these ops may alias an input.
  const cml_op_t alias[] = {CML_OP_IDENTITY, CML_OP_RESHAPE, CML_OP_BITCAST,
                            CML_OP_OPTIMIZATION_BARRIER, CML_OP_SCHEDULING_BARRIER};
  int alias_count = 0;
  for (int op = 0; op < CML_OP_COUNT; ++op) {
    const uint32_t t = cml_op_traits((cml_op_t)op);
    if (t & CML_OP_TRAIT_FOLDABLE) ASSERT_TRUE(t & CML_OP_TRAIT_PURE);
    if (t & CML_OP_TRAIT_HAS_CALLEES) {
      ASSERT_EQ_INT(cml_op_group((cml_op_t)op), CML_OPG_CONTROL);
      ASSERT_EQ_INT(t & CML_OP_TRAIT_FOLDABLE, 0);  // results depend on the callees
      ASSERT_TRUE(t & CML_OP_TRAIT_MULTI_OUTPUT);
    }
    if (t & CML_OP_TRAIT_MAY_ALIAS_INPUT) {
      bool listed = false;
      for (size_t i = 0; i < sizeof alias / sizeof *alias; ++i) listed |= (int)alias[i] == op;
      ASSERT_TRUE(listed);
      ++alias_count;
    }
  }
  ASSERT_EQ_INT(alias_count, 5);
}

//===--- one-op graphs ---===//

static cml_value_t param(cml_function_t* f, cml_dtype_t dtype, int32_t rank, const int64_t* dims) {
  cml_shape_t s = cml_shape_make(dtype, rank, dims);
  return cml_parameter(f, NULL, &s);
}

static const int64_t k23[] = {2, 3};
static const int64_t k44[] = {4, 4};

// A scalar comparator / condition: returns the Bool constant false.
static cml_function_t* const_closure(cml_function_t* f, cml_dtype_t dtype, int params) {
  cml_function_t* c = NULL;
  if (cml_function_new_closure(f, &c) != CML_OK) return NULL;
  for (int i = 0; i < params; ++i) param(c, dtype, 0, NULL);
  cml_value_t r = cml_constant_scalar_i64(c, CML_DTYPE_BOOL, 0);
  cml_status_t st = cml_function_return(c, &r, 1);
  if (st != CML_OK) {
    cml_status_free(st);
    return NULL;
  }
  return c;
}

// A closure returning |value| (captured from |f|: a CapturedValue) after |params| parameters.
static cml_function_t* capture_closure(cml_function_t* f, cml_value_t value, cml_dtype_t dtype,
                                       int params) {
  cml_function_t* c = NULL;
  if (cml_function_new_closure(f, &c) != CML_OK) return NULL;
  for (int i = 0; i < params; ++i) param(c, dtype, 2, k23);
  cml_status_t st = cml_function_return(c, &value, 1);
  if (st != CML_OK) {
    cml_status_free(st);
    return NULL;
  }
  return c;
}

// Builds one |op| node over |dtype| operands in |f| and returns its first result
// (CML_VALUE_INVALID when the builder refused), or sets *|unknown| when this test has no recipe.
static cml_value_t build_one_op(cml_function_t* f, cml_op_t op, cml_dtype_t dtype, int variant,
                                bool* unknown) {
  *unknown = false;
  const cml_op_kind_t kind = cml_op_kind(op);
  if (kind == CML_OPK_UNARY) return cml_op_unary(f, op, param(f, dtype, 2, k23));
  if (kind == CML_OPK_BINARY || kind == CML_OPK_COMPARE) {
    return cml_op_binary(f, op, param(f, dtype, 2, k23), param(f, dtype, 2, k23));
  }
  if (kind == CML_OPK_REDUCE) {
    const int64_t axes[] = {1};
    return cml_op_reduce(f, op, param(f, dtype, 2, k23), axes, 1);
  }
  cml_value_t x = param(f, dtype, 2, k23), outs[4] = {0};
  switch (op) {
    case CML_OP_PARAMETER:
      return x;
    case CML_OP_CONSTANT:
      return cml_constant_scalar_i64(f, dtype, 1);
    case CML_OP_CAPTURED_VALUE:  // If branches returning an outer value
    case CML_OP_IF: {
      cml_function_t* t = capture_closure(f, x, dtype, 0);
      cml_function_t* e = capture_closure(f, x, dtype, 0);
      cml_value_t pred = param(f, CML_DTYPE_BOOL, 0, NULL);
      return t && e && cml_op_if(f, pred, t, e, outs) ? outs[0] : CML_VALUE_INVALID;
    }
    case CML_OP_CALL: {
      cml_function_t* g = NULL;
      char name[32];
      snprintf(name, sizeof name, "callee_%d", (int)dtype);
      if (cml_builder_new_function(cml_function_builder(f), name, &g) != CML_OK) {
        return CML_VALUE_INVALID;
      }
      cml_value_t y = param(g, dtype, 2, k23);
      cml_status_t st = cml_function_return(g, &y, 1);
      if (st != CML_OK) {
        cml_status_free(st);
        return CML_VALUE_INVALID;
      }
      return cml_op_call(f, g, &x, 1, outs) ? outs[0] : CML_VALUE_INVALID;
    }
    case CML_OP_WHILE: {
      cml_function_t* cond = const_closure(f, dtype, 0);
      cml_function_t* body = NULL;
      if (cond) {
        cml_function_t* c = NULL;
        if (cml_function_new_closure(f, &c) == CML_OK) {
          cml_value_t s = param(c, dtype, 2, k23);
          cml_status_t st = cml_function_return(c, &s, 1);
          if (st == CML_OK) body = c;
          cml_status_free(st);
        }
      }
      if (cond) {  // the condition takes the state
        cml_function_t* c = NULL;
        if (cml_function_new_closure(f, &c) == CML_OK) {
          param(c, dtype, 2, k23);
          cml_value_t r = cml_constant_scalar_i64(c, CML_DTYPE_BOOL, 0);
          cml_status_t st = cml_function_return(c, &r, 1);
          cond = st == CML_OK ? c : NULL;
          cml_status_free(st);
        }
      }
      return cond && body && cml_op_while(f, cond, body, &x, 1, outs) ? outs[0] : CML_VALUE_INVALID;
    }
    case CML_OP_SORT: {
      cml_function_t* cmp = const_closure(f, dtype, 2);
      return cmp && cml_op_sort(f, cmp, 1, true, &x, 1, outs) ? outs[0] : CML_VALUE_INVALID;
    }
    case CML_OP_OPTIMIZATION_BARRIER:
      return cml_op_optimization_barrier(f, &x, 1, outs) ? outs[0] : CML_VALUE_INVALID;
    case CML_OP_SCHEDULING_BARRIER: {
      cml_value_t dep = param(f, dtype, 2, k23);
      return cml_op_scheduling_barrier(f, x, &dep, 1);
    }
    case CML_OP_CONVERT_DTYPE:
      return cml_op_convert_dtype(f, x, CML_DTYPE_F32);
    case CML_OP_BITCAST: {
      // To the unsigned integer of the same width (itself for complex and Bool).
      const int bits = cml_dtype_bits(dtype);
      cml_dtype_t to = bits == 8    ? CML_DTYPE_U8
                       : bits == 16 ? CML_DTYPE_U16
                       : bits == 32 ? CML_DTYPE_U32
                       : bits == 64 ? CML_DTYPE_U64
                                    : dtype;
      if (dtype == CML_DTYPE_BOOL || cml_dtype_is_complex(dtype)) to = dtype;
      return cml_op_bitcast(f, x, to);
    }
    case CML_OP_CLAMP:
      return cml_op_clamp(f, param(f, dtype, 0, NULL), x, param(f, dtype, 0, NULL));
    case CML_OP_WHERE:
      return cml_op_where(f, param(f, CML_DTYPE_BOOL, 2, k23), x, param(f, dtype, 2, k23));
    case CML_OP_IOTA: {
      cml_shape_t s = cml_shape_make(dtype, 2, k23);
      return cml_op_iota(f, &s, 1);
    }
    case CML_OP_RESHAPE: {
      const int64_t d[] = {6};
      return cml_op_reshape(f, x, d, 1);
    }
    // Dynamic ops on a static operand: folded to a Constant / a Reshape when built.
    case CML_OP_DYNAMIC_DIMENSION_SIZE:
      return cml_op_dynamic_dimension_size(f, x, 1);
    case CML_OP_DYNAMIC_SHAPE:
      return cml_op_dynamic_shape(f, x);
    case CML_OP_DYNAMIC_RESHAPE: {
      const int64_t d[] = {CML_DYNAMIC_DIM};
      const char* const names[] = {"n"};
      return cml_op_dynamic_reshape(f, x, d, names, 1);
    }
    case CML_OP_TRANSPOSE: {
      const int64_t perm[] = {1, 0};
      return cml_op_transpose(f, x, perm, 2);
    }
    case CML_OP_BROADCAST_IN_DIM: {
      const int64_t in[] = {3}, out[] = {2, 3}, axes[] = {1};
      return cml_op_broadcast_in_dim(f, param(f, dtype, 1, in), out, 2, axes, 1);
    }
    case CML_OP_CONCATENATE: {
      cml_value_t ops[2] = {x, param(f, dtype, 2, k23)};
      return cml_op_concatenate(f, 0, ops, 2);
    }
    case CML_OP_SLICE: {
      const int64_t starts[] = {0, 1}, limits[] = {2, 3}, strides[] = {1, 1};
      return cml_op_slice(f, x, starts, limits, strides, 2);
    }
    case CML_OP_REVERSE: {
      const int64_t axes[] = {0};
      return cml_op_reverse(f, x, axes, 1);
    }
    case CML_OP_PAD: {
      const cml_pad_axis_t axes[] = {{1, 0, 0}, {0, 1, 1}};
      return cml_op_pad(f, x, param(f, dtype, 0, NULL), axes, 2);
    }
    case CML_OP_DYNAMIC_SLICE: {
      const int64_t sizes[] = {1, 2};
      cml_value_t starts[] = {param(f, CML_DTYPE_I32, 0, NULL), param(f, CML_DTYPE_I32, 0, NULL)};
      return cml_op_dynamic_slice(f, x, starts, sizes, 2);
    }
    case CML_OP_DYNAMIC_UPDATE_SLICE: {
      const int64_t ud[] = {1, 2};
      cml_value_t starts[] = {param(f, CML_DTYPE_I32, 0, NULL), param(f, CML_DTYPE_I32, 0, NULL)};
      return cml_op_dynamic_update_slice(f, x, param(f, dtype, 2, ud), starts, 2);
    }
    case CML_OP_GATHER: {
      const int64_t id[] = {2, 1};
      cml_gather_dims_t d;
      memset(&d, 0, sizeof d);
      d.index_vector_axis = 1;
      d.offset_output_axis_count = 1;
      d.offset_output_axes[0] = 1;
      d.collapsed_slice_axis_count = 1;
      d.collapsed_slice_axes[0] = 0;
      d.start_index_map_count = 1;
      d.start_index_map[0] = 0;
      d.slice_size_count = 2;
      d.slice_sizes[0] = 1;
      d.slice_sizes[1] = 3;
      return cml_op_gather(f, x, param(f, CML_DTYPE_I32, 2, id), &d);
    }
    case CML_OP_SCATTER_SUM:
    case CML_OP_SCATTER_MAX:
    case CML_OP_SCATTER_MIN: {
      const int64_t id[] = {2, 1};
      cml_scatter_dims_t d;
      memset(&d, 0, sizeof d);
      d.index_vector_axis = 1;
      d.update_window_axis_count = 1;
      d.update_window_axes[0] = 1;
      d.inserted_window_axis_count = 1;
      d.inserted_window_axes[0] = 0;
      d.scatter_axes_to_operand_axes_count = 1;
      d.scatter_axes_to_operand_axes[0] = 0;
      return cml_op_scatter(f, op, x, param(f, CML_DTYPE_I32, 2, id), param(f, dtype, 2, k23), &d);
    }
    case CML_OP_REDUCE_WINDOW: {
      cml_window_config_t w;
      memset(&w, 0, sizeof w);
      w.rank = 2;
      w.window_dims[0] = w.window_dims[1] = 2;
      // |variant| picks the reduction: each has its own kernels.
      return cml_op_reduce_window(f, param(f, dtype, 2, k44),
                                  (cml_reduce_type_t)(CML_REDUCE_SUM + variant), &w);
    }
    case CML_OP_SELECT_AND_SCATTER_MAX:
    case CML_OP_SELECT_AND_SCATTER_MIN:
    case CML_OP_SELECT_AND_SCATTER_SUM: {
      const int64_t sd[] = {2, 2};
      cml_window_config_t w;
      memset(&w, 0, sizeof w);
      w.rank = 2;
      w.window_dims[0] = w.window_dims[1] = 2;
      w.strides[0] = w.strides[1] = 2;
      return cml_op_select_and_scatter(f, op, param(f, dtype, 2, k44), param(f, dtype, 2, sd), &w);
    }
    case CML_OP_DOT:
    case CML_OP_DOT_GENERAL: {
      const int64_t rd[] = {3, 4};
      cml_value_t rhs = param(f, dtype, 2, rd);
      if (op == CML_OP_DOT) return cml_op_dot(f, x, rhs);
      cml_dot_config_t c;
      memset(&c, 0, sizeof c);
      c.lhs_contracting_count = c.rhs_contracting_count = 1;
      c.lhs_contracting_axes[0] = 1;
      c.rhs_contracting_axes[0] = 0;
      return cml_op_dot_general(f, x, rhs, &c);
    }
    case CML_OP_CONV_GENERAL: {
      const int64_t in[] = {1, 1, 4}, kd[] = {1, 1, 2};
      cml_conv_config_t c;
      memset(&c, 0, sizeof c);
      c.spatial_count = 1;
      c.input_batch_axis = 0;
      c.input_channel_axis = 1;
      c.input_spatial_axes[0] = 2;
      c.kernel_output_channel_axis = 0;
      c.kernel_input_channel_axis = 1;
      c.kernel_spatial_axes[0] = 2;
      c.output_batch_axis = 0;
      c.output_channel_axis = 1;
      c.output_spatial_axes[0] = 2;
      c.strides[0] = c.input_dilations[0] = c.kernel_dilations[0] = 1;
      c.channel_group_count = c.batch_group_count = 1;
      return cml_op_conv_general(f, param(f, dtype, 3, in), param(f, dtype, 3, kd), &c);
    }
    case CML_OP_ARG_MIN_MAX:
      return cml_op_arg_min_max(f, x, 1, CML_DTYPE_I32, variant & 1);
    case CML_OP_RNG_BIT_GENERATOR: {
      const int64_t sd[] = {3};
      cml_shape_t s = cml_shape_make(dtype, 2, k23);
      return cml_op_rng_bit_generator(f, param(f, CML_DTYPE_U64, 1, sd), &s, &outs[0], &outs[1])
                 ? outs[1]
                 : CML_VALUE_INVALID;
    }
    case CML_OP_FFT: {
      const int64_t d8[] = {8}, len[] = {8};
      const bool complex = cml_dtype_is_complex(dtype);
      return cml_op_fft(f, param(f, dtype, 1, d8), complex ? CML_FFT_FORWARD : CML_FFT_FORWARD_REAL,
                        len, 1);
    }
    case CML_OP_BATCH_NORM_INFERENCE:
    case CML_OP_BATCH_NORM_TRAINING:
    case CML_OP_BATCH_NORM_GRADIENT: {
      const int64_t fd[] = {3};
      cml_value_t a = param(f, dtype, 1, fd), b = param(f, dtype, 1, fd);
      if (op == CML_OP_BATCH_NORM_TRAINING) {
        return cml_op_batch_norm_training(f, x, a, b, 1e-3f, 1, outs) ? outs[0] : CML_VALUE_INVALID;
      }
      cml_value_t c = param(f, dtype, 1, fd), d = param(f, dtype, 1, fd);
      if (op == CML_OP_BATCH_NORM_INFERENCE) {
        return cml_op_batch_norm_inference(f, x, a, b, c, d, 1e-3f, 1);
      }
      return cml_op_batch_norm_gradient(f, x, a, b, c, param(f, dtype, 2, k23), 1e-3f, 1, outs)
                 ? outs[0]
                 : CML_VALUE_INVALID;
    }
    case CML_OP_FUSED_SOFTMAX:
      return cml_op_fused_softmax(f, x, 1);
    case CML_OP_FUSED_GELU:
      return cml_op_fused_gelu(f, x, variant & 1);
    case CML_OP_FUSED_LAYER_NORM: {
      const int64_t axes[] = {1};
      return cml_op_fused_layer_norm(f, x, axes, 1, 1e-5, CML_VALUE_INVALID, CML_VALUE_INVALID);
    }
    case CML_OP_FUSED_DENSE: {
      const int64_t wd[] = {3, 4};
      cml_dense_config_t c;
      cml_dense_config_init(&c);
      return cml_op_fused_dense(f, x, param(f, dtype, 2, wd), CML_VALUE_INVALID, &c);
    }
    case CML_OP_FUSED_SDPA: {  // q, k, v [1, 2, 3, 4] BHSD, causal
      const int64_t qd[] = {1, 2, 3, 4};
      cml_sdpa_config_t c;
      cml_sdpa_config_init(&c);
      c.causal = true;
      return cml_op_fused_sdpa(f, param(f, dtype, 4, qd), param(f, dtype, 4, qd),
                               param(f, dtype, 4, qd), CML_ATTENTION_LAYOUT_BHSD, &c, NULL, NULL);
    }
    case CML_OP_FUSED_ATTENTION_QKV_PROJECTION: {  // x [2, 3], w [3, 2 + 2 * 1], bias_k
      const int64_t wd[] = {3, 4}, bd[] = {1};
      cml_value_t out[3];
      if (!cml_op_fused_attention_qkv_projection(f, x, param(f, dtype, 2, wd), CML_VALUE_INVALID,
                                                 param(f, dtype, 1, bd), CML_VALUE_INVALID, 2, 1,
                                                 out))
        return CML_VALUE_INVALID;
      return out[1];
    }
    case CML_OP_FUSED_SDPA_VJP: {  // dq of sum(sdpa(q, k, v)), q, k, v [1, 2, 3, 4], causal
      const int64_t qd[] = {1, 2, 3, 4};
      cml_sdpa_config_t c;
      cml_sdpa_config_init(&c);
      c.causal = true;
      cml_value_t q = param(f, dtype, 4, qd);
      cml_value_t y = cml_op_fused_sdpa(f, q, param(f, dtype, 4, qd), param(f, dtype, 4, qd),
                                        CML_ATTENTION_LAYOUT_BHSD, &c, NULL, NULL);
      cml_value_t dq = CML_VALUE_INVALID;
      cml_status_t st = cml_gradients(f, cml_op_reduce_sum(f, y, NULL, 0), &q, 1, &dq);
      cml_status_free(st);
      return dq;
    }
    // Collectives (the builder is SPMD on one device, see check_one): the variant picks the
    // reduction (complex numbers have sum and product only).
    case CML_OP_ALL_REDUCE:
    case CML_OP_REDUCE_SCATTER: {
      const bool complex = dtype == CML_DTYPE_C64 || dtype == CML_DTYPE_C128;
      const cml_reduce_type_t type = complex ? (variant & 1 ? CML_REDUCE_PRODUCT : CML_REDUCE_SUM)
                                             : (cml_reduce_type_t)(variant + 1);
      if (op == CML_OP_REDUCE_SCATTER) return cml_op_reduce_scatter(f, x, type, 1, NULL);
      cml_value_t r = CML_VALUE_INVALID;
      cml_op_all_reduce(f, &x, 1, type, NULL, &r);
      return r;
    }
    case CML_OP_ALL_GATHER:
      return cml_op_all_gather(f, x, 0, NULL);
    case CML_OP_ALL_TO_ALL:
      return cml_op_all_to_all(f, x, 1, 0, NULL);
    case CML_OP_COLLECTIVE_PERMUTE:
      return cml_op_collective_permute(f, x, (const int32_t[]){0, 0}, 1);
    case CML_OP_COLLECTIVE_BROADCAST:
      return cml_op_collective_broadcast(f, x, NULL);
    case CML_OP_REPLICA_ID:
      return cml_op_replica_id(f);
    case CML_OP_PARTITION_ID:
      return cml_op_partition_id(f);
    case CML_OP_FUSED_QUANTIZED_DENSE: {  // x f32 [3, 32], Q8_0 weights [4, 34]
      cml_quantization_t q;
      cml_quantization_init(&q);
      q.scheme = CML_QUANT_GGML;
      q.ggml_type = CML_GGML_Q8_0;
      const int64_t xd[] = {3, 32}, wd[] = {4, 34};
      cml_value_t xq = param(f, dtype, 2, xd);
      return cml_op_fused_quantized_dense(f, xq, param(f, CML_DTYPE_U8, 2, wd), CML_VALUE_INVALID,
                                          &q, CML_ACTIVATION_NONE);
    }
    case CML_OP_QUANTIZED_EMBEDDING_LOOKUP: {  // Q4_0 data [5, 18], indices [2, 1]
      cml_quantization_t q;
      cml_quantization_init(&q);
      q.scheme = CML_QUANT_GGML;
      const int64_t dd[] = {5, 18}, id[] = {2, 1};
      cml_value_t data = param(f, dtype, 2, dd);
      return cml_op_quantized_embedding_lookup(f, data, param(f, CML_DTYPE_I32, 2, id), &q);
    }
    default:
      *unknown = true;
      return CML_VALUE_INVALID;
  }
}

// How many variants of an op's graph to try (the reductions of ReduceWindow, ArgMin and ArgMax).
static int variant_count(cml_op_t op) {
  if (op == CML_OP_REDUCE_WINDOW || op == CML_OP_ALL_REDUCE || op == CML_OP_REDUCE_SCATTER)
    return 4;
  if (op == CML_OP_ARG_MIN_MAX || op == CML_OP_FUSED_GELU) return 2;
  return 1;
}

// Builds |op| over |dtype| on |backend|, returns the graph and compiles it (|fb| NULL), or emits
// it as StableHLO (|fb| the fake backend the builder runs on). Prints and returns false on
// failure.
static bool check_one(cml_backend_t* backend, fake_backend_t* fb, const char* what, cml_op_t op,
                      cml_dtype_t dtype, int variant) {
  cml_builder_t* b = NULL;
  if (cml_builder_create(backend, "one_op", &b) != CML_OK) return false;
  // Collectives exist in SPMD modules only: one device slot is enough to run them.
  if (cml_op_group(op) == CML_OPG_COLLECTIVE && cml_builder_spmd(b, 1) != CML_OK) {
    fprintf(stderr, "%s: %s needs an SPMD builder\n", what, cml_op_name(op));
    cml_builder_destroy(b);
    return false;
  }
  cml_function_t* f = cml_builder_main(b);
  (void)fb;
  bool unknown = false;
  cml_value_t r = build_one_op(f, op, dtype, variant, &unknown);
  bool ok = false;
  if (unknown) {
    fprintf(stderr, "%s: no one-op graph for %s in op_table_test.c: add one\n", what,
            cml_op_name(op));
  } else {
    cml_status_t st = r ? cml_function_return(f, &r, 1) : cml_builder_status(b);
    if (st == CML_OK && r == CML_VALUE_INVALID) st = cml_status_make(CML_STATUS_INTERNAL, "?");
    cml_executable_t* exe = NULL;
    if (st == CML_OK) st = cml_builder_compile(b, &exe);
    char* text = NULL;
#if CML_HAVE_BACKEND_XLA
    if (st == CML_OK && fb) {
      cml_xla_emit_options_t opts;
      cml_xla_emit_options_init(&opts);
      st = cml_xla_emit_stablehlo(fb->module, &opts, &text);
    }
#endif
    if (st != CML_OK) {
      fprintf(stderr, "%s: %s (variant %d) over %s: %s\n", what, cml_op_name(op), variant,
              cml_dtype_name(dtype), cml_status_message(st));
    }
    ok = st == CML_OK;
    cml_status_free(st);
    free(text);
    cml_executable_release(exe);
  }
  cml_builder_destroy(b);
  return ok;
}

// Checks every advertised op (except the engine-only sources) over every dtype of its ops.def
// set that |caps| has. Returns the number of failures; counts the checks in *|checks|.
static int check_all(cml_backend_t* backend, fake_backend_t* fb, const cml_capabilities_t* caps,
                     const char* what, int* checks) {
  int failures = 0;
  for (int o = 1; o < CML_OP_COUNT; ++o) {
    const cml_op_t op = (cml_op_t)o;
    if (!cml_capabilities_has_op(caps, op)) continue;
    // Collectives need an SPMD module on several devices: stablehlo_golden_test and the
    // backends' SPMD tests (xla_spmd_test) cover them.
    if (cml_op_kind(op) == CML_OPK_COLLECTIVE) continue;
    const cml_dtype_set_t dtypes = cml_op_dtypes(op) & caps->dtypes & ~CML_DSET_PACKED;
    for (int d = 1; d < 64; ++d) {
      if (!(dtypes & CML_DTYPE_BIT((cml_dtype_t)d))) continue;
      for (int v = 0; v < variant_count(op); ++v) {
        ++*checks;
        if (!check_one(backend, fb, what, op, (cml_dtype_t)d, v)) ++failures;
      }
    }
  }
  return failures;
}

#if CML_HAVE_BACKEND_C
TEST(c_advertised_ops_have_kernels) {
  static const char* const configs[] = {
      "c", "c:reference=true", "c:avx512=false", "c:avx2=false,avx512=false", "c:fusion=false",
  };
  for (size_t i = 0; i < sizeof configs / sizeof *configs; ++i) {
    cml_backend_t* backend = NULL;
    ASSERT_STATUS_OK(cml_backend_new_with_config(configs[i], &backend));
    const cml_capabilities_t* caps = cml_backend_capabilities(backend);
    // The dispatch table advertises the groups it runs and nothing else.
    ASSERT_TRUE(cml_capabilities_has_op(caps, CML_OP_REDUCE_WINDOW));
    ASSERT_TRUE(cml_capabilities_has_op(caps, CML_OP_WHILE));
    ASSERT_TRUE(cml_capabilities_has_op(caps, CML_OP_ALL_REDUCE));
    ASSERT_TRUE(caps->distributions & (1u << CML_DISTRIBUTION_SPMD));
    // The dynamic ops run as Constant/Reshape of each specialized plan (core/dynamic.h).
    ASSERT_TRUE(caps->dynamic_axes);
    ASSERT_TRUE(cml_capabilities_has_op(caps, CML_OP_DYNAMIC_RESHAPE));
    const bool fused =
        strcmp(configs[i], "c:reference=true") && strcmp(configs[i], "c:fusion=false");
    ASSERT_EQ_INT(cml_capabilities_has_op(caps, CML_OP_FUSED_SDPA), fused);
    ASSERT_EQ_INT(cml_capabilities_has_op(caps, CML_OP_FUSED_SOFTMAX), fused);
    int checks = 0;
    int failures = check_all(backend, NULL, caps, configs[i], &checks);
    printf("%s: %d op x dtype checks\n", configs[i], checks);
    cml_backend_release(backend);
    ASSERT_EQ_INT(failures, 0);
    ASSERT_TRUE(checks > 500);  // ~100 ops over their dtypes
  }
}

#endif  // CML_HAVE_BACKEND_C

#if CML_HAVE_BACKEND_XLA
TEST(xla_advertised_ops_are_lowered) {
  cml_capabilities_t caps;
  memset(&caps, 0, sizeof caps);
  cml_xla_emit_capabilities(&caps);
  ASSERT_TRUE(cml_capabilities_has_op(&caps, CML_OP_SELECT_AND_SCATTER_SUM));
  ASSERT_TRUE(cml_capabilities_has_op(&caps, CML_OP_CAPTURED_VALUE));
  ASSERT_FALSE(cml_capabilities_has_op(&caps, CML_OP_FUSED_SOFTMAX));
  ASSERT_TRUE(cml_capabilities_has_op(&caps, CML_OP_ALL_GATHER));  // SPMD modules
  ASSERT_FALSE(cml_capabilities_has_op(&caps, CML_OP_BLOCK_FOR_DOT_GENERAL));
  ASSERT_FALSE(cml_xla_emit_lowers_group(CML_OPG_COUNT));
  // The dtypes the xla backend may advertise (Float16 when the plugin takes it).
  caps.dtypes = CML_DSET_BOOL | CML_DSET_INT | CML_DSET_FLOAT32_64 | CML_DTYPE_BIT(CML_DTYPE_BF16) |
                CML_DTYPE_BIT(CML_DTYPE_F16) | CML_DSET_COMPLEX;
  fake_backend_t* fb = fake_backend_new();
  ASSERT_TRUE(fb != NULL);
  int checks = 0;
  int failures = check_all(&fb->base, fb, &caps, "xla emitter", &checks);
  printf("xla emitter: %d op x dtype checks\n", checks);
  cml_backend_release(&fb->base);
  ASSERT_EQ_INT(failures, 0);
  ASSERT_TRUE(checks > 500);
}

#endif  // CML_HAVE_BACKEND_XLA

#if !CML_HAVE_BACKEND_C
#define C_ENTRY
#else
#define C_ENTRY TEST_ENTRY(c_advertised_ops_have_kernels),
#endif
#if !CML_HAVE_BACKEND_XLA
#define XLA_ENTRY
#else
#define XLA_ENTRY TEST_ENTRY(xla_advertised_ops_are_lowered),
#endif

TEST_MAIN(TEST_ENTRY(op_table_groups), TEST_ENTRY(op_table_traits), C_ENTRY XLA_ENTRY)
