// SPDX-License-Identifier: Apache-2.0
// src/core/backend.c: the backend base object, identity, devices and capabilities.
#include <stdio.h>
#include <string.h>

#include "cml/distributed.h"
#include "core/runtime_internal.h"

//===--- base helpers for implementers ---===//

// cml_capabilities_t.ops is embedded in cml_backend_t, which plug-ins embed at offset 0: it has
// room for CML_CAPABILITIES_MAX_OPS ops so that new ops leave both layouts alone. Growing that
// room changes every plug-in's layout (a major version of the backend API, not a minor one).
_Static_assert(CML_OP_COUNT <= CML_CAPABILITIES_MAX_OPS,
               "the op count passed CML_CAPABILITIES_MAX_OPS: raise it, which changes "
               "cml_backend_t (bump CML_BACKEND_API_MAJOR and say so in docs/adding-an-op.md)");

cml_status_t cml_backend_init_base(cml_backend_t* backend, const cml_backend_vtable_t* vtable,
                                   cml_allocator_t allocator, const char* name, const char* config,
                                   int device_count) {
  if (!backend || !vtable || !name || !*name || !allocator.fn) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "cml_backend_init_base: NULL backend, vtable, allocator or empty name");
  }
  if (device_count < 1) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "cml_backend_init_base: backend \"%s\" needs at least 1 device, got %d",
                           name, device_count);
  }
  if (vtable->struct_size == 0) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "cml_backend_init_base: backend \"%s\": vtable struct_size is 0", name);
  }
  // Every entry of backend API 1.0 (up to executable_destroy) must be inside the vtable: the
  // core calls compile and execute without looking at struct_size.
  const size_t minimum = offsetof(cml_backend_vtable_t, execute_with_control);
  if (vtable->struct_size < minimum) {
    return cml_status_make(CML_STATUS_INCOMPATIBLE,
                           "cml_backend_init_base: backend \"%s\": vtable struct_size %zu is "
                           "smaller than backend API 1.0's %zu bytes (set it to "
                           "sizeof(cml_backend_vtable_t))",
                           name, vtable->struct_size, minimum);
  }
  memset(backend, 0, sizeof *backend);
  cml__refcount_init(&backend->refcount);
  backend->vtable = vtable;
  backend->allocator = allocator;
  backend->device_count = device_count;
  backend->capabilities.max_rank = CML_MAX_RANK;
  // Every backend runs single-device modules; a backend adds the bits of the strategies it runs.
  backend->capabilities.distributions = 1u << CML_DISTRIBUTION_NONE;
  backend->name = cml__runtime_strdup(allocator, name);
  backend->config = cml__runtime_strdup(allocator, config ? config : "");
  backend->description = cml__runtime_strdup(allocator, name);
  if (!backend->name || !backend->config || !backend->description) {
    cml_backend_deinit_base(backend);
    return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED,
                           "cml_backend_init_base: out of memory for backend \"%s\"", name);
  }
  return CML_OK;
}

void cml_backend_deinit_base(cml_backend_t* backend) {
  if (!backend) return;
  cml__runtime_strfree(backend->allocator, backend->name);
  cml__runtime_strfree(backend->allocator, backend->config);
  cml__runtime_strfree(backend->allocator, backend->description);
  backend->name = NULL;
  backend->config = NULL;
  backend->description = NULL;
}

cml_status_t cml_backend_set_description(cml_backend_t* backend, const char* description) {
  if (!backend || !description) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "cml_backend_set_description: NULL backend or description");
  }
  char* copy = cml__runtime_strdup(backend->allocator, description);
  if (!copy) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  cml__runtime_strfree(backend->allocator, backend->description);
  backend->description = copy;
  return CML_OK;
}

//===--- reference counting ---===//

cml_backend_t* cml_backend_retain(cml_backend_t* backend) {
  if (backend) cml__refcount_retain(&backend->refcount);
  return backend;
}

void cml_backend_release(cml_backend_t* backend) {
  if (!backend) return;
  if (cml__refcount_release(&backend->refcount)) {
    if (CML__VTABLE_HAS(backend->vtable, destroy)) backend->vtable->destroy(backend);
  }
}

//===--- identity and devices ---===//

const char* cml_backend_name(const cml_backend_t* backend) {
  return (backend && backend->name) ? backend->name : "";
}

const char* cml_backend_config(const cml_backend_t* backend) {
  return (backend && backend->config) ? backend->config : "";
}

const char* cml_backend_description(const cml_backend_t* backend) {
  return (backend && backend->description) ? backend->description : "";
}

int cml_backend_device_count(const cml_backend_t* backend) {
  return backend ? backend->device_count : 0;
}

const char* cml_backend_device_description(const cml_backend_t* backend, int device) {
  if (!backend || device < 0 || device >= backend->device_count) return "invalid device";
  const cml_backend_vtable_t* vt = backend->vtable;
  if (CML__VTABLE_HAS(vt, device_description)) {
    const char* d = vt->device_description(backend, device);
    if (d) return d;
  }
  // The default "<name>:<device>", in per-thread storage (valid until this thread's next call).
  static _Thread_local char text[96];
  snprintf(text, sizeof text, "%s:%d", cml_backend_name(backend), device);
  return text;
}

void cml_backend_process_info(const cml_backend_t* backend, cml_process_info_t* out) {
  if (!out) return;
  memset(out, 0, sizeof *out);
  if (!backend) return;
  out->process_count = 1;
  out->local_device_count = backend->device_count;
  const cml_backend_vtable_t* vt = backend->vtable;
  if (CML__VTABLE_HAS(vt, process_info)) vt->process_info(backend, out);
}

bool cml_backend_device_is_local(const cml_backend_t* backend, int device) {
  if (!backend || device < 0 || device >= backend->device_count) return false;
  cml_process_info_t info;
  cml_backend_process_info(backend, &info);
  return device >= info.first_local_device &&
         device < info.first_local_device + info.local_device_count;
}

//===--- capabilities ---===//

const cml_capabilities_t* cml_backend_capabilities(const cml_backend_t* backend) {
  return backend ? &backend->capabilities : NULL;
}

bool cml_capabilities_has_op(const cml_capabilities_t* caps, cml_op_t op) {
  if (!caps || (int)op < 0 || op >= CML_OP_COUNT) return false;
  return (caps->ops[op / 64] >> (op % 64)) & 1u;
}

bool cml_capabilities_has_dtype(const cml_capabilities_t* caps, cml_dtype_t dtype) {
  if (!caps || (int)dtype <= 0 || dtype >= CML_DTYPE_COUNT) return false;
  return (caps->dtypes & CML_DTYPE_BIT(dtype)) != 0;
}

void cml_capabilities_set_op(cml_capabilities_t* caps, cml_op_t op, bool on) {
  if (!caps || (int)op < 0 || op >= CML_OP_COUNT) return;
  uint64_t bit = (uint64_t)1 << (op % 64);
  if (on) {
    caps->ops[op / 64] |= bit;
  } else {
    caps->ops[op / 64] &= ~bit;
  }
}

bool cml_backend_has_shared_buffers(const cml_backend_t* backend) {
  if (!backend || !backend->vtable) return false;
  const cml_backend_vtable_t* vt = backend->vtable;
  return backend->capabilities.shared_buffers && CML__VTABLE_HAS(vt, buffer_create_shared);
}

const void* cml_backend_get_extension(const cml_backend_t* backend, const char* name) {
  if (!backend || !name || !backend->vtable) return NULL;
  const cml_backend_vtable_t* vt = backend->vtable;
  if (!CML__VTABLE_HAS(vt, get_extension)) return NULL;
  return vt->get_extension(backend, name);
}
