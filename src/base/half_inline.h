// SPDX-License-Identifier: Apache-2.0
// src/base/half_inline.h: the 16-bit float conversions as inline functions. base/half.c's
// cml_f16_to_f32, cml_f32_to_f16, cml_bf16_to_f32 and cml_f32_to_bf16 are these; kernels call
// them inline (no call per element). Round to nearest even; f64 sources round through
// base/half.c's double path.
#ifndef CML_BASE_HALF_INLINE_H_
#define CML_BASE_HALF_INLINE_H_

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

// f16 bits -> f32: exact (subnormals scaled, infinities and NaN payloads kept).
static inline float cml__f16_to_f32(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu;
  uint32_t bits;
  float f;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (man << 13);
  } else if (exp == 0) {
    f = (float)man * 0x1p-24f;  // exact: at most 10 significant bits
    return sign ? -f : f;
  } else {
    bits = sign | ((exp + 112u) << 23) | (man << 13);
  }
  memcpy(&f, &bits, sizeof f);
  return f;
}

// f32 -> f16 bits, rounded to nearest even once: NaN -> sign | 0x7E00,
// |x| >= 65520 -> infinity, subnormal results rounded on the 2^-24 grid.
static inline uint16_t cml__f32_to_f16(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return (uint16_t)(sign | 0x7E00u);
  if (a >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u);  // 65520 and up, infinity included
  if (a < 0x38800000u) {
    // Below 2^-14: the result is round(|x| * 2^24). Adding 0.5 (whose last mantissa bit is
    // worth 2^-24) rounds exactly that way; the low bits of the sum are the result.
    float f;
    memcpy(&f, &a, sizeof f);
    f += 0.5f;
    uint32_t r;
    memcpy(&r, &f, sizeof r);
    return (uint16_t)(sign | (uint16_t)(r - 0x3F000000u));
  }
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped bits to nearest even.
  const uint32_t odd = (a >> 13) & 1u;
  return (uint16_t)(sign | (uint16_t)((a - 0x38000000u + 0xFFFu + odd) >> 13));
}

// f32 -> bf16 bits: rounded to nearest even, NaN quieted (payload kept).
// Branch-free, so that loops over it vectorize.
static inline uint16_t cml__f32_to_bf16(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  return (uint16_t)((u & 0x7FFFFFFFu) > 0x7F800000u ? (u >> 16) | 0x0040u : rounded);
}

// bf16 bits -> f32 (exact).
static inline float cml__bf16_to_f32(uint16_t h) {
  const uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

// 64-bit integers to double with round to odd: exact below 2^53, otherwise the dropped bits
// stick in the lowest one, so a later rounding to a format of at most 51 bits (f16, bf16, f8,
// f32 is not one) rounds as if from the exact integer: once.
static inline double cml__u64_to_f64_odd(uint64_t u) {
  if (u < ((uint64_t)1 << 53)) return (double)u;
  const int shift = 11 - __builtin_clzll(u);
  uint64_t m = u >> shift;
  if (u & (((uint64_t)1 << shift) - 1)) m |= 1;
  return ldexp((double)m, shift);
}
static inline double cml__i64_to_f64_odd(int64_t i) {
  return i < 0 ? -cml__u64_to_f64_odd((uint64_t)0 - (uint64_t)i) : cml__u64_to_f64_odd((uint64_t)i);
}

#ifdef __cplusplus
}
#endif

#endif  // CML_BASE_HALF_INLINE_H_
