// SPDX-License-Identifier: Apache-2.0
// src/core/builder_distributed.c: the distributed builder calls (SPMD, AutoSharding, device
// assignment, sharded parameters and results), the collective op builders and the module's
// distribution fields (cml/distributed.h, cml/ir.h).
#include <stdio.h>
#include <string.h>

#include "core/builder_internal.h"
#include "distributed/distributed_internal.h"

#define INVALID(...) cml_status_make(CML_STATUS_INVALID_ARGUMENT, __VA_ARGS__)

//===--- module fields ---===//

void cml__module_impl_free_distribution(cml__module_impl_t* impl) {
  cml_allocator_t a = impl->allocator;
  for (uint32_t i = 0; i < impl->mesh_count; ++i) cml_mesh_destroy(impl->meshes[i]);
  if (impl->meshes) cml_allocator_free(a, impl->meshes, impl->mesh_count * sizeof *impl->meshes);
  if (impl->param_shardings) {
    cml_allocator_free(a, impl->param_shardings,
                       impl->param_sharding_capacity * sizeof *impl->param_shardings);
  }
  if (impl->output_shardings) {
    cml_allocator_free(a, impl->output_shardings,
                       impl->output_sharding_count * sizeof *impl->output_shardings);
  }
  if (impl->final_param_shardings) {
    cml_allocator_free(a, impl->final_param_shardings,
                       impl->final_param_count * sizeof *impl->final_param_shardings);
  }
  if (impl->final_output_shardings) {
    cml_allocator_free(a, impl->final_output_shardings,
                       impl->final_output_count * sizeof *impl->final_output_shardings);
  }
  impl->meshes = NULL;
  impl->param_shardings = impl->output_shardings = NULL;
  impl->final_param_shardings = impl->final_output_shardings = NULL;
  impl->mesh_count = impl->param_sharding_capacity = impl->output_sharding_count = 0;
  impl->final_param_count = impl->final_output_count = 0;
}

// The mesh a replicated default refers to: the first mesh with the most devices.
static const cml_mesh_t* cml_default_mesh(const cml__module_impl_t* impl) {
  const cml_mesh_t* best = NULL;
  for (uint32_t i = 0; i < impl->mesh_count; ++i) {
    if (!best || impl->meshes[i]->device_count > best->device_count) best = impl->meshes[i];
  }
  return best;
}

// Copies |count| given specs (|given|, |given_count| of them) into a new array of |count|, with
// replicated specs on the default mesh where none was given.
static cml_sharding_t* cml_fill_shardings(cml__module_impl_t* impl, const cml_sharding_t* given,
                                          uint32_t given_count, uint32_t count) {
  cml_sharding_t* out =
      (cml_sharding_t*)cml_allocator_malloc(impl->allocator, (count ? count : 1) * sizeof *out, 16);
  if (!out) return NULL;
  const cml_mesh_t* mesh = cml_default_mesh(impl);
  for (uint32_t i = 0; i < count; ++i) {
    if (i < given_count && given[i].mesh) {
      out[i] = given[i];
    } else {
      cml_sharding_replicated(mesh, &out[i]);
    }
  }
  return out;
}

cml_status_t cml__module_impl_finalize_distribution(cml__module_impl_t* impl) {
  cml_module_t* m = &impl->module;
  if (!impl->device_assignment) {
    impl->num_devices = impl->num_devices > 0 ? impl->num_devices : 1;
    impl->device_assignment = (int32_t*)cml__arena_alloc(
        &impl->arena, (size_t)impl->num_devices * sizeof *impl->device_assignment, 16);
    if (!impl->device_assignment) {
      return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "compile: out of memory");
    }
    for (int32_t k = 0; k < impl->num_devices; ++k) impl->device_assignment[k] = k;
  }
  m->distribution = impl->distribution;
  m->num_devices = impl->num_devices > 0 ? impl->num_devices : 1;
  m->device_assignment = impl->device_assignment;
  m->mesh_count = impl->mesh_count;
  m->meshes = (const cml_mesh_t* const*)impl->meshes;
  m->param_shardings = NULL;
  m->output_shardings = NULL;
  if (impl->distribution != CML_DISTRIBUTION_AUTO_SHARDING) return CML_OK;
  const cml_function_t* main_fn = impl->functions[0];
  uint32_t params = main_fn->params.count;
  uint32_t outputs = main_fn->returned ? main_fn->outputs.count : 0;
  if (!impl->final_param_shardings) {
    impl->final_param_shardings =
        cml_fill_shardings(impl, impl->param_shardings, impl->param_sharding_count, params);
    impl->final_param_count = params ? params : 1;
  }
  if (!impl->final_output_shardings) {
    impl->final_output_shardings =
        cml_fill_shardings(impl, impl->output_shardings, impl->output_sharding_count, outputs);
    impl->final_output_count = outputs ? outputs : 1;
  }
  if (!impl->final_param_shardings || !impl->final_output_shardings) {
    return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "compile: out of memory");
  }
  m->param_shardings = impl->final_param_shardings;
  m->output_shardings = impl->final_output_shardings;
  return CML_OK;
}

//===--- distributed builders ---===//

// The checks every strategy call shares: a usable builder, no strategy chosen yet, no op yet.
static cml_status_t cml_distribution_precheck(cml_builder_t* b, const char* what) {
  if (!b) return INVALID("%s: NULL builder", what);
  if (b->compiled) {
    return cml_status_make(CML_STATUS_FAILED_PRECONDITION, "%s: the builder was already compiled",
                           what);
  }
  cml__module_impl_t* impl = b->impl;
  if (impl->distribution != CML_DISTRIBUTION_NONE) {
    return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                           "%s: the builder already runs %s over %d devices (choose the strategy "
                           "once)",
                           what, cml_distribution_name(impl->distribution), (int)impl->num_devices);
  }
  if (impl->node_count > 0) {
    return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                           "%s: the builder already has %u ops or parameters (choose the strategy "
                           "before the first one)",
                           what, impl->node_count);
  }
  return CML_OK;
}

// "None", "None, SPMD", ... : the strategies a backend runs.
static const char* cml_distributions_text(uint32_t bits, char* buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (int d = 0; d < CML_DISTRIBUTION_COUNT; ++d) {
    if (!(bits & (1u << d))) continue;
    int n = snprintf(buf + used, size - used, "%s%s", used ? ", " : "",
                     cml_distribution_name((cml_distribution_t)d));
    if (n > 0 && used + (size_t)n < size) used += (size_t)n;
  }
  if (used == 0) snprintf(buf, size, "none");
  return buf;
}

// The backend checks: the strategy's capability bit and the device count.
static cml_status_t cml_distribution_backend_check(cml_builder_t* b, const char* what,
                                                   cml_distribution_t distribution,
                                                   int64_t num_devices) {
  const cml_backend_t* backend = b->backend;
  const cml_capabilities_t* caps = cml_backend_capabilities(backend);
  uint32_t bits = caps ? caps->distributions : 0;
  if (!(bits & (1u << distribution))) {
    char text[96];
    return cml_status_make(CML_STATUS_UNIMPLEMENTED,
                           "%s: backend \"%s\" does not run %s modules (its distribution "
                           "strategies: %s)",
                           what, cml_backend_name(backend), cml_distribution_name(distribution),
                           cml_distributions_text(bits, text, sizeof text));
  }
  int devices = cml_backend_device_count(backend);
  if (num_devices > devices) {
    return INVALID("%s: %s over %lld devices, but backend \"%s\" has %d device%s", what,
                   cml_distribution_name(distribution), (long long)num_devices,
                   cml_backend_name(backend), devices, devices == 1 ? "" : "s");
  }
  return CML_OK;
}

cml_status_t cml_builder_spmd(cml_builder_t* builder, int num_devices) {
  static const char what[] = "cml_builder_spmd";
  CML_RETURN_IF_ERROR(cml_distribution_precheck(builder, what));
  if (num_devices < 1) return INVALID("%s: %d devices (need at least 1)", what, num_devices);
  CML_RETURN_IF_ERROR(
      cml_distribution_backend_check(builder, what, CML_DISTRIBUTION_SPMD, num_devices));
  cml__module_impl_t* impl = builder->impl;
  impl->distribution = CML_DISTRIBUTION_SPMD;
  impl->num_devices = num_devices;
  return CML_OK;
}

cml_status_t cml_builder_auto_sharding(cml_builder_t* builder, const cml_mesh_t* const* meshes,
                                       size_t mesh_count) {
  static const char what[] = "cml_builder_auto_sharding";
  CML_RETURN_IF_ERROR(cml_distribution_precheck(builder, what));
  if (mesh_count < 1 || !meshes) {
    return INVALID("%s: no meshes (AutoSharding needs at least one)", what);
  }
  if (mesh_count > 1024) return INVALID("%s: %zu meshes (at most 1024)", what, mesh_count);
  int64_t devices = 1;
  size_t devices_from = 0;
  for (size_t i = 0; i < mesh_count; ++i) {
    const cml_mesh_t* m = meshes[i];
    if (!m) return INVALID("%s: mesh #%zu is NULL", what, i);
    for (size_t j = 0; j < i; ++j) {
      if (strcmp(meshes[j]->name, m->name) == 0) {
        return INVALID("%s: meshes #%zu and #%zu are both named \"%s\" (names must be unique)",
                       what, j, i, m->name);
      }
    }
    if (m->device_count <= 1) continue;
    if (devices > 1 && m->device_count != devices) {
      char a[256], c[256];
      cml__mesh_format(meshes[devices_from], a, sizeof a);
      cml__mesh_format(m, c, sizeof c);
      return INVALID(
          "%s: mesh %s has %lld devices but mesh %s has %lld: every mesh with more "
          "than one device must have the same device count",
          what, a, (long long)devices, c, (long long)m->device_count);
    }
    devices = m->device_count;
    devices_from = i;
  }
  CML_RETURN_IF_ERROR(
      cml_distribution_backend_check(builder, what, CML_DISTRIBUTION_AUTO_SHARDING, devices));
  cml__module_impl_t* impl = builder->impl;
  cml_mesh_t** copies =
      (cml_mesh_t**)cml_allocator_malloc(impl->allocator, mesh_count * sizeof *copies, 16);
  if (!copies) return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "%s: out of memory", what);
  for (size_t i = 0; i < mesh_count; ++i) {
    copies[i] = cml__mesh_clone(meshes[i]);
    if (!copies[i]) {
      for (size_t j = 0; j < i; ++j) cml_mesh_destroy(copies[j]);
      cml_allocator_free(impl->allocator, copies, mesh_count * sizeof *copies);
      return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "%s: out of memory", what);
    }
  }
  impl->meshes = copies;
  impl->mesh_count = (uint32_t)mesh_count;
  impl->distribution = CML_DISTRIBUTION_AUTO_SHARDING;
  impl->num_devices = (int32_t)devices;
  return CML_OK;
}

cml_status_t cml_builder_device_assignment(cml_builder_t* builder, const int32_t* devices,
                                           size_t count) {
  static const char what[] = "cml_builder_device_assignment";
  if (!builder) return INVALID("%s: NULL builder", what);
  if (builder->compiled) {
    return cml_status_make(CML_STATUS_FAILED_PRECONDITION, "%s: the builder was already compiled",
                           what);
  }
  cml__module_impl_t* impl = builder->impl;
  if (impl->distribution == CML_DISTRIBUTION_NONE) {
    return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                           "%s: the builder runs on one device (call cml_builder_spmd or "
                           "cml_builder_auto_sharding first; a single-device module runs on the "
                           "device given to cml_executable_execute)",
                           what);
  }
  if (impl->device_assignment_set) {
    return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                           "%s: the device assignment was already set", what);
  }
  int32_t n = impl->num_devices;
  if (count != (size_t)n || !devices) {
    return INVALID("%s: the module runs on %d device slots, got %zu devices%s", what, (int)n, count,
                   devices ? "" : " (NULL)");
  }
  int backend_devices = cml_backend_device_count(builder->backend);
  for (int32_t k = 0; k < n; ++k) {
    if (devices[k] < 0 || devices[k] >= backend_devices) {
      return INVALID("%s: device %d of slot %d is out of range: backend \"%s\" has devices 0..%d",
                     what, (int)devices[k], (int)k, cml_backend_name(builder->backend),
                     backend_devices - 1);
    }
    for (int32_t j = 0; j < k; ++j) {
      if (devices[j] == devices[k]) {
        return INVALID("%s: device %d is assigned to slots %d and %d (each device runs one slot)",
                       what, (int)devices[k], (int)j, (int)k);
      }
    }
  }
  int32_t* copy = (int32_t*)cml__arena_alloc(&impl->arena, (size_t)n * sizeof *copy, 16);
  if (!copy) return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "%s: out of memory", what);
  memcpy(copy, devices, (size_t)n * sizeof *copy);
  impl->device_assignment = copy;
  impl->device_assignment_set = true;
  return CML_OK;
}

cml_distribution_t cml_builder_distribution(const cml_builder_t* builder) {
  return builder ? builder->impl->distribution : CML_DISTRIBUTION_NONE;
}

int cml_builder_num_devices(const cml_builder_t* builder) {
  return (builder && builder->impl->num_devices > 0) ? builder->impl->num_devices : 1;
}

//===--- sharded parameters and results ---===//

// Resolves |sharding| against the builder's meshes: validated, its mesh one of the module's (by
// name, with the same axes), and dividing |shape|. Writes the spec pointing at the module's copy
// of the mesh. |what| prefixes messages.
static cml_status_t cml_resolve_sharding(const cml__module_impl_t* impl, const char* what,
                                         const cml_sharding_t* sharding, const cml_shape_t* shape,
                                         cml_sharding_t* out) {
  memset(out, 0, sizeof *out);
  if (!sharding || !sharding->mesh) return CML_OK;
  char spec[512];
  if (impl->distribution != CML_DISTRIBUTION_AUTO_SHARDING) {
    cml_sharding_format(sharding, spec, sizeof spec);
    return INVALID(
        "%s: %s given, but shardings need an AutoSharding module "
        "(cml_builder_auto_sharding; this one is %s)",
        what, spec, cml_distribution_name(impl->distribution));
  }
  cml_status_t st = cml_sharding_validate(sharding);
  if (st != CML_OK) return cml_status_annotate(st, "%s", what);
  const cml_mesh_t* mine = NULL;
  for (uint32_t i = 0; i < impl->mesh_count && !mine; ++i) {
    if (strcmp(impl->meshes[i]->name, sharding->mesh->name) == 0) mine = impl->meshes[i];
  }
  if (!mine) {
    cml_sharding_format(sharding, spec, sizeof spec);
    char names[256] = "";
    size_t used = 0;
    for (uint32_t i = 0; i < impl->mesh_count; ++i) {
      int n = snprintf(names + used, sizeof names - used, "%s\"%s\"", i ? ", " : "",
                       impl->meshes[i]->name);
      if (n > 0 && used + (size_t)n < sizeof names) used += (size_t)n;
    }
    return INVALID("%s: %s uses mesh \"%s\", which is not one of the builder's meshes (%s)", what,
                   spec, sharding->mesh->name, names);
  }
  bool same_axes = mine->axis_count == sharding->mesh->axis_count;
  for (size_t i = 0; same_axes && i < mine->axis_count; ++i) {
    same_axes = strcmp(mine->axis_names[i], sharding->mesh->axis_names[i]) == 0 &&
                mine->axis_sizes[i] == sharding->mesh->axis_sizes[i];
  }
  if (!same_axes) {
    char a[256], c[256];
    cml__mesh_format(sharding->mesh, a, sizeof a);
    cml__mesh_format(mine, c, sizeof c);
    return INVALID("%s: the spec's mesh %s differs from the builder's mesh %s of that name", what,
                   a, c);
  }
  cml_sharding_t s = *sharding;
  s.mesh = mine;
  cml_shape_t shard;
  st = cml_sharding_shard_shape(&s, shape, &shard);
  if (st != CML_OK) return cml_status_annotate(st, "%s", what);
  *out = s;
  return CML_OK;
}

cml_value_t cml_parameter_sharded(cml_function_t* main_function, const char* name,
                                  const cml_shape_t* shape, const cml_sharding_t* sharding) {
  cml_function_t* f = main_function;
  if (!sharding || !sharding->mesh) return cml_parameter(f, name, shape);
  if (!cml__op_begin(f, CML_OP_PARAMETER)) return CML_VALUE_INVALID;
  cml_builder_t* b = f->builder;
  cml__module_impl_t* impl = f->impl;
  char what[200];
  snprintf(what, sizeof what, "Parameter \"%s\"", name && *name ? name : "(auto)");
  if (f->index != 0) {
    return cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
                     "%s: a sharding is only for parameters of main (this is function \"%s\")",
                     what, f->name);
  }
  cml_shape_t s;
  cml_status_t st = cml__infer_user_shape(CML_OP_PARAMETER, shape, true, &s);
  if (st != CML_OK) return cml__fail_status(b, st);
  if (cml_shape_is_dynamic(&s)) {
    char text[CML__SHAPE_TEXT];
    return cml__fail(b, CML_STATUS_UNIMPLEMENTED,
                     "%s: %s has a dynamic axis, and a sharded parameter needs a static shape "
                     "(docs/dynamic_shapes.md)",
                     what, cml__shape_text(&s, text));
  }
  cml_sharding_t resolved;
  st = cml_resolve_sharding(impl, what, sharding, &s, &resolved);
  if (st != CML_OK) return cml__fail_status(b, st);
  uint32_t index = f->params.count;
  if (!cml__grow(b->allocator, (void**)&impl->param_shardings, &impl->param_sharding_capacity,
                 index + 1, sizeof *impl->param_shardings)) {
    return cml__fail(b, CML_STATUS_RESOURCE_EXHAUSTED, "%s: out of memory", what);
  }
  cml_value_t v = cml_parameter(f, name, shape);
  if (v == CML_VALUE_INVALID) return v;
  for (uint32_t i = impl->param_sharding_count; i < index; ++i) {
    memset(&impl->param_shardings[i], 0, sizeof impl->param_shardings[i]);
  }
  impl->param_shardings[index] = resolved;
  if (index + 1 > impl->param_sharding_count) impl->param_sharding_count = index + 1;
  return v;
}

cml_status_t cml_function_return_sharded(cml_function_t* main_function, const cml_value_t* outputs,
                                         size_t count, const cml_sharding_t* shardings) {
  cml_function_t* f = main_function;
  bool any = false;
  for (size_t i = 0; shardings && i < count; ++i) any = any || shardings[i].mesh != NULL;
  if (!any || !f || !f->builder) return cml_function_return(f, outputs, count);
  cml_builder_t* b = f->builder;
  cml__module_impl_t* impl = f->impl;
  if (b->compiled || f->returned || b->error != CML_OK || count == 0 || !outputs) {
    return cml_function_return(f, outputs, count);  // reports the misuse
  }
  cml_status_t st = CML_OK;
  if (f->index != 0) {
    st = INVALID("Return: shardings are only for the outputs of main (this is function \"%s\")",
                 f->name);
  }
  cml_sharding_t* resolved = NULL;
  size_t bytes = count * sizeof *resolved;
  if (st == CML_OK) {
    resolved = (cml_sharding_t*)cml_allocator_malloc(impl->allocator, bytes, 16);
    if (!resolved) st = cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "Return: out of memory");
  }
  for (size_t i = 0; st == CML_OK && i < count; ++i) {
    cml_shape_t shape;
    if (!cml_builder_value_shape(b, outputs[i], &shape)) {
      // An invalid value: cml_function_return names it.
      cml_allocator_free(impl->allocator, resolved, bytes);
      return cml_function_return(f, outputs, count);
    }
    char what[64];
    snprintf(what, sizeof what, "Return: output #%zu", i);
    st = cml_resolve_sharding(impl, what, &shardings[i], &shape, &resolved[i]);
  }
  if (st != CML_OK) {
    if (resolved) cml_allocator_free(impl->allocator, resolved, bytes);
    cml__fail_status(b, st);
    return cml_status_clone(b->error);
  }
  st = cml_function_return(f, outputs, count);
  if (st != CML_OK) {
    cml_allocator_free(impl->allocator, resolved, bytes);
    return st;
  }
  impl->output_shardings = resolved;
  impl->output_sharding_count = (uint32_t)count;
  return CML_OK;
}

//===--- collective ops ---===//

// Records |st| when it is an error; returns true when it is OK.
static bool cml_ok(cml_function_t* f, cml_status_t st) {
  if (st == CML_OK) return true;
  cml__fail_status(f->builder, st);
  return false;
}

static void cml_fill_invalid(cml_value_t* out, size_t count) {
  for (size_t i = 0; out && i < count; ++i) out[i] = CML_VALUE_INVALID;
}

// Starts collective |op|: the usual op checks, then the strategy (SPMD only).
static bool cml_collective_begin(cml_function_t* f, cml_op_t op) {
  if (!cml__op_begin(f, op)) return false;
  const cml__module_impl_t* impl = f->impl;
  if (impl->distribution == CML_DISTRIBUTION_SPMD) return true;
  if (impl->distribution == CML_DISTRIBUTION_AUTO_SHARDING) {
    cml__fail(f->builder, CML_STATUS_INVALID_ARGUMENT,
              "%s: collective ops are not allowed in an AutoSharding module (the partitioner "
              "inserts them; write them by hand in an SPMD module, cml_builder_spmd)",
              cml_op_name(op));
  } else {
    cml__fail(f->builder, CML_STATUS_INVALID_ARGUMENT,
              "%s: collective op in a module without SPMD (call cml_builder_spmd before the first "
              "op; this module runs on one device)",
              cml_op_name(op));
  }
  return false;
}

// Validates |groups| for |op| and stores the normalized ids (module-owned) in |attrs|.
static bool cml_collective_groups(cml_function_t* f, cml_op_t op,
                                  const cml_replica_groups_t* groups, cml_ir_attrs_t* attrs) {
  cml__module_impl_t* impl = f->impl;
  int32_t n = impl->num_devices;
  int32_t* ids = (int32_t*)cml__arena_alloc(&impl->arena, (size_t)n * sizeof *ids, 16);
  if (!ids) {
    cml__fail(f->builder, CML_STATUS_RESOURCE_EXHAUSTED, "%s: out of memory", cml_op_name(op));
    return false;
  }
  int32_t count = 0, size = 0;
  if (!cml_ok(f, cml__infer_replica_groups(op, groups, n, ids, &count, &size))) return false;
  attrs->collective.groups = ids;
  attrs->collective.group_count = count;
  attrs->collective.group_size = size;
  return true;
}

// The prologue shared by the one-operand collectives: begins |op|, reads operand |x| into |in|
// and |xs|, clears |attrs| and stores the normalized |groups| in it.
static bool cml_collective_unary(cml_function_t* f, cml_op_t op, cml_value_t x,
                                 const cml_replica_groups_t* groups, uint32_t* in, cml_shape_t* xs,
                                 cml_ir_attrs_t* attrs) {
  memset(attrs, 0, sizeof *attrs);
  return cml_collective_begin(f, op) && cml__op_input(f, op, x, 0, in, xs) &&
         cml_collective_groups(f, op, groups, attrs);
}

bool cml_op_all_reduce(cml_function_t* f, const cml_value_t* operands, size_t count,
                       cml_reduce_type_t type, const cml_replica_groups_t* groups,
                       cml_value_t* out_results) {
  // |out_results| may be |operands| (in place): it is written only after the operands are read.
  const cml_op_t op = CML_OP_ALL_REDUCE;
  if (!cml_collective_begin(f, op)) {
    cml_fill_invalid(out_results, count);
    return false;
  }
  cml_builder_t* b = f->builder;
  if (count == 0 || !operands || !out_results) {
    cml__fail(b, CML_STATUS_INVALID_ARGUMENT, "AllReduce: %s",
              count == 0 ? "no operands" : "NULL operands or out_results");
    cml_fill_invalid(out_results, count);
    return false;
  }
  if (count > 4096) {
    cml__fail(b, CML_STATUS_INVALID_ARGUMENT, "AllReduce: %zu operands (at most 4096)", count);
    cml_fill_invalid(out_results, count);
    return false;
  }
  size_t in_bytes = count * sizeof(uint32_t), shape_bytes = count * sizeof(cml_shape_t);
  uint32_t* in = (uint32_t*)cml__temp_alloc(b, in_bytes);
  cml_shape_t* shapes = (cml_shape_t*)cml__temp_alloc(b, shape_bytes);
  cml_shape_t* outs = (cml_shape_t*)cml__temp_alloc(b, shape_bytes);
  bool ok = in && shapes && outs;
  for (size_t i = 0; ok && i < count; ++i) {
    ok = cml__op_input(f, op, operands[i], i, &in[i], &shapes[i]);
  }
  cml_ir_attrs_t attrs;
  memset(&attrs, 0, sizeof attrs);
  ok = ok && cml_ok(f, cml__infer_all_reduce(shapes, count, type, outs));
  ok = ok && cml_collective_groups(f, op, groups, &attrs);
  cml_value_t first = CML_VALUE_INVALID;
  if (ok) {
    attrs.reduce_type = type;
    first = cml__op_add_node(f, op, in, (uint32_t)count, outs, (uint32_t)count, &attrs);
  }
  cml__temp_free(b, in, in_bytes);
  cml__temp_free(b, shapes, shape_bytes);
  cml__temp_free(b, outs, shape_bytes);
  if (first == CML_VALUE_INVALID) {
    cml_fill_invalid(out_results, count);
    return false;
  }
  for (size_t i = 0; i < count; ++i) out_results[i] = first + (cml_value_t)i;
  return true;
}

cml_value_t cml_op_all_gather(cml_function_t* f, cml_value_t x, int64_t axis,
                              const cml_replica_groups_t* groups) {
  const cml_op_t op = CML_OP_ALL_GATHER;
  uint32_t in;
  cml_shape_t xs, out;
  cml_ir_attrs_t attrs;
  if (!cml_collective_unary(f, op, x, groups, &in, &xs, &attrs)) return CML_VALUE_INVALID;
  if (!cml_ok(f, cml__infer_all_gather(&xs, axis, attrs.collective.group_size, &attrs, &out))) {
    return CML_VALUE_INVALID;
  }
  return cml__op_add_node(f, op, &in, 1, &out, 1, &attrs);
}

cml_value_t cml_op_reduce_scatter(cml_function_t* f, cml_value_t x, cml_reduce_type_t type,
                                  int64_t axis, const cml_replica_groups_t* groups) {
  const cml_op_t op = CML_OP_REDUCE_SCATTER;
  uint32_t in;
  cml_shape_t xs, out;
  cml_ir_attrs_t attrs;
  if (!cml_collective_unary(f, op, x, groups, &in, &xs, &attrs)) return CML_VALUE_INVALID;
  if (!cml_ok(f, cml__infer_reduce_scatter(&xs, type, axis, attrs.collective.group_size, &attrs,
                                           &out))) {
    return CML_VALUE_INVALID;
  }
  return cml__op_add_node(f, op, &in, 1, &out, 1, &attrs);
}

cml_value_t cml_op_all_to_all(cml_function_t* f, cml_value_t x, int64_t split_axis,
                              int64_t concat_axis, const cml_replica_groups_t* groups) {
  const cml_op_t op = CML_OP_ALL_TO_ALL;
  uint32_t in;
  cml_shape_t xs, out;
  cml_ir_attrs_t attrs;
  if (!cml_collective_unary(f, op, x, groups, &in, &xs, &attrs)) return CML_VALUE_INVALID;
  if (!cml_ok(f, cml__infer_all_to_all(&xs, split_axis, concat_axis, attrs.collective.group_size,
                                       &attrs, &out))) {
    return CML_VALUE_INVALID;
  }
  return cml__op_add_node(f, op, &in, 1, &out, 1, &attrs);
}

cml_value_t cml_op_collective_permute(cml_function_t* f, cml_value_t x, const int32_t* pairs,
                                      size_t pair_count) {
  const cml_op_t op = CML_OP_COLLECTIVE_PERMUTE;
  if (!cml_collective_begin(f, op)) return CML_VALUE_INVALID;
  cml__module_impl_t* impl = f->impl;
  uint32_t in;
  cml_shape_t xs, out;
  cml_ir_attrs_t attrs;
  memset(&attrs, 0, sizeof attrs);
  if (!cml__op_input(f, op, x, 0, &in, &xs)) return CML_VALUE_INVALID;
  if (!cml_ok(f, cml__infer_collective_permute(&xs, pairs, pair_count, impl->num_devices, &out))) {
    return CML_VALUE_INVALID;
  }
  if (pair_count > 0) {
    int32_t* copy = (int32_t*)cml__arena_alloc(&impl->arena, pair_count * 2 * sizeof *copy, 16);
    if (!copy) {
      return cml__fail(f->builder, CML_STATUS_RESOURCE_EXHAUSTED,
                       "CollectivePermute: out of "
                       "memory");
    }
    memcpy(copy, pairs, pair_count * 2 * sizeof *copy);
    attrs.collective.pairs = copy;
  }
  attrs.collective.pair_count = (int32_t)pair_count;
  return cml__op_add_node(f, op, &in, 1, &out, 1, &attrs);
}

cml_value_t cml_op_collective_broadcast(cml_function_t* f, cml_value_t x,
                                        const cml_replica_groups_t* groups) {
  const cml_op_t op = CML_OP_COLLECTIVE_BROADCAST;
  uint32_t in;
  cml_shape_t xs, out;
  cml_ir_attrs_t attrs;
  if (!cml_collective_unary(f, op, x, groups, &in, &xs, &attrs)) return CML_VALUE_INVALID;
  if (!cml_ok(f, cml__infer_collective_broadcast(&xs, &out))) return CML_VALUE_INVALID;
  return cml__op_add_node(f, op, &in, 1, &out, 1, &attrs);
}

static cml_value_t cml_device_id(cml_function_t* f, cml_op_t op) {
  if (!cml_collective_begin(f, op)) return CML_VALUE_INVALID;
  cml_shape_t out = cml_shape_scalar(CML_DTYPE_U32);
  return cml__op_add_node(f, op, NULL, 0, &out, 1, NULL);
}

cml_value_t cml_op_replica_id(cml_function_t* f) { return cml_device_id(f, CML_OP_REPLICA_ID); }

cml_value_t cml_op_partition_id(cml_function_t* f) { return cml_device_id(f, CML_OP_PARTITION_ID); }
