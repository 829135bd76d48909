// SPDX-License-Identifier: Apache-2.0
// cml/checkpoint.h: saving and restoring named tensors (parameters, optimizer state) as plain
// files, written atomically and validated when read.
//
// A checkpoint holds a step number and a list of named tensors (dtype, shape, raw data). The
// format is documented in docs/checkpoint.md: a header, an index of names, dtypes, shapes and
// data offsets, the data in little-endian byte order, and CRC-32 checksums of the header and of
// every tensor. A save writes a temporary file next to |path|, flushes it to disk and renames it
// over |path|, so a run killed at any moment leaves either the old checkpoint or the new one,
// never half of one. Reading checks everything (size, magic, version, index, checksums) and
// names the file and the tensor in every error.
//
// Example (save every K steps, resume from the last one):
//
//   const char* names[2] = {"w", "adam/m/w"};
//   CML_RETURN_IF_ERROR(cml_checkpoint_save_buffers("run.ckpt", step, names, bufs, 2));
//   ...
//   cml_checkpoint_t* ck = NULL;
//   cml_status_t st = cml_checkpoint_load("run.ckpt", &ck);    // NOT_FOUND: start afresh
//   if (st == CML_OK) {
//     int64_t step = cml_checkpoint_step(ck);
//     cml_buffer_t* w = NULL;
//     st = cml_checkpoint_read_buffer(ck, "w", &w_shape, backend, 0, &w);  // shape checked
//     cml_checkpoint_destroy(ck);
//   }
//
// Thread-safety: a loaded checkpoint is immutable: any number of threads may read it. Saves to
// distinct paths may run concurrently; two saves to the same path leave one of the two whole.
#ifndef CML_CHECKPOINT_H_
#define CML_CHECKPOINT_H_

#include "cml/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

// The version of the file format this library writes (and the newest it reads).
#define CML_CHECKPOINT_FORMAT_VERSION 1

// Writes |count| tensors to |path| atomically: tensor i is named |names[i]| (non-empty, at most
// 65535 bytes, unique), has shape |shapes[i]| and its data (cml_shape_byte_size bytes, host
// order) at |data[i]|; |step| is stored with them. An existing file at |path| is replaced only
// once the new one is complete on disk; a symbolic link at |path| is followed (the file it leads
// to is replaced, the link kept). Returns INVALID_ARGUMENT for NULL arrays, bad or duplicate
// names, bad shapes, and a directory, FIFO, device or socket at |path|; NOT_FOUND / UNAVAILABLE
// naming the file and the system error when it cannot be written (the old file then stays as it
// was); RESOURCE_EXHAUSTED.
CML_API CML_MUST_USE cml_status_t cml_checkpoint_save(const char* path, int64_t step,
                                                      const char* const* names,
                                                      const cml_shape_t* shapes,
                                                      const void* const* data, size_t count);

// As cml_checkpoint_save with the contents of |buffers| (copied to the host first; shapes are
// the buffers'). Also FAILED_PRECONDITION for a donated buffer.
CML_API CML_MUST_USE cml_status_t cml_checkpoint_save_buffers(const char* path, int64_t step,
                                                              const char* const* names,
                                                              cml_buffer_t* const* buffers,
                                                              size_t count);

// A checkpoint read into memory.
typedef struct cml_checkpoint_t cml_checkpoint_t;

// Reads and validates the whole file at |path|. The caller owns *|out_checkpoint|
// (cml_checkpoint_destroy). Returns NOT_FOUND when the file does not exist, UNAVAILABLE when it
// cannot be read, INVALID_ARGUMENT for a file that is not a valid checkpoint (truncated, wrong
// magic, a bad index, a checksum mismatch: the message names the file, and the tensor when one
// is at fault), INCOMPATIBLE for a newer format version, RESOURCE_EXHAUSTED.
CML_API CML_MUST_USE cml_status_t cml_checkpoint_load(const char* path,
                                                      cml_checkpoint_t** out_checkpoint);
// Frees |checkpoint| (NULL is ignored).
CML_API void cml_checkpoint_destroy(cml_checkpoint_t* checkpoint);

// Accessors (0, NULL for NULL or an index out of range). Names, shapes and data are lent and
// live as long as the checkpoint; the data is in host byte order.
CML_API int64_t cml_checkpoint_step(const cml_checkpoint_t* checkpoint);
CML_API const char* cml_checkpoint_path(const cml_checkpoint_t* checkpoint);
CML_API size_t cml_checkpoint_tensor_count(const cml_checkpoint_t* checkpoint);
CML_API const char* cml_checkpoint_tensor_name(const cml_checkpoint_t* checkpoint, size_t i);
CML_API const cml_shape_t* cml_checkpoint_tensor_shape(const cml_checkpoint_t* checkpoint,
                                                       size_t i);
CML_API const void* cml_checkpoint_tensor_data(const cml_checkpoint_t* checkpoint, size_t i);
// The index of the tensor named |name|, or -1.
CML_API int64_t cml_checkpoint_find(const cml_checkpoint_t* checkpoint, const char* name);

// Copies tensor |name| into |dst| (|size| bytes), checking it has shape |expected| (NULL: any
// shape of |size| bytes). Returns NOT_FOUND when there is no such tensor, INVALID_ARGUMENT
// naming the file, the tensor and both shapes on a mismatch (dtype or dims), or for a wrong
// |size|.
CML_API CML_MUST_USE cml_status_t cml_checkpoint_read(const cml_checkpoint_t* checkpoint,
                                                      const char* name, const cml_shape_t* expected,
                                                      void* dst, size_t size);
// As cml_checkpoint_read, into a new buffer on |device| of |backend| (the caller owns it), plus
// the errors of cml_buffer_from_host.
CML_API CML_MUST_USE cml_status_t cml_checkpoint_read_buffer(const cml_checkpoint_t* checkpoint,
                                                             const char* name,
                                                             const cml_shape_t* expected,
                                                             cml_backend_t* backend, int device,
                                                             cml_buffer_t** out_buffer);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_CHECKPOINT_H_
