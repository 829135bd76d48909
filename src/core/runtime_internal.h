// SPDX-License-Identifier: Apache-2.0
// src/core/runtime_internal.h: internals of the core runtime shared across files: the config
// option parser and environment readers that every backend uses, the config-string splitter of
// the registry, and the built-in factories.
//
// The config option parser is public (cml/backend_impl.h: cml_config_parse and its types, so
// that out-of-tree backends use it too); the `cml__` names below are the same types and
// functions, kept for the built-in backends. The environment readers stay internal.
//
// Thread-safety: every function here is thread-safe (no global state besides the registry).
#ifndef CML_CORE_RUNTIME_INTERNAL_H_
#define CML_CORE_RUNTIME_INTERNAL_H_

#include <sched.h>
#include <stddef.h>

#include "cml/backend_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

//===--- config options ---===//

typedef cml_option_type_t cml__option_type_t;
#define CML__OPT_BOOL CML_OPTION_BOOL
#define CML__OPT_INT CML_OPTION_INT
#define CML__OPT_FLOAT CML_OPTION_FLOAT
#define CML__OPT_STRING CML_OPTION_STRING
#define CML__OPT_INT_LIST CML_OPTION_INT_LIST
#define CML__OPT_TYPE_COUNT CML_OPTION_TYPE_COUNT
#define CML__INT_LIST_MAX CML_INT_LIST_MAX
typedef cml_int_list_t cml__int_list_t;
typedef cml_option_spec_t cml__option_spec_t;
typedef cml_config_extra_fn cml__config_extra_fn;

// cml_config_parse (cml/backend_impl.h).
CML_MUST_USE static inline cml_status_t cml__config_parse(const char* backend, const char* config,
                                                          const cml__option_spec_t* specs,
                                                          size_t spec_count,
                                                          cml__config_extra_fn extra, void* user) {
  return cml_config_parse(backend, config, specs, spec_count, extra, user);
}

// cml_config_unknown_key (cml/backend_impl.h).
CML_MUST_USE static inline cml_status_t cml__config_unknown_key(const char* backend,
                                                                const char* key,
                                                                const cml__option_spec_t* specs,
                                                                size_t spec_count) {
  return cml_config_unknown_key(backend, key, specs, spec_count);
}

// Writes the option list (one "  key (type[, choices]): help" line per spec) into |buffer|
// (always NUL-terminated when |size| > 0) and returns the length it needed (snprintf style).
size_t cml__config_format_help(const cml__option_spec_t* specs, size_t spec_count, char* buffer,
                               size_t size);

// Parses a bool as cml_config_parse does (1, true, t, yes, on, enabled / 0, false, f, no, off,
// disabled; case-insensitive). Returns false (and leaves |out| alone) for any other text.
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

// Atomic access to the plain `refcount` and `donated` fields of the public object bases
// (cml/backend_impl.h keeps them plain so that the header compiles as C++). Every access in the
// library goes through these. Increments are relaxed; the decrement that may free is acq_rel;
// the donated flag is sequentially consistent (as C11 atomic_load/atomic_store are).
static inline void cml__refcount_init(int* refcount) {
  __atomic_store_n(refcount, 1, __ATOMIC_RELAXED);
}
static inline void cml__refcount_retain(int* refcount) {
  __atomic_fetch_add(refcount, 1, __ATOMIC_RELAXED);
}
// True when this release dropped the last reference.
static inline bool cml__refcount_release(int* refcount) {
  return __atomic_fetch_sub(refcount, 1, __ATOMIC_ACQ_REL) == 1;
}
static inline int cml__refcount_load(const int* refcount) {
  return __atomic_load_n(refcount, __ATOMIC_ACQUIRE);
}
static inline bool cml__donated_load(const bool* donated) {
  return __atomic_load_n(donated, __ATOMIC_SEQ_CST);
}
static inline void cml__donated_store(bool* donated, bool value) {
  __atomic_store_n(donated, value, __ATOMIC_SEQ_CST);
}
// Sets the flag if it was clear; false when it was set already (donated, or claimed by a
// concurrent execution).
static inline bool cml__donated_claim(bool* donated) {
  bool expected = false;
  return __atomic_compare_exchange_n(donated, &expected, true, false, __ATOMIC_SEQ_CST,
                                     __ATOMIC_SEQ_CST);
}

// A buffer's uses (cml_buffer_t.users): every execution reading a buffer without donating it,
// and every copy from it, is a use for as long as it runs, and a donation is refused while a
// use runs (another thread's execution read storage the donor had just handed to its output,
// and a copy returned the bytes of the buffer that reused it). A donation takes the count's top
// bit (CML__USERS_CLAIM) only when the count is 0, sets the donated flag while it holds the
// bit, and clears it; a use waits while the bit is set (two atomic operations of the donor),
// then counts itself and looks at the flag. So a use fails only for a donation that took the
// buffer, and a donation refused for a running use changes nothing another thread can see
// (the donor once set the flag first and backed off when it saw a use, and a reader that looked
// in between failed for a donation that never happened).
enum {
  CML__USERS_CLAIM = 0x8000,  // a donation is deciding (cml__buffer_claim_donation)
  CML__USERS_MAX = 0x7FFF,    // uses at once
};
typedef enum cml__buffer_use_t {
  CML__USE_OK,
  CML__USE_DONATED,  // the buffer is donated (or claimed by an execution running now)
  CML__USE_IN_USE,   // (donation) another execution or copy reads the buffer now
  CML__USE_FULL,     // (use) CML__USERS_MAX uses at once
} cml__buffer_use_t;

// Waits while a donation holds CML__USERS_CLAIM; returns the count then.
static inline uint16_t cml__buffer_users_settled(cml_buffer_t* b) {
  uint16_t users = __atomic_load_n(&b->users, __ATOMIC_SEQ_CST);
  for (unsigned spins = 0; users & CML__USERS_CLAIM; ++spins) {
    if (spins > 64) sched_yield();  // the donor was preempted between its two operations
    users = __atomic_load_n(&b->users, __ATOMIC_SEQ_CST);
  }
  return users;
}
static inline cml__buffer_use_t cml__buffer_use_begin(cml_buffer_t* b) {
  uint16_t users = cml__buffer_users_settled(b);
  for (;;) {
    if (users == CML__USERS_MAX) return CML__USE_FULL;
    if (__atomic_compare_exchange_n(&b->users, &users, (uint16_t)(users + 1), true,
                                    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
      break;
    }
    if (users & CML__USERS_CLAIM) users = cml__buffer_users_settled(b);
  }
  if (!__atomic_load_n(&b->donated, __ATOMIC_SEQ_CST)) return CML__USE_OK;
  __atomic_fetch_sub(&b->users, 1, __ATOMIC_SEQ_CST);
  return CML__USE_DONATED;
}
static inline void cml__buffer_use_end(cml_buffer_t* b) {
  __atomic_fetch_sub(&b->users, 1, __ATOMIC_SEQ_CST);
}
// Claims |b| for a donation: CML__USE_OK with the flag set, or nothing changed.
static inline cml__buffer_use_t cml__buffer_claim_donation(cml_buffer_t* b) {
  uint16_t users = 0;
  while (!__atomic_compare_exchange_n(&b->users, &users, (uint16_t)CML__USERS_CLAIM, false,
                                      __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    if (!(users & CML__USERS_CLAIM)) {
      return cml__donated_load(&b->donated) ? CML__USE_DONATED : CML__USE_IN_USE;
    }
    cml__buffer_users_settled(b);  // another donation is deciding: wait for its outcome
    users = 0;
  }
  const bool claimed = cml__donated_claim(&b->donated);
  __atomic_store_n(&b->users, (uint16_t)0, __ATOMIC_SEQ_CST);
  return claimed ? CML__USE_OK : CML__USE_DONATED;
}

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

// The cancel token and deadline of the execution this thread is dispatching to a built-in
// backend without execute_with_control (NULL when it has neither): xla checks it once more after
// compiling a dynamic-shape specialization, which can take seconds, before PJRT runs.
extern _Thread_local const cml_execute_control_t* cml__current_control;

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_CORE_RUNTIME_INTERNAL_H_
