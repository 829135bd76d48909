// SPDX-License-Identifier: Apache-2.0
// src/backends/xla/stablehlo/emitter.c: IR -> StableHLO MLIR text: the module, its functions,
// SSA naming, the text writing helpers and the control-flow ops (While, If, Sort, Call).
//
// Lowering choices for closures (StableHLO's while/if/sort regions are not isolated from
// above, but XLA's conversion to HLO only handles implicit captures well for if/case):
// - While: captured values are appended to the loop-carried state and passed through the
//   body unchanged, so both regions only use their block arguments.
// - If: branches reference the enclosing values directly (stablehlo.if takes no block args).
// - Sort: a scalar the comparator captures becomes one more sort operand (broadcast; its lhs
//   element stands for it); a captured array is UNIMPLEMENTED, and so is a While anywhere
//   in the comparator (XLA's CPU compiler aborts on it).
// - Small captured constants (up to 16 elements) are re-emitted inside the region instead.
// - Call: named functions and called closures become `func.func private` functions; a
//   closure's captures become extra trailing parameters, passed at the call site.
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base_internal.h"
#include "backends/xla/stablehlo/emit_internal.h"

#define CML_SHLO_SINK_LIMIT 16

// Stack XLA's compiler uses (xla:cpu, measured: Call chains crash at ~735 levels on 8 MiB,
// 300-400 on 4 MiB, 150-200 on 2 MiB, 35-50 on 512 KiB, 1-10 on 128 KiB, i.e. about 12 KiB a
// level over a base under 128 KiB), with margins: bytes per nesting level, and a base for the
// rest of the compilation.
#define CML_SHLO_STACK_PER_LEVEL (20u * 1024u)
#define CML_SHLO_STACK_BASE (256u * 1024u)

void cml_xla_emit_options_init(cml_xla_emit_options_t* options) {
  memset(options, 0, sizeof *options);
  options->struct_size = sizeof *options;
  options->platform = "cpu";
  options->donatable_inputs = true;
  options->num_replicas = 1;
  options->num_partitions = 1;
}

bool cml_xla_emit_is_sharded(const cml_module_t* module) {
  return module && module->distribution == CML_DISTRIBUTION_AUTO_SHARDING &&
         module->num_devices > 1 && module->mesh_count > 0;
}

void cml_xla_emit_options_distribution(cml_xla_emit_options_t* options,
                                       const cml_module_t* module) {
  int32_t n = module && module->num_devices > 1 ? module->num_devices : 1;
  bool spmd = module && module->distribution == CML_DISTRIBUTION_SPMD;
  options->num_replicas = spmd ? n : 1;
  options->num_partitions = cml_xla_emit_is_sharded(module) ? n : 1;
}

//===--- text ---===//

void cml__shlo_text_vprintf(cml__shlo_text_t* t, const char* fmt, va_list ap) {
  if (t->failed) return;
  for (;;) {
    va_list copy;
    va_copy(copy, ap);
    int n = cml__vsnprintf_c(t->data + t->size, t->capacity - t->size, fmt, copy);
    va_end(copy);
    if (n < 0) {
      t->failed = true;
      return;
    }
    if ((size_t)n < t->capacity - t->size) {
      t->size += (size_t)n;
      return;
    }
    size_t cap = t->capacity * 2 + (size_t)n + 64;
    char* grown = realloc(t->data, cap);
    if (!grown) {
      t->failed = true;
      return;
    }
    t->data = grown;
    t->capacity = cap;
  }
}

void cml__shlo_text_printf(cml__shlo_text_t* t, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cml__shlo_text_vprintf(t, fmt, ap);
  va_end(ap);
}

void cml__shlo_printf(cml__shlo_ctx_t* c, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cml__shlo_text_vprintf(&c->text, fmt, ap);
  va_end(ap);
}

void cml__shlo_line(cml__shlo_ctx_t* c) {
  for (int i = 0; i < c->indent; ++i) cml__shlo_printf(c, "  ");
}

void cml__shlo_scalar_type(cml__shlo_ctx_t* c, cml_dtype_t dtype) {
  const char* name = cml_dtype_stablehlo_name(dtype);
  cml__shlo_printf(c, "tensor<%s>", name ? name : "none");
}

void cml__shlo_type(cml__shlo_ctx_t* c, const cml_shape_t* s) {
  cml__shlo_printf(c, "tensor<");
  for (int32_t i = 0; i < s->rank; ++i) cml__shlo_printf(c, "%lldx", (long long)s->dims[i]);
  const char* name = cml_dtype_stablehlo_name(s->dtype);
  cml__shlo_printf(c, "%s>", name ? name : "none");
}

//===--- names ---===//

cml__shlo_name_t cml__shlo_fresh(cml__shlo_ctx_t* c) {
  cml__shlo_name_t n;
  snprintf(n.s, sizeof n.s, "%%%u", c->next_id++);
  return n;
}

cml__shlo_val_t cml__shlo_value(const cml__shlo_ctx_t* c, uint32_t v) {
  cml__shlo_val_t r;
  r.name = c->names[v];
  r.shape = c->module->values[v].shape;
  return r;
}

void cml__shlo_bind(cml__shlo_ctx_t* c, uint32_t v, const cml__shlo_name_t* name) {
  c->names[v] = *name;
}

cml__shlo_name_t cml__shlo_result(const cml__shlo_name_t* base, uint32_t index) {
  cml__shlo_name_t n;
  snprintf(n.s, sizeof n.s, "%.64s#%u", base->s, index);
  return n;
}

// Binds the outputs of |n| to the first results of the op named |base|, which has |count|
// results (more than |n| has outputs when a divergence flag follows them).
static void cml_shlo_bind_results(cml__shlo_ctx_t* c, const cml_ir_node_t* n,
                                  const cml__shlo_name_t* base, uint32_t count) {
  for (uint32_t i = 0; i < n->output_count; ++i) {
    cml__shlo_name_t r = count == 1 ? *base : cml__shlo_result(base, i);
    cml__shlo_bind(c, n->first_output + i, &r);
  }
}

// Writes |src| as an identifier into |dst| ([A-Za-z0-9_], other characters become '_', a
// leading digit or an empty name gets a '_' prefix). Different names may map to the same
// identifier: this is only ever used after a prefix that makes the symbol unique by itself
// (see cml_shlo_name_symbols) or for the module's own name.
static void cml_shlo_identifier(const char* src, char* dst, size_t size) {
  size_t k = 0;
  if (!src || !*src || (*src >= '0' && *src <= '9')) dst[k++] = '_';
  for (const char* p = src; p && *p && k + 1 < size; ++p) {
    char ch = *p;
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_';
    dst[k++] = ok ? ch : '_';
  }
  dst[k] = '\0';
}

// Writes the user's name |src| as the content of an MLIR string literal (a location label, for
// readers only): printable ASCII stays, '"' and '\\' are escaped, every other byte is written
// as the visible text \xNN, so the label is plain ASCII; names longer than 64 bytes end in
// "...". An absent name is written as empty.
static void cml_shlo_label(cml__shlo_ctx_t* c, const char* src) {
  size_t i = 0;
  for (; src && src[i] && i < 64; ++i) {
    unsigned char ch = (unsigned char)src[i];
    if (ch == '"' || ch == '\\') {
      cml__shlo_printf(c, "\\%02X", ch);  // \22 is '"', \5C is '\\'
    } else if (ch < 0x20 || ch > 0x7E) {
      cml__shlo_printf(c, "\\5Cx%02X", ch);  // the four characters \xNN
    } else {
      cml__shlo_printf(c, "%c", ch);
    }
  }
  if (src && src[i]) cml__shlo_printf(c, "...");
}

//===--- op writing ---===//

cml__shlo_name_t cml__shlo_op_begin(cml__shlo_ctx_t* c, const char* op, const cml__shlo_val_t* ins,
                                    int in_count, uint32_t result_count) {
  cml__shlo_name_t r = cml__shlo_fresh(c);
  cml__shlo_line(c);
  if (result_count == 1) {
    cml__shlo_printf(c, "%s = ", r.s);
  } else if (result_count > 1) {
    cml__shlo_printf(c, "%s:%u = ", r.s, result_count);
  }
  cml__shlo_printf(c, "\"%s\"(", op);
  for (int i = 0; i < in_count; ++i) cml__shlo_printf(c, "%s%s", i ? ", " : "", ins[i].name.s);
  cml__shlo_printf(c, ")");
  return r;
}

void cml__shlo_op_end(cml__shlo_ctx_t* c, const char* attrs, const cml__shlo_val_t* ins,
                      int in_count, const cml_shape_t* outs, uint32_t out_count) {
  if (attrs && *attrs) cml__shlo_printf(c, " {%s}", attrs);
  cml__shlo_printf(c, " : (");
  for (int i = 0; i < in_count; ++i) {
    if (i) cml__shlo_printf(c, ", ");
    cml__shlo_type(c, &ins[i].shape);
  }
  cml__shlo_printf(c, ") -> ");
  if (out_count != 1) cml__shlo_printf(c, "(");
  for (uint32_t i = 0; i < out_count; ++i) {
    if (i) cml__shlo_printf(c, ", ");
    cml__shlo_type(c, &outs[i]);
  }
  if (out_count != 1) cml__shlo_printf(c, ")");
  cml__shlo_printf(c, "\n");
}

cml__shlo_val_t cml__shlo_op(cml__shlo_ctx_t* c, const char* op, const cml__shlo_val_t* ins,
                             int in_count, const char* attrs, const cml_shape_t* out) {
  cml__shlo_val_t r;
  r.name = cml__shlo_op_begin(c, op, ins, in_count, 1);
  r.shape = *out;
  cml__shlo_op_end(c, attrs, ins, in_count, out, 1);
  return r;
}

//===--- attributes ---===//

void cml__shlo_attr_init(cml__shlo_attr_t* a) {
  a->s[0] = '\0';
  a->n = 0;
  a->overflow = false;
}

void cml__shlo_attr_printf(cml__shlo_attr_t* a, const char* fmt, ...) {
  if (a->overflow) return;
  va_list ap;
  va_start(ap, fmt);
  int n = cml__vsnprintf_c(a->s + a->n, sizeof a->s - a->n, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof a->s - a->n) {
    a->overflow = true;
    a->s[a->n] = '\0';
    return;
  }
  a->n += (size_t)n;
}

void cml__shlo_attr_array(cml__shlo_attr_t* a, const int64_t* v, int32_t n) {
  cml__shlo_attr_printf(a, "array<i64");
  for (int32_t i = 0; i < n; ++i)
    cml__shlo_attr_printf(a, "%s %lld", i ? "," : ":", (long long)v[i]);
  cml__shlo_attr_printf(a, ">");
}

void cml__shlo_attr_list(cml__shlo_attr_t* a, const int64_t* v, int32_t n) {
  cml__shlo_attr_printf(a, "[");
  for (int32_t i = 0; i < n; ++i)
    cml__shlo_attr_printf(a, "%s%lld", i ? ", " : "", (long long)v[i]);
  cml__shlo_attr_printf(a, "]");
}

void cml__shlo_attr_padding(cml__shlo_attr_t* a, const int64_t* low, const int64_t* high,
                            int32_t n) {
  if (n == 0) {
    cml__shlo_attr_printf(a, "dense<> : tensor<0x2xi64>");
    return;
  }
  cml__shlo_attr_printf(a, "dense<[");
  for (int32_t i = 0; i < n; ++i) {
    cml__shlo_attr_printf(a, "%s[%lld, %lld]", i ? ", " : "", (long long)low[i],
                          (long long)high[i]);
  }
  cml__shlo_attr_printf(a, "]> : tensor<%dx2xi64>", (int)n);
}

cml_status_t cml__shlo_unimplemented(const cml__shlo_ctx_t* c, const cml_ir_node_t* n,
                                     const char* why) {
  char in_text[160] = "", out_text[96] = "";
  size_t k = 0;
  for (uint32_t i = 0; i < n->input_count && i < 4 && k + 2 < sizeof in_text; ++i) {
    char one[64];
    cml_shape_format(&c->module->values[n->inputs[i]].shape, one, sizeof one);
    int w = snprintf(in_text + k, sizeof in_text - k, "%s%s", i ? ", " : "", one);
    if (w < 0) break;
    k += (size_t)w;
    if (k >= sizeof in_text) k = sizeof in_text - 1;
  }
  cml_shape_format(&c->module->values[n->first_output].shape, out_text, sizeof out_text);
  return cml_status_make(CML_STATUS_UNIMPLEMENTED,
                         "xla: the StableHLO emitter cannot lower %s (operands [%s] -> %s): %s",
                         cml_op_name(n->op), in_text, out_text, why);
}

//===--- regions and captures ---===//

static void cml_shlo_region_open(cml__shlo_ctx_t* c, bool first) {
  cml__shlo_printf(c, first ? " ({\n" : ", {\n");
  c->indent++;
}

static void cml_shlo_region_close(cml__shlo_ctx_t* c) {
  c->indent--;
  cml__shlo_line(c);
  cml__shlo_printf(c, "}");
}

// Writes "^bb0(%a: T, ...):" binding |count| fresh names into |out_names| for |shapes|.
static void cml_shlo_block_header(cml__shlo_ctx_t* c, const cml_shape_t* const* shapes,
                                  uint32_t count, cml__shlo_name_t* out_names) {
  cml__shlo_line(c);
  cml__shlo_printf(c, "^bb0(");
  for (uint32_t i = 0; i < count; ++i) {
    out_names[i] = cml__shlo_fresh(c);
    cml__shlo_printf(c, "%s%s: ", i ? ", " : "", out_names[i].s);
    cml__shlo_type(c, shapes[i]);
  }
  cml__shlo_printf(c, "):\n");
}

// Writes `"<terminator>"(outputs of fi) : (types) -> ()` plus |extra| pass-through values.
static void cml_shlo_return(cml__shlo_ctx_t* c, const char* terminator, uint32_t fi,
                            const cml__shlo_val_t* extra, uint32_t extra_count) {
  const cml_ir_function_t* f = &c->module->functions[fi];
  cml__shlo_line(c);
  cml__shlo_printf(c, "\"%s\"(", terminator);
  for (uint32_t i = 0; i < f->output_count; ++i) {
    cml__shlo_printf(c, "%s%s", i ? ", " : "", c->names[f->outputs[i]].s);
  }
  for (uint32_t i = 0; i < extra_count; ++i) {
    cml__shlo_printf(c, "%s%s", (i || f->output_count) ? ", " : "", extra[i].name.s);
  }
  cml__shlo_printf(c, ") : (");
  for (uint32_t i = 0; i < f->output_count; ++i) {
    if (i) cml__shlo_printf(c, ", ");
    cml__shlo_type(c, &c->module->values[f->outputs[i]].shape);
  }
  for (uint32_t i = 0; i < extra_count; ++i) {
    if (i || f->output_count) cml__shlo_printf(c, ", ");
    cml__shlo_type(c, &extra[i].shape);
  }
  cml__shlo_printf(c, ") -> ()\n");
}

// The Constant node a captured value comes from, following captures up through the parents,
// when it is small enough to re-emit inside a region; NULL otherwise.
static const cml_ir_node_t* cml_shlo_sinkable_constant(const cml_module_t* m, uint32_t v) {
  for (int depth = 0; depth <= CML_XLA_EMIT_MAX_NESTING_DEPTH; ++depth) {
    const cml_ir_node_t* n = &m->nodes[m->values[v].node];
    if (n->op == CML_OP_CONSTANT) {
      return cml_shape_element_count(&m->values[v].shape) <= CML_SHLO_SINK_LIMIT ? n : NULL;
    }
    if (n->op != CML_OP_CAPTURED_VALUE) return NULL;
    const cml_ir_function_t* f = &m->functions[n->function];
    if (n->index >= f->capture_count) return NULL;
    v = f->captures_outer[n->index];
  }
  return NULL;
}

// Binds the captures of closure |fi| for an inline region: small constants are re-emitted,
// other captures name the enclosing values.
static void cml_shlo_bind_captures_inline(cml__shlo_ctx_t* c, uint32_t fi) {
  const cml_module_t* m = c->module;
  const cml_ir_function_t* f = &m->functions[fi];
  for (uint32_t i = 0; i < f->capture_count; ++i) {
    const cml_ir_node_t* k = cml_shlo_sinkable_constant(m, f->captures_outer[i]);
    if (k) {
      cml__shlo_val_t v = cml__shlo_constant(c, &m->values[k->first_output].shape, k->data);
      cml__shlo_bind(c, f->captures_inner[i], &v.name);
    } else {
      cml__shlo_bind(c, f->captures_inner[i], &c->names[f->captures_outer[i]]);
    }
  }
}

//===--- control flow ---===//

// Finds |v| in |list| (of |count|); returns its index or count.
static uint32_t cml_shlo_find(const uint32_t* list, uint32_t count, uint32_t v) {
  for (uint32_t i = 0; i < count; ++i) {
    if (list[i] == v) return i;
  }
  return count;
}

// Emits one While region (cond or body) whose block args are the state plus |extra| values,
// plus the divergence flag last when |guard| (emit_guard.c: the body threads the flag, the cond
// answers false once a guard inside it recorded something and, when |check|, where the group
// disagrees on the cond's answer).
static cml_status_t cml_shlo_while_region(cml__shlo_ctx_t* c, const cml_ir_node_t* n, uint32_t fi,
                                          bool first, const cml__shlo_val_t* ins,
                                          uint32_t state_count, const uint32_t* extra,
                                          uint32_t extra_count, bool is_body, bool guard,
                                          bool check) {
  const cml_module_t* m = c->module;
  const cml_ir_function_t* f = &m->functions[fi];
  uint32_t total = state_count + extra_count + (guard ? 1 : 0);
  cml__shlo_name_t* args = malloc(total * sizeof *args);
  const cml_shape_t** shapes = malloc(total * sizeof *shapes);
  cml__shlo_val_t* pass = malloc((extra_count + 1) * sizeof *pass);
  if (!args || !shapes || !pass) {
    free(args);
    free((void*)shapes);
    free(pass);
    return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  }
  for (uint32_t i = 0; i < total; ++i) shapes[i] = &ins[i].shape;
  cml_shlo_region_open(c, first);
  cml_shlo_block_header(c, shapes, total, args);
  for (uint32_t i = 0; i < f->param_count && i < state_count; ++i) {
    cml__shlo_bind(c, f->params[i], &args[i]);
  }
  for (uint32_t i = 0; i < extra_count; ++i) {
    pass[i].name = args[state_count + i];
    pass[i].shape = ins[state_count + i].shape;
  }
  const bool outer_on = c->flag_on;
  const cml__shlo_val_t outer_flag = c->flag;
  if (guard) {
    c->flag_on = true;
    c->flag.name = args[total - 1];
    c->flag.shape = ins[total - 1].shape;
    if (!is_body) c->flag = cml__shlo_flag_zero(c);
  }
  for (uint32_t i = 0; i < f->capture_count; ++i) {
    uint32_t at = cml_shlo_find(extra, extra_count, f->captures_outer[i]);
    if (at < extra_count) {
      cml__shlo_bind(c, f->captures_inner[i], &args[state_count + at]);
    } else {
      const cml_ir_node_t* k = cml_shlo_sinkable_constant(m, f->captures_outer[i]);
      cml__shlo_val_t v = cml__shlo_constant(c, &m->values[k->first_output].shape, k->data);
      cml__shlo_bind(c, f->captures_inner[i], &v.name);
    }
  }
  cml_status_t st = cml__shlo_emit_nodes(c, fi);
  if (st == CML_OK && guard && !is_body) {
    // go = pred && flag == 0 (&& !disagrees when checked)
    const cml__shlo_val_t pred = cml__shlo_value(c, f->outputs[0]);
    const cml__shlo_val_t zero = cml__shlo_flag_zero(c);
    const cml__shlo_val_t quiet = cml__shlo_compare(c, "EQ", &c->flag, &zero, false);
    const cml__shlo_val_t both[2] = {pred, quiet};
    cml__shlo_val_t go = cml__shlo_op(c, "stablehlo.and", both, 2, NULL, &quiet.shape), split;
    if (check) st = cml__shlo_guard_disagrees(c, n, &pred, &split);
    if (st == CML_OK && check) {
      const cml__shlo_val_t agree = cml__shlo_op(c, "stablehlo.not", &split, 1, NULL, &split.shape);
      const cml__shlo_val_t last[2] = {go, agree};
      go = cml__shlo_op(c, "stablehlo.and", last, 2, NULL, &split.shape);
    }
    if (st == CML_OK) cml__shlo_region_return(c, &go, 1);
  } else if (st == CML_OK) {
    if (guard) pass[extra_count] = c->flag;
    cml_shlo_return(c, "stablehlo.return", fi, pass, is_body ? extra_count + (guard ? 1 : 0) : 0);
  }
  c->flag_on = outer_on;
  c->flag = outer_flag;
  cml_shlo_region_close(c);
  free(args);
  free((void*)shapes);
  free(pass);
  return st;
}

static cml_status_t cml_shlo_emit_while(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  const cml_module_t* m = c->module;
  uint32_t cond_fi = n->attrs->functions[0], body_fi = n->attrs->functions[1];
  const cml_ir_function_t* cond = &m->functions[cond_fi];
  const cml_ir_function_t* body = &m->functions[body_fi];
  uint32_t state_count = n->input_count;
  uint32_t max_extra = cond->capture_count + body->capture_count;
  // |check|: agree on the condition (emit_guard.c); |guard|: thread the flag through the loop
  // (checked, or a guarded node inside); |recheck|: run the condition again after the loop.
  const bool check = c->flag_on && cml__shlo_guard_node(m, c->guard_nodes, n);
  const bool recheck = check || (c->flag_on && c->guard_flags[cond_fi]);
  const bool guard = recheck || (c->flag_on && c->guard_flags[body_fi]);
  uint32_t* extra = malloc((max_extra ? max_extra : 1) * sizeof *extra);
  cml__shlo_val_t* ins = malloc((state_count + max_extra + 1) * sizeof *ins);
  cml_shape_t* outs = malloc((state_count + max_extra + 1) * sizeof *outs);
  if (!extra || !ins || !outs) {
    free(extra);
    free(ins);
    free(outs);
    return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  }
  // Captured values (not re-emitted constants) become extra loop-carried state.
  uint32_t extra_count = 0;
  for (int which = 0; which < 2; ++which) {
    const cml_ir_function_t* f = which == 0 ? cond : body;
    for (uint32_t i = 0; i < f->capture_count; ++i) {
      uint32_t v = f->captures_outer[i];
      if (cml_shlo_sinkable_constant(m, v)) continue;
      if (cml_shlo_find(extra, extra_count, v) == extra_count) extra[extra_count++] = v;
    }
  }
  uint32_t total = state_count + extra_count + (guard ? 1 : 0);
  for (uint32_t i = 0; i < state_count; ++i) ins[i] = cml__shlo_value(c, n->inputs[i]);
  for (uint32_t i = 0; i < extra_count; ++i) ins[state_count + i] = cml__shlo_value(c, extra[i]);
  if (guard) ins[total - 1] = c->flag;
  for (uint32_t i = 0; i < total; ++i) outs[i] = ins[i].shape;
  cml__shlo_name_t name = cml__shlo_op_begin(c, "stablehlo.while", ins, (int)total, total);
  cml_status_t st = cml_shlo_while_region(c, n, cond_fi, true, ins, state_count, extra, extra_count,
                                          false, guard, check);
  if (st == CML_OK) {
    st = cml_shlo_while_region(c, n, body_fi, false, ins, state_count, extra, extra_count, true,
                               guard, check);
  }
  if (st == CML_OK) {
    cml__shlo_printf(c, ")");
    cml__shlo_op_end(c, NULL, ins, (int)total, outs, total);
    for (uint32_t i = 0; i < n->output_count; ++i) {
      cml__shlo_name_t r = total == 1 ? name : cml__shlo_result(&name, i);
      cml__shlo_bind(c, n->first_output + i, &r);
    }
  }
  if (st == CML_OK && guard) {
    // The flag the loop carried out.
    c->flag.name = total == 1 ? name : cml__shlo_result(&name, total - 1);
  }
  if (st == CML_OK && recheck) {
    // The condition once more on the final state, here: a group that left the loop
    // disagreeing disagrees again, and a guard inside the condition records again.
    for (uint32_t i = 0; i < cond->param_count && i < state_count; ++i) {
      cml__shlo_bind(c, cond->params[i], &c->names[n->first_output + i]);
    }
    cml_shlo_bind_captures_inline(c, cond_fi);
    st = cml__shlo_emit_nodes(c, cond_fi);
    cml__shlo_val_t pred = cml__shlo_value(c, cond->outputs[0]), split;
    if (st == CML_OK && check) st = cml__shlo_guard_disagrees(c, n, &pred, &split);
    if (st == CML_OK && check) cml__shlo_guard_record(c, n, &split);
  }
  free(extra);
  free(ins);
  free(outs);
  return st;
}

// A guarded If (emit_guard.c) runs the true branch only where its group agrees on true, and
// returns the flag its branches recorded as one more result.
static cml_status_t cml_shlo_emit_if(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  const cml_module_t* m = c->module;
  cml__shlo_val_t pred = cml__shlo_value(c, n->inputs[0]), split;
  // |check|: agree on the predicate (emit_guard.c); |guard|: the branches return the flag
  // (checked, or a guarded node inside a branch).
  const bool check = c->flag_on && cml__shlo_guard_node(m, c->guard_nodes, n);
  const bool guard = check || (c->flag_on && (c->guard_flags[n->attrs->functions[0]] ||
                                              c->guard_flags[n->attrs->functions[1]]));
  const uint32_t count = n->output_count + (guard ? 1 : 0);
  if (check) {
    CML_RETURN_IF_ERROR(cml__shlo_guard_disagrees(c, n, &pred, &split));
    const cml__shlo_val_t agree = cml__shlo_op(c, "stablehlo.not", &split, 1, NULL, &split.shape);
    const cml__shlo_val_t both[2] = {pred, agree};
    pred = cml__shlo_op(c, "stablehlo.and", both, 2, NULL, &split.shape);
  }
  cml_shape_t* outs = malloc(count * sizeof *outs + 1);
  if (!outs) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  for (uint32_t i = 0; i < n->output_count; ++i) outs[i] = m->values[n->first_output + i].shape;
  if (guard) outs[count - 1] = cml_shape_scalar(CML_DTYPE_I32);
  cml__shlo_name_t name = cml__shlo_op_begin(c, "stablehlo.if", &pred, 1, count);
  cml_status_t st = CML_OK;
  const cml__shlo_val_t outer_flag = c->flag;
  for (int branch = 0; branch < 2 && st == CML_OK; ++branch) {
    uint32_t fi = n->attrs->functions[branch];
    cml_shlo_region_open(c, branch == 0);
    if (guard) c->flag = cml__shlo_flag_zero(c);
    cml_shlo_bind_captures_inline(c, fi);
    st = cml__shlo_emit_nodes(c, fi);
    if (st == CML_OK) cml_shlo_return(c, "stablehlo.return", fi, &c->flag, guard ? 1 : 0);
    cml_shlo_region_close(c);
  }
  c->flag = outer_flag;
  if (st == CML_OK) {
    cml__shlo_printf(c, ")");
    cml__shlo_op_end(c, NULL, &pred, 1, outs, count);
    cml_shlo_bind_results(c, n, &name, count);
    if (guard) {
      const cml__shlo_val_t inner = {count == 1 ? name : cml__shlo_result(&name, count - 1),
                                     outs[count - 1]};
      c->flag = cml__shlo_flag_max(c, &c->flag, &inner);
      if (check) cml__shlo_guard_record(c, n, &split);
    }
  }
  free(outs);
  return st;
}

// The first node of function |fi|, or of a function it runs (If branches, Calls), that XLA's CPU
// compiler cannot take inside a sort comparator, which it compiles as a scalar function: a While
// ("Check failed: 1 == assigned_buffers.size()"), an op with a computation of its own (a
// reduction, a nested Sort, a Scatter, a window op: "Map key not found: region_1.1"), or any
// array value (a broadcast, a transpose, a gather...); each ended the process. Captured values
// are left to the caller (a captured scalar becomes a sort operand). Depth is bounded: cycles
// and nesting were checked before.
static const cml_ir_node_t* cml_shlo_comparator_trap(const cml_module_t* m, uint32_t fi,
                                                     uint32_t* out_fn) {
  const cml_ir_function_t* f = &m->functions[fi];
  for (uint32_t i = 0; i < f->node_count; ++i) {
    const cml_ir_node_t* n = &m->nodes[f->nodes[i]];
    if (n->op == CML_OP_CAPTURED_VALUE || n->op == CML_OP_PARAMETER) continue;
    const cml_op_group_t g = cml_op_group(n->op);
    bool bad = n->op == CML_OP_WHILE || n->op == CML_OP_SORT ||
               (g != CML_OPG_SOURCE && g != CML_OPG_ELEMENTWISE && g != CML_OPG_CONTROL);
    for (uint32_t k = 0; !bad && k < n->output_count; ++k) {
      bad = m->values[n->first_output + k].shape.rank != 0;
    }
    if (bad) {
      *out_fn = fi;
      return n;
    }
    uint32_t targets[2];
    const uint32_t k = cml__shlo_node_targets(n, targets);
    for (uint32_t t = 0; t < k; ++t) {
      const cml_ir_node_t* inner = cml_shlo_comparator_trap(m, targets[t], out_fn);
      if (inner) return inner;
    }
  }
  return NULL;
}

// For a comparator that is a single LessThan / GreaterThan of parameters 0 and 1 (operand 0's lhs
// and rhs, either order) on a float dtype: 1 when it sorts ascending, -1 descending, else 0.
static int cml_shlo_plain_float_order(const cml_module_t* m, uint32_t fi) {
  const cml_ir_function_t* f = &m->functions[fi];
  if (f->param_count < 2 || !cml_dtype_is_float(m->values[f->params[0]].shape.dtype)) return 0;
  switch (cml_ir_plain_comparator(m, fi)) {
    case CML_OP_LESS_THAN:
      return 1;
    case CML_OP_GREATER_THAN:
      return -1;
    default:
      return 0;
  }
}

// Sort: the comparator's parameters come in StableHLO's interleaved order (lhs, rhs per
// operand). XLA's conversion to HLO rejects a comparator that uses a value defined outside it
// ("requires all operands to be defined in the parent region"), so a scalar the comparator
// captures (other than a small constant, re-emitted inside) becomes one more sort operand,
// broadcast to the operands' shape, whose lhs element stands for it; its sorted copy is
// dropped. A captured array is UNIMPLEMENTED.
static cml_status_t cml_shlo_emit_sort(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  const cml_module_t* m = c->module;
  uint32_t fi = n->attrs->functions[0];
  const cml_ir_function_t* f = &m->functions[fi];
  uint32_t count = n->input_count, extra = 0;
  for (uint32_t i = 0; i < f->capture_count; ++i) {
    if (cml_shlo_sinkable_constant(m, f->captures_outer[i])) continue;
    const cml_shape_t* s = &m->values[f->captures_outer[i]].shape;
    if (s->rank != 0) {
      char text[128];
      return cml_status_make(CML_STATUS_UNIMPLEMENTED,
                             "xla: Sort's comparator uses an array %s of an enclosing function; "
                             "XLA takes only scalars there (pass its elements as sort operands)",
                             cml_shape_format(s, text, sizeof text));
    }
    ++extra;
  }
  uint32_t trap_fn = 0;
  const cml_ir_node_t* trap = cml_shlo_comparator_trap(m, fi, &trap_fn);
  if (trap) {
    const char* name = m->functions[trap_fn].name;
    char where[160];
    if (trap_fn == fi) {
      snprintf(where, sizeof where, "the comparator itself");
    } else if (name && name[0]) {
      snprintf(where, sizeof where, "function \"%s\", which the comparator calls", name);
    } else {
      snprintf(where, sizeof where, "a closure (function %u) inside the comparator", trap_fn);
    }
    char text[128] = "";
    if (trap->output_count > 0) {
      cml_shape_format(&m->values[trap->first_output].shape, text, sizeof text);
    }
    return cml_status_make(
        CML_STATUS_UNIMPLEMENTED,
        "xla: Sort's comparator runs %s %s (in %s): XLA's CPU compiler ends the process on "
        "loops, reductions, nested sorts, scatters, window ops and any array value inside a "
        "comparator; keep it to scalar elementwise ops, If and Call",
        cml_op_name(trap->op), text, where);
  }
  const uint32_t total = count + extra, params = f->param_count + 2 * extra;
  cml__shlo_val_t* ins = malloc(total * sizeof *ins);
  cml_shape_t* outs = malloc(total * sizeof *outs);
  cml__shlo_name_t* args = malloc(params * sizeof *args + 1);
  const cml_shape_t** shapes = malloc(params * sizeof *shapes + 1);
  cml_shape_t* scalar = malloc((extra ? extra : 1) * sizeof *scalar);
  cml_status_t st = CML_OK;
  if (!ins || !outs || !args || !shapes || !scalar) {
    st = cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  } else {
    for (uint32_t i = 0; i < count; ++i) {
      ins[i] = cml__shlo_value(c, n->inputs[i]);
      outs[i] = ins[i].shape;
    }
    for (uint32_t i = 0, j = 0; i < f->capture_count; ++i) {
      const uint32_t v = f->captures_outer[i];
      if (cml_shlo_sinkable_constant(m, v)) continue;
      const cml__shlo_val_t cap = cml__shlo_value(c, v);
      ins[count + j] = cml__shlo_broadcast(c, &cap, &ins[0].shape);
      outs[count + j] = ins[count + j].shape;
      scalar[j] = m->values[v].shape;
      ++j;
    }
    for (uint32_t i = 0; i < f->param_count; ++i) shapes[i] = &m->values[f->params[i]].shape;
    for (uint32_t j = 0; j < extra; ++j) {
      shapes[f->param_count + 2 * j] = shapes[f->param_count + 2 * j + 1] = &scalar[j];
    }
    cml__shlo_name_t name = cml__shlo_op_begin(c, "stablehlo.sort", ins, (int)total, total);
    // Comparators are not guarded (emit_guard.c).
    const bool outer_on = c->flag_on;
    c->flag_on = false;
    cml_shlo_region_open(c, true);
    cml_shlo_block_header(c, shapes, params, args);
    for (uint32_t i = 0; i < f->param_count; ++i) cml__shlo_bind(c, f->params[i], &args[i]);
    // Small constants inside the region; the scalars by their lhs block argument.
    cml_shlo_bind_captures_inline(c, fi);
    for (uint32_t i = 0, j = 0; i < f->capture_count; ++i) {
      if (cml_shlo_sinkable_constant(m, f->captures_outer[i])) continue;
      cml__shlo_bind(c, f->captures_inner[i], &args[f->param_count + 2 * j]);
      ++j;
    }
    // A plain LessThan / GreaterThan of float keys places NaNs last / first (graph.h), as XLA's
    // CPU runtime does by itself for one or two operands; with three or more it runs the
    // comparator as written, and NaNs fell anywhere. There the comparator says so itself:
    // ascending, x before y is !(y <= x) && x == x (descending: !(x <= y) && y == y).
    const int order = total >= 3 ? cml_shlo_plain_float_order(m, fi) : 0;
    if (order != 0) {
      const cml__shlo_val_t x = {.name = args[0], .shape = *shapes[0]};
      const cml__shlo_val_t y = {.name = args[1], .shape = *shapes[1]};
      const cml__shlo_val_t* lo = order > 0 ? &y : &x;
      const cml__shlo_val_t* hi = order > 0 ? &x : &y;
      const cml__shlo_val_t le = cml__shlo_compare(c, "LE", lo, hi, false);
      const cml__shlo_val_t key = order > 0 ? x : y;
      cml__shlo_val_t both[2];
      both[0] = cml__shlo_op(c, "stablehlo.not", &le, 1, NULL, &le.shape);
      both[1] = cml__shlo_compare(c, "EQ", &key, &key, false);
      const cml__shlo_val_t before = cml__shlo_op(c, "stablehlo.and", both, 2, NULL, &le.shape);
      cml__shlo_region_return(c, &before, 1);
    } else {
      st = cml__shlo_emit_nodes(c, fi);
      if (st == CML_OK) cml_shlo_return(c, "stablehlo.return", fi, NULL, 0);
    }
    cml_shlo_region_close(c);
    c->flag_on = outer_on;
    if (st == CML_OK) {
      cml__shlo_printf(c, ")");
      // A small attribute buffer: this function is on the stack once per nesting level.
      // Always stable: XLA's CPU runtime sorts is_stable = false with an unguarded sort that
      // reads past the array (or never ends) when the comparator is not a strict weak order
      // (l != r, a constant true), and a stable order is a valid answer to an unstable request.
      char a[96];
      snprintf(a, sizeof a, "dimension = %lld : i64, is_stable = true", (long long)n->attrs->axis);
      cml__shlo_op_end(c, a, ins, (int)total, outs, total);
      for (uint32_t i = 0; i < count; ++i) {
        cml__shlo_name_t r = total == 1 ? name : cml__shlo_result(&name, i);
        cml__shlo_bind(c, n->first_output + i, &r);
      }
    }
  }
  free(ins);
  free(outs);
  free(args);
  free((void*)shapes);
  free(scalar);
  return st;
}

static cml_status_t cml_shlo_emit_call(cml__shlo_ctx_t* c, const cml_ir_node_t* n) {
  const cml_module_t* m = c->module;
  uint32_t fi = n->attrs->functions[0];
  const cml_ir_function_t* f = &m->functions[fi];
  uint32_t total = n->input_count + f->capture_count;
  // A callee that returns the divergence flag (emit_guard.c) has one more result.
  const bool flagged = c->guard_flags && c->guard_flags[fi];
  const uint32_t count = n->output_count + (flagged ? 1 : 0);
  cml__shlo_val_t* ins = malloc((total ? total : 1) * sizeof *ins);
  cml_shape_t* outs = malloc(count * sizeof *outs + 1);
  if (!ins || !outs) {
    free(ins);
    free(outs);
    return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  }
  for (uint32_t i = 0; i < n->input_count; ++i) ins[i] = cml__shlo_value(c, n->inputs[i]);
  for (uint32_t i = 0; i < f->capture_count; ++i) {
    ins[n->input_count + i] = cml__shlo_value(c, f->captures_outer[i]);
  }
  for (uint32_t i = 0; i < n->output_count; ++i) outs[i] = m->values[n->first_output + i].shape;
  if (flagged) outs[count - 1] = cml_shape_scalar(CML_DTYPE_I32);
  cml__shlo_name_t name = cml__shlo_op_begin(c, "func.call", ins, (int)total, count);
  cml__shlo_attr_t a;
  cml__shlo_attr_init(&a);
  cml__shlo_attr_printf(&a, "callee = @%s", c->symbols[fi]);
  cml__shlo_op_end(c, a.s, ins, (int)total, outs, count);
  cml_shlo_bind_results(c, n, &name, count);
  if (flagged && c->flag_on) {
    const cml__shlo_val_t inner = {count == 1 ? name : cml__shlo_result(&name, count - 1),
                                   outs[count - 1]};
    c->flag = cml__shlo_flag_max(c, &c->flag, &inner);
  }
  free(ins);
  free(outs);
  return CML_OK;
}

cml_status_t cml__shlo_emit_nodes(cml__shlo_ctx_t* c, uint32_t fi) {
  const cml_module_t* m = c->module;
  const cml_ir_function_t* f = &m->functions[fi];
  for (uint32_t i = 0; i < f->node_count; ++i) {
    const cml_ir_node_t* n = &m->nodes[f->nodes[i]];
    cml_status_t st = CML_OK;
    switch (n->op) {
      case CML_OP_PARAMETER:
      case CML_OP_CAPTURED_VALUE:
        break;  // bound by the function or region header
      case CML_OP_WHILE:
        st = cml_shlo_emit_while(c, n);
        break;
      case CML_OP_IF:
        st = cml_shlo_emit_if(c, n);
        break;
      case CML_OP_SORT:
        st = cml_shlo_emit_sort(c, n);
        break;
      case CML_OP_CALL:
        st = cml_shlo_emit_call(c, n);
        break;
      default:
        st = cml__shlo_emit_simple_node(c, n);
        break;
    }
    if (st != CML_OK) return st;
  }
  return CML_OK;
}

//===--- functions and module ---===//

//===--- Shardy (AutoSharding modules) ---===//

// The symbol of |mesh|: "mesh_<name>" (mesh names are identifiers and unique in a module; the
// prefix keeps them apart from the functions' symbols).
static void cml_shlo_mesh_symbol(cml__shlo_ctx_t* c, const cml_mesh_t* mesh) {
  const char* name = cml_mesh_name(mesh);
  cml__shlo_printf(c, "@mesh_%s", name && *name ? name : "mesh");
}

// One `sdy.mesh` line per mesh of the module: axes in order, and `device_ids` (the mesh's
// logical device assignment: mesh position k runs on device slot device_ids[k]) only when it
// is not the identity.
static void cml_shlo_emit_meshes(cml__shlo_ctx_t* c) {
  const cml_module_t* m = c->module;
  for (uint32_t i = 0; i < m->mesh_count; ++i) {
    const cml_mesh_t* mesh = m->meshes[i];
    cml__shlo_line(c);
    cml__shlo_printf(c, "sdy.mesh ");
    cml_shlo_mesh_symbol(c, mesh);
    cml__shlo_printf(c, " = <[");
    size_t axes = cml_mesh_axis_count(mesh);
    for (size_t a = 0; a < axes; ++a) {
      cml__shlo_printf(c, "%s\"%s\"=%lld", a ? ", " : "", cml_mesh_axis_name(mesh, a),
                       (long long)cml_mesh_axis_size(mesh, a));
    }
    cml__shlo_printf(c, "]");
    const int32_t* ids = cml_mesh_device_assignment(mesh);
    int64_t count = cml_mesh_device_count(mesh);
    bool identity = true;
    for (int64_t k = 0; ids && k < count; ++k) identity = identity && ids[k] == k;
    if (ids && !identity) {
      cml__shlo_printf(c, ", device_ids=[");
      for (int64_t k = 0; k < count; ++k) cml__shlo_printf(c, "%s%d", k ? ", " : "", (int)ids[k]);
      cml__shlo_printf(c, "]");
    }
    cml__shlo_printf(c, ">\n");
  }
}

// `sdy.sharding = #sdy.sharding<@mesh_m, [{"a"}, {}, ...]>` for a value of |rank|: one closed
// dimension sharding per axis (axes past the spec's rank replicated). A NULL or zeroed spec is
// replicated on the module's first mesh.
static void cml_shlo_sharding_attr(cml__shlo_ctx_t* c, const cml_sharding_t* s, int32_t rank) {
  const cml_module_t* m = c->module;
  bool given = s && s->mesh;
  const cml_mesh_t* mesh = given ? s->mesh : (m->mesh_count ? m->meshes[0] : NULL);
  cml__shlo_printf(c, "sdy.sharding = #sdy.sharding<");
  cml_shlo_mesh_symbol(c, mesh);
  cml__shlo_printf(c, ", [");
  for (int32_t d = 0; d < rank; ++d) {
    cml__shlo_printf(c, "%s{", d ? ", " : "");
    int count = given && d < s->rank ? s->axis_count[d] : 0;
    for (int k = 0; k < count && k < CML_MAX_MESH_AXES; ++k) {
      cml__shlo_printf(c, "%s\"%s\"", k ? ", " : "",
                       cml_mesh_axis_name(mesh, (size_t)s->mesh_axes[d][k]));
    }
    cml__shlo_printf(c, "}");
  }
  cml__shlo_printf(c, "]>");
}

// The sharding of main's parameter / output |i| (NULL: replicated).
static const cml_sharding_t* cml_shlo_param_sharding(const cml_module_t* m, uint32_t i) {
  return m->param_shardings ? &m->param_shardings[i] : NULL;
}
static const cml_sharding_t* cml_shlo_output_sharding(const cml_module_t* m, uint32_t i) {
  return m->output_shardings ? &m->output_shardings[i] : NULL;
}

// Emits `func.func` for function |fi|: main (public, named parameters) or a private function
// whose trailing parameters are its captures.
static cml_status_t cml_shlo_emit_function(cml__shlo_ctx_t* c, uint32_t fi) {
  const cml_module_t* m = c->module;
  const cml_ir_function_t* f = &m->functions[fi];
  bool is_main = fi == 0;
  // AutoSharding: every parameter and result of main gets a closed sharding (a result without
  // one would be left to the partitioner, which may return it sharded).
  bool sharded = is_main && cml_xla_emit_is_sharded(m);
  cml__shlo_line(c);
  cml__shlo_printf(c, "func.func %s @%s(", is_main ? "public" : "private", c->symbols[fi]);
  for (uint32_t i = 0; i < f->param_count; ++i) {
    uint32_t v = f->params[i];
    cml__shlo_name_t name;
    if (is_main) {
      // Positional: "%arg<i>" can neither collide with another parameter nor with the
      // emitter's "%<n>" values, whatever the user named things.
      snprintf(name.s, sizeof name.s, "%%arg%u", i);
    } else {
      name = cml__shlo_fresh(c);
    }
    cml__shlo_bind(c, v, &name);
    cml__shlo_printf(c, "%s%s: ", i ? ", " : "", name.s);
    cml__shlo_type(c, &m->values[v].shape);
    bool donor = is_main && c->opts->donatable_inputs;
    if (donor || (is_main && sharded)) {
      cml__shlo_printf(c, " {%s", donor ? "jax.buffer_donor = true" : "");
      if (sharded) {
        cml__shlo_printf(c, "%s", donor ? ", " : "");
        cml_shlo_sharding_attr(c, cml_shlo_param_sharding(m, i), m->values[v].shape.rank);
      }
      cml__shlo_printf(c, "}");
    }
    if (is_main) {
      // The user's parameter name, kept as the argument's location.
      cml__shlo_printf(c, " loc(\"");
      cml_shlo_label(c, m->nodes[m->values[v].node].name);
      cml__shlo_printf(c, "\")");
    }
  }
  for (uint32_t i = 0; i < f->capture_count; ++i) {
    cml__shlo_name_t name = cml__shlo_fresh(c);
    cml__shlo_bind(c, f->captures_inner[i], &name);
    cml__shlo_printf(c, "%s%s: ", (i || f->param_count) ? ", " : "", name.s);
    cml__shlo_type(c, &m->values[f->captures_inner[i]].shape);
  }
  cml__shlo_printf(c, ") -> (");
  for (uint32_t i = 0; i < f->output_count; ++i) {
    if (i) cml__shlo_printf(c, ", ");
    cml__shlo_type(c, &m->values[f->outputs[i]].shape);
    if (sharded) {
      cml__shlo_printf(c, " {");
      cml_shlo_sharding_attr(c, cml_shlo_output_sharding(m, i),
                             m->values[f->outputs[i]].shape.rank);
      cml__shlo_printf(c, "}");
    }
  }
  // The divergence flag, last (emit_guard.c).
  const bool flagged = c->guard_flags && c->guard_flags[fi];
  if (flagged) cml__shlo_printf(c, "%stensor<i32>", f->output_count ? ", " : "");
  cml__shlo_printf(c, ") {\n");
  c->indent++;
  c->flag_on = flagged;
  if (flagged) c->flag = cml__shlo_flag_zero(c);
  cml_status_t st = cml__shlo_emit_nodes(c, fi);
  if (st == CML_OK) cml_shlo_return(c, "func.return", fi, &c->flag, flagged ? 1 : 0);
  c->flag_on = false;
  c->indent--;
  cml__shlo_line(c);
  cml__shlo_printf(c, "}\n");
  return st;
}

// Names the func.func symbols: "main" for function 0, "fn<i>" or "fn<i>_<name>" for named
// function i (its name made an identifier, for readers), "closure<i>" for a called closure.
// Unique by construction: the index after the fixed prefix ends at the first '_' or the end,
// so two symbols are equal only for the same function, and no symbol other than main's is
// "main" whatever the functions are called.
static void cml_shlo_name_symbols(cml__shlo_ctx_t* c) {
  const cml_module_t* m = c->module;
  snprintf(c->symbols[0], sizeof c->symbols[0], "main");
  for (uint32_t fi = 1; fi < m->function_count; ++fi) {
    const cml_ir_function_t* f = &m->functions[fi];
    if (!c->called[fi]) continue;
    char* sym = c->symbols[fi];
    size_t size = sizeof c->symbols[fi];
    if (f->parent < 0) {
      int len = snprintf(sym, size, "fn%u", fi);
      if (f->name && *f->name && len > 0 && (size_t)len + 2 < size) {
        sym[len] = '_';
        cml_shlo_identifier(f->name, sym + len + 1, size - (size_t)len - 1);
      }
    } else {
      snprintf(sym, size, "closure%u", fi);
    }
  }
}

// Checks the module's structure and that every value's dtype has a StableHLO type.
static cml_status_t cml_shlo_validate(const cml_module_t* m) {
  if (m->function_count == 0 || !m->functions || !m->values || !m->nodes) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "xla: emit: the module has no functions");
  }
  for (uint32_t v = 1; v < m->value_count; ++v) {
    if (m->values[v].node >= m->node_count) {
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                             "xla: emit: value %u has no producing node", v);
    }
    cml_dtype_t d = m->values[v].shape.dtype;
    if (!cml_dtype_stablehlo_name(d)) {
      const cml_ir_node_t* n = &m->nodes[m->values[v].node];
      return cml_status_make(CML_STATUS_UNIMPLEMENTED,
                             "xla: StableHLO has no type for %s (a value of %s)", cml_dtype_name(d),
                             cml_op_name(n->op));
    }
  }
  for (uint32_t i = 0; i < m->node_count; ++i) {
    const cml_ir_node_t* n = &m->nodes[i];
    bool control =
        n->op == CML_OP_WHILE || n->op == CML_OP_IF || n->op == CML_OP_SORT || n->op == CML_OP_CALL;
    if (control && (n->attrs->functions[0] >= m->function_count ||
                    n->attrs->functions[1] >= m->function_count)) {
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                             "xla: emit: %s refers to a function that does not exist",
                             cml_op_name(n->op));
    }
  }
  return CML_OK;
}

uint32_t cml__shlo_node_targets(const cml_ir_node_t* n, uint32_t out[2]) {
  switch (n->op) {
    case CML_OP_CALL:
    case CML_OP_SORT:
      out[0] = n->attrs->functions[0];
      return 1;
    case CML_OP_WHILE:
    case CML_OP_IF:
      out[0] = n->attrs->functions[0];
      out[1] = n->attrs->functions[1];
      return 2;
    default:
      return 0;
  }
}

// Checks the nesting depth of every function: 0 for a function without control flow, else one
// more than the deepest function one of its Call/While/If/Sort nodes refers to (closures
// inlined as regions and called functions count alike: XLA recurses through both). Iterative
// (an explicit stack), so a deep or cyclic module cannot overflow this function's stack; a
// cycle (a function that calls itself, directly or not) is INVALID_ARGUMENT.
static cml_status_t cml_shlo_check_depth(const cml_module_t* m, int64_t* out_depth) {
  *out_depth = 0;
  uint32_t count = m->function_count;
  // depth[fi]: -1 not visited, -2 on the stack, >= 0 done.
  int64_t* depth = malloc(count * sizeof *depth);
  uint32_t* stack_fn = malloc(count * sizeof *stack_fn);
  uint32_t* stack_node = malloc(count * sizeof *stack_node);
  if (!depth || !stack_fn || !stack_node) {
    free(depth);
    free(stack_fn);
    free(stack_node);
    return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  }
  for (uint32_t i = 0; i < count; ++i) depth[i] = -1;
  cml_status_t st = CML_OK;
  int64_t deepest = 0;
  uint32_t deepest_fn = 0;
  for (uint32_t root = 0; root < count && st == CML_OK; ++root) {
    if (depth[root] >= 0) continue;
    uint32_t top = 0;
    stack_fn[top] = root;
    stack_node[top] = 0;
    depth[root] = -2;
    ++top;
    while (top > 0 && st == CML_OK) {
      uint32_t fi = stack_fn[top - 1];
      const cml_ir_function_t* f = &m->functions[fi];
      uint32_t* pos = &stack_node[top - 1];
      bool pushed = false;
      // Visits the targets of the next control-flow node whose targets are not done yet.
      for (; *pos < 2 * f->node_count && !pushed; ++*pos) {
        const cml_ir_node_t* n = &m->nodes[f->nodes[*pos / 2]];
        uint32_t targets[2];
        uint32_t k = *pos % 2;
        if (k >= cml__shlo_node_targets(n, targets)) continue;
        uint32_t t = targets[k];
        if (depth[t] == -2) {
          st = cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                               "xla: emit: function %u (\"%s\") is recursive: %s in function %u "
                               "refers back to it",
                               t, m->functions[t].name ? m->functions[t].name : "",
                               cml_op_name(n->op), fi);
          break;
        }
        if (depth[t] == -1) {
          depth[t] = -2;
          stack_fn[top] = t;
          stack_node[top] = 0;
          ++top;
          pushed = true;
          // *pos is not advanced past this target: it is looked at again, done, on return.
          --*pos;
        }
      }
      if (pushed || st != CML_OK) continue;
      // Every target is done: this function's depth.
      int64_t d = 0;
      for (uint32_t i = 0; i < f->node_count; ++i) {
        uint32_t targets[2];
        uint32_t tc = cml__shlo_node_targets(&m->nodes[f->nodes[i]], targets);
        for (uint32_t k = 0; k < tc; ++k) {
          if (depth[targets[k]] + 1 > d) d = depth[targets[k]] + 1;
        }
      }
      depth[fi] = d;
      if (d > deepest) {
        deepest = d;
        deepest_fn = fi;
      }
      --top;
    }
  }
  if (st == CML_OK && deepest > CML_XLA_EMIT_MAX_NESTING_DEPTH) {
    const char* name = m->functions[deepest_fn].name;
    st = cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                         "xla: emit: function %u (\"%s\") nests Call/While/If/Sort %lld deep "
                         "(called functions and closures), more than the XLA backend's limit of "
                         "%d (XLA's compiler recurses once per level)",
                         deepest_fn, name ? name : "", (long long)deepest,
                         CML_XLA_EMIT_MAX_NESTING_DEPTH);
  }
  free(depth);
  free(stack_fn);
  free(stack_node);
  if (st == CML_OK) *out_depth = deepest;
  return st;
}

// The bytes of stack left below this function's frame on the calling thread, or 0 when the
// platform does not say.
static size_t cml_shlo_stack_left(void) {
  char here;
  uintptr_t at = (uintptr_t)&here, low = 0;
#if defined(__linux__)
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return 0;
  void* addr = NULL;
  size_t size = 0;
  int rc = pthread_attr_getstack(&attr, &addr, &size);
  pthread_attr_destroy(&attr);
  if (rc != 0) return 0;
  low = (uintptr_t)addr;
#elif defined(__APPLE__)
  low = (uintptr_t)pthread_get_stackaddr_np(pthread_self()) -
        pthread_get_stacksize_np(pthread_self());
#endif
  return low && at > low ? (size_t)(at - low) : 0;
}

// XLA compiles on the calling thread and recurses once per nesting level: checks that |depth|
// levels fit in the stack XLA will have (|opts|->compile_stack_bytes, or what is left of the
// calling thread's stack), at CML_SHLO_STACK_PER_LEVEL bytes a level plus a fixed base.
static cml_status_t cml_shlo_check_stack(const cml_xla_emit_options_t* opts, int64_t depth) {
  if (depth == 0 || opts->compile_stack_bytes == SIZE_MAX) return CML_OK;
  size_t stack = opts->compile_stack_bytes ? opts->compile_stack_bytes : cml_shlo_stack_left();
  if (stack == 0) return CML_OK;  // unknown: only the depth limit applies
  size_t need = CML_SHLO_STACK_BASE + (size_t)depth * CML_SHLO_STACK_PER_LEVEL;
  if (need <= stack) return CML_OK;
  return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED,
                         "xla: emit: the module nests Call/While/If/Sort %lld deep, which needs "
                         "about %zu KiB of stack for XLA's compiler (it recurses once per level, "
                         "on the calling thread); only %zu KiB are available: compile from a "
                         "thread with a larger stack, or nest less",
                         (long long)depth, need / 1024, stack / 1024);
}

cml_status_t cml_xla_emit_stablehlo(const cml_module_t* module, const cml_xla_emit_options_t* opts,
                                    char** out_text) {
  if (out_text) *out_text = NULL;
  if (!module || !opts || !out_text) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "xla: emit: NULL module or output");
  }
  CML_RETURN_IF_ERROR(cml_shlo_validate(module));
  int64_t depth = 0;
  CML_RETURN_IF_ERROR(cml_shlo_check_depth(module, &depth));
  CML_RETURN_IF_ERROR(cml_shlo_check_stack(opts, depth));
  cml__shlo_ctx_t c;
  memset(&c, 0, sizeof c);
  c.module = module;
  c.opts = opts;
  c.text.capacity = 4096;
  c.text.data = malloc(c.text.capacity);
  c.names = calloc(module->value_count, sizeof *c.names);
  c.symbols = calloc(module->function_count, sizeof *c.symbols);
  c.called = calloc(module->function_count, sizeof *c.called);
  if (!c.text.data || !c.names || !c.symbols || !c.called) {
    free(c.text.data);
    free(c.names);
    free(c.symbols);
    free(c.called);
    return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  }
  c.text.data[0] = '\0';
  cml_status_t st = cml__shlo_guard_analyze(module, opts, &c.guard_nodes, &c.guard_flags);
  if (st != CML_OK) {
    free(c.text.data);
    free(c.names);
    free(c.symbols);
    free(c.called);
    return st;
  }
  // Symbols: main, named functions by their (normalized, unique) names, called closures.
  for (uint32_t i = 0; i < module->node_count; ++i) {
    if (module->nodes[i].op == CML_OP_CALL) c.called[module->nodes[i].attrs->functions[0]] = true;
  }
  cml_shlo_name_symbols(&c);
  char name[64];
  cml_shlo_identifier(module->name && *module->name ? module->name : "cml", name, sizeof name);
  cml__shlo_printf(&c,
                   "module @%s attributes {mhlo.num_partitions = %d : i32, "
                   "mhlo.num_replicas = %d : i32} {\n",
                   name, (int)opts->num_partitions, (int)opts->num_replicas);
  c.indent = 1;
  if (cml_xla_emit_is_sharded(module)) cml_shlo_emit_meshes(&c);
  st = cml_shlo_emit_function(&c, 0);
  for (uint32_t fi = 1; fi < module->function_count && st == CML_OK; ++fi) {
    if (c.called[fi]) st = cml_shlo_emit_function(&c, fi);
  }
  cml__shlo_printf(&c, "}\n");
  if (st == CML_OK && c.text.failed) st = cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  free(c.names);
  free(c.symbols);
  free(c.called);
  free(c.guard_nodes);
  free(c.guard_flags);
  if (st != CML_OK) {
    free(c.text.data);
    return st;
  }
  *out_text = c.text.data;
  return CML_OK;
}
