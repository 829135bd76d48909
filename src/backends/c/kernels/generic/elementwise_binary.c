// SPDX-License-Identifier: Apache-2.0
// kernels/generic/elementwise_binary.c: scalar reference kernels of the binary, comparison,
// Complex, Clamp and Where ops.
//
// Semantics are XLA CPU's: integers wrap (arithmetic is done in unsigned types), x / 0 = -1
// (all ones for unsigned), x % 0 = x, INT_MIN / -1 = INT_MIN, INT_MIN % -1 = 0; shift counts
// are read as unsigned and counts >= the bit width give 0 (arithmetic right shifts give the
// sign fill; for unsigned types the arithmetic shift sign-extends the top bit, as LLVM's ashr
// does). Integer Pow squares with wrap-around; a negative exponent gives 0 except for bases 1
// (1) and -1 (+-1). Float Max/Min propagate NaN and order -0 < +0. Rem is fmod (sign of the
// dividend). Atan2 and Pow of floats come from libm (within 1-2 ulp; f16/bf16 are computed in
// f32 and rounded once). TotalOrder comparisons compare sign-magnitude keys of the raw bits.
#include <tgmath.h>

#include "backends/c/kernels/generic/elementwise_internal.h"

//===--- kernel generators ---===//

// Two inputs; each read with stride 0 or 1. The straight cases get their own loops so the
// compiler can vectorize them.
#define CMLC_EW_BK(name, TA, TOUT, LOAD, STORE, CT, OPF)                             \
  static void name(void* out, const void* const* in, const int64_t* st, int64_t n) { \
    const TA* pa = (const TA*)in[0];                                                 \
    const TA* pb = (const TA*)in[1];                                                 \
    TOUT* po = (TOUT*)out;                                                           \
    if (st[0] && st[1]) {                                                            \
      for (int64_t i = 0; i < n; ++i) {                                              \
        CT a = LOAD(pa[i]), b = LOAD(pb[i]);                                         \
        po[i] = STORE(OPF(a, b));                                                    \
      }                                                                              \
    } else if (st[0]) {                                                              \
      const CT b = LOAD(pb[0]);                                                      \
      for (int64_t i = 0; i < n; ++i) {                                              \
        CT a = LOAD(pa[i]);                                                          \
        po[i] = STORE(OPF(a, b));                                                    \
      }                                                                              \
    } else if (st[1]) {                                                              \
      const CT a = LOAD(pa[0]);                                                      \
      for (int64_t i = 0; i < n; ++i) {                                              \
        CT b = LOAD(pb[i]);                                                          \
        po[i] = STORE(OPF(a, b));                                                    \
      }                                                                              \
    } else {                                                                         \
      const CT a = LOAD(pa[0]), b = LOAD(pb[0]);                                     \
      const TOUT r = STORE(OPF(a, b));                                               \
      for (int64_t i = 0; i < n; ++i) po[i] = r;                                     \
    }                                                                                \
  }

#define CMLC_EW_BOOL(x) ((uint8_t)((x) ? 1 : 0))
#define CMLC_EW_ADD(a, b) ((a) + (b))
#define CMLC_EW_SUB(a, b) ((a) - (b))
#define CMLC_EW_MUL(a, b) ((a) * (b))
#define CMLC_EW_DIV(a, b) ((a) / (b))
#define CMLC_EW_EQ(a, b) ((a) == (b))
#define CMLC_EW_NE(a, b) ((a) != (b))
#define CMLC_EW_LT(a, b) ((a) < (b))
#define CMLC_EW_LE(a, b) ((a) <= (b))
#define CMLC_EW_GT(a, b) ((a) > (b))
#define CMLC_EW_GE(a, b) ((a) >= (b))
#define CMLC_EW_IMAX(a, b) ((a) > (b) ? (a) : (b))
#define CMLC_EW_IMIN(a, b) ((a) < (b) ? (a) : (b))
#define CMLC_EW_AND(a, b) ((a) & (b))
#define CMLC_EW_OR(a, b) ((a) | (b))
#define CMLC_EW_XOR(a, b) ((a) ^ (b))
#define CMLC_EW_LAND(a, b) ((a) && (b))
#define CMLC_EW_LOR(a, b) ((a) || (b))
#define CMLC_EW_LXOR(a, b) (!(a) != !(b))
#define CMLC_EW_POW(a, b) pow(a, b)
#define CMLC_EW_FMOD(a, b) fmod(a, b)
#define CMLC_EW_ATAN2(a, b) atan2(a, b)

//===--- floats ---===//

static inline int16_t cmlc_ew_key_h(uint16_t b) { return cmlc_ew_key16(b); }

#define CMLC_EW_COMPARES(sfx, T, CT, LOAD)                                     \
  CMLC_EW_BK(cmlc_ew_eq_##sfx, T, uint8_t, LOAD, CMLC_EW_BOOL, CT, CMLC_EW_EQ) \
  CMLC_EW_BK(cmlc_ew_ne_##sfx, T, uint8_t, LOAD, CMLC_EW_BOOL, CT, CMLC_EW_NE) \
  CMLC_EW_BK(cmlc_ew_lt_##sfx, T, uint8_t, LOAD, CMLC_EW_BOOL, CT, CMLC_EW_LT) \
  CMLC_EW_BK(cmlc_ew_le_##sfx, T, uint8_t, LOAD, CMLC_EW_BOOL, CT, CMLC_EW_LE) \
  CMLC_EW_BK(cmlc_ew_gt_##sfx, T, uint8_t, LOAD, CMLC_EW_BOOL, CT, CMLC_EW_GT) \
  CMLC_EW_BK(cmlc_ew_ge_##sfx, T, uint8_t, LOAD, CMLC_EW_BOOL, CT, CMLC_EW_GE)

#define CMLC_EW_TOTAL_COMPARES(sfx, T, KT, KEY)                                  \
  CMLC_EW_BK(cmlc_ew_eq_to_##sfx, T, uint8_t, KEY, CMLC_EW_BOOL, KT, CMLC_EW_EQ) \
  CMLC_EW_BK(cmlc_ew_ne_to_##sfx, T, uint8_t, KEY, CMLC_EW_BOOL, KT, CMLC_EW_NE) \
  CMLC_EW_BK(cmlc_ew_lt_to_##sfx, T, uint8_t, KEY, CMLC_EW_BOOL, KT, CMLC_EW_LT) \
  CMLC_EW_BK(cmlc_ew_le_to_##sfx, T, uint8_t, KEY, CMLC_EW_BOOL, KT, CMLC_EW_LE) \
  CMLC_EW_BK(cmlc_ew_gt_to_##sfx, T, uint8_t, KEY, CMLC_EW_BOOL, KT, CMLC_EW_GT) \
  CMLC_EW_BK(cmlc_ew_ge_to_##sfx, T, uint8_t, KEY, CMLC_EW_BOOL, KT, CMLC_EW_GE)

#define CMLC_EW_FLOAT_BINARY(sfx, T, CT, LOAD, STORE, KT, KEY)          \
  CMLC_EW_BK(cmlc_ew_add_##sfx, T, T, LOAD, STORE, CT, CMLC_EW_ADD)     \
  CMLC_EW_BK(cmlc_ew_sub_##sfx, T, T, LOAD, STORE, CT, CMLC_EW_SUB)     \
  CMLC_EW_BK(cmlc_ew_mul_##sfx, T, T, LOAD, STORE, CT, CMLC_EW_MUL)     \
  CMLC_EW_BK(cmlc_ew_div_##sfx, T, T, LOAD, STORE, CT, CMLC_EW_DIV)     \
  CMLC_EW_BK(cmlc_ew_max_##sfx, T, T, LOAD, STORE, CT, CMLC_EW_FMAX)    \
  CMLC_EW_BK(cmlc_ew_min_##sfx, T, T, LOAD, STORE, CT, CMLC_EW_FMIN)    \
  CMLC_EW_BK(cmlc_ew_pow_##sfx, T, T, LOAD, STORE, CT, CMLC_EW_POW)     \
  CMLC_EW_BK(cmlc_ew_rem_##sfx, T, T, LOAD, STORE, CT, CMLC_EW_FMOD)    \
  CMLC_EW_BK(cmlc_ew_atan2_##sfx, T, T, LOAD, STORE, CT, CMLC_EW_ATAN2) \
  CMLC_EW_COMPARES(sfx, T, CT, LOAD)                                    \
  CMLC_EW_TOTAL_COMPARES(sfx, T, KT, KEY)

CMLC_EW_FLOAT_BINARY(f16, uint16_t, float, cml__f16_to_f32, cml__f32_to_f16, int16_t, cmlc_ew_key_h)
CMLC_EW_FLOAT_BINARY(bf16, uint16_t, float, cml__bf16_to_f32, cml__f32_to_bf16, int16_t,
                     cmlc_ew_key_h)
CMLC_EW_FLOAT_BINARY(f32, float, float, CMLC_EW_ID, CMLC_EW_ID, int32_t, cmlc_ew_key_f32)
CMLC_EW_FLOAT_BINARY(f64, double, double, CMLC_EW_ID, CMLC_EW_ID, int64_t, cmlc_ew_key_f64)

// Complex(re, im).
#define CMLC_EW_MAKE_C64(a, b) CMPLXF(a, b)
#define CMLC_EW_MAKE_C128(a, b) CMPLX(a, b)
CMLC_EW_BK(cmlc_ew_complex_f32, float, cml_c64_t, CMLC_EW_ID, cmlc_ew_store_c64, float,
           CMLC_EW_MAKE_C64)
CMLC_EW_BK(cmlc_ew_complex_f64, double, cml_c128_t, CMLC_EW_ID, cmlc_ew_store_c128, double,
           CMLC_EW_MAKE_C128)

//===--- complex ---===//

// pow(0, 0) = 1 (XLA); otherwise cpow.
static inline float _Complex cmlc_ew_cpow_f(float _Complex a, float _Complex b) {
  if (a == 0 && b == 0) return 1;
  return cpowf(a, b);
}
static inline double _Complex cmlc_ew_cpow_d(double _Complex a, double _Complex b) {
  if (a == 0 && b == 0) return 1;
  return cpow(a, b);
}

#define CMLC_EW_COMPLEX_BINARY(sfx, T, CT, LOAD, STORE, CPOW, CMUL)            \
  CMLC_EW_BK(cmlc_ew_add_##sfx, T, T, LOAD, STORE, CT, CMLC_EW_ADD)            \
  CMLC_EW_BK(cmlc_ew_sub_##sfx, T, T, LOAD, STORE, CT, CMLC_EW_SUB)            \
  CMLC_EW_BK(cmlc_ew_mul_##sfx, T, T, LOAD, STORE, CT, CMUL)                   \
  CMLC_EW_BK(cmlc_ew_div_##sfx, T, T, LOAD, STORE, CT, CMLC_EW_DIV)            \
  CMLC_EW_BK(cmlc_ew_pow_##sfx, T, T, LOAD, STORE, CT, CPOW)                   \
  CMLC_EW_BK(cmlc_ew_eq_##sfx, T, uint8_t, LOAD, CMLC_EW_BOOL, CT, CMLC_EW_EQ) \
  CMLC_EW_BK(cmlc_ew_ne_##sfx, T, uint8_t, LOAD, CMLC_EW_BOOL, CT, CMLC_EW_NE)

CMLC_EW_COMPLEX_BINARY(c64, cml_c64_t, float _Complex, cmlc_ew_load_c64, cmlc_ew_store_c64,
                       cmlc_ew_cpow_f, cmlc_ew_cmul_f)
CMLC_EW_COMPLEX_BINARY(c128, cml_c128_t, double _Complex, cmlc_ew_load_c128, cmlc_ew_store_c128,
                       cmlc_ew_cpow_d, cmlc_ew_cmul_d)

//===--- integers ---===//

// Helpers shared by signed and unsigned types: |U| is the unsigned twin, |S| the signed twin
// and |W| the unsigned type arithmetic is done in (never narrower than unsigned int, so that
// uint8/uint16 products cannot overflow a promoted int).
#define CMLC_EW_INT_COMMON(sfx, T, U, S, W, BITS)                                    \
  static inline T cmlc_ew_iadd_##sfx(T a, T b) { return (T)(U)((W)(U)a + (W)(U)b); } \
  static inline T cmlc_ew_isub_##sfx(T a, T b) { return (T)(U)((W)(U)a - (W)(U)b); } \
  static inline T cmlc_ew_imul_##sfx(T a, T b) { return (T)(U)((W)(U)a * (W)(U)b); } \
  static inline T cmlc_ew_ishl_##sfx(T a, T b) {                                     \
    return (U)b >= BITS ? (T)0 : (T)(U)((W)(U)a << (U)b);                            \
  }                                                                                  \
  static inline T cmlc_ew_isrl_##sfx(T a, T b) {                                     \
    return (U)b >= BITS ? (T)0 : (T)(U)((U)a >> (U)b);                               \
  }                                                                                  \
  static inline T cmlc_ew_isra_##sfx(T a, T b) {                                     \
    if ((U)b >= BITS) return (S)a < 0 ? (T)(U) ~(U)0 : (T)0;                         \
    return (T)(U)((S)a >> (U)b);                                                     \
  }                                                                                  \
  static inline T cmlc_ew_ipow_abs_##sfx(T a, U e) {                                 \
    W r = 1, base = (U)a;                                                            \
    while (e) {                                                                      \
      if (e & 1u) r = (U)(r * base);                                                 \
      base = (U)(base * base);                                                       \
      e = (U)(e >> 1);                                                               \
    }                                                                                \
    return (T)(U)r;                                                                  \
  }

#define CMLC_EW_SINT_HELPERS(sfx, T, U, W, BITS, TMIN)                           \
  CMLC_EW_INT_COMMON(sfx, T, U, T, W, BITS)                                      \
  static inline T cmlc_ew_idiv_##sfx(T a, T b) {                                 \
    if (b == 0) return (T)-1;                                                    \
    if (a == TMIN && b == -1) return TMIN;                                       \
    return (T)(a / b);                                                           \
  }                                                                              \
  static inline T cmlc_ew_irem_##sfx(T a, T b) {                                 \
    if (b == 0) return a;                                                        \
    if (b == -1) return 0;                                                       \
    return (T)(a % b);                                                           \
  }                                                                              \
  static inline T cmlc_ew_ipow_##sfx(T a, T b) {                                 \
    if (b < 0) return a == 1 ? (T)1 : a == -1 ? ((b & 1) ? (T)-1 : (T)1) : (T)0; \
    return cmlc_ew_ipow_abs_##sfx(a, (U)b);                                      \
  }

#define CMLC_EW_UINT_HELPERS(sfx, T, S, W, BITS)                                           \
  CMLC_EW_INT_COMMON(sfx, T, T, S, W, BITS)                                                \
  static inline T cmlc_ew_idiv_##sfx(T a, T b) { return b == 0 ? (T) ~(T)0 : (T)(a / b); } \
  static inline T cmlc_ew_irem_##sfx(T a, T b) { return b == 0 ? a : (T)(a % b); }         \
  static inline T cmlc_ew_ipow_##sfx(T a, T b) { return cmlc_ew_ipow_abs_##sfx(a, b); }

CMLC_EW_SINT_HELPERS(i8, int8_t, uint8_t, uint32_t, 8, INT8_MIN)
CMLC_EW_SINT_HELPERS(i16, int16_t, uint16_t, uint32_t, 16, INT16_MIN)
CMLC_EW_SINT_HELPERS(i32, int32_t, uint32_t, uint32_t, 32, INT32_MIN)
CMLC_EW_SINT_HELPERS(i64, int64_t, uint64_t, uint64_t, 64, INT64_MIN)
CMLC_EW_UINT_HELPERS(u8, uint8_t, int8_t, uint32_t, 8)
CMLC_EW_UINT_HELPERS(u16, uint16_t, int16_t, uint32_t, 16)
CMLC_EW_UINT_HELPERS(u32, uint32_t, int32_t, uint32_t, 32)
CMLC_EW_UINT_HELPERS(u64, uint64_t, int64_t, uint64_t, 64)

#define CMLC_EW_INT_BINARY(sfx, T)                                                   \
  CMLC_EW_BK(cmlc_ew_add_##sfx, T, T, CMLC_EW_ID, CMLC_EW_ID, T, cmlc_ew_iadd_##sfx) \
  CMLC_EW_BK(cmlc_ew_sub_##sfx, T, T, CMLC_EW_ID, CMLC_EW_ID, T, cmlc_ew_isub_##sfx) \
  CMLC_EW_BK(cmlc_ew_mul_##sfx, T, T, CMLC_EW_ID, CMLC_EW_ID, T, cmlc_ew_imul_##sfx) \
  CMLC_EW_BK(cmlc_ew_div_##sfx, T, T, CMLC_EW_ID, CMLC_EW_ID, T, cmlc_ew_idiv_##sfx) \
  CMLC_EW_BK(cmlc_ew_rem_##sfx, T, T, CMLC_EW_ID, CMLC_EW_ID, T, cmlc_ew_irem_##sfx) \
  CMLC_EW_BK(cmlc_ew_pow_##sfx, T, T, CMLC_EW_ID, CMLC_EW_ID, T, cmlc_ew_ipow_##sfx) \
  CMLC_EW_BK(cmlc_ew_max_##sfx, T, T, CMLC_EW_ID, CMLC_EW_ID, T, CMLC_EW_IMAX)       \
  CMLC_EW_BK(cmlc_ew_min_##sfx, T, T, CMLC_EW_ID, CMLC_EW_ID, T, CMLC_EW_IMIN)       \
  CMLC_EW_BK(cmlc_ew_and_##sfx, T, T, CMLC_EW_ID, CMLC_EW_ID, T, CMLC_EW_AND)        \
  CMLC_EW_BK(cmlc_ew_or_##sfx, T, T, CMLC_EW_ID, CMLC_EW_ID, T, CMLC_EW_OR)          \
  CMLC_EW_BK(cmlc_ew_xor_##sfx, T, T, CMLC_EW_ID, CMLC_EW_ID, T, CMLC_EW_XOR)        \
  CMLC_EW_BK(cmlc_ew_shl_##sfx, T, T, CMLC_EW_ID, CMLC_EW_ID, T, cmlc_ew_ishl_##sfx) \
  CMLC_EW_BK(cmlc_ew_sra_##sfx, T, T, CMLC_EW_ID, CMLC_EW_ID, T, cmlc_ew_isra_##sfx) \
  CMLC_EW_BK(cmlc_ew_srl_##sfx, T, T, CMLC_EW_ID, CMLC_EW_ID, T, cmlc_ew_isrl_##sfx) \
  CMLC_EW_COMPARES(sfx, T, T, CMLC_EW_ID)

CMLC_EW_INT_BINARY(i8, int8_t)
CMLC_EW_INT_BINARY(i16, int16_t)
CMLC_EW_INT_BINARY(i32, int32_t)
CMLC_EW_INT_BINARY(i64, int64_t)
CMLC_EW_INT_BINARY(u8, uint8_t)
CMLC_EW_INT_BINARY(u16, uint16_t)
CMLC_EW_INT_BINARY(u32, uint32_t)
CMLC_EW_INT_BINARY(u64, uint64_t)

//===--- bool ---===//

#define CMLC_EW_BOOL_LOAD(x) ((unsigned)((x) != 0))
CMLC_EW_BK(cmlc_ew_land_bool, uint8_t, uint8_t, CMLC_EW_BOOL_LOAD, CMLC_EW_BOOL, unsigned,
           CMLC_EW_LAND)
CMLC_EW_BK(cmlc_ew_lor_bool, uint8_t, uint8_t, CMLC_EW_BOOL_LOAD, CMLC_EW_BOOL, unsigned,
           CMLC_EW_LOR)
CMLC_EW_BK(cmlc_ew_lxor_bool, uint8_t, uint8_t, CMLC_EW_BOOL_LOAD, CMLC_EW_BOOL, unsigned,
           CMLC_EW_LXOR)
CMLC_EW_COMPARES(bool, uint8_t, unsigned, CMLC_EW_BOOL_LOAD)

//===--- Clamp(min, x, max) = min(max(x, min), max) ---===//

#define CMLC_EW_CLAMP_K(sfx, T, CT, LOAD, STORE, MAXF, MINF)                           \
  static void cmlc_ew_clamp_##sfx(void* out, const void* const* in, const int64_t* st, \
                                  int64_t n) {                                         \
    const T* lo = (const T*)in[0];                                                     \
    const T* x = (const T*)in[1];                                                      \
    const T* hi = (const T*)in[2];                                                     \
    T* o = (T*)out;                                                                    \
    if (st[0] == 0 && st[1] == 1 && st[2] == 0) { /* scalar bounds: vectorizable */    \
      const CT l = LOAD(lo[0]), h = LOAD(hi[0]);                                       \
      for (int64_t i = 0; i < n; ++i) {                                                \
        CT v = LOAD(x[i]);                                                             \
        CT m = MAXF(v, l);                                                             \
        o[i] = STORE(MINF(m, h));                                                      \
      }                                                                                \
      return;                                                                          \
    }                                                                                  \
    for (int64_t i = 0; i < n; ++i) {                                                  \
      CT l = LOAD(lo[i * st[0]]), v = LOAD(x[i * st[1]]), h = LOAD(hi[i * st[2]]);     \
      CT m = MAXF(v, l);                                                               \
      o[i] = STORE(MINF(m, h));                                                        \
    }                                                                                  \
  }
CMLC_EW_CLAMP_K(f16, uint16_t, float, cml__f16_to_f32, cml__f32_to_f16, CMLC_EW_FMAX, CMLC_EW_FMIN)
CMLC_EW_CLAMP_K(bf16, uint16_t, float, cml__bf16_to_f32, cml__f32_to_bf16, CMLC_EW_FMAX,
                CMLC_EW_FMIN)
CMLC_EW_CLAMP_K(f32, float, float, CMLC_EW_ID, CMLC_EW_ID, CMLC_EW_FMAX, CMLC_EW_FMIN)
CMLC_EW_CLAMP_K(f64, double, double, CMLC_EW_ID, CMLC_EW_ID, CMLC_EW_FMAX, CMLC_EW_FMIN)
#define CMLC_EW_INT_CLAMP(sfx, T) \
  CMLC_EW_CLAMP_K(sfx, T, T, CMLC_EW_ID, CMLC_EW_ID, CMLC_EW_IMAX, CMLC_EW_IMIN)
CMLC_EW_INT_CLAMP(i8, int8_t)
CMLC_EW_INT_CLAMP(i16, int16_t)
CMLC_EW_INT_CLAMP(i32, int32_t)
CMLC_EW_INT_CLAMP(i64, int64_t)
CMLC_EW_INT_CLAMP(u8, uint8_t)
CMLC_EW_INT_CLAMP(u16, uint16_t)
CMLC_EW_INT_CLAMP(u32, uint32_t)
CMLC_EW_INT_CLAMP(u64, uint64_t)

//===--- Where(cond, on_true, on_false), by element size ---===//

typedef struct cmlc_ew_bytes16_t {
  uint64_t lo, hi;
} cmlc_ew_bytes16_t;

// |PICK| chooses element i of contiguous operands. Elements of 1..8 bytes read both sides and
// blend through a mask, which the compiler vectorizes (a branch on random conditions ran 3.4 ns
// per 1-byte element); 16-byte elements select.
#define CMLC_EW_WHERE_K(sfx, T, PICK)                                                    \
  static void cmlc_ew_where_##sfx(void* out, const void* const* in, const int64_t* st,   \
                                  int64_t n) {                                           \
    const uint8_t* c = (const uint8_t*)in[0];                                            \
    const T* t = (const T*)in[1];                                                        \
    const T* f = (const T*)in[2];                                                        \
    T* o = (T*)out;                                                                      \
    if (st[0] && st[1] && st[2]) {                                                       \
      for (int64_t i = 0; i < n; ++i) o[i] = PICK(T, c[i], t[i], f[i]);                  \
    } else {                                                                             \
      for (int64_t i = 0; i < n; ++i) o[i] = c[i * st[0]] ? t[i * st[1]] : f[i * st[2]]; \
    }                                                                                    \
  }
#define CMLC_EW_WHERE_BLEND(T, c, t, f) \
  ((T)(((t) & (T)((T)0 - (T)((c) != 0))) | ((f) & (T) ~(T)((T)0 - (T)((c) != 0)))))
#define CMLC_EW_WHERE_SELECT(T, c, t, f) ((c) ? (t) : (f))
CMLC_EW_WHERE_K(1, uint8_t, CMLC_EW_WHERE_BLEND)
CMLC_EW_WHERE_K(2, uint16_t, CMLC_EW_WHERE_BLEND)
CMLC_EW_WHERE_K(4, uint32_t, CMLC_EW_WHERE_BLEND)
CMLC_EW_WHERE_K(8, uint64_t, CMLC_EW_WHERE_BLEND)
CMLC_EW_WHERE_K(16, cmlc_ew_bytes16_t, CMLC_EW_WHERE_SELECT)

cmlc_ew_fn cmlc_ew_where_fn(size_t element_size) {
  switch (element_size) {
    case 1:
      return cmlc_ew_where_1;
    case 2:
      return cmlc_ew_where_2;
    case 4:
      return cmlc_ew_where_4;
    case 8:
      return cmlc_ew_where_8;
    case 16:
      return cmlc_ew_where_16;
    default:
      return NULL;
  }
}

//===--- table ---===//

#define CMLC_EW_PICK(name, DT, sfx) \
  if (dtype == CML_DTYPE_##DT) return cmlc_ew_##name##_##sfx;
#define CMLC_EW_PICK_FLOAT(name) \
  CMLC_EW_PICK(name, F16, f16)   \
  CMLC_EW_PICK(name, BF16, bf16) CMLC_EW_PICK(name, F32, f32) CMLC_EW_PICK(name, F64, f64)
// clang-format off
#define CMLC_EW_PICK_INT(name)      \
  CMLC_EW_PICK(name, I8, i8)        \
  CMLC_EW_PICK(name, I16, i16)      \
  CMLC_EW_PICK(name, I32, i32)      \
  CMLC_EW_PICK(name, I64, i64)      \
  CMLC_EW_PICK(name, U8, u8)        \
  CMLC_EW_PICK(name, U16, u16)      \
  CMLC_EW_PICK(name, U32, u32)      \
  CMLC_EW_PICK(name, U64, u64)
// clang-format on
#define CMLC_EW_PICK_COMPLEX(name) CMLC_EW_PICK(name, C64, c64) CMLC_EW_PICK(name, C128, c128)
#define CMLC_EW_PICK_REAL(name) CMLC_EW_PICK_FLOAT(name) CMLC_EW_PICK_INT(name)
#define CMLC_EW_PICK_NUMBER(name) CMLC_EW_PICK_REAL(name) CMLC_EW_PICK_COMPLEX(name)

cmlc_ew_fn cmlc_ew_binary_fn(cml_op_t op, cml_dtype_t dtype) {
  switch (op) {
    case CML_OP_ADD:
      CMLC_EW_PICK_NUMBER(add) break;
    case CML_OP_SUB:
      CMLC_EW_PICK_NUMBER(sub) break;
    case CML_OP_MUL:
      CMLC_EW_PICK_NUMBER(mul) break;
    case CML_OP_DIV:
      CMLC_EW_PICK_NUMBER(div) break;
    case CML_OP_POW:
      CMLC_EW_PICK_NUMBER(pow) break;
    case CML_OP_REM:
      CMLC_EW_PICK_REAL(rem) break;
    case CML_OP_MAX:
      CMLC_EW_PICK_REAL(max) break;
    case CML_OP_MIN:
      CMLC_EW_PICK_REAL(min) break;
    case CML_OP_ATAN2:
      CMLC_EW_PICK_FLOAT(atan2) break;
    case CML_OP_BITWISE_AND:
      CMLC_EW_PICK_INT(and) break;
    case CML_OP_BITWISE_OR:
      CMLC_EW_PICK_INT(or) break;
    case CML_OP_BITWISE_XOR:
      CMLC_EW_PICK_INT(xor) break;
    case CML_OP_SHIFT_LEFT:
      CMLC_EW_PICK_INT(shl) break;
    case CML_OP_SHIFT_RIGHT_ARITHMETIC:
      CMLC_EW_PICK_INT(sra) break;
    case CML_OP_SHIFT_RIGHT_LOGICAL:
      CMLC_EW_PICK_INT(srl) break;
    case CML_OP_LOGICAL_AND:
      CMLC_EW_PICK(land, BOOL, bool) break;
    case CML_OP_LOGICAL_OR:
      CMLC_EW_PICK(lor, BOOL, bool) break;
    case CML_OP_LOGICAL_XOR:
      CMLC_EW_PICK(lxor, BOOL, bool) break;
    case CML_OP_COMPLEX:
      CMLC_EW_PICK(complex, F32, f32) CMLC_EW_PICK(complex, F64, f64) break;
    case CML_OP_EQUAL:
      CMLC_EW_PICK_NUMBER(eq) CMLC_EW_PICK(eq, BOOL, bool) break;
    case CML_OP_NOT_EQUAL:
      CMLC_EW_PICK_NUMBER(ne) CMLC_EW_PICK(ne, BOOL, bool) break;
    case CML_OP_LESS_THAN:
      CMLC_EW_PICK_REAL(lt) CMLC_EW_PICK(lt, BOOL, bool) break;
    case CML_OP_LESS_OR_EQUAL:
      CMLC_EW_PICK_REAL(le) CMLC_EW_PICK(le, BOOL, bool) break;
    case CML_OP_GREATER_THAN:
      CMLC_EW_PICK_REAL(gt) CMLC_EW_PICK(gt, BOOL, bool) break;
    case CML_OP_GREATER_OR_EQUAL:
      CMLC_EW_PICK_REAL(ge) CMLC_EW_PICK(ge, BOOL, bool) break;
    case CML_OP_EQUAL_TOTAL_ORDER:
      CMLC_EW_PICK_FLOAT(eq_to) break;
    case CML_OP_NOT_EQUAL_TOTAL_ORDER:
      CMLC_EW_PICK_FLOAT(ne_to) break;
    case CML_OP_LESS_THAN_TOTAL_ORDER:
      CMLC_EW_PICK_FLOAT(lt_to) break;
    case CML_OP_LESS_OR_EQUAL_TOTAL_ORDER:
      CMLC_EW_PICK_FLOAT(le_to) break;
    case CML_OP_GREATER_THAN_TOTAL_ORDER:
      CMLC_EW_PICK_FLOAT(gt_to) break;
    case CML_OP_GREATER_OR_EQUAL_TOTAL_ORDER:
      CMLC_EW_PICK_FLOAT(ge_to) break;
    case CML_OP_CLAMP:
      CMLC_EW_PICK_REAL(clamp) break;
    default:
      break;
  }
  return NULL;
}
