// SPDX-License-Identifier: Apache-2.0
// src/backends/xla/stablehlo/emit_linalg.c: StableHLO lowerings of the "linalg" ops
// (DotGeneral, Dot, ConvGeneral).
//
// Notes on semantics:
// - DotGeneral converts its inputs to the accumulator dtype (XLA only accumulates natively in
//   the input dtype on CPU), then the result to the output dtype; Float16/BFloat16 accumulate
//   in Float32 in modules partitioned by Shardy (see cml_shlo_dot). ConvGeneral likewise computes
//   in the wider of the input and output dtypes.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/xla/stablehlo/emit_internal.h"

// Precision of dot/convolution operands: HIGHEST for float32 on GPUs unless TF32 is allowed.
static const char* cml_shlo_precision(const cml__shlo_ctx_t* c, cml_dtype_t compute) {
  const char* p = c->opts->platform ? c->opts->platform : "";
  bool gpu = strstr(p, "cuda") || strstr(p, "gpu") || strstr(p, "rocm") || strstr(p, "CUDA");
  if (gpu && compute == CML_DTYPE_F32 && !c->opts->tf32) return "HIGHEST";
  return "DEFAULT";
}

static cml_status_t cml_shlo_dot(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  const cml_dot_config_t* d = &n->attrs->u.dot;
  cml__shlo_val_t ins[2] = {cml__shlo_value(c, n->inputs[0]), cml__shlo_value(c, n->inputs[1])};
  const cml_shape_t* out = cml_shlo_out(c, n, 0);
  cml_dtype_t acc =
      d->accumulator_dtype != CML_DTYPE_INVALID ? d->accumulator_dtype : ins[0].shape.dtype;
  // Under Shardy a Float16/BFloat16 product contracting a split dimension is summed across the
  // devices in its own dtype, each device's part rounded first (2048 + 7 ones gave 2054 where
  // one device gives 2056): such modules accumulate in Float32, so the parts and their
  // all-reduce stay Float32 and the result is rounded once, as one device rounds it.
  if ((acc == CML_DTYPE_F16 || acc == CML_DTYPE_BF16) && cml_xla_emit_is_sharded(c->module)) {
    acc = CML_DTYPE_F32;
  }
  for (int k = 0; k < 2; ++k) ins[k] = cml__shlo_convert(c, &ins[k], acc);
  cml__shlo_attr_t a;
  cml__shlo_attr_init(&a);
  cml__shlo_attr_printf(&a, "dot_dimension_numbers = #stablehlo.dot<");
  bool any = false;
  if (d->lhs_batch_count) {
    cml__shlo_attr_printf(&a, "lhs_batching_dimensions = ");
    cml__shlo_attr_list(&a, d->lhs_batch_axes, d->lhs_batch_count);
    cml__shlo_attr_printf(&a, ", rhs_batching_dimensions = ");
    cml__shlo_attr_list(&a, d->rhs_batch_axes, d->rhs_batch_count);
    any = true;
  }
  if (d->lhs_contracting_count) {
    cml__shlo_attr_printf(&a, "%slhs_contracting_dimensions = ", any ? ", " : "");
    cml__shlo_attr_list(&a, d->lhs_contracting_axes, d->lhs_contracting_count);
    cml__shlo_attr_printf(&a, ", rhs_contracting_dimensions = ");
    cml__shlo_attr_list(&a, d->rhs_contracting_axes, d->rhs_contracting_count);
  }
  const char* prec = cml_shlo_precision(c, acc);
  cml__shlo_attr_printf(&a,
                        ">, precision_config = [#stablehlo<precision %s>, "
                        "#stablehlo<precision %s>]",
                        prec, prec);
  cml_shape_t acc_shape = cml_shlo_retype(out, acc);
  cml__shlo_val_t r = cml__shlo_op(c, "stablehlo.dot_general", ins, 2, a.s, &acc_shape);
  r = cml__shlo_convert(c, &r, out->dtype);
  cml_shlo_bind1(c, n, &r);
  return CML_OK;
}

// Fills |labels| (rank entries) for one side of conv dimension numbers.
static void cml_shlo_conv_side(cml__shlo_attr_t* a, int32_t rank, int64_t first_axis,
                               const char* first, int64_t second_axis, const char* second,
                               const int64_t* spatial, int32_t spatial_count) {
  cml__shlo_attr_printf(a, "[");
  for (int32_t i = 0; i < rank; ++i) {
    if (i) cml__shlo_attr_printf(a, ", ");
    if (i == first_axis) {
      cml__shlo_attr_printf(a, "%s", first);
    } else if (i == second_axis) {
      cml__shlo_attr_printf(a, "%s", second);
    } else {
      for (int32_t k = 0; k < spatial_count; ++k) {
        if (spatial[k] == i) cml__shlo_attr_printf(a, "%d", (int)k);
      }
    }
  }
  cml__shlo_attr_printf(a, "]");
}

static cml_status_t cml_shlo_conv(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  const cml_conv_config_t* cv = &n->attrs->u.conv;
  cml__shlo_val_t ins[2] = {cml__shlo_value(c, n->inputs[0]), cml__shlo_value(c, n->inputs[1])};
  const cml_shape_t* out = cml_shlo_out(c, n, 0);
  cml_dtype_t in_dtype = ins[0].shape.dtype;
  cml_dtype_t compute = in_dtype;
  // The accumulator (docs/conv.md): the output dtype when it is of the input's kind and not
  // narrower, else the input dtype, converted to the output after the sum (Float32 inputs of
  // {0.5, 0.5} x {1, 1} to an Int32 output are 1, not 0 + 0).
  const uint64_t kinds[3] = {CML_DSET_FLOAT, CML_DSET_INT, CML_DSET_COMPLEX};
  bool same_kind = false;
  for (int k = 0; k < 3; ++k) {
    same_kind = same_kind ||
                ((CML_DTYPE_BIT(in_dtype) & kinds[k]) && (CML_DTYPE_BIT(out->dtype) & kinds[k]));
  }
  if (out->dtype != in_dtype && same_kind &&
      cml_dtype_bits(out->dtype) >= cml_dtype_bits(in_dtype)) {
    compute = out->dtype;
  }
  for (int k = 0; k < 2; ++k) ins[k] = cml__shlo_convert(c, &ins[k], compute);
  int32_t ns = cv->spatial_count, rank = ns + 2;
  // Negative padding (cropping) is applied to the input first, with the input dilation, by a
  // stablehlo.pad; the convolution then gets neither. XLA's CPU plugin read the next batch's
  // data where a window crossed into positive high padding after a negative low padding
  // ((-1, +1): 22 instead of 16).
  const int64_t* pad_low = cv->padding_low;
  const int64_t* pad_high = cv->padding_high;
  const int64_t* lhs_dilation = cv->input_dilations;
  int64_t zeros[CML_MAX_RANK] = {0}, ones[CML_MAX_RANK];
  bool crop = false;
  for (int32_t i = 0; i < ns; ++i) {
    ones[i] = 1;
    crop = crop || cv->padding_low[i] < 0 || cv->padding_high[i] < 0;
  }
  if (crop) {
    int64_t low[CML_MAX_RANK] = {0}, high[CML_MAX_RANK] = {0}, interior[CML_MAX_RANK] = {0};
    cml_shape_t padded = ins[0].shape;
    for (int32_t i = 0; i < ns && crop; ++i) {
      const int64_t ax = cv->input_spatial_axes[i], d = ins[0].shape.dims[ax];
      low[ax] = cv->padding_low[i];
      high[ax] = cv->padding_high[i];
      interior[ax] = cv->input_dilations[i] - 1;
      padded.dims[ax] = (d > 0 ? d + (d - 1) * interior[ax] : 0) + low[ax] + high[ax];
      crop = padded.dims[ax] >= 0;  // else leave it to the convolution as it is
    }
    if (crop) {
      const cml__shlo_val_t zero = cml__shlo_const_scalar(c, compute, CML__SHLO_ZERO);
      ins[0] = cml__shlo_pad(c, &ins[0], &zero, low, high, interior, &padded);
      pad_low = pad_high = zeros;
      lhs_dilation = ones;
    }
  }
  // XLA's convolution operand swapper (run inside its algebraic simplifier) copies a window
  // axis unchanged when it looks like a feature group folded into a spatial axis: no padding,
  // no kernel dilation, an input dilation equal to the kernel's size k and a stride of k - 1.
  // Where the input's size is not k, the swapped convolution's window no longer matches its
  // kernel and XLA ends the process (a failed CHECK, "Window dimensions do not match RHS
  // shape"). Such an axis gets a high padding of one stride, which adds exactly one output
  // position (of zeros) at its end; it is sliced off again below.
  int64_t padded_high[CML_MAX_RANK], extra[CML_MAX_RANK] = {0};
  bool swap_trap = false;
  for (int32_t i = 0; i < ns; ++i) {
    padded_high[i] = pad_high[i];
    const int64_t k = ins[1].shape.dims[cv->kernel_spatial_axes[i]];
    const int64_t in = ins[0].shape.dims[cv->input_spatial_axes[i]];
    const int64_t stride = cv->strides[i] > 1 ? cv->strides[i] : 1;
    const int64_t base = lhs_dilation[i] > 1 ? lhs_dilation[i] : 1;
    const int64_t window_dilation = cv->kernel_dilations[i] > 1 ? cv->kernel_dilations[i] : 1;
    if (k >= 2 && in > 0 && in != k && pad_low[i] == 0 && pad_high[i] == 0 &&
        window_dilation == 1 && base == k && stride == k - 1) {
      padded_high[i] = stride;
      extra[cv->output_spatial_axes[i]] = 1;
      swap_trap = true;
    }
  }
  pad_high = padded_high;
  cml__shlo_attr_t a;
  cml__shlo_attr_init(&a);
  cml__shlo_attr_printf(&a, "dimension_numbers = #stablehlo.conv<");
  cml_shlo_conv_side(&a, rank, cv->input_batch_axis, "b", cv->input_channel_axis, "f",
                     cv->input_spatial_axes, ns);
  cml__shlo_attr_printf(&a, "x");
  cml_shlo_conv_side(&a, rank, cv->kernel_input_channel_axis, "i", cv->kernel_output_channel_axis,
                     "o", cv->kernel_spatial_axes, ns);
  cml__shlo_attr_printf(&a, "->");
  cml_shlo_conv_side(&a, rank, cv->output_batch_axis, "b", cv->output_channel_axis, "f",
                     cv->output_spatial_axes, ns);
  cml__shlo_attr_printf(&a, ">, window_strides = ");
  cml__shlo_attr_array(&a, cv->strides, ns);
  cml__shlo_attr_printf(&a, ", padding = ");
  cml__shlo_attr_padding(&a, pad_low, pad_high, ns);
  cml__shlo_attr_printf(&a, ", lhs_dilation = ");
  cml__shlo_attr_array(&a, lhs_dilation, ns);
  cml__shlo_attr_printf(&a, ", rhs_dilation = ");
  cml__shlo_attr_array(&a, cv->kernel_dilations, ns);
  const char* prec = cml_shlo_precision(c, compute);
  cml__shlo_attr_printf(&a,
                        ", feature_group_count = %lld : i64, batch_group_count = %lld : i64, "
                        "precision_config = [#stablehlo<precision %s>, #stablehlo<precision %s>]",
                        (long long)(cv->channel_group_count > 1 ? cv->channel_group_count : 1),
                        (long long)(cv->batch_group_count > 1 ? cv->batch_group_count : 1), prec,
                        prec);
  cml_shape_t compute_shape = cml_shlo_retype(out, compute);
  const cml_shape_t sliced_shape = compute_shape;
  for (int32_t i = 0; i < rank; ++i) compute_shape.dims[i] += extra[i];
  // Under Shardy the spatial axes of the operands and the result are not split: XLA's
  // partitioner doubled every output of a convolution whose input was split along a spatial
  // axis and whose kernel along its input channels, and ended the process on a split spatial
  // axis with input dilation and negative padding. Batch and channel axes stay open.
  uint64_t in_sp = 0, ker_sp = 0, out_sp = 0;
  for (int32_t i = 0; i < ns; ++i) {
    in_sp |= (uint64_t)1 << cv->input_spatial_axes[i];
    ker_sp |= (uint64_t)1 << cv->kernel_spatial_axes[i];
    out_sp |= (uint64_t)1 << cv->output_spatial_axes[i];
  }
  ins[0] = cml__shlo_replicate_axes(c, &ins[0], in_sp);
  ins[1] = cml__shlo_replicate_axes(c, &ins[1], ker_sp);
  cml__shlo_val_t r = cml__shlo_op(c, "stablehlo.convolution", ins, 2, a.s, &compute_shape);
  r = cml__shlo_replicate_axes(c, &r, out_sp);
  if (swap_trap) {
    int64_t starts[CML_MAX_RANK] = {0}, strides[CML_MAX_RANK];
    for (int32_t i = 0; i < rank; ++i) strides[i] = 1;
    r = cml__shlo_slice(c, &r, starts, sliced_shape.dims, strides, &sliced_shape);
  }
  r = cml__shlo_convert(c, &r, out->dtype);
  cml_shlo_bind1(c, n, &r);
  return CML_OK;
}

cml_status_t cml__shlo_emit_linalg(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  switch (n->op) {
    case CML_OP_DOT:
    case CML_OP_DOT_GENERAL:
      return cml_shlo_dot(c, n);
    case CML_OP_CONV_GENERAL:
      return cml_shlo_conv(c, n);
    default:
      return cml__shlo_unimplemented(c, n, "no StableHLO lowering for this op");
  }
}
