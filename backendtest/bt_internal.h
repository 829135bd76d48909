// SPDX-License-Identifier: Apache-2.0
// backendtest/bt_internal.h: the case context behind bt.h, shared by bt.c and runner.c (and the
// unit test of the helpers). Not part of the case-writing API.
#ifndef CML_BACKENDTEST_BT_INTERNAL_H_
#define CML_BACKENDTEST_BT_INTERNAL_H_

#include "backendtest/bt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum bt_result_t {
  BT_RESULT_OK = 0,
  BT_RESULT_FAILED = 1,
  BT_RESULT_UNSUPPORTED = 2,
} bt_result_t;

// Kinds of resources a case owns; all are released by bt_case_end in reverse order.
typedef enum bt_resource_kind_t {
  BT_RES_MEMORY,
  BT_RES_BUILDER,
  BT_RES_EXECUTABLE,
  BT_RES_BUFFER,
} bt_resource_kind_t;

typedef struct bt_resource_t {
  bt_resource_kind_t kind;
  void* ptr;
} bt_resource_t;

// A bt_param input: the builder it belongs to and the host tensor fed at bt_exec time.
typedef struct bt_input_t {
  cml_builder_t* builder;
  bt_tensor_t value;
} bt_input_t;

struct bt_t {
  cml_backend_t* backend;  // may be NULL in unit tests of the helpers (no building then)
  const char* group;
  const char* name;
  bt_result_t result;
  // Failure / unsupported text, lines separated by '\n' (NUL-terminated, heap).
  char* message;
  size_t message_len;
  size_t message_cap;
  size_t failure_count;  // bt_fail calls
  // Owned resources.
  bt_resource_t* resources;
  size_t resource_count;
  size_t resource_cap;
  // Current builder (NULL until first use) and the bt_param inputs of every builder.
  cml_builder_t* builder;
  bt_input_t* inputs;
  size_t input_count;
  size_t input_cap;
  uint64_t rng_state;
  // Set when an allocation of the harness itself failed (the case then fails).
  bool out_of_memory;
  // Executions of the backend that returned OK (a passing case covers its op only when it ran
  // something: a case that only checks a builder error passes on a backend that refuses every
  // compile).
  size_t executions;
  // Checks made (bt_expect_*) and whether bt_require_op passed: a case that required its op but
  // neither executed nor checked anything (every dtype it tests missing) is a skip.
  size_t checks;
  bool op_required;
};

// Starts a case: |t| is caller storage; |backend| is borrowed (may be NULL for helper tests).
void bt_case_begin(bt_t* t, cml_backend_t* backend, const char* group, const char* name);
// Ends a case: releases everything it owns and returns its result. The message stays readable
// through bt_case_message until bt_case_clear.
bt_result_t bt_case_end(bt_t* t);
const char* bt_case_message(const bt_t* t);  // "" when none
void bt_case_clear(bt_t* t);

// 64-bit FNV-1a of |text| (the per-case seed).
uint64_t bt_hash_string(const char* text);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_BACKENDTEST_BT_INTERNAL_H_
