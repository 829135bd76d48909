// SPDX-License-Identifier: Apache-2.0
// cml/distributed.h: many devices: device meshes, sharding specs, SPMD and AutoSharding
// builders, collective ops, and host-side sharded tensors.
//
// Two ways to run one program on N devices (the seed's distribution strategies):
//   - SPMD (cml_builder_spmd): every device runs the same program on its own inputs; the program
//     sees per-device shapes and exchanges data with collective ops (AllReduce, AllGather, ...)
//     over replica groups. Replica ids are positions in the executable's device list
//     (0..N-1), not backend device numbers.
//   - AutoSharding (cml_builder_auto_sharding): the program is written for the whole (logical)
//     tensors; parameters and results say how they are split over a device mesh (a sharding
//     spec per tensor), and the backend partitions the program and inserts the collectives. The
//     program itself must not use collective ops.
//
// Execution is device-major for both (cml/graph.h): with P parameters and R results, input i of
// device slot j is inputs[j * P + i] and result k of slot j comes back in out_results[j * R + k].
// Device slot j runs on backend device `device_assignment[j]` (cml_builder_device_assignment;
// default j). Under AutoSharding each buffer holds the device's shard of the parameter (its
// shape is cml_executable_input_shape, the shard shape), and the shard of mesh position k belongs
// to device slot `cml_mesh_device_assignment(mesh)[k]` (k when the mesh has none). Host-side
// sharded tensors (cml_dtensor_t) split and merge such shards.
//
// Example (data parallel over 4 devices, the gradient summed across them):
//
//   cml_builder_t* b = NULL;
//   CML_RETURN_IF_ERROR(cml_builder_create(be, "step", &b));        // be: "c:devices=4"
//   CML_RETURN_IF_ERROR(cml_builder_spmd(b, 4));
//   cml_function_t* f = cml_builder_main(b);
//   cml_value_t g = ...;                                            // this device's gradient
//   cml_value_t sum;
//   cml_op_all_reduce(f, &g, 1, CML_REDUCE_SUM, NULL, &sum);        // NULL: one group, all
//   CML_RETURN_IF_ERROR(cml_function_return(f, &sum, 1));
//
// Errors: every function here returns INVALID_ARGUMENT naming what is wrong (the mesh and axis,
// the spec, the op with shapes and dtypes, the groups); op builders record it in the builder
// like any op (cml/graph.h). A backend without multi-device support returns UNIMPLEMENTED at
// cml_builder_spmd / cml_builder_auto_sharding (see its capabilities' distribution bits).
//
// Thread-safety: meshes and specs are immutable once made (except the setters, which need a
// single owner); builders as in cml/graph.h.
#ifndef CML_DISTRIBUTED_H_
#define CML_DISTRIBUTED_H_

#include "cml/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

// The most axes a mesh may have.
#define CML_MAX_MESH_AXES 8

//===--- strategies ---===//

// The seed's distribution strategies (values as the seed's `distributed.Strategy`).
typedef enum cml_distribution_t {
  CML_DISTRIBUTION_NONE = 0,           // one device
  CML_DISTRIBUTION_SPMD = 1,           // the same program on N devices, collectives by hand
  CML_DISTRIBUTION_AUTO_SHARDING = 2,  // global program, sharded parameters/results
  CML_DISTRIBUTION_COUNT
} cml_distribution_t;

// "None", "SPMD", "AutoSharding", or "unknown". Never NULL.
CML_API const char* cml_distribution_name(cml_distribution_t distribution);

//===--- replica groups ---===//

// A partition of the device slots 0..N-1 into |group_count| groups of |group_size| slots each:
// group g is ids[g * group_size .. (g + 1) * group_size). The order inside a group matters
// (AllGather concatenates in it; CollectiveBroadcast sends from its first member). Lent: the
// ids are read during the call that receives the struct only.
typedef struct cml_replica_groups_t {
  const int32_t* ids;
  size_t group_count;
  size_t group_size;
} cml_replica_groups_t;

//===--- device meshes ---===//

// A named N-dimensional arrangement of devices (the seed's DeviceMesh): axis names and sizes;
// the device count is the product of the sizes. Mesh position p (0..N-1) is row-major over the
// axes (the last axis varies fastest).
typedef struct cml_mesh_t cml_mesh_t;

// Creates a mesh named |name| (NULL: "mesh") with |axis_count| (1..CML_MAX_MESH_AXES) axes.
// Names must match [A-Za-z_][A-Za-z0-9_]* and be unique; sizes must be >= 1 and their product
// at most 2^31-1. All strings are copied. Single owner (create/destroy).
CML_API CML_MUST_USE cml_status_t cml_mesh_create(const char* name, const char* const* axis_names,
                                                  const int64_t* axis_sizes, size_t axis_count,
                                                  cml_mesh_t** out_mesh);
// Frees |mesh| (NULL is ignored). Builders and shardings that used it keep their own copies, but
// cml_sharding_t values point at the mesh they were made with: drop them first.
CML_API void cml_mesh_destroy(cml_mesh_t* mesh);

// Sets the logical device assignment: |devices| (count = the mesh's device count) is a
// permutation of 0..N-1, and mesh position k is run by device slot devices[k]. count 0 resets to
// the identity. INVALID_ARGUMENT for a wrong count, an id out of range or a repeated id.
CML_API CML_MUST_USE cml_status_t cml_mesh_set_device_assignment(cml_mesh_t* mesh,
                                                                 const int32_t* devices,
                                                                 size_t count);

// Accessors (0, NULL or -1 for a NULL mesh or an index out of range). Strings are lent.
CML_API const char* cml_mesh_name(const cml_mesh_t* mesh);
CML_API size_t cml_mesh_axis_count(const cml_mesh_t* mesh);
CML_API const char* cml_mesh_axis_name(const cml_mesh_t* mesh, size_t axis);
CML_API int64_t cml_mesh_axis_size(const cml_mesh_t* mesh, size_t axis);
// The index of the axis named |name|, or -1.
CML_API int cml_mesh_axis_index(const cml_mesh_t* mesh, const char* name);
CML_API int64_t cml_mesh_device_count(const cml_mesh_t* mesh);
// The logical device assignment (cml_mesh_device_count entries), or NULL for the identity.
CML_API const int32_t* cml_mesh_device_assignment(const cml_mesh_t* mesh);

// The replica groups that vary only |axes| (GoMLX's ComputeReplicaGroups): one group per
// combination of the other axes; inside a group the positions follow |axes| in the given order
// (the first listed axis major). Mesh {batch: 2, data: 2}: {"batch"} -> {{0, 2}, {1, 3}},
// {"data"} -> {{0, 1}, {2, 3}}, both -> {{0, 1, 2, 3}}. The ids are mesh positions (as GoMLX,
// the logical device assignment is not applied). |out_ids| receives cml_mesh_device_count ids
// (|capacity| must be at least that) and |out_groups| points at it. INVALID_ARGUMENT for an
// unknown or repeated axis, or too small a capacity.
CML_API CML_MUST_USE cml_status_t cml_mesh_replica_groups(const cml_mesh_t* mesh,
                                                          const char* const* axes,
                                                          size_t axis_count, int32_t* out_ids,
                                                          size_t capacity,
                                                          cml_replica_groups_t* out_groups);

//===--- sharding specs ---===//

// How a tensor is split over a mesh (the seed's ShardingSpec): for each tensor axis d <
// |rank|, the mesh axes that split it, major to minor (none: replicated along d). Axes at or
// past |rank| are replicated. A mesh axis splits at most one tensor axis. A zeroed struct (mesh
// NULL) means "no sharding given". Plain value; |mesh| is lent.
typedef struct cml_sharding_t {
  const cml_mesh_t* mesh;
  int32_t rank;
  int8_t axis_count[CML_MAX_RANK];                    // mesh axes splitting tensor axis d
  int8_t mesh_axes[CML_MAX_RANK][CML_MAX_MESH_AXES];  // their indices in the mesh
} cml_sharding_t;

// Makes a spec from mesh axis names: per_axis[d] lists the mesh axes splitting tensor axis d,
// comma separated, major to minor ("data", "x,y"; blanks around a name are ignored); NULL, ""
// or only blanks means replicated. An empty item ("x,", ",x", "x,,y") or a name that is not
// one of the mesh's axes is INVALID_ARGUMENT. Validates as cml_sharding_validate.
CML_API CML_MUST_USE cml_status_t cml_sharding_make(const cml_mesh_t* mesh,
                                                    const char* const* per_axis, size_t rank,
                                                    cml_sharding_t* out_sharding);
// A fully replicated spec on |mesh|.
CML_API void cml_sharding_replicated(const cml_mesh_t* mesh, cml_sharding_t* out_sharding);
// INVALID_ARGUMENT for a NULL mesh, a rank out of range, an unknown mesh axis or one used twice.
CML_API CML_MUST_USE cml_status_t cml_sharding_validate(const cml_sharding_t* sharding);
// Whether no tensor axis is split (true for a NULL or zeroed spec).
CML_API bool cml_sharding_is_replicated(const cml_sharding_t* sharding);
// How many shards tensor axis |axis| is split into (product of its mesh axes' sizes; 1 when
// replicated or out of range).
CML_API int64_t cml_sharding_num_shards(const cml_sharding_t* sharding, int axis);
// The shape of one shard of a tensor of |logical| shape. INVALID_ARGUMENT when the spec has more
// axes than the shape or a dimension is not divisible by its shard count (naming both).
CML_API CML_MUST_USE cml_status_t cml_sharding_shard_shape(const cml_sharding_t* sharding,
                                                           const cml_shape_t* logical,
                                                           cml_shape_t* out_shard);
// The logical shape whose shards have shape |shard| (dimensions multiplied back).
CML_API CML_MUST_USE cml_status_t cml_sharding_logical_shape(const cml_sharding_t* sharding,
                                                             const cml_shape_t* shard,
                                                             cml_shape_t* out_logical);
// The start offsets (in elements, per tensor axis, rank of |logical|) of the shard held by mesh
// position |position|.
CML_API CML_MUST_USE cml_status_t cml_sharding_shard_offsets(const cml_sharding_t* sharding,
                                                             const cml_shape_t* logical,
                                                             int64_t position,
                                                             int64_t* out_offsets);
// Writes "ShardingSpec{mesh=mesh, axes=[R, S(model)]}" (snprintf semantics: returns the full
// length; |buf| may be NULL when |size| is 0).
CML_API size_t cml_sharding_format(const cml_sharding_t* sharding, char* buf, size_t size);

//===--- distributed builders ---===//
// Call cml_builder_spmd or cml_builder_auto_sharding (one of them, once) before the first op or
// parameter (FAILED_PRECONDITION otherwise); cml_builder_device_assignment after it, once, any
// time before compile.

// Runs the module SPMD on |num_devices| (>= 1) device slots. UNIMPLEMENTED when the backend
// cannot, INVALID_ARGUMENT when it has fewer devices.
CML_API CML_MUST_USE cml_status_t cml_builder_spmd(cml_builder_t* builder, int num_devices);
// Partitions the module automatically over |meshes| (copied; at least one; every mesh with more
// than one device must have the same device count, which becomes the number of device slots).
CML_API CML_MUST_USE cml_status_t cml_builder_auto_sharding(cml_builder_t* builder,
                                                            const cml_mesh_t* const* meshes,
                                                            size_t mesh_count);
// The backend devices the slots run on: |count| must equal the number of slots, ids distinct and
// in 0..cml_backend_device_count-1. Default 0..N-1. FAILED_PRECONDITION without a strategy (a
// single-device module runs on the device given to cml_executable_execute).
CML_API CML_MUST_USE cml_status_t cml_builder_device_assignment(cml_builder_t* builder,
                                                                const int32_t* devices,
                                                                size_t count);
// The builder's strategy and its number of device slots (1 for NONE).
CML_API cml_distribution_t cml_builder_distribution(const cml_builder_t* builder);
CML_API int cml_builder_num_devices(const cml_builder_t* builder);

// A parameter of main with a sharding (AutoSharding only; a zeroed |sharding| or NULL means
// replicated and then works like cml_parameter under any strategy). |shape| is the logical shape;
// its mesh must be one of the builder's meshes (by name). Errors as cml_parameter, plus the spec's
// validation and divisibility.
CML_API cml_value_t cml_parameter_sharded(cml_function_t* main_function, const char* name,
                                          const cml_shape_t* shape, const cml_sharding_t* sharding);
// cml_function_return for main with one sharding per output (AutoSharding only; NULL array or
// zeroed entries mean replicated).
CML_API CML_MUST_USE cml_status_t cml_function_return_sharded(cml_function_t* main_function,
                                                              const cml_value_t* outputs,
                                                              size_t count,
                                                              const cml_sharding_t* shardings);

//===--- collective ops (SPMD only) ---===//
// |groups| NULL means one group holding every device slot in order. Groups must be a partition
// of 0..N-1 into groups of equal size. Axes are in [0, rank) (no negative axes). In a module
// without SPMD (one device, or AutoSharding) every collective op, ReplicaId and PartitionId
// included, fails with INVALID_ARGUMENT naming the op. A backend that has SPMD but not the op
// gives UNIMPLEMENTED naming the op, its shapes and the backend.

// AllReduce of |count| operands (any dtypes the reduction supports) with |type| (sum, product,
// max, min); result i has the shape of operand i. false on error (outputs CML_VALUE_INVALID).
// |out_results| may be |operands| (results written in place). Float max and min follow the
// Max/Min ops on every backend: NaN propagates (the result is a NaN; its payload and sign are
// not specified) and -0 < +0. The same holds for ReduceScatter.
CML_API bool cml_op_all_reduce(cml_function_t* f, const cml_value_t* operands, size_t count,
                               cml_reduce_type_t type, const cml_replica_groups_t* groups,
                               cml_value_t* out_results);
// Concatenates the operands of a group along |axis|, in group order (dim * group_size).
CML_API cml_value_t cml_op_all_gather(cml_function_t* f, cml_value_t x, int64_t axis,
                                      const cml_replica_groups_t* groups);
// AllReduce, then member k of a group keeps part k of |axis| (dim must divide by group size).
CML_API cml_value_t cml_op_reduce_scatter(cml_function_t* f, cml_value_t x, cml_reduce_type_t type,
                                          int64_t axis, const cml_replica_groups_t* groups);
// Splits |split_axis| into group_size parts, sends part k to member k, and concatenates what
// arrives along |concat_axis| in sender order.
CML_API cml_value_t cml_op_all_to_all(cml_function_t* f, cml_value_t x, int64_t split_axis,
                                      int64_t concat_axis, const cml_replica_groups_t* groups);
// Sends x from pairs[2i] to pairs[2i + 1] (|pair_count| pairs; each slot at most once as
// source and once as target); a slot that receives nothing gets zeros.
CML_API cml_value_t cml_op_collective_permute(cml_function_t* f, cml_value_t x,
                                              const int32_t* pairs, size_t pair_count);
// Every member of a group gets the value of the group's first member.
CML_API cml_value_t cml_op_collective_broadcast(cml_function_t* f, cml_value_t x,
                                                const cml_replica_groups_t* groups);
// This device slot's replica id (Uint32 scalar; 0..N-1 under SPMD). PartitionId is 0 under SPMD
// (one partition) and refused under AutoSharding, as in XLA.
CML_API cml_value_t cml_op_replica_id(cml_function_t* f);
CML_API cml_value_t cml_op_partition_id(cml_function_t* f);

//===--- executables ---===//

// The strategy an executable was compiled with and its number of device slots (1 for NONE).
CML_API cml_distribution_t cml_executable_distribution(const cml_executable_t* executable);
CML_API int cml_executable_num_devices(const cml_executable_t* executable);
// The sharding of input / output |i| under AutoSharding (lent; NULL otherwise or out of range).
CML_API const cml_sharding_t* cml_executable_input_sharding(const cml_executable_t* executable,
                                                            size_t i);
CML_API const cml_sharding_t* cml_executable_output_sharding(const cml_executable_t* executable,
                                                             size_t i);

//===--- host-side sharded tensors (the seed's dtensor) ---===//

// A logical tensor held as one buffer per mesh position (replicated positions hold copies).
typedef struct cml_dtensor_t cml_dtensor_t;

// Splits |size| bytes of host data of |logical| shape by |sharding| into one buffer per mesh
// position, shard k on backend device |devices[k]| (NULL: on device
// cml_mesh_device_assignment(mesh)[k], or k when the mesh has none). INVALID_ARGUMENT
// for indivisible dimensions, a size mismatch, sub-byte dtypes or a bad device.
CML_API CML_MUST_USE cml_status_t cml_dtensor_from_host(
    cml_backend_t* backend, const cml_sharding_t* sharding, const cml_shape_t* logical,
    const void* data, size_t size, const int32_t* devices, cml_dtensor_t** out_tensor);
// Wraps |shard_count| (= the mesh's device count) buffers of one shard shape, retaining each.
CML_API CML_MUST_USE cml_status_t cml_dtensor_from_shards(const cml_sharding_t* sharding,
                                                          cml_buffer_t* const* shards,
                                                          size_t shard_count,
                                                          cml_dtensor_t** out_tensor);
// Frees the tensor and releases its shards. NULL is ignored.
CML_API void cml_dtensor_destroy(cml_dtensor_t* tensor);
// Accessors (lent). The logical and shard shapes, the spec, the shard count and shard |k|.
CML_API const cml_shape_t* cml_dtensor_shape(const cml_dtensor_t* tensor);
CML_API const cml_shape_t* cml_dtensor_shard_shape(const cml_dtensor_t* tensor);
CML_API const cml_sharding_t* cml_dtensor_sharding(const cml_dtensor_t* tensor);
CML_API size_t cml_dtensor_shard_count(const cml_dtensor_t* tensor);
CML_API cml_buffer_t* cml_dtensor_shard(const cml_dtensor_t* tensor, size_t k);
// Merges the shards back into |size| bytes of host data of the logical shape (replicas are read
// once).
CML_API CML_MUST_USE cml_status_t cml_dtensor_to_host(const cml_dtensor_t* tensor, void* data,
                                                      size_t size);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_DISTRIBUTED_H_
