// SPDX-License-Identifier: Apache-2.0
// src/backends/c/mpi_backend.c: the c backend's multi-process mode (mpi_internal.h): the
// `distributed` option, the process's place in the global device space, the checks that keep
// buffers and executions on local devices, and the agreement of configurations and modules
// across processes.
#include <stdio.h>
#include <string.h>

#include "backends/c/mpi_internal.h"
#include "distributed/distributed_internal.h"
#include "distributed/mpi_comm.h"

cml_status_t cmlc_mpi_setup(const char* distributed, cmlc_options_t* options) {
  options->process_index = 0;
  options->process_count = 1;
  if (!distributed || !*distributed || strcmp(distributed, "none") == 0) return CML_OK;
  if (strcmp(distributed, "mpi") != 0) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "c backend: distributed=%s is unknown; valid: none, mpi", distributed);
  }
  if (!cml__mpi_built()) {
    return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                           "c backend: distributed=mpi needs MPI, and this cml was built without "
                           "it: install an MPI (e.g. apt-get install libopenmpi-dev openmpi-bin) "
                           "and rebuild cml with -DCML_WITH_MPI=ON");
  }
  cml_status_t st = cml__mpi_init();
  if (st != CML_OK) return cml_status_annotate(st, "c backend: distributed=mpi");
  options->process_index = cml__mpi_rank();
  options->process_count = cml__mpi_size();
  if ((int64_t)options->devices * options->process_count > INT32_MAX / 2) {
    return cml_status_make(CML_STATUS_OUT_OF_RANGE,
                           "c backend: distributed=mpi: %d devices x %d processes is too many",
                           options->devices, options->process_count);
  }
  // What every process must share (threads and the ISA may differ between machines).
  char text[128];
  snprintf(text, sizeof text, "devices=%d,reference=%s,fusion=%s", options->devices,
           options->reference ? "true" : "false", options->fusion ? "true" : "false");
  st = cml__mpi_agree(text, strlen(text), "c:distributed=mpi configuration");
  if (st != CML_OK) return cml_status_annotate(st, "c backend");
  return CML_OK;
}

void cmlc_mpi_process_info(const cml_backend_t* backend, cml_process_info_t* out) {
  const cmlc_backend_t* b = (const cmlc_backend_t*)backend;
  const int count = b->options.process_count > 1 ? b->options.process_count : 1;
  out->process_index = count > 1 ? b->options.process_index : 0;
  out->process_count = count;
  out->first_local_device = out->process_index * b->options.devices;
  out->local_device_count = b->options.devices;
}

int cmlc_mpi_device_process(const cmlc_options_t* options, int device) {
  if (options->process_count <= 1 || options->devices < 1 || device < 0) return 0;
  return device / options->devices;
}

cml_status_t cmlc_mpi_check_local(const cmlc_backend_t* backend, int device, const char* what) {
  const cmlc_options_t* o = &backend->options;
  if (o->process_count <= 1) return CML_OK;
  const int owner = cmlc_mpi_device_process(o, device);
  if (owner == o->process_index) return CML_OK;
  return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                         "c backend: %s: device %d belongs to process %d, not to this process "
                         "(%d of %d, devices %d..%d): buffers and executions live on local "
                         "devices only",
                         what, device, owner, o->process_index, o->process_count,
                         o->process_index * o->devices, (o->process_index + 1) * o->devices - 1);
}

//===--- module fingerprints ---===//

static uint64_t cmlc_mpi_mix(uint64_t h, const void* data, size_t bytes) {
  const uint8_t* p = (const uint8_t*)data;
  for (size_t i = 0; i < bytes; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;  // FNV-1a
  }
  return h;
}

#define CMLC_MPI_MIX(h, v) ((h) = cmlc_mpi_mix((h), &(v), sizeof(v)))

#define CMLC_MPI_MIX_N(h, array, n) \
  ((n) > 0 ? ((h) = cmlc_mpi_mix((h), (array), sizeof((array)[0]) * (size_t)(n))) : (h))

// Every attribute an op reads, field by field (a struct's padding bytes are not defined, so the
// structs are never hashed whole).
static uint64_t cmlc_mpi_attrs_hash(uint64_t h, const cml_ir_node_t* n) {
  const cml_ir_attrs_t* a = n->attrs;
  CMLC_MPI_MIX(h, a->axis);
  CMLC_MPI_MIX(h, a->dtype);
  CMLC_MPI_MIX(h, a->flag);
  CMLC_MPI_MIX(h, a->epsilon);
  CMLC_MPI_MIX(h, a->axis_count);
  CMLC_MPI_MIX_N(h, a->axes,
                 a->axis_count > 0 && a->axis_count <= CML_MAX_RANK ? a->axis_count : 0);
  h = cmlc_mpi_mix(h, a->starts, sizeof a->starts);
  h = cmlc_mpi_mix(h, a->limits, sizeof a->limits);
  h = cmlc_mpi_mix(h, a->strides, sizeof a->strides);
  for (int i = 0; i < CML_MAX_RANK; ++i) {
    CMLC_MPI_MIX(h, a->pads[i].low);
    CMLC_MPI_MIX(h, a->pads[i].high);
    CMLC_MPI_MIX(h, a->pads[i].interior);
  }
  CMLC_MPI_MIX(h, a->reduce_type);
  CMLC_MPI_MIX(h, a->fft_type);
  h = cmlc_mpi_mix(h, a->functions, sizeof a->functions);
  const cml_ir_fused_attrs_t* f = &a->fused;
  CMLC_MPI_MIX(h, f->activation);
  CMLC_MPI_MIX(h, f->layout);
  CMLC_MPI_MIX(h, f->exact);
  CMLC_MPI_MIX(h, f->causal);
  CMLC_MPI_MIX(h, f->optional_inputs);
  CMLC_MPI_MIX(h, f->epsilon);
  CMLC_MPI_MIX(h, f->scale);
  CMLC_MPI_MIX(h, f->query_dim);
  CMLC_MPI_MIX(h, f->kv_dim);
  CMLC_MPI_MIX(h, f->quant_scheme);
  CMLC_MPI_MIX(h, f->quant_ggml_type);
  CMLC_MPI_MIX(h, f->quant_block_size);
  switch (n->op) {
    case CML_OP_GATHER: {
      const cml_gather_dims_t* g = &a->u.gather;
      CMLC_MPI_MIX(h, g->index_vector_axis);
      CMLC_MPI_MIX(h, g->indices_are_sorted);
      h = cmlc_mpi_mix(h, g->offset_output_axes, sizeof g->offset_output_axes);
      h = cmlc_mpi_mix(h, g->collapsed_slice_axes, sizeof g->collapsed_slice_axes);
      h = cmlc_mpi_mix(h, g->start_index_map, sizeof g->start_index_map);
      h = cmlc_mpi_mix(h, g->slice_sizes, sizeof g->slice_sizes);
      CMLC_MPI_MIX(h, g->offset_output_axis_count);
      CMLC_MPI_MIX(h, g->collapsed_slice_axis_count);
      CMLC_MPI_MIX(h, g->start_index_map_count);
      CMLC_MPI_MIX(h, g->slice_size_count);
      break;
    }
    case CML_OP_SCATTER_MAX:
    case CML_OP_SCATTER_MIN:
    case CML_OP_SCATTER_SUM: {
      const cml_scatter_dims_t* d = &a->u.scatter;
      CMLC_MPI_MIX(h, d->index_vector_axis);
      CMLC_MPI_MIX(h, d->update_window_axis_count);
      CMLC_MPI_MIX(h, d->inserted_window_axis_count);
      CMLC_MPI_MIX(h, d->scatter_axes_to_operand_axes_count);
      h = cmlc_mpi_mix(h, d->update_window_axes, sizeof d->update_window_axes);
      h = cmlc_mpi_mix(h, d->inserted_window_axes, sizeof d->inserted_window_axes);
      h = cmlc_mpi_mix(h, d->scatter_axes_to_operand_axes, sizeof d->scatter_axes_to_operand_axes);
      CMLC_MPI_MIX(h, d->indices_are_sorted);
      CMLC_MPI_MIX(h, d->unique_indices);
      break;
    }
    case CML_OP_DOT:
    case CML_OP_DOT_GENERAL: {
      const cml_dot_config_t* d = &a->u.dot;
      CMLC_MPI_MIX(h, d->lhs_contracting_count);
      CMLC_MPI_MIX(h, d->lhs_batch_count);
      CMLC_MPI_MIX(h, d->rhs_contracting_count);
      CMLC_MPI_MIX(h, d->rhs_batch_count);
      h = cmlc_mpi_mix(h, d->lhs_contracting_axes, sizeof d->lhs_contracting_axes);
      h = cmlc_mpi_mix(h, d->lhs_batch_axes, sizeof d->lhs_batch_axes);
      h = cmlc_mpi_mix(h, d->rhs_contracting_axes, sizeof d->rhs_contracting_axes);
      h = cmlc_mpi_mix(h, d->rhs_batch_axes, sizeof d->rhs_batch_axes);
      CMLC_MPI_MIX(h, d->accumulator_dtype);
      CMLC_MPI_MIX(h, d->output_dtype);
      break;
    }
    case CML_OP_CONV_GENERAL: {
      const cml_conv_config_t* c = &a->u.conv;
      CMLC_MPI_MIX(h, c->spatial_count);
      const int64_t scalars[] = {c->input_batch_axis,          c->input_channel_axis,
                                 c->kernel_input_channel_axis, c->kernel_output_channel_axis,
                                 c->output_batch_axis,         c->output_channel_axis,
                                 c->channel_group_count,       c->batch_group_count};
      h = cmlc_mpi_mix(h, scalars, sizeof scalars);
      h = cmlc_mpi_mix(h, c->input_spatial_axes, sizeof c->input_spatial_axes);
      h = cmlc_mpi_mix(h, c->kernel_spatial_axes, sizeof c->kernel_spatial_axes);
      h = cmlc_mpi_mix(h, c->output_spatial_axes, sizeof c->output_spatial_axes);
      h = cmlc_mpi_mix(h, c->strides, sizeof c->strides);
      h = cmlc_mpi_mix(h, c->padding_low, sizeof c->padding_low);
      h = cmlc_mpi_mix(h, c->padding_high, sizeof c->padding_high);
      h = cmlc_mpi_mix(h, c->input_dilations, sizeof c->input_dilations);
      h = cmlc_mpi_mix(h, c->kernel_dilations, sizeof c->kernel_dilations);
      CMLC_MPI_MIX(h, c->output_dtype);
      break;
    }
    default:
      break;
  }
  switch (cml_op_group(n->op)) {
    case CML_OPG_WINDOW: {
      const cml_window_config_t* w = &a->u.window;
      CMLC_MPI_MIX(h, w->rank);
      h = cmlc_mpi_mix(h, w->window_dims, sizeof w->window_dims);
      h = cmlc_mpi_mix(h, w->strides, sizeof w->strides);
      h = cmlc_mpi_mix(h, w->input_dilations, sizeof w->input_dilations);
      h = cmlc_mpi_mix(h, w->window_dilations, sizeof w->window_dilations);
      h = cmlc_mpi_mix(h, w->padding_low, sizeof w->padding_low);
      h = cmlc_mpi_mix(h, w->padding_high, sizeof w->padding_high);
      break;
    }
    default:
      break;
  }
  return h;
}

// A hash of what decides the program's behaviour: devices, ops, attributes, wiring, shapes,
// constants, functions, collective groups, meshes and shardings.
static uint64_t cmlc_mpi_module_hash(const cml_module_t* m) {
  uint64_t h = 0xcbf29ce484222325ull;
  CMLC_MPI_MIX(h, m->num_devices);
  CMLC_MPI_MIX(h, m->distribution);
  CMLC_MPI_MIX(h, m->node_count);
  CMLC_MPI_MIX(h, m->value_count);
  CMLC_MPI_MIX(h, m->function_count);
  if (m->device_assignment && m->num_devices > 0) {
    h = cmlc_mpi_mix(h, m->device_assignment, sizeof(int32_t) * (size_t)m->num_devices);
  }
  for (uint32_t i = 0; i < m->node_count; ++i) {
    const cml_ir_node_t* n = &m->nodes[i];
    CMLC_MPI_MIX(h, n->op);
    CMLC_MPI_MIX(h, n->function);
    CMLC_MPI_MIX(h, n->input_count);
    CMLC_MPI_MIX(h, n->output_count);
    CMLC_MPI_MIX(h, n->first_output);
    if (n->input_count) h = cmlc_mpi_mix(h, n->inputs, sizeof(uint32_t) * n->input_count);
    if (n->data && n->data_size) h = cmlc_mpi_mix(h, n->data, n->data_size);
    CMLC_MPI_MIX(h, n->index);
    h = cmlc_mpi_attrs_hash(h, n);
    const cml_ir_collective_attrs_t* c = &n->attrs->collective;
    if (cml_op_group(n->op) == CML_OPG_COLLECTIVE) {
      CMLC_MPI_MIX(h, n->attrs->reduce_type);
      CMLC_MPI_MIX(h, n->attrs->axis);
      CMLC_MPI_MIX(h, c->split_axis);
      CMLC_MPI_MIX(h, c->concat_axis);
      CMLC_MPI_MIX(h, c->group_count);
      CMLC_MPI_MIX(h, c->group_size);
      if (c->groups && c->group_count > 0 && c->group_size > 0) {
        h = cmlc_mpi_mix(h, c->groups,
                         sizeof(int32_t) * (size_t)c->group_count * (size_t)c->group_size);
      }
      CMLC_MPI_MIX(h, c->pair_count);
      if (c->pairs && c->pair_count > 0) {
        h = cmlc_mpi_mix(h, c->pairs, sizeof(int32_t) * 2 * (size_t)c->pair_count);
      }
    }
  }
  for (uint32_t i = 0; i < m->function_count; ++i) {
    const cml_ir_function_t* fn = &m->functions[i];
    CMLC_MPI_MIX(h, fn->parent);
    CMLC_MPI_MIX(h, fn->node_count);
    CMLC_MPI_MIX_N(h, fn->nodes, fn->node_count);
    CMLC_MPI_MIX(h, fn->param_count);
    CMLC_MPI_MIX_N(h, fn->params, fn->param_count);
    CMLC_MPI_MIX(h, fn->capture_count);
    CMLC_MPI_MIX_N(h, fn->captures_outer, fn->capture_count);
    CMLC_MPI_MIX_N(h, fn->captures_inner, fn->capture_count);
    CMLC_MPI_MIX(h, fn->output_count);
    CMLC_MPI_MIX_N(h, fn->outputs, fn->output_count);
  }
  // AutoSharding: the meshes and main's shardings, through their text forms (which name every
  // axis, size, device and split). Modules that differ only there partition differently.
  char text[4096];
  CMLC_MPI_MIX(h, m->mesh_count);
  for (uint32_t i = 0; i < m->mesh_count; ++i) {
    const size_t len = cml__mesh_format(m->meshes[i], text, sizeof text);
    h = cmlc_mpi_mix(h, text, len < sizeof text ? len : sizeof text - 1);
  }
  const cml_ir_function_t* main_fn = m->function_count ? &m->functions[0] : NULL;
  for (uint32_t i = 0; main_fn && m->param_shardings && i < main_fn->param_count; ++i) {
    const size_t len = cml_sharding_format(&m->param_shardings[i], text, sizeof text);
    h = cmlc_mpi_mix(h, text, len < sizeof text ? len : sizeof text - 1);
  }
  for (uint32_t i = 0; main_fn && m->output_shardings && i < main_fn->output_count; ++i) {
    const size_t len = cml_sharding_format(&m->output_shardings[i], text, sizeof text);
    h = cmlc_mpi_mix(h, text, len < sizeof text ? len : sizeof text - 1);
  }
  for (uint32_t v = 1; v < m->value_count; ++v) {
    const cml_shape_t* s = &m->values[v].shape;
    CMLC_MPI_MIX(h, s->dtype);
    CMLC_MPI_MIX(h, s->rank);
    if (s->rank > 0) h = cmlc_mpi_mix(h, s->dims, sizeof(int64_t) * (size_t)s->rank);
  }
  return h;
}

cml_status_t cmlc_mpi_agree_module(const cmlc_backend_t* backend, const cml_module_t* module,
                                   uint64_t* out_fingerprint) {
  *out_fingerprint = 0;
  if (backend->options.process_count <= 1 || module->num_devices <= 1) return CML_OK;
  *out_fingerprint = cmlc_mpi_module_hash(module);
  char text[256];
  snprintf(text, sizeof text, "module \"%.80s\" on %d devices: %u nodes, fingerprint %016llx",
           module->name ? module->name : "", (int)module->num_devices, module->node_count,
           (unsigned long long)*out_fingerprint);
  cml_status_t st = cml__mpi_agree(text, strlen(text), "compiled multi-device module");
  if (st != CML_OK) {
    return cml_status_annotate(st,
                               "c backend: compile under distributed=mpi (every process must "
                               "compile the same modules in the same order)");
  }
  return CML_OK;
}

void cmlc_mpi_execution_failed(const cmlc_backend_t* backend, cml_status_t status) {
  if (backend->options.process_count <= 1 || status == CML_OK) return;
  cml__mpi_fail(cml_status_message(status));
}
