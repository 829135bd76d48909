// SPDX-License-Identifier: Apache-2.0
// kernels/generic/elementwise_convert.c: ConvertDType (every pair of supported dtypes, packed
// int4/uint4/int2/uint2 included), Bitcast, Iota and Identity.
//
// ConvertDType goes through blocks of 256 "wide" values: a source block is widened to int64,
// uint64, double or complex double (all exact), then narrowed to the target with XLA's rules:
// ints wrap; float -> int truncates toward zero and saturates, NaN -> 0; -> Bool is != 0;
// Bool -> 0/1; complex -> real keeps the real part; every float target rounds once to nearest
// even (int64 -> f16/bf16/f8 goes through a round-to-odd double so that it too rounds once);
// float8/float4 targets follow ml_dtypes' overflow and NaN rules (cml_f64_to_f8).
// Packed targets are written whole bytes per block (blocks start at multiples of 256
// elements, so blocks never share a byte) with the padding bits of the last byte zeroed.
// f32 <-> bf16 / f16 / i32 take straight SIMD loops when the options allow (same results).
#include "backends/c/kernels/generic/elementwise_internal.h"
#include "base/half_inline.h"

enum { CMLC_EW_BLOCK = 256, CMLC_EW_CONVERT_MIN_BLOCKS = 64, CMLC_EW_SIMD_MIN_CHUNK = 16384 };

typedef enum cmlc_ew_kind_t {
  CMLC_EW_KIND_INT,
  CMLC_EW_KIND_UINT,
  CMLC_EW_KIND_FLOAT,
  CMLC_EW_KIND_COMPLEX,
} cmlc_ew_kind_t;

typedef struct cmlc_ew_block_t {
  cmlc_ew_kind_t kind;
  union {
    int64_t i[CMLC_EW_BLOCK];
    uint64_t u[CMLC_EW_BLOCK];
    double f[CMLC_EW_BLOCK];
    double c[2 * CMLC_EW_BLOCK];
  } v;
} cmlc_ew_block_t;

//===--- widening ---===//

static uint64_t cmlc_ew_packed_get(const uint8_t* p, int64_t i, int bits) {
  const int64_t bit = i * bits;
  return ((uint64_t)p[bit >> 3] >> (bit & 7)) & ((1u << bits) - 1u);
}

static inline uint64_t cmlc_ew_bool_u64(uint8_t b) { return b != 0; }

#define CMLC_EW_WIDEN(T, FIELD, EXPR)                            \
  do {                                                           \
    const T* s_ = (const T*)src + start;                         \
    for (int64_t k = 0; k < n; ++k) b->v.FIELD[k] = EXPR(s_[k]); \
  } while (0)

static void cmlc_ew_widen(cml_dtype_t dtype, const void* src, int64_t start, int64_t n,
                          cmlc_ew_block_t* b) {
  switch (dtype) {
    case CML_DTYPE_BOOL:
      b->kind = CMLC_EW_KIND_UINT;
      CMLC_EW_WIDEN(uint8_t, u, cmlc_ew_bool_u64);
      break;
    case CML_DTYPE_I8:
      b->kind = CMLC_EW_KIND_INT;
      CMLC_EW_WIDEN(int8_t, i, (int64_t));
      break;
    case CML_DTYPE_I16:
      b->kind = CMLC_EW_KIND_INT;
      CMLC_EW_WIDEN(int16_t, i, (int64_t));
      break;
    case CML_DTYPE_I32:
      b->kind = CMLC_EW_KIND_INT;
      CMLC_EW_WIDEN(int32_t, i, (int64_t));
      break;
    case CML_DTYPE_I64:
      b->kind = CMLC_EW_KIND_INT;
      CMLC_EW_WIDEN(int64_t, i, (int64_t));
      break;
    case CML_DTYPE_U8:
      b->kind = CMLC_EW_KIND_UINT;
      CMLC_EW_WIDEN(uint8_t, u, (uint64_t));
      break;
    case CML_DTYPE_U16:
      b->kind = CMLC_EW_KIND_UINT;
      CMLC_EW_WIDEN(uint16_t, u, (uint64_t));
      break;
    case CML_DTYPE_U32:
      b->kind = CMLC_EW_KIND_UINT;
      CMLC_EW_WIDEN(uint32_t, u, (uint64_t));
      break;
    case CML_DTYPE_U64:
      b->kind = CMLC_EW_KIND_UINT;
      CMLC_EW_WIDEN(uint64_t, u, (uint64_t));
      break;
    case CML_DTYPE_F16:
      b->kind = CMLC_EW_KIND_FLOAT;
      CMLC_EW_WIDEN(uint16_t, f, (double)cml_f16_to_f32);
      break;
    case CML_DTYPE_BF16:
      b->kind = CMLC_EW_KIND_FLOAT;
      CMLC_EW_WIDEN(uint16_t, f, (double)cml_bf16_to_f32);
      break;
    case CML_DTYPE_F32:
      b->kind = CMLC_EW_KIND_FLOAT;
      CMLC_EW_WIDEN(float, f, (double));
      break;
    case CML_DTYPE_F64:
      b->kind = CMLC_EW_KIND_FLOAT;
      CMLC_EW_WIDEN(double, f, (double));
      break;
    case CML_DTYPE_C64: {
      b->kind = CMLC_EW_KIND_COMPLEX;
      const cml_c64_t* s = (const cml_c64_t*)src + start;
      for (int64_t k = 0; k < n; ++k) {
        b->v.c[2 * k] = s[k].re;
        b->v.c[2 * k + 1] = s[k].im;
      }
      break;
    }
    case CML_DTYPE_C128: {
      b->kind = CMLC_EW_KIND_COMPLEX;
      const cml_c128_t* s = (const cml_c128_t*)src + start;
      for (int64_t k = 0; k < n; ++k) {
        b->v.c[2 * k] = s[k].re;
        b->v.c[2 * k + 1] = s[k].im;
      }
      break;
    }
    case CML_DTYPE_F8E5M2:
    case CML_DTYPE_F8E4M3FN:
    case CML_DTYPE_F8E4M3B11FNUZ:
    case CML_DTYPE_F8E5M2FNUZ:
    case CML_DTYPE_F8E4M3FNUZ:
    case CML_DTYPE_F8E4M3:
    case CML_DTYPE_F8E3M4:
    case CML_DTYPE_F8E8M0FNU: {
      b->kind = CMLC_EW_KIND_FLOAT;
      const uint8_t* s = (const uint8_t*)src + start;
      for (int64_t k = 0; k < n; ++k) b->v.f[k] = cml_f8_to_f64(dtype, s[k]);
      break;
    }
    case CML_DTYPE_F4E2M1FN:
      b->kind = CMLC_EW_KIND_FLOAT;
      for (int64_t k = 0; k < n; ++k) {
        const uint64_t raw = cmlc_ew_packed_get((const uint8_t*)src, start + k, 4);
        b->v.f[k] = cml_f8_to_f64(dtype, (uint8_t)raw);
      }
      break;
    default: {  // packed ints
      const int bits = cml_dtype_bits(dtype);
      const bool is_signed = cml_dtype_is_signed_int(dtype);
      b->kind = is_signed ? CMLC_EW_KIND_INT : CMLC_EW_KIND_UINT;
      for (int64_t k = 0; k < n; ++k) {
        const uint64_t raw = cmlc_ew_packed_get((const uint8_t*)src, start + k, bits);
        if (is_signed) {
          const uint64_t sign = (uint64_t)1 << (bits - 1);
          b->v.i[k] = (int64_t)(raw ^ sign) - (int64_t)sign;
        } else {
          b->v.u[k] = raw;
        }
      }
      break;
    }
  }
}

//===--- narrowing ---===//

// Generic narrowing loop: V is the widened value (int64_t, uint64_t, double), RE/IM for complex.
#define CMLC_EW_NARROW(T, FROM_I, FROM_U, FROM_F, FROM_C)        \
  do {                                                           \
    T* d_ = (T*)dst + start;                                     \
    switch (b->kind) {                                           \
      case CMLC_EW_KIND_INT:                                     \
        for (int64_t k = 0; k < n; ++k) {                        \
          const int64_t v = b->v.i[k];                           \
          d_[k] = FROM_I;                                        \
        }                                                        \
        break;                                                   \
      case CMLC_EW_KIND_UINT:                                    \
        for (int64_t k = 0; k < n; ++k) {                        \
          const uint64_t v = b->v.u[k];                          \
          d_[k] = FROM_U;                                        \
        }                                                        \
        break;                                                   \
      case CMLC_EW_KIND_FLOAT:                                   \
        for (int64_t k = 0; k < n; ++k) {                        \
          const double v = b->v.f[k];                            \
          d_[k] = FROM_F;                                        \
        }                                                        \
        break;                                                   \
      case CMLC_EW_KIND_COMPLEX:                                 \
        for (int64_t k = 0; k < n; ++k) {                        \
          const double v = b->v.c[2 * k], w = b->v.c[2 * k + 1]; \
          (void)w;                                               \
          d_[k] = FROM_C;                                        \
        }                                                        \
        break;                                                   \
    }                                                            \
  } while (0)

#define CMLC_EW_NARROW_SINT(T, LO, HI)                                      \
  CMLC_EW_NARROW(T, (T)(uint64_t)v, (T)v, (T)cmlc_f64_to_signed(v, LO, HI), \
                 (T)cmlc_f64_to_signed(v, LO, HI))
#define CMLC_EW_NARROW_UINT(T, HI)                                        \
  CMLC_EW_NARROW(T, (T)(uint64_t)v, (T)v, (T)cmlc_f64_to_unsigned(v, HI), \
                 (T)cmlc_f64_to_unsigned(v, HI))
#define CMLC_EW_NARROW_FLOAT(T, CVT_D, CVT_ODD_I, CVT_ODD_U) \
  CMLC_EW_NARROW(T, CVT_ODD_I(v), CVT_ODD_U(v), CVT_D(v), CVT_D(v))

static inline float cmlc_ew_d2f(double d) { return (float)d; }
static inline float cmlc_ew_i2f(int64_t i) { return (float)i; }
static inline float cmlc_ew_u2f(uint64_t u) { return (float)u; }
static inline double cmlc_ew_i2d(int64_t i) { return (double)i; }
static inline double cmlc_ew_u2d(uint64_t u) { return (double)u; }
// Integers of at most 24 bits are exact in float, so converting through float rounds once, as
// the double path does (bit-twiddling instead of frexp and nearbyint: Uint8 -> Float16 was
// 7-85x slower than xla:cpu element by element).
#define CMLC_EW_F32_EXACT(i) ((i) >= -(1 << 24) && (i) <= (1 << 24))
static inline uint16_t cmlc_ew_i2h(int64_t i) {
  return CMLC_EW_F32_EXACT(i) ? cml__f32_to_f16((float)i) : cml_f64_to_f16(cml__i64_to_f64_odd(i));
}
static inline uint16_t cmlc_ew_u2h(uint64_t u) {
  return u <= (1u << 24) ? cml__f32_to_f16((float)u) : cml_f64_to_f16(cml__u64_to_f64_odd(u));
}
static inline uint16_t cmlc_ew_i2bh(int64_t i) {
  return CMLC_EW_F32_EXACT(i) ? cml__f32_to_bf16((float)i)
                              : cml_f64_to_bf16(cml__i64_to_f64_odd(i));
}
static inline uint16_t cmlc_ew_u2bh(uint64_t u) {
  return u <= (1u << 24) ? cml__f32_to_bf16((float)u) : cml_f64_to_bf16(cml__u64_to_f64_odd(u));
}
#undef CMLC_EW_F32_EXACT

static void cmlc_ew_narrow_packed(cml_dtype_t dtype, const cmlc_ew_block_t* b, int64_t n, void* dst,
                                  int64_t start) {
  const int bits = cml_dtype_bits(dtype);
  const bool is_signed = cml_dtype_is_signed_int(dtype);
  const int64_t hi = is_signed ? ((int64_t)1 << (bits - 1)) - 1 : ((int64_t)1 << bits) - 1;
  const int64_t lo = is_signed ? -((int64_t)1 << (bits - 1)) : 0;
  const uint64_t mask = ((uint64_t)1 << bits) - 1;
  uint8_t* p = (uint8_t*)dst;
  const int64_t first_byte = (start * bits) >> 3;
  const int64_t end_byte = ((start + n) * bits + 7) >> 3;
  memset(p + first_byte, 0, (size_t)(end_byte - first_byte));
  const bool f4 = dtype == CML_DTYPE_F4E2M1FN;
  for (int64_t k = 0; k < n; ++k) {
    uint64_t raw;
    switch (b->kind) {
      case CMLC_EW_KIND_INT:
        raw = f4 ? cml_f64_to_f8(dtype, cml__i64_to_f64_odd(b->v.i[k])) : (uint64_t)b->v.i[k];
        break;
      case CMLC_EW_KIND_UINT:
        raw = f4 ? cml_f64_to_f8(dtype, cml__u64_to_f64_odd(b->v.u[k])) : b->v.u[k];
        break;
      case CMLC_EW_KIND_FLOAT:
        raw =
            f4 ? cml_f64_to_f8(dtype, b->v.f[k]) : (uint64_t)cmlc_f64_to_signed(b->v.f[k], lo, hi);
        break;
      default:
        raw = f4 ? cml_f64_to_f8(dtype, b->v.c[2 * k])
                 : (uint64_t)cmlc_f64_to_signed(b->v.c[2 * k], lo, hi);
        break;
    }
    const int64_t bit = (start + k) * bits;
    p[bit >> 3] |= (uint8_t)((raw & mask) << (bit & 7));
  }
}

static void cmlc_ew_narrow(cml_dtype_t dtype, const cmlc_ew_block_t* b, int64_t n, void* dst,
                           int64_t start) {
  switch (dtype) {
    case CML_DTYPE_BOOL:
      CMLC_EW_NARROW(uint8_t, (uint8_t)(v != 0), (uint8_t)(v != 0), (uint8_t)(v != 0),
                     (uint8_t)(v != 0 || w != 0));
      break;
    case CML_DTYPE_I8:
      CMLC_EW_NARROW_SINT(int8_t, INT8_MIN, INT8_MAX);
      break;
    case CML_DTYPE_I16:
      CMLC_EW_NARROW_SINT(int16_t, INT16_MIN, INT16_MAX);
      break;
    case CML_DTYPE_I32:
      CMLC_EW_NARROW_SINT(int32_t, INT32_MIN, INT32_MAX);
      break;
    case CML_DTYPE_I64:
      CMLC_EW_NARROW_SINT(int64_t, INT64_MIN, INT64_MAX);
      break;
    case CML_DTYPE_U8:
      CMLC_EW_NARROW_UINT(uint8_t, UINT8_MAX);
      break;
    case CML_DTYPE_U16:
      CMLC_EW_NARROW_UINT(uint16_t, UINT16_MAX);
      break;
    case CML_DTYPE_U32:
      CMLC_EW_NARROW_UINT(uint32_t, UINT32_MAX);
      break;
    case CML_DTYPE_U64:
      CMLC_EW_NARROW_UINT(uint64_t, UINT64_MAX);
      break;
    case CML_DTYPE_F16:
      CMLC_EW_NARROW_FLOAT(uint16_t, cml_f64_to_f16, cmlc_ew_i2h, cmlc_ew_u2h);
      break;
    case CML_DTYPE_BF16:
      CMLC_EW_NARROW_FLOAT(uint16_t, cml_f64_to_bf16, cmlc_ew_i2bh, cmlc_ew_u2bh);
      break;
    case CML_DTYPE_F32:
      CMLC_EW_NARROW_FLOAT(float, cmlc_ew_d2f, cmlc_ew_i2f, cmlc_ew_u2f);
      break;
    case CML_DTYPE_F64:
      CMLC_EW_NARROW_FLOAT(double, CMLC_EW_ID, cmlc_ew_i2d, cmlc_ew_u2d);
      break;
    case CML_DTYPE_C64:
      CMLC_EW_NARROW(cml_c64_t, ((cml_c64_t){cmlc_ew_i2f(v), 0.0f}),
                     ((cml_c64_t){cmlc_ew_u2f(v), 0.0f}), ((cml_c64_t){(float)v, 0.0f}),
                     ((cml_c64_t){(float)v, (float)w}));
      break;
    case CML_DTYPE_C128:
      CMLC_EW_NARROW(cml_c128_t, ((cml_c128_t){(double)v, 0.0}), ((cml_c128_t){(double)v, 0.0}),
                     ((cml_c128_t){v, 0.0}), ((cml_c128_t){v, w}));
      break;
    case CML_DTYPE_F8E5M2:
    case CML_DTYPE_F8E4M3FN:
    case CML_DTYPE_F8E4M3B11FNUZ:
    case CML_DTYPE_F8E5M2FNUZ:
    case CML_DTYPE_F8E4M3FNUZ:
    case CML_DTYPE_F8E4M3:
    case CML_DTYPE_F8E3M4:
    case CML_DTYPE_F8E8M0FNU:
      CMLC_EW_NARROW(uint8_t, cml_f64_to_f8(dtype, cml__i64_to_f64_odd(v)),
                     cml_f64_to_f8(dtype, cml__u64_to_f64_odd(v)), cml_f64_to_f8(dtype, v),
                     cml_f64_to_f8(dtype, v));
      break;
    default:
      cmlc_ew_narrow_packed(dtype, b, n, dst, start);
      break;
  }
}

//===--- ConvertDType ---===//

static bool cmlc_ew_convertible(cml_dtype_t dtype) { return cml_dtype_is_supported(dtype); }

bool cmlc_ew_convert_supported(cml_dtype_t from, cml_dtype_t to) {
  return cmlc_ew_convertible(from) && cmlc_ew_convertible(to);
}

typedef struct cmlc_ew_convert_ctx_t {
  cml_dtype_t from, to;
  const void* src;
  void* dst;
  int64_t n;
  cmlc_ew_convert_fn simd;  // a straight SIMD conversion, or NULL
} cmlc_ew_convert_ctx_t;

static void cmlc_ew_convert_simd_task(void* ctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const cmlc_ew_convert_ctx_t* c = (const cmlc_ew_convert_ctx_t*)ctx;
  const size_t in_size = cmlc_dtype_size(c->from), out_size = cmlc_dtype_size(c->to);
  c->simd((char*)c->dst + (size_t)begin * out_size, (const char*)c->src + (size_t)begin * in_size,
          end - begin);
}

static void cmlc_ew_convert_task(void* ctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const cmlc_ew_convert_ctx_t* c = (const cmlc_ew_convert_ctx_t*)ctx;
  cmlc_ew_block_t b;
  for (int64_t blk = begin; blk < end; ++blk) {
    const int64_t start = blk * CMLC_EW_BLOCK;
    const int64_t len = c->n - start < CMLC_EW_BLOCK ? c->n - start : CMLC_EW_BLOCK;
    cmlc_ew_widen(c->from, c->src, start, len, &b);
    cmlc_ew_narrow(c->to, &b, len, c->dst, start);
  }
}

cml_status_t cmlc_ew_run_convert(const cmlc_kernel_args_t* args) {
  cmlc_ew_convert_ctx_t c = {args->input_shapes[0]->dtype,
                             args->output_shapes[0]->dtype,
                             args->inputs[0],
                             args->outputs[0],
                             cml_shape_element_count(args->output_shapes[0]),
                             NULL};
  if (!cmlc_ew_convert_supported(c.from, c.to)) {
    return cml_status_make(CML_STATUS_UNIMPLEMENTED, "ConvertDType: %s -> %s not supported",
                           cml_dtype_name(c.from), cml_dtype_name(c.to));
  }
  if (c.n == 0) return CML_OK;
  // The SIMD loop the lookup picked for this conversion (slot 0; NULL: none).
  cmlc_ew_convert_fn simd = (cmlc_ew_convert_fn)args->impl[0];
  if (simd) {
    c.simd = simd;
    cmlc_parallel_for(args->pool, c.n, CMLC_EW_SIMD_MIN_CHUNK, cmlc_ew_convert_simd_task, &c);
    return CML_OK;
  }
  const int64_t blocks = (c.n + CMLC_EW_BLOCK - 1) / CMLC_EW_BLOCK;
  cmlc_parallel_for(args->pool, blocks, CMLC_EW_CONVERT_MIN_BLOCKS, cmlc_ew_convert_task, &c);
  return CML_OK;
}

void cmlc_ew_store_i64(cml_dtype_t dtype, const int64_t* values, int64_t n, void* dst,
                       int64_t start) {
  cmlc_ew_block_t b;
  b.kind = CMLC_EW_KIND_INT;
  for (int64_t done = 0; done < n; done += CMLC_EW_BLOCK) {
    const int64_t len = n - done < CMLC_EW_BLOCK ? n - done : CMLC_EW_BLOCK;
    memcpy(b.v.i, values + done, (size_t)len * sizeof(int64_t));
    cmlc_ew_narrow(dtype, &b, len, dst, start + done);
  }
}

//===--- Iota ---===//

typedef struct cmlc_ew_iota_ctx_t {
  cml_dtype_t dtype;
  void* dst;
  int64_t n, dim, inner;
} cmlc_ew_iota_ctx_t;

// Stores elements [start, start + len) of the iota into |y| (of T) from the counters |value|
// and |within| of cmlc_ew_iota_task, in runs: with inner == 1 ascending values up to dim - 1, else
// |inner| copies of one value.
#define CMLC_EW_IOTA_STEP(T, y)                                                      \
  for (int64_t k = 0; k < len;) {                                                    \
    if (c->inner == 1) {                                                             \
      const int64_t run = len - k < c->dim - value ? len - k : c->dim - value;       \
      for (int64_t j = 0; j < run; ++j) (y)[k + j] = (T)(value + j);                 \
      k += run;                                                                      \
      value += run;                                                                  \
    } else {                                                                         \
      const int64_t run = len - k < c->inner - within ? len - k : c->inner - within; \
      for (int64_t j = 0; j < run; ++j) (y)[k + j] = (T)value;                       \
      k += run;                                                                      \
      within += run;                                                                 \
      if (within == c->inner) within = 0, ++value;                                   \
    }                                                                                \
    if (value == c->dim) value = 0;                                                  \
  }

static void cmlc_ew_iota_task(void* ctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const cmlc_ew_iota_ctx_t* c = (const cmlc_ew_iota_ctx_t*)ctx;
  cmlc_ew_block_t b;
  b.kind = CMLC_EW_KIND_INT;
  for (int64_t blk = begin; blk < end; ++blk) {
    const int64_t start = blk * CMLC_EW_BLOCK;
    const int64_t len = c->n - start < CMLC_EW_BLOCK ? c->n - start : CMLC_EW_BLOCK;
    // (e / inner) % dim for e = start + k, stepped with counters (no division per element);
    // Int32, Int64 and Float32 are stored directly where every value is exact (no saturation,
    // no rounding), other dtypes and dims through the narrowing block.
    int64_t within = start % c->inner, value = (start / c->inner) % c->dim;
    if (c->dtype == CML_DTYPE_I32 && c->dim <= ((int64_t)1 << 31)) {
      CMLC_EW_IOTA_STEP(int32_t, (int32_t*)c->dst + start)
    } else if (c->dtype == CML_DTYPE_I64) {
      CMLC_EW_IOTA_STEP(int64_t, (int64_t*)c->dst + start)
    } else if (c->dtype == CML_DTYPE_F32 && c->dim <= (1 << 24)) {
      CMLC_EW_IOTA_STEP(float, (float*)c->dst + start)
    } else {
      CMLC_EW_IOTA_STEP(int64_t, b.v.i)
      cmlc_ew_narrow(c->dtype, &b, len, c->dst, start);
    }
#undef CMLC_EW_IOTA_STEP
  }
}

cml_status_t cmlc_ew_run_iota(const cmlc_kernel_args_t* args) {
  const cml_shape_t* os = args->output_shapes[0];
  const int64_t axis = args->node->attrs->axis;
  if (os->rank == 0 || axis < 0 || axis >= os->rank) {
    char text[128];
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "Iota: axis %lld out of range for %s",
                           (long long)axis, cml_shape_format(os, text, sizeof text));
  }
  cmlc_ew_iota_ctx_t c = {os->dtype, args->outputs[0], cml_shape_element_count(os), os->dims[axis],
                          1};
  for (int32_t d = (int32_t)axis + 1; d < os->rank; ++d) c.inner *= os->dims[d];
  if (c.n == 0) return CML_OK;
  const int64_t blocks = (c.n + CMLC_EW_BLOCK - 1) / CMLC_EW_BLOCK;
  cmlc_parallel_for(args->pool, blocks, CMLC_EW_CONVERT_MIN_BLOCKS, cmlc_ew_iota_task, &c);
  return CML_OK;
}

//===--- Bitcast and Identity: byte copies ---===//

typedef struct cmlc_ew_copy_ctx_t {
  const uint8_t* src;
  uint8_t* dst;
} cmlc_ew_copy_ctx_t;

enum { CMLC_EW_COPY_CHUNK = 1 << 20 };

static void cmlc_ew_copy_task(void* ctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const cmlc_ew_copy_ctx_t* c = (const cmlc_ew_copy_ctx_t*)ctx;
  memcpy(c->dst + begin, c->src + begin, (size_t)(end - begin));
}

static void cmlc_ew_copy(cmlc_pool_t* pool, void* dst, const void* src, size_t size) {
  if (size == 0 || dst == src) return;
  cmlc_ew_copy_ctx_t c = {(const uint8_t*)src, (uint8_t*)dst};
  cmlc_parallel_for(pool, (int64_t)size, CMLC_EW_COPY_CHUNK, cmlc_ew_copy_task, &c);
}

cml_status_t cmlc_ew_run_bitcast(const cmlc_kernel_args_t* args) {
  const size_t in_size = cml_shape_byte_size(args->input_shapes[0]);
  const cml_shape_t* os = args->output_shapes[0];
  const size_t out_size = cml_shape_byte_size(os);
  const size_t size = in_size < out_size ? in_size : out_size;
  cmlc_ew_copy(args->pool, args->outputs[0], args->inputs[0], size);
  uint8_t* p = (uint8_t*)args->outputs[0];
  if (out_size > size) memset(p + size, 0, out_size - size);
  // Packed outputs: zero the padding bits after the last element.
  const int64_t used_bits = cml_shape_element_count(os) * cml_dtype_bits(os->dtype);
  if (out_size > 0 && (used_bits & 7) != 0) {
    p[out_size - 1] &= (uint8_t)((1u << (used_bits & 7)) - 1u);
  }
  return CML_OK;
}

cml_status_t cmlc_ew_run_identity(const cmlc_kernel_args_t* args) {
  cmlc_ew_copy(args->pool, args->outputs[0], args->inputs[0],
               cml_shape_byte_size(args->output_shapes[0]));
  return CML_OK;
}
