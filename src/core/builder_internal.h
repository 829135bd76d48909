// SPDX-License-Identifier: Apache-2.0
// src/core/builder_internal.h: the builder's and the module's private structures, shared by
// src/core/builder*.c, shape_infer*.c, ops*.c and module*.c. Symbol prefix: cml__.
//
// Storage: everything a builder records (nodes, values, functions, attributes, constants)
// lives in one refcounted module object, `cml__module_impl_t`, created with the builder. The
// builder holds one reference; `cml_builder_compile` fills the public `cml_module_t` view and
// hands it to the backend, which retains it when it keeps it. So the module outlives the
// builder without any copying.
//
// Value ids: a public `cml_value_t` is (tag << 24) | index, where |tag| (1..255) identifies
// the builder and |index| is the position in the module's value array (the IR stores plain
// indices). A value from another builder is detected by its tag. Tags are allocated so that no
// two live builders share one while fewer than 256 builders are alive (builder.c,
// cml_builder_tag_acquire); beyond that, tags are shared and detection is best-effort.
#ifndef CML_CORE_BUILDER_INTERNAL_H_
#define CML_CORE_BUILDER_INTERNAL_H_

#include <stdatomic.h>

#include "cml/backend_impl.h"
#include "cml/graph.h"
#include "cml/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

//===--- op output rules (from ops.def) ---===//

typedef enum cml__out_rule_t {
  CML__OUT_SAME,
  CML__OUT_BOOL,
  CML__OUT_REAL,
  CML__OUT_COMPLEX,
  CML__OUT_SPECIAL,
} cml__out_rule_t;

cml__out_rule_t cml__op_out_rule(cml_op_t op);
// The output dtype of |rule| for operand |dtype| (CML_DTYPE_INVALID when impossible).
cml_dtype_t cml__apply_out_rule(cml__out_rule_t rule, cml_dtype_t dtype);

//===--- arena and growable arrays ---===//

typedef struct cml__arena_chunk_t cml__arena_chunk_t;
typedef struct cml__arena_t {
  cml_allocator_t allocator;
  cml__arena_chunk_t* head;
} cml__arena_t;

void cml__arena_init(cml__arena_t* arena, cml_allocator_t allocator);
void cml__arena_deinit(cml__arena_t* arena);
// Zeroed memory aligned to |alignment| (a power of two <= 64); NULL on failure. A zero
// |size| still returns a valid pointer.
void* cml__arena_alloc(cml__arena_t* arena, size_t size, size_t alignment);
char* cml__arena_strdup(cml__arena_t* arena, const char* text);

typedef struct cml__u32_vec_t {
  uint32_t* data;
  uint32_t count;
  uint32_t capacity;
} cml__u32_vec_t;

bool cml__u32_vec_push(cml__u32_vec_t* vec, cml_allocator_t allocator, uint32_t value);
void cml__u32_vec_free(cml__u32_vec_t* vec, cml_allocator_t allocator);
// Grows |*data| (elements of |elem_size|) to hold at least |need| elements.
bool cml__grow(cml_allocator_t allocator, void** data, uint32_t* capacity, uint32_t need,
               size_t elem_size);

//===--- module, functions, builder ---===//

typedef struct cml__module_impl_t {
  cml_module_t module;  // the public view, at offset 0; filled by compile
  atomic_int refcount;
  cml_allocator_t allocator;
  cml__arena_t arena;
  cml_ir_node_t* nodes;
  uint32_t node_count, node_capacity;
  cml_ir_value_t* values;  // values[0] is unused
  uint32_t value_count, value_capacity;
  cml_function_t** functions;  // functions[0] is main
  uint32_t function_count, function_capacity;
  cml_ir_function_t* ir_functions;  // built by compile
  char* name;
  // Names in use, hashed: named functions (function == UINT32_MAX) and the parameters of each
  // function, so duplicate checks cost O(1) however many there are (open addressing).
  struct cml__name_slot_t* name_slots;
  uint32_t name_count, name_slot_count;  // name_slot_count: 0 or a power of two
  // Distribution (builder_distributed.c): the strategy, the device slots and their backend
  // devices (arena), the AutoSharding meshes (owned copies, destroyed with the module) and the
  // shardings given for main's parameters and outputs (heap, indexed by position; entries past
  // the count or with a NULL mesh are replicated).
  cml_distribution_t distribution;
  int32_t num_devices;
  int32_t* device_assignment;
  bool device_assignment_set;
  cml_mesh_t** meshes;
  uint32_t mesh_count;
  cml_sharding_t* param_shardings;
  uint32_t param_sharding_count, param_sharding_capacity;
  cml_sharding_t* output_shardings;
  uint32_t output_sharding_count;
  // Filled by finalize under AutoSharding: one entry per parameter / output of main.
  cml_sharding_t* final_param_shardings;
  uint32_t final_param_count;
  cml_sharding_t* final_output_shardings;
  uint32_t final_output_count;
  // A specialized module (core/dynamic.h) shares the functions and distribution of the module
  // it came from, and holds a reference to it here (released with this one).
  cml_module_t* base;
} cml__module_impl_t;

typedef struct cml__name_slot_t {
  const char* name;  // NULL: empty
  uint32_t function;
} cml__name_slot_t;

struct cml_function_t {
  cml_builder_t* builder;
  cml__module_impl_t* impl;
  uint32_t index;          // position in impl->functions
  const char* name;        // "main", a named function, or "" for closures
  cml_function_t* parent;  // closures only
  bool returned;
  // Nesting (see CML_MAX_NESTING_DEPTH): |depth| is 1 for main and named functions and
  // parent->depth + 1 for closures; |height| is the number of functions on the longest chain
  // from this one inward (1, plus the height of each returned closure and of each callee of
  // its ops). The builder keeps depth - 1 + height <= CML_MAX_NESTING_DEPTH for every function.
  uint32_t depth;
  uint32_t height;
  cml__u32_vec_t nodes;
  cml__u32_vec_t params;
  cml__u32_vec_t captures_outer;
  cml__u32_vec_t captures_inner;
  // captures_outer[i] -> i + 1, hashed (0: empty slot); capture_slot_count is 0 or a power of 2.
  uint32_t* capture_slots;
  uint32_t capture_slot_count;
  cml__u32_vec_t outputs;
};

struct cml_builder_t {
  cml_allocator_t allocator;
  cml_backend_t* backend;    // retained
  cml__module_impl_t* impl;  // one reference
  uint32_t tag;              // 1..255, released by cml_builder_destroy
  cml_status_t error;        // the first error (sticky)
  bool compiled;
  // An op the backend lacks, started by cml__op_begin: its UNIMPLEMENTED error is raised by
  // cml__op_add_node, where the operand shapes and dtypes are known and can be named.
  cml_op_t unsupported_op;
};

#define CML__VALUE_INDEX_BITS 24
#define CML__VALUE_INDEX_MASK ((1u << CML__VALUE_INDEX_BITS) - 1u)

static inline cml_value_t cml__value_id(const cml_builder_t* b, uint32_t index) {
  return (cml_value_t)((b->tag << CML__VALUE_INDEX_BITS) | index);
}

// Records |status| as the builder's error unless one is already recorded (then |status| is
// freed). Always returns CML_VALUE_INVALID, for `return cml__fail_status(...)`.
cml_value_t cml__fail_status(cml_builder_t* b, cml_status_t status);
cml_value_t cml__fail(cml_builder_t* b, cml_status_code_t code, const char* fmt, ...)
    CML_PRINTF(3, 4);

// Formats |shape| into |buffer| (at least CML__SHAPE_TEXT bytes) and returns it.
#define CML__SHAPE_TEXT 400
const char* cml__shape_text(const cml_shape_t* shape, char* buffer);

//===--- op construction (builder.c) ---===//

// Starts an op in |f|: fails silently (false) when the builder already has an error, and with
// FAILED_PRECONDITION after compile or once |f| has returned; checks that the backend supports
// |op| (UNIMPLEMENTED otherwise; control ops also need capabilities.functions).
bool cml__op_begin(cml_function_t* f, cml_op_t op);

// Resolves operand |v| (position |pos|, for messages) of |op| in |f|: checks that it is valid,
// of this builder, and produced in |f| or in an ancestor of |f| (values of ancestors become
// implicit captures of every closure in between). Writes the value index in |f| and its shape.
bool cml__op_input(cml_function_t* f, cml_op_t op, cml_value_t v, size_t pos, uint32_t* out_index,
                   cml_shape_t* out_shape);

// "function \"main\"", "function \"f\"" or "closure #3 (depth 1 under function \"main\")".
const char* cml__function_label(const cml_function_t* f, char* buffer, size_t size);

// Whether |v| can be an operand in |f|: a value of |f| or of one of its ancestors (closures
// capture those). False, with the label of the function that made it in |owner_label|, for a
// value of another function of the builder; true for ids that are not values of this builder
// at all (the op's own checks name those). No side effects.
bool cml__value_in_scope(const cml_function_t* f, cml_value_t v, char* owner_label, size_t size);

// Checks that |dtype| is supported by the backend (UNIMPLEMENTED naming |op| otherwise).
bool cml__check_backend_dtype(cml_function_t* f, cml_op_t op, cml_dtype_t dtype);

// Appends a node of |op| with the resolved |inputs| (copied), |output_count| outputs of
// |out_shapes|, attributes |attrs| (copied; NULL for none). Checks every input and output dtype
// against the backend's capabilities. Returns the first output's value id.
cml_value_t cml__op_add_node(cml_function_t* f, cml_op_t op, const uint32_t* inputs,
                             uint32_t input_count, const cml_shape_t* out_shapes,
                             uint32_t output_count, const cml_ir_attrs_t* attrs);

// The node of value |index| and its function.
static inline const cml_ir_node_t* cml__value_node(const cml__module_impl_t* impl, uint32_t index) {
  return &impl->nodes[impl->values[index].node];
}

// Temporary memory for ops with many operands (NULL and a sticky RESOURCE_EXHAUSTED on
// failure; a zero |size| gives a valid pointer). Free with cml__temp_free.
void* cml__temp_alloc(cml_builder_t* b, size_t size);
void cml__temp_free(cml_builder_t* b, void* ptr, size_t size);

// A closure |c| usable by |op| in |f|: of the same builder, a direct closure of |f| (or, when
// |allow_named|, a named function), and returned. |what| names it in messages.
bool cml__check_callee(cml_function_t* f, cml_op_t op, const cml_function_t* c, const char* what,
                       bool allow_named);

//===--- module (module.c) ---===//

cml__module_impl_t* cml__module_impl_create(cml_allocator_t allocator, const char* name);
// Frees what the distribution fields own (module.c calls it when the module goes).
void cml__module_impl_free_distribution(cml__module_impl_t* impl);
// Fills the distribution fields of the public view (builder_distributed.c).
cml_status_t cml__module_impl_finalize_distribution(cml__module_impl_t* impl);
// Fills the public view (module->...) from the recorded functions.
cml_status_t cml__module_impl_finalize(cml__module_impl_t* impl);

//===--- shape inference (shape_infer*.c) ---===//
// Each returns CML_OK and fills the output shape (and normalized attributes), or a status
// whose message starts with the op name and names the shapes and dtypes involved.
//
// Attribute bound (one rule for every backend): every size-like integer attribute (padding,
// interior padding, stride, dilation, window size, group count) and every intermediate size
// computed from it (dilated input, padded input, dilated window) lies in
// [-CML__ATTR_MAX, CML__ATTR_MAX], the largest dimension a shape may have. Then sums of a few
// such values, and the positions kernels compute from them, cannot overflow int64 (XLA's own
// shape inference adds these in int64 without checks, and aborts on some).
#define CML__ATTR_MAX CML_MAX_ELEMENTS

// Checks a user-given shape for |op| (dtype valid and an array dtype, packed ones only when
// |allow_packed|; rank; dims; size) and copies it (unused dims zeroed) to |out|.
cml_status_t cml__infer_user_shape(cml_op_t op, const cml_shape_t* shape, bool allow_packed,
                                   cml_shape_t* out);
// Checks |dtype| against the op's dtype set (ops.def); |what| names the operand.
cml_status_t cml__infer_check_dtype(cml_op_t op, const cml_shape_t* shape, const char* what,
                                    bool allow_packed);
cml_status_t cml__infer_unary(cml_op_t op, const cml_shape_t* x, cml_shape_t* out);
cml_status_t cml__infer_binary(cml_op_t op, const cml_shape_t* lhs, const cml_shape_t* rhs,
                               cml_shape_t* out);
cml_status_t cml__infer_reduce(cml_op_t op, const cml_shape_t* x, const int64_t* axes,
                               size_t axis_count, cml_ir_attrs_t* attrs, cml_shape_t* out);
cml_status_t cml__infer_convert(const cml_shape_t* x, cml_dtype_t dtype, cml_shape_t* out);
cml_status_t cml__infer_bitcast(const cml_shape_t* x, cml_dtype_t dtype, cml_shape_t* out);
cml_status_t cml__infer_clamp(const cml_shape_t* min, const cml_shape_t* x, const cml_shape_t* max,
                              cml_shape_t* out);
cml_status_t cml__infer_where(const cml_shape_t* cond, const cml_shape_t* on_true,
                              const cml_shape_t* on_false, cml_shape_t* out);
cml_status_t cml__infer_reshape(const cml_shape_t* x, const int64_t* dims, int32_t rank,
                                cml_ir_attrs_t* attrs, cml_shape_t* out);
cml_status_t cml__infer_transpose(const cml_shape_t* x, const int64_t* permutation, int32_t rank,
                                  cml_ir_attrs_t* attrs, cml_shape_t* out);
cml_status_t cml__infer_broadcast_in_dim(const cml_shape_t* x, const int64_t* out_dims,
                                         int32_t out_rank, const int64_t* axes, int32_t axis_count,
                                         cml_ir_attrs_t* attrs, cml_shape_t* out);
cml_status_t cml__infer_concatenate(int64_t axis, const cml_shape_t* shapes, size_t count,
                                    cml_ir_attrs_t* attrs, cml_shape_t* out);
cml_status_t cml__infer_slice(const cml_shape_t* x, const int64_t* starts, const int64_t* limits,
                              const int64_t* strides, int32_t rank, cml_ir_attrs_t* attrs,
                              cml_shape_t* out);
cml_status_t cml__infer_reverse(const cml_shape_t* x, const int64_t* axes, size_t axis_count,
                                cml_ir_attrs_t* attrs, cml_shape_t* out);
cml_status_t cml__infer_iota(const cml_shape_t* shape, int64_t axis, cml_ir_attrs_t* attrs,
                             cml_shape_t* out);
cml_status_t cml__infer_pad(const cml_shape_t* x, const cml_shape_t* fill,
                            const cml_pad_axis_t* axes, size_t axis_count, cml_ir_attrs_t* attrs,
                            cml_shape_t* out);
cml_status_t cml__infer_dynamic_slice(const cml_shape_t* x, const cml_shape_t* starts,
                                      size_t start_count, const int64_t* sizes, int32_t rank,
                                      cml_ir_attrs_t* attrs, cml_shape_t* out);
cml_status_t cml__infer_dynamic_update_slice(const cml_shape_t* x, const cml_shape_t* update,
                                             const cml_shape_t* starts, size_t start_count,
                                             int32_t rank, cml_shape_t* out);
cml_status_t cml__infer_gather(const cml_shape_t* operand, const cml_shape_t* indices,
                               const cml_gather_dims_t* dims, cml_ir_attrs_t* attrs,
                               cml_shape_t* out);
cml_status_t cml__infer_scatter(cml_op_t op, const cml_shape_t* operand, const cml_shape_t* indices,
                                const cml_shape_t* updates, const cml_scatter_dims_t* dims,
                                cml_ir_attrs_t* attrs, cml_shape_t* out);
cml_status_t cml__infer_conv(const cml_shape_t* input, const cml_shape_t* kernel,
                             const cml_conv_config_t* config, cml_ir_attrs_t* attrs,
                             cml_shape_t* out);
cml_status_t cml__infer_reduce_window(const cml_shape_t* x, cml_reduce_type_t type,
                                      const cml_window_config_t* config, cml_ir_attrs_t* attrs,
                                      cml_shape_t* out);
cml_status_t cml__infer_select_and_scatter(cml_op_t op, const cml_shape_t* operand,
                                           const cml_shape_t* source,
                                           const cml_window_config_t* config, cml_ir_attrs_t* attrs,
                                           cml_shape_t* out);
cml_status_t cml__infer_dot_general(cml_op_t op, const cml_shape_t* lhs, const cml_shape_t* rhs,
                                    const cml_dot_config_t* config, cml_ir_attrs_t* attrs,
                                    cml_shape_t* out);
cml_status_t cml__infer_dot(const cml_shape_t* lhs, const cml_shape_t* rhs, cml_ir_attrs_t* attrs,
                            cml_shape_t* out);
cml_status_t cml__infer_arg_min_max(const cml_shape_t* x, int64_t axis, cml_dtype_t out_dtype,
                                    bool is_min, cml_ir_attrs_t* attrs, cml_shape_t* out);
cml_status_t cml__infer_rng(const cml_shape_t* state, const cml_shape_t* shape, cml_shape_t out[2]);
cml_status_t cml__infer_fft(const cml_shape_t* x, cml_fft_type_t type, const int64_t* lengths,
                            size_t length_count, cml_ir_attrs_t* attrs, cml_shape_t* out);
// |params|: scale, offset, mean, variance for inference (4); scale, offset for training (2);
// scale, mean, variance, grad_output for gradient (4, the last one of x's shape).
// Dynamic-shape ops (shape_infer_dynamic.c). DynamicReshape: |names|[i] non-NULL makes axis i
// dynamic (dims[i] = CML_DYNAMIC_DIM); attrs->axes gets the output dims and attrs->axis the
// inferred axis (-1: none); |out_static| says the result is static (a plain Reshape).
// |valued| (NULL: none) marks the named axes sized by a runtime value (neither kept nor
// inferred).
cml_status_t cml__infer_dynamic_dimension_size(const cml_shape_t* x, int64_t axis,
                                               cml_ir_attrs_t* attrs, cml_shape_t* out);
cml_status_t cml__infer_dynamic_shape(const cml_shape_t* x, cml_shape_t* out);
cml_status_t cml__infer_dynamic_reshape(const cml_shape_t* x, const int64_t* dims,
                                        const char* const* names, const bool* valued, int32_t rank,
                                        cml_ir_attrs_t* attrs, cml_shape_t* out, bool* out_static);
cml_status_t cml__infer_batch_norm(cml_op_t op, const cml_shape_t* x, const cml_shape_t* params,
                                   size_t param_count, float epsilon, int64_t feature_axis,
                                   cml_ir_attrs_t* attrs, cml_shape_t* outs);

// Collectives (shape_infer_collective.c). |groups| NULL means one group of every slot; the
// normalized groups (num_devices ids) go to |out_ids| with their count and size.
cml_status_t cml__infer_replica_groups(cml_op_t op, const cml_replica_groups_t* groups,
                                       int32_t num_devices, int32_t* out_ids,
                                       int32_t* out_group_count, int32_t* out_group_size);
cml_status_t cml__infer_all_reduce(const cml_shape_t* operands, size_t count,
                                   cml_reduce_type_t type, cml_shape_t* outs);
cml_status_t cml__infer_all_gather(const cml_shape_t* x, int64_t axis, int32_t group_size,
                                   cml_ir_attrs_t* attrs, cml_shape_t* out);
cml_status_t cml__infer_reduce_scatter(const cml_shape_t* x, cml_reduce_type_t type, int64_t axis,
                                       int32_t group_size, cml_ir_attrs_t* attrs, cml_shape_t* out);
cml_status_t cml__infer_all_to_all(const cml_shape_t* x, int64_t split_axis, int64_t concat_axis,
                                   int32_t group_size, cml_ir_attrs_t* attrs, cml_shape_t* out);
cml_status_t cml__infer_collective_permute(const cml_shape_t* x, const int32_t* pairs,
                                           size_t pair_count, int32_t num_devices,
                                           cml_shape_t* out);
cml_status_t cml__infer_collective_broadcast(const cml_shape_t* x, cml_shape_t* out);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_CORE_BUILDER_INTERNAL_H_
