// SPDX-License-Identifier: Apache-2.0
// src/distributed/distributed_internal.h: what src/distributed/*.c and the core's distributed
// builders share about meshes and sharding specs (cml/distributed.h). Symbol prefix: cml__.
#ifndef CML_DISTRIBUTED_DISTRIBUTED_INTERNAL_H_
#define CML_DISTRIBUTED_DISTRIBUTED_INTERNAL_H_

#include "cml/distributed.h"

#ifdef __cplusplus
extern "C" {
#endif

struct cml_mesh_t {
  char* name;
  size_t axis_count;
  char* axis_names[CML_MAX_MESH_AXES];
  int64_t axis_sizes[CML_MAX_MESH_AXES];
  int64_t device_count;
  int32_t* device_assignment;  // NULL: the identity
};

// A deep copy of |mesh| (NULL when out of memory). Free with cml_mesh_destroy.
cml_mesh_t* cml__mesh_clone(const cml_mesh_t* mesh);

// Whether |a| and |b| have the same name, axes (names and sizes, in order) and device
// assignment.
bool cml__mesh_equal(const cml_mesh_t* a, const cml_mesh_t* b);

// Writes "mesh{batch=2, data=2}" (with ", devices=[...]" when an assignment is set) into
// |buf| (snprintf semantics).
size_t cml__mesh_format(const cml_mesh_t* mesh, char* buf, size_t size);

// The mesh coordinates of |position| (row-major: the last axis varies fastest).
void cml__mesh_coords(const cml_mesh_t* mesh, int64_t position, int64_t* out_coords);

// Writes "{{0, 1}, {2, 3}}" for |ids| grouped by |group_size| (the first 32 ids, then "...");
// snprintf semantics.
size_t cml__groups_format(const int32_t* ids, size_t group_count, size_t group_size, char* buf,
                          size_t size);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_DISTRIBUTED_DISTRIBUTED_INTERNAL_H_
