// SPDX-License-Identifier: Apache-2.0
// tests/differential/diff_linalg.c: DotGeneral (batched, and with a wider output dtype), Dot,
// and ConvGeneral (plain; strided, padded and dilated; grouped). Integers exact (wrap-around
// included); floats within a relative bound, since the order of the products' sum differs.
#include <stdio.h>
#include <string.h>

#include "diff_common.h"

typedef struct dt_linalg_ctx_t {
  int variant;
  cml_dtype_t out_dtype;
} dt_linalg_ctx_t;

static size_t dt_build_dot_general(cml_function_t* f, const cml_value_t* p, const void* ctx,
                                   cml_value_t* outs) {
  const dt_linalg_ctx_t* l = ctx;
  cml_dot_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.lhs_contracting_count = 1;
  cfg.lhs_contracting_axes[0] = 2;
  cfg.rhs_contracting_count = 1;
  cfg.rhs_contracting_axes[0] = 1;
  cfg.lhs_batch_count = 1;
  cfg.lhs_batch_axes[0] = 0;
  cfg.rhs_batch_count = 1;
  cfg.rhs_batch_axes[0] = 0;
  cfg.accumulator_dtype = l->out_dtype;
  cfg.output_dtype = l->out_dtype;
  outs[0] = cml_op_dot_general(f, p[0], p[1], &cfg);
  return 1;
}

static size_t dt_build_dot(cml_function_t* f, const cml_value_t* p, const void* ctx,
                           cml_value_t* outs) {
  outs[0] = cml_op_dot(f, p[0], p[1]);
  return 1;
}

static dt_tol_t dt_sum_tol(void) { return (dt_tol_t){DT_REL, 32, 1}; }

static void dt_dot_general(cml_dtype_t d, cml_dtype_t out) {
  if (!dt_selected("DotGeneral", d)) return;
  dt_case_t c;
  dt_case_init(&c, "DotGeneral", d, dt_sum_tol());
  if (out != CML_DTYPE_INVALID) snprintf(c.variant, sizeof c.variant, "-> %s", cml_dtype_name(out));
  void* a = dt_case_input(&c, d, 3, (const int64_t[]){2, 3, 17});
  void* b = dt_case_input(&c, d, 3, (const int64_t[]){2, 17, 5});
  dt_fill_t kind = cml_dtype_is_int(d) ? DT_FILL_WIDE : DT_FILL_UNIT;  // ints wrap around
  dt_fill(d, a, 0, 2 * 3 * 17, kind);
  dt_fill(d, b, 0, 2 * 17 * 5, kind);
  dt_linalg_ctx_t ctx = {0, out};
  c.build = dt_build_dot_general;
  c.ctx = &ctx;
  dt_check(&c);
  dt_case_free(&c);
}

static void dt_dot(cml_dtype_t d) {
  if (!dt_selected("Dot", d)) return;
  dt_case_t c;
  dt_case_init(&c, "Dot", d, dt_sum_tol());
  snprintf(c.variant, sizeof c.variant, "matrix.vector");
  void* a = dt_case_input(&c, d, 2, (const int64_t[]){7, 33});
  void* b = dt_case_input(&c, d, 1, (const int64_t[]){33});
  dt_fill(d, a, 0, 7 * 33, DT_FILL_UNIT);
  dt_fill(d, b, 0, 33, DT_FILL_UNIT);
  c.build = dt_build_dot;
  dt_check(&c);
  dt_case_free(&c);
}

static size_t dt_build_conv(cml_function_t* f, const cml_value_t* p, const void* ctx,
                            cml_value_t* outs) {
  const dt_linalg_ctx_t* l = ctx;
  cml_conv_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.spatial_count = 2;
  cfg.input_batch_axis = 0;
  cfg.input_channel_axis = 1;
  cfg.input_spatial_axes[0] = 2;
  cfg.input_spatial_axes[1] = 3;
  cfg.kernel_output_channel_axis = 0;
  cfg.kernel_input_channel_axis = 1;
  cfg.kernel_spatial_axes[0] = 2;
  cfg.kernel_spatial_axes[1] = 3;
  cfg.output_batch_axis = 0;
  cfg.output_channel_axis = 1;
  cfg.output_spatial_axes[0] = 2;
  cfg.output_spatial_axes[1] = 3;
  if (l->variant == 1) {
    cfg.strides[0] = 2;
    cfg.strides[1] = 1;
    cfg.padding_low[0] = 1;
    cfg.padding_high[0] = 1;
    cfg.padding_high[1] = 2;
    cfg.kernel_dilations[1] = 2;
    cfg.input_dilations[0] = 2;
  } else if (l->variant == 2) {
    cfg.channel_group_count = 2;
  }
  outs[0] = cml_op_conv_general(f, p[0], p[1], &cfg);
  return 1;
}

static void dt_conv(cml_dtype_t d, int variant) {
  if (!dt_selected("ConvGeneral", d)) return;
  static const char* const names[3] = {"plain", "strided-padded-dilated", "grouped"};
  dt_case_t c;
  dt_case_init(&c, "ConvGeneral", d, dt_sum_tol());
  snprintf(c.variant, sizeof c.variant, "%s", names[variant]);
  int64_t in_dims[4] = {2, 3, 9, 8}, k_dims[4] = {4, 3, 3, 2};
  if (variant == 2) {
    in_dims[1] = 4;
    in_dims[2] = 7;
    in_dims[3] = 6;
    k_dims[0] = 6;
    k_dims[1] = 2;
    k_dims[3] = 3;
  }
  void* x = dt_case_input(&c, d, 4, in_dims);
  void* k = dt_case_input(&c, d, 4, k_dims);
  dt_fill_t kind = cml_dtype_is_int(d) ? DT_FILL_WIDE : DT_FILL_UNIT;
  dt_fill(d, x, 0, cml_shape_element_count(&c.inputs[0].shape), kind);
  dt_fill(d, k, 0, cml_shape_element_count(&c.inputs[1].shape), kind);
  dt_linalg_ctx_t ctx = {variant, CML_DTYPE_INVALID};
  c.build = dt_build_conv;
  c.ctx = &ctx;
  dt_check(&c);
  dt_case_free(&c);
}

void dt_group_linalg(void) {
  for (const cml_dtype_t* d = dt_all_dtypes; *d != CML_DTYPE_INVALID; ++d) {
    if (!(cml_op_dtypes(CML_OP_DOT_GENERAL) & CML_DTYPE_BIT(*d))) continue;
    dt_dot_general(*d, CML_DTYPE_INVALID);
    dt_dot(*d);
  }
  dt_dot_general(CML_DTYPE_I8, CML_DTYPE_I32);
  dt_dot_general(CML_DTYPE_U8, CML_DTYPE_U32);
  dt_dot_general(CML_DTYPE_BF16, CML_DTYPE_F32);
  dt_dot_general(CML_DTYPE_F16, CML_DTYPE_F32);
  for (const cml_dtype_t* d = dt_all_dtypes; *d != CML_DTYPE_INVALID; ++d) {
    if (!(cml_op_dtypes(CML_OP_CONV_GENERAL) & CML_DTYPE_BIT(*d))) continue;
    for (int v = 0; v < 3; ++v) dt_conv(*d, v);
  }
}
