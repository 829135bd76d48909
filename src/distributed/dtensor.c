// SPDX-License-Identifier: Apache-2.0
// src/distributed/dtensor.c: host-side sharded tensors (GoMLX's dtensor): split a host array into
// one buffer per mesh position by a sharding spec, wrap existing shards, and merge them back
// (replicas read once).
#include <string.h>

#include "cml/backend.h"
#include "distributed/distributed_internal.h"

#define INVALID(...) cml_status_make(CML_STATUS_INVALID_ARGUMENT, __VA_ARGS__)

struct cml_dtensor_t {
  cml_mesh_t* mesh;         // owned copy; sharding.mesh points at it
  cml_sharding_t sharding;  // rank at most the logical rank
  cml_shape_t logical;
  cml_shape_t shard;
  size_t shard_count;     // the mesh's device count
  cml_buffer_t** shards;  // one retained buffer per mesh position
};

static cml_dtensor_t* cml_dtensor_alloc(const cml_sharding_t* sharding, size_t count) {
  cml_allocator_t a = cml_allocator_system();
  cml_dtensor_t* t = (cml_dtensor_t*)cml_allocator_malloc(a, sizeof *t, 16);
  if (!t) return NULL;
  memset(t, 0, sizeof *t);
  t->mesh = cml__mesh_clone(sharding->mesh);
  t->shards = (cml_buffer_t**)cml_allocator_malloc(a, count * sizeof *t->shards, 16);
  if (!t->mesh || !t->shards) {
    cml_mesh_destroy(t->mesh);
    if (t->shards) cml_allocator_free(a, t->shards, count * sizeof *t->shards);
    cml_allocator_free(a, t, sizeof *t);
    return NULL;
  }
  memset(t->shards, 0, count * sizeof *t->shards);
  t->shard_count = count;
  t->sharding = *sharding;
  t->sharding.mesh = t->mesh;
  return t;
}

void cml_dtensor_destroy(cml_dtensor_t* tensor) {
  if (!tensor) return;
  cml_allocator_t a = cml_allocator_system();
  for (size_t k = 0; k < tensor->shard_count; ++k) cml_buffer_release(tensor->shards[k]);
  cml_allocator_free(a, tensor->shards, tensor->shard_count * sizeof *tensor->shards);
  cml_mesh_destroy(tensor->mesh);
  cml_allocator_free(a, tensor, sizeof *tensor);
}

// The checks from_host and from_shards share: a spec with a mesh, valid, a dtype with whole
// bytes.
static cml_status_t cml_dtensor_check_spec(const char* what, const cml_sharding_t* sharding) {
  if (!sharding || !sharding->mesh) {
    return INVALID(
        "%s: the sharding has no mesh (a dtensor needs one: use "
        "cml_sharding_replicated for a replicated tensor)",
        what);
  }
  cml_status_t st = cml_sharding_validate(sharding);
  return st == CML_OK ? CML_OK : cml_status_annotate(st, "%s", what);
}

// Copies between a logical host array and one shard (|to_shard|: logical -> shard, else shard ->
// logical). |offsets| are the shard's start per axis. The innermost axes the shard covers fully
// are copied as one contiguous block.
static void cml_dtensor_copy(const cml_shape_t* logical, const cml_shape_t* shard,
                             const int64_t* offsets, unsigned char* host, unsigned char* local,
                             bool to_shard) {
  const size_t elem = (size_t)cml_dtype_bits(logical->dtype) / 8;
  int32_t rank = logical->rank;
  if (cml_shape_element_count(shard) == 0) return;
  // Axes [inner, rank) are whole in the shard: one block of |block| bytes per outer index.
  int32_t inner = rank;
  size_t block = elem;
  while (inner > 0 && shard->dims[inner - 1] == logical->dims[inner - 1]) {
    --inner;
    block *= (size_t)shard->dims[inner];
  }
  if (inner > 0) {
    // The first partial axis contributes a contiguous run too.
    --inner;
    block *= (size_t)shard->dims[inner];
  }
  // Logical strides in elements.
  int64_t stride[CML_MAX_RANK];
  int64_t s = 1;
  for (int32_t d = rank; d-- > 0;) {
    stride[d] = s;
    s *= logical->dims[d];
  }
  int64_t index[CML_MAX_RANK] = {0};
  size_t local_at = 0;
  for (;;) {
    int64_t src = 0;
    for (int32_t d = 0; d < rank; ++d) src += (offsets[d] + index[d]) * stride[d];
    unsigned char* h = host + (size_t)src * elem;
    if (to_shard) {
      memcpy(local + local_at, h, block);
    } else {
      memcpy(h, local + local_at, block);
    }
    local_at += block;
    // Next outer index (axes [0, inner)).
    int32_t d = inner;
    while (d > 0) {
      --d;
      if (++index[d] < shard->dims[d]) break;
      index[d] = 0;
      if (d == 0) return;
    }
    if (inner == 0) return;
  }
}

cml_status_t cml_dtensor_from_host(cml_backend_t* backend, const cml_sharding_t* sharding,
                                   const cml_shape_t* logical, const void* data, size_t size,
                                   const int32_t* devices, cml_dtensor_t** out_tensor) {
  static const char what[] = "cml_dtensor_from_host";
  if (out_tensor) *out_tensor = NULL;
  if (!backend || !logical || !out_tensor || (!data && size > 0)) {
    return INVALID("%s: NULL backend, logical shape, data or out_tensor", what);
  }
  CML_RETURN_IF_ERROR(cml_dtensor_check_spec(what, sharding));
  char text[160];
  cml_shape_t checked;
  cml_status_t st = cml_shape_init(&checked, logical->dtype, logical->rank, logical->dims);
  if (st != CML_OK) return cml_status_annotate(st, "%s: logical shape", what);
  if (cml_dtype_is_packed(logical->dtype)) {
    return INVALID("%s: %s: sub-byte dtypes cannot be sharded", what,
                   cml_shape_format(logical, text, sizeof text));
  }
  size_t want = cml_shape_byte_size(logical);
  if (size != want) {
    return INVALID("%s: %s needs %zu bytes, got %zu", what,
                   cml_shape_format(logical, text, sizeof text), want, size);
  }
  cml_shape_t shard;
  st = cml_sharding_shard_shape(sharding, logical, &shard);
  if (st != CML_OK) return cml_status_annotate(st, "%s", what);
  const cml_mesh_t* mesh = sharding->mesh;
  size_t count = (size_t)mesh->device_count;
  int backend_devices = cml_backend_device_count(backend);
  for (size_t k = 0; k < count; ++k) {
    int d = devices ? devices[k] : (mesh->device_assignment ? mesh->device_assignment[k] : (int)k);
    if (d < 0 || d >= backend_devices) {
      return INVALID(
          "%s: shard %zu of mesh \"%s\" goes to device %d, but backend \"%s\" has "
          "devices 0..%d%s",
          what, k, mesh->name, d, cml_backend_name(backend), backend_devices - 1,
          devices ? "" : " (the mesh's device count or assignment is too large)");
    }
  }
  cml_dtensor_t* t = cml_dtensor_alloc(sharding, count);
  if (!t) return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "%s: out of memory", what);
  t->logical = *logical;
  t->shard = shard;
  cml_allocator_t a = cml_allocator_system();
  size_t shard_bytes = cml_shape_byte_size(&shard);
  unsigned char* local = (unsigned char*)cml_allocator_malloc(a, shard_bytes ? shard_bytes : 1, 64);
  if (!local) {
    cml_dtensor_destroy(t);
    return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "%s: out of memory", what);
  }
  for (size_t k = 0; k < count && st == CML_OK; ++k) {
    int d = devices ? devices[k] : (mesh->device_assignment ? mesh->device_assignment[k] : (int)k);
    int64_t offsets[CML_MAX_RANK];
    st = cml_sharding_shard_offsets(&t->sharding, logical, (int64_t)k, offsets);
    if (st != CML_OK) break;
    cml_dtensor_copy(logical, &shard, offsets, (unsigned char*)(uintptr_t)data, local, true);
    st = cml_buffer_from_host(backend, d, &shard, local, shard_bytes, &t->shards[k]);
    if (st != CML_OK) st = cml_status_annotate(st, "%s: shard %zu on device %d", what, k, d);
  }
  cml_allocator_free(a, local, shard_bytes ? shard_bytes : 1);
  if (st != CML_OK) {
    cml_dtensor_destroy(t);
    return st;
  }
  *out_tensor = t;
  return CML_OK;
}

cml_status_t cml_dtensor_from_shards(const cml_sharding_t* sharding, cml_buffer_t* const* shards,
                                     size_t shard_count, cml_dtensor_t** out_tensor) {
  static const char what[] = "cml_dtensor_from_shards";
  if (out_tensor) *out_tensor = NULL;
  if (!out_tensor || (!shards && shard_count > 0)) {
    return INVALID("%s: NULL shards or out_tensor", what);
  }
  CML_RETURN_IF_ERROR(cml_dtensor_check_spec(what, sharding));
  const cml_mesh_t* mesh = sharding->mesh;
  if (shard_count != (size_t)mesh->device_count) {
    return INVALID("%s: mesh \"%s\" has %lld devices, got %zu shards", what, mesh->name,
                   (long long)mesh->device_count, shard_count);
  }
  char a_text[160], b_text[160];
  for (size_t k = 0; k < shard_count; ++k) {
    if (!shards[k]) return INVALID("%s: shard %zu is NULL", what, k);
    if (!cml_buffer_is_valid(shards[k])) {
      return cml_status_make(CML_STATUS_FAILED_PRECONDITION, "%s: shard %zu was donated", what, k);
    }
    if (cml_buffer_backend(shards[k]) != cml_buffer_backend(shards[0])) {
      return INVALID("%s: shard %zu is a buffer of backend \"%s\", shard 0 of backend \"%s\"", what,
                     k, cml_backend_name(cml_buffer_backend(shards[k])),
                     cml_backend_name(cml_buffer_backend(shards[0])));
    }
    if (!cml_shape_equal(cml_buffer_shape(shards[k]), cml_buffer_shape(shards[0]))) {
      return INVALID("%s: shard %zu has shape %s, shard 0 has %s (all shards share one shape)",
                     what, k, cml_shape_format(cml_buffer_shape(shards[k]), a_text, sizeof a_text),
                     cml_shape_format(cml_buffer_shape(shards[0]), b_text, sizeof b_text));
    }
  }
  const cml_shape_t* shard = cml_buffer_shape(shards[0]);
  if (cml_dtype_is_packed(shard->dtype)) {
    return INVALID("%s: %s: sub-byte dtypes cannot be sharded", what,
                   cml_shape_format(shard, a_text, sizeof a_text));
  }
  cml_shape_t logical;
  cml_status_t st = cml_sharding_logical_shape(sharding, shard, &logical);
  if (st != CML_OK) return cml_status_annotate(st, "%s", what);
  cml_dtensor_t* t = cml_dtensor_alloc(sharding, shard_count);
  if (!t) return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "%s: out of memory", what);
  t->logical = logical;
  t->shard = *shard;
  for (size_t k = 0; k < shard_count; ++k) t->shards[k] = cml_buffer_retain(shards[k]);
  *out_tensor = t;
  return CML_OK;
}

const cml_shape_t* cml_dtensor_shape(const cml_dtensor_t* tensor) {
  return tensor ? &tensor->logical : NULL;
}

const cml_shape_t* cml_dtensor_shard_shape(const cml_dtensor_t* tensor) {
  return tensor ? &tensor->shard : NULL;
}

const cml_sharding_t* cml_dtensor_sharding(const cml_dtensor_t* tensor) {
  return tensor ? &tensor->sharding : NULL;
}

size_t cml_dtensor_shard_count(const cml_dtensor_t* tensor) {
  return tensor ? tensor->shard_count : 0;
}

cml_buffer_t* cml_dtensor_shard(const cml_dtensor_t* tensor, size_t k) {
  return (tensor && k < tensor->shard_count) ? tensor->shards[k] : NULL;
}

cml_status_t cml_dtensor_to_host(const cml_dtensor_t* tensor, void* data, size_t size) {
  static const char what[] = "cml_dtensor_to_host";
  if (!tensor || (!data && size > 0)) return INVALID("%s: NULL tensor or data", what);
  char text[160];
  size_t want = cml_shape_byte_size(&tensor->logical);
  if (size != want) {
    return INVALID("%s: %s needs %zu bytes, got %zu", what,
                   cml_shape_format(&tensor->logical, text, sizeof text), want, size);
  }
  // The distinct shards: index = mixed radix of the per-axis shard numbers. A position whose
  // shard was already read (a replica) is skipped.
  const cml_sharding_t* s = &tensor->sharding;
  int64_t distinct = 1;
  for (int d = 0; d < s->rank; ++d) distinct *= cml_sharding_num_shards(s, d);
  cml_allocator_t a = cml_allocator_system();
  size_t shard_bytes = cml_shape_byte_size(&tensor->shard);
  uint8_t* seen = (uint8_t*)cml_allocator_malloc(a, (size_t)distinct, 1);
  unsigned char* local = (unsigned char*)cml_allocator_malloc(a, shard_bytes ? shard_bytes : 1, 64);
  cml_status_t st = CML_OK;
  if (!seen || !local)
    st = cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED, "%s: out of memory", what);
  if (seen) memset(seen, 0, (size_t)distinct);
  for (size_t k = 0; k < tensor->shard_count && st == CML_OK; ++k) {
    int64_t offsets[CML_MAX_RANK];
    st = cml_sharding_shard_offsets(s, &tensor->logical, (int64_t)k, offsets);
    if (st != CML_OK) break;
    int64_t index = 0;
    for (int d = 0; d < s->rank; ++d) {
      int64_t n = cml_sharding_num_shards(s, d);
      index = index * n + (tensor->shard.dims[d] ? offsets[d] / tensor->shard.dims[d] : 0);
    }
    if (seen[index]) continue;
    seen[index] = 1;
    st = cml_buffer_copy_to_host(tensor->shards[k], local, shard_bytes);
    if (st != CML_OK) {
      st = cml_status_annotate(st, "%s: shard %zu", what, k);
      break;
    }
    cml_dtensor_copy(&tensor->logical, &tensor->shard, offsets, (unsigned char*)data, local, false);
  }
  if (seen) cml_allocator_free(a, seen, (size_t)distinct);
  if (local) cml_allocator_free(a, local, shard_bytes ? shard_bytes : 1);
  return st;
}
