// SPDX-License-Identifier: Apache-2.0
// src/backends/xla/stablehlo/emit_elementwise.c: StableHLO lowerings of the "elementwise" ops
// (unary, binary and compare ops with explicit broadcasting, ConvertDType, Bitcast, Clamp,
// Where, Iota).
//
// Notes on semantics:
// - Restricted broadcasting is made explicit: a scalar or size-1 operand goes through
//   broadcast_in_dim to the output's dims first.
// - Bool is i1 in StableHLO but 8 bits in cml: Bitcast from/to Bool goes through ui8.
// - Float division is kept correctly rounded against XLA's algebraic simplifier (which turns
//   x / broadcast(y) into x * broadcast(1 / y), and more): Float32 and half types divide in
//   Float64, Float64 divides behind optimization barriers (cml_shlo_div_f64).
// - Erf uses chlo.erf, which the PJRT plugins accept and expand.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/xla/stablehlo/emit_internal.h"

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

// |r|, the complex result of Log, Log1p, Sqrt, Rsqrt or Sign of |x|, with NaN + NaN i where a
// part of |x| is NaN and neither is infinite (C99 Annex G; what c computes): XLA's expansions
// of these take |x| through the plugin's fast min/max, which drop a NaN, and returned a finite
// part for 1 + NaN i (Log: 0.3466 + NaN i). Values with an infinite part keep XLA's result.
static cml__shlo_val_t cml_shlo_complex_nan_guard(cml__shlo_ctx_t* c, const cml__shlo_val_t* x,
                                                  const cml__shlo_val_t* r,
                                                  const cml_shape_t* out) {
  cml_shape_t part = cml_shlo_retype(out, cml_dtype_real_part(out->dtype));
  cml_shape_t bs = cml_shlo_retype(out, CML_DTYPE_BOOL);
  cml__shlo_val_t parts[2] = {cml__shlo_op(c, "stablehlo.real", x, 1, NULL, &part),
                              cml__shlo_op(c, "stablehlo.imag", x, 1, NULL, &part)};
  cml__shlo_val_t inf = cml__shlo_const_fill(c, part.dtype, CML__SHLO_HIGHEST, &part);
  cml__shlo_val_t is_nan[2], finite[2];
  for (int k = 0; k < 2; ++k) {
    is_nan[k] = cml__shlo_compare(c, "NE", &parts[k], &parts[k], false);
    cml__shlo_val_t mag = cml__shlo_op(c, "stablehlo.abs", &parts[k], 1, NULL, &part);
    finite[k] = cml__shlo_compare(c, "NE", &mag, &inf, false);
  }
  cml__shlo_val_t nan_any = cml__shlo_op(c, "stablehlo.or", is_nan, 2, NULL, &bs);
  cml__shlo_val_t no_inf = cml__shlo_op(c, "stablehlo.and", finite, 2, NULL, &bs);
  cml__shlo_val_t both[2] = {nan_any, no_inf};
  cml__shlo_val_t guard = cml__shlo_op(c, "stablehlo.and", both, 2, NULL, &bs);
  // NaN in both parts: the sum of the two parts is NaN wherever the guard holds.
  cml__shlo_val_t sum = cml__shlo_op(c, "stablehlo.add", parts, 2, NULL, &part);
  cml__shlo_val_t pair[2] = {sum, sum};
  cml__shlo_val_t nan_c = cml__shlo_op(c, "stablehlo.complex", pair, 2, NULL, out);
  cml__shlo_val_t sel[3] = {guard, nan_c, *r};
  return cml__shlo_op(c, "stablehlo.select", sel, 3, NULL, out);
}

// Complex Sign and Expm1 where XLA's expansions miss (c computes these): Sign of a value whose
// |z| overflows with both parts finite (DBL_MAX + DBL_MAX i gave 0) is the Sign of z / 2, exact
// there; Expm1 of a value with real part -inf (NaN + NaN i for -inf + inf i) is -1.
static cml__shlo_val_t cml_shlo_complex_edges(cml__shlo_ctx_t* c, cml_op_t op,
                                              const cml__shlo_val_t* x, const cml__shlo_val_t* r,
                                              const cml_shape_t* out) {
  cml_shape_t part = cml_shlo_retype(out, cml_dtype_real_part(out->dtype));
  cml_shape_t bs = cml_shlo_retype(out, CML_DTYPE_BOOL);
  cml__shlo_val_t re = cml__shlo_op(c, "stablehlo.real", x, 1, NULL, &part);
  cml__shlo_val_t zero = cml__shlo_const_fill(c, part.dtype, CML__SHLO_ZERO, &part);
  if (op == CML_OP_EXPM1) {
    cml__shlo_val_t ninf = cml__shlo_const_fill(c, part.dtype, CML__SHLO_LOWEST, &part);
    cml__shlo_val_t at = cml__shlo_compare(c, "EQ", &re, &ninf, false);
    cml__shlo_val_t one = cml__shlo_const_fill(c, part.dtype, CML__SHLO_ONE, &part);
    cml__shlo_val_t pair[2] = {cml__shlo_op(c, "stablehlo.negate", &one, 1, NULL, &part), zero};
    cml__shlo_val_t minus_one = cml__shlo_op(c, "stablehlo.complex", pair, 2, NULL, out);
    cml__shlo_val_t sel[3] = {at, minus_one, *r};
    return cml__shlo_op(c, "stablehlo.select", sel, 3, NULL, out);
  }
  // Sign: |z| infinite while both parts are finite.
  cml__shlo_val_t im = cml__shlo_op(c, "stablehlo.imag", x, 1, NULL, &part);
  cml__shlo_val_t inf = cml__shlo_const_fill(c, part.dtype, CML__SHLO_HIGHEST, &part);
  cml__shlo_val_t mag = cml_shlo_complex_abs(c, x, &part);
  cml__shlo_val_t finite[3];
  cml__shlo_val_t parts[2] = {re, im};
  for (int k = 0; k < 2; ++k) {
    cml__shlo_val_t a = cml__shlo_op(c, "stablehlo.abs", &parts[k], 1, NULL, &part);
    finite[k] = cml__shlo_compare(c, "NE", &a, &inf, false);
  }
  finite[2] = cml__shlo_compare(c, "EQ", &mag, &inf, false);
  cml__shlo_val_t both = cml__shlo_op(c, "stablehlo.and", finite, 2, NULL, &bs);
  cml__shlo_val_t big_in[2] = {both, finite[2]};
  cml__shlo_val_t big = cml__shlo_op(c, "stablehlo.and", big_in, 2, NULL, &bs);
  cml__shlo_val_t half_re = cml__shlo_const_fill(c, part.dtype, CML__SHLO_ONE, &part);
  cml__shlo_val_t two =
      cml__shlo_op(c, "stablehlo.add", (cml__shlo_val_t[]){half_re, half_re}, 2, NULL, &part);
  cml__shlo_val_t halves[2] = {
      cml__shlo_op(c, "stablehlo.divide", (cml__shlo_val_t[]){re, two}, 2, NULL, &part),
      cml__shlo_op(c, "stablehlo.divide", (cml__shlo_val_t[]){im, two}, 2, NULL, &part)};
  cml__shlo_val_t z2 = cml__shlo_op(c, "stablehlo.complex", halves, 2, NULL, out);
  cml__shlo_val_t s2 = cml__shlo_op(c, "stablehlo.sign", &z2, 1, NULL, out);
  cml__shlo_val_t sel[3] = {big, s2, *r};
  return cml__shlo_op(c, "stablehlo.select", sel, 3, NULL, out);
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
    cml__shlo_val_t sl = cml__shlo_slice(c, &b, starts, limits, strides, &one);
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
      // A complex source goes through its parts (bitcast_convert takes no complex type).
      bytes = cml_dtype_is_complex(x.shape.dtype)
                  ? cml_shlo_bitcast_complex(c, &x, &us)
                  : cml__shlo_op(c, "stablehlo.bitcast_convert", &x, 1, NULL, &us);
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
        if (cml__shlo_is_half(x.shape.dtype) && cml_shlo_is_transcendental(n->op)) {
          // Float16/BFloat16: computed in Float32 and rounded once (the plugin's half
          // precision versions of these are off by several ulps or underflow early).
          cml__shlo_val_t wide = cml__shlo_convert(c, &x, CML_DTYPE_F32);
          cml_shape_t ws = cml_shlo_retype(out, CML_DTYPE_F32);
          r = cml__shlo_op(c, name, &wide, 1, NULL, &ws);
          r = cml__shlo_convert(c, &r, out->dtype);
        } else {
          r = cml__shlo_op(c, name, &x, 1, NULL, out);
        }
        if (complex && (n->op == CML_OP_LOG || n->op == CML_OP_LOG1P || n->op == CML_OP_SQRT ||
                        n->op == CML_OP_RSQRT || n->op == CML_OP_SIGN)) {
          r = cml_shlo_complex_nan_guard(c, &x, &r, out);
        }
        if (complex && (n->op == CML_OP_SIGN || n->op == CML_OP_EXPM1)) {
          r = cml_shlo_complex_edges(c, n->op, &x, &r, out);
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
      } else if (n->op == CML_OP_DIV && cml_dtype_is_int(out->dtype)) {
        // x / 0 = -1 (all bits set) made explicit: XLA's simplifier rewrites x / x to 1, so
        // relying on the plugin's own x / 0 gave 1 for 0 / 0 (also through iota / iota, or a
        // loop body dividing a value by a capture of itself).
        const cml__shlo_val_t zero = cml__shlo_const_fill(c, out->dtype, CML__SHLO_ZERO, out);
        const cml__shlo_val_t one = cml__shlo_const_fill(c, out->dtype, CML__SHLO_ONE, out);
        const cml__shlo_val_t ones = cml__shlo_const_fill(c, out->dtype, CML__SHLO_ALL_ONES, out);
        const cml__shlo_val_t by_zero = cml__shlo_compare(c, "EQ", &ins[1], &zero, false);
        const cml__shlo_val_t pick[3] = {by_zero, one, ins[1]};
        const cml__shlo_val_t safe[2] = {ins[0],
                                         cml__shlo_op(c, "stablehlo.select", pick, 3, NULL, out)};
        const cml__shlo_val_t q = cml__shlo_op(c, name, safe, 2, NULL, out);
        const cml__shlo_val_t result[3] = {by_zero, ones, q};
        r = cml__shlo_op(c, "stablehlo.select", result, 3, NULL, out);
      } else if (n->op == CML_OP_DIV && out->dtype == CML_DTYPE_F64) {
        r = cml_shlo_div_f64(c, &ins[0], &ins[1]);
      } else if ((cml__shlo_is_half(out->dtype) && (n->op == CML_OP_POW || n->op == CML_OP_ATAN2 ||
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
        r = cml__shlo_binary_op(c, name, &ins[0], &ins[1], out);
      }
    }
    cml_shlo_bind1(c, n, &r);
    return CML_OK;
  }
  *handled = false;
  return CML_OK;
}

// The elementwise group: unary, binary and compare ops by kind, then the others.
cml_status_t cml__shlo_emit_elementwise(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  bool handled = false;
  cml_status_t st = cml_shlo_elementwise(c, n, &handled);
  if (handled) return st;
  const cml_ir_attrs_t* at = n->attrs;
  const cml_shape_t* out = cml_shlo_out(c, n, 0);
  cml__shlo_attr_t a;
  cml__shlo_attr_init(&a);
  cml__shlo_val_t r;
  switch (n->op) {
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
        r = cml__shlo_float_minmax(c, true, &ins[1], &lo);
        r = cml__shlo_float_minmax(c, false, &r, &hi);
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
    default:
      return cml__shlo_unimplemented(c, n, "no StableHLO lowering for this op");
  }
  cml_shlo_bind1(c, n, &r);
  return CML_OK;
}
