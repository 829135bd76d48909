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
// dtypes: buffers, Parameter/Constant, Identity, ConvertDType, Bitcast, Reshape, and (8-bit
// kinds) Transpose, Slice, Concatenate and BroadcastInDim accept them where a backend
// advertises them (the table in docs/dtypes.md); anything else needs a ConvertDType first.
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
#define CML_DTYPE_BIT(d) (CML_CAST(cml_dtype_set_t, 1) << (d))
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

// An array shape. A scalar has rank 0. Dimensions are >= 0 (0 is a valid, empty axis), or
// negative for a named dynamic axis (see "dynamic axes" below; static shapes never have one).
typedef struct cml_shape_t {
  cml_dtype_t dtype;
  int32_t rank;
  int64_t dims[CML_MAX_RANK];
} cml_shape_t;

// The most elements a shape may hold, whatever its dtype: 2^55. With at most 128 bits per
// element, every size in bits (and so in bytes) stays below 2^62 and fits in int64 with room to
// spare, so element counts, bit offsets and byte sizes never overflow.
#define CML_MAX_ELEMENTS (CML_CAST(int64_t, 1) << 55)

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

// The number of elements: 1 for scalars, 0 for NULL, an empty or dynamic axis or a malformed
// rank.
CML_API int64_t cml_shape_element_count(const cml_shape_t* shape);
// The storage size in bytes; packed dtypes take ceil(n * bits / 8). 0 for NULL or a dynamic
// shape, SIZE_MAX for a size a size_t cannot hold (4 GiB and more on wasm32);
// cml_shape_checked_byte_size says why.
CML_API size_t cml_shape_byte_size(const cml_shape_t* shape);
// True when dtype, rank and dims are equal (`cml_shape_dims_equal` ignores the dtype); false
// when either side is NULL.
CML_API bool cml_shape_equal(const cml_shape_t* a, const cml_shape_t* b);
CML_API bool cml_shape_dims_equal(const cml_shape_t* a, const cml_shape_t* b);

// Writes "(Float32)[2, 3]" (scalar: "(Float32)"; dynamic axes "[batch=?, 3]") into |buffer| (always
// NUL-terminated when |size| > 0) and returns |buffer|.
CML_API const char* cml_shape_format(const cml_shape_t* shape, char* buffer, size_t size);

// Parses the format above, or the short form "f32[2,3]" / "f32[]" / "f32"; a dimension may be
// a dynamic axis "name=?" (or "?", anonymous). Returns
// INVALID_ARGUMENT with the position of the error.
CML_API CML_MUST_USE cml_status_t cml_shape_parse(const char* text, cml_shape_t* out_shape);

//===--- dynamic axes ---===//
//
// A dynamic axis has a name and no size until execution: "(Float32)[batch=?, 512]". A graph
// with dynamic axes is compiled once; each execution binds every name to the size its inputs
// give it (cml_axis_bindings_t), and the backend specializes the graph per distinct binding set
// (docs/dynamic_shapes.md).
//
// Encoding: cml_shape_t stays the same small value type. A dynamic dimension is stored as a
// negative number, dims[i] = -id, where |id| (>= 2) is the interned id of the axis name
// (cml_axis_id). So copying, comparing (cml_shape_equal: same names = equal) and hashing shapes
// work unchanged; static shapes never hold negative dims. Interned names live for the process
// (at most CML_MAX_AXIS_NAMES of them; anonymous "?" axes are not interned and not counted).
// Names on static axes are not kept.
//
// Names: 1..CML_MAX_AXIS_NAME_LEN characters of [A-Za-z0-9_.:-]. Reserved: "?" is the
// anonymous axis (each use is a new axis that never unifies with anything, not even another
// "?"), names starting with "=" are symbolic sums made by Concatenate ("=a+b+3": the sum of the
// bindings of a and b, plus 3), names starting with "#" or "*" are reserved.
//
// Example:
//
//   cml_shape_t s;
//   const char* names[] = {"batch", NULL};
//   cml_shape_init_dynamic(&s, CML_DTYPE_F32, 2, (int64_t[]){CML_DYNAMIC_DIM, 512}, names);
//   cml_shape_format(&s, text, sizeof text);           // "(Float32)[batch=?, 512]"
//   cml_axis_bindings_t b;
//   cml_axis_bindings_init(&b);
//   cml_axis_bindings_set(&b, "batch", 8);
//   cml_shape_t r;
//   cml_shape_resolve(&s, &b, &r);                     // (Float32)[8, 512]
//
// Byte and element counts of a dynamic shape are not defined: cml_shape_element_count and
// cml_shape_byte_size return 0 for them, cml_shape_checked_byte_size fails, and buffers never
// have dynamic shapes.

// What cml_shape_init_dynamic takes for a dynamic axis.
#define CML_DYNAMIC_DIM CML_CAST(int64_t, -1)
#define CML_MAX_AXIS_NAME_LEN 63
#define CML_MAX_AXIS_NAMES 65536

// True when |dim| (a dims[] entry) is a dynamic axis.
static inline bool cml_dim_is_dynamic(int64_t dim) { return dim < 0; }
// The axis id a dims[] entry stands for (-dim), 0 for a static dim or INT64_MIN.
static inline int64_t cml_dim_axis_id(int64_t dim) {
  return (dim < 0 && dim != INT64_MIN) ? -dim : 0;
}

// Fills |out_shape| like cml_shape_init, except that axes whose |names| entry is non-NULL and
// whose |dims| entry is CML_DYNAMIC_DIM are dynamic axes of that name ("?": anonymous). A name
// on a static axis (dims >= 0) is accepted and dropped. |names| may be NULL (a static shape).
// The element limit counts static dims only. Returns INVALID_ARGUMENT for a dynamic dim without
// a name, a bad or reserved name ("=...", "#...", "*..."), RESOURCE_EXHAUSTED when the
// process has interned CML_MAX_AXIS_NAMES names.
CML_API CML_MUST_USE cml_status_t cml_shape_init_dynamic(cml_shape_t* out_shape, cml_dtype_t dtype,
                                                         int32_t rank, const int64_t* dims,
                                                         const char* const* names);

// True when some axis of |shape| is dynamic (false for NULL).
CML_API bool cml_shape_is_dynamic(const cml_shape_t* shape);
// The name of dynamic axis |axis| of |shape| ("batch", "?", "=a+b"), or NULL for a static or
// out-of-range axis. The text lives for the process.
CML_API const char* cml_shape_axis_name(const cml_shape_t* shape, int32_t axis);
// Checks a static or dynamic shape: dtype, rank, dims (static ones non-negative, dynamic ones
// interned names) and the element limit over the static dims. INVALID_ARGUMENT otherwise.
CML_API CML_MUST_USE cml_status_t cml_shape_validate(const cml_shape_t* shape);
// The byte size of a static |shape|; FAILED_PRECONDITION naming the axis for a dynamic one,
// INVALID_ARGUMENT for a malformed one, RESOURCE_EXHAUSTED for one whose size a size_t cannot
// hold (4 GiB and more on wasm32).
CML_API CML_MUST_USE cml_status_t cml_shape_checked_byte_size(const cml_shape_t* shape,
                                                              size_t* out_bytes);

// The interned id of axis name |name| (creating it; "?" makes a new anonymous axis each time),
// so that a dynamic dim is -*out_id. Names starting with "=" are accepted here (symbolic sums).
// INVALID_ARGUMENT for a bad name, RESOURCE_EXHAUSTED when the table is full. Thread-safe.
CML_API CML_MUST_USE cml_status_t cml_axis_id(const char* name, int64_t* out_id);
// The name of interned id |id|, or NULL for an unknown id. Thread-safe.
CML_API const char* cml_axis_name(int64_t id);
// The seed's UnifyAxisName: NULL or "" with x gives x, x with x gives x; two different names,
// or an anonymous "?", give INVALID_ARGUMENT naming both. |out| gets the unified name (one of
// the inputs; NULL when both are empty).
CML_API CML_MUST_USE cml_status_t cml_axis_name_unify(const char* a, const char* b,
                                                      const char** out);

// Axis bindings: axis name -> size (> 0), at most CML_MAX_AXIS_BINDINGS of them, a value type
// (no allocation). Entries are kept sorted by axis id, so two binding sets are equal when
// their used entries are (cml_axis_bindings_equal).
#define CML_MAX_AXIS_BINDINGS 16
typedef struct cml_axis_bindings_t {
  int32_t count;
  int64_t ids[CML_MAX_AXIS_BINDINGS];
  int64_t sizes[CML_MAX_AXIS_BINDINGS];
} cml_axis_bindings_t;

CML_API void cml_axis_bindings_init(cml_axis_bindings_t* bindings);
// Binds |name| to |size|. INVALID_ARGUMENT for a size <= 0, a reserved name, or a name already
// bound to another size (the message names both sizes); RESOURCE_EXHAUSTED past
// CML_MAX_AXIS_BINDINGS names.
CML_API CML_MUST_USE cml_status_t cml_axis_bindings_set(cml_axis_bindings_t* bindings,
                                                        const char* name, int64_t size);
// The same by interned id (|id| >= 2).
CML_API CML_MUST_USE cml_status_t cml_axis_bindings_set_id(cml_axis_bindings_t* bindings,
                                                           int64_t id, int64_t size);
// The size bound to |name| (symbolic sums are computed), or false when it is not bound.
CML_API bool cml_axis_bindings_get(const cml_axis_bindings_t* bindings, const char* name,
                                   int64_t* out_size);
CML_API bool cml_axis_bindings_equal(const cml_axis_bindings_t* a, const cml_axis_bindings_t* b);
CML_API uint64_t cml_axis_bindings_hash(const cml_axis_bindings_t* bindings);
// The seed's Key(): "batch=8,seq=128", sorted by name; "" when empty. Returns |buffer|.
CML_API const char* cml_axis_bindings_key(const cml_axis_bindings_t* bindings, char* buffer,
                                          size_t size);

// Replaces every dynamic dim of |shape| by its binding (sums computed). INVALID_ARGUMENT naming
// the axis and the shape when a name is not bound (cml_shape_resolve) or when a size overflows
// the element limit. cml_shape_resolve_partial leaves unbound axes dynamic.
CML_API CML_MUST_USE cml_status_t cml_shape_resolve(const cml_shape_t* shape,
                                                    const cml_axis_bindings_t* bindings,
                                                    cml_shape_t* out_shape);
CML_API CML_MUST_USE cml_status_t cml_shape_resolve_partial(const cml_shape_t* shape,
                                                            const cml_axis_bindings_t* bindings,
                                                            cml_shape_t* out_shape);
// Adds the bindings that a concrete (static) shape gives to the dynamic axes of |pattern|.
// INVALID_ARGUMENT when the dtypes or ranks differ, a static dim differs, a dynamic dim is 0
// (bindings must be > 0), or a name gets two sizes (here or from earlier bindings); the
// message names the shapes, the axis and both sizes. Symbolic-sum axes are checked when all
// their terms are bound, skipped otherwise.
CML_API CML_MUST_USE cml_status_t cml_shape_extract_bindings(const cml_shape_t* pattern,
                                                             const cml_shape_t* concrete,
                                                             cml_axis_bindings_t* bindings);

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
