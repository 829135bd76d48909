// SPDX-License-Identifier: Apache-2.0
// src/backends/c/opt.c: the C backend's compile-time optimizations, run by the planner on each
// function before it lays out memory:
//   - constant folding: a pure node whose inputs are all constants is evaluated once, here,
//     with the kernel that would run it, and its results become constants the executable owns
//     (at most CMLC_OPT_FOLD_MAX_BYTES per node, so that big broadcasts stay lazy). Aliasing
//     ops of constants (Reshape, Identity, same-size Bitcast) just point at the data.
//   - common-subexpression elimination: a pure node identical to an earlier one (same op,
//     same inputs after merging, same attribute bytes, same output shapes; Constants: same
//     bytes) reuses that node's outputs.
//   - transpose folding: a Dot/DotGeneral reads the operand of a Transpose that only dots
//     read (the GEMM packs through any axis layout), and the Transpose no longer runs.
//   - elementwise fusion (fusion option only): single-use chains and trees of elementwise ops
//     become one loop over the output (loop_fusion.c).
//   - segmented operands (fusion option only): a Concatenate along the key axis feeding only
//     the k and/or v of a native FusedScaledDotProductAttention is not run; the kernel reads
//     its operands in place (a KV cache and the new keys, without copying the cache).
// Folding and CSE never change results (the same kernels compute the same values once);
// reference mode turns everything off, so that it stays the plain oracle. Barriers, RNG,
// control flow and collectives are never folded or merged.
//
// Thread-safety: runs inside one compile.
#include <string.h>

#include "backends/c/engine_internal.h"
#include "backends/c/kernels/generic/fused_attention.h"

enum {
  CMLC_OPT_FOLD_MAX_BYTES = 1 << 20,
  CMLC_OPT_FOLD_MAX_INPUTS = 64,
  CMLC_OPT_CSE_MAX_CONST_BYTES = 1 << 16,
  CMLC_OPT_PIN = 1 << 20,  // "used outside any fused loop" (returned, captured)
  CMLC_OPT_MAX_GROUP = 32,
};

// Saturating (a SIZE_MAX size stays SIZE_MAX: on wasm32 rounding it up gave 0).
static size_t cmlc_opt_round(size_t n) { return cmlc_size_align(n, CMLC_ALIGNMENT); }

// Ops CSE may merge and folding may evaluate: their results depend on nothing but their inputs
// and attributes (the FOLDABLE trait of ops.def).
static bool cmlc_opt_is_pure(cml_op_t op) {
  return (cml_op_traits(op) & CML_OP_TRAIT_FOLDABLE) != 0;
}

// The value standing for |v| after merging (the first node's output).
static uint32_t cmlc_opt_canon(const cmlc_planner_t* p, uint32_t v) {
  const cml_ir_value_t* val = &p->module->values[v];
  if (p->node_state[val->node] == CMLC_NODE_MERGED) {
    return p->module->nodes[p->node_link[val->node]].first_output + val->output;
  }
  return v;
}

//===--- CSE hash table ---===//

typedef struct cmlc_opt_table_t {
  uint32_t* slots;  // node index + 1, 0 = empty
  uint64_t* hashes;
  size_t mask;
} cmlc_opt_table_t;

static uint64_t cmlc_opt_mix(uint64_t h, const void* data, size_t size) {
  const uint8_t* b = (const uint8_t*)data;
  for (size_t i = 0; i < size; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

// The same over whole 64-bit words (then the tail bytes): the attributes are about 1.5 KiB per
// node, and hashing them a byte at a time was most of the compile time of large modules.
static uint64_t cmlc_opt_mix_words(uint64_t h, const void* data, size_t size) {
  const uint8_t* b = (const uint8_t*)data;
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    uint64_t w;
    memcpy(&w, b + i, sizeof w);
    h = (h ^ w) * 1099511628211ull;
    h ^= h >> 29;
  }
  return cmlc_opt_mix(h, b + i, size - i);
}

static uint64_t cmlc_opt_hash(const cmlc_planner_t* p, const cml_ir_node_t* n) {
  const cml_module_t* m = p->module;
  uint64_t h = 14695981039346656037ull;
  uint32_t head[3] = {(uint32_t)n->op, n->input_count, n->output_count};
  h = cmlc_opt_mix(h, head, sizeof head);
  for (uint32_t k = 0; k < n->input_count; ++k) {
    uint32_t v = cmlc_opt_canon(p, n->inputs[k]);
    h = cmlc_opt_mix(h, &v, sizeof v);
  }
  for (uint32_t o = 0; o < n->output_count; ++o) {
    const cml_shape_t* s = &m->values[n->first_output + o].shape;
    h = cmlc_opt_mix(h, &s->dtype, sizeof s->dtype);
    h = cmlc_opt_mix(h, s->dims, sizeof(int64_t) * (size_t)s->rank);
  }
  if (n->op == CML_OP_CONSTANT) {
    h = cmlc_opt_mix_words(h, n->data, n->data ? n->data_size : 0);
  } else {
    h = cmlc_opt_mix_words(h, n->attrs, sizeof *n->attrs);
  }
  return h;
}

static bool cmlc_opt_same(const cmlc_planner_t* p, const cml_ir_node_t* a, const cml_ir_node_t* b) {
  const cml_module_t* m = p->module;
  if (a->op != b->op || a->input_count != b->input_count || a->output_count != b->output_count) {
    return false;
  }
  for (uint32_t k = 0; k < a->input_count; ++k) {
    if (cmlc_opt_canon(p, a->inputs[k]) != cmlc_opt_canon(p, b->inputs[k])) return false;
  }
  for (uint32_t o = 0; o < a->output_count; ++o) {
    const cml_shape_t* sa = &m->values[a->first_output + o].shape;
    const cml_shape_t* sb = &m->values[b->first_output + o].shape;
    if (sa->dtype != sb->dtype || !cml_shape_dims_equal(sa, sb)) return false;
  }
  if (a->op == CML_OP_CONSTANT) {
    size_t sa = a->data ? a->data_size : 0, sb = b->data ? b->data_size : 0;
    return sa == sb && (sa == 0 || memcmp(a->data, b->data, sa) == 0);
  }
  return memcmp(a->attrs, b->attrs, sizeof *a->attrs) == 0;
}

// Returns the earlier node identical to |ni|, or inserts |ni| and returns UINT32_MAX.
static uint32_t cmlc_opt_table_find_or_insert(const cmlc_planner_t* p, cmlc_opt_table_t* t,
                                              uint32_t ni) {
  const cml_ir_node_t* n = &p->module->nodes[ni];
  const uint64_t h = cmlc_opt_hash(p, n);
  for (size_t s = (size_t)h & t->mask;; s = (s + 1) & t->mask) {
    if (t->slots[s] == 0) {
      t->slots[s] = ni + 1;
      t->hashes[s] = h;
      return UINT32_MAX;
    }
    if (t->hashes[s] == h && cmlc_opt_same(p, &p->module->nodes[t->slots[s] - 1], n)) {
      return t->slots[s] - 1;
    }
  }
}

//===--- folding ---===//

static cml_status_t cmlc_opt_no_call(void* exec, uint32_t function, const void* const* inputs,
                                     void* const* outputs) {
  (void)exec;
  (void)inputs;
  (void)outputs;
  return cml_status_make(CML_STATUS_INTERNAL, "c backend: function %u called while folding",
                         function);
}

// Foldable ops whose result is their operand's bytes (MAY_ALIAS_INPUT in ops.def): Identity,
// Reshape, and Bitcast when the byte sizes match.
static bool cmlc_opt_is_alias_fold(const cml_module_t* m, const cml_ir_node_t* n) {
  const uint32_t traits = cml_op_traits(n->op);
  if (!(traits & CML_OP_TRAIT_MAY_ALIAS_INPUT) || !(traits & CML_OP_TRAIT_FOLDABLE) ||
      n->input_count != 1) {
    return false;
  }
  return n->op != CML_OP_BITCAST || cml_shape_byte_size(&m->values[n->inputs[0]].shape) ==
                                        cml_shape_byte_size(&m->values[n->first_output].shape);
}

// Folds |ni| when its inputs are constants. Returns an error only for allocation failures.
static cml_status_t cmlc_opt_try_fold(cmlc_planner_t* p, uint32_t ni) {
  const cml_module_t* m = p->module;
  const cml_ir_node_t* n = &m->nodes[ni];
  cmlc_executable_t* exe = p->exe;
  if (n->input_count > CMLC_OPT_FOLD_MAX_INPUTS) return CML_OK;
  const void* in_data[CMLC_OPT_FOLD_MAX_INPUTS];
  for (uint32_t k = 0; k < n->input_count; ++k) {
    in_data[k] = p->value_data[cmlc_opt_canon(p, n->inputs[k])];
    if (!in_data[k]) return CML_OK;
  }
  size_t total = 0;
  for (uint32_t o = 0; o < n->output_count; ++o) {
    total = cmlc_size_add(
        total, cmlc_opt_round(cml_shape_byte_size(&m->values[n->first_output + o].shape)));
    if (total > CMLC_OPT_FOLD_MAX_BYTES) return CML_OK;
  }
  if (total == 0) return CML_OK;
  if (cmlc_opt_is_alias_fold(m, n)) {
    p->value_data[n->first_output] = in_data[0];
    p->node_state[ni] = CMLC_NODE_FOLDED;
    ++exe->stats.folded;
    return CML_OK;
  }
  cmlc_kernel_entry_t entry;
  cml_status_t st = cmlc_plan_lookup(p, n, &entry);
  if (st != CML_OK) {  // reported again (with the same text) when the node is scheduled
    cml_status_free(st);
    return CML_OK;
  }
  const cmlc_options_t* options = &p->backend->options;
  size_t scratch_size = entry.scratch ? entry.scratch(m, n, options) : 0;
  // A saturated scratch size (past size_t) is left to the execution's arena, which reports it.
  if (scratch_size == SIZE_MAX) return CML_OK;
  size_t scratch_bytes = cmlc_opt_round(scratch_size);
  void* scratch = NULL;
  if (scratch_bytes) {
    scratch = cml_allocator_malloc(p->alloc, scratch_bytes, CMLC_ALIGNMENT);
    if (!scratch) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  }
  const size_t block_bytes = CMLC_ALIGNMENT + total;
  cmlc_folded_t* block = cml_allocator_malloc(p->alloc, block_bytes, CMLC_ALIGNMENT);
  size_t io = (size_t)n->input_count + n->output_count;
  const cml_shape_t** shapes = cml_allocator_malloc(p->alloc, sizeof(void*) * io, CMLC_ALIGNMENT);
  void** outs = cml_allocator_malloc(p->alloc, sizeof(void*) * n->output_count, CMLC_ALIGNMENT);
  if (!block || !shapes || !outs) {
    if (block) cml_allocator_free(p->alloc, block, block_bytes);
    if (shapes) cml_allocator_free(p->alloc, shapes, sizeof(void*) * io);
    if (outs) cml_allocator_free(p->alloc, outs, sizeof(void*) * n->output_count);
    if (scratch) cml_allocator_free(p->alloc, scratch, scratch_bytes);
    return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  }
  block->bytes = block_bytes;
  uint8_t* data = (uint8_t*)block + CMLC_ALIGNMENT;
  memset(data, 0, total);
  size_t offset = 0;
  for (uint32_t k = 0; k < n->input_count; ++k) shapes[k] = &m->values[n->inputs[k]].shape;
  for (uint32_t o = 0; o < n->output_count; ++o) {
    const cml_shape_t* s = &m->values[n->first_output + o].shape;
    shapes[n->input_count + o] = s;
    size_t bytes = cml_shape_byte_size(s);
    outs[o] = bytes ? (void*)(data + offset) : (void*)cmlc_empty_storage;
    offset += cmlc_opt_round(bytes);
  }
  cmlc_kernel_args_t args = {
      .module = m,
      .node = n,
      .options = options,
      .input_count = n->input_count,
      .input_shapes = shapes,
      .inputs = in_data,
      .output_count = n->output_count,
      .output_shapes = shapes + n->input_count,
      .outputs = outs,
      .scratch = scratch,
      .scratch_size = scratch_size,
      .pool = p->backend->pool,
      .call_function = cmlc_opt_no_call,
      .exec = NULL,
  };
  memcpy(args.impl, entry.impl, sizeof args.impl);
  st = entry.run(&args);
  if (st == CML_OK) {
    for (uint32_t o = 0; o < n->output_count; ++o) p->value_data[n->first_output + o] = outs[o];
    block->next = exe->folded;
    exe->folded = block;
    p->node_state[ni] = CMLC_NODE_FOLDED;
    ++exe->stats.folded;
  } else {
    // The kernel refuses these inputs: leave the node to fail (or not) when it runs.
    cml_status_free(st);
    cml_allocator_free(p->alloc, block, block_bytes);
  }
  cml_allocator_free(p->alloc, shapes, sizeof(void*) * io);
  cml_allocator_free(p->alloc, outs, sizeof(void*) * n->output_count);
  if (scratch) cml_allocator_free(p->alloc, scratch, scratch_bytes);
  return CML_OK;
}

cml_status_t cmlc_opt_fold_and_merge(cmlc_planner_t* p, uint32_t fi) {
  const cmlc_options_t* options = &p->backend->options;
  if (options->reference) return CML_OK;
  const cml_module_t* m = p->module;
  const cml_ir_function_t* f = &m->functions[fi];
  cmlc_opt_table_t table = {NULL, NULL, 0};
  size_t size = 16;
  while (size < 2 * (size_t)f->node_count) size *= 2;
  table.slots = cml_allocator_malloc(p->alloc, size * sizeof *table.slots, CMLC_ALIGNMENT);
  table.hashes = cml_allocator_malloc(p->alloc, size * sizeof *table.hashes, CMLC_ALIGNMENT);
  cml_status_t st = CML_OK;
  if (!table.slots || !table.hashes) st = cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  if (st == CML_OK) memset(table.slots, 0, size * sizeof *table.slots);
  table.mask = size - 1;
  for (uint32_t i = 0; st == CML_OK && i < f->node_count; ++i) {
    const uint32_t ni = f->nodes[i];
    const cml_ir_node_t* n = &m->nodes[ni];
    if (!p->needed[ni]) continue;
    const bool constant = n->op == CML_OP_CONSTANT;
    if (!constant && !cmlc_opt_is_pure(n->op)) continue;
    // Only Constants carry data outside their attributes; anything else that does is left
    // alone (its identity is more than what the comparison sees).
    if (!constant && (n->data || n->data_size)) continue;
    if (!constant || (n->data ? n->data_size : 0) <= CMLC_OPT_CSE_MAX_CONST_BYTES) {
      uint32_t same = cmlc_opt_table_find_or_insert(p, &table, ni);
      if (same != UINT32_MAX) {
        p->node_state[ni] = CMLC_NODE_MERGED;
        p->node_link[ni] = same;
        const cml_ir_node_t* s = &m->nodes[same];
        for (uint32_t o = 0; o < n->output_count; ++o) {
          p->value_data[n->first_output + o] = p->value_data[s->first_output + o];
        }
        ++p->exe->stats.merged;
        continue;
      }
    }
    if (!constant) st = cmlc_opt_try_fold(p, ni);
  }
  if (table.slots) cml_allocator_free(p->alloc, table.slots, size * sizeof *table.slots);
  if (table.hashes) cml_allocator_free(p->alloc, table.hashes, size * sizeof *table.hashes);
  return st;
}

//===--- fusion ---===//

static void cmlc_opt_count_use(cmlc_planner_t* p, uint32_t v, uint32_t amount) {
  p->uses[v] = p->uses[v] > UINT32_MAX - amount ? UINT32_MAX : p->uses[v] + amount;
}

// p->uses of the values of function |fi|: distinct consuming nodes of what actually runs, and
// CMLC_OPT_PIN for values returned, captured or reused by a merged node.
static void cmlc_opt_count_uses(cmlc_planner_t* p, uint32_t fi) {
  const cml_module_t* m = p->module;
  const cml_ir_function_t* f = &m->functions[fi];
  for (uint32_t i = 0; i < f->node_count; ++i) {
    const cml_ir_node_t* n = &m->nodes[f->nodes[i]];
    for (uint32_t o = 0; o < n->output_count; ++o) p->uses[n->first_output + o] = 0;
  }
  // Uses by distinct consumers of what actually runs.
  for (uint32_t i = 0; i < f->node_count; ++i) {
    const uint32_t ni = f->nodes[i];
    const cml_ir_node_t* n = cmlc_plan_node(p->exe, ni);
    if (!p->needed[ni] || p->node_state[ni] == CMLC_NODE_FOLDED) continue;
    if (p->node_state[ni] == CMLC_NODE_MERGED) {
      const cml_ir_node_t* s = &m->nodes[p->node_link[ni]];
      for (uint32_t o = 0; o < s->output_count; ++o) {
        cmlc_opt_count_use(p, s->first_output + o, CMLC_OPT_PIN);
      }
      continue;
    }
    for (uint32_t k = 0; k < n->input_count; ++k) {
      if (p->counted_by[n->inputs[k]] == ni + 1) continue;  // already counted for this node
      p->counted_by[n->inputs[k]] = ni + 1;
      cmlc_opt_count_use(p, n->inputs[k], 1);
    }
    for (uint32_t k = 0; k < n->input_count; ++k) p->counted_by[n->inputs[k]] = 0;
    for (uint32_t k = 0; k < cml_op_callee_count(n->op); ++k) {
      const cml_ir_function_t* cf = &m->functions[n->attrs->functions[k]];
      for (uint32_t c = 0; c < cf->capture_count; ++c) {
        cmlc_opt_count_use(p, cf->captures_outer[c], CMLC_OPT_PIN);
      }
    }
  }
  for (uint32_t o = 0; o < f->output_count; ++o) cmlc_opt_count_use(p, f->outputs[o], CMLC_OPT_PIN);
}

// Ops whose output a loop can read through (their operand, with mapped strides).
static bool cmlc_opt_read_through(cml_op_t op) {
  return op == CML_OP_BROADCAST_IN_DIM || op == CML_OP_SLICE || op == CML_OP_GATHER;
}

// After fusion: a BroadcastInDim, Slice or Gather that every fused loop reading it reads through
// (its operand expanded or gathered per block) and nothing else reads (no plain node, not returned,
// not captured, not reused by a merged node) need not run.
static cml_status_t cmlc_opt_drop_read_through(cmlc_planner_t* p, uint32_t fi) {
  const cml_module_t* m = p->module;
  const cml_ir_function_t* f = &m->functions[fi];
  cmlc_executable_t* exe = p->exe;
  bool any = false;
  for (uint32_t i = 0; i < f->node_count && !any; ++i) {
    const uint32_t ni = f->nodes[i];
    any = p->needed[ni] && cmlc_opt_read_through(m->nodes[ni].op) &&
          p->node_state[ni] == CMLC_NODE_PLAIN;
  }
  if (!any) return CML_OK;
  const size_t read_bytes = m->value_count ? m->value_count : 1;
  bool* read = cml_allocator_malloc(p->alloc, read_bytes, CMLC_ALIGNMENT);
  if (!read) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  memset(read, 0, read_bytes);
  for (uint32_t i = 0; i < f->node_count; ++i) {
    const uint32_t ni = f->nodes[i];
    if (!p->needed[ni]) continue;
    if (p->node_state[ni] == CMLC_NODE_FUSED_ROOT) {
      const cmlc_fused_t* fused = exe->fused_of[ni];
      const uint32_t* ins = cmlc_fused_inputs(fused);
      for (uint32_t k = 0; k < cmlc_fused_input_count(fused); ++k) read[ins[k]] = true;
    } else if (p->node_state[ni] == CMLC_NODE_PLAIN) {
      const cml_ir_node_t* n = cmlc_plan_node(exe, ni);
      for (uint32_t k = 0; k < n->input_count; ++k) read[n->inputs[k]] = true;
    }
  }
  for (uint32_t i = 0; i < f->node_count; ++i) {
    const uint32_t ni = f->nodes[i];
    const cml_ir_node_t* n = &m->nodes[ni];
    if (!p->needed[ni] || !cmlc_opt_read_through(n->op) || p->node_state[ni] != CMLC_NODE_PLAIN) {
      continue;
    }
    const uint32_t v = n->first_output;
    if (!read[v] && p->uses[v] < CMLC_OPT_PIN) p->needed[ni] = false;
  }
  cml_allocator_free(p->alloc, read, read_bytes);
  return CML_OK;
}

// Whether the producer of |v| joins a group whose output has |rs| dims when a member reads it:
// a live elementwise node of function |fi| with that output, read by that member alone (or
// duplicable: |dup|, every group reading it computes it again).
static bool cmlc_opt_joins(const cmlc_planner_t* p, uint32_t fi, uint32_t v, const cml_shape_t* rs,
                           const bool* dup) {
  const cml_module_t* m = p->module;
  const uint32_t pi = m->values[v].node;
  const cml_ir_node_t* pn = &m->nodes[pi];
  const bool again = dup && dup[pi];  // maybe inside another loop already
  return p->needed[pi] &&
         (p->node_state[pi] == CMLC_NODE_PLAIN ||
          (again && p->node_state[pi] == CMLC_NODE_FUSED_INNER)) &&
         pn->function == fi && pn->output_count == 1 && (p->uses[v] == 1 || again) &&
         cml_shape_dims_equal(&m->values[v].shape, rs) &&
         cmlc_fused_node_supported(m, pn, &p->backend->options);
}

// How many of |members| read |v|.
static uint32_t cmlc_opt_member_readers(const cml_module_t* m, uint32_t v, const uint32_t* members,
                                        uint32_t count) {
  uint32_t readers = 0;
  for (uint32_t j = 0; j < count; ++j) {
    const cml_ir_node_t* mn = &m->nodes[members[j]];
    for (uint32_t k = 0; k < mn->input_count; ++k) {
      if (mn->inputs[k] == v) {
        ++readers;
        break;
      }
    }
  }
  return readers;
}

// Whether no loop but this one (|members|) computes the duplicated node |ni|: every reader of
// its value is a member, and so is every reader of each duplicated member that reads it, down
// the chain (a duplicated reader is computed again by each loop that reads it). Chains deeper
// than |depth| count as read elsewhere.
static bool cmlc_opt_dup_only_here(const cmlc_planner_t* p, uint32_t ni, const uint32_t* members,
                                   uint32_t count, const bool* dup, int depth) {
  const cml_module_t* m = p->module;
  const uint32_t out = m->nodes[ni].first_output;
  if (depth <= 0 || cmlc_opt_member_readers(m, out, members, count) != p->uses[out]) return false;
  for (uint32_t j = 0; j < count; ++j) {
    const cml_ir_node_t* mn = &m->nodes[members[j]];
    if (!dup[members[j]]) continue;
    bool reads = false;
    for (uint32_t k = 0; k < mn->input_count && !reads; ++k) reads = mn->inputs[k] == out;
    if (reads && !cmlc_opt_dup_only_here(p, members[j], members, count, dup, depth - 1)) {
      return false;
    }
  }
  return true;
}

// Whether every node that reads |v| (p->uses: distinct consumers, returned or captured values
// pinned) is among |members|: a value several members read, computed once in the loop instead
// of stored (the difference of a loss read by its abs, its square and its comparison). A
// duplicated reader (|dup|) counts only when no other loop computes it (cmlc_opt_dup_only_here):
// otherwise those loops need |v| stored. Checking only the duplicated reader's own readers was
// not enough: with f = floor(x), a = abs(f) and s = a - a both duplicated, a loop holding f, a,
// s and every reader of a took f in, while s (read by a second loop too) was computed again
// there, with a, from an f that nobody stored.
static bool cmlc_opt_read_only_by(const cmlc_planner_t* p, uint32_t v, const uint32_t* members,
                                  uint32_t count, const bool* dup) {
  const cml_module_t* m = p->module;
  for (uint32_t j = 0; j < count; ++j) {
    const cml_ir_node_t* mn = &m->nodes[members[j]];
    if (!dup[members[j]]) continue;
    bool reads = false;
    for (uint32_t k = 0; k < mn->input_count && !reads; ++k) reads = mn->inputs[k] == v;
    if (reads && !cmlc_opt_dup_only_here(p, members[j], members, count, dup, 8)) return false;
  }
  const uint32_t readers = cmlc_opt_member_readers(m, v, members, count);
  return readers >= 2 && readers == p->uses[v];
}

// cmlc_opt_joins for a value every reader of which is a member (cmlc_opt_read_only_by).
static bool cmlc_opt_joins_shared(const cmlc_planner_t* p, uint32_t fi, uint32_t v,
                                  const cml_shape_t* rs, const uint32_t* members, uint32_t count,
                                  const bool* dup) {
  const cml_module_t* m = p->module;
  const uint32_t pi = m->values[v].node;
  const cml_ir_node_t* pn = &m->nodes[pi];
  return p->needed[pi] && p->node_state[pi] == CMLC_NODE_PLAIN && pn->function == fi &&
         pn->output_count == 1 && cml_shape_dims_equal(&m->values[v].shape, rs) &&
         cmlc_fused_node_supported(m, pn, &p->backend->options) &&
         cmlc_opt_read_only_by(p, v, members, count, dup);
}

// Elementwise ops cheap enough to compute again in each loop that reads them (no
// transcendental functions, no division).
static bool cmlc_opt_cheap(cml_op_t op) {
  switch (op) {
    case CML_OP_ADD:
    case CML_OP_SUB:
    case CML_OP_MUL:
    case CML_OP_NEG:
    case CML_OP_ABS:
    case CML_OP_MAX:
    case CML_OP_MIN:
    case CML_OP_CLAMP:
    case CML_OP_WHERE:
    case CML_OP_CONVERT_DTYPE:
      return true;
    default:
      return cml_op_kind(op) == CML_OPK_COMPARE;
  }
}

enum { CMLC_OPT_MAX_DUP_READERS = 4 };

// Duplicable nodes of function |fi| (|dup|, per node): a cheap elementwise node read by 2 to
// CMLC_OPT_MAX_DUP_READERS nodes (not returned or captured), each of them an elementwise node
// of its dims that fusion can take, or a reduction that can read a produced operand. Every
// loop reading it then computes it again instead of reading a stored copy. Its own operands
// must be values that no loop would compute (so that it can still run on its own, see
// cmlc_opt_undup).
static void cmlc_opt_mark_dup(const cmlc_planner_t* p, uint32_t fi, bool* dup) {
  const cml_module_t* m = p->module;
  const cml_ir_function_t* f = &m->functions[fi];
  const cmlc_options_t* options = &p->backend->options;
  for (uint32_t i = 0; i < f->node_count; ++i) {
    const uint32_t ni = f->nodes[i];
    const cml_ir_node_t* n = &m->nodes[ni];
    dup[ni] = false;
    if (!p->needed[ni] || p->node_state[ni] != CMLC_NODE_PLAIN || n->output_count != 1 ||
        !cmlc_opt_cheap(n->op) || p->uses[n->first_output] < 2 ||
        p->uses[n->first_output] > CMLC_OPT_MAX_DUP_READERS ||
        !cmlc_fused_node_supported(m, n, options)) {
      continue;
    }
    const cml_shape_t* ns = &m->values[n->first_output].shape;
    if (cml_shape_element_count(ns) == 0) continue;
    bool ok = true;
    for (uint32_t k = 0; k < n->input_count && ok; ++k) {
      ok = !cmlc_opt_joins(p, fi, n->inputs[k], ns, NULL);
    }
    dup[ni] = ok;
  }
  // Every reader must be one that a loop can take it into.
  for (uint32_t j = 0; j < f->node_count; ++j) {
    const uint32_t ci = f->nodes[j];
    const cml_ir_node_t* c = &m->nodes[ci];
    if (!p->needed[ci] || p->node_state[ci] == CMLC_NODE_FOLDED) continue;
    for (uint32_t k = 0; k < c->input_count; ++k) {
      const uint32_t v = c->inputs[k], ni = m->values[v].node;
      if (!dup[ni]) continue;
      bool ok;
      if (p->node_state[ci] != CMLC_NODE_PLAIN) {
        ok = false;
      } else if (cml_op_kind(c->op) == CML_OPK_REDUCE) {
        ok = c->input_count == 1 && cmlc_fused_reduce_supported(m, c, options);
      } else {
        ok = c->output_count == 1 && cmlc_fused_node_supported(m, c, options) &&
             cml_shape_dims_equal(&m->values[c->first_output].shape, &m->values[v].shape);
      }
      if (!ok) dup[ni] = false;
    }
  }
}

// After grouping: a duplicated node that some reader's loop did not take in (the loop was
// full, or the reader stayed unfused) runs on its own after all, so that reader finds it
// stored; loops that took it in still compute it themselves (the same bits). Repeated until
// nothing changes: a node run on its own again needs its duplicated operands stored too.
// A duplicated reader belongs to several loops but links to one (node_link): every loop's
// inputs are checked too. With w = where(c, x, x) and n = -w both duplicated, a loop holding
// w and n linked n, while a second loop computed n again from a w it read as an input that no
// step stored (a crash found by random graphs).
static void cmlc_opt_undup(cmlc_planner_t* p, uint32_t fi, const bool* dup) {
  const cml_module_t* m = p->module;
  const cml_ir_function_t* f = &m->functions[fi];
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t j = 0; j < f->node_count; ++j) {
      const uint32_t ci = f->nodes[j];
      const cml_ir_node_t* c = &m->nodes[ci];
      if (!p->needed[ci] || p->node_state[ci] == CMLC_NODE_FOLDED) continue;
      if (p->node_state[ci] == CMLC_NODE_FUSED_ROOT) {
        // What the loop reads must be stored: a value computed inside another loop is not.
        const cmlc_fused_t* fu = p->exe->fused_of[ci];
        for (uint32_t k = 0; k < cmlc_fused_input_count(fu); ++k) {
          const uint32_t ni = m->values[cmlc_fused_inputs(fu)[k]].node;
          if (p->node_state[ni] != CMLC_NODE_FUSED_INNER) continue;
          p->node_state[ni] = CMLC_NODE_PLAIN;
          p->node_link[ni] = 0;
          changed = true;
        }
      }
      const uint32_t root = p->node_state[ci] == CMLC_NODE_FUSED_ROOT    ? ci
                            : p->node_state[ci] == CMLC_NODE_FUSED_INNER ? p->node_link[ci]
                                                                         : UINT32_MAX;
      for (uint32_t k = 0; k < c->input_count; ++k) {
        const uint32_t ni = m->values[c->inputs[k]].node;
        if (!dup[ni] || p->node_state[ni] != CMLC_NODE_FUSED_INNER) continue;
        if (root != UINT32_MAX && cmlc_fused_has_member(p->exe->fused_of[root], &m->nodes[ni])) {
          continue;
        }
        p->node_state[ni] = CMLC_NODE_PLAIN;
        p->node_link[ni] = 0;
        changed = true;
      }
    }
  }
}

// Builds the loop of |count| members (|members[0]| is the root; sorted into schedule order
// here) and the BroadcastInDim, Slice and row Gather inputs it reads through. *out stays NULL,
// with CML_OK, when the group is not worth a loop.
static cml_status_t cmlc_opt_build_group(cmlc_planner_t* p, uint32_t fi, uint32_t* members,
                                         uint32_t count, bool reduce, cmlc_fused_t** out) {
  const cml_module_t* m = p->module;
  const cml_shape_t* rs = &m->values[m->nodes[members[0]].first_output].shape;
  *out = NULL;
  // Inputs that BroadcastInDim, Slice and row Gather nodes of this function produce: the loop
  // reads their operands instead (a lone elementwise op with such an input is worth a loop
  // too).
  uint32_t through[CMLC_OPT_MAX_GROUP * 3];
  uint32_t through_count = 0;
  for (uint32_t j = 0; j < count; ++j) {
    const cml_ir_node_t* mn = &m->nodes[members[j]];
    for (uint32_t k = 0; k < mn->input_count; ++k) {
      const uint32_t v = mn->inputs[k], bi = m->values[v].node;
      const cml_ir_node_t* bn = &m->nodes[bi];
      // A Gather of whole rows is read through when this loop is its only reader (its rows
      // are gathered block by block instead of stored and read back).
      const bool gather = bn->op == CML_OP_GATHER && cmlc_fused_gather_read_through(m, v) &&
                          cml_shape_dims_equal(&m->values[v].shape, rs) &&
                          cmlc_opt_member_readers(m, v, members, count) == p->uses[v];
      if ((bn->op != CML_OP_BROADCAST_IN_DIM && !cmlc_fused_slice_read_through(m, v) && !gather) ||
          bn->function != fi || !p->needed[bi] || p->node_state[bi] != CMLC_NODE_PLAIN ||
          p->value_data[v]) {
        continue;
      }
      bool seen = false;
      for (uint32_t t = 0; t < through_count && !seen; ++t) seen = through[t] == v;
      if (!seen) through[through_count++] = v;
    }
  }
  if (count < 2 && through_count == 0 && !reduce) return CML_OK;
  // Schedule order (positions in the function; the root comes last).
  for (uint32_t a = 1; a < count; ++a) {
    for (uint32_t b = a; b > 0 && p->position[members[b - 1]] > p->position[members[b]]; --b) {
      uint32_t t = members[b];
      members[b] = members[b - 1];
      members[b - 1] = t;
    }
  }
  return cmlc_fused_build(m, &p->backend->options, members, count, through, through_count, p->alloc,
                          out);
}

cml_status_t cmlc_opt_fuse(cmlc_planner_t* p, uint32_t fi) {
  const cmlc_options_t* options = &p->backend->options;
  cmlc_executable_t* exe = p->exe;
  if (!options->fusion || options->reference || !exe->fused_of) return CML_OK;
  const cml_module_t* m = p->module;
  const cml_ir_function_t* f = &m->functions[fi];
  // Members are put in schedule order: their positions in the function's node list, which is
  // topological but not always in node index order (cml_gradients splits a fused node in two
  // and places the new node right after it).
  for (uint32_t i = 0; i < f->node_count; ++i) p->position[f->nodes[i]] = i;
  cmlc_opt_count_uses(p, fi);
  bool* dup = p->dup;
  if (!dup) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  cmlc_opt_mark_dup(p, fi, dup);

  uint32_t members[CMLC_OPT_MAX_GROUP + 1];  // + a fused reduction
  for (uint32_t i = f->node_count; i-- > 0;) {
    uint32_t root = f->nodes[i];
    const cml_ir_node_t* rn = &m->nodes[root];
    if (!p->needed[root] || p->node_state[root] != CMLC_NODE_PLAIN) continue;
    // A reduction whose operand an elementwise group computes (read by it alone) runs that
    // group itself, run by run: the operand is never stored. The group grows from the operand.
    uint32_t reduce = UINT32_MAX;
    if (cml_op_kind(rn->op) == CML_OPK_REDUCE && rn->input_count == 1) {
      const uint32_t v = rn->inputs[0], pi = m->values[v].node;
      const cml_ir_node_t* pn = &m->nodes[pi];
      if (!cmlc_opt_joins(p, fi, v, &m->values[v].shape, dup) ||
          !cmlc_fused_reduce_supported(m, rn, options)) {
        continue;
      }
      reduce = root;
      root = pi;
      rn = pn;
    }
    const cml_shape_t* rs = &m->values[rn->first_output].shape;
    // One-element values stay plain: the plan runs their ops inline as SCALAR steps (a loop
    // would cost its setup per op: a While body's scalar recurrence, 36 -> 19 ns per iteration).
    if (cml_shape_element_count(rs) <= 1 || !cmlc_fused_node_supported(m, rn, options)) continue;
    // Grow the group backwards through producers of the root's dims that only members read:
    // single-use ones as they are met, then those read by several members once all of these
    // are in (again until nothing joins).
    uint32_t count = 1;
    members[0] = root;
    for (uint32_t grown = 1; grown;) {
      const uint32_t before = count;
      for (uint32_t scan = 0; scan < count; ++scan) {
        const cml_ir_node_t* mn = &m->nodes[members[scan]];
        for (uint32_t k = 0; k < mn->input_count && count < CMLC_OPT_MAX_GROUP; ++k) {
          const uint32_t v = mn->inputs[k];
          const uint32_t pi = m->values[v].node;
          bool in_group = false;
          for (uint32_t j = 0; j < count && !in_group; ++j) in_group = members[j] == pi;
          if (in_group || !(cmlc_opt_joins(p, fi, v, rs, dup) ||
                            cmlc_opt_joins_shared(p, fi, v, rs, members, count, dup))) {
            continue;
          }
          members[count++] = pi;
        }
      }
      grown = count > before;
    }
    // The members in the order they joined: each prefix of it is a group the growth passed
    // through (every join was decided on the members before it), so a group the loop cannot
    // take (too many inputs or registers) is cut back to its longest prefix that it can,
    // instead of leaving every member unfused.
    uint32_t joined[CMLC_OPT_MAX_GROUP];
    memcpy(joined, members, count * sizeof *members);
    cmlc_fused_t* fused = NULL;
    for (; count > 0; --count) {
      memcpy(members, joined, count * sizeof *members);
      cml_status_t st = cmlc_opt_build_group(p, fi, members, count, reduce != UINT32_MAX, &fused);
      if (st == CML_OK) break;
      if (cml_status_code(st) == CML_STATUS_RESOURCE_EXHAUSTED) {
        for (uint32_t k = 0; k < f->node_count; ++k) dup[f->nodes[k]] = false;
        return st;
      }
      cml_status_free(st);
    }
    if (!fused) continue;  // nothing worth a loop, or a group the loop cannot take
    if (reduce != UINT32_MAX) {
      if (!cmlc_fused_attach_reduce(fused, m, &m->nodes[reduce], options)) {
        cmlc_fused_destroy(p->alloc, fused);
        continue;
      }
      // The reduction is the loop's root; every elementwise member is inside it.
      members[count++] = reduce;
      root = reduce;
      ++exe->stats.fused_reduces;
    }
    exe->fused_of[root] = fused;
    p->node_state[root] = CMLC_NODE_FUSED_ROOT;
    for (uint32_t j = 0; j + 1 < count; ++j) {
      p->node_state[members[j]] = CMLC_NODE_FUSED_INNER;
      p->node_link[members[j]] = root;
    }
    ++exe->stats.fused_groups;
    exe->stats.fused_nodes += count;
    exe->stats.fused_tiled += cmlc_fused_tiled(fused);
  }
  cmlc_opt_undup(p, fi, dup);
  // Only this function's nodes were marked: clear them for the next function.
  for (uint32_t k = 0; k < f->node_count; ++k) dup[f->nodes[k]] = false;
  return cmlc_opt_drop_read_through(p, fi);
}

//===--- segmented operands ---===//

// The Concatenate node producing input |k| of |n| when the attention kernel can read its
// operands in place instead: a live, unfused Concatenate of this function along the key axis
// with 2..CMLC_FA_MAX_PARTS operands, whose value nothing else reads (not returned, captured,
// merged, or another input of |n| than k and v). UINT32_MAX otherwise.
static uint32_t cmlc_opt_segment_source(const cmlc_planner_t* p, const cml_ir_node_t* n,
                                        uint32_t k) {
  const cml_module_t* m = p->module;
  const uint32_t v = n->inputs[k], ci = m->values[v].node;
  const cml_ir_node_t* cn = &m->nodes[ci];
  if (cn->op != CML_OP_CONCATENATE || cn->function != n->function || !p->needed[ci] ||
      p->node_state[ci] != CMLC_NODE_PLAIN || p->value_data[v] || cn->output_count != 1 ||
      cn->input_count < 2 || cn->input_count > CMLC_FA_MAX_PARTS || p->uses[v] != 1 ||
      cn->attrs->axis != cmlc__fa_key_axis(n->attrs->fused.layout)) {
    return UINT32_MAX;
  }
  for (uint32_t j = 0; j < n->input_count; ++j) {
    if (j != 1 && j != 2 && n->inputs[j] == v) return UINT32_MAX;
  }
  return ci;
}

cml_status_t cmlc_opt_segments(cmlc_planner_t* p, uint32_t fi) {
  const cmlc_options_t* options = &p->backend->options;
  cmlc_executable_t* exe = p->exe;
  if (!options->fusion || options->reference || !exe->parts_of) return CML_OK;
  const cml_module_t* m = p->module;
  const cml_ir_function_t* f = &m->functions[fi];
  bool counted = false;
  for (uint32_t i = 0; i < f->node_count; ++i) {
    const uint32_t ni = f->nodes[i];
    const cml_ir_node_t* n = &m->nodes[ni];
    if (n->op != CML_OP_FUSED_SDPA || !p->needed[ni] || p->node_state[ni] != CMLC_NODE_PLAIN ||
        n->input_count < 3) {
      continue;
    }
    // Only the native kernel reads parts (not a decomposition or another entry).
    cmlc_kernel_entry_t entry;
    cml_status_t st = cmlc_plan_lookup(p, n, &entry);
    if (st != CML_OK) {  // reported again when the node is scheduled
      cml_status_free(st);
      continue;
    }
    if (entry.run != cmlc__fa_run) continue;
    if (!counted) {
      cmlc_opt_count_uses(p, fi);
      counted = true;
    }
    const uint32_t kc = cmlc_opt_segment_source(p, n, 1), vc = cmlc_opt_segment_source(p, n, 2);
    if (kc == UINT32_MAX && vc == UINT32_MAX) continue;
    uint32_t count = n->input_count;
    if (kc != UINT32_MAX) count += m->nodes[kc].input_count - 1;
    if (vc != UINT32_MAX) count += m->nodes[vc].input_count - 1;
    const size_t bytes = sizeof(cmlc_parts_t) + sizeof(uint32_t) * ((size_t)count + n->input_count);
    cmlc_parts_t* parts = cml_allocator_malloc(p->alloc, bytes, CMLC_ALIGNMENT);
    if (!parts) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
    parts->bytes = bytes;
    parts->count = count;
    parts->values = (uint32_t*)(parts + 1);
    parts->parts = parts->values + count;
    uint32_t at = 0;
    for (uint32_t k = 0; k < n->input_count; ++k) {
      const uint32_t ci = k == 1 ? kc : k == 2 ? vc : UINT32_MAX;
      if (ci == UINT32_MAX) {
        parts->parts[k] = 1;
        parts->values[at++] = n->inputs[k];
        continue;
      }
      const cml_ir_node_t* cn = &m->nodes[ci];
      parts->parts[k] = cn->input_count;
      for (uint32_t j = 0; j < cn->input_count; ++j) parts->values[at++] = cn->inputs[j];
      if (p->node_state[ci] != CMLC_NODE_SEGMENTED) {
        p->node_state[ci] = CMLC_NODE_SEGMENTED;
        p->node_link[ci] = ni;
        ++exe->stats.segmented;
      }
    }
    exe->parts_of[ni] = parts;
  }
  return CML_OK;
}

//===--- transpose folding ---===//

// A rewritten Dot/DotGeneral node with its own attributes and inputs (in exe->folded storage).
typedef struct cmlc_opt_view_t {
  cml_ir_node_t node;
  cml_ir_attrs_t attrs;
  uint32_t inputs[CML_MAX_RANK + 2];  // DynamicUpdateSlice: operand, update, a start per axis
} cmlc_opt_view_t;

// Stores |view| (its node's inputs and attrs pointing into it) as the node the plan runs in
// place of node |ni| (exe->node_view).
static cml_status_t cmlc_opt_store_view(cmlc_planner_t* p, uint32_t ni,
                                        const cmlc_opt_view_t* view) {
  cmlc_executable_t* exe = p->exe;
  const cml_module_t* m = p->module;
  if (!exe->node_view) {
    exe->node_view =
        cml_allocator_malloc(p->alloc, m->node_count * sizeof *exe->node_view, CMLC_ALIGNMENT);
    if (!exe->node_view) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
    memset(exe->node_view, 0, m->node_count * sizeof *exe->node_view);
  }
  const size_t block_bytes = CMLC_ALIGNMENT + cmlc_opt_round(sizeof *view);
  cmlc_folded_t* block = cml_allocator_malloc(p->alloc, block_bytes, CMLC_ALIGNMENT);
  if (!block) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  block->bytes = block_bytes;
  block->next = exe->folded;
  exe->folded = block;
  cmlc_opt_view_t* stored = (cmlc_opt_view_t*)((uint8_t*)block + CMLC_ALIGNMENT);
  *stored = *view;
  stored->node.attrs = &stored->attrs;
  stored->node.inputs = stored->inputs;
  exe->node_view[ni] = &stored->node;
  return CML_OK;
}

// Whether operand |k| of the dot node |n| is a Transpose (planned as is, not a constant) whose
// operand the dot can read instead; fills the operand's remapped batch and contracting axes.
static bool cmlc_opt_transposed_operand(const cmlc_planner_t* p, const cml_ir_node_t* n, uint32_t k,
                                        int64_t* batch, int64_t* contracting) {
  const cml_module_t* m = p->module;
  const uint32_t v = n->inputs[k];
  const uint32_t ti = m->values[v].node;
  const cml_ir_node_t* t = &m->nodes[ti];
  if (t->op != CML_OP_TRANSPOSE || t->function != n->function || t->input_count != 1 ||
      !p->needed[ti] || p->node_state[ti] != CMLC_NODE_PLAIN || p->value_data[v]) {
    return false;
  }
  const cml_shape_t* ts = &m->values[v].shape;
  const int32_t rank = ts->rank;
  if (t->attrs->axis_count != rank || m->values[t->inputs[0]].shape.rank != rank) return false;
  const cml_dot_config_t* c = &n->attrs->u.dot;
  const int32_t bc = k == 0 ? c->lhs_batch_count : c->rhs_batch_count;
  const int32_t cc = k == 0 ? c->lhs_contracting_count : c->rhs_contracting_count;
  const int64_t* ba = k == 0 ? c->lhs_batch_axes : c->rhs_batch_axes;
  const int64_t* ca = k == 0 ? c->lhs_contracting_axes : c->rhs_contracting_axes;
  bool used[CML_MAX_RANK] = {false};
  for (int32_t i = 0; i < bc; ++i) {
    if (ba[i] < 0 || ba[i] >= rank) return false;
    used[ba[i]] = true;
    batch[i] = t->attrs->axes[ba[i]];
  }
  for (int32_t i = 0; i < cc; ++i) {
    if (ca[i] < 0 || ca[i] >= rank) return false;
    used[ca[i]] = true;
    contracting[i] = t->attrs->axes[ca[i]];
  }
  // The free axes must keep their relative order: they lay out the result.
  int64_t last = -1;
  for (int32_t a = 0; a < rank; ++a) {
    if (used[a]) continue;
    if (t->attrs->axes[a] <= last) return false;
    last = t->attrs->axes[a];
  }
  return true;
}

// Whether node |ni| is a live Dot/DotGeneral planned as is (a candidate for transpose folding).
static bool cmlc_opt_is_plain_dot(const cmlc_planner_t* p, uint32_t ni) {
  const cml_ir_node_t* n = &p->module->nodes[ni];
  return (n->op == CML_OP_DOT || n->op == CML_OP_DOT_GENERAL) && n->input_count == 2 &&
         p->needed[ni] && p->node_state[ni] == CMLC_NODE_PLAIN;
}

cml_status_t cmlc_opt_fold_transposes(cmlc_planner_t* p, uint32_t fi, bool* changed) {
  *changed = false;
  if (p->backend->options.reference) return CML_OK;
  const cml_module_t* m = p->module;
  const cml_ir_function_t* f = &m->functions[fi];
  cmlc_executable_t* exe = p->exe;
  int64_t batch[CML_MAX_RANK], contracting[CML_MAX_RANK];
  bool any = false;
  for (uint32_t i = 0; i < f->node_count && !any; ++i) {
    const cml_ir_node_t* n = &m->nodes[f->nodes[i]];
    if (!cmlc_opt_is_plain_dot(p, f->nodes[i])) continue;
    for (uint32_t k = 0; k < 2 && !any; ++k) {
      any = cmlc_opt_transposed_operand(p, n, k, batch, contracting);
    }
  }
  if (!any) return CML_OK;

  // Uses of each value by distinct consumers (pinned when returned, captured or merged), and
  // how many of those are dots that can read through the Transpose.
  cmlc_opt_count_uses(p, fi);
  uint32_t* ok_uses =
      cml_allocator_malloc(p->alloc, m->value_count * sizeof *ok_uses, CMLC_ALIGNMENT);
  if (!ok_uses) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  for (uint32_t i = 0; i < f->node_count; ++i) {
    const cml_ir_node_t* n = &m->nodes[f->nodes[i]];
    for (uint32_t o = 0; o < n->output_count; ++o) ok_uses[n->first_output + o] = 0;
  }
  for (uint32_t i = 0; i < f->node_count; ++i) {
    const uint32_t ni = f->nodes[i];
    const cml_ir_node_t* n = &m->nodes[ni];
    if (!cmlc_opt_is_plain_dot(p, ni)) continue;
    const bool same = n->inputs[0] == n->inputs[1];
    for (uint32_t k = 0; k < (same ? 1u : 2u); ++k) {
      if (cmlc_opt_transposed_operand(p, n, k, batch, contracting) &&
          (!same || cmlc_opt_transposed_operand(p, n, 1, batch, contracting))) {
        ++ok_uses[n->inputs[k]];
      }
    }
  }

  cml_status_t st = CML_OK;
  for (uint32_t i = 0; st == CML_OK && i < f->node_count; ++i) {
    const uint32_t ni = f->nodes[i];
    const cml_ir_node_t* n = &m->nodes[ni];
    if (!cmlc_opt_is_plain_dot(p, ni)) continue;
    cmlc_opt_view_t view;
    memset(&view, 0, sizeof view);
    view.node = *n;
    view.attrs = *n->attrs;
    view.inputs[0] = n->inputs[0];
    view.inputs[1] = n->inputs[1];
    cml_dot_config_t* c = &view.attrs.u.dot;
    bool rewrote = false;
    for (uint32_t k = 0; k < 2; ++k) {
      const uint32_t v = n->inputs[k];
      if (ok_uses[v] == 0 || ok_uses[v] != p->uses[v] ||
          !cmlc_opt_transposed_operand(p, n, k, batch, contracting)) {
        continue;
      }
      const cml_ir_node_t* t = &m->nodes[m->values[v].node];
      view.inputs[k] = t->inputs[0];
      if (k == 0) {
        memcpy(c->lhs_batch_axes, batch, sizeof(int64_t) * (size_t)c->lhs_batch_count);
        memcpy(c->lhs_contracting_axes, contracting,
               sizeof(int64_t) * (size_t)c->lhs_contracting_count);
      } else {
        memcpy(c->rhs_batch_axes, batch, sizeof(int64_t) * (size_t)c->rhs_batch_count);
        memcpy(c->rhs_contracting_axes, contracting,
               sizeof(int64_t) * (size_t)c->rhs_contracting_count);
      }
      rewrote = true;
      ++exe->stats.transposes_folded;
    }
    if (!rewrote) continue;
    view.node.op = CML_OP_DOT_GENERAL;  // the axes are no longer Dot's fixed ones
    st = cmlc_opt_store_view(p, ni, &view);
    *changed = st == CML_OK;
  }
  cml_allocator_free(p->alloc, ok_uses, m->value_count * sizeof *ok_uses);
  return st;
}

// Scatter and DynamicUpdateSlice whose operand is a BroadcastInDim of one element (a scatter
// into zeros: the gradient of a gather or an embedding lookup) that nothing else reads run with
// that element as their operand instead (a view of the node): the kernel writes it over the
// output (cmlc_ix_init_output), and the broadcast is never stored nor copied.
cml_status_t cmlc_opt_fold_broadcast_operands(cmlc_planner_t* p, uint32_t fi, bool* changed) {
  *changed = false;
  if (p->backend->options.reference) return CML_OK;
  const cml_module_t* m = p->module;
  const cml_ir_function_t* f = &m->functions[fi];
  bool counted = false;
  cml_status_t st = CML_OK;
  for (uint32_t i = 0; st == CML_OK && i < f->node_count; ++i) {
    const uint32_t ni = f->nodes[i];
    const cml_ir_node_t* n = &m->nodes[ni];
    const bool target = n->op == CML_OP_SCATTER_SUM || n->op == CML_OP_SCATTER_MAX ||
                        n->op == CML_OP_SCATTER_MIN || n->op == CML_OP_DYNAMIC_UPDATE_SLICE;
    if (!target || !p->needed[ni] || p->node_state[ni] != CMLC_NODE_PLAIN ||
        (p->exe->node_view && p->exe->node_view[ni]) || n->input_count > CML_MAX_RANK + 2) {
      continue;
    }
    const uint32_t v = n->inputs[0], bi = m->values[v].node;
    const cml_ir_node_t* b = &m->nodes[bi];
    if (b->op != CML_OP_BROADCAST_IN_DIM || b->function != fi || !p->needed[bi] ||
        p->node_state[bi] != CMLC_NODE_PLAIN || p->value_data[v] ||
        cml_shape_element_count(&m->values[b->inputs[0]].shape) != 1 ||
        cml_shape_element_count(&m->values[v].shape) < 2) {
      continue;
    }
    if (!counted) {
      cmlc_opt_count_uses(p, fi);
      counted = true;
    }
    if (p->uses[v] != 1) continue;
    cmlc_opt_view_t view;
    memset(&view, 0, sizeof view);
    view.node = *n;
    view.attrs = *n->attrs;
    memcpy(view.inputs, n->inputs, n->input_count * sizeof *n->inputs);
    view.inputs[0] = b->inputs[0];
    st = cmlc_opt_store_view(p, ni, &view);
    if (st == CML_OK) {
      ++p->exe->stats.broadcasts_filled;
      *changed = true;
    }
  }
  return st;
}
