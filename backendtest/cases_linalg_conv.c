// SPDX-License-Identifier: Apache-2.0
// backendtest/cases_linalg_conv.c: compliance cases of the "linalg_conv" group: ConvGeneral in 1-D,
// 2-D and 3-D, with strides, padding (also negative), input and kernel dilations, channel (feature)
// groups, batch groups, permuted axis layouts, output dtype configs, empty batches, every real
// dtype, and errors. Expected values come from a plain reference loop in this file (StableHLO's
// definition, on small integers that every dtype holds exactly).
//
// The "inexact_*" cases use random values in [-1, 1] (rounded to the dtype first, so the
// reference sees the same operands) and sizes that span several of the C backend's im2col
// tiles. A backend may sum a convolution's K = Cg x (kernel positions) products in any order
// (the C backend's GEMM does, its reference mode does not), so each output is checked against
// the double-precision reference within the classic bound for a sum in any order, plus one
// rounding to the output dtype:
//   |got - want| <= (K + 1) * u_acc * sum|terms| + u_out * |want|
// where u_acc is the accumulator's unit roundoff (2^-24 for f32 and for f16/bf16 inputs, which
// accumulate in f32 as the seed states; 2^-53 for f64) and u_out the output dtype's (2^-11 f16,
// 2^-8 bf16). Integer cases stay exact.
#include <string.h>

#include "backendtest/bt.h"

//===--- reference ---===//

// A convolution problem in the canonical layouts input [N, C, S...], kernel [O, I, S...],
// output [N/bg, O, S...].
typedef struct conv_problem_t {
  int32_t spatial;
  int64_t n, c, o;      // input batch, input channels, output channels
  int64_t in[3], k[3];  // spatial sizes
  int64_t stride[3], pad_lo[3], pad_hi[3], idil[3], kdil[3];
  int64_t groups, batch_groups;
  int64_t out[3];  // computed
} conv_problem_t;

static int64_t conv_out_size(int64_t in, int64_t idil, int64_t lo, int64_t hi, int64_t k,
                             int64_t kdil, int64_t stride) {
  int64_t padded = (in > 0 ? (in - 1) * idil + 1 : 0) + lo + hi;
  int64_t dk = (k - 1) * kdil + 1;
  if (padded < dk) return 0;
  return (padded - dk) / stride + 1;
}

static void conv_fill_defaults(conv_problem_t* p) {
  for (int32_t d = 0; d < p->spatial; ++d) {
    if (!p->stride[d]) p->stride[d] = 1;
    if (!p->idil[d]) p->idil[d] = 1;
    if (!p->kdil[d]) p->kdil[d] = 1;
    p->out[d] = conv_out_size(p->in[d], p->idil[d], p->pad_lo[d], p->pad_hi[d], p->k[d], p->kdil[d],
                              p->stride[d]);
  }
  if (p->groups < 1) p->groups = 1;
  if (p->batch_groups < 1) p->batch_groups = 1;
}

static int64_t conv_prod(const int64_t* v, int32_t n) {
  int64_t p = 1;
  for (int32_t i = 0; i < n; ++i) p *= v[i];
  return p;
}

// The reference: out[b, o, y] = sum_{ci, kpos} in[b', g*Cg+ci, x] * w[o, ci, kpos].
// |abs_out| (may be NULL) gets the sum of |terms| of each output (the error bound's scale).
static void conv_reference(const conv_problem_t* p, const double* x, const double* w, double* out,
                           double* abs_out) {
  int32_t S = p->spatial;
  int64_t cg = p->c / p->groups, nout = p->n / p->batch_groups;
  int64_t osz = conv_prod(p->out, S), isz = conv_prod(p->in, S), ksz = conv_prod(p->k, S);
  for (int64_t b = 0; b < nout; ++b)
    for (int64_t o = 0; o < p->o; ++o) {
      int64_t g = o / (p->o / p->groups);
      int64_t bin = (o / (p->o / p->batch_groups)) * nout + b;
      for (int64_t yi = 0; yi < osz; ++yi) {
        double s = 0, a = 0;
        for (int64_t ki = 0; ki < ksz; ++ki) {
          int64_t xoff = 0, koff = ki;
          bool ok = true;
          int64_t yrest = yi, krest = ki;
          int64_t xs[3];
          for (int32_t d = S - 1; d >= 0; --d) {
            int64_t y = yrest % p->out[d], k = krest % p->k[d];
            yrest /= p->out[d], krest /= p->k[d];
            int64_t pos = y * p->stride[d] + k * p->kdil[d] - p->pad_lo[d];
            if (pos < 0 || pos % p->idil[d] != 0 || pos / p->idil[d] >= p->in[d]) ok = false;
            xs[d] = ok ? pos / p->idil[d] : 0;
          }
          if (!ok) continue;
          for (int32_t d = 0; d < S; ++d) xoff = xoff * p->in[d] + xs[d];
          for (int64_t ci = 0; ci < cg; ++ci) {
            double term =
                x[(bin * p->c + g * cg + ci) * isz + xoff] * w[(o * cg + ci) * ksz + koff];
            s += term;
            a += term < 0 ? -term : term;
          }
        }
        out[(b * p->o + o) * osz + yi] = s;
        if (abs_out) abs_out[(b * p->o + o) * osz + yi] = a;
      }
    }
}

// Permutes a canonical array (dims |cdims|, rank |rank|) into a layout where layout axis
// |axes_of|[j] holds canonical axis j (i.e. canonical axis j goes to position axes_of[j]).
static void conv_permute(int32_t rank, const int64_t* cdims, const int64_t* axes_of,
                         const double* src, double* dst, int64_t* out_dims) {
  for (int32_t j = 0; j < rank; ++j) out_dims[axes_of[j]] = cdims[j];
  int64_t total = conv_prod(cdims, rank);
  for (int64_t i = 0; i < total; ++i) {
    int64_t rest = i, idx[5];
    for (int32_t j = rank - 1; j >= 0; --j) idx[j] = rest % cdims[j], rest /= cdims[j];
    int64_t off = 0;
    for (int32_t a = 0; a < rank; ++a) {
      int64_t v = 0;
      for (int32_t j = 0; j < rank; ++j)
        if (axes_of[j] == a) v = idx[j];
      off = off * out_dims[a] + v;
    }
    dst[off] = src[i];
  }
}

// Small integer values exact in every real dtype (unsigned: 0..2, signed: -2..2).
static double conv_val(cml_dtype_t dtype, int64_t i, int salt) {
  int64_t h = (i * 5 + salt * 11 + (i * i) % 7) % 5;
  return cml_dtype_is_unsigned_int(dtype) ? (double)(h % 3) : (double)(h - 2);
}

// Unit roundoffs of the inexact cases' bound (see the top of the file).
static double conv_acc_eps(cml_dtype_t in, cml_dtype_t out) {
  return in == CML_DTYPE_F64 || out == CML_DTYPE_F64 ? 0x1p-53 : 0x1p-24;
}
static double conv_out_eps(cml_dtype_t out) {
  switch (out) {
    case CML_DTYPE_F16:
      return 0x1p-11;
    case CML_DTYPE_BF16:
      return 0x1p-8;
    case CML_DTYPE_F32:
      return 0x1p-24;
    default:
      return 0x1p-53;
  }
}

// Builds, runs and checks |p| in |dtype| with layouts given as canonical-axis -> layout-axis
// maps (NULL: canonical). |out_dtype| may be CML_DTYPE_INVALID (the input dtype). |inexact|:
// random float operands checked within the summation bound instead of exactly.
static void conv_run_ex(bt_t* t, const char* what, cml_dtype_t dtype, cml_dtype_t out_dtype,
                        conv_problem_t p, const int64_t* in_axes, const int64_t* ker_axes,
                        const int64_t* out_axes, bool inexact) {
  cml_dtype_t odt = out_dtype == CML_DTYPE_INVALID ? dtype : out_dtype;
  if (!bt_require_op(t, CML_OP_CONV_GENERAL) || !bt_require_dtype(t, dtype) ||
      !bt_require_dtype(t, odt))
    return;
  conv_fill_defaults(&p);
  int32_t S = p.spatial, rank = S + 2;
  int64_t canon[CML_MAX_RANK];
  if (!in_axes || !ker_axes || !out_axes) {
    for (int32_t i = 0; i < rank; ++i) canon[i] = i;
    if (!in_axes) in_axes = canon;
    if (!ker_axes) ker_axes = canon;
    if (!out_axes) out_axes = canon;
  }
  int64_t xd[5] = {p.n, p.c}, kd[5] = {p.o, p.c / p.groups}, od[5] = {p.n / p.batch_groups, p.o};
  for (int32_t d = 0; d < S; ++d) xd[2 + d] = p.in[d], kd[2 + d] = p.k[d], od[2 + d] = p.out[d];
  int64_t nx = conv_prod(xd, rank), nk = conv_prod(kd, rank), no = conv_prod(od, rank);
  double* x = bt_alloc(t, sizeof(double) * (size_t)(nx + 1));
  double* w = bt_alloc(t, sizeof(double) * (size_t)(nk + 1));
  double* y = bt_alloc(t, sizeof(double) * (size_t)(no + 1));
  double* xl = bt_alloc(t, sizeof(double) * (size_t)(nx + 1));
  double* wl = bt_alloc(t, sizeof(double) * (size_t)(nk + 1));
  double* yl = bt_alloc(t, sizeof(double) * (size_t)(no + 1));
  double* ya = NULL;
  double* yal = NULL;
  if (inexact) {
    ya = bt_alloc(t, sizeof(double) * (size_t)(no + 1));
    yal = bt_alloc(t, sizeof(double) * (size_t)(no + 1));
    for (int64_t i = 0; i < nx; ++i) x[i] = bt_rand_uniform(t, -1, 1);
    for (int64_t i = 0; i < nk; ++i) w[i] = bt_rand_uniform(t, -1, 1);
    // Round to the dtype, so the reference sees the operands the backend gets.
    bt_tensor_t rx = bt_tensor_f64(t, dtype, 1, &nx, x), rw = bt_tensor_f64(t, dtype, 1, &nk, w);
    for (int64_t i = 0; i < nx; ++i) x[i] = bt_get_f64(&rx, i);
    for (int64_t i = 0; i < nk; ++i) w[i] = bt_get_f64(&rw, i);
  } else {
    for (int64_t i = 0; i < nx; ++i) x[i] = conv_val(dtype, i, 1);
    for (int64_t i = 0; i < nk; ++i) w[i] = conv_val(dtype, i, 2);
  }
  conv_reference(&p, x, w, y, ya);
  int64_t xld[5], kld[5], old[5];
  conv_permute(rank, xd, in_axes, x, xl, xld);
  conv_permute(rank, kd, ker_axes, w, wl, kld);
  conv_permute(rank, od, out_axes, y, yl, old);
  if (inexact) conv_permute(rank, od, out_axes, ya, yal, old);
  cml_conv_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.spatial_count = S;
  cfg.input_batch_axis = in_axes[0], cfg.input_channel_axis = in_axes[1];
  cfg.kernel_output_channel_axis = ker_axes[0], cfg.kernel_input_channel_axis = ker_axes[1];
  cfg.output_batch_axis = out_axes[0], cfg.output_channel_axis = out_axes[1];
  for (int32_t d = 0; d < S; ++d) {
    cfg.input_spatial_axes[d] = in_axes[2 + d];
    cfg.kernel_spatial_axes[d] = ker_axes[2 + d];
    cfg.output_spatial_axes[d] = out_axes[2 + d];
    cfg.strides[d] = p.stride[d];
    cfg.padding_low[d] = p.pad_lo[d];
    cfg.padding_high[d] = p.pad_hi[d];
    cfg.input_dilations[d] = p.idil[d];
    cfg.kernel_dilations[d] = p.kdil[d];
  }
  cfg.channel_group_count = p.groups;
  cfg.batch_group_count = p.batch_groups;
  cfg.output_dtype = out_dtype;
  cml_function_t* f = bt_main(t);
  cml_value_t xv = bt_param_f64(t, f, dtype, rank, xld, xl);
  cml_value_t wv = bt_param_f64(t, f, dtype, rank, kld, wl);
  cml_value_t z = cml_op_conv_general(f, xv, wv, &cfg);
  bt_tensor_t out[1];
  if (!bt_exec(t, &z, 1, out)) return;
  if (inexact) {
    bool shape_ok = out[0].shape.dtype == odt && out[0].shape.rank == rank;
    for (int32_t i = 0; shape_ok && i < rank; ++i) shape_ok = out[0].shape.dims[i] == old[i];
    if (!shape_ok) {
      bt_fail(t, "%s: output has the wrong shape or dtype", what);
      return;
    }
    int64_t kterms = p.c / p.groups;
    for (int32_t d = 0; d < S; ++d) kterms *= p.k[d];
    double ua = conv_acc_eps(dtype, odt), uo = conv_out_eps(odt);
    for (int64_t i = 0; i < no; ++i) {
      double got = bt_get_f64(&out[0], i), want = yl[i];
      double tol = (double)(kterms + 1) * ua * yal[i] + uo * (want < 0 ? -want : want);
      double err = got - want;
      if (!(err <= tol && -err <= tol)) {
        bt_fail(t, "%s: element %lld: got %.9g, want %.9g (tolerance %.3g)", what, (long long)i,
                got, want, tol);
        return;
      }
    }
    return;
  }
  if (cml_dtype_is_int(odt)) {
    int64_t* iv = bt_alloc(t, sizeof(int64_t) * (size_t)(no + 1));
    for (int64_t i = 0; i < no; ++i) iv[i] = (int64_t)yl[i];
    bt_expect_i64(t, what, &out[0], odt, rank, old, iv);
  } else {
    bt_expect_f64(t, what, &out[0], odt, rank, old, yl, 0);
  }
}

static void conv_run(bt_t* t, const char* what, cml_dtype_t dtype, cml_dtype_t out_dtype,
                     conv_problem_t p, const int64_t* in_axes, const int64_t* ker_axes,
                     const int64_t* out_axes) {
  conv_run_ex(t, what, dtype, out_dtype, p, in_axes, ker_axes, out_axes, false);
}

//===--- cases over every real dtype ---===//

static void conv_1d_case(bt_t* t, cml_dtype_t dtype) {
  conv_problem_t p = {.spatial = 1, .n = 2, .c = 3, .o = 4, .in = {7}, .k = {3}};
  conv_run(t, "1-D", dtype, CML_DTYPE_INVALID, p, NULL, NULL, NULL);
}

static void conv_2d_strided_case(bt_t* t, cml_dtype_t dtype) {
  // Strides (2, 1), padding ((1, 0), (2, 1)), input dilation (1, 2), kernel dilation (2, 1).
  conv_problem_t p = {.spatial = 2,
                      .n = 1,
                      .c = 2,
                      .o = 3,
                      .in = {5, 6},
                      .k = {2, 3},
                      .stride = {2, 1},
                      .pad_lo = {1, 2},
                      .pad_hi = {0, 1},
                      .idil = {1, 2},
                      .kdil = {2, 1}};
  conv_run(t, "2-D strided", dtype, CML_DTYPE_INVALID, p, NULL, NULL, NULL);
}

static void conv_groups_case(bt_t* t, cml_dtype_t dtype) {
  // Channel groups: 4 input channels in 2 groups, 6 output channels.
  conv_problem_t p = {.spatial = 1, .n = 2, .c = 4, .o = 6, .in = {5}, .k = {2}, .groups = 2};
  conv_run(t, "channel groups", dtype, CML_DTYPE_INVALID, p, NULL, NULL, NULL);
}

static void conv_batch_groups_case(bt_t* t, cml_dtype_t dtype) {
  // Batch groups: batch 4 in 2 groups, 4 output channels (2 per group).
  conv_problem_t p = {.spatial = 1, .n = 4, .c = 2, .o = 4, .in = {5}, .k = {3}, .batch_groups = 2};
  conv_run(t, "batch groups", dtype, CML_DTYPE_INVALID, p, NULL, NULL, NULL);
}

// clang-format off
#define CONV_DTYPES(X)     \
  X(i8, CML_DTYPE_I8)      \
  X(i16, CML_DTYPE_I16)    \
  X(i32, CML_DTYPE_I32)    \
  X(i64, CML_DTYPE_I64)    \
  X(u8, CML_DTYPE_U8)      \
  X(u16, CML_DTYPE_U16)    \
  X(u32, CML_DTYPE_U32)    \
  X(u64, CML_DTYPE_U64)    \
  X(f16, CML_DTYPE_F16)    \
  X(bf16, CML_DTYPE_BF16)  \
  X(f32, CML_DTYPE_F32)    \
  X(f64, CML_DTYPE_F64)
// clang-format on

#define CONV_DEFINE(name, dt)                                                  \
  static void case_1d_##name(bt_t* t) { conv_1d_case(t, dt); }                 \
  static void case_2d_strided_##name(bt_t* t) { conv_2d_strided_case(t, dt); } \
  static void case_groups_##name(bt_t* t) { conv_groups_case(t, dt); }         \
  static void case_batch_groups_##name(bt_t* t) { conv_batch_groups_case(t, dt); }
CONV_DTYPES(CONV_DEFINE)
#undef CONV_DEFINE

//===--- layouts, 3-D, odd sizes, configs ---===//

static void case_nhwc_hwio_f32(bt_t* t) {
  // Input NHWC (N->0, C->3, H->1, W->2), kernel HWIO (O->3, I->2, H->0, W->1), output NHWC.
  conv_problem_t p = {.spatial = 2,
                      .n = 2,
                      .c = 3,
                      .o = 2,
                      .in = {4, 5},
                      .k = {2, 2},
                      .pad_lo = {1, 0},
                      .pad_hi = {0, 1}};
  conv_run(t, "NHWC", CML_DTYPE_F32, CML_DTYPE_INVALID, p, (const int64_t[]){0, 3, 1, 2},
           (const int64_t[]){3, 2, 0, 1}, (const int64_t[]){0, 3, 1, 2});
}

static void case_shuffled_layouts_i32(bt_t* t) {
  // Input [W, C, N, H], kernel [I, W, H, O], output [H, O, W, N].
  conv_problem_t p = {
      .spatial = 2, .n = 3, .c = 2, .o = 3, .in = {3, 4}, .k = {2, 2}, .stride = {1, 2}};
  conv_run(t, "shuffled layouts", CML_DTYPE_I32, CML_DTYPE_INVALID, p,
           (const int64_t[]){2, 1, 3, 0}, (const int64_t[]){3, 0, 2, 1},
           (const int64_t[]){3, 1, 0, 2});
}

static void case_3d_f32(bt_t* t) {
  conv_problem_t p = {.spatial = 3,
                      .n = 1,
                      .c = 2,
                      .o = 2,
                      .in = {3, 4, 5},
                      .k = {2, 2, 2},
                      .stride = {1, 2, 1},
                      .pad_lo = {0, 1, 1},
                      .pad_hi = {1, 0, 0},
                      .kdil = {1, 1, 2}};
  conv_run(t, "3-D", CML_DTYPE_F32, CML_DTYPE_INVALID, p, NULL, NULL, NULL);
}

static void case_odd_5x7x11_f32(bt_t* t) {
  conv_problem_t p = {.spatial = 2, .n = 5, .c = 7, .o = 11, .in = {9, 8}, .k = {3, 2}};
  conv_run(t, "odd sizes", CML_DTYPE_F32, CML_DTYPE_INVALID, p, NULL, NULL, NULL);
}

static void case_depthwise_f64(bt_t* t) {
  // Channel groups == channels (depthwise) with a channel multiplier of 2.
  conv_problem_t p = {.spatial = 2,
                      .n = 1,
                      .c = 3,
                      .o = 6,
                      .in = {4, 4},
                      .k = {3, 3},
                      .pad_lo = {1, 1},
                      .pad_hi = {1, 1},
                      .groups = 3};
  conv_run(t, "depthwise", CML_DTYPE_F64, CML_DTYPE_INVALID, p, NULL, NULL, NULL);
}

static void case_negative_padding_f32(bt_t* t) {
  conv_problem_t p = {
      .spatial = 1, .n = 1, .c = 1, .o = 2, .in = {8}, .k = {2}, .pad_lo = {-2}, .pad_hi = {-1}};
  conv_run(t, "negative padding", CML_DTYPE_F32, CML_DTYPE_INVALID, p, NULL, NULL, NULL);
}

// Negative low and positive high padding, batch 2: the last window of each batch reaches the
// high padding. XLA's CPU plugin read the next batch's first element there (the xla emitter
// now crops with a pad first).
static void case_mixed_sign_padding_f32(bt_t* t) {
  conv_problem_t p = {
      .spatial = 1, .n = 2, .c = 1, .o = 1, .in = {5}, .k = {4}, .pad_lo = {-1}, .pad_hi = {1}};
  conv_run(t, "mixed sign padding", CML_DTYPE_F32, CML_DTYPE_INVALID, p, NULL, NULL, NULL);
}

// The same in 2-D, with the signs mixed the other way on the second axis and an input dilation
// on the first (the cropping applies to the dilated input).
static void case_mixed_sign_padding_dilated_2d_f32(bt_t* t) {
  conv_problem_t p = {.spatial = 2,
                      .n = 3,
                      .c = 2,
                      .o = 3,
                      .in = {6, 7},
                      .k = {3, 2},
                      .pad_lo = {-1, 2},
                      .pad_hi = {2, -1},
                      .idil = {2, 1}};
  conv_run(t, "mixed sign padding, dilated", CML_DTYPE_F32, CML_DTYPE_INVALID, p, NULL, NULL, NULL);
}

static void case_kernel_larger_than_input_f32(bt_t* t) {
  // 1x1 input with 3x3 kernel and padding 1: only the kernel's center tap contributes.
  conv_problem_t p = {.spatial = 2,
                      .n = 2,
                      .c = 1,
                      .o = 1,
                      .in = {1, 1},
                      .k = {3, 3},
                      .pad_lo = {1, 1},
                      .pad_hi = {1, 1}};
  conv_run(t, "kernel larger", CML_DTYPE_F32, CML_DTYPE_INVALID, p, NULL, NULL, NULL);
}

// An axis whose input dilation equals the kernel's size k, with a stride of k - 1 and no
// padding (a transposed convolution's shape), next to an axis where the kernel is larger than
// the input: XLA's operand swapper took the first axis for a folded feature group and ended
// the process (docs/xla.md, "Modules that make XLA abort").
static void case_input_dilation_equal_to_kernel_f32(bt_t* t) {
  conv_problem_t p = {.spatial = 2,
                      .n = 2,
                      .c = 2,
                      .o = 3,
                      .in = {5, 2},
                      .k = {2, 3},
                      .pad_lo = {0, 1},
                      .pad_hi = {0, 1},
                      .idil = {2, 1}};
  conv_run(t, "input dilation 2 = kernel 2, stride 1", CML_DTYPE_F32, CML_DTYPE_INVALID, p, NULL,
           NULL, NULL);
}

static void case_input_dilation_equal_to_kernel_strided_f32(bt_t* t) {
  conv_problem_t q = {.spatial = 2,
                      .n = 1,
                      .c = 1,
                      .o = 2,
                      .in = {2, 7},
                      .k = {4, 3},
                      .pad_lo = {1, 0},
                      .pad_hi = {2, 0},
                      .stride = {1, 2},
                      .idil = {1, 3}};
  conv_run(t, "input dilation 3 = kernel 3, stride 2", CML_DTYPE_F32, CML_DTYPE_INVALID, q, NULL,
           NULL, NULL);
}

// The same axis shape with an empty input: an empty output (the padding that avoids XLA's trap
// must not give it a position).
static void case_input_dilation_equal_to_kernel_empty_f32(bt_t* t) {
  conv_problem_t p = {.spatial = 2,
                      .n = 1,
                      .c = 1,
                      .o = 2,
                      .in = {0, 2},
                      .k = {2, 3},
                      .pad_lo = {0, 1},
                      .pad_hi = {0, 1},
                      .idil = {2, 1}};
  conv_run(t, "empty input, input dilation 2 = kernel 2", CML_DTYPE_F32, CML_DTYPE_INVALID, p, NULL,
           NULL, NULL);
}

static void case_empty_batch_f32(bt_t* t) {
  conv_problem_t p = {.spatial = 1, .n = 0, .c = 2, .o = 3, .in = {5}, .k = {2}};
  conv_run(t, "empty batch", CML_DTYPE_F32, CML_DTYPE_INVALID, p, NULL, NULL, NULL);
}

static void case_output_dtype_bf16_to_f32(bt_t* t) {
  conv_problem_t p = {.spatial = 1, .n = 1, .c = 3, .o = 2, .in = {6}, .k = {3}};
  conv_run(t, "bf16 -> f32", CML_DTYPE_BF16, CML_DTYPE_F32, p, NULL, NULL, NULL);
}

static void case_output_dtype_i8_to_i32(bt_t* t) {
  conv_problem_t p = {.spatial = 1, .n = 1, .c = 3, .o = 2, .in = {6}, .k = {3}};
  conv_run(t, "i8 -> i32", CML_DTYPE_I8, CML_DTYPE_I32, p, NULL, NULL, NULL);
}

// An output dtype of another kind: the sum runs in the input's dtype and is converted once.
// Float32 {0.5, 0.5} . {1, 1} to Int32 is 1 (converting the inputs first gave 0); Int32
// {16777217, 1} . {1, 1} to Float32 is 16777218 (summing in Float32 gave 16777216).
static void case_output_dtype_of_another_kind(bt_t* t) {
  if (!bt_require_op(t, CML_OP_CONV_GENERAL) || !bt_require_dtype(t, CML_DTYPE_F32) ||
      !bt_require_dtype(t, CML_DTYPE_I32))
    return;
  const int64_t dims[3] = {1, 1, 2}, one[3] = {1, 1, 1};
  cml_function_t* f = bt_main(t);
  cml_conv_config_t to_int, to_float;
  cml_conv_config_init(&to_int, 1, CML_CONV_LAYOUT_CHANNELS_FIRST);
  to_float = to_int;
  to_int.output_dtype = CML_DTYPE_I32;
  to_float.output_dtype = CML_DTYPE_F32;
  cml_value_t outs[2] = {
      cml_op_conv_general(f, bt_param_f64(t, f, CML_DTYPE_F32, 3, dims, (double[]){0.5, 0.5}),
                          bt_param_f64(t, f, CML_DTYPE_F32, 3, dims, (double[]){1, 1}), &to_int),
      cml_op_conv_general(f, bt_param_i64(t, f, CML_DTYPE_I32, 3, dims, (int64_t[]){16777217, 1}),
                          bt_param_i64(t, f, CML_DTYPE_I32, 3, dims, (int64_t[]){1, 1}),
                          &to_float)};
  bt_tensor_t out[2];
  if (!bt_exec(t, outs, 2, out)) return;
  bt_expect_i64(t, "f32 -> i32", &out[0], CML_DTYPE_I32, 3, one, (int64_t[]){1});
  bt_expect_f64(t, "i32 -> f32", &out[1], CML_DTYPE_F32, 3, one, (double[]){16777218}, 0);
}

//===--- inexact float values (summation-order tolerance) ---===//

#define CONV_NHWC ((const int64_t[]){0, 3, 1, 2})
#define CONV_HWIO ((const int64_t[]){3, 2, 0, 1})

static void case_inexact_resnet_nhwc_f32(bt_t* t) {
  // A ResNet-like 3x3 "same" block, NHWC / HWIO.
  conv_problem_t p = {.spatial = 2,
                      .n = 2,
                      .c = 16,
                      .o = 24,
                      .in = {12, 12},
                      .k = {3, 3},
                      .pad_lo = {1, 1},
                      .pad_hi = {1, 1}};
  conv_run_ex(t, "resnet NHWC", CML_DTYPE_F32, CML_DTYPE_INVALID, p, CONV_NHWC, CONV_HWIO,
              CONV_NHWC, true);
}

static void case_inexact_nchw_strided_f32(bt_t* t) {
  conv_problem_t p = {.spatial = 2,
                      .n = 2,
                      .c = 6,
                      .o = 10,
                      .in = {15, 13},
                      .k = {3, 3},
                      .stride = {2, 1},
                      .kdil = {1, 2},
                      .pad_lo = {1, 2},
                      .pad_hi = {0, 1}};
  conv_run_ex(t, "NCHW strided", CML_DTYPE_F32, CML_DTYPE_INVALID, p, NULL, NULL, NULL, true);
}

static void case_inexact_groups_f32(bt_t* t) {
  // 4 channel groups; NHWC input, NCHW output.
  conv_problem_t p = {.spatial = 2,
                      .n = 2,
                      .c = 8,
                      .o = 12,
                      .in = {10, 11},
                      .k = {3, 3},
                      .pad_lo = {1, 1},
                      .pad_hi = {1, 1},
                      .groups = 4};
  conv_run_ex(t, "groups", CML_DTYPE_F32, CML_DTYPE_INVALID, p, CONV_NHWC, CONV_HWIO, NULL, true);
}

static void case_inexact_depthwise_f32(bt_t* t) {
  // Depthwise with a channel multiplier of 2, stride 2.
  conv_problem_t p = {.spatial = 2,
                      .n = 2,
                      .c = 8,
                      .o = 16,
                      .in = {13, 12},
                      .k = {3, 3},
                      .stride = {2, 2},
                      .pad_lo = {1, 1},
                      .pad_hi = {1, 1},
                      .groups = 8};
  conv_run_ex(t, "depthwise", CML_DTYPE_F32, CML_DTYPE_INVALID, p, CONV_NHWC, CONV_HWIO, CONV_NHWC,
              true);
}

static void case_inexact_batch_groups_f32(bt_t* t) {
  conv_problem_t p = {.spatial = 1,
                      .n = 6,
                      .c = 4,
                      .o = 6,
                      .in = {50},
                      .k = {5},
                      .pad_lo = {2},
                      .pad_hi = {2},
                      .batch_groups = 3};
  conv_run_ex(t, "batch groups", CML_DTYPE_F32, CML_DTYPE_INVALID, p, NULL, NULL, NULL, true);
}

static void case_inexact_3d_input_dilation_f32(bt_t* t) {
  conv_problem_t p = {.spatial = 3,
                      .n = 2,
                      .c = 3,
                      .o = 4,
                      .in = {4, 5, 6},
                      .k = {2, 3, 2},
                      .idil = {2, 1, 2},
                      .stride = {1, 2, 1},
                      .pad_lo = {1, 0, 1},
                      .pad_hi = {1, 1, 0}};
  conv_run_ex(t, "3-D input dilation", CML_DTYPE_F32, CML_DTYPE_INVALID, p,
              (const int64_t[]){4, 0, 1, 3, 2}, (const int64_t[]){2, 4, 0, 1, 3},
              (const int64_t[]){1, 4, 3, 0, 2}, true);
}

static void case_inexact_1x1_f32(bt_t* t) {
  conv_problem_t p = {.spatial = 2, .n = 2, .c = 24, .o = 40, .in = {14, 14}, .k = {1, 1}};
  conv_run_ex(t, "1x1", CML_DTYPE_F32, CML_DTYPE_INVALID, p, CONV_NHWC, CONV_HWIO, CONV_NHWC, true);
}

static void case_inexact_large_k_f32(bt_t* t) {
  // K = 200 channels x 9 taps = 1800 products per output.
  conv_problem_t p = {.spatial = 2, .n = 1, .c = 200, .o = 20, .in = {8, 8}, .k = {3, 3}};
  conv_run_ex(t, "large K", CML_DTYPE_F32, CML_DTYPE_INVALID, p, CONV_NHWC, CONV_HWIO, CONV_NHWC,
              true);
}

static void case_inexact_f16(bt_t* t) {
  conv_problem_t p = {.spatial = 2,
                      .n = 2,
                      .c = 6,
                      .o = 10,
                      .in = {11, 9},
                      .k = {3, 3},
                      .pad_lo = {1, 0},
                      .pad_hi = {1, 1}};
  conv_run_ex(t, "f16", CML_DTYPE_F16, CML_DTYPE_INVALID, p, CONV_NHWC, CONV_HWIO, CONV_NHWC, true);
}

static void case_inexact_bf16(bt_t* t) {
  conv_problem_t p = {.spatial = 2,
                      .n = 2,
                      .c = 6,
                      .o = 10,
                      .in = {11, 9},
                      .k = {3, 3},
                      .pad_lo = {1, 0},
                      .pad_hi = {1, 1},
                      .groups = 2};
  conv_run_ex(t, "bf16", CML_DTYPE_BF16, CML_DTYPE_INVALID, p, NULL, NULL, NULL, true);
}

static void case_inexact_f64(bt_t* t) {
  conv_problem_t p = {.spatial = 2,
                      .n = 2,
                      .c = 6,
                      .o = 10,
                      .in = {11, 9},
                      .k = {3, 3},
                      .stride = {1, 2},
                      .pad_lo = {1, 0},
                      .pad_hi = {1, 1}};
  conv_run_ex(t, "f64", CML_DTYPE_F64, CML_DTYPE_INVALID, p, NULL, NULL, NULL, true);
}

static void case_inexact_bf16_to_f32(bt_t* t) {
  conv_problem_t p = {
      .spatial = 1, .n = 3, .c = 12, .o = 8, .in = {40}, .k = {3}, .pad_lo = {1}, .pad_hi = {1}};
  conv_run_ex(t, "bf16 -> f32", CML_DTYPE_BF16, CML_DTYPE_F32, p, NULL, NULL, NULL, true);
}

static void case_int_wraparound(bt_t* t) {
  // u8: 200 * 2 = 400 wraps to 144; i8: 100 * 2 = 200 wraps to -56.
  if (!bt_require_op(t, CML_OP_CONV_GENERAL) || !bt_require_dtype(t, CML_DTYPE_U8) ||
      !bt_require_dtype(t, CML_DTYPE_I8))
    return;
  cml_function_t* f = bt_main(t);
  int64_t d[3] = {1, 1, 1};
  cml_value_t a = bt_param_i64(t, f, CML_DTYPE_U8, 3, d, (int64_t[]){200});
  cml_value_t b = bt_param_i64(t, f, CML_DTYPE_U8, 3, d, (int64_t[]){2});
  cml_value_t c = bt_param_i64(t, f, CML_DTYPE_I8, 3, d, (int64_t[]){100});
  cml_value_t e = bt_param_i64(t, f, CML_DTYPE_I8, 3, d, (int64_t[]){2});
  cml_conv_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.spatial_count = 1;
  cfg.input_channel_axis = 1, cfg.input_spatial_axes[0] = 2;
  cfg.kernel_input_channel_axis = 1, cfg.kernel_spatial_axes[0] = 2;
  cfg.output_channel_axis = 1, cfg.output_spatial_axes[0] = 2;
  cml_value_t outs[2] = {cml_op_conv_general(f, a, b, &cfg), cml_op_conv_general(f, c, e, &cfg)};
  bt_tensor_t out[2];
  if (!bt_exec(t, outs, 2, out)) return;
  bt_expect_i64(t, "u8", &out[0], CML_DTYPE_U8, 3, d, (int64_t[]){144});
  bt_expect_i64(t, "i8", &out[1], CML_DTYPE_I8, 3, d, (int64_t[]){-56});
}

static void case_errors(bt_t* t) {
  if (!bt_require_op(t, CML_OP_CONV_GENERAL)) return;
  cml_function_t* f = bt_main(t);
  cml_shape_t xs = cml_shape_make(CML_DTYPE_F32, 3, (int64_t[]){1, 3, 5});
  cml_shape_t ks = cml_shape_make(CML_DTYPE_F32, 3, (int64_t[]){2, 4, 2});
  cml_value_t x = cml_parameter(f, "x", &xs);
  cml_value_t k = cml_parameter(f, "k", &ks);
  cml_conv_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.spatial_count = 1;
  cfg.input_channel_axis = 1, cfg.input_spatial_axes[0] = 2;
  cfg.kernel_input_channel_axis = 1, cfg.kernel_spatial_axes[0] = 2;
  cfg.output_channel_axis = 1, cfg.output_spatial_axes[0] = 2;
  if (cml_op_conv_general(f, x, k, &cfg) != CML_VALUE_INVALID)
    bt_fail(t, "mismatched channels were accepted");
  bt_expect_builder_error(t, CML_STATUS_INVALID_ARGUMENT,
                          (const char* const[]){"ConvGeneral", "[1, 3, 5]", "[2, 4, 2]", NULL});
}

//===--- the group ---===//

#define CONV_ENTRIES(name, dt)                                            \
  {"1d_" #name, CML_OP_CONV_GENERAL, case_1d_##name},                     \
      {"2d_strided_" #name, CML_OP_CONV_GENERAL, case_2d_strided_##name}, \
      {"groups_" #name, CML_OP_CONV_GENERAL, case_groups_##name},         \
      {"batch_groups_" #name, CML_OP_CONV_GENERAL, case_batch_groups_##name},

const bt_case_t bt_cases_linalg_conv[] = {
    CONV_DTYPES(CONV_ENTRIES){"nhwc_hwio_f32", CML_OP_CONV_GENERAL, case_nhwc_hwio_f32},
    {"shuffled_layouts_i32", CML_OP_CONV_GENERAL, case_shuffled_layouts_i32},
    {"3d_f32", CML_OP_CONV_GENERAL, case_3d_f32},
    {"odd_5x7x11_f32", CML_OP_CONV_GENERAL, case_odd_5x7x11_f32},
    {"depthwise_f64", CML_OP_CONV_GENERAL, case_depthwise_f64},
    {"negative_padding_f32", CML_OP_CONV_GENERAL, case_negative_padding_f32},
    {"mixed_sign_padding_f32", CML_OP_CONV_GENERAL, case_mixed_sign_padding_f32},
    {"mixed_sign_padding_dilated_2d_f32", CML_OP_CONV_GENERAL,
     case_mixed_sign_padding_dilated_2d_f32},
    {"kernel_larger_than_input_f32", CML_OP_CONV_GENERAL, case_kernel_larger_than_input_f32},
    {"input_dilation_equal_to_kernel_f32", CML_OP_CONV_GENERAL,
     case_input_dilation_equal_to_kernel_f32},
    {"input_dilation_equal_to_kernel_strided_f32", CML_OP_CONV_GENERAL,
     case_input_dilation_equal_to_kernel_strided_f32},
    {"input_dilation_equal_to_kernel_empty_f32", CML_OP_CONV_GENERAL,
     case_input_dilation_equal_to_kernel_empty_f32},
    {"empty_batch_f32", CML_OP_CONV_GENERAL, case_empty_batch_f32},
    {"output_bf16_to_f32", CML_OP_CONV_GENERAL, case_output_dtype_bf16_to_f32},
    {"output_i8_to_i32", CML_OP_CONV_GENERAL, case_output_dtype_i8_to_i32},
    {"output_dtype_of_another_kind", CML_OP_CONV_GENERAL, case_output_dtype_of_another_kind},
    {"int_wraparound", CML_OP_CONV_GENERAL, case_int_wraparound},
    {"inexact_resnet_nhwc_f32", CML_OP_CONV_GENERAL, case_inexact_resnet_nhwc_f32},
    {"inexact_nchw_strided_f32", CML_OP_CONV_GENERAL, case_inexact_nchw_strided_f32},
    {"inexact_groups_f32", CML_OP_CONV_GENERAL, case_inexact_groups_f32},
    {"inexact_depthwise_f32", CML_OP_CONV_GENERAL, case_inexact_depthwise_f32},
    {"inexact_batch_groups_f32", CML_OP_CONV_GENERAL, case_inexact_batch_groups_f32},
    {"inexact_3d_input_dilation_f32", CML_OP_CONV_GENERAL, case_inexact_3d_input_dilation_f32},
    {"inexact_1x1_f32", CML_OP_CONV_GENERAL, case_inexact_1x1_f32},
    {"inexact_large_k_f32", CML_OP_CONV_GENERAL, case_inexact_large_k_f32},
    {"inexact_f16", CML_OP_CONV_GENERAL, case_inexact_f16},
    {"inexact_bf16", CML_OP_CONV_GENERAL, case_inexact_bf16},
    {"inexact_f64", CML_OP_CONV_GENERAL, case_inexact_f64},
    {"inexact_bf16_to_f32", CML_OP_CONV_GENERAL, case_inexact_bf16_to_f32},
    {"errors", CML_OP_CONV_GENERAL, case_errors},
};
const size_t bt_cases_linalg_conv_count =
    sizeof bt_cases_linalg_conv / sizeof bt_cases_linalg_conv[0];
