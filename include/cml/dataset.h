// SPDX-License-Identifier: Apache-2.0
// cml/dataset.h: datasets of host batches, split by sharding specs over the devices of all
// processes and prefetched onto this process's devices in a background thread.
//
// A dataset (cml_dataset_t) is a producer callback plus the shapes of one global batch: each
// call fills host arrays with the next batch (every tensor's axis 0 is the batch axis), says it
// is the end of the data, or returns an error. A device dataset (cml_device_dataset_t, GoMLX's
// OnDevice) wraps it: it splits every global batch by one sharding spec per tensor over the mesh
// positions (cml/distributed.h), keeps only the shards whose device is local to this process
// (cml_backend_device_is_local), uploads them, and keeps up to `prefetch_depth` batches ready on
// the devices, produced by a background thread while the caller's step runs.
//
// Example (data parallel over the 4 devices of "c:devices=4", x split along its rows):
//
//   cml_shape_t shapes[2] = {cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){64, 8}),
//                            cml_shape_make(CML_DTYPE_F32, 2, (int64_t[]){64, 4})};
//   cml_dataset_t source = {.tensor_count = 2, .shapes = shapes, .next = my_next, .user = me};
//   cml_sharding_t rows;                                    // mesh {"data": 4}
//   CML_RETURN_IF_ERROR(cml_sharding_make(mesh, (const char*[]){"data"}, 1, &rows));
//   cml_device_dataset_t* ds = NULL;
//   CML_RETURN_IF_ERROR(cml_device_dataset_create(backend, &source,
//                                                 (cml_sharding_t[]){rows, rows}, NULL, &ds));
//   for (;;) {
//     cml_device_batch_t* batch = NULL;
//     CML_RETURN_IF_ERROR(cml_device_dataset_next(ds, &batch));  // producer errors arrive here
//     if (!batch) break;                                         // end of data
//     // inputs[slot * P + 0] = cml_device_batch_shard(batch, 0, slot), ... then execute.
//     cml_device_batch_release(batch);
//   }
//   cml_device_dataset_destroy(ds);
//
// Multi-process jobs: every process runs its own producer and must produce the same global
// batches (same data, same order: e.g. the same seed); each one uploads only its own shards. The
// producer may leave the rows of other processes' shards unwritten when it knows them (see
// cml_device_dataset_local_rows), which saves reading them.
//
// Uneven last batch (fewer rows than the batch size): the options choose (cml_last_batch_t):
// drop it (the default: the data ends before it), pad it with zeros and add a mask tensor (1 for
// real rows, 0 for padding) as one more tensor of the batch, or fail with OUT_OF_RANGE naming
// the batch and its row count. See docs/datasets.md.
//
// Thread-safety: a device dataset is single-thread (one consumer); its producer callback runs on
// the background thread (or on the caller's thread when prefetch_depth is 0), never on two
// threads at once. Batches are thread-safe to read and release from any thread.
#ifndef CML_DATASET_H_
#define CML_DATASET_H_

#include "cml/backend.h"
#include "cml/distributed.h"

#ifdef __cplusplus
extern "C" {
#endif

//===--- host datasets ---===//

// Fills the next global batch. |data[i]| (|count| arrays) has room for a whole batch of
// tensor i (cml_shape_byte_size(shapes[i]) bytes, zeroed before each call) and |batch_index| is
// 0, 1, 2, ... Writes to *|out_rows| the rows filled along axis 0: the batch size for a full
// batch, 1..batch size - 1 for a short last batch, 0 at the end of the data (then nothing else
// is read and the producer is not called again). Returns CML_OK, or a status that ends the data
// with that error: the consumer receives it from cml_device_dataset_next.
typedef cml_status_t (*cml_dataset_next_fn)(void* user, int64_t batch_index, void* const* data,
                                            size_t count, int64_t* out_rows);

// A host dataset: plain value, all pointers lent (they must outlive the device dataset built on
// it). Every shape has rank >= 1 and the same dims[0], the global batch size.
typedef struct cml_dataset_t {
  size_t tensor_count;        // 1..CML_DATASET_MAX_TENSORS
  const cml_shape_t* shapes;  // the global batch's shapes, |tensor_count| of them
  cml_dataset_next_fn next;
  void* user;
} cml_dataset_t;

// The most tensors a batch may have (the mask included).
#define CML_DATASET_MAX_TENSORS 32

//===--- device datasets ---===//

// What happens to a last batch with fewer rows than the batch size.
typedef enum cml_last_batch_t {
  CML_LAST_BATCH_DROP = 0,   // the data ends before the short batch (it is never uploaded)
  CML_LAST_BATCH_PAD = 1,    // zero rows are appended; every batch carries a mask tensor
  CML_LAST_BATCH_ERROR = 2,  // cml_device_dataset_next returns OUT_OF_RANGE
  CML_LAST_BATCH_COUNT
} cml_last_batch_t;

// "Drop", "Pad", "Error" or "unknown". Never NULL.
CML_API const char* cml_last_batch_name(cml_last_batch_t policy);

typedef struct cml_device_dataset_options_t {
  size_t struct_size;
  // Batches kept ready on the devices (the bounded queue's length, default 2). 0: no background
  // thread; cml_device_dataset_next produces each batch on the caller's thread.
  size_t prefetch_depth;
  cml_last_batch_t last_batch;  // default CML_LAST_BATCH_DROP
  // Mesh position k of every spec goes to backend device |devices[k]| (lent; the mesh's device
  // count entries). NULL: cml_mesh_device_assignment(mesh)[k], or k when the mesh has none; the
  // specs' meshes must then agree on it (INVALID_ARGUMENT naming the position otherwise).
  const int32_t* devices;
} cml_device_dataset_options_t;

// Fills |options| with the defaults above.
CML_API void cml_device_dataset_options_init(cml_device_dataset_options_t* options);

typedef struct cml_device_dataset_t cml_device_dataset_t;
typedef struct cml_device_batch_t cml_device_batch_t;

// Creates a device dataset over |source| on |backend| with one sharding spec per tensor
// (|shardings|, source->tensor_count of them; all on meshes of the same device count, a zeroed
// spec means replicated on the first spec's mesh). |options| NULL means the defaults. With
// prefetch_depth > 0 the background thread starts producing at once. Under CML_LAST_BATCH_PAD
// the mask is tensor source->tensor_count: Float32 [batch size], split like axis 0 of tensor 0.
// The caller owns *|out_dataset| (cml_device_dataset_destroy). Returns INVALID_ARGUMENT for NULL
// arguments, bad shapes (rank 0, different batch sizes, sub-byte dtypes), specs whose shard
// shapes do not divide (naming the tensor, shape and spec), meshes of different device counts,
// devices out of range; RESOURCE_EXHAUSTED (also when the prefetch thread cannot start).
CML_API CML_MUST_USE cml_status_t cml_device_dataset_create(
    cml_backend_t* backend, const cml_dataset_t* source, const cml_sharding_t* shardings,
    const cml_device_dataset_options_t* options, cml_device_dataset_t** out_dataset);

// Stops the producer (waiting for a producer call in progress to return), releases the batches
// still queued and frees |dataset|. Batches the caller still holds stay valid. NULL is ignored.
CML_API void cml_device_dataset_destroy(cml_device_dataset_t* dataset);

// Takes the next batch (waiting for it when the queue is empty) and gives it to the caller, who
// releases it with cml_device_batch_release. At the end of the data returns CML_OK with
// *|out_batch| NULL (and so on every later call). A producer error, an upload error or a short
// batch under CML_LAST_BATCH_ERROR is returned here, annotated with the batch index, once the
// batches before it were taken; later calls return a copy of the same error. In a child of
// fork(), a dataset with a prefetch thread (which stayed in the parent) returns
// FAILED_PRECONDITION, and destroy leaves it alone there.
CML_API CML_MUST_USE cml_status_t cml_device_dataset_next(cml_device_dataset_t* dataset,
                                                          cml_device_batch_t** out_batch);

// The number of tensors of each batch (the source's, plus the mask under CML_LAST_BATCH_PAD).
CML_API size_t cml_device_dataset_tensor_count(const cml_device_dataset_t* dataset);
// The number of shards (mesh positions) of each tensor.
CML_API size_t cml_device_dataset_shard_count(const cml_device_dataset_t* dataset);
// The rows [*out_begin, *out_end) of axis 0 of tensor |tensor| that this process's shards hold
// (their union's bounding range; begin == end when it holds none). A producer may fill only
// those. INVALID_ARGUMENT for a tensor out of range.
CML_API CML_MUST_USE cml_status_t cml_device_dataset_local_rows(const cml_device_dataset_t* dataset,
                                                                size_t tensor, int64_t* out_begin,
                                                                int64_t* out_end);

//===--- device batches ---===//

// The batch's index (0, 1, ...) and its real rows (the batch size, or fewer for a padded short
// batch). 0 for NULL.
CML_API int64_t cml_device_batch_index(const cml_device_batch_t* batch);
CML_API int64_t cml_device_batch_rows(const cml_device_batch_t* batch);
// The shard of tensor |tensor| at mesh position |position| (lent while the batch lives), or NULL
// when that position's device belongs to another process or an index is out of range.
CML_API cml_buffer_t* cml_device_batch_shard(const cml_device_batch_t* batch, size_t tensor,
                                             size_t position);
// The backend device of mesh position |position| (-1 out of range).
CML_API int cml_device_batch_device(const cml_device_batch_t* batch, size_t position);
// Releases the batch and its buffers (buffers the caller retained stay). NULL is ignored.
CML_API void cml_device_batch_release(cml_device_batch_t* batch);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_DATASET_H_
