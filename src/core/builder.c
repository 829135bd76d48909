// SPDX-License-Identifier: Apache-2.0
// src/core/builder.c: builders, functions, closures and captures, parameters, constants,
// Return, and the plumbing every op builder uses (sticky errors, operand resolution,
// capability gate, node recording).
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/base_internal.h"
#include "base/half_inline.h"
#include "core/builder_internal.h"

//===--- arena and growable arrays ---===//

struct cml__arena_chunk_t {
  cml__arena_chunk_t* next;
  size_t size;  // usable bytes after the header
  size_t used;
};

#define CML__ARENA_HEADER 64
#define CML__ARENA_CHUNK (64 * 1024)

void cml__arena_init(cml__arena_t* arena, cml_allocator_t allocator) {
  arena->allocator = allocator;
  arena->head = NULL;
}

void cml__arena_deinit(cml__arena_t* arena) {
  cml__arena_chunk_t* c = arena->head;
  while (c) {
    cml__arena_chunk_t* next = c->next;
    cml_allocator_free(arena->allocator, c, CML__ARENA_HEADER + c->size);
    c = next;
  }
  arena->head = NULL;
}

void* cml__arena_alloc(cml__arena_t* arena, size_t size, size_t alignment) {
  if (alignment < 8) alignment = 8;
  cml__arena_chunk_t* c = arena->head;
  size_t offset = c ? (c->used + alignment - 1) & ~(alignment - 1) : 0;
  if (!c || offset + size > c->size || offset + size < offset) {
    size_t want = size + 64 > CML__ARENA_CHUNK ? size + 64 : CML__ARENA_CHUNK;
    if (want < size) return NULL;
    c = (cml__arena_chunk_t*)cml_allocator_malloc(arena->allocator, CML__ARENA_HEADER + want, 64);
    if (!c) return NULL;
    c->next = arena->head;
    c->size = want;
    c->used = 0;
    arena->head = c;
    offset = 0;
  }
  char* p = (char*)c + CML__ARENA_HEADER + offset;
  c->used = offset + size;
  memset(p, 0, size);
  return p;
}

char* cml__arena_strdup(cml__arena_t* arena, const char* text) {
  size_t n = strlen(text);
  char* p = (char*)cml__arena_alloc(arena, n + 1, 1);
  if (p) memcpy(p, text, n + 1);
  return p;
}

bool cml__grow(cml_allocator_t allocator, void** data, uint32_t* capacity, uint32_t need,
               size_t elem_size) {
  if (need <= *capacity) return true;
  uint64_t cap = *capacity ? *capacity : 16;
  while (cap < need) cap *= 2;
  if (cap > UINT32_MAX) cap = UINT32_MAX;
  void* p = allocator.fn(allocator.self, *data, (size_t)*capacity * elem_size,
                         (size_t)cap * elem_size, 16);
  if (!p) return false;
  *data = p;
  *capacity = (uint32_t)cap;
  return true;
}

bool cml__u32_vec_push(cml__u32_vec_t* vec, cml_allocator_t allocator, uint32_t value) {
  if (vec->count == UINT32_MAX) return false;
  if (!cml__grow(allocator, (void**)&vec->data, &vec->capacity, vec->count + 1,
                 sizeof *vec->data)) {
    return false;
  }
  vec->data[vec->count++] = value;
  return true;
}

void cml__u32_vec_free(cml__u32_vec_t* vec, cml_allocator_t allocator) {
  if (vec->data)
    cml_allocator_free(allocator, vec->data, (size_t)vec->capacity * sizeof *vec->data);
  vec->data = NULL;
  vec->count = vec->capacity = 0;
}

//===--- hashed names and captures ---===//

// FNV-1a of |name|, seeded with |function|.
static uint32_t cml_name_hash(uint32_t function, const char* name) {
  uint64_t h = 14695981039346656037ull ^ function;
  for (const unsigned char* p = (const unsigned char*)name; *p; ++p) {
    h ^= *p;
    h *= 1099511628211ull;
  }
  return (uint32_t)(h ^ (h >> 32));
}

// The slot of (|function|, |name|): the matching one, or the empty one where it would go. NULL
// when the table is empty.
static cml__name_slot_t* cml_name_slot(const cml__module_impl_t* impl, uint32_t function,
                                       const char* name) {
  if (impl->name_slot_count == 0) return NULL;
  uint32_t mask = impl->name_slot_count - 1;
  for (uint32_t i = cml_name_hash(function, name) & mask;; i = (i + 1) & mask) {
    cml__name_slot_t* slot = &impl->name_slots[i];
    if (!slot->name || (slot->function == function && strcmp(slot->name, name) == 0)) return slot;
  }
}

static bool cml_name_exists(const cml__module_impl_t* impl, uint32_t function, const char* name) {
  const cml__name_slot_t* slot = cml_name_slot(impl, function, name);
  return slot && slot->name;
}

// Grows the table so that one more name fits with the table at most half full. False when out
// of memory.
static bool cml_name_reserve(cml__module_impl_t* impl) {
  if ((uint64_t)(impl->name_count + 1) * 2 > impl->name_slot_count) {
    if (impl->name_slot_count >= (1u << 30)) return false;
    uint32_t count = impl->name_slot_count ? impl->name_slot_count * 2 : 16;
    cml__name_slot_t* slots =
        (cml__name_slot_t*)cml_allocator_malloc(impl->allocator, (size_t)count * sizeof *slots, 16);
    if (!slots) return false;
    memset(slots, 0, (size_t)count * sizeof *slots);
    cml__name_slot_t* old = impl->name_slots;
    uint32_t old_count = impl->name_slot_count;
    impl->name_slots = slots;
    impl->name_slot_count = count;
    for (uint32_t i = 0; i < old_count; ++i) {
      if (old[i].name) *cml_name_slot(impl, old[i].function, old[i].name) = old[i];
    }
    if (old) cml_allocator_free(impl->allocator, old, (size_t)old_count * sizeof *old);
  }
  return true;
}

// Adds (|function|, |name|) (not present yet; |name| must live as long as the module). False
// when out of memory; never fails right after a successful cml_name_reserve.
static bool cml_name_add(cml__module_impl_t* impl, uint32_t function, const char* name) {
  if (!cml_name_reserve(impl)) return false;
  cml__name_slot_t* slot = cml_name_slot(impl, function, name);
  slot->name = name;
  slot->function = function;
  impl->name_count++;
  return true;
}

// The slot of capture |outer| in closure |c|: its value is the capture's position + 1, or 0
// (an empty slot, where it would go). NULL when the table is empty.
static uint32_t* cml_capture_slot(const cml_function_t* c, uint32_t outer) {
  if (c->capture_slot_count == 0) return NULL;
  uint32_t mask = c->capture_slot_count - 1;
  for (uint32_t i = (outer * 2654435761u) & mask;; i = (i + 1) & mask) {
    uint32_t* slot = &c->capture_slots[i];
    if (*slot == 0 || c->captures_outer.data[*slot - 1] == outer) return slot;
  }
}

// Records capture (|outer| -> |inner|) of closure |c|. False when out of memory.
static bool cml_capture_add(cml_function_t* c, cml_allocator_t allocator, uint32_t outer,
                            uint32_t inner) {
  uint32_t n = c->captures_outer.count;
  if ((uint64_t)(n + 1) * 2 > c->capture_slot_count) {
    if (c->capture_slot_count >= (1u << 30)) return false;
    uint32_t count = c->capture_slot_count ? c->capture_slot_count * 2 : 16;
    uint32_t* slots = (uint32_t*)cml_allocator_malloc(allocator, (size_t)count * sizeof *slots, 16);
    if (!slots) return false;
    memset(slots, 0, (size_t)count * sizeof *slots);
    if (c->capture_slots) {
      cml_allocator_free(allocator, c->capture_slots,
                         (size_t)c->capture_slot_count * sizeof *slots);
    }
    c->capture_slots = slots;
    c->capture_slot_count = count;
    for (uint32_t i = 0; i < n; ++i) *cml_capture_slot(c, c->captures_outer.data[i]) = i + 1;
  }
  if (!cml__u32_vec_push(&c->captures_outer, allocator, outer)) return false;
  if (!cml__u32_vec_push(&c->captures_inner, allocator, inner)) {
    c->captures_outer.count--;
    return false;
  }
  *cml_capture_slot(c, outer) = n + 1;
  return true;
}

//===--- errors ---===//

cml_value_t cml__fail_status(cml_builder_t* b, cml_status_t status) {
  if (status == CML_OK) status = cml_status_from_code(CML_STATUS_INTERNAL);
  if (b->error == CML_OK) {
    b->error = status;
    // The call that failed is on the stack now: a log handler that takes debug messages can
    // stop here (graph.h, "the first failure sticks").
    cml__log(CML_LOG_DEBUG, "builder \"%s\": first error, after %u ops: %s",
             b->impl && b->impl->name ? b->impl->name : "", b->impl ? b->impl->node_count : 0u,
             cml_status_message(status));
  } else {
    cml_status_free(status);
  }
  return CML_VALUE_INVALID;
}

cml_value_t cml__fail(cml_builder_t* b, cml_status_code_t code, const char* fmt, ...) {
  if (b->error != CML_OK) return CML_VALUE_INVALID;
  char message[1024];
  va_list args;
  va_start(args, fmt);
  cml__vsnprintf_c(message, sizeof message, fmt, args);
  va_end(args);
  return cml__fail_status(b, cml_status_make(code, "%s", message));
}

static cml_value_t cml_fail_oom(cml_builder_t* b, const char* what) {
  return cml__fail(b, CML_STATUS_RESOURCE_EXHAUSTED, "%s: out of memory", what);
}

void* cml__temp_alloc(cml_builder_t* b, size_t size) {
  void* p = cml_allocator_malloc(b->allocator, size ? size : 1, 16);
  if (!p) cml_fail_oom(b, "builder");
  return p;
}

void cml__temp_free(cml_builder_t* b, void* ptr, size_t size) {
  if (ptr) cml_allocator_free(b->allocator, ptr, size ? size : 1);
}

// "function \"main\"", "function \"f\"" or "a closure of function \"main\"".
const char* cml__function_label(const cml_function_t* f, char* buffer, size_t size) {
  if (!f->parent) {
    snprintf(buffer, size, "function \"%s\"", f->name);
  } else {
    const cml_function_t* top = f->parent;
    int depth = 1;
    while (top->parent) {
      top = top->parent;
      ++depth;
    }
    snprintf(buffer, size, "closure #%u (depth %d under function \"%s\")", f->index, depth,
             top->name);
  }
  return buffer;
}

//===--- builder tags ---===//

// Value ids carry an 8-bit builder tag (1..255, see builder_internal.h). Tags are handed out
// round-robin, skipping tags held by live builders, so no two live builders share a tag while
// fewer than 256 are alive; beyond that, a new builder shares the least-used tag. A destroyed
// builder's tag is reused as late as possible, which also keeps stale ids of recently destroyed
// builders from matching a new builder.
static pthread_mutex_t cml_builder_tag_mutex = PTHREAD_MUTEX_INITIALIZER;
static uint32_t cml_builder_tag_users[256];  // live builders per tag; [0] unused
static uint32_t cml_builder_tag_next = 1;

static uint32_t cml_builder_tag_acquire(void) {
  pthread_mutex_lock(&cml_builder_tag_mutex);
  uint32_t best = 0;
  for (uint32_t k = 0; k < 255u; ++k) {
    uint32_t t = (cml_builder_tag_next - 1u + k) % 255u + 1u;
    if (best == 0 || cml_builder_tag_users[t] < cml_builder_tag_users[best]) best = t;
    if (cml_builder_tag_users[t] == 0) break;
  }
  ++cml_builder_tag_users[best];
  cml_builder_tag_next = best % 255u + 1u;
  pthread_mutex_unlock(&cml_builder_tag_mutex);
  return best;
}

static void cml_builder_tag_release(uint32_t tag) {
  if (tag == 0 || tag > 255u) return;
  pthread_mutex_lock(&cml_builder_tag_mutex);
  if (cml_builder_tag_users[tag] > 0) --cml_builder_tag_users[tag];
  pthread_mutex_unlock(&cml_builder_tag_mutex);
}

//===--- builders and functions ---===//

static cml_function_t* cml_function_alloc(cml_builder_t* b, const char* name,
                                          cml_function_t* parent) {
  cml__module_impl_t* impl = b->impl;
  if (impl->function_count >= 0x7fffffff) return NULL;
  if (!cml__grow(b->allocator, (void**)&impl->functions, &impl->function_capacity,
                 impl->function_count + 1, sizeof *impl->functions)) {
    return NULL;
  }
  cml_function_t* f = (cml_function_t*)cml_allocator_malloc(b->allocator, sizeof *f, 16);
  if (!f) return NULL;
  memset(f, 0, sizeof *f);
  f->name = cml__arena_strdup(&impl->arena, name);
  if (!f->name) {
    cml_allocator_free(b->allocator, f, sizeof *f);
    return NULL;
  }
  f->builder = b;
  f->impl = impl;
  f->parent = parent;
  f->depth = parent ? parent->depth + 1 : 1;
  f->height = 1;
  f->index = impl->function_count;
  impl->functions[impl->function_count++] = f;
  return f;
}

cml_status_t cml_builder_create(cml_backend_t* backend, const char* name,
                                cml_builder_t** out_builder) {
  if (out_builder) *out_builder = NULL;
  if (!backend || !out_builder) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "cml_builder_create: NULL backend or out_builder");
  }
  cml_allocator_t alloc = backend->allocator.fn ? backend->allocator : cml_allocator_system();
  cml_builder_t* b = (cml_builder_t*)cml_allocator_malloc(alloc, sizeof *b, 16);
  if (!b)
    return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "cml_builder_create: out of memory");
  memset(b, 0, sizeof *b);
  b->allocator = alloc;
  b->impl = cml__module_impl_create(alloc, name ? name : "");
  if (!b->impl) {
    cml_allocator_free(alloc, b, sizeof *b);
    return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "cml_builder_create: out of memory");
  }
  if (!cml_function_alloc(b, "main", NULL)) {
    cml_module_release(&b->impl->module);
    cml_allocator_free(alloc, b, sizeof *b);
    return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "cml_builder_create: out of memory");
  }
  b->tag = cml_builder_tag_acquire();
  b->backend = cml_backend_retain(backend);
  *out_builder = b;
  return CML_OK;
}

void cml_builder_destroy(cml_builder_t* builder) {
  if (!builder) return;
  cml__module_impl_t* impl = builder->impl;
  for (uint32_t i = 0; i < impl->function_count; ++i) impl->functions[i]->builder = NULL;
  cml_module_release(&impl->module);
  cml_status_free(builder->error);
  cml_backend_release(builder->backend);
  cml_builder_tag_release(builder->tag);
  cml_allocator_free(builder->allocator, builder, sizeof *builder);
}

cml_status_t cml_builder_status(const cml_builder_t* builder) {
  if (!builder) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "cml_builder_status: NULL builder");
  }
  return builder->error == CML_OK ? CML_OK : cml_status_clone(builder->error);
}

cml_function_t* cml_builder_main(cml_builder_t* builder) {
  return builder ? builder->impl->functions[0] : NULL;
}

static bool cml_is_identifier(const char* s) {
  if (!*s) return false;
  for (const char* p = s; *p; ++p) {
    char c = *p;
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
              (p != s && ((c >= '0' && c <= '9') || c == '.' || c == '-' || c == '$'));
    if (!ok) return false;
  }
  return true;
}

cml_status_t cml_builder_new_function(cml_builder_t* builder, const char* name,
                                      cml_function_t** out_function) {
  if (out_function) *out_function = NULL;
  if (!builder || !out_function) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "cml_builder_new_function: NULL builder or out_function");
  }
  if (builder->compiled) {
    return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                           "cml_builder_new_function: the builder was already compiled");
  }
  if (!name || !cml_is_identifier(name) || strcmp(name, "main") == 0) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "cml_builder_new_function: invalid function name \"%s\" (need a "
                           "non-empty identifier other than \"main\")",
                           name ? name : "(null)");
  }
  cml__module_impl_t* impl = builder->impl;
  if (cml_name_exists(impl, UINT32_MAX, name)) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "cml_builder_new_function: a function named \"%s\" already exists",
                           name);
  }
  // Room for the name first, so that no function exists without its name in the table.
  cml_function_t* f = cml_name_reserve(impl) ? cml_function_alloc(builder, name, NULL) : NULL;
  if (!f || !cml_name_add(impl, UINT32_MAX, f->name)) {
    return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED,
                           "cml_builder_new_function: out of memory");
  }
  *out_function = f;
  return CML_OK;
}

cml_status_t cml_function_new_closure(cml_function_t* parent, cml_function_t** out_closure) {
  if (out_closure) *out_closure = NULL;
  if (!parent || !out_closure || !parent->builder) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                           "cml_function_new_closure: NULL parent or out_closure");
  }
  cml_builder_t* b = parent->builder;
  char label[160];
  if (b->compiled) {
    return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                           "cml_function_new_closure: the builder was already compiled");
  }
  if (parent->returned) {
    return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                           "cml_function_new_closure: %s has already returned",
                           cml__function_label(parent, label, sizeof label));
  }
  if (parent->depth >= CML_MAX_NESTING_DEPTH) {
    // Sticky: the module cannot be built as intended, and the closure's ops would otherwise
    // fail silently on a NULL function.
    cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
              "cml_function_new_closure: a closure of %s would be at nesting depth %u, above "
              "CML_MAX_NESTING_DEPTH (%d): closures nested in closures (the branches and bodies "
              "of If, While, Sort) and Call chains count together",
              cml__function_label(parent, label, sizeof label), parent->depth + 1,
              CML_MAX_NESTING_DEPTH);
    return cml_status_clone(b->error);
  }
  cml_function_t* f = cml_function_alloc(b, "", parent);
  if (!f) {
    return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED,
                           "cml_function_new_closure: out of memory");
  }
  *out_closure = f;
  return CML_OK;
}

const char* cml_function_name(const cml_function_t* function) {
  return function ? function->name : "";
}

cml_builder_t* cml_function_builder(const cml_function_t* function) {
  return function ? function->builder : NULL;
}

cml_function_t* cml_function_parent(const cml_function_t* function) {
  return function ? function->parent : NULL;
}

size_t cml_function_output_count(const cml_function_t* function) {
  return function && function->returned ? function->outputs.count : 0;
}

bool cml_builder_value_shape(const cml_builder_t* builder, cml_value_t value,
                             cml_shape_t* out_shape) {
  if (out_shape) memset(out_shape, 0, sizeof *out_shape);
  if (!builder || !out_shape || value == CML_VALUE_INVALID) return false;
  uint32_t index = value & CML__VALUE_INDEX_MASK;
  if ((value >> CML__VALUE_INDEX_BITS) != builder->tag || index == 0 ||
      index >= builder->impl->value_count) {
    return false;
  }
  *out_shape = builder->impl->values[index].shape;
  return true;
}

//===--- op plumbing ---===//

static const cml_ir_attrs_t cml_zero_attrs;

bool cml__op_begin(cml_function_t* f, cml_op_t op) {
  if (!f || !f->builder) return false;
  cml_builder_t* b = f->builder;
  if (b->error != CML_OK) return false;
  const char* name = cml_op_name(op);
  char label[160];
  if (b->compiled) {
    cml__fail(b, CML_STATUS_FAILED_PRECONDITION, "%s: the builder was already compiled", name);
    return false;
  }
  if (f->returned) {
    cml__fail(b, CML_STATUS_FAILED_PRECONDITION, "%s: %s has already returned", name,
              cml__function_label(f, label, sizeof label));
    return false;
  }
  const cml_capabilities_t* caps = cml_backend_capabilities(b->backend);
  bool exempt = op == CML_OP_PARAMETER || op == CML_OP_CONSTANT || op == CML_OP_CAPTURED_VALUE;
  // A missing op fails in cml__op_add_node, once the operands are resolved, so that the message
  // names their shapes and dtypes; argument errors found before that are reported first.
  b->unsupported_op = (!exempt && !cml_capabilities_has_op(caps, op)) ? op : CML_OP_INVALID;
  if (cml_op_kind(op) == CML_OPK_CONTROL && !caps->functions) {
    cml__fail(b, CML_STATUS_UNIMPLEMENTED,
              "%s: backend \"%s\" does not support functions (closures, Call, While, If, Sort)",
              name, cml_backend_name(b->backend));
    return false;
  }
  return true;
}

bool cml__check_backend_dtype(cml_function_t* f, cml_op_t op, cml_dtype_t dtype) {
  cml_builder_t* b = f->builder;
  if (cml_capabilities_has_dtype(cml_backend_capabilities(b->backend), dtype)) return true;
  cml__fail(b, CML_STATUS_UNIMPLEMENTED, "%s: dtype %s not supported by backend \"%s\"",
            cml_op_name(op), cml_dtype_name(dtype), cml_backend_name(b->backend));
  return false;
}

// Appends a node without any check. Returns the node index, or UINT32_MAX (error recorded).
static uint32_t cml_append_node(cml_function_t* f, cml_op_t op, const uint32_t* inputs,
                                uint32_t input_count, const cml_shape_t* out_shapes,
                                uint32_t output_count, const cml_ir_attrs_t* attrs) {
  cml_builder_t* b = f->builder;
  cml__module_impl_t* impl = f->impl;
  const char* name = cml_op_name(op);
  if ((uint64_t)impl->value_count + output_count > CML__VALUE_INDEX_MASK ||
      impl->node_count == UINT32_MAX - 1) {
    cml__fail(b, CML_STATUS_RESOURCE_EXHAUSTED, "%s: too many values in one builder (max %u)", name,
              CML__VALUE_INDEX_MASK);
    return UINT32_MAX;
  }
  if (!cml__grow(b->allocator, (void**)&impl->nodes, &impl->node_capacity, impl->node_count + 1,
                 sizeof *impl->nodes) ||
      !cml__grow(b->allocator, (void**)&impl->values, &impl->value_capacity,
                 impl->value_count + output_count, sizeof *impl->values)) {
    cml_fail_oom(b, name);
    return UINT32_MAX;
  }
  uint32_t* in_copy = NULL;
  if (input_count > 0) {
    in_copy = (uint32_t*)cml__arena_alloc(&impl->arena, input_count * sizeof *in_copy, 4);
    if (!in_copy) {
      cml_fail_oom(b, name);
      return UINT32_MAX;
    }
    memcpy(in_copy, inputs, input_count * sizeof *in_copy);
  }
  const cml_ir_attrs_t* attrs_copy = &cml_zero_attrs;
  if (attrs) {
    cml_ir_attrs_t* a = (cml_ir_attrs_t*)cml__arena_alloc(&impl->arena, sizeof *a, 16);
    if (!a) {
      cml_fail_oom(b, name);
      return UINT32_MAX;
    }
    *a = *attrs;
    attrs_copy = a;
  }
  uint32_t node_index = impl->node_count;
  if (!cml__u32_vec_push(&f->nodes, b->allocator, node_index)) {
    cml_fail_oom(b, name);
    return UINT32_MAX;
  }
  cml_ir_node_t* node = &impl->nodes[node_index];
  memset(node, 0, sizeof *node);
  node->op = op;
  node->function = f->index;
  node->input_count = input_count;
  node->inputs = in_copy;
  node->output_count = output_count;
  node->first_output = impl->value_count;
  node->attrs = attrs_copy;
  for (uint32_t k = 0; k < output_count; ++k) {
    cml_ir_value_t* v = &impl->values[impl->value_count + k];
    v->node = node_index;
    v->output = k;
    v->shape = out_shapes[k];
  }
  impl->value_count += output_count;
  impl->node_count++;
  return node_index;
}

// Writes "<shape>, <shape>, ..." of the first inputs of a node into |buffer|.
static const char* cml_inputs_text(const cml__module_impl_t* impl, const uint32_t* inputs,
                                   uint32_t input_count, char* buffer, size_t size) {
  enum { kMaxListed = 4 };
  size_t used = 0;
  buffer[0] = '\0';
  if (input_count == 0) {
    snprintf(buffer, size, "none");
    return buffer;
  }
  for (uint32_t i = 0; i < input_count && i < kMaxListed && used < size; ++i) {
    char text[CML__SHAPE_TEXT];
    int n = snprintf(buffer + used, size - used, "%s%s", i ? ", " : "",
                     cml__shape_text(&impl->values[inputs[i]].shape, text));
    if (n < 0) break;
    used += (size_t)n;
  }
  if (input_count > kMaxListed && used < size) {
    snprintf(buffer + used, size - used, " and %u more", (unsigned)(input_count - kMaxListed));
  }
  return buffer;
}

// Every output shape of every op passes here: it must be a shape cml_shape_init accepts (rank,
// non-negative dims, at most CML_MAX_ELEMENTS elements), so no later size computation overflows.
// Dynamic axes (cml/shape.h): the ops that accept operands with dynamic axes. Their shape
// inference handles named dims (unification, symbolic sums, full-axis slices, zero padding);
// every other op would need axis arithmetic the specialization cannot redo, so it is rejected
// when an operand is dynamic.
static bool cml_op_takes_dynamic(cml_op_t op) {
  switch (cml_op_kind(op)) {
    case CML_OPK_UNARY:
    case CML_OPK_BINARY:
    case CML_OPK_COMPARE:
    case CML_OPK_REDUCE:
    case CML_OPK_DYNAMIC:
    case CML_OPK_CONTROL:
      return true;
    default:
      break;
  }
  switch (op) {
    case CML_OP_ARG_MIN_MAX:
    case CML_OP_BITCAST:
    case CML_OP_BROADCAST_IN_DIM:
    case CML_OP_CLAMP:
    case CML_OP_CONCATENATE:
    case CML_OP_CONVERT_DTYPE:
    case CML_OP_DOT:
    case CML_OP_DOT_GENERAL:
    case CML_OP_IOTA:
    case CML_OP_PAD:
    case CML_OP_RESHAPE:
    case CML_OP_REVERSE:
    case CML_OP_SLICE:
    case CML_OP_TRANSPOSE:
    case CML_OP_WHERE:
    case CML_OP_OPTIMIZATION_BARRIER:
    case CML_OP_SCHEDULING_BARRIER:
    case CML_OP_CAPTURED_VALUE:
    case CML_OP_FUSED_SOFTMAX:
    case CML_OP_FUSED_GELU:
      return true;
    default:
      return false;
  }
}

// Fails unless the backend advertises dynamic axes and |op| accepts them (|shape| is dynamic).
static bool cml_check_dynamic_operand(cml_function_t* f, cml_op_t op, const char* what, size_t pos,
                                      const cml_shape_t* shape) {
  cml_builder_t* b = f->builder;
  char text[CML__SHAPE_TEXT];
  int32_t axis = 0;
  while (axis < shape->rank && shape->dims[axis] >= 0) ++axis;
  if (!cml_backend_capabilities(b->backend)->dynamic_axes) {
    cml__fail(b, CML_STATUS_UNIMPLEMENTED,
              "%s: %s #%zu %s has a dynamic axis, but backend \"%s\" has no dynamic axes",
              cml_op_name(op), what, pos, cml__shape_text(shape, text),
              cml_backend_name(b->backend));
    return false;
  }
  if (!cml_op_takes_dynamic(op)) {
    cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
              "%s: %s #%zu %s: dynamic axis %d (\"%s\") is not supported by %s (it would "
              "need axis arithmetic; see docs/dynamic_shapes.md)",
              cml_op_name(op), what, pos, cml__shape_text(shape, text), (int)axis,
              cml_shape_axis_name(shape, axis), cml_op_name(op));
    return false;
  }
  return true;
}

static bool cml_check_output_shape(cml_function_t* f, cml_op_t op, const uint32_t* inputs,
                                   uint32_t input_count, const cml_shape_t* shape, uint32_t k) {
  cml_builder_t* b = f->builder;
  char dims[CML__SHAPE_TEXT], ins[640];
  if (shape->rank < 0 || shape->rank > CML_MAX_RANK) {
    cml__fail(b, CML_STATUS_INTERNAL, "%s: output #%u has rank %d (inputs %s)", cml_op_name(op),
              (unsigned)k, (int)shape->rank,
              cml_inputs_text(f->impl, inputs, input_count, ins, sizeof ins));
    return false;
  }
  cml_status_t st = cml_shape_validate(shape);
  if (st == CML_OK) {
    return !cml_shape_is_dynamic(shape) || cml_check_dynamic_operand(f, op, "output", k, shape);
  }
  bool negative = false;
  for (int32_t i = 0; i < shape->rank; ++i) negative = negative || shape->dims[i] < 0;
  if (negative || !cml_dtype_is_supported(shape->dtype)) {
    cml__fail(b, CML_STATUS_INVALID_ARGUMENT, "%s: output #%u %s is invalid (%s); inputs %s",
              cml_op_name(op), (unsigned)k, cml__shape_text(shape, dims), cml_status_message(st),
              cml_inputs_text(f->impl, inputs, input_count, ins, sizeof ins));
  } else {
    cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
              "%s: output #%u %s is too large: more than 2^55 elements (zero dims counted as "
              "1); inputs %s",
              cml_op_name(op), (unsigned)k, cml__shape_text(shape, dims),
              cml_inputs_text(f->impl, inputs, input_count, ins, sizeof ins));
  }
  cml_status_free(st);
  return false;
}

cml_value_t cml__op_add_node(cml_function_t* f, cml_op_t op, const uint32_t* inputs,
                             uint32_t input_count, const cml_shape_t* out_shapes,
                             uint32_t output_count, const cml_ir_attrs_t* attrs) {
  cml_builder_t* b = f->builder;
  cml__module_impl_t* impl = f->impl;
  if (b->unsupported_op != CML_OP_INVALID) {
    cml_op_t missing = b->unsupported_op;
    b->unsupported_op = CML_OP_INVALID;
    char operands[512] = "";
    size_t used = 0;
    for (uint32_t i = 0; i < input_count && i < 4 && used < sizeof operands; ++i) {
      char text[CML__SHAPE_TEXT];
      int n = snprintf(operands + used, sizeof operands - used, "%s%s", i ? ", " : "",
                       cml__shape_text(&impl->values[inputs[i]].shape, text));
      if (n > 0) used += (size_t)n;
    }
    char result[CML__SHAPE_TEXT];
    return cml__fail(b, CML_STATUS_UNIMPLEMENTED,
                     "%s: op not supported by backend \"%s\" (operands %s; result %s)",
                     cml_op_name(missing), cml_backend_name(b->backend),
                     input_count ? operands : "none",
                     output_count ? cml__shape_text(&out_shapes[0], result) : "none");
  }
  for (uint32_t k = 0; k < output_count; ++k) {
    if (!cml_check_output_shape(f, op, inputs, input_count, &out_shapes[k], k)) {
      return CML_VALUE_INVALID;
    }
  }
  for (uint32_t i = 0; i < input_count; ++i) {
    if (!cml__check_backend_dtype(f, op, impl->values[inputs[i]].shape.dtype)) return 0;
  }
  const cml_capabilities_t* caps = cml_backend_capabilities(b->backend);
  for (uint32_t k = 0; k < output_count; ++k) {
    if (!cml__check_backend_dtype(f, op, out_shapes[k].dtype)) return 0;
    if (caps->max_rank > 0 && out_shapes[k].rank > caps->max_rank) {
      char text[CML__SHAPE_TEXT];
      return cml__fail(b, CML_STATUS_UNIMPLEMENTED,
                       "%s: output %s has rank %d, above the maximum %d of backend \"%s\"",
                       cml_op_name(op), cml__shape_text(&out_shapes[k], text),
                       (int)out_shapes[k].rank, (int)caps->max_rank, cml_backend_name(b->backend));
    }
  }
  uint32_t node = cml_append_node(f, op, inputs, input_count, out_shapes, output_count, attrs);
  if (node == UINT32_MAX) return CML_VALUE_INVALID;
  return cml__value_id(b, impl->nodes[node].first_output);
}

// Maps value |index| (of an ancestor of |f|, or of |f|) to the value standing for it in |f|,
// adding captures to every closure on the way. Iterative: the closures between the owner and
// |f| (at most CML_MAX_NESTING_DEPTH) are collected, then captures are looked up (hashed) or
// added from the outermost one inward, so one resolution costs O(depth).
static bool cml_resolve_in(cml_function_t* f, const char* what, size_t pos, uint32_t index,
                           uint32_t* out_index) {
  cml__module_impl_t* impl = f->impl;
  cml_builder_t* b = f->builder;
  uint32_t owner = cml__value_node(impl, index)->function;
  if (owner == f->index) {
    *out_index = index;
    return true;
  }
  cml_function_t* chain[CML_MAX_NESTING_DEPTH];
  uint32_t chain_count = 0;
  cml_function_t* a = f;
  while (a && a->index != owner && chain_count < CML_MAX_NESTING_DEPTH) {
    chain[chain_count++] = a;
    a = a->parent;
  }
  char label[160], owner_label[160], text[CML__SHAPE_TEXT];
  if (!a || a->index != owner) {
    cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
              "%s: operand #%zu %s was produced in %s, which is neither %s nor one of its "
              "ancestors (only closures capture values of their ancestors)",
              what, pos, cml__shape_text(&impl->values[index].shape, text),
              cml__function_label(impl->functions[owner], owner_label, sizeof owner_label),
              cml__function_label(f, label, sizeof label));
    return false;
  }
  uint32_t outer = index;
  for (uint32_t k = chain_count; k-- > 0;) {
    cml_function_t* c = chain[k];
    const uint32_t* slot = cml_capture_slot(c, outer);
    if (slot && *slot != 0) {
      outer = c->captures_inner.data[*slot - 1];
      continue;
    }
    if (c->returned) {
      cml__fail(b, CML_STATUS_FAILED_PRECONDITION,
                "%s: operand #%zu %s must be captured by %s, which has already returned", what, pos,
                cml__shape_text(&impl->values[index].shape, text),
                cml__function_label(c, label, sizeof label));
      return false;
    }
    cml_shape_t shape = impl->values[outer].shape;
    uint32_t node = cml_append_node(c, CML_OP_CAPTURED_VALUE, NULL, 0, &shape, 1, NULL);
    if (node == UINT32_MAX) return false;
    uint32_t inner = impl->nodes[node].first_output;
    impl->nodes[node].index = c->captures_outer.count;
    if (!cml_capture_add(c, b->allocator, outer, inner)) {
      cml_fail_oom(b, what);
      return false;
    }
    outer = inner;
  }
  *out_index = outer;
  return true;
}

bool cml__value_in_scope(const cml_function_t* f, cml_value_t v, char* owner_label, size_t size) {
  const uint32_t index = v & CML__VALUE_INDEX_MASK;
  if ((v >> CML__VALUE_INDEX_BITS) != f->builder->tag || index == 0 ||
      index >= f->impl->value_count) {
    return true;  // not a value of this builder: the op's own checks name it
  }
  const uint32_t owner = cml__value_node(f->impl, index)->function;
  for (const cml_function_t* a = f; a; a = a->parent) {
    if (a->index == owner) return true;
  }
  cml__function_label(f->impl->functions[owner], owner_label, size);
  return false;
}

static bool cml_value_resolve(cml_function_t* f, const char* what, cml_value_t v, size_t pos,
                              uint32_t* out_index, cml_shape_t* out_shape) {
  cml_builder_t* b = f->builder;
  if (v == CML_VALUE_INVALID) {
    cml__fail(b, CML_STATUS_INVALID_ARGUMENT, "%s: operand #%zu is CML_VALUE_INVALID", what, pos);
    return false;
  }
  uint32_t tag = v >> CML__VALUE_INDEX_BITS, index = v & CML__VALUE_INDEX_MASK;
  if (tag != b->tag) {
    cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
              tag == 0 ? "%s: operand #%zu (value id 0x%08x) is not a value of any builder (a "
                         "made-up or uninitialized id)"
                       : "%s: operand #%zu (value id 0x%08x) belongs to another builder",
              what, pos, (unsigned)v);
    return false;
  }
  if (index == 0 || index >= f->impl->value_count) {
    cml__fail(b, CML_STATUS_INVALID_ARGUMENT, "%s: operand #%zu (value id 0x%08x) is unknown", what,
              pos, (unsigned)v);
    return false;
  }
  if (!cml_resolve_in(f, what, pos, index, out_index)) return false;
  if (out_shape) *out_shape = f->impl->values[*out_index].shape;
  return true;
}

bool cml__op_input(cml_function_t* f, cml_op_t op, cml_value_t v, size_t pos, uint32_t* out_index,
                   cml_shape_t* out_shape) {
  if (!cml_value_resolve(f, cml_op_name(op), v, pos, out_index, out_shape)) return false;
  const cml_shape_t* s = &f->impl->values[*out_index].shape;
  if (cml_shape_is_dynamic(s) && !cml_check_dynamic_operand(f, op, "operand", pos, s)) return false;
  return true;
}

bool cml__check_callee(cml_function_t* f, cml_op_t op, const cml_function_t* c, const char* what,
                       bool allow_named) {
  cml_builder_t* b = f->builder;
  char label[160], clabel[160];
  const char* name = cml_op_name(op);
  if (!c) {
    cml__fail(b, CML_STATUS_INVALID_ARGUMENT, "%s: %s is NULL", name, what);
    return false;
  }
  if (c->impl != f->impl) {
    cml__fail(b, CML_STATUS_INVALID_ARGUMENT, "%s: %s belongs to another builder", name, what);
    return false;
  }
  bool direct_closure = c->parent == f;
  bool named = !c->parent && c->index != 0;
  if (!direct_closure && !(allow_named && named)) {
    cml__fail(b, CML_STATUS_INVALID_ARGUMENT, "%s: %s (%s) must be a closure of %s%s", name, what,
              cml__function_label(c, clabel, sizeof clabel),
              cml__function_label(f, label, sizeof label),
              allow_named ? " or a named function" : "");
    return false;
  }
  if (!c->returned) {
    cml__fail(b, CML_STATUS_FAILED_PRECONDITION, "%s: %s (%s) has not returned yet", name, what,
              cml__function_label(c, clabel, sizeof clabel));
    return false;
  }
  // |f| sits at depth f->depth below its top-level function and |c| runs inside it. For a
  // closure of |f| this always holds (checked when the closure grew); a named callee can break it.
  if ((uint64_t)f->depth + c->height > CML_MAX_NESTING_DEPTH) {
    cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
              "%s: %s (%s) nests %u levels of functions; run from %s (at nesting depth %u) "
              "that makes nesting depth %u, above CML_MAX_NESTING_DEPTH (%d)",
              name, what, cml__function_label(c, clabel, sizeof clabel), c->height,
              cml__function_label(f, label, sizeof label), f->depth, f->depth + c->height,
              CML_MAX_NESTING_DEPTH);
    return false;
  }
  if (c->height + 1 > f->height) f->height = c->height + 1;
  return true;
}

//===--- parameters, constants, return ---===//

cml_value_t cml_parameter(cml_function_t* function, const char* name, const cml_shape_t* shape) {
  if (!cml__op_begin(function, CML_OP_PARAMETER)) return CML_VALUE_INVALID;
  cml_function_t* f = function;
  cml_builder_t* b = f->builder;
  cml__module_impl_t* impl = f->impl;
  cml_shape_t s;
  cml_status_t st = cml__infer_user_shape(CML_OP_PARAMETER, shape, true, &s);
  if (st != CML_OK) return cml__fail_status(b, st);
  if (cml_shape_is_dynamic(&s) && !cml_backend_capabilities(b->backend)->dynamic_axes) {
    char text[CML__SHAPE_TEXT];
    return cml__fail(b, CML_STATUS_UNIMPLEMENTED,
                     "Parameter: %s has a dynamic axis, but backend \"%s\" has no dynamic axes",
                     cml__shape_text(&s, text), cml_backend_name(b->backend));
  }
  char auto_name[48];
  if (!name || !*name) {  // "p<i>", or "p<i>_<k>" when the caller already took "p<i>"
    snprintf(auto_name, sizeof auto_name, "p%u", f->params.count);
    for (unsigned k = 1; cml_name_exists(impl, f->index, auto_name); ++k) {
      snprintf(auto_name, sizeof auto_name, "p%u_%u", f->params.count, k);
    }
    name = auto_name;
  }
  char label[160];
  if (cml_name_exists(impl, f->index, name)) {
    return cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
                     "Parameter: %s already has a parameter named \"%s\"",
                     cml__function_label(f, label, sizeof label), name);
  }
  if (!cml__check_backend_dtype(f, CML_OP_PARAMETER, s.dtype)) return CML_VALUE_INVALID;
  char* copy = cml__arena_strdup(&impl->arena, name);
  if (!copy) return cml_fail_oom(b, "Parameter");
  uint32_t node = cml_append_node(f, CML_OP_PARAMETER, NULL, 0, &s, 1, NULL);
  if (node == UINT32_MAX) return CML_VALUE_INVALID;
  uint32_t value = impl->nodes[node].first_output;
  impl->nodes[node].name = copy;
  impl->nodes[node].index = f->params.count;
  if (!cml__u32_vec_push(&f->params, b->allocator, value) || !cml_name_add(impl, f->index, copy)) {
    return cml_fail_oom(b, "Parameter");
  }
  return cml__value_id(b, value);
}

cml_value_t cml_constant(cml_function_t* function, const cml_shape_t* shape, const void* data) {
  if (!cml__op_begin(function, CML_OP_CONSTANT)) return CML_VALUE_INVALID;
  cml_function_t* f = function;
  cml_builder_t* b = f->builder;
  cml__module_impl_t* impl = f->impl;
  cml_shape_t s;
  cml_status_t st = cml__infer_user_shape(CML_OP_CONSTANT, shape, true, &s);
  if (st != CML_OK) return cml__fail_status(b, st);
  size_t size = cml_shape_byte_size(&s);
  char text[CML__SHAPE_TEXT];
  if (cml_shape_is_dynamic(&s)) {
    return cml__fail(b, CML_STATUS_INVALID_ARGUMENT,
                     "Constant: %s has a dynamic axis (constants need a static shape)",
                     cml__shape_text(&s, text));
  }
  if (!data && size > 0) {
    return cml__fail(b, CML_STATUS_INVALID_ARGUMENT, "Constant: data is NULL for %s",
                     cml__shape_text(&s, text));
  }
  if (!cml__check_backend_dtype(f, CML_OP_CONSTANT, s.dtype)) return CML_VALUE_INVALID;
  void* copy = cml__arena_alloc(&impl->arena, size, 64);
  if (!copy) return cml_fail_oom(b, "Constant");
  if (size > 0) memcpy(copy, data, size);
  uint32_t node = cml_append_node(f, CML_OP_CONSTANT, NULL, 0, &s, 1, NULL);
  if (node == UINT32_MAX) return CML_VALUE_INVALID;
  impl->nodes[node].data = copy;
  impl->nodes[node].data_size = size;
  return cml__value_id(b, impl->nodes[node].first_output);
}

// Converts |value| as ConvertDType does (float -> int truncates toward zero and saturates,
// NaN -> 0). Returns false for dtypes a scalar cannot be made of.
static bool cml_scalar_from_f64(cml_dtype_t dtype, double value, unsigned char* out) {
  double t = isnan(value) ? 0.0 : trunc(value);
  int64_t i64 = 0;
  uint64_t u64 = 0;
  if (t >= 9223372036854775807.0) {
    i64 = INT64_MAX;
  } else if (t <= -9223372036854775808.0) {
    i64 = INT64_MIN;
  } else {
    i64 = (int64_t)t;
  }
  if (t >= 18446744073709551615.0) {
    u64 = UINT64_MAX;
  } else if (t <= 0) {
    u64 = 0;
  } else {
    u64 = (uint64_t)t;
  }
#define SAT_S(T, MIN, MAX)                                      \
  {                                                             \
    T v = (T)(i64 < (MIN) ? (MIN) : i64 > (MAX) ? (MAX) : i64); \
    memcpy(out, &v, sizeof v);                                  \
    return true;                                                \
  }
#define SAT_U(T, MAX)                     \
  {                                       \
    T v = (T)(u64 > (MAX) ? (MAX) : u64); \
    memcpy(out, &v, sizeof v);            \
    return true;                          \
  }
  switch (dtype) {
    case CML_DTYPE_BOOL:
      out[0] = value != 0.0;
      return true;
    case CML_DTYPE_I8:
      SAT_S(int8_t, INT8_MIN, INT8_MAX)
    case CML_DTYPE_I16:
      SAT_S(int16_t, INT16_MIN, INT16_MAX)
    case CML_DTYPE_I32:
      SAT_S(int32_t, INT32_MIN, INT32_MAX)
    case CML_DTYPE_I64:
      SAT_S(int64_t, INT64_MIN, INT64_MAX)
    case CML_DTYPE_U8:
      SAT_U(uint8_t, UINT8_MAX)
    case CML_DTYPE_U16:
      SAT_U(uint16_t, UINT16_MAX)
    case CML_DTYPE_U32:
      SAT_U(uint32_t, UINT32_MAX)
    case CML_DTYPE_U64:
      SAT_U(uint64_t, UINT64_MAX)
    case CML_DTYPE_I4:
      SAT_S(int8_t, -8, 7)
    case CML_DTYPE_I2:
      SAT_S(int8_t, -2, 1)
    case CML_DTYPE_I1:
      SAT_S(int8_t, -1, 0)
    case CML_DTYPE_U4:
      SAT_U(uint8_t, 15)
    case CML_DTYPE_U2:
      SAT_U(uint8_t, 3)
    case CML_DTYPE_U1:
      SAT_U(uint8_t, 1)
    case CML_DTYPE_F16: {
      uint16_t v = cml_f64_to_f16(value);
      memcpy(out, &v, 2);
      return true;
    }
    case CML_DTYPE_BF16: {
      uint16_t v = cml_f64_to_bf16(value);
      memcpy(out, &v, 2);
      return true;
    }
    case CML_DTYPE_F32: {
      float v = (float)value;
      memcpy(out, &v, 4);
      return true;
    }
    case CML_DTYPE_F64:
      memcpy(out, &value, 8);
      return true;
    case CML_DTYPE_C64: {
      cml_c64_t v = {(float)value, 0.0f};
      memcpy(out, &v, sizeof v);
      return true;
    }
    case CML_DTYPE_C128: {
      cml_c128_t v = {value, 0.0};
      memcpy(out, &v, sizeof v);
      return true;
    }
    default:
      return false;
  }
#undef SAT_S
#undef SAT_U
}

// Converts |value| as ConvertDType does for an int64 source (ints wrap, floats round to
// nearest even, Bool is value != 0).
static bool cml_scalar_from_i64(cml_dtype_t dtype, int64_t value, unsigned char* out) {
  uint64_t u = (uint64_t)value;
  switch (dtype) {
    case CML_DTYPE_BOOL:
      out[0] = value != 0;
      return true;
    case CML_DTYPE_I8:
    case CML_DTYPE_U8: {
      uint8_t v = (uint8_t)u;
      memcpy(out, &v, 1);
      return true;
    }
    case CML_DTYPE_I16:
    case CML_DTYPE_U16: {
      uint16_t v = (uint16_t)u;
      memcpy(out, &v, 2);
      return true;
    }
    case CML_DTYPE_I32:
    case CML_DTYPE_U32: {
      uint32_t v = (uint32_t)u;
      memcpy(out, &v, 4);
      return true;
    }
    case CML_DTYPE_I64:
    case CML_DTYPE_U64:
      memcpy(out, &u, 8);
      return true;
    case CML_DTYPE_I4:
    case CML_DTYPE_U4:
      out[0] = (uint8_t)(u & 0xf);
      return true;
    case CML_DTYPE_I2:
    case CML_DTYPE_U2:
      out[0] = (uint8_t)(u & 0x3);
      return true;
    case CML_DTYPE_I1:
    case CML_DTYPE_U1:
      out[0] = (uint8_t)(u & 0x1);
      return true;
    case CML_DTYPE_F16: {
      uint16_t v = cml_f32_to_f16((float)value);
      memcpy(out, &v, 2);
      return true;
    }
    case CML_DTYPE_BF16: {
      // Rounded once, as ConvertDType does (through a round-to-odd double): (float)value
      // rounded to 24 bits first, and 2^24 + 2^16 + 1 lost the 1 that breaks the tie.
      uint16_t v = cml_f64_to_bf16(cml__i64_to_f64_odd(value));
      memcpy(out, &v, 2);
      return true;
    }
    case CML_DTYPE_F32: {
      float v = (float)value;
      memcpy(out, &v, 4);
      return true;
    }
    case CML_DTYPE_F64: {
      double v = (double)value;
      memcpy(out, &v, 8);
      return true;
    }
    case CML_DTYPE_C64: {
      cml_c64_t v = {(float)value, 0.0f};
      memcpy(out, &v, sizeof v);
      return true;
    }
    case CML_DTYPE_C128: {
      cml_c128_t v = {(double)value, 0.0};
      memcpy(out, &v, sizeof v);
      return true;
    }
    default:
      return false;
  }
}

cml_value_t cml_constant_scalar_f64(cml_function_t* function, cml_dtype_t dtype, double value) {
  if (!cml__op_begin(function, CML_OP_CONSTANT)) return CML_VALUE_INVALID;
  unsigned char bytes[16] = {0};
  if (!cml_scalar_from_f64(dtype, value, bytes)) {
    return cml__fail(function->builder, CML_STATUS_INVALID_ARGUMENT,
                     "Constant: cannot make a scalar of dtype %s", cml_dtype_name(dtype));
  }
  if (cml_dtype_is_packed(dtype)) bytes[0] &= (uint8_t)((1u << cml_dtype_bits(dtype)) - 1u);
  cml_shape_t s = cml_shape_scalar(dtype);
  return cml_constant(function, &s, bytes);
}

cml_value_t cml_constant_scalar_i64(cml_function_t* function, cml_dtype_t dtype, int64_t value) {
  if (!cml__op_begin(function, CML_OP_CONSTANT)) return CML_VALUE_INVALID;
  unsigned char bytes[16] = {0};
  if (!cml_scalar_from_i64(dtype, value, bytes)) {
    return cml__fail(function->builder, CML_STATUS_INVALID_ARGUMENT,
                     "Constant: cannot make a scalar of dtype %s", cml_dtype_name(dtype));
  }
  cml_shape_t s = cml_shape_scalar(dtype);
  return cml_constant(function, &s, bytes);
}

// Records |status| (unless an error is pending) and returns a copy of the builder's error.
static cml_status_t cml_fail_return(cml_builder_t* b, cml_status_t status) {
  cml__fail_status(b, status);
  return cml_status_clone(b->error);
}

cml_status_t cml_function_return(cml_function_t* function, const cml_value_t* outputs,
                                 size_t count) {
  if (!function || !function->builder) {
    return cml_status_make(CML_STATUS_INVALID_ARGUMENT, "Return: NULL function");
  }
  cml_function_t* f = function;
  cml_builder_t* b = f->builder;
  char label[160];
  // Misuse of a finished function or builder is reported to the caller only: the builder keeps
  // its state, so a complete module stays compilable (and a compiled one stays compiled).
  if (b->compiled) {
    return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                           "Return: %s: the builder was already compiled",
                           cml__function_label(f, label, sizeof label));
  }
  if (f->returned) {
    return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                           "Return: %s has already returned (a function returns once)",
                           cml__function_label(f, label, sizeof label));
  }
  if (b->error != CML_OK) return cml_status_clone(b->error);
  if (count == 0 || !outputs) {
    return cml_fail_return(b, cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                                              count ? "Return: %s: NULL outputs for %zu values"
                                                    : "Return: %s needs at least one output",
                                              cml__function_label(f, label, sizeof label), count));
  }
  if (count > UINT32_MAX / 2) {
    return cml_fail_return(
        b, cml_status_make(CML_STATUS_INVALID_ARGUMENT, "Return: too many outputs (%zu)", count));
  }
  cml__u32_vec_t resolved = {0};
  for (size_t i = 0; i < count; ++i) {
    uint32_t index;
    if (!cml_value_resolve(f, "Return", outputs[i], i, &index, NULL) ||
        !cml__u32_vec_push(&resolved, b->allocator, index)) {
      cml__u32_vec_free(&resolved, b->allocator);
      if (b->error == CML_OK) cml_fail_oom(b, "Return");
      return cml_status_clone(b->error);
    }
  }
  cml__u32_vec_free(&f->outputs, b->allocator);
  f->outputs = resolved;
  f->returned = true;
  // A returned closure counts in its parent's nesting height (whether or not an op uses it).
  // Its depth - 1 + height is within the limit, so its parent's is too.
  cml_function_t* p = f->parent;
  if (p && !p->returned && f->height + 1 > p->height) p->height = f->height + 1;
  return CML_OK;
}
