// SPDX-License-Identifier: Apache-2.0
// backendtest/cases_linalg_dot.c: compliance cases of the "linalg_dot" group: Dot and DotGeneral
// over every numeric dtype, batch / multiple contracting / transposed layouts, vector forms,
// accumulator and output dtype configs, odd and empty shapes, NaN / Inf / integer wrap-around, and
// errors. Expected values come from plain reference loops written here (int64 or double arithmetic
// on small integers, exact in every dtype), or from hand computation.
#include <math.h>
#include <string.h>

#include "backendtest/bt.h"

//===--- helpers ---===//

// cml_op_dot is recorded as DotGeneral on a backend that has DotGeneral but not Dot, so Dot
// cases run on either.
static bool dot_dtype_ok(bt_t* t, cml_op_t op, cml_dtype_t dtype) {
  if (op == CML_OP_DOT &&
      !cml_capabilities_has_op(cml_backend_capabilities(bt_backend(t)), CML_OP_DOT))
    op = CML_OP_DOT_GENERAL;
  return bt_require_op(t, op) && bt_require_dtype(t, dtype);
}

// Small integer test values: unsigned dtypes get 0..3, signed ones -3..3 (products of K <= 9
// terms stay within every dtype, so results are exact everywhere).
static double dot_val(cml_dtype_t dtype, int64_t i, int salt) {
  int64_t h = (i * 7 + salt * 13 + (i * i) % 5) % 7;
  if (cml_dtype_is_unsigned_int(dtype)) return (double)(h % 4);
  return (double)(h - 3);
}

// A parameter of |dtype| from real parts |re| and (complex only) imaginary parts |im|.
static cml_value_t dot_param(bt_t* t, cml_function_t* f, cml_dtype_t dtype, int32_t rank,
                             const int64_t* dims, const double* re, const double* im) {
  if (cml_dtype_is_complex(dtype)) {
    int64_t n = 1;
    for (int32_t i = 0; i < rank; ++i) n *= dims[i];
    double* ri = bt_alloc(t, sizeof(double) * 2 * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; ++i) ri[2 * i] = re[i], ri[2 * i + 1] = im ? im[i] : 0.0;
    bt_tensor_t x = bt_tensor_c(t, dtype, rank, dims, ri);
    return bt_param(t, f, &x);
  }
  return bt_param_f64(t, f, dtype, rank, dims, re);
}

// Checks |got| against real/imaginary doubles (exact for ints and exactly representable
// values; |rtol| > 0 allows a relative error for inexact float results).
static void dot_expect(bt_t* t, const char* what, const bt_tensor_t* got, cml_dtype_t dtype,
                       int32_t rank, const int64_t* dims, const double* re, const double* im,
                       double rtol) {
  int64_t n = 1;
  for (int32_t i = 0; i < rank; ++i) n *= dims[i];
  if (cml_dtype_is_complex(dtype)) {
    double* ri = bt_alloc(t, sizeof(double) * 2 * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; ++i) ri[2 * i] = re[i], ri[2 * i + 1] = im ? im[i] : 0.0;
    bt_tensor_t want = bt_tensor_c(t, dtype, rank, dims, ri);
    bt_expect_close(t, what, got, &want, rtol, rtol > 0 ? 1e-5 : 0);
  } else if (cml_dtype_is_int(dtype)) {
    int64_t* iv = bt_alloc(t, sizeof(int64_t) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; ++i) iv[i] = (int64_t)re[i];
    bt_expect_i64(t, what, got, dtype, rank, dims, iv);
  } else if (rtol > 0) {
    bt_tensor_t want = bt_tensor_f64(t, dtype, rank, dims, re);
    bt_expect_close(t, what, got, &want, rtol, 1e-5);
  } else {
    bt_expect_f64(t, what, got, dtype, rank, dims, re, 0);
  }
}

//===--- plain matmul over every dtype ---===//

// [5, 7] x [7, 11] (odd sizes) with values exact in the dtype.
static void dot_matmul_case(bt_t* t, cml_dtype_t dtype) {
  if (!dot_dtype_ok(t, CML_OP_DOT_GENERAL, dtype)) return;
  enum { M = 5, K = 7, N = 11 };
  double a[M * K], ai[M * K], b[K * N], bi[K * N], want[M * N], wanti[M * N];
  bool cx = cml_dtype_is_complex(dtype);
  for (int i = 0; i < M * K; ++i)
    a[i] = dot_val(dtype, i, 1), ai[i] = cx ? dot_val(dtype, i, 5) : 0;
  for (int i = 0; i < K * N; ++i)
    b[i] = dot_val(dtype, i, 2), bi[i] = cx ? dot_val(dtype, i, 9) : 0;
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double re = 0, im = 0;
      for (int k = 0; k < K; ++k) {
        re += a[m * K + k] * b[k * N + n] - ai[m * K + k] * bi[k * N + n];
        im += a[m * K + k] * bi[k * N + n] + ai[m * K + k] * b[k * N + n];
      }
      want[m * N + n] = re, wanti[m * N + n] = im;
    }
  cml_function_t* f = bt_main(t);
  cml_value_t x = dot_param(t, f, dtype, 2, (int64_t[]){M, K}, a, ai);
  cml_value_t y = dot_param(t, f, dtype, 2, (int64_t[]){K, N}, b, bi);
  cml_dot_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.lhs_contracting_count = cfg.rhs_contracting_count = 1;
  cfg.lhs_contracting_axes[0] = 1;
  cfg.rhs_contracting_axes[0] = 0;
  cml_value_t z = cml_op_dot_general(f, x, y, &cfg);
  bt_tensor_t out[1];
  if (!bt_exec(t, &z, 1, out)) return;
  dot_expect(t, "matmul", &out[0], dtype, 2, (int64_t[]){M, N}, want, wanti, 0);
}

// Batch axis, transposed layouts: lhs [K=3, B=2, M=4], rhs [N=5, K=3, B=2]; output [B, M, N].
static void dot_batch_transposed_case(bt_t* t, cml_dtype_t dtype) {
  if (!dot_dtype_ok(t, CML_OP_DOT_GENERAL, dtype)) return;
  enum { B = 2, M = 4, K = 3, N = 5 };
  double a[K * B * M], b[N * K * B], want[B * M * N];
  for (int i = 0; i < K * B * M; ++i) a[i] = dot_val(dtype, i, 3);
  for (int i = 0; i < N * K * B; ++i) b[i] = dot_val(dtype, i, 4);
  for (int bb = 0; bb < B; ++bb)
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) {
        double s = 0;
        for (int k = 0; k < K; ++k) s += a[(k * B + bb) * M + m] * b[(n * K + k) * B + bb];
        want[(bb * M + m) * N + n] = s;
      }
  cml_function_t* f = bt_main(t);
  cml_value_t x = dot_param(t, f, dtype, 3, (int64_t[]){K, B, M}, a, NULL);
  cml_value_t y = dot_param(t, f, dtype, 3, (int64_t[]){N, K, B}, b, NULL);
  cml_dot_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.lhs_contracting_count = cfg.rhs_contracting_count = 1;
  cfg.lhs_contracting_axes[0] = 0;
  cfg.rhs_contracting_axes[0] = 1;
  cfg.lhs_batch_count = cfg.rhs_batch_count = 1;
  cfg.lhs_batch_axes[0] = 1;
  cfg.rhs_batch_axes[0] = 2;
  cml_value_t z = cml_op_dot_general(f, x, y, &cfg);
  bt_tensor_t out[1];
  if (!bt_exec(t, &z, 1, out)) return;
  dot_expect(t, "batched transposed", &out[0], dtype, 3, (int64_t[]){B, M, N}, want, NULL, 0);
}

// Dot's vector forms: v.v -> scalar, M.v, v.M, M.M.
static void dot_vector_forms_case(bt_t* t, cml_dtype_t dtype) {
  if (!dot_dtype_ok(t, CML_OP_DOT, dtype)) return;
  enum { M = 3, K = 4, N = 2 };
  double mk[M * K], kn[K * N], k1[K], k2[K];
  for (int i = 0; i < M * K; ++i) mk[i] = dot_val(dtype, i, 6);
  for (int i = 0; i < K * N; ++i) kn[i] = dot_val(dtype, i, 7);
  for (int i = 0; i < K; ++i) k1[i] = dot_val(dtype, i, 8), k2[i] = dot_val(dtype, i, 10);
  double vv = 0, mv[M] = {0}, vm[N] = {0}, mm[M * N] = {0};
  for (int k = 0; k < K; ++k) vv += k1[k] * k2[k];
  for (int m = 0; m < M; ++m)
    for (int k = 0; k < K; ++k) mv[m] += mk[m * K + k] * k1[k];
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < K; ++k) vm[n] += k1[k] * kn[k * N + n];
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n)
      for (int k = 0; k < K; ++k) mm[m * N + n] += mk[m * K + k] * kn[k * N + n];
  cml_function_t* f = bt_main(t);
  cml_value_t pmk = dot_param(t, f, dtype, 2, (int64_t[]){M, K}, mk, NULL);
  cml_value_t pkn = dot_param(t, f, dtype, 2, (int64_t[]){K, N}, kn, NULL);
  cml_value_t pk1 = dot_param(t, f, dtype, 1, (int64_t[]){K}, k1, NULL);
  cml_value_t pk2 = dot_param(t, f, dtype, 1, (int64_t[]){K}, k2, NULL);
  cml_value_t outs[4] = {cml_op_dot(f, pk1, pk2), cml_op_dot(f, pmk, pk1), cml_op_dot(f, pk1, pkn),
                         cml_op_dot(f, pmk, pkn)};
  bt_tensor_t out[4];
  if (!bt_exec(t, outs, 4, out)) return;
  dot_expect(t, "vector.vector", &out[0], dtype, 0, NULL, &vv, NULL, 0);
  dot_expect(t, "matrix.vector", &out[1], dtype, 1, (int64_t[]){M}, mv, NULL, 0);
  dot_expect(t, "vector.matrix", &out[2], dtype, 1, (int64_t[]){N}, vm, NULL, 0);
  dot_expect(t, "matrix.matrix", &out[3], dtype, 2, (int64_t[]){M, N}, mm, NULL, 0);
}

// clang-format off
#define DOT_DTYPES(X)      \
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
  X(f64, CML_DTYPE_F64)    \
  X(c64, CML_DTYPE_C64)    \
  X(c128, CML_DTYPE_C128)
// clang-format on

#define DOT_DEFINE(name, dt)                                                              \
  static void case_matmul_##name(bt_t* t) { dot_matmul_case(t, dt); }                     \
  static void case_batch_transposed_##name(bt_t* t) { dot_batch_transposed_case(t, dt); } \
  static void case_vector_forms_##name(bt_t* t) { dot_vector_forms_case(t, dt); }
DOT_DTYPES(DOT_DEFINE)
#undef DOT_DEFINE

//===--- several contracting and batch axes, rank 8 ---===//

static void case_multi_axes_f32(bt_t* t) {
  // lhs [K1=2, B1=2, M=3, K2=3, B2=2], rhs [B2=2, K2=3, N=2, B1=2, K1=2]:
  // contracting (0, 3) with (4, 1), batch (1, 4) with (3, 0). Output [B1, B2, M, N].
  if (!dot_dtype_ok(t, CML_OP_DOT_GENERAL, CML_DTYPE_F32)) return;
  int64_t ld[5] = {2, 2, 3, 3, 2}, rd[5] = {2, 3, 2, 2, 2};
  double a[72], b[48], want[24];
  for (int i = 0; i < 72; ++i) a[i] = dot_val(CML_DTYPE_F32, i, 11);
  for (int i = 0; i < 48; ++i) b[i] = dot_val(CML_DTYPE_F32, i, 12);
  for (int b1 = 0; b1 < 2; ++b1)
    for (int b2 = 0; b2 < 2; ++b2)
      for (int m = 0; m < 3; ++m)
        for (int n = 0; n < 2; ++n) {
          double s = 0;
          for (int k1 = 0; k1 < 2; ++k1)
            for (int k2 = 0; k2 < 3; ++k2)
              s += a[(((k1 * 2 + b1) * 3 + m) * 3 + k2) * 2 + b2] *
                   b[(((b2 * 3 + k2) * 2 + n) * 2 + b1) * 2 + k1];
          want[((b1 * 2 + b2) * 3 + m) * 2 + n] = s;
        }
  cml_function_t* f = bt_main(t);
  cml_value_t x = bt_param_f64(t, f, CML_DTYPE_F32, 5, ld, a);
  cml_value_t y = bt_param_f64(t, f, CML_DTYPE_F32, 5, rd, b);
  cml_dot_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.lhs_contracting_count = cfg.rhs_contracting_count = 2;
  cfg.lhs_contracting_axes[0] = 0, cfg.lhs_contracting_axes[1] = 3;
  cfg.rhs_contracting_axes[0] = 4, cfg.rhs_contracting_axes[1] = 1;
  cfg.lhs_batch_count = cfg.rhs_batch_count = 2;
  cfg.lhs_batch_axes[0] = 1, cfg.lhs_batch_axes[1] = 4;
  cfg.rhs_batch_axes[0] = 3, cfg.rhs_batch_axes[1] = 0;
  cml_value_t z = cml_op_dot_general(f, x, y, &cfg);
  bt_tensor_t out[1];
  if (!bt_exec(t, &z, 1, out)) return;
  bt_expect_f64(t, "multi axes", &out[0], CML_DTYPE_F32, 4, (int64_t[]){2, 2, 3, 2}, want, 0);
}

static void case_rank8_batch_i32(bt_t* t) {
  // lhs [2,1,2,1,2,1,3,2] (batch axes 0..5, M = 3 at axis 6, K = 2 at axis 7),
  // rhs [2,1,2,1,2,1,2,2] (batch 0..5, K axis 6, N axis 7): output rank 8.
  if (!dot_dtype_ok(t, CML_OP_DOT_GENERAL, CML_DTYPE_I32)) return;
  int64_t ld[8] = {2, 1, 2, 1, 2, 1, 3, 2}, rd[8] = {2, 1, 2, 1, 2, 1, 2, 2};
  enum { B = 8, M = 3, K = 2, N = 2 };
  double a[B * M * K], b[B * K * N], want[B * M * N];
  for (int i = 0; i < B * M * K; ++i) a[i] = dot_val(CML_DTYPE_I32, i, 13);
  for (int i = 0; i < B * K * N; ++i) b[i] = dot_val(CML_DTYPE_I32, i, 14);
  for (int bb = 0; bb < B; ++bb)
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) {
        double s = 0;
        for (int k = 0; k < K; ++k) s += a[(bb * M + m) * K + k] * b[(bb * K + k) * N + n];
        want[(bb * M + m) * N + n] = s;
      }
  cml_function_t* f = bt_main(t);
  cml_value_t x = bt_param_f64(t, f, CML_DTYPE_I32, 8, ld, a);
  cml_value_t y = bt_param_f64(t, f, CML_DTYPE_I32, 8, rd, b);
  cml_dot_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.lhs_contracting_count = cfg.rhs_contracting_count = 1;
  cfg.lhs_contracting_axes[0] = 7;
  cfg.rhs_contracting_axes[0] = 6;
  cfg.lhs_batch_count = cfg.rhs_batch_count = 6;
  for (int i = 0; i < 6; ++i) cfg.lhs_batch_axes[i] = cfg.rhs_batch_axes[i] = i;
  cml_value_t z = cml_op_dot_general(f, x, y, &cfg);
  bt_tensor_t out[1];
  if (!bt_exec(t, &z, 1, out)) return;
  dot_expect(t, "rank 8", &out[0], CML_DTYPE_I32, 8, (int64_t[]){2, 1, 2, 1, 2, 1, 3, 2}, want,
             NULL, 0);
}

//===--- accumulator / output dtype configs ---===//

typedef struct dot_acc_config_t {
  const char* name;
  cml_dtype_t in, acc, out;
} dot_acc_config_t;

static void dot_acc_case(bt_t* t, const dot_acc_config_t* c) {
  if (!dot_dtype_ok(t, CML_OP_DOT_GENERAL, c->in) || !bt_require_dtype(t, c->acc) ||
      !bt_require_dtype(t, c->out))
    return;
  // Sums that overflow the input dtype but not the accumulator: 100 * 100 * 4 = 40000 for
  // ints (i8 -> i32), and 2048 + 8 * 1 for half types (not representable when summed in f16:
  // 2048 + 1 rounds back to 2048).
  enum { K = 9 };
  double a[K], b[K], want;
  if (cml_dtype_is_int(c->in)) {
    for (int i = 0; i < K; ++i) a[i] = i < 4 ? 100 : 0, b[i] = i < 4 ? 100 : 0;
    want = 40000;
  } else {
    double big = c->in == CML_DTYPE_BF16 ? 256 : 2048;
    for (int i = 0; i < K; ++i) a[i] = i == 0 ? big : 1, b[i] = 1;
    want = big + 8;
  }
  cml_function_t* f = bt_main(t);
  cml_value_t x = bt_param_f64(t, f, c->in, 1, (int64_t[]){K}, a);
  cml_value_t y = bt_param_f64(t, f, c->in, 1, (int64_t[]){K}, b);
  cml_dot_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.lhs_contracting_count = cfg.rhs_contracting_count = 1;
  cfg.accumulator_dtype = c->acc;
  cfg.output_dtype = c->out;
  cml_value_t z = cml_op_dot_general(f, x, y, &cfg);
  bt_tensor_t out[1];
  if (!bt_exec(t, &z, 1, out)) return;
  dot_expect(t, c->name, &out[0], c->out, 0, NULL, &want, NULL, 0);
}

static const dot_acc_config_t kDotAccConfigs[] = {
    {"i8_acc_i32_out_i32", CML_DTYPE_I8, CML_DTYPE_I32, CML_DTYPE_I32},
    {"u8_acc_u32_out_u32", CML_DTYPE_U8, CML_DTYPE_U32, CML_DTYPE_U32},
    {"i16_acc_i64_out_i64", CML_DTYPE_I16, CML_DTYPE_I64, CML_DTYPE_I64},
    {"bf16_acc_f32_out_f32", CML_DTYPE_BF16, CML_DTYPE_F32, CML_DTYPE_F32},
    {"bf16_acc_f32_out_bf16", CML_DTYPE_BF16, CML_DTYPE_F32, CML_DTYPE_BF16},
    {"f16_acc_f32_out_f16", CML_DTYPE_F16, CML_DTYPE_F32, CML_DTYPE_F16},
    {"f16_default_acc", CML_DTYPE_F16, CML_DTYPE_INVALID, CML_DTYPE_INVALID},
    {"f32_acc_f64_out_f64", CML_DTYPE_F32, CML_DTYPE_F64, CML_DTYPE_F64},
    {"i32_acc_i32_out_f32", CML_DTYPE_I32, CML_DTYPE_I32, CML_DTYPE_F32},
};

static void dot_acc_case_fixed(bt_t* t, int i) {
  dot_acc_config_t c = kDotAccConfigs[i];
  if (c.acc == CML_DTYPE_INVALID) c.acc = c.out = c.in;  // defaults: f16 sums in f32 inside
  dot_acc_case(t, &c);
}
static void case_acc_0(bt_t* t) { dot_acc_case_fixed(t, 0); }
static void case_acc_1(bt_t* t) { dot_acc_case_fixed(t, 1); }
static void case_acc_2(bt_t* t) { dot_acc_case_fixed(t, 2); }
static void case_acc_3(bt_t* t) { dot_acc_case_fixed(t, 3); }
static void case_acc_4(bt_t* t) { dot_acc_case_fixed(t, 4); }
static void case_acc_5(bt_t* t) { dot_acc_case_fixed(t, 5); }
static void case_acc_6(bt_t* t) { dot_acc_case_fixed(t, 6); }
static void case_acc_7(bt_t* t) { dot_acc_case_fixed(t, 7); }
static void case_acc_8(bt_t* t) { dot_acc_case_fixed(t, 8); }

//===--- larger products against a double reference ---===//

// rhs is [B, K, N], or [B, N, K] when |rhs_t| (weights stored transposed, as x . W^T).
static void dot_large_case_t(bt_t* t, cml_dtype_t dtype, int64_t B, int64_t M, int64_t K, int64_t N,
                             bool rhs_t) {
  if (!dot_dtype_ok(t, CML_OP_DOT_GENERAL, dtype)) return;
  size_t na = (size_t)(B * M * K), nb = (size_t)(B * K * N), nc = (size_t)(B * M * N);
  double* a = bt_alloc(t, sizeof(double) * na);
  double* b = bt_alloc(t, sizeof(double) * nb);
  double* want = bt_alloc(t, sizeof(double) * nc);
  for (size_t i = 0; i < na; ++i) a[i] = bt_rand_uniform(t, -1, 1);
  for (size_t i = 0; i < nb; ++i) b[i] = bt_rand_uniform(t, -1, 1);
  // Inputs are rounded to the dtype first, so the reference sees the same values.
  bt_tensor_t ta = bt_tensor_f64(t, dtype, 3, (int64_t[]){B, M, K}, a);
  bt_tensor_t tb =
      bt_tensor_f64(t, dtype, 3, rhs_t ? (int64_t[]){B, N, K} : (int64_t[]){B, K, N}, b);
  for (size_t i = 0; i < na; ++i) a[i] = bt_get_f64(&ta, (int64_t)i);
  for (size_t i = 0; i < nb; ++i) b[i] = bt_get_f64(&tb, (int64_t)i);
  for (int64_t bb = 0; bb < B; ++bb)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k)
          s +=
              a[(bb * M + m) * K + k] * (rhs_t ? b[(bb * N + n) * K + k] : b[(bb * K + k) * N + n]);
        want[(bb * M + m) * N + n] = s;
      }
  cml_function_t* f = bt_main(t);
  cml_value_t x = bt_param(t, f, &ta);
  cml_value_t y = bt_param(t, f, &tb);
  cml_dot_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.lhs_contracting_count = cfg.rhs_contracting_count = 1;
  cfg.lhs_contracting_axes[0] = 2;
  cfg.rhs_contracting_axes[0] = rhs_t ? 2 : 1;
  cfg.lhs_batch_count = cfg.rhs_batch_count = 1;
  cml_value_t z = cml_op_dot_general(f, x, y, &cfg);
  bt_tensor_t out[1];
  if (!bt_exec(t, &z, 1, out)) return;
  bt_tensor_t w = bt_tensor_f64(t, dtype, 3, (int64_t[]){B, M, N}, want);
  double tol = dtype == CML_DTYPE_F64 ? 1e-12 : dtype == CML_DTYPE_F32 ? 1e-5 : 2e-2;
  bt_expect_close(t, "large", &out[0], &w, tol, tol * sqrt((double)K));
}

static void dot_large_case(bt_t* t, cml_dtype_t dtype, int64_t B, int64_t M, int64_t K, int64_t N) {
  dot_large_case_t(t, dtype, B, M, K, N, false);
}

static void case_odd_5x7x11_f32(bt_t* t) { dot_large_case(t, CML_DTYPE_F32, 3, 5, 7, 11); }
static void case_blocked_f32(bt_t* t) { dot_large_case(t, CML_DTYPE_F32, 1, 130, 300, 70); }
static void case_attention_like_f32(bt_t* t) { dot_large_case(t, CML_DTYPE_F32, 24, 13, 32, 13); }
static void case_blocked_f64(bt_t* t) { dot_large_case(t, CML_DTYPE_F64, 2, 67, 129, 45); }
static void case_blocked_bf16(bt_t* t) { dot_large_case(t, CML_DTYPE_BF16, 1, 40, 64, 33); }
static void case_blocked_f16(bt_t* t) { dot_large_case(t, CML_DTYPE_F16, 2, 17, 64, 19); }
// Shapes of the C backend's other paths: M = 1 and N = 1 (GEMV), transposed weights, several
// k blocks (K > 256) with masked edges, f64 blocked with several k blocks.
static void case_gemv_row_f32(bt_t* t) { dot_large_case(t, CML_DTYPE_F32, 1, 1, 700, 300); }
static void case_gemv_row_wt_f32(bt_t* t) {
  dot_large_case_t(t, CML_DTYPE_F32, 3, 1, 513, 67, true);
}
static void case_gemv_col_f32(bt_t* t) { dot_large_case(t, CML_DTYPE_F32, 2, 300, 513, 1); }
static void case_gemv_row_f64(bt_t* t) { dot_large_case(t, CML_DTYPE_F64, 2, 1, 300, 129); }
// A wide GEMV (an LLM's vocabulary projection is x[1, d] . W[d, 32000]): more outputs than one
// task of the C backend's GEMV writes (4096), with few enough k values that one task would be
// asked to take them all.
static void case_gemv_row_wide_f32(bt_t* t) { dot_large_case(t, CML_DTYPE_F32, 1, 1, 5, 9000); }
static void case_gemv_row_wide_wt_f32(bt_t* t) {
  dot_large_case_t(t, CML_DTYPE_F32, 1, 1, 5, 9000, true);
}
static void case_blocked_wt_f32(bt_t* t) {
  dot_large_case_t(t, CML_DTYPE_F32, 1, 45, 600, 77, true);
}
static void case_blocked_multi_k_f64(bt_t* t) { dot_large_case(t, CML_DTYPE_F64, 1, 50, 600, 40); }

//===--- integer products with an i32 accumulator ---===//

// i8, u8 or i16 operands summed in i32 over several k blocks (K = 531, odd), with odd sizes,
// a batch and, for u8, the rhs stored [B, N, K] (the c backend runs these through its integer
// k-pair GEMM). The i16 values are mostly +-32767 and -32768, so the sums wrap: the result is
// the exact sum mod 2^32.
static void dot_int_i32_case(bt_t* t, cml_dtype_t dtype, bool rhs_t) {
  if (!dot_dtype_ok(t, CML_OP_DOT_GENERAL, dtype) || !bt_require_dtype(t, CML_DTYPE_I32)) return;
  enum { B = 2, M = 19, K = 531, N = 37 };
  const size_t na = (size_t)B * M * K, nb = (size_t)B * K * N, nc = (size_t)B * M * N;
  double* a = bt_alloc(t, sizeof(double) * na);
  double* b = bt_alloc(t, sizeof(double) * nb);
  double* want = bt_alloc(t, sizeof(double) * nc);
  for (size_t pass = 0; pass < 2; ++pass) {
    double* v = pass ? b : a;
    const size_t count = pass ? nb : na;
    for (size_t i = 0; i < count; ++i) {
      const int64_t h = (int64_t)(((uint64_t)i * 2654435761u + pass * 97u) >> 7);
      if (dtype == CML_DTYPE_I8) {
        v[i] = (double)(h % 256 - 128);
      } else if (dtype == CML_DTYPE_U8) {
        v[i] = (double)(h % 256);
      } else {
        static const double extremes[3] = {32767, -32768, -32767};
        v[i] = h % 4 < 3 ? extremes[h % 4] : (double)(h % 65536 - 32768);
      }
    }
  }
  for (int64_t bb = 0; bb < B; ++bb)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        uint64_t s = 0;
        for (int64_t k = 0; k < K; ++k) {
          const double y = rhs_t ? b[(bb * N + n) * K + k] : b[(bb * K + k) * N + n];
          s += (uint64_t)((int64_t)a[(bb * M + m) * K + k] * (int64_t)y);
        }
        want[(bb * M + m) * N + n] = (double)(int32_t)(uint32_t)s;
      }
  cml_function_t* f = bt_main(t);
  cml_value_t x = bt_param_f64(t, f, dtype, 3, (int64_t[]){B, M, K}, a);
  cml_value_t y =
      bt_param_f64(t, f, dtype, 3, rhs_t ? (int64_t[]){B, N, K} : (int64_t[]){B, K, N}, b);
  cml_dot_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.lhs_contracting_count = cfg.rhs_contracting_count = 1;
  cfg.lhs_contracting_axes[0] = 2;
  cfg.rhs_contracting_axes[0] = rhs_t ? 2 : 1;
  cfg.lhs_batch_count = cfg.rhs_batch_count = 1;
  cfg.accumulator_dtype = cfg.output_dtype = CML_DTYPE_I32;
  cml_value_t z = cml_op_dot_general(f, x, y, &cfg);
  bt_tensor_t out[1];
  if (!bt_exec(t, &z, 1, out)) return;
  dot_expect(t, "int_i32", &out[0], CML_DTYPE_I32, 3, (int64_t[]){B, M, N}, want, NULL, 0);
}

static void case_int_i32_i8(bt_t* t) { dot_int_i32_case(t, CML_DTYPE_I8, false); }
static void case_int_i32_u8_wt(bt_t* t) { dot_int_i32_case(t, CML_DTYPE_U8, true); }
static void case_int_i32_i16_wraps(bt_t* t) { dot_int_i32_case(t, CML_DTYPE_I16, false); }

//===--- edge values ---===//

static void dot_nan_inf_case(bt_t* t, cml_dtype_t dtype) {
  if (!dot_dtype_ok(t, CML_OP_DOT_GENERAL, dtype)) return;
  // Rows [1, NaN], [Inf, 1], [Inf, -Inf], [0, 5] times [2, 3] and [1, 1]: NaN propagates,
  // Inf survives, Inf - Inf is NaN.
  double a[8] = {1, NAN, INFINITY, 1, INFINITY, -INFINITY, 0, 5};
  double b[2] = {2, 3};
  double b2[2] = {1, 1};
  cml_function_t* f = bt_main(t);
  cml_value_t x = bt_param_f64(t, f, dtype, 2, (int64_t[]){4, 2}, a);
  cml_value_t y = bt_param_f64(t, f, dtype, 1, (int64_t[]){2}, b);
  cml_value_t y2 = bt_param_f64(t, f, dtype, 1, (int64_t[]){2}, b2);
  cml_value_t outs[2] = {cml_op_dot(f, x, y), cml_op_dot(f, x, y2)};
  bt_tensor_t out[2];
  if (!bt_exec(t, outs, 2, out)) return;
  bt_expect_f64(t, "times [2,3]", &out[0], dtype, 1, (int64_t[]){4},
                (double[]){NAN, INFINITY, NAN, 15}, 0);
  bt_expect_f64(t, "times [1,1]", &out[1], dtype, 1, (int64_t[]){4},
                (double[]){NAN, INFINITY, NAN, 5}, 0);
}
static void case_nan_inf_f32(bt_t* t) { dot_nan_inf_case(t, CML_DTYPE_F32); }
static void case_nan_inf_f64(bt_t* t) { dot_nan_inf_case(t, CML_DTYPE_F64); }
static void case_nan_inf_bf16(bt_t* t) { dot_nan_inf_case(t, CML_DTYPE_BF16); }
static void case_nan_inf_f16(bt_t* t) { dot_nan_inf_case(t, CML_DTYPE_F16); }

static void case_int_wraparound(bt_t* t) {
  if (!dot_dtype_ok(t, CML_OP_DOT_GENERAL, CML_DTYPE_I32) || !bt_require_dtype(t, CML_DTYPE_U8) ||
      !bt_require_dtype(t, CML_DTYPE_I64))
    return;
  cml_function_t* f = bt_main(t);
  // i32: 2^30 * 4 + 5 = 2^32 + 5 wraps to 5.
  cml_value_t a = bt_param_i64(t, f, CML_DTYPE_I32, 1, (int64_t[]){2}, (int64_t[]){1 << 30, 5});
  cml_value_t b = bt_param_i64(t, f, CML_DTYPE_I32, 1, (int64_t[]){2}, (int64_t[]){4, 1});
  // u8: 200 * 2 + 100 = 500 -> 244.
  cml_value_t c = bt_param_i64(t, f, CML_DTYPE_U8, 1, (int64_t[]){2}, (int64_t[]){200, 100});
  cml_value_t d = bt_param_i64(t, f, CML_DTYPE_U8, 1, (int64_t[]){2}, (int64_t[]){2, 1});
  // i64: INT64_MAX * 2 = -2 (mod 2^64).
  cml_value_t e = bt_param_i64(t, f, CML_DTYPE_I64, 1, (int64_t[]){1}, (int64_t[]){INT64_MAX});
  cml_value_t g = bt_param_i64(t, f, CML_DTYPE_I64, 1, (int64_t[]){1}, (int64_t[]){2});
  cml_value_t outs[3] = {cml_op_dot(f, a, b), cml_op_dot(f, c, d), cml_op_dot(f, e, g)};
  bt_tensor_t out[3];
  if (!bt_exec(t, outs, 3, out)) return;
  bt_expect_i64(t, "i32", &out[0], CML_DTYPE_I32, 0, NULL, (int64_t[]){5});
  bt_expect_i64(t, "u8", &out[1], CML_DTYPE_U8, 0, NULL, (int64_t[]){244});
  bt_expect_i64(t, "i64", &out[2], CML_DTYPE_I64, 0, NULL, (int64_t[]){-2});
}

static void case_zero_size(bt_t* t) {
  if (!dot_dtype_ok(t, CML_OP_DOT_GENERAL, CML_DTYPE_F32) || !bt_require_dtype(t, CML_DTYPE_I32))
    return;
  cml_function_t* f = bt_main(t);
  // K = 0: [2, 0] x [0, 3] = zeros [2, 3]; M = 0: [0, 4] x [4, 3] = [0, 3].
  cml_value_t a = bt_param_f64(t, f, CML_DTYPE_F32, 2, (int64_t[]){2, 0}, NULL);
  cml_value_t b = bt_param_f64(t, f, CML_DTYPE_F32, 2, (int64_t[]){0, 3}, NULL);
  cml_value_t c = bt_param_f64(t, f, CML_DTYPE_F32, 2, (int64_t[]){0, 4}, NULL);
  cml_value_t d = bt_param_f64(t, f, CML_DTYPE_F32, 2, (int64_t[]){4, 3},
                               (double[]){1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  cml_value_t ia = bt_param_i64(t, f, CML_DTYPE_I32, 2, (int64_t[]){2, 0}, NULL);
  cml_value_t ib = bt_param_i64(t, f, CML_DTYPE_I32, 2, (int64_t[]){0, 3}, NULL);
  cml_value_t outs[3] = {cml_op_dot(f, a, b), cml_op_dot(f, c, d), cml_op_dot(f, ia, ib)};
  bt_tensor_t out[3];
  if (!bt_exec(t, outs, 3, out)) return;
  bt_expect_f64(t, "K = 0", &out[0], CML_DTYPE_F32, 2, (int64_t[]){2, 3},
                (double[]){0, 0, 0, 0, 0, 0}, 0);
  bt_expect_f64(t, "M = 0", &out[1], CML_DTYPE_F32, 2, (int64_t[]){0, 3}, NULL, 0);
  bt_expect_i64(t, "K = 0 int", &out[2], CML_DTYPE_I32, 2, (int64_t[]){2, 3},
                (int64_t[]){0, 0, 0, 0, 0, 0});
}

static void case_scalar_operands_outer_product(bt_t* t) {
  // No contracting axes at all: an outer product of [3] and [2] -> [3, 2]; scalars x scalars.
  if (!dot_dtype_ok(t, CML_OP_DOT_GENERAL, CML_DTYPE_F32)) return;
  cml_function_t* f = bt_main(t);
  cml_value_t a = bt_param_f64(t, f, CML_DTYPE_F32, 1, (int64_t[]){3}, (double[]){1, 2, 3});
  cml_value_t b = bt_param_f64(t, f, CML_DTYPE_F32, 1, (int64_t[]){2}, (double[]){10, -1});
  cml_value_t s1 = bt_param_f64(t, f, CML_DTYPE_F32, 0, NULL, (double[]){3});
  cml_value_t s2 = bt_param_f64(t, f, CML_DTYPE_F32, 0, NULL, (double[]){-4});
  cml_dot_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cml_value_t outs[2] = {cml_op_dot_general(f, a, b, &cfg), cml_op_dot_general(f, s1, s2, &cfg)};
  bt_tensor_t out[2];
  if (!bt_exec(t, outs, 2, out)) return;
  bt_expect_f64(t, "outer", &out[0], CML_DTYPE_F32, 2, (int64_t[]){3, 2},
                (double[]){10, -1, 20, -2, 30, -3}, 0);
  bt_expect_f64(t, "scalar", &out[1], CML_DTYPE_F32, 0, NULL, (double[]){-12}, 0);
}

static void case_errors(bt_t* t) {
  if (!bt_require_op(t, CML_OP_DOT_GENERAL)) return;
  cml_function_t* f = bt_main(t);
  cml_shape_t s1 = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){2, 3});
  cml_shape_t s2 = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){4, 5});
  cml_value_t a = cml_parameter(f, "a", &s1);
  cml_value_t b = cml_parameter(f, "b", &s2);
  cml_dot_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.lhs_contracting_count = cfg.rhs_contracting_count = 1;
  cfg.lhs_contracting_axes[0] = 1;
  cml_value_t z = cml_op_dot_general(f, a, b, &cfg);
  if (z != CML_VALUE_INVALID) bt_fail(t, "mismatched contracting sizes were accepted");
  bt_expect_builder_error(t, CML_STATUS_INVALID_ARGUMENT,
                          (const char* const[]){"DotGeneral", "[2, 3]", "[4, 5]", NULL});
}

//===--- the group ---===//

#define DOT_ENTRIES(name, dt)                                                        \
  {"matmul_" #name, CML_OP_DOT_GENERAL, case_matmul_##name},                         \
      {"batch_transposed_" #name, CML_OP_DOT_GENERAL, case_batch_transposed_##name}, \
      {"vector_forms_" #name, CML_OP_DOT, case_vector_forms_##name},

const bt_case_t bt_cases_linalg_dot[] = {
    DOT_DTYPES(DOT_ENTRIES){"multi_axes_f32", CML_OP_DOT_GENERAL, case_multi_axes_f32},
    {"rank8_batch_i32", CML_OP_DOT_GENERAL, case_rank8_batch_i32},
    {"acc_i8_acc_i32_out_i32", CML_OP_DOT_GENERAL, case_acc_0},
    {"acc_u8_acc_u32_out_u32", CML_OP_DOT_GENERAL, case_acc_1},
    {"acc_i16_acc_i64_out_i64", CML_OP_DOT_GENERAL, case_acc_2},
    {"acc_bf16_acc_f32_out_f32", CML_OP_DOT_GENERAL, case_acc_3},
    {"acc_bf16_acc_f32_out_bf16", CML_OP_DOT_GENERAL, case_acc_4},
    {"acc_f16_acc_f32_out_f16", CML_OP_DOT_GENERAL, case_acc_5},
    {"acc_f16_default", CML_OP_DOT_GENERAL, case_acc_6},
    {"acc_f32_acc_f64_out_f64", CML_OP_DOT_GENERAL, case_acc_7},
    {"acc_i32_acc_i32_out_f32", CML_OP_DOT_GENERAL, case_acc_8},
    {"odd_5x7x11_f32", CML_OP_DOT_GENERAL, case_odd_5x7x11_f32},
    {"blocked_f32", CML_OP_DOT_GENERAL, case_blocked_f32},
    {"attention_like_f32", CML_OP_DOT_GENERAL, case_attention_like_f32},
    {"blocked_f64", CML_OP_DOT_GENERAL, case_blocked_f64},
    {"blocked_bf16", CML_OP_DOT_GENERAL, case_blocked_bf16},
    {"blocked_f16", CML_OP_DOT_GENERAL, case_blocked_f16},
    {"gemv_row_f32", CML_OP_DOT_GENERAL, case_gemv_row_f32},
    {"gemv_row_transposed_weights_f32", CML_OP_DOT_GENERAL, case_gemv_row_wt_f32},
    {"gemv_col_f32", CML_OP_DOT_GENERAL, case_gemv_col_f32},
    {"gemv_row_f64", CML_OP_DOT_GENERAL, case_gemv_row_f64},
    {"gemv_row_wide_f32", CML_OP_DOT_GENERAL, case_gemv_row_wide_f32},
    {"gemv_row_wide_transposed_weights_f32", CML_OP_DOT_GENERAL, case_gemv_row_wide_wt_f32},
    {"blocked_transposed_weights_f32", CML_OP_DOT_GENERAL, case_blocked_wt_f32},
    {"blocked_multi_k_f64", CML_OP_DOT_GENERAL, case_blocked_multi_k_f64},
    {"int_acc_i32_i8", CML_OP_DOT_GENERAL, case_int_i32_i8},
    {"int_acc_i32_u8_transposed_weights", CML_OP_DOT_GENERAL, case_int_i32_u8_wt},
    {"int_acc_i32_i16_wraps", CML_OP_DOT_GENERAL, case_int_i32_i16_wraps},
    {"nan_inf_f32", CML_OP_DOT, case_nan_inf_f32},
    {"nan_inf_f64", CML_OP_DOT, case_nan_inf_f64},
    {"nan_inf_bf16", CML_OP_DOT, case_nan_inf_bf16},
    {"nan_inf_f16", CML_OP_DOT, case_nan_inf_f16},
    {"int_wraparound", CML_OP_DOT, case_int_wraparound},
    {"zero_size", CML_OP_DOT, case_zero_size},
    {"outer_product_and_scalars", CML_OP_DOT_GENERAL, case_scalar_operands_outer_product},
    {"errors", CML_OP_DOT_GENERAL, case_errors},
};
const size_t bt_cases_linalg_dot_count = sizeof bt_cases_linalg_dot / sizeof bt_cases_linalg_dot[0];
