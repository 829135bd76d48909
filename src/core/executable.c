// SPDX-License-Identifier: Apache-2.0
// src/core/executable.c: executables: the base helpers, accessors and the checked execute.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cml/distributed.h"
#include "core/dynamic.h"
#include "base/base_internal.h"
#include "core/runtime_internal.h"
#include "distributed/mpi_comm.h"

//===--- base helpers for implementers ---===//

cml_status_t cml_executable_init_base(cml_executable_t* executable, cml_backend_t* backend,
                                      cml_module_t* module) {
  static const char what[] = "cml_executable_init_base";
  if (!executable || !backend || !module) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: NULL executable, backend or module",
                           what);
  }
  memset(executable, 0, sizeof *executable);
  if (module->function_count == 0 || !module->functions) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: module \"%s\" has no main function",
                           what, module->name ? module->name : "");
  }
  const cml_ir_function_t* main_fn = &module->functions[0];
  cml_allocator_t alloc = backend->allocator;
  size_t in = main_fn->param_count;
  size_t out = main_fn->output_count;
  const char** names = NULL;
  cml_shape_t* in_shapes = NULL;
  cml_shape_t* out_shapes = NULL;
  if (in > 0) {
    names = (const char**)cml_allocator_malloc(alloc, in * sizeof *names, sizeof(void*));
    in_shapes = (cml_shape_t*)cml_allocator_malloc(alloc, in * sizeof *in_shapes, 16);
  }
  if (out > 0) {
    out_shapes = (cml_shape_t*)cml_allocator_malloc(alloc, out * sizeof *out_shapes, 16);
  }
  if ((in > 0 && (!names || !in_shapes)) || (out > 0 && !out_shapes)) {
    cml_allocator_free(alloc, (void*)names, in * sizeof *names);
    cml_allocator_free(alloc, in_shapes, in * sizeof *in_shapes);
    cml_allocator_free(alloc, out_shapes, out * sizeof *out_shapes);
    return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "%s: out of memory", what);
  }
  for (size_t i = 0; i < in; ++i) {
    const cml_ir_value_t* v = &module->values[main_fn->params[i]];
    const char* name = module->nodes[v->node].name;
    names[i] = name ? name : "";
    in_shapes[i] = v->shape;
  }
  for (size_t i = 0; i < out; ++i) out_shapes[i] = module->values[main_fn->outputs[i]].shape;
  // Under AutoSharding every device slot holds shards: the executable's shapes are the shard
  // shapes, so the device-major input checks and the outputs' shapes are per device.
  cml_status_t st = CML_OK;
  if (module->distribution == CML_DISTRIBUTION_AUTO_SHARDING) {
    for (size_t i = 0; st == CML_OK && i < in && module->param_shardings; ++i) {
      st = cml_sharding_shard_shape(&module->param_shardings[i], &in_shapes[i], &in_shapes[i]);
      if (st != CML_OK)
        st = cml_status_annotate(st, "%s: parameter #%zu \"%s\"", what, i, names[i]);
    }
    for (size_t i = 0; st == CML_OK && i < out && module->output_shardings; ++i) {
      st = cml_sharding_shard_shape(&module->output_shardings[i], &out_shapes[i], &out_shapes[i]);
      if (st != CML_OK) st = cml_status_annotate(st, "%s: output #%zu", what, i);
    }
  }
  if (st != CML_OK) {
    cml_allocator_free(alloc, (void*)names, in * sizeof *names);
    cml_allocator_free(alloc, in_shapes, in * sizeof *in_shapes);
    cml_allocator_free(alloc, out_shapes, out * sizeof *out_shapes);
    return st;
  }

  cml__refcount_init(&executable->refcount);
  executable->backend = cml_backend_retain(backend);
  executable->module = cml_module_retain(module);
  executable->input_count = in;
  executable->input_names = names;
  executable->input_shapes = in_shapes;
  executable->output_count = out;
  executable->output_shapes = out_shapes;
  return CML_OK;
}

void cml_executable_deinit_base(cml_executable_t* executable) {
  if (!executable || !executable->backend) return;
  cml_allocator_t alloc = executable->backend->allocator;
  cml_allocator_free(alloc, (void*)executable->input_names,
                     executable->input_count * sizeof *executable->input_names);
  cml_allocator_free(alloc, executable->input_shapes,
                     executable->input_count * sizeof *executable->input_shapes);
  cml_allocator_free(alloc, executable->output_shapes,
                     executable->output_count * sizeof *executable->output_shapes);
  executable->input_names = NULL;
  executable->input_shapes = NULL;
  executable->output_shapes = NULL;
  cml_module_t* module = executable->module;
  cml_backend_t* backend = executable->backend;
  executable->module = NULL;
  executable->backend = NULL;
  cml_module_release(module);
  cml_backend_release(backend);
}

//===--- reference counting and accessors ---===//

cml_executable_t* cml_executable_retain(cml_executable_t* executable) {
  if (executable) cml__refcount_retain(&executable->refcount);
  return executable;
}

void cml_executable_release(cml_executable_t* executable) {
  if (!executable) return;
  if (cml__refcount_release(&executable->refcount)) {
    cml_backend_t* backend = executable->backend;
    if (backend && CML__VTABLE_HAS(backend->vtable, executable_destroy)) {
      backend->vtable->executable_destroy(executable);
    }
  }
}

cml_status_t cml_executable_dump(const cml_executable_t* executable, void* out) {
  if (!executable || !out) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "cml_executable_dump: NULL %s",
                           executable ? "out" : "executable");
  }
  FILE* f = (FILE*)out;
  clearerr(f);
  const cml_backend_vtable_t* vt = executable->backend->vtable;
  if (CML__VTABLE_HAS(vt, executable_dump)) {
    CML_RETURN_IF_ERROR(vt->executable_dump(executable, out));
  } else {
    cml_module_dump(executable->module, out);
  }
  // A stream opened for reading, a full disk, a closed pipe: the listing is lost, say so.
  errno = 0;
  if (fflush(f) != 0 || ferror(f)) {
    const int e = errno;
    return cml_status_make(
        CML_STATUS_UNAVAILABLE,
        "cml_executable_dump: writing the listing of module \"%s\" failed%s%s",
        executable->module && executable->module->name ? executable->module->name : "",
        e ? ": " : "", e ? strerror(e) : "");
  }
  return CML_OK;
}

size_t cml_executable_input_count(const cml_executable_t* executable) {
  return executable ? executable->input_count : 0;
}

const char* cml_executable_input_name(const cml_executable_t* executable, size_t i) {
  if (!executable || i >= executable->input_count || !executable->input_names) return NULL;
  return executable->input_names[i];
}

const cml_shape_t* cml_executable_input_shape(const cml_executable_t* executable, size_t i) {
  if (!executable || i >= executable->input_count || !executable->input_shapes) return NULL;
  return &executable->input_shapes[i];
}

size_t cml_executable_output_count(const cml_executable_t* executable) {
  return executable ? executable->output_count : 0;
}

const cml_shape_t* cml_executable_output_shape(const cml_executable_t* executable, size_t i) {
  if (!executable || i >= executable->output_count || !executable->output_shapes) return NULL;
  return &executable->output_shapes[i];
}

//===--- distribution ---===//

cml_distribution_t cml_executable_distribution(const cml_executable_t* executable) {
  return (executable && executable->module) ? executable->module->distribution
                                            : CML_DISTRIBUTION_NONE;
}

int cml_executable_num_devices(const cml_executable_t* executable) {
  const cml_module_t* m = executable ? executable->module : NULL;
  return (m && m->num_devices > 1) ? (int)m->num_devices : 1;
}

const cml_sharding_t* cml_executable_input_sharding(const cml_executable_t* executable, size_t i) {
  const cml_module_t* m = executable ? executable->module : NULL;
  if (!m || m->distribution != CML_DISTRIBUTION_AUTO_SHARDING || !m->param_shardings ||
      i >= executable->input_count) {
    return NULL;
  }
  return &m->param_shardings[i];
}

const cml_sharding_t* cml_executable_output_sharding(const cml_executable_t* executable, size_t i) {
  const cml_module_t* m = executable ? executable->module : NULL;
  if (!m || m->distribution != CML_DISTRIBUTION_AUTO_SHARDING || !m->output_shardings ||
      i >= executable->output_count) {
    return NULL;
  }
  return &m->output_shardings[i];
}

//===--- execute ---===//

// The number of replicas (devices) the executable runs on: 1 unless compiled for SPMD.
static size_t cml__executable_replicas(const cml_executable_t* executable) {
  const cml_module_t* m = executable->module;
  return (m && m->num_devices > 1) ? (size_t)m->num_devices : 1;
}

// Validates input |k| (parameter |k % input_count| of device slot |slot|, -1 for a
// single-device execution) expected on |device|.
static cml_status_t cml__executable_check_input(const cml_executable_t* exe,
                                                cml_buffer_t* const* inputs, size_t k, int slot,
                                                int device) {
  static const char what[] = "cml_executable_execute";
  size_t param = k % exe->input_count;
  const char* pname = exe->input_names[param];
  const cml_buffer_t* b = inputs[k];
  if (!b) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "%s: input %zu (parameter #%zu \"%s\") is NULL", what, k, param, pname);
  }
  if (b->backend != exe->backend) {
    const char* theirs = b->backend ? cml_backend_name(b->backend) : "?";
    const char* ours = cml_backend_name(exe->backend);
    if (strcmp(theirs, ours) == 0) {
      // Two instances of one backend: the names alone would read as a contradiction.
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                             "%s: input %zu (parameter #%zu \"%s\") is a buffer of another "
                             "instance of backend \"%s\" than the one the executable belongs "
                             "to (buffers are not shared between backend instances)",
                             what, k, param, pname, ours);
    }
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "%s: input %zu (parameter #%zu \"%s\") is a buffer of backend \"%s\", "
                           "but the executable belongs to backend \"%s\"",
                           what, k, param, pname, theirs, ours);
  }
  if (cml__donated_load(&b->donated)) {
    return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                           "%s: input %zu (parameter #%zu \"%s\"): buffer was donated to an "
                           "earlier execution and can no longer be used",
                           what, k, param, pname);
  }
  const cml_shape_t* want = &exe->input_shapes[param];
  if (cml_shape_is_dynamic(want)) {
    // Dynamic axes: dtype, rank and static dims must match, dynamic ones be >= 1; the backend
    // checks that one name gets one size across the inputs (core/dynamic.h).
    cml_axis_bindings_t bindings;
    cml_axis_bindings_init(&bindings);
    cml_status_t st = cml_shape_extract_bindings(want, &b->shape, &bindings);
    if (st != CML_OK) {
      return cml_status_annotate(st, "%s: input %zu (parameter #%zu \"%s\")", what, k, param,
                                 pname);
    }
  } else if (!cml_shape_equal(&b->shape, want)) {
    char ws[160], gs[160], slot_text[40] = "", shard_text[480] = "";
    if (slot >= 0) snprintf(slot_text, sizeof slot_text, " of device slot %d", slot);
    const cml_module_t* m = exe->module;
    if (slot >= 0 && m && m->param_shardings && m->function_count > 0 &&
        param < m->functions[0].param_count &&
        !cml_sharding_is_replicated(&m->param_shardings[param])) {
      // AutoSharding: the expected shape is this slot's shard of a logical tensor.
      char ls[160], ss[200];
      cml_shape_format(&m->values[m->functions[0].params[param]].shape, ls, sizeof ls);
      cml_sharding_format(&m->param_shardings[param], ss, sizeof ss);
      snprintf(shard_text, sizeof shard_text,
               " (the shard of the logical %s split by %s; cml_dtensor_from_host makes the "
               "per-slot buffers)",
               ls, ss);
    }
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "%s: input %zu (parameter #%zu \"%s\"%s): expected shape %s%s, got %s",
                           what, k, param, pname, slot_text, cml_shape_format(want, ws, sizeof ws),
                           shard_text, cml_shape_format(&b->shape, gs, sizeof gs));
  }
  if (b->device != device && slot >= 0) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "%s: input %zu (parameter #%zu \"%s\" of device slot %d) is on device "
                           "%d, but slot %d runs on device %d (inputs are device-major: input "
                           "i of slot j is inputs[j * %zu + i]; copy it with "
                           "cml_buffer_copy_to_device)",
                           what, k, param, pname, slot, b->device, slot, device, exe->input_count);
  }
  if (b->device != device) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "%s: input %zu (parameter #%zu \"%s\") is on device %d, but this "
                           "execution runs on device %d (copy it with cml_buffer_copy_to_device)",
                           what, k, param, pname, b->device, device);
  }
  return CML_OK;
}

typedef struct cml__input_ref_t {
  uintptr_t buffer;
  size_t index;
} cml__input_ref_t;

static int cml__input_ref_cmp(const void* a, const void* b) {
  const cml__input_ref_t* x = (const cml__input_ref_t*)a;
  const cml__input_ref_t* y = (const cml__input_ref_t*)b;
  if (x->buffer != y->buffer) return x->buffer < y->buffer ? -1 : 1;
  return x->index < y->index ? -1 : (x->index > y->index ? 1 : 0);
}

// Finds the first donated input (in input order) whose buffer is also passed elsewhere, and the
// first other place it is passed: *|out_i| and *|out_j|, or *|out_i| = |total| when there is
// none. Few inputs: pairwise. Many: sorted by buffer (a training step that donates 10^4 weights
// paid 10^8 comparisons per execute pairwise).
static cml_status_t cml__find_donated_duplicate(const cml_executable_t* exe,
                                                cml_buffer_t* const* inputs, size_t total,
                                                const bool* donate, size_t* out_i, size_t* out_j) {
  *out_i = total;
  *out_j = total;
  if (total <= 64) {
    for (size_t i = 0; i < total; ++i) {
      if (!donate[i]) continue;
      for (size_t j = 0; j < total; ++j) {
        if (j == i || inputs[j] != inputs[i]) continue;
        *out_i = i;
        *out_j = j;
        return CML_OK;
      }
    }
    return CML_OK;
  }
  cml_allocator_t alloc = exe->backend->allocator;
  cml__input_ref_t* refs =
      (cml__input_ref_t*)cml_allocator_malloc(alloc, total * sizeof *refs, sizeof(void*));
  if (!refs) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  for (size_t k = 0; k < total; ++k) {
    refs[k].buffer = (uintptr_t)inputs[k];
    refs[k].index = k;
  }
  qsort(refs, total, sizeof *refs, cml__input_ref_cmp);
  for (size_t g = 0; g < total;) {
    size_t end = g + 1;
    while (end < total && refs[end].buffer == refs[g].buffer) ++end;
    if (end - g > 1) {
      // Within a group indices ascend: the first donated one, and the first other one.
      for (size_t k = g; k < end; ++k) {
        if (!donate[refs[k].index]) continue;
        if (refs[k].index < *out_i) {
          *out_i = refs[k].index;
          *out_j = refs[k == g ? g + 1 : g].index;
        }
        break;
      }
    }
    g = end;
  }
  cml_allocator_free(alloc, refs, total * sizeof *refs);
  return CML_OK;
}

// Rejects shared buffers given for donation and a donated buffer that also appears elsewhere
// among the inputs.
static cml_status_t cml__executable_check_donation(const cml_executable_t* exe,
                                                   cml_buffer_t* const* inputs, size_t total,
                                                   const bool* donate) {
  static const char what[] = "cml_executable_execute";
  for (size_t i = 0; i < total; ++i) {
    if (!donate[i] || !inputs[i]->shared) continue;
    size_t pi = i % exe->input_count;
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "%s: input %zu (parameter #%zu \"%s\") is a shared buffer: shared "
                           "buffers cannot be donated",
                           what, i, pi, exe->input_names[pi]);
  }
  size_t i = total, j = total;
  CML_RETURN_IF_ERROR(cml__find_donated_duplicate(exe, inputs, total, donate, &i, &j));
  if (i == total) return CML_OK;
  size_t pi = i % exe->input_count, pj = j % exe->input_count;
  return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                         "%s: input %zu (parameter #%zu \"%s\") is donated but the same buffer "
                         "is also passed as input %zu (parameter #%zu \"%s\")%s",
                         what, i, pi, exe->input_names[pi], j, pj, exe->input_names[pj],
                         donate[j] ? " and donated twice" : "");
}

// Checks result |i| of an execution that returned OK: present, of the executable's backend, on
// |device| (the slot's device), of the declared dtype and rank, and of the declared shape on
// one device (dynamic axes: the static dims; SPMD results may be shards). A backend that
// breaks this gets INTERNAL naming it, never a result that contradicts the executable.
static cml_status_t cml__executable_check_output(const cml_executable_t* exe,
                                                 cml_buffer_t* const* results, size_t i,
                                                 size_t replicas, int device) {
  static const char what[] = "cml_executable_execute";
  const cml_backend_t* backend = exe->backend;
  const cml_buffer_t* r = results[i];
  if (!r) {
    return cml_status_make(CML_STATUS_INTERNAL, "%s: backend \"%s\" returned no output %zu", what,
                           cml_backend_name(backend), i);
  }
  const cml_shape_t* want = &exe->output_shapes[i % exe->output_count];
  bool same = r->backend == backend && r->device == device && r->shape.dtype == want->dtype &&
              r->shape.rank == want->rank;
  if (same && replicas <= 1) {
    for (int a = 0; a < want->rank && same; ++a) {
      same = want->dims[a] < 0 ? r->shape.dims[a] >= 0 : r->shape.dims[a] == want->dims[a];
    }
  }
  if (same) return CML_OK;
  char ws[160], gs[160];
  return cml_status_make(CML_STATUS_INTERNAL,
                         "%s: backend \"%s\" returned output %zu as %s on device %d%s, but the "
                         "executable declares %s on device %d",
                         what, cml_backend_name(backend), i,
                         cml_shape_format(&r->shape, gs, sizeof gs), r->device,
                         r->backend == backend ? "" : " of another backend",
                         cml_shape_format(want, ws, sizeof ws), device);
}

// The checked execute behind both public forms. |control| is NULL when the caller gave neither
// a cancel token nor a deadline.
// *|dispatched| tells whether the backend was called (it reports its own failures).
static cml_status_t cml__executable_execute_checked(cml_executable_t* executable,
                                                    cml_buffer_t* const* inputs, size_t input_count,
                                                    const bool* donate, int device,
                                                    const cml_execute_control_t* control,
                                                    cml_buffer_t** out_results, bool* dispatched) {
  static const char what[] = "cml_executable_execute";
  if (!executable || !executable->backend || !executable->backend->vtable) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: NULL executable", what);
  }
  size_t replicas = cml__executable_replicas(executable);
  size_t expected_inputs = replicas * executable->input_count;
  size_t result_count = replicas * executable->output_count;
  if (!out_results && result_count > 0) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: NULL out_results", what);
  }
  for (size_t i = 0; i < result_count; ++i) out_results[i] = NULL;
  cml_backend_t* backend = executable->backend;
  if (input_count != expected_inputs) {
    if (replicas > 1) {
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                             "%s: expected %zu inputs (%zu parameter%s x %zu devices, "
                             "device-major), got %zu",
                             what, expected_inputs, executable->input_count,
                             executable->input_count == 1 ? "" : "s", replicas, input_count);
    }
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: expected %zu inputs, got %zu", what,
                           expected_inputs, input_count);
  }
  if (!inputs && input_count > 0) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: NULL inputs for %zu inputs", what,
                           input_count);
  }
  if (replicas > 1) {
    if (replicas > (size_t)backend->device_count) {
      return cml_status_make(CML_STATUS_OUT_OF_RANGE,
                             "%s: the executable runs on %zu devices, but backend \"%s\" has %d",
                             what, replicas, cml_backend_name(backend), backend->device_count);
    }
  } else {
    CML_RETURN_IF_ERROR(cml__check_device(what, backend, device));
  }
  // A multi-process backend (cml_backend_process_info) runs only this process's devices: the
  // entries of other processes' device slots are NULL (inputs and results).
  cml_process_info_t process;
  cml_backend_process_info(backend, &process);
  const bool multi_process = process.process_count > 1;
  if (multi_process && replicas <= 1 && !cml_backend_device_is_local(backend, device)) {
    return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                           "%s: device %d belongs to another process of backend \"%s\" (this "
                           "is process %d of %d, with devices %d..%d)",
                           what, device, cml_backend_name(backend), process.process_index,
                           process.process_count, process.first_local_device,
                           process.first_local_device + process.local_device_count - 1);
  }
  // Device slot j runs on device_assignment[j] (j by default).
  const int32_t* assignment = executable->module ? executable->module->device_assignment : NULL;
  for (size_t k = 0; k < input_count; ++k) {
    size_t slot = k / executable->input_count;
    int want_device = replicas > 1 ? (assignment ? (int)assignment[slot] : (int)slot) : device;
    if (multi_process && replicas > 1 && !cml_backend_device_is_local(backend, want_device)) {
      if (inputs[k]) {
        return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                               "%s: input %zu (parameter #%zu \"%s\") is for device slot %zu on "
                               "device %d of another process: pass NULL there (this is process "
                               "%d of %d)",
                               what, k, k % executable->input_count,
                               executable->input_names[k % executable->input_count], slot,
                               want_device, process.process_index, process.process_count);
      }
      continue;
    }
    CML_RETURN_IF_ERROR(cml__executable_check_input(executable, inputs, k,
                                                    replicas > 1 ? (int)slot : -1, want_device));
  }
  // Dynamic axes: one name gets one size across a device slot's inputs (checked here for every
  // backend; each input alone was checked above).
  bool dynamic = false;
  for (size_t i = 0; i < executable->input_count && !dynamic; ++i)
    dynamic = cml_shape_is_dynamic(&executable->input_shapes[i]);
  for (size_t slot = 0; dynamic && !multi_process && slot < (replicas > 1 ? replicas : 1); ++slot) {
    cml_axis_bindings_t bindings;
    CML_RETURN_IF_ERROR(
        cml__dynamic_bindings(executable, inputs + slot * executable->input_count, &bindings));
  }
  if (!CML__VTABLE_HAS(backend->vtable, execute)) {
    return cml_status_make(CML_STATUS_UNIMPLEMENTED, "%s: backend \"%s\" cannot execute", what,
                           cml_backend_name(backend));
  }

  // The vtable always receives a donate array.
  bool local_flags[64];
  bool* flags = local_flags;
  size_t flags_size = input_count * sizeof(bool);
  if (input_count > sizeof local_flags / sizeof local_flags[0]) {
    flags = (bool*)cml_allocator_malloc(backend->allocator, flags_size, sizeof(void*));
    if (!flags) return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "%s: out of memory", what);
  }
  bool any_donated = false;
  for (size_t k = 0; k < input_count; ++k) {
    flags[k] = donate && inputs[k] ? donate[k] : false;
    any_donated = any_donated || flags[k];
  }
  cml_status_t st = CML_OK;
  if (any_donated) st = cml__executable_check_donation(executable, inputs, input_count, flags);
  // Each donated input is claimed atomically before dispatch: of two executions donating one
  // buffer at once, only one may take its storage (both once did, and freed it twice). The
  // claim is given back when the execution does not run or fails.
  size_t claimed = 0;
  for (; st == CML_OK && claimed < input_count; ++claimed) {
    if (!flags[claimed]) continue;
    const cml__buffer_use_t r = cml__buffer_claim_donation(inputs[claimed]);
    if (r == CML__USE_OK) continue;
    const size_t param = claimed % executable->input_count;
    st = cml_status_make(
        CML_STATUS_FAILED_PRECONDITION, "%s: input %zu (parameter #%zu \"%s\"): %s", what, claimed,
        param, executable->input_names[param],
        r == CML__USE_IN_USE
            ? "buffer is read by another execution or copy right now, so it cannot be donated "
              "(nothing was consumed; donate a buffer no other thread is using)"
            : "buffer was donated to another execution (an earlier one, or one running now) and "
              "can no longer be used");
    break;
  }
  // Every other input is in use until the backend returns: a donation elsewhere waits for
  // none of them and is refused instead (runtime_internal.h).
  size_t used = 0;
  for (; st == CML_OK && used < input_count; ++used) {
    if (!inputs[used] || flags[used]) continue;
    const cml__buffer_use_t r = cml__buffer_use_begin(inputs[used]);
    if (r == CML__USE_OK) continue;
    const size_t param = used % executable->input_count;
    st = cml_status_make(
        r == CML__USE_FULL ? CML_STATUS_RESOURCE_EXHAUSTED : CML_STATUS_FAILED_PRECONDITION,
        "%s: input %zu (parameter #%zu \"%s\"): %s", what, used, param,
        executable->input_names[param],
        r == CML__USE_FULL ? "32767 executions and copies read the buffer at once"
                           : "buffer was donated to another execution (an "
                             "earlier one, or one running now) and can no "
                             "longer be used");
    break;
  }
  // A stop requested before dispatch is honoured on every backend; during the execution only
  // by backends with execute_with_control.
  if (st == CML_OK && control) st = cml_execute_control_check(control, what);
  if (st == CML_OK) {
    *dispatched = true;
    int run_device = replicas > 1 ? 0 : device;
    const uint32_t fpenv = cml__fpenv_enter(CML__FPENV_IEEE);
    if (control && CML__VTABLE_HAS(backend->vtable, execute_with_control)) {
      st = backend->vtable->execute_with_control(executable, inputs, flags, run_device, control,
                                                 out_results);
    } else {
      // Built-in backends without the slot read it from here at the one point where they can
      // still stop (xla: after compiling a new dynamic-shape specialization, before PJRT runs).
      const cml_execute_control_t* outer = cml__current_control;
      cml__current_control = control;
      st = backend->vtable->execute(executable, inputs, flags, run_device, out_results);
      cml__current_control = outer;
    }
    cml__fpenv_leave(fpenv);
  }
  if (st == CML_OK) {
    for (size_t i = 0; i < result_count && st == CML_OK; ++i) {
      const size_t slot = i / (executable->output_count ? executable->output_count : 1);
      const int want_device =
          replicas > 1 ? (assignment ? (int)assignment[slot] : (int)slot) : device;
      if (multi_process && replicas > 1 && !cml_backend_device_is_local(backend, want_device)) {
        continue;  // another process's result
      }
      st = cml__executable_check_output(executable, out_results, i, replicas, want_device);
    }
  }
  if (st != CML_OK && *dispatched) {
    // Results are the caller's only on success (a backend that failed may have written some).
    for (size_t i = 0; i < result_count; ++i) {
      cml_buffer_release(out_results[i]);
      out_results[i] = NULL;
    }
  }
  for (size_t k = 0; k < used; ++k) {
    if (inputs[k] && !flags[k]) cml__buffer_use_end(inputs[k]);
  }
  if (st != CML_OK) {  // not consumed: the claims go back
    for (size_t k = 0; k < claimed; ++k) {
      if (flags[k]) cml__donated_store(&inputs[k]->donated, false);
    }
  }
  if (flags != local_flags) cml_allocator_free(backend->allocator, flags, flags_size);
  return st;
}

static cml_status_t cml__executable_execute(cml_executable_t* executable,
                                            cml_buffer_t* const* inputs, size_t input_count,
                                            const bool* donate, int device,
                                            const cml_execute_control_t* control,
                                            cml_buffer_t** out_results) {
  bool dispatched = false;
  cml_status_t st = cml__executable_execute_checked(executable, inputs, input_count, donate, device,
                                                    control, out_results, &dispatched);
  // A multi-device execution over several processes that stops here, before the backend ran
  // (bad inputs, a cancel token, a deadline already passed), must stop the other processes too:
  // they would otherwise pair their collectives of this launch with this process's next one,
  // mixing two launches' data under an OK status. It ends the job, as a failure during the
  // execution does (docs/distributed.md, MPI).
  if (st != CML_OK && !dispatched && executable && executable->backend &&
      cml__executable_replicas(executable) > 1) {
    cml_process_info_t process;
    cml_backend_process_info(executable->backend, &process);
    // Only when another process takes part: a module on this process's devices alone meets
    // no peer, and its failure stays local.
    bool spans = false;
    const int32_t* assignment = executable->module ? executable->module->device_assignment : NULL;
    for (size_t j = 0;
         process.process_count > 1 && !spans && j < cml__executable_replicas(executable); ++j) {
      const int dev = assignment ? (int)assignment[j] : (int)j;
      spans = !cml_backend_device_is_local(executable->backend, dev);
    }
    if (spans) {
      cml__mpi_fail(cml_status_message(st));
      st = cml_status_annotate(st, "process %d of %d: the other processes are told to stop",
                               process.process_index, process.process_count);
    }
  }
  return st;
}

cml_status_t cml_executable_execute(cml_executable_t* executable, cml_buffer_t* const* inputs,
                                    size_t input_count, const bool* donate, int device,
                                    cml_buffer_t** out_results) {
  return cml__executable_execute(executable, inputs, input_count, donate, device, NULL,
                                 out_results);
}

//===--- cancellation and deadlines ---===//

struct cml_cancel_token_t {
  int cancelled;  // first: execute controls point at it; only touched with __atomic builtins
  cml_allocator_t allocator;
};

cml_status_t cml_cancel_token_create(cml_allocator_t allocator, cml_cancel_token_t** out_token) {
  if (!out_token) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "cml_cancel_token_create: NULL out_token");
  }
  *out_token = NULL;
  if (!allocator.fn) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "cml_cancel_token_create: the allocator has no function");
  }
  cml_cancel_token_t* token = (cml_cancel_token_t*)cml_allocator_malloc(
      allocator, sizeof *token, _Alignof(cml_cancel_token_t));
  if (!token) {
    return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "cml_cancel_token_create: out of memory");
  }
  __atomic_store_n(&token->cancelled, 0, __ATOMIC_RELAXED);
  token->allocator = allocator;
  *out_token = token;
  return CML_OK;
}

void cml_cancel_token_destroy(cml_cancel_token_t* token) {
  if (token) cml_allocator_free(token->allocator, token, sizeof *token);
}

void cml_cancel_token_cancel(cml_cancel_token_t* token) {
  if (token) __atomic_store_n(&token->cancelled, 1, __ATOMIC_RELEASE);
}

bool cml_cancel_token_is_cancelled(const cml_cancel_token_t* token) {
  return token && __atomic_load_n(&token->cancelled, __ATOMIC_ACQUIRE) != 0;
}

int64_t cml_clock_monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + (int64_t)ts.tv_nsec;
}

_Thread_local const cml_execute_control_t* cml__current_control;

cml_status_t cml_execute_control_check(const cml_execute_control_t* control, const char* what) {
  if (!control) return CML_OK;
  if (control->cancelled && __atomic_load_n(control->cancelled, __ATOMIC_RELAXED)) {
    return cml_status_make(CML_STATUS_CANCELLED, "%s: cancelled by its cancel token",
                           what ? what : "execute");
  }
  if (control->deadline_ns > 0 && cml_clock_monotonic_ns() >= control->deadline_ns) {
    return cml_status_make(CML_STATUS_DEADLINE_EXCEEDED, "%s: the deadline passed",
                           what ? what : "execute");
  }
  return CML_OK;
}

void cml_execute_options_init(cml_execute_options_t* options) {
  if (!options) return;
  memset(options, 0, sizeof *options);
  options->struct_size = sizeof *options;
}

// Sets every output slot to NULL (a failed call leaves nothing for the caller to free).
static void cml__executable_clear_results(const cml_executable_t* executable,
                                          cml_buffer_t** out_results) {
  if (!out_results || !executable) return;
  size_t count = cml__executable_replicas(executable) * executable->output_count;
  for (size_t i = 0; i < count; ++i) out_results[i] = NULL;
}

cml_status_t cml_executable_execute_with_options(cml_executable_t* executable,
                                                 cml_buffer_t* const* inputs, size_t input_count,
                                                 const cml_execute_options_t* options,
                                                 cml_buffer_t** out_results) {
  static const char what[] = "cml_executable_execute_with_options";
  // The deadline counts from the call's start, argument checks included.
  const int64_t start = (options && options->timeout_ns > 0) ? cml_clock_monotonic_ns() : 0;
  cml_execute_options_t defaults;
  if (!options) {
    cml_execute_options_init(&defaults);
    options = &defaults;
  }
  // A program built against older headers passes a shorter struct: the fields it lacks keep
  // their defaults. A longer one comes from newer headers, whose fields this library cannot
  // honour.
  const size_t first_layout = offsetof(cml_execute_options_t, cancel_token) + sizeof(void*);
  if (options->struct_size < first_layout || options->struct_size > sizeof *options) {
    cml__executable_clear_results(executable, out_results);
    if (first_layout == sizeof *options) {
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                             "%s: options.struct_size is %zu; this library takes %zu (initialize "
                             "the options with cml_execute_options_init)",
                             what, options->struct_size, first_layout);
    }
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "%s: options.struct_size is %zu; this library takes %zu to %zu "
                           "(initialize the options with cml_execute_options_init)",
                           what, options->struct_size, first_layout, sizeof *options);
  }
  cml_execute_options_t given;
  if (options->struct_size < sizeof *options) {
    cml_execute_options_init(&given);
    memcpy(&given, options, options->struct_size);
    given.struct_size = sizeof given;
    options = &given;
  }
  if (options->timeout_ns < 0) {
    cml__executable_clear_results(executable, out_results);
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "%s: options.timeout_ns is %lld (must be >= 0; 0 means no deadline)",
                           what, (long long)options->timeout_ns);
  }
  cml_execute_control_t control;
  memset(&control, 0, sizeof control);
  control.struct_size = sizeof control;
  control.cancelled = options->cancel_token ? &options->cancel_token->cancelled : NULL;
  if (options->timeout_ns > 0) {
    control.deadline_ns =
        options->timeout_ns > INT64_MAX - start ? INT64_MAX : start + options->timeout_ns;
  }
  const bool active = control.cancelled || control.deadline_ns;
  return cml__executable_execute(executable, inputs, input_count, options->donate, options->device,
                                 active ? &control : NULL, out_results);
}

bool cml_executable_is_interruptible(const cml_executable_t* executable) {
  return executable && executable->backend &&
         CML__VTABLE_HAS(executable->backend->vtable, execute_with_control);
}
