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
// Ownership: what `cml_backend_new*`/`cml_backend_create` and the `cml_buffer_*` constructors
// return belongs to the caller, who drops it with `cml_*_release`. A buffer retains its backend,
// so the backend lives until its last buffer (and executable) is released. Strings and shapes
// returned by accessors are lent and live as long as their object.
//
// Thread-safety: backends and buffers are thread-safe (refcounts are atomic); a buffer must not
// be written (shared data pointer) while an execution reads it. The registry functions are
// thread-safe.
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
// registered backends) or a PJRT plugin that is not installed, INVALID_ARGUMENT for a bad or
// unknown option, UNAVAILABLE when the backend cannot start (e.g. a plugin file that does not
// load).
CML_API CML_MUST_USE cml_status_t cml_backend_new(cml_backend_t** out_backend);

// Creates a backend from a config string `<name>[:<config>]` with the system allocator. |config|
// NULL or empty picks the registered backends' default, as the seed's NewWithConfig("") does:
// the choice `cml_backend_new` makes when GOMLX_BACKEND is unset. It does not read GOMLX_BACKEND;
// call `cml_backend_new` to honour it. Returns NOT_FOUND for an unknown name, INVALID_ARGUMENT
// for a malformed config or unknown option (and for "<name>:help", whose message is the option
// list), UNAVAILABLE when no default backend can start, or the backend's own status.
CML_API CML_MUST_USE cml_status_t cml_backend_new_with_config(const char* config,
                                                              cml_backend_t** out_backend);

// As `cml_backend_new_with_config` with an explicit |allocator| for the backend and everything
// it creates (INVALID_ARGUMENT when the allocator has no function).
CML_API CML_MUST_USE cml_status_t cml_backend_create(const char* config, cml_allocator_t allocator,
                                                     cml_backend_t** out_backend);

// Loads a backend plug-in (a shared library exporting `cml_plugin_query`, cml/backend_impl.h):
// dlopens |path|, calls its cml_plugin_query and registers the factory, so that
// `cml_backend_new_with_config("<its name>...")` creates it. Returns NOT_FOUND when the file
// cannot be loaded (and on platforms without dynamic loading), INVALID_ARGUMENT when it has no
// such symbol or its name is already registered, INCOMPATIBLE for another backend API. The
// library stays loaded for the life of the process. Thread-safe.
CML_API CML_MUST_USE cml_status_t cml_plugin_load(const char* path);

// Adds a reference to |backend| and returns it (NULL stays NULL). Thread-safe.
CML_API cml_backend_t* cml_backend_retain(cml_backend_t* backend);
// Drops a reference; the last one destroys the backend. NULL is ignored. Thread-safe.
CML_API void cml_backend_release(cml_backend_t* backend);

// Registered backend names, in registration order (aliases are not listed): the count, and name
// |i| (NULL when |i| is out of range). Names are lent and live as long as the process.
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

// The accessors below never fail: a NULL |backend| gives "" (strings) or 0 (counts). Strings are
// lent and live as long as the backend.
//
// The registered name the backend was created under ("c", "xla"), never an alias.
CML_API const char* cml_backend_name(const cml_backend_t* backend);
// The full config the backend runs with, e.g. "xla:cpu,shared_buffers=true,...".
CML_API const char* cml_backend_config(const cml_backend_t* backend);
// A one-line human-readable description (the name unless the backend sets a longer one).
CML_API const char* cml_backend_description(const cml_backend_t* backend);
// The number of devices; buffers and executions address them as 0..count-1.
CML_API int cml_backend_device_count(const cml_backend_t* backend);
// Description of |device| ("cpu:0 (AVX-512, 2 threads)"); "invalid device" when out of range.
// The default text ("<name>:<device>") lives in per-thread storage until this thread's next call.
CML_API const char* cml_backend_device_description(const cml_backend_t* backend, int device);

// Multi-process jobs (e.g. "c:distributed=mpi,devices=2" under mpirun): devices are numbered in
// one global space, process rank x local devices, and cml_backend_device_count counts them all.
// A process holds buffers and runs executions only on its own (local) devices; the entries of
// other processes' devices in device-major input/output arrays are NULL. Outside a multi-process
// job: process_index 0, process_count 1, and every device is local.
typedef struct cml_process_info_t {
  int process_index;       // this process's rank, 0..process_count-1
  int process_count;       // processes in the job
  int first_local_device;  // global number of this process's first device
  int local_device_count;  // this process's devices: first_local_device .. +count-1
} cml_process_info_t;
// Fills *|out| (all zero for a NULL |backend|). Thread-safe.
CML_API void cml_backend_process_info(const cml_backend_t* backend, cml_process_info_t* out);
// True when |device| (a global number) belongs to this process.
CML_API bool cml_backend_device_is_local(const cml_backend_t* backend, int device);

// What a backend supports. The builder checks ops and dtypes against it when an op is added.
// Room for CML_CAPABILITIES_MAX_OPS ops in the bit set, more than there are: the table grows
// by one op at a time (enums only grow), and the fields after the bit set keep their offsets
// while it does, for backends and bindings built against older headers.
#define CML_CAPABILITIES_MAX_OPS 512
typedef struct cml_capabilities_t {
  uint64_t ops[CML_CAPABILITIES_MAX_OPS / 64];  // bit op set: the op is supported
  cml_dtype_set_t dtypes;                       // dtypes buffers and ops may use
  bool functions;                               // closures, Call, While, If, Sort
  bool dynamic_axes;
  bool prefer_constants_for_variables;
  bool shared_buffers;
  int32_t max_rank;
  // Bit (1u << cml_distribution_t) set for each distribution strategy the backend runs
  // (cml/distributed.h); NONE is always set.
  uint32_t distributions;
} cml_capabilities_t;

// The backend's capabilities (lent; lives with the backend; NULL for a NULL backend).
CML_API const cml_capabilities_t* cml_backend_capabilities(const cml_backend_t* backend);
// Bit tests on |caps|: false for NULL |caps| or an out-of-range op / dtype.
CML_API bool cml_capabilities_has_op(const cml_capabilities_t* caps, cml_op_t op);
CML_API bool cml_capabilities_has_dtype(const cml_capabilities_t* caps, cml_dtype_t dtype);
// Sets or clears |op| in |caps| (for backend implementers filling their table); out-of-range ops
// and NULL |caps| are ignored. Not thread-safe on a table others read.
CML_API void cml_capabilities_set_op(cml_capabilities_t* caps, cml_op_t op, bool on);

// A backend-specific extension table by name (e.g. "xla"), or NULL when the backend has none by
// that name. The table is lent and lives as long as the backend.
CML_API const void* cml_backend_get_extension(const cml_backend_t* backend, const char* name);

//===--- buffers ---===//

// Copies |size| bytes (exactly cml_shape_byte_size(shape)) from |data| into a new buffer on
// |device|; the caller owns *|out_buffer| and may reuse |data| at once. Returns OUT_OF_RANGE for a
// bad device, INVALID_ARGUMENT for NULL arguments (|data| may be NULL when |size| is 0: a shape
// with no elements), a size mismatch or bad shape, UNIMPLEMENTED for a dtype the backend does not
// support, RESOURCE_EXHAUSTED when out of memory.
CML_API CML_MUST_USE cml_status_t cml_buffer_from_host(cml_backend_t* backend, int device,
                                                       const cml_shape_t* shape, const void* data,
                                                       size_t size, cml_buffer_t** out_buffer);

// Copies the buffer's contents to |dst|. Returns INVALID_ARGUMENT when |size| differs from the
// buffer's byte size or |dst| is NULL (a buffer with no elements, |size| 0, takes a NULL |dst|),
// FAILED_PRECONDITION for a donated buffer.
CML_API CML_MUST_USE cml_status_t cml_buffer_copy_to_host(cml_buffer_t* buffer, void* dst,
                                                          size_t size);

// True when the backend supports shared buffers (host memory used directly as device memory);
// false for NULL.
CML_API bool cml_backend_has_shared_buffers(const cml_backend_t* backend);

// Creates a buffer whose storage the caller can read and write through |out_data| (valid while
// the buffer lives). It must not be written while an execution uses it and cannot be donated.
// The caller owns *|out_buffer|. Returns UNIMPLEMENTED when the backend has no shared buffers
// (see `cml_backend_has_shared_buffers`), and the errors of `cml_buffer_from_host`.
CML_API CML_MUST_USE cml_status_t cml_buffer_create_shared(cml_backend_t* backend, int device,
                                                           const cml_shape_t* shape,
                                                           cml_buffer_t** out_buffer,
                                                           void** out_data);

// The direct data pointer of a shared buffer, lent while the buffer lives (FAILED_PRECONDITION
// for other buffers and donated ones).
CML_API CML_MUST_USE cml_status_t cml_buffer_data(cml_buffer_t* buffer, void** out_data);

// Copies |buffer| to another device of the same backend; the caller owns *|out_buffer|. Returns
// INVALID_ARGUMENT when |device| is the buffer's own, OUT_OF_RANGE for a bad device,
// FAILED_PRECONDITION for a donated buffer, UNIMPLEMENTED when the backend cannot copy.
CML_API CML_MUST_USE cml_status_t cml_buffer_copy_to_device(cml_buffer_t* buffer, int device,
                                                            cml_buffer_t** out_buffer);

// Accessors that never fail: the shape (lent; NULL for NULL), the device (-1 for NULL), and the
// backend (lent, not retained; NULL for NULL).
CML_API const cml_shape_t* cml_buffer_shape(const cml_buffer_t* buffer);
CML_API int cml_buffer_device(const cml_buffer_t* buffer);
CML_API cml_backend_t* cml_buffer_backend(const cml_buffer_t* buffer);
// False once the buffer was donated to an execution. (A released buffer cannot be queried: see
// `cml_buffer_release`.)
CML_API bool cml_buffer_is_valid(const cml_buffer_t* buffer);

// Adds a reference to |buffer| and returns it (NULL stays NULL). Thread-safe.
CML_API cml_buffer_t* cml_buffer_retain(cml_buffer_t* buffer);
// Drops a reference; the last one frees the buffer's storage. NULL is ignored. Thread-safe.
// Once the last reference is dropped, the pointer dangles: passing it to any cml function
// (execute, copy, release again) is undefined behaviour, as for memory after `free`. A donated
// buffer, by contrast, is still allocated and every use is rejected with FAILED_PRECONDITION.
CML_API void cml_buffer_release(cml_buffer_t* buffer);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_BACKEND_H_
