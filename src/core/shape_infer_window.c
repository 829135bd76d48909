// SPDX-License-Identifier: Apache-2.0
// src/core/shape_infer_window.c: shape inference of the "window" ops (ReduceWindow, the
// SelectAndScatter* ops).
#include "core/shape_infer_internal.h"

// Normalizes a window config for |x| (strides 0 -> window, dilations 0 -> 1) and computes the
// output shape.
static cml_status_t cml_window_shape(cml_op_t op, const cml_shape_t* x,
                                     const cml_window_config_t* config,
                                     cml_window_config_t* normalized, cml_shape_t* out) {
  SHAPE_BUFFERS;
  LIST_BUFFER;
  (void)sb1_;
  (void)sb2_;
  if (!config) return INVALID("%s: window config is NULL", cml_op_name(op));
  if (config->rank != x->rank) {
    return INVALID("%s: window config of rank %d for operand %s of rank %d", cml_op_name(op),
                   (int)config->rank, S0(x), (int)x->rank);
  }
  cml_window_config_t w;
  memset(&w, 0, sizeof w);
  w.rank = config->rank;
  *out = *x;
  for (int32_t i = 0; i < x->rank; ++i) {
    w.window_dims[i] = config->window_dims[i];
    w.strides[i] = config->strides[i] == 0 ? config->window_dims[i] : config->strides[i];
    w.input_dilations[i] = config->input_dilations[i] == 0 ? 1 : config->input_dilations[i];
    w.window_dilations[i] = config->window_dilations[i] == 0 ? 1 : config->window_dilations[i];
    w.padding_low[i] = config->padding_low[i];
    w.padding_high[i] = config->padding_high[i];
    if (w.window_dims[i] == 1 && (w.padding_low[i] < 0 || w.padding_high[i] < 0)) {
      // XLA's algebraic simplifier aborts on a size-1 window with negative padding (it
      // replaces the op by an elementwise one of the operand's shape): one rule for every
      // backend. Crop with Slice instead.
      return INVALID(
          "%s: axis %d of %s: padding (%lld, %lld) must not be negative with a window of size 1",
          cml_op_name(op), (int)i, S0(x), (long long)w.padding_low[i],
          (long long)w.padding_high[i]);
    }
    if (w.window_dims[i] < 1 || w.strides[i] < 1 || w.input_dilations[i] < 1 ||
        w.window_dilations[i] < 1) {
      return INVALID(
          "%s: axis %d of %s: window %lld, stride %lld, input dilation %lld and window dilation "
          "%lld must all be positive (window dims %s; a stride or dilation of 0 means the "
          "default)",
          cml_op_name(op), (int)i, S0(x), (long long)w.window_dims[i], (long long)w.strides[i],
          (long long)w.input_dilations[i], (long long)w.window_dilations[i],
          L(config->window_dims, x->rank));
    }
    cml_window_result_t r =
        cml_window_output(x->dims[i], w.input_dilations[i], w.padding_low[i], w.padding_high[i],
                          w.window_dims[i], w.window_dilations[i], w.strides[i], &out->dims[i]);
    if (r == CML_WINDOW_NEGATIVE) {
      return INVALID("%s: axis %d: padding (%lld, %lld) makes operand %s negative", cml_op_name(op),
                     (int)i, (long long)w.padding_low[i], (long long)w.padding_high[i], S0(x));
    }
    if (r == CML_WINDOW_OUT_OF_RANGE) {
      return INVALID(
          "%s: axis %d: padding (%lld, %lld), window %lld, stride %lld or dilations (base "
          "%lld, window %lld) out of range: each, and the dilated and padded sizes, must be at "
          "most %lld in magnitude (operand %s)",
          cml_op_name(op), (int)i, (long long)w.padding_low[i], (long long)w.padding_high[i],
          (long long)w.window_dims[i], (long long)w.strides[i], (long long)w.input_dilations[i],
          (long long)w.window_dilations[i], (long long)CML__ATTR_MAX, S0(x));
    }
  }
  *normalized = w;
  return CML_OK;
}

cml_status_t cml__infer_reduce_window(const cml_shape_t* x, cml_reduce_type_t type,
                                      const cml_window_config_t* config, cml_ir_attrs_t* attrs,
                                      cml_shape_t* out) {
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(CML_OP_REDUCE_WINDOW, x, "operand", false));
  if (type <= CML_REDUCE_UNDEFINED || type >= CML_REDUCE_TYPE_COUNT) {
    SHAPE_BUFFERS;
    (void)sb1_;
    (void)sb2_;
    return INVALID(
        "ReduceWindow: invalid reduction type %d (operand %s; valid: Sum %d, Product "
        "%d, Max %d, Min %d)",
        (int)type, S0(x), (int)CML_REDUCE_SUM, (int)CML_REDUCE_PRODUCT, (int)CML_REDUCE_MAX,
        (int)CML_REDUCE_MIN);
  }
  CML_RETURN_IF_ERROR(cml_window_shape(CML_OP_REDUCE_WINDOW, x, config, &attrs->u.window, out));
  attrs->reduce_type = type;
  return CML_OK;
}

cml_status_t cml__infer_select_and_scatter(cml_op_t op, const cml_shape_t* operand,
                                           const cml_shape_t* source,
                                           const cml_window_config_t* config, cml_ir_attrs_t* attrs,
                                           cml_shape_t* out) {
  SHAPE_BUFFERS;
  (void)sb2_;
  if (op != CML_OP_SELECT_AND_SCATTER_MAX && op != CML_OP_SELECT_AND_SCATTER_MIN &&
      op != CML_OP_SELECT_AND_SCATTER_SUM) {
    return INVALID(
        "SelectAndScatter: %s is not SelectAndScatterMax, Min or Sum (operand %s, "
        "source %s)",
        cml_op_name(op), S0(operand), S1(source));
  }
  CML_RETURN_IF_ERROR(cml__infer_check_dtype(op, operand, "operand", false));
  if (source->dtype != operand->dtype) {
    return INVALID("%s: dtype mismatch: operand %s and source %s", cml_op_name(op), S0(operand),
                   S1(source));
  }
  if (config) {
    for (int32_t i = 0; i < config->rank && i < CML_MAX_RANK; ++i) {
      if ((config->input_dilations[i] != 0 && config->input_dilations[i] != 1) ||
          (config->window_dilations[i] != 0 && config->window_dilations[i] != 1)) {
        return INVALID("%s: dilations are not supported (axis %d of operand %s)", cml_op_name(op),
                       (int)i, S0(operand));
      }
    }
  }
  cml_shape_t windows;
  CML_RETURN_IF_ERROR(cml_window_shape(op, operand, config, &attrs->u.window, &windows));
  if (!cml_shape_dims_equal(&windows, source)) {
    return INVALID("%s: source %s must have the window output shape %s of operand %s",
                   cml_op_name(op), S1(source), cml__shape_text(&windows, sb2_), S0(operand));
  }
  *out = *operand;
  return CML_OK;
}
