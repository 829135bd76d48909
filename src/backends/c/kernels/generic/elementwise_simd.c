// SPDX-License-Identifier: Apache-2.0
// kernels/generic/elementwise_simd.c: picks the SIMD elementwise / reduction kernels for the
// backend's options (ISA, reference mode); the scalar kernels stay the reference and run when
// these return NULL.
#include <math.h>
#include <string.h>

#include "backends/c/kernels/generic/elementwise_internal.h"

#if defined(CMLC_HAVE_X86_64)
#include <immintrin.h>
#endif

// The ISA the SIMD kernels may use: scalar for reference=true. Both SIMD ISAs include F16C
// (cpu.c selects them only when the CPU has it).
static cmlc_isa_t cmlc_ew_simd_isa(const cmlc_options_t* options) {
  if (!options || options->reference) return CMLC_ISA_SCALAR;
#if defined(CMLC_HAVE_X86_64)
  return options->isa;
#else
  return CMLC_ISA_SCALAR;
#endif
}

#if defined(CMLC_HAVE_X86_64)
#define CMLC_EW_SIMD_PICK(call)        \
  switch (cmlc_ew_simd_isa(options)) { \
    case CMLC_ISA_AVX512:              \
      return cmlc_ew_avx512_##call;    \
    case CMLC_ISA_AVX2:                \
      return cmlc_ew_avx2_##call;      \
    default:                           \
      return NULL;                     \
  }
#else
#define CMLC_EW_SIMD_PICK(call)    \
  (void)cmlc_ew_simd_isa(options); \
  return NULL;
#endif

#if defined(CMLC_HAVE_X86_64)
// f64 Floor, Ceil, Round (to nearest even), Sqrt and Rsqrt as the rounding and square-root
// instructions, 4 lanes: the scalar kernels' bits (libm's floor, ceil and rint round the same
// way and a NaN comes back quieted as the scalar kernels quiet it; sqrt is correctly rounded
// either way and gives the same default NaN below zero; Rsqrt divides 1 by it as they do),
// where those call libm once per element (an f64 LSTM's gates: 2-2.5x xla:cpu's time).
#define CMLC_EW_F64_VEC(name, EXPR)                                                  \
  __attribute__((target("avx2"))) static void name(void* out, const void* const* in, \
                                                   const int64_t* st, int64_t n) {   \
    const double* x = (const double*)in[0];                                          \
    double* y = (double*)out;                                                        \
    int64_t i = 0;                                                                   \
    if (st[0] == 0) {                                                                \
      const __m256d v = _mm256_set1_pd(x[0]);                                        \
      const double r = _mm256_cvtsd_f64(EXPR);                                       \
      for (; i < n; ++i) y[i] = r;                                                   \
      return;                                                                        \
    }                                                                                \
    for (; i + 4 <= n; i += 4) {                                                     \
      const __m256d v = _mm256_loadu_pd(x + i);                                      \
      _mm256_storeu_pd(y + i, EXPR);                                                 \
    }                                                                                \
    if (i < n) {                                                                     \
      double t[4] = {0.0, 0.0, 0.0, 0.0};                                            \
      memcpy(t, x + i, (size_t)(n - i) * sizeof(double));                            \
      const __m256d v = _mm256_loadu_pd(t);                                          \
      _mm256_storeu_pd(t, EXPR);                                                     \
      memcpy(y + i, t, (size_t)(n - i) * sizeof(double));                            \
    }                                                                                \
  }
CMLC_EW_F64_VEC(cmlc_ew_floor_f64_vec,
                _mm256_round_pd(v, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC))
CMLC_EW_F64_VEC(cmlc_ew_ceil_f64_vec, _mm256_round_pd(v, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC))
CMLC_EW_F64_VEC(cmlc_ew_round_f64_vec, _mm256_round_pd(v, _MM_FROUND_CUR_DIRECTION))
CMLC_EW_F64_VEC(cmlc_ew_sqrt_f64_vec, _mm256_sqrt_pd(v))
CMLC_EW_F64_VEC(cmlc_ew_rsqrt_f64_vec, _mm256_div_pd(_mm256_set1_pd(1.0), _mm256_sqrt_pd(v)))
#undef CMLC_EW_F64_VEC

static cmlc_ew_fn cmlc_ew_f64_vec_fn(cml_op_t op) {
  switch (op) {
    case CML_OP_FLOOR:
      return cmlc_ew_floor_f64_vec;
    case CML_OP_CEIL:
      return cmlc_ew_ceil_f64_vec;
    case CML_OP_ROUND:
      return cmlc_ew_round_f64_vec;
    case CML_OP_SQRT:
      return cmlc_ew_sqrt_f64_vec;
    case CML_OP_RSQRT:
      return cmlc_ew_rsqrt_f64_vec;
    default:
      return NULL;
  }
}
#endif

#if defined(CMLC_HAVE_X86_64)
// BitCount and CountLeadingZeros of integers with the popcnt and lzcnt instructions (every
// AVX2 machine has them), where the scalar kernels call libgcc's bit loops (__popcountdi2: a
// murmur-style hash's BitCount 6-9x xla:cpu's time). The same values: lzcnt of 0 is the width.
#define CMLC_EW_BITS_KERNELS(sfx, T, U, BITS)                                       \
  __attribute__((target("avx2,popcnt,lzcnt"))) static void cmlc_ew_popcnt_##sfx(    \
      void* out, const void* const* in, const int64_t* st, int64_t n) {             \
    const T* x = (const T*)in[0];                                                   \
    T* o = (T*)out;                                                                 \
    const int64_t s = st[0] ? 1 : 0;                                                \
    for (int64_t i = 0; i < n; ++i) {                                               \
      o[i] = (T)(BITS == 64 ? __builtin_popcountll((unsigned long long)(U)x[i * s]) \
                            : __builtin_popcount((unsigned)(U)x[i * s]));           \
    }                                                                               \
  }                                                                                 \
  __attribute__((target("avx2,popcnt,lzcnt"))) static void cmlc_ew_lzcnt_##sfx(     \
      void* out, const void* const* in, const int64_t* st, int64_t n) {             \
    const T* x = (const T*)in[0];                                                   \
    T* o = (T*)out;                                                                 \
    const int64_t s = st[0] ? 1 : 0;                                                \
    for (int64_t i = 0; i < n; ++i) {                                               \
      const U v = (U)x[i * s];                                                      \
      o[i] = (T)(BITS == 64 ? (int)_lzcnt_u64((unsigned long long)v)                \
                            : (int)_lzcnt_u32((unsigned)v) - (32 - BITS));          \
    }                                                                               \
  }
CMLC_EW_BITS_KERNELS(i8, int8_t, uint8_t, 8)
CMLC_EW_BITS_KERNELS(i16, int16_t, uint16_t, 16)
CMLC_EW_BITS_KERNELS(i32, int32_t, uint32_t, 32)
CMLC_EW_BITS_KERNELS(i64, int64_t, uint64_t, 64)
#undef CMLC_EW_BITS_KERNELS

// The kernel for |op| (BitCount or CountLeadingZeros) of integer |dtype|, or NULL. Signed and
// unsigned twins share one: both count the same bits of the same width.
static cmlc_ew_fn cmlc_ew_bits_fn(cml_op_t op, cml_dtype_t dtype) {
  if (op != CML_OP_BIT_COUNT && op != CML_OP_CLZ) return NULL;
  const bool pop = op == CML_OP_BIT_COUNT;
  switch (dtype) {
    case CML_DTYPE_I8:
    case CML_DTYPE_U8:
      return pop ? cmlc_ew_popcnt_i8 : cmlc_ew_lzcnt_i8;
    case CML_DTYPE_I16:
    case CML_DTYPE_U16:
      return pop ? cmlc_ew_popcnt_i16 : cmlc_ew_lzcnt_i16;
    case CML_DTYPE_I32:
    case CML_DTYPE_U32:
      return pop ? cmlc_ew_popcnt_i32 : cmlc_ew_lzcnt_i32;
    case CML_DTYPE_I64:
    case CML_DTYPE_U64:
      return pop ? cmlc_ew_popcnt_i64 : cmlc_ew_lzcnt_i64;
    default:
      return NULL;
  }
}
#endif

cmlc_ew_fn cmlc_ew_simd_unary_fn(const cmlc_options_t* options, cml_op_t op, cml_dtype_t dtype) {
  (void)op;
  (void)dtype;
#if defined(CMLC_HAVE_X86_64)
  if (cmlc_ew_simd_isa(options) != CMLC_ISA_SCALAR) {
    cmlc_ew_fn fn = cmlc_ew_bits_fn(op, dtype);
    if (fn) return fn;
  }
  if (dtype == CML_DTYPE_F64) {
    cmlc_ew_fn fn = cmlc_ew_mvec_unary_fn(cmlc_ew_simd_isa(options), op, dtype);
    if (fn) return fn;
    if (cmlc_ew_simd_isa(options) != CMLC_ISA_SCALAR) fn = cmlc_ew_f64_vec_fn(op);
    if (fn) return fn;
  }
#endif
  CMLC_EW_SIMD_PICK(unary_fn(op, dtype))
}

#if defined(CMLC_HAVE_X86_64)
// Complex products: cmlc_ew_cmul_f / _d's arithmetic (the first product fused) with the FMA
// instructions inlined instead of libm's fma / fmaf calls, so the same bits. An FFT
// convolution's [64, 513] c64 product, 1 thread on Zen 5: about 3x faster.
#define CMLC_EW_CMUL_FMA(name, T, FMA)                                                   \
  __attribute__((target("avx2,fma"))) static void name(void* out, const void* const* in, \
                                                       const int64_t* st, int64_t n) {   \
    const T* x = (const T*)in[0];                                                        \
    const T* y = (const T*)in[1];                                                        \
    T* o = (T*)out;                                                                      \
    const int64_t sx = st[0] ? 2 : 0, sy = st[1] ? 2 : 0;                                \
    for (int64_t i = 0; i < n; ++i) {                                                    \
      const T a = x[i * sx], b = x[i * sx + 1], c = y[i * sy], d = y[i * sy + 1];        \
      o[2 * i] = FMA(a, c, -(b * d));                                                    \
      o[2 * i + 1] = FMA(b, c, a * d);                                                   \
    }                                                                                    \
  }
CMLC_EW_CMUL_FMA(cmlc_ew_fma_mul_c64, float, __builtin_fmaf)
CMLC_EW_CMUL_FMA(cmlc_ew_fma_mul_c128, double, __builtin_fma)
#undef CMLC_EW_CMUL_FMA
#endif

#if defined(CMLC_HAVE_X86_64)
// Pow by a constant exponent (a variance's pow(x - mean, 2), a focal loss's (1 - p)^2, the
// gradient of pow(x, 2), which multiplies by pow(x, 1), an inverse, a cube, a square root)
// without libm's pow, which costs 4-20 ns per element (26-54x xla:cpu's time for pow(x, 1)):
//   e = 0      1 for every x (pow(x, +-0) is 1, NaN included);
//   e = 1      x * 1 (x, a signaling NaN quieted as pow quiets it);
//   e = 2      x * x, the correctly rounded square;
//   e = -1     1 / x, the correctly rounded inverse;
//   e = 0.5    sqrt(x) + 0 (pow(-0, 0.5) is +0, sqrt(-0) is -0), and +inf at x = -inf;
// f32 only, computed in double and rounded once to f32 (double's range holds every
// intermediate, and its relative error of a few 2^-53 almost never moves the f32 rounding, as
// the scalar kernel's pow in double does not either):
//   e = -0.5   1 / sqrt(x + 0), and +0 at x = -inf;
//   e = n      an integer with 3 <= |n| <= 8, or -2: x^|n| by squarings, inverted for n < 0;
// f64 only:
//   e = 3      (h + l) * x rounded once, where h + l = x * x exactly (h = x * x, l = fma(x, x,
//              -h)): fma(h, x, l * x); x * x * x where that is not finite (|x| past 1e154).
// Other exponents, or an exponent that is not one constant, call powf / pow per element as the
// scalar kernels do (the same bits).
typedef enum cmlc_ew_pow_kind_t {
  CMLC_EW_POW_ANY = 0,
  CMLC_EW_POW_ZERO,
  CMLC_EW_POW_ONE,
  CMLC_EW_POW_SQUARE,
  CMLC_EW_POW_RECIP,
  CMLC_EW_POW_SQRT,
  CMLC_EW_POW_RSQRT,  // f32
  CMLC_EW_POW_INT,    // f32: n in [-8, -2] or [3, 8]
  CMLC_EW_POW_CUBE,   // f64
} cmlc_ew_pow_kind_t;

static cmlc_ew_pow_kind_t cmlc_ew_pow_kind(double e, bool f32, int* n) {
  *n = 0;
  if (e == 0.0) return CMLC_EW_POW_ZERO;
  if (e == 1.0) return CMLC_EW_POW_ONE;
  if (e == 2.0) return CMLC_EW_POW_SQUARE;
  if (e == -1.0) return CMLC_EW_POW_RECIP;
  if (e == 0.5) return CMLC_EW_POW_SQRT;
  if (f32 && e == -0.5) return CMLC_EW_POW_RSQRT;
  if (!f32) return e == 3.0 ? CMLC_EW_POW_CUBE : CMLC_EW_POW_ANY;
  if (e >= -8.0 && e <= 8.0 && e == (double)(int)e) {
    *n = (int)e;
    return CMLC_EW_POW_INT;  // 3..8, -2..-8: the cases above took the rest
  }
  return CMLC_EW_POW_ANY;
}

// x^|n| (1 <= |n| <= 8) of 4 doubles by squarings; the factors of the bits not set are 1.
__attribute__((target("avx2"))) static inline __m256d cmlc_ew_powi_pd(__m256d x, int n) {
  const int m = n < 0 ? -n : n;
  const __m256d one = _mm256_set1_pd(1.0);
  const __m256d x2 = _mm256_mul_pd(x, x), x4 = _mm256_mul_pd(x2, x2);
  __m256d p = (m & 1) ? x : one;
  if (m & 2) p = _mm256_mul_pd(p, x2);
  if (m & 4) p = _mm256_mul_pd(p, x4);
  if (m & 8) p = _mm256_mul_pd(p, _mm256_mul_pd(x4, x4));
  return n < 0 ? _mm256_div_pd(one, p) : p;
}

// Pow of 8 floats by the constant exponent of |kind| (not CMLC_EW_POW_ANY).
__attribute__((target("avx2"))) static inline __m256 cmlc_ew_pow8_f32(__m256 x,
                                                                      cmlc_ew_pow_kind_t kind,
                                                                      int n) {
  const __m256 minus_inf = _mm256_set1_ps(-INFINITY);
  switch (kind) {
    case CMLC_EW_POW_ZERO:
      return _mm256_set1_ps(1.0f);
    case CMLC_EW_POW_ONE:
      return _mm256_mul_ps(x, _mm256_set1_ps(1.0f));
    case CMLC_EW_POW_SQUARE:
      return _mm256_mul_ps(x, x);
    case CMLC_EW_POW_RECIP:
      return _mm256_div_ps(_mm256_set1_ps(1.0f), x);
    case CMLC_EW_POW_SQRT: {
      const __m256 r = _mm256_add_ps(_mm256_sqrt_ps(x), _mm256_setzero_ps());
      return _mm256_blendv_ps(r, _mm256_set1_ps(INFINITY), _mm256_cmp_ps(x, minus_inf, _CMP_EQ_OQ));
    }
    default: {
      // In double, 4 lanes at a time, rounded once to f32.
      __m256d h[2] = {_mm256_cvtps_pd(_mm256_castps256_ps128(x)),
                      _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1))};
      for (int k = 0; k < 2; ++k) {
        if (kind == CMLC_EW_POW_RSQRT) {
          h[k] = _mm256_div_pd(_mm256_set1_pd(1.0),
                               _mm256_sqrt_pd(_mm256_add_pd(h[k], _mm256_setzero_pd())));
        } else {
          h[k] = cmlc_ew_powi_pd(h[k], n);
        }
      }
      const __m256 r = _mm256_set_m128(_mm256_cvtpd_ps(h[1]), _mm256_cvtpd_ps(h[0]));
      if (kind != CMLC_EW_POW_RSQRT) return r;
      return _mm256_blendv_ps(r, _mm256_setzero_ps(), _mm256_cmp_ps(x, minus_inf, _CMP_EQ_OQ));
    }
  }
}

// Pow of 4 doubles by the constant exponent of |kind| (not CMLC_EW_POW_ANY).
__attribute__((target("avx2,fma"))) static inline __m256d cmlc_ew_pow4_f64(
    __m256d x, cmlc_ew_pow_kind_t kind) {
  const __m256d minus_inf = _mm256_set1_pd(-INFINITY);
  switch (kind) {
    case CMLC_EW_POW_ZERO:
      return _mm256_set1_pd(1.0);
    case CMLC_EW_POW_ONE:
      return _mm256_mul_pd(x, _mm256_set1_pd(1.0));
    case CMLC_EW_POW_SQUARE:
      return _mm256_mul_pd(x, x);
    case CMLC_EW_POW_RECIP:
      return _mm256_div_pd(_mm256_set1_pd(1.0), x);
    case CMLC_EW_POW_SQRT: {
      const __m256d r = _mm256_add_pd(_mm256_sqrt_pd(x), _mm256_setzero_pd());
      return _mm256_blendv_pd(r, _mm256_set1_pd(INFINITY), _mm256_cmp_pd(x, minus_inf, _CMP_EQ_OQ));
    }
    default: {  // CMLC_EW_POW_CUBE
      const __m256d h = _mm256_mul_pd(x, x);
      const __m256d l = _mm256_fmsub_pd(x, x, h);
      const __m256d r = _mm256_fmadd_pd(h, x, _mm256_mul_pd(l, x));
      const __m256d plain = _mm256_mul_pd(h, x);
      // Not finite (|r| = inf or NaN) where x * x overflowed or x is not finite.
      const __m256d abs_r = _mm256_andnot_pd(_mm256_set1_pd(-0.0), r);
      const __m256d finite = _mm256_cmp_pd(abs_r, _mm256_set1_pd(INFINITY), _CMP_LT_OQ);
      return _mm256_blendv_pd(plain, r, finite);
    }
  }
}

__attribute__((target("avx2"))) static void cmlc_ew_pow_f32_simd(void* out, const void* const* in,
                                                                 const int64_t* st, int64_t n) {
  const float* a = (const float*)in[0];
  const float* b = (const float*)in[1];
  float* o = (float*)out;
  int e_int = 0;
  const cmlc_ew_pow_kind_t kind =
      st[1] == 0 ? cmlc_ew_pow_kind(b[0], true, &e_int) : CMLC_EW_POW_ANY;
  if (kind != CMLC_EW_POW_ANY) {
    int64_t i = 0;
    if (st[0] == 0) {
      const float r = _mm256_cvtss_f32(cmlc_ew_pow8_f32(_mm256_set1_ps(a[0]), kind, e_int));
      for (; i < n; ++i) o[i] = r;
      return;
    }
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(o + i, cmlc_ew_pow8_f32(_mm256_loadu_ps(a + i), kind, e_int));
    if (i < n) {
      float t[8] = {0};
      memcpy(t, a + i, (size_t)(n - i) * sizeof(float));
      _mm256_storeu_ps(t, cmlc_ew_pow8_f32(_mm256_loadu_ps(t), kind, e_int));
      memcpy(o + i, t, (size_t)(n - i) * sizeof(float));
    }
    return;
  }
  const int64_t sa = st[0] ? 1 : 0, sb = st[1] ? 1 : 0;
  for (int64_t i = 0; i < n; ++i) o[i] = powf(a[i * sa], b[i * sb]);
}

__attribute__((target("avx2,fma"))) static void cmlc_ew_pow_f64_simd(void* out,
                                                                     const void* const* in,
                                                                     const int64_t* st, int64_t n) {
  const double* a = (const double*)in[0];
  const double* b = (const double*)in[1];
  double* o = (double*)out;
  int e_int = 0;
  const cmlc_ew_pow_kind_t kind =
      st[1] == 0 ? cmlc_ew_pow_kind(b[0], false, &e_int) : CMLC_EW_POW_ANY;
  if (kind != CMLC_EW_POW_ANY) {
    int64_t i = 0;
    if (st[0] == 0) {
      const double r = _mm256_cvtsd_f64(cmlc_ew_pow4_f64(_mm256_set1_pd(a[0]), kind));
      for (; i < n; ++i) o[i] = r;
      return;
    }
    for (; i + 4 <= n; i += 4)
      _mm256_storeu_pd(o + i, cmlc_ew_pow4_f64(_mm256_loadu_pd(a + i), kind));
    if (i < n) {
      double t[4] = {0};
      memcpy(t, a + i, (size_t)(n - i) * sizeof(double));
      _mm256_storeu_pd(t, cmlc_ew_pow4_f64(_mm256_loadu_pd(t), kind));
      memcpy(o + i, t, (size_t)(n - i) * sizeof(double));
    }
    return;
  }
  const int64_t sa = st[0] ? 1 : 0, sb = st[1] ? 1 : 0;
  for (int64_t i = 0; i < n; ++i) o[i] = pow(a[i * sa], b[i * sb]);
}
#endif

cmlc_ew_fn cmlc_ew_simd_binary_fn(const cmlc_options_t* options, cml_op_t op, cml_dtype_t dtype) {
  (void)op;
  (void)dtype;
#if defined(CMLC_HAVE_X86_64)
  if (op == CML_OP_POW && dtype == CML_DTYPE_F32 && cmlc_ew_simd_isa(options) != CMLC_ISA_SCALAR) {
    return cmlc_ew_pow_f32_simd;
  }
  if (op == CML_OP_POW && dtype == CML_DTYPE_F64 && cmlc_ew_simd_isa(options) != CMLC_ISA_SCALAR) {
    return cmlc_ew_pow_f64_simd;
  }
  if (cml_dtype_is_int(dtype) && cmlc_ew_simd_isa(options) != CMLC_ISA_SCALAR) {
    cmlc_ew_fn fn = cmlc_ew_int_simd_fn(op, dtype);
    if (fn) return fn;
  }
  if (dtype == CML_DTYPE_F64 && cmlc_ew_simd_isa(options) != CMLC_ISA_SCALAR) {
    cmlc_ew_fn fn = cmlc_ew_f64_simd_fn(op);
    if (fn) return fn;
  }
  if (op == CML_OP_MUL && cmlc_ew_simd_isa(options) != CMLC_ISA_SCALAR) {
    if (dtype == CML_DTYPE_C64) return cmlc_ew_fma_mul_c64;
    if (dtype == CML_DTYPE_C128) return cmlc_ew_fma_mul_c128;
  }
#endif
  CMLC_EW_SIMD_PICK(binary_fn(op, dtype))
}

cmlc_ew_fn cmlc_ew_simd_where_fn(const cmlc_options_t* options, size_t element_size) {
  (void)element_size;
  CMLC_EW_SIMD_PICK(where_fn(element_size))
}

#if defined(CMLC_HAVE_X86_64)
// Conversions that are one instruction (or none) per element, as plain loops the compiler
// vectorizes: f32 <-> f64 (C's conversions: what the generic widen / narrow path computes) and
// the same-width signed <-> unsigned integers (the bits unchanged, as the generic path's
// wrapping gives). An f64 sum of squares of 16M f32 values converted first, 1 thread on Zen 5:
// the conversion was the generic block path's.
#define CMLC_EW_CVT_LOOP(name, TIN, TOUT)                                                  \
  __attribute__((target("avx2"))) static void name(void* out, const void* in, int64_t n) { \
    const TIN* x = (const TIN*)in;                                                         \
    TOUT* o = (TOUT*)out;                                                                  \
    for (int64_t i = 0; i < n; ++i) o[i] = (TOUT)x[i];                                     \
  }
CMLC_EW_CVT_LOOP(cmlc_ew_cvt_f32_f64, float, double)
CMLC_EW_CVT_LOOP(cmlc_ew_cvt_f64_f32, double, float)
CMLC_EW_CVT_LOOP(cmlc_ew_cvt_32, uint32_t, uint32_t)
CMLC_EW_CVT_LOOP(cmlc_ew_cvt_64, uint64_t, uint64_t)

// Integers to floats: C's conversion of the integer's value, rounded once, as the generic path's
// conversion of the value widened to 64 bits. (u8 images to f32, i32 positions, i8 codes.)
#define CMLC_EW_I2F(X) \
  X(I8, int8_t)        \
  X(U8, uint8_t)       \
  X(I16, int16_t)      \
  X(U16, uint16_t)     \
  X(I32, int32_t)      \
  X(U32, uint32_t)     \
  X(I64, int64_t)      \
  X(U64, uint64_t)
#define CMLC_EW_I2F_DEFINE(FROM, TIN)                    \
  CMLC_EW_CVT_LOOP(cmlc_ew_cvt_##FROM##_F32, TIN, float) \
  CMLC_EW_CVT_LOOP(cmlc_ew_cvt_##FROM##_F64, TIN, double)
CMLC_EW_I2F(CMLC_EW_I2F_DEFINE)
#undef CMLC_EW_I2F_DEFINE
#undef CMLC_EW_CVT_LOOP

// Floats to integers, as the generic path's cmlc_f64_to_signed / cmlc_f64_to_unsigned: NaN to
// 0, saturated at the type's range [LO, HI] (LO 0 for the unsigned types: at or below 0 gives
// 0, as there), truncated inside it (where the value fits CAST, which vectorizes).
#define CMLC_EW_F2I(X)                           \
  X(I8, int8_t, int32_t, INT8_MIN, INT8_MAX)     \
  X(I16, int16_t, int32_t, INT16_MIN, INT16_MAX) \
  X(I32, int32_t, int32_t, INT32_MIN, INT32_MAX) \
  X(I64, int64_t, int64_t, INT64_MIN, INT64_MAX) \
  X(U8, uint8_t, uint32_t, 0, UINT8_MAX)         \
  X(U16, uint16_t, uint32_t, 0, UINT16_MAX)      \
  X(U32, uint32_t, uint32_t, 0, UINT32_MAX)      \
  X(U64, uint64_t, uint64_t, 0, UINT64_MAX)
#define CMLC_EW_F2S_LOOP(name, TIN, TOUT, CAST, LO, HI)                                    \
  __attribute__((target("avx2"))) static void name(void* out, const void* in, int64_t n) { \
    const TIN* x = (const TIN*)in;                                                         \
    TOUT* o = (TOUT*)out;                                                                  \
    for (int64_t i = 0; i < n; ++i) {                                                      \
      const double d = (double)x[i];                                                       \
      o[i] = d != d              ? (TOUT)0                                                 \
             : d <= (double)(LO) ? (TOUT)(LO)                                              \
             : d >= (double)(HI) ? (TOUT)(HI)                                              \
                                 : (TOUT)(CAST)d;                                          \
    }                                                                                      \
  }
#define CMLC_EW_F2I_DEFINE(TO, TOUT, CAST, LO, HI)                  \
  CMLC_EW_F2S_LOOP(cmlc_ew_cvt_F32_##TO, float, TOUT, CAST, LO, HI) \
  CMLC_EW_F2S_LOOP(cmlc_ew_cvt_F64_##TO, double, TOUT, CAST, LO, HI)
CMLC_EW_F2I(CMLC_EW_F2I_DEFINE)
#undef CMLC_EW_F2I_DEFINE
#undef CMLC_EW_F2S_LOOP

// Integers and Bool to integers and Bool, as the generic path converts them: the value wrapped
// to the target's width (C's conversion; gcc's narrowing to a signed type is the same modulo
// 2^n), a Bool read as 0 / 1 and written as != 0. Plus Bool <-> f64, the pairs the ISA kernels
// lack. (A count of x > 0 down a column: the Bool -> Int32 conversion took the generic block
// path, 60% of the time.) The list has two names because the preprocessor does not expand a
// macro inside its own expansion, and the pairs need one list inside the other.
#define CMLC_EW_INTS_A(X, ...)  \
  X(__VA_ARGS__, BOOL, uint8_t) \
  X(__VA_ARGS__, I8, int8_t)    \
  X(__VA_ARGS__, U8, uint8_t)   \
  X(__VA_ARGS__, I16, int16_t)  \
  X(__VA_ARGS__, U16, uint16_t) \
  X(__VA_ARGS__, I32, int32_t)  \
  X(__VA_ARGS__, U32, uint32_t) \
  X(__VA_ARGS__, I64, int64_t)  \
  X(__VA_ARGS__, U64, uint64_t)
#define CMLC_EW_INTS_B(X, ...)  \
  X(__VA_ARGS__, BOOL, uint8_t) \
  X(__VA_ARGS__, I8, int8_t)    \
  X(__VA_ARGS__, U8, uint8_t)   \
  X(__VA_ARGS__, I16, int16_t)  \
  X(__VA_ARGS__, U16, uint16_t) \
  X(__VA_ARGS__, I32, int32_t)  \
  X(__VA_ARGS__, U32, uint32_t) \
  X(__VA_ARGS__, I64, int64_t)  \
  X(__VA_ARGS__, U64, uint64_t)
#define CMLC_EW_I2I_LOOP(FROM, TIN, TO, TOUT)                                                    \
  __attribute__((target("avx2"))) static void cmlc_ew_cvt_i_##FROM##_##TO(                       \
      void* out, const void* in, int64_t n) {                                                    \
    const TIN* x = (const TIN*)in;                                                               \
    TOUT* o = (TOUT*)out;                                                                        \
    const bool bool_io = CML_DTYPE_##FROM == CML_DTYPE_BOOL || CML_DTYPE_##TO == CML_DTYPE_BOOL; \
    for (int64_t i = 0; i < n; ++i) o[i] = bool_io ? (TOUT)(x[i] != 0) : (TOUT)x[i];             \
  }
#define CMLC_EW_I2I_ROW(_, FROM, TIN) CMLC_EW_INTS_B(CMLC_EW_I2I_LOOP, FROM, TIN)
CMLC_EW_INTS_A(CMLC_EW_I2I_ROW, _)
#undef CMLC_EW_I2I_ROW
#undef CMLC_EW_I2I_LOOP

__attribute__((target("avx2"))) static void cmlc_ew_cvt_bool_f64(void* out, const void* in,
                                                                 int64_t n) {
  const uint8_t* x = (const uint8_t*)in;
  double* o = (double*)out;
  for (int64_t i = 0; i < n; ++i) o[i] = x[i] != 0 ? 1.0 : 0.0;
}

__attribute__((target("avx2"))) static void cmlc_ew_cvt_f64_bool(void* out, const void* in,
                                                                 int64_t n) {
  const double* x = (const double*)in;
  uint8_t* o = (uint8_t*)out;
  for (int64_t i = 0; i < n; ++i) o[i] = x[i] != 0.0;
}

// The integer / Bool loop for |from| -> |to|, or NULL.
static cmlc_ew_convert_fn cmlc_ew_int_int_fn(cml_dtype_t from, cml_dtype_t to) {
  if (from == CML_DTYPE_BOOL && to == CML_DTYPE_F64) return cmlc_ew_cvt_bool_f64;
  if (from == CML_DTYPE_F64 && to == CML_DTYPE_BOOL) return cmlc_ew_cvt_f64_bool;
#define CMLC_EW_I2I_PICK(FROM, TIN, TO, TOUT) \
  if (from == CML_DTYPE_##FROM && to == CML_DTYPE_##TO) return cmlc_ew_cvt_i_##FROM##_##TO;
#define CMLC_EW_I2I_ROW(_, FROM, TIN) CMLC_EW_INTS_B(CMLC_EW_I2I_PICK, FROM, TIN)
  CMLC_EW_INTS_A(CMLC_EW_I2I_ROW, _)
#undef CMLC_EW_I2I_ROW
#undef CMLC_EW_I2I_PICK
  return NULL;
}
#undef CMLC_EW_INTS_A
#undef CMLC_EW_INTS_B

// The plain integer <-> float loop for |from| -> |to|, or NULL.
static cmlc_ew_convert_fn cmlc_ew_int_float_fn(cml_dtype_t from, cml_dtype_t to) {
#define CMLC_EW_I2F_PICK(FROM, TIN)                                                     \
  if (from == CML_DTYPE_##FROM && to == CML_DTYPE_F32) return cmlc_ew_cvt_##FROM##_F32; \
  if (from == CML_DTYPE_##FROM && to == CML_DTYPE_F64) return cmlc_ew_cvt_##FROM##_F64;
#define CMLC_EW_F2I_PICK(TO, ...)                                                 \
  if (from == CML_DTYPE_F32 && to == CML_DTYPE_##TO) return cmlc_ew_cvt_F32_##TO; \
  if (from == CML_DTYPE_F64 && to == CML_DTYPE_##TO) return cmlc_ew_cvt_F64_##TO;
  CMLC_EW_I2F(CMLC_EW_I2F_PICK)
  CMLC_EW_F2I(CMLC_EW_F2I_PICK)
#undef CMLC_EW_I2F_PICK
#undef CMLC_EW_F2I_PICK
  return NULL;
}
#undef CMLC_EW_I2F
#undef CMLC_EW_F2I
#endif

cmlc_ew_convert_fn cmlc_ew_simd_convert_fn(const cmlc_options_t* options, cml_dtype_t from,
                                           cml_dtype_t to) {
  (void)from;
  (void)to;
#if defined(CMLC_HAVE_X86_64)
  if (cmlc_ew_simd_isa(options) != CMLC_ISA_SCALAR) {
    if (from == CML_DTYPE_F32 && to == CML_DTYPE_F64) return cmlc_ew_cvt_f32_f64;
    if (from == CML_DTYPE_F64 && to == CML_DTYPE_F32) return cmlc_ew_cvt_f64_f32;
    if ((from == CML_DTYPE_I32 && to == CML_DTYPE_U32) ||
        (from == CML_DTYPE_U32 && to == CML_DTYPE_I32))
      return cmlc_ew_cvt_32;
    if ((from == CML_DTYPE_I64 && to == CML_DTYPE_U64) ||
        (from == CML_DTYPE_U64 && to == CML_DTYPE_I64))
      return cmlc_ew_cvt_64;
    cmlc_ew_convert_fn ints = cmlc_ew_int_int_fn(from, to);
    if (ints) return ints;
    // (The ISA's own f32 <-> i32 kernels first.)
    if (!((from == CML_DTYPE_F32 && to == CML_DTYPE_I32) ||
          (from == CML_DTYPE_I32 && to == CML_DTYPE_F32))) {
      cmlc_ew_convert_fn fn = cmlc_ew_int_float_fn(from, to);
      if (fn) return fn;
    }
  }
#endif
  CMLC_EW_SIMD_PICK(convert_fn(from, to))
}

cmlc_rd_f32_fn cmlc_rd_simd_f32_fn(const cmlc_options_t* options, cml_op_t op) {
  (void)op;
  CMLC_EW_SIMD_PICK(reduce_fn(op))
}

cmlc_rd_f32_step_fn cmlc_rd_simd_f32_step_fn(const cmlc_options_t* options, cml_op_t op) {
  (void)op;
  CMLC_EW_SIMD_PICK(reduce_step_fn(op))
}

cmlc_rd_half_fn cmlc_rd_simd_half_fn(const cmlc_options_t* options, cml_op_t op,
                                     cml_dtype_t dtype) {
  (void)op;
  (void)dtype;
  CMLC_EW_SIMD_PICK(reduce_half_fn(op, dtype))
}

cmlc_impl_fn cmlc_ew_simd_fused_fn(const cmlc_options_t* options, cmlc_fk_loop_t loop,
                                   cml_dtype_t dtype) {
  (void)loop;
  (void)dtype;
  CMLC_EW_SIMD_PICK(fused_fn(loop, dtype))
}

cmlc_ew_tile_fn cmlc_ew_simd_tile_fn(const cmlc_options_t* options) { CMLC_EW_SIMD_PICK(tile_run) }

int cmlc_ew_simd_tile_kernel(const cmlc_options_t* options, cmlc_ew_fn fn,
                             cmlc_ew_tile_class_t* cls) {
  *cls = CMLC_TL_CLASS_NONE;
  (void)fn;
#if defined(CMLC_HAVE_X86_64)
  if (cmlc_ew_simd_isa(options) != CMLC_ISA_SCALAR) {
    // The Int32 compares (the scalar kernels compiled for AVX2, cmlc_ew_int_simd_fn).
    for (int k = 0; k < CMLC_TL_COMPARE_COUNT; ++k) {
      if (fn == cmlc_ew_int_simd_fn(cmlc_ew_tile_compare_ops[k], CML_DTYPE_I32)) {
        *cls = CMLC_TL_CLASS_ICOMPARE;
        return k;
      }
    }
  }
  switch (cmlc_ew_simd_isa(options)) {
    case CMLC_ISA_AVX512:
      return cmlc_ew_avx512_tile_kernel(fn, cls);
    case CMLC_ISA_AVX2:
      return cmlc_ew_avx2_tile_kernel(fn, cls);
    default:
      break;
  }
#endif
  return -1;
}

bool cmlc_ew_simd_tile_convert(const cmlc_options_t* options, cmlc_ew_convert_fn fn,
                               cml_dtype_t from, cml_dtype_t to) {
  (void)fn;
  (void)from;
  (void)to;
  // (The ISA's own conversion kernels: the runner's loads and stores are their expressions.)
#if defined(CMLC_HAVE_X86_64)
  switch (cmlc_ew_simd_isa(options)) {
    case CMLC_ISA_AVX512:
      return fn != NULL && fn == cmlc_ew_avx512_convert_fn(from, to);
    case CMLC_ISA_AVX2:
      return fn != NULL && fn == cmlc_ew_avx2_convert_fn(from, to);
    default:
      break;
  }
#endif
  return false;
}
