// SPDX-License-Identifier: Apache-2.0
// src/backends/xla/stablehlo/emit_guard.c: divergence guards for SPMD modules whose If or While
// runs collectives.
//
// Every member of a replica group must reach each collective of that group. When the slots of
// a group answer an If's predicate (or a While's condition) differently, some reach a
// collective the others never do, and XLA's CPU runtime waits 40 s at it and then ends the
// process ("Termination timeout ... Exiting to ensure a consistent program state"). So in an
// SPMD module on more than one slot, an If or While whose closures run a collective (directly,
// in a nested one, or in a called function) is guarded:
// - the predicate is agreed first: one all_reduce(max) of (p, 1 - p) over the groups of the
//   collectives it guards (the connected components of their groups, or every slot when the
//   components differ in size); both maxima 1 means the group disagrees;
// - a disagreeing group takes the false branch (If) or leaves the loop (While) together, so
//   nothing waits, and records the node in a flag: an Int32 scalar, 0 or 1 + the node's index
//   (the largest recorded wins), threaded through every region, called function and loop state
//   on the way out as one more result;
// - main returns the flag after its outputs; the backend reads it on every slot and turns a
//   nonzero one into FAILED_PRECONDITION naming the node (its outputs are dropped).
// A While's condition cannot return the flag, so the loop also stops when a guarded node inside
// the condition records one, and the condition runs once more after the loop, in the enclosing
// region: that run meets the same disagreement again (the state is the one the loop stopped
// at) and records it.
// Sort comparators are not guarded (they run per element pair; a collective there is outside
// what XLA compiles).
#include <stdlib.h>
#include <string.h>

#include "backends/xla/stablehlo/emit_internal.h"

// Whether |op| communicates between slots (ReplicaId and PartitionId do not).
static bool cml_guard_is_exchange(cml_op_t op) {
  return cml_op_group(op) == CML_OPG_COLLECTIVE && op != CML_OP_REPLICA_ID &&
         op != CML_OP_PARTITION_ID;
}

// Fills |runs|[fi] (function fi runs a collective, itself or through what it runs) for |fi|
// and what it runs; |state| is 0 unvisited, 1 done. The module's nesting was checked (no
// cycles, bounded depth), so the recursion is bounded.
static void cml_guard_mark(const cml_module_t* m, uint32_t fi, uint8_t* state, bool* runs) {
  if (state[fi]) return;
  state[fi] = 1;
  const cml_ir_function_t* f = &m->functions[fi];
  bool any = false;
  for (uint32_t i = 0; i < f->node_count; ++i) {
    const cml_ir_node_t* n = &m->nodes[f->nodes[i]];
    if (cml_guard_is_exchange(n->op)) any = true;
    uint32_t t[2];
    const uint32_t k = cml__shlo_node_targets(n, t);
    for (uint32_t j = 0; j < k; ++j) {
      cml_guard_mark(m, t[j], state, runs);
      if (runs[t[j]]) any = true;
    }
  }
  runs[fi] = any;
}

//===--- which predicates every slot computes alike ---===//
//
// A predicate every slot of the module computes to the same value needs no agreement: one made
// of constants and Iota, of AllReduce / AllGather / CollectiveBroadcast results over all slots
// (one group), and of While state whose start and update are such values (a loop counter). The
// analysis marks values 1 (the same on every slot) or 2 (may differ: main's parameters,
// ReplicaId, PartitionId, other collectives, a called function's results, and anything
// computed from those). It is conservative: a value it cannot follow is 2, which only costs a
// guard. Work is bounded (nested loops re-run their bodies until the state's marks settle); past
// the bound every predicate is guarded.

enum { CML_GUARD_SAME = 1, CML_GUARD_MAY_DIFFER = 2 };

typedef struct cml_guard_uniform_t {
  const cml_module_t* m;
  int32_t slots;
  uint8_t* mark;    // per value
  uint64_t budget;  // node visits left
} cml_guard_uniform_t;

static void cml_guard_uniform_function(cml_guard_uniform_t* u, uint32_t fi);

static void cml_guard_set_outputs(cml_guard_uniform_t* u, const cml_ir_node_t* n, uint8_t mark) {
  for (uint32_t k = 0; k < n->output_count; ++k) u->mark[n->first_output + k] = mark;
}

// The marks of the inputs: 1 when all are 1.
static uint8_t cml_guard_inputs_mark(const cml_guard_uniform_t* u, const cml_ir_node_t* n) {
  for (uint32_t i = 0; i < n->input_count; ++i) {
    if (u->mark[n->inputs[i]] != CML_GUARD_SAME) return CML_GUARD_MAY_DIFFER;
  }
  return CML_GUARD_SAME;
}

static void cml_guard_uniform_while(cml_guard_uniform_t* u, const cml_ir_node_t* n) {
  const cml_module_t* m = u->m;
  const cml_ir_function_t* cond = &m->functions[n->attrs->functions[0]];
  const cml_ir_function_t* body = &m->functions[n->attrs->functions[1]];
  const uint32_t count = n->input_count;
  uint8_t* state = malloc(count + 1);
  if (!state) {
    u->budget = 0;
    cml_guard_set_outputs(u, n, CML_GUARD_MAY_DIFFER);
    return;
  }
  for (uint32_t i = 0; i < count; ++i) state[i] = u->mark[n->inputs[i]];
  // Drop the state elements whose update may differ, until none changes.
  for (uint32_t round = 0; round <= count && u->budget > 0; ++round) {
    for (uint32_t i = 0; i < body->param_count && i < count; ++i)
      u->mark[body->params[i]] = state[i];
    cml_guard_uniform_function(u, n->attrs->functions[1]);
    bool changed = false;
    for (uint32_t i = 0; i < count && i < body->output_count; ++i) {
      if (state[i] == CML_GUARD_SAME && u->mark[body->outputs[i]] != CML_GUARD_SAME) {
        state[i] = CML_GUARD_MAY_DIFFER;
        changed = true;
      }
    }
    if (!changed) break;
  }
  for (uint32_t i = 0; i < cond->param_count && i < count; ++i) u->mark[cond->params[i]] = state[i];
  cml_guard_uniform_function(u, n->attrs->functions[0]);
  for (uint32_t k = 0; k < n->output_count && k < count; ++k) {
    u->mark[n->first_output + k] = state[k];
  }
  free(state);
}

// Marks the values of function |fi|, whose parameters are marked already.
static void cml_guard_uniform_function(cml_guard_uniform_t* u, uint32_t fi) {
  const cml_module_t* m = u->m;
  const cml_ir_function_t* f = &m->functions[fi];
  for (uint32_t i = 0; i < f->node_count; ++i) {
    if (u->budget == 0) return;
    --u->budget;
    const cml_ir_node_t* n = &m->nodes[f->nodes[i]];
    switch (n->op) {
      case CML_OP_PARAMETER:
        break;  // marked by the caller (main's: may differ)
      case CML_OP_CAPTURED_VALUE:
        u->mark[n->first_output] = n->index < f->capture_count
                                       ? u->mark[f->captures_outer[n->index]]
                                       : CML_GUARD_MAY_DIFFER;
        break;
      case CML_OP_CONSTANT:
      case CML_OP_IOTA:
        cml_guard_set_outputs(u, n, CML_GUARD_SAME);
        break;
      case CML_OP_ALL_REDUCE:
      case CML_OP_ALL_GATHER:
      case CML_OP_COLLECTIVE_BROADCAST: {
        // The same on every slot when the group is every slot.
        const cml_ir_collective_attrs_t* ca = &n->attrs->collective;
        const bool all = ca->group_count == 1 && ca->group_size == u->slots;
        cml_guard_set_outputs(u, n, all ? CML_GUARD_SAME : CML_GUARD_MAY_DIFFER);
        break;
      }
      case CML_OP_WHILE:
        cml_guard_uniform_while(u, n);
        break;
      case CML_OP_IF: {
        const cml_ir_function_t* t = &m->functions[n->attrs->functions[0]];
        const cml_ir_function_t* e = &m->functions[n->attrs->functions[1]];
        cml_guard_uniform_function(u, n->attrs->functions[0]);
        cml_guard_uniform_function(u, n->attrs->functions[1]);
        const bool pred = u->mark[n->inputs[0]] == CML_GUARD_SAME;
        for (uint32_t k = 0; k < n->output_count; ++k) {
          const bool same = pred && k < t->output_count && k < e->output_count &&
                            u->mark[t->outputs[k]] == CML_GUARD_SAME &&
                            u->mark[e->outputs[k]] == CML_GUARD_SAME;
          u->mark[n->first_output + k] = same ? CML_GUARD_SAME : CML_GUARD_MAY_DIFFER;
        }
        break;
      }
      case CML_OP_CALL:
      case CML_OP_SORT: {
        // The callee (comparator) on parameters that may differ; a Call's results may differ.
        const cml_ir_function_t* g = &m->functions[n->attrs->functions[0]];
        for (uint32_t p = 0; p < g->param_count; ++p) u->mark[g->params[p]] = CML_GUARD_MAY_DIFFER;
        cml_guard_uniform_function(u, n->attrs->functions[0]);
        cml_guard_set_outputs(
            u, n, n->op == CML_OP_SORT ? cml_guard_inputs_mark(u, n) : CML_GUARD_MAY_DIFFER);
        break;
      }
      default:
        if (cml_op_group(n->op) == CML_OPG_COLLECTIVE) {
          cml_guard_set_outputs(u, n, CML_GUARD_MAY_DIFFER);  // ReplicaId, PartitionId, ...
        } else {
          cml_guard_set_outputs(u, n, cml_guard_inputs_mark(u, n));
        }
        break;
    }
  }
}

// |guarded|[node]: If / While node whose closures run a collective and whose predicate may
// differ between slots.
static void cml_guard_pick(const cml_module_t* m, const bool* runs, const uint8_t* mark,
                           bool* guarded) {
  for (uint32_t i = 0; i < m->node_count; ++i) {
    const cml_ir_node_t* n = &m->nodes[i];
    if (n->op != CML_OP_IF && n->op != CML_OP_WHILE) continue;
    if (!runs[n->attrs->functions[0]] && !runs[n->attrs->functions[1]]) continue;
    uint32_t pred = n->inputs[0];
    if (n->op == CML_OP_WHILE) {
      const cml_ir_function_t* cond = &m->functions[n->attrs->functions[0]];
      pred = cond->output_count ? cond->outputs[0] : 0;
    }
    guarded[i] = !mark || mark[pred] != CML_GUARD_SAME;
  }
}

bool cml__shlo_guard_node(const cml_module_t* m, const bool* guarded, const cml_ir_node_t* n) {
  return guarded && guarded[n - m->nodes];
}

// |flags|[fi]: function fi holds a guarded node or calls a function that does (its func.func
// returns the flag). Sort comparators do not pass flags on. Call order: callees first.
static bool cml_guard_flags(const cml_module_t* m, uint32_t fi, const bool* guarded, uint8_t* state,
                            bool* flags) {
  if (state[fi] == 2) return flags[fi];
  state[fi] = 2;
  const cml_ir_function_t* f = &m->functions[fi];
  bool any = false;
  for (uint32_t i = 0; i < f->node_count; ++i) {
    const cml_ir_node_t* n = &m->nodes[f->nodes[i]];
    if (cml__shlo_guard_node(m, guarded, n)) any = true;
    uint32_t t[2];
    const uint32_t k = cml__shlo_node_targets(n, t);
    for (uint32_t j = 0; j < k; ++j) {
      if (cml_guard_flags(m, t[j], guarded, state, flags) && n->op != CML_OP_SORT) any = true;
    }
  }
  flags[fi] = any;
  return any;
}

// Whether |module| emitted with |opts| can need guards at all: SPMD on more than one slot.
static bool cml_guard_applies(const cml_module_t* module, const cml_xla_emit_options_t* opts) {
  return module->distribution == CML_DISTRIBUTION_SPMD && opts->num_replicas > 1;
}

cml_status_t cml__shlo_guard_analyze(const cml_module_t* module, const cml_xla_emit_options_t* opts,
                                     bool** out_guarded, bool** out_flags) {
  *out_guarded = NULL;
  *out_flags = NULL;
  if (!cml_guard_applies(module, opts)) return CML_OK;
  const uint32_t count = module->function_count;
  bool* runs = calloc(count, sizeof *runs);
  bool* flags = calloc(count, sizeof *flags);
  bool* guarded = calloc(module->node_count + 1, sizeof *guarded);
  uint8_t* state = calloc(count, 1);
  uint8_t* mark = calloc(module->value_count + 1, 1);
  if (!runs || !flags || !guarded || !state || !mark) {
    free(runs);
    free(flags);
    free(guarded);
    free(state);
    free(mark);
    return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  }
  for (uint32_t fi = 0; fi < count; ++fi) cml_guard_mark(module, fi, state, runs);
  // Which predicates every slot computes alike, from main (its parameters may differ).
  cml_guard_uniform_t u = {module, opts->num_replicas, mark, (uint64_t)1 << 22};
  const cml_ir_function_t* main_fn = &module->functions[0];
  for (uint32_t p = 0; p < main_fn->param_count; ++p)
    mark[main_fn->params[p]] = CML_GUARD_MAY_DIFFER;
  cml_guard_uniform_function(&u, 0);
  cml_guard_pick(module, runs, u.budget > 0 ? mark : NULL, guarded);
  for (uint32_t fi = 0; fi < count; ++fi) (void)cml_guard_flags(module, fi, guarded, state, flags);
  free(runs);
  free(state);
  free(mark);
  *out_guarded = guarded;
  *out_flags = flags;
  return CML_OK;
}

cml_status_t cml_xla_emit_divergence_flag(const cml_module_t* module,
                                          const cml_xla_emit_options_t* opts, bool* out_flag) {
  *out_flag = false;
  bool *guarded = NULL, *flags = NULL;
  CML_RETURN_IF_ERROR(cml__shlo_guard_analyze(module, opts, &guarded, &flags));
  *out_flag = flags && flags[0];
  free(guarded);
  free(flags);
  return CML_OK;
}

//===--- the groups a guard agrees over ---===//

static int32_t cml_guard_find(int32_t* parent, int32_t x) {
  while (parent[x] != x) {
    parent[x] = parent[parent[x]];
    x = parent[x];
  }
  return x;
}

static void cml_guard_union(int32_t* parent, int32_t a, int32_t b) {
  a = cml_guard_find(parent, a);
  b = cml_guard_find(parent, b);
  if (a != b) parent[a > b ? a : b] = a < b ? a : b;
}

// Joins the slots that the collectives function |fi| runs (and what it runs) exchange between.
// Recursion bounded by the checked nesting depth.
static void cml_guard_join(const cml_module_t* m, uint32_t fi, int32_t slots, int32_t* parent) {
  const cml_ir_function_t* f = &m->functions[fi];
  for (uint32_t i = 0; i < f->node_count; ++i) {
    const cml_ir_node_t* n = &m->nodes[f->nodes[i]];
    if (cml_guard_is_exchange(n->op)) {
      const cml_ir_collective_attrs_t* ca = &n->attrs->collective;
      bool grouped = n->op != CML_OP_COLLECTIVE_PERMUTE && ca->groups && ca->group_count > 0 &&
                     ca->group_size > 0;
      if (!grouped) {
        // CollectivePermute (and anything without groups) meets every slot.
        for (int32_t s = 1; s < slots; ++s) cml_guard_union(parent, 0, s);
        continue;
      }
      for (int32_t g = 0; g < ca->group_count; ++g) {
        const int32_t* ids = &ca->groups[(size_t)g * (size_t)ca->group_size];
        for (int32_t k = 1; k < ca->group_size; ++k) {
          if (ids[0] >= 0 && ids[0] < slots && ids[k] >= 0 && ids[k] < slots) {
            cml_guard_union(parent, ids[0], ids[k]);
          }
        }
      }
    }
    uint32_t t[2];
    const uint32_t k = cml__shlo_node_targets(n, t);
    for (uint32_t j = 0; j < k; ++j) cml_guard_join(m, t[j], slots, parent);
  }
}

// The replica groups guard node |n| agrees over: the components of the groups of the
// collectives it runs, in slot order, or one group of every slot when the components differ
// in size (StableHLO groups are rows of one size). Writes |*out_count| rows of |*out_size| ids
// into |*out_ids| (malloc'd).
static cml_status_t cml_guard_groups(const cml__shlo_ctx_t* c, const cml_ir_node_t* n,
                                     int32_t** out_ids, int32_t* out_count, int32_t* out_size) {
  const int32_t slots = c->opts->num_replicas;
  int32_t* parent = malloc((size_t)slots * sizeof *parent);
  int32_t* ids = malloc((size_t)slots * sizeof *ids);
  int32_t* size = calloc((size_t)slots, sizeof *size);
  if (!parent || !ids || !size) {
    free(parent);
    free(ids);
    free(size);
    return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  }
  for (int32_t s = 0; s < slots; ++s) parent[s] = s;
  cml_guard_join(c->module, n->attrs->functions[0], slots, parent);
  cml_guard_join(c->module, n->attrs->functions[1], slots, parent);
  int32_t roots = 0, width = 0;
  bool even = true;
  for (int32_t s = 0; s < slots; ++s) ++size[cml_guard_find(parent, s)];
  for (int32_t s = 0; s < slots; ++s) {
    if (size[s] == 0) continue;
    if (width == 0) width = size[s];
    even = even && size[s] == width;
    ++roots;
  }
  if (!even) {
    for (int32_t s = 0; s < slots; ++s) ids[s] = s;
    *out_count = 1;
    *out_size = slots;
  } else {
    // Row r: the members of the r-th component by smallest slot, in slot order (the root of a
    // component is its smallest slot).
    int32_t k = 0;
    for (int32_t r = 0; r < slots; ++r) {
      if (size[r] == 0) continue;
      for (int32_t s = 0; s < slots; ++s) {
        if (cml_guard_find(parent, s) == r) ids[k++] = s;
      }
    }
    *out_count = roots;
    *out_size = width;
  }
  free(parent);
  free(size);
  *out_ids = ids;
  return CML_OK;
}

//===--- emitted pieces ---===//

cml__shlo_val_t cml__shlo_flag_zero(cml__shlo_ctx_t* c) {
  return cml__shlo_const_scalar(c, CML_DTYPE_I32, CML__SHLO_ZERO);
}

cml__shlo_val_t cml__shlo_flag_max(cml__shlo_ctx_t* c, const cml__shlo_val_t* a,
                                   const cml__shlo_val_t* b) {
  const cml__shlo_val_t ins[2] = {*a, *b};
  return cml__shlo_op(c, "stablehlo.maximum", ins, 2, NULL, &a->shape);
}

cml_status_t cml__shlo_guard_disagrees(cml__shlo_ctx_t* c, const cml_ir_node_t* n,
                                       const cml__shlo_val_t* pred, cml__shlo_val_t* out) {
  int32_t* ids = NULL;
  int32_t count = 0, size = 0;
  CML_RETURN_IF_ERROR(cml_guard_groups(c, n, &ids, &count, &size));
  // (p, 1 - p) as Int32, one all_reduce(max) of both over the groups.
  cml__shlo_val_t parts[2];
  parts[0] = cml__shlo_convert(c, pred, CML_DTYPE_I32);
  const cml__shlo_val_t one = cml__shlo_const_scalar(c, CML_DTYPE_I32, CML__SHLO_ONE);
  const cml__shlo_val_t sub[2] = {one, parts[0]};
  parts[1] = cml__shlo_op(c, "stablehlo.subtract", sub, 2, NULL, &one.shape);
  const cml_shape_t shapes[2] = {one.shape, one.shape};
  cml__shlo_name_t r = cml__shlo_op_begin(c, "stablehlo.all_reduce", parts, 2, 2);
  cml__shlo_printf(c, " ({\n");
  c->indent++;
  const cml_dtype_t dtypes[2] = {CML_DTYPE_I32, CML_DTYPE_I32};
  cml__shlo_val_t args[2];
  cml__shlo_scalar_header(c, dtypes, 2, args);
  const cml__shlo_val_t m = cml__shlo_op(c, "stablehlo.maximum", args, 2, NULL, &one.shape);
  cml__shlo_region_return(c, &m, 1);
  c->indent--;
  cml__shlo_line(c);
  cml__shlo_printf(c, "}) {replica_groups = ");
  cml__shlo_dense_groups(c, ids, count, size);
  cml__shlo_printf(c, "}");
  cml__shlo_op_end(c, NULL, parts, 2, shapes, 2);
  free(ids);
  const cml__shlo_val_t maxima[2] = {{cml__shlo_result(&r, 0), one.shape},
                                     {cml__shlo_result(&r, 1), one.shape}};
  const cml__shlo_val_t both = cml__shlo_op(c, "stablehlo.and", maxima, 2, NULL, &one.shape);
  *out = cml__shlo_convert(c, &both, CML_DTYPE_BOOL);
  return CML_OK;
}

void cml__shlo_guard_record(cml__shlo_ctx_t* c, const cml_ir_node_t* n,
                            const cml__shlo_val_t* disagrees) {
  const int32_t code = (int32_t)(n - c->module->nodes) + 1;
  const cml_shape_t s = cml_shape_scalar(CML_DTYPE_I32);
  const cml__shlo_val_t mark = cml__shlo_constant(c, &s, &code);
  const cml__shlo_val_t zero = cml__shlo_flag_zero(c);
  const cml__shlo_val_t sel[3] = {*disagrees, mark, zero};
  const cml__shlo_val_t now = cml__shlo_op(c, "stablehlo.select", sel, 3, NULL, &s);
  c->flag = cml__shlo_flag_max(c, &c->flag, &now);
}
