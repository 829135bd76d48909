// SPDX-License-Identifier: Apache-2.0
// src/backends/null/null.c: the "null" backend, a compiling template to copy for a new backend.
//
// Every vtable entry is present and returns UNIMPLEMENTED; the backend has one device and no
// capabilities, so the core rejects every op and dtype before reaching it. To start a backend:
// copy this file, rename the `cml_null_` prefix and CML_NULL_NAME, and work through the
// `TODO(new-backend):` notes. It uses only the installed public headers, so the copy builds out
// of tree as a shared-library plug-in that exports `cml_plugin_query` (the stubs ignore their
// arguments, hence -Wno-unused-parameter):
//
//   cc -std=c11 -Wall -Wextra -Wno-unused-parameter -shared -fPIC -o libcml_mine.so mine.c
//      $(pkg-config --cflags --libs cml)        (one command line)
//
// and a program loads it with `cml_plugin_load("./libcml_mine.so")`, then creates it with
// `cml_backend_new_with_config("mine")`. Alternatively, link it into the program and call
// `cml_backend_register(&factory)`. Inside cml it is compiled with CML_NULL_BUILTIN (no
// `cml_plugin_query`) and registered as the built-in "null" backend.
#include <stdint.h>
#include <string.h>

#include "cml/backend_impl.h"

// TODO(new-backend): the backend's registered name (GOMLX_BACKEND="<name>:<options>").
#ifndef CML_NULL_NAME
#define CML_NULL_NAME "null"
#endif

// TODO(new-backend): add the backend's state (device handles, thread pool, options) here. The
// base must stay at offset 0: the core casts between the two.
typedef struct cml_null_backend_t {
  cml_backend_t base;
} cml_null_backend_t;

static void cml_null_destroy(cml_backend_t* backend) {
  // TODO(new-backend): release devices and pools before the base.
  cml_allocator_t allocator = backend->allocator;
  cml_backend_deinit_base(backend);
  cml_allocator_free(allocator, backend, sizeof(cml_null_backend_t));
}

static const char* cml_null_device_description(const cml_backend_t* backend, int device) {
  // TODO(new-backend): describe the device ("gpu:0 (H100, 80 GiB)"). NULL uses "<name>:<n>".
  return NULL;
}

static cml_status_t cml_null_buffer_from_host(cml_backend_t* backend, int device,
                                              const cml_shape_t* shape, const void* data,
                                              cml_buffer_t** out_buffer) {
  // TODO(new-backend): allocate device memory, copy |data| in, and set up the buffer's base
  // with cml_buffer_init_base(buffer, backend, shape, device, false).
  return cml_status_make(CML_STATUS_UNIMPLEMENTED, CML_NULL_NAME " backend: buffer_from_host");
}

static cml_status_t cml_null_buffer_copy_to_host(cml_buffer_t* buffer, void* dst, size_t size) {
  // TODO(new-backend): copy the buffer's |size| bytes to |dst| (the core checked |size|).
  return cml_status_make(CML_STATUS_UNIMPLEMENTED, CML_NULL_NAME " backend: buffer_copy_to_host");
}

static cml_status_t cml_null_buffer_create_shared(cml_backend_t* backend, int device,
                                                  const cml_shape_t* shape,
                                                  cml_buffer_t** out_buffer, void** out_data) {
  // TODO(new-backend): optional. Set capabilities.shared_buffers when implemented.
  return cml_status_make(CML_STATUS_UNIMPLEMENTED, CML_NULL_NAME " backend: buffer_create_shared");
}

static cml_status_t cml_null_buffer_data(cml_buffer_t* buffer, void** out_data) {
  // TODO(new-backend): return a shared buffer's host pointer.
  return cml_status_make(CML_STATUS_UNIMPLEMENTED, CML_NULL_NAME " backend: buffer_data");
}

static cml_status_t cml_null_buffer_copy_to_device(cml_buffer_t* buffer, int device,
                                                   cml_buffer_t** out_buffer) {
  // TODO(new-backend): device-to-device copy (the core checked that |device| differs).
  return cml_status_make(CML_STATUS_UNIMPLEMENTED, CML_NULL_NAME " backend: buffer_copy_to_device");
}

static void cml_null_buffer_destroy(cml_buffer_t* buffer) {
  // TODO(new-backend): free the storage, then cml_buffer_deinit_base(buffer), then the buffer.
  // The null backend never creates buffers, so there is nothing to free.
}

static cml_status_t cml_null_compile(cml_backend_t* backend, cml_module_t* module,
                                     cml_executable_t** out_executable) {
  // TODO(new-backend): walk module->functions[0] (see cml/ir.h), build the program, and set up
  // the executable's base with cml_executable_init_base(exe, backend, module).
  return cml_status_make(CML_STATUS_UNIMPLEMENTED, CML_NULL_NAME " backend: compile");
}

static cml_status_t cml_null_execute(cml_executable_t* executable, cml_buffer_t* const* inputs,
                                     const bool* donate, int device, cml_buffer_t** out_results) {
  // TODO(new-backend): run with the validated |inputs|; write output_count new buffers.
  return cml_status_make(CML_STATUS_UNIMPLEMENTED, CML_NULL_NAME " backend: execute");
}

static void cml_null_executable_destroy(cml_executable_t* executable) {
  // TODO(new-backend): free the program, then cml_executable_deinit_base(executable).
  // The null backend never creates executables, so there is nothing to free.
}

static const void* cml_null_get_extension(const cml_backend_t* backend, const char* name) {
  // TODO(new-backend): return backend-specific extension tables by name.
  return NULL;
}

static const cml_backend_vtable_t cml_null_vtable = {
    .struct_size = sizeof(cml_backend_vtable_t),
    .destroy = cml_null_destroy,
    .device_description = cml_null_device_description,
    .buffer_from_host = cml_null_buffer_from_host,
    .buffer_copy_to_host = cml_null_buffer_copy_to_host,
    .buffer_create_shared = cml_null_buffer_create_shared,
    .buffer_data = cml_null_buffer_data,
    .buffer_copy_to_device = cml_null_buffer_copy_to_device,
    .buffer_destroy = cml_null_buffer_destroy,
    .compile = cml_null_compile,
    .execute = cml_null_execute,
    .executable_destroy = cml_null_executable_destroy,
    .get_extension = cml_null_get_extension,
};

static cml_status_t cml_null_create(const char* config, cml_allocator_t allocator,
                                    cml_backend_t** out_backend) {
  *out_backend = NULL;
  // TODO(new-backend): declare the options (cml_option_spec_t, see cml/backend_impl.h). With
  // none, any option is an INVALID_ARGUMENT and "help" lists none.
  CML_RETURN_IF_ERROR(cml_config_parse(CML_NULL_NAME, config, NULL, 0, NULL, NULL));
  cml_null_backend_t* b = (cml_null_backend_t*)cml_allocator_malloc(allocator, sizeof *b, 64);
  if (!b) {
    return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, CML_NULL_NAME " backend: out of memory");
  }
  memset(b, 0, sizeof *b);
  cml_status_t st =
      cml_backend_init_base(&b->base, &cml_null_vtable, allocator, CML_NULL_NAME, CML_NULL_NAME, 1);
  if (st == CML_OK) {
    st = cml_backend_set_description(&b->base,
                                     "template backend: every operation is "
                                     "unimplemented");
    if (st != CML_OK) cml_backend_deinit_base(&b->base);
  }
  if (st != CML_OK) {
    cml_allocator_free(allocator, b, sizeof *b);
    return st;
  }
  // TODO(new-backend): fill b->base.capabilities: cml_capabilities_set_op(...) for each op,
  // .dtypes = CML_DTYPE_BIT(CML_DTYPE_F32) | ..., .functions, .shared_buffers.
  *out_backend = &b->base;
  return CML_OK;
}

// The factory: the built-in registry refers to it by name (cml's core/runtime_internal.h); a
// plug-in hands it out through cml_plugin_query below.
extern const cml_backend_factory_t cml_null_backend_factory;
const cml_backend_factory_t cml_null_backend_factory = {
    .struct_size = sizeof(cml_backend_factory_t),
    .api_major = CML_BACKEND_API_MAJOR,
    .api_minor = CML_BACKEND_API_MINOR,
    .name = CML_NULL_NAME,
    .aliases = NULL,
    .description = "template backend: every operation is unimplemented",
    .config_help = "  (no options)\n",
    .create = cml_null_create,
    // TODO(new-backend): set .default_priority to take part in the default selection.
    .default_priority = NULL,
};

#ifndef CML_NULL_BUILTIN
// The plug-in entry point (cml_plugin_load calls it). A host built for another major version
// gets NULL: the plug-in cannot serve it.
CML_API const cml_backend_factory_t* cml_plugin_query(uint32_t host_api_major);
const cml_backend_factory_t* cml_plugin_query(uint32_t host_api_major) {
  return host_api_major == CML_BACKEND_API_MAJOR ? &cml_null_backend_factory : NULL;
}
#endif
