// SPDX-License-Identifier: Apache-2.0
// backendtest/cases_autodiff.c: gradient checks (cml/autodiff.h). For ops of every group with a
// VJP, the gradient of loss = sum(op(inputs) * W) (fixed pseudo-random inputs and W) is
// compared with central finite differences of the same loss in f64 (bound 1e-6 relative); when
// the backend also runs f32, the f32 gradient of the same graph must match the f64 one within
// 2e-3 relative (f32 rounding through a few ops). The finite differences run the forward ops
// that the other groups check; the gradient graph is built by the core, so a backend passes
// when it runs the ops the VJPs use (Pad, ReduceWindow, SelectAndScatter, ScatterSum, ...).
// Attention's gradient (grad_sdpa: the native FusedScaledDotProductAttentionVJP where a backend
// runs it), and second order: that gradient is itself differentiated (grad_sdpa_second_order).
#include <math.h>
#include <string.h>

#include "bt.h"
#include "cml/cml.h"

enum { kAdMaxParams = 3, kAdMaxElems = 128, kAdMaxOut = 256 };

typedef cml_value_t (*ad_build_fn)(cml_function_t* f, const cml_value_t* p, cml_dtype_t dt);

typedef struct ad_spec_t {
  int param_count;
  int32_t rank[kAdMaxParams];
  int64_t dims[kAdMaxParams][4];
  double lo, hi;
  ad_build_fn build;
  cml_op_t ops[4];  // ops the graph needs (beyond Mul, ReduceSum, Add)
} ad_spec_t;

static double ad_value(uint64_t* state, double lo, double hi) {
  *state = *state * 6364136223846793005ull + 1442695040888963407ull;
  return lo + (hi - lo) * ((double)(*state >> 11) / 9007199254740992.0);
}

// Compiles loss and gradients for |dt|; outputs [loss, grads...].
static cml_executable_t* ad_compile(bt_t* t, const ad_spec_t* s, cml_dtype_t dt,
                                    const double* weight) {
  cml_builder_t* b = bt_new_builder(t);
  if (!b) return NULL;
  cml_function_t* f = cml_builder_main(b);
  cml_value_t p[kAdMaxParams], outs[1 + kAdMaxParams];
  for (int i = 0; i < s->param_count; ++i) {
    cml_shape_t shape = cml_shape_make(dt, s->rank[i], s->dims[i]);
    p[i] = cml_parameter(f, NULL, &shape);
  }
  cml_value_t y = s->build(f, p, dt);
  cml_shape_t ys;
  if (!cml_builder_value_shape(b, y, &ys)) {
    bt_ok(t, cml_builder_status(b), "building the graph");
    return NULL;
  }
  int64_t n = cml_shape_element_count(&ys);
  if (n > kAdMaxOut) {
    bt_fail(t, "output of %lld elements is too large for the case", (long long)n);
    return NULL;
  }
  bt_tensor_t wt = bt_tensor_f64(t, dt, ys.rank, ys.dims, weight);
  cml_value_t w = bt_const(t, f, &wt);
  outs[0] = cml_op_reduce_sum(f, cml_op_mul(f, y, w), NULL, 0);
  if (!bt_ok(t, cml_gradients(f, outs[0], p, (size_t)s->param_count, outs + 1), "cml_gradients")) {
    return NULL;
  }
  if (!bt_ok(t, cml_function_return(f, outs, 1 + (size_t)s->param_count), "return")) return NULL;
  cml_executable_t* exe = NULL;
  if (!bt_ok(t, cml_builder_compile(b, &exe), "compile")) return NULL;
  return exe;
}

// Runs |exe| on |inputs| (doubles converted to |dt|); writes the loss and, when |grads| is not
// NULL, the gradients (as doubles).
static bool ad_run(bt_t* t, cml_executable_t* exe, const ad_spec_t* s, cml_dtype_t dt,
                   double inputs[][kAdMaxElems], double* loss, double grads[][kAdMaxElems]) {
  cml_backend_t* be = bt_backend(t);
  cml_buffer_t* in[kAdMaxParams] = {0};
  cml_buffer_t* out[1 + kAdMaxParams] = {0};
  size_t esize = dt == CML_DTYPE_F64 ? 8 : 4;
  bool ok = true;
  for (int i = 0; i < s->param_count && ok; ++i) {
    cml_shape_t shape = cml_shape_make(dt, s->rank[i], s->dims[i]);
    int64_t n = cml_shape_element_count(&shape);
    unsigned char host[kAdMaxElems * 8];
    for (int64_t k = 0; k < n; ++k) {
      if (dt == CML_DTYPE_F64) {
        memcpy(host + k * 8, &inputs[i][k], 8);
      } else {
        float v = (float)inputs[i][k];
        memcpy(host + k * 4, &v, 4);
      }
    }
    ok = bt_ok(t, cml_buffer_from_host(be, 0, &shape, host, (size_t)n * esize, &in[i]), "upload");
  }
  if (ok) {
    ok = bt_ok(t, cml_executable_execute(exe, in, (size_t)s->param_count, NULL, 0, out), "execute");
    if (ok) bt_count_execution(t);
  }
  size_t outs = grads ? 1 + (size_t)s->param_count : 1;
  for (size_t k = 0; k < outs && ok; ++k) {
    unsigned char host[kAdMaxElems * 8];
    const cml_shape_t* shape = cml_buffer_shape(out[k]);
    int64_t n = cml_shape_element_count(shape);
    ok = bt_ok(t, cml_buffer_copy_to_host(out[k], host, (size_t)n * esize), "download");
    double* dst = k == 0 ? loss : grads[k - 1];
    for (int64_t e = 0; e < n && ok; ++e) {
      if (dt == CML_DTYPE_F64) {
        memcpy(&dst[e], host + e * 8, 8);
      } else {
        float v;
        memcpy(&v, host + e * 4, 4);
        dst[e] = v;
      }
    }
  }
  for (int i = 0; i < s->param_count; ++i) cml_buffer_release(in[i]);
  for (int k = 0; k < 1 + s->param_count; ++k) cml_buffer_release(out[k]);
  return ok;
}

// Runs the f64 graph of |s| on c:reference=true (built into the library) and fails the case
// where the loss or a gradient differs from |loss| / |grads| by more than 1e-9 relative. A
// library built without the c backend skips this (the finite differences still run).
static void ad_check_reference(bt_t* t, const ad_spec_t* s, double inputs[][kAdMaxElems],
                               const double* weight, double loss, double grads[][kAdMaxElems],
                               int* bad) {
  double ref_grads[kAdMaxParams][kAdMaxElems];  // per run: suites run on several threads at once
  cml_backend_t* ref = NULL;
  cml_status_t st = cml_backend_new_with_config("c:reference=true", &ref);
  if (st != CML_OK) {
    cml_status_free(st);
    return;
  }
  cml_backend_t* tested = bt_set_backend(t, ref);
  cml_executable_t* exe = ad_compile(t, s, CML_DTYPE_F64, weight);
  double ref_loss = 0;
  bool ok = exe && ad_run(t, exe, s, CML_DTYPE_F64, inputs, &ref_loss, ref_grads);
  cml_executable_release(exe);
  bt_set_backend(t, tested);
  cml_backend_release(ref);
  if (!ok) return;  // the reference's own failure is already recorded
  if (!(fabs(loss - ref_loss) <= 1e-9 * (1.0 + fabs(ref_loss)))) {
    bt_fail(t, "f64 loss %.15g, the reference backend's %.15g", loss, ref_loss);
    ++*bad;
  }
  for (int i = 0; i < s->param_count; ++i) {
    int64_t n = 1;
    for (int32_t d = 0; d < s->rank[i]; ++d) n *= s->dims[i][d];
    for (int64_t k = 0; k < n; ++k) {
      if (!(fabs(grads[i][k] - ref_grads[i][k]) <= 1e-9 * (1.0 + fabs(ref_grads[i][k]))) &&
          (*bad)++ < 4) {
        bt_fail(t, "f64 d loss / d input%d[%lld] = %.15g, the reference backend's %.15g", i,
                (long long)k, grads[i][k], ref_grads[i][k]);
      }
    }
  }
}

static void ad_check(bt_t* t, const ad_spec_t* s) {
  if (!bt_require_dtype(t, CML_DTYPE_F64)) return;
  for (int k = 0; k < 4 && s->ops[k] != CML_OP_INVALID; ++k) {
    if (!bt_require_op(t, s->ops[k])) return;
  }
  // Per run (about 14 KiB of stack): suites on several backends run on several threads at once.
  double inputs[kAdMaxParams][kAdMaxElems], grads[kAdMaxParams][kAdMaxElems];
  double grads32[kAdMaxParams][kAdMaxElems], weight[kAdMaxOut];
  uint64_t state = 0x2545F4914F6CDD1Dull;
  for (int i = 0; i < s->param_count; ++i) {
    int64_t n = 1;
    for (int32_t d = 0; d < s->rank[i]; ++d) n *= s->dims[i][d];
    for (int64_t k = 0; k < n; ++k) inputs[i][k] = ad_value(&state, s->lo, s->hi);
  }
  for (int k = 0; k < kAdMaxOut; ++k) weight[k] = ad_value(&state, -1, 1);
  cml_executable_t* exe = ad_compile(t, s, CML_DTYPE_F64, weight);
  if (!exe) return;
  double loss;
  if (!ad_run(t, exe, s, CML_DTYPE_F64, inputs, &loss, grads)) {
    cml_executable_release(exe);
    return;
  }
  int bad = 0;
  // An independent oracle for the values themselves: finite differences of the backend's own
  // loss agree with its gradients even when both are wrong the same way (all zeros, scaled), so
  // the loss and gradients are also compared with the scalar reference backend's.
  ad_check_reference(t, s, inputs, weight, loss, grads, &bad);
  for (int i = 0; i < s->param_count; ++i) {
    int64_t n = 1;
    for (int32_t d = 0; d < s->rank[i]; ++d) n *= s->dims[i][d];
    for (int64_t k = 0; k < n; ++k) {
      double x0 = inputs[i][k], h = 1e-6 * (1.0 + fabs(x0)), lp, lm;
      inputs[i][k] = x0 + h;
      bool ok = ad_run(t, exe, s, CML_DTYPE_F64, inputs, &lp, NULL);
      inputs[i][k] = x0 - h;
      ok = ok && ad_run(t, exe, s, CML_DTYPE_F64, inputs, &lm, NULL);
      inputs[i][k] = x0;
      if (!ok) {
        cml_executable_release(exe);
        return;
      }
      double fd = (lp - lm) / (2 * h);
      if (!(fabs(grads[i][k] - fd) <= 1e-6 * (1.0 + fabs(fd))) && bad++ < 4) {
        bt_fail(t, "f64 d loss / d input%d[%lld] = %.12g, central differences %.12g", i,
                (long long)k, grads[i][k], fd);
      }
    }
  }
  cml_executable_release(exe);
  if (bad || !cml_capabilities_has_dtype(cml_backend_capabilities(bt_backend(t)), CML_DTYPE_F32)) {
    return;
  }
  exe = ad_compile(t, s, CML_DTYPE_F32, weight);
  if (!exe) return;
  bool ok = ad_run(t, exe, s, CML_DTYPE_F32, inputs, &loss, grads32);
  cml_executable_release(exe);
  for (int i = 0; i < s->param_count && ok; ++i) {
    int64_t n = 1;
    for (int32_t d = 0; d < s->rank[i]; ++d) n *= s->dims[i][d];
    for (int64_t k = 0; k < n; ++k) {
      if (!(fabs(grads32[i][k] - grads[i][k]) <= 2e-3 * (1.0 + fabs(grads[i][k]))) && bad++ < 4) {
        bt_fail(t, "f32 d loss / d input%d[%lld] = %.8g, f64 gradient %.12g", i, (long long)k,
                grads32[i][k], grads[i][k]);
      }
    }
  }
}

static cml_value_t ad_scalar(cml_function_t* f, cml_dtype_t dt, double v) {
  return cml_constant_scalar_f64(f, dt, v);
}

//===--- the graphs ---===//

static cml_value_t g_unary(cml_function_t* f, const cml_value_t* p, cml_dtype_t dt) {
  cml_value_t x = p[0];
  cml_value_t a = cml_op_mul(f, cml_op_tanh(f, x), cml_op_exp(f, cml_op_sin(f, x)));
  cml_value_t c = cml_op_log(f, cml_op_add(f, cml_op_mul(f, x, x), ad_scalar(f, dt, 1)));
  return cml_op_add(f, a, cml_op_mul(f, c, cml_op_logistic(f, x)));
}
static cml_value_t g_binary(cml_function_t* f, const cml_value_t* p, cml_dtype_t dt) {
  (void)dt;  // [2, 3] and [1, 3]: broadcasting along axis 0
  cml_value_t q = cml_op_div(f, p[0], cml_op_add(f, p[1], ad_scalar(f, dt, 3)));
  return cml_op_add(f, cml_op_max(f, q, p[1]), cml_op_mul(f, p[0], p[1]));
}
static cml_value_t g_where_clamp(cml_function_t* f, const cml_value_t* p, cml_dtype_t dt) {
  cml_value_t c = cml_op_clamp(f, ad_scalar(f, dt, -0.5), p[0], ad_scalar(f, dt, 0.7));
  return cml_op_where(f, cml_op_greater_than(f, p[0], p[1]), cml_op_mul(f, c, p[1]), p[1]);
}
static cml_value_t g_reduce(cml_function_t* f, const cml_value_t* p, cml_dtype_t dt) {
  (void)dt;
  cml_value_t m = cml_op_reduce_max(f, p[0], (int64_t[]){1}, 1);
  cml_value_t s = cml_op_reduce_sum(f, cml_op_mul(f, p[0], p[0]), (int64_t[]){1}, 1);
  return cml_op_add(f, m, s);
}
static cml_value_t g_movement(cml_function_t* f, const cml_value_t* p, cml_dtype_t dt) {
  cml_value_t x = cml_op_transpose(f, p[0], (int64_t[]){1, 0}, 2);                     // [4, 3]
  x = cml_op_slice(f, x, (int64_t[]){0, 1}, (int64_t[]){4, 3}, (int64_t[]){2, 1}, 2);  // [2, 2]
  cml_pad_axis_t pads[2] = {{1, 0, 1}, {0, 1, 0}};
  x = cml_op_pad(f, x, ad_scalar(f, dt, 0), pads, 2);  // [4, 3]
  cml_value_t b = cml_op_broadcast_in_dim(f, p[1], (int64_t[]){4, 3}, 2, (int64_t[]){1}, 1);
  x = cml_op_concatenate(f, 0, (cml_value_t[]){x, cml_op_reverse(f, b, (int64_t[]){1}, 1)}, 2);
  return cml_op_reshape(f, cml_op_mul(f, x, x), (int64_t[]){24}, 1);
}
static cml_value_t g_index(cml_function_t* f, const cml_value_t* p, cml_dtype_t dt) {
  (void)dt;
  static const int32_t idx[3] = {2, 0, 2};
  cml_shape_t is = cml_shape_make(CML_DTYPE_I32, 1, (int64_t[]){3});
  cml_value_t indices = cml_constant(f, &is, idx);
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
  cml_value_t rows = cml_op_gather(f, p[0], indices, &g);  // [3, 3]
  cml_value_t s[2] = {cml_constant_scalar_i64(f, CML_DTYPE_I32, 1),
                      cml_constant_scalar_i64(f, CML_DTYPE_I32, 1)};
  cml_value_t d = cml_op_dynamic_slice(f, p[0], s, (int64_t[]){3, 2}, 2);
  cml_value_t rs = cml_op_slice(f, rows, (int64_t[]){0, 0}, (int64_t[]){3, 2}, NULL, 2);
  return cml_op_mul(f, rs, d);
}
static cml_value_t g_window(cml_function_t* f, const cml_value_t* p, cml_dtype_t dt) {
  (void)dt;
  cml_window_config_t w;
  memset(&w, 0, sizeof w);
  w.rank = 2;
  w.window_dims[0] = w.window_dims[1] = 2;
  w.strides[0] = w.strides[1] = 2;
  cml_value_t mx = cml_op_reduce_window(f, p[0], CML_REDUCE_MAX, &w);
  w.strides[0] = w.strides[1] = 1;
  w.padding_low[0] = 1;
  cml_value_t sm = cml_op_reduce_window(f, p[0], CML_REDUCE_SUM, &w);  // [4, 3]
  cml_value_t sms = cml_op_slice(f, sm, (int64_t[]){0, 0}, (int64_t[]){2, 2}, NULL, 2);
  return cml_op_add(f, mx, cml_op_mul(f, sms, sms));
}
static cml_value_t g_dot(cml_function_t* f, const cml_value_t* p, cml_dtype_t dt) {
  (void)dt;
  cml_dot_config_t d;
  memset(&d, 0, sizeof d);
  d.lhs_batch_count = d.rhs_batch_count = 1;
  d.lhs_batch_axes[0] = 1;
  d.rhs_batch_axes[0] = 0;
  d.lhs_contracting_count = d.rhs_contracting_count = 1;
  d.lhs_contracting_axes[0] = 0;
  d.rhs_contracting_axes[0] = 2;
  return cml_op_dot_general(f, p[0], p[1], &d);  // [3, 2, 4] x [2, 5, 3] -> [2, 4, 5]
}
static cml_value_t g_conv(cml_function_t* f, const cml_value_t* p, cml_dtype_t dt) {
  (void)dt;
  cml_conv_config_t c;
  memset(&c, 0, sizeof c);
  c.spatial_count = 2;
  c.input_channel_axis = 1;
  c.input_spatial_axes[0] = 2;
  c.input_spatial_axes[1] = 3;
  c.kernel_input_channel_axis = 1;
  c.kernel_spatial_axes[0] = 2;
  c.kernel_spatial_axes[1] = 3;
  c.output_channel_axis = 1;
  c.output_spatial_axes[0] = 2;
  c.output_spatial_axes[1] = 3;
  c.strides[0] = 2;
  c.padding_low[1] = c.padding_high[1] = 1;
  c.channel_group_count = 2;
  return cml_op_conv_general(f, p[0], p[1], &c);  // [1, 4, 5, 3] * [4, 2, 2, 2]
}
// A channel-grouped, strided, padded convolution with a dilated kernel axis, in unusual
// layouts: input [C, S1, N, S0], kernel [I, O, S1, S0]. Its input gradient has an axis with an
// input dilation equal to the kernel's size and no padding, which made XLA end the process
// (docs/xla.md, "Modules that make XLA abort").
static cml_value_t g_conv_grouped_dilated(cml_function_t* f, const cml_value_t* p, cml_dtype_t dt) {
  (void)dt;
  cml_conv_config_t c;
  memset(&c, 0, sizeof c);
  c.spatial_count = 2;
  c.input_channel_axis = 0;
  c.input_spatial_axes[1] = 1;
  c.input_batch_axis = 2;
  c.input_spatial_axes[0] = 3;
  c.kernel_input_channel_axis = 0;
  c.kernel_output_channel_axis = 1;
  c.kernel_spatial_axes[1] = 2;
  c.kernel_spatial_axes[0] = 3;
  c.output_channel_axis = 1;
  c.output_spatial_axes[0] = 2;
  c.output_spatial_axes[1] = 3;
  c.strides[0] = c.strides[1] = 2;
  c.padding_low[0] = 2;
  c.padding_low[1] = c.padding_high[1] = 1;
  c.kernel_dilations[0] = 2;
  c.channel_group_count = 2;
  return cml_op_conv_general(f, p[0], p[1], &c);  // [4, 4, 1, 4] * [2, 4, 2, 3] -> [1, 4, 1, 3]
}
static cml_value_t g_batch_norm(cml_function_t* f, const cml_value_t* p, cml_dtype_t dt) {
  (void)dt;
  cml_value_t o[3];
  if (!cml_op_batch_norm_training(f, p[0], p[1], p[2], 1e-3f, 1, o)) return CML_VALUE_INVALID;
  return o[0];
}
static cml_value_t g_fused(cml_function_t* f, const cml_value_t* p, cml_dtype_t dt) {
  (void)dt;
  cml_dense_config_t c;
  cml_dense_config_init(&c);
  c.activation = CML_ACTIVATION_GELU;
  cml_value_t y = cml_op_fused_dense(f, p[0], p[1], CML_VALUE_INVALID, &c);  // [3, 4]
  y = cml_op_fused_layer_norm(f, y, (int64_t[]){1}, 1, 1e-3, CML_VALUE_INVALID, CML_VALUE_INVALID);
  return cml_op_fused_softmax(f, y, 1);
}
static cml_value_t g_control(cml_function_t* f, const cml_value_t* p, cml_dtype_t dt) {
  cml_function_t *yes = NULL, *no = NULL, *cmp = NULL;
  if (cml_function_new_closure(f, &yes) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t t = cml_op_mul(yes, p[0], p[1]);
  if (cml_function_return(yes, &t, 1) != CML_OK) return CML_VALUE_INVALID;
  if (cml_function_new_closure(f, &no) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t e = cml_op_sin(no, p[1]);
  if (cml_function_return(no, &e, 1) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t pred =
      cml_op_greater_than(f, cml_op_reduce_sum(f, p[0], NULL, 0), ad_scalar(f, dt, 0));
  cml_value_t out;
  if (!cml_op_if(f, pred, yes, no, &out)) return CML_VALUE_INVALID;
  if (cml_function_new_closure(f, &cmp) != CML_OK) return CML_VALUE_INVALID;
  cml_shape_t s = cml_shape_make(dt, 0, NULL);
  cml_value_t a = cml_parameter(cmp, NULL, &s), b = cml_parameter(cmp, NULL, &s);
  cml_value_t lt = cml_op_less_than(cmp, a, b);
  if (cml_function_return(cmp, &lt, 1) != CML_OK) return CML_VALUE_INVALID;
  cml_value_t sorted;
  if (!cml_op_sort(f, cmp, 1, true, &out, 1, &sorted)) return CML_VALUE_INVALID;
  return cml_op_mul(f, sorted, sorted);
}

// ScatterMax of sin(p1) and ScatterMin of p1 * p1 into p0 [4, 3], rows 2, 0, 2 (two updates
// compete for row 2).
static cml_value_t g_scatter_extremal(cml_function_t* f, const cml_value_t* p, cml_dtype_t dt) {
  (void)dt;
  static const int32_t idx[3] = {2, 0, 2};
  cml_shape_t is = cml_shape_make(CML_DTYPE_I32, 1, (int64_t[]){3});
  cml_value_t indices = cml_constant(f, &is, idx);
  cml_scatter_dims_t s;
  memset(&s, 0, sizeof s);
  s.index_vector_axis = 1;
  s.update_window_axis_count = 1;
  s.update_window_axes[0] = 1;
  s.inserted_window_axis_count = 1;
  s.scatter_axes_to_operand_axes_count = 1;
  cml_value_t mx = cml_op_scatter_max(f, p[0], indices, cml_op_sin(f, p[1]), &s);
  cml_value_t mn = cml_op_scatter_min(f, p[0], indices, cml_op_mul(f, p[1], p[1]), &s);
  return cml_op_add(f, mx, cml_op_mul(f, mn, mn));
}
// RFFT of p0 [2, 8]; IRFFT of Complex(p1, p2) [2, 5] to lengths 8 and 9: everything as real
// values, concatenated.
static cml_value_t g_real_fft(cml_function_t* f, const cml_value_t* p, cml_dtype_t dt) {
  (void)dt;
  cml_value_t r = cml_op_fft(f, p[0], CML_FFT_FORWARD_REAL, (int64_t[]){8}, 1);
  cml_value_t z = cml_op_complex(f, p[1], p[2]);
  cml_value_t i8 = cml_op_fft(f, z, CML_FFT_INVERSE_REAL, (int64_t[]){8}, 1);
  cml_value_t i9 = cml_op_fft(f, z, CML_FFT_INVERSE_REAL, (int64_t[]){9}, 1);
  return cml_op_concatenate(
      f, 1, (cml_value_t[]){cml_op_real(f, r), cml_op_imag(f, r), i8, cml_op_mul(f, i9, i9)}, 4);
}
// Attention (causal, grouped-query, BHSD): on a backend with the native attention VJP the
// gradient is that node (FusedScaledDotProductAttentionVJP), elsewhere its decomposition's.
static cml_value_t g_sdpa(cml_function_t* f, const cml_value_t* p, cml_dtype_t dt) {
  (void)dt;
  cml_sdpa_config_t c;
  cml_sdpa_config_init(&c);
  c.causal = true;
  return cml_op_fused_sdpa(f, p[0], p[1], p[2], CML_ATTENTION_LAYOUT_BHSD, &c, NULL, NULL);
}
// Second order: the gradient of sum(sin(attention(q, k, v))) (causal, grouped-query, BHSD) with
// respect to q, k and v, flattened; the check differentiates it again. On a backend with the
// native attention VJP this differentiates that node.
static cml_value_t g_sdpa_second_order(cml_function_t* f, const cml_value_t* p, cml_dtype_t dt) {
  (void)dt;
  cml_sdpa_config_t c;
  cml_sdpa_config_init(&c);
  c.causal = true;
  cml_value_t o = cml_op_fused_sdpa(f, p[0], p[1], p[2], CML_ATTENTION_LAYOUT_BHSD, &c, NULL, NULL);
  cml_value_t g[3];
  if (cml_gradients(f, cml_op_reduce_sum(f, cml_op_sin(f, o), NULL, 0), p, 3, g) != CML_OK) {
    return CML_VALUE_INVALID;
  }
  cml_builder_t* b = cml_function_builder(f);
  for (int i = 0; i < 3; ++i) {
    cml_shape_t s;
    cml_builder_value_shape(b, g[i], &s);
    g[i] = cml_op_reshape(f, g[i], (int64_t[]){cml_shape_element_count(&s)}, 1);
  }
  return cml_op_concatenate(f, 0, g, 3);
}

#define AD_SPEC(...)                         \
  static const ad_spec_t spec = __VA_ARGS__; \
  ad_check(t, &spec)

static void case_elementwise_unary(bt_t* t) {
  AD_SPEC(
      {1, {2}, {{2, 3}}, -2, 2, g_unary, {CML_OP_TANH, CML_OP_EXP, CML_OP_LOG, CML_OP_LOGISTIC}});
}
static void case_elementwise_binary(bt_t* t) {
  AD_SPEC({2, {2, 2}, {{2, 3}, {1, 3}}, -2, 2, g_binary, {CML_OP_DIV, CML_OP_MAX, CML_OP_INVALID}});
}
static void case_where_clamp(bt_t* t) {
  AD_SPEC({2,
           {2, 2},
           {{2, 3}, {2, 3}},
           -1,
           1,
           g_where_clamp,
           {CML_OP_WHERE, CML_OP_CLAMP, CML_OP_GREATER_THAN, CML_OP_INVALID}});
}
static void case_reduce(bt_t* t) {
  AD_SPEC({1, {2}, {{3, 4}}, -2, 2, g_reduce, {CML_OP_REDUCE_MAX, CML_OP_EQUAL, CML_OP_INVALID}});
}
static void case_movement(bt_t* t) {
  AD_SPEC({2,
           {2, 1},
           {{3, 4}, {3}},
           -2,
           2,
           g_movement,
           {CML_OP_TRANSPOSE, CML_OP_PAD, CML_OP_CONCATENATE, CML_OP_REVERSE}});
}
static void case_index(bt_t* t) {
  AD_SPEC({1,
           {2},
           {{4, 3}},
           -2,
           2,
           g_index,
           {CML_OP_GATHER, CML_OP_SCATTER_SUM, CML_OP_DYNAMIC_SLICE, CML_OP_DYNAMIC_UPDATE_SLICE}});
}
static void case_window(bt_t* t) {
  AD_SPEC({1,
           {2},
           {{4, 4}},
           -2,
           2,
           g_window,
           {CML_OP_REDUCE_WINDOW, CML_OP_SELECT_AND_SCATTER_MAX, CML_OP_PAD, CML_OP_INVALID}});
}
static void case_linalg_dot(bt_t* t) {
  AD_SPEC({2,
           {3, 3},
           {{3, 2, 4}, {2, 5, 3}},
           -1,
           1,
           g_dot,
           {CML_OP_DOT_GENERAL, CML_OP_TRANSPOSE, CML_OP_INVALID}});
}
static void case_linalg_conv(bt_t* t) {
  AD_SPEC({2,
           {4, 4},
           {{1, 4, 5, 3}, {4, 2, 2, 2}},
           -1,
           1,
           g_conv,
           {CML_OP_CONV_GENERAL, CML_OP_REVERSE, CML_OP_INVALID}});
}
static void case_linalg_conv_grouped_dilated(bt_t* t) {
  AD_SPEC({2,
           {4, 4},
           {{4, 4, 1, 4}, {2, 4, 2, 3}},
           -1,
           1,
           g_conv_grouped_dilated,
           {CML_OP_CONV_GENERAL, CML_OP_REVERSE, CML_OP_INVALID}});
}
static void case_batch_norm(bt_t* t) {
  AD_SPEC({3,
           {2, 1, 1},
           {{4, 3}, {3}, {3}},
           -2,
           2,
           g_batch_norm,
           {CML_OP_BATCH_NORM_TRAINING, CML_OP_BATCH_NORM_GRADIENT, CML_OP_INVALID}});
}
static void case_fused(bt_t* t) {
  AD_SPEC({2, {2, 2}, {{3, 4}, {4, 4}}, -1, 1, g_fused, {CML_OP_DOT_GENERAL, CML_OP_INVALID}});
}
static void case_control(bt_t* t) {
  if (!bt_require_functions(t)) return;
  AD_SPEC({2,
           {2, 2},
           {{2, 3}, {2, 3}},
           0.1,
           2,
           g_control,
           {CML_OP_IF, CML_OP_SORT, CML_OP_SCATTER_SUM, CML_OP_INVALID}});
}
static void case_scatter_extremal(bt_t* t) {
  AD_SPEC({2,
           {2, 2},
           {{4, 3}, {3, 3}},
           -1.2,
           1.2,
           g_scatter_extremal,
           {CML_OP_SCATTER_MAX, CML_OP_SCATTER_MIN, CML_OP_GATHER, CML_OP_SCATTER_SUM}});
}
static void case_real_fft(bt_t* t) {
  AD_SPEC({3,
           {2, 2, 2},
           {{2, 8}, {2, 5}, {2, 5}},
           -1,
           1,
           g_real_fft,
           {CML_OP_FFT, CML_OP_COMPLEX, CML_OP_CONJ, CML_OP_PAD}});
}
static void case_sdpa(bt_t* t) {
  AD_SPEC({3,
           {4, 4, 4},
           {{1, 2, 4, 3}, {1, 1, 5, 3}, {1, 1, 5, 2}},
           -1,
           1,
           g_sdpa,
           {CML_OP_DOT_GENERAL, CML_OP_EXP, CML_OP_REDUCE_MAX, CML_OP_INVALID}});
}
static void case_sdpa_second_order(bt_t* t) {
  AD_SPEC({3,
           {4, 4, 4},
           {{1, 2, 4, 3}, {1, 1, 5, 3}, {1, 1, 5, 2}},
           -1,
           1,
           g_sdpa_second_order,
           {CML_OP_DOT_GENERAL, CML_OP_EXP, CML_OP_REDUCE_MAX, CML_OP_SIN}});
}

const bt_case_t bt_cases_autodiff[] = {
    {"grad_elementwise_unary", CML_OP_TANH, case_elementwise_unary},
    {"grad_elementwise_binary", CML_OP_DIV, case_elementwise_binary},
    {"grad_where_clamp", CML_OP_WHERE, case_where_clamp},
    {"grad_reduce", CML_OP_REDUCE_MAX, case_reduce},
    {"grad_movement", CML_OP_PAD, case_movement},
    {"grad_index", CML_OP_GATHER, case_index},
    {"grad_window", CML_OP_REDUCE_WINDOW, case_window},
    {"grad_linalg_dot", CML_OP_DOT_GENERAL, case_linalg_dot},
    {"grad_linalg_conv", CML_OP_CONV_GENERAL, case_linalg_conv},
    {"grad_linalg_conv_grouped_dilated", CML_OP_CONV_GENERAL, case_linalg_conv_grouped_dilated},
    {"grad_batch_norm", CML_OP_BATCH_NORM_TRAINING, case_batch_norm},
    {"grad_fused", CML_OP_FUSED_LAYER_NORM, case_fused},
    {"grad_control", CML_OP_IF, case_control},
    {"grad_scatter_extremal", CML_OP_SCATTER_MAX, case_scatter_extremal},
    {"grad_real_fft", CML_OP_FFT, case_real_fft},
    {"grad_sdpa", CML_OP_FUSED_SDPA_VJP, case_sdpa},
    {"grad_sdpa_second_order", CML_OP_FUSED_SDPA, case_sdpa_second_order},
};
const size_t bt_cases_autodiff_count = sizeof bt_cases_autodiff / sizeof bt_cases_autodiff[0];
