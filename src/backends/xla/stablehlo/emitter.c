// SPDX-License-Identifier: Apache-2.0
// src/backends/xla/stablehlo/emitter.c: a minimal StableHLO emitter (Parameter, Constant, Add,
// Mul in main) so the XLA backend can be tested end to end. The full emitter replaces this file.
#include "backends/xla/stablehlo/emitter.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cml_xla_emit_options_init(cml_xla_emit_options_t* options) {
  memset(options, 0, sizeof *options);
  options->struct_size = sizeof *options;
  options->platform = "cpu";
  options->donatable_inputs = true;
  options->num_replicas = 1;
  options->num_partitions = 1;
}

typedef struct cml_xla_text_t {
  char* data;
  size_t size, capacity;
  bool failed;
} cml_xla_text_t;

static void cml_xla_text_printf(cml_xla_text_t* t, const char* fmt, ...) CML_PRINTF(2, 3);
static void cml_xla_text_printf(cml_xla_text_t* t, const char* fmt, ...) {
  if (t->failed) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->data + t->size, t->capacity - t->size, fmt, ap);
    va_end(ap);
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

static void cml_xla_emit_type(cml_xla_text_t* t, const cml_shape_t* s) {
  cml_xla_text_printf(t, "tensor<");
  for (int32_t i = 0; i < s->rank; ++i) cml_xla_text_printf(t, "%lldx", (long long)s->dims[i]);
  cml_xla_text_printf(t, "%s>", cml_dtype_stablehlo_name(s->dtype));
}

static void cml_xla_emit_value(cml_xla_text_t* t, const cml_module_t* m, uint32_t value) {
  const cml_ir_node_t* n = &m->nodes[m->values[value].node];
  if (n->op == CML_OP_PARAMETER) {
    cml_xla_text_printf(t, "%%arg%u", n->index);
  } else {
    cml_xla_text_printf(t, "%%v%u", value);
  }
}

// Bool constants: nested lists of true/false (the hex form's packing of i1 is not relied on).
static void cml_xla_emit_bool_list(cml_xla_text_t* t, const cml_shape_t* s, int32_t axis,
                                   const uint8_t* data, int64_t* index) {
  if (axis == s->rank) {
    cml_xla_text_printf(t, "%s", data[(*index)++] ? "true" : "false");
    return;
  }
  cml_xla_text_printf(t, "[");
  for (int64_t i = 0; i < s->dims[axis]; ++i) {
    if (i) cml_xla_text_printf(t, ", ");
    cml_xla_emit_bool_list(t, s, axis + 1, data, index);
  }
  cml_xla_text_printf(t, "]");
}

static cml_status_t cml_xla_emit_node(cml_xla_text_t* t, const cml_module_t* m,
                                      const cml_ir_node_t* n) {
  const cml_shape_t* out = &m->values[n->first_output].shape;
  switch (n->op) {
    case CML_OP_PARAMETER:
      return CML_OK;
    case CML_OP_CONSTANT: {
      cml_xla_text_printf(t, "    %%v%u = \"stablehlo.constant\"() {value = dense<",
                          n->first_output);
      size_t bytes = cml_shape_byte_size(out);
      if (out->dtype == CML_DTYPE_BOOL) {
        int64_t index = 0;
        if (out->rank == 0) {
          cml_xla_text_printf(t, "%s", ((const uint8_t*)n->data)[0] ? "true" : "false");
        } else {
          cml_xla_emit_bool_list(t, out, 0, n->data, &index);
        }
      } else if (bytes == 0) {
        // dense<> for empty arrays.
      } else {
        cml_xla_text_printf(t, "\"0x");
        const uint8_t* p = n->data;
        for (size_t i = 0; i < bytes; ++i) cml_xla_text_printf(t, "%02X", p[i]);
        cml_xla_text_printf(t, "\"");
      }
      cml_xla_text_printf(t, "> : ");
      cml_xla_emit_type(t, out);
      cml_xla_text_printf(t, "} : () -> ");
      cml_xla_emit_type(t, out);
      cml_xla_text_printf(t, "\n");
      return CML_OK;
    }
    case CML_OP_ADD:
    case CML_OP_MUL: {
      // Operands that are not of the output's shape (scalars, size-1 axes) are broadcast first.
      uint32_t operands[2];
      for (int k = 0; k < 2; ++k) {
        uint32_t v = n->inputs[k];
        const cml_shape_t* in = &m->values[v].shape;
        if (cml_shape_dims_equal(in, out)) {
          operands[k] = v;
          continue;
        }
        // Fresh names for the broadcasts: %b<node output>_<k>.
        cml_xla_text_printf(t, "    %%b%u_%d = \"stablehlo.broadcast_in_dim\"(", n->first_output, k);
        cml_xla_emit_value(t, m, v);
        cml_xla_text_printf(t, ") {broadcast_dimensions = array<i64");
        for (int32_t i = 0; i < in->rank; ++i) cml_xla_text_printf(t, "%s %d", i ? "," : ":", i);
        cml_xla_text_printf(t, ">} : (");
        cml_xla_emit_type(t, in);
        cml_xla_text_printf(t, ") -> ");
        cml_xla_emit_type(t, out);
        cml_xla_text_printf(t, "\n");
        operands[k] = 0;
      }
      cml_xla_text_printf(t, "    %%v%u = \"stablehlo.%s\"(", n->first_output,
                          n->op == CML_OP_ADD ? "add" : "multiply");
      for (int k = 0; k < 2; ++k) {
        if (k) cml_xla_text_printf(t, ", ");
        if (operands[k]) {
          cml_xla_emit_value(t, m, operands[k]);
        } else {
          cml_xla_text_printf(t, "%%b%u_%d", n->first_output, k);
        }
      }
      cml_xla_text_printf(t, ") : (");
      cml_xla_emit_type(t, out);
      cml_xla_text_printf(t, ", ");
      cml_xla_emit_type(t, out);
      cml_xla_text_printf(t, ") -> ");
      cml_xla_emit_type(t, out);
      cml_xla_text_printf(t, "\n");
      return CML_OK;
    }
    default: {
      const cml_shape_t* in = n->input_count ? &m->values[n->inputs[0]].shape : out;
      return cml_status_make(CML_STATUS_UNIMPLEMENTED,
                             "xla: the StableHLO emitter cannot lower %s (%s) yet",
                             cml_op_name(n->op), cml_dtype_name(in->dtype));
    }
  }
}

cml_status_t cml_xla_emit_stablehlo(const cml_module_t* module,
                                    const cml_xla_emit_options_t* opts, char** out_text) {
  if (out_text) *out_text = NULL;
  if (!module || !opts || !out_text || module->function_count == 0) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "xla: emit: no module");
  }
  if (module->function_count > 1) {
    return cml_status_make(CML_STATUS_UNIMPLEMENTED,
                           "xla: the StableHLO emitter cannot lower functions and closures yet");
  }
  const cml_ir_function_t* f = &module->functions[0];
  for (uint32_t i = 0; i < f->param_count + f->output_count; ++i) {
    uint32_t v = i < f->param_count ? f->params[i] : f->outputs[i - f->param_count];
    if (!cml_dtype_stablehlo_name(module->values[v].shape.dtype)) {
      return cml_status_make(CML_STATUS_UNIMPLEMENTED, "xla: StableHLO has no type for %s",
                             cml_dtype_name(module->values[v].shape.dtype));
    }
  }
  cml_xla_text_t t = {malloc(4096), 0, 4096, false};
  if (!t.data) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  char name[64] = "cml";
  if (module->name && *module->name) {
    size_t k = 0;
    for (const char* p = module->name; *p && k + 1 < sizeof name; ++p) {
      char c = *p;
      bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
      name[k++] = ok ? c : '_';
    }
    name[k] = '\0';
  }
  cml_xla_text_printf(&t,
                      "module @%s attributes {mhlo.num_partitions = %d : i32, "
                      "mhlo.num_replicas = %d : i32} {\n  func.func public @main(",
                      name, opts->num_partitions, opts->num_replicas);
  for (uint32_t i = 0; i < f->param_count; ++i) {
    cml_xla_text_printf(&t, "%s%%arg%u: ", i ? ", " : "", i);
    cml_xla_emit_type(&t, &module->values[f->params[i]].shape);
    if (opts->donatable_inputs) cml_xla_text_printf(&t, " {jax.buffer_donor = true}");
  }
  cml_xla_text_printf(&t, ") -> (");
  for (uint32_t i = 0; i < f->output_count; ++i) {
    if (i) cml_xla_text_printf(&t, ", ");
    cml_xla_emit_type(&t, &module->values[f->outputs[i]].shape);
  }
  cml_xla_text_printf(&t, ") {\n");
  cml_status_t st = CML_OK;
  for (uint32_t i = 0; i < f->node_count && st == CML_OK; ++i) {
    st = cml_xla_emit_node(&t, module, &module->nodes[f->nodes[i]]);
  }
  if (st == CML_OK) {
    cml_xla_text_printf(&t, "    \"func.return\"(");
    for (uint32_t i = 0; i < f->output_count; ++i) {
      if (i) cml_xla_text_printf(&t, ", ");
      cml_xla_emit_value(&t, module, f->outputs[i]);
    }
    cml_xla_text_printf(&t, ") : (");
    for (uint32_t i = 0; i < f->output_count; ++i) {
      if (i) cml_xla_text_printf(&t, ", ");
      cml_xla_emit_type(&t, &module->values[f->outputs[i]].shape);
    }
    cml_xla_text_printf(&t, ") -> ()\n  }\n}\n");
  }
  if (st == CML_OK && t.failed) st = cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  if (st != CML_OK) {
    free(t.data);
    return st;
  }
  *out_text = t.data;
  return CML_OK;
}
