// SPDX-License-Identifier: Apache-2.0
// src/backends/c/loop_fusion.c: fused elementwise loops: one pass over the output for a group
// of elementwise ops, so that the group's intermediates never touch the arena. (The c backend's
// loop fusion, not the fused ops of cml/fused.h: those are src/core/fused.c and
// kernels/generic/fused.c.)
//
// A group's program is a list of ops over registers: blocks of CMLC_FUSED_BLOCK elements that
// stay in L1. For each block every op runs in schedule order through the very inner loops the
// unfused kernels use (the SIMD loop the options pick, or the scalar reference loop, and the
// ConvertDType runner), reading registers, the group's inputs at the block's position, or a
// gathered copy of a broadcast input; the root op writes the output directly. Every element
// therefore goes through the same sequence of IEEE operations as without fusion and the results
// are bit-identical (the kernels compute each element independently of where a loop starts).
//
// Inputs are used in three ways: FULL (the output's dims: element i at i), SCALAR (one element,
// stride 0) and BCAST (size-1 axes, restricted broadcasting: gathered per block). Blocks are
// split over the pool in chunks that depend only on the element count.
//
// Thread-safety: a program is immutable once built; runs share nothing but it.
#include <stdio.h>

#include "backends/c/engine_internal.h"
#include "backends/c/kernels/generic/elementwise_internal.h"
#include "backends/c/kernels/generic/movement_internal.h"
#include "backends/c/kernels/generic/reduce_internal.h"

enum {
  CMLC_FUSED_BLOCK = 256,
  CMLC_FUSED_MAX_REGS = 12,
  CMLC_FUSED_MAX_INPUTS = 16,
  CMLC_FUSED_MAX_BCAST = 6,
  CMLC_FUSED_MAX_OPS = 32,
  CMLC_FUSED_MIN_CHUNK_BLOCKS = 64,  // 16384 elements, as the unfused loops
  CMLC_FUSED_MAX_ELEMENT = 8,        // f64
  CMLC_FUSED_MIN_DIRECT_RUN = 256,   // shorter innermost runs gather broadcast inputs instead
  CMLC_FUSED_SHORT_ROW = 16,  // innermost runs gathered a row at a time (cmlc_fused_short_rows)
  // Gathered rows a loop reads in place: at least this many elements and at most this many
  // bytes. Longer rows measured slower gathered by the loop than stored by the Gather (a graph
  // layer's 256-byte rows: 2.67 -> 2.78 ms, the rows' cache misses then stall the loop instead
  // of overlapping in the Gather's stream of copies); shorter ones cost a copy call each.
  CMLC_FUSED_MIN_GATHER_RUN = 16,
  CMLC_FUSED_MAX_GATHER_ROW_BYTES = 128,
  // A fused column reduction's full inputs are prefetched this many elements ahead of each
  // produced run. Masked mean pooling of [32, 512, 768] (x * mask summed over the sequence),
  // 1 thread on Zen 5: 3.5-3.9 -> 2.25-2.6 ms (the plain column sum, without the producer,
  // streams at 39 GB/s: 1.3 ms). Row reductions (RMSNorm) and inputs that the last-level cache
  // holds measured no faster with it, or slower (batch-norm statistics of 6 MiB: 4%).
  CMLC_FUSED_PREFETCH = 8192,
  CMLC_FUSED_TILE_AHEAD = 2048,  // cmlc_fused_tile_span
  CMLC_FUSED_PREFETCH_BYTES = 32 << 20,
};

typedef enum cmlc_fused_mode_t {
  CMLC_FUSED_FULL = 0,
  CMLC_FUSED_SCALAR,
  CMLC_FUSED_BCAST,
  CMLC_FUSED_GATHER,  // a Gather's operand, rows gathered per block (cmlc_fused_through_gather)
  CMLC_FUSED_INDEX,   // that Gather's indices: read by the gathering only, never by an op
} cmlc_fused_mode_t;

typedef struct cmlc_fused_op_t {
  const cml_ir_node_t* node;
  cmlc_ew_fn fn;  // NULL: ConvertDType from |from| to |to|
  cml_dtype_t from, to;
  cmlc_impl_fn convert_impl;  // ConvertDType: the SIMD loop its lookup picked (may be NULL)
  int arg_count;
  int16_t args[3];  // >= 0: register; < 0: input -(arg + 1)
  int16_t dst;      // register, or -1: the output
} cmlc_fused_op_t;

struct cmlc_fused_t {
  uint32_t op_count, input_count, reg_count, bcast_count;
  cmlc_fused_op_t ops[CMLC_FUSED_MAX_OPS];
  uint32_t inputs[CMLC_FUSED_MAX_INPUTS];  // value indices
  uint8_t mode[CMLC_FUSED_MAX_INPUTS];     // cmlc_fused_mode_t
  uint8_t bcast_slot[CMLC_FUSED_MAX_INPUTS];
  // BCAST: within a segment of |segment| output elements (aligned), element e reads the input
  // at an offset that depends on e mod period only: the input does not vary along a band of
  // axes [a, b) (its largest such band), segment = the product of the output dims from a,
  // period = the product from b. A gathered block that lies within one segment serves every
  // block of that segment with the same phase.
  int64_t segment[CMLC_FUSED_MAX_INPUTS], period[CMLC_FUSED_MAX_INPUTS];
  size_t in_size[CMLC_FUSED_MAX_INPUTS];
  int64_t in_strides[CMLC_FUSED_MAX_INPUTS][CML_MAX_RANK];  // BCAST: 0 on broadcast axes
  int64_t in_offset[CMLC_FUSED_MAX_INPUTS];  // BCAST: the element of output index 0 (a slice)
  // GATHER inputs: loop element e is element e % g_run of row e / g_run, a run of the operand
  // starting at sum_c clamp(index_c, 0, g_limit[c]) * g_stride[c] over the row's
  // g_index_count index components (contiguous in the INDEX input g_index_slot, of
  // g_index_dtype).
  int64_t g_run[CMLC_FUSED_MAX_INPUTS];
  uint8_t g_index_slot[CMLC_FUSED_MAX_INPUTS], g_index_count[CMLC_FUSED_MAX_INPUTS];
  cml_dtype_t g_index_dtype[CMLC_FUSED_MAX_INPUTS];
  int64_t g_limit[CMLC_FUSED_MAX_INPUTS][CML_MAX_RANK];
  int64_t g_stride[CMLC_FUSED_MAX_INPUTS][CML_MAX_RANK];
  int32_t rank;
  int64_t dims[CML_MAX_RANK];
  int64_t n;
  size_t out_size;
  int in_place_input;
  // Broadcast inputs are read in place, run by run of the innermost axis (every one has stride
  // 0 or 1 along it, and that axis is at least CMLC_FUSED_MIN_DIRECT_RUN long).
  bool direct;
  // A fused reduction: |reduce| (a Reduce node of |module|) reads the group's output, which is
  // computed run by run and never stored; the loop's output is the reduction's.
  const cml_module_t* module;
  const cml_ir_node_t* reduce;
  // The reduction keeps the innermost axis (sums down columns) and reads at least
  // CMLC_FUSED_PREFETCH_BYTES: each produced run is prefetched CMLC_FUSED_PREFETCH elements
  // ahead (cmlc_fused_produce).
  bool prefetch;
  // The program as the register-resident runner's (cmlc_fused_tile_build), or tile_fn NULL.
  // tile_span: every input is read in place (no gathered blocks), so the runner takes whole
  // runs of the innermost axis, or whole ranges without broadcasts (cmlc_fused_tile_span).
  cmlc_ew_tile_fn tile_fn;
  bool tile_span;
  cmlc_ew_tile_prog_t tile;
};

//===--- op support ---===//

// Result dtypes a member may have: floats, Bool and the integers (their kernels are the same
// strided loops; the ints' wrap, division and shift rules are the kernels' own).
static bool cmlc_fused_dtype_ok(cml_dtype_t dtype) {
  return dtype == CML_DTYPE_F32 || dtype == CML_DTYPE_F64 || dtype == CML_DTYPE_BF16 ||
         dtype == CML_DTYPE_F16 || dtype == CML_DTYPE_BOOL || dtype == CML_DTYPE_I8 ||
         dtype == CML_DTYPE_U8 || dtype == CML_DTYPE_I16 || dtype == CML_DTYPE_U16 ||
         dtype == CML_DTYPE_I32 || dtype == CML_DTYPE_U32 || dtype == CML_DTYPE_I64 ||
         dtype == CML_DTYPE_U64;
}

// Fills |op|'s inner loop and returns whether the node can be fused. The loop is the one the
// elementwise group's lookup picked for the unfused node (one place picks SIMD variants).
static bool cmlc_fused_pick(const cml_module_t* m, const cml_ir_node_t* n,
                            const cmlc_options_t* options, cmlc_fused_op_t* op) {
  if (n->output_count != 1 || n->input_count == 0 || n->input_count > 3) return false;
  const cml_shape_t* os = &m->values[n->first_output].shape;
  if (!cmlc_fused_dtype_ok(os->dtype)) return false;
  for (uint32_t k = 0; k < n->input_count; ++k) {
    // Broadcast inputs are gathered into blocks of CMLC_FUSED_MAX_ELEMENT-byte elements.
    const size_t size = cmlc_dtype_size(m->values[n->inputs[k]].shape.dtype);
    if (size == 0 || size > CMLC_FUSED_MAX_ELEMENT) return false;
  }
  switch (n->op) {
    case CML_OP_IDENTITY:
    case CML_OP_BITCAST:
    case CML_OP_IOTA:
      return false;
    default:
      break;
  }
  const cml_op_kind_t kind = cml_op_kind(n->op);
  const bool plain = n->op == CML_OP_CONVERT_DTYPE || n->op == CML_OP_CLAMP ||
                     n->op == CML_OP_WHERE || kind == CML_OPK_UNARY || kind == CML_OPK_BINARY ||
                     kind == CML_OPK_COMPARE;
  if (!plain) return false;
  cmlc_kernel_entry_t e = {.in_place_input = -1};
  if (!cmlc_kernels_elementwise_lookup(m, n, options, &e) || !e.run) return false;
  memset(op, 0, sizeof *op);
  op->node = n;
  op->arg_count = (int)n->input_count;
  if (n->op == CML_OP_CONVERT_DTYPE) {
    if (n->input_count != 1) return false;
    op->from = m->values[n->inputs[0]].shape.dtype;
    op->to = os->dtype;
    op->convert_impl = e.impl[0];
    return true;
  }
  op->fn = (cmlc_ew_fn)e.impl[0];
  return op->fn != NULL;
}

bool cmlc_fused_node_supported(const cml_module_t* module, const cml_ir_node_t* node,
                               const cmlc_options_t* options) {
  cmlc_fused_op_t op;
  return cmlc_fused_pick(module, node, options, &op);
}

//===--- building ---===//

static cml_status_t cmlc_fused_refuse(const char* why) {
  return cml_status_make(CML_STATUS_FAILED_PRECONDITION, "fusion: %s", why);
}

// Reads the input |v| of a group whose output has |os| dims through the BroadcastInDim that
// produced it: |slot| takes the broadcast's operand, as a scalar, a full input (an identity
// broadcast) or a broadcast input whose strides map the output axes onto the operand's (0 on
// the axes the broadcast adds or expands). Returns NULL, or why it cannot.
static const char* cmlc_fused_through_bcast(const cml_module_t* m, cmlc_fused_t* f, uint32_t slot,
                                            uint32_t v, const cml_shape_t* os) {
  const cml_ir_node_t* bn = &m->nodes[m->values[v].node];
  const uint32_t u = bn->inputs[0];
  const cml_shape_t* us = &m->values[u].shape;
  const cml_shape_t* bs = &m->values[v].shape;
  if (bs->rank != os->rank || bn->attrs->axis_count != us->rank) return "broadcast input";
  f->inputs[slot] = u;
  f->in_size[slot] = cmlc_dtype_size(us->dtype);
  if (cml_shape_element_count(us) == 1) {
    f->mode[slot] = CMLC_FUSED_SCALAR;
    return NULL;
  }
  if (cml_shape_dims_equal(us, os)) {
    bool identity = true;
    for (int32_t i = 0; i < us->rank; ++i) identity &= bn->attrs->axes[i] == i;
    if (identity) {
      f->mode[slot] = CMLC_FUSED_FULL;
      return NULL;
    }
  }
  int64_t ustrides[CML_MAX_RANK];
  cmlc_shape_strides(us, ustrides);
  for (int32_t d = 0; d < os->rank; ++d) {
    if (bs->dims[d] != os->dims[d] && bs->dims[d] != 1) return "bad broadcast";
    f->in_strides[slot][d] = 0;
  }
  for (int32_t i = 0; i < us->rank; ++i) {
    const int64_t d = bn->attrs->axes[i];
    if (d < 0 || d >= os->rank) return "bad broadcast";
    if (us->dims[i] != 1 && bs->dims[d] != 1) f->in_strides[slot][d] = ustrides[i];
  }
  f->mode[slot] = CMLC_FUSED_BCAST;
  ++f->bcast_count;
  return NULL;
}

// Merges adjacent axes of |dims| along which each of the |count| stride vectors steps as along
// one axis (the outer axis' stride is the inner one's times its size) and drops axes of size
// 1: the same elements at the same offsets, in the same order, over fewer and longer axes.
// Returns the new rank (1 for a rank > 0 whose axes all have size 1).
static int32_t cmlc_fused_merge_axes(int32_t rank, int64_t* dims, int64_t* const* strides,
                                     uint32_t count) {
  int32_t r = 0;
  for (int32_t d = 0; d < rank; ++d) {
    if (dims[d] == 1) continue;
    bool merge = r > 0;
    for (uint32_t j = 0; j < count && merge; ++j) {
      merge = strides[j][r - 1] == strides[j][d] * dims[d];
    }
    const int32_t to = merge ? r - 1 : r++;
    dims[to] = merge ? dims[to] * dims[d] : dims[d];
    for (uint32_t j = 0; j < count; ++j) strides[j][to] = strides[j][d];
  }
  if (r == 0 && rank > 0) {
    r = 1;
    dims[0] = 1;
    for (uint32_t j = 0; j < count; ++j) strides[j][0] = 0;
  }
  return r;
}

// The loop's axes merged where every broadcast input allows it (cmlc_fused_merge_axes): a
// Slice of whole rows of [8, 66, 66, 32] into [8, 64, 64, 32] reads runs of 2048 elements in
// place (cmlc_fused_block), not gathered runs of 32. Full, scalar and gathered inputs index the
// output's elements in order and allow any merge.
static void cmlc_fused_collapse(cmlc_fused_t* f) {
  if (f->rank == 0 || f->n == 0) return;
  int64_t* strides[CMLC_FUSED_MAX_INPUTS];
  uint32_t count = 0;
  for (uint32_t j = 0; j < f->input_count; ++j) {
    if (f->mode[j] == CMLC_FUSED_BCAST) strides[count++] = f->in_strides[j];
  }
  f->rank = cmlc_fused_merge_axes(f->rank, f->dims, strides, count);
}

bool cmlc_fused_slice_read_through(const cml_module_t* m, uint32_t v) {
  const cml_ir_node_t* sn = &m->nodes[m->values[v].node];
  const cml_shape_t* ss = &m->values[v].shape;
  if (sn->op != CML_OP_SLICE || ss->rank == 0 || cml_shape_element_count(ss) == 0) return false;
  const cml_shape_t* us = &m->values[sn->inputs[0]].shape;
  if (us->rank != ss->rank) return false;
  // The slice's runs in its operand: its axes merged as the loop merges them.
  int64_t dims[CML_MAX_RANK], steps[CML_MAX_RANK];
  cmlc_shape_strides(us, steps);
  for (int32_t d = 0; d < ss->rank; ++d) {
    dims[d] = ss->dims[d];
    steps[d] *= sn->attrs->strides[d] > 0 ? sn->attrs->strides[d] : 1;
  }
  int64_t* strides[1] = {steps};
  const int32_t rank = cmlc_fused_merge_axes(ss->rank, dims, strides, 1);
  // Runs long enough to be read in place (shorter ones would be gathered block by block,
  // slower than the slice's own copy), or every other element of such a run, gathered block
  // by block with a constant stride (vector shuffles): the slice is not a pass of its own
  // (x[::2] * 3 over [4M], 1 thread on Zen 5: the copy and the product read 40 MB, the loop
  // 24).
  return dims[rank - 1] >= CMLC_FUSED_MIN_DIRECT_RUN && steps[rank - 1] <= 2;
}

// Reads the input |v| through the Slice that produced it: |slot| takes the slice's operand
// with its strides times the slice's steps, from the element at the slice's starts (a full
// input when the slice takes the whole operand). Returns NULL, or why it cannot.
static const char* cmlc_fused_through_slice(const cml_module_t* m, cmlc_fused_t* f, uint32_t slot,
                                            uint32_t v, const cml_shape_t* os) {
  const cml_ir_node_t* sn = &m->nodes[m->values[v].node];
  const uint32_t u = sn->inputs[0];
  const cml_shape_t* us = &m->values[u].shape;
  const cml_shape_t* ss = &m->values[v].shape;
  if (ss->rank != os->rank || us->rank != os->rank) return "slice input";
  f->inputs[slot] = u;
  f->in_size[slot] = cmlc_dtype_size(us->dtype);
  if (cml_shape_dims_equal(us, os) && cml_shape_dims_equal(ss, os)) {
    f->mode[slot] = CMLC_FUSED_FULL;  // the whole operand
    return NULL;
  }
  int64_t ustrides[CML_MAX_RANK];
  cmlc_shape_strides(us, ustrides);
  int64_t offset = 0;
  for (int32_t d = 0; d < os->rank; ++d) {
    if (ss->dims[d] != os->dims[d] && ss->dims[d] != 1) return "bad broadcast";
    const int64_t step = sn->attrs->strides[d] > 0 ? sn->attrs->strides[d] : 1;
    offset += sn->attrs->starts[d] * ustrides[d];
    f->in_strides[slot][d] = ss->dims[d] == 1 ? 0 : ustrides[d] * step;
  }
  f->in_offset[slot] = offset;
  f->mode[slot] = CMLC_FUSED_BCAST;
  ++f->bcast_count;
  return NULL;
}

// A Gather whose output rows are whole trailing rows of its operand: the offset output axes
// are the trailing output axes, the slice takes whole trailing operand axes (the others
// collapsed), the index vector is the indices' last axis (or implicit), and a row holds
// CMLC_FUSED_MIN_GATHER_RUN elements or more in at most CMLC_FUSED_MAX_GATHER_ROW_BYTES (a grid
// sample's 32 channels of f32). A loop reading its output gathers the rows of each block
// instead (cmlc_fused_gather_rows). |run| (may be NULL): the row length.
static bool cmlc_fused_gather_rows_ok(const cml_module_t* m, uint32_t v, int64_t* run) {
  const cml_ir_node_t* gn = &m->nodes[m->values[v].node];
  if (gn->op != CML_OP_GATHER || gn->input_count != 2 || !gn->attrs) return false;
  const cml_gather_dims_t* gd = &gn->attrs->u.gather;
  const cml_shape_t* xs = &m->values[gn->inputs[0]].shape;
  const cml_shape_t* is = &m->values[gn->inputs[1]].shape;
  const cml_shape_t* gs = &m->values[v].shape;
  const size_t es = cmlc_dtype_size(xs->dtype);
  if (es == 0 || es > CMLC_FUSED_MAX_ELEMENT || !cml_dtype_is_int(is->dtype)) return false;
  const int32_t r_off = gd->offset_output_axis_count;
  if (r_off < 1 || r_off > xs->rank || r_off > gs->rank) return false;
  for (int32_t i = 0; i < r_off; ++i)
    if (gd->offset_output_axes[i] != gs->rank - r_off + i) return false;
  const int64_t iv = gd->index_vector_axis;
  if (iv != is->rank && iv != is->rank - 1) return false;
  const int64_t k = iv < is->rank ? is->dims[iv] : 1;
  if (k != gd->start_index_map_count || k > CML_MAX_RANK) return false;
  int64_t row = 1;
  for (int32_t d = 0; d < xs->rank; ++d) {
    const bool trailing = d >= xs->rank - r_off;
    bool collapsed = false;
    for (int32_t c = 0; c < gd->collapsed_slice_axis_count; ++c)
      collapsed |= gd->collapsed_slice_axes[c] == d;
    if (trailing ? (collapsed || gd->slice_sizes[d] != xs->dims[d]) : !collapsed) return false;
    if (trailing) row *= xs->dims[d];
  }
  if (row < CMLC_FUSED_MIN_GATHER_RUN || row * (int64_t)es > CMLC_FUSED_MAX_GATHER_ROW_BYTES)
    return false;
  if (run) *run = row;
  return true;
}

bool cmlc_fused_gather_read_through(const cml_module_t* m, uint32_t v) {
  return cmlc_fused_gather_rows_ok(m, v, NULL);
}

// Reads the input |v| through the Gather that produced it (cmlc_fused_gather_rows_ok): |slot|
// takes the operand (GATHER), |slot| + 1 the indices (INDEX). Returns NULL, or why it cannot.
static const char* cmlc_fused_through_gather(const cml_module_t* m, cmlc_fused_t* f, uint32_t slot,
                                             uint32_t v, const cml_shape_t* os) {
  const cml_ir_node_t* gn = &m->nodes[m->values[v].node];
  int64_t run = 0;
  if (!cmlc_fused_gather_rows_ok(m, v, &run) || !cml_shape_dims_equal(&m->values[v].shape, os))
    return "gather input";
  if (f->bcast_count >= CMLC_FUSED_MAX_BCAST) return "too many broadcast inputs";
  if (slot + 1 >= CMLC_FUSED_MAX_INPUTS) return "too many inputs";
  const cml_gather_dims_t* gd = &gn->attrs->u.gather;
  const cml_shape_t* xs = &m->values[gn->inputs[0]].shape;
  int64_t xstrides[CML_MAX_RANK];
  cmlc_shape_strides(xs, xstrides);
  f->inputs[slot] = gn->inputs[0];
  f->in_size[slot] = cmlc_dtype_size(xs->dtype);
  f->mode[slot] = CMLC_FUSED_GATHER;
  ++f->bcast_count;
  f->g_run[slot] = run;
  f->g_index_slot[slot] = (uint8_t)(slot + 1);
  f->g_index_count[slot] = (uint8_t)gd->start_index_map_count;
  f->g_index_dtype[slot] = m->values[gn->inputs[1]].shape.dtype;
  for (int32_t c = 0; c < gd->start_index_map_count; ++c) {
    const int64_t d = gd->start_index_map[c];
    f->g_limit[slot][c] = xs->dims[d] - gd->slice_sizes[d];
    f->g_stride[slot][c] = xstrides[d];
  }
  f->inputs[slot + 1] = gn->inputs[1];
  f->in_size[slot + 1] = cmlc_dtype_size(m->values[gn->inputs[1]].shape.dtype);
  f->mode[slot + 1] = CMLC_FUSED_INDEX;
  return NULL;
}

// The member that wrote register |reg| last before op |i|: the value op |i| reads there
// (a register is reused only after its last reader).
static uint32_t cmlc_fused_producer(const cmlc_fused_t* f, uint32_t i, int16_t reg) {
  uint32_t j = i;
  while (j > 0 && f->ops[j - 1].dst != reg) --j;
  return j - 1;
}

// An operand of a register-resident program: its kind (CMLC_TL_MEM ...) and spill tile or
// input.
typedef struct cmlc_fused_opnd_t {
  int kind, arg;
} cmlc_fused_opnd_t;

// The program being translated (cmlc_fused_tile_build).
typedef struct cmlc_fused_tl_t {
  cmlc_ew_tile_prog_t* p;
  bool full;  // an instruction did not fit
} cmlc_fused_tl_t;

static void cmlc_fused_tl_emit(cmlc_fused_tl_t* t, int code, int arg, int arg2) {
  if (t->p->count == CMLC_EW_TILE_MAX_INS) {
    t->full = true;
    return;
  }
  cmlc_ew_tile_ins_t* q = &t->p->ins[t->p->count++];
  q->code = (uint16_t)code;
  q->arg = (uint8_t)arg;
  q->arg2 = (uint8_t)arg2;
}

// Brings |o| into the accumulator (nothing when it is there).
static void cmlc_fused_tl_to_acc(cmlc_fused_tl_t* t, cmlc_fused_opnd_t o) {
  if (o.kind != CMLC_TL_ACC) cmlc_fused_tl_emit(t, CMLC_TL_LD + o.kind, o.arg, 0);
}

// |o| as an operand of a combining instruction: the load-only kinds go to spill tile |tmp|
// first.
static cmlc_fused_opnd_t cmlc_fused_tl_operand(cmlc_fused_tl_t* t, cmlc_fused_opnd_t o, int tmp) {
  if (o.kind <= CMLC_TL_ACC) return o;
  cmlc_fused_tl_emit(t, CMLC_TL_LDM + o.kind, o.arg, tmp);
  return (cmlc_fused_opnd_t){CMLC_TL_MEM, tmp};
}

// Translates the program for the register-resident runner of the options' ISA
// (cmlc_ew_tile_prog_t): every member an f32 SIMD kernel of that ISA that the runner holds
// (unary math, binary ops, compares, IsFinite, Where and Clamp of f32), or a conversion between
// f32 and bf16 / f16 inputs or output and Bool. Each member leaves its value in the
// accumulator; a value read again later than by the next member is spilled to the tile of its
// register. Leaves tile_fn NULL when the program does not translate.
static void cmlc_fused_tile_build(cmlc_fused_t* f, const cml_module_t* m,
                                  const cmlc_options_t* options) {
  f->tile_fn = NULL;
  const cmlc_ew_tile_fn run = cmlc_ew_simd_tile_fn(options);
  enum { UNREAD = -1, TMP0 = CMLC_EW_TILE_MAX_MEM - 2, TMP1 = CMLC_EW_TILE_MAX_MEM - 1 };
  if (!run || f->input_count > CMLC_EW_TILE_MAX_IN || f->reg_count > TMP0) return;
  cmlc_ew_tile_prog_t* p = &f->tile;
  memset(p, 0, sizeof *p);
  p->input_count = f->input_count;
  cmlc_fused_tl_t t = {p, false};
  // Each input's kind, by how the loop reads it and its dtype.
  int kind[CMLC_FUSED_MAX_INPUTS];
  for (uint32_t j = 0; j < f->input_count; ++j) {
    const cml_dtype_t dt = m->values[f->inputs[j]].shape.dtype;
    bool splat = f->mode[j] == CMLC_FUSED_SCALAR;
    // (Broadcasts read in place along a run when direct: one element where the stride is 0.)
    if (f->mode[j] == CMLC_FUSED_BCAST) splat = f->direct && f->in_strides[j][f->rank - 1] == 0;
    // (Int32 inputs, which only Int32 compares and conversions read, as their bits.)
    const bool bits32 = dt == CML_DTYPE_F32 || dt == CML_DTYPE_I32;
    kind[j] = f->mode[j] == CMLC_FUSED_INDEX ? UNREAD
              : bits32                       ? (splat ? CMLC_TL_SPLAT : CMLC_TL_VEC)
              : dt == CML_DTYPE_BF16         ? (splat ? CMLC_TL_SPLAT_BF16 : CMLC_TL_VEC_BF16)
              : dt == CML_DTYPE_F16          ? (splat ? CMLC_TL_SPLAT_F16 : CMLC_TL_VEC_F16)
              : dt == CML_DTYPE_BOOL         ? (splat ? CMLC_TL_SPLAT_BOOL : CMLC_TL_VEC_BOOL)
                                             : UNREAD;
    if (!splat && kind[j] != UNREAD) p->vec_size[j] = (uint8_t)cmlc_dtype_size(dt);
  }
  uint32_t reads[CMLC_FUSED_MAX_OPS] = {0};
  for (uint32_t i = 0; i < f->op_count; ++i) {
    for (int k = 0; k < f->ops[i].arg_count; ++k) {
      if (f->ops[i].args[k] >= 0) ++reads[cmlc_fused_producer(f, i, f->ops[i].args[k])];
    }
  }
  int64_t acc = -1;                  // the member whose value the accumulator holds
  uint32_t cheap = 0, long_ops = 0;  // members computed inside the interpreter, and outside
  for (uint32_t i = 0; i < f->op_count && !t.full; ++i) {
    const cmlc_fused_op_t* op = &f->ops[i];
    const bool root = i + 1 == f->op_count;
    const cml_dtype_t dtype = m->values[op->node->first_output].shape.dtype;
    cmlc_fused_opnd_t o[3];
    for (int k = 0; k < op->arg_count; ++k) {
      const int16_t a = op->args[k];
      if (a >= 0) {
        o[k].kind = (int64_t)cmlc_fused_producer(f, i, a) == acc ? CMLC_TL_ACC : CMLC_TL_MEM;
        o[k].arg = a;
        continue;
      }
      const uint32_t slot = (uint32_t)(-a - 1);
      if (kind[slot] == UNREAD) return;
      o[k].kind = kind[slot];
      o[k].arg = (int)slot;
    }
    cml_dtype_t value = dtype;  // what the accumulator holds after the member
    bool round = false;         // a bf16 / f16 result, rounded after the member (not the root)
    if (!op->fn) {
      // A conversion, as the ISA's conversion kernel: Int32 inputs to f32; floats to Bool
      // (!= 0); to f32 from bf16 / f16 (exact) or Bool (held as 1 / 0 already); to bf16 / f16
      // from floats (a rounding) or Bool (exact).
      if (!cmlc_ew_simd_tile_convert(options, (cmlc_ew_convert_fn)op->convert_impl, op->from,
                                     op->to)) {
        return;
      }
      const bool float_from =
          op->from == CML_DTYPE_F32 || op->from == CML_DTYPE_BF16 || op->from == CML_DTYPE_F16;
      const bool half_to = op->to == CML_DTYPE_BF16 || op->to == CML_DTYPE_F16;
      if (op->from == CML_DTYPE_I32) {
        if (op->to != CML_DTYPE_F32 || op->args[0] >= 0) return;
        cmlc_fused_tl_to_acc(&t, o[0]);
        cmlc_fused_tl_emit(&t, CMLC_TL_I32_TO_F32, 0, 0);
        ++cheap;
      } else if (op->to == CML_DTYPE_BOOL) {
        if (!float_from) return;
        cmlc_fused_tl_to_acc(&t, o[0]);
        cmlc_fused_tl_emit(&t, CMLC_TL_TO_BOOL, 0, 0);
      } else if (op->to == CML_DTYPE_F32 || half_to) {
        if (!float_from && op->from != CML_DTYPE_BOOL) return;
        cmlc_fused_tl_to_acc(&t, o[0]);
        round = half_to && float_from && op->from != op->to;
      } else {
        return;
      }
    } else {
      cmlc_ew_tile_class_t cls = CMLC_TL_CLASS_NONE;
      const int code = cmlc_ew_simd_tile_kernel(options, op->fn, &cls);
      // (f32 results; compares and IsFinite give Bool. Where of 4-byte elements: f32 only.)
      const bool to_bool = cls == CMLC_TL_CLASS_COMPARE || cls == CMLC_TL_CLASS_IS_FINITE ||
                           cls == CMLC_TL_CLASS_ICOMPARE;
      // (f32 results, or bf16 / f16 from the kernels' twins: rounded after each.)
      const bool half = dtype == CML_DTYPE_BF16 || dtype == CML_DTYPE_F16;
      if (cls == CMLC_TL_CLASS_NONE ||
          (to_bool ? dtype != CML_DTYPE_BOOL : dtype != CML_DTYPE_F32 && !half)) {
        return;
      }
      round = half;
      const bool is_long = cls == CMLC_TL_CLASS_UNARY && cmlc_ew_tile_long(code);
      long_ops += is_long;
      cheap += !is_long;
      switch (cls) {
        case CMLC_TL_CLASS_UNARY:
        case CMLC_TL_CLASS_IS_FINITE:
          cmlc_fused_tl_to_acc(&t, o[0]);
          cmlc_fused_tl_emit(&t, cls == CMLC_TL_CLASS_UNARY ? CMLC_TL_UN + code : CMLC_TL_IS_FINITE,
                             0, 0);
          break;
        case CMLC_TL_CLASS_BINARY:
        case CMLC_TL_CLASS_COMPARE:
        case CMLC_TL_CLASS_ICOMPARE: {
          // (Int32 compares read Int32 inputs only: no member holds an Int32.)
          if (cls == CMLC_TL_CLASS_ICOMPARE && (op->args[0] >= 0 || op->args[1] >= 0)) return;
          const int base = (cls == CMLC_TL_CLASS_BINARY    ? CMLC_TL_BIN
                            : cls == CMLC_TL_CLASS_COMPARE ? CMLC_TL_CMP
                                                           : CMLC_TL_ICMP) +
                           8 * code;
          if (o[0].kind == CMLC_TL_ACC && o[1].kind == CMLC_TL_ACC) {
            cmlc_fused_tl_emit(&t, base + CMLC_TL_ACC, 0, 0);
          } else if (o[0].kind == CMLC_TL_ACC) {
            const cmlc_fused_opnd_t b = cmlc_fused_tl_operand(&t, o[1], TMP0);
            cmlc_fused_tl_emit(&t, base + b.kind, b.arg, 0);
          } else if (o[1].kind == CMLC_TL_ACC) {
            const cmlc_fused_opnd_t b = cmlc_fused_tl_operand(&t, o[0], TMP0);
            cmlc_fused_tl_emit(&t, base + 4 + b.kind, b.arg, 0);
          } else {
            const cmlc_fused_opnd_t b = cmlc_fused_tl_operand(&t, o[1], TMP0);
            cmlc_fused_tl_to_acc(&t, o[0]);
            cmlc_fused_tl_emit(&t, base + b.kind, b.arg, 0);
          }
          break;
        }
        default: {
          // Where (condition, on true, on false) and Clamp (lo, x, hi): the condition or x in
          // the accumulator, the other two operands from memory, inputs or one element.
          const int at = cls == CMLC_TL_CLASS_WHERE ? 0 : 1;
          const int k1 = at == 0 ? 1 : 0, k2 = 2;
          cmlc_fused_opnd_t x = o[at], b1 = o[k1], b2 = o[k2];
          if ((b1.kind == CMLC_TL_ACC || b2.kind == CMLC_TL_ACC) && x.kind != CMLC_TL_ACC) {
            // The previous member's value, read here from its tile: spilled now.
            cmlc_fused_tl_emit(&t, CMLC_TL_ST, f->ops[acc].dst, 0);
            if (b1.kind == CMLC_TL_ACC) b1 = (cmlc_fused_opnd_t){CMLC_TL_MEM, f->ops[acc].dst};
            if (b2.kind == CMLC_TL_ACC) b2 = (cmlc_fused_opnd_t){CMLC_TL_MEM, f->ops[acc].dst};
          }
          if (b1.kind == CMLC_TL_ACC || b2.kind == CMLC_TL_ACC) return;  // (x is it too)
          b1 = cmlc_fused_tl_operand(&t, b1, TMP0);
          b2 = cmlc_fused_tl_operand(&t, b2, TMP1);
          cmlc_fused_tl_to_acc(&t, x);
          const int base = cls == CMLC_TL_CLASS_WHERE ? CMLC_TL_WHERE : CMLC_TL_CLAMP;
          cmlc_fused_tl_emit(&t, base + 4 * b1.kind + b2.kind, b1.arg, b2.arg);
          break;
        }
      }
    }
    if (root) {
      // (A bf16 / f16 store rounds as ROUND_* does: the root's result is stored unrounded.)
      const int code = value == CML_DTYPE_F32    ? CMLC_TL_OUT_F32
                       : value == CML_DTYPE_BOOL ? CMLC_TL_OUT_BOOL
                       : value == CML_DTYPE_BF16 ? CMLC_TL_OUT_BF16
                       : value == CML_DTYPE_F16  ? CMLC_TL_OUT_F16
                                                 : -1;
      if (code < 0) return;
      cmlc_fused_tl_emit(&t, code, 0, 0);
      p->out_size = (uint8_t)cmlc_dtype_size(value);
    } else if (round) {
      cmlc_fused_tl_emit(&t, value == CML_DTYPE_BF16 ? CMLC_TL_ROUND_BF16 : CMLC_TL_ROUND_F16, 0,
                         0);
    }
    acc = (int64_t)i;
    if (!root) {
      // Spilled unless the next member is its only reader (reading it from the accumulator).
      uint32_t by_next = 0;
      const cmlc_fused_op_t* next = &f->ops[i + 1];
      for (int k = 0; k < next->arg_count; ++k) {
        by_next += next->args[k] >= 0 && cmlc_fused_producer(f, i + 1, next->args[k]) == i;
      }
      if (reads[i] > by_next) cmlc_fused_tl_emit(&t, CMLC_TL_ST, op->dst, 0);
    }
  }
  // A long function leaves the interpreter (its tile goes through memory and back), so it
  // takes two cheap members to pay for it: exp(x - max) over [256, 32000] rows, 1 thread on
  // Zen 5, took 1.66-1.84 ms as kernel calls and 2.1 ms as a program; exp and tanh among six
  // cheap members 6.0-6.1 ms as kernel calls, 5.7-6.0 as a program.
  if (t.full || p->out_size != f->out_size || cheap < 2 * long_ops) return;
  bool span = true;
  for (uint32_t j = 0; j < f->input_count; ++j) {
    const bool in_place = f->mode[j] == CMLC_FUSED_FULL || f->mode[j] == CMLC_FUSED_SCALAR ||
                          (f->mode[j] == CMLC_FUSED_BCAST && f->direct);
    span &= in_place;
  }
  // A loop of one member over gathered blocks gains nothing from a program and pays a runner
  // call per block (x[::2] * 3 over [4M]: 6-9% slower than the kernel call).
  if (!span && f->op_count < 2) return;
  f->tile_fn = run;
  f->tile_span = span;
}

cml_status_t cmlc_fused_build(const cml_module_t* m, const cmlc_options_t* options,
                              const uint32_t* members, uint32_t member_count,
                              const uint32_t* through, uint32_t through_count,
                              cml_allocator_t allocator, cmlc_fused_t** out) {
  *out = NULL;
  if (member_count == 0 || member_count > CMLC_FUSED_MAX_OPS) {
    return cmlc_fused_refuse("group size");
  }
  cmlc_fused_t* f = cml_allocator_malloc(allocator, sizeof *f, CMLC_ALIGNMENT);
  if (!f) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  memset(f, 0, sizeof *f);
  f->in_place_input = -1;
  const cml_ir_node_t* root = &m->nodes[members[member_count - 1]];
  const cml_shape_t* os = &m->values[root->first_output].shape;
  f->rank = os->rank;
  for (int32_t d = 0; d < os->rank; ++d) f->dims[d] = os->dims[d];
  f->n = cml_shape_element_count(os);
  f->out_size = cmlc_dtype_size(os->dtype);
  // Register of each member's output (-1 before it is computed), and the last op reading it.
  int16_t reg_of[CMLC_FUSED_MAX_OPS];
  uint32_t last_reader[CMLC_FUSED_MAX_OPS];
  bool reg_busy[CMLC_FUSED_MAX_REGS] = {false};
  uint32_t source[CMLC_FUSED_MAX_INPUTS];  // the value each input slot stands for
  for (uint32_t i = 0; i < member_count; ++i) {
    reg_of[i] = -1;
    last_reader[i] = i;
  }
  for (uint32_t i = 0; i < member_count; ++i) {
    const cml_ir_node_t* n = &m->nodes[members[i]];
    for (uint32_t k = 0; k < n->input_count; ++k) {
      for (uint32_t j = 0; j < i; ++j) {
        if (m->nodes[members[j]].first_output == n->inputs[k]) last_reader[j] = i;
      }
    }
  }
  const char* why = NULL;
  for (uint32_t i = 0; i < member_count && !why; ++i) {
    const cml_ir_node_t* n = &m->nodes[members[i]];
    cmlc_fused_op_t* op = &f->ops[i];
    if (!cmlc_fused_pick(m, n, options, op)) {
      why = "unsupported member";
      break;
    }
    for (uint32_t k = 0; k < n->input_count && !why; ++k) {
      const uint32_t v = n->inputs[k];
      int32_t member = -1;
      for (uint32_t j = 0; j < i; ++j) {
        if (m->nodes[members[j]].first_output == v) member = (int32_t)j;
      }
      if (member >= 0) {
        op->args[k] = reg_of[member];
        continue;
      }
      uint32_t slot = f->input_count;
      for (uint32_t j = 0; j < f->input_count; ++j) {
        if (source[j] == v) slot = j;
      }
      if (slot == f->input_count) {
        if (f->input_count == CMLC_FUSED_MAX_INPUTS) {
          why = "too many inputs";
          break;
        }
        source[slot] = v;
        bool bcast = false;
        for (uint32_t t = 0; t < through_count && !bcast; ++t) bcast = through[t] == v;
        const cml_op_t through_op = bcast ? m->nodes[m->values[v].node].op : CML_OP_INVALID;
        if (through_op == CML_OP_GATHER) {
          // Gathered per block; a loop without room for it reads the stored Gather instead.
          if (!cmlc_fused_through_gather(m, f, slot, v, os)) {
            source[slot + 1] = 0;  // the indices' slot: matches no value
            f->input_count += 2;
            op->args[k] = (int16_t)(-(int32_t)slot - 1);
            continue;
          }
        } else if (bcast) {
          why = through_op == CML_OP_SLICE ? cmlc_fused_through_slice(m, f, slot, v, os)
                                           : cmlc_fused_through_bcast(m, f, slot, v, os);
          ++f->input_count;
          op->args[k] = (int16_t)(-(int32_t)slot - 1);
          continue;
        }
        const cml_shape_t* is = &m->values[v].shape;
        f->inputs[slot] = v;
        f->in_size[slot] = cmlc_dtype_size(is->dtype);
        if (cml_shape_element_count(is) == 1) {
          f->mode[slot] = CMLC_FUSED_SCALAR;
        } else if (cml_shape_dims_equal(is, os)) {
          f->mode[slot] = CMLC_FUSED_FULL;
        } else if (is->rank == os->rank) {
          f->mode[slot] = CMLC_FUSED_BCAST;
          ++f->bcast_count;
          int64_t strides[CML_MAX_RANK];
          cmlc_shape_strides(is, strides);
          for (int32_t d = 0; d < os->rank; ++d) {
            if (is->dims[d] != os->dims[d] && is->dims[d] != 1) why = "bad broadcast";
            f->in_strides[slot][d] = is->dims[d] == 1 ? 0 : strides[d];
          }
        } else {
          why = "broadcast input";
        }
        ++f->input_count;
      }
      op->args[k] = (int16_t)(-(int32_t)slot - 1);
    }
    if (why) break;
    if (i + 1 == member_count) {
      op->dst = -1;
    } else {
      int16_t r = -1;
      for (int16_t c = 0; c < CMLC_FUSED_MAX_REGS && r < 0; ++c) {
        if (!reg_busy[c]) r = c;
      }
      if (r < 0) {
        why = "too many registers";
        break;
      }
      reg_busy[r] = true;
      reg_of[i] = r;
      op->dst = r;
      if ((uint32_t)r + 1 > f->reg_count) f->reg_count = (uint32_t)r + 1;
    }
    // Registers whose last reader is this op are free again (after |dst| was taken, so an op
    // never writes a register it reads).
    for (uint32_t j = 0; j < i; ++j) {
      if (reg_of[j] >= 0 && last_reader[j] == i) reg_busy[reg_of[j]] = false;
    }
  }
  if (!why) {
    // Every non-root member must be read by a later member.
    for (uint32_t j = 0; j + 1 < member_count; ++j) {
      if (last_reader[j] == j) why = "unread member";
    }
  }
  if (why) {
    cmlc_fused_destroy(allocator, f);
    return cmlc_fused_refuse(why);
  }
  f->op_count = member_count;
  cmlc_fused_collapse(f);
  f->direct =
      f->bcast_count > 0 && f->rank > 0 && f->dims[f->rank - 1] >= CMLC_FUSED_MIN_DIRECT_RUN;
  for (uint32_t j = 0; j < f->input_count; ++j) {
    if (f->mode[j] != CMLC_FUSED_BCAST) continue;
    // The band of axes with stride 0 that holds the most elements.
    int32_t band_a = f->rank, band_b = f->rank;
    int64_t best = 1;
    for (int32_t a = 0; a < f->rank;) {
      if (f->in_strides[j][a] != 0) {
        ++a;
        continue;
      }
      int32_t b = a;
      int64_t size = 1;
      while (b < f->rank && f->in_strides[j][b] == 0) size *= f->dims[b++];
      if (size > best) {
        best = size;
        band_a = a;
        band_b = b;
      }
      a = b;
    }
    f->segment[j] = 1;
    f->period[j] = 1;
    for (int32_t d = band_a; d < f->rank; ++d) f->segment[j] *= f->dims[d];
    for (int32_t d = band_b; d < f->rank; ++d) f->period[j] *= f->dims[d];
  }
  for (uint32_t j = 0; j < f->input_count && f->direct; ++j) {
    if (f->mode[j] != CMLC_FUSED_BCAST) continue;
    const int64_t inner_stride = f->in_strides[j][f->rank - 1];
    f->direct = inner_stride == 0 || inner_stride == 1;
  }
  // Blocks of the scratch for the inputs gathered per block: Gather rows, and broadcast
  // inputs unless they are read in place.
  uint32_t buffered = 0;
  for (uint32_t j = 0; j < f->input_count; ++j) {
    if (f->mode[j] == CMLC_FUSED_GATHER || (f->mode[j] == CMLC_FUSED_BCAST && !f->direct)) {
      f->bcast_slot[j] = (uint8_t)buffered++;
    }
  }
  if (buffered > CMLC_FUSED_MAX_BCAST) {
    cmlc_fused_destroy(allocator, f);
    return cmlc_fused_refuse("too many broadcast inputs");
  }
  for (uint32_t j = 0; j < f->input_count; ++j) {
    if (f->mode[j] == CMLC_FUSED_FULL && f->in_size[j] == f->out_size) {
      f->in_place_input = (int)j;
      break;
    }
  }
  cmlc_fused_tile_build(f, m, options);
  *out = f;
  return CML_OK;
}

void cmlc_fused_destroy(cml_allocator_t allocator, cmlc_fused_t* fused) {
  if (fused) cml_allocator_free(allocator, fused, sizeof *fused);
}

uint32_t cmlc_fused_input_count(const cmlc_fused_t* fused) { return fused->input_count; }
const uint32_t* cmlc_fused_inputs(const cmlc_fused_t* fused) { return fused->inputs; }
int cmlc_fused_in_place_input(const cmlc_fused_t* fused) { return fused->in_place_input; }
bool cmlc_fused_tiled(const cmlc_fused_t* fused) { return fused->tile_fn != NULL; }

void cmlc_fused_describe(const cmlc_fused_t* f, void* out) {
  FILE* o = (FILE*)out;
  fprintf(o, "loop of %u op(s):", f->op_count);
  for (uint32_t i = 0; i < f->op_count; ++i) {
    const cml_ir_node_t* n = f->ops[i].node;
    fprintf(o, " %%%u %s", n->first_output, cml_op_name(n->op));
  }
  if (f->reduce) fprintf(o, ", into %%%u %s", f->reduce->first_output, cml_op_name(f->reduce->op));
  fprintf(o, "; reads");
  for (uint32_t j = 0; j < f->input_count; ++j) {
    static const char* const kModes[] = {"whole", "one element", "broadcast or slice",
                                         "gathered rows", "indices"};
    const char* how = f->mode[j] < sizeof kModes / sizeof kModes[0] ? kModes[f->mode[j]] : "?";
    fprintf(o, "%s %%%u (%s", j ? "," : "", f->inputs[j], how);
    if (f->mode[j] == CMLC_FUSED_BCAST) fprintf(o, f->direct ? ", in place" : ", gathered");
    fprintf(o, ")");
  }
  fprintf(o, "; %u axis(es), %lld elements%s\n", (unsigned)f->rank, (long long)f->n,
          f->tile_fn ? ", register-resident" : "");
}

//===--- running ---===//

typedef struct cmlc_fused_ctx_t {
  const cmlc_fused_t* f;
  const void* const* inputs;
  char* output;
  const cmlc_options_t* options;
} cmlc_fused_ctx_t;

// Copies the |len| elements of broadcast input |j| that line up with output elements
// [start, start + len) into |dst|.
// The output index (per axis) of element |start|.
static void cmlc_fused_index(const cmlc_fused_t* f, int64_t start, int64_t* at) {
  int64_t rest = start;
  for (int32_t d = f->rank - 1; d >= 0; --d) {
    at[d] = rest % f->dims[d];
    rest /= f->dims[d];
  }
}

// |rows| rows of |inner| elements of |T| into |o| (contiguous): row r, element i is
// b[r * s1 + i * si]. Loops of a constant |inner| (N > 0) unroll.
#define CMLC_FUSED_SHORT_ROWS(T, N)                                        \
  do {                                                                     \
    const T* b = (const T*)src;                                            \
    T* o = (T*)dst;                                                        \
    const int64_t n = (N) > 0 ? (N) : inner;                               \
    if (si == 0) {                                                         \
      for (int64_t r = 0; r < rows; ++r) {                                 \
        const T v = b[r * s1];                                             \
        for (int64_t i = 0; i < n; ++i) o[r * n + i] = v;                  \
      }                                                                    \
    } else {                                                               \
      for (int64_t r = 0; r < rows; ++r) {                                 \
        for (int64_t i = 0; i < n; ++i) o[r * n + i] = b[r * s1 + i * si]; \
      }                                                                    \
    }                                                                      \
  } while (0)

#define CMLC_FUSED_SHORT_ROWS_OF(T)  \
  do {                               \
    switch (inner) {                 \
      case 2:                        \
        CMLC_FUSED_SHORT_ROWS(T, 2); \
        break;                       \
      case 3:                        \
        CMLC_FUSED_SHORT_ROWS(T, 3); \
        break;                       \
      case 4:                        \
        CMLC_FUSED_SHORT_ROWS(T, 4); \
        break;                       \
      default:                       \
        CMLC_FUSED_SHORT_ROWS(T, 0); \
        break;                       \
    }                                \
  } while (0)

// Whole rows of a short innermost axis (|inner| elements, input stride |si| along it, |s1|
// between rows) gathered in one loop, not run by run: a [512K, 2] product with a [512K]
// vector broadcast along the pairs spent 30 cycles a row in the general loop.
static void cmlc_fused_short_rows(char* dst, const char* src, int64_t rows, int64_t inner,
                                  int64_t si, int64_t s1, size_t es) {
  switch (es) {
    case 1:
      CMLC_FUSED_SHORT_ROWS_OF(uint8_t);
      break;
    case 2:
      CMLC_FUSED_SHORT_ROWS_OF(uint16_t);
      break;
    case 4:
      CMLC_FUSED_SHORT_ROWS_OF(uint32_t);
      break;
    default:
      CMLC_FUSED_SHORT_ROWS_OF(uint64_t);
      break;
  }
}
#undef CMLC_FUSED_SHORT_ROWS_OF
#undef CMLC_FUSED_SHORT_ROWS

// |at| is the output index of element |start| (cmlc_fused_index).
static void cmlc_fused_gather(const cmlc_fused_t* f, uint32_t j, const char* base,
                              const int64_t* at, int64_t len, char* dst) {
  const int32_t rank = f->rank;
  const int64_t* strides = f->in_strides[j];
  int64_t idx[CML_MAX_RANK];
  int64_t off = f->in_offset[j];
  for (int32_t d = 0; d < rank; ++d) {
    idx[d] = at[d];
    off += idx[d] * strides[d];
  }
  const size_t es = f->in_size[j];
  const int32_t last = rank - 1;
  const int64_t inner = f->dims[last], inner_stride = strides[last];
  int64_t k = 0;
  while (k < len) {
    if (inner <= CMLC_FUSED_SHORT_ROW && rank >= 2 && idx[last] == 0 && es <= 8) {
      // Whole short rows along the next axis.
      int64_t rows = f->dims[last - 1] - idx[last - 1];
      if (rows > (len - k) / inner) rows = (len - k) / inner;
      if (rows > 0) {
        cmlc_fused_short_rows(dst + (size_t)k * es, base + (size_t)off * es, rows, inner,
                              inner_stride, strides[last - 1], es);
        k += rows * inner;
        off += rows * strides[last - 1];
        idx[last - 1] += rows;
        for (int32_t d = last - 1; d > 0 && idx[d] == f->dims[d]; --d) {
          off -= idx[d] * strides[d];
          idx[d] = 0;
          ++idx[d - 1];
          off += strides[d - 1];
        }
        continue;
      }
    }
    // A run along the innermost axis.
    int64_t run = inner - idx[last];
    if (run > len - k) run = len - k;
    if (es == 4 && inner_stride == 0) {
      // (A broadcast along the run: filled here, the hot case of gathered broadcasts.)
      const uint32_t value = ((const uint32_t*)base)[off];
      uint32_t* o = (uint32_t*)dst + k;
      for (int64_t r = 0; r < run; ++r) o[r] = value;
    } else {
      // The movement kernels' row copy: memcpy, a fill, or constant-stride loops for steps 2
      // and 3 and reverses, which vectorize; any other stride element by element.
      cmlc__mv_copy_row(dst + (size_t)k * es, base + (size_t)off * es, run, 1, inner_stride, es);
    }
    k += run;
    off += run * inner_stride;
    idx[last] += run;
    // Carry into the outer axes.
    for (int32_t d = last; d > 0 && idx[d] == f->dims[d]; --d) {
      off -= idx[d] * strides[d];
      idx[d] = 0;
      ++idx[d - 1];
      off += strides[d - 1];
    }
  }
}

// The elements [start, start + len) of GATHER input |j| into |dst|: run by run of its rows,
// each row's start found from its index vector (clamped as Gather clamps).
static void cmlc_fused_gather_rows(const cmlc_fused_t* f, uint32_t j, const void* const* inputs,
                                   int64_t start, int64_t len, char* dst) {
  const int64_t run = f->g_run[j];
  const size_t es = f->in_size[j];
  const char* base = (const char*)inputs[j];
  const void* ix = inputs[f->g_index_slot[j]];
  const int32_t count = f->g_index_count[j];
  const cml_dtype_t dtype = f->g_index_dtype[j];
  int64_t row = start / run, col = start % run;
  const size_t row_bytes = (size_t)run * es;
  for (int64_t k = 0; k < len; ++row, col = 0) {
    int64_t n = run - col;
    if (n > len - k) n = len - k;
    int64_t off = 0;
    for (int32_t c = 0; c < count; ++c) {
      // (i32 and i64 indices read inline: a call per component was a tenth of a grid sample.)
      const int64_t at = row * count + c;
      int64_t v = dtype == CML_DTYPE_I32   ? ((const int32_t*)ix)[at]
                  : dtype == CML_DTYPE_I64 ? ((const int64_t*)ix)[at]
                                           : cmlc__mv_read_index(ix, dtype, at);
      const int64_t hi = f->g_limit[j][c];
      v = v < 0 ? 0 : (v > hi ? hi : v);
      off += v * f->g_stride[j][c];
    }
    char* to = dst + (size_t)k * es;
    const char* from = base + (size_t)(off + col) * es;
    // Whole rows of the common sizes copied inline (a constant size), others by memcpy.
    if (n == run && row_bytes == 128) {
      memcpy(to, from, 128);
    } else if (n == run && row_bytes == 64) {
      memcpy(to, from, 64);
    } else {
      memcpy(to, from, (size_t)n * es);
    }
    k += n;
  }
}

typedef struct cmlc_fused_scratch_t {
  // (Also the register-resident programs' spill tiles: CMLC_EW_TILE_SCRATCH bytes.)
  _Alignas(64) uint8_t regs[CMLC_FUSED_MAX_REGS][CMLC_FUSED_BLOCK * CMLC_FUSED_MAX_ELEMENT];
  _Alignas(64) uint8_t bcast[CMLC_FUSED_MAX_BCAST][CMLC_FUSED_BLOCK * CMLC_FUSED_MAX_ELEMENT];
  _Alignas(64) uint8_t expanded[CMLC_FUSED_BLOCK * CMLC_FUSED_MAX_ELEMENT];
  // What bcast[slot] holds: |cached_len| elements of segment |cached_segment| from phase
  // |cached_phase| (start mod the input's period; -1: nothing). A range of the same segment
  // and phase, no longer, reuses them.
  int64_t cached_phase[CMLC_FUSED_MAX_BCAST], cached_len[CMLC_FUSED_MAX_BCAST];
  int64_t cached_segment[CMLC_FUSED_MAX_BCAST];
} cmlc_fused_scratch_t;

_Static_assert(sizeof(((cmlc_fused_scratch_t*)0)->regs) >= CMLC_EW_TILE_SCRATCH,
               "the spill tiles of a register-resident program fit in the registers' blocks");

static void cmlc_fused_scratch_init(cmlc_fused_scratch_t* s) {
  for (int k = 0; k < CMLC_FUSED_MAX_BCAST; ++k) s->cached_phase[k] = -1;
}

// Copies one element of |size| bytes |n| times into |dst|.
static void cmlc_fused_expand(const void* src, size_t size, int64_t n, uint8_t* dst) {
#define CMLC_FUSED_EXPAND(T)                          \
  do {                                                \
    T v;                                              \
    memcpy(&v, src, sizeof v);                        \
    for (int64_t i = 0; i < n; ++i) ((T*)dst)[i] = v; \
  } while (0)
  switch (size) {
    case 1:
      CMLC_FUSED_EXPAND(uint8_t);
      break;
    case 2:
      CMLC_FUSED_EXPAND(uint16_t);
      break;
    case 4:
      CMLC_FUSED_EXPAND(uint32_t);
      break;
    case 8:
      CMLC_FUSED_EXPAND(uint64_t);
      break;
    default:
      for (int64_t i = 0; i < n; ++i) memcpy(dst + (size_t)i * size, src, size);
      break;
  }
#undef CMLC_FUSED_EXPAND
}

// Computes output elements [start, start + len) (len <= CMLC_FUSED_BLOCK) into |out|. With
// |direct|, the range lies within one run of the innermost axis and every broadcast input has
// stride 0 or 1 there: those inputs are read in place (one element, or a contiguous run)
// instead of being gathered.
static void cmlc_fused_range(const cmlc_fused_ctx_t* c, int64_t start, int64_t len, char* out,
                             bool direct, cmlc_fused_scratch_t* s) {
  const cmlc_fused_t* f = c->f;
  const void* bcast_at[CMLC_FUSED_MAX_INPUTS];
  int64_t bcast_stride[CMLC_FUSED_MAX_INPUTS];
  int64_t at[CML_MAX_RANK];  // the output index of |start|, once an input needs it
  bool have_at = false;
  for (uint32_t j = 0; j < f->input_count; ++j) {
    if (f->mode[j] == CMLC_FUSED_GATHER) {
      uint8_t* dst = s->bcast[f->bcast_slot[j]];
      cmlc_fused_gather_rows(f, j, c->inputs, start, len, (char*)dst);
      bcast_at[j] = dst;
      bcast_stride[j] = 1;
      continue;
    }
    if (f->mode[j] != CMLC_FUSED_BCAST) continue;
    if (!direct) {
      const uint8_t slot = f->bcast_slot[j];
      // Within one segment (else no reuse: phase -1).
      const int64_t seg = start / f->segment[j];
      const int64_t phase = (start + len - 1) / f->segment[j] == seg ? start % f->period[j] : -1;
      if (phase < 0 || s->cached_phase[slot] != phase || s->cached_segment[slot] != seg ||
          s->cached_len[slot] < len) {
        if (!have_at) cmlc_fused_index(f, start, at);
        have_at = true;
        cmlc_fused_gather(f, j, (const char*)c->inputs[j], at, len, (char*)s->bcast[slot]);
        s->cached_phase[slot] = phase;
        s->cached_segment[slot] = seg;
        s->cached_len[slot] = len;
      }
      bcast_at[j] = s->bcast[slot];
      bcast_stride[j] = 1;
      continue;
    }
    if (!have_at) cmlc_fused_index(f, start, at);
    have_at = true;
    int64_t off = f->in_offset[j];
    for (int32_t d = 0; d < f->rank; ++d) off += at[d] * f->in_strides[j][d];
    bcast_at[j] = (const char*)c->inputs[j] + (size_t)off * f->in_size[j];
    bcast_stride[j] = f->in_strides[j][f->rank - 1];
  }
  if (f->tile_fn) {
    const void* tin[CMLC_FUSED_MAX_INPUTS];
    for (uint32_t j = 0; j < f->input_count; ++j) {
      switch (f->mode[j]) {
        case CMLC_FUSED_FULL:
          tin[j] = (const char*)c->inputs[j] + (size_t)start * f->in_size[j];
          break;
        case CMLC_FUSED_SCALAR:
        case CMLC_FUSED_INDEX:
          tin[j] = c->inputs[j];
          break;
        default:
          tin[j] = bcast_at[j];
          break;
      }
    }
    f->tile_fn(&f->tile, tin, out, len, s->regs);
    return;
  }
  for (uint32_t i = 0; i < f->op_count; ++i) {
    const cmlc_fused_op_t* op = &f->ops[i];
    const void* in[3] = {NULL, NULL, NULL};
    int64_t stride[3] = {0, 0, 0};
    size_t size0 = 0;  // the element size of argument 0 when it is an input
    for (int a = 0; a < op->arg_count; ++a) {
      const int16_t arg = op->args[a];
      stride[a] = 1;
      if (arg >= 0) {
        in[a] = s->regs[arg];
        continue;
      }
      const uint32_t j = (uint32_t)(-arg - 1);
      if (a == 0) size0 = f->in_size[j];
      switch (f->mode[j]) {
        case CMLC_FUSED_FULL:
          in[a] = (const char*)c->inputs[j] + (size_t)start * f->in_size[j];
          break;
        case CMLC_FUSED_SCALAR:
          in[a] = c->inputs[j];
          stride[a] = 0;
          break;
        default:
          in[a] = bcast_at[j];
          stride[a] = bcast_stride[j];
          break;
      }
    }
    void* dst = op->dst >= 0 ? (void*)s->regs[op->dst] : (void*)out;
    // Unary kernels and conversions read their one input contiguously (the unfused driver
    // never broadcasts it): one element read in place (a scalar, or a broadcast input with
    // stride 0 along the run) is expanded first.
    if (op->arg_count == 1 && stride[0] == 0) {
      cmlc_fused_expand(in[0], size0, len, s->expanded);
      in[0] = s->expanded;
      stride[0] = 1;
    }
    if (op->fn) {
      op->fn(dst, in, stride, len);
      continue;
    }
    // ConvertDType: the SIMD loop its lookup picked, straight on this block, else the runner's
    // generic path on this block alone (inline, no pool).
    if (op->convert_impl) {
      ((cmlc_ew_convert_fn)op->convert_impl)(dst, in[0], len);
      continue;
    }
    int64_t dims[1] = {len};
    cml_shape_t si = cml_shape_make(op->from, 1, dims);
    cml_shape_t so = cml_shape_make(op->to, 1, dims);
    const cml_shape_t* is[1] = {&si};
    const cml_shape_t* oshape[1] = {&so};
    void* outs[1] = {dst};
    cmlc_kernel_args_t args = {
        .node = op->node,
        .options = c->options,
        .input_count = 1,
        .input_shapes = is,
        .inputs = in,
        .output_count = 1,
        .output_shapes = oshape,
        .outputs = outs,
        .impl = {op->convert_impl},
    };
    // Checked when the program was built (cmlc_ew_convert_supported): cannot fail.
    cml_status_free(cmlc_ew_run_convert(&args));
  }
}

// Computes output elements [start, start + len) (len <= CMLC_FUSED_BLOCK) into |out|: a
// program whose broadcast inputs all have stride 0 or 1 along a long enough innermost axis
// goes run by run of that axis, reading them in place.
static void cmlc_fused_block(const cmlc_fused_ctx_t* c, int64_t start, int64_t len, char* out,
                             cmlc_fused_scratch_t* s) {
  const cmlc_fused_t* f = c->f;
  if (!f->direct) {
    cmlc_fused_range(c, start, len, out, false, s);
    return;
  }
  const int64_t inner = f->dims[f->rank - 1];
  while (len > 0) {
    const int64_t to_end = inner - start % inner;
    const int64_t n = len < to_end ? len : to_end;
    cmlc_fused_range(c, start, n, out, true, s);
    start += n;
    len -= n;
    out += (size_t)n * f->out_size;
  }
}

// Computes elements [start, start + len) of a program with tile_span into |out|: one runner
// call per run of the innermost axis (broadcast inputs read in place along it), or one for the
// whole range without broadcasts, instead of one per block (the calls per 256 elements cost a
// log-softmax's loops 10%).
static void cmlc_fused_tile_span(const cmlc_fused_ctx_t* c, int64_t start, int64_t len, char* out,
                                 void* scratch) {
  const cmlc_fused_t* f = c->f;
  const void* tin[CMLC_FUSED_MAX_INPUTS];
  while (len > 0) {
    int64_t n = len;
    if (f->bcast_count > 0) {
      const int64_t inner = f->dims[f->rank - 1];
      if (n > inner - start % inner) n = inner - start % inner;
    }
    int64_t at[CML_MAX_RANK];
    if (f->bcast_count > 0) cmlc_fused_index(f, start, at);
    for (uint32_t j = 0; j < f->input_count; ++j) {
      const char* base = (const char*)c->inputs[j];
      if (f->mode[j] == CMLC_FUSED_FULL) {
        tin[j] = base + (size_t)start * f->in_size[j];
      } else if (f->mode[j] == CMLC_FUSED_BCAST) {
        int64_t off = f->in_offset[j];
        for (int32_t d = 0; d < f->rank; ++d) off += at[d] * f->in_strides[j][d];
        tin[j] = base + (size_t)off * f->in_size[j];
      } else {
        tin[j] = base;
      }
    }
    if (f->bcast_count > 0) {
      // (The runner prefetches within a run; runs shorter than its distance get their full
      // inputs' elements CMLC_FUSED_TILE_AHEAD on prefetched here: adding a [2048, 512] table
      // to [8, 2048, 512] waited on loads 12-15% longer than the kernel calls did.)
      for (uint32_t j = 0; j < f->input_count; ++j) {
        if (f->mode[j] != CMLC_FUSED_FULL) continue;
        const int64_t from = start + CMLC_FUSED_TILE_AHEAD;
        const int64_t to = from + n < f->n ? from + n : f->n;
        const size_t es = f->in_size[j];
        for (int64_t e = from; e < to; e += (int64_t)(64 / es))
          __builtin_prefetch((const char*)c->inputs[j] + (size_t)e * es);
      }
    }
    f->tile_fn(&f->tile, tin, out, n, scratch);
    start += n;
    len -= n;
    out += (size_t)n * f->out_size;
  }
}

static void cmlc_fused_task(void* ctx, int64_t begin, int64_t end, int thread_index) {
  (void)thread_index;
  const cmlc_fused_ctx_t* c = (const cmlc_fused_ctx_t*)ctx;
  const cmlc_fused_t* f = c->f;
  if (f->tile_span) {
    _Alignas(64) uint8_t spill[CMLC_EW_TILE_SCRATCH];
    const int64_t start = begin * CMLC_FUSED_BLOCK;
    const int64_t stop = end * CMLC_FUSED_BLOCK < f->n ? end * CMLC_FUSED_BLOCK : f->n;
    cmlc_fused_tile_span(c, start, stop - start, c->output + (size_t)start * f->out_size, spill);
    return;
  }
  cmlc_fused_scratch_t s;
  cmlc_fused_scratch_init(&s);
  for (int64_t blk = begin; blk < end; ++blk) {
    const int64_t start = blk * CMLC_FUSED_BLOCK;
    const int64_t len = f->n - start < CMLC_FUSED_BLOCK ? f->n - start : CMLC_FUSED_BLOCK;
    cmlc_fused_block(c, start, len, c->output + (size_t)start * f->out_size, &s);
  }
}

// The input of a fused reduction: group elements [start, start + len) into |dst|.
static void cmlc_fused_produce(void* ctx, int64_t start, int64_t len, void* dst) {
  const cmlc_fused_ctx_t* c = (const cmlc_fused_ctx_t*)ctx;
  const cmlc_fused_t* f = c->f;
  if (f->prefetch) {
    const int64_t from = start + CMLC_FUSED_PREFETCH;
    const int64_t to = from + len < f->n ? from + len : f->n;
    for (uint32_t j = 0; j < f->input_count; ++j) {
      if (f->mode[j] != CMLC_FUSED_FULL) continue;
      const char* base = (const char*)c->inputs[j];
      const size_t es = f->in_size[j];
      for (int64_t e = from; e < to; e += (int64_t)(64 / es))
        __builtin_prefetch(base + (size_t)e * es);
    }
  }
  if (f->tile_span) {
    _Alignas(64) uint8_t spill[CMLC_EW_TILE_SCRATCH];
    cmlc_fused_tile_span(c, start, len, (char*)dst, spill);
    return;
  }
  cmlc_fused_scratch_t s;
  cmlc_fused_scratch_init(&s);
  for (int64_t at = 0; at < len; at += CMLC_FUSED_BLOCK) {
    const int64_t n = len - at < CMLC_FUSED_BLOCK ? len - at : CMLC_FUSED_BLOCK;
    cmlc_fused_block(c, start + at, n, (char*)dst + (size_t)at * f->out_size, &s);
  }
}

cml_status_t cmlc_fused_run(const cmlc_fused_t* fused, const void* const* inputs, void* output,
                            const cmlc_options_t* options, cmlc_pool_t* pool, void* scratch,
                            size_t scratch_size) {
  cmlc_fused_ctx_t c = {fused, inputs, (char*)output, options};
  if (fused->reduce) {
    return cmlc__rd_run_produced(fused->module, fused->reduce, options, pool, scratch, scratch_size,
                                 cmlc_fused_produce, &c, output);
  }
  if (fused->n == 0) return CML_OK;
  const int64_t blocks = (fused->n + CMLC_FUSED_BLOCK - 1) / CMLC_FUSED_BLOCK;
  if (blocks == 1) {
    cmlc_fused_task(&c, 0, 1, 0);
    return CML_OK;
  }
  cmlc_parallel_for(pool, blocks, CMLC_FUSED_MIN_CHUNK_BLOCKS, cmlc_fused_task, &c);
  return CML_OK;
}

bool cmlc_fused_has_member(const cmlc_fused_t* fused, const cml_ir_node_t* node) {
  for (uint32_t i = 0; fused && i < fused->op_count; ++i) {
    if (fused->ops[i].node == node) return true;
  }
  return false;
}

bool cmlc_fused_reduce_supported(const cml_module_t* module, const cml_ir_node_t* reduce,
                                 const cmlc_options_t* options) {
  return cmlc__rd_produced_ok(module, reduce, options);
}

bool cmlc_fused_attach_reduce(cmlc_fused_t* fused, const cml_module_t* module,
                              const cml_ir_node_t* reduce, const cmlc_options_t* options) {
  // (f32 or f64: cmlc__rd_produced_ok checks the reduction's dtypes, the group's output is its
  // input.)
  if (!cmlc__rd_produced_ok(module, reduce, options)) return false;
  fused->module = module;
  fused->reduce = reduce;
  fused->in_place_input = -1;
  const int32_t rank = module->values[reduce->inputs[0]].shape.rank;
  bool last_reduced = rank > 0 && reduce->attrs->axis_count == 0;  // (every axis)
  for (int32_t k = 0; k < reduce->attrs->axis_count; ++k) {
    last_reduced |= reduce->attrs->axes[k] == rank - 1;
  }
  size_t bytes = 0;
  for (uint32_t j = 0; j < fused->input_count; ++j) {
    if (fused->mode[j] == CMLC_FUSED_FULL) {
      bytes = cmlc_size_add(bytes, cmlc_size_of(fused->n, fused->in_size[j]));  // saturating
    }
  }
  fused->prefetch = rank > 0 && !last_reduced && bytes >= CMLC_FUSED_PREFETCH_BYTES;
  return true;
}

size_t cmlc_fused_scratch(const cmlc_fused_t* fused, const cmlc_options_t* options) {
  return fused->reduce ? cmlc__rd_produced_scratch(fused->module, fused->reduce, options) : 0;
}
