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

cmlc_ew_fn cmlc_ew_simd_unary_fn(const cmlc_options_t* options, cml_op_t op, cml_dtype_t dtype) {
  (void)op;
  (void)dtype;
#if defined(CMLC_HAVE_X86_64)
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
// f32 Pow: x^2 by a constant exponent of 2 (a variance written as pow(x - mean, 2), a focal
// loss's (1 - p)^2) as x * x, the correctly rounded square, in a vectorized loop, where libm's
// powf (within 1 ulp) takes about 4 ns per element; other exponents call powf as the scalar
// kernel does (the same bits).
__attribute__((target("avx2"))) static void cmlc_ew_pow_f32_simd(void* out, const void* const* in,
                                                                 const int64_t* st, int64_t n) {
  const float* a = (const float*)in[0];
  const float* b = (const float*)in[1];
  float* o = (float*)out;
  if (st[1] == 0 && b[0] == 2.0f) {
    if (st[0]) {
      for (int64_t i = 0; i < n; ++i) o[i] = a[i] * a[i];
    } else {
      const float r = a[0] * a[0];
      for (int64_t i = 0; i < n; ++i) o[i] = r;
    }
    return;
  }
  const int64_t sa = st[0] ? 1 : 0, sb = st[1] ? 1 : 0;
  for (int64_t i = 0; i < n; ++i) o[i] = powf(a[i * sa], b[i * sb]);
}
#endif

cmlc_ew_fn cmlc_ew_simd_binary_fn(const cmlc_options_t* options, cml_op_t op, cml_dtype_t dtype) {
  (void)op;
  (void)dtype;
#if defined(CMLC_HAVE_X86_64)
  if (op == CML_OP_POW && dtype == CML_DTYPE_F32 && cmlc_ew_simd_isa(options) != CMLC_ISA_SCALAR) {
    return cmlc_ew_pow_f32_simd;
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
