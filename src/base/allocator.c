// SPDX-License-Identifier: Apache-2.0
// src/base/allocator.c: the system allocator and allocator helpers.
#include <stdlib.h>
#include <string.h>

#include "cml/base.h"

static void* cml_system_alloc(void* self, void* ptr, size_t old_size, size_t new_size,
                              size_t alignment) {
  (void)self;
  if (new_size == 0) {
    free(ptr);
    return NULL;
  }
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
  size_t rounded = (new_size + alignment - 1) & ~(alignment - 1);
  if (rounded < new_size) return NULL;  // overflow
  void* fresh = aligned_alloc(alignment, rounded);
  if (!fresh) return NULL;
  if (ptr) {
    memcpy(fresh, ptr, old_size < new_size ? old_size : new_size);
    free(ptr);
  }
  return fresh;
}

cml_allocator_t cml_allocator_system(void) {
  cml_allocator_t a = {NULL, cml_system_alloc};
  return a;
}

void* cml_allocator_malloc(cml_allocator_t allocator, size_t size, size_t alignment) {
  if (size == 0 || !allocator.fn) return NULL;
  return allocator.fn(allocator.self, NULL, 0, size, alignment ? alignment : 16);
}

void cml_allocator_free(cml_allocator_t allocator, void* ptr, size_t size) {
  if (!ptr || !allocator.fn) return;
  allocator.fn(allocator.self, ptr, size, 0, 0);
}
