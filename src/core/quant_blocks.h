// SPDX-License-Identifier: Apache-2.0
// src/core/quant_blocks.h: ggml block decoders shared by the host-side dequantizer
// (src/core/quantize.c) and the c backend's quantized kernels (kernels/generic/quant.c).
//
// Each decoder turns one block of |type| into its 32 or 256 float values, with ggml's formulas
// and ggml's order of float operations ((d * scale) * q - (dmin * min)), so that the values are
// bit-identical to ggml's and to the gguf Python package's dequantizers. Layouts (byte offsets
// inside a block): ggml's ggml-common.h. Static inline: pure functions, no state.
#ifndef CML_CORE_QUANT_BLOCKS_H_
#define CML_CORE_QUANT_BLOCKS_H_

#include <stdint.h>
#include <string.h>

#include "cml/fused.h"
#include "cml/shape.h"

#ifdef __cplusplus
extern "C" {
#endif

// Block geometry by cml_ggml_type_t value (0 for values past the table).
static const int32_t cml__qb_values[CML_GGML_TYPE_COUNT] = {32,  32,  32, 256, 256, 256,
                                                            256, 256, 32, 32,  32};
static const int32_t cml__qb_bytes[CML_GGML_TYPE_COUNT] = {18,  34,  18, 84, 110, 144,
                                                           176, 210, 20, 22, 24};

// ggml's kvalues_iq4nl.
static const int8_t cml__qb_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                         1,    13,   25,  38,  53,  69,  89,  113};

static inline float cml__qb_half(const uint8_t* p) {
  return cml_f16_to_f32((uint16_t)(p[0] | (p[1] << 8)));
}

static inline uint32_t cml__qb_u32(const uint8_t* p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

// The 6-bit scale and min of sub-block |j| (0..7) of a Q4_K / Q5_K block's 12 scale bytes.
static inline void cml__qb_scale_min_k4(int j, const uint8_t* s, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (uint8_t)((s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4));
    *m = (uint8_t)((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}

// The 16 signed 6-bit scales of a Q3_K block's 12 scale bytes.
static inline void cml__qb_q3k_scales(const uint8_t* s, int8_t out[16]) {
  for (int i = 0; i < 16; ++i) {
    int low = i < 8 ? (s[i] & 15) : (s[i - 8] >> 4);
    int high = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
    out[i] = (int8_t)((low | (high << 4)) - 32);
  }
}

// Decodes one block of |type| at |b| into |y| (cml__qb_values[type] floats).
static inline void cml__qb_decode(cml_ggml_type_t type, const uint8_t* b, float* y) {
  switch (type) {
    case CML_GGML_Q4_0: {
      const float d = cml__qb_half(b);
      for (int j = 0; j < 16; ++j) {
        y[j] = (float)((b[2 + j] & 15) - 8) * d;
        y[j + 16] = (float)((b[2 + j] >> 4) - 8) * d;
      }
      return;
    }
    case CML_GGML_Q4_1: {
      const float d = cml__qb_half(b), m = cml__qb_half(b + 2);
      for (int j = 0; j < 16; ++j) {
        y[j] = (float)(b[4 + j] & 15) * d + m;
        y[j + 16] = (float)(b[4 + j] >> 4) * d + m;
      }
      return;
    }
    case CML_GGML_Q5_0: {
      const float d = cml__qb_half(b);
      const uint32_t qh = cml__qb_u32(b + 2);
      for (int j = 0; j < 16; ++j) {
        int lo = (b[6 + j] & 15) | (int)(((qh >> j) & 1u) << 4);
        int hi = (b[6 + j] >> 4) | (int)(((qh >> (j + 16)) & 1u) << 4);
        y[j] = (float)(lo - 16) * d;
        y[j + 16] = (float)(hi - 16) * d;
      }
      return;
    }
    case CML_GGML_Q5_1: {
      const float d = cml__qb_half(b), m = cml__qb_half(b + 2);
      const uint32_t qh = cml__qb_u32(b + 4);
      for (int j = 0; j < 16; ++j) {
        int lo = (b[8 + j] & 15) | (int)(((qh >> j) & 1u) << 4);
        int hi = (b[8 + j] >> 4) | (int)(((qh >> (j + 16)) & 1u) << 4);
        y[j] = (float)lo * d + m;
        y[j + 16] = (float)hi * d + m;
      }
      return;
    }
    case CML_GGML_Q8_0: {
      const float d = cml__qb_half(b);
      for (int j = 0; j < 32; ++j) y[j] = (float)(int8_t)b[2 + j] * d;
      return;
    }
    case CML_GGML_IQ4_NL: {
      const float d = cml__qb_half(b);
      for (int j = 0; j < 16; ++j) {
        y[j] = d * (float)cml__qb_iq4nl[b[2 + j] & 15];
        y[j + 16] = d * (float)cml__qb_iq4nl[b[2 + j] >> 4];
      }
      return;
    }
    case CML_GGML_Q2_K: {
      const uint8_t* sc = b;
      const uint8_t* qs = b + 16;
      const float d = cml__qb_half(b + 80), dmin = cml__qb_half(b + 82);
      for (int n = 0; n < 2; ++n) {
        for (int j = 0; j < 4; ++j) {
          for (int h = 0; h < 2; ++h) {
            const uint8_t s = sc[8 * n + 2 * j + h];
            const float dl = d * (float)(s & 15), ml = dmin * (float)(s >> 4);
            for (int l = 16 * h; l < 16 * h + 16; ++l) {
              y[128 * n + 32 * j + l] = dl * (float)((qs[32 * n + l] >> (2 * j)) & 3) - ml;
            }
          }
        }
      }
      return;
    }
    case CML_GGML_Q3_K: {
      const uint8_t* hm = b;
      const uint8_t* qs = b + 32;
      int8_t sc[16];
      cml__qb_q3k_scales(b + 96, sc);
      const float d = cml__qb_half(b + 108);
      for (int n = 0; n < 2; ++n) {
        for (int j = 0; j < 4; ++j) {
          for (int h = 0; h < 2; ++h) {
            const float dl = d * (float)sc[8 * n + 2 * j + h];
            for (int l = 16 * h; l < 16 * h + 16; ++l) {
              int q = ((qs[32 * n + l] >> (2 * j)) & 3) - (((hm[l] >> (4 * n + j)) & 1) ? 0 : 4);
              y[128 * n + 32 * j + l] = dl * (float)q;
            }
          }
        }
      }
      return;
    }
    case CML_GGML_Q4_K:
    case CML_GGML_Q5_K: {
      const bool five = type == CML_GGML_Q5_K;
      const float d = cml__qb_half(b), dmin = cml__qb_half(b + 2);
      const uint8_t* s = b + 4;
      const uint8_t* qh = b + 16;
      const uint8_t* qs = five ? b + 48 : b + 16;
      for (int c = 0; c < 4; ++c) {
        for (int h = 0; h < 2; ++h) {
          const int j = 2 * c + h;
          uint8_t sc, m;
          cml__qb_scale_min_k4(j, s, &sc, &m);
          const float dl = d * (float)sc, ml = dmin * (float)m;
          for (int l = 0; l < 32; ++l) {
            int q = (qs[32 * c + l] >> (4 * h)) & 15;
            if (five) q |= ((qh[l] >> j) & 1) << 4;
            y[32 * j + l] = dl * (float)q - ml;
          }
        }
      }
      return;
    }
    case CML_GGML_Q6_K: {
      const float d = cml__qb_half(b + 208);
      const int8_t* sc = (const int8_t*)(b + 192);
      for (int n = 0; n < 2; ++n) {
        const uint8_t* ql = b + 64 * n;
        const uint8_t* qh = b + 128 + 32 * n;
        for (int u = 0; u < 4; ++u) {
          for (int l = 0; l < 32; ++l) {
            int lo = (ql[l + 32 * (u & 1)] >> (4 * (u >> 1))) & 15;
            int hi = (qh[l] >> (2 * u)) & 3;
            const int e = 128 * n + 32 * u + l;
            y[e] = d * (float)sc[e / 16] * (float)((lo | (hi << 4)) - 32);
          }
        }
      }
      return;
    }
    default:
      memset(y, 0, sizeof(float) * 32);
      return;
  }
}

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_CORE_QUANT_BLOCKS_H_
