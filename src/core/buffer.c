// SPDX-License-Identifier: Apache-2.0
// src/core/buffer.c: buffers on devices: the checked public wrappers and the base helpers.
#include <stdio.h>
#include <string.h>

#include "base/base_internal.h"
#include "core/runtime_internal.h"

//===--- base helpers for implementers ---===//

void cml_buffer_init_base(cml_buffer_t* buffer, cml_backend_t* backend, const cml_shape_t* shape,
                          int device, bool shared) {
  if (!buffer) return;
  cml__refcount_init(&buffer->refcount);
  buffer->backend = cml_backend_retain(backend);
  if (shape) {
    buffer->shape = *shape;
  } else {
    memset(&buffer->shape, 0, sizeof buffer->shape);
  }
  buffer->device = device;
  cml__donated_store(&buffer->donated, false);
  buffer->shared = shared;
  __atomic_store_n(&buffer->users, 0, __ATOMIC_SEQ_CST);
}

void cml_buffer_deinit_base(cml_buffer_t* buffer) {
  if (!buffer) return;
  cml_backend_t* backend = buffer->backend;
  buffer->backend = NULL;
  cml_backend_release(backend);
}

//===--- shared checks ---===//

// Checks |device| against |backend|'s devices.
cml_status_t cml__check_device(const char* what, const cml_backend_t* backend, int device) {
  if (device < 0 || device >= backend->device_count) {
    return cml_status_make(CML_STATUS_OUT_OF_RANGE,
                           "%s: device %d is out of range: backend \"%s\" has %d device(s) "
                           "(0..%d)",
                           what, device, cml_backend_name(backend), backend->device_count,
                           backend->device_count - 1);
  }
  return CML_OK;
}

// Checks that |shape| is well formed and that |backend| supports its dtype.
static cml_status_t cml__check_buffer_shape(const char* what, const cml_backend_t* backend,
                                            const cml_shape_t* shape) {
  if (!shape) return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: NULL shape", what);
  cml_shape_t copy;
  if (shape->rank < 0 || shape->rank > CML_MAX_RANK) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: shape rank %d is out of 0..%d", what,
                           (int)shape->rank, CML_MAX_RANK);
  }
  cml_status_t st = cml_shape_init(&copy, shape->dtype, shape->rank, shape->dims);
  if (st != CML_OK) return cml_status_annotate(st, "%s", what);
  if (!cml_capabilities_has_dtype(&backend->capabilities, shape->dtype)) {
    char text[160];
    return cml_status_make(CML_STATUS_UNIMPLEMENTED,
                           "%s: backend \"%s\" does not support dtype %s (shape %s)", what,
                           cml_backend_name(backend), cml_dtype_name(shape->dtype),
                           cml_shape_format(shape, text, sizeof text));
  }
  return CML_OK;
}

// Checks that |buffer| can be used (non-NULL, not donated). A released buffer cannot be
// detected (its memory is gone; see cml_buffer_release): the backend check only catches a buffer
// a backend left without one.
static cml_status_t cml__check_live_buffer(const char* what, const cml_buffer_t* buffer) {
  if (!buffer) return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: NULL buffer", what);
  if (!buffer->backend || !buffer->backend->vtable) {
    return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                           "%s: the buffer has no backend (not initialized by its backend)", what);
  }
  if (cml__donated_load(&buffer->donated)) {
    char text[160];
    return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                           "%s: buffer was donated to an execution and can no longer be used "
                           "(shape %s, device %d)",
                           what, cml_shape_format(&buffer->shape, text, sizeof text),
                           buffer->device);
  }
  return CML_OK;
}

// Begins a use of |buffer| (runtime_internal.h) for a copy, or says why it cannot.
static cml_status_t cml__begin_copy(const char* what, cml_buffer_t* buffer) {
  switch (cml__buffer_use_begin(buffer)) {
    case CML__USE_OK:
      return CML_OK;
    case CML__USE_FULL:
      return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED,
                             "%s: 32767 executions and copies read the buffer at once", what);
    default: {
      // Donated meanwhile (or claimed by a donation that may still back off): no use began, so
      // this must fail whatever the flag says by now (an OK here let the copy run unaccounted
      // and its use_end take another reader's count).
      cml_status_t st = cml__check_live_buffer(what, buffer);
      if (st != CML_OK) return st;
      return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                             "%s: the buffer is being donated to an execution", what);
    }
  }
}

static cml_status_t cml__check_size(const char* what, const cml_shape_t* shape, size_t size) {
  size_t want = cml_shape_byte_size(shape);
  if (size != want) {
    char text[160];
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "%s: %zu bytes given, but shape %s holds %zu bytes", what, size,
                           cml_shape_format(shape, text, sizeof text), want);
  }
  return CML_OK;
}

static cml_status_t cml__unimplemented_entry(const char* what, const cml_backend_t* backend) {
  return cml_status_make(CML_STATUS_UNIMPLEMENTED, "%s: backend \"%s\" does not implement it", what,
                         cml_backend_name(backend));
}

//===--- public wrappers ---===//

cml_status_t cml_buffer_from_host(cml_backend_t* backend, int device, const cml_shape_t* shape,
                                  const void* data, size_t size, cml_buffer_t** out_buffer) {
  static const char what[] = "cml_buffer_from_host";
  if (!out_buffer) return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: NULL out_buffer", what);
  *out_buffer = NULL;
  if (!backend || !backend->vtable) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: NULL backend", what);
  }
  CML_RETURN_IF_ERROR(cml__check_device(what, backend, device));
  CML_RETURN_IF_ERROR(cml__check_buffer_shape(what, backend, shape));
  CML_RETURN_IF_ERROR(cml__check_size(what, shape, size));
  if (!data && size > 0) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: NULL data for %zu bytes", what, size);
  }
  if (!CML__VTABLE_HAS(backend->vtable, buffer_from_host)) {
    return cml__unimplemented_entry(what, backend);
  }
  cml_buffer_t* buffer = NULL;
  const uint32_t fpenv = cml__fpenv_enter(CML__FPENV_IEEE);
  cml_status_t st = backend->vtable->buffer_from_host(backend, device, shape, data, &buffer);
  cml__fpenv_leave(fpenv);
  CML_RETURN_IF_ERROR(st);
  if (!buffer) {
    return cml_status_make(CML_STATUS_INTERNAL, "%s: backend \"%s\" returned no buffer", what,
                           cml_backend_name(backend));
  }
  *out_buffer = buffer;
  return CML_OK;
}

cml_status_t cml_buffer_copy_to_host(cml_buffer_t* buffer, void* dst, size_t size) {
  static const char what[] = "cml_buffer_copy_to_host";
  CML_RETURN_IF_ERROR(cml__check_live_buffer(what, buffer));
  CML_RETURN_IF_ERROR(cml__check_size(what, &buffer->shape, size));
  if (!dst && size > 0) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: NULL destination for %zu bytes", what,
                           size);
  }
  if (size == 0) return CML_OK;
  if (!CML__VTABLE_HAS(buffer->backend->vtable, buffer_copy_to_host)) {
    return cml__unimplemented_entry(what, buffer->backend);
  }
  CML_RETURN_IF_ERROR(cml__begin_copy(what, buffer));
  const uint32_t fpenv = cml__fpenv_enter(CML__FPENV_IEEE);
  cml_status_t st = buffer->backend->vtable->buffer_copy_to_host(buffer, dst, size);
  cml__fpenv_leave(fpenv);
  cml__buffer_use_end(buffer);
  return st;
}

cml_status_t cml_buffer_create_shared(cml_backend_t* backend, int device, const cml_shape_t* shape,
                                      cml_buffer_t** out_buffer, void** out_data) {
  static const char what[] = "cml_buffer_create_shared";
  if (out_buffer) *out_buffer = NULL;
  if (out_data) *out_data = NULL;
  if (!out_buffer || !out_data) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: NULL out_buffer or out_data", what);
  }
  if (!backend || !backend->vtable) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: NULL backend", what);
  }
  CML_RETURN_IF_ERROR(cml__check_device(what, backend, device));
  CML_RETURN_IF_ERROR(cml__check_buffer_shape(what, backend, shape));
  if (!cml_backend_has_shared_buffers(backend)) {
    return cml_status_make(CML_STATUS_UNIMPLEMENTED,
                           "%s: backend \"%s\" does not support shared buffers", what,
                           cml_backend_name(backend));
  }
  cml_buffer_t* buffer = NULL;
  void* data = NULL;
  const uint32_t fpenv = cml__fpenv_enter(CML__FPENV_IEEE);
  cml_status_t st = backend->vtable->buffer_create_shared(backend, device, shape, &buffer, &data);
  cml__fpenv_leave(fpenv);
  CML_RETURN_IF_ERROR(st);
  if (!buffer || (!data && cml_shape_byte_size(shape) > 0)) {
    if (buffer) cml_buffer_release(buffer);
    return cml_status_make(CML_STATUS_INTERNAL, "%s: backend \"%s\" returned no buffer or data",
                           what, cml_backend_name(backend));
  }
  buffer->shared = true;
  *out_buffer = buffer;
  *out_data = data;
  return CML_OK;
}

cml_status_t cml_buffer_data(cml_buffer_t* buffer, void** out_data) {
  static const char what[] = "cml_buffer_data";
  if (!out_data) return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: NULL out_data", what);
  *out_data = NULL;
  CML_RETURN_IF_ERROR(cml__check_live_buffer(what, buffer));
  if (!buffer->shared) {
    return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                           "%s: not a shared buffer (create it with cml_buffer_create_shared)",
                           what);
  }
  if (!CML__VTABLE_HAS(buffer->backend->vtable, buffer_data)) {
    return cml__unimplemented_entry(what, buffer->backend);
  }
  return buffer->backend->vtable->buffer_data(buffer, out_data);
}

cml_status_t cml_buffer_copy_to_device(cml_buffer_t* buffer, int device,
                                       cml_buffer_t** out_buffer) {
  static const char what[] = "cml_buffer_copy_to_device";
  if (!out_buffer) return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: NULL out_buffer", what);
  *out_buffer = NULL;
  CML_RETURN_IF_ERROR(cml__check_live_buffer(what, buffer));
  CML_RETURN_IF_ERROR(cml__check_device(what, buffer->backend, device));
  if (device == buffer->device) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "%s: the buffer is already on device %d",
                           what, device);
  }
  if (!CML__VTABLE_HAS(buffer->backend->vtable, buffer_copy_to_device)) {
    return cml__unimplemented_entry(what, buffer->backend);
  }
  cml_buffer_t* copy = NULL;
  CML_RETURN_IF_ERROR(cml__begin_copy(what, buffer));
  const uint32_t fpenv = cml__fpenv_enter(CML__FPENV_IEEE);
  cml_status_t copied = buffer->backend->vtable->buffer_copy_to_device(buffer, device, &copy);
  cml__fpenv_leave(fpenv);
  cml__buffer_use_end(buffer);
  CML_RETURN_IF_ERROR(copied);
  if (!copy) {
    return cml_status_make(CML_STATUS_INTERNAL, "%s: backend \"%s\" returned no buffer", what,
                           cml_backend_name(buffer->backend));
  }
  *out_buffer = copy;
  return CML_OK;
}

//===--- accessors and reference counting ---===//

const cml_shape_t* cml_buffer_shape(const cml_buffer_t* buffer) {
  return buffer ? &buffer->shape : NULL;
}

int cml_buffer_device(const cml_buffer_t* buffer) { return buffer ? buffer->device : -1; }

cml_backend_t* cml_buffer_backend(const cml_buffer_t* buffer) {
  return buffer ? buffer->backend : NULL;
}

bool cml_buffer_is_valid(const cml_buffer_t* buffer) {
  return buffer && buffer->backend && !cml__donated_load(&buffer->donated);
}

cml_buffer_t* cml_buffer_retain(cml_buffer_t* buffer) {
  if (buffer) cml__refcount_retain(&buffer->refcount);
  return buffer;
}

void cml_buffer_release(cml_buffer_t* buffer) {
  if (!buffer) return;
  if (cml__refcount_release(&buffer->refcount)) {
    cml_backend_t* backend = buffer->backend;
    if (backend && CML__VTABLE_HAS(backend->vtable, buffer_destroy)) {
      backend->vtable->buffer_destroy(buffer);
    }
  }
}
