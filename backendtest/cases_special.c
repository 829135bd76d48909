// SPDX-License-Identifier: Apache-2.0
// backendtest/cases_special.c: compliance cases of the "special" group: RNGBitGenerator (bits
// checked against a Philox4x32-10 written here from its definition, plus Random123's published
// known-answer vector), FFT (against a naive DFT in the case), BatchNormForInference /
// ForTraining / Gradient (against the formulas, in double), and the OptimizationBarrier /
// SchedulingBarrier identities.
#include <math.h>
#include <string.h>

#include "backendtest/bt.h"

//===--- RNGBitGenerator ---===//

// Philox4x32-10 (Salmon et al., SC'11): 10 rounds; each round multiplies words 0 and 2 by
// 0xD2511F53 and 0xCD9E8D57 and mixes the high halves with the other words and the key, which
// is bumped by the golden-ratio constants after every round.
static void special_philox(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0,
                           uint32_t k1, uint32_t out[4]) {
  for (int r = 0; r < 10; ++r) {
    uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n1 = (uint32_t)p1;
    uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1, n3 = (uint32_t)p0;
    c0 = n0, c1 = n1, c2 = n2, c3 = n3;
    k0 += 0x9E3779B9u, k1 += 0xBB67AE85u;
  }
  out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

// The |i|-th 32-bit word of XLA's RNG_PHILOX stream for |state|: block i / 4 uses the 128-bit
// counter (state[1], state[2]) + i / 4 and key state[0].
static uint32_t special_word(const uint64_t state[3], int64_t i) {
  uint64_t lo = state[1] + (uint64_t)(i / 4);
  uint64_t hi = state[2] + (lo < state[1] ? 1 : 0);
  uint32_t w[4];
  special_philox((uint32_t)lo, (uint32_t)(lo >> 32), (uint32_t)hi, (uint32_t)(hi >> 32),
                 (uint32_t)state[0], (uint32_t)(state[0] >> 32), w);
  return w[i % 4];
}

// Expected raw bytes: one word per element for 8/16/32-bit dtypes (low bits), two words per
// 64-bit element (low word first). Returns the number of blocks used.
static int64_t special_rng_expected(const uint64_t state[3], cml_dtype_t dtype, int64_t count,
                                    uint8_t* bytes) {
  int bits = cml_dtype_bits(dtype);
  for (int64_t i = 0; i < count; ++i) {
    if (bits == 64) {
      uint64_t v = special_word(state, 2 * i) | (uint64_t)special_word(state, 2 * i + 1) << 32;
      memcpy(bytes + 8 * i, &v, 8);
    } else {
      uint32_t w = special_word(state, i);
      memcpy(bytes + (bits / 8) * i, &w, (size_t)bits / 8);  // little-endian low bytes
    }
  }
  int64_t words = bits == 64 ? 2 * count : count;
  return (words + 3) / 4;
}

static void special_rng_case(bt_t* t, cml_dtype_t dtype, const uint64_t state[3], int32_t rank,
                             const int64_t* dims) {
  if (!bt_require_op(t, CML_OP_RNG_BIT_GENERATOR) || !bt_require_dtype(t, dtype) ||
      !bt_require_dtype(t, CML_DTYPE_U64))
    return;
  int64_t count = 1;
  for (int32_t i = 0; i < rank; ++i) count *= dims[i];
  uint8_t* want = bt_alloc(t, (size_t)(count * 8 + 8));
  int64_t blocks = special_rng_expected(state, dtype, count, want);
  cml_function_t* f = bt_main(t);
  bt_tensor_t st = bt_tensor(t, CML_DTYPE_U64, 1, (int64_t[]){3}, state);
  cml_value_t s = bt_param(t, f, &st);
  cml_shape_t shape = cml_shape_make(dtype, rank, dims);
  cml_value_t outs[2];
  // A builder failure surfaces from bt_exec (UNIMPLEMENTED marks the case unsupported).
  cml_op_rng_bit_generator(f, s, &shape, &outs[0], &outs[1]);
  bt_tensor_t out[2];
  if (!bt_exec(t, outs, 2, out)) return;
  uint64_t lo = state[1] + (uint64_t)blocks;
  uint64_t ns[3] = {state[0], lo, state[2] + (lo < state[1] ? 1 : 0)};
  bt_tensor_t want_state = bt_tensor(t, CML_DTYPE_U64, 1, (int64_t[]){3}, ns);
  bt_tensor_t want_values = bt_tensor(t, dtype, rank, dims, want);
  bt_expect_equal(t, "new state", &out[0], &want_state);
  // Compare raw bytes (float outputs hold raw bits; NaN patterns must match too).
  if (out[1].size != want_values.size ||
      (want_values.size && memcmp(out[1].data, want_values.data, want_values.size) != 0))
    bt_fail(t, "values: bits differ from Philox4x32-10");
}

static const uint64_t kRngState[3] = {0x0123456789ABCDEFull, 0x1111222233334444ull, 7};

// clang-format off
#define RNG_DTYPES(X)      \
  X(u8, CML_DTYPE_U8)      \
  X(u16, CML_DTYPE_U16)    \
  X(u32, CML_DTYPE_U32)    \
  X(u64, CML_DTYPE_U64)    \
  X(i8, CML_DTYPE_I8)      \
  X(i16, CML_DTYPE_I16)    \
  X(i32, CML_DTYPE_I32)    \
  X(i64, CML_DTYPE_I64)    \
  X(f16, CML_DTYPE_F16)    \
  X(bf16, CML_DTYPE_BF16)  \
  X(f32, CML_DTYPE_F32)    \
  X(f64, CML_DTYPE_F64)
// clang-format on

#define RNG_DEFINE(name, dt) \
  static void case_rng_##name(bt_t* t) { special_rng_case(t, dt, kRngState, 2, (int64_t[]){5, 7}); }
RNG_DTYPES(RNG_DEFINE)
#undef RNG_DEFINE

static void case_rng_known_answer(bt_t* t) {
  // Random123 kat_vectors: philox4x32_10 with counter and key all zero gives
  // 6627e8d5 e169c58d bc57ac4c 9b00dbd8.
  if (!bt_require_op(t, CML_OP_RNG_BIT_GENERATOR) || !bt_require_dtype(t, CML_DTYPE_U32) ||
      !bt_require_dtype(t, CML_DTYPE_U64))
    return;
  cml_function_t* f = bt_main(t);
  cml_value_t s = bt_param_i64(t, f, CML_DTYPE_U64, 1, (int64_t[]){3}, (int64_t[]){0, 0, 0});
  cml_shape_t shape = cml_shape_make(CML_DTYPE_U32, 1, (int64_t[]){4});
  cml_value_t outs[2];
  cml_op_rng_bit_generator(f, s, &shape, &outs[0], &outs[1]);
  bt_tensor_t out[2];
  if (!bt_exec(t, outs, 2, out)) return;
  bt_expect_i64(t, "values", &out[1], CML_DTYPE_U32, 1, (int64_t[]){4},
                (int64_t[]){0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
  bt_expect_i64(t, "state", &out[0], CML_DTYPE_U64, 1, (int64_t[]){3}, (int64_t[]){0, 1, 0});
}

static void case_rng_counter_carry(bt_t* t) {
  // The low counter word wraps during the call: the high word takes the carry.
  const uint64_t st[3] = {42, UINT64_MAX - 2, 9};
  special_rng_case(t, CML_DTYPE_U32, st, 1, (int64_t[]){23});
}

static void case_rng_scalar_and_empty(bt_t* t) {
  special_rng_case(t, CML_DTYPE_U64, kRngState, 0, NULL);
  if (bt_failed(t)) return;
  bt_new_builder(t);
  special_rng_case(t, CML_DTYPE_F32, kRngState, 2, (int64_t[]){3, 0});
}

static void case_rng_odd_rank4(bt_t* t) {
  special_rng_case(t, CML_DTYPE_I16, kRngState, 4, (int64_t[]){5, 7, 11, 3});
}

static void case_rng_chained(bt_t* t) {
  // Two calls chained through the state: the second continues where the first stopped.
  if (!bt_require_op(t, CML_OP_RNG_BIT_GENERATOR) || !bt_require_dtype(t, CML_DTYPE_U32) ||
      !bt_require_dtype(t, CML_DTYPE_U64))
    return;
  cml_function_t* f = bt_main(t);
  bt_tensor_t st = bt_tensor(t, CML_DTYPE_U64, 1, (int64_t[]){3}, kRngState);
  cml_value_t s = bt_param(t, f, &st);
  cml_shape_t shape = cml_shape_make(CML_DTYPE_U32, 1, (int64_t[]){6});
  cml_value_t a[2], b[2];
  cml_op_rng_bit_generator(f, s, &shape, &a[0], &a[1]);
  cml_op_rng_bit_generator(f, a[0], &shape, &b[0], &b[1]);
  cml_value_t outs[2] = {a[1], b[1]};
  bt_tensor_t out[2];
  if (!bt_exec(t, outs, 2, out)) return;
  // First call: words 0..5 (2 blocks); second: counter + 2, words 8..13 of the stream.
  int64_t w1[6], w2[6];
  for (int i = 0; i < 6; ++i) {
    w1[i] = special_word(kRngState, i);
    w2[i] = special_word(kRngState, 8 + i);
  }
  bt_expect_i64(t, "first", &out[0], CML_DTYPE_U32, 1, (int64_t[]){6}, w1);
  bt_expect_i64(t, "second", &out[1], CML_DTYPE_U32, 1, (int64_t[]){6}, w2);
}

//===--- FFT ---===//

// Naive DFT along the trailing |axes| axes (lengths |len|) of |batch| interleaved complex
// arrays, in place; sign -1 forward, +1 inverse (unscaled).
static void special_dft(bt_t* t, double* x, int64_t batch, int axes, const int64_t* len,
                        double sign) {
  int64_t inner = 1;
  for (int a = 0; a < axes; ++a) inner *= len[a];
  double* tmp = bt_alloc(t, sizeof(double) * 2 * (size_t)(inner + 1));
  for (int a = 0; a < axes; ++a) {
    int64_t n = len[a], stride = 1;
    for (int b = a + 1; b < axes; ++b) stride *= len[b];
    for (int64_t bb = 0; bb < batch; ++bb) {
      double* base = x + 2 * bb * inner;
      memcpy(tmp, base, sizeof(double) * 2 * (size_t)inner);
      for (int64_t i = 0; i < inner; ++i) {
        int64_t k = (i / stride) % n, line0 = i - k * stride;
        double re = 0, im = 0;
        for (int64_t j = 0; j < n; ++j) {
          double ang = sign * 2.0 * M_PI * (double)((j * k) % n) / (double)n;
          double xr = tmp[2 * (line0 + j * stride)], xi = tmp[2 * (line0 + j * stride) + 1];
          re += xr * cos(ang) - xi * sin(ang);
          im += xr * sin(ang) + xi * cos(ang);
        }
        base[2 * i] = re, base[2 * i + 1] = im;
      }
    }
  }
}

static void special_fft_c2c_case(bt_t* t, cml_dtype_t dtype, bool inverse, int32_t rank,
                                 const int64_t* dims, int axes) {
  if (!bt_require_op(t, CML_OP_FFT) || !bt_require_dtype(t, dtype)) return;
  int64_t total = 1, batch = 1, inner = 1;
  for (int32_t i = 0; i < rank; ++i) total *= dims[i];
  for (int32_t i = 0; i < rank - axes; ++i) batch *= dims[i];
  inner = batch ? total / batch : 0;
  double* x = bt_alloc(t, sizeof(double) * 2 * (size_t)(total + 1));
  for (int64_t i = 0; i < 2 * total; ++i) x[i] = bt_rand_uniform(t, -1, 1);
  bt_tensor_t tx = bt_tensor_c(t, dtype, rank, dims, x);
  for (int64_t i = 0; i < total; ++i) {  // the reference sees the rounded inputs
    double* p = x + 2 * i;
    if (dtype == CML_DTYPE_C64)
      p[0] = ((float*)tx.data)[2 * i], p[1] = ((float*)tx.data)[2 * i + 1];
  }
  const int64_t* len = dims + rank - axes;
  special_dft(t, x, batch, axes, len, inverse ? 1.0 : -1.0);
  if (inverse && inner > 0)
    for (int64_t i = 0; i < 2 * total; ++i) x[i] /= (double)inner;
  cml_function_t* f = bt_main(t);
  cml_value_t v = bt_param(t, f, &tx);
  cml_value_t z = cml_op_fft(f, v, inverse ? CML_FFT_INVERSE : CML_FFT_FORWARD, len, (size_t)axes);
  bt_tensor_t out[1];
  if (!bt_exec(t, &z, 1, out)) return;
  bt_tensor_t want = bt_tensor_c(t, dtype, rank, dims, x);
  double tol = dtype == CML_DTYPE_C64 ? 2e-5 : 1e-11;
  bt_expect_close(t, inverse ? "inverse" : "forward", &out[0], &want, tol, tol * (double)inner);
}

static void case_fft_c64_len8(bt_t* t) {
  special_fft_c2c_case(t, CML_DTYPE_C64, false, 2, (int64_t[]){3, 8}, 1);
}
static void case_fft_c64_len12_inv(bt_t* t) {
  special_fft_c2c_case(t, CML_DTYPE_C64, true, 2, (int64_t[]){2, 12}, 1);
}
static void case_fft_c64_len37(bt_t* t) {
  special_fft_c2c_case(t, CML_DTYPE_C64, false, 1, (int64_t[]){37}, 1);
}
static void case_fft_c128_len5(bt_t* t) {
  special_fft_c2c_case(t, CML_DTYPE_C128, false, 3, (int64_t[]){2, 3, 5}, 1);
}
static void case_fft_c128_len1(bt_t* t) {
  special_fft_c2c_case(t, CML_DTYPE_C128, true, 2, (int64_t[]){4, 1}, 1);
}
static void case_fft_c128_len100_inv(bt_t* t) {
  special_fft_c2c_case(t, CML_DTYPE_C128, true, 1, (int64_t[]){100}, 1);
}
static void case_fft_c64_2d(bt_t* t) {
  special_fft_c2c_case(t, CML_DTYPE_C64, false, 3, (int64_t[]){2, 6, 4}, 2);
}
static void case_fft_c128_3d_inv(bt_t* t) {
  special_fft_c2c_case(t, CML_DTYPE_C128, true, 3, (int64_t[]){5, 7, 3}, 3);
}
static void case_fft_c64_empty_batch(bt_t* t) {
  special_fft_c2c_case(t, CML_DTYPE_C64, false, 2, (int64_t[]){0, 4}, 1);
}

// Real FFTs: forward [batch, L] -> [batch, L/2+1] against the naive DFT, and the inverse of a
// Hermitian spectrum built from a real signal back to the signal.
static void special_fft_real_case(bt_t* t, cml_dtype_t real, int64_t batch, int axes,
                                  const int64_t* len) {
  cml_dtype_t cx = real == CML_DTYPE_F32 ? CML_DTYPE_C64 : CML_DTYPE_C128;
  if (!bt_require_op(t, CML_OP_FFT) || !bt_require_dtype(t, real) || !bt_require_dtype(t, cx))
    return;
  int64_t inner = 1;
  for (int a = 0; a < axes; ++a) inner *= len[a];
  int64_t last = len[axes - 1], half = last / 2 + 1, rows = batch * (inner / last);
  int64_t rdims[4] = {batch}, cdims[4] = {batch};
  for (int a = 0; a < axes; ++a) rdims[1 + a] = cdims[1 + a] = len[a];
  cdims[axes] = half;
  double* x = bt_alloc(t, sizeof(double) * (size_t)(batch * inner + 1));
  for (int64_t i = 0; i < batch * inner; ++i) x[i] = bt_rand_uniform(t, -1, 1);
  bt_tensor_t tx = bt_tensor_f64(t, real, 1 + axes, rdims, x);
  for (int64_t i = 0; i < batch * inner; ++i) x[i] = bt_get_f64(&tx, i);
  double* full = bt_alloc(t, sizeof(double) * 2 * (size_t)(batch * inner + 1));
  for (int64_t i = 0; i < batch * inner; ++i) full[2 * i] = x[i], full[2 * i + 1] = 0;
  special_dft(t, full, batch, axes, len, -1.0);
  double* spec = bt_alloc(t, sizeof(double) * 2 * (size_t)(rows * half + 1));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < half; ++k) {
      spec[2 * (r * half + k)] = full[2 * (r * last + k)];
      spec[2 * (r * half + k) + 1] = full[2 * (r * last + k) + 1];
    }
  cml_function_t* f = bt_main(t);
  cml_value_t v = bt_param(t, f, &tx);
  cml_value_t fwd = cml_op_fft(f, v, CML_FFT_FORWARD_REAL, len, (size_t)axes);
  bt_tensor_t tspec = bt_tensor_c(t, cx, 1 + axes, cdims, spec);
  cml_value_t sv = bt_param(t, f, &tspec);
  cml_value_t inv = cml_op_fft(f, sv, CML_FFT_INVERSE_REAL, len, (size_t)axes);
  cml_value_t outs[2] = {fwd, inv};
  bt_tensor_t out[2];
  if (!bt_exec(t, outs, 2, out)) return;
  double tol = real == CML_DTYPE_F32 ? 2e-5 : 1e-11;
  bt_expect_close(t, "forward real", &out[0], &tspec, tol, tol * (double)inner);
  bt_expect_close(t, "inverse real", &out[1], &tx, tol, tol * (double)inner);
}

static void case_fft_real_f32_len8(bt_t* t) {
  special_fft_real_case(t, CML_DTYPE_F32, 3, 1, (int64_t[]){8});
}
static void case_fft_real_f32_len7(bt_t* t) {
  special_fft_real_case(t, CML_DTYPE_F32, 2, 1, (int64_t[]){7});
}
static void case_fft_real_f64_len1(bt_t* t) {
  special_fft_real_case(t, CML_DTYPE_F64, 2, 1, (int64_t[]){1});
}
static void case_fft_real_f64_len45(bt_t* t) {
  special_fft_real_case(t, CML_DTYPE_F64, 2, 1, (int64_t[]){45});
}
// n_fft 400 (Whisper / torchaudio STFT frames: 400 = 4 * 4 * 5 * 5, mixed radix), 500 and 1000
// (2-D, and an inverse), and the prime 509 (Bluestein).
static void case_fft_real_f32_len400(bt_t* t) {
  special_fft_real_case(t, CML_DTYPE_F32, 4, 1, (int64_t[]){400});
}
static void case_fft_real_f64_2d_len500(bt_t* t) {
  special_fft_real_case(t, CML_DTYPE_F64, 2, 2, (int64_t[]){3, 500});
}
static void case_fft_c64_len400(bt_t* t) {
  special_fft_c2c_case(t, CML_DTYPE_C64, false, 2, (int64_t[]){3, 400}, 1);
}
static void case_fft_c128_len1000_inv(bt_t* t) {
  special_fft_c2c_case(t, CML_DTYPE_C128, true, 2, (int64_t[]){2, 1000}, 1);
}
static void case_fft_c64_len509(bt_t* t) {
  special_fft_c2c_case(t, CML_DTYPE_C64, false, 2, (int64_t[]){2, 509}, 1);
}
static void case_fft_real_f64_2d(bt_t* t) {
  special_fft_real_case(t, CML_DTYPE_F64, 2, 2, (int64_t[]){3, 6});
}
static void case_fft_real_f32_3d(bt_t* t) {
  special_fft_real_case(t, CML_DTYPE_F32, 1, 3, (int64_t[]){2, 5, 4});
}

static void case_fft_c64_hand(bt_t* t) {
  // FFT([1, 2, 3, 4]) = [10, -2+2i, -2, -2-2i]; IFFT back; impulse -> all ones.
  if (!bt_require_op(t, CML_OP_FFT) || !bt_require_dtype(t, CML_DTYPE_C64)) return;
  cml_function_t* f = bt_main(t);
  bt_tensor_t x =
      bt_tensor_c(t, CML_DTYPE_C64, 1, (int64_t[]){4}, (double[]){1, 0, 2, 0, 3, 0, 4, 0});
  bt_tensor_t imp =
      bt_tensor_c(t, CML_DTYPE_C64, 1, (int64_t[]){4}, (double[]){1, 0, 0, 0, 0, 0, 0, 0});
  cml_value_t v = bt_param(t, f, &x), iv = bt_param(t, f, &imp);
  cml_value_t y = cml_op_fft(f, v, CML_FFT_FORWARD, (int64_t[]){4}, 1);
  cml_value_t back = cml_op_fft(f, y, CML_FFT_INVERSE, (int64_t[]){4}, 1);
  cml_value_t ones = cml_op_fft(f, iv, CML_FFT_FORWARD, (int64_t[]){4}, 1);
  cml_value_t outs[3] = {y, back, ones};
  bt_tensor_t out[3];
  if (!bt_exec(t, outs, 3, out)) return;
  bt_tensor_t want =
      bt_tensor_c(t, CML_DTYPE_C64, 1, (int64_t[]){4}, (double[]){10, 0, -2, 2, -2, 0, -2, -2});
  bt_tensor_t all1 =
      bt_tensor_c(t, CML_DTYPE_C64, 1, (int64_t[]){4}, (double[]){1, 0, 1, 0, 1, 0, 1, 0});
  bt_expect_close(t, "forward", &out[0], &want, 1e-6, 1e-6);
  bt_expect_close(t, "round trip", &out[1], &x, 1e-6, 1e-6);
  bt_expect_close(t, "impulse", &out[2], &all1, 0, 0);
}

//===--- BatchNorm ---===//

typedef struct special_bn_t {
  cml_dtype_t dtype;
  int32_t rank;
  int64_t dims[4];
  int64_t axis;
  float epsilon;
} special_bn_t;

static void special_bn_case(bt_t* t, const special_bn_t* c) {
  if (!bt_require_op(t, CML_OP_BATCH_NORM_INFERENCE) ||
      !bt_require_op(t, CML_OP_BATCH_NORM_TRAINING) ||
      !bt_require_op(t, CML_OP_BATCH_NORM_GRADIENT) || !bt_require_dtype(t, c->dtype))
    return;
  int64_t total = 1, outer = 1, inner = 1, ch = c->dims[c->axis];
  for (int32_t i = 0; i < c->rank; ++i) {
    total *= c->dims[i];
    if (i < c->axis) outer *= c->dims[i];
    if (i > c->axis) inner *= c->dims[i];
  }
  double* x = bt_alloc(t, sizeof(double) * (size_t)total);
  double* dy = bt_alloc(t, sizeof(double) * (size_t)total);
  double* scale = bt_alloc(t, sizeof(double) * (size_t)ch);
  double* offset = bt_alloc(t, sizeof(double) * (size_t)ch);
  double* mean = bt_alloc(t, sizeof(double) * (size_t)ch);
  double* var = bt_alloc(t, sizeof(double) * (size_t)ch);
  for (int64_t i = 0; i < total; ++i)
    x[i] = bt_rand_uniform(t, -2, 3), dy[i] = bt_rand_uniform(t, -1, 1);
  for (int64_t i = 0; i < ch; ++i) {
    scale[i] = bt_rand_uniform(t, 0.5, 2), offset[i] = bt_rand_uniform(t, -1, 1);
    mean[i] = bt_rand_uniform(t, -1, 1), var[i] = bt_rand_uniform(t, 0.5, 2);
  }
  int64_t cd[1] = {ch};
  bt_tensor_t tx = bt_tensor_f64(t, c->dtype, c->rank, c->dims, x);
  bt_tensor_t tdy = bt_tensor_f64(t, c->dtype, c->rank, c->dims, dy);
  bt_tensor_t ts = bt_tensor_f64(t, c->dtype, 1, cd, scale);
  bt_tensor_t to = bt_tensor_f64(t, c->dtype, 1, cd, offset);
  bt_tensor_t tm = bt_tensor_f64(t, c->dtype, 1, cd, mean);
  bt_tensor_t tv = bt_tensor_f64(t, c->dtype, 1, cd, var);
  // The reference works on the values as rounded to the dtype.
  for (int64_t i = 0; i < total; ++i) x[i] = bt_get_f64(&tx, i), dy[i] = bt_get_f64(&tdy, i);
  for (int64_t i = 0; i < ch; ++i) {
    scale[i] = bt_get_f64(&ts, i), offset[i] = bt_get_f64(&to, i);
    mean[i] = bt_get_f64(&tm, i), var[i] = bt_get_f64(&tv, i);
  }
  double eps = (double)c->epsilon;
  double* y_inf = bt_alloc(t, sizeof(double) * (size_t)total);
  double* y_tr = bt_alloc(t, sizeof(double) * (size_t)total);
  double* gx = bt_alloc(t, sizeof(double) * (size_t)total);
  double* bmean = bt_alloc(t, sizeof(double) * (size_t)ch);
  double* bvar = bt_alloc(t, sizeof(double) * (size_t)ch);
  double* gscale = bt_alloc(t, sizeof(double) * (size_t)ch);
  double* goffset = bt_alloc(t, sizeof(double) * (size_t)ch);
  int64_t n = outer * inner;
  for (int64_t k = 0; k < ch; ++k) {
    double s = 0, sq = 0, sdy = 0, sdyx = 0;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) s += x[(o * ch + k) * inner + i];
    double m = s / (double)n;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t e = (o * ch + k) * inner + i;
        sq += (x[e] - m) * (x[e] - m);
        sdy += dy[e];
        sdyx += dy[e] * (x[e] - mean[k]);
      }
    bmean[k] = m, bvar[k] = sq / (double)n;
    gscale[k] = sdyx / sqrt(var[k] + eps), goffset[k] = sdy;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t e = (o * ch + k) * inner + i;
        y_inf[e] = scale[k] * (x[e] - mean[k]) / sqrt(var[k] + eps) + offset[k];
        y_tr[e] = scale[k] * (x[e] - m) / sqrt(bvar[k] + eps) + offset[k];
        gx[e] = scale[k] / sqrt(var[k] + eps) *
                (dy[e] - sdy / (double)n - (x[e] - mean[k]) * sdyx / ((double)n * (var[k] + eps)));
      }
  }
  cml_function_t* f = bt_main(t);
  cml_value_t vx = bt_param(t, f, &tx), vdy = bt_param(t, f, &tdy), vs = bt_param(t, f, &ts);
  cml_value_t vo = bt_param(t, f, &to), vm = bt_param(t, f, &tm), vv = bt_param(t, f, &tv);
  cml_value_t inf = cml_op_batch_norm_inference(f, vx, vs, vo, vm, vv, c->epsilon, c->axis);
  cml_value_t tr[3], gr[3];
  cml_op_batch_norm_training(f, vx, vs, vo, c->epsilon, c->axis, tr);
  cml_op_batch_norm_gradient(f, vx, vs, vm, vv, vdy, c->epsilon, c->axis, gr);
  cml_value_t outs[7] = {inf, tr[0], tr[1], tr[2], gr[0], gr[1], gr[2]};
  bt_tensor_t out[7];
  if (!bt_exec(t, outs, 7, out)) return;
  double tol = c->dtype == CML_DTYPE_F64 ? 1e-12 : c->dtype == CML_DTYPE_F32 ? 1e-5 : 2e-2;
  const double* wants[7] = {y_inf, y_tr, bmean, bvar, gx, gscale, goffset};
  const char* names[7] = {"inference",    "training normalized", "batch mean", "batch variance",
                          "grad operand", "grad scale",          "grad offset"};
  for (int i = 0; i < 7; ++i) {
    bool per_channel = i == 2 || i == 3 || i == 5 || i == 6;
    bt_tensor_t w = per_channel ? bt_tensor_f64(t, c->dtype, 1, cd, wants[i])
                                : bt_tensor_f64(t, c->dtype, c->rank, c->dims, wants[i]);
    bt_expect_close(t, names[i], &out[i], &w, tol, tol * 4);
  }
}

static void case_bn_f32_axis1(bt_t* t) {
  special_bn_t c = {CML_DTYPE_F32, 4, {2, 3, 4, 5}, 1, 1e-3f};
  special_bn_case(t, &c);
}
static void case_bn_f64_last_axis(bt_t* t) {
  special_bn_t c = {CML_DTYPE_F64, 3, {5, 7, 11}, 2, 1e-5f};
  special_bn_case(t, &c);
}
static void case_bn_f32_first_axis(bt_t* t) {
  special_bn_t c = {CML_DTYPE_F32, 2, {3, 17}, 0, 0.5f};
  special_bn_case(t, &c);
}
static void case_bn_f16(bt_t* t) {
  special_bn_t c = {CML_DTYPE_F16, 3, {4, 2, 6}, 1, 1e-2f};
  special_bn_case(t, &c);
}
static void case_bn_bf16(bt_t* t) {
  special_bn_t c = {CML_DTYPE_BF16, 2, {8, 3}, 1, 1e-2f};
  special_bn_case(t, &c);
}

static void case_bn_hand_values(bt_t* t) {
  // x [2, 2] (features on axis 1): channel 0 = {1, 3}, channel 1 = {2, 6}; eps 0.
  // Training: mean {2, 4}, variance {1, 4}; with scale {2, 1}, offset {1, 0}:
  // channel 0 -> (x - 2) * 2 + 1 = {-1, 3}; channel 1 -> (x - 4) / 2 = {-1, 1}.
  if (!bt_require_op(t, CML_OP_BATCH_NORM_TRAINING) || !bt_require_dtype(t, CML_DTYPE_F32)) return;
  cml_function_t* f = bt_main(t);
  cml_value_t x = bt_param_f64(t, f, CML_DTYPE_F32, 2, (int64_t[]){2, 2}, (double[]){1, 2, 3, 6});
  cml_value_t s = bt_param_f64(t, f, CML_DTYPE_F32, 1, (int64_t[]){2}, (double[]){2, 1});
  cml_value_t o = bt_param_f64(t, f, CML_DTYPE_F32, 1, (int64_t[]){2}, (double[]){1, 0});
  cml_value_t r[3];
  cml_op_batch_norm_training(f, x, s, o, 0.0f, 1, r);
  bt_tensor_t out[3];
  if (!bt_exec(t, r, 3, out)) return;
  bt_expect_f64(t, "normalized", &out[0], CML_DTYPE_F32, 2, (int64_t[]){2, 2},
                (double[]){-1, -1, 3, 1}, 0);
  bt_expect_f64(t, "mean", &out[1], CML_DTYPE_F32, 1, (int64_t[]){2}, (double[]){2, 4}, 0);
  bt_expect_f64(t, "variance", &out[2], CML_DTYPE_F32, 1, (int64_t[]){2}, (double[]){1, 4}, 0);
}

// Training statistics of a feature whose mean is large against its spread: f32 x [1024, 2],
// feature 0 = 4096 + d_i and feature 1 = -1e4 + d_i, d_i in [-1, 1] (multiples of 1/512, exact
// in f32): variance 0.34..., not the 0 (and outputs 200x too large) of E[x^2] - E[x]^2 in f32,
// which xla:cpu's expander computed.
static void case_bn_training_large_mean(bt_t* t) {
  if (!bt_require_op(t, CML_OP_BATCH_NORM_TRAINING) || !bt_require_dtype(t, CML_DTYPE_F32)) return;
  enum { N = 1024 };
  double* x = bt_alloc(t, 2 * N * sizeof(double));
  double* want = bt_alloc(t, 2 * N * sizeof(double));
  double mean[2] = {0, 0}, var[2] = {0, 0};
  for (int i = 0; i < N; ++i) {
    const double d = (double)((i * 37) % 1025 - 512) / 512.0;
    x[2 * i] = 4096 + d;
    x[2 * i + 1] = -1e4 + d;
  }
  for (int i = 0; i < 2 * N; ++i) mean[i % 2] += x[i] / N;
  for (int i = 0; i < 2 * N; ++i) var[i % 2] += (x[i] - mean[i % 2]) * (x[i] - mean[i % 2]) / N;
  for (int i = 0; i < 2 * N; ++i) want[i] = (x[i] - mean[i % 2]) / sqrt(var[i % 2] + 1e-5);
  cml_function_t* f = bt_main(t);
  cml_value_t xv = bt_param_f64(t, f, CML_DTYPE_F32, 2, (int64_t[]){N, 2}, x);
  cml_value_t s = bt_param_f64(t, f, CML_DTYPE_F32, 1, (int64_t[]){2}, (double[]){1, 1});
  cml_value_t o = bt_param_f64(t, f, CML_DTYPE_F32, 1, (int64_t[]){2}, (double[]){0, 0});
  cml_value_t r[3];
  cml_op_batch_norm_training(f, xv, s, o, 1e-5f, 1, r);
  bt_tensor_t out[3];
  if (!bt_exec(t, r, 3, out)) return;
  bt_tensor_t w = bt_tensor_f64(t, CML_DTYPE_F32, 2, (int64_t[]){N, 2}, want);
  bt_expect_close(t, "normalized", &out[0], &w, 1e-3, 1e-3);
  bt_tensor_t wm = bt_tensor_f64(t, CML_DTYPE_F32, 1, (int64_t[]){2}, mean);
  bt_expect_close(t, "mean", &out[1], &wm, 1e-6, 0);
  bt_tensor_t wv = bt_tensor_f64(t, CML_DTYPE_F32, 1, (int64_t[]){2}, var);
  bt_expect_close(t, "variance", &out[2], &wv, 1e-3, 0);
}

// Half-precision BatchNorm far from zero: f16 x [64, 2] = 1000 + d (d in [-4, 4], steps of 0.5,
// exact in f16) and -700 + d, with the statistics given (inference) and computed (training).
// The result is (x - mean) / sqrt(var + eps) rounded once to f16; xla:cpu computed inference
// as x * a + b in f16, whose rounding of x * a near 1000 (ulp 0.5) gave errors of 0.25 on
// outputs of size 1-4.
static void case_bn_f16_large_mean(bt_t* t) {
  if (!bt_require_op(t, CML_OP_BATCH_NORM_INFERENCE) ||
      !bt_require_op(t, CML_OP_BATCH_NORM_TRAINING) || !bt_require_dtype(t, CML_DTYPE_F16)) {
    return;
  }
  enum { N = 64 };
  double x[2 * N], want[2 * N], mean[2] = {0, 0}, var[2] = {0, 0};
  for (int i = 0; i < N; ++i) {
    const double d = (double)((i * 5) % 17 - 8) / 2.0;
    x[2 * i] = 1000 + d;
    x[2 * i + 1] = -700 + d;
  }
  for (int i = 0; i < 2 * N; ++i) mean[i % 2] += x[i] / N;
  for (int i = 0; i < 2 * N; ++i) var[i % 2] += (x[i] - mean[i % 2]) * (x[i] - mean[i % 2]) / N;
  const int64_t xd[2] = {N, 2}, cd[1] = {2};
  for (int training = 0; training < 2; ++training) {
    // Inference is given the statistics rounded to f16, as a user would store them.
    const double m[2] = {1000, -700}, v[2] = {6, 6};
    const double* um = training ? mean : m;
    const double* uv = training ? var : v;
    for (int i = 0; i < 2 * N; ++i) want[i] = (x[i] - um[i % 2]) / sqrt(uv[i % 2] + 1e-3) + 1;
    if (training) bt_new_builder(t);
    cml_function_t* f = bt_main(t);
    cml_value_t xv = bt_param_f64(t, f, CML_DTYPE_F16, 2, xd, x);
    cml_value_t s = bt_param_f64(t, f, CML_DTYPE_F16, 1, cd, (double[]){1, 1});
    cml_value_t o = bt_param_f64(t, f, CML_DTYPE_F16, 1, cd, (double[]){1, 1});
    cml_value_t r[3];
    if (training) {
      cml_op_batch_norm_training(f, xv, s, o, 1e-3f, 1, r);
    } else {
      cml_value_t mv = bt_param_f64(t, f, CML_DTYPE_F16, 1, cd, m);
      cml_value_t vv = bt_param_f64(t, f, CML_DTYPE_F16, 1, cd, v);
      r[0] = cml_op_batch_norm_inference(f, xv, s, o, mv, vv, 1e-3f, 1);
    }
    bt_tensor_t out[3];
    if (!bt_exec(t, r, training ? 3 : 1, out)) return;
    bt_tensor_t w = bt_tensor_f64(t, CML_DTYPE_F16, 2, xd, want);
    bt_expect_close(t, training ? "training: normalized" : "inference", &out[0], &w, 2e-3, 2e-3);
    if (training) {
      bt_tensor_t wm = bt_tensor_f64(t, CML_DTYPE_F16, 1, cd, mean);
      bt_expect_close(t, "training: mean", &out[1], &wm, 1e-3, 0);
      bt_tensor_t wv = bt_tensor_f64(t, CML_DTYPE_F16, 1, cd, var);
      bt_expect_close(t, "training: variance", &out[2], &wv, 2e-3, 0);
    }
  }
}

//===--- barriers ---===//

static void case_optimization_barrier(bt_t* t) {
  if (!bt_require_op(t, CML_OP_OPTIMIZATION_BARRIER) || !bt_require_dtype(t, CML_DTYPE_F32) ||
      !bt_require_dtype(t, CML_DTYPE_I32))
    return;
  cml_function_t* f = bt_main(t);
  bt_tensor_t a = bt_tensor_f64(t, CML_DTYPE_F32, 2, (int64_t[]){2, 3},
                                (double[]){1.5, -2, NAN, INFINITY, -0.0, 7});
  bt_tensor_t b =
      bt_tensor_i64(t, CML_DTYPE_I32, 1, (int64_t[]){4}, (int64_t[]){INT32_MIN, -1, 0, 5});
  cml_value_t in[2] = {bt_param(t, f, &a), bt_param(t, f, &b)};
  cml_value_t res[2];
  cml_op_optimization_barrier(f, in, 2, res);  // failures surface from bt_exec
  // The barrier's result is also used by a later op (x + x) to be sure it is a real value.
  cml_value_t twice = cml_op_add(f, res[1], res[1]);
  cml_value_t outs[3] = {res[0], res[1], twice};
  bt_tensor_t out[3];
  if (!bt_exec(t, outs, 3, out)) return;
  bt_expect_equal(t, "f32 operand", &out[0], &a);
  bt_expect_equal(t, "i32 operand", &out[1], &b);
  bt_expect_i64(t, "used later", &out[2], CML_DTYPE_I32, 1, (int64_t[]){4},
                (int64_t[]){0, -2, 0, 10});
}

static void case_scheduling_barrier(bt_t* t) {
  if (!bt_require_op(t, CML_OP_SCHEDULING_BARRIER) || !bt_require_dtype(t, CML_DTYPE_F64) ||
      !bt_require_dtype(t, CML_DTYPE_BF16))
    return;
  cml_function_t* f = bt_main(t);
  bt_tensor_t a = bt_tensor_f64(t, CML_DTYPE_F64, 1, (int64_t[]){3}, (double[]){1, -0.0, NAN});
  bt_tensor_t d = bt_tensor_f64(t, CML_DTYPE_BF16, 2, (int64_t[]){2, 2}, (double[]){1, 2, 3, 4});
  cml_value_t va = bt_param(t, f, &a), vd = bt_param(t, f, &d);
  cml_value_t deps[2] = {vd, cml_op_neg(f, vd)};
  cml_value_t r = cml_op_scheduling_barrier(f, va, deps, 2);
  cml_value_t r0 = cml_op_scheduling_barrier(f, va, NULL, 0);
  cml_value_t outs[2] = {r, r0};
  bt_tensor_t out[2];
  if (!bt_exec(t, outs, 2, out)) return;
  bt_expect_equal(t, "with deps", &out[0], &a);
  bt_expect_equal(t, "no deps", &out[1], &a);
}

//===--- the group ---===//

#define RNG_ENTRY(name, dt) {"rng_" #name, CML_OP_RNG_BIT_GENERATOR, case_rng_##name},

const bt_case_t bt_cases_special[] = {
    RNG_DTYPES(RNG_ENTRY){"rng_known_answer", CML_OP_RNG_BIT_GENERATOR, case_rng_known_answer},
    {"rng_counter_carry", CML_OP_RNG_BIT_GENERATOR, case_rng_counter_carry},
    {"rng_scalar_and_empty", CML_OP_RNG_BIT_GENERATOR, case_rng_scalar_and_empty},
    {"rng_odd_rank4", CML_OP_RNG_BIT_GENERATOR, case_rng_odd_rank4},
    {"rng_chained", CML_OP_RNG_BIT_GENERATOR, case_rng_chained},
    {"fft_c64_hand", CML_OP_FFT, case_fft_c64_hand},
    {"fft_c64_len8", CML_OP_FFT, case_fft_c64_len8},
    {"fft_c64_len12_inverse", CML_OP_FFT, case_fft_c64_len12_inv},
    {"fft_c64_len37", CML_OP_FFT, case_fft_c64_len37},
    {"fft_c128_len5", CML_OP_FFT, case_fft_c128_len5},
    {"fft_c128_len1_inverse", CML_OP_FFT, case_fft_c128_len1},
    {"fft_c128_len100_inverse", CML_OP_FFT, case_fft_c128_len100_inv},
    {"fft_c64_2d", CML_OP_FFT, case_fft_c64_2d},
    {"fft_c128_3d_inverse", CML_OP_FFT, case_fft_c128_3d_inv},
    {"fft_c64_empty_batch", CML_OP_FFT, case_fft_c64_empty_batch},
    {"fft_real_f32_len8", CML_OP_FFT, case_fft_real_f32_len8},
    {"fft_real_f32_len7", CML_OP_FFT, case_fft_real_f32_len7},
    {"fft_real_f64_len1", CML_OP_FFT, case_fft_real_f64_len1},
    {"fft_real_f64_len45", CML_OP_FFT, case_fft_real_f64_len45},
    {"fft_real_f32_len400", CML_OP_FFT, case_fft_real_f32_len400},
    {"fft_real_f64_2d_len500", CML_OP_FFT, case_fft_real_f64_2d_len500},
    {"fft_c64_len400", CML_OP_FFT, case_fft_c64_len400},
    {"fft_c128_len1000_inverse", CML_OP_FFT, case_fft_c128_len1000_inv},
    {"fft_c64_len509", CML_OP_FFT, case_fft_c64_len509},
    {"fft_real_f64_2d", CML_OP_FFT, case_fft_real_f64_2d},
    {"fft_real_f32_3d", CML_OP_FFT, case_fft_real_f32_3d},
    {"batch_norm_hand", CML_OP_BATCH_NORM_TRAINING, case_bn_hand_values},
    {"batch_norm_training_large_mean", CML_OP_BATCH_NORM_TRAINING, case_bn_training_large_mean},
    {"batch_norm_f16_large_mean", CML_OP_BATCH_NORM_INFERENCE, case_bn_f16_large_mean},
    {"batch_norm_f32_axis1", CML_OP_BATCH_NORM_INFERENCE, case_bn_f32_axis1},
    {"batch_norm_f64_last_axis", CML_OP_BATCH_NORM_TRAINING, case_bn_f64_last_axis},
    {"batch_norm_f32_first_axis", CML_OP_BATCH_NORM_GRADIENT, case_bn_f32_first_axis},
    {"batch_norm_f16", CML_OP_BATCH_NORM_GRADIENT, case_bn_f16},
    {"batch_norm_bf16", CML_OP_BATCH_NORM_INFERENCE, case_bn_bf16},
    {"optimization_barrier", CML_OP_OPTIMIZATION_BARRIER, case_optimization_barrier},
    {"scheduling_barrier", CML_OP_SCHEDULING_BARRIER, case_scheduling_barrier},
};
const size_t bt_cases_special_count = sizeof bt_cases_special / sizeof bt_cases_special[0];
