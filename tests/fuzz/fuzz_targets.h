// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/fuzz_targets.h: the fuzz entry points, shared by the libFuzzer binaries
// (tests/fuzz/fuzz_main.c, built with CML_ENABLE_FUZZING) and the corpus replay unit test
// (tests/unit/fuzz_replay_test.c, built everywhere, so CI runs every corpus file without clang).
//
// Each entry takes arbitrary bytes and must never crash, leak or trip a sanitizer. Every error
// the library reports must be a status with a code in range and a message. When an entry finds
// a broken invariant (an op that returns CML_VALUE_INVALID without a sticky error, a leak seen by
// the counting allocator, a round trip that changes a shape ...) it calls
// `cml_fuzz_violation`, which aborts (libFuzzer then saves the input) unless a handler is set.
//
// Example (replaying one file):
//
//   cml_fuzz_set_violation_handler(on_violation);
//   const cml_fuzz_target_t* t = cml_fuzz_target_find("graph");
//   t->fn(bytes, size);
//   cml_fuzz_teardown();  // releases the backends the graph target keeps between inputs
//
// Thread-safety: single-thread (libFuzzer runs one input at a time).
#ifndef CML_TESTS_FUZZ_FUZZ_TARGETS_H_
#define CML_TESTS_FUZZ_FUZZ_TARGETS_H_

#include <stddef.h>
#include <stdint.h>

#include "cml/base.h"

typedef int (*cml_fuzz_fn)(const uint8_t* data, size_t size);

typedef struct cml_fuzz_target_t {
  const char* name;  // also the corpus directory: tests/fuzz/corpus/<name>/
  cml_fuzz_fn fn;
} cml_fuzz_target_t;

// cml_shape_parse (text), cml_shape_init / format / byte_size (raw bytes as dims).
int cml_fuzz_shape_parse(const uint8_t* data, size_t size);
// cml_dtype_from_name, every dtype/op/status/reduce-type name and predicate on raw enums.
int cml_fuzz_dtype_name(const uint8_t* data, size_t size);
// cml_backend_create / cml_backend_new_with_config / cml_backend_new on config strings
// ("c", "go", "null", "xla" and aliases with random options), with a counting allocator.
int cml_fuzz_backend_config(const uint8_t* data, size_t size);
// A random graph: the bytes decode into public-API op calls (often invalid), closures and
// control flow, then compile and execute on the c backend with random inputs.
int cml_fuzz_graph(const uint8_t* data, size_t size);

// The targets above, in a table ending with {NULL, NULL}.
extern const cml_fuzz_target_t cml_fuzz_targets[];
const cml_fuzz_target_t* cml_fuzz_target_find(const char* name);

// Releases what the targets keep between inputs (the graph target's backends).
void cml_fuzz_teardown(void);

// Reports a broken invariant: calls the handler when one is set, else prints and aborts.
typedef void (*cml_fuzz_violation_fn)(const char* message);
void cml_fuzz_set_violation_handler(cml_fuzz_violation_fn fn);
void cml_fuzz_violation(const char* fmt, ...) CML_PRINTF(1, 2);

// Checks that a non-OK |status| has a code in range and a message, then frees it. Returns
// its code. Reports a violation for an out-of-range code or an empty message.
int cml_fuzz_check_status(cml_status_t status, const char* what);

// An allocator that counts live allocations and bytes (thread-safe), to catch leaks of
// objects created with it: after everything is released, live must be 0.
typedef struct cml_fuzz_counter_t {
  _Atomic long long live;
  _Atomic long long live_bytes;
  _Atomic long long total;
} cml_fuzz_counter_t;
cml_allocator_t cml_fuzz_counting_allocator(cml_fuzz_counter_t* counter);

#endif  // CML_TESTS_FUZZ_FUZZ_TARGETS_H_
