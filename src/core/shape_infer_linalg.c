// SPDX-License-Identifier: Apache-2.0
// src/core/shape_infer_linalg.c: shape inference of the "linalg" ops (ConvGeneral, DotGeneral,
// Dot).
#include "core/shape_infer_internal.h"

// Checks that |count| axes (|a|, then the |n| entries of |rest|...) form a permutation of
// [0, rank).
static bool cml_is_axis_permutation(int32_t rank, int64_t a, int64_t b, const int64_t* rest,
                                    int32_t n) {
  if (n + 2 != rank) return false;
  bool seen[CML_MAX_RANK] = {false};
  int64_t all[CML_MAX_RANK];
  all[0] = a;
  all[1] = b;
  for (int32_t i = 0; i < n; ++i) all[i + 2] = rest[i];
  for (int32_t i = 0; i < rank; ++i) {
    if (all[i] < 0 || all[i] >= rank || seen[all[i]]) return false;
    seen[all[i]] = true;
  }
  return true;
}

cml_status_t cml__infer_conv(const cml_shape_t* input, const cml_shape_t* kernel,
                             const cml_conv_config_t* config, cml_ir_attrs_t* attrs,
                             cml_shape_t* out) {
  SHAPE_BUFFERS;
  (void)sb2_;
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_CONV_GENERAL, input, "input", false));
  if (!config) return INVALID("ConvGeneral: config is NULL");
  if (kernel->dtype != input->dtype) {
    return INVALID("ConvGeneral: dtype mismatch: input %s and kernel %s", S0(input), S1(kernel));
  }
  int32_t n = config->spatial_count;
  if (n < 0 || n + 2 > CML_MAX_RANK || input->rank != n + 2 || kernel->rank != n + 2) {
    return INVALID("ConvGeneral: input %s and kernel %s must both have rank %d (%d spatial axes)",
                   S0(input), S1(kernel), (int)(n + 2), (int)n);
  }
  cml_conv_config_t c = *config;
  if (!cml_is_axis_permutation(n + 2, c.input_batch_axis, c.input_channel_axis,
                               c.input_spatial_axes, n)) {
    return INVALID(
        "ConvGeneral: input axes (batch, channel, spatial) are not a permutation of "
        "the axes of input %s",
        S0(input));
  }
  if (!cml_is_axis_permutation(n + 2, c.kernel_input_channel_axis, c.kernel_output_channel_axis,
                               c.kernel_spatial_axes, n)) {
    return INVALID(
        "ConvGeneral: kernel axes (input channel, output channel, spatial) are not a "
        "permutation of the axes of kernel %s",
        S1(kernel));
  }
  if (!cml_is_axis_permutation(n + 2, c.output_batch_axis, c.output_channel_axis,
                               c.output_spatial_axes, n)) {
    return INVALID(
        "ConvGeneral: output axes (batch, channel, spatial) are not a permutation of "
        "[0, %d) (input %s)",
        (int)(n + 2), S0(input));
  }
  if (c.channel_group_count < 0 || c.channel_group_count > CML__ATTR_MAX ||
      c.batch_group_count < 0 || c.batch_group_count > CML__ATTR_MAX) {
    return INVALID(
        "ConvGeneral: channel_group_count %lld and batch_group_count %lld must be in [0, %lld] "
        "(0 means 1; input %s, kernel %s)",
        (long long)c.channel_group_count, (long long)c.batch_group_count, (long long)CML__ATTR_MAX,
        S0(input), S1(kernel));
  }
  if (c.channel_group_count == 0) c.channel_group_count = 1;
  if (c.batch_group_count == 0) c.batch_group_count = 1;
  int64_t fg = c.channel_group_count, bg = c.batch_group_count;
  if (fg > 1 && bg > 1) {
    return INVALID(
        "ConvGeneral: channel_group_count %lld and batch_group_count %lld cannot both "
        "be > 1 (input %s, kernel %s)",
        (long long)fg, (long long)bg, S0(input), S1(kernel));
  }
  int64_t in_batch = input->dims[c.input_batch_axis];
  int64_t in_channels = input->dims[c.input_channel_axis];
  int64_t k_in = kernel->dims[c.kernel_input_channel_axis];
  int64_t k_out = kernel->dims[c.kernel_output_channel_axis];
  int64_t want_channels = 0;
  if (__builtin_mul_overflow(k_in, fg, &want_channels) || in_channels != want_channels) {
    return INVALID(
        "ConvGeneral: input channels %lld of input %s must equal kernel input "
        "channels %lld of kernel %s times channel_group_count %lld",
        (long long)in_channels, S0(input), (long long)k_in, S1(kernel), (long long)fg);
  }
  if (k_out % fg != 0 || k_out % bg != 0) {
    return INVALID(
        "ConvGeneral: kernel output channels %lld of kernel %s must be divisible by "
        "channel_group_count %lld and batch_group_count %lld",
        (long long)k_out, S1(kernel), (long long)fg, (long long)bg);
  }
  if (in_batch % bg != 0) {
    return INVALID(
        "ConvGeneral: input batch %lld of input %s must be divisible by "
        "batch_group_count %lld",
        (long long)in_batch, S0(input), (long long)bg);
  }
  if (c.output_dtype == CML_DTYPE_INVALID) c.output_dtype = input->dtype;
  if (!cml_dtype_in(CML_DSET_NUMBER_REAL, c.output_dtype)) {
    return INVALID("ConvGeneral: output dtype %s is not accepted (input %s)",
                   cml_dtype_name(c.output_dtype), S0(input));
  }
  cml_shape_t result = cml_shape_with(c.output_dtype, n + 2, input->dims);
  result.dims[c.output_batch_axis] = in_batch / bg;
  result.dims[c.output_channel_axis] = k_out;
  for (int32_t i = 0; i < n; ++i) {
    if (c.strides[i] == 0) c.strides[i] = 1;
    if (c.input_dilations[i] == 0) c.input_dilations[i] = 1;
    if (c.kernel_dilations[i] == 0) c.kernel_dilations[i] = 1;
    if (c.strides[i] < 0 || c.input_dilations[i] < 0 || c.kernel_dilations[i] < 0) {
      return INVALID(
          "ConvGeneral: spatial axis %d: stride %lld and dilations %lld, %lld must be "
          "positive (input %s)",
          (int)i, (long long)c.strides[i], (long long)c.input_dilations[i],
          (long long)c.kernel_dilations[i], S0(input));
    }
    int64_t window = kernel->dims[c.kernel_spatial_axes[i]];
    if (window < 1) {
      // StableHLO/XLA: windows are non-empty (XLA refuses a zero-size window).
      return INVALID(
          "ConvGeneral: spatial axis %d: kernel %s has size 0 along its spatial axis %lld (the "
          "window must not be empty; input %s)",
          (int)i, S1(kernel), (long long)c.kernel_spatial_axes[i], S0(input));
    }
    int64_t size = 0;
    cml_window_result_t r = cml_window_output(
        input->dims[c.input_spatial_axes[i]], c.input_dilations[i], c.padding_low[i],
        c.padding_high[i], kernel->dims[c.kernel_spatial_axes[i]], c.kernel_dilations[i],
        c.strides[i], &size);
    if (r == CML_WINDOW_NEGATIVE) {
      return INVALID("ConvGeneral: spatial axis %d: padding (%lld, %lld) makes input %s negative",
                     (int)i, (long long)c.padding_low[i], (long long)c.padding_high[i], S0(input));
    }
    if (r == CML_WINDOW_OUT_OF_RANGE) {
      return INVALID(
          "ConvGeneral: spatial axis %d: padding (%lld, %lld), stride %lld or dilations (input "
          "%lld, kernel %lld) out of range: each, and the dilated and padded sizes, must be at "
          "most %lld in magnitude (input %s, kernel %s)",
          (int)i, (long long)c.padding_low[i], (long long)c.padding_high[i],
          (long long)c.strides[i], (long long)c.input_dilations[i],
          (long long)c.kernel_dilations[i], (long long)CML__ATTR_MAX, S0(input), S1(kernel));
    }
    result.dims[c.output_spatial_axes[i]] = size;
  }
  for (int32_t i = n; i < CML_MAX_RANK; ++i) {
    c.strides[i] = c.input_dilations[i] = c.kernel_dilations[i] = 0;
    c.padding_low[i] = c.padding_high[i] = 0;
    c.input_spatial_axes[i] = c.kernel_spatial_axes[i] = c.output_spatial_axes[i] = 0;
  }
  *out = result;
  attrs->u.conv = c;
  return CML_OK;
}

cml_status_t cml__infer_dot_general(cml_op_t op, const cml_shape_t* lhs, const cml_shape_t* rhs,
                                    const cml_dot_config_t* config, cml_ir_attrs_t* attrs,
                                    cml_shape_t* out) {
  SHAPE_BUFFERS;
  (void)sb2_;
  const char* name = cml_op_name(op);
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(op, lhs, "lhs", false));
  if (!config) return INVALID("%s: config is NULL", name);
  if (lhs->dtype != rhs->dtype) {
    return INVALID("%s: dtype mismatch: lhs %s and rhs %s", name, S0(lhs), S1(rhs));
  }
  const cml_dot_config_t* c = config;
  if (!cml_count_ok(c->lhs_contracting_count) || !cml_count_ok(c->rhs_contracting_count) ||
      !cml_count_ok(c->lhs_batch_count) || !cml_count_ok(c->rhs_batch_count) ||
      c->lhs_contracting_count != c->rhs_contracting_count ||
      c->lhs_batch_count != c->rhs_batch_count) {
    return INVALID(
        "%s: lhs and rhs need as many contracting axes (%d vs %d) and batch axes "
        "(%d vs %d) (lhs %s, rhs %s)",
        name, (int)c->lhs_contracting_count, (int)c->rhs_contracting_count, (int)c->lhs_batch_count,
        (int)c->rhs_batch_count, S0(lhs), S1(rhs));
  }
  int64_t lhs_axes[2 * CML_MAX_RANK], rhs_axes[2 * CML_MAX_RANK];
  int32_t nc = c->lhs_contracting_count, nb = c->lhs_batch_count;
  for (int32_t i = 0; i < nc; ++i) {
    lhs_axes[i] = c->lhs_contracting_axes[i];
    rhs_axes[i] = c->rhs_contracting_axes[i];
  }
  for (int32_t i = 0; i < nb; ++i) {
    lhs_axes[nc + i] = c->lhs_batch_axes[i];
    rhs_axes[nc + i] = c->rhs_batch_axes[i];
  }
  if (nc + nb > lhs->rank || !cml_unique_in_range(lhs_axes, nc + nb, lhs->rank)) {
    return INVALID("%s: contracting and batch axes of lhs %s must be distinct and in range", name,
                   S0(lhs));
  }
  if (nc + nb > rhs->rank || !cml_unique_in_range(rhs_axes, nc + nb, rhs->rank)) {
    return INVALID("%s: contracting and batch axes of rhs %s must be distinct and in range", name,
                   S1(rhs));
  }
  for (int32_t i = 0; i < nc + nb; ++i) {
    if (lhs->dims[lhs_axes[i]] != rhs->dims[rhs_axes[i]]) {
      return INVALID(
          "%s: %s axis %lld of lhs %s (size %lld) does not match axis %lld of rhs %s "
          "(size %lld)",
          name, i < nc ? "contracting" : "batch", (long long)lhs_axes[i], S0(lhs),
          (long long)lhs->dims[lhs_axes[i]], (long long)rhs_axes[i], S1(rhs),
          (long long)rhs->dims[rhs_axes[i]]);
    }
  }
  cml_dot_config_t norm = *c;
  if (norm.accumulator_dtype == CML_DTYPE_INVALID) norm.accumulator_dtype = lhs->dtype;
  if (norm.output_dtype == CML_DTYPE_INVALID) norm.output_dtype = norm.accumulator_dtype;
  if (!cml_dtype_in(CML_DSET_NUMBER, norm.accumulator_dtype) ||
      !cml_dtype_in(CML_DSET_NUMBER, norm.output_dtype)) {
    return INVALID("%s: accumulator dtype %s / output dtype %s not accepted (lhs %s)", name,
                   cml_dtype_name(norm.accumulator_dtype), cml_dtype_name(norm.output_dtype),
                   S0(lhs));
  }
  int32_t out_rank = lhs->rank + rhs->rank - 2 * nc - nb;
  if (out_rank > CML_MAX_RANK) {
    return INVALID("%s: output rank %d exceeds %d (lhs %s, rhs %s)", name, (int)out_rank,
                   CML_MAX_RANK, S0(lhs), S1(rhs));
  }
  bool lhs_used[CML_MAX_RANK] = {false}, rhs_used[CML_MAX_RANK] = {false};
  for (int32_t i = 0; i < nc + nb; ++i) {
    lhs_used[lhs_axes[i]] = true;
    rhs_used[rhs_axes[i]] = true;
  }
  cml_shape_t result = cml_shape_with(norm.output_dtype, 0, NULL);
  for (int32_t i = 0; i < nb; ++i) result.dims[result.rank++] = lhs->dims[c->lhs_batch_axes[i]];
  for (int32_t i = 0; i < lhs->rank; ++i) {
    if (!lhs_used[i]) result.dims[result.rank++] = lhs->dims[i];
  }
  for (int32_t i = 0; i < rhs->rank; ++i) {
    if (!rhs_used[i]) result.dims[result.rank++] = rhs->dims[i];
  }
  for (int32_t i = nc; i < CML_MAX_RANK; ++i) {
    norm.lhs_contracting_axes[i] = norm.rhs_contracting_axes[i] = 0;
  }
  for (int32_t i = nb; i < CML_MAX_RANK; ++i) norm.lhs_batch_axes[i] = norm.rhs_batch_axes[i] = 0;
  *out = result;
  attrs->u.dot = norm;
  return CML_OK;
}

cml_status_t cml__infer_dot(const cml_shape_t* lhs, const cml_shape_t* rhs, cml_ir_attrs_t* attrs,
                            cml_shape_t* out) {
  SHAPE_BUFFERS;
  (void)sb2_;
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_DOT, lhs, "lhs", false));
  if (lhs->rank < 1 || lhs->rank > 2 || rhs->rank < 1 || rhs->rank > 2) {
    return INVALID("Dot: operands must be vectors or matrices, got lhs %s and rhs %s", S0(lhs),
                   S1(rhs));
  }
  cml_dot_config_t c;
  memset(&c, 0, sizeof c);
  c.lhs_contracting_count = c.rhs_contracting_count = 1;
  c.lhs_contracting_axes[0] = lhs->rank - 1;
  c.rhs_contracting_axes[0] = 0;
  if (lhs->dtype == rhs->dtype && lhs->dims[lhs->rank - 1] != rhs->dims[0]) {
    return INVALID("Dot: incompatible shapes %s and %s (contracting sizes %lld and %lld)", S0(lhs),
                   S1(rhs), (long long)lhs->dims[lhs->rank - 1], (long long)rhs->dims[0]);
  }
  cml_status_t st = cml__infer_dot_general(CML_OP_DOT, lhs, rhs, &c, attrs, out);
  return st;
}
