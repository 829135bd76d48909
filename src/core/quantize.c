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

//===--- legacy formats (the gguf package's quantizers, bit for bit) ---===//
//
// These follow gguf's numpy code (gguf/quants.py) where it and ggml's C reference differ, which
// is only on rows of -0.0 and rows holding a NaN: numpy's argmax picks x[0] when every |x| is 0
// (ggml's loop keeps its +0.0 start, so d = -0.0 for a row of -0.0, where gguf stores +0.0),
// and numpy's argmax, max and min propagate a NaN (ggml's comparisons skip it), so such a block
// stores d = NaN. Which NaN follows numpy too: Q4_0 and Q5_0 take the block's first NaN (argmax,
// then a division, which quiets it), converted to fp16 keeping its sign and the top of its
// payload as numpy's float16 cast does; numpy's max and min return the default NaN (0x7FC00000)
// whatever NaN they meet, so Q4_1, Q5_1 and Q8_0 store 0x7E00. A NaN reaching numpy's
// float-to-integer cast gives 0 on x86-64, and so here (in C the cast of a NaN is undefined).

// |v| with its quiet bit set, as an arithmetic operation returns a NaN operand.
static float cml_qz_quiet(float v) {
  uint32_t u;
  memcpy(&u, &v, sizeof u);
  u |= 0x00400000u;
  memcpy(&v, &u, sizeof v);
  return v;
}

// The default NaN numpy's max and min reductions return.
static float cml_qz_default_nan(void) {
  const uint32_t u = 0x7FC00000u;
  float v;
  memcpy(&v, &u, sizeof v);
  return v;
}

// Stores |v| as fp16 the way numpy's astype(np.float16) does: as cml_f32_to_f16, except that a
// NaN keeps its sign and the top ten bits of its payload (cml_f32_to_f16 gives 0x7E00).
static void cml_qz_put_half_np(uint8_t* p, float v) {
  if (v == v) {
    cml_qz_put_half(p, v);
    return;
  }
  uint32_t u;
  memcpy(&u, &v, sizeof u);
  uint16_t h = (uint16_t)(0x7C00u | ((u & 0x007FFFFFu) >> 13));
  if (h == 0x7C00u) ++h;  // a payload only in the low bits must not become infinity
  h = (uint16_t)(h | ((u >> 16) & 0x8000u));
  p[0] = (uint8_t)(h & 0xFF);
  p[1] = (uint8_t)(h >> 8);
}

// The element of largest magnitude as numpy's x[argmax(abs(x))] picks it: the first NaN if there
// is one, else the first of the largest |x| (x[0] when all are zero, whatever their sign).
static float cml_qz_argmax_abs(const float* x, int n) {
  int best = 0;
  float amax = fabsf(x[0]);
  for (int i = 1; i < n && amax == amax; ++i) {
    const float a = fabsf(x[i]);
    if (a > amax || a != a) {
      amax = a;
      best = i;
    }
  }
  return x[best];
}

// truncf(|v|) clamped to [0, |qmax|] as numpy's .astype(np.uint8).clip(0, qmax) gives it for
// the values these quantizers produce: at most qmax + 1 before the clip, or +-inf where the
// block's range is so small that 1 / d overflows (below about 2.4e-38); numpy's cast of a
// NaN or an infinity to uint8 gives 0 on x86-64.
static uint8_t cml_qz_trunc_u8(float v, int qmax) {
  v = truncf(v);
  if (!(v > 0) || v == INFINITY) return 0;  // negative, zero, NaN or infinite
  return (uint8_t)(v > (float)qmax ? qmax : (int)v);
}

// Q4_0 (|bits| 4, offset 8) and Q5_0 (|bits| 5, offset 16): d = max / -2^(bits-1).
static void cml_qz_q4_0_q5_0(const float* x, uint8_t* b, int bits) {
  const float half = (float)(1 << (bits - 1));
  const float max = cml_qz_argmax_abs(x, 32);
  // The NaN case spelled out: the compiler may turn the division into a multiplication and a
  // sign flip, which would change the NaN's sign.
  const float d = max == max ? max / -half : cml_qz_quiet(max);
  const float id = d != 0 ? 1.0f / d : 0.0f;
  const int qmax = (1 << bits) - 1;
  uint8_t q[32];
  for (int j = 0; j < 32; ++j) q[j] = cml_qz_trunc_u8(x[j] * id + (half + 0.5f), qmax);
  cml_qz_put_half_np(b, d);
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
  float min = x[0], max = x[0];
  for (int j = 0; j < 32; ++j) {
    if (x[j] != x[j]) {
      min = max = cml_qz_default_nan();  // numpy's min and max propagate a NaN as this one
      break;
    }
    if (x[j] < min) min = x[j];
    if (x[j] > max) max = x[j];
  }
  const int qmax = (1 << bits) - 1;
  const float d = (max - min) / (float)qmax;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  uint8_t q[32];
  for (int j = 0; j < 32; ++j) q[j] = cml_qz_trunc_u8((x[j] - min) * id + 0.5f, qmax);
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
  for (int j = 0; j < 32 && amax == amax; ++j) {
    const float a = fabsf(x[j]);
    // numpy's max propagates a NaN (as its default NaN); fmaxf would drop it.
    amax = a != a ? cml_qz_default_nan() : (a > amax ? a : amax);
  }
  const float d = amax == amax ? amax / 127.0f : amax;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  cml_qz_put_half(b, d);
  for (int j = 0; j < 32; ++j) {
    const float v = x[j] * id;
    b[2 + j] = (uint8_t)(int8_t)(v == v ? cml_qz_round(v) : 0);  // NaN casts to 0 in numpy
  }
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

// IQ4_NL and the k-quants: a block holding a NaN or an infinity cannot be fitted (the fits
// skipped a NaN and rounded it to a finite code; an infinity zeroed IQ4_NL's whole block). It
// is stored with its scales NaN and every other byte 0, so that all of its values dequantize to
// NaN, as gguf's quantizers leave a NaN block of the formats they implement. Returns whether
// |x| was such a block.
static bool cml_qz_nonfinite_block(cml_ggml_type_t type, const float* x, int64_t n, uint8_t* b,
                                   int64_t bytes) {
  bool finite = true;
  for (int64_t i = 0; i < n; ++i) finite = finite && isfinite(x[i]);
  if (finite) return false;
  memset(b, 0, (size_t)bytes);
  const float nan = cml_qz_default_nan();
  switch (type) {
    case CML_GGML_Q2_K:  // d, dmin after the scales and the codes
      cml_qz_put_half(b + 80, nan);
      cml_qz_put_half(b + 82, nan);
      break;
    case CML_GGML_Q4_K:
    case CML_GGML_Q5_K:  // d, dmin first
      cml_qz_put_half(b, nan);
      cml_qz_put_half(b + 2, nan);
      break;
    case CML_GGML_Q3_K:
      cml_qz_put_half(b + 108, nan);
      break;
    case CML_GGML_Q6_K:
      cml_qz_put_half(b + 208, nan);
      break;
    default:  // IQ4_NL: d first
      cml_qz_put_half(b, nan);
      break;
  }
  return true;
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
    const int64_t vpb = cml__qb_values[type];
    if (k > 0 && k % vpb == 0) {
      // cml_ggml_row_bytes returns 0 both for a k that is not whole blocks and for a row whose
      // byte size would overflow int64; only the first is about k's multiple.
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                             "%s: the row size of k %lld %s values (%lld blocks of %d bytes) "
                             "overflows int64",
                             fn, (long long)k, cml_ggml_type_name(type), (long long)(k / vpb),
                             cml__qb_bytes[type]);
    }
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "%s: k %lld is not a positive multiple of %s's block of %d values", fn,
                           (long long)k, cml_ggml_type_name(type), cml__qb_values[type]);
  }
  if (rows > 0 && k > ((int64_t)1 << 55) / rows) {
    // rows * k values as a tensor (at most 2^55 elements, as every shape), and no overflow of
    // the block count below.
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "%s: %lld rows of %lld values are more than 2^55 values", fn,
                           (long long)rows, (long long)k);
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
    if (type == CML_GGML_IQ4_NL || cml__qb_values[type] == 256) {
      if (cml_qz_nonfinite_block(type, x, vpb, b, bpb)) continue;
    }
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
  if (k > 0 && n > ((int64_t)1 << 55) / k) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "%s: a [%lld, %lld] weight is more than 2^55 elements", fn, (long long)k,
                           (long long)n);
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
      bool finite = true;
      for (int64_t c = n0; c < n1; ++c) {
        finite = finite && isfinite(x[c]);
        lo = fminf(lo, x[c]);
        hi = fmaxf(hi, x[c]);
        amax = fmaxf(amax, fabsf(x[c]));
      }
      if (!finite) {
        // A NaN or an infinity in the block: scale (and zero point) NaN and codes 0, so the
        // whole block dequantizes to NaN, as the GGML quantizers store d = NaN (fminf / fmaxf
        // skipped a NaN and it came back as a finite weight).
        scale[r * nb + blk] = NAN;
        if (zero_point) zero_point[r * nb + blk] = NAN;
        continue;  // the codes were zeroed above
      }
      // The scale and zero point in double: (hi - lo) of finite floats can overflow a float
      // (3e38 and -3e38 gave an infinite scale and NaN weights).
      double s, z = 0;
      if (scheme == CML_QUANT_NF4) {
        s = amax;
      } else if (is_signed && !zero_point) {
        s = amax / (double)((1 << (bits - 1)) - 1);
      } else {
        // Asymmetric: [lo, hi] onto the dtype's whole range.
        const int qmin = is_signed ? -(1 << (bits - 1)) : 0;
        const int levels = (1 << bits) - 1;
        s = ((double)hi - (double)lo) / levels;
        z = lo - qmin * s;
      }
      scale[r * nb + blk] = (float)s;
      if (zero_point) zero_point[r * nb + blk] = (float)z;
      for (int64_t c = n0; c < n1; ++c) {
        int q;
        if (scheme == CML_QUANT_NF4) {
          q = cml_qz_nf4_index(s != 0 ? (float)(x[c] / s) : 0.0f);
        } else {
          const int qmin = is_signed ? -(1 << (bits - 1)) : 0;
          const int qmax = is_signed ? (1 << (bits - 1)) - 1 : (1 << bits) - 1;
          q = s != 0 ? cml_qz_clamp((int)round((x[c] - z) / s), qmin, qmax) : 0;
        }
        cml_qz_store_int(weights, weight_dtype, r * n + c, q);
      }
    }
  }
  return CML_OK;
}
