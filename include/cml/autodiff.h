// SPDX-License-Identifier: Apache-2.0
// cml/autodiff.h: reverse-mode differentiation over the IR (gradients of a scalar loss).
//
// `cml_gradients` walks the nodes of one function backwards from a scalar loss and adds to
// that same function the ops that compute the vector-Jacobian products (VJPs) of every node
// on a path from the requested values to the loss. The gradients are ordinary values of the
// function: return them, feed them to an optimizer (cml/optim.h), differentiate them again.
//
// Example (the gradient of loss = sum((x @ w)^2) with respect to w):
//
//   cml_function_t* f = cml_builder_main(b);
//   cml_value_t x = cml_parameter(f, "x", &xs);              // f32[4, 3]
//   cml_value_t w = cml_parameter(f, "w", &ws);              // f32[3, 2]
//   cml_value_t y = cml_op_dot(f, x, w);
//   cml_value_t loss = cml_op_reduce_sum(f, cml_op_mul(f, y, y), NULL, 0);
//   cml_value_t dw;
//   CML_RETURN_IF_ERROR(cml_gradients(f, loss, &w, 1, &dw));  // dw = 2 x^T (x @ w)
//   cml_value_t outs[2] = {loss, dw};
//   CML_RETURN_IF_ERROR(cml_function_return(f, outs, 2));
//
// Semantics (JAX's, so results compare with jax.grad):
// - Values the loss does not depend on get a gradient of zeros of their shape.
// - Only float values (Float16, BFloat16, Float32, Float64) and complex values carry
//   gradients. Integer and Bool values (indices, comparisons, RNG bits) are not differentiated:
//   asking for the gradient with respect to one is INVALID_ARGUMENT naming its dtype, and the
//   paths through them (Where's condition, Gather's indices, ConvertDType from an integer) carry
//   no gradient.
// - Piecewise ops: Max/Min split the gradient equally between equal operands; ReduceMax/Min
//   split it equally between the tied maxima (minima); ReduceWindow max/min and Sort send it to
//   the element SelectAndScatter/Sort picks (the first on ties; with window padding xla:cpu may
//   pick another tied element, docs/differential.md); Clamp passes it only strictly inside
//   (min, max); Abs, Sign, Floor, Ceil, Round have gradient 0 at their kinks and steps.
// - Complex: VJPs are the transposes of the linear maps (JAX's convention, no conjugation):
//   Real's VJP is Complex(g, 0), Imag's is Complex(0, -g), Complex's is (Real(g), -Imag(g)).
// - NaN and Inf propagate as the chain rule makes them: a NaN cotangent or partial derivative
//   gives NaN gradients (e.g. Sqrt at 0 gives Inf, Log at 0 gives Inf). ReduceProduct's VJP is
//   the product of the other elements, exact zeros included (JAX's results).
// - Gather/Scatter: exact for in-range indices (out-of-range starts are clamped by Gather
//   but skipped by the transposed Scatter, as in XLA).
// - `cml_op_stop_gradient(x)` is the identity at run time; no gradient flows through it.
//
// Ops with a VJP: every differentiable elementwise op (Abs, Add, Atan2, Ceil, Clamp, Complex,
// Conj, ConvertDType between float/complex dtypes, Cos, Div, Erf, Exp, Expm1, Floor, Identity,
// Imag, Log, Log1p, Logistic, Max, Min, Mul, Neg, Pow, Real, Rem, Round, Rsqrt, Sign, Sin, Sqrt,
// Sub, Tanh, Where), Dot, DotGeneral, ConvGeneral (channel groups, dilations, any layout; not
// batch groups), ReduceSum, ReduceMax, ReduceMin, ReduceProduct, ReduceWindow (Sum, Max, Min;
// no dilations), Reshape, Transpose, BroadcastInDim, Slice, Pad, Concatenate, Reverse,
// DynamicSlice, DynamicUpdateSlice, Gather, ScatterSum, ScatterMax, ScatterMin (the winning
// positions, ties split), FFT (all four types), BatchNormForInference,
// BatchNormForTraining (through BatchNormGradient), OptimizationBarrier, SchedulingBarrier,
// Call and If (their callees are inlined and differentiated; If's gradient is an If over the
// branches' gradient closures, so only the taken branch's runs), While with a static trip count (an
// integer counter in the state that starts at a constant, a condition `counter < constant`
// (LessThan), and a body returning counter + 1: differentiated as a loop, any number of trips;
// the state values the backward pass reads are kept per trip),
// Sort (the values: gradients follow the permutation), the collectives of an SPMD program
// (AllReduce and ReduceScatter with sum, AllGather, AllToAll, CollectivePermute,
// CollectiveBroadcast: the gradient is that of the sum of every device slot's loss, so each
// one's VJP is its transpose), FusedSoftmax, FusedGelu,
// FusedLayerNorm, FusedDense, FusedScaledDotProductAttention (and its VJP op, for second
// derivatives), FusedAttentionQKVProjection, FusedQuantizedDense (x, bias, scales and zero
// points; the integer codes have no gradient). Any other op on the path from the requested
// values to the loss fails with UNIMPLEMENTED naming the op, its operand shapes and dtypes; in
// particular a While without a static trip count, ReduceWindow Product and dilated windows,
// ConvGeneral with batch groups, and on dynamic axes Sort and Concatenate along the dynamic
// axis. Control flow nested in control flow (a While, If or Sort
// inside a Call, If or While body) is differentiated. See docs/autodiff.md.
//
// Thread-safety: as every builder (cml/graph.h): one thread at a time per builder.
#ifndef CML_AUTODIFF_H_
#define CML_AUTODIFF_H_

#include "cml/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

// Adds to |f| the graph computing d|loss|/d|wrt|[i] for each of the |count| values and writes
// those gradients (values of |f|, each of its |wrt| value's shape and dtype) to |out_grads|.
// |loss| is a scalar of a float dtype; |loss| and every |wrt| value are values of |f| itself
// (not of a closure or parent, not of another builder). |f| must not have returned yet.
// Returns CML_OK, or: INVALID_ARGUMENT for NULL arguments, a non-scalar or non-float loss, a
// value of another function or builder, a |wrt| value of an integer or Bool dtype;
// FAILED_PRECONDITION once |f| returned or the builder compiled; UNIMPLEMENTED naming the
// first op on the path that has no VJP; the builder's pending error, if any. Every failure
// writes CML_VALUE_INVALID to every |out_grads| entry, and one about the arguments or the graph
// also sticks to the builder (as op errors do); FAILED_PRECONDITION (a returned function or a
// compiled builder) and a NULL |f| leave the builder as it was, as a second
// cml_function_return does. May be called several times on one function (each call differentiates
// the nodes recorded so far, its own earlier gradient ops included, so higher derivatives work).
CML_API CML_MUST_USE cml_status_t cml_gradients(cml_function_t* f, cml_value_t loss,
                                                const cml_value_t* wrt, size_t count,
                                                cml_value_t* out_grads);

// StopGradient: the identity at run time (recorded as an Identity node marked as a gradient
// stop), through which `cml_gradients` propagates nothing. Accepts every dtype Identity does;
// fails as Identity does, naming "StopGradient".
CML_API cml_value_t cml_op_stop_gradient(cml_function_t* f, cml_value_t x);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_AUTODIFF_H_
