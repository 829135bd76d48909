// SPDX-License-Identifier: Apache-2.0
// src/core/runtime_internal.h: internals of the core runtime shared across files: the config
// option parser and environment readers that every backend uses, the config-string splitter of
// the registry, and the built-in factories.
//
// Backends parse the part of their config string after "<name>:" with `cml__config_parse`, so
// every backend accepts the same syntax and reports errors the same way:
//
//   config   := item ("," item)*             empty items are ignored
//   item     := key "=" value | key | "no" key | "help"
//   key      := matched case-sensitively against the specs' |key| and |alias|
//
// Values by type:
//   CML__OPT_BOOL      1,true,t,yes,on,enabled / 0,false,f,no,off,disabled (case-insensitive);
//                      a bare "key" means true and "nokey" means false.
//   CML__OPT_INT       a decimal (or 0x hex) int64, optionally checked against [min, max].
//   CML__OPT_FLOAT     a finite double (strtod syntax), optionally checked against [min, max].
//   CML__OPT_STRING    any text up to the first ','; copied into a caller-provided char array;
//                      when |choices| ("a|b|c") is set the value must be one of them.
//   CML__OPT_INT_LIST  ints separated by ';', ':' or spaces ("0;1;2", "0:1", "0 1 2").
//
// Errors are INVALID_ARGUMENT statuses whose message names the backend, the key, the value and
// the expected type; an unknown key lists every valid key. "help" returns INVALID_ARGUMENT with
// the option list (built from the specs' |help| lines) as its message.
//
// Example (a backend's create function):
//
//   bool fusion = true;  int64_t threads = 0;  char allocator[16] = "default";
//   cml__int_list_t devices = {0};
//   CML_RETURN_IF_ERROR(cml__env_bool("GOMLX_FUSION", true, &fusion));  // env first ...
//   const cml__option_spec_t specs[] = {
//       {.key = "fusion", .type = CML__OPT_BOOL, .out = &fusion, .help = "fuse elementwise ops"},
//       {.key = "threads", .type = CML__OPT_INT, .out = &threads, .check_range = true,
//        .min = 0, .max = 1024, .help = "worker threads (0 = one per core)"},
//       {.key = "allocator", .type = CML__OPT_STRING, .out = allocator,
//        .capacity = sizeof allocator, .choices = "default|bfc|platform"},
//       {.key = "visible_devices", .type = CML__OPT_INT_LIST, .out = &devices},
//   };
//   CML_RETURN_IF_ERROR(cml__config_parse("c", config, specs, 4, NULL, NULL));  // ... then config
//
// Thread-safety: every function here is thread-safe (no global state besides the registry).
#ifndef CML_CORE_RUNTIME_INTERNAL_H_
#define CML_CORE_RUNTIME_INTERNAL_H_

#include <stddef.h>

#include "cml/backend_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

//===--- config options ---===//

typedef enum cml__option_type_t {
  CML__OPT_BOOL = 0,      // |out| is a bool*
  CML__OPT_INT = 1,       // |out| is an int64_t*
  CML__OPT_FLOAT = 2,     // |out| is a double*
  CML__OPT_STRING = 3,    // |out| is a char array of |capacity| bytes (NUL-terminated)
  CML__OPT_INT_LIST = 4,  // |out| is a cml__int_list_t*
  CML__OPT_TYPE_COUNT
} cml__option_type_t;

#define CML__INT_LIST_MAX 64
typedef struct cml__int_list_t {
  size_t count;
  int64_t values[CML__INT_LIST_MAX];
} cml__int_list_t;

typedef struct cml__option_spec_t {
  const char* key;    // "threads"
  const char* alias;  // another accepted spelling ("shared_buffer"), or NULL
  cml__option_type_t type;
  void* out;            // where the parsed value goes (type above); left unchanged when absent
  size_t capacity;      // CML__OPT_STRING: size of the char array at |out|
  const char* choices;  // CML__OPT_STRING: allowed values "a|b|c" (NULL: any)
  bool check_range;     // CML__OPT_INT / CML__OPT_FLOAT: enforce [min, max]
  double min, max;
  bool* out_set;     // optional: set to true when the key appears in the config
  const char* help;  // one line describing the option (for "help" and error messages)
} cml__option_spec_t;

// Called for an item whose key matches no spec. |index| is the item's position (0 = first,
// counting non-empty items), |item| the whole item text, NUL-terminated. Return CML_OK when the
// item was consumed (e.g. the XLA plugin name or path given first), or a status: return
// `cml__config_unknown_key(...)` to get the standard "unknown key" error.
typedef cml_status_t (*cml__config_extra_fn)(void* user, size_t index, const char* item);

// Parses |config| (may be NULL or "") against |specs| (|spec_count| entries) and stores every
// value given. |backend| names the backend in messages. |extra| (may be NULL) receives items
// that match no spec; without it they are INVALID_ARGUMENT errors listing the valid keys.
// Returns INVALID_ARGUMENT (bad value, unknown key, "help"), RESOURCE_EXHAUSTED.
CML_MUST_USE cml_status_t cml__config_parse(const char* backend, const char* config,
                                            const cml__option_spec_t* specs, size_t spec_count,
                                            cml__config_extra_fn extra, void* user);

// The standard error for an unknown |key|: INVALID_ARGUMENT "<backend>: unknown option "key";
// valid options: a, b, c".
CML_MUST_USE cml_status_t cml__config_unknown_key(const char* backend, const char* key,
                                                  const cml__option_spec_t* specs,
                                                  size_t spec_count);

// Writes the option list (one "  key (type[, choices]): help" line per spec) into |buffer|
// (always NUL-terminated when |size| > 0) and returns the length it needed (snprintf style).
size_t cml__config_format_help(const cml__option_spec_t* specs, size_t spec_count, char* buffer,
                               size_t size);

// Parses a bool as above. Returns false (and leaves |out| alone) for any other text.
bool cml__parse_bool(const char* text, bool* out);

// Reads environment variable |name| as a bool: unset or empty -> |default_value|; otherwise
// parsed with cml__parse_bool, and an invalid value is an INVALID_ARGUMENT naming the variable,
// its value and the accepted spellings (never silently ignored).
CML_MUST_USE cml_status_t cml__env_bool(const char* name, bool default_value, bool* out);

// Reads environment variable |name| as an int64: unset or empty -> |default_value|; invalid ->
// INVALID_ARGUMENT naming the variable and value.
CML_MUST_USE cml_status_t cml__env_int(const char* name, int64_t default_value, int64_t* out);

//===--- config strings and the registry ---===//

// Splits "<name>[:<config>]" at the FIRST ':'. Writes the name into |name| (|name_size| bytes,
// NUL-terminated) and points |*out_rest| into |config| after the ':' ("" when there is none).
// Surrounding spaces of the name are dropped. Returns INVALID_ARGUMENT when the name does not
// fit.
CML_MUST_USE cml_status_t cml__config_split(const char* config, char* name, size_t name_size,
                                            const char** out_rest);

// The registered factory for |name| or one of its aliases; NULL when unknown. Thread-safe.
const cml_backend_factory_t* cml__registry_find(const char* name);

// Registers the compiled-in factories (register_builtin.c) with cml__registry_add. Called once
// by the registry's one-time initialization.
void cml__register_builtin(void);

// Adds |factory| to the default registry with the checks of cml_backend_register, without
// triggering the registry's one-time initialization (only cml__register_builtin calls it).
CML_MUST_USE cml_status_t cml__registry_add(const cml_backend_factory_t* factory);

// The null (template) backend's factory, registered as "null" (src/backends/null/null.c).
extern const cml_backend_factory_t cml_null_backend_factory;

//===--- small helpers ---===//

// True when vtable |vt| (of its declared struct_size) has a non-NULL entry |field|: vtables
// built against an older minor API are shorter, and their missing entries count as NULL.
#define CML__VTABLE_HAS(vt, field)                                                                \
  ((vt) != NULL &&                                                                                \
   (vt)->struct_size >=                                                                           \
       offsetof(cml_backend_vtable_t, field) + sizeof(((const cml_backend_vtable_t*)0)->field) && \
   (vt)->field != NULL)

// OUT_OF_RANGE naming |what|, |device| and |backend|'s device count when |device| is not one of
// |backend|'s devices (buffer.c).
CML_MUST_USE cml_status_t cml__check_device(const char* what, const cml_backend_t* backend,
                                            int device);

// Copies |text| with |allocator| (NULL for NULL |text| or on failure).
char* cml__runtime_strdup(cml_allocator_t allocator, const char* text);
void cml__runtime_strfree(cml_allocator_t allocator, char* text);

// Case-insensitive ASCII string equality.
bool cml__runtime_strieq(const char* a, const char* b);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_CORE_RUNTIME_INTERNAL_H_
