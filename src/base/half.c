// SPDX-License-Identifier: Apache-2.0
// src/base/half.c: IEEE binary16 and bfloat16 conversions (round to nearest, ties to even).
// From and to f32 they are base/half_inline.h's (which the kernels inline); from f64 they round
// through double here.
#include <math.h>
#include <string.h>

#include "base/half_inline.h"
#include "cml/shape.h"

float cml_f16_to_f32(uint16_t h) { return cml__f16_to_f32(h); }

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

uint16_t cml_f32_to_f16(float value) { return cml__f32_to_f16(value); }
uint16_t cml_f64_to_f16(double value) { return cml_double_to_f16(value); }

float cml_bf16_to_f32(uint16_t bits) { return cml__bf16_to_f32(bits); }

uint16_t cml_f32_to_bf16(float value) { return cml__f32_to_bf16(value); }

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
