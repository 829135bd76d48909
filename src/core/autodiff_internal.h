// SPDX-License-Identifier: Apache-2.0
// src/core/autodiff_internal.h: the reverse-mode differentiator's shared context, helpers and
// per-group VJP rules (src/core/autodiff_<group>.c, one per ops.def GROUP). Symbol prefix cml__ad_.
#ifndef CML_CORE_AUTODIFF_INTERNAL_H_
#define CML_CORE_AUTODIFF_INTERNAL_H_

#include "builder_internal.h"
#include "cml/autodiff.h"
#include "cml/fused.h"

#ifdef __cplusplus
extern "C" {
#endif

// One differentiation: the function the gradient ops are added to, and which values carry
// gradients (float or complex values that depend on a requested value; indexed by value).
typedef struct cml__ad_t {
  cml_function_t* f;
  cml_builder_t* b;
  cml__module_impl_t* impl;
  const bool* relevant;
  uint32_t value_limit;  // values at or past it were added by this differentiation
  cml_value_t* ct;       // the cotangent of each value below value_limit (0: none yet)
  // The shapes of the node whose rule runs (copies: the module's arrays move as ops are added),
  // in storage of the cml_ad_backward running it.
  cml_shape_t* in_shapes;
  cml_shape_t* out_shapes;
} cml__ad_t;

// Adds |ct| to the cotangent of value |v| (< ad->value_limit), converting its dtype.
void cml__ad_accumulate(cml__ad_t* ad, uint32_t v, cml_value_t ct);

// Differentiates the nodes of ad->f from position |begin| to the last one (nodes a rule just
// added, e.g. an inlined callee) with cotangents |seeds| on values |seed_values|, and adds the
// cotangents this gives to values below ad->value_limit into |ad|.
cml_status_t cml__ad_nested(cml__ad_t* ad, uint32_t begin, const uint32_t* seed_values,
                            const cml_value_t* seeds, uint32_t seed_count);

// A separate differentiation inside a rule: the nodes of ad->f from |begin| to the last one,
// with cotangent |seed| on value |out|, with respect to values |wrt| only (indices of values
// that exist when it is called, e.g. ones the rule just added). Writes the cotangent of each to
// |out_cts| (zeros when none) and leaves |ad|'s cotangents alone. The nodes it adds are standard
// ops, so the result can itself be differentiated (cml__ad_nested): second derivatives through a
// VJP node.
cml_status_t cml__ad_inner_vjp(cml__ad_t* ad, uint32_t begin, uint32_t out, cml_value_t seed,
                               const uint32_t* wrt, uint32_t count, cml_value_t* out_cts);

// cml__ad_inner_vjp with a cotangent |seeds|[i] on each value |outs|[i] (0: none).
cml_status_t cml__ad_inner_vjp_seeds(cml__ad_t* ad, uint32_t begin, const uint32_t* outs,
                                     const cml_value_t* seeds, uint32_t seed_count,
                                     const uint32_t* wrt, uint32_t count, cml_value_t* out_cts);

// A VJP rule: given the node |n| and the cotangent of each of its outputs (|cts|[k], 0 when
// output k has none: it is zero), writes the cotangent of each input that needs one
// (cml__ad_wants) to |in_cts| (0: none, i.e. zero). Ops are added with the public builders;
// their errors stick to the builder. Returns CML_OK or a status of its own (UNIMPLEMENTED,
// via cml__ad_no_vjp).
typedef cml_status_t cml__ad_rule_fn(cml__ad_t* ad, const cml_ir_node_t* n, const cml_value_t* cts,
                                     cml_value_t* in_cts);

cml__ad_rule_fn cml__ad_vjp_elementwise;
cml__ad_rule_fn cml__ad_vjp_reduce;
cml__ad_rule_fn cml__ad_vjp_movement;
cml__ad_rule_fn cml__ad_vjp_index;
cml__ad_rule_fn cml__ad_vjp_window;
cml__ad_rule_fn cml__ad_vjp_linalg;
cml__ad_rule_fn cml__ad_vjp_special;
cml__ad_rule_fn cml__ad_vjp_control;
cml__ad_rule_fn cml__ad_vjp_fused;
cml__ad_rule_fn cml__ad_vjp_collective;

// UNIMPLEMENTED: "<Op>: no VJP (<why>) for operands <shapes>; cml_gradients cannot
// differentiate through it". |why| may be NULL.
cml_status_t cml__ad_no_vjp(cml__ad_t* ad, const cml_ir_node_t* n, const char* why);

// The public id of input |i| / output |k| of |n|, and their shapes (stable copies, valid while
// the rule runs; |n| itself is a copy too).
cml_value_t cml__ad_in(const cml__ad_t* ad, const cml_ir_node_t* n, uint32_t i);
cml_value_t cml__ad_out(const cml__ad_t* ad, const cml_ir_node_t* n, uint32_t k);
const cml_shape_t* cml__ad_in_shape(const cml__ad_t* ad, const cml_ir_node_t* n, uint32_t i);
const cml_shape_t* cml__ad_out_shape(const cml__ad_t* ad, const cml_ir_node_t* n, uint32_t k);
// The shape of any value id of the builder.
cml_shape_t cml__ad_shape(const cml__ad_t* ad, cml_value_t v);
// Whether input |i| of |n| needs a cotangent.
bool cml__ad_wants(const cml__ad_t* ad, const cml_ir_node_t* n, uint32_t i);

// Whether values of |dtype| have gradients (the float and complex dtypes).
bool cml__ad_differentiable(cml_dtype_t dtype);
// A scalar constant of |dtype|.
cml_value_t cml__ad_scalar(cml__ad_t* ad, cml_dtype_t dtype, double value);
// Zeros of |shape|.
cml_value_t cml__ad_zeros(cml__ad_t* ad, const cml_shape_t* shape);
// |v| broadcast to |shape| (v a scalar, or of |shape|'s rank with size-1 axes).
cml_value_t cml__ad_broadcast_to(cml__ad_t* ad, cml_value_t v, const cml_shape_t* shape);
// Sums cotangent |ct| (of an op's output shape) down to |shape|, the operand's shape under the
// restricted broadcasting of binary ops (equal, scalar, or size-1 axes).
cml_value_t cml__ad_unbroadcast(cml__ad_t* ad, cml_value_t ct, const cml_shape_t* shape);
// |x| * |y|, |x| + |y|, ... shorthands.
cml_value_t cml__ad_mul(cml__ad_t* ad, cml_value_t x, cml_value_t y);
cml_value_t cml__ad_add(cml__ad_t* ad, cml_value_t x, cml_value_t y);
cml_value_t cml__ad_sub(cml__ad_t* ad, cml_value_t x, cml_value_t y);
cml_value_t cml__ad_div(cml__ad_t* ad, cml_value_t x, cml_value_t y);
// |x| converted to |dtype| (|x| itself when it has it already).
cml_value_t cml__ad_convert(cml__ad_t* ad, cml_value_t x, cml_dtype_t dtype);
// Sum of |x| over |axes| with those axes kept as size 1.
cml_value_t cml__ad_sum_keep(cml__ad_t* ad, cml_value_t x, const int64_t* axes, int32_t count);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_CORE_AUTODIFF_INTERNAL_H_
