// SPDX-License-Identifier: Apache-2.0
// examples/plugin_backend/ref_backend.c: "ref", a small interpreter backend loaded as a plug-in.
//
// This file shows what a third party writes to add a backend to cml without touching cml: it
// includes only the public headers (cml/backend_impl.h pulls in the rest), fills the vtable,
// advertises exactly the ops and dtypes it runs, and exports `cml_plugin_query` so that a host
// program can load it with `cml_plugin_load("libcml_ref_backend.so")` and then create it with
// `cml_backend_new_with_config("ref")` like any built-in backend.
//
// The interpreter favours being easy to read over being fast: every buffer is plain host
// memory, and `execute` walks main's nodes in order, giving each value its own array.
//
// What it runs (the capability set says exactly this):
//   - dtypes Bool, Int32, Float32, Float64;
//   - Parameter, Constant, Identity, Reshape, Transpose, BroadcastInDim, Where (any of those);
//   - Add, Sub, Mul, Div, Max, Min, Neg, Abs (Int32, Float32, Float64), Exp (floats);
//   - Equal, NotEqual, LessThan, LessOrEqual, GreaterThan, GreaterOrEqual (all four dtypes) and
//     their TotalOrder variants (floats);
//   - ReduceSum, ReduceProduct, ReduceMax, ReduceMin (Int32, Float32, Float64);
//   - DotGeneral on Float32 only.
// The capabilities cannot say "DotGeneral, but only Float32", so `compile` refuses other
// dtypes with UNIMPLEMENTED; everything else the backend lacks is refused by the core when the
// op is added to the graph. No closures (While, If, Sort, Call), one device unless the config
// says `devices=N`, shared buffers supported.
//
// Semantics follow StableHLO as cml documents them: Max/Min propagate NaN and order -0 < +0;
// integer arithmetic wraps; Int32 x / 0 = -1 and INT_MIN / -1 = INT_MIN; Float32 arithmetic
// is computed in double and rounded once, which gives the correctly rounded Float32 result
// for + - * / (double has more than 2 * 24 + 2 bits of precision).
//
// Thread-safety: the backend holds no mutable state; `execute` keeps everything on its own
// stack and heap allocations, so one executable may run on many threads at once.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cml/backend_impl.h"

#define REF_NAME "ref"
#define REF_MAX_DEVICES 16
#define REF_MAX_OPERANDS 4

#define REF_DSET_FLOATS (CML_DTYPE_BIT(CML_DTYPE_F32) | CML_DTYPE_BIT(CML_DTYPE_F64))
#define REF_DSET_NUMBERS (REF_DSET_FLOATS | CML_DTYPE_BIT(CML_DTYPE_I32))
#define REF_DSET_ALL (REF_DSET_NUMBERS | CML_DTYPE_BIT(CML_DTYPE_BOOL))

// The one exported symbol (declared here: cml/backend_impl.h only gives its type).
CML_API const cml_backend_factory_t* cml_plugin_query(uint32_t host_api_major);

//===--- objects ---===//

// The backend has no state of its own: the base (at offset 0) says everything.
typedef struct ref_backend_t {
  cml_backend_t base;
} ref_backend_t;

typedef struct ref_buffer_t {
  cml_buffer_t base;
  void* data;   // host memory, `size` bytes (allocated with at least one byte)
  size_t size;  // cml_shape_byte_size(&base.shape)
} ref_buffer_t;

// The program is the module itself (retained by the executable's base).
typedef struct ref_executable_t {
  cml_executable_t base;
} ref_executable_t;

//===--- memory ---===//

// Allocations of zero bytes (empty arrays) still get one byte, so that NULL always means "out
// of memory".
static void* ref_alloc(cml_allocator_t allocator, size_t size) {
  return cml_allocator_malloc(allocator, size ? size : 1, 64);
}

static void ref_free(cml_allocator_t allocator, void* ptr, size_t size) {
  if (ptr) cml_allocator_free(allocator, ptr, size ? size : 1);
}

static cml_status_t ref_out_of_memory(const char* what, size_t size) {
  return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED,
                         "backend \"" REF_NAME "\": out of memory (%s, %zu bytes)", what, size);
}

//===--- buffers ---===//

static cml_status_t ref_buffer_new(cml_backend_t* backend, int device, const cml_shape_t* shape,
                                   bool shared, ref_buffer_t** out_buffer) {
  *out_buffer = NULL;
  size_t size = cml_shape_byte_size(shape);
  ref_buffer_t* buffer = ref_alloc(backend->allocator, sizeof *buffer);
  if (!buffer) return ref_out_of_memory("buffer", sizeof *buffer);
  memset(buffer, 0, sizeof *buffer);
  buffer->data = ref_alloc(backend->allocator, size);
  if (!buffer->data) {
    ref_free(backend->allocator, buffer, sizeof *buffer);
    return ref_out_of_memory("buffer data", size);
  }
  buffer->size = size;
  cml_buffer_init_base(&buffer->base, backend, shape, device, shared);
  *out_buffer = buffer;
  return CML_OK;
}

static cml_status_t ref_buffer_from_host(cml_backend_t* backend, int device,
                                         const cml_shape_t* shape, const void* data,
                                         cml_buffer_t** out_buffer) {
  ref_buffer_t* buffer = NULL;
  CML_RETURN_IF_ERROR(ref_buffer_new(backend, device, shape, false, &buffer));
  if (buffer->size > 0) memcpy(buffer->data, data, buffer->size);
  *out_buffer = &buffer->base;
  return CML_OK;
}

static cml_status_t ref_buffer_copy_to_host(cml_buffer_t* buffer, void* dst, size_t size) {
  const ref_buffer_t* b = (const ref_buffer_t*)buffer;
  if (size > 0) memcpy(dst, b->data, size);
  return CML_OK;
}

static cml_status_t ref_buffer_create_shared(cml_backend_t* backend, int device,
                                             const cml_shape_t* shape, cml_buffer_t** out_buffer,
                                             void** out_data) {
  ref_buffer_t* buffer = NULL;
  CML_RETURN_IF_ERROR(ref_buffer_new(backend, device, shape, true, &buffer));
  memset(buffer->data, 0, buffer->size);
  *out_buffer = &buffer->base;
  *out_data = buffer->data;
  return CML_OK;
}

static cml_status_t ref_buffer_data(cml_buffer_t* buffer, void** out_data) {
  *out_data = ((ref_buffer_t*)buffer)->data;
  return CML_OK;
}

static cml_status_t ref_buffer_copy_to_device(cml_buffer_t* buffer, int device,
                                              cml_buffer_t** out_buffer) {
  const ref_buffer_t* src = (const ref_buffer_t*)buffer;
  ref_buffer_t* copy = NULL;
  CML_RETURN_IF_ERROR(ref_buffer_new(buffer->backend, device, &buffer->shape, false, &copy));
  if (src->size > 0) memcpy(copy->data, src->data, src->size);
  *out_buffer = &copy->base;
  return CML_OK;
}

static void ref_buffer_destroy(cml_buffer_t* buffer) {
  ref_buffer_t* b = (ref_buffer_t*)buffer;
  // Copy the allocator first: releasing the buffer's backend reference may destroy it.
  cml_allocator_t allocator = buffer->backend->allocator;
  ref_free(allocator, b->data, b->size);
  cml_buffer_deinit_base(buffer);
  ref_free(allocator, b, sizeof *b);
}

//===--- compile: check that every node is one the interpreter runs ---===//

static bool ref_dtype_in(cml_dtype_t dtype, cml_dtype_set_t set) {
  return dtype > CML_DTYPE_INVALID && dtype < CML_DTYPE_COUNT && (CML_DTYPE_BIT(dtype) & set);
}

static bool ref_is_compare(cml_op_t op) {
  switch (op) {
    case CML_OP_EQUAL:
    case CML_OP_NOT_EQUAL:
    case CML_OP_LESS_THAN:
    case CML_OP_LESS_OR_EQUAL:
    case CML_OP_GREATER_THAN:
    case CML_OP_GREATER_OR_EQUAL:
      return true;
    default:
      return false;
  }
}

static bool ref_is_total_order_compare(cml_op_t op) {
  switch (op) {
    case CML_OP_EQUAL_TOTAL_ORDER:
    case CML_OP_NOT_EQUAL_TOTAL_ORDER:
    case CML_OP_LESS_THAN_TOTAL_ORDER:
    case CML_OP_LESS_OR_EQUAL_TOTAL_ORDER:
    case CML_OP_GREATER_THAN_TOTAL_ORDER:
    case CML_OP_GREATER_OR_EQUAL_TOTAL_ORDER:
      return true;
    default:
      return false;
  }
}

// The dtypes the interpreter runs |op| on (0: not at all). The dtype checked is the main
// operand's (the output's for Parameter and Constant, on_true's for Where).
static cml_dtype_set_t ref_op_dtypes(cml_op_t op) {
  switch (op) {
    case CML_OP_PARAMETER:
    case CML_OP_CONSTANT:
    case CML_OP_IDENTITY:
    case CML_OP_RESHAPE:
    case CML_OP_TRANSPOSE:
    case CML_OP_BROADCAST_IN_DIM:
    case CML_OP_WHERE:
      return REF_DSET_ALL;
    case CML_OP_ADD:
    case CML_OP_SUB:
    case CML_OP_MUL:
    case CML_OP_DIV:
    case CML_OP_MAX:
    case CML_OP_MIN:
    case CML_OP_NEG:
    case CML_OP_ABS:
    case CML_OP_REDUCE_SUM:
    case CML_OP_REDUCE_PRODUCT:
    case CML_OP_REDUCE_MAX:
    case CML_OP_REDUCE_MIN:
      return REF_DSET_NUMBERS;
    case CML_OP_EXP:
      return REF_DSET_FLOATS;
    case CML_OP_DOT_GENERAL:
      return CML_DTYPE_BIT(CML_DTYPE_F32);
    default:
      if (ref_is_compare(op)) return REF_DSET_ALL;
      if (ref_is_total_order_compare(op)) return REF_DSET_FLOATS;
      return 0;
  }
}

static cml_status_t ref_unimplemented(cml_op_t op, cml_dtype_t dtype) {
  return cml_status_make(CML_STATUS_UNIMPLEMENTED,
                         "%s: dtype %s not implemented by backend \"" REF_NAME "\"",
                         cml_op_name(op), cml_dtype_name(dtype));
}

static cml_status_t ref_check_node(const cml_module_t* module, const cml_ir_node_t* node) {
  cml_op_t op = node->op;
  cml_dtype_t dtype = module->values[node->first_output].shape.dtype;
  if (op == CML_OP_WHERE) {
    dtype = module->values[node->inputs[1]].shape.dtype;
  } else if (node->input_count > 0) {
    dtype = module->values[node->inputs[0]].shape.dtype;
  }
  cml_dtype_set_t allowed = ref_op_dtypes(op);
  if (allowed == 0) {
    return cml_status_make(CML_STATUS_UNIMPLEMENTED,
                           "%s: op not implemented by backend \"" REF_NAME "\" (dtype %s)",
                           cml_op_name(op), cml_dtype_name(dtype));
  }
  if (!ref_dtype_in(dtype, allowed)) return ref_unimplemented(op, dtype);
  if (op == CML_OP_DOT_GENERAL) {
    // Float32 operands, accumulator and output only: name the first dtype that is not.
    cml_dtype_t accumulator = node->attrs->u.dot.accumulator_dtype;
    const struct {
      const char* role;
      cml_dtype_t dtype;
    } parts[] = {{"rhs", module->values[node->inputs[1]].shape.dtype},
                 {"accumulator", accumulator == CML_DTYPE_INVALID ? CML_DTYPE_F32 : accumulator},
                 {"output", module->values[node->first_output].shape.dtype}};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; ++i) {
      if (parts[i].dtype == CML_DTYPE_F32) continue;
      return cml_status_make(CML_STATUS_UNIMPLEMENTED,
                             "%s: %s dtype %s not implemented by backend \"" REF_NAME
                             "\" (Float32 only)",
                             cml_op_name(op), parts[i].role, cml_dtype_name(parts[i].dtype));
    }
  }
  return CML_OK;
}

static cml_status_t ref_compile(cml_backend_t* backend, cml_module_t* module,
                                cml_executable_t** out_executable) {
  if (module->num_devices > 1) {
    return cml_status_make(CML_STATUS_UNIMPLEMENTED,
                           "backend \"" REF_NAME "\" does not run SPMD modules (%d devices)",
                           (int)module->num_devices);
  }
  const cml_ir_function_t* main_fn = &module->functions[0];
  for (uint32_t i = 0; i < main_fn->node_count; ++i) {
    CML_RETURN_IF_ERROR(ref_check_node(module, &module->nodes[main_fn->nodes[i]]));
  }
  ref_executable_t* exe = ref_alloc(backend->allocator, sizeof *exe);
  if (!exe) return ref_out_of_memory("executable", sizeof *exe);
  memset(exe, 0, sizeof *exe);
  cml_status_t st = cml_executable_init_base(&exe->base, backend, module);
  if (st != CML_OK) {
    ref_free(backend->allocator, exe, sizeof *exe);
    return st;
  }
  *out_executable = &exe->base;
  return CML_OK;
}

static void ref_executable_destroy(cml_executable_t* executable) {
  cml_allocator_t allocator = executable->backend->allocator;
  cml_executable_deinit_base(executable);
  ref_free(allocator, executable, sizeof(ref_executable_t));
}

//===--- walking arrays: an odometer over an output shape with per-operand strides ---===//

// Visits every index of |dims| in row-major order; offset[k] is the element offset of operand
// k at the current index (strides in elements; 0 broadcasts along that axis).
typedef struct ref_walk_t {
  int32_t rank;
  int operand_count;
  int64_t dims[CML_MAX_RANK];
  int64_t index[CML_MAX_RANK];
  int64_t strides[REF_MAX_OPERANDS][CML_MAX_RANK];
  int64_t offset[REF_MAX_OPERANDS];
} ref_walk_t;

static void ref_walk_init(ref_walk_t* walk, const cml_shape_t* shape, int operand_count) {
  memset(walk, 0, sizeof *walk);
  walk->rank = shape->rank;
  walk->operand_count = operand_count;
  for (int32_t a = 0; a < shape->rank; ++a) walk->dims[a] = shape->dims[a];
}

static void ref_walk_next(ref_walk_t* walk) {
  for (int32_t a = walk->rank - 1; a >= 0; --a) {
    if (++walk->index[a] < walk->dims[a]) {
      for (int k = 0; k < walk->operand_count; ++k) walk->offset[k] += walk->strides[k][a];
      return;
    }
    walk->index[a] = 0;
    for (int k = 0; k < walk->operand_count; ++k) {
      walk->offset[k] -= walk->strides[k][a] * (walk->dims[a] - 1);
    }
  }
}

// Row-major element strides of |shape|.
static void ref_row_major_strides(const cml_shape_t* shape, int64_t* strides) {
  int64_t stride = 1;
  for (int32_t a = shape->rank - 1; a >= 0; --a) {
    strides[a] = stride;
    stride *= shape->dims[a];
  }
}

// Strides of |operand| read at the indices of |out|: a scalar operand, or a size-1 axis,
// broadcasts (stride 0). The builder guaranteed equal ranks otherwise.
static void ref_broadcast_strides(const cml_shape_t* operand, const cml_shape_t* out,
                                  int64_t* strides) {
  for (int32_t a = 0; a < out->rank; ++a) strides[a] = 0;
  if (operand->rank == 0) return;
  ref_row_major_strides(operand, strides);
  for (int32_t a = 0; a < operand->rank; ++a) {
    if (operand->dims[a] == 1) strides[a] = 0;
  }
}

//===--- scalar semantics ---===//

static double ref_float_max(double a, double b) {
  if (isnan(a) || isnan(b)) return NAN;
  if (a == b) return signbit(a) ? b : a;  // max(-0, +0) = +0
  return a > b ? a : b;
}

static double ref_float_min(double a, double b) {
  if (isnan(a) || isnan(b)) return NAN;
  if (a == b) return signbit(a) ? a : b;  // min(-0, +0) = -0
  return a < b ? a : b;
}

static double ref_float_binary(cml_op_t op, double a, double b) {
  switch (op) {
    case CML_OP_ADD:
      return a + b;
    case CML_OP_SUB:
      return a - b;
    case CML_OP_MUL:
      return a * b;
    case CML_OP_DIV:
      return a / b;
    case CML_OP_MAX:
      return ref_float_max(a, b);
    default:
      return ref_float_min(a, b);  // CML_OP_MIN
  }
}

// Int32 arithmetic wraps (computed in uint32_t, where overflow is defined).
static int32_t ref_i32_binary(cml_op_t op, int32_t a, int32_t b) {
  uint32_t ua = (uint32_t)a, ub = (uint32_t)b;
  switch (op) {
    case CML_OP_ADD:
      return (int32_t)(ua + ub);
    case CML_OP_SUB:
      return (int32_t)(ua - ub);
    case CML_OP_MUL:
      return (int32_t)(ua * ub);
    case CML_OP_DIV:
      if (b == 0) return -1;
      if (a == INT32_MIN && b == -1) return INT32_MIN;
      return a / b;
    case CML_OP_MAX:
      return a > b ? a : b;
    default:
      return a < b ? a : b;  // CML_OP_MIN
  }
}

static double ref_float_unary(cml_op_t op, double x) {
  switch (op) {
    case CML_OP_NEG:
      return -x;
    case CML_OP_ABS:
      return fabs(x);
    default:
      return exp(x);  // CML_OP_EXP
  }
}

static int32_t ref_i32_unary(cml_op_t op, int32_t x) {
  uint32_t ux = (uint32_t)x;
  if (op == CML_OP_NEG || (op == CML_OP_ABS && x < 0)) return (int32_t)(0u - ux);
  return x;
}

// Maps a comparison's result (-1, 0, 1 for less, equal, greater) to the op's answer.
static bool ref_compare_result(cml_op_t op, int order) {
  switch (op) {
    case CML_OP_EQUAL:
    case CML_OP_EQUAL_TOTAL_ORDER:
      return order == 0;
    case CML_OP_NOT_EQUAL:
    case CML_OP_NOT_EQUAL_TOTAL_ORDER:
      return order != 0;
    case CML_OP_LESS_THAN:
    case CML_OP_LESS_THAN_TOTAL_ORDER:
      return order < 0;
    case CML_OP_LESS_OR_EQUAL:
    case CML_OP_LESS_OR_EQUAL_TOTAL_ORDER:
      return order <= 0;
    case CML_OP_GREATER_THAN:
    case CML_OP_GREATER_THAN_TOTAL_ORDER:
      return order > 0;
    default:
      return order >= 0;  // GreaterOrEqual (and its TotalOrder variant)
  }
}

// IEEE comparison: any comparison with NaN is false except NotEqual, which is true.
static bool ref_float_compare(cml_op_t op, double a, double b) {
  if (isnan(a) || isnan(b)) return op == CML_OP_NOT_EQUAL;
  return ref_compare_result(op, a < b ? -1 : (a > b ? 1 : 0));
}

// Total order: -NaN < -Inf < ... < -0 < +0 < ... < +Inf < +NaN. Flipping the bits of negative
// values (and the sign bit of positive ones) makes the unsigned bit patterns sort that way.
static uint64_t ref_total_order_key(uint64_t bits, uint64_t sign_bit) {
  return (bits & sign_bit) ? ~bits : (bits | sign_bit);
}

static int ref_order_u64(uint64_t a, uint64_t b) { return a < b ? -1 : (a > b ? 1 : 0); }

//===--- kernels: one per op family, over an output array already allocated ---===//

// Reads element |i| of a Float32 or Float64 array as a double.
static double ref_load_float(cml_dtype_t dtype, const void* data, int64_t i) {
  return dtype == CML_DTYPE_F32 ? (double)((const float*)data)[i] : ((const double*)data)[i];
}

static void ref_store_float(cml_dtype_t dtype, void* data, int64_t i, double value) {
  if (dtype == CML_DTYPE_F32) {
    ((float*)data)[i] = (float)value;
  } else {
    ((double*)data)[i] = value;
  }
}

static void ref_run_binary(cml_op_t op, const cml_shape_t* out_shape, void* out,
                           const cml_shape_t* lhs_shape, const void* lhs,
                           const cml_shape_t* rhs_shape, const void* rhs) {
  ref_walk_t w;
  ref_walk_init(&w, out_shape, 3);
  ref_row_major_strides(out_shape, w.strides[0]);
  ref_broadcast_strides(lhs_shape, out_shape, w.strides[1]);
  ref_broadcast_strides(rhs_shape, out_shape, w.strides[2]);
  cml_dtype_t dtype = lhs_shape->dtype;
  int64_t count = cml_shape_element_count(out_shape);
  for (int64_t i = 0; i < count; ++i, ref_walk_next(&w)) {
    if (dtype == CML_DTYPE_I32) {
      ((int32_t*)out)[w.offset[0]] = ref_i32_binary(op, ((const int32_t*)lhs)[w.offset[1]],
                                                    ((const int32_t*)rhs)[w.offset[2]]);
    } else {
      double a = ref_load_float(dtype, lhs, w.offset[1]);
      double b = ref_load_float(dtype, rhs, w.offset[2]);
      ref_store_float(dtype, out, w.offset[0], ref_float_binary(op, a, b));
    }
  }
}

// Compares element |li| of |lhs| with element |ri| of |rhs| (both of |dtype|).
static bool ref_compare_elements(cml_op_t op, cml_dtype_t dtype, const void* lhs, int64_t li,
                                 const void* rhs, int64_t ri) {
  if (ref_is_total_order_compare(op)) {
    if (dtype == CML_DTYPE_F32) {
      uint32_t a, b;
      memcpy(&a, (const float*)lhs + li, sizeof a);
      memcpy(&b, (const float*)rhs + ri, sizeof b);
      uint64_t ka = ref_total_order_key(a, 0x80000000u) & 0xffffffffu;
      uint64_t kb = ref_total_order_key(b, 0x80000000u) & 0xffffffffu;
      return ref_compare_result(op, ref_order_u64(ka, kb));
    }
    uint64_t a, b;
    memcpy(&a, (const double*)lhs + li, sizeof a);
    memcpy(&b, (const double*)rhs + ri, sizeof b);
    const uint64_t sign = (uint64_t)1 << 63;
    return ref_compare_result(
        op, ref_order_u64(ref_total_order_key(a, sign), ref_total_order_key(b, sign)));
  }
  switch (dtype) {
    case CML_DTYPE_BOOL: {
      int a = ((const uint8_t*)lhs)[li] != 0, b = ((const uint8_t*)rhs)[ri] != 0;
      return ref_compare_result(op, a - b);
    }
    case CML_DTYPE_I32: {
      int32_t a = ((const int32_t*)lhs)[li], b = ((const int32_t*)rhs)[ri];
      return ref_compare_result(op, a < b ? -1 : (a > b ? 1 : 0));
    }
    default:
      return ref_float_compare(op, ref_load_float(dtype, lhs, li), ref_load_float(dtype, rhs, ri));
  }
}

static void ref_run_compare(cml_op_t op, const cml_shape_t* out_shape, void* out,
                            const cml_shape_t* lhs_shape, const void* lhs,
                            const cml_shape_t* rhs_shape, const void* rhs) {
  ref_walk_t w;
  ref_walk_init(&w, out_shape, 3);
  ref_row_major_strides(out_shape, w.strides[0]);
  ref_broadcast_strides(lhs_shape, out_shape, w.strides[1]);
  ref_broadcast_strides(rhs_shape, out_shape, w.strides[2]);
  int64_t count = cml_shape_element_count(out_shape);
  for (int64_t i = 0; i < count; ++i, ref_walk_next(&w)) {
    ((uint8_t*)out)[w.offset[0]] =
        ref_compare_elements(op, lhs_shape->dtype, lhs, w.offset[1], rhs, w.offset[2]) ? 1 : 0;
  }
}

static void ref_run_unary(cml_op_t op, const cml_shape_t* shape, void* out, const void* in) {
  int64_t count = cml_shape_element_count(shape);
  for (int64_t i = 0; i < count; ++i) {
    if (shape->dtype == CML_DTYPE_I32) {
      ((int32_t*)out)[i] = ref_i32_unary(op, ((const int32_t*)in)[i]);
    } else {
      ref_store_float(shape->dtype, out, i,
                      ref_float_unary(op, ref_load_float(shape->dtype, in, i)));
    }
  }
}

// Copies elements of |element_size| bytes: out[offset 0] = operand 1 at offset 1 (a walk with
// two operands, set up by the caller for Transpose and BroadcastInDim).
static void ref_run_gather_walk(ref_walk_t* w, int64_t count, size_t element_size, void* out,
                                const void* in) {
  for (int64_t i = 0; i < count; ++i, ref_walk_next(w)) {
    memcpy((char*)out + (size_t)w->offset[0] * element_size,
           (const char*)in + (size_t)w->offset[1] * element_size, element_size);
  }
}

static void ref_run_transpose(const cml_ir_attrs_t* attrs, const cml_shape_t* out_shape, void* out,
                              const cml_shape_t* in_shape, const void* in) {
  int64_t in_strides[CML_MAX_RANK];
  ref_row_major_strides(in_shape, in_strides);
  ref_walk_t w;
  ref_walk_init(&w, out_shape, 2);
  ref_row_major_strides(out_shape, w.strides[0]);
  // out.dims[i] = in.dims[permutation[i]]: moving along output axis i moves along that input axis.
  for (int32_t i = 0; i < out_shape->rank; ++i) w.strides[1][i] = in_strides[attrs->axes[i]];
  ref_run_gather_walk(&w, cml_shape_element_count(out_shape),
                      (size_t)cml_dtype_bits(out_shape->dtype) / 8, out, in);
}

static void ref_run_broadcast_in_dim(const cml_ir_attrs_t* attrs, const cml_shape_t* out_shape,
                                     void* out, const cml_shape_t* in_shape, const void* in) {
  int64_t in_strides[CML_MAX_RANK];
  ref_row_major_strides(in_shape, in_strides);
  ref_walk_t w;
  ref_walk_init(&w, out_shape, 2);
  ref_row_major_strides(out_shape, w.strides[0]);
  // Input axis i sits at output axis axes[i]; size-1 input axes (and new axes) broadcast.
  for (int32_t i = 0; i < in_shape->rank; ++i) {
    w.strides[1][attrs->axes[i]] = in_shape->dims[i] == 1 ? 0 : in_strides[i];
  }
  ref_run_gather_walk(&w, cml_shape_element_count(out_shape),
                      (size_t)cml_dtype_bits(out_shape->dtype) / 8, out, in);
}

static void ref_run_where(const cml_shape_t* out_shape, void* out, const cml_shape_t* cond_shape,
                          const void* cond, const cml_shape_t* true_shape, const void* on_true,
                          const cml_shape_t* false_shape, const void* on_false) {
  ref_walk_t w;
  ref_walk_init(&w, out_shape, 4);
  ref_row_major_strides(out_shape, w.strides[0]);
  ref_broadcast_strides(cond_shape, out_shape, w.strides[1]);
  ref_broadcast_strides(true_shape, out_shape, w.strides[2]);
  ref_broadcast_strides(false_shape, out_shape, w.strides[3]);
  size_t element_size = (size_t)cml_dtype_bits(out_shape->dtype) / 8;
  int64_t count = cml_shape_element_count(out_shape);
  for (int64_t i = 0; i < count; ++i, ref_walk_next(&w)) {
    bool pick_true = ((const uint8_t*)cond)[w.offset[1]] != 0;
    const char* src = pick_true ? (const char*)on_true + (size_t)w.offset[2] * element_size
                                : (const char*)on_false + (size_t)w.offset[3] * element_size;
    memcpy((char*)out + (size_t)w.offset[0] * element_size, src, element_size);
  }
}

// The starting value of a reduction (what reducing an empty axis gives).
static double ref_reduce_identity(cml_op_t op, cml_dtype_t dtype) {
  bool is_int = dtype == CML_DTYPE_I32;
  switch (op) {
    case CML_OP_REDUCE_SUM:
      return 0.0;
    case CML_OP_REDUCE_PRODUCT:
      return 1.0;
    case CML_OP_REDUCE_MAX:
      return is_int ? (double)INT32_MIN : -INFINITY;
    default:
      return is_int ? (double)INT32_MAX : INFINITY;  // ReduceMin
  }
}

// Reductions accumulate in double for floats (so Float32 sums are rounded once, at the end)
// and in wrapping 32-bit arithmetic for Int32. |scratch| holds one double per output element.
static void ref_run_reduce(cml_op_t op, const cml_ir_attrs_t* attrs, const cml_shape_t* out_shape,
                           void* out, const cml_shape_t* in_shape, const void* in,
                           double* scratch) {
  bool reduced[CML_MAX_RANK] = {false};
  for (int32_t i = 0; i < attrs->axis_count; ++i) reduced[attrs->axes[i]] = true;
  if (attrs->axis_count == 0) {
    for (int32_t a = 0; a < in_shape->rank; ++a) reduced[a] = true;
  }
  // Walk the input; the output offset moves only along the axes that are kept.
  int64_t out_strides[CML_MAX_RANK];
  ref_row_major_strides(out_shape, out_strides);
  ref_walk_t w;
  ref_walk_init(&w, in_shape, 2);
  ref_row_major_strides(in_shape, w.strides[0]);
  for (int32_t a = 0, kept = 0; a < in_shape->rank; ++a) {
    w.strides[1][a] = reduced[a] ? 0 : out_strides[kept++];
  }
  cml_dtype_t dtype = in_shape->dtype;
  int64_t out_count = cml_shape_element_count(out_shape);
  int64_t in_count = cml_shape_element_count(in_shape);
  double identity = ref_reduce_identity(op, dtype);
  if (dtype == CML_DTYPE_I32) {
    int32_t* o = out;
    const int32_t* x = in;
    for (int64_t i = 0; i < out_count; ++i) o[i] = (int32_t)identity;
    for (int64_t i = 0; i < in_count; ++i, ref_walk_next(&w)) {
      int32_t* acc = &o[w.offset[1]];
      int32_t v = x[w.offset[0]];
      switch (op) {
        case CML_OP_REDUCE_SUM:
          *acc = ref_i32_binary(CML_OP_ADD, *acc, v);
          break;
        case CML_OP_REDUCE_PRODUCT:
          *acc = ref_i32_binary(CML_OP_MUL, *acc, v);
          break;
        case CML_OP_REDUCE_MAX:
          *acc = ref_i32_binary(CML_OP_MAX, *acc, v);
          break;
        default:
          *acc = ref_i32_binary(CML_OP_MIN, *acc, v);
          break;
      }
    }
    return;
  }
  for (int64_t i = 0; i < out_count; ++i) scratch[i] = identity;
  for (int64_t i = 0; i < in_count; ++i, ref_walk_next(&w)) {
    double* acc = &scratch[w.offset[1]];
    double v = ref_load_float(dtype, in, w.offset[0]);
    switch (op) {
      case CML_OP_REDUCE_SUM:
        *acc += v;
        break;
      case CML_OP_REDUCE_PRODUCT:
        *acc *= v;
        break;
      case CML_OP_REDUCE_MAX:
        *acc = ref_float_max(*acc, v);
        break;
      default:
        *acc = ref_float_min(*acc, v);
        break;
    }
  }
  for (int64_t i = 0; i < out_count; ++i) ref_store_float(dtype, out, i, scratch[i]);
}

// Whether |axis| is among the first |count| entries of |axes|.
static bool ref_axis_listed(int64_t axis, const int64_t* axes, int32_t count) {
  for (int32_t i = 0; i < count; ++i) {
    if (axes[i] == axis) return true;
  }
  return false;
}

// DotGeneral on Float32, accumulated in double. Output axes: batch..., lhs free..., rhs free...
// |scratch| holds 2 * K int64 (K = the number of contracted index combinations): the lhs and
// rhs offsets of each combination, computed once.
static void ref_run_dot_general(const cml_ir_attrs_t* attrs, const cml_shape_t* out_shape,
                                float* out, const cml_shape_t* lhs_shape, const float* lhs,
                                const cml_shape_t* rhs_shape, const float* rhs, int64_t* scratch,
                                int64_t contract_count) {
  const cml_dot_config_t* dot = &attrs->u.dot;
  int64_t ls[CML_MAX_RANK], rs[CML_MAX_RANK];
  ref_row_major_strides(lhs_shape, ls);
  ref_row_major_strides(rhs_shape, rs);

  // Offsets of every combination of contracting indices.
  int64_t* lhs_k = scratch;
  int64_t* rhs_k = scratch + contract_count;
  cml_shape_t contract_shape = {.dtype = CML_DTYPE_F32, .rank = dot->lhs_contracting_count};
  for (int32_t j = 0; j < dot->lhs_contracting_count; ++j) {
    contract_shape.dims[j] = lhs_shape->dims[dot->lhs_contracting_axes[j]];
  }
  ref_walk_t kw;
  ref_walk_init(&kw, &contract_shape, 2);
  for (int32_t j = 0; j < dot->lhs_contracting_count; ++j) {
    kw.strides[0][j] = ls[dot->lhs_contracting_axes[j]];
    kw.strides[1][j] = rs[dot->rhs_contracting_axes[j]];
  }
  for (int64_t k = 0; k < contract_count; ++k, ref_walk_next(&kw)) {
    lhs_k[k] = kw.offset[0];
    rhs_k[k] = kw.offset[1];
  }

  // Walk the output; each output axis moves along a batch axis of both sides or a free axis
  // of one side.
  ref_walk_t w;
  ref_walk_init(&w, out_shape, 3);
  ref_row_major_strides(out_shape, w.strides[0]);
  int32_t axis = 0;
  for (int32_t j = 0; j < dot->lhs_batch_count; ++j, ++axis) {
    w.strides[1][axis] = ls[dot->lhs_batch_axes[j]];
    w.strides[2][axis] = rs[dot->rhs_batch_axes[j]];
  }
  for (int32_t a = 0; a < lhs_shape->rank; ++a) {
    if (ref_axis_listed(a, dot->lhs_batch_axes, dot->lhs_batch_count) ||
        ref_axis_listed(a, dot->lhs_contracting_axes, dot->lhs_contracting_count)) {
      continue;
    }
    w.strides[1][axis++] = ls[a];
  }
  for (int32_t a = 0; a < rhs_shape->rank; ++a) {
    if (ref_axis_listed(a, dot->rhs_batch_axes, dot->rhs_batch_count) ||
        ref_axis_listed(a, dot->rhs_contracting_axes, dot->rhs_contracting_count)) {
      continue;
    }
    w.strides[2][axis++] = rs[a];
  }
  int64_t count = cml_shape_element_count(out_shape);
  for (int64_t i = 0; i < count; ++i, ref_walk_next(&w)) {
    const float* l = lhs + w.offset[1];
    const float* r = rhs + w.offset[2];
    double sum = 0.0;
    for (int64_t k = 0; k < contract_count; ++k) sum += (double)l[lhs_k[k]] * (double)r[rhs_k[k]];
    out[w.offset[0]] = (float)sum;
  }
}

//===--- execute ---===//

// One value of the running function: its array, and whether the execution allocated it.
typedef struct ref_slot_t {
  void* data;
  size_t size;
  bool owned;
} ref_slot_t;

typedef struct ref_run_t {
  const cml_module_t* module;
  cml_allocator_t allocator;
  ref_slot_t* slots;  // one per module value
} ref_run_t;

static const cml_shape_t* ref_shape(const ref_run_t* run, uint32_t value) {
  return &run->module->values[value].shape;
}

static const void* ref_data(const ref_run_t* run, uint32_t value) { return run->slots[value].data; }

// Runs one node (not Parameter or Constant) into freshly allocated output storage.
static cml_status_t ref_run_node(ref_run_t* run, const cml_ir_node_t* node) {
  uint32_t v = node->first_output;
  const cml_shape_t* out_shape = ref_shape(run, v);
  size_t size = cml_shape_byte_size(out_shape);
  void* out = ref_alloc(run->allocator, size);
  if (!out) return ref_out_of_memory(cml_op_name(node->op), size);
  run->slots[v] = (ref_slot_t){out, size, true};

  const uint32_t* in = node->inputs;
  cml_op_t op = node->op;
  switch (op) {
    case CML_OP_IDENTITY:
    case CML_OP_RESHAPE:  // row-major data is unchanged by a reshape
      if (size > 0) memcpy(out, ref_data(run, in[0]), size);
      return CML_OK;
    case CML_OP_TRANSPOSE:
      ref_run_transpose(node->attrs, out_shape, out, ref_shape(run, in[0]), ref_data(run, in[0]));
      return CML_OK;
    case CML_OP_BROADCAST_IN_DIM:
      ref_run_broadcast_in_dim(node->attrs, out_shape, out, ref_shape(run, in[0]),
                               ref_data(run, in[0]));
      return CML_OK;
    case CML_OP_WHERE:
      ref_run_where(out_shape, out, ref_shape(run, in[0]), ref_data(run, in[0]),
                    ref_shape(run, in[1]), ref_data(run, in[1]), ref_shape(run, in[2]),
                    ref_data(run, in[2]));
      return CML_OK;
    case CML_OP_ADD:
    case CML_OP_SUB:
    case CML_OP_MUL:
    case CML_OP_DIV:
    case CML_OP_MAX:
    case CML_OP_MIN:
      ref_run_binary(op, out_shape, out, ref_shape(run, in[0]), ref_data(run, in[0]),
                     ref_shape(run, in[1]), ref_data(run, in[1]));
      return CML_OK;
    case CML_OP_NEG:
    case CML_OP_ABS:
    case CML_OP_EXP:
      ref_run_unary(op, out_shape, out, ref_data(run, in[0]));
      return CML_OK;
    case CML_OP_REDUCE_SUM:
    case CML_OP_REDUCE_PRODUCT:
    case CML_OP_REDUCE_MAX:
    case CML_OP_REDUCE_MIN: {
      size_t scratch_size = (size_t)cml_shape_element_count(out_shape) * sizeof(double);
      double* scratch = ref_alloc(run->allocator, scratch_size);
      if (!scratch) return ref_out_of_memory(cml_op_name(op), scratch_size);
      ref_run_reduce(op, node->attrs, out_shape, out, ref_shape(run, in[0]), ref_data(run, in[0]),
                     scratch);
      ref_free(run->allocator, scratch, scratch_size);
      return CML_OK;
    }
    case CML_OP_DOT_GENERAL: {
      const cml_shape_t* lhs_shape = ref_shape(run, in[0]);
      const cml_dot_config_t* dot = &node->attrs->u.dot;
      int64_t contract_count = 1;
      for (int32_t j = 0; j < dot->lhs_contracting_count; ++j) {
        contract_count *= lhs_shape->dims[dot->lhs_contracting_axes[j]];
      }
      size_t scratch_size = 2 * (size_t)contract_count * sizeof(int64_t);
      int64_t* scratch = ref_alloc(run->allocator, scratch_size);
      if (!scratch) return ref_out_of_memory(cml_op_name(op), scratch_size);
      ref_run_dot_general(node->attrs, out_shape, out, lhs_shape, ref_data(run, in[0]),
                          ref_shape(run, in[1]), ref_data(run, in[1]), scratch, contract_count);
      ref_free(run->allocator, scratch, scratch_size);
      return CML_OK;
    }
    default:
      if (ref_is_compare(op) || ref_is_total_order_compare(op)) {
        ref_run_compare(op, out_shape, out, ref_shape(run, in[0]), ref_data(run, in[0]),
                        ref_shape(run, in[1]), ref_data(run, in[1]));
        return CML_OK;
      }
      // compile() accepted only the ops above, so this is a broken invariant.
      return cml_status_make(CML_STATUS_INTERNAL, "backend \"" REF_NAME "\": %s reached execute",
                             cml_op_name(op));
  }
}

static cml_status_t ref_execute(cml_executable_t* executable, cml_buffer_t* const* inputs,
                                const bool* donate, int device, cml_buffer_t** out_results) {
  // Donation is allowed to be ignored: inputs are only read, never taken over.
  (void)donate;
  const cml_module_t* module = executable->module;
  const cml_ir_function_t* main_fn = &module->functions[0];
  ref_run_t run = {module, executable->backend->allocator, NULL};
  size_t slots_size = (size_t)module->value_count * sizeof(ref_slot_t);
  run.slots = ref_alloc(run.allocator, slots_size);
  if (!run.slots) return ref_out_of_memory("execution values", slots_size);
  memset(run.slots, 0, slots_size);

  cml_status_t st = CML_OK;
  for (uint32_t i = 0; i < main_fn->node_count && st == CML_OK; ++i) {
    const cml_ir_node_t* node = &module->nodes[main_fn->nodes[i]];
    if (node->op == CML_OP_PARAMETER) {
      const ref_buffer_t* input = (const ref_buffer_t*)inputs[node->index];
      run.slots[node->first_output] = (ref_slot_t){input->data, input->size, false};
    } else if (node->op == CML_OP_CONSTANT) {
      run.slots[node->first_output] = (ref_slot_t){(void*)node->data, node->data_size, false};
    } else {
      st = ref_run_node(&run, node);
    }
  }

  // Every output gets a buffer of its own (an output may repeat a value or be an input).
  size_t made = 0;
  for (; st == CML_OK && made < main_fn->output_count; ++made) {
    uint32_t v = main_fn->outputs[made];
    ref_buffer_t* result = NULL;
    st = ref_buffer_new(executable->backend, device, ref_shape(&run, v), false, &result);
    if (st != CML_OK) break;
    if (result->size > 0) memcpy(result->data, run.slots[v].data, result->size);
    out_results[made] = &result->base;
  }
  if (st != CML_OK) {
    for (size_t k = 0; k < made; ++k) {
      cml_buffer_release(out_results[k]);
      out_results[k] = NULL;
    }
  }

  for (uint32_t v = 0; v < module->value_count; ++v) {
    if (run.slots[v].owned) ref_free(run.allocator, run.slots[v].data, run.slots[v].size);
  }
  ref_free(run.allocator, run.slots, slots_size);
  return st;
}

//===--- backend and factory ---===//

static void ref_destroy(cml_backend_t* backend) {
  cml_allocator_t allocator = backend->allocator;
  cml_backend_deinit_base(backend);
  ref_free(allocator, backend, sizeof(ref_backend_t));
}

static const cml_backend_vtable_t ref_vtable = {
    .struct_size = sizeof(cml_backend_vtable_t),
    .destroy = ref_destroy,
    .device_description = NULL,  // the default, "ref:<n>"
    .buffer_from_host = ref_buffer_from_host,
    .buffer_copy_to_host = ref_buffer_copy_to_host,
    .buffer_create_shared = ref_buffer_create_shared,
    .buffer_data = ref_buffer_data,
    .buffer_copy_to_device = ref_buffer_copy_to_device,
    .buffer_destroy = ref_buffer_destroy,
    .compile = ref_compile,
    .execute = ref_execute,
    .executable_destroy = ref_executable_destroy,
    .get_extension = NULL,
};

// Parses the config after "ref:": empty, or "devices=N" (1..REF_MAX_DEVICES).
static cml_status_t ref_parse_config(const char* config, int* out_devices) {
  *out_devices = 1;
  if (!config || !*config) return CML_OK;
  const char* key = "devices=";
  size_t key_len = strlen(key);
  if (strncmp(config, key, key_len) != 0) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "backend \"" REF_NAME
                           "\": unknown option \"%s\" "
                           "(valid: devices=N, help)",
                           config);
  }
  const char* text = config + key_len;
  char* end = NULL;
  long devices = strtol(text, &end, 10);
  if (end == text || *end != '\0' || devices < 1 || devices > REF_MAX_DEVICES) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "backend \"" REF_NAME "\": devices=\"%s\" is not a number in 1..%d",
                           text, REF_MAX_DEVICES);
  }
  *out_devices = (int)devices;
  return CML_OK;
}

static void ref_set_capabilities(cml_capabilities_t* caps) {
  static const cml_op_t kOps[] = {
      CML_OP_PARAMETER,
      CML_OP_CONSTANT,
      CML_OP_IDENTITY,
      CML_OP_RESHAPE,
      CML_OP_TRANSPOSE,
      CML_OP_BROADCAST_IN_DIM,
      CML_OP_WHERE,
      CML_OP_ADD,
      CML_OP_SUB,
      CML_OP_MUL,
      CML_OP_DIV,
      CML_OP_MAX,
      CML_OP_MIN,
      CML_OP_NEG,
      CML_OP_ABS,
      CML_OP_EXP,
      CML_OP_EQUAL,
      CML_OP_NOT_EQUAL,
      CML_OP_LESS_THAN,
      CML_OP_LESS_OR_EQUAL,
      CML_OP_GREATER_THAN,
      CML_OP_GREATER_OR_EQUAL,
      CML_OP_EQUAL_TOTAL_ORDER,
      CML_OP_NOT_EQUAL_TOTAL_ORDER,
      CML_OP_LESS_THAN_TOTAL_ORDER,
      CML_OP_LESS_OR_EQUAL_TOTAL_ORDER,
      CML_OP_GREATER_THAN_TOTAL_ORDER,
      CML_OP_GREATER_OR_EQUAL_TOTAL_ORDER,
      CML_OP_REDUCE_SUM,
      CML_OP_REDUCE_PRODUCT,
      CML_OP_REDUCE_MAX,
      CML_OP_REDUCE_MIN,
      CML_OP_DOT_GENERAL,
  };
  for (size_t i = 0; i < sizeof kOps / sizeof kOps[0]; ++i) {
    cml_capabilities_set_op(caps, kOps[i], true);
  }
  caps->dtypes = REF_DSET_ALL;
  caps->functions = false;
  caps->dynamic_axes = false;
  caps->shared_buffers = true;
  caps->max_rank = CML_MAX_RANK;
}

static cml_status_t ref_create(const char* config, cml_allocator_t allocator,
                               cml_backend_t** out_backend) {
  *out_backend = NULL;
  int devices = 1;
  CML_RETURN_IF_ERROR(ref_parse_config(config, &devices));
  char full_config[64];
  if (devices == 1) {
    snprintf(full_config, sizeof full_config, REF_NAME);
  } else {
    snprintf(full_config, sizeof full_config, REF_NAME ":devices=%d", devices);
  }
  ref_backend_t* b = ref_alloc(allocator, sizeof *b);
  if (!b) return ref_out_of_memory("backend", sizeof *b);
  memset(b, 0, sizeof *b);
  cml_status_t st =
      cml_backend_init_base(&b->base, &ref_vtable, allocator, REF_NAME, full_config, devices);
  if (st == CML_OK) {
    st = cml_backend_set_description(&b->base, "reference interpreter (plug-in example)");
    if (st != CML_OK) cml_backend_deinit_base(&b->base);
  }
  if (st != CML_OK) {
    ref_free(allocator, b, sizeof *b);
    return st;
  }
  ref_set_capabilities(&b->base.capabilities);
  *out_backend = &b->base;
  return CML_OK;
}

static const cml_backend_factory_t ref_factory = {
    .struct_size = sizeof(cml_backend_factory_t),
    .api_major = CML_BACKEND_API_MAJOR,
    .api_minor = CML_BACKEND_API_MINOR,
    .name = REF_NAME,
    .aliases = NULL,
    .description = "reference interpreter loaded as a plug-in (example)",
    .config_help = "  devices=N: number of (host memory) devices, 1..16 (default 1)\n",
    .create = ref_create,
    .default_priority = NULL,  // never the default backend
};

// A host built for another major version gets NULL: the plug-in cannot serve it.
const cml_backend_factory_t* cml_plugin_query(uint32_t host_api_major) {
  return host_api_major == CML_BACKEND_API_MAJOR ? &ref_factory : NULL;
}
