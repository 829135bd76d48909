// SPDX-License-Identifier: Apache-2.0
// kernels/generic/linalg_conv.c: ConvGeneral (XLA / StableHLO convolution semantics) for every
// real dtype, as a direct convolution over arbitrary axis layouts.
//
// For output element (b, o, y[0..S)):
//   out = sum over kernel positions k[0..S) and input channels ci of a feature group:
//         in[b', g*Cg + ci, x] * kernel[ci, o, k]
//   where, per spatial axis d, the dilated input position is p = y*stride + k*kdil - pad_lo;
//   the term exists when 0 <= p <= (in-1)*idil and p % idil == 0 (then x = p / idil).
//   Feature groups (channel_group_count G): Cg = C_in / G, g = o / (C_out / G).
//   Batch groups (batch_group_count BG): the input batch splits into BG contiguous chunks of
//   N_out, one per chunk of C_out / BG output features: b' = (o / (C_out / BG)) * N_out + b
//   (StableHLO's split/concatenate definition).
// Arithmetic: integers wrap (uint64, truncated to the accumulator width), f16/bf16 accumulate in
// f32 and round once, f64 in f64. The accumulator is the output dtype when it is of the same
// kind as the input (e.g. i8 -> i32 accumulates in i32), else the input dtype.
// Operands are first converted into the accumulator's domain in scratch; work is split over
// output elements, each summed in a fixed order, so the thread count never changes results.
#include "backends/c/kernels/generic/linalg_internal.h"

typedef struct cmlc_conv_plan_t {
  const cml_conv_config_t* cfg;
  cml_shape_t in, ker, out;
  int64_t in_strides[CML_MAX_RANK], ker_strides[CML_MAX_RANK], out_strides[CML_MAX_RANK];
  int32_t spatial;
  int64_t cin_g, cout, cout_per_fg, cout_per_bg, n_out;
  cml_dtype_t acc_dtype;
  cmlc__la_domain_t domain;
  int64_t in_count, ker_count;
  size_t off_in, off_ker, total;
} cmlc_conv_plan_t;

static bool cmlc_conv_plan(const cml_shape_t* in, const cml_shape_t* ker, const cml_shape_t* out,
                           const cml_ir_attrs_t* attrs, cmlc_conv_plan_t* p) {
  memset(p, 0, sizeof *p);
  const cml_conv_config_t* c = &attrs->u.conv;
  p->cfg = c;
  p->in = *in;
  p->ker = *ker;
  p->out = *out;
  p->spatial = c->spatial_count;
  if (p->spatial < 0 || p->spatial + 2 != in->rank || ker->rank != in->rank ||
      out->rank != in->rank)
    return false;
  if (!cmlc__la_is_real_storage(in->dtype) || in->dtype != ker->dtype ||
      !cmlc__la_is_real_storage(out->dtype))
    return false;
  cmlc__la_strides(in, p->in_strides);
  cmlc__la_strides(ker, p->ker_strides);
  cmlc__la_strides(out, p->out_strides);
  int64_t fg = c->channel_group_count > 1 ? c->channel_group_count : 1;
  int64_t bg = c->batch_group_count > 1 ? c->batch_group_count : 1;
  p->cin_g = ker->dims[c->kernel_input_channel_axis];
  p->cout = ker->dims[c->kernel_output_channel_axis];
  if (p->cout % fg != 0 || p->cout % bg != 0) return false;
  p->cout_per_fg = p->cout / fg;
  p->cout_per_bg = p->cout / bg;
  p->n_out = out->dims[c->output_batch_axis];
  bool in_int = cml_dtype_is_int(in->dtype), out_int = cml_dtype_is_int(out->dtype);
  p->acc_dtype = in_int == out_int ? out->dtype : in->dtype;
  // Narrower float outputs (f32 input -> f16 output) still accumulate at the input's width.
  if (!in_int && cml_dtype_bits(out->dtype) < cml_dtype_bits(in->dtype)) p->acc_dtype = in->dtype;
  p->domain = cmlc__la_domain_of(p->acc_dtype);
  if (p->domain == CMLC__LA_DOM_NONE) return false;
  p->in_count = cml_shape_element_count(in);
  p->ker_count = cml_shape_element_count(ker);
  size_t es = cmlc__la_domain_size(p->domain);
  p->off_in = 0;
  p->off_ker = ((size_t)p->in_count * es + 63) & ~(size_t)63;
  p->total = p->off_ker + (((size_t)p->ker_count * es + 63) & ~(size_t)63);
  return true;
}

typedef struct cmlc_conv_ctx_t {
  const cmlc_conv_plan_t* p;
  const void* in;
  const void* ker;
  void* out;
  void* in_dom;
  void* ker_dom;
} cmlc_conv_ctx_t;

static void cmlc_conv_convert(const cmlc_conv_plan_t* p, const void* src, cml_dtype_t dtype,
                              void* dst, int64_t begin, int64_t end) {
  switch (p->domain) {
    case CMLC__LA_DOM_F32:
      for (int64_t i = begin; i < end; ++i) ((float*)dst)[i] = cmlc__la_load_f32(src, i, dtype);
      break;
    case CMLC__LA_DOM_F64:
      for (int64_t i = begin; i < end; ++i) ((double*)dst)[i] = cmlc__la_load_f64(src, i, dtype);
      break;
    case CMLC__LA_DOM_INT:
      for (int64_t i = begin; i < end; ++i)
        ((uint64_t*)dst)[i] = cmlc__la_load_int_bits(src, i, dtype, p->acc_dtype);
      break;
    default:
      break;
  }
}

static void cmlc_conv_convert_in(void* vctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  cmlc_conv_ctx_t* c = vctx;
  cmlc_conv_convert(c->p, c->in, c->p->in.dtype, c->in_dom, begin, end);
}

static void cmlc_conv_convert_ker(void* vctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  cmlc_conv_ctx_t* c = vctx;
  cmlc_conv_convert(c->p, c->ker, c->p->ker.dtype, c->ker_dom, begin, end);
}

// One output element's sum in domain type T (float, double or uint64_t).
#define CMLC_CONV_SUM(T)                                                                      \
  do {                                                                                        \
    const T* x = (const T*)c->in_dom;                                                         \
    const T* w = (const T*)c->ker_dom;                                                        \
    T acc = 0;                                                                                \
    for (;;) {                                                                                \
      bool valid = true;                                                                      \
      int64_t xoff = in_base, woff = ker_base;                                                \
      for (int32_t d = 0; d < S && valid; ++d) {                                              \
        int64_t pos = y[d] * cfg->strides[d] + kidx[d] * cfg->kernel_dilations[d] -           \
                      cfg->padding_low[d];                                                    \
        int64_t idil = cfg->input_dilations[d];                                               \
        if (pos < 0 || pos > (in_dims[d] - 1) * idil || pos % idil != 0) {                    \
          valid = false;                                                                      \
        } else {                                                                              \
          xoff += (pos / idil) * in_sp_strides[d];                                            \
          woff += kidx[d] * ker_sp_strides[d];                                                \
        }                                                                                     \
      }                                                                                       \
      if (valid) {                                                                            \
        for (int64_t ci = 0; ci < cin_g; ++ci)                                                \
          acc += x[xoff + ci * in_c_stride] * w[woff + ci * ker_ic_stride];                   \
      }                                                                                       \
      int32_t d = S - 1;                                                                      \
      for (; d >= 0; --d) {                                                                   \
        if (++kidx[d] < ker_dims[d]) break;                                                   \
        kidx[d] = 0;                                                                          \
      }                                                                                       \
      if (d < 0) break;                                                                       \
    }                                                                                         \
    result_##T = acc;                                                                         \
  } while (0)

static void cmlc_conv_compute(void* vctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  cmlc_conv_ctx_t* c = vctx;
  const cmlc_conv_plan_t* p = c->p;
  const cml_conv_config_t* cfg = p->cfg;
  const int32_t S = p->spatial;
  int64_t in_dims[CML_MAX_RANK], ker_dims[CML_MAX_RANK];
  int64_t in_sp_strides[CML_MAX_RANK], ker_sp_strides[CML_MAX_RANK];
  bool empty_kernel = false;
  for (int32_t d = 0; d < S; ++d) {
    in_dims[d] = p->in.dims[cfg->input_spatial_axes[d]];
    ker_dims[d] = p->ker.dims[cfg->kernel_spatial_axes[d]];
    in_sp_strides[d] = p->in_strides[cfg->input_spatial_axes[d]];
    ker_sp_strides[d] = p->ker_strides[cfg->kernel_spatial_axes[d]];
    empty_kernel |= ker_dims[d] == 0;
  }
  const int64_t cin_g = p->cin_g;
  const int64_t in_c_stride = p->in_strides[cfg->input_channel_axis];
  const int64_t ker_ic_stride = p->ker_strides[cfg->kernel_input_channel_axis];
  for (int64_t oi = begin; oi < end; ++oi) {
    int64_t ob = (oi / p->out_strides[cfg->output_batch_axis]) % p->out.dims[cfg->output_batch_axis];
    int64_t o = (oi / p->out_strides[cfg->output_channel_axis]) %
                p->out.dims[cfg->output_channel_axis];
    int64_t y[CML_MAX_RANK], kidx[CML_MAX_RANK];
    for (int32_t d = 0; d < S; ++d) {
      int64_t ax = cfg->output_spatial_axes[d];
      y[d] = (oi / p->out_strides[ax]) % p->out.dims[ax];
      kidx[d] = 0;
    }
    int64_t g = o / p->cout_per_fg;
    int64_t in_b = (o / p->cout_per_bg) * p->n_out + ob;
    int64_t in_base = in_b * p->in_strides[cfg->input_batch_axis] + g * cin_g * in_c_stride;
    int64_t ker_base = o * p->ker_strides[cfg->kernel_output_channel_axis];
    float result_float = 0;
    double result_double = 0;
    uint64_t result_uint64_t = 0;
    if (!empty_kernel) {
      switch (p->domain) {
        case CMLC__LA_DOM_F32: CMLC_CONV_SUM(float); break;
        case CMLC__LA_DOM_F64: CMLC_CONV_SUM(double); break;
        case CMLC__LA_DOM_INT: CMLC_CONV_SUM(uint64_t); break;
        default: break;
      }
    }
    switch (p->domain) {
      case CMLC__LA_DOM_F32: cmlc__la_store_f64(c->out, oi, p->out.dtype, result_float); break;
      case CMLC__LA_DOM_F64: cmlc__la_store_f64(c->out, oi, p->out.dtype, result_double); break;
      case CMLC__LA_DOM_INT:
        cmlc__la_store_int(c->out, oi, p->out.dtype,
                           cmlc__la_int_extend(result_uint64_t, p->acc_dtype), p->acc_dtype);
        break;
      default: break;
    }
  }
}

static size_t cmlc_conv_scratch(const cml_module_t* module, const cml_ir_node_t* node,
                                const cmlc_options_t* options) {
  (void)options;
  cmlc_conv_plan_t p;
  if (!cmlc_conv_plan(&module->values[node->inputs[0]].shape,
                      &module->values[node->inputs[1]].shape,
                      &module->values[node->first_output].shape, node->attrs, &p))
    return 0;
  return p.total;
}

static cml_status_t cmlc_conv_run(const cmlc_kernel_args_t* args) {
  cmlc_conv_plan_t p;
  if (!cmlc_conv_plan(args->input_shapes[0], args->input_shapes[1], args->output_shapes[0],
                      args->node->attrs, &p) ||
      args->scratch_size < p.total) {
    char t[3][160];
    return cml_status_make(CML_STATUS_INTERNAL,
                           "ConvGeneral: inconsistent plan for input %s, kernel %s -> %s",
                           cml_shape_format(args->input_shapes[0], t[0], sizeof t[0]),
                           cml_shape_format(args->input_shapes[1], t[1], sizeof t[1]),
                           cml_shape_format(args->output_shapes[0], t[2], sizeof t[2]));
  }
  int64_t out_count = cml_shape_element_count(&p.out);
  if (out_count == 0) return CML_OK;
  cmlc_conv_ctx_t c = {&p, args->inputs[0], args->inputs[1], args->outputs[0],
                       (char*)args->scratch + p.off_in, (char*)args->scratch + p.off_ker};
  cmlc_parallel_for(args->pool, p.in_count, 16384, cmlc_conv_convert_in, &c);
  cmlc_parallel_for(args->pool, p.ker_count, 16384, cmlc_conv_convert_ker, &c);
  int64_t work = p.cin_g;
  for (int32_t d = 0; d < p.spatial; ++d) work *= p.ker.dims[p.cfg->kernel_spatial_axes[d]] + 1;
  int64_t chunk = 32768 / (work > 0 ? work : 1);
  cmlc_parallel_for(args->pool, out_count, chunk < 1 ? 1 : chunk, cmlc_conv_compute, &c);
  return CML_OK;
}

bool cmlc__conv_lookup(const cml_module_t* module, const cml_ir_node_t* node,
                       const cmlc_options_t* options, cmlc_kernel_entry_t* out) {
  (void)options;
  if (node->op != CML_OP_CONV_GENERAL || node->input_count != 2) return false;
  cmlc_conv_plan_t p;
  if (!cmlc_conv_plan(&module->values[node->inputs[0]].shape,
                      &module->values[node->inputs[1]].shape,
                      &module->values[node->first_output].shape, node->attrs, &p))
    return false;
  out->run = cmlc_conv_run;
  out->scratch = cmlc_conv_scratch;
  out->in_place_input = -1;
  return true;
}
