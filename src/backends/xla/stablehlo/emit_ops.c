// SPDX-License-Identifier: Apache-2.0
// src/backends/xla/stablehlo/emit_ops.c: the StableHLO emitter's common lowerings (constants,
// broadcasting, conversions, comparisons, scalar regions) and the dispatch of every
// non-control-flow op to the lowerings of its ops.def group: emit_elementwise.c,
// emit_reduce.c, emit_movement.c, emit_index.c, emit_window.c, emit_linalg.c, emit_special.c,
// emit_control.c (barriers; Call, While, If and Sort are emitter.c's) and emit_collective.c.
//
// Notes on semantics:
// - ConvertDType to Bool is `x != 0`; complex to real takes the real part first.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/xla/stablehlo/emit_internal.h"

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

cml__shlo_val_t cml__shlo_slice(cml__shlo_ctx_t* c, const cml__shlo_val_t* v, const int64_t* starts,
                                const int64_t* limits, const int64_t* strides,
                                const cml_shape_t* out) {
  const int32_t rank = v->shape.rank;
  cml__shlo_attr_t a;
  cml__shlo_attr_init(&a);
  cml__shlo_attr_printf(&a, "start_indices = ");
  cml__shlo_attr_array(&a, starts, rank);
  cml__shlo_attr_printf(&a, ", limit_indices = ");
  cml__shlo_attr_array(&a, limits, rank);
  cml__shlo_attr_printf(&a, ", strides = ");
  cml__shlo_attr_array(&a, strides, rank);
  return cml__shlo_op(c, "stablehlo.slice", v, 1, a.s, out);
}

cml__shlo_val_t cml__shlo_replicate_axes(cml__shlo_ctx_t* c, const cml__shlo_val_t* v,
                                         uint64_t closed) {
  const cml_module_t* m = c->module;
  const int32_t rank = v->shape.rank;
  if (!closed || rank <= 0 || !cml_xla_emit_is_sharded(m) || m->mesh_count != 1) return *v;
  const char* mesh = cml_mesh_name(m->meshes[0]);
  cml__shlo_attr_t a;
  cml__shlo_attr_init(&a);
  cml__shlo_attr_printf(&a, "sharding = #sdy.sharding<@mesh_%s, [", mesh && *mesh ? mesh : "mesh");
  for (int32_t d = 0; d < rank; ++d) {
    const bool pinned = d < 64 && ((closed >> d) & 1u);
    cml__shlo_attr_printf(&a, "%s%s", d ? ", " : "", pinned ? "{}" : "{?}");
  }
  cml__shlo_attr_printf(&a, "]>");
  return cml__shlo_op(c, "sdy.sharding_constraint", v, 1, a.s, &v->shape);
}

cml__shlo_val_t cml__shlo_pad(cml__shlo_ctx_t* c, const cml__shlo_val_t* v,
                              const cml__shlo_val_t* fill, const int64_t* low, const int64_t* high,
                              const int64_t* interior, const cml_shape_t* out) {
  const int32_t rank = v->shape.rank;
  // Under Shardy, an axis with interior or negative padding is not split: XLA's partitioner
  // ended the process on such a pad of a split axis (a failed CHECK on the first valid element
  // of a dilated shard).
  uint64_t closed = 0;
  for (int32_t d = 0; d < rank && d < 64; ++d) {
    if (interior[d] > 0 || low[d] < 0 || high[d] < 0) closed |= (uint64_t)1 << d;
  }
  cml__shlo_val_t pinned = cml__shlo_replicate_axes(c, v, closed);
  v = &pinned;
  cml__shlo_attr_t a;
  cml__shlo_attr_init(&a);
  cml__shlo_attr_printf(&a, "edge_padding_low = ");
  cml__shlo_attr_array(&a, low, rank);
  cml__shlo_attr_printf(&a, ", edge_padding_high = ");
  cml__shlo_attr_array(&a, high, rank);
  cml__shlo_attr_printf(&a, ", interior_padding = ");
  cml__shlo_attr_array(&a, interior, rank);
  const cml__shlo_val_t ins[2] = {*v, *fill};
  cml__shlo_val_t r = cml__shlo_op(c, "stablehlo.pad", ins, 2, a.s, out);
  return cml__shlo_replicate_axes(c, &r, closed);
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

static cml__shlo_val_t cml_shlo_flip_negative(cml__shlo_ctx_t* c, const cml__shlo_val_t* bits);

// A float TotalOrder comparison compares the IEEE totalOrder keys (the bits as signed integers,
// negative ones with every bit but the sign flipped) instead of emitting compare_type
// TOTALORDER: XLA's constant folder evaluated TOTALORDER compares of constants as plain float
// compares (EqualTotalOrder(0, -0) = true, LessThanTotalOrder(1, NaN) = false).
cml__shlo_val_t cml__shlo_compare(cml__shlo_ctx_t* c, const char* direction,
                                  const cml__shlo_val_t* lhs, const cml__shlo_val_t* rhs,
                                  bool total_order) {
  if (total_order && cml_dtype_is_float(lhs->shape.dtype)) {
    const cml_shape_t ks =
        cml_shlo_retype(&lhs->shape, cml__shlo_order_key_dtype(lhs->shape.dtype));
    cml__shlo_val_t keys[2];
    for (int i = 0; i < 2; ++i) {
      const cml__shlo_val_t bits =
          cml__shlo_op(c, "stablehlo.bitcast_convert", i ? rhs : lhs, 1, NULL, &ks);
      keys[i] = cml_shlo_flip_negative(c, &bits);
    }
    return cml__shlo_compare(c, direction, &keys[0], &keys[1], false);
  }
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
  if (to == CML_DTYPE_BOOL && cml_dtype_is_minifloat(from)) {
    // Compared as Float64 (every minifloat value is exact there, F8E8M0FNU's 2^-127 too, which
    // is a Float32 subnormal that XLA's CPU flushes to zero): compared in its own type, XLA
    // found -0 nonzero.
    cml_shape_t ws = cml_shlo_retype(&v->shape, CML_DTYPE_F64);
    cml__shlo_val_t wide = cml__shlo_op(c, "stablehlo.convert", v, 1, NULL, &ws);
    return cml__shlo_convert(c, &wide, to);
  }
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
  if (to == CML_DTYPE_F4E2M1FN || to == CML_DTYPE_F8E8M0FNU) {
    // XLA's constant folder converts to these two formats by other rules than its runtime
    // (docs/dtypes.md's): a constant inf became 0 in F4E2M1FN (the runtime saturates to 6), and
    // -2.5 became 2 in F8E8M0FNU (NaN). The operand goes through an optimization barrier, which
    // the folder does not look through.
    const cml__shlo_val_t opaque =
        cml__shlo_op(c, "stablehlo.optimization_barrier", v, 1, NULL, &v->shape);
    return cml__shlo_op(c, "stablehlo.convert", &opaque, 1, NULL, &out);
  }
  return cml__shlo_op(c, "stablehlo.convert", v, 1, NULL, &out);
}

// Writes "^bb0(%a: tensor<T0>, ...):" for scalars of |dtypes|, naming them into |out|.
void cml__shlo_scalar_header(cml__shlo_ctx_t* c, const cml_dtype_t* dtypes, uint32_t count,
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
void cml__shlo_region_return(cml__shlo_ctx_t* c, const cml__shlo_val_t* vals, uint32_t count) {
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
// XLA's CUDA compiler rejects a TOTALORDER compare inside a reduction body ("'stablehlo.compare'
// op requires compatible element types", seen with jax-cuda13-pjrt 0.11.2 on an H200), so
// other platforms compare as FLOAT and settle two zeros by the sign of |a| (max takes |b| when
// |a| is -0, min takes |a|).
cml__shlo_val_t cml__shlo_float_minmax(cml__shlo_ctx_t* c, bool is_max, const cml__shlo_val_t* a,
                                       const cml__shlo_val_t* b) {
  const bool total_order = !c->opts->platform || strcmp(c->opts->platform, "cpu") == 0;
  cml__shlo_val_t better = cml__shlo_compare(c, is_max ? "GT" : "LT", a, b, total_order);
  cml__shlo_val_t sel[3] = {better, *a, *b};
  cml__shlo_val_t r = cml__shlo_op(c, "stablehlo.select", sel, 3, NULL, &a->shape);
  if (!total_order) {
    cml__shlo_val_t zero = cml__shlo_const_fill(c, a->shape.dtype, CML__SHLO_ZERO, &a->shape);
    cml__shlo_val_t a_zero = cml__shlo_compare(c, "EQ", a, &zero, false);
    cml__shlo_val_t b_zero = cml__shlo_compare(c, "EQ", b, &zero, false);
    cml_shape_t bs = cml_shlo_retype(&a->shape, CML_DTYPE_BOOL);
    cml__shlo_val_t pair[2] = {a_zero, b_zero};
    cml__shlo_val_t zeros = cml__shlo_op(c, "stablehlo.and", pair, 2, NULL, &bs);
    // Which zero |a| is: 1 / a is +inf or -inf (XLA folds a + 0 into a, so no arithmetic
    // identity on the zeros survives its simplifier).
    cml__shlo_val_t one = cml__shlo_const_fill(c, a->shape.dtype, CML__SHLO_ONE, &a->shape);
    pair[0] = one;
    pair[1] = *a;
    cml__shlo_val_t inverse = cml__shlo_op(c, "stablehlo.divide", pair, 2, NULL, &a->shape);
    cml__shlo_val_t a_negative = cml__shlo_compare(c, "LT", &inverse, &zero, false);
    cml__shlo_val_t pick[3] = {a_negative, is_max ? *b : *a, is_max ? *a : *b};
    cml__shlo_val_t combined = cml__shlo_op(c, "stablehlo.select", pick, 3, NULL, &a->shape);
    sel[0] = zeros;
    sel[1] = combined;
    sel[2] = r;
    r = cml__shlo_op(c, "stablehlo.select", sel, 3, NULL, &a->shape);
  }
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

cml_dtype_t cml__shlo_order_key_dtype(cml_dtype_t dtype) {
  switch (cml_dtype_bits(dtype)) {
    case 8:
      return CML_DTYPE_I8;
    case 16:
      return CML_DTYPE_I16;
    case 64:
      return CML_DTYPE_I64;
    default:
      return CML_DTYPE_I32;
  }
}

// The bits of a float as a signed integer: non-negative floats are non-negative integers in
// the floats' order; negative ones are negative integers in reverse order, which an xor with
// the integer maximum (every bit but the sign) turns around (-0 becomes -1, below +0's 0).
// The same map decodes.
static cml__shlo_val_t cml_shlo_flip_negative(cml__shlo_ctx_t* c, const cml__shlo_val_t* bits) {
  cml_dtype_t kt = bits->shape.dtype;
  cml__shlo_val_t zero = cml__shlo_const_fill(c, kt, CML__SHLO_ZERO, &bits->shape);
  cml__shlo_val_t mask = cml__shlo_const_fill(c, kt, CML__SHLO_HIGHEST, &bits->shape);
  cml__shlo_val_t negative = cml__shlo_compare(c, "LT", bits, &zero, false);
  cml__shlo_val_t pair[2] = {*bits, mask};
  cml__shlo_val_t flipped = cml__shlo_op(c, "stablehlo.xor", pair, 2, NULL, &bits->shape);
  cml__shlo_val_t sel[3] = {negative, flipped, *bits};
  return cml__shlo_op(c, "stablehlo.select", sel, 3, NULL, &bits->shape);
}

cml__shlo_val_t cml__shlo_order_key(cml__shlo_ctx_t* c, const cml__shlo_val_t* x, bool nan_high) {
  cml_shape_t ks = cml_shlo_retype(&x->shape, cml__shlo_order_key_dtype(x->shape.dtype));
  cml__shlo_val_t bits = cml__shlo_op(c, "stablehlo.bitcast_convert", x, 1, NULL, &ks);
  cml__shlo_val_t key = cml_shlo_flip_negative(c, &bits);
  cml__shlo_val_t nan = cml__shlo_compare(c, "NE", x, x, false);
  cml__shlo_val_t extreme =
      cml__shlo_const_fill(c, ks.dtype, nan_high ? CML__SHLO_HIGHEST : CML__SHLO_LOWEST, &ks);
  cml__shlo_val_t sel[3] = {nan, extreme, key};
  return cml__shlo_op(c, "stablehlo.select", sel, 3, NULL, &ks);
}

cml__shlo_val_t cml__shlo_from_order_key(cml__shlo_ctx_t* c, const cml__shlo_val_t* key,
                                         cml_dtype_t dtype) {
  cml__shlo_val_t bits = cml_shlo_flip_negative(c, key);
  // The NaN keys become the default quiet NaN (positive, the top mantissa bit set), the NaN
  // that float arithmetic makes, rather than the extremes' all-ones payloads.
  const cml_dtype_t kt = key->shape.dtype;
  const char* quiet = kt == CML_DTYPE_I64       ? "9221120237041090560"
                      : kt == CML_DTYPE_I32     ? "2143289344"
                      : dtype == CML_DTYPE_BF16 ? "32704"
                                                : "32256";
  cml__shlo_val_t high = cml__shlo_const_fill(c, kt, CML__SHLO_HIGHEST, &key->shape);
  cml__shlo_val_t low = cml__shlo_const_fill(c, kt, CML__SHLO_LOWEST, &key->shape);
  cml__shlo_val_t pair[2] = {cml__shlo_compare(c, "EQ", key, &high, false),
                             cml__shlo_compare(c, "EQ", key, &low, false)};
  cml_shape_t bs = cml_shlo_retype(&key->shape, CML_DTYPE_BOOL);
  cml__shlo_val_t nan = cml__shlo_op(c, "stablehlo.or", pair, 2, NULL, &bs);
  cml__shlo_val_t sel[3] = {nan, cml_shlo_const_text(c, kt, quiet, &key->shape), bits};
  bits = cml__shlo_op(c, "stablehlo.select", sel, 3, NULL, &key->shape);
  cml_shape_t fs = cml_shlo_retype(&key->shape, dtype);
  return cml__shlo_op(c, "stablehlo.bitcast_convert", &bits, 1, NULL, &fs);
}

// A binary op |op| on two values of one shape, with the float max/min fix-up above.
cml__shlo_val_t cml__shlo_binary_op(cml__shlo_ctx_t* c, const char* op, const cml__shlo_val_t* a,
                                    const cml__shlo_val_t* b, const cml_shape_t* out) {
  bool is_max = strcmp(op, "stablehlo.maximum") == 0;
  bool is_min = strcmp(op, "stablehlo.minimum") == 0;
  if ((is_max || is_min) && cml_dtype_is_float(a->shape.dtype)) {
    return cml__shlo_float_minmax(c, is_max, a, b);
  }
  cml__shlo_val_t ins[2] = {*a, *b};
  return cml__shlo_op(c, op, ins, 2, NULL, out);
}

void cml__shlo_binary_region(cml__shlo_ctx_t* c, const char* op, cml_dtype_t dtype) {
  cml__shlo_printf(c, "{\n");
  c->indent++;
  cml_dtype_t dtypes[2] = {dtype, dtype};
  cml__shlo_val_t args[2];
  cml__shlo_scalar_header(c, dtypes, 2, args);
  cml_shape_t s = cml_shape_scalar(dtype);
  cml__shlo_val_t r = cml__shlo_binary_op(c, op, &args[0], &args[1], &s);
  cml__shlo_region_return(c, &r, 1);
  c->indent--;
  cml__shlo_line(c);
  cml__shlo_printf(c, "}");
}

// Constant, the one source op that reaches here (emitter.c binds Parameters and captured
// values), is lowered by emit_literal.c; every other op by the file of its group.
cml_status_t cml__shlo_emit_simple_node(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  switch (cml_op_group(n->op)) {
    case CML_OPG_SOURCE:
      if (n->op == CML_OP_CONSTANT) {
        cml__shlo_val_t r = cml__shlo_constant(c, cml_shlo_out(c, n, 0), n->data);
        cml_shlo_bind1(c, n, &r);
        return CML_OK;
      }
      break;
    case CML_OPG_ELEMENTWISE:
      return cml__shlo_emit_elementwise(c, n);
    case CML_OPG_REDUCE:
      return cml__shlo_emit_reduce(c, n);
    case CML_OPG_MOVEMENT:
      return cml__shlo_emit_movement(c, n);
    case CML_OPG_INDEX:
      return cml__shlo_emit_index(c, n);
    case CML_OPG_WINDOW:
      return cml__shlo_emit_window(c, n);
    case CML_OPG_LINALG:
      return cml__shlo_emit_linalg(c, n);
    case CML_OPG_SPECIAL:
      return cml__shlo_emit_special(c, n);
    case CML_OPG_CONTROL:
      return cml__shlo_emit_control(c, n);
    case CML_OPG_COLLECTIVE:
      return cml__shlo_emit_collective(c, n);
    default:
      break;
  }
  return cml__shlo_unimplemented(c, n, "no StableHLO lowering for this op");
}
