// SPDX-License-Identifier: Apache-2.0
// backendtest/cases_fused_quant.c: compliance cases of the quantized fused ops (cml/fused.h):
// FusedQuantizedDense on every GGML format (batch 1 and 7 in one graph, every activation over
// the formats, with and without bias), on Linear Int8/Uint8/Int4/Uint4/Int2/Uint2 weights
// (symmetric and with zero points, odd K and N, a short last block) and NF4; and
// QuantizedEmbeddingLookup on five formats; plus their argument errors.
//
// Like every fused op they always build (natively or decomposed), so the cases never require
// the op. GGML weights come from cml_quantize_ggml on random floats and the expected values from
// cml_dequantize_ggml (bit-identical to ggml's decoders) in double; the lookup must return the
// dequantized rows exactly, the products within f32 summation error.
#include <math.h>
#include <string.h>

#include "backendtest/bt.h"
#include "cml/fused.h"

static double fq_act(double v, cml_activation_t act) {
  switch (act) {
    case CML_ACTIVATION_GELU:
      return 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
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

// A backend configured with int8 activations for quantized products (`quant_int8=true`, a
// documented lossy option; docs/compliance.md latitude 3) rounds each group of up to 256
// activations of a batch-1 row to multiples of dx = max|x_group| / 127: the product may move by
// sum over groups of (dx / 2) sum |w| in the group (groups of 256 bound those of 32 too).
static double fq_int8_activation_bound(bt_t* t, const double* x, const double* w, int64_t m,
                                       int64_t k, int64_t n) {
  const char* config = cml_backend_config(bt_backend(t));
  if (m != 1 || !config || !strstr(config, "quant_int8=true")) return 0;
  double worst = 0;
  for (int64_t j = 0; j < n; ++j) {
    double bound = 0;
    for (int64_t g = 0; g < k; g += 256) {
      double xmax = 0, wsum = 0;
      for (int64_t kk = g; kk < k && kk < g + 256; ++kk) {
        xmax = fmax(xmax, fabs(x[kk]));
        wsum += fabs(w[j * k + kk]);
      }
      bound += xmax / 127 / 2 * wsum * (1 + 1e-4);
    }
    worst = fmax(worst, bound);
  }
  return worst;
}

// Checks y [m, n] = act(x [m, k] @ w^T + bias) with w given as doubles [n, k].
static void fq_expect_dense(bt_t* t, const char* what, const bt_tensor_t* got, const double* x,
                            const double* w, const double* bias, int64_t m, int64_t k, int64_t n,
                            cml_activation_t act) {
  double* want = bt_alloc(t, (size_t)(m * n) * sizeof(double));
  double mag = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = bias ? bias[j] : 0, a = 0;
      for (int64_t kk = 0; kk < k; ++kk) {
        s += x[i * k + kk] * w[j * k + kk];
        a += fabs(x[i * k + kk] * w[j * k + kk]);
      }
      want[i * n + j] = fq_act(s, act);
      mag = fmax(mag, a);
    }
  }
  bt_tensor_t wt = bt_tensor_f64(t, CML_DTYPE_F32, 2, (int64_t[]){m, n}, want);
  // f32 sums in any order: K * 2^-23 * sum |x w|, times the activation's slope (<= 1.5).
  const double rounding = 1.5 * fq_int8_activation_bound(t, x, w, m, k, n);
  bt_expect_close(t, what, got, &wt, 1e-6, 1.5 * (double)(k + 2) * 1.2e-7 * mag + 1e-6 + rounding);
}

static cml_value_t fq_x(bt_t* t, cml_function_t* f, int64_t m, int64_t k, double** out) {
  double* v = bt_alloc(t, (size_t)(m * k) * sizeof(double));
  for (int64_t i = 0; i < m * k; ++i) v[i] = (float)bt_rand_uniform(t, -1, 1);
  *out = v;
  return bt_param_f64(t, f, CML_DTYPE_F32, 2, (int64_t[]){m, k}, v);
}

//===--- GGML dense ---===//

static void fq_ggml_dense(bt_t* t, cml_ggml_type_t type, int64_t n, cml_activation_t act,
                          bool with_bias) {
  if (!bt_require_dtype(t, CML_DTYPE_F32) || !bt_require_dtype(t, CML_DTYPE_U8)) return;
  const int64_t k = 2 * cml_ggml_type_values_per_block(type);
  const int64_t rb = cml_ggml_row_bytes(type, k);
  float* wf = bt_alloc(t, (size_t)(n * k) * sizeof(float));
  for (int64_t i = 0; i < n * k; ++i) wf[i] = (float)bt_rand_uniform(t, -1.5, 1.5);
  uint8_t* wq = bt_alloc(t, (size_t)(n * rb));
  if (!bt_ok(t, cml_quantize_ggml(type, wf, n, k, wq, (size_t)(n * rb)), "cml_quantize_ggml") ||
      !bt_ok(t, cml_dequantize_ggml(type, wq, n, k, wf), "cml_dequantize_ggml"))
    return;
  double* wd = bt_alloc(t, (size_t)(n * k) * sizeof(double));
  for (int64_t i = 0; i < n * k; ++i) wd[i] = wf[i];
  cml_function_t* f = bt_main(t);
  double *x1, *x7, *bias = NULL;
  cml_value_t xv1 = fq_x(t, f, 1, k, &x1);
  cml_value_t xv7 = fq_x(t, f, 7, k, &x7);
  bt_tensor_t wt = bt_tensor(t, CML_DTYPE_U8, 2, (int64_t[]){n, rb}, wq);
  cml_value_t wv = bt_param(t, f, &wt);
  cml_value_t bv = CML_VALUE_INVALID;
  if (with_bias) {
    bias = bt_alloc(t, (size_t)n * sizeof(double));
    for (int64_t j = 0; j < n; ++j) bias[j] = (float)bt_rand_uniform(t, -0.5, 0.5);
    bv = bt_param_f64(t, f, CML_DTYPE_F32, 1, (int64_t[]){n}, bias);
  }
  cml_quantization_t q;
  cml_quantization_init(&q);
  q.scheme = CML_QUANT_GGML;
  q.ggml_type = type;
  cml_value_t y[2];
  y[0] = cml_op_fused_quantized_dense(f, xv1, wv, bv, &q, act);
  y[1] = cml_op_fused_quantized_dense(f, xv7, wv, bv, &q, act);
  bt_tensor_t out[2];
  if (!bt_exec(t, y, 2, out)) return;
  fq_expect_dense(t, "batch 1", &out[0], x1, wd, bias, 1, k, n, act);
  fq_expect_dense(t, "batch 7", &out[1], x7, wd, bias, 7, k, n, act);
}

#define FQ_GGML(name, type, n, act, bias) \
  static void case_##name(bt_t* t) { fq_ggml_dense(t, type, n, act, bias); }
FQ_GGML(dense_q4_0, CML_GGML_Q4_0, 9, CML_ACTIVATION_NONE, true)
FQ_GGML(dense_q8_0, CML_GGML_Q8_0, 5, CML_ACTIVATION_GELU, true)
FQ_GGML(dense_iq4_nl, CML_GGML_IQ4_NL, 7, CML_ACTIVATION_RELU, false)
FQ_GGML(dense_q2_k, CML_GGML_Q2_K, 3, CML_ACTIVATION_SILU, true)
FQ_GGML(dense_q3_k, CML_GGML_Q3_K, 5, CML_ACTIVATION_HARD_SWISH, true)
FQ_GGML(dense_q4_k, CML_GGML_Q4_K, 7, CML_ACTIVATION_TANH, true)
FQ_GGML(dense_q5_k, CML_GGML_Q5_K, 3, CML_ACTIVATION_NONE, false)
FQ_GGML(dense_q6_k, CML_GGML_Q6_K, 5, CML_ACTIVATION_SILU, true)
FQ_GGML(dense_q4_1, CML_GGML_Q4_1, 11, CML_ACTIVATION_GELU, true)
FQ_GGML(dense_q5_0, CML_GGML_Q5_0, 6, CML_ACTIVATION_HARD_SWISH, false)
FQ_GGML(dense_q5_1, CML_GGML_Q5_1, 13, CML_ACTIVATION_RELU, true)
#undef FQ_GGML

//===--- Linear and NF4 dense ---===//

static void fq_linear_dense(bt_t* t, cml_quant_scheme_t scheme, cml_dtype_t dt, bool zero,
                            int64_t k, int64_t n, int64_t block, cml_activation_t act) {
  if (!bt_require_dtype(t, CML_DTYPE_F32) || !bt_require_dtype(t, dt)) return;
  const int bits = cml_dtype_bits(dt);
  const bool is_signed = dt == CML_DTYPE_I8 || dt == CML_DTYPE_I4 || dt == CML_DTYPE_I2;
  const int64_t lo = is_signed ? -(1ll << (bits - 1)) : 0;
  const int64_t hi = is_signed ? (1ll << (bits - 1)) - 1 : (1ll << bits) - 1;
  const int64_t nb = (n + block - 1) / block;
  int64_t* codes = bt_alloc(t, (size_t)(k * n) * sizeof(int64_t));
  double* scale = bt_alloc(t, (size_t)(k * nb) * sizeof(double));
  double* zp = bt_alloc(t, (size_t)(k * nb) * sizeof(double));
  for (int64_t i = 0; i < k * n; ++i) {
    codes[i] = lo + (int64_t)(bt_rand_u64(t) % (uint64_t)(hi - lo + 1));
  }
  for (int64_t i = 0; i < k * nb; ++i) {
    scale[i] = (float)bt_rand_uniform(t, 0.01, 0.3);
    zp[i] = zero ? (float)bt_rand_uniform(t, -0.5, 0.5) : 0;
  }
  const float* nf4 = cml_quant_nf4_table();
  double* wd = bt_alloc(t, (size_t)(k * n) * sizeof(double));  // [n, k]
  for (int64_t kk = 0; kk < k; ++kk) {
    for (int64_t j = 0; j < n; ++j) {
      const int64_t b = kk * nb + j / block;
      const int64_t c = codes[kk * n + j];
      // As the op computes it in f32: q * s + z (one rounding each), or T[q & 15] * s.
      float v = scheme == CML_QUANT_NF4 ? nf4[c & 15] * (float)scale[b]
                                        : (float)c * (float)scale[b] + (float)zp[b];
      wd[j * k + kk] = v;
    }
  }
  cml_function_t* f = bt_main(t);
  double *x1, *x7;
  cml_value_t xv1 = fq_x(t, f, 1, k, &x1);
  cml_value_t xv7 = fq_x(t, f, 7, k, &x7);
  cml_value_t wv = bt_param_i64(t, f, dt, 2, (int64_t[]){k, n}, codes);
  cml_quantization_t q;
  cml_quantization_init(&q);
  q.scheme = scheme;
  q.block_size = block;
  q.scale = bt_param_f64(t, f, CML_DTYPE_F32, 2, (int64_t[]){k, nb}, scale);
  if (zero) q.zero_point = bt_param_f64(t, f, CML_DTYPE_F32, 2, (int64_t[]){k, nb}, zp);
  double* bias = bt_alloc(t, (size_t)n * sizeof(double));
  for (int64_t j = 0; j < n; ++j) bias[j] = (float)bt_rand_uniform(t, -0.5, 0.5);
  cml_value_t bv = bt_param_f64(t, f, CML_DTYPE_F32, 1, (int64_t[]){n}, bias);
  cml_value_t y[2];
  y[0] = cml_op_fused_quantized_dense(f, xv1, wv, bv, &q, act);
  y[1] = cml_op_fused_quantized_dense(f, xv7, wv, bv, &q, act);
  bt_tensor_t out[2];
  if (!bt_exec(t, y, 2, out)) return;
  fq_expect_dense(t, "batch 1", &out[0], x1, wd, bias, 1, k, n, act);
  fq_expect_dense(t, "batch 7", &out[1], x7, wd, bias, 7, k, n, act);
}

#define FQ_LIN(name, scheme, dt, zero, k, n, block, act) \
  static void case_##name(bt_t* t) { fq_linear_dense(t, scheme, dt, zero, k, n, block, act); }
FQ_LIN(dense_linear_i8, CML_QUANT_LINEAR, CML_DTYPE_I8, false, 13, 11, 4, CML_ACTIVATION_NONE)
FQ_LIN(dense_linear_u8_zero_point, CML_QUANT_LINEAR, CML_DTYPE_U8, true, 9, 7, 3,
       CML_ACTIVATION_RELU)
FQ_LIN(dense_linear_i4, CML_QUANT_LINEAR, CML_DTYPE_I4, false, 13, 11, 11, CML_ACTIVATION_GELU)
FQ_LIN(dense_linear_u4_zero_point, CML_QUANT_LINEAR, CML_DTYPE_U4, true, 7, 9, 4,
       CML_ACTIVATION_SILU)
FQ_LIN(dense_linear_i2, CML_QUANT_LINEAR, CML_DTYPE_I2, false, 5, 13, 5, CML_ACTIVATION_TANH)
FQ_LIN(dense_linear_u2_zero_point, CML_QUANT_LINEAR, CML_DTYPE_U2, true, 11, 5, 2,
       CML_ACTIVATION_HARD_SWISH)
FQ_LIN(dense_nf4_u4, CML_QUANT_NF4, CML_DTYPE_U4, false, 13, 11, 4, CML_ACTIVATION_NONE)
FQ_LIN(dense_nf4_i8, CML_QUANT_NF4, CML_DTYPE_I8, false, 6, 9, 9, CML_ACTIVATION_GELU)
#undef FQ_LIN

//===--- QuantizedEmbeddingLookup ---===//

static void fq_embedding(bt_t* t, cml_ggml_type_t type, cml_dtype_t index_dt) {
  if (!bt_require_dtype(t, CML_DTYPE_U8) || !bt_require_dtype(t, index_dt)) return;
  const int64_t vocab = 6, k = cml_ggml_type_values_per_block(type) * 2;
  const int64_t rb = cml_ggml_row_bytes(type, k);
  float* wf = bt_alloc(t, (size_t)(vocab * k) * sizeof(float));
  for (int64_t i = 0; i < vocab * k; ++i) wf[i] = (float)bt_rand_uniform(t, -2, 2);
  uint8_t* wq = bt_alloc(t, (size_t)(vocab * rb));
  if (!bt_ok(t, cml_quantize_ggml(type, wf, vocab, k, wq, (size_t)(vocab * rb)), "quantize") ||
      !bt_ok(t, cml_dequantize_ggml(type, wq, vocab, k, wf), "dequantize"))
    return;
  const int64_t idx[6] = {5, 0, 2, 2, 4, 1};
  cml_function_t* f = bt_main(t);
  bt_tensor_t dt = bt_tensor(t, CML_DTYPE_U8, 2, (int64_t[]){vocab, rb}, wq);
  cml_value_t dv = bt_param(t, f, &dt);
  cml_value_t iv = bt_param_i64(t, f, index_dt, 3, (int64_t[]){2, 3, 1}, idx);
  cml_quantization_t q;
  cml_quantization_init(&q);
  q.scheme = CML_QUANT_GGML;
  q.ggml_type = type;
  cml_value_t y = cml_op_quantized_embedding_lookup(f, dv, iv, &q);
  bt_tensor_t out[1];
  if (!bt_exec(t, &y, 1, out)) return;
  float* want = bt_alloc(t, (size_t)(6 * k) * sizeof(float));
  for (int i = 0; i < 6; ++i) memcpy(want + i * k, wf + idx[i] * k, sizeof(float) * (size_t)k);
  bt_tensor_t wt = bt_tensor(t, CML_DTYPE_F32, 3, (int64_t[]){2, 3, k}, want);
  bt_expect_equal(t, "rows", &out[0], &wt);
}

static void case_embedding_q4_0_i32(bt_t* t) { fq_embedding(t, CML_GGML_Q4_0, CML_DTYPE_I32); }
static void case_embedding_q8_0_i64(bt_t* t) { fq_embedding(t, CML_GGML_Q8_0, CML_DTYPE_I64); }
static void case_embedding_q4_k_u8(bt_t* t) { fq_embedding(t, CML_GGML_Q4_K, CML_DTYPE_U8); }
static void case_embedding_q6_k_i32(bt_t* t) { fq_embedding(t, CML_GGML_Q6_K, CML_DTYPE_I32); }
static void case_embedding_q5_1_i16(bt_t* t) { fq_embedding(t, CML_GGML_Q5_1, CML_DTYPE_I16); }

//===--- argument errors ---===//

static void case_error_dense_row_bytes(bt_t* t) {
  if (!bt_require_dtype(t, CML_DTYPE_F32)) return;
  cml_function_t* f = bt_main(t);
  cml_shape_t xs = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){2, 256});
  cml_shape_t ws = cml_shape_make(CML_DTYPE_U8, 2, (int64_t[]){3, 145});
  cml_value_t x = cml_parameter(f, "x", &xs);
  cml_value_t w = cml_parameter(f, "w", &ws);
  cml_quantization_t q;
  cml_quantization_init(&q);
  q.scheme = CML_QUANT_GGML;
  q.ggml_type = CML_GGML_Q4_K;
  if (cml_op_fused_quantized_dense(f, x, w, CML_VALUE_INVALID, &q, CML_ACTIVATION_NONE) !=
      CML_VALUE_INVALID)
    bt_fail(t, "145-byte Q4_K rows accepted");
  bt_expect_builder_error(
      t, CML_STATUS_INVALID_ARGUMENT,
      (const char* const[]){"FusedQuantizedDense", "Q4_K", "[3, 145]", "144", NULL});
}

static void case_error_dense_scale_shape(bt_t* t) {
  if (!bt_require_dtype(t, CML_DTYPE_F32) || !bt_require_dtype(t, CML_DTYPE_I8)) return;
  cml_function_t* f = bt_main(t);
  cml_shape_t xs = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){2, 8});
  cml_shape_t ws = cml_shape_make(CML_DTYPE_I8, 2, (int64_t[]){8, 10});
  cml_shape_t ss = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){8, 2});
  cml_value_t x = cml_parameter(f, "x", &xs);
  cml_value_t w = cml_parameter(f, "w", &ws);
  cml_quantization_t q;
  cml_quantization_init(&q);
  q.block_size = 4;  // ceil(10 / 4) = 3 blocks
  q.scale = cml_parameter(f, "scale", &ss);
  if (cml_op_fused_quantized_dense(f, x, w, CML_VALUE_INVALID, &q, CML_ACTIVATION_NONE) !=
      CML_VALUE_INVALID)
    bt_fail(t, "scale [8, 2] accepted for 3 blocks");
  bt_expect_builder_error(
      t, CML_STATUS_INVALID_ARGUMENT,
      (const char* const[]){"FusedQuantizedDense(Linear)", "[8, 2]", "Float32[8, 3]", NULL});
}

static void case_error_embedding_scheme(bt_t* t) {
  if (!bt_require_dtype(t, CML_DTYPE_U8) || !bt_require_dtype(t, CML_DTYPE_I32)) return;
  cml_function_t* f = bt_main(t);
  cml_shape_t ds = cml_shape_make(CML_DTYPE_U8, 2, (int64_t[]){4, 18});
  cml_shape_t is = cml_shape_make(CML_DTYPE_I32, 2, (int64_t[]){3, 1});
  cml_value_t d = cml_parameter(f, "data", &ds);
  cml_value_t i = cml_parameter(f, "indices", &is);
  cml_quantization_t q;
  cml_quantization_init(&q);
  q.scheme = CML_QUANT_NF4;
  if (cml_op_quantized_embedding_lookup(f, d, i, &q) != CML_VALUE_INVALID)
    bt_fail(t, "NF4 lookup accepted");
  bt_expect_builder_error(
      t, CML_STATUS_UNIMPLEMENTED,
      (const char* const[]){"QuantizedEmbeddingLookup", "GGML", "NF4", "[4, 18]", NULL});
}

#define FQD CML_OP_FUSED_QUANTIZED_DENSE
#define FQE CML_OP_QUANTIZED_EMBEDDING_LOOKUP
const bt_case_t bt_cases_fused_quant[] = {
    {"quantized_dense_q4_0", FQD, case_dense_q4_0},
    {"quantized_dense_q8_0", FQD, case_dense_q8_0},
    {"quantized_dense_iq4_nl", FQD, case_dense_iq4_nl},
    {"quantized_dense_q2_k", FQD, case_dense_q2_k},
    {"quantized_dense_q3_k", FQD, case_dense_q3_k},
    {"quantized_dense_q4_k", FQD, case_dense_q4_k},
    {"quantized_dense_q5_k", FQD, case_dense_q5_k},
    {"quantized_dense_q6_k", FQD, case_dense_q6_k},
    {"quantized_dense_q4_1", FQD, case_dense_q4_1},
    {"quantized_dense_q5_0", FQD, case_dense_q5_0},
    {"quantized_dense_q5_1", FQD, case_dense_q5_1},
    {"quantized_dense_linear_i8", FQD, case_dense_linear_i8},
    {"quantized_dense_linear_u8_zero_point", FQD, case_dense_linear_u8_zero_point},
    {"quantized_dense_linear_i4", FQD, case_dense_linear_i4},
    {"quantized_dense_linear_u4_zero_point", FQD, case_dense_linear_u4_zero_point},
    {"quantized_dense_linear_i2", FQD, case_dense_linear_i2},
    {"quantized_dense_linear_u2_zero_point", FQD, case_dense_linear_u2_zero_point},
    {"quantized_dense_nf4_u4", FQD, case_dense_nf4_u4},
    {"quantized_dense_nf4_i8", FQD, case_dense_nf4_i8},
    {"quantized_embedding_q4_0_i32", FQE, case_embedding_q4_0_i32},
    {"quantized_embedding_q8_0_i64", FQE, case_embedding_q8_0_i64},
    {"quantized_embedding_q4_k_u8", FQE, case_embedding_q4_k_u8},
    {"quantized_embedding_q6_k_i32", FQE, case_embedding_q6_k_i32},
    {"quantized_embedding_q5_1_i16", FQE, case_embedding_q5_1_i16},
    {"quantized_error_dense_row_bytes", FQD, case_error_dense_row_bytes},
    {"quantized_error_dense_scale_shape", FQD, case_error_dense_scale_shape},
    {"quantized_error_embedding_scheme", FQE, case_error_embedding_scheme},
};
const size_t bt_cases_fused_quant_count =
    sizeof bt_cases_fused_quant / sizeof *bt_cases_fused_quant;
