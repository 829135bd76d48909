// SPDX-License-Identifier: Apache-2.0
// src/distributed/partition.h: the AutoSharding partitioner for backends without their own: a
// global module (logical shapes, meshes, shardings on main's parameters and outputs) becomes an
// SPMD module over the same device slots, with per-device shapes and collectives.
//
// Propagation runs forward over main (docs/partitioner.md): every value gets a sharding state
// (for each dimension the mesh axes that split it, major to minor, plus the set of mesh axes over
// which it is a pending partial sum), ops follow the rules of reference/distributed.md §5, and
// what cannot be partitioned locally is resharded (local slices of replicated values,
// AllGather, AllReduce) or computed replicated. Outputs are forced to their requested sharding.
// An op it cannot re-emit returns UNIMPLEMENTED naming the op and the shardings.
//
// Thread-safety: stateless; each call builds its own module.
#ifndef CML_DISTRIBUTED_PARTITION_H_
#define CML_DISTRIBUTED_PARTITION_H_

#include "cml/backend_impl.h"
#include "cml/distributed.h"
#include "cml/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

// Partitions |global| (distribution CML_DISTRIBUTION_AUTO_SHARDING) into a new SPMD module built
// on |backend| (which must accept SPMD modules of global->num_devices slots and the collectives
// the partition needs). The module comes back retained in |out_spmd| (cml_module_release it).
// INVALID_ARGUMENT for a module that is not AutoSharding or uses collectives; UNIMPLEMENTED,
// naming the op and its operands' shardings, for what the partitioner cannot do; the builder's
// error (prefixed) when re-emitting an op fails.
CML_MUST_USE cml_status_t cml__partition_module(const cml_module_t* global, cml_backend_t* backend,
                                                cml_module_t** out_spmd);

// Finishes |builder| like cml_builder_compile, but hands back the finalized module (retained)
// instead of compiling it; the builder then counts as compiled. Defined in src/core/module.c.
CML_MUST_USE cml_status_t cml__builder_take_module(cml_builder_t* builder,
                                                   cml_module_t** out_module);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CML_DISTRIBUTED_PARTITION_H_
