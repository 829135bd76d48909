// SPDX-License-Identifier: Apache-2.0
// src/core/autodiff_elementwise.c: VJPs of the elementwise group (unary and binary math,
// Clamp, Where, ConvertDType, Identity); comparisons, bitwise, logical and integer ops carry
// no gradient (their values are never differentiable, see cml_gradients).
#include <math.h>

#include "autodiff_internal.h"

static bool cml_ad_is_complex(cml_dtype_t dtype) {
  return (CML_DTYPE_BIT(dtype) & CML_DSET_COMPLEX) != 0;
}

// The real dtype of a complex one (c64 -> f32, c128 -> f64).
static cml_dtype_t cml_ad_real_of(cml_dtype_t dtype) {
  return dtype == CML_DTYPE_C128 ? CML_DTYPE_F64 : CML_DTYPE_F32;
}

// 0.5 where a == b == out, 1 where a == out != b, 0 elsewhere (Max/Min: ties split equally).
static cml_value_t cml_ad_balanced(cml__ad_t* ad, cml_value_t a, cml_value_t out, cml_value_t b,
                                   cml_dtype_t dt) {
  cml_function_t* f = ad->f;
  cml_value_t one = cml__ad_scalar(ad, dt, 1.0), half = cml__ad_scalar(ad, dt, 0.5);
  cml_value_t zero = cml__ad_scalar(ad, dt, 0.0);
  cml_shape_t os = cml__ad_shape(ad, out);
  cml_value_t a_full = cml__ad_broadcast_to(ad, a, &os), b_full = cml__ad_broadcast_to(ad, b, &os);
  cml_value_t both = cml_op_where(f, cml_op_equal(f, b_full, out), half, one);
  return cml_op_where(f, cml_op_equal(f, a_full, out), both, zero);
}

static cml_status_t cml_ad_unary(cml__ad_t* ad, const cml_ir_node_t* n, cml_value_t g,
                                 cml_value_t* in_cts) {
  cml_function_t* f = ad->f;
  cml_value_t x = cml__ad_in(ad, n, 0), y = cml__ad_out(ad, n, 0);
  cml_dtype_t dt = cml__ad_in_shape(ad, n, 0)->dtype;
  cml_value_t r = CML_VALUE_INVALID;
  switch (n->op) {
    case CML_OP_IDENTITY:
      r = g;
      break;
    case CML_OP_NEG:
      r = cml_op_neg(f, g);
      break;
    case CML_OP_EXP:
      r = cml__ad_mul(ad, g, y);
      break;
    case CML_OP_EXPM1:
      r = cml__ad_mul(ad, g, cml__ad_add(ad, y, cml__ad_scalar(ad, dt, 1.0)));
      break;
    case CML_OP_LOG:
      r = cml__ad_div(ad, g, x);
      break;
    case CML_OP_LOG1P:
      r = cml__ad_div(ad, g, cml__ad_add(ad, x, cml__ad_scalar(ad, dt, 1.0)));
      break;
    case CML_OP_SIN:
      r = cml__ad_mul(ad, g, cml_op_cos(f, x));
      break;
    case CML_OP_COS:
      r = cml_op_neg(f, cml__ad_mul(ad, g, cml_op_sin(f, x)));
      break;
    case CML_OP_TANH: {
      cml_value_t one = cml__ad_scalar(ad, dt, 1.0);
      r = cml__ad_mul(ad, g, cml__ad_sub(ad, one, cml__ad_mul(ad, y, y)));
      break;
    }
    case CML_OP_LOGISTIC: {
      cml_value_t one = cml__ad_scalar(ad, dt, 1.0);
      r = cml__ad_mul(ad, g, cml__ad_mul(ad, y, cml__ad_sub(ad, one, y)));
      break;
    }
    case CML_OP_SQRT:
      r = cml__ad_div(ad, cml__ad_mul(ad, g, cml__ad_scalar(ad, dt, 0.5)), y);
      break;
    case CML_OP_RSQRT:  // d x^-1/2 = -1/2 x^-3/2 = -1/2 y / x
      r = cml__ad_mul(ad, cml__ad_mul(ad, g, cml__ad_scalar(ad, dt, -0.5)), cml__ad_div(ad, y, x));
      break;
    case CML_OP_ERF: {
      cml_value_t e = cml_op_exp(f, cml_op_neg(f, cml__ad_mul(ad, x, x)));
      r = cml__ad_mul(ad, cml__ad_mul(ad, g, cml__ad_scalar(ad, dt, 2.0 / sqrt(M_PI))), e);
      break;
    }
    case CML_OP_ABS:
      if (cml_ad_is_complex(dt)) {
        // |z|: the JVP is Real(conj(z) / |z| * dz), whose transpose is g * conj(z) / |z| (0 at
        // z = 0; JAX's rule).
        cml_value_t gc =
            cml_op_complex(f, g, cml__ad_mul(ad, g, cml__ad_scalar(ad, cml_ad_real_of(dt), 0.0)));
        cml_value_t safe =
            cml_op_where(f, cml_op_equal(f, y, cml__ad_scalar(ad, cml_ad_real_of(dt), 0.0)),
                         cml__ad_scalar(ad, cml_ad_real_of(dt), 1.0), y);
        cml_value_t zy = cml_op_div(
            f, cml_op_conj(f, x),
            cml_op_complex(f, safe,
                           cml__ad_mul(ad, safe, cml__ad_scalar(ad, cml_ad_real_of(dt), 0.0))));
        r = cml__ad_mul(ad, gc, zy);
      } else {
        r = cml__ad_mul(ad, g, cml_op_sign(f, x));
      }
      break;
    case CML_OP_SIGN:
    case CML_OP_FLOOR:
    case CML_OP_CEIL:
    case CML_OP_ROUND:
      r = CML_VALUE_INVALID;  // zero almost everywhere
      break;
    case CML_OP_REAL:
      r = cml_op_complex(f, g,
                         cml__ad_mul(ad, g, cml__ad_scalar(ad, cml__ad_shape(ad, g).dtype, 0.0)));
      break;
    case CML_OP_IMAG:
      r = cml_op_complex(f, cml__ad_mul(ad, g, cml__ad_scalar(ad, cml__ad_shape(ad, g).dtype, 0.0)),
                         cml_op_neg(f, g));
      break;
    case CML_OP_CONJ:
      r = cml_op_conj(f, g);
      break;
    default:
      return cml__ad_no_vjp(ad, n, NULL);
  }
  in_cts[0] = r;
  return CML_OK;
}

static cml_status_t cml_ad_binary(cml__ad_t* ad, const cml_ir_node_t* n, cml_value_t g,
                                  cml_value_t* in_cts) {
  cml_function_t* f = ad->f;
  cml_value_t x = cml__ad_in(ad, n, 0), y = cml__ad_in(ad, n, 1), out = cml__ad_out(ad, n, 0);
  const cml_shape_t* xs = cml__ad_in_shape(ad, n, 0);
  const cml_shape_t* ys = cml__ad_in_shape(ad, n, 1);
  cml_dtype_t dt = xs->dtype;
  bool wx = cml__ad_wants(ad, n, 0), wy = cml__ad_wants(ad, n, 1);
  cml_value_t dx = CML_VALUE_INVALID, dy = CML_VALUE_INVALID;
  switch (n->op) {
    case CML_OP_ADD:
      dx = g;
      dy = g;
      break;
    case CML_OP_SUB:
      dx = g;
      if (wy) dy = cml_op_neg(f, g);
      break;
    case CML_OP_MUL:
      if (wx) dx = cml__ad_mul(ad, g, y);
      if (wy) dy = cml__ad_mul(ad, g, x);
      break;
    case CML_OP_DIV:
      if (wx) dx = cml__ad_div(ad, g, y);
      if (wy) dy = cml_op_neg(f, cml__ad_mul(ad, g, cml__ad_div(ad, out, y)));
      break;
    case CML_OP_POW: {
      if (wx) {  // y * x^(y-1), and 0 where y == 0 (x^0 is 1 everywhere; JAX's rule)
        cml_value_t ym1 = cml__ad_sub(ad, y, cml__ad_scalar(ad, dt, 1.0));
        cml_value_t zero = cml__ad_scalar(ad, dt, 0.0);
        cml_value_t yf = cml__ad_broadcast_to(ad, y, cml__ad_out_shape(ad, n, 0));
        cml_value_t d = cml__ad_mul(ad, y, cml_op_pow(f, x, ym1));
        dx = cml__ad_mul(ad, g, cml_op_where(f, cml_op_equal(f, yf, zero), zero, d));
      }
      if (wy) {  // out * log(x), 0 where x == 0
        cml_value_t zero = cml__ad_scalar(ad, dt, 0.0), one = cml__ad_scalar(ad, dt, 1.0);
        cml_value_t xf = cml__ad_broadcast_to(ad, x, cml__ad_out_shape(ad, n, 0));
        cml_value_t safe = cml_op_where(f, cml_op_equal(f, xf, zero), one, xf);
        dy = cml__ad_mul(ad, g, cml__ad_mul(ad, out, cml_op_log(f, safe)));
      }
      break;
    }
    case CML_OP_MAX:
    case CML_OP_MIN:
      if (wx) dx = cml__ad_mul(ad, g, cml_ad_balanced(ad, x, out, y, dt));
      if (wy) dy = cml__ad_mul(ad, g, cml_ad_balanced(ad, y, out, x, dt));
      break;
    case CML_OP_ATAN2: {  // atan2(y=x, x=y)
      cml_value_t den = cml__ad_add(ad, cml__ad_mul(ad, x, x), cml__ad_mul(ad, y, y));
      if (wx) dx = cml__ad_mul(ad, g, cml__ad_div(ad, y, den));
      if (wy) dy = cml_op_neg(f, cml__ad_mul(ad, g, cml__ad_div(ad, x, den)));
      break;
    }
    case CML_OP_REM: {  // x - y * trunc(x / y)
      dx = g;
      if (wy) {
        cml_value_t q = cml__ad_div(ad, x, y);
        cml_value_t t = cml__ad_mul(ad, cml_op_sign(f, q), cml_op_floor(f, cml_op_abs(f, q)));
        dy = cml_op_neg(f, cml__ad_mul(ad, g, t));
      }
      break;
    }
    case CML_OP_COMPLEX:
      if (wx) dx = cml_op_real(f, g);
      if (wy) dy = cml_op_neg(f, cml_op_imag(f, g));
      break;
    default:
      return cml__ad_no_vjp(ad, n, NULL);
  }
  if (wx && dx) in_cts[0] = cml__ad_unbroadcast(ad, dx, xs);
  if (wy && dy) in_cts[1] = cml__ad_unbroadcast(ad, dy, ys);
  return CML_OK;
}

cml_status_t cml__ad_vjp_elementwise(cml__ad_t* ad, const cml_ir_node_t* n, const cml_value_t* cts,
                                     cml_value_t* in_cts) {
  cml_function_t* f = ad->f;
  cml_value_t g = cts[0];
  switch (n->op) {
    case CML_OP_CLAMP: {  // Clamp(min, x, max)
      cml_value_t lo = cml__ad_in(ad, n, 0), x = cml__ad_in(ad, n, 1), hi = cml__ad_in(ad, n, 2);
      const cml_shape_t* os = cml__ad_out_shape(ad, n, 0);
      cml_value_t zero = cml__ad_zeros(ad, os);
      cml_value_t lo_f = cml__ad_broadcast_to(ad, lo, os), hi_f = cml__ad_broadcast_to(ad, hi, os);
      if (cml__ad_wants(ad, n, 1)) {
        cml_value_t inside =
            cml_op_logical_and(f, cml_op_greater_than(f, x, lo_f), cml_op_less_than(f, x, hi_f));
        in_cts[1] = cml_op_where(f, inside, g, zero);
      }
      if (cml__ad_wants(ad, n, 0)) {  // JAX's rule: only where min > x and min < max
        cml_value_t lower =
            cml_op_logical_and(f, cml_op_greater_than(f, lo_f, x), cml_op_less_than(f, lo_f, hi_f));
        in_cts[0] =
            cml__ad_unbroadcast(ad, cml_op_where(f, lower, g, zero), cml__ad_in_shape(ad, n, 0));
      }
      if (cml__ad_wants(ad, n, 2)) {
        in_cts[2] = cml__ad_unbroadcast(ad, cml_op_where(f, cml_op_less_than(f, hi_f, x), g, zero),
                                        cml__ad_in_shape(ad, n, 2));
      }
      return CML_OK;
    }
    case CML_OP_WHERE: {  // Where(cond, on_true, on_false)
      cml_value_t c = cml__ad_in(ad, n, 0);
      cml_value_t zero = cml__ad_scalar(ad, cml__ad_out_shape(ad, n, 0)->dtype, 0.0);
      if (cml__ad_wants(ad, n, 1)) {
        in_cts[1] =
            cml__ad_unbroadcast(ad, cml_op_where(f, c, g, zero), cml__ad_in_shape(ad, n, 1));
      }
      if (cml__ad_wants(ad, n, 2)) {
        in_cts[2] =
            cml__ad_unbroadcast(ad, cml_op_where(f, c, zero, g), cml__ad_in_shape(ad, n, 2));
      }
      return CML_OK;
    }
    case CML_OP_CONVERT_DTYPE: {
      cml_dtype_t from = cml__ad_in_shape(ad, n, 0)->dtype;
      cml_dtype_t to = cml__ad_out_shape(ad, n, 0)->dtype;
      bool from_c = cml_ad_is_complex(from), to_c = cml_ad_is_complex(to);
      if (from_c && !to_c) {  // keeps the real part
        cml_value_t gr = cml__ad_convert(ad, g, cml_ad_real_of(from));
        in_cts[0] = cml_op_complex(
            f, gr, cml__ad_mul(ad, gr, cml__ad_scalar(ad, cml_ad_real_of(from), 0.0)));
      } else if (!from_c && to_c) {
        in_cts[0] = cml__ad_convert(ad, cml_op_real(f, g), from);
      } else {
        in_cts[0] = cml__ad_convert(ad, g, from);
      }
      return CML_OK;
    }
    case CML_OP_BITCAST:
      // A reinterpretation of bits is not a differentiable map: zero, as JAX's
      // bitcast_convert_type (and as the path through an integer Bitcast already gave).
      if (cml__ad_wants(ad, n, 0)) in_cts[0] = cml__ad_zeros(ad, cml__ad_in_shape(ad, n, 0));
      return CML_OK;
    default:
      break;
  }
  switch (cml_op_kind(n->op)) {
    case CML_OPK_UNARY:
      return cml_ad_unary(ad, n, g, in_cts);
    case CML_OPK_BINARY:
      return cml_ad_binary(ad, n, g, in_cts);
    default:
      return cml__ad_no_vjp(ad, n, NULL);
  }
}
