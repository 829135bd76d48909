// SPDX-License-Identifier: Apache-2.0
// cml/shape.h: element types (dtypes), shapes, and half-precision conversions.
//
// A shape is a small value type: a dtype plus up to CML_MAX_RANK dimensions, row-major.
// Sub-byte dtypes (int4, uint4, int2, uint2, int1, uint1) are stored packed, little-endian:
// the first element sits in the lowest bits of the first byte.
//
// Example:
//
//   int64_t dims[] = {2, 3};
//   cml_shape_t s;
//   if (cml_shape_init(&s, CML_DTYPE_F32, 2, dims) != CML_OK) ...
//   char text[64];
//   cml_shape_format(&s, text, sizeof text);     // "(Float32)[2, 3]"
//   size_t bytes = cml_shape_byte_size(&s);       // 24
//
//   uint16_t h = cml_f32_to_f16(1.5f);            // round to nearest even
//   float back = cml_f16_to_f32(h);               // 1.5f
//
// Thread-safety: every function here is pure and thread-safe.
#ifndef CML_SHAPE_H_
#define CML_SHAPE_H_

#include "cml/base.h"

#ifdef __cplusplus
extern "C" {
#endif

//===--- dtypes ---===//

// Element types. Values are the seed's (and PJRT_Buffer_Type's for 0..20, 21, 22, 24, 25).
// The float8 and float4 kinds ("minifloats", XLA's and ml_dtypes' definitions) are storage
// dtypes: buffers, Parameter/Constant, ConvertDType, Bitcast and the movement ops accept them
// where a backend advertises them (see docs/dtypes.md); arithmetic needs a ConvertDType first.
typedef enum cml_dtype_t {
  CML_DTYPE_INVALID = 0,
  CML_DTYPE_BOOL = 1,
  CML_DTYPE_I8 = 2,
  CML_DTYPE_I16 = 3,
  CML_DTYPE_I32 = 4,
  CML_DTYPE_I64 = 5,
  CML_DTYPE_U8 = 6,
  CML_DTYPE_U16 = 7,
  CML_DTYPE_U32 = 8,
  CML_DTYPE_U64 = 9,
  CML_DTYPE_F16 = 10,
  CML_DTYPE_F32 = 11,
  CML_DTYPE_F64 = 12,
  CML_DTYPE_BF16 = 13,
  CML_DTYPE_C64 = 14,
  CML_DTYPE_C128 = 15,
  CML_DTYPE_F8E5M2 = 16,
  CML_DTYPE_F8E4M3FN = 17,
  CML_DTYPE_F8E4M3B11FNUZ = 18,
  CML_DTYPE_F8E5M2FNUZ = 19,
  CML_DTYPE_F8E4M3FNUZ = 20,
  CML_DTYPE_I4 = 21,
  CML_DTYPE_U4 = 22,
  CML_DTYPE_TOKEN = 23,
  CML_DTYPE_I2 = 24,
  CML_DTYPE_U2 = 25,
  CML_DTYPE_F8E4M3 = 26,
  CML_DTYPE_F8E3M4 = 27,
  CML_DTYPE_F8E8M0FNU = 28,
  CML_DTYPE_F4E2M1FN = 29,
  CML_DTYPE_I1 = 30,
  CML_DTYPE_U1 = 31,
  CML_DTYPE_COUNT
} cml_dtype_t;

// A set of dtypes as a bit mask: bit |d| set means dtype |d| is in the set.
typedef uint64_t cml_dtype_set_t;
#define CML_DTYPE_BIT(d) ((cml_dtype_set_t)1 << (d))
// The float8 kinds and F4E2M1FN (storage dtypes, see cml_dtype_is_minifloat).
#define CML_DSET_MINIFLOAT                                                        \
  (CML_DTYPE_BIT(CML_DTYPE_F8E5M2) | CML_DTYPE_BIT(CML_DTYPE_F8E4M3FN) |          \
   CML_DTYPE_BIT(CML_DTYPE_F8E4M3B11FNUZ) | CML_DTYPE_BIT(CML_DTYPE_F8E5M2FNUZ) | \
   CML_DTYPE_BIT(CML_DTYPE_F8E4M3FNUZ) | CML_DTYPE_BIT(CML_DTYPE_F8E4M3) |        \
   CML_DTYPE_BIT(CML_DTYPE_F8E3M4) | CML_DTYPE_BIT(CML_DTYPE_F8E8M0FNU) |         \
   CML_DTYPE_BIT(CML_DTYPE_F4E2M1FN))
// The 1-bit integers (packed 8 per byte).
#define CML_DSET_INT1 (CML_DTYPE_BIT(CML_DTYPE_I1) | CML_DTYPE_BIT(CML_DTYPE_U1))

// Returns the seed's name ("Float32", "Int8", "Bool", "BFloat16", "Complex64", ...), or
// "unknown" for bad input. Never NULL.
CML_API const char* cml_dtype_name(cml_dtype_t dtype);

// Parses a dtype name: the seed's names ("Float32"), PJRT aliases ("F32", "PRED", "S8", "U4",
// "C64") and lower-case forms ("float32", "f32", "bf16", "i32", "u8", "bool"). Returns
// CML_DTYPE_INVALID when |name| is unknown.
CML_API cml_dtype_t cml_dtype_from_name(const char* name);

// Bits per element (Bool = 8, Int4 = 4, Complex64 = 64), 0 for invalid or TOKEN.
CML_API int cml_dtype_bits(cml_dtype_t dtype);

// Dtype predicates; all are false for out-of-range values.
CML_API bool cml_dtype_is_valid(cml_dtype_t dtype);      // 1..COUNT-1 except TOKEN
CML_API bool cml_dtype_is_supported(cml_dtype_t dtype);  // valid (TOKEN excluded)
CML_API bool cml_dtype_is_float(cml_dtype_t dtype);      // F16, BF16, F32, F64
CML_API bool cml_dtype_is_complex(cml_dtype_t dtype);    // C64, C128
CML_API bool cml_dtype_is_int(cml_dtype_t dtype);        // signed or unsigned, packed included
CML_API bool cml_dtype_is_signed_int(cml_dtype_t dtype);
CML_API bool cml_dtype_is_unsigned_int(cml_dtype_t dtype);
CML_API bool cml_dtype_is_packed(cml_dtype_t dtype);  // fewer than 8 bits per element
// The F8* kinds and F4E2M1FN (packed, 4 bits).
CML_API bool cml_dtype_is_minifloat(cml_dtype_t dtype);
// Storage-only dtypes: the packed ones and the minifloats (no arithmetic on them).
CML_API bool cml_dtype_is_storage_only(cml_dtype_t dtype);

// For complex dtypes the component dtype (C64 -> F32, C128 -> F64); otherwise |dtype|.
CML_API cml_dtype_t cml_dtype_real_part(cml_dtype_t dtype);

// StableHLO element type text ("f32", "i32", "ui8", "i1" for Bool, "complex<f32>"), or NULL
// for dtypes StableHLO cannot express.
CML_API const char* cml_dtype_stablehlo_name(cml_dtype_t dtype);

//===--- shapes ---===//

#define CML_MAX_RANK 16

// An array shape. A scalar has rank 0. Dimensions are >= 0 (0 is a valid, empty axis).
typedef struct cml_shape_t {
  cml_dtype_t dtype;
  int32_t rank;
  int64_t dims[CML_MAX_RANK];
} cml_shape_t;

// The most elements a shape may hold, whatever its dtype: 2^55. With at most 128 bits per
// element, every size in bits (and so in bytes) stays below 2^62 and fits in int64 with room to
// spare, so element counts, bit offsets and byte sizes never overflow.
#define CML_MAX_ELEMENTS ((int64_t)1 << 55)

// Fills |out_shape| after checking |dtype| (supported), |rank| (0..CML_MAX_RANK) and |dims|
// (non-negative, at most CML_MAX_ELEMENTS elements in all, so the byte size is at most 2^59;
// zero dimensions count as 1 in this limit, so the strides of an empty shape fit as well).
// |dims| may be NULL when |rank| is 0.
// Returns INVALID_ARGUMENT naming the offending value.
CML_API CML_MUST_USE cml_status_t cml_shape_init(cml_shape_t* out_shape, cml_dtype_t dtype,
                                                 int32_t rank, const int64_t* dims);

// Convenience: a shape by value, for literal use (`cml_shape_make(CML_DTYPE_F32, 2,
// (int64_t[]){2,3})`). Invalid input gives a shape whose dtype is CML_DTYPE_INVALID, which every
// API rejects.
CML_API cml_shape_t cml_shape_make(cml_dtype_t dtype, int32_t rank, const int64_t* dims);
// The rank-0 shape of |dtype| (same rules as `cml_shape_make`).
CML_API cml_shape_t cml_shape_scalar(cml_dtype_t dtype);

// The number of elements: 1 for scalars, 0 for NULL, an empty axis or a malformed rank.
CML_API int64_t cml_shape_element_count(const cml_shape_t* shape);
// The storage size in bytes; packed dtypes take ceil(n * bits / 8). 0 for NULL.
CML_API size_t cml_shape_byte_size(const cml_shape_t* shape);
// True when dtype, rank and dims are equal (`cml_shape_dims_equal` ignores the dtype); false
// when either side is NULL.
CML_API bool cml_shape_equal(const cml_shape_t* a, const cml_shape_t* b);
CML_API bool cml_shape_dims_equal(const cml_shape_t* a, const cml_shape_t* b);

// Writes "(Float32)[2, 3]" (scalar: "(Float32)") into |buffer| (always NUL-terminated when
// |size| > 0) and returns |buffer|.
CML_API const char* cml_shape_format(const cml_shape_t* shape, char* buffer, size_t size);

// Parses the format above, or the short form "f32[2,3]" / "f32[]" / "f32". Returns
// INVALID_ARGUMENT with the position of the error.
CML_API CML_MUST_USE cml_status_t cml_shape_parse(const char* text, cml_shape_t* out_shape);

//===--- half-precision conversions ---===//

// IEEE binary16 and bfloat16 are stored as uint16_t bit patterns. Conversions from float
// round to nearest, ties to even; NaNs stay NaN (quiet), infinities and signed zeros are kept.
CML_API float cml_f16_to_f32(uint16_t bits);
CML_API uint16_t cml_f32_to_f16(float value);
CML_API uint16_t cml_f64_to_f16(double value);  // rounds once, from double
CML_API float cml_bf16_to_f32(uint16_t bits);
CML_API uint16_t cml_f32_to_bf16(float value);
CML_API uint16_t cml_f64_to_bf16(double value);  // rounds once, from double

//===--- float8 / float4 conversions ---===//

// A minifloat (|dtype| with cml_dtype_is_minifloat) is a uint8_t bit pattern; F4E2M1FN uses
// the low 4 bits (the rest are ignored on input, zero on output). Conversions follow ml_dtypes
// (what JAX uses): round once to nearest, ties to even (F8E8M0FNU: ties up); overflow gives Inf,
// or NaN for types without Inf, or the largest finite value for F4E2M1FN (no NaN). NaN/Inf on
// types without them: see docs/dtypes.md. Decoding is exact. A non-minifloat |dtype| decodes
// to NaN and encodes to 0.
CML_API float cml_f8_to_f32(cml_dtype_t dtype, uint8_t bits);
CML_API double cml_f8_to_f64(cml_dtype_t dtype, uint8_t bits);
CML_API uint8_t cml_f32_to_f8(cml_dtype_t dtype, float value);
CML_API uint8_t cml_f64_to_f8(cml_dtype_t dtype, double value);  // rounds once, from double

// Complex values as stored in buffers (interleaved real, imaginary).
typedef struct cml_c64_t {
  float re, im;
} cml_c64_t;
typedef struct cml_c128_t {
  double re, im;
} cml_c128_t;

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_SHAPE_H_
