// SPDX-License-Identifier: Apache-2.0
// src/core/fused.c: the fused-op builders (cml/fused.h): operand checks, then one fused node
// when the backend advertises the op, or the decomposition into standard ops otherwise.
//
// The decompositions go through the public op builders, so they are checked, captured into
// closures and recorded exactly as if the user had written them. Reductions are re-shaped to
// keep their reduced axes as size-1 axes, so that the restricted broadcasting of the binary ops
// (same rank, size-1 axes) lines them up with the operand without a BroadcastInDim.
#include <math.h>
#include <string.h>

#include "cml/fused.h"
#include "core/builder_internal.h"
#include "core/fused_internal.h"

//===--- enum names ---===//

const char* cml_activation_name(cml_activation_t activation) {
  switch (activation) {
    case CML_ACTIVATION_NONE:
      return "none";
    case CML_ACTIVATION_GELU:
      return "gelu";
    case CML_ACTIVATION_RELU:
      return "relu";
    case CML_ACTIVATION_SILU:
      return "silu";
    case CML_ACTIVATION_HARD_SWISH:
      return "hard_swish";
    case CML_ACTIVATION_TANH:
      return "tanh";
    default:
      return "unknown";
  }
}

const char* cml_dense_layout_name(cml_dense_layout_t layout) {
  switch (layout) {
    case CML_DENSE_LAYOUT_INPUT_OUTPUTS:
      return "input_outputs";
    case CML_DENSE_LAYOUT_OUTPUTS_INPUT:
      return "outputs_input";
    default:
      return "unknown";
  }
}

const char* cml_attention_layout_name(cml_attention_layout_t layout) {
  switch (layout) {
    case CML_ATTENTION_LAYOUT_BHSD:
      return "BHSD";
    case CML_ATTENTION_LAYOUT_BSHD:
      return "BSHD";
    default:
      return "unknown";
  }
}

void cml_dense_config_init(cml_dense_config_t* config) {
  if (!config) return;
  memset(config, 0, sizeof *config);
  config->activation = CML_ACTIVATION_NONE;
  config->weight_layout = CML_DENSE_LAYOUT_INPUT_OUTPUTS;
}

void cml_sdpa_config_init(cml_sdpa_config_t* config) {
  if (!config) return;
  memset(config, 0, sizeof *config);
  config->mask = CML_VALUE_INVALID;
  config->bias = CML_VALUE_INVALID;
  config->query_seq_len = CML_VALUE_INVALID;
  config->kv_seq_len = CML_VALUE_INVALID;
}

//===--- shared helpers ---===//

// Starts fused op |op| in |f| (the usual checks: pending error, compiled builder, returned
// function) and tells whether the backend runs it natively (*out_native).
static bool cml_fused_begin(cml_function_t* f, cml_op_t op, bool* out_native) {
  *out_native = false;
  if (!cml__op_begin(f, op)) return false;
  cml_builder_t* b = f->builder;
  *out_native = cml_capabilities_has_op(cml_backend_capabilities(b->backend), op);
  // A missing fused op is not an error: it is decomposed below, so forget what op_begin noted.
  b->unsupported_op = CML_OP_INVALID;
  return true;
}

// Float16 and BFloat16: the decompositions of the normalizing ops compute in f32, as the
// native kernels do.
static bool cml_fused_is_half(cml_dtype_t dtype) {
  return dtype == CML_DTYPE_F16 || dtype == CML_DTYPE_BF16;
}

// Resolves operand |v| (position |pos|, named |what| in messages) of |op|.
static bool cml_fused_input(cml_function_t* f, cml_op_t op, cml_value_t v, size_t pos,
                            uint32_t* out_index, cml_shape_t* out_shape) {
  return cml__op_input(f, op, v, pos, out_index, out_shape);
}

// Checks that operand |what| of |op| is a float array of |dtype| (any float when |dtype| is
// CML_DTYPE_INVALID).
static bool cml_fused_check_float(cml_function_t* f, cml_op_t op, const char* what,
                                  const cml_shape_t* s, cml_dtype_t dtype) {
  char text[CML__SHAPE_TEXT];
  if (!cml_dtype_is_float(s->dtype)) {
    cml__fail(f->builder, CML_STATUS_INVALID_ARGUMENT,
              "%s: %s %s must be Float16, BFloat16, Float32 or Float64", cml_op_name(op), what,
              cml__shape_text(s, text));
    return false;
  }
  if (dtype != CML_DTYPE_INVALID && s->dtype != dtype) {
    cml__fail(f->builder, CML_STATUS_INVALID_ARGUMENT, "%s: %s %s must have dtype %s",
              cml_op_name(op), what, cml__shape_text(s, text), cml_dtype_name(dtype));
    return false;
  }
  return true;
}

static void cml_fused_attrs_clear(cml_ir_attrs_t* attrs) { memset(attrs, 0, sizeof *attrs); }

static cml_value_t cml_fused_scalar(cml_function_t* f, cml_dtype_t dtype, double value) {
  return cml_constant_scalar_f64(f, dtype, value);
}

// Reduces |x| (of shape |xs|) over the sorted |axes| with |op| and keeps them as size-1 axes.
static cml_value_t cml_fused_reduce_keep(cml_function_t* f, cml_op_t op, cml_value_t x,
                                         const cml_shape_t* xs, const int64_t* axes,
                                         int32_t count) {
  cml_value_t r = cml_op_reduce(f, op, x, axes, (size_t)count);
  int64_t dims[CML_MAX_RANK];
  for (int32_t d = 0; d < xs->rank; ++d) dims[d] = xs->dims[d];
  for (int32_t i = 0; i < count; ++i) dims[axes[i]] = 1;
  return cml_op_reshape(f, r, dims, xs->rank);
}

// Reshapes |v| (dims |dims| of rank |rank|) to rank |out_rank| by prepending size-1 axes.
static cml_value_t cml_fused_left_pad(cml_function_t* f, cml_value_t v, const int64_t* dims,
                                      int32_t rank, int32_t out_rank) {
  if (rank == out_rank) return v;
  int64_t nd[CML_MAX_RANK];
  int32_t pad = out_rank - rank;
  for (int32_t d = 0; d < out_rank; ++d) nd[d] = d < pad ? 1 : dims[d - pad];
  return cml_op_reshape(f, v, nd, out_rank);
}

// gelu(x) in standard ops (exact: erf; otherwise the tanh approximation).
static cml_value_t cml_fused_gelu_ops(cml_function_t* f, cml_value_t x, cml_dtype_t dt,
                                      bool exact) {
  cml_value_t half_x = cml_op_mul(f, x, cml_fused_scalar(f, dt, 0.5));
  cml_value_t one = cml_fused_scalar(f, dt, 1.0);
  if (exact) {
    cml_value_t t = cml_op_erf(f, cml_op_mul(f, x, cml_fused_scalar(f, dt, M_SQRT1_2)));
    return cml_op_mul(f, half_x, cml_op_add(f, one, t));
  }
  cml_value_t x3 = cml_op_mul(f, x, cml_op_mul(f, x, x));
  cml_value_t inner = cml_op_add(f, x, cml_op_mul(f, x3, cml_fused_scalar(f, dt, 0.044715)));
  // sqrt(2 / pi)
  inner = cml_op_mul(f, inner, cml_fused_scalar(f, dt, 0.79788456080286535588));
  return cml_op_mul(f, half_x, cml_op_add(f, one, cml_op_tanh(f, inner)));
}

static cml_value_t cml_fused_activation_ops(cml_function_t* f, cml_value_t y, cml_dtype_t dt,
                                            cml_activation_t act) {
  switch (act) {
    case CML_ACTIVATION_GELU:
      return cml_fused_gelu_ops(f, y, dt, true);
    case CML_ACTIVATION_RELU:
      return cml_op_max(f, y, cml_fused_scalar(f, dt, 0.0));
    case CML_ACTIVATION_SILU:
      return cml_op_mul(f, y, cml_op_logistic(f, y));
    case CML_ACTIVATION_HARD_SWISH: {
      cml_value_t t = cml_op_add(f, cml_op_div(f, y, cml_fused_scalar(f, dt, 6.0)),
                                 cml_fused_scalar(f, dt, 0.5));
      t = cml_op_clamp(f, cml_fused_scalar(f, dt, 0.0), t, cml_fused_scalar(f, dt, 1.0));
      return cml_op_mul(f, y, t);
    }
    case CML_ACTIVATION_TANH:
      return cml_op_tanh(f, y);
    default:
      return y;
  }
}

cml_value_t cml__fused_activation_ops(cml_function_t* f, cml_value_t y, cml_dtype_t dtype,
                                      cml_activation_t activation) {
  return cml_fused_activation_ops(f, y, dtype, activation);
}

//===--- FusedSoftmax ---===//

cml_value_t cml_op_fused_softmax(cml_function_t* f, cml_value_t x, int64_t axis) {
  const cml_op_t op = CML_OP_FUSED_SOFTMAX;
  bool native;
  if (!cml_fused_begin(f, op, &native)) return CML_VALUE_INVALID;
  uint32_t in;
  cml_shape_t xs;
  if (!cml_fused_input(f, op, x, 0, &in, &xs)) return CML_VALUE_INVALID;
  if (!cml_fused_check_float(f, op, "x", &xs, CML_DTYPE_INVALID)) return CML_VALUE_INVALID;
  char text[CML__SHAPE_TEXT];
  int64_t a = axis < 0 ? axis + xs.rank : axis;
  if (xs.rank == 0 || a < 0 || a >= xs.rank) {
    return cml__fail(f->builder, CML_STATUS_INVALID_ARGUMENT,
                     "FusedSoftmax: axis %lld out of range for x %s", (long long)axis,
                     cml__shape_text(&xs, text));
  }
  if (native) {
    cml_ir_attrs_t attrs;
    cml_fused_attrs_clear(&attrs);
    attrs.axis = a;
    return cml__op_add_node(f, op, &in, 1, &xs, 1, &attrs);
  }
  if (cml_fused_is_half(xs.dtype)) {
    // As the native kernels do: computed in f32, rounded once (in the half type, the sum of
    // a long row's exponentials loses most of its bits: 25% off at 1000 values in bf16).
    cml_value_t y = cml_op_fused_softmax(f, cml_op_convert_dtype(f, x, CML_DTYPE_F32), (int64_t)a);
    return cml_op_convert_dtype(f, y, xs.dtype);
  }
  cml_value_t m = cml_fused_reduce_keep(f, CML_OP_REDUCE_MAX, x, &xs, &a, 1);
  cml_value_t e = cml_op_exp(f, cml_op_sub(f, x, m));
  cml_value_t s = cml_fused_reduce_keep(f, CML_OP_REDUCE_SUM, e, &xs, &a, 1);
  return cml_op_div(f, e, s);
}

//===--- FusedGelu ---===//

cml_value_t cml_op_fused_gelu(cml_function_t* f, cml_value_t x, bool exact) {
  const cml_op_t op = CML_OP_FUSED_GELU;
  bool native;
  if (!cml_fused_begin(f, op, &native)) return CML_VALUE_INVALID;
  uint32_t in;
  cml_shape_t xs;
  if (!cml_fused_input(f, op, x, 0, &in, &xs)) return CML_VALUE_INVALID;
  if (!cml_fused_check_float(f, op, "x", &xs, CML_DTYPE_INVALID)) return CML_VALUE_INVALID;
  if (native) {
    cml_ir_attrs_t attrs;
    cml_fused_attrs_clear(&attrs);
    attrs.fused.exact = exact;
    return cml__op_add_node(f, op, &in, 1, &xs, 1, &attrs);
  }
  return cml_fused_gelu_ops(f, x, xs.dtype, exact);
}

//===--- FusedLayerNorm ---===//

cml_value_t cml_op_fused_layer_norm(cml_function_t* f, cml_value_t x, const int64_t* axes,
                                    size_t axis_count, double epsilon, cml_value_t gamma,
                                    cml_value_t beta) {
  const cml_op_t op = CML_OP_FUSED_LAYER_NORM;
  bool native;
  if (!cml_fused_begin(f, op, &native)) return CML_VALUE_INVALID;
  cml_builder_t* b = f->builder;
  uint32_t in[3];
  uint32_t in_count = 1;
  cml_shape_t xs;
  char text[CML__SHAPE_TEXT], text2[CML__SHAPE_TEXT], text3[CML__SHAPE_TEXT];
  if (!cml_fused_input(f, op, x, 0, &in[0], &xs)) return CML_VALUE_INVALID;
  if (!cml_fused_check_float(f, op, "x", &xs, CML_DTYPE_INVALID)) return CML_VALUE_INVALID;
  if (axis_count == 0 || !axes || axis_count > (size_t)xs.rank) {
    return cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
                     "FusedLayerNorm: %zu axes given%s for x %s (want 1..rank distinct axes)",
                     axis_count, !axes && axis_count ? " in a NULL array" : "",
                     cml__shape_text(&xs, text));
  }
  // Normalize and sort the axes (insertion sort: at most CML_MAX_RANK of them).
  int64_t sorted[CML_MAX_RANK];
  int32_t count = (int32_t)axis_count;
  for (int32_t i = 0; i < count; ++i) {
    int64_t a = axes[i] < 0 ? axes[i] + xs.rank : axes[i];
    if (a < 0 || a >= xs.rank) {
      return cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
                       "FusedLayerNorm: axis %lld out of range for x %s", (long long)axes[i],
                       cml__shape_text(&xs, text));
    }
    int32_t j = i;
    while (j > 0 && sorted[j - 1] > a) {
      sorted[j] = sorted[j - 1];
      --j;
    }
    sorted[j] = a;
  }
  for (int32_t i = 1; i < count; ++i) {
    if (sorted[i] == sorted[i - 1]) {
      return cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
                       "FusedLayerNorm: axis %lld repeated for x %s", (long long)sorted[i],
                       cml__shape_text(&xs, text));
    }
  }
  if (!isfinite(epsilon) || epsilon < 0) {
    return cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
                     "FusedLayerNorm: epsilon %g must be finite and >= 0 (x %s)", epsilon,
                     cml__shape_text(&xs, text));
  }
  // gamma and beta: the dims of the normalized axes.
  int64_t norm_dims[CML_MAX_RANK];
  for (int32_t i = 0; i < count; ++i) norm_dims[i] = xs.dims[sorted[i]];
  const cml_value_t opt[2] = {gamma, beta};
  static const char* const opt_names[2] = {"gamma", "beta"};
  uint32_t present = 0;
  for (int k = 0; k < 2; ++k) {
    if (opt[k] == CML_VALUE_INVALID) continue;
    cml_shape_t s;
    if (!cml_fused_input(f, op, opt[k], (size_t)(1 + k), &in[in_count], &s)) {
      return CML_VALUE_INVALID;
    }
    if (!cml_fused_check_float(f, op, opt_names[k], &s, xs.dtype)) return CML_VALUE_INVALID;
    bool ok = s.rank == count;
    for (int32_t i = 0; ok && i < count; ++i) ok = s.dims[i] == norm_dims[i];
    if (!ok) {
      cml_shape_t want = cml_shape_make(xs.dtype, count, norm_dims);
      return cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
                       "FusedLayerNorm: %s %s must have the normalized dims %s of x %s",
                       opt_names[k], cml__shape_text(&s, text), cml__shape_text(&want, text2),
                       cml__shape_text(&xs, text3));
    }
    present |= 1u << k;
    ++in_count;
  }
  if (native) {
    cml_ir_attrs_t attrs;
    cml_fused_attrs_clear(&attrs);
    attrs.axis_count = count;
    memcpy(attrs.axes, sorted, sizeof(int64_t) * (size_t)count);
    attrs.fused.epsilon = epsilon;
    attrs.fused.optional_inputs = present;
    return cml__op_add_node(f, op, in, in_count, &xs, 1, &attrs);
  }
  cml_dtype_t dt = xs.dtype;
  if (cml_fused_is_half(dt)) {
    // As the native kernels do: statistics and result in f32, rounded once (an f16 row of
    // eight values near 1e4 sums past 65504 in f16: inf, then NaN).
    cml_value_t g32 = (present & 1u) ? cml_op_convert_dtype(f, gamma, CML_DTYPE_F32) : gamma;
    cml_value_t b32 = (present & 2u) ? cml_op_convert_dtype(f, beta, CML_DTYPE_F32) : beta;
    cml_value_t y = cml_op_fused_layer_norm(f, cml_op_convert_dtype(f, x, CML_DTYPE_F32), sorted,
                                            (size_t)count, epsilon, g32, b32);
    return cml_op_convert_dtype(f, y, dt);
  }
  double n = 1;
  for (int32_t i = 0; i < count; ++i) n *= (double)norm_dims[i];
  cml_value_t inv_n = cml_fused_scalar(f, dt, n > 0 ? 1.0 / n : 0.0);
  // A row whose largest |x| passes 2^50 (Float32) or 2^480 (Float64) is divided by that
  // magnitude s first, with eps / s^2 for eps: its sum and its squares would overflow (64 x 1e38
  // summed to -inf, then NaN; squares of 1e19 to inf, then zeros), where the native kernels
  // are right. Other rows divide by 1: the same values as without the scaling.
  const double limit = dt == CML_DTYPE_F64 ? 0x1p480 : 0x1p50;
  cml_value_t big =
      cml_fused_reduce_keep(f, CML_OP_REDUCE_MAX, cml_op_abs(f, x), &xs, sorted, count);
  cml_value_t one = cml_fused_scalar(f, dt, 1.0);
  cml_value_t scale =
      cml_op_where(f, cml_op_greater_than(f, big, cml_fused_scalar(f, dt, limit)), big, one);
  cml_value_t xn = cml_op_div(f, x, scale);
  if (n > 0) {
    // Shifted by the row's first element, as the native kernels are: a constant row is then
    // exactly zero. Its mean (the sum times fl(1/n)) missed the value by an ulp, which the
    // normalization turned into +-1 for rows past 2^50 (and a 7e-4 error for rows of 12345).
    int64_t starts[CML_MAX_RANK] = {0}, limits[CML_MAX_RANK];
    for (int32_t d = 0; d < xs.rank; ++d) limits[d] = xs.dims[d];
    for (int32_t i = 0; i < count; ++i) limits[sorted[i]] = 1;
    xn = cml_op_sub(f, xn, cml_op_slice(f, xn, starts, limits, NULL, xs.rank));
  }
  cml_value_t mean =
      cml_op_mul(f, cml_fused_reduce_keep(f, CML_OP_REDUCE_SUM, xn, &xs, sorted, count), inv_n);
  cml_value_t xc = cml_op_sub(f, xn, mean);
  cml_value_t var = cml_op_mul(
      f, cml_fused_reduce_keep(f, CML_OP_REDUCE_SUM, cml_op_mul(f, xc, xc), &xs, sorted, count),
      inv_n);
  // eps / s^2, floored at the smallest normal when eps > 0: with s = 1e38 it underflows to 0,
  // and a constant row (var 0) then gave 0 * inf = NaN instead of zeros. (eps = 0 keeps 0/0.)
  cml_value_t eps = cml_op_div(f, cml_op_div(f, cml_fused_scalar(f, dt, epsilon), scale), scale);
  const double tiny = dt == CML_DTYPE_F64 ? 0x1p-1022 : 0x1p-126;
  cml_value_t floor = cml_fused_scalar(f, dt, epsilon > 0 ? tiny : 0.0);
  cml_value_t r = cml_op_rsqrt(f, cml_op_max(f, cml_op_add(f, var, eps), floor));
  cml_value_t y = cml_op_mul(f, xc, r);
  // gamma / beta as x's rank with size-1 axes off the normalized ones.
  int64_t gdims[CML_MAX_RANK];
  for (int32_t d = 0; d < xs.rank; ++d) gdims[d] = 1;
  for (int32_t i = 0; i < count; ++i) gdims[sorted[i]] = norm_dims[i];
  if (gamma != CML_VALUE_INVALID) y = cml_op_mul(f, y, cml_op_reshape(f, gamma, gdims, xs.rank));
  if (beta != CML_VALUE_INVALID) y = cml_op_add(f, y, cml_op_reshape(f, beta, gdims, xs.rank));
  return y;
}

//===--- FusedDense ---===//

cml_value_t cml_op_fused_dense(cml_function_t* f, cml_value_t x, cml_value_t weight,
                               cml_value_t bias, const cml_dense_config_t* config) {
  const cml_op_t op = CML_OP_FUSED_DENSE;
  bool native;
  if (!cml_fused_begin(f, op, &native)) return CML_VALUE_INVALID;
  cml_builder_t* b = f->builder;
  cml_dense_config_t cfg;
  cml_dense_config_init(&cfg);
  if (config) cfg = *config;
  char t1[CML__SHAPE_TEXT], t2[CML__SHAPE_TEXT], t3[CML__SHAPE_TEXT];
  if ((int)cfg.activation < 0 || cfg.activation >= CML_ACTIVATION_COUNT) {
    return cml__fail(b, CML_STATUS_INVALID_ARGUMENT, "FusedDense: unknown activation %d",
                     (int)cfg.activation);
  }
  if ((int)cfg.weight_layout < 0 || cfg.weight_layout >= CML_DENSE_LAYOUT_COUNT) {
    return cml__fail(b, CML_STATUS_INVALID_ARGUMENT, "FusedDense: unknown weight layout %d",
                     (int)cfg.weight_layout);
  }
  uint32_t in[3];
  uint32_t in_count = 2;
  cml_shape_t xs, ws;
  if (!cml_fused_input(f, op, x, 0, &in[0], &xs) || !cml_fused_input(f, op, weight, 1, &in[1], &ws))
    return CML_VALUE_INVALID;
  if (!cml_fused_check_float(f, op, "x", &xs, CML_DTYPE_INVALID) ||
      !cml_fused_check_float(f, op, "weight", &ws, xs.dtype))
    return CML_VALUE_INVALID;
  bool w_in_first = cfg.weight_layout == CML_DENSE_LAYOUT_INPUT_OUTPUTS;
  if (xs.rank < 1 || ws.rank < 1 || xs.rank - 1 + ws.rank - 1 > CML_MAX_RANK) {
    return cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
                     "FusedDense: x %s and weight %s: want x [batch..., in] and weight %s with "
                     "an output rank of at most %d",
                     cml__shape_text(&xs, t1), cml__shape_text(&ws, t2),
                     w_in_first ? "[in, out...]" : "[out..., in]", CML_MAX_RANK);
  }
  int64_t in_dim = xs.dims[xs.rank - 1];
  int64_t w_in = w_in_first ? ws.dims[0] : ws.dims[ws.rank - 1];
  if (in_dim != w_in) {
    return cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
                     "FusedDense: x %s has %lld inputs but weight %s (layout %s) has %lld",
                     cml__shape_text(&xs, t1), (long long)in_dim, cml__shape_text(&ws, t2),
                     cml_dense_layout_name(cfg.weight_layout), (long long)w_in);
  }
  cml_shape_t out = xs;
  out.rank = xs.rank - 1 + ws.rank - 1;
  int32_t out_axes = ws.rank - 1;
  for (int32_t i = 0; i < out_axes; ++i) {
    out.dims[xs.rank - 1 + i] = ws.dims[w_in_first ? i + 1 : i];
  }
  for (int32_t d = out.rank; d < CML_MAX_RANK; ++d) out.dims[d] = 0;
  uint32_t present = 0;
  if (bias != CML_VALUE_INVALID) {
    cml_shape_t bs;
    if (!cml_fused_input(f, op, bias, 2, &in[2], &bs)) return CML_VALUE_INVALID;
    if (!cml_fused_check_float(f, op, "bias", &bs, xs.dtype)) return CML_VALUE_INVALID;
    bool ok = bs.rank == out_axes;
    for (int32_t i = 0; ok && i < out_axes; ++i) ok = bs.dims[i] == out.dims[xs.rank - 1 + i];
    if (!ok) {
      return cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
                       "FusedDense: bias %s must have the output dims of weight %s (x %s)",
                       cml__shape_text(&bs, t1), cml__shape_text(&ws, t2),
                       cml__shape_text(&xs, t3));
    }
    present = 1;
    in_count = 3;
  }
  if (native) {
    cml_ir_attrs_t attrs;
    cml_fused_attrs_clear(&attrs);
    attrs.fused.activation = (int32_t)cfg.activation;
    attrs.fused.layout = (int32_t)cfg.weight_layout;
    attrs.fused.optional_inputs = present;
    return cml__op_add_node(f, op, in, in_count, &out, 1, &attrs);
  }
  cml_dot_config_t dc;
  memset(&dc, 0, sizeof dc);
  dc.lhs_contracting_count = 1;
  dc.lhs_contracting_axes[0] = xs.rank - 1;
  dc.rhs_contracting_count = 1;
  dc.rhs_contracting_axes[0] = w_in_first ? 0 : ws.rank - 1;
  cml_value_t y = cml_op_dot_general(f, x, weight, &dc);
  if (bias != CML_VALUE_INVALID) {
    y = cml_op_add(f, y, cml_fused_left_pad(f, bias, &out.dims[xs.rank - 1], out_axes, out.rank));
  }
  return cml_fused_activation_ops(f, y, xs.dtype, cfg.activation);
}

//===--- FusedScaledDotProductAttention ---===//

// Bool [B, 1, L, 1]: position l of batch b is below lens[b] (|lens|: Int32 [B]), or
// CML_VALUE_INVALID when |lens| is (no length given).
static cml_value_t cml_fused_within_length(cml_function_t* f, cml_value_t lens, int64_t batch,
                                           int64_t len) {
  if (lens == CML_VALUE_INVALID) return CML_VALUE_INVALID;
  cml_shape_t is = cml_shape_make(CML_DTYPE_I32, 4, (int64_t[]){1, 1, len, 1});
  cml_value_t l = cml_op_reshape(f, lens, (int64_t[]){batch, 1, 1, 1}, 4);
  return cml_op_less_than(f, cml_op_iota(f, &is, 2), l);
}

// |x| (rank 4, |dims|) with the rows where |within| is false replaced by |zero|; |x| itself when
// |within| is CML_VALUE_INVALID.
static cml_value_t cml_fused_zero_past(cml_function_t* f, cml_value_t x, cml_value_t within,
                                       const int64_t* dims, cml_value_t zero) {
  if (within == CML_VALUE_INVALID) return x;
  cml_value_t w = cml_op_broadcast_in_dim(f, within, dims, 4, (int64_t[]){0, 1, 2, 3}, 4);
  return cml_op_where(f, w, x, zero);
}

// Checks an optional mask or bias of rank 2..4 against the scores [B, H, S, Skv].
static bool cml_sdpa_check_broadcast(cml_function_t* f, const char* what, const cml_shape_t* s,
                                     const int64_t scores[4], const cml_shape_t* qs) {
  bool ok = s->rank >= 2 && s->rank <= 4;
  for (int32_t d = 0; ok && d < s->rank; ++d) {
    int64_t want = scores[4 - s->rank + d];
    ok = s->dims[d] == want || s->dims[d] == 1;
  }
  if (ok) return true;
  char t1[CML__SHAPE_TEXT], t2[CML__SHAPE_TEXT];
  cml__fail(f->builder, CML_STATUS_INVALID_ARGUMENT,
            "FusedScaledDotProductAttention: %s %s must have rank 2..4 and broadcast (right "
            "aligned, size-1 axes) to the scores [%lld, %lld, %lld, %lld] of q %s",
            what, cml__shape_text(s, t1), (long long)scores[0], (long long)scores[1],
            (long long)scores[2], (long long)scores[3], cml__shape_text(qs, t2));
  return false;
}

cml_value_t cml_op_fused_sdpa(cml_function_t* f, cml_value_t q, cml_value_t k, cml_value_t v,
                              cml_attention_layout_t layout, const cml_sdpa_config_t* config,
                              cml_value_t* out_states, size_t* out_state_count) {
  return cml__fused_sdpa_build(f, q, k, v, layout, config, out_states, out_state_count, true);
}

cml_value_t cml__fused_sdpa_build(cml_function_t* f, cml_value_t q, cml_value_t k, cml_value_t v,
                                  cml_attention_layout_t layout, const cml_sdpa_config_t* config,
                                  cml_value_t* out_states, size_t* out_state_count,
                                  bool allow_native) {
  const cml_op_t op = CML_OP_FUSED_SDPA;
  if (out_state_count) *out_state_count = 0;
  if (out_states) {
    for (size_t i = 0; i < CML_SDPA_MAX_STATES; ++i) out_states[i] = CML_VALUE_INVALID;
  }
  bool native;
  if (!cml_fused_begin(f, op, &native)) return CML_VALUE_INVALID;
  cml_builder_t* b = f->builder;
  cml_sdpa_config_t cfg;
  cml_sdpa_config_init(&cfg);
  if (config) cfg = *config;
  char t1[CML__SHAPE_TEXT], t2[CML__SHAPE_TEXT], t3[CML__SHAPE_TEXT];
  if ((int)layout < 0 || layout >= CML_ATTENTION_LAYOUT_COUNT) {
    return cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
                     "FusedScaledDotProductAttention: unknown axes layout %d", (int)layout);
  }
  if (!isfinite(cfg.scale)) {
    return cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
                     "FusedScaledDotProductAttention: scale %g is not finite", cfg.scale);
  }
  uint32_t in[7];
  cml_shape_t qs, ks, vs;
  if (!cml_fused_input(f, op, q, 0, &in[0], &qs) || !cml_fused_input(f, op, k, 1, &in[1], &ks) ||
      !cml_fused_input(f, op, v, 2, &in[2], &vs))
    return CML_VALUE_INVALID;
  if (!cml_fused_check_float(f, op, "q", &qs, CML_DTYPE_INVALID) ||
      !cml_fused_check_float(f, op, "k", &ks, qs.dtype) ||
      !cml_fused_check_float(f, op, "v", &vs, qs.dtype))
    return CML_VALUE_INVALID;
  const int ha = layout == CML_ATTENTION_LAYOUT_BHSD ? 1 : 2;  // heads axis
  const int sa = 3 - ha;                                       // seq axis
  bool ok = qs.rank == 4 && ks.rank == 4 && vs.rank == 4;
  int64_t batch = 0, heads = 0, seq = 0, kv_heads = 0, kv_seq = 0;
  if (ok) {
    batch = qs.dims[0];
    heads = qs.dims[ha];
    seq = qs.dims[sa];
    kv_heads = ks.dims[ha];
    kv_seq = ks.dims[sa];
    ok = ks.dims[0] == batch && vs.dims[0] == batch && vs.dims[ha] == kv_heads &&
         vs.dims[sa] == kv_seq && ks.dims[3] == qs.dims[3] && kv_heads > 0 && heads % kv_heads == 0;
  }
  if (!ok) {
    return cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
                     "FusedScaledDotProductAttention: q %s, k %s, v %s do not fit layout %s "
                     "(rank 4, same batch, k and v with the same heads and sequence, q and k "
                     "with the same head dim, at least 1 kv head, heads a multiple of kv heads)",
                     cml__shape_text(&qs, t1), cml__shape_text(&ks, t2), cml__shape_text(&vs, t3),
                     cml_attention_layout_name(layout));
  }
  const int64_t head_dim = qs.dims[3], v_dim = vs.dims[3];
  const int64_t scores[4] = {batch, heads, seq, kv_seq};
  uint32_t in_count = 3, present = 0;
  cml_shape_t ms, bs;
  memset(&ms, 0, sizeof ms);
  memset(&bs, 0, sizeof bs);
  if (cfg.mask != CML_VALUE_INVALID) {
    if (!cml_fused_input(f, op, cfg.mask, 3, &in[in_count], &ms)) return CML_VALUE_INVALID;
    if (ms.dtype != CML_DTYPE_BOOL && ms.dtype != qs.dtype) {
      char text[CML__SHAPE_TEXT];
      return cml__fail(f->builder, CML_STATUS_INVALID_ARGUMENT,
                       "%s: mask %s must be Bool or q's dtype %s", cml_op_name(op),
                       cml__shape_text(&ms, text), cml_dtype_name(qs.dtype));
    }
    if (!cml_sdpa_check_broadcast(f, "mask", &ms, scores, &qs)) return CML_VALUE_INVALID;
    present |= 1u;
    ++in_count;
  }
  if (cfg.bias != CML_VALUE_INVALID) {
    if (!cml_fused_input(f, op, cfg.bias, 4, &in[in_count], &bs)) return CML_VALUE_INVALID;
    if (!cml_fused_check_float(f, op, "bias", &bs, qs.dtype)) return CML_VALUE_INVALID;
    if (!cml_sdpa_check_broadcast(f, "bias", &bs, scores, &qs)) return CML_VALUE_INVALID;
    present |= 2u;
    ++in_count;
  }
  if ((cfg.query_seq_len == CML_VALUE_INVALID) != (cfg.kv_seq_len == CML_VALUE_INVALID)) {
    return cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
                     "FusedScaledDotProductAttention: give both query_seq_len and kv_seq_len "
                     "or neither (q %s)",
                     cml__shape_text(&qs, t1));
  }
  if (cfg.query_seq_len != CML_VALUE_INVALID) {
    const cml_value_t lens[2] = {cfg.query_seq_len, cfg.kv_seq_len};
    static const char* const names[2] = {"query_seq_len", "kv_seq_len"};
    for (int i = 0; i < 2; ++i) {
      cml_shape_t ls;
      if (!cml_fused_input(f, op, lens[i], (size_t)(5 + i), &in[in_count], &ls))
        return CML_VALUE_INVALID;
      if (ls.dtype != CML_DTYPE_I32 || ls.rank != 1 || ls.dims[0] != batch) {
        return cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
                         "FusedScaledDotProductAttention: %s %s must be Int32 [%lld] (q %s)",
                         names[i], cml__shape_text(&ls, t1), (long long)batch,
                         cml__shape_text(&qs, t2));
      }
      ++in_count;
    }
    present |= 4u | 8u;
  }
  double scale = cfg.scale != 0 ? cfg.scale : (head_dim > 0 ? 1.0 / sqrt((double)head_dim) : 1.0);
  cml_shape_t out = qs;
  out.dims[3] = v_dim;
  if (native && allow_native) {
    // Output 1: the per-row logsumexp of the scores (a VJP state), [batch, heads, seq] in f32
    // (f64 for Float64 operands); -inf for rows that attend no key.
    cml_ir_attrs_t attrs;
    cml_fused_attrs_clear(&attrs);
    attrs.fused.layout = (int32_t)layout;
    attrs.fused.causal = cfg.causal;
    attrs.fused.scale = scale;
    attrs.fused.optional_inputs = present;
    cml_shape_t outs[2] = {
        out, cml_shape_make(qs.dtype == CML_DTYPE_F64 ? CML_DTYPE_F64 : CML_DTYPE_F32, 3,
                            (int64_t[]){batch, heads, seq})};
    cml_value_t o = cml__op_add_node(f, op, in, in_count, outs, 2, &attrs);
    if (o != CML_VALUE_INVALID && out_states) out_states[0] = o + 1;
    if (o != CML_VALUE_INVALID && out_state_count) *out_state_count = 1;
    return o;
  }

  // Decomposition, in the BHSD layout. Float16/BFloat16 inputs are computed in Float32 and the
  // output rounded once, as the native kernels do: in the half dtype, scores past 65504 (q k of
  // 80000) overflowed to inf and NaN, and the softmax sum of 10^5 keys to inf.
  const cml_dtype_t io_dt = qs.dtype;
  const bool half = io_dt == CML_DTYPE_F16 || io_dt == CML_DTYPE_BF16;
  const cml_dtype_t dt = half ? CML_DTYPE_F32 : io_dt;
  if (half) {
    q = cml_op_convert_dtype(f, q, dt);
    k = cml_op_convert_dtype(f, k, dt);
    v = cml_op_convert_dtype(f, v, dt);
  }
  const int64_t perm[4] = {0, 2, 1, 3};
  if (layout == CML_ATTENTION_LAYOUT_BSHD) {
    q = cml_op_transpose(f, q, perm, 4);
    k = cml_op_transpose(f, k, perm, 4);
    v = cml_op_transpose(f, v, perm, 4);
  }
  const int64_t groups = heads / kv_heads;
  // Query rows past a batch's query_seq_len give zeros; their q rows are zeroed before use too
  // (a NaN there made the scores, and through dS = P (dP - D) every gradient of the group, NaN).
  // Keys past a batch's kv_seq_len are never read, as in the native kernel: a KV cache's unused
  // (uncleared) rows may hold NaN or Inf. Their k and v rows are zeroed before use: masking
  // the scores alone kept the forward finite, but the gradient of q (dS k, dS = 0 there) and
  // the output (p = 0 times NaN) still read them.
  const cml_value_t rows = cml_fused_within_length(f, cfg.query_seq_len, batch, seq);
  const cml_value_t keys = cml_fused_within_length(f, cfg.kv_seq_len, batch, kv_seq);
  const cml_value_t zero = rows != CML_VALUE_INVALID || keys != CML_VALUE_INVALID
                               ? cml_fused_scalar(f, dt, 0.0)
                               : CML_VALUE_INVALID;
  q = cml_fused_zero_past(f, q, rows, (const int64_t[]){batch, heads, seq, head_dim}, zero);
  k = cml_fused_zero_past(f, k, keys, (const int64_t[]){batch, kv_heads, kv_seq, head_dim}, zero);
  cml_value_t q5 = cml_op_reshape(f, q, (int64_t[]){batch, kv_heads, groups, seq, head_dim}, 5);
  cml_dot_config_t dc;
  memset(&dc, 0, sizeof dc);
  dc.lhs_batch_count = dc.rhs_batch_count = 2;
  dc.lhs_batch_axes[0] = dc.rhs_batch_axes[0] = 0;
  dc.lhs_batch_axes[1] = dc.rhs_batch_axes[1] = 1;
  dc.lhs_contracting_count = dc.rhs_contracting_count = 1;
  dc.lhs_contracting_axes[0] = 4;
  dc.rhs_contracting_axes[0] = 3;
  cml_value_t s = cml_op_dot_general(f, q5, k, &dc);  // [B, Hkv, G, S, Skv]
  s = cml_op_reshape(f, s, scores, 4);
  s = cml_op_mul(f, s, cml_fused_scalar(f, dt, scale));
  if (cfg.bias != CML_VALUE_INVALID) {
    cml_value_t bias = cml_fused_left_pad(f, cfg.bias, bs.dims, bs.rank, 4);
    if (half) bias = cml_op_convert_dtype(f, bias, dt);
    s = cml_op_add(f, s, bias);
  }
  if (cfg.mask != CML_VALUE_INVALID && ms.dtype != CML_DTYPE_BOOL) {
    cml_value_t mask = cml_fused_left_pad(f, cfg.mask, ms.dims, ms.rank, 4);
    if (half) mask = cml_op_convert_dtype(f, mask, dt);
    s = cml_op_add(f, s, mask);
  }
  // The keys each query may attend, as a Bool of rank 4 with size-1 axes.
  cml_value_t allowed = CML_VALUE_INVALID;
  if (cfg.mask != CML_VALUE_INVALID && ms.dtype == CML_DTYPE_BOOL) {
    allowed = cml_fused_left_pad(f, cfg.mask, ms.dims, ms.rank, 4);
  }
  if (cfg.causal) {
    cml_shape_t is = cml_shape_make(CML_DTYPE_I32, 4, (int64_t[]){1, 1, seq, kv_seq});
    cml_value_t c = cml_op_less_or_equal(f, cml_op_iota(f, &is, 3), cml_op_iota(f, &is, 2));
    allowed = allowed == CML_VALUE_INVALID ? c : cml_op_logical_and(f, allowed, c);
  }
  if (keys != CML_VALUE_INVALID) {  // [B, 1, Skv, 1] as [B, 1, 1, Skv]
    cml_value_t c = cml_op_reshape(f, keys, (int64_t[]){batch, 1, 1, kv_seq}, 4);
    allowed = allowed == CML_VALUE_INVALID ? c : cml_op_logical_and(f, allowed, c);
  }
  if (allowed != CML_VALUE_INVALID) {
    cml_value_t full = cml_op_broadcast_in_dim(f, allowed, scores, 4, (int64_t[]){0, 1, 2, 3}, 4);
    s = cml_op_where(f, full, s, cml_fused_scalar(f, dt, -INFINITY));
  }
  // Softmax over the keys; a row with every key masked (max = -inf) gives zeros, not NaN.
  const int64_t last = 3;
  cml_shape_t ss = cml_shape_make(dt, 4, scores);
  cml_value_t m = cml_fused_reduce_keep(f, CML_OP_REDUCE_MAX, s, &ss, &last, 1);
  m = cml_op_where(f, cml_op_is_finite(f, m), m, cml_fused_scalar(f, dt, 0.0));
  cml_value_t e = cml_op_exp(f, cml_op_sub(f, s, m));
  cml_value_t sum = cml_fused_reduce_keep(f, CML_OP_REDUCE_SUM, e, &ss, &last, 1);
  cml_value_t empty = cml_op_equal(f, sum, cml_fused_scalar(f, dt, 0.0));
  sum = cml_op_where(f, empty, cml_fused_scalar(f, dt, 1.0), sum);
  cml_value_t p = cml_op_div(f, e, sum);
  if (!allow_native && out_states) {
    // The logsumexp state as the native node defines it (-inf for rows that attend no key),
    // for cml_gradients when it differentiates that output: m + log(sum), whose gradient with
    // respect to the scores is p (and zero on the rows without keys).
    cml_value_t lse = cml_op_add(f, m, cml_op_log(f, sum));
    lse = cml_op_where(f, empty, cml_fused_scalar(f, dt, -INFINITY), lse);
    lse = cml_op_reshape(f, lse, scores, 3);
    if (dt != CML_DTYPE_F64 && dt != CML_DTYPE_F32)
      lse = cml_op_convert_dtype(f, lse, CML_DTYPE_F32);
    out_states[0] = lse;
    if (out_state_count) *out_state_count = 1;
  }
  v = cml_fused_zero_past(f, v, keys, (const int64_t[]){batch, kv_heads, kv_seq, v_dim}, zero);
  p = cml_op_reshape(f, p, (int64_t[]){batch, kv_heads, groups, seq, kv_seq}, 5);
  dc.rhs_contracting_axes[0] = 2;
  cml_value_t o = cml_op_dot_general(f, p, v, &dc);  // [B, Hkv, G, S, Dv]
  const int64_t odims[4] = {batch, heads, seq, v_dim};
  o = cml_op_reshape(f, o, odims, 4);
  o = cml_fused_zero_past(f, o, rows, odims, zero);
  if (half) o = cml_op_convert_dtype(f, o, io_dt);
  if (layout == CML_ATTENTION_LAYOUT_BSHD) o = cml_op_transpose(f, o, perm, 4);
  return o;
}

//===--- FusedScaledDotProductAttentionVJP ---===//

bool cml__fused_sdpa_vjp(cml_function_t* f, const cml_ir_node_t* fwd, cml_value_t dout,
                         cml_value_t out_grads[3]) {
  const cml_op_t op = CML_OP_FUSED_SDPA_VJP;
  out_grads[0] = out_grads[1] = out_grads[2] = CML_VALUE_INVALID;
  if (fwd->op != CML_OP_FUSED_SDPA || fwd->output_count != 2 || fwd->input_count > 7) return false;
  cml_builder_t* b = f->builder;
  if (!cml_capabilities_has_op(cml_backend_capabilities(b->backend), op)) return false;
  bool native;
  if (!cml_fused_begin(f, op, &native)) return false;
  // Inputs: q, k, v, the forward's output and logsumexp, the output's cotangent, then the
  // forward's optional inputs (mask, bias, lengths).
  cml_value_t ids[10];
  uint32_t count = 0;
  for (uint32_t i = 0; i < 3; ++i) ids[count++] = cml__value_id(b, fwd->inputs[i]);
  ids[count++] = cml__value_id(b, fwd->first_output);
  ids[count++] = cml__value_id(b, fwd->first_output + 1);
  ids[count++] = dout;
  for (uint32_t i = 3; i < fwd->input_count; ++i) ids[count++] = cml__value_id(b, fwd->inputs[i]);
  uint32_t in[10];
  cml_shape_t shapes[10];
  for (uint32_t i = 0; i < count; ++i) {
    if (!cml_fused_input(f, op, ids[i], i, &in[i], &shapes[i])) return false;
  }
  if (!cml_shape_equal(&shapes[5], &shapes[3])) {
    char t1[CML__SHAPE_TEXT], t2[CML__SHAPE_TEXT];
    cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
              "FusedScaledDotProductAttentionVJP: the output cotangent %s must have the "
              "output's shape %s",
              cml__shape_text(&shapes[5], t1), cml__shape_text(&shapes[3], t2));
    return false;
  }
  cml_value_t first = cml__op_add_node(f, op, in, count, shapes, 3, fwd->attrs);
  if (first == CML_VALUE_INVALID) return false;
  for (int i = 0; i < 3; ++i) out_grads[i] = first + (cml_value_t)i;
  return true;
}

//===--- FusedAttentionQKVProjection ---===//

bool cml_op_fused_attention_qkv_projection(cml_function_t* f, cml_value_t x, cml_value_t w_qkv,
                                           cml_value_t bias_q, cml_value_t bias_k,
                                           cml_value_t bias_v, int64_t query_dim, int64_t kv_dim,
                                           cml_value_t out_values[3]) {
  return cml__fused_qkv_build(f, x, w_qkv, bias_q, bias_k, bias_v, query_dim, kv_dim, out_values,
                              true);
}

bool cml__fused_qkv_build(cml_function_t* f, cml_value_t x, cml_value_t w_qkv, cml_value_t bias_q,
                          cml_value_t bias_k, cml_value_t bias_v, int64_t query_dim, int64_t kv_dim,
                          cml_value_t out_values[3], bool allow_native) {
  const cml_op_t op = CML_OP_FUSED_ATTENTION_QKV_PROJECTION;
  if (out_values) out_values[0] = out_values[1] = out_values[2] = CML_VALUE_INVALID;
  bool native;
  if (!cml_fused_begin(f, op, &native)) return false;
  cml_builder_t* b = f->builder;
  if (!out_values) {
    cml__fail(b, CML_STATUS_INVALID_ARGUMENT, "FusedAttentionQKVProjection: NULL outputs");
    return false;
  }
  char t1[CML__SHAPE_TEXT], t2[CML__SHAPE_TEXT];
  uint32_t in[5];
  cml_shape_t xs, ws;
  if (!cml_fused_input(f, op, x, 0, &in[0], &xs) || !cml_fused_input(f, op, w_qkv, 1, &in[1], &ws))
    return false;
  if (!cml_fused_check_float(f, op, "x", &xs, CML_DTYPE_INVALID) ||
      !cml_fused_check_float(f, op, "w_qkv", &ws, xs.dtype))
    return false;
  bool ok = query_dim >= 0 && kv_dim >= 0 && query_dim <= INT64_MAX / 4 &&
            kv_dim <= INT64_MAX / 4 && xs.rank == 2 && ws.rank == 2 && ws.dims[0] == xs.dims[1] &&
            ws.dims[1] == query_dim + 2 * kv_dim;
  if (!ok) {
    cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
              "FusedAttentionQKVProjection: x %s and w_qkv %s do not fit query_dim %lld and "
              "kv_dim %lld (want x [batch, in], w_qkv [in, query_dim + 2 * kv_dim])",
              cml__shape_text(&xs, t1), cml__shape_text(&ws, t2), (long long)query_dim,
              (long long)kv_dim);
    return false;
  }
  const cml_value_t biases[3] = {bias_q, bias_k, bias_v};
  const int64_t widths[3] = {query_dim, kv_dim, kv_dim};
  static const char* const names[3] = {"bias_q", "bias_k", "bias_v"};
  uint32_t in_count = 2, present = 0;
  for (int i = 0; i < 3; ++i) {
    if (biases[i] == CML_VALUE_INVALID) continue;
    cml_shape_t s;
    if (!cml_fused_input(f, op, biases[i], (size_t)(2 + i), &in[in_count], &s)) return false;
    if (!cml_fused_check_float(f, op, names[i], &s, xs.dtype)) return false;
    if (s.rank != 1 || s.dims[0] != widths[i]) {
      cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
                "FusedAttentionQKVProjection: %s %s must be [%lld] (x %s)", names[i],
                cml__shape_text(&s, t1), (long long)widths[i], cml__shape_text(&xs, t2));
      return false;
    }
    present |= 1u << i;
    ++in_count;
  }
  if (native && allow_native) {
    cml_shape_t outs[3];
    for (int i = 0; i < 3; ++i) {
      outs[i] = cml_shape_make(xs.dtype, 2, (int64_t[]){xs.dims[0], widths[i]});
    }
    cml_ir_attrs_t attrs;
    cml_fused_attrs_clear(&attrs);
    attrs.fused.query_dim = query_dim;
    attrs.fused.kv_dim = kv_dim;
    attrs.fused.optional_inputs = present;
    cml_value_t first = cml__op_add_node(f, op, in, in_count, outs, 3, &attrs);
    if (first == CML_VALUE_INVALID) return false;
    for (int i = 0; i < 3; ++i) out_values[i] = first + (cml_value_t)i;
    return true;
  }
  cml_value_t y = cml_op_dot(f, x, w_qkv);
  int64_t start = 0;
  for (int i = 0; i < 3; ++i) {
    cml_value_t part = cml_op_slice(f, y, (int64_t[]){0, start},
                                    (int64_t[]){xs.dims[0], start + widths[i]}, NULL, 2);
    if (biases[i] != CML_VALUE_INVALID) {
      part = cml_op_add(f, part, cml_op_reshape(f, biases[i], (int64_t[]){1, widths[i]}, 2));
    }
    out_values[i] = part;
    start += widths[i];
  }
  if (b->error != CML_OK) {
    out_values[0] = out_values[1] = out_values[2] = CML_VALUE_INVALID;
    return false;
  }
  return true;
}
