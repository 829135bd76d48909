// SPDX-License-Identifier: Apache-2.0
// src/core/builder_control.c: control flow builders (Call, Sort, While, If) and the checks of
// their callees' signatures.
#include <string.h>

#include "core/builder_internal.h"

static const cml_shape_t* cml_param_shape(const cml_function_t* c, uint32_t i) {
  return &c->impl->values[c->params.data[i]].shape;
}

static const cml_shape_t* cml_output_shape(const cml_function_t* c, uint32_t i) {
  return &c->impl->values[c->outputs.data[i]].shape;
}

static void cml_fill_invalid(cml_value_t* out, size_t count) {
  if (!out) return;
  for (size_t i = 0; i < count; ++i) out[i] = CML_VALUE_INVALID;
}

// Whether the output array overlaps the operand array (cml_op_while(f, c, b, state, n, state)
// is a natural way to write a loop; the outputs are written once the operands were read).
static bool cml_outputs_alias(const cml_value_t* out, size_t out_count, const cml_value_t* in,
                              size_t in_count) {
  if (!out || !in || out_count == 0 || in_count == 0) return false;
  const uintptr_t o = (uintptr_t)out, i = (uintptr_t)in;
  return o < i + in_count * sizeof *in && i < o + out_count * sizeof *out;
}

// Marks the outputs invalid up front (a failure leaves them so) unless they alias the operands,
// which are read first: then cml_write_outputs alone writes them, INVALID on failure.
static void cml_fill_invalid_unless_alias(cml_value_t* out, size_t out_count, const cml_value_t* in,
                                          size_t in_count) {
  if (!cml_outputs_alias(out, out_count, in, in_count)) cml_fill_invalid(out, out_count);
}

// Resolves |count| operands of |op| into newly allocated |*out_in| / |*out_shapes| (temp).
static bool cml_control_inputs(cml_function_t* f, cml_op_t op, const cml_value_t* values,
                               size_t count, uint32_t** out_in, cml_shape_t** out_shapes) {
  cml_builder_t* b = f->builder;
  *out_in = (uint32_t*)cml__temp_alloc(b, count * sizeof **out_in);
  *out_shapes = (cml_shape_t*)cml__temp_alloc(b, count * sizeof **out_shapes);
  if (!*out_in || !*out_shapes) return false;
  for (size_t i = 0; i < count; ++i) {
    if (!cml__op_input(f, op, values[i], i, &(*out_in)[i], &(*out_shapes)[i])) return false;
  }
  return true;
}

static void cml_control_free(cml_function_t* f, size_t count, uint32_t* in, cml_shape_t* s) {
  cml__temp_free(f->builder, in, count * sizeof *in);
  cml__temp_free(f->builder, s, count * sizeof *s);
}

static bool cml_write_outputs(cml_value_t first, cml_value_t* out_values, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    out_values[i] = first == CML_VALUE_INVALID ? CML_VALUE_INVALID : first + (cml_value_t)i;
  }
  return first != CML_VALUE_INVALID;
}

// Checks |c|'s parameters (count and shapes) against |shapes|.
static bool cml_check_params(cml_function_t* f, cml_op_t op, const cml_function_t* c,
                             const char* what, const cml_shape_t* shapes, size_t count) {
  char t0[CML__SHAPE_TEXT], t1[CML__SHAPE_TEXT];
  if (c->params.count != count) {
    cml__fail(f->builder, CML_STATUS_INVALID_ARGUMENT,
              "%s: %s takes %u parameters, but %zu values are passed", cml_op_name(op), what,
              c->params.count, count);
    return false;
  }
  for (uint32_t i = 0; i < c->params.count; ++i) {
    if (!cml_shape_equal(cml_param_shape(c, i), &shapes[i])) {
      cml__fail(f->builder, CML_STATUS_INVALID_ARGUMENT,
                "%s: %s parameter #%u is %s, but the value passed is %s", cml_op_name(op), what, i,
                cml__shape_text(cml_param_shape(c, i), t0), cml__shape_text(&shapes[i], t1));
      return false;
    }
  }
  return true;
}

static bool cml_check_outputs(cml_function_t* f, cml_op_t op, const cml_function_t* c,
                              const char* what, const cml_shape_t* shapes, size_t count) {
  char t0[CML__SHAPE_TEXT], t1[CML__SHAPE_TEXT];
  if (c->outputs.count != count) {
    cml__fail(f->builder, CML_STATUS_INVALID_ARGUMENT, "%s: %s returns %u values, expected %zu",
              cml_op_name(op), what, c->outputs.count, count);
    return false;
  }
  for (uint32_t i = 0; i < c->outputs.count; ++i) {
    if (!cml_shape_equal(cml_output_shape(c, i), &shapes[i])) {
      cml__fail(f->builder, CML_STATUS_INVALID_ARGUMENT, "%s: %s output #%u is %s, expected %s",
                cml_op_name(op), what, i, cml__shape_text(cml_output_shape(c, i), t0),
                cml__shape_text(&shapes[i], t1));
      return false;
    }
  }
  return true;
}

static bool cml_check_scalar_bool_output(cml_function_t* f, cml_op_t op, const cml_function_t* c,
                                         const char* what) {
  cml_shape_t want = cml_shape_scalar(CML_DTYPE_BOOL);
  return cml_check_outputs(f, op, c, what, &want, 1);
}

bool cml_op_call(cml_function_t* f, cml_function_t* callee, const cml_value_t* inputs,
                 size_t input_count, cml_value_t* out_values) {
  size_t out_count = callee && callee->returned ? callee->outputs.count : 0;
  cml_fill_invalid_unless_alias(out_values, out_count, inputs, input_count);
  if (!cml__op_begin(f, CML_OP_CALL) ||
      !cml__check_callee(f, CML_OP_CALL, callee, "callee", true)) {
    cml_fill_invalid(out_values, out_count);
    return false;
  }
  if (!out_values || (input_count > 0 && !inputs) || input_count > UINT32_MAX / 2) {
    cml__fail(f->builder, CML_STATUS_INVALID_ARGUMENT, "Call: NULL inputs or outputs");
    cml_fill_invalid(out_values, out_count);
    return false;
  }
  uint32_t* in = NULL;
  cml_shape_t* s = NULL;
  cml_value_t first = CML_VALUE_INVALID;
  if (cml_control_inputs(f, CML_OP_CALL, inputs, input_count, &in, &s) &&
      cml_check_params(f, CML_OP_CALL, callee, "callee", s, input_count)) {
    cml_shape_t* outs = (cml_shape_t*)cml__temp_alloc(f->builder, out_count * sizeof *outs);
    if (outs) {
      for (uint32_t i = 0; i < out_count; ++i) outs[i] = *cml_output_shape(callee, i);
      cml_ir_attrs_t attrs;
      memset(&attrs, 0, sizeof attrs);
      attrs.functions[0] = callee->index;
      first = cml__op_add_node(f, CML_OP_CALL, in, (uint32_t)input_count, outs, (uint32_t)out_count,
                               &attrs);
      cml__temp_free(f->builder, outs, out_count * sizeof *outs);
    }
  }
  cml_control_free(f, input_count, in, s);
  return cml_write_outputs(first, out_values, out_count);
}

bool cml_op_sort(cml_function_t* f, cml_function_t* comparator, int64_t axis, bool is_stable,
                 const cml_value_t* operands, size_t count, cml_value_t* out_values) {
  cml_fill_invalid_unless_alias(out_values, count, operands, count);
  if (!cml__op_begin(f, CML_OP_SORT)) {
    cml_fill_invalid(out_values, count);
    return false;
  }
  cml_builder_t* b = f->builder;
  if (count == 0 || !operands || !out_values || count > UINT32_MAX / 4) {
    cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
              "Sort: needs at least one operand and an output array");
    cml_fill_invalid(out_values, count);
    return false;
  }
  if (!cml__check_callee(f, CML_OP_SORT, comparator, "comparator", false)) {
    cml_fill_invalid(out_values, count);
    return false;
  }
  uint32_t* in = NULL;
  cml_shape_t* s = NULL;
  cml_value_t first = CML_VALUE_INVALID;
  char t0[CML__SHAPE_TEXT], t1[CML__SHAPE_TEXT];
  bool ok = cml_control_inputs(f, CML_OP_SORT, operands, count, &in, &s);
  for (size_t i = 0; ok && i < count; ++i) {
    cml_status_t st = cml__infer_check_dtype(CML_OP_SORT, &s[i], "operand", false);
    if (st != CML_OK) {
      cml__fail_status(b, st);
      ok = false;
    }
    if (ok && !cml_shape_dims_equal(&s[i], &s[0])) {
      cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
                "Sort: operand #%zu %s and operand #0 %s must have the same dimensions", i,
                cml__shape_text(&s[i], t0), cml__shape_text(&s[0], t1));
      ok = false;
    }
  }
  if (ok && (axis < 0 || axis >= s[0].rank)) {
    cml__fail(b, CML_STATUS_INVALID_ARGUMENT, "Sort: axis %lld out of range for %s (rank %d)",
              (long long)axis, cml__shape_text(&s[0], t0), (int)s[0].rank);
    ok = false;
  }
  if (ok) {
    // The comparator takes (lhs_0, rhs_0, lhs_1, rhs_1, ...): scalars of each operand's dtype.
    cml_shape_t* params = (cml_shape_t*)cml__temp_alloc(b, 2 * count * sizeof *params);
    ok = params != NULL;
    if (ok) {
      for (size_t i = 0; i < count; ++i) {
        params[2 * i] = params[2 * i + 1] = cml_shape_scalar(s[i].dtype);
      }
      ok = cml_check_params(f, CML_OP_SORT, comparator, "comparator", params, 2 * count) &&
           cml_check_scalar_bool_output(f, CML_OP_SORT, comparator, "comparator");
      cml__temp_free(b, params, 2 * count * sizeof *params);
    }
  }
  if (ok) {
    cml_ir_attrs_t attrs;
    memset(&attrs, 0, sizeof attrs);
    attrs.axis = axis;
    attrs.flag = is_stable;
    attrs.functions[0] = comparator->index;
    first = cml__op_add_node(f, CML_OP_SORT, in, (uint32_t)count, s, (uint32_t)count, &attrs);
  }
  cml_control_free(f, count, in, s);
  return cml_write_outputs(first, out_values, count);
}

bool cml_op_while(cml_function_t* f, cml_function_t* cond, cml_function_t* body,
                  const cml_value_t* initial_state, size_t count, cml_value_t* out_values) {
  cml_fill_invalid_unless_alias(out_values, count, initial_state, count);
  if (!cml__op_begin(f, CML_OP_WHILE)) {
    cml_fill_invalid(out_values, count);
    return false;
  }
  if (count == 0 || !initial_state || !out_values || count > UINT32_MAX / 2) {
    cml__fail(f->builder, CML_STATUS_INVALID_ARGUMENT,
              "While: needs at least one state value and an output array");
    cml_fill_invalid(out_values, count);
    return false;
  }
  if (!cml__check_callee(f, CML_OP_WHILE, cond, "cond", false) ||
      !cml__check_callee(f, CML_OP_WHILE, body, "body", false)) {
    cml_fill_invalid(out_values, count);
    return false;
  }
  uint32_t* in = NULL;
  cml_shape_t* s = NULL;
  cml_value_t first = CML_VALUE_INVALID;
  if (cml_control_inputs(f, CML_OP_WHILE, initial_state, count, &in, &s) &&
      cml_check_params(f, CML_OP_WHILE, cond, "cond", s, count) &&
      cml_check_scalar_bool_output(f, CML_OP_WHILE, cond, "cond") &&
      cml_check_params(f, CML_OP_WHILE, body, "body", s, count) &&
      cml_check_outputs(f, CML_OP_WHILE, body, "body", s, count)) {
    cml_ir_attrs_t attrs;
    memset(&attrs, 0, sizeof attrs);
    attrs.functions[0] = cond->index;
    attrs.functions[1] = body->index;
    first = cml__op_add_node(f, CML_OP_WHILE, in, (uint32_t)count, s, (uint32_t)count, &attrs);
  }
  cml_control_free(f, count, in, s);
  return cml_write_outputs(first, out_values, count);
}

bool cml_op_if(cml_function_t* f, cml_value_t pred, cml_function_t* true_branch,
               cml_function_t* false_branch, cml_value_t* out_values) {
  size_t count = true_branch && true_branch->returned ? true_branch->outputs.count : 0;
  cml_fill_invalid(out_values, count);
  if (!cml__op_begin(f, CML_OP_IF)) return false;
  cml_builder_t* b = f->builder;
  if (!out_values) {
    cml__fail(b, CML_STATUS_INVALID_ARGUMENT, "If: NULL output array");
    return false;
  }
  if (!cml__check_callee(f, CML_OP_IF, true_branch, "true branch", false) ||
      !cml__check_callee(f, CML_OP_IF, false_branch, "false branch", false)) {
    return false;
  }
  uint32_t in;
  cml_shape_t ps;
  char t0[CML__SHAPE_TEXT];
  if (!cml__op_input(f, CML_OP_IF, pred, 0, &in, &ps)) return false;
  if (ps.rank != 0 || ps.dtype != CML_DTYPE_BOOL) {
    cml__fail(b, CML_STATUS_INVALID_ARGUMENT, "If: predicate %s must be a scalar Bool",
              cml__shape_text(&ps, t0));
    return false;
  }
  if (!cml_check_params(f, CML_OP_IF, true_branch, "true branch", NULL, 0) ||
      !cml_check_params(f, CML_OP_IF, false_branch, "false branch", NULL, 0)) {
    return false;
  }
  cml_shape_t* outs = (cml_shape_t*)cml__temp_alloc(b, count * sizeof *outs);
  if (!outs) return false;
  for (uint32_t i = 0; i < count; ++i) outs[i] = *cml_output_shape(true_branch, i);
  cml_value_t first = CML_VALUE_INVALID;
  if (cml_check_outputs(f, CML_OP_IF, false_branch, "false branch", outs, count)) {
    cml_ir_attrs_t attrs;
    memset(&attrs, 0, sizeof attrs);
    attrs.functions[0] = true_branch->index;
    attrs.functions[1] = false_branch->index;
    first = cml__op_add_node(f, CML_OP_IF, &in, 1, outs, (uint32_t)count, &attrs);
  }
  cml__temp_free(b, outs, count * sizeof *outs);
  return cml_write_outputs(first, out_values, count);
}
