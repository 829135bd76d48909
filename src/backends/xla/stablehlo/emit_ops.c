// SPDX-License-Identifier: Apache-2.0
// src/backends/xla/stablehlo/emit_ops.c: StableHLO lowerings of every non-control-flow op of
// the IR (element-wise ops with explicit broadcasting, conversions, data movement, indexing,
// reductions, windows, dot/convolution, RNG, FFT, batch norm, barriers).
//
// Notes on semantics:
// - Restricted broadcasting is made explicit: a scalar or size-1 operand goes through
//   broadcast_in_dim to the output's dims first.
// - ConvertDType to Bool is `x != 0`; complex to real takes the real part first.
// - Bool is i1 in StableHLO but 8 bits in cml: Bitcast from/to Bool goes through ui8.
// - DotGeneral converts its inputs to the accumulator dtype (XLA only accumulates natively in
//   the input dtype on CPU), then the result to the output dtype. ConvGeneral likewise computes
//   in the wider of the input and output dtypes.
// - ArgMinMax is a variadic reduce over (value, iota index): NaN wins, ties pick the first
//   index; the reducer is commutative so XLA may combine partial results in any order.
// - SelectAndScatterSum (add every source element to its whole window) is a pad with interior
//   padding (stride - 1) followed by a stride-1 window sum.
// - SchedulingBarrier is an optimization_barrier over (x, deps...) whose first result is used.
// - Float division is kept correctly rounded against XLA's algebraic simplifier (which turns
//   x / broadcast(y) into x * broadcast(1 / y), and more): Float32 and half types divide in
//   Float64, Float64 divides behind optimization barriers (cml_shlo_div_f64).
// - Erf uses chlo.erf, which the PJRT plugins accept and expand.
// - RNGBitGenerator uses PHILOX with an unsigned output of the same width, bitcast to the
//   requested dtype.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/xla/stablehlo/emit_internal.h"

//===--- common lowerings ---===//

cml__shlo_val_t cml__shlo_const_scalar(cml__shlo_ctx_t* c, cml_dtype_t dtype,
                                       cml__shlo_scalar_kind_t kind) {
  char text[64];
  cml__shlo_format_scalar_kind(dtype, kind, text, sizeof text);
  cml__shlo_val_t r;
  r.shape = cml_shape_scalar(dtype);
  r.name = cml__shlo_op_begin(c, "stablehlo.constant", NULL, 0, 1);
  cml__shlo_printf(c, " {value = dense<%s> : ", text);
  cml__shlo_type(c, &r.shape);
  cml__shlo_printf(c, "}");
  cml__shlo_op_end(c, NULL, NULL, 0, &r.shape, 1);
  return r;
}

cml__shlo_val_t cml__shlo_broadcast(cml__shlo_ctx_t* c, const cml__shlo_val_t* v,
                                    const cml_shape_t* dims) {
  if (cml_shape_dims_equal(&v->shape, dims)) return *v;
  cml_shape_t out = *dims;
  out.dtype = v->shape.dtype;
  int64_t axes[CML_MAX_RANK];
  // A scalar maps to no axis; a same-rank operand maps axis i to i (its size-1 axes expand);
  // a lower-rank operand maps to the trailing axes.
  int32_t offset = out.rank - v->shape.rank;
  for (int32_t i = 0; i < v->shape.rank; ++i) axes[i] = offset + i;
  cml__shlo_attr_t a;
  cml__shlo_attr_init(&a);
  cml__shlo_attr_printf(&a, "broadcast_dimensions = ");
  cml__shlo_attr_array(&a, axes, v->shape.rank);
  return cml__shlo_op(c, "stablehlo.broadcast_in_dim", v, 1, a.s, &out);
}

cml__shlo_val_t cml__shlo_const_fill(cml__shlo_ctx_t* c, cml_dtype_t dtype,
                                     cml__shlo_scalar_kind_t kind, const cml_shape_t* dims) {
  cml__shlo_val_t s = cml__shlo_const_scalar(c, dtype, kind);
  return cml__shlo_broadcast(c, &s, dims);
}

cml__shlo_val_t cml__shlo_constant(cml__shlo_ctx_t* c, const cml_shape_t* shape, const void* data) {
  if (cml_shape_element_count(shape) == 0) {
    return cml__shlo_const_fill(c, shape->dtype, CML__SHLO_ZERO, shape);
  }
  cml__shlo_val_t r;
  r.shape = *shape;
  r.name = cml__shlo_op_begin(c, "stablehlo.constant", NULL, 0, 1);
  cml__shlo_printf(c, " {");
  cml__shlo_dense_literal(c, shape, data);
  cml__shlo_printf(c, "}");
  cml__shlo_op_end(c, NULL, NULL, 0, shape, 1);
  return r;
}

const char* cml__shlo_compare_type(cml_dtype_t dtype, bool total_order) {
  if (cml_dtype_is_float(dtype) || cml_dtype_is_complex(dtype)) {
    return total_order && !cml_dtype_is_complex(dtype) ? "TOTALORDER" : "FLOAT";
  }
  if (cml_dtype_is_signed_int(dtype)) return "SIGNED";
  return "UNSIGNED";  // unsigned integers and Bool
}

cml__shlo_val_t cml__shlo_compare(cml__shlo_ctx_t* c, const char* direction,
                                  const cml__shlo_val_t* lhs, const cml__shlo_val_t* rhs,
                                  bool total_order) {
  cml__shlo_val_t ins[2] = {*lhs, *rhs};
  cml_shape_t out = lhs->shape;
  out.dtype = CML_DTYPE_BOOL;
  cml__shlo_attr_t a;
  cml__shlo_attr_init(&a);
  cml__shlo_attr_printf(&a,
                        "comparison_direction = #stablehlo<comparison_direction %s>, "
                        "compare_type = #stablehlo<comparison_type %s>",
                        direction, cml__shlo_compare_type(lhs->shape.dtype, total_order));
  return cml__shlo_op(c, "stablehlo.compare", ins, 2, a.s, &out);
}

// A shape with |s|'s dims and |dtype|.
static cml_shape_t cml_shlo_retype(const cml_shape_t* s, cml_dtype_t dtype) {
  cml_shape_t r = *s;
  r.dtype = dtype;
  return r;
}

// A constant of |dtype| holding the literal |text|, broadcast to the dims of |dims|.
static cml__shlo_val_t cml_shlo_const_text(cml__shlo_ctx_t* c, cml_dtype_t dtype, const char* text,
                                           const cml_shape_t* dims) {
  cml__shlo_val_t r;
  r.shape = cml_shape_scalar(dtype);
  r.name = cml__shlo_op_begin(c, "stablehlo.constant", NULL, 0, 1);
  cml__shlo_printf(c, " {value = dense<%s> : ", text);
  cml__shlo_type(c, &r.shape);
  cml__shlo_printf(c, "}");
  cml__shlo_op_end(c, NULL, NULL, 0, &r.shape, 1);
  return cml__shlo_broadcast(c, &r, dims);
}

// Float64 -> BFloat16 rounded once. The plugin converts through Float32, which rounds twice:
// a value just above a BFloat16 midpoint can land exactly on it and then round to even. When
// the Float32 value sits on a midpoint but is inexact, it is moved one Float32 ulp toward
// the Float64 value first (the "sticky bit"), so the final rounding goes the right way.
static cml__shlo_val_t cml_shlo_f64_to_bf16(cml__shlo_ctx_t* c, const cml__shlo_val_t* x) {
  const cml_shape_t* s = &x->shape;
  cml_shape_t fs = cml_shlo_retype(s, CML_DTYPE_F32), us = cml_shlo_retype(s, CML_DTYPE_U32);
  cml_shape_t bs = cml_shlo_retype(s, CML_DTYPE_BOOL), hs = cml_shlo_retype(s, CML_DTYPE_BF16);
  cml__shlo_val_t y = cml__shlo_op(c, "stablehlo.convert", x, 1, NULL, &fs);
  cml__shlo_val_t back = cml__shlo_op(c, "stablehlo.convert", &y, 1, NULL, s);
  cml__shlo_val_t pair[2] = {*x, back};
  cml__shlo_val_t err = cml__shlo_op(c, "stablehlo.subtract", pair, 2, NULL, s);
  cml__shlo_val_t zero = cml__shlo_const_fill(c, CML_DTYPE_F64, CML__SHLO_ZERO, s);
  cml__shlo_val_t inexact = cml__shlo_compare(c, "NE", &err, &zero, false);
  pair[0] = err;
  pair[1] = back;
  cml__shlo_val_t prod = cml__shlo_op(c, "stablehlo.multiply", pair, 2, NULL, s);
  cml__shlo_val_t up = cml__shlo_compare(c, "GT", &prod, &zero, false);
  cml__shlo_val_t bits = cml__shlo_op(c, "stablehlo.bitcast_convert", &y, 1, NULL, &us);
  cml__shlo_val_t mask = cml_shlo_const_text(c, CML_DTYPE_U32, "65535", s);
  cml__shlo_val_t half = cml_shlo_const_text(c, CML_DTYPE_U32, "32768", s);
  cml__shlo_val_t one = cml_shlo_const_text(c, CML_DTYPE_U32, "1", s);
  pair[0] = bits;
  pair[1] = mask;
  cml__shlo_val_t low = cml__shlo_op(c, "stablehlo.and", pair, 2, NULL, &us);
  cml__shlo_val_t mid = cml__shlo_compare(c, "EQ", &low, &half, false);
  pair[0] = mid;
  pair[1] = inexact;
  cml__shlo_val_t fix = cml__shlo_op(c, "stablehlo.and", pair, 2, NULL, &bs);
  pair[0] = bits;
  pair[1] = one;
  cml__shlo_val_t plus = cml__shlo_op(c, "stablehlo.add", pair, 2, NULL, &us);
  cml__shlo_val_t minus = cml__shlo_op(c, "stablehlo.subtract", pair, 2, NULL, &us);
  cml__shlo_val_t sel[3] = {up, plus, minus};
  cml__shlo_val_t moved = cml__shlo_op(c, "stablehlo.select", sel, 3, NULL, &us);
  sel[0] = fix;
  sel[1] = moved;
  sel[2] = bits;
  cml__shlo_val_t nb = cml__shlo_op(c, "stablehlo.select", sel, 3, NULL, &us);
  cml__shlo_val_t y2 = cml__shlo_op(c, "stablehlo.bitcast_convert", &nb, 1, NULL, &fs);
  return cml__shlo_op(c, "stablehlo.convert", &y2, 1, NULL, &hs);
}

cml__shlo_val_t cml__shlo_convert(cml__shlo_ctx_t* c, const cml__shlo_val_t* v, cml_dtype_t to) {
  cml_dtype_t from = v->shape.dtype;
  if (from == to) return *v;
  if (to == CML_DTYPE_BOOL) {
    cml__shlo_val_t zero = cml__shlo_const_fill(c, from, CML__SHLO_ZERO, &v->shape);
    return cml__shlo_compare(c, "NE", v, &zero, false);
  }
  if (cml_dtype_is_complex(from) && !cml_dtype_is_complex(to)) {
    cml_shape_t rs = cml_shlo_retype(&v->shape, cml_dtype_real_part(from));
    cml__shlo_val_t re = cml__shlo_op(c, "stablehlo.real", v, 1, NULL, &rs);
    return cml__shlo_convert(c, &re, to);
  }
  if (to == CML_DTYPE_BF16 && cml_dtype_is_int(from) && cml_dtype_bits(from) > 24) {
    // Wide integers to BFloat16: via Float64 (exact up to 2^53), then rounded once below.
    cml_shape_t ws = cml_shlo_retype(&v->shape, CML_DTYPE_F64);
    cml__shlo_val_t wide = cml__shlo_op(c, "stablehlo.convert", v, 1, NULL, &ws);
    return cml__shlo_convert(c, &wide, to);
  }
  if (to == CML_DTYPE_BF16 && from == CML_DTYPE_F64) return cml_shlo_f64_to_bf16(c, v);
  cml_shape_t out = cml_shlo_retype(&v->shape, to);
  return cml__shlo_op(c, "stablehlo.convert", v, 1, NULL, &out);
}

// Writes "^bb0(%a: tensor<T0>, ...):" for scalars of |dtypes|, naming them into |out|.
static void cml_shlo_scalar_header(cml__shlo_ctx_t* c, const cml_dtype_t* dtypes, uint32_t count,
                                   cml__shlo_val_t* out) {
  cml__shlo_line(c);
  cml__shlo_printf(c, "^bb0(");
  for (uint32_t i = 0; i < count; ++i) {
    out[i].name = cml__shlo_fresh(c);
    out[i].shape = cml_shape_scalar(dtypes[i]);
    cml__shlo_printf(c, "%s%s: ", i ? ", " : "", out[i].name.s);
    cml__shlo_scalar_type(c, dtypes[i]);
  }
  cml__shlo_printf(c, "):\n");
}

// Writes `"stablehlo.return"(vals) : (types) -> ()`.
static void cml_shlo_region_return(cml__shlo_ctx_t* c, const cml__shlo_val_t* vals,
                                   uint32_t count) {
  cml__shlo_line(c);
  cml__shlo_printf(c, "\"stablehlo.return\"(");
  for (uint32_t i = 0; i < count; ++i) cml__shlo_printf(c, "%s%s", i ? ", " : "", vals[i].name.s);
  cml__shlo_printf(c, ") : (");
  for (uint32_t i = 0; i < count; ++i) {
    if (i) cml__shlo_printf(c, ", ");
    cml__shlo_type(c, &vals[i].shape);
  }
  cml__shlo_printf(c, ") -> ()\n");
}

// IEEE-754 maximum/minimum for floats: NaN propagates and -0 < +0. XLA's CPU plugin lowers
// stablehlo.maximum/minimum with "fast min/max" (NaN is dropped, the sign of zero depends on
// the operand order), so floats get explicit selects over a total-order comparison.
static cml__shlo_val_t cml_shlo_float_minmax(cml__shlo_ctx_t* c, bool is_max,
                                             const cml__shlo_val_t* a, const cml__shlo_val_t* b) {
  cml__shlo_val_t better = cml__shlo_compare(c, is_max ? "GT" : "LT", a, b, true);
  cml__shlo_val_t sel[3] = {better, *a, *b};
  cml__shlo_val_t r = cml__shlo_op(c, "stablehlo.select", sel, 3, NULL, &a->shape);
  cml__shlo_val_t b_nan = cml__shlo_compare(c, "NE", b, b, false);
  sel[0] = b_nan;
  sel[1] = *b;
  sel[2] = r;
  r = cml__shlo_op(c, "stablehlo.select", sel, 3, NULL, &a->shape);
  cml__shlo_val_t a_nan = cml__shlo_compare(c, "NE", a, a, false);
  sel[0] = a_nan;
  sel[1] = *a;
  sel[2] = r;
  return cml__shlo_op(c, "stablehlo.select", sel, 3, NULL, &a->shape);
}

// A binary op |op| on two values of one shape, with the float max/min fix-up above.
static cml__shlo_val_t cml_shlo_binary_op(cml__shlo_ctx_t* c, const char* op,
                                          const cml__shlo_val_t* a, const cml__shlo_val_t* b,
                                          const cml_shape_t* out) {
  bool is_max = strcmp(op, "stablehlo.maximum") == 0;
  bool is_min = strcmp(op, "stablehlo.minimum") == 0;
  if ((is_max || is_min) && cml_dtype_is_float(a->shape.dtype)) {
    return cml_shlo_float_minmax(c, is_max, a, b);
  }
  cml__shlo_val_t ins[2] = {*a, *b};
  return cml__shlo_op(c, op, ins, 2, NULL, out);
}

void cml__shlo_binary_region(cml__shlo_ctx_t* c, const char* op, cml_dtype_t dtype) {
  cml__shlo_printf(c, "{\n");
  c->indent++;
  cml_dtype_t dtypes[2] = {dtype, dtype};
  cml__shlo_val_t args[2];
  cml_shlo_scalar_header(c, dtypes, 2, args);
  cml_shape_t s = cml_shape_scalar(dtype);
  cml__shlo_val_t r = cml_shlo_binary_op(c, op, &args[0], &args[1], &s);
  cml_shlo_region_return(c, &r, 1);
  c->indent--;
  cml__shlo_line(c);
  cml__shlo_printf(c, "}");
}

//===--- op tables ---===//

static const char* cml_shlo_unary_name(cml_op_t op) {
  switch (op) {
    case CML_OP_ABS:
      return "stablehlo.abs";
    case CML_OP_NEG:
      return "stablehlo.negate";
    case CML_OP_SIGN:
      return "stablehlo.sign";
    case CML_OP_CEIL:
      return "stablehlo.ceil";
    case CML_OP_FLOOR:
      return "stablehlo.floor";
    case CML_OP_ROUND:
      return "stablehlo.round_nearest_even";
    case CML_OP_SQRT:
      return "stablehlo.sqrt";
    case CML_OP_RSQRT:
      return "stablehlo.rsqrt";
    case CML_OP_EXP:
      return "stablehlo.exponential";
    case CML_OP_EXPM1:
      return "stablehlo.exponential_minus_one";
    case CML_OP_LOG:
      return "stablehlo.log";
    case CML_OP_LOG1P:
      return "stablehlo.log_plus_one";
    case CML_OP_LOGISTIC:
      return "stablehlo.logistic";
    case CML_OP_TANH:
      return "stablehlo.tanh";
    case CML_OP_SIN:
      return "stablehlo.sine";
    case CML_OP_COS:
      return "stablehlo.cosine";
    case CML_OP_ERF:
      return "chlo.erf";
    case CML_OP_BIT_COUNT:
      return "stablehlo.popcnt";
    case CML_OP_CLZ:
      return "stablehlo.count_leading_zeros";
    case CML_OP_BITWISE_NOT:
      return "stablehlo.not";
    case CML_OP_LOGICAL_NOT:
      return "stablehlo.not";
    case CML_OP_IS_FINITE:
      return "stablehlo.is_finite";
    default:
      return NULL;
  }
}

static const char* cml_shlo_binary_name(cml_op_t op) {
  switch (op) {
    case CML_OP_ADD:
      return "stablehlo.add";
    case CML_OP_SUB:
      return "stablehlo.subtract";
    case CML_OP_MUL:
      return "stablehlo.multiply";
    case CML_OP_DIV:
      return "stablehlo.divide";
    case CML_OP_POW:
      return "stablehlo.power";
    case CML_OP_REM:
      return "stablehlo.remainder";
    case CML_OP_MAX:
      return "stablehlo.maximum";
    case CML_OP_MIN:
      return "stablehlo.minimum";
    case CML_OP_ATAN2:
      return "stablehlo.atan2";
    case CML_OP_COMPLEX:
      return "stablehlo.complex";
    case CML_OP_BITWISE_AND:
      return "stablehlo.and";
    case CML_OP_BITWISE_OR:
      return "stablehlo.or";
    case CML_OP_BITWISE_XOR:
      return "stablehlo.xor";
    case CML_OP_LOGICAL_AND:
      return "stablehlo.and";
    case CML_OP_LOGICAL_OR:
      return "stablehlo.or";
    case CML_OP_LOGICAL_XOR:
      return "stablehlo.xor";
    case CML_OP_SHIFT_LEFT:
      return "stablehlo.shift_left";
    case CML_OP_SHIFT_RIGHT_ARITHMETIC:
      return "stablehlo.shift_right_arithmetic";
    case CML_OP_SHIFT_RIGHT_LOGICAL:
      return "stablehlo.shift_right_logical";
    default:
      return NULL;
  }
}

// Comparison direction of a compare op; |*total_order| tells the TotalOrder variants.
static const char* cml_shlo_compare_direction(cml_op_t op, bool* total_order) {
  *total_order = false;
  switch (op) {
    case CML_OP_EQUAL_TOTAL_ORDER:
      *total_order = true;
      return "EQ";
    case CML_OP_EQUAL:
      return "EQ";
    case CML_OP_NOT_EQUAL_TOTAL_ORDER:
      *total_order = true;
      return "NE";
    case CML_OP_NOT_EQUAL:
      return "NE";
    case CML_OP_GREATER_OR_EQUAL_TOTAL_ORDER:
      *total_order = true;
      return "GE";
    case CML_OP_GREATER_OR_EQUAL:
      return "GE";
    case CML_OP_GREATER_THAN_TOTAL_ORDER:
      *total_order = true;
      return "GT";
    case CML_OP_GREATER_THAN:
      return "GT";
    case CML_OP_LESS_OR_EQUAL_TOTAL_ORDER:
      *total_order = true;
      return "LE";
    case CML_OP_LESS_OR_EQUAL:
      return "LE";
    case CML_OP_LESS_THAN_TOTAL_ORDER:
      *total_order = true;
      return "LT";
    case CML_OP_LESS_THAN:
      return "LT";
    default:
      return NULL;
  }
}

// Body op and init value of a reduction op.
static bool cml_shlo_reduce_kind(cml_op_t op, const char** body, cml__shlo_scalar_kind_t* init) {
  switch (op) {
    case CML_OP_REDUCE_SUM:
      *body = "stablehlo.add";
      *init = CML__SHLO_ZERO;
      return true;
    case CML_OP_REDUCE_PRODUCT:
      *body = "stablehlo.multiply";
      *init = CML__SHLO_ONE;
      return true;
    case CML_OP_REDUCE_MAX:
      *body = "stablehlo.maximum";
      *init = CML__SHLO_LOWEST;
      return true;
    case CML_OP_REDUCE_MIN:
      *body = "stablehlo.minimum";
      *init = CML__SHLO_HIGHEST;
      return true;
    case CML_OP_REDUCE_BITWISE_AND:
    case CML_OP_REDUCE_LOGICAL_AND:
      *body = "stablehlo.and";
      *init = CML__SHLO_ALL_ONES;
      return true;
    case CML_OP_REDUCE_BITWISE_OR:
    case CML_OP_REDUCE_LOGICAL_OR:
      *body = "stablehlo.or";
      *init = CML__SHLO_ZERO;
      return true;
    case CML_OP_REDUCE_BITWISE_XOR:
    case CML_OP_REDUCE_LOGICAL_XOR:
      *body = "stablehlo.xor";
      *init = CML__SHLO_ZERO;
      return true;
    default:
      return false;
  }
}

static bool cml_shlo_reduce_type_kind(cml_reduce_type_t type, const char** body,
                                      cml__shlo_scalar_kind_t* init) {
  switch (type) {
    case CML_REDUCE_SUM:
      return cml_shlo_reduce_kind(CML_OP_REDUCE_SUM, body, init);
    case CML_REDUCE_PRODUCT:
      return cml_shlo_reduce_kind(CML_OP_REDUCE_PRODUCT, body, init);
    case CML_REDUCE_MAX:
      return cml_shlo_reduce_kind(CML_OP_REDUCE_MAX, body, init);
    case CML_REDUCE_MIN:
      return cml_shlo_reduce_kind(CML_OP_REDUCE_MIN, body, init);
    default:
      return false;
  }
}

static bool cml_shlo_is_half(cml_dtype_t dtype) {
  return dtype == CML_DTYPE_F16 || dtype == CML_DTYPE_BF16;
}

static bool cml_shlo_is_transcendental(cml_op_t op) {
  switch (op) {
    case CML_OP_EXP:
    case CML_OP_EXPM1:
    case CML_OP_LOG:
    case CML_OP_LOG1P:
    case CML_OP_LOGISTIC:
    case CML_OP_TANH:
    case CML_OP_SIN:
    case CML_OP_COS:
    case CML_OP_ERF:
    case CML_OP_RSQRT:
      return true;
    default:
      return false;
  }
}

// Integer Pow by square and multiply over every bit of the exponent (the plugin ignores the
// exponent's high bits for narrow dtypes). Negative exponents of signed dtypes give 0, except
// for bases 1 (1) and -1 (+-1 by parity).
static cml__shlo_val_t cml_shlo_int_pow(cml__shlo_ctx_t* c, const cml__shlo_val_t* base,
                                        const cml__shlo_val_t* exponent) {
  cml_dtype_t dt = base->shape.dtype;
  const cml_shape_t* s = &base->shape;
  cml_shape_t bs = cml_shlo_retype(s, CML_DTYPE_BOOL);
  int bits = cml_dtype_bits(dt);
  cml__shlo_val_t one = cml__shlo_const_fill(c, dt, CML__SHLO_ONE, s);
  cml__shlo_val_t zero = cml__shlo_const_fill(c, dt, CML__SHLO_ZERO, s);
  cml__shlo_val_t result = one, b = *base, e = *exponent;
  for (int i = 0; i < bits; ++i) {
    cml__shlo_val_t pair[2] = {e, one};
    cml__shlo_val_t low = cml__shlo_op(c, "stablehlo.and", pair, 2, NULL, s);
    cml__shlo_val_t odd = cml__shlo_compare(c, "NE", &low, &zero, false);
    pair[0] = result;
    pair[1] = b;
    cml__shlo_val_t product = cml__shlo_op(c, "stablehlo.multiply", pair, 2, NULL, s);
    cml__shlo_val_t sel[3] = {odd, product, result};
    result = cml__shlo_op(c, "stablehlo.select", sel, 3, NULL, s);
    if (i + 1 == bits) break;
    pair[0] = b;
    pair[1] = b;
    b = cml__shlo_op(c, "stablehlo.multiply", pair, 2, NULL, s);
    pair[0] = e;
    pair[1] = one;
    e = cml__shlo_op(c, "stablehlo.shift_right_logical", pair, 2, NULL, s);
  }
  if (cml_dtype_is_signed_int(dt)) {
    // Negative exponent: 1 for base 1, (-1)^e for base -1 (the square-and-multiply result,
    // since the low bit of e gives the parity), 0 otherwise.
    cml__shlo_val_t negative = cml__shlo_compare(c, "LT", exponent, &zero, false);
    cml__shlo_val_t minus_one = cml__shlo_const_fill(c, dt, CML__SHLO_ALL_ONES, s);
    cml__shlo_val_t is_one = cml__shlo_compare(c, "EQ", base, &one, false);
    cml__shlo_val_t is_minus_one = cml__shlo_compare(c, "EQ", base, &minus_one, false);
    cml__shlo_val_t pair[2] = {is_one, is_minus_one};
    cml__shlo_val_t unit = cml__shlo_op(c, "stablehlo.or", pair, 2, NULL, &bs);
    cml__shlo_val_t sel[3] = {unit, result, zero};
    cml__shlo_val_t neg_result = cml__shlo_op(c, "stablehlo.select", sel, 3, NULL, s);
    sel[0] = negative;
    sel[1] = neg_result;
    sel[2] = result;
    result = cml__shlo_op(c, "stablehlo.select", sel, 3, NULL, s);
  }
  return result;
}

// `stablehlo.optimization_barrier` over one value: XLA's simplifier cannot look through it.
static cml__shlo_val_t cml_shlo_opaque(cml__shlo_ctx_t* c, const cml__shlo_val_t* v) {
  return cml__shlo_op(c, "stablehlo.optimization_barrier", v, 1, NULL, &v->shape);
}

// Float64 division, correctly rounded. XLA's algebraic simplifier rewrites divisions in ways
// that round differently: x / broadcast(y) into x * broadcast(1 / y), (a / b) / c into
// a / (b * c), a / (b / c) into (a * c) / b, and x / exp(y), x / sqrt(y), x / pow(y, z) into
// products. With the divisor and the quotient behind optimization barriers none of those
// patterns can match, and the division stays one IEEE division. (Float32 and the half types
// divide in Float64 instead, which keeps fusion: a Float64 quotient of two Float32 values, even
// computed as x * (1 / y), is within 2^-52 of the exact quotient, closer than any Float32
// quotient lies to a Float32 rounding boundary, so narrowing it rounds correctly.)
static cml__shlo_val_t cml_shlo_div_f64(cml__shlo_ctx_t* c, const cml__shlo_val_t* x,
                                        const cml__shlo_val_t* y) {
  cml__shlo_val_t ins[2] = {*x, cml_shlo_opaque(c, y)};
  cml__shlo_val_t q = cml__shlo_op(c, "stablehlo.divide", ins, 2, NULL, &x->shape);
  return cml_shlo_opaque(c, &q);
}

// Complex Abs with C99's rules for non-finite parts: +inf when either part is infinite, else
// NaN when either is NaN, else |z|. XLA's own expansion (a scaled hypot over max/min) loses a
// NaN under the CPU plugin's default fast min/max: |0 + NaN i| came out as 0.
static cml__shlo_val_t cml_shlo_complex_abs(cml__shlo_ctx_t* c, const cml__shlo_val_t* x,
                                            const cml_shape_t* out) {
  cml_shape_t bs = cml_shlo_retype(out, CML_DTYPE_BOOL);
  cml__shlo_val_t r = cml__shlo_op(c, "stablehlo.abs", x, 1, NULL, out);
  cml__shlo_val_t parts[2] = {cml__shlo_op(c, "stablehlo.real", x, 1, NULL, out),
                              cml__shlo_op(c, "stablehlo.imag", x, 1, NULL, out)};
  cml__shlo_val_t inf = cml__shlo_const_fill(c, out->dtype, CML__SHLO_HIGHEST, out);
  cml__shlo_val_t is_nan[2], is_inf[2];
  for (int k = 0; k < 2; ++k) {
    is_nan[k] = cml__shlo_compare(c, "NE", &parts[k], &parts[k], false);
    cml__shlo_val_t mag = cml__shlo_op(c, "stablehlo.abs", &parts[k], 1, NULL, out);
    is_inf[k] = cml__shlo_compare(c, "EQ", &mag, &inf, false);
  }
  cml__shlo_val_t nan_any = cml__shlo_op(c, "stablehlo.or", is_nan, 2, NULL, &bs);
  cml__shlo_val_t inf_any = cml__shlo_op(c, "stablehlo.or", is_inf, 2, NULL, &bs);
  // A NaN of the result dtype: the sum of the two parts is NaN wherever one of them is.
  cml__shlo_val_t sum = cml__shlo_op(c, "stablehlo.add", parts, 2, NULL, out);
  cml__shlo_val_t sel[3] = {nan_any, sum, r};
  r = cml__shlo_op(c, "stablehlo.select", sel, 3, NULL, out);
  sel[0] = inf_any;
  sel[1] = inf;
  sel[2] = r;
  return cml__shlo_op(c, "stablehlo.select", sel, 3, NULL, out);
}

//===--- op lowerings ---===//

static const cml_shape_t* cml_shlo_out(const cml__shlo_ctx_t* c, const cml_ir_node_t* n,
                                       uint32_t i) {
  return &c->module->values[n->first_output + i].shape;
}

static void cml_shlo_bind1(cml__shlo_ctx_t* c, const cml_ir_node_t* n, const cml__shlo_val_t* v) {
  cml__shlo_bind(c, n->first_output, &v->name);
}

// Precision of dot/convolution operands: HIGHEST for float32 on GPUs unless TF32 is allowed.
static const char* cml_shlo_precision(const cml__shlo_ctx_t* c, cml_dtype_t compute) {
  const char* p = c->opts->platform ? c->opts->platform : "";
  bool gpu = strstr(p, "cuda") || strstr(p, "gpu") || strstr(p, "rocm") || strstr(p, "CUDA");
  if (gpu && compute == CML_DTYPE_F32 && !c->opts->tf32) return "HIGHEST";
  return "DEFAULT";
}

static cml_status_t cml_shlo_reduce(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  const char* body;
  cml__shlo_scalar_kind_t init_kind;
  if (!cml_shlo_reduce_kind(n->op, &body, &init_kind)) {
    return cml__shlo_unimplemented(c, n, "not a reduction");
  }
  cml__shlo_val_t ins[2];
  ins[0] = cml__shlo_value(c, n->inputs[0]);
  ins[1] = cml__shlo_const_scalar(c, ins[0].shape.dtype, init_kind);
  const cml_shape_t* out = cml_shlo_out(c, n, 0);
  cml__shlo_name_t r = cml__shlo_op_begin(c, "stablehlo.reduce", ins, 2, 1);
  cml__shlo_printf(c, " (");
  cml__shlo_binary_region(c, body, ins[0].shape.dtype);
  cml__shlo_printf(c, ")");
  cml__shlo_attr_t a;
  cml__shlo_attr_init(&a);
  cml__shlo_attr_printf(&a, "dimensions = ");
  cml__shlo_attr_array(&a, n->attrs->axes, n->attrs->axis_count);
  cml__shlo_op_end(c, a.s, ins, 2, out, 1);
  cml__shlo_bind(c, n->first_output, &r);
  return CML_OK;
}

static cml_status_t cml_shlo_arg_min_max(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  cml__shlo_val_t x = cml__shlo_value(c, n->inputs[0]);
  cml_dtype_t vt = x.shape.dtype, it = n->attrs->dtype;
  bool is_min = n->attrs->flag;
  bool is_float = cml_dtype_is_float(vt);
  cml_shape_t iota_shape = cml_shlo_retype(&x.shape, it);
  cml__shlo_attr_t a;
  cml__shlo_attr_init(&a);
  cml__shlo_attr_printf(&a, "iota_dimension = %lld : i64", (long long)n->attrs->axis);
  cml__shlo_val_t ins[4];
  ins[0] = x;
  ins[1] = cml__shlo_op(c, "stablehlo.iota", NULL, 0, a.s, &iota_shape);
  ins[2] = cml__shlo_const_scalar(c, vt, is_min ? CML__SHLO_HIGHEST : CML__SHLO_LOWEST);
  ins[3] = cml__shlo_const_scalar(c, it, CML__SHLO_ZERO);
  cml_shape_t outs[2] = {cml_shlo_retype(cml_shlo_out(c, n, 0), vt), *cml_shlo_out(c, n, 0)};
  cml__shlo_name_t r = cml__shlo_op_begin(c, "stablehlo.reduce", ins, 4, 2);
  cml__shlo_printf(c, " ({\n");
  c->indent++;
  // Block args: (acc value, acc index, new value, new index).
  cml_dtype_t dtypes[4] = {vt, it, vt, it};
  cml__shlo_val_t args[4];
  cml_shlo_scalar_header(c, dtypes, 4, args);
  const cml__shlo_val_t *av = &args[0], *ai = &args[1], *bv = &args[2], *bi = &args[3];
  cml_shape_t bool_scalar = cml_shape_scalar(CML_DTYPE_BOOL);
  cml__shlo_val_t better = cml__shlo_compare(c, is_min ? "LT" : "GT", bv, av, false);
  cml__shlo_val_t equal = cml__shlo_compare(c, "EQ", bv, av, false);
  cml__shlo_val_t first = cml__shlo_compare(c, "LT", bi, ai, false);
  cml__shlo_val_t pair[2] = {equal, first};
  cml__shlo_val_t tie = cml__shlo_op(c, "stablehlo.and", pair, 2, NULL, &bool_scalar);
  pair[0] = better;
  pair[1] = tie;
  cml__shlo_val_t pick = cml__shlo_op(c, "stablehlo.or", pair, 2, NULL, &bool_scalar);
  if (is_float) {
    // NaN wins; between two NaNs the first index wins.
    cml__shlo_val_t b_nan = cml__shlo_compare(c, "NE", bv, bv, false);
    cml__shlo_val_t a_nan = cml__shlo_compare(c, "NE", av, av, false);
    cml__shlo_val_t a_num = cml__shlo_op(c, "stablehlo.not", &a_nan, 1, NULL, &bool_scalar);
    pair[0] = b_nan;
    pair[1] = a_num;
    cml__shlo_val_t nan_new = cml__shlo_op(c, "stablehlo.and", pair, 2, NULL, &bool_scalar);
    pair[0] = b_nan;
    pair[1] = a_nan;
    cml__shlo_val_t both = cml__shlo_op(c, "stablehlo.and", pair, 2, NULL, &bool_scalar);
    pair[0] = both;
    pair[1] = first;
    cml__shlo_val_t both_first = cml__shlo_op(c, "stablehlo.and", pair, 2, NULL, &bool_scalar);
    pair[0] = pick;
    pair[1] = nan_new;
    pick = cml__shlo_op(c, "stablehlo.or", pair, 2, NULL, &bool_scalar);
    pair[0] = pick;
    pair[1] = both_first;
    pick = cml__shlo_op(c, "stablehlo.or", pair, 2, NULL, &bool_scalar);
  }
  cml__shlo_val_t sel[3] = {pick, *bv, *av};
  cml__shlo_val_t results[2];
  results[0] = cml__shlo_op(c, "stablehlo.select", sel, 3, NULL, &bv->shape);
  sel[1] = *bi;
  sel[2] = *ai;
  results[1] = cml__shlo_op(c, "stablehlo.select", sel, 3, NULL, &bi->shape);
  cml_shlo_region_return(c, results, 2);
  c->indent--;
  cml__shlo_line(c);
  cml__shlo_printf(c, "})");
  cml__shlo_attr_init(&a);
  cml__shlo_attr_printf(&a, "dimensions = array<i64: %lld>", (long long)n->attrs->axis);
  cml__shlo_op_end(c, a.s, ins, 4, outs, 2);
  cml__shlo_name_t index = cml__shlo_result(&r, 1);
  cml__shlo_bind(c, n->first_output, &index);
  return CML_OK;
}

static cml__shlo_val_t cml_shlo_reshape(cml__shlo_ctx_t* c, const cml__shlo_val_t* v,
                                        const cml_shape_t* to) {
  if (cml_shape_dims_equal(&v->shape, to)) return *v;
  cml_shape_t s = cml_shlo_retype(to, v->shape.dtype);
  return cml__shlo_op(c, "stablehlo.reshape", v, 1, NULL, &s);
}

// |s| with |extra| appended to its dims.
static cml_shape_t cml_shlo_append(const cml_shape_t* s, int64_t extra) {
  cml_shape_t r = *s;
  r.dims[r.rank++] = extra;
  return r;
}

// Bitcast when the source or target is complex (bitcast_convert rejects real <-> complex):
// complex values are split into a trailing (real, imag) axis, the bits are reinterpreted
// between the real component dtypes, and a complex target is rebuilt from its two parts.
static cml__shlo_val_t cml_shlo_bitcast_complex(cml__shlo_ctx_t* c, const cml__shlo_val_t* x,
                                                const cml_shape_t* out) {
  cml_dtype_t sd = x->shape.dtype, td = out->dtype;
  cml_dtype_t p = cml_dtype_real_part(sd), q = cml_dtype_real_part(td);
  int sbits = cml_dtype_bits(sd), tbits = cml_dtype_bits(td);
  // L: the dims shared by both sides; one L element holds max(sbits, tbits) bits.
  cml_shape_t lead = tbits <= sbits ? x->shape : *out;
  if (tbits < sbits) lead.rank = x->shape.rank;
  if (tbits > sbits) lead.rank = out->rank;
  int ebits = sbits > tbits ? sbits : tbits;
  int64_t np = ebits / cml_dtype_bits(p), nq = ebits / cml_dtype_bits(q);
  cml__shlo_val_t a = *x;
  if (cml_dtype_is_complex(sd)) {
    cml_shape_t part = cml_shlo_retype(&x->shape, p);
    cml_shape_t part1 = cml_shlo_append(&part, 1);
    cml__shlo_val_t re = cml__shlo_op(c, "stablehlo.real", x, 1, NULL, &part);
    cml__shlo_val_t im = cml__shlo_op(c, "stablehlo.imag", x, 1, NULL, &part);
    cml__shlo_val_t pair[2] = {cml_shlo_reshape(c, &re, &part1), cml_shlo_reshape(c, &im, &part1)};
    cml_shape_t both = cml_shlo_append(&part, 2);
    cml__shlo_attr_t at;
    cml__shlo_attr_init(&at);
    cml__shlo_attr_printf(&at, "dimension = %d : i64", (int)part.rank);
    a = cml__shlo_op(c, "stablehlo.concatenate", pair, 2, at.s, &both);
  }
  cml_shape_t lp = cml_shlo_append(&lead, np);
  a = cml_shlo_reshape(c, &a, &lp);
  cml_shape_t lq = cml_shlo_retype(&lead, q);
  lq = cml_shlo_append(&lq, nq);
  cml__shlo_val_t b = a;
  if (np == nq) {
    if (p != q) b = cml__shlo_op(c, "stablehlo.bitcast_convert", &a, 1, NULL, &lq);
  } else if (np > nq) {
    cml_shape_t split = cml_shlo_append(&lead, nq);
    split = cml_shlo_append(&split, np / nq);
    a = cml_shlo_reshape(c, &a, &split);
    b = cml__shlo_op(c, "stablehlo.bitcast_convert", &a, 1, NULL, &lq);
  } else {
    cml_shape_t split = cml_shlo_retype(&lead, q);
    split = cml_shlo_append(&split, np);
    split = cml_shlo_append(&split, nq / np);
    b = cml__shlo_op(c, "stablehlo.bitcast_convert", &a, 1, NULL, &split);
    b = cml_shlo_reshape(c, &b, &lq);
  }
  if (!cml_dtype_is_complex(td)) return cml_shlo_reshape(c, &b, out);
  cml_shape_t parts = cml_shlo_retype(out, q);
  parts = cml_shlo_append(&parts, 2);
  b = cml_shlo_reshape(c, &b, &parts);
  cml__shlo_val_t halves[2];
  cml_shape_t one = cml_shlo_retype(out, q);
  one = cml_shlo_append(&one, 1);
  cml_shape_t flat = cml_shlo_retype(out, q);
  for (int k = 0; k < 2; ++k) {
    int64_t starts[CML_MAX_RANK], limits[CML_MAX_RANK], strides[CML_MAX_RANK];
    for (int32_t i = 0; i < parts.rank; ++i) {
      starts[i] = 0;
      limits[i] = parts.dims[i];
      strides[i] = 1;
    }
    starts[parts.rank - 1] = k;
    limits[parts.rank - 1] = k + 1;
    cml__shlo_attr_t at;
    cml__shlo_attr_init(&at);
    cml__shlo_attr_printf(&at, "start_indices = ");
    cml__shlo_attr_array(&at, starts, parts.rank);
    cml__shlo_attr_printf(&at, ", limit_indices = ");
    cml__shlo_attr_array(&at, limits, parts.rank);
    cml__shlo_attr_printf(&at, ", strides = ");
    cml__shlo_attr_array(&at, strides, parts.rank);
    cml__shlo_val_t sl = cml__shlo_op(c, "stablehlo.slice", &b, 1, at.s, &one);
    halves[k] = cml_shlo_reshape(c, &sl, &flat);
  }
  return cml__shlo_op(c, "stablehlo.complex", halves, 2, NULL, out);
}

static cml_status_t cml_shlo_bitcast(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  cml__shlo_val_t x = cml__shlo_value(c, n->inputs[0]);
  const cml_shape_t* out = cml_shlo_out(c, n, 0);
  if (x.shape.dtype == out->dtype) {
    cml_shlo_bind1(c, n, &x);
    return CML_OK;
  }
  if (x.shape.dtype == CML_DTYPE_BOOL) x = cml__shlo_convert(c, &x, CML_DTYPE_U8);
  if (out->dtype == CML_DTYPE_BOOL) {
    cml__shlo_val_t bytes = x;
    if (x.shape.dtype != CML_DTYPE_U8) {
      cml_shape_t us = cml_shlo_retype(out, CML_DTYPE_U8);
      bytes = cml__shlo_op(c, "stablehlo.bitcast_convert", &x, 1, NULL, &us);
    }
    cml__shlo_val_t r = cml__shlo_convert(c, &bytes, CML_DTYPE_BOOL);
    cml_shlo_bind1(c, n, &r);
    return CML_OK;
  }
  cml__shlo_val_t r = x;
  if (cml_dtype_is_complex(x.shape.dtype) || cml_dtype_is_complex(out->dtype)) {
    r = cml_shlo_bitcast_complex(c, &x, out);
  } else if (x.shape.dtype != out->dtype) {
    r = cml__shlo_op(c, "stablehlo.bitcast_convert", &x, 1, NULL, out);
  }
  cml_shlo_bind1(c, n, &r);
  return CML_OK;
}

static cml_status_t cml_shlo_gather(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  const cml_gather_dims_t* g = &n->attrs->u.gather;
  cml__shlo_val_t ins[2] = {cml__shlo_value(c, n->inputs[0]), cml__shlo_value(c, n->inputs[1])};
  cml__shlo_attr_t a;
  cml__shlo_attr_init(&a);
  cml__shlo_attr_printf(&a, "dimension_numbers = #stablehlo.gather<");
  if (g->offset_output_axis_count) {
    cml__shlo_attr_printf(&a, "offset_dims = ");
    cml__shlo_attr_list(&a, g->offset_output_axes, g->offset_output_axis_count);
    cml__shlo_attr_printf(&a, ", ");
  }
  if (g->collapsed_slice_axis_count) {
    cml__shlo_attr_printf(&a, "collapsed_slice_dims = ");
    cml__shlo_attr_list(&a, g->collapsed_slice_axes, g->collapsed_slice_axis_count);
    cml__shlo_attr_printf(&a, ", ");
  }
  if (g->start_index_map_count) {
    cml__shlo_attr_printf(&a, "start_index_map = ");
    cml__shlo_attr_list(&a, g->start_index_map, g->start_index_map_count);
    cml__shlo_attr_printf(&a, ", ");
  }
  cml__shlo_attr_printf(
      &a, "index_vector_dim = %lld>, slice_sizes = ", (long long)g->index_vector_axis);
  cml__shlo_attr_array(&a, g->slice_sizes, g->slice_size_count);
  cml__shlo_attr_printf(&a, ", indices_are_sorted = %s", g->indices_are_sorted ? "true" : "false");
  cml__shlo_val_t r = cml__shlo_op(c, "stablehlo.gather", ins, 2, a.s, cml_shlo_out(c, n, 0));
  cml_shlo_bind1(c, n, &r);
  return CML_OK;
}

static cml_status_t cml_shlo_scatter(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  const cml_scatter_dims_t* s = &n->attrs->u.scatter;
  cml__shlo_val_t ins[3] = {cml__shlo_value(c, n->inputs[0]), cml__shlo_value(c, n->inputs[1]),
                            cml__shlo_value(c, n->inputs[2])};
  const char* body = n->op == CML_OP_SCATTER_MAX   ? "stablehlo.maximum"
                     : n->op == CML_OP_SCATTER_MIN ? "stablehlo.minimum"
                                                   : "stablehlo.add";
  cml__shlo_name_t r = cml__shlo_op_begin(c, "stablehlo.scatter", ins, 3, 1);
  cml__shlo_printf(c, " (");
  cml__shlo_binary_region(c, body, ins[0].shape.dtype);
  cml__shlo_printf(c, ")");
  cml__shlo_attr_t a;
  cml__shlo_attr_init(&a);
  cml__shlo_attr_printf(&a, "scatter_dimension_numbers = #stablehlo.scatter<");
  if (s->update_window_axis_count) {
    cml__shlo_attr_printf(&a, "update_window_dims = ");
    cml__shlo_attr_list(&a, s->update_window_axes, s->update_window_axis_count);
    cml__shlo_attr_printf(&a, ", ");
  }
  if (s->inserted_window_axis_count) {
    cml__shlo_attr_printf(&a, "inserted_window_dims = ");
    cml__shlo_attr_list(&a, s->inserted_window_axes, s->inserted_window_axis_count);
    cml__shlo_attr_printf(&a, ", ");
  }
  if (s->scatter_axes_to_operand_axes_count) {
    cml__shlo_attr_printf(&a, "scatter_dims_to_operand_dims = ");
    cml__shlo_attr_list(&a, s->scatter_axes_to_operand_axes, s->scatter_axes_to_operand_axes_count);
    cml__shlo_attr_printf(&a, ", ");
  }
  cml__shlo_attr_printf(&a,
                        "index_vector_dim = %lld>, indices_are_sorted = %s, "
                        "unique_indices = %s",
                        (long long)s->index_vector_axis, s->indices_are_sorted ? "true" : "false",
                        s->unique_indices ? "true" : "false");
  cml__shlo_op_end(c, a.s, ins, 3, cml_shlo_out(c, n, 0), 1);
  cml__shlo_bind(c, n->first_output, &r);
  return CML_OK;
}

static cml_status_t cml_shlo_dot(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  const cml_dot_config_t* d = &n->attrs->u.dot;
  cml__shlo_val_t ins[2] = {cml__shlo_value(c, n->inputs[0]), cml__shlo_value(c, n->inputs[1])};
  const cml_shape_t* out = cml_shlo_out(c, n, 0);
  cml_dtype_t acc =
      d->accumulator_dtype != CML_DTYPE_INVALID ? d->accumulator_dtype : ins[0].shape.dtype;
  for (int k = 0; k < 2; ++k) ins[k] = cml__shlo_convert(c, &ins[k], acc);
  cml__shlo_attr_t a;
  cml__shlo_attr_init(&a);
  cml__shlo_attr_printf(&a, "dot_dimension_numbers = #stablehlo.dot<");
  bool any = false;
  if (d->lhs_batch_count) {
    cml__shlo_attr_printf(&a, "lhs_batching_dimensions = ");
    cml__shlo_attr_list(&a, d->lhs_batch_axes, d->lhs_batch_count);
    cml__shlo_attr_printf(&a, ", rhs_batching_dimensions = ");
    cml__shlo_attr_list(&a, d->rhs_batch_axes, d->rhs_batch_count);
    any = true;
  }
  if (d->lhs_contracting_count) {
    cml__shlo_attr_printf(&a, "%slhs_contracting_dimensions = ", any ? ", " : "");
    cml__shlo_attr_list(&a, d->lhs_contracting_axes, d->lhs_contracting_count);
    cml__shlo_attr_printf(&a, ", rhs_contracting_dimensions = ");
    cml__shlo_attr_list(&a, d->rhs_contracting_axes, d->rhs_contracting_count);
  }
  const char* prec = cml_shlo_precision(c, acc);
  cml__shlo_attr_printf(&a,
                        ">, precision_config = [#stablehlo<precision %s>, "
                        "#stablehlo<precision %s>]",
                        prec, prec);
  cml_shape_t acc_shape = cml_shlo_retype(out, acc);
  cml__shlo_val_t r = cml__shlo_op(c, "stablehlo.dot_general", ins, 2, a.s, &acc_shape);
  r = cml__shlo_convert(c, &r, out->dtype);
  cml_shlo_bind1(c, n, &r);
  return CML_OK;
}

// Fills |labels| (rank entries) for one side of conv dimension numbers.
static void cml_shlo_conv_side(cml__shlo_attr_t* a, int32_t rank, int64_t first_axis,
                               const char* first, int64_t second_axis, const char* second,
                               const int64_t* spatial, int32_t spatial_count) {
  cml__shlo_attr_printf(a, "[");
  for (int32_t i = 0; i < rank; ++i) {
    if (i) cml__shlo_attr_printf(a, ", ");
    if (i == first_axis) {
      cml__shlo_attr_printf(a, "%s", first);
    } else if (i == second_axis) {
      cml__shlo_attr_printf(a, "%s", second);
    } else {
      for (int32_t k = 0; k < spatial_count; ++k) {
        if (spatial[k] == i) cml__shlo_attr_printf(a, "%d", (int)k);
      }
    }
  }
  cml__shlo_attr_printf(a, "]");
}

static cml_status_t cml_shlo_conv(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  const cml_conv_config_t* cv = &n->attrs->u.conv;
  cml__shlo_val_t ins[2] = {cml__shlo_value(c, n->inputs[0]), cml__shlo_value(c, n->inputs[1])};
  const cml_shape_t* out = cml_shlo_out(c, n, 0);
  cml_dtype_t in_dtype = ins[0].shape.dtype;
  cml_dtype_t compute = in_dtype;
  if (out->dtype != in_dtype && cml_dtype_bits(out->dtype) >= cml_dtype_bits(in_dtype)) {
    compute = out->dtype;
  }
  for (int k = 0; k < 2; ++k) ins[k] = cml__shlo_convert(c, &ins[k], compute);
  int32_t ns = cv->spatial_count, rank = ns + 2;
  cml__shlo_attr_t a;
  cml__shlo_attr_init(&a);
  cml__shlo_attr_printf(&a, "dimension_numbers = #stablehlo.conv<");
  cml_shlo_conv_side(&a, rank, cv->input_batch_axis, "b", cv->input_channel_axis, "f",
                     cv->input_spatial_axes, ns);
  cml__shlo_attr_printf(&a, "x");
  cml_shlo_conv_side(&a, rank, cv->kernel_input_channel_axis, "i", cv->kernel_output_channel_axis,
                     "o", cv->kernel_spatial_axes, ns);
  cml__shlo_attr_printf(&a, "->");
  cml_shlo_conv_side(&a, rank, cv->output_batch_axis, "b", cv->output_channel_axis, "f",
                     cv->output_spatial_axes, ns);
  cml__shlo_attr_printf(&a, ">, window_strides = ");
  cml__shlo_attr_array(&a, cv->strides, ns);
  cml__shlo_attr_printf(&a, ", padding = ");
  cml__shlo_attr_padding(&a, cv->padding_low, cv->padding_high, ns);
  cml__shlo_attr_printf(&a, ", lhs_dilation = ");
  cml__shlo_attr_array(&a, cv->input_dilations, ns);
  cml__shlo_attr_printf(&a, ", rhs_dilation = ");
  cml__shlo_attr_array(&a, cv->kernel_dilations, ns);
  const char* prec = cml_shlo_precision(c, compute);
  cml__shlo_attr_printf(&a,
                        ", feature_group_count = %lld : i64, batch_group_count = %lld : i64, "
                        "precision_config = [#stablehlo<precision %s>, #stablehlo<precision %s>]",
                        (long long)(cv->channel_group_count > 1 ? cv->channel_group_count : 1),
                        (long long)(cv->batch_group_count > 1 ? cv->batch_group_count : 1), prec,
                        prec);
  cml_shape_t compute_shape = cml_shlo_retype(out, compute);
  cml__shlo_val_t r = cml__shlo_op(c, "stablehlo.convolution", ins, 2, a.s, &compute_shape);
  r = cml__shlo_convert(c, &r, out->dtype);
  cml_shlo_bind1(c, n, &r);
  return CML_OK;
}

static void cml_shlo_window_attrs(cml__shlo_attr_t* a, const cml_window_config_t* w,
                                  bool dilations) {
  cml__shlo_attr_printf(a, "window_dimensions = ");
  cml__shlo_attr_array(a, w->window_dims, w->rank);
  cml__shlo_attr_printf(a, ", window_strides = ");
  cml__shlo_attr_array(a, w->strides, w->rank);
  if (dilations) {
    cml__shlo_attr_printf(a, ", base_dilations = ");
    cml__shlo_attr_array(a, w->input_dilations, w->rank);
    cml__shlo_attr_printf(a, ", window_dilations = ");
    cml__shlo_attr_array(a, w->window_dilations, w->rank);
  }
  cml__shlo_attr_printf(a, ", padding = ");
  cml__shlo_attr_padding(a, w->padding_low, w->padding_high, w->rank);
}

// reduce_window of |x| with |body| and |init_kind| over |w|, to |out|.
static cml__shlo_val_t cml_shlo_reduce_window_op(cml__shlo_ctx_t* c, const cml__shlo_val_t* x,
                                                 const char* body,
                                                 cml__shlo_scalar_kind_t init_kind,
                                                 const cml_window_config_t* w,
                                                 const cml_shape_t* out) {
  cml__shlo_val_t ins[2];
  ins[0] = *x;
  ins[1] = cml__shlo_const_scalar(c, x->shape.dtype, init_kind);
  cml__shlo_val_t r;
  r.shape = *out;
  r.name = cml__shlo_op_begin(c, "stablehlo.reduce_window", ins, 2, 1);
  cml__shlo_printf(c, " (");
  cml__shlo_binary_region(c, body, x->shape.dtype);
  cml__shlo_printf(c, ")");
  cml__shlo_attr_t a;
  cml__shlo_attr_init(&a);
  cml_shlo_window_attrs(&a, w, true);
  cml__shlo_op_end(c, a.s, ins, 2, out, 1);
  return r;
}

static cml_status_t cml_shlo_reduce_window(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  const char* body;
  cml__shlo_scalar_kind_t init_kind;
  if (!cml_shlo_reduce_type_kind(n->attrs->reduce_type, &body, &init_kind)) {
    return cml__shlo_unimplemented(c, n, "undefined reduction type");
  }
  cml__shlo_val_t x = cml__shlo_value(c, n->inputs[0]);
  cml__shlo_val_t r =
      cml_shlo_reduce_window_op(c, &x, body, init_kind, &n->attrs->u.window, cml_shlo_out(c, n, 0));
  cml_shlo_bind1(c, n, &r);
  return CML_OK;
}

static cml_status_t cml_shlo_select_and_scatter(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  const cml_window_config_t* w = &n->attrs->u.window;
  cml__shlo_val_t operand = cml__shlo_value(c, n->inputs[0]);
  cml__shlo_val_t source = cml__shlo_value(c, n->inputs[1]);
  const cml_shape_t* out = cml_shlo_out(c, n, 0);
  cml_dtype_t dt = operand.shape.dtype;
  if (n->op == CML_OP_SELECT_AND_SCATTER_SUM) {
    // Every source element is added to its whole window: dilate the source by the stride,
    // pad it so that output element i sees the windows covering it, and sum windows of size W.
    int32_t rank = w->rank;
    int64_t low[CML_MAX_RANK], high[CML_MAX_RANK], interior[CML_MAX_RANK];
    cml_window_config_t sum;
    memset(&sum, 0, sizeof sum);
    sum.rank = rank;
    cml_shape_t padded = source.shape;
    for (int32_t i = 0; i < rank; ++i) {
      int64_t wd = w->window_dims[i], s = w->strides[i];
      int64_t m = source.shape.dims[i], dim = operand.shape.dims[i];
      int64_t dilated = m > 0 ? (m - 1) * s + 1 : 0;
      low[i] = wd - 1 - w->padding_low[i];
      high[i] = dim + wd - 1 - low[i] - dilated;
      interior[i] = s - 1;
      padded.dims[i] = dim + wd - 1;
      sum.window_dims[i] = wd;
      sum.strides[i] = 1;
      sum.input_dilations[i] = 1;
      sum.window_dilations[i] = 1;
    }
    cml__shlo_val_t ins[2];
    ins[0] = source;
    ins[1] = cml__shlo_const_scalar(c, dt, CML__SHLO_ZERO);
    cml__shlo_attr_t a;
    cml__shlo_attr_init(&a);
    cml__shlo_attr_printf(&a, "edge_padding_low = ");
    cml__shlo_attr_array(&a, low, rank);
    cml__shlo_attr_printf(&a, ", edge_padding_high = ");
    cml__shlo_attr_array(&a, high, rank);
    cml__shlo_attr_printf(&a, ", interior_padding = ");
    cml__shlo_attr_array(&a, interior, rank);
    cml__shlo_val_t p = cml__shlo_op(c, "stablehlo.pad", ins, 2, a.s, &padded);
    cml__shlo_val_t r =
        cml_shlo_reduce_window_op(c, &p, "stablehlo.add", CML__SHLO_ZERO, &sum, out);
    cml_shlo_bind1(c, n, &r);
    return CML_OK;
  }
  bool is_max = n->op == CML_OP_SELECT_AND_SCATTER_MAX;
  cml__shlo_val_t ins[3];
  ins[0] = operand;
  ins[1] = source;
  ins[2] = cml__shlo_const_scalar(c, dt, CML__SHLO_ZERO);
  cml__shlo_name_t r = cml__shlo_op_begin(c, "stablehlo.select_and_scatter", ins, 3, 1);
  // Select: keep the current (earlier) element on ties, so the first max/min wins.
  cml__shlo_printf(c, " ({\n");
  c->indent++;
  cml_dtype_t dtypes[2] = {dt, dt};
  cml__shlo_val_t args[2];
  cml_shlo_scalar_header(c, dtypes, 2, args);
  cml__shlo_val_t keep = cml__shlo_compare(c, is_max ? "GE" : "LE", &args[0], &args[1], false);
  cml_shlo_region_return(c, &keep, 1);
  c->indent--;
  cml__shlo_line(c);
  cml__shlo_printf(c, "}, ");
  cml__shlo_binary_region(c, "stablehlo.add", dt);
  cml__shlo_printf(c, ")");
  cml__shlo_attr_t a;
  cml__shlo_attr_init(&a);
  cml_shlo_window_attrs(&a, w, false);
  cml__shlo_op_end(c, a.s, ins, 3, out, 1);
  cml__shlo_bind(c, n->first_output, &r);
  return CML_OK;
}

static cml_status_t cml_shlo_rng(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  cml__shlo_val_t state = cml__shlo_value(c, n->inputs[0]);
  const cml_shape_t* values = cml_shlo_out(c, n, 1);
  cml_dtype_t bits_dtype;
  switch (cml_dtype_bits(values->dtype)) {
    case 8:
      bits_dtype = CML_DTYPE_U8;
      break;
    case 16:
      bits_dtype = CML_DTYPE_U16;
      break;
    case 32:
      bits_dtype = CML_DTYPE_U32;
      break;
    case 64:
      bits_dtype = CML_DTYPE_U64;
      break;
    default:
      return cml__shlo_unimplemented(c, n, "no unsigned dtype of that width");
  }
  cml_shape_t outs[2] = {state.shape, cml_shlo_retype(values, bits_dtype)};
  cml__shlo_name_t r = cml__shlo_op_begin(c, "stablehlo.rng_bit_generator", &state, 1, 2);
  cml__shlo_op_end(c, "rng_algorithm = #stablehlo<rng_algorithm PHILOX>", &state, 1, outs, 2);
  cml__shlo_name_t new_state = cml__shlo_result(&r, 0);
  cml__shlo_val_t bits = {cml__shlo_result(&r, 1), outs[1]};
  cml__shlo_bind(c, n->first_output, &new_state);
  if (bits_dtype != values->dtype) {
    bits = cml__shlo_op(c, "stablehlo.bitcast_convert", &bits, 1, NULL, values);
  }
  cml__shlo_bind(c, n->first_output + 1, &bits.name);
  return CML_OK;
}

static cml_status_t cml_shlo_batch_norm(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  cml__shlo_val_t ins[5];
  for (uint32_t i = 0; i < n->input_count && i < 5; ++i) ins[i] = cml__shlo_value(c, n->inputs[i]);
  const char* op = n->op == CML_OP_BATCH_NORM_INFERENCE  ? "stablehlo.batch_norm_inference"
                   : n->op == CML_OP_BATCH_NORM_TRAINING ? "stablehlo.batch_norm_training"
                                                         : "stablehlo.batch_norm_grad";
  cml_shape_t outs[3];
  for (uint32_t i = 0; i < n->output_count && i < 3; ++i) outs[i] = *cml_shlo_out(c, n, i);
  cml__shlo_attr_t a;
  cml__shlo_attr_init(&a);
  cml__shlo_attr_printf(&a, "epsilon = %.9e : f32, feature_index = %lld : i64",
                        (double)n->attrs->epsilon, (long long)n->attrs->axis);
  cml__shlo_name_t r = cml__shlo_op_begin(c, op, ins, (int)n->input_count, n->output_count);
  cml__shlo_op_end(c, a.s, ins, (int)n->input_count, outs, n->output_count);
  for (uint32_t i = 0; i < n->output_count; ++i) {
    cml__shlo_name_t name = n->output_count == 1 ? r : cml__shlo_result(&r, i);
    cml__shlo_bind(c, n->first_output + i, &name);
  }
  return CML_OK;
}

static cml_status_t cml_shlo_barrier(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  cml__shlo_val_t* ins = malloc(n->input_count * sizeof *ins + 1);
  cml_shape_t* outs = malloc(n->input_count * sizeof *outs + 1);
  if (!ins || !outs) {
    free(ins);
    free(outs);
    return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  }
  for (uint32_t i = 0; i < n->input_count; ++i) {
    ins[i] = cml__shlo_value(c, n->inputs[i]);
    outs[i] = ins[i].shape;
  }
  // SchedulingBarrier(x, deps...) returns the first result only: x, ordered after the deps.
  cml__shlo_name_t r = cml__shlo_op_begin(c, "stablehlo.optimization_barrier", ins,
                                          (int)n->input_count, n->input_count);
  cml__shlo_op_end(c, NULL, ins, (int)n->input_count, outs, n->input_count);
  for (uint32_t i = 0; i < n->output_count; ++i) {
    cml__shlo_name_t name = n->input_count == 1 ? r : cml__shlo_result(&r, i);
    cml__shlo_bind(c, n->first_output + i, &name);
  }
  free(ins);
  free(outs);
  return CML_OK;
}

static cml_status_t cml_shlo_fft(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  static const char* const kTypes[CML_FFT_TYPE_COUNT] = {"FFT", "IFFT", "RFFT", "IRFFT"};
  if ((int)n->attrs->fft_type < 0 || n->attrs->fft_type >= CML_FFT_TYPE_COUNT) {
    return cml__shlo_unimplemented(c, n, "unknown FFT type");
  }
  cml__shlo_val_t x = cml__shlo_value(c, n->inputs[0]);
  cml__shlo_attr_t a;
  cml__shlo_attr_init(&a);
  cml__shlo_attr_printf(
      &a, "fft_type = #stablehlo<fft_type %s>, fft_length = ", kTypes[n->attrs->fft_type]);
  cml__shlo_attr_array(&a, n->attrs->axes, n->attrs->axis_count);
  cml__shlo_val_t r = cml__shlo_op(c, "stablehlo.fft", &x, 1, a.s, cml_shlo_out(c, n, 0));
  cml_shlo_bind1(c, n, &r);
  return CML_OK;
}

// Element-wise ops (unary, binary, compare) and their special cases.
static cml_status_t cml_shlo_elementwise(cml__shlo_ctx_t* c, const cml_ir_node_t* n,
                                         bool* handled) {
  *handled = true;
  const cml_shape_t* out = cml_shlo_out(c, n, 0);
  cml_op_kind_t kind = cml_op_kind(n->op);
  if (kind == CML_OPK_UNARY) {
    cml__shlo_val_t x = cml__shlo_value(c, n->inputs[0]);
    bool complex = cml_dtype_is_complex(x.shape.dtype);
    cml__shlo_val_t r;
    switch (n->op) {
      case CML_OP_IDENTITY:
        r = x;
        break;
      case CML_OP_IS_NAN:
        r = cml__shlo_compare(c, "NE", &x, &x, false);
        break;
      case CML_OP_REAL:
        r = complex ? cml__shlo_op(c, "stablehlo.real", &x, 1, NULL, out) : x;
        break;
      case CML_OP_IMAG:
        r = complex ? cml__shlo_op(c, "stablehlo.imag", &x, 1, NULL, out)
                    : cml__shlo_const_fill(c, out->dtype, CML__SHLO_ZERO, out);
        break;
      case CML_OP_ABS:
        r = complex ? cml_shlo_complex_abs(c, &x, out)
                    : cml__shlo_op(c, "stablehlo.abs", &x, 1, NULL, out);
        break;
      case CML_OP_CONJ: {
        cml_shape_t part = cml_shlo_retype(out, cml_dtype_real_part(out->dtype));
        cml__shlo_val_t pair[2];
        pair[0] = cml__shlo_op(c, "stablehlo.real", &x, 1, NULL, &part);
        cml__shlo_val_t im = cml__shlo_op(c, "stablehlo.imag", &x, 1, NULL, &part);
        pair[1] = cml__shlo_op(c, "stablehlo.negate", &im, 1, NULL, &part);
        r = cml__shlo_op(c, "stablehlo.complex", pair, 2, NULL, out);
        break;
      }
      default: {
        const char* name = cml_shlo_unary_name(n->op);
        if (!name) return cml__shlo_unimplemented(c, n, "no StableHLO lowering");
        if (cml_shlo_is_half(x.shape.dtype) && cml_shlo_is_transcendental(n->op)) {
          // Float16/BFloat16: computed in Float32 and rounded once (the plugin's half
          // precision versions of these are off by several ulps or underflow early).
          cml__shlo_val_t wide = cml__shlo_convert(c, &x, CML_DTYPE_F32);
          cml_shape_t ws = cml_shlo_retype(out, CML_DTYPE_F32);
          r = cml__shlo_op(c, name, &wide, 1, NULL, &ws);
          r = cml__shlo_convert(c, &r, out->dtype);
        } else {
          r = cml__shlo_op(c, name, &x, 1, NULL, out);
        }
        break;
      }
    }
    cml_shlo_bind1(c, n, &r);
    return CML_OK;
  }
  if (kind == CML_OPK_BINARY || kind == CML_OPK_COMPARE) {
    cml__shlo_val_t ins[2];
    for (int k = 0; k < 2; ++k) {
      cml__shlo_val_t v = cml__shlo_value(c, n->inputs[k]);
      ins[k] = cml__shlo_broadcast(c, &v, out);
    }
    cml__shlo_val_t r;
    if (kind == CML_OPK_COMPARE) {
      bool total_order;
      const char* dir = cml_shlo_compare_direction(n->op, &total_order);
      if (!dir) return cml__shlo_unimplemented(c, n, "no StableHLO lowering");
      r = cml__shlo_compare(c, dir, &ins[0], &ins[1], total_order);
    } else {
      const char* name = cml_shlo_binary_name(n->op);
      if (!name) return cml__shlo_unimplemented(c, n, "no StableHLO lowering");
      if (n->op == CML_OP_POW && cml_dtype_is_int(out->dtype)) {
        r = cml_shlo_int_pow(c, &ins[0], &ins[1]);
      } else if (n->op == CML_OP_DIV && out->dtype == CML_DTYPE_F64) {
        r = cml_shlo_div_f64(c, &ins[0], &ins[1]);
      } else if ((cml_shlo_is_half(out->dtype) && (n->op == CML_OP_POW || n->op == CML_OP_ATAN2 ||
                                                   n->op == CML_OP_REM || n->op == CML_OP_DIV)) ||
                 (n->op == CML_OP_DIV && out->dtype == CML_DTYPE_F32)) {
        // Through a wider type, rounded once. Division of Float32 and the half types is done
        // in Float64 (see cml_shlo_div_f64 for why the plugin's own division is not used);
        // the other half-precision ops in Float32, since the plugin's half-precision versions
        // are off by several ulps.
        cml_dtype_t wt = n->op == CML_OP_DIV ? CML_DTYPE_F64 : CML_DTYPE_F32;
        cml__shlo_val_t wide[2] = {cml__shlo_convert(c, &ins[0], wt),
                                   cml__shlo_convert(c, &ins[1], wt)};
        cml_shape_t ws = cml_shlo_retype(out, wt);
        r = cml__shlo_op(c, name, wide, 2, NULL, &ws);
        r = cml__shlo_convert(c, &r, out->dtype);
      } else {
        r = cml_shlo_binary_op(c, name, &ins[0], &ins[1], out);
      }
    }
    cml_shlo_bind1(c, n, &r);
    return CML_OK;
  }
  if (kind == CML_OPK_REDUCE) return cml_shlo_reduce(c, n);
  *handled = false;
  return CML_OK;
}

cml_status_t cml__shlo_emit_simple_node(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  bool handled = false;
  cml_status_t st = cml_shlo_elementwise(c, n, &handled);
  if (handled) return st;
  const cml_ir_attrs_t* at = n->attrs;
  const cml_shape_t* out = cml_shlo_out(c, n, 0);
  cml__shlo_attr_t a;
  cml__shlo_attr_init(&a);
  cml__shlo_val_t r;
  switch (n->op) {
    case CML_OP_CONSTANT:
      r = cml__shlo_constant(c, out, n->data);
      break;
    case CML_OP_CONVERT_DTYPE: {
      cml__shlo_val_t x = cml__shlo_value(c, n->inputs[0]);
      r = cml__shlo_convert(c, &x, out->dtype);
      break;
    }
    case CML_OP_BITCAST:
      return cml_shlo_bitcast(c, n);
    case CML_OP_CLAMP: {
      cml__shlo_val_t ins[3];
      for (int k = 0; k < 3; ++k) ins[k] = cml__shlo_value(c, n->inputs[k]);
      if (cml_dtype_is_float(out->dtype)) {
        // min(max(x, lo), hi) with NaN propagating from any operand (the plugin's clamp drops
        // NaNs, as its maximum/minimum do).
        cml__shlo_val_t lo = cml__shlo_broadcast(c, &ins[0], out);
        cml__shlo_val_t hi = cml__shlo_broadcast(c, &ins[2], out);
        r = cml_shlo_float_minmax(c, true, &ins[1], &lo);
        r = cml_shlo_float_minmax(c, false, &r, &hi);
      } else {
        r = cml__shlo_op(c, "stablehlo.clamp", ins, 3, NULL, out);
      }
      break;
    }
    case CML_OP_WHERE: {
      cml__shlo_val_t ins[3];
      for (int k = 0; k < 3; ++k) {
        cml__shlo_val_t v = cml__shlo_value(c, n->inputs[k]);
        ins[k] = cml__shlo_broadcast(c, &v, out);
      }
      r = cml__shlo_op(c, "stablehlo.select", ins, 3, NULL, out);
      break;
    }
    case CML_OP_IOTA:
      cml__shlo_attr_printf(&a, "iota_dimension = %lld : i64", (long long)at->axis);
      r = cml__shlo_op(c, "stablehlo.iota", NULL, 0, a.s, out);
      break;
    case CML_OP_RESHAPE: {
      cml__shlo_val_t x = cml__shlo_value(c, n->inputs[0]);
      r = cml__shlo_op(c, "stablehlo.reshape", &x, 1, NULL, out);
      break;
    }
    case CML_OP_TRANSPOSE: {
      cml__shlo_val_t x = cml__shlo_value(c, n->inputs[0]);
      cml__shlo_attr_printf(&a, "permutation = ");
      cml__shlo_attr_array(&a, at->axes, at->axis_count);
      r = cml__shlo_op(c, "stablehlo.transpose", &x, 1, a.s, out);
      break;
    }
    case CML_OP_BROADCAST_IN_DIM: {
      cml__shlo_val_t x = cml__shlo_value(c, n->inputs[0]);
      cml__shlo_attr_printf(&a, "broadcast_dimensions = ");
      cml__shlo_attr_array(&a, at->axes, at->axis_count);
      r = cml__shlo_op(c, "stablehlo.broadcast_in_dim", &x, 1, a.s, out);
      break;
    }
    case CML_OP_CONCATENATE: {
      cml__shlo_val_t* ins = malloc(n->input_count * sizeof *ins + 1);
      if (!ins) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
      for (uint32_t k = 0; k < n->input_count; ++k) ins[k] = cml__shlo_value(c, n->inputs[k]);
      cml__shlo_attr_printf(&a, "dimension = %lld : i64", (long long)at->axis);
      r = cml__shlo_op(c, "stablehlo.concatenate", ins, (int)n->input_count, a.s, out);
      free(ins);
      break;
    }
    case CML_OP_SLICE: {
      cml__shlo_val_t x = cml__shlo_value(c, n->inputs[0]);
      int32_t rank = x.shape.rank;
      cml__shlo_attr_printf(&a, "start_indices = ");
      cml__shlo_attr_array(&a, at->starts, rank);
      cml__shlo_attr_printf(&a, ", limit_indices = ");
      cml__shlo_attr_array(&a, at->limits, rank);
      cml__shlo_attr_printf(&a, ", strides = ");
      cml__shlo_attr_array(&a, at->strides, rank);
      r = cml__shlo_op(c, "stablehlo.slice", &x, 1, a.s, out);
      break;
    }
    case CML_OP_REVERSE: {
      cml__shlo_val_t x = cml__shlo_value(c, n->inputs[0]);
      cml__shlo_attr_printf(&a, "dimensions = ");
      cml__shlo_attr_array(&a, at->axes, at->axis_count);
      r = cml__shlo_op(c, "stablehlo.reverse", &x, 1, a.s, out);
      break;
    }
    case CML_OP_PAD: {
      cml__shlo_val_t ins[2] = {cml__shlo_value(c, n->inputs[0]), cml__shlo_value(c, n->inputs[1])};
      int32_t rank = ins[0].shape.rank;
      int64_t low[CML_MAX_RANK], high[CML_MAX_RANK], interior[CML_MAX_RANK];
      for (int32_t i = 0; i < rank; ++i) {
        low[i] = at->pads[i].low;
        high[i] = at->pads[i].high;
        interior[i] = at->pads[i].interior;
      }
      cml__shlo_attr_printf(&a, "edge_padding_low = ");
      cml__shlo_attr_array(&a, low, rank);
      cml__shlo_attr_printf(&a, ", edge_padding_high = ");
      cml__shlo_attr_array(&a, high, rank);
      cml__shlo_attr_printf(&a, ", interior_padding = ");
      cml__shlo_attr_array(&a, interior, rank);
      r = cml__shlo_op(c, "stablehlo.pad", ins, 2, a.s, out);
      break;
    }
    case CML_OP_DYNAMIC_SLICE:
    case CML_OP_DYNAMIC_UPDATE_SLICE: {
      cml__shlo_val_t* ins = malloc(n->input_count * sizeof *ins + 1);
      if (!ins) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
      for (uint32_t k = 0; k < n->input_count; ++k) ins[k] = cml__shlo_value(c, n->inputs[k]);
      if (n->op == CML_OP_DYNAMIC_SLICE) {
        cml__shlo_attr_printf(&a, "slice_sizes = ");
        cml__shlo_attr_array(&a, out->dims, out->rank);
        r = cml__shlo_op(c, "stablehlo.dynamic_slice", ins, (int)n->input_count, a.s, out);
      } else {
        r = cml__shlo_op(c, "stablehlo.dynamic_update_slice", ins, (int)n->input_count, NULL, out);
      }
      free(ins);
      break;
    }
    case CML_OP_GATHER:
      return cml_shlo_gather(c, n);
    case CML_OP_SCATTER_SUM:
    case CML_OP_SCATTER_MAX:
    case CML_OP_SCATTER_MIN:
      return cml_shlo_scatter(c, n);
    case CML_OP_DOT:
    case CML_OP_DOT_GENERAL:
      return cml_shlo_dot(c, n);
    case CML_OP_CONV_GENERAL:
      return cml_shlo_conv(c, n);
    case CML_OP_ARG_MIN_MAX:
      return cml_shlo_arg_min_max(c, n);
    case CML_OP_REDUCE_WINDOW:
      return cml_shlo_reduce_window(c, n);
    case CML_OP_SELECT_AND_SCATTER_MAX:
    case CML_OP_SELECT_AND_SCATTER_MIN:
    case CML_OP_SELECT_AND_SCATTER_SUM:
      return cml_shlo_select_and_scatter(c, n);
    case CML_OP_RNG_BIT_GENERATOR:
      return cml_shlo_rng(c, n);
    case CML_OP_FFT:
      return cml_shlo_fft(c, n);
    case CML_OP_BATCH_NORM_INFERENCE:
    case CML_OP_BATCH_NORM_TRAINING:
    case CML_OP_BATCH_NORM_GRADIENT:
      return cml_shlo_batch_norm(c, n);
    case CML_OP_OPTIMIZATION_BARRIER:
    case CML_OP_SCHEDULING_BARRIER:
      return cml_shlo_barrier(c, n);
    default:
      return cml__shlo_unimplemented(c, n, "no StableHLO lowering for this op");
  }
  cml_shlo_bind1(c, n, &r);
  return CML_OK;
}
