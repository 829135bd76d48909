// SPDX-License-Identifier: Apache-2.0
// src/core/autodiff.c: cml_gradients (reverse-mode differentiation over a function's nodes),
// StopGradient, and the helpers the per-group VJP rules (autodiff_<group>.c) share.
#include <stdio.h>
#include <string.h>

#include "autodiff_internal.h"

//===--- helpers for the rules ---===//

cml_value_t cml__ad_in(const cml__ad_t* ad, const cml_ir_node_t* n, uint32_t i) {
  return cml__value_id(ad->b, n->inputs[i]);
}

cml_value_t cml__ad_out(const cml__ad_t* ad, const cml_ir_node_t* n, uint32_t k) {
  return cml__value_id(ad->b, n->first_output + k);
}

const cml_shape_t* cml__ad_in_shape(const cml__ad_t* ad, const cml_ir_node_t* n, uint32_t i) {
  (void)n;
  return &ad->in_shapes[i];
}

const cml_shape_t* cml__ad_out_shape(const cml__ad_t* ad, const cml_ir_node_t* n, uint32_t k) {
  (void)n;
  return &ad->out_shapes[k];
}

cml_shape_t cml__ad_shape(const cml__ad_t* ad, cml_value_t v) {
  cml_shape_t s;
  cml_builder_value_shape(ad->b, v, &s);
  return s;
}

bool cml__ad_wants(const cml__ad_t* ad, const cml_ir_node_t* n, uint32_t i) {
  uint32_t v = n->inputs[i];
  return v < ad->value_limit && ad->relevant[v];
}

cml_value_t cml__ad_scalar(cml__ad_t* ad, cml_dtype_t dtype, double value) {
  return cml_constant_scalar_f64(ad->f, dtype, value);
}

cml_value_t cml__ad_zeros(cml__ad_t* ad, const cml_shape_t* shape) {
  cml_value_t z = cml__ad_scalar(ad, shape->dtype, 0.0);
  if (shape->rank == 0) return z;
  return cml_op_broadcast_in_dim(ad->f, z, shape->dims, shape->rank, NULL, 0);
}

cml_value_t cml__ad_broadcast_to(cml__ad_t* ad, cml_value_t v, const cml_shape_t* shape) {
  cml_shape_t s = cml__ad_shape(ad, v);
  if (cml_shape_equal(&s, shape)) return v;
  if (s.rank == 0) return cml_op_broadcast_in_dim(ad->f, v, shape->dims, shape->rank, NULL, 0);
  int64_t axes[CML_MAX_RANK];
  for (int32_t i = 0; i < s.rank; ++i) axes[i] = i;
  return cml_op_broadcast_in_dim(ad->f, v, shape->dims, shape->rank, axes, s.rank);
}

cml_value_t cml__ad_unbroadcast(cml__ad_t* ad, cml_value_t ct, const cml_shape_t* shape) {
  cml_shape_t s = cml__ad_shape(ad, ct);
  if (s.rank == shape->rank) {
    int64_t axes[CML_MAX_RANK];
    int32_t count = 0;
    for (int32_t i = 0; i < s.rank; ++i) {
      if (shape->dims[i] == 1 && s.dims[i] != 1) axes[count++] = i;
    }
    if (count == 0) return ct;
    return cml__ad_sum_keep(ad, ct, axes, count);
  }
  if (shape->rank == 0) return cml_op_reduce_sum(ad->f, ct, NULL, 0);
  // Not a broadcast the builders accept: let Reshape report the mismatch.
  return cml_op_reshape(ad->f, ct, shape->dims, shape->rank);
}

cml_value_t cml__ad_sum_keep(cml__ad_t* ad, cml_value_t x, const int64_t* axes, int32_t count) {
  cml_shape_t s = cml__ad_shape(ad, x);
  cml_value_t r = cml_op_reduce_sum(ad->f, x, axes, (size_t)count);
  for (int32_t i = 0; i < count; ++i) s.dims[axes[i]] = 1;
  return cml_op_reshape(ad->f, r, s.dims, s.rank);
}

cml_value_t cml__ad_mul(cml__ad_t* ad, cml_value_t x, cml_value_t y) {
  return cml_op_mul(ad->f, x, y);
}
cml_value_t cml__ad_add(cml__ad_t* ad, cml_value_t x, cml_value_t y) {
  return cml_op_add(ad->f, x, y);
}
cml_value_t cml__ad_sub(cml__ad_t* ad, cml_value_t x, cml_value_t y) {
  return cml_op_sub(ad->f, x, y);
}
cml_value_t cml__ad_div(cml__ad_t* ad, cml_value_t x, cml_value_t y) {
  return cml_op_div(ad->f, x, y);
}

cml_value_t cml__ad_convert(cml__ad_t* ad, cml_value_t x, cml_dtype_t dtype) {
  cml_shape_t s = cml__ad_shape(ad, x);
  if (s.dtype == dtype) return x;
  return cml_op_convert_dtype(ad->f, x, dtype);
}

cml_status_t cml__ad_no_vjp(cml__ad_t* ad, const cml_ir_node_t* n, const char* why) {
  char operands[512] = "";
  size_t used = 0;
  for (uint32_t i = 0; i < n->input_count && i < 4 && used < sizeof operands; ++i) {
    char text[CML__SHAPE_TEXT];
    int k = snprintf(operands + used, sizeof operands - used, "%s%s", i ? ", " : "",
                     cml__shape_text(cml__ad_in_shape(ad, n, i), text));
    if (k > 0) used += (size_t)k;
  }
  return cml_status_make(CML_STATUS_UNIMPLEMENTED,
                         "%s: no VJP%s%s%s (operands %s); cml_gradients cannot differentiate "
                         "through it",
                         cml_op_name(n->op), why ? " (" : "", why ? why : "", why ? ")" : "",
                         n->input_count ? operands : "none");
}

//===--- StopGradient ---===//

static bool cml_ad_is_stop(const cml_ir_node_t* n) {
  return n->op == CML_OP_IDENTITY && n->attrs && n->attrs->flag;
}

// After a failed cml__op_begin / cml__op_input for StopGradient: the error they recorded names
// the Identity op it is built from; it is renamed to the function the caller called.
static cml_value_t cml_ad_stop_failed(cml_function_t* f, cml_status_t before) {
  cml_builder_t* b = f && f->builder ? f->builder : NULL;
  static const char kFrom[] = "Identity:";
  if (b && b->error != CML_OK && b->error != before &&
      strncmp(cml_status_message(b->error), kFrom, sizeof kFrom - 1) == 0) {
    cml_status_t renamed = cml_status_make(cml_status_code(b->error), "StopGradient:%s",
                                           cml_status_message(b->error) + sizeof kFrom - 1);
    cml_status_free(b->error);
    b->error = renamed;
  }
  return CML_VALUE_INVALID;
}

cml_value_t cml_op_stop_gradient(cml_function_t* f, cml_value_t x) {
  const cml_status_t before = f && f->builder ? f->builder->error : CML_OK;
  if (!cml__op_begin(f, CML_OP_IDENTITY)) return cml_ad_stop_failed(f, before);
  uint32_t in;
  cml_shape_t s;
  if (!cml__op_input(f, CML_OP_IDENTITY, x, 0, &in, &s)) return cml_ad_stop_failed(f, before);
  cml_status_t st = cml__infer_check_dtype(CML_OP_IDENTITY, &s, "operand", true);
  if (st != CML_OK) {
    char text[CML__SHAPE_TEXT];
    cml_status_free(st);
    return cml__fail(f->builder, CML_STATUS_INVALID_ARGUMENT,
                     "StopGradient: operand %s has an unsupported dtype",
                     cml__shape_text(&s, text));
  }
  cml_ir_attrs_t attrs;
  memset(&attrs, 0, sizeof attrs);
  attrs.flag = true;  // Identity: marks a gradient stop (see cml/autodiff.h)
  return cml__op_add_node(f, CML_OP_IDENTITY, &in, 1, &s, 1, &attrs);
}

//===--- the differentiator ---===//

static cml__ad_rule_fn* cml_ad_rule(cml_op_t op) {
  switch (cml_op_group(op)) {
    case CML_OPG_ELEMENTWISE:
      return cml__ad_vjp_elementwise;
    case CML_OPG_REDUCE:
      return cml__ad_vjp_reduce;
    case CML_OPG_MOVEMENT:
      return cml__ad_vjp_movement;
    case CML_OPG_INDEX:
      return cml__ad_vjp_index;
    case CML_OPG_WINDOW:
      return cml__ad_vjp_window;
    case CML_OPG_LINALG:
      return cml__ad_vjp_linalg;
    case CML_OPG_SPECIAL:
      return cml__ad_vjp_special;
    case CML_OPG_CONTROL:
      return cml__ad_vjp_control;
    case CML_OPG_FUSED:
      return cml__ad_vjp_fused;
    case CML_OPG_COLLECTIVE:
      return cml__ad_vjp_collective;
    default:
      return NULL;
  }
}

bool cml__ad_differentiable(cml_dtype_t dtype) {
  return (cml_dtype_set_t)(CML_DTYPE_BIT(dtype) & (CML_DSET_FLOAT | CML_DSET_COMPLEX)) != 0;
}

// Checks that |v| is a value of |f| itself; |what| names it in messages.
static cml_status_t cml_ad_check_value(cml_function_t* f, cml_value_t v, const char* what,
                                       size_t pos, uint32_t* out_index) {
  cml_builder_t* b = f->builder;
  uint32_t tag = v >> CML__VALUE_INDEX_BITS, index = v & CML__VALUE_INDEX_MASK;
  if (v == CML_VALUE_INVALID) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "cml_gradients: %s #%zu is CML_VALUE_INVALID", what, pos);
  }
  if (tag != b->tag) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "cml_gradients: %s #%zu (value id 0x%08x) belongs to another builder",
                           what, pos, (unsigned)v);
  }
  if (index == 0 || index >= f->impl->value_count) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "cml_gradients: %s #%zu (value id 0x%08x) is unknown", what, pos,
                           (unsigned)v);
  }
  uint32_t owner = cml__value_node(f->impl, index)->function;
  if (owner != f->index) {
    char text[CML__SHAPE_TEXT];
    const char* owner_name = f->impl->functions[owner]->name;
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "cml_gradients: %s #%zu %s is a value of function \"%s\", not of the "
                           "differentiated function \"%s\" (values of closures, parents and "
                           "other functions are not differentiated)",
                           what, pos, cml__shape_text(&f->impl->values[index].shape, text),
                           owner_name[0] ? owner_name : "<closure>",
                           f->name[0] ? f->name : "<closure>");
  }
  *out_index = index;
  return CML_OK;
}

static cml_status_t cml_ad_fail(cml_builder_t* b, cml_status_t st) {
  cml__fail_status(b, st);
  return cml_builder_status(b);
}

// Whether a value |n| reads (an input, or a value of |f| captured by one of its callees) needs
// a gradient. Callees that are closures of |f| read |f|'s values through their captures.
static bool cml_ad_node_reads_relevant(const cml__ad_t* ad, const cml_ir_node_t* n) {
  for (uint32_t i = 0; i < n->input_count; ++i) {
    if (cml__ad_wants(ad, n, i)) return true;
  }
  uint32_t callees = cml_op_callee_count(n->op);
  for (uint32_t k = 0; k < callees; ++k) {
    const cml_function_t* c = ad->impl->functions[n->attrs->functions[k]];
    for (uint32_t i = 0; i < c->captures_outer.count; ++i) {
      uint32_t v = c->captures_outer.data[i];
      if (v < ad->value_limit && ad->relevant[v]) return true;
    }
  }
  return false;
}

void cml__ad_accumulate(cml__ad_t* ad, uint32_t v, cml_value_t ct) {
  const cml_shape_t* want = &ad->impl->values[v].shape;
  ct = cml__ad_convert(ad, ct, want->dtype);
  ad->ct[v] = ad->ct[v] ? cml_op_add(ad->f, ad->ct[v], ct) : ct;
}

// Forward over |f|'s nodes [begin, end): marks the values that depend on a relevant value.
static void cml_ad_forward(cml__ad_t* ad, uint32_t begin, uint32_t end) {
  cml__module_impl_t* impl = ad->impl;
  bool* relevant = (bool*)ad->relevant;
  for (uint32_t k = begin; k < end; ++k) {
    const cml_ir_node_t* n = &impl->nodes[ad->f->nodes.data[k]];
    if (n->op == CML_OP_CAPTURED_VALUE) {  // in a closure (If's VJP): relevant as its source
      uint32_t v = n->first_output;
      relevant[v] = relevant[ad->f->captures_outer.data[n->index]] &&
                    cml__ad_differentiable(impl->values[v].shape.dtype);
      continue;
    }
    if (cml_ad_is_stop(n) || !cml_ad_node_reads_relevant(ad, n)) continue;
    for (uint32_t o = 0; o < n->output_count; ++o) {
      uint32_t v = n->first_output + o;
      if (cml__ad_differentiable(impl->values[v].shape.dtype)) relevant[v] = true;
    }
  }
}

// Backward over |f|'s nodes [begin, end), last to first: each node with a cotangent on an
// output and a relevant operand gets its VJP rule applied.
static cml_status_t cml_ad_backward(cml__ad_t* ad, uint32_t begin, uint32_t end) {
  cml__module_impl_t* impl = ad->impl;
  cml_value_t* ct = ad->ct;
  // Per-node storage, grown to the widest node (an If's VJP has one result per value its
  // branches give a cotangent, any number of them).
  uint32_t cap = 0;
  cml_shape_t* shapes = NULL;  // [cap] inputs, then [cap] outputs
  cml_value_t* values = NULL;  // [cap] output cotangents, then [cap] input cotangents
  cml_status_t st = CML_OK;
  for (uint32_t k = end; k-- > begin && st == CML_OK;) {
    // A copy: rules add nodes and values, which may move the module's arrays.
    const cml_ir_node_t node = impl->nodes[ad->f->nodes.data[k]];
    const cml_ir_node_t* n = &node;
    bool has_ct = false;
    for (uint32_t o = 0; o < n->output_count; ++o) has_ct |= ct[n->first_output + o] != 0;
    if (n->op == CML_OP_CAPTURED_VALUE) {  // a closure's capture: to the captured value
      uint32_t outer = ad->f->captures_outer.data[n->index];
      if (has_ct && outer < ad->value_limit && ad->relevant[outer]) {
        cml__ad_accumulate(ad, outer, ct[n->first_output]);
      }
      continue;
    }
    if (!has_ct || cml_ad_is_stop(n) || !cml_ad_node_reads_relevant(ad, n)) continue;
    cml__ad_rule_fn* rule = cml_ad_rule(n->op);
    uint32_t need = n->input_count > n->output_count ? n->input_count : n->output_count;
    if (need > cap) {
      cml__temp_free(ad->b, shapes, 2 * (size_t)cap * sizeof *shapes);
      cml__temp_free(ad->b, values, 2 * (size_t)cap * sizeof *values);
      cap = need > 64 ? need : 64;
      shapes = cml__temp_alloc(ad->b, 2 * (size_t)cap * sizeof *shapes);
      values = cml__temp_alloc(ad->b, 2 * (size_t)cap * sizeof *values);
      if (!shapes || !values) break;  // RESOURCE_EXHAUSTED sticks to the builder
    }
    cml_value_t *cts = values, *in_cts = values + cap;
    ad->in_shapes = shapes;
    ad->out_shapes = shapes + cap;
    for (uint32_t i = 0; i < n->input_count; ++i)
      ad->in_shapes[i] = impl->values[n->inputs[i]].shape;
    for (uint32_t o = 0; o < n->output_count; ++o) {
      ad->out_shapes[o] = impl->values[n->first_output + o].shape;
    }
    if (!rule) {
      st = cml__ad_no_vjp(ad, n, NULL);  // (names the operand shapes)
      break;
    }
    for (uint32_t o = 0; o < n->output_count; ++o) cts[o] = ct[n->first_output + o];
    for (uint32_t i = 0; i < n->input_count; ++i) in_cts[i] = CML_VALUE_INVALID;
    st = rule(ad, n, cts, in_cts);
    if (st != CML_OK || ad->b->error != CML_OK) break;  // a builder error: reported by the caller
    for (uint32_t i = 0; i < n->input_count && st == CML_OK; ++i) {
      if (!in_cts[i] || !cml__ad_wants(ad, n, i)) continue;
      uint32_t v = n->inputs[i];
      const cml_shape_t* want = &impl->values[v].shape;
      cml_shape_t got = cml__ad_shape(ad, in_cts[i]);
      got.dtype = want->dtype;
      if (!cml_shape_equal(&got, want)) {
        char a[CML__SHAPE_TEXT], b[CML__SHAPE_TEXT];
        st = cml_status_make(CML_STATUS_INTERNAL,
                             "%s: VJP of operand #%u has shape %s, expected %s", cml_op_name(n->op),
                             (unsigned)i, cml__shape_text(&got, a), cml__shape_text(want, b));
        break;
      }
      cml__ad_accumulate(ad, v, in_cts[i]);
    }
  }
  cml__temp_free(ad->b, shapes, 2 * (size_t)cap * sizeof *shapes);
  cml__temp_free(ad->b, values, 2 * (size_t)cap * sizeof *values);
  ad->in_shapes = ad->out_shapes = NULL;
  return st;
}

cml_status_t cml__ad_nested(cml__ad_t* outer, uint32_t begin, const uint32_t* seed_values,
                            const cml_value_t* seeds, uint32_t seed_count) {
  cml__module_impl_t* impl = outer->impl;
  cml_builder_t* b = outer->b;
  uint32_t limit = impl->value_count, end = outer->f->nodes.count;
  cml_value_t* ct = cml__temp_alloc(b, limit * sizeof(cml_value_t));
  bool* relevant = cml__temp_alloc(b, limit * sizeof(bool));
  cml_status_t st = CML_OK;
  if (ct && relevant) {
    memset(ct, 0, limit * sizeof(cml_value_t));
    memset(relevant, 0, limit * sizeof(bool));
    memcpy(relevant, outer->relevant, outer->value_limit * sizeof(bool));
    cml__ad_t ad = {outer->f, b, impl, relevant, limit, ct, NULL, NULL};
    cml_ad_forward(&ad, begin, end);
    for (uint32_t i = 0; i < seed_count; ++i) {
      if (seeds[i] && relevant[seed_values[i]]) cml__ad_accumulate(&ad, seed_values[i], seeds[i]);
    }
    st = cml_ad_backward(&ad, begin, end);
    for (uint32_t v = 0; st == CML_OK && v < outer->value_limit; ++v) {
      if (ct[v] && outer->relevant[v]) cml__ad_accumulate(outer, v, ct[v]);
    }
  }
  if (ct) cml__temp_free(b, ct, limit * sizeof(cml_value_t));
  if (relevant) cml__temp_free(b, relevant, limit * sizeof(bool));
  return st;
}

cml_status_t cml__ad_inner_vjp_seeds(cml__ad_t* outer, uint32_t begin, const uint32_t* outs,
                                     const cml_value_t* seeds, uint32_t seed_count,
                                     const uint32_t* wrt, uint32_t count, cml_value_t* out_cts) {
  cml__module_impl_t* impl = outer->impl;
  cml_builder_t* b = outer->b;
  uint32_t limit = impl->value_count, end = outer->f->nodes.count;
  for (uint32_t i = 0; i < count; ++i) out_cts[i] = CML_VALUE_INVALID;
  cml_value_t* ct = cml__temp_alloc(b, limit * sizeof(cml_value_t));
  bool* relevant = cml__temp_alloc(b, limit * sizeof(bool));
  cml_status_t st = CML_OK;
  if (ct && relevant) {
    memset(ct, 0, limit * sizeof(cml_value_t));
    memset(relevant, 0, limit * sizeof(bool));
    for (uint32_t i = 0; i < count; ++i) relevant[wrt[i]] = true;
    cml__ad_t ad = {outer->f, b, impl, relevant, limit, ct, NULL, NULL};
    cml_ad_forward(&ad, begin, end);
    bool seeded = false;
    for (uint32_t i = 0; i < seed_count; ++i) {
      if (!seeds[i] || !relevant[outs[i]]) continue;
      cml__ad_accumulate(&ad, outs[i], seeds[i]);
      seeded = true;
    }
    if (seeded) st = cml_ad_backward(&ad, begin, end);
    for (uint32_t i = 0; st == CML_OK && b->error == CML_OK && i < count; ++i) {
      cml_shape_t shape = impl->values[wrt[i]].shape;
      out_cts[i] = ct[wrt[i]] ? ct[wrt[i]] : cml__ad_zeros(&ad, &shape);
    }
  }
  if (ct) cml__temp_free(b, ct, limit * sizeof(cml_value_t));
  if (relevant) cml__temp_free(b, relevant, limit * sizeof(bool));
  return st;
}

cml_status_t cml__ad_inner_vjp(cml__ad_t* outer, uint32_t begin, uint32_t out, cml_value_t seed,
                               const uint32_t* wrt, uint32_t count, cml_value_t* out_cts) {
  return cml__ad_inner_vjp_seeds(outer, begin, &out, &seed, 1, wrt, count, out_cts);
}

// FusedDense with a Gelu activation keeps only the activation's output, so its VJP would
// compute the pre-activation x W + b again (a second matmul). Before differentiating, each such
// node of |f| whose output depends on a requested value (|relevant|, marked over the first
// |node_count| nodes) is split in place: the node becomes FusedDense without activation and
// writes a new value z, and a FusedGelu(z) node, placed right after it in |f|'s node list,
// writes the original output value (so every reader, and the ids the caller holds, stay valid).
// The backward then reads z. Only f32 and f64 (the dense epilogue and FusedGelu agree there to
// rounding), and only when the backend has FusedGelu as one node. Graphs that are not
// differentiated keep the fused node.
static void cml_ad_split_dense_gelu(cml_function_t* f, const bool* relevant, uint32_t node_count) {
  cml_builder_t* b = f->builder;
  cml__module_impl_t* impl = f->impl;
  if (!cml_capabilities_has_op(cml_backend_capabilities(b->backend), CML_OP_FUSED_GELU)) return;
  for (uint32_t k = 0; k < node_count && b->error == CML_OK; ++k) {
    const uint32_t ni = f->nodes.data[k];
    const cml_ir_node_t* n = &impl->nodes[ni];
    if (n->op != CML_OP_FUSED_DENSE || n->output_count != 1 ||
        n->attrs->fused.activation != CML_ACTIVATION_GELU) {
      continue;
    }
    const uint32_t y = n->first_output;
    const cml_dtype_t dt = impl->values[y].shape.dtype;
    if ((dt != CML_DTYPE_F32 && dt != CML_DTYPE_F64) || !relevant[y]) continue;
    cml_ir_attrs_t* attrs = cml__arena_alloc(&impl->arena, sizeof *attrs, 16);
    if (!attrs) return;
    *attrs = *n->attrs;
    attrs->fused.activation = CML_ACTIVATION_NONE;
    const uint32_t count = f->nodes.count;
    cml_value_t g = cml_op_fused_gelu(f, cml__value_id(b, y), true);
    if (g == CML_VALUE_INVALID || f->nodes.count != count + 1) return;  // not one node
    const uint32_t z = g & CML__VALUE_INDEX_MASK, gi = f->nodes.data[count];
    cml_ir_node_t* dense = &impl->nodes[ni];
    cml_ir_node_t* gelu = &impl->nodes[gi];
    if (gelu->op != CML_OP_FUSED_GELU || impl->values[z].node != gi) return;
    // dense -> z, gelu(z) -> y.
    dense->attrs = attrs;
    dense->first_output = z;
    impl->values[z].node = ni;
    impl->values[z].output = 0;
    gelu->first_output = y;
    ((uint32_t*)gelu->inputs)[0] = z;  // the module's own copy (arena)
    impl->values[y].node = gi;
    impl->values[y].output = 0;
    memmove(&f->nodes.data[k + 2], &f->nodes.data[k + 1], (count - k - 1) * sizeof(uint32_t));
    f->nodes.data[k + 1] = gi;
    ++k;
    ++node_count;
  }
}

static cml_status_t cml_ad_run(cml__ad_t* ad, uint32_t loss, const uint32_t* wrt, size_t count,
                               uint32_t node_count) {
  bool* relevant = (bool*)ad->relevant;
  for (size_t i = 0; i < count; ++i) relevant[wrt[i]] = true;
  cml_ad_forward(ad, 0, node_count);
  if (!relevant[loss]) return CML_OK;  // every gradient is zero
  ad->ct[loss] = cml__ad_scalar(ad, ad->impl->values[loss].shape.dtype, 1.0);
  return cml_ad_backward(ad, 0, node_count);
}

cml_status_t cml_gradients(cml_function_t* f, cml_value_t loss, const cml_value_t* wrt,
                           size_t count, cml_value_t* out_grads) {
  if (out_grads) {
    for (size_t i = 0; i < count; ++i) out_grads[i] = CML_VALUE_INVALID;
  }
  if (!f || !f->builder) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "cml_gradients: NULL function");
  }
  cml_builder_t* b = f->builder;
  if (b->error != CML_OK) return cml_builder_status(b);
  if (b->compiled || f->returned) {
    return cml_status_make(
        CML_STATUS_FAILED_PRECONDITION, "cml_gradients: %s",
        b->compiled ? "the builder was already compiled" : "the function has already returned");
  }
  if (count > 0 && (!wrt || !out_grads)) {
    return cml_ad_fail(
        b, cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "cml_gradients: NULL wrt or out_grads with count %zu", count));
  }
  cml__module_impl_t* impl = f->impl;
  uint32_t loss_index = 0;
  cml_status_t st = cml_ad_check_value(f, loss, "loss", 0, &loss_index);
  if (st != CML_OK) return cml_ad_fail(b, st);
  const cml_shape_t* ls = &impl->values[loss_index].shape;
  if (ls->rank != 0 || !(CML_DTYPE_BIT(ls->dtype) & CML_DSET_FLOAT)) {
    char text[CML__SHAPE_TEXT];
    return cml_ad_fail(b, cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                                          "cml_gradients: the loss %s must be a scalar of a float "
                                          "dtype",
                                          cml__shape_text(ls, text)));
  }
  uint32_t* wrt_index = cml__temp_alloc(b, (count ? count : 1) * sizeof(uint32_t));
  if (!wrt_index) return cml_builder_status(b);
  for (size_t i = 0; i < count && st == CML_OK; ++i) {
    st = cml_ad_check_value(f, wrt[i], "wrt", i, &wrt_index[i]);
    if (st != CML_OK) break;
    const cml_shape_t* s = &impl->values[wrt_index[i]].shape;
    if (!cml__ad_differentiable(s->dtype)) {
      char text[CML__SHAPE_TEXT];
      st = cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "cml_gradients: wrt #%zu %s is not differentiable (only float and "
                           "complex values have gradients; %s values do not)",
                           i, cml__shape_text(s, text), cml_dtype_name(s->dtype));
    }
  }
  if (st != CML_OK) {
    cml__temp_free(b, wrt_index, (count ? count : 1) * sizeof(uint32_t));
    return cml_ad_fail(b, st);
  }
  // Mark what depends on the requested values, split the FusedDense Gelu nodes among them,
  // then differentiate the function as it is now.
  uint32_t value_limit = impl->value_count, node_count = f->nodes.count;
  bool* marks = cml__temp_alloc(b, value_limit * sizeof(bool));
  if (marks) {
    memset(marks, 0, value_limit * sizeof(bool));
    cml__ad_t pre = {f, b, impl, marks, value_limit, NULL, NULL, NULL};
    for (size_t i = 0; i < count; ++i) marks[wrt_index[i]] = true;
    cml_ad_forward(&pre, 0, node_count);
    cml_ad_split_dense_gelu(f, marks, node_count);
    cml__temp_free(b, marks, value_limit * sizeof(bool));
  }
  value_limit = impl->value_count;
  node_count = f->nodes.count;
  cml_value_t* ct = cml__temp_alloc(b, value_limit * sizeof(cml_value_t));
  bool* relevant = cml__temp_alloc(b, value_limit * sizeof(bool));
  if (ct && relevant) {
    memset(ct, 0, value_limit * sizeof(cml_value_t));
    memset(relevant, 0, value_limit * sizeof(bool));
    cml__ad_t ad = {f, b, impl, relevant, value_limit, ct, NULL, NULL};
    st = cml_ad_run(&ad, loss_index, wrt_index, count, node_count);
    if (st == CML_OK && b->error == CML_OK) {
      for (size_t i = 0; i < count; ++i) {
        cml_value_t g = ct[wrt_index[i]];
        cml_shape_t shape = impl->values[wrt_index[i]].shape;
        out_grads[i] = g ? g : cml__ad_zeros(&ad, &shape);
      }
    }
  }
  if (ct) cml__temp_free(b, ct, value_limit * sizeof(cml_value_t));
  if (relevant) cml__temp_free(b, relevant, value_limit * sizeof(bool));
  cml__temp_free(b, wrt_index, (count ? count : 1) * sizeof(uint32_t));
  if (st != CML_OK)
    st = cml_ad_fail(b, st);
  else if (b->error != CML_OK)
    st = cml_builder_status(b);
  if (st != CML_OK && out_grads) {
    for (size_t i = 0; i < count; ++i) out_grads[i] = CML_VALUE_INVALID;
  }
  return st;
}
