// SPDX-License-Identifier: Apache-2.0
// backendtest/cases_window.c: compliance cases of the "window" group: ReduceWindow and
// SelectAndScatterMax/Min/Sum (XLA semantics).
//
// Each case sweeps the integer and float dtypes the backend supports, with small integer values
// whose sums and products stay exact in every dtype (f16 and bf16 included), and compares with a
// reference that walks the padded, dilated input directly. Padding contributes the reduction's
// identity (-inf / +inf, the integer limits) and is never selected.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backendtest/bt.h"

static const cml_dtype_t cw_dtypes[] = {
    CML_DTYPE_I8,  CML_DTYPE_I16, CML_DTYPE_I32, CML_DTYPE_I64,  CML_DTYPE_U8,  CML_DTYPE_U16,
    CML_DTYPE_U32, CML_DTYPE_U64, CML_DTYPE_F16, CML_DTYPE_BF16, CML_DTYPE_F32, CML_DTYPE_F64};
#define CW_DTYPE_COUNT (sizeof cw_dtypes / sizeof cw_dtypes[0])

static bool cw_has_dtype(bt_t* t, cml_dtype_t dtype) {
  return cml_capabilities_has_dtype(cml_backend_capabilities(bt_backend(t)), dtype);
}

static int64_t cw_count(int32_t rank, const int64_t* dims) {
  int64_t n = 1;
  for (int32_t i = 0; i < rank; ++i) n *= dims[i];
  return n;
}

static int64_t cw_out_dim(int64_t in, const cml_window_config_t* w, int32_t d) {
  int64_t padded =
      (in == 0 ? 0 : (in - 1) * w->input_dilations[d] + 1) + w->padding_low[d] + w->padding_high[d];
  int64_t eff = (w->window_dims[d] - 1) * w->window_dilations[d] + 1;
  return padded < eff ? 0 : (padded - eff) / w->strides[d] + 1;
}

// Small values: products use {1, 2} (and -1 for signed/float), others -8..7 (0..15 unsigned).
static int64_t cw_value(cml_dtype_t dt, int64_t i, int64_t seed, bool for_product) {
  int64_t raw = (i * 37 + seed * 11 + 5) % 97;
  bool is_unsigned = cml_dtype_is_unsigned_int(dt);
  if (for_product) return is_unsigned ? 1 + raw % 2 : (raw % 3 == 2 ? -1 : 1 + raw % 2);
  return is_unsigned ? raw % 16 : raw % 16 - 8;
}

// The input element a window position reads (flat index), or -1 for padding and holes.
static int64_t cw_source(int32_t rank, const int64_t* dims, const cml_window_config_t* w,
                         const int64_t* o, const int64_t* k) {
  int64_t flat = 0;
  for (int32_t d = 0; d < rank; ++d) {
    int64_t p = o[d] * w->strides[d] + k[d] * w->window_dilations[d] - w->padding_low[d];
    if (p < 0 || p % w->input_dilations[d] != 0 || p / w->input_dilations[d] >= dims[d]) return -1;
    flat = flat * dims[d] + p / w->input_dilations[d];
  }
  return flat;
}

static void cw_unflat(int32_t rank, const int64_t* dims, int64_t i, int64_t* idx) {
  for (int32_t d = rank - 1; d >= 0; --d) {
    idx[d] = i % dims[d];
    i /= dims[d];
  }
}

static int64_t cw_int_limit(cml_dtype_t dt, bool max) {
  int bits = cml_dtype_bits(dt);
  if (cml_dtype_is_unsigned_int(dt)) return max ? (bits == 64 ? -1 : ((int64_t)1 << bits) - 1) : 0;
  if (bits == 64) return max ? INT64_MAX : INT64_MIN;
  return max ? ((int64_t)1 << (bits - 1)) - 1 : -((int64_t)1 << (bits - 1));
}

typedef struct cw_rw_case_t {
  int32_t rank;
  int64_t dims[4];
  cml_window_config_t w;
} cw_rw_case_t;

static void cw_rw_config(cw_rw_case_t* c, int32_t rank, const int64_t* dims, const int64_t* win,
                         const int64_t* strides, const int64_t* base, const int64_t* wdil,
                         const int64_t* lo, const int64_t* hi) {
  memset(c, 0, sizeof *c);
  c->rank = rank;
  c->w.rank = rank;
  for (int32_t d = 0; d < rank; ++d) {
    c->dims[d] = dims[d];
    c->w.window_dims[d] = win[d];
    c->w.strides[d] = strides[d];
    c->w.input_dilations[d] = base[d];
    c->w.window_dilations[d] = wdil[d];
    c->w.padding_low[d] = lo[d];
    c->w.padding_high[d] = hi[d];
  }
}

//===--- ReduceWindow ---===//

static void cw_run_reduce_window(bt_t* t, const cw_rw_case_t* c, cml_dtype_t dt,
                                 cml_reduce_type_t type) {
  bt_new_builder(t);
  cml_function_t* f = bt_main(t);
  const int32_t r = c->rank;
  const int64_t n = cw_count(r, c->dims);
  const bool is_float = cml_dtype_is_float(dt);
  int64_t* v = bt_alloc(t, (size_t)(n + 1) * sizeof(int64_t));
  for (int64_t i = 0; i < n; ++i) v[i] = cw_value(dt, i, type, type == CML_REDUCE_PRODUCT);
  bt_tensor_t x = bt_tensor_i64(t, dt, r, c->dims, v);
  cml_value_t y = cml_op_reduce_window(f, bt_param(t, f, &x), type, &c->w);
  bt_tensor_t out[1];
  if (!bt_exec(t, &y, 1, out)) return;
  int64_t od[CML_MAX_RANK], wd[CML_MAX_RANK];
  for (int32_t d = 0; d < r; ++d) {
    od[d] = cw_out_dim(c->dims[d], &c->w, d);
    wd[d] = c->w.window_dims[d];
  }
  const int64_t no = cw_count(r, od), nw = cw_count(r, wd);
  double* wf = bt_alloc(t, (size_t)(no + 1) * sizeof(double));
  int64_t* wi = bt_alloc(t, (size_t)(no + 1) * sizeof(int64_t));
  for (int64_t o = 0; o < no; ++o) {
    int64_t oi[CML_MAX_RANK], ki[CML_MAX_RANK];
    cw_unflat(r, od, o, oi);
    int64_t acc = type == CML_REDUCE_SUM ? 0 : (type == CML_REDUCE_PRODUCT ? 1 : 0);
    bool any = false;
    for (int64_t k = 0; k < nw; ++k) {
      cw_unflat(r, wd, k, ki);
      int64_t s = cw_source(r, c->dims, &c->w, oi, ki);
      if (s < 0) continue;
      int64_t e = v[s];
      if (type == CML_REDUCE_SUM)
        acc += e;
      else if (type == CML_REDUCE_PRODUCT)
        acc *= e;
      else if (!any)
        acc = e;
      else if (type == CML_REDUCE_MAX)
        acc = e > acc ? e : acc;
      else
        acc = e < acc ? e : acc;
      any = true;
    }
    wf[o] = (double)acc;
    wi[o] = acc;
    if (!any && (type == CML_REDUCE_MAX || type == CML_REDUCE_MIN)) {
      wf[o] = type == CML_REDUCE_MAX ? -INFINITY : INFINITY;
      wi[o] = cw_int_limit(dt, type == CML_REDUCE_MIN);
    }
  }
  bt_tensor_t want = is_float ? bt_tensor_f64(t, dt, r, od, wf) : bt_tensor_i64(t, dt, r, od, wi);
  char what[96];
  snprintf(what, sizeof what, "%s %s", cml_reduce_type_name(type), cml_dtype_name(dt));
  bt_expect_equal(t, what, &out[0], &want);
}

static void case_reduce_window_all_dtypes(bt_t* t) {
  if (!bt_require_op(t, CML_OP_REDUCE_WINDOW)) return;
  cw_rw_case_t cases[4];
  {
    int64_t dims[] = {5, 7}, win[] = {2, 3}, st[] = {2, 1}, base[] = {1, 2}, wdil[] = {2, 1},
            lo[] = {1, 0}, hi[] = {0, 2};
    cw_rw_config(&cases[0], 2, dims, win, st, base, wdil, lo, hi);
  }
  {
    int64_t dims[] = {3, 4, 5}, win[] = {1, 2, 3}, st[] = {1, 2, 2}, one[] = {1, 1, 1},
            zero[] = {0, 0, 0};
    cw_rw_config(&cases[1], 3, dims, win, st, one, one, zero, zero);
  }
  {
    // Leading windows that hold only padding, and a negative (cropping) high padding.
    int64_t dims[] = {4}, win[] = {2}, st[] = {1}, one[] = {1}, lo[] = {3}, hi[] = {-1};
    cw_rw_config(&cases[2], 1, dims, win, st, one, one, lo, hi);
  }
  {
    // Zero-size axis.
    int64_t dims[] = {0, 3}, win[] = {1, 2}, st[] = {1, 1}, one[] = {1, 1}, zero[] = {0, 0};
    cw_rw_config(&cases[3], 2, dims, win, st, one, one, zero, zero);
  }
  static const cml_reduce_type_t types[] = {CML_REDUCE_SUM, CML_REDUCE_PRODUCT, CML_REDUCE_MAX,
                                            CML_REDUCE_MIN};
  for (size_t c = 0; c < 4; ++c)
    for (size_t ty = 0; ty < 4; ++ty)
      for (size_t k = 0; k < CW_DTYPE_COUNT && !bt_failed(t); ++k) {
        if (!cw_has_dtype(t, cw_dtypes[k])) continue;
        cw_run_reduce_window(t, &cases[c], cw_dtypes[k], types[ty]);
      }
}

// Base dilation on rows long enough that xla:cpu's own compile of a base-dilated reduce_window
// lost the holes ([1, 3, 2, 1096], dilation 2 on the last axis, a stride-2 window on axis 2):
// the holes hold the init value.
static void case_reduce_window_base_dilation_long_rows(bt_t* t) {
  if (!bt_require_op(t, CML_OP_REDUCE_WINDOW) || !bt_require_dtype(t, CML_DTYPE_F32)) return;
  cw_rw_case_t c;
  int64_t dims[] = {1, 3, 2, 1096}, win[] = {1, 1, 2, 1}, st[] = {1, 1, 2, 1},
          base[] = {1, 1, 1, 2}, one[] = {1, 1, 1, 1}, zero[] = {0, 0, 0, 0};
  cw_rw_config(&c, 4, dims, win, st, base, one, zero, zero);
  cw_run_reduce_window(t, &c, CML_DTYPE_F32, CML_REDUCE_SUM);
  if (!bt_failed(t)) cw_run_reduce_window(t, &c, CML_DTYPE_F32, CML_REDUCE_MAX);
}

static void case_reduce_window_float_edges(bt_t* t) {
  if (!bt_require_op(t, CML_OP_REDUCE_WINDOW) || !bt_require_dtype(t, CML_DTYPE_F32)) return;
  cml_function_t* f = bt_main(t);
  int64_t d5[] = {5}, d4[] = {4};
  cml_value_t x = bt_param_f64(t, f, CML_DTYPE_F32, 1, d5, (double[]){1, NAN, 2, -INFINITY, -0.0});
  cml_window_config_t w;
  memset(&w, 0, sizeof w);
  w.rank = 1;
  w.window_dims[0] = 2;
  w.strides[0] = 1;
  cml_value_t ymax = cml_op_reduce_window(f, x, CML_REDUCE_MAX, &w);
  cml_value_t ymin = cml_op_reduce_window(f, x, CML_REDUCE_MIN, &w);
  cml_value_t ysum = cml_op_reduce_window(f, x, CML_REDUCE_SUM, &w);
  // A scalar operand: rank-0 window config.
  cml_value_t s = bt_param_f64(t, f, CML_DTYPE_F32, 0, NULL, (double[]){3.5});
  cml_window_config_t w0;
  memset(&w0, 0, sizeof w0);
  cml_value_t ys = cml_op_reduce_window(f, s, CML_REDUCE_PRODUCT, &w0);
  cml_value_t outs[4] = {ymax, ymin, ysum, ys};
  bt_tensor_t out[4];
  if (!bt_exec(t, outs, 4, out)) return;
  bt_expect_f64(t, "max", &out[0], CML_DTYPE_F32, 1, d4, (double[]){NAN, NAN, 2, -0.0}, 0);
  bt_expect_f64(t, "min", &out[1], CML_DTYPE_F32, 1, d4, (double[]){NAN, NAN, -INFINITY, -INFINITY},
                0);
  bt_expect_f64(t, "sum", &out[2], CML_DTYPE_F32, 1, d4, (double[]){NAN, NAN, -INFINITY, -INFINITY},
                0);
  bt_expect_f64(t, "scalar", &out[3], CML_DTYPE_F32, 0, NULL, (double[]){3.5}, 0);
}

// Float16/BFloat16 window sums and products accumulate in Float32 and round once (as Reduce):
// running sums and products (window 3, padding 2 below). Float16: 65504 + 100 overflows (inf)
// but 65504 + 100 - 65504 is 100, where an f16 accumulator stays at inf; BFloat16 (8 bits):
// 256 + 1 + 1 is 258, where a bf16 accumulator rounds 257 to 256 twice.
static void case_reduce_window_half_accumulate(bt_t* t) {
  if (!bt_require_op(t, CML_OP_REDUCE_WINDOW)) return;
  const cml_dtype_t dtypes[2] = {CML_DTYPE_F16, CML_DTYPE_BF16};
  for (int k = 0; k < 2; ++k) {
    const cml_dtype_t dt = dtypes[k];
    if (!cml_capabilities_has_dtype(cml_backend_capabilities(bt_backend(t)), dt)) continue;
    const bool f16 = dt == CML_DTYPE_F16;
    bt_new_builder(t);
    cml_function_t* f = bt_main(t);
    int64_t d3[] = {3};
    cml_value_t xs =
        bt_param_f64(t, f, dt, 1, d3, f16 ? (double[]){65504, 100, -65504} : (double[]){256, 1, 1});
    cml_value_t xp = bt_param_f64(t, f, dt, 1, d3, (double[]){1024, 1024, 1.0 / 1024});
    cml_window_config_t w;
    memset(&w, 0, sizeof w);
    w.rank = 1;
    w.window_dims[0] = 3;
    w.strides[0] = 1;
    w.padding_low[0] = 2;
    cml_value_t y[2] = {cml_op_reduce_window(f, xs, CML_REDUCE_SUM, &w),
                        cml_op_reduce_window(f, xp, CML_REDUCE_PRODUCT, &w)};
    bt_tensor_t out[2];
    if (!bt_exec(t, y, 2, out)) return;
    char what[64];
    snprintf(what, sizeof what, "%s running sum", cml_dtype_name(dt));
    bt_expect_f64(t, what, &out[0], dt, 1, d3,
                  f16 ? (double[]){65504, INFINITY, 100} : (double[]){256, 256, 258}, 0);
    snprintf(what, sizeof what, "%s running product", cml_dtype_name(dt));
    bt_expect_f64(t, what, &out[1], dt, 1, d3, (double[]){1024, f16 ? INFINITY : 1048576, 1024}, 0);
  }
}

// Max and Min order -0 below +0 (XLA's maximum / minimum) on every float dtype the backend has,
// through a 1-D window, an NHWC pooling window ([1, 2, 2, 16], window [1, 2, 2, 1]) and an
// NCHW one ([1, 16, 2, 2], window [1, 1, 2, 2]). Channel c reads the four zeros of pattern
// c % 4: all -0, one +0, three +0, all +0.
static void case_reduce_window_signed_zeros(bt_t* t) {
  if (!bt_require_op(t, CML_OP_REDUCE_WINDOW)) return;
  static const cml_dtype_t dts[] = {CML_DTYPE_F16, CML_DTYPE_BF16, CML_DTYPE_F32, CML_DTYPE_F64};
  static const double pat[4][4] = {{-0.0, -0.0, -0.0, -0.0},
                                   {-0.0, 0.0, -0.0, -0.0},
                                   {0.0, 0.0, 0.0, -0.0},
                                   {0.0, 0.0, 0.0, 0.0}};
  for (size_t d = 0; d < sizeof dts / sizeof dts[0]; ++d) {
    const cml_dtype_t dt = dts[d];
    if (!cw_has_dtype(t, dt)) continue;
    bt_new_builder(t);
    cml_function_t* f = bt_main(t);
    int64_t d8[] = {8}, d4[] = {4};
    cml_value_t x1 =
        bt_param_f64(t, f, dt, 1, d8, (double[]){-0.0, 0.0, 0.0, -0.0, -0.0, -0.0, 0.0, 0.0});
    double nhwc[64], nchw[64];
    for (int c = 0; c < 16; ++c) {
      for (int p = 0; p < 4; ++p) {
        nhwc[p * 16 + c] = pat[c % 4][p];
        nchw[c * 4 + p] = pat[c % 4][p];
      }
    }
    int64_t dn[] = {1, 2, 2, 16}, dc[] = {1, 16, 2, 2};
    cml_value_t xn = bt_param_f64(t, f, dt, 4, dn, nhwc);
    cml_value_t xc = bt_param_f64(t, f, dt, 4, dc, nchw);
    cml_window_config_t w1, wn, wc;
    memset(&w1, 0, sizeof w1);
    w1.rank = 1;
    w1.window_dims[0] = 2;
    w1.strides[0] = 2;
    memset(&wn, 0, sizeof wn);
    wn.rank = 4;
    memcpy(wn.window_dims, (int64_t[]){1, 2, 2, 1}, 4 * sizeof(int64_t));
    memcpy(wn.strides, (int64_t[]){1, 1, 1, 1}, 4 * sizeof(int64_t));
    memset(&wc, 0, sizeof wc);
    wc.rank = 4;
    memcpy(wc.window_dims, (int64_t[]){1, 1, 2, 2}, 4 * sizeof(int64_t));
    memcpy(wc.strides, (int64_t[]){1, 1, 1, 1}, 4 * sizeof(int64_t));
    cml_value_t outs[6];
    for (int m = 0; m < 2; ++m) {
      const cml_reduce_type_t type = m == 0 ? CML_REDUCE_MAX : CML_REDUCE_MIN;
      outs[3 * m] = cml_op_reduce_window(f, x1, type, &w1);
      outs[3 * m + 1] = cml_op_reduce_window(f, xn, type, &wn);
      outs[3 * m + 2] = cml_op_reduce_window(f, xc, type, &wc);
    }
    bt_tensor_t out[6];
    if (!bt_exec(t, outs, 6, out)) return;
    static const double pmax[4] = {-0.0, 0.0, 0.0, 0.0}, pmin[4] = {-0.0, -0.0, -0.0, 0.0};
    double wmax[16], wmin[16];
    for (int c = 0; c < 16; ++c) {
      wmax[c] = pmax[c % 4];
      wmin[c] = pmin[c % 4];
    }
    int64_t on[] = {1, 1, 1, 16}, oc[] = {1, 16, 1, 1};
    char what[64];
    snprintf(what, sizeof what, "max 1-D %s", cml_dtype_name(dt));
    bt_expect_f64(t, what, &out[0], dt, 1, d4, (double[]){0.0, 0.0, -0.0, 0.0}, 0);
    snprintf(what, sizeof what, "max NHWC %s", cml_dtype_name(dt));
    bt_expect_f64(t, what, &out[1], dt, 4, on, wmax, 0);
    snprintf(what, sizeof what, "max NCHW %s", cml_dtype_name(dt));
    bt_expect_f64(t, what, &out[2], dt, 4, oc, wmax, 0);
    snprintf(what, sizeof what, "min 1-D %s", cml_dtype_name(dt));
    bt_expect_f64(t, what, &out[3], dt, 1, d4, (double[]){-0.0, -0.0, -0.0, 0.0}, 0);
    snprintf(what, sizeof what, "min NHWC %s", cml_dtype_name(dt));
    bt_expect_f64(t, what, &out[4], dt, 4, on, wmin, 0);
    snprintf(what, sizeof what, "min NCHW %s", cml_dtype_name(dt));
    bt_expect_f64(t, what, &out[5], dt, 4, oc, wmin, 0);
  }
}

//===--- SelectAndScatter ---===//

static void cw_run_select_and_scatter(bt_t* t, cml_op_t op, const cw_rw_case_t* c, cml_dtype_t dt) {
  bt_new_builder(t);
  cml_function_t* f = bt_main(t);
  const int32_t r = c->rank;
  const int64_t n = cw_count(r, c->dims);
  int64_t sd[CML_MAX_RANK], wd[CML_MAX_RANK];
  for (int32_t d = 0; d < r; ++d) {
    sd[d] = cw_out_dim(c->dims[d], &c->w, d);
    wd[d] = c->w.window_dims[d];
  }
  const int64_t ns = cw_count(r, sd), nw = cw_count(r, wd);
  int64_t* v = bt_alloc(t, (size_t)(n + 1) * sizeof(int64_t));
  int64_t* src = bt_alloc(t, (size_t)(ns + 1) * sizeof(int64_t));
  for (int64_t i = 0; i < n; ++i) v[i] = cw_value(dt, i, 3, false) / 3;  // many ties
  for (int64_t i = 0; i < ns; ++i) src[i] = 1 + (i * 5) % 7;
  bt_tensor_t x = bt_tensor_i64(t, dt, r, c->dims, v);
  bt_tensor_t s = bt_tensor_i64(t, dt, r, sd, src);
  cml_value_t y = cml_op_select_and_scatter(f, op, bt_param(t, f, &x), bt_param(t, f, &s), &c->w);
  bt_tensor_t out[1];
  if (!bt_exec(t, &y, 1, out)) return;
  int64_t* want = bt_alloc(t, (size_t)(n + 1) * sizeof(int64_t));
  for (int64_t o = 0; o < ns; ++o) {
    int64_t oi[CML_MAX_RANK], ki[CML_MAX_RANK];
    cw_unflat(r, sd, o, oi);
    int64_t sel = -1;
    for (int64_t k = 0; k < nw; ++k) {
      cw_unflat(r, wd, k, ki);
      int64_t e = cw_source(r, c->dims, &c->w, oi, ki);
      if (e < 0) continue;
      if (op == CML_OP_SELECT_AND_SCATTER_SUM) {
        want[e] += src[o];
      } else if (sel < 0 || (op == CML_OP_SELECT_AND_SCATTER_MAX ? v[e] > v[sel] : v[e] < v[sel])) {
        sel = e;  // strictly better only: the first extreme wins ties
      }
    }
    if (sel >= 0) want[sel] += src[o];
  }
  bt_tensor_t w = bt_tensor_i64(t, dt, r, c->dims, want);
  char what[96];
  snprintf(what, sizeof what, "%s %s", cml_op_name(op), cml_dtype_name(dt));
  bt_expect_equal(t, what, &out[0], &w);
}

static void cw_select_and_scatter_sweep(bt_t* t, cml_op_t op) {
  if (!bt_require_op(t, op)) return;
  cw_rw_case_t cases[4];
  {
    int64_t dims[] = {6, 7}, win[] = {3, 2}, st[] = {2, 2}, one[] = {1, 1}, lo[] = {1, 0},
            hi[] = {1, 1};
    cw_rw_config(&cases[0], 2, dims, win, st, one, one, lo, hi);
  }
  {
    // Non-overlapping 2x2 pooling of [4, 6] (the max-pool gradient shape).
    int64_t dims[] = {4, 6}, win[] = {2, 2}, one[] = {1, 1}, zero[] = {0, 0};
    cw_rw_config(&cases[1], 2, dims, win, win, one, one, zero, zero);
  }
  {
    // Overlapping 1-D windows, stride 1, padding on both sides.
    int64_t dims[] = {9}, win[] = {3}, st[] = {1}, one[] = {1}, lo[] = {2}, hi[] = {1};
    cw_rw_config(&cases[2], 1, dims, win, st, one, one, lo, hi);
  }
  {
    // A scalar operand: one window of one element (xla:cpu once aborted the process on it).
    int64_t none[1] = {0};
    cw_rw_config(&cases[3], 0, none, none, none, none, none, none, none);
  }
  for (size_t c = 0; c < 4; ++c)
    for (size_t k = 0; k < CW_DTYPE_COUNT && !bt_failed(t); ++k) {
      if (!cw_has_dtype(t, cw_dtypes[k])) continue;
      cw_run_select_and_scatter(t, op, &cases[c], cw_dtypes[k]);
    }
}

static void case_select_and_scatter_max_all_dtypes(bt_t* t) {
  cw_select_and_scatter_sweep(t, CML_OP_SELECT_AND_SCATTER_MAX);
}
static void case_select_and_scatter_min_all_dtypes(bt_t* t) {
  cw_select_and_scatter_sweep(t, CML_OP_SELECT_AND_SCATTER_MIN);
}
static void case_select_and_scatter_sum_all_dtypes(bt_t* t) {
  cw_select_and_scatter_sweep(t, CML_OP_SELECT_AND_SCATTER_SUM);
}

static void case_select_and_scatter_by_hand(bt_t* t) {
  if (!bt_require_op(t, CML_OP_SELECT_AND_SCATTER_MAX) || !bt_require_dtype(t, CML_DTYPE_F32))
    return;
  cml_function_t* f = bt_main(t);
  // [1 3 3 2], window 2, stride 1: [1 3] -> 1, [3 3] -> 1 (first), [3 2] -> 2.
  int64_t d4[] = {4}, d3[] = {3};
  cml_value_t x = bt_param_f64(t, f, CML_DTYPE_F32, 1, d4, (double[]){1, 3, 3, 2});
  cml_value_t s = bt_param_f64(t, f, CML_DTYPE_F32, 1, d3, (double[]){10, 20, 40});
  cml_window_config_t w;
  memset(&w, 0, sizeof w);
  w.rank = 1;
  w.window_dims[0] = 2;
  w.strides[0] = 1;
  cml_value_t y = cml_op_select_and_scatter(f, CML_OP_SELECT_AND_SCATTER_MAX, x, s, &w);
  bt_tensor_t out[1];
  if (!bt_exec(t, &y, 1, out)) return;
  bt_expect_f64(t, "max", &out[0], CML_DTYPE_F32, 1, d4, (double[]){0, 30, 40, 0}, 0);
}

//===--- table ---===//

const bt_case_t bt_cases_window[] = {
    {"reduce_window_all_dtypes", CML_OP_REDUCE_WINDOW, case_reduce_window_all_dtypes},
    {"reduce_window_float_edges", CML_OP_REDUCE_WINDOW, case_reduce_window_float_edges},
    {"reduce_window_base_dilation_long_rows", CML_OP_REDUCE_WINDOW,
     case_reduce_window_base_dilation_long_rows},
    {"reduce_window_signed_zeros", CML_OP_REDUCE_WINDOW, case_reduce_window_signed_zeros},
    {"reduce_window_half_accumulate", CML_OP_REDUCE_WINDOW, case_reduce_window_half_accumulate},
    {"select_and_scatter_max_all_dtypes", CML_OP_SELECT_AND_SCATTER_MAX,
     case_select_and_scatter_max_all_dtypes},
    {"select_and_scatter_min_all_dtypes", CML_OP_SELECT_AND_SCATTER_MIN,
     case_select_and_scatter_min_all_dtypes},
    {"select_and_scatter_sum_all_dtypes", CML_OP_SELECT_AND_SCATTER_SUM,
     case_select_and_scatter_sum_all_dtypes},
    {"select_and_scatter_by_hand", CML_OP_SELECT_AND_SCATTER_MAX, case_select_and_scatter_by_hand},
};
const size_t bt_cases_window_count = sizeof bt_cases_window / sizeof bt_cases_window[0];
