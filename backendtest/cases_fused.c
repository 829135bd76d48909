// SPDX-License-Identifier: Apache-2.0
// backendtest/cases_fused.c: compliance cases of the "fused" group: FusedSoftmax, FusedGelu,
// FusedLayerNorm, FusedDense (every activation, both weight layouts), FusedScaledDotProduct-
// Attention (scale, causal, Bool and additive masks, bias, lengths, grouped-query heads, both
// layouts) and FusedAttentionQKVProjection, plus their argument errors.
//
// Fused ops always build: a backend that lacks one gets the core's decomposition. So these
// cases never require the op; they check whichever path the backend takes (run them on "c" for
// the native kernels and on "c:fusion=false" for the decomposition). Expected values come from
// the formulas of cml/fused.h evaluated here in double, on the inputs as rounded to the case's
// dtype.
#include <math.h>
#include <string.h>

#include "backendtest/bt.h"
#include "cml/fused.h"

//===--- helpers ---===//

// Relative and absolute tolerances per dtype (the kernels and the decomposition round
// intermediates in the dtype, or in f32 for half precision).
static void fz_tol(cml_dtype_t dt, double* rtol, double* atol) {
  switch (dt) {
    case CML_DTYPE_F64:
      *rtol = 1e-12, *atol = 1e-13;
      break;
    case CML_DTYPE_F16:
      *rtol = 4e-3, *atol = 2e-3;
      break;
    case CML_DTYPE_BF16:
      *rtol = 3e-2, *atol = 1.6e-2;
      break;
    default:
      *rtol = 2e-5, *atol = 2e-6;
      break;
  }
}

static int64_t fz_count(int32_t rank, const int64_t* dims) {
  int64_t n = 1;
  for (int32_t i = 0; i < rank; ++i) n *= dims[i];
  return n;
}

// A parameter of random values in [lo, hi); *out_values receives them as the dtype holds them.
static cml_value_t fz_param(bt_t* t, cml_function_t* f, cml_dtype_t dt, int32_t rank,
                            const int64_t* dims, double lo, double hi, double** out_values) {
  int64_t n = fz_count(rank, dims);
  double* v = bt_alloc(t, (size_t)(n > 0 ? n : 1) * sizeof(double));
  for (int64_t i = 0; i < n; ++i) v[i] = bt_rand_uniform(t, lo, hi);
  bt_tensor_t tensor = bt_tensor_f64(t, dt, rank, dims, v);
  for (int64_t i = 0; i < n; ++i) v[i] = bt_get_f64(&tensor, i);
  *out_values = v;
  return bt_param(t, f, &tensor);
}

static void fz_expect(bt_t* t, const char* what, const bt_tensor_t* got, cml_dtype_t dt,
                      int32_t rank, const int64_t* dims, const double* want) {
  double rtol, atol;
  fz_tol(dt, &rtol, &atol);
  bt_tensor_t w = bt_tensor_f64(t, dt, rank, dims, want);
  bt_expect_close(t, what, got, &w, rtol, atol);
}

static double fz_gelu(double v, bool exact) {
  if (exact) return 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
  return 0.5 * v * (1.0 + tanh(sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
}

static double fz_act(double v, cml_activation_t act) {
  switch (act) {
    case CML_ACTIVATION_GELU:
      return fz_gelu(v, true);
    case CML_ACTIVATION_RELU:
      return v > 0 ? v : 0;
    case CML_ACTIVATION_SILU:
      return v / (1.0 + exp(-v));
    case CML_ACTIVATION_HARD_SWISH:
      return v * fmin(fmax(v / 6.0 + 0.5, 0.0), 1.0);
    case CML_ACTIVATION_TANH:
      return tanh(v);
    default:
      return v;
  }
}

//===--- FusedSoftmax ---===//

static void fz_softmax_case(bt_t* t, cml_dtype_t dt, int32_t rank, const int64_t* dims,
                            int64_t axis, double lo, double hi) {
  if (!bt_require_dtype(t, dt)) return;
  cml_function_t* f = bt_main(t);
  double* x;
  cml_value_t xv = fz_param(t, f, dt, rank, dims, lo, hi, &x);
  cml_value_t y = cml_op_fused_softmax(f, xv, axis);
  bt_tensor_t out[1];
  if (!bt_exec(t, &y, 1, out)) return;
  int64_t a = axis < 0 ? axis + rank : axis;
  int64_t outer = 1, inner = 1, n = dims[a];
  for (int32_t d = 0; d < rank; ++d) {
    if (d < a) outer *= dims[d];
    if (d > a) inner *= dims[d];
  }
  double* want = bt_alloc(t, (size_t)fz_count(rank, dims) * sizeof(double));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      double m = -INFINITY, sum = 0;
      for (int64_t j = 0; j < n; ++j) m = fmax(m, x[(o * n + j) * inner + i]);
      for (int64_t j = 0; j < n; ++j) sum += exp(x[(o * n + j) * inner + i] - m);
      for (int64_t j = 0; j < n; ++j) {
        int64_t idx = (o * n + j) * inner + i;
        want[idx] = exp(x[idx] - m) / sum;
      }
    }
  }
  // Relative bounds only: every output is in [0, 1] and most of a long row's are near 1e-3, so
  // the absolute part of fz_tol (1.6e-2 for BFloat16) would pass anything there, zeros and a
  // result off by a quarter included. Computed in Float32 and rounded once, a half-precision
  // result is within 1 ulp of the dtype (2^-7 relative for BFloat16, 2^-10 for Float16).
  double rtol, atol;
  fz_tol(dt, &rtol, &atol);
  if (dt == CML_DTYPE_BF16) rtol = 0x1p-7, atol = 1e-30;
  if (dt == CML_DTYPE_F16) rtol = 0x1p-10, atol = 1e-7;
  bt_tensor_t w = bt_tensor_f64(t, dt, rank, dims, want);
  bt_expect_close(t, "softmax", &out[0], &w, rtol, atol);
}

static void case_softmax_hand(bt_t* t) {
  if (!bt_require_dtype(t, CML_DTYPE_F32)) return;
  cml_function_t* f = bt_main(t);
  // softmax([0, ln 2, ln 5]) = [1, 2, 5] / 8; a constant row gives uniform weights.
  const int64_t dims[] = {2, 3};
  cml_value_t x =
      bt_param_f64(t, f, CML_DTYPE_F32, 2, dims, (double[]){0, log(2.0), log(5.0), 7, 7, 7});
  cml_value_t y = cml_op_fused_softmax(f, x, 1);
  bt_tensor_t out[1];
  if (!bt_exec(t, &y, 1, out)) return;
  fz_expect(t, "softmax", &out[0], CML_DTYPE_F32, 2, dims,
            (double[]){0.125, 0.25, 0.625, 1.0 / 3, 1.0 / 3, 1.0 / 3});
}

static void case_softmax_f32_last(bt_t* t) {
  fz_softmax_case(t, CML_DTYPE_F32, 2, (int64_t[]){7, 33}, -1, -4, 4);
}
static void case_softmax_f32_middle(bt_t* t) {
  fz_softmax_case(t, CML_DTYPE_F32, 3, (int64_t[]){3, 5, 4}, 1, -3, 3);
}
static void case_softmax_f64_first(bt_t* t) {
  fz_softmax_case(t, CML_DTYPE_F64, 3, (int64_t[]){6, 2, 3}, 0, -5, 5);
}
static void case_softmax_f32_large(bt_t* t) {
  // Without the max subtraction exp would overflow.
  fz_softmax_case(t, CML_DTYPE_F32, 2, (int64_t[]){4, 9}, 1, 500, 520);
}
static void case_softmax_f16(bt_t* t) {
  fz_softmax_case(t, CML_DTYPE_F16, 2, (int64_t[]){5, 6}, 1, -2, 2);
}
static void case_softmax_bf16(bt_t* t) {
  fz_softmax_case(t, CML_DTYPE_BF16, 3, (int64_t[]){2, 3, 8}, 2, -2, 2);
}
// A long bf16 row: summed in bf16 the exponentials lose most of their bits (a decomposition
// computing in the half type was off by a quarter); fused ops compute in f32.
static void case_softmax_bf16_long_row(bt_t* t) {
  fz_softmax_case(t, CML_DTYPE_BF16, 2, (int64_t[]){2, 1000}, 1, -2, 2);
}

//===--- FusedGelu ---===//

static void fz_gelu_case(bt_t* t, cml_dtype_t dt, bool exact, int32_t rank, const int64_t* dims) {
  if (!bt_require_dtype(t, dt)) return;
  cml_function_t* f = bt_main(t);
  double* x;
  cml_value_t xv = fz_param(t, f, dt, rank, dims, -5, 5, &x);
  cml_value_t y = cml_op_fused_gelu(f, xv, exact);
  bt_tensor_t out[1];
  if (!bt_exec(t, &y, 1, out)) return;
  int64_t n = fz_count(rank, dims);
  double* want = bt_alloc(t, (size_t)(n > 0 ? n : 1) * sizeof(double));
  for (int64_t i = 0; i < n; ++i) want[i] = fz_gelu(x[i], exact);
  fz_expect(t, exact ? "gelu exact" : "gelu approx", &out[0], dt, rank, dims, want);
}

static void case_gelu_hand(bt_t* t) {
  if (!bt_require_dtype(t, CML_DTYPE_F64)) return;
  cml_function_t* f = bt_main(t);
  const int64_t dims[] = {4};
  cml_value_t x = bt_param_f64(t, f, CML_DTYPE_F64, 1, dims, (double[]){0, 1, -1, 3});
  cml_value_t y = cml_op_fused_gelu(f, x, true);
  bt_tensor_t out[1];
  if (!bt_exec(t, &y, 1, out)) return;
  // erf(1/sqrt 2) = 0.682689492137086 (the one-sigma probability), erf(3/sqrt 2) =
  // 0.997300203936740.
  fz_expect(t, "gelu", &out[0], CML_DTYPE_F64, 1, dims,
            (double[]){0, 0.5 * 1.682689492137086, -0.5 * (1 - 0.682689492137086),
                       1.5 * 1.997300203936740});
}

static void case_gelu_f32_exact(bt_t* t) {
  fz_gelu_case(t, CML_DTYPE_F32, true, 2, (int64_t[]){9, 13});
}
static void case_gelu_f32_approx(bt_t* t) {
  fz_gelu_case(t, CML_DTYPE_F32, false, 1, (int64_t[]){50});
}
static void case_gelu_f64_approx(bt_t* t) {
  fz_gelu_case(t, CML_DTYPE_F64, false, 3, (int64_t[]){2, 3, 5});
}
static void case_gelu_bf16_exact(bt_t* t) {
  fz_gelu_case(t, CML_DTYPE_BF16, true, 1, (int64_t[]){40});
}
static void case_gelu_f16_empty(bt_t* t) {
  fz_gelu_case(t, CML_DTYPE_F16, true, 2, (int64_t[]){0, 4});
}

//===--- FusedLayerNorm ---===//

static void fz_layer_norm_case(bt_t* t, cml_dtype_t dt, int32_t rank, const int64_t* dims,
                               const int64_t* axes, int32_t axis_count, double eps, bool with_gamma,
                               bool with_beta) {
  if (!bt_require_dtype(t, dt)) return;
  cml_function_t* f = bt_main(t);
  double *x, *g = NULL, *be = NULL;
  cml_value_t xv = fz_param(t, f, dt, rank, dims, -3, 5, &x);
  bool norm[CML_MAX_RANK] = {false};
  for (int32_t i = 0; i < axis_count; ++i) norm[axes[i] < 0 ? axes[i] + rank : axes[i]] = true;
  int64_t gdims[CML_MAX_RANK];
  int32_t grank = 0;
  for (int32_t d = 0; d < rank; ++d)
    if (norm[d]) gdims[grank++] = dims[d];
  cml_value_t gv = with_gamma ? fz_param(t, f, dt, grank, gdims, 0.5, 2, &g) : CML_VALUE_INVALID;
  cml_value_t bv = with_beta ? fz_param(t, f, dt, grank, gdims, -1, 1, &be) : CML_VALUE_INVALID;
  cml_value_t y = cml_op_fused_layer_norm(f, xv, axes, (size_t)axis_count, eps, gv, bv);
  bt_tensor_t out[1];
  if (!bt_exec(t, &y, 1, out)) return;
  // Reference: for every multi-index of the kept axes, the statistics over the normalized ones.
  int64_t total = fz_count(rank, dims);
  int64_t strides[CML_MAX_RANK], s = 1;
  for (int32_t d = rank - 1; d >= 0; --d) strides[d] = s, s *= dims[d];
  double* want = bt_alloc(t, (size_t)total * sizeof(double));
  int64_t n = fz_count(grank, gdims);
  for (int64_t e = 0; e < total; ++e) {
    // Only compute from the first element of each row (all normalized coordinates 0).
    bool first = true;
    for (int32_t d = 0; d < rank; ++d)
      if (norm[d] && (e / strides[d]) % dims[d] != 0) first = false;
    if (!first) continue;
    double sum = 0, sq = 0;
    for (int64_t j = 0; j < n; ++j) {
      int64_t off = e, rest = j;
      for (int32_t d = rank - 1; d >= 0; --d) {
        if (!norm[d]) continue;
        off += (rest % dims[d]) * strides[d];
        rest /= dims[d];
      }
      sum += x[off];
    }
    double mean = sum / (double)n;
    for (int64_t j = 0; j < n; ++j) {
      int64_t off = e, rest = j;
      for (int32_t d = rank - 1; d >= 0; --d) {
        if (!norm[d]) continue;
        off += (rest % dims[d]) * strides[d];
        rest /= dims[d];
      }
      sq += (x[off] - mean) * (x[off] - mean);
    }
    double r = 1.0 / sqrt(sq / (double)n + eps);
    for (int64_t j = 0; j < n; ++j) {
      int64_t off = e, rest = j;
      for (int32_t d = rank - 1; d >= 0; --d) {
        if (!norm[d]) continue;
        off += (rest % dims[d]) * strides[d];
        rest /= dims[d];
      }
      double v = (x[off] - mean) * r;
      if (g) v *= g[j];
      if (be) v += be[j];
      want[off] = v;
    }
  }
  fz_expect(t, "layer norm", &out[0], dt, rank, dims, want);
}

static void case_layer_norm_hand(bt_t* t) {
  if (!bt_require_dtype(t, CML_DTYPE_F32)) return;
  cml_function_t* f = bt_main(t);
  // Row [1, 2, 3, 4]: mean 2.5, variance 1.25; with eps 0 the normalized row is
  // [-3, -1, 1, 3] / sqrt(5); then * gamma 2 + beta 1.
  const int64_t dims[] = {1, 4};
  cml_value_t x = bt_param_f64(t, f, CML_DTYPE_F32, 2, dims, (double[]){1, 2, 3, 4});
  cml_value_t g = bt_param_f64(t, f, CML_DTYPE_F32, 1, (int64_t[]){4}, (double[]){2, 2, 2, 2});
  cml_value_t b = bt_param_f64(t, f, CML_DTYPE_F32, 1, (int64_t[]){4}, (double[]){1, 1, 1, 1});
  int64_t axis = -1;
  cml_value_t y = cml_op_fused_layer_norm(f, x, &axis, 1, 0.0, g, b);
  bt_tensor_t out[1];
  if (!bt_exec(t, &y, 1, out)) return;
  double r5 = 1 / sqrt(5.0);
  fz_expect(t, "layer norm", &out[0], CML_DTYPE_F32, 2, dims,
            (double[]){1 - 6 * r5, 1 - 2 * r5, 1 + 2 * r5, 1 + 6 * r5});
}

static void case_layer_norm_f32_last(bt_t* t) {
  fz_layer_norm_case(t, CML_DTYPE_F32, 3, (int64_t[]){2, 5, 24}, (int64_t[]){-1}, 1, 1e-5, true,
                     true);
}
static void case_layer_norm_f64_two_axes(bt_t* t) {
  fz_layer_norm_case(t, CML_DTYPE_F64, 3, (int64_t[]){3, 4, 5}, (int64_t[]){2, 0}, 2, 1e-6, false,
                     false);
}
static void case_layer_norm_f32_middle_gamma(bt_t* t) {
  fz_layer_norm_case(t, CML_DTYPE_F32, 3, (int64_t[]){4, 6, 3}, (int64_t[]){1}, 1, 1e-3, true,
                     false);
}
static void case_layer_norm_f32_beta_only(bt_t* t) {
  fz_layer_norm_case(t, CML_DTYPE_F32, 2, (int64_t[]){3, 16}, (int64_t[]){1}, 1, 0.1, false, true);
}
// f16 [1, 8] = 10000, 10008, ..., 10056 (exact in f16): the row sums to 80224, past f16's
// 65504, so statistics in f16 are inf and then NaN. Mean 10028, variance 336.
static void case_layer_norm_f16_large_row(bt_t* t) {
  if (!bt_require_dtype(t, CML_DTYPE_F16)) return;
  cml_function_t* f = bt_main(t);
  const int64_t dims[] = {1, 8};
  double x[8], want[8];
  for (int i = 0; i < 8; ++i) x[i] = 10000 + 8 * i;
  for (int i = 0; i < 8; ++i) want[i] = (x[i] - 10028) / sqrt(336 + 1e-3);
  cml_value_t xv = bt_param_f64(t, f, CML_DTYPE_F16, 2, dims, x);
  int64_t axis = -1;
  cml_value_t y =
      cml_op_fused_layer_norm(f, xv, &axis, 1, 1e-3, CML_VALUE_INVALID, CML_VALUE_INVALID);
  bt_tensor_t out[1];
  if (!bt_exec(t, &y, 1, out)) return;
  fz_expect(t, "layer norm", &out[0], CML_DTYPE_F16, 2, dims, want);
}
static void case_layer_norm_f16(bt_t* t) {
  fz_layer_norm_case(t, CML_DTYPE_F16, 2, (int64_t[]){4, 8}, (int64_t[]){1}, 1, 1e-3, true, true);
}

//===--- FusedDense ---===//

static void fz_dense_case(bt_t* t, cml_dtype_t dt, int32_t xrank, const int64_t* xdims,
                          int32_t out_axes, const int64_t* out_dims, cml_dense_layout_t layout,
                          cml_activation_t act, bool with_bias) {
  if (!bt_require_dtype(t, dt)) return;
  cml_function_t* f = bt_main(t);
  int64_t in = xdims[xrank - 1];
  int64_t wdims[CML_MAX_RANK];
  int32_t wrank = out_axes + 1;
  for (int32_t i = 0; i < out_axes; ++i) {
    wdims[layout == CML_DENSE_LAYOUT_INPUT_OUTPUTS ? i + 1 : i] = out_dims[i];
  }
  wdims[layout == CML_DENSE_LAYOUT_INPUT_OUTPUTS ? 0 : out_axes] = in;
  double *x, *w, *bias = NULL;
  cml_value_t xv = fz_param(t, f, dt, xrank, xdims, -1, 1, &x);
  cml_value_t wv = fz_param(t, f, dt, wrank, wdims, -1, 1, &w);
  cml_value_t bv =
      with_bias ? fz_param(t, f, dt, out_axes, out_dims, -1, 1, &bias) : CML_VALUE_INVALID;
  cml_dense_config_t cfg;
  cml_dense_config_init(&cfg);
  cfg.activation = act;
  cfg.weight_layout = layout;
  cml_value_t y = cml_op_fused_dense(f, xv, wv, bv, &cfg);
  bt_tensor_t out[1];
  if (!bt_exec(t, &y, 1, out)) return;
  int64_t m = fz_count(xrank - 1, xdims), n = fz_count(out_axes, out_dims);
  int64_t ydims[CML_MAX_RANK];
  for (int32_t i = 0; i + 1 < xrank; ++i) ydims[i] = xdims[i];
  for (int32_t i = 0; i < out_axes; ++i) ydims[xrank - 1 + i] = out_dims[i];
  double* want = bt_alloc(t, (size_t)(m * n > 0 ? m * n : 1) * sizeof(double));
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < in; ++k) {
        double wk = layout == CML_DENSE_LAYOUT_INPUT_OUTPUTS ? w[k * n + j] : w[j * in + k];
        acc += x[r * in + k] * wk;
      }
      if (bias) acc += bias[j];
      want[r * n + j] = fz_act(acc, act);
    }
  }
  fz_expect(t, "dense", &out[0], dt, xrank - 1 + out_axes, ydims, want);
}

static void case_dense_hand(bt_t* t) {
  if (!bt_require_dtype(t, CML_DTYPE_F32)) return;
  cml_function_t* f = bt_main(t);
  // x = [[1, 2]], W = [[1, -1], [2, -3]] -> x @ W = [5, -7]; + bias [1, 1] = [6, -6]; relu.
  cml_value_t x = bt_param_f64(t, f, CML_DTYPE_F32, 2, (int64_t[]){1, 2}, (double[]){1, 2});
  cml_value_t w = bt_param_f64(t, f, CML_DTYPE_F32, 2, (int64_t[]){2, 2}, (double[]){1, -1, 2, -3});
  cml_value_t b = bt_param_f64(t, f, CML_DTYPE_F32, 1, (int64_t[]){2}, (double[]){1, 1});
  cml_dense_config_t cfg;
  cml_dense_config_init(&cfg);
  cfg.activation = CML_ACTIVATION_RELU;
  cml_value_t y = cml_op_fused_dense(f, x, w, b, &cfg);
  bt_tensor_t out[1];
  if (!bt_exec(t, &y, 1, out)) return;
  bt_expect_f64(t, "dense", &out[0], CML_DTYPE_F32, 2, (int64_t[]){1, 2}, (double[]){6, 0}, 0);
}

static void case_dense_f32_none(bt_t* t) {
  fz_dense_case(t, CML_DTYPE_F32, 2, (int64_t[]){5, 7}, 1, (int64_t[]){3},
                CML_DENSE_LAYOUT_INPUT_OUTPUTS, CML_ACTIVATION_NONE, false);
}
static void case_dense_f32_gelu_batch(bt_t* t) {
  fz_dense_case(t, CML_DTYPE_F32, 3, (int64_t[]){2, 3, 16}, 1, (int64_t[]){9},
                CML_DENSE_LAYOUT_INPUT_OUTPUTS, CML_ACTIVATION_GELU, true);
}
static void case_dense_f32_relu_transposed(bt_t* t) {
  fz_dense_case(t, CML_DTYPE_F32, 2, (int64_t[]){6, 10}, 1, (int64_t[]){7},
                CML_DENSE_LAYOUT_OUTPUTS_INPUT, CML_ACTIVATION_RELU, true);
}
static void case_dense_f32_silu_two_out_axes(bt_t* t) {
  fz_dense_case(t, CML_DTYPE_F32, 2, (int64_t[]){4, 5}, 2, (int64_t[]){2, 3},
                CML_DENSE_LAYOUT_INPUT_OUTPUTS, CML_ACTIVATION_SILU, true);
}
static void case_dense_f64_hard_swish(bt_t* t) {
  fz_dense_case(t, CML_DTYPE_F64, 2, (int64_t[]){3, 8}, 1, (int64_t[]){5},
                CML_DENSE_LAYOUT_OUTPUTS_INPUT, CML_ACTIVATION_HARD_SWISH, true);
}
static void case_dense_f64_tanh_vector(bt_t* t) {
  fz_dense_case(t, CML_DTYPE_F64, 1, (int64_t[]){6}, 1, (int64_t[]){4},
                CML_DENSE_LAYOUT_INPUT_OUTPUTS, CML_ACTIVATION_TANH, false);
}
static void case_dense_bf16_relu(bt_t* t) {
  fz_dense_case(t, CML_DTYPE_BF16, 2, (int64_t[]){3, 8}, 1, (int64_t[]){4},
                CML_DENSE_LAYOUT_INPUT_OUTPUTS, CML_ACTIVATION_RELU, true);
}
static void case_dense_f16_none(bt_t* t) {
  fz_dense_case(t, CML_DTYPE_F16, 2, (int64_t[]){2, 4}, 1, (int64_t[]){3},
                CML_DENSE_LAYOUT_OUTPUTS_INPUT, CML_ACTIVATION_NONE, false);
}

//===--- FusedScaledDotProductAttention ---===//

typedef struct fz_sdpa_t {
  cml_dtype_t dtype;
  cml_attention_layout_t layout;
  int64_t batch, heads, kv_heads, seq, kv_seq, dim, v_dim;
  double scale;  // 0: default
  bool causal;
  int mask;   // 0 none, 1 Bool [S, Skv], 2 additive [B, 1, S, Skv]
  bool bias;  // additive [H, S, Skv]
  bool lengths;
} fz_sdpa_t;

// Offset of (b, h, s, d) in a tensor of |layout| with |heads| heads, |seq| positions, |dim|.
static int64_t fz_at(cml_attention_layout_t layout, int64_t heads, int64_t seq, int64_t dim,
                     int64_t b, int64_t h, int64_t s, int64_t d) {
  if (layout == CML_ATTENTION_LAYOUT_BHSD) return ((b * heads + h) * seq + s) * dim + d;
  return ((b * seq + s) * heads + h) * dim + d;
}

static void fz_sdpa_case(bt_t* t, const fz_sdpa_t* c) {
  if (!bt_require_dtype(t, c->dtype)) return;
  if (c->mask == 1 && !bt_require_dtype(t, CML_DTYPE_BOOL)) return;
  if (c->lengths && !bt_require_dtype(t, CML_DTYPE_I32)) return;
  cml_function_t* f = bt_main(t);
  const bool bhsd = c->layout == CML_ATTENTION_LAYOUT_BHSD;
  int64_t qd[4] = {c->batch, bhsd ? c->heads : c->seq, bhsd ? c->seq : c->heads, c->dim};
  int64_t kd[4] = {c->batch, bhsd ? c->kv_heads : c->kv_seq, bhsd ? c->kv_seq : c->kv_heads,
                   c->dim};
  int64_t vd[4] = {kd[0], kd[1], kd[2], c->v_dim};
  double *q, *k, *v, *mask = NULL, *bias = NULL;
  cml_value_t qv = fz_param(t, f, c->dtype, 4, qd, -1, 1, &q);
  cml_value_t kv = fz_param(t, f, c->dtype, 4, kd, -1, 1, &k);
  cml_value_t vv = fz_param(t, f, c->dtype, 4, vd, -1, 1, &v);
  cml_sdpa_config_t cfg;
  cml_sdpa_config_init(&cfg);
  cfg.scale = c->scale;
  cfg.causal = c->causal;
  const int64_t sk = c->seq * c->kv_seq;
  if (c->mask == 1) {
    // Row 0 of the mask attends nothing: its output must be zeros.
    mask = bt_alloc(t, (size_t)sk * sizeof(double));
    for (int64_t i = 0; i < sk; ++i) mask[i] = (i >= c->kv_seq) && (bt_rand_u64(t) % 3 != 0);
    cfg.mask = bt_param_f64(t, f, CML_DTYPE_BOOL, 2, (int64_t[]){c->seq, c->kv_seq}, mask);
  } else if (c->mask == 2) {
    cfg.mask =
        fz_param(t, f, c->dtype, 4, (int64_t[]){c->batch, 1, c->seq, c->kv_seq}, -2, 0, &mask);
  }
  if (c->bias) {
    cfg.bias = fz_param(t, f, c->dtype, 3, (int64_t[]){c->heads, c->seq, c->kv_seq}, -1, 1, &bias);
  }
  int64_t* qlen = NULL;
  int64_t* kvlen = NULL;
  if (c->lengths) {
    qlen = bt_alloc(t, (size_t)c->batch * sizeof(int64_t));
    kvlen = bt_alloc(t, (size_t)c->batch * sizeof(int64_t));
    for (int64_t b = 0; b < c->batch; ++b) {
      qlen[b] = c->seq - b % (c->seq + 1);
      kvlen[b] = c->kv_seq - (b + 1) % c->kv_seq;
    }
    cfg.query_seq_len = bt_param_i64(t, f, CML_DTYPE_I32, 1, &c->batch, qlen);
    cfg.kv_seq_len = bt_param_i64(t, f, CML_DTYPE_I32, 1, &c->batch, kvlen);
  }
  cml_value_t y = cml_op_fused_sdpa(f, qv, kv, vv, c->layout, &cfg, NULL, NULL);
  bt_tensor_t out[1];
  if (!bt_exec(t, &y, 1, out)) return;
  int64_t od[4] = {qd[0], qd[1], qd[2], c->v_dim};
  double* want = bt_alloc(t, (size_t)fz_count(4, od) * sizeof(double));
  double* p = bt_alloc(t, (size_t)c->kv_seq * sizeof(double));
  bool* on = bt_alloc(t, (size_t)c->kv_seq * sizeof(bool));
  const double scale = c->scale != 0 ? c->scale : 1.0 / sqrt((double)c->dim);
  const int64_t group = c->heads / c->kv_heads;
  for (int64_t b = 0; b < c->batch; ++b) {
    for (int64_t h = 0; h < c->heads; ++h) {
      int64_t hk = h / group;
      for (int64_t i = 0; i < c->seq; ++i) {
        double m = -INFINITY;
        for (int64_t j = 0; j < c->kv_seq; ++j) {
          double s = 0;
          for (int64_t d = 0; d < c->dim; ++d) {
            s += q[fz_at(c->layout, c->heads, c->seq, c->dim, b, h, i, d)] *
                 k[fz_at(c->layout, c->kv_heads, c->kv_seq, c->dim, b, hk, j, d)];
          }
          s *= scale;
          if (bias) s += bias[(h * c->seq + i) * c->kv_seq + j];
          if (c->mask == 2) s += mask[(b * c->seq + i) * c->kv_seq + j];
          on[j] = true;
          if (c->mask == 1 && mask[i * c->kv_seq + j] == 0) on[j] = false;
          if (c->causal && j > i) on[j] = false;
          if (kvlen && j >= kvlen[b]) on[j] = false;
          p[j] = s;
          if (on[j]) m = fmax(m, s);
        }
        double sum = 0;
        for (int64_t j = 0; j < c->kv_seq; ++j) {
          p[j] = on[j] ? exp(p[j] - m) : 0.0;
          sum += p[j];
        }
        bool zero_row = sum == 0 || (qlen && i >= qlen[b]);
        for (int64_t e = 0; e < c->v_dim; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < c->kv_seq && !zero_row; ++j) {
            acc += p[j] / sum * v[fz_at(c->layout, c->kv_heads, c->kv_seq, c->v_dim, b, hk, j, e)];
          }
          want[fz_at(c->layout, c->heads, c->seq, c->v_dim, b, h, i, e)] = acc;
        }
      }
    }
  }
  fz_expect(t, "attention", &out[0], c->dtype, 4, od, want);
}

static void case_sdpa_f32_basic(bt_t* t) {
  fz_sdpa_t c = {CML_DTYPE_F32, CML_ATTENTION_LAYOUT_BHSD, 2, 2, 2, 3, 5, 4, 4, 0, false, 0, false,
                 false};
  fz_sdpa_case(t, &c);
}
static void case_sdpa_f32_causal_gqa(bt_t* t) {
  fz_sdpa_t c = {CML_DTYPE_F32, CML_ATTENTION_LAYOUT_BHSD, 1, 4, 2, 5, 5, 8, 8, 0, true, 0, false,
                 false};
  fz_sdpa_case(t, &c);
}
static void case_sdpa_f32_bshd_scale_vdim(bt_t* t) {
  fz_sdpa_t c = {
      CML_DTYPE_F32, CML_ATTENTION_LAYOUT_BSHD, 2, 3, 1, 4, 6, 5, 3, 0.25, false, 0, false, false};
  fz_sdpa_case(t, &c);
}
static void case_sdpa_f32_bool_mask(bt_t* t) {
  fz_sdpa_t c = {CML_DTYPE_F32, CML_ATTENTION_LAYOUT_BHSD, 1, 2, 2, 4, 6, 4, 4, 0, false, 1, false,
                 false};
  fz_sdpa_case(t, &c);
}
static void case_sdpa_f64_additive_mask_bias(bt_t* t) {
  fz_sdpa_t c = {CML_DTYPE_F64, CML_ATTENTION_LAYOUT_BSHD, 2, 2, 1, 3, 4, 4, 2, 0, true, 2, true,
                 false};
  fz_sdpa_case(t, &c);
}
static void case_sdpa_f32_lengths(bt_t* t) {
  fz_sdpa_t c = {CML_DTYPE_F32, CML_ATTENTION_LAYOUT_BHSD, 3, 2, 1, 4, 5, 4, 4, 0, false, 0, false,
                 true};
  fz_sdpa_case(t, &c);
}

//===--- FusedAttentionQKVProjection ---===//

static void fz_qkv_case(bt_t* t, cml_dtype_t dt, int64_t batch, int64_t in, int64_t qdim,
                        int64_t kvdim, bool biases) {
  if (!bt_require_dtype(t, dt)) return;
  cml_function_t* f = bt_main(t);
  int64_t total = qdim + 2 * kvdim;
  double *x, *w, *bq = NULL, *bk = NULL, *bv = NULL;
  cml_value_t xv = fz_param(t, f, dt, 2, (int64_t[]){batch, in}, -1, 1, &x);
  cml_value_t wv = fz_param(t, f, dt, 2, (int64_t[]){in, total}, -1, 1, &w);
  cml_value_t bqv = CML_VALUE_INVALID, bvv = CML_VALUE_INVALID;
  if (biases) {
    bqv = fz_param(t, f, dt, 1, &qdim, -1, 1, &bq);
    bvv = fz_param(t, f, dt, 1, &kvdim, -1, 1, &bv);
  }
  cml_value_t outs[3];
  cml_op_fused_attention_qkv_projection(f, xv, wv, bqv, CML_VALUE_INVALID, bvv, qdim, kvdim, outs);
  bt_tensor_t out[3];
  if (!bt_exec(t, outs, 3, out)) return;
  const int64_t widths[3] = {qdim, kvdim, kvdim};
  const double* bs[3] = {bq, bk, bv};
  int64_t start = 0;
  static const char* const names[3] = {"q", "k", "v"};
  for (int p = 0; p < 3; ++p) {
    double* want = bt_alloc(t, (size_t)(batch * widths[p] + 1) * sizeof(double));
    for (int64_t r = 0; r < batch; ++r) {
      for (int64_t j = 0; j < widths[p]; ++j) {
        double acc = bs[p] ? bs[p][j] : 0;
        for (int64_t i = 0; i < in; ++i) acc += x[r * in + i] * w[i * total + start + j];
        want[r * widths[p] + j] = acc;
      }
    }
    fz_expect(t, names[p], &out[p], dt, 2, (int64_t[]){batch, widths[p]}, want);
    start += widths[p];
  }
}

static void case_qkv_f32_biases(bt_t* t) { fz_qkv_case(t, CML_DTYPE_F32, 3, 8, 6, 4, true); }
static void case_qkv_f64_plain(bt_t* t) { fz_qkv_case(t, CML_DTYPE_F64, 2, 5, 4, 2, false); }

//===--- a block: layer norm -> dense(gelu) -> dense -> softmax, in a closure ---===//

static void case_fused_in_closure(bt_t* t) {
  if (!bt_require_dtype(t, CML_DTYPE_F32) || !bt_require_functions(t)) return;
  cml_function_t* f = bt_main(t);
  double* x;
  cml_value_t xv = fz_param(t, f, CML_DTYPE_F32, 2, (int64_t[]){2, 4}, -1, 1, &x);
  cml_function_t* c = NULL;
  if (!bt_ok(t, cml_function_new_closure(f, &c), "closure")) return;
  // The closure uses x from main (an implicit capture) and returns softmax(gelu(x)).
  cml_value_t r = cml_op_fused_softmax(c, cml_op_fused_gelu(c, xv, true), 1);
  if (!bt_ok(t, cml_function_return(c, &r, 1), "closure return")) return;
  cml_value_t y;
  cml_op_call(f, c, NULL, 0, &y);
  bt_tensor_t out[1];
  if (!bt_exec(t, &y, 1, out)) return;
  double want[8];
  for (int r0 = 0; r0 < 2; ++r0) {
    double sum = 0, g[4];
    for (int j = 0; j < 4; ++j) sum += exp(g[j] = fz_gelu(x[r0 * 4 + j], true));
    for (int j = 0; j < 4; ++j) want[r0 * 4 + j] = exp(g[j]) / sum;
  }
  fz_expect(t, "softmax(gelu(x))", &out[0], CML_DTYPE_F32, 2, (int64_t[]){2, 4}, want);
}

//===--- argument errors ---===//

static cml_value_t fz_named(cml_function_t* f, const char* name, cml_dtype_t dt, int32_t rank,
                            const int64_t* dims) {
  cml_shape_t s = cml_shape_make(dt, rank, dims);
  return cml_parameter(f, name, &s);
}

static void case_error_softmax_axis(bt_t* t) {
  if (!bt_require_dtype(t, CML_DTYPE_F32)) return;
  cml_function_t* f = bt_main(t);
  cml_value_t x = fz_named(f, "x", CML_DTYPE_F32, 2, (int64_t[]){2, 3});
  if (cml_op_fused_softmax(f, x, 2) != CML_VALUE_INVALID) bt_fail(t, "softmax axis 2 accepted");
  bt_expect_builder_error(t, CML_STATUS_INVALID_ARGUMENT,
                          (const char* const[]){"FusedSoftmax", "axis 2", "[2, 3]", NULL});
}

static void case_error_softmax_dtype(bt_t* t) {
  if (!bt_require_dtype(t, CML_DTYPE_I32)) return;
  cml_function_t* f = bt_main(t);
  cml_value_t x = fz_named(f, "x", CML_DTYPE_I32, 1, (int64_t[]){3});
  if (cml_op_fused_softmax(f, x, 0) != CML_VALUE_INVALID) bt_fail(t, "Int32 softmax accepted");
  bt_expect_builder_error(t, CML_STATUS_INVALID_ARGUMENT,
                          (const char* const[]){"FusedSoftmax", "Int32", "[3]", NULL});
}

static void case_error_layer_norm_gamma(bt_t* t) {
  if (!bt_require_dtype(t, CML_DTYPE_F32)) return;
  cml_function_t* f = bt_main(t);
  cml_value_t x = fz_named(f, "x", CML_DTYPE_F32, 2, (int64_t[]){2, 4});
  cml_value_t g = fz_named(f, "g", CML_DTYPE_F32, 1, (int64_t[]){3});
  int64_t axis = 1;
  if (cml_op_fused_layer_norm(f, x, &axis, 1, 1e-5, g, CML_VALUE_INVALID) != CML_VALUE_INVALID)
    bt_fail(t, "gamma [3] accepted for x [2, 4]");
  bt_expect_builder_error(t, CML_STATUS_INVALID_ARGUMENT,
                          (const char* const[]){"FusedLayerNorm", "gamma", "[3]", "[2, 4]", NULL});
}

static void case_error_dense_inputs(bt_t* t) {
  if (!bt_require_dtype(t, CML_DTYPE_F32)) return;
  cml_function_t* f = bt_main(t);
  cml_value_t x = fz_named(f, "x", CML_DTYPE_F32, 2, (int64_t[]){2, 4});
  cml_value_t w = fz_named(f, "w", CML_DTYPE_F32, 2, (int64_t[]){5, 3});
  if (cml_op_fused_dense(f, x, w, CML_VALUE_INVALID, NULL) != CML_VALUE_INVALID)
    bt_fail(t, "x [2, 4] @ W [5, 3] accepted");
  bt_expect_builder_error(t, CML_STATUS_INVALID_ARGUMENT,
                          (const char* const[]){"FusedDense", "[2, 4]", "[5, 3]", NULL});
}

static void case_error_sdpa_heads(bt_t* t) {
  if (!bt_require_dtype(t, CML_DTYPE_F32)) return;
  cml_function_t* f = bt_main(t);
  cml_value_t q = fz_named(f, "q", CML_DTYPE_F32, 4, (int64_t[]){1, 3, 2, 4});
  cml_value_t k = fz_named(f, "k", CML_DTYPE_F32, 4, (int64_t[]){1, 2, 2, 4});
  if (cml_op_fused_sdpa(f, q, k, k, CML_ATTENTION_LAYOUT_BHSD, NULL, NULL, NULL) !=
      CML_VALUE_INVALID)
    bt_fail(t, "3 heads over 2 kv heads accepted");
  bt_expect_builder_error(t, CML_STATUS_INVALID_ARGUMENT,
                          (const char* const[]){"FusedScaledDotProductAttention", "[1, 3, 2, 4]",
                                                "[1, 2, 2, 4]", NULL});
}

const bt_case_t bt_cases_fused[] = {
    {"softmax_hand", CML_OP_FUSED_SOFTMAX, case_softmax_hand},
    {"softmax_f32_last_axis", CML_OP_FUSED_SOFTMAX, case_softmax_f32_last},
    {"softmax_f32_middle_axis", CML_OP_FUSED_SOFTMAX, case_softmax_f32_middle},
    {"softmax_f64_first_axis", CML_OP_FUSED_SOFTMAX, case_softmax_f64_first},
    {"softmax_f32_large_values", CML_OP_FUSED_SOFTMAX, case_softmax_f32_large},
    {"softmax_f16", CML_OP_FUSED_SOFTMAX, case_softmax_f16},
    {"softmax_bf16", CML_OP_FUSED_SOFTMAX, case_softmax_bf16},
    {"softmax_bf16_long_row", CML_OP_FUSED_SOFTMAX, case_softmax_bf16_long_row},
    {"gelu_hand", CML_OP_FUSED_GELU, case_gelu_hand},
    {"gelu_f32_exact", CML_OP_FUSED_GELU, case_gelu_f32_exact},
    {"gelu_f32_approx", CML_OP_FUSED_GELU, case_gelu_f32_approx},
    {"gelu_f64_approx", CML_OP_FUSED_GELU, case_gelu_f64_approx},
    {"gelu_bf16_exact", CML_OP_FUSED_GELU, case_gelu_bf16_exact},
    {"gelu_f16_empty", CML_OP_FUSED_GELU, case_gelu_f16_empty},
    {"layer_norm_hand", CML_OP_FUSED_LAYER_NORM, case_layer_norm_hand},
    {"layer_norm_f32_last_axis", CML_OP_FUSED_LAYER_NORM, case_layer_norm_f32_last},
    {"layer_norm_f64_two_axes", CML_OP_FUSED_LAYER_NORM, case_layer_norm_f64_two_axes},
    {"layer_norm_f32_middle_gamma", CML_OP_FUSED_LAYER_NORM, case_layer_norm_f32_middle_gamma},
    {"layer_norm_f32_beta_only", CML_OP_FUSED_LAYER_NORM, case_layer_norm_f32_beta_only},
    {"layer_norm_f16", CML_OP_FUSED_LAYER_NORM, case_layer_norm_f16},
    {"layer_norm_f16_large_row", CML_OP_FUSED_LAYER_NORM, case_layer_norm_f16_large_row},
    {"dense_hand", CML_OP_FUSED_DENSE, case_dense_hand},
    {"dense_f32_none", CML_OP_FUSED_DENSE, case_dense_f32_none},
    {"dense_f32_gelu_batch", CML_OP_FUSED_DENSE, case_dense_f32_gelu_batch},
    {"dense_f32_relu_outputs_input", CML_OP_FUSED_DENSE, case_dense_f32_relu_transposed},
    {"dense_f32_silu_two_out_axes", CML_OP_FUSED_DENSE, case_dense_f32_silu_two_out_axes},
    {"dense_f64_hard_swish", CML_OP_FUSED_DENSE, case_dense_f64_hard_swish},
    {"dense_f64_tanh_vector", CML_OP_FUSED_DENSE, case_dense_f64_tanh_vector},
    {"dense_bf16_relu", CML_OP_FUSED_DENSE, case_dense_bf16_relu},
    {"dense_f16_none", CML_OP_FUSED_DENSE, case_dense_f16_none},
    {"sdpa_f32_basic", CML_OP_FUSED_SDPA, case_sdpa_f32_basic},
    {"sdpa_f32_causal_gqa", CML_OP_FUSED_SDPA, case_sdpa_f32_causal_gqa},
    {"sdpa_f32_bshd_scale_vdim", CML_OP_FUSED_SDPA, case_sdpa_f32_bshd_scale_vdim},
    {"sdpa_f32_bool_mask", CML_OP_FUSED_SDPA, case_sdpa_f32_bool_mask},
    {"sdpa_f64_additive_mask_bias", CML_OP_FUSED_SDPA, case_sdpa_f64_additive_mask_bias},
    {"sdpa_f32_lengths", CML_OP_FUSED_SDPA, case_sdpa_f32_lengths},
    {"qkv_f32_biases", CML_OP_FUSED_ATTENTION_QKV_PROJECTION, case_qkv_f32_biases},
    {"qkv_f64_plain", CML_OP_FUSED_ATTENTION_QKV_PROJECTION, case_qkv_f64_plain},
    {"in_closure", CML_OP_FUSED_SOFTMAX, case_fused_in_closure},
    {"error_softmax_axis", CML_OP_FUSED_SOFTMAX, case_error_softmax_axis},
    {"error_softmax_dtype", CML_OP_FUSED_SOFTMAX, case_error_softmax_dtype},
    {"error_layer_norm_gamma", CML_OP_FUSED_LAYER_NORM, case_error_layer_norm_gamma},
    {"error_dense_inputs", CML_OP_FUSED_DENSE, case_error_dense_inputs},
    {"error_sdpa_heads", CML_OP_FUSED_SDPA, case_error_sdpa_heads},
};
const size_t bt_cases_fused_count = sizeof bt_cases_fused / sizeof bt_cases_fused[0];
