// SPDX-License-Identifier: Apache-2.0
// cml/base.h: version, export macro, statuses, allocators and the ownership rules of the API.
//
// Every fallible call in cml returns a `cml_status_t`, a pointer-sized value where 0 means OK.
// The status code sits in the low 4 bits, so a bare code (`cml_status_from_code`) never
// allocates; a detailed status also owns a heap message that names the op, shapes and dtypes.
//
// Example:
//
//   cml_backend_t* backend = NULL;
//   cml_status_t st = cml_backend_new_with_config("c", &backend);
//   if (st != CML_OK) {
//     fprintf(stderr, "cml: %s\n", cml_status_message(st));
//     cml_status_free(st);
//     return 1;
//   }
//   ...
//   cml_backend_release(backend);
//
//===--- Ownership rules ---===//
// - Whatever a `create`, `new`, `compile` or `copy` call returns belongs to the caller.
// - Accessors lend a pointer that stays valid while its parent object lives.
// - Functions retain the arguments they keep (backend, buffers, executables are refcounted).
// - Outputs come last as `out_*`. They are cleared on entry and filled only on success, so a
//   failed call leaves nothing for the caller to free.
// - A returned non-OK status belongs to the caller: pass it to `cml_status_free` once.
// - Graph nodes live in their builder and die with it (or with the executable compiled from it);
//   values are 32-bit ids, not pointers.
// - Callbacks that cml calls (allocators, log and abort handlers, backend vtables and factories,
//   dataset producers) must return: a C++ exception or a longjmp out of one skips cml's
//   bookkeeping (locks, a buffer's count of readers, allocations), and the objects involved stay
//   unusable. Report failure through the callback's own means (NULL, a status).
// - Processes: a child of fork() cannot use a backend created before the fork: the c backend
//   refuses to compile or execute there (create a new c backend in the child), and a device
//   dataset with a prefetch thread refuses next. Once XLA's plugin is loaded, every xla call
//   in a child (a new xla backend included) is FAILED_PRECONDITION: exec a new program.
//   Unloading libcml (dlclose) while any of its objects lives unmaps the code its threads run.
// - Signals: cml installs no signal handler and changes no signal disposition or mask of the
//   caller's threads. The threads it starts (the c backend's pool and devices, a dataset's
//   prefetch thread, the thread XLA compiles on and XLA's own threads) block the asynchronous
//   signals, so a signal the host blocks in its threads to take with sigwait stays pending for
//   it; the fault signals (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS), SIGABRT and SIGPROF
//   stay open. Helper programs (python3, pip) start with an empty mask in their own process
//   group and are killed when the thread that started them goes. The only function that may be
//   called from a signal handler is `cml_cancel_token_cancel` (cml/graph.h); the others, the
//   status and log functions included, take locks or allocate.
#ifndef CML_BASE_H_
#define CML_BASE_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

//===--- Version and export ---===//

#define CML_VERSION_MAJOR 0
#define CML_VERSION_MINOR 1
#define CML_VERSION_PATCH 0

#if defined(_WIN32)
#if defined(CML_BUILDING)
#define CML_API __declspec(dllexport)
#else
#define CML_API
#endif
#else
#define CML_API __attribute__((visibility("default")))
#endif

#if defined(__GNUC__) || defined(__clang__)
#define CML_MUST_USE __attribute__((warn_unused_result))
#define CML_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define CML_MUST_USE
#define CML_PRINTF(fmt, args)
#endif

// The casts in cml's public macros: C++ code built with -Wold-style-cast accepts them.
#ifdef __cplusplus
#define CML_CAST(type, value) (static_cast<type>(value))
#else
#define CML_CAST(type, value) ((type)(value))
#endif

// Returns the library version as "MAJOR.MINOR.PATCH". Never NULL.
CML_API const char* cml_version_string(void);

//===--- Status ---===//

// Status codes: a small subset of IREE's (and absl's) codes. Enums only grow.
typedef enum cml_status_code_t {
  CML_STATUS_OK = 0,
  CML_STATUS_INVALID_ARGUMENT = 1,  // bad shapes, dtypes, axes, attributes, arguments
  CML_STATUS_OUT_OF_RANGE = 2,      // device number, index or value out of range
  CML_STATUS_NOT_FOUND = 3,         // unknown backend, missing plugin or file
  CML_STATUS_FAILED_PRECONDITION =
      4,  // object in the wrong state (donated buffer, compiled builder)
  CML_STATUS_RESOURCE_EXHAUSTED = 5,  // out of memory
  CML_STATUS_UNIMPLEMENTED = 6,       // op, dtype or feature not supported by this backend
  CML_STATUS_UNAVAILABLE = 7,         // backend or plugin absent, network or tool missing
  CML_STATUS_INCOMPATIBLE = 8,        // ABI or API version mismatch
  CML_STATUS_CANCELLED = 9,           // stopped by a cancel token (cml_cancel_token_cancel)
  CML_STATUS_INTERNAL = 10,           // a broken invariant: a bug in cml or in a plugin
  CML_STATUS_DEADLINE_EXCEEDED = 11,  // an execution ran past its deadline (timeout_ns)
  CML_STATUS_CODE_COUNT
} cml_status_code_t;

// A status: 0 is OK. Non-zero statuses must be released with `cml_status_free`.
typedef uintptr_t cml_status_t;
#define CML_OK CML_CAST(cml_status_t, 0)

// Returns a status that carries only |code| (never allocates); a |code| out of range becomes
// CML_STATUS_INTERNAL.
CML_API CML_MUST_USE cml_status_t cml_status_from_code(cml_status_code_t code);

// Returns a status with |code| and a printf-formatted message. When the message cannot be
// allocated the result still carries |code|. `cml_status_make(CML_STATUS_OK, ...)` returns CML_OK.
CML_API CML_MUST_USE cml_status_t cml_status_make(cml_status_code_t code, const char* fmt, ...)
    CML_PRINTF(2, 3);

// As cml_status_make with |message| taken as it is (no format): for callers that cannot call a
// variadic function, e.g. bindings from other languages (docs/ffi.md). A NULL |message| gives
// the code alone.
CML_API CML_MUST_USE cml_status_t cml_status_make_message(cml_status_code_t code,
                                                          const char* message);

// Returns the code of |status| (CML_STATUS_OK for CML_OK).
CML_API cml_status_code_t cml_status_code(cml_status_t status);

// Returns the message of |status|, or the code's name when it carries none. The text is lent
// and lives until the status is freed. Never NULL.
CML_API const char* cml_status_message(cml_status_t status);

// Returns the name of |code| ("INVALID_ARGUMENT", ...), or "UNKNOWN". Never NULL.
CML_API const char* cml_status_code_name(cml_status_code_t code);

// Releases |status|. Accepts CML_OK and code-only statuses.
CML_API void cml_status_free(cml_status_t status);

// Returns a new status with the same code whose message is "|prefix|: <old message>" and
// frees |status|. CML_OK passes through unchanged.
CML_API CML_MUST_USE cml_status_t cml_status_annotate(cml_status_t status, const char* fmt, ...)
    CML_PRINTF(2, 3);

// Returns an independent copy of |status| (the caller frees both).
CML_API CML_MUST_USE cml_status_t cml_status_clone(cml_status_t status);

#define CML_RETURN_IF_ERROR(expr)                          \
  do {                                                     \
    cml_status_t cml_status_tmp_ = (expr);                 \
    if (cml_status_tmp_ != CML_OK) return cml_status_tmp_; \
  } while (0)

//===--- Allocator ---===//

// One allocator function, Lua style: |fn(self, ptr, old_size, new_size, alignment)|
// allocates when |ptr| is NULL, frees when |new_size| is 0, and reallocates otherwise.
// |alignment| is a power of two >= sizeof(void*). Returns NULL on failure (or on free).
// Thread-safety: an allocator handed to cml must be thread-safe.
typedef void* (*cml_alloc_fn)(void* self, void* ptr, size_t old_size, size_t new_size,
                              size_t alignment);
typedef struct cml_allocator_t {
  void* self;
  cml_alloc_fn fn;
} cml_allocator_t;

// The system allocator (malloc/aligned_alloc/free).
CML_API cml_allocator_t cml_allocator_system(void);

// Convenience wrappers. `cml_allocator_malloc` returns NULL when |size| is 0 or on failure (an
// |alignment| of 0 means 16). `cml_allocator_free` takes the |size| given to malloc and ignores
// NULL |ptr|.
CML_API void* cml_allocator_malloc(cml_allocator_t allocator, size_t size, size_t alignment);
CML_API void cml_allocator_free(cml_allocator_t allocator, void* ptr, size_t size);

//===--- Logging and abort hook ---===//

typedef enum cml_log_level_t {
  CML_LOG_ERROR = 0,
  CML_LOG_WARNING = 1,
  CML_LOG_INFO = 2,
  CML_LOG_DEBUG = 3,
  CML_LOG_LEVEL_COUNT
} cml_log_level_t;

typedef void (*cml_log_fn)(void* user, cml_log_level_t level, const char* message);

// Sets the process-wide log sink (NULL restores the default: warnings and errors to stderr).
// Thread-safe.
CML_API void cml_set_log_handler(cml_log_fn fn, void* user);

// Called when an internal invariant breaks (never for bad user input). The default prints
// the message and calls abort(); abort() also follows when |fn| returns. NULL restores the
// default. Thread-safe.
typedef void (*cml_abort_fn)(const char* message);
CML_API void cml_set_abort_handler(cml_abort_fn fn);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_BASE_H_
