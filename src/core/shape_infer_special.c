// SPDX-License-Identifier: Apache-2.0
// src/core/shape_infer_special.c: shape inference of the "special" ops (RNGBitGenerator, FFT,
// the BatchNorm* ops).
#include <math.h>

#include "core/shape_infer_internal.h"

cml_status_t cml__infer_rng(const cml_shape_t* state, const cml_shape_t* shape,
                            cml_shape_t out[2]) {
  SHAPE_BUFFERS;
  (void)sb1_;
  (void)sb2_;
  if (state->dtype != CML_DTYPE_U64 || state->rank != 1 || state->dims[0] != 3) {
    return INVALID("RNGBitGenerator: state %s must be (Uint64)[3]", S0(state));
  }
  CML_RETURN_IF_ERROR(cml_check_user_shape(CML_OP_RNG_BIT_GENERATOR, shape, "output"));
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_RNG_BIT_GENERATOR, shape, "output", false));
  out[0] = *state;
  out[1] = cml_shape_with(shape->dtype, shape->rank, shape->dims);
  return CML_OK;
}

cml_status_t cml__infer_fft(const cml_shape_t* x, cml_fft_type_t type, const int64_t* lengths,
                            size_t length_count, cml_ir_attrs_t* attrs, cml_shape_t* out) {
  SHAPE_BUFFERS;
  LIST_BUFFER;
  (void)sb1_;
  (void)sb2_;
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_FFT, x, "operand", false));
  if ((int)type < 0 || type >= CML_FFT_TYPE_COUNT) {
    return INVALID("FFT: invalid FFT type %d (operand %s)", (int)type, S0(x));
  }
  if (length_count < 1 || length_count > 3 || length_count > (size_t)x->rank || !lengths) {
    return INVALID("FFT: %zu FFT lengths for operand %s (need 1 to 3, at most its rank)",
                   length_count, S0(x));
  }
  bool is_complex = cml_dtype_is_complex(x->dtype);
  bool want_complex = type != CML_FFT_FORWARD_REAL;
  if (is_complex != want_complex) {
    return INVALID("FFT: type %d needs a %s operand, got %s", (int)type,
                   want_complex ? "complex" : "real (Float32/Float64)", S0(x));
  }
  *out = *x;
  int32_t first = x->rank - (int32_t)length_count;
  for (size_t i = 0; i < length_count; ++i) {
    int64_t want = lengths[i];
    bool last = i + 1 == length_count;
    if (lengths[i] < 1) {
      // XLA refuses empty transforms (and a length-0 real FFT would have 1 output from 0
      // inputs): every length must be positive, for every FFT type.
      return INVALID("FFT: length %lld in %s must be positive (operand %s)", (long long)lengths[i],
                     L(lengths, length_count), S0(x));
    }
    if (last && type == CML_FFT_INVERSE_REAL) want = lengths[i] / 2 + 1;
    if (x->dims[first + (int32_t)i] != want) {
      return INVALID("FFT: the trailing axes of operand %s do not match FFT lengths %s (type %d)",
                     S0(x), L(lengths, length_count), (int)type);
    }
  }
  int32_t last_axis = x->rank - 1;
  switch (type) {
    case CML_FFT_FORWARD_REAL:
      out->dtype = x->dtype == CML_DTYPE_F32 ? CML_DTYPE_C64 : CML_DTYPE_C128;
      out->dims[last_axis] = lengths[length_count - 1] / 2 + 1;
      break;
    case CML_FFT_INVERSE_REAL:
      out->dtype = cml_dtype_real_part(x->dtype);
      out->dims[last_axis] = lengths[length_count - 1];
      break;
    default:
      break;
  }
  attrs->fft_type = type;
  attrs->axis_count = (int32_t)length_count;
  for (size_t i = 0; i < length_count; ++i) attrs->axes[i] = lengths[i];
  return CML_OK;
}

cml_status_t cml__infer_batch_norm(cml_op_t op, const cml_shape_t* x, const cml_shape_t* params,
                                   size_t param_count, float epsilon, int64_t feature_axis,
                                   cml_ir_attrs_t* attrs, cml_shape_t* outs) {
  SHAPE_BUFFERS;
  (void)sb2_;
  const char* name = cml_op_name(op);
  static const char* const kInference[] = {"scale", "offset", "mean", "variance"};
  static const char* const kTraining[] = {"scale", "offset"};
  static const char* const kGradient[] = {"scale", "mean", "variance", "grad_output"};
  const char* const* names = op == CML_OP_BATCH_NORM_TRAINING   ? kTraining
                             : op == CML_OP_BATCH_NORM_GRADIENT ? kGradient
                                                                : kInference;
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(op, x, "operand", false));
  CML_RETURN_IF_ERROR(cml_check_axis(op, x, feature_axis, "feature axis"));
  if (!(epsilon >= 0.0f) || isinf(epsilon)) {
    return INVALID("%s: epsilon %g must be finite and >= 0 (operand %s)", name, (double)epsilon,
                   S0(x));
  }
  int64_t features = x->dims[feature_axis];
  cml_shape_t vec = cml_shape_with(x->dtype, 1, &features);
  for (size_t i = 0; i < param_count; ++i) {
    bool is_grad = op == CML_OP_BATCH_NORM_GRADIENT && i == 3;
    const cml_shape_t* want = is_grad ? x : &vec;
    if (!cml_shape_equal(&params[i], want)) {
      return INVALID("%s: %s %s must be %s (operand %s, feature axis %lld)", name, names[i],
                     S1(&params[i]), cml__shape_text(want, sb2_), S0(x), (long long)feature_axis);
    }
  }
  outs[0] = *x;
  if (op != CML_OP_BATCH_NORM_INFERENCE) {
    outs[1] = vec;
    outs[2] = vec;
  }
  attrs->axis = feature_axis;
  attrs->epsilon = epsilon;
  return CML_OK;
}
