// SPDX-License-Identifier: Apache-2.0
// src/backends/c/plan.c: compiling a module for the C backend (planning it once).
//
// For each function that can run (main, and every function a live Call, While, If or Sort
// node refers to, transitively):
//   1. schedule: creation order is topological; nodes whose values reach no output are dropped
//      (no op has side effects today);
//   2. optimize (opt.c): constant folding and common-subexpression elimination (not in
//      reference mode), liveness again, then elementwise fusion (fusion option);
//   3. pick each node's implementation: the engine's own ops first (Parameter, Constant,
//      CapturedValue, aliasing ops, Call, While, If, Sort), fused loops (loop_fusion.c), then the
//      kernel groups in order: elementwise, reduce, movement, index, window, linalg, special;
//   4. lay out one arena segment per function: every intermediate value gets an offset, memory
//      is reused after a value's last use, and an output takes its input's slot in place when
//      the kernel allows it and the input dies there. Aliasing ops (Identity, Reshape, Bitcast,
//      barriers) and merged nodes copy no data: their outputs use their sources' storage.
//      Folded values are constants the executable owns; values inside fused loops get no
//      storage at all. In main, values that are returned are written straight into the output
//      buffers;
//   5. one-element Add/Sub/Mul, comparisons and logical ops become SCALAR steps (exec.c runs
//      them inline; not in reference mode).
// Functions get disjoint segments: no function can be active twice at once (a callee must be
// returned before it is called, so calls cannot recurse).
//
// Thread-safety: runs once per compile; the plan is immutable afterwards.
#include <stdio.h>
#include <string.h>

#include "backends/c/engine_internal.h"

#define CMLC_UNUSED UINT32_MAX

// Sizes and offsets saturate at SIZE_MAX instead of wrapping: on wasm32 (32-bit size_t) a
// value of 4 GiB or more (cml_shape_byte_size gives SIZE_MAX) rounded to 0 and arena offsets
// wrapped, so a too-small arena was allocated and the kernels wrote past it. Saturated, the
// arena's size is SIZE_MAX and its allocation fails with RESOURCE_EXHAUSTED before any kernel
// runs. (64-bit sizes never get near: element counts stop at 2^55.) The helpers are
// cmlc_size_add and cmlc_size_align (cmlc.h).

//===--- arena layout: best-fit free list with coalescing ---===//

static size_t cmlc_layout_alloc(cmlc_layout_t* l, size_t size) {
  size_t best = SIZE_MAX;
  for (size_t i = 0; i < l->count; ++i) {
    if (l->free_blocks[i].size >= size &&
        (best == SIZE_MAX || l->free_blocks[i].size < l->free_blocks[best].size)) {
      best = i;
    }
  }
  if (best != SIZE_MAX) {
    cmlc_block_t* b = &l->free_blocks[best];
    size_t offset = b->offset;
    b->offset += size;
    b->size -= size;
    if (b->size == 0) {
      memmove(b, b + 1, (l->count - best - 1) * sizeof *b);
      --l->count;
    }
    return offset;
  }
  // Grow the arena, starting inside a free block that ends at the top.
  if (l->count > 0) {
    cmlc_block_t* last = &l->free_blocks[l->count - 1];
    if (last->offset + last->size == l->top) {
      size_t offset = last->offset;
      --l->count;
      l->top = cmlc_size_add(offset, size);
      return offset;
    }
  }
  size_t offset = l->top;
  l->top = cmlc_size_add(l->top, size);
  return offset;
}

static void cmlc_layout_free(cmlc_layout_t* l, size_t offset, size_t size) {
  if (size == 0) return;
  // The first block at or past |offset| (blocks are sorted by offset): a binary search, as a
  // wide graph keeps 10^5 blocks free at once.
  size_t i = 0, hi = l->count;
  while (i < hi) {
    const size_t mid = i + (hi - i) / 2;
    if (l->free_blocks[mid].offset < offset) {
      i = mid + 1;
    } else {
      hi = mid;
    }
  }
  bool merge_prev = i > 0 && l->free_blocks[i - 1].offset + l->free_blocks[i - 1].size == offset;
  bool merge_next = i < l->count && offset + size == l->free_blocks[i].offset;
  if (merge_prev && merge_next) {
    l->free_blocks[i - 1].size += size + l->free_blocks[i].size;
    memmove(&l->free_blocks[i], &l->free_blocks[i + 1],
            (l->count - i - 1) * sizeof *l->free_blocks);
    --l->count;
  } else if (merge_prev) {
    l->free_blocks[i - 1].size += size;
  } else if (merge_next) {
    l->free_blocks[i].offset = offset;
    l->free_blocks[i].size += size;
  } else {
    // capacity is sized for the worst case (one block per live allocation, plus one).
    memmove(&l->free_blocks[i + 1], &l->free_blocks[i], (l->count - i) * sizeof *l->free_blocks);
    l->free_blocks[i] = (cmlc_block_t){offset, size};
    ++l->count;
  }
}

//===--- planner state ---===//

static size_t cmlc_plan_bytes(size_t count, size_t size) {
  size_t bytes = count * size;
  return bytes ? bytes : 1;
}

static void* cmlc_plan_calloc(cml_allocator_t alloc, size_t count, size_t size) {
  size_t bytes = cmlc_plan_bytes(count, size);
  void* p = cml_allocator_malloc(alloc, bytes, CMLC_ALIGNMENT);
  if (p) memset(p, 0, bytes);
  return p;
}

static void cmlc_plan_free(cml_allocator_t alloc, const void* p, size_t count, size_t size) {
  if (p) cml_allocator_free(alloc, (void*)p, cmlc_plan_bytes(count, size));
}

// Ops whose outputs alias their inputs (MAY_ALIAS_INPUT in ops.def), with the per-op condition.
static bool cmlc_plan_is_alias_op(const cml_module_t* m, const cml_ir_node_t* n) {
  if (!(cml_op_traits(n->op) & CML_OP_TRAIT_MAY_ALIAS_INPUT)) return false;
  switch (n->op) {
    case CML_OP_SCHEDULING_BARRIER:
      return n->input_count >= 1;
    case CML_OP_BITCAST:
      // Little-endian reinterpretation of the same bytes.
      return n->input_count == 1 && cml_shape_byte_size(&m->values[n->inputs[0]].shape) ==
                                        cml_shape_byte_size(&m->values[n->first_output].shape);
    default:
      return true;
  }
}

static uint32_t cmlc_plan_function_ref_count(cml_op_t op) { return cml_op_callee_count(op); }

// Formats "(Float32, Int32) -> (Bool)" for a node's operand and result dtypes.
static void cmlc_plan_format_dtypes(const cml_module_t* m, const cml_ir_node_t* n, char* text,
                                    size_t size) {
  size_t used = 0;
  text[0] = '\0';
#define CMLC_APPEND(...)                                        \
  do {                                                          \
    if (used < size) {                                          \
      int w_ = snprintf(text + used, size - used, __VA_ARGS__); \
      if (w_ > 0) used += (size_t)w_;                           \
    }                                                           \
  } while (0)
  CMLC_APPEND("(");
  for (uint32_t i = 0; i < n->input_count && i < 8; ++i) {
    CMLC_APPEND("%s%s", i ? ", " : "", cml_dtype_name(m->values[n->inputs[i]].shape.dtype));
  }
  if (n->input_count > 8) CMLC_APPEND(", ...");
  CMLC_APPEND(") -> (");
  for (uint32_t i = 0; i < n->output_count && i < 8; ++i) {
    CMLC_APPEND("%s%s", i ? ", " : "", cml_dtype_name(m->values[n->first_output + i].shape.dtype));
  }
  if (n->output_count > 8) CMLC_APPEND(", ...");
  CMLC_APPEND(")");
#undef CMLC_APPEND
}

// Finds the implementation of a kernel node.
cml_status_t cmlc_plan_lookup(cmlc_planner_t* p, const cml_ir_node_t* n, cmlc_kernel_entry_t* out) {
  const cmlc_options_t* o = &p->backend->options;
  const cml_module_t* m = p->module;
  memset(out, 0, sizeof *out);
  out->in_place_input = -1;
  if (n->op == CML_OP_SORT) {
    out->run = cmlc_sort_run;
    out->scratch = cmlc_sort_scratch;
    out->prepare = cmlc_sort_prepare;
    out->prepare_always = true;
    return CML_OK;
  }
  cmlc_kernel_entry_t e = {.in_place_input = -1};
  if (cmlc_dispatch_lookup(m, n, o, &e) && e.run) {  // the op's group (dispatch.c)
    if (e.in_place_input >= (int)n->input_count) e.in_place_input = -1;
    *out = e;
    return CML_OK;
  }
  char dtypes[256];
  cmlc_plan_format_dtypes(m, n, dtypes, sizeof dtypes);
  char shape0[128] = "";
  if (n->input_count > 0) cml_shape_format(&m->values[n->inputs[0]].shape, shape0, sizeof shape0);
  return cml_status_make(CML_STATUS_UNIMPLEMENTED, "c backend: no kernel for %s with %s%s%s",
                         cml_op_name(n->op), dtypes, shape0[0] ? ", operand 0 " : "", shape0);
}

// The scalar fast-path code of a kernel node (exec.c runs it inline), or 0: every operand and
// result holds one element, the op and dtype are in the small set exec.c implements, and the
// backend is not in reference mode (the oracle keeps running the kernels).
static uint16_t cmlc_plan_scalar_code(const cmlc_planner_t* p, const cml_ir_node_t* n) {
  const cml_module_t* m = p->module;
  if (p->backend->options.reference || n->output_count != 1 || n->input_count < 1 ||
      n->input_count > 2) {
    return 0;
  }
  cmlc_scalar_op_t op = CMLC_SCALAR_NONE;
  switch (n->op) {
    case CML_OP_ADD:
      op = CMLC_SCALAR_ADD;
      break;
    case CML_OP_SUB:
      op = CMLC_SCALAR_SUB;
      break;
    case CML_OP_MUL:
      op = CMLC_SCALAR_MUL;
      break;
    case CML_OP_DIV:
      op = CMLC_SCALAR_DIV;
      break;
    case CML_OP_REM:
      op = CMLC_SCALAR_REM;
      break;
    case CML_OP_MAX:
      op = CMLC_SCALAR_MAX;
      break;
    case CML_OP_MIN:
      op = CMLC_SCALAR_MIN;
      break;
    case CML_OP_EQUAL:
      op = CMLC_SCALAR_EQ;
      break;
    case CML_OP_NOT_EQUAL:
      op = CMLC_SCALAR_NE;
      break;
    case CML_OP_LESS_THAN:
      op = CMLC_SCALAR_LT;
      break;
    case CML_OP_LESS_OR_EQUAL:
      op = CMLC_SCALAR_LE;
      break;
    case CML_OP_GREATER_THAN:
      op = CMLC_SCALAR_GT;
      break;
    case CML_OP_GREATER_OR_EQUAL:
      op = CMLC_SCALAR_GE;
      break;
    case CML_OP_LOGICAL_AND:
      op = CMLC_SCALAR_LAND;
      break;
    case CML_OP_LOGICAL_OR:
      op = CMLC_SCALAR_LOR;
      break;
    case CML_OP_LOGICAL_XOR:
      op = CMLC_SCALAR_LXOR;
      break;
    case CML_OP_LOGICAL_NOT:
      op = CMLC_SCALAR_LNOT;
      break;
    default:
      return 0;
  }
  const bool unary = op == CMLC_SCALAR_LNOT;
  if (n->input_count != (unary ? 1u : 2u)) return 0;
  const cml_dtype_t dtype = m->values[n->inputs[0]].shape.dtype;
  for (uint32_t k = 0; k < n->input_count; ++k) {
    const cml_shape_t* s = &m->values[n->inputs[k]].shape;
    if (s->dtype != dtype || cml_shape_element_count(s) != 1) return 0;
  }
  const cml_shape_t* out = &m->values[n->first_output].shape;
  if (cml_shape_element_count(out) != 1) return 0;
  const bool compare = op >= CMLC_SCALAR_EQ && op <= CMLC_SCALAR_GE;
  const bool logical = op >= CMLC_SCALAR_LAND;
  if (out->dtype != (compare ? CML_DTYPE_BOOL : dtype)) return 0;
  cmlc_scalar_type_t type;
  switch (dtype) {
    case CML_DTYPE_I32:
      type = CMLC_SCALAR_I32;
      break;
    case CML_DTYPE_I64:
      type = CMLC_SCALAR_I64;
      break;
    case CML_DTYPE_U32:
      type = CMLC_SCALAR_U32;
      break;
    case CML_DTYPE_U64:
      type = CMLC_SCALAR_U64;
      break;
    case CML_DTYPE_F32:
      type = CMLC_SCALAR_F32;
      break;
    case CML_DTYPE_F64:
      type = CMLC_SCALAR_F64;
      break;
    case CML_DTYPE_BOOL:
      type = CMLC_SCALAR_BOOL;
      break;
    default:
      return 0;
  }
  // Bool takes comparisons and logical ops; numbers take arithmetic and comparisons (integers
  // Max and Min too: the float ones keep their NaN and signed-zero rules in the kernels).
  if ((type == CMLC_SCALAR_BOOL) != logical && !(compare && type == CMLC_SCALAR_BOOL)) return 0;
  if ((op == CMLC_SCALAR_MAX || op == CMLC_SCALAR_MIN) &&
      (type == CMLC_SCALAR_F32 || type == CMLC_SCALAR_F64)) {
    return 0;
  }
  return (uint16_t)(op * CMLC_SCALAR_TYPES + type);
}

// Steps whose operands and results total this many bytes or more read the clock before they
// run when a deadline is set (the ~20-50 ns read is small next to their work).
#define CMLC_HEAVY_STEP_BYTES 16384

static void cmlc_plan_queue(cmlc_planner_t* p, uint32_t function, uint32_t* queue_count) {
  if (function >= p->module->function_count || p->queued[function]) return;
  p->queued[function] = true;
  p->queue[(*queue_count)++] = function;
}

// Marks a use of value |v| at |pos| (on its storage root).
static void cmlc_plan_use(cmlc_planner_t* p, uint32_t v, uint32_t pos) {
  uint32_t r = p->root[v];
  if (p->last_use[r] == CMLC_UNUSED || p->last_use[r] < pos) p->last_use[r] = pos;
}

// Frees the block of root |r| if it owns one and it was not freed yet.
static void cmlc_plan_release(cmlc_planner_t* p, uint32_t r) {
  cmlc_value_plan_t* vp = &p->exe->values[r];
  if (p->released[r] || vp->storage != CMLC_STORAGE_ARENA) return;
  p->released[r] = true;
  cmlc_layout_free(&p->layout, vp->offset, vp->size);
}

// The values a scheduled node reads when it runs (after merging and fusion).
typedef struct cmlc_plan_inputs_t {
  const uint32_t* list;  // NULL: |first| .. |first| + |count| - 1
  uint32_t first, count;
} cmlc_plan_inputs_t;

static cmlc_plan_inputs_t cmlc_plan_inputs(const cmlc_planner_t* p, uint32_t ni) {
  const cml_module_t* m = p->module;
  const cml_ir_node_t* n = cmlc_plan_node(p->exe, ni);
  cmlc_plan_inputs_t in = {n->inputs, 0, n->input_count};
  switch (p->node_state[ni]) {
    case CMLC_NODE_MERGED:
      in.list = NULL;
      in.first = m->nodes[p->node_link[ni]].first_output;
      in.count = n->output_count;
      break;
    case CMLC_NODE_FUSED_ROOT: {
      const cmlc_fused_t* fused = p->exe->fused_of[ni];
      in.list = cmlc_fused_inputs(fused);
      in.count = cmlc_fused_input_count(fused);
      break;
    }
    case CMLC_NODE_FOLDED:
    case CMLC_NODE_FUSED_INNER:
    case CMLC_NODE_SEGMENTED:
      in.list = NULL;
      in.count = 0;
      break;
    default:
      if (p->exe->parts_of && p->exe->parts_of[ni]) {  // operands read in parts
        in.list = p->exe->parts_of[ni]->values;
        in.count = p->exe->parts_of[ni]->count;
      }
      break;
  }
  return in;
}

static uint32_t cmlc_plan_input_at(const cmlc_plan_inputs_t* in, uint32_t k) {
  return in->list ? in->list[k] : in->first + k;
}

// Liveness: marks the nodes whose values reach the outputs of |fi| (through what actually
// runs: a folded node needs nothing, a merged one the node it reuses) and queues callees.
static cml_status_t cmlc_plan_mark_live(cmlc_planner_t* p, uint32_t fi, uint32_t* queue_count) {
  const cml_module_t* m = p->module;
  const cml_ir_function_t* f = &m->functions[fi];
  for (uint32_t i = 0; i < f->node_count; ++i) p->needed[f->nodes[i]] = false;
  for (uint32_t v = 0; v < f->output_count; ++v) {
    p->needed[m->values[f->outputs[v]].node] = true;
  }
  for (uint32_t i = f->node_count; i-- > 0;) {
    const uint32_t ni = f->nodes[i];
    const cml_ir_node_t* n = cmlc_plan_node(p->exe, ni);
    if (!p->needed[ni]) continue;
    if (p->node_state[ni] == CMLC_NODE_FOLDED) continue;
    if (p->node_state[ni] == CMLC_NODE_MERGED) {
      p->needed[p->node_link[ni]] = true;
      continue;
    }
    for (uint32_t k = 0; k < n->input_count; ++k) p->needed[m->values[n->inputs[k]].node] = true;
    for (uint32_t k = 0; k < cmlc_plan_function_ref_count(n->op); ++k) {
      uint32_t callee = n->attrs->functions[k];
      if (callee >= m->function_count) {
        return cml_status_make(CML_STATUS_INTERNAL, "c backend: %s refers to function %u of %u",
                               cml_op_name(n->op), callee, m->function_count);
      }
      const cml_ir_function_t* cf = &m->functions[callee];
      for (uint32_t c = 0; c < cf->capture_count; ++c) {
        p->needed[m->values[cf->captures_outer[c]].node] = true;
      }
      cmlc_plan_queue(p, callee, queue_count);
    }
  }
  return CML_OK;
}

// Runs |step|'s entry.prepare when some input of |n| is a constant (or always, with
// entry.prepare_always): the data goes into a block of the executable's folded storage and
// reaches every run as args->prepared.
static cml_status_t cmlc_plan_prepare(cmlc_planner_t* p, const cml_ir_node_t* n,
                                      cmlc_step_t* step) {
  enum { kMaxInputs = 8 };
  if (n->input_count > kMaxInputs) return CML_OK;
  const void* consts[kMaxInputs] = {0};
  bool any = false;
  for (uint32_t k = 0; k < n->input_count; ++k) {
    consts[k] = p->value_data[n->inputs[k]];
    any |= consts[k] != NULL;
  }
  if (!any && !step->entry.prepare_always) return CML_OK;
  const cmlc_options_t* o = &p->backend->options;
  const size_t bytes = step->entry.prepare(p->module, n, o, consts, NULL);
  if (bytes == 0) return CML_OK;
  const size_t block_bytes = cmlc_size_add(CMLC_ALIGNMENT, cmlc_size_align(bytes, CMLC_ALIGNMENT));
  cmlc_folded_t* block = cml_allocator_malloc(p->alloc, block_bytes, CMLC_ALIGNMENT);
  if (!block) {
    char text[128];
    return cml_status_make(
        CML_STATUS_RESOURCE_EXHAUSTED,
        "c backend: cannot allocate the %zu bytes %s %s prepares at compile time", block_bytes,
        cml_op_name(n->op),
        cml_shape_format(&p->module->values[n->first_output].shape, text, sizeof text));
  }
  block->bytes = block_bytes;
  void* data = (uint8_t*)block + CMLC_ALIGNMENT;
  if (step->entry.prepare(p->module, n, o, consts, data) != bytes) {
    cml_allocator_free(p->alloc, block, block_bytes);  // the kernel changed its mind: run as is
    return CML_OK;
  }
  block->next = p->exe->folded;
  p->exe->folded = block;
  step->prepared = data;
  ++p->exe->stats.prepared;
  return CML_OK;
}

// Concatenate operands computed in place (fusion option only). When every axis before a
// Concatenate's axis has size 1, each operand is one contiguous run of the output; an operand
// that nothing reads after the Concatenate (its other readers run before it: an optimizer's
// new moments, returned together and read by the update), that is not returned or captured,
// produced by a kernel or fused step of the same function, then has
// its producer write straight into that run: its storage becomes a window of the
// Concatenate's output (an offset into the output's arena block, which is allocated when the
// first such producer runs; or, for a main output, PART of the output buffer), and the
// Concatenate kernel skips the runs already in place. Runs must start and end on
// CMLC_ALIGNMENT boundaries (kernels may store whole aligned vectors up to the rounded size of
// their output). Fills p->place_parent / place_offset for function |fi|.
static cml_status_t cmlc_plan_place_concats(cmlc_planner_t* p, uint32_t fi) {
  const cml_module_t* m = p->module;
  const cml_ir_function_t* f = &m->functions[fi];
  cmlc_executable_t* exe = p->exe;
  // Most functions (closures above all) have no Concatenate: nothing to place, and no
  // module-sized array to allocate for each of them.
  bool any = false;
  for (uint32_t i = 0; i < f->node_count && !any; ++i) {
    any = cmlc_plan_node(exe, f->nodes[i])->op == CML_OP_CONCATENATE;
  }
  if (!any) return CML_OK;
  bool* pinned = cmlc_plan_calloc(p->alloc, m->value_count, sizeof *pinned);
  if (!pinned) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  // Roots that closures capture or the function returns (read after it: never placed).
  for (uint32_t i = 0; i < f->node_count; ++i) {
    const uint32_t ni = f->nodes[i];
    if (!p->needed[ni] || p->node_state[ni] != CMLC_NODE_PLAIN) continue;
    const cml_ir_node_t* n = &m->nodes[ni];
    for (uint32_t k = 0; k < cmlc_plan_function_ref_count(n->op); ++k) {
      const cml_ir_function_t* cf = &m->functions[n->attrs->functions[k]];
      for (uint32_t c = 0; c < cf->capture_count; ++c)
        pinned[p->root[cf->captures_outer[c]]] = true;
    }
  }
  for (uint32_t o = 0; o < f->output_count; ++o) pinned[p->root[f->outputs[o]]] = true;
  for (uint32_t i = 0; i < f->node_count; ++i) {
    const uint32_t ni = f->nodes[i];
    const cml_ir_node_t* n = cmlc_plan_node(exe, ni);
    if (!p->needed[ni] || p->node_state[ni] != CMLC_NODE_PLAIN || n->op != CML_OP_CONCATENATE ||
        (exe->parts_of && exe->parts_of[ni])) {
      continue;
    }
    const uint32_t cv = n->first_output;
    const cml_shape_t* os = &m->values[cv].shape;
    const uint8_t storage = exe->values[cv].storage;
    if (p->root[cv] != cv || (storage != CMLC_STORAGE_NONE && storage != CMLC_STORAGE_OUTPUT)) {
      continue;
    }
    bool contiguous = true;
    for (int64_t d = 0; d < n->attrs->axis; ++d) contiguous = contiguous && os->dims[d] == 1;
    if (!contiguous) continue;
    size_t at = 0;
    for (uint32_t k = 0; k < n->input_count; ++k) {
      const uint32_t u = n->inputs[k], r = p->root[u];
      const size_t bytes = cml_shape_byte_size(&m->values[u].shape), off = at;
      at += bytes;
      // (Its last reader is the Concatenate, at position i.)
      if (bytes == 0 || off % CMLC_ALIGNMENT != 0 || bytes % CMLC_ALIGNMENT != 0 || pinned[r] ||
          p->last_use[r] != i || p->place_parent[r] ||
          exe->values[r].storage != CMLC_STORAGE_NONE || p->value_data[r] ||
          cml_shape_byte_size(&m->values[r].shape) != bytes) {
        continue;
      }
      const uint32_t pn = m->values[r].node;
      const cml_ir_node_t* producer = cmlc_plan_node(exe, pn);
      if (producer->function != fi || !p->needed[pn] ||
          (p->node_state[pn] != CMLC_NODE_PLAIN && p->node_state[pn] != CMLC_NODE_FUSED_ROOT) ||
          cmlc_plan_is_alias_op(m, producer)) {
        continue;
      }
      switch (producer->op) {
        case CML_OP_PARAMETER:
        case CML_OP_CONSTANT:
        case CML_OP_CAPTURED_VALUE:
        case CML_OP_CALL:
        case CML_OP_WHILE:
        case CML_OP_IF:
        case CML_OP_CONCATENATE:
          continue;
        default:
          break;
      }
      p->place_parent[r] = cv;
      p->place_offset[r] = off;
      ++exe->stats.concat_placed;
    }
  }
  cmlc_plan_free(p->alloc, pinned, m->value_count, sizeof *pinned);
  return CML_OK;
}

// The state elements (of the first 64) that the While body |body_fi| updates in place: body
// output i is a DynamicUpdateSlice whose operand is body parameter i (directly, or through an
// OptimizationBarrier that only the update reads), and that is the parameter's only use apart
// from DynamicSlices listed before it (no other node, output or closure capture reads it; the
// slices copy their window out before the update runs: steps run in list order). Once such an
// element lives in the node's double slot, the update can write into the half that holds it
// (the kernel skips its copy when its output is its operand) instead of copying the whole
// element into the other half every iteration: a results buffer filled row by row in a loop
// cost O(rows^2). It reads the module's nodes: a plan rewrite that made a step read the
// parameter where no node of the module does would have to count that reader here too (the
// rewrites in opt.c keep the original node naming it).
static uint64_t cmlc_plan_while_in_place(const cml_module_t* m, uint32_t body_fi, uint32_t count) {
  const cml_ir_function_t* body = &m->functions[body_fi];
  uint32_t limit = count < 64 ? count : 64;
  if (body->param_count < limit) limit = body->param_count;
  if (body->output_count < limit) limit = body->output_count;
  uint64_t mask = 0;
  for (uint32_t i = 0; i < limit; ++i) {
    const uint32_t p = body->params[i];
    const uint32_t di = m->values[body->outputs[i]].node;
    const cml_ir_node_t* d = &m->nodes[di];
    if (d->op != CML_OP_DYNAMIC_UPDATE_SLICE || d->input_count < 1) continue;
    // The update's operand is the parameter, or an OptimizationBarrier's pass-through of it
    // (which copies nothing) that only the update reads: then the barrier counts as the
    // parameter's one use, and is where the update happens.
    uint32_t last = di;  // the node of the parameter's one counted use
    if (d->inputs[0] != p) {
      const uint32_t src = d->inputs[0], bi = m->values[src].node;
      const cml_ir_node_t* bn = &m->nodes[bi];
      if (bn->op != CML_OP_OPTIMIZATION_BARRIER || bn->function != body_fi ||
          bn->inputs[src - bn->first_output] != p) {
        continue;
      }
      uint32_t src_uses = 0;
      for (uint32_t k = 0; k < body->node_count && src_uses < 2; ++k) {
        const cml_ir_node_t* x = &m->nodes[body->nodes[k]];
        for (uint32_t j = 0; j < x->input_count; ++j) src_uses += x->inputs[j] == src;
      }
      for (uint32_t o = 0; o < body->output_count; ++o) src_uses += body->outputs[o] == src;
      if (src_uses != 1) continue;
      last = bi;
    }
    // DynamicSlice reads of the element listed before that use run before it and copy the
    // window out (a loop's gradient reads a carried cotangent's row, then zeros it): they do
    // not count.
    uint32_t uses = 0;
    bool before = true;
    for (uint32_t k = 0; k < body->node_count && uses < 2; ++k) {
      const cml_ir_node_t* x = &m->nodes[body->nodes[k]];
      if (body->nodes[k] == last) before = false;
      bool read_first = before && x->op == CML_OP_DYNAMIC_SLICE && x->inputs[0] == p;
      for (uint32_t j = read_first ? 1 : 0; j < x->input_count; ++j) uses += x->inputs[j] == p;
    }
    for (uint32_t o = 0; o < body->output_count; ++o) uses += body->outputs[o] == p;
    for (uint32_t fi = 0; fi < m->function_count && uses < 2; ++fi) {
      const cml_ir_function_t* c = &m->functions[fi];
      if (c->parent != (int32_t)body_fi) continue;
      for (uint32_t j = 0; j < c->capture_count; ++j) uses += c->captures_outer[j] == p;
    }
    if (uses == 1) mask |= (uint64_t)1 << i;
  }
  return mask;
}

// Records main's PART value |v| (its pointer is set when the output buffers exist).
static cml_status_t cmlc_plan_add_out_part(cmlc_planner_t* p, uint32_t v) {
  cmlc_executable_t* exe = p->exe;
  if (!exe->out_parts) {
    exe->out_parts = cmlc_plan_calloc(p->alloc, p->module->value_count, sizeof *exe->out_parts);
    if (!exe->out_parts) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  }
  exe->out_parts[exe->out_part_count++] = v;
  return CML_OK;
}

static cml_status_t cmlc_plan_function(cmlc_planner_t* p, uint32_t fi, uint32_t* queue_count) {
  const cml_module_t* m = p->module;
  const cml_ir_function_t* f = &m->functions[fi];
  cmlc_executable_t* exe = p->exe;
  cmlc_function_plan_t* fp = &exe->functions[fi];
  const uint32_t end = f->node_count;  // position of "returned"
  fp->planned = true;

  for (uint32_t i = 0; i < f->node_count; ++i) {
    uint32_t ni = f->nodes[i];
    if (ni >= m->node_count) {
      return cml_status_make(CML_STATUS_INTERNAL, "c backend: function %u lists node %u of %u", fi,
                             ni, m->node_count);
    }
    p->needed[ni] = false;
    const cml_ir_node_t* n = &m->nodes[ni];
    for (uint32_t k = 0; k < n->input_count; ++k) {
      uint32_t in = n->inputs[k];
      if (in == 0 || in >= m->value_count || m->nodes[m->values[in].node].function != fi) {
        return cml_status_make(CML_STATUS_INTERNAL,
                               "c backend: %s in function %u reads value %u of another function",
                               cml_op_name(n->op), fi, in);
      }
    }
    p->node_state[ni] = CMLC_NODE_PLAIN;
    p->node_link[ni] = 0;
    for (uint32_t o = 0; o < n->output_count; ++o) p->value_data[n->first_output + o] = NULL;
    if (n->op == CML_OP_CONSTANT) {
      p->value_data[n->first_output] = n->data ? n->data : (const void*)cmlc_empty_storage;
    }
  }

  // Dead-code elimination, then folding, CSE and transpose folding, then liveness again
  // (folded nodes need no inputs, merged ones only the node they reuse, dots reading through a
  // Transpose not the Transpose), then fusion.
  CML_RETURN_IF_ERROR(cmlc_plan_mark_live(p, fi, queue_count));
  CML_RETURN_IF_ERROR(cmlc_opt_fold_and_merge(p, fi));
  bool folded_transposes = false, filled = false;
  CML_RETURN_IF_ERROR(cmlc_opt_fold_transposes(p, fi, &folded_transposes));
  CML_RETURN_IF_ERROR(cmlc_opt_fold_broadcast_operands(p, fi, &filled));
  if (exe->stats.folded || exe->stats.merged || folded_transposes || filled) {
    CML_RETURN_IF_ERROR(cmlc_plan_mark_live(p, fi, queue_count));
  }
  CML_RETURN_IF_ERROR(cmlc_opt_fuse(p, fi));
  CML_RETURN_IF_ERROR(cmlc_opt_segments(p, fi));

  // Storage classes and alias roots.
  uint32_t step_count = 0;
  for (uint32_t i = 0; i < f->node_count; ++i) {
    uint32_t ni = f->nodes[i];
    const cml_ir_node_t* n = &m->nodes[ni];
    for (uint32_t o = 0; o < n->output_count; ++o) {
      uint32_t v = n->first_output + o;
      p->root[v] = v;
      p->last_use[v] = CMLC_UNUSED;
      p->released[v] = false;
      exe->values[v] = (cmlc_value_plan_t){CMLC_STORAGE_NONE, 0, 0, 0, NULL, 0, 0};
    }
    if (!p->needed[ni]) continue;
    if (n->op == CML_OP_PARAMETER) {
      // The node records its position; searched only if it does not match (a linear search
      // for every parameter made compiles quadratic in the parameter count).
      uint32_t idx = n->index < f->param_count && f->params[n->index] == n->first_output
                         ? n->index
                         : UINT32_MAX;
      for (uint32_t k = 0; k < f->param_count && idx == UINT32_MAX; ++k) {
        if (f->params[k] == n->first_output) idx = k;
      }
      if (idx == UINT32_MAX) {
        return cml_status_make(CML_STATUS_INTERNAL,
                               "c backend: parameter value %u is not a parameter of function %u",
                               n->first_output, fi);
      }
      exe->values[n->first_output].storage = CMLC_STORAGE_PARAM;
      exe->values[n->first_output].index = idx;
      continue;
    }
    if (n->op == CML_OP_CAPTURED_VALUE) {
      uint32_t idx = n->index < f->capture_count && f->captures_inner[n->index] == n->first_output
                         ? n->index
                         : UINT32_MAX;
      for (uint32_t k = 0; k < f->capture_count && idx == UINT32_MAX; ++k) {
        if (f->captures_inner[k] == n->first_output) idx = k;
      }
      if (idx == UINT32_MAX) {
        return cml_status_make(CML_STATUS_INTERNAL,
                               "c backend: captured value %u is not a capture of function %u",
                               n->first_output, fi);
      }
      exe->values[n->first_output].storage = CMLC_STORAGE_CAPTURE;
      exe->values[n->first_output].index = idx;
      continue;
    }
    // Constants, folded nodes and nodes merged into constant ones.
    if (p->value_data[n->first_output]) {
      for (uint32_t o = 0; o < n->output_count; ++o) {
        exe->values[n->first_output + o].storage = CMLC_STORAGE_CONST;
        exe->values[n->first_output + o].data = p->value_data[n->first_output + o];
      }
      continue;
    }
    if (p->node_state[ni] == CMLC_NODE_FUSED_INNER || p->node_state[ni] == CMLC_NODE_SEGMENTED) {
      continue;
    }
    ++step_count;
    if (p->node_state[ni] == CMLC_NODE_MERGED) {
      uint32_t src = m->nodes[p->node_link[ni]].first_output;
      for (uint32_t o = 0; o < n->output_count; ++o) {
        uint32_t v = n->first_output + o;
        exe->values[v].storage = CMLC_STORAGE_ALIAS;
        exe->values[v].index = src + o;
        p->root[v] = p->root[src + o];
      }
    } else if (cmlc_plan_is_alias_op(m, n)) {
      uint32_t count = n->op == CML_OP_SCHEDULING_BARRIER ? 1 : n->output_count;
      if (count > n->input_count) count = n->input_count;
      for (uint32_t o = 0; o < count; ++o) {
        uint32_t v = n->first_output + o, src = n->inputs[o];
        exe->values[v].storage = CMLC_STORAGE_ALIAS;
        exe->values[v].index = src;
        p->root[v] = p->root[src];
      }
    } else if (n->op == CML_OP_WHILE) {
      // A state element the body returns unchanged (its own parameter) is the While's input
      // all along: the output aliases it instead of being copied out of the state slot at the
      // end of every execute (loops carrying read-only arrays, as exported fori_loops do).
      const cml_ir_function_t* body = &m->functions[n->attrs->functions[1]];
      for (uint32_t o = 0; o < n->output_count && o < n->input_count && o < body->param_count &&
                           o < body->output_count;
           ++o) {
        if (body->outputs[o] != body->params[o]) continue;
        uint32_t v = n->first_output + o, src = n->inputs[o];
        exe->values[v].storage = CMLC_STORAGE_ALIAS;
        exe->values[v].index = src;
        p->root[v] = p->root[src];
      }
    }
  }

  // Last uses (on roots), over what runs.
  for (uint32_t i = 0; i < f->node_count; ++i) {
    const uint32_t ni = f->nodes[i];
    const cml_ir_node_t* n = &m->nodes[ni];
    if (!p->needed[ni]) continue;
    cmlc_plan_inputs_t ins = cmlc_plan_inputs(p, ni);
    for (uint32_t k = 0; k < ins.count; ++k) cmlc_plan_use(p, cmlc_plan_input_at(&ins, k), i);
    if (p->node_state[ni] != CMLC_NODE_PLAIN) continue;
    for (uint32_t k = 0; k < cmlc_plan_function_ref_count(n->op); ++k) {
      const cml_ir_function_t* cf = &m->functions[n->attrs->functions[k]];
      for (uint32_t c = 0; c < cf->capture_count; ++c) cmlc_plan_use(p, cf->captures_outer[c], i);
    }
    // An alias keeps its root alive as long as the alias itself is used (handled by using the
    // root above); an unused alias output needs nothing.
  }
  for (uint32_t v = 0; v < f->output_count; ++v) cmlc_plan_use(p, f->outputs[v], end);

  // Main: returned values get their own output buffer when they are a kernel's result.
  if (fi == 0) {
    for (uint32_t o = 0; o < f->output_count; ++o) {
      uint32_t v = f->outputs[o], r = p->root[v];
      const cml_ir_node_t* producer = &m->nodes[m->values[r].node];
      if (!p->needed[m->values[r].node]) continue;
      if (producer->op == CML_OP_PARAMETER || producer->op == CML_OP_CONSTANT ||
          producer->op == CML_OP_CAPTURED_VALUE || producer->op == CML_OP_WHILE ||
          exe->values[r].storage == CMLC_STORAGE_ALIAS ||
          exe->values[r].storage == CMLC_STORAGE_CONST ||
          exe->values[r].storage == CMLC_STORAGE_OUTPUT) {
        continue;
      }
      if (cml_shape_byte_size(&m->values[r].shape) != cml_shape_byte_size(&m->values[v].shape) ||
          cml_shape_byte_size(&m->values[r].shape) == 0) {
        continue;
      }
      exe->values[r].storage = CMLC_STORAGE_OUTPUT;
      exe->values[r].index = o;
    }
  }

  if (exe->fused_of) CML_RETURN_IF_ERROR(cmlc_plan_place_concats(p, fi));

  fp->steps = cmlc_plan_calloc(p->alloc, step_count, sizeof *fp->steps);
  if (!fp->steps) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  fp->step_capacity = step_count;
  fp->step_count = 0;

  // Layout walk.
  p->layout.count = 0;
  p->layout.top = 0;
  uint32_t max_io = 0;
  for (uint32_t i = 0; i < f->node_count; ++i) {
    uint32_t ni = f->nodes[i];
    const cml_ir_node_t* n = cmlc_plan_node(exe, ni);
    if (!p->needed[ni]) continue;
    if (n->op == CML_OP_PARAMETER || n->op == CML_OP_CONSTANT || n->op == CML_OP_CAPTURED_VALUE ||
        p->value_data[n->first_output] || p->node_state[ni] == CMLC_NODE_FUSED_INNER ||
        p->node_state[ni] == CMLC_NODE_SEGMENTED) {
      continue;
    }
    const cmlc_plan_inputs_t ins = cmlc_plan_inputs(p, ni);
    cmlc_step_t* step = &fp->steps[fp->step_count++];
    step->node = n;
    step->entry.in_place_input = -1;
    if (p->node_state[ni] == CMLC_NODE_MERGED) {
      step->kind = CMLC_STEP_MERGED;
      step->source_node = &m->nodes[p->node_link[ni]];
    } else if (cmlc_plan_is_alias_op(m, n)) {
      step->kind = CMLC_STEP_ALIAS;
      // Outputs past the aliased ones (none today) would be dead.
    } else {
      switch (n->op) {
        case CML_OP_CALL:
          step->kind = CMLC_STEP_CALL;
          break;
        case CML_OP_WHILE:
          step->kind = CMLC_STEP_WHILE;
          step->while_in_place =
              cmlc_plan_while_in_place(m, n->attrs->functions[1], n->output_count);
          break;
        case CML_OP_IF:
          step->kind = CMLC_STEP_IF;
          break;
        default: {
          if (p->node_state[ni] == CMLC_NODE_FUSED_ROOT) {
            step->kind = CMLC_STEP_FUSED;
            step->fused = exe->fused_of[ni];
            step->entry.in_place_input = cmlc_fused_in_place_input(step->fused);
          } else {
            step->kind = CMLC_STEP_KERNEL;
            CML_RETURN_IF_ERROR(cmlc_plan_lookup(p, n, &step->entry));
            if (exe->parts_of && exe->parts_of[ni]) {
              step->inputs = exe->parts_of[ni]->values;
              step->input_count = exe->parts_of[ni]->count;
              step->input_parts = exe->parts_of[ni]->parts;
            }
          }
          break;
        }
      }
      // Outputs.
      for (uint32_t o = 0; o < n->output_count; ++o) {
        uint32_t v = n->first_output + o;
        cmlc_value_plan_t* vp = &exe->values[v];
        if (vp->storage == CMLC_STORAGE_ALIAS) continue;  // a While's unchanged element
        size_t bytes = cml_shape_byte_size(&m->values[v].shape);
        if (vp->storage == CMLC_STORAGE_OUTPUT) {
          vp->size = bytes;
          continue;
        }
        if (p->place_parent[v]) {
          // A Concatenate operand computed in place: a window of the Concatenate's output,
          // never freed on its own (cmlc_plan_place_concats).
          const uint32_t pv = p->place_parent[v];
          cmlc_value_plan_t* pp = &exe->values[pv];
          if (pp->storage == CMLC_STORAGE_OUTPUT) {
            vp->storage = CMLC_STORAGE_PART;
            vp->index = pv;
            CML_RETURN_IF_ERROR(cmlc_plan_add_out_part(p, v));
          } else {
            if (!p->place_early[pv]) {
              pp->storage = CMLC_STORAGE_ARENA;
              pp->size = cmlc_size_align(cml_shape_byte_size(&m->values[pv].shape), CMLC_ALIGNMENT);
              pp->offset = cmlc_layout_alloc(&p->layout, pp->size);
              p->place_early[pv] = true;
            }
            vp->storage = CMLC_STORAGE_ARENA;
          }
          vp->offset = (pp->storage == CMLC_STORAGE_ARENA ? pp->offset : 0) + p->place_offset[v];
          vp->size = bytes;
          p->released[v] = true;
          continue;
        }
        if (p->place_early[v]) continue;  // allocated at its first operand's producer
        if (bytes == 0 && n->op != CML_OP_WHILE) {
          vp->storage = CMLC_STORAGE_EMPTY;
          continue;
        }
        size_t size = cmlc_size_align(bytes, CMLC_ALIGNMENT);
        if (n->op == CML_OP_WHILE) {
          // Two halves, one for the state and one for the next; an element updated in place
          // needs one (cmlc_run_while: its first update writes it there, the next in place).
          const bool one = o < 64 && (step->while_in_place >> o & 1);
          size = size == 0 ? CMLC_ALIGNMENT : one ? size : cmlc_size_add(size, size);
        }
        // In place: output 0 takes the slot of a dying input (every output o that of input o,
        // for entries with in_place_each).
        int ip = step->entry.in_place_each ? (int)o : o == 0 ? step->entry.in_place_input : -1;
        if ((step->kind == CMLC_STEP_KERNEL || step->kind == CMLC_STEP_FUSED) && ip >= 0 &&
            (uint32_t)ip < ins.count) {
          uint32_t in = cmlc_plan_input_at(&ins, (uint32_t)ip), r = p->root[in];
          cmlc_value_plan_t* rp = &exe->values[r];
          bool ok = rp->storage == CMLC_STORAGE_ARENA && !p->released[r] && p->last_use[r] == i &&
                    rp->size >= size;
          for (uint32_t k = 0; ok && k < ins.count; ++k) {
            uint32_t other = cmlc_plan_input_at(&ins, k);
            // (AllReduce(g, g): operand 1 would read operand 0's sums, so in_place_each also
            // refuses the same value twice.)
            if ((int)k != ip && p->root[other] == r && (other != in || step->entry.in_place_each)) {
              ok = false;
            }
          }
          if (ok) {
            vp->storage = CMLC_STORAGE_ARENA;
            vp->offset = rp->offset;
            vp->size = rp->size;
            p->released[r] = true;  // handed over: the output now owns the block
            continue;
          }
        }
        vp->storage = CMLC_STORAGE_ARENA;
        vp->size = size;
        vp->offset = cmlc_layout_alloc(&p->layout, size);
      }
    }
    if (step->kind == CMLC_STEP_KERNEL && n->output_count > 0 &&
        cml_op_group(n->op) != CML_OPG_COLLECTIVE) {
      bool empty = true;
      for (uint32_t o = 0; o < n->output_count && empty; ++o) {
        empty = cml_shape_element_count(&m->values[n->first_output + o].shape) == 0;
      }
      step->idle = empty;
    }
    // Data prepared once from constant inputs.
    if (step->kind == CMLC_STEP_KERNEL && step->entry.prepare && !step->idle) {
      CML_RETURN_IF_ERROR(cmlc_plan_prepare(p, n, step));
    }
    // Scratch.
    if ((step->kind == CMLC_STEP_KERNEL && step->entry.scratch && !step->idle) ||
        step->kind == CMLC_STEP_FUSED) {
      step->scratch_size = step->kind == CMLC_STEP_FUSED
                               ? cmlc_fused_scratch(step->fused, &p->backend->options)
                               : step->entry.scratch(m, n, &p->backend->options);
      if (step->scratch_size) {
        size_t size = cmlc_size_align(step->scratch_size, CMLC_ALIGNMENT);
        step->scratch_offset = cmlc_layout_alloc(&p->layout, size);
        cmlc_layout_free(&p->layout, step->scratch_offset, size);
      }
    }
    // Shapes of kernel steps (of the values passed: the node's inputs, or their parts).
    if (step->kind == CMLC_STEP_KERNEL && !step->inputs) step->input_count = n->input_count;
    uint32_t io = step->input_count + n->output_count;
    if (step->kind == CMLC_STEP_KERNEL) {
      step->shapes = cmlc_plan_calloc(p->alloc, io, sizeof *step->shapes);
      if (!step->shapes) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
      for (uint32_t k = 0; k < step->input_count; ++k)
        step->shapes[k] = &m->values[cmlc_plan_input_at(&ins, k)].shape;
      for (uint32_t o = 0; o < n->output_count; ++o) {
        step->shapes[step->input_count + o] = &m->values[n->first_output + o].shape;
      }
      if (io > max_io) max_io = io;
    } else if (step->kind == CMLC_STEP_FUSED) {
      if (ins.count + 1 > max_io) max_io = ins.count + 1;
    } else if (step->kind == CMLC_STEP_WHILE) {
      if (n->output_count > max_io) max_io = n->output_count;
    }
    // Cheap one-element ops run inline; big steps read the deadline's clock before they run.
    if (step->kind == CMLC_STEP_KERNEL && step->scratch_size == 0 && !step->idle) {
      step->scalar_code = cmlc_plan_scalar_code(p, n);
      if (step->scalar_code) step->kind = CMLC_STEP_SCALAR;
    }
    {
      size_t moved = 0;
      for (uint32_t k = 0; k < ins.count; ++k) {
        moved += cml_shape_byte_size(&m->values[cmlc_plan_input_at(&ins, k)].shape);
      }
      for (uint32_t o = 0; o < n->output_count; ++o) {
        moved += cml_shape_byte_size(&m->values[n->first_output + o].shape);
      }
      step->heavy = moved >= CMLC_HEAVY_STEP_BYTES;
    }
    // Free inputs (and captures) that die here, and outputs nobody reads.
    for (uint32_t k = 0; k < ins.count; ++k) {
      uint32_t r = p->root[cmlc_plan_input_at(&ins, k)];
      if (p->last_use[r] == i) cmlc_plan_release(p, r);
    }
    if (step->kind == CMLC_STEP_CALL || step->kind == CMLC_STEP_WHILE ||
        step->kind == CMLC_STEP_IF || step->kind == CMLC_STEP_KERNEL) {
      for (uint32_t k = 0; k < cmlc_plan_function_ref_count(n->op); ++k) {
        const cml_ir_function_t* cf = &m->functions[n->attrs->functions[k]];
        for (uint32_t c = 0; c < cf->capture_count; ++c) {
          uint32_t r = p->root[cf->captures_outer[c]];
          if (p->last_use[r] == i) cmlc_plan_release(p, r);
        }
      }
    }
    for (uint32_t o = 0; o < n->output_count; ++o) {
      uint32_t v = n->first_output + o;
      if (p->root[v] == v && p->last_use[v] == CMLC_UNUSED) cmlc_plan_release(p, v);
    }
  }
  fp->arena_size = p->layout.top;
  fp->max_io = max_io;
  return CML_OK;
}

cml_status_t cmlc_plan_build(cmlc_backend_t* backend, const cml_module_t* module,
                             cmlc_executable_t* exe) {
  cml_allocator_t alloc = backend->base.allocator;
  exe->backend = backend;
  exe->module = module;
  if (module->function_count == 0 || module->value_count == 0) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "c backend: the module has no main");
  }
  // SPMD: every slot must be one of the backend's devices (the core checks this too).
  const int32_t slots = module->num_devices > 1 ? module->num_devices : 1;
  if (slots > 1 && module->distribution != CML_DISTRIBUTION_SPMD) {
    return cml_status_make(CML_STATUS_UNIMPLEMENTED,
                           "c backend: module %s runs on %d devices with distribution %d (not "
                           "SPMD); the c backend plans SPMD modules only (AutoSharding is "
                           "partitioned into SPMD first)",
                           module->name ? module->name : "", (int)slots, (int)module->distribution);
  }
  if (slots > backend->base.device_count) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "c backend: module %s runs on %d devices, but the backend has %d "
                           "(config c:devices=N)",
                           module->name ? module->name : "", (int)slots,
                           backend->base.device_count);
  }
  for (int32_t j = 0; slots > 1 && module->device_assignment && j < slots; ++j) {
    const int32_t d = module->device_assignment[j];
    if (d < 0 || d >= backend->base.device_count) {
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                             "c backend: module %s assigns device slot %d to device %d, out of "
                             "range [0, %d)",
                             module->name ? module->name : "", (int)j, (int)d,
                             backend->base.device_count);
    }
  }
  // Defense in depth: every value must have a well-formed shape (total size below 2^62 bits),
  // so that byte sizes, arena offsets and kernel index arithmetic cannot overflow.
  for (uint32_t v = 1; v < module->value_count; ++v) {
    const cml_shape_t* s = &module->values[v].shape;
    cml_shape_t check;
    cml_status_t shape_st = (s->rank < 0 || s->rank > CML_MAX_RANK)
                                ? cml_status_from_code(CML_STATUS_INVALID_ARGUMENT)
                                : cml_shape_init(&check, s->dtype, s->rank, s->dims);
    if (shape_st != CML_OK) {
      cml_status_free(shape_st);
      const cml_ir_node_t* n = &module->nodes[module->values[v].node];
      char text[256];
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                             "c backend: %s produces an invalid or too large shape %s (module %s)",
                             cml_op_name(n->op), cml_shape_format(s, text, sizeof text),
                             module->name ? module->name : "");
    }
  }
  exe->values = cmlc_plan_calloc(alloc, module->value_count, sizeof *exe->values);
  exe->functions = cmlc_plan_calloc(alloc, module->function_count, sizeof *exe->functions);
  cmlc_planner_t p;
  memset(&p, 0, sizeof p);
  p.backend = backend;
  p.module = module;
  p.exe = exe;
  p.alloc = alloc;
  p.needed = cmlc_plan_calloc(alloc, module->node_count, sizeof *p.needed);
  p.root = cmlc_plan_calloc(alloc, module->value_count, sizeof *p.root);
  p.last_use = cmlc_plan_calloc(alloc, module->value_count, sizeof *p.last_use);
  p.released = cmlc_plan_calloc(alloc, module->value_count, sizeof *p.released);
  p.queue = cmlc_plan_calloc(alloc, module->function_count, sizeof *p.queue);
  p.queued = cmlc_plan_calloc(alloc, module->function_count, sizeof *p.queued);
  // At most one free block per live allocation plus one.
  p.layout.capacity = 2 * (size_t)module->value_count + 2 * (size_t)module->node_count + 4;
  p.layout.free_blocks = cmlc_plan_calloc(alloc, p.layout.capacity, sizeof(cmlc_block_t));
  p.node_state = cmlc_plan_calloc(alloc, module->node_count, sizeof *p.node_state);
  p.node_link = cmlc_plan_calloc(alloc, module->node_count, sizeof *p.node_link);
  p.position = cmlc_plan_calloc(alloc, module->node_count, sizeof *p.position);
  p.dup = cmlc_plan_calloc(alloc, module->node_count, sizeof *p.dup);
  p.value_data = cmlc_plan_calloc(alloc, module->value_count, sizeof *p.value_data);
  p.uses = cmlc_plan_calloc(alloc, module->value_count, sizeof *p.uses);
  p.counted_by = cmlc_plan_calloc(alloc, module->value_count, sizeof *p.counted_by);
  p.place_parent = cmlc_plan_calloc(alloc, module->value_count, sizeof *p.place_parent);
  p.place_offset = cmlc_plan_calloc(alloc, module->value_count, sizeof *p.place_offset);
  p.place_early = cmlc_plan_calloc(alloc, module->value_count, sizeof *p.place_early);
  const bool fusion = backend->options.fusion && !backend->options.reference;
  if (fusion) {
    exe->fused_of = cmlc_plan_calloc(alloc, module->node_count, sizeof *exe->fused_of);
    exe->parts_of = cmlc_plan_calloc(alloc, module->node_count, sizeof *exe->parts_of);
  }
  cml_status_t st = CML_OK;
  if (!exe->values || !exe->functions || !p.needed || !p.root || !p.last_use || !p.released ||
      !p.queue || !p.queued || !p.layout.free_blocks || !p.node_state || !p.node_link ||
      !p.position || !p.value_data || !p.uses || !p.counted_by || !p.place_parent ||
      !p.place_offset || !p.place_early || (fusion && (!exe->fused_of || !exe->parts_of))) {
    st = cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  }
  uint32_t queue_count = 0;
  if (st == CML_OK) cmlc_plan_queue(&p, 0, &queue_count);
  for (uint32_t q = 0; st == CML_OK && q < queue_count; ++q) {
    st = cmlc_plan_function(&p, p.queue[q], &queue_count);
  }
  // Collective nodes get dense indices (the rendezvous counts each slot's runs of each).
  for (uint32_t ni = 0; st == CML_OK && ni < module->node_count; ++ni) {
    if (cml_op_group(module->nodes[ni].op) != CML_OPG_COLLECTIVE) continue;
    if (!exe->collective_index) {
      exe->collective_index = cmlc_plan_calloc(alloc, module->node_count, sizeof(uint32_t));
      if (!exe->collective_index) {
        st = cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
        break;
      }
      for (uint32_t k = 0; k < module->node_count; ++k) exe->collective_index[k] = UINT32_MAX;
    }
    exe->collective_index[ni] = exe->collective_count++;
  }
  if (st == CML_OK) {
    // Segments and pointer scratch.
    size_t arena = 0, pointers = module->value_count;
    for (uint32_t fi = 0; fi < module->function_count; ++fi) {
      cmlc_function_plan_t* fp = &exe->functions[fi];
      if (!fp->planned) continue;
      fp->arena_offset = arena;
      arena = cmlc_size_add(arena, cmlc_size_align(fp->arena_size, CMLC_ALIGNMENT));
      fp->io_offset = pointers;
      pointers += fp->max_io;
    }
    exe->arena_size = arena;
    exe->pointer_count = pointers;
    // Exact byte sizes and whole-arena offsets, so that execution computes neither.
    for (uint32_t v = 1; v < module->value_count; ++v) {
      cmlc_value_plan_t* vp = &exe->values[v];
      vp->bytes = cml_shape_byte_size(&module->values[v].shape);
      if (vp->storage == CMLC_STORAGE_ARENA) {
        const cml_ir_node_t* n = &module->nodes[module->values[v].node];
        vp->arena_at = exe->functions[n->function].arena_offset + vp->offset;
      }
    }
  }
  cmlc_plan_free(alloc, p.needed, module->node_count, sizeof *p.needed);
  cmlc_plan_free(alloc, p.root, module->value_count, sizeof *p.root);
  cmlc_plan_free(alloc, p.last_use, module->value_count, sizeof *p.last_use);
  cmlc_plan_free(alloc, p.released, module->value_count, sizeof *p.released);
  cmlc_plan_free(alloc, p.queue, module->function_count, sizeof *p.queue);
  cmlc_plan_free(alloc, p.queued, module->function_count, sizeof *p.queued);
  cmlc_plan_free(alloc, p.layout.free_blocks, p.layout.capacity, sizeof(cmlc_block_t));
  cmlc_plan_free(alloc, p.node_state, module->node_count, sizeof *p.node_state);
  cmlc_plan_free(alloc, p.position, module->node_count, sizeof *p.position);
  cmlc_plan_free(alloc, p.dup, module->node_count, sizeof *p.dup);
  cmlc_plan_free(alloc, p.node_link, module->node_count, sizeof *p.node_link);
  cmlc_plan_free(alloc, (const void*)p.value_data, module->value_count, sizeof *p.value_data);
  cmlc_plan_free(alloc, p.uses, module->value_count, sizeof *p.uses);
  cmlc_plan_free(alloc, p.counted_by, module->value_count, sizeof *p.counted_by);
  cmlc_plan_free(alloc, p.place_parent, module->value_count, sizeof *p.place_parent);
  cmlc_plan_free(alloc, p.place_offset, module->value_count, sizeof *p.place_offset);
  cmlc_plan_free(alloc, p.place_early, module->value_count, sizeof *p.place_early);
  return st;
}

void cmlc_plan_deinit(cmlc_executable_t* exe) {
  if (!exe->backend || !exe->module) return;
  cml_allocator_t alloc = exe->backend->base.allocator;
  const cml_module_t* m = exe->module;
  if (exe->functions) {
    for (uint32_t fi = 0; fi < m->function_count; ++fi) {
      cmlc_function_plan_t* fp = &exe->functions[fi];
      if (!fp->steps) continue;
      for (uint32_t s = 0; s < fp->step_count; ++s) {
        const cmlc_step_t* step = &fp->steps[s];
        cmlc_plan_free(alloc, step->shapes, step->input_count + step->node->output_count,
                       sizeof *step->shapes);
      }
      cmlc_plan_free(alloc, fp->steps, fp->step_capacity, sizeof *fp->steps);
    }
    cmlc_plan_free(alloc, exe->functions, m->function_count, sizeof *exe->functions);
  }
  cmlc_plan_free(alloc, exe->values, m->value_count, sizeof *exe->values);
  cmlc_plan_free(alloc, exe->out_parts, m->value_count, sizeof *exe->out_parts);
  exe->out_parts = NULL;
  exe->out_part_count = 0;
  if (exe->fused_of) {
    for (uint32_t ni = 0; ni < m->node_count; ++ni) cmlc_fused_destroy(alloc, exe->fused_of[ni]);
    cmlc_plan_free(alloc, exe->fused_of, m->node_count, sizeof *exe->fused_of);
  }
  if (exe->parts_of) {
    for (uint32_t ni = 0; ni < m->node_count; ++ni) {
      if (exe->parts_of[ni]) cml_allocator_free(alloc, exe->parts_of[ni], exe->parts_of[ni]->bytes);
    }
    cmlc_plan_free(alloc, exe->parts_of, m->node_count, sizeof *exe->parts_of);
  }
  while (exe->folded) {
    cmlc_folded_t* next = exe->folded->next;
    cml_allocator_free(alloc, exe->folded, exe->folded->bytes);
    exe->folded = next;
  }
  cmlc_plan_free(alloc, exe->collective_index, m->node_count, sizeof(uint32_t));
  if (exe->node_view) {
    cml_allocator_free(alloc, exe->node_view, m->node_count * sizeof *exe->node_view);
  }
  exe->node_view = NULL;
  exe->functions = NULL;
  exe->values = NULL;
  exe->fused_of = NULL;
  exe->parts_of = NULL;
  exe->collective_index = NULL;
  exe->collective_count = 0;
}
