// SPDX-License-Identifier: Apache-2.0
// src/core/autodiff_control.c: VJPs of the control group. The barriers pass the cotangent
// through. Call inlines its callee into the differentiated function and differentiates the
// inlined copy; If does the same for each branch inside a closure, and runs the taken one's
// with an If (the forward values are recomputed; the original node still produces them).
// Sort re-sorts with an Iota operand to learn the permutation and scatters the cotangents of
// its results back. While: when its trip count is static (a counter in the state starting at an
// integer constant, the condition `counter < constant`, the body adding 1 to it), a forward loop
// keeps the state each trip starts from and a backward loop differentiates the body trip by
// trip (cml_ad_while_rolled); a state the stacks cannot hold is unrolled (at most 4096 trips);
// otherwise UNIMPLEMENTED.
// Closures that an inlined callee runs itself (a nested While/If/Sort) are copied along with it.
#include <stdio.h>
#include <string.h>

#include "autodiff_internal.h"

static cml_status_t cml_ad_inline_mapped(cml__ad_t* ad, const cml_ir_node_t* n,
                                         const cml_function_t* src, const uint32_t* params,
                                         const uint32_t* outer_map, uint32_t outer_limit,
                                         uint32_t* out_outputs);

// A copy of closure |src| (a callee of a node being inlined) as a closure of ad->f: new
// parameters for its parameters, its nodes inlined, its captures of values of the function
// being inlined translated through |map| (|limit| entries; 0: not one of them, kept). Writes the
// copy's function index.
static cml_status_t cml_ad_clone_closure(cml__ad_t* ad, const cml_ir_node_t* n,
                                         const cml_function_t* src, const uint32_t* map,
                                         uint32_t limit, uint32_t* out_index) {
  cml_builder_t* b = ad->b;
  cml_function_t* clone = NULL;
  cml_status_t st = cml_function_new_closure(ad->f, &clone);
  if (st != CML_OK) return st;
  uint32_t param_count = src->params.count, output_count = src->outputs.count;
  uint32_t* params = cml__temp_alloc(b, (param_count + 1) * sizeof(uint32_t));
  uint32_t* outs = cml__temp_alloc(b, (output_count + 1) * sizeof(uint32_t));
  cml_value_t* results = cml__temp_alloc(b, (output_count + 1) * sizeof(cml_value_t));
  if (params && outs && results) {
    for (uint32_t i = 0; i < param_count && b->error == CML_OK; ++i) {
      char name[24];
      snprintf(name, sizeof name, "p%u", (unsigned)i);
      cml_shape_t shape = ad->impl->values[src->params.data[i]].shape;
      params[i] = cml_parameter(clone, name, &shape) & CML__VALUE_INDEX_MASK;
    }
    cml__ad_t sub = *ad;
    sub.f = clone;
    if (b->error == CML_OK) st = cml_ad_inline_mapped(&sub, n, src, params, map, limit, outs);
    if (st == CML_OK && b->error == CML_OK) {
      for (uint32_t o = 0; o < output_count; ++o) results[o] = cml__value_id(b, outs[o]);
      st = cml_function_return(clone, results, output_count);
    }
  }
  if (results) cml__temp_free(b, results, (output_count + 1) * sizeof(cml_value_t));
  if (outs) cml__temp_free(b, outs, (output_count + 1) * sizeof(uint32_t));
  if (params) cml__temp_free(b, params, (param_count + 1) * sizeof(uint32_t));
  *out_index = clone->index;
  return st;
}

// Inlines |src|'s nodes into ad->f: its parameters stand for |params| (value indices usable in
// ad->f), its captures for src->captures_outer (through |outer_map| where it has an entry: see
// cml_ad_clone_closure). Closures its nodes run (the branches of an If, the body of a While,
// a comparator) are copied as closures of ad->f. Writes the indices of src's outputs' copies.
static cml_status_t cml_ad_inline_mapped(cml__ad_t* ad, const cml_ir_node_t* n,
                                         const cml_function_t* src, const uint32_t* params,
                                         const uint32_t* outer_map, uint32_t outer_limit,
                                         uint32_t* out_outputs) {
  cml__module_impl_t* impl = ad->impl;
  cml_builder_t* b = ad->b;
  cml_function_t* f = ad->f;
  uint32_t limit = impl->value_count;
  uint32_t* map = cml__temp_alloc(b, limit * sizeof(uint32_t));
  uint32_t* ins = NULL;
  cml_shape_t* shapes = NULL;
  uint32_t ins_cap = 0, shapes_cap = 0;
  cml_status_t st = CML_OK;
  if (!map) return CML_OK;  // RESOURCE_EXHAUSTED sticks to the builder
  memset(map, 0, limit * sizeof(uint32_t));
  for (uint32_t k = 0; k < src->nodes.count && st == CML_OK && b->error == CML_OK; ++k) {
    const cml_ir_node_t m = impl->nodes[src->nodes.data[k]];
    if (m.op == CML_OP_PARAMETER) {
      map[m.first_output] = params[m.index];
      continue;
    }
    if (m.op == CML_OP_CAPTURED_VALUE) {
      uint32_t outer = src->captures_outer.data[m.index];
      if (outer_map && outer < outer_limit && outer_map[outer]) outer = outer_map[outer];
      map[m.first_output] = outer;
      continue;
    }
    if (m.op == CML_OP_CONSTANT) {
      cml_shape_t s = impl->values[m.first_output].shape;
      cml_value_t v = cml_constant(f, &s, m.data);
      map[m.first_output] = v & CML__VALUE_INDEX_MASK;
      continue;
    }
    cml_ir_attrs_t attrs;
    if (m.attrs) attrs = *m.attrs;
    for (uint32_t c = 0; c < cml_op_callee_count(m.op) && st == CML_OK; ++c) {
      const cml_function_t* callee = impl->functions[m.attrs->functions[c]];
      if (callee->parent != NULL) {
        st = cml_ad_clone_closure(ad, n, callee, map, limit, &attrs.functions[c]);
      }
    }
    if (st != CML_OK || b->error != CML_OK) break;
    if (m.input_count > ins_cap) {
      if (ins) cml__temp_free(b, ins, ins_cap * sizeof(uint32_t));
      ins_cap = m.input_count;
      ins = cml__temp_alloc(b, ins_cap * sizeof(uint32_t));
      if (!ins) break;
    }
    if (m.output_count > shapes_cap) {
      if (shapes) cml__temp_free(b, shapes, shapes_cap * sizeof(cml_shape_t));
      shapes_cap = m.output_count;
      shapes = cml__temp_alloc(b, shapes_cap * sizeof(cml_shape_t));
      if (!shapes) break;
    }
    if (!cml__op_begin(f, m.op)) break;
    bool ok = true;
    for (uint32_t i = 0; i < m.input_count && ok; ++i) {
      ok = cml__op_input(f, m.op, cml__value_id(b, map[m.inputs[i]]), i, &ins[i], NULL);
    }
    if (!ok) break;
    for (uint32_t o = 0; o < m.output_count; ++o)
      shapes[o] = impl->values[m.first_output + o].shape;
    cml_value_t v = cml__op_add_node(f, m.op, ins, m.input_count, shapes, m.output_count,
                                     m.attrs ? &attrs : NULL);
    if (v == CML_VALUE_INVALID) break;
    for (uint32_t o = 0; o < m.output_count; ++o) {
      map[m.first_output + o] = (v & CML__VALUE_INDEX_MASK) + o;
    }
  }
  // An output that is one of src's captures stands for a value of a function enclosing f: it
  // becomes f's own capture of it, the one value f's other uses read (a VJP seeding the output
  // and asking for that capture's cotangent must find one value, not two).
  for (uint32_t o = 0; o < src->outputs.count && st == CML_OK && b->error == CML_OK; ++o) {
    uint32_t index = map[src->outputs.data[o]];
    if (cml__value_node(impl, index)->function != f->index &&
        !cml__op_input(f, n->op, cml__value_id(b, index), o, &index, NULL)) {
      break;
    }
    out_outputs[o] = index;
  }
  if (ins) cml__temp_free(b, ins, ins_cap * sizeof(uint32_t));
  if (shapes) cml__temp_free(b, shapes, shapes_cap * sizeof(cml_shape_t));
  cml__temp_free(b, map, limit * sizeof(uint32_t));
  return st;
}

static cml_status_t cml_ad_inline(cml__ad_t* ad, const cml_ir_node_t* n, const cml_function_t* src,
                                  const uint32_t* params, uint32_t* out_outputs) {
  return cml_ad_inline_mapped(ad, n, src, params, NULL, 0, out_outputs);
}

static cml_status_t cml_ad_call(cml__ad_t* ad, const cml_ir_node_t* n, const cml_value_t* cts) {
  const cml_function_t* callee = ad->impl->functions[n->attrs->functions[0]];
  uint32_t* outs = cml__temp_alloc(ad->b, (n->output_count + 1) * sizeof(uint32_t));
  if (!outs) return CML_OK;
  uint32_t begin = ad->f->nodes.count;
  cml_status_t st = cml_ad_inline(ad, n, callee, n->inputs, outs);
  if (st == CML_OK && ad->b->error == CML_OK) {
    st = cml__ad_nested(ad, begin, outs, cts, n->output_count);
  }
  cml__temp_free(ad->b, outs, (n->output_count + 1) * sizeof(uint32_t));
  return st;
}

// If: the VJP is an If over two gradient closures. Closure k recomputes branch k (inlined)
// and differentiates it; it returns the cotangent of every outer value that either branch
// gives one (zeros where it gives none), and the If on the same predicate runs only the taken
// branch's. So the untaken branch costs nothing, and its values (NaN or infinite derivatives
// outside its domain) cannot reach a gradient, nor a second derivative of one.
static cml_status_t cml_ad_if(cml__ad_t* ad, const cml_ir_node_t* n, const cml_value_t* cts) {
  cml_builder_t* b = ad->b;
  uint32_t limit = ad->value_limit;
  cml_function_t* closure[2] = {NULL, NULL};
  cml_value_t* branch_ct[2] = {NULL, NULL};
  uint32_t* outs = cml__temp_alloc(b, (n->output_count + 1) * sizeof(uint32_t));
  uint32_t* wanted = cml__temp_alloc(b, (limit + 1) * sizeof(uint32_t));
  cml_value_t* results = cml__temp_alloc(b, (limit + 1) * sizeof(cml_value_t));
  cml_status_t st = CML_OK;
  for (int k = 0; k < 2; ++k) branch_ct[k] = cml__temp_alloc(b, limit * sizeof(cml_value_t));
  bool ready = outs && wanted && results && branch_ct[0] && branch_ct[1];
  for (int k = 0; k < 2 && ready && st == CML_OK && b->error == CML_OK; ++k) {
    st = cml_function_new_closure(ad->f, &closure[k]);
    if (st != CML_OK) break;
    // The branch's differentiation adds its cotangents to branch_ct[k], in closure k: values
    // of ad->f it reads (operands, the cotangents |cts|) become the closure's captures.
    memset(branch_ct[k], 0, limit * sizeof(cml_value_t));
    cml__ad_t sub = *ad;
    sub.f = closure[k];
    sub.ct = branch_ct[k];
    const cml_function_t* branch = ad->impl->functions[n->attrs->functions[k]];
    uint32_t begin = closure[k]->nodes.count;
    st = cml_ad_inline(&sub, n, branch, NULL, outs);
    if (st == CML_OK && b->error == CML_OK) {
      st = cml__ad_nested(&sub, begin, outs, cts, n->output_count);
    }
  }
  if (ready && st == CML_OK && b->error == CML_OK) {
    uint32_t count = 0;
    for (uint32_t v = 0; v < limit; ++v) {
      if (branch_ct[0][v] || branch_ct[1][v]) wanted[count++] = v;
    }
    for (int k = 0; k < 2 && count > 0 && b->error == CML_OK; ++k) {
      cml__ad_t sub = *ad;
      sub.f = closure[k];
      for (uint32_t i = 0; i < count; ++i) {
        cml_shape_t s = ad->impl->values[wanted[i]].shape;
        results[i] = branch_ct[k][wanted[i]] ? branch_ct[k][wanted[i]] : cml__ad_zeros(&sub, &s);
      }
      if (b->error == CML_OK) st = cml_function_return(closure[k], results, count);
      if (st != CML_OK) break;
    }
    if (count > 0 && st == CML_OK && b->error == CML_OK &&
        cml_op_if(ad->f, cml__ad_in(ad, n, 0), closure[0], closure[1], results)) {
      for (uint32_t i = 0; i < count; ++i) cml__ad_accumulate(ad, wanted[i], results[i]);
    }
  }
  for (int k = 0; k < 2; ++k) {
    if (branch_ct[k]) cml__temp_free(b, branch_ct[k], limit * sizeof(cml_value_t));
  }
  if (results) cml__temp_free(b, results, (limit + 1) * sizeof(cml_value_t));
  if (wanted) cml__temp_free(b, wanted, (limit + 1) * sizeof(uint32_t));
  if (outs) cml__temp_free(b, outs, (n->output_count + 1) * sizeof(uint32_t));
  return st;
}

// Sort: the permutation from a re-sort with an Iota operand (the comparator inlined into a
// new closure with two extra, unused parameters), then each result's cotangent scattered back
// to the positions its elements came from.
static cml_status_t cml_ad_sort(cml__ad_t* ad, const cml_ir_node_t* n, const cml_value_t* cts,
                                cml_value_t* in_cts) {
  cml_function_t* f = ad->f;
  cml_builder_t* b = ad->b;
  const cml_function_t* comparator = ad->impl->functions[n->attrs->functions[0]];
  uint32_t count = n->input_count;
  if (count > 31) return cml__ad_no_vjp(ad, n, "more than 31 operands");
  int64_t axis = n->attrs->axis;
  cml_shape_t xs = *cml__ad_in_shape(ad, n, 0);
  // The scatter back to the sorted positions takes static shapes (it reported ScatterSum, an
  // op the caller never wrote).
  if (cml_shape_is_dynamic(&xs)) return cml__ad_no_vjp(ad, n, "a dynamic operand");
  cml_function_t* cmp = NULL;
  cml_status_t st = cml_function_new_closure(f, &cmp);
  if (st != CML_OK) return st;
  uint32_t params[64];
  for (uint32_t i = 0; i < 2 * count + 2; ++i) {
    cml_shape_t s;
    if (i < 2 * count) {
      s = ad->impl->values[comparator->params.data[i]].shape;
    } else {
      s = cml_shape_make(CML_DTYPE_I32, 0, NULL);
    }
    params[i] = cml_parameter(cmp, NULL, &s) & CML__VALUE_INDEX_MASK;
  }
  if (b->error != CML_OK) return CML_OK;
  // Inline the comparator into |cmp| (a temporary context: same module, other function).
  cml__ad_t inner = *ad;
  inner.f = cmp;
  uint32_t result;
  st = cml_ad_inline(&inner, n, comparator, params, &result);
  if (st != CML_OK || b->error != CML_OK) return st;
  cml_value_t r = cml__value_id(b, result);
  CML_RETURN_IF_ERROR(cml_function_return(cmp, &r, 1));
  cml_value_t operands[32], sorted[32];
  for (uint32_t i = 0; i < count; ++i) operands[i] = cml__ad_in(ad, n, i);
  cml_shape_t is = xs;
  is.dtype = CML_DTYPE_I32;
  operands[count] = cml_op_iota(f, &is, axis);
  if (!cml_op_sort(f, cmp, axis, n->attrs->flag, operands, count + 1, sorted)) return CML_OK;
  // Scatter indices [dims..., rank]: the Iota of every axis, the permutation on |axis|.
  cml_value_t parts[CML_MAX_RANK];
  int64_t one_dims[CML_MAX_RANK + 1];
  for (int32_t a = 0; a < xs.rank; ++a) one_dims[a] = xs.dims[a];
  one_dims[xs.rank] = 1;
  for (int32_t a = 0; a < xs.rank; ++a) {
    cml_value_t c = a == axis ? sorted[count] : cml_op_iota(f, &is, a);
    parts[a] = cml_op_reshape(f, c, one_dims, xs.rank + 1);
  }
  cml_value_t indices = cml_op_concatenate(f, xs.rank, parts, (size_t)xs.rank);
  cml_scatter_dims_t sd;
  memset(&sd, 0, sizeof sd);
  sd.index_vector_axis = xs.rank;
  sd.inserted_window_axis_count = xs.rank;
  sd.scatter_axes_to_operand_axes_count = xs.rank;
  for (int32_t a = 0; a < xs.rank; ++a) {
    sd.inserted_window_axes[a] = a;
    sd.scatter_axes_to_operand_axes[a] = a;
  }
  sd.unique_indices = true;
  for (uint32_t i = 0; i < count; ++i) {
    if (!cts[i] || !cml__ad_wants(ad, n, i)) continue;
    const cml_shape_t* s = cml__ad_in_shape(ad, n, i);
    in_cts[i] = cml_op_scatter_sum(f, cml__ad_zeros(ad, s), indices, cts[i], &sd);
  }
  return CML_OK;
}

// The integer value of scalar constant |v| (a value of the function holding it, or captured
// from one: followed through CapturedValue to its parent) as its 64 bits, sign-extended for the
// signed dtypes; |*is_u64| tells whether it is a Uint64 (whose values past INT64_MAX compare as
// unsigned). False when it is not one.
static bool cml_ad_int_constant(const cml__module_impl_t* impl, uint32_t v, int64_t* out,
                                bool* is_u64) {
  *is_u64 = false;
  for (int hops = 0; hops < CML_MAX_NESTING_DEPTH; ++hops) {
    const cml_ir_node_t* n = cml__value_node(impl, v);
    if (n->op == CML_OP_CAPTURED_VALUE) {
      const cml_function_t* c = impl->functions[n->function];
      v = c->captures_outer.data[n->index];
      continue;
    }
    const cml_shape_t* s = &impl->values[v].shape;
    if (n->op != CML_OP_CONSTANT || s->rank != 0) return false;
    // Every integer dtype: the counter's comparison and increment are exact in 64 bits for all
    // of them (signed, or unsigned for Uint64), as long as it does not pass the limit.
    switch (s->dtype) {
      case CML_DTYPE_I8:
        *out = *(const int8_t*)n->data;
        return true;
      case CML_DTYPE_U8:
        *out = *(const uint8_t*)n->data;
        return true;
      case CML_DTYPE_I16: {
        int16_t x;
        memcpy(&x, n->data, sizeof x);
        *out = x;
        return true;
      }
      case CML_DTYPE_U16: {
        uint16_t x;
        memcpy(&x, n->data, sizeof x);
        *out = x;
        return true;
      }
      case CML_DTYPE_I32: {
        int32_t x;
        memcpy(&x, n->data, sizeof x);
        *out = x;
        return true;
      }
      case CML_DTYPE_U32: {
        uint32_t x;
        memcpy(&x, n->data, sizeof x);
        *out = x;
        return true;
      }
      case CML_DTYPE_I64:
        memcpy(out, n->data, sizeof *out);
        return true;
      case CML_DTYPE_U64:
        memcpy(out, n->data, sizeof *out);
        *is_u64 = true;
        return true;
      default:
        return false;
    }
  }
  return false;
}

// The static trip count of While |n|, or -1: the condition is LessThan(state[k], limit) with a
// constant limit, state[k] starts at a constant, and the body returns state[k] + 1.
static int64_t cml_ad_while_trips(const cml__ad_t* ad, const cml_ir_node_t* n) {
  const cml__module_impl_t* impl = ad->impl;
  const cml_function_t* cond = impl->functions[n->attrs->functions[0]];
  const cml_function_t* body = impl->functions[n->attrs->functions[1]];
  if (cond->outputs.count != 1) return -1;
  const cml_ir_node_t* lt = cml__value_node(impl, cond->outputs.data[0]);
  if (lt->op != CML_OP_LESS_THAN) return -1;
  const cml_ir_node_t* counter = cml__value_node(impl, lt->inputs[0]);
  int64_t limit, start;
  bool u64, u64_start, u64_one;
  if (counter->op != CML_OP_PARAMETER || !cml_ad_int_constant(impl, lt->inputs[1], &limit, &u64)) {
    return -1;
  }
  uint32_t k = counter->index;
  if (k >= n->input_count || !cml_ad_int_constant(impl, n->inputs[k], &start, &u64_start)) {
    return -1;
  }
  const cml_ir_node_t* add = cml__value_node(impl, body->outputs.data[k]);
  if (add->op != CML_OP_ADD) return -1;
  for (int side = 0; side < 2; ++side) {
    const cml_ir_node_t* p = cml__value_node(impl, add->inputs[side]);
    int64_t one;
    if (p->op == CML_OP_PARAMETER && p->index == k &&
        cml_ad_int_constant(impl, add->inputs[1 - side], &one, &u64_one) && one == 1) {
      // The operands of LessThan and Add share the counter's dtype: Uint64 compares unsigned.
      if (u64 ? !((uint64_t)limit > (uint64_t)start) : !(limit > start)) return 0;
      // limit - start can pass INT64_MAX (an Int64 counter from INT64_MIN): count in uint64
      // and saturate, so that the caller's "more than 4096" check sees it.
      const uint64_t trips = (uint64_t)limit - (uint64_t)start;
      return trips > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)trips;
    }
  }
  return -1;
}

// The While unrolled: its body inlined |trips| times, then differentiated (loops whose state
// the stacks of cml_ad_while_rolled cannot hold: dynamic shapes, or the maximum rank).
static cml_status_t cml_ad_while_unrolled(cml__ad_t* ad, const cml_ir_node_t* n,
                                          const cml_value_t* cts, int64_t trips) {
  const cml_function_t* body = ad->impl->functions[n->attrs->functions[1]];
  uint32_t count = n->input_count;
  size_t bytes = 2 * ((size_t)count + 1) * sizeof(uint32_t);
  uint32_t* cur = cml__temp_alloc(ad->b, bytes);
  if (!cur) return CML_OK;
  uint32_t* next = cur + count + 1;
  memcpy(cur, n->inputs, count * sizeof(uint32_t));
  uint32_t begin = ad->f->nodes.count;
  cml_status_t st = CML_OK;
  for (int64_t i = 0; i < trips && st == CML_OK && ad->b->error == CML_OK; ++i) {
    st = cml_ad_inline(ad, n, body, cur, next);
    memcpy(cur, next, count * sizeof(uint32_t));
  }
  if (st == CML_OK && ad->b->error == CML_OK) st = cml__ad_nested(ad, begin, cur, cts, count);
  cml__temp_free(ad->b, cur, bytes);
  return st;
}

// Whether the VJP of |op| reads only the shape of its operand |slot|, not its value (the linear
// maps and the data operands of the index ops: their transposes move the cotangent by shapes
// and indices alone).
static bool cml_ad_reads_shape_only(cml_op_t op, uint32_t slot) {
  switch (op) {
    case CML_OP_ADD:
    case CML_OP_SUB:
    case CML_OP_NEG:
    case CML_OP_IDENTITY:
    case CML_OP_OPTIMIZATION_BARRIER:
    case CML_OP_CONCATENATE:
      return true;
    case CML_OP_RESHAPE:
    case CML_OP_TRANSPOSE:
    case CML_OP_BROADCAST_IN_DIM:
    case CML_OP_SLICE:
    case CML_OP_REVERSE:
    case CML_OP_REDUCE_SUM:
    case CML_OP_DYNAMIC_SLICE:
    case CML_OP_GATHER:
      return slot == 0;
    case CML_OP_PAD:
    case CML_OP_DYNAMIC_UPDATE_SLICE:
      return slot <= 1;
    default:
      return false;
  }
}

// Which parameters of While body |body| the backward pass needs the values of (|needed|, one
// per parameter): a value is needed when a node reads it whose VJP reads its value, or whose
// output is needed (the backward pass recomputes it), or a closure the body runs captures it.
// A parameter only moved by linear maps (a buffer the loop writes rows into with
// DynamicUpdateSlice, a running sum) is not: its per-trip values need not be stored.
static void cml_ad_while_needed(cml__ad_t* ad, const cml_function_t* body, bool* needed) {
  const cml__module_impl_t* impl = ad->impl;
  uint32_t limit = impl->value_count;
  bool* mark = cml__temp_alloc(ad->b, (size_t)limit * sizeof(bool));
  if (!mark) {  // RESOURCE_EXHAUSTED sticks to the builder; store every parameter meanwhile
    for (uint32_t i = 0; i < body->params.count; ++i) needed[i] = true;
    return;
  }
  memset(mark, 0, (size_t)limit * sizeof(bool));
  for (uint32_t k = body->nodes.count; k-- > 0;) {
    const cml_ir_node_t* m = &impl->nodes[body->nodes.data[k]];
    bool out_needed = false;
    for (uint32_t o = 0; o < m->output_count; ++o) out_needed |= mark[m->first_output + o];
    for (uint32_t c = 0; c < cml_op_callee_count(m->op); ++c) {
      const cml_function_t* callee = impl->functions[m->attrs->functions[c]];
      for (uint32_t i = 0; callee->parent && i < callee->captures_outer.count; ++i) {
        mark[callee->captures_outer.data[i]] = true;
      }
    }
    for (uint32_t i = 0; i < m->input_count; ++i) {
      if (out_needed || !cml_ad_reads_shape_only(m->op, i)) mark[m->inputs[i]] = true;
    }
  }
  for (uint32_t i = 0; i < body->params.count; ++i) needed[i] = mark[body->params.data[i]];
  cml__temp_free(ad->b, mark, (size_t)limit * sizeof(bool));
}

// While with a static trip count T, differentiated as a loop (JAX's scan does the same):
//  1. a forward While runs the body again and stores the state entering each trip in [T, ...]
//     stacks: the state values the backward pass needs (cml_ad_while_needed), except those the
//     body passes through unchanged (their value is the initial one);
//  2. a backward While runs T trips, t = 0..T-1 for trip j = T-1-t: it reads trip j's state
//     from the stacks, recomputes the body from it (inlined into its own body) and
//     differentiates it, seeded with the carried cotangents of the state; it carries the
//     cotangents of the state and sums those of the values the body captures.
// Both loops count a constant-started counter up to a constant, so they have static trip
// counts themselves (second derivatives). Memory: the stacks, not the graph, grow with T.
typedef struct cml_ad_while_plan_t {
  uint32_t count;        // state elements
  uint32_t diff_count;   // differentiable state elements (their cotangents are carried)
  uint32_t stack_count;  // stored state elements
  uint32_t cap_count;    // captured values that get a cotangent
  cml_shape_t* shapes;   // [count] state shapes
  bool* invariant;       // [count] the body returns its parameter unchanged
  bool* needed;          // [count] the backward pass reads its value
  uint32_t* caps;        // [cap_count] the captured values (of ad->f)
} cml_ad_while_plan_t;

// Whether value |v| is all zeros: a zero constant, or one broadcast.
static bool cml_ad_is_zeros(const cml__module_impl_t* impl, uint32_t v) {
  const cml_ir_node_t* n = cml__value_node(impl, v);
  if (n->op == CML_OP_BROADCAST_IN_DIM) n = cml__value_node(impl, n->inputs[0]);
  if (n->op != CML_OP_CONSTANT) return false;
  const size_t size = cml_shape_byte_size(&impl->values[n->first_output].shape);
  const uint8_t* data = n->data;
  for (size_t i = 0; i < size; ++i) {
    if (data[i]) return false;
  }
  return true;
}

// |acc| + |g| in |f|, where |g| is often a cotangent of a captured array the body reads one
// window or row of: DynamicUpdateSlice(zeros, u, starts) (a DynamicSlice's VJP) becomes
// DynamicUpdateSlice(acc, DynamicSlice(acc, starts) + u, starts), ScatterSum(zeros, i, u) (a
// Gather's) becomes ScatterSum(acc, i, u), and sums of such terms are added one by one. So a
// loop's running sum touches the window it adds, not the whole array, on every trip (both
// clamp the starts alike).
static cml_value_t cml_ad_add_into(cml__ad_t* ad, cml_function_t* f, cml_value_t acc, cml_value_t g,
                                   int depth) {
  const cml__module_impl_t* impl = ad->impl;
  cml_builder_t* b = ad->b;
  const uint32_t gi = g & CML__VALUE_INDEX_MASK;
  const cml_ir_node_t node = *cml__value_node(impl, gi);
  const cml_shape_t gs = impl->values[gi].shape;
  if (node.op == CML_OP_ADD && depth < 8 &&
      cml_shape_equal(&impl->values[node.inputs[0]].shape, &gs) &&
      cml_shape_equal(&impl->values[node.inputs[1]].shape, &gs)) {
    acc = cml_ad_add_into(ad, f, acc, cml__value_id(b, node.inputs[0]), depth + 1);
    return cml_ad_add_into(ad, f, acc, cml__value_id(b, node.inputs[1]), depth + 1);
  }
  if (node.op == CML_OP_DYNAMIC_UPDATE_SLICE && cml_ad_is_zeros(impl, node.inputs[0])) {
    const cml_shape_t us = impl->values[node.inputs[1]].shape;
    cml_value_t starts[CML_MAX_RANK];
    for (int32_t a = 0; a < gs.rank; ++a) starts[a] = cml__value_id(b, node.inputs[2 + a]);
    cml_value_t window = cml_op_dynamic_slice(f, acc, starts, us.dims, us.rank);
    cml_value_t sum = cml_op_add(f, window, cml__value_id(b, node.inputs[1]));
    return cml_op_dynamic_update_slice(f, acc, sum, starts, gs.rank);
  }
  if (node.op == CML_OP_SCATTER_SUM && node.input_count == 3 &&
      cml_ad_is_zeros(impl, node.inputs[0])) {
    return cml_op_scatter_sum(f, acc, cml__value_id(b, node.inputs[1]),
                              cml__value_id(b, node.inputs[2]), &node.attrs->u.scatter);
  }
  return cml_op_add(f, acc, g);
}

// [trips, shape...]: a state element's stack (shape's rank is below CML_MAX_RANK).
static cml_shape_t cml_ad_stack_shape(const cml_shape_t* shape, int64_t trips) {
  cml_shape_t stack = *shape;
  memmove(stack.dims + 1, stack.dims, (size_t)stack.rank * sizeof(int64_t));
  stack.dims[0] = trips;
  ++stack.rank;
  return stack;
}

// The forward loop that stores the stacks computes the original While's results too: the
// original node becomes an OptimizationBarrier of the storing loop's first |n|->input_count
// results (so its values, which the function and the gradient ops read, keep their ids and
// the loop runs once), and the storing loop's nodes (from position |mark| of ad->f's list to
// the end) move to just before it. Moving them keeps the list topological: they read only
// values made before the original While (its operands, and constants). The backward pass is
// past that position, and the nodes before it keep theirs. Skipped when the backend has no
// OptimizationBarrier (the loop then runs twice).
static void cml_ad_while_replace(cml__ad_t* ad, const cml_ir_node_t* n, uint32_t mark,
                                 const cml_value_t* results) {
  cml_builder_t* b = ad->b;
  cml_function_t* f = ad->f;
  cml__module_impl_t* impl = ad->impl;
  if (b->error != CML_OK ||
      !cml_capabilities_has_op(cml_backend_capabilities(b->backend), CML_OP_OPTIMIZATION_BARRIER)) {
    return;
  }
  const uint32_t wi = impl->values[n->first_output].node, end = f->nodes.count;
  uint32_t at = mark;
  while (at-- > 0 && f->nodes.data[at] != wi) {
  }
  if (at >= mark || end <= mark) return;  // (not in |f|: nothing to do)
  uint32_t* moved = cml__temp_alloc(b, (size_t)(end - mark) * sizeof(uint32_t));
  if (!moved) return;
  memcpy(moved, &f->nodes.data[mark], (size_t)(end - mark) * sizeof(uint32_t));
  memmove(&f->nodes.data[at + (end - mark)], &f->nodes.data[at],
          (size_t)(mark - at) * sizeof(uint32_t));
  memcpy(&f->nodes.data[at], moved, (size_t)(end - mark) * sizeof(uint32_t));
  cml__temp_free(b, moved, (size_t)(end - mark) * sizeof(uint32_t));
  // A new operand list: the old one is still read (the caller's copy of the node names the
  // While's operands, which get the cotangents).
  const uint32_t count = impl->nodes[wi].input_count;
  uint32_t* inputs = cml__arena_alloc(&impl->arena, (size_t)count * sizeof(uint32_t), 8);
  cml_ir_attrs_t* attrs = cml__arena_alloc(&impl->arena, sizeof *attrs, 16);
  if (!inputs || !attrs) return;  // (the loop then runs twice)
  memset(attrs, 0, sizeof *attrs);
  for (uint32_t i = 0; i < count; ++i) inputs[i] = results[i] & CML__VALUE_INDEX_MASK;
  cml_ir_node_t* w = &impl->nodes[wi];
  w->inputs = inputs;
  w->op = CML_OP_OPTIMIZATION_BARRIER;
  w->attrs = attrs;
}

static cml_status_t cml_ad_while_rolled(cml__ad_t* ad, const cml_ir_node_t* n,
                                        const cml_value_t* cts, cml_value_t* in_cts, int64_t trips,
                                        const cml_ad_while_plan_t* plan) {
  cml_builder_t* b = ad->b;
  cml_function_t* f = ad->f;
  const cml_function_t* cond = ad->impl->functions[n->attrs->functions[0]];
  const cml_function_t* body = ad->impl->functions[n->attrs->functions[1]];
  const uint32_t count = plan->count, nd = plan->diff_count, nc = plan->cap_count;
  const uint32_t w1_count = count + 1 + plan->stack_count, w2_count = 1 + nd + nc;
  const uint32_t width = (w1_count > w2_count ? w1_count : w2_count) + 1;
  // Scratch: value indices and ids, |width|, |nd + nc + 1| or |count + 1| long.
  size_t bytes = (size_t)width * (3 * sizeof(uint32_t) + 3 * sizeof(cml_value_t)) +
                 (size_t)(nd + nc + 1) * (sizeof(uint32_t) + sizeof(cml_value_t)) +
                 ((size_t)count + 1) * (sizeof(uint32_t) + sizeof(cml_value_t));
  uint8_t* scratch = cml__temp_alloc(b, bytes);
  if (!scratch) return CML_OK;  // RESOURCE_EXHAUSTED sticks to the builder
  uint32_t* params = (uint32_t*)scratch;
  uint32_t* outs = params + width;
  uint32_t* wrt = outs + width;
  uint32_t* seed_at = wrt + width;  // [nd + nc + 1]
  cml_value_t* vals = (cml_value_t*)(seed_at + nd + nc + 1);
  cml_value_t* init = vals + width;
  cml_value_t* res = init + width;
  cml_value_t* grads = res + width;                  // [nd + nc + 1]
  cml_value_t* seeds = grads + nd + nc + 1;          // [count + 1]: the body's outputs' seeds
  uint32_t* bouts = (uint32_t*)(seeds + count + 1);  // [count + 1]: the inlined body's outputs
  cml_status_t st = CML_OK;
  const cml_shape_t i64 = cml_shape_make(CML_DTYPE_I64, 0, NULL);

  // 1. The forward loop with stacks (its nodes in |f| from position |mark| on).
  const uint32_t mark = f->nodes.count;
  cml_function_t *cond1 = NULL, *body1 = NULL;
  if ((st = cml_function_new_closure(f, &cond1)) != CML_OK) goto done;
  if ((st = cml_function_new_closure(f, &body1)) != CML_OK) goto done;
  for (int which = 0; which < 2 && b->error == CML_OK; ++which) {
    cml_function_t* c = which ? body1 : cond1;
    cml__ad_t sub = *ad;
    sub.f = c;
    uint32_t p = 0;
    for (uint32_t i = 0; i < count; ++i) {
      params[p++] = cml_parameter(c, NULL, &plan->shapes[i]) & CML__VALUE_INDEX_MASK;
    }
    params[p++] = cml_parameter(c, NULL, &i64) & CML__VALUE_INDEX_MASK;
    for (uint32_t i = 0; i < count; ++i) {
      if (!plan->needed[i] || plan->invariant[i]) continue;
      const cml_shape_t stack = cml_ad_stack_shape(&plan->shapes[i], trips);
      params[p++] = cml_parameter(c, NULL, &stack) & CML__VALUE_INDEX_MASK;
    }
    if (b->error != CML_OK) break;
    st = cml_ad_inline(&sub, n, which ? body : cond, params, outs);
    if (st != CML_OK || b->error != CML_OK) break;
    if (!which) {
      cml_value_t r = cml__value_id(b, outs[0]);
      st = cml_function_return(c, &r, 1);
      if (st != CML_OK) break;
      continue;
    }
    for (uint32_t i = 0; i < count; ++i) res[i] = cml__value_id(b, outs[i]);
    cml_value_t t = cml__value_id(b, params[count]);
    res[count] = cml_op_add(c, t, cml_constant_scalar_i64(c, CML_DTYPE_I64, 1));
    cml_value_t starts[CML_MAX_RANK + 1], zero = cml_constant_scalar_i64(c, CML_DTYPE_I64, 0);
    starts[0] = t;
    for (int32_t a = 1; a <= CML_MAX_RANK; ++a) starts[a] = zero;
    uint32_t s = count + 1;
    for (uint32_t i = 0; i < count; ++i) {
      if (!plan->needed[i] || plan->invariant[i]) continue;
      const cml_shape_t* is = &plan->shapes[i];
      int64_t row[CML_MAX_RANK + 1];
      row[0] = 1;
      memcpy(row + 1, is->dims, (size_t)is->rank * sizeof(int64_t));
      cml_value_t update = cml_op_reshape(c, cml__value_id(b, params[i]), row, is->rank + 1);
      res[s] =
          cml_op_dynamic_update_slice(c, cml__value_id(b, params[s]), update, starts, is->rank + 1);
      ++s;
    }
    if (b->error == CML_OK) st = cml_function_return(c, res, w1_count);
  }
  if (st != CML_OK || b->error != CML_OK) goto done;
  for (uint32_t i = 0; i < count; ++i) init[i] = cml__ad_in(ad, n, i);
  init[count] = cml_constant_scalar_i64(f, CML_DTYPE_I64, 0);
  for (uint32_t i = 0, s = count + 1; i < count; ++i) {
    if (!plan->needed[i] || plan->invariant[i]) continue;
    const cml_shape_t stack = cml_ad_stack_shape(&plan->shapes[i], trips);
    init[s++] = cml__ad_zeros(ad, &stack);
  }
  if (!cml_op_while(f, cond1, body1, init, w1_count, vals)) goto done;
  // vals[count + 1 ...]: the stacks.
  cml_ad_while_replace(ad, n, mark, vals);

  // 2. The backward loop: state (t, the state's cotangents, the captures' sums).
  cml_function_t *cond2 = NULL, *body2 = NULL;
  if ((st = cml_function_new_closure(f, &cond2)) != CML_OK) goto done;
  if ((st = cml_function_new_closure(f, &body2)) != CML_OK) goto done;
  for (int which = 0; which < 2 && b->error == CML_OK; ++which) {
    cml_function_t* c = which ? body2 : cond2;
    cml__ad_t sub = *ad;
    sub.f = c;
    uint32_t p = 0;
    params[p++] = cml_parameter(c, NULL, &i64) & CML__VALUE_INDEX_MASK;
    for (uint32_t i = 0; i < count; ++i) {
      if (cml__ad_differentiable(plan->shapes[i].dtype)) {
        params[p++] = cml_parameter(c, NULL, &plan->shapes[i]) & CML__VALUE_INDEX_MASK;
      }
    }
    for (uint32_t k = 0; k < nc; ++k) {
      cml_shape_t cs = ad->impl->values[plan->caps[k]].shape;
      params[p++] = cml_parameter(c, NULL, &cs) & CML__VALUE_INDEX_MASK;
    }
    if (b->error != CML_OK) break;
    cml_value_t t = cml__value_id(b, params[0]);
    if (!which) {
      cml_value_t r = cml_op_less_than(c, t, cml_constant_scalar_i64(c, CML_DTYPE_I64, trips));
      st = cml_function_return(c, &r, 1);
      if (st != CML_OK) break;
      continue;
    }
    // Trip j's state: stored, unchanged (the initial value), or a placeholder nobody reads.
    cml_value_t j = cml_op_sub(c, cml_constant_scalar_i64(c, CML_DTYPE_I64, trips - 1), t);
    cml_value_t starts[CML_MAX_RANK + 1], zero = cml_constant_scalar_i64(c, CML_DTYPE_I64, 0);
    starts[0] = j;
    for (int32_t a = 1; a <= CML_MAX_RANK; ++a) starts[a] = zero;
    uint32_t* state = outs;  // the body's parameters in |c|
    for (uint32_t i = 0, s = count + 1; i < count && b->error == CML_OK; ++i) {
      const cml_shape_t* is = &plan->shapes[i];
      cml_value_t v;
      if (plan->invariant[i]) {
        uint32_t index = 0;
        if (!cml__op_input(c, CML_OP_WHILE, cml__ad_in(ad, n, i), i, &index, NULL)) break;
        state[i] = index;
        continue;
      }
      if (plan->needed[i]) {
        int64_t row[CML_MAX_RANK + 1];
        row[0] = 1;
        memcpy(row + 1, is->dims, (size_t)is->rank * sizeof(int64_t));
        v = cml_op_dynamic_slice(c, vals[s++], starts, row, is->rank + 1);
        v = cml_op_reshape(c, v, is->dims, is->rank);
      } else {
        v = cml__ad_zeros(&sub, is);
      }
      state[i] = v & CML__VALUE_INDEX_MASK;
    }
    uint32_t nw = 0;
    for (uint32_t i = 0; i < count; ++i) {
      if (cml__ad_differentiable(plan->shapes[i].dtype)) wrt[nw++] = state[i];
    }
    for (uint32_t k = 0; k < nc && b->error == CML_OK; ++k) {
      uint32_t index = 0;
      if (!cml__op_input(c, CML_OP_WHILE, cml__value_id(b, plan->caps[k]), k, &index, NULL)) break;
      wrt[nw++] = index;
    }
    if (b->error != CML_OK) break;
    // A value listed twice (two unchanged state elements with one initial value, or a capture
    // that is also one) gets its cotangent once, at its first place: the sums stay right.
    for (uint32_t w = 0; w < nw; ++w) {
      seed_at[w] = w;
      for (uint32_t e = 0; e < w; ++e) {
        if (wrt[e] == wrt[w]) {
          seed_at[w] = e;
          break;
        }
      }
    }
    uint32_t begin = c->nodes.count;
    st = cml_ad_inline(&sub, n, body, state, bouts);
    uint32_t ns = 0;
    for (uint32_t i = 0, d = 0; i < count && st == CML_OK && b->error == CML_OK; ++i) {
      if (!cml__ad_differentiable(plan->shapes[i].dtype)) continue;
      bouts[ns] = bouts[i];
      seeds[ns++] = cml__value_id(b, params[1 + d++]);
    }
    if (st == CML_OK && b->error == CML_OK) {
      st = cml__ad_inner_vjp_seeds(&sub, begin, bouts, seeds, ns, wrt, nw, grads);
    }
    if (st != CML_OK || b->error != CML_OK) break;
    res[0] = cml_op_add(c, t, cml_constant_scalar_i64(c, CML_DTYPE_I64, 1));
    for (uint32_t w = 0; w < nw; ++w) {
      cml_value_t g = seed_at[w] == w ? grads[w] : CML_VALUE_INVALID;
      cml_value_t carried = cml__value_id(b, params[1 + w]);
      if (w < nd) {  // the state's cotangent
        cml_shape_t ws = ad->impl->values[wrt[w]].shape;
        res[1 + w] = g ? g : cml__ad_zeros(&sub, &ws);
      } else {  // a capture's running sum
        res[1 + w] = g ? cml_ad_add_into(ad, c, carried, g, 0) : carried;
      }
    }
    if (b->error == CML_OK) st = cml_function_return(c, res, w2_count);
  }
  if (st != CML_OK || b->error != CML_OK) goto done;
  init[0] = cml_constant_scalar_i64(f, CML_DTYPE_I64, 0);
  for (uint32_t i = 0, d = 0; i < count; ++i) {
    if (!cml__ad_differentiable(plan->shapes[i].dtype)) continue;
    init[1 + d++] = cts[i] ? cts[i] : cml__ad_zeros(ad, &plan->shapes[i]);
  }
  for (uint32_t k = 0; k < nc; ++k) {
    cml_shape_t cs = ad->impl->values[plan->caps[k]].shape;
    init[1 + nd + k] = cml__ad_zeros(ad, &cs);
  }
  if (!cml_op_while(f, cond2, body2, init, w2_count, res)) goto done;
  for (uint32_t i = 0, d = 0; i < count; ++i) {
    if (!cml__ad_differentiable(plan->shapes[i].dtype)) continue;
    if (cml__ad_wants(ad, n, i)) in_cts[i] = res[1 + d];
    ++d;
  }
  for (uint32_t k = 0; k < nc; ++k) cml__ad_accumulate(ad, plan->caps[k], res[1 + nd + k]);
done:
  cml__temp_free(b, scratch, bytes);
  return st;
}

static cml_status_t cml_ad_while(cml__ad_t* ad, const cml_ir_node_t* n, const cml_value_t* cts,
                                 cml_value_t* in_cts) {
  int64_t trips = cml_ad_while_trips(ad, n);
  if (trips < 0) {
    return cml__ad_no_vjp(ad, n,
                          "no static trip count: the condition must be `counter < constant` "
                          "with the counter starting at a constant and the body adding 1");
  }
  const cml__module_impl_t* impl = ad->impl;
  const cml_function_t* body = impl->functions[n->attrs->functions[1]];
  const uint32_t count = n->input_count;
  if (trips == 0) {  // the state passes through
    for (uint32_t i = 0; i < count; ++i) in_cts[i] = cts[i];
    return CML_OK;
  }
  cml_ad_while_plan_t plan;
  memset(&plan, 0, sizeof plan);
  plan.count = count;
  const uint32_t cap_limit = body->captures_outer.count;
  size_t bytes = ((size_t)count + 1) * (sizeof(cml_shape_t) + 2 * sizeof(bool)) +
                 ((size_t)cap_limit + 1) * sizeof(uint32_t);
  uint8_t* scratch = cml__temp_alloc(ad->b, bytes);
  if (!scratch) return CML_OK;
  plan.shapes = (cml_shape_t*)scratch;
  plan.caps = (uint32_t*)(plan.shapes + count + 1);
  plan.invariant = (bool*)(plan.caps + cap_limit + 1);
  plan.needed = plan.invariant + count + 1;
  bool dynamic = false;
  for (uint32_t i = 0; i < count; ++i) {
    plan.shapes[i] = impl->values[n->inputs[i]].shape;
    dynamic |= cml_shape_is_dynamic(&plan.shapes[i]);
    plan.invariant[i] = body->outputs.data[i] == body->params.data[i];
    if (cml__ad_differentiable(plan.shapes[i].dtype)) ++plan.diff_count;
  }
  cml_ad_while_needed(ad, body, plan.needed);
  for (uint32_t k = 0; k < cap_limit; ++k) {
    uint32_t v = body->captures_outer.data[k];
    const cml_shape_t* s = &impl->values[v].shape;
    dynamic |= cml_shape_is_dynamic(s);
    if (v < ad->value_limit && ad->relevant[v] && cml__ad_differentiable(s->dtype)) {
      plan.caps[plan.cap_count++] = v;
    }
  }
  // The stacks' size: T copies of each stored state element.
  uint64_t trip_bytes = 0;
  bool max_rank = false;  // a stack would need one axis more than CML_MAX_RANK allows
  for (uint32_t i = 0; i < count && !dynamic; ++i) {
    if (!plan.needed[i] || plan.invariant[i]) continue;
    ++plan.stack_count;
    max_rank |= plan.shapes[i].rank >= CML_MAX_RANK;
    trip_bytes += cml_shape_byte_size(&plan.shapes[i]);
  }
  const uint64_t stack_limit = UINT64_C(1) << 40;
  bool too_big = trip_bytes != 0 && (uint64_t)trips > stack_limit / trip_bytes;
  cml_status_t st = CML_OK;
  if (dynamic || max_rank) {
    // The stacks cannot hold these (dynamic shapes, or a rank-CML_MAX_RANK state): unroll.
    if (trips > 4096) {
      st = cml__ad_no_vjp(ad, n,
                          dynamic ? "a state or captured value of dynamic shape, and more than "
                                    "4096 iterations to unroll"
                                  : "a state element of the maximum rank to keep per iteration, "
                                    "and more than 4096 iterations to unroll");
    } else {
      st = cml_ad_while_unrolled(ad, n, cts, trips);
    }
  } else if (too_big) {
    char why[200];
    snprintf(why, sizeof why,
             "%lld iterations: the %u state element(s) the backward pass reads, %llu bytes per "
             "iteration, would take more than 1 TiB to keep",
             (long long)trips, (unsigned)plan.stack_count, (unsigned long long)trip_bytes);
    st = cml__ad_no_vjp(ad, n, why);
  } else {
    st = cml_ad_while_rolled(ad, n, cts, in_cts, trips, &plan);
  }
  cml__temp_free(ad->b, scratch, bytes);
  return st;
}

cml_status_t cml__ad_vjp_control(cml__ad_t* ad, const cml_ir_node_t* n, const cml_value_t* cts,
                                 cml_value_t* in_cts) {
  switch (n->op) {
    case CML_OP_OPTIMIZATION_BARRIER:
      for (uint32_t i = 0; i < n->input_count; ++i) in_cts[i] = cts[i];
      return CML_OK;
    case CML_OP_SCHEDULING_BARRIER:
      in_cts[0] = cts[0];
      return CML_OK;
    case CML_OP_CALL:
      return cml_ad_call(ad, n, cts);
    case CML_OP_IF:
      return cml_ad_if(ad, n, cts);
    case CML_OP_SORT:
      return cml_ad_sort(ad, n, cts, in_cts);
    case CML_OP_WHILE:
      return cml_ad_while(ad, n, cts, in_cts);
    default:
      return cml__ad_no_vjp(ad, n, NULL);
  }
}
