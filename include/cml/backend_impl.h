// SPDX-License-Identifier: Apache-2.0
// cml/backend_impl.h: what a backend implements. For backend authors, not for applications.
//
// A backend is a small vtable (never one slot per op) plus a factory that the registry uses to
// create it from a config string. The core checks every argument before dispatching, so vtable
// entries receive valid objects: devices in range, shapes and dtypes that match, buffers that
// are alive and not donated. `src/backends/null/` is a compiling template to copy: it uses only
// the installed public headers, so it builds out of tree (docs/writing-a-backend.md).
//
// The header compiles as C11 and as C++ (C++17 and later). The objects' reference counts and
// the buffers' `donated` flag and `users` count are plain fields that the core updates with
// atomic operations:
// backends never read or write them directly (use the retain/release functions).
//
// Example (a third-party backend):
//
//   static const cml_backend_vtable_t my_vtable = {
//       .struct_size = sizeof(cml_backend_vtable_t),
//       .destroy = my_destroy, .buffer_from_host = my_from_host, ...};
//   static cml_status_t my_create(const char* config, cml_allocator_t alloc,
//                                 cml_backend_t** out) {
//     my_backend_t* b = cml_allocator_malloc(alloc, sizeof *b, 64);
//     char full[256];  // the full config, which cml_backend_config returns
//     snprintf(full, sizeof full, "mine%s%s", *config ? ":" : "", config);
//     cml_backend_init_base(&b->base, &my_vtable, alloc, "mine", full, 1);
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

#include "cml/backend.h"
#include "cml/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

// Major 2: cml_capabilities_t (embedded in cml_backend_t) holds room for
// CML_CAPABILITIES_MAX_OPS ops, so new ops no longer change its layout.
#define CML_BACKEND_API_MAJOR 2
// Minor 1: the optional execute_with_control slot (cancellation and deadlines).
// Minor 2: the optional process_info slot (multi-process jobs).
// Minor 3: the optional executable_dump slot (cml_executable_dump).
#define CML_BACKEND_API_MINOR 3

// What an interruptible execution must honour (backend API 1.1). Lent for the call; the core
// passes it only when the caller gave a cancel token or a deadline.
typedef struct cml_execute_control_t {
  size_t struct_size;
  // Non-zero once the execution must stop with CML_STATUS_CANCELLED; NULL when no token was
  // given. Another thread sets it: read it with a relaxed atomic load
  // (__atomic_load_n(cancelled, __ATOMIC_RELAXED)), one load, cheap enough to do between every
  // two ops and in every loop iteration. A plain int so that the header is valid C and C++.
  const int* cancelled;
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
  // Packed dtypes (Int4, Uint4, Int2, Uint2, Int1, Uint1): the bits of the last byte past the
  // last element must read back as 0 (docs/dtypes.md); the core passes the caller's bytes as
  // they are, so clear them in the copy (the suite's exec/round_trip_* cases check it).
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

  // Optional (backend API 1.2): the process's place in a multi-process job
  // (cml_backend_process_info). Without it: one process holding every device.
  void (*process_info)(const cml_backend_t* backend, cml_process_info_t* out);

  // Optional (backend API 1.3): writes a readable listing of what the backend compiled for
  // |executable| to |out| (a FILE*, never NULL) for cml_executable_dump. Without it the core
  // writes the module (cml_module_dump).
  cml_status_t (*executable_dump)(const cml_executable_t* executable, void* out);
} cml_backend_vtable_t;

// The base every backend object embeds at offset 0.
struct cml_backend_t {
  int refcount;  // owned by the core (atomic operations only)
  const cml_backend_vtable_t* vtable;
  cml_allocator_t allocator;
  char* name;         // registered name ("c", "xla")
  char* config;       // the full config it runs with
  char* description;  // one line
  int device_count;
  cml_capabilities_t capabilities;
};

struct cml_buffer_t {
  int refcount;            // owned by the core (atomic operations only)
  cml_backend_t* backend;  // retained
  cml_shape_t shape;
  int device;
  bool donated;  // set atomically by the core after an execution consumed it
  bool shared;   // created by buffer_create_shared
  // Executions and copies reading the buffer right now (core only, atomic operations; it
  // lives in what was padding, so the struct's size and layout are unchanged).
  uint16_t users;
};

struct cml_executable_t {
  int refcount;            // owned by the core (atomic operations only)
  cml_backend_t* backend;  // retained
  cml_module_t* module;    // retained
  size_t input_count;
  const char** input_names;  // point into the module
  cml_shape_t* input_shapes;
  size_t output_count;
  cml_shape_t* output_shapes;
};

// Initializes the base of a new backend (refcount 1; copies |name| and |config|, the full config
// "<name>:<options>" that cml_backend_config returns, e.g. "mine:threads=2"; description
// defaults to |name|). INCOMPATIBLE when |vtable|'s struct_size is smaller than backend API
// 1.0's vtable (every entry up to executable_destroy). Capabilities start empty (except max_rank =
// CML_MAX_RANK and the CML_DISTRIBUTION_NONE bit of distributions): the backend fills them.
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
// shapes and output shapes from the module's main function. Under AutoSharding the shapes are
// the per-device shard shapes of the module's param_shardings / output_shardings (what each
// device slot receives and returns).
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

// cml_plugin_load, which a host calls to load a plug-in, is declared in cml/backend.h.

//===--- config options ---===//
//
// Backends parse the part of their config string after "<name>:" with `cml_config_parse`, so
// every backend (built in or plug-in) accepts the same syntax and reports errors the same way:
//
//   config   := item ("," item)*             empty items are ignored
//   item     := key "=" value | key | "no" key | "help"
//   key      := matched case-sensitively against the specs' |key| and |alias|
//
// Each option may be given once: a repeated key (or the key and its alias, or "key" and
// "nokey") is an INVALID_ARGUMENT naming the backend and the key.
//
// Values by type:
//   CML_OPTION_BOOL      1,true,t,yes,on,enabled / 0,false,f,no,off,disabled (case-insensitive);
//                        a bare "key" means true and "nokey" means false.
//   CML_OPTION_INT       a decimal (or 0x hex) int64, optionally checked against [min, max].
//   CML_OPTION_FLOAT     a finite double (strtod syntax), optionally checked against [min, max].
//   CML_OPTION_STRING    any text up to the first ','; copied into a caller-provided char array;
//                        when |choices| ("a|b|c") is set the value must be one of them.
//   CML_OPTION_INT_LIST  ints separated by ';', ':' or spaces ("0;1;2", "0:1", "0 1 2").
//
// Errors are INVALID_ARGUMENT statuses whose message names the backend, the key, the value and
// the expected type; an unknown key lists every valid key. "help" returns INVALID_ARGUMENT with
// the option list (built from the specs' |help| lines) as its message.
//
// Example (a backend's create function):
//
//   bool fusion = true;  int64_t threads = 0;  char allocator[16] = "default";
//   const cml_option_spec_t specs[] = {
//       {.key = "fusion", .type = CML_OPTION_BOOL, .out = &fusion, .help = "fuse elementwise ops"},
//       {.key = "threads", .type = CML_OPTION_INT, .out = &threads, .check_range = true,
//        .min = 0, .max = 1024, .help = "worker threads (0 = one per core)"},
//       {.key = "allocator", .type = CML_OPTION_STRING, .out = allocator,
//        .capacity = sizeof allocator, .choices = "default|bfc|platform"},
//   };
//   CML_RETURN_IF_ERROR(cml_config_parse("mine", config, specs, 3, NULL, NULL));
//
// The spec layout is part of the backend API major version (CML_BACKEND_API_MAJOR).
// Thread-safety: the parser keeps no state; it is safe to call from several threads.

typedef enum cml_option_type_t {
  CML_OPTION_BOOL = 0,      // |out| is a bool*
  CML_OPTION_INT = 1,       // |out| is an int64_t*
  CML_OPTION_FLOAT = 2,     // |out| is a double*
  CML_OPTION_STRING = 3,    // |out| is a char array of |capacity| bytes (NUL-terminated)
  CML_OPTION_INT_LIST = 4,  // |out| is a cml_int_list_t*
  CML_OPTION_TYPE_COUNT
} cml_option_type_t;

#define CML_INT_LIST_MAX 64
typedef struct cml_int_list_t {
  size_t count;
  int64_t values[CML_INT_LIST_MAX];
} cml_int_list_t;

typedef struct cml_option_spec_t {
  const char* key;    // "threads"
  const char* alias;  // another accepted spelling ("shared_buffer"), or NULL
  cml_option_type_t type;
  void* out;            // where the parsed value goes (type above); left unchanged when absent
  size_t capacity;      // CML_OPTION_STRING: size of the char array at |out|
  const char* choices;  // CML_OPTION_STRING: allowed values "a|b|c" (NULL: any)
  bool check_range;     // CML_OPTION_INT / CML_OPTION_FLOAT: enforce [min, max]
  double min, max;
  bool* out_set;     // optional: set to true when the key appears in the config
  const char* help;  // one line describing the option (for "help" and error messages)
} cml_option_spec_t;

// Called for an item whose key matches no spec. |index| is the item's position (0 = first,
// counting non-empty items), |item| the whole item text, NUL-terminated. Return CML_OK when the
// item was consumed (e.g. a device name given first), or a status: return
// `cml_config_unknown_key(...)` to get the standard "unknown key" error.
typedef cml_status_t (*cml_config_extra_fn)(void* user, size_t index, const char* item);

// Parses |config| (may be NULL or "") against |specs| (|spec_count| entries; NULL when 0) and
// stores every value given. |backend| names the backend in messages. |extra| (may be NULL)
// receives items that match no spec; without it they are INVALID_ARGUMENT errors listing the
// valid keys. Returns INVALID_ARGUMENT (bad value, unknown or repeated key, "help"),
// RESOURCE_EXHAUSTED.
CML_API CML_MUST_USE cml_status_t cml_config_parse(const char* backend, const char* config,
                                                   const cml_option_spec_t* specs,
                                                   size_t spec_count, cml_config_extra_fn extra,
                                                   void* user);

// The standard error for an unknown |key|: INVALID_ARGUMENT "<backend> backend: unknown option
// "key"; valid options: a, b, c".
CML_API CML_MUST_USE cml_status_t cml_config_unknown_key(const char* backend, const char* key,
                                                         const cml_option_spec_t* specs,
                                                         size_t spec_count);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_BACKEND_IMPL_H_
