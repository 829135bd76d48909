// SPDX-License-Identifier: Apache-2.0
// src/core/autodiff_control.c: VJPs of the control group. The barriers pass the cotangent
// through. Call inlines its callee into the differentiated function and differentiates the
// inlined copy; If does the same for each branch inside a closure, and runs the taken one's
// with an If (the forward values are recomputed; the original node still produces them).
// Sort re-sorts with an Iota operand to learn the permutation and scatters the cotangents of
// its results back. While: when its trip count is static (a counter in the state starting at an
// integer constant, the condition `counter < constant`, the body adding 1 to it), the body is
// unrolled (inlined that many times, at most 4096) and differentiated; otherwise UNIMPLEMENTED.
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
  if (st == CML_OK && b->error == CML_OK) {
    for (uint32_t o = 0; o < src->outputs.count; ++o) out_outputs[o] = map[src->outputs.data[o]];
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

static cml_status_t cml_ad_while(cml__ad_t* ad, const cml_ir_node_t* n, const cml_value_t* cts) {
  int64_t trips = cml_ad_while_trips(ad, n);
  if (trips < 0) {
    return cml__ad_no_vjp(ad, n,
                          "no static trip count: the condition must be `counter < constant` "
                          "with the counter starting at a constant and the body adding 1");
  }
  if (trips > 4096) return cml__ad_no_vjp(ad, n, "more than 4096 iterations to unroll");
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
      return cml_ad_while(ad, n, cts);
    default:
      return cml__ad_no_vjp(ad, n, NULL);
  }
}
