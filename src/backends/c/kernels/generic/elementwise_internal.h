// SPDX-License-Identifier: Apache-2.0
// kernels/generic/elementwise_internal.h: private interfaces shared by the elementwise and
// reduce kernel files: the strided loop driver, per-op kernel tables and scalar helpers with
// XLA CPU semantics (wrapping integers, NaN-propagating max/min, total order keys).
#ifndef CML_BACKENDS_C_KERNELS_GENERIC_ELEMENTWISE_INTERNAL_H_
#define CML_BACKENDS_C_KERNELS_GENERIC_ELEMENTWISE_INTERNAL_H_

#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "backends/c/cmlc.h"
#include "backends/c/kernels/common.h"

// glibc's <complex.h> defines CMPLX / CMPLXF only for GCC; clang has the same builtin.
#ifndef CMPLXF
#define CMPLXF(x, y) __builtin_complex((float)(x), (float)(y))
#endif
#ifndef CMPLX
#define CMPLX(x, y) __builtin_complex((double)(x), (double)(y))
#endif

//===--- inner loop kernels ---===//

// An elementwise inner loop: writes |n| consecutive output elements at |out| from |in|[j],
// each read with element stride |stride|[j] (0: one value broadcast, 1: consecutive). Unary
// loops (one input) read it consecutively whatever |stride|[0] says: a caller with one
// broadcast element expands it first (loop_fusion.c).
typedef void (*cmlc_ew_fn)(void* out, const void* const* in, const int64_t* stride, int64_t n);

// Kernel tables: the inner loop for |op| whose (first value) operand has |dtype|, or NULL.
cmlc_ew_fn cmlc_ew_unary_fn(cml_op_t op, cml_dtype_t dtype);
// Binary, compare, Complex and Clamp (operand dtype = x's dtype).
cmlc_ew_fn cmlc_ew_binary_fn(cml_op_t op, cml_dtype_t dtype);
// Where, by element size in bytes (1, 2, 4, 8, 16).
cmlc_ew_fn cmlc_ew_where_fn(size_t element_size);

// Runs |fn| over the output of |args| (output 0) with the inputs listed in |input_index|
// (|count| of them, 1..3), each a scalar, of the output's shape, or of the output's rank with
// size-1 axes (restricted broadcasting). Splits the work over the pool by output elements.
cml_status_t cmlc_ew_drive(const cmlc_kernel_args_t* args, cmlc_ew_fn fn, int count,
                           const int* input_index);

// ConvertDType / Bitcast / Iota / Identity runners (elementwise_convert.c).
cml_status_t cmlc_ew_run_convert(const cmlc_kernel_args_t* args);
cml_status_t cmlc_ew_run_bitcast(const cmlc_kernel_args_t* args);
cml_status_t cmlc_ew_run_iota(const cmlc_kernel_args_t* args);
cml_status_t cmlc_ew_run_identity(const cmlc_kernel_args_t* args);
bool cmlc_ew_convert_supported(cml_dtype_t from, cml_dtype_t to);

// Writes |n| int64 values as |dtype| (ints wrap, floats round to nearest even) at element
// offset |start| of |dst|. Supports every non-packed real dtype and Bool (!= 0).
void cmlc_ew_store_i64(cml_dtype_t dtype, const int64_t* values, int64_t n, void* dst,
                       int64_t start);

//===--- SIMD kernels (kernels/x86_64/elementwise_x86_64_{avx2,avx512}.c) ---===//

// A straight conversion of |n| elements from |in| to |out|.
typedef void (*cmlc_ew_convert_fn)(void* out, const void* in, int64_t n);
// A reduction of |n| contiguous f32 values (sum, max or min).
typedef float (*cmlc_rd_f32_fn)(const float* x, int64_t n);
// The same over |n| contiguous bf16 or f16 values, widened and accumulated in f32 (the same
// lanes and order as the f32 reduction of the widened values).
typedef float (*cmlc_rd_half_fn)(const uint16_t* x, int64_t n);
// The f32 reduction of a run of at most CMLC__RD_SIMD_SPLIT elements (one the reduction does
// not halve) in steps, |lanes| (CMLC__RD_SIMD_LANES floats) carrying its state between them:
// the first step has CMLC_RD_STEP_FIRST, the last CMLC_RD_STEP_LAST (and returns the value),
// every other step covers a multiple of CMLC__RD_SIMD_LANES elements. The same bits as the
// cmlc_rd_f32_fn on the whole run.
enum { CMLC_RD_STEP_FIRST = 1, CMLC_RD_STEP_LAST = 2 };
typedef float (*cmlc_rd_f32_step_fn)(float* lanes, const float* x, int64_t n, int flags);

// The SIMD kernel for |options| (its ISA), or NULL: then the scalar kernel runs. NULL when
// |options| is NULL, asks for reference kernels or for the scalar ISA
// (elementwise_simd.c). The SIMD kernels have the scalar kernels' semantics; AVX2 and
// AVX-512 give bit-identical results.
cmlc_ew_fn cmlc_ew_simd_unary_fn(const cmlc_options_t* options, cml_op_t op, cml_dtype_t dtype);
cmlc_ew_fn cmlc_ew_simd_binary_fn(const cmlc_options_t* options, cml_op_t op, cml_dtype_t dtype);
cmlc_ew_fn cmlc_ew_simd_where_fn(const cmlc_options_t* options, size_t element_size);
cmlc_ew_convert_fn cmlc_ew_simd_convert_fn(const cmlc_options_t* options, cml_dtype_t from,
                                           cml_dtype_t to);
cmlc_rd_f32_fn cmlc_rd_simd_f32_fn(const cmlc_options_t* options, cml_op_t op);
cmlc_rd_f32_step_fn cmlc_rd_simd_f32_step_fn(const cmlc_options_t* options, cml_op_t op);
cmlc_rd_half_fn cmlc_rd_simd_half_fn(const cmlc_options_t* options, cml_op_t op, cml_dtype_t dtype);

// Inner loops of the fused ops (kernels/generic/fused.c), for F32, BF16 and F16 storage
// computed in f32 (kernels/x86_64/elementwise_x86_64_fused.h):
typedef enum cmlc_fk_loop_t {
  CMLC_FK_GELU_ERF,        // cmlc_fk_map_fn: exact GELU
  CMLC_FK_GELU_TANH,       // cmlc_fk_map_fn: tanh GELU
  CMLC_FK_DENSE_ROW,       // cmlc_fk_dense_row_fn
  CMLC_FK_LN_ROW,          // cmlc_fk_ln_row_fn
  CMLC_FK_SOFTMAX_ROW,     // cmlc_fk_softmax_row_fn
  CMLC_FK_SOFTMAX_LANES,   // cmlc_fk_softmax_lanes_fn
  CMLC_FK_SOFTMAX_PACKED,  // cmlc_fk_softmax_packed_fn
} cmlc_fk_loop_t;
// y[i] = f(x[i]) for |n| contiguous elements (y may be x).
typedef void (*cmlc_fk_map_fn)(void* y, const void* x, int64_t n);
// y[j] = act(c[j] + bias[j]) for one row of |n|: c f32, bias (NULL: none) and y of the storage
// dtype; |act| a cml_activation_t.
typedef void (*cmlc_fk_dense_row_fn)(void* y, const float* c, const void* bias, int64_t n, int act);
// Layer norm of one contiguous row of |n| > 0 (gamma, beta: NULL or |n| values; y may be x).
typedef void (*cmlc_fk_ln_row_fn)(void* y, const void* x, const void* gamma, const void* beta,
                                  int64_t n, float eps);
// Softmax of one contiguous row of |n| > 0 (y may be x).
typedef void (*cmlc_fk_softmax_row_fn)(void* y, const void* x, int64_t n);
// Softmax of |count| > 0 adjacent lanes of |n| > 0 elements, element k of lane j at
// x[k * stride + j] (a non-last axis; y may be x).
typedef void (*cmlc_fk_softmax_lanes_fn)(void* y, const void* x, int64_t n, int64_t stride,
                                         int64_t count);
// Softmax of lanes [lane0, lane0 + count) of [outer, n, inner] (lane l: element k at
// x[(l / inner) n inner + k inner + l % inner]; y may be x), 1 <= n <=
// CMLC_FK_SOFTMAX_PACKED_MAX_N, count > 0.
enum { CMLC_FK_SOFTMAX_PACKED_MAX_N = 256 };
typedef void (*cmlc_fk_softmax_packed_fn)(void* y, const void* x, int64_t n, int64_t inner,
                                          int64_t lane0, int64_t count);
// The loop for |options| and storage |dtype|, or NULL (no SIMD ISA, reference mode, other
// dtypes): then the scalar code of fused.c runs.
cmlc_impl_fn cmlc_ew_simd_fused_fn(const cmlc_options_t* options, cmlc_fk_loop_t loop,
                                   cml_dtype_t dtype);

// Fused-loop programs run register-resident (kernels/x86_64/elementwise_x86_64_tile.h): a loop
// whose members are all f32 SIMD kernels of one ISA (their compares, Where, Clamp and the
// conversions between f32 and bf16 / f16 / Bool included) runs as a program of an accumulator
// machine: A, a tile of vectors held in registers (256 elements with AVX-512, 64 with AVX2),
// combined with an operand (a spilled tile, an input's vectors, one broadcast input element,
// or A itself). Bool values are held as 1.0f / 0.0f. Each instruction applies the very vector
// function of the member's kernel, lane by lane, so the results are the kernels' bits; the
// loop of per-op kernel calls over 256-element blocks in memory costs 2-4x more per op.
// clang-format off
#define CMLC_EW_TILE_UNARY(X)                                                               \
  X(NEG, neg_f32, v_neg, 0) X(ABS, abs_f32, v_abs, 0) X(SQRT, sqrt_f32, v_sqrt, 0)          \
  X(RSQRT, rsqrt_f32, v_rsqrt, 0) X(EXP, exp_f32, v_exp, 1) X(LOG, log_f32, v_log, 1)       \
  X(TANH, tanh_f32, v_tanh, 1) X(LOGISTIC, logistic_f32, v_logistic, 1)                     \
  X(ERF, erf_f32, v_erf, 1) X(EXPM1, expm1_f32, v_expm1, 1) X(LOG1P, log1p_f32, v_log1p, 1) \
  X(SIGN, sign_f32, v_sign, 0) X(FLOOR, floor_f32, v_floor, 0) X(CEIL, ceil_f32, v_ceil, 0) \
  X(ROUND, round_f32, v_round, 0) X(SIN, sin_f32, v_sin, 1) X(COS, cos_f32, v_cos, 1)
#define CMLC_EW_TILE_BINARY(X)                                              \
  X(ADD, add_f32, v_add) X(SUB, sub_f32, v_sub) X(MUL, mul_f32, v_mul)      \
  X(DIV, div_f32, v_div) X(MAX, max_f32, v_max_nan) X(MIN, min_f32, v_min_nan)
#define CMLC_EW_TILE_COMPARE(X)                                             \
  X(EQ, eq_f32, v_eq) X(NE, ne_f32, v_neq) X(LT, lt_f32, v_lt)              \
  X(LE, le_f32, v_le) X(GT, gt_f32, v_gt) X(GE, ge_f32, v_ge)
// clang-format on
#define CMLC_EW_TILE_ENUM(NAME, KERNEL, VFN) CMLC_TL_##NAME,
#define CMLC_EW_TILE_ENUM4(NAME, KERNEL, VFN, LONG) CMLC_TL_##NAME,
typedef enum { CMLC_EW_TILE_UNARY(CMLC_EW_TILE_ENUM4) CMLC_TL_UNARY_COUNT } cmlc_ew_tile_unary_t;
typedef enum { CMLC_EW_TILE_BINARY(CMLC_EW_TILE_ENUM) CMLC_TL_BINARY_COUNT } cmlc_ew_tile_binary_t;
typedef enum {
  CMLC_EW_TILE_COMPARE(CMLC_EW_TILE_ENUM) CMLC_TL_COMPARE_COUNT
} cmlc_ew_tile_compare_t;
#undef CMLC_EW_TILE_ENUM
#undef CMLC_EW_TILE_ENUM4
// The ops of the lists above, in their orders (the bf16 / f16 and Int32 kernels are found by
// op: elementwise_x86_64_tile.h, elementwise_simd.c).
static const cml_op_t cmlc_ew_tile_unary_ops[] = {
    CML_OP_NEG,   CML_OP_ABS,      CML_OP_SQRT,  CML_OP_RSQRT, CML_OP_EXP,   CML_OP_LOG,
    CML_OP_TANH,  CML_OP_LOGISTIC, CML_OP_ERF,   CML_OP_EXPM1, CML_OP_LOG1P, CML_OP_SIGN,
    CML_OP_FLOOR, CML_OP_CEIL,     CML_OP_ROUND, CML_OP_SIN,   CML_OP_COS};
static const cml_op_t cmlc_ew_tile_binary_ops[] = {CML_OP_ADD, CML_OP_SUB, CML_OP_MUL,
                                                   CML_OP_DIV, CML_OP_MAX, CML_OP_MIN};
static const cml_op_t cmlc_ew_tile_compare_ops[] = {CML_OP_EQUAL,        CML_OP_NOT_EQUAL,
                                                    CML_OP_LESS_THAN,    CML_OP_LESS_OR_EQUAL,
                                                    CML_OP_GREATER_THAN, CML_OP_GREATER_OR_EQUAL};
_Static_assert(sizeof cmlc_ew_tile_unary_ops / sizeof(cml_op_t) == CMLC_TL_UNARY_COUNT,
               "one op per unary function");
_Static_assert(sizeof cmlc_ew_tile_binary_ops / sizeof(cml_op_t) == CMLC_TL_BINARY_COUNT,
               "one op per binary function");
_Static_assert(sizeof cmlc_ew_tile_compare_ops / sizeof(cml_op_t) == CMLC_TL_COMPARE_COUNT,
               "one op per compare");

// Whether unary function |u| is long (the last column above): it runs one vector at a time
// outside the interpreter (elementwise_x86_64_tile.h).
static inline bool cmlc_ew_tile_long(int u) {
#define CMLC_EW_TILE_LONG(NAME, KERNEL, VFN, LONG) LONG,
  static const bool kLong[] = {CMLC_EW_TILE_UNARY(CMLC_EW_TILE_LONG)};
#undef CMLC_EW_TILE_LONG
  return u >= 0 && u < CMLC_TL_UNARY_COUNT && kLong[u];
}
// Operand kinds. The first four are the operands of every combining instruction: a spilled
// tile, an input's f32 vectors, one f32 input element broadcast, A itself. The others are
// loads only (into A, or into a spill tile): bf16 / f16 vectors or elements, widened; Bool
// bytes or one Bool, as 1.0f / 0.0f.
enum {
  CMLC_TL_MEM = 0,
  CMLC_TL_VEC,
  CMLC_TL_SPLAT,
  CMLC_TL_ACC,
  CMLC_TL_VEC_BF16,
  CMLC_TL_VEC_F16,
  CMLC_TL_SPLAT_BF16,
  CMLC_TL_SPLAT_F16,
  CMLC_TL_VEC_BOOL,
  CMLC_TL_SPLAT_BOOL,
  CMLC_TL_KINDS
};
// Instruction codes (cmlc_ew_tile_ins_t.code):
//   LD + kind: A = operand (arg);  LDM + kind: tile arg2 = operand (arg);  ST: tile arg = A;
//   OUT_*: store A as the output (f32, bf16, f16, Bool) and stop;
//   UN + u: A = f(A);  IS_FINITE, TO_BOOL: A = |A| < inf, A != 0 (as 1 / 0);
//   BIN + 8 * op + 4 * reversed + kind: A = f(A, operand), or f(operand, A);
//   CMP + 8 * op + 4 * reversed + kind: the same, as 1 / 0;
//   ICMP + 8 * op + 4 * reversed + kind: the compare of the operands' bits as Int32, as 1 / 0
//     (Int32 inputs are loaded as their bits: VEC and SPLAT move them unchanged);
//   I32_TO_F32: A = (float)A's bits as Int32;
//   ROUND_BF16, ROUND_F16: A rounded as a bf16 / f16 store and widened as its load (the
//     bf16 / f16 kernels compute in f32 and round each result);
//   WHERE + 4 * kt + kf: A = A != 0 ? operand t (arg) : operand f (arg2);
//   CLAMP + 4 * klo + khi: A = min(max(A, lo (arg)), hi (arg2)) with the kernels' NaN rule.
// The kinds of BIN, CMP, WHERE and CLAMP are MEM..ACC (WHERE and CLAMP: MEM..SPLAT).
enum {
  CMLC_TL_LD = 0,
  CMLC_TL_LDM = 16,
  CMLC_TL_ST = 32,
  CMLC_TL_OUT_F32,
  CMLC_TL_OUT_BF16,
  CMLC_TL_OUT_F16,
  CMLC_TL_OUT_BOOL,
  CMLC_TL_IS_FINITE,
  CMLC_TL_TO_BOOL,
  CMLC_TL_I32_TO_F32,
  CMLC_TL_ROUND_BF16,
  CMLC_TL_ROUND_F16,
  CMLC_TL_UN = 48,
  CMLC_TL_BIN = 80,
  CMLC_TL_CMP = CMLC_TL_BIN + 8 * 8,
  CMLC_TL_WHERE = CMLC_TL_CMP + 8 * 8,
  CMLC_TL_CLAMP = CMLC_TL_WHERE + 16,
  CMLC_TL_ICMP = CMLC_TL_CLAMP + 16,
};
// Spill tiles: the loop's registers, and two for loaded operands (CMLC_TL_LDM).
enum { CMLC_EW_TILE_MAX_INS = 160, CMLC_EW_TILE_MAX_MEM = 14, CMLC_EW_TILE_MAX_IN = 16 };
typedef struct cmlc_ew_tile_ins_t {
  uint16_t code;
  uint8_t arg, arg2;  // a spill tile or an input
} cmlc_ew_tile_ins_t;
typedef struct cmlc_ew_tile_prog_t {
  uint32_t count, input_count;
  // Bytes per element of the inputs read as vectors (0: one element, or not read), and of the
  // output.
  uint8_t vec_size[CMLC_EW_TILE_MAX_IN];
  uint8_t out_size;
  cmlc_ew_tile_ins_t ins[CMLC_EW_TILE_MAX_INS];
} cmlc_ew_tile_prog_t;
// Runs |prog| over |n| elements: input j's element 0 at |in|[j] (vector kinds: n elements),
// the output's at |out|. The output may be a vector input of the same element size. |scratch|
// (64-byte aligned, CMLC_EW_TILE_SCRATCH bytes) holds the spilled tiles: the caller's, so that
// a call does not open a frame of its own that size (a new 15 KiB frame per 256 elements made
// a log-softmax 20% slower).
enum { CMLC_EW_TILE_SCRATCH = (CMLC_EW_TILE_MAX_MEM + 2) * 256 * 4 };
typedef void (*cmlc_ew_tile_fn)(const cmlc_ew_tile_prog_t* prog, const void* const* in, void* out,
                                int64_t n, void* scratch);
// The runner for |options| (its ISA), or NULL (reference mode, the scalar ISA).
cmlc_ew_tile_fn cmlc_ew_simd_tile_fn(const cmlc_options_t* options);
// What a kernel that cmlc_ew_simd_unary_fn / _binary_fn / _where_fn gave for |options| is to
// the runner: the cmlc_ew_tile_unary_t, cmlc_ew_tile_binary_t or cmlc_ew_tile_compare_t
// (|class| UNARY, BINARY, COMPARE; ICOMPARE: the cmlc_ew_tile_compare_t of an Int32 compare),
// IS_FINITE, WHERE (4-byte elements) or CLAMP; -1 (and |class| NONE) when the program cannot
// hold it. The f32 kernels' bf16 and f16 twins (computed in f32, each result rounded) map to
// the same codes: the caller rounds after them.
typedef enum {
  CMLC_TL_CLASS_NONE = 0,
  CMLC_TL_CLASS_UNARY,
  CMLC_TL_CLASS_BINARY,
  CMLC_TL_CLASS_COMPARE,
  CMLC_TL_CLASS_IS_FINITE,
  CMLC_TL_CLASS_WHERE,
  CMLC_TL_CLASS_CLAMP,
  CMLC_TL_CLASS_ICOMPARE,
} cmlc_ew_tile_class_t;
int cmlc_ew_simd_tile_kernel(const cmlc_options_t* options, cmlc_ew_fn fn,
                             cmlc_ew_tile_class_t* cls);
// Whether |fn| is the SIMD conversion of |options| from |from| to |to| (the program's loads
// and stores convert as it does).
bool cmlc_ew_simd_tile_convert(const cmlc_options_t* options, cmlc_ew_convert_fn fn,
                               cml_dtype_t from, cml_dtype_t to);

#if defined(CMLC_HAVE_X86_64)
// f64 Exp, Log, Expm1, Log1p, Tanh, Sin, Cos, Erf and Logistic from glibc's libmvec for |isa|
// (AVX-512 or AVX2), or NULL: another dtype or ISA, or libmvec (or that function) missing
// (elementwise_x86_64_mvec.c). Within 4 ulp of libm's results.
cmlc_ew_fn cmlc_ew_mvec_unary_fn(cmlc_isa_t isa, cml_op_t op, cml_dtype_t dtype);
// The i32 / u32 / i64 / u64 binary, comparison and Clamp kernels compiled for AVX2 (the scalar
// kernels' semantics and bits), or NULL (elementwise_x86_64_int.c).
cmlc_ew_fn cmlc_ew_int_simd_fn(cml_op_t op, cml_dtype_t dtype);
// The f64 binary and comparison kernels compiled for AVX2 (elementwise_x86_64_int.c), or NULL.
cmlc_ew_fn cmlc_ew_f64_simd_fn(cml_op_t op);
cmlc_ew_fn cmlc_ew_avx512_unary_fn(cml_op_t op, cml_dtype_t dtype);
cmlc_ew_fn cmlc_ew_avx512_binary_fn(cml_op_t op, cml_dtype_t dtype);
cmlc_ew_fn cmlc_ew_avx512_where_fn(size_t element_size);
cmlc_ew_convert_fn cmlc_ew_avx512_convert_fn(cml_dtype_t from, cml_dtype_t to);
cmlc_rd_f32_fn cmlc_ew_avx512_reduce_fn(cml_op_t op);
cmlc_rd_f32_step_fn cmlc_ew_avx512_reduce_step_fn(cml_op_t op);
cmlc_rd_half_fn cmlc_ew_avx512_reduce_half_fn(cml_op_t op, cml_dtype_t dtype);
cmlc_impl_fn cmlc_ew_avx512_fused_fn(cmlc_fk_loop_t loop, cml_dtype_t dtype);
void cmlc_ew_avx512_tile_run(const cmlc_ew_tile_prog_t* prog, const void* const* in, void* out,
                             int64_t n, void* scratch);
int cmlc_ew_avx512_tile_kernel(cmlc_ew_fn fn, cmlc_ew_tile_class_t* cls);
cmlc_ew_fn cmlc_ew_avx2_unary_fn(cml_op_t op, cml_dtype_t dtype);
cmlc_ew_fn cmlc_ew_avx2_binary_fn(cml_op_t op, cml_dtype_t dtype);
cmlc_ew_fn cmlc_ew_avx2_where_fn(size_t element_size);
cmlc_ew_convert_fn cmlc_ew_avx2_convert_fn(cml_dtype_t from, cml_dtype_t to);
cmlc_rd_f32_fn cmlc_ew_avx2_reduce_fn(cml_op_t op);
cmlc_rd_f32_step_fn cmlc_ew_avx2_reduce_step_fn(cml_op_t op);
cmlc_rd_half_fn cmlc_ew_avx2_reduce_half_fn(cml_op_t op, cml_dtype_t dtype);
cmlc_impl_fn cmlc_ew_avx2_fused_fn(cmlc_fk_loop_t loop, cml_dtype_t dtype);
void cmlc_ew_avx2_tile_run(const cmlc_ew_tile_prog_t* prog, const void* const* in, void* out,
                           int64_t n, void* scratch);
int cmlc_ew_avx2_tile_kernel(cmlc_ew_fn fn, cmlc_ew_tile_class_t* cls);
#endif

//===--- scalar helpers ---===//

#define CMLC_EW_ID(x) (x)

// IEEE 754-2019 maximum/minimum (XLA's semantics): NaN propagates, -0 < +0. Works for float
// and double.
#define CMLC_EW_FMAX(a, b) \
  (isnan(a) ? (a) : isnan(b) ? (b) : (a) > (b) ? (a) : (b) > (a) ? (b) : (signbit(a) ? (b) : (a)))
#define CMLC_EW_FMIN(a, b) \
  (isnan(a) ? (a) : isnan(b) ? (b) : (a) < (b) ? (a) : (b) < (a) ? (b) : (signbit(a) ? (a) : (b)))

// Complex values as C complex numbers.
static inline float _Complex cmlc_ew_load_c64(cml_c64_t v) { return CMPLXF(v.re, v.im); }
static inline double _Complex cmlc_ew_load_c128(cml_c128_t v) { return CMPLX(v.re, v.im); }
static inline cml_c64_t cmlc_ew_store_c64(float _Complex v) {
  cml_c64_t r = {crealf(v), cimagf(v)};
  return r;
}
static inline cml_c128_t cmlc_ew_store_c128(double _Complex v) {
  cml_c128_t r = {creal(v), cimag(v)};
  return r;
}

// Total order keys: a signed integer whose order is -NaN < -Inf < ... < -0 < +0 < ... < +Inf
// < +NaN for the float bits |b|.
static inline int16_t cmlc_ew_key16(uint16_t b) {
  return (b & 0x8000u) ? (int16_t)(uint16_t)(b ^ 0x7fffu) : (int16_t)b;
}
static inline int32_t cmlc_ew_key32(uint32_t b) {
  return (b & 0x80000000u) ? (int32_t)(b ^ 0x7fffffffu) : (int32_t)b;
}
static inline int64_t cmlc_ew_key64(uint64_t b) {
  return (b & 0x8000000000000000ull) ? (int64_t)(b ^ 0x7fffffffffffffffull) : (int64_t)b;
}
static inline int32_t cmlc_ew_key_f32(float f) {
  uint32_t b;
  memcpy(&b, &f, sizeof b);
  return cmlc_ew_key32(b);
}
static inline int64_t cmlc_ew_key_f64(double f) {
  uint64_t b;
  memcpy(&b, &f, sizeof b);
  return cmlc_ew_key64(b);
}

// The textbook product (ac - bd) + (bc + ad)i with the first product of each part fused, which
// is what XLA's CPU code computes: fma(a, c, -bd) + fma(b, c, ad)i (the imaginary part fused the
// other way, fma(a, d, bc), differed from XLA's in the last bit for a third of random inputs,
// and in sign when ad and bc cancel). C99's Annex G recovery of infinities (what
// `*` on _Complex does) gives (-inf, inf) for (0+1i)(inf+inf i) where XLA gives NaN, and the
// unfused form overflows to NaN for (1e30-1e30i)^2 where XLA gives -inf.
static inline float _Complex cmlc_ew_cmul_f(float _Complex x, float _Complex y) {
  const float a = crealf(x), b = cimagf(x), c = crealf(y), d = cimagf(y);
  return CMPLXF(fmaf(a, c, -(b * d)), fmaf(b, c, a * d));
}
static inline double _Complex cmlc_ew_cmul_d(double _Complex x, double _Complex y) {
  const double a = creal(x), b = cimag(x), c = creal(y), d = cimag(y);
  return CMPLX(fma(a, c, -(b * d)), fma(b, c, a * d));
}

#endif  // CML_BACKENDS_C_KERNELS_GENERIC_ELEMENTWISE_INTERNAL_H_
