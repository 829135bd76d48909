// SPDX-License-Identifier: Apache-2.0
// src/distributed/dataset.c: device datasets (cml/dataset.h): host batches from a producer,
// split by sharding specs, this process's shards uploaded, prefetched by a background thread
// into a bounded queue.
#include "cml/dataset.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#if !defined(__wasi__)
#include <unistd.h>
#endif

#include "distributed/distributed_internal.h"
#include "base/base_internal.h"

#define INVALID(...) cml_status_make(CML_STATUS_INVALID_ARGUMENT, __VA_ARGS__)

static const char kCreate[] = "cml_device_dataset_create";

struct cml_device_batch_t {
  int64_t index;
  int64_t rows;
  size_t tensor_count;
  size_t shard_count;
  int32_t* devices;       // shard_count entries (a copy: a batch may outlive its dataset)
  cml_buffer_t** shards;  // tensor-major: shards[t * shard_count + k]; NULL when not local
};

struct cml_device_dataset_t {
  cml_backend_t* backend;  // retained
  cml_dataset_t source;
  size_t tensor_count;  // source tensors + the mask under PAD
  size_t shard_count;   // mesh positions
  int64_t batch_size;
  cml_last_batch_t last_batch;
  size_t depth;
  cml_shape_t shapes[CML_DATASET_MAX_TENSORS];
  cml_shape_t shard_shapes[CML_DATASET_MAX_TENSORS];
  cml_sharding_t shardings[CML_DATASET_MAX_TENSORS];  // meshes point into |meshes|
  cml_mesh_t* meshes[CML_DATASET_MAX_TENSORS];        // owned clones (NULL: replicated, 1 spot)
  int32_t* devices;                                   // shard_count
  bool* local;                                        // shard_count
  void* host[CML_DATASET_MAX_TENSORS];                // one global batch per tensor
  unsigned char* scratch;                             // the largest shard
  size_t scratch_bytes;

  // Producer side (the thread, or the caller when depth is 0).
  int64_t next_index;
  bool source_ended;  // the producer said end (or a short batch was the last one)

  // The queue, guarded by |mutex|.
  pthread_mutex_t mutex;
  pthread_cond_t not_empty, not_full;
  cml_device_batch_t** queue;  // ring of |depth| entries
  size_t head, count;
  bool done;           // no batch will be pushed any more (end of data or |error|)
  cml_status_t error;  // the error that ended the data (owned), or CML_OK
  bool stop;           // destroy asked the thread to finish
  bool has_thread;
  pthread_t thread;
  long pid;  // the creating process (0 on wasm32-wasi): a child of fork() has no producer thread
};

const char* cml_last_batch_name(cml_last_batch_t policy) {
  switch (policy) {
    case CML_LAST_BATCH_DROP:
      return "Drop";
    case CML_LAST_BATCH_PAD:
      return "Pad";
    case CML_LAST_BATCH_ERROR:
      return "Error";
    default:
      return "unknown";
  }
}

void cml_device_dataset_options_init(cml_device_dataset_options_t* options) {
  if (!options) return;
  memset(options, 0, sizeof *options);
  options->struct_size = sizeof *options;
  options->prefetch_depth = 2;
  options->last_batch = CML_LAST_BATCH_DROP;
}

//===--- batches ---===//

static void* cml_dataset_alloc(size_t bytes) {
  void* p = cml_allocator_malloc(cml_allocator_system(), bytes ? bytes : 1, 64);
  if (p) memset(p, 0, bytes ? bytes : 1);
  return p;
}

static void cml_dataset_free(void* p, size_t bytes) {
  cml_allocator_free(cml_allocator_system(), p, bytes ? bytes : 1);
}

void cml_device_batch_release(cml_device_batch_t* batch) {
  if (!batch) return;
  size_t n = batch->tensor_count * batch->shard_count;
  if (batch->shards) {
    for (size_t i = 0; i < n; ++i) cml_buffer_release(batch->shards[i]);
    cml_dataset_free(batch->shards, n * sizeof *batch->shards);
  }
  if (batch->devices) cml_dataset_free(batch->devices, batch->shard_count * sizeof(int32_t));
  cml_dataset_free(batch, sizeof *batch);
}

int64_t cml_device_batch_index(const cml_device_batch_t* batch) { return batch ? batch->index : 0; }

int64_t cml_device_batch_rows(const cml_device_batch_t* batch) { return batch ? batch->rows : 0; }

cml_buffer_t* cml_device_batch_shard(const cml_device_batch_t* batch, size_t tensor,
                                     size_t position) {
  if (!batch || tensor >= batch->tensor_count || position >= batch->shard_count) return NULL;
  return batch->shards[tensor * batch->shard_count + position];
}

int cml_device_batch_device(const cml_device_batch_t* batch, size_t position) {
  if (!batch || position >= batch->shard_count) return -1;
  return batch->devices[position];
}

//===--- splitting ---===//

// Copies the slab of |logical| data starting at |offsets| with the dims of |shard| into the
// contiguous |dst|. Row-major; the innermost dimension is copied as one run.
static void cml_dataset_copy_slab(const cml_shape_t* logical, const cml_shape_t* shard,
                                  const int64_t* offsets, const unsigned char* src,
                                  unsigned char* dst) {
  size_t esz = (size_t)cml_dtype_bits(logical->dtype) / 8;
  int rank = logical->rank;
  if (rank == 0) {
    memcpy(dst, src, esz);
    return;
  }
  size_t strides[CML_MAX_RANK];
  strides[rank - 1] = esz;
  for (int d = rank - 2; d >= 0; --d) strides[d] = strides[d + 1] * (size_t)logical->dims[d + 1];
  size_t run = (size_t)shard->dims[rank - 1] * esz;
  int64_t outer = 1;
  for (int d = 0; d < rank - 1; ++d) outer *= shard->dims[d];
  int64_t idx[CML_MAX_RANK] = {0};
  for (int64_t o = 0; o < outer; ++o) {
    size_t at = (size_t)offsets[rank - 1] * esz;
    for (int d = 0; d < rank - 1; ++d) at += (size_t)(offsets[d] + idx[d]) * strides[d];
    memcpy(dst, src + at, run);
    dst += run;
    for (int d = rank - 2; d >= 0; --d) {
      if (++idx[d] < shard->dims[d]) break;
      idx[d] = 0;
    }
  }
}

// Splits the host batch and uploads the local shards into a new batch.
static cml_status_t cml_dataset_upload(cml_device_dataset_t* ds, int64_t index, int64_t rows,
                                       cml_device_batch_t** out_batch) {
  cml_device_batch_t* b = (cml_device_batch_t*)cml_dataset_alloc(sizeof *b);
  if (!b) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  b->index = index;
  b->rows = rows;
  b->tensor_count = ds->tensor_count;
  b->shard_count = ds->shard_count;
  b->devices = (int32_t*)cml_dataset_alloc(ds->shard_count * sizeof(int32_t));
  b->shards =
      (cml_buffer_t**)cml_dataset_alloc(ds->tensor_count * ds->shard_count * sizeof(cml_buffer_t*));
  if (!b->devices || !b->shards) {
    cml_device_batch_release(b);
    return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  }
  memcpy(b->devices, ds->devices, ds->shard_count * sizeof(int32_t));
  cml_status_t st = CML_OK;
  for (size_t t = 0; t < ds->tensor_count && st == CML_OK; ++t) {
    const cml_shape_t* shard = &ds->shard_shapes[t];
    size_t bytes = cml_shape_byte_size(shard);
    for (size_t k = 0; k < ds->shard_count && st == CML_OK; ++k) {
      if (!ds->local[k]) continue;
      int64_t offsets[CML_MAX_RANK] = {0};
      if (ds->shardings[t].mesh) {
        st = cml_sharding_shard_offsets(&ds->shardings[t], &ds->shapes[t], (int64_t)k, offsets);
        if (st != CML_OK) break;
      }
      cml_dataset_copy_slab(&ds->shapes[t], shard, offsets, (const unsigned char*)ds->host[t],
                            ds->scratch);
      st = cml_buffer_from_host(ds->backend, ds->devices[k], shard, ds->scratch, bytes,
                                &b->shards[t * ds->shard_count + k]);
      if (st != CML_OK) {
        st = cml_status_annotate(st, "uploading tensor %zu, shard %zu to device %d", t, k,
                                 ds->devices[k]);
      }
    }
  }
  if (st != CML_OK) {
    cml_device_batch_release(b);
    return st;
  }
  *out_batch = b;
  return CML_OK;
}

// Produces the next batch: *|out_batch| NULL at the end of the data. Errors name the batch.
static cml_status_t cml_dataset_produce(cml_device_dataset_t* ds, cml_device_batch_t** out_batch) {
  *out_batch = NULL;
  if (ds->source_ended) return CML_OK;
  int64_t index = ds->next_index++;
  size_t source_count = ds->source.tensor_count;
  for (size_t t = 0; t < source_count; ++t) {
    memset(ds->host[t], 0, cml_shape_byte_size(&ds->shapes[t]));
  }
  int64_t rows = -1;
  cml_status_t st = ds->source.next(ds->source.user, index, ds->host, source_count, &rows);
  if (st != CML_OK) {
    ds->source_ended = true;
    return cml_status_annotate(st, "cml_device_dataset_next: batch %lld: the producer failed",
                               (long long)index);
  }
  if (rows < 0 || rows > ds->batch_size) {
    ds->source_ended = true;
    return INVALID(
        "cml_device_dataset_next: batch %lld: the producer reported %lld rows, but a batch has "
        "0..%lld",
        (long long)index, (long long)rows, (long long)ds->batch_size);
  }
  if (rows == 0) {
    ds->source_ended = true;
    return CML_OK;
  }
  if (rows < ds->batch_size) {
    ds->source_ended = true;  // a short batch is the last one
    switch (ds->last_batch) {
      case CML_LAST_BATCH_DROP:
        return CML_OK;
      case CML_LAST_BATCH_ERROR:
        return cml_status_make(CML_STATUS_OUT_OF_RANGE,
                               "cml_device_dataset_next: batch %lld has %lld rows, fewer than the "
                               "batch size %lld (last_batch policy Error)",
                               (long long)index, (long long)rows, (long long)ds->batch_size);
      default:
        break;
    }
    // Pad: the rows past |rows| become zeros whatever the producer left there.
    for (size_t t = 0; t < source_count; ++t) {
      size_t row_bytes = cml_shape_byte_size(&ds->shapes[t]) / (size_t)ds->batch_size;
      memset((unsigned char*)ds->host[t] + (size_t)rows * row_bytes, 0,
             (size_t)(ds->batch_size - rows) * row_bytes);
    }
  }
  if (ds->last_batch == CML_LAST_BATCH_PAD) {
    float* mask = (float*)ds->host[source_count];
    for (int64_t r = 0; r < ds->batch_size; ++r) mask[r] = r < rows ? 1.0f : 0.0f;
  }
  st = cml_dataset_upload(ds, index, rows, out_batch);
  if (st != CML_OK) {
    ds->source_ended = true;
    return cml_status_annotate(st, "cml_device_dataset_next: batch %lld", (long long)index);
  }
  return CML_OK;
}

//===--- the prefetch thread ---===//

static void* cml_dataset_thread(void* arg) {
  cml_device_dataset_t* ds = (cml_device_dataset_t*)arg;
  for (;;) {
    pthread_mutex_lock(&ds->mutex);
    while (!ds->stop && ds->count == ds->depth) pthread_cond_wait(&ds->not_full, &ds->mutex);
    bool stop = ds->stop;
    pthread_mutex_unlock(&ds->mutex);
    if (stop) break;
    cml_device_batch_t* batch = NULL;
    cml_status_t st = cml_dataset_produce(ds, &batch);
    pthread_mutex_lock(&ds->mutex);
    if (ds->stop) {
      pthread_mutex_unlock(&ds->mutex);
      cml_device_batch_release(batch);
      cml_status_free(st);
      break;
    }
    if (st != CML_OK) {
      ds->error = st;
      ds->done = true;
    } else if (!batch) {
      ds->done = true;
    } else {
      ds->queue[(ds->head + ds->count) % ds->depth] = batch;
      ++ds->count;
    }
    bool done = ds->done;
    pthread_cond_signal(&ds->not_empty);
    pthread_mutex_unlock(&ds->mutex);
    if (done) break;
  }
  return NULL;
}

//===--- create / destroy ---===//

void cml_device_dataset_destroy(cml_device_dataset_t* ds) {
  if (!ds) return;
  // In a child of fork() the producer thread stayed in the parent: joining its id, or destroying
  // the condition variables it is counted on, hangs. The dataset is left as it is there.
  if (ds->has_thread && ds->pid != cml__process_id()) return;
  if (ds->has_thread) {
    pthread_mutex_lock(&ds->mutex);
    ds->stop = true;
    pthread_cond_broadcast(&ds->not_full);
    pthread_mutex_unlock(&ds->mutex);
    pthread_join(ds->thread, NULL);
  }
  for (size_t i = 0; i < ds->count; ++i) {
    cml_device_batch_release(ds->queue[(ds->head + i) % ds->depth]);
  }
  if (ds->queue) cml_dataset_free(ds->queue, ds->depth * sizeof *ds->queue);
  cml_status_free(ds->error);
  pthread_cond_destroy(&ds->not_full);
  pthread_cond_destroy(&ds->not_empty);
  pthread_mutex_destroy(&ds->mutex);
  for (size_t t = 0; t < CML_DATASET_MAX_TENSORS; ++t) {  // a failed setup may stop midway
    cml_mesh_destroy(ds->meshes[t]);
    if (ds->host[t]) cml_dataset_free(ds->host[t], cml_shape_byte_size(&ds->shapes[t]));
  }
  if (ds->scratch) cml_dataset_free(ds->scratch, ds->scratch_bytes);
  if (ds->devices) cml_dataset_free(ds->devices, ds->shard_count * sizeof(int32_t));
  if (ds->local) cml_dataset_free(ds->local, ds->shard_count * sizeof(bool));
  cml_backend_release(ds->backend);
  cml_dataset_free(ds, sizeof *ds);
}

// Checks the source's shapes and the specs, and fills the shapes, specs and device map.
static cml_status_t cml_dataset_setup(cml_device_dataset_t* ds, const cml_sharding_t* shardings,
                                      const int32_t* devices) {
  char text[160], spec[200];
  const cml_dataset_t* src = &ds->source;
  const cml_mesh_t* first_mesh = NULL;
  for (size_t t = 0; t < src->tensor_count; ++t) {
    if (shardings[t].mesh && !first_mesh) first_mesh = shardings[t].mesh;
  }
  ds->shard_count = first_mesh ? (size_t)cml_mesh_device_count(first_mesh) : 1;
  for (size_t t = 0; t < src->tensor_count; ++t) {
    const cml_shape_t* s = &src->shapes[t];
    cml_shape_t checked;
    cml_status_t st = cml_shape_init(&checked, s->dtype, s->rank, s->dims);
    if (st != CML_OK) return cml_status_annotate(st, "%s: tensor %zu", kCreate, t);
    if (s->rank < 1 || cml_dtype_is_packed(s->dtype)) {
      return INVALID(
          "%s: tensor %zu is %s: a batch tensor needs rank >= 1 (axis 0 is the batch) "
          "and a dtype of whole bytes",
          kCreate, t, cml_shape_format(s, text, sizeof text));
    }
    if (t == 0) ds->batch_size = s->dims[0];
    if (s->dims[0] != ds->batch_size) {
      return INVALID("%s: tensor %zu is %s but tensor 0 has batch size %lld (axis 0)", kCreate, t,
                     cml_shape_format(s, text, sizeof text), (long long)ds->batch_size);
    }
    if (ds->batch_size < 1) {
      return INVALID("%s: tensor %zu is %s: the batch size (axis 0) must be at least 1", kCreate, t,
                     cml_shape_format(s, text, sizeof text));
    }
    ds->shapes[t] = *s;
    ds->shardings[t] = shardings[t];
    if (shardings[t].mesh) {
      st = cml_sharding_validate(&shardings[t]);
      if (st != CML_OK) return cml_status_annotate(st, "%s: tensor %zu", kCreate, t);
      if ((size_t)cml_mesh_device_count(shardings[t].mesh) != ds->shard_count) {
        return INVALID(
            "%s: tensor %zu's mesh \"%s\" has %lld devices, tensor 0's has %zu: every "
            "spec needs the same number of mesh positions",
            kCreate, t, cml_mesh_name(shardings[t].mesh),
            (long long)cml_mesh_device_count(shardings[t].mesh), ds->shard_count);
      }
      // Mesh position k of every tensor goes to one device (an SPMD input's slot): the
      // meshes' device assignments must agree unless |devices| says where each position goes.
      const int32_t* mine = cml_mesh_device_assignment(shardings[t].mesh);
      const int32_t* first = cml_mesh_device_assignment(first_mesh);
      for (size_t k = 0; !devices && k < ds->shard_count; ++k) {
        const int32_t a = mine ? mine[k] : (int32_t)k, b = first ? first[k] : (int32_t)k;
        if (a != b) {
          return INVALID(
              "%s: tensor %zu's mesh \"%s\" puts mesh position %zu on device %d, but the first "
              "spec's mesh \"%s\" puts it on device %d: give the meshes one device assignment "
              "(or set options.devices)",
              kCreate, t, cml_mesh_name(shardings[t].mesh), k, (int)a, cml_mesh_name(first_mesh),
              (int)b);
        }
      }
      st = cml_sharding_shard_shape(&shardings[t], s, &ds->shard_shapes[t]);
      if (st != CML_OK) {
        cml_sharding_format(&shardings[t], spec, sizeof spec);
        return cml_status_annotate(st, "%s: tensor %zu (%s, %s)", kCreate, t,
                                   cml_shape_format(s, text, sizeof text), spec);
      }
      ds->meshes[t] = cml__mesh_clone(shardings[t].mesh);
      if (!ds->meshes[t]) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
      ds->shardings[t].mesh = ds->meshes[t];
    } else {
      ds->shard_shapes[t] = *s;
    }
  }
  if (ds->last_batch == CML_LAST_BATCH_PAD) {
    size_t m = src->tensor_count;
    if (m >= CML_DATASET_MAX_TENSORS) {
      return INVALID("%s: %zu tensors leave no room for the mask (at most %d with it)", kCreate, m,
                     CML_DATASET_MAX_TENSORS);
    }
    ds->shapes[m] = cml_shape_make(CML_DTYPE_F32, 1, &ds->batch_size);
    memset(&ds->shardings[m], 0, sizeof ds->shardings[m]);
    ds->shard_shapes[m] = ds->shapes[m];
    if (shardings[0].mesh) {
      ds->meshes[m] = cml__mesh_clone(shardings[0].mesh);
      if (!ds->meshes[m]) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
      ds->shardings[m].mesh = ds->meshes[m];
      ds->shardings[m].rank = 1;
      ds->shardings[m].axis_count[0] = shardings[0].rank >= 1 ? shardings[0].axis_count[0] : 0;
      memcpy(ds->shardings[m].mesh_axes[0], shardings[0].mesh_axes[0],
             sizeof ds->shardings[m].mesh_axes[0]);
      cml_status_t st =
          cml_sharding_shard_shape(&ds->shardings[m], &ds->shapes[m], &ds->shard_shapes[m]);
      if (st != CML_OK) return cml_status_annotate(st, "%s: the mask", kCreate);
    }
    ds->tensor_count = m + 1;
  } else {
    ds->tensor_count = src->tensor_count;
  }
  ds->devices = (int32_t*)cml_dataset_alloc(ds->shard_count * sizeof(int32_t));
  ds->local = (bool*)cml_dataset_alloc(ds->shard_count * sizeof(bool));
  if (!ds->devices || !ds->local) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  const int32_t* assignment = first_mesh ? cml_mesh_device_assignment(first_mesh) : NULL;
  int device_count = cml_backend_device_count(ds->backend);
  for (size_t k = 0; k < ds->shard_count; ++k) {
    int d = devices ? devices[k] : assignment ? assignment[k] : (int)k;
    if (d < 0 || d >= device_count) {
      return cml_status_make(CML_STATUS_INVALID_ARGUMENT,
                             "%s: mesh position %zu goes to device %d, but backend \"%s\" has "
                             "devices 0..%d",
                             kCreate, k, d, cml_backend_name(ds->backend), device_count - 1);
    }
    ds->devices[k] = d;
    ds->local[k] = cml_backend_device_is_local(ds->backend, d);
  }
  for (size_t t = 0; t < ds->tensor_count; ++t) {
    size_t bytes = cml_shape_byte_size(&ds->shapes[t]);
    ds->host[t] = cml_dataset_alloc(bytes);
    if (!ds->host[t]) {
      return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED,
                             "%s: cannot allocate %zu bytes for a host batch of tensor %zu (%s)",
                             kCreate, bytes, t,
                             cml_shape_format(&ds->shapes[t], text, sizeof text));
    }
    size_t shard_bytes = cml_shape_byte_size(&ds->shard_shapes[t]);
    if (shard_bytes > ds->scratch_bytes) ds->scratch_bytes = shard_bytes;
  }
  ds->scratch = (unsigned char*)cml_dataset_alloc(ds->scratch_bytes);
  if (!ds->scratch) {
    return cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED,
                           "%s: cannot allocate %zu bytes for a shard's staging buffer", kCreate,
                           ds->scratch_bytes);
  }
  return CML_OK;
}

cml_status_t cml_device_dataset_create(cml_backend_t* backend, const cml_dataset_t* source,
                                       const cml_sharding_t* shardings,
                                       const cml_device_dataset_options_t* options,
                                       cml_device_dataset_t** out_dataset) {
  if (out_dataset) *out_dataset = NULL;
  if (!backend || !source || !shardings || !out_dataset) {
    return INVALID("%s: NULL backend, source, shardings or out_dataset", kCreate);
  }
  if (!source->next || !source->shapes || source->tensor_count == 0 ||
      source->tensor_count > CML_DATASET_MAX_TENSORS) {
    return INVALID("%s: the source needs a next function, shapes and 1..%d tensors (got %zu)",
                   kCreate, CML_DATASET_MAX_TENSORS, source->tensor_count);
  }
  cml_device_dataset_options_t opts;
  cml_device_dataset_options_init(&opts);
  if (options) {
    if (options->struct_size < sizeof opts) {
      return INVALID(
          "%s: options.struct_size %zu is smaller than %zu (call "
          "cml_device_dataset_options_init)",
          kCreate, options->struct_size, sizeof opts);
    }
    opts = *options;
  }
  if ((unsigned)opts.last_batch >= CML_LAST_BATCH_COUNT) {
    return INVALID("%s: unknown last_batch policy %d", kCreate, (int)opts.last_batch);
  }
  if (opts.prefetch_depth > 1024) {
    return INVALID("%s: prefetch_depth %zu is out of range 0..1024", kCreate, opts.prefetch_depth);
  }
  cml_device_dataset_t* ds = (cml_device_dataset_t*)cml_dataset_alloc(sizeof *ds);
  if (!ds) return cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
  ds->backend = cml_backend_retain(backend);
  ds->pid = cml__process_id();
  ds->source = *source;
  ds->last_batch = opts.last_batch;
  ds->depth = opts.prefetch_depth;
#if defined(__wasi__)
  ds->depth = 0;  // wasm32-wasi has no threads: produce on the caller's thread
#endif
  pthread_mutex_init(&ds->mutex, NULL);
  pthread_cond_init(&ds->not_empty, NULL);
  pthread_cond_init(&ds->not_full, NULL);
  cml_status_t st = cml_dataset_setup(ds, shardings, opts.devices);
  if (st == CML_OK && ds->depth > 0) {
    ds->queue = (cml_device_batch_t**)cml_dataset_alloc(ds->depth * sizeof *ds->queue);
    if (!ds->queue) st = cml_status_from_code(CML_STATUS_RESOURCE_EXHAUSTED);
    if (st == CML_OK) {
      int rc = cml__thread_create(&ds->thread, NULL, cml_dataset_thread, ds);
      if (rc != 0) {
        st = cml_status_make(CML_STATUS_RESOURCE_EXHAUSTED,
                             "%s: cannot start the prefetch thread (%s)", kCreate, strerror(rc));
      } else {
        ds->has_thread = true;
      }
    }
  }
  if (st != CML_OK) {
    cml_device_dataset_destroy(ds);
    return st;
  }
  *out_dataset = ds;
  return CML_OK;
}

//===--- consuming ---===//

cml_status_t cml_device_dataset_next(cml_device_dataset_t* ds, cml_device_batch_t** out_batch) {
  if (out_batch) *out_batch = NULL;
  if (!ds || !out_batch) return INVALID("cml_device_dataset_next: NULL dataset or out_batch");
  if (!ds->has_thread) {
    if (ds->done) return ds->error ? cml_status_clone(ds->error) : CML_OK;
    cml_status_t st = cml_dataset_produce(ds, out_batch);
    if (st != CML_OK) {
      ds->error = st;
      ds->done = true;
      return cml_status_clone(st);
    }
    if (!*out_batch) ds->done = true;
    return CML_OK;
  }
  if (ds->pid != cml__process_id()) {
    return cml_status_make(CML_STATUS_FAILED_PRECONDITION,
                           "cml_device_dataset_next: the dataset was created by process %ld, "
                           "before fork(): its prefetch thread did not follow into this process "
                           "(%ld); create a new dataset in the child",
                           ds->pid, cml__process_id());
  }
  pthread_mutex_lock(&ds->mutex);
  while (ds->count == 0 && !ds->done) pthread_cond_wait(&ds->not_empty, &ds->mutex);
  cml_status_t st = CML_OK;
  if (ds->count > 0) {
    *out_batch = ds->queue[ds->head];
    ds->queue[ds->head] = NULL;
    ds->head = (ds->head + 1) % ds->depth;
    --ds->count;
    pthread_cond_signal(&ds->not_full);
  } else if (ds->error) {
    st = cml_status_clone(ds->error);
  }
  pthread_mutex_unlock(&ds->mutex);
  return st;
}

size_t cml_device_dataset_tensor_count(const cml_device_dataset_t* ds) {
  return ds ? ds->tensor_count : 0;
}

size_t cml_device_dataset_shard_count(const cml_device_dataset_t* ds) {
  return ds ? ds->shard_count : 0;
}

cml_status_t cml_device_dataset_local_rows(const cml_device_dataset_t* ds, size_t tensor,
                                           int64_t* out_begin, int64_t* out_end) {
  if (out_begin) *out_begin = 0;
  if (out_end) *out_end = 0;
  if (!ds || !out_begin || !out_end) {
    return INVALID("cml_device_dataset_local_rows: NULL dataset or outputs");
  }
  if (tensor >= ds->tensor_count) {
    return INVALID("cml_device_dataset_local_rows: tensor %zu out of range (the batch has %zu)",
                   tensor, ds->tensor_count);
  }
  int64_t begin = ds->batch_size, end = 0;
  for (size_t k = 0; k < ds->shard_count; ++k) {
    if (!ds->local[k]) continue;
    int64_t offsets[CML_MAX_RANK] = {0};
    if (ds->shardings[tensor].mesh) {
      CML_RETURN_IF_ERROR(cml_sharding_shard_offsets(&ds->shardings[tensor], &ds->shapes[tensor],
                                                     (int64_t)k, offsets));
    }
    if (offsets[0] < begin) begin = offsets[0];
    int64_t e = offsets[0] + ds->shard_shapes[tensor].dims[0];
    if (e > end) end = e;
  }
  if (end <= begin) begin = end = 0;
  *out_begin = begin;
  *out_end = end;
  return CML_OK;
}
