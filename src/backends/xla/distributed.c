// SPDX-License-Identifier: Apache-2.0
// src/backends/xla/distributed.c: `xla:<plugin>,distributed=mpi`: one PJRT client across the
// processes of an MPI job, for plugins that accept PJRT's multi-process create options (node
// id = MPI rank, number of nodes = MPI size, and the key-value callbacks), with the key-value
// store served over MPI (src/distributed/mpi_kv.h). Plugins that refuse or ignore the options
// (XLA's CPU plugin) get UNIMPLEMENTED naming the plugin and the options.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/xla/xla_internal.h"
#include "distributed/mpi_comm.h"
#include "distributed/mpi_kv.h"

struct cml__xla_distributed_t {
  cml__mpi_kv_t* kv;
};

//===--- the key-value callbacks ---===//

static int cml_xla_kv_pjrt_code(cml_status_code_t code) {
  switch (code) {
    case CML_STATUS_INVALID_ARGUMENT:
      return CML_PJRT_CODE_INVALID_ARGUMENT;
    case CML_STATUS_NOT_FOUND:
      return CML_PJRT_CODE_NOT_FOUND;
    case CML_STATUS_DEADLINE_EXCEEDED:
      return CML_PJRT_CODE_DEADLINE_EXCEEDED;
    case CML_STATUS_RESOURCE_EXHAUSTED:
      return CML_PJRT_CODE_RESOURCE_EXHAUSTED;
    case CML_STATUS_FAILED_PRECONDITION:
      return CML_PJRT_CODE_FAILED_PRECONDITION;
    case CML_STATUS_UNAVAILABLE:
      return CML_PJRT_CODE_UNAVAILABLE;
    case CML_STATUS_CANCELLED:
      return CML_PJRT_CODE_CANCELLED;
    default:
      return CML_PJRT_CODE_INTERNAL;
  }
}

// Hands |status| (consumed) to the plugin as one of its errors.
static cml_pjrt_error_t* cml_xla_kv_error(cml_pjrt_callback_error_fn* make, cml_status_t status) {
  cml_pjrt_error_t* error = NULL;
  if (make && *make) {
    const char* message = cml_status_message(status);
    error = (*make)(cml_xla_kv_pjrt_code(cml_status_code(status)), message, strlen(message));
  }
  cml_status_free(status);
  return error;
}

static void cml_xla_kv_free_value(char* value) { free(value); }

static cml_pjrt_error_t* cml_xla_kv_get(cml_pjrt_kv_get_args_t* args) {
  const cml__xla_distributed_t* d = args->user_arg;
  char* value = NULL;
  size_t size = 0;
  cml_status_t st =
      cml__mpi_kv_get(d->kv, args->key, args->key_size, args->timeout_in_ms, &value, &size);
  if (st != CML_OK) return cml_xla_kv_error(args->callback_error, st);
  args->value = value;
  args->value_size = size;
  args->value_deleter_callback = cml_xla_kv_free_value;
  return NULL;
}

static cml_pjrt_error_t* cml_xla_kv_try_get(cml_pjrt_kv_try_get_args_t* args) {
  const cml__xla_distributed_t* d = args->user_arg;
  char* value = NULL;
  size_t size = 0;
  cml_status_t st = cml__mpi_kv_try_get(d->kv, args->key, args->key_size, &value, &size);
  if (st != CML_OK) return cml_xla_kv_error(args->callback_error, st);
  args->value = value;
  args->value_size = size;
  args->value_deleter_callback = cml_xla_kv_free_value;
  return NULL;
}

static cml_pjrt_error_t* cml_xla_kv_put(cml_pjrt_kv_put_args_t* args) {
  const cml__xla_distributed_t* d = args->user_arg;
  cml_status_t st =
      cml__mpi_kv_put(d->kv, args->key, args->key_size, args->value, args->value_size);
  return st == CML_OK ? NULL : cml_xla_kv_error(args->callback_error, st);
}

//===--- the client ---===//

cml_status_t cml__xla_distributed_check_built(void) {
  if (cml__mpi_built()) return CML_OK;
  return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                         "xla backend: distributed=mpi needs MPI, and this cml was built without "
                         "it: install an MPI (e.g. apt-get install libopenmpi-dev openmpi-bin) "
                         "and rebuild cml with -DCML_WITH_MPI=ON");
}

// Why the plugin's client cannot serve distributed=mpi, as UNIMPLEMENTED (|detail| says what
// was seen).
static cml_status_t cml_xla_distributed_refused(const cml__xla_plugin_t* plugin, const char* name,
                                                const char* detail) {
  return cml_status_make(
      CML_STATUS_UNIMPLEMENTED,
      "xla backend: distributed=mpi: the PJRT plugin \"%s\" (%s) does not form one client across "
      "processes from the multi-process options (node_id, num_nodes and the key-value "
      "callbacks): %s. XLA's CPU plugin has no multi-process client: run one client per process "
      "(without distributed=mpi) and combine values across processes with cml_host_all_reduce "
      "(cml/host_collective.h)",
      name, plugin->path, detail);
}

// Creates the client with the node options and the store; classifies a refusal.
static cml_status_t cml_xla_distributed_client(const cml__xla_plugin_t* plugin, const char* name,
                                               const cml__xla_option_t* options,
                                               size_t option_count, cml__xla_distributed_t* d,
                                               cml__xla_client_t** out_client) {
  const int rank = cml__mpi_rank(), size = cml__mpi_size();
  cml__xla_option_t* all = calloc(option_count + 2, sizeof *all);
  if (!all) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  if (option_count) memcpy(all, options, option_count * sizeof *all);
  all[option_count] =
      (cml__xla_option_t){.name = "node_id", .type = CML_PJRT_NAMED_INT64, .int64_value = rank};
  all[option_count + 1] =
      (cml__xla_option_t){.name = "num_nodes", .type = CML_PJRT_NAMED_INT64, .int64_value = size};
  const cml__xla_kv_callbacks_t kv = {
      .get = cml_xla_kv_get, .try_get = cml_xla_kv_try_get, .put = cml_xla_kv_put, .user_arg = d};
  cml_status_t st = cml__xla_client_create_multi(plugin, all, option_count + 2, &kv, out_client);
  free(all);
  if (st != CML_OK) {
    const char* message = cml_status_message(st);
    const bool about_options = strstr(message, "node_id") || strstr(message, "num_nodes") ||
                               strstr(message, "Unexpected option");
    if (about_options) {
      char detail[1200];
      snprintf(detail, sizeof detail, "PJRT_Client_Create refused them (%s)", message);
      cml_status_free(st);
      return cml_xla_distributed_refused(plugin, name, detail);
    }
    if (cml_status_code(st) == CML_STATUS_UNIMPLEMENTED) {
      return cml_status_annotate(st, "xla backend: distributed=mpi with the PJRT plugin \"%s\"",
                                 name);
    }
    return cml_status_annotate(st,
                               "xla backend: distributed=mpi: creating the client of process %d "
                               "of %d with the PJRT plugin \"%s\" (%s)",
                               rank, size, name, plugin->path);
  }
  const cml__xla_client_t* c = *out_client;
  if (c->process_index != rank || (size > 1 && c->process_count != size)) {
    char detail[400];
    snprintf(detail, sizeof detail,
             "it accepted them, but its client is process %d of %d with %d of %d devices here, "
             "in a job of %d MPI processes where this is process %d",
             c->process_index, c->process_count, c->local_device_count, c->device_count, size,
             rank);
    cml__xla_client_destroy(*out_client);
    *out_client = NULL;
    return cml_xla_distributed_refused(plugin, name, detail);
  }
  return CML_OK;
}

cml_status_t cml__xla_distributed_client_create(const cml__xla_plugin_t* plugin,
                                                const char* plugin_name, const char* config_text,
                                                const cml__xla_option_t* options,
                                                size_t option_count,
                                                cml__xla_distributed_t** out_distributed,
                                                cml__xla_client_t** out_client) {
  *out_distributed = NULL;
  *out_client = NULL;
  CML_RETURN_IF_ERROR(cml__xla_distributed_check_built());
  cml_status_t st = cml__mpi_init();
  if (st != CML_OK) return cml_status_annotate(st, "xla backend: distributed=mpi");
  // Every process must load the same plugin with the same options (paths may differ).
  char text[2300];
  int len = snprintf(text, sizeof text, "xla:%s", config_text);
  if (len < 0 || (size_t)len >= sizeof text) len = (int)strlen(text);
  st = cml__mpi_agree(text, (size_t)len, "xla:...,distributed=mpi configuration");
  if (st != CML_OK) return cml_status_annotate(st, "xla backend");
  cml__xla_distributed_t* d = calloc(1, sizeof *d);
  if (!d) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  char what[160];
  snprintf(what, sizeof what, "PJRT key-value store of xla:%.100s", plugin_name);
  st = cml__mpi_kv_create(what, &d->kv);
  if (st != CML_OK) {
    free(d);
    return cml_status_annotate(st, "xla backend: distributed=mpi");
  }
  st = cml_xla_distributed_client(plugin, plugin_name, options, option_count, d, out_client);
  // Every process learns whether all of them have a client (one that failed would leave the
  // others' first collective waiting).
  const char* outcome = st == CML_OK ? "created" : "failed";
  cml_status_t agreed =
      cml__mpi_agree(outcome, strlen(outcome), "outcome of the PJRT client creation");
  if (st == CML_OK && agreed != CML_OK) {
    st = cml_status_annotate(agreed, "xla backend: distributed=mpi");
    cml__xla_client_destroy(*out_client);
    *out_client = NULL;
  } else {
    cml_status_free(agreed);
  }
  if (st != CML_OK) {
    cml__mpi_kv_destroy(d->kv);
    free(d);
    return st;
  }
  *out_distributed = d;
  return CML_OK;
}

void cml__xla_distributed_destroy(cml__xla_distributed_t* distributed) {
  if (!distributed) return;
  cml__mpi_kv_destroy(distributed->kv);
  free(distributed);
}
