// SPDX-License-Identifier: Apache-2.0
// src/core/quantize.c: quantization enums and tables (cml/fused.h) and the host-side quantizer:
// float rows -> every GGML block format, GGML blocks -> floats, and the Linear / NF4 quantizer.
//
// Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 follow ggml's reference quantizers operation by operation in
// float32 (so they are bit-identical to ggml and to the gguf package, which the fixtures of
// tests/data/quant/ check). The k-quants and IQ4_NL are cml's own: per sub-block min/max (or
// signed max) fitting, the super-block scales rounded to fp16 first and the sub-block scales
// to their bit width, then each value rounded against the stored (decoded) scales, with a few
// candidate scales tried per block for the symmetric formats. Their round-trip error is checked
// against ggml's published RMSE per format in tests/unit/quant_test.c.
#include <float.h>
#include <math.h>
#include <string.h>

#include "core/quant_blocks.h"

//===--- enums and tables ---===//

const char* cml_quant_scheme_name(cml_quant_scheme_t scheme) {
  switch (scheme) {
    case CML_QUANT_LINEAR:
      return "Linear";
    case CML_QUANT_NF4:
      return "NF4";
    case CML_QUANT_GGML:
      return "GGML";
    default:
      return "unknown";
  }
}

const char* cml_ggml_type_name(cml_ggml_type_t type) {
  static const char* const names[CML_GGML_TYPE_COUNT] = {
      "Q4_0", "Q8_0", "IQ4_NL", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q4_1", "Q5_0", "Q5_1"};
  if ((int)type < 0 || type >= CML_GGML_TYPE_COUNT) return "unknown";
  return names[type];
}

int64_t cml_ggml_type_values_per_block(cml_ggml_type_t type) {
  if ((int)type < 0 || type >= CML_GGML_TYPE_COUNT) return 0;
  return cml__qb_values[type];
}

int64_t cml_ggml_type_bytes_per_block(cml_ggml_type_t type) {
  if ((int)type < 0 || type >= CML_GGML_TYPE_COUNT) return 0;
  return cml__qb_bytes[type];
}

int64_t cml_ggml_row_bytes(cml_ggml_type_t type, int64_t k) {
  int64_t v = cml_ggml_type_values_per_block(type);
  if (v == 0 || k <= 0 || k % v != 0 || k / v > INT64_MAX / 256) return 0;
  return k / v * cml_ggml_type_bytes_per_block(type);
}

static const float cml_nf4_values[16] = {-1.0f,
                                         -0.6961928009986877f,
                                         -0.5250730514526367f,
                                         -0.39491748809814453f,
                                         -0.28444138169288635f,
                                         -0.18477343022823334f,
                                         -0.09105003625154495f,
                                         0.0f,
                                         0.07958029955625534f,
                                         0.16093020141124725f,
                                         0.24611230194568634f,
                                         0.33791524171829224f,
                                         0.44070982933044434f,
                                         0.5626170039176941f,
                                         0.7229568362236023f,
                                         1.0f};
static const float cml_iq4nl_values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                           1,    13,   25,  38,  53,  69,  89,  113};

const float* cml_quant_nf4_table(void) { return cml_nf4_values; }
const float* cml_quant_iq4nl_table(void) { return cml_iq4nl_values; }

void cml_quantization_init(cml_quantization_t* quantization) {
  if (!quantization) return;
  memset(quantization, 0, sizeof *quantization);
  quantization->scheme = CML_QUANT_LINEAR;
  quantization->scale = CML_VALUE_INVALID;
  quantization->zero_point = CML_VALUE_INVALID;
  quantization->block_axis = 1;
  quantization->block_size = 0;
  quantization->ggml_type = CML_GGML_Q4_0;
}

//===--- helpers ---===//

static void cml_qz_put_half(uint8_t* p, float v) {
  uint16_t h = cml_f32_to_f16(v);
  p[0] = (uint8_t)(h & 0xFF);
  p[1] = (uint8_t)(h >> 8);
}

// ggml's roundf (half away from zero), as an int.
static int cml_qz_round(float v) { return (int)roundf(v); }

static int cml_qz_clamp(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

// The value of largest magnitude (the first one on ties), as ggml's legacy quantizers pick it.
static float cml_qz_signed_max(const float* x, int n) {
  float amax = 0, max = 0;
  for (int i = 0; i < n; ++i) {
    if (amax < fabsf(x[i])) {
      amax = fabsf(x[i]);
      max = x[i];
    }
  }
  return max;
}

//===--- legacy formats (ggml's reference, bit for bit) ---===//

// Q4_0 (|bits| 4, offset 8) and Q5_0 (|bits| 5, offset 16): d = max / -2^(bits-1).
static void cml_qz_q4_0_q5_0(const float* x, uint8_t* b, int bits) {
  const float half = (float)(1 << (bits - 1));
  const float d = cml_qz_signed_max(x, 32) / -half;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  const int qmax = (1 << bits) - 1;
  uint8_t q[32];
  for (int j = 0; j < 32; ++j) {
    float v = truncf(x[j] * id + (half + 0.5f));
    int qi = v < 0 ? 0 : (int)v;
    q[j] = (uint8_t)(qi > qmax ? qmax : qi);
  }
  cml_qz_put_half(b, d);
  uint8_t* qs = b + (bits == 5 ? 6 : 2);
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    qs[j] = (uint8_t)((q[j] & 15) | ((q[j + 16] & 15) << 4));
    qh |= (uint32_t)(q[j] >> 4) << j;
    qh |= (uint32_t)(q[j + 16] >> 4) << (j + 16);
  }
  if (bits == 5) {
    for (int t = 0; t < 4; ++t) b[2 + t] = (uint8_t)(qh >> (8 * t));
  }
}

// Q4_1 (|bits| 4) and Q5_1 (|bits| 5): d = (max - min) / (2^bits - 1), m = min.
static void cml_qz_q4_1_q5_1(const float* x, uint8_t* b, int bits) {
  float min = FLT_MAX, max = -FLT_MAX;
  for (int j = 0; j < 32; ++j) {
    if (x[j] < min) min = x[j];
    if (x[j] > max) max = x[j];
  }
  const int qmax = (1 << bits) - 1;
  const float d = (max - min) / (float)qmax;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  uint8_t q[32];
  for (int j = 0; j < 32; ++j) {
    float v = truncf((x[j] - min) * id + 0.5f);
    int qi = v < 0 ? 0 : (int)v;
    q[j] = (uint8_t)(qi > qmax ? qmax : qi);
  }
  cml_qz_put_half(b, d);
  cml_qz_put_half(b + 2, min);
  uint8_t* qs = b + (bits == 5 ? 8 : 4);
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    qs[j] = (uint8_t)((q[j] & 15) | ((q[j + 16] & 15) << 4));
    qh |= (uint32_t)(q[j] >> 4) << j;
    qh |= (uint32_t)(q[j + 16] >> 4) << (j + 16);
  }
  if (bits == 5) {
    for (int t = 0; t < 4; ++t) b[4 + t] = (uint8_t)(qh >> (8 * t));
  }
}

static void cml_qz_q8_0(const float* x, uint8_t* b) {
  float amax = 0;
  for (int j = 0; j < 32; ++j) amax = fmaxf(amax, fabsf(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  cml_qz_put_half(b, d);
  for (int j = 0; j < 32; ++j) b[2 + j] = (uint8_t)(int8_t)cml_qz_round(x[j] * id);
}

//===--- IQ4_NL (cml's search) ---===//

static int cml_qz_iq4nl_index(float v) {
  int best = 0;
  float err = fabsf(v - cml_iq4nl_values[0]);
  for (int i = 1; i < 16; ++i) {
    float e = fabsf(v - cml_iq4nl_values[i]);
    if (e < err) {
      err = e;
      best = i;
    }
  }
  return best;
}

static void cml_qz_iq4_nl(const float* x, uint8_t* b) {
  const float max = cml_qz_signed_max(x, 32);
  float best_d = 0, best_err = INFINITY;
  for (int t = -8; t <= 8 && max != 0; ++t) {
    // Candidate scales around max / -127 (the table's extreme entry).
    float d = cml_f16_to_f32(cml_f32_to_f16(max / (-127.0f + 2.0f * (float)t)));
    if (d == 0 || !isfinite(d)) continue;
    float err = 0;
    for (int j = 0; j < 32; ++j) {
      float e = x[j] - d * cml_iq4nl_values[cml_qz_iq4nl_index(x[j] / d)];
      err += e * e;
    }
    if (err < best_err) {
      best_err = err;
      best_d = d;
    }
  }
  cml_qz_put_half(b, best_d);
  for (int j = 0; j < 16; ++j) {
    int lo = best_d != 0 ? cml_qz_iq4nl_index(x[j] / best_d) : 7;
    int hi = best_d != 0 ? cml_qz_iq4nl_index(x[j + 16] / best_d) : 7;
    b[2 + j] = (uint8_t)(lo | (hi << 4));
  }
}

//===--- k-quants (cml's fitting) ---===//

// Asymmetric sub-block fit: x ~ scale * q - min with q in [0, qmax], min >= 0.
static void cml_qz_fit_asym(const float* x, int n, int qmax, float* scale, float* min) {
  float lo = 0, hi = 0;  // the range always includes 0, as ggml's make_qkx quantizers do
  for (int i = 0; i < n; ++i) {
    lo = fminf(lo, x[i]);
    hi = fmaxf(hi, x[i]);
  }
  *scale = (hi - lo) / (float)qmax;
  *min = -lo;
}

// Q2_K (sub-blocks of 16, q 2 bits, 4-bit scales and mins), Q4_K / Q5_K (sub-blocks of 32,
// q 4 / 5 bits, 6-bit scales and mins).
static void cml_qz_kquant_asym(cml_ggml_type_t type, const float* x, uint8_t* b) {
  const bool q2 = type == CML_GGML_Q2_K;
  const int sub = q2 ? 16 : 8, len = q2 ? 16 : 32;
  const int qmax = q2 ? 3 : (type == CML_GGML_Q4_K ? 15 : 31);
  const int smax = q2 ? 15 : 63;
  float scales[16], mins[16], max_scale = 0, max_min = 0;
  for (int j = 0; j < sub; ++j) {
    cml_qz_fit_asym(x + len * j, len, qmax, &scales[j], &mins[j]);
    max_scale = fmaxf(max_scale, scales[j]);
    max_min = fmaxf(max_min, mins[j]);
  }
  const float d = cml_f16_to_f32(cml_f32_to_f16(max_scale / (float)smax));
  const float dmin = cml_f16_to_f32(cml_f32_to_f16(max_min / (float)smax));
  uint8_t ls[16], lm[16];
  for (int j = 0; j < sub; ++j) {
    ls[j] = (uint8_t)(d > 0 ? cml_qz_clamp(cml_qz_round(scales[j] / d), 0, smax) : 0);
    lm[j] = (uint8_t)(dmin > 0 ? cml_qz_clamp(cml_qz_round(mins[j] / dmin), 0, smax) : 0);
  }
  uint8_t q[256];
  for (int j = 0; j < sub; ++j) {
    const float dl = d * (float)ls[j], ml = dmin * (float)lm[j];
    for (int l = 0; l < len; ++l) {
      q[len * j + l] =
          (uint8_t)(dl > 0 ? cml_qz_clamp(cml_qz_round((x[len * j + l] + ml) / dl), 0, qmax) : 0);
    }
  }
  if (q2) {
    for (int j = 0; j < 16; ++j) b[j] = (uint8_t)(ls[j] | (lm[j] << 4));
    memset(b + 16, 0, 64);
    for (int n = 0; n < 2; ++n) {
      for (int j = 0; j < 4; ++j) {
        for (int l = 0; l < 32; ++l)
          b[16 + 32 * n + l] |= (uint8_t)(q[128 * n + 32 * j + l] << (2 * j));
      }
    }
    cml_qz_put_half(b + 80, d);
    cml_qz_put_half(b + 82, dmin);
    return;
  }
  cml_qz_put_half(b, d);
  cml_qz_put_half(b + 2, dmin);
  uint8_t* s = b + 4;
  for (int j = 0; j < 4; ++j) {
    s[j] = (uint8_t)((ls[j] & 63) | ((ls[j + 4] >> 4) << 6));
    s[j + 4] = (uint8_t)((lm[j] & 63) | ((lm[j + 4] >> 4) << 6));
    s[j + 8] = (uint8_t)((ls[j + 4] & 15) | ((lm[j + 4] & 15) << 4));
  }
  const bool five = type == CML_GGML_Q5_K;
  uint8_t* qh = b + 16;
  uint8_t* qs = five ? b + 48 : b + 16;
  if (five) memset(qh, 0, 32);
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      uint8_t lo = q[64 * c + l], hi = q[64 * c + 32 + l];
      qs[32 * c + l] = (uint8_t)((lo & 15) | ((hi & 15) << 4));
      if (five) qh[l] |= (uint8_t)(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
    }
  }
}

// Q3_K (q in [-4, 3], 6-bit signed scales) and Q6_K (q in [-32, 31], int8 scales), both with
// sub-blocks of 16: symmetric fits x ~ d * scale * q.
static void cml_qz_kquant_sym(cml_ggml_type_t type, const float* x, uint8_t* b) {
  const bool q6 = type == CML_GGML_Q6_K;
  const int qlo = q6 ? -32 : -4, qhi = q6 ? 31 : 3;
  const int slo = q6 ? -128 : -32, shi = q6 ? 127 : 31;
  float scales[16], amax = 0, smax_v = 0;
  for (int j = 0; j < 16; ++j) {
    scales[j] = cml_qz_signed_max(x + 16 * j, 16) / (float)qlo;
    if (fabsf(scales[j]) > amax) {
      amax = fabsf(scales[j]);
      smax_v = scales[j];
    }
  }
  const float d = cml_f16_to_f32(cml_f32_to_f16(smax_v / (float)slo));
  int8_t ls[16];
  for (int j = 0; j < 16; ++j) {
    ls[j] = (int8_t)(d != 0 ? cml_qz_clamp(cml_qz_round(scales[j] / d), slo, shi) : 0);
  }
  int8_t q[256];
  for (int j = 0; j < 16; ++j) {
    const float dl = d * (float)ls[j];
    for (int l = 0; l < 16; ++l) {
      q[16 * j + l] =
          (int8_t)(dl != 0 ? cml_qz_clamp(cml_qz_round(x[16 * j + l] / dl), qlo, qhi) : 0);
    }
  }
  if (q6) {
    uint8_t* ql = b;
    uint8_t* qh = b + 128;
    memset(b, 0, 192);
    for (int n = 0; n < 2; ++n) {
      for (int u = 0; u < 4; ++u) {
        for (int l = 0; l < 32; ++l) {
          int v = q[128 * n + 32 * u + l] + 32;
          ql[64 * n + l + 32 * (u & 1)] |= (uint8_t)((v & 15) << (4 * (u >> 1)));
          qh[32 * n + l] |= (uint8_t)((v >> 4) << (2 * u));
        }
      }
    }
    for (int j = 0; j < 16; ++j) b[192 + j] = (uint8_t)ls[j];
    cml_qz_put_half(b + 208, d);
    return;
  }
  uint8_t* hm = b;
  uint8_t* qs = b + 32;
  uint8_t* s = b + 96;
  memset(b, 0, 108);
  for (int n = 0; n < 2; ++n) {
    for (int j = 0; j < 4; ++j) {
      for (int l = 0; l < 32; ++l) {
        int v = q[128 * n + 32 * j + l] + 4;  // 0..7: low 2 bits in qs, bit 2 in hmask
        qs[32 * n + l] |= (uint8_t)((v & 3) << (2 * j));
        hm[l] |= (uint8_t)((v >> 2) << (4 * n + j));
      }
    }
  }
  for (int i = 0; i < 16; ++i) {
    int v = ls[i] + 32;
    if (i < 8) {
      s[i] |= (uint8_t)(v & 15);
    } else {
      s[i - 8] |= (uint8_t)((v & 15) << 4);
    }
    s[8 + i % 4] |= (uint8_t)(((v >> 4) & 3) << (2 * (i / 4)));
  }
  cml_qz_put_half(b + 108, d);
}

//===--- public entry points ---===//

static cml_status_t cml_qz_check(const char* fn, cml_ggml_type_t type, const void* src,
                                 int64_t rows, int64_t k, const void* dst, int64_t* out_row) {
  *out_row = cml_ggml_row_bytes(type, k);
  if (!src || !dst || rows < 0) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: NULL buffer or negative rows %lld", fn,
                           (long long)rows);
  }
  if ((int)type < 0 || type >= CML_GGML_TYPE_COUNT) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: unknown GGML type %d", fn, (int)type);
  }
  if (*out_row == 0) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "%s: k %lld is not a positive multiple of %s's block of %d values", fn,
                           (long long)k, cml_ggml_type_name(type), cml__qb_values[type]);
  }
  return CML_OK;
}

cml_status_t cml_quantize_ggml(cml_ggml_type_t type, const float* src, int64_t rows, int64_t k,
                               void* dst, size_t dst_size) {
  int64_t row_bytes;
  CML_RETURN_IF_ERROR(cml_qz_check("cml_quantize_ggml", type, src, rows, k, dst, &row_bytes));
  if ((uint64_t)rows > SIZE_MAX / (uint64_t)row_bytes || dst_size < (size_t)(rows * row_bytes)) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "cml_quantize_ggml: %zu bytes given for %lld rows of %lld %s values "
                           "(%lld bytes each)",
                           dst_size, (long long)rows, (long long)k, cml_ggml_type_name(type),
                           (long long)row_bytes);
  }
  const int64_t vpb = cml__qb_values[type], bpb = cml__qb_bytes[type];
  const int64_t blocks = rows * (k / vpb);
  uint8_t* out = dst;
  for (int64_t i = 0; i < blocks; ++i) {
    const float* x = src + i * vpb;
    uint8_t* b = out + i * bpb;
    switch (type) {
      case CML_GGML_Q4_0:
        cml_qz_q4_0_q5_0(x, b, 4);
        break;
      case CML_GGML_Q5_0:
        cml_qz_q4_0_q5_0(x, b, 5);
        break;
      case CML_GGML_Q4_1:
        cml_qz_q4_1_q5_1(x, b, 4);
        break;
      case CML_GGML_Q5_1:
        cml_qz_q4_1_q5_1(x, b, 5);
        break;
      case CML_GGML_Q8_0:
        cml_qz_q8_0(x, b);
        break;
      case CML_GGML_IQ4_NL:
        cml_qz_iq4_nl(x, b);
        break;
      case CML_GGML_Q2_K:
      case CML_GGML_Q4_K:
      case CML_GGML_Q5_K:
        cml_qz_kquant_asym(type, x, b);
        break;
      case CML_GGML_Q3_K:
      case CML_GGML_Q6_K:
        cml_qz_kquant_sym(type, x, b);
        break;
      default:
        break;
    }
  }
  return CML_OK;
}

cml_status_t cml_dequantize_ggml(cml_ggml_type_t type, const void* src, int64_t rows, int64_t k,
                                 float* dst) {
  int64_t row_bytes;
  CML_RETURN_IF_ERROR(cml_qz_check("cml_dequantize_ggml", type, src, rows, k, dst, &row_bytes));
  const int64_t vpb = cml__qb_values[type], bpb = cml__qb_bytes[type];
  const int64_t blocks = rows * (k / vpb);
  const uint8_t* in = src;
  for (int64_t i = 0; i < blocks; ++i) cml__qb_decode(type, in + i * bpb, dst + i * vpb);
  return CML_OK;
}

//===--- Linear and NF4 ---===//

// Stores |v| as element |i| of |dtype| at |p| (packed dtypes: low bits first).
static void cml_qz_store_int(void* p, cml_dtype_t dtype, int64_t i, int v) {
  uint8_t* b = p;
  switch (dtype) {
    case CML_DTYPE_I8:
    case CML_DTYPE_U8:
      b[i] = (uint8_t)v;
      return;
    case CML_DTYPE_I4:
    case CML_DTYPE_U4: {
      const int sh = (int)(i & 1) * 4;
      b[i >> 1] = (uint8_t)((b[i >> 1] & ~(15 << sh)) | ((v & 15) << sh));
      return;
    }
    default: {  // I2, U2
      const int sh = (int)(i & 3) * 2;
      b[i >> 2] = (uint8_t)((b[i >> 2] & ~(3 << sh)) | ((v & 3) << sh));
      return;
    }
  }
}

static int cml_qz_nf4_index(float v) {
  int best = 0;
  float err = fabsf(v - cml_nf4_values[0]);
  for (int i = 1; i < 16; ++i) {
    float e = fabsf(v - cml_nf4_values[i]);
    if (e < err) {
      err = e;
      best = i;
    }
  }
  return best;
}

cml_status_t cml_quantize_linear(cml_quant_scheme_t scheme, cml_dtype_t weight_dtype,
                                 const float* src, int64_t k, int64_t n, int64_t block_size,
                                 void* weights, float* scale, float* zero_point) {
  const char* fn = "cml_quantize_linear";
  if (!src || !weights || !scale || k < 0 || n < 0) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: NULL buffer or negative dims", fn);
  }
  if (scheme != CML_QUANT_LINEAR && scheme != CML_QUANT_NF4) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: scheme %s is not Linear or NF4", fn,
                           cml_quant_scheme_name(scheme));
  }
  const bool is_signed =
      weight_dtype == CML_DTYPE_I8 || weight_dtype == CML_DTYPE_I4 || weight_dtype == CML_DTYPE_I2;
  const bool known = is_signed || weight_dtype == CML_DTYPE_U8 || weight_dtype == CML_DTYPE_U4 ||
                     weight_dtype == CML_DTYPE_U2;
  if (!known ||
      (scheme == CML_QUANT_NF4 && (weight_dtype == CML_DTYPE_I2 || weight_dtype == CML_DTYPE_U2))) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: weight dtype %s is not usable for %s",
                           fn, cml_dtype_name(weight_dtype), cml_quant_scheme_name(scheme));
  }
  if (block_size < 1) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: block_size %lld must be >= 1", fn,
                           (long long)block_size);
  }
  if (scheme == CML_QUANT_LINEAR && !is_signed && !zero_point) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "%s: unsigned dtype %s needs a zero_point buffer", fn,
                           cml_dtype_name(weight_dtype));
  }
  const int bits = cml_dtype_bits(weight_dtype);
  // ceil(n / block_size) and the block ends without forming n + block_size - 1 or
  // n0 + block_size, which overflow for block sizes near INT64_MAX.
  const int64_t nb = n == 0 ? 0 : (n - 1) / block_size + 1;
  cml_shape_t ws = cml_shape_make(weight_dtype, 2, (int64_t[]){k, n});
  memset(weights, 0, cml_shape_byte_size(&ws));
  for (int64_t r = 0; r < k; ++r) {
    for (int64_t blk = 0; blk < nb; ++blk) {
      const int64_t n0 = blk * block_size;
      const int64_t n1 = block_size < n - n0 ? n0 + block_size : n;
      const float* x = src + r * n;
      float lo = 0, hi = 0, amax = 0;
      for (int64_t c = n0; c < n1; ++c) {
        lo = fminf(lo, x[c]);
        hi = fmaxf(hi, x[c]);
        amax = fmaxf(amax, fabsf(x[c]));
      }
      float s, z = 0;
      if (scheme == CML_QUANT_NF4) {
        s = amax;
      } else if (is_signed && !zero_point) {
        s = amax / (float)((1 << (bits - 1)) - 1);
      } else {
        // Asymmetric: [lo, hi] onto the dtype's whole range.
        const int qmin = is_signed ? -(1 << (bits - 1)) : 0;
        const int levels = (1 << bits) - 1;
        s = (hi - lo) / (float)levels;
        z = lo - (float)qmin * s;
      }
      scale[r * nb + blk] = s;
      if (zero_point) zero_point[r * nb + blk] = z;
      for (int64_t c = n0; c < n1; ++c) {
        int q;
        if (scheme == CML_QUANT_NF4) {
          q = cml_qz_nf4_index(s != 0 ? x[c] / s : 0.0f);
        } else {
          const int qmin = is_signed ? -(1 << (bits - 1)) : 0;
          const int qmax = is_signed ? (1 << (bits - 1)) - 1 : (1 << bits) - 1;
          q = s != 0 ? cml_qz_clamp(cml_qz_round((x[c] - z) / s), qmin, qmax) : 0;
        }
        cml_qz_store_int(weights, weight_dtype, r * n + c, q);
      }
    }
  }
  return CML_OK;
}
