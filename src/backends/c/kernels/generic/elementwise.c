// SPDX-License-Identifier: Apache-2.0
// kernels/generic/elementwise.c: the "elementwise" kernel group: lookup, capabilities and the
// strided loop driver shared by unary, binary, compare, Clamp and Where kernels.
//
// The driver turns restricted broadcasting into per-input element strides: output axes of size
// 1 are dropped, and neighbouring axes where every input has the same "broadcast or not"
// pattern are merged. When at most one axis is left (equal shapes, scalars, or a broadcast
// that collapses to a single pattern) the op is one straight loop over the output, split in
// chunks over the pool; otherwise the innermost merged axis is the inner loop and the outer
// rows are split over the pool. Work is split by output elements only, so results never depend
// on the thread count. The runners pick the SIMD inner loops (elementwise_simd.c) when the
// options allow them, and the scalar reference loops otherwise.
#include "backends/c/kernels/generic/elementwise_internal.h"

//===--- driver ---===//

enum { CMLC_EW_MAX_INPUTS = 3, CMLC_EW_MIN_CHUNK = 16384 };

typedef struct cmlc_ew_plan_t {
  cmlc_ew_fn fn;
  int count;
  char* out;
  size_t out_size;
  const char* in[CMLC_EW_MAX_INPUTS];
  size_t in_size[CMLC_EW_MAX_INPUTS];
  // Merged axes: dims[0..rank) and per-input element strides (0 on broadcast axes).
  int rank;
  int64_t dims[CML_MAX_RANK];
  int64_t strides[CMLC_EW_MAX_INPUTS][CML_MAX_RANK];
} cmlc_ew_plan_t;

static void cmlc_ew_task_flat(void* ctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const cmlc_ew_plan_t* p = (const cmlc_ew_plan_t*)ctx;
  const void* in[CMLC_EW_MAX_INPUTS] = {0};
  int64_t stride[CMLC_EW_MAX_INPUTS] = {0};
  for (int j = 0; j < p->count; ++j) {
    stride[j] = p->rank == 1 ? p->strides[j][0] : 0;
    in[j] = p->in[j] + (size_t)(begin * stride[j]) * p->in_size[j];
  }
  p->fn(p->out + (size_t)begin * p->out_size, in, stride, end - begin);
}

static void cmlc_ew_task_rows(void* ctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const cmlc_ew_plan_t* p = (const cmlc_ew_plan_t*)ctx;
  const int last = p->rank - 1;
  const int64_t inner = p->dims[last];
  int64_t stride[CMLC_EW_MAX_INPUTS] = {0};
  for (int j = 0; j < p->count; ++j) stride[j] = p->strides[j][last];
  for (int64_t row = begin; row < end; ++row) {
    int64_t offset[CMLC_EW_MAX_INPUTS] = {0};
    int64_t rest = row;
    for (int d = last - 1; d >= 0; --d) {
      const int64_t i = rest % p->dims[d];
      rest /= p->dims[d];
      for (int j = 0; j < p->count; ++j) offset[j] += i * p->strides[j][d];
    }
    const void* in[CMLC_EW_MAX_INPUTS] = {0};
    for (int j = 0; j < p->count; ++j) in[j] = p->in[j] + (size_t)offset[j] * p->in_size[j];
    p->fn(p->out + (size_t)(row * inner) * p->out_size, in, stride, inner);
  }
}

cml_status_t cmlc_ew_drive(const cmlc_kernel_args_t* args, cmlc_ew_fn fn, int count,
                           const int* input_index) {
  const cml_shape_t* os = args->output_shapes[0];
  const int64_t n = cml_shape_element_count(os);
  if (n == 0) return CML_OK;
  cmlc_ew_plan_t p;
  memset(&p, 0, sizeof p);
  p.fn = fn;
  p.count = count;
  p.out = (char*)args->outputs[0];
  p.out_size = cmlc_dtype_size(os->dtype);
  int64_t in_strides[CMLC_EW_MAX_INPUTS][CML_MAX_RANK];
  bool scalar[CMLC_EW_MAX_INPUTS];
  for (int j = 0; j < count; ++j) {
    const cml_shape_t* is = args->input_shapes[input_index[j]];
    p.in[j] = (const char*)args->inputs[input_index[j]];
    p.in_size[j] = cmlc_dtype_size(is->dtype);
    scalar[j] = cml_shape_element_count(is) == 1;
    if (!scalar[j] && is->rank != os->rank) {
      char a[128], b[128];
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                             "%s: operand %s does not broadcast to output %s",
                             cml_op_name(args->node->op), cml_shape_format(is, a, sizeof a),
                             cml_shape_format(os, b, sizeof b));
    }
    if (!scalar[j]) cmlc_shape_strides(is, in_strides[j]);
  }
  // Merge axes with the same broadcast pattern; drop size-1 output axes.
  unsigned prev_flags = ~0u;
  for (int32_t d = 0; d < os->rank; ++d) {
    if (os->dims[d] == 1) continue;
    unsigned flags = 0;
    for (int j = 0; j < count; ++j) {
      if (scalar[j] || args->input_shapes[input_index[j]]->dims[d] == 1) flags |= 1u << j;
    }
    if (p.rank > 0 && flags == prev_flags) {
      p.dims[p.rank - 1] *= os->dims[d];
    } else {
      p.dims[p.rank] = os->dims[d];
      ++p.rank;
    }
    for (int j = 0; j < count; ++j) {
      p.strides[j][p.rank - 1] = (flags >> j) & 1u ? 0 : in_strides[j][d];
    }
    prev_flags = flags;
  }
  if (p.rank <= 1) {
    cmlc_parallel_for(args->pool, n, CMLC_EW_MIN_CHUNK, cmlc_ew_task_flat, &p);
  } else {
    const int64_t inner = p.dims[p.rank - 1];
    const int64_t rows = n / inner;
    int64_t chunk = CMLC_EW_MIN_CHUNK / inner;
    if (chunk < 1) chunk = 1;
    cmlc_parallel_for(args->pool, rows, chunk, cmlc_ew_task_rows, &p);
  }
  return CML_OK;
}

//===--- runners ---===//

static cml_status_t cmlc_ew_missing(const cmlc_kernel_args_t* args) {
  return cml_status_make(CML_STATUS_INTERNAL, "%s: no elementwise kernel for %s",
                         cml_op_name(args->node->op), cml_dtype_name(args->input_shapes[0]->dtype));
}

// The inner loop the lookup picked (slot 0), or NULL.
static cmlc_ew_fn cmlc_ew_impl(const cmlc_kernel_args_t* args) { return (cmlc_ew_fn)args->impl[0]; }

static cml_status_t cmlc_ew_run_unary(const cmlc_kernel_args_t* args) {
  cmlc_ew_fn fn = cmlc_ew_impl(args);
  if (!fn) return cmlc_ew_missing(args);
  static const int inputs[1] = {0};
  return cmlc_ew_drive(args, fn, 1, inputs);
}

static cml_status_t cmlc_ew_run_binary(const cmlc_kernel_args_t* args) {
  cmlc_ew_fn fn = cmlc_ew_impl(args);
  if (!fn) return cmlc_ew_missing(args);
  static const int inputs[2] = {0, 1};
  return cmlc_ew_drive(args, fn, 2, inputs);
}

static cml_status_t cmlc_ew_run_clamp(const cmlc_kernel_args_t* args) {
  cmlc_ew_fn fn = cmlc_ew_impl(args);
  if (!fn) return cmlc_ew_missing(args);
  static const int inputs[3] = {0, 1, 2};
  return cmlc_ew_drive(args, fn, 3, inputs);
}

static cml_status_t cmlc_ew_run_where(const cmlc_kernel_args_t* args) {
  cmlc_ew_fn fn = cmlc_ew_impl(args);
  if (!fn) return cmlc_ew_missing(args);
  static const int inputs[3] = {0, 1, 2};
  return cmlc_ew_drive(args, fn, 3, inputs);
}

//===--- lookup and capabilities ---===//

// The first input (among |first|..input_count-1) with the output's dims and element size, or
// -1: the planner may then let the output reuse that input's storage.
static int cmlc_ew_in_place_input(const cml_module_t* module, const cml_ir_node_t* node,
                                  uint32_t first) {
  const cml_shape_t* os = &module->values[node->first_output].shape;
  const size_t osize = cmlc_dtype_size(os->dtype);
  if (osize == 0) return -1;
  for (uint32_t j = first; j < node->input_count; ++j) {
    const cml_shape_t* is = &module->values[node->inputs[j]].shape;
    if (cmlc_dtype_size(is->dtype) == osize && cml_shape_dims_equal(is, os)) return (int)j;
  }
  return -1;
}

// The group's ops are ops.def's ELEMENTWISE group.
static bool cmlc_ew_is_group_op(cml_op_t op) { return cml_op_group(op) == CML_OPG_ELEMENTWISE; }

bool cmlc_kernels_elementwise_lookup(const cml_module_t* module, const cml_ir_node_t* node,
                                     const cmlc_options_t* options, cmlc_kernel_entry_t* out) {
  if (!module || !node || !out || !cmlc_ew_is_group_op(node->op)) return false;
  const cml_shape_t* os = &module->values[node->first_output].shape;
  const cml_dtype_t in0 =
      node->input_count > 0 ? module->values[node->inputs[0]].shape.dtype : CML_DTYPE_INVALID;
  cmlc_kernel_entry_t e = {.in_place_input = -1};
  switch (node->op) {
    case CML_OP_IDENTITY:
      e.run = cmlc_ew_run_identity;
      e.in_place_input = 0;
      break;
    case CML_OP_CONVERT_DTYPE:
      if (!cmlc_ew_convert_supported(in0, os->dtype)) return false;
      e.run = cmlc_ew_run_convert;
      e.impl[0] = (cmlc_impl_fn)cmlc_ew_simd_convert_fn(options, in0, os->dtype);
      if (!cml_dtype_is_packed(in0) && !cml_dtype_is_packed(os->dtype)) {
        e.in_place_input = cmlc_ew_in_place_input(module, node, 0);
      }
      break;
    case CML_OP_BITCAST:
      if (!cml_dtype_is_supported(in0) || !cml_dtype_is_supported(os->dtype)) return false;
      e.run = cmlc_ew_run_bitcast;
      break;
    case CML_OP_IOTA:
      if (cmlc_dtype_size(os->dtype) == 0) return false;
      e.run = cmlc_ew_run_iota;
      break;
    case CML_OP_CLAMP:
      if (node->input_count != 3 || !cmlc_ew_binary_fn(CML_OP_CLAMP, os->dtype)) return false;
      e.run = cmlc_ew_run_clamp;
      e.impl[0] = (cmlc_impl_fn)cmlc_ew_simd_binary_fn(options, CML_OP_CLAMP, os->dtype);
      if (!e.impl[0]) e.impl[0] = (cmlc_impl_fn)cmlc_ew_binary_fn(CML_OP_CLAMP, os->dtype);
      e.in_place_input = cmlc_ew_in_place_input(module, node, 0);
      break;
    case CML_OP_WHERE:
      if (node->input_count != 3 || !cmlc_ew_where_fn(cmlc_dtype_size(os->dtype))) {
        return false;
      }
      e.run = cmlc_ew_run_where;
      e.impl[0] = (cmlc_impl_fn)cmlc_ew_simd_where_fn(options, cmlc_dtype_size(os->dtype));
      if (!e.impl[0]) e.impl[0] = (cmlc_impl_fn)cmlc_ew_where_fn(cmlc_dtype_size(os->dtype));
      e.in_place_input = cmlc_ew_in_place_input(module, node, 1);
      break;
    default:
      if (cml_op_kind(node->op) == CML_OPK_UNARY) {
        if (!cmlc_ew_unary_fn(node->op, in0)) return false;
        e.run = cmlc_ew_run_unary;
        e.impl[0] = (cmlc_impl_fn)cmlc_ew_simd_unary_fn(options, node->op, in0);
        if (!e.impl[0]) e.impl[0] = (cmlc_impl_fn)cmlc_ew_unary_fn(node->op, in0);
      } else {
        if (node->input_count != 2 || !cmlc_ew_binary_fn(node->op, in0)) return false;
        e.run = cmlc_ew_run_binary;
        e.impl[0] = (cmlc_impl_fn)cmlc_ew_simd_binary_fn(options, node->op, in0);
        if (!e.impl[0]) e.impl[0] = (cmlc_impl_fn)cmlc_ew_binary_fn(node->op, in0);
      }
      e.in_place_input = cmlc_ew_in_place_input(module, node, 0);
      break;
  }
  *out = e;
  return true;
}

void cmlc_kernels_elementwise_capabilities(cml_capabilities_t* caps) {
  cmlc_kernels_group_capabilities(caps, CML_OPG_ELEMENTWISE);
}
