// SPDX-License-Identifier: Apache-2.0
// cml/backend_impl.h: what a backend implements. For backend authors, not for applications.
//
// A backend is a small vtable (never one slot per op) plus a factory that the registry uses to
// create it from a config string. The core checks every argument before dispatching, so vtable
// entries receive valid objects: devices in range, shapes and dtypes that match, buffers that
// are alive and not donated. `src/backends/null/` is a compiling template to copy.
//
// Example (a third-party backend):
//
//   static const cml_backend_vtable_t my_vtable = {
//       .struct_size = sizeof(cml_backend_vtable_t),
//       .destroy = my_destroy, .buffer_from_host = my_from_host, ...};
//   static cml_status_t my_create(const char* config, cml_allocator_t alloc,
//                                 cml_backend_t** out) {
//     my_backend_t* b = cml_allocator_malloc(alloc, sizeof *b, 64);
//     cml_backend_init_base(&b->base, &my_vtable, alloc, "mine", config, 1);
//     cml_capabilities_set_op(&b->base.capabilities, CML_OP_ADD, true); ...
//     *out = &b->base;
//     return CML_OK;
//   }
//   static const cml_backend_factory_t my_factory = {
//       .struct_size = sizeof(cml_backend_factory_t), .api_major = CML_BACKEND_API_MAJOR,
//       .api_minor = CML_BACKEND_API_MINOR, .name = "mine", .create = my_create};
//   cml_backend_register(&my_factory);
//
// A shared-library plug-in exports `cml_plugin_query` (see below) and is loaded with
// `cml_plugin_load(path)`.
#ifndef CML_BACKEND_IMPL_H_
#define CML_BACKEND_IMPL_H_

#include <stdatomic.h>

#include "cml/backend.h"
#include "cml/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CML_BACKEND_API_MAJOR 1
// Minor 1: the optional execute_with_control slot (cancellation and deadlines).
#define CML_BACKEND_API_MINOR 1

// What an interruptible execution must honour (backend API 1.1). Lent for the call; the core
// passes it only when the caller gave a cancel token or a deadline.
typedef struct cml_execute_control_t {
  size_t struct_size;
  // Non-zero once the execution must stop with CML_STATUS_CANCELLED; NULL when no token was
  // given. Read it with atomic_load_explicit(.., memory_order_relaxed): one load, cheap enough
  // to do between every two ops and in every loop iteration.
  const atomic_int* cancelled;
  // Absolute deadline in nanoseconds of cml_clock_monotonic_ns(); 0 when none. Past it the
  // execution must stop with CML_STATUS_DEADLINE_EXCEEDED. Reading the clock costs ~20-80 ns:
  // read it every few dozen cheap checks, or before a large op.
  int64_t deadline_ns;
} cml_execute_control_t;

// The monotonic clock deadlines are measured on (CLOCK_MONOTONIC), in nanoseconds. Thread-safe.
CML_API int64_t cml_clock_monotonic_ns(void);
// Returns CML_OK, or CANCELLED / DEADLINE_EXCEEDED with a message naming |what| when |control|
// says so (reads the clock only when a deadline is set). NULL |control| is OK. Thread-safe.
CML_API CML_MUST_USE cml_status_t cml_execute_control_check(const cml_execute_control_t* control,
                                                            const char* what);

typedef struct cml_backend_vtable_t {
  size_t struct_size;
  // Releases everything the backend owns (called when the last reference goes).
  void (*destroy)(cml_backend_t* backend);
  // Optional: device description (default: "<name>:<device>").
  const char* (*device_description)(const cml_backend_t* backend, int device);

  // Buffers. |shape| and |device| are valid; |data| holds cml_shape_byte_size(shape) bytes.
  cml_status_t (*buffer_from_host)(cml_backend_t* backend, int device, const cml_shape_t* shape,
                                   const void* data, cml_buffer_t** out_buffer);
  cml_status_t (*buffer_copy_to_host)(cml_buffer_t* buffer, void* dst, size_t size);
  // Optional (UNIMPLEMENTED when NULL).
  cml_status_t (*buffer_create_shared)(cml_backend_t* backend, int device, const cml_shape_t* shape,
                                       cml_buffer_t** out_buffer, void** out_data);
  cml_status_t (*buffer_data)(cml_buffer_t* buffer, void** out_data);
  cml_status_t (*buffer_copy_to_device)(cml_buffer_t* buffer, int device,
                                        cml_buffer_t** out_buffer);
  // Frees the buffer's storage and the buffer (it may have been donated).
  void (*buffer_destroy)(cml_buffer_t* buffer);

  // Compiles |module| (retain it with cml_module_retain if kept). The new executable's base is
  // set up with cml_executable_init_base.
  cml_status_t (*compile)(cml_backend_t* backend, cml_module_t* module,
                          cml_executable_t** out_executable);
  // Executes with validated |inputs| (cml_executable_input_count of them). |donate| is never
  // NULL here (all false when the caller passed NULL); a donated input's storage may be taken
  // (the core marks it invalid afterwards). Writes output_count new buffers to |out_results|.
  // Must be safe to call from several threads at once.
  cml_status_t (*execute)(cml_executable_t* executable, cml_buffer_t* const* inputs,
                          const bool* donate, int device, cml_buffer_t** out_results);
  void (*executable_destroy)(cml_executable_t* executable);

  // Optional: backend-specific extension tables.
  const void* (*get_extension)(const cml_backend_t* backend, const char* name);

  // Optional (backend API 1.1; plug-ins built against 1.0 have a smaller struct_size and no such
  // slot): |execute| that also honours |control| (never NULL here) while it runs, stopping with
  // CANCELLED or DEADLINE_EXCEEDED at its next check, freeing everything it made and writing no
  // output. The core calls it only for executions with a token or a deadline, after checking
  // both once; without this slot it calls |execute| after that single check, and
  // cml_executable_is_interruptible reports false.
  cml_status_t (*execute_with_control)(cml_executable_t* executable, cml_buffer_t* const* inputs,
                                       const bool* donate, int device,
                                       const cml_execute_control_t* control,
                                       cml_buffer_t** out_results);
} cml_backend_vtable_t;

// The base every backend object embeds at offset 0.
struct cml_backend_t {
  atomic_int refcount;
  const cml_backend_vtable_t* vtable;
  cml_allocator_t allocator;
  char* name;         // registered name ("c", "xla")
  char* config;       // the full config it runs with
  char* description;  // one line
  int device_count;
  cml_capabilities_t capabilities;
};

struct cml_buffer_t {
  atomic_int refcount;
  cml_backend_t* backend;  // retained
  cml_shape_t shape;
  int device;
  atomic_bool donated;  // set by the core after an execution consumed it
  bool shared;          // created by buffer_create_shared
};

struct cml_executable_t {
  atomic_int refcount;
  cml_backend_t* backend;  // retained
  cml_module_t* module;    // retained
  size_t input_count;
  const char** input_names;  // point into the module
  cml_shape_t* input_shapes;
  size_t output_count;
  cml_shape_t* output_shapes;
};

// Initializes the base of a new backend (refcount 1; copies |name|, |config|; description
// defaults to |name|). Capabilities start empty: the backend fills them.
CML_API CML_MUST_USE cml_status_t cml_backend_init_base(cml_backend_t* backend,
                                                        const cml_backend_vtable_t* vtable,
                                                        cml_allocator_t allocator, const char* name,
                                                        const char* config, int device_count);
// Frees what cml_backend_init_base allocated (call from the backend's destroy).
CML_API void cml_backend_deinit_base(cml_backend_t* backend);
// Sets the description (copied).
CML_API CML_MUST_USE cml_status_t cml_backend_set_description(cml_backend_t* backend,
                                                              const char* description);

// Initializes a buffer base (refcount 1, retains |backend|).
CML_API void cml_buffer_init_base(cml_buffer_t* buffer, cml_backend_t* backend,
                                  const cml_shape_t* shape, int device, bool shared);
// Releases the backend reference taken by cml_buffer_init_base.
CML_API void cml_buffer_deinit_base(cml_buffer_t* buffer);

// Initializes an executable base: retains |backend| and |module|, and copies input names and
// shapes and output shapes from the module's main function.
CML_API CML_MUST_USE cml_status_t cml_executable_init_base(cml_executable_t* executable,
                                                           cml_backend_t* backend,
                                                           cml_module_t* module);
// Frees what cml_executable_init_base copied and releases its module and backend. Call it from
// executable_destroy, before freeing the executable. NULL is ignored.
CML_API void cml_executable_deinit_base(cml_executable_t* executable);

// Reference counting for modules a backend keeps past compile (NULL is ignored/returned).
// Thread-safe.
CML_API cml_module_t* cml_module_retain(cml_module_t* module);
CML_API void cml_module_release(cml_module_t* module);

//===--- registration ---===//

typedef struct cml_backend_factory_t {
  size_t struct_size;
  uint32_t api_major;  // CML_BACKEND_API_MAJOR the backend was built against (must match)
  uint32_t api_minor;  // <= the host's minor
  const char* name;
  const char* aliases;      // comma-separated, may be NULL
  const char* description;  // one line
  const char* config_help;  // the options, one per line (returned for "help")
  // Creates a backend from the part of the config after "<name>:" ("" when none).
  cml_status_t (*create)(const char* config, cml_allocator_t allocator,
                         cml_backend_t** out_backend);
  // Optional: how much this backend wants to be the default now. Higher wins, < 0 means "not a
  // default candidate". |out_config| is the config to use (lent, static), |out_reason| why.
  int (*default_priority)(const char** out_config, const char** out_reason);
} cml_backend_factory_t;

// Adds |factory| (kept by pointer: it must outlive the process's use of cml) to the default
// registry. Returns INCOMPATIBLE for a different API major or newer minor, INVALID_ARGUMENT
// for a duplicate name or alias. Thread-safe.
CML_API CML_MUST_USE cml_status_t cml_backend_register(const cml_backend_factory_t* factory);

// Shared-library plug-ins export this symbol; it returns the factory or NULL.
typedef const cml_backend_factory_t* (*cml_plugin_query_fn)(uint32_t host_api_major);
#define CML_PLUGIN_QUERY_SYMBOL "cml_plugin_query"

// dlopens |path|, calls its cml_plugin_query and registers the factory. Returns NOT_FOUND,
// INVALID_ARGUMENT (no such symbol) or INCOMPATIBLE.
CML_API CML_MUST_USE cml_status_t cml_plugin_load(const char* path);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_BACKEND_IMPL_H_
