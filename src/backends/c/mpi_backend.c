// SPDX-License-Identifier: Apache-2.0
// src/backends/c/mpi_backend.c: the c backend's multi-process mode (mpi_internal.h): the
// `distributed` option, the process's place in the global device space, the checks that keep
// buffers and executions on local devices, and the agreement of configurations and modules
// across processes.
#include <stdio.h>
#include <string.h>

#include "backends/c/mpi_internal.h"
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

// A hash of what decides the program's behaviour: devices, ops, wiring, shapes, constants and
// collective groups.
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
  for (uint32_t v = 1; v < m->value_count; ++v) {
    const cml_shape_t* s = &m->values[v].shape;
    CMLC_MPI_MIX(h, s->dtype);
    CMLC_MPI_MIX(h, s->rank);
    if (s->rank > 0) h = cmlc_mpi_mix(h, s->dims, sizeof(int64_t) * (size_t)s->rank);
  }
  return h;
}

cml_status_t cmlc_mpi_agree_module(const cmlc_backend_t* backend, const cml_module_t* module) {
  if (backend->options.process_count <= 1 || module->num_devices <= 1) return CML_OK;
  char text[256];
  snprintf(text, sizeof text, "module \"%.80s\" on %d devices: %u nodes, fingerprint %016llx",
           module->name ? module->name : "", (int)module->num_devices, module->node_count,
           (unsigned long long)cmlc_mpi_module_hash(module));
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
