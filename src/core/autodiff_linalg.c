// SPDX-License-Identifier: Apache-2.0
// src/core/autodiff_linalg.c: VJPs of the linalg group. Dot and DotGeneral (Dot is recorded
// with DotGeneral's config): each operand's cotangent is a DotGeneral of the output cotangent
// with the other operand, transposed back to the operand's axis order. ConvGeneral: the input
// and kernel cotangents are convolutions again (the transposed convolutions), channel groups
// included; batch groups have no VJP yet.
#include <string.h>

#include "autodiff_internal.h"

// The free axes of an operand of |rank| (neither batch nor contracting), ascending.
static int32_t cml_ad_free_axes(int32_t rank, const int64_t* batch, int32_t nb,
                                const int64_t* contract, int32_t nc, int64_t* out) {
  bool used[CML_MAX_RANK] = {false};
  for (int32_t i = 0; i < nb; ++i) used[batch[i]] = true;
  for (int32_t i = 0; i < nc; ++i) used[contract[i]] = true;
  int32_t count = 0;
  for (int32_t i = 0; i < rank; ++i) {
    if (!used[i]) out[count++] = i;
  }
  return count;
}

// The cotangent of one operand ("this", of |rank| axes: batch |tb|, contracting |tc|, free
// axes at g's positions [g_this_free, +n_this_free)) from g and the other operand ("other":
// batch |ob|, contracting |oc|, free |of|, its free axes at g's [g_other_free, ...)).
static cml_value_t cml_ad_dot_operand(cml__ad_t* ad, cml_value_t g, cml_value_t other, int32_t rank,
                                      const int64_t* tb, const int64_t* tc, const int64_t* tf,
                                      int32_t n_this_free, int32_t g_this_free, const int64_t* ob,
                                      const int64_t* oc, const int64_t* of, int32_t nb, int32_t nc,
                                      int32_t n_other_free, int32_t g_other_free,
                                      cml_dtype_t dtype) {
  cml_dot_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.lhs_batch_count = cfg.rhs_batch_count = nb;
  for (int32_t i = 0; i < nb; ++i) {
    cfg.lhs_batch_axes[i] = i;
    cfg.rhs_batch_axes[i] = ob[i];
  }
  cfg.lhs_contracting_count = cfg.rhs_contracting_count = n_other_free;
  for (int32_t i = 0; i < n_other_free; ++i) {
    cfg.lhs_contracting_axes[i] = g_other_free + i;
    cfg.rhs_contracting_axes[i] = of[i];
  }
  cfg.accumulator_dtype = CML_DTYPE_INVALID;
  cfg.output_dtype = CML_DTYPE_INVALID;
  cml_value_t r = cml_op_dot_general(ad->f, g, other, &cfg);
  // r's axes: batch (this operand's tb order), g's free = this operand's free (tf), then the
  // other operand's remaining axes (its contracting ones) ascending, each matching tc[j] where
  // oc[j] is that axis.
  int64_t perm[CML_MAX_RANK];
  int32_t pos = 0;
  for (int32_t i = 0; i < nb; ++i) perm[tb[i]] = pos++;
  for (int32_t i = 0; i < n_this_free; ++i) perm[tf[i]] = pos++;
  (void)g_this_free;
  int64_t sorted_oc[CML_MAX_RANK];
  memcpy(sorted_oc, oc, sizeof(int64_t) * (size_t)nc);
  for (int32_t i = 1; i < nc; ++i) {
    for (int32_t j = i; j > 0 && sorted_oc[j - 1] > sorted_oc[j]; --j) {
      int64_t t = sorted_oc[j];
      sorted_oc[j] = sorted_oc[j - 1];
      sorted_oc[j - 1] = t;
    }
  }
  for (int32_t i = 0; i < nc; ++i) {
    for (int32_t j = 0; j < nc; ++j) {
      if (oc[j] == sorted_oc[i]) perm[tc[j]] = pos++;
    }
  }
  bool identity = true;
  for (int32_t i = 0; i < rank; ++i) identity &= perm[i] == i;
  if (!identity) r = cml_op_transpose(ad->f, r, perm, rank);
  return cml__ad_convert(ad, r, dtype);
}

//===--- ConvGeneral ---===//

static int64_t cml_ad_dilate(int64_t size, int64_t dilation) {
  return size == 0 ? 0 : 1 + dilation * (size - 1);
}

// d input: the cotangent convolved with the spatially reversed kernel (input and output
// feature axes swapped), strides and input dilations exchanged, padded so every input position
// sees the windows that read it. Channel groups: the kernel's group axis moves from its output
// to its input feature axis.
static cml_value_t cml_ad_conv_input(cml__ad_t* ad, const cml_conv_config_t* c, cml_value_t g,
                                     cml_value_t kernel, const cml_shape_t* is,
                                     const cml_shape_t* ks, const cml_shape_t* os) {
  cml_function_t* f = ad->f;
  int32_t sc = c->spatial_count;
  int64_t groups = c->channel_group_count;
  cml_value_t k = kernel;
  if (groups > 1) {
    // [.., O, .., I, ..] -> split O into (G, O/G) -> G next to I, merged into I' = G * I.
    int64_t o = c->kernel_output_channel_axis, i = c->kernel_input_channel_axis;
    int32_t r = ks->rank;
    int64_t split[CML_MAX_RANK + 1];
    int32_t n = 0;
    for (int32_t a = 0; a < r; ++a) {
      if (a == o) {
        split[n++] = groups;
        split[n++] = ks->dims[a] / groups;
      } else {
        split[n++] = ks->dims[a];
      }
    }
    k = cml_op_reshape(f, k, split, n);
    // Axis positions in the split array: G at o, O/G at o + 1, axis a > o at a + 1.
    int64_t gi = o, ii = i > o ? i + 1 : i;
    int64_t perm[CML_MAX_RANK + 1];
    int32_t m = 0;
    for (int32_t a = 0; a < n; ++a) {
      if (a == gi) continue;
      if (a == ii) perm[m++] = gi;
      perm[m++] = a;
    }
    k = cml_op_transpose(f, k, perm, n);
    int64_t merged[CML_MAX_RANK];
    for (int32_t a = 0; a < r; ++a) merged[a] = ks->dims[a];
    merged[o] = ks->dims[o] / groups;
    merged[i] = ks->dims[i] * groups;
    k = cml_op_reshape(f, k, merged, r);
  }
  k = cml_op_reverse(f, k, c->kernel_spatial_axes, (size_t)sc);
  cml_conv_config_t t = *c;
  t.input_batch_axis = c->output_batch_axis;
  t.input_channel_axis = c->output_channel_axis;
  t.kernel_input_channel_axis = c->kernel_output_channel_axis;
  t.kernel_output_channel_axis = c->kernel_input_channel_axis;
  t.output_batch_axis = c->input_batch_axis;
  t.output_channel_axis = c->input_channel_axis;
  for (int32_t s = 0; s < sc; ++s) {
    t.input_spatial_axes[s] = c->output_spatial_axes[s];
    t.output_spatial_axes[s] = c->input_spatial_axes[s];
    int64_t in = cml_ad_dilate(is->dims[c->input_spatial_axes[s]], c->input_dilations[s]);
    int64_t win = cml_ad_dilate(ks->dims[c->kernel_spatial_axes[s]], c->kernel_dilations[s]);
    int64_t out = cml_ad_dilate(os->dims[c->output_spatial_axes[s]], c->strides[s]);
    int64_t before = win - c->padding_low[s] - 1;
    t.padding_low[s] = before;
    t.padding_high[s] = in + win - 1 - out - before;
    t.strides[s] = c->input_dilations[s];
    t.input_dilations[s] = c->strides[s];
  }
  t.output_dtype = CML_DTYPE_INVALID;
  return cml_op_conv_general(f, g, k, &t);
}

// d kernel: the input (batch and feature axes swapped) convolved with the cotangent as the
// kernel; strides and kernel dilations exchanged. Channel groups become batch groups.
static cml_value_t cml_ad_conv_kernel(cml__ad_t* ad, const cml_conv_config_t* c, cml_value_t g,
                                      cml_value_t input, const cml_shape_t* is,
                                      const cml_shape_t* ks, const cml_shape_t* os) {
  int32_t sc = c->spatial_count;
  cml_conv_config_t t = *c;
  t.input_batch_axis = c->input_channel_axis;
  t.input_channel_axis = c->input_batch_axis;
  t.kernel_output_channel_axis = c->output_channel_axis;
  t.kernel_input_channel_axis = c->output_batch_axis;
  t.output_batch_axis = c->kernel_input_channel_axis;
  t.output_channel_axis = c->kernel_output_channel_axis;
  for (int32_t s = 0; s < sc; ++s) {
    t.kernel_spatial_axes[s] = c->output_spatial_axes[s];
    t.output_spatial_axes[s] = c->kernel_spatial_axes[s];
    int64_t in = cml_ad_dilate(is->dims[c->input_spatial_axes[s]], c->input_dilations[s]);
    int64_t win = cml_ad_dilate(ks->dims[c->kernel_spatial_axes[s]], c->kernel_dilations[s]);
    int64_t out = cml_ad_dilate(os->dims[c->output_spatial_axes[s]], c->strides[s]);
    t.padding_low[s] = c->padding_low[s];
    t.padding_high[s] = (out - in) + (win - c->padding_low[s] - 1);
    t.strides[s] = c->kernel_dilations[s];
    t.kernel_dilations[s] = c->strides[s];
  }
  t.batch_group_count = c->channel_group_count > 1 ? c->channel_group_count : 1;
  t.channel_group_count = 1;
  t.output_dtype = CML_DTYPE_INVALID;
  return cml_op_conv_general(ad->f, input, g, &t);
}

static cml_status_t cml_ad_conv(cml__ad_t* ad, const cml_ir_node_t* n, const cml_value_t* cts,
                                cml_value_t* in_cts) {
  const cml_conv_config_t* c = &n->attrs->u.conv;
  if (c->batch_group_count > 1) {
    return cml__ad_no_vjp(ad, n,
                          "batch_group_count > 1; the kernel gradient of a convolution with "
                          "channel_group_count > 1 is one, so second derivatives through grouped "
                          "convolutions are not supported either");
  }
  const cml_shape_t* is = cml__ad_in_shape(ad, n, 0);
  const cml_shape_t* ks = cml__ad_in_shape(ad, n, 1);
  const cml_shape_t* os = cml__ad_out_shape(ad, n, 0);
  if (cml_shape_element_count(os) == 0) {
    // An empty output (a spatial axis, the batch or the output features of size 0): nothing
    // reaches either operand. (The transposed convolutions below would use the empty
    // cotangent as a window, which ConvGeneral refuses.)
    if (cml__ad_wants(ad, n, 0)) in_cts[0] = cml__ad_zeros(ad, is);
    if (cml__ad_wants(ad, n, 1)) in_cts[1] = cml__ad_zeros(ad, ks);
    return CML_OK;
  }
  if (cml__ad_wants(ad, n, 0)) {
    cml_value_t g = cml__ad_convert(ad, cts[0], ks->dtype);
    in_cts[0] = cml__ad_convert(ad, cml_ad_conv_input(ad, c, g, cml__ad_in(ad, n, 1), is, ks, os),
                                is->dtype);
  }
  if (cml__ad_wants(ad, n, 1)) {
    cml_value_t g = cml__ad_convert(ad, cts[0], is->dtype);
    in_cts[1] = cml__ad_convert(ad, cml_ad_conv_kernel(ad, c, g, cml__ad_in(ad, n, 0), is, ks, os),
                                ks->dtype);
  }
  return CML_OK;
}

cml_status_t cml__ad_vjp_linalg(cml__ad_t* ad, const cml_ir_node_t* n, const cml_value_t* cts,
                                cml_value_t* in_cts) {
  if (n->op == CML_OP_CONV_GENERAL) return cml_ad_conv(ad, n, cts, in_cts);
  if (n->op != CML_OP_DOT && n->op != CML_OP_DOT_GENERAL) return cml__ad_no_vjp(ad, n, NULL);
  const cml_dot_config_t* d = &n->attrs->u.dot;
  const cml_shape_t* ls = cml__ad_in_shape(ad, n, 0);
  const cml_shape_t* rs = cml__ad_in_shape(ad, n, 1);
  cml_value_t lhs = cml__ad_in(ad, n, 0), rhs = cml__ad_in(ad, n, 1);
  cml_value_t g = cts[0];
  int64_t lf[CML_MAX_RANK], rf[CML_MAX_RANK];
  int32_t nb = d->lhs_batch_count, nc = d->lhs_contracting_count;
  int32_t nlf = cml_ad_free_axes(ls->rank, d->lhs_batch_axes, nb, d->lhs_contracting_axes, nc, lf);
  int32_t nrf = cml_ad_free_axes(rs->rank, d->rhs_batch_axes, nb, d->rhs_contracting_axes, nc, rf);
  // g in the operands' dtype (DotGeneral may accumulate or output in another one).
  cml_value_t gl = cml__ad_convert(ad, g, ls->dtype);
  if (cml__ad_wants(ad, n, 0)) {
    cml_value_t r = rhs;
    if (rs->dtype != ls->dtype) r = cml__ad_convert(ad, rhs, ls->dtype);
    in_cts[0] = cml_ad_dot_operand(ad, gl, r, ls->rank, d->lhs_batch_axes, d->lhs_contracting_axes,
                                   lf, nlf, nb, d->rhs_batch_axes, d->rhs_contracting_axes, rf, nb,
                                   nc, nrf, nb + nlf, ls->dtype);
  }
  if (cml__ad_wants(ad, n, 1)) {
    // DotGeneral(lhs, g) contracts lhs's free axes with g's lhs-free block and yields batch,
    // lhs's contracting axes (ascending), then g's rhs-free block: for a plain matmul this is
    // x^T g with no transpose.
    cml_value_t gr = cml__ad_convert(ad, g, rs->dtype);
    cml_value_t l = lhs;
    if (rs->dtype != ls->dtype) l = cml__ad_convert(ad, lhs, rs->dtype);
    cml_dot_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.lhs_batch_count = cfg.rhs_batch_count = nb;
    for (int32_t i = 0; i < nb; ++i) {
      cfg.lhs_batch_axes[i] = d->lhs_batch_axes[i];
      cfg.rhs_batch_axes[i] = i;
    }
    cfg.lhs_contracting_count = cfg.rhs_contracting_count = nlf;
    for (int32_t i = 0; i < nlf; ++i) {
      cfg.lhs_contracting_axes[i] = lf[i];
      cfg.rhs_contracting_axes[i] = nb + i;
    }
    cml_value_t r = cml_op_dot_general(ad->f, l, gr, &cfg);
    int64_t perm[CML_MAX_RANK];
    int32_t pos = 0;
    for (int32_t i = 0; i < nb; ++i) perm[d->rhs_batch_axes[i]] = pos++;
    for (int64_t axis = 0; axis < ls->rank; ++axis) {
      for (int32_t j = 0; j < nc; ++j) {
        if (d->lhs_contracting_axes[j] == axis) perm[d->rhs_contracting_axes[j]] = pos++;
      }
    }
    for (int32_t i = 0; i < nrf; ++i) perm[rf[i]] = pos++;
    bool identity = true;
    for (int32_t i = 0; i < rs->rank; ++i) identity &= perm[i] == i;
    if (!identity) r = cml_op_transpose(ad->f, r, perm, rs->rank);
    in_cts[1] = cml__ad_convert(ad, r, rs->dtype);
  }
  (void)gl;
  return CML_OK;
}
