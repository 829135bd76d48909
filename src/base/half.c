// SPDX-License-Identifier: Apache-2.0
// src/base/half.c: IEEE binary16 and bfloat16 conversions (round to nearest, ties to even).
#include <math.h>
#include <string.h>

#include "cml/shape.h"

static uint32_t cml_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float cml_bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

float cml_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t man = h & 0x3FFu;
  if (exp == 0x1F) return cml_bits_f32(sign | 0x7F800000u | (man << 13));  // Inf / NaN
  if (exp == 0) {
    if (man == 0) return cml_bits_f32(sign);
    // Subnormal: man * 2^-24, exact in f32.
    float v = (float)man * 0x1p-24f;
    return sign ? -v : v;
  }
  return cml_bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

// Rounds |x| (a double, so f32 and f64 sources both round exactly once) to binary16 bits.
static uint16_t cml_double_to_f16(double x) {
  uint16_t sign = signbit(x) ? 0x8000u : 0;
  if (isnan(x)) return (uint16_t)(sign | 0x7E00u);
  double a = fabs(x);
  if (isinf(a)) return (uint16_t)(sign | 0x7C00u);
  if (a >= 65520.0) return (uint16_t)(sign | 0x7C00u);  // rounds to Inf
  if (a < 0x1p-14) {
    // Subnormal range: quantum 2^-24. nearbyint rounds half to even in the default mode.
    double q = nearbyint(a * 0x1p24);
    return (uint16_t)(sign | (uint16_t)q);  // q == 1024 gives the smallest normal, correctly
  }
  int e;
  double m = frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  // 11 significant bits: scale mantissa to [1024, 2048).
  double q = nearbyint(m * 2048.0);
  if (q >= 2048.0) {
    q /= 2.0;
    e += 1;
  }
  int biased = e - 1 + 15;
  if (biased >= 31) return (uint16_t)(sign | 0x7C00u);
  return (uint16_t)(sign | (uint16_t)(biased << 10) | ((uint16_t)q & 0x3FFu));
}

uint16_t cml_f32_to_f16(float value) { return cml_double_to_f16((double)value); }
uint16_t cml_f64_to_f16(double value) { return cml_double_to_f16(value); }

float cml_bf16_to_f32(uint16_t bits) { return cml_bits_f32((uint32_t)bits << 16); }

uint16_t cml_f32_to_bf16(float value) {
  uint32_t u = cml_f32_bits(value);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((u >> 16) | 0x0040u);  // quiet NaN
  uint32_t rounding = 0x7FFFu + ((u >> 16) & 1u);
  return (uint16_t)((u + rounding) >> 16);
}

uint16_t cml_f64_to_bf16(double value) {
  if (isnan(value)) return (uint16_t)(signbit(value) ? 0xFFC0u : 0x7FC0u);
  uint16_t sign = signbit(value) ? 0x8000u : 0;
  double a = fabs(value);
  if (isinf(a)) return (uint16_t)(sign | 0x7F80u);
  if (a == 0) return sign;
  // bf16 has 8 significant bits; subnormals have quantum 2^-133.
  int e;
  double m = frexp(a, &e);
  if (e - 1 < -126) {
    double q = nearbyint(a * 0x1p133);
    return (uint16_t)(sign | (uint16_t)q);
  }
  double q = nearbyint(m * 256.0);
  if (q >= 256.0) {
    q /= 2.0;
    e += 1;
  }
  int biased = e - 1 + 127;
  if (biased >= 255) return (uint16_t)(sign | 0x7F80u);
  return (uint16_t)(sign | (uint16_t)(biased << 7) | ((uint16_t)q & 0x7Fu));
}
