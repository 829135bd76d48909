// SPDX-License-Identifier: Apache-2.0
// cml/graph.h: building computations (builders, functions, closures, ops), compiling them into
// executables and executing those on buffers.
//
// A builder records a module: the main function, named functions and closures. Each op is
// checked when it is added (shape inference, dtype rules, the backend's capabilities); the
// first failure sticks to the builder and later ops that receive an invalid value return
// CML_VALUE_INVALID without overwriting it. `cml_builder_compile` reports that first error.
// To find the call that failed in a large graph, install a log handler (`cml_set_log_handler`,
// cml/base.h) that takes CML_LOG_DEBUG messages: the first error of each builder is logged at
// that level from inside the failing call, so a breakpoint in the handler shows its caller.
// Semantics are StableHLO/XLA's: restricted broadcasting (equal shapes, a scalar side, or same
// rank with size-1 axes), no implicit dtype promotion.
//
// Example (y = relu(x @ w + b), compiled and executed):
//
//   cml_builder_t* b = NULL;
//   CML_RETURN_IF_ERROR(cml_builder_create(backend, "mlp", &b));
//   cml_function_t* f = cml_builder_main(b);
//   cml_shape_t xs = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){4, 3});
//   cml_shape_t ws = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){3, 2});
//   cml_value_t x = cml_parameter(f, "x", &xs);
//   cml_value_t w = cml_parameter(f, "w", &ws);
//   cml_value_t y = cml_op_dot(f, x, w);                        // [4, 2]
//   cml_value_t z = cml_constant_scalar_f64(f, CML_DTYPE_F32, 0.0);
//   y = cml_op_max(f, y, z);                                    // scalar side broadcasts
//   cml_status_t st = cml_function_return(f, &y, 1);
//   cml_executable_t* exe = NULL;
//   if (st == CML_OK) st = cml_builder_compile(b, &exe);        // first error surfaces here
//   cml_builder_destroy(b);
//   ...
//   cml_buffer_t* out[1];
//   st = cml_executable_execute(exe, (cml_buffer_t*[]){xbuf, wbuf}, 2, NULL, 0, out);
//
// Op builders (`cml_op_*`, `cml_parameter`, `cml_constant*`) return a value, or
// CML_VALUE_INVALID on failure; they never return a status. The failure is recorded in the
// builder with a message naming the op, the operand shapes and dtypes: INVALID_ARGUMENT for bad
// shapes, dtypes, axes or attributes (and NULL or foreign arguments), UNIMPLEMENTED when the
// backend lacks the op or dtype, FAILED_PRECONDITION after the function returned or the builder
// compiled, RESOURCE_EXHAUSTED when out of memory or past a builder's 16,777,215 values (2^24 -
// 1: each parameter, constant and op output is one, in every function together). Read it with
// `cml_builder_status`.
//
// Ownership: the builder owns its functions and values; `cml_builder_compile` hands the caller
// an executable that outlives the builder. Lent pointers (names, shapes) live as long as their
// owner.
//
// Thread-safety: a builder and its functions are single-thread (one thread at a time).
// Executables are immutable and thread-safe: many threads may execute one at once.
#ifndef CML_GRAPH_H_
#define CML_GRAPH_H_

#include "cml/base.h"
#include "cml/shape.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cml_backend_t cml_backend_t;
typedef struct cml_buffer_t cml_buffer_t;
typedef struct cml_builder_t cml_builder_t;
typedef struct cml_function_t cml_function_t;
typedef struct cml_executable_t cml_executable_t;

//===--- dtype sets used by the op list ---===//

#define CML_DSET_BOOL CML_DTYPE_BIT(CML_DTYPE_BOOL)
#define CML_DSET_SINT                                                                          \
  (CML_DTYPE_BIT(CML_DTYPE_I8) | CML_DTYPE_BIT(CML_DTYPE_I16) | CML_DTYPE_BIT(CML_DTYPE_I32) | \
   CML_DTYPE_BIT(CML_DTYPE_I64))
#define CML_DSET_UINT                                                                          \
  (CML_DTYPE_BIT(CML_DTYPE_U8) | CML_DTYPE_BIT(CML_DTYPE_U16) | CML_DTYPE_BIT(CML_DTYPE_U32) | \
   CML_DTYPE_BIT(CML_DTYPE_U64))
#define CML_DSET_INT (CML_DSET_SINT | CML_DSET_UINT)
#define CML_DSET_FLOAT32_64 (CML_DTYPE_BIT(CML_DTYPE_F32) | CML_DTYPE_BIT(CML_DTYPE_F64))
#define CML_DSET_FLOAT \
  (CML_DSET_FLOAT32_64 | CML_DTYPE_BIT(CML_DTYPE_F16) | CML_DTYPE_BIT(CML_DTYPE_BF16))
#define CML_DSET_COMPLEX (CML_DTYPE_BIT(CML_DTYPE_C64) | CML_DTYPE_BIT(CML_DTYPE_C128))
#define CML_DSET_PACKED                                                                      \
  (CML_DTYPE_BIT(CML_DTYPE_I4) | CML_DTYPE_BIT(CML_DTYPE_U4) | CML_DTYPE_BIT(CML_DTYPE_I2) | \
   CML_DTYPE_BIT(CML_DTYPE_U2))
#define CML_DSET_NUMBER_REAL (CML_DSET_INT | CML_DSET_FLOAT)
#define CML_DSET_NUMBER (CML_DSET_NUMBER_REAL | CML_DSET_COMPLEX)
// Every dtype an array may hold. Packed dtypes are storage types: Parameter, Constant,
// Identity, Reshape, ConvertDType and Bitcast accept them (see each builder).
#define CML_DSET_ALL (CML_DSET_BOOL | CML_DSET_NUMBER)

//===--- ops ---===//

typedef enum cml_op_kind_t {
  CML_OPK_PARAMETER,
  CML_OPK_CONSTANT,
  CML_OPK_UNARY,
  CML_OPK_BINARY,
  CML_OPK_COMPARE,
  CML_OPK_REDUCE,
  CML_OPK_OTHER,
  CML_OPK_CONTROL,
  CML_OPK_COLLECTIVE,
  CML_OPK_FUSED,
  CML_OPK_DYNAMIC,
  CML_OPK_INTERNAL,
  CML_OPK_COUNT
} cml_op_kind_t;

typedef enum cml_op_t {
#define CML_OP(ENUM, NAME, lower, KIND, GROUP, TRAITS, DTYPES, OUT) CML_OP_##ENUM,
#include "cml/ops.def"
  CML_OP_COUNT
} cml_op_t;

// The seed's op name ("Add", "DotGeneral"), or "unknown". Never NULL.
CML_API const char* cml_op_name(cml_op_t op);
// Looks an op up by its seed name; CML_OP_INVALID when unknown.
CML_API cml_op_t cml_op_from_name(const char* name);
// The op's kind (its builder signature in ops.def); CML_OPK_INTERNAL for an out-of-range op.
CML_API cml_op_kind_t cml_op_kind(cml_op_t op);
// The dtypes the op's main operand accepts (from ops.def).
CML_API cml_dtype_set_t cml_op_dtypes(cml_op_t op);
// True for the ops every backend must run (the seed's standard ops: not fused, collective,
// dynamic or internal).
CML_API bool cml_op_is_standard(cml_op_t op);

//===--- the op table: groups and traits (from cml/ops.def) ---===//

// An op's family. One vocabulary for every per-group file: the c kernels
// (src/backends/c/kernels/generic/<group>*.c), the backends' dispatch tables, the compliance
// cases and the differential test. See docs/adding-an-op.md.
typedef enum cml_op_group_t {
  CML_OPG_SOURCE,       // Parameter, Constant, CapturedValue
  CML_OPG_ELEMENTWISE,  // unary, binary, comparison, ConvertDType, Bitcast, Clamp, Where, Iota
  CML_OPG_REDUCE,       // Reduce*, ArgMinMax
  CML_OPG_MOVEMENT,     // Reshape, Transpose, BroadcastInDim, Slice, Pad, Concatenate, Reverse
  CML_OPG_INDEX,        // Gather, Scatter*, DynamicSlice, DynamicUpdateSlice
  CML_OPG_WINDOW,       // ReduceWindow, SelectAndScatter*
  CML_OPG_LINALG,       // Dot, DotGeneral, ConvGeneral
  CML_OPG_SPECIAL,      // FFT, RNGBitGenerator, BatchNorm*
  CML_OPG_CONTROL,      // Call, While, If, Sort, the barriers
  CML_OPG_FUSED,        // Fused*, QuantizedEmbeddingLookup
  CML_OPG_COLLECTIVE,   // AllReduce, AllGather, ...
  CML_OPG_DYNAMIC,      // dynamic-shape ops
  CML_OPG_INTERNAL,     // Invalid, BlockForDotGeneral
  CML_OPG_COUNT
} cml_op_group_t;

// Op traits: a bitset (cml_op_traits). ops.def writes them short (PURE, FOLD, MULTI, CALLEE,
// CALLEE2, ALIAS).
typedef enum cml_op_trait_t {
  // The results depend only on the operands and attributes; no other effect.
  CML_OP_TRAIT_PURE = 1u << 0,
  // A backend may merge two equal nodes and evaluate the op at compile time on constant
  // operands (implies PURE).
  CML_OP_TRAIT_FOLDABLE = 1u << 1,
  // The op may produce more than one result.
  CML_OP_TRAIT_MULTI_OUTPUT = 1u << 2,
  // The op takes one function (attrs->functions[0]): Call, Sort.
  CML_OP_TRAIT_ONE_CALLEE = 1u << 3,
  // The op takes two functions (attrs->functions[0..1]): While, If.
  CML_OP_TRAIT_TWO_CALLEES = 1u << 4,
  // Result i may share storage with operand i (same bytes): Identity, Reshape, Bitcast of the
  // same byte size, the barriers. A backend still checks the per-op condition.
  CML_OP_TRAIT_MAY_ALIAS_INPUT = 1u << 5,
} cml_op_trait_t;
#define CML_OP_TRAIT_HAS_CALLEES (CML_OP_TRAIT_ONE_CALLEE | CML_OP_TRAIT_TWO_CALLEES)

// The op's group; CML_OPG_INTERNAL for an out-of-range op.
CML_API cml_op_group_t cml_op_group(cml_op_t op);
// The group's name, lower case ("elementwise", "window"), or "unknown". Never NULL.
CML_API const char* cml_op_group_name(cml_op_group_t group);
// The op's CML_OP_TRAIT_* bits; 0 for an out-of-range op.
CML_API uint32_t cml_op_traits(cml_op_t op);
// How many functions the op takes (0, 1 or 2), from its traits.
CML_API uint32_t cml_op_callee_count(cml_op_t op);

//===--- values, builders, functions ---===//

// A value produced by an op: an id local to its builder. 0 is invalid.
// Passing a value of one builder to another is detected and fails with INVALID_ARGUMENT
// ("belongs to another builder") as long as fewer than 256 builders are alive at once: the
// ids carry a builder tag that no two live builders share within that limit. With more live
// builders, tags are shared and such misuse may go undetected.
typedef uint32_t cml_value_t;
#define CML_VALUE_INVALID CML_CAST(cml_value_t, 0)

// Creates a builder for |backend| (retained). |name| names the module (may be NULL).
// Returns INVALID_ARGUMENT on NULL |backend|, RESOURCE_EXHAUSTED on allocation failure.
CML_API CML_MUST_USE cml_status_t cml_builder_create(cml_backend_t* backend, const char* name,
                                                     cml_builder_t** out_builder);
// Frees |builder|, its functions and its pending error, and releases its backend. Executables
// compiled from it stay valid. NULL is ignored.
CML_API void cml_builder_destroy(cml_builder_t* builder);

// The first error recorded by |builder| as a new status (the caller frees it), or CML_OK.
CML_API CML_MUST_USE cml_status_t cml_builder_status(const cml_builder_t* builder);

// The builder's main function ("main"); lent, lives with the builder. Never NULL for a valid
// builder.
CML_API cml_function_t* cml_builder_main(cml_builder_t* builder);

// Creates a named top-level function, callable with `cml_op_call`. |name| must be a unique,
// non-empty identifier other than "main". Returns INVALID_ARGUMENT otherwise.
CML_API CML_MUST_USE cml_status_t cml_builder_new_function(cml_builder_t* builder, const char* name,
                                                           cml_function_t** out_function);

// Maximum function nesting depth. Main and named functions are at depth 1; a closure is one
// deeper than its parent, and a function run by an op (Call, While, If, Sort) is one deeper
// than the function holding the op. Closure nesting and call chains count together: main
// calling f, whose If branch calls g, that runs a While, ... The builder keeps every chain of
// nested functions at most this long, so compilers and engines that recurse per level stay
// within a small, bounded stack. Exceeding it fails with INVALID_ARGUMENT (sticky) naming the
// depth and this limit: in `cml_function_new_closure` for a closure nested too deep, and in
// the op (Call, While, If, Sort) whose callee would run too deep.
#define CML_MAX_NESTING_DEPTH 256

// Creates a closure of |parent|: a local function that may use values of |parent| and its
// ancestors (they become implicit captures). Closures are passed to While, If and Sort,
// which must be called in |parent|. Returns FAILED_PRECONDITION (not sticky) once |parent|
// has returned or the builder compiled, and INVALID_ARGUMENT (sticky: the builder records it)
// when the closure would be nested deeper than CML_MAX_NESTING_DEPTH.
CML_API CML_MUST_USE cml_status_t cml_function_new_closure(cml_function_t* parent,
                                                           cml_function_t** out_closure);

// Accessors that never fail (NULL |function| gives "" or NULL): the function's name ("" for
// closures; lent), its builder (lent; NULL once the builder is destroyed) and its parent (NULL
// unless it is a closure).
CML_API const char* cml_function_name(const cml_function_t* function);
CML_API cml_builder_t* cml_function_builder(const cml_function_t* function);
CML_API cml_function_t* cml_function_parent(const cml_function_t* function);
// Number of outputs given to `cml_function_return`, 0 before it.
CML_API size_t cml_function_output_count(const cml_function_t* function);

// Declares the next parameter of |function| (the order of calls is the input order).
// |name| may be NULL or "" (a name "p<i>" is made up for parameter i, or "p<i>_<k>" when the
// function already has a parameter of that name); names must be unique within the function.
CML_API cml_value_t cml_parameter(cml_function_t* function, const char* name,
                                  const cml_shape_t* shape);

// A constant array: |data| holds cml_shape_byte_size(shape) bytes, copied into the graph.
CML_API cml_value_t cml_constant(cml_function_t* function, const cml_shape_t* shape,
                                 const void* data);
// Scalar constants of |dtype| from a double or an int64 (converted as ConvertDType would).
CML_API cml_value_t cml_constant_scalar_f64(cml_function_t* function, cml_dtype_t dtype,
                                            double value);
CML_API cml_value_t cml_constant_scalar_i64(cml_function_t* function, cml_dtype_t dtype,
                                            int64_t value);

// Sets the outputs of |function| (exactly once, at least one output) and freezes it.
// Returns FAILED_PRECONDITION when |function| has already returned or the builder compiled:
// that misuse is reported to the caller only, the builder keeps its state (a complete module
// stays compilable). Otherwise returns the builder's first error if one is pending, or
// INVALID_ARGUMENT for invalid or foreign values (recorded in the builder, like op errors).
// Ops on a returned function (`cml_parameter`, `cml_op_*`) have no status of their own: they
// record FAILED_PRECONDITION in the builder.
CML_API CML_MUST_USE cml_status_t cml_function_return(cml_function_t* function,
                                                      const cml_value_t* outputs, size_t count);

// The shape of |value| (false, and |out_shape| zeroed, when the value is invalid).
CML_API bool cml_builder_value_shape(const cml_builder_t* builder, cml_value_t value,
                                     cml_shape_t* out_shape);

//===--- generated elementwise, comparison and reduction builders ---===//
// Unary:   cml_value_t cml_op_<name>(cml_function_t* f, cml_value_t x);
// Binary:  cml_value_t cml_op_<name>(cml_function_t* f, cml_value_t lhs, cml_value_t rhs);
//          (Atan2: lhs = y, rhs = x. Rem: sign of the dividend. Complex: (real, imag).
//          Integer division and remainder by zero, and INT_MIN / -1, follow XLA's CPU plugin:
//          x / 0 = -1 (all bits set for unsigned), x % 0 = x, INT_MIN / -1 = INT_MIN,
//          INT_MIN % -1 = 0. Shift counts >= bit width, and negative counts, give 0, or -1 for
//          arithmetic right shifts of negative values. ShiftRightArithmetic reads unsigned
//          values as two's complement, as XLA does: it fills with the top bit (Uint8 0xFE >> 1
//          is 0xFF; by 8 or more, 0xFF). Integer Pow with a negative exponent:
//          1 for a base of 1, +-1 by the exponent's parity for -1, else 0.)
// Compare: cml_value_t cml_op_<name>(cml_function_t* f, cml_value_t lhs, cml_value_t rhs);
//          result is Bool. *TotalOrder: -NaN < -Inf < ... < -0 < +0 < ... < +Inf < +NaN.
// Reduce:  cml_value_t cml_op_<name>(cml_function_t* f, cml_value_t x, const int64_t* axes,
//                                    size_t axis_count);   axis_count 0 reduces every axis.
// NOTE: the name is pasted inside CML_OP itself, so an op name that is also a macro elsewhere
// (`complex` from <complex.h>, `log` or `exp` from <tgmath.h>) is never expanded.
#define CML_OP_DECLARE_PARAMETER(fn)
#define CML_OP_DECLARE_CONSTANT(fn)
#define CML_OP_DECLARE_UNARY(fn) CML_API cml_value_t fn(cml_function_t* f, cml_value_t x);
#define CML_OP_DECLARE_BINARY(fn) \
  CML_API cml_value_t fn(cml_function_t* f, cml_value_t lhs, cml_value_t rhs);
#define CML_OP_DECLARE_COMPARE(fn) CML_OP_DECLARE_BINARY(fn)
#define CML_OP_DECLARE_REDUCE(fn) \
  CML_API cml_value_t fn(cml_function_t* f, cml_value_t x, const int64_t* axes, size_t axis_count);
#define CML_OP_DECLARE_OTHER(fn)
#define CML_OP_DECLARE_CONTROL(fn)
#define CML_OP_DECLARE_COLLECTIVE(fn)
#define CML_OP_DECLARE_FUSED(fn)
#define CML_OP_DECLARE_DYNAMIC(fn)
#define CML_OP_DECLARE_INTERNAL(fn)
#define CML_OP(ENUM, NAME, lower, KIND, GROUP, TRAITS, DTYPES, OUT) \
  CML_OP_DECLARE_##KIND(cml_op_##lower)
#include "cml/ops.def"

// The same builders by op: |op| must be of the matching kind (INVALID_ARGUMENT otherwise).
// Reductions of Float16 / BFloat16 sum in Float32 and round once to the output dtype on c and
// xla:cpu (a mean of a half tensor can still overflow: divide before summing, or convert); the
// order of a float sum is the backend's (c: docs/elementwise.md, docs/determinism.md).
CML_API cml_value_t cml_op_unary(cml_function_t* f, cml_op_t op, cml_value_t x);
CML_API cml_value_t cml_op_binary(cml_function_t* f, cml_op_t op, cml_value_t lhs, cml_value_t rhs);
CML_API cml_value_t cml_op_reduce(cml_function_t* f, cml_op_t op, cml_value_t x,
                                  const int64_t* axes, size_t axis_count);

//===--- other standard ops ---===//

// ConvertDType: element-wise conversion. Float -> int truncates toward zero and saturates
// (NaN -> 0); int -> float rounds to nearest even; to Bool: x != 0; from Bool: 0 or 1.
// Complex -> real keeps the real part. Packed int dtypes are accepted both ways. To x's own
// dtype it returns x (in a closure, the closure's capture of a parent's x) and adds no node.
CML_API cml_value_t cml_op_convert_dtype(cml_function_t* f, cml_value_t x, cml_dtype_t dtype);

// Bitcast: reinterprets the bits. A smaller target dtype appends a trailing axis of
// src_bits/dst_bits; a larger one requires the last axis to equal dst_bits/src_bits and drops
// it. Little-endian. Bool is the exception: a Bitcast to Bool gives true for each nonzero byte
// (a Bool holds only 0 or 1), so a round trip through Bool does not keep other byte values.
CML_API cml_value_t cml_op_bitcast(cml_function_t* f, cml_value_t x, cml_dtype_t dtype);

// Clamp(min, x, max): |min| and |max| are scalars or have x's shape.
CML_API cml_value_t cml_op_clamp(cml_function_t* f, cml_value_t min, cml_value_t x,
                                 cml_value_t max);

// Where(cond, on_true, on_false): cond is Bool, scalar or of the output shape; on_true and
// on_false share a dtype and are scalars or of the output shape.
CML_API cml_value_t cml_op_where(cml_function_t* f, cml_value_t cond, cml_value_t on_true,
                                 cml_value_t on_false);

// Reshape to |dims| (|rank| entries) with the same element count, in row-major order. With
// dynamic axes (cml/shape.h) the operand's dynamic axes must reappear in order: CML_DYNAMIC_DIM
// in |dims| takes the next one, and the static dims must hold as many elements on both sides.
CML_API cml_value_t cml_op_reshape(cml_function_t* f, cml_value_t x, const int64_t* dims,
                                   int32_t rank);
// out.dims[i] = x.dims[permutation[i]].
CML_API cml_value_t cml_op_transpose(cml_function_t* f, cml_value_t x, const int64_t* permutation,
                                     int32_t rank);
// |axes|[i] is the output axis of x's axis i: strictly increasing, len == rank(x); each x axis
// is 1 or equal to the target dim.
CML_API cml_value_t cml_op_broadcast_in_dim(cml_function_t* f, cml_value_t x,
                                            const int64_t* out_dims, int32_t out_rank,
                                            const int64_t* axes, int32_t axis_count);
// Concatenates |count| (>= 1) operands of one dtype and rank along |axis|; the other axes must
// match.
CML_API cml_value_t cml_op_concatenate(cml_function_t* f, int64_t axis, const cml_value_t* operands,
                                       size_t count);
// Limits are exclusive; |strides| may be NULL (all 1).
CML_API cml_value_t cml_op_slice(cml_function_t* f, cml_value_t x, const int64_t* starts,
                                 const int64_t* limits, const int64_t* strides, int32_t rank);
// Reverses the element order along each of the |axis_count| distinct |axes|.
CML_API cml_value_t cml_op_reverse(cml_function_t* f, cml_value_t x, const int64_t* axes,
                                   size_t axis_count);
// Counts 0, 1, 2, ... along |axis| of |shape|. Each value is its index converted to the dtype
// as ConvertDType converts an Int64: an integer dtype too narrow for the axis wraps (Uint8 over
// 300 elements ends 43, Int32 past 2^31 turns negative), as XLA's iota does; a float dtype
// rounds.
CML_API cml_value_t cml_op_iota(cml_function_t* f, const cml_shape_t* shape, int64_t axis);

typedef struct cml_pad_axis_t {
  int64_t low;       // may be negative (crop)
  int64_t high;      // may be negative (crop)
  int64_t interior;  // >= 0
} cml_pad_axis_t;
// |fill| is a scalar of x's dtype. Axes past |axis_count| are not padded.
CML_API cml_value_t cml_op_pad(cml_function_t* f, cml_value_t x, cml_value_t fill,
                               const cml_pad_axis_t* axes, size_t axis_count);

// |starts| holds one integer scalar per axis of x (all of one integer dtype); each start is
// clamped to [0, dim - size].
CML_API cml_value_t cml_op_dynamic_slice(cml_function_t* f, cml_value_t x,
                                         const cml_value_t* starts, const int64_t* sizes,
                                         int32_t rank);
// |x| with |update| written at |starts| (one integer scalar per axis, clamped as above so the
// whole update fits).
CML_API cml_value_t cml_op_dynamic_update_slice(cml_function_t* f, cml_value_t x,
                                                cml_value_t update, const cml_value_t* starts,
                                                int32_t rank);

// Gather, with XLA's dimension numbers (no batching dims). Out-of-range starts are clamped.
typedef struct cml_gather_dims_t {
  int64_t index_vector_axis;  // may equal rank(indices): an implicit trailing size-1 axis
  int32_t offset_output_axis_count;
  int64_t offset_output_axes[CML_MAX_RANK];
  int32_t collapsed_slice_axis_count;
  int64_t collapsed_slice_axes[CML_MAX_RANK];
  int32_t start_index_map_count;
  int64_t start_index_map[CML_MAX_RANK];
  int32_t slice_size_count;  // == rank(operand)
  int64_t slice_sizes[CML_MAX_RANK];
  bool indices_are_sorted;
} cml_gather_dims_t;
CML_API cml_value_t cml_op_gather(cml_function_t* f, cml_value_t operand, cml_value_t indices,
                                  const cml_gather_dims_t* dims);

// Scatter with XLA's dimension numbers; |op| is CML_OP_SCATTER_SUM, _MAX or _MIN. Update
// windows that fall (partly) out of bounds are skipped, as XLA does.
typedef struct cml_scatter_dims_t {
  int64_t index_vector_axis;
  int32_t update_window_axis_count;
  int64_t update_window_axes[CML_MAX_RANK];
  int32_t inserted_window_axis_count;
  int64_t inserted_window_axes[CML_MAX_RANK];
  int32_t scatter_axes_to_operand_axes_count;
  int64_t scatter_axes_to_operand_axes[CML_MAX_RANK];
  bool indices_are_sorted;
  bool unique_indices;
} cml_scatter_dims_t;
CML_API cml_value_t cml_op_scatter(cml_function_t* f, cml_op_t op, cml_value_t operand,
                                   cml_value_t indices, cml_value_t updates,
                                   const cml_scatter_dims_t* dims);
// The same, with |op| fixed.
CML_API cml_value_t cml_op_scatter_sum(cml_function_t* f, cml_value_t operand, cml_value_t indices,
                                       cml_value_t updates, const cml_scatter_dims_t* dims);
CML_API cml_value_t cml_op_scatter_max(cml_function_t* f, cml_value_t operand, cml_value_t indices,
                                       cml_value_t updates, const cml_scatter_dims_t* dims);
CML_API cml_value_t cml_op_scatter_min(cml_function_t* f, cml_value_t operand, cml_value_t indices,
                                       cml_value_t updates, const cml_scatter_dims_t* dims);

// ConvGeneral. Zero-valued strides/dilations mean 1, group counts <= 1 mean no grouping;
// padding defaults to 0. Spatial arrays have |spatial_count| entries.
typedef struct cml_conv_config_t {
  int32_t spatial_count;
  int64_t input_batch_axis, input_channel_axis, input_spatial_axes[CML_MAX_RANK];
  int64_t kernel_input_channel_axis, kernel_output_channel_axis, kernel_spatial_axes[CML_MAX_RANK];
  int64_t output_batch_axis, output_channel_axis, output_spatial_axes[CML_MAX_RANK];
  int64_t strides[CML_MAX_RANK];
  int64_t padding_low[CML_MAX_RANK], padding_high[CML_MAX_RANK];
  int64_t input_dilations[CML_MAX_RANK];
  int64_t kernel_dilations[CML_MAX_RANK];
  int64_t channel_group_count;  // "feature group count"
  int64_t batch_group_count;
  cml_dtype_t output_dtype;  // CML_DTYPE_INVALID: the input dtype
} cml_conv_config_t;
CML_API cml_value_t cml_op_conv_general(cml_function_t* f, cml_value_t input, cml_value_t kernel,
                                        const cml_conv_config_t* config);

// The usual axis layouts of a convolution with |spatial_count| spatial axes (S = the spatial
// axes in order):
typedef enum cml_conv_layout_t {
  // Channels last (TensorFlow, GoMLX, JAX's default): input [N, S..., C], kernel
  // [S..., in, out], output [N, S..., C].
  CML_CONV_LAYOUT_CHANNELS_LAST = 0,
  // Channels first (PyTorch): input [N, C, S...], kernel [out, in, S...], output [N, C, S...].
  CML_CONV_LAYOUT_CHANNELS_FIRST = 1,
  CML_CONV_LAYOUT_COUNT
} cml_conv_layout_t;
// Sets |config| to a stride-1, unpadded, undilated, ungrouped convolution in |layout| (set
// strides, padding and the rest afterwards). An unknown layout or a |spatial_count| outside
// 0..CML_MAX_RANK - 2 leaves the axes zeroed with |spatial_count| as given, so that
// cml_op_conv_general reports it. NULL |config| is ignored.
CML_API void cml_conv_config_init(cml_conv_config_t* config, int32_t spatial_count,
                                  cml_conv_layout_t layout);

// Reduction type for ReduceWindow and AllReduce (the seed's ReduceOpType values).
typedef enum cml_reduce_type_t {
  CML_REDUCE_UNDEFINED = 0,
  CML_REDUCE_SUM = 1,
  CML_REDUCE_PRODUCT = 2,
  CML_REDUCE_MAX = 3,
  CML_REDUCE_MIN = 4,
  CML_REDUCE_TYPE_COUNT
} cml_reduce_type_t;
// "Sum", "Product", ... or "unknown". Never NULL.
CML_API const char* cml_reduce_type_name(cml_reduce_type_t type);

// Window configuration: |window_dims| for every axis (rank entries). Zero strides mean "same
// as the window" (the seed's default), zero dilations mean 1, padding defaults to 0. Negative
// padding (cropping) is accepted on axes whose window is 2 or more; with a window of size 1 it is
// INVALID_ARGUMENT (XLA's compiler ends the process on it; crop with cml_op_slice first).
typedef struct cml_window_config_t {
  int32_t rank;
  int64_t window_dims[CML_MAX_RANK];
  int64_t strides[CML_MAX_RANK];
  int64_t input_dilations[CML_MAX_RANK];
  int64_t window_dilations[CML_MAX_RANK];
  int64_t padding_low[CML_MAX_RANK], padding_high[CML_MAX_RANK];
} cml_window_config_t;
CML_API cml_value_t cml_op_reduce_window(cml_function_t* f, cml_value_t x, cml_reduce_type_t type,
                                         const cml_window_config_t* config);

// SelectAndScatter: for each window of |operand| selects the max (min) element (first one on
// ties, in row-major order) and adds the matching |source| element there; Sum adds it to every
// element of the window. On xla, where the window has padding, a tie may go to another of the
// tied elements (XLA's own choice; docs/differential.md, item 7).
// |op|: CML_OP_SELECT_AND_SCATTER_MAX/_MIN/_SUM. Dilations must be zero (unused).
CML_API cml_value_t cml_op_select_and_scatter(cml_function_t* f, cml_op_t op, cml_value_t operand,
                                              cml_value_t source,
                                              const cml_window_config_t* config);

// DotGeneral. Output axes: batch..., lhs free..., rhs free... (in the given/ascending order).
typedef struct cml_dot_config_t {
  int32_t lhs_contracting_count;
  int64_t lhs_contracting_axes[CML_MAX_RANK];
  int32_t lhs_batch_count;
  int64_t lhs_batch_axes[CML_MAX_RANK];
  int32_t rhs_contracting_count;
  int64_t rhs_contracting_axes[CML_MAX_RANK];
  int32_t rhs_batch_count;
  int64_t rhs_batch_axes[CML_MAX_RANK];
  // CML_DTYPE_INVALID: the input dtype. A Float16 / BFloat16 accumulator is computed in Float32
  // and rounded once at the end on c and xla:cpu (docs/gemm.md); integer accumulators wrap.
  cml_dtype_t accumulator_dtype;
  cml_dtype_t output_dtype;  // CML_DTYPE_INVALID: the accumulator dtype
} cml_dot_config_t;
CML_API cml_value_t cml_op_dot_general(cml_function_t* f, cml_value_t lhs, cml_value_t rhs,
                                       const cml_dot_config_t* config);
// XLA Dot: vector.vector -> scalar, matrix.vector, vector.matrix, matrix.matrix.
CML_API cml_value_t cml_op_dot(cml_function_t* f, cml_value_t lhs, cml_value_t rhs);

// ArgMinMax along |axis|: NaN wins, ties pick the first index; an empty |axis| gives 0.
// |out_dtype| is an integer dtype.
CML_API cml_value_t cml_op_arg_min_max(cml_function_t* f, cml_value_t x, int64_t axis,
                                       cml_dtype_t out_dtype, bool is_min);

// RNGBitGenerator with XLA's Philox (4x32-10): |state| is Uint64[3] ([key, counter_lo,
// counter_hi] as XLA uses it); produces random bits of |shape| (an int, uint or float dtype:
// float outputs get raw bits) and the next state. Outputs: [new_state, values].
CML_API bool cml_op_rng_bit_generator(cml_function_t* f, cml_value_t state,
                                      const cml_shape_t* shape, cml_value_t* out_new_state,
                                      cml_value_t* out_values);

typedef enum cml_fft_type_t {
  CML_FFT_FORWARD = 0,       // complex -> complex
  CML_FFT_INVERSE = 1,       // complex -> complex, scaled by 1/n
  CML_FFT_FORWARD_REAL = 2,  // real -> complex, last axis L -> L/2+1
  CML_FFT_INVERSE_REAL = 3,  // complex (L/2+1) -> real L
  CML_FFT_TYPE_COUNT
} cml_fft_type_t;
// FFT over the trailing |length_count| (1..3) axes, with those axes' lengths in |lengths|.
CML_API cml_value_t cml_op_fft(cml_function_t* f, cml_value_t x, cml_fft_type_t type,
                               const int64_t* lengths, size_t length_count);

// BatchNormInference: (x - mean) / sqrt(variance + epsilon) * scale + offset, where scale,
// offset, mean and variance are rank-1 over x's |feature_axis|.
CML_API cml_value_t cml_op_batch_norm_inference(cml_function_t* f, cml_value_t x, cml_value_t scale,
                                                cml_value_t offset, cml_value_t mean,
                                                cml_value_t variance, float epsilon,
                                                int64_t feature_axis);
// Outputs: [normalized, batch_mean, batch_variance].
CML_API bool cml_op_batch_norm_training(cml_function_t* f, cml_value_t x, cml_value_t scale,
                                        cml_value_t offset, float epsilon, int64_t feature_axis,
                                        cml_value_t out_values[3]);
// Outputs: [grad_operand, grad_scale, grad_offset].
CML_API bool cml_op_batch_norm_gradient(cml_function_t* f, cml_value_t x, cml_value_t scale,
                                        cml_value_t mean, cml_value_t variance,
                                        cml_value_t grad_output, float epsilon,
                                        int64_t feature_axis, cml_value_t out_values[3]);

// Identity of |count| operands that the compiler may not optimize across.
CML_API bool cml_op_optimization_barrier(cml_function_t* f, const cml_value_t* operands,
                                         size_t count, cml_value_t* out_values);
// Identity of |x| ordered after all |deps|.
CML_API cml_value_t cml_op_scheduling_barrier(cml_function_t* f, cml_value_t x,
                                              const cml_value_t* deps, size_t dep_count);

//===--- functions and control flow ---===//
// Multi-output builders write their results to |out_values| (capacity as documented) and
// return true; on failure they return false, write CML_VALUE_INVALID, and the error sticks to
// the builder. |out_values| may be the operand array itself (Call, Sort, While: e.g.
// cml_op_while(f, cond, body, state, n, state)); the operands are read first. Closures and
// callees must have been returned (`cml_function_return`) first. A callee runs one level
// deeper than |f|: an op whose callee would run deeper than CML_MAX_NESTING_DEPTH fails with
// INVALID_ARGUMENT naming the op, the depth and the limit.

// Calls |callee| (a named function or a closure of |f|) with |inputs|; writes
// cml_function_output_count(callee) outputs.
CML_API bool cml_op_call(cml_function_t* f, cml_function_t* callee, const cml_value_t* inputs,
                         size_t input_count, cml_value_t* out_values);

// Sorts |count| same-dimension operands along |axis| with |comparator|, a closure of |f| that
// takes 2*count scalar parameters in interleaved order (lhs_0, rhs_0, lhs_1, rhs_1, ...) and
// returns a scalar Bool "lhs before rhs". Writes |count| outputs. The comparator should be a
// strict weak order; otherwise the result is some permutation that may differ between backends.
// NaNs: a comparator that is a single LessThan (GreaterThan) of the first operand's lhs and rhs
// (in either order, operand 0 being the key) places NaNs after (before) every other value, in
// their stable order, as XLA's CPU runtime does; the comparison alone finds a NaN neither
// before nor after anything, and any other comparator of NaN keys leaves their place to the
// backend. The TotalOrder comparisons put -NaN first and +NaN last.
CML_API bool cml_op_sort(cml_function_t* f, cml_function_t* comparator, int64_t axis,
                         bool is_stable, const cml_value_t* operands, size_t count,
                         cml_value_t* out_values);

// While: |cond| (state -> scalar Bool) and |body| (state -> state of the same shapes), both
// closures of |f|. Writes |count| outputs (the final state).
CML_API bool cml_op_while(cml_function_t* f, cml_function_t* cond, cml_function_t* body,
                          const cml_value_t* initial_state, size_t count, cml_value_t* out_values);

// If: |pred| is a scalar Bool; both branches are parameterless closures of |f| with outputs
// of the same shapes. Writes cml_function_output_count(true_branch) outputs.
CML_API bool cml_op_if(cml_function_t* f, cml_value_t pred, cml_function_t* true_branch,
                       cml_function_t* false_branch, cml_value_t* out_values);

//===--- dynamic-shape ops (backends with capabilities.dynamic_axes; cml/shape.h) ---===//
// DynamicDimensionSize: the size of |axis| of |x| as an Int32 scalar (its binding for a
// dynamic axis). DynamicShape: every size of |x| as Int32[rank].
CML_API cml_value_t cml_op_dynamic_dimension_size(cml_function_t* f, cml_value_t x, int64_t axis);
CML_API cml_value_t cml_op_dynamic_shape(cml_function_t* f, cml_value_t x);
// DynamicReshape: axis i of the result is the static size dims[i] (names[i] NULL), or the
// dynamic axis names[i] (dims[i] = CML_DYNAMIC_DIM). A name that is a dynamic axis of |x| keeps
// its size; at most one other name is inferred: its size is x's element count over the other
// axes' at execution (INVALID_ARGUMENT then unless it divides exactly). A static |x| gives a
// static result at build time (a plain Reshape). cml_op_dynamic_reshape_values sizes axes by
// runtime values.
CML_API cml_value_t cml_op_dynamic_reshape(cml_function_t* f, cml_value_t x, const int64_t* dims,
                                           const char* const* names, int32_t rank);
// DynamicReshape whose named axis i takes its size from |values|[i] (CML_VALUE_INVALID: none,
// as in cml_op_dynamic_reshape; |values| NULL: none), an Int32/Int64 scalar computed from input
// shapes only: Constant, DynamicDimensionSize, DynamicShape, Slice, Reshape, integer
// ConvertDType, Add, Sub, Mul, Div, Max, Min (INVALID_ARGUMENT naming any other op at build
// time). It is evaluated on the host per binding set; INVALID_ARGUMENT at execution for a size
// <= 0, one that contradicts the name's binding, or an element count mismatch.
CML_API cml_value_t cml_op_dynamic_reshape_values(cml_function_t* f, cml_value_t x,
                                                  const int64_t* dims, const char* const* names,
                                                  const cml_value_t* values, int32_t rank);

//===--- compile and execute ---===//

// Compiles the module recorded by |builder|. Main must have returned. After this call the
// builder accepts no more ops (FAILED_PRECONDITION) and only needs `cml_builder_destroy`.
// Returns the builder's first error if any, or the backend's compile error.
CML_API CML_MUST_USE cml_status_t cml_builder_compile(cml_builder_t* builder,
                                                      cml_executable_t** out_executable);

// Adds a reference to |executable| and returns it (NULL stays NULL). Thread-safe.
CML_API cml_executable_t* cml_executable_retain(cml_executable_t* executable);
// Drops a reference; the last one frees the executable. NULL is ignored. Thread-safe.
CML_API void cml_executable_release(cml_executable_t* executable);

// The parameters and outputs of main: counts (0 for NULL), and the name or shape of entry |i|
// (lent, living with the executable; NULL for NULL or an out-of-range |i|). Thread-safe.
CML_API size_t cml_executable_input_count(const cml_executable_t* executable);
CML_API const char* cml_executable_input_name(const cml_executable_t* executable, size_t i);
CML_API const cml_shape_t* cml_executable_input_shape(const cml_executable_t* executable, size_t i);
CML_API size_t cml_executable_output_count(const cml_executable_t* executable);
CML_API const cml_shape_t* cml_executable_output_shape(const cml_executable_t* executable,
                                                       size_t i);

// Writes a readable listing of the program the backend runs for |executable| to |out| (a
// FILE*): on c, the module it plans, which for an AutoSharding module is the SPMD module its
// partitioner made (per-device shapes and the collectives it inserted, docs/partitioner.md); on
// xla, the StableHLO text given to XLA's compiler (a module with dynamic axes: the module, as
// it compiles once per binding set). A backend without a listing of its own writes the module
// (cml_module_dump). On c the listing holds every node of that module, including nodes whose
// results nothing reads, which the plan drops (they do not run), then the plan: per function
// the steps that run (kernel calls, fused loops with their members and how each input is read,
// inline scalar steps) and what the compile-time optimizations did. INVALID_ARGUMENT for a NULL
// argument; UNAVAILABLE when the listing could not be written (a stream not open for writing,
// a full disk); a backend's failure otherwise.
CML_API CML_MUST_USE cml_status_t cml_executable_dump(const cml_executable_t* executable,
                                                      void* out);

// Executes on |device| (the default device for portable executables). |inputs| are in
// parameter order; |donate| (may be NULL) marks inputs whose storage the execution may reuse:
// donated buffers become invalid (FAILED_PRECONDITION on any later use) and must still be
// released. Writes cml_executable_output_count() new buffers to |out_results| (the caller
// releases them). Returns INVALID_ARGUMENT for a wrong input count, shape or dtype (naming the
// parameter), OUT_OF_RANGE for a bad device, FAILED_PRECONDITION for a donated input (a donated
// buffer stays allocated until its last release, so this check is sound), and FAILED_PRECONDITION
// consuming nothing for an input to donate that another thread's execution or copy reads at that
// moment (a donation never takes storage a running read uses). Passing a buffer whose
// last reference was released is undefined behaviour, as is using memory after `free`: the
// buffer no longer exists and nothing can be checked about it (retain buffers you still need).
// Thread-safe.
// For an executable on N > 1 device slots (SPMD or AutoSharding, cml/distributed.h) |device| is
// ignored: |inputs| holds N * input_count buffers, device-major (`inputs[slot * input_count +
// i]`), each on the backend device of its slot (cml_builder_device_assignment; slot j by
// default), of the per-device shape cml_executable_input_shape; |out_results| receives
// N * output_count buffers, device-major too.
CML_API CML_MUST_USE cml_status_t cml_executable_execute(cml_executable_t* executable,
                                                         cml_buffer_t* const* inputs,
                                                         size_t input_count, const bool* donate,
                                                         int device, cml_buffer_t** out_results);

//===--- cancellation and deadlines ---===//
// A long or endless execution (a While whose condition never turns false) is stopped from
// outside with a cancel token, or bounded with a timeout, both given in the execute options.
//
//   cml_cancel_token_t* token = NULL;
//   CML_RETURN_IF_ERROR(cml_cancel_token_create(cml_allocator_system(), &token));
//   cml_execute_options_t opts;
//   cml_execute_options_init(&opts);
//   opts.cancel_token = token;        // another thread may call cml_cancel_token_cancel(token)
//   opts.timeout_ns = 50 * 1000000;   // 50 ms
//   st = cml_executable_execute_with_options(exe, inputs, 2, &opts, out);
//   // CML_STATUS_CANCELLED or CML_STATUS_DEADLINE_EXCEEDED: no outputs, nothing to free.
//   cml_cancel_token_destroy(token);  // once no execution uses it any more
//
// Where a stop is honoured: every execution checks the token and the deadline before it starts
// (after argument checks, before the backend runs anything), on every backend. Backends whose
// running executions can be interrupted (`cml_executable_is_interruptible`; the `c` backend)
// also check between ops and at every Call, If, While iteration and closure boundary, so an
// endless While stops within about one loop iteration (plus up to 64 cheap iterations before a
// deadline is seen: the clock is read every 64 checks, and before each larger op). The `xla`
// backend checks before dispatch, and for a module with dynamic axes again after compiling a
// new binding set (which can take seconds; the compiled specialization is kept): a running
// PJRT execution or compile cannot be interrupted.

// A thread-safe, one-way flag that asks executions to stop. Single owner (create/destroy).
typedef struct cml_cancel_token_t cml_cancel_token_t;

// Creates a token in the "not cancelled" state, allocated with |allocator| (pass
// cml_allocator_system() for the default); it frees itself with the same allocator. Returns
// INVALID_ARGUMENT for NULL |out_token|, RESOURCE_EXHAUSTED when out of memory. Thread-safe.
CML_API CML_MUST_USE cml_status_t cml_cancel_token_create(cml_allocator_t allocator,
                                                          cml_cancel_token_t** out_token);
// Frees |token| (NULL is ignored). No execution may be using it any more: destroy it only
// after every execute call that received it has returned.
CML_API void cml_cancel_token_destroy(cml_cancel_token_t* token);
// Cancels: every execution using |token|, running or started later, stops at its next check
// with CML_STATUS_CANCELLED. Irreversible (create a new token for new work). Cheap (one atomic
// store), thread-safe and async-signal-safe; NULL is ignored.
CML_API void cml_cancel_token_cancel(cml_cancel_token_t* token);
// Whether |token| was cancelled (false for NULL). Thread-safe.
CML_API bool cml_cancel_token_is_cancelled(const cml_cancel_token_t* token);

// Options of cml_executable_execute_with_options. Initialize with cml_execute_options_init,
// then set what differs from the defaults; fields are read during the call only.
typedef struct cml_execute_options_t {
  size_t struct_size;  // set by cml_execute_options_init (lets the struct grow compatibly)
  // Inputs whose storage the execution may reuse (NULL: none), as |donate| of
  // cml_executable_execute. Donated inputs are consumed only when the execution succeeds.
  const bool* donate;
  // The device to run on (default 0); ignored by SPMD executables, as for
  // cml_executable_execute.
  int device;
  // Relative deadline in nanoseconds, measured from the call's start on a monotonic clock; 0
  // (the default) means none. Past it the execution stops with CML_STATUS_DEADLINE_EXCEEDED.
  int64_t timeout_ns;
  // Lent: stops the execution with CML_STATUS_CANCELLED once cancelled (NULL: none). It must
  // outlive the call.
  cml_cancel_token_t* cancel_token;
} cml_execute_options_t;

// Sets |options| to the defaults (no donation, device 0, no deadline, no token) and its
// struct_size. NULL is ignored.
CML_API void cml_execute_options_init(cml_execute_options_t* options);

// cml_executable_execute with options: donation, device, a deadline and a cancel token. NULL
// |options| means the defaults. Returns what cml_executable_execute returns, plus
// INVALID_ARGUMENT for a negative timeout_ns or a struct_size this library does not know
// (smaller than the first layout's, or larger than this library's: newer headers; a struct
// from older headers, shorter, is accepted and its missing fields take their defaults),
// CML_STATUS_CANCELLED when the token was (or becomes) cancelled, and
// CML_STATUS_DEADLINE_EXCEEDED when the deadline passed, both at the checks described above.
// On any failure no output is written (|out_results| holds NULLs) and nothing is left for the
// caller to free; a cancelled or timed-out execution consumes no donated input either.
// Thread-safe: executions with separate tokens (or sharing one) may run at once.
CML_API CML_MUST_USE cml_status_t cml_executable_execute_with_options(
    cml_executable_t* executable, cml_buffer_t* const* inputs, size_t input_count,
    const cml_execute_options_t* options, cml_buffer_t** out_results);

// Whether a running execution of |executable| stops at a cancellation or deadline (true), or
// only checks them before it starts (false; e.g. xla, and plug-ins built against backend API
// 1.0). False for NULL. Thread-safe.
CML_API bool cml_executable_is_interruptible(const cml_executable_t* executable);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_GRAPH_H_
