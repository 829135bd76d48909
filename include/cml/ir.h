// SPDX-License-Identifier: Apache-2.0
// cml/ir.h: the backend-neutral IR a backend receives at compile time (for implementers).
//
// A module is immutable once compiled. It holds every node of every function in one array;
// each function lists its nodes in creation order, which is a valid topological order. Values
// are indices into `values` (index 0 is unused); a node produces `output_count` consecutive
// values starting at `first_output`. The builder has already validated every op, inferred every
// shape and filled in every default of the attributes (strides 1, dilations 1, group counts 1,
// accumulator dtype, ...), so a backend never re-checks them.
//
// Closures: a closure's `captures_outer[i]` is a value of its parent function, and
// `captures_inner[i]` is the CML_OP_CAPTURED_VALUE value standing for it inside the closure. A
// closure that uses a value of a grandparent captures it through its parent (which captures it
// too), so a backend only ever looks one level up.
//
// Example (walk main's nodes):
//
//   const cml_ir_function_t* main_fn = &module->functions[0];
//   for (uint32_t i = 0; i < main_fn->node_count; ++i) {
//     const cml_ir_node_t* n = &module->nodes[main_fn->nodes[i]];
//     const cml_shape_t* out = &module->values[n->first_output].shape;
//     for (uint32_t k = 0; k < n->input_count; ++k) {
//       const cml_shape_t* in = &module->values[n->inputs[k]].shape;
//       ...
//     }
//   }
//
// Thread-safety: immutable, safe to read from many threads.
#ifndef CML_IR_H_
#define CML_IR_H_

#include "cml/distributed.h"
#include "cml/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

// Attributes of the fused ops (cml/fused.h), in cml_ir_attrs_t.fused. FusedSoftmax keeps its
// axis in cml_ir_attrs_t.axis and FusedLayerNorm its axes (sorted) in axes / axis_count.
// Optional operands follow the required ones in the op's documented order, and only those
// present are inputs of the node; bit i of |optional_inputs| says whether optional operand i
// is present (FusedLayerNorm: gamma, beta; FusedDense: bias; FusedSDPA: mask, bias,
// query_seq_len, kv_seq_len; FusedAttentionQKVProjection: bias_q, bias_k, bias_v;
// FusedQuantizedDense: inputs x, weights, then scale, zero_point, bias as bits 0, 1, 2;
// QuantizedEmbeddingLookup: data, indices, no optional input).
typedef struct cml_ir_fused_attrs_t {
  int32_t activation;         // FusedDense: a cml_activation_t
  int32_t layout;             // FusedDense: cml_dense_layout_t; FusedSDPA: cml_attention_layout_t
  bool exact;                 // FusedGelu
  bool causal;                // FusedSDPA
  uint32_t optional_inputs;   // see above
  double epsilon;             // FusedLayerNorm
  double scale;               // FusedSDPA: the scale, its default already filled in
  int64_t query_dim, kv_dim;  // FusedAttentionQKVProjection
  // FusedQuantizedDense, QuantizedEmbeddingLookup (cml_quantization_t): the scheme (a
  // cml_quant_scheme_t), the GGML format (a cml_ggml_type_t, GGML only) and the block size
  // along N (Linear and NF4; the block axis is always 1). The activation is |activation|.
  int32_t quant_scheme;
  int32_t quant_ggml_type;
  int64_t quant_block_size;
} cml_ir_fused_attrs_t;

// Attributes of the collective ops (cml/distributed.h), in cml_ir_attrs_t.collective. The
// reduction type of AllReduce and ReduceScatter is in cml_ir_attrs_t.reduce_type and the axis
// of AllGather and ReduceScatter in cml_ir_attrs_t.axis. Arrays are owned by the module.
typedef struct cml_ir_collective_attrs_t {
  // AllReduce, AllGather, ReduceScatter, AllToAll, CollectiveBroadcast: the replica groups,
  // group_count * group_size device slots, always filled (a NULL |groups| argument of the
  // builder becomes one group of every slot in order).
  const int32_t* groups;
  int32_t group_count, group_size;
  // CollectivePermute: pair_count (source, target) pairs, flattened.
  const int32_t* pairs;
  int32_t pair_count;
  // AllToAll.
  int64_t split_axis, concat_axis;
} cml_ir_collective_attrs_t;

// Attributes of a node (only the fields its op uses are meaningful; the rest are zero).
typedef struct cml_ir_attrs_t {
  // Concatenate, Iota, ArgMinMax, Sort: the axis. BatchNorm*: the feature axis.
  // Gather/Scatter use their dims structs.
  int64_t axis;
  // ConvertDType, Bitcast: target dtype. ArgMinMax: output dtype.
  cml_dtype_t dtype;
  // ArgMinMax: is_min. Sort: is_stable. Identity: a gradient stop (cml_op_stop_gradient;
  // the identity at run time).
  bool flag;
  // BatchNorm*: epsilon.
  float epsilon;
  // Reduce*: reduced axes (sorted ascending). Reverse: axes (sorted). Transpose: permutation.
  // BroadcastInDim: broadcast axes. FFT: fft lengths. DynamicSlice: slice sizes.
  // Reshape: the new dims (also in the output shape).
  int32_t axis_count;
  int64_t axes[CML_MAX_RANK];
  // Slice: starts, limits (exclusive), strides (filled with 1 when not given).
  int64_t starts[CML_MAX_RANK];
  int64_t limits[CML_MAX_RANK];
  int64_t strides[CML_MAX_RANK];
  // Pad: one entry per axis of the operand (missing axes filled with zeros).
  cml_pad_axis_t pads[CML_MAX_RANK];
  // ReduceWindow, AllReduce, ReduceScatter.
  cml_reduce_type_t reduce_type;
  // FFT.
  cml_fft_type_t fft_type;
  // Call: functions[0] = callee. While: [0] = cond, [1] = body. If: [0] = true branch,
  // [1] = false branch. Sort: [0] = comparator. Indices into cml_module_t.functions.
  uint32_t functions[2];
  union {
    cml_gather_dims_t gather;    // Gather
    cml_scatter_dims_t scatter;  // Scatter*
    cml_conv_config_t conv;      // ConvGeneral: every default filled in
    cml_window_config_t window;  // ReduceWindow, SelectAndScatter*: every default filled in
    cml_dot_config_t dot;        // DotGeneral and Dot (Dot is recorded as DotGeneral's config)
  } u;
  // Fused ops (CML_OPK_FUSED).
  cml_ir_fused_attrs_t fused;
  // Collective ops (CML_OPK_COLLECTIVE).
  cml_ir_collective_attrs_t collective;
} cml_ir_attrs_t;

typedef struct cml_ir_node_t {
  cml_op_t op;
  uint32_t function;  // index of the owning function
  uint32_t input_count;
  const uint32_t* inputs;       // value indices
  uint32_t output_count;        // >= 1
  uint32_t first_output;        // value index of output 0
  const cml_ir_attrs_t* attrs;  // never NULL (zeroed for ops without attributes)
  // Constant: the data, cml_shape_byte_size(output shape) bytes, 64-byte aligned.
  const void* data;
  size_t data_size;
  // Parameter: its name and position. CapturedValue: the capture index.
  const char* name;
  uint32_t index;
} cml_ir_node_t;

typedef struct cml_ir_value_t {
  uint32_t node;    // producing node
  uint32_t output;  // which output of that node
  cml_shape_t shape;
} cml_ir_value_t;

typedef struct cml_ir_function_t {
  const char* name;  // "main", a named function, or "" for closures
  int32_t parent;    // parent function index for closures, -1 otherwise
  uint32_t node_count;
  const uint32_t* nodes;  // node indices in creation (topological) order
  uint32_t param_count;
  const uint32_t* params;  // value indices of the parameters, in order
  uint32_t capture_count;
  const uint32_t* captures_outer;  // values of the parent function
  const uint32_t* captures_inner;  // the CapturedValue values inside this function
  uint32_t output_count;
  const uint32_t* outputs;  // returned value indices
} cml_ir_function_t;

typedef struct cml_module_t {
  const char* name;
  uint32_t node_count;
  const cml_ir_node_t* nodes;
  uint32_t value_count;  // values[0] is unused
  const cml_ir_value_t* values;
  uint32_t function_count;  // functions[0] is main
  const cml_ir_function_t* functions;
  // Distribution: devices the computation runs on (1 unless SPMD or AutoSharding).
  int32_t num_devices;
  cml_distribution_t distribution;
  // The backend device of each of the num_devices slots (never NULL; 0..N-1 by default).
  const int32_t* device_assignment;
  // AutoSharding: the meshes (copies owned by the module).
  uint32_t mesh_count;
  const cml_mesh_t* const* meshes;
  // AutoSharding: one sharding per parameter / output of main (mesh pointing into |meshes|),
  // always filled under AutoSharding: what was not given is replicated over the first mesh with
  // the most devices (closed, never "open"). NULL otherwise. A zeroed entry, should a backend
  // build one itself, means replicated. Value shapes in the functions are logical (global)
  // shapes; per-device shapes follow from these specs (cml_sharding_shard_shape).
  const cml_sharding_t* param_shardings;
  const cml_sharding_t* output_shardings;
} cml_module_t;

// Writes a readable listing of |module| (one line per node) to |out| (a FILE*).
CML_API void cml_module_dump(const cml_module_t* module, void* out);

// For a Sort comparator (function |fi| of |module|) that is a single compare of its parameters 0
// and 1 (operand 0's lhs and rhs) and nothing else: the compare op written as op(lhs, rhs), so
// a comparator written GreaterThan(rhs, lhs) gives CML_OP_LESS_THAN, and the total-order forms
// keep their names. CML_OP_INVALID for any other comparator (captures, more nodes, other
// operands' parameters, another op). Backends use it to pick a direct comparison.
CML_API cml_op_t cml_ir_plain_comparator(const cml_module_t* module, uint32_t fi);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_IR_H_
