// SPDX-License-Identifier: Apache-2.0
// src/backends/xla/stablehlo/emit_special.c: StableHLO lowerings of the "special" ops
// (RNGBitGenerator, the BatchNorm* ops, FFT).
//
// Notes on semantics:
// - RNGBitGenerator uses PHILOX with an unsigned output of the same width, bitcast to the
//   requested dtype.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/xla/stablehlo/emit_internal.h"

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

// BatchNormForTraining: XLA expands batch_norm_training with var = E[x^2] - E[x]^2 in the
// dtype, which cancels when a feature's mean is large against its spread (f32 x = 4096 + noise
// in [-1, 1]: variance 0 and outputs 200x too large). The statistics do not change with a
// shift, so x is shifted by its first element of each feature (a slice, broadcast back), and the
// slice is added to the mean again. A batch of zero elements has nothing to shift.
static bool cml_shlo_bn_shift(cml__shlo_ctx_t* c, const cml_ir_node_t* n, cml__shlo_val_t* x,
                              cml__shlo_val_t* shift) {
  const int32_t rank = x->shape.rank;
  const int64_t feature = n->attrs->axis;
  if (n->op != CML_OP_BATCH_NORM_TRAINING || feature < 0 || feature >= rank) return false;
  for (int32_t d = 0; d < rank; ++d) {
    if (x->shape.dims[d] == 0) return false;
  }
  int64_t starts[CML_MAX_RANK], limits[CML_MAX_RANK], strides[CML_MAX_RANK];
  cml_shape_t one = x->shape;
  for (int32_t d = 0; d < rank; ++d) {
    starts[d] = 0;
    strides[d] = 1;
    limits[d] = d == feature ? x->shape.dims[d] : 1;
    one.dims[d] = limits[d];
  }
  cml__shlo_val_t first = cml__shlo_slice(c, x, starts, limits, strides, &one);
  cml__shlo_val_t wide = cml__shlo_broadcast(c, &first, &x->shape);
  *x = cml__shlo_binary_op(c, "stablehlo.subtract", x, &wide, &x->shape);
  cml_shape_t flat = cml_shape_make(x->shape.dtype, 1, &x->shape.dims[feature]);
  *shift = cml__shlo_op(c, "stablehlo.reshape", &first, 1, NULL, &flat);
  return true;
}

// f16 / bf16 operands are computed in f32 and rounded once, as the `c` kernels do (they work in
// double): XLA rewrites batch_norm_inference as x * a + b in the dtype, which loses the
// difference x - mean for large means, and its training expander's sums overflow f16 at 65504.
static cml_status_t cml_shlo_batch_norm(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  cml__shlo_val_t ins[5];
  const cml_dtype_t dtype = cml_shlo_out(c, n, 0)->dtype;
  const bool widen = dtype == CML_DTYPE_F16 || dtype == CML_DTYPE_BF16;
  for (uint32_t i = 0; i < n->input_count && i < 5; ++i) {
    ins[i] = cml__shlo_value(c, n->inputs[i]);
    if (widen) {
      const cml_shape_t wide = cml_shlo_retype(&ins[i].shape, CML_DTYPE_F32);
      ins[i] = cml__shlo_op(c, "stablehlo.convert", &ins[i], 1, NULL, &wide);
    }
  }
  cml__shlo_val_t shift;
  const bool shifted = cml_shlo_bn_shift(c, n, &ins[0], &shift);
  const char* op = n->op == CML_OP_BATCH_NORM_INFERENCE  ? "stablehlo.batch_norm_inference"
                   : n->op == CML_OP_BATCH_NORM_TRAINING ? "stablehlo.batch_norm_training"
                                                         : "stablehlo.batch_norm_grad";
  cml_shape_t outs[3];
  for (uint32_t i = 0; i < n->output_count && i < 3; ++i) {
    outs[i] = *cml_shlo_out(c, n, i);
    if (widen) outs[i] = cml_shlo_retype(&outs[i], CML_DTYPE_F32);
  }
  cml__shlo_attr_t a;
  cml__shlo_attr_init(&a);
  cml__shlo_attr_printf(&a, "epsilon = %.9e : f32, feature_index = %lld : i64",
                        (double)n->attrs->epsilon, (long long)n->attrs->axis);
  cml__shlo_name_t r = cml__shlo_op_begin(c, op, ins, (int)n->input_count, n->output_count);
  cml__shlo_op_end(c, a.s, ins, (int)n->input_count, outs, n->output_count);
  for (uint32_t i = 0; i < n->output_count; ++i) {
    cml__shlo_name_t name = n->output_count == 1 ? r : cml__shlo_result(&r, i);
    if (shifted && i == 1) {  // the mean of the shifted x, shifted back
      const cml__shlo_val_t mean = {name, outs[1]};
      const cml__shlo_val_t back = cml__shlo_binary_op(c, "stablehlo.add", &mean, &shift, &outs[1]);
      name = back.name;
    }
    if (widen) {
      const cml__shlo_val_t wide = {name, outs[i]};
      name = cml__shlo_op(c, "stablehlo.convert", &wide, 1, NULL, cml_shlo_out(c, n, i)).name;
    }
    cml__shlo_bind(c, n->first_output + i, &name);
  }
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

cml_status_t cml__shlo_emit_special(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  switch (n->op) {
    case CML_OP_RNG_BIT_GENERATOR:
      return cml_shlo_rng(c, n);
    case CML_OP_FFT:
      return cml_shlo_fft(c, n);
    case CML_OP_BATCH_NORM_INFERENCE:
    case CML_OP_BATCH_NORM_TRAINING:
    case CML_OP_BATCH_NORM_GRADIENT:
      return cml_shlo_batch_norm(c, n);
    default:
      return cml__shlo_unimplemented(c, n, "no StableHLO lowering for this op");
  }
}
