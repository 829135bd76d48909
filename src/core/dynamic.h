// SPDX-License-Identifier: Apache-2.0
// src/core/dynamic.h: compile once, specialize per binding set (dynamic axes, cml/shape.h). For
// the built-in backends: a module with dynamic axes is specialized for the bindings that one
// execution's inputs give (every shape resolved, the dynamic ops turned into Constant and
// Reshape nodes), and the backend compiles the specialized module with its ordinary compile.
// A bounded LRU cache keeps one executable per distinct binding set.
//
// Thread-safety: the cache is guarded by a mutex and hands out retained executables, so several
// threads execute one dynamic executable at once; an entry evicted while in use lives until its
// last user releases it.
#ifndef CML_CORE_DYNAMIC_H_
#define CML_CORE_DYNAMIC_H_

#include <pthread.h>

#include "cml/backend_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

// The default bound of the cache (c:dynamic_cache, xla:dynamic_cache).
#define CML__DYNAMIC_CACHE_DEFAULT 16
#define CML__DYNAMIC_CACHE_MAX 4096

// True when some value of |module| has a dynamic axis.
bool cml__module_is_dynamic(const cml_module_t* module);

// Checks at compile time that every dynamic axis of |module| is bound at execution: by a
// dynamic axis of a parameter of main, by the inferred axis of a DynamicReshape, or (sums) by
// its terms. INVALID_ARGUMENT naming the op, the shape and the axis otherwise.
cml_status_t cml__module_check_dynamic(const cml_module_t* module);

// A new module (refcount 1, holding a reference to |module|) with every shape of |module|
// resolved by |bindings|: DynamicDimensionSize and DynamicShape become Int32 Constants,
// DynamicReshape a Reshape (its inferred axis bound on the way), the Reshape and Slice
// attributes resolved. INVALID_ARGUMENT naming the op and the axis when a name is unbound or
// sizes do not fit.
cml_status_t cml__module_specialize(cml_module_t* module, const cml_axis_bindings_t* bindings,
                                    cml_module_t** out_module);

// The bindings that |inputs| (one per parameter of main) give to |executable|'s dynamic input
// shapes; INVALID_ARGUMENT naming the parameter for contradicting sizes or a size 0.
cml_status_t cml__dynamic_bindings(const cml_executable_t* executable, cml_buffer_t* const* inputs,
                                   cml_axis_bindings_t* out_bindings);

typedef struct cml__dynamic_entry_t {
  cml_axis_bindings_t key;
  uint64_t hash;
  uint64_t last_used;
  cml_executable_t* executable;  // one reference
} cml__dynamic_entry_t;

typedef struct cml__dynamic_cache_t {
  pthread_mutex_t mutex;
  cml_allocator_t allocator;
  cml__dynamic_entry_t* entries;
  int32_t capacity, count;
  uint64_t clock;
  // Counters (under the mutex): lookups that hit, specializations, evictions.
  uint64_t hits, misses, evictions;
} cml__dynamic_cache_t;

cml_status_t cml__dynamic_cache_init(cml__dynamic_cache_t* cache, int32_t capacity,
                                     cml_allocator_t allocator);
// Releases every cached executable.
void cml__dynamic_cache_deinit(cml__dynamic_cache_t* cache);

// Compiles a specialized module with the backend's own compile (|user| is the backend's).
typedef cml_status_t (*cml__dynamic_compile_fn)(void* user, cml_module_t* module,
                                                cml_executable_t** out_executable);

// The specialized executable for |inputs| of the dynamic |executable| (retained: release it
// after the execution): from the cache, or specialized, compiled with |compile| and cached
// (evicting the least recently used entry when full).
cml_status_t cml__dynamic_executable_get(cml__dynamic_cache_t* cache, cml_executable_t* executable,
                                         cml_buffer_t* const* inputs,
                                         cml__dynamic_compile_fn compile, void* user,
                                         cml_executable_t** out_executable);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_CORE_DYNAMIC_H_
