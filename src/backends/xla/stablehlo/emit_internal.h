// SPDX-License-Identifier: Apache-2.0
// src/backends/xla/stablehlo/emit_internal.h: the StableHLO emitter's internals shared by its
// files (text buffer, SSA naming, op writing helpers, literals). Not a public header.
//
// Naming scheme: every SSA value the emitter defines is `%<n>` with a module-wide counter, so
// names never collide across nested regions; main's parameters are `%arg<i>` by position (the
// user's names only appear as locations). A multi-result op is `%<n>:<k>` and its results
// `%<n>#i`. No user-chosen text ever becomes part of an SSA name.
//
// Thread-safety: a context is single-thread; the emitter creates one per call.
#ifndef CML_BACKENDS_XLA_STABLEHLO_EMIT_INTERNAL_H_
#define CML_BACKENDS_XLA_STABLEHLO_EMIT_INTERNAL_H_

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/xla/stablehlo/emitter.h"
#include "cml/ir.h"

//===--- growable text ---===//

typedef struct cml__shlo_text_t {
  char* data;
  size_t size, capacity;
  bool failed;  // an allocation or formatting failure happened; the text is incomplete
} cml__shlo_text_t;

void cml__shlo_text_vprintf(cml__shlo_text_t* t, const char* fmt, va_list ap);
void cml__shlo_text_printf(cml__shlo_text_t* t, const char* fmt, ...) CML_PRINTF(2, 3);

//===--- names and values ---===//

// An SSA name with its '%' ("%12", "%12#1", "%x").
typedef struct cml__shlo_name_t {
  char s[80];
} cml__shlo_name_t;

// A value as the emitter sees it: its SSA name and its shape.
typedef struct cml__shlo_val_t {
  cml__shlo_name_t name;
  cml_shape_t shape;
} cml__shlo_val_t;

typedef struct cml__shlo_ctx_t {
  const cml_module_t* module;
  const cml_xla_emit_options_t* opts;
  cml__shlo_text_t text;
  cml__shlo_name_t* names;  // per IR value: its current SSA name
  char (*symbols)[80];      // per function: its func.func symbol ("" when inlined only)
  bool* called;             // per function: the target of some Call
  uint32_t next_id;         // next fresh SSA number
  int indent;               // current indentation, in levels of two spaces
  // Divergence guards (emit_guard.c); NULL arrays when the module needs none. Per node:
  // |guard_nodes| the If / While agrees on its predicate first; per function: |guard_flags| it
  // holds such a node (directly or in what it runs), so its regions or func.func thread the flag.
  bool* guard_nodes;
  bool* guard_flags;
  bool flag_on;          // the region being emitted threads a flag ...
  cml__shlo_val_t flag;  // ... whose current value is this Int32 scalar
} cml__shlo_ctx_t;

// A fresh SSA name "%<n>".
cml__shlo_name_t cml__shlo_fresh(cml__shlo_ctx_t* c);
// The current name and shape of IR value |v|.
cml__shlo_val_t cml__shlo_value(const cml__shlo_ctx_t* c, uint32_t v);
// Binds IR value |v| to |name|.
void cml__shlo_bind(cml__shlo_ctx_t* c, uint32_t v, const cml__shlo_name_t* name);
// "%12#3" from "%12" and 3.
cml__shlo_name_t cml__shlo_result(const cml__shlo_name_t* base, uint32_t index);

//===--- writing ---===//

void cml__shlo_printf(cml__shlo_ctx_t* c, const char* fmt, ...) CML_PRINTF(2, 3);
// Starts a new line at the current indentation.
void cml__shlo_line(cml__shlo_ctx_t* c);
// "tensor<2x3xf32>".
void cml__shlo_type(cml__shlo_ctx_t* c, const cml_shape_t* s);
// "tensor<T>" of a scalar of |dtype|.
void cml__shlo_scalar_type(cml__shlo_ctx_t* c, cml_dtype_t dtype);

// Writes `%n = "<op>"(<ins>)` (or `%n:k = ...` when |result_count| != 1) on a new line and
// returns %n. The caller then writes regions (if any) and calls cml__shlo_op_end.
cml__shlo_name_t cml__shlo_op_begin(cml__shlo_ctx_t* c, const char* op, const cml__shlo_val_t* ins,
                                    int in_count, uint32_t result_count);
// Writes ` {<attrs>}` (when |attrs| is non-empty) and ` : (<in types>) -> <out types>`.
void cml__shlo_op_end(cml__shlo_ctx_t* c, const char* attrs, const cml__shlo_val_t* ins,
                      int in_count, const cml_shape_t* outs, uint32_t out_count);
// A single-result op without regions: begin + end; returns the result.
cml__shlo_val_t cml__shlo_op(cml__shlo_ctx_t* c, const char* op, const cml__shlo_val_t* ins,
                             int in_count, const char* attrs, const cml_shape_t* out);

// Small fixed attribute buffers (formatting overflow marks the text failed).
typedef struct cml__shlo_attr_t {
  char s[4096];
  size_t n;
  bool overflow;
} cml__shlo_attr_t;
void cml__shlo_attr_init(cml__shlo_attr_t* a);
void cml__shlo_attr_printf(cml__shlo_attr_t* a, const char* fmt, ...) CML_PRINTF(2, 3);
// "array<i64: 1, 2>" ("array<i64>" when empty).
void cml__shlo_attr_array(cml__shlo_attr_t* a, const int64_t* v, int32_t n);
// "[1, 2]".
void cml__shlo_attr_list(cml__shlo_attr_t* a, const int64_t* v, int32_t n);
// "dense<[[l0, h0], ...]> : tensor<Nx2xi64>".
void cml__shlo_attr_padding(cml__shlo_attr_t* a, const int64_t* low, const int64_t* high,
                            int32_t n);

//===--- common lowerings ---===//

// Scalar constant kinds for reduction inits and fills.
typedef enum cml__shlo_scalar_kind_t {
  CML__SHLO_ZERO,
  CML__SHLO_ONE,
  CML__SHLO_LOWEST,    // -inf for floats, the minimum for integers, false for Bool
  CML__SHLO_HIGHEST,   // +inf for floats, the maximum for integers, true for Bool
  CML__SHLO_ALL_ONES,  // every bit set (-1, max unsigned, true)
} cml__shlo_scalar_kind_t;

// A scalar constant of |dtype|.
cml__shlo_val_t cml__shlo_const_scalar(cml__shlo_ctx_t* c, cml_dtype_t dtype,
                                       cml__shlo_scalar_kind_t kind);
// A constant of |dtype| with the dims of |dims| filled with |kind| (scalar + broadcast).
cml__shlo_val_t cml__shlo_const_fill(cml__shlo_ctx_t* c, cml_dtype_t dtype,
                                     cml__shlo_scalar_kind_t kind, const cml_shape_t* dims);
// Broadcasts |v| (a scalar, or the same rank with size-1 axes) to the dims of |dims|.
cml__shlo_val_t cml__shlo_broadcast(cml__shlo_ctx_t* c, const cml__shlo_val_t* v,
                                    const cml_shape_t* dims);
// stablehlo.slice of |v| from |starts| to |limits| by |strides| (one per axis of |v|), giving
// |out|.
cml__shlo_val_t cml__shlo_slice(cml__shlo_ctx_t* c, const cml__shlo_val_t* v, const int64_t* starts,
                                const int64_t* limits, const int64_t* strides,
                                const cml_shape_t* out);
// Under Shardy (cml_xla_emit_is_sharded, one mesh), `sdy.sharding_constraint` pinning the axes
// of |v| whose bit is set in |closed| to be replicated, the others left open to propagation;
// |v| itself otherwise. The guard for ops XLA's SPMD partitioner gets wrong when they are split
// along those axes (docs/robustness.md, finding 100).
cml__shlo_val_t cml__shlo_replicate_axes(cml__shlo_ctx_t* c, const cml__shlo_val_t* v,
                                         uint64_t closed);
// stablehlo.pad of |v| with the scalar |fill|: |low| / |high| (negative: crop) and |interior|
// per axis of |v|, giving |out|.
cml__shlo_val_t cml__shlo_pad(cml__shlo_ctx_t* c, const cml__shlo_val_t* v,
                              const cml__shlo_val_t* fill, const int64_t* low, const int64_t* high,
                              const int64_t* interior, const cml_shape_t* out);
// Element-wise conversion with cml's ConvertDType semantics.
cml__shlo_val_t cml__shlo_convert(cml__shlo_ctx_t* c, const cml__shlo_val_t* v, cml_dtype_t to);
// "stablehlo.compare" with the direction ("EQ", "LT", ...) and the compare type of |dtype|
// (|total_order| selects TOTALORDER for floats).
cml__shlo_val_t cml__shlo_compare(cml__shlo_ctx_t* c, const char* direction,
                                  const cml__shlo_val_t* lhs, const cml__shlo_val_t* rhs,
                                  bool total_order);
// "FLOAT", "TOTALORDER", "SIGNED" or "UNSIGNED" for |dtype|.
const char* cml__shlo_compare_type(cml_dtype_t dtype, bool total_order);
// Writes a `({ ^bb0(%a: T, %b: T): %r = "<op>"(%a, %b) ...; return %r })` region body of a
// binary scalar computation (for reduce, scatter, reduce_window). Writes only the braces part
// "{ ... }", without the surrounding parentheses.
void cml__shlo_binary_region(cml__shlo_ctx_t* c, const char* op, cml_dtype_t dtype);

// Writes `value = dense<...> : tensor<...>` for the array |data| of |shape| into the text
// (the attribute dictionary's content). |shape| has at least one element.
void cml__shlo_dense_literal(cml__shlo_ctx_t* c, const cml_shape_t* shape, const void* data);
// Emits a constant op for the array |data| of |shape| (any element count) and returns it.
cml__shlo_val_t cml__shlo_constant(cml__shlo_ctx_t* c, const cml_shape_t* shape, const void* data);
// Formats one element |index| of |data| (of |dtype|) as an MLIR literal into |buf|.
void cml__shlo_format_element(cml_dtype_t dtype, const void* data, int64_t index, char* buf,
                              size_t size);
// Formats a scalar constant of |kind| for |dtype| into |buf|.
void cml__shlo_format_scalar_kind(cml_dtype_t dtype, cml__shlo_scalar_kind_t kind, char* buf,
                                  size_t size);

//===--- shared by the lowerings ---===//

// A shape with |s|'s dims and |dtype|.
static inline cml_shape_t cml_shlo_retype(const cml_shape_t* s, cml_dtype_t dtype) {
  cml_shape_t r = *s;
  r.dtype = dtype;
  return r;
}

// Float16 or BFloat16: the types the emitter computes in Float32 and rounds once where the
// plugins' half-precision lowering loses accuracy (transcendentals, Pow, Atan2, sums, products).
static inline bool cml__shlo_is_half(cml_dtype_t dtype) {
  return dtype == CML_DTYPE_F16 || dtype == CML_DTYPE_BF16;
}

// Output |i|'s shape of node |n|.
static inline const cml_shape_t* cml_shlo_out(const cml__shlo_ctx_t* c, const cml_ir_node_t* n,
                                              uint32_t i) {
  return &c->module->values[n->first_output + i].shape;
}

// Binds node |n|'s single output to |v|.
static inline void cml_shlo_bind1(cml__shlo_ctx_t* c, const cml_ir_node_t* n,
                                  const cml__shlo_val_t* v) {
  cml__shlo_bind(c, n->first_output, &v->name);
}

// Writes "^bb0(%a: tensor<T0>, ...):" for scalars of |dtypes|, naming them into |out|.
void cml__shlo_scalar_header(cml__shlo_ctx_t* c, const cml_dtype_t* dtypes, uint32_t count,
                             cml__shlo_val_t* out);
// Writes `"stablehlo.return"(vals) : (types) -> ()`.
void cml__shlo_region_return(cml__shlo_ctx_t* c, const cml__shlo_val_t* vals, uint32_t count);
// IEEE-754 maximum (|is_max|) or minimum of two floats of one shape: NaN propagates, -0 < +0.
cml__shlo_val_t cml__shlo_float_minmax(cml__shlo_ctx_t* c, bool is_max, const cml__shlo_val_t* a,
                                       const cml__shlo_val_t* b);
// A binary op |op| on two values of one shape, with the float max/min fix-up.
cml__shlo_val_t cml__shlo_binary_op(cml__shlo_ctx_t* c, const char* op, const cml__shlo_val_t* a,
                                    const cml__shlo_val_t* b, const cml_shape_t* out);
// Float max/min reductions through XLA's partitioner or its collectives: these only accept a
// region that is the plain op (a region with the NaN/-0 selects of cml__shlo_float_minmax fails
// to compile, "Unsupported reduction computation", or aborts the process for BFloat16), and the
// plain float op drops NaN and does not order zeros. So such a reduction runs on order keys:
// signed integers of the float's width ordered as cml orders floats (-inf < ... < -0 < +0 <
// ... < +inf), NaN mapped to the integer maximum (|nan_high|: it wins a max) or minimum (it
// wins a min). An integer max/min of the keys, decoded, is the float max/min with NaN
// propagated (as a NaN of another payload) and -0 < +0, bit for bit in any reduction order.
// The key dtype of float |dtype| (Float8: Int8; Float16, BFloat16: Int16; Float32: Int32;
// Float64: Int64).
cml_dtype_t cml__shlo_order_key_dtype(cml_dtype_t dtype);
cml__shlo_val_t cml__shlo_order_key(cml__shlo_ctx_t* c, const cml__shlo_val_t* x, bool nan_high);
// The float of |dtype| whose key is |key| (the integer extremes decode to NaN).
cml__shlo_val_t cml__shlo_from_order_key(cml__shlo_ctx_t* c, const cml__shlo_val_t* key,
                                         cml_dtype_t dtype);
// Body op and init value of a ReduceWindow reduction type (emit_reduce.c).
bool cml__shlo_reduce_type_kind(cml_reduce_type_t type, const char** body,
                                cml__shlo_scalar_kind_t* init);

//===--- lowerings by ops.def group (emit_<group>.c) ---===//

// Each emits node |n| of its group, binding its outputs, or returns UNIMPLEMENTED (naming op,
// shapes and dtypes) for an op it has no lowering for. cml__shlo_emit_simple_node dispatches.
cml_status_t cml__shlo_emit_elementwise(cml__shlo_ctx_t* c, const cml_ir_node_t* n);
cml_status_t cml__shlo_emit_reduce(cml__shlo_ctx_t* c, const cml_ir_node_t* n);
cml_status_t cml__shlo_emit_movement(cml__shlo_ctx_t* c, const cml_ir_node_t* n);
cml_status_t cml__shlo_emit_index(cml__shlo_ctx_t* c, const cml_ir_node_t* n);
cml_status_t cml__shlo_emit_window(cml__shlo_ctx_t* c, const cml_ir_node_t* n);
cml_status_t cml__shlo_emit_linalg(cml__shlo_ctx_t* c, const cml_ir_node_t* n);
cml_status_t cml__shlo_emit_special(cml__shlo_ctx_t* c, const cml_ir_node_t* n);
cml_status_t cml__shlo_emit_control(cml__shlo_ctx_t* c, const cml_ir_node_t* n);
cml_status_t cml__shlo_emit_collective(cml__shlo_ctx_t* c, const cml_ir_node_t* n);

// Emits IR node |n| of a function being emitted (everything but control flow), binding its
// outputs. Returns UNIMPLEMENTED (naming op, shapes and dtypes) for what it cannot lower.
cml_status_t cml__shlo_emit_simple_node(cml__shlo_ctx_t* c, const cml_ir_node_t* n);
// Emits the nodes of function |fi| (its parameters and captures must be bound already).
cml_status_t cml__shlo_emit_nodes(cml__shlo_ctx_t* c, uint32_t fi);

// Writes `dense<[[a, b], [c, d]]> : tensor<GxSxi64>` for |count| rows of |size| ids.
void cml__shlo_dense_groups(cml__shlo_ctx_t* c, const int32_t* ids, int32_t count, int32_t size);

// The functions control-flow node |n| refers to (Call, While, If, Sort) into |out|; returns
// their count (0 for any other op).
uint32_t cml__shlo_node_targets(const cml_ir_node_t* n, uint32_t out[2]);

//===--- divergence guards (emit_guard.c) ---===//

// Per node of |module|: whether it is a guarded If / While (|*out_guarded|: its closures run a
// collective and its predicate may differ between slots), and per function whether it holds one
// (|*out_flags|: its regions or func.func thread the flag); both NULL when |module| with |opts|
// is not SPMD on more than one slot. malloc'd; the module's nesting must have been checked.
cml_status_t cml__shlo_guard_analyze(const cml_module_t* module, const cml_xla_emit_options_t* opts,
                                     bool** out_guarded, bool** out_flags);
// Whether node |n| is a guarded If / While (|guarded| from cml__shlo_guard_analyze, or NULL).
bool cml__shlo_guard_node(const cml_module_t* m, const bool* guarded, const cml_ir_node_t* n);
// Emits the agreement on scalar Bool |pred| for guarded node |n| over the groups it runs
// collectives in; |*out| is a Bool scalar, true where the slots of this slot's group disagree.
cml_status_t cml__shlo_guard_disagrees(cml__shlo_ctx_t* c, const cml_ir_node_t* n,
                                       const cml__shlo_val_t* pred, cml__shlo_val_t* out);
// c->flag = max(c->flag, |disagrees| ? 1 + index of |n| : 0).
void cml__shlo_guard_record(cml__shlo_ctx_t* c, const cml_ir_node_t* n,
                            const cml__shlo_val_t* disagrees);
// The flag's start value (Int32 0) and the larger of two flags.
cml__shlo_val_t cml__shlo_flag_zero(cml__shlo_ctx_t* c);
cml__shlo_val_t cml__shlo_flag_max(cml__shlo_ctx_t* c, const cml__shlo_val_t* a,
                                   const cml__shlo_val_t* b);
// An UNIMPLEMENTED status naming |n|'s op and its operand/result shapes.
cml_status_t cml__shlo_unimplemented(const cml__shlo_ctx_t* c, const cml_ir_node_t* n,
                                     const char* why);

#endif  // CML_BACKENDS_XLA_STABLEHLO_EMIT_INTERNAL_H_
