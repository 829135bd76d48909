// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/fuzz_common.c: the target table, invariant reporting, status checks and the
// counting allocator shared by the fuzz targets.
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_targets.h"

const cml_fuzz_target_t cml_fuzz_targets[] = {
    {"shape_parse", cml_fuzz_shape_parse},
    {"dtype_name", cml_fuzz_dtype_name},
    {"backend_config", cml_fuzz_backend_config},
    {"graph", cml_fuzz_graph},
    {NULL, NULL},
};

const cml_fuzz_target_t* cml_fuzz_target_find(const char* name) {
  for (const cml_fuzz_target_t* t = cml_fuzz_targets; name && t->name; ++t) {
    if (strcmp(t->name, name) == 0) return t;
  }
  return NULL;
}

static cml_fuzz_violation_fn cml_fuzz_violation_handler;

void cml_fuzz_set_violation_handler(cml_fuzz_violation_fn fn) { cml_fuzz_violation_handler = fn; }

void cml_fuzz_violation(const char* fmt, ...) {
  char text[2048];
  va_list args;
  va_start(args, fmt);
  vsnprintf(text, sizeof text, fmt, args);
  va_end(args);
  if (cml_fuzz_violation_handler) {
    cml_fuzz_violation_handler(text);
    return;
  }
  fprintf(stderr, "cml fuzz: invariant violated: %s\n", text);
  abort();
}

int cml_fuzz_check_status(cml_status_t status, const char* what) {
  if (status == CML_OK) return 0;
  cml_status_code_t code = cml_status_code(status);
  if (code <= CML_STATUS_OK || code >= CML_STATUS_CODE_COUNT) {
    cml_fuzz_violation("%s: status code %d out of range", what, (int)code);
  }
  const char* message = cml_status_message(status);
  if (!message || !*message) cml_fuzz_violation("%s: status without a message", what);
  cml_status_free(status);
  return (int)code;
}

//===--- counting allocator ---===//

// Each block carries a 64-byte header holding its size, so frees can be checked.
#define CML_FUZZ_HEADER 64

static void* cml_fuzz_counting_fn(void* self, void* ptr, size_t old_size, size_t new_size,
                                  size_t alignment) {
  cml_fuzz_counter_t* c = (cml_fuzz_counter_t*)self;
  (void)alignment;  // the header keeps every block 64-byte aligned
  if (ptr && new_size == 0) {
    unsigned char* base = (unsigned char*)ptr - CML_FUZZ_HEADER;
    size_t stored;
    memcpy(&stored, base, sizeof stored);
    if (stored != old_size) {
      cml_fuzz_violation("allocator: block of %zu bytes freed with size %zu", stored, old_size);
    }
    atomic_fetch_sub(&c->live, 1);
    atomic_fetch_sub(&c->live_bytes, (long long)stored);
    free(base);
    return NULL;
  }
  if (new_size == 0) return NULL;
  if (new_size > ((size_t)1 << 40)) return NULL;  // the fuzzer has no use for 1 TiB
  unsigned char* base = aligned_alloc(64, (CML_FUZZ_HEADER + new_size + 63) / 64 * 64);
  if (!base) return NULL;
  memcpy(base, &new_size, sizeof new_size);
  atomic_fetch_add(&c->live, 1);
  atomic_fetch_add(&c->live_bytes, (long long)new_size);
  atomic_fetch_add(&c->total, 1);
  unsigned char* fresh = base + CML_FUZZ_HEADER;
  if (ptr) {
    memcpy(fresh, ptr, old_size < new_size ? old_size : new_size);
    cml_fuzz_counting_fn(self, ptr, old_size, 0, 0);
  }
  return fresh;
}

cml_allocator_t cml_fuzz_counting_allocator(cml_fuzz_counter_t* counter) {
  cml_allocator_t a = {counter, cml_fuzz_counting_fn};
  return a;
}
