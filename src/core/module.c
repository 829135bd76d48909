// SPDX-License-Identifier: Apache-2.0
// src/core/module.c: the refcounted module (the IR a backend compiles), cml_builder_compile and
// the readable module dump.
#include <stdio.h>
#include <string.h>

#include "base/base_internal.h"
#include "core/builder_internal.h"
#include "core/dynamic.h"
#include "distributed/distributed_internal.h"
#include "distributed/partition.h"

cml__module_impl_t* cml__module_impl_create(cml_allocator_t allocator, const char* name) {
  cml__module_impl_t* impl = (cml__module_impl_t*)cml_allocator_malloc(allocator, sizeof *impl, 64);
  if (!impl) return NULL;
  memset(impl, 0, sizeof *impl);
  atomic_init(&impl->refcount, 1);
  impl->allocator = allocator;
  cml__arena_init(&impl->arena, allocator);
  impl->name = cml__arena_strdup(&impl->arena, name);
  // values[0] is reserved: value id 0 is CML_VALUE_INVALID.
  if (!impl->name || !cml__grow(allocator, (void**)&impl->values, &impl->value_capacity, 64,
                                sizeof *impl->values)) {
    cml__arena_deinit(&impl->arena);
    cml_allocator_free(allocator, impl->values,
                       (size_t)impl->value_capacity * sizeof *impl->values);
    cml_allocator_free(allocator, impl, sizeof *impl);
    return NULL;
  }
  memset(&impl->values[0], 0, sizeof impl->values[0]);
  impl->value_count = 1;
  impl->module.name = impl->name;
  impl->module.num_devices = 1;
  return impl;
}

static void cml_module_impl_free(cml__module_impl_t* impl) {
  cml_allocator_t a = impl->allocator;
  for (uint32_t i = 0; i < impl->function_count; ++i) {
    cml_function_t* f = impl->functions[i];
    cml__u32_vec_free(&f->nodes, a);
    cml__u32_vec_free(&f->params, a);
    cml__u32_vec_free(&f->captures_outer, a);
    cml__u32_vec_free(&f->captures_inner, a);
    if (f->capture_slots) {
      cml_allocator_free(a, f->capture_slots,
                         (size_t)f->capture_slot_count * sizeof *f->capture_slots);
    }
    cml__u32_vec_free(&f->outputs, a);
    cml_allocator_free(a, f, sizeof *f);
  }
  if (impl->functions) {
    cml_allocator_free(a, impl->functions,
                       (size_t)impl->function_capacity * sizeof *impl->functions);
  }
  if (impl->name_slots) {
    cml_allocator_free(a, impl->name_slots,
                       (size_t)impl->name_slot_count * sizeof *impl->name_slots);
  }
  if (impl->nodes) {
    cml_allocator_free(a, impl->nodes, (size_t)impl->node_capacity * sizeof *impl->nodes);
  }
  if (impl->values) {
    cml_allocator_free(a, impl->values, (size_t)impl->value_capacity * sizeof *impl->values);
  }
  if (impl->ir_functions) {
    cml_allocator_free(a, impl->ir_functions,
                       (size_t)impl->function_count * sizeof *impl->ir_functions);
  }
  cml__module_impl_free_distribution(impl);
  cml__arena_deinit(&impl->arena);
  cml_module_t* base = impl->base;
  cml_allocator_free(a, impl, sizeof *impl);
  cml_module_release(base);
}

cml_module_t* cml_module_retain(cml_module_t* module) {
  if (module) atomic_fetch_add(&((cml__module_impl_t*)module)->refcount, 1);
  return module;
}

void cml_module_release(cml_module_t* module) {
  if (!module) return;
  cml__module_impl_t* impl = (cml__module_impl_t*)module;
  if (atomic_fetch_sub(&impl->refcount, 1) == 1) cml_module_impl_free(impl);
}

cml_status_t cml__module_impl_finalize(cml__module_impl_t* impl) {
  cml_allocator_t a = impl->allocator;
  if (!impl->ir_functions) {
    impl->ir_functions = (cml_ir_function_t*)cml_allocator_malloc(
        a, (size_t)impl->function_count * sizeof *impl->ir_functions, 16);
    if (!impl->ir_functions) {
      return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "compile: out of memory");
    }
  }
  for (uint32_t i = 0; i < impl->function_count; ++i) {
    const cml_function_t* f = impl->functions[i];
    cml_ir_function_t* out = &impl->ir_functions[i];
    memset(out, 0, sizeof *out);
    out->name = f->name;
    out->parent = f->parent ? (int32_t)f->parent->index : -1;
    out->node_count = f->nodes.count;
    out->nodes = f->nodes.data;
    out->param_count = f->params.count;
    out->params = f->params.data;
    out->capture_count = f->captures_outer.count;
    out->captures_outer = f->captures_outer.data;
    out->captures_inner = f->captures_inner.data;
    out->output_count = f->returned ? f->outputs.count : 0;
    out->outputs = f->outputs.data;
  }
  cml_module_t* m = &impl->module;
  m->name = impl->name;
  m->node_count = impl->node_count;
  m->nodes = impl->nodes;
  m->value_count = impl->value_count;
  m->values = impl->values;
  m->function_count = impl->function_count;
  m->functions = impl->ir_functions;
  return cml__module_impl_finalize_distribution(impl);
}

cml_status_t cml_builder_compile(cml_builder_t* builder, cml_executable_t** out_executable) {
  if (out_executable) *out_executable = NULL;
  if (!builder || !out_executable) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "cml_builder_compile: NULL builder or out_executable");
  }
  cml_builder_t* b = builder;
  if (b->error != CML_OK) return cml_status_clone(b->error);
  if (b->compiled) {
    return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                           "cml_builder_compile: the builder was already compiled");
  }
  cml__module_impl_t* impl = b->impl;
  if (!impl->functions[0]->returned) {
    return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                           "cml_builder_compile: main has not returned (call "
                           "cml_function_return on cml_builder_main first)");
  }
  for (uint32_t i = 1; i < impl->function_count; ++i) {
    const cml_function_t* f = impl->functions[i];
    if (!f->parent && !f->returned) {
      return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                             "cml_builder_compile: function \"%s\" has not returned", f->name);
    }
  }
  CML_RETURN_IF_ERROR(cml__module_impl_finalize(impl));
  // SPMD and AutoSharding split static shapes only: said here, before a backend computes shard
  // shapes of a dynamic axis (AutoSharding said "axis 0 has no size (-2)").
  const cml_module_t* m = &impl->module;
  if (m->distribution != CML_DISTRIBUTION_NONE && cml__module_is_dynamic(m)) {
    const cml_ir_function_t* main_fn = &m->functions[0];
    char text[CML__SHAPE_TEXT];
    for (uint32_t i = 0; i < main_fn->param_count; ++i) {
      const cml_shape_t* s = &m->values[main_fn->params[i]].shape;
      if (!cml_shape_is_dynamic(s)) continue;
      return cml_status_make(CML_STATUS_UNIMPLEMENTED,
                             "cml_builder_compile: module \"%s\": parameter #%u %s has a dynamic "
                             "axis, and SPMD and AutoSharding modules need static shapes "
                             "(docs/dynamic_shapes.md)",
                             m->name ? m->name : "", i, cml__shape_text(s, text));
    }
    return cml_status_make(CML_STATUS_UNIMPLEMENTED,
                           "cml_builder_compile: module \"%s\" has dynamic axes, and SPMD and "
                           "AutoSharding modules need static shapes (docs/dynamic_shapes.md)",
                           m->name ? m->name : "");
  }
  b->compiled = true;
  const cml_backend_vtable_t* vt = b->backend->vtable;
  if (!vt || !vt->compile) {
    return cml_status_make(CML_STATUS_UNIMPLEMENTED, "compile: backend \"%s\" cannot compile",
                           cml_backend_name(b->backend));
  }
  cml_executable_t* exe = NULL;
  const uint32_t fpenv = cml__fpenv_enter(CML__FPENV_IEEE);
  cml_status_t st = vt->compile(b->backend, &impl->module, &exe);
  cml__fpenv_leave(fpenv);
  if (st != CML_OK) return st;
  if (!exe) {
    return cml_status_make(CML_STATUS_INTERNAL, "compile: backend \"%s\" returned no executable",
                           cml_backend_name(b->backend));
  }
  if (exe->backend != b->backend || __atomic_load_n(&exe->refcount, __ATOMIC_RELAXED) != 1) {
    if (vt->executable_destroy) vt->executable_destroy(exe);
    return cml_status_make(CML_STATUS_INTERNAL,
                           "compile: backend \"%s\" returned an executable whose base "
                           "cml_executable_init_base did not initialize (another backend, or a "
                           "reference count other than 1)",
                           cml_backend_name(b->backend));
  }
  *out_executable = exe;
  return CML_OK;
}

// The module without compiling it (src/distributed/partition.h): the checks and the
// finalization of cml_builder_compile, then the module retained for the caller.
cml_status_t cml__builder_take_module(cml_builder_t* builder, cml_module_t** out_module) {
  if (out_module) *out_module = NULL;
  if (!builder || !out_module) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "cml__builder_take_module: NULL builder or out_module");
  }
  if (builder->error != CML_OK) return cml_status_clone(builder->error);
  if (builder->compiled || !builder->impl->functions[0]->returned) {
    return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                           "cml__builder_take_module: compiled already, or main has not returned");
  }
  CML_RETURN_IF_ERROR(cml__module_impl_finalize(builder->impl));
  builder->compiled = true;
  *out_module = cml_module_retain(&builder->impl->module);
  return CML_OK;
}

//===--- dump ---===//

static void cml_dump_node(FILE* out, const cml_module_t* m, const cml_ir_node_t* n) {
  char text[CML__SHAPE_TEXT];
  fprintf(out, "  ");
  for (uint32_t k = 0; k < n->output_count; ++k) {
    fprintf(out, "%s%%%u", k ? ", " : "", n->first_output + k);
  }
  fprintf(out, " = %s", cml_op_name(n->op));
  if (n->op == CML_OP_PARAMETER) fprintf(out, " \"%s\" #%u", n->name ? n->name : "", n->index);
  if (n->op == CML_OP_CAPTURED_VALUE) fprintf(out, " #%u", n->index);
  if (n->op == CML_OP_CONSTANT) fprintf(out, " <%zu bytes>", n->data_size);
  fprintf(out, "(");
  for (uint32_t k = 0; k < n->input_count; ++k) fprintf(out, "%s%%%u", k ? ", " : "", n->inputs[k]);
  fprintf(out, ")");
  const cml_ir_attrs_t* a = n->attrs;
  if (n->op == CML_OP_SLICE) {
    // (Its axes are implicit: a start, limit and stride per axis of its operand.)
    const int32_t rank = m->values[n->first_output].shape.rank;
    const int64_t* lists[3] = {a->starts, a->limits, a->strides};
    static const char* const names[3] = {"starts", "limits", "strides"};
    for (int l = 0; l < 3; ++l) {
      fprintf(out, " %s=[", names[l]);
      for (int32_t i = 0; i < rank; ++i)
        fprintf(out, "%s%lld", i ? "," : "", (long long)lists[l][i]);
      fprintf(out, "]");
    }
  } else if (a->axis_count > 0) {
    fprintf(out, " axes=[");
    for (int32_t i = 0; i < a->axis_count; ++i)
      fprintf(out, "%s%lld", i ? "," : "", (long long)a->axes[i]);
    fprintf(out, "]");
  }
  switch (n->op) {
    case CML_OP_CONCATENATE:
    case CML_OP_IOTA:
    case CML_OP_ARG_MIN_MAX:
    case CML_OP_SORT:
    case CML_OP_BATCH_NORM_INFERENCE:
    case CML_OP_BATCH_NORM_TRAINING:
    case CML_OP_BATCH_NORM_GRADIENT:
      fprintf(out, " axis=%lld", (long long)a->axis);
      break;
    case CML_OP_CALL:
      fprintf(out, " callee=%u", a->functions[0]);
      break;
    case CML_OP_WHILE:
      fprintf(out, " cond=%u body=%u", a->functions[0], a->functions[1]);
      break;
    case CML_OP_IF:
      fprintf(out, " true=%u false=%u", a->functions[0], a->functions[1]);
      break;
    case CML_OP_REDUCE_WINDOW:
    case CML_OP_ALL_REDUCE:
    case CML_OP_REDUCE_SCATTER:
      fprintf(out, " type=%s", cml_reduce_type_name(a->reduce_type));
      break;
    default:
      break;
  }
  switch (n->op) {
    case CML_OP_ALL_GATHER:
    case CML_OP_REDUCE_SCATTER:
      fprintf(out, " axis=%lld", (long long)a->axis);
      break;
    case CML_OP_ALL_TO_ALL:
      fprintf(out, " split_axis=%lld concat_axis=%lld", (long long)a->collective.split_axis,
              (long long)a->collective.concat_axis);
      break;
    case CML_OP_COLLECTIVE_PERMUTE:
      fprintf(out, " pairs=[");
      for (int32_t i = 0; i < a->collective.pair_count; ++i) {
        fprintf(out, "%s%d->%d", i ? ", " : "", (int)a->collective.pairs[2 * i],
                (int)a->collective.pairs[2 * i + 1]);
      }
      fprintf(out, "]");
      break;
    default:
      break;
  }
  if (n->op == CML_OP_SORT) fprintf(out, " comparator=%u", a->functions[0]);
  if (a->collective.groups) {
    char groups[512];
    cml__groups_format(a->collective.groups, (size_t)a->collective.group_count,
                       (size_t)a->collective.group_size, groups, sizeof groups);
    fprintf(out, " groups=%s", groups);
  }
  fprintf(out, " :");
  for (uint32_t k = 0; k < n->output_count; ++k) {
    const cml_shape_t* s = &m->values[n->first_output + k].shape;
    fprintf(out, "%s %s", k ? "," : "", cml_shape_format(s, text, sizeof text));
  }
  fprintf(out, "\n");
}

// "distribution SPMD over 4 devices [0, 1, 2, 3]", the meshes and the main shardings.
static void cml_dump_distribution(FILE* f, const cml_module_t* m) {
  if (m->distribution == CML_DISTRIBUTION_NONE) return;
  fprintf(f, "distribution %s over %d devices, assignment [",
          cml_distribution_name(m->distribution), (int)m->num_devices);
  for (int32_t k = 0; m->device_assignment && k < m->num_devices; ++k) {
    fprintf(f, "%s%d", k ? ", " : "", (int)m->device_assignment[k]);
  }
  fprintf(f, "]\n");
  char text[512];
  for (uint32_t i = 0; i < m->mesh_count; ++i) {
    cml__mesh_format(m->meshes[i], text, sizeof text);
    fprintf(f, "  mesh %s\n", text);
  }
  const cml_ir_function_t* main_fn = m->function_count ? &m->functions[0] : NULL;
  for (uint32_t i = 0; main_fn && m->param_shardings && i < main_fn->param_count; ++i) {
    cml_sharding_format(&m->param_shardings[i], text, sizeof text);
    fprintf(f, "  param #%u: %s\n", i, text);
  }
  for (uint32_t i = 0; main_fn && m->output_shardings && i < main_fn->output_count; ++i) {
    cml_sharding_format(&m->output_shardings[i], text, sizeof text);
    fprintf(f, "  output #%u: %s\n", i, text);
  }
}

cml_op_t cml_ir_plain_comparator(const cml_module_t* m, uint32_t fi) {
  if (!m || fi >= m->function_count) return CML_OP_INVALID;
  const cml_ir_function_t* f = &m->functions[fi];
  if (f->output_count != 1 || f->param_count < 2 || f->capture_count != 0) return CML_OP_INVALID;
  const cml_ir_node_t* cmp = &m->nodes[m->values[f->outputs[0]].node];
  for (uint32_t i = 0; i < f->node_count; ++i) {
    const cml_ir_node_t* n = &m->nodes[f->nodes[i]];
    if (n != cmp && n->op != CML_OP_PARAMETER) return CML_OP_INVALID;
  }
  if (cmp->input_count != 2 || cmp->output_count != 1) return CML_OP_INVALID;
  bool swapped;
  if (cmp->inputs[0] == f->params[0] && cmp->inputs[1] == f->params[1]) {
    swapped = false;
  } else if (cmp->inputs[0] == f->params[1] && cmp->inputs[1] == f->params[0]) {
    swapped = true;
  } else {
    return CML_OP_INVALID;
  }
  // cmp(rhs, lhs) is the mirrored compare of (lhs, rhs): < and >, <= and >= trade places.
  static const cml_op_t pairs[][2] = {
      {CML_OP_LESS_THAN, CML_OP_GREATER_THAN},
      {CML_OP_LESS_OR_EQUAL, CML_OP_GREATER_OR_EQUAL},
      {CML_OP_LESS_THAN_TOTAL_ORDER, CML_OP_GREATER_THAN_TOTAL_ORDER},
      {CML_OP_LESS_OR_EQUAL_TOTAL_ORDER, CML_OP_GREATER_OR_EQUAL_TOTAL_ORDER},
  };
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; ++i) {
    for (int k = 0; k < 2; ++k) {
      if (cmp->op == pairs[i][k]) return pairs[i][swapped ? 1 - k : k];
    }
  }
  return CML_OP_INVALID;
}

void cml_module_dump(const cml_module_t* module, void* out) {
  FILE* f = out ? (FILE*)out : stdout;
  if (!module) {
    fprintf(f, "(null module)\n");
    return;
  }
  fprintf(f, "module \"%s\": %u functions, %u nodes, %u values, %d device(s)\n",
          module->name ? module->name : "", module->function_count, module->node_count,
          module->value_count ? module->value_count - 1 : 0, (int)module->num_devices);
  cml_dump_distribution(f, module);
  for (uint32_t i = 0; i < module->function_count; ++i) {
    const cml_ir_function_t* fn = &module->functions[i];
    if (fn->parent >= 0) {
      fprintf(f, "closure %u (parent %d):", i, (int)fn->parent);
    } else {
      fprintf(f, "function %u \"%s\":", i, fn->name);
    }
    fprintf(f, " %u params, %u captures", fn->param_count, fn->capture_count);
    for (uint32_t k = 0; k < fn->capture_count; ++k) {
      fprintf(f, "%s%%%u->%%%u", k ? ", " : " [", fn->captures_outer[k], fn->captures_inner[k]);
    }
    fprintf(f, "%s\n", fn->capture_count ? "]" : "");
    for (uint32_t k = 0; k < fn->node_count; ++k) {
      cml_dump_node(f, module, &module->nodes[fn->nodes[k]]);
    }
    fprintf(f, "  return");
    for (uint32_t k = 0; k < fn->output_count; ++k) {
      fprintf(f, "%s%%%u", k ? ", " : " ", fn->outputs[k]);
    }
    fprintf(f, "\n");
  }
}
