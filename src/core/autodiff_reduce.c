// SPDX-License-Identifier: Apache-2.0
// src/core/autodiff_reduce.c: VJPs of the reduce group (ReduceSum, ReduceMax, ReduceMin,
// ReduceProduct). ArgMinMax and the bitwise/logical reductions have integer or Bool results.
#include "autodiff_internal.h"

// |v| (the reduced shape) broadcast back to |x|'s shape along the kept axes.
static cml_value_t cml_ad_unreduce(cml__ad_t* ad, cml_value_t v, const cml_ir_node_t* n) {
  const cml_shape_t* xs = cml__ad_in_shape(ad, n, 0);
  bool reduced[CML_MAX_RANK] = {false};
  for (int32_t i = 0; i < n->attrs->axis_count; ++i) reduced[n->attrs->axes[i]] = true;
  int64_t kept[CML_MAX_RANK];
  int32_t count = 0;
  for (int32_t i = 0; i < xs->rank; ++i) {
    if (!reduced[i]) kept[count++] = i;
  }
  return cml_op_broadcast_in_dim(ad->f, v, xs->dims, xs->rank, kept, count);
}

cml_status_t cml__ad_vjp_reduce(cml__ad_t* ad, const cml_ir_node_t* n, const cml_value_t* cts,
                                cml_value_t* in_cts) {
  cml_function_t* f = ad->f;
  cml_value_t g = cts[0], x = cml__ad_in(ad, n, 0), out = cml__ad_out(ad, n, 0);
  cml_value_t gb = cml_ad_unreduce(ad, g, n);
  switch (n->op) {
    case CML_OP_REDUCE_SUM:
      in_cts[0] = gb;
      return CML_OK;
    case CML_OP_REDUCE_MAX:
    case CML_OP_REDUCE_MIN: {  // split equally between the tied extrema
      cml_dtype_t dt = cml__ad_in_shape(ad, n, 0)->dtype;
      cml_value_t hit = cml_op_equal(f, x, cml_ad_unreduce(ad, out, n));
      cml_value_t ind = cml_op_convert_dtype(f, hit, dt);
      cml_value_t count = cml_op_reduce_sum(f, ind, n->attrs->axes, (size_t)n->attrs->axis_count);
      in_cts[0] =
          cml__ad_mul(ad, cml__ad_mul(ad, gb, ind),
                      cml_ad_unreduce(ad, cml_op_div(f, cml__ad_scalar(ad, dt, 1.0), count), n));
      return CML_OK;
    }
    case CML_OP_REDUCE_PRODUCT: {
      // The product of the other elements. Without zeros in a reduced group that is out / x;
      // exact zeros are counted (JAX's results): with one zero, its element gets the product of
      // the rest and the others 0; with two or more, every element gets 0.
      const cml_shape_t* xs = cml__ad_in_shape(ad, n, 0);
      const int64_t* axes = n->attrs->axes;
      const size_t axis_count = (size_t)n->attrs->axis_count;
      cml_value_t zero = cml__ad_broadcast_to(ad, cml__ad_scalar(ad, xs->dtype, 0.0), xs);
      cml_value_t one = cml__ad_broadcast_to(ad, cml__ad_scalar(ad, xs->dtype, 1.0), xs);
      cml_value_t is_zero = cml_op_equal(f, x, zero);
      cml_value_t x_nz = cml_op_where(f, is_zero, one, x);
      cml_value_t rest = cml_ad_unreduce(ad, cml_op_reduce_product(f, x_nz, axes, axis_count), n);
      cml_value_t zeros = cml_ad_unreduce(
          ad,
          cml_op_reduce_sum(f, cml_op_convert_dtype(f, is_zero, CML_DTYPE_I64), axes, axis_count),
          n);
      cml_value_t count0 = cml_op_equal(f, zeros, cml_constant_scalar_i64(f, CML_DTYPE_I64, 0));
      cml_value_t count1 = cml_op_equal(f, zeros, cml_constant_scalar_i64(f, CML_DTYPE_I64, 1));
      cml_value_t others = cml_op_where(f, count0, cml__ad_div(ad, rest, x_nz), zero);
      cml_value_t at_zero = cml_op_where(f, count1, rest, zero);
      in_cts[0] = cml__ad_mul(ad, gb, cml_op_where(f, is_zero, at_zero, others));
      return CML_OK;
    }
    default:
      return cml__ad_no_vjp(ad, n, NULL);
  }
}
