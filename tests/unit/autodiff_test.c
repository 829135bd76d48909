// SPDX-License-Identifier: Apache-2.0
// tests/unit/autodiff_test.c: cml_gradients and the optimizers (cml/autodiff.h, cml/optim.h).
//
// Every op with a VJP is checked against central finite differences in f64 on random inputs:
// loss = sum(op(inputs) * W) with a random weight W, so every output element gets its own
// cotangent. The c backend runs all cases; 22 also run on xla:cpu with --xla (ctest
// autodiff_xla, label device; exit 77 without the plugin). Hand-computed cases, error statuses and
// optimizer steps against hand-computed values follow.
#include <math.h>
#include <stdint.h>

#include "api_common.h"
#include "core/builder_internal.h"
#include "test.h"

static cml_backend_t* g_c;
static cml_backend_t* g_xla;  // NULL without the XLA CPU plugin

//===--- finite-difference harness ---===//

enum { kMaxParams = 4, kMaxElems = 256 };

typedef cml_value_t (*ad_build_fn)(cml_function_t* f, const cml_value_t* p);

typedef struct ad_case_t {
  const char* name;
  int param_count;
  cml_shape_t shapes[kMaxParams];
  const void* fixed[kMaxParams];  // data of non-differentiated (integer) parameters
  double lo, hi;                  // range of the random float inputs
  ad_build_fn build;
} ad_case_t;

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static double ad_random(double lo, double hi) {
  g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
  double u = (double)(g_rng >> 11) / 9007199254740992.0;
  return lo + (hi - lo) * u;
}

static bool ad_is_float(const cml_shape_t* s) { return s->dtype == CML_DTYPE_F64; }

// Builds loss = sum(build(p) * W) and its gradients wrt every f64 parameter; outputs
// [loss, grads...].
static cml_status_t ad_compile(cml_backend_t* be, const ad_case_t* c, const double* weight,
                               cml_executable_t** exe, int* out_grad_count) {
  cml_builder_t* b = NULL;
  CML_RETURN_IF_ERROR(cml_builder_create(be, c->name, &b));
  cml_function_t* f = cml_builder_main(b);
  cml_value_t p[kMaxParams], wrt[kMaxParams], outs[1 + kMaxParams];
  int nw = 0;
  for (int i = 0; i < c->param_count; ++i) {
    p[i] = cml_parameter(f, NULL, &c->shapes[i]);
    if (ad_is_float(&c->shapes[i])) wrt[nw++] = p[i];
  }
  cml_value_t y = c->build(f, p);
  cml_shape_t ys;
  cml_builder_value_shape(b, y, &ys);
  cml_value_t w = cml_constant(f, &ys, weight);
  cml_value_t loss = cml_op_reduce_sum(f, cml_op_mul(f, y, w), NULL, 0);
  cml_status_t st = cml_gradients(f, loss, wrt, (size_t)nw, outs + 1);
  outs[0] = loss;
  if (st != CML_OK) {
    cml_builder_destroy(b);
    return st;
  }
  *out_grad_count = nw;
  return api_finish(b, outs, 1 + (size_t)nw, exe);
}

static cml_status_t ad_loss(cml_backend_t* be, cml_executable_t* exe, const ad_case_t* c,
                            double* const* data, double* out_loss, double* const* grads,
                            int grad_count) {
  const void* in[kMaxParams];
  for (int i = 0; i < c->param_count; ++i) in[i] = c->fixed[i] ? c->fixed[i] : data[i];
  void* out[1 + kMaxParams];
  static double scratch[kMaxParams][kMaxElems];
  out[0] = out_loss;
  for (int k = 0; k < grad_count; ++k) out[1 + k] = grads ? grads[k] : scratch[k];
  return api_run(be, exe, in, out);
}

// Runs case |c| on |be|: the gradient against central differences (|tol| relative).
static int ad_check(cml_backend_t* be, const ad_case_t* c, double tol) {
  static double inputs[kMaxParams][kMaxElems], grads[kMaxParams][kMaxElems];
  static double weight[4096];
  double* data[kMaxParams];
  for (int i = 0; i < c->param_count; ++i) {
    data[i] = inputs[i];
    if (c->fixed[i]) continue;
    int64_t n = cml_shape_element_count(&c->shapes[i]);
    for (int64_t k = 0; k < n; ++k) inputs[i][k] = ad_random(c->lo, c->hi);
  }
  for (int k = 0; k < 4096; ++k) weight[k] = ad_random(-1.0, 1.0);
  cml_executable_t* exe = NULL;
  int ng = 0;
  cml_status_t st = ad_compile(be, c, weight, &exe, &ng);
  if (st != CML_OK) {
    fprintf(stderr, "%s: %s\n", c->name, cml_status_message(st));
    cml_status_free(st);
    return 1;
  }
  double loss;
  double* gp[kMaxParams];
  for (int k = 0; k < ng; ++k) gp[k] = grads[k];
  st = ad_loss(be, exe, c, data, &loss, gp, ng);
  int bad = 0;
  int g = 0;
  for (int i = 0; i < c->param_count && st == CML_OK; ++i) {
    if (!ad_is_float(&c->shapes[i])) continue;
    int64_t n = cml_shape_element_count(&c->shapes[i]);
    for (int64_t k = 0; k < n && st == CML_OK; ++k) {
      double x0 = inputs[i][k], h = 1e-6 * (1.0 + fabs(x0));
      double lp = 0, lm = 0;
      inputs[i][k] = x0 + h;
      st = ad_loss(be, exe, c, data, &lp, NULL, ng);
      inputs[i][k] = x0 - h;
      if (st == CML_OK) st = ad_loss(be, exe, c, data, &lm, NULL, ng);
      inputs[i][k] = x0;
      double fd = (lp - lm) / (2 * h), got = grads[g][k];
      if (!(fabs(got - fd) <= tol * (1.0 + fabs(fd)))) {
        if (bad < 5) {
          fprintf(stderr, "%s on %s: d/dp%d[%lld] = %.12g, finite differences %.12g\n", c->name,
                  cml_backend_name(be), i, (long long)k, got, fd);
        }
        ++bad;
      }
    }
    ++g;
  }
  if (st != CML_OK) {
    fprintf(stderr, "%s: %s\n", c->name, cml_status_message(st));
    cml_status_free(st);
    bad = 1;
  }
  cml_executable_release(exe);
  return bad;
}

#define F64(...) API_SHAPE(CML_DTYPE_F64, __VA_ARGS__)

//===--- the cases ---===//

#define UNARY_CASE(name_, lo_, hi_)                                       \
  static cml_value_t b_##name_(cml_function_t* f, const cml_value_t* p) { \
    return cml_op_##name_(f, p[0]);                                       \
  }
UNARY_CASE(exp, -2, 2)
UNARY_CASE(expm1, -2, 2)
UNARY_CASE(log, 0.5, 3)
UNARY_CASE(log1p, 0.1, 3)
UNARY_CASE(sin, -3, 3)
UNARY_CASE(cos, -3, 3)
UNARY_CASE(tanh, -2, 2)
UNARY_CASE(logistic, -3, 3)
UNARY_CASE(sqrt, 0.5, 3)
UNARY_CASE(rsqrt, 0.5, 3)
UNARY_CASE(erf, -2, 2)
UNARY_CASE(abs, -2, 2)
UNARY_CASE(neg, -2, 2)
UNARY_CASE(sign, -2, 2)
UNARY_CASE(floor, -2, 2)
UNARY_CASE(identity, -2, 2)

#define BINARY_CASE(name_)                                                \
  static cml_value_t b_##name_(cml_function_t* f, const cml_value_t* p) { \
    return cml_op_##name_(f, p[0], p[1]);                                 \
  }
BINARY_CASE(add)
BINARY_CASE(sub)
BINARY_CASE(mul)
BINARY_CASE(div)
BINARY_CASE(pow)
BINARY_CASE(max)
BINARY_CASE(min)
BINARY_CASE(atan2)
BINARY_CASE(rem)
BINARY_CASE(dot)

static cml_value_t b_clamp(cml_function_t* f, const cml_value_t* p) {
  return cml_op_clamp(f, p[0], p[1], p[2]);
}
static cml_value_t b_where(cml_function_t* f, const cml_value_t* p) {
  cml_value_t c = cml_op_greater_than(f, p[0], p[1]);
  return cml_op_where(f, c, cml_op_mul(f, p[0], p[0]), p[1]);
}
static cml_value_t b_dot_general(cml_function_t* f, const cml_value_t* p) {
  // lhs [3, 2, 4] (batch 2, contract 0), rhs [3, 5, 2] (batch 2, contract 0) -> [2, 4, 5]
  cml_dot_config_t d;
  memset(&d, 0, sizeof d);
  d.lhs_batch_count = d.rhs_batch_count = 1;
  d.lhs_batch_axes[0] = 1;
  d.rhs_batch_axes[0] = 2;
  d.lhs_contracting_count = d.rhs_contracting_count = 1;
  d.lhs_contracting_axes[0] = 0;
  d.rhs_contracting_axes[0] = 0;
  return cml_op_dot_general(f, p[0], p[1], &d);
}
static cml_value_t b_reduce_sum(cml_function_t* f, const cml_value_t* p) {
  return cml_op_reduce_sum(f, p[0], (int64_t[]){0, 2}, 2);
}
static cml_value_t b_reduce_max(cml_function_t* f, const cml_value_t* p) {
  return cml_op_reduce_max(f, p[0], (int64_t[]){1}, 1);
}
static cml_value_t b_reduce_min(cml_function_t* f, const cml_value_t* p) {
  return cml_op_reduce_min(f, p[0], (int64_t[]){0}, 1);
}
static cml_value_t b_reduce_product(cml_function_t* f, const cml_value_t* p) {
  return cml_op_reduce_product(f, p[0], (int64_t[]){1}, 1);
}
static cml_value_t b_reshape(cml_function_t* f, const cml_value_t* p) {
  return cml_op_reshape(f, cml_op_sin(f, p[0]), (int64_t[]){4, 3}, 2);
}
static cml_value_t b_transpose(cml_function_t* f, const cml_value_t* p) {
  return cml_op_transpose(f, p[0], (int64_t[]){2, 0, 1}, 3);
}
static cml_value_t b_broadcast(cml_function_t* f, const cml_value_t* p) {
  // [3, 1] -> [2, 3, 4]
  return cml_op_broadcast_in_dim(f, p[0], (int64_t[]){2, 3, 4}, 3, (int64_t[]){1, 2}, 2);
}
static cml_value_t b_slice(cml_function_t* f, const cml_value_t* p) {
  return cml_op_slice(f, p[0], (int64_t[]){1, 0}, (int64_t[]){6, 4}, (int64_t[]){2, 3}, 2);
}
static cml_value_t b_pad(cml_function_t* f, const cml_value_t* p) {
  cml_pad_axis_t pads[2] = {{2, -1, 1}, {-1, 3, 0}};
  return cml_op_pad(f, p[0], p[1], pads, 2);
}
static cml_value_t b_concatenate(cml_function_t* f, const cml_value_t* p) {
  return cml_op_concatenate(f, 1, (cml_value_t[]){p[0], p[1], p[0]}, 3);
}
static cml_value_t b_reverse(cml_function_t* f, const cml_value_t* p) {
  return cml_op_reverse(f, cml_op_mul(f, p[0], p[0]), (int64_t[]){0, 1}, 2);
}
static const int32_t k_start_1 = 1, k_start_2 = 2;
static cml_value_t b_dynamic_slice(cml_function_t* f, const cml_value_t* p) {
  cml_value_t s[2] = {cml_constant_scalar_i64(f, CML_DTYPE_I32, 1), p[1]};
  return cml_op_dynamic_slice(f, p[0], s, (int64_t[]){2, 2}, 2);
}
static cml_value_t b_dynamic_update_slice(cml_function_t* f, const cml_value_t* p) {
  cml_value_t s[2] = {p[2], cml_constant_scalar_i64(f, CML_DTYPE_I32, 1)};
  return cml_op_dynamic_update_slice(f, cml_op_mul(f, p[0], p[0]), p[1], s, 2);
}
static const int32_t k_gather_idx[3] = {2, 0, 2};
static cml_value_t b_gather(cml_function_t* f, const cml_value_t* p) {
  // rows of a [4, 3] operand: indices [3] -> [3, 3]
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
  g.slice_sizes[1] = 3;
  return cml_op_gather(f, p[0], p[1], &g);
}
static cml_value_t b_scatter_sum(cml_function_t* f, const cml_value_t* p) {
  // operand [4, 3], indices [3], updates [3, 3] (rows)
  cml_scatter_dims_t s;
  memset(&s, 0, sizeof s);
  s.index_vector_axis = 1;
  s.update_window_axis_count = 1;
  s.update_window_axes[0] = 1;
  s.inserted_window_axis_count = 1;
  s.inserted_window_axes[0] = 0;
  s.scatter_axes_to_operand_axes_count = 1;
  s.scatter_axes_to_operand_axes[0] = 0;
  return cml_op_scatter_sum(f, p[0], p[1], cml_op_sin(f, p[2]), &s);
}
// ScatterMax/ScatterMin of sin(updates) into x * x: rows 2 and 0, row 2 twice (two updates
// compete with the operand row).
static cml_value_t b_scatter_extremal(cml_function_t* f, const cml_value_t* p, cml_op_t op) {
  cml_scatter_dims_t s;
  memset(&s, 0, sizeof s);
  s.index_vector_axis = 1;
  s.update_window_axis_count = 1;
  s.update_window_axes[0] = 1;
  s.inserted_window_axis_count = 1;
  s.inserted_window_axes[0] = 0;
  s.scatter_axes_to_operand_axes_count = 1;
  s.scatter_axes_to_operand_axes[0] = 0;
  return cml_op_scatter(f, op, cml_op_mul(f, p[0], p[0]), p[1], cml_op_sin(f, p[2]), &s);
}
static cml_value_t b_scatter_max(cml_function_t* f, const cml_value_t* p) {
  return b_scatter_extremal(f, p, CML_OP_SCATTER_MAX);
}
static cml_value_t b_scatter_min(cml_function_t* f, const cml_value_t* p) {
  return b_scatter_extremal(f, p, CML_OP_SCATTER_MIN);
}
static cml_value_t b_reduce_window_sum(cml_function_t* f, const cml_value_t* p) {
  cml_window_config_t w;
  memset(&w, 0, sizeof w);
  w.rank = 2;
  w.window_dims[0] = 2;
  w.window_dims[1] = 3;
  w.strides[0] = 2;
  w.strides[1] = 1;
  w.padding_low[1] = 1;
  w.padding_high[0] = 1;
  return cml_op_reduce_window(f, p[0], CML_REDUCE_SUM, &w);
}
// Windows that do not overlap (2x3 / 2x3), with padding on axis 0 and a last column that no
// window covers; and (axis 1 of the second) one window in all.
static cml_value_t b_reduce_window_disjoint(cml_function_t* f, const cml_value_t* p) {
  cml_window_config_t w;
  memset(&w, 0, sizeof w);
  w.rank = 2;
  w.window_dims[0] = w.strides[0] = 2;
  w.window_dims[1] = w.strides[1] = 3;
  w.padding_low[0] = 1;
  w.padding_high[0] = 2;
  cml_value_t a = cml_op_reduce_window(f, cml_op_sin(f, p[0]), CML_REDUCE_SUM, &w);
  w.window_dims[0] = w.strides[0] = 1;
  w.window_dims[1] = 6;
  w.strides[1] = 4;
  w.padding_low[0] = w.padding_high[0] = 0;
  w.padding_high[1] = 1;  // [5, 8] windows of 6: one, reaching into the padding
  cml_value_t b = cml_op_reduce_window(f, p[0], CML_REDUCE_SUM, &w);
  const int64_t axes[2] = {0, 1};
  return cml_op_add(f, cml_op_reduce_sum(f, cml_op_mul(f, a, a), axes, 2),
                    cml_op_reduce_sum(f, cml_op_mul(f, b, b), axes, 2));
}
static cml_value_t b_reduce_window_max(cml_function_t* f, const cml_value_t* p) {
  cml_window_config_t w;
  memset(&w, 0, sizeof w);
  w.rank = 2;
  w.window_dims[0] = 2;
  w.window_dims[1] = 2;
  w.strides[0] = 2;
  w.strides[1] = 2;
  return cml_op_reduce_window(f, p[0], CML_REDUCE_MAX, &w);
}
static cml_value_t b_batch_norm_training(cml_function_t* f, const cml_value_t* p) {
  cml_value_t o[3];
  if (!cml_op_batch_norm_training(f, p[0], p[1], p[2], 1e-3f, 1, o)) return CML_VALUE_INVALID;
  // Use all three outputs.
  cml_value_t extra = cml_op_add(f, cml_op_mul(f, o[1], o[1]), o[2]);
  extra = cml_op_broadcast_in_dim(f, extra, (int64_t[]){4, 3}, 2, (int64_t[]){1}, 1);
  return cml_op_add(f, o[0], extra);
}
static cml_value_t b_batch_norm_inference(cml_function_t* f, const cml_value_t* p) {
  return cml_op_batch_norm_inference(f, p[0], p[1], p[2], p[3], cml_op_exp(f, p[3]), 1e-3f, 1);
}
static cml_value_t b_softmax(cml_function_t* f, const cml_value_t* p) {
  return cml_op_fused_softmax(f, p[0], 1);
}
static cml_value_t b_gelu_exact(cml_function_t* f, const cml_value_t* p) {
  return cml_op_fused_gelu(f, p[0], true);
}
static cml_value_t b_gelu_tanh(cml_function_t* f, const cml_value_t* p) {
  return cml_op_fused_gelu(f, p[0], false);
}
static cml_value_t b_stop_gradient(cml_function_t* f, const cml_value_t* p) {
  // d/dx (x * stop(x)) = stop(x) = x: finite differences see 2x, so check with a combination
  // whose stopped part is constant in the direction checked: y = x + stop(0 * x).
  cml_value_t zero = cml_op_mul(f, p[0], cml_constant_scalar_f64(f, CML_DTYPE_F64, 0.0));
  return cml_op_add(f, p[0], cml_op_stop_gradient(f, zero));
}
// NCHW input, OIHW kernel.
static cml_conv_config_t conv_nchw(void) {
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
  return c;
}
static cml_value_t b_conv_strided(cml_function_t* f, const cml_value_t* p) {
  cml_conv_config_t c = conv_nchw();
  c.strides[0] = 2;
  c.padding_low[0] = 1;
  c.padding_high[1] = 1;
  return cml_op_conv_general(f, p[0], p[1], &c);
}
static cml_value_t b_conv_dilated(cml_function_t* f, const cml_value_t* p) {
  cml_conv_config_t c = conv_nchw();
  c.input_dilations[0] = 2;
  c.kernel_dilations[1] = 2;
  c.padding_low[1] = 2;
  c.padding_high[0] = -1;
  return cml_op_conv_general(f, p[0], p[1], &c);
}
static cml_value_t b_conv_grouped(cml_function_t* f, const cml_value_t* p) {
  cml_conv_config_t c = conv_nchw();
  c.channel_group_count = 2;
  c.padding_low[0] = c.padding_high[0] = 1;
  return cml_op_conv_general(f, p[0], p[1], &c);
}
static cml_value_t b_conv_nhwc(cml_function_t* f, const cml_value_t* p) {
  // input [N, H, W, C], kernel [H, W, I, O], output [N, H, W, O], stride 2 on W.
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
  c.output_spatial_axes[0] = 1;
  c.output_spatial_axes[1] = 2;
  c.output_channel_axis = 3;
  c.strides[1] = 2;
  return cml_op_conv_general(f, p[0], p[1], &c);
}
// Call of a named function g(a, b) = sin(a) * b + a.
static cml_value_t b_call(cml_function_t* f, const cml_value_t* p) {
  cml_function_t* g = NULL;
  cml_builder_t* b = cml_function_builder(f);
  if (cml_builder_new_function(b, "g", &g) != CML_OK) return CML_VALUE_INVALID;
  cml_shape_t s = API_SHAPE(CML_DTYPE_F64, 2, 3);
  cml_value_t a = cml_parameter(g, "a", &s), c = cml_parameter(g, "b", &s);
  cml_value_t r = cml_op_add(g, cml_op_mul(g, cml_op_sin(g, a), c), a);
  if (cml_function_return(g, &r, 1) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t out;
  if (!cml_op_call(f, g, p, 2, &out)) return CML_VALUE_INVALID;
  return cml_op_mul(f, out, p[0]);
}
// If(sum(p0) > 0, p0 * p1 (+ log p1 in a Call-free branch), exp(p1)) through captures.
static cml_value_t b_if(cml_function_t* f, const cml_value_t* p) {
  cml_value_t pred = cml_op_greater_than(f, cml_op_reduce_sum(f, p[0], NULL, 0),
                                         cml_constant_scalar_f64(f, CML_DTYPE_F64, 0));
  cml_function_t *yes = NULL, *no = NULL;
  if (cml_function_new_closure(f, &yes) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t t = cml_op_mul(yes, p[0], p[1]);
  if (cml_function_return(yes, &t, 1) != CML_OK) return CML_VALUE_INVALID;
  if (cml_function_new_closure(f, &no) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t e = cml_op_exp(no, p[1]);
  if (cml_function_return(no, &e, 1) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t out;
  if (!cml_op_if(f, pred, yes, no, &out)) return CML_VALUE_INVALID;
  return out;
}
// Sort (keys p0, values p1) along axis 1 by key, ascending.
static cml_value_t b_sort(cml_function_t* f, const cml_value_t* p) {
  cml_function_t* c = NULL;
  if (cml_function_new_closure(f, &c) != CML_OK) return CML_VALUE_INVALID;
  cml_shape_t s = API_SHAPE(CML_DTYPE_F64);
  cml_value_t k0 = cml_parameter(c, NULL, &s), k1 = cml_parameter(c, NULL, &s);
  cml_parameter(c, NULL, &s);
  cml_parameter(c, NULL, &s);
  cml_value_t r = cml_op_less_than(c, k0, k1);
  if (cml_function_return(c, &r, 1) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t out[2];
  if (!cml_op_sort(f, c, 1, true, p, 2, out)) return CML_VALUE_INVALID;
  return cml_op_add(f, cml_op_mul(f, out[0], out[0]), out[1]);
}
static cml_value_t b_layer_norm(cml_function_t* f, const cml_value_t* p) {
  return cml_op_fused_layer_norm(f, p[0], (int64_t[]){-1}, 1, 1e-3, p[1], p[2]);
}
static cml_value_t b_layer_norm_axes(cml_function_t* f, const cml_value_t* p) {
  return cml_op_fused_layer_norm(f, p[0], (int64_t[]){0, 2}, 2, 1e-2, CML_VALUE_INVALID,
                                 CML_VALUE_INVALID);
}
// Scale only, over the last two axes; offset only, over every axis.
static cml_value_t b_layer_norm_scale(cml_function_t* f, const cml_value_t* p) {
  return cml_op_fused_layer_norm(f, p[0], (int64_t[]){1, 2}, 2, 1e-3, p[1], CML_VALUE_INVALID);
}
static cml_value_t b_layer_norm_all(cml_function_t* f, const cml_value_t* p) {
  return cml_op_fused_layer_norm(f, p[0], (int64_t[]){0, 1}, 2, 1e-3, CML_VALUE_INVALID, p[1]);
}
static cml_value_t b_dense_gelu(cml_function_t* f, const cml_value_t* p) {
  cml_dense_config_t c;
  cml_dense_config_init(&c);
  c.activation = CML_ACTIVATION_GELU;
  return cml_op_fused_dense(f, p[0], p[1], p[2], &c);
}
static cml_value_t b_dense_silu(cml_function_t* f, const cml_value_t* p) {
  cml_dense_config_t c;
  cml_dense_config_init(&c);
  c.activation = CML_ACTIVATION_SILU;
  c.weight_layout = CML_DENSE_LAYOUT_OUTPUTS_INPUT;
  return cml_op_fused_dense(f, p[0], p[1], CML_VALUE_INVALID, &c);
}
static cml_value_t b_dense_hard_swish(cml_function_t* f, const cml_value_t* p) {
  cml_dense_config_t c;
  cml_dense_config_init(&c);
  c.activation = CML_ACTIVATION_HARD_SWISH;
  return cml_op_fused_dense(f, p[0], p[1], p[2], &c);
}
// While with a static trip count (i from 0 while i < 3): x <- sin(x) * w, acc <- acc + x.
static cml_value_t b_while(cml_function_t* f, const cml_value_t* p) {
  cml_shape_t is = API_SHAPE(CML_DTYPE_I32), xs = API_SHAPE(CML_DTYPE_F64, 2, 3);
  cml_function_t *cond = NULL, *body = NULL;
  if (cml_function_new_closure(f, &cond) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t ci = cml_parameter(cond, NULL, &is);
  cml_parameter(cond, NULL, &xs);
  cml_parameter(cond, NULL, &xs);
  cml_value_t lt = cml_op_less_than(cond, ci, cml_constant_scalar_i64(cond, CML_DTYPE_I32, 3));
  if (cml_function_return(cond, &lt, 1) != CML_OK) return CML_VALUE_INVALID;
  if (cml_function_new_closure(f, &body) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t bi = cml_parameter(body, NULL, &is);
  cml_value_t bx = cml_parameter(body, NULL, &xs);
  cml_value_t bacc = cml_parameter(body, NULL, &xs);
  cml_value_t nx = cml_op_mul(body, cml_op_sin(body, bx), p[1]);
  cml_value_t next[3] = {cml_op_add(body, bi, cml_constant_scalar_i64(body, CML_DTYPE_I32, 1)), nx,
                         cml_op_add(body, bacc, nx)};
  if (cml_function_return(body, next, 3) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t init[3] = {cml_constant_scalar_i64(f, CML_DTYPE_I32, 0), p[0],
                         cml_op_mul(f, p[0], p[0])};
  cml_value_t out[3];
  if (!cml_op_while(f, cond, body, init, 3, out)) return CML_VALUE_INVALID;
  return out[2];
}
// An RNN over |steps| steps as a While, differentiated as a loop: state (i, h [2, 3], w [3, 3]
// passed through unchanged, buf [steps, 2, 3] getting row i, acc [2, 3]); the body reads row i
// of xs [steps, 2, 3] and u [3, 3] as captures: h <- tanh(h w + x_i u), buf[i] <- h,
// acc <- acc + h * h. Returns buf + acc (broadcast over the rows). p: h0, w, u, xs.
static cml_value_t while_rnn(cml_function_t* f, const cml_value_t* p, int64_t steps) {
  const cml_shape_t is = API_SHAPE(CML_DTYPE_I32), hs = API_SHAPE(CML_DTYPE_F64, 2, 3),
                    ws = API_SHAPE(CML_DTYPE_F64, 3, 3), bs = API_SHAPE(CML_DTYPE_F64, steps, 2, 3);
  const cml_shape_t state[5] = {is, hs, ws, bs, hs};
  cml_function_t *cond = NULL, *body = NULL;
  if (cml_function_new_closure(f, &cond) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t c[5];
  for (int k = 0; k < 5; ++k) c[k] = cml_parameter(cond, NULL, &state[k]);
  cml_value_t lt =
      cml_op_less_than(cond, c[0], cml_constant_scalar_i64(cond, CML_DTYPE_I32, steps));
  if (cml_function_return(cond, &lt, 1) != CML_OK) return CML_VALUE_INVALID;
  if (cml_function_new_closure(f, &body) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t v[5];
  for (int k = 0; k < 5; ++k) v[k] = cml_parameter(body, NULL, &state[k]);
  cml_value_t zero = cml_constant_scalar_i64(body, CML_DTYPE_I32, 0);
  cml_value_t row_at[3] = {v[0], zero, zero};
  cml_value_t x = cml_op_reshape(
      body, cml_op_dynamic_slice(body, p[3], row_at, (int64_t[]){1, 2, 3}, 3), hs.dims, 2);
  cml_value_t h =
      cml_op_tanh(body, cml_op_add(body, cml_op_dot(body, v[1], v[2]), cml_op_dot(body, x, p[2])));
  cml_value_t row = cml_op_reshape(body, h, (int64_t[]){1, 2, 3}, 3);
  cml_value_t next[5] = {cml_op_add(body, v[0], cml_constant_scalar_i64(body, CML_DTYPE_I32, 1)), h,
                         v[2], cml_op_dynamic_update_slice(body, v[3], row, row_at, 3),
                         cml_op_add(body, v[4], cml_op_mul(body, h, h))};
  if (cml_function_return(body, next, 5) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t init[5] = {
      cml_constant_scalar_i64(f, CML_DTYPE_I32, 0), p[0], p[1],
      cml_op_broadcast_in_dim(f, cml_constant_scalar_f64(f, CML_DTYPE_F64, 0), bs.dims, 3, NULL, 0),
      cml_op_mul(f, p[0], p[0])};
  cml_value_t out[5];
  if (!cml_op_while(f, cond, body, init, 5, out)) return CML_VALUE_INVALID;
  return cml_op_add(f, out[3],
                    cml_op_broadcast_in_dim(f, out[4], bs.dims, 3, (int64_t[]){1, 2}, 2));
}
// The same RNN unrolled by hand in straight-line ops (the oracle of while_rnn's gradients).
static cml_value_t unrolled_rnn(cml_function_t* f, const cml_value_t* p, int64_t steps) {
  cml_value_t h = p[0], acc = cml_op_mul(f, p[0], p[0]), rows[64];
  for (int64_t i = 0; i < steps && i < 64; ++i) {
    cml_value_t x = cml_op_reshape(
        f, cml_op_slice(f, p[3], (int64_t[]){i, 0, 0}, (int64_t[]){i + 1, 2, 3}, NULL, 3),
        (int64_t[]){2, 3}, 2);
    h = cml_op_tanh(f, cml_op_add(f, cml_op_dot(f, h, p[1]), cml_op_dot(f, x, p[2])));
    rows[i] = cml_op_reshape(f, h, (int64_t[]){1, 2, 3}, 3);
    acc = cml_op_add(f, acc, cml_op_mul(f, h, h));
  }
  cml_value_t buf = cml_op_concatenate(f, 0, rows, (size_t)steps);
  const int64_t dims[3] = {steps, 2, 3};
  return cml_op_add(f, buf, cml_op_broadcast_in_dim(f, acc, dims, 3, (int64_t[]){1, 2}, 2));
}
static cml_value_t b_while_rnn(cml_function_t* f, const cml_value_t* p) {
  return while_rnn(f, p, 5);
}
// A loop reading rows of a captured table [4, 3] (p[1]) again and again, 6 trips:
// x <- sin(x * table[i % 4]) + 0.5 * gather(table, [(i + 1) % 4, (i + 3) % 4]). The table's
// gradient sums over trips that read the same rows (a DynamicSlice's and a Gather's VJP added
// into the running sum window by window).
static cml_value_t b_while_table(cml_function_t* f, const cml_value_t* p) {
  const cml_shape_t is = API_SHAPE(CML_DTYPE_I32), xs = API_SHAPE(CML_DTYPE_F64, 2, 3);
  cml_function_t *cond = NULL, *body = NULL;
  if (cml_function_new_closure(f, &cond) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t ci = cml_parameter(cond, NULL, &is);
  cml_parameter(cond, NULL, &xs);
  cml_value_t lt = cml_op_less_than(cond, ci, cml_constant_scalar_i64(cond, CML_DTYPE_I32, 6));
  if (cml_function_return(cond, &lt, 1) != CML_OK) return CML_VALUE_INVALID;
  if (cml_function_new_closure(f, &body) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t bi = cml_parameter(body, NULL, &is), bx = cml_parameter(body, NULL, &xs);
  cml_value_t four = cml_constant_scalar_i64(body, CML_DTYPE_I32, 4);
  cml_value_t zero = cml_constant_scalar_i64(body, CML_DTYPE_I32, 0);
  cml_value_t r = cml_op_rem(body, bi, four);
  cml_value_t row =
      cml_op_dynamic_slice(body, p[1], (cml_value_t[]){r, zero}, (int64_t[]){1, 3}, 2);
  const cml_shape_t two = API_SHAPE(CML_DTYPE_I32, 2);
  cml_value_t shifts = cml_constant(body, &two, (const int32_t[]){1, 3});
  cml_value_t idx = cml_op_rem(
      body, cml_op_add(body, cml_op_broadcast_in_dim(body, bi, (int64_t[]){2}, 1, NULL, 0), shifts),
      cml_op_broadcast_in_dim(body, four, (int64_t[]){2}, 1, NULL, 0));
  cml_gather_dims_t g;
  memset(&g, 0, sizeof g);
  g.index_vector_axis = 1;
  g.offset_output_axis_count = 1;
  g.offset_output_axes[0] = 1;
  g.collapsed_slice_axis_count = 1;
  g.start_index_map_count = 1;
  g.slice_size_count = 2;
  g.slice_sizes[0] = 1;
  g.slice_sizes[1] = 3;
  cml_value_t rows = cml_op_gather(body, p[1], idx, &g);
  cml_value_t nx =
      cml_op_add(body, cml_op_sin(body, cml_op_mul(body, bx, row)),
                 cml_op_mul(body, rows, cml_constant_scalar_f64(body, CML_DTYPE_F64, 0.5)));
  cml_value_t next[2] = {cml_op_add(body, bi, cml_constant_scalar_i64(body, CML_DTYPE_I32, 1)), nx};
  if (cml_function_return(body, next, 2) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t init[2] = {cml_constant_scalar_i64(f, CML_DTYPE_I32, 0), p[0]}, out[2];
  if (!cml_op_while(f, cond, body, init, 2, out)) return CML_VALUE_INVALID;
  return out[1];
}
static cml_value_t b_mlp(cml_function_t* f, const cml_value_t* p) {
  // tanh(x @ w1) @ w2 -> softmax cross-entropy-like composite
  cml_value_t h = cml_op_tanh(f, cml_op_dot(f, p[0], p[1]));
  cml_value_t y = cml_op_dot(f, h, p[2]);
  cml_value_t m = cml_op_reduce_max(f, y, (int64_t[]){1}, 1);
  cml_value_t z =
      cml_op_sub(f, y, cml_op_broadcast_in_dim(f, m, (int64_t[]){3, 2}, 2, (int64_t[]){0}, 1));
  cml_value_t lse = cml_op_log(f, cml_op_reduce_sum(f, cml_op_exp(f, z), (int64_t[]){1}, 1));
  return lse;
}

// Attention: causal, grouped-query (2 heads, 1 kv head), BHSD; on c the native VJP.
static cml_value_t b_sdpa(cml_function_t* f, const cml_value_t* p) {
  cml_sdpa_config_t c;
  cml_sdpa_config_init(&c);
  c.causal = true;
  return cml_op_fused_sdpa(f, p[0], p[1], p[2], CML_ATTENTION_LAYOUT_BHSD, &c, NULL, NULL);
}
// BSHD with an additive bias that needs a gradient: the decomposition differentiated.
static cml_value_t b_sdpa_bias(cml_function_t* f, const cml_value_t* p) {
  cml_sdpa_config_t c;
  cml_sdpa_config_init(&c);
  c.bias = p[3];
  c.scale = 0.7;
  return cml_op_fused_sdpa(f, p[0], p[1], p[2], CML_ATTENTION_LAYOUT_BSHD, &c, NULL, NULL);
}
// The logsumexp state of native attention (causal, grouped-query, BHSD), differentiated
// through the decomposition: the state alone, and with the output (both flattened).
static cml_value_t b_sdpa_lse(cml_function_t* f, const cml_value_t* p) {
  cml_sdpa_config_t c;
  cml_sdpa_config_init(&c);
  c.causal = true;
  cml_value_t states[CML_SDPA_MAX_STATES];
  size_t count = 0;
  cml_value_t o =
      cml_op_fused_sdpa(f, p[0], p[1], p[2], CML_ATTENTION_LAYOUT_BHSD, &c, states, &count);
  if (o == CML_VALUE_INVALID || count != 1) return CML_VALUE_INVALID;
  cml_value_t flat[2] = {cml_op_reshape(f, states[0], (int64_t[]){2 * 2 * 5}, 1),
                         cml_op_reshape(f, o, (int64_t[]){2 * 2 * 5 * 4}, 1)};
  return cml_op_concatenate(f, 0, flat, 2);
}
static cml_value_t b_sdpa_lse_only(cml_function_t* f, const cml_value_t* p) {
  cml_sdpa_config_t c;
  cml_sdpa_config_init(&c);
  c.scale = 0.6;
  cml_value_t states[CML_SDPA_MAX_STATES];
  size_t count = 0;
  cml_value_t o =
      cml_op_fused_sdpa(f, p[0], p[1], p[2], CML_ATTENTION_LAYOUT_BSHD, &c, states, &count);
  if (o == CML_VALUE_INVALID || count != 1) return CML_VALUE_INVALID;
  return states[0];
}

// QKV projection (query_dim 2, kv_dim 3, a bias for q and v), outputs concatenated.
static cml_value_t b_qkv(cml_function_t* f, const cml_value_t* p) {
  cml_value_t o[3];
  if (!cml_op_fused_attention_qkv_projection(f, p[0], p[1], p[2], CML_VALUE_INVALID, p[3], 2, 3,
                                             o)) {
    return CML_VALUE_INVALID;
  }
  return cml_op_concatenate(f, 1, (cml_value_t[]){cml_op_mul(f, o[0], o[0]), o[1], o[2]}, 3);
}

// Only q and v used (k's cotangent is zero), a bias for k only (gradient zero).
static cml_value_t b_qkv_partial(cml_function_t* f, const cml_value_t* p) {
  cml_value_t o[3];
  if (!cml_op_fused_attention_qkv_projection(f, p[0], p[1], CML_VALUE_INVALID, p[2],
                                             CML_VALUE_INVALID, 3, 2, o)) {
    return CML_VALUE_INVALID;
  }
  return cml_op_concatenate(f, 1, (cml_value_t[]){cml_op_sin(f, o[0]), o[2]}, 2);
}

// A pre-norm transformer block (sequence 4, width 8, 2 heads, causal): layer norm, QKV
// projection, attention, residual, layer norm, gelu dense, dense, residual. On c: the native
// fused nodes, their own VJPs and the gelu split; on xla:cpu the decomposition.
static cml_value_t b_block(cml_function_t* f, const cml_value_t* p) {
  const int64_t last = -1, bshd[4] = {1, 4, 2, 4}, flat[2] = {4, 8};
  cml_value_t h =
      cml_op_fused_layer_norm(f, p[0], &last, 1, 1e-3, CML_VALUE_INVALID, CML_VALUE_INVALID);
  cml_value_t qkv[3];
  if (!cml_op_fused_attention_qkv_projection(f, h, p[1], CML_VALUE_INVALID, CML_VALUE_INVALID,
                                             CML_VALUE_INVALID, 8, 8, qkv)) {
    return CML_VALUE_INVALID;
  }
  for (int i = 0; i < 3; ++i) qkv[i] = cml_op_reshape(f, qkv[i], bshd, 4);
  cml_sdpa_config_t sc;
  cml_sdpa_config_init(&sc);
  sc.causal = true;
  cml_value_t a =
      cml_op_fused_sdpa(f, qkv[0], qkv[1], qkv[2], CML_ATTENTION_LAYOUT_BSHD, &sc, NULL, NULL);
  cml_value_t r = cml_op_add(f, p[0], cml_op_reshape(f, a, flat, 2));
  h = cml_op_fused_layer_norm(f, r, &last, 1, 1e-3, CML_VALUE_INVALID, CML_VALUE_INVALID);
  cml_dense_config_t dc;
  cml_dense_config_init(&dc);
  dc.activation = CML_ACTIVATION_GELU;
  h = cml_op_fused_dense(f, h, p[2], CML_VALUE_INVALID, &dc);
  h = cml_op_fused_dense(f, h, p[3], CML_VALUE_INVALID, NULL);
  return cml_op_add(f, r, h);
}

// FFT over the last axis and inverse FFT over the last two, of Complex(p0, p1); the real and
// imaginary parts concatenated (the loss is real).
static cml_value_t b_fft(cml_function_t* f, const cml_value_t* p) {
  cml_value_t z = cml_op_fft(f, cml_op_complex(f, p[0], p[1]), CML_FFT_FORWARD, (int64_t[]){4}, 1);
  z = cml_op_fft(f, cml_op_mul(f, z, z), CML_FFT_INVERSE, (int64_t[]){2, 4}, 2);
  return cml_op_concatenate(f, 1, (cml_value_t[]){cml_op_real(f, z), cml_op_imag(f, z)}, 2);
}

// Real FFTs: RFFT of p0 over the last axis (even and odd lengths) and over the last two; the
// real and imaginary parts concatenated.
static cml_value_t ad_re_im(cml_function_t* f, cml_value_t z, int64_t axis) {
  return cml_op_concatenate(f, axis, (cml_value_t[]){cml_op_real(f, z), cml_op_imag(f, z)}, 2);
}
static cml_value_t b_rfft(cml_function_t* f, const cml_value_t* p) {  // p0 [3, 2, 8]
  cml_value_t a = cml_op_fft(f, p[0], CML_FFT_FORWARD_REAL, (int64_t[]){8}, 1);
  cml_value_t b = cml_op_fft(f, p[0], CML_FFT_FORWARD_REAL, (int64_t[]){2, 8}, 2);
  cml_value_t c =
      cml_op_fft(f, cml_op_slice(f, p[0], (int64_t[]){0, 0, 0}, (int64_t[]){3, 2, 7}, NULL, 3),
                 CML_FFT_FORWARD_REAL, (int64_t[]){7}, 1);  // [3, 2, 4]
  return cml_op_concatenate(
      f, 2, (cml_value_t[]){ad_re_im(f, a, 2), ad_re_im(f, b, 2), ad_re_im(f, c, 2)}, 3);
}
// IRFFT of Complex(p0, p1) [2, 2, 5] to length 8 and 9 over the last axis and to [2, 8] over
// the last two (the imaginary parts of the zero and Nyquist frequencies are ignored).
static cml_value_t b_irfft(cml_function_t* f, const cml_value_t* p) {
  cml_value_t z = cml_op_complex(f, p[0], p[1]);
  cml_value_t a = cml_op_fft(f, z, CML_FFT_INVERSE_REAL, (int64_t[]){8}, 1);
  cml_value_t b = cml_op_fft(f, z, CML_FFT_INVERSE_REAL, (int64_t[]){9}, 1);
  cml_value_t c = cml_op_fft(f, z, CML_FFT_INVERSE_REAL, (int64_t[]){2, 8}, 2);
  return cml_op_concatenate(f, 2, (cml_value_t[]){a, cml_op_mul(f, b, b), c}, 3);
}

// Second derivatives through attention: the gradient of sum(sin(SDPA(q, k, v))) with respect
// to q, k and v (on c the native FusedScaledDotProductAttentionVJP node), flattened; the harness
// differentiates it again. Causal grouped-query BHSD, and self-attention on one value with a
// Bool mask (BSHD).
static cml_value_t ad_flat_grads(cml_function_t* f, cml_value_t loss, const cml_value_t* wrt,
                                 int count) {
  cml_value_t g[3], flat[3];
  if (cml_gradients(f, loss, wrt, (size_t)count, g) != CML_OK) return CML_VALUE_INVALID;
  for (int i = 0; i < count; ++i) {
    cml_shape_t s;
    cml_builder_value_shape(cml_function_builder(f), g[i], &s);
    flat[i] = cml_op_reshape(f, g[i], (int64_t[]){cml_shape_element_count(&s)}, 1);
  }
  return count == 1 ? flat[0] : cml_op_concatenate(f, 0, flat, (size_t)count);
}
static cml_value_t b_sdpa_d2(cml_function_t* f, const cml_value_t* p) {
  cml_sdpa_config_t c;
  cml_sdpa_config_init(&c);
  c.causal = true;
  cml_value_t o = cml_op_fused_sdpa(f, p[0], p[1], p[2], CML_ATTENTION_LAYOUT_BHSD, &c, NULL, NULL);
  return ad_flat_grads(f, cml_op_reduce_sum(f, cml_op_sin(f, o), NULL, 0), p, 3);
}
// Second derivatives through BatchNormForTraining (its BatchNormGradient node differentiated
// through its standard-op form): the gradient of sum(sin(y) + mean * var) with respect to x and
// scale, flattened (an outside comparison with jax.hessian found it UNIMPLEMENTED).
static cml_value_t b_batch_norm_d2(cml_function_t* f, const cml_value_t* p) {
  cml_value_t o[3];
  if (!cml_op_batch_norm_training(f, p[0], p[1], p[2], 1e-3f, 1, o)) return CML_VALUE_INVALID;
  cml_value_t loss = cml_op_add(f, cml_op_reduce_sum(f, cml_op_sin(f, o[0]), NULL, 0),
                                cml_op_reduce_sum(f, cml_op_mul(f, o[1], o[2]), NULL, 0));
  return ad_flat_grads(f, loss, p, 2);
}
static const bool k_sdpa_mask[4 * 4] = {1, 0, 1, 1, 1, 1, 0, 1, 0, 1, 1, 1, 1, 1, 1, 0};
static cml_value_t b_sdpa_self_d2(cml_function_t* f, const cml_value_t* p) {
  cml_shape_t ms = cml_shape_make(CML_DTYPE_BOOL, 2, (int64_t[]){4, 4});
  cml_sdpa_config_t c;
  cml_sdpa_config_init(&c);
  c.mask = cml_constant(f, &ms, k_sdpa_mask);
  cml_value_t o = cml_op_fused_sdpa(f, p[0], p[0], p[0], CML_ATTENTION_LAYOUT_BSHD, &c, NULL, NULL);
  return ad_flat_grads(f, cml_op_reduce_sum(f, cml_op_mul(f, o, o), NULL, 0), p, 1);
}

static const ad_case_t* ad_cases(size_t* count) {
  static ad_case_t cases[128];
  static size_t n = 0;
  if (n) {
    *count = n;
    return cases;
  }
#define U(name_, lo_, hi_) \
  cases[n++] = (ad_case_t){#name_, 1, {F64(2, 3)}, {0}, lo_, hi_, b_##name_}
  U(exp, -2, 2);
  U(expm1, -2, 2);
  U(log, 0.5, 3);
  U(log1p, 0.1, 3);
  U(sin, -3, 3);
  U(cos, -3, 3);
  U(tanh, -2, 2);
  U(logistic, -3, 3);
  U(sqrt, 0.5, 3);
  U(rsqrt, 0.5, 3);
  U(erf, -2, 2);
  U(abs, -2, 2);
  U(neg, -2, 2);
  U(sign, -2, 2);
  U(floor, -2, 2);
  U(identity, -2, 2);
  U(softmax, -2, 2);
  U(gelu_exact, -3, 3);
  U(gelu_tanh, -3, 3);
  U(stop_gradient, -2, 2);
#define B(name_, s0, s1, lo_, hi_) \
  cases[n++] = (ad_case_t){#name_, 2, {s0, s1}, {0}, lo_, hi_, b_##name_}
  B(add, F64(2, 3), F64(2, 3), -2, 2);
  B(sub, F64(2, 3), F64(), -2, 2);      // scalar rhs
  B(mul, F64(2, 3), F64(1, 3), -2, 2);  // size-1 axis
  B(div, F64(2, 3), F64(2, 1), 0.5, 2);
  B(pow, F64(2, 3), F64(2, 3), 0.5, 2);
  B(max, F64(2, 3), F64(2, 3), -2, 2);
  B(min, F64(2, 3), F64(), -2, 2);
  B(atan2, F64(2, 3), F64(2, 3), 0.5, 2);
  B(rem, F64(2, 3), F64(2, 3), 0.7, 3);
  B(dot, F64(3, 4), F64(4, 2), -1, 1);
  B(dot_general, F64(3, 2, 4), F64(3, 5, 2), -1, 1);
  B(where, F64(2, 3), F64(2, 3), -2, 2);
  B(concatenate, F64(2, 3), F64(2, 2), -2, 2);
  B(pad, F64(3, 4), F64(), -2, 2);
  cases[n++] = (ad_case_t){"clamp", 3, {F64(), F64(2, 3), F64(2, 3)}, {0}, -1, 1, b_clamp};
#define R(name_, s0, lo_, hi_) cases[n++] = (ad_case_t){#name_, 1, {s0}, {0}, lo_, hi_, b_##name_}
  R(reduce_sum, F64(2, 3, 4), -2, 2);
  R(reduce_max, F64(3, 4), -2, 2);
  R(reduce_min, F64(3, 4), -2, 2);
  R(reduce_product, F64(3, 4), 0.5, 2);
  R(reshape, F64(2, 6), -2, 2);
  R(transpose, F64(2, 3, 4), -2, 2);
  R(broadcast, F64(3, 1), -2, 2);
  R(slice, F64(7, 5), -2, 2);
  R(reverse, F64(3, 4), -2, 2);
  R(reduce_window_sum, F64(5, 4), -2, 2);
  R(reduce_window_max, F64(4, 6), -2, 2);
  R(reduce_window_disjoint, F64(5, 7), -2, 2);
  cases[n++] = (ad_case_t){"dynamic_slice",    2,  {F64(4, 3), API_SHAPE(CML_DTYPE_I32)},
                           {NULL, &k_start_1}, -2, 2,
                           b_dynamic_slice};
  cases[n++] =
      (ad_case_t){"dynamic_update_slice",   3,  {F64(4, 3), F64(2, 2), API_SHAPE(CML_DTYPE_I32)},
                  {NULL, NULL, &k_start_2}, -2, 2,
                  b_dynamic_update_slice};
  cases[n++] = (ad_case_t){
      "gather", 2, {F64(4, 3), API_SHAPE(CML_DTYPE_I32, 3)}, {NULL, k_gather_idx}, -2, 2, b_gather};
  cases[n++] = (ad_case_t){"scatter_sum",
                           3,
                           {F64(4, 3), API_SHAPE(CML_DTYPE_I32, 3), F64(3, 3)},
                           {NULL, k_gather_idx, NULL},
                           -2,
                           2,
                           b_scatter_sum};
  cases[n++] = (ad_case_t){"scatter_max",
                           3,
                           {F64(4, 3), API_SHAPE(CML_DTYPE_I32, 3), F64(3, 3)},
                           {NULL, k_gather_idx, NULL},
                           -1.2,
                           1.2,
                           b_scatter_max};
  cases[n++] = (ad_case_t){"scatter_min",
                           3,
                           {F64(4, 3), API_SHAPE(CML_DTYPE_I32, 3), F64(3, 3)},
                           {NULL, k_gather_idx, NULL},
                           -1.2,
                           1.2,
                           b_scatter_min};
  cases[n++] = (ad_case_t){"batch_norm_training", 3, {F64(4, 3), F64(3), F64(3)}, {0}, -2, 2,
                           b_batch_norm_training};
  cases[n++] =
      (ad_case_t){"batch_norm_inference", 4, {F64(4, 3), F64(3), F64(3), F64(3)}, {0}, -1, 1,
                  b_batch_norm_inference};
  B(conv_strided, F64(2, 3, 5, 4), F64(4, 3, 2, 3), -1, 1);
  B(conv_dilated, F64(1, 2, 3, 4), F64(3, 2, 2, 2), -1, 1);
  B(conv_grouped, F64(2, 4, 3, 3), F64(6, 2, 2, 2), -1, 1);
  B(conv_nhwc, F64(2, 4, 5, 3), F64(2, 2, 3, 2), -1, 1);
  B(call, F64(2, 3), F64(2, 3), -2, 2);
  B(if, F64(2, 3), F64(2, 3), 0.1, 2);  // the true branch
  cases[n++] = (ad_case_t){"if_false", 2, {F64(2, 3), F64(2, 3)}, {0}, -2, -0.1, b_if};
  B(sort, F64(2, 5), F64(2, 5), -2, 2);
  B(while, F64(2, 3), F64(2, 3), -2, 2);
  cases[n++] = (ad_case_t){
      "while_rnn", 4, {F64(2, 3), F64(3, 3), F64(3, 3), F64(5, 2, 3)}, {0}, -1, 1, b_while_rnn};
  B(while_table, F64(2, 3), F64(4, 3), -1, 1);
  cases[n++] = (ad_case_t){"layer_norm", 3, {F64(3, 4), F64(4), F64(4)}, {0}, -2, 2, b_layer_norm};
  R(layer_norm_axes, F64(2, 3, 4), -2, 2);
  B(layer_norm_scale, F64(2, 3, 4), F64(3, 4), -2, 2);
  B(layer_norm_all, F64(3, 4), F64(3, 4), -2, 2);
  cases[n++] =
      (ad_case_t){"dense_gelu", 3, {F64(2, 3, 4), F64(4, 5), F64(5)}, {0}, -1, 1, b_dense_gelu};
  B(dense_silu, F64(3, 4), F64(2, 5, 4), -1, 1);
  cases[n++] = (ad_case_t){"dense_hard_swish", 3, {F64(3, 4), F64(4, 5), F64(5)}, {0}, -1, 1,
                           b_dense_hard_swish};
  cases[n++] = (ad_case_t){"mlp", 3, {F64(3, 4), F64(4, 5), F64(5, 2)}, {0}, -1, 1, b_mlp};
  cases[n++] = (ad_case_t){
      "sdpa", 3, {F64(2, 2, 5, 3), F64(2, 1, 6, 3), F64(2, 1, 6, 4)}, {0}, -1.5, 1.5, b_sdpa};
  cases[n++] =
      (ad_case_t){"sdpa_bias", 4,    {F64(1, 5, 2, 3), F64(1, 6, 2, 3), F64(1, 6, 2, 2), F64(5, 6)},
                  {0},         -1.5, 1.5,
                  b_sdpa_bias};
  B(fft, F64(3, 2, 4), F64(3, 2, 4), -1, 1);
  R(rfft, F64(3, 2, 8), -1, 1);
  B(irfft, F64(2, 2, 5), F64(2, 2, 5), -1, 1);
  cases[n++] = (ad_case_t){
      "sdpa_d2", 3, {F64(1, 2, 4, 3), F64(1, 1, 5, 3), F64(1, 1, 5, 2)}, {0}, -1, 1, b_sdpa_d2};
  R(sdpa_self_d2, F64(2, 4, 1, 3), -1, 1);
  cases[n++] =
      (ad_case_t){"batch_norm_d2", 3, {F64(4, 3), F64(3), F64(3)}, {0}, -2, 2, b_batch_norm_d2};
  cases[n++] =
      (ad_case_t){"qkv_projection", 4, {F64(3, 4), F64(4, 8), F64(2), F64(3)}, {0}, -1, 1, b_qkv};
  cases[n++] = (ad_case_t){"sdpa_lse", 3,    {F64(2, 2, 5, 3), F64(2, 1, 6, 3), F64(2, 1, 6, 4)},
                           {0},        -1.5, 1.5,
                           b_sdpa_lse};
  cases[n++] = (ad_case_t){
      "sdpa_lse_only", 3, {F64(1, 4, 2, 3), F64(1, 5, 2, 3), F64(1, 5, 2, 2)}, {0}, -1.5, 1.5,
      b_sdpa_lse_only};
  cases[n++] =
      (ad_case_t){"qkv_partial", 3, {F64(3, 4), F64(4, 7), F64(2)}, {0}, -1, 1, b_qkv_partial};
  cases[n++] =
      (ad_case_t){"block", 4, {F64(4, 8), F64(8, 24), F64(8, 16), F64(16, 8)}, {0}, -1, 1, b_block};
  if (n > sizeof cases / sizeof cases[0]) abort();  // grow |cases|
  *count = n;
  return cases;
}

TEST(finite_differences_c) {
  size_t n;
  const ad_case_t* cases = ad_cases(&n);
  int failed = 0;
  for (size_t i = 0; i < n; ++i) failed += ad_check(g_c, &cases[i], 1e-6) != 0;
  printf("  %zu cases against finite differences\n", n);
  ASSERT_EQ_INT(failed, 0);
  ASSERT_TRUE(n >= 50);
}

TEST(finite_differences_xla) {
  ASSERT_TRUE(g_xla != NULL);
  static const char* const names[] = {"tanh",
                                      "mul",
                                      "dot_general",
                                      "reduce_max",
                                      "pad",
                                      "slice",
                                      "gather",
                                      "reduce_window_sum",
                                      "reduce_window_disjoint",
                                      "mlp",
                                      "where",
                                      "conv_strided",
                                      "conv_grouped",
                                      "call",
                                      "if",
                                      "sort",
                                      "layer_norm",
                                      "dense_gelu",
                                      "while",
                                      "while_rnn",
                                      "while_table",
                                      "scatter_max",
                                      "scatter_min",
                                      "rfft",
                                      "irfft",
                                      "block"};
  size_t n;
  const ad_case_t* cases = ad_cases(&n);
  int failed = 0, ran = 0;
  for (size_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < sizeof names / sizeof names[0]; ++k) {
      if (strcmp(cases[i].name, names[k]) == 0) {
        failed += ad_check(g_xla, &cases[i], 1e-6) != 0;
        ++ran;
      }
    }
  }
  ASSERT_EQ_INT(failed, 0);
  ASSERT_EQ_INT(ran, 26);
}

//===--- hand-computed cases ---===//

// d/dx sum(x * x) = 2x; d/dw sum(x @ w) = x^T 1; the gradient of an unused value is 0.
TEST(hand_computed) {
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(g_c, "hand", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t xs = API_SHAPE(CML_DTYPE_F32, 2, 2), ws = API_SHAPE(CML_DTYPE_F32, 2, 1);
  cml_value_t x = cml_parameter(f, "x", &xs), w = cml_parameter(f, "w", &ws);
  cml_value_t u = cml_parameter(f, "unused", &ws);
  cml_value_t l = cml_op_add(f, cml_op_reduce_sum(f, cml_op_mul(f, x, x), NULL, 0),
                             cml_op_reduce_sum(f, cml_op_dot(f, x, w), NULL, 0));
  cml_value_t g[3];
  ASSERT_STATUS_OK(cml_gradients(f, l, (cml_value_t[]){x, w, u}, 3, g));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(b, g, 3, &exe));
  float xv[4] = {1, 2, 3, 4}, wv[2] = {10, 20}, uv[2] = {5, 5};
  float gx[4], gw[2], gu[2];
  ASSERT_STATUS_OK(api_run(g_c, exe, (const void*[]){xv, wv, uv}, (void*[]){gx, gw, gu}));
  cml_executable_release(exe);
  // d/dx: 2x + w^T broadcast over rows: [[2+10, 4+20], [6+10, 8+20]].
  ASSERT_EQ_DBL(gx[0], 12);
  ASSERT_EQ_DBL(gx[1], 24);
  ASSERT_EQ_DBL(gx[2], 16);
  ASSERT_EQ_DBL(gx[3], 28);
  ASSERT_EQ_DBL(gw[0], 4);  // column sums of x
  ASSERT_EQ_DBL(gw[1], 6);
  ASSERT_EQ_DBL(gu[0], 0);
  ASSERT_EQ_DBL(gu[1], 0);
}

// relu via max(x, 0): gradient 1 above 0, 0 below, 0.5 at the tie (JAX's balanced rule);
// ConvertDType f32 -> f64 -> f32 passes the gradient through.
TEST(hand_computed_relu_convert) {
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(g_c, "relu", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t xs = API_SHAPE(CML_DTYPE_F32, 3);
  cml_value_t x = cml_parameter(f, "x", &xs);
  cml_value_t r = cml_op_max(f, x, cml_constant_scalar_f64(f, CML_DTYPE_F32, 0.0));
  cml_value_t d = cml_op_convert_dtype(f, r, CML_DTYPE_F64);
  cml_value_t l = cml_op_convert_dtype(f, cml_op_reduce_sum(f, d, NULL, 0), CML_DTYPE_F32);
  cml_value_t g;
  ASSERT_STATUS_OK(cml_gradients(f, l, &x, 1, &g));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(b, &g, 1, &exe));
  float xv[3] = {-1, 0, 2}, gv[3];
  ASSERT_STATUS_OK(api_run(g_c, exe, (const void*[]){xv}, (void*[]){gv}));
  cml_executable_release(exe);
  ASSERT_EQ_DBL(gv[0], 0);
  ASSERT_EQ_DBL(gv[1], 0.5);
  ASSERT_EQ_DBL(gv[2], 1);
}

// Bitcast passes no gradient (JAX's rule), whether it keeps the dtype or goes through an
// integer: d/dx sum(3 x + bitcast(x) + bitcast(bitcast(x, I32), F32)) = 3.
TEST(bitcast_has_zero_gradient) {
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(g_c, "bitcast", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t xs = API_SHAPE(CML_DTYPE_F32, 3);
  cml_value_t x = cml_parameter(f, "x", &xs);
  cml_value_t same = cml_op_bitcast(f, x, CML_DTYPE_F32);
  cml_value_t round = cml_op_bitcast(f, cml_op_bitcast(f, x, CML_DTYPE_I32), CML_DTYPE_F32);
  cml_value_t y = cml_op_add(f, cml_op_mul(f, x, cml_constant_scalar_f64(f, CML_DTYPE_F32, 3.0)),
                             cml_op_add(f, same, round));
  cml_value_t l = cml_op_reduce_sum(f, y, NULL, 0);
  cml_value_t g;
  ASSERT_STATUS_OK(cml_gradients(f, l, &x, 1, &g));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(b, &g, 1, &exe));
  float xv[3] = {-1, 0, 2.5f}, gv[3];
  ASSERT_STATUS_OK(api_run(g_c, exe, (const void*[]){xv}, (void*[]){gv}));
  cml_executable_release(exe);
  for (int i = 0; i < 3; ++i) ASSERT_EQ_DBL(gv[i], 3);
}

// ReduceProduct with exact zeros (JAX's results): one zero in a group gets the product of the
// others and the rest 0; two zeros give 0 everywhere; no zero gives out / x.
TEST(reduce_product_with_zeros) {
  for (int k = 0; k < 2; ++k) {
    cml_backend_t* be = k == 0 ? g_c : g_xla;
    if (!be) continue;
    cml_builder_t* b = NULL;
    ASSERT_STATUS_OK(cml_builder_create(be, "prod", &b));
    cml_function_t* f = cml_builder_main(b);
    cml_shape_t xs = API_SHAPE(CML_DTYPE_F32, 3, 4);
    cml_value_t x = cml_parameter(f, "x", &xs);
    cml_value_t p = cml_op_reduce_product(f, x, (const int64_t[]){1}, 1);
    cml_value_t l = cml_op_reduce_sum(f, p, NULL, 0);
    cml_value_t g;
    ASSERT_STATUS_OK(cml_gradients(f, l, &x, 1, &g));
    cml_executable_t* exe = NULL;
    ASSERT_STATUS_OK(api_finish(b, &g, 1, &exe));
    const float xv[12] = {1, 0, 2, 3, 2, 3, 4, 5, 0, 2, 0, 1};
    const float want[12] = {0, 6, 0, 0, 60, 40, 30, 24, 0, 0, 0, 0};
    float gv[12];
    ASSERT_STATUS_OK(api_run(be, exe, (const void*[]){xv}, (void*[]){gv}));
    cml_executable_release(exe);
    for (int i = 0; i < 12; ++i) ASSERT_EQ_DBL(gv[i], want[i]);
  }
}

// Second derivative: d/dx (d/dx x^3) = 6x.
TEST(second_derivative) {
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(g_c, "d2", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = API_SHAPE(CML_DTYPE_F64);
  cml_value_t x = cml_parameter(f, "x", &s);
  cml_value_t y = cml_op_mul(f, x, cml_op_mul(f, x, x));
  cml_value_t g, h;
  ASSERT_STATUS_OK(cml_gradients(f, y, &x, 1, &g));
  ASSERT_STATUS_OK(cml_gradients(f, g, &x, 1, &h));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(b, (cml_value_t[]){g, h}, 2, &exe));
  double xv = 1.5, gv, hv;
  ASSERT_STATUS_OK(api_run(g_c, exe, (const void*[]){&xv}, (void*[]){&gv, &hv}));
  cml_executable_release(exe);
  ASSERT_NEAR(gv, 3 * 1.5 * 1.5, 1e-12);
  ASSERT_NEAR(hv, 6 * 1.5, 1e-12);
}

// Second derivatives through If(x > 0, log(x) * w, sqrt(-x) * w): only the taken branch's
// derivatives count, even where the untaken one's are NaN (sqrt(-x) at x > 0, log(x) at x < 0).
// d/dx, d2/dx2 and d2/dxdw of log(x) w at x = 2: w / 2, -w / 4, 1 / 2; of sqrt(-x) w at x = -4:
// -w / 4, -w / 32, -1 / 4.
TEST(if_second_derivative_ignores_the_untaken_branch) {
  cml_backend_t* be = g_xla ? g_xla : g_c;  // (--xla: on XLA's CPU plugin)
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(be, "if_d2", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = API_SHAPE(CML_DTYPE_F64);
  cml_value_t x = cml_parameter(f, "x", &s), w = cml_parameter(f, "w", &s);
  cml_function_t *t = NULL, *e = NULL;
  ASSERT_STATUS_OK(cml_function_new_closure(f, &t));
  ASSERT_STATUS_OK(cml_function_new_closure(f, &e));
  cml_value_t tv = cml_op_mul(t, cml_op_log(t, x), w);
  cml_value_t ev = cml_op_mul(e, cml_op_sqrt(e, cml_op_neg(e, x)), w);
  ASSERT_STATUS_OK(cml_function_return(t, &tv, 1));
  ASSERT_STATUS_OK(cml_function_return(e, &ev, 1));
  cml_value_t y = CML_VALUE_INVALID;
  cml_value_t pred = cml_op_greater_than(f, x, cml_constant_scalar_f64(f, CML_DTYPE_F64, 0));
  ASSERT_TRUE(cml_op_if(f, pred, t, e, &y));
  cml_value_t g, h[2];
  ASSERT_STATUS_OK(cml_gradients(f, y, &x, 1, &g));
  ASSERT_STATUS_OK(cml_gradients(f, g, (cml_value_t[]){x, w}, 2, h));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(b, (cml_value_t[]){g, h[0], h[1]}, 3, &exe));
  const double xs[2] = {2, -4}, ws = 3;
  const double want[2][3] = {{ws / 2, -ws / 4, 0.5}, {-ws / 4, -ws / 32, -0.25}};
  for (int i = 0; i < 2; ++i) {
    double got[3] = {0, 0, 0};
    ASSERT_STATUS_OK(
        api_run(be, exe, (const void*[]){&xs[i], &ws}, (void*[]){&got[0], &got[1], &got[2]}));
    for (int k = 0; k < 3; ++k) ASSERT_NEAR(got[k], want[i][k], 1e-12);
  }
  cml_executable_release(exe);
}

// An If whose branch reads 70 values with gradients: its VJP is an If with 70 results, and the
// second derivative differentiates that node (once refused: "no VJP for more than 64 operands
// or results"). y = If(p, sum_i (x (i + 1))^2, 0) for i < 70: at x = 1.5 and p true,
// dy/dx = 2 x S and d2y/dx2 = 2 S with S = sum (i + 1)^2 = 116795; with p false both are 0.
TEST(if_with_many_values_second_derivative) {
  cml_backend_t* be = g_xla ? g_xla : g_c;  // (--xla: on XLA's CPU plugin)
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(be, "if_many", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = API_SHAPE(CML_DTYPE_F64), ps = API_SHAPE(CML_DTYPE_BOOL);
  cml_value_t x = cml_parameter(f, "x", &s), p = cml_parameter(f, "p", &ps);
  cml_value_t a[70];
  for (int i = 0; i < 70; ++i) {
    a[i] = cml_op_mul(f, x, cml_constant_scalar_f64(f, CML_DTYPE_F64, i + 1));
  }
  cml_function_t *t = NULL, *e = NULL;
  ASSERT_STATUS_OK(cml_function_new_closure(f, &t));
  cml_value_t sum = cml_constant_scalar_f64(t, CML_DTYPE_F64, 0);
  for (int i = 0; i < 70; ++i) sum = cml_op_add(t, sum, cml_op_mul(t, a[i], a[i]));
  ASSERT_STATUS_OK(cml_function_return(t, &sum, 1));
  ASSERT_STATUS_OK(cml_function_new_closure(f, &e));
  cml_value_t zero = cml_constant_scalar_f64(e, CML_DTYPE_F64, 0);
  ASSERT_STATUS_OK(cml_function_return(e, &zero, 1));
  cml_value_t y = CML_VALUE_INVALID, g, h;
  ASSERT_TRUE(cml_op_if(f, p, t, e, &y));
  ASSERT_STATUS_OK(cml_gradients(f, y, &x, 1, &g));
  ASSERT_STATUS_OK(cml_gradients(f, g, &x, 1, &h));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(b, (cml_value_t[]){g, h}, 2, &exe));
  for (int k = 0; k < 2; ++k) {
    double xv = 1.5, got[2];
    bool pv = k == 0;
    ASSERT_STATUS_OK(api_run(be, exe, (const void*[]){&xv, &pv}, (void*[]){&got[0], &got[1]}));
    ASSERT_NEAR(got[0], pv ? 2 * 1.5 * 116795 : 0, 1e-9);
    ASSERT_NEAR(got[1], pv ? 2 * 116795.0 : 0, 1e-9);
  }
  cml_executable_release(exe);
}

// A convolution whose output is empty (a window wider than the input, an empty input spatial
// axis, a stride that leaves no position): both gradients are zeros of the operands' shapes.
// The kernel gradient used to build a convolution with the empty cotangent as its window,
// which failed the whole builder.
TEST(conv_with_an_empty_output_has_zero_gradients) {
  static const struct {
    int64_t x[3], k[3], stride;
  } cases[] = {{{2, 2, 2}, {3, 2, 4}, 1}, {{2, 0, 2}, {1, 2, 3}, 1}, {{1, 2, 1}, {3, 1, 1}, 2}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    cml_builder_t* b = NULL;
    ASSERT_STATUS_OK(cml_builder_create(g_c, "conv_empty", &b));
    cml_function_t* f = cml_builder_main(b);
    cml_shape_t xs = cml_shape_make(CML_DTYPE_F32, 3, cases[i].x);
    cml_shape_t ks = cml_shape_make(CML_DTYPE_F32, 3, cases[i].k);
    cml_value_t x = cml_parameter(f, "x", &xs), k = cml_parameter(f, "k", &ks);
    cml_conv_config_t c;
    cml_conv_config_init(&c, 1, CML_CONV_LAYOUT_CHANNELS_LAST);
    c.strides[0] = cases[i].stride;
    cml_value_t y = cml_op_conv_general(f, x, k, &c);
    cml_value_t loss = cml_op_reduce_sum(f, cml_op_mul(f, y, y), NULL, 0);
    cml_value_t g[2];
    ASSERT_STATUS_OK(cml_gradients(f, loss, (cml_value_t[]){x, k}, 2, g));
    cml_executable_t* exe = NULL;
    ASSERT_STATUS_OK(api_finish(b, g, 2, &exe));
    float xv[8], kv[24], gx[8], gk[24];
    for (int j = 0; j < 8; ++j) xv[j] = gx[j] = (float)j + 1;
    for (int j = 0; j < 24; ++j) kv[j] = gk[j] = (float)j - 5;
    ASSERT_STATUS_OK(api_run(g_c, exe, (const void*[]){xv, kv}, (void*[]){gx, gk}));
    cml_executable_release(exe);
    for (int64_t j = 0; j < cml_shape_element_count(&xs); ++j) ASSERT_EQ_DBL(gx[j], 0);
    for (int64_t j = 0; j < cml_shape_element_count(&ks); ++j) ASSERT_EQ_DBL(gk[j], 0);
  }
}

// Control flow nested in control flow: an If inside an If's branch, and an If inside a While's
// body (unrolled), differentiated through copies of the inner closures (they were UNIMPLEMENTED).
// y = If(p, If(q, -x * x, sin x), exp x): dy/dx = -2x, cos x, exp x; d2y/dx2 = -2, -sin x, exp x.
// z = While(i < 3: x <- If(x > 1, x / 2, x * x)) from x = 3: 1.5, 0.75, 0.5625 (dz/dx = 0.5 *
// 0.5 * 2 * 0.75 = 0.375); from x = 0.9: 0.81, 0.6561, 0.43046721 (dz/dx = 8 x^7).
TEST(nested_control_flow_gradients) {
  cml_backend_t* be = g_xla ? g_xla : g_c;  // (--xla: on XLA's CPU plugin)
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(be, "nested", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = API_SHAPE(CML_DTYPE_F64), ps = API_SHAPE(CML_DTYPE_BOOL);
  cml_shape_t is = API_SHAPE(CML_DTYPE_I32);
  cml_value_t x = cml_parameter(f, "x", &s), p = cml_parameter(f, "p", &ps);
  cml_value_t q = cml_parameter(f, "q", &ps);
  cml_function_t *yes = NULL, *no = NULL, *inner_yes = NULL, *inner_no = NULL;
  ASSERT_STATUS_OK(cml_function_new_closure(f, &yes));
  ASSERT_STATUS_OK(cml_function_new_closure(yes, &inner_yes));
  cml_value_t t = cml_op_neg(inner_yes, cml_op_mul(inner_yes, x, x));
  ASSERT_STATUS_OK(cml_function_return(inner_yes, &t, 1));
  ASSERT_STATUS_OK(cml_function_new_closure(yes, &inner_no));
  t = cml_op_sin(inner_no, x);
  ASSERT_STATUS_OK(cml_function_return(inner_no, &t, 1));
  ASSERT_TRUE(cml_op_if(yes, q, inner_yes, inner_no, &t));
  ASSERT_STATUS_OK(cml_function_return(yes, &t, 1));
  ASSERT_STATUS_OK(cml_function_new_closure(f, &no));
  cml_value_t e = cml_op_exp(no, x);
  ASSERT_STATUS_OK(cml_function_return(no, &e, 1));
  cml_value_t y = CML_VALUE_INVALID;
  ASSERT_TRUE(cml_op_if(f, p, yes, no, &y));
  // The loop: state (i, x).
  cml_function_t *cond = NULL, *body = NULL, *halve = NULL, *square = NULL;
  ASSERT_STATUS_OK(cml_function_new_closure(f, &cond));
  cml_value_t ci = cml_parameter(cond, "i", &is);
  (void)cml_parameter(cond, "x", &s);
  cml_value_t c = cml_op_less_than(cond, ci, cml_constant_scalar_i64(cond, CML_DTYPE_I32, 3));
  ASSERT_STATUS_OK(cml_function_return(cond, &c, 1));
  ASSERT_STATUS_OK(cml_function_new_closure(f, &body));
  cml_value_t bi = cml_parameter(body, "i", &is), bx = cml_parameter(body, "x", &s);
  ASSERT_STATUS_OK(cml_function_new_closure(body, &halve));
  t = cml_op_div(halve, bx, cml_constant_scalar_f64(halve, CML_DTYPE_F64, 2));
  ASSERT_STATUS_OK(cml_function_return(halve, &t, 1));
  ASSERT_STATUS_OK(cml_function_new_closure(body, &square));
  t = cml_op_mul(square, bx, bx);
  ASSERT_STATUS_OK(cml_function_return(square, &t, 1));
  cml_value_t big = cml_op_greater_than(body, bx, cml_constant_scalar_f64(body, CML_DTYPE_F64, 1));
  cml_value_t nx = CML_VALUE_INVALID;
  ASSERT_TRUE(cml_op_if(body, big, halve, square, &nx));
  cml_value_t next[2] = {cml_op_add(body, bi, cml_constant_scalar_i64(body, CML_DTYPE_I32, 1)), nx};
  ASSERT_STATUS_OK(cml_function_return(body, next, 2));
  cml_value_t state[2] = {cml_constant_scalar_i64(f, CML_DTYPE_I32, 0), x}, z[2];
  ASSERT_TRUE(cml_op_while(f, cond, body, state, 2, z));
  cml_value_t gy, hy, gz;
  ASSERT_STATUS_OK(cml_gradients(f, y, &x, 1, &gy));
  ASSERT_STATUS_OK(cml_gradients(f, gy, &x, 1, &hy));
  ASSERT_STATUS_OK(cml_gradients(f, z[1], &x, 1, &gz));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(b, (cml_value_t[]){gy, hy, z[1], gz}, 4, &exe));
  const double xs[2] = {3, 0.9};
  for (int i = 0; i < 2; ++i) {
    for (int k = 0; k < 3; ++k) {  // (p, q) = (true, true), (true, false), (false, *)
      bool pv = k < 2, qv = k == 0;
      double xv = xs[i], got[4];
      ASSERT_STATUS_OK(api_run(be, exe, (const void*[]){&xv, &pv, &qv},
                               (void*[]){&got[0], &got[1], &got[2], &got[3]}));
      double want_g = k == 0 ? -2 * xv : k == 1 ? cos(xv) : exp(xv);
      double want_h = k == 0 ? -2 : k == 1 ? -sin(xv) : exp(xv);
      double want_z = i == 0 ? 0.5625 : 0.43046721, want_gz = i == 0 ? 0.375 : 8 * pow(xv, 7);
      ASSERT_NEAR(got[0], want_g, 1e-12 * (1 + fabs(want_g)));
      ASSERT_NEAR(got[1], want_h, 1e-12 * (1 + fabs(want_h)));
      ASSERT_NEAR(got[2], want_z, 1e-12);
      ASSERT_NEAR(got[3], want_gz, 1e-12);
    }
  }
  cml_executable_release(exe);
}

// Complex: loss = Real(z * z) + Imag(z) + Abs(z) for z = Complex(a, b):
// d/da = 2a + a / |z|, d/db = -2b + 1 + b / |z|.
TEST(complex_ops) {
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(g_c, "complex", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = API_SHAPE(CML_DTYPE_F64, 2);
  cml_value_t a = cml_parameter(f, "a", &s), bb = cml_parameter(f, "b", &s);
  cml_value_t z = cml_op_complex(f, a, bb);
  cml_value_t l = cml_op_add(f, cml_op_real(f, cml_op_mul(f, z, z)), cml_op_imag(f, z));
  l = cml_op_reduce_sum(f, cml_op_add(f, l, cml_op_abs(f, z)), NULL, 0);
  cml_value_t g[2];
  ASSERT_STATUS_OK(cml_gradients(f, l, (cml_value_t[]){a, bb}, 2, g));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(b, g, 2, &exe));
  double av[2] = {1.5, -2}, bv[2] = {0.5, 3}, ga[2], gb[2];
  ASSERT_STATUS_OK(api_run(g_c, exe, (const void*[]){av, bv}, (void*[]){ga, gb}));
  cml_executable_release(exe);
  double r0 = sqrt(1.5 * 1.5 + 0.5 * 0.5), r1 = sqrt(4.0 + 9.0);
  ASSERT_NEAR(ga[0], 3.0 + 1.5 / r0, 1e-12);
  ASSERT_NEAR(ga[1], -4.0 - 2.0 / r1, 1e-12);
  ASSERT_NEAR(gb[0], 0.0 + 0.5 / r0, 1e-12);
  ASSERT_NEAR(gb[1], -5.0 + 3.0 / r1, 1e-12);
}

//===--- bad input ---===//

TEST(errors) {
  char msg[1024];
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(g_c, "errors", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t vs = API_SHAPE(CML_DTYPE_F32, 3), is = API_SHAPE(CML_DTYPE_I32, 3);
  cml_value_t x = cml_parameter(f, "x", &vs), i = cml_parameter(f, "i", &is);
  cml_value_t g = 123;
  // Non-scalar loss.
  ASSERT_EQ_INT(api_code_msg(cml_gradients(f, x, &x, 1, &g), msg, sizeof msg),
                CML_STATUS_INVALID_ARGUMENT);
  ASSERT_TRUE(strstr(msg, "scalar") != NULL);
  ASSERT_TRUE(strstr(msg, "f32[3]") != NULL || strstr(msg, "[3]") != NULL);
  ASSERT_EQ_INT(g, CML_VALUE_INVALID);
  cml_builder_destroy(b);

  // Integer wrt.
  ASSERT_STATUS_OK(cml_builder_create(g_c, "errors", &b));
  f = cml_builder_main(b);
  x = cml_parameter(f, "x", &vs);
  i = cml_parameter(f, "i", &is);
  cml_value_t l =
      cml_op_reduce_sum(f, cml_op_mul(f, x, cml_op_convert_dtype(f, i, CML_DTYPE_F32)), NULL, 0);
  ASSERT_EQ_INT(api_code_msg(cml_gradients(f, l, &i, 1, &g), msg, sizeof msg),
                CML_STATUS_INVALID_ARGUMENT);
  ASSERT_TRUE(strstr(msg, "not differentiable") != NULL);
  // The error sticks to the builder.
  ASSERT_EQ_INT(api_code(cml_builder_status(b)), CML_STATUS_INVALID_ARGUMENT);
  cml_builder_destroy(b);

  // wrt of another builder, and of a closure.
  cml_builder_t* b2 = NULL;
  ASSERT_STATUS_OK(cml_builder_create(g_c, "a", &b));
  ASSERT_STATUS_OK(cml_builder_create(g_c, "b", &b2));
  f = cml_builder_main(b);
  x = cml_parameter(f, "x", &vs);
  cml_value_t y = cml_parameter(cml_builder_main(b2), "y", &vs);
  l = cml_op_reduce_sum(f, x, NULL, 0);
  ASSERT_EQ_INT(api_code_msg(cml_gradients(f, l, &y, 1, &g), msg, sizeof msg),
                CML_STATUS_INVALID_ARGUMENT);
  ASSERT_TRUE(strstr(msg, "another builder") != NULL);
  cml_builder_destroy(b2);
  cml_builder_destroy(b);

  ASSERT_STATUS_OK(cml_builder_create(g_c, "closure", &b));
  f = cml_builder_main(b);
  x = cml_parameter(f, "x", &vs);
  cml_function_t* c = NULL;
  ASSERT_STATUS_OK(cml_function_new_closure(f, &c));
  cml_value_t cx = cml_op_neg(c, x);
  l = cml_op_reduce_sum(f, x, NULL, 0);
  ASSERT_EQ_INT(api_code_msg(cml_gradients(f, l, &cx, 1, &g), msg, sizeof msg),
                CML_STATUS_INVALID_ARGUMENT);
  ASSERT_TRUE(strstr(msg, "not of the differentiated function") != NULL);
  cml_builder_destroy(b);

  // After return: FAILED_PRECONDITION, not sticky.
  ASSERT_STATUS_OK(cml_builder_create(g_c, "returned", &b));
  f = cml_builder_main(b);
  x = cml_parameter(f, "x", &vs);
  l = cml_op_reduce_sum(f, x, NULL, 0);
  ASSERT_STATUS_OK(cml_function_return(f, &l, 1));
  ASSERT_EQ_INT(api_code(cml_gradients(f, l, &x, 1, &g)), CML_STATUS_FAILED_PRECONDITION);
  cml_builder_destroy(b);

  // NULL function.
  ASSERT_EQ_INT(api_code(cml_gradients(NULL, 1, NULL, 0, NULL)), CML_STATUS_INVALID_ARGUMENT);
  // StopGradient's own errors name it (they named the Identity it is built from).
  {
    cml_builder_t* sb = NULL;
    ASSERT_STATUS_OK(cml_builder_create(g_c, "stop_errors", &sb));
    cml_function_t* sf = cml_builder_main(sb);
    ASSERT_EQ_INT(cml_op_stop_gradient(sf, CML_VALUE_INVALID), CML_VALUE_INVALID);
    cml_status_t sst = cml_builder_status(sb);
    ASSERT_TRUE(strncmp(cml_status_message(sst), "StopGradient:", 13) == 0);
    cml_status_free(sst);
    cml_builder_destroy(sb);
  }
}

static cml_status_t while_cond(cml_function_t* c, cml_shape_t* s) {
  cml_value_t v = cml_parameter(c, "v", s);
  cml_value_t r = cml_op_less_than(c, cml_op_reduce_sum(c, v, NULL, 0),
                                   cml_constant_scalar_f64(c, CML_DTYPE_F32, 100));
  return cml_function_return(c, &r, 1);
}

// An op without a VJP on the path: UNIMPLEMENTED naming it; off the path it does not matter.
TEST(unimplemented_names_op) {
  char msg[1024];
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(g_c, "while", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = API_SHAPE(CML_DTYPE_F32, 2);
  cml_value_t x = cml_parameter(f, "x", &s);
  cml_function_t *cond = NULL, *body = NULL;
  ASSERT_STATUS_OK(cml_function_new_closure(f, &cond));
  ASSERT_STATUS_OK(while_cond(cond, &s));
  ASSERT_STATUS_OK(cml_function_new_closure(f, &body));
  cml_value_t v = cml_parameter(body, "v", &s);
  v = cml_op_mul(body, v, cml_constant_scalar_f64(body, CML_DTYPE_F32, 2));
  ASSERT_STATUS_OK(cml_function_return(body, &v, 1));
  cml_value_t out;
  ASSERT_TRUE(cml_op_while(f, cond, body, &x, 1, &out));
  // Off the path: the While does not depend on y.
  cml_value_t y = cml_parameter(f, "y", &s);
  cml_value_t l = cml_op_reduce_sum(f, cml_op_add(f, out, y), NULL, 0);
  cml_value_t g;
  ASSERT_STATUS_OK(cml_gradients(f, l, &y, 1, &g));
  ASSERT_NE_INT(g, CML_VALUE_INVALID);
  ASSERT_EQ_INT(api_code_msg(cml_gradients(f, l, &x, 1, &g), msg, sizeof msg),
                CML_STATUS_UNIMPLEMENTED);
  ASSERT_TRUE(strstr(msg, "While") != NULL);
  ASSERT_TRUE(strstr(msg, "no VJP") != NULL);
  ASSERT_EQ_INT(g, CML_VALUE_INVALID);
  cml_builder_destroy(b);
}

// Builds While((i, x): i < limit; (i + 1, x * m)) from (start, x) in |f| with a counter of
// dtype |dt| and returns its x; m is |factor|, or x itself when |factor| is CML_VALUE_INVALID
// (x squared each trip). x may have any shape. |start| and |limit| are the constants' bits, read
// as |dt| (the low bytes, on these little-endian targets: small values and every 64-bit value
// alike).
static cml_value_t product_loop(cml_function_t* f, cml_dtype_t dt, uint64_t start, uint64_t limit,
                                cml_value_t x, cml_value_t factor) {
  cml_shape_t is = API_SHAPE(dt), xs;
  if (!cml_builder_value_shape(cml_function_builder(f), x, &xs)) return CML_VALUE_INVALID;
  const uint64_t one = 1;
  cml_function_t *cond = NULL, *body = NULL;
  if (cml_function_new_closure(f, &cond) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t ci = cml_parameter(cond, NULL, &is);
  cml_parameter(cond, NULL, &xs);
  cml_value_t lt = cml_op_less_than(cond, ci, cml_constant(cond, &is, &limit));
  if (cml_function_return(cond, &lt, 1) != CML_OK) return CML_VALUE_INVALID;
  if (cml_function_new_closure(f, &body) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t bi = cml_parameter(body, NULL, &is);
  cml_value_t bx = cml_parameter(body, NULL, &xs);
  cml_value_t next[2] = {cml_op_add(body, bi, cml_constant(body, &is, &one)),
                         cml_op_mul(body, bx, factor == CML_VALUE_INVALID ? bx : factor)};
  if (cml_function_return(body, next, 2) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t init[2] = {cml_constant(f, &is, &start), x}, out[2];
  if (!cml_op_while(f, cond, body, init, 2, out)) return CML_VALUE_INVALID;
  return out[1];
}

// d(x^8)/dx at 1.5 through |loop| (a product_loop squaring it 3 trips of main's parameter 0);
// compiles and so destroys |b| (api_finish).
static void expect_three_squarings(int* test_failed_, cml_builder_t* b, cml_value_t x,
                                   cml_value_t loop) {
  cml_function_t* f = cml_builder_main(b);
  cml_value_t g;
  ASSERT_STATUS_OK(cml_gradients(f, loop, &x, 1, &g));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(b, &g, 1, &exe));
  const float xv = 1.5f;
  float gv = 0;
  ASSERT_STATUS_OK(api_run(g_c, exe, (const void* const[]){&xv}, (void* const[]){&gv}));
  ASSERT_NEAR(gv, 8 * pow(1.5, 7), 1e-4);
  cml_executable_release(exe);
}

// A While whose static trip count passes INT64_MAX (an Int64 counter from INT64_MIN to 10, or
// to INT64_MAX): its per-trip state (x, 4 bytes) cannot be kept, UNIMPLEMENTED. The count once
// wrapped negative and slipped past the check: OK, with the gradient of a loop that never ran.
TEST(while_trip_count_past_int64) {
  static const int64_t limits[] = {10, INT64_MAX};
  for (int c = 0; c < 2; ++c) {
    char msg[1024];
    cml_builder_t* b = NULL;
    ASSERT_STATUS_OK(cml_builder_create(g_c, "while", &b));
    cml_function_t* f = cml_builder_main(b);
    cml_shape_t xs = API_SHAPE(CML_DTYPE_F32);
    cml_value_t x = cml_parameter(f, "x", &xs);
    cml_value_t y = product_loop(f, CML_DTYPE_I64, (uint64_t)INT64_MIN, (uint64_t)limits[c], x,
                                 CML_VALUE_INVALID);
    ASSERT_NE_INT(y, CML_VALUE_INVALID);
    cml_value_t g;
    ASSERT_EQ_INT(api_code_msg(cml_gradients(f, y, &x, 1, &g), msg, sizeof msg),
                  CML_STATUS_UNIMPLEMENTED);
    ASSERT_CONTAINS(msg, "9223372036854775807 iterations");
    ASSERT_CONTAINS(msg, "4 bytes per iteration, would take more than 1 TiB");
    cml_builder_destroy(b);
  }
}

// A While counted by a Uint8, Int16 or Uint32 counter (0 to 3, x = x * x) has a static trip
// count like an Int32 one: d(x^8)/dx = 8 x^7 (it was UNIMPLEMENTED "no static trip count" for
// every counter but Int32 and Int64; found by an outside comparison with JAX).
TEST(while_counters_of_every_integer_dtype) {
  static const cml_dtype_t dts[] = {CML_DTYPE_U8, CML_DTYPE_I16, CML_DTYPE_U32, CML_DTYPE_U64};
  for (size_t c = 0; c < sizeof dts / sizeof *dts; ++c) {
    cml_builder_t* b = NULL;
    ASSERT_STATUS_OK(cml_builder_create(g_c, "while", &b));
    cml_shape_t xs = API_SHAPE(CML_DTYPE_F32);
    cml_value_t x = cml_parameter(cml_builder_main(b), "x", &xs);
    cml_value_t y = product_loop(cml_builder_main(b), dts[c], 0, 3, x, CML_VALUE_INVALID);
    ASSERT_NE_INT(y, CML_VALUE_INVALID);
    expect_three_squarings(test_failed_, b, x, y);
  }
}

// Uint64 counters whose start and limit pass INT64_MAX (2^63 - 1 to 2^63 + 2, and 2^64 - 4 to
// 2^64 - 1: 3 trips each, x = x * x, so d(x^8)/dx = 8 x^7); from 0 to 2^64 - 1: too many
// iterations to keep x for each. Constants past INT64_MAX were refused as "no static trip count"
// (found by an outside comparison with JAX).
TEST(while_uint64_counters_past_int64_max) {
  static const uint64_t range[3][2] = {
      {(1ull << 63) - 1, (1ull << 63) + 2}, {UINT64_MAX - 3, UINT64_MAX}, {0, UINT64_MAX}};
  for (int c = 0; c < 3; ++c) {
    cml_builder_t* b = NULL;
    ASSERT_STATUS_OK(cml_builder_create(g_c, "while", &b));
    cml_function_t* f = cml_builder_main(b);
    cml_shape_t xs = API_SHAPE(CML_DTYPE_F32);
    cml_value_t x = cml_parameter(f, "x", &xs);
    cml_value_t y = product_loop(f, CML_DTYPE_U64, range[c][0], range[c][1], x, CML_VALUE_INVALID);
    ASSERT_NE_INT(y, CML_VALUE_INVALID);
    if (c < 2) {
      expect_three_squarings(test_failed_, b, x, y);
      continue;
    }
    char msg[1024];
    cml_value_t g;
    ASSERT_EQ_INT(api_code_msg(cml_gradients(f, y, &x, 1, &g), msg, sizeof msg),
                  CML_STATUS_UNIMPLEMENTED);
    ASSERT_CONTAINS(msg, "4 bytes per iteration, would take more than 1 TiB");
    cml_builder_destroy(b);
  }
}

// The RNN of while_rnn over 64 steps, differentiated as a loop, against the same RNN unrolled
// by hand in straight-line ops (standard VJPs only), on c and xla:cpu: every gradient agrees to
// 1e-12. The loop's gradient graph stays small: its listing holds the stored h [64, 2, 3] but
// nothing [64, 64, ...] (buf is only written into, so its 64 values are not kept), and two
// loops, not three.
TEST(while_gradient_as_a_loop) {
  enum { kSteps = 64 };
  for (int k = 0; k < 2; ++k) {
    cml_backend_t* be = k == 0 ? g_c : g_xla;
    if (!be) continue;
    double in[4][kSteps * 6], got[2][4][kSteps * 6];
    const int64_t counts[4] = {6, 9, 9, kSteps * 6};
    uint64_t seed = 7;
    for (int i = 0; i < 4; ++i) {
      for (int64_t e = 0; e < counts[i]; ++e) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        in[i][e] = ((double)(seed >> 11) / 9007199254740992.0 - 0.5) * (i == 3 ? 2 : 1);
      }
    }
    for (int form = 0; form < 2; ++form) {
      cml_builder_t* b = NULL;
      ASSERT_STATUS_OK(cml_builder_create(be, "rnn", &b));
      cml_function_t* f = cml_builder_main(b);
      const cml_shape_t shapes[4] = {F64(2, 3), F64(3, 3), F64(3, 3), F64(kSteps, 2, 3)};
      cml_value_t p[4];
      for (int i = 0; i < 4; ++i) p[i] = cml_parameter(f, NULL, &shapes[i]);
      cml_value_t y = form ? unrolled_rnn(f, p, kSteps) : while_rnn(f, p, kSteps);
      // loss = sum(y * y * r) with r = iota + 1 (each element weighted differently)
      const cml_shape_t ys = F64(kSteps, 2, 3);
      cml_value_t r = cml_op_add(f, cml_op_iota(f, &ys, 0), cml_op_iota(f, &ys, 2));
      cml_value_t loss = cml_op_reduce_sum(f, cml_op_mul(f, cml_op_mul(f, y, y), r), NULL, 0);
      cml_value_t g[4];
      ASSERT_STATUS_OK(cml_gradients(f, loss, p, 4, g));
      cml_executable_t* exe = NULL;
      ASSERT_STATUS_OK(api_finish(b, g, 4, &exe));
      if (form == 0) {
        char* text = NULL;
        size_t size = 0;
        FILE* mem = open_memstream(&text, &size);
        ASSERT_TRUE(mem != NULL);
        ASSERT_STATUS_OK(cml_executable_dump(exe, mem));
        fclose(mem);
        // c lists shapes as [64, 2, 3], xla as StableHLO's tensor<64x2x3xf64>.
        ASSERT_TRUE(strstr(text, k == 0 ? "[64, 2, 3]" : "<64x2x3xf64>") != NULL);
        ASSERT_TRUE(strstr(text, k == 0 ? "[64, 64" : "<64x64x") == NULL);
        ASSERT_TRUE(size < 60000);  // not 64 copies of the body
        // Two loops: the forward one (storing h) and the backward one; the original While
        // became a pass-through of the storing loop's results, so the forward runs once.
        int loops = 0;
        const char* word = k == 0 ? " = While(" : "\"stablehlo.while\"";
        for (const char* at = strstr(text, word); at; at = strstr(at + 1, word)) ++loops;
        ASSERT_EQ_INT(loops, 2);
        free(text);
      }
      ASSERT_STATUS_OK(api_run(be, exe, (const void*[]){in[0], in[1], in[2], in[3]},
                               (void*[]){got[form][0], got[form][1], got[form][2], got[form][3]}));
      cml_executable_release(exe);
    }
    double worst = 0;
    for (int i = 0; i < 4; ++i) {
      for (int64_t e = 0; e < counts[i]; ++e) {
        double d = fabs(got[0][i][e] - got[1][i][e]) / (1 + fabs(got[1][i][e]));
        if (d > worst) worst = d;
      }
    }
    ASSERT_TRUE(worst < 1e-12);
    ASSERT_TRUE(fabs(got[1][1][0]) > 1e-3);  // not vacuous
  }
}

// x <- x * c for 100000 trips (far more than any unrolling would take): d/dx = c^T and
// d/dc = T x c^(T - 1), with c captured by the body. On xla:cpu too.
TEST(while_gradient_of_a_long_loop) {
  const int64_t trips = 100000;
  for (int k = 0; k < 2; ++k) {
    cml_backend_t* be = k == 0 ? g_c : g_xla;
    if (!be) continue;
    cml_builder_t* b = NULL;
    ASSERT_STATUS_OK(cml_builder_create(be, "long", &b));
    cml_function_t* f = cml_builder_main(b);
    cml_shape_t s = F64();
    cml_value_t x = cml_parameter(f, "x", &s), c = cml_parameter(f, "c", &s);
    cml_value_t y = product_loop(f, CML_DTYPE_I64, 0, (uint64_t)trips, x, c);
    ASSERT_NE_INT(y, CML_VALUE_INVALID);
    cml_value_t g[2];
    ASSERT_STATUS_OK(cml_gradients(f, y, (cml_value_t[]){x, c}, 2, g));
    cml_executable_t* exe = NULL;
    ASSERT_STATUS_OK(api_finish(b, g, 2, &exe));
    const double xv = 1.5, cv = 1.00001;
    double gx = 0, gc = 0;
    ASSERT_STATUS_OK(api_run(be, exe, (const void*[]){&xv, &cv}, (void*[]){&gx, &gc}));
    cml_executable_release(exe);
    ASSERT_NEAR(gx, pow(cv, (double)trips), 1e-9);
    ASSERT_NEAR(gc, (double)trips * xv * pow(cv, (double)(trips - 1)), 1e-4);
  }
}

// State elements the body passes through unchanged, two of them starting from one value p,
// which the body also captures: x <- x * w + v + p from (x0, w = p, v = p), 2 trips:
// x2 = x0 p^2 + 2 p^2 + 2 p, so dx2/dp = 2 x0 p + 4 p + 2 and dx2/dx0 = p^2. Each use of p is
// counted once. The second derivative d2x2/dp2 = 2 x0 + 4 goes through both loops again.
TEST(while_gradient_of_shared_unchanged_state) {
  for (int k = 0; k < 2; ++k) {
    cml_backend_t* be = k == 0 ? g_c : g_xla;
    if (!be) continue;
    cml_builder_t* b = NULL;
    ASSERT_STATUS_OK(cml_builder_create(be, "shared", &b));
    cml_function_t* f = cml_builder_main(b);
    cml_shape_t s = F64(), is = API_SHAPE(CML_DTYPE_I32);
    cml_value_t x0 = cml_parameter(f, "x0", &s), p = cml_parameter(f, "p", &s);
    const cml_shape_t state[4] = {is, s, s, s};
    cml_function_t *cond = NULL, *body = NULL;
    ASSERT_STATUS_OK(cml_function_new_closure(f, &cond));
    cml_value_t c[4];
    for (int i = 0; i < 4; ++i) c[i] = cml_parameter(cond, NULL, &state[i]);
    cml_value_t lt = cml_op_less_than(cond, c[0], cml_constant_scalar_i64(cond, CML_DTYPE_I32, 2));
    ASSERT_STATUS_OK(cml_function_return(cond, &lt, 1));
    ASSERT_STATUS_OK(cml_function_new_closure(f, &body));
    cml_value_t v[4];
    for (int i = 0; i < 4; ++i) v[i] = cml_parameter(body, NULL, &state[i]);
    cml_value_t x = cml_op_add(body, cml_op_add(body, cml_op_mul(body, v[1], v[2]), v[3]), p);
    cml_value_t next[4] = {cml_op_add(body, v[0], cml_constant_scalar_i64(body, CML_DTYPE_I32, 1)),
                           x, v[2], v[3]};
    ASSERT_STATUS_OK(cml_function_return(body, next, 4));
    cml_value_t out[4];
    ASSERT_TRUE(cml_op_while(
        f, cond, body, (cml_value_t[]){cml_constant_scalar_i64(f, CML_DTYPE_I32, 0), x0, p, p}, 4,
        out));
    cml_value_t g[2], h;
    ASSERT_STATUS_OK(cml_gradients(f, out[1], (cml_value_t[]){x0, p}, 2, g));
    ASSERT_STATUS_OK(cml_gradients(f, g[1], &p, 1, &h));
    cml_executable_t* exe = NULL;
    ASSERT_STATUS_OK(api_finish(b, (cml_value_t[]){g[0], g[1], h}, 3, &exe));
    const double xv = 0.75, pv = 1.25;
    double got[3] = {0, 0, 0};
    ASSERT_STATUS_OK(
        api_run(be, exe, (const void*[]){&xv, &pv}, (void*[]){&got[0], &got[1], &got[2]}));
    cml_executable_release(exe);
    ASSERT_NEAR(got[0], pv * pv, 1e-12);
    ASSERT_NEAR(got[1], 2 * xv * pv + 4 * pv + 2, 1e-12);
    ASSERT_NEAR(got[2], 2 * xv + 4, 1e-12);
  }
}

// A loop over (i, s) whose body returns a value of an enclosing function as the new s: |c|
// itself (how = 0), or 2c computed in the body by an inner 3-trip While whose body returns it as
// its state (how = 1). 3 trips from s = x0.
static cml_value_t capture_loop(cml_function_t* f, cml_value_t x0, cml_value_t c, int how) {
  cml_shape_t is = API_SHAPE(CML_DTYPE_I32), xs;
  if (!cml_builder_value_shape(cml_function_builder(f), x0, &xs)) return CML_VALUE_INVALID;
  cml_function_t *cond = NULL, *body = NULL;
  cml_value_t out[2];
  if (cml_function_new_closure(f, &cond) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t ci = cml_parameter(cond, NULL, &is);
  cml_parameter(cond, NULL, &xs);
  cml_value_t lt = cml_op_less_than(cond, ci, cml_constant_scalar_i64(cond, CML_DTYPE_I32, 3));
  if (cml_function_return(cond, &lt, 1) != CML_OK) return CML_VALUE_INVALID;
  if (cml_function_new_closure(f, &body) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t bi = cml_parameter(body, NULL, &is);
  cml_parameter(body, NULL, &xs);
  cml_value_t next[2] = {cml_op_add(body, bi, cml_constant_scalar_i64(body, CML_DTYPE_I32, 1)), c};
  if (how == 1) {
    cml_value_t z = cml_op_add(body, c, c);  // a value of the outer body
    cml_function_t *cond2 = NULL, *body2 = NULL;
    if (cml_function_new_closure(body, &cond2) != CML_OK) return CML_VALUE_INVALID;
    cml_value_t cj = cml_parameter(cond2, NULL, &is);
    cml_parameter(cond2, NULL, &xs);
    cml_value_t lt2 = cml_op_less_than(cond2, cj, cml_constant_scalar_i64(cond2, CML_DTYPE_I32, 3));
    if (cml_function_return(cond2, &lt2, 1) != CML_OK) return CML_VALUE_INVALID;
    if (cml_function_new_closure(body, &body2) != CML_OK) return CML_VALUE_INVALID;
    cml_value_t bj = cml_parameter(body2, NULL, &is);
    cml_parameter(body2, NULL, &xs);
    cml_value_t next2[2] = {cml_op_add(body2, bj, cml_constant_scalar_i64(body2, CML_DTYPE_I32, 1)),
                            z};
    if (cml_function_return(body2, next2, 2) != CML_OK) return CML_VALUE_INVALID;
    cml_value_t init2[2] = {cml_constant_scalar_i64(body, CML_DTYPE_I32, 0), cml_op_neg(body, c)},
                out2[2];
    if (!cml_op_while(body, cond2, body2, init2, 2, out2)) return CML_VALUE_INVALID;
    next[1] = out2[1];
  }
  if (cml_function_return(body, next, 2) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t init[2] = {cml_constant_scalar_i64(f, CML_DTYPE_I32, 0), x0};
  if (!cml_op_while(f, cond, body, init, 2, out)) return CML_VALUE_INVALID;
  return out[1];
}

// d(sum y)/dx on c at x = 1.25 of shape [1 x ... x 1] (rank CML_MAX_RANK: the unrolled form of
// a loop gradient), y made from x by |loop|.
static void max_rank_gradient(int* test_failed_, cml_value_t (*loop)(cml_function_t*, cml_value_t),
                              double* out) {
  int64_t ones[CML_MAX_RANK];
  for (int i = 0; i < CML_MAX_RANK; ++i) ones[i] = 1;
  const cml_shape_t xs = cml_shape_make(CML_DTYPE_F64, CML_MAX_RANK, ones);
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(g_c, "rank16", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_value_t x = cml_parameter(f, "x", &xs);
  cml_value_t y = loop(f, x);
  ASSERT_NE_INT(y, CML_VALUE_INVALID);
  cml_value_t g;
  ASSERT_STATUS_OK(cml_gradients(f, cml_op_reduce_sum(f, y, NULL, 0), &x, 1, &g));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(b, &g, 1, &exe));
  const double xv = 1.25;
  ASSERT_STATUS_OK(api_run(g_c, exe, (const void*[]){&xv}, (void*[]){out}));
  cml_executable_release(exe);
}
static cml_value_t capture_itself(cml_function_t* f, cml_value_t x) {
  return capture_loop(f, x, x, 0);
}
static cml_value_t square_thrice(cml_function_t* f, cml_value_t x) {
  return product_loop(f, CML_DTYPE_I32, 0, 3, x, CML_VALUE_INVALID);
}

// A body that returns a captured value as the new state, directly or through an inner loop's
// state: the capture's cotangent was dropped (the inlined body's output was the outer value, the
// backward pass asked for the body's own capture of it: two values), a zero gradient under OK.
// loss = sum(w * s_3): d/dc = w (2w through the inner loop), d/dx0 = 0; in the loop form on c
// and xla:cpu, and unrolled for a rank-16 state (x returned as it is: d/dx = 1).
TEST(while_gradient_of_a_body_returning_a_capture) {
  for (int k = 0; k < 2; ++k) {
    cml_backend_t* be = k == 0 ? g_c : g_xla;
    if (!be) continue;
    for (int how = 0; how < 2; ++how) {
      cml_builder_t* b = NULL;
      ASSERT_STATUS_OK(cml_builder_create(be, "capture", &b));
      cml_function_t* f = cml_builder_main(b);
      const cml_shape_t s = F64(3);
      const double wv[3] = {1, 2, 3};
      cml_value_t x0 = cml_parameter(f, "x0", &s), c = cml_parameter(f, "c", &s);
      cml_value_t y = capture_loop(f, x0, c, how);
      ASSERT_NE_INT(y, CML_VALUE_INVALID);
      cml_value_t loss = cml_op_reduce_sum(f, cml_op_mul(f, y, cml_constant(f, &s, wv)), NULL, 0);
      cml_value_t g[2];
      ASSERT_STATUS_OK(cml_gradients(f, loss, (cml_value_t[]){x0, c}, 2, g));
      cml_executable_t* exe = NULL;
      ASSERT_STATUS_OK(api_finish(b, g, 2, &exe));
      const double xv[3] = {0.5, 0.6, 0.7}, cv[3] = {-1, 4, 2};
      double gx[3] = {9, 9, 9}, gc[3] = {0, 0, 0};
      ASSERT_STATUS_OK(api_run(be, exe, (const void*[]){xv, cv}, (void*[]){gx, gc}));
      cml_executable_release(exe);
      for (int i = 0; i < 3; ++i) {
        ASSERT_EQ_DBL(gx[i], 0);
        ASSERT_EQ_DBL(gc[i], (how + 1) * wv[i]);
      }
    }
  }
  double gv = 0;
  max_rank_gradient(test_failed_, capture_itself, &gv);
  ASSERT_EQ_DBL(gv, 1);
}

// A state element of rank CML_MAX_RANK has no room for the per-trip axis of the loop form: such
// a loop is unrolled (up to 4096 trips). x [1 x 16] <- x * x, 3 trips: d(x^8)/dx = 8 x^7.
TEST(while_gradient_of_a_max_rank_state) {
  double gv = 0;
  max_rank_gradient(test_failed_, square_thrice, &gv);
  ASSERT_NEAR(gv, 8 * pow(1.25, 7), 1e-12);
}

// Collectives in an SPMD program over 4 slots: the gradient is that of the sum of every slot's
// loss, each linear collective's VJP its transpose. Slot d has x_d [4] and weights w_d [25]
// (u [4], v [16], q [1], z [4]) and e_d [4]; its loss sums u * AllReduce(x * x),
// v * AllGather(x), q * ReduceScatter(x), z * AllToAll(x), e * CollectivePermute(x, 0->1->2->3)
// and e * CollectiveBroadcast(x) over the groups {0, 1}, {2, 3}, and z * AllToAll of x as
// [1, 4] split along axis 1 and gathered along axis 0. By hand, dx_d[k] =
// 2 x_d[k] sum_e u_e[k] + sum_e v_e[4d + k] + q_k + 2 z_k[d] + e_{d+1}[k] (d < 3) + (d = 0:
// e_0[k] + e_1[k]; d = 2: e_2[k] + e_3[k]). On c:devices=4, and on xla:cpu with 4 devices
// under --xla. AllReduce with max has no VJP (not linear): UNIMPLEMENTED naming it.
TEST(collective_gradients) {
  const char* config = g_xla ? "xla:cpu,cpu_device_count=4" : "c:devices=4";
  cml_backend_t* be = NULL;
  ASSERT_STATUS_OK(cml_backend_new_with_config(config, &be));
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(be, "collective", &b));
  ASSERT_STATUS_OK(cml_builder_spmd(b, 4));
  cml_function_t* f = cml_builder_main(b);
  const cml_shape_t xs = F64(4), ws = F64(25), es = F64(4);
  cml_value_t x = cml_parameter(f, "x", &xs), w = cml_parameter(f, "w", &ws);
  cml_value_t e = cml_parameter(f, "e", &es);
  const int32_t pair_ids[4] = {0, 1, 2, 3}, halves[4] = {0, 1, 2, 3};
  const cml_replica_groups_t all = {pair_ids, 1, 4}, two = {halves, 2, 2};
  const int32_t pairs[6] = {0, 1, 1, 2, 2, 3};
  cml_value_t sq = cml_op_mul(f, x, x), a;
  ASSERT_TRUE(cml_op_all_reduce(f, &sq, 1, CML_REDUCE_SUM, &all, &a));
  cml_value_t row = cml_op_reshape(f, x, (int64_t[]){1, 4}, 2);
  cml_value_t parts[7] = {
      a,
      cml_op_all_gather(f, x, 0, &all),
      cml_op_reduce_scatter(f, x, CML_REDUCE_SUM, 0, &all),
      cml_op_all_to_all(f, x, 0, 0, &all),
      cml_op_collective_permute(f, x, pairs, 3),
      cml_op_collective_broadcast(f, x, &two),
      cml_op_reshape(f, cml_op_all_to_all(f, row, 1, 0, &all), (int64_t[]){4}, 1),
  };
  const int64_t at[7] = {0, 4, 20, 21, 0, 0, 21}, len[7] = {4, 16, 1, 4, 4, 4, 4};
  cml_value_t loss = cml_constant_scalar_f64(f, CML_DTYPE_F64, 0.0);
  for (int i = 0; i < 7; ++i) {
    cml_value_t wt = i == 4 || i == 5 ? e
                                      : cml_op_slice(f, w, (int64_t[]){at[i]},
                                                     (int64_t[]){at[i] + len[i]}, NULL, 1);
    loss = cml_op_add(f, loss, cml_op_reduce_sum(f, cml_op_mul(f, parts[i], wt), NULL, 0));
  }
  cml_value_t g;
  ASSERT_STATUS_OK(cml_gradients(f, loss, &x, 1, &g));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(b, &g, 1, &exe));
  double xv[4][4], wv[4][25], ev[4][4], got[4][4];
  uint64_t seed = 11;
  for (int d = 0; d < 4; ++d) {
    for (int k = 0; k < 25; ++k) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      wv[d][k] = (double)(seed >> 11) / 9007199254740992.0 - 0.5;
      if (k < 4) {
        xv[d][k] = wv[d][k] * 3 + 0.1 * d;
        ev[d][k] = 0.25 * k - 0.5 * d;
      }
    }
  }
  cml_buffer_t* in[12];
  cml_buffer_t* out[4];
  for (int d = 0; d < 4; ++d) {
    ASSERT_STATUS_OK(cml_buffer_from_host(be, d, &xs, xv[d], sizeof xv[d], &in[3 * d]));
    ASSERT_STATUS_OK(cml_buffer_from_host(be, d, &ws, wv[d], sizeof wv[d], &in[3 * d + 1]));
    ASSERT_STATUS_OK(cml_buffer_from_host(be, d, &es, ev[d], sizeof ev[d], &in[3 * d + 2]));
  }
  ASSERT_STATUS_OK(cml_executable_execute(exe, in, 12, NULL, 0, out));
  for (int d = 0; d < 4; ++d) {
    ASSERT_STATUS_OK(cml_buffer_copy_to_host(out[d], got[d], sizeof got[d]));
    cml_buffer_release(out[d]);
  }
  for (int i = 0; i < 12; ++i) cml_buffer_release(in[i]);
  cml_executable_release(exe);
  for (int d = 0; d < 4; ++d) {
    for (int k = 0; k < 4; ++k) {
      double want = wv[k][20] + 2 * wv[k][21 + d];  // ReduceScatter, the two AllToAlls
      for (int o = 0; o < 4; ++o) want += 2 * xv[d][k] * wv[o][k] + wv[o][4 + 4 * d + k];
      if (d < 3) want += ev[d + 1][k];                        // CollectivePermute
      if (d == 0 || d == 2) want += ev[d][k] + ev[d + 1][k];  // CollectiveBroadcast
      ASSERT_NEAR(got[d][k], want, 1e-12);
    }
  }
  // Max is not linear.
  ASSERT_STATUS_OK(cml_builder_create(be, "max", &b));
  ASSERT_STATUS_OK(cml_builder_spmd(b, 4));
  f = cml_builder_main(b);
  x = cml_parameter(f, "x", &xs);
  ASSERT_TRUE(cml_op_all_reduce(f, &x, 1, CML_REDUCE_MAX, NULL, &a));
  char msg[512];
  ASSERT_EQ_INT(
      api_code_msg(cml_gradients(f, cml_op_reduce_sum(f, a, NULL, 0), &x, 1, &g), msg, sizeof msg),
      CML_STATUS_UNIMPLEMENTED);
  ASSERT_CONTAINS(msg, "AllReduce: no VJP (a Max reduction is not linear");
  cml_builder_destroy(b);
  cml_backend_release(be);
}

// The logsumexp state of native attention has a VJP (through the decomposition; finite
// differences: the sdpa_lse cases). A batch whose kv_seq_len is 0 has lse = -inf on every row;
// with those rows selected away, its gradient is 0, not NaN, and the other batch's is finite
// and not all zero.
TEST(sdpa_lse_empty_rows) {
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(g_c, "lse", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t qs = API_SHAPE(CML_DTYPE_F32, 2, 1, 2, 4), ls = API_SHAPE(CML_DTYPE_I32, 2);
  cml_value_t x = cml_parameter(f, "q", &qs);
  cml_value_t qlen = cml_parameter(f, "qlen", &ls), kvlen = cml_parameter(f, "kvlen", &ls);
  cml_sdpa_config_t c;
  cml_sdpa_config_init(&c);
  c.query_seq_len = qlen;
  c.kv_seq_len = kvlen;
  cml_value_t states[CML_SDPA_MAX_STATES];
  size_t state_count = 0;
  cml_value_t o =
      cml_op_fused_sdpa(f, x, x, x, CML_ATTENTION_LAYOUT_BHSD, &c, states, &state_count);
  ASSERT_NE_INT(o, CML_VALUE_INVALID);
  ASSERT_EQ_INT(state_count, 1);
  cml_value_t lse = states[0];
  lse =
      cml_op_where(f, cml_op_is_finite(f, lse), lse, cml_constant_scalar_f64(f, CML_DTYPE_F32, 0));
  cml_value_t l = cml_op_reduce_sum(f, lse, NULL, 0), g;
  ASSERT_STATUS_OK(cml_gradients(f, l, &x, 1, &g));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(b, &g, 1, &exe));
  float xv[16], gv[16];
  for (int i = 0; i < 16; ++i) xv[i] = (float)(i % 5) * 0.25f - 0.5f;
  const int32_t qlv[2] = {2, 2}, kvlv[2] = {2, 0};
  ASSERT_STATUS_OK(api_run(g_c, exe, (const void*[]){xv, qlv, kvlv}, (void*[]){gv}));
  cml_executable_release(exe);
  double sum0 = 0;
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(isfinite(gv[i]));
    sum0 += fabs(gv[i]);
  }
  ASSERT_TRUE(sum0 > 1e-3);
  for (int i = 8; i < 16; ++i) ASSERT_EQ_DBL(gv[i], 0);
}

// FusedDense with gelu is split by cml_gradients into FusedDense + FusedGelu (the gradient
// reads the pre-activation instead of recomputing the matmul). Checked for f32 and f64: graphs
// without gradients keep the one fused node; with gradients, the FusedGelu follows the dense
// node directly in main's node list; the loss is the same with and without gradients; the
// gradients match c:fusion=false (the op decomposed, no split) and c:reference=true.
enum { DG_M = 6, DG_K = 8, DG_N = 16, DG_O = 4, DG_OUTS = 5 };
static const int64_t kDgSizes[DG_OUTS] = {1, DG_M* DG_K, DG_K* DG_N, DG_N, DG_N* DG_O};

static void dg_counts(cml_function_t* f, int* dense_gelu, int* gelu, int* adjacent) {
  *dense_gelu = *gelu = *adjacent = 0;
  for (uint32_t i = 0; i < f->nodes.count; ++i) {
    const cml_ir_node_t* n = &f->impl->nodes[f->nodes.data[i]];
    if (n->op == CML_OP_FUSED_DENSE && n->attrs->fused.activation == CML_ACTIVATION_GELU)
      ++*dense_gelu;
    if (n->op == CML_OP_FUSED_GELU) {
      ++*gelu;
      const cml_ir_node_t* prev = i ? &f->impl->nodes[f->nodes.data[i - 1]] : NULL;
      if (prev && prev->op == CML_OP_FUSED_DENSE && prev->first_output == n->inputs[0] &&
          prev->attrs->fused.activation == CML_ACTIVATION_NONE) {
        ++*adjacent;
      }
    }
  }
}

// Runs loss (and with |grads| its gradients with respect to x, w, b, w2) on |config|; writes
// them as doubles to |out| (DG_OUTS blocks of kDgSizes) and the node counts before compile.
static cml_status_t dg_run(const char* config, cml_dtype_t dt, bool grads, double* out,
                           int counts[3]) {
  cml_backend_t* be = NULL;
  cml_status_t st = cml_backend_new_with_config(config, &be);
  if (st != CML_OK) return st;
  cml_builder_t* b = NULL;
  st = cml_builder_create(be, "dense_gelu_split", &b);
  if (st != CML_OK) {
    cml_backend_release(be);
    return st;
  }
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t shapes[4] = {API_SHAPE(dt, DG_M, DG_K), API_SHAPE(dt, DG_K, DG_N),
                           API_SHAPE(dt, DG_N), API_SHAPE(dt, DG_N, DG_O)};
  cml_value_t p[4];
  for (int i = 0; i < 4; ++i) p[i] = cml_parameter(f, NULL, &shapes[i]);
  cml_dense_config_t c;
  cml_dense_config_init(&c);
  c.activation = CML_ACTIVATION_GELU;
  cml_value_t h = cml_op_fused_dense(f, p[0], p[1], p[2], &c);
  cml_value_t y = cml_op_dot(f, h, p[3]);
  cml_value_t l = cml_op_add(f, cml_op_reduce_sum(f, cml_op_mul(f, y, y), NULL, 0),
                             cml_op_reduce_sum(f, h, NULL, 0));
  cml_value_t outs[DG_OUTS] = {l};
  size_t n_out = 1;
  if (grads) {
    st = cml_gradients(f, l, p, 4, outs + 1);
    n_out = DG_OUTS;
  }
  dg_counts(f, &counts[0], &counts[1], &counts[2]);
  cml_executable_t* exe = NULL;
  if (st == CML_OK) {
    st = api_finish(b, outs, n_out, &exe);
  } else {
    cml_builder_destroy(b);
  }
  static double in64[4][DG_N * DG_O + DG_K * DG_N];
  static float in32[4][DG_N * DG_O + DG_K * DG_N];
  static double o64[DG_OUTS][DG_K * DG_N];
  static float o32[DG_OUTS][DG_K * DG_N];
  const int64_t in_sizes[4] = {DG_M * DG_K, DG_K * DG_N, DG_N, DG_N * DG_O};
  for (int i = 0; i < 4; ++i) {
    for (int64_t k = 0; k < in_sizes[i]; ++k) {
      in64[i][k] = 0.9 * sin(0.37 * (double)(k + 1) * (double)(i + 2)) / (i == 3 ? 2 : 1);
      in32[i][k] = (float)in64[i][k];
    }
  }
  if (st == CML_OK) {
    const bool f64 = dt == CML_DTYPE_F64;
    const void* ins[4];
    void* dst[DG_OUTS];
    for (int i = 0; i < 4; ++i) ins[i] = f64 ? (const void*)in64[i] : (const void*)in32[i];
    for (int i = 0; i < DG_OUTS; ++i) dst[i] = f64 ? (void*)o64[i] : (void*)o32[i];
    st = api_run(be, exe, ins, dst);
    for (size_t i = 0, at = 0; st == CML_OK && i < n_out; at += (size_t)kDgSizes[i], ++i) {
      for (int64_t k = 0; k < kDgSizes[i]; ++k) out[at + (size_t)k] = f64 ? o64[i][k] : o32[i][k];
    }
  }
  cml_executable_release(exe);
  cml_backend_release(be);
  return st;
}

TEST(dense_gelu_split) {
  enum { kTotal = 1 + DG_M * DG_K + DG_K * DG_N + DG_N + DG_N * DG_O };
  static double plain[kTotal], split[kTotal], ref[2][kTotal];
  const cml_dtype_t dts[2] = {CML_DTYPE_F32, CML_DTYPE_F64};
  for (int d = 0; d < 2; ++d) {
    const double tol = dts[d] == CML_DTYPE_F64 ? 1e-12 : 2e-5;
    int counts[3];
    ASSERT_STATUS_OK(dg_run("c", dts[d], false, plain, counts));
    ASSERT_EQ_INT(counts[0], 1);  // kept fused
    ASSERT_EQ_INT(counts[1], 0);
    ASSERT_STATUS_OK(dg_run("c", dts[d], true, split, counts));
    ASSERT_EQ_INT(counts[0], 0);  // split
    ASSERT_EQ_INT(counts[1], 1);
    ASSERT_EQ_INT(counts[2], 1);
    ASSERT_TRUE(fabs(split[0] - plain[0]) <= tol * (1 + fabs(plain[0])));
    ASSERT_STATUS_OK(dg_run("c:fusion=false", dts[d], true, ref[0], counts));
    ASSERT_EQ_INT(counts[0] + counts[1], 0);  // decomposed
    ASSERT_STATUS_OK(dg_run("c:reference=true", dts[d], true, ref[1], counts));
    double scale = 0;
    for (int i = 0; i < kTotal; ++i) scale = fmax(scale, fabs(ref[0][i]));
    ASSERT_TRUE(scale > 0.1);
    for (int r = 0; r < 2; ++r) {
      for (int i = 0; i < kTotal; ++i) {
        if (!(fabs(split[i] - ref[r][i]) <= tol * (1 + scale))) {
          fprintf(stderr, "dense_gelu_split %s vs %s [%d]: %.9g vs %.9g\n", cml_dtype_name(dts[d]),
                  r ? "reference" : "fusion=false", i, split[i], ref[r][i]);
        }
        ASSERT_TRUE(fabs(split[i] - ref[r][i]) <= tol * (1 + scale));
      }
    }
  }
}

// The real FFTs' VJPs by hand: RFFT of length 4 has y_0 = sum x, y_1 = x0 - x2 - i(x1 - x3),
// y_2 = x0 - x1 + x2 - x3. For loss = Re(y_0) + 2 Im(y_1) + 3 Re(y_2):
// d/dx = [1 + 3, 1 - 2 - 3, 1 + 3, 1 + 2 - 3] = [4, -4, 4, 0]. IRFFT of length 4 of
// z = a + ib: y_n = (a0 + 2 Re(z1 e^{i pi n / 2}) + a2 (-1)^n) / 4 (the imaginary parts of z0
// and z2 are ignored), so y_0 + y_1 = (2 a0 + 2 a1 - 2 b1) / 4.
TEST(real_fft_hand_computed) {
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(g_c, "rfft_hand", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t xs = API_SHAPE(CML_DTYPE_F64, 4), zs = API_SHAPE(CML_DTYPE_F64, 3);
  cml_value_t x = cml_parameter(f, "x", &xs);
  cml_value_t a = cml_parameter(f, "a", &zs), bi = cml_parameter(f, "b", &zs);
  cml_value_t y = cml_op_fft(f, x, CML_FFT_FORWARD_REAL, (int64_t[]){4}, 1);
  cml_shape_t ws = API_SHAPE(CML_DTYPE_F64, 3);
  static const double wr[3] = {1, 0, 3}, wi[3] = {0, 2, 0};
  cml_value_t l1 = cml_op_add(
      f, cml_op_reduce_sum(f, cml_op_mul(f, cml_op_real(f, y), cml_constant(f, &ws, wr)), NULL, 0),
      cml_op_reduce_sum(f, cml_op_mul(f, cml_op_imag(f, y), cml_constant(f, &ws, wi)), NULL, 0));
  cml_value_t r = cml_op_fft(f, cml_op_complex(f, a, bi), CML_FFT_INVERSE_REAL, (int64_t[]){4}, 1);
  cml_value_t l2 = cml_op_reduce_sum(f, cml_op_slice(f, r, (int64_t[]){0}, (int64_t[]){2}, NULL, 1),
                                     NULL, 0);  // y_0 + y_1
  cml_value_t g[3];
  ASSERT_STATUS_OK(cml_gradients(f, cml_op_add(f, l1, l2), (cml_value_t[]){x, a, bi}, 3, g));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(b, g, 3, &exe));
  double xv[4] = {0.5, -1, 2, 3}, av[3] = {1, 2, -1}, bv[3] = {0.25, -0.5, 4};
  double gx[4], ga[3], gb[3];
  ASSERT_STATUS_OK(api_run(g_c, exe, (const void*[]){xv, av, bv}, (void*[]){gx, ga, gb}));
  cml_executable_release(exe);
  ASSERT_NEAR(gx[0], 4, 1e-12);
  ASSERT_NEAR(gx[1], -4, 1e-12);
  ASSERT_NEAR(gx[2], 4, 1e-12);
  ASSERT_NEAR(gx[3], 0, 1e-12);
  ASSERT_NEAR(ga[0], 0.5, 1e-12);
  ASSERT_NEAR(ga[1], 0.5, 1e-12);
  ASSERT_NEAR(ga[2], 0, 1e-12);
  ASSERT_NEAR(gb[0], 0, 1e-12);
  // JAX's convention: the cotangent of a + ib is dL/da - i dL/db; through Complex(a, b) the
  // gradient of b is dL/db = -0.5.
  ASSERT_NEAR(gb[1], -0.5, 1e-12);
  ASSERT_NEAR(gb[2], 0, 1e-12);
}

// ScatterMax ties: operand [3] = {1, 5, 2}, updates {5, 5, 7, 0} to positions {1, 1, 2, 0}.
// Output {1, 5, 7}; position 1 has three winners (the operand and two updates), each gets a
// third of g; position 2 goes to update 2; position 0 to the operand; update 3 loses.
TEST(scatter_max_ties) {
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(g_c, "scatter_ties", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t xs = API_SHAPE(CML_DTYPE_F64, 3), us = API_SHAPE(CML_DTYPE_F64, 4);
  cml_shape_t is = API_SHAPE(CML_DTYPE_I32, 4, 1);
  cml_value_t x = cml_parameter(f, "x", &xs), u = cml_parameter(f, "u", &us);
  static const int32_t idx[4] = {1, 1, 2, 0};
  cml_scatter_dims_t sd;
  memset(&sd, 0, sizeof sd);
  sd.index_vector_axis = 1;
  sd.inserted_window_axis_count = 1;
  sd.scatter_axes_to_operand_axes_count = 1;
  cml_value_t y = cml_op_scatter_max(f, x, cml_constant(f, &is, idx), u, &sd);
  static const double wv[3] = {10, 30, 100};
  cml_value_t l = cml_op_reduce_sum(f, cml_op_mul(f, y, cml_constant(f, &xs, wv)), NULL, 0);
  cml_value_t g[2];
  ASSERT_STATUS_OK(cml_gradients(f, l, (cml_value_t[]){x, u}, 2, g));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(b, (cml_value_t[]){y, g[0], g[1]}, 3, &exe));
  double xv[3] = {1, 5, 2}, uv[4] = {5, 5, 7, 0}, yv[3], gx[3], gu[4];
  ASSERT_STATUS_OK(api_run(g_c, exe, (const void*[]){xv, uv}, (void*[]){yv, gx, gu}));
  cml_executable_release(exe);
  ASSERT_EQ_DBL(yv[1], 5);
  ASSERT_EQ_DBL(yv[2], 7);
  ASSERT_NEAR(gx[0], 10, 1e-12);
  ASSERT_NEAR(gx[1], 10, 1e-12);
  ASSERT_NEAR(gx[2], 0, 1e-12);
  ASSERT_NEAR(gu[0], 10, 1e-12);
  ASSERT_NEAR(gu[1], 10, 1e-12);
  ASSERT_NEAR(gu[2], 100, 1e-12);
  ASSERT_NEAR(gu[3], 0, 1e-12);
}

// FusedQuantizedDense: gradients with respect to x and the bias (the weights are integer
// codes) on c's native node, against x's gradient computed on the host from the dequantized
// weights (no activation) and against c:fusion=false's decomposition (silu; and the Linear
// scheme's scale).
TEST(quantized_dense_gradient) {
  enum { M = 3, K = 256, N = 5 };
  static float wf[N * K], xw[M * K], gw[M * N];
  for (int i = 0; i < N * K; ++i) wf[i] = (float)ad_random(-1, 1);
  for (int i = 0; i < M * K; ++i) xw[i] = (float)ad_random(-1, 1);
  for (int i = 0; i < M * N; ++i) gw[i] = (float)ad_random(-1, 1);
  const int64_t row_bytes = cml_ggml_row_bytes(CML_GGML_Q4_K, K);
  ASSERT_TRUE(row_bytes > 0);
  static uint8_t q[N * 512];
  ASSERT_STATUS_OK(cml_quantize_ggml(CML_GGML_Q4_K, wf, N, K, q, sizeof q));
  static float deq[N * K];
  ASSERT_STATUS_OK(cml_dequantize_ggml(CML_GGML_Q4_K, q, N, K, deq));
  const char* const configs[2] = {"c", "c:fusion=false"};
  static float got[2][2][M * K + N];  // [config][activation][dx, dbias]
  for (int cfg = 0; cfg < 2; ++cfg) {
    cml_backend_t* be = NULL;
    ASSERT_STATUS_OK(cml_backend_new_with_config(configs[cfg], &be));
    for (int act = 0; act < 2; ++act) {
      cml_builder_t* b = NULL;
      ASSERT_STATUS_OK(cml_builder_create(be, "qdense", &b));
      cml_function_t* f = cml_builder_main(b);
      cml_shape_t xs = API_SHAPE(CML_DTYPE_F32, M, K), bs = API_SHAPE(CML_DTYPE_F32, N);
      cml_shape_t ws = API_SHAPE(CML_DTYPE_U8, N, row_bytes), ys = API_SHAPE(CML_DTYPE_F32, M, N);
      cml_value_t x = cml_parameter(f, "x", &xs), bias = cml_parameter(f, "bias", &bs);
      cml_quantization_t qz;
      cml_quantization_init(&qz);
      qz.scheme = CML_QUANT_GGML;
      qz.ggml_type = CML_GGML_Q4_K;
      cml_value_t y = cml_op_fused_quantized_dense(f, x, cml_constant(f, &ws, q), bias, &qz,
                                                   act ? CML_ACTIVATION_SILU : CML_ACTIVATION_NONE);
      cml_value_t l = cml_op_reduce_sum(f, cml_op_mul(f, y, cml_constant(f, &ys, gw)), NULL, 0);
      int native = 0;
      for (uint32_t i = 0; i < f->nodes.count; ++i)
        native += f->impl->nodes[f->nodes.data[i]].op == CML_OP_FUSED_QUANTIZED_DENSE;
      ASSERT_EQ_INT(native, cfg == 0 ? 1 : 0);
      cml_value_t g[2];
      ASSERT_STATUS_OK(cml_gradients(f, l, (cml_value_t[]){x, bias}, 2, g));
      cml_executable_t* exe = NULL;
      ASSERT_STATUS_OK(api_finish(b, g, 2, &exe));
      static float bias_data[N] = {0.1f, -0.2f, 0.3f, 0.0f, 0.5f};
      ASSERT_STATUS_OK(api_run(be, exe, (const void* const[]){xw, bias_data},
                               (void* const[]){got[cfg][act], got[cfg][act] + M * K}));
      cml_executable_release(exe);
    }
    cml_backend_release(be);
  }
  // No activation: dx = G @ deq (deq is [N, K]), dbias = column sums of G.
  for (int m = 0; m < M; ++m) {
    for (int k = 0; k < K; ++k) {
      double want = 0;
      for (int n = 0; n < N; ++n) want += (double)gw[m * N + n] * deq[n * K + k];
      ASSERT_TRUE(fabs(got[0][0][m * K + k] - want) <= 1e-5 * (1 + fabs(want)));
    }
  }
  for (int n = 0; n < N; ++n) {
    double want = 0;
    for (int m = 0; m < M; ++m) want += gw[m * N + n];
    ASSERT_TRUE(fabs(got[0][0][M * K + n] - want) <= 1e-5 * (1 + fabs(want)));
  }
  // silu: native node against the decomposition.
  for (int i = 0; i < M * K + N; ++i)
    ASSERT_TRUE(fabs(got[0][1][i] - got[1][1][i]) <= 1e-5 * (1 + fabs(got[1][1][i])));
  // The silu gradient differs from the plain one (the activation is differentiated).
  ASSERT_TRUE(fabs(got[0][1][0] - got[0][0][0]) > 1e-6);
}

//===--- optimizers ---===//

// Runs a one-parameter step graph: inputs p, g (and state), outputs as built.
// The learning rate as a parameter: one executable, three rates (0 included), against the
// update rules by hand; Adam's with a rate of 1e-3 equals the constant-rate step's bit for bit.
TEST(learning_rate_as_a_value) {
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(g_c, "lr", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = API_SHAPE(CML_DTYPE_F32, 2), sc = API_SHAPE(CML_DTYPE_F32);
  cml_value_t p = cml_parameter(f, "p", &s), g = cml_parameter(f, "g", &s);
  cml_value_t lr = cml_parameter(f, "lr", &sc);
  cml_value_t m = cml_parameter(f, "m", &s);  // zeros: the moments of a first step
  cml_value_t step = cml_constant_scalar_i64(f, CML_DTYPE_I32, 1);
  cml_sgd_config_t c;
  cml_sgd_config_init(&c);
  c.learning_rate = -5;  // ignored
  cml_adam_config_t ac;
  cml_adam_config_init(&ac);
  cml_value_t p_sgd, p_adam, m2, v2, p_const, m3, v3;
  ASSERT_STATUS_OK(cml_optim_sgd_step_with_learning_rate(f, &c, lr, &p, &g, NULL, 1, &p_sgd, NULL));
  ASSERT_STATUS_OK(cml_optim_adam_step_with_learning_rate(f, &ac, lr, &p, &g, &m, &m, 1, step,
                                                          &p_adam, &m2, &v2));
  ASSERT_STATUS_OK(cml_optim_adam_step(f, &ac, &p, &g, &m, &m, 1, step, &p_const, &m3, &v3));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(b, (cml_value_t[]){p_sgd, p_adam, p_const}, 3, &exe));
  const float rates[3] = {0.5f, 0.0f, 1e-3f};
  for (int k = 0; k < 3; ++k) {
    float pv[2] = {1.0f, -2.0f}, gv[2] = {0.5f, -0.25f}, mv[2] = {0, 0}, ps[2], pa[2], pc[2];
    ASSERT_STATUS_OK(
        api_run(g_c, exe, (const void*[]){pv, gv, &rates[k], mv}, (void*[]){ps, pa, pc}));
    for (int i = 0; i < 2; ++i) {
      ASSERT_EQ_DBL(ps[i], pv[i] - rates[k] * gv[i]);
      // Adam's first step moves each weight by about lr against its gradient's sign (within the
      // Float32 rounding of 1 - beta2 = 0.001, 5e-5 relative).
      ASSERT_NEAR(pa[i], pv[i] - rates[k] * (gv[i] > 0 ? 1 : -1), 1e-4 * rates[k] + 1e-7);
      if (k == 2) ASSERT_EQ_DBL(pa[i], pc[i]);
    }
  }
  cml_executable_release(exe);
  // A learning rate that is not a scalar is refused, naming it.
  cml_value_t bad_out;
  char msg[512];
  ASSERT_STATUS_OK(cml_builder_create(g_c, "lr_bad", &b));
  f = cml_builder_main(b);
  p = cml_parameter(f, "p", &s);
  g = cml_parameter(f, "g", &s);
  ASSERT_EQ_INT(
      api_code_msg(cml_optim_sgd_step_with_learning_rate(f, &c, g, &p, &g, NULL, 1, &bad_out, NULL),
                   msg, sizeof msg),
      CML_STATUS_INVALID_ARGUMENT);
  ASSERT_TRUE(strstr(msg, "SGD: learning_rate (Float32)[2] must be a scalar") != NULL);
  cml_builder_destroy(b);
}

TEST(sgd_momentum_nesterov) {
  for (int nesterov = 0; nesterov < 2; ++nesterov) {
    cml_builder_t* b = NULL;
    ASSERT_STATUS_OK(cml_builder_create(g_c, "sgd", &b));
    cml_function_t* f = cml_builder_main(b);
    cml_shape_t s = API_SHAPE(CML_DTYPE_F64, 2);
    cml_value_t p = cml_parameter(f, "p", &s), g = cml_parameter(f, "g", &s);
    cml_value_t v = cml_parameter(f, "v", &s);
    cml_sgd_config_t c;
    cml_sgd_config_init(&c);
    c.learning_rate = 0.1;
    c.momentum = 0.9;
    c.nesterov = nesterov != 0;
    c.weight_decay = 0.01;
    cml_value_t p2, v2;
    ASSERT_STATUS_OK(cml_optim_sgd_step(f, &c, &p, &g, &v, 1, &p2, &v2));
    cml_executable_t* exe = NULL;
    ASSERT_STATUS_OK(api_finish(b, (cml_value_t[]){p2, v2}, 2, &exe));
    double pv[2] = {1.0, -2.0}, gv[2] = {0.5, 0.25}, vv[2] = {0.1, -0.2}, po[2], vo[2];
    ASSERT_STATUS_OK(api_run(g_c, exe, (const void*[]){pv, gv, vv}, (void*[]){po, vo}));
    cml_executable_release(exe);
    for (int i = 0; i < 2; ++i) {
      double gd = gv[i] + 0.01 * pv[i];
      double vn = 0.9 * vv[i] + gd;
      double pn = pv[i] - 0.1 * (nesterov ? gd + 0.9 * vn : vn);
      ASSERT_NEAR(vo[i], vn, 1e-15);
      ASSERT_NEAR(po[i], pn, 1e-15);
    }
  }
}

TEST(adam_adamw) {
  for (int decoupled = 0; decoupled < 2; ++decoupled) {
    cml_builder_t* b = NULL;
    ASSERT_STATUS_OK(cml_builder_create(g_c, "adam", &b));
    cml_function_t* f = cml_builder_main(b);
    cml_shape_t s = API_SHAPE(CML_DTYPE_F64, 2), ts = API_SHAPE(CML_DTYPE_I32);
    cml_value_t p = cml_parameter(f, "p", &s), g = cml_parameter(f, "g", &s);
    cml_value_t m = cml_parameter(f, "m", &s), v = cml_parameter(f, "v", &s);
    cml_value_t t = cml_parameter(f, "t", &ts);
    cml_adam_config_t c;
    if (decoupled) {
      cml_adamw_config_init(&c);
    } else {
      cml_adam_config_init(&c);
      c.weight_decay = 0.02;
    }
    c.learning_rate = 0.01;
    cml_value_t p2, m2, v2;
    ASSERT_STATUS_OK(cml_optim_adam_step(f, &c, &p, &g, &m, &v, 1, t, &p2, &m2, &v2));
    cml_executable_t* exe = NULL;
    ASSERT_STATUS_OK(api_finish(b, (cml_value_t[]){p2, m2, v2}, 3, &exe));
    double pv[2] = {1.0, -2.0}, gv[2] = {0.5, -0.25}, mv[2] = {0.1, 0.05}, vv[2] = {0.01, 0.2};
    int32_t tv = 3;
    double po[2], mo[2], vo[2];
    ASSERT_STATUS_OK(
        api_run(g_c, exe, (const void*[]){pv, gv, mv, vv, &tv}, (void*[]){po, mo, vo}));
    cml_executable_release(exe);
    for (int i = 0; i < 2; ++i) {
      double gd = decoupled ? gv[i] : gv[i] + 0.02 * pv[i];
      double mn = 0.9 * mv[i] + 0.1 * gd, vn = 0.999 * vv[i] + 0.001 * gd * gd;
      double mh = mn / (1 - pow(0.9, 3)), vh = vn / (1 - pow(0.999, 3));
      double u = mh / (sqrt(vh) + 1e-8);
      if (decoupled) u += 0.01 * pv[i];
      ASSERT_NEAR(mo[i], mn, 1e-15);
      ASSERT_NEAR(vo[i], vn, 1e-15);
      ASSERT_NEAR(po[i], pv[i] - 0.01 * u, 1e-14);
    }
  }
}

// BFloat16 and Float16 parameters compute in Float32 and round once: in their own dtype, beta2
// = 0.999 is 1 in BFloat16 (no bias correction: the step was inf/NaN) and epsilon 1e-8 is 0 in
// Float16 (a zero gradient gave 0/0). Moments either in the parameter's dtype or in Float32.
TEST(adam_half_precision_parameters) {
  static const cml_dtype_t kTypes[2] = {CML_DTYPE_BF16, CML_DTYPE_F16};
  for (int k = 0; k < 2; ++k) {
    for (int f32_moments = 0; f32_moments < 2; ++f32_moments) {
      const cml_dtype_t dt = kTypes[k], mt = f32_moments ? CML_DTYPE_F32 : dt;
      cml_builder_t* b = NULL;
      ASSERT_STATUS_OK(cml_builder_create(g_c, "adam_half", &b));
      cml_function_t* f = cml_builder_main(b);
      cml_shape_t s = API_SHAPE(dt, 3), ms = API_SHAPE(mt, 3), ts = API_SHAPE(CML_DTYPE_I32);
      cml_value_t p = cml_parameter(f, "p", &s), g = cml_parameter(f, "g", &s);
      cml_value_t m = cml_parameter(f, "m", &ms), v = cml_parameter(f, "v", &ms);
      cml_value_t t = cml_parameter(f, "t", &ts);
      cml_adam_config_t c;
      cml_adam_config_init(&c);
      c.learning_rate = 0.0625;
      cml_value_t p2, m2, v2;
      ASSERT_STATUS_OK(cml_optim_adam_step(f, &c, &p, &g, &m, &v, 1, t, &p2, &m2, &v2));
      cml_executable_t* exe = NULL;
      ASSERT_STATUS_OK(api_finish(b, (cml_value_t[]){p2, m2, v2}, 3, &exe));
      // g = 0 (a dead unit), 1, and 300 (g^2 past Float16's range).
      const float pf[3] = {0.5f, 0.5f, -2.0f}, gf[3] = {0.0f, 1.0f, 300.0f};
      uint16_t ph[3], gh[3], mh[3], vh[3], mzero[6] = {0}, po[3];
      float mo32[3], vo32[3];
      for (int i = 0; i < 3; ++i) {
        ph[i] = dt == CML_DTYPE_BF16 ? cml_f32_to_bf16(pf[i]) : cml_f32_to_f16(pf[i]);
        gh[i] = dt == CML_DTYPE_BF16 ? cml_f32_to_bf16(gf[i]) : cml_f32_to_f16(gf[i]);
      }
      int32_t tv = 1;
      ASSERT_STATUS_OK(api_run(g_c, exe, (const void*[]){ph, gh, mzero, mzero, &tv},
                               (void*[]){po, f32_moments ? (void*)mo32 : (void*)mh,
                                         f32_moments ? (void*)vo32 : (void*)vh}));
      cml_executable_release(exe);
      for (int i = 0; i < 3; ++i) {
        const float pback = dt == CML_DTYPE_BF16 ? cml_bf16_to_f32(ph[i]) : cml_f16_to_f32(ph[i]);
        const double gd = dt == CML_DTYPE_BF16 ? cml_bf16_to_f32(gh[i]) : cml_f16_to_f32(gh[i]);
        // Step 1 from zero moments: m = 0.1 g, v = 0.001 g^2, u = g / (|g| + 1e-8).
        const double u = gd / (fabs(gd) + 1e-8), want = pback - 0.0625 * u;
        const float got = dt == CML_DTYPE_BF16 ? cml_bf16_to_f32(po[i]) : cml_f16_to_f32(po[i]);
        const uint16_t want_bits =
            dt == CML_DTYPE_BF16 ? cml_f32_to_bf16((float)want) : cml_f32_to_f16((float)want);
        ASSERT_TRUE(isfinite(got));
        ASSERT_EQ_INT(po[i], want_bits);
        const double mv = 0.1 * gd, vv = 0.001 * gd * gd;
        if (f32_moments) {
          ASSERT_NEAR(mo32[i], mv, 1e-6 * (1 + fabs(mv)));
          ASSERT_NEAR(vo32[i], vv, 1e-6 * (1 + vv));
        } else {
          const float mg = dt == CML_DTYPE_BF16 ? cml_bf16_to_f32(mh[i]) : cml_f16_to_f32(mh[i]);
          const float vg = dt == CML_DTYPE_BF16 ? cml_bf16_to_f32(vh[i]) : cml_f16_to_f32(vh[i]);
          ASSERT_NEAR(mg, mv, 0.01 * fabs(mv));
          ASSERT_NEAR(vg, vv, 0.01 * vv);
        }
      }
    }
  }
}

// Hyper-parameters that do not survive as Float32 constants for a half-precision parameter.
TEST(optimizer_constants_that_round_away) {
  char msg[1024];
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(g_c, "adam_round", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = API_SHAPE(CML_DTYPE_BF16, 2);
  cml_value_t p = cml_parameter(f, "p", &s), g = cml_parameter(f, "g", &s);
  cml_value_t t = cml_constant_scalar_i64(f, CML_DTYPE_I32, 1), o[3];
  cml_adam_config_t ac;
  cml_adam_config_init(&ac);
  ac.beta2 = 0.99999999;
  ASSERT_EQ_INT(api_code_msg(cml_optim_adam_step(f, &ac, &p, &g, &p, &p, 1, t, &o[0], &o[1], &o[2]),
                             msg, sizeof msg),
                CML_STATUS_INVALID_ARGUMENT);
  ASSERT_TRUE(strstr(msg, "beta2") != NULL);
  ASSERT_TRUE(strstr(msg, "Float32") != NULL);
  cml_builder_destroy(b);
  ASSERT_STATUS_OK(cml_builder_create(g_c, "sgd_round", &b));
  f = cml_builder_main(b);
  p = cml_parameter(f, "p", &s);
  g = cml_parameter(f, "g", &s);
  cml_sgd_config_t sc;
  cml_sgd_config_init(&sc);
  sc.learning_rate = 1e300;
  ASSERT_EQ_INT(
      api_code_msg(cml_optim_sgd_step(f, &sc, &p, &g, NULL, 1, &o[0], NULL), msg, sizeof msg),
      CML_STATUS_INVALID_ARGUMENT);
  ASSERT_TRUE(strstr(msg, "learning_rate") != NULL);
  cml_builder_destroy(b);
}

// JAX's rules at two edges, by hand: Clamp with min > max sends nothing to min (the output is
// max), and Pow's base gradient at x = 0, y = 0 is 0 (x^0 is 1), not 0 * inf.
TEST(clamp_crossed_bounds_and_pow_zero_exponent) {
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(g_c, "edges", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = API_SHAPE(CML_DTYPE_F64, 3);
  cml_value_t lo = cml_parameter(f, "lo", &s), x = cml_parameter(f, "x", &s);
  cml_value_t hi = cml_parameter(f, "hi", &s), y = cml_parameter(f, "y", &s);
  cml_value_t loss = cml_op_add(f, cml_op_reduce_sum(f, cml_op_clamp(f, lo, x, hi), NULL, 0),
                                cml_op_reduce_sum(f, cml_op_pow(f, x, y), NULL, 0));
  cml_value_t grads[4];
  ASSERT_STATUS_OK(cml_gradients(f, loss, (cml_value_t[]){lo, x, hi, y}, 4, grads));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(b, grads, 4, &exe));
  // Element 0: min 0 > max -1 (output max): d min 0, d max 1. Element 1: min 2 > max 1 with x
  // = 1 (output max = x): nothing anywhere. Element 2: x = 0.5 inside (0, 1): d x 1.
  const double lov[3] = {0, 2, 0}, xv[3] = {0, 1, 0.5}, hiv[3] = {-1, 1, 1}, yv[3] = {0, 0, 2};
  double dlo[3], dx[3], dhi[3], dy[3];
  ASSERT_STATUS_OK(
      api_run(g_c, exe, (const void*[]){lov, xv, hiv, yv}, (void*[]){dlo, dx, dhi, dy}));
  cml_executable_release(exe);
  const double want_lo[3] = {0, 0, 0}, want_hi[3] = {1, 0, 0};
  // d x: clamp part (0, 0, 1) plus pow part y x^(y-1): (0 at y = 0, 0 at y = 0, 2 * 0.5).
  const double want_x[3] = {0, 0, 2};
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ_DBL(dlo[i], want_lo[i]);
    ASSERT_EQ_DBL(dhi[i], want_hi[i]);
    ASSERT_EQ_DBL(dx[i], want_x[i]);
  }
  // d y = x^y log(x), 0 where x == 0: (0, 1 * log 1, 0.25 log 0.5).
  ASSERT_EQ_DBL(dy[0], 0);
  ASSERT_EQ_DBL(dy[1], 0);
  ASSERT_NEAR(dy[2], 0.25 * log(0.5), 1e-15);
}

TEST(clip_by_global_norm) {
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(g_c, "clip", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s1 = API_SHAPE(CML_DTYPE_F64, 2), s2 = API_SHAPE(CML_DTYPE_F64);
  cml_value_t g[2] = {cml_parameter(f, "a", &s1), cml_parameter(f, "b", &s2)};
  cml_value_t c[2], c2[2], norm;
  ASSERT_STATUS_OK(cml_optim_clip_by_global_norm(f, g, 2, 6.5, c, &norm));
  ASSERT_STATUS_OK(cml_optim_clip_by_global_norm(f, g, 2, 100, c2, NULL));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(b, (cml_value_t[]){c[0], c[1], norm, c2[0]}, 4, &exe));
  double a[2] = {3, 4}, bv = 12, ca[2], cb, nv, ua[2];  // norm 13
  ASSERT_STATUS_OK(api_run(g_c, exe, (const void*[]){a, &bv}, (void*[]){ca, &cb, &nv, ua}));
  cml_executable_release(exe);
  ASSERT_NEAR(nv, 13, 1e-12);
  ASSERT_NEAR(ca[0], 1.5, 1e-12);
  ASSERT_NEAR(ca[1], 2.0, 1e-12);
  ASSERT_NEAR(cb, 6.0, 1e-12);
  ASSERT_NEAR(ua[0], 3.0, 1e-12);  // below the limit: unchanged
  ASSERT_NEAR(ua[1], 4.0, 1e-12);
}

// Gradients of mixed dtypes: the norm is computed in the widest one. A Float32 gradient first
// and Float64 gradients of 3e40 and 4e40 (norm 5e40, past Float32): scaled to 0.6 and 0.8 (the
// norm in the first gradient's Float32 was inf and zeroed them).
TEST(clip_by_global_norm_mixed_dtypes) {
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(g_c, "clip", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s1 = API_SHAPE(CML_DTYPE_F32), s2 = API_SHAPE(CML_DTYPE_F64, 2);
  cml_value_t g[2] = {cml_parameter(f, "a", &s1), cml_parameter(f, "b", &s2)};
  cml_value_t c[2];
  ASSERT_STATUS_OK(cml_optim_clip_by_global_norm(f, g, 2, 1.0, c, NULL));
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(api_finish(b, c, 2, &exe));
  float a = 1e-3f, ca = -1;
  double bv[2] = {3e40, 4e40}, cb[2] = {0, 0};
  ASSERT_STATUS_OK(api_run(g_c, exe, (const void*[]){&a, bv}, (void*[]){&ca, cb}));
  cml_executable_release(exe);
  ASSERT_NEAR(cb[0], 0.6, 1e-12);
  ASSERT_NEAR(cb[1], 0.8, 1e-12);
  ASSERT_NEAR(ca, 2e-44, 1e-44);  // 1e-3 / 5e40: a Float32 subnormal
}

TEST(optimizer_errors) {
  char msg[1024];
  cml_builder_t* b = NULL;
  ASSERT_STATUS_OK(cml_builder_create(g_c, "bad", &b));
  cml_function_t* f = cml_builder_main(b);
  cml_shape_t s = API_SHAPE(CML_DTYPE_F32, 2), s3 = API_SHAPE(CML_DTYPE_F32, 3);
  cml_value_t p = cml_parameter(f, "p", &s), g = cml_parameter(f, "g", &s3);
  cml_sgd_config_t c;
  cml_sgd_config_init(&c);
  cml_value_t p2 = 7;
  ASSERT_EQ_INT(
      api_code_msg(cml_optim_sgd_step(f, &c, &p, &g, NULL, 1, &p2, NULL), msg, sizeof msg),
      CML_STATUS_INVALID_ARGUMENT);
  ASSERT_TRUE(strstr(msg, "SGD") != NULL);
  ASSERT_TRUE(strstr(msg, "gradient #0") != NULL);
  ASSERT_EQ_INT(p2, CML_VALUE_INVALID);
  cml_builder_destroy(b);

  ASSERT_STATUS_OK(cml_builder_create(g_c, "bad", &b));
  f = cml_builder_main(b);
  p = cml_parameter(f, "p", &s);
  g = cml_parameter(f, "g", &s);
  cml_value_t m = cml_parameter(f, "m", &s3), v = cml_parameter(f, "v", &s);
  cml_value_t t = cml_constant_scalar_i64(f, CML_DTYPE_I32, 1);
  cml_adam_config_t ac;
  cml_adamw_config_init(&ac);
  cml_value_t o[3];
  ASSERT_EQ_INT(api_code_msg(cml_optim_adam_step(f, &ac, &p, &g, &m, &v, 1, t, &o[0], &o[1], &o[2]),
                             msg, sizeof msg),
                CML_STATUS_INVALID_ARGUMENT);
  ASSERT_TRUE(strstr(msg, "AdamW") != NULL);
  ASSERT_TRUE(strstr(msg, "m #0") != NULL);
  cml_builder_destroy(b);

  ASSERT_STATUS_OK(cml_builder_create(g_c, "bad", &b));
  f = cml_builder_main(b);
  p = cml_parameter(f, "p", &s);
  g = cml_parameter(f, "g", &s);
  c.learning_rate = -1;
  ASSERT_EQ_INT(api_code(cml_optim_sgd_step(f, &c, &p, &g, NULL, 1, &p2, NULL)),
                CML_STATUS_INVALID_ARGUMENT);
  cml_builder_destroy(b);
  ASSERT_STATUS_OK(cml_builder_create(g_c, "bad", &b));
  f = cml_builder_main(b);
  g = cml_parameter(f, "g", &s);
  ASSERT_EQ_INT(api_code(cml_optim_clip_by_global_norm(f, &g, 1, 0.0, &p2, NULL)),
                CML_STATUS_INVALID_ARGUMENT);
  cml_builder_destroy(b);

  // A value of another builder is named as such.
  cml_builder_t* other = NULL;
  ASSERT_STATUS_OK(cml_builder_create(g_c, "other", &other));
  cml_value_t foreign = cml_parameter(cml_builder_main(other), "x", &s);
  ASSERT_STATUS_OK(cml_builder_create(g_c, "bad", &b));
  f = cml_builder_main(b);
  p = cml_parameter(f, "p", &s);
  cml_sgd_config_init(&c);
  ASSERT_EQ_INT(
      api_code_msg(cml_optim_sgd_step(f, &c, &p, &foreign, NULL, 1, &p2, NULL), msg, sizeof msg),
      CML_STATUS_INVALID_ARGUMENT);
  ASSERT_TRUE(strstr(msg, "SGD: gradient #0") != NULL);
  ASSERT_TRUE(strstr(msg, "belongs to another builder") != NULL);
  cml_builder_destroy(b);
  cml_builder_destroy(other);

  // A value of a closure (the learning rate, or a gradient) is named as one by the optimizer,
  // not by the first op of the step.
  for (int which = 0; which < 2; ++which) {
    ASSERT_STATUS_OK(cml_builder_create(g_c, "scope", &b));
    f = cml_builder_main(b);
    p = cml_parameter(f, "p", &s);
    g = cml_parameter(f, "g", &s);
    cml_function_t* cl = NULL;
    ASSERT_STATUS_OK(cml_function_new_closure(f, &cl));
    cml_shape_t sc = cml_shape_scalar(CML_DTYPE_F32);
    cml_value_t inner = cml_parameter(cl, "inner", which == 0 ? &sc : &s);
    cml_status_t st =
        which == 0 ? cml_optim_sgd_step_with_learning_rate(f, &c, inner, &p, &g, NULL, 1, &p2, NULL)
                   : cml_optim_sgd_step(f, &c, &p, &inner, NULL, 1, &p2, NULL);
    ASSERT_EQ_INT(api_code_msg(st, msg, sizeof msg), CML_STATUS_INVALID_ARGUMENT);
    ASSERT_TRUE(strstr(msg, which == 0 ? "SGD: learning_rate (Float32) was produced in closure #1"
                                       : "SGD: gradient #0 (Float32)") != NULL);
    ASSERT_TRUE(strstr(msg, "was produced in closure #1") != NULL);
    ASSERT_TRUE(strstr(msg, "neither function \"main\" nor one of its ancestors") != NULL);
    cml_builder_destroy(b);
  }

  // A step on a function that has returned is FAILED_PRECONDITION naming the optimizer, and does
  // not stick: the complete module still compiles.
  ASSERT_STATUS_OK(cml_builder_create(g_c, "returned", &b));
  f = cml_builder_main(b);
  p = cml_parameter(f, "p", &s);
  g = cml_parameter(f, "g", &s);
  ASSERT_STATUS_OK(cml_function_return(f, &p, 1));
  ASSERT_EQ_INT(
      api_code_msg(cml_optim_sgd_step(f, &c, &p, &g, NULL, 1, &p2, NULL), msg, sizeof msg),
      CML_STATUS_FAILED_PRECONDITION);
  ASSERT_TRUE(strstr(msg, "SGD: the function has already returned") != NULL);
  cml_value_t mv = p, vv = p;
  ASSERT_EQ_INT(
      api_code_msg(cml_optim_adam_step(f, &ac, &p, &g, &mv, &vv, 1, p, &o[0], &o[1], &o[2]), msg,
                   sizeof msg),
      CML_STATUS_FAILED_PRECONDITION);
  ASSERT_TRUE(strstr(msg, "AdamW: the function has already returned") != NULL);
  ASSERT_EQ_INT(
      api_code_msg(cml_optim_clip_by_global_norm(f, &g, 1, 1.0, &p2, NULL), msg, sizeof msg),
      CML_STATUS_FAILED_PRECONDITION);
  ASSERT_TRUE(strstr(msg, "ClipByGlobalNorm: the function has already returned") != NULL);
  cml_executable_t* exe = NULL;
  ASSERT_STATUS_OK(cml_builder_compile(b, &exe));
  cml_executable_release(exe);
  cml_builder_destroy(b);
}

// Out-of-range indices, against hand-computed gradients (jax.grad gives the same with Scatter's
// FILL_OR_DROP and Gather's CLIP modes): operand [1, 2, 3], w = [10, 20, 30] on the output.
// ScatterSum and ScatterMax skip an update whose row is out of range, so it gets no gradient
// (it once got the clamped row's: 30). Gather reads the clamped row for an out-of-range start,
// so that row gets the gradient (it once got none).
// The same with U64 starts {1, 2^64 - 1}: the largest is past the end too (it once wrapped to -1
// in the gradient, which sent Gather's gradient to row 0).
TEST(out_of_range_indices) {
  for (int u64 = 0; u64 < 2; ++u64) {
    static const int32_t idx32[2] = {1, 7};
    static const uint64_t idx64[2] = {1, UINT64_MAX};
    const void* idx = u64 ? (const void*)idx64 : (const void*)idx32;
    cml_shape_t os = cml_shape_make(CML_DTYPE_F64, 1, (int64_t[]){3});
    cml_shape_t us = cml_shape_make(CML_DTYPE_F64, 1, (int64_t[]){2});
    cml_shape_t is = cml_shape_make(u64 ? CML_DTYPE_U64 : CML_DTYPE_I32, 2, (int64_t[]){2, 1});
    cml_scatter_dims_t sd;
    memset(&sd, 0, sizeof sd);
    sd.index_vector_axis = 1;
    sd.inserted_window_axis_count = 1;
    sd.scatter_axes_to_operand_axes_count = 1;
    cml_gather_dims_t gd;
    memset(&gd, 0, sizeof gd);
    gd.index_vector_axis = 1;
    gd.collapsed_slice_axis_count = 1;
    gd.start_index_map_count = 1;
    gd.slice_size_count = 1;
    gd.slice_sizes[0] = 1;
    static const double w3[3] = {10, 20, 30}, w2[2] = {10, 20};
    for (int op = 0; op < 3; ++op) {  // ScatterSum, ScatterMax, Gather
      cml_builder_t* b = NULL;
      ASSERT_STATUS_OK(cml_builder_create(g_c, "oob", &b));
      cml_function_t* f = cml_builder_main(b);
      const cml_value_t o = cml_parameter(f, "o", &os);
      const cml_value_t u = cml_parameter(f, "u", &us);
      const cml_value_t i = cml_constant(f, &is, idx);
      cml_value_t y, wv;
      if (op == 2) {
        y = cml_op_gather(f, o, i, &gd);  // [o[1], o[2]] (7 clamped to 2)
        wv = cml_constant(f, &us, w2);
      } else {
        y = op == 0 ? cml_op_scatter_sum(f, o, i, u, &sd) : cml_op_scatter_max(f, o, i, u, &sd);
        wv = cml_constant(f, &os, w3);
      }
      cml_value_t grads[2];
      const cml_value_t wrt[2] = {o, u};
      ASSERT_STATUS_OK(
          cml_gradients(f, cml_op_reduce_sum(f, cml_op_mul(f, y, wv), NULL, 0), wrt, 2, grads));
      cml_executable_t* exe = NULL;
      ASSERT_STATUS_OK(api_finish(b, grads, 2, &exe));
      static const double od[3] = {1, 2, 3}, ud[2] = {100, 1000};
      double go[3] = {0}, gu[2] = {0};
      ASSERT_STATUS_OK(api_run(g_c, exe, (const void* const[]){od, ud}, (void* const[]){go, gu}));
      cml_executable_release(exe);
      if (op < 2) {
        // The update 100 lands on (wins at) row 1; the update 1000 is skipped.
        ASSERT_EQ_DBL(gu[0], 20);
        ASSERT_EQ_DBL(gu[1], 0);
        ASSERT_EQ_DBL(go[0], 10);
        ASSERT_EQ_DBL(go[1], op == 0 ? 20 : 0);
        ASSERT_EQ_DBL(go[2], 30);
      } else {
        ASSERT_EQ_DBL(go[0], 0);
        ASSERT_EQ_DBL(go[1], 10);
        ASSERT_EQ_DBL(go[2], 20);  // the clamped start's row
        ASSERT_EQ_DBL(gu[0], 0);   // u is not used
      }
    }
  }
}

// Without arguments: the c backend (every test but the xla one). With --xla: only the
// finite-difference cases on xla:cpu (exit 77 when its plugin is not installed); ctest runs it
// as autodiff_xla (label device). A test name runs that test only.
int main(int argc, char** argv) {
  bool xla = argc > 1 && strcmp(argv[1], "--xla") == 0;
  const char* only = argc > 1 && !xla ? argv[1] : NULL;
  cml_status_t st = cml_backend_new_with_config("c", &g_c);
  if (st != CML_OK) {
    fprintf(stderr, "backend c: %s\n", cml_status_message(st));
    cml_status_free(st);
    return 1;
  }
  if (xla) {
    st = cml_backend_new_with_config("xla:cpu", &g_xla);
    if (st != CML_OK) {
      printf("skipped: no XLA CPU plugin (%s)\n", cml_status_message(st));
      cml_status_free(st);
      cml_backend_release(g_c);
      return 77;
    }
  }
  static const test_entry_t tests[] = {TEST_ENTRY(finite_differences_c),
                                       TEST_ENTRY(finite_differences_xla),
                                       TEST_ENTRY(hand_computed),
                                       TEST_ENTRY(hand_computed_relu_convert),
                                       TEST_ENTRY(bitcast_has_zero_gradient),
                                       TEST_ENTRY(reduce_product_with_zeros),
                                       TEST_ENTRY(second_derivative),
                                       TEST_ENTRY(if_second_derivative_ignores_the_untaken_branch),
                                       TEST_ENTRY(conv_with_an_empty_output_has_zero_gradients),
                                       TEST_ENTRY(nested_control_flow_gradients),
                                       TEST_ENTRY(if_with_many_values_second_derivative),
                                       TEST_ENTRY(complex_ops),
                                       TEST_ENTRY(errors),
                                       TEST_ENTRY(sdpa_lse_empty_rows),
                                       TEST_ENTRY(dense_gelu_split),
                                       TEST_ENTRY(real_fft_hand_computed),
                                       TEST_ENTRY(scatter_max_ties),
                                       TEST_ENTRY(out_of_range_indices),
                                       TEST_ENTRY(unimplemented_names_op),
                                       TEST_ENTRY(while_trip_count_past_int64),
                                       TEST_ENTRY(while_counters_of_every_integer_dtype),
                                       TEST_ENTRY(while_uint64_counters_past_int64_max),
                                       TEST_ENTRY(while_gradient_as_a_loop),
                                       TEST_ENTRY(while_gradient_of_a_long_loop),
                                       TEST_ENTRY(while_gradient_of_shared_unchanged_state),
                                       TEST_ENTRY(while_gradient_of_a_body_returning_a_capture),
                                       TEST_ENTRY(while_gradient_of_a_max_rank_state),
                                       TEST_ENTRY(collective_gradients),
                                       TEST_ENTRY(quantized_dense_gradient),
                                       TEST_ENTRY(learning_rate_as_a_value),
                                       TEST_ENTRY(sgd_momentum_nesterov),
                                       TEST_ENTRY(adam_adamw),
                                       TEST_ENTRY(adam_half_precision_parameters),
                                       TEST_ENTRY(clamp_crossed_bounds_and_pow_zero_exponent),
                                       TEST_ENTRY(optimizer_constants_that_round_away),
                                       TEST_ENTRY(clip_by_global_norm),
                                       TEST_ENTRY(clip_by_global_norm_mixed_dtypes),
                                       TEST_ENTRY(optimizer_errors)};
  int failures = 0, ran = 0;
  for (size_t i = 0; i < sizeof tests / sizeof tests[0]; ++i) {
    // --xla runs the cases that build their graphs on g_xla.
    bool on_xla = strcmp(tests[i].name, "finite_differences_xla") == 0 ||
                  strcmp(tests[i].name, "if_second_derivative_ignores_the_untaken_branch") == 0 ||
                  strcmp(tests[i].name, "nested_control_flow_gradients") == 0 ||
                  strcmp(tests[i].name, "if_with_many_values_second_derivative") == 0 ||
                  strcmp(tests[i].name, "reduce_product_with_zeros") == 0 ||
                  strncmp(tests[i].name, "while_gradient_", 15) == 0 ||
                  strcmp(tests[i].name, "collective_gradients") == 0;
    bool skip = xla ? !on_xla : strcmp(tests[i].name, "finite_differences_xla") == 0;
    if (only ? strcmp(only, tests[i].name) != 0 : skip) {
      continue;
    }
    int failed = 0;
    tests[i].fn(&failed);
    ++ran;
    printf("%s %s\n", failed ? "FAIL" : "ok  ", tests[i].name);
    failures += failed;
  }
  printf("%d passed, %d failed, 0 skipped\n", ran - failures, failures);
  cml_backend_release(g_xla);
  cml_backend_release(g_c);
  return (failures || ran == 0) ? 1 : 0;
}
