// SPDX-License-Identifier: Apache-2.0
// cml/backend.h: choosing a backend, its devices and capabilities, and buffers on devices.
//
// `cml_backend_new()` reads GOMLX_BACKEND (the seed's variable); when it is unset the best
// available backend is chosen (XLA on an accelerator, otherwise the pure C backend).
// `cml_backend_new_with_config("xla:cuda,preallocate=true")` takes the same string:
// `<name>[:<config>]`, split at the first ':'. Unknown names and options are errors that list
// what is valid; the config "help" returns the option list as the error message.
//
// Example:
//
//   cml_backend_t* backend = NULL;
//   CML_RETURN_IF_ERROR(cml_backend_new_with_config("c", &backend));
//   printf("%s: %d device(s)\n", cml_backend_name(backend), cml_backend_device_count(backend));
//   float host[6] = {1, 2, 3, 4, 5, 6};
//   cml_shape_t s = cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){2, 3});
//   cml_buffer_t* buf = NULL;
//   CML_RETURN_IF_ERROR(cml_buffer_from_host(backend, 0, &s, host, sizeof host, &buf));
//   float back[6];
//   CML_RETURN_IF_ERROR(cml_buffer_copy_to_host(buf, back, sizeof back));
//   cml_buffer_release(buf);
//   cml_backend_release(backend);
//
// Thread-safety: backends and buffers are thread-safe (refcounts are atomic); a buffer must not
// be written (shared data pointer) while an execution reads it.
#ifndef CML_BACKEND_H_
#define CML_BACKEND_H_

#include "cml/base.h"
#include "cml/graph.h"
#include "cml/shape.h"

#ifdef __cplusplus
extern "C" {
#endif

//===--- creation and registry ---===//

// The environment variable read by `cml_backend_new`.
#define CML_BACKEND_ENV "GOMLX_BACKEND"

// Creates the backend named by GOMLX_BACKEND when it is set (even empty), else the default
// (see `cml_backend_default_config`). Returns NOT_FOUND for an unknown name (the message lists
// registered backends), INVALID_ARGUMENT for a bad option, UNAVAILABLE when the backend cannot
// start (e.g. no PJRT plugin).
CML_API CML_MUST_USE cml_status_t cml_backend_new(cml_backend_t** out_backend);

// Creates a backend from a config string `<name>[:<config>]`. An empty string picks the default.
CML_API CML_MUST_USE cml_status_t cml_backend_new_with_config(const char* config,
                                                              cml_backend_t** out_backend);

// As above with an explicit allocator for the backend and everything it creates.
CML_API CML_MUST_USE cml_status_t cml_backend_create(const char* config,
                                                     cml_allocator_t allocator,
                                                     cml_backend_t** out_backend);

CML_API cml_backend_t* cml_backend_retain(cml_backend_t* backend);
CML_API void cml_backend_release(cml_backend_t* backend);

// Registered backend names, in registration order (aliases are not listed).
CML_API size_t cml_backend_registered_count(void);
CML_API const char* cml_backend_registered_name(size_t i);
// The comma-separated aliases of registered backend |name| ("" when none); NULL if unknown.
CML_API const char* cml_backend_registered_aliases(const char* name);
// The option help text of registered backend |name| (NULL if unknown).
CML_API const char* cml_backend_config_help(const char* name);

// The config `cml_backend_new()` would use now and why ("GOMLX_BACKEND is set", "no
// accelerator found: the c backend", ...). Both strings are lent (static storage, valid until
// the next call from any thread: copy them if needed).
CML_API void cml_backend_default_config(const char** out_config, const char** out_reason);

//===--- identity, devices, capabilities ---===//

CML_API const char* cml_backend_name(const cml_backend_t* backend);  // "c", "xla"
// The full config the backend runs with, e.g. "xla:cpu,shared_buffers=true,...".
CML_API const char* cml_backend_config(const cml_backend_t* backend);
CML_API const char* cml_backend_description(const cml_backend_t* backend);
CML_API int cml_backend_device_count(const cml_backend_t* backend);
// Description of |device| ("cpu:0 (AVX-512, 2 threads)"); "invalid device" when out of range.
CML_API const char* cml_backend_device_description(const cml_backend_t* backend, int device);

typedef struct cml_capabilities_t {
  uint64_t ops[(CML_OP_COUNT + 63) / 64];  // bit op set: the op is supported
  cml_dtype_set_t dtypes;                  // dtypes buffers and ops may use
  bool functions;                          // closures, Call, While, If, Sort
  bool dynamic_axes;
  bool prefer_constants_for_variables;
  bool shared_buffers;
  int32_t max_rank;
} cml_capabilities_t;

// The backend's capabilities (lent; lives with the backend).
CML_API const cml_capabilities_t* cml_backend_capabilities(const cml_backend_t* backend);
CML_API bool cml_capabilities_has_op(const cml_capabilities_t* caps, cml_op_t op);
CML_API bool cml_capabilities_has_dtype(const cml_capabilities_t* caps, cml_dtype_t dtype);
CML_API void cml_capabilities_set_op(cml_capabilities_t* caps, cml_op_t op, bool on);

// A backend-specific extension table by name (e.g. "xla"), or NULL.
CML_API const void* cml_backend_get_extension(const cml_backend_t* backend, const char* name);

//===--- buffers ---===//

// Copies |size| bytes (exactly cml_shape_byte_size(shape)) from |data| into a new buffer on
// |device|. Returns OUT_OF_RANGE for a bad device, INVALID_ARGUMENT for a size mismatch or bad
// shape, UNIMPLEMENTED for a dtype the backend does not support.
CML_API CML_MUST_USE cml_status_t cml_buffer_from_host(cml_backend_t* backend, int device,
                                                       const cml_shape_t* shape,
                                                       const void* data, size_t size,
                                                       cml_buffer_t** out_buffer);

// Copies the buffer's contents to |dst| (|size| must equal the byte size).
CML_API CML_MUST_USE cml_status_t cml_buffer_copy_to_host(cml_buffer_t* buffer, void* dst,
                                                          size_t size);

// True when the backend supports shared buffers (host memory used directly as device memory).
CML_API bool cml_backend_has_shared_buffers(const cml_backend_t* backend);

// Creates a buffer whose storage the caller can read and write through |out_data| (valid while
// the buffer lives). It must not be written while an execution uses it and cannot be donated.
CML_API CML_MUST_USE cml_status_t cml_buffer_create_shared(cml_backend_t* backend, int device,
                                                           const cml_shape_t* shape,
                                                           cml_buffer_t** out_buffer,
                                                           void** out_data);

// The direct data pointer of a shared buffer (FAILED_PRECONDITION for others).
CML_API CML_MUST_USE cml_status_t cml_buffer_data(cml_buffer_t* buffer, void** out_data);

// Copies |buffer| to another device of the same backend (INVALID_ARGUMENT if it is the same).
CML_API CML_MUST_USE cml_status_t cml_buffer_copy_to_device(cml_buffer_t* buffer, int device,
                                                            cml_buffer_t** out_buffer);

CML_API const cml_shape_t* cml_buffer_shape(const cml_buffer_t* buffer);
CML_API int cml_buffer_device(const cml_buffer_t* buffer);
CML_API cml_backend_t* cml_buffer_backend(const cml_buffer_t* buffer);
// False once the buffer was donated to an execution.
CML_API bool cml_buffer_is_valid(const cml_buffer_t* buffer);

CML_API cml_buffer_t* cml_buffer_retain(cml_buffer_t* buffer);
CML_API void cml_buffer_release(cml_buffer_t* buffer);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_BACKEND_H_
